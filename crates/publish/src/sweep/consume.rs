//! Consuming directory handoffs: once a valid handoff's record is in
//! history, its file is moved out of the handoff directory into
//! `<dir>/.persisted/`, so the next sweep does not see it again (the way a
//! consumed handoff ref is deleted).
//!
//! The move is create-only and durable: each file is hard-linked under
//! `.persisted/` (which fails if the name is taken), the link is checked
//! to hold the handoff's digest, the directory is flushed, and only then is
//! the source unlinked and its directory flushed. One sweep links all its
//! handoffs, flushes once, unlinks all, and flushes once: two flushes per
//! sweep, whatever the number of handoffs. A crash in between
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
///
/// The moves are batched: every record and signature is linked under
/// `.persisted/` first, that directory is flushed once, then every source
/// is unlinked and the handoff directory is flushed once. A crash at any
/// point leaves each file in one place or both, never in neither (two
/// flushes per sweep instead of two per handoff).
pub fn consume_dir(
    dir: &Path,
    handoffs: &[HandoffReport],
    in_history: &BTreeSet<Sha256Digest>,
) -> Vec<Consumed> {
    let target_dir = dir.join(PERSISTED_DIR);
    let mut out = Vec::new();
    let mut linked: Vec<Linked> = Vec::new();
    let mut made_dir = false;
    for h in handoffs {
        let Some(digest) = h.digest.filter(|d| h.valid() && in_history.contains(d)) else {
            continue;
        };
        let Some(name) = h.source.file_name() else {
            continue;
        };
        let to = target_dir.join(name);
        if !made_dir {
            let refused = if std::fs::symlink_metadata(&target_dir).is_ok_and(|m| !m.is_dir()) {
                Some(format!(
                    "{} is not a directory (a symbolic link is not written through)",
                    target_dir.display()
                ))
            } else {
                match std::fs::create_dir_all(&target_dir).and_then(|()| flush_dir(dir)) {
                    Ok(()) => None,
                    Err(e) => Some(format!("cannot create {}: {e}", target_dir.display())),
                }
            };
            if let Some(why) = refused {
                out.push(Consumed {
                    source: h.source.clone(),
                    to,
                    outcome: ConsumeOutcome::Left(why),
                });
                continue;
            }
            made_dir = true;
        }
        match link_one(&h.source, &to, &digest) {
            Ok(outcome) => {
                let signature = link_signature(&h.source, &to);
                linked.push(Linked {
                    source: h.source.clone(),
                    to,
                    outcome,
                    signature,
                });
            }
            Err(e) => out.push(Consumed {
                source: h.source.clone(),
                to,
                outcome: ConsumeOutcome::Left(crate::text::error_line(&e)),
            }),
        }
    }
    if linked.is_empty() {
        return out;
    }
    // Every link is durable before any source goes.
    if let Err(e) = flush_dir(&target_dir) {
        let why = format!("cannot flush {}: {e}", target_dir.display());
        out.extend(linked.into_iter().map(|l| Consumed {
            source: l.source,
            to: l.to,
            outcome: ConsumeOutcome::Left(why.clone()),
        }));
        return out;
    }
    let mut removed = Vec::with_capacity(linked.len());
    for l in linked {
        let outcome = match std::fs::remove_file(&l.source) {
            Err(e) if e.kind() != io::ErrorKind::NotFound => {
                ConsumeOutcome::Left(format!("cannot remove {}: {e}", l.source.display()))
            }
            _ => match l.signature {
                SignatureLink::None => l.outcome,
                SignatureLink::Linked(from) => match std::fs::remove_file(&from) {
                    Err(e) if e.kind() != io::ErrorKind::NotFound => {
                        ConsumeOutcome::Left(format!("cannot remove {}: {e}", from.display()))
                    }
                    _ => l.outcome,
                },
                SignatureLink::Refused(why) => ConsumeOutcome::Left(why),
            },
        };
        removed.push(Consumed {
            source: l.source,
            to: l.to,
            outcome,
        });
    }
    if let Err(e) = flush_dir(dir) {
        let why = format!("cannot flush {}: {e}", dir.display());
        for c in &mut removed {
            if c.is_gone() {
                c.outcome = ConsumeOutcome::Left(why.clone());
            }
        }
    }
    out.extend(removed);
    out.sort_by(|a, b| a.source.cmp(&b.source));
    out
}

