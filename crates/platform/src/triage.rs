//! `branch_triage_nN` with the fake provider: N seeded branches cycle through
//! four classes, the plan decides an action for each, the provider applies
//! it, and an oracle checks the action plan, the merge order, the final
//! survivors and the conflict count against what was seeded.
//!
//! | class | how it is seeded | action |
//! |---|---|---|
//! | `clean` | mergeable, up to date | `merge` |
//! | `stale` | behind main by 2 | `refresh_then_merge` |
//! | `duplicate` | the same patch as the first clean branch | `close_duplicate` |
//! | `conflicting` | not mergeable, with a conflict path | `keep_open_manual_resolution` |
//!
//! The classification reads only what a reviewer would see (conflict
//! paths, mergeability, the patch id, how far behind main), never the
//! seeded class. The provider is in process: no command runs and no network
//! is touched, and its rows say so (null token estimates with a note).

use std::collections::BTreeSet;

use serde::Serialize;

use super::row::{Row, Tokens, ms};
use super::runner::Ctx;

/// The four classes, in seeding order.
pub const CLASSES: [&str; 4] = ["clean", "stale", "duplicate", "conflicting"];

fn action_of(class: &str) -> &'static str {
    match class {
        "clean" => "merge",
        "stale" => "refresh_then_merge",
        "duplicate" => "close_duplicate",
        _ => "keep_open_manual_resolution",
    }
}

/// One seeded branch as a reviewer sees it (plus what it was seeded as).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Branch {
    /// Its name.
    pub name: String,
    /// What it was seeded as (for the oracle only).
    pub expected_class: String,
    /// Commits main has that it lacks.
    pub behind_by: u32,
    /// Whether it merges cleanly.
    pub mergeable: bool,
    /// Paths that conflict with main.
    pub conflict_paths: Vec<String>,
    /// An id of its change (equal ids: the same change).
    pub patch_id: String,
}

/// The seeded branches.
pub fn seed(n: u32) -> Vec<Branch> {
    (0..n)
        .map(|i| {
            let class = CLASSES[i as usize % CLASSES.len()];
            let mut b = Branch {
                name: format!("triage-{class}-{i}"),
                expected_class: class.to_owned(),
                behind_by: 0,
                mergeable: true,
                conflict_paths: Vec::new(),
                patch_id: format!("patch-{class}-{i}"),
            };
            match class {
                "stale" => b.behind_by = 2,
                "duplicate" => b.patch_id = "patch-clean-0".to_owned(),
                "conflicting" => {
                    b.mergeable = false;
                    b.conflict_paths = vec![format!("src/conflict-{i}.txt")];
                }
                _ => {}
            }
            b
        })
        .collect()
}

/// One planned action.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Action {
    /// The branch.
    pub branch: String,
    /// What it was classified as.
    pub classification: String,
    /// What to do.
    pub action: String,
}

/// The plan: one action per reviewed branch, and the merge order.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Plan {
    /// The actions, in review order.
    pub actions: Vec<Action>,
    /// The branches to land, in order.
    pub merge_order: Vec<String>,
}

fn classify(b: &Branch, seen: &mut BTreeSet<String>) -> &'static str {
    if !b.conflict_paths.is_empty() || !b.mergeable {
        return "conflicting";
    }
    if seen.contains(&b.patch_id) {
        return "duplicate";
    }
    seen.insert(b.patch_id.clone());
    if b.behind_by > 0 { "stale" } else { "clean" }
}

/// The plan for what was reviewed.
pub fn plan(reviewed: &[Branch]) -> Plan {
    let mut seen = BTreeSet::new();
    let mut p = Plan::default();
    for b in reviewed {
        let class = classify(b, &mut seen);
        let action = action_of(class);
        if matches!(action, "merge" | "refresh_then_merge") {
            p.merge_order.push(b.name.clone());
        }
        p.actions.push(Action {
            branch: b.name.clone(),
            classification: class.to_owned(),
            action: action.to_owned(),
        });
    }
    p
}

/// The in-process provider: the branches and which are still open.
#[derive(Debug)]
pub struct FakeTriage {
    branches: Vec<Branch>,
    open: BTreeSet<String>,
    closed: Vec<String>,
}

impl FakeTriage {
    /// A provider with `n` seeded branches, all open.
    pub fn new(n: u32) -> FakeTriage {
        let branches = seed(n);
        FakeTriage {
            open: branches.iter().map(|b| b.name.clone()).collect(),
            branches,
            closed: Vec::new(),
        }
    }

    /// The open branches.
    pub fn review(&self) -> Vec<Branch> {
        self.branches
            .iter()
            .filter(|b| self.open.contains(&b.name))
            .cloned()
            .collect()
    }

    /// Applies `plan`: merged and closed branches leave the open set.
    pub fn apply(&mut self, plan: &Plan) {
        for a in &plan.actions {
            if a.action != "keep_open_manual_resolution" && self.open.remove(&a.branch) {
                self.closed.push(a.branch.clone());
            }
        }
    }

    /// The branches still open, observed (not taken from the plan).
    pub fn survivors(&self) -> Vec<String> {
        self.open.iter().cloned().collect()
    }
}

/// The oracle's verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Oracle {
    /// The plan's actions are the seeded ones.
    pub action_plan_correct: bool,
    /// The merge order is the seeded order of mergeable branches.
    pub merge_order_correct: bool,
    /// The observed survivors are the conflicting branches.
    pub final_survivors_correct: bool,
    /// Conflicts detected equal conflicts seeded.
    pub conflict_count_correct: bool,
    /// The expected merge order.
    pub expected_merge_order: Vec<String>,
    /// The expected survivors.
    pub expected_final_survivors: Vec<String>,
}

