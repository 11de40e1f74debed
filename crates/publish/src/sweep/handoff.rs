//! Handoffs: the sealed records a sweep is given, from a directory
//! (`*.json`, as `benchops-exec bench seal` writes them) or from the store
//! itself (GitHub's handoff refs). Every handoff is checked by the one rule
//! of [`crate::verify::verify_named`]: its bytes against the digest its
//! name claims.
//!
//! An invalid directory handoff is copied (create-only) to the quarantine
//! directory with a `.why.txt` holding every problem; its source file is
//! left in place and it is never persisted. An invalid handoff ref is left
//! in place as its own quarantine and reported.
//!
//! A handoff directory is read strictly: only regular files, at most the
//! size limit, are read ([`benchops::fsio::read_record_file`]). A symbolic
//! link named `*.json` is never followed, whatever its target, nor is a
//! FIFO, socket or device opened: each is reported as `unreadable`, with its
//! kind, and quarantined (a `.why.txt`, no copy). A larger file is
//! `too-large`, with its size and the limit, and is not read. Directories
//! are ignored.
//!
//! Quarantine names stay within the file system's limit on a name (255
//! bytes): when a copy's or a `.why.txt`'s name would be longer, its name
//! is cut and ends with a short hash of the full name, and the `.why.txt`
//! says so and names the handoff in full (escaped). A handoff that cannot
//! be quarantined (the quarantine directory is not a directory, a symbolic
//! link, or not writable) gets one more problem, `quarantine-failed`, and
//! the sweep goes on: it is still invalid, never persisted, and the sweep
//! exits 1 while it is there.
//!
//! With the manifest's `[signing]` table ([`crate::signatures`]), a valid
//! handoff's signature (`<hex>.json.sig` beside it, in the directory or in
//! the ref's tree) is checked too: a bad one, or a missing one where the lane
//! must sign, makes the handoff invalid with a `signature` problem.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use benchops::fsio::{self, Created, Symlinks, WriteError};
use benchops::{SealedRecord, Sha256Digest};

use super::error::{Cause, StepError};
use super::ports::{HandoffRefReport, RefHandoff, RefOutcome};
use crate::signatures::{SignaturePolicy, check_signature, read_signature};
use crate::text::{error_line, escape_text, shown_path};
use crate::verify::{IssueOut, NameRule, issue_line, read_issue, verify_named};

/// The quarantine directory's name, beside the handoffs it holds copies of
/// (`DIR/quarantine` in local mode, `<handoff>/quarantine` in GitHub mode).
pub const QUARANTINE_DIR: &str = "quarantine";

/// Where an invalid handoff went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Quarantined {
    /// The copy (None: the handoff could not be read, so there is nothing
    /// to copy).
    pub copy: Option<PathBuf>,
    /// The `.why.txt` next to it.
    pub why: PathBuf,
}

/// The validation verdict on one directory handoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffReport {
    /// The handoff file (left in place).
    pub source: PathBuf,
    /// The digest of its bytes, when they could be read.
    pub digest: Option<Sha256Digest>,
    /// The digest its name claims.
    pub named_digest: Option<Sha256Digest>,
    /// Every problem found (empty: valid).
    pub issues: Vec<IssueOut>,
    /// Where it was quarantined (invalid handoffs only).
    pub quarantined: Option<Quarantined>,
}

impl HandoffReport {
    /// Whether the handoff is a valid sealed record.
    pub fn valid(&self) -> bool {
        self.issues.is_empty()
    }
}

/// Checks a handoff ref with the one rule; returns its report and, when
/// valid, its record. (Its signature is checked by the caller, against
/// the manifest's policy.)
pub fn check_ref(r: RefHandoff) -> (HandoffRefReport, Option<SealedRecord>) {
    let mut report = HandoffRefReport {
        name: r.name,
        commit: r.commit,
        file: None,
        digest: None,
        issues: Vec::new(),
        outcome: RefOutcome::Quarantined,
    };
    let sealed = match r.content {
        Err(reason) => {
            report.issues.push(IssueOut {
                kind: "handoff-layout".to_owned(),
                path: "$".to_owned(),
                reason,
            });
            None
        }
        Ok((file, bytes)) => {
            let v = verify_named(&bytes, &file, NameRule::Required);
            report.file = Some(file);
            report.digest = Some(v.digest);
            report.issues = v.issues;
            v.sealed
        }
    };
    if sealed.is_some() {
        // Decided after the persist.
        report.outcome = RefOutcome::NotInHistory;
    }
    (report, sealed)
}

