//! The worker: does what deliveries asked for, after they were
//! acknowledged, in the order they were accepted.
//!
//! It starts by working off the inbox left by a previous process, then
//! takes sequence numbers from the bounded queue, up to [`WORK_BATCH`] of
//! those waiting at a time; an item already done (its inbox row gone) is
//! skipped, so an item met twice is done once. Work that only writes facts
//! ends in one transaction that writes them and deletes the inbox rows,
//! for a run of such items in order together; should that transaction
//! fail, each of its items is tried alone, so one bad item holds back no
//! other. A push to the history branch is done alone, in its place.
//! An item whose work failed (GitHub refused the audit issue) stays in the
//! inbox and is tried again at the next housekeeping tick (every ten
//! minutes, when delivery ids are also pruned) and at the next start.
//!
//! - `installation`, `installation_repositories`: the registry.
//! - `issues` on a drift issue: who closed, reopened, labelled or
//!   unlabelled it, and when (`/status` puts it next to the lanes that
//!   still reproduce the drift). Comments stay the sweep's job.
//! - `workflow_run` of the publication workflow: its outcome, for health.
//! - `push` to `benchmark-history` by anyone but the App's bot: an audit
//!   issue, opened once per pushed commit (a marker in its body is looked
//!   for first, so a retry after a crash does not open a second one), with
//!   an issues-phase token revoked right after.

use std::time::Duration;

use benchops::reconcile::{Place, inert};
use benchops_github::{AppClient, GitHubClient, GitHubError, NewIssue, Phase, Repo, StateFilter};
use rusqlite::params;
use tokio::sync::{OnceCell, mpsc};

use crate::events::Work;
use crate::store::{InboxItem, Store, StoreError};
use crate::telemetry::Metrics;

/// How often delivery ids are pruned and failed items tried again.
pub const HOUSEKEEPING_EVERY: Duration = Duration::from_secs(600);
/// How long the decision log keeps a decision, in days.
pub const DECISIONS_KEPT_DAYS: i64 = 90;
/// The most failed items tried again at one tick.
const RETRY_BATCH: usize = 100;
/// The most queued items taken at once; the facts of a run of them are
/// written in one transaction.
pub const WORK_BATCH: usize = 256;

/// The label of audit issues.
pub const AUDIT_LABEL: &str = "benchops-audit";
/// How often an audit issue is tried before the item is left for later.
const AUDIT_ATTEMPTS: u32 = 4;

