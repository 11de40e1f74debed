//! The local issue ledger: the issue tracker of local mode, one JSON file
//! (`benchops-issue-ledger/v1`) that the same reconcile logic as on GitHub
//! reads and writes.
//!
//! ```json
//! {
//!   "schema": "benchops-issue-ledger/v1",
//!   "next_number": 2,
//!   "next_comment_id": 2,
//!   "issues": [
//!     {
//!       "number": 1,
//!       "title": "Benchmark drift: parse/large wall_s",
//!       "body": "<!-- benchops:drift key=parse/large/wall_s -->\n…",
//!       "state": "open",
//!       "state_reason": null,
//!       "labels": ["benchmark-drift", "lane:nightly"],
//!       "comments": [{ "id": 1, "author": "benchops", "body": "<!-- benchops:evidence record=sha256:… -->\n…" }]
//!     }
//!   ]
//! }
//! ```
//!
//! The file is pretty-printed JSON with a final newline; the same ledger
//! always has the same bytes (no timestamps), so a sweep that changes
//! nothing writes nothing. Every member is required and unknown members are
//! refused, so a typo in a hand edit is an error naming the file, not a
//! silently ignored field. Two members may be left out: a comment's `id`
//! and `next_comment_id` (ledgers written before comments had ids, and
//! comments appended by hand). On load, every comment without an id (or
//! with id 0) is numbered in file order from `next_comment_id` (at least one
//! more than every id present), and the next write stores the ids. Comment
//! ids are unique across the ledger and ascend in creation order, as on
//! GitHub; the reconcile keeps the earliest of benchops comments that carry
//! the same marker and deletes the others (`DeleteDuplicateComment`).
//!
//! People edit the file by hand, as they would click on GitHub:
//!
//! - close: `"state": "closed"`, `"state_reason": "completed"` (or
//!   `"not_planned"`); leave the body alone. The body's state marker still
//!   says `open`, which is how the reconcile knows a person closed it;
//! - accept: add the accepted label (`drift-accepted` by default) to
//!   `labels`;
//! - reopen: `"state": "open"`;
//! - discuss: append `{"author": "<you>", "body": "…"}` to `comments` (no
//!   `id` needed: it gets one on load).
//!   Only comments whose author is `benchops` are read for markers.

use std::path::{Path, PathBuf};

use benchops::fsio::{self, WriteError};
use benchops::reconcile::{Action, ActualIssue, CommentMarker, IssueState};
use serde::{Deserialize, Serialize};

use crate::sweep::{AdapterFailure, Applied};

/// The ledger's format identifier.
pub const LEDGER_SCHEMA: &str = "benchops-issue-ledger/v1";
/// The author of every comment benchops writes.
pub const BENCHOPS_AUTHOR: &str = "benchops";
/// The largest ledger file read, in bytes (64 MiB): thousands of issues with
/// their comments fit many times over; a FIFO or device in its place is
/// refused without being opened for reading.
pub const MAX_LEDGER_BYTES: u64 = 64 * 1024 * 1024;
/// The largest issue number or comment id a ledger may hold: 2^53.
pub const MAX_LEDGER_NUMBER: u64 = 1 << 53;

/// Open or closed, as written in the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LedgerState {
    /// Open.
    Open,
    /// Closed.
    Closed,
}

impl From<LedgerState> for IssueState {
    fn from(s: LedgerState) -> Self {
        match s {
            LedgerState::Open => IssueState::Open,
            LedgerState::Closed => IssueState::Closed,
        }
    }
}

/// One comment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerComment {
    /// Its id, unique in the ledger, ascending in creation order. 0 (or
    /// absent in the file): not numbered yet; [`Ledger::from_bytes`]
    /// numbers it.
    #[serde(default)]
    pub id: u64,
    /// Who wrote it (`benchops` for the publisher).
    pub author: String,
    /// The text (benchops comments carry a hidden marker).
    pub body: String,
}

/// One issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LedgerIssue {
    /// The issue number (from 1, unique).
    pub number: u64,
    /// Title.
    pub title: String,
    /// Body, with benchops' hidden markers.
    pub body: String,
    /// Open or closed.
    pub state: LedgerState,
    /// Why it is in its state (`completed`, `not_planned`, `reopened`,
    /// `duplicate`), or null.
    pub state_reason: Option<String>,
    /// Label names.
    pub labels: Vec<String>,
    /// Comments, oldest first.
    pub comments: Vec<LedgerComment>,
}

