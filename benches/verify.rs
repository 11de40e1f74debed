//! Throughput of `verify` on a ~50 KB sealed record, and of its parts: the
//! one pass (canonical check, typed decode, schema constraints), the
//! semantic checks, sha256, and the reporting path (`verify_reported`:
//! streaming scan, `jsonschema`, typed decoder) that names problems.
//! Target: at least 5,000 records/s on one core.

// The same allocator as the binaries, so the figure is what they achieve.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

fn bench_verify(c: &mut Criterion) {
    let draft = std::fs::read(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/records/large.draft.json"
    ))
    .expect("fixture present");
    let sealed = benchops::seal::seal_json(&draft).expect("fixture is valid");
    let bytes = sealed.bytes().to_vec();
    let digest = sealed.digest();
    let mut g = c.benchmark_group("verify");
    g.throughput(Throughput::Bytes(bytes.len() as u64));
    g.bench_function(format!("sealed_record_{}_bytes", bytes.len()), |b| {
        b.iter(|| benchops::verify(std::hint::black_box(&bytes), Some(&digest)).expect("valid"));
    });
    g.bench_function("one_pass", |b| {
        b.iter(|| benchops::onepass::decode(std::hint::black_box(&bytes)).expect("valid"));
    });
    g.bench_function("semantic_checks", |b| {
        b.iter(|| benchops::seal::semantic_issues(std::hint::black_box(sealed.record())));
    });
    g.bench_function("sha256", |b| {
        b.iter(|| benchops::Sha256Digest::of(std::hint::black_box(&bytes)));
    });
    g.bench_function("reporting_path", |b| {
        b.iter(|| {
            benchops::seal::verify_reported(std::hint::black_box(&bytes), Some(&digest))
                .expect("valid")
        });
    });
    g.finish();
}

criterion_group!(benches, bench_verify);
criterion_main!(benches);
