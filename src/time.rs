//! The one place where benchops reads and writes timestamps.
//!
//! Every contract writes instants as RFC 3339 in UTC with a `Z` suffix and
//! an optional fraction of one to nine digits:
//! `YYYY-MM-DDTHH:MM:SS[.f]Z`. [`Utc`] parses exactly that shape (no
//! offsets, no lower-case `t` or `z`, no space separator), checks the
//! calendar with `jiff`, and orders values as instants, never as text:
//! `2026-11-30T01:00:00Z` sorts before `2026-11-30T01:00:00.5Z`, although
//! `.` (0x2E) sorts before `Z` (0x5A) byte by byte.
//!
//! The core reads no clock: [`Utc::from_system`] converts a
//! [`std::time::SystemTime`] that the caller read, and [`Clock`] is the one
//! definition of a clock that the crates which read time implement and
//! inject (`benchops-github` for JWT claims, rate-limit resets and pacing,
//! `benchops-platform` for every duration of a platform run).
//!
//! History paths use the compact form `YYYYMMDDTHHMMSSZ` ([`Utc::compact`]),
//! which drops the fraction; the digest in the file name keeps paths
//! unique.

use std::fmt;
use std::time::{Duration, SystemTime};

/// A timestamp is not in the contracts' RFC 3339 UTC form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{value:?} is not an RFC 3339 UTC timestamp (YYYY-MM-DDTHH:MM:SS[.f]Z): {reason}")]
pub struct TimeError {
    /// The text (cut to a short prefix when long).
    pub value: String,
    /// What is wrong.
    pub reason: &'static str,
}

fn bad(value: &str, reason: &'static str) -> TimeError {
    const MAX: usize = 64;
    let value = if value.len() > MAX {
        let mut end = MAX;
        while !value.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}… ({} bytes)", &value[..end], value.len())
    } else {
        value.to_owned()
    };
    TimeError { value, reason }
}

/// An instant written in the contracts' RFC 3339 UTC form. Ordered
/// chronologically.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Utc(jiff::Timestamp);

impl fmt::Debug for Utc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Utc({})", self.0)
    }
}

impl fmt::Display for Utc {
    /// The shortest RFC 3339 UTC form (`2026-11-30T01:00:00Z`,
    /// `2026-11-30T01:00:00.5Z`).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl Utc {
    /// Parses `YYYY-MM-DDTHH:MM:SS[.f{1,9}]Z` strictly.
    pub fn parse(s: &str) -> Result<Utc, TimeError> {
        let b = s.as_bytes();
        if b.len() < 20 || b.len() > 30 {
            return Err(bad(s, "wrong length"));
        }
        if b[b.len() - 1] != b'Z' {
            return Err(bad(s, "must end in Z (UTC)"));
        }
        let seps = [(4, b'-'), (7, b'-'), (10, b'T'), (13, b':'), (16, b':')];
        if seps.iter().any(|&(i, c)| b[i] != c) {
            return Err(bad(s, "separators must be - - T : :"));
        }
        let digits = [0..4, 5..7, 8..10, 11..13, 14..16, 17..19];
        if digits
            .iter()
            .any(|r| !b[r.clone()].iter().all(u8::is_ascii_digit))
        {
            return Err(bad(s, "date and time fields must be digits"));
        }
        let frac = &b[19..b.len() - 1];
        if !frac.is_empty() {
            let ok = frac[0] == b'.'
                && (2..=10).contains(&frac.len())
                && frac[1..].iter().all(u8::is_ascii_digit);
            if !ok {
                return Err(bad(s, "the fraction must be . and 1 to 9 digits"));
            }
        }
        let ts: jiff::Timestamp = s.parse().map_err(|_| bad(s, "no such date or time"))?;
        Ok(Utc(ts))
    }

    /// The instant of `t` (times before 1970 and after 9999 are clamped).
    pub fn from_system(t: SystemTime) -> Utc {
        let ts = jiff::Timestamp::try_from(t).unwrap_or(match t < SystemTime::UNIX_EPOCH {
            true => jiff::Timestamp::MIN,
            false => jiff::Timestamp::MAX,
        });
        Utc(ts)
    }

    /// `t` in milliseconds, always with three fraction digits:
    /// `2026-11-30T02:00:05.250Z` (what receipts write).
    pub fn millis(t: SystemTime) -> String {
        let u = Utc::from_system(t);
        format!("{:.3}", u.0)
    }

    /// Seconds since the Unix epoch (the fraction dropped, toward the past).
    pub fn unix_seconds(&self) -> i64 {
        self.0.as_second()
    }

    /// Nanoseconds within the second (0 to 999,999,999).
    pub fn subsec_nanos(&self) -> u32 {
        u32::try_from(self.0.subsec_nanosecond()).unwrap_or(0)
    }

    fn civil(&self) -> jiff::civil::DateTime {
        self.0.to_zoned_datetime(jiff::tz::TimeZone::UTC).datetime()
    }

    /// `YYYYMMDDTHHMMSSZ`, the form history paths use (no fraction).
    pub fn compact(&self) -> String {
        let d = self.civil();
        format!(
            "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
            d.year(),
            d.month(),
            d.day(),
            d.hour(),
            d.minute(),
            d.second()
        )
    }

    /// `YYYY/MM`, the directories of history paths.
    pub fn year_month(&self) -> String {
        let d = self.civil();
        format!("{:04}/{:02}", d.year(), d.month())
    }

