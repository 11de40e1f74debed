//! Reading many records out of the local store while they are verified:
//! one `git cat-file --batch --buffer` whose answers are parsed as they
//! arrive and handed, in batches, to verifier threads. Reading back a
//! large history costs git's inflating and benchops' verifying; run one
//! after the other they add up, run side by side they overlap.
//!
//! Three kinds of thread share the work: a writer feeding git the ids (git
//! answers before it has read them all, so writing them first could block
//! both processes), the caller's thread parsing git's output, and the
//! verifiers. A malformed answer stops git and every thread before the
//! error is returned; nothing is left running.

use std::io::{self, BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Command, Stdio};
use std::sync::{Mutex, mpsc};

use benchops::Sha256Digest;
use benchops::seal::{SealedRecord, VerifyError, verify_owned};

use super::HistoryError;

/// Blobs per batch handed to a verifier.
const BATCH: usize = 256;

/// The most of a blob's announced size allocated before its bytes arrive
/// (a larger blob grows as it is read, so a wrong size cannot balloon).
const MAX_PREALLOC: usize = 1 << 20;

/// The most verifier threads.
const MAX_VERIFIERS: usize = 8;

/// The pipe from git is widened to this many bytes where the system
/// allows (Linux: up to `/proc/sys/fs/pipe-max-size`, 1 MiB by default):
/// with the default 64 KiB, git blocks and both sides switch every few
/// records.
const PIPE_BYTES: usize = 1 << 20;

/// Widens the pipe `fd` reads from to [`PIPE_BYTES`], best effort: a
/// system that refuses keeps the default size, which is only slower.
fn widen_pipe(fd: &impl std::os::fd::AsFd) {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        let size = i32::try_from(PIPE_BYTES).unwrap_or(i32::MAX);
        let _ = nix::fcntl::fcntl(fd, nix::fcntl::FcntlArg::F_SETPIPE_SZ(size));
    }
    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    let _ = fd;
}

/// One verdict per item, in order.
pub(crate) type Verdicts = Vec<Result<SealedRecord, VerifyError>>;

