//! The default slot of a lane run: the latest instant at or before now at
//! which the lane's cron fires, evaluated in the lane's time zone.
//!
//! croner evaluates the expression over civil (wall-clock) time; jiff's
//! time-zone database maps civil times to instants. A civil time that does
//! not exist (skipped by a daylight-saving change) maps forward by the gap,
//! and a repeated one to its first instant: jiff's "compatible" rule.

use std::str::FromStr as _;

use chrono::{Datelike as _, Timelike as _};

/// Why the slot could not be computed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SlotError {
    /// The cron expression is invalid.
    #[error("lane {lane}: cron {cron:?} is not a valid five-field expression: {reason}")]
    Cron {
        /// The lane.
        lane: String,
        /// The expression.
        cron: String,
        /// croner's message.
        reason: String,
    },
    /// The time zone is unknown.
    #[error("lane {lane}: time zone {tz:?} is not a known IANA time zone: {reason}")]
    TimeZone {
        /// The lane.
        lane: String,
        /// The zone.
        tz: String,
        /// jiff's message.
        reason: String,
    },
    /// No firing time was found (an expression that never fires).
    #[error("lane {lane}: cron {cron:?} fires at no time before {now}")]
    Never {
        /// The lane.
        lane: String,
        /// The expression.
        cron: String,
        /// The instant searched back from.
        now: String,
    },
}

/// The latest slot of `cron` in `tz` at or before `now`, as RFC 3339 UTC.
pub fn latest_slot(
    lane: &str,
    cron: &str,
    tz: &str,
    now: jiff::Timestamp,
) -> Result<String, SlotError> {
    let c = croner::Cron::from_str(cron).map_err(|e| SlotError::Cron {
        lane: lane.into(),
        cron: cron.into(),
        reason: e.to_string(),
    })?;
    let zone = jiff::tz::TimeZone::get(tz).map_err(|e| SlotError::TimeZone {
        lane: lane.into(),
        tz: tz.into(),
        reason: e.to_string(),
    })?;
    let civil = now.to_zoned_datetime(zone.clone()).datetime();
    let never = || SlotError::Never {
        lane: lane.into(),
        cron: cron.into(),
        now: now.to_string(),
    };
    // Civil time carried as if it were UTC, so that croner walks wall-clock
    // fields only.
    let wall = chrono::NaiveDate::from_ymd_opt(
        i32::from(civil.year()),
        civil.month() as u32,
        civil.day() as u32,
    )
    .and_then(|d| {
        d.and_hms_opt(
            civil.hour() as u32,
            civil.minute() as u32,
            civil.second() as u32,
        )
    })
    .ok_or_else(never)?
    .and_utc();
    let found = c
        .find_previous_occurrence(&wall, true)
        .map_err(|_| never())?;
    let civil = jiff::civil::DateTime::new(
        i16::try_from(found.year()).map_err(|_| never())?,
        found.month() as i8,
        found.day() as i8,
        found.hour() as i8,
        found.minute() as i8,
        found.second() as i8,
        0,
    )
    .map_err(|_| never())?;
    let t = civil
        .to_zoned_datetime(zone)
        .map_err(|_| never())?
        .timestamp();
    Ok(format!("{t}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> jiff::Timestamp {
        s.parse().expect("timestamp")
    }

    #[test]
    fn the_latest_firing_in_the_lanes_zone() {
        // 01:00 in Jerusalem (UTC+2 in winter) is 23:00 UTC the day before.
        let s = latest_slot(
            "c",
            "0 1 * * *",
            "Asia/Jerusalem",
            at("2026-12-01T12:00:00Z"),
        )
        .expect("slot");
        assert_eq!(s, "2026-11-30T23:00:00Z");
        let s = latest_slot("s", "0 * * * *", "UTC", at("2026-12-01T12:34:56Z")).expect("slot");
        assert_eq!(s, "2026-12-01T12:00:00Z");
        // A firing exactly now is now.
        let s = latest_slot("s", "0 * * * *", "UTC", at("2026-12-01T12:00:00Z")).expect("slot");
        assert_eq!(s, "2026-12-01T12:00:00Z");
    }

    #[test]
    fn summer_time_is_followed() {
        // July: Jerusalem is UTC+3.
        let s = latest_slot(
            "c",
            "0 1 * * *",
            "Asia/Jerusalem",
            at("2026-07-01T12:00:00Z"),
        )
        .expect("slot");
        assert_eq!(s, "2026-06-30T22:00:00Z");
    }

    #[test]
    fn bad_input_is_named() {
        let now = at("2026-12-01T12:00:00Z");
        assert!(matches!(
            latest_slot("c", "not a cron", "UTC", now),
            Err(SlotError::Cron { .. })
        ));
        assert!(matches!(
            latest_slot("c", "0 1 * * *", "Mars/Olympus", now),
            Err(SlotError::TimeZone { .. })
        ));
    }
}
