//! The `benchmark-result/v1` record: what one scheduled execution of one lane
//! found, and the publication plan the publisher carries out.
//!
//! Field order here is irrelevant to the sealed bytes: sealing writes RFC 8785
//! canonical JSON, which sorts members.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::digest::Sha256Digest;
use crate::names::{CaseId, LaneName};
use crate::num::Finite;

/// The schema id every v1 result record carries in its `schema` member.
pub const RESULT_SCHEMA: &str = "benchmark-result/v1";

/// The schema id of a v2 result record: a v1 record plus the lane
/// comparison ([`Comparison`]) that decided its drift verdicts.
pub const RESULT_SCHEMA_V2: &str = "benchmark-result/v2";

/// The schema id of a v3 record: a v2 record whose comparison also says
/// how each key was decided, with the same-session A/B evidence and the
/// culprit bisection ([`ConfirmMode`], [`SameSession`], [`BisectionRecord`];
/// ADR 0008).
pub const RESULT_SCHEMA_V3: &str = "benchmark-result/v3";

/// One sealed execution of one lane.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResultRecord {
    /// Always [`RESULT_SCHEMA`].
    pub schema: String,
    /// The lane that ran.
    pub lane: LaneName,
    /// The scheduled slot this execution fills, RFC 3339 UTC (`...Z`).
    pub slot: String,
    /// What was measured.
    pub subject: Subject,
    /// Digest of the schedule manifest the execution ran under.
    pub manifest_digest: Sha256Digest,
    /// Digest of the planned benchmark (intent plus ordered child digests).
    pub benchmark_digest: Sha256Digest,
    /// Where it ran.
    pub environment: Environment,
    /// Which backend ran it.
    pub executor: Executor,
    /// When execution started, RFC 3339 UTC.
    pub started_at: String,
    /// When execution finished, RFC 3339 UTC.
    pub finished_at: String,
    /// Classification counts over every child run of every case.
    pub runs: RunCounts,
    /// Per-case outcomes.
    pub cases: Vec<Case>,
    /// Counts of case outcomes.
    pub case_counts: CaseCounts,
    /// The baseline the cases were compared against, if any.
    pub baseline: Option<BaselineRef>,
    /// What the publisher must do with this record.
    pub publication: PublicationPlan,
    /// v2 only: the comparison with the lane's baseline, its policy and a
    /// verdict per case and metric. Absent (never `null`) in v1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparison: Option<Comparison>,
    /// v3 only: why this run fills no slot of the lane's cron (an ad-hoc
    /// run recorded on purpose). Absent (never `null`) for a scheduled run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unscheduled: Option<String>,
    /// v3 only: the slots since the lane's previous run that its host did
    /// not run, by the lane's `catch_up`. Absent (never `null`) when none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub skipped: Option<SkippedSlots>,
}

/// The slots a lane's host skipped on purpose before a run (`skipped`, v3):
/// every slot of its cron from `first` to `last` without a record of its
/// own, which the watchdog reports as skipped rather than missed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SkippedSlots {
    /// The lane's `catch_up` that skipped them (`manifest::CatchUp`).
    pub catch_up: String,
    /// How many slots were skipped (at least 1).
    pub count: u64,
    /// The first of them.
    pub first: String,
    /// The last of them, before the record's own slot.
    pub last: String,
}

/// The longest reason an unscheduled run may give, in characters.
pub const MAX_UNSCHEDULED_CHARS: usize = 500;

impl ResultRecord {
    /// Whether this record carries a lane comparison: a
    /// `benchmark-result/v2` or `/v3` record.
    pub fn is_v2(&self) -> bool {
        self.schema == RESULT_SCHEMA_V2 || self.is_v3()
    }

    /// Whether this is a `benchmark-result/v3` record.
    pub fn is_v3(&self) -> bool {
        self.schema == RESULT_SCHEMA_V3
    }
}

/// The code under measurement.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Subject {
    /// `owner/name`.
    pub repository: String,
    /// Full commit id (40 or 64 lowercase hex digits).
    pub commit: String,
}

/// The machine fingerprint. `fingerprint` is the digest of the canonical
/// JSON of `facts`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Environment {
    /// `sha256(canonical(facts))`.
    pub fingerprint: Sha256Digest,
    /// Facts about the machine (`os`, `arch`, `cpus`, `cpu_model`, ...).
    pub facts: BTreeMap<String, String>,
}

