//! Who produced a sealed record: OpenSSH signatures (SSHSIG) with Ed25519
//! keys over the record's exact bytes, in the namespace
//! [`NAMESPACE`], and the repository's trust in an OpenSSH
//! `allowed_signers` file.
//!
//! The record's identity stays the sha256 of its bytes; the signature is a
//! detached companion (`<hex>.json.sig`, armored `-----BEGIN SSH
//! SIGNATURE-----`), so stock OpenSSH verifies it:
//!
//! ```text
//! ssh-keygen -Y verify -f allowed_signers -I nightly -n benchops-result \
//!     -s <hex>.json.sig < <hex>.json
//! ```
//!
//! [`verify`] follows `ssh-keygen -Y verify`: the signature must parse and
//! be in the namespace; its key must be listed; the signature must check
//! out over the bytes; one of that key's lines must name the principal
//! (the record's lane, with OpenSSH's `*`/`?` patterns and `!` negation),
//! allow the namespace (`namespaces=`) and be valid at the given instant
//! (`valid-after=`/`valid-before=`). Each failure is its own
//! [`Rejection`].
//!
//! SSHSIG and the key formats come from the `ssh-key` crate. The
//! `allowed_signers` format (ssh-keygen(1), "ALLOWED SIGNERS") has no
//! parser in a well-kept Rust crate, so [`AllowedSigners::parse`] is this
//! project's own (docs/adr/0006-signed-seals-sshsig.md). Times without a `Z`
//! suffix are read as UTC, where OpenSSH reads them in the system's time
//! zone (UTC on hosted runners); write the `Z` to be unambiguous.

use std::fmt;

use jiff::Timestamp;
use ssh_key::{Algorithm, HashAlg, LineEnding, PrivateKey, PublicKey, SshSig};

/// The SSHSIG namespace of benchops result signatures.
pub const NAMESPACE: &str = "benchops-result";
/// The suffix of a record's signature file.
pub const SIG_SUFFIX: &str = ".sig";
/// The largest signature file read, in bytes (an Ed25519 SSHSIG is about
/// 300).
pub const MAX_SIGNATURE_BYTES: u64 = 16 * 1024;
/// The largest `allowed_signers` file read, in bytes.
pub const MAX_ALLOWED_SIGNERS_BYTES: u64 = 1024 * 1024;

/// Why a record could not be signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SignError {
    /// The key file is not an OpenSSH private key.
    #[error("not an unencrypted OpenSSH Ed25519 private key")]
    Parse(#[source] ssh_key::Error),
    /// The key is passphrase-protected.
    #[error(
        "the key is encrypted with a passphrase; benchops signs unattended, so use a key without one (`benchops-exec keygen`, or `ssh-keygen -t ed25519 -N ''`) and protect the file instead"
    )]
    Encrypted,
    /// Not an Ed25519 key.
    #[error("the key is {0}; benchops signs with Ed25519 keys only")]
    Algorithm(String),
    /// Signing failed.
    #[error("signing failed")]
    Sign(#[source] ssh_key::Error),
}

/// Reads an OpenSSH Ed25519 private key (`-----BEGIN OPENSSH PRIVATE
/// KEY-----`, unencrypted).
pub fn private_key(text: &str) -> Result<PrivateKey, SignError> {
    let key = PrivateKey::from_openssh(text).map_err(SignError::Parse)?;
    if key.is_encrypted() {
        return Err(SignError::Encrypted);
    }
    if key.algorithm() != Algorithm::Ed25519 {
        return Err(SignError::Algorithm(key.algorithm().to_string()));
    }
    Ok(key)
}

/// The armored SSHSIG of `record` by `key` in [`NAMESPACE`] (SHA-512, as
/// `ssh-keygen -Y sign` makes it), ending in a newline.
pub fn sign(record: &[u8], key: &PrivateKey) -> Result<String, SignError> {
    if key.algorithm() != Algorithm::Ed25519 {
        return Err(SignError::Algorithm(key.algorithm().to_string()));
    }
    let sig = key
        .sign(NAMESPACE, HashAlg::Sha512, record)
        .map_err(SignError::Sign)?;
    let mut pem = sig.to_pem(LineEnding::LF).map_err(SignError::Sign)?;
    if !pem.ends_with('\n') {
        pem.push('\n');
    }
    Ok(pem)
}

/// The `SHA256:…` fingerprint of a public key, as `ssh-keygen -l` prints
/// it.
pub fn fingerprint(key: &PublicKey) -> String {
    key.fingerprint(HashAlg::Sha256).to_string()
}

