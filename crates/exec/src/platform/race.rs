//! `integration_race_nN`: N task branches, one after the other, each
//! through publish, pull request and merge (the anatomy's operations, one
//! row per branch), paced by a rate-limit budget, then the race's own rows:
//!
//! - `race.publish.window`: first `branch.publish` start to last
//!   `branch.publish` end;
//! - `race.integrate.window`: first `integration.open` start to last
//!   `integration.main.settle` end;
//! - `race.pacing.injected`: the sum of the waits the budget injected;
//! - `race.total`: the whole race, a wall-clock span.
//!
//! Pacing happens inside the timed region of the operation it delays, for
//! every driver, so a row's duration includes its wait; the wait is also on
//! the row (`pacing_injected_ms`) and summed in `race.pacing.injected`,
//! and never subtracted. A window whose endpoints were never observed is a
//! skip row, never a zero; one that did not see every branch is a failed
//! row. A race in which no branch ran has nothing to report: its race rows
//! are skips too, so the run exits 3.

use std::time::Duration;

use super::anatomy::{self, BranchState};
use super::api::ApiClient;
use super::clock::Clock;
use super::row::{Row, Tokens, ms};
use super::runner::{Ctx, finish, guarded};

/// A budget of content operations an hour.
#[derive(Debug)]
pub struct Budgeter {
    /// The budget.
    pub ops_per_hour: f64,
    interval: Duration,
    next: Option<Duration>,
    /// Every wait injected so far.
    pub injected: Duration,
}

impl Budgeter {
    /// At most `ops_per_hour` content operations an hour, evenly spaced.
    pub fn new(ops_per_hour: f64) -> Budgeter {
        let per = if ops_per_hour.is_finite() && ops_per_hour > 0.0 {
            3600.0 / ops_per_hour
        } else {
            0.0
        };
        Budgeter {
            ops_per_hour,
            interval: Duration::from_secs_f64(per),
            next: None,
            injected: Duration::ZERO,
        }
    }

    /// Waits (on `clock`) until the next operation is within budget.
    pub fn pace(&mut self, clock: &dyn Clock) {
        let now = clock.now();
        let at = match self.next {
            Some(next) if next > now => {
                let wait = next - now;
                clock.sleep(wait);
                self.injected += wait;
                next
            }
            _ => now,
        };
        self.next = Some(at + self.interval);
    }
}

/// A race over the API driver.
#[allow(clippy::too_many_arguments)]
pub fn run(
    ctx: &Ctx<'_>,
    client: &ApiClient,
    repo: &str,
    operations: &[String],
    branches: u32,
    ops_per_hour: f64,
    check_instant: bool,
) -> Vec<Row> {
    let (race_ops, branch_ops): (Vec<String>, Vec<String>) = operations
        .iter()
        .cloned()
        .partition(|o| o.starts_with("race."));
    let mut budget = Budgeter::new(ops_per_hour);
    let mut rows: Vec<Row> = Vec::new();
    let mut timeline: Vec<(String, f64, f64)> = Vec::new();
    let mut aborted: Option<String> = None;
    let race_start = ctx.clock.now_ms();
    let mut cleanups = Vec::new();
    for b in 0..branches {
        let skip_branch = |rows: &mut Vec<Row>, reason: &str| {
            for op in &branch_ops {
                let mut r = ctx.skip(op, reason);
                r.race_branch = Some(b);
                rows.push(r);
            }
        };
        if let Some(at) = &aborted {
            skip_branch(&mut rows, &format!("prior_step_failed:{at}"));
            continue;
        }
        let branch = anatomy::branch_name(&ctx.meta.run_id, ctx.run, Some(b));
        let path = anatomy::payload_path(&ctx.meta.run_id, ctx.run, Some(b));
        // Serial landing: each branch starts from main as it is now.
        let mut state = BranchState::default();
        match client.branch_sha(repo, "main") {
            Ok(sha) => state.base = Some(sha),
            Err(e) => {
                aborted = Some(format!("branch-{b}:setup"));
                skip_branch(
                    &mut rows,
                    &format!("setup_failed:{}", super::row::tail(&e.to_string())),
                );
                continue;
            }
        }
        cleanups.push((branch.clone(), path.clone()));
        for op in &branch_ops {
            if let Some(at) = &aborted {
                let mut r = ctx.skip(op, &format!("prior_step_failed:{at}"));
                r.race_branch = Some(b);
                rows.push(r);
                continue;
            }
            let injected_before = budget.injected;
            let start = ctx.clock.now_ms();
            let mut pace = || budget.pace(ctx.clock);
            let row = guarded(ctx, op, || {
                anatomy::branch_op(
                    ctx,
                    client,
                    repo,
                    &branch,
                    &path,
                    &mut state,
                    op,
                    &mut pace,
                    check_instant,
                )
            });
            let end = ctx.clock.now_ms();
            let mut row = row.unwrap_or_else(|| ctx.skip(op, "operation_not_implemented"));
            row.race_branch = Some(b);
            row.set("race_branch_name", &branch);
            let injected = budget.injected - injected_before;
            if !injected.is_zero() {
                row.set("pacing_injected_ms", ms(injected.as_secs_f64() * 1000.0));
                row.set(
                    "pacing_note",
                    "elapsed_ms includes this injected pacing wait; it is summed in race.pacing.injected and never subtracted",
                );
            }
            if !row.skipped {
                timeline.push((op.clone(), start, end));
            }
            if row.failed() {
                aborted = Some(format!("branch-{b}:{op}"));
            }
            rows.push(row);
        }
    }
    let race_end = ctx.clock.now_ms();
    let summary = race_rows(
        ctx,
        &race_ops,
        &rows,
        &timeline,
        &budget,
        (race_start, race_end),
        branches,
    );
    rows.extend(summary);
    for (branch, path) in cleanups {
        anatomy::cleanup(client, repo, &branch, &path, &ctx.meta.run_id);
    }
    finish(ctx, &mut rows);
    rows
}

