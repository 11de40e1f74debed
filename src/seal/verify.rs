//! Verifying sealed bytes: the one pass that proves a valid record
//! ([`crate::onepass`]), and the reporting path that names every problem of
//! one that is not.

use crate::digest::Sha256Digest;
use crate::excerpt::quote;
use crate::path::{JsonPath, Segment};
use crate::record::{RESULT_SCHEMA, ResultRecord};
use crate::scan;
use crate::schema::{Contract, MAX_VIOLATIONS, sort_violations, split_schema_tag};

use super::{
    IssueKind, MAX_SEMANTIC_ISSUES, SealedRecord, VerifyError, VerifyIssue, duplicate_issue,
    semantic_issues,
};

/// Verifies sealed bytes: canonical form, digest (when `expected` is given),
/// schema, and semantic invariants. Reports every problem found.
///
/// A valid record is checked in one pass over its bytes that checks the
/// canonical form, decodes the typed record and enforces the schema's
/// constraints ([`crate::onepass`]), then its digest and semantic
/// invariants. Anything that pass cannot vouch for goes to
/// [`verify_reported`], which decides and names every problem. Memory stays
/// within a small multiple of `bytes.len()` on both paths: neither builds a
/// tree of the whole document.
pub fn verify(bytes: &[u8], expected: Option<&Sha256Digest>) -> Result<SealedRecord, VerifyError> {
    match proven(bytes, expected) {
        Some((record, digest)) => Ok(SealedRecord {
            bytes: bytes.to_vec(),
            digest,
            record,
        }),
        None => verify_reported(bytes, expected),
    }
}

/// [`verify`] of bytes the caller owns: a valid record keeps `bytes` as
/// its canonical bytes instead of a copy (reading history back verifies
/// hundreds of megabytes this way).
pub fn verify_owned(
    bytes: Vec<u8>,
    expected: Option<&Sha256Digest>,
) -> Result<SealedRecord, VerifyError> {
    match proven(&bytes, expected) {
        Some((record, digest)) => Ok(SealedRecord {
            bytes,
            digest,
            record,
        }),
        None => verify_reported(&bytes, expected),
    }
}

/// The record and digest when the one pass proves `bytes` valid (with the
/// expected digest and no semantic issue); `None`: the reporting path decides.
fn proven(bytes: &[u8], expected: Option<&Sha256Digest>) -> Option<(ResultRecord, Sha256Digest)> {
    let record = crate::onepass::decode(bytes)?;
    let digest = Sha256Digest::of(bytes);
    (expected.is_none_or(|e| *e == digest) && semantic_issues(&record).is_empty())
        .then_some((record, digest))
}