impl Environment {
    /// Builds an environment whose fingerprint matches its facts.
    pub fn from_facts(facts: BTreeMap<String, String>) -> Self {
        let fingerprint = fingerprint_of(&facts);
        Self { fingerprint, facts }
    }
}

/// The fingerprint of a set of facts.
pub fn fingerprint_of(facts: &BTreeMap<String, String>) -> Sha256Digest {
    // A map of strings always has a canonical form.
    let v = serde_json::Value::Object(
        facts
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect(),
    );
    Sha256Digest::of(&crate::jcs::canonical_bytes(&v))
}

/// The backend that executed the children.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Executor {
    /// Local processes.
    Local {
        /// Host name of the machine.
        host: String,
    },
    /// Slurm job arrays.
    Slurm {
        /// `ClusterName` from slurm.conf.
        cluster: String,
        /// Array job ids, as `JobIDRaw` strings.
        job_ids: Vec<String>,
    },
}

/// Classification counts of child runs. `total` is the sum of the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunCounts {
    /// Sum of every class.
    pub total: u64,
    /// Ran and produced a valid result with exit 0.
    pub succeeded: u64,
    /// Non-zero exit, signal or timeout.
    pub failed: u64,
    /// Pending or running.
    pub incomplete: u64,
    /// No evidence it ever started, and not pending.
    pub missing: u64,
    /// A superseded attempt, or a heartbeat older than policy.
    pub stale: u64,
    /// The evidence sources disagree.
    pub scheduler_inconsistent: u64,
}

impl RunCounts {
    /// Sum of the class counts (not `total`). `None` on overflow.
    pub fn class_sum(&self) -> Option<u64> {
        [
            self.failed,
            self.incomplete,
            self.missing,
            self.stale,
            self.scheduler_inconsistent,
        ]
        .into_iter()
        .try_fold(self.succeeded, u64::checked_add)
    }

    /// Adds another set of counts (saturating).
    pub fn add(&mut self, o: &RunCounts) {
        self.total = self.total.saturating_add(o.total);
        self.succeeded = self.succeeded.saturating_add(o.succeeded);
        self.failed = self.failed.saturating_add(o.failed);
        self.incomplete = self.incomplete.saturating_add(o.incomplete);
        self.missing = self.missing.saturating_add(o.missing);
        self.stale = self.stale.saturating_add(o.stale);
        self.scheduler_inconsistent = self
            .scheduler_inconsistent
            .saturating_add(o.scheduler_inconsistent);
    }
}

/// The outcome of one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// Measured, no confirmed drift.
    Pass,
    /// Confirmed drift against the baseline.
    Drift,
    /// Not measured; `skip_reason` says why.
    Skipped,
    /// Could not be measured; `error` says why.
    Error,
}

/// One benchmark case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Case {
    /// The case id.
    pub id: CaseId,
    /// The outcome.
    pub outcome: Outcome,
    /// Required (non-empty) when skipped, null otherwise.
    pub skip_reason: Option<String>,
    /// Required when the outcome is error, null otherwise.
    pub error: Option<CaseError>,
    /// Classification counts of this case's child runs.
    pub runs: RunCounts,
    /// Metrics measured from validated successes.
    pub metrics: Vec<Metric>,
    /// Drift evidence: required when drift; allowed when a suspicion was not
    /// confirmed.
    pub drift: Option<DriftEvidence>,
}

/// Why a case could not be measured.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseError {
    /// A short machine-readable kind (`all_runs_failed`, `timeout`, ...).
    pub kind: String,
    /// A human explanation.
    pub message: String,
}

/// Which way is better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    /// Smaller values are better (time, memory).
    LowerIsBetter,
    /// Larger values are better (throughput).
    HigherIsBetter,
}

/// One metric of one case, with its raw samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    /// Metric name (`wall_s`, `max_rss_bytes`, or one the command printed).
    pub name: String,
    /// Unit (`s`, `bytes`, ...).
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
    /// One entry per succeeded child run; null means "not measured".
    pub samples: Vec<Option<Finite>>,
    /// Summary of the non-null samples; null when there are none.
    pub summary: Option<Summary>,
}

/// Robust summary of a sample.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Summary {
    /// Number of non-null samples.
    pub n: u64,
    /// Median.
    pub median: Finite,
    /// Median absolute deviation (unscaled).
    pub mad: Finite,
    /// Smallest sample.
    pub min: Finite,
    /// Largest sample.
    pub max: Finite,
    /// Confidence interval of the median, when it could be computed.
    pub ci: Option<ConfidenceInterval>,
}

