//! The status page: what history, the drift issues and the publication
//! workflow runs say right now, as one server-rendered HTML document
//! ([`render_html`]) and as JSON (the [`Status`] value, the body of
//! `GET /status.json`).
//!
//! [`collect()`] reads the `benchmark-history` branch once, at one tip, and
//! derives everything else from the records in memory, by the rules the
//! publisher uses:
//!
//! - **lanes**: each lane's latest record (greatest slot as an instant, then
//!   `finished_at`, then digest), its age, its number of records and its
//!   baseline pointer;
//! - **open drift**: [`benchops::reconcile::drift_statuses`] over all of
//!   history, keeping the keys whose standing is not cleared, with the lanes
//!   that still reproduce each one. Coverage comes from the schedule manifest
//!   when one is given; without one, a lane is taken to cover the cases of
//!   its latest record (said so in [`HistorySummary::coverage`]);
//! - **issue decisions** recorded from webhooks, each matched to a drift key
//!   (the key the caller passes, else the issue title as
//!   [`benchops::reconcile::render_title`] writes it) and told as one
//!   sentence, e.g. "issue #12 closed by a person (octocat) at … while lanes
//!   nightly and sentinel still reproduce it";
//! - **recent records**, the latest **publication workflow runs**, and a
//!   **trend** per lane, case and metric: the summary median
//!   ([`benchops::record::Summary::median`]) of the lane's last records, a
//!   missing value being a gap, never a zero.
//!
//! Every list is capped ([`MAX_LANES`], …) and says how many items were left
//! out. Without a history store the status says history is not configured
//! (`history` is `null`), rather than showing an empty history.
//!
//! The code is in two parts: `collect` (history → [`Status`]) and `html`
//! (the document; every text goes through the one [`escape`]). The inline
//! trend charts are the core's renderer ([`benchops::chart`]), which
//! `benchops-publish history --svg` draws with too.

use std::fmt;

use benchops::manifest::Manifest;
use benchops::record::CaseCounts;
use benchops_history::{HistoryError, LocalHistory};
use serde::{Deserialize, Serialize};

mod collect;
mod html;

pub use html::escape;

/// Lanes shown at most.
pub const MAX_LANES: usize = 50;
/// Open drift keys shown at most.
pub const MAX_DRIFT: usize = 100;
/// Issue decisions shown at most (the newest).
pub const MAX_DECISIONS: usize = 50;
/// Recent records shown at most, whatever the caller asks.
pub const MAX_RECENT_RECORDS: usize = 200;
/// Workflow runs shown at most (the newest).
pub const MAX_WORKFLOW_RUNS: usize = 20;
/// Trend charts shown at most.
pub const MAX_TRENDS: usize = 24;
/// Points per trend chart at most, whatever the caller asks.
pub const MAX_TREND_POINTS: usize = 500;
/// Unreadable history files listed at most.
pub const MAX_PROBLEMS: usize = 20;
/// Records read from history at most (the newest by slot); the drift
/// standing of a history longer than this is computed over the newest ones.
pub const MAX_RECORDS: usize = 100_000;
/// Characters of one free text (a summary, a title, a reason) kept at most.
pub const MAX_TEXT_CHARS: usize = 300;

/// An issue event recorded from a webhook: who did what to which issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssueDecision {
    /// `owner/name` of the issue's repository.
    pub repository: String,
    /// The issue number.
    pub issue: u64,
    /// `closed`, `reopened`, `labeled` or `unlabeled`.
    pub action: String,
    /// The label, for `labeled` and `unlabeled`.
    pub label: Option<String>,
    /// The login of whoever did it.
    pub actor: String,
    /// Whether the actor is an app (a bot account), not a person.
    pub actor_is_app: bool,
    /// When, RFC 3339.
    pub at: String,
    /// The issue's title at that moment.
    pub title: String,
    /// The issue's drift key in marker form (`<case>/<metric>`, as in
    /// `<!-- benchops:drift key=… -->`), when the caller read it from the
    /// issue body; it takes precedence over the title.
    #[serde(default)]
    pub drift_key: Option<String>,
}

/// A publication workflow run, as a webhook reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WorkflowRunFact {
    /// `owner/name`.
    pub repository: String,
    /// The workflow file, e.g. `.github/workflows/benchops-publish.yml`.
    pub workflow_path: String,
    /// The run id.
    pub run_id: u64,
    /// The attempt (from 1).
    pub run_attempt: u64,
    /// The triggering event (`schedule`, `workflow_dispatch`, …).
    pub event: String,
    /// The conclusion; `None` while the run is in progress.
    pub conclusion: Option<String>,
    /// When it was last updated, RFC 3339.
    pub at: String,
}

