//! `integration_race_nN`: N task branches, one after the other, each
//! through publish, pull request and merge (the anatomy's operations, one
//! row per branch), paced by a rate-limit budget, then the race's own rows:
//!
//! - `race.publish.window`: first `branch.publish` start to last
//!   `branch.publish` end;
//! - `race.integrate.window`: first `integration.open` start to last
//!   `integration.main.settle` end;
//! - `race.pacing.injected`: the sum of the waits the budget injected;
//! - `race.total`: the whole race, a wall-clock span; it lists every branch
//!   row's operation (`summarized_operations`, branch by branch).
//!
//! Pacing happens inside the timed region of the operation it delays, for
//! every driver, so a row's duration includes its wait; the wait is also on
//! the row (`pacing_injected_ms`) and summed in `race.pacing.injected`,
//! and never subtracted. A window whose endpoints were never observed is a
//! skip row, never a zero; one that did not see every branch is a failed
//! row. A race in which no branch ran has nothing to report: its race rows
//! are skips too, so the run exits 3.

use std::path::PathBuf;
use std::time::Duration;

use super::anatomy::{self, BranchState};
use super::api::{ApiClient, ApiError};
use super::clock::RunClock;
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
    pub fn pace(&mut self, clock: &dyn RunClock) {
        let now = clock.monotonic();
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

/// One branch of a race, as a driver runs it.
pub trait RaceBranch {
    /// Runs `op`, calling `pace` before each content operation inside the
    /// operation's timed region; `None` when the driver lacks `op`.
    fn op(&mut self, op: &str, pace: &mut dyn FnMut()) -> Option<Row>;
    /// Untimed cleanup, after the race's own rows; failures are not data.
    fn cleanup(&mut self);
}

/// Why the untimed setup of a run or of a race branch failed. Its
/// [`skip_reason`](SetupError::skip_reason) is the skip reason of every
/// row it kept from running.
#[derive(Debug, thiserror::Error)]
pub enum SetupError {
    /// The working directory could not be created.
    #[error("create the working directory {}", path.display())]
    Workdir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A setup command failed (or could not run).
    #[error("run the setup step {step}")]
    Command {
        /// The step: the adapter's program, or the `gh`/`git` step.
        step: String,
        /// Why, as the command said it (its error, else its stderr).
        output: String,
    },
    /// The run's payload file could not be written.
    #[error("write the payload file {}", path.display())]
    Payload {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The API did not give main's sha.
    #[error("read main's sha")]
    Base(#[source] ApiError),
    /// `git ls-remote` named no sha for main.
    #[error("read main's sha with git ls-remote")]
    NoMainSha,
}

impl SetupError {
    /// The skip reason: `setup_failed:` and the step, then why (bounded).
    pub fn skip_reason(&self) -> String {
        use super::row::tail;
        match self {
            SetupError::Workdir { source, .. } => {
                format!("setup_failed:workdir:{}", tail(&source.to_string()))
            }
            SetupError::Command { step, output } => format!(
                "setup_failed:{step}:{}",
                output.trim().chars().take(120).collect::<String>()
            ),
            SetupError::Payload { source, .. } => format!("setup_failed:payload:{source}"),
            SetupError::Base(e) => format!("setup_failed:{}", tail(&e.to_string())),
            SetupError::NoMainSha => "setup_failed:ls-remote:main has no sha".to_owned(),
        }
    }
}

/// Builds branch `b` (its untimed setup), or says why it could not.
pub type MakeBranch<'a> = dyn FnMut(u32) -> Result<Box<dyn RaceBranch + 'a>, SetupError> + 'a;

/// A race: `branches` branches one after the other, each through the
/// declared per-branch operations, then the race's own rows.
pub fn run_race<'a>(
    ctx: &Ctx<'_>,
    operations: &[String],
    branches: u32,
    ops_per_hour: f64,
    make: &mut MakeBranch<'a>,
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
    let mut made: Vec<Box<dyn RaceBranch + 'a>> = Vec::new();
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
        let mut branch = match make(b) {
            Ok(br) => br,
            Err(e) => {
                aborted = Some(format!("branch-{b}:setup"));
                skip_branch(&mut rows, &e.skip_reason());
                continue;
            }
        };
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
            let row = guarded(ctx, op, || branch.op(op, &mut pace));
            let end = ctx.clock.now_ms();
            let mut row = row.unwrap_or_else(|| ctx.skip(op, "operation_not_implemented"));
            row.race_branch = Some(b);
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
        made.push(branch);
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
    for mut b in made {
        b.cleanup();
    }
    finish(ctx, &mut rows);
    rows
}

/// Runs `f` with `pace` first, inside one timed region: the row's duration
/// includes the pacing wait (for drivers whose steps time themselves).
pub fn paced(ctx: &Ctx<'_>, pace: &mut dyn FnMut(), f: impl FnOnce() -> Row) -> Row {
    let start = ctx.clock.now_ms();
    pace();
    let mut r = f();
    r.elapsed_ms = ms(ctx.clock.now_ms() - start);
    r
}

struct ApiBranch<'a> {
    ctx: &'a Ctx<'a>,
    client: &'a ApiClient,
    repo: &'a str,
    branch: String,
    path: String,
    state: BranchState,
    check_instant: bool,
}

impl RaceBranch for ApiBranch<'_> {
    fn op(&mut self, op: &str, pace: &mut dyn FnMut()) -> Option<Row> {
        let mut r = anatomy::branch_op(
            self.ctx,
            self.client,
            self.repo,
            &self.branch,
            &self.path,
            &mut self.state,
            op,
            pace,
            self.check_instant,
        )?;
        r.set("race_branch_name", &self.branch);
        Some(r)
    }

    fn cleanup(&mut self) {
        anatomy::cleanup(
            self.client,
            self.repo,
            &self.branch,
            &self.path,
            &self.ctx.meta.run_id,
        );
    }
}

