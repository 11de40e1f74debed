//! `cargo xtask pipeline`: the local pipeline on the embedded default, end
//! to end, from separate processes of the real binaries:
//!
//! 1. a demo subject (a git repository built from `examples/lane/subject/`)
//!    gets its first lane run, which seals with no baseline and proposes
//!    one; the publisher's local sweep persists it to the history branch;
//! 2. three commits land, the second of which slows the `large` case by
//!    30%: the lane run suspects it, measures the baseline commit and this
//!    one interleaved in the same session, confirms the drift, bisects the
//!    three commits to the culprit and seals it; the sweep opens an issue
//!    in the local ledger that names the culprit commit;
//! 3. a commit fixes it: the lane run measures both commits again to
//!    confirm the clear; the sweep closes the issue and prints health and
//!    the watchdog.
//!
//! The runs fill the lane's last three nightly slots, replayed now: the
//! watchdog calls them late (each finished after its completion window),
//! and the `sentinel` lane, which the demo never runs, missed.
//!
//! Everything lives in `.benchops/lane-demo/`, made afresh on every run.

use std::path::Path;

use anyhow::{Context as _, Result, bail};

use crate::{capture, run, target_dir};

const DEMO: &str = ".benchops/lane-demo";
const MANIFEST: &str = "examples/lane/schedule.toml";

/// Writes the subject's speed and commits it; returns the commit.
fn commit_speed(subject: &Path, small_ms: u32, large_ms: u32, message: &str) -> Result<String> {
    std::fs::write(
        subject.join("speed.conf"),
        format!("SMALL_MS={small_ms}\nLARGE_MS={large_ms}\n"),
    )?;
    commit(subject, message)
}

/// Appends `line` to the subject's notes (a commit that changes no speed)
/// and commits it; returns the commit.
fn commit_note(subject: &Path, line: &str) -> Result<String> {
    use std::io::Write as _;
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(subject.join("NOTES"))?
        .write_all(format!("{line}\n").as_bytes())?;
    commit(subject, line)
}

/// Commits everything in the subject; returns the commit.
fn commit(subject: &Path, message: &str) -> Result<String> {
    let git = |args: &[&str]| -> Result<()> {
        let st = std::process::Command::new("git")
            .arg("-C")
            .arg(subject)
            .args([
                "-c",
                "user.name=benchops demo",
                "-c",
                "user.email=demo@benchops.invalid",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .status()
            .context("failed to run git")?;
        if !st.success() {
            bail!("git {} failed in {}", args.join(" "), subject.display());
        }
        Ok(())
    };
    git(&["add", "-A"])?;
    git(&["commit", "--quiet", "-m", message])?;
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(subject)
        .args(["rev-parse", "HEAD"])
        .output()
        .context("failed to run git")?;
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// The `comprehensive` lane's slot `days_back` days ago: the latest firing
/// of its cron (in its time zone) at or before that instant, so that the
/// replayed runs fill the slots the watchdog expects.
fn nightly_slot(days_back: u64) -> Result<String> {
    let text = std::fs::read_to_string(MANIFEST).with_context(|| format!("read {MANIFEST}"))?;
    let manifest = benchops::manifest::from_toml(&text, MANIFEST)
        .map_err(|e| anyhow::anyhow!("{e}"))?
        .manifest;
    let lane = manifest
        .lanes
        .iter()
        .find(|l| l.name.as_str() == "comprehensive")
        .context("the demo manifest has no comprehensive lane")?;
    let schedule = benchops::schedule::Schedule::parse(&lane.cron, &lane.timezone)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let back = jiff::SignedDuration::from_hours(24 * i64::try_from(days_back)?);
    let slot = schedule
        .latest_at_or_before(jiff::Timestamp::now() - back)
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    Ok(slot.to_string())
}

/// Runs the demo; see the module docs.
pub fn pipeline() -> Result<()> {
    run("cargo", &["build", "--quiet", "--locked", "--bins"], &[])?;
    let target = target_dir()?;
    let exec = target.join("debug/benchops-exec");
    let publish = target.join("debug/benchops-publish");
    let demo = Path::new(DEMO);
    if demo.exists() {
        std::fs::remove_dir_all(demo).with_context(|| format!("failed to clear {DEMO}"))?;
    }
    let subject = demo.join("widgets");
    std::fs::create_dir_all(&subject)?;
    std::fs::copy("examples/lane/subject/work.sh", subject.join("work.sh"))?;
    let st = std::process::Command::new("git")
        .args(["init", "--quiet"])
        .arg(&subject)
        .status()?;
    if !st.success() {
        bail!("git init failed");
    }
    let state = demo.display().to_string();
    let sealed = demo.join("sealed").display().to_string();
    let history = demo.join("history.git").display().to_string();
    let subject_s = subject.display().to_string();
    let sweep = || -> Result<String> {
        capture(
            &publish,
            &["sweep", "--local", &state, "--manifest", MANIFEST],
            true,
        )
    };
    let lane_run = |slot: &str| -> Result<String> {
        capture(
            &exec,
            &[
                "--state",
                &state,
                "lane",
                "run",
                "--manifest",
                MANIFEST,
                "--lane",
                "comprehensive",
                "--history",
                &history,
                "--subject",
                &subject_s,
                "--slot",
                slot,
                "--slots",
                "2",
                "--out",
                &sealed,
                "--wait",
            ],
            true,
        )
    };
    // The history repository exists before the first lane run reads it.
    sweep()?;

    eprintln!("\nxtask: 1/3 the first lane run: no baseline yet, so it proposes one");
    commit_speed(&subject, 50, 100, "widgets: first version")?;
    lane_run(&nightly_slot(2)?)?;
    sweep()?;

    eprintln!("\nxtask: 2/3 three commits land; the second makes the large case 30% slower");
    commit_note(&subject, "widgets: document the sizes")?;
    let culprit = commit_speed(&subject, 50, 130, "widgets: a slower large path")?;
    commit_note(&subject, "widgets: tidy the notes")?;
    let out = lane_run(&nightly_slot(1)?)?;
    if !out.contains("confirmed_regression") {
        bail!("the lane run did not confirm the injected regression");
    }
    if !out.contains(&format!("culprit commit {culprit}")) {
        bail!("the lane run did not name the culprit commit {culprit}");
    }
    let report = sweep()?;
    if !report.contains("opened 1") {
        bail!("the sweep did not open an issue for the confirmed drift");
    }
    let ledger = std::fs::read_to_string(demo.join("issues.json"))
        .context("failed to read the issue ledger")?;
    if !ledger.contains(&culprit) {
        bail!("the drift issue does not name the culprit commit {culprit}");
    }
    eprintln!("xtask: the drift issue names the culprit commit {culprit}");

    eprintln!("\nxtask: 3/3 a commit fixes it; the lane run confirms the clear");
    commit_speed(&subject, 50, 100, "widgets: the large path is fast again")?;
    lane_run(&nightly_slot(0)?)?;
    let report = sweep()?;
    if !report.contains("closed 1") {
        bail!("the sweep did not close the issue after the fix");
    }
    eprintln!("xtask: pipeline done: a confirmed drift was opened and, after the fix, closed");
    eprintln!("xtask:   subject          {subject_s} (git log shows the five commits)");
    eprintln!(
        "xtask:   lane executions  {state}/lanes/ (`benchops-exec --state {state} lane list`)"
    );
    eprintln!("xtask:   sealed records   {sealed}/.persisted/");
    eprintln!(
        "xtask:   history          {history} (`git --git-dir {history} log --stat benchmark-history`)"
    );
    eprintln!("xtask:   issue ledger     {state}/issues.json");
    Ok(())
}