/// Why an item's work failed; the item stays in the inbox and is tried
/// again. Logged, never shown to a client.
#[derive(Debug, thiserror::Error)]
pub enum WorkError {
    /// The facts (or the end of the item) could not be written.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The App's bot login could not be learned.
    #[error("GET /app: {0}")]
    BotLogin(#[source] GitHubError),
    /// Every try at the audit issue failed: the last one's reason.
    #[error("audit issue not opened after {AUDIT_ATTEMPTS} attempts: {0}")]
    Audit(#[source] AuditError),
}

/// Why one try at an audit issue failed. GitHub's messages name the
/// operation.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// The pushed repository's name is not `owner/name`.
    #[error(transparent)]
    Repo(GitHubError),
    /// The App's installation on the repository could not be read.
    #[error(transparent)]
    Installation(GitHubError),
    /// The issues-phase token could not be minted.
    #[error("mint the issues-phase token: {0}")]
    Token(#[source] GitHubError),
    /// The audit issues could not be listed (to find one already open).
    #[error(transparent)]
    List(GitHubError),
    /// The audit label could not be made sure of.
    #[error(transparent)]
    Label(GitHubError),
    /// The audit issue could not be created.
    #[error(transparent)]
    Create(GitHubError),
}

/// What the worker works with.
#[derive(Debug)]
pub struct Worker {
    pub(crate) store: Store,
    pub(crate) metrics: std::sync::Arc<Metrics>,
    pub(crate) github: GitHubClient,
    pub(crate) app_client: AppClient,
    pub(crate) bot_login: std::sync::Arc<OnceCell<String>>,
}

impl Worker {
    /// Works off the inbox, then the queue until it is closed and empty.
    /// Every `housekeeping` it prunes delivery ids and tries again the
    /// items that failed (an audit issue GitHub refused), oldest first.
    pub async fn run(self, mut rx: mpsc::Receiver<i64>, housekeeping: Duration) {
        let mut tried_up_to = 0i64;
        match self.store.inbox(usize::MAX >> 1) {
            Ok(left) => {
                if !left.is_empty() {
                    tracing::info!(items = left.len(), "resuming the inbox of an earlier run");
                }
                for item in left {
                    tried_up_to = tried_up_to.max(item.seq);
                    self.handle(item).await;
                }
            }
            Err(e) => tracing::error!(error = %e, "could not read the inbox"),
        }
        // Delivery ids are pruned at start, then at every tick whatever the
        // traffic (most deliveries never reach this queue).
        self.prune();
        let mut tick = tokio::time::interval(housekeeping);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            let seq = tokio::select! {
                seq = rx.recv() => match seq {
                    Some(seq) => seq,
                    None => break,
                },
                _ = tick.tick() => {
                    self.prune();
                    self.retry_failed(tried_up_to).await;
                    continue;
                }
            };
            let mut seqs = vec![seq];
            while seqs.len() < WORK_BATCH {
                match rx.try_recv() {
                    Ok(seq) => seqs.push(seq),
                    Err(_) => break,
                }
            }
            self.metrics.set_queue_depth(rx.len());
            tried_up_to = tried_up_to.max(seqs.iter().copied().max().unwrap_or(seq));
            match self.store.inbox_items(&seqs) {
                Ok(items) => self.handle_all(items).await,
                Err(e) => tracing::error!(error = %e, seq, "could not read inbox items"),
            }
        }
        self.metrics.set_queue_depth(0);
        tracing::info!("queue drained");
    }

    /// Tries again the inbox items up to `seq` that were tried already and
    /// are still there (their work failed); later ones wait for the queue.
    async fn retry_failed(&self, up_to: i64) {
        let left = match self.store.inbox(RETRY_BATCH) {
            Ok(left) => left,
            Err(e) => {
                tracing::error!(error = %e, "could not read the inbox");
                return;
            }
        };
        let failed: Vec<InboxItem> = left.into_iter().filter(|i| i.seq <= up_to).collect();
        if failed.is_empty() {
            return;
        }
        tracing::info!(items = failed.len(), "trying failed inbox items again");
        for item in failed {
            self.handle(item).await;
        }
    }

    /// Forgets delivery ids older than 8 days (GitHub redelivers within 3)
    /// beyond the newest 200,000, and decisions older than
    /// [`DECISIONS_KEPT_DAYS`] (the log also keeps at most
    /// [`crate::store::DECISIONS_KEPT`]).
    pub fn prune(&self) {
        let now = jiff::Timestamp::now();
        let before = now.as_second() - 8 * 86_400;
        match self.store.prune_deliveries(before, 200_000) {
            Ok(n) if n > 0 => tracing::info!(removed = n, "pruned delivery ids"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "could not prune delivery ids"),
        }
        let before = now - jiff::SignedDuration::from_hours(24 * DECISIONS_KEPT_DAYS);
        match self.store.prune_decisions(&before.to_string()) {
            Ok(n) if n > 0 => tracing::info!(removed = n, "pruned decisions"),
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "could not prune decisions"),
        }
    }

    /// Does `items`, in order: each run of items that only write facts in
    /// one transaction, anything else alone.
    async fn handle_all(&self, items: Vec<InboxItem>) {
        let mut facts: Vec<(InboxItem, Work)> = Vec::new();
        for item in items {
            match read_work(&item) {
                Some(work) if !matches!(work, Work::HistoryPush { .. }) => facts.push((item, work)),
                work => {
                    self.record_all(std::mem::take(&mut facts));
                    self.handle_read(item, work).await;
                }
            }
        }
        self.record_all(facts);
    }

