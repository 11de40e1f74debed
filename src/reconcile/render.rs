//! Issue text: titles, bodies with their lane and evidence tables and the
//! Mermaid trend chart, comments, and links to records in history. For a
//! v3 record, the body also names the culprit commit with the bisection's
//! table, and says when side A and side B measured in the same run decided
//! the verdict.
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
use crate::record::{BisectionRecord, Outcome, RunSide, SameSession, StepFindingKind};

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
/// Bisection steps shown in an issue body (the latest ones).
const BISECTION_ROWS: usize = 16;
/// Hex digits of a commit's short form.
const SHORT_COMMIT: usize = 12;

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
fn code(s: &str) -> String {
    inert(s, Place::Code, NAME_CHARS)
}

/// A name as inline code inside a table cell.
fn table_code(s: &str) -> String {
    inert(s, Place::TableCode, NAME_CHARS)
}

/// Free text from a record, for prose and table cells alike.
fn text(s: &str) -> String {
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

fn record_link(r: &RecordRef, o: &RenderOptions) -> String {
    format!("[`{}`]({})", short(&r.digest), o.link(r))
}

/// A value and its unit, as prose (safe in a table cell).
fn with_unit(v: Finite, unit: Option<&str>) -> String {
    match unit {
        Some(u) if !u.is_empty() => format!("{v} {}", inert(u, Place::Text, NAME_CHARS)),
        _ => v.to_string(),
    }
}

/// `owner/name` when it is fit for a link on github.com: two parts of
/// the characters a record's `subject.repository` may hold, neither empty
/// nor starting with a dot (so no `.` or `..` part).
fn github_repository(repository: &str) -> Option<&str> {
    let (owner, name) = repository.split_once('/')?;
    let part = |s: &str| {
        !s.is_empty()
            && !s.starts_with('.')
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
    };
    (part(owner) && part(name)).then_some(repository)
}

/// Whether `s` is a commit id: 40 or 64 lowercase hex digits.
fn is_commit(s: &str) -> bool {
    matches!(s.len(), 40 | 64) && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// A commit by its short id, linked to its page on GitHub when the
/// repository is known. Anything but a commit id is shown as inert code.
fn commit_link(sha: &str, repository: Option<&str>) -> String {
    if !is_commit(sha) {
        return code(sha);
    }
    let short = &sha[..SHORT_COMMIT];
    match repository {
        Some(r) => format!("[`{short}`](https://github.com/{r}/commit/{sha})"),
        None => format!("`{short}`"),
    }
}

/// A commit by its short id (linked) and its full id.
fn commit_named(sha: &str, repository: Option<&str>) -> String {
    if is_commit(sha) {
        format!("{} (`{sha}`)", commit_link(sha, repository))
    } else {
        code(sha)
    }
}

/// A relative effect as a signed percentage.
fn pct(v: Finite) -> String {
    format!("{:+.1}%", v.get() * 100.0)
}

/// A duration in whole minutes when it is one, else in seconds.
fn duration(seconds: u64) -> String {
    if seconds % 60 == 0 {
        format!("{} min", seconds / 60)
    } else {
        format!("{seconds} s")
    }
}

fn finding_text(f: StepFindingKind) -> &'static str {
    match f {
        StepFindingKind::Good => "good",
        StepFindingKind::Bad => "bad",
        StepFindingKind::Undecided => "undecided",
        StepFindingKind::BuildFailed => "build failed",
    }
}

/// Where the section's evidence comes from: `lane <lane>, record <link>
/// (slot <slot>)`.
fn evidence_source(e: &EvidenceEntry, options: &RenderOptions) -> String {
    format!(
        "lane {}, record {} (slot {})",
        code(e.record.lane.as_str()),
        record_link(&e.record, options),
        text(&e.record.slot)
    )
}

/// The culprit of the newest evidence record that bisected the key: the
/// commit, or the range reached and why, and the steps (the latest
/// [`BISECTION_ROWS`]). Empty when no evidence record bisected it.
fn culprit_section(status: &DriftStatus, options: &RenderOptions) -> String {
    let Some((e, bis)) = status
        .evidence
        .iter()
        .rev()
        .find_map(|e| e.bisection.as_ref().map(|b| (e, b)))
    else {
        return String::new();
    };
    let repo = github_repository(&e.subject.repository);
    let mut s = String::new();
    let _ = writeln!(s, "### Culprit\n");
    let ends = bis.commits.first().zip(bis.commits.last());
    let range = ends.map_or_else(String::new, |(first, last)| {
        format!(
            " over the first-parent range from the baseline commit {} to the candidate {} ({} \
             commit(s) after the baseline commit)",
            commit_link(first, repo),
            commit_link(last, repo),
            bis.commits.len().saturating_sub(1)
        )
    });
    let _ = writeln!(
        s,
        "Bisected by {}{range}, each midpoint measured interleaved with both bounds in the same \
         run.\n",
        evidence_source(e, options)
    );
    match (&bis.culprit, &bis.reason) {
        (Some(c), _) => {
            let _ = writeln!(s, "**Culprit: {}.**\n", commit_named(c, repo));
        }
        (None, reason) => {
            let at = |c: &str| bis.commits.iter().position(|x| x == c);
            let count = match (at(&bis.good), at(&bis.bad)) {
                (Some(g), Some(b)) if g < b => format!(" {}", b - g),
                _ => String::new(),
            };
            let _ = writeln!(
                s,
                "**No single commit named.** The culprit is one of the{count} commits after {} up \
                 to {}: {}.\n",
                commit_named(&bis.good, repo),
                commit_named(&bis.bad, repo),
                reason
                    .as_deref()
                    .map_or_else(|| "no reason given".to_owned(), text)
            );
        }
    }
    s.push_str(&bisection_table(bis, repo));
    let _ = writeln!(
        s,
        "Budget: {} step(s) and {}; {} step(s) taken.\n",
        bis.budget_steps,
        duration(bis.budget_seconds),
        bis.steps.len()
    );
    s
}

/// The bisection's steps as a table (the latest [`BISECTION_ROWS`]).
fn bisection_table(bis: &BisectionRecord, repo: Option<&str>) -> String {
    let mut s = String::new();
    if bis.steps.is_empty() {
        let _ = writeln!(s, "No step was measured.\n");
        return s;
    }
    let skip = bis.steps.len().saturating_sub(BISECTION_ROWS);
    if skip > 0 {
        let _ = writeln!(
            s,
            "The {BISECTION_ROWS} latest of {} steps; {skip} earlier not shown.\n",
            bis.steps.len()
        );
    }
    let _ = writeln!(s, "| step | commit | finding | reason |");
    let _ = writeln!(s, "|---|---|---|---|");
    for (i, step) in bis.steps.iter().enumerate().skip(skip) {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} |",
            i + 1,
            commit_link(&step.commit, repo),
            finding_text(step.finding),
            text(&step.reason)
        );
    }
    let _ = writeln!(s);
    s
}