/// Reads the blob of every item with `git` (a command already pointed at
/// the repository) and verifies it against the item's digest, if given.
pub(crate) fn read_verified(
    mut git: Command,
    items: &[(&str, Option<&Sha256Digest>)],
) -> Result<Verdicts, HistoryError> {
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let args = ["cat-file", "--batch", "--buffer"];
    let shown = args.join(" ");
    let spawn_err = |source| HistoryError::Spawn {
        args: shown.clone(),
        source,
    };
    let unexpected = |output: String| HistoryError::UnexpectedOutput {
        args: shown.clone(),
        output,
    };
    let mut child = git
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_err)?;
    let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(spawn_err(io::Error::other("git's pipes were not opened")));
    };
    let mut ids = String::with_capacity(items.len() * 41);
    for (oid, _) in items {
        ids.push_str(oid);
        ids.push('\n');
    }
    let verifiers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .clamp(1, MAX_VERIFIERS);
    let (to_verify, batches) = mpsc::channel::<(usize, Vec<Vec<u8>>)>();
    let batches = Mutex::new(batches);
    let (done, verdicts) = mpsc::channel::<(usize, Verdicts)>();

    let parsed = std::thread::scope(|s| {
        let writer = s.spawn(move || stdin.write_all(ids.as_bytes()));
        let errors = s.spawn(move || {
            let mut text = Vec::new();
            let _ = stderr.by_ref().take(64 * 1024).read_to_end(&mut text);
            String::from_utf8_lossy(&text).trim().to_owned()
        });
        for _ in 0..verifiers {
            let done = done.clone();
            let batches = &batches;
            s.spawn(move || {
                loop {
                    let next = match batches.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => return,
                    };
                    let Ok((start, blobs)) = next else { return };
                    let out: Verdicts = blobs
                        .into_iter()
                        .zip(&items[start..])
                        .map(|(b, (_, digest))| verify_owned(b, *digest))
                        .collect();
                    if done.send((start, out)).is_err() {
                        return;
                    }
                }
            });
        }
        drop(done);

        widen_pipe(&stdout);
        let mut reader = BufReader::with_capacity(PIPE_BYTES, stdout);
        let mut header = Vec::new();
        let mut batch = Vec::with_capacity(BATCH);
        let mut start = 0;
        let mut failure = None;
        for (i, (oid, _)) in items.iter().enumerate() {
            header.clear();
            match reader.read_until(b'\n', &mut header) {
                Ok(0) => {
                    failure = Some(unexpected("a truncated header".to_owned()));
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    failure = Some(spawn_err(e));
                    break;
                }
            }
            let line = String::from_utf8_lossy(&header);
            let mut f = line.trim_end_matches('\n').split(' ');
            let (got, kind, size) = (f.next(), f.next(), f.next());
            let size = size.and_then(|s| s.parse::<usize>().ok());
            let Some(size) = size.filter(|_| got == Some(*oid) && kind == Some("blob")) else {
                failure = Some(unexpected(line.trim_end().chars().take(200).collect()));
                break;
            };
            // Read into spare capacity (no zero-fill first): the body and
            // its newline. The verifier keeps this very buffer in the
            // record it returns, so each blob is copied once, from the pipe.
            let mut body = Vec::with_capacity(size.min(MAX_PREALLOC) + 1);
            match (&mut reader).take(size as u64 + 1).read_to_end(&mut body) {
                Ok(n) if n == size + 1 => {}
                Ok(_) => {
                    failure = Some(unexpected("a truncated blob".to_owned()));
                    break;
                }
                Err(e) => {
                    failure = Some(spawn_err(e));
                    break;
                }
            }
            body.pop();
            batch.push(body);
            if batch.len() == BATCH || i + 1 == items.len() {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                let _ = to_verify.send((start, full));
                start = i + 1;
            }
        }
        drop(to_verify);
        if failure.is_some() {
            let _ = child.kill();
        }
        drop(reader);
        let status = child.wait();
        let written = writer.join();
        let stderr_text = errors.join().unwrap_or_default();
        let mut out: Vec<Option<Verdicts>> = Vec::new();
        out.resize_with(items.len().div_ceil(BATCH), || None);
        for (start, v) in verdicts.iter() {
            if let Some(slot) = out.get_mut(start / BATCH) {
                *slot = Some(v);
            }
        }
        if let Some(e) = failure {
            return Err(e);
        }
        match written {
            Ok(Ok(())) => {}
            // Git stopped reading early; its exit status says why.
            Ok(Err(e)) if e.kind() == io::ErrorKind::BrokenPipe => {}
            Ok(Err(e)) => return Err(spawn_err(e)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
        let status = status.map_err(spawn_err)?;
        if !status.success() {
            return Err(HistoryError::Git {
                args: shown.clone(),
                status: status.to_string(),
                stderr: stderr_text,
            });
        }
        Ok(out)
    })?;
    let mut all = Vec::with_capacity(items.len());
    for part in parsed {
        match part {
            Some(v) => all.extend(v),
            // A verifier that stopped would leave its batch unanswered.
            None => return Err(unexpected("a batch left unverified".to_owned())),
        }
    }
    Ok(all)
}

