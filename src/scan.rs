//! One streaming pass over the bytes of a `benchmark-result` record: JSON
//! syntax, canonical form, duplicate members, the schema tag, and a small
//! stand-in of the document for schema validation.
//!
//! No tree of the whole document is built. The arrays that hold a record's
//! bulk (`cases`, each case's `metrics`, and every sample array) are checked
//! one element at a time against their item schema and then dropped; the
//! stand-in keeps only their first element. Everything else is kept in the
//! stand-in, within a memory budget of [`BUDGET_FACTOR`] times the input
//! plus [`BUDGET_BASE`] bytes; past it, the pass records where the budget
//! ran out and stops keeping values, and the record is refused as too large
//! to check.

use std::fmt;

use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

use crate::jcs::{self, CmpOut, NotCanonical, Out, Stream};
use crate::path::{JsonPath, Segment};
use crate::schema::{MAX_VIOLATIONS, ResultItem, SchemaViolation};

/// The stand-in may take this many times the input's size...
pub const BUDGET_FACTOR: usize = 2;
/// ...plus this many bytes.
pub const BUDGET_BASE: usize = 8 << 20;

/// The longest `schema` tag the pass keeps (longer ones name no contract).
const MAX_TAG: usize = 256;

/// What one pass found.
#[derive(Debug)]
pub(crate) struct Scan {
    /// The first difference from the canonical form.
    pub canonical: Result<(), NotCanonical>,
    /// The first duplicate member: its path and name.
    pub duplicate: Option<(JsonPath, String)>,
    /// The top-level `schema` member, when it is a short string.
    pub schema_tag: Option<String>,
    /// The stand-in document (`None` when the budget ran out).
    pub skeleton: Option<Value>,
    /// Where the budget ran out.
    pub too_large: Option<JsonPath>,
    /// Schema violations of elements checked one at a time (at most
    /// [`MAX_VIOLATIONS`]; elements after that are not checked).
    pub element_violations: Vec<SchemaViolation>,
    /// Whether elements went unchecked because of that limit.
    pub capped: bool,
}

/// Scans `bytes`. Fails only when they are not JSON (or not I-JSON: lone
/// surrogates, numbers out of range), with the parser's position.
pub(crate) fn scan(bytes: &[u8]) -> Result<Scan, jcs::ParseError> {
    let mut w = Walker {
        out: Stream::<CmpOut<'_>>::new(bytes),
        path: Vec::new(),
        build: true,
        alive: 0,
        budget: bytes
            .len()
            .saturating_mul(BUDGET_FACTOR)
            .saturating_add(BUDGET_BASE),
        too_large: None,
        duplicate: None,
        schema_tag: None,
        element_violations: Vec::new(),
        capped: false,
    };
    let skeleton = walk(bytes, &mut w)?;
    Ok(Scan {
        canonical: w.out.finish(),
        duplicate: w.duplicate,
        schema_tag: w.schema_tag,
        skeleton: if w.too_large.is_some() {
            None
        } else {
            skeleton
        },
        too_large: w.too_large,
        element_violations: w.element_violations,
        capped: w.capped,
    })
}

/// The canonical spelling of every token of `bytes`, in document order
/// (members are not re-sorted): what the typed decoder reads when the given
/// spelling is not canonical (`5.0` for a count).
pub(crate) fn normalized(bytes: &[u8]) -> Result<Vec<u8>, jcs::ParseError> {
    let mut w = Walker {
        out: Stream::new_buffer(bytes.len()),
        path: Vec::new(),
        build: false,
        alive: 0,
        budget: 0,
        too_large: None,
        duplicate: None,
        schema_tag: None,
        element_violations: Vec::new(),
        capped: false,
    };
    walk(bytes, &mut w)?;
    Ok(w.out.into_bytes())
}

fn walk<O: Out>(bytes: &[u8], w: &mut Walker<O>) -> Result<Option<Value>, jcs::ParseError> {
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let value = Node {
        w,
        ctx: Ctx::Root,
        lead: None,
    }
    .deserialize(&mut de)
    .and_then(|v| de.end().map(|()| v))
    .map_err(parse_error)?;
    Ok(value)
}

