//! Consuming directory handoffs: once a valid handoff's record is in
//! history, its file is moved out of the handoff directory into
//! `<dir>/.persisted/`, so the next sweep does not see it again (the way a
//! consumed handoff ref is deleted).
//!
//! The move is create-only and durable: the file is hard-linked under
//! `.persisted/` (which fails if the name is taken), the link is checked
//! to hold the handoff's digest, the directory is flushed, and only then is
//! the source unlinked and its directory flushed. A crash in between
//! leaves the file in both places; the next sweep finds its record present
//! and finishes the move. A file already under `.persisted/` with the same
//! bytes counts as moved; one with other bytes keeps the source in place,
//! reported. Handoff names carry their digest, so that only happens when
//! someone edited `.persisted/`.
//!
//! The reader of the handoff directory lists only `*.json` files directly
//! in it, so `.persisted/` is never read as handoffs.

use std::collections::BTreeSet;
use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};

use benchops::Sha256Digest;

use super::handoff::HandoffReport;

/// The directory, inside the handoff directory, that consumed handoffs
/// are moved to.
pub const PERSISTED_DIR: &str = ".persisted";

/// What became of one consumed handoff file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConsumeOutcome {
    /// Moved to `.persisted/`.
    Moved,
    /// The same bytes were already under `.persisted/`; the source was
    /// removed.
    AlreadyThere,
    /// Left in place, with why (its record is in history; the next sweep
    /// tries again).
    Left(String),
}

/// One handoff whose record is in history, and what became of its file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Consumed {
    /// The handoff file.
    pub source: PathBuf,
    /// Where it was moved to.
    pub to: PathBuf,
    /// What happened.
    pub outcome: ConsumeOutcome,
}

impl Consumed {
    /// Whether the source file is gone from the handoff directory.
    pub fn is_gone(&self) -> bool {
        !matches!(self.outcome, ConsumeOutcome::Left(_))
    }
}

fn flush_dir(dir: &Path) -> io::Result<()> {
    File::open(dir)?.sync_all()
}

/// The digest of a file's bytes, or None when it cannot be read or is not
/// a regular file of at most `limit` bytes (the handoff's own size: a
/// larger file holds other bytes without being read, and a FIFO is never
/// opened for reading).
fn digest_of(path: &Path, limit: u64) -> Option<Sha256Digest> {
    benchops::fsio::read_record_file(path, limit, benchops::fsio::Symlinks::Refuse)
        .ok()
        .map(|b| Sha256Digest::of(&b))
}

/// Moves every valid handoff of `dir` whose record is in `in_history` to
/// `dir/.persisted/`; see the module documentation. Failures never stop
/// the sweep: the file is left in place and reported.
pub fn consume_dir(
    dir: &Path,
    handoffs: &[HandoffReport],
    in_history: &BTreeSet<Sha256Digest>,
) -> Vec<Consumed> {
    let target_dir = dir.join(PERSISTED_DIR);
    let mut out = Vec::new();
    let mut made_dir = false;
    for h in handoffs {
        let Some(digest) = h.digest.filter(|d| h.valid() && in_history.contains(d)) else {
            continue;
        };
        let Some(name) = h.source.file_name() else {
            continue;
        };
        let to = target_dir.join(name);
        let outcome = if made_dir {
            move_one(&h.source, &to, &digest)
        } else if std::fs::symlink_metadata(&target_dir).is_ok_and(|m| !m.is_dir()) {
            ConsumeOutcome::Left(format!(
                "{} is not a directory (a symbolic link is not written through)",
                target_dir.display()
            ))
        } else {
            match std::fs::create_dir_all(&target_dir).and_then(|()| flush_dir(dir)) {
                Ok(()) => {
                    made_dir = true;
                    move_one(&h.source, &to, &digest)
                }
                Err(e) => {
                    ConsumeOutcome::Left(format!("cannot create {}: {e}", target_dir.display()))
                }
            }
        };
        let outcome = match outcome {
            ConsumeOutcome::Moved | ConsumeOutcome::AlreadyThere => {
                match move_signature(&h.source, &to) {
                    Ok(()) => outcome,
                    Err(why) => ConsumeOutcome::Left(why),
                }
            }
            left => left,
        };
        out.push(Consumed {
            source: h.source.clone(),
            to,
            outcome,
        });
    }
    out
}

/// Moves the record's signature (`<file>.sig`, if any) after it, the same
/// create-only way. A signature already there with the same bytes counts
/// as moved. After a crash between the two moves, the signature alone is
/// left in the handoff directory, where it is never read as a handoff.
fn move_signature(source: &Path, to: &Path) -> Result<(), String> {
    let from = crate::signatures::signature_path(source);
    let dest = crate::signatures::signature_path(to);
    let bytes = match std::fs::symlink_metadata(&from) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Ok(m) if m.is_file() => {
            std::fs::read(&from).map_err(|e| format!("cannot read {}: {e}", from.display()))?
        }
        _ => {
            return Err(format!(
                "{} is not a regular file; left in place",
                from.display()
            ));
        }
    };
    match std::fs::hard_link(&from, &dest) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if std::fs::read(&dest).ok().as_deref() != Some(bytes.as_slice()) {
                return Err(format!(
                    "{} already holds another signature; left in place",
                    dest.display()
                ));
            }
        }
        Err(e) => {
            return Err(format!(
                "cannot link {} to {}: {e}",
                from.display(),
                dest.display()
            ));
        }
    }
    let parent = dest.parent().unwrap_or(Path::new("."));
    flush_dir(parent).map_err(|e| format!("cannot flush {}: {e}", parent.display()))?;
    match std::fs::remove_file(&from) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(format!("cannot remove {}: {e}", from.display())),
    }
    let source_dir = from.parent().unwrap_or(Path::new("."));
    flush_dir(source_dir).map_err(|e| format!("cannot flush {}: {e}", source_dir.display()))
}

fn move_one(source: &Path, to: &Path, digest: &Sha256Digest) -> ConsumeOutcome {
    let left = |what: &str, e: &dyn std::fmt::Display| ConsumeOutcome::Left(format!("{what}: {e}"));
    let parent = to.parent().unwrap_or(Path::new("."));
    let size = match std::fs::symlink_metadata(source) {
        Ok(m) if m.is_file() => m.len(),
        _ => return ConsumeOutcome::Left("it is no longer a regular file".to_owned()),
    };
    let outcome = match std::fs::hard_link(source, to) {
        Ok(()) => {
            if digest_of(to, size).as_ref() != Some(digest) {
                // The source changed since it was validated: undo.
                let _ = std::fs::remove_file(to);
                return ConsumeOutcome::Left(
                    "the file changed since it was validated; left for the next sweep".to_owned(),
                );
            }
            if let Err(e) = flush_dir(parent) {
                return left(&format!("cannot flush {}", parent.display()), &e);
            }
            ConsumeOutcome::Moved
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if digest_of(to, size).as_ref() != Some(digest) {
                return ConsumeOutcome::Left(format!(
                    "{} already holds other bytes; left in place",
                    to.display()
                ));
            }
            ConsumeOutcome::AlreadyThere
        }
        Err(e) => return left(&format!("cannot link it to {}", to.display()), &e),
    };
    let source_dir = source.parent().unwrap_or(Path::new("."));
    match std::fs::remove_file(source).and_then(|()| flush_dir(source_dir)) {
        Ok(()) => outcome,
        Err(e) if e.kind() == io::ErrorKind::NotFound => outcome,
        Err(e) => left(&format!("cannot remove {}", source.display()), &e),
    }
}
