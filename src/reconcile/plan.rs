//! The plan: the [`Action`]s that move the actual issues to the state
//! history asks for, and the [`Note`]s a person may want to read
//! ([`reconcile`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::digest::Sha256Digest;
use crate::manifest::{Labels, Manifest};
use crate::names::LaneName;

use super::markers::{ActualIssue, CommentMarker};
use super::render::{
    RenderOptions, render_closing_comment, render_duplicate_body, render_evidence_comment,
    render_issue_body, render_title,
};
use super::status::{DriftStatus, EvidenceEntry, Standing, drift_statuses};
use super::{DriftKey, HistoryRecord, IssueState, RecordRef};

/// One write. Each is exactly one request to the issue tracker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Create an open issue with this body and these labels.
    Open {
        /// The key (in the body's drift marker too).
        key: DriftKey,
        /// Title.
        title: String,
        /// Body.
        body: String,
        /// Labels, sorted.
        labels: Vec<String>,
    },
    /// Create an open issue that tracks no drift key (a missed-run issue,
    /// [`crate::watchdog::plan_missed_runs`]); its body carries its own
    /// marker.
    OpenNotice {
        /// Title.
        title: String,
        /// Body.
        body: String,
        /// Labels, sorted.
        labels: Vec<String>,
    },
    /// Add labels (never removes any).
    AddLabels {
        /// The issue.
        issue: u64,
        /// The missing labels, sorted.
        labels: Vec<String>,
    },
    /// Post a comment (its body contains the marker).
    Comment {
        /// The issue.
        issue: u64,
        /// What the comment's marker records.
        marker: CommentMarker,
        /// Comment text.
        body: String,
    },
    /// Replace the body, state unchanged.
    UpdateBody {
        /// The issue.
        issue: u64,
        /// The new body.
        body: String,
    },
    /// Set state closed (reason `completed`) and the body, in one request.
    Close {
        /// The issue.
        issue: u64,
        /// Each covering lane's clearing record.
        clearing: Vec<RecordRef>,
        /// The new body (state marker `closed`; lists the clearing records).
        body: String,
    },
    /// Set state open and the body, in one request.
    Reopen {
        /// The issue.
        issue: u64,
        /// The new body (state marker `open`).
        body: String,
    },
    /// Delete a comment benchops wrote that repeats the marker of an
    /// earlier one (two racing sweeps both posted it).
    DeleteDuplicateComment {
        /// The issue.
        issue: u64,
        /// The comment to delete (never the earliest carrying its marker).
        comment_id: u64,
    },
    /// Set state closed (reason `duplicate`) and a body without the drift
    /// marker, in one request.
    CloseDuplicate {
        /// The duplicate.
        issue: u64,
        /// The issue that tracks the key.
        canonical: u64,
        /// The new body.
        body: String,
    },
}

/// Something a person may want to know; nothing is written for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The issue is accepted: these evidence records were not announced.
    Accepted {
        /// The key.
        key: DriftKey,
        /// The issue.
        issue: u64,
        /// Unannounced evidence, in record order.
        suppressed: Vec<Sha256Digest>,
    },
    /// A person closed the issue and the drift is not cleared; benchops
    /// comments on new evidence but leaves it closed.
    ClosedByHuman {
        /// The key.
        key: DriftKey,
        /// The issue.
        issue: u64,
    },
    /// A person reopened what benchops closed; benchops will not close it
    /// again for the same epoch.
    HeldOpenByHuman {
        /// The key.
        key: DriftKey,
        /// The issue.
        issue: u64,
    },
    /// No lane covers the case; the issue stays open.
    Uncovered {
        /// The key.
        key: DriftKey,
        /// The issue (`None`: opened by this plan).
        issue: Option<u64>,
    },
    /// More than one issue carries the key.
    Duplicates {
        /// The key.
        key: DriftKey,
        /// The issue that tracks it (the lowest number).
        canonical: u64,
        /// The others.
        others: Vec<u64>,
    },
    /// An issue names a key with no evidence in history; left alone.
    UnknownKey {
        /// The key.
        key: DriftKey,
        /// The issue.
        issue: u64,
    },
}

/// The result of [`reconcile`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Writes, in the order to apply them.
    pub actions: Vec<Action>,
    /// Information, in key order.
    pub notes: Vec<Note>,
}

/// How an existing canonical issue stands.
enum Ownership {
    /// Open and benchops may manage it.
    Open,
    /// Closed by benchops at an epoch.
    Closed(Sha256Digest),
    /// Closed by a person.
    HumanClosed,
    /// Reopened by a person after benchops closed it for this same epoch.
    HeldOpen,
}

