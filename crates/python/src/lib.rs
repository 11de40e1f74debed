//! `benchops._native`: the exec library, callable from Python.
//!
//! Every function here is one call into `benchops_exec`, the library the
//! `benchops-exec` CLI is a shim over, so the Python package has no second
//! implementation. Answers cross the boundary as the JSON text the CLI
//! prints (`bench plan --json`, `bench refresh`, `bench analyze --format
//! json`, `lane status --json`), which the pure-Python layer
//! (`benchops/__init__.py`) wraps in typed objects. Scheduler calls,
//! planning and refreshes run with the interpreter detached (the GIL
//! released), so other Python threads go on and Ctrl-C is seen as soon as
//! the call returns.

use std::path::PathBuf;
use std::time::Duration;

use benchops_exec::backend::{Backend, LocalOptions, SchedulerOptions, SlurmOptions};
use benchops_exec::bench::{self, IntentSource};
use benchops_exec::lane::{self, LaneBackend, LaneRunOptions};
use benchops_exec::result::{self, SealContext};
use benchops_exec::state::StateDir;
use benchops_exec::{render, signing};
use pyo3::prelude::*;

mod errors;

use errors::{Detail, Kind};

/// How the scheduler tools are called: the CLI's `--scheduler-timeout`.
fn scheduler(timeout: Option<f64>) -> PyResult<SchedulerOptions> {
    match timeout {
        None => Ok(SchedulerOptions::default()),
        Some(s) if (0.001..=86_400.0).contains(&s) => Ok(SchedulerOptions {
            timeout: Duration::from_secs_f64(s),
        }),
        Some(s) => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "scheduler_timeout must be at least 0.001 and at most 86400 seconds, not {s}"
        ))),
    }
}

/// Reaps local wrapper processes in the background, so a long-lived
/// interpreter leaves no zombies. The wrappers are detached: they run on
/// whether or not this thread (or the interpreter) lives.
fn reap(processes: Vec<std::process::Child>) {
    if processes.is_empty() {
        return;
    }
    let _ = std::thread::Builder::new()
        .name("benchops-reaper".into())
        .spawn(move || {
            for mut p in processes {
                let _ = p.wait();
            }
        });
}

/// Runs `f` with the interpreter detached: nothing inside touches Python.
fn detached<T: Send, F: Send + FnOnce() -> T>(py: Python<'_>, f: F) -> T {
    py.detach(f)
}

/// Where an intent comes from: `kind` is `file`, `toml` or `json`.
fn with_source<T>(
    py: Python<'_>,
    kind: &str,
    value: &str,
    label: &str,
    f: impl FnOnce(IntentSource<'_>) -> T,
) -> PyResult<T> {
    match kind {
        "file" => Ok(f(IntentSource::File(std::path::Path::new(value)))),
        "toml" => Ok(f(IntentSource::Toml { text: value, label })),
        "json" => {
            let v: serde_json::Value = serde_json::from_str(value).map_err(|e| {
                errors::raise(
                    py,
                    Kind::Intent,
                    format!("{label}: not a JSON data model: {e}"),
                    Detail {
                        file: Some(label.to_owned()),
                        ..Detail::default()
                    },
                )
            })?;
            Ok(f(IntentSource::Json { value: &v, label }))
        }
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "unknown intent kind {other:?}"
        ))),
    }
}

/// Plans an intent and returns `bench plan --json`'s object.
#[pyfunction]
#[pyo3(signature = (state, kind, value, label, persist))]
fn plan(
    py: Python<'_>,
    state: PathBuf,
    kind: &str,
    value: &str,
    label: &str,
    persist: bool,
) -> PyResult<String> {
    let state = StateDir::new(&state);
    let done = with_source(py, kind, value, label, |src| {
        detached(py, || {
            if persist {
                bench::plan_from(&state, src)
                    .map(|p| render::plan_json(&p.plan, &p.digest, &p.record.intent_source))
            } else {
                bench::plan_source(src)
                    .map(|(plan, _, digest)| render::plan_json(&plan, &digest, &src.name()))
            }
        })
    })?;
    done.map_err(|e| errors::bench(py, &e))
}