fn parse_error(e: serde_json::Error) -> jcs::ParseError {
    let msg = e.to_string();
    let reason = match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg,
    };
    jcs::ParseError {
        line: e.line(),
        column: e.column(),
        reason: crate::excerpt::bytes_prefix(reason.as_bytes(), 200),
    }
}

/// Where in a record a value sits, as far as streaming cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Ctx {
    Root,
    Case,
    Metric,
    Drift,
    Items(ResultItem),
    Plain,
}

impl Ctx {
    fn member(self, key: &str) -> Ctx {
        match (self, key) {
            (Ctx::Root, "cases") => Ctx::Items(ResultItem::Case),
            (Ctx::Case, "metrics") => Ctx::Items(ResultItem::Metric),
            (Ctx::Case, "drift") => Ctx::Drift,
            (Ctx::Metric, "samples") => Ctx::Items(ResultItem::Sample),
            (Ctx::Drift, "initial_samples") => Ctx::Items(ResultItem::InitialSample),
            (Ctx::Drift, "confirmation_samples") => Ctx::Items(ResultItem::ConfirmationSample),
            _ => Ctx::Plain,
        }
    }

    fn element(self) -> Ctx {
        match self {
            Ctx::Items(ResultItem::Case) => Ctx::Case,
            Ctx::Items(ResultItem::Metric) => Ctx::Metric,
            _ => Ctx::Plain,
        }
    }
}

struct Walker<O> {
    out: Stream<O>,
    path: Vec<Segment>,
    /// Whether values are kept at all.
    build: bool,
    /// Estimated bytes held by kept values.
    alive: usize,
    budget: usize,
    too_large: Option<JsonPath>,
    duplicate: Option<(JsonPath, String)>,
    schema_tag: Option<String>,
    element_violations: Vec<SchemaViolation>,
    capped: bool,
}

impl<O> Walker<O> {
    /// Accounts for `bytes` more held; false once the budget is spent.
    fn charge(&mut self, bytes: usize) -> bool {
        if !self.build {
            return false;
        }
        self.alive = self.alive.saturating_add(bytes);
        if self.alive > self.budget {
            self.build = false;
            let mut p = JsonPath::root();
            for s in &self.path {
                p.push(s.clone());
            }
            self.too_large = Some(p);
            return false;
        }
        true
    }

    fn keep(&mut self, value: Value, cost: usize) -> Option<Value> {
        self.charge(cost).then_some(value)
    }

    fn json_path(&self) -> JsonPath {
        let mut p = JsonPath::root();
        for s in &self.path {
            p.push(s.clone());
        }
        p
    }
}

/// Rough heap cost of one `Value` slot, one map entry and one allocation.
const VALUE: usize = 32;
const ENTRY: usize = 96;
const ALLOC: usize = 32;

/// What precedes a value in the canonical bytes: `,` before an element
/// after the first, `:` after a member name.
type Lead = Option<&'static [u8]>;

struct Node<'w, O> {
    w: &'w mut Walker<O>,
    ctx: Ctx,
    lead: Lead,
}

impl<'de, O: Out> DeserializeSeed<'de> for Node<'_, O> {
    type Value = Option<Value>;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<O: Out> Node<'_, O> {
    fn lead(&mut self) {
        if let Some(b) = self.lead.take() {
            self.w.out.punct(b, &self.w.path);
        }
    }
}

