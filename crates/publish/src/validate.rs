//! `benchops-publish validate`: per-file verdicts over sealed records, and
//! the rules every reader of record files in this crate shares: which files
//! a directory yields, how a file is read ([`read_issue`] over
//! [`benchops::fsio::read_record_file`]), and how names and problems are
//! shown on a terminal ([`shown_path`], [`escape_text`]).
//!
//! # Which files are read
//!
//! Only regular files, of at most [`ValidateOptions::max_record_bytes`]
//! bytes. A FIFO, socket or device named `*.json` is reported as
//! `unreadable` with its kind, without being opened; a larger file is
//! `too-large`, with its size and the limit, without being read.
//!
//! A path named on the command line is resolved once if it is a symbolic
//! link (so `validate latest.json` works, and so does a directory given as
//! a link). Inside a directory, no symbolic link is ever followed: a link
//! named `*.json` is reported as `unreadable` (a symbolic link, not
//! followed), and any other link, including one to a directory, is skipped.
//! A loop therefore cannot repeat or hang the walk.

use std::borrow::Cow;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use benchops::Sha256Digest;
use benchops::fsio::{self, ReadRecordError, Symlinks};
use benchops::seal::{IssueKind, SealedRecord, VerifyError, VerifyIssue, verify};
use serde::{Serialize, Serializer};

/// How `validate` reads files.
#[derive(Debug, Clone, Copy)]
pub struct ValidateOptions<'a> {
    /// The largest record file read, in bytes (`--max-record-bytes`).
    pub max_record_bytes: u64,
    /// With `--manifest` and its `[signing]` table: each valid record's
    /// signature (`<file>.sig`) is checked as the sweep checks it.
    pub signing: Option<&'a crate::signatures::SignaturePolicy>,
}

impl Default for ValidateOptions<'_> {
    fn default() -> Self {
        ValidateOptions {
            max_record_bytes: fsio::DEFAULT_MAX_RECORD_BYTES,
            signing: None,
        }
    }
}

/// The verdict on one file.
///
/// As JSON, `path` is the path as text: exact when it is valid UTF-8,
/// otherwise with each invalid sequence replaced by U+FFFD, and then
/// `path_hex` holds its exact bytes in lowercase hex. Rendering never
/// fails.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileVerdict {
    /// The file.
    pub path: PathBuf,
    /// Whether it is a valid sealed record.
    pub valid: bool,
    /// The content's digest (of the bytes as found), when they could be read.
    pub digest: Option<String>,
    /// The digest the file name claims, if the name carries one.
    pub named_digest: Option<String>,
    /// Every problem found.
    pub issues: Vec<IssueOut>,
}

/// One problem, as printed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct IssueOut {
    /// Its class (`not-canonical`, `schema`, ...).
    pub kind: String,
    /// JSON path.
    pub path: String,
    /// Why.
    pub reason: String,
}

impl Serialize for FileVerdict {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Out<'a> {
            path: Cow<'a, str>,
            #[serde(skip_serializing_if = "Option::is_none")]
            path_hex: Option<String>,
            valid: bool,
            digest: &'a Option<String>,
            named_digest: &'a Option<String>,
            issues: &'a [IssueOut],
        }
        let os = self.path.as_os_str();
        Out {
            path: os.to_string_lossy(),
            path_hex: os.to_str().is_none().then(|| {
                os.as_encoded_bytes()
                    .iter()
                    .fold(String::new(), |mut h, b| {
                        let _ = write!(h, "{b:02x}");
                        h
                    })
            }),
            valid: self.valid,
            digest: &self.digest,
            named_digest: &self.named_digest,
            issues: &self.issues,
        }
        .serialize(serializer)
    }
}

impl From<&VerifyIssue> for IssueOut {
    fn from(i: &VerifyIssue) -> Self {
        IssueOut {
            kind: i.kind.to_string(),
            path: i.path.to_string(),
            reason: i.reason.clone(),
        }
    }
}

