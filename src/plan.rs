//! Deterministic expansion of an intent into ordered child runs.
//!
//! # Expansion order
//!
//! 1. **Axes.** Each parameter without `zip` is an axis of its own. The
//!    parameters of one zip group form a single axis whose k-th step takes the
//!    k-th value of every member. Axes are ordered by the first declaration of
//!    any of their parameters.
//! 2. **Points.** The cartesian product of the axes, first axis outermost: the
//!    last axis varies fastest, and each axis walks its values in declared
//!    order.
//! 3. **Runs.** For every point, `warmup` warm-up runs, then `repetitions`
//!    measured runs.
//!
//! So child `index = point * (warmup + repetitions) + run`. Each child's
//! configuration is a canonical JSON document (see [`ChildConfig`]) and its
//! digest is the sha256 of those bytes. The benchmark digest is the sha256 of
//! the canonical JSON `{"children":[<child digests>],"intent":<canonical
//! intent>,"schema":"benchops-benchmark/v1"}`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest as _, Sha256};

use crate::digest::Sha256Digest;
use crate::intent::{Intent, LoadedIntent, Piece, parse_template};
use crate::jcs::canonical_bytes;
use crate::names::CaseId;

/// Schema id of a child configuration.
pub const CHILD_SCHEMA: &str = "benchops-child/v1";
/// Schema id used in the benchmark digest document.
pub const BENCHMARK_SCHEMA: &str = "benchops-benchmark/v1";

/// The full configuration of one child run. Its canonical JSON is what the
/// child digest covers.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ChildConfig {
    /// Always [`CHILD_SCHEMA`].
    pub schema: String,
    /// The benchmark name.
    pub benchmark: String,
    /// Digest of the canonical intent.
    pub intent: Sha256Digest,
    /// Position in the expansion order.
    pub index: u64,
    /// The case (parameter point) this run measures.
    pub case: CaseId,
    /// Parameter values of the point.
    pub point: BTreeMap<String, Value>,
    /// Run number within the point: warm-ups count from 0, then measured
    /// runs count from 0 again.
    pub repetition: u32,
    /// Whether this is an unmeasured warm-up run.
    pub warmup: bool,
    /// The resolved argument vector.
    pub argv: Vec<String>,
    /// Run through `/bin/sh -c`.
    pub shell: bool,
    /// Environment additions.
    pub env: BTreeMap<String, String>,
    /// Working directory.
    pub workdir: Option<String>,
    /// Timeout in seconds.
    pub timeout_s: Option<f64>,
    /// Parse JSON metric lines from stdout.
    pub json_metrics: bool,
}

/// A parameter point: where it is in the grid, its case, and the canonical
/// fragments of its children's configurations.
#[derive(Debug, Clone)]
struct Point {
    case: CaseId,
    /// The value index of every parameter, in declaration order.
    steps: Box<[u32]>,
    /// Canonical bytes up to and including `"index":`.
    head: Box<[u8]>,
    /// Canonical bytes from `,"intent":` up to and including `"repetition":`.
    mid: Box<[u8]>,
}

/// The expansion of an intent.
#[derive(Debug, Clone)]
pub struct Plan {
    intent: LoadedIntent,
    points: Vec<Point>,
    runs_per_point: u64,
    /// Canonical bytes from `,"schema":` up to and including `"warmup":`,
    /// the same for every child.
    tail: Box<[u8]>,
    /// Canonical bytes from `,"workdir":` to the end, the same for every
    /// child.
    end: Box<[u8]>,
}

/// An intent whose expansion is too large to address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to plan: the intent expands to more than 2^53 children")]
pub struct PlanTooLarge;

/// A piece of a command template, its placeholder resolved to a parameter.
enum Part {
    Text(String),
    Param(Option<usize>),
}

