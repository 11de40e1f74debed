//! Running a scenario's declared operations, in order, into exactly one row
//! each.
//!
//! - The first failure turns every later operation into a skip row with the
//!   reason `prior_step_failed:<operation>`: a recorded gap, never a cascade
//!   of failures that only repeat the first.
//! - An operation the driver does not implement is a skip row
//!   (`operation_not_implemented`), never a silent absence.
//! - A handler that panics becomes a failed row with the panic's message,
//!   and the run goes on to write what it has: results are always written.
//! - Totals are computed by the runner, always (even after a failure),
//!   never skipped: `integration.total` is the **sum** of the measured rows'
//!   durations (time spent in operations), while `triage.total` and
//!   `fleet.total` are **wall-clock spans** from the scenario's first
//!   operation to the total (race totals are spans too, see
//!   [`super::race`]).

use std::panic::{AssertUnwindSafe, catch_unwind};

use super::clock::RunClock;
use super::row::{ApiMetrics, Meta, Row, Tokens, ms};
use super::spec::Settings;

/// What every operation of one run shares.
#[derive(Debug, Clone, Copy)]
pub struct Ctx<'a> {
    /// The run's shared fields.
    pub meta: &'a Meta,
    /// The scenario's name.
    pub scenario: &'a str,
    /// The run index.
    pub run: u32,
    /// The scenario's timing settings.
    pub settings: Settings,
    /// The run's clock.
    pub clock: &'a dyn RunClock,
    /// Whether measured rows of this run match the semantics contract.
    pub contract: bool,
}

impl Ctx<'_> {
    /// A skip row of this run.
    pub fn skip(&self, operation: &str, reason: &str) -> Row {
        Row::skip(
            self.meta,
            self.scenario,
            self.run,
            operation,
            reason,
            self.settings.interval_s,
        )
    }

    /// An empty measured row of this run.
    pub fn row(&self, operation: &str) -> Row {
        Row::new(self.meta, self.scenario, self.run, operation)
    }

    /// Every operation skipped for `reason`.
    pub fn skip_all(&self, operations: &[String], reason: &str) -> Vec<Row> {
        operations.iter().map(|op| self.skip(op, reason)).collect()
    }
}

/// The message of a caught panic.
pub fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a handler panicked".to_owned())
}

/// Calls `handler`, turning a panic into a failed row.
pub fn guarded(
    ctx: &Ctx<'_>,
    operation: &str,
    handler: impl FnOnce() -> Option<Row>,
) -> Option<Row> {
    let start = ctx.clock.now_ms();
    match catch_unwind(AssertUnwindSafe(handler)) {
        Ok(r) => r,
        Err(p) => {
            let mut r = ctx.row(operation);
            r.elapsed_ms = ms(ctx.clock.now_ms() - start);
            r.fail(&format!("unexpected: {}", panic_message(p.as_ref())));
            Some(r)
        }
    }
}

/// Runs `operations` through `handler` (`None`: not implemented).
pub fn run_operations(
    ctx: &Ctx<'_>,
    operations: &[String],
    handler: &mut dyn FnMut(&str) -> Option<Row>,
) -> Vec<Row> {
    let start = ctx.clock.now_ms();
    let mut rows: Vec<Row> = Vec::with_capacity(operations.len());
    let mut aborted: Option<String> = None;
    for op in operations {
        if op.ends_with(".total") {
            rows.push(total(ctx, op, &rows, start));
            continue;
        }
        if let Some(at) = &aborted {
            rows.push(ctx.skip(op, &format!("prior_step_failed:{at}")));
            continue;
        }
        let row = guarded(ctx, op, || handler(op))
            .unwrap_or_else(|| ctx.skip(op, "operation_not_implemented"));
        if row.failed() {
            aborted = Some(op.clone());
        }
        rows.push(row);
    }
    finish(ctx, &mut rows);
    rows
}

/// Sets `semantic_contract_match` (never on a skip).
pub fn finish(ctx: &Ctx<'_>, rows: &mut [Row]) {
    for r in rows {
        r.semantic_contract_match = ctx.contract && !r.skipped;
    }
}

/// The sum of `parts`' API metrics (`None` when none has any).
pub fn sum_api(parts: &[Row]) -> Option<ApiMetrics> {
    let all: Vec<&ApiMetrics> = parts
        .iter()
        .filter_map(|r| r.api_metrics.as_ref())
        .collect();
    if all.is_empty() {
        return None;
    }
    Some(ApiMetrics {
        request_count: all.iter().map(|m| m.request_count).sum(),
        request_bytes: all.iter().map(|m| m.request_bytes).sum(),
        response_bytes: all.iter().map(|m| m.response_bytes).sum(),
        rate_limit_remaining: all.iter().rev().find_map(|m| m.rate_limit_remaining),
        request_ids: Vec::new(),
    })
}

