//! Development tasks: `cargo xtask <task>`.
//!
//! - `ci`: everything CI checks, in order: formatting, clippy with warnings
//!   denied, the test suite (nextest when installed), and docs with warnings
//!   denied.
//! - `bench`: the criterion benchmarks in release mode.

use std::process::Command;

use anyhow::{Context, Result, bail};

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("ci") => ci(),
        Some("bench") => run("cargo", &["bench", "--workspace"], &[]),
        _ => {
            eprintln!("usage: cargo xtask <ci|bench>");
            bail!("unknown or missing task")
        }
    }
}

fn ci() -> Result<()> {
    run("cargo", &["fmt", "--all", "--check"], &[])?;
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
    )?;
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
        )?;
    } else {
        eprintln!("xtask: cargo-nextest not found, using cargo test");
        run(
            "cargo",
            &["test", "--workspace", "--locked", "--no-fail-fast"],
            &[],
        )?;
    }
    // Doctests are not run by nextest.
    run("cargo", &["test", "--workspace", "--locked", "--doc"], &[])?;
    run(
        "cargo",
        &["doc", "--workspace", "--no-deps", "--locked"],
        &[("RUSTDOCFLAGS", "-D warnings")],
    )?;
    eprintln!("xtask: ci passed");
    Ok(())
}

fn has_nextest() -> bool {
    Command::new("cargo")
        .args(["nextest", "--version"])
        .output()
        .is_ok_and(|o| o.status.success())
}

fn run(program: &str, args: &[&str], env: &[(&str, &str)]) -> Result<()> {
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
