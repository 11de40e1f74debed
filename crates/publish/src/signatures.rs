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

use std::path::{Path, PathBuf};

use benchops::SealedRecord;
use benchops::fsio::{self, Symlinks};
use benchops::manifest::{Manifest, Signing};
use benchops::provenance::{
    self, AllowedSigners, MAX_ALLOWED_SIGNERS_BYTES, MAX_SIGNATURE_BYTES, Rejection, SIG_SUFFIX,
    Verified,
};
use jiff::Timestamp;

use crate::sweep::{Cause, StepError};

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
    /// when it has no `[signing]` table (then `now` is not asked). The
    /// `allowed_signers` file is read bounded, never through a symbolic
    /// link.
    pub fn load(
        manifest: &Manifest,
        manifest_path: &Path,
        now: impl FnOnce() -> Result<Timestamp, StepError>,
    ) -> Result<Option<SignaturePolicy>, StepError> {
        let Some(signing) = &manifest.signing else {
            return Ok(None);
        };
        let now = now()?;
        let base = manifest_path.parent().unwrap_or(Path::new("."));
        let source = base.join(&signing.allowed_signers);
        let config = |reason: String| {
            StepError::new(
                "read the allowed signers",
                Cause::Config {
                    reason: format!("{}: {reason}", source.display()),
                },
            )
        };
        let bytes = fsio::read_record_file(&source, MAX_ALLOWED_SIGNERS_BYTES, Symlinks::Refuse)
            .map_err(|e| config(crate::sweep::error_line(&e)))?;
        let text = String::from_utf8(bytes).map_err(|_| config("is not UTF-8".to_owned()))?;
        let signers = AllowedSigners::parse(&text).map_err(|e| config(e.to_string()))?;
        Ok(Some(SignaturePolicy {
            signers,
            source,
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
pub fn read_signature(record: &Path) -> Result<Option<Vec<u8>>, String> {
    let path = signature_path(record);
    match std::fs::symlink_metadata(&path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("{}: {e}", path.display())),
        Ok(_) => {}
    }
    fsio::read_record_file(&path, MAX_SIGNATURE_BYTES, Symlinks::Refuse)
        .map(Some)
        .map_err(|e| format!("{}: {e}", path.display()))
}
