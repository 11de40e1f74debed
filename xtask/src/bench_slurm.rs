//! `cargo xtask bench-slurm [CHILDREN]`: the Slurm backend timed as a user
//! sees it, whole processes of the release CLI on the local cluster, and
//! side by side with submitit in the same run.
//!
//! 1. **Submit**: 7 whole-process `bench submit --backend slurm` calls of
//!    CHILDREN trivial children (default 1,000; 3 calls above 10,000); all
//!    but the last submission are cancelled at once.
//! 2. **Refresh while it runs**: 7 `bench status --json` right after, with
//!    the scheduler calls' own time taken apart.
//! 3. **Refresh of a frozen array, against submitit**: the array is held
//!    (`scontrol hold`) and the running tasks end, so its tasks stay
//!    finished or pending; then 7 alternating rounds of one fresh `bench status --json`
//!    process and one fresh Python process doing what submitit does to
//!    learn the states of a `map_array` (a `SlurmJob` per task, then each
//!    `state`: one `sacct` call), on the same tasks; the medians and their
//!    ratio. submitit 1.5.4 (pinned in
//!    `crates/python/requirements-tools.txt`) runs from its own virtual
//!    environment. Looking at benchops's own array keeps the cluster free
//!    of the Python tasks submitit would run, which on two cores would load
//!    the very machine being measured.
//! 4. **Past the cluster's `MaxArraySize`**: submitit's own `map_array` of
//!    as many jobs, beside the arrays benchops split the work into (run
//!    only there, where the cluster is expected to refuse it).

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::{python, run, target_dir};

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn min(v: &[f64]) -> f64 {
    v.iter().copied().fold(f64::INFINITY, f64::min)
}

/// The array jobs of the benchmark's latest submission, as `ID:TASKS`.
fn array_ids(state: &Path) -> Result<Vec<String>> {
    let benchmarks = state.join("benchmarks");
    let dir = std::fs::read_dir(&benchmarks)?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .next()
        .context("no benchmark in the state directory")?;
    let mut subs: Vec<_> = std::fs::read_dir(dir.join("submissions"))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    subs.sort();
    let last = subs.last().context("no submission record")?;
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(last)?)?;
    Ok(v["backend"]["chunks"]
        .as_array()
        .context("submission has no chunks")?
        .iter()
        .filter_map(|c| {
            Some(format!(
                "{}:{}",
                c["job_id"].as_str()?,
                c["tasks"].as_u64()?
            ))
        })
        .collect())
}

