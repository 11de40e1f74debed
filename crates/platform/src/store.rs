//! Where a platform run's results go, and the lock that keeps two runs from
//! measuring at once.
//!
//! - The **run id** is the UTC second plus 8 random hex digits
//!   (`20261202T153000Z-3f9a1c2e`): unique even for two runs in the same
//!   second, and it names every disposable branch and file of the run.
//! - **Results**: `<results>/<run id>.jsonl`, one row per line, and
//!   `<run id>.md`, a summary; both written create-only and atomically
//!   (temporary file, fsync, link), so a reader never sees half a file.
//! - **The measurement lock** is `flock` on `<workdir>/measure.lock`:
//!   a second run (another lane on the same host and workdir) waits for
//!   it, and the wait is reported on every row (`measurement_lock_wait_ms`).

use std::fs::OpenOptions;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::clock::RunClock;
use super::row::{Row, ms};

/// A new run id for `now`.
pub fn run_id(now: jiff::Timestamp) -> String {
    use rand_core::RngCore as _;
    let stamp = now.strftime("%Y%m%dT%H%M%SZ").to_string();
    format!("{stamp}-{:08x}", rand_core::OsRng.next_u32())
}

/// Why results could not be kept or the lock not taken.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// A file or directory could not be made or written.
    #[error("{path}: {reason}")]
    Io {
        /// The path.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The lock stayed held for the whole wait.
    #[error("{path} stayed locked by another platform run for {waited:?}")]
    Busy {
        /// The lock file.
        path: PathBuf,
        /// How long this run waited.
        waited: Duration,
    },
}

/// The held measurement lock.
#[derive(Debug)]
pub struct MeasurementLock {
    _lock: nix::fcntl::Flock<std::fs::File>,
    /// How long it took to get it, in ms.
    pub wait_ms: f64,
}

/// Takes the measurement lock in `workdir`, waiting at most `max_wait`.
pub fn lock(
    workdir: &Path,
    clock: &dyn RunClock,
    max_wait: Duration,
) -> Result<MeasurementLock, StoreError> {
    let io = |path: &Path, e: &dyn std::fmt::Display| StoreError::Io {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    std::fs::create_dir_all(workdir).map_err(|e| io(workdir, &e))?;
    let path = workdir.join("measure.lock");
    let start = clock.monotonic();
    let mut file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&path)
        .map_err(|e| io(&path, &e))?;
    loop {
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(l) => {
                return Ok(MeasurementLock {
                    _lock: l,
                    wait_ms: ms((clock.monotonic() - start).as_secs_f64() * 1000.0),
                });
            }
            Err((f, nix::errno::Errno::EWOULDBLOCK)) => {
                let waited = clock.monotonic() - start;
                if waited >= max_wait {
                    return Err(StoreError::Busy { path, waited });
                }
                file = f;
                clock.sleep(Duration::from_millis(100));
            }
            Err((_, e)) => return Err(io(&path, &e)),
        }
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace(['\n', '\r'], " ")
}

/// The markdown summary of `rows`.
pub fn summary(run_id: &str, rows: &[Row]) -> String {
    let mut s = format!(
        "# Platform run {run_id}\n\n\
         One row per declared operation per run. Durations come from one monotonic clock. \
         A settle time is known only to within its poll interval (`poll_quantization_ms`). \
         `integration.total` is a sum of operation durations; race, triage and fleet totals are \
         wall-clock spans. Only rows with `semantic_contract_match` and the same \
         `platform_comparison_key` may be compared.\n\n\
         | platform | driver | scenario | run | operation | ms | polls | quantization ms | rc |\n\
         |---|---|---|---:|---|---:|---:|---:|---:|\n"
    );
    for r in rows.iter().filter(|r| !r.skipped) {
        let polls = r
            .settle
            .as_ref()
            .map_or(String::new(), |x| x.poll_iterations.to_string());
        let q = r
            .settle
            .as_ref()
            .filter(|x| x.poll_interval_s > 0.0)
            .map_or(String::new(), |x| x.poll_quantization_ms.to_string());
        s.push_str(&format!(
            "| {} | {} | {} | {} | `{}`{} | {} | {polls} | {q} | {} |\n",
            cell(&r.meta.platform),
            cell(&r.meta.driver),
            cell(&r.scenario),
            r.run,
            cell(&r.operation),
            r.race_branch
                .map_or(String::new(), |b| format!(" (branch {b})")),
            r.elapsed_ms,
            r.returncode.map_or("-".to_owned(), |c| c.to_string()),
        ));
    }
    let mut reasons: std::collections::BTreeMap<&str, usize> = Default::default();
    for r in rows.iter().filter(|r| r.skipped) {
        *reasons
            .entry(r.skip_reason.as_deref().unwrap_or("(no reason)"))
            .or_default() += 1;
    }
    if !reasons.is_empty() {
        s.push_str("\n## Skipped\n\n");
        for (reason, n) in reasons {
            s.push_str(&format!("- `{}`: {n} row(s)\n", cell(reason)));
        }
    }
    s
}

/// Writes the rows and the summary of run `run_id` into `results`.
pub fn write(results: &Path, run_id: &str, rows: &[Row]) -> Result<(PathBuf, PathBuf), StoreError> {
    let io = |path: &Path, e: &dyn std::fmt::Display| StoreError::Io {
        path: path.to_owned(),
        reason: e.to_string(),
    };
    std::fs::create_dir_all(results).map_err(|e| io(results, &e))?;
    let mut jsonl = Vec::new();
    for r in rows {
        let line = serde_json::to_vec(r).map_err(|e| io(results, &e))?;
        jsonl.extend_from_slice(&line);
        jsonl.push(b'\n');
    }
    let raw = results.join(format!("{run_id}.jsonl"));
    benchops::fsio::write_create_only(&raw, &jsonl).map_err(|e| io(&raw, &e))?;
    let md = results.join(format!("{run_id}.md"));
    benchops::fsio::write_create_only(&md, summary(run_id, rows).as_bytes())
        .map_err(|e| io(&md, &e))?;
    Ok((raw, md))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;

    #[test]
    fn run_ids_differ_within_a_second() {
        let now = jiff::Timestamp::from_second(1_800_000_000).expect("t");
        let a = run_id(now);
        let b = run_id(now);
        assert_ne!(a, b);
        assert!(a.starts_with("20270115T080000Z-"), "{a}");
    }

    #[test]
    fn a_second_run_waits_for_the_lock() {
        let dir = tempfile::tempdir().expect("tmp");
        let clock = SystemClock::new();
        let held = lock(dir.path(), &clock, Duration::from_secs(1)).expect("first");
        let busy = lock(dir.path(), &clock, Duration::from_millis(250));
        assert!(matches!(busy, Err(StoreError::Busy { .. })), "{busy:?}");
        drop(held);
        let l = lock(dir.path(), &clock, Duration::from_secs(1)).expect("free again");
        assert!(l.wait_ms < 250.0);
    }
}
