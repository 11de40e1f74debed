//! Aggregation of classified child runs into per-case statistics.
//!
//! Aggregates use validated successes of measured (non-warm-up) runs only.
//! Counts of every class are always present, for measured runs and warm-ups
//! separately. An analysis of a benchmark with incomplete runs says so and
//! never extrapolates. The output is deterministic: the same inputs give the
//! same canonical bytes.

use std::collections::{BTreeMap, HashMap};
use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::classify::{Classified, RunClass, count};
use crate::digest::Sha256Digest;
use crate::names::CaseId;
use crate::num::Finite;
use crate::record::{ConfidenceInterval, Direction, Metric, RunCounts, Summary};
use crate::stats::{self, MedianBootstrap};

/// Schema id of an analysis document.
pub const ANALYSIS_SCHEMA: &str = "benchops-analysis/v1";

/// One metric value reported by a run. `None` means "not measured".
#[derive(Debug, Clone, PartialEq)]
pub struct MetricValue {
    /// Metric name.
    pub name: String,
    /// Unit.
    pub unit: String,
    /// Which way is better.
    pub direction: Direction,
    /// The value, or `None` when the run did not measure it.
    pub value: Option<Finite>,
    /// Why a `None` value was not measured, when the command said.
    pub reason: Option<String>,
}

/// One classified child run.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInput {
    /// Child index.
    pub index: u64,
    /// Its case.
    pub case: CaseId,
    /// Whether it is a warm-up run.
    pub warmup: bool,
    /// Its classification.
    pub classified: Classified,
    /// Its metrics (only read when it succeeded).
    pub metrics: Vec<MetricValue>,
}

/// A child run that did not succeed, listed explicitly.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NotSucceeded {
    /// Child index.
    pub index: u64,
    /// Whether it was a warm-up.
    pub warmup: bool,
    /// Its class.
    pub class: RunClass,
    /// Why.
    pub reason: String,
}

/// The analysis of one case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaseAnalysis {
    /// The case.
    pub case: CaseId,
    /// Classes of its measured runs.
    pub runs: RunCounts,
    /// Classes of its warm-up runs.
    pub warmup_runs: RunCounts,
    /// Metrics over measured successes.
    pub metrics: Vec<Metric>,
    /// Every run that did not succeed, with its reason.
    pub not_succeeded: Vec<NotSucceeded>,
    /// Why the command did not measure its own metrics, as its measured
    /// successes said (distinct, in order of first report).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip_reasons: Vec<String>,
}

/// Bootstrap settings used for every interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CiSettings {
    /// Confidence level.
    pub level: Finite,
    /// Resamples.
    pub resamples: u64,
    /// Seed.
    pub seed: u64,
    /// Method.
    pub method: String,
}

/// The analysis of a benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Analysis {
    /// Always [`ANALYSIS_SCHEMA`].
    pub schema: String,
    /// The benchmark.
    pub benchmark: Sha256Digest,
    /// Whether every run reached a terminal class.
    pub complete: bool,
    /// What incompleteness means for the numbers, when incomplete.
    pub note: Option<String>,
    /// Classes of all measured runs.
    pub runs: RunCounts,
    /// Classes of all warm-up runs.
    pub warmup_runs: RunCounts,
    /// Reasons of failed runs, with counts.
    pub failure_reasons: BTreeMap<String, u64>,
    /// Per case, in expansion order.
    pub cases: Vec<CaseAnalysis>,
    /// Interval settings.
    pub ci: CiSettings,
}

/// The metrics every child run has, measured by the wrapper (not the
/// command), in their display order.
pub const BUILTIN_METRICS: [&str; 4] = ["wall_s", "user_s", "sys_s", "max_rss_bytes"];
const BUILTIN_ORDER: [&str; 4] = BUILTIN_METRICS;

fn metric_rank(name: &str) -> (usize, &str) {
    (
        BUILTIN_ORDER
            .iter()
            .position(|b| *b == name)
            .unwrap_or(BUILTIN_ORDER.len()),
        name,
    )
}

