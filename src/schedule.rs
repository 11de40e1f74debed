//! When a lane is due: the firing instants of its five-field cron
//! expression, evaluated in its IANA time zone.
//!
//! `croner` walks the expression over civil (wall-clock) time and jiff's
//! bundled time-zone database maps each civil time to an instant, so the
//! result does not depend on the machine's zone files. Across a
//! daylight-saving change:
//!
//! - a civil time that does not exist (the skipped hour) fires once, at the
//!   instant the clock reaches it after the gap (`02:30` on a spring-forward
//!   night of one hour fires at `03:30` local): jiff's "compatible" rule;
//! - a civil time that exists twice (the repeated hour) fires once, at its
//!   first instant;
//! - two civil times that land on one instant are one slot.
//!
//! Every list is bounded ([`MAX_SLOTS`]): a lookback too long for the
//! expression is refused with an error that names it, never truncated in
//! silence.

use std::str::FromStr as _;

use serde::{Deserialize, Serialize};

use chrono::{Datelike as _, Timelike as _};
use jiff::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;

/// The most slots [`Schedule::slots_between`] returns.
pub const MAX_SLOTS: usize = 10_000;

/// How far past now a slot may lie and still be run: a run that starts a
/// little early for its slot.
pub const SLOT_TOLERANCE: jiff::SignedDuration = jiff::SignedDuration::from_mins(10);

/// Why a slot is not one a lane may record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlotProblem {
    /// The slot given.
    pub slot: Timestamp,
    /// It lies in the future beyond [`SLOT_TOLERANCE`].
    pub future: bool,
    /// The firing before it, when it is not one.
    pub before: Option<Timestamp>,
    /// The firing after it, when it is not one.
    pub after: Option<Timestamp>,
    /// The latest firing at or before now: the slot a run now fills.
    pub latest: Option<Timestamp>,
}

impl std::fmt::Display for SlotProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.future {
            write!(f, "{} lies in the future", self.slot)?;
        } else {
            write!(f, "{} is not a firing of the lane's cron", self.slot)?;
        }
        let near: Vec<String> = [self.before, self.after]
            .into_iter()
            .flatten()
            .map(|t| t.to_string())
            .collect();
        if !near.is_empty() && !self.future {
            write!(f, "; the nearest slots are {}", near.join(" and "))?;
        }
        if let Some(l) = self.latest {
            write!(f, "; the latest slot due now is {l}")?;
        }
        Ok(())
    }
}

/// Why a schedule could not be read or evaluated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ScheduleError {
    /// The cron expression is invalid.
    #[error("cron {cron:?} is not a valid five-field expression: {reason}")]
    Cron {
        /// The expression.
        cron: String,
        /// croner's message.
        reason: String,
    },
    /// The time zone is unknown.
    #[error("time zone {tz:?} is not a known IANA time zone: {reason}")]
    TimeZone {
        /// The zone.
        tz: String,
        /// jiff's message.
        reason: String,
    },
    /// No firing time at or before the instant (an expression that never
    /// fires, such as `0 0 30 2 *`).
    #[error("cron {cron:?} fires at no time at or before {at}")]
    Never {
        /// The expression.
        cron: String,
        /// The instant searched back from.
        at: String,
    },
    /// More than [`MAX_SLOTS`] slots in the interval.
    #[error(
        "cron {cron:?} fires more than {max} times between {from} and {to}: shorten the lookback"
    )]
    TooMany {
        /// The expression.
        cron: String,
        /// The start of the interval.
        from: String,
        /// Its end.
        to: String,
        /// [`MAX_SLOTS`].
        max: usize,
    },
}

/// A lane's cron expression in its time zone.
#[derive(Debug, Clone)]
pub struct Schedule {
    text: String,
    cron: croner::Cron,
    zone: TimeZone,
}

fn wall(civil: DateTime) -> Option<chrono::DateTime<chrono::Utc>> {
    // Civil time carried as if it were UTC, so that croner walks wall-clock
    // fields only.
    chrono::NaiveDate::from_ymd_opt(
        i32::from(civil.year()),
        u32::try_from(civil.month()).ok()?,
        u32::try_from(civil.day()).ok()?,
    )?
    .and_hms_opt(
        u32::try_from(civil.hour()).ok()?,
        u32::try_from(civil.minute()).ok()?,
        u32::try_from(civil.second()).ok()?,
    )
    .map(|d| d.and_utc())
}

fn civil(wall: &chrono::DateTime<chrono::Utc>) -> Option<DateTime> {
    DateTime::new(
        i16::try_from(wall.year()).ok()?,
        i8::try_from(wall.month()).ok()?,
        i8::try_from(wall.day()).ok()?,
        i8::try_from(wall.hour()).ok()?,
        i8::try_from(wall.minute()).ok()?,
        i8::try_from(wall.second()).ok()?,
        0,
    )
    .ok()
}

/// The five fields of a cron expression: name, and the values allowed.
const FIELDS: [(&str, u32, u32); 5] = [
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day-of-month", 1, 31),
    ("month", 1, 12),
    ("day-of-week", 0, 7),
];

