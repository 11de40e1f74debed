//! Interleaved stages: several commits of the subject measured side by side
//! in one benchmark, so that whatever the machine does during the session
//! reaches every side alike.
//!
//! A same-session confirmation measures side A (the baseline commit) and
//! side B (the candidate); a bisection step measures its good bound, its
//! midpoint and its bad bound. The stage's intent is the suite intent
//! restricted to the cases it measures, with one more parameter,
//! `benchops_run`, whose values are the run tokens in the order the runs
//! go: `003-b` is round 3 of side B, `w01-a` a warm-up of side A. Each
//! round is a permutation of the sides drawn from a recorded seed
//! (randomised blocks, [`benchops::same_session::block_order`]). Every
//! token is one measured run, and the token varies fastest, so plan order
//! is the interleaved order on every backend: local workers claim in plan
//! order, and a Slurm array runs its tasks in index order.
//!
//! The subject of each side is a tree materialised in the state directory
//! ([`crate::subject`]). The stage's environment names every side's tree
//! and commit (`BENCHOPS_SUBJECT_DIR_A`, `BENCHOPS_SUBJECT_COMMIT_A`, …),
//! and the child wrapper gives each run its own side's as
//! `BENCHOPS_SUBJECT_DIR` and `BENCHOPS_SUBJECT_COMMIT`
//! ([`crate::subject::side_env`]).

use std::collections::BTreeMap;

use benchops::CaseId;
use benchops::num::Finite;
use benchops::plan::Plan;
use benchops::record::{Direction, RunSide, SideRun};
use serde_json::Value;

use super::select::{SelectError, Selection};
use super::types::{InterleavedRun, StageBenchmark};
use crate::bench::Status;
use crate::state::StateDir;

pub use crate::subject::{RUN_PARAM, parse_token, side_env};

/// One side of an interleaved stage: which commit, in which tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SideSubject {
    /// The side.
    pub side: RunSide,
    /// The materialised tree.
    pub dir: String,
    /// The commit.
    pub commit: String,
}

/// What an interleaved stage runs: the sides and the order of the runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Interleave {
    /// The sides.
    pub sides: Vec<SideSubject>,
    /// The run tokens, in the order the runs go.
    pub tokens: Vec<String>,
}

impl Interleave {
    /// `rounds` measured rounds of every side after `warmup` warm-up
    /// rounds, each round's order drawn from `seed`.
    pub fn new(sides: Vec<SideSubject>, rounds: u32, warmup: u32, seed: u64) -> Interleave {
        let order = benchops::same_session::block_order(sides.len(), warmup + rounds, seed);
        let tokens = order
            .chunks(sides.len().max(1))
            .enumerate()
            .flat_map(|(r, block)| {
                let sides = &sides;
                block.iter().map(move |&i| {
                    let side = sides[i].side.as_str();
                    if (r as u32) < warmup {
                        format!("w{:02}-{side}", r + 1)
                    } else {
                        format!("{:03}-{side}", r as u32 - warmup + 1)
                    }
                })
            })
            .collect();
        Interleave { sides, tokens }
    }

    /// The stage's environment: every side's tree and commit.
    pub fn env(&self) -> Vec<(String, String)> {
        self.sides
            .iter()
            .flat_map(|s| {
                let up = s.side.as_str().to_ascii_uppercase();
                [
                    (format!("BENCHOPS_SUBJECT_DIR_{up}"), s.dir.clone()),
                    (format!("BENCHOPS_SUBJECT_COMMIT_{up}"), s.commit.clone()),
                ]
            })
            .collect()
    }
}

/// The selection of an interleaved stage: maps every planned case back to
/// the case asked for and its token.
pub(super) fn selection(
    planned: Plan,
    chosen: &[(CaseId, BTreeMap<String, Value>)],
    interleave: &Interleave,
    source_name: &str,
) -> Result<Selection, SelectError> {
    let runs_per_point = planned.runs_per_point();
    let mut runs = Vec::new();
    for p in 0..planned.point_count() as u64 {
        let Some(child) = planned.child(p * runs_per_point) else {
            continue;
        };
        let mut point = child.point.clone();
        let Some(token) = point
            .remove(RUN_PARAM)
            .and_then(|v| v.as_str().map(str::to_owned))
        else {
            continue;
        };
        if let Some((case, _)) = chosen.iter().find(|(_, pt)| *pt == point) {
            runs.push(InterleavedRun {
                planned: child.case.to_string(),
                case: case.to_string(),
                token,
            });
        }
    }
    let expected: Vec<String> = chosen.iter().map(|(c, _)| c.to_string()).collect();
    let complete = chosen.iter().all(|(c, _)| {
        runs.iter().filter(|r| r.case == c.as_str()).count() == interleave.tokens.len()
    });
    if !complete {
        return Err(SelectError::Mismatch {
            source_name: source_name.to_owned(),
            expected,
            got: runs.iter().map(|r| r.planned.clone()).collect(),
        });
    }
    Ok(Selection {
        plan: planned,
        cases: expected,
        runs,
    })
}

/// The measured runs of one case and metric of an interleaved stage, in the
/// order they started.
#[derive(Debug, Clone, PartialEq)]
pub struct KeyRuns {
    /// Which way is better.
    pub direction: Direction,
    /// The metric's unit, as the first run that reported it said.
    pub unit: String,
    /// Every measured run (warm-ups left out).
    pub runs: Vec<SideRun>,
}

impl KeyRuns {
    /// The non-null values of one side.
    pub fn values(&self, side: RunSide) -> Vec<f64> {
        self.runs
            .iter()
            .filter(|r| r.side == side)
            .filter_map(|r| r.value.map(Finite::get))
            .collect()
    }
}