    /// Writes the facts of `items` and ends them in one transaction; if
    /// that fails, each alone.
    fn record_all(&self, items: Vec<(InboxItem, Work)>) {
        if items.len() > 1 {
            let seqs: Vec<i64> = items.iter().map(|(i, _)| i.seq).collect();
            let together = self.store.finish_all(&seqs, |tx| {
                items
                    .iter()
                    .try_for_each(|(item, work)| record(tx, &item.delivery, work))
            });
            match together {
                Ok(()) => return,
                Err(e) => {
                    tracing::warn!(items = items.len(), error = %e, "facts of a batch not written together; each item alone")
                }
            }
        }
        for (item, work) in items {
            self.record_one(&item, &work);
        }
    }

    fn record_one(&self, item: &InboxItem, work: &Work) {
        if let Err(e) = self
            .store
            .finish(item.seq, |tx| record(tx, &item.delivery, work))
        {
            tracing::error!(delivery = %item.delivery, event = %item.event, error = %e, "work failed; left in the inbox");
        }
    }

    async fn handle(&self, item: InboxItem) {
        let work = read_work(&item);
        self.handle_read(item, work).await;
    }

    /// Does `item`, whose work was read as `work` (`None`: unreadable, and
    /// dropped).
    async fn handle_read(&self, item: InboxItem, work: Option<Work>) {
        let Some(work) = work else {
            let _ = self.store.finish(item.seq, |_| Ok(()));
            return;
        };
        if matches!(work, Work::HistoryPush { .. }) {
            if let Err(e) = self.audit(&item, &work).await {
                tracing::error!(delivery = %item.delivery, event = %item.event, error = %e, "work failed; left in the inbox");
            }
        } else {
            self.record_one(&item, &work);
        }
    }

    async fn bot(&self) -> Result<String, WorkError> {
        self.bot_login
            .get_or_try_init(|| async {
                self.app_client
                    .get_app()
                    .await
                    .map(|a| a.bot_login())
                    .map_err(WorkError::BotLogin)
            })
            .await
            .cloned()
    }

    async fn audit(&self, item: &InboxItem, work: &Work) -> Result<(), WorkError> {
        let Work::HistoryPush {
            repository,
            installation,
            after,
            forced,
            sender,
            sender_is_bot,
        } = work
        else {
            return Ok(());
        };
        let bot = self.bot().await?;
        if *sender_is_bot && *sender == bot {
            return Ok(self.store.finish(item.seq, |_| Ok(()))?);
        }
        let now = jiff::Timestamp::now().to_string();
        self.store.write(|tx| {
            tx.execute(
                "INSERT OR IGNORE INTO audits (repository, after_sha, pusher, delivery, issue, at)
                     VALUES (?1, ?2, ?3, ?4, NULL, ?5)",
                params![repository, after, sender, item.delivery, now],
            )
        })?;
        let mut attempt = 0;
        loop {
            if attempt > 0 {
                tokio::time::sleep(Duration::from_millis(500 << attempt)).await;
            }
            match self
                .open_audit_issue(repository, *installation, after, *forced, sender)
                .await
            {
                Ok(number) => {
                    tracing::warn!(
                        repository,
                        after,
                        sender,
                        issue = number,
                        "history pushed outside the publisher: audit issue"
                    );
                    self.store.finish(item.seq, |tx| {
                        tx.execute(
                            "UPDATE audits SET issue = ?3 WHERE repository = ?1 AND after_sha = ?2",
                            params![repository, after, number as i64],
                        )
                    })?;
                    return Ok(());
                }
                Err(e) => {
                    attempt += 1;
                    if attempt >= AUDIT_ATTEMPTS {
                        return Err(WorkError::Audit(e));
                    }
                }
            }
        }
    }

