//! Handoff refs: sealed records pushed as `refs/heads/benchmark-result/*`.
//!
//! The execution environment pushes each sealed record on its own ref
//! under [`HANDOFF_REF_PREFIX`], with its own narrow credentials (benchops
//! never pushes these). The layout of a handoff is fixed:
//!
//! - the ref points at a **commit** (not an annotated tag);
//! - that commit's tree holds **one record at its root**: a regular file
//!   (mode `100644` or `100755`) named `<hex>.json`, where `<hex>` is 64
//!   lowercase hex digits (the sha256 of the file's bytes, as
//!   `benchops-exec bench seal` names it), and **optionally its detached
//!   signature** `<hex>.json.sig`, a regular file of at most
//!   [`MAX_HANDOFF_SIGNATURE_BYTES`] (see `benchops::provenance`);
//! - the commit's parents, author and message do not matter.
//!
//! Anything else (no file, two files, a directory, a symlink, another name)
//! is [`HandoffContent::Invalid`], with the reason. Reading a handoff never
//! checks the record itself: the caller verifies the bytes against the
//! digest in the name, and the signature, if any. Reading takes three
//! requests per ref (the commit, its root tree, the blob), one more for a
//! signature, all `contents: read`.
//!
//! Consumed refs are removed with [`GitHubClient::delete_ref`], which is
//! idempotent.

use serde::Serialize;

use crate::client::GitHubClient;
use crate::error::GitHubError;
use crate::git::GitRef;
use crate::names::{GitSha, RefName, Repo};

/// Where handoff refs live, in the short form `matching-refs` takes.
pub const HANDOFF_REF_PREFIX: &str = "heads/benchmark-result/";

/// One handoff ref as listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandoffRef {
    /// The full name, `refs/heads/benchmark-result/…`.
    pub name: String,
    /// The object it points at.
    pub sha: GitSha,
    /// That object's type (`commit` for a well-formed handoff).
    pub kind: String,
}

impl HandoffRef {
    /// The ref as a [`RefName`] (for reading it again or deleting it), or
    /// why its name cannot be addressed.
    pub fn ref_name(&self) -> Result<RefName, GitHubError> {
        RefName::new(&self.name)
    }
}

impl From<GitRef> for HandoffRef {
    fn from(r: GitRef) -> Self {
        HandoffRef {
            name: r.name,
            sha: r.object.sha,
            kind: r.object.kind,
        }
    }
}

/// The sealed file of a well-formed handoff.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HandoffFile {
    /// Its name, `<hex>.json`.
    pub file_name: String,
    /// Its blob id.
    pub blob: GitSha,
    /// Its bytes.
    pub bytes: Vec<u8>,
    /// The detached signature beside it (`<hex>.json.sig`), if the
    /// handoff carries one.
    pub signature: Option<Vec<u8>>,
}

/// The largest signature file a handoff ref may carry, in bytes.
pub const MAX_HANDOFF_SIGNATURE_BYTES: u64 = 16 * 1024;

/// What a handoff ref holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HandoffContent {
    /// A well-formed handoff (its record is not checked here).
    Sealed(HandoffFile),
    /// The ref does not follow the handoff layout.
    Invalid {
        /// Why, in one sentence.
        reason: String,
    },
}

/// Whether `name` is `<64 lowercase hex>.json`.
pub fn is_handoff_file_name(name: &str) -> bool {
    name.strip_suffix(".json").is_some_and(|hex| {
        hex.len() == 64 && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    })
}

impl GitHubClient {
    /// Every ref under `refs/heads/benchmark-result/`, sorted by name.
    pub async fn list_handoff_refs(&self, repo: &Repo) -> Result<Vec<HandoffRef>, GitHubError> {
        let mut refs: Vec<HandoffRef> = self
            .list_matching_refs(repo, HANDOFF_REF_PREFIX)
            .await?
            .into_iter()
            .map(HandoffRef::from)
            .filter(|r| r.name.starts_with("refs/heads/benchmark-result/"))
            .collect();
        refs.sort_by(|a, b| a.name.cmp(&b.name));
        refs.dedup_by(|a, b| a.name == b.name);
        Ok(refs)
    }