/// Every `*.json` entry directly in `dir` that is not a directory, sorted
/// (a missing directory holds none). Entries that are not regular files
/// (symbolic links, FIFOs, sockets, devices) are listed too, for
/// [`check_file`] to refuse and report; a symbolic link is never followed.
pub fn list_handoffs(dir: &Path) -> Result<Vec<PathBuf>, StepError> {
    let list_err = |source| {
        StepError::new(
            "list handoffs",
            Cause::ListHandoffs {
                path: dir.to_path_buf(),
                source,
            },
        )
    };
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => return Err(list_err(source)),
    };
    let mut out = Vec::new();
    for entry in rd {
        let entry = entry.map_err(list_err)?;
        let p = entry.path();
        // The entry's own type, never its target's.
        let is_dir = entry.file_type().map_err(list_err)?.is_dir();
        if p.extension().is_some_and(|e| e == "json") && !is_dir {
            out.push(p);
        }
    }
    out.sort();
    Ok(out)
}

/// Validates one directory handoff against the digest its name claims.
/// It is read only if it is a regular file (a symbolic link is refused) of
/// at most `max_bytes` bytes; the bytes read are returned for the
/// quarantine copy.
pub fn check_file(
    path: &Path,
    max_bytes: u64,
) -> (HandoffReport, Option<SealedRecord>, Option<Vec<u8>>) {
    let mut report = HandoffReport {
        source: path.to_path_buf(),
        digest: None,
        named_digest: None,
        issues: Vec::new(),
        quarantined: None,
    };
    let bytes = match fsio::read_record_file(path, max_bytes, Symlinks::Refuse) {
        Ok(b) => b,
        Err(e) => {
            report.issues.push(read_issue(&e));
            return (report, None, None);
        }
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let v = verify_named(&bytes, &name, NameRule::Required);
    report.digest = Some(v.digest);
    report.named_digest = v.named_digest;
    report.issues = v.issues;
    (report, v.sealed, Some(bytes))
}

/// Validates every handoff in `dir`, each read with a limit of `max_bytes`;
/// invalid ones are quarantined into `quarantine`. Returns the reports
/// (file-name order) and the valid records.
pub fn validate_dir(
    dir: &Path,
    quarantine: &Path,
    max_bytes: u64,
    signing: Option<&SignaturePolicy>,
) -> Result<(Vec<HandoffReport>, Vec<SealedRecord>, Signatures), StepError> {
    let mut reports = Vec::new();
    let mut valid = Vec::new();
    let mut signatures = Signatures::new();
    for path in list_handoffs(dir)? {
        let (mut report, mut sealed, bytes) = check_file(&path, max_bytes);
        if let (Some(policy), Some(s)) = (signing, &sealed) {
            match check_signature(policy, s, read_signature(&path)) {
                Ok(Some(sig)) => {
                    signatures.insert(s.digest(), sig);
                }
                Ok(None) => {}
                Err(issue) => {
                    report.issues.push(issue);
                    sealed = None;
                }
            }
        }
        match sealed {
            Some(s) => valid.push(s),
            None => match quarantine_one(quarantine, &report, bytes.as_deref()) {
                Ok(q) => report.quarantined = Some(q),
                // One handoff that cannot be quarantined does not stop the
                // others: it is reported (exit 1) and left in place.
                Err(e) => report.issues.push(IssueOut {
                    kind: "quarantine-failed".to_owned(),
                    path: "$".to_owned(),
                    reason: format!(
                        "not copied to the quarantine, no .why.txt written: {}",
                        error_line(&*e.cause)
                    ),
                }),
            },
        }
        reports.push(report);
    }
    Ok((reports, valid, signatures))
}

/// Accepted signatures, by the digest of the record they sign.
pub type Signatures = std::collections::BTreeMap<Sha256Digest, Vec<u8>>;

/// The longest file name most file systems accept, in bytes.
const MAX_NAME_BYTES: usize = 255;

/// `stem` + `suffix`, or, when that would exceed [`MAX_NAME_BYTES`],
/// `stem` cut (on a character boundary) + `.` + the first 16 hex digits of
/// the SHA-256 of the full `stem`, + `suffix`. The flag says whether it was
/// cut.
fn bounded_name(stem: &str, suffix: &str) -> (String, bool) {
    if stem.len() + suffix.len() <= MAX_NAME_BYTES {
        return (format!("{stem}{suffix}"), false);
    }
    let hash = Sha256Digest::of(stem.as_bytes()).hex();
    let hash = hash.get(..16).unwrap_or(&hash);
    let mut cut = MAX_NAME_BYTES.saturating_sub(suffix.len() + 1 + hash.len());
    cut = cut.min(stem.len());
    while !stem.is_char_boundary(cut) {
        cut -= 1;
    }
    (format!("{}.{hash}{suffix}", &stem[..cut]), true)
}

/// A file name in full, escaped for a text file: control and invisible
/// characters as escapes, bytes that are not UTF-8 as `\xNN`; never cut.
fn escaped_name(path: &Path) -> String {
    let Some(name) = path.file_name() else {
        return String::new();
    };
    let mut out = String::new();
    for chunk in name.as_encoded_bytes().utf8_chunks() {
        out.push_str(&escape_text(chunk.valid()));
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    out
}

/// Copies an invalid handoff to the quarantine (create-only; a different
/// file already quarantined under the same name keeps its place and this
/// one gets `<stem>.<hex>.json`) and writes the `.why.txt` next to it.
fn quarantine_one(
    qdir: &Path,
    h: &HandoffReport,
    bytes: Option<&[u8]>,
) -> Result<Quarantined, StepError> {
    let name = h.source.file_name().map_or_else(
        || "handoff.json".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    let q_err = |path: &Path, source| {
        StepError::new(
            format!("quarantine {}", shown_path(&h.source)),
            Cause::Quarantine {
                handoff: h.source.clone(),
                path: path.to_path_buf(),
                source,
            },
        )
    };
    if std::fs::symlink_metadata(qdir).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(q_err(
            qdir,
            WriteError::Io {
                step: "use",
                path: qdir.to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "the quarantine directory is a symbolic link; it is never written through a link",
                ),
            },
        ));
    }
    std::fs::create_dir_all(qdir).map_err(|source| {
        q_err(
            qdir,
            WriteError::Io {
                step: "create",
                path: qdir.to_path_buf(),
                source,
            },
        )
    })?;
    let stem = name.strip_suffix(".json").unwrap_or(&name);
    let mut shortened = false;
    let copy = match (bytes, h.digest) {
        (Some(bytes), Some(digest)) => {
            let (first_name, cut) = bounded_name(stem, ".json");
            let first = qdir.join(first_name);
            match fsio::write_create_only(&first, bytes) {
                Ok(Created::New | Created::AlreadyPresent) => {
                    shortened |= cut;
                    Some(first)
                }
                Err(WriteError::Conflict { .. }) => {
                    let (alt_name, cut) = bounded_name(stem, &format!(".{}.json", digest.hex()));
                    let alt = qdir.join(alt_name);
                    fsio::write_create_only(&alt, bytes).map_err(|e| q_err(&alt, e))?;
                    shortened |= cut;
                    Some(alt)
                }
                Err(e) => return Err(q_err(&first, e)),
            }
        }
        _ => None,
    };
    let copy_name = copy
        .as_ref()
        .and_then(|c| c.file_name())
        .map_or_else(|| name.clone(), |n| n.to_string_lossy().into_owned());
    let (why_name, cut) = bounded_name(&copy_name, ".why.txt");
    shortened |= cut;
    let why = qdir.join(why_name);
    let text = why_text(h, copy.is_some(), shortened);
    let same = fsio::read_record_file(&why, text.len() as u64, Symlinks::Refuse)
        .is_ok_and(|b| b == text.as_bytes());
    if !same {
        fsio::write_atomic(&why, text.as_bytes()).map_err(|e| q_err(&why, e))?;
    }
    Ok(Quarantined { copy, why })
}

fn why_text(h: &HandoffReport, copied: bool, shortened: bool) -> String {
    let mut s = String::new();
    let signature_only = !h.issues.is_empty() && h.issues.iter().all(|i| i.kind == "signature");
    let _ = writeln!(
        s,
        "{}",
        if signature_only {
            "benchops-publish sweep quarantined this handoff: the record is intact, but its signature was refused, so it was NOT persisted."
        } else {
            "benchops-publish sweep quarantined this handoff: it is NOT a valid sealed record and was NOT persisted."
        }
    );
    let _ = writeln!(s, "source: {}", shown_path(&h.source));
    let _ = writeln!(s, "full name: {}", escaped_name(&h.source));
    if shortened {
        let _ = writeln!(
            s,
            "The names in the quarantine are shortened: the full name would exceed the {MAX_NAME_BYTES}-byte limit on a file name, \
             so they are cut and end with a hash of the full name."
        );
    }
    if signature_only {
        let _ = writeln!(
            s,
            "The source file was left in place. Every sweep checks it again and exits 1 while it is there: \
             sign it with a key the repository's allowed_signers allows for its lane (its <name>.sig beside it), \
             or remove it. The record itself needs no change."
        );
    } else {
        let _ = writeln!(
            s,
            "The source file was left in place. Every sweep checks it again and exits 1 while it is there: \
             fix what produced it and remove it (the sealed record of a rerun gets a new name)."
        );
    }
    if !copied {
        let _ = writeln!(
            s,
            "The file was not read (see the problem below), so no copy is kept here."
        );
    }
    let show = |d: &Option<Sha256Digest>| d.map_or_else(|| "none".to_owned(), |d| d.to_string());
    let _ = writeln!(s, "digest of the bytes: {}", show(&h.digest));
    let _ = writeln!(s, "digest the file name claims: {}", show(&h.named_digest));
    let _ = writeln!(s, "problems:");
    for i in &h.issues {
        let _ = writeln!(s, "- {}", escape_text(&issue_line(i)));
    }
    s
}

/// `p` relative to `base` when it lies under it, as text.
pub fn relative(p: &Path, base: &Path) -> String {
    p.strip_prefix(base)
        .unwrap_or(p)
        .to_string_lossy()
        .into_owned()
}
