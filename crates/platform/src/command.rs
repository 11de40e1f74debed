//! Running one command of the `cli` driver, timed on the run's clock, with
//! its output accounted the way an agent would pay for it.
//!
//! The child gets a clean environment (`PATH`, `HOME`, `LANG=C.UTF-8`,
//! `TZ=UTC`, a fixed git identity, and the variables the driver passes,
//! such as the subject token for `gh`), its standard input closed, and a
//! timeout after which it is killed. Both outputs are drained by threads:
//! everything is counted (`raw_output_bytes`), at most `admitted`
//! characters of each are kept (what an agent reads), and whether either
//! was cut is reported. The token estimates come from the command line as
//! typed and the admitted output ([`super::row::Tokens::measured`]). At the
//! timeout its whole process group is killed.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use super::clock::RunClock;
use super::row::{Row, Tokens, ms};

/// What a command did.
#[derive(Debug, Clone, PartialEq)]
pub struct Capture {
    /// Its duration on the run's clock.
    pub elapsed_ms: f64,
    /// Its exit code; `None` when it could not start, was killed at the
    /// timeout, or died of a signal.
    pub code: Option<i32>,
    /// The admitted part of its standard output.
    pub stdout: String,
    /// The admitted part of its standard error.
    pub stderr: String,
    /// All the bytes it printed.
    pub raw_bytes: u64,
    /// Whether either output was cut.
    pub truncated: bool,
    /// Why it has no exit code, if so.
    pub error: Option<String>,
}

impl Capture {
    /// Whether it exited 0.
    pub fn ok(&self) -> bool {
        self.code == Some(0)
    }
}

