//! The issues phase of `sweep --github`: [`GitHubTracker`], the engine's
//! [`IssueTracker`] over GitHub issues with the issues-phase token. An
//! issue counts as benchops's only when the App's bot opened it, a
//! comment's markers only when the bot wrote it; before each action on an
//! existing issue it is read again, and a difference from what the listing
//! (and this sweep's own writes) left makes the engine re-plan.

use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;

use benchops::reconcile::{self, Action, ActualIssue, CommentMarker};
use benchops_github::{
    GitHubClient, GitHubError, Issue, IssueState as ApiIssueState, IssueUpdate, LabelOutcome,
    LabelSpec, NewIssue, Phase as TokenPhase, StateFilter, StateReason,
};

use super::{Shared, is_benchops_comment, is_benchops_issue, not_begun, revoke};
use crate::sweep::{
    self, Applied, ForeignIssue, IssueTracker, LabelNeed, Listing, PhaseToken, StepError, at,
};

/// What the tracker last saw of an issue: its state, labels and body.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Seen {
    state: ApiIssueState,
    labels: BTreeSet<String>,
    body: String,
}

impl Seen {
    fn of(i: &Issue) -> Seen {
        Seen {
            state: i.state,
            labels: i.labels.iter().map(|l| l.name.clone()).collect(),
            body: i.body.clone().unwrap_or_default(),
        }
    }
}

/// GitHub issues, with the issues-phase token.
#[derive(Debug)]
pub struct GitHubTracker {
    shared: Rc<Shared>,
    gh: Option<GitHubClient>,
    tokens: Vec<PhaseToken>,
    bot_login: String,
    seen: BTreeMap<u64, Seen>,
}

impl GitHubTracker {
    /// A tracker that has not begun its phase.
    pub(super) fn new(shared: Rc<Shared>) -> GitHubTracker {
        GitHubTracker {
            shared,
            gh: None,
            tokens: Vec::new(),
            bot_login: String::new(),
            seen: BTreeMap::new(),
        }
    }

    fn gh(&self) -> Result<&GitHubClient, StepError> {
        self.gh.as_ref().ok_or_else(not_begun)
    }

    /// The App's bot login (`<slug>[bot]`), once the phase has begun.
    pub fn bot_login(&self) -> &str {
        &self.bot_login
    }
}

fn target(action: &Action) -> Option<u64> {
    match action {
        Action::Open { .. } | Action::OpenNotice { .. } => None,
        Action::AddLabels { issue, .. }
        | Action::Comment { issue, .. }
        | Action::UpdateBody { issue, .. }
        | Action::Close { issue, .. }
        | Action::Reopen { issue, .. }
        | Action::DeleteDuplicateComment { issue, .. }
        | Action::CloseDuplicate { issue, .. } => Some(*issue),
    }
}

impl IssueTracker for GitHubTracker {
    fn describe(&self) -> String {
        format!("of {} (GitHub)", self.shared.repo)
    }

    async fn begin(&mut self) -> Result<(), StepError> {
        // The App's slug names the bot whose issues and comments are
        // benchops's own (with a token service, its exchange says).
        let gh = self
            .shared
            .phase_client(TokenPhase::Issues, &mut self.tokens)
            .await?;
        self.gh = Some(gh);
        self.bot_login = self.shared.bot_login().await?;
        Ok(())
    }

    async fn list(&mut self, drift_label: &str) -> Result<Listing, StepError> {
        let gh = self.gh()?.clone();
        let repo = &self.shared.repo;
        let listed = gh
            .list_issues(repo, StateFilter::All, &[drift_label])
            .await
            .map_err(at("list drift issues"))?;
        let mut listing = Listing::default();
        self.seen.clear();
        for i in listed {
            let author = i.author().map(str::to_owned);
            let has_marker = i
                .body
                .as_deref()
                .is_some_and(|b| b.contains("<!-- benchops:drift"));
            let names: Vec<String> = i.labels.iter().map(|l| l.name.clone()).collect();
            let state = match i.state {
                ApiIssueState::Open => reconcile::IssueState::Open,
                ApiIssueState::Closed => reconcile::IssueState::Closed,
            };
            let seen = Seen::of(&i);
            let mut issue = ActualIssue::from_body(
                i.number,
                i.title,
                i.body.unwrap_or_default(),
                state,
                i.state_reason,
                names,
            );
            // Only the App's bot's issues are benchops's: a drift marker
            // elsewhere is reported as foreign, and an issue by anyone else
            // is never planned on (a health or missed-run marker copied
            // into someone's issue does not make benchops edit it).
            if !is_benchops_issue(author.as_deref(), &self.bot_login) {
                if has_marker {
                    listing.foreign.push(ForeignIssue {
                        issue: i.number,
                        author,
                        key: reconcile::quoted_drift_key(&issue.body)
                            .as_ref()
                            .map(ToString::to_string),
                    });
                }
                continue;
            }
            self.seen.insert(i.number, seen);
            if issue.key.is_some() {
                let comments = gh
                    .list_comments(repo, i.number)
                    .await
                    .map_err(at(format!("list the comments of #{}", i.number)))?;
                issue = issue.with_comments(
                    comments
                        .iter()
                        .filter(|c| is_benchops_comment(&c.body, c.author(), &self.bot_login))
                        .map(|c| (c.id, c.body.as_str())),
                );
            }
            listing.issues.push(issue);
        }
        Ok(listing)
    }

