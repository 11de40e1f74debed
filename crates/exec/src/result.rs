//! Building a `benchmark-result/v1` record from an analyzed benchmark, and
//! `benchops-exec bench seal`: only the cases the lane covers; a case passes
//! only when every measured run succeeded.

use benchops::analysis::Analysis;
use benchops::manifest::{self, ManifestError};
use benchops::record::{
    BaselineProposal, Case, CaseCounts, CaseError, Environment, Outcome, PublicationPlan,
    RESULT_SCHEMA, ResultRecord, RunCounts, Subject,
};
use benchops::seal::{SealError, SealedRecord};
use benchops::{LaneName, Sha256Digest};

use crate::backend::{self, SchedulerOptions};
use crate::bench::{self, BenchError, Status};
use crate::child;
use crate::seal::{SealFileError, SealOutcome, write_sealed};
use crate::state::StateDir;

/// Where and for what a record is sealed.
#[derive(Debug, Clone)]
pub struct SealContext {
    /// The lane.
    pub lane: LaneName,
    /// The scheduled slot, RFC 3339 UTC.
    pub slot: String,
    /// `owner/name` of the subject.
    pub repository: String,
    /// The subject commit.
    pub commit: String,
    /// The schedule manifest file (its canonical digest goes in the record).
    pub manifest: std::path::PathBuf,
}

/// Why a benchmark could not be sealed.
#[derive(Debug, thiserror::Error)]
pub enum SealBenchError {
    /// Observing the benchmark failed.
    #[error(transparent)]
    Bench(#[from] BenchError),
    /// The manifest could not be read.
    #[error("failed to read manifest {path}")]
    ReadManifest {
        /// The file.
        path: std::path::PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The manifest is invalid.
    #[error(transparent)]
    Manifest(#[from] ManifestError),
    /// The lane is not in the manifest.
    #[error("lane `{0}` is not declared in the manifest")]
    UnknownLane(String),
    /// The lane covers none of the benchmark's cases.
    #[error("lane `{0}` covers none of this benchmark's cases (see its `cases` in the manifest)")]
    NothingCovered(String),
    /// Some children are still incomplete: pending, running, or waiting
    /// for a complete answer from the scheduler.
    #[error(
        "benchmark is not finished: {0} child run(s) are incomplete (pending, running, or waiting for a complete scheduler answer; see `bench status`); wait, or cancel it"
    )]
    NotTerminal(u64),
    /// The record violates the contract (a defect, reported rather than hidden).
    #[error("failed to seal the record")]
    Seal(#[from] SealError),
    /// The slot is not an RFC 3339 UTC timestamp.
    #[error("slot {0:?} must be an RFC 3339 UTC timestamp such as 2026-11-30T01:00:00Z")]
    BadSlot(String),
    /// The slot is not a firing of the lane's cron, or lies in the future.
    #[error("{0}")]
    NotASlot(String),
    /// `--commit` is not a full commit id.
    #[error(
        "--commit {0}: give the full 40- or 64-hex commit id in lowercase (a prefix is not enough); `git rev-parse {0}` prints it"
    )]
    BadCommit(String),
    /// `--repository` is not `owner/name`.
    #[error(
        "--repository {0}: give the subject repository as owner/name, such as example/widgets (not a URL)"
    )]
    BadRepository(String),
    /// The sealed record could not be written.
    #[error(transparent)]
    Write(#[from] SealFileError),
}

/// Seals a finished benchmark and writes the record as
/// `out_dir/<sha256-hex>.json`, create-only: `benchops-exec bench seal`.
pub fn seal_benchmark_to(
    state: &StateDir,
    digest: &Sha256Digest,
    ctx: &SealContext,
    out_dir: &std::path::Path,
    opts: &SchedulerOptions,
    signer: Option<&crate::signing::Signer>,
) -> Result<SealOutcome, SealBenchError> {
    let sealed = seal_benchmark(state, digest, ctx, opts)?;
    Ok(write_sealed(&sealed, out_dir, signer)?)
}

