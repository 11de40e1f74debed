//! Lane-aware drift lifecycle scenarios (contract 6, amendment A9) over the
//! pure reconcile logic, applied to an in-memory issue ledger.
//!
//! Every sweep checks, besides the exact actions asserted by the scenario:
//! - idempotence: applying the plan and reconciling again yields nothing;
//! - retries: for every k, applying the first k actions (a crash) and
//!   reconciling again yields exactly the remaining actions, and applying
//!   them gives the same ledger (no duplicate issues or comments).
//!
//! The last scenarios order one instant written two ways, and feed the
//! reconcile records whose summaries forge benchops markers.

use std::collections::{BTreeMap, BTreeSet};

use benchops::manifest::{BaselinePolicy, Labels, Lane, Manifest};
use benchops::num::Finite;
use benchops::reconcile::{
    Action, ActualIssue, CommentMarker, HistoryRecord, IssueState, Note, Plan, RenderOptions,
    closed_marker, evidence_marker, reconcile,
};
use benchops::record::{
    BaselineMetric, Case, CaseCounts, DriftEvidence, DriftReport, Environment, Executor, Metric,
    Outcome, PublicationPlan, RESULT_SCHEMA, ResultRecord, RunCounts, Subject, Summary, Verdict,
};
use benchops::seal::{SealedRecord, seal};
use benchops::{CaseId, LaneName, Sha256Digest};

const BASE: &str = "https://github.com/example/widgets/blob/benchmark-history";

// ---------------------------------------------------------------------------
// Record builder
// ---------------------------------------------------------------------------

#[derive(Clone, Copy)]
enum Spec {
    Pass(f64),
    Drift(f64),
    Skipped,
}

fn f(v: f64) -> Finite {
    Finite::new(v).expect("finite")
}

fn lane(name: &str) -> LaneName {
    LaneName::new(name).expect("lane name")
}

fn case_id(id: &str) -> CaseId {
    CaseId::new(id).expect("case id")
}

fn wall(v: f64) -> Metric {
    Metric {
        name: "wall_s".into(),
        unit: "s".into(),
        direction: benchops::record::Direction::LowerIsBetter,
        samples: vec![Some(f(v)); 3],
        summary: Some(Summary {
            n: 3,
            median: f(v),
            mad: Finite::ZERO,
            min: f(v),
            max: f(v),
            ci: None,
        }),
    }
}

fn build_case(id: &str, spec: Spec) -> Case {
    let ran = RunCounts {
        total: 3,
        succeeded: 3,
        ..RunCounts::default()
    };
    match spec {
        Spec::Pass(v) => Case {
            id: case_id(id),
            outcome: Outcome::Pass,
            skip_reason: None,
            error: None,
            runs: ran,
            metrics: vec![wall(v)],
            drift: None,
        },
        Spec::Drift(v) => Case {
            id: case_id(id),
            outcome: Outcome::Drift,
            skip_reason: None,
            error: None,
            runs: ran,
            metrics: vec![wall(v)],
            drift: Some(DriftEvidence {
                metric: "wall_s".into(),
                baseline: BaselineMetric {
                    record: Sha256Digest::of(b"baseline"),
                    median: f(1.0),
                },
                initial_samples: vec![f(v); 3],
                confirmation_samples: vec![f(v); 3],
                test: "median-ratio".into(),
                threshold: f(0.1),
                statistic: f(v - 1.0),
                verdict: Verdict::Confirmed,
            }),
        },
        Spec::Skipped => Case {
            id: case_id(id),
            outcome: Outcome::Skipped,
            skip_reason: Some("not run this time".into()),
            error: None,
            runs: RunCounts::default(),
            metrics: vec![],
            drift: None,
        },
    }
}

fn build_record(lane_name: &str, slot: &str, cases: &[(&str, Spec)]) -> SealedRecord {
    build_record_with(lane_name, slot, slot, cases, None)
}

/// A record whose `finished_at` is given, and whose drift reports carry
/// `summary` when one is given.
fn build_record_with(
    lane_name: &str,
    slot: &str,
    finished_at: &str,
    cases: &[(&str, Spec)],
    summary: Option<&str>,
) -> SealedRecord {
    let cases: Vec<Case> = cases.iter().map(|(id, s)| build_case(id, *s)).collect();
    let mut runs = RunCounts::default();
    for c in &cases {
        runs.add(&c.runs);
    }
    let drift_reports = cases
        .iter()
        .filter_map(|c| {
            c.drift
                .as_ref()
                .filter(|_| c.outcome == Outcome::Drift)
                .map(|d| DriftReport {
                    case: c.id.clone(),
                    metric: d.metric.clone(),
                    summary: summary.map_or_else(
                        || {
                            format!(
                                "wall_s median {} s vs baseline 1 s",
                                d.confirmation_samples[0]
                            )
                        },
                        str::to_owned,
                    ),
                })
        })
        .collect();
    let cleared = cases
        .iter()
        .filter(|c| c.outcome == Outcome::Pass)
        .map(|c| c.id.clone())
        .collect();
    let record = ResultRecord {
        schema: RESULT_SCHEMA.into(),
        lane: lane(lane_name),
        slot: slot.into(),
        subject: Subject {
            repository: "example/widgets".into(),
            commit: "3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d".into(),
        },
        manifest_digest: Sha256Digest::of(b"manifest"),
        benchmark_digest: Sha256Digest::of(b"benchmark"),
        environment: Environment::from_facts(BTreeMap::from([("os".into(), "linux".into())])),
        executor: Executor::Local {
            host: "bench-01".into(),
        },
        started_at: slot.into(),
        finished_at: finished_at.into(),
        runs,
        case_counts: CaseCounts::of(&cases),
        cases,
        baseline: None,
        publication: PublicationPlan {
            drift_reports,
            cleared,
            baseline_proposal: None,
        },
        comparison: None,
        unscheduled: None,
        skipped: None,
    };
    seal(&record).expect("the builder makes valid records")
}