/// Analyzes classified runs. `cases` gives the expansion order of the cases;
/// runs are taken in index order within each case.
pub fn analyze(benchmark: Sha256Digest, cases: &[CaseId], runs: &[RunInput]) -> Analysis {
    let level = 0.95;
    let mut by_case: HashMap<&CaseId, Vec<&RunInput>> = HashMap::new();
    for r in runs {
        by_case.entry(&r.case).or_default().push(r);
    }
    let mut total = RunCounts::default();
    let mut warm_total = RunCounts::default();
    let mut failure_reasons = BTreeMap::new();
    let mut boots: HashMap<usize, Option<MedianBootstrap>> = HashMap::new();
    let mut out_cases = Vec::with_capacity(cases.len());
    for case in cases {
        let mut list = by_case.remove(case).unwrap_or_default();
        list.sort_by_key(|r| r.index);
        let mut counts = RunCounts::default();
        let mut warm = RunCounts::default();
        let mut not_succeeded = Vec::new();
        let mut successes = Vec::new();
        for r in &list {
            let class = r.classified.class;
            count(if r.warmup { &mut warm } else { &mut counts }, class);
            if class == RunClass::Failed {
                *failure_reasons
                    .entry(r.classified.reason.clone())
                    .or_insert(0u64) += 1;
            }
            if class != RunClass::Succeeded {
                not_succeeded.push(NotSucceeded {
                    index: r.index,
                    warmup: r.warmup,
                    class,
                    reason: r.classified.reason.clone(),
                });
            } else if !r.warmup {
                successes.push(*r);
            }
        }
        total.add(&counts);
        warm_total.add(&warm);
        let metrics = case_metrics(&successes, level, &mut boots);
        let mut skip_reasons: Vec<String> = Vec::new();
        for m in successes.iter().flat_map(|r| &r.metrics) {
            if let (None, Some(why)) = (m.value, &m.reason) {
                if !skip_reasons.contains(why) {
                    skip_reasons.push(why.clone());
                }
            }
        }
        out_cases.push(CaseAnalysis {
            case: case.clone(),
            runs: counts,
            warmup_runs: warm,
            metrics,
            not_succeeded,
            skip_reasons,
        });
    }
    let incomplete = total.incomplete + warm_total.incomplete;
    let complete = incomplete == 0;
    let note = (!complete).then(|| {
        format!(
            "{incomplete} run(s) are still pending or running; aggregates cover only the runs that already succeeded and are not extrapolated"
        )
    });
    Analysis {
        schema: ANALYSIS_SCHEMA.to_owned(),
        benchmark,
        complete,
        note,
        runs: total,
        warmup_runs: warm_total,
        failure_reasons,
        cases: out_cases,
        ci: CiSettings {
            level: Finite::new(level).unwrap_or(Finite::ZERO),
            resamples: stats::DEFAULT_RESAMPLES as u64,
            seed: stats::DEFAULT_SEED,
            method: "bootstrap-percentile".into(),
        },
    }
}

fn case_metrics(
    successes: &[&RunInput],
    level: f64,
    boots: &mut HashMap<usize, Option<MedianBootstrap>>,
) -> Vec<Metric> {
    // Metric identity: name; the first unit and direction seen win.
    let mut names: BTreeMap<(usize, &str), (&str, Direction)> = BTreeMap::new();
    for r in successes {
        for m in &r.metrics {
            names
                .entry(metric_rank(&m.name))
                .or_insert((&m.unit, m.direction));
        }
    }
    let mut out = Vec::with_capacity(names.len());
    for ((_, name), (unit, direction)) in names {
        let samples: Vec<Option<Finite>> = successes
            .iter()
            .map(|r| {
                r.metrics
                    .iter()
                    .find(|m| m.name == name)
                    .and_then(|m| m.value)
            })
            .collect();
        let mut values: Vec<f64> = samples.iter().flatten().map(|f| f.get()).collect();
        let summary = stats::Summary::of(&values).and_then(|s| {
            values.sort_by(f64::total_cmp);
            let ci = boots
                .entry(values.len())
                .or_insert_with(|| {
                    MedianBootstrap::new(
                        values.len(),
                        stats::DEFAULT_RESAMPLES,
                        stats::DEFAULT_SEED,
                    )
                })
                .as_ref()
                .and_then(|b| b.ci(&values, level))
                .and_then(|c| {
                    Some(ConfidenceInterval {
                        level: Finite::new(c.level).ok()?,
                        low: Finite::new(c.low).ok()?,
                        high: Finite::new(c.high).ok()?,
                        method: "bootstrap-percentile".into(),
                        resamples: c.resamples as u64,
                        seed: c.seed,
                    })
                });
            Some(Summary {
                n: s.n as u64,
                median: Finite::new(s.median).ok()?,
                mad: Finite::new(s.mad).ok()?,
                min: Finite::new(s.min).ok()?,
                max: Finite::new(s.max).ok()?,
                ci,
            })
        });
        out.push(Metric {
            name: name.to_owned(),
            unit: unit.to_owned(),
            direction,
            samples,
            summary,
        });
    }
    out
}

