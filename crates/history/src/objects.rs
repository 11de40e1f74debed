//! Reading history's objects from a local object store that is not the
//! history repository itself: a clone (partial or shallow) of the
//! repository that holds the branch, as a publication workflow's checkout
//! gives. Whatever it lacks is `None`, never fetched: the caller reads it
//! elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::batch;
use crate::command::bare_git;
use crate::error::HistoryError;
use crate::tree;

/// A local git object store, read without fetching what it lacks.
#[derive(Debug, Clone)]
pub struct ObjectStore {
    dir: PathBuf,
    sha256: bool,
}

impl ObjectStore {
    /// The repository at `dir` (a work tree or a git directory), whose
    /// objects are named in the SHA-256 object format when `sha256`, else
    /// SHA-1 (as GitHub's are).
    pub fn new(dir: impl Into<PathBuf>, sha256: bool) -> ObjectStore {
        ObjectStore {
            dir: dir.into(),
            sha256,
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn cmd(&self) -> Command {
        let mut git = bare_git();
        // A partial clone must not fetch what it lacks: the caller reads it
        // elsewhere.
        git.arg("-C").arg(&self.dir).env("GIT_NO_LAZY_FETCH", "1");
        git
    }

    /// Every blob of `tree`, by path, or `None` when the store does not
    /// hold that tree. One `cat-file -e` and one `ls-tree -r -z`.
    pub fn list_tree(&self, tree: &str) -> Result<Option<BTreeMap<String, String>>, HistoryError> {
        tree::list_tree_within(self.cmd(), tree, &[])
    }

    /// The blobs of `tree` under `dirs` (directory prefixes or paths), by
    /// path, or `None` when the store does not hold that tree. One
    /// `cat-file -e` and one `ls-tree -r -z` over those paths only.
    pub fn list_tree_within(
        &self,
        tree: &str,
        dirs: &[&str],
    ) -> Result<Option<BTreeMap<String, String>>, HistoryError> {
        tree::list_tree_within(self.cmd(), tree, dirs)
    }

    /// The bytes of every blob in `ids`, in order; `None` for one the store
    /// does not have. Each blob found is checked against its id, so a
    /// damaged object store cannot pass off other bytes. One
    /// `git cat-file --batch --buffer` (the `batch` module).
    pub fn read_present(&self, ids: &[&str]) -> Result<Vec<Option<Vec<u8>>>, HistoryError> {
        batch::read_present(self.cmd(), ids, self.sha256)
    }
}