/// Computes the writes that bring `issues` in line with `history` under
/// `manifest`. See the module documentation for the state machine.
pub fn reconcile(
    manifest: &Manifest,
    history: &[HistoryRecord<'_>],
    issues: &[ActualIssue],
    options: &RenderOptions,
) -> Plan {
    let statuses: BTreeMap<DriftKey, DriftStatus> = drift_statuses(manifest, history)
        .into_iter()
        .map(|s| (s.key.clone(), s))
        .collect();
    let mut groups: BTreeMap<&DriftKey, Vec<&ActualIssue>> = BTreeMap::new();
    for issue in issues {
        if let Some(key) = &issue.key {
            groups.entry(key).or_default().push(issue);
        }
    }
    for g in groups.values_mut() {
        g.sort_by_key(|i| i.number);
        g.dedup_by_key(|i| i.number);
    }
    let keys: BTreeSet<&DriftKey> = statuses.keys().chain(groups.keys().copied()).collect();

    let mut plan = Plan::default();
    let mut cx = Cx {
        labels: &manifest.labels,
        options,
        plan: &mut plan,
    };
    for key in keys {
        let group = groups.get(key).map(Vec::as_slice).unwrap_or_default();
        let Some(status) = statuses.get(key) else {
            for issue in group {
                cx.plan.notes.push(Note::UnknownKey {
                    key: key.clone(),
                    issue: issue.number,
                });
            }
            continue;
        };
        match group.split_first() {
            None => cx.no_issue(status),
            Some((canonical, others)) => {
                cx.existing(status, canonical);
                cx.duplicate_comments(canonical);
                cx.duplicates(key, canonical.number, others);
            }
        }
    }
    plan
}

struct Cx<'a> {
    labels: &'a Labels,
    options: &'a RenderOptions,
    plan: &'a mut Plan,
}

