//! Sealing and verification of `benchmark-result/v1` records.
//!
//! A sealed record is the RFC 8785 canonical bytes of the document; its
//! identity is the SHA-256 of exactly those bytes. [`verify`] re-checks all of
//! it and reports every problem it can find, each with a JSON path.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde_json::Value;

use crate::digest::Sha256Digest;
use crate::excerpt::quote;
use crate::path::{JsonPath, Segment};
use crate::record::{CaseCounts, Outcome, RESULT_SCHEMA, ResultRecord, RunCounts, Verdict};
use crate::schema::{Contract, MAX_VIOLATIONS, sort_violations, split_schema_tag};
use crate::{jcs, scan};

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

/// The class of a verification problem. Each class has its own message and
/// lets callers tell tampering apart from a bad draft.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IssueKind {
    /// Not JSON at all.
    MalformedJson,
    /// JSON, but not the canonical bytes of what it holds.
    NotCanonical,
    /// The bytes do not hash to the expected address.
    DigestMismatch,
    /// A `benchmark-result` version this build does not know.
    UnknownSchemaVersion,
    /// A JSON Schema violation.
    Schema,
    /// A violated semantic invariant (counts, reasons, evidence, plan).
    Semantic,
    /// An object names the same member twice.
    DuplicateMember,
    /// A draft holds an integer that canonical JSON cannot carry exactly
    /// (above 2^53 in magnitude and not a double).
    LossyNumber,
}

impl IssueKind {
    /// A stable short name (`not-canonical`), used in `--json` output.
    pub fn as_str(self) -> &'static str {
        match self {
            IssueKind::MalformedJson => "malformed-json",
            IssueKind::NotCanonical => "not-canonical",
            IssueKind::DigestMismatch => "digest-mismatch",
            IssueKind::UnknownSchemaVersion => "unknown-schema-version",
            IssueKind::Schema => "schema",
            IssueKind::Semantic => "semantic",
            IssueKind::DuplicateMember => "duplicate-member",
            IssueKind::LossyNumber => "lossy-number",
        }
    }
}

impl fmt::Display for IssueKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One verification problem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyIssue {
    /// Its class.
    pub kind: IssueKind,
    /// Where in the document.
    pub path: JsonPath,
    /// Why.
    pub reason: String,
}

impl fmt::Display for VerifyIssue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} at {}: {}", self.kind, self.path, self.reason)
    }
}

/// Every problem [`verify`] found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{} problem(s); first: {}", .issues.len(), .issues.first().map(ToString::to_string).unwrap_or_default())]
pub struct VerifyError {
    /// The problems, in the order they were found (never empty).
    pub issues: Vec<VerifyIssue>,
}

impl VerifyError {
    /// Whether any problem is of class `kind`.
    pub fn has(&self, kind: IssueKind) -> bool {
        self.issues.iter().any(|i| i.kind == kind)
    }
}

