//! Listing a tree: `git ls-tree -r -z` read into path → blob id, the one
//! parser of its output, and [`TipIndex`], the branch's tip with every
//! blob of its tree.

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use crate::command::{args_text, clone_command, run, run_checked};
use crate::error::HistoryError;

/// The tip of the history branch and the blob at every path of its tree
/// (or of the directories it was listed for).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TipIndex {
    /// The tip commit (None: the branch does not exist yet).
    pub commit: Option<String>,
    /// Its tree.
    pub tree: Option<String>,
    /// Its first parent (None: a root commit, or no branch).
    pub parent: Option<String>,
    /// Every file of the tree, or of `scope`: path → git blob id.
    pub files: BTreeMap<String, String>,
    /// The directories (`results/nightly/2026/11/`) and paths that `files`
    /// covers; None: the whole tree.
    pub scope: Option<BTreeSet<String>>,
    /// For a tip this process just committed over its parent, without
    /// learning the new tree's id: the parent's tree. Listed with `files`
    /// (which holds every path the commit wrote) over it, it gives the
    /// tip's files.
    pub base_tree: Option<String>,
}

impl TipIndex {
    /// Whether `files` says what the tree holds at `path`.
    pub fn covers(&self, path: &str) -> bool {
        match &self.scope {
            None => true,
            Some(s) => s
                .iter()
                .any(|d| path == d || (d.ends_with('/') && path.starts_with(d.as_str()))),
        }
    }

    /// Of `dirs`, those `files` does not cover yet.
    pub fn uncovered<'a>(&self, dirs: &'a [String]) -> Vec<&'a String> {
        dirs.iter().filter(|d| !self.covers(d)).collect()
    }
}

/// Runs `git ls-tree` with `args` (which include `-r -z`) through `git`
/// and returns every blob it lists, by path. Trees and submodules are left
/// out; a line that is not `<mode> <kind> <id>\t<path>` is an error.
pub(crate) fn ls_tree(
    git: Command,
    args: &[&str],
) -> Result<BTreeMap<String, String>, HistoryError> {
    let mut c = git;
    c.args(args);
    let out = run_checked(c, args, None)?;
    let mut files = BTreeMap::new();
    for entry in out.split(|&b| b == 0).filter(|e| !e.is_empty()) {
        let bad = || HistoryError::UnexpectedOutput {
            args: args_text(args),
            output: String::from_utf8_lossy(entry).chars().take(200).collect(),
        };
        let text = std::str::from_utf8(entry).map_err(|_| bad())?;
        let (meta, path) = text.split_once('\t').ok_or_else(bad)?;
        let mut f = meta.split(' ');
        let (_mode, kind, id) = (
            f.next().ok_or_else(bad)?,
            f.next().ok_or_else(bad)?,
            f.next().ok_or_else(bad)?,
        );
        if kind == "blob" {
            files.insert(path.to_owned(), id.to_owned());
        }
    }
    Ok(files)
}

/// The blobs of `tree` under `dirs` (all of them when `dirs` is empty) in
/// the repository `git` points at, by path, or `None` when the repository
/// does not hold that tree. One `cat-file -e` and one `ls-tree -r -z`.
pub(crate) fn list_tree_within(
    git: Command,
    tree: &str,
    dirs: &[&str],
) -> Result<Option<BTreeMap<String, String>>, HistoryError> {
    let spec = format!("{tree}^{{tree}}");
    let mut probe = clone_command(&git);
    let args = ["cat-file", "-e", spec.as_str()];
    probe.args(args);
    let out = run(probe, &args, None)?;
    if !out.status.success() {
        return Ok(None);
    }
    let mut args = vec!["ls-tree", "-r", "-z", "--full-tree", tree, "--"];
    args.extend_from_slice(dirs);
    ls_tree(git, &args).map(Some)
}
