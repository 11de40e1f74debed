//! One pass over the bytes of a sealed `benchmark-result` record that
//! checks the canonical form, decodes the typed record and enforces every
//! constraint of the record's JSON Schema, without building a tree of the
//! document.
//!
//! The pass is a proof, not a report: [`decode`] returns the record only
//! when the bytes are the RFC 8785 canonical form of a document that the
//! v1, v2 or v3 schema accepts and the typed layer can hold. At the first doubt
//! it returns `None`, and [`crate::seal::verify`] runs the reporting path
//! (`crate::scan`, `jsonschema`, the typed decoder), which names every
//! problem with its path and kind. Valid records, the case that has to be
//! fast, never reach that path; invalid ones get exactly the reports they
//! always got.
//!
//! Because the bytes must be canonical, the pass can be strict where a
//! general parser cannot: there is no whitespace to skip, the members of
//! every object come in one fixed order (the schema requires all of them,
//! forbids others, and canonical form sorts them; the few optional ones of
//! v3 are tried where they sort), and every string and
//! number has exactly one spelling. Each struct is read as a fixed
//! sequence of member names. Numbers are checked against the ECMAScript
//! spelling of the double they denote: spellings that are plainly
//! canonical are recognised from the text and converted exactly (the
//! decimal has at most 15 digits, so one correctly rounded division gives
//! the nearest double); anything else is converted by the standard library
//! and formatted back with `ryu-js`, as the canonicalizer does.
//!
//! The JSON Schema files stay the contract: `tests/it/verify_differential.rs`
//! runs this pass and `jsonschema` over a corpus of valid and near-valid
//! records and requires the same verdict on each (ADR 0007).

use std::borrow::Cow;
use std::collections::BTreeMap;

use crate::digest::Sha256Digest;
use crate::names::{CaseId, LaneName};
use crate::num::Finite;
mod comparison;

use crate::record::{
    BaselineMetric, BaselineProposal, BaselineRef, Case, CaseCounts, CaseError, ConfidenceInterval,
    Direction, DriftEvidence, DriftReport, Environment, Executor, Metric, Outcome, PublicationPlan,
    RESULT_SCHEMA, ResultRecord, RunCounts, Subject, Summary, Verdict,
};

/// The record the bytes hold, when they are canonical and valid under the
/// schema their `schema` member names; `None` when that cannot be shown.
pub fn decode(bytes: &[u8]) -> Option<ResultRecord> {
    let mut p = Pass { b: bytes, i: 0 };
    let r = p.record()?;
    (p.i == bytes.len()).then_some(r)
}

/// The largest integer every smaller one of which a double holds exactly.
const MAX_SAFE: u64 = 1 << 53;

/// Exact powers of ten as doubles (10^22 is the last one).
const POW10: [f64; 23] = [
    1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16,
    1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
];