// ---------------------------------------------------------------------------
// Manifests
// ---------------------------------------------------------------------------

fn lane_def(name: &str, cron: &str, cases: &[&str]) -> Lane {
    Lane {
        name: lane(name),
        cron: cron.into(),
        timezone: "Asia/Jerusalem".into(),
        completion_window_minutes: 50,
        cases: cases.iter().map(|c| (*c).to_owned()).collect(),
        baseline: BaselinePolicy::LastClean,
        comparison: None,
        confirm: None,
        bisect: None,
        catch_up: None,
    }
}

fn manifest(sentinel: &[&str], comprehensive: &[&str]) -> Manifest {
    Manifest {
        schema: "schedule-manifest/v1".into(),
        suite: None,
        build: None,
        gc: None,
        repository: Some("example/widgets".into()),
        labels: Labels::default(),
        signing: None,
        lanes: vec![
            lane_def("sentinel", "0 * * * *", sentinel),
            lane_def("comprehensive", "0 1 * * *", comprehensive),
        ],
    }
}

/// Sentinel covers a subset that does not include `parse/large`.
fn subset_sentinel() -> Manifest {
    manifest(&["parse/small"], &["*"])
}

/// Sentinel covers `parse/large` too.
fn covering_sentinel() -> Manifest {
    manifest(&["parse/small", "parse/large"], &["*"])
}

// ---------------------------------------------------------------------------
// The in-memory ledger
// ---------------------------------------------------------------------------

#[derive(Debug, Clone, PartialEq)]
struct LedgerIssue {
    title: String,
    body: String,
    state: IssueState,
    state_reason: Option<String>,
    labels: BTreeSet<String>,
    comments: Vec<String>,
    /// The id of each comment, parallel to `comments`.
    comment_ids: Vec<u64>,
}

#[derive(Debug, Clone, Default, PartialEq)]
struct Ledger {
    issues: BTreeMap<u64, LedgerIssue>,
    /// The last comment id handed out (ids ascend across the ledger).
    last_comment_id: u64,
}

impl Ledger {
    fn actual(&self) -> Vec<ActualIssue> {
        self.issues
            .iter()
            .map(|(n, i)| {
                ActualIssue::from_body(
                    *n,
                    i.title.clone(),
                    i.body.clone(),
                    i.state,
                    i.state_reason.clone(),
                    i.labels.iter().cloned().collect(),
                )
                .with_comments(i.comment_ids.iter().copied().zip(&i.comments))
            })
            .collect()
    }

    fn get(&mut self, n: u64) -> &mut LedgerIssue {
        self.issues
            .get_mut(&n)
            .expect("the action names an existing issue")
    }

    fn apply(&mut self, a: &Action) {
        match a {
            Action::Open {
                title,
                body,
                labels,
                ..
            } => {
                let n = self.issues.keys().next_back().map_or(1, |n| n + 1);
                self.issues.insert(
                    n,
                    LedgerIssue {
                        title: title.clone(),
                        body: body.clone(),
                        state: IssueState::Open,
                        state_reason: None,
                        labels: labels.iter().cloned().collect(),
                        comments: vec![],
                        comment_ids: vec![],
                    },
                );
            }
            Action::OpenNotice { .. } => panic!("the drift reconcile never opens a notice"),
            Action::AddLabels { issue, labels } => {
                self.get(*issue).labels.extend(labels.iter().cloned());
            }
            Action::Comment {
                issue,
                marker,
                body,
            } => {
                let m = match marker {
                    CommentMarker::Evidence { record } => evidence_marker(record),
                    CommentMarker::Closed { epoch } => closed_marker(epoch),
                };
                assert!(body.contains(&m), "comment body carries its marker");
                self.push_comment(*issue, body.clone());
            }
            Action::DeleteDuplicateComment { issue, comment_id } => {
                let i = self.get(*issue);
                // Deleting a comment that is already gone is not an error.
                if let Some(at) = i.comment_ids.iter().position(|c| c == comment_id) {
                    i.comment_ids.remove(at);
                    i.comments.remove(at);
                }
            }
            Action::UpdateBody { issue, body } => self.get(*issue).body = body.clone(),
            Action::Close { issue, body, .. } => {
                let i = self.get(*issue);
                assert_eq!(i.state, IssueState::Open, "close an open issue");
                i.state = IssueState::Closed;
                i.state_reason = Some("completed".into());
                i.body = body.clone();
            }
            Action::Reopen { issue, body } => {
                let i = self.get(*issue);
                assert_eq!(i.state, IssueState::Closed, "reopen a closed issue");
                i.state = IssueState::Open;
                i.state_reason = Some("reopened".into());
                i.body = body.clone();
            }
            Action::CloseDuplicate { issue, body, .. } => {
                let i = self.get(*issue);
                i.state = IssueState::Closed;
                i.state_reason = Some("duplicate".into());
                i.body = body.clone();
            }
        }
    }