/// Everything [`collect()`] reads.
#[derive(Debug, Clone, Copy)]
pub struct StatusInputs<'a> {
    /// The history store; `None` when history is not configured.
    pub history: Option<&'a LocalHistory>,
    /// The schedule manifest, for lane coverage and the lanes that have not
    /// run yet; `None`: a lane covers the cases of its latest record.
    pub manifest: Option<&'a Manifest>,
    /// Issue events recorded from webhooks.
    pub decisions: &'a [IssueDecision],
    /// Publication workflow runs recorded from webhooks.
    pub workflow_runs: &'a [WorkflowRunFact],
    /// The time the page is for (ages are measured to it).
    pub now: jiff::Timestamp,
    /// Recent records to show (capped at [`MAX_RECENT_RECORDS`]), e.g. 20.
    pub recent_records: usize,
    /// Points per trend chart (capped at [`MAX_TREND_POINTS`]), e.g. 30.
    pub trend_points: usize,
}

/// A capped list: the items shown and how many were left out.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Listed<T> {
    /// The items shown.
    pub items: Vec<T>,
    /// How many more there were.
    pub left_out: usize,
}

impl<T> Listed<T> {
    /// The first `max` of `all`.
    pub fn capped(mut all: Vec<T>, max: usize) -> Self {
        let left_out = all.len().saturating_sub(max);
        all.truncate(max);
        Listed {
            items: all,
            left_out,
        }
    }

    /// Nothing.
    pub fn empty() -> Self {
        Listed {
            items: Vec::new(),
            left_out: 0,
        }
    }
}

/// Everything the status page shows; also the body of `GET /status.json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Status {
    /// The time the status is for, RFC 3339 UTC.
    pub generated_at: String,
    /// Whether a history store is configured.
    pub history_configured: bool,
    /// What was read from history (`null` when not configured).
    pub history: Option<HistorySummary>,
    /// Per-lane health.
    pub lanes: Listed<LaneRow>,
    /// Drift keys that history holds open (reproducing or uncovered).
    pub drift: Listed<DriftRow>,
    /// Issue decisions, newest first.
    pub decisions: Listed<DecisionRow>,
    /// The newest records, newest first.
    pub recent_records: Listed<RecordRow>,
    /// Publication workflow runs, newest first (one row per run: its latest
    /// attempt).
    pub workflow_runs: Listed<RunRow>,
    /// A trend per lane, case and metric; open drift first.
    pub trends: Listed<Trend>,
}

/// How lane coverage was decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Coverage {
    /// From the schedule manifest, as the publisher does.
    Manifest,
    /// No manifest: each lane covers the cases of its latest record.
    LatestRecords,
}

/// What was read from history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HistorySummary {
    /// The branch tip (`null`: the branch does not exist yet).
    pub tip: Option<String>,
    /// Records read and verified.
    pub records: usize,
    /// Record paths on the branch that were not read (over [`MAX_RECORDS`]).
    pub records_not_read: usize,
    /// How coverage was decided.
    pub coverage: Coverage,
    /// Files that did not verify or could not be read, with the reason.
    pub unreadable: Listed<String>,
}

/// A lane's latest record.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LatestRecord {
    /// Its slot, RFC 3339.
    pub slot: String,
    /// Its digest (`sha256:…`).
    pub digest: String,
    /// When it finished.
    pub finished_at: String,
    /// Seconds from `finished_at` to the status time (negative: in the
    /// future; `null`: not a timestamp).
    pub age_seconds: Option<i64>,
    /// The age, for people (`3h 12m`).
    pub age: String,
    /// The subject commit.
    pub commit: String,
    /// Its case outcome counts.
    pub counts: CaseCounts,
}

/// A lane's baseline pointer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BaselineRow {
    /// The baseline record's digest.
    pub record: String,
    /// Its slot.
    pub slot: String,
    /// The policy the pointer was written under (`pinned`, `last-clean`).
    pub policy: String,
}