impl Analysis {
    /// The canonical JSON bytes (deterministic).
    pub fn to_canonical(&self) -> Vec<u8> {
        crate::jcs::to_canonical_vec(self).unwrap_or_default()
    }

    /// A table for humans.
    pub fn render_table(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "benchmark {}", self.benchmark);
        let _ = writeln!(s, "{}", counts_line("runs", &self.runs));
        if self.warmup_runs.total > 0 {
            let _ = writeln!(s, "{}", counts_line("warm-up runs", &self.warmup_runs));
        }
        // Reasons, names and units come from children's output: printed
        // through the one terminal escape.
        let esc = crate::terminal::escape;
        if let Some(n) = &self.note {
            let _ = writeln!(s, "INCOMPLETE: {}", esc(n));
        }
        for (reason, n) in &self.failure_reasons {
            let _ = writeln!(s, "  failed x{n}: {}", esc(reason));
        }
        let _ = writeln!(s);
        use crate::units::Align::{Left, Right};
        let mut rows = vec![
            ["CASE", "OK/N", "METRIC", "MEDIAN", "MAD", "95% CI"]
                .map(str::to_owned)
                .to_vec(),
        ];
        for c in &self.cases {
            let ok = format!("{}/{}", c.runs.succeeded, c.runs.total);
            if c.metrics.is_empty() {
                rows.push(vec![
                    c.case.as_str().to_owned(),
                    ok.clone(),
                    "(no successful runs)".to_owned(),
                ]);
            }
            for (k, m) in c.metrics.iter().enumerate() {
                let (case, ok) = if k == 0 {
                    (c.case.as_str().to_owned(), ok.clone())
                } else {
                    (String::new(), String::new())
                };
                let (med, mad, ci) = summary_cells(m);
                rows.push(vec![case, ok, esc(&m.name), med, mad, ci]);
            }
        }
        s.push_str(&crate::units::columns(
            &rows,
            &[Left, Right, Left, Right, Right, Left],
        ));
        s
    }

    /// Markdown for reports.
    pub fn render_markdown(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(s, "### Benchmark `{}`\n", self.benchmark);
        if let Some(n) = &self.note {
            let _ = writeln!(s, "> **Incomplete:** {n}\n");
        }
        let _ = writeln!(
            s,
            "| class | measured runs | warm-up runs |\n|---|---:|---:|"
        );
        for class in RunClass::ALL {
            let _ = writeln!(
                s,
                "| {class} | {} | {} |",
                class_count(&self.runs, class),
                class_count(&self.warmup_runs, class)
            );
        }
        let _ = writeln!(
            s,
            "\n| case | ok/n | metric | median | MAD | 95% CI |\n|---|---:|---|---:|---:|---|"
        );
        for c in &self.cases {
            for m in &c.metrics {
                let (med, mad, ci) = summary_cells(m);
                let _ = writeln!(
                    s,
                    "| `{}` | {}/{} | {} | {med} | {mad} | {ci} |",
                    c.case, c.runs.succeeded, c.runs.total, m.name
                );
            }
        }
        s
    }
}

/// Median, MAD and CI as printed, by the one rule of [`crate::units`]
/// (the metric's unit, escaped); `null` when nothing was measured.
fn summary_cells(m: &Metric) -> (String, String, String) {
    let unit = crate::terminal::escape(&m.unit);
    let q = |v: Finite| crate::units::quantity(Some(v.get()), &unit);
    match &m.summary {
        Some(sm) => (
            q(sm.median),
            q(sm.mad),
            sm.ci.as_ref().map_or("-".into(), |c| {
                crate::units::interval(c.low.get(), c.high.get(), &unit)
            }),
        ),
        None => (
            crate::units::NOT_MEASURED.into(),
            crate::units::NOT_MEASURED.into(),
            "-".into(),
        ),
    }
}