/// Plans `intent`. The children are computed on demand; see the module docs
/// for the order.
///
/// Everything that does not vary is rendered once: each parameter value's
/// text and canonical bytes, the command templates with their placeholders
/// resolved, and the fragments every child shares. A point then costs its
/// case id, its argument vector and two short byte strings.
pub fn plan(intent: LoadedIntent) -> Result<Plan, PlanTooLarge> {
    let i = &intent.intent;
    let axes = axes(i);
    let mut count: u64 = 1;
    for a in &axes {
        count = count.checked_mul(a.len as u64).ok_or(PlanTooLarge)?;
    }
    let runs_per_point = u64::from(i.warmup) + u64::from(i.repetitions);
    if count
        .checked_mul(runs_per_point)
        .is_none_or(|n| n > (1 << 53))
    {
        return Err(PlanTooLarge);
    }
    let params = &i.parameters;
    // Each value's text (for argv and case ids) and canonical bytes.
    let text: Vec<Vec<String>> = params
        .iter()
        .map(|p| p.values.iter().map(render_value).collect())
        .collect();
    let canon_values: Vec<Vec<Vec<u8>>> = params
        .iter()
        .map(|p| p.values.iter().map(canonical_bytes).collect())
        .collect();
    // The `point` object's members in canonical (UTF-16) key order, each
    // with its `"name":` prefix.
    let mut key_order: Vec<usize> = (0..params.len()).collect();
    key_order.sort_by(|a, b| crate::jcs::cmp_utf16(&params[*a].name, &params[*b].name));
    let keys: Vec<Vec<u8>> = key_order
        .iter()
        .map(|&k| {
            let mut b = Vec::new();
            crate::jcs::push_string(&mut b, &params[k].name);
            b.push(b':');
            b
        })
        .collect();
    let templates: Vec<Vec<Part>> = i
        .command
        .iter()
        .map(|a| {
            parse_template(a)
                .into_iter()
                .map(|piece| match piece {
                    Piece::Text(t) => Part::Text(t),
                    Piece::Placeholder(name) => {
                        Part::Param(params.iter().position(|p| p.name == name))
                    }
                })
                .collect()
        })
        .collect();
    let mut param_axis = vec![0usize; params.len()];
    for (a, axis) in axes.iter().enumerate() {
        for &k in &axis.params {
            param_axis[k] = a;
        }
    }
    // The fragments every child shares.
    let benchmark = canon(&i.name);
    let env = canon(&i.env);
    let mut intent_and_metrics = b",\"intent\":".to_vec();
    intent_and_metrics.extend(canon(&intent.digest));
    intent_and_metrics.extend(b",\"json_metrics\":");
    intent_and_metrics.extend(canon(&i.metrics.json_lines));
    intent_and_metrics.extend(b",\"point\":");
    let mut tail = b",\"schema\":".to_vec();
    tail.extend(canon(CHILD_SCHEMA));
    tail.extend(b",\"shell\":");
    tail.extend(canon(&i.shell));
    tail.extend(b",\"timeout_s\":");
    tail.extend(canon(&i.timeout_s));
    tail.extend(b",\"warmup\":");
    let mut end = b",\"workdir\":".to_vec();
    end.extend(canon(&i.workdir));
    end.push(b'}');

    let mut points = Vec::with_capacity(count as usize);
    let mut seen: std::collections::HashMap<CaseId, u32> = std::collections::HashMap::new();
    let mut steps = vec![0usize; axes.len()];
    let mut case = String::new();
    let mut arg = String::new();
    let mut head = Vec::with_capacity(256);
    let mut mid = Vec::with_capacity(256);
    for p in 0..count {
        let step = |k: usize| steps[param_axis[k]];
        case.clear();
        case.push_str(&i.name);
        for (k, prm) in params.iter().enumerate() {
            case.push(if k == 0 { '/' } else { ',' });
            case.push_str(&prm.name);
            case.push('=');
            case.push_str(&text[k][step(k)]);
        }
        // Values that cannot appear in a case id fall back to the point
        // number, which is still deterministic.
        let case_id = CaseId::new(case.as_str()).unwrap_or_else(|_| point_case_id(&i.name, p));
        *seen.entry(case_id.clone()).or_insert(0) += 1;
        head.clear();
        head.extend_from_slice(b"{\"argv\":[");
        for (t, parts) in templates.iter().enumerate() {
            if t > 0 {
                head.push(b',');
            }
            arg.clear();
            for part in parts {
                match part {
                    Part::Text(s) => arg.push_str(s),
                    Part::Param(Some(k)) => arg.push_str(&text[*k][step(*k)]),
                    Part::Param(None) => {}
                }
            }
            crate::jcs::push_string(&mut head, &arg);
        }
        head.extend_from_slice(b"],\"benchmark\":");
        head.extend_from_slice(&benchmark);
        head.extend_from_slice(b",\"case\":");
        crate::jcs::push_string(&mut head, case_id.as_str());
        head.extend_from_slice(b",\"env\":");
        head.extend_from_slice(&env);
        head.extend_from_slice(b",\"index\":");
        mid.clear();
        mid.extend_from_slice(&intent_and_metrics);
        mid.push(b'{');
        for (n, (&k, key)) in key_order.iter().zip(&keys).enumerate() {
            if n > 0 {
                mid.push(b',');
            }
            mid.extend_from_slice(key);
            mid.extend_from_slice(&canon_values[k][step(k)]);
        }
        mid.extend_from_slice(b"},\"repetition\":");
        points.push(Point {
            case: case_id,
            steps: (0..params.len()).map(|k| step(k) as u32).collect(),
            head: head.as_slice().into(),
            mid: mid.as_slice().into(),
        });
        // Advance the mixed-radix counter, last axis fastest.
        for k in (0..axes.len()).rev() {
            steps[k] += 1;
            if steps[k] < axes[k].len {
                break;
            }
            steps[k] = 0;
        }
    }
    // Values holding `,` or `=` can make two points read alike; such points
    // are named by their position instead, so case ids stay unique (their
    // fragments are rewritten with the new name).
    if seen.values().any(|n| *n > 1) {
        for (p, point) in points.iter_mut().enumerate() {
            if seen.get(&point.case).copied().unwrap_or(0) > 1 {
                let renamed = point_case_id(&i.name, p as u64);
                point.head = rename_case(&point.head, &point.case, &renamed).into();
                point.case = renamed;
            }
        }
    }
    Ok(Plan {
        intent,
        points,
        runs_per_point,
        tail: tail.into(),
        end: end.into(),
    })
}

