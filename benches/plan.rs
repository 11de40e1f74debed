//! Planning throughput: expansion of an intent into its children, every child
//! digest and the benchmark digest.
//!
//! Target: planning 1,000,000 children with digests takes at most 0.5 s in
//! release (the floor is sha256 over their ~200 MB of canonical
//! configurations; child digests are hashed on every core). The `plan_10k` group is a quicker run of the same pipeline.
//! The `plan_1m_steps` group times each step alone, to locate a hotspot.

use std::hint::black_box;
use std::time::Duration;

use benchops::intent::{LoadedIntent, from_toml};
use benchops::plan;
use criterion::{BatchSize, Criterion, SamplingMode, Throughput, criterion_group, criterion_main};

/// An intent with three parameters of `a` x `b` x `c` values and
/// `repetitions` measured runs per point.
fn intent(a: usize, b: usize, c: usize, repetitions: u32) -> LoadedIntent {
    let list = |n: usize, f: &dyn Fn(usize) -> String| (0..n).map(f).collect::<Vec<_>>().join(", ");
    let text = format!(
        r#"
schema = "benchmark-intent/v1"
name = "scale"
command = ["prog", "--size={{size}}", "--threads", "{{threads}}", "--mode={{mode}}"]
repetitions = {repetitions}
timeout_s = 30

[env]
RUST_LOG = "warn"

[[parameters]]
name = "size"
values = [{sizes}]

[[parameters]]
name = "threads"
values = [{threads}]

[[parameters]]
name = "mode"
values = [{modes}]
"#,
        sizes = list(a, &|k| (1024 * (k + 1)).to_string()),
        threads = list(b, &|k| (k + 1).to_string()),
        modes = list(c, &|k| format!("\"m{k}\"")),
    );
    from_toml(&text, "bench.toml").expect("the bench intent is valid")
}

/// The timed pipeline: plan, every child digest, the benchmark digest.
fn plan_with_digests(loaded: LoadedIntent) -> benchops::Sha256Digest {
    let p = plan::plan(loaded).expect("the bench intent plans");
    let digests = p.child_digests();
    p.benchmark_digest(&digests)
}

fn bench_full(c: &mut Criterion, group: &str, loaded: &LoadedIntent, measure: Duration) {
    let children = plan::plan(loaded.clone()).expect("plans").len();
    let mut g = c.benchmark_group(group);
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(measure)
        .throughput(Throughput::Elements(children));
    g.bench_function(format!("plan_and_digest_{children}_children"), |b| {
        b.iter_batched(
            || loaded.clone(),
            |l| black_box(plan_with_digests(l)),
            BatchSize::PerIteration,
        );
    });
    g.finish();
}

fn bench_plan_10k(c: &mut Criterion) {
    // 10 x 10 x 10 points x 10 repetitions.
    bench_full(
        c,
        "plan_10k",
        &intent(10, 10, 10, 10),
        Duration::from_secs(3),
    );
}

fn bench_plan_1m(c: &mut Criterion) {
    // 100 x 100 x 10 points x 10 repetitions = 1,000,000 children.
    bench_full(
        c,
        "plan_1m",
        &intent(100, 100, 10, 10),
        Duration::from_secs(12),
    );
}

fn bench_plan_1m_steps(c: &mut Criterion) {
    let loaded = intent(100, 100, 10, 10);
    let planned = plan::plan(loaded.clone()).expect("plans");
    let digests = planned.child_digests();
    let mut g = c.benchmark_group("plan_1m_steps");
    g.sample_size(10)
        .sampling_mode(SamplingMode::Flat)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    g.bench_function("plan_only", |b| {
        b.iter_batched(
            || loaded.clone(),
            |l| black_box(plan::plan(l).expect("plans")),
            BatchSize::PerIteration,
        );
    });
    g.bench_function("child_digests_only", |b| {
        b.iter(|| black_box(planned.child_digests()));
    });
    g.bench_function("benchmark_digest_only", |b| {
        b.iter(|| black_box(planned.benchmark_digest(black_box(&digests))));
    });
    g.finish();
}

criterion_group!(benches, bench_plan_10k, bench_plan_1m, bench_plan_1m_steps);
criterion_main!(benches);
