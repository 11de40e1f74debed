//! Signing sealed records ([`benchops::provenance`]): `keygen` writes an
//! OpenSSH Ed25519 key pair, and a [`Signer`] writes `<hex>.json.sig`, an
//! armored SSHSIG over the record's bytes, beside the record.
//!
//! The key file is named by `--sign-key FILE` or `BENCHOPS_SIGN_KEY`
//! (which names the file; it never holds the key). Like `ssh-keygen -Y
//! sign`, a key file that others may read is refused. The signature is
//! written before the record, create-only and atomically, so a record in
//! an output directory never lacks the signature it was meant to have;
//! Ed25519 signatures are deterministic, so sealing again is a no-op.

use std::io::Write as _;
use std::os::unix::fs::{DirBuilderExt as _, OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use benchops::fsio::{self, Created};
use benchops::provenance::{self, SIG_SUFFIX};
use benchops::seal::SealedRecord;
use ssh_key::{Algorithm, LineEnding, PrivateKey};

/// The environment variable that names the signing key file.
pub const SIGN_KEY_ENV: &str = "BENCHOPS_SIGN_KEY";

/// The largest key file read, in bytes (an OpenSSH Ed25519 key is about
/// 400).
const MAX_KEY_BYTES: u64 = 64 * 1024;

/// Why signing could not be set up or done.
#[derive(Debug, thiserror::Error)]
pub enum SigningError {
    /// The key file could not be read.
    #[error("failed to read the signing key {path}")]
    Read {
        /// The key file.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// Others may read the key file.
    #[error(
        "the signing key {path} may be read by others (mode {mode:o}); `chmod 600` it, as ssh-keygen requires"
    )]
    Permissions {
        /// The key file.
        path: PathBuf,
        /// Its mode bits.
        mode: u32,
    },
    /// The file is not a usable key.
    #[error("the signing key {path} cannot be used")]
    Key {
        /// The key file.
        path: PathBuf,
        /// Why.
        #[source]
        source: provenance::SignError,
    },
    /// `keygen` would overwrite a file.
    #[error("{path} exists; keygen never overwrites a key")]
    Exists {
        /// The file.
        path: PathBuf,
    },
    /// Writing a key or signature file failed.
    #[error("failed to write {path}: {reason}")]
    Write {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

/// A loaded signing key.
#[derive(Clone)]
pub struct Signer {
    key: PrivateKey,
    path: PathBuf,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the key itself.
        f.debug_struct("Signer")
            .field("path", &self.path)
            .field("fingerprint", &self.fingerprint())
            .finish()
    }
}

impl Signer {
    /// Reads an unencrypted OpenSSH Ed25519 private key that only its
    /// owner may read.
    pub fn load(path: &Path) -> Result<Signer, SigningError> {
        let read = |source| SigningError::Read {
            path: path.to_path_buf(),
            source,
        };
        let meta = std::fs::metadata(path).map_err(read)?;
        let mode = meta.permissions().mode() & 0o777;
        if mode & 0o077 != 0 {
            return Err(SigningError::Permissions {
                path: path.to_path_buf(),
                mode,
            });
        }
        let text = fsio::read_input_text(path, MAX_KEY_BYTES).map_err(read)?;
        let key = provenance::private_key(&text).map_err(|source| SigningError::Key {
            path: path.to_path_buf(),
            source,
        })?;
        Ok(Signer {
            key,
            path: path.to_path_buf(),
        })
    }

    /// The key's `SHA256:…` fingerprint.
    pub fn fingerprint(&self) -> String {
        provenance::fingerprint(self.key.public_key())
    }

    /// The key file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Writes `out_dir/<hex>.json.sig` for `sealed`, create-only.
    pub fn write_signature(
        &self,
        sealed: &SealedRecord,
        out_dir: &Path,
    ) -> Result<(PathBuf, Created), SigningError> {
        let sig =
            provenance::sign(sealed.bytes(), &self.key).map_err(|source| SigningError::Key {
                path: self.path.clone(),
                source,
            })?;
        let path = out_dir.join(format!("{}{SIG_SUFFIX}", sealed.file_name()));
        let created =
            fsio::write_create_only(&path, sig.as_bytes()).map_err(|e| SigningError::Write {
                path: path.clone(),
                reason: e.to_string(),
            })?;
        Ok((path, created))
    }
}

/// What `keygen` wrote.
#[derive(Debug, Clone)]
pub struct KeyPair {
    /// The private key file (mode 0600).
    pub private: PathBuf,
    /// The public key file (`FILE.pub`).
    pub public: PathBuf,
    /// The public key line, for `allowed_signers`.
    pub public_line: String,
    /// Its fingerprint.
    pub fingerprint: String,
}

/// Writes a new OpenSSH Ed25519 key pair: `out` (mode 0600, created with
/// `O_EXCL`) and `out.pub`. Neither may exist. A missing parent directory
/// is created with mode 0700 (as `~/.config/benchops/` usually is missing).
pub fn keygen(out: &Path, comment: &str) -> Result<KeyPair, SigningError> {
    let public_path = PathBuf::from(format!("{}.pub", out.display()));
    for p in [out, public_path.as_path()] {
        if p.symlink_metadata().is_ok() {
            return Err(SigningError::Exists {
                path: p.to_path_buf(),
            });
        }
    }
    let write_err = |path: &Path| {
        let path = path.to_path_buf();
        move |e: String| SigningError::Write {
            path: path.clone(),
            reason: e,
        }
    };
    let mut key = PrivateKey::random(&mut rand_core::OsRng, Algorithm::Ed25519)
        .map_err(|e| write_err(out)(e.to_string()))?;
    key.set_comment(comment);
    let pem = key
        .to_openssh(LineEnding::LF)
        .map_err(|e| write_err(out)(e.to_string()))?;
    let mut public_line = key
        .public_key()
        .to_openssh()
        .map_err(|e| write_err(&public_path)(e.to_string()))?;
    public_line.push('\n');
    if let Some(parent) = out.parent().filter(|p| !p.as_os_str().is_empty())
        && !parent.is_dir()
    {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(parent)
            .map_err(|e| write_err(parent)(e.to_string()))?;
    }
    {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(out)
            .map_err(|e| write_err(out)(e.to_string()))?;
        f.write_all(pem.as_bytes())
            .and_then(|()| f.sync_all())
            .map_err(|e| write_err(out)(e.to_string()))?;
    }
    fsio::write_create_only(&public_path, public_line.as_bytes())
        .map_err(|e| write_err(&public_path)(e.to_string()))?;
    Ok(KeyPair {
        private: out.to_path_buf(),
        public: public_path,
        public_line: public_line.trim_end().to_owned(),
        fingerprint: provenance::fingerprint(key.public_key()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keygen_creates_a_missing_directory_private_to_its_owner() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let out = tmp.path().join(".config/benchops/nightly.key");
        keygen(&out, "nightly").expect("keygen into a missing directory");
        let dir = out.parent().expect("parent");
        let mode = std::fs::metadata(dir).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        assert!(out.is_file() && dir.join("nightly.key.pub").is_file());
    }

    #[test]
    fn keygen_then_sign_and_never_overwrite() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let out = tmp.path().join("exec-key");
        let pair = keygen(&out, "lane nightly").expect("keygen");
        assert!(pair.public_line.starts_with("ssh-ed25519 "));
        assert!(pair.public_line.ends_with(" lane nightly"));
        let mode = std::fs::metadata(&out).expect("meta").permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert!(matches!(
            keygen(&out, "x"),
            Err(SigningError::Exists { .. })
        ));
        let signer = Signer::load(&out).expect("loads");
        assert_eq!(signer.fingerprint(), pair.fingerprint);
        assert!(!format!("{signer:?}").contains("PRIVATE"));

        std::fs::set_permissions(&out, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let e = Signer::load(&out).expect_err("too open");
        assert!(e.to_string().contains("chmod 600"), "{e}");
    }
}