/// Plans and submits; returns `{benchmark, attempt, children, note, poll}`.
#[pyfunction]
#[pyo3(signature = (state, kind, value, label, backend, exe, slots, partition, account, throttle, max_array_size, scheduler_timeout))]
#[allow(clippy::too_many_arguments)]
fn submit(
    py: Python<'_>,
    state: PathBuf,
    kind: &str,
    value: &str,
    label: &str,
    backend: &str,
    exe: PathBuf,
    slots: u32,
    partition: Option<String>,
    account: Option<String>,
    throttle: Option<u32>,
    max_array_size: Option<u64>,
    scheduler_timeout: Option<f64>,
) -> PyResult<String> {
    let sched = scheduler(scheduler_timeout)?;
    let backend = match backend {
        "local" => Backend::Local(LocalOptions {
            slots: slots.max(1),
            exe: Some(exe),
            ..LocalOptions::default()
        }),
        "slurm" => Backend::Slurm(SlurmOptions {
            partition,
            account,
            throttle,
            max_array_size,
            exe: Some(exe),
            scheduler: sched,
        }),
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "backend must be \"local\" or \"slurm\", not {other:?}"
            )));
        }
    };
    let state = StateDir::new(&state);
    let done = with_source(py, kind, value, label, |src| {
        detached(py, || bench::submit_from(&state, src, &backend))
    })?;
    let s = done.map_err(|e| errors::bench(py, &e))?;
    let out = serde_json::json!({
        "benchmark": s.digest.to_string(),
        "attempt": s.attempt,
        "children": s.children,
        "note": s.note,
        "poll": s.poll.as_secs_f64(),
    })
    .to_string();
    reap(s.processes);
    Ok(out)
}

/// The full digest of a benchmark named by a unique prefix.
#[pyfunction]
fn resolve(py: Python<'_>, state: PathBuf, benchmark: &str) -> PyResult<String> {
    let state = StateDir::new(&state);
    let d = state
        .resolve(benchmark)
        .map_err(|e| errors::state(py, &e))?;
    state.load_record(&d).map_err(|e| errors::state(py, &e))?;
    Ok(d.to_string())
}

/// A benchmark named by its digest or a prefix, in a state directory, with
/// the scheduler options of the call.
struct Opened {
    state: StateDir,
    digest: benchops::Sha256Digest,
    sched: SchedulerOptions,
}

fn open(
    py: Python<'_>,
    state: &std::path::Path,
    benchmark: &str,
    scheduler_timeout: Option<f64>,
) -> PyResult<Opened> {
    let sched = scheduler(scheduler_timeout)?;
    let state = StateDir::new(state);
    let digest = state
        .resolve(benchmark)
        .map_err(|e| errors::state(py, &e))?;
    Ok(Opened {
        state,
        digest,
        sched,
    })
}

/// `bench refresh`'s JSON.
#[pyfunction]
#[pyo3(signature = (state, benchmark, scheduler_timeout))]
fn refresh(
    py: Python<'_>,
    state: PathBuf,
    benchmark: &str,
    scheduler_timeout: Option<f64>,
) -> PyResult<String> {
    let Opened {
        state,
        digest: d,
        sched,
    } = open(py, &state, benchmark, scheduler_timeout)?;
    let status =
        detached(py, || bench::refresh(&state, &d, &sched)).map_err(|e| errors::bench(py, &e))?;
    render::status_json(&status)
        .map_err(|e| errors::raise(py, Kind::Base, e.to_string(), Detail::default()))
}

/// `bench analyze --format json`'s JSON (without the final newline).
#[pyfunction]
#[pyo3(signature = (state, benchmark, scheduler_timeout))]
fn analyze(
    py: Python<'_>,
    state: PathBuf,
    benchmark: &str,
    scheduler_timeout: Option<f64>,
) -> PyResult<String> {
    let Opened {
        state,
        digest: d,
        sched,
    } = open(py, &state, benchmark, scheduler_timeout)?;
    let (_, analysis) =
        detached(py, || bench::analyze(&state, &d, &sched)).map_err(|e| errors::bench(py, &e))?;
    Ok(String::from_utf8_lossy(&analysis.to_canonical()).into_owned())
}

/// `bench cancel`: `{benchmark, actions}`.
#[pyfunction]
#[pyo3(signature = (state, benchmark, scheduler_timeout))]
fn cancel(
    py: Python<'_>,
    state: PathBuf,
    benchmark: &str,
    scheduler_timeout: Option<f64>,
) -> PyResult<String> {
    let Opened {
        state,
        digest: d,
        sched,
    } = open(py, &state, benchmark, scheduler_timeout)?;
    let c =
        detached(py, || bench::cancel(&state, &d, &sched)).map_err(|e| errors::bench(py, &e))?;
    Ok(serde_json::to_string(&c).unwrap_or_default())
}

