//! Creating the history repository atomically, clearing what a killed
//! sweep left behind, and the test-only pause hook.
//!
//! A new repository is built aside, in a hidden sibling directory
//! `.<name>.init-<pid>-<n>` on the same file system, flushed to disk, and
//! renamed into place in one step: a crash at any instant leaves either no
//! repository or a complete one, never a half-initialised directory. A
//! sibling left by a killed initialisation is removed by
//! [`remove_init_leftovers`], which the local sweep calls under its sweep
//! lock; until then it is ignored.
//!
//! [`remove_stale_ref_locks`] removes the lock files git leaves when it is
//! killed inside a ref update. It is only sound while no other process
//! writes the repository, which the local sweep's lock guarantees for
//! benchops's own writers.
//!
//! **Test hook.** When the environment variable [`PAUSE_ENV`] is set to
//! `point=ms[,point=ms…]`, the sweep sleeps that long at each named point:
//! `init` (the repository is built aside, not yet renamed into place) and
//! `ref-lock` (git holds the branch's ref lock: the ref update is prepared
//! but not committed). Crash tests use it to kill the sweep inside those
//! windows. Unset (the normal case), it does nothing.

use std::fs::File;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use benchops::layout::HISTORY_REF;

use crate::command::{bare_git, run_checked};
use crate::error::HistoryError;

/// The environment variable of the test-only pause hook (see the module
/// documentation). Inert unless set.
pub const PAUSE_ENV: &str = "BENCHOPS_TEST_PAUSE";

/// Sleeps at `point` when the test hook asks for it.
pub(crate) fn pause_at(point: &str) {
    let Some(spec) = std::env::var_os(PAUSE_ENV) else {
        return;
    };
    let spec = spec.to_string_lossy();
    for item in spec.split(',') {
        if let Some((name, ms)) = item.split_once('=') {
            if name.trim() == point {
                if let Ok(ms) = ms.trim().parse::<u64>() {
                    std::thread::sleep(Duration::from_millis(ms));
                }
            }
        }
    }
}

/// Whether the pause hook names `point`.
pub(crate) fn pauses_at(point: &str) -> bool {
    std::env::var_os(PAUSE_ENV).is_some_and(|spec| {
        spec.to_string_lossy()
            .split(',')
            .any(|item| item.split_once('=').is_some_and(|(n, _)| n.trim() == point))
    })
}

static INIT_COUNTER: AtomicU64 = AtomicU64::new(0);

fn io_err<'a>(step: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> HistoryError + 'a {
    move |source| HistoryError::Io {
        step,
        path: path.to_path_buf(),
        source,
    }
}

/// The directory holding `path` and the prefix of its init siblings.
fn sibling_prefix(path: &Path) -> (PathBuf, String) {
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    let name = path.file_name().map_or_else(
        || "history".to_owned(),
        |n| n.to_string_lossy().into_owned(),
    );
    (parent, format!(".{name}.init-"))
}

/// Creates a bare repository at `path` (absent, or an empty directory) by
/// building it aside and renaming it into place. `init` runs `git init`
/// on the directory it is given. When another process renamed its own
/// repository into place first, that one is kept and this one discarded.
pub(crate) fn init_atomically(
    path: &Path,
    init: impl FnOnce(&Path) -> Result<(), HistoryError>,
) -> Result<(), HistoryError> {
    let (parent, prefix) = sibling_prefix(path);
    let n = INIT_COUNTER.fetch_add(1, Ordering::Relaxed);
    let aside = parent.join(format!("{prefix}{}-{n}", std::process::id()));
    let built = init(&aside).and_then(|()| {
        pause_at("init");
        sync_tree(&aside)
    });
    if let Err(e) = built {
        let _ = std::fs::remove_dir_all(&aside);
        return Err(e);
    }
    match std::fs::rename(&aside, path) {
        Ok(()) => {
            File::open(&parent)
                .and_then(|d| d.sync_all())
                .map_err(io_err("flush the directory of", path))?;
            Ok(())
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&aside);
            // Someone else's repository landed first: use it.
            let landed = std::fs::read_dir(path)
                .map(|mut d| d.next().is_some())
                .unwrap_or(false);
            if landed {
                Ok(())
            } else {
                Err(io_err("move the new repository into place at", path)(e))
            }
        }
    }
}

