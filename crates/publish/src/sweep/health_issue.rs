//! The repository's health issue: one issue, found by its marker, whose
//! body the sweep keeps up to date with a table of every lane (watchdog
//! state over the lookback: `missing runs` while its latest slots are
//! missed, `on time again, N missed` while the lookback still holds missed
//! slots, then failed, late or ok; last on-time slot, last success, misses in a row, the latest
//! duration and its trend, the open drift issues of the cases it covers).
//! It is opened once and then only edited: it never closes itself, and a
//! body that would not change is not written. GitHub's REST API cannot pin
//! an issue; pin it once by hand (or with GraphQL `pinIssue`).
//!
//! Baseline age and the history growth trigger need the history's
//! baseline pointers and pack, which the sweep does not read: they are in
//! `benchops-publish health`, and the body says so.

use std::borrow::Borrow;

use benchops::manifest::Manifest;
use benchops::reconcile::{Action, ActualIssue, IssueState, Place, inert};
use benchops::seal::SealedRecord;
use benchops::watchdog::LaneWatch;

use super::report::{durations_of, trend};

/// The hidden marker that identifies the health issue.
pub const HEALTH_MARKER: &str = "<!-- benchops:health-issue -->";
/// The title of a new health issue.
pub const HEALTH_TITLE: &str = "Benchmark health";
/// The label `sweep --health-issue` uses by default.
pub const DEFAULT_HEALTH_LABEL: &str = "benchmark-health";

fn cell(s: Option<&str>) -> String {
    s.map_or_else(|| "—".to_owned(), |s| inert(s, Place::TableCode, 60))
}

/// The health issue's body for these lanes. `drift` is the drift issues as
/// listed (only open ones count); `records` are the history's records,
/// sorted by slot.
pub fn body<R: Borrow<SealedRecord>>(
    manifest: &Manifest,
    watches: &[LaneWatch],
    records: &[R],
    drift: &[ActualIssue],
) -> String {
    let mut out = String::new();
    out.push_str(HEALTH_MARKER);
    out.push('\n');
    out.push_str("Kept up to date by every publication sweep; edits are overwritten.\n\n");
    out.push_str(
        "| lane | state | last on time | last success | missed in a row | latest duration | trend | open drift issues |\n",
    );
    out.push_str("|---|---|---|---|---|---|---|---|\n");
    for (lane, w) in manifest.lanes.iter().zip(watches) {
        // The latest slots first, then what the lookback still holds.
        let state = match &w.problem {
            Some(_) => "cannot be watched".to_owned(),
            None if w.consecutive_missed > 0 => "missing runs".to_owned(),
            None if w.counts.missed > 0 => format!("on time again, {} missed", w.counts.missed),
            None if w.counts.failed > 0 => "failed runs".to_owned(),
            None if w.counts.late > 0 => "late runs".to_owned(),
            None => "ok".to_owned(),
        };
        let durations = durations_of(records, lane.name.as_str());
        let latest = match durations.last() {
            Some(p) => match p.seconds {
                Some(s) => format!("{s:.0} s"),
                None => "unknown".to_owned(),
            },
            None => "—".to_owned(),
        };
        let mut numbers: Vec<u64> = drift
            .iter()
            .filter(|i| i.state == IssueState::Open)
            .filter(|i| i.key.as_ref().is_some_and(|k| lane.covers(k.case.as_str())))
            .map(|i| i.number)
            .collect();
        numbers.sort_unstable();
        let open = if numbers.is_empty() {
            "none".to_owned()
        } else {
            numbers
                .iter()
                .map(|n| format!("#{n}"))
                .collect::<Vec<_>>()
                .join(" ")
        };
        out.push_str(&format!(
            "| {} | {state} | {} | {} | {} | {latest} | {} | {open} |\n",
            inert(lane.name.as_str(), Place::TableCode, 60),
            cell(w.last_on_time.as_deref()),
            cell(w.last_success.as_deref()),
            w.consecutive_missed,
            trend(&durations).as_deref().unwrap_or("—"),
        ));
    }
    out.push_str(
        "\nBaseline ages and the history growth trigger: run `benchops-publish health` on a clone of `benchmark-history`.\n",
    );
    out
}

/// What to do so that exactly one open health issue shows `body`: open one
/// when none is open, edit the lowest-numbered open one when its body
/// differs, nothing otherwise.
pub fn plan(issues: &[ActualIssue], label: &str, body: String) -> Option<Action> {
    let open = issues
        .iter()
        .filter(|i| i.state == IssueState::Open && i.body.contains(HEALTH_MARKER))
        .min_by_key(|i| i.number);
    match open {
        None => Some(Action::OpenNotice {
            title: HEALTH_TITLE.to_owned(),
            body,
            labels: vec![label.to_owned()],
        }),
        Some(i) if i.body.trim_end() != body.trim_end() => Some(Action::UpdateBody {
            issue: i.number,
            body,
        }),
        Some(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn issue(number: u64, body: &str, open: bool) -> ActualIssue {
        ActualIssue::from_body(
            number,
            "t".to_owned(),
            body.to_owned(),
            if open {
                IssueState::Open
            } else {
                IssueState::Closed
            },
            None,
            vec![DEFAULT_HEALTH_LABEL.into()],
        )
    }

    #[test]
    fn one_issue_opened_then_edited_in_place() {
        let body = format!("{HEALTH_MARKER}\nx\n");
        assert!(matches!(
            plan(&[], "h", body.clone()),
            Some(Action::OpenNotice { labels, .. }) if labels == ["h"]
        ));
        // A closed one does not count; a new one is opened.
        assert!(matches!(
            plan(&[issue(3, &body, false)], "h", body.clone()),
            Some(Action::OpenNotice { .. })
        ));
        assert_eq!(plan(&[issue(3, &body, true)], "h", body.clone()), None);
        assert_eq!(
            plan(
                &[
                    issue(9, &format!("{HEALTH_MARKER}\nold\n"), true),
                    issue(4, &format!("{HEALTH_MARKER}\nolder\n"), true)
                ],
                "h",
                body.clone()
            ),
            Some(Action::UpdateBody { issue: 4, body })
        );
    }
}