/// A path given on the command line that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// A directory holds no `*.json` file: nothing was validated, which is
    /// not the same as "all valid".
    #[error("no *.json files under {}", shown_path(path))]
    NoRecords {
        /// The directory.
        path: PathBuf,
    },
    /// The path does not exist or cannot be listed.
    #[error("failed to read {}", shown_path(path))]
    Unreadable {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// The most threads [`verify_all`] uses.
const VERIFY_THREADS: usize = 8;

/// Below this many records [`verify_all`] stays on the calling thread.
const VERIFY_PARALLEL_FROM: usize = 256;

/// [`verify`] over many records, in input order, on as many threads as the
/// machine offers (at most 8): reading history back verifies every record
/// in it, and each verification is independent. Each item is the bytes and
/// the digest they must have, if known.
pub fn verify_all(
    items: &[(&[u8], Option<&Sha256Digest>)],
) -> Vec<Result<SealedRecord, VerifyError>> {
    let threads = std::thread::available_parallelism()
        .map_or(1, std::num::NonZero::get)
        .min(VERIFY_THREADS);
    if threads < 2 || items.len() < VERIFY_PARALLEL_FROM {
        return items.iter().map(|(b, d)| verify(b, *d)).collect();
    }
    let chunk = items.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let workers: Vec<_> = items
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || part.iter().map(|(b, d)| verify(b, *d)).collect::<Vec<_>>())
            })
            .collect();
        workers
            .into_iter()
            .flat_map(|w| match w.join() {
                Ok(v) => v,
                // verify answers bad bytes with an error; a panic in a
                // worker reaches the caller as it would on one thread.
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// The digest a sealed file's name claims: `<hex>.json` or
/// `<anything>--<hex>.json`. Names of any other form claim nothing.
pub fn digest_from_file_name(path: &Path) -> Option<Result<Sha256Digest, String>> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".json")?;
    let hex = stem.rsplit_once("--").map_or(stem, |(_, h)| h);
    if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(Sha256Digest::from_hex(hex).map_err(|e| e.to_string()))
}

/// A file to validate, and how its path must be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The file.
    pub path: PathBuf,
    /// [`Symlinks::Resolve`] for a path named on the command line,
    /// [`Symlinks::Refuse`] for one met while walking a directory.
    pub symlinks: Symlinks,
    /// For a directory met while walking that could not be listed: why. It
    /// is reported as `unreadable`, and the walk goes on.
    pub unlisted: Option<String>,
}