/// Flushes every file and directory under `root` (symbolic links are not
/// followed), then `root` itself.
fn sync_tree(root: &Path) -> Result<(), HistoryError> {
    let mut stack = vec![root.to_path_buf()];
    let mut dirs = Vec::new();
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).map_err(io_err("list", &dir))? {
            let entry = entry.map_err(io_err("list", &dir))?;
            let kind = entry.file_type().map_err(io_err("inspect", &dir))?;
            let p = entry.path();
            if kind.is_dir() {
                stack.push(p);
            } else if kind.is_file() {
                File::open(&p)
                    .and_then(|f| f.sync_all())
                    .map_err(io_err("flush", &p))?;
            }
        }
        dirs.push(dir);
    }
    // Children before parents.
    for dir in dirs.iter().rev() {
        File::open(dir)
            .and_then(|f| f.sync_all())
            .map_err(io_err("flush", dir))?;
    }
    Ok(())
}

/// Removes the directories a killed initialisation of `path` left beside
/// it; returns them. Call it only while no other process initialises
/// `path` (the local sweep holds its sweep lock).
pub fn remove_init_leftovers(path: &Path) -> Result<Vec<PathBuf>, HistoryError> {
    let (parent, prefix) = sibling_prefix(path);
    let rd = match std::fs::read_dir(&parent) {
        Ok(rd) => rd,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err("list", &parent)(e)),
    };
    let mut removed = Vec::new();
    for entry in rd {
        let entry = entry.map_err(io_err("list", &parent))?;
        if !entry.file_name().to_string_lossy().starts_with(&prefix) {
            continue;
        }
        let p = entry.path();
        let kind = entry.file_type().map_err(io_err("inspect", &p))?;
        let gone = if kind.is_dir() {
            std::fs::remove_dir_all(&p)
        } else {
            std::fs::remove_file(&p)
        };
        gone.map_err(io_err("remove the leftover", &p))?;
        removed.push(p);
    }
    Ok(removed)
}

/// The lock files git takes while updating the history branch: the
/// branch's own, `HEAD`'s (a `HEAD` that names the branch is locked with
/// it) and the packed refs'.
fn ref_lock_files(git_dir: &Path) -> [PathBuf; 3] {
    [
        git_dir.join(format!("{HISTORY_REF}.lock")),
        git_dir.join("HEAD.lock"),
        git_dir.join("packed-refs.lock"),
    ]
}

/// Removes the history branch's ref lock files, which only a git process
/// that was killed inside a ref update leaves behind; returns the ones
/// removed. Sound only while no other process writes the repository.
pub fn remove_stale_ref_locks(git_dir: &Path) -> Result<Vec<PathBuf>, HistoryError> {
    let mut removed = Vec::new();
    for lock in ref_lock_files(git_dir) {
        match std::fs::remove_file(&lock) {
            Ok(()) => removed.push(lock),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("remove the stale lock", &lock)(e)),
        }
    }
    Ok(removed)
}

/// `git init --bare` of a new history repository at `dir`, whose `HEAD`
/// names the history branch.
pub(crate) fn git_init_bare(dir: &Path) -> Result<(), HistoryError> {
    let init_branch = format!("init.defaultBranch={}", benchops::layout::HISTORY_BRANCH);
    let mut c = bare_git();
    c.args(["-c", &init_branch, "init", "--bare", "--quiet"])
        .arg(dir);
    run_checked(c, &["init", "--bare"], None).map(drop)
}
