//! Issues, issue comments and labels.
//!
//! These are issues-phase operations: a client holding a contents-phase
//! installation token refuses every write here before sending anything.
//! Creating an issue or a comment is never retried automatically (a 5xx may
//! hide a success); the publisher finds its issues by a hidden marker first,
//! which makes its own retries safe. Updates (title, body, labels, state)
//! set absolute values and adding labels is a set union, so both are
//! retried like other idempotent requests.

use http::Method;
use serde::{Deserialize, Serialize};

use crate::auth::Phase;
use crate::client::{GitHubClient, Op};
use crate::error::GitHubError;
use crate::names::{Repo, encode_component};
use crate::retry::Idempotency;

const CREATE_ISSUE: Op = Op::write(
    "issues.create",
    "create issue",
    Idempotency::NotIdempotent,
    Phase::Issues,
);
const UPDATE_ISSUE: Op = Op::write(
    "issues.update",
    "update issue",
    Idempotency::Idempotent,
    Phase::Issues,
);
const ADD_LABELS: Op = Op::write(
    "issues.add_labels",
    "add labels to issue",
    Idempotency::Idempotent,
    Phase::Issues,
);
const LIST_ISSUES: Op = Op::read("issues.list", "list issues");
const GET_ISSUE: Op = Op::read("issues.get", "get an issue");
const CREATE_COMMENT: Op = Op::write(
    "issues.create_comment",
    "create issue comment",
    Idempotency::NotIdempotent,
    Phase::Issues,
);
const LIST_COMMENTS: Op = Op::read("issues.list_comments", "list issue comments");
// Idempotent: deleting a comment twice finds it gone the second time, which
// `delete_comment` reports as `AlreadyGone`.
const DELETE_COMMENT: Op = Op::write(
    "issues.delete_comment",
    "delete issue comment",
    Idempotency::Idempotent,
    Phase::Issues,
);
const GET_LABEL: Op = Op::read("labels.get", "get label");
const LIST_LABELS: Op = Op::read("labels.list", "list labels");
const CREATE_LABEL: Op = Op::write(
    "labels.create",
    "create label",
    Idempotency::NotIdempotent,
    Phase::Issues,
);

/// Items per page when listing.
pub const PER_PAGE: u32 = 100;

/// An issue's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum IssueState {
    /// Open.
    Open,
    /// Closed.
    Closed,
}

/// Why an issue's state changed (`state_reason` of an update).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StateReason {
    /// Closed as done (a drift that cleared).
    Completed,
    /// Closed as not planned.
    NotPlanned,
    /// Closed as a duplicate of another issue.
    Duplicate,
    /// Reopened.
    Reopened,
}

/// Which issues to list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StateFilter {
    /// Open issues.
    Open,
    /// Closed issues.
    Closed,
    /// Both.
    All,
}

impl StateFilter {
    fn as_str(self) -> &'static str {
        match self {
            StateFilter::Open => "open",
            StateFilter::Closed => "closed",
            StateFilter::All => "all",
        }
    }
}

/// A label on an issue. GitHub sends labels as objects; a bare name is
/// accepted too, as the API description allows.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(from = "LabelRepr")]
pub struct IssueLabel {
    /// The label's name.
    pub name: String,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum LabelRepr {
    Name(String),
    Object { name: String },
}

impl From<LabelRepr> for IssueLabel {
    fn from(r: LabelRepr) -> Self {
        match r {
            LabelRepr::Name(name) | LabelRepr::Object { name } => IssueLabel { name },
        }
    }
}

/// An issue as GitHub returns it (the fields this crate reads).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Issue {
    /// Its number in the repository.
    pub number: u64,
    /// Its title.
    pub title: String,
    /// Its body, if any.
    #[serde(default)]
    pub body: Option<String>,
    /// Open or closed.
    pub state: IssueState,
    /// Why it is in its state (`completed`, `not_planned`, `duplicate`,
    /// `reopened`), when GitHub reports one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_reason: Option<String>,
    /// Its labels.
    #[serde(default)]
    pub labels: Vec<IssueLabel>,
    /// Its page on GitHub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html_url: Option<String>,
    /// Its author, when GitHub reports one with a login.
    #[serde(
        default,
        deserialize_with = "lenient_user",
        skip_serializing_if = "Option::is_none"
    )]
    pub user: Option<User>,
    #[serde(default, skip_serializing)]
    pull_request: Option<serde_json::Value>,
}

