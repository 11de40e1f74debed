//! A history branch behind a git URL, fetched into a local cache
//! repository with the environment's own git access (SSH key, credential
//! helper; never a prompt, never a token of benchops') and read there.

use std::path::Path;

use benchops::Sha256Digest;
use benchops::layout::{HISTORY_BRANCH, HISTORY_REF};

use crate::command::{bare_git, run_checked};
use crate::error::HistoryError;
use crate::repo::LocalHistory;

/// Fetches the history branch of `url` into a cache repository under
/// `cache` (one per URL, created when missing), without updating any ref
/// there; returns the cache and the fetched commit (None when the remote
/// has no history branch). The commit's objects are in the cache, so it
/// is read there like a local history's tip.
pub fn fetch(url: &str, cache: &Path) -> Result<(LocalHistory, Option<String>), HistoryError> {
    let name = Sha256Digest::of(url.as_bytes()).hex()[..16].to_owned();
    let dir = cache.join(format!("{name}.git"));
    if !dir.join("HEAD").exists() {
        std::fs::create_dir_all(cache).map_err(|source| HistoryError::Io {
            step: "create the fetch cache",
            path: cache.to_path_buf(),
            source,
        })?;
        let mut c = bare_git();
        let args = ["init", "--bare", "--quiet"];
        c.args(args).arg(&dir);
        run_checked(c, &args, None)?;
    }
    let history = LocalHistory::open(&dir)?;
    let args = ["ls-remote", "--heads", url, HISTORY_BRANCH];
    let mut c = history.cmd();
    c.args(args);
    let heads = run_checked(c, &args, None)?;
    if heads.is_empty() {
        return Ok((history, None));
    }
    let args = [
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        url,
        HISTORY_REF,
    ];
    let mut c = history.cmd();
    c.args(args);
    run_checked(c, &args, None)?;
    let tip = String::from_utf8_lossy(&heads)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    Ok((history, Some(tip)))
}
