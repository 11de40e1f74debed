//! `cargo bench -p benchops-publish --bench sweep`: how the sweep and the
//! reads of history scale as one lane's history grows to years of hourly
//! slots.
//!
//! For each history size (`BENCH_SIZES`, default `1000,10000,100000`
//! records already in history) it sweeps `BENCH_NEW` (default 1,000) new
//! records:
//! - in local mode, into a real git repository, then times `health` over
//!   the grown history and reports the F14 growth figures (packed bytes of
//!   the branch, the largest file, whether the trigger fired);
//! - in GitHub mode (`BENCH_MODES`, default `local,github,github+objects`),
//!   against the stateful simulator on loopback, counting the requests by
//!   operation; `github+objects` gives the sweep the seeded repository as
//!   `history_objects`, as a workflow that fetched the branch would.
//!
//! The lane has a drift episode every 5,000 hours (a drift record, then
//! clean ones that clear it), so the reconcile has issues to keep. Seeded
//! histories are built once with the publisher's own persist and kept
//! under the target directory (`bench-fixtures/sweep/`); each measured run
//! sweeps a copy. One timed run per size and mode, on one monotonic clock;
//! the figures go to standard output, with a summary table at the end.
//! The process allocates with mimalloc, as `benchops-publish` does, so the
//! figures are the binary's, not the system allocator's.

// The allocator of the `benchops-publish` binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use benchops::LaneName;
use benchops::manifest::BaselinePolicy;
use benchops::seal::SealedRecord;
use benchops_github::ManualClock;
use benchops_publish::github::{ClientSettings, GitHubSweepOptions, sweep_github};
use benchops_publish::health::{growth, health_local};
use benchops_publish::history::{HISTORY_REF, LocalHistory, ReceiptBuilder};
use benchops_publish::local::{LocalPersist as _, LocalSweepOptions, sweep_local};
use benchops_publish::sweep::Clock;
use benchops_testkit::GitHubSim;
use benchops_testkit::records::{clean, drift};
use benchops_testkit::sim::auth::TEST_APP_PRIVATE_KEY_PEM;

const MANIFEST: &str = r#"
schema = "schedule-manifest/v1"

[[lanes]]
name = "hourly"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 50
cases = ["*"]
baseline = "last-clean"
"#;

/// The first slot: 2015-01-01T00:00:00Z, so 100,000 hourly slots end in
/// 2026 and the history spans eleven years.
const FIRST_SLOT: i64 = 1_420_070_400;

/// A drift episode starts every this many hours.
const DRIFT_EVERY: i64 = 5_000;

/// Bumped when the fixture's records change, so stale fixtures are rebuilt.
const FIXTURE_VERSION: u32 = 3;

/// Records per persist while seeding: a history grown by sweeps of this
/// size, each with its own receipt (one persist of every record would
/// write one receipt as large as all of them).
const SEED_CHUNK: i64 = 1_000;

fn record_at(h: i64) -> SealedRecord {
    let t = jiff::Timestamp::from_second(FIRST_SLOT + h * 3600).expect("instant");
    let slot = format!("{t}");
    if h % DRIFT_EVERY == DRIFT_EVERY - 1 {
        drift("hourly", &slot)
    } else {
        clean("hourly", &slot)
    }
}

/// The sweep's clock: half an hour after the last new record's slot, as a
/// scheduled sweep sees it (the watchdog's lookback then holds the lane's
/// last 72 slots, whatever the history's size).
fn sweep_clock(n_old: i64, n_new: usize) -> String {
    let last = FIRST_SLOT + (n_old + n_new as i64 - 1) * 3600 + 1800;
    format!("{}", jiff::Timestamp::from_second(last).expect("instant"))
}

fn records(from: i64, n: i64) -> Vec<SealedRecord> {
    (from..from + n).map(record_at).collect()
}

/// This process's peak resident set (`VmHWM`), as Linux reports it.
fn peak_rss() -> String {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .map(|l| l.trim_start_matches("VmHWM:").trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned())
}

fn env_list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.to_owned())
        .split(',')
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn fixtures_dir() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"));
    target.join("bench-fixtures").join("sweep")
}

fn run(cmd: &mut Command) {
    let st = cmd.status().expect("runs");
    assert!(st.success(), "{cmd:?} failed: {st}");
}