/// The bytes of every blob in `oids` that the repository `git` points at
/// holds, in order; `None` for an id it does not have (`<id> missing`).
/// Each blob found is checked against its id (`sha256`: the repository's
/// object format), so a damaged object store cannot pass off other bytes.
/// One `git cat-file --batch --buffer`, the ids written by a writer thread
/// while the answers are read.
pub(crate) fn read_present(
    mut git: Command,
    oids: &[&str],
    sha256: bool,
) -> Result<Vec<Option<Vec<u8>>>, HistoryError> {
    if oids.is_empty() {
        return Ok(Vec::new());
    }
    let args = ["cat-file", "--batch", "--buffer"];
    let shown = args.join(" ");
    let spawn_err = |source| HistoryError::Spawn {
        args: shown.clone(),
        source,
    };
    let unexpected = |output: String| HistoryError::UnexpectedOutput {
        args: shown.clone(),
        output,
    };
    let mut child = git
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(spawn_err)?;
    let (Some(mut stdin), Some(stdout), Some(mut stderr)) =
        (child.stdin.take(), child.stdout.take(), child.stderr.take())
    else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(spawn_err(io::Error::other("git's pipes were not opened")));
    };
    let mut ids = String::with_capacity(oids.len() * 41);
    for oid in oids {
        ids.push_str(oid);
        ids.push('\n');
    }
    std::thread::scope(|s| {
        let writer = s.spawn(move || stdin.write_all(ids.as_bytes()));
        let errors = s.spawn(move || {
            let mut text = Vec::new();
            let _ = stderr.by_ref().take(64 * 1024).read_to_end(&mut text);
            String::from_utf8_lossy(&text).trim().to_owned()
        });
        widen_pipe(&stdout);
        let mut reader = BufReader::with_capacity(PIPE_BYTES, stdout);
        let mut out = Vec::with_capacity(oids.len());
        let mut header = Vec::new();
        let mut failure = None;
        for oid in oids {
            header.clear();
            match reader.read_until(b'\n', &mut header) {
                Ok(0) => {
                    failure = Some(unexpected("a truncated header".to_owned()));
                    break;
                }
                Ok(_) => {}
                Err(e) => {
                    failure = Some(spawn_err(e));
                    break;
                }
            }
            let line = String::from_utf8_lossy(&header).trim_end().to_owned();
            if line == format!("{oid} missing") {
                out.push(None);
                continue;
            }
            let mut f = line.split(' ');
            let (got, kind, size) = (f.next(), f.next(), f.next());
            let size = size.and_then(|s| s.parse::<usize>().ok());
            let Some(size) = size.filter(|_| got == Some(*oid) && kind == Some("blob")) else {
                failure = Some(unexpected(line.chars().take(200).collect()));
                break;
            };
            let mut body = vec![0; size + 1];
            if let Err(e) = reader.read_exact(&mut body) {
                failure = Some(match e.kind() {
                    io::ErrorKind::UnexpectedEof => unexpected("a truncated blob".to_owned()),
                    _ => spawn_err(e),
                });
                break;
            }
            body.pop();
            if crate::sweep::ports::git_blob_id(&body, sha256) != *oid {
                failure = Some(unexpected(format!(
                    "the object {oid} does not hash to its id"
                )));
                break;
            }
            out.push(Some(body));
        }
        if failure.is_some() {
            let _ = child.kill();
        }
        drop(reader);
        let status = child.wait();
        let written = writer.join();
        let stderr_text = errors.join().unwrap_or_default();
        if let Some(e) = failure {
            return Err(e);
        }
        match written {
            Ok(Ok(())) => {}
            Ok(Err(e)) if e.kind() == io::ErrorKind::BrokenPipe => {}
            Ok(Err(e)) => return Err(spawn_err(e)),
            Err(panic) => std::panic::resume_unwind(panic),
        }
        let status = status.map_err(spawn_err)?;
        if !status.success() {
            return Err(HistoryError::Git {
                args: shown.clone(),
                status: status.to_string(),
                stderr: stderr_text,
            });
        }
        Ok(out)
    })
}

/// Every blob of `tree` in the repository `git` points at, by path, or
/// `None` when the repository does not hold that tree. One `cat-file -e`
/// and one `ls-tree -r -z`.
pub(crate) fn list_tree(
    git: Command,
    tree: &str,
) -> Result<Option<std::collections::BTreeMap<String, String>>, HistoryError> {
    let spec = format!("{tree}^{{tree}}");
    let mut probe = clone_command(&git);
    let args = ["cat-file", "-e", spec.as_str()];
    probe.args(args);
    let out = super::command::run(probe, &args, None)?;
    if !out.status.success() {
        return Ok(None);
    }
    let args = ["ls-tree", "-r", "-z", "--full-tree", tree];
    let mut list = git;
    list.args(args);
    let out = super::command::run_checked(list, &args, None)?;
    let mut files = std::collections::BTreeMap::new();
    for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        let bad = || HistoryError::UnexpectedOutput {
            args: args.join(" "),
            output: String::from_utf8_lossy(entry).chars().take(200).collect(),
        };
        let text = std::str::from_utf8(entry).map_err(|_| bad())?;
        let (meta, path) = text.split_once('\t').ok_or_else(bad)?;
        let mut f = meta.split(' ');
        let (_mode, kind, oid) = (f.next(), f.next(), f.next().ok_or_else(bad)?);
        if kind == Some("blob") {
            files.insert(path.to_owned(), oid.to_owned());
        }
    }
    Ok(Some(files))
}

/// A new command with `c`'s program, arguments, directory and environment.
fn clone_command(c: &Command) -> Command {
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
