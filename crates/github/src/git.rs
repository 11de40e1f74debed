//! Git data: refs, trees, commits, file contents.
//!
//! Writing a file set takes five requests: read the branch ref, read the
//! tip commit for its tree, create one tree whose entries carry their
//! `content` inline over that tree (`base_tree`; no per-file blob calls),
//! create a commit with the tip as parent, and move the ref with
//! `force: false`. If another writer
//! moved the ref first, GitHub answers 422 "Update is not a fast forward"
//! and [`GitHubClient::update_ref`] returns [`GitHubError::RefMoved`]: read
//! the ref again and rebuild on the new tip.
//!
//! There is no way to force a ref update: [`UpdateRefRequest`] has no
//! settable `force` field, only [`NoForce`], which serializes as `false`.

use http::Method;
use serde::{Deserialize, Serialize, Serializer};

use crate::auth::Phase;
use crate::client::{GitHubClient, Op};
use crate::error::GitHubError;
use crate::names::{
    GitSha, RefName, Repo, check_repo_path, check_revision, encode_component, encode_path,
    ref_prefix_path,
};
use crate::retry::Idempotency;

const GET_REF: Op = Op::read("git.get_ref", "get ref");
const CREATE_TREE: Op = Op::write(
    "git.create_tree",
    "create tree",
    Idempotency::NotIdempotent,
    Phase::Contents,
);
const CREATE_COMMIT: Op = Op::write(
    "git.create_commit",
    "create commit",
    Idempotency::NotIdempotent,
    Phase::Contents,
);
const CREATE_REF: Op = Op::write(
    "git.create_ref",
    "create ref",
    Idempotency::NotIdempotent,
    Phase::Contents,
);
// Idempotent: moving a ref to a sha without force either succeeds or finds
// it already there (or moved), never does anything twice.
const UPDATE_REF: Op = Op::write(
    "git.update_ref",
    "update ref",
    Idempotency::Idempotent,
    Phase::Contents,
);
const GET_COMMIT: Op = Op::read("git.get_commit", "get commit");
const GET_CONTENTS: Op = Op::read("repos.get_contents", "get file contents");
const GET_TREE: Op = Op::read("git.get_tree", "list tree");
const GET_BLOB: Op = Op::read("git.get_blob", "get blob");
const LIST_MATCHING_REFS: Op = Op::read("git.list_matching_refs", "list matching refs");
// Idempotent: deleting a ref twice finds it gone the second time, which
// `delete_ref` reports as `AlreadyGone`.
const DELETE_REF: Op = Op::write(
    "git.delete_ref",
    "delete ref",
    Idempotency::Idempotent,
    Phase::Contents,
);

/// The mode of every blob this crate writes: a regular, non-executable file.
pub const BLOB_MODE: &str = "100644";

/// A reference as GitHub returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitRef {
    /// The full name, `refs/heads/…`.
    #[serde(rename = "ref")]
    pub name: String,
    /// What it points at.
    pub object: GitObject,
}

/// The object a reference points at.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GitObject {
    /// Its id.
    pub sha: GitSha,
    /// `commit`, `tag`, …
    #[serde(rename = "type")]
    pub kind: String,
}

/// A file to write: its path in the repository and its UTF-8 content.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeFile {
    /// The path, relative, `/`-separated.
    pub path: String,
    /// The full content.
    pub content: String,
}

/// One entry of [`CreateTreeRequest`]: a blob given by inline content.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewTreeEntry {
    path: String,
    mode: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
    content: String,
}

/// The body of `POST /repos/{owner}/{repo}/git/trees`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateTreeRequest {
    #[serde(skip_serializing_if = "Option::is_none")]
    base_tree: Option<GitSha>,
    tree: Vec<NewTreeEntry>,
}

impl CreateTreeRequest {
    /// A tree with `files` (mode 100644 blobs, content inline) over
    /// `base_tree`. Paths are validated.
    pub fn new(base_tree: Option<&GitSha>, files: &[TreeFile]) -> Result<Self, GitHubError> {
        let tree = files
            .iter()
            .map(|f| {
                check_repo_path(&f.path)?;
                Ok(NewTreeEntry {
                    path: f.path.clone(),
                    mode: BLOB_MODE,
                    kind: "blob",
                    content: f.content.clone(),
                })
            })
            .collect::<Result<Vec<_>, GitHubError>>()?;
        Ok(CreateTreeRequest {
            base_tree: base_tree.cloned(),
            tree,
        })
    }
}

