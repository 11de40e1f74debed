//! The Python package's checks and its submit benchmark.
//!
//! - `cargo xtask python` (part of `cargo xtask ci`): builds the wheel of
//!   `benchops` with maturin, installs it into a fresh virtual environment
//!   with pytest, mypy and pandas (pinned in
//!   `crates/python/requirements-test.txt`; the tools in
//!   `requirements-tools.txt`), then runs `mypy --strict` over
//!   the installed package and the tests, and the pytest suite
//!   (`crates/python/tests`).
//! - `cargo xtask bench-python [CHILDREN]`: whole fresh Python processes
//!   (interpreter start and import included) submitting CHILDREN trivial
//!   children to the local Slurm cluster with `benchops.submit`, against
//!   submitit's `map_array` of as many trivial jobs, alternating in the same
//!   run, and the ratio. Every array is cancelled right after its
//!   submission, so the cluster stays idle.
//!
//! Everything lives under `<target>/python/`, outside the clone: the
//! build tools' environment (kept), the wheel directory (emptied per
//! build) and the test environment (recreated per run).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{run, target_dir};

const REQUIREMENTS: &str = "crates/python/requirements-test.txt";
const TOOLS: &str = "crates/python/requirements-tools.txt";

/// The directories of one run.
struct Dirs {
    root: PathBuf,
    tools: PathBuf,
    wheels: PathBuf,
}

fn dirs() -> Result<Dirs> {
    let root = target_dir()?.join("python");
    Ok(Dirs {
        tools: root.join("tools"),
        wheels: root.join("wheels"),
        root,
    })
}

fn bin(venv: &Path, name: &str) -> String {
    venv.join("bin").join(name).display().to_string()
}

/// A virtual environment at `venv` with `packages` (pip requirement
/// lines); `fresh` recreates it.
fn venv(venv: &Path, fresh: bool, packages: &[&str]) -> Result<()> {
    let v = venv.display().to_string();
    if fresh || !venv.join("bin/python").exists() {
        let mut args = vec!["-m", "venv"];
        if fresh {
            args.push("--clear");
        }
        args.push(&v);
        run("python3", &args, &[])?;
    }
    if !packages.is_empty() {
        let mut args = vec![
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
        ];
        args.extend_from_slice(packages);
        run(&bin(venv, "python"), &args, &[])?;
    }
    Ok(())
}

/// The pinned requirement of tool `name`.
fn pinned(name: &str) -> Result<String> {
    let text = std::fs::read_to_string(TOOLS).with_context(|| format!("failed to read {TOOLS}"))?;
    text.lines()
        .map(str::trim)
        .find(|l| {
            l.split("==")
                .next()
                .is_some_and(|n| n.eq_ignore_ascii_case(name))
        })
        .map(str::to_owned)
        .with_context(|| format!("{TOOLS} pins no {name}"))
}

/// A virtual environment under `<target>/python/` holding the pinned tool
/// `name` (kept between runs), for the peers the benchmarks measure.
pub fn tool_venv(name: &str) -> Result<PathBuf> {
    let d = dirs()?;
    let env = d.root.join(format!("{name}-venv"));
    let pin = pinned(name)?;
    if !env.join("bin/python").exists() {
        venv(&env, false, &[&pin])?;
    }
    Ok(env)
}

/// Builds the wheel with `profile` and returns its path.
fn build_wheel(d: &Dirs, profile: &str) -> Result<PathBuf> {
    let maturin = pinned("maturin")?;
    if !Path::new(&bin(&d.tools, "maturin")).exists() {
        venv(&d.tools, false, &[&maturin])?;
    }
    if d.wheels.exists() {
        std::fs::remove_dir_all(&d.wheels)?;
    }
    let out = d.wheels.display().to_string();
    run(
        &bin(&d.tools, "maturin"),
        &[
            "build",
            "--locked",
            "--profile",
            profile,
            "--out",
            &out,
            "--interpreter",
            "python3",
        ],
        &[],
    )?;
    let wheel = std::fs::read_dir(&d.wheels)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| p.extension().is_some_and(|x| x == "whl"))
        .context("maturin wrote no wheel")?;
    Ok(wheel)
}

/// `cargo xtask python`.
pub fn check() -> Result<()> {
    let d = dirs()?;
    std::fs::create_dir_all(&d.root)?;
    // The tests compare with the Rust CLI and run it as a peer: the test
    // suite's build of it, a no-op after the suite has run (building the
    // one package alone resolves the dependencies' features differently
    // and compiles them again, about 40 s on two cores).
    run(
        "cargo",
        &["test", "--no-run", "--workspace", "--locked", "--quiet"],
        &[],
    )?;
    let wheel = build_wheel(&d, "dev")?;
    let test = d.root.join("test-venv");
    let w = wheel.display().to_string();
    venv(&test, true, &["--requirement", REQUIREMENTS, &w])?;
    let python = bin(&test, "python");
    // The installed package (its stubs and py.typed included), then the
    // tests as its users' code.
    // The package also as the oldest Python this mypy checks for (3.10;
    // the tests parse it with 3.9's grammar).
    for target in [
        &["-p", "benchops"][..],
        &["--python-version", "3.10", "-p", "benchops"][..],
        &["crates/python/tests"][..],
    ] {
        let mut args = vec!["-m", "mypy", "--strict", "--no-incremental"];
        args.extend_from_slice(target);
        run(&python, &args, &[])?;
    }
    let cli = target_dir()?.join("debug/benchops-exec");
    let cli = cli.display().to_string();
    // The tests' interpreters run from the test environment, so its bin/
    // comes first: `benchops-exec` there is the package's console script.
    let path = format!(
        "{}:{}",
        test.join("bin").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    run(
        &python,
        &[
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "crates/python/tests",
        ],
        &[("BENCHOPS_CLI", &cli), ("PATH", &path)],
    )
}

/// `cargo xtask bench-python [CHILDREN]`.
pub fn bench_submit(children: u64) -> Result<()> {
    let d = dirs()?;
    std::fs::create_dir_all(&d.root)?;
    let wheel = build_wheel(&d, "release")?;
    let env = d.root.join("bench-venv");
    let w = wheel.display().to_string();
    let submitit = pinned("submitit")?;
    venv(&env, true, &[&submitit, &w])?;
    let python = bin(&env, "python");
    let scratch =
        std::env::temp_dir().join(format!("benchops-bench-python-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let script = Path::new("crates/python/bench/submit_vs_submitit.py");
    if !script.exists() {
        bail!("{} is missing", script.display());
    }
    let n = children.to_string();
    let scratch_s = scratch.display().to_string();
    let out = Command::new(&python)
        .args([
            script.display().to_string().as_str(),
            "--children",
            &n,
            "--scratch",
            &scratch_s,
        ])
        .env(
            "PATH",
            format!(
                "{}:{}",
                env.join("bin").display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        )
        .status()
        .context("failed to run the Python benchmark")?;
    let _ = std::fs::remove_dir_all(&scratch);
    if !out.success() {
        bail!("the Python submit benchmark failed with {out}");
    }
    Ok(())
}