impl<'de, O: Out> Visitor<'de> for Node<'_, O> {
    type Value = Option<Value>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(mut self, v: bool) -> Result<Self::Value, E> {
        self.lead();
        let text: &'static [u8] = if v { b"true" } else { b"false" };
        self.w.out.literal(text, &self.w.path);
        Ok(self.w.keep(Value::Bool(v), VALUE))
    }

    fn visit_unit<E>(mut self) -> Result<Self::Value, E> {
        self.lead();
        self.w.out.literal(b"null", &self.w.path);
        Ok(self.w.keep(Value::Null, VALUE))
    }

    fn visit_u64<E>(mut self, v: u64) -> Result<Self::Value, E> {
        self.lead();
        self.w.out.u64(v, &self.w.path);
        Ok(self.w.keep(Value::from(v), VALUE))
    }

    fn visit_i64<E>(mut self, v: i64) -> Result<Self::Value, E> {
        self.lead();
        self.w.out.i64(v, &self.w.path);
        Ok(self.w.keep(Value::from(v), VALUE))
    }

    fn visit_f64<E>(mut self, v: f64) -> Result<Self::Value, E> {
        self.lead();
        self.w.out.f64(v, &self.w.path);
        let value = Number::from_f64(v).map_or(Value::Null, Value::Number);
        Ok(self.w.keep(value, VALUE))
    }

    fn visit_str<E>(mut self, v: &str) -> Result<Self::Value, E> {
        self.lead();
        self.w.out.string(v, &self.w.path);
        if v.len() <= MAX_TAG
            && matches!(self.w.path.as_slice(), [Segment::Key(k)] if k == "schema")
        {
            self.w.schema_tag = Some(v.to_owned());
        }
        if !self.w.charge(VALUE + ALLOC + v.len()) {
            return Ok(None);
        }
        Ok(Some(Value::String(v.to_owned())))
    }

    fn visit_seq<A: SeqAccess<'de>>(mut self, mut seq: A) -> Result<Self::Value, A::Error> {
        self.lead();
        self.w.out.punct(b"[", &self.w.path);
        let streamed = match self.ctx {
            Ctx::Items(item) => Some(item),
            _ => None,
        };
        let element_ctx = self.ctx.element();
        let mut items = Vec::new();
        let mut index = 0usize;
        loop {
            self.w.path.push(Segment::Index(index));
            let before = self.w.alive;
            let next = seq.next_element_seed(Node {
                w: &mut *self.w,
                ctx: element_ctx,
                lead: (index > 0).then_some(&b","[..]),
            });
            let next = match next {
                Ok(n) => n,
                Err(e) => {
                    self.w.path.pop();
                    return Err(e);
                }
            };
            let Some(element) = next else {
                self.w.path.pop();
                break;
            };
            match (streamed, element) {
                (Some(item), Some(v)) if index > 0 => {
                    // Checked now and dropped: only the first element stays.
                    if self.w.element_violations.len() < MAX_VIOLATIONS {
                        let at = self.w.json_path();
                        let found = item.violations(&v, &at);
                        self.w.element_violations.extend(found);
                    } else {
                        self.w.capped = true;
                    }
                    drop(v);
                    self.w.alive = before;
                }
                (_, Some(v)) => {
                    if self.w.charge(VALUE) {
                        items.push(v);
                    }
                }
                (_, None) => {}
            }
            self.w.path.pop();
            index += 1;
        }
        self.w.out.punct(b"]", &self.w.path);
        Ok(self.w.keep(Value::Array(items), VALUE))
    }

    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<Self::Value, A::Error> {
        self.lead();
        self.w.out.punct(b"{", &self.w.path);
        let mut members = Map::new();
        let mut previous: Option<String> = None;
        loop {
            let key = map.next_key_seed(KeySeed {
                w: &mut *self.w,
                previous: previous.as_deref(),
            })?;
            let Some(key) = key else { break };
            self.w.path.push(Segment::Key(key.clone()));
            let value = map.next_value_seed(Node {
                w: &mut *self.w,
                ctx: self.ctx.member(&key),
                lead: Some(b":"),
            });
            let value = match value {
                Ok(v) => v,
                Err(e) => {
                    self.w.path.pop();
                    return Err(e);
                }
            };
            if let Some(v) = value
                && self.w.charge(ENTRY + key.len())
                && members.insert(key.clone(), v).is_some()
                && self.w.duplicate.is_none()
            {
                self.w.duplicate = Some((self.w.json_path(), key.clone()));
            }
            self.w.path.pop();
            previous = Some(key);
        }
        self.w.out.punct(b"}", &self.w.path);
        Ok(self.w.keep(Value::Object(members), VALUE))
    }
}

/// Reads a member name, writes `,` before it and the name itself, and checks
/// that it sorts after the member before it.
struct KeySeed<'w, 'p, O> {
    w: &'w mut Walker<O>,
    previous: Option<&'p str>,
}