/// `cargo xtask bench-slurm [CHILDREN]`.
pub fn main(children: u64) -> Result<()> {
    run(
        "cargo",
        &[
            "build",
            "--quiet",
            "--locked",
            "--release",
            "--bin",
            "benchops-exec",
        ],
        &[],
    )?;
    let exe = target_dir()?.join("release/benchops-exec");
    let scratch = std::env::temp_dir().join(format!("benchops-bench-slurm-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let intent = scratch.join("k.toml");
    std::fs::write(
        &intent,
        format!(
            "schema = \"benchmark-intent/v1\"\nname = \"k\"\ncommand = [\"true\"]\nrepetitions = {children}\n"
        ),
    )?;
    let state = scratch.join("state");
    let state_s = state.display().to_string();
    let intent_s = intent.display().to_string();
    let cli = |args: &[&str]| -> Result<std::process::Output> {
        Ok(Command::new(&exe)
            .args(["--state", &state_s])
            .args(args)
            .output()?)
    };
    // Above 10,000 children, 3 submissions: each leaves its cancelled
    // tasks in the controller for `MinJobAge`, and seven arrays of 25,000
    // tasks on a 2-CPU controller slow `sbatch` past its timeout.
    let submits = if children > 10_000 { 3 } else { 7 };
    let mut submit_s = Vec::new();
    let mut digest = String::new();
    for n in 0..submits {
        let t = Instant::now();
        // A controller still recording the last cancelled array can hold
        // `sbatch` past the default 20 s: a slow sample, not a failure.
        let out = cli(&[
            "bench",
            "submit",
            &intent_s,
            "--backend",
            "slurm",
            "--scheduler-timeout",
            "180",
        ])?;
        submit_s.push(t.elapsed().as_secs_f64());
        if !out.status.success() {
            bail!("submit failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        eprintln!("xtask: {}", String::from_utf8_lossy(&out.stderr).trim());
        digest = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        // Keep the last array for the refresh benchmarks; cancel the others.
        if n + 1 < submits {
            let ids = array_ids(&state)?;
            let _ = cli(&["bench", "cancel", &digest]);
            drained(&ids, Duration::from_secs(180));
        }
    }
    let look = |runs: usize| -> Result<(Vec<f64>, Vec<f64>, u64, serde_json::Value)> {
        let (mut whole_s, mut outside_s, mut calls) = (Vec::new(), Vec::new(), 0);
        let mut counts = serde_json::Value::Null;
        for _ in 0..runs {
            let t = Instant::now();
            let out = cli(&["bench", "status", &digest, "--json"])?;
            let whole = t.elapsed().as_secs_f64();
            let v: serde_json::Value =
                serde_json::from_slice(&out.stdout).context("bench status --json")?;
            let scheduler = v["scheduler"]["seconds"].as_f64().unwrap_or(0.0);
            calls = v["scheduler"]["calls"].as_u64().unwrap_or(0);
            counts = v["counts"].clone();
            whole_s.push(whole);
            outside_s.push(whole - scheduler);
        }
        Ok((whole_s, outside_s, calls, counts))
    };
    let (live, live_outside, calls, _) = look(7)?;
    println!(
        "submit {children} children (whole process, {submits} runs): median {:.3} s, min {:.3} s",
        median(&submit_s),
        min(&submit_s)
    );
    println!(
        "refresh {children} children while they run (whole process, 7 runs): median {:.3} s, min {:.3} s, scheduler calls per refresh: {calls}; outside the scheduler calls: median {:.3} s",
        median(&live),
        min(&live),
        median(&live_outside)
    );

    // Let tasks finish for up to 90 s (or until half have), so both sides
    // see finished tasks as well as pending ones.
    let until = Instant::now() + Duration::from_secs(90);
    while Instant::now() < until {
        let out = cli(&["bench", "status", &digest, "--json"])?;
        let v: serde_json::Value = serde_json::from_slice(&out.stdout)?;
        if v["counts"]["succeeded"].as_u64().unwrap_or(0) * 2 >= children {
            break;
        }
        std::thread::sleep(Duration::from_secs(2));
    }
    // Freeze the array: hold what has not started, let what runs end. Both
    // tools then look at the same tasks, some finished and the rest
    // pending, however many there are (finishing 10,000 tasks on two cores
    // would take an hour).
    let arrays = array_ids(&state)?;
    let ids: Vec<&str> = arrays.iter().filter_map(|a| a.split(':').next()).collect();
    for id in &ids {
        let _ = Command::new("scontrol").args(["hold", id]).output();
    }
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let out = Command::new("squeue")
            .args([
                "-h",
                "-t",
                "RUNNING,COMPLETING,CONFIGURING",
                "-o",
                "%i",
                "-j",
            ])
            .arg(ids.join(","))
            .output()?;
        if out.stdout.iter().all(u8::is_ascii_whitespace) {
            break;
        }
        if Instant::now() > deadline {
            let _ = cli(&["bench", "cancel", &digest]);
            bail!("tasks of the held array still run after 5 minutes");
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    let peer = python::tool_venv("submitit")?;
    let python = peer.join("bin/python");
    let script = Path::new("crates/python/bench/submitit_refresh.py")
        .canonicalize()
        .context("crates/python/bench/submitit_refresh.py")?;
    let folder = scratch.join("submitit");
    let (mut ours, mut theirs, mut ours_outside) = (Vec::new(), Vec::new(), Vec::new());
    let mut peer_out = String::new();
    let mut counts = serde_json::Value::Null;
    for _ in 0..7 {
        let (w, o, _, c) = look(1)?;
        ours.extend(w);
        ours_outside.extend(o);
        counts = c;
        // Every array's tasks in one process: submitit's watcher asks sacct
        // for every registered array at once.
        let t = Instant::now();
        let o = Command::new(&python)
            .arg(&script)
            .arg(&folder)
            .args(&arrays)
            .output()?;
        if !o.status.success() {
            bail!(
                "submitit side failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        theirs.push(t.elapsed().as_secs_f64());
        peer_out = String::from_utf8_lossy(&o.stdout).trim().to_owned();
    }
    let (mo, mt) = (median(&ours), median(&theirs));
    let _ = cli(&["bench", "cancel", &digest]);
    println!("benchops counts: {counts}; submitit saw: {peer_out}");
    println!(
        "refresh {children} children of a held array (finished and pending), fresh process, 7 alternating rounds: benchops median {mo:.3} s (min {:.3} s, outside the scheduler calls {:.3} s), submitit median {mt:.3} s (min {:.3} s): benchops takes {:.2} of submitit's time",
        min(&ours),
        median(&ours_outside),
        min(&theirs),
        mo / mt
    );
    if let Some(limit) = max_array_size()
        && children > limit
    {
        over_limit(&python, &scratch, children, limit, arrays.len())?;
    }
    let _ = std::fs::remove_dir_all(&scratch);
    Ok(())
}

/// Waits, untimed, until the controller lists none of the cancelled
/// arrays `ids` (`ID:TASKS`) or `limit` passes: cancelling arrays of many
/// thousand pending tasks keeps a 2-CPU controller busy long enough to
/// slow the next submission past `sbatch`'s timeout.
fn drained(ids: &[String], limit: Duration) {
    let jobs: Vec<&str> = ids.iter().filter_map(|a| a.split(':').next()).collect();
    let until = Instant::now() + limit;
    while Instant::now() < until {
        let listed = Command::new("squeue")
            .args(["-h", "-o", "%i", "-j"])
            .arg(jobs.join(","))
            .output();
        match listed {
            Ok(o) if o.stdout.iter().all(u8::is_ascii_whitespace) => return,
            Ok(_) => std::thread::sleep(Duration::from_millis(500)),
            Err(_) => return,
        }
    }
    eprintln!(
        "xtask: cancelled arrays {} still listed after {limit:?}",
        jobs.join(",")
    );
}

/// The cluster's `MaxArraySize` (`scontrol show config`): an array's task
/// ids run from 0 to one less.
fn max_array_size() -> Option<u64> {
    let out = Command::new("scontrol")
        .args(["show", "config"])
        .output()
        .ok()?;
    String::from_utf8_lossy(&out.stdout).lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k.trim() == "MaxArraySize").then(|| v.trim().parse().ok())?
    })
}

/// Past the cluster's `MaxArraySize`: what submitit's `map_array` does
/// with the same number of jobs, beside the arrays benchops split them
/// into.
fn over_limit(
    python: &Path,
    scratch: &Path,
    children: u64,
    limit: u64,
    arrays: usize,
) -> Result<()> {
    let script = Path::new("crates/python/bench/submitit_over_limit.py")
        .canonicalize()
        .context("crates/python/bench/submitit_over_limit.py")?;
    let o = Command::new(python)
        .arg(&script)
        .arg(scratch.join("submitit-over-limit"))
        .arg(children.to_string())
        .output()?;
    if !o.status.success() {
        bail!(
            "submitit over the limit: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    let v: serde_json::Value =
        serde_json::from_slice(&o.stdout).context("submitit_over_limit.py printed no JSON")?;
    let verdict = if v["submitted"].as_bool() == Some(true) {
        "submitted (and cancelled at once)".to_owned()
    } else {
        format!("refused: {}", v["error"].as_str().unwrap_or("no message"))
    };
    println!(
        "over MaxArraySize {limit}: benchops submitted {children} children as {arrays} arrays; submitit map_array of {children} jobs {verdict} (after {:.3} s)",
        v["seconds"].as_f64().unwrap_or(f64::NAN)
    );
    Ok(())
}
