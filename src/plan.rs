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

/// A parameter point: its values and canonical fragments for fast digests.
#[derive(Debug, Clone)]
struct Point {
    case: CaseId,
    values: BTreeMap<String, Value>,
    argv: Vec<String>,
    /// Canonical bytes up to and including `"index":`.
    head: Vec<u8>,
    /// Canonical bytes from `,"intent":` up to and including `"repetition":`.
    mid: Vec<u8>,
    /// Canonical bytes from `,"schema":` up to and including `"warmup":`.
    tail: Vec<u8>,
    /// Canonical bytes from `,"workdir":` to the end.
    end: Vec<u8>,
}

/// The expansion of an intent.
#[derive(Debug, Clone)]
pub struct Plan {
    intent: LoadedIntent,
    points: Vec<Point>,
    runs_per_point: u64,
}

/// An intent whose expansion is too large to address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("failed to plan: the intent expands to more than 2^53 children")]
pub struct PlanTooLarge;

/// Plans `intent`. The children are computed on demand; see the module docs
/// for the order.
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
    let templates: Vec<Vec<Piece>> = i.command.iter().map(|a| parse_template(a)).collect();
    let mut staged = Vec::with_capacity(count as usize);
    let mut seen: std::collections::HashMap<CaseId, u32> = std::collections::HashMap::new();
    let mut steps = vec![0usize; axes.len()];
    for p in 0..count {
        let mut values = BTreeMap::new();
        let mut ordered = Vec::new();
        for (axis, &step) in axes.iter().zip(&steps) {
            for &param in &axis.params {
                let prm = &i.parameters[param];
                values.insert(prm.name.clone(), prm.values[step].clone());
                ordered.push((prm.name.as_str(), &prm.values[step]));
            }
        }
        ordered.sort_by_key(|(name, _)| {
            i.parameters
                .iter()
                .position(|x| x.name == *name)
                .unwrap_or(usize::MAX)
        });
        let case = case_id(&i.name, &ordered, p);
        *seen.entry(case.clone()).or_insert(0) += 1;
        let argv: Vec<String> = templates.iter().map(|t| render(t, &values)).collect();
        staged.push((case, values, argv));
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
    // are named by their position instead, so case ids stay unique.
    let points = staged
        .into_iter()
        .enumerate()
        .map(|(p, (case, values, argv))| {
            let case = if seen.get(&case).copied().unwrap_or(0) > 1 {
                point_case_id(&i.name, p as u64)
            } else {
                case
            };
            make_point(&intent, case, values, argv)
        })
        .collect();
    Ok(Plan {
        intent,
        points,
        runs_per_point,
    })
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

fn render(pieces: &[Piece], values: &BTreeMap<String, Value>) -> String {
    let mut s = String::new();
    for p in pieces {
        match p {
            Piece::Text(t) => s.push_str(t),
            Piece::Placeholder(name) => {
                if let Some(v) = values.get(name) {
                    s.push_str(&render_value(v));
                }
            }
        }
    }
    s
}

fn case_id(name: &str, ordered: &[(&str, &Value)], point: u64) -> CaseId {
    let mut s = name.to_owned();
    if !ordered.is_empty() {
        s.push('/');
        let parts: Vec<String> = ordered
            .iter()
            .map(|(k, v)| format!("{k}={}", render_value(v)))
            .collect();
        s.push_str(&parts.join(","));
    }
    // Values that cannot appear in a case id fall back to the point number,
    // which is still deterministic.
    CaseId::new(s).unwrap_or_else(|_| point_case_id(name, point))
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

fn make_point(
    li: &LoadedIntent,
    case: CaseId,
    values: BTreeMap<String, Value>,
    argv: Vec<String>,
) -> Point {
    let i = &li.intent;
    // Canonical member order: argv, benchmark, case, env, index, intent,
    // json_metrics, point, repetition, schema, shell, timeout_s, warmup,
    // workdir.
    let mut head = b"{\"argv\":".to_vec();
    head.extend(canon(&argv));
    head.extend(b",\"benchmark\":");
    head.extend(canon(&i.name));
    head.extend(b",\"case\":");
    head.extend(canon(case.as_str()));
    head.extend(b",\"env\":");
    head.extend(canon(&i.env));
    head.extend(b",\"index\":");
    let mut mid = b",\"intent\":".to_vec();
    mid.extend(canon(&li.digest));
    mid.extend(b",\"json_metrics\":");
    mid.extend(canon(&i.metrics.json_lines));
    mid.extend(b",\"point\":");
    mid.extend(canon(&values));
    mid.extend(b",\"repetition\":");
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
    Point {
        case,
        values,
        argv,
        head,
        mid,
        tail,
        end,
    }
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
            Vec::with_capacity(p.head.len() + p.mid.len() + p.tail.len() + p.end.len() + 32);
        self.write_child(&mut b, p, index, repetition, warmup);
        Some(b)
    }

    fn write_child(&self, b: &mut Vec<u8>, p: &Point, index: u64, repetition: u32, warmup: bool) {
        b.extend_from_slice(&p.head);
        b.extend_from_slice(index.to_string().as_bytes());
        b.extend_from_slice(&p.mid);
        b.extend_from_slice(repetition.to_string().as_bytes());
        b.extend_from_slice(&p.tail);
        b.extend_from_slice(if warmup { b"true" } else { b"false" });
        b.extend_from_slice(&p.end);
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
            point: p.values.clone(),
            repetition,
            warmup,
            argv: p.argv.clone(),
            shell: i.shell,
            env: i.env.clone(),
            workdir: i.workdir.clone(),
            timeout_s: i.timeout_s,
            json_metrics: i.metrics.json_lines,
        })
    }

    /// Every child digest, in order.
    pub fn child_digests(&self) -> Vec<Sha256Digest> {
        let mut out = Vec::with_capacity(self.len() as usize);
        let mut buf = Vec::with_capacity(512);
        for (pi, p) in self.points.iter().enumerate() {
            for run in 0..self.runs_per_point {
                let index = pi as u64 * self.runs_per_point + run;
                let run = run as u32;
                let warmup = run < self.intent.intent.warmup;
                let rep = if warmup {
                    run
                } else {
                    run - self.intent.intent.warmup
                };
                buf.clear();
                self.write_child(&mut buf, p, index, rep, warmup);
                out.push(Sha256Digest::of(&buf));
            }
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
            h.update(b"\"sha256:");
            h.update(d.hex().as_bytes());
            h.update(b"\"");
        }
        h.update(b"],\"intent\":");
        h.update(canonical_bytes(&self.intent.canonical));
        h.update(b",\"schema\":\"");
        h.update(BENCHMARK_SCHEMA.as_bytes());
        h.update(b"\"}");
        Sha256Digest::from_hex(&hex(&h.finalize())).unwrap_or_else(|_| Sha256Digest::of(b""))
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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
