//! JSON metric lines: the line format a command uses to report its own
//! metrics on stdout, and the streaming parser that reads them while the
//! command runs, holding at most one line in memory.

use benchops::Finite;
use serde::{Deserialize, Serialize};

/// Longest stdout line parsed for a metric; longer lines are reported in
/// [`ChildResult::metric_errors`](super::ChildResult::metric_errors) and not parsed.
pub const MAX_METRIC_LINE_BYTES: usize = 64 * 1024;

/// The names of the builtin metrics, which a command may not report itself.
const BUILTIN_METRICS: [&str; 4] = ["wall_s", "user_s", "sys_s", "max_rss_bytes"];

/// One metric reported by the command on stdout.
///
/// With [`ChildSpec::json_metrics`](super::ChildSpec::json_metrics), every stdout line that is a JSON object
/// with a `"metric"` key must be exactly
/// `{"metric": <non-empty name>, "value": <number or null>, "unit": <string>}`,
/// optionally with `"direction"` and, for a null value, `"reason"`.
/// Lines that are not JSON objects, or have no `"metric"` key, are ignored.
/// A line that starts with `{` and mentions `"metric"` but is not valid JSON
/// (for example `NaN`, or a number out of range) is an error, not ignored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    /// The metric name.
    pub name: String,
    /// The value; `None` (JSON `null`) means "not measured", never zero.
    #[serde(deserialize_with = "Option::deserialize")]
    pub value: Option<Finite>,
    /// The unit.
    pub unit: String,
    /// `true` when larger is better (throughput); the line's optional
    /// `"direction": "higher_is_better"`. Absent means lower is better.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub higher_is_better: bool,
    /// Why a null value was not measured: the line's optional `"reason"`,
    /// allowed only with `"value": null` (at most 256 bytes).
    /// A case whose runs all succeeded and measured none of their own
    /// metrics, with reasons, is sealed as skipped with those reasons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The longest `"reason"` of a metric line, in bytes.
pub const MAX_REASON_BYTES: usize = 256;

/// A stdout line that looked like a metric but was rejected.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricError {
    /// The 1-based stdout line number.
    pub line: u64,
    /// Why it was rejected.
    pub reason: String,
}

/// Splits a stream into lines and parses metric lines as they arrive,
/// holding at most one line of [`MAX_METRIC_LINE_BYTES`].
#[derive(Debug, Default)]
pub(super) struct MetricParser {
    line: Vec<u8>,
    overlong: bool,
    line_no: u64,
    /// The metrics accepted so far, in output order.
    pub(super) metrics: Vec<Metric>,
    /// The lines rejected so far.
    pub(super) errors: Vec<MetricError>,
}

impl MetricParser {
    pub(super) fn push(&mut self, mut chunk: &[u8]) {
        while let Some(i) = chunk.iter().position(|&b| b == b'\n') {
            self.extend(&chunk[..i]);
            self.end_line();
            chunk = &chunk[i + 1..];
        }
        self.extend(chunk);
    }

    fn extend(&mut self, part: &[u8]) {
        if self.overlong {
            return;
        }
        if self.line.len() + part.len() > MAX_METRIC_LINE_BYTES {
            self.overlong = true;
            self.line = Vec::new();
        } else {
            self.line.extend_from_slice(part);
        }
    }

    fn end_line(&mut self) {
        self.line_no += 1;
        let outcome = if self.overlong {
            Some(Err(format!(
                "line is longer than {MAX_METRIC_LINE_BYTES} bytes; not parsed"
            )))
        } else {
            parse_metric_line(&self.line)
        };
        match outcome {
            None => {}
            Some(Ok(metric)) => self.metrics.push(metric),
            Some(Err(reason)) => self.errors.push(MetricError {
                line: self.line_no,
                reason,
            }),
        }
        self.line.clear();
        self.overlong = false;
    }

    /// Ends the last, unterminated line.
    pub(super) fn finish(&mut self) {
        if !self.line.is_empty() || self.overlong {
            self.end_line();
        }
    }
}

/// `None` for a line that is not a metric line, otherwise the metric or why
/// it was rejected.
fn parse_metric_line(line: &[u8]) -> Option<Result<Metric, String>> {
    let line = line.trim_ascii();
    if !line.starts_with(b"{") {
        return None;
    }
    let object: serde_json::Map<String, serde_json::Value> = match serde_json::from_slice(line) {
        Ok(object) => object,
        Err(e) if contains(line, b"\"metric\"") => {
            return Some(Err(format!("not valid JSON: {e}")));
        }
        Err(_) => return None,
    };
    let name = object.get("metric")?;
    Some(metric_from_object(name, &object))
}

