//! What a run that did not fully succeed prints, and why it does not exit
//! 0 (contract 16: a run in which children failed never exits 0).
//!
//! After `bench run`, or a lane run that sealed, every child that is not
//! `succeeded` is grouped by case; each case is named with how many of its
//! runs did not succeed, the class and reason of the first, and the first
//! lines of that run's standard error (from its `result.json`), escaped by
//! the one terminal rule. The command then exits with
//! [`crate::exit::ATTENTION`]. The same cases, as JSON, are in `lane run
//! --json` and `lane advance --json` (`lane::progress_json`) and in the
//! Python package.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use benchops::classify::RunClass;

use crate::bench::{ChildStatus, Status};
use crate::state::StateDir;

/// How many lines of a failed run's standard error the summary shows.
pub const STDERR_LINES: usize = 3;

/// One case with runs that did not succeed (its text escaped by the one
/// terminal rule, in JSON too).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct FailedCase {
    /// The case.
    pub case: String,
    /// Its runs that did not succeed.
    pub failed: u64,
    /// Its runs in all.
    pub total: u64,
    /// The first such run's class and reason.
    pub first: String,
    /// The first lines of that run's standard error (escaped), if it left
    /// any.
    pub stderr: Vec<String>,
}

/// The cases of `status` (one benchmark, warm-ups included) whose runs did
/// not all succeed, in plan order.
pub fn of_status(state: &StateDir, status: &Status) -> Vec<FailedCase> {
    let mut order: Vec<String> = Vec::new();
    let mut by_case: BTreeMap<String, (u64, u64, Option<&ChildStatus>)> = BTreeMap::new();
    for ch in &status.children {
        let entry = by_case.entry(ch.case.clone()).or_insert_with(|| {
            order.push(ch.case.clone());
            (0, 0, None)
        });
        entry.1 += 1;
        if ch.classified.class != RunClass::Succeeded {
            entry.0 += 1;
            entry.2.get_or_insert(ch);
        }
    }
    order
        .into_iter()
        .filter_map(|case| {
            let (failed, total, first) = by_case.remove(&case)?;
            let first = first?;
            Some(FailedCase {
                case: benchops::terminal::escape(&case),
                failed,
                total,
                first: format!(
                    "{}: {}",
                    first.classified.class.as_str(),
                    benchops::terminal::escape(&first.classified.reason)
                ),
                stderr: stderr_head(state, status, first),
            })
        })
        .collect()
}

/// The first [`STDERR_LINES`] non-blank lines of the run's recorded
/// standard error.
fn stderr_head(state: &StateDir, status: &Status, ch: &ChildStatus) -> Vec<String> {
    let dir = state.attempt_dir(&status.benchmark, ch.index, ch.attempt, ch.restart);
    let Ok(result) = crate::child::read_result(&dir.join(crate::child::RESULT_FILE)) else {
        return Vec::new();
    };
    result
        .stderr_tail
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(STDERR_LINES)
        .map(|l| benchops::terminal::escape_bounded(l, 200))
        .collect()
}

/// The summary printed on standard error, or `None` when every run
/// succeeded.
pub fn render(cases: &[FailedCase]) -> Option<String> {
    if cases.is_empty() {
        return None;
    }
    let runs: u64 = cases.iter().map(|c| c.failed).sum();
    let mut s = format!(
        "error: {runs} child run(s) of {} case(s) did not succeed:\n",
        cases.len()
    );
    for c in cases {
        let _ = writeln!(
            s,
            "  {}: {} of {} run(s) did not succeed; first: {}",
            c.case, c.failed, c.total, c.first
        );
        for l in &c.stderr {
            let _ = writeln!(s, "    | {l}");
        }
    }
    let _ = writeln!(
        s,
        "each run's result.json has the whole tail of its output; `benchops-exec bench status BENCHMARK` lists every run"
    );
    Some(s)
}

/// How many metric lines that did not parse are listed; the rest are
/// counted.
pub const METRIC_ERRORS_SHOWN: usize = 5;

/// Metric lines that did not parse, over the succeeded runs of `status`:
/// (case, child index, stdout line, reason), in plan order. They are kept
/// in each run's `result.json` (`metric_errors`); a metric the run meant to
/// report is otherwise simply missing.
pub fn metric_errors(state: &StateDir, status: &Status) -> Vec<(String, u64, u64, String)> {
    let mut out = Vec::new();
    for ch in &status.children {
        let dir = state.attempt_dir(&status.benchmark, ch.index, ch.attempt, ch.restart);
        if let Ok(r) = crate::child::read_result(&dir.join("result.json")) {
            for e in r.metric_errors {
                out.push((ch.case.clone(), ch.index, e.line, e.reason));
            }
        }
    }
    out
}

/// The lines that say which metric lines did not parse, or `None`.
pub fn render_metric_errors(errors: &[(String, u64, u64, String)]) -> Option<String> {
    if errors.is_empty() {
        return None;
    }
    let mut s = format!(
        "{} metric line(s) did not parse, so their metrics are missing from the analysis:\n",
        errors.len()
    );
    for (case, index, line, reason) in errors.iter().take(METRIC_ERRORS_SHOWN) {
        let _ = writeln!(
            s,
            "  {} child {index}, stdout line {line}: {}",
            benchops::terminal::escape(case),
            benchops::terminal::escape_bounded(reason, 200)
        );
    }
    if errors.len() > METRIC_ERRORS_SHOWN {
        let _ = writeln!(
            s,
            "  … and {} more (each run's result.json lists its own)",
            errors.len() - METRIC_ERRORS_SHOWN
        );
    }
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_failed_prints_nothing() {
        assert_eq!(render(&[]), None);
    }

    #[test]
    fn the_summary_names_each_case_with_its_stderr() {
        let s = render(&[FailedCase {
            case: "w/size=large".into(),
            failed: 9,
            total: 9,
            first: "failed: exit 2".into(),
            stderr: vec!["./work.sh: cannot open ./speed.conf".into()],
        }])
        .expect("a summary");
        assert!(
            s.starts_with("error: 9 child run(s) of 1 case(s) did not succeed:\n"),
            "{s}"
        );
        assert!(
            s.contains("  w/size=large: 9 of 9 run(s) did not succeed; first: failed: exit 2\n"),
            "{s}"
        );
        assert!(
            s.contains("    | ./work.sh: cannot open ./speed.conf\n"),
            "{s}"
        );
    }
}