/// A race over the API driver.
pub fn run<'a>(
    ctx: &'a Ctx<'a>,
    client: &'a ApiClient,
    repo: &'a str,
    operations: &[String],
    branches: u32,
    ops_per_hour: f64,
    check_instant: bool,
) -> Vec<Row> {
    let mut make = move |b: u32| -> Result<Box<dyn RaceBranch + 'a>, SetupError> {
        // Serial landing: each branch starts from main as it is now.
        let base = client.branch_sha(repo, "main").map_err(SetupError::Base)?;
        Ok(Box::new(ApiBranch {
            ctx,
            client,
            repo,
            branch: anatomy::branch_name(&ctx.meta.run_id, ctx.run, Some(b)),
            path: anatomy::payload_path(&ctx.meta.run_id, ctx.run, Some(b)),
            state: BranchState {
                base: Some(base),
                ..BranchState::default()
            },
            check_instant,
        }))
    };
    run_race(ctx, operations, branches, ops_per_hour, &mut make)
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
                    "summarized_operations",
                    branch_rows
                        .iter()
                        .map(|r| r.operation.as_str())
                        .collect::<Vec<_>>(),
                );
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
    use crate::clock::{Clock as _, FakeClock};

    #[test]
    fn a_failed_setup_names_its_step_in_the_skip_reason() {
        let io = || std::io::Error::from(std::io::ErrorKind::PermissionDenied);
        let cases: [(SetupError, String); 5] = [
            (
                SetupError::Workdir {
                    path: "/w".into(),
                    source: io(),
                },
                "setup_failed:workdir:permission denied".to_owned(),
            ),
            (
                SetupError::Command {
                    step: "forge".into(),
                    output: format!("  mount refused\n{}", "x".repeat(200)),
                },
                format!("setup_failed:forge:mount refused\n{}", "x".repeat(106)),
            ),
            (
                SetupError::Payload {
                    path: "/w/p".into(),
                    source: io(),
                },
                "setup_failed:payload:permission denied".to_owned(),
            ),
            (
                SetupError::Base(ApiError {
                    what: "GET /repos/o/r/git/ref/heads/main".into(),
                    status: Some(404),
                    message: "Not Found".into(),
                }),
                "setup_failed:GET /repos/o/r/git/ref/heads/main: Not Found".to_owned(),
            ),
            (
                SetupError::NoMainSha,
                "setup_failed:ls-remote:main has no sha".to_owned(),
            ),
        ];
        for (e, reason) in cases {
            assert_eq!(e.skip_reason(), reason, "{e}");
        }
    }

    #[test]
    fn the_budget_spaces_operations_and_counts_its_waits() {
        let c = FakeClock::new();
        let mut b = Budgeter::new(3600.0); // one a second
        b.pace(&c);
        assert_eq!(b.injected, Duration::ZERO, "the first is free");
        b.pace(&c);
        assert_eq!(b.injected, Duration::from_secs(1));
        assert_eq!(
            c.monotonic(),
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
