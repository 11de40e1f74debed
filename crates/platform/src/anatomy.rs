//! The `harness-api` driver's single-branch scenarios: the capability probe
//! and the pull-request anatomy (`pr_single_anatomy`): publish a branch,
//! open a pull request, settle visible, settle mergeable, under
//! `check-instant` post the required status and settle green, request the
//! merge, settle merged, settle main, and sync.
//!
//! Each operation is timed on the run's clock around exactly its requests,
//! and its row carries the requests it made ([`ApiClient::since`]). The
//! payload is unique per invocation (the run id is in the branch, the path
//! and the content), so the publish creates its file without looking for
//! an existing one (one request fewer inside the timed `branch.publish`,
//! as in the seed's harness), and a second run on the same repository
//! works. Cleanup, untimed, deletes the branch and the file the merge left
//! on main.

use super::api::{ApiClient, ApiError};
use super::row::{Row, Tokens, ms};
use super::runner::{Ctx, run_operations};
use super::settle::settle;

/// The operation a `check-instant` run inserts before the merge request.
pub const CHECKS_GREEN: &str = "integration.checks.green.settle";
/// The commit-status context the harness posts under `check-instant`.
pub const CHECK_INSTANT_CONTEXT: &str = "benchops/check-instant";

/// A measured API operation: `f` runs inside the timed region.
pub fn api_row(
    ctx: &Ctx<'_>,
    client: &ApiClient,
    op: &str,
    commands: &[String],
    f: impl FnOnce() -> Result<(), ApiError>,
) -> Row {
    let before = client.snapshot();
    let start = ctx.clock.now_ms();
    let result = f();
    let mut r = ctx.row(op);
    r.elapsed_ms = ms(ctx.clock.now_ms() - start);
    r.command = commands.iter().map(|c| c.as_str().into()).collect();
    r.tool_call_count = None;
    r.api_metrics = Some(client.since(&before));
    r.tokens = Some(Tokens::api());
    if let Err(e) = result {
        r.fail(&e.to_string());
    }
    r
}

/// A settle by polling the API: the row's duration is the observed wait.
pub fn api_settle(
    ctx: &Ctx<'_>,
    client: &ApiClient,
    op: &str,
    command: &str,
    poll: impl FnMut() -> bool,
) -> Row {
    let before = client.snapshot();
    let s = settle(
        ctx.clock,
        ctx.settings.interval_s,
        ctx.settings.settle_timeout_s,
        poll,
    );
    let mut r = ctx.row(op);
    r.elapsed_ms = s.observed_wait_ms;
    r.command = vec![command.into()];
    r.tool_call_count = None;
    r.api_metrics = Some(client.since(&before));
    r.tokens = Some(Tokens::api());
    if s.settled != Some(true) {
        r.fail(&format!(
            "not settled within {} s ({} polls)",
            ctx.settings.settle_timeout_s, s.poll_iterations
        ));
    }
    r.settle = Some(s);
    r
}

/// `check-instant`, executed: post the required status on the head, then
/// settle on the combined status going green. The post is part of the
/// operation's cost, inside its time; `pace` runs before the post (races).
pub fn checks_green(
    ctx: &Ctx<'_>,
    client: &ApiClient,
    repo: &str,
    head: Option<&str>,
    pace: &mut dyn FnMut(),
) -> Row {
    let before = client.snapshot();
    let start = ctx.clock.now_ms();
    let commands = [
        format!("api:POST /repos/{repo}/statuses/<head>"),
        format!("api:GET /repos/{repo}/commits/<head>/status (poll)"),
    ];
    let posted = match head {
        None => Err("the head commit is unknown, so no status can be posted".to_owned()),
        Some(sha) => {
            pace();
            client
                .post_status(repo, sha, "success", CHECK_INSTANT_CONTEXT)
                .map_err(|e| e.to_string())
        }
    };
    let post_ms = ms(ctx.clock.now_ms() - start);
    let mut r = ctx.row(CHECKS_GREEN);
    r.command = commands.iter().map(|c| c.as_str().into()).collect();
    r.tool_call_count = None;
    r.tokens = Some(Tokens::api());
    r.set("status_context", CHECK_INSTANT_CONTEXT);
    r.set("status_post_elapsed_ms", post_ms);
    if let Err(e) = posted {
        r.elapsed_ms = post_ms;
        r.api_metrics = Some(client.since(&before));
        r.fail(&e);
        return r;
    }
    let sha = head.unwrap_or_default();
    let s = settle(
        ctx.clock,
        ctx.settings.interval_s,
        ctx.settings.settle_timeout_s,
        || {
            client
                .combined_state(repo, sha)
                .is_ok_and(|st| st == "success")
        },
    );
    r.elapsed_ms = ms(post_ms + s.observed_wait_ms);
    r.api_metrics = Some(client.since(&before));
    if s.settled != Some(true) {
        r.fail("the combined status did not turn success before the timeout");
    }
    r.settle = Some(s);
    r
}

