//! Running `git`: a command with no inherited repository overrides
//! ([`bare_git`]), run with its input written from its own thread while its
//! output is drained ([`run`]), and checked for success ([`run_checked`]).
//! Every other module of the crate runs git through these.

use std::io::{self, Write as _};
use std::process::{Command, Output, Stdio};

use crate::error::HistoryError;

/// Variables that would point git at another repository, index or object
/// store; they are removed from every git call.
const GIT_ENV_OVERRIDES: [&str; 9] = [
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_QUARANTINE_PATH",
];

/// The most of what git printed on stderr that an error carries.
pub const MAX_STDERR_BYTES: usize = 4096;

/// The arguments as shown in errors.
pub(crate) fn args_text(args: &[&str]) -> String {
    args.join(" ")
}

/// `git` with no inherited repository overrides, and never a prompt for
/// credentials.
pub(crate) fn bare_git() -> Command {
    let mut c = Command::new("git");
    for v in GIT_ENV_OVERRIDES {
        c.env_remove(v);
    }
    c.env("GIT_TERMINAL_PROMPT", "0");
    c
}

/// What git printed on stderr, as an error carries it: trimmed, at most
/// [`MAX_STDERR_BYTES`] (cut at a character boundary).
pub(crate) fn stderr_text(stderr: &[u8]) -> String {
    let text = String::from_utf8_lossy(stderr);
    let text = text.trim();
    let mut end = text.len().min(MAX_STDERR_BYTES);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

/// Runs `c` (whose arguments `args` name it in errors) with `input` on its
/// standard input, and returns its output whatever its exit status.
pub(crate) fn run(
    mut c: Command,
    args: &[&str],
    input: Option<&[u8]>,
) -> Result<Output, HistoryError> {
    let spawn_err = |source| HistoryError::Spawn {
        args: args_text(args),
        source,
    };
    c.stdin(if input.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = c.spawn().map_err(spawn_err)?;
    let stdin = child.stdin.take();
    // The input is written from its own thread while this one drains
    // stdout and stderr: git may answer before it has read all of its
    // input (`fast-import` may report an error early), and writing it all
    // first would then fill both pipes and block both processes for good.
    // The writer drops stdin when done, which is git's end of input.
    std::thread::scope(|s| {
        let writer = match (input, stdin) {
            (Some(bytes), Some(mut stdin)) => Some(s.spawn(move || stdin.write_all(bytes))),
            _ => None,
        };
        let out = child.wait_with_output();
        let written = match writer.map(|w| w.join()) {
            None => Ok(()),
            Some(Ok(written)) => written,
            Some(Err(panic)) => std::panic::resume_unwind(panic),
        };
        match written {
            Ok(()) => {}
            // A broken pipe means git stopped early; its exit status says why.
            Err(e) if e.kind() == io::ErrorKind::BrokenPipe => {}
            Err(e) => return Err(spawn_err(e)),
        }
        out.map_err(spawn_err)
    })
}

/// [`run`], and an error when git exits unsuccessfully.
pub(crate) fn run_checked(
    c: Command,
    args: &[&str],
    input: Option<&[u8]>,
) -> Result<Vec<u8>, HistoryError> {
    let out = run(c, args, input)?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(HistoryError::Git {
            args: args_text(args),
            status: out.status.to_string(),
            stderr: stderr_text(&out.stderr),
        })
    }
}

/// A new command with `c`'s program, arguments, directory and environment.
pub(crate) fn clone_command(c: &Command) -> Command {
    let mut n = Command::new(c.get_program());
    n.args(c.get_args());
    if let Some(d) = c.get_current_dir() {
        n.current_dir(d);
    }
    for (k, v) in c.get_envs() {
        match v {
            Some(v) => n.env(k, v),
            None => n.env_remove(k),
        };
    }
    n
}
