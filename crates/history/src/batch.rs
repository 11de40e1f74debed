//! The one reader of git objects: [`cat_file`], one
//! `git cat-file --batch --buffer` whose answers are parsed as they arrive
//! and handed, one by one, to the caller. Its three uses:
//!
//! - [`read_blobs`]: every object must be there;
//! - [`read_present`]: an object the repository lacks is `None`, and each
//!   one found must hash to its id (a damaged object store cannot pass off
//!   other bytes);
//! - [`read_verified`]: every blob verified as a sealed record on verifier
//!   threads, in batches, while git still reads. Reading back a large
//!   history costs git's inflating and benchops' verifying; run one after
//!   the other they add up, run side by side they overlap.
//!
//! Reading is bounded: git's stderr is read up to 64 KiB, a blob's
//! announced size is allocated up to 1 MiB before its bytes arrive (a
//! larger blob grows as it is read, so a wrong size cannot balloon), and
//! only the ids asked for are read. Three kinds of thread share the work:
//! a writer feeding git the ids (git answers before it has read them all,
//! so writing them first could block both processes), the caller's thread
//! parsing git's output, and (for [`read_verified`]) the verifiers. A
//! malformed answer stops git and every thread before the error is
//! returned; nothing is left running.

use std::io::{self, BufRead as _, BufReader, Read as _, Write as _};
use std::process::{Command, Stdio};
use std::sync::{Mutex, mpsc};

use benchops::Sha256Digest;
use benchops::seal::{SealedRecord, VerifyError, verify_owned};

use crate::command::stderr_text;
use crate::error::HistoryError;
use crate::object::git_blob_id;

/// Blobs per batch handed to a verifier.
const BATCH: usize = 256;

/// The most of a blob's announced size allocated before its bytes arrive
/// (a larger blob grows as it is read, so a wrong size cannot balloon).
const MAX_PREALLOC: usize = 1 << 20;

/// The most of git's stderr read.
const MAX_STDERR_READ: u64 = 64 * 1024;

/// The most verifier threads.
const MAX_VERIFIERS: usize = 8;

/// The pipe from git is widened to this many bytes where the system
/// allows (Linux: up to `/proc/sys/fs/pipe-max-size`, 1 MiB by default):
/// with the default 64 KiB, git blocks and both sides switch every few
/// records.
const PIPE_BYTES: usize = 1 << 20;

/// The arguments of the reader.
const ARGS: [&str; 3] = ["cat-file", "--batch", "--buffer"];

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

fn spawn_err(source: io::Error) -> HistoryError {
    HistoryError::Spawn {
        args: ARGS.join(" "),
        source,
    }
}

fn unexpected(output: String) -> HistoryError {
    HistoryError::UnexpectedOutput {
        args: ARGS.join(" "),
        output,
    }
}

/// Reads the objects `ids` with one `git cat-file --batch --buffer` run by
/// `git` (a command already pointed at the repository), and calls
/// `each(i, answer)` on this thread for each id in order, as git answers:
/// `Some(bytes)` for a blob, `None` when the repository does not have the
/// object. An answer for another id, or of an object that is not a blob, a
/// truncated answer, or an error `each` returns stops git (killed and
/// waited for) and is returned; so is git's failure.
pub(crate) fn cat_file(
    mut git: Command,
    ids: &[&str],
    mut each: impl FnMut(usize, Option<Vec<u8>>) -> Result<(), HistoryError>,
) -> Result<(), HistoryError> {
    if ids.is_empty() {
        return Ok(());
    }
    let mut child = git
        .args(ARGS)
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
    let mut input = String::with_capacity(ids.len() * 41);
    for id in ids {
        input.push_str(id);
        input.push('\n');
    }
    std::thread::scope(|s| {
        let writer = s.spawn(move || stdin.write_all(input.as_bytes()));
        let errors = s.spawn(move || {
            let mut text = Vec::new();
            let _ = stderr.by_ref().take(MAX_STDERR_READ).read_to_end(&mut text);
            stderr_text(&text)
        });
        widen_pipe(&stdout);
        let mut reader = BufReader::with_capacity(PIPE_BYTES, stdout);
        let mut header = Vec::new();
        let mut failure = None;
        for (i, id) in ids.iter().enumerate() {
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
            let line = line.trim_end_matches('\n');
            let answer = if line.strip_suffix(" missing") == Some(*id) {
                None
            } else {
                let mut f = line.split(' ');
                let (got, kind, size) = (f.next(), f.next(), f.next());
                let size = size.and_then(|s| s.parse::<usize>().ok());
                let Some(size) = size.filter(|_| got == Some(*id) && kind == Some("blob")) else {
                    failure = Some(unexpected(line.trim_end().chars().take(200).collect()));
                    break;
                };
                // Read into spare capacity (no zero-fill first): the body
                // and its newline. The caller may keep this very buffer
                // (the verifier keeps it in the record it returns), so each
                // blob is copied once, from the pipe.
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
                Some(body)
            };
            if let Err(e) = each(i, answer) {
                failure = Some(e);
                break;
            }
        }
        if failure.is_some() {
            let _ = child.kill();
        }
        drop(reader);
        let status = child.wait();
        let written = writer.join();
        let stderr = errors.join().unwrap_or_default();
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
                args: ARGS.join(" "),
                status: status.to_string(),
                stderr,
            });
        }
        Ok(())
    })
}