/// A handoff linked under `.persisted/`, its source not yet removed.
struct Linked {
    source: PathBuf,
    to: PathBuf,
    outcome: ConsumeOutcome,
    signature: SignatureLink,
}

/// What became of a handoff's signature (`<file>.sig`) in the link step.
enum SignatureLink {
    /// There is none.
    None,
    /// Linked (or the same bytes were there): this source is removed next.
    Linked(PathBuf),
    /// Left in place, with why.
    Refused(String),
}

/// Links the record's signature (`<file>.sig`, if any) after it, the same
/// create-only way. A signature already there with the same bytes counts
/// as linked. After a crash between the two removals, the signature alone
/// is left in the handoff directory, where it is never read as a handoff.
fn link_signature(source: &Path, to: &Path) -> SignatureLink {
    let from = crate::signatures::signature_path(source);
    let dest = crate::signatures::signature_path(to);
    let bytes = match std::fs::symlink_metadata(&from) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => return SignatureLink::None,
        Ok(m) if m.is_file() => match std::fs::read(&from) {
            Ok(b) => b,
            Err(e) => {
                return SignatureLink::Refused(format!("cannot read {}: {e}", from.display()));
            }
        },
        _ => {
            return SignatureLink::Refused(format!(
                "{} is not a regular file; left in place",
                from.display()
            ));
        }
    };
    match std::fs::hard_link(&from, &dest) {
        Ok(()) => SignatureLink::Linked(from),
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if std::fs::read(&dest).ok().as_deref() == Some(bytes.as_slice()) {
                SignatureLink::Linked(from)
            } else {
                SignatureLink::Refused(format!(
                    "{} already holds another signature; left in place",
                    dest.display()
                ))
            }
        }
        Err(e) => SignatureLink::Refused(format!(
            "cannot link {} to {}: {e}",
            from.display(),
            dest.display()
        )),
    }
}

/// Why a handoff was left in place by [`link_one`]; the message is the
/// [`ConsumeOutcome::Left`] reason.
#[derive(Debug, thiserror::Error)]
enum LinkError {
    /// It is gone or was replaced by something else.
    #[error("it is no longer a regular file")]
    NotRegular,
    /// Its bytes changed after validation (the link was undone).
    #[error("the file changed since it was validated; left for the next sweep")]
    Changed,
    /// The target exists with other bytes.
    #[error("{} already holds other bytes; left in place", to.display())]
    Occupied {
        /// The target.
        to: PathBuf,
    },
    /// The hard link failed.
    #[error("cannot link it to {}", to.display())]
    Link {
        /// The target.
        to: PathBuf,
        /// The OS error.
        #[source]
        source: io::Error,
    },
}

