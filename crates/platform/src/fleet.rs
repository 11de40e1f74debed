//! `branch_fleet_nN` with the fake provider: N open branches are seeded,
//! about 30% of them (at least one when N > 1) constructed as conflicts
//! with main; the workflow classifies them, plans (merge the clean ones in
//! order, leave the conflicts open), applies, observes the open branches,
//! and an oracle checks the action plan, the merge order, the observed
//! survivors and the conflict count.
//!
//! The survivors the oracle checks are observed from the provider after the
//! apply (`fleet.sync`), never copied from the plan: a plan compared with
//! itself proves nothing. `fleet.seed` is setup: it is reported, and the
//! total says which operations are the workflow and which are setup.
//!
//! A fleet on a live platform opens a pull request per branch, so it is
//! gated ([`crate::live`]).

use std::collections::BTreeSet;

use serde::Serialize;

use super::row::{Row, Tokens, ms};
use super::runner::Ctx;
use super::triage::Action;

/// How many of `n` branches are seeded as conflicts: 30% of them, a tie
/// rounded to the even neighbour (as the seed's harness rounds, so that
/// n = 15 seeds 4 and n = 35 seeds 10), at least one when N > 1.
pub fn conflict_count(n: u32) -> u32 {
    if n <= 1 {
        0
    } else {
        ((f64::from(n) * 0.3).round_ties_even() as u32).max(1)
    }
}

/// One seeded branch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Spec {
    /// Its name.
    pub name: String,
    /// `clean` or `conflicting`.
    pub kind: String,
}

/// The seeded branches of run `run` of invocation `run_id`: the clean
/// ones first, then the conflicts. The names (and the paths made from
/// them) carry both, so no two runs ever share a branch or a file.
pub fn specs(run_id: &str, run: u32, n: u32) -> Vec<Spec> {
    let clean = n - conflict_count(n);
    (0..n)
        .map(|i| {
            let kind = if i >= clean { "conflicting" } else { "clean" };
            Spec {
                name: format!("fleet-{run_id}-r{run}-{}-{i:04}", &kind[..4]),
                kind: kind.to_owned(),
            }
        })
        .collect()
}

/// Why the fake provider refused a merge.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MergeRefused {
    /// The branch conflicts with main (or was never seeded).
    #[error("{0} is not mergeable")]
    NotMergeable(String),
    /// The branch is no longer open (merged already).
    #[error("{0} is not open")]
    NotOpen(String),
}

/// The in-process provider: open pull requests and whether each merges.
#[derive(Debug)]
pub struct FakeFleet {
    mergeable: Vec<(String, bool)>,
    open: BTreeSet<String>,
    merged: Vec<String>,
}

impl FakeFleet {
    /// Seeds `specs`: a conflicting branch does not merge.
    pub fn seed(specs: &[Spec]) -> FakeFleet {
        FakeFleet {
            mergeable: specs
                .iter()
                .map(|s| (s.name.clone(), s.kind == "clean"))
                .collect(),
            open: specs.iter().map(|s| s.name.clone()).collect(),
            merged: Vec::new(),
        }
    }

    /// Each open branch and whether it merges.
    pub fn classify(&self) -> Vec<(String, bool)> {
        self.mergeable
            .iter()
            .filter(|(n, _)| self.open.contains(n))
            .cloned()
            .collect()
    }

    /// Merges `name`: refused when it conflicts or is not open.
    pub fn merge(&mut self, name: &str) -> Result<(), MergeRefused> {
        let ok = self.mergeable.iter().any(|(n, m)| n == name && *m);
        if !ok {
            return Err(MergeRefused::NotMergeable(name.to_owned()));
        }
        if !self.open.remove(name) {
            return Err(MergeRefused::NotOpen(name.to_owned()));
        }
        self.merged.push(name.to_owned());
        Ok(())
    }

    /// The open branches, observed.
    pub fn open(&self) -> Vec<String> {
        self.open.iter().cloned().collect()
    }
}

/// The plan: merge what merges, in seeded order; leave conflicts open.
pub fn plan(classified: &[(String, bool)]) -> (Vec<Action>, Vec<String>) {
    let actions: Vec<Action> = classified
        .iter()
        .map(|(name, ok)| Action {
            branch: name.clone(),
            classification: if *ok { "clean" } else { "conflicting" }.to_owned(),
            action: if *ok { "merge" } else { "leave_conflict_open" }.to_owned(),
        })
        .collect();
    let order = actions
        .iter()
        .filter(|a| a.action == "merge")
        .map(|a| a.branch.clone())
        .collect();
    (actions, order)
}