/// One line of an `allowed_signers` file.
#[derive(Debug, Clone)]
pub struct AllowedSigner {
    /// Its line number, from 1.
    pub line: usize,
    /// The principal patterns (comma-separated in the file).
    pub principals: Vec<String>,
    /// `namespaces=`: the namespace patterns it may sign in (`None`: any).
    pub namespaces: Option<Vec<String>>,
    /// `valid-after=`.
    pub valid_after: Option<Timestamp>,
    /// `valid-before=`.
    pub valid_before: Option<Timestamp>,
    /// The key.
    pub key: PublicKey,
}

/// A parsed `allowed_signers` file.
#[derive(Debug, Clone, Default)]
pub struct AllowedSigners {
    /// Its lines, in order.
    pub signers: Vec<AllowedSigner>,
}

/// A line of `allowed_signers` that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}: {reason}")]
pub struct AllowedSignersError {
    /// The line, from 1.
    pub line: usize,
    /// Why.
    pub reason: String,
}

/// Splits off the next whitespace-separated field, honouring double
/// quotes (an option value may hold spaces or commas).
fn next_field(s: &str) -> Option<(&str, &str)> {
    let s = s.trim_start();
    if s.is_empty() {
        return None;
    }
    let mut quoted = false;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            c if c.is_whitespace() && !quoted => return Some((&s[..i], &s[i..])),
            _ => {}
        }
    }
    Some((s, ""))
}

/// Splits an options field on commas outside quotes.
fn split_options(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut quoted = false;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '"' => quoted = !quoted,
            ',' if !quoted => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

fn unquote(v: &str) -> &str {
    v.strip_prefix('"')
        .and_then(|v| v.strip_suffix('"'))
        .unwrap_or(v)
}

/// Why a `valid-after`/`valid-before` value is not a time.
#[derive(Debug, thiserror::Error)]
enum TimeError {
    /// Not digits of one of the three lengths.
    #[error("{0:?} is not a time of the form YYYYMMDD[HHMM[SS]][Z]")]
    Form(String),
    /// Digits of the form, but no calendar time (month 13, hour 25).
    #[error("{value:?} is not a valid time")]
    Invalid {
        /// The value.
        value: String,
        /// jiff's reason.
        #[source]
        source: jiff::Error,
    },
    /// A calendar time with no UTC instant (out of range).
    #[error("{value:?}")]
    Instant {
        /// The value.
        value: String,
        /// jiff's reason.
        #[source]
        source: jiff::Error,
    },
}

/// `YYYYMMDD[HHMM[SS]][Z]`, read as UTC.
fn parse_time(v: &str) -> Result<Timestamp, TimeError> {
    let digits = v.strip_suffix('Z').unwrap_or(v);
    if !digits.bytes().all(|b| b.is_ascii_digit()) || ![8, 12, 14].contains(&digits.len()) {
        return Err(TimeError::Form(v.to_owned()));
    }
    let n = |r: std::ops::Range<usize>| digits[r].parse::<i16>().unwrap_or(0);
    let (hh, mi, ss) = match digits.len() {
        8 => (0, 0, 0),
        12 => (n(8..10), n(10..12), 0),
        _ => (n(8..10), n(10..12), n(12..14)),
    };
    let year = n(0..4);
    let dt = jiff::civil::DateTime::new(
        year,
        n(4..6) as i8,
        n(6..8) as i8,
        hh as i8,
        mi as i8,
        ss as i8,
        0,
    )
    .map_err(|source| TimeError::Invalid {
        value: v.to_owned(),
        source,
    })?;
    dt.to_zoned_datetime(jiff::tz::TimeZone::UTC)
        .map(|z| z.timestamp())
        .map_err(|source| TimeError::Instant {
            value: v.to_owned(),
            source,
        })
}

/// Whether a key type names a key (the field that starts the key).
fn is_key_type(s: &str) -> bool {
    s.starts_with("ssh-") || s.starts_with("ecdsa-") || s.starts_with("sk-")
}

impl AllowedSigners {
    /// Parses the file: `principals [options] keytype base64 [comment]`
    /// per line; blank lines and `#` comments are skipped. Options:
    /// `namespaces="…"`, `valid-after="…"`, `valid-before="…"`;
    /// `cert-authority` is refused (benchops verifies plain keys only), as
    /// is any unknown option.
    pub fn parse(text: &str) -> Result<AllowedSigners, AllowedSignersError> {
        let mut signers = Vec::new();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            let err = |reason: String| AllowedSignersError { line, reason };
            let time_err = |e: TimeError| err(crate::excerpt::error_chain(&e));
            let l = raw.trim();
            if l.is_empty() || l.starts_with('#') {
                continue;
            }
            let (principals, rest) = next_field(l).ok_or_else(|| err("empty line".into()))?;
            let principals: Vec<String> =
                unquote(principals).split(',').map(str::to_owned).collect();
            if principals.iter().any(String::is_empty) {
                return Err(err("an empty principal".into()));
            }
            let (second, rest2) =
                next_field(rest).ok_or_else(|| err("no key after the principals".into()))?;
            let (options, key_text) = if is_key_type(second) {
                (None, rest.trim())
            } else {
                (Some(second), rest2.trim())
            };
            let mut signer = AllowedSigner {
                line,
                principals,
                namespaces: None,
                valid_after: None,
                valid_before: None,
                key: PublicKey::from_openssh(key_text)
                    .map_err(|e| err(format!("the key does not parse: {e}")))?,
            };
            for opt in options.map(split_options).unwrap_or_default() {
                let (name, value) = match opt.split_once('=') {
                    Some((n, v)) => (n.to_ascii_lowercase(), Some(unquote(v))),
                    None => (opt.to_ascii_lowercase(), None),
                };
                match (name.as_str(), value) {
                    ("namespaces", Some(v)) => {
                        signer.namespaces = Some(v.split(',').map(str::to_owned).collect());
                    }
                    ("valid-after", Some(v)) => {
                        signer.valid_after = Some(parse_time(v).map_err(time_err)?)
                    }
                    ("valid-before", Some(v)) => {
                        signer.valid_before = Some(parse_time(v).map_err(time_err)?);
                    }
                    ("cert-authority", None) => {
                        return Err(err(
                            "cert-authority lines are not supported: list each signing key".into(),
                        ));
                    }
                    (other, _) => return Err(err(format!("unknown option {other:?}"))),
                }
            }
            signers.push(signer);
        }
        Ok(AllowedSigners { signers })
    }
}