struct Pass<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Pass<'a> {
    // ---- tokens ---------------------------------------------------------

    fn lit(&mut self, s: &[u8]) -> Option<()> {
        if self.b.get(self.i..self.i + s.len())? == s {
            self.i += s.len();
            Some(())
        } else {
            None
        }
    }

    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    /// `{"name":`: the first member of an object.
    fn first(&mut self, name: &[u8]) -> Option<()> {
        self.lit(b"{\"")?;
        self.lit(name)?;
        self.lit(b"\":")
    }

    /// `,"name":`: a later member.
    fn next(&mut self, name: &[u8]) -> Option<()> {
        self.lit(b",\"")?;
        self.lit(name)?;
        self.lit(b"\":")
    }

    fn end(&mut self) -> Option<()> {
        self.lit(b"}")
    }

    /// Whether `null` comes next (and consumes it).
    fn null(&mut self) -> bool {
        if self.b.get(self.i..self.i + 4) == Some(b"null") {
            self.i += 4;
            true
        } else {
            false
        }
    }

    fn bool(&mut self) -> Option<bool> {
        if self.lit(b"true").is_some() {
            Some(true)
        } else {
            self.lit(b"false").map(|()| false)
        }
    }

    /// A string in canonical spelling: only `"`, `\` and the C0 controls are
    /// escaped, the controls by name where JSON has one and as lowercase
    /// `\u00xx` otherwise. Borrowed unless it holds an escape.
    fn string(&mut self) -> Option<Cow<'a, str>> {
        self.lit(b"\"")?;
        let start = self.i;
        loop {
            match *self.b.get(self.i)? {
                b'"' => {
                    let s = std::str::from_utf8(&self.b[start..self.i]).ok()?;
                    self.i += 1;
                    return Some(Cow::Borrowed(s));
                }
                b'\\' => break,
                0..=0x1f => return None,
                _ => self.i += 1,
            }
        }
        let mut out = String::from(std::str::from_utf8(&self.b[start..self.i]).ok()?);
        loop {
            let run = self.i;
            loop {
                match *self.b.get(self.i)? {
                    b'"' | b'\\' => break,
                    0..=0x1f => return None,
                    _ => self.i += 1,
                }
            }
            out.push_str(std::str::from_utf8(&self.b[run..self.i]).ok()?);
            if self.b[self.i] == b'"' {
                self.i += 1;
                return Some(Cow::Owned(out));
            }
            // An escape.
            let c = match *self.b.get(self.i + 1)? {
                b'"' => '"',
                b'\\' => '\\',
                b'b' => '\u{8}',
                b't' => '\t',
                b'n' => '\n',
                b'f' => '\u{c}',
                b'r' => '\r',
                b'u' => {
                    let hex = self.b.get(self.i + 2..self.i + 6)?;
                    let (h, l) = match hex {
                        [b'0', b'0', h @ (b'0' | b'1'), l] => (*h - b'0', *l),
                        _ => return None,
                    };
                    let low = match l {
                        b'0'..=b'9' => l - b'0',
                        b'a'..=b'f' => l - b'a' + 10,
                        _ => return None,
                    };
                    let v = (h << 4) | low;
                    // These five have a short escape, which canonical form uses.
                    if matches!(v, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d) {
                        return None;
                    }
                    self.i += 4;
                    char::from(v)
                }
                _ => return None,
            };
            out.push(c);
            self.i += 2;
        }
    }

    fn owned(&mut self) -> Option<String> {
        self.string().map(Cow::into_owned)
    }

    /// A string of at least one character.
    fn nonempty(&mut self) -> Option<String> {
        let s = self.owned()?;
        (!s.is_empty()).then_some(s)
    }

    /// A number in canonical spelling, as the finite double it denotes.
    ///
    /// One scan checks JSON's grammar and gathers the significant digits.
    /// A token without exponent, with at most 15 significant digits, no
    /// trailing zero in its fraction and a magnitude of at least 10^-6 is
    /// the ECMAScript spelling of its double (see
    /// `jcs::is_plainly_canonical`): 15 digits round-trip through a double,
    /// and no shorter decimal denotes the same one. Its value is exact in
    /// one correctly rounded division (Clinger's fast path). Anything else
    /// is converted by the standard library and formatted back.
    fn number(&mut self) -> Option<Finite> {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        let neg = b.get(i) == Some(&b'-');
        if neg {
            i += 1;
        }
        // The digits' value, wrapping: it is used only when there are at
        // most 15 significant digits (and at most 5 zeros before them), so
        // at most 15 digits ever reach it.
        let digit = |i: usize| b.get(i).map(|d| d.wrapping_sub(b'0')).filter(|d| *d < 10);
        let mut m: u64 = 0;
        let int_from = i;
        // Significant digits in the integer part (none for `0`).
        let int_sig = match digit(i)? {
            0 => {
                i += 1;
                0
            }
            _ => {
                while let Some(d) = digit(i) {
                    m = m.wrapping_mul(10).wrapping_add(u64::from(d));
                    i += 1;
                }
                i - int_from
            }
        };
        let mut frac_len = 0usize;
        let mut leading_frac_zeros = 0usize;
        let mut trailing_zero = false;
        if b.get(i) == Some(&b'.') {
            i += 1;
            let from = i;
            while let Some(d) = digit(i) {
                m = m.wrapping_mul(10).wrapping_add(u64::from(d));
                i += 1;
            }
            frac_len = i - from;
            if frac_len == 0 {
                return None;
            }
            trailing_zero = b[i - 1] == b'0';
            if int_sig == 0 {
                leading_frac_zeros = b[from..i].iter().take_while(|d| **d == b'0').count();
            }
        }
        let sig = if int_sig == 0 {
            frac_len - leading_frac_zeros
        } else {
            int_sig + frac_len
        };
        let exponent = matches!(b.get(i), Some(b'e' | b'E'));
        if exponent {
            i += 1;
            if matches!(b.get(i), Some(b'+' | b'-')) {
                i += 1;
            }
            let from = i;
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if i == from {
                return None;
            }
        }
        self.i = i;
        if !exponent && sig <= 15 {
            let plain = if frac_len == 0 {
                // An integer; `-0` is spelled `0`.
                !(neg && m == 0)
            } else {
                !trailing_zero && leading_frac_zeros <= 5
            };
            if plain {
                let v = (m as f64) / *POW10.get(frac_len)?;
                return Finite::new(if neg { -v } else { v }).ok();
            }
        }
        let t = &b[start..i];
        let v: f64 = std::str::from_utf8(t).ok()?.parse().ok()?;
        if !v.is_finite() {
            return None;
        }
        let mut buf = ryu_js::Buffer::new();
        (buf.format_finite(v).as_bytes() == t).then(|| Finite::new(v).ok())?
    }

    fn number_min(&mut self, min: f64) -> Option<Finite> {
        self.number().filter(|v| v.get() >= min)
    }

    /// A number strictly between 0 and 1.
    fn level(&mut self) -> Option<Finite> {
        self.number().filter(|v| v.get() > 0.0 && v.get() < 1.0)
    }

    fn opt_number(&mut self) -> Option<Option<Finite>> {
        if self.null() {
            Some(None)
        } else {
            self.number().map(Some)
        }
    }

    fn numbers(&mut self) -> Option<Vec<Finite>> {
        self.array(Self::number)
    }

    /// A non-negative integer in canonical spelling that a `u64` holds.
    fn u64(&mut self) -> Option<u64> {
        let b = self.b;
        let start = self.i;
        let mut i = start;
        let mut v: u64 = 0;
        match b.get(i)? {
            b'0' => i += 1,
            b'1'..=b'9' => {
                while let Some(d @ b'0'..=b'9') = b.get(i) {
                    v = v.checked_mul(10)?.checked_add(u64::from(d - b'0'))?;
                    i += 1;
                }
            }
            _ => return None,
        }
        if matches!(b.get(i), Some(b'.' | b'e' | b'E')) {
            return None;
        }
        self.i = i;
        if v > MAX_SAFE {
            // Canonical only when it is the double's own spelling.
            let mut buf = ryu_js::Buffer::new();
            if buf.format_finite(v as f64).as_bytes() != &b[start..i] {
                return None;
            }
        }
        Some(v)
    }

    fn u64_min1(&mut self) -> Option<u64> {
        self.u64().filter(|&v| v >= 1)
    }

    fn u32_min1(&mut self) -> Option<u32> {
        self.u64_min1().and_then(|v| u32::try_from(v).ok())
    }

    /// `[a,b,...]`, each element read by `f`.
    fn array<T>(&mut self, mut f: impl FnMut(&mut Self) -> Option<T>) -> Option<Vec<T>> {
        self.lit(b"[")?;
        let mut out = Vec::new();
        if self.peek()? == b']' {
            self.i += 1;
            return Some(out);
        }
        loop {
            out.push(f(self)?);
            match self.peek()? {
                b',' => self.i += 1,
                b']' => {
                    self.i += 1;
                    return Some(out);
                }
                _ => return None,
            }
        }
    }

    // ---- schema formats -------------------------------------------------

    fn digest(&mut self) -> Option<Sha256Digest> {
        self.string()?.parse().ok()
    }

    /// `^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]{1,9})?Z$`.
    fn timestamp(&mut self) -> Option<String> {
        let s = self.string()?;
        let b = s.as_bytes();
        let digits =
            |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
        let fixed = b.len() >= 20
            && digits(0..4)
            && b[4] == b'-'
            && digits(5..7)
            && b[7] == b'-'
            && digits(8..10)
            && b[10] == b'T'
            && digits(11..13)
            && b[13] == b':'
            && digits(14..16)
            && b[16] == b':'
            && digits(17..19);
        if !fixed {
            return None;
        }
        let tail = &b[19..];
        let ok = match tail {
            [b'Z'] => true,
            [b'.', frac @ .., b'Z'] => {
                (1..=9).contains(&frac.len()) && frac.iter().all(u8::is_ascii_digit)
            }
            _ => false,
        };
        ok.then(|| s.into_owned())
    }

    fn lane(&mut self) -> Option<LaneName> {
        // The type is stricter than the schema's pattern (no `..`), and
        // both must hold; the type's rules imply the pattern.
        LaneName::new(self.string()?.into_owned()).ok()
    }

    fn case_id(&mut self) -> Option<CaseId> {
        CaseId::new(self.string()?.into_owned()).ok()
    }

    fn direction(&mut self) -> Option<Direction> {
        match &*self.string()? {
            "lower_is_better" => Some(Direction::LowerIsBetter),
            "higher_is_better" => Some(Direction::HigherIsBetter),
            _ => None,
        }
    }

    // ---- the record -----------------------------------------------------

    fn record(&mut self) -> Option<ResultRecord> {
        self.first(b"baseline")?;
        let baseline = if self.null() {
            None
        } else {
            Some(self.baseline_ref()?)
        };
        self.next(b"benchmark_digest")?;
        let benchmark_digest = self.digest()?;
        self.next(b"case_counts")?;
        let case_counts = self.case_counts()?;
        self.next(b"cases")?;
        let cases = self.array(Self::case)?;
        let comparison = if self.lit(b",\"comparison\":").is_some() {
            Some(self.comparison()?)
        } else {
            None
        };
        self.next(b"environment")?;
        let environment = self.environment()?;
        self.next(b"executor")?;
        let executor = self.executor()?;
        self.next(b"finished_at")?;
        let finished_at = self.timestamp()?;
        self.next(b"lane")?;
        let lane = self.lane()?;
        self.next(b"manifest_digest")?;
        let manifest_digest = self.digest()?;
        self.next(b"publication")?;
        let publication = self.publication()?;
        self.next(b"runs")?;
        let runs = self.run_counts()?;
        self.next(b"schema")?;
        let schema = self.owned()?;
        // v1 forbids `comparison`; v2 and v3 require it, each with its
        // own members.
        match (schema.as_str(), &comparison) {
            (RESULT_SCHEMA, None) => {}
            (_, Some(c)) if comparison::fits(c, &schema) => {}
            _ => return None,
        }
        // v3 only, and only when the host skipped slots before this run.
        let skipped = if self.lit(b",\"skipped\":").is_some() {
            if schema != crate::record::RESULT_SCHEMA_V3 {
                return None;
            }
            Some(self.skipped_slots()?)
        } else {
            None
        };
        self.next(b"slot")?;
        let slot = self.timestamp()?;
        self.next(b"started_at")?;
        let started_at = self.timestamp()?;
        self.next(b"subject")?;
        let subject = self.subject()?;
        // v3 only, and only when the run was unscheduled.
        let unscheduled = if self.lit(b",\"unscheduled\":").is_some() {
            let why = self.nonempty()?;
            if schema != crate::record::RESULT_SCHEMA_V3
                || why.chars().count() > crate::record::MAX_UNSCHEDULED_CHARS
            {
                return None;
            }
            Some(why)
        } else {
            None
        };
        self.end()?;
        Some(ResultRecord {
            schema,
            lane,
            slot,
            subject,
            manifest_digest,
            benchmark_digest,
            environment,
            executor,
            started_at,
            finished_at,
            runs,
            cases,
            case_counts,
            baseline,
            publication,
            comparison,
            unscheduled,
            skipped,
        })
    }

    fn skipped_slots(&mut self) -> Option<crate::record::SkippedSlots> {
        self.first(b"catch_up")?;
        let catch_up = self.owned()?;
        crate::manifest::CatchUp::from_word(&catch_up)?;
        self.next(b"count")?;
        let count = self.u64_min1()?;
        self.next(b"first")?;
        let first = self.timestamp()?;
        self.next(b"last")?;
        let last = self.timestamp()?;
        self.end()?;
        Some(crate::record::SkippedSlots {
            catch_up,
            count,
            first,
            last,
        })
    }

    fn baseline_ref(&mut self) -> Option<BaselineRef> {
        self.first(b"lane")?;
        let lane = self.lane()?;
        self.next(b"record")?;
        let record = self.digest()?;
        self.next(b"slot")?;
        let slot = self.timestamp()?;
        self.end()?;
        Some(BaselineRef { record, lane, slot })
    }

    fn case_counts(&mut self) -> Option<CaseCounts> {
        self.first(b"drift")?;
        let drift = self.u64()?;
        self.next(b"error")?;
        let error = self.u64()?;
        self.next(b"pass")?;
        let pass = self.u64()?;
        self.next(b"skipped")?;
        let skipped = self.u64()?;
        self.next(b"total")?;
        let total = self.u64()?;
        self.end()?;
        Some(CaseCounts {
            total,
            pass,
            drift,
            skipped,
            error,
        })
    }

    fn run_counts(&mut self) -> Option<RunCounts> {
        self.first(b"failed")?;
        let failed = self.u64()?;
        self.next(b"incomplete")?;
        let incomplete = self.u64()?;
        self.next(b"missing")?;
        let missing = self.u64()?;
        self.next(b"scheduler_inconsistent")?;
        let scheduler_inconsistent = self.u64()?;
        self.next(b"stale")?;
        let stale = self.u64()?;
        self.next(b"succeeded")?;
        let succeeded = self.u64()?;
        self.next(b"total")?;
        let total = self.u64()?;
        self.end()?;
        Some(RunCounts {
            total,
            succeeded,
            failed,
            incomplete,
            missing,
            stale,
            scheduler_inconsistent,
        })
    }

    fn case(&mut self) -> Option<Case> {
        self.first(b"drift")?;
        let drift = if self.null() {
            None
        } else {
            Some(self.drift()?)
        };
        self.next(b"error")?;
        let error = if self.null() {
            None
        } else {
            self.first(b"kind")?;
            let kind = self.nonempty()?;
            self.next(b"message")?;
            let message = self.owned()?;
            self.end()?;
            Some(CaseError { kind, message })
        };
        self.next(b"id")?;
        let id = self.case_id()?;
        self.next(b"metrics")?;
        let metrics = self.array(Self::metric)?;
        self.next(b"outcome")?;
        let outcome = match &*self.string()? {
            "pass" => Outcome::Pass,
            "drift" => Outcome::Drift,
            "skipped" => Outcome::Skipped,
            "error" => Outcome::Error,
            _ => return None,
        };
        self.next(b"runs")?;
        let runs = self.run_counts()?;
        self.next(b"skip_reason")?;
        let skip_reason = if self.null() {
            None
        } else {
            Some(self.owned()?)
        };
        self.end()?;
        Some(Case {
            id,
            outcome,
            skip_reason,
            error,
            runs,
            metrics,
            drift,
        })
    }

    fn metric(&mut self) -> Option<Metric> {
        self.first(b"direction")?;
        let direction = self.direction()?;
        self.next(b"name")?;
        let name = self.nonempty()?;
        if name.chars().count() > 128 {
            return None;
        }
        self.next(b"samples")?;
        let samples = self.array(Self::opt_number)?;
        self.next(b"summary")?;
        let summary = if self.null() {
            None
        } else {
            Some(self.summary()?)
        };
        self.next(b"unit")?;
        let unit = self.owned()?;
        if unit.chars().count() > 32 {
            return None;
        }
        self.end()?;
        Some(Metric {
            name,
            unit,
            direction,
            samples,
            summary,
        })
    }

    fn summary(&mut self) -> Option<Summary> {
        self.first(b"ci")?;
        let ci = if self.null() {
            None
        } else {
            self.first(b"high")?;
            let high = self.number()?;
            self.next(b"level")?;
            let level = self.level()?;
            self.next(b"low")?;
            let low = self.number()?;
            self.next(b"method")?;
            let method = self.nonempty()?;
            self.next(b"resamples")?;
            let resamples = self.u64_min1()?;
            self.next(b"seed")?;
            let seed = self.u64()?;
            self.end()?;
            Some(ConfidenceInterval {
                level,
                low,
                high,
                method,
                resamples,
                seed,
            })
        };
        self.next(b"mad")?;
        let mad = self.number_min(0.0)?;
        self.next(b"max")?;
        let max = self.number()?;
        self.next(b"median")?;
        let median = self.number()?;
        self.next(b"min")?;
        let min = self.number()?;
        self.next(b"n")?;
        let n = self.u64_min1()?;
        self.end()?;
        Some(Summary {
            n,
            median,
            mad,
            min,
            max,
            ci,
        })
    }

    fn drift(&mut self) -> Option<DriftEvidence> {
        self.first(b"baseline")?;
        self.first(b"median")?;
        let median = self.number()?;
        self.next(b"record")?;
        let record = self.digest()?;
        self.end()?;
        self.next(b"confirmation_samples")?;
        let confirmation_samples = self.numbers()?;
        self.next(b"initial_samples")?;
        let initial_samples = self.numbers()?;
        if initial_samples.is_empty() {
            return None;
        }
        self.next(b"metric")?;
        let metric = self.nonempty()?;
        self.next(b"statistic")?;
        let statistic = self.number()?;
        self.next(b"test")?;
        let test = self.nonempty()?;
        self.next(b"threshold")?;
        let threshold = self.number()?;
        self.next(b"verdict")?;
        let verdict = match &*self.string()? {
            "confirmed" => Verdict::Confirmed,
            "not_confirmed" => Verdict::NotConfirmed,
            _ => return None,
        };
        self.end()?;
        Some(DriftEvidence {
            metric,
            baseline: BaselineMetric { record, median },
            initial_samples,
            confirmation_samples,
            test,
            threshold,
            statistic,
            verdict,
        })
    }

    fn environment(&mut self) -> Option<Environment> {
        self.first(b"facts")?;
        let mut facts = BTreeMap::new();
        self.lit(b"{")?;
        if self.peek()? == b'}' {
            self.i += 1;
        } else {
            let mut previous: Option<String> = None;
            loop {
                let key = self.owned()?;
                // Strictly increasing: sorted and no name twice.
                if previous
                    .as_deref()
                    .is_some_and(|p| crate::jcs::cmp_utf16(p, &key) != std::cmp::Ordering::Less)
                {
                    return None;
                }
                self.lit(b":")?;
                let value = self.owned()?;
                facts.insert(key.clone(), value);
                previous = Some(key);
                match self.peek()? {
                    b',' => self.i += 1,
                    b'}' => {
                        self.i += 1;
                        break;
                    }
                    _ => return None,
                }
            }
        }
        self.next(b"fingerprint")?;
        let fingerprint = self.digest()?;
        self.end()?;
        Some(Environment { fingerprint, facts })
    }

    fn executor(&mut self) -> Option<Executor> {
        self.lit(b"{\"")?;
        if self.lit(b"host\":").is_some() {
            let host = self.nonempty()?;
            self.next(b"kind")?;
            self.lit(b"\"local\"}")?;
            return Some(Executor::Local { host });
        }
        self.lit(b"cluster\":")?;
        let cluster = self.nonempty()?;
        self.next(b"job_ids")?;
        let job_ids = self.array(|p| {
            let id = p.owned()?;
            (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit())).then_some(id)
        })?;
        if job_ids.is_empty() {
            return None;
        }
        self.next(b"kind")?;
        self.lit(b"\"slurm\"}")?;
        Some(Executor::Slurm { cluster, job_ids })
    }

    fn publication(&mut self) -> Option<PublicationPlan> {
        self.first(b"baseline_proposal")?;
        let baseline_proposal = if self.null() {
            None
        } else {
            self.first(b"lane")?;
            let lane = self.lane()?;
            self.next(b"reason")?;
            let reason = self.nonempty()?;
            self.end()?;
            Some(BaselineProposal { lane, reason })
        };
        self.next(b"cleared")?;
        let cleared = self.array(Self::case_id)?;
        // `uniqueItems`.
        let mut sorted: Vec<&CaseId> = cleared.iter().collect();
        sorted.sort_unstable();
        if sorted.windows(2).any(|w| w[0] == w[1]) {
            return None;
        }
        self.next(b"drift_reports")?;
        let drift_reports = self.array(|p| {
            p.first(b"case")?;
            let case = p.case_id()?;
            p.next(b"metric")?;
            let metric = p.nonempty()?;
            p.next(b"summary")?;
            let summary = p.owned()?;
            p.end()?;
            Some(DriftReport {
                case,
                metric,
                summary,
            })
        })?;
        self.end()?;
        Some(PublicationPlan {
            drift_reports,
            cleared,
            baseline_proposal,
        })
    }

    /// `^([0-9a-f]{40}|[0-9a-f]{64})$`: a commit id.
    fn commit(&mut self) -> Option<String> {
        let commit = self.owned()?;
        let hex = commit
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        (hex && matches!(commit.len(), 40 | 64)).then_some(commit)
    }

    fn subject(&mut self) -> Option<Subject> {
        self.first(b"commit")?;
        let commit = self.commit()?;
        self.next(b"repository")?;
        let repository = self.owned()?;
        let part = |s: &str| {
            !s.is_empty()
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
        };
        match repository.split_once('/') {
            Some((owner, name)) if part(owner) && part(name) => {}
            _ => return None,
        }
        self.end()?;
        Some(Subject { repository, commit })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The value of `t` when it is one whole canonical number.
    fn number(t: &str) -> Option<f64> {
        let mut p = Pass {
            b: t.as_bytes(),
            i: 0,
        };
        let v = p.number()?;
        (p.i == t.len()).then_some(v.get())
    }

    #[test]
    fn numbers_must_have_their_ecmascript_spelling() {
        assert_eq!(number("1e+21"), Some(1e21));
        assert_eq!(number("1e-7"), Some(1e-7));
        assert_eq!(number("0.0025509999999999977"), Some(0.0025509999999999977));
        for bad in [
            "1E+21",
            "1e21",
            "1.0",
            "-0",
            "0.10",
            "01",
            "1e400",
            "1.",
            ".5",
            "+1",
            "1e-07",
            "100000000000000000000000",
            // 2^64 and 2^65: digits whose value wraps to 0 in 64 bits.
            "18446744073709551616",
            "36893488147419103232",
        ] {
            assert_eq!(number(bad), None, "{bad}");
        }
    }

    /// The reference: canonical exactly when formatting the standard
    /// library's conversion gives the token back.
    fn reference(t: &str) -> Option<f64> {
        let json_grammar = serde_json::from_str::<serde_json::Value>(t)
            .ok()
            .is_some_and(|v| v.is_number());
        let v: f64 = t.parse().ok()?;
        let mut buf = ryu_js::Buffer::new();
        (json_grammar && v.is_finite() && buf.format_finite(v) == t).then_some(v + 0.0)
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        #[test]
        fn every_double_reads_back_from_its_canonical_spelling(bits: u64) {
            let v = f64::from_bits(bits);
            if v.is_finite() {
                let mut buf = ryu_js::Buffer::new();
                let t = buf.format_finite(v).to_owned();
                proptest::prop_assert_eq!(number(&t).map(f64::to_bits), Some((v + 0.0).to_bits()), "{}", t);
            }
        }

        #[test]
        fn decimal_spellings_agree_with_the_reference(
            neg: bool,
            int in "(0|[1-9][0-9]{0,20})",
            frac in proptest::option::of("[0-9]{1,22}"),
            exp in proptest::option::of("[eE][+-]?[0-9]{1,3}"),
        ) {
            let t = format!(
                "{}{int}{}{}",
                if neg { "-" } else { "" },
                frac.map(|f| format!(".{f}")).unwrap_or_default(),
                exp.unwrap_or_default()
            );
            proptest::prop_assert_eq!(number(&t).map(f64::to_bits), reference(&t).map(f64::to_bits), "{}", t);
        }
    }

    fn string(t: &str) -> Option<String> {
        Pass {
            b: t.as_bytes(),
            i: 0,
        }
        .string()
        .map(Cow::into_owned)
    }

    #[test]
    fn strings_must_have_their_canonical_escapes() {
        assert_eq!(
            string(r#""a\"b\\c\n\u001f""#).as_deref(),
            Some("a\"b\\c\n\u{1f}")
        );
        assert_eq!(
            string("\"\u{e9}\u{2028}\u{7f}\"").as_deref(),
            Some("\u{e9}\u{2028}\u{7f}")
        );
        for bad in [
            r#""\u000a""#,
            r#""\u001F""#,
            r#""\/""#,
            r#""\u0041""#,
            "\"a\nb\"",
            r#""\u00e9""#,
            "\"open",
        ] {
            assert_eq!(string(bad), None, "{bad}");
        }
    }

    #[test]
    fn large_integers_must_be_the_doubles_spelling() {
        let u = |t: &str| {
            Pass {
                b: t.as_bytes(),
                i: 0,
            }
            .u64()
        };
        assert_eq!(u("9007199254740992"), Some(1 << 53));
        assert_eq!(u("9007199254740993"), None);
        assert_eq!(u("18014398509481984"), Some(1 << 54));
        assert_eq!(u("18446744073709552000"), None); // beyond u64
        assert_eq!(u("5.0"), None);
        assert_eq!(u("-1"), None);
    }
}
