//! `benchops-publish validate`: per-file verdicts over sealed records, by
//! the one rule of [`crate::verify`] (and, with `--manifest`, the signature
//! check of [`crate::signatures`]): which files a directory yields, each
//! read through [`benchops::fsio::read_record_file`], and the verdicts as a
//! table (names through [`shown_path`], problems through [`escape_text`])
//! or JSON.
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

use benchops::fsio::{self, Symlinks};
use serde::{Serialize, Serializer};

use crate::signatures::{SignaturePolicy, check_signature, read_signature};
use crate::text::{escape_text, shown_path};
use crate::verify::{IssueOut, NameRule, issue_line, read_issue, verify_named};

/// How `validate` reads files.
#[derive(Debug, Clone, Copy)]
pub struct ValidateOptions<'a> {
    /// The largest record file read, in bytes (`--max-record-bytes`).
    pub max_record_bytes: u64,
    /// With `--manifest` and its `[signing]` table: each valid record's
    /// signature (`<file>.sig`) is checked as the sweep checks it.
    pub signing: Option<&'a SignaturePolicy>,
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
    /// Why the file is not a benchops record at all, when it is not: JSON
    /// without a `schema` tag, or with another document's tag.
    pub foreign: Option<String>,
}

/// Why JSON `bytes` are not a benchops record at all, when they are not:
/// no `schema` member, or one that names no benchops contract. `None` for
/// a file that claims to be one (then every problem matters), and for text
/// that is not JSON.
fn foreign(bytes: &[u8]) -> Option<String> {
    let doc: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    let Some(obj) = doc.as_object() else {
        return Some("not a benchops record (JSON, but not an object)".into());
    };
    match obj.get("schema").and_then(serde_json::Value::as_str) {
        None => Some("not a benchops record (no schema tag)".into()),
        Some(tag) => match benchops::schema::split_schema_tag(tag) {
            Some(("benchmark-result", _)) => None,
            _ => Some(format!(
                "not a benchops record (its schema tag is {})",
                benchops::excerpt::quote(tag)
            )),
        },
    }
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
        foreign: None,
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
    if !v.valid {
        v.foreign = foreign(&bytes);
    }
    if let (Some(policy), Some(sealed)) = (opts.signing, &named.sealed)
        && let Err(issue) = check_signature(policy, sealed, read_signature(path))
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

/// Renders verdicts as a human table: one row per file (one per problem
/// for an invalid one, and one for a file that is not a benchops record
/// unless `verbose`), names through [`shown_path`] and problems through
/// [`escape_text`], so that every row is one line.
pub fn render_table(verdicts: &[FileVerdict], verbose: bool) -> String {
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
        } else if let (Some(why), false) = (&v.foreign, verbose) {
            // Unrelated JSON gets one line; --verbose lists every problem.
            let _ = writeln!(s, "{path:<width$}  INVALID  {}", escape_text(why));
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
