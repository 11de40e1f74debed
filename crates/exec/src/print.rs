//! How `benchops-exec` writes: the result on standard output, errors and
//! notes on standard error, through the writers of
//! [`benchops_cli::output`] (colour dropped where it is off, notes dropped
//! with `--quiet`). A reader that went away ends the output quietly.

use std::io::{self, Write as _};

use anyhow::Result;

/// Standard output was closed by its reader (`… | head`): the command
/// stops quietly, as Unix tools do.
#[derive(Debug, thiserror::Error)]
#[error("standard output was closed")]
pub(crate) struct StdoutClosed;

/// A write error of standard output: [`StdoutClosed`] for a closed pipe.
pub(crate) fn stdout_error(e: io::Error) -> anyhow::Error {
    if e.kind() == io::ErrorKind::BrokenPipe {
        StdoutClosed.into()
    } else {
        anyhow::Error::new(e).context("failed to write to standard output")
    }
}

/// Writes `bytes` to standard output (colour dropped where it is off:
/// [`benchops_cli::output`]).
pub(crate) fn out(bytes: impl AsRef<[u8]>) -> Result<()> {
    let mut o = benchops_cli::output::stdout().lock();
    o.write_all(bytes.as_ref())
        .and_then(|()| o.flush())
        .map_err(stdout_error)
}

/// Writes one line to standard output.
pub(crate) fn line(text: impl std::fmt::Display) -> Result<()> {
    out(format!("{text}\n"))
}

/// Writes to standard error, always (errors, and the summary of what
/// failed), with a leading `error:` painted; a closed standard error is
/// not worth failing for.
pub(crate) fn note(text: impl std::fmt::Display) {
    let text = benchops_cli::output::paint_error_prefix(&text.to_string());
    let _ = write!(benchops_cli::output::stderr().lock(), "{text}");
}

/// Writes a note on what happens (submitted, resuming, waiting) to
/// standard error, unless `--quiet`.
pub(crate) fn info(text: impl std::fmt::Display) {
    if !benchops_cli::output::quiet() {
        note(text);
    }
}