/// A history of `n` records grown by sweeps of `SEED_CHUNK` records each
/// (one persist and one receipt per chunk, with the lane's last-clean
/// policy), built once and kept; returns its path.
fn seeded_history(n: i64) -> PathBuf {
    let dir = fixtures_dir();
    let path = dir.join(format!("v{FIXTURE_VERSION}-history-{n}.git"));
    if path.join("HEAD").exists() {
        return path;
    }
    fs::create_dir_all(&dir).expect("fixture dir");
    let tmp = dir.join(format!(".building-{n}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&tmp);
    let t = Instant::now();
    let h = LocalHistory::open_or_init(&tmp).expect("history");
    let policies = BTreeMap::from([(
        LaneName::new("hourly").expect("lane name"),
        BaselinePolicy::LastClean,
    )]);
    let mut from = 0;
    while from < n {
        let chunk = SEED_CHUNK.min(n - from);
        let at = jiff::Timestamp::from_second(FIRST_SLOT + (from + chunk) * 3600).expect("instant");
        h.persist(
            &records(from, chunk),
            &ReceiptBuilder::local(format!("{at}"), format!("{at}")),
            &policies,
        )
        .expect("seeds history");
        from += chunk;
        // Each persist writes one pack; keep their number small while a
        // large history grows (copying objects, no delta search: the final
        // `gc` below compresses).
        if (from / SEED_CHUNK) % 100 == 0 {
            run(Command::new("git").args(["--git-dir"]).arg(&tmp).args([
                "repack",
                "-a",
                "-d",
                "-q",
                "--window=0",
            ]));
        }
    }
    run(Command::new("git")
        .args(["--git-dir"])
        .arg(&tmp)
        .args(["gc", "--quiet"]));
    fs::rename(&tmp, &path).expect("fixture in place");
    println!(
        "  (built the {n}-record fixture history once in {:.1} s)",
        t.elapsed().as_secs_f64()
    );
    path
}

/// Every file at the tip of a local history: (path, bytes).
fn tip_files(history: &Path) -> Vec<(String, Vec<u8>)> {
    let h = LocalHistory::open_or_init(history).expect("history");
    let tip = h.tip_index().expect("tip");
    let wanted: Vec<&str> = tip.files.values().map(String::as_str).collect();
    let blobs = h.read_blobs(&wanted).expect("blobs");
    tip.files.keys().cloned().zip(blobs).collect()
}

struct Row {
    mode: &'static str,
    old: i64,
    new: usize,
    sweep: Duration,
    health: Option<Duration>,
    requests: Option<BTreeMap<String, usize>>,
    packed: Option<u64>,
    largest: Option<(String, u64)>,
    triggered: Option<bool>,
}

fn local(n_old: i64, new: &[SealedRecord]) -> Row {
    let seeded = seeded_history(n_old);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".benchops");
    fs::create_dir_all(dir.join("sealed")).expect("sealed dir");
    run(Command::new("cp")
        .arg("-a")
        .arg(&seeded)
        .arg(dir.join("history.git")));
    let manifest = tmp.path().join("schedule.toml");
    fs::write(&manifest, MANIFEST).expect("manifest");
    for r in new {
        fs::write(dir.join("sealed").join(r.file_name()), r.bytes()).expect("handoff");
    }
    if std::env::var_os("BENCH_PREPARE_ONLY").is_some() {
        // A prepared sweep directory to time or trace by hand with the CLI.
        let kept = tmp.keep();
        println!("local: prepared {} (not swept)", kept.display());
        std::process::exit(0);
    }
    let mut o = LocalSweepOptions::new(&dir, &manifest);
    o.clock = Clock::fixed(sweep_clock(n_old, new.len()));
    let t = Instant::now();
    let report = sweep_local(&o).expect("sweeps");
    let sweep = t.elapsed();
    assert_eq!(report.new_records(), new.len(), "every new record landed");
    println!(
        "local: sweep of {} new records into {n_old}: {:.3} s ({} records in history after)",
        report.new_records(),
        sweep.as_secs_f64(),
        report.history_records
    );
    let p = &report.seconds;
    println!(
        "local:   validate {:.3} s, persist {:.3} s, read history {:.3} s, reconcile {:.3} s, report {:.3} s",
        p.validate, p.persist, p.read_history, p.reconcile, p.report
    );
    println!(
        "local:   peak RSS of this process so far (fixture copy, sealing, sweep): {}",
        peak_rss()
    );
    if std::env::var_os("BENCH_SKIP_HEALTH").is_some() {
        return Row {
            mode: "local",
            old: n_old,
            new: new.len(),
            sweep,
            health: None,
            requests: None,
            packed: None,
            largest: None,
            triggered: None,
        };
    }
    let m = benchops_publish::sweep::load_manifest(&manifest).expect("manifest");
    let now = jiff::Timestamp::from_second(FIRST_SLOT + (n_old + 1 + new.len() as i64) * 3600)
        .expect("instant");
    let settings = benchops_publish::watchdog::settings(now, 72, 60);
    let t = Instant::now();
    let health = health_local(
        &dir.join("history.git"),
        Some(&dir.join("issues.json")),
        &m,
        &settings,
        false,
    )
    .expect("health");
    let health_time = t.elapsed();
    println!(
        "local: health over {} records: {:.3} s (growth figures included)",
        report.history_records,
        health_time.as_secs_f64()
    );
    let t = Instant::now();
    let g = growth(&dir.join("history.git")).expect("growth");
    let growth_time = t.elapsed();
    println!(
        "local:   of which the growth figures (packed size of the branch, largest file): {:.3} s; the lanes (lookback, durations, trends, baselines): {:.3} s",
        growth_time.as_secs_f64(),
        health_time.saturating_sub(growth_time).as_secs_f64()
    );
    // Packed bytes vary by a few KB between two packs (delta choices).
    assert_eq!(
        (&g.largest_file, g.triggered),
        (&health.growth.largest_file, health.growth.triggered),
        "health reports the growth figures"
    );
    println!(
        "local: growth: {:.1} MB packed (limit {:.0} MB), largest file {:.1} KB, triggered: {}",
        g.packed_bytes as f64 / 1e6,
        g.pack_limit_bytes as f64 / 1e6,
        g.largest_file
            .as_ref()
            .map_or(0.0, |(_, b)| *b as f64 / 1e3),
        g.triggered
    );
    Row {
        mode: "local",
        old: n_old,
        new: new.len(),
        sweep,
        health: Some(health_time),
        requests: None,
        packed: Some(g.packed_bytes),
        largest: g.largest_file,
        triggered: Some(g.triggered),
    }
}

const OWNER: &str = "acme";
const NAME: &str = "bench";

fn github(rt: &tokio::runtime::Runtime, n_old: i64, new: &[SealedRecord], objects: bool) -> Row {
    let seeded = seeded_history(n_old);
    let mut files = tip_files(&seeded);
    // The simulator's branch is one root commit of these files: the
    // history index was built on no commit there, as sweeps would have
    // kept it.
    for (path, bytes) in &mut files {
        if path == benchops::history_index::POINTER_PATH {
            let mut v: serde_json::Value = serde_json::from_slice(bytes).expect("pointer");
            v["built_on"] = serde_json::Value::Null;
            *bytes = serde_json::to_vec_pretty(&v).expect("pointer");
        }
    }
    rt.block_on(async {
        let sim = GitHubSim::start().await;
        sim.create_repo(OWNER, NAME);
        let refs: Vec<(&str, &[u8])> = files
            .iter()
            .map(|(p, b)| (p.as_str(), b.as_slice()))
            .collect();
        sim.commit_files(
            OWNER,
            NAME,
            HISTORY_REF.trim_start_matches("refs/heads/"),
            &refs,
            "seed",
        );
        let tmp = tempfile::tempdir().expect("tempdir");
        let handoff = tmp.path().join("sealed");
        fs::create_dir_all(&handoff).expect("handoff dir");
        for r in new {
            fs::write(handoff.join(r.file_name()), r.bytes()).expect("handoff");
        }
        let manifest = tmp.path().join("schedule.toml");
        fs::write(&manifest, MANIFEST).expect("manifest");
        let key = tmp.path().join("app.pem");
        let mut f = fs::File::create(&key).expect("key");
        f.write_all(TEST_APP_PRIVATE_KEY_PEM.as_bytes()).expect("key");
        let clock = ManualClock::at_unix(u64::try_from(sim.now()).expect("after 1970"));
        let mut o = GitHubSweepOptions::new(
            format!("{OWNER}/{NAME}"),
            sim.app_id(),
            &key,
            Some(handoff.clone()),
            &manifest,
        );
        o.clock = Clock::fixed(sweep_clock(n_old, new.len()));
        // A copy of the seeded repository with the simulator's very tip
        // committed in it holds every object the simulator was given, as a
        // fetch of the branch would.
        let objects_dir = tmp.path().join("objects.git");
        if objects {
            run(Command::new("cp").arg("-a").arg(&seeded).arg(&objects_dir));
            LocalHistory::open_or_init(&objects_dir)
                .expect("objects")
                .write_commit(&Default::default(), &files, "seed\n", 0)
                .expect("the simulator's tip, committed alike");
        }
        o.history_objects = objects.then(|| objects_dir.clone());
        o.trigger = "schedule".to_owned();
        o.history_base_url = "https://github.example/acme/bench/blob/benchmark-history".into();
        o.client = ClientSettings {
            api_url: Some(sim.base_url()),
            clock: Some(Arc::new(clock.clone())),
            sleeper: Some(Arc::new(clock.clone())),
            timeout: Some(Duration::from_secs(60)),
            jitter_seed: Some(7),
            ..ClientSettings::default()
        };
        sim.clear_requests();
        let t = Instant::now();
        let result = sweep_github(&o).await;
        let sweep = t.elapsed();
        let mut by_kind: BTreeMap<String, usize> = BTreeMap::new();
        for r in sim.requests() {
            *by_kind
                .entry(format!("{} {}", r.method, r.route.unwrap_or("(no route)")))
                .or_default() += 1;
        }
        let total: usize = by_kind.values().sum();
        match &result {
            Ok(report) => println!(
                "github: sweep of {} new records into {n_old}: {:.3} s, {total} requests ({} records in history after)",
                report.new_records(),
                sweep.as_secs_f64(),
                report.history_records
            ),
            Err(e) => println!(
                "github: sweep of {} new records into {n_old} FAILED after {:.3} s and {total} requests: {e}: {}",
                new.len(),
                sweep.as_secs_f64(),
                e.cause
            ),
        }
        for (k, v) in &by_kind {
            println!("github:   {v:>7}  {k}");
        }
        Row {
            mode: match (objects, result.is_ok()) {
                (false, true) => "github",
                (false, false) => "github (failed)",
                (true, true) => "github+objects",
                (true, false) => "github+objects (failed)",
            },
            old: n_old,
            new: new.len(),
            sweep,
            health: None,
            requests: Some(by_kind),
            packed: None,
            largest: None,
            triggered: None,
        }
    })
}

fn main() {
    let sizes: Vec<i64> = env_list("BENCH_SIZES", "1000,10000,100000")
        .iter()
        .map(|s| s.parse().expect("BENCH_SIZES: numbers"))
        .collect();
    let n_new: i64 = std::env::var("BENCH_NEW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let modes = env_list("BENCH_MODES", "local,github,github+objects");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut rows = Vec::new();
    for &n_old in &sizes {
        println!("\n== {n_old} records in history, {n_new} new");
        let t = Instant::now();
        let new = records(n_old, n_new);
        println!(
            "sealed {n_new} new fixture records in {:.2} s",
            t.elapsed().as_secs_f64()
        );
        for mode in &modes {
            match mode.as_str() {
                "local" => rows.push(local(n_old, &new)),
                "github" => rows.push(github(&rt, n_old, &new, false)),
                "github+objects" => rows.push(github(&rt, n_old, &new, true)),
                other => panic!("BENCH_MODES: unknown mode {other}"),
            }
        }
    }
    println!("\nsummary");
    println!(
        "{:<16} {:>8} {:>5} {:>9} {:>9} {:>9} {:>10} {:>11}  growth",
        "mode", "history", "new", "sweep s", "health s", "requests", "blob GETs", "packed MB"
    );
    for r in rows {
        let blob_gets = r.requests.as_ref().map(|k| {
            k.iter()
                .filter(|(k, _)| k.starts_with("GET ") && k.contains("/git/blobs/"))
                .map(|(_, v)| v)
                .sum::<usize>()
        });
        let show = |v: Option<String>| v.unwrap_or_else(|| "-".to_owned());
        println!(
            "{:<16} {:>8} {:>5} {:>9.3} {:>9} {:>9} {:>10} {:>11}  {}",
            r.mode,
            r.old,
            r.new,
            r.sweep.as_secs_f64(),
            show(r.health.map(|d| format!("{:.3}", d.as_secs_f64()))),
            show(
                r.requests
                    .as_ref()
                    .map(|k| k.values().sum::<usize>().to_string())
            ),
            show(blob_gets.map(|n| n.to_string())),
            show(r.packed.map(|b| format!("{:.1}", b as f64 / 1e6))),
            match (&r.largest, r.triggered) {
                (Some((p, b)), Some(t)) =>
                    format!("largest {:.1} KB ({p}), triggered {t}", *b as f64 / 1e3),
                _ => "-".to_owned(),
            }
        );
    }
}