    fn apply_all(&mut self, actions: &[Action]) {
        for a in actions {
            self.apply(a);
        }
    }

    fn human_close(&mut self, n: u64, reason: &str) {
        let i = self.get(n);
        i.state = IssueState::Closed;
        i.state_reason = Some(reason.into());
    }

    fn push_comment(&mut self, n: u64, body: String) -> u64 {
        self.last_comment_id += 1;
        let id = self.last_comment_id;
        let i = self.get(n);
        i.comments.push(body);
        i.comment_ids.push(id);
        id
    }

    fn human_reopen(&mut self, n: u64) {
        let i = self.get(n);
        i.state = IssueState::Open;
        i.state_reason = Some("reopened".into());
    }

    fn human_label(&mut self, n: u64, label: &str) {
        self.get(n).labels.insert(label.into());
    }
}

// ---------------------------------------------------------------------------
// The world: manifest, history, ledger
// ---------------------------------------------------------------------------

struct World {
    manifest: Manifest,
    records: Vec<SealedRecord>,
    names: BTreeMap<Sha256Digest, String>,
    ledger: Ledger,
    options: RenderOptions,
    last: Plan,
}

impl World {
    fn new(manifest: Manifest) -> Self {
        Self {
            manifest,
            records: vec![],
            names: BTreeMap::new(),
            ledger: Ledger::default(),
            options: RenderOptions::new(BASE),
            last: Plan::default(),
        }
    }

    fn add(
        &mut self,
        name: &str,
        lane_name: &str,
        slot: &str,
        cases: &[(&str, Spec)],
    ) -> Sha256Digest {
        self.add_sealed(name, build_record(lane_name, slot, cases))
    }

    fn add_sealed(&mut self, name: &str, r: SealedRecord) -> Sha256Digest {
        let d = r.digest();
        self.names.insert(d, name.into());
        self.records.push(r);
        d
    }

    fn plan_for(&self, ledger: &Ledger) -> Plan {
        let history: Vec<HistoryRecord<'_>> =
            self.records.iter().map(HistoryRecord::from).collect();
        reconcile(&self.manifest, &history, &ledger.actual(), &self.options)
    }

    /// Reconciles and applies, checking idempotence and every crash point.
    fn sweep(&mut self) -> Vec<String> {
        let plan = self.plan_for(&self.ledger);
        let n = plan.actions.len();
        let mut full = self.ledger.clone();
        full.apply_all(&plan.actions);
        let again = self.plan_for(&full);
        assert!(
            again.actions.is_empty(),
            "not idempotent; second pass: {:?}",
            self.describe(&again)
        );
        for k in 0..n {
            let mut partial = self.ledger.clone();
            partial.apply_all(&plan.actions[..k]);
            let retry = self.plan_for(&partial);
            assert_eq!(
                retry.actions,
                plan.actions[k..],
                "after a crash at action {k} of {n}, the retry must be the rest of the plan"
            );
            partial.apply_all(&retry.actions);
            assert_eq!(partial, full, "retry after {k} of {n} actions diverged");
        }
        self.ledger = full;
        let described = self.describe(&plan);
        self.last = plan;
        described
    }

    fn name(&self, d: &Sha256Digest) -> String {
        self.names.get(d).cloned().unwrap_or_else(|| d.to_string())
    }

    fn describe(&self, plan: &Plan) -> Vec<String> {
        plan.actions
            .iter()
            .map(|a| match a {
                Action::Open { key, labels, .. } => {
                    format!("open {} [{}]", key.marker_value(), labels.join(", "))
                }
                Action::OpenNotice { title, .. } => format!("open notice {title}"),
                Action::AddLabels { issue, labels } => {
                    format!("label #{issue} [{}]", labels.join(", "))
                }
                Action::Comment { issue, marker, .. } => match marker {
                    CommentMarker::Evidence { record } => {
                        format!("comment #{issue} evidence {}", self.name(record))
                    }
                    CommentMarker::Closed { epoch } => {
                        format!("comment #{issue} closed {}", self.name(epoch))
                    }
                },
                Action::UpdateBody { issue, .. } => format!("update #{issue}"),
                Action::Close {
                    issue, clearing, ..
                } => format!(
                    "close #{issue} by [{}]",
                    clearing
                        .iter()
                        .map(|r| format!("{} {}", r.lane, self.name(&r.digest)))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                Action::Reopen { issue, .. } => format!("reopen #{issue}"),
                Action::DeleteDuplicateComment { issue, comment_id } => {
                    format!("delete-comment #{issue} {comment_id}")
                }
                Action::CloseDuplicate {
                    issue, canonical, ..
                } => format!("close-duplicate #{issue} of #{canonical}"),
            })
            .collect()
    }

    fn issue(&self, n: u64) -> &LedgerIssue {
        self.ledger.issues.get(&n).expect("issue exists")
    }
}

fn key(case: &str) -> benchops::reconcile::DriftKey {
    benchops::reconcile::DriftKey::new(case_id(case), "wall_s")
}

// ---------------------------------------------------------------------------
// Scenarios
// ---------------------------------------------------------------------------

#[test]
fn comprehensive_only_drift_opens_one_issue() {
    let mut w = World::new(subset_sentinel());
    let c1 = w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[
            ("parse/small", Spec::Pass(1.0)),
            ("parse/large", Spec::Drift(1.3)),
        ],
    );
    assert_eq!(
        w.sweep(),
        ["open parse/large/wall_s [benchmark-drift, lane:comprehensive]"]
    );
    let i = w.issue(1);
    assert_eq!(i.title, "Benchmark drift: parse/large wall_s");
    assert_eq!(i.state, IssueState::Open);
    assert!(i.comments.is_empty(), "the opening announces the evidence");
    let body = &i.body;
    for want in [
        "<!-- benchops:drift key=parse/large/wall_s -->".to_owned(),
        format!("<!-- benchops:state open epoch={c1} -->"),
        evidence_marker(&c1),
        "**Open.** Held open by `comprehensive`".to_owned(),
        "| `sentinel` | no | — | — | — |".to_owned(),
        format!(
            "| `comprehensive` | yes | 2026-11-01T01:00:00Z [`{}`]({BASE}/results/comprehensive/2026/11/20261101T010000Z--{}.json) | yes | not yet |",
            &c1.hex()[..12],
            c1.hex()
        ),
        "| 2026-11-01T01:00:00Z | `comprehensive` |".to_owned(),
        "| 1.3 s | 1 s | wall_s median 1.3 s vs baseline 1 s |".to_owned(),
        "```mermaid\nxychart-beta\n".to_owned(),
        "    x-axis [\"11-01 01:00 comprehensive\"]\n".to_owned(),
        "    y-axis \"wall_s (s)\"\n    line [1.3]\n    line [1]\n```".to_owned(),
    ] {
        assert!(body.contains(&want), "body lacks {want:?}:\n{body}");
    }
    assert!(w.last.notes.is_empty());
}