/// The bytes of every blob in `ids`, in order; an id the repository does
/// not have is an error.
pub(crate) fn read_blobs(git: Command, ids: &[&str]) -> Result<Vec<Vec<u8>>, HistoryError> {
    let mut out = Vec::with_capacity(ids.len());
    cat_file(git, ids, |i, answer| match answer {
        Some(bytes) => {
            out.push(bytes);
            Ok(())
        }
        None => Err(unexpected(format!("{} missing", ids[i]))),
    })?;
    Ok(out)
}

/// The bytes of every blob in `ids`, in order; `None` for an id the
/// repository does not have. Each blob found is checked against its id
/// (`sha256`: the repository's object format), so a damaged object store
/// cannot pass off other bytes.
pub(crate) fn read_present(
    git: Command,
    ids: &[&str],
    sha256: bool,
) -> Result<Vec<Option<Vec<u8>>>, HistoryError> {
    let mut out = Vec::with_capacity(ids.len());
    cat_file(git, ids, |i, answer| {
        if let Some(bytes) = &answer
            && git_blob_id(bytes, sha256) != ids[i]
        {
            return Err(unexpected(format!(
                "the object {} does not hash to its id",
                ids[i]
            )));
        }
        out.push(answer);
        Ok(())
    })?;
    Ok(out)
}

/// One verdict per item, in order.
pub type Verdicts = Vec<Result<SealedRecord, VerifyError>>;

/// Reads the blob of every item and verifies it as a sealed record against
/// the item's digest, if given, on verifier threads while git still reads.
pub(crate) fn read_verified(
    git: Command,
    items: &[(&str, Option<&Sha256Digest>)],
) -> Result<Verdicts, HistoryError> {
    if items.is_empty() {
        return Ok(Vec::new());
    }
    let ids: Vec<&str> = items.iter().map(|(id, _)| *id).collect();
    let verifiers = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .clamp(1, MAX_VERIFIERS);
    let (to_verify, batches) = mpsc::channel::<(usize, Vec<Vec<u8>>)>();
    let batches = Mutex::new(batches);
    let (done, verdicts) = mpsc::channel::<(usize, Verdicts)>();

    let parsed = std::thread::scope(|s| {
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

        let mut batch = Vec::with_capacity(BATCH);
        let mut start = 0;
        let read = cat_file(git, &ids, |i, answer| {
            let Some(body) = answer else {
                return Err(unexpected(format!("{} missing", ids[i])));
            };
            batch.push(body);
            if batch.len() == BATCH || i + 1 == ids.len() {
                let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                let _ = to_verify.send((start, full));
                start = i + 1;
            }
            Ok(())
        });
        // The verifiers end once every batch sent is verified.
        drop(to_verify);
        let mut out: Vec<Option<Verdicts>> = Vec::new();
        out.resize_with(items.len().div_ceil(BATCH), || None);
        for (start, v) in verdicts.iter() {
            if let Some(slot) = out.get_mut(start / BATCH) {
                *slot = Some(v);
            }
        }
        read.map(|()| out)
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
