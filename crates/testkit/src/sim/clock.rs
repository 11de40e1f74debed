//! The simulator's settable clock and ISO 8601 helpers.

use std::time::{SystemTime, UNIX_EPOCH};

/// The simulator's idea of "now": the system clock plus an offset, or a
/// fixed instant a test chose.
#[derive(Debug, Clone, Copy)]
pub enum Clock {
    /// System time shifted by this many seconds.
    System {
        /// Seconds added to the system time.
        offset: i64,
    },
    /// A fixed Unix time in seconds.
    Fixed(i64),
}

impl Default for Clock {
    fn default() -> Self {
        Clock::System { offset: 0 }
    }
}

impl Clock {
    /// Seconds since the Unix epoch.
    pub fn now(&self) -> i64 {
        match *self {
            Clock::System { offset } => system_now() + offset,
            Clock::Fixed(t) => t,
        }
    }

    /// Moves the clock forward (or back, with a negative value).
    pub fn advance(&mut self, secs: i64) {
        match self {
            Clock::System { offset } => *offset += secs,
            Clock::Fixed(t) => *t += secs,
        }
    }
}

fn system_now() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// `2026-11-03T10:00:00Z` for a Unix time.
pub fn iso(unix: i64) -> String {
    iso_with_offset(unix, 0)
}

/// `2026-11-03T12:00:00+02:00` for a Unix time and an offset in minutes
/// (`Z` when the offset is zero).
pub fn iso_with_offset(unix: i64, offset_minutes: i32) -> String {
    let shifted = unix + i64::from(offset_minutes) * 60;
    let ts = jiff::Timestamp::from_second(shifted).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let base = ts.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    if offset_minutes == 0 {
        format!("{base}Z")
    } else {
        let sign = if offset_minutes < 0 { '-' } else { '+' };
        let abs = offset_minutes.unsigned_abs();
        format!("{base}{sign}{:02}:{:02}", abs / 60, abs % 60)
    }
}

/// Parses an ISO 8601 / RFC 3339 time with `Z` or a `±HH:MM` offset into
/// (Unix seconds, offset minutes).
pub fn parse_iso(s: &str) -> Option<(i64, i32)> {
    let ts: jiff::Timestamp = s.parse().ok()?;
    let offset = if s.ends_with('Z') || s.ends_with('z') {
        0
    } else {
        let tail = s.get(s.len().checked_sub(6)?..)?;
        let sign = match tail.as_bytes().first()? {
            b'+' => 1,
            b'-' => -1,
            _ => return None,
        };
        let hours: i32 = tail.get(1..3)?.parse().ok()?;
        let minutes: i32 = tail.get(4..6)?.parse().ok()?;
        sign * (hours * 60 + minutes)
    };
    Some((ts.as_second(), offset))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn iso_round_trips_with_offsets() {
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(parse_iso("2026-11-03T10:00:00Z"), Some((1_793_700_000, 0)));
        let (t, off) = parse_iso("2026-11-03T12:00:00+02:00").expect("parses");
        assert_eq!((t, off), (1_793_700_000, 120));
        assert_eq!(iso_with_offset(t, off), "2026-11-03T12:00:00+02:00");
        assert_eq!(
            parse_iso("2026-11-03T04:30:00-05:30"),
            Some((1_793_700_000, -330))
        );
        assert_eq!(parse_iso("yesterday"), None);
    }

    #[test]
    fn clock_is_settable() {
        let mut c = Clock::Fixed(100);
        c.advance(50);
        assert_eq!(c.now(), 150);
        let mut s = Clock::default();
        let before = s.now();
        s.advance(3600);
        assert!(s.now() >= before + 3600);
    }
}
