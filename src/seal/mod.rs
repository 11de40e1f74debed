//! Sealing and verification of `benchmark-result` records.
//!
//! A sealed record is the RFC 8785 canonical bytes of the document; its
//! identity is the SHA-256 of exactly those bytes. [`verify`](fn@verify) re-checks all of
//! it and reports every problem it can find, each with a JSON path.
//!
//! One concern a file: sealing a record or a draft (here); the problem
//! report (`report`: kinds, issues, errors); verifying bytes (`verify`: the
//! one pass and the reporting path); and the semantic rules that the schema
//! cannot express (`semantic`, and `comparison` for a v2 record's
//! comparison).

use serde_json::Value;

use crate::digest::Sha256Digest;
use crate::excerpt::quote;
use crate::path::{JsonPath, Segment};
use crate::record::ResultRecord;
use crate::{jcs, scan};

mod comparison;
mod report;
mod semantic;
mod verify;

pub use report::{IssueKind, SealError, VerifyError, VerifyIssue};
pub use semantic::{MAX_SEMANTIC_ISSUES, semantic_issues};
pub use verify::{verify, verify_owned, verify_reported};

/// Canonical bytes, their digest, and the record they hold.
#[derive(Debug, Clone, PartialEq)]
pub struct SealedRecord {
    bytes: Vec<u8>,
    digest: Sha256Digest,
    record: ResultRecord,
}

impl SealedRecord {
    /// The canonical bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// The content address.
    pub fn digest(&self) -> Sha256Digest {
        self.digest
    }

    /// The record.
    pub fn record(&self) -> &ResultRecord {
        &self.record
    }

    /// The file name a sealed record is stored under: `<hex>.json`.
    pub fn file_name(&self) -> String {
        format!("{}.json", self.digest.hex())
    }
}

/// Seals a record: canonical bytes plus digest, after checking the schema and
/// the semantic invariants.
pub fn seal(record: &ResultRecord) -> Result<SealedRecord, SealError> {
    let value = serde_json::to_value(record).map_err(jcs::SerializeError::from)?;
    // Canonical numbers are doubles: an integer above 2^53 would be sealed
    // as a different value. Refuse rather than record something else.
    if let Some(first) = lossy_integers(&value).into_iter().next() {
        return Err(SealError::Lossy {
            path: first.path,
            reason: first.reason,
        });
    }
    let bytes = jcs::canonical_bytes(&value);
    drop(value);
    let sealed = verify(&bytes, None)?;
    if sealed.record != *record {
        return Err(SealError::Lossy {
            path: JsonPath::root(),
            reason: "the sealed bytes decode to a different record".into(),
        });
    }
    Ok(sealed)
}

/// Seals a draft given as JSON text in any formatting. Refuses a draft that
/// names a member twice, or that holds an integer canonical JSON would
/// round (ADR 0001), naming its path.
pub fn seal_json(draft: &[u8]) -> Result<SealedRecord, VerifyError> {
    let malformed = |e: jcs::ParseError| VerifyError {
        issues: vec![VerifyIssue {
            kind: IssueKind::MalformedJson,
            path: JsonPath::root(),
            reason: e.to_string(),
        }],
    };
    if let Some((path, key)) = scan::scan(draft).map_err(malformed)?.duplicate {
        return Err(VerifyError {
            issues: vec![duplicate_issue(path, &key)],
        });
    }
    let value = jcs::parse(draft).map_err(malformed)?;
    // Read from the text: the parsed value already holds the rounded
    // double, whatever the draft's spelling (`…993.0`, `…993e0`).
    let lossy: Vec<VerifyIssue> = crate::spelling::lossy_integers(draft, MAX_LOSSY)
        .into_iter()
        .map(|l| VerifyIssue {
            kind: IssueKind::LossyNumber,
            path: l.path,
            reason: format!(
                "integer {} is above 2^53 and would be sealed as {}; canonical JSON numbers are doubles",
                crate::excerpt::bytes_prefix(l.token.as_bytes(), 64),
                l.canonical
            ),
        })
        .collect();
    if !lossy.is_empty() {
        return Err(VerifyError { issues: lossy });
    }
    let bytes = jcs::canonical_bytes(&value);
    drop(value);
    verify(&bytes, None)
}

pub(super) fn duplicate_issue(path: JsonPath, key: &str) -> VerifyIssue {
    VerifyIssue {
        kind: IssueKind::DuplicateMember,
        path,
        reason: format!(
            "duplicate member {}; a member may appear only once",
            quote(key)
        ),
    }
}