/// The command as an agent would type it.
pub fn display(command: &[String]) -> String {
    command
        .iter()
        .map(|a| {
            if a.is_empty()
                || a.chars()
                    .any(|c| c.is_whitespace() || "'\"$`\\".contains(c))
            {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn drain(
    mut r: impl std::io::Read + Send + 'static,
    keep: usize,
) -> std::thread::JoinHandle<(Vec<u8>, u64)> {
    std::thread::spawn(move || {
        let mut kept = Vec::new();
        let mut total = 0u64;
        let mut buf = [0u8; 8192];
        loop {
            match r.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    total += n as u64;
                    let room = keep.saturating_sub(kept.len());
                    kept.extend_from_slice(&buf[..n.min(room)]);
                }
            }
        }
        (kept, total)
    })
}

fn admitted(bytes: &[u8], chars: usize) -> (String, bool) {
    let text = String::from_utf8_lossy(bytes);
    let n = text.chars().count();
    (text.chars().take(chars).collect(), n > chars)
}

/// Runs `command` in `cwd` with `env` (added to the clean base), at most
/// `timeout` long.
pub fn run(
    clock: &dyn RunClock,
    command: &[String],
    cwd: &Path,
    env: &BTreeMap<String, String>,
    admitted_chars: usize,
    timeout: Duration,
) -> Capture {
    let start = clock.monotonic();
    let fail = |error: String| Capture {
        elapsed_ms: ms((clock.monotonic() - start).as_secs_f64() * 1000.0),
        code: None,
        stdout: String::new(),
        stderr: String::new(),
        raw_bytes: 0,
        truncated: false,
        error: Some(error),
    };
    let Some((program, args)) = command.split_first() else {
        return fail("an empty command".into());
    };
    let mut c = Command::new(program);
    c.args(args)
        .current_dir(cwd)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env(
            "HOME",
            std::env::var_os("HOME").unwrap_or_else(|| "/".into()),
        )
        .env("LANG", "C.UTF-8")
        .env("TZ", "UTC")
        .env("GIT_AUTHOR_NAME", "benchops platform lane")
        .env("GIT_AUTHOR_EMAIL", "platform-lane@benchops.invalid")
        .env("GIT_COMMITTER_NAME", "benchops platform lane")
        .env("GIT_COMMITTER_EMAIL", "platform-lane@benchops.invalid")
        .envs(env)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    // Its own process group, so that a timeout kills what it started too
    // (a shell's children would otherwise hold the pipes open).
    std::os::unix::process::CommandExt::process_group(&mut c, 0);
    let mut child = match c.spawn() {
        Ok(ch) => ch,
        Err(e) => return fail(format!("{program}: {e}")),
    };
    // Bytes kept: 4 per admitted character at most (UTF-8).
    let keep = admitted_chars.saturating_mul(4);
    let out = child.stdout.take().map(|o| drain(o, keep));
    let err = child.stderr.take().map(|e| drain(e, keep));
    let mut killed = false;
    let status = loop {
        match child.try_wait() {
            Ok(Some(s)) => break Some(s),
            Ok(None) if clock.monotonic() - start >= timeout => {
                if let Ok(pid) = i32::try_from(child.id()) {
                    let _ = nix::sys::signal::killpg(
                        nix::unistd::Pid::from_raw(pid),
                        nix::sys::signal::Signal::SIGKILL,
                    );
                }
                let _ = child.kill();
                killed = true;
                break child.wait().ok();
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(2)),
            Err(_) => break None,
        }
    };
    let elapsed_ms = ms((clock.monotonic() - start).as_secs_f64() * 1000.0);
    let (o, o_total) = out.and_then(|h| h.join().ok()).unwrap_or_default();
    let (e, e_total) = err.and_then(|h| h.join().ok()).unwrap_or_default();
    let (stdout, cut_o) = admitted(&o, admitted_chars);
    let (stderr, cut_e) = admitted(&e, admitted_chars);
    let code = if killed {
        None
    } else {
        status.and_then(|s| s.code())
    };
    let error = if killed {
        Some(format!(
            "killed after the {} s timeout",
            timeout.as_secs_f64()
        ))
    } else if code.is_none() {
        Some("ended by a signal".into())
    } else {
        None
    };
    Capture {
        elapsed_ms,
        code,
        stdout,
        stderr,
        raw_bytes: o_total + e_total,
        truncated: cut_o || cut_e || o_total as usize > keep || e_total as usize > keep,
        error,
    }
}

/// A row for a sequence of commands run one after the other, stopping at
/// the first that fails: its duration, the commands that ran, one tool
/// call each, and the token estimates of what was typed and read.
pub fn sequence_row(
    row: &mut Row,
    clock: &dyn RunClock,
    commands: &[Vec<String>],
    cwd: &Path,
    env: &BTreeMap<String, String>,
    admitted_chars: usize,
    timeout: Duration,
) -> Vec<Capture> {
    let start = clock.now_ms();
    let mut caps = Vec::new();
    for cmd in commands {
        let cap = run(clock, cmd, cwd, env, admitted_chars, timeout);
        let ok = cap.ok();
        caps.push(cap);
        if !ok {
            break;
        }
    }
    row.elapsed_ms = ms(clock.now_ms() - start);
    row.command = commands[..caps.len()]
        .iter()
        .map(|c| display(c).into())
        .collect();
    row.tool_call_count = Some(caps.len() as u32);
    let typed: usize = commands[..caps.len()]
        .iter()
        .map(|c| display(c).chars().count())
        .sum();
    let read: usize = caps
        .iter()
        .map(|c| c.stdout.chars().count() + c.stderr.chars().count())
        .sum();
    row.tokens = Some(Tokens::measured(
        typed,
        read,
        caps.iter().map(|c| c.raw_bytes).sum(),
        caps.iter().any(|c| c.truncated),
    ));
    if let Some(last) = caps.last().filter(|c| !c.ok()) {
        row.returncode = Some(last.code.unwrap_or(1).max(1));
        let why = last.error.clone().unwrap_or_else(|| last.stderr.clone());
        row.stderr = Some(super::row::tail(&why));
    }
    caps
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SystemClock;

    fn sh(script: &str) -> Vec<String> {
        vec!["/bin/sh".into(), "-c".into(), script.into()]
    }

    #[test]
    fn output_is_counted_in_full_and_admitted_in_part() {
        let c = SystemClock::new();
        let cap = run(
            &c,
            &sh("printf '0123456789'; printf 'err' >&2"),
            Path::new("/"),
            &BTreeMap::new(),
            4,
            Duration::from_secs(10),
        );
        assert_eq!(cap.code, Some(0));
        assert_eq!(cap.stdout, "0123");
        assert_eq!(cap.raw_bytes, 13);
        assert!(cap.truncated);
    }

    #[test]
    fn the_environment_is_clean_and_a_timeout_kills() {
        let c = SystemClock::new();
        let env = BTreeMap::from([("GIVEN".to_owned(), "yes".to_owned())]);
        // SAFETY-free check: a variable of this process does not leak.
        let cap = run(
            &c,
            &sh("echo ${GIVEN:-no} ${CARGO_PKG_NAME:-clean}"),
            Path::new("/"),
            &env,
            100,
            Duration::from_secs(10),
        );
        assert_eq!(cap.stdout.trim(), "yes clean");
        let cap = run(
            &c,
            &sh("sleep 5"),
            Path::new("/"),
            &env,
            100,
            Duration::from_millis(200),
        );
        assert_eq!(cap.code, None);
        assert!(cap.error.as_deref().is_some_and(|e| e.contains("timeout")));
        let cap = run(
            &c,
            &["/no/such/binary".to_owned()],
            Path::new("/"),
            &env,
            100,
            Duration::from_secs(1),
        );
        assert!(cap.error.is_some() && cap.code.is_none());
    }

    #[test]
    fn display_quotes_what_a_shell_would_need() {
        assert_eq!(
            display(&["git".into(), "commit".into(), "-m".into(), "a b".into()]),
            "git commit -m 'a b'"
        );
    }
}
