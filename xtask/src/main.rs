//! Development tasks: `cargo xtask <task>`.
//!
//! - `ci`: everything CI checks, in order: formatting, the local Slurm
//!   cluster (`scripts/slurm-up.sh`, idempotent), clippy with warnings
//!   denied, the test suite (nextest when installed), the selfbench smoke
//!   run (`selfbench --quick --debug --fresh` in the target directory,
//!   with the debug binaries the suite built), the README's pipeline
//!   (`pipeline`), the documentation's examples (`docs`), the Python
//!   package (`python`), and rustdoc with warnings denied; each step's wall time is
//!   printed at the end (or where it stopped).
//! - `docs [FILE…]`: every example of README.md, docs/, runbooks/ and
//!   every `--help`, run against the shipped inputs (see `docs.rs`).
//! - `python`: the Python package's wheel, installed into a fresh virtual
//!   environment, checked by mypy and its pytest suite (see `python.rs`).
//! - `bench-python`: fresh Python processes submitting to Slurm with
//!   `benchops` against submitit's `map_array`, side by side.
//! - `bench`: the criterion benchmarks in release mode.
//! - `bench-slurm [CHILDREN]`: whole-process wall time of `bench submit
//!   --backend slurm` and `bench status` on the local cluster (default
//!   1,000 children), with the scheduler calls, and the refresh side by
//!   side with submitit's on the same held array (see `bench_slurm.rs`).
//! - `bench-local [CHILDREN]`: the local backend's workers as a user sees
//!   them: peak processes and memory of a 10,000-child submit, the wall
//!   time of 1,000 trivial children against `xargs -P2` and GNU
//!   `parallel -j2`, and the spread of a CPU-bound command against
//!   `hyperfine` (see `bench_local.rs`).
//! - `pipeline`: the local pipeline on the embedded default, ending in a
//!   lane run with a confirmed drift published to a local history and
//!   issue ledger, then its fix and the close (see `pipeline.rs`).
//! - `selfbench`: benchops benchmarks its own hot paths (validate, plan,
//!   analyze, sweep) through its CLI with a lane run of
//!   `benchmarks/schedule.toml`, published into a local history under
//!   `.benchops/selfbench/` with drift confirmation; a later run compares
//!   with the baseline there (see `selfbench.rs`, `--help` for options).
//! - `detection-bench`: the detection-quality benchmark of the drift
//!   policy against peer rules (see `detection.rs`).
//! - `dist-docs OUT_DIR`: the shell completions (bash, zsh, fish) and man
//!   pages of the three binaries, as the release archive ships them (see
//!   `dist_docs.rs`).
//! - `bench-webhooks`: webhook ingestion throughput and latency of
//!   `benchops-app` against a Node `@octokit/webhooks` receiver under `wrk`,
//!   with a bad-signature flood (see `bench_webhooks.rs`).

mod bench_local;
mod bench_slurm;
mod bench_webhooks;
mod detection;
mod dist_docs;
mod docs;
mod open_loop;
mod pipeline;
mod python;
mod selfbench;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => run("cargo", &["bench", "--workspace"], &[]),
        Some("pipeline") => pipeline::pipeline(),
        Some("docs") => docs::main(&args[1..]),
        Some("selfbench") => selfbench::main(&args[1..]),
        Some("bench-slurm") => bench_slurm::main(
            args.get(1)
                .map(|n| n.parse::<u64>())
                .transpose()
                .map_err(|_| anyhow::anyhow!("usage: cargo xtask bench-slurm [CHILDREN]"))?
                .unwrap_or(1000),
        ),
        Some("bench-local") => bench_local::main(&args[1..]),
        Some("python") => python::check(),
        Some("bench-python") => python::bench_submit(
            args.get(1)
                .map(|n| n.parse::<u64>())
                .transpose()
                .map_err(|_| anyhow::anyhow!("usage: cargo xtask bench-python [CHILDREN]"))?
                .unwrap_or(1000),
        ),
        Some("detection-bench") => detection::main(&args[1..]),
        Some("bench-webhooks") => bench_webhooks::main(&args[1..]),
        Some("dist-docs") => dist_docs::main(&args[1..]),
        _ => {
            eprintln!(
                "usage: cargo xtask <ci|docs|python|bench|bench-local|bench-slurm|bench-python|bench-webhooks|pipeline|selfbench|detection-bench|dist-docs>"
            );
            eprintln!("       cargo xtask selfbench --help");
            bail!("unknown or missing task")
        }
    }
}

/// Each step of `ci` with its wall time, printed as one table at the end
/// (and as far as it got when a step fails), so a CI log says where its
/// minutes went.
struct Steps {
    started: Instant,
    done: Vec<(&'static str, Duration)>,
}

impl Steps {
    fn new() -> Self {
        Steps {
            started: Instant::now(),
            done: Vec::new(),
        }
    }

    fn step(&mut self, name: &'static str, f: impl FnOnce() -> Result<()>) -> Result<()> {
        let t = Instant::now();
        let result = f();
        self.done.push((name, t.elapsed()));
        if result.is_err() {
            self.print("stopped");
        }
        result
    }

