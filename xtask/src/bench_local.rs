//! `cargo xtask bench-local [CHILDREN]`: the local backend timed as a user
//! sees it, whole processes of the release CLI, and side by side with GNU
//! `parallel` and `xargs -P` running the same commands.
//!
//! 1. **Scale**: one `bench submit --slots 2` of CHILDREN trivial children
//!    (default 10,000), sampled through `/proc` until every worker exited:
//!    the peak number of benchops processes (the submitter and the
//!    workers; a child a worker has forked but not yet turned into its
//!    command is the child's), the peak resident set of any one of them
//!    (`VmHWM`) and of all of them at once, and the wall time to finish.
//!    Targets: at most slots + 2 processes, under 100 MB.
//! 2. **Overhead per child**: 1,000 children of `true` with two at once, 5
//!    alternating rounds of `bench run --slots 2` (every result durable),
//!    `xargs -P2` and `parallel -j2`; medians, and benchops's overhead per
//!    child over `xargs`. Target: at most 5 ms per child (5 s for the
//!    1,000). `parallel` is skipped, with the reason, when it is not
//!    installed (Debian package `parallel`).
//! 3. **The measurer stays out of the measurement**: a fixed CPU-bound
//!    command timed 30 times by `bench run --slots 1`, and 30 times alone
//!    by `hyperfine` (Debian package `hyperfine`), 3 alternating rounds:
//!    the coefficient of variation (CV) of each. Target: benchops's is not
//!    wider. Skipped, with the reason, without `hyperfine`.
//!
//! The state directory lies in the system's temporary directory, on a real
//! file system (fsync costs what it costs there). The process bound and
//! the memory bound fail the task when missed; the times and the CV are
//! reported as met or missed (they depend on the machine and its load).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};

use crate::{run, target_dir};

const SLOTS: usize = 2;

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Coefficient of variation: sample standard deviation over the mean.
fn cv(v: &[f64]) -> f64 {
    let n = v.len() as f64;
    let mean = v.iter().sum::<f64>() / n;
    let var = v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    var.sqrt() / mean
}

fn on_path(program: &str) -> bool {
    Command::new("sh")
        .args(["-c", &format!("command -v {program}")])
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn intent(dir: &Path, name: &str, command: &str, repetitions: u64) -> Result<PathBuf> {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(
        &path,
        format!(
            "schema = \"benchmark-intent/v1\"\nname = \"{name}\"\ncommand = {command}\nrepetitions = {repetitions}\n"
        ),
    )?;
    Ok(path)
}

/// One live process of the run being sampled.
struct Proc {
    pid: u32,
    ppid: u32,
    worker: bool,
    rss_kib: u64,
    hwm_kib: u64,
}

/// The live processes whose command line names `needle` (the state
/// directory).
fn sample(needle: &str) -> Vec<Proc> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else {
        return out;
    };
    for e in rd.flatten() {
        let Some(pid) = e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else {
            continue;
        };
        let Ok(cmdline) = std::fs::read(format!("/proc/{pid}/cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|b| *b == 0).collect();
        if !args
            .iter()
            .any(|a| String::from_utf8_lossy(a).contains(needle))
        {
            continue;
        }
        let Ok(status) = std::fs::read_to_string(format!("/proc/{pid}/status")) else {
            continue;
        };
        let field = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))
                .map(|v| v.trim().trim_end_matches(" kB").trim().to_owned())
        };
        if field("State:").is_some_and(|s| s.starts_with('Z') || s.starts_with('X')) {
            continue;
        }
        out.push(Proc {
            pid,
            ppid: field("PPid:").and_then(|p| p.parse().ok()).unwrap_or(0),
            worker: args.iter().any(|a| *a == b"worker"),
            rss_kib: field("VmRSS:").and_then(|v| v.parse().ok()).unwrap_or(0),
            hwm_kib: field("VmHWM:").and_then(|v| v.parse().ok()).unwrap_or(0),
        });
    }
    out
}

/// benchops's own processes of a sample: not the children a worker forked
/// (until `exec` they carry the worker's command line).
fn own(procs: &[Proc]) -> Vec<&Proc> {
    let named: Vec<u32> = procs.iter().filter(|p| p.worker).map(|p| p.pid).collect();
    let workers: Vec<u32> = procs
        .iter()
        .filter(|p| p.worker && !named.contains(&p.ppid))
        .map(|p| p.pid)
        .collect();
    procs
        .iter()
        .filter(|p| !workers.contains(&p.ppid))
        .collect()
}

fn verdict(met: bool) -> &'static str {
    if met { "met" } else { "MISSED" }
}

