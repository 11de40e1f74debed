//! Issue text: titles, bodies with their lane and evidence tables and the
//! Mermaid trend chart, comments, and links to records in history. For a
//! v3 record, the body also names the culprit commit and says when side A
//! and side B measured in the same run decided the verdict
//! ([`super::culprit`]).
//!
//! Every function here is pure, so snapshot tests can pin the bytes. Every
//! text that comes from a record goes through [`inert`] (see
//! [`super::inert`]); only benchops's own words and markers are written as
//! they are.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::digest::Sha256Digest;
use crate::manifest::Labels;
use crate::names::LaneName;
use crate::num::Finite;
use crate::record::Outcome;

use super::inert::{NAME_CHARS, Place, TEXT_CHARS, inert};
use super::markers::{StateMarker, closed_marker, drift_marker, evidence_marker, state_marker};
use super::status::{CaseStatus, DriftStatus, EvidenceEntry, Standing};
use super::{DriftKey, IssueState, RecordRef};

/// The longest title GitHub accepts, in characters.
const TITLE_CHARS: usize = 256;
/// Evidence rows shown in an issue body (the newest ones).
const EVIDENCE_ROWS: usize = 20;
/// Points in the trend chart (the newest ones).
const CHART_POINTS: usize = 30;

/// How history files are linked from issue text.
#[derive(Debug, Clone)]
pub struct RenderOptions {
    /// Prefix of links to history files, e.g.
    /// `https://github.com/o/r/blob/benchmark-history`. Empty: relative links.
    pub history_base_url: String,
    /// The path of a record in history.
    pub history_path: fn(&RecordRef) -> String,
}

impl RenderOptions {
    /// Options with [`default_history_path`].
    pub fn new(history_base_url: impl Into<String>) -> Self {
        Self {
            history_base_url: history_base_url.into(),
            history_path: default_history_path,
        }
    }

    fn link(&self, r: &RecordRef) -> String {
        let path = (self.history_path)(r);
        let base = self.history_base_url.trim_end_matches('/');
        if base.is_empty() {
            path
        } else {
            format!("{base}/{path}")
        }
    }
}

/// `results/<lane>/<yyyy>/<mm>/<YYYYMMDDTHHMMSSZ>--<hex>.json`: the layout
/// the history store writes (the slot without separators or fraction, so
/// paths hold no colons).
pub fn default_history_path(r: &RecordRef) -> String {
    let yyyy = r.slot.get(..4).unwrap_or("0000");
    let mm = r.slot.get(5..7).unwrap_or("00");
    format!(
        "results/{}/{yyyy}/{mm}/{}--{}.json",
        r.lane,
        compact_slot(&r.slot),
        r.digest.hex()
    )
}

/// An RFC 3339 UTC slot (`2026-11-30T01:00:00.5Z`) in path form
/// (`20261130T010000Z`).
pub fn compact_slot(slot: &str) -> String {
    let whole = slot.split('.').next().unwrap_or(slot).trim_end_matches('Z');
    let mut out: String = whole.chars().filter(|c| *c != '-' && *c != ':').collect();
    out.push('Z');
    out
}

/// A name (lane, case, metric, label) as inline code.
pub(super) fn code(s: &str) -> String {
    inert(s, Place::Code, NAME_CHARS)
}

/// A name as inline code inside a table cell.
pub(super) fn table_code(s: &str) -> String {
    inert(s, Place::TableCode, NAME_CHARS)
}

/// Free text from a record, for prose and table cells alike.
pub(super) fn text(s: &str) -> String {
    inert(s, Place::Text, TEXT_CHARS)
}

/// Text inside a Mermaid quoted string.
fn mermaid_str(s: &str) -> String {
    inert(s, Place::Mermaid, NAME_CHARS)
}

/// A number as Mermaid's `xychart` grammar reads it: plain decimal, never
/// exponent notation (`Finite`'s display writes `4.2e-7`; Rust's `f64`
/// display writes `0.00000042`, shortest round-trip digits).
fn mermaid_num(v: Finite) -> String {
    v.get().to_string()
}

fn short(d: &Sha256Digest) -> String {
    d.hex().chars().take(12).collect()
}

pub(super) fn record_link(r: &RecordRef, o: &RenderOptions) -> String {
    format!("[`{}`]({})", short(&r.digest), o.link(r))
}

/// A value and its unit, as prose (safe in a table cell).
pub(super) fn with_unit(v: Finite, unit: Option<&str>) -> String {
    match unit {
        Some(u) if !u.is_empty() => format!("{v} {}", inert(u, Place::Text, NAME_CHARS)),
        _ => v.to_string(),
    }
}

