//! Wrapper overhead: a child that runs `true`, through [`run_child`] versus a
//! plain process spawn.
//!
//! Target: `run_child` adds under 2 ms over the plain spawn. The overhead is
//! what the wrapper does around the command: `started.json` and
//! `result.json` written atomically (temporary file, fsync, rename, fsync of
//! the directory), the reader and waiter threads, the process group and
//! `getrusage`. `plain_spawn_piped` is the plain spawn with the same pipes
//! and process group, to separate spawn setup from record writing.

use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::time::Duration;

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
    };
    let mut g = c.benchmark_group("wrapper_true");
    g.sample_size(100)
        .warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(10));
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
    g.finish();
}

fn scratch(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tmp");
    let bytes = vec![b'x'; 900];
    let mut g = c.benchmark_group("scratch");
    g.sample_size(50).measurement_time(Duration::from_secs(4));
    g.bench_function("write_atomic_900b", |b| {
        let p = dir.path().join("f.json");
        b.iter(|| benchops::fsio::write_atomic(&p, &bytes).expect("w"));
    });
    g.bench_function("fs_write_no_fsync_900b", |b| {
        let p = dir.path().join("g.json");
        b.iter(|| std::fs::write(&p, &bytes).expect("w"));
    });
    g.bench_function("file_fsync_only", |b| {
        let p = dir.path().join("h.json");
        let mut f = std::fs::File::create(&p).expect("c");
        b.iter(|| {
            std::io::Write::write_all(&mut f, b"x").expect("w");
            f.sync_all().expect("s")
        });
    });
    g.bench_function("dir_fsync_only", |b| {
        b.iter(|| {
            std::fs::File::open(dir.path())
                .and_then(|d| d.sync_all())
                .expect("s")
        });
    });
    g.bench_function("three_threads_spawn_join", |b| {
        b.iter(|| {
            let h: Vec<_> = (0..3).map(|_| std::thread::spawn(|| 1)).collect();
            for t in h {
                t.join().expect("j");
            }
        });
    });
    g.bench_function("proc_self_stat_hostname_jiff", |b| {
        b.iter(|| {
            std::hint::black_box(std::fs::read_to_string("/proc/self/stat").expect("r"));
            std::hint::black_box(nix::unistd::gethostname().expect("h"));
            std::hint::black_box(format!("{:.6}", jiff::Timestamp::now()));
        });
    });
    g.finish();
}

criterion_group!(benches, bench_wrapper, scratch);
criterion_main!(benches);
