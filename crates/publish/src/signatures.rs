//! Signed seals on the publishing side ([`benchops::provenance`]): the
//! manifest's `[signing]` table names the repository's `allowed_signers`
//! file (relative to the manifest) and the lanes whose records must be
//! signed.
//!
//! A handoff `<hex>.json` may come with `<hex>.json.sig` beside it. With a
//! `[signing]` table, a present signature is verified (at the sweep's
//! clock, for the record's lane as principal) and a missing one is refused
//! where the manifest requires it; a record that fails is invalid, with
//! the reason, quarantined and never persisted. An accepted signature is
//! persisted create-only next to the record on the history branch
//! (`…--<hex>.json.sig`), so that anyone can re-verify with `ssh-keygen -Y
//! verify`. Without a `[signing]` table there is nothing to verify
//! against: signatures are neither checked nor persisted.
//!
//! A leaf beside [`crate::verify`]: the sweep, `validate` and
//! `check-manifest` load the policy and check signatures here, each saying
//! in its own words where it stopped.

use std::path::{Path, PathBuf};

use benchops::SealedRecord;
use benchops::fsio::ReadRecordError;
use benchops::fsio::{self, Symlinks};
use benchops::manifest::{Manifest, Signing};
use benchops::provenance::AllowedSignersError;
use benchops::provenance::{
    self, AllowedSigners, MAX_ALLOWED_SIGNERS_BYTES, MAX_SIGNATURE_BYTES, Rejection, SIG_SUFFIX,
    Verified,
};
use jiff::Timestamp;

use crate::text::error_line;
use crate::verify::IssueOut;

/// Why the `allowed_signers` file a manifest's `[signing]` table names
/// cannot be used. Each message starts with the file.
#[derive(Debug, thiserror::Error)]
pub enum SignersError {
    /// It cannot be read (missing, not a regular file, too large).
    #[error("{}: {}", path.display(), error_line(error))]
    Read {
        /// The file.
        path: PathBuf,
        /// What the read found.
        error: ReadRecordError,
    },
    /// It is not UTF-8 text.
    #[error("{}: is not UTF-8", path.display())]
    NotUtf8 {
        /// The file.
        path: PathBuf,
    },
    /// A line does not parse.
    #[error("{}: {error}", path.display())]
    Parse {
        /// The file.
        path: PathBuf,
        /// The line and why.
        error: AllowedSignersError,
    },
}

/// Why the signature beside a record cannot be read. The message starts
/// with the signature file.
#[derive(Debug, thiserror::Error)]
pub enum SignatureReadError {
    /// Its entry cannot be looked at.
    #[error("{}: {error}", path.display())]
    Inspect {
        /// The signature file.
        path: PathBuf,
        /// The OS error.
        error: std::io::Error,
    },
    /// It cannot be read (not a regular file, too large).
    #[error("{}: {error}", path.display())]
    Read {
        /// The signature file.
        path: PathBuf,
        /// What the read found.
        error: ReadRecordError,
    },
}

/// What the manifest says about signatures, with the signers loaded.
#[derive(Debug, Clone)]
pub struct SignaturePolicy {
    /// The parsed `allowed_signers` file.
    pub signers: AllowedSigners,
    /// Where it was read from.
    pub source: PathBuf,
    /// The manifest's `[signing]` table (which lanes must sign).
    pub signing: Signing,
    /// The instant signatures are checked at.
    pub now: Timestamp,
}

impl SignaturePolicy {
    /// The policy of `manifest` (read from `manifest_path`), or `None`
    /// when it has no `[signing]` table (then `now` is not asked), checking
    /// signatures at the instant `now` gives. The `allowed_signers` file is
    /// read bounded, never through a symbolic link.
    pub fn load<E: From<SignersError>>(
        manifest: &Manifest,
        manifest_path: &Path,
        now: impl FnOnce() -> Result<Timestamp, E>,
    ) -> Result<Option<SignaturePolicy>, E> {
        let Some(signing) = &manifest.signing else {
            return Ok(None);
        };
        let now = now()?;
        let base = manifest_path.parent().unwrap_or(Path::new("."));
        let path = base.join(&signing.allowed_signers);
        let bytes = match fsio::read_record_file(&path, MAX_ALLOWED_SIGNERS_BYTES, Symlinks::Refuse)
        {
            Ok(b) => b,
            Err(error) => return Err(SignersError::Read { path, error }.into()),
        };
        let Ok(text) = String::from_utf8(bytes) else {
            return Err(SignersError::NotUtf8 { path }.into());
        };
        let signers = match AllowedSigners::parse(&text) {
            Ok(s) => s,
            Err(error) => return Err(SignersError::Parse { path, error }.into()),
        };
        Ok(Some(SignaturePolicy {
            signers,
            source: path,
            signing: signing.clone(),
            now,
        }))
    }

    /// Whether `lane` must sign.
    pub fn requires(&self, lane: &str) -> bool {
        self.signing.requires(lane)
    }

    /// Checks a record's signature, if any: `Ok(None)` when there is none
    /// and none is required.
    pub fn check(
        &self,
        sealed: &SealedRecord,
        signature: Option<&[u8]>,
    ) -> Result<Option<Verified>, Rejection> {
        let lane = sealed.record().lane.as_str();
        match signature {
            None if self.requires(lane) => Err(Rejection::Missing),
            None => Ok(None),
            Some(sig) => {
                provenance::verify(sealed.bytes(), sig, &self.signers, lane, self.now).map(Some)
            }
        }
    }
}

/// The signature file beside a record file.
pub fn signature_path(record: &Path) -> PathBuf {
    let mut name = record.as_os_str().to_owned();
    name.push(SIG_SUFFIX);
    PathBuf::from(name)
}

/// Reads the signature beside `record`: `Ok(None)` when there is none. It
/// is read bounded, never through a symbolic link.
pub fn read_signature(record: &Path) -> Result<Option<Vec<u8>>, SignatureReadError> {
    let path = signature_path(record);
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) => return Err(SignatureReadError::Inspect { path, error }),
        Ok(_) => {}
    }
    match fsio::read_record_file(&path, MAX_SIGNATURE_BYTES, Symlinks::Refuse) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(error) => Err(SignatureReadError::Read { path, error }),
    }
}

/// The signature check of one valid record: the signature bytes to
/// persist (`None`: unsigned and allowed to be), or the `signature` issue
/// that makes the record invalid.
pub fn check_signature(
    policy: &SignaturePolicy,
    sealed: &SealedRecord,
    signature: Result<Option<Vec<u8>>, SignatureReadError>,
) -> Result<Option<Vec<u8>>, IssueOut> {
    let issue = |reason: String| IssueOut {
        kind: "signature".to_owned(),
        path: "$".to_owned(),
        reason,
    };
    let sig = signature.map_err(|e| issue(format!("the signature cannot be read: {e}")))?;
    match policy.check(sealed, sig.as_deref()) {
        Ok(Some(_)) => Ok(sig),
        Ok(None) => Ok(None),
        Err(rejection) => Err(issue(rejection.to_string())),
    }
}
