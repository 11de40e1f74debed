//! The figures table of `cargo xtask selfbench`: each case of a sealed
//! lane record (`benchmark-result/v2`) with the compared metric, its
//! interval, the input size, the baseline, the effect (the pooled one once
//! a key was confirmed) and the verdict.

use serde_json::Value;

use super::short;

/// How many drift reports the record's publication plan holds.
pub(super) fn drift_reports(record: &Value) -> usize {
    record
        .pointer("/publication/drift_reports")
        .and_then(Value::as_array)
        .map_or(0, Vec::len)
}

/// The figures of `metric` for a value in seconds: milliseconds.
fn ms(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |s| format!("{:.2}", s * 1000.0))
}

fn pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".to_owned(), |x| format!("{:+.1}%", x * 100.0))
}

/// Each case of a sealed lane record: its outcome, the compared metric's
/// median, interval and sample count, the input size, the baseline's
/// median, the effect and the verdict; then each key's reason.
pub(super) fn render_figures(record: &Value, metric: &str) -> String {
    let num = |v: &Value, p: &str| v.pointer(p).and_then(Value::as_f64);
    let text = |v: &Value, p: &str| {
        v.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("-")
            .to_owned()
    };
    let against = match record.pointer("/baseline/record").and_then(Value::as_str) {
        Some(b) => format!(
            "compared with the baseline {} (slot {})",
            short(b.trim_start_matches("sha256:")),
            text(record, "/baseline/slot")
        ),
        None => "no baseline".to_owned(),
    };
    let mut o = format!(
        "selfbench figures: lane {}, slot {}, subject {}@{}, {against}\n",
        text(record, "/lane"),
        text(record, "/slot"),
        text(record, "/subject/repository"),
        short(&text(record, "/subject/commit")),
    );
    o.push_str(&format!(
        "{:<28} {:<8} {:>10} {:>21} {:>3} {:>14} {:>10} {:>9} {:>20}  {}\n",
        "CASE",
        "OUTCOME",
        format!("{metric} ms"),
        "95% CI",
        "N",
        "INPUT",
        "BASE ms",
        "EFFECT",
        "INTERVAL",
        "VERDICT"
    ));
    let keys: Vec<&Value> = record
        .pointer("/comparison/keys")
        .and_then(Value::as_array)
        .map(|k| k.iter().collect())
        .unwrap_or_default();
    let mut reasons = Vec::new();
    for c in record
        .get("cases")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let id = text(c, "/id");
        let metrics = c.get("metrics").and_then(Value::as_array);
        let find = |name: &str| metrics.and_then(|ms| ms.iter().find(|m| m["name"] == name));
        let hot = find(metric);
        let ci = hot.map_or_else(
            || "-".to_owned(),
            |m| match (num(m, "/summary/ci/low"), num(m, "/summary/ci/high")) {
                (Some(l), Some(h)) => format!("[{}, {}]", ms(Some(l)), ms(Some(h))),
                _ => "-".to_owned(),
            },
        );
        let items = find("input_items").and_then(|m| num(m, "/summary/median"));
        let bytes = find("input_bytes").and_then(|m| num(m, "/summary/median"));
        let input = match (items, bytes) {
            (Some(i), Some(b)) if b >= 1e6 => format!("{i:.0}/{:.1}MB", b / 1e6),
            (Some(i), Some(b)) => format!("{i:.0}/{:.1}kB", b / 1e3),
            (Some(i), None) => format!("{i:.0}"),
            _ => "-".to_owned(),
        };
        let key = keys
            .iter()
            .find(|k| k["case"].as_str() == Some(id.as_str()) && k["metric"] == metric);
        let (base, effect, interval, verdict) = match key {
            Some(k) => {
                let e = if k["confirmation"].is_object() {
                    "/confirmation/pooled"
                } else {
                    "/initial"
                };
                reasons.push(format!("  {id}: {}", text(k, "/reason")));
                (
                    ms(num(k, "/baseline_median")),
                    pct(num(k, &format!("{e}/estimate"))),
                    format!(
                        "[{}, {}]",
                        pct(num(k, &format!("{e}/low"))),
                        pct(num(k, &format!("{e}/high")))
                    ),
                    text(k, "/verdict"),
                )
            }
            None => ("-".into(), "-".into(), "-".into(), "no baseline".into()),
        };
        o.push_str(&format!(
            "{:<28} {:<8} {:>10} {:>21} {:>3} {:>14} {:>10} {:>9} {:>20}  {}\n",
            id,
            text(c, "/outcome"),
            ms(hot.and_then(|m| num(m, "/summary/median"))),
            ci,
            hot.and_then(|m| num(m, "/summary/n"))
                .map_or_else(|| "-".to_owned(), |n| format!("{n:.0}")),
            input,
            base,
            effect,
            interval,
            verdict
        ));
    }
    if !reasons.is_empty() {
        o.push_str("why:\n");
        for r in reasons {
            o.push_str(&r);
            o.push('\n');
        }
    }
    o.push_str(&format!(
        "drift reports: {}, baseline proposal: {}\n",
        drift_reports(record),
        if record
            .pointer("/publication/baseline_proposal")
            .is_some_and(|v| !v.is_null())
        {
            "yes"
        } else {
            "no"
        }
    ));
    o
}
