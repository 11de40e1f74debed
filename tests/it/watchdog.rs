//! The missed-run watchdog on synthetic histories: every class, the
//! lookback rules, unscheduled records, a bad schedule, and slots across
//! daylight-saving changes.

use benchops::manifest::{Manifest, from_toml};
use benchops::names::LaneName;
use benchops::record::{CaseCounts, RunCounts};
use benchops::watchdog::{LaneWatch, SkippedRange, SlotClass, SlotMeta, WatchSettings, watch};
use jiff::Timestamp;

fn manifest(lanes: &[(&str, &str, &str, u32)]) -> Manifest {
    let mut text = String::from("schema = \"schedule-manifest/v1\"\n");
    for (name, cron, tz, window) in lanes {
        text.push_str(&format!(
            "[[lanes]]\nname = \"{name}\"\ncron = \"{cron}\"\ntimezone = \"{tz}\"\n\
             completion_window_minutes = {window}\ncases = [\"*\"]\nbaseline = \"last-clean\"\n"
        ));
    }
    from_toml(&text, "test").expect("manifest").manifest
}

fn t(s: &str) -> Timestamp {
    s.parse().expect("timestamp")
}

fn record(lane: &str, slot: &str, finished: &str, succeeded: u64, total: u64) -> SlotMeta {
    SlotMeta {
        lane: LaneName::new(lane).expect("lane"),
        slot: t(slot),
        finished_at: Some(t(finished)),
        runs: RunCounts {
            total,
            succeeded,
            failed: total - succeeded,
            ..RunCounts::default()
        },
        case_counts: CaseCounts {
            total: 2,
            pass: 2,
            ..CaseCounts::default()
        },
        digest: format!("sha256:{}", "a".repeat(64)),
        skipped: None,
    }
}

fn classes(w: &LaneWatch) -> Vec<(String, SlotClass)> {
    w.slots.iter().map(|s| (s.slot.clone(), s.class)).collect()
}

fn settings(now: &str, since: &str) -> WatchSettings {
    WatchSettings {
        now: t(now),
        since: t(since),
        grace_minutes: 60,
    }
}

#[test]
fn every_class_on_an_hourly_lane() {
    let m = manifest(&[("hourly", "0 * * * *", "UTC", 30)]);
    let records = [
        record(
            "hourly",
            "2026-12-01T00:00:00Z",
            "2026-12-01T00:20:00Z",
            4,
            4,
        ),
        // 01:00: nothing, and window + grace are over.
        record(
            "hourly",
            "2026-12-01T02:00:00Z",
            "2026-12-01T02:45:00Z",
            4,
            4,
        ),
        record(
            "hourly",
            "2026-12-01T03:00:00Z",
            "2026-12-01T03:10:00Z",
            1,
            4,
        ),
        // 04:00 and 05:00: nothing yet.
    ];
    let w = &watch(
        &m,
        &records,
        &settings("2026-12-01T05:10:00Z", "2026-11-30T00:00:00Z"),
    )[0];
    let s = |x: &str| x.to_owned();
    assert_eq!(
        classes(w),
        vec![
            (s("2026-12-01T00:00:00Z"), SlotClass::OnTime),
            (s("2026-12-01T01:00:00Z"), SlotClass::Missed),
            (s("2026-12-01T02:00:00Z"), SlotClass::Late),
            (s("2026-12-01T03:00:00Z"), SlotClass::Failed),
            (s("2026-12-01T04:00:00Z"), SlotClass::Late),
            (s("2026-12-01T05:00:00Z"), SlotClass::Pending),
        ]
    );
    assert_eq!(w.slots[2].reason, "recorded 15 min after the window");
    assert_eq!(w.slots[3].reason, "1 of 4 runs succeeded");
    assert_eq!(w.slots[4].reason, "no record yet, 40 min after the window");
    assert_eq!(w.slots[4].record, None);
    assert_eq!(
        (
            w.counts.on_time,
            w.counts.late,
            w.counts.missed,
            w.counts.failed,
            w.counts.pending
        ),
        (1, 2, 1, 1, 1)
    );
    assert_eq!(w.last_on_time.as_deref(), Some("2026-12-01T00:00:00Z"));
    assert_eq!(w.last_success.as_deref(), Some("2026-12-01T02:00:00Z"));
    assert_eq!(
        w.consecutive_missed, 0,
        "the last closed slot failed, it was not missed"
    );
    assert!(w.needs_attention());
}

