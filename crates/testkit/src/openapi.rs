//! GitHub's REST OpenAPI description, as JSON Schema validators.
//!
//! `openapi/github-subset.json` is a subset of `generated/api.github.com.json`
//! from the npm package `@octokit/openapi` (MIT; version and licence in
//! `openapi/README.md`), cut by `openapi/extract.py` to the operations the
//! simulator serves plus every component they reference.
//!
//! OpenAPI 3.0 schemas are not quite JSON Schema; [`to_json_schema`]
//! converts them (2020-12): `nullable: true` becomes a `null` type (or an
//! `anyOf` with `{"type": "null"}` when there is no `type`, and `null` is
//! added to an `enum`), `#/components/schemas/X` references become
//! `#/$defs/X`, and OpenAPI-only keywords (`example`, `discriminator`,
//! `xml`, `externalDocs`, `x-*`) are dropped. Formats (`uri`, `date-time`)
//! are validated.
//!
//! ```
//! use benchops_testkit::openapi;
//! let body = serde_json::json!({"sha": "aa218f56b14c9653891f9e74264a383fa43fefbd", "force": false});
//! openapi::validate_request("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}", &body)
//!     .expect("a valid update-ref body");
//! ```

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Map, Value, json};

use crate::sim::LoggedRequest;

/// The vendored subset, as shipped.
pub const SUBSET_JSON: &str = include_str!("../openapi/github-subset.json");

const SCHEMA_PREFIX: &str = "#/components/schemas/";

/// Why a body does not match the description.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractError {
    /// `METHOD template [status]`.
    pub operation: String,
    /// Each problem: `instance path: message`.
    pub problems: Vec<String>,
}

impl fmt::Display for ContractError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} does not match GitHub's OpenAPI description:",
            self.operation
        )?;
        for p in &self.problems {
            write!(f, "\n  - {p}")?;
        }
        Ok(())
    }
}

impl std::error::Error for ContractError {}

/// The parsed subset.
///
/// # Panics
/// When the vendored file is not JSON (a build defect, caught by tests).
pub fn spec() -> &'static Value {
    static SPEC: OnceLock<Value> = OnceLock::new();
    SPEC.get_or_init(|| serde_json::from_str(SUBSET_JSON).expect("vendored OpenAPI subset is JSON"))
}

/// Converts one OpenAPI 3.0 schema object to JSON Schema 2020-12 (see the
/// module documentation). References stay references, now into `$defs`.
pub fn to_json_schema(schema: &Value) -> Value {
    let Value::Object(m) = schema else {
        return schema.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        match k.as_str() {
            "$ref" => {
                let r = v.as_str().unwrap_or_default();
                let rewritten = match r.strip_prefix(SCHEMA_PREFIX) {
                    Some(name) => format!("#/$defs/{name}"),
                    None => r.to_owned(),
                };
                out.insert(k.clone(), Value::String(rewritten));
            }
            "properties" | "patternProperties" => {
                let props = v
                    .as_object()
                    .map(|p| {
                        p.iter()
                            .map(|(n, s)| (n.clone(), to_json_schema(s)))
                            .collect()
                    })
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Object(props));
            }
            "items" | "additionalProperties" | "not" => {
                out.insert(k.clone(), to_json_schema(v));
            }
            "allOf" | "anyOf" | "oneOf" => {
                let list = v
                    .as_array()
                    .map(|a| a.iter().map(to_json_schema).collect())
                    .unwrap_or_default();
                out.insert(k.clone(), Value::Array(list));
            }
            "nullable" | "example" | "discriminator" | "xml" | "externalDocs" => {}
            _ if k.starts_with("x-") => {}
            _ => {
                out.insert(k.clone(), v.clone());
            }
        }
    }
    if m.get("nullable") != Some(&Value::Bool(true)) {
        return Value::Object(out);
    }
    if let Some(Value::Array(e)) = out.get_mut("enum") {
        if !e.contains(&Value::Null) {
            e.push(Value::Null);
        }
    }
    match out.get("type").cloned() {
        Some(Value::String(t)) => {
            out.insert("type".to_owned(), json!([t, "null"]));
            Value::Object(out)
        }
        Some(Value::Array(mut ts)) => {
            if !ts.contains(&json!("null")) {
                ts.push(json!("null"));
            }
            out.insert("type".to_owned(), Value::Array(ts));
            Value::Object(out)
        }
        _ => json!({ "anyOf": [Value::Object(out), { "type": "null" }] }),
    }
}

/// Every component schema, converted, keyed by name (the `$defs`).
pub fn defs() -> &'static Value {
    static DEFS: OnceLock<Value> = OnceLock::new();
    DEFS.get_or_init(|| {
        let schemas = spec()["components"]["schemas"]
            .as_object()
            .cloned()
            .unwrap_or_default();
        Value::Object(
            schemas
                .iter()
                .map(|(name, s)| (name.clone(), to_json_schema(s)))
                .collect(),
        )
    })
}