/// OpenSSH's `match_pattern`: `*` any run, `?` one character.
fn glob(pattern: &str, s: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), s.chars().collect());
    let (mut pi, mut ti) = (0, 0);
    let (mut star, mut mark) = (None, 0);
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some(pi);
            mark = ti;
            pi += 1;
        } else if let Some(s) = star {
            pi = s + 1;
            mark += 1;
            ti = mark;
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// OpenSSH's `match_pattern_list`: a match of any pattern, unless a
/// negated (`!`) pattern matches.
fn matches_list(patterns: &[String], s: &str) -> bool {
    let mut hit = false;
    for p in patterns {
        match p.strip_prefix('!') {
            Some(neg) if glob(neg, s) => return false,
            Some(_) => {}
            None if glob(p, s) => hit = true,
            None => {}
        }
    }
    hit
}

/// Why a signature was not accepted. Each is a quarantine reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rejection {
    /// The manifest requires a signature and there is none.
    Missing,
    /// The signature file is not an armored SSHSIG.
    Malformed(String),
    /// It was made for another namespace.
    Namespace {
        /// The namespace it names.
        found: String,
    },
    /// Its key is not in `allowed_signers`.
    UnknownKey {
        /// The key's fingerprint.
        fingerprint: String,
    },
    /// It does not verify over the record's bytes (the record or the
    /// signature was changed).
    BadSignature {
        /// The key's fingerprint.
        fingerprint: String,
    },
    /// The key is listed, but not for this principal (lane) or namespace.
    WrongPrincipal {
        /// The principal asked for.
        principal: String,
        /// The key's fingerprint.
        fingerprint: String,
    },
    /// The key is listed for the principal, but not at this instant.
    OutsideValidity {
        /// The key's fingerprint.
        fingerprint: String,
        /// When it was checked.
        at: String,
        /// The windows of its lines, as written.
        windows: Vec<String>,
    },
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Rejection::Missing => f.write_str(
                "unsigned: the manifest requires a signature for this lane and there is no .sig beside the record",
            ),
            Rejection::Malformed(why) => write!(f, "the signature is not an SSH signature: {why}"),
            Rejection::Namespace { found } => write!(
                f,
                "the signature is for namespace {found:?}, not {NAMESPACE:?}"
            ),
            Rejection::UnknownKey { fingerprint } => {
                write!(f, "signed by {fingerprint}, a key not in allowed_signers")
            }
            Rejection::BadSignature { fingerprint } => write!(
                f,
                "the signature by {fingerprint} does not match the record's bytes (the record or the signature was changed)"
            ),
            Rejection::WrongPrincipal {
                principal,
                fingerprint,
            } => write!(
                f,
                "{fingerprint} is in allowed_signers but not for principal {principal:?} in namespace {NAMESPACE:?}"
            ),
            Rejection::OutsideValidity {
                fingerprint,
                at,
                windows,
            } => write!(
                f,
                "{fingerprint} is not valid at {at} (allowed_signers: {})",
                windows.join("; ")
            ),
        }
    }
}