impl Issue {
    /// Whether the issue carries the label `name`.
    pub fn has_label(&self, name: &str) -> bool {
        self.labels.iter().any(|l| l.name == name)
    }

    /// The author's login, if known.
    pub fn author(&self) -> Option<&str> {
        self.user.as_ref().map(|u| u.login.as_str())
    }

    /// Whether this is a pull request (the issues endpoints list both).
    pub fn is_pull_request(&self) -> bool {
        self.pull_request.is_some()
    }
}

/// The body of `POST /repos/{owner}/{repo}/issues`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewIssue {
    /// The title.
    pub title: String,
    /// The body.
    pub body: String,
    /// Label names.
    pub labels: Vec<String>,
}

/// The body of `PATCH /repos/{owner}/{repo}/issues/{number}`; fields left
/// `None` are not sent and stay as they are. `labels` replaces the set
/// (to add labels without dropping any a person set meanwhile, use
/// [`GitHubClient::add_labels`]).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct IssueUpdate {
    /// A new title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// A new body.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// The new full set of label names.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub labels: Option<Vec<String>>,
    /// A new state.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state: Option<IssueState>,
    /// Why the state changes (GitHub ignores it unless `state` changes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub state_reason: Option<StateReason>,
}

/// The user behind an issue or a comment: only the login is read.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct User {
    /// The login: a person's name, or `<app-slug>[bot]` for a GitHub App.
    pub login: String,
}

/// Reads a `user` member leniently: missing, `null`, not an object, or an
/// object without a string `login` (a deleted account, an unexpected
/// shape) are all `None`, never a decoding error.
fn lenient_user<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<User>, D::Error> {
    let v = Option::<serde_json::Value>::deserialize(d)?;
    Ok(v.and_then(|v| {
        v.get("login")
            .and_then(serde_json::Value::as_str)
            .map(|login| User {
                login: login.to_owned(),
            })
    }))
}

/// A comment on an issue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Comment {
    /// Its id.
    pub id: u64,
    /// Its body.
    #[serde(default)]
    pub body: String,
    /// Its author, when GitHub reports one with a login.
    #[serde(
        default,
        deserialize_with = "lenient_user",
        skip_serializing_if = "Option::is_none"
    )]
    pub user: Option<User>,
    /// Its page on GitHub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub html_url: Option<String>,
    /// When it was created (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

impl Comment {
    /// The author's login, if known.
    pub fn author(&self) -> Option<&str> {
        self.user.as_ref().map(|u| u.login.as_str())
    }
}

#[derive(Debug, Serialize)]
struct AddLabels<'a> {
    labels: &'a [String],
}

#[derive(Debug, Serialize)]
struct NewComment<'a> {
    body: &'a str,
}

/// A repository label as GitHub lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Label {
    /// The name.
    pub name: String,
    /// Six hex digits, without `#`.
    pub color: String,
    /// The description.
    #[serde(default)]
    pub description: Option<String>,
}

/// A label that must exist.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LabelSpec {
    /// The name.
    pub name: String,
    /// Six hex digits, without `#`.
    pub color: String,
    /// A description.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

impl LabelSpec {
    fn check(&self) -> Result<(), GitHubError> {
        let invalid = |what, value: &str, reason| GitHubError::InvalidInput {
            what,
            value: value.to_owned(),
            reason,
        };
        if self.name.trim().is_empty() || self.name.chars().count() > 50 {
            return Err(invalid(
                "label name",
                &self.name,
                "must be 1 to 50 characters",
            ));
        }
        if self.name.chars().any(char::is_control) {
            return Err(invalid(
                "label name",
                &self.name,
                "must not contain control characters",
            ));
        }
        if self.color.len() != 6 || !self.color.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid(
                "label color",
                &self.color,
                "must be six hex digits without '#'",
            ));
        }
        Ok(())
    }
}