/// `cargo xtask bench-local [CHILDREN]`.
pub fn main(args: &[String]) -> Result<()> {
    let children: u64 = match args.first() {
        Some(n) => n
            .parse()
            .context("usage: cargo xtask bench-local [CHILDREN]")?,
        None => 10_000,
    };
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
    let scratch = std::env::temp_dir().join(format!("benchops-bench-local-{}", std::process::id()));
    std::fs::create_dir_all(&scratch)?;
    let result = measure(&exe, &scratch, children);
    let _ = std::fs::remove_dir_all(&scratch);
    result
}

fn measure(exe: &Path, scratch: &Path, children: u64) -> Result<()> {
    let mut failed = Vec::new();

    // 1. Scale.
    let state = scratch.join("scale");
    let needle = state.display().to_string();
    let k = intent(scratch, "scale", "[\"true\"]", children)?;
    let started = Instant::now();
    let mut submit = Command::new(exe)
        .arg("--state")
        .arg(&state)
        .args(["bench", "submit"])
        .arg(&k)
        .args(["--slots", &SLOTS.to_string()])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()?;
    let mut submitted: Option<Duration> = None;
    let (mut most, mut most_workers, mut most_rss_kib) = (0usize, 0usize, 0u64);
    let mut hwm: HashMap<u32, u64> = HashMap::new();
    loop {
        let procs = sample(&needle);
        let mine = own(&procs);
        most = most.max(mine.len());
        most_workers = most_workers.max(mine.iter().filter(|p| p.worker).count());
        most_rss_kib = most_rss_kib.max(mine.iter().map(|p| p.rss_kib).sum());
        for p in &mine {
            let h = hwm.entry(p.pid).or_default();
            *h = (*h).max(p.hwm_kib);
        }
        if submitted.is_none() && submit.try_wait()?.is_some() {
            submitted = Some(started.elapsed());
        }
        if submitted.is_some() && mine.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    let finished = started.elapsed();
    let digest = String::from_utf8(submit.wait_with_output()?.stdout)?
        .trim()
        .to_owned();
    let look = Instant::now();
    let status = Command::new(exe)
        .arg("--state")
        .arg(&state)
        .args(["bench", "status", &digest, "--json"])
        .output()?;
    let look = look.elapsed();
    let status: serde_json::Value =
        serde_json::from_slice(&status.stdout).context("bench status --json")?;
    let succeeded = status["counts"]["succeeded"].as_u64().unwrap_or(0);
    let peak_hwm_mb = hwm.values().copied().max().unwrap_or(0) as f64 / 1024.0;
    let peak_sum_mb = most_rss_kib as f64 / 1024.0;
    println!("== scale: {children} children of `true`, bench submit --slots {SLOTS}");
    println!(
        "submit returned in {:.2} s; all children finished in {:.2} s ({succeeded} succeeded); one bench status: {:.2} s",
        submitted.unwrap_or_default().as_secs_f64(),
        finished.as_secs_f64(),
        look.as_secs_f64()
    );
    let procs_met = most <= SLOTS + 2 && most_workers <= SLOTS;
    println!(
        "peak benchops processes: {most} ({most_workers} workers); target <= {}: {}",
        SLOTS + 2,
        verdict(procs_met)
    );
    let rss_met = peak_hwm_mb < 100.0 && peak_sum_mb < 100.0;
    println!(
        "peak RSS: {peak_hwm_mb:.1} MB in one process, {peak_sum_mb:.1} MB all at once; target < 100 MB: {}",
        verdict(rss_met)
    );
    if !procs_met {
        failed.push("process count");
    }
    if !rss_met {
        failed.push("resident memory");
    }
    if succeeded != children {
        failed.push("every child succeeded");
    }

    // 2. Overhead per child.
    const N: u64 = 1000;
    let t = intent(scratch, "overhead", "[\"true\"]", N)?;
    let lines: String = (0..N).map(|i| format!("{i}\n")).collect();
    let feed = |program: &str, args: &[&str]| -> Result<f64> {
        let start = Instant::now();
        let mut c = Command::new(program)
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .spawn()?;
        std::io::Write::write_all(&mut c.stdin.take().context("stdin")?, lines.as_bytes())?;
        if !c.wait()?.success() {
            bail!("{program} failed");
        }
        Ok(start.elapsed().as_secs_f64())
    };
    let have_parallel = on_path("parallel");
    let (mut ours, mut xargs, mut parallel) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..5 {
        let st = scratch.join(format!("overhead-{round}"));
        let start = Instant::now();
        let o = Command::new(exe)
            .arg("--state")
            .arg(&st)
            .args(["bench", "run"])
            .arg(&t)
            .args(["--slots", "2", "--format", "json"])
            .stderr(Stdio::null())
            .output()?;
        ours.push(start.elapsed().as_secs_f64());
        let a: serde_json::Value = serde_json::from_slice(&o.stdout).context("analysis")?;
        if a["runs"]["succeeded"].as_u64() != Some(N) {
            bail!("bench run of {N} children: {}", a["runs"]);
        }
        let _ = std::fs::remove_dir_all(&st);
        xargs.push(feed("xargs", &["-P2", "-n1", "true"])?);
        if have_parallel {
            parallel.push(feed("parallel", &["-j2", "true"])?);
        }
    }
    let (o, x) = (median(&ours), median(&xargs));
    let per_child_ms = (o - x) / N as f64 * 1e3;
    println!(
        "\n== overhead: {N} children of `true`, two at once (medians of 5 alternating rounds)"
    );
    println!("bench run --slots 2: {o:.2} s (every result fsynced)");
    println!(
        "xargs -P2:           {x:.2} s  (benchops / xargs: {:.1}x)",
        o / x
    );
    if have_parallel {
        let p = median(&parallel);
        println!(
            "parallel -j2:        {p:.2} s  (benchops / parallel: {:.2}x)",
            o / p
        );
    } else {
        println!(
            "parallel -j2:        skipped: GNU parallel is not installed (apt-get install parallel)"
        );
    }
    println!(
        "overhead per child over xargs: {per_child_ms:.2} ms; target <= 5 ms and <= 5 s in all: {}",
        verdict(per_child_ms <= 5.0 && o <= 5.0)
    );

    // 3. The spread of a CPU-bound command.
    println!("\n== spread: a fixed CPU-bound command, 30 runs, under benchops and alone");
    if !on_path("hyperfine") {
        println!("skipped: hyperfine is not installed (apt-get install hyperfine)");
    } else {
        let script = "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done";
        let c = intent(
            scratch,
            "spin",
            &format!("[\"sh\", \"-c\", \"{script}\"]\nwarmup = 2"),
            30,
        )?;
        let (mut ours_cv, mut hf_cv, mut ours_mean, mut hf_mean) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for round in 0..3 {
            let st = scratch.join(format!("spin-{round}"));
            let o = Command::new(exe)
                .arg("--state")
                .arg(&st)
                .args(["bench", "run"])
                .arg(&c)
                .args(["--slots", "1", "--format", "json"])
                .stderr(Stdio::null())
                .output()?;
            let a: serde_json::Value = serde_json::from_slice(&o.stdout).context("analysis")?;
            let samples: Vec<f64> = a["cases"][0]["metrics"]
                .as_array()
                .and_then(|m| m.iter().find(|m| m["name"] == "wall_s"))
                .and_then(|m| m["samples"].as_array())
                .map(|s| s.iter().filter_map(serde_json::Value::as_f64).collect())
                .unwrap_or_default();
            if samples.len() != 30 {
                bail!("bench run gave {} wall_s samples", samples.len());
            }
            ours_cv.push(cv(&samples));
            ours_mean.push(samples.iter().sum::<f64>() / 30.0);
            let json = scratch.join(format!("hyperfine-{round}.json"));
            let status = Command::new("hyperfine")
                .args(["-N", "--runs", "30", "--warmup", "2", "--style", "none"])
                .arg("--export-json")
                .arg(&json)
                .arg(format!("sh -c '{script}'"))
                .stdout(Stdio::null())
                .status()?;
            if !status.success() {
                bail!("hyperfine failed");
            }
            let h: serde_json::Value = serde_json::from_slice(&std::fs::read(&json)?)?;
            let times: Vec<f64> = h["results"][0]["times"]
                .as_array()
                .map(|s| s.iter().filter_map(serde_json::Value::as_f64).collect())
                .unwrap_or_default();
            hf_cv.push(cv(&times));
            hf_mean.push(times.iter().sum::<f64>() / times.len() as f64);
            let _ = std::fs::remove_dir_all(&st);
        }
        for r in 0..3 {
            println!(
                "round {}: benchops mean {:.4} s CV {:.2}%   hyperfine mean {:.4} s CV {:.2}%",
                r + 1,
                ours_mean[r],
                ours_cv[r] * 100.0,
                hf_mean[r],
                hf_cv[r] * 100.0
            );
        }
        let (oc, hc) = (median(&ours_cv), median(&hf_cv));
        println!(
            "median CV: benchops {:.2}%, hyperfine {:.2}%; target: not wider: {}",
            oc * 100.0,
            hc * 100.0,
            verdict(oc <= hc)
        );
    }

    if failed.is_empty() {
        Ok(())
    } else {
        bail!("missed: {}", failed.join(", "))
    }
}
