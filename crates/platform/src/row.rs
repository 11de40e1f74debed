//! One row per declared operation per run (and per branch in races): what
//! was done, how long it took on the run's one clock, what it cost, or why
//! it was not done.
//!
//! Honesty rules carried by the type:
//! - a skipped row has `skipped: true`, a `skip_reason`, and a `returncode`
//!   of null (it did not run); nothing decides a skip from a return code;
//! - `semantic_contract_match` is never true on a skipped row;
//! - null is unmeasured, zero is a measured zero: token estimates are null
//!   with a `token_fields_note` for API and fake rows, and a structural row
//!   (no equivalent operation on the platform) has zero commands, a zero
//!   duration and a null `settle_elapsed_ms`;
//! - a settle row always carries its poll interval and quantization bound,
//!   and a null `settle_elapsed_ms` when it timed out.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Every row's `profile`: the rows are the platform lane's.
pub const PROFILE: &str = "platform";
/// Every row's `benchmark_track`: hosted integration workflows.
pub const BENCHMARK_TRACK: &str = "platform-hosted";

/// What every row of a run shares.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Meta {
    /// The run's id (unique even for two runs in the same second).
    pub run_id: String,
    /// Always [`PROFILE`].
    pub profile: String,
    /// Always [`BENCHMARK_TRACK`].
    pub benchmark_track: String,
    /// The platform (`github`, or an adapter's name).
    pub platform: String,
    /// The driver (`harness-api`, `cli`, `fake-provider`).
    pub driver: String,
    /// The platform's semantics class (from the semantics config).
    pub platform_semantics_class: Option<String>,
    /// Its semantics version; null when the config gives none.
    pub platform_semantics_version: Option<String>,
    /// The protection variant.
    pub protection_variant: String,
    /// `<version>:<class>:<variant>`, null without a version.
    pub platform_comparison_key: Option<String>,
    /// The repository measured, if any.
    pub repo: Option<String>,
    /// The NAME of the variable holding the token (never its value).
    pub token_env: String,
    /// How durations were measured.
    pub clock: String,
    /// How long the run waited for the measurement lock, in ms.
    pub measurement_lock_wait_ms: Option<f64>,
}

/// Request accounting of the API driver, per operation.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ApiMetrics {
    /// Requests made.
    pub request_count: u64,
    /// Bytes sent (request line, headers and body).
    pub request_bytes: u64,
    /// Bytes received (status line, headers and body).
    pub response_bytes: u64,
    /// The last `x-ratelimit-remaining` seen, if any.
    pub rate_limit_remaining: Option<u64>,
    /// `x-github-request-id` of each request, in order (null where the
    /// server sent none).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub request_ids: Vec<Option<String>>,
}

/// The fields of a settle operation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Settle {
    /// Whether the condition was observed (null on a skip).
    pub settled: Option<bool>,
    /// When it was first observed, from the start; null on a timeout.
    pub settle_elapsed_ms: Option<f64>,
    /// The time spent waiting, always measured.
    pub observed_wait_ms: f64,
    /// Polls made.
    pub poll_iterations: u32,
    /// The pause between polls, in seconds.
    pub poll_interval_s: f64,
    /// The resolution of `settle_elapsed_ms`: it can be late by up to one
    /// interval (plus one poll's own duration).
    pub poll_quantization_ms: f64,
}

/// Token estimates: measured for CLI rows, null (with a note) otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tokens {
    /// Input plus output.
    pub estimated_tokens_total: Option<u64>,
    /// The commands as typed, characters / 4, rounded up.
    pub estimated_tokens_input: Option<u64>,
    /// The admitted output read back, characters / 4, rounded up.
    pub estimated_tokens_output: Option<u64>,
    /// Every byte the commands printed (stdout + stderr).
    pub raw_output_bytes: Option<u64>,
    /// Whether the output was cut at the admitted size.
    pub output_truncated: Option<bool>,
    /// How the estimate was made, or why there is none.
    pub token_fields_note: String,
}

impl Tokens {
    /// Null estimates for the API driver.
    pub fn api() -> Tokens {
        Tokens::null(
            "harness-api: REST JSON is not an agent transcript, so no token cost is estimated; null is unmeasured",
        )
    }

    /// Null estimates for the fake provider.
    pub fn fake() -> Tokens {
        Tokens::null(
            "fake-provider: an in-process deterministic provider; no command ran and no output was read",
        )
    }

    /// Null estimates with `note`.
    pub fn null(note: &str) -> Tokens {
        Tokens {
            estimated_tokens_total: None,
            estimated_tokens_input: None,
            estimated_tokens_output: None,
            raw_output_bytes: None,
            output_truncated: None,
            token_fields_note: note.to_owned(),
        }
    }

