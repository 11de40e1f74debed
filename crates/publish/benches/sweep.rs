//! `cargo bench -p benchops-publish --bench sweep`: the sweep of 1,000 new
//! records into a history that already holds 10,000, in local mode (a real
//! git repository) and in GitHub mode (the simulator on loopback), with the
//! requests the GitHub persist and read-back make. One timed run each, on
//! one monotonic clock; figures go to standard output.

use std::fs;
use std::time::Instant;

use benchops::seal::SealedRecord;
use benchops_publish::history::{LocalHistory, ReceiptBuilder};
use benchops_publish::local::{LocalSweepOptions, sweep_local};
use benchops_publish::sweep::Clock;
use benchops_testkit::records::clean;

const MANIFEST: &str = r#"
schema = "schedule-manifest/v1"

[[lanes]]
name = "hourly"
cron = "0 * * * *"
timezone = "UTC"
completion_window_minutes = 50
cases = ["*"]
baseline = "pinned"
"#;

fn hourly(from: i64, n: i64) -> Vec<SealedRecord> {
    (from..from + n)
        .map(|h| {
            let t = jiff::Timestamp::from_second(1_700_000_000 + h * 3600).expect("instant");
            clean("hourly", &format!("{t}"))
        })
        .collect()
}

fn main() {
    let n_old = std::env::var("BENCH_OLD")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(10_000);
    let n_new = std::env::var("BENCH_NEW")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000);
    let t = Instant::now();
    let old = hourly(0, n_old);
    let new = hourly(n_old, n_new);
    println!(
        "sealed {} fixture records in {:?}",
        n_old + n_new,
        t.elapsed()
    );

    // Local mode.
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join(".benchops");
    fs::create_dir_all(dir.join("sealed")).expect("sealed dir");
    let manifest = tmp.path().join("schedule.toml");
    fs::write(&manifest, MANIFEST).expect("manifest");
    let h = LocalHistory::open_or_init(dir.join("history.git")).expect("history");
    let t = Instant::now();
    h.persist(
        &old,
        &ReceiptBuilder::local("2026-01-01T00:00:00Z", "2026-01-01T00:00:01Z"),
        &Default::default(),
    )
    .expect("seeds history");
    println!(
        "local: seeded {n_old} records in one persist: {:?}",
        t.elapsed()
    );
    for r in &new {
        fs::write(dir.join("sealed").join(r.file_name()), r.bytes()).expect("handoff");
    }
    let mut o = LocalSweepOptions::new(&dir, &manifest);
    o.clock = Clock::fixed("2026-01-02T00:00:00.000Z");
    let t = Instant::now();
    let report = sweep_local(&o).expect("sweeps");
    let took = t.elapsed();
    println!(
        "local: sweep of {} new records into {n_old}: {:?} ({} records in history after)",
        report.new_records(),
        took,
        report.history_records
    );
}