fn metric_from_object(
    name: &serde_json::Value,
    object: &serde_json::Map<String, serde_json::Value>,
) -> Result<Metric, String> {
    use serde_json::Value;
    let name = match name {
        Value::String(s) if !s.is_empty() => s.clone(),
        _ => return Err("\"metric\" must be a non-empty string".to_owned()),
    };
    if BUILTIN_METRICS.contains(&name.as_str()) {
        return Err(format!(
            "metric name {name:?} is reserved for a builtin metric"
        ));
    }
    // The same limits as the result record's schema, so a metric accepted
    // here can always be sealed.
    if name.len() > 128 {
        return Err("metric name is longer than 128 bytes".to_owned());
    }
    if let Some(Value::String(unit)) = object.get("unit")
        && unit.len() > 32
    {
        return Err("unit is longer than 32 bytes".to_owned());
    }
    if let Some(key) = object.keys().find(|k| {
        !matches!(
            k.as_str(),
            "metric" | "value" | "unit" | "direction" | "reason"
        )
    }) {
        return Err(format!("unknown key {key:?}"));
    }
    let value = match object.get("value") {
        None => return Err("missing \"value\" (use null for not measured)".to_owned()),
        Some(Value::Null) => None,
        Some(Value::Number(n)) => {
            let v = n
                .as_f64()
                .ok_or_else(|| format!("value {n} is not representable"))?;
            Some(Finite::new(v).map_err(|e| e.to_string())?)
        }
        Some(_) => return Err("\"value\" must be a number or null".to_owned()),
    };
    let unit = match object.get("unit") {
        None => return Err("missing \"unit\"".to_owned()),
        Some(Value::String(s)) => s.clone(),
        Some(_) => return Err("\"unit\" must be a string".to_owned()),
    };
    let higher_is_better = match object.get("direction") {
        None => false,
        Some(Value::String(d)) if d == "lower_is_better" => false,
        Some(Value::String(d)) if d == "higher_is_better" => true,
        Some(_) => {
            return Err(
                "\"direction\" must be \"lower_is_better\" or \"higher_is_better\"".to_owned(),
            );
        }
    };
    let reason = match object.get("reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(_)) if value.is_some() => {
            return Err(
                "\"reason\" is for a null value only: a measured value needs none".to_owned(),
            );
        }
        Some(Value::String(r)) if r.is_empty() || r.len() > MAX_REASON_BYTES => {
            return Err(format!("\"reason\" must be 1 to {MAX_REASON_BYTES} bytes"));
        }
        Some(Value::String(r)) => Some(r.clone()),
        Some(_) => return Err("\"reason\" must be a string".to_owned()),
    };
    Ok(Metric {
        name,
        value,
        unit,
        higher_is_better,
        reason,
    })
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_all(input: &[u8], chunk: usize) -> MetricParser {
        let mut p = MetricParser::default();
        for c in input.chunks(chunk) {
            p.push(c);
        }
        p.finish();
        p
    }

    #[test]
    fn metric_lines_are_split_across_chunks_and_classified() {
        let input = b"hello\n{\"metric\":\"a\",\"value\":1.5,\"unit\":\"s\"}\r\n\
{\"metric\":\"b\",\"value\":null,\"unit\":\"\"}\n\
{\"metric\":\"c\",\"unit\":\"s\"}\n\
{\"metric\":\"d\",\"value\":1e999,\"unit\":\"s\"}\n\
{\"other\":1}\n\
{\"metric\":\"wall_s\",\"value\":1,\"unit\":\"s\"}\n\
{\"metric\":\"e\",\"value\":2,\"unit\":\"s\",\"extra\":true}\n\
{\"metric\":\"f\",\"value\":3,\"unit\":\"B\"}";
        for chunk in [1, 7, 4096] {
            let p = parse_all(input, chunk);
            let names: Vec<_> = p.metrics.iter().map(|m| m.name.as_str()).collect();
            assert_eq!(names, ["a", "b", "f"], "chunk size {chunk}");
            assert_eq!(p.metrics[1].value, None);
            let lines: Vec<_> = p.errors.iter().map(|e| e.line).collect();
            assert_eq!(lines, [4, 5, 7, 8], "chunk size {chunk}: {:?}", p.errors);
        }
    }

    #[test]
    fn overlong_lines_are_errors_and_parsing_resumes() {
        let mut input = vec![b'x'; MAX_METRIC_LINE_BYTES + 1];
        input.extend_from_slice(b"\n{\"metric\":\"a\",\"value\":1,\"unit\":\"s\"}\n");
        input.extend(std::iter::repeat_n(b'y', MAX_METRIC_LINE_BYTES + 1));
        let p = parse_all(&input, 1000);
        assert_eq!(p.metrics.len(), 1);
        let lines: Vec<_> = p.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [1, 3]);
        let exact = vec![b' '; MAX_METRIC_LINE_BYTES];
        assert!(parse_all(&exact, 999).errors.is_empty());
    }

    #[test]
    fn a_reason_explains_a_null_value_only() {
        let input = b"{\"metric\":\"a\",\"value\":null,\"unit\":\"ms\",\"reason\":\"no token\"}\n\
{\"metric\":\"b\",\"value\":1,\"unit\":\"ms\",\"reason\":\"why\"}\n\
{\"metric\":\"c\",\"value\":null,\"unit\":\"ms\",\"reason\":\"\"}\n\
{\"metric\":\"d\",\"value\":null,\"unit\":\"ms\",\"reason\":7}\n";
        let p = parse_all(input, 5);
        assert_eq!(p.metrics.len(), 1);
        assert_eq!(p.metrics[0].reason.as_deref(), Some("no token"));
        let lines: Vec<_> = p.errors.iter().map(|e| e.line).collect();
        assert_eq!(lines, [2, 3, 4], "{:?}", p.errors);
        assert!(p.errors[0].reason.contains("null value only"));
    }
}