/// Expands the arguments: paths as given (resolved once if they are
/// symbolic links), directories to their `*.json` entries, recursively and
/// sorted, never following a symbolic link (see the module documentation).
pub fn collect_files(inputs: &[PathBuf]) -> Result<Vec<Found>, InputError> {
    let mut out = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input).map_err(|source| InputError::Unreadable {
            path: input.clone(),
            source,
        })?;
        if meta.is_dir() {
            let before = out.len();
            walk(input, &mut out)?;
            if out.len() == before {
                return Err(InputError::NoRecords {
                    path: input.clone(),
                });
            }
        } else {
            out.push(Found {
                path: input.clone(),
                symlinks: Symlinks::Resolve,
                unlisted: None,
            });
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<Found>) -> Result<(), InputError> {
    let rd = std::fs::read_dir(dir).map_err(|source| InputError::Unreadable {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut entries: Vec<(PathBuf, Option<std::fs::FileType>)> = rd
        .filter_map(|e| e.ok().map(|e| (e.path(), e.file_type().ok())))
        .collect();
    entries.sort_by(|a, b| a.0.cmp(&b.0));
    for (p, kind) in entries {
        // The entry's own type: a symbolic link is a link, whatever its
        // target.
        let kind = kind.or_else(|| std::fs::symlink_metadata(&p).ok().map(|m| m.file_type()));
        if kind.is_some_and(|k| k.is_dir()) {
            // A subdirectory that cannot be listed (permissions, a path
            // too long for the system) is one unreadable verdict; the
            // other files are still checked.
            if let Err(InputError::Unreadable { path, source }) = walk(&p, out) {
                out.push(Found {
                    path,
                    symlinks: Symlinks::Refuse,
                    unlisted: Some(format!("failed to list the directory: {source}")),
                });
            }
        } else if p.extension().is_some_and(|e| e == "json") {
            // Anything but a real directory: the read reports what it is.
            out.push(Found {
                path: p,
                symlinks: Symlinks::Refuse,
                unlisted: None,
            });
        }
    }
    Ok(())
}

/// Whether a file name must claim the digest of its content.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// `validate`: a name that claims a digest is checked against it; a
    /// name that claims none is fine.
    CheckIfClaimed,
    /// Handoffs: the name must claim the digest (`<hex>.json` as `bench
    /// seal` writes it, or `<anything>--<hex>.json`), else the content
    /// address cannot be checked and the handoff is invalid.
    Required,
}

/// The verdict on one sealed file's bytes and name.
#[derive(Debug, Clone)]
pub struct NamedVerdict {
    /// The digest of the bytes.
    pub digest: Sha256Digest,
    /// The digest the name claims, when it claims a valid one.
    pub named_digest: Option<Sha256Digest>,
    /// Every problem found (empty: valid).
    pub issues: Vec<IssueOut>,
    /// The verified record, when valid.
    pub sealed: Option<SealedRecord>,
}

/// The one rule for a sealed file and its name: the bytes are verified
/// (canonical form, schema, semantics) against the digest the name claims.
/// `validate`, directory handoffs and handoff refs all use it, so they give
/// the same verdicts with the same messages.
pub fn verify_named(bytes: &[u8], file_name: &str, rule: NameRule) -> NamedVerdict {
    let mut v = NamedVerdict {
        digest: Sha256Digest::of(bytes),
        named_digest: None,
        issues: Vec::new(),
        sealed: None,
    };
    let mismatch = |reason: String| IssueOut {
        kind: IssueKind::DigestMismatch.to_string(),
        path: "$".into(),
        reason,
    };
    let expected = match digest_from_file_name(Path::new(file_name)) {
        Some(Ok(d)) => {
            v.named_digest = Some(d);
            Some(d)
        }
        Some(Err(reason)) => {
            v.issues.push(mismatch(format!(
                "file name does not hold a valid digest: {reason}"
            )));
            None
        }
        None if rule == NameRule::Required => {
            v.issues.push(mismatch(
                "file name claims no digest: a handoff must be named <hex>.json (as `bench seal` writes it) or <anything>--<hex>.json".to_owned(),
            ));
            None
        }
        None => None,
    };
    match verify(bytes, expected.as_ref()) {
        Ok(s) if v.issues.is_empty() => v.sealed = Some(s),
        Ok(_) => {}
        Err(e) => v.issues.extend(e.issues.iter().map(IssueOut::from)),
    }
    v
}

/// One line for a problem: `kind: path: reason`. Raw: escape it with
/// [`escape_text`] before it reaches a terminal.
pub fn issue_line(i: &IssueOut) -> String {
    format!("{}: {}: {}", i.kind, i.path, i.reason)
}

/// The problem a refused or failed read is: `too-large` for a file over
/// the limit, `unreadable` for anything else (not a regular file, a
/// symbolic link not followed, an I/O error). The reason does not repeat
/// the path.
pub fn read_issue(e: &ReadRecordError) -> IssueOut {
    let (kind, reason) = match e {
        ReadRecordError::TooLarge { .. } => (
            "too-large",
            format!(
                "{}; a larger limit can be set with --max-record-bytes",
                e.reason()
            ),
        ),
        _ => ("unreadable", e.reason()),
    };
    IssueOut {
        kind: kind.to_owned(),
        path: "$".to_owned(),
        reason,
    }
}

/// Validates one file named by a person: a symbolic link is resolved once,
/// and the default size limit applies.
pub fn validate_file(path: &Path) -> FileVerdict {
    validate_found(
        &Found {
            path: path.to_path_buf(),
            symlinks: Symlinks::Resolve,
            unlisted: None,
        },
        &ValidateOptions::default(),
    )
}

/// Validates one file as [`collect_files`] found it.
pub fn validate_found(found: &Found, opts: &ValidateOptions<'_>) -> FileVerdict {
    let path = &found.path;
    let mut v = FileVerdict {
        path: path.clone(),
        valid: false,
        digest: None,
        named_digest: None,
        issues: Vec::new(),
    };
    if let Some(reason) = &found.unlisted {
        v.issues.push(IssueOut {
            kind: "unreadable".to_owned(),
            path: "$".to_owned(),
            reason: reason.clone(),
        });
        return v;
    }
    let bytes = match fsio::read_record_file(path, opts.max_record_bytes, found.symlinks) {
        Ok(b) => b,
        Err(e) => {
            v.issues.push(read_issue(&e));
            return v;
        }
    };
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let named = verify_named(&bytes, &name, NameRule::CheckIfClaimed);
    v.digest = Some(named.digest.to_string());
    v.named_digest = named.named_digest.map(|d| d.to_string());
    v.valid = named.sealed.is_some();
    v.issues = named.issues;
    if let (Some(policy), Some(sealed)) = (opts.signing, &named.sealed)
        && let Err(issue) = crate::sweep::handoff::check_signature(
            policy,
            sealed,
            crate::signatures::read_signature(path),
        )
    {
        v.issues.push(issue);
        v.valid = false;
    }
    v
}

/// Validates every file under `inputs`.
pub fn validate_paths(
    inputs: &[PathBuf],
    opts: &ValidateOptions<'_>,
) -> Result<Vec<FileVerdict>, InputError> {
    Ok(collect_files(inputs)?
        .iter()
        .map(|f| validate_found(f, opts))
        .collect())
}

// ---------------------------------------------------------------------------
// Terminal output

/// The longest path [`shown_path`] prints, in characters.
pub const MAX_SHOWN_PATH: usize = 160;

/// Characters that print nothing visible or reorder text, beyond the
/// control characters: zero-width marks, bidirectional overrides and
/// isolates, line and paragraph separators, the byte-order mark.
fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{061c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{feff}'
    )
}

