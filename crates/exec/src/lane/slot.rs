//! The default slot of a lane run: the latest instant at or before now at
//! which the lane's cron fires, evaluated in the lane's time zone by the
//! core's [`benchops::schedule`] (the same rule the watchdog expects slots
//! by: a civil time skipped by a daylight-saving change fires once after the
//! gap, a repeated one once at its first instant).

use benchops::schedule::{Schedule, ScheduleError};

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
    let slot = Schedule::parse(cron, tz).and_then(|s| s.latest_at_or_before(now));
    match slot {
        Ok(t) => Ok(t.to_string()),
        Err(ScheduleError::Cron { reason, .. }) => Err(SlotError::Cron {
            lane: lane.into(),
            cron: cron.into(),
            reason,
        }),
        Err(ScheduleError::TimeZone { reason, .. }) => Err(SlotError::TimeZone {
            lane: lane.into(),
            tz: tz.into(),
            reason,
        }),
        Err(ScheduleError::Never { .. } | ScheduleError::TooMany { .. }) => Err(SlotError::Never {
            lane: lane.into(),
            cron: cron.into(),
            now: now.to_string(),
        }),
    }
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