/// The body size [`GitHubClient::create_tree_batched`] keeps each
/// create-tree request under: 1 MiB, well below what GitHub and proxies
/// in front of it accept for one JSON body.
pub const TREE_REQUEST_BUDGET: usize = 1 << 20;

/// The bytes `file` adds to a create-tree body: its path and content as
/// JSON strings plus the entry's fixed fields.
pub fn tree_entry_size(file: &TreeFile) -> usize {
    const FIXED: usize = r#"{"path":"","mode":"100644","type":"blob","content":""},"#.len();
    FIXED + json_escaped_len(&file.path) + json_escaped_len(&file.content)
}

fn json_escaped_len(s: &str) -> usize {
    s.bytes()
        .map(|b| match b {
            b'"' | b'\\' | b'\n' | b'\r' | b'\t' | 0x08 | 0x0c => 2,
            0..=0x1f => 6,
            _ => 1,
        })
        .sum()
}

/// Splits `files`, in order, into consecutive batches whose entries add
/// up to at most `budget` bytes ([`tree_entry_size`]); a file larger than
/// `budget` goes alone in its batch. No batch is empty; no files give no
/// batches.
pub fn tree_batches(files: &[TreeFile], budget: usize) -> Vec<&[TreeFile]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut size = 0;
    for (i, f) in files.iter().enumerate() {
        let n = tree_entry_size(f);
        if i > start && size + n > budget {
            out.push(&files[start..i]);
            start = i;
            size = 0;
        }
        size += n;
    }
    if start < files.len() {
        out.push(&files[start..]);
    }
    out
}

/// A tree as GitHub returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tree {
    /// Its id.
    pub sha: GitSha,
    /// Its entries (all levels for a recursive listing).
    #[serde(default)]
    pub tree: Vec<TreeEntry>,
    /// Whether GitHub cut a recursive listing short (over 100 000 entries
    /// or 7 MB); the entries are then incomplete.
    #[serde(default)]
    pub truncated: bool,
}

/// One entry of a [`Tree`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeEntry {
    /// The path from the tree's root.
    pub path: String,
    /// `100644`, `100755`, `040000`, `160000`, `120000`.
    pub mode: String,
    /// `blob`, `tree` or `commit`.
    #[serde(rename = "type")]
    pub kind: String,
    /// The object id.
    pub sha: GitSha,
    /// The blob size in bytes (blobs only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
}

/// The body of `POST /repos/{owner}/{repo}/git/commits`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateCommitRequest {
    message: String,
    tree: GitSha,
    parents: Vec<GitSha>,
}

impl CreateCommitRequest {
    /// A commit of `tree` with `parents`.
    pub fn new(message: &str, tree: &GitSha, parents: &[GitSha]) -> Self {
        CreateCommitRequest {
            message: message.to_owned(),
            tree: tree.clone(),
            parents: parents.to_vec(),
        }
    }
}

/// An object named only by its id (a commit's tree or parents).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShaRef {
    /// The id.
    pub sha: GitSha,
}

/// A commit as GitHub returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Commit {
    /// Its id.
    pub sha: GitSha,
    /// Its tree.
    pub tree: ShaRef,
    /// Its parents.
    #[serde(default)]
    pub parents: Vec<ShaRef>,
    /// Its message.
    #[serde(default)]
    pub message: String,
}

/// The body of `POST /repos/{owner}/{repo}/git/refs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CreateRefRequest {
    #[serde(rename = "ref")]
    name: String,
    sha: GitSha,
}

impl CreateRefRequest {
    /// Creates `name` (sent in its `refs/…` form) at `sha`.
    pub fn new(name: &RefName, sha: &GitSha) -> Self {
        CreateRefRequest {
            name: name.full(),
            sha: sha.clone(),
        }
    }
}

/// The only value of a ref update's `force` field. It serializes as
/// `false` and holds nothing, so no request this crate builds can force.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct NoForce;

impl Serialize for NoForce {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bool(false)
    }
}

/// The body of `PATCH /repos/{owner}/{repo}/git/refs/{ref}`:
/// `{"sha": "…", "force": false}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UpdateRefRequest {
    sha: GitSha,
    force: NoForce,
}

