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

/// The slot a lane run fills: `--slot`, which must be a firing of the
/// lane's cron at or before now (give or take
/// [`benchops::schedule::SLOT_TOLERANCE`]), so that the watchdog credits
/// its record; or, with `--unscheduled REASON`, any instant that is not in
/// the future (now when `--slot` is absent); or else the latest firing.
pub fn choose(
    lane: &benchops::manifest::Lane,
    slot: Option<&str>,
    unscheduled: Option<&str>,
    now: jiff::Timestamp,
) -> Result<String, super::LaneError> {
    use super::LaneError;
    if let Some(why) = unscheduled
        && (why.trim().is_empty() || why.chars().count() > benchops::record::MAX_UNSCHEDULED_CHARS)
    {
        return Err(LaneError::Slot(format!(
            "--unscheduled needs a reason of 1 to {} characters (it is recorded, and shown by the watchdog)",
            benchops::record::MAX_UNSCHEDULED_CHARS
        )));
    }
    let Some(s) = slot else {
        return match unscheduled {
            Some(_) => Ok(jiff::Timestamp::from_second(now.as_second())
                .unwrap_or(now)
                .to_string()),
            None => latest_slot(lane.name.as_str(), &lane.cron, &lane.timezone, now)
                .map_err(|e| LaneError::Slot(e.to_string())),
        };
    };
    let at = benchops::time::Utc::parse(s)
        .map_err(|e| {
            LaneError::Slot(format!(
                "--slot {s:?} is not an RFC 3339 UTC instant: {}",
                e.reason
            ))
        })?
        .to_string()
        .parse::<jiff::Timestamp>()
        .map_err(|e| LaneError::Slot(format!("--slot {s:?}: {e}")))?;
    let schedule = Schedule::parse(&lane.cron, &lane.timezone)
        .map_err(|e| LaneError::Slot(format!("lane `{}`: {e}", lane.name)))?;
    let checked = schedule.check_slot(at, now);
    match (checked, unscheduled) {
        (Ok(()), _) => Ok(s.to_owned()),
        (Err(p), Some(_)) if !p.future => Ok(s.to_owned()),
        (Err(p), _) => Err(LaneError::Slot(format!(
            "--slot {s}: {p} (lane `{}`: cron `{}` in {}); give one of its slots, so that the watchdog credits the record, or --unscheduled REASON to record an ad-hoc run on purpose",
            lane.name, lane.cron, lane.timezone
        ))),
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

    fn lane() -> benchops::manifest::Lane {
        let m = benchops::manifest::from_toml(
            "schema = \"schedule-manifest/v1\"\n[[lanes]]\nname = \"comprehensive\"\ncron = \"0 1 * * *\"\ntimezone = \"Asia/Jerusalem\"\ncompletion_window_minutes = 60\ncases = [\"*\"]\nbaseline = \"last-clean\"\n",
            "m.toml",
        )
        .expect("manifest");
        m.manifest.lanes[0].clone()
    }

    #[test]
    fn a_slot_must_be_a_firing_and_not_in_the_future_unless_unscheduled() {
        let now = at("2026-12-07T12:00:00Z");
        let l = lane();
        // 01:00 in Jerusalem is 23:00 UTC the day before.
        assert_eq!(
            choose(&l, Some("2026-12-05T23:00:00Z"), None, now).expect("a firing"),
            "2026-12-05T23:00:00Z"
        );
        let e = choose(&l, Some("2026-12-01T00:00:00Z"), None, now)
            .expect_err("not a firing")
            .to_string();
        assert!(
            e.contains("not a firing")
                && e.contains("2026-11-30T23:00:00Z and 2026-12-01T23:00:00Z")
                && e.contains("--unscheduled"),
            "{e}"
        );
        let e = choose(&l, Some("2026-12-17T23:00:00Z"), None, now)
            .expect_err("future")
            .to_string();
        assert!(
            e.contains("lies in the future") && e.contains("2026-12-06T23:00:00Z"),
            "{e}"
        );
        // Unscheduled: any past instant, now by default; never the future.
        assert_eq!(
            choose(&l, Some("2026-12-01T00:00:00Z"), Some("hotfix"), now).expect("ad hoc"),
            "2026-12-01T00:00:00Z"
        );
        assert_eq!(
            choose(&l, None, Some("hotfix"), now).expect("now"),
            "2026-12-07T12:00:00Z"
        );
        assert!(choose(&l, Some("2026-12-17T23:00:00Z"), Some("x"), now).is_err());
        assert!(choose(&l, None, Some("  "), now).is_err());
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