/// The most lossy integers [`lossy_integers`] lists.
const MAX_LOSSY: usize = 16;

/// Integers in `value` that canonical JSON would write as another number:
/// magnitude above 2^53 and no double equal to them.
fn lossy_integers(value: &Value) -> Vec<VerifyIssue> {
    fn walk(v: &Value, path: &mut Vec<Segment>, out: &mut Vec<VerifyIssue>) {
        if out.len() >= MAX_LOSSY {
            return;
        }
        match v {
            Value::Number(n) => {
                // Compared in a wider type: `u64::MAX as f64` is 2^64,
                // which would saturate back to u64::MAX.
                let lossy = match (n.as_u64(), n.as_i64()) {
                    (Some(u), _) => (u as f64) as u128 != u128::from(u),
                    (_, Some(i)) => (i as f64) as i128 != i128::from(i),
                    _ => false,
                };
                if lossy {
                    let rounded = jcs::canonical_bytes(v);
                    let mut p = JsonPath::root();
                    for s in path.iter() {
                        p.push(s.clone());
                    }
                    out.push(VerifyIssue {
                        kind: IssueKind::LossyNumber,
                        path: p,
                        reason: format!(
                            "integer {n} is above 2^53 and would be sealed as {}; canonical JSON numbers are doubles",
                            String::from_utf8_lossy(&rounded)
                        ),
                    });
                }
            }
            Value::Array(items) => {
                for (i, item) in items.iter().enumerate() {
                    path.push(Segment::Index(i));
                    walk(item, path, out);
                    path.pop();
                }
            }
            Value::Object(map) => {
                for (k, item) in map {
                    path.push(Segment::Key(k.clone()));
                    walk(item, path, out);
                    path.pop();
                }
            }
            Value::Null | Value::Bool(_) | Value::String(_) => {}
        }
    }
    let mut out = Vec::new();
    walk(value, &mut Vec::new(), &mut out);
    out
}

/// Parses the RFC 3339 UTC timestamps the contracts use into a comparable
/// pair (seconds since the Unix epoch, nanoseconds); see [`crate::time`].
pub(crate) fn parse_utc(s: &str) -> Option<(i64, u32)> {
    crate::time::Utc::parse(s)
        .ok()
        .map(|t| (t.unix_seconds(), t.subsec_nanos()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn example() -> ResultRecord {
        let draft = include_bytes!("../../examples/result.draft.json");
        seal_json(draft).expect("example is valid").record().clone()
    }

    #[test]
    fn sealing_is_deterministic_and_verifiable() {
        let r = example();
        let a = seal(&r).expect("seals");
        let b = seal(&r).expect("seals");
        assert_eq!(a.bytes(), b.bytes());
        assert_eq!(
            verify(a.bytes(), Some(&a.digest()))
                .expect("verifies")
                .record(),
            &r
        );
    }

    #[test]
    fn lossy_integers_are_those_no_double_equals() {
        let v = serde_json::json!({
            "exact": [1u64 << 53, 1u64 << 63, -(1i64 << 60), 0],
            "lossy": [(1u64 << 53) + 1, u64::MAX, i64::MIN + 1],
        });
        let found: Vec<String> = lossy_integers(&v)
            .iter()
            .map(|i| i.path.to_string())
            .collect();
        assert_eq!(found, ["$.lossy[0]", "$.lossy[1]", "$.lossy[2]"]);
    }

    #[test]
    fn integers_beyond_two_to_the_53_are_refused_not_rounded() {
        let mut r = example();
        let summary = r.cases[0].metrics[0].summary.as_mut().expect("summary");
        summary.ci = Some(crate::record::ConfidenceInterval {
            level: crate::Finite::new(0.95).expect("finite"),
            low: summary.min,
            high: summary.max,
            method: "bootstrap-percentile".into(),
            resamples: 1000,
            seed: (1u64 << 53) + 1,
        });
        match seal(&r) {
            Err(SealError::Lossy { path, reason }) => {
                assert_eq!(path.to_string(), "$.cases[0].metrics[0].summary.ci.seed");
                assert!(reason.contains("9007199254740993"), "{reason}");
            }
            other => panic!("not refused as lossy: {other:?}"),
        }
        r.cases[0].metrics[0]
            .summary
            .as_mut()
            .expect("summary")
            .ci
            .as_mut()
            .expect("ci")
            .seed = 1 << 53;
        seal(&r).expect("2^53 itself is exact");
    }
}