impl UpdateRefRequest {
    /// A fast-forward-only move to `sha`.
    pub fn new(sha: &GitSha) -> Self {
        UpdateRefRequest {
            sha: sha.clone(),
            force: NoForce,
        }
    }
}

/// A file read through the contents API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileContents {
    /// The path in the repository.
    pub path: String,
    /// The blob id.
    pub sha: GitSha,
    /// The decoded bytes.
    pub bytes: Vec<u8>,
}

/// A blob read through the git data API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Blob {
    /// Its id.
    pub sha: GitSha,
    /// The decoded bytes.
    pub bytes: Vec<u8>,
}

#[derive(Debug, Deserialize)]
struct BlobResponse {
    sha: GitSha,
    content: String,
    #[serde(default)]
    encoding: Option<String>,
}

/// What [`GitHubClient::delete_ref`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RefDeletion {
    /// The ref existed and is gone (204).
    Deleted,
    /// The ref did not exist (422 "Reference does not exist"): deleted
    /// before, by this caller's earlier attempt or by someone else.
    AlreadyGone,
}

#[derive(Debug, Deserialize)]
struct ContentsResponse {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    encoding: Option<String>,
    #[serde(default)]
    content: Option<String>,
    sha: GitSha,
    path: String,
}

impl GitHubClient {
    /// `GET /repos/{owner}/{repo}/git/ref/{ref}`.
    pub async fn get_ref(&self, repo: &Repo, name: &RefName) -> Result<GitRef, GitHubError> {
        let path = format!("{}/git/ref/{}", repo.api_path(), name.path());
        self.send(&GET_REF, Method::GET, &path, None::<&()>)
            .await?
            .json(&GET_REF)
    }

    /// `POST /repos/{owner}/{repo}/git/trees`: one request for every file,
    /// contents inline, over `base_tree`.
    pub async fn create_tree(
        &self,
        repo: &Repo,
        base_tree: Option<&GitSha>,
        files: &[TreeFile],
    ) -> Result<Tree, GitHubError> {
        let body = CreateTreeRequest::new(base_tree, files)?;
        let path = format!("{}/git/trees", repo.api_path());
        self.send(&CREATE_TREE, Method::POST, &path, Some(&body))
            .await?
            .json(&CREATE_TREE)
    }

    /// Creates one tree holding every file in as many
    /// `POST /repos/{owner}/{repo}/git/trees` requests as keep each body
    /// under `budget` bytes (see [`tree_batches`]): each request builds
    /// on the tree the one before returned, the first on `base_tree`.
    /// Returns the last tree and the number of requests. The trees in
    /// between are unreferenced until a commit names the last one, so a
    /// failure part way leaves nothing visible to retry around.
    pub async fn create_tree_batched(
        &self,
        repo: &Repo,
        base_tree: Option<&GitSha>,
        files: &[TreeFile],
        budget: usize,
    ) -> Result<(Tree, usize), GitHubError> {
        let batches = tree_batches(files, budget);
        let mut base = base_tree.cloned();
        let mut last = None;
        let mut requests = 0;
        for batch in batches {
            let tree = self.create_tree(repo, base.as_ref(), batch).await?;
            requests += 1;
            base = Some(tree.sha.clone());
            last = Some(tree);
        }
        match last {
            Some(tree) => Ok((tree, requests)),
            None => Ok((self.create_tree(repo, base.as_ref(), &[]).await?, 1)),
        }
    }

    /// `GET /repos/{owner}/{repo}/git/commits/{sha}`: a commit's tree and
    /// parents (the tree is the `base_tree` of the next commit).
    pub async fn get_commit(&self, repo: &Repo, sha: &GitSha) -> Result<Commit, GitHubError> {
        let path = format!("{}/git/commits/{sha}", repo.api_path());
        self.send(&GET_COMMIT, Method::GET, &path, None::<&()>)
            .await?
            .json(&GET_COMMIT)
    }

    /// `POST /repos/{owner}/{repo}/git/commits`.
    pub async fn create_commit(
        &self,
        repo: &Repo,
        message: &str,
        tree: &GitSha,
        parents: &[GitSha],
    ) -> Result<Commit, GitHubError> {
        let body = CreateCommitRequest::new(message, tree, parents);
        let path = format!("{}/git/commits", repo.api_path());
        self.send(&CREATE_COMMIT, Method::POST, &path, Some(&body))
            .await?
            .json(&CREATE_COMMIT)
    }

