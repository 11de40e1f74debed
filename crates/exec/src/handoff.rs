//! `benchops-exec handoff --to URL DIR…`: hands signed sealed records to
//! benchops-app's `POST /handoff`, which checks them and writes the handoff
//! ref with its own token. The execution host needs the lane's signing key
//! and network reach to the App; no GitHub credential of any kind.
//!
//! Each `<hex>.json` directly inside a DIR (or named as a file) is checked
//! here first, so that nothing doomed leaves the host: its bytes must hash
//! to its name and be a valid sealed record, and `<hex>.json.sig` must be
//! beside it, an SSHSIG in the namespace `benchops-result` that verifies
//! with the key it carries (whether that key is trusted is the App's
//! question). Then it is sent, one request per record.
//!
//! **Retries.** A connection or timeout error, 429, 502, 503 and 504 are
//! retried, up to `attempts` in all, after a pause that doubles from
//! `initial_backoff` up to `max_backoff`, with jitter (half the pause is
//! random), or after the server's `Retry-After` when it says (at most
//! [`MAX_RETRY_AFTER`]). Anything else is final: 201 `accepted`, 200
//! `already-present`, and every other answer a refusal with the server's
//! reason code (a person must look; sending again would not help).
//!
//! **Nothing is lost.** A delivered record (accepted or already present)
//! and its signature are moved into `DIR/.handed-off/` (unless `keep`), so
//! the next run sends only what is new; a refused or undelivered one stays
//! where it is. Moving is a rename, never a copy.
//!
//! The client is a small blocking `reqwest` with rustls (the system's
//! certificate store), not the publication client: this crate links no
//! GitHub client (`tests/dependency_invariants.rs`).

use std::io::Read as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use benchops::digest::{DigestParseError, Sha256Digest};
use benchops::fsio::{self, ReadRecordError, Symlinks};
use benchops::provenance::{self, MAX_SIGNATURE_BYTES, Rejection, SIG_SUFFIX};
use benchops::seal::VerifyError;
use serde::Serialize;

/// Where delivered records are moved, inside their directory.
pub const HANDED_OFF_DIR: &str = ".handed-off";
/// The longest `Retry-After` honoured.
pub const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);
/// The most of a response body read.
const MAX_RESPONSE_BYTES: u64 = 64 * 1024;
/// The most of a server's `detail` printed, in characters.
const MAX_DETAIL_CHARS: usize = 500;

/// How to hand off.
#[derive(Debug, Clone)]
pub struct HandoffOptions {
    /// benchops-app's base URL (`/handoff` is appended unless the path
    /// already ends in it).
    pub url: String,
    /// `OWNER/NAME`, when the App serves several repositories.
    pub repository: Option<String>,
    /// Tries per record, the first included.
    pub attempts: u32,
    /// The first pause between tries.
    pub initial_backoff: Duration,
    /// The longest pause between tries.
    pub max_backoff: Duration,
    /// The timeout of one request.
    pub timeout: Duration,
    /// Leave delivered records where they are.
    pub keep: bool,
}

impl HandoffOptions {
    /// Defaults for `url`: 6 tries, 1 s doubling to 60 s, 30 s a request.
    pub fn new(url: impl Into<String>) -> HandoffOptions {
        HandoffOptions {
            url: url.into(),
            repository: None,
            attempts: 6,
            initial_backoff: Duration::from_secs(1),
            max_backoff: Duration::from_secs(60),
            timeout: Duration::from_secs(30),
            keep: false,
        }
    }

    /// The endpoint.
    pub fn endpoint(&self) -> String {
        let base = self.url.trim_end_matches('/');
        if base.ends_with("/handoff") {
            base.to_owned()
        } else {
            format!("{base}/handoff")
        }
    }
}