/// The operations, with `integration.checks.green.settle` inserted under
/// `check-instant` when the scenario lacks it: right before the merge
/// request, or, in a scenario without one, before the first total (so the
/// total sums it), else at the end.
pub fn with_checks(operations: &[String], check_instant: bool) -> Vec<String> {
    let mut ops = operations.to_vec();
    if check_instant && !ops.iter().any(|o| o == CHECKS_GREEN) {
        let at = ops
            .iter()
            .position(|o| o == "integration.merge.request")
            .or_else(|| ops.iter().position(|o| o.ends_with(".total")))
            .unwrap_or(ops.len());
        ops.insert(at, CHECKS_GREEN.to_owned());
    }
    ops
}

/// `platform_capability_probe`: can the token see the repository?
pub fn probe(ctx: &Ctx<'_>, client: &ApiClient, repo: Option<&str>, ops: &[String]) -> Vec<Row> {
    let Some(repo) = repo else {
        return ctx.skip_all(ops, "github_repo_not_configured");
    };
    let mut handler = |op: &str| -> Option<Row> {
        (op == "capability.probe").then(|| {
            api_row(ctx, client, op, &[format!("api:GET /repos/{repo}")], || {
                client.get_repo(repo).map(|_| ())
            })
        })
    };
    run_operations(ctx, ops, &mut handler)
}

/// The disposable branch of run `run` (and race branch `b`).
pub fn branch_name(run_id: &str, run: u32, b: Option<u32>) -> String {
    let id = run_id.to_ascii_lowercase();
    match b {
        Some(b) => format!("benchops-platform-{id}-r{run}-b{b}"),
        None => format!("benchops-platform-{id}-r{run}"),
    }
}

/// The payload file of run `run` (and race branch `b`).
pub fn payload_path(run_id: &str, run: u32, b: Option<u32>) -> String {
    match b {
        Some(b) => format!(".benchops-platform/{run_id}/r{run}-b{b}.md"),
        None => format!(".benchops-platform/{run_id}/r{run}.md"),
    }
}

/// What one branch's operations share.
#[derive(Debug, Default)]
pub struct BranchState {
    /// Main's sha before the branch.
    pub base: Option<String>,
    /// The branch's head commit.
    pub head: Option<String>,
    /// The pull request's number.
    pub pr: Option<u64>,
}