/// Links `source` to `to` and checks the link holds `digest`; the caller
/// flushes `to`'s directory before removing `source`.
fn link_one(source: &Path, to: &Path, digest: &Sha256Digest) -> Result<ConsumeOutcome, LinkError> {
    let size = match std::fs::symlink_metadata(source) {
        Ok(m) if m.is_file() => m.len(),
        _ => return Err(LinkError::NotRegular),
    };
    match std::fs::hard_link(source, to) {
        Ok(()) => {
            if digest_of(to, size).as_ref() != Some(digest) {
                // The source changed since it was validated: undo.
                let _ = std::fs::remove_file(to);
                return Err(LinkError::Changed);
            }
            Ok(ConsumeOutcome::Moved)
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
            if digest_of(to, size).as_ref() != Some(digest) {
                return Err(LinkError::Occupied {
                    to: to.to_path_buf(),
                });
            }
            Ok(ConsumeOutcome::AlreadyThere)
        }
        Err(source) => Err(LinkError::Link {
            to: to.to_path_buf(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn handoff(dir: &Path, name: &str, bytes: &[u8]) -> HandoffReport {
        let source = dir.join(name);
        std::fs::write(&source, bytes).expect("handoff written");
        HandoffReport {
            source,
            digest: Some(Sha256Digest::of(bytes)),
            named_digest: None,
            issues: Vec::new(),
            quarantined: None,
        }
    }

    #[test]
    fn every_record_and_signature_moves_in_one_batch_and_only_records_in_history() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        let a = handoff(dir, "a.json", b"record a");
        let b = handoff(dir, "b.json", b"record b");
        let c = handoff(dir, "c.json", b"record c");
        std::fs::write(dir.join("a.json.sig"), b"sig a").expect("signature");
        let in_history: BTreeSet<_> = [a.digest, b.digest].into_iter().flatten().collect();
        let out = consume_dir(dir, &[a, b, c], &in_history);
        let outcomes: Vec<_> = out
            .iter()
            .map(|c| {
                (
                    c.source.file_name().expect("named").to_owned(),
                    c.outcome.clone(),
                )
            })
            .collect();
        assert_eq!(
            outcomes,
            vec![
                ("a.json".into(), ConsumeOutcome::Moved),
                ("b.json".into(), ConsumeOutcome::Moved)
            ]
        );
        let persisted = dir.join(PERSISTED_DIR);
        assert_eq!(
            std::fs::read(persisted.join("a.json")).expect("persisted"),
            b"record a"
        );
        assert_eq!(
            std::fs::read(persisted.join("a.json.sig")).expect("persisted"),
            b"sig a"
        );
        assert_eq!(
            std::fs::read(persisted.join("b.json")).expect("persisted"),
            b"record b"
        );
        assert!(!dir.join("a.json").exists() && !dir.join("a.json.sig").exists());
        assert!(!dir.join("b.json").exists());
        assert!(dir.join("c.json").exists(), "a record not in history stays");
    }

    #[test]
    fn a_link_that_fails_says_why_and_names_the_target() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        let digest = Sha256Digest::of(b"record a");
        let why = |e: LinkError| crate::text::error_line(&e);
        let gone =
            link_one(&dir.join("gone.json"), &dir.join("to.json"), &digest).expect_err("no source");
        assert_eq!(why(gone), "it is no longer a regular file");
        std::fs::write(dir.join("a.json"), b"record a").expect("handoff");
        let to = dir.join("absent").join("a.json");
        let refused = link_one(&dir.join("a.json"), &to, &digest).expect_err("no target dir");
        let text = why(refused);
        let prefix = format!("cannot link it to {}: ", to.display());
        assert!(text.starts_with(&prefix), "{text}");
        assert!(text.len() > prefix.len(), "the OS error follows: {text}");
    }

    #[test]
    fn a_file_left_in_both_places_by_a_crash_finishes_and_other_bytes_stay() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let dir = tmp.path();
        let persisted = dir.join(PERSISTED_DIR);
        std::fs::create_dir_all(&persisted).expect("persisted dir");
        // A crash after the links, before the unlinks.
        let a = handoff(dir, "a.json", b"record a");
        std::fs::write(persisted.join("a.json"), b"record a").expect("copy");
        // Someone edited .persisted/.
        let b = handoff(dir, "b.json", b"record b");
        std::fs::write(persisted.join("b.json"), b"other bytes").expect("copy");
        // A signature slot that holds another signature.
        let c = handoff(dir, "c.json", b"record c");
        std::fs::write(dir.join("c.json.sig"), b"sig c").expect("signature");
        std::fs::write(persisted.join("c.json.sig"), b"sig x").expect("signature");
        let in_history: BTreeSet<_> = [&a, &b, &c].iter().filter_map(|h| h.digest).collect();
        let out = consume_dir(dir, &[a, b, c], &in_history);
        assert_eq!(out[0].outcome, ConsumeOutcome::AlreadyThere);
        assert!(!dir.join("a.json").exists());
        assert!(
            matches!(&out[1].outcome, ConsumeOutcome::Left(why) if why.contains("already holds other bytes")),
            "{:?}",
            out[1]
        );
        assert!(dir.join("b.json").exists());
        assert!(
            matches!(&out[2].outcome, ConsumeOutcome::Left(why) if why.contains("another signature")),
            "{:?}",
            out[2]
        );
        assert!(dir.join("c.json.sig").exists(), "the signature stays");
        assert!(!out[2].is_gone() || !dir.join("c.json").exists());
    }
}