/// `bench list`: one object per benchmark, or why its record is unreadable.
#[pyfunction]
fn list(py: Python<'_>, state: PathBuf) -> String {
    let state = StateDir::new(&state);
    let all = detached(py, || bench::list(&state));
    let rows: Vec<serde_json::Value> = all
        .iter()
        .map(|l| match &l.record {
            Ok(r) => serde_json::json!({
                "benchmark": l.digest.to_string(),
                "intent_source": r.intent_source,
                "child_count": r.child_count,
                "created_at": r.created_at,
                "error": null,
            }),
            Err(e) => serde_json::json!({
                "benchmark": l.digest.to_string(),
                "error": errors::chain(e),
            }),
        })
        .collect();
    serde_json::Value::Array(rows).to_string()
}

/// The JSON of a written record: `{digest, path, created, signature}`.
fn sealed_json(o: &benchops_exec::seal::SealOutcome) -> String {
    serde_json::json!({
        "digest": o.digest.to_string(),
        "path": o.path,
        "created": matches!(o.created, benchops::fsio::Created::New),
        "signature": o.signature,
    })
    .to_string()
}

/// `bench seal`: seals the benchmark's runs into `out`.
#[pyfunction]
#[pyo3(signature = (state, benchmark, lane, slot, repository, commit, manifest, out, sign_key, scheduler_timeout))]
#[allow(clippy::too_many_arguments)]
fn seal(
    py: Python<'_>,
    state: PathBuf,
    benchmark: &str,
    lane: String,
    slot: String,
    repository: String,
    commit: String,
    manifest: PathBuf,
    out: PathBuf,
    sign_key: Option<PathBuf>,
    scheduler_timeout: Option<f64>,
) -> PyResult<String> {
    let signer = match &sign_key {
        Some(p) => Some(signing::Signer::load(p).map_err(|e| {
            errors::raise(
                py,
                Kind::Seal,
                errors::chain(&e),
                Detail {
                    file: Some(p.display().to_string()),
                    ..Detail::default()
                },
            )
        })?),
        None => None,
    };
    let lane = benchops::LaneName::new(lane).map_err(|e| {
        errors::raise(
            py,
            Kind::Seal,
            format!("invalid lane: {e}"),
            Detail {
                key: Some("lane".into()),
                ..Detail::default()
            },
        )
    })?;
    let Opened {
        state,
        digest: d,
        sched,
    } = open(py, &state, benchmark, scheduler_timeout)?;
    let ctx = SealContext {
        lane,
        slot,
        repository,
        commit,
        manifest,
    };
    let o = detached(py, || {
        result::seal_benchmark_to(&state, &d, &ctx, &out, &sched, signer.as_ref())
    })
    .map_err(|e| errors::seal_bench(py, &e))?;
    Ok(sealed_json(&o))
}

/// What `lane run` or `lane advance` did, as `lane run --json` prints it
/// (one definition: [`lane::progress_json`]), with the failed cases once
/// sealed.
fn progress_json(
    state: &StateDir,
    sched: &SchedulerOptions,
    p: &lane::Progress,
) -> Result<String, bench::BenchError> {
    let failures = if p.sealed.is_some() {
        lane::failures_of(state, sched, &p.execution)?
    } else {
        Vec::new()
    };
    Ok(lane::progress_json(p, &failures))
}

/// The cases of a benchmark whose runs did not all succeed, as JSON (what
/// `bench run` summarises on standard error before it exits 3).
#[pyfunction]
#[pyo3(signature = (state, benchmark, scheduler_timeout))]
fn failures(
    py: Python<'_>,
    state: PathBuf,
    benchmark: &str,
    scheduler_timeout: Option<f64>,
) -> PyResult<String> {
    let Opened {
        state,
        digest: d,
        sched,
    } = open(py, &state, benchmark, scheduler_timeout)?;
    let status =
        detached(py, || bench::refresh(&state, &d, &sched)).map_err(|e| errors::bench(py, &e))?;
    let cases = benchops_exec::failures::of_status(&state, &status);
    serde_json::to_string(&cases)
        .map_err(|e| errors::raise(py, Kind::Base, e.to_string(), Detail::default()))
}