/// A bootstrap confidence interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfidenceInterval {
    /// Confidence level, e.g. 0.95.
    pub level: Finite,
    /// Lower bound.
    pub low: Finite,
    /// Upper bound.
    pub high: Finite,
    /// Method, e.g. `bootstrap-percentile`.
    pub method: String,
    /// Number of resamples.
    pub resamples: u64,
    /// RNG seed, so the interval is reproducible.
    pub seed: u64,
}

/// Verdict of an in-run confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// The re-run reproduced the drift.
    Confirmed,
    /// The re-run did not reproduce it.
    NotConfirmed,
}

/// Evidence behind a drift verdict.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriftEvidence {
    /// The metric that drifted.
    pub metric: String,
    /// Baseline record and its median for that metric.
    pub baseline: BaselineMetric,
    /// Samples of the first measurement.
    pub initial_samples: Vec<Finite>,
    /// Samples of the confirmation re-run.
    pub confirmation_samples: Vec<Finite>,
    /// The test used (e.g. `median-ratio`).
    pub test: String,
    /// The threshold of the test (e.g. 0.05 for a 5% change).
    pub threshold: Finite,
    /// The statistic the test produced on the confirmation samples.
    pub statistic: Finite,
    /// The verdict.
    pub verdict: Verdict,
}

/// A baseline value for one metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineMetric {
    /// The baseline record.
    pub record: Sha256Digest,
    /// Its median for the metric.
    pub median: Finite,
}

/// Counts of case outcomes. `total` is the sum of the others.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseCounts {
    /// Number of cases.
    pub total: u64,
    /// Cases that passed.
    pub pass: u64,
    /// Cases with confirmed drift.
    pub drift: u64,
    /// Skipped cases.
    pub skipped: u64,
    /// Cases in error.
    pub error: u64,
}

impl CaseCounts {
    /// Counts the outcomes of `cases`.
    pub fn of(cases: &[Case]) -> Self {
        let mut c = CaseCounts::default();
        for case in cases {
            c.total += 1;
            match case.outcome {
                Outcome::Pass => c.pass += 1,
                Outcome::Drift => c.drift += 1,
                Outcome::Skipped => c.skipped += 1,
                Outcome::Error => c.error += 1,
            }
        }
        c
    }
}

/// The baseline a record was compared against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineRef {
    /// The baseline record's digest.
    pub record: Sha256Digest,
    /// Its lane.
    pub lane: LaneName,
    /// Its slot.
    pub slot: String,
}

/// What the publisher must do. The publisher never re-derives any of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PublicationPlan {
    /// One report per drift case.
    pub drift_reports: Vec<DriftReport>,
    /// Covered cases that ran and no longer reproduce a drift.
    pub cleared: Vec<CaseId>,
    /// A proposal to make this record the lane's baseline.
    pub baseline_proposal: Option<BaselineProposal>,
}

/// A drift to announce.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriftReport {
    /// The drifting case.
    pub case: CaseId,
    /// The drifting metric.
    pub metric: String,
    /// One-line human summary.
    pub summary: String,
}

/// A proposal to move the lane's baseline pointer to this record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineProposal {
    /// The lane whose pointer moves (the record's own lane).
    pub lane: LaneName,
    /// Why (e.g. `clean run`).
    pub reason: String,
}

/// The lane comparison of a v2 record: the policy used, the baseline and one
/// entry per compared case and metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Comparison {
    /// The policy the verdicts were decided under.
    pub policy: ComparisonPolicy,
    /// Why nothing was compared (no baseline yet, say); null when a baseline
    /// was used.
    pub no_baseline_reason: Option<String>,
    /// Whether the baseline ran on a machine with another fingerprint.
    pub environment_differs: bool,
    /// One entry per compared case and metric, in case order, then metric
    /// order.
    pub keys: Vec<KeyComparison>,
    /// v3 only (required there): how suspects and clears were confirmed in
    /// this run. Absent in v2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confirm: Option<ConfirmMode>,
    /// v3 only: the culprit bisection of this run's confirmed regression,
    /// when one ran. Absent when none ran, and always in v2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bisection: Option<BisectionRecord>,
}

/// How a lane run confirmed its suspects and clears (v3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfirmMode {
    /// The mode that decided: `same-session` or `stored-baseline`.
    pub mode: ConfirmModeKind,
    /// What the manifest asked for.
    pub requested: ConfirmModeKind,
    /// Why the mode differs from the one requested (a subject that is not
    /// a git checkout, a baseline commit the checkout lacks); null when it
    /// does not.
    pub fallback_reason: Option<String>,
}

