//! What exec's integration tests share: a host directory for the lane
//! scheduling tests (`lane_due`, `gc_cli`, `slurm_chain`), holding a suite,
//! a schedule manifest, a subject repository whose workload reports seeded
//! `work_s` values, and an empty history; and the one rule for whether the
//! Slurm cluster is there.

#![allow(dead_code, reason = "each test crate uses its own part of this module")]

use std::path::Path;
use std::process::{Command, Output};

/// A suite of one benchmark, `widgets`, over the sizes `{SIZES}`, run
/// `{REPS}` times (both replaced by [`intent`]).
const INTENT: &str = r#"
schema = "benchmark-intent/v1"
name = "widgets"
command = ["sh", "-c", "cd \"$BENCHOPS_SUBJECT_DIR\" && exec sh ./work.sh {size}"]
repetitions = REPS
warmup = 0
timeout_s = 30

[metrics]
json_lines = true

[[parameters]]
name = "size"
values = SIZES
"#;

/// The suite with `sizes` (TOML, such as `["small"]`) and `reps`.
pub fn intent(sizes: &str, reps: u32) -> String {
    INTENT
        .replace("SIZES", sizes)
        .replace("REPS", &reps.to_string())
}

const SEEDED_WORK: &str = include_str!("../../../../tests/fixtures/subjects/seeded-work.sh");

/// Writes `bench.toml` (`intent`) and `schedule.toml` (`manifest`) into a
/// new temporary directory, with the subject repository `widgets/` (its
/// levels in `speed.conf`, such as `SMALL_MS=20\nLARGE_MS=40\n`) and an
/// empty bare history `history.git`.
pub fn lane_host(intent: &str, manifest: &str, speed_conf: &str) -> tempfile::TempDir {
    let tmp = tempfile::tempdir().expect("tempdir");
    let root = tmp.path();
    std::fs::write(root.join("bench.toml"), intent).expect("intent");
    std::fs::write(root.join("schedule.toml"), manifest).expect("manifest");
    let subject = root.join("widgets");
    std::fs::create_dir_all(&subject).expect("subject");
    std::fs::write(subject.join("work.sh"), SEEDED_WORK).expect("work.sh");
    std::fs::write(subject.join("speed.conf"), speed_conf).expect("conf");
    git(&subject, &["init", "--quiet"]);
    git(&subject, &["add", "-A"]);
    git(&subject, &["commit", "--quiet", "-m", "widgets"]);
    git(root, &["init", "--quiet", "--bare", "history.git"]);
    tmp
}

/// Runs git in `dir`, as a test user; fails the test when git does.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t.invalid"])
        .args(args)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Standard output then standard error, for assertions and messages.
pub fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Whether the Slurm cluster of `scripts/slurm-up.sh` answers. In CI
/// (`CI=true`) a missing cluster fails the test; elsewhere the test says
/// loudly that `what` did not run.
pub fn slurm_ready(what: &str) -> bool {
    let ok = Command::new("scontrol")
        .arg("ping")
        .output()
        .is_ok_and(|o| o.status.success() && String::from_utf8_lossy(&o.stdout).contains("UP"));
    if !ok {
        let msg = "Slurm is not running here: start it with scripts/slurm-up.sh";
        if std::env::var("CI").is_ok_and(|v| v == "true") {
            panic!("{msg} (required in CI)");
        }
        eprintln!("\n!!! {what} DID NOT RUN: {msg} !!!\n");
    }
    ok
}
