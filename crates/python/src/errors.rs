//! The exec library's errors as the package's exceptions.
//!
//! The classes live in `benchops/errors.py` (so they can carry `file`,
//! `key` and `issues` attributes and be subclassed in Python); this module
//! picks the class for each error and raises it with the whole message
//! chain, the file and the key path the error names.

use benchops::intent::IntentError;
use benchops_exec::backend::BackendError;
use benchops_exec::bench::{self, BenchError};
use benchops_exec::lane::LaneError;
use benchops_exec::result::SealBenchError;
use benchops_exec::state::StateError;
use pyo3::prelude::*;

/// The exception classes of `benchops.errors`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `BenchopsError`, the base.
    Base,
    /// `IntentError`: the intent or manifest is unreadable or invalid.
    Intent,
    /// `StateError`: the state directory lacks or contradicts something.
    State,
    /// `SchedulerError`: the backend could not launch, observe or stop.
    Scheduler,
    /// `SealError`: the record could not be sealed, signed or written.
    Seal,
}

impl Kind {
    fn class(self) -> &'static str {
        match self {
            Kind::Base => "BenchopsError",
            Kind::Intent => "IntentError",
            Kind::State => "StateError",
            Kind::Scheduler => "SchedulerError",
            Kind::Seal => "SealError",
        }
    }
}

/// What an exception carries besides its class.
#[derive(Debug, Default)]
pub struct Detail {
    /// The file the error names.
    pub file: Option<String>,
    /// The key path (`$.matrix.size[2]`) of the first problem.
    pub key: Option<String>,
    /// Every problem, as (key path, reason) pairs, when there are several.
    pub issues: Vec<(String, String)>,
}

/// Builds the exception: `cls(message, file=…, key=…, issues=…)`.
pub fn raise(py: Python<'_>, kind: Kind, message: String, detail: Detail) -> PyErr {
    let made = (|| -> PyResult<PyErr> {
        let module = py.import("benchops.errors")?;
        let cls = module.getattr(kind.class())?;
        let kwargs = pyo3::types::PyDict::new(py);
        kwargs.set_item("file", detail.file)?;
        kwargs.set_item("key", detail.key)?;
        kwargs.set_item("issues", detail.issues)?;
        let exc = cls.call((message,), Some(&kwargs))?;
        Ok(PyErr::from_value(exc))
    })();
    // The package's own module is missing only in a broken install; say so
    // with the original message rather than hide it.
    made.unwrap_or_else(|e| e)
}

/// The message of `e` with its causes, as the CLI prints it.
pub fn chain(e: &dyn std::error::Error) -> String {
    bench::error_chain(e)
}

fn intent_detail(e: &IntentError) -> Detail {
    match e {
        IntentError::Toml { source_name, .. } => Detail {
            file: Some(source_name.clone()),
            ..Detail::default()
        },
        IntentError::Invalid {
            source_name,
            issues,
        } => Detail {
            file: Some(source_name.clone()),
            key: issues.first().map(|i| i.path.to_string()),
            issues: issues
                .iter()
                .map(|i| (i.path.to_string(), i.reason.clone()))
                .collect(),
        },
    }
}

fn state_detail(e: &StateError) -> Detail {
    let file = match e {
        StateError::Read { path, .. } => Some(path.display().to_string()),
        _ => None,
    };
    Detail {
        file,
        ..Detail::default()
    }
}

fn backend_kind(e: &BackendError) -> (Kind, Detail) {
    match e {
        BackendError::State(s) => (Kind::State, state_detail(s)),
        _ => (Kind::Scheduler, Detail::default()),
    }
}

/// The class and detail of a bench error.
pub fn bench_kind(e: &BenchError) -> (Kind, Detail) {
    match e {
        BenchError::ReadIntent { path, .. } => (
            Kind::Intent,
            Detail {
                file: Some(path.display().to_string()),
                ..Detail::default()
            },
        ),
        BenchError::Intent(i) => (Kind::Intent, intent_detail(i)),
        BenchError::Plan(_) => (Kind::Intent, Detail::default()),
        BenchError::State(s) => (Kind::State, state_detail(s)),
        BenchError::Backend(b) => backend_kind(b),
        BenchError::NoSuchChild { .. }
        | BenchError::DigestMismatch { .. }
        | BenchError::NotSubmitted(_)
        | BenchError::Lock { .. } => (Kind::State, Detail::default()),
        BenchError::Child(_) => (Kind::Base, Detail::default()),
    }
}

/// Raises a bench error.
pub fn bench(py: Python<'_>, e: &BenchError) -> PyErr {
    let (kind, detail) = bench_kind(e);
    raise(py, kind, chain(e), detail)
}

/// Raises a state error (an unknown or ambiguous digest, for one).
pub fn state(py: Python<'_>, e: &StateError) -> PyErr {
    raise(py, Kind::State, chain(e), state_detail(e))
}

/// Raises the error of sealing a benchmark.
pub fn seal_bench(py: Python<'_>, e: &SealBenchError) -> PyErr {
    match e {
        SealBenchError::Bench(b) => bench(py, b),
        other => raise(py, Kind::Seal, chain(other), Detail::default()),
    }
}

/// Raises a lane error.
pub fn lane(py: Python<'_>, e: &LaneError) -> PyErr {
    let file = |p: &std::path::Path| Detail {
        file: Some(p.display().to_string()),
        ..Detail::default()
    };
    let (kind, detail) = match e {
        LaneError::ReadManifest { path, .. } => (Kind::Intent, file(path)),
        LaneError::NoSuite(path) => (
            Kind::Intent,
            Detail {
                key: Some("$.suite".into()),
                ..file(path)
            },
        ),
        LaneError::UnknownLane { manifest, .. } => (
            Kind::Intent,
            Detail {
                key: Some("$.lanes".into()),
                ..file(manifest)
            },
        ),
        LaneError::Intent {
            manifest, index, ..
        } => (
            Kind::Intent,
            Detail {
                key: Some(format!("$.suite[{index}]")),
                ..file(manifest)
            },
        ),
        LaneError::Manifest(_)
        | LaneError::NothingCovered(_)
        | LaneError::Slot(_)
        | LaneError::UnreportedMetric { .. } => (Kind::Intent, Detail::default()),
        LaneError::Bench(b) => bench_kind(b),
        LaneError::State(s) => (Kind::State, state_detail(s)),
        LaneError::NotFound(_) | LaneError::Ambiguous(_) | LaneError::Busy(_) => {
            (Kind::State, Detail::default())
        }
        LaneError::Backend(b) => backend_kind(b),
        LaneError::Seal(_) | LaneError::Write(_) | LaneError::SignKey(_) => {
            (Kind::Seal, Detail::default())
        }
        LaneError::Credentials(_)
        | LaneError::History(_)
        | LaneError::Subject(_)
        | LaneError::BuildFailed(_)
        | LaneError::Select(_) => (Kind::Base, Detail::default()),
    };
    raise(py, kind, chain(e), detail)
}