    /// Reads the sealed file of a handoff ref at the commit it was listed
    /// at (so a ref that moves meanwhile is read consistently). A ref that
    /// breaks the layout (see the module documentation) is
    /// [`HandoffContent::Invalid`]; GitHub failing is an error.
    pub async fn read_handoff(
        &self,
        repo: &Repo,
        handoff: &HandoffRef,
    ) -> Result<HandoffContent, GitHubError> {
        let invalid = |reason: String| Ok(HandoffContent::Invalid { reason });
        if let Err(e) = handoff.ref_name() {
            return invalid(format!("the ref name cannot be addressed: {e}"));
        }
        if handoff.kind != "commit" {
            return invalid(format!(
                "the ref points at a {}, not a commit",
                handoff.kind
            ));
        }
        let commit = self.get_commit(repo, &handoff.sha).await?;
        let tree = self.get_tree(repo, &commit.tree.sha).await?;
        if tree.truncated {
            return invalid("the commit's tree is too large to list".to_owned());
        }
        let names = || {
            tree.tree
                .iter()
                .map(|e| format!("{} ({} {})", e.path, e.kind, e.mode))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let regular = |e: &crate::git::TreeEntry| {
            e.kind == "blob" && matches!(e.mode.as_str(), "100644" | "100755")
        };
        let (records, others): (Vec<_>, Vec<_>) =
            tree.tree.iter().partition(|e| !e.path.ends_with(".sig"));
        let [entry] = records.as_slice() else {
            return invalid(format!(
                "the commit's tree must hold exactly one file <hex>.json at its root (and optionally its <hex>.json.sig); it holds {} entries{}",
                tree.tree.len(),
                if tree.tree.is_empty() {
                    String::new()
                } else {
                    format!(": {}", names())
                }
            ));
        };
        if !regular(entry) {
            return invalid(format!(
                "the commit's entry {} is a {} with mode {}, not a regular file",
                entry.path, entry.kind, entry.mode
            ));
        }
        if !is_handoff_file_name(&entry.path) {
            return invalid(format!(
                "the commit's record file is named {:?}, not <64 lowercase hex digits>.json",
                entry.path
            ));
        }
        let sig_name = format!("{}.sig", entry.path);
        let signature_entry = match others.as_slice() {
            [] => None,
            [sig] if sig.path == sig_name && regular(sig) => Some(*sig),
            _ => {
                return invalid(format!(
                    "besides {} the commit's tree may hold only {sig_name}, a regular file; it holds: {}",
                    entry.path,
                    names()
                ));
            }
        };
        let signature = match signature_entry {
            None => None,
            Some(sig) => {
                if sig.size.is_some_and(|n| n > MAX_HANDOFF_SIGNATURE_BYTES) {
                    return invalid(format!(
                        "{sig_name} is {} bytes, more than the {MAX_HANDOFF_SIGNATURE_BYTES} a signature may have",
                        sig.size.unwrap_or_default()
                    ));
                }
                let blob = self.get_blob(repo, &sig.sha).await?;
                if blob.bytes.len() as u64 > MAX_HANDOFF_SIGNATURE_BYTES {
                    return invalid(format!(
                        "{sig_name} is more than the {MAX_HANDOFF_SIGNATURE_BYTES} bytes a signature may have"
                    ));
                }
                Some(blob.bytes)
            }
        };
        let blob = self.get_blob(repo, &entry.sha).await?;
        Ok(HandoffContent::Sealed(HandoffFile {
            file_name: entry.path.clone(),
            blob: blob.sha,
            bytes: blob.bytes,
            signature,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handoff_file_names() {
        let hex = "a".repeat(64);
        assert!(is_handoff_file_name(&format!("{hex}.json")));
        assert!(!is_handoff_file_name(&format!("{}.json", "A".repeat(64))));
        assert!(!is_handoff_file_name(&format!("{}.json", "a".repeat(63))));
        assert!(!is_handoff_file_name(&format!("x--{hex}.json")));
        assert!(!is_handoff_file_name(&hex));
    }
}