/// What [`GitHubClient::delete_comment`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum CommentDeletion {
    /// The comment was deleted (204).
    Deleted,
    /// It did not exist (404): deleted already, by us or someone else.
    AlreadyGone,
}

/// What [`GitHubClient::ensure_labels`] found or did for one label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum LabelOutcome {
    /// It was there already (its color and description are left alone).
    Existed,
    /// It was missing and was created.
    Created,
    /// It was missing, and someone else created it first (422
    /// `already_exists`).
    CreatedConcurrently,
}

impl GitHubClient {
    /// `POST /repos/{owner}/{repo}/issues`. Not retried after a 5xx: look
    /// for the issue's marker before trying again.
    pub async fn create_issue(&self, repo: &Repo, issue: &NewIssue) -> Result<Issue, GitHubError> {
        let path = format!("{}/issues", repo.api_path());
        self.send(&CREATE_ISSUE, Method::POST, &path, Some(issue))
            .await?
            .json(&CREATE_ISSUE)
    }

    /// `GET /repos/{owner}/{repo}/issues/{number}`.
    pub async fn get_issue(&self, repo: &Repo, number: u64) -> Result<Issue, GitHubError> {
        let path = format!("{}/issues/{number}", repo.api_path());
        self.send(&GET_ISSUE, Method::GET, &path, None::<&()>)
            .await?
            .json(&GET_ISSUE)
    }

    /// `PATCH /repos/{owner}/{repo}/issues/{number}`.
    pub async fn update_issue(
        &self,
        repo: &Repo,
        number: u64,
        update: &IssueUpdate,
    ) -> Result<Issue, GitHubError> {
        let path = format!("{}/issues/{number}", repo.api_path());
        self.send(&UPDATE_ISSUE, Method::PATCH, &path, Some(update))
            .await?
            .json(&UPDATE_ISSUE)
    }

    /// `POST /repos/{owner}/{repo}/issues/{number}/labels` with
    /// `{"labels": [...]}`: adds the labels to the issue's set (never
    /// removes one, so a label someone set since the issue was read is
    /// kept) and returns the issue's labels afterwards. At least one label
    /// is required.
    pub async fn add_labels(
        &self,
        repo: &Repo,
        number: u64,
        labels: &[String],
    ) -> Result<Vec<IssueLabel>, GitHubError> {
        if let Some(bad) = labels.iter().find(|l| l.trim().is_empty()) {
            return Err(GitHubError::InvalidInput {
                what: "label name",
                value: bad.clone(),
                reason: "must not be empty",
            });
        }
        if labels.is_empty() {
            return Err(GitHubError::InvalidInput {
                what: "labels",
                value: String::new(),
                reason: "at least one label is required",
            });
        }
        let path = format!("{}/issues/{number}/labels", repo.api_path());
        self.send(
            &ADD_LABELS,
            Method::POST,
            &path,
            Some(&AddLabels { labels }),
        )
        .await?
        .json(&ADD_LABELS)
    }

    /// Closes an issue (`state: closed`, reason `completed`).
    pub async fn close_issue(&self, repo: &Repo, number: u64) -> Result<Issue, GitHubError> {
        let update = IssueUpdate {
            state: Some(IssueState::Closed),
            state_reason: Some(StateReason::Completed),
            ..IssueUpdate::default()
        };
        self.update_issue(repo, number, &update).await
    }

    /// Reopens an issue (`state: open`).
    pub async fn reopen_issue(&self, repo: &Repo, number: u64) -> Result<Issue, GitHubError> {
        let update = IssueUpdate {
            state: Some(IssueState::Open),
            ..IssueUpdate::default()
        };
        self.update_issue(repo, number, &update).await
    }

