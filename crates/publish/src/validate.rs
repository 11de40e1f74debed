//! `benchops-publish validate`: per-file verdicts over sealed records.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use benchops::Sha256Digest;
use benchops::seal::{IssueKind, VerifyIssue, verify};
use serde::Serialize;

/// The verdict on one file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    #[error("no *.json files under {path}")]
    NoRecords {
        /// The directory.
        path: PathBuf,
    },
    /// The path does not exist or cannot be listed.
    #[error("failed to read {path}")]
    Unreadable {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
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

/// Expands the arguments: files as given, directories to their `*.json`
/// files (recursively, sorted).
pub fn collect_files(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, InputError> {
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
            out.push(input.clone());
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), InputError> {
    let rd = std::fs::read_dir(dir).map_err(|source| InputError::Unreadable {
        path: dir.to_path_buf(),
        source,
    })?;
    let mut entries: Vec<PathBuf> = rd.filter_map(|e| e.ok().map(|e| e.path())).collect();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            walk(&p, out)?;
        } else if p.extension().is_some_and(|e| e == "json") {
            out.push(p);
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
    pub sealed: Option<benchops::SealedRecord>,
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

/// One line for a problem: `kind: path: reason`.
pub fn issue_line(i: &IssueOut) -> String {
    format!("{}: {}: {}", i.kind, i.path, i.reason)
}

/// Validates one file.
pub fn validate_file(path: &Path) -> FileVerdict {
    let mut v = FileVerdict {
        path: path.to_path_buf(),
        valid: false,
        digest: None,
        named_digest: None,
        issues: Vec::new(),
    };
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) => {
            v.issues.push(IssueOut {
                kind: "unreadable".into(),
                path: "$".into(),
                reason: e.to_string(),
            });
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
    v
}

/// Validates every file under `inputs`.
pub fn validate_paths(inputs: &[PathBuf]) -> Result<Vec<FileVerdict>, InputError> {
    Ok(collect_files(inputs)?
        .iter()
        .map(|p| validate_file(p))
        .collect())
}

/// Renders verdicts as a human table.
pub fn render_table(verdicts: &[FileVerdict]) -> String {
    let mut s = String::new();
    let width = verdicts
        .iter()
        .map(|v| v.path.display().to_string().len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(s, "{:<width$}  VERDICT  DETAIL", "FILE");
    for v in verdicts {
        let path = v.path.display().to_string();
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
                    "{p:<width$}  {verdict:<7}  {}: {}: {}",
                    issue.kind, issue.path, issue.reason
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
