//! The status page as one server-rendered HTML document: inline `<style>`
//! only, no script, no external font, style or image; tables scroll
//! sideways inside a wrapper and charts scale with the page, so it reads on
//! a 375 px wide screen. Every text that did not come from this module goes
//! through [`escape`].

use std::fmt::Write as _;

use benchops::record::CaseCounts;

use super::{Coverage, Listed, Status};
use benchops::chart::{number, trend_svg};

/// `text` safe in HTML element content and in a quoted attribute value
/// (the core's one markup escape, which the trend charts use too).
pub use benchops::markup::escape;

const STYLE: &str = "\
:root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--line:#d1d9e0;--bg:#fff;--panel:#f6f8fa;--accent:#0969da;--bad:#cf222e;--ok:#1a7f37;--warn:#9a6700}
@media (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--line:#3d444d;--bg:#0d1117;--panel:#151b23;--accent:#4493f8;--bad:#ff7b72;--ok:#3fb950;--warn:#d29922}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.5 system-ui,-apple-system,\"Segoe UI\",Roboto,sans-serif;color:var(--fg);background:var(--bg);overflow-wrap:anywhere}
main{max-width:72rem;margin:0 auto;padding:1rem}
h1{font-size:1.4rem;margin:.2rem 0 .4rem}
h2{font-size:1.1rem;margin:1.8rem 0 .6rem;padding-bottom:.2rem;border-bottom:1px solid var(--line)}
.meta,.more,figcaption{color:var(--muted);font-size:.875rem}
.notice{padding:.6rem .8rem;border:1px solid var(--warn);border-left-width:4px;border-radius:6px}
.scroll{overflow-x:auto;border:1px solid var(--line);border-radius:6px}
table{border-collapse:collapse;width:100%;font-size:.875rem}
th,td{text-align:left;padding:.35rem .6rem;border-bottom:1px solid var(--line);white-space:nowrap;vertical-align:top}
th{background:var(--panel);font-weight:600}
tr:last-child td{border-bottom:0}
td.text{white-space:normal;min-width:16rem;overflow-wrap:anywhere}
code{font:.85em ui-monospace,SFMono-Regular,Menlo,Consolas,monospace}
.bad{color:var(--bad);font-weight:600}
.ok{color:var(--ok)}
ul{padding-left:1.2rem}
li{margin:.3rem 0}
li.attention{color:var(--bad)}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(100%,22rem),1fr));gap:1rem}
figure{margin:0;padding:.5rem;border:1px solid var(--line);border-radius:6px}
svg.trend{display:block;width:100%;height:auto;font:13px system-ui,sans-serif}
svg .plot{fill:var(--panel);stroke:var(--line)}
svg .series{fill:none;stroke:var(--accent);stroke-width:2}
svg .pt{fill:var(--accent)}
svg .baseline{stroke:var(--muted);stroke-width:1.5}
svg .axis{fill:var(--muted)}
";

/// The hex of a digest (`sha256:…`), first 12 digits.
fn short_digest(d: &str) -> String {
    d.strip_prefix("sha256:")
        .unwrap_or(d)
        .chars()
        .take(12)
        .collect()
}

/// A commit's first 12 digits.
fn short_commit(c: &str) -> String {
    c.chars().take(12).collect()
}

/// A digest as code, shortened, with the full digest as its tooltip.
fn digest_code(d: &str) -> String {
    format!(
        r#"<code title="{}">{}</code>"#,
        escape(d),
        escape(&short_digest(d))
    )
}

fn counts_text(c: &CaseCounts) -> String {
    let mut parts = Vec::new();
    for (n, what) in [
        (c.pass, "pass"),
        (c.drift, "drift"),
        (c.skipped, "skipped"),
        (c.error, "error"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {what}"));
        }
    }
    if parts.is_empty() {
        "no cases".to_owned()
    } else {
        parts.join(", ")
    }
}

fn counts_cell(c: &CaseCounts) -> String {
    let class = if c.drift > 0 || c.error > 0 {
        "bad"
    } else {
        "ok"
    };
    format!(
        r#"<span class="{class}">{}</span>"#,
        escape(&counts_text(c))
    )
}

/// "N more … not shown." when some were left out.
fn more<T>(s: &mut String, list: &Listed<T>, what: &str) {
    if list.left_out > 0 {
        let _ = write!(
            s,
            r#"<p class="more">{} more {what} not shown.</p>"#,
            list.left_out
        );
    }
}