fn lane_list(lanes: &[LaneName]) -> String {
    lanes
        .iter()
        .map(|l| code(l.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The issue title, at most 256 characters (GitHub's limit).
pub fn render_title(key: &DriftKey) -> String {
    const PREFIX: &str = "Benchmark drift: ";
    let what = format!("{} {}", key.case, key.metric);
    let room = TITLE_CHARS - PREFIX.len();
    format!("{PREFIX}{}", inert(&what, Place::Plain, room))
}

fn status_cell(s: &CaseStatus) -> String {
    match s {
        CaseStatus::Reproduces => "yes".into(),
        CaseStatus::DoesNotReproduce => "no".into(),
        CaseStatus::DriftOnOtherMetric(m) => format!("drift on {}", table_code(m)),
        CaseStatus::NotMeasured(Outcome::Skipped) => "not measured (skipped)".into(),
        CaseStatus::NotMeasured(Outcome::Error) => "not measured (error)".into(),
        CaseStatus::NotMeasured(_) => "not measured".into(),
        CaseStatus::NotInRecord => "not in record".into(),
        CaseStatus::Inconclusive(v) => format!("no verdict ({})", v.replace('_', " ")),
    }
}

/// The issue body for `status` in `state`. `carried` are the evidence
/// markers to keep (all evidence when opening; the existing body's markers
/// afterwards). A pure function of its inputs, so snapshots can pin it.
pub fn render_issue_body(
    status: &DriftStatus,
    state: IssueState,
    carried: &BTreeSet<Sha256Digest>,
    labels: &Labels,
    options: &RenderOptions,
) -> String {
    let key = &status.key;
    let mut b = String::new();
    let _ = writeln!(b, "{}", drift_marker(key));
    let _ = writeln!(
        b,
        "{}",
        state_marker(&StateMarker {
            state,
            epoch: status.epoch
        })
    );
    let _ = writeln!(
        b,
        "## Benchmark drift: {} · {}\n",
        code(key.case.as_str()),
        code(&key.metric)
    );

    // Summary.
    let latest = status.evidence.last();
    if let Some(e) = latest {
        let _ = writeln!(
            b,
            "A confirmed drift of {} on case {} was reported by {} sealed record(s). \
             Latest evidence: lane {}, slot {}, record {}: {}\n",
            code(&key.metric),
            code(key.case.as_str()),
            status.evidence.len(),
            code(e.record.lane.as_str()),
            text(&e.record.slot),
            record_link(&e.record, options),
            text(&e.summary),
        );
    }
    let verdict = match (&status.standing, state) {
        (Standing::Cleared { .. }, IssueState::Closed) => {
            "**Closed.** Every lane that currently covers this case has a sealed record after the \
             latest evidence in which the case does not reproduce."
                .to_owned()
        }
        (Standing::Cleared { .. }, IssueState::Open) => {
            "**Open.** Every lane that covers this case has cleared it; benchops closes the issue \
             on its next sweep."
                .to_owned()
        }
        (Standing::Reproducing { holding }, IssueState::Open) => format!(
            "**Open.** Held open by {}: no sealed record of that lane after the latest evidence \
             shows the case without the drift. The issue closes when every lane that covers the \
             case has one.",
            lane_list(holding)
        ),
        (Standing::Reproducing { holding }, IssueState::Closed) => format!(
            "**Closed.** Lanes without a clearing record since the latest evidence: {}.",
            lane_list(holding)
        ),
        (Standing::Uncovered, IssueState::Open) => format!(
            "**Open.** No lane in the schedule manifest covers {} any more, so no lane can clear \
             it. benchops does not close an issue on absence of evidence: close it by hand, add \
             the {} label, or cover the case again.",
            code(key.case.as_str()),
            code(&labels.accepted)
        ),
        (Standing::Uncovered, IssueState::Closed) => {
            "**Closed.** No lane in the schedule manifest covers this case any more.".to_owned()
        }
    };
    let _ = writeln!(b, "{verdict}\n");

    // v3: the culprit, and the same-session verdict.
    b.push_str(&super::culprit::culprit_section(status, options));
    b.push_str(&super::culprit::same_session_section(status, options));

    // Lanes.
    let _ = writeln!(b, "### Lanes\n");
    let _ = writeln!(
        b,
        "| lane | covers | latest record | reproduces? | cleared by (after latest evidence) |"
    );
    let _ = writeln!(b, "|---|---|---|---|---|");
    for l in &status.lanes {
        let name = if l.in_manifest {
            table_code(l.lane.as_str())
        } else {
            format!("{} (not in manifest)", table_code(l.lane.as_str()))
        };
        let covers = if l.covers { "yes" } else { "no" };
        let (latest, repro) = match (&l.latest, l.covers) {
            (_, false) => ("—".to_owned(), "—".to_owned()),
            (None, true) => ("no record yet".to_owned(), "—".to_owned()),
            (Some((r, st)), true) => (
                format!("{} {}", text(&r.slot), record_link(r, options)),
                status_cell(st),
            ),
        };
        let cleared = match (&l.clearing, l.covers) {
            (_, false) => "—".to_owned(),
            (None, true) => "not yet".to_owned(),
            (Some(r), true) => format!("{} {}", text(&r.slot), record_link(r, options)),
        };
        let _ = writeln!(b, "| {name} | {covers} | {latest} | {repro} | {cleared} |");
    }
    let _ = writeln!(b);

    // Evidence.
    let _ = writeln!(b, "### Evidence\n");
    let skip = status.evidence.len().saturating_sub(EVIDENCE_ROWS);
    if skip > 0 {
        let _ = writeln!(
            b,
            "The {EVIDENCE_ROWS} newest of {} records; {skip} earlier not shown.\n",
            status.evidence.len()
        );
    }
    let _ = writeln!(
        b,
        "| slot | lane | record | median | baseline median | summary |"
    );
    let _ = writeln!(b, "|---|---|---|---|---|---|");
    for e in status.evidence.iter().skip(skip) {
        let unit = e.unit.as_deref();
        let median = e
            .median
            .map_or_else(|| "not measured".to_owned(), |v| with_unit(v, unit));
        let base = e
            .baseline_median
            .map_or_else(|| "—".to_owned(), |v| with_unit(v, unit));
        let _ = writeln!(
            b,
            "| {} | {} | {} | {median} | {base} | {} |",
            text(&e.record.slot),
            table_code(e.record.lane.as_str()),
            record_link(&e.record, options),
            text(&e.summary)
        );
    }
    let _ = writeln!(b);

    // Trend.
    let _ = writeln!(b, "### Trend\n");
    b.push_str(&render_trend_chart(status));
    if let Some(c) = &status.change {
        let shift = c
            .relative()
            .map_or_else(String::new, |r| format!(" ({:+.1}%)", r * 100.0));
        let _ = writeln!(
            b,
            "\nChange point (e-divisive over the {} medians of lane {}, t-test p = {:.2e}): the \
             level moved from {:.6} to {:.6}{shift} between slot {} {} (commit {}) and slot {} {} \
             (commit {}). Advisory: it opens and closes nothing.",
            c.points,
            code(c.lane.as_str()),
            c.p,
            c.mean_before,
            c.mean_after,
            text(&c.before.0.slot),
            record_link(&c.before.0, options),
            code(&c.before.1.chars().take(12).collect::<String>()),
            text(&c.after.0.slot),
            record_link(&c.after.0, options),
            code(&c.after.1.chars().take(12).collect::<String>()),
        );
    }

    for d in carried {
        let _ = writeln!(b, "\n{}", evidence_marker(d));
    }
    b
}

/// The Mermaid `xychart-beta` block of the metric's median over the evidence
/// records (the newest 30), with the baseline median as a
/// second line when every point has one.
pub fn render_trend_chart(status: &DriftStatus) -> String {
    let points: Vec<&EvidenceEntry> = status
        .evidence
        .iter()
        .filter(|e| e.median.is_some())
        .collect();
    let points = &points[points.len().saturating_sub(CHART_POINTS)..];
    if points.is_empty() {
        return "No evidence record has a median for this metric, so there is no chart.\n".into();
    }
    let metric = mermaid_str(&status.key.metric);
    let unit = points
        .iter()
        .find_map(|e| e.unit.clone())
        .unwrap_or_default();
    let x: Vec<String> = points
        .iter()
        .map(|e| {
            let slot = e
                .record
                .slot
                .get(5..16)
                .unwrap_or(&e.record.slot)
                .replace('T', " ");
            format!(
                "\"{} {}\"",
                mermaid_str(&slot),
                mermaid_str(e.record.lane.as_str())
            )
        })
        .collect();
    let ys = |f: &dyn Fn(&EvidenceEntry) -> Option<Finite>| -> Option<String> {
        let v: Option<Vec<String>> = points.iter().map(|e| f(e).map(mermaid_num)).collect();
        v.map(|v| v.join(", "))
    };
    let mut c = String::new();
    let baseline = ys(&|e| e.baseline_median);
    let legend = if baseline.is_some() {
        "First line: median of each evidence record; second line: the baseline median it was compared with."
    } else {
        "Median of each evidence record."
    };
    let _ = writeln!(c, "{legend}\n");
    let _ = writeln!(c, "```mermaid\nxychart-beta");
    let _ = writeln!(c, "    title \"{metric} median per evidence record\"");
    let _ = writeln!(c, "    x-axis [{}]", x.join(", "));
    if unit.is_empty() {
        let _ = writeln!(c, "    y-axis \"{metric}\"");
    } else {
        let _ = writeln!(c, "    y-axis \"{metric} ({})\"", mermaid_str(&unit));
    }
    if let Some(m) = ys(&|e| e.median) {
        let _ = writeln!(c, "    line [{m}]");
    }
    if let Some(bl) = baseline {
        let _ = writeln!(c, "    line [{bl}]");
    }
    let _ = writeln!(c, "```");
    c
}

/// The comment announcing one evidence record. `closed_by_human` selects the
/// text for an issue a person closed (benchops leaves it closed).
pub fn render_evidence_comment(
    status: &DriftStatus,
    evidence: &EvidenceEntry,
    closed_by_human: bool,
    labels: &Labels,
    options: &RenderOptions,
) -> String {
    let r = &evidence.record;
    let mut c = String::new();
    let _ = writeln!(c, "{}", evidence_marker(&r.digest));
    let what = if closed_by_human {
        "The drift reproduced again"
    } else {
        "The drift reproduced"
    };
    let _ = write!(
        c,
        "{what} in lane {}, slot {}, record {}: {}",
        code(r.lane.as_str()),
        text(&r.slot),
        record_link(r, options),
        text(&evidence.summary)
    );
    let unit = evidence.unit.as_deref();
    match (evidence.median, evidence.baseline_median) {
        (Some(m), Some(bl)) => {
            let _ = write!(
                c,
                " (median {}, baseline {})",
                with_unit(m, unit),
                with_unit(bl, unit)
            );
        }
        (Some(m), None) => {
            let _ = write!(c, " (median {})", with_unit(m, unit));
        }
        _ => {}
    }
    let _ = writeln!(c, ".");
    c.push_str(&super::culprit::evidence_lines(evidence));
    if closed_by_human {
        let _ = writeln!(
            c,
            "\nThis issue was closed by a person, so benchops leaves it closed and will not reopen \
             it; it adds one comment like this per new evidence record of {}. Reopen the issue to \
             have benchops track the drift again, or add the {} label to silence it.",
            code(&status.key.to_string()),
            code(&labels.accepted)
        );
    }
    c
}

/// The closing comment: each covering lane's clearing record.
pub fn render_closing_comment(
    status: &DriftStatus,
    clearing: &[RecordRef],
    options: &RenderOptions,
) -> String {
    let mut c = String::new();
    let _ = writeln!(c, "{}", closed_marker(&status.epoch));
    let latest = status.evidence.last();
    let _ = writeln!(
        c,
        "Closing: every lane that currently covers {} has a sealed record after the latest \
         evidence{} in which the case does not reproduce.\n",
        code(status.key.case.as_str()),
        latest.map_or_else(String::new, |e| format!(
            " (lane {}, slot {}, record {})",
            code(e.record.lane.as_str()),
            text(&e.record.slot),
            record_link(&e.record, options)
        )),
    );
    let _ = writeln!(c, "| lane | slot | clearing record |");
    let _ = writeln!(c, "|---|---|---|");
    for r in clearing {
        let _ = writeln!(
            c,
            "| {} | {} | {} `{}` |",
            table_code(r.lane.as_str()),
            text(&r.slot),
            record_link(r, options),
            r.digest
        );
    }
    let _ = writeln!(
        c,
        "\nIf the drift is reported again, benchops reopens this issue."
    );
    c
}

/// The body of a duplicate benchops closes. It carries no drift marker, so
/// it no longer belongs to the key.
pub fn render_duplicate_body(key: &DriftKey, canonical: u64) -> String {
    format!(
        "<!-- benchops:duplicate-of issue={canonical} key={} -->\n\
         Duplicate of #{canonical}, which tracks the benchmark drift {}. Two publication sweeps \
         opened an issue for the same drift at the same time; benchops keeps the oldest.\n",
        key.marker_value(),
        code(&key.to_string())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_history_path_is_partitioned_by_lane_and_month() {
        let r = RecordRef {
            lane: LaneName::new("comprehensive").expect("lane"),
            slot: "2026-11-30T01:00:00Z".into(),
            finished_at: "2026-11-30T03:00:00Z".into(),
            digest: Sha256Digest::of(b"x"),
        };
        assert_eq!(
            default_history_path(&r),
            format!(
                "results/comprehensive/2026/11/20261130T010000Z--{}.json",
                r.digest.hex()
            )
        );
        let o = RenderOptions::new("https://example.test/blob/benchmark-history/");
        assert!(
            o.link(&r)
                .starts_with("https://example.test/blob/benchmark-history/results/")
        );
    }
}
