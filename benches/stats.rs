//! Cost of the comparison statistics: the Hodges-Lehmann selection on large
//! samples, a bootstrap interval of an effect, the Mann-Whitney test (exact
//! and normal), and change-point detection over a long series.
//!
//! No target is asserted; the figures show that the work stays near-linear
//! where a naive implementation would be quadratic.

use std::hint::black_box;
use std::time::Duration;

use benchops::changepoint::{Config, change_points};
use benchops::effect::{Effect, effect_ci, hodges_lehmann};
use benchops::mann_whitney::{Method, mann_whitney_with};
use benchops::stats::{DEFAULT_RESAMPLES, DEFAULT_SEED, SplitMix64};
use criterion::{Criterion, criterion_group, criterion_main};

fn sample(rng: &mut SplitMix64, n: usize, centre: f64) -> Vec<f64> {
    (0..n)
        .map(|_| {
            let s: f64 = (0..4)
                .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
                .sum();
            centre + 3.0 * (s - 2.0)
        })
        .collect()
}

fn bench(c: &mut Criterion) {
    let mut rng = SplitMix64::new(1);
    let mut group = c.benchmark_group("stats");
    group.measurement_time(Duration::from_secs(3));
    group.sample_size(10);

    for n in [1_000, 100_000] {
        let b = sample(&mut rng, n, 100.0);
        let k = sample(&mut rng, n, 103.0);
        group.bench_function(format!("hodges_lehmann {n}x{n}"), |bench| {
            bench.iter(|| hodges_lehmann(black_box(&b), black_box(&k)))
        });
    }

    let b = sample(&mut rng, 30, 100.0);
    let k = sample(&mut rng, 30, 103.0);
    group.bench_function("effect_ci relative shift 30x30 B=1000", |bench| {
        bench.iter(|| {
            effect_ci(
                black_box(&b),
                black_box(&k),
                Effect::RelativeShift,
                0.95,
                DEFAULT_RESAMPLES,
                DEFAULT_SEED,
            )
        })
    });

    let b = sample(&mut rng, 49, 100.0);
    let k = sample(&mut rng, 49, 101.0);
    group.bench_function("mann_whitney exact 49x49", |bench| {
        bench.iter(|| mann_whitney_with(black_box(&b), black_box(&k), Method::Exact))
    });
    let b = sample(&mut rng, 10_000, 100.0);
    let k = sample(&mut rng, 10_000, 100.1);
    group.bench_function("mann_whitney normal 10000x10000", |bench| {
        bench.iter(|| mann_whitney_with(black_box(&b), black_box(&k), Method::Normal))
    });

    let mut series = sample(&mut rng, 500, 100.0);
    series.extend(sample(&mut rng, 500, 110.0));
    group.bench_function("change_points 1000 points window 50", |bench| {
        bench.iter(|| change_points(black_box(&series), &Config::default()))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
