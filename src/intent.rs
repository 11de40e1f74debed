//! `benchmark-intent/v1`: what to benchmark, as the user writes it (TOML).
//!
//! Loading goes TOML → JSON data model → RFC 8785 canonical form → schema →
//! typed [`Intent`] → semantic checks. Because the canonical form is taken
//! before anything else, intents that differ only in key order, whitespace or
//! number spelling (`1.0` and `1`) are the same intent, with the same digest.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::digest::Sha256Digest;
use crate::jcs;
use crate::path::JsonPath;
use crate::schema::{Contract, schema_tag};

/// The schema id of an intent.
pub const INTENT_SCHEMA: &str = "benchmark-intent/v1";

/// A validated benchmark intent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Intent {
    /// Always [`INTENT_SCHEMA`].
    pub schema: String,
    /// Benchmark name; prefixes every case id.
    pub name: String,
    /// Command template: an argument vector with `{param}` placeholders
    /// (`{{` and `}}` are literal braces). With `shell`, exactly one string
    /// run by `/bin/sh -c`.
    pub command: Vec<String>,
    /// Run the single command string through `/bin/sh -c`.
    #[serde(default)]
    pub shell: bool,
    /// Parameters, in declared order.
    #[serde(default)]
    pub parameters: Vec<Parameter>,
    /// Measured repetitions per parameter point.
    pub repetitions: u32,
    /// Unmeasured warm-up runs per parameter point, run first.
    #[serde(default)]
    pub warmup: u32,
    /// Per-run timeout in seconds.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// Environment additions.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Working directory of every run.
    #[serde(default)]
    pub workdir: Option<String>,
    /// Metric extraction.
    #[serde(default)]
    pub metrics: MetricRules,
    /// Resources, used by batch schedulers.
    #[serde(default)]
    pub resources: Resources,
    /// Slurm options.
    #[serde(default)]
    pub slurm: SlurmOptions,
}

/// One parameter.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Parameter {
    /// Name used in `{name}` placeholders.
    pub name: String,
    /// Values, in declared order. Strings, numbers or booleans.
    pub values: Vec<Value>,
    /// Parameters sharing a zip group advance together instead of forming a
    /// grid.
    #[serde(default)]
    pub zip: Option<String>,
}

/// Metric extraction rules. Wall time, CPU time and max RSS are always
/// measured.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MetricRules {
    /// Parse stdout lines `{"metric": name, "value": number|null, "unit": u}`.
    #[serde(default)]
    pub json_lines: bool,
}

/// Resources per run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Resources {
    /// CPUs per run.
    #[serde(default)]
    pub cpus: Option<u32>,
    /// Memory per run, MiB.
    #[serde(default)]
    pub memory_mb: Option<u64>,
    /// Scheduler time limit per run, seconds.
    #[serde(default)]
    pub time_s: Option<u64>,
}

/// Slurm-specific submission options.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SlurmOptions {
    /// `--partition`.
    #[serde(default)]
    pub partition: Option<String>,
    /// `--account`.
    #[serde(default)]
    pub account: Option<String>,
    /// The `%throttle` of `--array`.
    #[serde(default)]
    pub throttle: Option<u32>,
}

/// One problem in an intent: where and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntentIssue {
    /// Where in the intent.
    pub path: JsonPath,
    /// Why.
    pub reason: String,
}

/// Why an intent could not be loaded. Every variant names the source.
#[derive(Debug, thiserror::Error)]
pub enum IntentError {
    /// Not TOML.
    #[error("{source_name}: not valid TOML: {reason}")]
    Toml {
        /// File name (or other label) of the source.
        source_name: String,
        /// The parser's message, with line and column.
        reason: String,
    },
    /// Valid TOML that violates the contract.
    #[error("{source_name}: invalid benchmark intent:{}", render_issues(.issues))]
    Invalid {
        /// File name (or other label) of the source.
        source_name: String,
        /// Every problem found.
        issues: Vec<IntentIssue>,
    },
}

fn render_issues(issues: &[IntentIssue]) -> String {
    issues
        .iter()
        .map(|i| format!("\n  - {}: {}", i.path, i.reason))
        .collect()
}

/// An intent together with its canonical form and digest.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadedIntent {
    /// The typed intent.
    pub intent: Intent,
    /// Its canonical JSON value (the normal form).
    pub canonical: Value,
    /// `sha256` of the canonical bytes.
    pub digest: Sha256Digest,
}

/// Loads an intent from TOML text. `source_name` labels errors.
pub fn from_toml(text: &str, source_name: &str) -> Result<LoadedIntent, IntentError> {
    let table: toml::Table = text
        .parse()
        .map_err(|e: toml::de::Error| IntentError::Toml {
            source_name: source_name.to_owned(),
            reason: e.to_string().trim().replace('\n', " "),
        })?;
    let mut issues = Vec::new();
    let json = toml_to_json(&toml::Value::Table(table), &JsonPath::root(), &mut issues);
    if !issues.is_empty() {
        return Err(IntentError::Invalid {
            source_name: source_name.to_owned(),
            issues,
        });
    }
    from_json_value(&json, source_name)
}