#[test]
fn slots_before_a_lanes_first_record_are_not_expected_but_a_silent_lane_is_missed_throughout() {
    let m = manifest(&[
        ("daily", "0 6 * * *", "UTC", 60),
        ("silent", "0 6 * * *", "UTC", 60),
    ]);
    let records = [
        record(
            "daily",
            "2026-11-29T06:00:00Z",
            "2026-11-29T06:30:00Z",
            3,
            3,
        ),
        record(
            "daily",
            "2026-11-30T06:00:00Z",
            "2026-11-30T06:30:00Z",
            3,
            3,
        ),
    ];
    let ws = watch(
        &m,
        &records,
        &settings("2026-12-01T09:00:00Z", "2026-11-20T00:00:00Z"),
    );
    assert_eq!(
        ws[0].slots.len(),
        3,
        "29th, 30th and 1st: {:?}",
        classes(&ws[0])
    );
    assert_eq!(ws[0].consecutive_missed, 1);
    assert_eq!(ws[1].counts.missed, 12, "20th..30th and 1st");
    assert_eq!(ws[1].consecutive_missed, 12);
    assert_eq!(ws[1].last_success, None);
}

#[test]
fn an_unscheduled_record_fills_no_slot_and_a_bad_schedule_is_a_problem() {
    let m = manifest(&[
        ("daily", "0 6 * * *", "UTC", 60),
        ("broken", "0 6 * * *", "Mars/Olympus", 60),
    ]);
    let records = [
        record(
            "daily",
            "2026-11-30T06:00:00Z",
            "2026-11-30T06:30:00Z",
            3,
            3,
        ),
        record(
            "daily",
            "2026-12-01T06:30:00Z",
            "2026-12-01T06:40:00Z",
            3,
            3,
        ),
    ];
    let ws = watch(
        &m,
        &records,
        &settings("2026-12-01T09:00:00Z", "2026-11-29T00:00:00Z"),
    );
    assert_eq!(ws[0].unscheduled_records, 1);
    assert_eq!(ws[0].slots[1].class, SlotClass::Missed);
    let problem = ws[1].problem.as_deref().expect("a problem");
    assert!(problem.contains("Mars/Olympus"), "{problem}");
    assert!(ws[1].needs_attention());
}

#[test]
fn a_jerusalem_night_lane_is_on_time_across_the_autumn_change() {
    // 01:00 Israel time; the clocks go back from 02:00 to 01:00 on
    // 2026-10-25, so 01:00 happens twice that night: one slot, the first.
    let m = manifest(&[("comprehensive", "0 1 * * *", "Asia/Jerusalem", 180)]);
    let records = [
        record(
            "comprehensive",
            "2026-10-23T22:00:00Z",
            "2026-10-24T00:30:00Z",
            9,
            9,
        ),
        record(
            "comprehensive",
            "2026-10-24T22:00:00Z",
            "2026-10-25T00:30:00Z",
            9,
            9,
        ),
        record(
            "comprehensive",
            "2026-10-25T23:00:00Z",
            "2026-10-26T01:30:00Z",
            9,
            9,
        ),
    ];
    let w = &watch(
        &m,
        &records,
        &settings("2026-10-26T12:00:00Z", "2026-10-23T12:00:00Z"),
    )[0];
    assert_eq!(w.counts.on_time, 3, "{:?}", classes(w));
    assert_eq!(w.slots.len(), 3);
}

#[test]
fn a_new_york_hourly_lane_has_23_slots_on_the_spring_day_and_24_on_the_autumn_day() {
    let m = manifest(&[("hourly", "0 * * * *", "America/New_York", 30)]);
    let day = |from: &str, to: &str| watch(&m, &[], &settings(to, from))[0].slots.len();
    // Local midnight to midnight: 2026-03-08 has 23 hours, 2026-11-01 has 25
    // hours but 24 distinct wall-clock hours.
    assert_eq!(day("2026-03-08T05:00:00Z", "2026-03-09T04:00:00Z"), 23);
    assert_eq!(day("2026-11-01T04:00:00Z", "2026-11-02T05:00:00Z"), 24);
    assert_eq!(day("2026-12-01T05:00:00Z", "2026-12-02T05:00:00Z"), 24);
}

