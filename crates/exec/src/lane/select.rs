//! Intents derived for a lane run: the suite's intent restricted to the
//! cases a stage measures, with its repetitions and the lane execution
//! named in the children's environment.
//!
//! A selection keeps, on each axis of the grid, the values the selected
//! cases use, so each selected case keeps its id. `BENCHOPS_LANE_RUN` and
//! `BENCHOPS_LANE_STAGE` (and the subject's `BENCHOPS_SUBJECT_DIR` and
//! `BENCHOPS_SUBJECT_COMMIT`) are added to the environment: they tell a
//! benchmark which execution and stage runs it, and they make every
//! stage's benchmark digest its own, so a later lane run never reuses an
//! earlier run's results.

use benchops::CaseId;
use benchops::intent::{self, LoadedIntent};
use benchops::plan::{self, Plan};
use serde_json::{Value, json};

/// Why a selection could not be made.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// The derived intent is invalid (a defect, reported rather than hidden).
    #[error(transparent)]
    Intent(#[from] intent::IntentError),
    /// The derived intent plans too many children.
    #[error(transparent)]
    Plan(#[from] plan::PlanTooLarge),
    /// The selected cases could not be kept apart by their values.
    #[error(
        "intent {source_name}: the selected cases cannot be planned on their own (case ids {expected:?} came back as {got:?}); give its points distinct values"
    )]
    Mismatch {
        /// The intent.
        source_name: String,
        /// The cases asked for.
        expected: Vec<String>,
        /// The cases planned.
        got: Vec<String>,
    },
}

/// What a stage runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StageSpec<'a> {
    /// The lane execution id.
    pub lane_run: &'a str,
    /// `measure` or `confirm`.
    pub stage: &'a str,
    /// Measured repetitions per case; `None` keeps the intent's.
    pub repetitions: Option<u32>,
    /// The subject checkout and commit, exported to the children as
    /// `BENCHOPS_SUBJECT_DIR` and `BENCHOPS_SUBJECT_COMMIT`.
    pub subject: Option<(&'a str, &'a str)>,
    /// Sides measured interleaved (same-session A/B, a bisection step):
    /// each kept case runs once per token, in token order, with its side's
    /// subject ([`super::sides`]).
    pub interleave: Option<&'a super::sides::Interleave>,
}

/// Plans `base` restricted to the cases `keep` accepts, for `spec`; `None`
/// when no case is kept.
///
/// Each axis of the grid (a parameter, or a zip group) keeps the steps that
/// some kept case uses, in their declared order, so case ids and the
/// expansion order stay as they were. When the kept cases do not form a
/// grid themselves, the restricted grid also holds the other points between
/// them: the plan is then a superset, and the caller reads only the cases it
/// asked for (see [`Selection::cases`]).
pub fn select(
    base: &Plan,
    keep: impl Fn(&CaseId) -> bool,
    spec: StageSpec<'_>,
    source_name: &str,
) -> Result<Option<Selection>, SelectError> {
    let loaded: &LoadedIntent = base.intent();
    let runs = base.runs_per_point();
    let mut chosen: Vec<(CaseId, std::collections::BTreeMap<String, Value>)> = Vec::new();
    for p in 0..base.point_count() as u64 {
        let Some(child) = base.child(p * runs) else {
            continue;
        };
        if keep(&child.case) {
            chosen.push((child.case, child.point));
        }
    }
    if chosen.is_empty() {
        return Ok(None);
    }
    let params = &loaded.intent.parameters;
    // The steps each axis keeps: an axis is a zip group (all its members
    // step together) or a parameter of its own.
    let axis_of = |i: usize| -> String {
        match &params[i].zip {
            Some(z) => format!("zip:{z}"),
            None => format!("param:{}", params[i].name),
        }
    };
    let mut steps: std::collections::BTreeMap<String, std::collections::BTreeSet<usize>> =
        std::collections::BTreeMap::new();
    let mut by_axis: std::collections::BTreeMap<String, Vec<usize>> =
        std::collections::BTreeMap::new();
    for i in 0..params.len() {
        by_axis.entry(axis_of(i)).or_default().push(i);
    }
    for (_, point) in &chosen {
        for (axis, members) in &by_axis {
            let len = params[members[0]].values.len();
            if let Some(k) = (0..len).find(|&k| {
                members
                    .iter()
                    .all(|&i| point.get(&params[i].name) == params[i].values.get(k))
            }) {
                steps.entry(axis.clone()).or_default().insert(k);
            }
        }
    }
    let mut value = loaded.canonical.clone();
    let Some(obj) = value.as_object_mut() else {
        return Ok(None);
    };
    if let Some(Value::Array(list)) = obj.get_mut("parameters") {
        for (i, p) in list.iter_mut().enumerate() {
            let keep_steps = steps.get(&axis_of(i)).cloned().unwrap_or_default();
            if let Some(Value::Array(values)) = p.get_mut("values") {
                let kept: Vec<Value> = values
                    .iter()
                    .enumerate()
                    .filter(|(k, _)| keep_steps.contains(k))
                    .map(|(_, v)| v.clone())
                    .collect();
                *values = kept;
            }
        }
    }
    if let Some(r) = spec.repetitions {
        obj.insert("repetitions".into(), json!(r));
    }
    if let Some(i) = spec.interleave {
        // One measured run per token: the order of the tokens is the order
        // of the runs (the last axis varies fastest), and a warm-up belongs
        // to the tokens, not to each run.
        obj.insert("repetitions".into(), json!(1));
        obj.insert("warmup".into(), json!(0));
        if let Some(Value::Array(list)) = obj.get_mut("parameters") {
            list.push(json!({"name": super::sides::RUN_PARAM, "values": i.tokens}));
        } else {
            obj.insert(
                "parameters".into(),
                json!([{"name": super::sides::RUN_PARAM, "values": i.tokens}]),
            );
        }
    }
    let env = obj
        .entry("env")
        .or_insert_with(|| Value::Object(serde_json::Map::new()));
    if let Some(env) = env.as_object_mut() {
        env.insert("BENCHOPS_LANE_RUN".into(), json!(spec.lane_run));
        env.insert("BENCHOPS_LANE_STAGE".into(), json!(spec.stage));
        if let Some((dir, commit)) = spec.subject {
            env.insert("BENCHOPS_SUBJECT_DIR".into(), json!(dir));
            env.insert("BENCHOPS_SUBJECT_COMMIT".into(), json!(commit));
        }
        if let Some(i) = spec.interleave {
            for (name, value) in i.env() {
                env.insert(name, json!(value));
            }
        }
    }
    let derived = intent::from_json_value(&value, source_name)?;
    let planned = plan::plan(derived)?;
    if let Some(i) = spec.interleave {
        return super::sides::selection(planned, &chosen, i, source_name).map(Some);
    }
    let got: std::collections::BTreeSet<String> =
        planned.cases().map(ToString::to_string).collect();
    let expected: Vec<String> = chosen.iter().map(|(c, _)| c.to_string()).collect();
    if !expected.iter().all(|c| got.contains(c)) {
        return Err(SelectError::Mismatch {
            source_name: source_name.to_owned(),
            expected,
            got: got.into_iter().collect(),
        });
    }
    Ok(Some(Selection {
        plan: planned,
        cases: expected,
        runs: Vec::new(),
    }))
}