/// The whole ledger.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Ledger {
    /// Always [`LEDGER_SCHEMA`].
    pub schema: String,
    /// The number the next opened issue gets; greater than every number.
    pub next_number: u64,
    /// The id the next comment gets; greater than every comment id (absent
    /// in older ledgers: computed on load).
    #[serde(default)]
    pub next_comment_id: u64,
    /// Issues, in the order they were opened.
    pub issues: Vec<LedgerIssue>,
}

/// A ledger file that cannot be used, or an action it cannot take.
#[derive(Debug, thiserror::Error)]
pub enum LedgerError {
    /// The file exists but cannot be read.
    #[error("failed to read issue ledger {}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Not JSON, or not the ledger's shape.
    #[error("issue ledger {} is not a {LEDGER_SCHEMA} document: {reason}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The parser's message (with line and column).
        reason: String,
    },
    /// The shape is right but the content breaks a rule.
    #[error("issue ledger {} is invalid: {reason}", path.display())]
    Invalid {
        /// The file.
        path: PathBuf,
        /// Which rule.
        reason: String,
    },
    /// An action names an issue the ledger does not hold.
    #[error("issue ledger {} has no issue #{number} (the reconcile planned a write to it)", path.display())]
    NoSuchIssue {
        /// The file.
        path: PathBuf,
        /// The issue number.
        number: u64,
    },
    /// Writing the file failed.
    #[error("failed to write issue ledger {}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// What failed.
        #[source]
        source: WriteError,
    },
}

impl LedgerError {
    /// Whether rerunning the sweep can succeed as is: an issue that
    /// vanished is planned afresh from the file as it is; a transient OS
    /// condition may pass; a file that does not parse needs a person.
    pub fn is_retryable(&self) -> bool {
        let transient = |e: &std::io::Error| {
            matches!(
                e.kind(),
                std::io::ErrorKind::Interrupted
                    | std::io::ErrorKind::WouldBlock
                    | std::io::ErrorKind::TimedOut
            )
        };
        match self {
            LedgerError::NoSuchIssue { .. } => true,
            LedgerError::Read { source, .. } => transient(source),
            LedgerError::Write {
                source: WriteError::Io { source, .. },
                ..
            } => transient(source),
            LedgerError::Write { .. } | LedgerError::Parse { .. } | LedgerError::Invalid { .. } => {
                false
            }
        }
    }
}

impl AdapterFailure for LedgerError {
    fn is_retryable(&self) -> bool {
        LedgerError::is_retryable(self)
    }
}

impl Default for Ledger {
    fn default() -> Self {
        Self::empty()
    }
}

impl Ledger {
    /// A ledger with no issues.
    pub fn empty() -> Self {
        Ledger {
            schema: LEDGER_SCHEMA.to_owned(),
            next_number: 1,
            next_comment_id: 1,
            issues: Vec::new(),
        }
    }