/// Builds and seals the record of a finished benchmark.
pub fn seal_benchmark(
    state: &StateDir,
    digest: &Sha256Digest,
    ctx: &SealContext,
    opts: &SchedulerOptions,
) -> Result<SealedRecord, SealBenchError> {
    let hex = |c: &str| {
        (c.len() == 40 || c.len() == 64)
            && c.bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    };
    if !hex(&ctx.commit) {
        return Err(SealBenchError::BadCommit(
            benchops::terminal::escape_bounded(&ctx.commit, 100),
        ));
    }
    // The record's own rule (`subject.repository` in the schema).
    let plain = |p: &str| {
        !p.is_empty()
            && p.bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b))
    };
    let repo_ok = ctx
        .repository
        .split_once('/')
        .is_some_and(|(o, n)| plain(o) && plain(n));
    if !repo_ok {
        return Err(SealBenchError::BadRepository(
            benchops::terminal::escape_bounded(&ctx.repository, 200),
        ));
    }
    let text =
        benchops::fsio::read_input_text(&ctx.manifest, benchops::fsio::DEFAULT_MAX_INPUT_BYTES)
            .map_err(|source| SealBenchError::ReadManifest {
                path: ctx.manifest.clone(),
                source,
            })?;
    let m = manifest::from_toml(&text, &ctx.manifest.display().to_string())?;
    // The check `check-manifest` makes: a lane whose slots cannot be told
    // is refused here too.
    let issues = manifest::schedule_issues(&m.manifest);
    if !issues.is_empty() {
        return Err(ManifestError::Invalid {
            source_name: ctx.manifest.display().to_string(),
            issues,
        }
        .into());
    }
    let Some(lane) = m.manifest.lanes.iter().find(|l| l.name == ctx.lane) else {
        return Err(SealBenchError::UnknownLane(ctx.lane.to_string()));
    };
    let slot = ctx
        .slot
        .parse::<jiff::Timestamp>()
        .map_err(|_| SealBenchError::BadSlot(ctx.slot.clone()))?;
    if !ctx.slot.ends_with('Z') {
        return Err(SealBenchError::BadSlot(ctx.slot.clone()));
    }
    // The slot must be one the lane's cron gives (as `lane run` checks),
    // or the watchdog never credits the record.
    if let Ok(schedule) = benchops::schedule::Schedule::parse(&lane.cron, &lane.timezone)
        && let Err(p) = schedule.check_slot(slot, jiff::Timestamp::now())
    {
        return Err(SealBenchError::NotASlot(format!(
            "--slot {}: {p} (lane `{}`: cron `{}` in {}); give one of its slots, so that the watchdog credits the record (`lane run --unscheduled REASON` records an ad-hoc run on purpose)",
            ctx.slot, lane.name, lane.cron, lane.timezone
        )));
    }
    let (status, mut analysis) = bench::analyze(state, digest, opts)?;
    if !status.terminal {
        return Err(SealBenchError::NotTerminal(status.counts.incomplete));
    }
    // A lane's record holds the cases the lane covers, and only those.
    analysis.cases.retain(|c| lane.covers(c.case.as_str()));
    if analysis.cases.is_empty() {
        return Err(SealBenchError::NothingCovered(ctx.lane.to_string()));
    }
    let record = build_record(
        state,
        digest,
        ctx,
        &format!("{slot}"),
        m.digest,
        &status,
        &analysis,
    );
    Ok(benchops::seal::seal(&record)?)
}

/// The longest `skip_reason` a case gets, in characters.
const MAX_SKIP_REASON_CHARS: usize = 1000;

/// Whether a case was skipped by its command: every measured run
/// succeeded, said why it measured nothing of its own (a metric line's
/// `reason`), and none of its own metrics has a value.
fn skipped_by_command(c: &benchops::analysis::CaseAnalysis) -> Option<String> {
    let own: Vec<_> = c
        .metrics
        .iter()
        .filter(|m| !benchops::analysis::BUILTIN_METRICS.contains(&m.name.as_str()))
        .collect();
    let nothing_measured =
        !own.is_empty() && own.iter().all(|m| m.samples.iter().all(Option::is_none));
    (c.runs.succeeded > 0
        && c.runs.succeeded == c.runs.total
        && !c.skip_reasons.is_empty()
        && nothing_measured)
        .then(|| {
            let all = c.skip_reasons.join("; ");
            let mut cut: String = all.chars().take(MAX_SKIP_REASON_CHARS).collect();
            if all.chars().count() > MAX_SKIP_REASON_CHARS {
                cut.push('…');
            }
            cut
        })
}