/// The race-level rows.
pub fn race_rows(
    ctx: &Ctx<'_>,
    race_ops: &[String],
    branch_rows: &[Row],
    timeline: &[(String, f64, f64)],
    budget: &Budgeter,
    (start, end): (f64, f64),
    branches: u32,
) -> Vec<Row> {
    let ran = branch_rows.iter().any(|r| !r.skipped);
    let failed_ops: Vec<&str> = branch_rows
        .iter()
        .filter(|r| r.failed())
        .map(|r| r.operation.as_str())
        .collect();
    let base = |op: &str, elapsed: f64, note: &str| {
        let mut r = ctx.row(op);
        r.elapsed_ms = ms(elapsed);
        r.tool_call_count = None;
        r.note = Some(note.to_owned());
        r.set("race_branch_count", branches);
        if branch_rows.iter().any(|r| r.api_metrics.is_some()) {
            r.tokens = Some(Tokens::api());
        }
        r
    };
    let window = |op: &str, from: &str, to: &str, note: &str| {
        let starts: Vec<f64> = timeline
            .iter()
            .filter(|(o, _, _)| o == from)
            .map(|t| t.1)
            .collect();
        let ends: Vec<f64> = timeline
            .iter()
            .filter(|(o, _, _)| o == to)
            .map(|t| t.2)
            .collect();
        let (Some(first), Some(last)) = (
            starts.iter().copied().reduce(f64::min),
            ends.iter().copied().reduce(f64::max),
        ) else {
            let mut r = ctx.skip(op, &format!("race_window_unobserved:{from}->{to}"));
            r.set("race_branch_count", branches);
            return r;
        };
        let mut r = base(op, last - first, note);
        let complete = starts.len() == branches as usize
            && ends.len() == branches as usize
            && !failed_ops.contains(&from)
            && !failed_ops.contains(&to);
        if !complete {
            r.fail("the window did not see every branch through it");
        }
        r.set("window_start_operation", from);
        r.set("window_end_operation", to);
        r
    };
    race_ops
        .iter()
        .map(|op| match op.as_str() {
            _ if !ran => {
                let mut r = ctx.skip(op, "race_no_branch_ran");
                r.set("race_branch_count", branches);
                r
            }
            "race.publish.window" => window(
                op,
                "branch.publish",
                "branch.publish",
                "first branch.publish start to last branch.publish end, across the branches",
            ),
            "race.integrate.window" => window(
                op,
                "integration.open",
                "integration.main.settle",
                "first integration.open start to last integration.main.settle end, across the branches",
            ),
            "race.pacing.injected" => {
                let mut r = base(
                    op,
                    budget.injected.as_secs_f64() * 1000.0,
                    "the sum of the pacing waits the budget injected, reported and never subtracted from any operation",
                );
                r.set("budget_ops_per_hour", budget.ops_per_hour);
                r
            }
            "race.total" => {
                let mut r = base(
                    op,
                    end - start,
                    "the whole race, a wall-clock span on the run's clock",
                );
                if branch_rows.iter().any(Row::failed) {
                    r.returncode = Some(1);
                }
                r.api_metrics = super::runner::sum_api(branch_rows);
                r.set(
                    "poll_iterations_total",
                    branch_rows
                        .iter()
                        .filter_map(|r| r.settle.as_ref().map(|s| s.poll_iterations))
                        .sum::<u32>(),
                );
                r
            }
            _ => ctx.skip(op, "operation_not_implemented"),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::clock::FakeClock;

    #[test]
    fn the_budget_spaces_operations_and_counts_its_waits() {
        let c = FakeClock::new();
        let mut b = Budgeter::new(3600.0); // one a second
        b.pace(&c);
        assert_eq!(b.injected, Duration::ZERO, "the first is free");
        b.pace(&c);
        assert_eq!(b.injected, Duration::from_secs(1));
        assert_eq!(
            c.now(),
            Duration::from_secs(1),
            "the wait was slept on the run's clock"
        );
        c.advance(Duration::from_secs(5));
        b.pace(&c);
        assert_eq!(
            b.injected,
            Duration::from_secs(1),
            "no wait after a quiet spell"
        );
    }
}