    /// Estimates from what a CLI step typed and read: characters / 4,
    /// rounded up, over the command text and the admitted output.
    pub fn measured(
        command_chars: usize,
        admitted_output_chars: usize,
        raw: u64,
        truncated: bool,
    ) -> Tokens {
        let input = command_chars.div_ceil(4) as u64;
        let output = admitted_output_chars.div_ceil(4) as u64;
        Tokens {
            estimated_tokens_total: Some(input + output),
            estimated_tokens_input: Some(input),
            estimated_tokens_output: Some(output),
            raw_output_bytes: Some(raw),
            output_truncated: Some(truncated),
            token_fields_note: "characters / 4 of the commands typed plus the admitted output read"
                .to_owned(),
        }
    }

    /// The sum of measured rows; null when any part is unmeasured.
    pub fn sum<'a>(parts: impl Iterator<Item = &'a Tokens>, note: &str) -> Tokens {
        let mut acc = Tokens::measured(0, 0, 0, false);
        for p in parts {
            let add = |a: Option<u64>, b: Option<u64>| a.zip(b).map(|(a, b)| a + b);
            acc.estimated_tokens_total = add(acc.estimated_tokens_total, p.estimated_tokens_total);
            acc.estimated_tokens_input = add(acc.estimated_tokens_input, p.estimated_tokens_input);
            acc.estimated_tokens_output =
                add(acc.estimated_tokens_output, p.estimated_tokens_output);
            acc.raw_output_bytes = add(acc.raw_output_bytes, p.raw_output_bytes);
            acc.output_truncated = acc
                .output_truncated
                .zip(p.output_truncated)
                .map(|(a, b)| a || b);
        }
        acc.token_fields_note = note.to_owned();
        acc
    }
}

/// One row.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Row {
    /// The run's shared fields.
    #[serde(flatten)]
    pub meta: Meta,
    /// The scenario.
    pub scenario: String,
    /// The run index, from 0.
    pub run: u32,
    /// The operation, as declared.
    pub operation: String,
    /// Its duration on the run's clock (0 for a skip: nothing ran).
    pub elapsed_ms: f64,
    /// 0 on success, non-zero on failure, null when skipped.
    pub returncode: Option<i32>,
    /// The commands run or API calls made, as displayed.
    pub command: Vec<Value>,
    /// Tool calls an agent would make (null for the API driver).
    pub tool_call_count: Option<u32>,
    /// Whether the operation was not run.
    pub skipped: bool,
    /// Why, when skipped.
    pub skip_reason: Option<String>,
    /// Whether this row may be compared across platforms (never when
    /// skipped).
    pub semantic_contract_match: bool,
    /// An operation with no equivalent on this platform.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub structural: bool,
    /// A remark on what the row measures.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Settle fields, for `*.settle` operations.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub settle: Option<Settle>,
    /// Request accounting (API driver).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_metrics: Option<ApiMetrics>,
    /// Token estimates.
    #[serde(flatten, default, skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Tokens>,
    /// The error, when the operation failed (bounded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stderr: Option<String>,
    /// The race branch, in races.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub race_branch: Option<u32>,
    /// Family-specific fields (triage, fleet, race, check-instant).
    #[serde(flatten)]
    pub extra: BTreeMap<String, Value>,
}

/// The longest `stderr` kept in a row, in characters.
pub const MAX_STDERR_CHARS: usize = 4000;

/// The last [`MAX_STDERR_CHARS`] characters of `text`.
pub fn tail(text: &str) -> String {
    let n = text.chars().count();
    text.chars()
        .skip(n.saturating_sub(MAX_STDERR_CHARS))
        .collect()
}

impl Row {
    /// A measured row with nothing filled in yet.
    pub fn new(meta: &Meta, scenario: &str, run: u32, operation: &str) -> Row {
        Row {
            meta: meta.clone(),
            scenario: scenario.to_owned(),
            run,
            operation: operation.to_owned(),
            elapsed_ms: 0.0,
            returncode: Some(0),
            command: Vec::new(),
            tool_call_count: None,
            skipped: false,
            skip_reason: None,
            semantic_contract_match: false,
            structural: false,
            note: None,
            settle: None,
            api_metrics: None,
            tokens: None,
            stderr: None,
            race_branch: None,
            extra: BTreeMap::new(),
        }
    }