/// One lane's health.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LaneRow {
    /// The lane.
    pub lane: String,
    /// Whether the manifest declares it (`null`: no manifest given).
    pub in_manifest: Option<bool>,
    /// Its records in history.
    pub records: usize,
    /// Its latest record (`null`: none yet).
    pub latest: Option<LatestRecord>,
    /// Its baseline pointer (`null`: none).
    pub baseline: Option<BaselineRow>,
}

/// The newest evidence of a drift key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Evidence {
    /// Its lane.
    pub lane: String,
    /// Its slot.
    pub slot: String,
    /// The record's digest.
    pub digest: String,
    /// The drift report's summary.
    pub summary: String,
}

/// A drift key history holds open.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DriftRow {
    /// The key in marker form (`<case>/<metric>`).
    pub key: String,
    /// The case.
    pub case: String,
    /// The metric.
    pub metric: String,
    /// The title benchops gives the key's issue.
    pub title: String,
    /// `reproducing` (some covering lane has not cleared it) or `uncovered`
    /// (no lane covers the case any more).
    pub standing: String,
    /// The covering lanes that still reproduce it, in lane order.
    pub reproducing_lanes: Vec<String>,
    /// Records that reported it.
    pub evidence_records: usize,
    /// The slot of the first of them.
    pub first_slot: String,
    /// The newest of them.
    pub latest: Evidence,
}

/// An issue decision, with what history says about its drift.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DecisionRow {
    /// The decision as recorded.
    #[serde(flatten)]
    pub decision: IssueDecision,
    /// The drift key it was matched to (`null`: none).
    pub matched_key: Option<String>,
    /// That key's standing (`reproducing`, `uncovered`, `cleared`).
    pub standing: Option<String>,
    /// The lanes that still reproduce that key.
    pub reproducing_lanes: Vec<String>,
    /// The decision told as one sentence.
    pub sentence: String,
    /// A person closed an issue whose drift still reproduces.
    pub attention: bool,
}

/// One record of history.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RecordRow {
    /// Its lane.
    pub lane: String,
    /// Its slot.
    pub slot: String,
    /// Its digest.
    pub digest: String,
    /// The subject repository.
    pub repository: String,
    /// The subject commit.
    pub commit: String,
    /// Its case outcome counts.
    pub counts: CaseCounts,
    /// Its drift reports.
    pub drift_reports: usize,
    /// The verdict for people (`1 pass, 1 drift, 1 skipped, 1 error`).
    pub verdict: String,
}

/// One publication workflow run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RunRow {
    /// The run as recorded (its latest attempt).
    #[serde(flatten)]
    pub run: WorkflowRunFact,
    /// Its conclusion, or `in progress`.
    pub state: String,
}

/// One point of a trend (the chart renderer's point).
pub use benchops::chart::TrendPoint;

/// The last values of one metric of one case in one lane.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trend {
    /// The lane.
    pub lane: String,
    /// The case.
    pub case: String,
    /// The metric.
    pub metric: String,
    /// Its unit.
    pub unit: String,
    /// `lower_is_better` or `higher_is_better`.
    pub direction: String,
    /// Whether the key is open drift.
    pub drifting: bool,
    /// The baseline's median, when known.
    pub baseline: Option<f64>,
    /// The lane's last records, oldest first.
    pub points: Vec<TrendPoint>,
}

impl Trend {
    /// What its chart draws.
    pub fn chart(&self) -> benchops::chart::Chart<'_> {
        benchops::chart::Chart {
            lane: &self.lane,
            case: &self.case,
            metric: &self.metric,
            unit: &self.unit,
            baseline: self.baseline,
            points: &self.points,
        }
    }
}

/// Why the status could not be collected.
#[derive(Debug)]
pub enum StatusError {
    /// The history store could not be read.
    History(HistoryError),
}

impl fmt::Display for StatusError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StatusError::History(e) => write!(f, "failed to read history: {e}"),
        }
    }
}

impl std::error::Error for StatusError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            StatusError::History(e) => Some(e),
        }
    }
}

impl From<HistoryError> for StatusError {
    fn from(e: HistoryError) -> Self {
        StatusError::History(e)
    }
}

/// Reads history once and derives the status. Fails only when the store
/// itself cannot be read; a file that does not verify is listed in
/// [`HistorySummary::unreadable`] and left out.
pub fn collect(inputs: &StatusInputs<'_>) -> Result<Status, StatusError> {
    collect::collect(inputs)
}

/// The status as a complete HTML document: inline style, no script, every
/// text escaped.
pub fn render_html(status: &Status) -> String {
    html::render(status)
}
