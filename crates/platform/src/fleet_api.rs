//! `branch_fleet_nN` with the `harness-api` driver: the fleet of
//! [`super::fleet`] on a real (or simulated) repository.
//!
//! - `fleet.seed` (setup, reported apart from the workflow): a branch, a
//!   file and a pull request per seeded branch; then, for each conflicting
//!   one, the same path with other content committed on main, so that it
//!   genuinely conflicts.
//! - `fleet.classify`: poll every pull request until GitHub has computed
//!   its mergeability (a settle, with its polls and quantization).
//! - `fleet.plan`, `fleet.apply`: merge the mergeable ones in order, leave
//!   the conflicts open.
//! - `fleet.sync`: observe which seeded pull requests are still open; the
//!   oracle checks these observed survivors, never the plan's own list.
//! - `fleet.oracle`: the action plan, the merge order, the survivors and
//!   the conflict count.
//!
//! Untimed cleanup deletes the branches and the files left on main.

use std::collections::BTreeMap;

use super::anatomy::{api_row, api_settle};
use super::api::{ApiClient, ApiError};
use super::fleet::{self, Spec};
use super::row::{Row, ms};
use super::runner::{Ctx, run_operations};
use super::triage::Action;

fn path_of(run_id: &str, s: &Spec) -> String {
    format!(".benchops-platform/{run_id}/fleet/{}.txt", s.name)
}

/// One fleet run over the API.
pub fn run(
    ctx: &Ctx<'_>,
    client: &ApiClient,
    repo: &str,
    operations: &[String],
    n: u32,
) -> Vec<Row> {
    let run_id = ctx.meta.run_id.clone();
    let specs = fleet::specs(&run_id, ctx.run, n);
    let mut prs: BTreeMap<String, u64> = BTreeMap::new();
    let mut classified: Vec<(String, bool)> = Vec::new();
    let mut actions: Vec<Action> = Vec::new();
    let mut order: Vec<String> = Vec::new();
    let mut observed: Vec<String> = Vec::new();
    let mut handler = |op: &str| -> Option<Row> {
        let mut row = match op {
            "fleet.seed" => api_row(
                ctx,
                client,
                op,
                &[
                    format!("api:POST /repos/{repo}/git/refs x{n}"),
                    format!(
                        "api:PUT /repos/{repo}/contents/… x{}",
                        n + fleet::conflict_count(n)
                    ),
                    format!("api:POST /repos/{repo}/pulls x{n}"),
                ],
                || {
                    let base = client.branch_sha(repo, "main")?;
                    for s in &specs {
                        client.create_branch(repo, &s.name, &base)?;
                        client.create_file(
                            repo,
                            &path_of(&run_id, s),
                            &s.name,
                            &format!("benchops fleet {run_id} {}", s.name),
                            format!("fleet {run_id} branch {} ({})\n", s.name, s.kind).as_bytes(),
                        )?;
                        let (number, _) = client.create_pr(
                            repo,
                            &format!("benchops fleet {run_id} {}", s.name),
                            &s.name,
                            "main",
                        )?;
                        prs.insert(s.name.clone(), number);
                    }
                    for s in specs.iter().filter(|s| s.kind != "clean") {
                        client.create_file(
                            repo,
                            &path_of(&run_id, s),
                            "main",
                            &format!("benchops fleet {run_id}: main's side of {}", s.name),
                            format!("main's side of {} in {run_id}\n", s.name).as_bytes(),
                        )?;
                    }
                    Ok(())
                },
            ),
            "fleet.classify" => {
                let mut last: Vec<(String, Option<bool>)> = Vec::new();
                let r = api_settle(
                    ctx,
                    client,
                    op,
                    &format!("api:GET /repos/{repo}/pulls/<n> mergeable x{n} (poll)"),
                    || {
                        last = specs
                            .iter()
                            .map(|s| {
                                let m = prs
                                    .get(&s.name)
                                    .and_then(|n| client.get_pr(repo, *n).ok())
                                    .and_then(|pr| {
                                        pr.get("mergeable").and_then(serde_json::Value::as_bool)
                                    });
                                (s.name.clone(), m)
                            })
                            .collect();
                        last.iter().all(|(_, m)| m.is_some())
                    },
                );
                classified = last
                    .iter()
                    .filter_map(|(name, m)| m.map(|m| (name.clone(), m)))
                    .collect();
                let mut r = r;
                r.set("branches_reviewed", classified.len());
                r
            }
            "fleet.plan" => {
                let start = ctx.clock.now_ms();
                (actions, order) = fleet::plan(&classified);
                let mut r = ctx.row(op);
                r.elapsed_ms = ms(ctx.clock.now_ms() - start);
                r.tool_call_count = None;
                r.set("action_plan", &actions);
                r.set("merge_order", &order);
                r
            }
            "fleet.apply" => {
                let mut merged = 0usize;
                let mut r = api_row(
                    ctx,
                    client,
                    op,
                    &[format!(
                        "api:PUT /repos/{repo}/pulls/<n>/merge x{}",
                        order.len()
                    )],
                    || {
                        for b in &order {
                            let n = prs.get(b).copied().ok_or_else(|| ApiError {
                                what: "fleet.apply".into(),
                                status: None,
                                message: format!("{b} has no pull request"),
                            })?;
                            client.merge_pr(repo, n)?;
                            merged += 1;
                        }
                        Ok(())
                    },
                );
                r.set("branches_merged", merged);
                r
            }
            "fleet.sync" => {
                let mut open = Vec::new();
                let mut r = api_row(
                    ctx,
                    client,
                    op,
                    &[format!("api:GET /repos/{repo}/pulls/<n> x{n}")],
                    || {
                        for (name, n) in &prs {
                            let pr = client.get_pr(repo, *n)?;
                            if pr.get("state").and_then(serde_json::Value::as_str) == Some("open") {
                                open.push(name.clone());
                            }
                        }
                        Ok(())
                    },
                );
                observed = open;
                r.set("final_survivors", &observed);
                r.note = Some("the survivors are the seeded pull requests observed open".into());
                r
            }
            "fleet.oracle" => {
                let start = ctx.clock.now_ms();
                let o = fleet::oracle(&specs, &actions, &order, &observed);
                let mut r = ctx.row(op);
                r.elapsed_ms = ms(ctx.clock.now_ms() - start);
                r.tool_call_count = None;
                if !fleet::oracle_ok(&o) {
                    r.fail(fleet::ORACLE_FAILED);
                }
                r.set("oracle", o);
                r
            }
            _ => return None,
        };
        row.set("branch_fleet_provider", "github:harness-api");
        row.set("branch_count", n);
        Some(row)
    };
    let mut rows = run_operations(ctx, operations, &mut handler);
    fleet::annotate_total(&mut rows);
    // Untimed cleanup; its failures are not data.
    for s in &specs {
        let _ = client.delete_branch(repo, &s.name);
        let _ = client.delete_file(
            repo,
            &path_of(&run_id, s),
            "main",
            &format!("benchops fleet {run_id}: clean up"),
        );
    }
    rows
}