/// [`verify`] without the one pass: the streaming scan, `jsonschema`, the
/// typed decoder and the semantic checks, reporting every problem found.
/// Its verdict is the reference the one pass is tested against.
pub fn verify_reported(
    bytes: &[u8],
    expected: Option<&Sha256Digest>,
) -> Result<SealedRecord, VerifyError> {
    let fail = |issues| Err(VerifyError { issues });
    let issue = |kind, path, reason: String| VerifyIssue { kind, path, reason };

    let scan = match scan::scan(bytes) {
        Ok(s) => s,
        Err(e) => {
            return fail(vec![issue(
                IssueKind::MalformedJson,
                JsonPath::root(),
                e.to_string(),
            )]);
        }
    };
    let mut issues = Vec::new();
    if let Some((path, key)) = &scan.duplicate {
        issues.push(duplicate_issue(path.clone(), key));
    } else if let Err(nc) = scan.canonical.as_ref() {
        issues.push(issue(
            IssueKind::NotCanonical,
            nc.path.clone(),
            format!(
                "{} (byte {}): expected `{}`, found `{}`",
                nc.hint, nc.offset, nc.expected, nc.found
            ),
        ));
    }
    let digest = Sha256Digest::of(bytes);
    if let Some(expected) = expected
        && *expected != digest
    {
        issues.push(issue(
            IssueKind::DigestMismatch,
            JsonPath::root(),
            format!("content hashes to {digest}, but {expected} was expected"),
        ));
    }
    // The whole-document schema follows the version; the bulk elements
    // (cases, metrics, samples) have one schema in every version.
    let mut contract = Contract::BenchmarkResultV1;
    match scan.schema_tag.as_deref().and_then(split_schema_tag) {
        Some(("benchmark-result", "1")) => {}
        Some(("benchmark-result", "2")) => contract = Contract::BenchmarkResultV2,
        Some(("benchmark-result", "3")) => contract = Contract::BenchmarkResultV3,
        Some(("benchmark-result", v)) => {
            issues.push(issue(
                IssueKind::UnknownSchemaVersion,
                JsonPath::root().key("schema"),
                format!(
                    "benchmark-result/v{v} is not known to this build (it reads v1, v2 and v3)"
                ),
            ));
            return fail(issues);
        }
        Some(_) => {
            let tag = scan.schema_tag.as_deref().unwrap_or_default();
            issues.push(issue(
                IssueKind::Schema,
                JsonPath::root().key("schema"),
                format!("document is {}, not {RESULT_SCHEMA}", quote(tag)),
            ));
            return fail(issues);
        }
        None => {} // the schema's `const` reports it
    }
    if scan.duplicate.is_some() {
        // Which of the two members is meant cannot be told.
        return fail(issues);
    }
    let Some(skeleton) = scan.skeleton else {
        let at = scan.too_large.unwrap_or_default();
        issues.push(issue(
            IssueKind::Schema,
            at,
            format!(
                "too large to check: holding the values from here on would take more than {} times the record's size plus {} MiB of memory",
                scan::BUDGET_FACTOR,
                scan::BUDGET_BASE >> 20
            ),
        ));
        return fail(issues);
    };
    let capped = scan.capped;
    let mut violations = scan.element_violations;
    if let Err(found) = contract.validate(&skeleton) {
        violations.extend(found);
    }
    drop(skeleton);
    if !violations.is_empty() {
        sort_violations(&mut violations);
        let listed = violations.len().min(MAX_VIOLATIONS);
        let more = capped || violations.len() > MAX_VIOLATIONS;
        violations.truncate(listed);
        issues.extend(
            violations
                .into_iter()
                .map(|v| issue(IssueKind::Schema, v.path, v.reason)),
        );
        if more {
            issues.push(issue(
                IssueKind::Schema,
                JsonPath::root(),
                format!(
                    "only the first {MAX_VIOLATIONS} schema violations are listed; checking stopped there"
                ),
            ));
        }
        return fail(issues);
    }
    // Non-canonical spellings (`5.0` for `5`) are reported above; decode the
    // normal form so the remaining checks still run on what the bytes mean.
    let normal;
    let source = if scan.canonical.is_ok() {
        bytes
    } else {
        match scan::normalized(bytes) {
            Ok(n) => {
                normal = n;
                &normal[..]
            }
            Err(_) => bytes,
        }
    };
    let record = match decode(source) {
        Ok(r) => r,
        Err(e) => {
            issues.push(e);
            return fail(issues);
        }
    };
    let mut semantic = semantic_issues(&record);
    if semantic.len() > MAX_SEMANTIC_ISSUES {
        let total = semantic.len();
        semantic.truncate(MAX_SEMANTIC_ISSUES);
        semantic.push(VerifyIssue {
            kind: IssueKind::Semantic,
            path: JsonPath::root(),
            reason: format!(
                "only the first {MAX_SEMANTIC_ISSUES} of {total} semantic problems are listed"
            ),
        });
    }
    issues.extend(semantic);
    if issues.is_empty() {
        Ok(SealedRecord {
            bytes: bytes.to_vec(),
            digest,
            record,
        })
    } else {
        fail(issues)
    }
}

/// Decodes the typed record straight from JSON text; an error names the
/// JSON path of the value the decoder refused.
fn decode(source: &[u8]) -> Result<ResultRecord, VerifyIssue> {
    let mut de = serde_json::Deserializer::from_slice(source);
    serde_path_to_error::deserialize::<_, ResultRecord>(&mut de).map_err(|e| {
        let mut path = JsonPath::root();
        for s in e.path().iter() {
            match s {
                serde_path_to_error::Segment::Seq { index } => path.push(Segment::Index(*index)),
                serde_path_to_error::Segment::Map { key } => path.push(Segment::Key(key.clone())),
                serde_path_to_error::Segment::Enum { .. }
                | serde_path_to_error::Segment::Unknown => {}
            }
        }
        let msg = e.inner().to_string();
        let msg = match msg.rfind(" at line ") {
            Some(i) => &msg[..i],
            None => &msg[..],
        };
        VerifyIssue {
            kind: IssueKind::Schema,
            path,
            reason: crate::excerpt::bytes_prefix(msg.as_bytes(), 200),
        }
    })
}