/// Which field of `cron` is wrong, in words, when that can be told: the
/// number of fields, or a number outside its field's range. `None` leaves
/// the parser's own message.
fn field_problem(cron: &str) -> Option<String> {
    let fields: Vec<&str> = cron.split_whitespace().collect();
    if fields.len() != 5 {
        return Some(format!(
            "it has {} field(s); give five: minute hour day-of-month month day-of-week (`0 1 * * *` is 01:00 every day)",
            fields.len()
        ));
    }
    for (text, (name, low, high)) in fields.iter().zip(FIELDS) {
        // Numbers of lists, ranges and steps (`1-5/2,7`); names (JAN, MON)
        // and `*` are left to the parser.
        for n in text
            .split([',', '-', '/'])
            .filter_map(|part| part.parse::<u32>().ok())
        {
            let is_step = text
                .split_once('/')
                .is_some_and(|(_, step)| step.parse::<u32>().ok() == Some(n));
            if !is_step && !(low..=high).contains(&n) {
                return Some(format!(
                    "the {name} field `{text}` holds {n}, outside {low}–{high}"
                ));
            }
        }
    }
    None
}

impl Schedule {
    /// Reads `cron` (five fields) in the IANA zone `tz`.
    pub fn parse(cron: &str, tz: &str) -> Result<Schedule, ScheduleError> {
        let c = croner::Cron::from_str(cron).map_err(|e| ScheduleError::Cron {
            cron: cron.into(),
            reason: field_problem(cron).unwrap_or_else(|| e.to_string()),
        })?;
        let zone = TimeZone::get(tz).map_err(|e| ScheduleError::TimeZone {
            tz: tz.into(),
            reason: e.to_string(),
        })?;
        Ok(Schedule {
            text: cron.to_owned(),
            cron: c,
            zone,
        })
    }

    /// The expression as written.
    pub fn cron(&self) -> &str {
        &self.text
    }

    fn instant(&self, civil: DateTime) -> Option<Timestamp> {
        // `to_timestamp` follows the compatible rule: forward over a gap, the
        // earlier instant in a fold.
        self.zone.to_timestamp(civil).ok()
    }

    /// The latest firing at or before `at`.
    pub fn latest_at_or_before(&self, at: Timestamp) -> Result<Timestamp, ScheduleError> {
        let never = || ScheduleError::Never {
            cron: self.text.clone(),
            at: at.to_string(),
        };
        let mut from = wall(self.zone.to_datetime(at)).ok_or_else(never)?;
        // A civil time inside a gap maps to an instant after `at`: step back
        // until a firing lands at or before it (at most a few steps).
        for _ in 0..8 {
            let found = self
                .cron
                .find_previous_occurrence(&from, true)
                .map_err(|_| never())?;
            let t = civil(&found)
                .and_then(|c| self.instant(c))
                .ok_or_else(never)?;
            if t <= at {
                return Ok(t);
            }
            from = found - chrono::Duration::seconds(1);
        }
        Err(never())
    }

    /// The first firing after `at`, looking at most `horizon` ahead.
    pub fn next_after(&self, at: Timestamp, horizon: jiff::SignedDuration) -> Option<Timestamp> {
        let to = at.checked_add(horizon).ok()?;
        // Step a day at a time, so that a frequent cron stays within
        // MAX_SLOTS per look.
        let day = jiff::SignedDuration::from_hours(24);
        let mut from = at;
        while from < to {
            let until = from.checked_add(day).ok()?.min(to);
            if let Some(t) = self.slots_between(from, until).ok()?.first() {
                return Some(*t);
            }
            from = until;
        }
        None
    }

    /// Whether `slot` is a firing this schedule gives, and not later than
    /// `now` by more than [`SLOT_TOLERANCE`]: the one check `lane run` and
    /// `bench seal` make of the slot they are given, so that the watchdog
    /// credits the record they seal.
    pub fn check_slot(&self, slot: Timestamp, now: Timestamp) -> Result<(), SlotProblem> {
        let latest = self.latest_at_or_before(slot).ok();
        let is_firing = latest == Some(slot);
        let too_late = slot > now + SLOT_TOLERANCE;
        if is_firing && !too_late {
            return Ok(());
        }
        let before = latest.filter(|t| *t != slot);
        let after = self.next_after(slot, jiff::SignedDuration::from_hours(24 * 400));
        let latest_due = self.latest_at_or_before(now).ok();
        Err(SlotProblem {
            slot,
            future: too_late,
            before,
            after: after.filter(|_| !is_firing),
            latest: latest_due,
        })
    }