#[test]
fn a_long_outage_opens_one_issue_listing_its_latest_twenty_slots() {
    use benchops::reconcile::{Action, ActualIssue, IssueState};
    use benchops::watchdog::{missed_run_lane, missed_run_marker, plan_missed_runs};
    let m = manifest(&[("hourly", "0 * * * *", "UTC", 30)]);
    let ws = watch(
        &m,
        &[],
        &settings("2026-12-01T12:00:00Z", "2026-11-28T12:00:00Z"),
    );
    assert_eq!(ws[0].consecutive_missed, 70);
    let actions = plan_missed_runs(&ws, &[], "benchmark-missed-run");
    let [
        Action::OpenNotice {
            title,
            body,
            labels,
        },
    ] = actions.as_slice()
    else {
        panic!("{actions:?}");
    };
    assert_eq!(title, "Missed benchmark runs: lane hourly");
    assert_eq!(labels, &vec!["benchmark-missed-run".to_owned()]);
    assert_eq!(missed_run_lane(body), Some("hourly"));
    assert_eq!(
        body.lines().filter(|l| l.starts_with("| 2026-")).count(),
        20,
        "{body}"
    );
    // The latest missed slot (10:00: 11:00 is in its grace period) is last.
    assert!(
        body.contains("| 2026-12-01T10:00:00Z | 2026-12-01T10:30:00Z |\n\n"),
        "{body}"
    );
    // An open issue with the marker but without the label is not this
    // lane's issue; one with both is, and is only updated.
    let issue = |labels: Vec<String>| {
        ActualIssue::from_body(
            7,
            "t",
            format!("{}\nold text", missed_run_marker("hourly")),
            IssueState::Open,
            None,
            labels,
        )
    };
    let unlabelled = plan_missed_runs(&ws, &[issue(vec![])], "benchmark-missed-run");
    assert!(matches!(unlabelled.as_slice(), [Action::OpenNotice { .. }]));
    let labelled = plan_missed_runs(
        &ws,
        &[issue(vec!["benchmark-missed-run".into()])],
        "benchmark-missed-run",
    );
    assert!(
        matches!(labelled.as_slice(), [Action::UpdateBody { issue: 7, .. }]),
        "{labelled:?}"
    );
}

#[test]
fn slots_a_later_record_says_its_host_skipped_are_skipped_not_missed() {
    let m = manifest(&[("daily", "0 6 * * *", "UTC", 60)]);
    // On time on the 1st; the machine was off on the 2nd and 3rd; back on
    // the 4th, `lane due` ran that slot and recorded the two it passed
    // over. The 5th has no record, and no later record speaks for it.
    let mut back = record(
        "daily",
        "2026-12-04T06:00:00Z",
        "2026-12-04T06:20:00Z",
        3,
        3,
    );
    back.skipped = Some(SkippedRange {
        first: t("2026-12-02T06:00:00Z"),
        last: t("2026-12-03T06:00:00Z"),
        catch_up: benchops::manifest::CatchUp::Latest,
    });
    let records = [
        record(
            "daily",
            "2026-12-01T06:00:00Z",
            "2026-12-01T06:20:00Z",
            3,
            3,
        ),
        back,
    ];
    let ws = watch(
        &m,
        &records,
        &settings("2026-12-05T09:00:00Z", "2026-11-30T00:00:00Z"),
    );
    let classes: Vec<_> = ws[0]
        .slots
        .iter()
        .map(|s| (s.slot.as_str(), s.class))
        .collect();
    assert_eq!(
        classes,
        vec![
            ("2026-12-01T06:00:00Z", SlotClass::OnTime),
            ("2026-12-02T06:00:00Z", SlotClass::Skipped),
            ("2026-12-03T06:00:00Z", SlotClass::Skipped),
            ("2026-12-04T06:00:00Z", SlotClass::OnTime),
            ("2026-12-05T06:00:00Z", SlotClass::Missed),
        ]
    );
    assert!(
        ws[0].slots[1].reason.contains("catch_up = latest")
            && ws[0].slots[1].reason.contains("2026-12-04T06:00:00Z"),
        "{}",
        ws[0].slots[1].reason
    );
    assert_eq!((ws[0].counts.skipped, ws[0].counts.missed), (2, 1));
    assert_eq!(ws[0].consecutive_missed, 1);
}
