//! Handoff refs: sealed records pushed as `refs/heads/benchmark-result/*`.
//!
//! The execution environment pushes each sealed record on its own ref
//! under [`HANDOFF_REF_PREFIX`], with its own narrow credentials (benchops
//! never pushes these). The layout of a handoff is fixed:
//!
//! - the ref points at a **commit** (not an annotated tag);
//! - that commit's tree holds **exactly one entry at its root**: a regular
//!   file (mode `100644` or `100755`) named `<hex>.json`, where `<hex>` is
//!   64 lowercase hex digits (the sha256 of the file's bytes, as
//!   `benchops-exec bench seal` names it);
//! - the commit's parents, author and message do not matter.
//!
//! Anything else (no file, two files, a directory, a symlink, another name)
//! is [`HandoffContent::Invalid`], with the reason. Reading a handoff never
//! checks the record itself: the caller verifies the bytes against the
//! digest in the name. Reading takes three requests per ref (the commit,
//! its root tree, the blob), all `contents: read`.
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
}

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
        let [entry] = tree.tree.as_slice() else {
            return invalid(format!(
                "the commit's tree must hold exactly one file <hex>.json at its root; it holds {} entries{}",
                tree.tree.len(),
                if tree.tree.is_empty() {
                    String::new()
                } else {
                    format!(": {}", names())
                }
            ));
        };
        if entry.kind != "blob" || !matches!(entry.mode.as_str(), "100644" | "100755") {
            return invalid(format!(
                "the commit's only entry {} is a {} with mode {}, not a regular file",
                entry.path, entry.kind, entry.mode
            ));
        }
        if !is_handoff_file_name(&entry.path) {
            return invalid(format!(
                "the commit's only file is named {:?}, not <64 lowercase hex digits>.json",
                entry.path
            ));
        }
        let blob = self.get_blob(repo, &entry.sha).await?;
        Ok(HandoffContent::Sealed(HandoffFile {
            file_name: entry.path.clone(),
            blob: blob.sha,
            bytes: blob.bytes,
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