/// `head` with its `"case":` member naming `to` instead of `from`.
fn rename_case(head: &[u8], from: &CaseId, to: &CaseId) -> Vec<u8> {
    let mut old = b",\"case\":".to_vec();
    crate::jcs::push_string(&mut old, from.as_str());
    old.extend_from_slice(b",\"env\":");
    let mut new = b",\"case\":".to_vec();
    crate::jcs::push_string(&mut new, to.as_str());
    new.extend_from_slice(b",\"env\":");
    // The member follows `"benchmark":` and precedes `"env":`, each once.
    match head.windows(old.len()).position(|w| w == old.as_slice()) {
        Some(at) => {
            let mut out = head[..at].to_vec();
            out.extend_from_slice(&new);
            out.extend_from_slice(&head[at + old.len()..]);
            out
        }
        None => head.to_vec(),
    }
}

struct Axis {
    params: Vec<usize>,
    len: usize,
}

fn axes(i: &Intent) -> Vec<Axis> {
    let mut axes: Vec<Axis> = Vec::new();
    let mut zip_axis: BTreeMap<&str, usize> = BTreeMap::new();
    for (k, p) in i.parameters.iter().enumerate() {
        match &p.zip {
            Some(z) => match zip_axis.get(z.as_str()) {
                Some(&a) => axes[a].params.push(k),
                None => {
                    zip_axis.insert(z, axes.len());
                    axes.push(Axis {
                        params: vec![k],
                        len: p.values.len(),
                    });
                }
            },
            None => axes.push(Axis {
                params: vec![k],
                len: p.values.len(),
            }),
        }
    }
    axes
}

/// Renders a parameter value into a command argument or case id: strings as
/// they are, numbers in their canonical (ECMAScript) form, booleans as
/// `true`/`false`.
pub fn render_value(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => String::from_utf8_lossy(&canonical_bytes(other)).into_owned(),
    }
}

fn point_case_id(name: &str, point: u64) -> CaseId {
    #[expect(
        clippy::expect_used,
        reason = "intent validation guarantees the name is a valid case id"
    )]
    CaseId::new(format!("{name}/point-{point}")).expect("benchmark name is a valid case id")
}

fn canon<T: Serialize + ?Sized>(v: &T) -> Vec<u8> {
    // Only strings, maps of strings, integers and finite floats reach here.
    serde_json::to_value(v)
        .map(|v| canonical_bytes(&v))
        .unwrap_or_else(|_| b"null".to_vec())
}

impl Plan {
    /// The loaded intent.
    pub fn intent(&self) -> &LoadedIntent {
        &self.intent
    }

    /// Number of children.
    pub fn len(&self) -> u64 {
        self.points.len() as u64 * self.runs_per_point
    }

    /// Whether the plan has no children (an intent always has at least one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Number of parameter points (cases).
    pub fn point_count(&self) -> usize {
        self.points.len()
    }

    /// Runs per point (warm-ups plus repetitions).
    pub fn runs_per_point(&self) -> u64 {
        self.runs_per_point
    }

