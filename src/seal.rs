//! Sealing and verification of `benchmark-result/v1` records.
//!
//! A sealed record is the RFC 8785 canonical bytes of the document; its
//! identity is the SHA-256 of exactly those bytes. [`verify`] re-checks all of
//! it and reports every problem it can find, each with a JSON path.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use crate::digest::Sha256Digest;
use crate::jcs;
use crate::path::JsonPath;
use crate::record::{CaseCounts, Outcome, RESULT_SCHEMA, ResultRecord, RunCounts, Verdict};
use crate::schema::{Contract, schema_tag};
use crate::stats;

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
    #[error("record does not survive canonicalization unchanged (an integer above 2^53?)")]
    Lossy,
}

/// Seals a record: canonical bytes plus digest, after checking the schema and
/// the semantic invariants.
pub fn seal(record: &ResultRecord) -> Result<SealedRecord, SealError> {
    let bytes = jcs::to_canonical_vec(record)?;
    let sealed = verify(&bytes, None)?;
    // Canonical numbers are doubles: an integer above 2^53 would be sealed
    // as a different value. Refuse rather than record something else.
    if sealed.record != *record {
        return Err(SealError::Lossy);
    }
    Ok(sealed)
}

/// Seals a draft given as JSON text in any formatting.
pub fn seal_json(draft: &[u8]) -> Result<SealedRecord, VerifyError> {
    let value = jcs::parse(draft).map_err(|e| VerifyError {
        issues: vec![VerifyIssue {
            kind: IssueKind::MalformedJson,
            path: JsonPath::root(),
            reason: e.to_string(),
        }],
    })?;
    verify(&jcs::canonical_bytes(&value), None)
}