    fn print(&self, how: &str) {
        eprintln!(
            "xtask: ci {how} after {:.0} s:",
            self.started.elapsed().as_secs_f64()
        );
        for (name, d) in &self.done {
            eprintln!("xtask:   {name:<12} {:>6.1} s", d.as_secs_f64());
        }
    }
}

fn ci() -> Result<()> {
    if std::env::var_os(docs::IN_DOCS).is_some() {
        bail!("`cargo xtask ci` does not run inside a documentation example (it runs them)");
    }
    let mut steps = Steps::new();
    steps.step("fmt", || run("cargo", &["fmt", "--all", "--check"], &[]))?;
    steps.step("slurm", slurm_up)?;
    steps.step("clippy", || {
        run(
            "cargo",
            &[
                "clippy",
                "--workspace",
                "--all-targets",
                "--locked",
                "--",
                "-D",
                "warnings",
            ],
            &[],
        )
    })?;
    steps.step("tests", || {
        if has_nextest() {
            run(
                "cargo",
                &[
                    "nextest",
                    "run",
                    "--workspace",
                    "--locked",
                    "--no-fail-fast",
                ],
                &[],
            )
        } else {
            eprintln!("xtask: cargo-nextest not found, using cargo test");
            run(
                "cargo",
                &["test", "--workspace", "--locked", "--no-fail-fast"],
                &[],
            )
        }
    })?;
    // Doctests are not run by nextest.
    // The Python crate is an extension module only: no doctests to run.
    steps.step("doctests", || {
        run(
            "cargo",
            &[
                "test",
                "--workspace",
                "--exclude",
                "benchops-python",
                "--locked",
                "--doc",
            ],
            &[],
        )
    })?;
    // The whole selfbench flow at tiny sizes: lane run, baseline,
    // comparison, publication and health, from the suite's binaries.
    steps.step("selfbench", selfbench::ci)?;
    // The README's first line, as written, then every example of the
    // docs and of every `--help` (see `docs.rs`).
    steps.step("pipeline", pipeline::pipeline)?;
    // The pipeline step built every binary of the workspace; building the
    // three again with another feature set would only cost time.
    steps.step("docs", || docs::main(&["--no-build".to_owned()]))?;
    steps.step("python", python::check)?;
    steps.step("rustdoc", || {
        run(
            "cargo",
            &["doc", "--workspace", "--no-deps", "--locked"],
            &[("RUSTDOCFLAGS", "-D warnings")],
        )
    })?;
    steps.print("passed");
    eprintln!("xtask: ci passed");
    Ok(())
}

/// The local pipeline, end to end, with the binaries of this workspace.
pub(crate) fn target_dir() -> Result<PathBuf> {
    if let Some(t) = std::env::var_os("CARGO_TARGET_DIR") {
        return Ok(PathBuf::from(t));
    }
    let out = Command::new("cargo")
        .args(["metadata", "--format-version", "1", "--no-deps"])
        .output()
        .context("failed to run cargo metadata")?;
    let text = String::from_utf8(out.stdout).context("cargo metadata printed non-UTF-8")?;
    let key = "\"target_directory\":\"";
    let start = text
        .find(key)
        .context("cargo metadata has no target_directory")?
        + key.len();
    let end = text[start..]
        .find('"')
        .context("unterminated target_directory")?
        + start;
    Ok(PathBuf::from(&text[start..end]))
}

/// Runs a program, echoing its stdout; returns the stdout.
pub(crate) fn capture(program: &Path, args: &[&str], echo: bool) -> Result<String> {
    if echo {
        eprintln!("xtask: $ {} {}", program.display(), args.join(" "));
    }
    let out = Command::new(program)
        .args(args)
        .stderr(std::process::Stdio::inherit())
        .output()
        .with_context(|| format!("failed to start {}", program.display()))?;
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    if echo {
        print!("{stdout}");
    }
    if !out.status.success() {
        bail!(
            "`{} {}` failed with {}",
            program.display(),
            args.join(" "),
            out.status
        );
    }
    Ok(stdout)
}

/// Brings up the single-node Slurm cluster the Slurm tests run on. In CI
/// (`CI=true`) a failure stops the run; elsewhere it is reported loudly and
/// the Slurm acceptance test says it did not run.
fn slurm_up() -> Result<()> {
    let ci = std::env::var("CI").is_ok_and(|v| v == "true");
    match run("bash", &["scripts/slurm-up.sh"], &[]) {
        Ok(()) => Ok(()),
        Err(e) if ci => Err(e.context("the Slurm cluster is required in CI")),
        Err(e) => {
            eprintln!(
                "xtask: !!! Slurm did not start ({e:#}); the Slurm acceptance test will not run !!!"
            );
            Ok(())
        }
    }
}

fn has_nextest() -> bool {
    Command::new("cargo")
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

pub(crate) fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
    eprintln!("xtask: $ {program} {}", args.join(" "));
    let status = Command::new(program)
        .args(args)
        .envs(env.iter().copied())
        .status()
        .with_context(|| format!("failed to start {program}"))?;
    if !status.success() {
        bail!("`{program} {}` failed with {status}", args.join(" "));
    }
    Ok(())
}