    /// Reads the ledger at `path`: `None` when the file does not exist.
    /// Returns the bytes read too, so a writer can tell whether the file
    /// changed under it.
    pub fn load(path: &Path) -> Result<Option<(Ledger, Vec<u8>)>, LedgerError> {
        let bytes = match fsio::read_input_file(path, MAX_LEDGER_BYTES) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(source) => {
                return Err(LedgerError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        let ledger = Ledger::from_bytes(&bytes, path)?;
        Ok(Some((ledger, bytes)))
    }

    /// Parses and checks ledger bytes; `path` only names the file in errors.
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Ledger, LedgerError> {
        let mut ledger: Ledger = serde_json::from_slice(bytes).map_err(|e| LedgerError::Parse {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let invalid = |reason: String| LedgerError::Invalid {
            path: path.to_path_buf(),
            reason,
        };
        if ledger.schema != LEDGER_SCHEMA {
            return Err(invalid(format!(
                "$.schema is {:?}, expected {LEDGER_SCHEMA:?}",
                ledger.schema
            )));
        }
        // Numbers and ids stay below 2^53 (what every JSON reader holds
        // exactly), so counting on from them can never overflow.
        for (what, n) in [
            ("$.next_number", ledger.next_number),
            ("$.next_comment_id", ledger.next_comment_id),
        ] {
            if n > MAX_LEDGER_NUMBER {
                return Err(invalid(format!(
                    "{what} is {n}; it must be at most 2^53 ({MAX_LEDGER_NUMBER})"
                )));
            }
        }
        for (i, issue) in ledger.issues.iter().enumerate() {
            for (j, c) in issue.comments.iter().enumerate() {
                if c.id > MAX_LEDGER_NUMBER {
                    return Err(invalid(format!(
                        "$.issues[{i}].comments[{j}].id is {}; it must be at most 2^53 ({MAX_LEDGER_NUMBER})",
                        c.id
                    )));
                }
            }
        }
        let mut seen = std::collections::BTreeSet::new();
        for (i, issue) in ledger.issues.iter().enumerate() {
            if issue.number == 0 {
                return Err(invalid(format!("$.issues[{i}].number must be at least 1")));
            }
            if !seen.insert(issue.number) {
                return Err(invalid(format!(
                    "$.issues[{i}].number: issue #{} appears more than once",
                    issue.number
                )));
            }
            if issue.number >= ledger.next_number {
                return Err(invalid(format!(
                    "$.next_number is {} but issue #{} exists; it must be greater than every issue number",
                    ledger.next_number, issue.number
                )));
            }
        }
        let mut ids = std::collections::BTreeSet::new();
        for (i, issue) in ledger.issues.iter().enumerate() {
            for (j, c) in issue.comments.iter().enumerate() {
                if c.id != 0 && !ids.insert(c.id) {
                    return Err(invalid(format!(
                        "$.issues[{i}].comments[{j}].id: comment id {} appears more than once",
                        c.id
                    )));
                }
            }
        }
        ledger.number_comments();
        Ok(ledger)
    }

    /// Gives every comment without an id (0) the next id, in file order, and
    /// makes `next_comment_id` greater than every id.
    fn number_comments(&mut self) {
        let max = self
            .issues
            .iter()
            .flat_map(|i| i.comments.iter().map(|c| c.id))
            .max()
            .unwrap_or(0);
        let mut next = self.next_comment_id.max(max + 1);
        for c in self.issues.iter_mut().flat_map(|i| i.comments.iter_mut()) {
            if c.id == 0 {
                c.id = next;
                next += 1;
            }
        }
        self.next_comment_id = next;
    }

    /// The canonical file bytes: pretty JSON and a final newline.
    pub fn to_bytes(&self) -> Vec<u8> {
        // Serializing plain strings, numbers and vectors cannot fail.
        let mut b = serde_json::to_vec_pretty(self).unwrap_or_default();
        b.push(b'\n');
        b
    }

    /// Writes the whole ledger atomically (temporary file, fsync, rename).
    pub fn write(&self, path: &Path) -> Result<Vec<u8>, LedgerError> {
        let bytes = self.to_bytes();
        fsio::write_atomic(path, &bytes).map_err(|source| LedgerError::Write {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(bytes)
    }

    /// The issue with this number.
    pub fn issue(&self, number: u64) -> Option<&LedgerIssue> {
        self.issues.iter().find(|i| i.number == number)
    }

    /// Every issue as the reconcile sees it: body markers, and the markers
    /// of comments written by benchops only.
    pub fn actual_issues(&self) -> Vec<ActualIssue> {
        self.issues
            .iter()
            .map(|i| {
                ActualIssue::from_body(
                    i.number,
                    i.title.clone(),
                    i.body.clone(),
                    i.state.into(),
                    i.state_reason.clone(),
                    i.labels.clone(),
                )
                .with_comments(
                    i.comments
                        .iter()
                        .filter(|c| c.author == BENCHOPS_AUTHOR)
                        .map(|c| (c.id, c.body.as_str())),
                )
            })
            .collect()
    }

    /// Applies one reconcile action, as the issue tracker would. `path`
    /// only names the file in errors.
    pub fn apply(&mut self, action: &Action, path: &Path) -> Result<Applied, LedgerError> {
        Ok(match action {
            Action::Open {
                title,
                body,
                labels,
                ..
            }
            | Action::OpenNotice {
                title,
                body,
                labels,
            } => {
                let number = self.next_number;
                self.next_number += 1;
                self.issues.push(LedgerIssue {
                    number,
                    title: title.clone(),
                    body: body.clone(),
                    state: LedgerState::Open,
                    state_reason: None,
                    labels: labels.clone(),
                    comments: Vec::new(),
                });
                Applied::Opened {
                    issue: number,
                    title: title.clone(),
                }
            }
            Action::AddLabels { issue, labels } => {
                let i = self.find_mut(*issue, path)?;
                let mut added = Vec::new();
                for l in labels {
                    if !i.labels.contains(l) {
                        i.labels.push(l.clone());
                        added.push(l.clone());
                    }
                }
                Applied::LabelsAdded {
                    issue: *issue,
                    labels: added,
                }
            }
            Action::Comment {
                issue,
                marker,
                body,
            } => {
                let id = self.next_comment_id.max(1);
                self.find_mut(*issue, path)?.comments.push(LedgerComment {
                    id,
                    author: BENCHOPS_AUTHOR.to_owned(),
                    body: body.clone(),
                });
                self.next_comment_id = id + 1;
                match marker {
                    CommentMarker::Evidence { record } => Applied::Commented {
                        issue: *issue,
                        record: *record,
                    },
                    CommentMarker::Closed { epoch } => Applied::ClosingComment {
                        issue: *issue,
                        epoch: *epoch,
                    },
                }
            }
            Action::UpdateBody { issue, body } => {
                self.find_mut(*issue, path)?.body = body.clone();
                Applied::BodyUpdated { issue: *issue }
            }
            Action::Close { issue, body, .. } => {
                self.find_mut(*issue, path)?
                    .set(body, LedgerState::Closed, "completed");
                Applied::Closed { issue: *issue }
            }
            Action::Reopen { issue, body } => {
                self.find_mut(*issue, path)?
                    .set(body, LedgerState::Open, "reopened");
                Applied::Reopened { issue: *issue }
            }
            Action::DeleteDuplicateComment { issue, comment_id } => {
                // Already gone (a racing sweep deleted it) is not an error,
                // as a 404 is not on GitHub.
                self.find_mut(*issue, path)?
                    .comments
                    .retain(|c| c.id != *comment_id);
                Applied::DeletedDuplicateComment {
                    issue: *issue,
                    comment_id: *comment_id,
                }
            }
            Action::CloseDuplicate {
                issue,
                canonical,
                body,
            } => {
                self.find_mut(*issue, path)?
                    .set(body, LedgerState::Closed, "duplicate");
                Applied::ClosedDuplicate {
                    issue: *issue,
                    canonical: *canonical,
                }
            }
        })
    }

    fn find_mut(&mut self, number: u64, path: &Path) -> Result<&mut LedgerIssue, LedgerError> {
        self.issues
            .iter_mut()
            .find(|i| i.number == number)
            .ok_or_else(|| LedgerError::NoSuchIssue {
                path: path.to_path_buf(),
                number,
            })
    }
}

impl LedgerIssue {
    /// Body and state in one write, as one request does on GitHub.
    fn set(&mut self, body: &str, state: LedgerState, reason: &str) {
        self.body = body.to_owned();
        self.state = state;
        self.state_reason = Some(reason.to_owned());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use benchops::reconcile::{DriftKey, drift_marker};
    use benchops::{CaseId, Sha256Digest};

    fn key() -> DriftKey {
        DriftKey::new(CaseId::new("parse/large").expect("case"), "wall_s")
    }

    #[test]
    fn apply_round_trips_through_bytes_and_markers() {
        let p = Path::new("issues.json");
        let mut l = Ledger::empty();
        let d = Sha256Digest::of(b"r");
        let opened = l
            .apply(
                &Action::Open {
                    key: key(),
                    title: "t".into(),
                    body: drift_marker(&key()),
                    labels: vec!["benchmark-drift".into()],
                },
                p,
            )
            .expect("opens");
        assert_eq!(
            opened,
            Applied::Opened {
                issue: 1,
                title: "t".into()
            }
        );
        l.apply(
            &Action::Comment {
                issue: 1,
                marker: CommentMarker::Evidence { record: d },
                body: benchops::reconcile::evidence_marker(&d),
            },
            p,
        )
        .expect("comments");
        l.issues[0].comments.push(LedgerComment {
            id: 0,
            author: "someone".into(),
            body: benchops::reconcile::evidence_marker(&Sha256Digest::of(b"copied")),
        });
        let back = Ledger::from_bytes(&l.to_bytes(), p).expect("parses");
        // The person's comment, appended without an id, is numbered on load.
        l.issues[0].comments[1].id = 2;
        l.next_comment_id = 3;
        assert_eq!(back, l);
        let actual = back.actual_issues();
        assert_eq!(actual[0].key, Some(key()));
        assert!(actual[0].announced(&d));
        assert!(
            !actual[0].announced(&Sha256Digest::of(b"copied")),
            "a marker in a person's comment does not count"
        );
        assert!(matches!(
            l.apply(
                &Action::UpdateBody {
                    issue: 9,
                    body: String::new()
                },
                p
            ),
            Err(LedgerError::NoSuchIssue { number: 9, .. })
        ));
    }

    #[test]
    fn ledgers_without_comment_ids_are_numbered_on_load() {
        let p = Path::new("issues.json");
        let old = r#"{"schema":"benchops-issue-ledger/v1","next_number":3,"issues":[
            {"number":1,"title":"","body":"","state":"open","state_reason":null,"labels":[],
             "comments":[{"author":"benchops","body":"a"},{"author":"x","body":"b"}]},
            {"number":2,"title":"","body":"","state":"open","state_reason":null,"labels":[],
             "comments":[{"id":7,"author":"benchops","body":"c"},{"author":"benchops","body":"d"}]}]}"#;
        let l = Ledger::from_bytes(old.as_bytes(), p).expect("an old ledger loads");
        let ids: Vec<Vec<u64>> = l
            .issues
            .iter()
            .map(|i| i.comments.iter().map(|c| c.id).collect())
            .collect();
        assert_eq!(ids, [vec![8, 9], vec![7, 10]]);
        assert_eq!(l.next_comment_id, 11);
        // Written back, the ids are stored and load unchanged.
        let again = Ledger::from_bytes(&l.to_bytes(), p).expect("parses");
        assert_eq!(again, l);

        let dup = old.replace(r#""author":"x""#, r#""id":7,"author":"x""#);
        let e = Ledger::from_bytes(dup.as_bytes(), p).expect_err("duplicate id");
        assert!(
            e.to_string()
                .contains("comment id 7 appears more than once"),
            "{e}"
        );
    }

    #[test]
    fn deleting_a_duplicate_comment_is_idempotent() {
        let p = Path::new("issues.json");
        let mut l = Ledger::empty();
        l.apply(
            &Action::Open {
                key: key(),
                title: "t".into(),
                body: drift_marker(&key()),
                labels: vec![],
            },
            p,
        )
        .expect("opens");
        let d = Sha256Digest::of(b"r");
        let comment = Action::Comment {
            issue: 1,
            marker: CommentMarker::Evidence { record: d },
            body: benchops::reconcile::evidence_marker(&d),
        };
        l.apply(&comment, p).expect("comments");
        l.apply(&comment, p).expect("comments again (a race)");
        assert_eq!(l.actual_issues()[0].duplicate_comments(), [2]);
        let delete = Action::DeleteDuplicateComment {
            issue: 1,
            comment_id: 2,
        };
        for _ in 0..2 {
            assert_eq!(
                l.apply(&delete, p).expect("deletes"),
                Applied::DeletedDuplicateComment {
                    issue: 1,
                    comment_id: 2
                }
            );
            assert_eq!(l.issues[0].comments.len(), 1);
            assert_eq!(l.issues[0].comments[0].id, 1);
        }
        assert!(l.actual_issues()[0].duplicate_comments().is_empty());
        assert_eq!(l.next_comment_id, 3, "ids are never reused");
    }

    #[test]
    fn bad_ledgers_are_refused_with_the_file_named() {
        let p = Path::new("x/issues.json");
        let cases: [(&str, &str); 6] = [
            (
                r#"{"schema":"benchops-issue-ledger/v1","next_number":18446744073709551615,"issues":[]}"#,
                "$.next_number is 18446744073709551615; it must be at most 2^53",
            ),
            (
                r#"{"schema":"benchops-issue-ledger/v1","next_number":2,"next_comment_id":1,"issues":[{"number":1,"title":"","body":"","state":"open","state_reason":null,"labels":[],"comments":[{"id":18446744073709551615,"author":"benchops","body":"x"}]}]}"#,
                "$.issues[0].comments[0].id is 18446744073709551615",
            ),
            ("{", "not a benchops-issue-ledger/v1"),
            (
                r#"{"schema":"other/v1","next_number":1,"issues":[]}"#,
                "$.schema",
            ),
            (
                r#"{"schema":"benchops-issue-ledger/v1","next_number":1,"issues":[{"number":1,"title":"","body":"","state":"open","state_reason":null,"labels":[],"comments":[]}]}"#,
                "$.next_number",
            ),
            (
                r#"{"schema":"benchops-issue-ledger/v1","next_number":2,"issues":[{"number":1,"title":"","body":"","state":"shut","state_reason":null,"labels":[],"comments":[]}]}"#,
                "unknown variant",
            ),
        ];
        for (text, want) in cases {
            let e = Ledger::from_bytes(text.as_bytes(), p).expect_err(text);
            let msg = e.to_string();
            assert!(msg.contains("x/issues.json") && msg.contains(want), "{msg}");
        }
    }

    /// A ledger failure reaches the engine as the ledger's own error: a
    /// vanished issue is planned afresh on a rerun; a file that does not
    /// parse needs a person.
    #[test]
    fn a_ledger_failure_is_retryable_as_the_ledger_says() {
        use crate::sweep::Cause;
        assert!(
            !Cause::from(LedgerError::Parse {
                path: PathBuf::from("issues.json"),
                reason: "eof".into()
            })
            .is_retryable()
        );
        assert!(
            Cause::from(LedgerError::NoSuchIssue {
                path: PathBuf::from("issues.json"),
                number: 4
            })
            .is_retryable()
        );
    }
}