/// One side of a same-session comparison: the median of its measured runs
/// (none when no run measured), how many measured, and how many ran.
fn side_figures(ss: &SameSession, side: RunSide) -> (Option<Finite>, usize, usize) {
    let runs = ss.runs.iter().filter(|r| r.side == side);
    let values: Vec<f64> = runs
        .clone()
        .filter_map(|r| r.value.map(Finite::get))
        .collect();
    let median = crate::stats::Summary::of(&values).and_then(|s| Finite::new(sig6(s.median)).ok());
    (median, values.len(), runs.count())
}

/// `v` rounded to 6 significant digits: a median computed here (the mean
/// of two samples) shows as `0.0453463`, not `0.045346329000000005`.
fn sig6(v: f64) -> f64 {
    if v == 0.0 || !v.is_finite() {
        return v;
    }
    let exp = v.abs().log10().floor() as i32 - 5;
    match exp {
        // Dividing an integer by an exact power of ten rounds once.
        -22..=-1 => (v * 10f64.powi(-exp)).round() / 10f64.powi(-exp),
        0..=22 => (v / 10f64.powi(exp)).round() * 10f64.powi(exp),
        _ => v,
    }
}

/// How the newest evidence record decided in the same session: side A
/// (the baseline commit) against side B (the candidate), with both
/// medians and counts. Empty when no evidence record did.
fn same_session_section(status: &DriftStatus, options: &RenderOptions) -> String {
    let Some((e, ss)) = status
        .evidence
        .iter()
        .rev()
        .find_map(|e| e.same_session.as_ref().map(|s| (e, s)))
    else {
        return String::new();
    };
    let repo = github_repository(&e.subject.repository);
    let unit = e.unit.as_deref();
    let mut s = String::new();
    let _ = writeln!(s, "### Same-session confirmation\n");
    let _ = writeln!(
        s,
        "The verdict of {} came from side A, the baseline commit, against side B, the \
         candidate, measured interleaved in the same run: a shift of the whole session moves \
         both sides alike.\n",
        evidence_source(e, options)
    );
    let _ = writeln!(s, "| side | commit | median | measured runs |");
    let _ = writeln!(s, "|---|---|---|---|");
    for (name, side, commit) in [
        ("A (baseline)", RunSide::A, &ss.baseline_commit),
        ("B (candidate)", RunSide::B, &ss.candidate_commit),
    ] {
        let (median, measured, ran) = side_figures(ss, side);
        let median = median.map_or_else(|| "not measured".to_owned(), |m| with_unit(m, unit));
        let _ = writeln!(
            s,
            "| {name} | {} | {median} | {measured} of {ran} |",
            commit_link(commit, repo)
        );
    }
    let eff = &ss.effect;
    let _ = writeln!(
        s,
        "\nB against A: {} [{}, {}] at {:.0}%, band ±{:.1}%.\n",
        pct(eff.estimate),
        pct(eff.low),
        pct(eff.high),
        eff.level.get() * 100.0,
        ss.band.relative.get() * 100.0
    );
    s
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
    b.push_str(&culprit_section(status, options));
    b.push_str(&same_session_section(status, options));

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
    let repo = github_repository(&evidence.subject.repository);
    if let Some(bis) = &evidence.bisection {
        let _ = match &bis.culprit {
            Some(culprit) => writeln!(
                c,
                "\nBisection: the culprit is {}.",
                commit_named(culprit, repo)
            ),
            None => writeln!(
                c,
                "\nBisection: no single commit named; the culprit is one of the commits after {} \
                 up to {}.",
                commit_link(&bis.good, repo),
                commit_link(&bis.bad, repo)
            ),
        };
    }
    if let Some(ss) = &evidence.same_session {
        let _ = writeln!(
            c,
            "\nDecided by side A, the baseline commit {}, against side B, the candidate {}, \
             measured in the same run: B against A {} [{}, {}] at {:.0}%.",
            commit_link(&ss.baseline_commit, repo),
            commit_link(&ss.candidate_commit, repo),
            pct(ss.effect.estimate),
            pct(ss.effect.low),
            pct(ss.effect.high),
            ss.effect.level.get() * 100.0
        );
    }
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
    fn computed_medians_show_six_significant_digits() {
        assert_eq!(sig6(0.045346329000000005), 0.0453463);
        assert_eq!(sig6(26081280.0), 26081300.0);
        assert_eq!(sig6(-1.5), -1.5);
        assert_eq!(sig6(4.2e-7), 4.2e-7);
        assert_eq!(sig6(0.0), 0.0);
        assert_eq!(
            Finite::new(sig6(0.1 + 0.2)).map(|f| f.to_string()),
            Ok("0.3".into())
        );
    }

    #[test]
    fn commit_links_need_a_commit_id_and_a_plain_repository() {
        let sha = "7c1c97df17c066924822b0af09a65251554962c6";
        assert_eq!(
            commit_link(sha, github_repository("example/widgets")),
            format!("[`7c1c97df17c0`](https://github.com/example/widgets/commit/{sha})")
        );
        for repo in ["../..", "./x", "a/..", "a", "a/b/c", "a b/c", ""] {
            assert_eq!(github_repository(repo), None, "{repo}");
        }
        assert_eq!(commit_link(sha, None), "`7c1c97df17c0`");
        // Not a commit id: inert code, never a link.
        assert_eq!(commit_link("HEAD](x)", Some("o/r")), "`HEAD](x)`");
        assert!(!commit_link(&sha.to_uppercase(), Some("o/r")).contains("]("));
    }

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