/// A restricted plan and the cases it was made for.
#[derive(Debug, Clone)]
pub struct Selection {
    /// The plan (the cases asked for, and possibly other points of their
    /// grid).
    pub plan: Plan,
    /// The cases asked for, in expansion order.
    pub cases: Vec<String>,
    /// For an interleaved stage: each planned case that measures a case
    /// asked for, with that case and its run token.
    pub runs: Vec<super::types::InterleavedRun>,
}

#[cfg(test)]
mod tests {
    use super::*;

    const INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "demo"
command = ["echo", "{n}", "{m}"]
repetitions = 3
[[parameters]]
name = "n"
values = [1, 2, 3]
[[parameters]]
name = "m"
values = ["a", "b"]
"#;

    fn base() -> Plan {
        plan::plan(intent::from_toml(INTENT, "demo.toml").expect("intent")).expect("plan")
    }

    #[test]
    fn a_selection_keeps_case_ids_and_order_and_only_the_kept_cases() {
        let base = base();
        let all: Vec<String> = base.cases().map(ToString::to_string).collect();
        assert_eq!(all.len(), 6);
        let keep = [all[1].clone(), all[4].clone()];
        let spec = StageSpec {
            lane_run: "abc",
            stage: "confirm",
            repetitions: Some(7),
            subject: None,
            interleave: None,
        };
        let sel = select(&base, |c| keep.contains(&c.to_string()), spec, "demo.toml")
            .expect("select")
            .expect("some");
        assert_eq!(sel.cases, keep);
        let p = sel.plan;
        // all[1] is n=1,m=b and all[4] is n=3,m=a: the grid n∈{1,3} × m∈{a,b}.
        let got: Vec<String> = p.cases().map(ToString::to_string).collect();
        assert_eq!(got.len(), 4);
        assert!(keep.iter().all(|k| got.contains(k)), "{got:?}");
        assert_eq!(p.len(), 4 * 7);
        // A single case is planned alone.
        let one = select(&base, |c| *c.to_string() == all[3], spec, "demo.toml")
            .expect("select")
            .expect("some");
        assert_eq!(
            one.plan
                .cases()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            [all[3].clone()]
        );
        let child = p.child(0).expect("child");
        assert_eq!(
            child.env.get("BENCHOPS_LANE_STAGE").map(String::as_str),
            Some("confirm")
        );
        assert_eq!(child.argv, base.child(0).expect("child").argv);
    }

    #[test]
    fn stages_and_runs_have_their_own_digests() {
        let base = base();
        let digest = |run: &str, stage: &str| {
            let p = select(
                &base,
                |_| true,
                StageSpec {
                    lane_run: run,
                    stage,
                    repetitions: None,
                    subject: None,
                    interleave: None,
                },
                "demo.toml",
            )
            .expect("select")
            .expect("some")
            .plan;
            p.benchmark_digest(&p.child_digests())
        };
        assert_ne!(digest("a", "measure"), digest("a", "confirm"));
        assert_ne!(digest("a", "measure"), digest("b", "measure"));
        assert_eq!(digest("a", "measure"), digest("a", "measure"));
    }

    #[test]
    fn nothing_kept_is_none() {
        let spec = StageSpec {
            lane_run: "a",
            stage: "measure",
            repetitions: None,
            subject: None,
            interleave: None,
        };
        assert!(
            select(&base(), |_| false, spec, "demo.toml")
                .expect("ok")
                .is_none()
        );
    }
}