    async fn prepare_labels(&mut self, labels: &[LabelNeed]) -> Result<Vec<String>, StepError> {
        let specs: Vec<LabelSpec> = labels
            .iter()
            .map(|l| LabelSpec {
                name: l.name.clone(),
                color: l.color.clone(),
                description: Some(l.description.clone()),
            })
            .collect();
        let outcomes = self
            .gh()?
            .ensure_labels(&self.shared.repo, &specs)
            .await
            .map_err(at("ensure labels"))?;
        Ok(outcomes
            .into_iter()
            .filter(|(_, o)| *o != LabelOutcome::Existed)
            .map(|(n, _)| n)
            .collect())
    }

    async fn still_current(&mut self, action: &Action) -> Result<bool, StepError> {
        let Some(number) = target(action) else {
            return Ok(true);
        };
        let Some(seen) = self.seen.get(&number).cloned() else {
            return Ok(false);
        };
        let now = self
            .gh()?
            .get_issue(&self.shared.repo, number)
            .await
            .map_err(at(format!("read #{number} again")))?;
        Ok(Seen::of(&now) == seen)
    }

    async fn apply(&mut self, action: &Action) -> Result<Applied, StepError> {
        let gh = self.gh()?.clone();
        let repo = &self.shared.repo;
        let step = sweep::describe(action);
        let set = |body: &str, state: Option<(ApiIssueState, StateReason)>| IssueUpdate {
            body: Some(body.to_owned()),
            state: state.map(|s| s.0),
            state_reason: state.map(|s| s.1),
            ..IssueUpdate::default()
        };
        let failed = |e: GitHubError| StepError::new(step.clone(), e);
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
                let issue = gh
                    .create_issue(
                        repo,
                        &NewIssue {
                            title: title.clone(),
                            body: body.clone(),
                            labels: labels.clone(),
                        },
                    )
                    .await
                    .map_err(failed)?;
                self.seen.insert(issue.number, Seen::of(&issue));
                Applied::Opened {
                    issue: issue.number,
                    title: title.clone(),
                }
            }
            Action::AddLabels { issue, labels } => {
                let known = self
                    .seen
                    .get(issue)
                    .map(|s| s.labels.clone())
                    .unwrap_or_default();
                let added: Vec<String> = labels
                    .iter()
                    .filter(|l| !known.contains(*l))
                    .cloned()
                    .collect();
                let now = gh.add_labels(repo, *issue, labels).await.map_err(failed)?;
                if let Some(s) = self.seen.get_mut(issue) {
                    s.labels = now.into_iter().map(|l| l.name).collect();
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
                gh.create_comment(repo, *issue, body)
                    .await
                    .map_err(failed)?;
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
                let i = gh
                    .update_issue(repo, *issue, &set(body, None))
                    .await
                    .map_err(failed)?;
                self.seen.insert(*issue, Seen::of(&i));
                Applied::BodyUpdated { issue: *issue }
            }
            Action::Close { issue, body, .. } => {
                let closed = (ApiIssueState::Closed, StateReason::Completed);
                let i = gh
                    .update_issue(repo, *issue, &set(body, Some(closed)))
                    .await
                    .map_err(failed)?;
                self.seen.insert(*issue, Seen::of(&i));
                Applied::Closed { issue: *issue }
            }
            Action::Reopen { issue, body } => {
                let open = (ApiIssueState::Open, StateReason::Reopened);
                let i = gh
                    .update_issue(repo, *issue, &set(body, Some(open)))
                    .await
                    .map_err(failed)?;
                self.seen.insert(*issue, Seen::of(&i));
                Applied::Reopened { issue: *issue }
            }
            Action::DeleteDuplicateComment { issue, comment_id } => {
                // 404 (gone already: a racing sweep deleted it) is success.
                gh.delete_comment(repo, *comment_id).await.map_err(failed)?;
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
                let closed = (ApiIssueState::Closed, StateReason::Duplicate);
                let i = gh
                    .update_issue(repo, *issue, &set(body, Some(closed)))
                    .await
                    .map_err(failed)?;
                self.seen.insert(*issue, Seen::of(&i));
                Applied::ClosedDuplicate {
                    issue: *issue,
                    canonical: *canonical,
                }
            }
        })
    }

    async fn end(&mut self) -> Result<(), StepError> {
        revoke(&self.shared, self.gh.take(), &mut self.tokens).await
    }

    fn tokens(&self) -> Vec<PhaseToken> {
        self.tokens.clone()
    }
}