    /// `GET /repos/{owner}/{repo}/issues?state=…&labels=…&per_page=100`,
    /// every page. Issues carry all of `labels` (none: any labels). Pull
    /// requests, which this endpoint also lists, are left out. A label name
    /// containing a comma cannot be filtered on and is rejected.
    pub async fn list_issues(
        &self,
        repo: &Repo,
        state: StateFilter,
        labels: &[&str],
    ) -> Result<Vec<Issue>, GitHubError> {
        if let Some(bad) = labels.iter().find(|l| l.contains(',') || l.is_empty()) {
            return Err(GitHubError::InvalidInput {
                what: "label filter",
                value: (*bad).to_owned(),
                reason: "must be non-empty and contain no comma",
            });
        }
        let mut path = format!(
            "{}/issues?state={}&per_page={PER_PAGE}",
            repo.api_path(),
            state.as_str()
        );
        if !labels.is_empty() {
            path.push_str("&labels=");
            path.push_str(&encode_component(&labels.join(",")));
        }
        let all: Vec<Issue> = self.get_all(&LIST_ISSUES, path).await?;
        Ok(all.into_iter().filter(|i| !i.is_pull_request()).collect())
    }

    /// `POST /repos/{owner}/{repo}/issues/{number}/comments`. Not retried
    /// after a 5xx.
    pub async fn create_comment(
        &self,
        repo: &Repo,
        number: u64,
        body: &str,
    ) -> Result<Comment, GitHubError> {
        let path = format!("{}/issues/{number}/comments", repo.api_path());
        self.send(
            &CREATE_COMMENT,
            Method::POST,
            &path,
            Some(&NewComment { body }),
        )
        .await?
        .json(&CREATE_COMMENT)
    }

    /// `GET /repos/{owner}/{repo}/issues/{number}/comments?per_page=100`,
    /// every page, oldest first.
    pub async fn list_comments(
        &self,
        repo: &Repo,
        number: u64,
    ) -> Result<Vec<Comment>, GitHubError> {
        let path = format!(
            "{}/issues/{number}/comments?per_page={PER_PAGE}",
            repo.api_path()
        );
        self.get_all(&LIST_COMMENTS, path).await
    }

    /// `DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}`: 204 is
    /// [`CommentDeletion::Deleted`]; 404 is [`CommentDeletion::AlreadyGone`],
    /// so deleting is idempotent (also when a retry follows a deletion whose
    /// response was lost). An issues-phase write.
    pub async fn delete_comment(
        &self,
        repo: &Repo,
        comment_id: u64,
    ) -> Result<CommentDeletion, GitHubError> {
        let path = format!("{}/issues/comments/{comment_id}", repo.api_path());
        match self
            .send(&DELETE_COMMENT, Method::DELETE, &path, None::<&()>)
            .await
        {
            Ok(_) => Ok(CommentDeletion::Deleted),
            Err(e) if e.is_not_found() => Ok(CommentDeletion::AlreadyGone),
            Err(e) => Err(e),
        }
    }

    /// `GET /repos/{owner}/{repo}/labels?per_page=100`, every page.
    pub async fn list_labels(&self, repo: &Repo) -> Result<Vec<Label>, GitHubError> {
        let path = format!("{}/labels?per_page={PER_PAGE}", repo.api_path());
        self.get_all(&LIST_LABELS, path).await
    }