    async fn open_audit_issue(
        &self,
        repository: &str,
        installation: Option<u64>,
        after: &str,
        forced: bool,
        sender: &str,
    ) -> Result<u64, AuditError> {
        let repo = Repo::parse(repository).map_err(AuditError::Repo)?;
        let installation = match installation {
            Some(i) => benchops_github::InstallationId::new(i),
            None => {
                self.app_client
                    .repo_installation(&repo)
                    .await
                    .map_err(AuditError::Installation)?
                    .id
            }
        };
        let token = self
            .app_client
            .create_installation_token(installation, Phase::Issues, std::slice::from_ref(&repo))
            .await
            .map_err(AuditError::Token)?;
        let gh = self.github.with_installation_token(&token);
        let result = open_with(&gh, &repo, after, forced, sender).await;
        if let Err(e) = gh.revoke_token().await {
            tracing::warn!(error = %e, "could not revoke the audit token");
        }
        result
    }
}

/// The marker that names the pushed commit in an audit issue.
fn audit_marker(after: &str) -> String {
    format!("<!-- benchops:audit after={after} -->")
}

async fn open_with(
    gh: &GitHubClient,
    repo: &Repo,
    after: &str,
    forced: bool,
    sender: &str,
) -> Result<u64, AuditError> {
    let marker = audit_marker(after);
    let open = gh
        .list_issues(repo, StateFilter::All, &[AUDIT_LABEL])
        .await
        .map_err(AuditError::List)?;
    if let Some(i) = open
        .iter()
        .find(|i| i.body.as_deref().is_some_and(|b| b.contains(&marker)))
    {
        return Ok(i.number);
    }
    let who = inert(sender, Place::Code, 100);
    let sha = inert(after, Place::Code, 80);
    let body = format!(
        "{marker}\n`benchmark-history` was pushed to by {who}, not by the publisher: the \
         branch now points at {sha}{}.\n\nOnly `benchops-publish` writes this branch, and the \
         repository's ruleset should have refused this push. Check the ruleset (restrict \
         updates and force pushes to the App), then compare the branch with the last receipt \
         under `receipts/`; the runbook `runbooks/app.md` says how.\n",
        if forced { " (a forced push)" } else { "" }
    );
    let issue = NewIssue {
        title: format!(
            "benchmark-history pushed outside the publisher by {}",
            inert(sender, Place::Plain, 100)
        ),
        body,
        labels: vec![AUDIT_LABEL.to_owned()],
    };
    gh.ensure_labels(
        repo,
        &[benchops_github::LabelSpec {
            name: AUDIT_LABEL.to_owned(),
            color: "b60205".to_owned(),
            description: Some("benchmark-history changed outside the publisher".to_owned()),
        }],
    )
    .await
    .map_err(AuditError::Label)?;
    gh.create_issue(repo, &issue)
        .await
        .map(|i| i.number)
        .map_err(AuditError::Create)
}