/// `lane run` without `--wait`: starts (or resumes) a lane execution.
#[pyfunction]
#[pyo3(signature = (state, manifest, lane, history, out, exe, subject, backend, slots, partition, account, throttle, slot, repository, commit, sign_key, scheduler_timeout, unscheduled=None))]
#[allow(clippy::too_many_arguments)]
fn lane_run(
    py: Python<'_>,
    state: PathBuf,
    manifest: PathBuf,
    lane: String,
    history: String,
    out: PathBuf,
    exe: PathBuf,
    subject: PathBuf,
    backend: &str,
    slots: u32,
    partition: Option<String>,
    account: Option<String>,
    throttle: Option<u32>,
    slot: Option<String>,
    repository: Option<String>,
    commit: Option<String>,
    sign_key: Option<PathBuf>,
    scheduler_timeout: Option<f64>,
    unscheduled: Option<String>,
) -> PyResult<String> {
    let sched = scheduler(scheduler_timeout)?;
    let backend = match backend {
        "local" => LaneBackend::Local {
            slots: slots.max(1),
        },
        "slurm" => LaneBackend::Slurm {
            partition,
            account,
            throttle,
        },
        other => {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "backend must be \"local\" or \"slurm\", not {other:?}"
            )));
        }
    };
    lane::refuse_credentials(std::env::vars_os().map(|(k, v)| {
        (
            k.to_string_lossy().into_owned(),
            v.to_string_lossy().into_owned(),
        )
    }))
    .map_err(|e| errors::lane(py, &e))?;
    let opts = LaneRunOptions {
        manifest,
        lane,
        history,
        slot,
        repository,
        commit,
        subject_dir: subject,
        out,
        backend,
        exe: Some(exe),
        now: jiff::Timestamp::now(),
        sign_key,
        unscheduled,
        skipped: None,
    };
    let state = StateDir::new(&state);
    let mut p =
        detached(py, || lane::start(&state, &opts, &sched)).map_err(|e| errors::lane(py, &e))?;
    let out =
        detached(py, || progress_json(&state, &sched, &p)).map_err(|e| errors::bench(py, &e))?;
    reap(std::mem::take(&mut p.processes));
    Ok(out)
}

/// `lane advance`: moves an execution as far as it can go now.
#[pyfunction]
#[pyo3(signature = (state, id, exe, scheduler_timeout))]
fn lane_advance(
    py: Python<'_>,
    state: PathBuf,
    id: &str,
    exe: PathBuf,
    scheduler_timeout: Option<f64>,
) -> PyResult<String> {
    let sched = scheduler(scheduler_timeout)?;
    let state = StateDir::new(&state);
    let mut p = detached(py, || lane::advance(&state, id, &sched, Some(exe), false))
        .map_err(|e| errors::lane(py, &e))?;
    let out =
        detached(py, || progress_json(&state, &sched, &p)).map_err(|e| errors::bench(py, &e))?;
    reap(std::mem::take(&mut p.processes));
    Ok(out)
}

/// `lane status --json`.
#[pyfunction]
#[pyo3(signature = (state, id, scheduler_timeout))]
fn lane_status(
    py: Python<'_>,
    state: PathBuf,
    id: &str,
    scheduler_timeout: Option<f64>,
) -> PyResult<String> {
    let sched = scheduler(scheduler_timeout)?;
    let state = StateDir::new(&state);
    let s = detached(py, || lane::status(&state, id, &sched)).map_err(|e| errors::lane(py, &e))?;
    serde_json::to_string_pretty(&s)
        .map_err(|e| errors::raise(py, Kind::Base, e.to_string(), Detail::default()))
}

/// `lane list`: every execution's `lane.json`.
#[pyfunction]
fn lane_list(py: Python<'_>, state: PathBuf) -> String {
    let state = StateDir::new(&state);
    let all = detached(py, || lane::list(&state));
    serde_json::to_string(&all).unwrap_or_else(|_| "[]".into())
}

/// Runs the `benchops-exec` CLI with `argv` (program name first) and
/// returns its exit code: the package's console script.
#[pyfunction]
fn cli_main(py: Python<'_>, argv: Vec<String>) -> u8 {
    detached(py, || benchops_exec::cmd::main_with_args(argv))
}

/// The package version (the workspace's).
const VERSION: &str = env!("CARGO_PKG_VERSION");

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", VERSION)?;
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(submit, m)?)?;
    m.add_function(wrap_pyfunction!(resolve, m)?)?;
    m.add_function(wrap_pyfunction!(refresh, m)?)?;
    m.add_function(wrap_pyfunction!(failures, m)?)?;
    m.add_function(wrap_pyfunction!(analyze, m)?)?;
    m.add_function(wrap_pyfunction!(cancel, m)?)?;
    m.add_function(wrap_pyfunction!(list, m)?)?;
    m.add_function(wrap_pyfunction!(seal, m)?)?;
    m.add_function(wrap_pyfunction!(lane_run, m)?)?;
    m.add_function(wrap_pyfunction!(lane_advance, m)?)?;
    m.add_function(wrap_pyfunction!(lane_status, m)?)?;
    m.add_function(wrap_pyfunction!(lane_list, m)?)?;
    m.add_function(wrap_pyfunction!(cli_main, m)?)?;
    Ok(())
}