/// A total over `rows` (the rows before it).
fn total(ctx: &Ctx<'_>, op: &str, rows: &[Row], start_ms: f64) -> Row {
    let mut r = ctx.row(op);
    let measured: Vec<&Row> = rows.iter().filter(|r| !r.skipped).collect();
    let sum = op == "integration.total";
    r.elapsed_ms = if sum {
        ms(measured.iter().map(|r| r.elapsed_ms).sum())
    } else {
        ms(ctx.clock.now_ms() - start_ms)
    };
    r.returncode = Some(i32::from(rows.iter().any(Row::failed)));
    r.command = rows.iter().map(|r| serde_json::json!(r.command)).collect();
    r.note = Some(if sum {
        "sum of the durations of the measured operations before it".to_owned()
    } else {
        "wall-clock span from the scenario's first operation to this total".to_owned()
    });
    r.set(
        "summarized_operations",
        rows.iter().map(|r| r.operation.clone()).collect::<Vec<_>>(),
    );
    r.set(
        "skipped_operations",
        rows.iter()
            .filter(|r| r.skipped)
            .map(|r| r.operation.clone())
            .collect::<Vec<_>>(),
    );
    r.set(
        "poll_iterations_total",
        measured
            .iter()
            .filter_map(|r| r.settle.as_ref().map(|s| s.poll_iterations))
            .sum::<u32>(),
    );
    let owned: Vec<Row> = measured.iter().map(|r| (*r).clone()).collect();
    r.api_metrics = sum_api(&owned);
    r.tool_call_count = measured
        .iter()
        .map(|r| r.tool_call_count)
        .sum::<Option<u32>>();
    let tokens: Vec<&Tokens> = measured.iter().filter_map(|r| r.tokens.as_ref()).collect();
    let complete = !measured.is_empty()
        && tokens.len() == measured.len()
        && tokens.iter().all(|t| t.estimated_tokens_total.is_some());
    r.tokens = if complete {
        Some(Tokens::sum(
            tokens.into_iter(),
            "sum of the measured operations' estimates",
        ))
    } else if let Some(null) = tokens.iter().find(|t| t.estimated_tokens_total.is_none()) {
        // Null stays null: the note says why the parts were unmeasured.
        Some((*null).clone())
    } else if tokens.is_empty() {
        None
    } else {
        Some(Tokens::null(
            "not every operation before this total estimated its tokens",
        ))
    };
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::FakeClock;
    use crate::row::tests_meta;

    fn ctx<'a>(meta: &'a Meta, clock: &'a FakeClock) -> Ctx<'a> {
        Ctx {
            meta,
            scenario: "s",
            run: 0,
            settings: Settings {
                interval_s: 1.0,
                settle_timeout_s: 10.0,
                command_timeout_s: 10.0,
            },
            clock,
            contract: true,
        }
    }

    fn ops(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn the_first_failure_skips_the_rest_but_not_the_total() {
        let meta = tests_meta();
        let clock = FakeClock::new();
        let c = ctx(&meta, &clock);
        let mut handler = |op: &str| -> Option<Row> {
            let mut r = c.row(op);
            clock.advance(std::time::Duration::from_millis(10));
            r.elapsed_ms = 10.0;
            r.tool_call_count = Some(1);
            match op {
                "b" => {
                    r.fail("boom");
                }
                "x" => return None,
                "p" => panic!("no field `number`"),
                _ => {}
            }
            Some(r)
        };
        let rows = run_operations(
            &c,
            &ops(&["x", "a", "b", "c", "integration.total"]),
            &mut handler,
        );
        assert_eq!(rows.len(), 5);
        assert_eq!(
            rows[0].skip_reason.as_deref(),
            Some("operation_not_implemented")
        );
        assert!(rows[2].failed());
        assert_eq!(rows[3].skip_reason.as_deref(), Some("prior_step_failed:b"));
        assert!(!rows[3].semantic_contract_match && rows[1].semantic_contract_match);
        let t = &rows[4];
        assert!(!t.skipped, "a total is always computed");
        assert_eq!(t.returncode, Some(1));
        assert_eq!(
            t.elapsed_ms, 20.0,
            "integration.total sums the measured rows"
        );
        assert_eq!(t.tool_call_count, Some(2));

        let rows = run_operations(&c, &ops(&["a", "p", "c", "fleet.total"]), &mut handler);
        assert!(rows[1].failed(), "a panic is a failed row");
        assert!(
            rows[1]
                .stderr
                .as_deref()
                .is_some_and(|e| e.contains("no field"))
        );
        assert_eq!(rows[2].skip_reason.as_deref(), Some("prior_step_failed:p"));
        assert_eq!(
            rows[3].elapsed_ms, 20.0,
            "fleet.total is the span, the failed step included"
        );
    }
}