/// The oracle over the plan and the observed survivors.
pub fn oracle(
    specs: &[Spec],
    actions: &[Action],
    order: &[String],
    observed: &[String],
) -> serde_json::Value {
    let expected: Vec<Action> = specs
        .iter()
        .map(|s| Action {
            branch: s.name.clone(),
            classification: s.kind.clone(),
            action: if s.kind == "clean" {
                "merge"
            } else {
                "leave_conflict_open"
            }
            .to_owned(),
        })
        .collect();
    let expected_order: Vec<String> = specs
        .iter()
        .filter(|s| s.kind == "clean")
        .map(|s| s.name.clone())
        .collect();
    let mut expected_survivors: Vec<String> = specs
        .iter()
        .filter(|s| s.kind != "clean")
        .map(|s| s.name.clone())
        .collect();
    expected_survivors.sort();
    let mut survivors = observed.to_vec();
    survivors.sort();
    let conflicts = actions
        .iter()
        .filter(|a| a.classification == "conflicting")
        .count();
    let seeded_conflicts = specs.iter().filter(|s| s.kind != "clean").count();
    serde_json::json!({
        "action_plan_correct": actions == expected.as_slice(),
        "merge_order_correct": order == expected_order.as_slice(),
        "final_survivors_correct": survivors == expected_survivors,
        "conflict_count_correct": conflicts == seeded_conflicts,
        "expected_merge_order": expected_order,
        "expected_final_survivors": expected_survivors,
        "final_survivors": survivors,
        "conflict_detected_count": conflicts,
    })
}

/// Whether every check of an [`oracle`] verdict passed.
pub fn oracle_ok(o: &serde_json::Value) -> bool {
    [
        "action_plan_correct",
        "merge_order_correct",
        "final_survivors_correct",
        "conflict_count_correct",
    ]
    .iter()
    .all(|k| o[k] == true)
}

/// The message of a failed oracle row.
pub const ORACLE_FAILED: &str =
    "the fleet oracle found a wrong plan, merge order, survivors or conflict count";

/// Marks `fleet.total` with the workflow apart from the setup: the
/// workflow's operations (classify to oracle, as declared), its time, its
/// return code (1 when one of them failed, 0 when they ran and none
/// failed, null when none ran), its failures and skips, its tool calls
/// (null when none ran or one ran without a count), and the setup's
/// operations and time.
pub fn annotate_total(rows: &mut [Row]) {
    let workflow: Vec<&Row> = rows
        .iter()
        .filter(|r| WORKFLOW.contains(&r.operation.as_str()))
        .collect();
    let ran: Vec<&Row> = workflow.iter().copied().filter(|r| !r.skipped).collect();
    let failures = ran.iter().filter(|r| r.failed()).count();
    let skips = workflow.len() - ran.len();
    let returncode = match (ran.is_empty(), failures) {
        (true, _) => None,
        (false, 0) => Some(0),
        (false, _) => Some(1),
    };
    let tool_calls = if ran.is_empty() {
        None
    } else {
        ran.iter().map(|r| r.tool_call_count).sum::<Option<u32>>()
    };
    let workflow_ops: Vec<String> = workflow.iter().map(|r| r.operation.clone()).collect();
    let workflow_ms: f64 = ran.iter().map(|r| r.elapsed_ms).sum();
    let setup_ms: f64 = rows
        .iter()
        .filter(|r| r.operation == "fleet.seed" && !r.skipped)
        .map(|r| r.elapsed_ms)
        .sum();
    for r in rows.iter_mut().filter(|r| r.operation == "fleet.total") {
        r.set("workflow_operations", &workflow_ops);
        r.set("workflow_elapsed_ms", ms(workflow_ms));
        r.set("workflow_returncode", returncode);
        r.set("workflow_failure_count", failures);
        r.set("workflow_skip_count", skips);
        r.set("workflow_tool_call_count", tool_calls);
        r.set("setup_elapsed_ms", ms(setup_ms));
        r.set("setup_operations", ["fleet.seed"]);
    }
}

/// The workflow operations (the rest is setup or the total).
pub const WORKFLOW: [&str; 5] = [
    "fleet.classify",
    "fleet.plan",
    "fleet.apply",
    "fleet.sync",
    "fleet.oracle",
];