    /// `POST /repos/{owner}/{repo}/git/refs`. An existing ref gives
    /// [`GitHubError::Unprocessable`] ("Reference already exists").
    pub async fn create_ref(
        &self,
        repo: &Repo,
        name: &RefName,
        sha: &GitSha,
    ) -> Result<GitRef, GitHubError> {
        let body = CreateRefRequest::new(name, sha);
        let path = format!("{}/git/refs", repo.api_path());
        self.send(&CREATE_REF, Method::POST, &path, Some(&body))
            .await?
            .json(&CREATE_REF)
    }

    /// `PATCH /repos/{owner}/{repo}/git/refs/{ref}` with `force: false`:
    /// a fast-forward or nothing. A ref that moved meanwhile gives
    /// [`GitHubError::RefMoved`].
    pub async fn update_ref(
        &self,
        repo: &Repo,
        name: &RefName,
        sha: &GitSha,
    ) -> Result<GitRef, GitHubError> {
        let body = UpdateRefRequest::new(sha);
        let path = format!("{}/git/refs/{}", repo.api_path(), name.path());
        self.send(&UPDATE_REF, Method::PATCH, &path, Some(&body))
            .await?
            .json(&UPDATE_REF)
    }

    /// `GET /repos/{owner}/{repo}/contents/{path}?ref={rev}`, base64-decoded.
    /// `rev` is a branch, a `heads/…` ref or a commit sha. A directory, a
    /// symlink, or a file over 1 MB (which GitHub sends without content)
    /// gives [`GitHubError::UnexpectedResponse`].
    pub async fn get_file(
        &self,
        repo: &Repo,
        file: &str,
        rev: &str,
    ) -> Result<FileContents, GitHubError> {
        check_repo_path(file)?;
        check_revision(rev)?;
        let path = format!(
            "{}/contents/{}?ref={}",
            repo.api_path(),
            encode_path(file),
            encode_component(rev)
        );
        let reply = self
            .send(&GET_CONTENTS, Method::GET, &path, None::<&()>)
            .await?;
        let value: serde_json::Value = reply.json(&GET_CONTENTS)?;
        if value.is_array() {
            return Err(reply.unexpected(&GET_CONTENTS, format!("{file} is a directory")));
        }
        let c: ContentsResponse =
            serde_json::from_value(value).map_err(|source| GitHubError::Decode {
                operation: GET_CONTENTS.what,
                request_id: reply.request_id.clone(),
                source,
            })?;
        if c.kind != "file" {
            return Err(reply.unexpected(&GET_CONTENTS, format!("{file} is a {}", c.kind)));
        }
        let (Some("base64"), Some(content)) = (c.encoding.as_deref(), c.content.as_deref()) else {
            return Err(reply.unexpected(
                &GET_CONTENTS,
                format!(
                    "{file} came without base64 content (encoding {:?}; files over 1 MB need the blob API)",
                    c.encoding
                ),
            ));
        };
        let bytes = decode_base64(content)
            .map_err(|e| reply.unexpected(&GET_CONTENTS, format!("{file}: bad base64: {e}")))?;
        Ok(FileContents {
            path: c.path,
            sha: c.sha,
            bytes,
        })
    }

    /// `GET /repos/{owner}/{repo}/git/trees/{sha}`: the entries at the root
    /// of a tree (not recursive).
    pub async fn get_tree(&self, repo: &Repo, sha: &GitSha) -> Result<Tree, GitHubError> {
        let path = format!("{}/git/trees/{sha}", repo.api_path());
        self.send(&GET_TREE, Method::GET, &path, None::<&()>)
            .await?
            .json(&GET_TREE)
    }

    /// `GET /repos/{owner}/{repo}/git/blobs/{sha}`, decoded (GitHub serves
    /// blobs up to 100 MB this way, the contents API only up to 1 MB).
    pub async fn get_blob(&self, repo: &Repo, sha: &GitSha) -> Result<Blob, GitHubError> {
        let path = format!("{}/git/blobs/{sha}", repo.api_path());
        let reply = self
            .send(&GET_BLOB, Method::GET, &path, None::<&()>)
            .await?;
        let b: BlobResponse = reply.json(&GET_BLOB)?;
        let bytes = match b.encoding.as_deref() {
            Some("base64") | None => decode_base64(&b.content)
                .map_err(|e| reply.unexpected(&GET_BLOB, format!("blob {sha}: bad base64: {e}")))?,
            Some("utf-8" | "utf8") => b.content.into_bytes(),
            Some(other) => {
                return Err(reply.unexpected(
                    &GET_BLOB,
                    format!("blob {sha} came in an unknown encoding {other:?}"),
                ));
            }
        };
        if b.sha != *sha {
            return Err(reply.unexpected(&GET_BLOB, format!("asked for blob {sha}, got {}", b.sha)));
        }
        Ok(Blob { sha: b.sha, bytes })
    }