/// The operation object for a method and path template
/// (`"/repos/{owner}/{repo}/git/trees"`).
pub fn operation(method: &str, template: &str) -> Option<&'static Value> {
    spec()["paths"]
        .get(template)?
        .get(method.to_ascii_lowercase())
}

/// Follows a `$ref` to `#/components/<kind>/<name>` (one level at a time,
/// until the node is not a reference).
pub fn resolve(node: &'static Value) -> &'static Value {
    let mut n = node;
    for _ in 0..8 {
        let Some(r) = n.get("$ref").and_then(Value::as_str) else {
            return n;
        };
        let Some(path) = r.strip_prefix("#/") else {
            return n;
        };
        let mut target = spec();
        for seg in path.split('/') {
            target = &target[seg];
        }
        n = target;
    }
    n
}

fn json_content(content: &'static Value) -> Option<&'static Value> {
    let m = content.as_object()?;
    m.get("application/json").or_else(|| m.values().next())
}

/// The converted schema of an operation's JSON request body, with `$defs`.
pub fn request_schema(method: &str, template: &str) -> Option<Value> {
    let op = operation(method, template)?;
    let body = resolve(op.get("requestBody")?);
    let schema = json_content(&body["content"])?.get("schema")?;
    Some(wrap(schema))
}

/// The converted schema of an operation's JSON response for a status,
/// with `$defs`. `Ok(None)`: the status is described without a body.
/// `Err`: the status is not described for the operation at all.
pub fn response_schema(
    method: &str,
    template: &str,
    status: u16,
) -> Result<Option<Value>, ContractError> {
    let name = format!("{} {template} {status}", method.to_ascii_uppercase());
    let op = operation(method, template).ok_or_else(|| ContractError {
        operation: name.clone(),
        problems: vec!["operation is not in the OpenAPI subset".to_owned()],
    })?;
    let responses = &op["responses"];
    let resp = responses
        .get(status.to_string())
        .or_else(|| responses.get("default"))
        .ok_or_else(|| ContractError {
            operation: name.clone(),
            problems: vec![format!(
                "status {status} is not described (described: {})",
                responses
                    .as_object()
                    .map(|m| m.keys().cloned().collect::<Vec<_>>().join(", "))
                    .unwrap_or_default()
            )],
        })?;
    let resp = resolve(resp);
    Ok(resp
        .get("content")
        .and_then(json_content)
        .and_then(|c| c.get("schema"))
        .map(wrap))
}

fn wrap(schema: &Value) -> Value {
    let mut root = match to_json_schema(schema) {
        Value::Object(m) => m,
        other => {
            let mut m = Map::new();
            m.insert("allOf".to_owned(), json!([other]));
            m
        }
    };
    root.insert(
        "$schema".to_owned(),
        json!("https://json-schema.org/draft/2020-12/schema"),
    );
    root.insert("$defs".to_owned(), defs().clone());
    Value::Object(root)
}

/// The validator of `schema`, compiled once per `key`.
fn validator_for(
    key: String,
    schema: impl FnOnce() -> Value,
) -> Result<Arc<jsonschema::Validator>, jsonschema::ValidationError<'static>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    if let Some(v) = cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .get(&key)
    {
        return Ok(v.clone());
    }
    let compiled = jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .build(&schema())?;
    let v = Arc::new(compiled);
    cache
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(key, v.clone());
    Ok(v)
}

fn check(
    operation: String,
    validator: &jsonschema::Validator,
    body: &Value,
) -> Result<(), ContractError> {
    let problems: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    if problems.is_empty() {
        Ok(())
    } else {
        Err(ContractError {
            operation,
            problems,
        })
    }
}

/// Validates a request body against the operation's `requestBody` schema.
///
/// `path_template` is the OpenAPI template
/// (`/repos/{owner}/{repo}/git/refs/{ref}`); see
/// [`crate::sim::routes::match_route`] to get it from a raw path.
pub fn validate_request(
    method: &str,
    path_template: &str,
    body: &Value,
) -> Result<(), ContractError> {
    let name = format!("{} {path_template} request", method.to_ascii_uppercase());
    if operation(method, path_template).is_none() {
        return Err(ContractError {
            operation: name,
            problems: vec!["operation is not in the OpenAPI subset".to_owned()],
        });
    }
    let validator = validator_for(format!("req {name}"), || {
        request_schema(method, path_template).unwrap_or(Value::Bool(false))
    })
    .map_err(|e| uncompiled(&name, &e))?;
    check(name, &validator, body)
}

/// The problem of an operation whose schema does not compile.
fn uncompiled(operation: &str, e: &jsonschema::ValidationError<'_>) -> ContractError {
    ContractError {
        operation: operation.to_owned(),
        problems: vec![format!("schema does not compile: {e}")],
    }
}

/// Validates a response body for a status. A status described without a
/// body accepts only `null` (an empty body).
pub fn validate_response(
    method: &str,
    path_template: &str,
    status: u16,
    body: &Value,
) -> Result<(), ContractError> {
    let name = format!("{} {path_template} {status}", method.to_ascii_uppercase());
    let Some(schema) = response_schema(method, path_template, status)? else {
        return if body.is_null() {
            Ok(())
        } else {
            Err(ContractError {
                operation: name,
                problems: vec!["the description has no body for this status".to_owned()],
            })
        };
    };
    let validator =
        validator_for(format!("resp {name}"), || schema).map_err(|e| uncompiled(&name, &e))?;
    check(name, &validator, body)
}

/// Validates the body of a request the simulator logged (requests without
/// a body or without a matched route pass).
pub fn validate_logged_request(entry: &LoggedRequest) -> Result<(), ContractError> {
    match (&entry.route, &entry.body) {
        (Some(route), Some(body)) => validate_request(&entry.method, route, body),
        _ => Ok(()),
    }
}

/// One example from the description.
#[derive(Debug, Clone, PartialEq)]
pub struct Example {
    /// The response status, or `None` for a request example.
    pub status: Option<u16>,
    /// The example's name in the description.
    pub name: String,
    /// The example value.
    pub value: Value,
}

fn example_value(ex: &'static Value) -> Option<Value> {
    let ex = resolve(ex);
    let v = ex.get("value")?;
    // Some examples wrap a reference to another example object.
    if v.get("$ref").is_some() {
        return resolve(v).get("value").cloned();
    }
    Some(v.clone())
}

fn examples_of(content: &'static Value, status: Option<u16>) -> Vec<Example> {
    let Some(c) = json_content(content) else {
        return Vec::new();
    };
    let mut out: Vec<Example> = c
        .get("examples")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(name, ex)| {
                    example_value(ex).map(|value| Example {
                        status,
                        name: name.clone(),
                        value,
                    })
                })
                .collect()
        })
        .unwrap_or_default();
    if let Some(v) = c.get("example") {
        out.push(Example {
            status,
            name: "example".to_owned(),
            value: v.clone(),
        });
    }
    out
}