/// A confirmation mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ConfirmModeKind {
    /// The baseline commit (side A) and the candidate (side B) re-measured
    /// interleaved in this run; their comparison decides.
    SameSession,
    /// The candidate re-run in this run and pooled against the stored
    /// baseline's samples from another session.
    StoredBaseline,
}

impl ConfirmModeKind {
    /// `same-session` or `stored-baseline`.
    pub fn as_str(self) -> &'static str {
        match self {
            ConfirmModeKind::SameSession => "same-session",
            ConfirmModeKind::StoredBaseline => "stored-baseline",
        }
    }
}

/// What decided a key's verdict (v3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum DecidedBy {
    /// The first look alone (nothing was re-measured).
    FirstLook,
    /// The candidate's re-runs pooled against the stored baseline.
    StoredBaseline,
    /// Side A against side B, measured in this run.
    SameSession,
}

/// A side of a same-session comparison, or the role of a commit in a
/// bisection step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunSide {
    /// The baseline commit.
    A,
    /// The candidate.
    B,
    /// A bisection step's good bound.
    Good,
    /// A bisection step's midpoint.
    Mid,
    /// A bisection step's bad bound.
    Bad,
}

impl RunSide {
    /// The side's name as the record spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            RunSide::A => "a",
            RunSide::B => "b",
            RunSide::Good => "good",
            RunSide::Mid => "mid",
            RunSide::Bad => "bad",
        }
    }
}

/// One measured run of an interleaved comparison, in the order the runs
/// started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SideRun {
    /// Which side (or bisection role) it measured.
    pub side: RunSide,
    /// The host it ran on.
    pub node: String,
    /// The metric's value; null when the run failed or did not report it.
    pub value: Option<Finite>,
}

/// The same-session A/B evidence of one key (v3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SameSession {
    /// The commit side A measured (the key's baseline commit).
    pub baseline_commit: String,
    /// The commit side B measured (the record's subject commit).
    pub candidate_commit: String,
    /// The seed of the interleaved order.
    pub order_seed: u64,
    /// Every measured run of both sides, in the order they started.
    pub runs: Vec<SideRun>,
    /// The band, from this session's samples of both sides.
    pub band: Band,
    /// B against A: at `confirm_level` for a suspect, at `level` for a
    /// clear.
    pub effect: EffectEstimate,
}

/// What one bisection step found about its midpoint (v3).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepFindingKind {
    /// The midpoint measures like the good bound.
    Good,
    /// The midpoint measures like the bad bound.
    Bad,
    /// The measurements did not decide.
    Undecided,
    /// The midpoint could not be built.
    BuildFailed,
}

/// One bisection step (v3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BisectionStep {
    /// The midpoint's index in [`BisectionRecord::commits`].
    pub index: u64,
    /// The midpoint commit.
    pub commit: String,
    /// What the step found.
    pub finding: StepFindingKind,
    /// One line saying why.
    pub reason: String,
    /// The good bound, the midpoint and the bad bound, measured
    /// interleaved, in the order the runs started.
    pub runs: Vec<SideRun>,
}

/// A culprit bisection over the first-parent range from the baseline
/// commit to the candidate (v3).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BisectionRecord {
    /// The case of the key it followed (the largest confirmed regression).
    pub case: CaseId,
    /// Its metric.
    pub metric: String,
    /// The first-parent range: index 0 the baseline commit (good), the
    /// last the candidate (bad).
    pub commits: Vec<String>,
    /// The budget of steps.
    pub budget_steps: u64,
    /// The budget of wall time, in seconds.
    pub budget_seconds: u64,
    /// Every step, in order.
    pub steps: Vec<BisectionStep>,
    /// The culprit commit, when one was named.
    pub culprit: Option<String>,
    /// The last commit proved good.
    pub good: String,
    /// The first commit proved bad.
    pub bad: String,
    /// Why no single commit was named; null when one was.
    pub reason: Option<String>,
}

/// The settings a comparison used (defaults merged with the manifest's
/// lane settings; per-metric bands are in each [`KeyComparison`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ComparisonPolicy {
    /// The effect estimated: `hodges-lehmann-relative`.
    pub effect: String,
    /// Confidence level of the first look and of the clearing test.
    pub level: Finite,
    /// The stricter level the pooled evidence must meet to confirm a drift.
    pub confirm_level: Finite,
    /// Bootstrap resamples per interval.
    pub resamples: u64,
    /// The seed every interval of this record derives its own seed from.
    pub seed: u64,
    /// Measured re-runs of each suspect.
    pub confirm_runs: u32,
    /// Fewest samples per side for a Mann-Whitney p-value.
    pub min_samples_for_test: u32,
}