    /// Parses the compact form `YYYYMMDDTHHMMSSZ` (exactly 16 ASCII bytes).
    pub fn parse_compact(s: &str) -> Result<Utc, TimeError> {
        let b = s.as_bytes();
        let shape = b.len() == 16
            && b[8] == b'T'
            && b[15] == b'Z'
            && b[..8].iter().all(u8::is_ascii_digit)
            && b[9..15].iter().all(u8::is_ascii_digit);
        if !shape {
            return Err(bad(s, "the compact form is YYYYMMDDTHHMMSSZ"));
        }
        let rfc = format!(
            "{}-{}-{}T{}:{}:{}Z",
            &s[0..4],
            &s[4..6],
            &s[6..8],
            &s[9..11],
            &s[11..13],
            &s[13..15]
        );
        let t = Utc::parse(&rfc)?;
        if t.compact() != s {
            return Err(bad(s, "no such date or time"));
        }
        Ok(t)
    }
}

/// A sort key for timestamps that may be invalid: invalid ones first (by
/// text), then valid ones by instant alone, so sorting is total and
/// deterministic. Two spellings of one instant (`01:00:00Z` and
/// `01:00:00.000Z`) have the same key: the text breaks ties only between
/// values that are not instants, and a caller orders equal instants by
/// what comes next in its key (a digest), never by how they were written.
pub fn order_key(s: &str) -> (Option<Utc>, &str) {
    match Utc::parse(s) {
        Ok(t) => (Some(t), ""),
        Err(_) => (None, s),
    }
}

/// A source of time, injected: the core never reads one. Implementations
/// live in the crates that read time, with a test clock beside each that
/// moves only when told. How a crate waits is its own (an async sleeper, a
/// blocking pause on the same clock).
pub trait Clock: Send + Sync + fmt::Debug {
    /// Wall-clock time, for timestamps (JWT claims, `x-ratelimit-reset`,
    /// run ids).
    fn now(&self) -> SystemTime;
    /// Monotonic time since a fixed, arbitrary origin, for every duration.
    fn monotonic(&self) -> Duration;
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn parses_the_contract_form_strictly() {
        let a = Utc::parse("2026-11-30T01:00:00Z").expect("parses");
        let b = Utc::parse("2026-11-30T01:00:00.5Z").expect("parses");
        let c = Utc::parse("2026-11-30T01:00:01Z").expect("parses");
        assert!(a < b && b < c, "instants, not text");
        assert!(
            "2026-11-30T01:00:00.5Z" < "2026-11-30T01:00:00Z",
            "text disagrees"
        );
        assert_eq!(b.subsec_nanos(), 500_000_000);
        assert_eq!(a.compact(), "20261130T010000Z");
        assert_eq!(b.compact(), "20261130T010000Z");
        assert_eq!(a.year_month(), "2026/11");
        assert_eq!(
            Utc::parse("1970-01-01T00:00:00Z").map(|t| t.unix_seconds()),
            Ok(0)
        );
        assert_eq!(
            Utc::parse("2000-03-01T00:00:01Z").map(|t| t.unix_seconds()),
            Ok(951_868_801)
        );
        assert!(Utc::parse("2026-11-30T01:00:00.123456789Z").is_ok());
        for bad in [
            "2026-11-30T01:00:00",
            "2026-11-30 01:00:00Z",
            "2026-13-30T01:00:00Z",
            "2026-02-30T01:00:00Z",
            "2026-11-30T24:00:00Z",
            "2026-11-30T01:00:00.Z",
            "2026-11-30T01:00:00.1234567890Z",
            "2026-11-30T01:00:00+00:00",
            "2026-11-30t01:00:00z",
            "2026-1-30T01:00:00ZZ",
            "+2026-11-30T01:00:00Z",
            "2026-11-30T01:00:00,5Z",
        ] {
            assert!(Utc::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn errors_cut_long_values() {
        let long = "9".repeat(10_000);
        let e = Utc::parse(&long).expect_err("invalid");
        assert!(e.to_string().len() < 200, "{e}");
        assert!(e.to_string().contains("10000 bytes"));
    }

    #[test]
    fn compact_round_trips() {
        let t = Utc::parse_compact("20261130T010000Z").expect("parses");
        assert_eq!(t, Utc::parse("2026-11-30T01:00:00Z").expect("parses"));
        for bad in [
            "20261130T010000",
            "20261330T010000Z",
            "2026113OT010000Z",
            "20260230T010000Z",
        ] {
            assert!(Utc::parse_compact(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn system_times_print_with_milliseconds() {
        let t = SystemTime::UNIX_EPOCH + Duration::from_millis(1_764_468_005_250);
        assert_eq!(Utc::millis(t), "2025-11-30T02:00:05.250Z");
        assert_eq!(
            Utc::millis(SystemTime::UNIX_EPOCH),
            "1970-01-01T00:00:00.000Z"
        );
    }

    #[test]
    fn order_keys_put_instants_first() {
        let mut v = vec!["bad", "2026-11-30T01:00:00Z", "2026-11-30T01:00:00.5Z"];
        v.sort_by_key(|s| order_key(s));
        assert_eq!(v, ["bad", "2026-11-30T01:00:00Z", "2026-11-30T01:00:00.5Z"]);
    }

    #[test]
    fn one_instant_written_two_ways_has_one_order_key() {
        let whole = order_key("2026-11-30T01:00:00Z");
        for same in [
            "2026-11-30T01:00:00.000Z",
            "2026-11-30T01:00:00.0Z",
            "2026-11-30T01:00:00.000000000Z",
        ] {
            assert_eq!(order_key(same), whole, "{same}");
        }
        assert!(order_key("2026-11-30T01:00:00.001Z") > whole);
        assert!(order_key("bad-a") < order_key("bad-b"));
        assert!(order_key("zzz") < whole, "invalid text sorts first");
    }
}