/// One branch's anatomy handler: `None` for an operation it lacks.
#[allow(clippy::too_many_arguments)]
pub fn branch_op(
    ctx: &Ctx<'_>,
    client: &ApiClient,
    repo: &str,
    branch: &str,
    path: &str,
    state: &mut BranchState,
    op: &str,
    pace: &mut dyn FnMut(),
    check_instant: bool,
) -> Option<Row> {
    let pr_cmd = |s: &str| format!("api:GET /repos/{repo}/pulls/<n>{s} (poll)");
    let no_pr = || ApiError {
        what: op.to_owned(),
        status: None,
        message: "no pull request was opened".into(),
    };
    Some(match op {
        "branch.publish" => api_row(
            ctx,
            client,
            op,
            &[
                format!("api:POST /repos/{repo}/git/refs"),
                format!("api:PUT /repos/{repo}/contents/{path}"),
            ],
            || {
                let base = state.base.clone().unwrap_or_default();
                pace();
                client.create_branch(repo, branch, &base)?;
                pace();
                let content = format!(
                    "benchops platform lane, run {} ({}), branch {branch}\n",
                    ctx.meta.run_id, ctx.run
                );
                state.head = Some(client.create_file(
                    repo,
                    path,
                    branch,
                    &format!("benchops platform lane {} r{}", ctx.meta.run_id, ctx.run),
                    content.as_bytes(),
                )?);
                Ok(())
            },
        ),
        "integration.open" => api_row(
            ctx,
            client,
            op,
            &[format!("api:POST /repos/{repo}/pulls")],
            || {
                pace();
                let (n, head) = client.create_pr(
                    repo,
                    &format!("benchops platform lane {} r{}", ctx.meta.run_id, ctx.run),
                    branch,
                    "main",
                )?;
                state.pr = Some(n);
                state.head.get_or_insert(head);
                Ok(())
            },
        ),
        "integration.visible.settle" => {
            let n = state.pr;
            api_settle(ctx, client, op, &pr_cmd(""), || {
                n.is_some_and(|n| client.get_pr(repo, n).is_ok())
            })
        }
        "integration.mergeable.settle" => {
            let n = state.pr;
            api_settle(ctx, client, op, &pr_cmd(" mergeable"), || {
                n.and_then(|n| client.get_pr(repo, n).ok())
                    .is_some_and(|pr| pr.get("mergeable").is_some_and(|m| !m.is_null()))
            })
        }
        CHECKS_GREEN if check_instant => {
            checks_green(ctx, client, repo, state.head.as_deref(), pace)
        }
        CHECKS_GREEN => Row::structural(
            ctx.meta,
            ctx.scenario,
            ctx.run,
            op,
            "protection-none: no required status check, nothing to wait for",
        ),
        "integration.merge.request" => api_row(
            ctx,
            client,
            op,
            &[format!("api:PUT /repos/{repo}/pulls/<n>/merge")],
            || {
                let n = state.pr.ok_or_else(no_pr)?;
                pace();
                client.merge_pr(repo, n)
            },
        ),
        "integration.merged.settle" => {
            let n = state.pr;
            api_settle(ctx, client, op, &pr_cmd(" merged"), || {
                n.and_then(|n| client.get_pr(repo, n).ok())
                    .is_some_and(|pr| pr.get("merged") == Some(&serde_json::Value::Bool(true)))
            })
        }
        "integration.main.settle" => {
            let base = state.base.clone();
            api_settle(
                ctx,
                client,
                op,
                &format!("api:GET /repos/{repo}/git/ref/heads/main (poll)"),
                || {
                    client
                        .branch_sha(repo, "main")
                        .is_ok_and(|sha| Some(sha) != base)
                },
            )
        }
        "integration.sync.local" => {
            let mut r = api_row(
                ctx,
                client,
                op,
                &[format!("api:GET /repos/{repo}/git/ref/heads/main")],
                || client.branch_sha(repo, "main").map(|_| ()),
            );
            r.note = Some(
                "harness-api has no local checkout: this observes the merged main ref; the cost of syncing a checkout is a cli-driver measurement"
                    .into(),
            );
            r
        }
        _ => return None,
    })
}

/// Untimed cleanup: the branch, and the payload the merge left on main.
/// Failures here are not data.
pub fn cleanup(client: &ApiClient, repo: &str, branch: &str, path: &str, run_id: &str) {
    let _ = client.delete_branch(repo, branch);
    let _ = client.delete_file(
        repo,
        path,
        "main",
        &format!("benchops platform lane {run_id}: clean up"),
    );
}

/// `pr_single_anatomy` (any single-branch scenario) with the API driver.
pub fn run(
    ctx: &Ctx<'_>,
    client: &ApiClient,
    repo: &str,
    operations: &[String],
    check_instant: bool,
) -> Vec<Row> {
    let ops = with_checks(operations, check_instant);
    let mut state = BranchState::default();
    match client.branch_sha(repo, "main") {
        Ok(sha) => state.base = Some(sha),
        Err(e) => {
            let reason = format!("setup_failed:{}", super::row::tail(&e.to_string()));
            return ctx.skip_all(&ops, &reason);
        }
    }
    let branch = branch_name(&ctx.meta.run_id, ctx.run, None);
    let path = payload_path(&ctx.meta.run_id, ctx.run, None);
    let mut no_pace = || {};
    let mut handler = |op: &str| {
        branch_op(
            ctx,
            client,
            repo,
            &branch,
            &path,
            &mut state,
            op,
            &mut no_pace,
            check_instant,
        )
    };
    let rows = run_operations(ctx, &ops, &mut handler);
    cleanup(client, repo, &branch, &path, &ctx.meta.run_id);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ops(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn check_instant_inserts_its_settle_before_the_merge_or_else_before_the_total() {
        let with = |list: &[&str]| with_checks(&ops(list), true);
        assert_eq!(
            with(&[
                "branch.publish",
                "integration.merge.request",
                "integration.total"
            ]),
            ops(&[
                "branch.publish",
                CHECKS_GREEN,
                "integration.merge.request",
                "integration.total"
            ])
        );
        assert_eq!(
            with(&["branch.publish", "integration.open", "integration.total"]),
            ops(&[
                "branch.publish",
                "integration.open",
                CHECKS_GREEN,
                "integration.total"
            ]),
            "without a merge request it still comes before the total"
        );
        assert_eq!(
            with(&["branch.publish", "integration.open"]),
            ops(&["branch.publish", "integration.open", CHECKS_GREEN])
        );
        assert_eq!(
            with_checks(&ops(&["branch.publish", "integration.total"]), false),
            ops(&["branch.publish", "integration.total"]),
            "protection-none inserts nothing"
        );
    }
}