/// The band an effect must leave to count: the largest of three relative
/// bounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Band {
    /// The effective relative half-width: `max(threshold, noise_fence,
    /// min_absolute / |baseline median|)`.
    pub relative: Finite,
    /// The configured relative threshold.
    pub threshold: Finite,
    /// The configured minimum absolute effect, in the metric's unit.
    pub min_absolute: Finite,
    /// The noise fence from the baseline's own spread:
    /// `noise_fence_mads × 1.4826 × MAD / |median|`.
    pub noise_fence: Finite,
    /// The multiple of the scaled MAD the fence uses.
    pub noise_fence_mads: Finite,
}

/// An effect estimate with its interval. Effects are relative and signed
/// so that positive is worse, whatever the metric's direction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EffectEstimate {
    /// The point estimate (0.3 is 30% worse).
    pub estimate: Finite,
    /// Lower bound of the interval.
    pub low: Finite,
    /// Upper bound of the interval.
    pub high: Finite,
    /// Its confidence level.
    pub level: Finite,
    /// Bootstrap resamples.
    pub resamples: u64,
    /// Seed of this interval.
    pub seed: u64,
    /// Two-sided Mann-Whitney U p-value; null when a side had too few
    /// samples.
    pub p_value: Option<Finite>,
    /// Samples on the baseline side.
    pub n_baseline: u64,
    /// Samples on the candidate side.
    pub n_candidate: u64,
}

/// The comparison of one case and metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KeyComparison {
    /// The case.
    pub case: CaseId,
    /// The metric.
    pub metric: String,
    /// Which way is better.
    pub direction: Direction,
    /// Whether history holds an unresolved drift of this key for this lane,
    /// so that only confirmed evidence may clear it.
    pub drifting_in_history: bool,
    /// The baseline median of the metric.
    pub baseline_median: Finite,
    /// Non-null baseline samples.
    pub baseline_n: u64,
    /// The band.
    pub band: Band,
    /// The first look: this record's samples of the metric against the
    /// baseline, at `policy.level`.
    pub initial: EffectEstimate,
    /// What the first look asked of the confirmation.
    pub role: ConfirmationRole,
    /// The re-runs, when there were any.
    pub confirmation: Option<Confirmation>,
    /// The verdict.
    pub verdict: KeyVerdict,
    /// One line saying why.
    pub reason: String,
    /// v3 only (required there): what decided the verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_by: Option<DecidedBy>,
    /// v3 only: side A and side B measured in this run, when they decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub same_session: Option<SameSession>,
}

/// Why a key was re-run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ConfirmationRole {
    /// Not re-run.
    None,
    /// The first look's interval lay wholly above the band.
    SuspectRegression,
    /// The first look's interval lay wholly below the band.
    SuspectImprovement,
    /// A key drifting in history: re-run so that a clear is confirmed.
    ConfirmClear,
}

/// The confirmation re-runs of one key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Confirmation {
    /// The metric's samples from the re-runs (non-null only).
    pub samples: Vec<Finite>,
    /// Child runs of the re-run, by class.
    pub runs: RunCounts,
    /// The first look's samples and these pooled, at `policy.confirm_level`
    /// (for a clear: at `policy.level`).
    pub pooled: EffectEstimate,
    /// These samples alone, at `policy.level`.
    pub alone: EffectEstimate,
}

/// The verdict on one key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KeyVerdict {
    /// The interval lies wholly inside the band: no drift (clears a
    /// drifting key).
    WithinBand,
    /// The evidence neither shows a drift nor rules one out: it neither
    /// reproduces nor clears.
    Inconclusive,
    /// A suspect the re-runs did not confirm: not announced, and it clears
    /// nothing.
    NotConfirmed,
    /// A regression confirmed by the re-runs: announced.
    ConfirmedRegression,
    /// An improvement confirmed by the re-runs: recorded, never alarms
    /// (clears a drifting key).
    ConfirmedImprovement,
}

impl KeyVerdict {
    /// Whether the verdict shows the key is not drifting (back inside the
    /// band, or better).
    pub fn clears(self) -> bool {
        matches!(
            self,
            KeyVerdict::WithinBand | KeyVerdict::ConfirmedImprovement
        )
    }
}