#[test]
fn drift_cleared_before_it_was_announced_opens_nothing() {
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert!(w.sweep().is_empty());
    assert!(w.ledger.issues.is_empty());
}

#[test]
fn sentinel_pass_that_does_not_cover_the_case_does_not_close_it() {
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    for (name, slot) in [
        ("S1", "2026-11-01T02:00:00Z"),
        ("S2", "2026-11-01T03:00:00Z"),
    ] {
        w.add(name, "sentinel", slot, &[("parse/small", Spec::Pass(1.0))]);
        assert!(w.sweep().is_empty(), "a non-covering lane changes nothing");
    }
    // Even a sentinel record that happens to pass the case does not count
    // while the sentinel does not cover it.
    w.add(
        "S3",
        "sentinel",
        "2026-11-01T04:00:00Z",
        &[
            ("parse/small", Spec::Pass(1.0)),
            ("parse/large", Spec::Pass(1.0)),
        ],
    );
    assert!(w.sweep().is_empty());
    assert_eq!(w.issue(1).state, IssueState::Open);
}

#[test]
fn covering_sentinel_pass_does_not_close_while_comprehensive_still_drifts() {
    let mut w = World::new(covering_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    w.add(
        "S1",
        "sentinel",
        "2026-11-01T02:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert_eq!(w.sweep(), ["update #1"], "only the lane table changes");
    assert!(
        w.issue(1)
            .body
            .contains("**Open.** Held open by `comprehensive`")
    );
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Drift(1.31))],
    );
    assert_eq!(w.sweep(), ["comment #1 evidence C2", "update #1"]);
    w.add(
        "S2",
        "sentinel",
        "2026-11-02T02:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert_eq!(w.sweep(), ["update #1"]);
    let i = w.issue(1);
    assert_eq!(i.state, IssueState::Open);
    assert_eq!(
        i.comments.len(),
        1,
        "one comment, for the one new evidence record"
    );
    assert!(
        i.comments[0]
            .contains("The drift reproduced in lane `comprehensive`, slot 2026-11-02T01:00:00Z")
    );
    assert!(i.body.contains("line [1.3, 1.31]"));
}