    /// `GET /repos/{owner}/{repo}/git/matching-refs/{prefix}`: every ref
    /// whose name starts with `prefix` (`heads/benchmark-result/`; a
    /// trailing `/` keeps the match inside that directory), following
    /// pagination links if GitHub sends any. An empty repository is
    /// [`GitHubError::Conflict`].
    pub async fn list_matching_refs(
        &self,
        repo: &Repo,
        prefix: &str,
    ) -> Result<Vec<GitRef>, GitHubError> {
        let path = format!(
            "{}/git/matching-refs/{}",
            repo.api_path(),
            ref_prefix_path(prefix)?
        );
        self.get_all(&LIST_MATCHING_REFS, path).await
    }

    /// `DELETE /repos/{owner}/{repo}/git/refs/{ref}`: 204 is
    /// [`RefDeletion::Deleted`]; 422 "Reference does not exist" is
    /// [`RefDeletion::AlreadyGone`], so deleting is idempotent (also when a
    /// retry follows a deletion whose response was lost). GitHub offers no
    /// compare-and-swap here: read the ref first if it must still point
    /// where you saw it.
    pub async fn delete_ref(
        &self,
        repo: &Repo,
        name: &RefName,
    ) -> Result<RefDeletion, GitHubError> {
        let path = format!("{}/git/refs/{}", repo.api_path(), name.path());
        match self
            .send(&DELETE_REF, Method::DELETE, &path, None::<&()>)
            .await
        {
            Ok(_) => Ok(RefDeletion::Deleted),
            Err(GitHubError::Unprocessable { message, .. })
                if message
                    .to_ascii_lowercase()
                    .contains("reference does not exist") =>
            {
                Ok(RefDeletion::AlreadyGone)
            }
            Err(e) => Err(e),
        }
    }