impl Rejection {
    /// A short stable kind, for reports and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            Rejection::Missing => "missing",
            Rejection::Malformed(_) => "malformed",
            Rejection::Namespace { .. } => "namespace",
            Rejection::UnknownKey { .. } => "unknown_key",
            Rejection::BadSignature { .. } => "bad_signature",
            Rejection::WrongPrincipal { .. } => "wrong_principal",
            Rejection::OutsideValidity { .. } => "outside_validity",
        }
    }
}

/// Who signed an accepted record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The key's fingerprint.
    pub fingerprint: String,
    /// The `allowed_signers` line that allowed it.
    pub line: usize,
}

fn window(s: &AllowedSigner) -> String {
    format!(
        "line {}: valid-after {}, valid-before {}",
        s.line,
        s.valid_after.map_or("-".to_owned(), |t| t.to_string()),
        s.valid_before.map_or("-".to_owned(), |t| t.to_string())
    )
}

/// An armored SSHSIG in [`NAMESPACE`], its key and the key's fingerprint.
fn parse(signature: &[u8]) -> Result<(SshSig, PublicKey, String), Rejection> {
    let sig = SshSig::from_pem(signature).map_err(|e| Rejection::Malformed(e.to_string()))?;
    if sig.namespace() != NAMESPACE {
        return Err(Rejection::Namespace {
            found: sig.namespace().to_owned(),
        });
    }
    let key = PublicKey::from(sig.public_key().clone());
    let fingerprint = fingerprint(&key);
    Ok((sig, key, fingerprint))
}

/// Checks that `signature` is an armored SSHSIG in [`NAMESPACE`] that
/// verifies over `record` with the key it carries, and returns that key's
/// fingerprint. It says nothing about trust (no `allowed_signers`): a
/// receiver uses it to learn, cheaply and without a network round trip,
/// which key is asking before it spends anything on the request (rate
/// limits are per key), then calls [`verify`].
pub fn signer(record: &[u8], signature: &[u8]) -> Result<String, Rejection> {
    let (sig, key, fingerprint) = parse(signature)?;
    if key.verify(NAMESPACE, record, &sig).is_err() {
        return Err(Rejection::BadSignature { fingerprint });
    }
    Ok(fingerprint)
}

/// Checks `signature` (an armored SSHSIG) over `record` for `principal` at
/// `at`, as `ssh-keygen -Y verify` would.
pub fn verify(
    record: &[u8],
    signature: &[u8],
    signers: &AllowedSigners,
    principal: &str,
    at: Timestamp,
) -> Result<Verified, Rejection> {
    let (sig, key, fingerprint) = parse(signature)?;
    let lines: Vec<&AllowedSigner> = signers
        .signers
        .iter()
        .filter(|s| s.key.key_data() == sig.public_key())
        .collect();
    if lines.is_empty() {
        return Err(Rejection::UnknownKey { fingerprint });
    }
    // The cryptographic check (ed25519-dalek's verification does not
    // branch on secret data).
    if key.verify(NAMESPACE, record, &sig).is_err() {
        return Err(Rejection::BadSignature { fingerprint });
    }
    let for_principal: Vec<&&AllowedSigner> = lines
        .iter()
        .filter(|s| matches_list(&s.principals, principal))
        .filter(|s| {
            s.namespaces
                .as_ref()
                .is_none_or(|n| matches_list(n, NAMESPACE))
        })
        .collect();
    if for_principal.is_empty() {
        return Err(Rejection::WrongPrincipal {
            principal: principal.to_owned(),
            fingerprint,
        });
    }
    let valid = for_principal
        .iter()
        // Both ends included, as ssh-keygen includes them.
        .find(|s| s.valid_after.is_none_or(|t| at >= t) && s.valid_before.is_none_or(|t| at <= t));
    match valid {
        Some(s) => Ok(Verified {
            fingerprint,
            line: s.line,
        }),
        None => Err(Rejection::OutsideValidity {
            fingerprint,
            at: at.to_string(),
            windows: for_principal.iter().map(|s| window(s)).collect(),
        }),
    }
}