/// Loads an intent from its JSON data model.
pub fn from_json_value(value: &Value, source_name: &str) -> Result<LoadedIntent, IntentError> {
    let invalid = |issues| IntentError::Invalid {
        source_name: source_name.to_owned(),
        issues,
    };
    // Normalise through the canonical form: 1.0 and 1 become the same value.
    let canonical_bytes = jcs::canonical_bytes(value);
    let canonical = jcs::parse(&canonical_bytes).map_err(|e| {
        invalid(vec![IntentIssue {
            path: JsonPath::root(),
            reason: e.to_string(),
        }])
    })?;
    match schema_tag(&canonical) {
        Some(("benchmark-intent", 1)) | None => {}
        Some((name, v)) => {
            return Err(invalid(vec![IntentIssue {
                path: JsonPath::root().key("schema"),
                reason: format!("{name}/v{v} is not {INTENT_SCHEMA}"),
            }]));
        }
    }
    if let Err(v) = Contract::BenchmarkIntentV1.validate(&canonical) {
        return Err(invalid(
            v.into_iter()
                .map(|v| IntentIssue {
                    path: v.path,
                    reason: v.reason,
                })
                .collect(),
        ));
    }
    let intent: Intent = serde_json::from_value(canonical.clone()).map_err(|e| {
        invalid(vec![IntentIssue {
            path: JsonPath::root(),
            reason: e.to_string(),
        }])
    })?;
    let issues = semantic_issues(&intent);
    if !issues.is_empty() {
        return Err(invalid(issues));
    }
    let digest = Sha256Digest::of(&canonical_bytes);
    Ok(LoadedIntent {
        intent,
        canonical,
        digest,
    })
}

fn toml_to_json(v: &toml::Value, path: &JsonPath, issues: &mut Vec<IntentIssue>) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s.clone()),
        toml::Value::Integer(i) => Value::from(*i),
        toml::Value::Float(f) => match serde_json::Number::from_f64(*f) {
            Some(n) => Value::Number(n),
            None => {
                issues.push(IntentIssue {
                    path: path.clone(),
                    reason: format!("{f} is not a finite number"),
                });
                Value::Null
            }
        },
        toml::Value::Boolean(b) => Value::Bool(*b),
        toml::Value::Datetime(d) => {
            issues.push(IntentIssue {
                path: path.clone(),
                reason: format!("dates are not allowed here (found {d}); quote it as a string"),
            });
            Value::Null
        }
        toml::Value::Array(a) => Value::Array(
            a.iter()
                .enumerate()
                .map(|(i, x)| toml_to_json(x, &path.index(i), issues))
                .collect(),
        ),
        toml::Value::Table(t) => Value::Object(
            t.iter()
                .map(|(k, x)| (k.clone(), toml_to_json(x, &path.key(k), issues)))
                .collect(),
        ),
    }
}

/// A piece of a command template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal text.
    Text(String),
    /// A `{name}` placeholder.
    Placeholder(String),
}

/// Splits a template string into literal text and placeholders.
///
/// A placeholder is `{name}` where `name` is made of ASCII letters, digits
/// and `_`. Any other brace is literal, so JSON and shell syntax such as
/// `{"a": 1}` or `${VAR-default}` pass through. `{{` and `}}` are literal
/// braces, for the rare `{word}` that must not be a placeholder.
pub fn parse_template(s: &str) -> Vec<Piece> {
    let mut out = Vec::new();
    let mut text = String::new();
    let bytes = s.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &s[i..];
        if rest.starts_with("{{") || rest.starts_with("}}") {
            text.push(bytes[i] as char);
            i += 2;
            continue;
        }
        if bytes[i] == b'{' {
            let name_len = rest[1..]
                .bytes()
                .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                .count();
            if name_len > 0 && rest.as_bytes().get(1 + name_len) == Some(&b'}') {
                if !text.is_empty() {
                    out.push(Piece::Text(std::mem::take(&mut text)));
                }
                out.push(Piece::Placeholder(rest[1..1 + name_len].to_owned()));
                i += name_len + 2;
                continue;
            }
        }
        let ch = rest.chars().next().unwrap_or('\u{fffd}');
        text.push(ch);
        i += ch.len_utf8();
    }
    if !text.is_empty() {
        out.push(Piece::Text(text));
    }
    out
}