impl Cx<'_> {
    fn act(&mut self, a: Action) {
        self.plan.actions.push(a);
    }

    fn note(&mut self, n: Note) {
        self.plan.notes.push(n);
    }

    fn lane_label(&self, lane: &LaneName) -> String {
        format!("{}{lane}", self.labels.lane_prefix)
    }

    fn body(&self, s: &DriftStatus, state: IssueState, carried: &BTreeSet<Sha256Digest>) -> String {
        render_issue_body(s, state, carried, self.labels, self.options)
    }

    fn no_issue(&mut self, s: &DriftStatus) {
        if matches!(s.standing, Standing::Cleared { .. }) {
            return;
        }
        let carried: BTreeSet<Sha256Digest> = s.evidence.iter().map(|e| e.record.digest).collect();
        let mut labels: BTreeSet<String> = s
            .evidence
            .iter()
            .map(|e| self.lane_label(&e.record.lane))
            .collect();
        labels.insert(self.labels.drift.clone());
        let body = self.body(s, IssueState::Open, &carried);
        self.act(Action::Open {
            key: s.key.clone(),
            title: render_title(&s.key),
            body,
            labels: labels.into_iter().collect(),
        });
        if s.standing == Standing::Uncovered {
            self.note(Note::Uncovered {
                key: s.key.clone(),
                issue: None,
            });
        }
    }

    fn existing(&mut self, s: &DriftStatus, issue: &ActualIssue) {
        let fresh: Vec<&EvidenceEntry> = s
            .evidence
            .iter()
            .filter(|e| !issue.announced(&e.record.digest))
            .collect();
        if issue.has_label(&self.labels.accepted) {
            if !fresh.is_empty() {
                self.note(Note::Accepted {
                    key: s.key.clone(),
                    issue: issue.number,
                    suppressed: fresh.iter().map(|e| e.record.digest).collect(),
                });
            }
            return;
        }
        let cleared = matches!(s.standing, Standing::Cleared { .. });
        let ownership = match (issue.state, issue.state_marker) {
            (IssueState::Open, Some(m)) if m.state == IssueState::Closed && m.epoch == s.epoch => {
                Ownership::HeldOpen
            }
            (IssueState::Open, _) => Ownership::Open,
            (IssueState::Closed, Some(m))
                if m.state == IssueState::Closed && issue.reason_allows_benchops_close() =>
            {
                Ownership::Closed(m.epoch)
            }
            (IssueState::Closed, _) => Ownership::HumanClosed,
        };
        let n = issue.number;
        match ownership {
            Ownership::HumanClosed => {
                self.comments(s, n, &fresh, true);
                if !cleared {
                    self.note(Note::ClosedByHuman {
                        key: s.key.clone(),
                        issue: n,
                    });
                }
            }
            Ownership::HeldOpen => {
                self.add_labels(issue, &fresh);
                self.comments(s, n, &fresh, false);
                if cleared {
                    self.note(Note::HeldOpenByHuman {
                        key: s.key.clone(),
                        issue: n,
                    });
                }
            }
            Ownership::Open => {
                self.add_labels(issue, &fresh);
                self.comments(s, n, &fresh, false);
                if let Standing::Cleared { clearing } = &s.standing {
                    let body = self.body(s, IssueState::Closed, &issue.body_evidence);
                    self.act(Action::Close {
                        issue: n,
                        clearing: clearing.clone(),
                        body,
                    });
                    self.closing_comment(s, issue);
                } else {
                    let body = self.body(s, IssueState::Open, &issue.body_evidence);
                    if !same_text(&body, &issue.body) {
                        self.act(Action::UpdateBody { issue: n, body });
                    }
                    self.uncovered_note(s, n);
                }
            }
            Ownership::Closed(epoch) if epoch != s.epoch && !cleared => {
                let body = self.body(s, IssueState::Open, &issue.body_evidence);
                self.act(Action::Reopen { issue: n, body });
                self.add_labels(issue, &fresh);
                self.comments(s, n, &fresh, false);
                self.uncovered_note(s, n);
            }
            Ownership::Closed(epoch) => {
                self.add_labels(issue, &fresh);
                self.comments(s, n, &fresh, false);
                if epoch != s.epoch {
                    let body = self.body(s, IssueState::Closed, &issue.body_evidence);
                    self.act(Action::UpdateBody { issue: n, body });
                }
                if cleared {
                    self.closing_comment(s, issue);
                }
            }
        }
    }

    fn uncovered_note(&mut self, s: &DriftStatus, issue: u64) {
        if s.standing == Standing::Uncovered {
            self.note(Note::Uncovered {
                key: s.key.clone(),
                issue: Some(issue),
            });
        }
    }

    fn add_labels(&mut self, issue: &ActualIssue, fresh: &[&EvidenceEntry]) {
        if fresh.is_empty() {
            return;
        }
        let mut want: BTreeSet<String> = fresh
            .iter()
            .map(|e| self.lane_label(&e.record.lane))
            .collect();
        want.insert(self.labels.drift.clone());
        let missing: Vec<String> = want.into_iter().filter(|l| !issue.has_label(l)).collect();
        if !missing.is_empty() {
            self.act(Action::AddLabels {
                issue: issue.number,
                labels: missing,
            });
        }
    }

    fn comments(
        &mut self,
        s: &DriftStatus,
        issue: u64,
        fresh: &[&EvidenceEntry],
        human_closed: bool,
    ) {
        for e in fresh {
            let body = render_evidence_comment(s, e, human_closed, self.labels, self.options);
            self.act(Action::Comment {
                issue,
                marker: CommentMarker::Evidence {
                    record: e.record.digest,
                },
                body,
            });
        }
    }

    fn closing_comment(&mut self, s: &DriftStatus, issue: &ActualIssue) {
        let Standing::Cleared { clearing } = &s.standing else {
            return;
        };
        if issue.closing_comments.contains(&s.epoch) {
            return;
        }
        let body = render_closing_comment(s, clearing, self.options);
        self.act(Action::Comment {
            issue: issue.number,
            marker: CommentMarker::Closed { epoch: s.epoch },
            body,
        });
    }

    /// Deletes repeated benchops comments on the canonical issue (not on an
    /// accepted one: benchops writes nothing there).
    fn duplicate_comments(&mut self, issue: &ActualIssue) {
        if issue.has_label(&self.labels.accepted) {
            return;
        }
        for comment_id in issue.duplicate_comments() {
            self.act(Action::DeleteDuplicateComment {
                issue: issue.number,
                comment_id,
            });
        }
    }

    fn duplicates(&mut self, key: &DriftKey, canonical: u64, others: &[&ActualIssue]) {
        if others.is_empty() {
            return;
        }
        for d in others {
            if d.state == IssueState::Open && !d.has_label(&self.labels.accepted) {
                self.act(Action::CloseDuplicate {
                    issue: d.number,
                    canonical,
                    body: render_duplicate_body(key, canonical),
                });
            }
        }
        self.note(Note::Duplicates {
            key: key.clone(),
            canonical,
            others: others.iter().map(|d| d.number).collect(),
        });
    }
}

/// Bodies compare without regard to line endings or trailing whitespace
/// (web editors write `\r\n`).
fn same_text(a: &str, b: &str) -> bool {
    a.replace("\r\n", "\n").trim_end() == b.replace("\r\n", "\n").trim_end()
}