    /// Every blob (and submodule entry) at every depth of tree `sha`, with
    /// paths from its root, sorted by path, for a tree of any size: one
    /// recursive listing, and where GitHub cuts one short (over 100,000
    /// entries or 7 MB) the tree's root level and a recursive listing of
    /// each subtree in its place, as deep as needed. A history sharded by
    /// lane, year and month costs a few dozen requests at a million
    /// records. Returns the entries and the number of requests; an error
    /// `Ok(Err(tree))` names a single level too large to list.
    pub async fn list_tree_files(
        &self,
        repo: &Repo,
        sha: &GitSha,
    ) -> Result<Result<(Vec<TreeEntry>, usize), GitSha>, GitHubError> {
        let join = |prefix: &str, path: &str| {
            if prefix.is_empty() {
                path.to_owned()
            } else {
                format!("{prefix}/{path}")
            }
        };
        let mut out = Vec::new();
        let mut requests = 0;
        let mut pending = vec![(String::new(), sha.clone())];
        while let Some((prefix, tree)) = pending.pop() {
            let listing = self.get_tree_recursive(repo, &tree).await?;
            requests += 1;
            if !listing.truncated {
                out.extend(
                    listing
                        .tree
                        .into_iter()
                        .filter(|e| e.kind != "tree")
                        .map(|mut e| {
                            e.path = join(&prefix, &e.path);
                            e
                        }),
                );
                continue;
            }
            let level = self.get_tree(repo, &tree).await?;
            requests += 1;
            if level.truncated {
                return Ok(Err(tree));
            }
            for mut e in level.tree {
                e.path = join(&prefix, &e.path);
                if e.kind == "tree" {
                    pending.push((e.path, e.sha));
                } else {
                    out.push(e);
                }
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(Ok((out, requests)))
    }

    /// `GET /repos/{owner}/{repo}/git/trees/{sha}?recursive=1`: every entry
    /// at every depth of a tree (or of a commit's tree). Check
    /// [`Tree::truncated`] before trusting that a path is absent.
    pub async fn get_tree_recursive(&self, repo: &Repo, sha: &GitSha) -> Result<Tree, GitHubError> {
        let path = format!("{}/git/trees/{sha}?recursive=1", repo.api_path());
        self.send(&GET_TREE, Method::GET, &path, None::<&()>)
            .await?
            .json(&GET_TREE)
    }
}

/// Decodes GitHub's base64, which wraps lines with `\n`.
fn decode_base64(content: &str) -> Result<Vec<u8>, base64::DecodeError> {
    use base64::Engine as _;
    let compact: String = content
        .chars()
        .filter(|c| !c.is_ascii_whitespace())
        .collect();
    base64::engine::general_purpose::STANDARD.decode(compact)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sha(c: char) -> GitSha {
        GitSha::new(&c.to_string().repeat(40)).expect("valid sha")
    }

    #[test]
    fn update_ref_body_is_fast_forward_only() {
        let body = serde_json::to_value(UpdateRefRequest::new(&sha('a'))).expect("serializes");
        assert_eq!(
            body,
            serde_json::json!({"sha": "a".repeat(40), "force": false})
        );
    }

    #[test]
    fn tree_entries_are_inline_blobs() {
        let files = [TreeFile {
            path: "records/x.json".into(),
            content: "{}".into(),
        }];
        let body =
            serde_json::to_value(CreateTreeRequest::new(Some(&sha('b')), &files).expect("valid"))
                .expect("serializes");
        assert_eq!(
            body,
            serde_json::json!({
                "base_tree": "b".repeat(40),
                "tree": [{"path": "records/x.json", "mode": "100644", "type": "blob", "content": "{}"}]
            })
        );
        let bad = [TreeFile {
            path: "../x".into(),
            content: String::new(),
        }];
        assert!(CreateTreeRequest::new(None, &bad).is_err());
    }

    fn file(path: &str, content: &str) -> TreeFile {
        TreeFile {
            path: path.into(),
            content: content.into(),
        }
    }

    #[test]
    fn an_entry_size_is_the_bytes_it_serializes_to_plus_its_comma() {
        let awkward: String = (0u8..0x80).map(char::from).collect::<String>() + "é\"\\ü";
        for f in [
            file("a.json", ""),
            file("results/x/y.json", "{\"k\":\"v\\n\"}"),
            file("q\"uote.json", &awkward),
        ] {
            let body = serde_json::to_string(
                &CreateTreeRequest::new(None, std::slice::from_ref(&f)).expect("valid"),
            )
            .expect("serializes");
            // `{"tree":[` entry `]}`: the entry is the body less 11 bytes,
            // and a following entry would add one comma.
            assert_eq!(
                tree_entry_size(&f),
                body.len() - r#"{"tree":[]}"#.len() + 1,
                "{}",
                f.path
            );
        }
    }

    #[test]
    fn batches_keep_order_stay_under_the_budget_and_put_a_large_file_alone() {
        assert!(tree_batches(&[], 100).is_empty());
        let files: Vec<TreeFile> = (0..10)
            .map(|i| file(&format!("f{i}"), &"x".repeat(if i == 4 { 500 } else { 20 })))
            .collect();
        let budget = 200;
        let batches = tree_batches(&files, budget);
        let flat: Vec<&str> = batches
            .iter()
            .flat_map(|b| b.iter().map(|f| f.path.as_str()))
            .collect();
        let want: Vec<String> = (0..10).map(|i| format!("f{i}")).collect();
        assert_eq!(flat, want.iter().map(String::as_str).collect::<Vec<_>>());
        for b in &batches {
            assert!(!b.is_empty());
            let size: usize = b.iter().map(tree_entry_size).sum();
            assert!(
                size <= budget || b.len() == 1,
                "a batch of {} over budget",
                b.len()
            );
        }
        assert!(batches.iter().any(|b| b.len() == 1 && b[0].path == "f4"));
        assert!(batches.len() >= 3, "{} batches", batches.len());
        assert_eq!(tree_batches(&files, usize::MAX).len(), 1);
    }

    #[test]
    fn base64_with_line_breaks() {
        assert_eq!(decode_base64("aGVs\nbG8=\n").expect("valid"), b"hello");
        assert!(decode_base64("!!").is_err());
    }
}
