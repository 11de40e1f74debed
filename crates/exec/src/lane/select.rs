//! Intents derived for a lane run: the suite's intent restricted to the
//! cases a stage measures, with its repetitions and the lane execution
//! named in the children's environment.
//!
//! A selection rewrites every parameter into one zip group that walks the
//! selected points in their original order, so each selected case keeps
//! its id and nothing else is planned. `BENCHOPS_LANE_RUN` and
//! `BENCHOPS_LANE_STAGE` (and the subject's `BENCHOPS_SUBJECT_DIR` and
//! `BENCHOPS_SUBJECT_COMMIT`) are added to the environment: they tell a
//! benchmark which execution and stage runs it, and they make every
//! stage's benchmark digest its own, so a later lane run never reuses an
//! earlier run's results.

use benchops::CaseId;
use benchops::intent::{self, LoadedIntent};
use benchops::plan::{self, Plan};
use serde_json::{Value, json};

/// The zip group every parameter of a selection joins.
pub const SELECTION_ZIP: &str = "benchops-lane-selection";

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
}

/// Plans `base` restricted to the cases `keep` accepts, for `spec`. `None`
/// when no case is kept.
pub fn select(
    base: &Plan,
    keep: impl Fn(&CaseId) -> bool,
    spec: StageSpec<'_>,
    source_name: &str,
) -> Result<Option<Plan>, SelectError> {
    let loaded: &LoadedIntent = base.intent();
    let runs = base.runs_per_point();
    let mut chosen: Vec<(CaseId, serde_json::Map<String, Value>)> = Vec::new();
    for p in 0..base.point_count() as u64 {
        let Some(child) = base.child(p * runs) else {
            continue;
        };
        if keep(&child.case) {
            chosen.push((child.case, child.point.into_iter().collect()));
        }
    }
    if chosen.is_empty() {
        return Ok(None);
    }
    let mut value = loaded.canonical.clone();
    let Some(obj) = value.as_object_mut() else {
        return Ok(None);
    };
    let names: Vec<String> = loaded
        .intent
        .parameters
        .iter()
        .map(|p| p.name.clone())
        .collect();
    if !names.is_empty() {
        let params: Vec<Value> = names
            .iter()
            .map(|n| {
                let values: Vec<Value> = chosen
                    .iter()
                    .map(|(_, point)| point.get(n).cloned().unwrap_or(Value::Null))
                    .collect();
                json!({"name": n, "values": values, "zip": SELECTION_ZIP})
            })
            .collect();
        obj.insert("parameters".into(), Value::Array(params));
    }
    if let Some(r) = spec.repetitions {
        obj.insert("repetitions".into(), json!(r));
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
    }
    let derived = intent::from_json_value(&value, source_name)?;
    let planned = plan::plan(derived)?;
    let got: Vec<String> = planned.cases().map(ToString::to_string).collect();
    let expected: Vec<String> = chosen.iter().map(|(c, _)| c.to_string()).collect();
    if got != expected {
        return Err(SelectError::Mismatch {
            source_name: source_name.to_owned(),
            expected,
            got,
        });
    }
    Ok(Some(planned))
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
        };
        let p = select(&base, |c| keep.contains(&c.to_string()), spec, "demo.toml")
            .expect("select")
            .expect("some");
        let got: Vec<String> = p.cases().map(ToString::to_string).collect();
        assert_eq!(got, keep);
        assert_eq!(p.len(), 2 * 7);
        let child = p.child(0).expect("child");
        assert_eq!(
            child.env.get("BENCHOPS_LANE_STAGE").map(String::as_str),
            Some("confirm")
        );
        assert_eq!(child.argv, base.child(3).expect("child").argv);
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
                },
                "demo.toml",
            )
            .expect("select")
            .expect("some");
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
        };
        assert!(
            select(&base(), |_| false, spec, "demo.toml")
                .expect("ok")
                .is_none()
        );
    }
}
