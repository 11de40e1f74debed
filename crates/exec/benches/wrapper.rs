//! Wrapper overhead: a child that runs `true`, through [`run_child`] versus a
//! plain process spawn.
//!
//! Target: `run_child` adds under 2 ms over the plain spawn. The overhead is
//! what the wrapper does around the command: `started.json` (temporary
//! file, rename) and `result.json` (temporary file, fsync, rename, fsync of
//! the directory), the reader and waiter threads, the process group and
//! `wait4`. A local worker does this once per child, in its own process. `plain_spawn_piped` is the plain spawn with the same pipes
//! and process group, to separate spawn setup from record writing;
//! `overhead_paired` measures the difference directly; `write_atomic_1kib`
//! is one record write alone.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use benchops_exec::child::{AttemptIdentity, ChildSpec, run_child};
use criterion::{Criterion, criterion_group, criterion_main};

fn bench_wrapper(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let attempt_dir = dir.path().join("attempt");
    let spec = ChildSpec::command(["true"]);
    let identity = AttemptIdentity {
        benchmark: format!("sha256:{}", "ab".repeat(32)),
        index: 0,
        attempt: 1,
        child_digest: format!("sha256:{}", "cd".repeat(32)),
        restart: 0,
    };
    let mut g = c.benchmark_group("wrapper_true");
    g.sample_size(50)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6));
    g.bench_function("plain_spawn_status", |b| {
        b.iter(|| {
            let status = Command::new("true").status().expect("`true` runs");
            assert!(status.success());
        });
    });
    g.bench_function("plain_spawn_piped", |b| {
        b.iter(|| {
            let out = Command::new("true")
                .process_group(0)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .output()
                .expect("`true` runs");
            assert!(out.status.success());
        });
    });
    g.bench_function("run_child", |b| {
        b.iter(|| {
            let result = run_child(&spec, &identity, &attempt_dir).expect("the wrapper records");
            assert!(result.succeeded());
        });
    });
    // The overhead itself, paired: each iteration runs the plain spawn and
    // `run_child` back to back and reports the difference, so load that
    // drifts over the run affects both sides alike. The wall time this takes
    // is about three times what it reports.
    g.measurement_time(Duration::from_secs(4));
    g.bench_function("overhead_paired", |b| {
        b.iter_custom(|iters| {
            let (mut plain, mut wrapped) = (Duration::ZERO, Duration::ZERO);
            for _ in 0..iters {
                let t = Instant::now();
                let status = Command::new("true").status().expect("`true` runs");
                plain += t.elapsed();
                assert!(status.success());
                let t = Instant::now();
                let result =
                    run_child(&spec, &identity, &attempt_dir).expect("the wrapper records");
                wrapped += t.elapsed();
                assert!(result.succeeded());
            }
            wrapped.saturating_sub(plain)
        });
    });
    // One atomic record write (temporary file, fsync, rename, directory
    // fsync) of a result-sized file: `run_child` does two of these.
    let record = vec![b'x'; 1024];
    let record_path = dir.path().join("record.json");
    g.bench_function("write_atomic_1kib", |b| {
        b.iter(|| benchops::fsio::write_atomic(&record_path, &record).expect("writes"));
    });
    g.finish();
}

criterion_group!(benches, bench_wrapper);
criterion_main!(benches);
