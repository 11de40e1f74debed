//! Analysis throughput: aggregation of 100,000 classified child results into
//! per-case statistics with bootstrap intervals, plus the canonical bytes.
//!
//! Target: analysis of 100,000 child results takes at most 1 s in release.
//! Two shapes: many small cases (10,000 cases x 10 repetitions) and few
//! large ones (100 cases x 1,000 repetitions). Each run reports the four
//! builtin metrics and one custom metric; about 2% of runs failed and 1% are
//! incomplete.

use std::hint::black_box;
use std::time::Duration;

use benchops::analysis::{MetricValue, RunInput, analyze};
use benchops::classify::{Classified, RunClass};
use benchops::record::Direction;
use benchops::stats::SplitMix64;
use benchops::{CaseId, Finite, Sha256Digest};
use criterion::{Criterion, SamplingMode, Throughput, criterion_group, criterion_main};

struct Input {
    cases: Vec<CaseId>,
    runs: Vec<RunInput>,
}

fn uniform(rng: &mut SplitMix64) -> f64 {
    (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64
}

fn metric(name: &str, unit: &str, direction: Direction, value: Option<f64>) -> MetricValue {
    MetricValue {
        name: name.to_owned(),
        unit: unit.to_owned(),
        direction,
        value: value.map(|v| Finite::new(v).expect("generated values are finite")),
        reason: None,
    }
}

fn input(cases: usize, reps: usize, seed: u64) -> Input {
    let mut rng = SplitMix64::new(seed);
    let case_ids: Vec<CaseId> = (0..cases)
        .map(|k| CaseId::new(format!("shape/size={k},threads=4")).expect("valid case id"))
        .collect();
    let mut runs = Vec::with_capacity(cases * reps);
    for (k, case) in case_ids.iter().enumerate() {
        let base = 0.01 * (k % 97 + 1) as f64;
        for r in 0..reps {
            let roll = rng.below(100);
            let (class, reason) = match roll {
                0 | 1 => (RunClass::Failed, "exit 1".to_owned()),
                2 => (RunClass::Incomplete, "running".to_owned()),
                _ => (RunClass::Succeeded, "exit 0".to_owned()),
            };
            let wall = base * (1.0 + 0.1 * uniform(&mut rng));
            let custom = (rng.below(50) != 0).then(|| 1.0e6 / wall);
            runs.push(RunInput {
                index: (k * reps + r) as u64,
                case: case.clone(),
                warmup: false,
                classified: Classified { class, reason },
                metrics: vec![
                    metric("wall_s", "s", Direction::LowerIsBetter, Some(wall)),
                    metric(
                        "user_s",
                        "s",
                        Direction::LowerIsBetter,
                        Some(wall * 0.9 * uniform(&mut rng)),
                    ),
                    metric(
                        "sys_s",
                        "s",
                        Direction::LowerIsBetter,
                        Some(wall * 0.1 * uniform(&mut rng)),
                    ),
                    metric(
                        "max_rss_bytes",
                        "bytes",
                        Direction::LowerIsBetter,
                        Some((1_000_000 + rng.below(1_000_000)) as f64 * 4096.0),
                    ),
                    metric("ops_per_s", "ops/s", Direction::HigherIsBetter, custom),
                ],
            });
        }
    }
    Input {
        cases: case_ids,
        runs,
    }
}

fn bench_shape(c: &mut Criterion, name: &str, cases: usize, reps: usize) {
    let data = input(cases, reps, 0x5eed);
    let benchmark = Sha256Digest::of(b"analysis bench");
    let mut g = c.benchmark_group("analysis_100k");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(10))
        .throughput(Throughput::Elements(data.runs.len() as u64));
    g.bench_function(format!("{name}_analyze_and_canonical"), |b| {
        b.iter(|| {
            let a = analyze(benchmark, black_box(&data.cases), black_box(&data.runs));
            black_box(a.to_canonical())
        });
    });
    // The two steps alone, briefly, to locate a hotspot.
    g.measurement_time(Duration::from_secs(4));
    g.bench_function(format!("{name}_analyze_only"), |b| {
        b.iter(|| {
            black_box(analyze(
                benchmark,
                black_box(&data.cases),
                black_box(&data.runs),
            ))
        });
    });
    let analysis = analyze(benchmark, &data.cases, &data.runs);
    g.bench_function(format!("{name}_to_canonical_only"), |b| {
        b.iter(|| black_box(black_box(&analysis).to_canonical()));
    });
    g.finish();
}

fn bench_analysis(c: &mut Criterion) {
    bench_shape(c, "10000_cases_x_10_reps", 10_000, 10);
    bench_shape(c, "100_cases_x_1000_reps", 100, 1_000);
}

criterion_group!(benches, bench_analysis);
criterion_main!(benches);