/// Reads the finished interleaved stage benchmark `stage` (observed as
/// `status`): per case and metric, every measured run with its side, its
/// host and its value (null when the run failed or did not report the
/// metric), in the order the runs started (plan order on a tie).
pub fn read_runs(
    state: &StateDir,
    stage: &StageBenchmark,
    status: &Status,
) -> BTreeMap<(String, String), KeyRuns> {
    let by_planned: BTreeMap<&str, &InterleavedRun> =
        stage.runs.iter().map(|r| (r.planned.as_str(), r)).collect();
    // (case, started_at, index, side, host, metrics of the run)
    let mut seen: Vec<(String, String, u64, RunSide, String, Vec<_>)> = Vec::new();
    for c in &status.children {
        let Some(run) = by_planned.get(c.case.as_str()) else {
            continue;
        };
        let Some((false, side)) = parse_token(&run.token) else {
            continue;
        };
        let dir = state.attempt_dir(&stage.benchmark, c.index, c.attempt, c.restart);
        let result = crate::child::read_result(&dir.join("result.json")).ok();
        let (started, host) = result
            .as_ref()
            .map(|r| (r.started_at.clone(), r.host.clone()))
            .unwrap_or_default();
        let metrics = match &result {
            Some(r) if c.classified.class == benchops::classify::RunClass::Succeeded => {
                crate::bench::metric_values(r)
            }
            _ => Vec::new(),
        };
        let host = if host.is_empty() {
            "unknown".to_owned()
        } else {
            host
        };
        seen.push((run.case.clone(), started, c.index, side, host, metrics));
    }
    seen.sort_by(|a, b| {
        benchops::time::order_key(&a.1)
            .cmp(&benchops::time::order_key(&b.1))
            .then(a.2.cmp(&b.2))
    });
    // The metrics each case reported somewhere, so that a failed run is a
    // null of each.
    let mut names: BTreeMap<&str, BTreeMap<String, (Direction, String)>> = BTreeMap::new();
    for (case, _, _, _, _, metrics) in &seen {
        for m in metrics {
            names
                .entry(case.as_str())
                .or_default()
                .entry(m.name.clone())
                .or_insert_with(|| (m.direction, m.unit.clone()));
        }
    }
    let mut out: BTreeMap<(String, String), KeyRuns> = BTreeMap::new();
    for (case, _, _, side, host, metrics) in &seen {
        for (name, (direction, unit)) in names.get(case.as_str()).into_iter().flatten() {
            let value = metrics
                .iter()
                .find(|m| &m.name == name)
                .and_then(|m| m.value);
            out.entry((case.clone(), name.clone()))
                .or_insert_with(|| KeyRuns {
                    direction: *direction,
                    unit: unit.clone(),
                    runs: Vec::new(),
                })
                .runs
                .push(SideRun {
                    side: *side,
                    node: host.clone(),
                    value,
                });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sides(list: &[RunSide]) -> Vec<SideSubject> {
        list.iter()
            .map(|&side| SideSubject {
                side,
                dir: format!("/trees/{}", side.as_str()),
                commit: format!("{:0>40}", side.as_str().len()),
            })
            .collect()
    }

    #[test]
    fn tokens_are_randomised_blocks_with_warm_ups_first() {
        let i = Interleave::new(sides(&[RunSide::A, RunSide::B]), 10, 1, 7);
        assert_eq!(i.tokens.len(), 22);
        assert!(i.tokens[..2].iter().all(|t| t.starts_with("w01-")));
        for r in 1..=10 {
            let round: Vec<&String> = i
                .tokens
                .iter()
                .filter(|t| t.starts_with(&format!("{r:03}-")))
                .collect();
            assert_eq!(round.len(), 2, "round {r}: {:?}", i.tokens);
        }
        // Seeded: the same seed, the same order; another, another.
        assert_eq!(
            i,
            Interleave::new(sides(&[RunSide::A, RunSide::B]), 10, 1, 7)
        );
        assert_ne!(
            i.tokens,
            Interleave::new(sides(&[RunSide::A, RunSide::B]), 10, 1, 8).tokens
        );
        // Not always the same side first.
        let firsts: std::collections::BTreeSet<&str> =
            i.tokens[2..].chunks(2).map(|c| &c[0][4..]).collect();
        assert_eq!(firsts.len(), 2, "{:?}", i.tokens);
        let three = Interleave::new(sides(&[RunSide::Good, RunSide::Mid, RunSide::Bad]), 4, 0, 1);
        assert_eq!(three.tokens.len(), 12);
        assert_eq!(parse_token("003-mid"), Some((false, RunSide::Mid)));
        assert_eq!(parse_token("w01-a"), Some((true, RunSide::A)));
        assert_eq!(parse_token("001-x"), None);
    }

    #[test]
    fn a_run_sees_its_own_sides_subject() {
        let i = Interleave::new(sides(&[RunSide::A, RunSide::B]), 1, 0, 1);
        let env: BTreeMap<String, String> = i.env().into_iter().collect();
        let point: BTreeMap<String, Value> = [(RUN_PARAM.to_owned(), Value::from("001-b"))].into();
        let got: BTreeMap<String, String> = side_env(&point, &env).into_iter().collect();
        assert_eq!(got["BENCHOPS_SUBJECT_DIR"], "/trees/b");
        assert_eq!(
            got["BENCHOPS_SUBJECT_COMMIT"],
            env["BENCHOPS_SUBJECT_COMMIT_B"]
        );
        assert_eq!(got["BENCHOPS_SIDE"], "b");
        // Any other run is left alone.
        assert!(side_env(&BTreeMap::new(), &env).is_empty());
    }
}
