//! `benchops-exec seal`: turn a draft record into a sealed, content-addressed
//! file.

use std::path::{Path, PathBuf};

use benchops::Sha256Digest;
use benchops::fsio::{self, Created};
use benchops::seal::{SealedRecord, VerifyError, seal_json};

use crate::signing::Signer;

/// Why sealing failed.
#[derive(Debug, thiserror::Error)]
pub enum SealFileError {
    /// The draft could not be read.
    #[error("failed to read draft {path}")]
    Read {
        /// The draft.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The draft is not a valid record.
    #[error("draft {path} is not a valid benchmark-result/v1 record")]
    Invalid {
        /// The draft.
        path: PathBuf,
        /// Every problem found.
        #[source]
        source: VerifyError,
    },
    /// The output directory could not be created.
    #[error("failed to create output directory {path}")]
    OutDir {
        /// The directory.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Writing the sealed file failed.
    #[error("failed to write the sealed record")]
    Write(#[from] fsio::WriteError),
    /// Signing the record failed; the record was not written.
    #[error("failed to sign the sealed record")]
    Sign(#[from] crate::signing::SigningError),
}

/// What [`seal_file`] produced.
#[derive(Debug, Clone, PartialEq)]
pub struct SealOutcome {
    /// The content address.
    pub digest: Sha256Digest,
    /// Where the sealed bytes are.
    pub path: PathBuf,
    /// Whether the file was new or already present with the same bytes.
    pub created: Created,
    /// The sealed record.
    pub sealed: SealedRecord,
    /// The signature file beside it, when signed.
    pub signature: Option<PathBuf>,
}

/// Reads a draft (any JSON formatting), seals it, and writes
/// `out_dir/<hex>.json` create-only and atomically. A draft that canonical
/// JSON would change (an integer above 2^53 that no double equals, a member
/// named twice) is refused with the path of the value, never rounded.
pub fn seal_file(
    draft: &Path,
    out_dir: &Path,
    signer: Option<&Signer>,
) -> Result<SealOutcome, SealFileError> {
    let bytes = fsio::read_input_file(draft, fsio::DEFAULT_MAX_RECORD_BYTES).map_err(|source| {
        SealFileError::Read {
            path: draft.to_path_buf(),
            source,
        }
    })?;
    let sealed = seal_json(&bytes).map_err(|source| SealFileError::Invalid {
        path: draft.to_path_buf(),
        source,
    })?;
    write_sealed(&sealed, out_dir, signer)
}

/// Writes an already sealed record into `out_dir` as `<hex>.json`; with a
/// signer, its signature `<hex>.json.sig` first.
pub fn write_sealed(
    sealed: &SealedRecord,
    out_dir: &Path,
    signer: Option<&Signer>,
) -> Result<SealOutcome, SealFileError> {
    std::fs::create_dir_all(out_dir).map_err(|source| SealFileError::OutDir {
        path: out_dir.to_path_buf(),
        source,
    })?;
    let signature = match signer {
        Some(s) => Some(s.write_signature(sealed, out_dir)?.0),
        None => None,
    };
    let path = out_dir.join(sealed.file_name());
    let created = fsio::write_create_only(&path, sealed.bytes())?;
    Ok(SealOutcome {
        digest: sealed.digest(),
        path,
        created,
        sealed: sealed.clone(),
        signature,
    })
}