    /// The case ids, in expansion order.
    pub fn cases(&self) -> impl Iterator<Item = &CaseId> {
        self.points.iter().map(|p| &p.case)
    }

    fn locate(&self, index: u64) -> Option<(&Point, bool, u32)> {
        if index >= self.len() {
            return None;
        }
        let point = &self.points[(index / self.runs_per_point) as usize];
        let run = (index % self.runs_per_point) as u32;
        let warmup = run < self.intent.intent.warmup;
        let repetition = if warmup {
            run
        } else {
            run - self.intent.intent.warmup
        };
        Some((point, warmup, repetition))
    }

    /// The canonical configuration bytes of child `index`.
    pub fn child_bytes(&self, index: u64) -> Option<Vec<u8>> {
        let (p, warmup, repetition) = self.locate(index)?;
        let mut b =
            Vec::with_capacity(p.head.len() + p.mid.len() + self.tail.len() + self.end.len() + 32);
        self.write_child(&mut b, p, index, repetition, warmup);
        Some(b)
    }

    fn write_child(&self, b: &mut Vec<u8>, p: &Point, index: u64, repetition: u32, warmup: bool) {
        b.extend_from_slice(&p.head);
        push_u64(b, index);
        b.extend_from_slice(&p.mid);
        push_u64(b, u64::from(repetition));
        b.extend_from_slice(&self.tail);
        b.extend_from_slice(if warmup { b"true" } else { b"false" });
        b.extend_from_slice(&self.end);
    }

    /// The digest of child `index`.
    pub fn child_digest(&self, index: u64) -> Option<Sha256Digest> {
        self.child_bytes(index).map(|b| Sha256Digest::of(&b))
    }

    /// The configuration of child `index`.
    pub fn child(&self, index: u64) -> Option<ChildConfig> {
        let (p, warmup, repetition) = self.locate(index)?;
        let i = &self.intent.intent;
        Some(ChildConfig {
            schema: CHILD_SCHEMA.to_owned(),
            benchmark: i.name.clone(),
            intent: self.intent.digest,
            index,
            case: p.case.clone(),
            point: self.values(p),
            repetition,
            warmup,
            argv: self.argv(p),
            shell: i.shell,
            env: i.env.clone(),
            workdir: i.workdir.clone(),
            timeout_s: i.timeout_s,
            json_metrics: i.metrics.json_lines,
        })
    }

    /// A point's parameter values.
    fn values(&self, p: &Point) -> BTreeMap<String, Value> {
        self.intent
            .intent
            .parameters
            .iter()
            .zip(p.steps.iter())
            .map(|(prm, &step)| (prm.name.clone(), prm.values[step as usize].clone()))
            .collect()
    }

    /// A point's argument vector.
    fn argv(&self, p: &Point) -> Vec<String> {
        let i = &self.intent.intent;
        i.command
            .iter()
            .map(|a| {
                let mut s = String::new();
                for piece in parse_template(a) {
                    match piece {
                        Piece::Text(t) => s.push_str(&t),
                        Piece::Placeholder(name) => {
                            if let Some(k) = i.parameters.iter().position(|x| x.name == name) {
                                s.push_str(&render_value(
                                    &i.parameters[k].values[p.steps[k] as usize],
                                ));
                            }
                        }
                    }
                }
                s
            })
            .collect()
    }

    /// The digests of the children of points `points`, written to `out` (one
    /// slot per child, in order).
    fn digests_into(&self, first_point: usize, out: &mut [Sha256Digest]) {
        let runs = self.runs_per_point as usize;
        let warmups = self.intent.intent.warmup;
        let mut buf = Vec::with_capacity(512);
        for (n, slot) in out.iter_mut().enumerate() {
            let pi = first_point + n / runs;
            let run = (n % runs) as u32;
            let p = &self.points[pi];
            let index = pi as u64 * self.runs_per_point + u64::from(run);
            let warmup = run < warmups;
            let rep = if warmup { run } else { run - warmups };
            buf.clear();
            self.write_child(&mut buf, p, index, rep, warmup);
            *slot = Sha256Digest::from_bytes(Sha256::digest(&buf).into());
        }
    }

