//! Lane slots across daylight-saving changes, against the transitions the
//! IANA database gives for 2026 (checked with `zdump -v -c 2026,2027`):
//!
//! - Asia/Jerusalem: 2026-03-27 02:00 IST → 03:00 IDT (00:00Z), and
//!   2026-10-25 02:00 IDT → 01:00 IST (23:00Z on the 24th);
//! - America/New_York: 2026-03-08 02:00 EST → 03:00 EDT (07:00Z), and
//!   2026-11-01 02:00 EDT → 01:00 EST (06:00Z).
//!
//! A civil time in the skipped hour fires once, when the clock reaches it
//! after the gap; one in the repeated hour fires once, at its first
//! instant; two civil times on one instant are one slot.

use benchops::schedule::Schedule;

fn slots(cron: &str, tz: &str, from: &str, to: &str) -> Vec<String> {
    Schedule::parse(cron, tz)
        .expect("schedule")
        .slots_between(from.parse().expect("from"), to.parse().expect("to"))
        .expect("slots")
        .iter()
        .map(ToString::to_string)
        .collect()
}

#[test]
fn jerusalem_spring_a_slot_in_the_skipped_hour_fires_once_after_the_gap() {
    assert_eq!(
        slots(
            "30 2 * * *",
            "Asia/Jerusalem",
            "2026-03-25T12:00:00Z",
            "2026-03-28T12:00:00Z"
        ),
        vec![
            "2026-03-26T00:30:00Z", // 02:30 IST
            "2026-03-27T00:30:00Z", // 02:30 does not exist: 03:30 IDT
            "2026-03-27T23:30:00Z", // 02:30 IDT on the 28th
        ]
    );
}

#[test]
fn jerusalem_autumn_a_slot_in_the_repeated_hour_fires_once_at_its_first_instant() {
    assert_eq!(
        slots(
            "30 1 * * *",
            "Asia/Jerusalem",
            "2026-10-23T12:00:00Z",
            "2026-10-26T12:00:00Z"
        ),
        vec![
            "2026-10-23T22:30:00Z", // 01:30 IDT
            "2026-10-24T22:30:00Z", // the first 01:30 (IDT), not 23:30Z (IST)
            "2026-10-25T23:30:00Z", // 01:30 IST
        ]
    );
    // The epic's comprehensive lane: 01:00 Israel time, every night.
    assert_eq!(
        slots(
            "0 1 * * *",
            "Asia/Jerusalem",
            "2026-10-24T12:00:00Z",
            "2026-10-25T12:00:00Z"
        ),
        vec!["2026-10-24T22:00:00Z"]
    );
}

#[test]
fn new_york_spring_hourly_slots_merge_on_the_instant_after_the_gap() {
    assert_eq!(
        slots(
            "0 * * * *",
            "America/New_York",
            "2026-03-08T05:30:00Z",
            "2026-03-08T08:30:00Z"
        ),
        vec![
            "2026-03-08T06:00:00Z", // 01:00 EST
            "2026-03-08T07:00:00Z", // 02:00 does not exist and 03:00 EDT: one slot
            "2026-03-08T08:00:00Z", // 04:00 EDT
        ]
    );
    assert_eq!(
        slots(
            "30 2 * * *",
            "America/New_York",
            "2026-03-07T00:00:00Z",
            "2026-03-10T00:00:00Z"
        ),
        vec![
            "2026-03-07T07:30:00Z",
            "2026-03-08T07:30:00Z",
            "2026-03-09T06:30:00Z"
        ]
    );
}

#[test]
fn new_york_autumn_the_repeated_hour_is_one_slot() {
    assert_eq!(
        slots(
            "30 1 * * *",
            "America/New_York",
            "2026-10-31T00:00:00Z",
            "2026-11-03T00:00:00Z"
        ),
        vec![
            "2026-10-31T05:30:00Z",
            "2026-11-01T05:30:00Z", // the first 01:30 (EDT); 06:30Z is the same civil time
            "2026-11-02T06:30:00Z"
        ]
    );
    assert_eq!(
        slots(
            "0 * * * *",
            "America/New_York",
            "2026-11-01T04:30:00Z",
            "2026-11-01T07:30:00Z"
        ),
        vec![
            "2026-11-01T05:00:00Z", // 01:00 EDT
            "2026-11-01T07:00:00Z", // 02:00 EST; the second 01:00 is not a new slot
        ]
    );
}

#[test]
fn the_latest_slot_before_an_instant_inside_a_gap_is_before_it() {
    let s = Schedule::parse("30 2 * * *", "America/New_York").expect("schedule");
    // 07:10Z on 2026-03-08 is 03:10 EDT: the 02:30 slot of that day maps to
    // 07:30Z, after it, so the latest slot is the day before.
    assert_eq!(
        s.latest_at_or_before("2026-03-08T07:10:00Z".parse().expect("t"))
            .expect("slot")
            .to_string(),
        "2026-03-07T07:30:00Z"
    );
}