/// Writes the facts of one work item.
fn record(tx: &rusqlite::Transaction<'_>, delivery: &str, work: &Work) -> rusqlite::Result<()> {
    let now = jiff::Timestamp::now().to_string();
    match work {
        Work::Installation {
            action,
            id,
            account,
            repositories,
        } => {
            let id = *id as i64;
            match action.as_str() {
                "deleted" => {
                    tx.execute(
                        "UPDATE installations SET deleted = 1, updated_at = ?2 WHERE id = ?1",
                        params![id, now],
                    )?;
                    tx.execute(
                        "DELETE FROM installation_repos WHERE installation_id = ?1",
                        params![id],
                    )?;
                }
                _ => {
                    let suspended = action == "suspend";
                    tx.execute(
                        "INSERT INTO installations (id, account, suspended, deleted, updated_at)
                         VALUES (?1, ?2, ?3, 0, ?4)
                         ON CONFLICT(id) DO UPDATE SET account = ?2, deleted = 0, updated_at = ?4,
                           suspended = CASE WHEN ?5 THEN ?3 ELSE suspended END",
                        params![
                            id,
                            account,
                            suspended,
                            now,
                            action == "suspend" || action == "unsuspend"
                        ],
                    )?;
                    if action == "created" {
                        for r in repositories {
                            tx.execute(
                                "INSERT OR REPLACE INTO installation_repos (installation_id, repo_id, full_name)
                                 VALUES (?1, ?2, ?3)",
                                params![id, r.id as i64, r.full_name],
                            )?;
                        }
                    }
                }
            }
        }
        Work::InstallationRepositories {
            id,
            account,
            added,
            removed,
        } => {
            let id = *id as i64;
            tx.execute(
                "INSERT INTO installations (id, account, suspended, deleted, updated_at)
                 VALUES (?1, ?2, 0, 0, ?3)
                 ON CONFLICT(id) DO UPDATE SET updated_at = ?3",
                params![id, account, now],
            )?;
            for r in added {
                tx.execute(
                    "INSERT OR REPLACE INTO installation_repos (installation_id, repo_id, full_name)
                     VALUES (?1, ?2, ?3)",
                    params![id, r.id as i64, r.full_name],
                )?;
            }
            for r in removed {
                tx.execute(
                    "DELETE FROM installation_repos WHERE installation_id = ?1 AND repo_id = ?2",
                    params![id, r.id as i64],
                )?;
            }
        }
        Work::Issue {
            repository,
            number,
            title,
            drift_key,
            author,
            action,
            label,
            actor,
            actor_is_bot,
            at,
        } => {
            tx.execute(
                "INSERT OR IGNORE INTO issue_events
                   (delivery, repository, issue, title, action, label, actor, actor_is_app, at,
                    drift_key, author)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
                params![
                    delivery,
                    repository,
                    *number as i64,
                    title,
                    action,
                    label,
                    actor,
                    actor_is_bot,
                    at,
                    drift_key,
                    author
                ],
            )?;
        }
        Work::WorkflowRun {
            repository,
            run_id,
            run_attempt,
            workflow_path,
            event,
            status,
            conclusion,
            at,
        } => {
            // A later delivery for the same attempt replaces an earlier
            // state, never the other way round.
            tx.execute(
                "INSERT INTO workflow_runs
                   (repository, run_id, run_attempt, workflow_path, event, status, conclusion, at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                 ON CONFLICT(repository, run_id, run_attempt) DO UPDATE SET
                   status = ?6, conclusion = ?7, at = ?8 WHERE ?8 >= workflow_runs.at",
                params![
                    repository,
                    *run_id as i64,
                    *run_attempt as i64,
                    workflow_path,
                    event,
                    status,
                    conclusion,
                    at
                ],
            )?;
        }
        Work::HistoryPush { .. } => {}
    }
    Ok(())
}

/// The work an inbox item holds; `None` (logged) when its extract cannot
/// be read, and the item is to be dropped. The extract holds payload text
/// (titles, logins): the error names the JSON path only.
fn read_work(item: &InboxItem) -> Option<Work> {
    let de = &mut serde_json::Deserializer::from_str(&item.extract);
    match serde_path_to_error::deserialize(de) {
        Ok(w) => Some(w),
        Err(e) => {
            let reason = crate::events::json_problem(&e);
            tracing::error!(seq = item.seq, reason, "unreadable inbox item dropped");
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_audit_names_its_last_try_and_what_it_did() {
        let refused = GitHubError::NotFound {
            operation: "create an installation token",
            request_id: None,
        };
        assert_eq!(
            WorkError::Audit(AuditError::Token(refused)).to_string(),
            "audit issue not opened after 4 attempts: mint the issues-phase token: \
             create an installation token: not found (404)"
        );
        let refused = GitHubError::NotFound {
            operation: "list issues",
            request_id: None,
        };
        // GitHub's own message names the operation.
        assert_eq!(
            AuditError::List(refused).to_string(),
            "list issues: not found (404)"
        );
    }
}