/// Why the handoff could not start.
#[derive(Debug, thiserror::Error)]
pub enum HandoffError {
    /// A DIR could not be read.
    #[error("failed to read {path}")]
    Read {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// No record was found.
    #[error("no sealed record (<sha256>.json) in {0}")]
    Empty(String),
    /// The URL is not http(s).
    #[error("{0:?} is not an http:// or https:// URL")]
    Url(String),
    /// The HTTP client could not be built.
    #[error("the HTTP client could not be set up")]
    Client(#[source] reqwest::Error),
}

/// Why a record is not sent: it fails a check here. Its message, with its
/// causes, is the [`Outcome::Invalid`] reason.
#[derive(Debug, thiserror::Error)]
pub enum InvalidRecord {
    /// The file name is not `<sha256>.json`.
    #[error("the name is not <64 lowercase hex digits>.json")]
    Name,
    /// The record cannot be read (not a regular file, too large, an OS
    /// error).
    #[error("{}", .0.reason())]
    Read(ReadRecordError),
    /// The name is not a digest.
    #[error(transparent)]
    Digest(#[from] DigestParseError),
    /// The bytes are not a valid sealed record of that digest.
    #[error("not a valid sealed record")]
    Seal(#[source] VerifyError),
    /// No signature beside it.
    #[error(
        "unsigned: {} is missing; the App takes signed records only (seal with --sign-key)",
        .0.display()
    )]
    Unsigned(PathBuf),
    /// The signature cannot be read.
    #[error("{}: {}", path.display(), error.reason())]
    SignatureRead {
        /// The signature file.
        path: PathBuf,
        /// Why.
        error: ReadRecordError,
    },
    /// The signature does not verify over the record.
    #[error("{}: {rejection}", path.display())]
    Signature {
        /// The signature file.
        path: PathBuf,
        /// Why.
        rejection: Rejection,
    },
    /// The record is not UTF-8 (JSON text).
    #[error("the record is not UTF-8")]
    RecordNotUtf8,
    /// The signature is not UTF-8 (armored text).
    #[error("{} is not UTF-8", .0.display())]
    SignatureNotUtf8(PathBuf),
    /// The request body could not be encoded.
    #[error("encode the request body")]
    Body(#[source] serde_json::Error),
}

/// Why a delivered record (or its signature) was not moved into
/// [`HANDED_OFF_DIR`]; its message, with its cause, is
/// [`Delivery::move_error`].
#[derive(Debug, thiserror::Error)]
pub enum MoveError {
    /// The directory could not be created.
    #[error("create {}", .path.display())]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A file could not be renamed into it.
    #[error("move {}", .path.display())]
    Rename {
        /// The file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
}

/// What happened to one record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "outcome", rename_all = "kebab-case")]
pub enum Outcome {
    /// The App wrote the handoff ref.
    Accepted {
        /// The ref.
        #[serde(rename = "ref")]
        ref_name: String,
    },
    /// The App had it already.
    AlreadyPresent {
        /// The ref.
        #[serde(rename = "ref")]
        ref_name: String,
    },
    /// The App refused it: a person must look.
    Refused {
        /// The HTTP status.
        status: u16,
        /// The server's reason code.
        reason: String,
        /// The server's detail, bounded.
        detail: String,
    },
    /// Not sent: it fails a check here (bad name, bytes, signature).
    Invalid {
        /// Why.
        reason: String,
    },
    /// Every try failed for a reason that may pass: run again later.
    Undelivered {
        /// The last failure.
        last_error: String,
    },
}

/// One record's handoff.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Delivery {
    /// The record file, where it was found.
    pub file: PathBuf,
    /// Its sha256 (from its name).
    pub digest: String,
    /// Requests made.
    pub attempts: u32,
    /// What happened (flattened: `outcome` and its fields).
    #[serde(flatten)]
    pub outcome: Outcome,
    /// Where the record was moved, when it was.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub moved_to: Option<PathBuf>,
    /// Why a delivered record could not be moved (it stays; the next run
    /// answers "already present").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub move_error: Option<String>,
}

fn record_digest(path: &Path) -> Option<String> {
    let name = path.file_name()?.to_str()?;
    let hex = name.strip_suffix(".json")?;
    (hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then(|| hex.to_owned())
}

/// The record files named by `inputs`: each file as given, each directory's
/// `<hex>.json` entries (not recursive, not `.handed-off/`), sorted.
pub fn collect(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, HandoffError> {
    let mut out = Vec::new();
    for input in inputs {
        let meta = std::fs::metadata(input).map_err(|source| HandoffError::Read {
            path: input.clone(),
            source,
        })?;
        if !meta.is_dir() {
            out.push(input.clone());
            continue;
        }
        let entries = std::fs::read_dir(input).map_err(|source| HandoffError::Read {
            path: input.clone(),
            source,
        })?;
        let mut found = Vec::new();
        for e in entries {
            let e = e.map_err(|source| HandoffError::Read {
                path: input.clone(),
                source,
            })?;
            let path = e.path();
            if record_digest(&path).is_some() {
                found.push(path);
            }
        }
        found.sort();
        out.extend(found);
    }
    if out.is_empty() {
        let names: Vec<String> = inputs.iter().map(|p| p.display().to_string()).collect();
        return Err(HandoffError::Empty(names.join(", ")));
    }
    Ok(out)
}

/// The request body of one record, or why it is not sent.
fn prepare(file: &Path, repository: Option<&str>) -> Result<(String, Vec<u8>), InvalidRecord> {
    let digest = record_digest(file).ok_or(InvalidRecord::Name)?;
    let bytes = fsio::read_record_file(file, fsio::DEFAULT_MAX_RECORD_BYTES, Symlinks::Refuse)
        .map_err(InvalidRecord::Read)?;
    let expected = Sha256Digest::from_hex(&digest)?;
    benchops::seal::verify(&bytes, Some(&expected)).map_err(InvalidRecord::Seal)?;
    let mut sig_path = file.as_os_str().to_owned();
    sig_path.push(SIG_SUFFIX);
    let sig_path = PathBuf::from(sig_path);
    if std::fs::symlink_metadata(&sig_path).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
    {
        return Err(InvalidRecord::Unsigned(sig_path));
    }
    let sig = fsio::read_record_file(&sig_path, MAX_SIGNATURE_BYTES, Symlinks::Refuse).map_err(
        |error| InvalidRecord::SignatureRead {
            path: sig_path.clone(),
            error,
        },
    )?;
    provenance::signer(&bytes, &sig).map_err(|rejection| InvalidRecord::Signature {
        path: sig_path.clone(),
        rejection,
    })?;
    let record = String::from_utf8(bytes).map_err(|_| InvalidRecord::RecordNotUtf8)?;
    let signature =
        String::from_utf8(sig).map_err(|_| InvalidRecord::SignatureNotUtf8(sig_path.clone()))?;
    let mut body = serde_json::json!({
        "record": record,
        "signature": signature,
        "digest": digest,
    });
    if let Some(r) = repository {
        body["repository"] = serde_json::Value::String(r.to_owned());
    }
    Ok((
        digest,
        serde_json::to_vec(&body).map_err(InvalidRecord::Body)?,
    ))
}

/// Printable text from a server: control characters replaced, bounded.
pub fn inert(text: &str) -> String {
    let mut out: String = text
        .chars()
        .take(MAX_DETAIL_CHARS)
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if text.chars().count() > MAX_DETAIL_CHARS {
        out.push('…');
    }
    out
}

/// One try's result.
enum Try {
    Final(Outcome),
    Again {
        error: String,
        wait: Option<Duration>,
    },
}

fn send(client: &reqwest::blocking::Client, url: &str, body: &[u8]) -> Try {
    let resp = match client
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body.to_vec())
        .send()
    {
        Ok(r) => r,
        Err(e) => {
            return Try::Again {
                error: format!("{url}: {}", error_chain(&e)),
                wait: None,
            };
        }
    };
    let status = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(|s| Duration::from_secs(s).min(MAX_RETRY_AFTER));
    let mut text = String::new();
    let read = resp.take(MAX_RESPONSE_BYTES).read_to_string(&mut text);
    let json: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
    let field = |k: &str| json.get(k).and_then(|v| v.as_str()).map(inert);
    match status {
        200 | 201 => {
            let ref_name = field("ref").unwrap_or_default();
            match (field("status").as_deref(), read) {
                (Some("accepted"), Ok(_)) => Try::Final(Outcome::Accepted { ref_name }),
                (Some("already-present"), Ok(_)) => {
                    Try::Final(Outcome::AlreadyPresent { ref_name })
                }
                // Success is not inferred from a status code alone.
                _ => Try::Again {
                    error: format!(
                        "{url}: HTTP {status} without a readable answer: {}",
                        inert(&text)
                    ),
                    wait: None,
                },
            }
        }
        429 | 502 | 503 | 504 => Try::Again {
            error: format!(
                "{url}: HTTP {status} {}",
                field("reason").unwrap_or_default()
            ),
            wait: retry_after,
        },
        _ => Try::Final(Outcome::Refused {
            status,
            reason: field("reason").unwrap_or_else(|| "unknown".to_owned()),
            detail: field("detail").unwrap_or_else(|| inert(&text)),
        }),
    }
}

/// An error and its sources ([`crate::bench::error_chain`]), printable
/// (see [`inert`]).
fn error_chain(e: &dyn std::error::Error) -> String {
    inert(&crate::bench::error_chain(e))
}

/// The pause before try `n + 1` (n ≥ 1): `initial · 2^(n-1)`, capped,
/// the upper half of it random.
pub fn backoff(opts: &HandoffOptions, n: u32, random: u64) -> Duration {
    let full = benchops::backoff::doubled(opts.initial_backoff, n, opts.max_backoff);
    let half = full / 2;
    let jitter_ns = half.as_nanos() as u64;
    let extra = if jitter_ns == 0 {
        0
    } else {
        random % jitter_ns
    };
    half + Duration::from_nanos(extra)
}

fn random_u64() -> u64 {
    use rand_core::RngCore as _;
    rand_core::OsRng.next_u64()
}

fn move_delivered(file: &Path) -> Result<PathBuf, MoveError> {
    let dir = file.parent().unwrap_or(Path::new("."));
    let dest_dir = dir.join(HANDED_OFF_DIR);
    std::fs::create_dir_all(&dest_dir).map_err(|source| MoveError::CreateDir {
        path: dest_dir.clone(),
        source,
    })?;
    let name = file.file_name().unwrap_or_default();
    let mut sig_name = name.to_owned();
    sig_name.push(SIG_SUFFIX);
    let sig = dir.join(&sig_name);
    // The signature first: a record never sits in .handed-off/ while its
    // signature is left behind to be sent alone.
    std::fs::rename(&sig, dest_dir.join(&sig_name)).map_err(|source| MoveError::Rename {
        path: sig.clone(),
        source,
    })?;
    let dest = dest_dir.join(name);
    std::fs::rename(file, &dest).map_err(|source| MoveError::Rename {
        path: file.to_path_buf(),
        source,
    })?;
    Ok(dest)
}

/// A pause between two tries of one record: what the wait is for.
#[derive(Debug, Clone, Copy)]
pub struct Retry<'a> {
    /// The record's file.
    pub file: &'a Path,
    /// The try that did not deliver it (1-based), and how many there are.
    pub attempt: u32,
    /// How many tries there are in all.
    pub attempts: u32,
    /// Why that try did not deliver it.
    pub error: &'a str,
    /// How long until the next try.
    pub pause: Duration,
}

/// Hands off every record in `files`, one after the other; `wait` pauses
/// between tries (the CLI says what it waits for on standard error, then
/// sleeps).
pub fn deliver(
    opts: &HandoffOptions,
    files: &[PathBuf],
    wait: &mut dyn FnMut(Retry<'_>),
) -> Result<Vec<Delivery>, HandoffError> {
    let url = opts.endpoint();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Err(HandoffError::Url(opts.url.clone()));
    }
    let client = reqwest::blocking::Client::builder()
        .timeout(opts.timeout)
        .connect_timeout(opts.timeout.min(Duration::from_secs(10)))
        .user_agent(concat!("benchops-exec/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(HandoffError::Client)?;
    let mut out = Vec::with_capacity(files.len());
    for file in files {
        let digest = record_digest(file).unwrap_or_default();
        let mut d = Delivery {
            file: file.clone(),
            digest,
            attempts: 0,
            outcome: Outcome::Undelivered {
                last_error: String::new(),
            },
            moved_to: None,
            move_error: None,
        };
        let body = match prepare(file, opts.repository.as_deref()) {
            Ok((_, body)) => body,
            Err(e) => {
                d.outcome = Outcome::Invalid {
                    reason: crate::bench::error_chain(&e),
                };
                out.push(d);
                continue;
            }
        };
        let attempts = opts.attempts.max(1);
        for n in 1..=attempts {
            d.attempts = n;
            match send(&client, &url, &body) {
                Try::Final(o) => {
                    d.outcome = o;
                    break;
                }
                Try::Again { error, wait: asked } => {
                    if n < attempts {
                        wait(Retry {
                            file,
                            attempt: n,
                            attempts,
                            error: &error,
                            pause: asked.unwrap_or_else(|| backoff(opts, n, random_u64())),
                        });
                    }
                    d.outcome = Outcome::Undelivered { last_error: error };
                }
            }
        }
        if !opts.keep
            && matches!(
                d.outcome,
                Outcome::Accepted { .. } | Outcome::AlreadyPresent { .. }
            )
        {
            match move_delivered(file) {
                Ok(p) => d.moved_to = Some(p),
                Err(e) => d.move_error = Some(crate::bench::error_chain(&e)),
            }
        }
        out.push(d);
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_is_capped_and_keeps_half_fixed() {
        let mut o = HandoffOptions::new("http://x");
        o.initial_backoff = Duration::from_secs(1);
        o.max_backoff = Duration::from_secs(10);
        assert_eq!(backoff(&o, 1, 0), Duration::from_millis(500));
        assert_eq!(backoff(&o, 2, 0), Duration::from_secs(1));
        assert_eq!(backoff(&o, 3, 0), Duration::from_secs(2));
        // Capped at max_backoff, whatever the try number.
        assert_eq!(backoff(&o, 40, 0), Duration::from_secs(5));
        for r in [1, 123_456_789, u64::MAX] {
            let d = backoff(&o, 1, r);
            assert!(
                d >= Duration::from_millis(500) && d < Duration::from_secs(1),
                "{d:?}"
            );
        }
        o.initial_backoff = Duration::ZERO;
        assert_eq!(backoff(&o, 3, u64::MAX), Duration::ZERO);
    }

    #[test]
    fn the_endpoint_is_appended_once() {
        assert_eq!(
            HandoffOptions::new("https://a.example/").endpoint(),
            "https://a.example/handoff"
        );
        assert_eq!(
            HandoffOptions::new("https://a.example/app/handoff").endpoint(),
            "https://a.example/app/handoff"
        );
    }

    #[test]
    fn a_record_not_sent_or_not_moved_says_why() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let reason =
            |file: &Path| crate::bench::error_chain(&prepare(file, None).expect_err("not sent"));
        assert_eq!(
            reason(&tmp.path().join("record.json")),
            "the name is not <64 lowercase hex digits>.json"
        );
        let file = tmp.path().join(format!("{}.json", "a".repeat(64)));
        std::fs::write(&file, b"{}").expect("record");
        let why = reason(&file);
        assert!(why.starts_with("not a valid sealed record: "), "{why}");
        // Delivered, but its signature is gone: the move names the file.
        let why = crate::bench::error_chain(&move_delivered(&file).expect_err("no signature"));
        let sig = format!("move {}{SIG_SUFFIX}: ", file.display());
        assert!(why.starts_with(&sig), "{why}");
        assert!(file.exists(), "the record stays");
    }

    #[test]
    fn inert_text_has_no_control_characters_and_is_bounded() {
        let t = inert("a\u{1b}[31mb\nc");
        assert_eq!(t, "a [31mb c");
        assert_eq!(
            inert(&"x".repeat(10_000)).chars().count(),
            MAX_DETAIL_CHARS + 1
        );
    }
}