/// The record's cases from an analysis: a case passes only when every
/// measured run succeeded; it is skipped when its command said why it
/// measured nothing; otherwise it is in error, with the reasons.
pub(crate) fn cases_of(analysis: &Analysis) -> Vec<Case> {
    let mut cases = Vec::with_capacity(analysis.cases.len());
    for c in &analysis.cases {
        let mut runs = c.runs;
        runs.add(&c.warmup_runs);
        let skip_reason = skipped_by_command(c);
        let (outcome, error) = if skip_reason.is_some() {
            (Outcome::Skipped, None)
        } else if c.runs.succeeded > 0 && c.runs.succeeded == c.runs.total {
            (Outcome::Pass, None)
        } else {
            // Some or all measured runs failed or went missing: numbers from
            // a biased subset (or none) are not a pass.
            let reasons: Vec<String> = c
                .not_succeeded
                .iter()
                .filter(|n| !n.warmup)
                .map(|n| format!("{} ({})", n.class, n.reason))
                .collect();
            let kind = if c.runs.succeeded > 0 {
                "partial_failures"
            } else {
                "no_successful_runs"
            };
            (
                Outcome::Error,
                Some(CaseError {
                    kind: kind.into(),
                    message: format!(
                        "{} of {} measured runs succeeded: {}",
                        c.runs.succeeded,
                        c.runs.total,
                        summarize(&reasons)
                    ),
                }),
            )
        };
        cases.push(Case {
            id: c.case.clone(),
            outcome,
            skip_reason,
            error,
            runs,
            metrics: c.metrics.clone(),
            drift: None,
        });
    }
    cases
}

fn build_record(
    state: &StateDir,
    digest: &Sha256Digest,
    ctx: &SealContext,
    slot: &str,
    manifest_digest: Sha256Digest,
    status: &Status,
    analysis: &Analysis,
) -> ResultRecord {
    let cases = cases_of(analysis);
    let mut runs = RunCounts::default();
    for c in &cases {
        runs.add(&c.runs);
    }
    let case_counts = CaseCounts::of(&cases);
    let cleared = cases
        .iter()
        .filter(|c| c.outcome == Outcome::Pass)
        .map(|c| c.id.clone())
        .collect();
    let clean = case_counts.error == 0
        && case_counts.drift == 0
        && runs.succeeded > 0
        && runs.succeeded == runs.total;
    let (started_at, finished_at) = time_span(state, digest, status);
    let latest = state.submissions(digest).ok().and_then(|mut s| s.pop());
    let executor = backend::executor(latest.as_ref());
    ResultRecord {
        schema: RESULT_SCHEMA.into(),
        lane: ctx.lane.clone(),
        slot: slot.to_owned(),
        subject: Subject {
            repository: ctx.repository.clone(),
            commit: ctx.commit.clone(),
        },
        manifest_digest,
        benchmark_digest: *digest,
        environment: Environment::from_facts(crate::state::machine_facts()),
        executor,
        started_at,
        finished_at,
        runs,
        cases,
        case_counts,
        baseline: None,
        publication: PublicationPlan {
            drift_reports: Vec::new(),
            cleared,
            baseline_proposal: clean.then(|| BaselineProposal {
                lane: ctx.lane.clone(),
                reason: "clean run: every case passed and every child run succeeded".into(),
            }),
        },
        comparison: None,
        unscheduled: None,
        skipped: None,
    }
}

fn summarize(reasons: &[String]) -> String {
    let mut counts: std::collections::BTreeMap<&str, usize> = std::collections::BTreeMap::new();
    for r in reasons {
        *counts.entry(r.as_str()).or_default() += 1;
    }
    counts
        .iter()
        .map(|(r, n)| format!("{n}x {r}"))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The earliest start and latest finish among the children's results. When
/// no result can be read, the submission time stands for both, so that
/// sealing the same benchmark twice gives the same bytes.
pub(crate) fn time_span(
    state: &StateDir,
    digest: &Sha256Digest,
    status: &Status,
) -> (String, String) {
    let mut start: Option<jiff::Timestamp> = None;
    let mut end: Option<jiff::Timestamp> = None;
    for c in &status.children {
        let dir = state.attempt_dir(digest, c.index, c.attempt, c.restart);
        if let Ok(r) = child::read_result(&dir.join("result.json")) {
            if let Ok(t) = r.started_at.parse::<jiff::Timestamp>() {
                start = Some(start.map_or(t, |s| s.min(t)));
            }
            if let Ok(t) = r.finished_at.parse::<jiff::Timestamp>() {
                end = Some(end.map_or(t, |e| e.max(t)));
            }
        }
    }
    let submitted = state
        .submissions(digest)
        .ok()
        .and_then(|s| {
            s.first()
                .and_then(|s| s.submitted_at.parse::<jiff::Timestamp>().ok())
        })
        .unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    let start = start.unwrap_or(submitted);
    let end = end.unwrap_or(start).max(start);
    (format!("{start:.6}"), format!("{end:.6}"))
}
