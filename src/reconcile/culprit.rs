//! The v3 parts of a drift issue: the culprit its bisection named, with a
//! bounded table of the steps, and the same-session verdict (side A, the
//! baseline commit, against side B, measured in the same run) with both
//! medians and counts.
//!
//! Commits are shown by their short and full ids, linked to
//! `https://github.com/<repository>/commit/<sha>` only when the id is a
//! commit id and the record's repository a plain `owner/name`; anything
//! else is inert code. Step reasons are record text and go through
//! [`super::inert`], as every record text of an issue does.

use std::fmt::Write as _;

use crate::num::Finite;
use crate::record::{BisectionRecord, RunSide, SameSession, StepFindingKind};

use super::render::{RenderOptions, code, record_link, text, with_unit};
use super::status::{DriftStatus, EvidenceEntry};

/// Bisection steps shown in an issue body (the latest ones).
const BISECTION_ROWS: usize = 16;
/// Hex digits of a commit's short form.
const SHORT_COMMIT: usize = 12;

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
pub(super) fn culprit_section(status: &DriftStatus, options: &RenderOptions) -> String {
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
pub(super) fn same_session_section(status: &DriftStatus, options: &RenderOptions) -> String {
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

/// The lines an evidence comment adds for a v3 record: the culprit (or
/// the range) its bisection named, and the same-session effect that
/// decided the key. Empty for other records.
pub(super) fn evidence_lines(evidence: &EvidenceEntry) -> String {
    let mut c = String::new();
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
    c
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
}