    /// Every child digest, in order. Large plans are hashed in parallel
    /// (rayon), in chunks of whole points; the result does not depend on
    /// how the work was split.
    pub fn child_digests(&self) -> Vec<Sha256Digest> {
        use rayon::prelude::*;
        let mut out = vec![Sha256Digest::from_bytes([0; 32]); self.len() as usize];
        let runs = self.runs_per_point as usize;
        // About 16k children a task: enough to amortise scheduling.
        let points_per_task = (16_384 / runs).max(1);
        if out.len() <= 2 * points_per_task * runs {
            self.digests_into(0, &mut out);
        } else {
            out.par_chunks_mut(points_per_task * runs)
                .enumerate()
                .for_each(|(t, chunk)| self.digests_into(t * points_per_task, chunk));
        }
        out
    }

    /// The benchmark digest over the canonical intent and the ordered child
    /// digests (see the module docs).
    pub fn benchmark_digest(&self, child_digests: &[Sha256Digest]) -> Sha256Digest {
        let mut h = Sha256::new();
        h.update(b"{\"children\":[");
        for (k, d) in child_digests.iter().enumerate() {
            if k > 0 {
                h.update(b",");
            }
            let mut hex = [0u8; 64];
            d.write_hex(&mut hex);
            h.update(b"\"sha256:");
            h.update(hex);
            h.update(b"\"");
        }
        h.update(b"],\"intent\":");
        h.update(canonical_bytes(&self.intent.canonical));
        h.update(b",\"schema\":\"");
        h.update(BENCHMARK_SCHEMA.as_bytes());
        h.update(b"\"}");
        Sha256Digest::from_bytes(h.finalize().into())
    }
}

/// Appends the decimal digits of `n` (what `n.to_string()` gives), without
/// allocating.
fn push_u64(b: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut at = digits.len();
    loop {
        at -= 1;
        digits[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    b.extend_from_slice(&digits[at..]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::intent::from_toml;

    const T: &str = r#"
schema = "benchmark-intent/v1"
name = "demo"
command = ["prog", "--size={size}", "--mode", "{mode}", "{{literal}}"]
repetitions = 2
warmup = 1
timeout_s = 1.5

[[parameters]]
name = "size"
values = [10, 2.5]

[[parameters]]
name = "mode"
values = ["a", "b"]
zip = "m"

[[parameters]]
name = "flag"
values = [true, false]
zip = "m"
"#;

    #[test]
    fn order_is_points_then_warmups_then_repetitions() {
        let p = plan(from_toml(T, "t").expect("valid")).expect("plans");
        assert_eq!(p.len(), 2 * 2 * 3);
        let cases: Vec<String> = p.cases().map(ToString::to_string).collect();
        assert_eq!(
            cases,
            [
                "demo/size=10,mode=a,flag=true",
                "demo/size=10,mode=b,flag=false",
                "demo/size=2.5,mode=a,flag=true",
                "demo/size=2.5,mode=b,flag=false",
            ]
        );
        let c = p.child(4).expect("exists");
        assert_eq!(
            (c.case.as_str(), c.warmup, c.repetition),
            ("demo/size=10,mode=b,flag=false", false, 0)
        );
        assert_eq!(c.argv, ["prog", "--size=10", "--mode", "b", "{literal}"]);
        assert!(p.child(3).expect("exists").warmup);
        assert!(p.child(12).is_none());
    }

    #[test]
    fn look_alike_points_get_unique_case_ids() {
        let t = r#"
schema = "benchmark-intent/v1"
name = "x"
command = ["echo", "{a}", "{b}"]
repetitions = 1
[[parameters]]
name = "a"
values = ["1,b=2", "1"]
[[parameters]]
name = "b"
values = ["3", "2,b=3"]
"#;
        let p = plan(from_toml(t, "t").expect("valid")).expect("plans");
        let cases: Vec<String> = p.cases().map(ToString::to_string).collect();
        let unique: std::collections::BTreeSet<&String> = cases.iter().collect();
        assert_eq!(unique.len(), cases.len(), "{cases:?}");
        assert!(cases.contains(&"x/point-0".to_owned()), "{cases:?}");
    }

    #[test]
    fn fast_bytes_equal_the_canonical_form_of_the_config() {
        let p = plan(from_toml(T, "t").expect("valid")).expect("plans");
        for i in 0..p.len() {
            let config = p.child(i).expect("exists");
            let generic = canonical_bytes(&serde_json::to_value(&config).expect("serializes"));
            assert_eq!(p.child_bytes(i).expect("exists"), generic, "child {i}");
            assert_eq!(p.child_digests()[i as usize], Sha256Digest::of(&generic));
        }
    }
}