impl<'de, O: Out> DeserializeSeed<'de> for KeySeed<'_, '_, O> {
    type Value = String;

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<String, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de, O: Out> Visitor<'de> for KeySeed<'_, '_, O> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a member name")
    }

    fn visit_str<E>(self, key: &str) -> Result<String, E> {
        let w = self.w;
        if let Some(previous) = self.previous {
            w.out.punct(b",", &w.path);
            match jcs::cmp_utf16(previous, key) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => {
                    if w.duplicate.is_none() {
                        let mut p = w.json_path();
                        p.push(Segment::Key(key.to_owned()));
                        w.duplicate = Some((p, key.to_owned()));
                    }
                }
                std::cmp::Ordering::Greater => w.out.misordered(previous, &w.path),
            }
        }
        w.path.push(Segment::Key(key.to_owned()));
        w.out.key(key, &w.path);
        w.path.pop();
        Ok(key.to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outcome(text: &str) -> Scan {
        scan(text.as_bytes()).expect("parses")
    }

    #[test]
    fn agrees_with_the_value_based_check() {
        let cases = [
            r#"{"a":[1,2.5],"b":"x"}"#,
            r#"{"a":[1,1.0]}"#,
            r#"{"b":1,"a":2}"#,
            r#"{"a": 1}"#,
            r#"{"a":"\u0041"}"#,
            "{\"a\":1}\n",
            " {\"a\":1}",
            r#"[-0,1E-7,1e21,9007199254740993,0.30000000000000004]"#,
            r#"{"\u00e9":1,"e":2}"#,
            "{\"\u{FB01}\":1,\"\u{1F600}\":2}",
            "{\"\u{1F600}\":2,\"\u{FB01}\":1}",
        ];
        for text in cases {
            let v = jcs::parse(text.as_bytes()).expect("parses");
            let old = jcs::check_canonical(text.as_bytes(), &v);
            let new = outcome(text).canonical;
            assert_eq!(old.is_ok(), new.is_ok(), "{text}: {old:?} vs {new:?}");
            if let (Err(a), Err(b)) = (old, new) {
                assert_eq!(a.hint, b.hint, "{text}");
                assert_eq!(a.path, b.path, "{text}");
            }
        }
    }

    #[test]
    fn duplicate_members_are_named_with_their_path() {
        let s = outcome(r#"{"executor":{"host":"a","host":"b","kind":"local"}}"#);
        let (path, key) = s.duplicate.expect("duplicate found");
        assert_eq!(path.to_string(), "$.executor.host");
        assert_eq!(key, "host");
        // Not next to each other.
        let s = outcome(r#"{"a":1,"b":2,"a":3}"#);
        assert_eq!(s.duplicate.expect("found").0.to_string(), "$.a");
    }

    #[test]
    fn streamed_arrays_keep_only_their_first_element() {
        let s = outcome(r#"{"cases":[{"metrics":[{"samples":[1,2,3]},{}]},{"id":"x"}]}"#);
        let sk = s.skeleton.expect("kept");
        assert_eq!(
            sk,
            serde_json::json!({"cases":[{"metrics":[{"samples":[1]}]}]})
        );
        // The dropped case and metric were checked on their own.
        let paths: Vec<String> = s
            .element_violations
            .iter()
            .map(|v| v.path.to_string())
            .collect();
        assert!(paths.contains(&"$.cases[1]".to_owned()), "{paths:?}");
        assert!(
            paths.contains(&"$.cases[0].metrics[1]".to_owned()),
            "{paths:?}"
        );
    }

    #[test]
    fn a_wide_plain_array_runs_out_of_budget() {
        let mut text = String::from("{\"lane\":[");
        let n = (BUDGET_BASE / VALUE) + 10;
        for i in 0..n {
            if i > 0 {
                text.push(',');
            }
            text.push('0');
        }
        text.push_str("]}");
        let s = outcome(&text);
        assert!(s.skeleton.is_none());
        let at = s.too_large.expect("too large").to_string();
        assert!(at.starts_with("$.lane["), "{at}");
        s.canonical.expect("still canonical");
    }

    #[test]
    fn normalizes_number_spelling() {
        let n = normalized(br#"{"b": [5.0, 1e2, "\u0041"], "a": -0}"#).expect("parses");
        assert_eq!(n, br#"{"b":[5,100,"A"],"a":0}"#);
    }
}