/// Runs the fleet scenario's operations with the fake provider.
pub fn run(ctx: &Ctx<'_>, operations: &[String], n: u32) -> Vec<Row> {
    let specs = specs(&ctx.meta.run_id, ctx.run, n);
    let mut provider: Option<FakeFleet> = None;
    let mut classified: Vec<(String, bool)> = Vec::new();
    let mut actions: Vec<Action> = Vec::new();
    let mut order: Vec<String> = Vec::new();
    let mut observed: Vec<String> = Vec::new();
    let mut handler = |op: &str| -> Option<Row> {
        let start = ctx.clock.now_ms();
        let mut r = ctx.row(op);
        r.tool_call_count = Some(0);
        r.tokens = Some(Tokens::fake());
        r.set("branch_fleet_provider", "fake");
        r.set("branch_count", n);
        match (op, provider.as_mut()) {
            ("fleet.seed", _) => {
                provider = Some(FakeFleet::seed(&specs));
                r.set(
                    "seeded_branch_classes",
                    specs.iter().map(|s| s.kind.clone()).collect::<Vec<_>>(),
                );
                r.note = Some("setup: excluded from the workflow's time".into());
            }
            ("fleet.classify", Some(p)) => {
                classified = p.classify();
                r.set("branches_reviewed", classified.len());
            }
            ("fleet.plan", Some(_)) => {
                (actions, order) = plan(&classified);
                r.set("action_plan", &actions);
                r.set("merge_order", &order);
            }
            ("fleet.apply", Some(p)) => {
                let mut merged = 0;
                for b in &order {
                    if let Err(e) = p.merge(b) {
                        r.fail(&e.to_string());
                        break;
                    }
                    merged += 1;
                }
                r.set("branches_merged", merged);
            }
            ("fleet.sync", Some(p)) => {
                observed = p.open();
                r.set("final_survivors", &observed);
                r.note = Some(
                    "the fake provider has no checkout: the open branches are observed in memory"
                        .into(),
                );
            }
            ("fleet.oracle", Some(_)) => {
                let o = oracle(&specs, &actions, &order, &observed);
                if !oracle_ok(&o) {
                    r.fail(ORACLE_FAILED);
                }
                r.set("oracle", o);
            }
            (
                "fleet.classify" | "fleet.plan" | "fleet.apply" | "fleet.sync" | "fleet.oracle",
                None,
            ) => {
                r.fail("the fleet was not seeded: declare fleet.seed first");
            }
            _ => return None,
        }
        r.elapsed_ms = ms(ctx.clock.now_ms() - start);
        Some(r)
    };
    let mut rows = super::runner::run_operations(ctx, operations, &mut handler);
    annotate_total(&mut rows);
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_branches_three_conflicts() {
        assert_eq!(conflict_count(10), 3);
        assert_eq!(conflict_count(1), 0);
        assert_eq!(conflict_count(2), 1);
        let s = specs("r1", 0, 10);
        let mut p = FakeFleet::seed(&s);
        let (actions, order) = plan(&p.classify());
        assert_eq!(order.len(), 7);
        for b in &order {
            p.merge(b).expect("merges");
        }
        let o = oracle(&s, &actions, &order, &p.open());
        assert_eq!(o["final_survivors_correct"], true, "{o}");
        assert_eq!(o["conflict_detected_count"], 3);
        assert!(p.merge(&s[9].name).is_err(), "a conflict does not merge");
        // Survivors are observed: a provider that merged nothing fails.
        let fresh = FakeFleet::seed(&s);
        let o = oracle(&s, &actions, &order, &fresh.open());
        assert_eq!(o["final_survivors_correct"], false);
    }

    #[test]
    fn run_names_differ_so_no_two_runs_share_a_branch() {
        assert_ne!(specs("r", 0, 1)[0].name, specs("r", 1, 1)[0].name);
    }

    #[test]
    fn conflict_ties_round_to_even_as_the_seed_does() {
        // 30% of n: a tie goes to the even neighbour, never away from zero.
        for (n, want) in [(5, 2), (15, 4), (25, 8), (35, 10), (45, 14), (55, 16)] {
            assert_eq!(conflict_count(n), want, "n = {n}");
            let s = specs("r", 0, n);
            assert_eq!(
                s.iter().filter(|s| s.kind == "conflicting").count(),
                want as usize,
                "n = {n}"
            );
        }
        assert_eq!(conflict_count(3), 1, "0.9 rounds to 1");
        assert_eq!(conflict_count(4), 1, "1.2 rounds to 1");
    }
}
