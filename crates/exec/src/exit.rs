//! The exit codes of `benchops-exec`, one named constant per meaning.
//!
//! The table of every code, its meaning and the commands that use it is
//! `docs/cli/exit-codes.md`. The numbers do not change: scripts read them,
//! and so does Slurm, which records the exit code of every array task.

/// The command did what was asked. `bench status` and `bench analyze`
/// exit with it even when children failed (they only look): read the
/// counts. A run that saw a child fail does not (see [`ATTENTION`]).
pub const OK: u8 = 0;

/// `bench run`, `lane run --wait` and `lane advance` that sealed: done, but
/// a child run did not succeed. Standard error names each failing case with
/// the first lines of its standard error; a failed run never exits 0.
pub const ATTENTION: u8 = 1;

/// `seal`: the draft is not a valid `benchmark-result/v1` record (every
/// problem is listed on standard error).
pub const INVALID_DRAFT: u8 = 1;

/// `child`: the command did not succeed (non-zero exit, signal, timeout,
/// could not start), or its attempt was cancelled before it started.
pub const CHILD_FAILED: u8 = 1;

/// Any error: bad arguments, a bad intent, an unknown benchmark, unreadable
/// or unwritable state, a Slurm tool that failed, a benchmark that cannot be
/// sealed, or a wrapper that could not do its work.
pub const ERROR: u8 = 2;

/// `lane due`: no lane's latest slot needed a lane run (nothing started,
/// nothing moved on). A timer that calls it every minute counts it as
/// success (`SuccessExitStatus=4`).
pub const NOTHING_DUE: u8 = 4;

/// `handoff`: a record was refused by the App or failed a check here (not
/// sent); a person must look. Other records may have been delivered.
pub const HANDOFF_REFUSED: u8 = 1;

/// `handoff`: a record could not be delivered after every try (the App
/// unreachable, busy or failing); it stays in place: run again later.
pub const HANDOFF_UNDELIVERED: u8 = 3;

/// `gc`: done, but what must be kept (unsealed and newest executions,
/// running children, trees in use) does not fit in `--max-bytes`; the rest
/// was removed. A person must look.
pub const GC_OVER_BUDGET: u8 = 1;

/// `platform`: a measured row failed (the rows are written).
pub const PLATFORM_FAILED: u8 = 1;

/// `platform`: every row was skipped (each says why); nothing was measured.
pub const PLATFORM_ALL_SKIPPED: u8 = 3;

/// `compare`: every key was compared, and the candidate (side B) is slower
/// than the baseline (side A) on at least one: a confirmed regression.
pub const SLOWER: u8 = 1;

/// `compare`: the comparison could not be made: a run of either side did
/// not succeed (standard error names each case and side with the first
/// lines of its standard error), or a key could not be compared. The same
/// number as [`ERROR`]: neither is a verdict.
pub const NOT_COMPARED: u8 = 2;
