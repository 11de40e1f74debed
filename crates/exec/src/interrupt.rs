//! Ctrl-C while a command waits (`bench run`, `lane run --wait`, `lane
//! bisect --wait`, `compare`): the wait ends, never the work. Local
//! workers run in their own session and Slurm jobs on the cluster, so
//! `SIGINT` reaches only the waiting process; this module makes it leave
//! cleanly: it clears the progress bar's line, says what keeps running and
//! how to resume, and exits with [`INTERRUPTED`].
//!
//! No signal handler is installed: [`arm`] blocks `SIGINT` in the calling
//! thread (threads started later inherit the block) and one thread takes it
//! with `sigwait`. Commands spawned by the standard library start with an
//! empty signal mask, so no child inherits the block.

use std::io::{IsTerminal as _, Write as _};
use std::sync::{Mutex, OnceLock};

use nix::sys::signal::{SigSet, Signal};

/// The exit status of a wait ended by Ctrl-C (128 + `SIGINT`, as shells
/// report it).
pub const INTERRUPTED: u8 = 130;

/// What to say when interrupted; `None` until armed.
static HINT: Mutex<Option<String>> = Mutex::new(None);

/// Whether the waiting thread is started.
static ARMED: OnceLock<()> = OnceLock::new();

/// Arms Ctrl-C for this process with `hint` (what keeps running and how to
/// resume), or replaces the hint when it is armed. Call it from the main
/// thread before the waiting starts, and again once more is known (the
/// benchmark digest, the execution id).
pub fn arm(hint: impl Into<String>) {
    if let Ok(mut h) = HINT.lock() {
        *h = Some(hint.into());
    }
    ARMED.get_or_init(|| {
        let mut set = SigSet::empty();
        set.add(Signal::SIGINT);
        if set.thread_block().is_err() {
            // Without the block, Ctrl-C keeps its default: the process
            // ends, and the work goes on all the same.
            return;
        }
        let _ = std::thread::Builder::new()
            .name("interrupt".into())
            .spawn(move || {
                if set.wait().is_ok() {
                    leave();
                }
            });
    });
}

/// Clears the progress bar's line, says how to resume, and exits.
fn leave() -> ! {
    let hint = HINT.lock().ok().and_then(|h| h.clone()).unwrap_or_default();
    let mut err = std::io::stderr().lock();
    // Erase the line the bar is drawn on; say why the wait ended.
    if std::io::stderr().is_terminal() {
        let _ = write!(err, "\r\x1b[2K");
    }
    let _ = writeln!(err, "interrupted: {hint}");
    let _ = err.flush();
    std::process::exit(i32::from(INTERRUPTED));
}