    /// Makes sure every label exists: `GET …/labels/{name}`; on 404,
    /// `POST …/labels`; a 422 `already_exists` (a concurrent creator) counts
    /// as success. Existing labels are not modified. Returns each label's
    /// name with what was found or done.
    pub async fn ensure_labels(
        &self,
        repo: &Repo,
        labels: &[LabelSpec],
    ) -> Result<Vec<(String, LabelOutcome)>, GitHubError> {
        // The whole operation belongs to the issues phase: refuse before
        // even the first GET.
        self.check_phase(&CREATE_LABEL)?;
        for l in labels {
            l.check()?;
        }
        let mut out = Vec::with_capacity(labels.len());
        for label in labels {
            let get = format!(
                "{}/labels/{}",
                repo.api_path(),
                encode_component(&label.name)
            );
            let outcome = match self.send(&GET_LABEL, Method::GET, &get, None::<&()>).await {
                Ok(_) => LabelOutcome::Existed,
                Err(e) if e.is_not_found() => {
                    let post = format!("{}/labels", repo.api_path());
                    match self
                        .send(&CREATE_LABEL, Method::POST, &post, Some(label))
                        .await
                    {
                        Ok(_) => LabelOutcome::Created,
                        Err(GitHubError::Unprocessable { errors, .. })
                            if errors
                                .iter()
                                .any(|d| d.code.as_deref() == Some("already_exists")) =>
                        {
                            LabelOutcome::CreatedConcurrently
                        }
                        Err(e) => return Err(e),
                    }
                }
                Err(e) => return Err(e),
            };
            out.push((label.name.clone(), outcome));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issues_tolerate_extra_fields_and_both_label_shapes() {
        let json = r#"{"id":1,"node_id":"x","number":7,"title":"t","body":null,"state":"open",
            "labels":[{"id":3,"name":"bench:drift","color":"ff0000"},"plain"],
            "pull_request":{"url":"u"},"user":{"login":"a"}}"#;
        let issue: Issue = serde_json::from_str(json).expect("parses");
        assert_eq!(issue.number, 7);
        assert!(issue.has_label("bench:drift") && issue.has_label("plain"));
        assert!(issue.is_pull_request());
        assert_eq!(issue.body, None);
    }

    #[test]
    fn comment_authors_are_read_leniently() {
        let c: Comment = serde_json::from_str(
            r#"{"id":1,"body":"b","user":{"login":"benchops[bot]","id":2,"type":"Bot"}}"#,
        )
        .expect("parses");
        assert_eq!(c.author(), Some("benchops[bot]"));
        for json in [
            r#"{"id":1,"body":"b"}"#,
            r#"{"id":1,"body":"b","user":null}"#,
            r#"{"id":1,"body":"b","user":{"id":2}}"#,
            r#"{"id":1,"body":"b","user":{"login":7}}"#,
            r#"{"id":1,"body":"b","user":"someone"}"#,
        ] {
            let c: Comment = serde_json::from_str(json).expect("parses");
            assert_eq!(c.author(), None, "{json}");
        }
    }

    #[test]
    fn update_sends_only_what_is_set() {
        let u = IssueUpdate {
            state: Some(IssueState::Closed),
            ..IssueUpdate::default()
        };
        assert_eq!(
            serde_json::to_value(u).expect("serializes"),
            serde_json::json!({"state": "closed"})
        );
        for (reason, text) in [
            (StateReason::Completed, "completed"),
            (StateReason::NotPlanned, "not_planned"),
            (StateReason::Duplicate, "duplicate"),
            (StateReason::Reopened, "reopened"),
        ] {
            let u = IssueUpdate {
                state: Some(IssueState::Closed),
                state_reason: Some(reason),
                ..IssueUpdate::default()
            };
            assert_eq!(
                serde_json::to_value(u).expect("serializes"),
                serde_json::json!({"state": "closed", "state_reason": text})
            );
        }
    }

    #[test]
    fn issue_authors_are_read_leniently() {
        let i: Issue = serde_json::from_str(
            r#"{"number":1,"title":"t","state":"open","user":{"login":"benchops[bot]","type":"Bot"}}"#,
        )
        .expect("parses");
        assert_eq!(i.author(), Some("benchops[bot]"));
        for user in [
            "",
            r#","user":null"#,
            r#","user":{"id":2}"#,
            r#","user":"x""#,
        ] {
            let json = format!(r#"{{"number":1,"title":"t","state":"open"{user}}}"#);
            let i: Issue = serde_json::from_str(&json).expect("parses");
            assert_eq!(i.author(), None, "{json}");
        }
    }

    #[test]
    fn label_specs_are_checked() {
        let ok = LabelSpec {
            name: "bench: drift".into(),
            color: "B60205".into(),
            description: None,
        };
        assert!(ok.check().is_ok());
        for (name, color) in [
            ("", "ffffff"),
            ("x", "#fffff"),
            ("x", "zzzzzz"),
            ("a\nb", "ffffff"),
        ] {
            let l = LabelSpec {
                name: name.into(),
                color: color.into(),
                description: None,
            };
            assert!(l.check().is_err(), "{name:?} {color:?}");
        }
    }
}