fn semantic_issues(intent: &Intent) -> Vec<IntentIssue> {
    let mut issues = Vec::new();
    let root = JsonPath::root();
    if crate::names::CaseId::new(intent.name.as_str()).is_err() {
        issues.push(IntentIssue {
            path: root.key("name"),
            reason: "must not contain `..`".into(),
        });
    }
    let declared: BTreeSet<&str> = intent.parameters.iter().map(|p| p.name.as_str()).collect();
    let mut seen = BTreeSet::new();
    for (i, p) in intent.parameters.iter().enumerate() {
        if !seen.insert(p.name.as_str()) {
            issues.push(IntentIssue {
                path: root.key("parameters").index(i).key("name"),
                reason: format!("parameter `{}` is declared more than once", p.name),
            });
        }
        let mut values = BTreeSet::new();
        for (j, v) in p.values.iter().enumerate() {
            if !values.insert(jcs::canonical_bytes(v)) {
                issues.push(IntentIssue {
                    path: root.key("parameters").index(i).key("values").index(j),
                    reason: format!("value {v} repeats an earlier value of `{}`", p.name),
                });
            }
        }
    }
    let mut zip_len: BTreeMap<&str, (usize, &str)> = BTreeMap::new();
    for (i, p) in intent.parameters.iter().enumerate() {
        if let Some(z) = &p.zip {
            match zip_len.get(z.as_str()) {
                Some((n, first)) if *n != p.values.len() => issues.push(IntentIssue {
                    path: root.key("parameters").index(i).key("values"),
                    reason: format!(
                        "zip group `{z}` needs equal lengths: `{first}` has {n} values, `{}` has {}",
                        p.name,
                        p.values.len()
                    ),
                }),
                Some(_) => {}
                None => {
                    zip_len.insert(z, (p.values.len(), &p.name));
                }
            }
        }
    }
    if intent.shell && intent.command.len() != 1 {
        issues.push(IntentIssue {
            path: root.key("command"),
            reason: "with shell = true, command must be exactly one string".into(),
        });
    }
    for (i, arg) in intent.command.iter().enumerate() {
        for piece in parse_template(arg) {
            if let Piece::Placeholder(name) = piece
                && !declared.contains(name.as_str())
            {
                issues.push(IntentIssue {
                    path: root.key("command").index(i),
                    reason: format!(
                        "placeholder `{{{name}}}` names no parameter (write `{{{{{name}}}}}` for literal braces)"
                    ),
                });
            }
        }
    }
    if let Some(t) = intent.timeout_s
        && (t <= 0.0 || !t.is_finite())
    {
        issues.push(IntentIssue {
            path: root.key("timeout_s"),
            reason: "must be positive".into(),
        });
    }
    issues
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = r#"
schema = "benchmark-intent/v1"
name = "demo"
command = ["sh", "-c", "echo {size} {mode}"]
repetitions = 3

[[parameters]]
name = "size"
values = [10, 100]

[[parameters]]
name = "mode"
values = ["a", "b"]
"#;

    #[test]
    fn equivalent_intents_have_one_digest() {
        let a = from_toml(BASE, "a.toml").expect("valid");
        let reordered = r#"
repetitions = 3.0
command = [ "sh", "-c", "echo {size} {mode}" ]
name = "demo"
schema = "benchmark-intent/v1"
parameters = [ { values = [1e1, 100.0], name = "size" }, { name = "mode", values = ["a", "b"] } ]
"#;
        let b = from_toml(reordered, "b.toml").expect("valid");
        assert_eq!(a.digest, b.digest);
        assert_eq!(a.intent, b.intent);
    }

    fn err_paths(text: &str) -> Vec<String> {
        match from_toml(text, "x.toml") {
            Err(IntentError::Invalid { issues, .. }) => {
                issues.iter().map(|i| i.path.to_string()).collect()
            }
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn reports_key_paths() {
        assert_eq!(err_paths(&format!("bogus = 1\n{BASE}")), ["$"]);
        assert_eq!(
            err_paths(&format!("{BASE}\nbogus = 1")),
            ["$.parameters[1]"]
        );
        assert_eq!(
            err_paths(&BASE.replace("repetitions = 3", "repetitions = \"3\"")),
            ["$.repetitions"]
        );
        assert_eq!(
            err_paths(&BASE.replace("values = [10, 100]", "values = []")),
            ["$.parameters[0].values"]
        );
        assert_eq!(
            err_paths(&BASE.replace("{mode}", "{nope}")),
            ["$.command[2]"]
        );
    }

    #[test]
    fn names_the_source_for_bad_toml() {
        let e = from_toml("name = ", "bench.toml").expect_err("bad toml");
        assert!(
            e.to_string().starts_with("bench.toml: not valid TOML"),
            "{e}"
        );
    }

    #[test]
    fn zip_groups_need_equal_lengths() {
        let t = BASE
            .replace("values = [10, 100]", "values = [10, 100]\nzip = \"z\"")
            .replace("values = [\"a\", \"b\"]", "values = [\"a\"]\nzip = \"z\"");
        assert_eq!(err_paths(&t), ["$.parameters[1].values"]);
    }

    #[test]
    fn templates_parse_braces() {
        assert_eq!(
            parse_template("a{x}{{y}}"),
            vec![
                Piece::Text("a".into()),
                Piece::Placeholder("x".into()),
                Piece::Text("{y}".into())
            ]
        );
        assert_eq!(
            parse_template("${A-b} {\"k\": 1} }"),
            vec![Piece::Text("${A-b} {\"k\": 1} }".into())]
        );
    }
}