/// Why a draft could not be sealed.
#[derive(Debug, thiserror::Error)]
pub enum SealError {
    /// The draft holds a value with no canonical form.
    #[error("failed to canonicalize the draft")]
    Canonicalize(#[from] jcs::SerializeError),
    /// The draft violates the contract.
    #[error("draft is not a valid benchmark-result/v1 record")]
    Invalid(#[from] VerifyError),
    /// The record holds a value canonical JSON cannot carry exactly (an
    /// integer above 2^53).
    #[error("record does not survive canonicalization unchanged at {path}: {reason}")]
    Lossy {
        /// Where the first such value is (`$` when it cannot be told).
        path: JsonPath,
        /// What is wrong with it.
        reason: String,
    },
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

fn duplicate_issue(path: JsonPath, key: &str) -> VerifyIssue {
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
        Some(("benchmark-result", v)) => {
            issues.push(issue(
                IssueKind::UnknownSchemaVersion,
                JsonPath::root().key("schema"),
                format!("benchmark-result/v{v} is not known to this build (it reads v1 and v2)"),
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

/// The most semantic problems [`verify`] lists for one record; the rest are
/// counted in one last issue, so a small hostile record cannot make reports
/// and receipts many times its size.
pub const MAX_SEMANTIC_ISSUES: usize = 100;

/// The semantic invariants of a record that the schema cannot express.
pub fn semantic_issues(r: &ResultRecord) -> Vec<VerifyIssue> {
    let mut out = Vec::new();
    let mut push = |path: JsonPath, reason: String| {
        out.push(VerifyIssue {
            kind: IssueKind::Semantic,
            path,
            reason,
        });
    };
    let root = JsonPath::root();

    check_runs(&r.runs, || root.key("runs"), &mut push);
    let mut case_runs = RunCounts::default();
    let mut seen = BTreeSet::new();
    let mut by_id = BTreeMap::new();
    // One buffer for every metric's samples.
    let mut buffer = Vec::new();
    for (i, case) in r.cases.iter().enumerate() {
        // Paths are built only for a problem found.
        let p = || root.key("cases").index(i);
        if !seen.insert(&case.id) {
            push(
                p().key("id"),
                format!("case id {} appears more than once", quote(case.id.as_str())),
            );
        }
        by_id.insert(&case.id, case);
        check_runs(&case.runs, || p().key("runs"), &mut push);
        case_runs.add(&case.runs);

        match (&case.outcome, &case.skip_reason) {
            (Outcome::Skipped, None) => {
                push(
                    p().key("skip_reason"),
                    "a skipped case must say why it was skipped".into(),
                );
            }
            (Outcome::Skipped, Some(reason)) if reason.trim().is_empty() => {
                push(
                    p().key("skip_reason"),
                    "skip_reason must not be blank".into(),
                );
            }
            (Outcome::Skipped, Some(_)) | (_, None) => {}
            (o, Some(_)) => push(
                p().key("skip_reason"),
                format!("only skipped cases carry a skip_reason; this case is {o:?}")
                    .to_lowercase(),
            ),
        }
        match (case.outcome, &case.error) {
            (Outcome::Error, None) => {
                push(
                    p().key("error"),
                    "a case in error must carry error detail".into(),
                );
            }
            (Outcome::Error, Some(_)) | (_, None) => {}
            (_, Some(_)) => push(
                p().key("error"),
                "only cases in error carry error detail".into(),
            ),
        }
        match (case.outcome, &case.drift) {
            // v2 keeps drift evidence in `comparison`, checked below.
            (_, None) if r.is_v2() => {}
            (_, Some(_)) if r.is_v2() => push(
                p().key("drift"),
                "a v2 record keeps drift evidence in `comparison`; `drift` must be null".into(),
            ),
            (Outcome::Drift, None) => {
                push(
                    p().key("drift"),
                    "a drift case must carry its drift evidence".into(),
                );
            }
            (Outcome::Drift, Some(d)) => {
                if d.verdict != Verdict::Confirmed {
                    push(
                        p().key("drift").key("verdict"),
                        "a drift outcome needs a confirmed verdict".into(),
                    );
                }
                if d.confirmation_samples.is_empty() {
                    push(
                        p().key("drift").key("confirmation_samples"),
                        "a confirmed drift needs confirmation samples from a re-run".into(),
                    );
                }
            }
            (Outcome::Pass, Some(d)) if d.verdict == Verdict::Confirmed => push(
                p().key("drift").key("verdict"),
                "a passing case cannot carry a confirmed drift verdict".into(),
            ),
            (Outcome::Pass, _) => {}
            (_, Some(_)) => push(
                p().key("drift"),
                "only measured cases (pass or drift) carry drift evidence".into(),
            ),
            (_, None) => {}
        }
        if let Some(d) = &case.drift
            && !case.metrics.iter().any(|m| m.name == d.metric)
        {
            push(
                p().key("drift").key("metric"),
                format!(
                    "drift metric {} is not among the case's metrics",
                    quote(&d.metric)
                ),
            );
        }
        // A skipped case has no child runs, unless its command ran, succeeded
        // every time, and measured none of its own metrics (it said why).
        if matches!(case.outcome, Outcome::Skipped) && case.runs.total != 0 {
            let own: Vec<_> = case
                .metrics
                .iter()
                .filter(|m| !crate::analysis::BUILTIN_METRICS.contains(&m.name.as_str()))
                .collect();
            let skipped_by_command = case.runs.succeeded == case.runs.total
                && !own.is_empty()
                && own.iter().all(|m| m.samples.iter().all(Option::is_none));
            if !skipped_by_command {
                push(
                    p().key("runs").key("total"),
                    "a skipped case has no child runs, or only succeeded runs whose command measured none of its own metrics".into(),
                );
            }
        }
        let mut names = BTreeSet::new();
        for (j, m) in case.metrics.iter().enumerate() {
            let mp = || p().key("metrics").index(j);
            if !names.insert(&m.name) {
                push(
                    mp().key("name"),
                    format!("metric {} appears more than once", quote(&m.name)),
                );
            }
            check_summary(m, mp, &mut buffer, &mut push);
        }
    }
    if case_runs != r.runs {
        push(
            root.key("runs"),
            format!(
                "record-level run counts must equal the sum over cases (cases sum to total {}, succeeded {}, failed {})",
                case_runs.total, case_runs.succeeded, case_runs.failed
            ),
        );
    }
    let counts = CaseCounts::of(&r.cases);
    if counts != r.case_counts {
        push(
            root.key("case_counts"),
            format!(
                "counts do not add up: cases hold total {}, pass {}, drift {}, skipped {}, error {}",
                counts.total, counts.pass, counts.drift, counts.skipped, counts.error
            ),
        );
    }
    if crate::record::fingerprint_of(&r.environment.facts) != r.environment.fingerprint {
        push(
            root.key("environment").key("fingerprint"),
            "fingerprint is not the digest of the canonical facts".into(),
        );
    }
    for (field, value) in [
        ("slot", &r.slot),
        ("started_at", &r.started_at),
        ("finished_at", &r.finished_at),
    ] {
        if let Err(e) = crate::time::Utc::parse(value) {
            push(
                root.key(field),
                format!("not a valid instant: {}", e.reason),
            );
        }
    }
    match (parse_utc(&r.started_at), parse_utc(&r.finished_at)) {
        (Some(s), Some(f)) if f < s => {
            push(
                root.key("finished_at"),
                "finished_at is earlier than started_at".into(),
            );
        }
        _ => {}
    }

    // The publication plan must agree with the outcomes.
    let plan = root.key("publication");
    let mut reported = BTreeSet::new();
    let mut reported_keys = BTreeSet::new();
    for (i, rep) in r.publication.drift_reports.iter().enumerate() {
        let p = plan.key("drift_reports").index(i);
        if r.is_v2() {
            // Several metrics of one case may drift; one report per key.
            if !reported_keys.insert((&rep.case, &rep.metric)) {
                push(
                    p.clone(),
                    format!(
                        "case {} metric {} is reported more than once",
                        quote(rep.case.as_str()),
                        quote(&rep.metric)
                    ),
                );
            }
            reported.insert(&rep.case);
        } else if !reported.insert(&rep.case) {
            push(
                p.key("case"),
                format!(
                    "case {} is reported more than once",
                    quote(rep.case.as_str())
                ),
            );
        }
        match by_id.get(&rep.case) {
            None => push(
                p.key("case"),
                format!("reported case {} is not in cases", quote(rep.case.as_str())),
            ),
            Some(c) if c.outcome != Outcome::Drift => push(
                p.key("case"),
                format!(
                    "reported case {} is not a drift case",
                    quote(rep.case.as_str())
                ),
            ),
            Some(c) => {
                if c.drift.as_ref().is_some_and(|d| d.metric != rep.metric) {
                    push(
                        p.key("metric"),
                        "report metric differs from the drift evidence".into(),
                    );
                }
            }
        }
    }
    for case in r.cases.iter().filter(|c| c.outcome == Outcome::Drift) {
        if !reported.contains(&case.id) {
            push(
                plan.key("drift_reports"),
                format!("drift case {} has no drift report", quote(case.id.as_str())),
            );
        }
    }
    for (i, id) in r.publication.cleared.iter().enumerate() {
        match by_id.get(id) {
            Some(c) if c.outcome == Outcome::Pass => {}
            Some(c) => push(
                plan.key("cleared").index(i),
                format!(
                    "cleared case {} did not pass (outcome {})",
                    quote(id.as_str()),
                    format!("{:?}", c.outcome).to_lowercase()
                ),
            ),
            None => push(
                plan.key("cleared").index(i),
                format!("cleared case {} is not in cases", quote(id.as_str())),
            ),
        }
    }
    if let Some(p) = &r.publication.baseline_proposal {
        let bp = plan.key("baseline_proposal");
        if p.lane != r.lane {
            push(
                bp.key("lane"),
                "a record may only propose a baseline for its own lane".into(),
            );
        }
        if r.case_counts.drift > 0 || r.case_counts.error > 0 || r.runs.succeeded == 0 {
            push(
                bp.clone(),
                "only a clean record (no drift, no error, at least one success) may be proposed as a baseline".into(),
            );
        }
    }
    if let Some(c) = &r.comparison {
        crate::compare::check_comparison(r, c, &mut push);
    }
    out
}

fn check_runs(c: &RunCounts, path: impl Fn() -> JsonPath, push: &mut impl FnMut(JsonPath, String)) {
    match c.class_sum() {
        Some(sum) if sum == c.total => {}
        Some(sum) => push(
            path().key("total"),
            format!("total is {} but the classes add up to {sum}", c.total),
        ),
        None => push(path().key("total"), "class counts overflow".into()),
    }
}

fn check_summary(
    m: &crate::record::Metric,
    path: impl Fn() -> JsonPath,
    values: &mut Vec<f64>,
    push: &mut impl FnMut(JsonPath, String),
) {
    values.clear();
    values.extend(m.samples.iter().flatten().map(|f| f.get()));
    match (&m.summary, values.is_empty()) {
        (None, true) => {}
        (None, false) => push(
            path().key("summary"),
            "samples are present but summary is null".into(),
        ),
        (Some(_), true) => {
            push(
                path().key("summary"),
                "summary must be null when no sample was measured".into(),
            );
        }
        (Some(s), false) => {
            if s.n != values.len() as u64 {
                push(
                    path().key("summary").key("n"),
                    format!(
                        "n is {} but there are {} non-null samples",
                        s.n,
                        values.len()
                    ),
                );
                return;
            }
            let want = summary_in_place(values);
            let checks = [
                ("median", s.median.get(), want.median),
                ("mad", s.mad.get(), want.mad),
                ("min", s.min.get(), want.min),
                ("max", s.max.get(), want.max),
            ];
            for (name, got, want) in checks {
                if got != want {
                    push(
                        path().key("summary").key(name),
                        format!("{name} is {got} but the samples give {want}"),
                    );
                }
            }
            if let Some(ci) = &s.ci
                && ci.low.get() > ci.high.get()
            {
                push(
                    path().key("summary").key("ci"),
                    "ci.low is above ci.high".into(),
                );
            }
        }
    }
}

/// The summary [`stats::Summary::of`] gives for `values`, computed in the
/// buffer itself (reordered by selection, then overwritten with the deviations), so that
/// checking a large sample needs no further copies of it. `values` must not
/// be empty.
fn summary_in_place(values: &mut [f64]) -> crate::stats::Summary {
    // The order statistics by selection (linear time) rather than by
    // sorting: the same elements under the same total order, so the same
    // values as the statistics module, bit for bit.
    fn median_selected(values: &mut [f64]) -> f64 {
        let n = values.len();
        let (below, upper, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
        let upper = *upper;
        if n % 2 == 1 {
            return upper;
        }
        let lower = below
            .iter()
            .copied()
            .max_by(f64::total_cmp)
            .unwrap_or(upper);
        lower / 2.0 + upper / 2.0
    }
    let n = values.len();
    let (mut min, mut max) = (values[0], values[0]);
    for &v in values.iter() {
        if v.total_cmp(&min).is_lt() {
            min = v;
        }
        if v.total_cmp(&max).is_gt() {
            max = v;
        }
    }
    let median = median_selected(values);
    for v in values.iter_mut() {
        *v = (*v - median).abs();
    }
    crate::stats::Summary {
        n,
        median,
        mad: median_selected(values),
        min,
        max,
    }
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
        let draft = include_bytes!("../examples/result.draft.json");
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
    fn summary_in_place_equals_the_statistics_module() {
        let mut rng = crate::stats::SplitMix64::new(7);
        for n in [1usize, 2, 3, 4, 10, 11, 100, 101, 1000] {
            let values: Vec<f64> = (0..n)
                .map(|_| (rng.next_u64() % 10_000) as f64 / 7.0)
                .collect();
            let want = crate::stats::Summary::of(&values).expect("non-empty");
            let mut buf = values.clone();
            assert_eq!(summary_in_place(&mut buf), want, "n = {n}");
        }
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