/// Verifies sealed bytes: canonical form, digest (when `expected` is given),
/// schema, and semantic invariants. Reports every problem found.
pub fn verify(bytes: &[u8], expected: Option<&Sha256Digest>) -> Result<SealedRecord, VerifyError> {
    let fail = |issues| Err(VerifyError { issues });
    let issue = |kind, path, reason: String| VerifyIssue { kind, path, reason };

    let value = match jcs::parse(bytes) {
        Ok(v) => v,
        Err(e) => {
            return fail(vec![issue(
                IssueKind::MalformedJson,
                JsonPath::root(),
                e.to_string(),
            )]);
        }
    };
    let mut issues = Vec::new();
    let canonical_check = jcs::check_canonical(bytes, &value);
    if let Err(nc) = canonical_check.as_ref() {
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
    match schema_tag(&value) {
        Some(("benchmark-result", 1)) => {}
        Some(("benchmark-result", v)) => {
            issues.push(issue(
                IssueKind::UnknownSchemaVersion,
                JsonPath::root().key("schema"),
                format!("benchmark-result/v{v} is not known to this build (it reads v1)"),
            ));
            return fail(issues);
        }
        Some((other, v)) => {
            issues.push(issue(
                IssueKind::Schema,
                JsonPath::root().key("schema"),
                format!("document is {other}/v{v}, not {RESULT_SCHEMA}"),
            ));
            return fail(issues);
        }
        None => {} // the schema's `const` reports it
    }
    if let Err(violations) = Contract::BenchmarkResultV1.validate(&value) {
        issues.extend(
            violations
                .into_iter()
                .map(|v| issue(IssueKind::Schema, v.path, v.reason)),
        );
        return fail(issues);
    }
    // Non-canonical spellings (`5.0` for `5`) are reported above; decode the
    // normal form so the remaining checks still run on what the bytes mean.
    let value = match canonical_check {
        Ok(()) => value,
        Err(_) => jcs::parse(&jcs::canonical_bytes(&value)).unwrap_or(value),
    };
    let record: ResultRecord = match serde_json::from_value(value) {
        Ok(r) => r,
        Err(e) => {
            issues.push(issue(IssueKind::Schema, JsonPath::root(), e.to_string()));
            return fail(issues);
        }
    };
    issues.extend(semantic_issues(&record));
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

    check_runs(&r.runs, &root.key("runs"), &mut push);
    let mut case_runs = RunCounts::default();
    let mut seen = BTreeSet::new();
    let mut by_id = BTreeMap::new();
    for (i, case) in r.cases.iter().enumerate() {
        let p = root.key("cases").index(i);
        if !seen.insert(&case.id) {
            push(
                p.key("id"),
                format!("case id `{}` appears more than once", case.id),
            );
        }
        by_id.insert(&case.id, case);
        check_runs(&case.runs, &p.key("runs"), &mut push);
        case_runs.add(&case.runs);

        match (&case.outcome, &case.skip_reason) {
            (Outcome::Skipped, None) => {
                push(
                    p.key("skip_reason"),
                    "a skipped case must say why it was skipped".into(),
                );
            }
            (Outcome::Skipped, Some(reason)) if reason.trim().is_empty() => {
                push(p.key("skip_reason"), "skip_reason must not be blank".into());
            }
            (Outcome::Skipped, Some(_)) | (_, None) => {}
            (o, Some(_)) => push(
                p.key("skip_reason"),
                format!("only skipped cases carry a skip_reason; this case is {o:?}")
                    .to_lowercase(),
            ),
        }
        match (case.outcome, &case.error) {
            (Outcome::Error, None) => {
                push(
                    p.key("error"),
                    "a case in error must carry error detail".into(),
                );
            }
            (Outcome::Error, Some(_)) | (_, None) => {}
            (_, Some(_)) => push(
                p.key("error"),
                "only cases in error carry error detail".into(),
            ),
        }
        match (case.outcome, &case.drift) {
            (Outcome::Drift, None) => {
                push(
                    p.key("drift"),
                    "a drift case must carry its drift evidence".into(),
                );
            }
            (Outcome::Drift, Some(d)) => {
                if d.verdict != Verdict::Confirmed {
                    push(
                        p.key("drift").key("verdict"),
                        "a drift outcome needs a confirmed verdict".into(),
                    );
                }
                if d.confirmation_samples.is_empty() {
                    push(
                        p.key("drift").key("confirmation_samples"),
                        "a confirmed drift needs confirmation samples from a re-run".into(),
                    );
                }
            }
            (Outcome::Pass, Some(d)) if d.verdict == Verdict::Confirmed => push(
                p.key("drift").key("verdict"),
                "a passing case cannot carry a confirmed drift verdict".into(),
            ),
            (Outcome::Pass, _) => {}
            (_, Some(_)) => push(
                p.key("drift"),
                "only measured cases (pass or drift) carry drift evidence".into(),
            ),
            (_, None) => {}
        }
        if let Some(d) = &case.drift
            && !case.metrics.iter().any(|m| m.name == d.metric)
        {
            push(
                p.key("drift").key("metric"),
                format!(
                    "drift metric `{}` is not among the case's metrics",
                    d.metric
                ),
            );
        }
        if matches!(case.outcome, Outcome::Skipped) && case.runs.total != 0 {
            push(
                p.key("runs").key("total"),
                "a skipped case has no child runs".into(),
            );
        }
        let mut names = BTreeSet::new();
        for (j, m) in case.metrics.iter().enumerate() {
            let mp = p.key("metrics").index(j);
            if !names.insert(&m.name) {
                push(
                    mp.key("name"),
                    format!("metric `{}` appears more than once", m.name),
                );
            }
            check_summary(m, &mp, &mut push);
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
    for (i, rep) in r.publication.drift_reports.iter().enumerate() {
        let p = plan.key("drift_reports").index(i);
        if !reported.insert(&rep.case) {
            push(
                p.key("case"),
                format!("case `{}` is reported more than once", rep.case),
            );
        }
        match by_id.get(&rep.case) {
            None => push(
                p.key("case"),
                format!("reported case `{}` is not in cases", rep.case),
            ),
            Some(c) if c.outcome != Outcome::Drift => push(
                p.key("case"),
                format!("reported case `{}` is not a drift case", rep.case),
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
                format!("drift case `{}` has no drift report", case.id),
            );
        }
    }
    for (i, id) in r.publication.cleared.iter().enumerate() {
        match by_id.get(id) {
            Some(c) if c.outcome == Outcome::Pass => {}
            Some(c) => push(
                plan.key("cleared").index(i),
                format!("cleared case `{id}` did not pass (outcome {:?})", c.outcome)
                    .to_lowercase(),
            ),
            None => push(
                plan.key("cleared").index(i),
                format!("cleared case `{id}` is not in cases"),
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
    out
}

fn check_runs(c: &RunCounts, path: &JsonPath, push: &mut impl FnMut(JsonPath, String)) {
    match c.class_sum() {
        Some(sum) if sum == c.total => {}
        Some(sum) => push(
            path.key("total"),
            format!("total is {} but the classes add up to {sum}", c.total),
        ),
        None => push(path.key("total"), "class counts overflow".into()),
    }
}

fn check_summary(
    m: &crate::record::Metric,
    path: &JsonPath,
    push: &mut impl FnMut(JsonPath, String),
) {
    let values: Vec<f64> = m.samples.iter().flatten().map(|f| f.get()).collect();
    match (&m.summary, values.is_empty()) {
        (None, true) => {}
        (None, false) => push(
            path.key("summary"),
            "samples are present but summary is null".into(),
        ),
        (Some(_), true) => {
            push(
                path.key("summary"),
                "summary must be null when no sample was measured".into(),
            );
        }
        (Some(s), false) => {
            if s.n != values.len() as u64 {
                push(
                    path.key("summary").key("n"),
                    format!(
                        "n is {} but there are {} non-null samples",
                        s.n,
                        values.len()
                    ),
                );
                return;
            }
            let Some(want) = stats::Summary::of(&values) else {
                return;
            };
            let checks = [
                ("median", s.median.get(), want.median),
                ("mad", s.mad.get(), want.mad),
                ("min", s.min.get(), want.min),
                ("max", s.max.get(), want.max),
            ];
            for (name, got, want) in checks {
                if got != want {
                    push(
                        path.key("summary").key(name),
                        format!("{name} is {got} but the samples give {want}"),
                    );
                }
            }
            if let Some(ci) = &s.ci
                && ci.low.get() > ci.high.get()
            {
                push(
                    path.key("summary").key("ci"),
                    "ci.low is above ci.high".into(),
                );
            }
        }
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
        assert!(matches!(seal(&r), Err(SealError::Lossy)));
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