/// One character as printed: itself, or an escape (`\n`, `\t`, `\r`,
/// `\u{1b}`) for control and invisible characters, and `\\` for a
/// backslash when `backslash` is set.
fn push_escaped(out: &mut String, c: char, backslash: bool) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\\' if backslash => out.push_str("\\\\"),
        c if c.is_control() || is_invisible(c) => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// `text` safe for one terminal line: control characters (newlines, escape
/// sequences) and invisible characters are written as escapes, so that no
/// text from a record or a file name can start a line or restyle the
/// terminal. Backslashes are left as they are.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_escaped(&mut out, c, false);
    }
    out
}

/// A path as printed on a terminal: every byte that is not valid UTF-8 as
/// `\xNN`, control and invisible characters as escapes, a backslash as
/// `\\`; cut in the middle (`…`) to at most [`MAX_SHOWN_PATH`] characters,
/// keeping the end, where the file name is. `--json` output has the exact
/// path.
pub fn shown_path(path: &Path) -> String {
    // Each unit is one character or byte of the name, as printed.
    let mut units: Vec<String> = Vec::new();
    for chunk in path.as_os_str().as_encoded_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            let mut u = String::new();
            push_escaped(&mut u, c, true);
            units.push(u);
        }
        for b in chunk.invalid() {
            units.push(format!("\\x{b:02x}"));
        }
    }
    let width = |us: &[String]| us.iter().map(|u| u.chars().count()).sum::<usize>();
    if width(&units) <= MAX_SHOWN_PATH {
        return units.concat();
    }
    // Keep about a quarter from the start and the rest from the end.
    let (mut head, mut tail) = (0, units.len());
    let mut budget = MAX_SHOWN_PATH - 1;
    let mut used_head = 0;
    while head < tail {
        let w = units[head].chars().count();
        if used_head + w > budget / 4 {
            break;
        }
        used_head += w;
        head += 1;
    }
    budget -= used_head;
    while tail > head {
        let w = units[tail - 1].chars().count();
        if w > budget {
            break;
        }
        budget -= w;
        tail -= 1;
    }
    format!("{}…{}", units[..head].concat(), units[tail..].concat())
}