/// The count of one class.
pub fn class_count(c: &RunCounts, class: RunClass) -> u64 {
    match class {
        RunClass::Succeeded => c.succeeded,
        RunClass::Failed => c.failed,
        RunClass::Incomplete => c.incomplete,
        RunClass::Missing => c.missing,
        RunClass::Stale => c.stale,
        RunClass::SchedulerInconsistent => c.scheduler_inconsistent,
    }
}

fn counts_line(label: &str, c: &RunCounts) -> String {
    let parts: Vec<String> = RunClass::ALL
        .iter()
        .map(|k| format!("{k} {}", class_count(c, *k)))
        .collect();
    format!("{label}: {} total: {}", c.total, parts.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(index: u64, case: &str, class: RunClass, wall: Option<f64>) -> RunInput {
        RunInput {
            index,
            case: CaseId::new(case).expect("valid"),
            warmup: false,
            classified: Classified {
                class,
                reason: format!("{class}"),
            },
            metrics: vec![MetricValue {
                name: "wall_s".into(),
                unit: "s".into(),
                direction: Direction::LowerIsBetter,
                value: wall.map(|w| Finite::new(w).expect("finite")),
                reason: None,
            }],
        }
    }

    #[test]
    fn the_table_prints_units_at_four_digits_and_null_for_not_measured() {
        let cases = [
            CaseId::new("a").expect("valid"),
            CaseId::new("long/case=1").expect("valid"),
        ];
        let runs = [
            run(
                0,
                "a",
                RunClass::Succeeded,
                Some(0.004_651_567_000_000_000_5),
            ),
            run(1, "long/case=1", RunClass::Succeeded, None),
        ];
        let a = analyze(Sha256Digest::of(b"b"), &cases, &runs);
        let table = a.render_table();
        let rows: Vec<&str> = table
            .lines()
            .skip_while(|l| !l.starts_with("CASE"))
            .collect();
        assert_eq!(
            rows,
            [
                "CASE         OK/N  METRIC    MEDIAN   MAD  95% CI",
                "a             1/1  wall_s  4.652 ms   0 s  -",
                "long/case=1   1/1  wall_s      null  null  -",
            ],
            "{table}"
        );
        let md = a.render_markdown();
        assert!(
            md.contains("| `a` | 1/1 | wall_s | 4.652 ms | 0 s | - |"),
            "{md}"
        );
        // JSON keeps every digit.
        let json = String::from_utf8(a.to_canonical()).expect("utf-8");
        assert!(json.contains("0.0046515670000000005"), "{json}");
    }

    #[test]
    fn aggregates_only_successes_and_counts_every_class() {
        let cases = [CaseId::new("a").expect("valid")];
        let runs = [
            run(0, "a", RunClass::Succeeded, Some(1.0)),
            run(1, "a", RunClass::Failed, Some(100.0)),
            run(2, "a", RunClass::Succeeded, None),
            run(3, "a", RunClass::Succeeded, Some(3.0)),
            run(4, "a", RunClass::Incomplete, None),
        ];
        let a = analyze(Sha256Digest::of(b"b"), &cases, &runs);
        assert!(!a.complete);
        assert!(a.note.is_some());
        assert_eq!(
            (
                a.runs.total,
                a.runs.succeeded,
                a.runs.failed,
                a.runs.incomplete
            ),
            (5, 3, 1, 1)
        );
        let m = &a.cases[0].metrics[0];
        assert_eq!(
            m.samples,
            vec![
                Some(Finite::new(1.0).expect("f")),
                None,
                Some(Finite::new(3.0).expect("f"))
            ]
        );
        let s = m.summary.as_ref().expect("summary");
        assert_eq!((s.n, s.median.get()), (2, 2.0));
        assert_eq!(a.cases[0].not_succeeded.len(), 2);
        assert_eq!(
            a.to_canonical(),
            analyze(Sha256Digest::of(b"b"), &cases, &runs).to_canonical()
        );
    }
}