    /// Every firing in `(from, to]`, ascending, each instant once.
    pub fn slots_between(
        &self,
        from: Timestamp,
        to: Timestamp,
    ) -> Result<Vec<Timestamp>, ScheduleError> {
        let mut out: Vec<Timestamp> = Vec::new();
        if to <= from {
            return Ok(out);
        }
        let too_many = || ScheduleError::TooMany {
            cron: self.text.clone(),
            from: from.to_string(),
            to: to.to_string(),
            max: MAX_SLOTS,
        };
        // Start a day early in civil time: a fold or a gap can move a civil
        // time's instant by the size of the change, never by a day.
        let start = self
            .zone
            .to_datetime(from)
            .checked_sub(jiff::Span::new().days(1))
            .ok()
            .and_then(wall);
        let end = self
            .zone
            .to_datetime(to)
            .checked_add(jiff::Span::new().days(1))
            .ok()
            .and_then(wall);
        let (Some(start), Some(end)) = (start, end) else {
            return Ok(out);
        };
        for found in self
            .cron
            .iter_from(start, croner::Direction::Forward)
            .take_while(|w| *w <= end)
        {
            let Some(t) = civil(&found).and_then(|c| self.instant(c)) else {
                continue;
            };
            if t <= from || t > to {
                continue;
            }
            if out.len() > MAX_SLOTS {
                return Err(too_many());
            }
            out.push(t);
        }
        out.sort();
        out.dedup();
        if out.len() > MAX_SLOTS {
            return Err(too_many());
        }
        Ok(out)
    }
}

/// What `lane due` does with a slot that was not run when it came (v3,
/// `catch_up`): the machine was off, the timer did not fire.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "kebab-case")]
pub enum CatchUp {
    /// Run the newest missed slot while its completion window is open;
    /// older missed slots stay missed (the default).
    #[default]
    Latest,
    /// Run a slot only on time (within the slot tolerance): a late slot is
    /// skipped, and said to be.
    None,
}

impl CatchUp {
    /// The policy `word` names (`latest`, `none`), if any.
    pub fn from_word(word: &str) -> Option<CatchUp> {
        [CatchUp::Latest, CatchUp::None]
            .into_iter()
            .find(|c| c.as_str() == word)
    }

    /// The manifest's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            CatchUp::Latest => "latest",
            CatchUp::None => "none",
        }
    }
}

#[cfg(test)]
mod field_tests {
    use super::*;

    #[test]
    fn a_bad_cron_names_its_field_and_range() {
        let reason = |cron: &str| match Schedule::parse(cron, "UTC") {
            Err(ScheduleError::Cron { reason, .. }) => reason,
            other => panic!("{cron}: {other:?}"),
        };
        assert_eq!(
            reason("0 25 * * *"),
            "the hour field `25` holds 25, outside 0–23"
        );
        assert_eq!(
            reason("61 1 * * *"),
            "the minute field `61` holds 61, outside 0–59"
        );
        assert!(reason("0 1 * 1-13 *").contains("month field `1-13` holds 13, outside 1–12"));
        assert!(reason("0 1 * *").starts_with("it has 4 field(s); give five"));
        // Steps are not values: a good expression still parses.
        assert!(Schedule::parse("*/15 1-5 * * 1-5", "UTC").is_ok());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> Timestamp {
        s.parse().expect("timestamp")
    }

    fn slots(cron: &str, tz: &str, from: &str, to: &str) -> Vec<String> {
        Schedule::parse(cron, tz)
            .expect("schedule")
            .slots_between(at(from), at(to))
            .expect("slots")
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    #[test]
    fn daily_slots_in_the_lanes_zone_over_an_interval() {
        // 01:00 in Jerusalem in winter (UTC+2) is 23:00 UTC the day before.
        assert_eq!(
            slots(
                "0 1 * * *",
                "Asia/Jerusalem",
                "2026-11-28T00:00:00Z",
                "2026-12-01T00:00:00Z"
            ),
            vec![
                "2026-11-28T23:00:00Z",
                "2026-11-29T23:00:00Z",
                "2026-11-30T23:00:00Z"
            ]
        );
        // The interval is half-open: a firing at `from` is not in it.
        assert_eq!(
            slots(
                "0 * * * *",
                "UTC",
                "2026-12-01T10:00:00Z",
                "2026-12-01T12:00:00Z"
            ),
            vec!["2026-12-01T11:00:00Z", "2026-12-01T12:00:00Z"]
        );
    }

    #[test]
    fn the_latest_firing_and_bad_input() {
        let s = Schedule::parse("0 1 * * *", "Asia/Jerusalem").expect("schedule");
        assert_eq!(
            s.latest_at_or_before(at("2026-12-01T12:00:00Z"))
                .expect("slot")
                .to_string(),
            "2026-11-30T23:00:00Z"
        );
        assert!(matches!(
            Schedule::parse("not a cron", "UTC"),
            Err(ScheduleError::Cron { .. })
        ));
        assert!(matches!(
            Schedule::parse("0 1 * * *", "Mars/Olympus"),
            Err(ScheduleError::TimeZone { .. })
        ));
        let minutely = Schedule::parse("* * * * *", "UTC").expect("schedule");
        assert!(matches!(
            minutely.slots_between(at("2026-01-01T00:00:00Z"), at("2026-12-01T00:00:00Z")),
            Err(ScheduleError::TooMany { .. })
        ));
    }
}