    /// A skip row: not run, with its reason. A settle operation keeps the
    /// settle shape, with nothing observed.
    pub fn skip(
        meta: &Meta,
        scenario: &str,
        run: u32,
        operation: &str,
        reason: &str,
        interval_s: f64,
    ) -> Row {
        let mut r = Row::new(meta, scenario, run, operation);
        r.returncode = None;
        r.skipped = true;
        r.skip_reason = Some(reason.to_owned());
        r.tool_call_count = Some(0);
        if operation.ends_with(".settle") {
            r.settle = Some(Settle {
                settled: None,
                settle_elapsed_ms: None,
                observed_wait_ms: 0.0,
                poll_iterations: 0,
                poll_interval_s: interval_s,
                poll_quantization_ms: interval_s * 1000.0,
            });
        }
        r
    }

    /// A structural row: the operation has no equivalent on the platform
    /// (it completes synchronously elsewhere). Zero commands ran: a
    /// measured zero; the settle duration is null (there is nothing to
    /// settle).
    pub fn structural(meta: &Meta, scenario: &str, run: u32, operation: &str, note: &str) -> Row {
        let mut r = Row::new(meta, scenario, run, operation);
        r.structural = true;
        r.tool_call_count = Some(0);
        r.note = Some(note.to_owned());
        r.settle = Some(Settle {
            settled: Some(true),
            settle_elapsed_ms: None,
            observed_wait_ms: 0.0,
            poll_iterations: 0,
            poll_interval_s: 0.0,
            poll_quantization_ms: 0.0,
        });
        r.tokens = Some(Tokens {
            token_fields_note: "structural: no command typed and no output read, a measured zero"
                .into(),
            ..Tokens::measured(0, 0, 0, false)
        });
        r.extra.insert(
            "measurement_source".into(),
            Value::String("structural: no equivalent operation, zero commands".into()),
        );
        r
    }

    /// Whether the operation ran and failed.
    pub fn failed(&self) -> bool {
        !self.skipped && self.returncode.is_some_and(|c| c != 0)
    }

    /// Sets a family-specific field.
    pub fn set(&mut self, key: &str, value: impl Serialize) -> &mut Row {
        self.extra.insert(
            key.to_owned(),
            serde_json::to_value(value).unwrap_or(Value::Null),
        );
        self
    }

    /// Marks the row failed with `error`.
    pub fn fail(&mut self, error: &str) -> &mut Row {
        self.returncode = Some(1);
        self.stderr = Some(tail(error));
        self
    }
}

/// `elapsed_ms` rounded to the microsecond, as rows report it.
pub fn ms(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// A run's shared fields for unit tests.
#[cfg(test)]
pub(crate) fn tests_meta() -> Meta {
    tests::meta()
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn meta() -> Meta {
        Meta {
            run_id: "r".into(),
            profile: PROFILE.into(),
            benchmark_track: BENCHMARK_TRACK.into(),
            platform: "github".into(),
            driver: "fake-provider".into(),
            platform_semantics_class: Some("integration-default".into()),
            platform_semantics_version: Some("1".into()),
            protection_variant: "protection-none".into(),
            platform_comparison_key: Some("1:integration-default:protection-none".into()),
            repo: None,
            token_env: "GITHUB_TOKEN".into(),
            clock: "test".into(),
            measurement_lock_wait_ms: Some(0.0),
        }
    }

    #[test]
    fn a_skip_row_did_not_run_and_says_why() {
        let r = Row::skip(&meta(), "s", 0, "integration.mergeable.settle", "why", 2.0);
        let v = serde_json::to_value(&r).expect("json");
        assert_eq!(v["skipped"], true);
        assert_eq!(v["skip_reason"], "why");
        assert!(v["returncode"].is_null(), "a skip is not a return code");
        assert_eq!(v["semantic_contract_match"], false);
        assert!(v["settled"].is_null() && v["settle_elapsed_ms"].is_null());
        assert_eq!(v["poll_quantization_ms"], 2000.0);
        assert!(!r.failed());
        let back: Row = serde_json::from_value(v).expect("round trip");
        assert_eq!(back, r);
    }

    #[test]
    fn unmeasured_tokens_are_null_and_sums_stay_null_when_a_part_is() {
        let a = Tokens::measured(9, 3, 12, false);
        assert_eq!(a.estimated_tokens_input, Some(3));
        assert_eq!(a.estimated_tokens_output, Some(1));
        let s = Tokens::sum([&a, &a].into_iter(), "sum");
        assert_eq!(s.estimated_tokens_total, Some(8));
        let n = Tokens::sum([&a, &Tokens::api()].into_iter(), "sum");
        assert_eq!(n.estimated_tokens_total, None);
        let v = serde_json::to_value(Tokens::api()).expect("json");
        assert!(v["estimated_tokens_total"].is_null());
        assert!(
            v["token_fields_note"]
                .as_str()
                .is_some_and(|n| !n.is_empty())
        );
    }
}