/// The description's response examples for an operation (JSON content).
pub fn response_examples(method: &str, template: &str) -> Vec<Example> {
    let Some(op) = operation(method, template) else {
        return Vec::new();
    };
    let Some(responses) = op["responses"].as_object() else {
        return Vec::new();
    };
    responses
        .iter()
        .filter_map(|(status, r)| Some((status.parse::<u16>().ok()?, resolve(r))))
        .flat_map(|(status, r)| examples_of(&r["content"], Some(status)))
        .collect()
}

/// The description's request body examples for an operation.
pub fn request_examples(method: &str, template: &str) -> Vec<Example> {
    operation(method, template)
        .and_then(|op| op.get("requestBody"))
        .map(|b| examples_of(&resolve(b)["content"], None))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nullable_becomes_a_null_type() {
        assert_eq!(
            to_json_schema(&json!({"type": "string", "nullable": true, "example": "x"})),
            json!({"type": ["string", "null"]})
        );
        assert_eq!(
            to_json_schema(&json!({"type": "string", "enum": ["a"], "nullable": true})),
            json!({"type": ["string", "null"], "enum": ["a", null]})
        );
        assert_eq!(
            to_json_schema(
                &json!({"allOf": [{"$ref": "#/components/schemas/x"}], "nullable": true})
            ),
            json!({"anyOf": [{"allOf": [{"$ref": "#/$defs/x"}]}, {"type": "null"}]})
        );
        // A property *named* like a keyword is left alone.
        assert_eq!(
            to_json_schema(
                &json!({"type": "object", "properties": {"nullable": {"type": "boolean"}}})
            ),
            json!({"type": "object", "properties": {"nullable": {"type": "boolean"}}})
        );
    }

    #[test]
    fn request_bodies_validate() {
        let t = "/repos/{owner}/{repo}/git/trees";
        let ok = json!({"base_tree": "abc", "tree": [{"path": "a/b.json", "mode": "100644", "type": "blob", "content": "{}"}]});
        assert_eq!(validate_request("POST", t, &ok), Ok(()));
        let bad = json!({"tree": [{"path": "a", "mode": "644", "type": "blob"}]});
        let err = validate_request("POST", t, &bad).expect_err("mode is an enum");
        assert!(err.to_string().contains("/tree/0/mode"), "{err}");
        assert!(validate_request("GET", "/nope", &ok).is_err());
    }
}