#[test]
fn both_lanes_clear_closes_with_each_clearing_record() {
    let mut w = World::new(covering_sentinel());
    let c1 = w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    let s1 = w.add(
        "S1",
        "sentinel",
        "2026-11-01T02:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    w.sweep();
    let c2 = w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert_eq!(
        w.sweep(),
        [
            "close #1 by [sentinel S1, comprehensive C2]",
            "comment #1 closed C1"
        ]
    );
    let i = w.issue(1);
    assert_eq!(i.state, IssueState::Closed);
    assert_eq!(i.state_reason.as_deref(), Some("completed"));
    assert!(
        i.body
            .contains(&format!("<!-- benchops:state closed epoch={c1} -->"))
    );
    let closing = &i.comments[0];
    for (lane_name, slot, d) in [
        ("sentinel", "2026-11-01T02:00:00Z", s1),
        ("comprehensive", "2026-11-02T01:00:00Z", c2),
    ] {
        let row = format!(
            "| `{lane_name}` | {slot} | [`{}`]({BASE}/results/{lane_name}/2026/11/{}--{}.json) `{d}` |",
            &d.hex()[..12],
            benchops::reconcile::compact_slot(slot),
            d.hex()
        );
        assert!(
            closing.contains(&row),
            "closing comment lacks {row}:\n{closing}"
        );
    }
    // Later passes change nothing on a closed issue.
    w.add(
        "S2",
        "sentinel",
        "2026-11-02T02:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert!(w.sweep().is_empty());
}

#[test]
fn a_lane_that_stops_covering_the_case_stops_holding_it_open() {
    let mut w = World::new(covering_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    assert_eq!(
        w.sweep(),
        ["open parse/large/wall_s [benchmark-drift, lane:comprehensive]"]
    );
    w.add(
        "S1",
        "sentinel",
        "2026-11-01T02:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    assert_eq!(
        w.sweep(),
        [
            "label #1 [lane:sentinel]",
            "comment #1 evidence S1",
            "update #1"
        ]
    );
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert_eq!(w.sweep(), ["update #1"], "the sentinel still holds it open");
    assert!(w.issue(1).body.contains("Held open by `sentinel`"));

    w.manifest = subset_sentinel();
    assert_eq!(
        w.sweep(),
        ["close #1 by [comprehensive C2]", "comment #1 closed S1"]
    );
    assert_eq!(w.issue(1).state, IssueState::Closed);
}

#[test]
fn no_covering_lane_keeps_the_issue_open_and_says_so() {
    let mut w = World::new(covering_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    w.manifest = manifest(&["parse/small"], &["parse/small"]);
    assert_eq!(w.sweep(), ["update #1"]);
    assert_eq!(
        w.last.notes,
        [Note::Uncovered {
            key: key("parse/large"),
            issue: Some(1)
        }]
    );
    let i = w.issue(1);
    assert_eq!(i.state, IssueState::Open);
    assert!(
        i.body
            .contains("No lane in the schedule manifest covers `parse/large` any more")
    );
    assert!(i.body.contains("`drift-accepted`"));
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/small", Spec::Pass(1.0))],
    );
    assert!(w.sweep().is_empty(), "absence of evidence never closes it");

    // A drift first seen after nothing covers its case still opens.
    let mut w = World::new(manifest(&["parse/small"], &["parse/small"]));
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    assert_eq!(
        w.sweep(),
        ["open parse/large/wall_s [benchmark-drift, lane:comprehensive]"]
    );
    assert_eq!(
        w.last.notes,
        [Note::Uncovered {
            key: key("parse/large"),
            issue: None
        }]
    );
}

#[test]
fn drift_clear_drift_again_reopens() {
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert_eq!(
        w.sweep(),
        ["close #1 by [comprehensive C2]", "comment #1 closed C1"]
    );
    let c3 = w.add(
        "C3",
        "comprehensive",
        "2026-11-03T01:00:00Z",
        &[("parse/large", Spec::Drift(1.4))],
    );
    assert_eq!(w.sweep(), ["reopen #1", "comment #1 evidence C3"]);
    let i = w.issue(1);
    assert_eq!(i.state, IssueState::Open);
    assert!(
        i.body
            .contains(&format!("<!-- benchops:state open epoch={c3} -->"))
    );
    w.add(
        "C4",
        "comprehensive",
        "2026-11-04T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert_eq!(
        w.sweep(),
        ["close #1 by [comprehensive C4]", "comment #1 closed C3"]
    );
    assert_eq!(w.issue(1).comments.len(), 3);
    assert_eq!(w.ledger.issues.len(), 1, "one issue per key, ever");
}

#[test]
fn drift_accepted_label_stops_comments_and_reopening() {
    // Open and accepted: new evidence is not announced.
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    w.ledger.human_label(1, "drift-accepted");
    let c2 = w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    assert!(w.sweep().is_empty());
    assert_eq!(
        w.last.notes,
        [Note::Accepted {
            key: key("parse/large"),
            issue: 1,
            suppressed: vec![c2]
        }]
    );
    // Clearing does not close it either: benchops leaves accepted issues alone.
    w.add(
        "C3",
        "comprehensive",
        "2026-11-03T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert!(w.sweep().is_empty());
    assert_eq!(w.issue(1).state, IssueState::Open);
    assert!(w.issue(1).comments.is_empty());

    // Closed and accepted: the drift returning does not reopen it.
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    w.sweep();
    w.ledger.human_label(1, "drift-accepted");
    let before = w.issue(1).clone();
    w.add(
        "C3",
        "comprehensive",
        "2026-11-03T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    assert!(w.sweep().is_empty());
    assert_eq!(w.issue(1), &before);
}

#[test]
fn a_custom_accepted_label_is_honoured() {
    let mut m = subset_sentinel();
    m.labels.accepted = "perf-ok".into();
    let mut w = World::new(m);
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    w.ledger.human_label(1, "perf-ok");
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    assert!(w.sweep().is_empty());
}

#[test]
fn an_issue_closed_by_a_person_is_not_reopened() {
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    w.ledger.human_close(1, "not_planned");
    assert!(w.sweep().is_empty(), "no new evidence: nothing to say");
    assert_eq!(
        w.last.notes,
        [Note::ClosedByHuman {
            key: key("parse/large"),
            issue: 1
        }]
    );
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    assert_eq!(w.sweep(), ["comment #1 evidence C2"]);
    let i = w.issue(1);
    assert_eq!(i.state, IssueState::Closed);
    assert_eq!(i.state_reason.as_deref(), Some("not_planned"));
    assert!(i.comments[0].contains("The drift reproduced again"));
    assert!(i.comments[0].contains("closed by a person, so benchops leaves it closed"));
    w.add(
        "C3",
        "comprehensive",
        "2026-11-03T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    assert_eq!(
        w.sweep(),
        ["comment #1 evidence C3"],
        "one comment per new evidence record"
    );

    // Reopening hands it back to benchops.
    w.ledger.human_reopen(1);
    w.add(
        "C4",
        "comprehensive",
        "2026-11-04T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert_eq!(
        w.sweep(),
        ["close #1 by [comprehensive C4]", "comment #1 closed C3"]
    );
}

#[test]
fn an_issue_reopened_by_a_person_is_not_closed_again_for_the_same_drift() {
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    w.sweep();
    w.ledger.human_reopen(1);
    assert!(w.sweep().is_empty());
    assert_eq!(
        w.last.notes,
        [Note::HeldOpenByHuman {
            key: key("parse/large"),
            issue: 1
        }]
    );
    w.add(
        "C3",
        "comprehensive",
        "2026-11-03T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert!(w.sweep().is_empty());
    // New evidence: benchops owns the issue again, and closes it once cleared.
    w.add(
        "C4",
        "comprehensive",
        "2026-11-04T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    assert_eq!(w.sweep(), ["comment #1 evidence C4", "update #1"]);
    w.add(
        "C5",
        "comprehensive",
        "2026-11-05T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert_eq!(
        w.sweep(),
        ["close #1 by [comprehensive C5]", "comment #1 closed C4"]
    );
}

#[test]
fn late_older_evidence_on_a_closed_issue_is_announced_without_reopening() {
    let mut w = World::new(covering_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    w.add(
        "S1",
        "sentinel",
        "2026-11-01T02:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert_eq!(
        w.sweep(),
        [
            "close #1 by [sentinel S1, comprehensive C2]",
            "comment #1 closed C1"
        ]
    );
    // A sentinel handoff for an earlier slot arrives late.
    w.add(
        "S0",
        "sentinel",
        "2026-11-01T00:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    assert_eq!(
        w.sweep(),
        ["label #1 [lane:sentinel]", "comment #1 evidence S0"]
    );
    assert_eq!(w.issue(1).state, IssueState::Closed);
}

#[test]
fn drift_and_clearing_in_one_sweep_on_a_closed_issue_is_announced_and_stays_closed() {
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    w.sweep();
    let c3 = w.add(
        "C3",
        "comprehensive",
        "2026-11-03T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.add(
        "C4",
        "comprehensive",
        "2026-11-04T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert_eq!(
        w.sweep(),
        [
            "comment #1 evidence C3",
            "update #1",
            "comment #1 closed C3"
        ]
    );
    let i = w.issue(1);
    assert_eq!(i.state, IssueState::Closed);
    assert!(
        i.body
            .contains(&format!("<!-- benchops:state closed epoch={c3} -->"))
    );
}

#[test]
fn racing_sweeps_that_both_opened_converge_on_the_oldest_issue() {
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    let plan = w.plan_for(&w.ledger);
    w.ledger.apply_all(&plan.actions);
    w.ledger.apply_all(&plan.actions); // the second sweep read the state before the first wrote
    assert_eq!(w.ledger.issues.len(), 2);
    assert_eq!(w.sweep(), ["close-duplicate #2 of #1"]);
    assert_eq!(
        w.last.notes,
        [Note::Duplicates {
            key: key("parse/large"),
            canonical: 1,
            others: vec![2]
        }]
    );
    let dup = w.issue(2);
    assert_eq!(dup.state_reason.as_deref(), Some("duplicate"));
    assert!(!dup.body.contains("benchops:drift"));
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    assert_eq!(w.sweep(), ["comment #1 evidence C2", "update #1"]);
}

#[test]
fn retry_after_partial_application_converges_on_a_busy_sweep() {
    // Four keys, each in a different phase, all changing in one sweep; `sweep`
    // replays every crash point of the plan.
    let mut w = World::new(covering_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[
            ("parse/large", Spec::Drift(1.3)),
            ("render/big", Spec::Drift(1.2)),
            ("render/small", Spec::Drift(1.2)),
        ],
    );
    assert_eq!(
        w.sweep(),
        [
            "open parse/large/wall_s [benchmark-drift, lane:comprehensive]",
            "open render/big/wall_s [benchmark-drift, lane:comprehensive]",
            "open render/small/wall_s [benchmark-drift, lane:comprehensive]",
        ]
    );
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[
            ("parse/large", Spec::Drift(1.3)),
            ("render/big", Spec::Pass(1.0)),
            ("render/small", Spec::Drift(1.2)),
        ],
    );
    assert_eq!(
        w.sweep(),
        [
            "comment #1 evidence C2",
            "update #1",
            "close #2 by [comprehensive C2]",
            "comment #2 closed C1",
            "comment #3 evidence C2",
            "update #3",
        ]
    );
    // The busy batch: parse/large gets sentinel evidence then clears in both
    // lanes; render/big drifts again; render/small clears; parse/small is new.
    w.add(
        "S1",
        "sentinel",
        "2026-11-02T02:00:00Z",
        &[
            ("parse/small", Spec::Drift(1.5)),
            ("parse/large", Spec::Drift(1.3)),
        ],
    );
    w.add(
        "C3",
        "comprehensive",
        "2026-11-03T01:00:00Z",
        &[
            ("parse/small", Spec::Skipped),
            ("parse/large", Spec::Pass(1.0)),
            ("render/big", Spec::Drift(1.25)),
            ("render/small", Spec::Pass(1.0)),
        ],
    );
    w.add(
        "S2",
        "sentinel",
        "2026-11-03T02:00:00Z",
        &[
            ("parse/small", Spec::Drift(1.5)),
            ("parse/large", Spec::Pass(1.0)),
        ],
    );
    assert_eq!(
        w.sweep(),
        [
            "label #1 [lane:sentinel]",
            "comment #1 evidence S1",
            "close #1 by [sentinel S2, comprehensive C3]",
            "comment #1 closed S1",
            "open parse/small/wall_s [benchmark-drift, lane:sentinel]",
            "reopen #2",
            "comment #2 evidence C3",
            "close #3 by [comprehensive C3]",
            "comment #3 closed C2",
        ]
    );
    assert_eq!(w.ledger.issues.len(), 4);
    let comments: usize = w.ledger.issues.values().map(|i| i.comments.len()).sum();
    assert_eq!(comments, 7);
}

#[test]
fn the_plan_does_not_depend_on_input_order_or_repeats() {
    let mut w = World::new(covering_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.add(
        "S1",
        "sentinel",
        "2026-11-01T02:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    // Same slot: finished_at, then digest, decide; fractional seconds compare
    // as instants.
    w.add(
        "S2",
        "sentinel",
        "2026-11-01T02:00:00.5Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    let history: Vec<HistoryRecord<'_>> = w.records.iter().map(HistoryRecord::from).collect();
    let issues = w.ledger.actual();
    let a = reconcile(&w.manifest, &history, &issues, &w.options);
    let mut shuffled: Vec<HistoryRecord<'_>> = history.iter().rev().copied().collect();
    shuffled.extend(history.iter().copied());
    let rev_issues: Vec<ActualIssue> = issues.iter().rev().cloned().collect();
    let b = reconcile(&w.manifest, &shuffled, &rev_issues, &w.options);
    assert_eq!(a, b);
    assert_eq!(
        w.describe(&a),
        [
            "close #1 by [sentinel S2, comprehensive C2]",
            "comment #1 closed S1"
        ]
    );
}

#[test]
fn a_case_that_drifts_on_another_metric_or_is_skipped_does_not_clear() {
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Skipped)],
    );
    assert_eq!(w.sweep(), ["update #1"]);
    assert!(
        w.issue(1)
            .body
            .contains("| not measured (skipped) | not yet |")
    );
    w.add(
        "C3",
        "comprehensive",
        "2026-11-03T01:00:00Z",
        &[("parse/small", Spec::Pass(1.0))],
    );
    assert_eq!(w.sweep(), ["update #1"]);
    assert!(w.issue(1).body.contains("| not in record | not yet |"));
    assert_eq!(w.issue(1).state, IssueState::Open);
}

#[test]
fn issues_for_unknown_keys_and_foreign_issues_are_left_alone() {
    let mut w = World::new(subset_sentinel());
    w.ledger.issues.insert(
        7,
        LedgerIssue {
            title: "unrelated".into(),
            body: "no markers here".into(),
            state: IssueState::Open,
            state_reason: None,
            labels: BTreeSet::new(),
            comments: vec![],
            comment_ids: vec![],
        },
    );
    w.ledger.issues.insert(
        8,
        LedgerIssue {
            title: "old".into(),
            body: "<!-- benchops:drift key=gone/wall_s -->".into(),
            state: IssueState::Open,
            state_reason: None,
            labels: BTreeSet::new(),
            comments: vec![],
            comment_ids: vec![],
        },
    );
    assert!(w.sweep().is_empty());
    assert_eq!(
        w.last.notes,
        [Note::UnknownKey {
            key: key("gone"),
            issue: 8
        }]
    );
}

#[test]
fn racing_sweeps_duplicate_comments_are_deleted_keeping_the_earliest() {
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    w.add(
        "C2",
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Drift(1.31))],
    );
    // Two sweeps plan against the same ledger and both post the comment.
    let plan = w.plan_for(&w.ledger);
    w.ledger.apply_all(&plan.actions);
    w.ledger.apply_all(&plan.actions);
    let i = w.issue(1);
    assert_eq!(i.comments.len(), 2);
    assert_eq!(i.comments[0], i.comments[1], "the same comment twice");
    let (first, second) = (i.comment_ids[0], i.comment_ids[1]);
    assert!(first < second);

    // One delete, of the later copy; then nothing (checked by `sweep`).
    assert_eq!(w.sweep(), [format!("delete-comment #1 {second}")]);
    assert_eq!(w.issue(1).comment_ids, [first]);
    assert!(w.sweep().is_empty());

    // A person's comments are never counted, so never deleted; a repeated
    // closing comment is deleted like an evidence one.
    w.add(
        "C3",
        "comprehensive",
        "2026-11-03T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    let plan = w.plan_for(&w.ledger);
    w.ledger.apply_all(&plan.actions);
    let closing = w
        .issue(1)
        .comments
        .last()
        .cloned()
        .expect("closing comment");
    let again = w.ledger.push_comment(1, closing);
    assert_eq!(w.sweep(), [format!("delete-comment #1 {again}")]);
    assert!(w.sweep().is_empty());
    assert_eq!(w.issue(1).comments.len(), 2, "evidence C2 and the closing");
}

// ---------------------------------------------------------------------------
// Instants written two ways, and text from records
// ---------------------------------------------------------------------------

#[test]
fn a_same_slot_rerun_written_with_milliseconds_that_still_reproduces_does_not_close() {
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    // The next night's slot runs twice: a run that passed, then a rerun
    // that finished later and still drifts. The rerun's slot is the same
    // instant written with milliseconds, which sorts first as text.
    w.add_sealed(
        "C2",
        build_record_with(
            "comprehensive",
            "2026-11-02T01:00:00Z",
            "2026-11-02T02:00:00Z",
            &[("parse/large", Spec::Pass(1.0))],
            None,
        ),
    );
    w.add_sealed(
        "C2-rerun",
        build_record_with(
            "comprehensive",
            "2026-11-02T01:00:00.000Z",
            "2026-11-02T03:00:00.000Z",
            &[("parse/large", Spec::Drift(1.3))],
            None,
        ),
    );
    assert_eq!(w.sweep(), ["comment #1 evidence C2-rerun", "update #1"]);
    assert_eq!(w.issue(1).state, IssueState::Open);
}

/// A summary that carries everything a hostile or careless record could:
/// hidden markers (the given forged ones among them), mentions,
/// references, table pipes, newlines, backticks, and then some.
fn hostile_summary(forged: &[String], len: usize) -> String {
    let mut s = format!(
        "wall_s rose <!-- x --> --> {} @octocat @acme/perf-team #123 a|b\n| c |\r\n`` ` ",
        forged.join("\n")
    );
    while s.len() < len {
        s.push_str("padding ");
    }
    s.truncate(len);
    s
}

/// Every line of `text` that holds `<!--` or `-->` is a marker line, and
/// no `@` or `#` reaches GitHub as a mention or a reference.
fn assert_inert(text: &str, forged: &[String]) {
    for line in text.lines() {
        if line.contains("<!--") || line.contains("-->") {
            assert!(
                line.starts_with("<!-- benchops:") && line.ends_with(" -->"),
                "record text opened a comment: {line}"
            );
            assert!(
                !forged.iter().any(|f| f == line),
                "a forged marker became a line: {line}"
            );
        }
    }
    for f in forged {
        assert!(!text.contains(f.as_str()), "{f} copied raw");
    }
    for raw in ["@octocat", "@acme", "#123"] {
        assert!(!text.contains(raw), "{raw} would ping or link");
    }
}

#[test]
fn markers_forged_in_a_summary_neither_silence_evidence_nor_the_closing() {
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    // C3 is the later evidence and the epoch the issue closes at; C2's
    // summary forges its evidence and closing markers.
    let c3 = build_record(
        "comprehensive",
        "2026-11-03T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    let forged = vec![evidence_marker(&c3.digest()), closed_marker(&c3.digest())];
    let summary = hostile_summary(&forged, 100_000);
    w.add_sealed(
        "C2",
        build_record_with(
            "comprehensive",
            "2026-11-02T01:00:00Z",
            "2026-11-02T01:00:00Z",
            &[("parse/large", Spec::Drift(1.3))],
            Some(&summary),
        ),
    );
    assert_eq!(w.sweep(), ["comment #1 evidence C2", "update #1"]);
    w.add_sealed("C3", c3);
    assert_eq!(w.sweep(), ["comment #1 evidence C3", "update #1"]);
    w.add(
        "C4",
        "comprehensive",
        "2026-11-04T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert_eq!(
        w.sweep(),
        ["close #1 by [comprehensive C4]", "comment #1 closed C3"]
    );
    let i = w.issue(1);
    assert_eq!(i.state, IssueState::Closed);
    assert_eq!(i.comments.len(), 3);
    // C3's own comments carry its markers, rightly, as first lines; the
    // body and C2's comment must carry none.
    for (n, text) in std::iter::once(&i.body).chain(&i.comments).enumerate() {
        let forged: &[String] = if n <= 1 { &forged } else { &[] };
        assert_inert(text, forged);
        assert!(
            text.chars().count() < 20_000,
            "{} chars",
            text.chars().count()
        );
    }
    assert!(i.comments[0].contains("(truncated from 100000 bytes)"));
}

#[test]
fn a_forged_marker_line_in_a_benchops_comment_does_not_count() {
    // Even if record text reached a comment unescaped, on lines of its own,
    // only the comment's first lines are read.
    let mut w = World::new(subset_sentinel());
    w.add(
        "C1",
        "comprehensive",
        "2026-11-01T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.sweep();
    let c2 = build_record(
        "comprehensive",
        "2026-11-02T01:00:00Z",
        &[("parse/large", Spec::Drift(1.3))],
    );
    w.ledger.push_comment(
        1,
        format!(
            "{}\nThe drift reproduced: copied text\n{}\n{}\n",
            evidence_marker(&Sha256Digest::of(b"other")),
            evidence_marker(&c2.digest()),
            closed_marker(&c2.digest())
        ),
    );
    w.add_sealed("C2", c2);
    assert_eq!(w.sweep(), ["comment #1 evidence C2", "update #1"]);
    w.add(
        "C3",
        "comprehensive",
        "2026-11-03T01:00:00Z",
        &[("parse/large", Spec::Pass(1.0))],
    );
    assert_eq!(
        w.sweep(),
        ["close #1 by [comprehensive C3]", "comment #1 closed C2"]
    );
}