/// Renders verdicts as a human table: one row per file (one per problem
/// for an invalid one), names through [`shown_path`] and problems through
/// [`escape_text`], so that every row is one line.
pub fn render_table(verdicts: &[FileVerdict]) -> String {
    let mut s = String::new();
    let shown: Vec<String> = verdicts.iter().map(|v| shown_path(&v.path)).collect();
    let width = shown
        .iter()
        .map(|p| p.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(s, "{:<width$}  VERDICT  DETAIL", "FILE");
    for (v, path) in verdicts.iter().zip(&shown) {
        if v.valid {
            let d = v.digest.as_deref().unwrap_or("");
            let _ = writeln!(s, "{path:<width$}  valid    {d}");
        } else {
            for (i, issue) in v.issues.iter().enumerate() {
                let (p, verdict) = if i == 0 {
                    (path.as_str(), "INVALID")
                } else {
                    ("", "")
                };
                let _ = writeln!(
                    s,
                    "{p:<width$}  {verdict:<7}  {}",
                    escape_text(&issue_line(issue))
                );
            }
        }
    }
    let bad = verdicts.iter().filter(|v| !v.valid).count();
    let _ = writeln!(
        s,
        "{} file(s): {} valid, {} invalid",
        verdicts.len(),
        verdicts.len() - bad,
        bad
    );
    s
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    #[test]
    fn verifying_many_on_threads_gives_each_item_its_own_verdict_in_order() {
        let records: Vec<SealedRecord> = (0..300)
            .map(|h| {
                let slot = jiff::Timestamp::from_second(1_700_000_000 / 3600 * 3600 + h * 3600)
                    .expect("instant")
                    .to_string();
                benchops_testkit::records::clean("nightly", &slot)
            })
            .collect();
        let other = records[1].digest();
        let mut tampered = records[2].bytes().to_vec();
        tampered[10] ^= 1;
        let mut items: Vec<(&[u8], Option<&Sha256Digest>)> =
            records.iter().map(|r| (r.bytes(), None)).collect();
        items[0].1 = Some(&other); // the bytes of record 0 under another name
        items[2].0 = &tampered;
        items[299] = (b"{not json", None);
        let out = verify_all(&items);
        assert_eq!(out.len(), items.len());
        for (i, (got, (bytes, digest))) in out.iter().zip(&items).enumerate() {
            let want = verify(bytes, *digest);
            match (got, &want) {
                (Ok(a), Ok(b)) => assert_eq!(a.digest(), b.digest(), "item {i}"),
                (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "item {i}"),
                _ => panic!("item {i}: {} against {}", got.is_ok(), want.is_ok()),
            }
        }
        assert!(out[0].is_err() && out[2].is_err() && out[299].is_err());
        assert!(out[1].is_ok() && out[298].is_ok());
        assert_eq!(
            out[150].as_ref().map(SealedRecord::digest).ok(),
            Some(records[150].digest())
        );
    }

    #[test]
    fn text_escapes_controls_and_invisibles_but_keeps_backslashes() {
        assert_eq!(
            escape_text("a\nb\r\tc\u{1b}[2K\u{202e}d\\e é"),
            "a\\nb\\r\\tc\\u{1b}[2K\\u{202e}d\\e é"
        );
    }

    #[test]
    fn a_shown_path_escapes_bytes_and_backslashes() {
        let p = Path::new(OsStr::from_bytes(b"dir/caf\xe9\\x\n.json"));
        assert_eq!(shown_path(p), "dir/caf\\xe9\\\\x\\n.json");
    }

    #[test]
    fn a_long_shown_path_keeps_its_end_and_whole_escapes() {
        let name = format!("{}\n{}.json", "a".repeat(200), "b".repeat(100));
        let shown = shown_path(Path::new(&name));
        assert_eq!(shown.chars().count(), MAX_SHOWN_PATH, "{shown}");
        assert!(
            shown.ends_with(&format!("\\n{}.json", "b".repeat(100))),
            "{shown}"
        );
        assert!(shown.starts_with("aaaa"), "{shown}");
        assert_eq!(shown.matches('…').count(), 1, "{shown}");
        // A cut never splits an escape.
        let name = format!("{}{}", "\u{1}".repeat(100), "c".repeat(10));
        let shown = shown_path(Path::new(&name));
        assert!(shown.chars().count() <= MAX_SHOWN_PATH, "{shown}");
        let (head, tail) = shown.split_once('…').expect("cut");
        assert!(
            head.len() % 5 == 0 && head.chars().all(|c| "\\u{1}".contains(c)),
            "{head}"
        );
        assert!(tail.ends_with("cccccccccc"), "{tail}");
        assert!((tail.len() - 10) % 5 == 0, "{tail}");
    }
}