impl Oracle {
    /// Whether every check passed.
    pub fn ok(&self) -> bool {
        self.action_plan_correct
            && self.merge_order_correct
            && self.final_survivors_correct
            && self.conflict_count_correct
    }
}

/// Checks `plan` and the observed `survivors` against `seeded`.
pub fn oracle(seeded: &[Branch], plan: &Plan, survivors: &[String]) -> Oracle {
    let expected: Vec<Action> = seeded
        .iter()
        .map(|b| Action {
            branch: b.name.clone(),
            classification: b.expected_class.clone(),
            action: action_of(&b.expected_class).to_owned(),
        })
        .collect();
    let expected_merge_order: Vec<String> = expected
        .iter()
        .filter(|a| matches!(a.action.as_str(), "merge" | "refresh_then_merge"))
        .map(|a| a.branch.clone())
        .collect();
    let mut expected_final_survivors: Vec<String> = seeded
        .iter()
        .filter(|b| b.expected_class == "conflicting")
        .map(|b| b.name.clone())
        .collect();
    expected_final_survivors.sort();
    let mut observed = survivors.to_vec();
    observed.sort();
    let conflicts = |actions: &[Action]| {
        actions
            .iter()
            .filter(|a| a.classification == "conflicting")
            .count()
    };
    Oracle {
        action_plan_correct: plan.actions == expected,
        merge_order_correct: plan.merge_order == expected_merge_order,
        final_survivors_correct: observed == expected_final_survivors,
        conflict_count_correct: conflicts(&plan.actions) == conflicts(&expected),
        expected_merge_order,
        expected_final_survivors,
    }
}

/// Counts by class in `plan`.
fn counts(plan: &Plan) -> serde_json::Value {
    let n = |c: &str| {
        plan.actions
            .iter()
            .filter(|a| a.classification == c)
            .count()
    };
    serde_json::json!({
        "clean": n("clean"), "stale": n("stale"),
        "duplicate": n("duplicate"), "conflicting": n("conflicting"),
    })
}

/// Runs the triage scenario's operations with the fake provider.
pub fn run(ctx: &Ctx<'_>, operations: &[String], n: u32) -> Vec<Row> {
    let mut provider = FakeTriage::new(n);
    let mut seeded = Vec::new();
    let mut reviewed = Vec::new();
    let mut current = Plan::default();
    let mut handler = |op: &str| -> Option<Row> {
        let start = ctx.clock.now_ms();
        let mut r = ctx.row(op);
        r.tool_call_count = Some(0);
        r.tokens = Some(Tokens::fake());
        r.set("branch_triage_provider", "fake");
        match op {
            "triage.seed" => {
                seeded = provider.review();
                r.set("branches_seeded", seeded.len());
                r.set(
                    "seeded_branch_classes",
                    seeded
                        .iter()
                        .map(|b| b.expected_class.clone())
                        .collect::<Vec<_>>(),
                );
            }
            "triage.review" => {
                reviewed = provider.review();
                r.set("branches_reviewed", reviewed.len());
            }
            "triage.plan" => {
                current = plan(&reviewed);
                r.set("action_plan", &current.actions);
                r.set("merge_order", &current.merge_order);
                r.set("detected_counts", counts(&current));
            }
            "triage.apply" => {
                provider.apply(&current);
                r.set("branches_closed", provider.closed.len());
                r.set("final_survivors", provider.survivors());
            }
            "triage.oracle" => {
                let o = oracle(&seeded, &current, &provider.survivors());
                if !o.ok() {
                    r.fail("the triage oracle found a wrong plan, merge order, survivors or conflict count");
                }
                r.set("oracle", &o);
                r.set("final_survivors", provider.survivors());
                r.set(
                    "conflict_detected_count",
                    current
                        .actions
                        .iter()
                        .filter(|a| a.classification == "conflicting")
                        .count(),
                );
            }
            _ => return None,
        }
        r.elapsed_ms = ms(ctx.clock.now_ms() - start);
        Some(r)
    };
    super::runner::run_operations(ctx, operations, &mut handler)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eight_branches_two_of_each_class() {
        let mut p = FakeTriage::new(8);
        let seeded = p.review();
        let pl = plan(&seeded);
        let classes: Vec<&str> = pl
            .actions
            .iter()
            .map(|a| a.classification.as_str())
            .collect();
        assert_eq!(
            classes,
            [
                "clean",
                "stale",
                "duplicate",
                "conflicting",
                "clean",
                "stale",
                "duplicate",
                "conflicting"
            ]
        );
        assert_eq!(
            pl.merge_order,
            [
                "triage-clean-0",
                "triage-stale-1",
                "triage-clean-4",
                "triage-stale-5"
            ]
        );
        p.apply(&pl);
        assert_eq!(
            p.survivors(),
            ["triage-conflicting-3", "triage-conflicting-7"]
        );
        let o = oracle(&seeded, &pl, &p.survivors());
        assert!(o.ok(), "{o:?}");
        // The oracle catches a wrong plan and wrong survivors.
        let mut wrong = pl.clone();
        wrong.merge_order.reverse();
        assert!(!oracle(&seeded, &wrong, &p.survivors()).merge_order_correct);
        assert!(!oracle(&seeded, &pl, &[]).final_survivors_correct);
    }
}