/// A table cell of markup (already escaped): kept on one line, or wrapping
/// (long prose).
enum Cell {
    Line(String),
    Wrap(String),
}

impl From<String> for Cell {
    fn from(html: String) -> Self {
        Cell::Line(html)
    }
}

/// A table in its scrolling wrapper.
fn table(s: &mut String, head: &[&str], rows: impl IntoIterator<Item = Vec<Cell>>) {
    s.push_str(r#"<div class="scroll"><table><thead><tr>"#);
    for h in head {
        let _ = write!(s, r#"<th scope="col">{}</th>"#, escape(h));
    }
    s.push_str("</tr></thead><tbody>");
    for row in rows {
        s.push_str("<tr>");
        for cell in row {
            let _ = match cell {
                Cell::Line(html) => write!(s, "<td>{html}</td>"),
                Cell::Wrap(html) => write!(s, r#"<td class="text">{html}</td>"#),
            };
        }
        s.push_str("</tr>");
    }
    s.push_str("</tbody></table></div>");
}

/// The document.
pub(super) fn render(st: &Status) -> String {
    let mut s = String::with_capacity(16 * 1024);
    s.push_str(concat!(
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n",
        "<title>benchops status</title>\n<style>\n"
    ));
    s.push_str(STYLE);
    s.push_str("</style>\n</head>\n<body>\n<main>\n<h1>benchops status</h1>\n");
    header(&mut s, st);
    if st.history_configured {
        lanes(&mut s, st);
        drift(&mut s, st);
    }
    decisions(&mut s, st);
    if st.history_configured {
        records(&mut s, st);
    }
    runs(&mut s, st);
    if st.history_configured {
        trends(&mut s, st);
    }
    s.push_str("</main>\n</body>\n</html>\n");
    s
}

fn header(s: &mut String, st: &Status) {
    let _ = write!(s, r#"<p class="meta">As of {}."#, escape(&st.generated_at));
    match &st.history {
        None => {
            s.push_str("</p>\n");
            s.push_str(concat!(
                r#"<p class="notice" id="history-not-configured"><strong>History is not configured.</strong> "#,
                "This server reads no <code>benchmark-history</code> branch, so it cannot show lanes, ",
                "records, open drift or trends (which is not the same as an empty history). ",
                "Issue decisions and workflow runs recorded from webhooks are shown below.</p>\n"
            ));
        }
        Some(h) => {
            match &h.tip {
                Some(tip) => {
                    let _ = write!(
                        s,
                        r#" History tip <code title="{}">{}</code>, {} record{} read"#,
                        escape(tip),
                        escape(&short_commit(tip)),
                        h.records,
                        if h.records == 1 { "" } else { "s" }
                    );
                    if h.records_not_read > 0 {
                        let _ = write!(s, " ({} older ones not read)", h.records_not_read);
                    }
                    s.push_str(match h.coverage {
                        Coverage::Manifest => "; lane coverage from the schedule manifest.",
                        Coverage::LatestRecords => {
                            "; no schedule manifest given, so each lane is taken to cover the cases of its latest record."
                        }
                    });
                    s.push_str("</p>\n");
                }
                None => s.push_str(concat!(
                    "</p>\n",
                    r#"<p class="notice">The <code>benchmark-history</code> branch does not exist yet: "#,
                    "no record has been published.</p>\n"
                )),
            }
            if !h.unreadable.items.is_empty() {
                s.push_str(
                    r#"<p class="notice">Some history files were left out because they did not verify:</p><ul>"#,
                );
                for p in &h.unreadable.items {
                    let _ = write!(s, "<li><code>{}</code></li>", escape(p));
                }
                s.push_str("</ul>");
                more(s, &h.unreadable, "unreadable files");
            }
        }
    }
}

fn lanes(s: &mut String, st: &Status) {
    s.push_str("<section id=\"lanes\">\n<h2>Lanes</h2>\n");
    if st.lanes.items.is_empty() {
        s.push_str("<p>No lane has a record yet.</p>\n");
    } else {
        let rows = st.lanes.items.iter().map(|l| {
            let mut name = format!("<code>{}</code>", escape(&l.lane));
            if l.in_manifest == Some(false) {
                name.push_str(r#" <span class="meta">(not in the manifest)</span>"#);
            }
            let (slot, age, record, commit, cases) = match &l.latest {
                Some(r) => (
                    escape(&r.slot),
                    escape(&r.age),
                    digest_code(&r.digest),
                    format!("<code>{}</code>", escape(&short_commit(&r.commit))),
                    counts_cell(&r.counts),
                ),
                None => (
                    "no record yet".to_owned(),
                    "—".to_owned(),
                    "—".to_owned(),
                    "—".to_owned(),
                    "—".to_owned(),
                ),
            };
            let baseline = match &l.baseline {
                Some(b) => format!(
                    "{} {} ({})",
                    digest_code(&b.record),
                    escape(&b.slot),
                    escape(&b.policy)
                ),
                None => "none".to_owned(),
            };
            [
                name,
                slot,
                age,
                record,
                commit,
                cases,
                l.records.to_string(),
                baseline,
            ]
            .map(Cell::from)
            .into()
        });
        table(
            s,
            &[
                "Lane",
                "Latest slot",
                "Age",
                "Latest record",
                "Commit",
                "Cases",
                "Records",
                "Baseline",
            ],
            rows,
        );
    }
    more(s, &st.lanes, "lanes");
    s.push_str("</section>\n");
}

fn drift(s: &mut String, st: &Status) {
    s.push_str("<section id=\"drift\">\n<h2>Open drift</h2>\n");
    if st.drift.items.is_empty() {
        s.push_str("<p class=\"ok\">No open drift: every drift in history has cleared.</p>\n");
    } else {
        let rows = st.drift.items.iter().map(|d| {
            let lanes = if d.reproducing_lanes.is_empty() {
                "—".to_owned()
            } else {
                d.reproducing_lanes
                    .iter()
                    .map(|l| format!("<code>{}</code>", escape(l)))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let standing = match d.standing.as_str() {
                "uncovered" => "uncovered (no lane covers the case)".to_owned(),
                other => other.to_owned(),
            };
            vec![
                format!("<code>{}</code>", escape(&d.case)).into(),
                format!("<code>{}</code>", escape(&d.metric)).into(),
                format!(r#"<span class="bad">{}</span>"#, escape(&standing)).into(),
                lanes.into(),
                format!("{} since {}", d.evidence_records, escape(&d.first_slot)).into(),
                Cell::Wrap(format!(
                    "{} <code>{}</code> {}: {}",
                    escape(&d.latest.slot),
                    escape(&d.latest.lane),
                    digest_code(&d.latest.digest),
                    escape(&d.latest.summary)
                )),
            ]
        });
        table(
            s,
            &[
                "Case",
                "Metric",
                "Standing",
                "Still reproducing in",
                "Evidence records",
                "Latest evidence",
            ],
            rows,
        );
    }
    more(s, &st.drift, "drift keys");
    s.push_str("</section>\n");
}

fn decisions(s: &mut String, st: &Status) {
    s.push_str("<section id=\"decisions\">\n<h2>Issue decisions</h2>\n");
    if st.decisions.items.is_empty() {
        s.push_str("<p>No issue decision recorded.</p>\n");
    } else {
        s.push_str("<ul class=\"decisions\">");
        for d in &st.decisions.items {
            let _ = write!(
                s,
                "<li{}>{}{} <span class=\"meta\">({}: {})</span></li>",
                if d.attention {
                    r#" class="attention""#
                } else {
                    ""
                },
                if d.attention {
                    "<strong>Needs a look:</strong> "
                } else {
                    ""
                },
                escape(&d.sentence),
                escape(&d.decision.repository),
                escape(&d.decision.title)
            );
        }
        s.push_str("</ul>\n");
    }
    more(s, &st.decisions, "decisions");
    s.push_str("</section>\n");
}

fn records(s: &mut String, st: &Status) {
    s.push_str("<section id=\"records\">\n<h2>Recent records</h2>\n");
    if st.recent_records.items.is_empty() {
        s.push_str("<p>No record in history.</p>\n");
    } else {
        let rows = st.recent_records.items.iter().map(|r| {
            [
                escape(&r.slot),
                format!("<code>{}</code>", escape(&r.lane)),
                digest_code(&r.digest),
                format!(
                    r#"<code title="{}">{}</code>"#,
                    escape(&r.repository),
                    escape(&short_commit(&r.commit))
                ),
                counts_cell(&r.counts),
                r.drift_reports.to_string(),
            ]
            .map(Cell::from)
            .into()
        });
        table(
            s,
            &[
                "Slot",
                "Lane",
                "Record",
                "Commit",
                "Verdict",
                "Drift reports",
            ],
            rows,
        );
    }
    more(s, &st.recent_records, "records");
    s.push_str("</section>\n");
}

fn runs(s: &mut String, st: &Status) {
    s.push_str("<section id=\"runs\">\n<h2>Publication workflow runs</h2>\n");
    if st.workflow_runs.items.is_empty() {
        s.push_str("<p>No workflow run recorded.</p>\n");
    } else {
        let rows = st.workflow_runs.items.iter().map(|r| {
            let class = match r.run.conclusion.as_deref() {
                Some("success") => "ok",
                None | Some("skipped" | "neutral") => "meta",
                Some(_) => "bad",
            };
            [
                escape(&r.run.at),
                escape(&r.run.repository),
                format!("<code>{}</code>", escape(&r.run.workflow_path)),
                format!("{} (attempt {})", r.run.run_id, r.run.run_attempt),
                escape(&r.run.event),
                format!(r#"<span class="{class}">{}</span>"#, escape(&r.state)),
            ]
            .map(Cell::from)
            .into()
        });
        table(
            s,
            &[
                "Updated",
                "Repository",
                "Workflow",
                "Run",
                "Event",
                "Conclusion",
            ],
            rows,
        );
    }
    more(s, &st.workflow_runs, "runs");
    s.push_str("</section>\n");
}

fn trends(s: &mut String, st: &Status) {
    s.push_str("<section id=\"trends\">\n<h2>Trends</h2>\n");
    if st.trends.items.is_empty() {
        s.push_str("<p>No measured values in history yet.</p>\n");
    } else {
        s.push_str(concat!(
            "<p class=\"meta\">Each chart is one lane's last records: the median of one metric ",
            "of one case, a missing value left as a gap; the dashed line is the baseline.</p>\n",
            "<div class=\"charts\">"
        ));
        for t in &st.trends.items {
            let values: Vec<f64> = t.points.iter().filter_map(|p| p.value).collect();
            let gaps = t.points.len() - values.len();
            let unit = |v: f64| {
                if t.unit.is_empty() {
                    number(v)
                } else {
                    format!("{} {}", number(v), t.unit)
                }
            };
            let mut facts = vec![format!(
                "{} point{}",
                values.len(),
                if values.len() == 1 { "" } else { "s" }
            )];
            if gaps > 0 {
                facts.push(format!("{gaps} gap{}", if gaps == 1 { "" } else { "s" }));
            }
            let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            if let Some(last) = values.last() {
                facts.push(format!("min {}", unit(lo)));
                facts.push(format!("max {}", unit(hi)));
                facts.push(format!("latest {}", unit(*last)));
            }
            if let Some(b) = t.baseline {
                facts.push(format!("baseline {}", unit(b)));
            }
            let _ = write!(
                s,
                "<figure><figcaption>{}<code>{}</code> · <code>{}</code> · <code>{}</code><br>{}</figcaption>{}</figure>",
                if t.drifting {
                    r#"<span class="bad">drifting</span> "#
                } else {
                    ""
                },
                escape(&t.lane),
                escape(&t.case),
                escape(&t.metric),
                escape(&facts.join(", ")),
                trend_svg(&t.chart())
            );
        }
        s.push_str("</div>\n");
    }
    more(s, &st.trends, "charts");
    s.push_str("</section>\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digests_and_commits_are_shortened() {
        assert_eq!(short_digest("sha256:0123456789abcdef"), "0123456789ab");
        assert_eq!(short_commit("3f1c2a9d8e7b6c5d"), "3f1c2a9d8e7b");
    }

    #[test]
    fn counts_read_as_prose() {
        let c = CaseCounts {
            total: 3,
            pass: 2,
            drift: 1,
            skipped: 0,
            error: 0,
        };
        assert_eq!(counts_text(&c), "2 pass, 1 drift");
        assert!(counts_cell(&c).contains(r#"class="bad""#));
        assert_eq!(counts_text(&CaseCounts::default()), "no cases");
    }
}
