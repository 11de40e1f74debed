//! Reading a lane's baseline and the drift state from the
//! `benchmark-history` branch, read-only, with `git` alone: a local
//! repository on disk, or a git URL fetched into a cache with the
//! environment's own git access. No GitHub API and no token.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use benchops::baseline::BaselinePointer;
use benchops::layout::{self, RecordEntry};
use benchops::reconcile::{DriftKey, HistoryRecord, Standing, drift_statuses};
use benchops::seal::SealedRecord;
use benchops::{LaneName, Sha256Digest};

/// Why history could not be read.
#[derive(Debug, thiserror::Error)]
pub enum HistoryReadError {
    /// The local path does not exist.
    #[error(
        "history {0} does not exist; give the publisher's history repository (an empty git repository is fine for a lane's first run: `git init --bare {0}`)"
    )]
    Missing(PathBuf),
    /// The path is not a git repository.
    #[error("history {path} is not a git repository: {reason}")]
    NotARepository {
        /// The path.
        path: String,
        /// What git said.
        reason: String,
    },
    /// A git command failed.
    #[error("reading history {what} failed: {reason}")]
    Git {
        /// What was read.
        what: String,
        /// What git said.
        reason: String,
    },
    /// git could not be started.
    #[error("failed to run git")]
    Spawn(#[source] std::io::Error),
    /// The baseline pointer or record is invalid.
    #[error("history {source_name}: {path} is invalid: {reason}")]
    Invalid {
        /// The history.
        source_name: String,
        /// The path on the branch.
        path: String,
        /// Why.
        reason: String,
    },
}

/// The baseline a lane run compares with.
#[derive(Debug, Clone)]
pub struct Baseline {
    /// The pointer.
    pub pointer: BaselinePointer,
    /// The verified record.
    pub record: SealedRecord,
}

/// What a lane run needs from history.
#[derive(Debug, Clone, Default)]
pub struct HistoryView {
    /// The branch tip read, if the branch exists.
    pub tip: Option<String>,
    /// The lane's baseline, if it has a pointer.
    pub baseline: Option<Baseline>,
    /// Keys this lane has not cleared since their latest evidence.
    pub drifting: Vec<DriftKey>,
    /// Records read from history (all lanes).
    pub records: usize,
    /// Records that failed verification and were left out, with why.
    pub skipped: Vec<String>,
}

/// The most records read from history for the drift state.
pub const MAX_RECORDS: usize = 100_000;

/// Where history is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistorySource {
    /// A repository on disk (bare, or a work tree with `.git`).
    Local(PathBuf),
    /// A git URL.
    Url(String),
}

impl HistorySource {
    /// A URL (`scheme://…` or `user@host:path`) or a local path.
    pub fn parse(text: &str) -> HistorySource {
        let scp_like = text.split_once(':').is_some_and(|(host, _)| {
            host.contains('@') && !host.contains('/') && !Path::new(text).exists()
        });
        if text.contains("://") || scp_like {
            HistorySource::Url(text.to_owned())
        } else {
            HistorySource::Local(PathBuf::from(text))
        }
    }

    /// How it is named in messages.
    pub fn display(&self) -> String {
        match self {
            HistorySource::Local(p) => p.display().to_string(),
            HistorySource::Url(u) => u.clone(),
        }
    }
}

fn git(git_dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("--git-dir").arg(git_dir);
    c.env("GIT_TERMINAL_PROMPT", "0");
    c.stdin(Stdio::null());
    c
}

fn run(mut c: Command, what: &str) -> Result<Vec<u8>, HistoryReadError> {
    let out = c.output().map_err(HistoryReadError::Spawn)?;
    if !out.status.success() {
        return Err(HistoryReadError::Git {
            what: what.to_owned(),
            reason: benchops::excerpt::bytes_prefix(
                String::from_utf8_lossy(&out.stderr).trim().as_bytes(),
                400,
            ),
        });
    }
    Ok(out.stdout)
}

/// The git directory of a local history, checked to be a repository.
fn local_git_dir(path: &Path) -> Result<PathBuf, HistoryReadError> {
    if !path.exists() {
        return Err(HistoryReadError::Missing(path.to_path_buf()));
    }
    let dot = path.join(".git");
    let dir = if dot.exists() {
        dot
    } else {
        path.to_path_buf()
    };
    let mut c = git(&dir);
    c.args(["rev-parse", "--git-dir"]);
    let out = c.output().map_err(HistoryReadError::Spawn)?;
    if !out.status.success() {
        return Err(HistoryReadError::NotARepository {
            path: path.display().to_string(),
            reason: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    Ok(dir)
}

/// Fetches the history branch of `url` into a cache repository under
/// `cache`, without updating any ref there; returns the cache and the
/// fetched commit (None when the remote has no history branch).
fn fetch(url: &str, cache: &Path) -> Result<(PathBuf, Option<String>), HistoryReadError> {
    let name = Sha256Digest::of(url.as_bytes()).hex()[..16].to_owned();
    let dir = cache.join(format!("{name}.git"));
    if !dir.join("HEAD").exists() {
        std::fs::create_dir_all(cache).map_err(|e| HistoryReadError::Git {
            what: format!("cache {}", cache.display()),
            reason: e.to_string(),
        })?;
        let mut c = Command::new("git");
        c.args(["init", "--bare", "--quiet"]).arg(&dir);
        run(c, "init of the fetch cache")?;
    }
    let mut ls = git(&dir);
    ls.args(["ls-remote", "--heads", url, layout::HISTORY_BRANCH]);
    let heads = run(ls, &format!("{url} (ls-remote)"))?;
    if heads.is_empty() {
        return Ok((dir, None));
    }
    let mut c = git(&dir);
    c.args([
        "fetch",
        "--quiet",
        "--no-tags",
        "--no-write-fetch-head",
        url,
    ]);
    c.arg(layout::HISTORY_REF);
    run(c, &format!("{url} (fetch)"))?;
    let tip = String::from_utf8_lossy(&heads)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    Ok((dir, Some(tip)))
}

fn tip_of(dir: &Path) -> Result<Option<String>, HistoryReadError> {
    let mut c = git(dir);
    c.args(["rev-parse", "--verify", "--quiet"]);
    c.arg(format!("{}^{{commit}}", layout::HISTORY_REF));
    let out = c.output().map_err(HistoryReadError::Spawn)?;
    if out.status.success() {
        Ok(Some(String::from_utf8_lossy(&out.stdout).trim().to_owned()))
    } else {
        Ok(None)
    }
}

/// Reads `paths` at `tip` with one `git cat-file --batch`: the bytes of
/// each path that exists, `None` for the others.
fn read_blobs(
    dir: &Path,
    tip: &str,
    paths: &[String],
) -> Result<Vec<Option<Vec<u8>>>, HistoryReadError> {
    let mut c = git(dir);
    c.args(["cat-file", "--batch"]);
    c.stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = c.spawn().map_err(HistoryReadError::Spawn)?;
    let mut input = String::new();
    for p in paths {
        input.push_str(&format!("{tip}:{p}\n"));
    }
    let mut stdin = child.stdin.take().ok_or_else(|| HistoryReadError::Git {
        what: "cat-file".into(),
        reason: "no stdin".into(),
    })?;
    let writer = std::thread::spawn(move || stdin.write_all(input.as_bytes()));
    let out = child.wait_with_output().map_err(HistoryReadError::Spawn)?;
    let _ = writer.join();
    if !out.status.success() {
        return Err(HistoryReadError::Git {
            what: "cat-file".into(),
            reason: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        });
    }
    let bad = || HistoryReadError::Git {
        what: "cat-file".into(),
        reason: "unexpected output".into(),
    };
    let mut rest = &out.stdout[..];
    let mut blobs = Vec::with_capacity(paths.len());
    for _ in paths {
        let nl = rest.iter().position(|&b| b == b'\n').ok_or_else(bad)?;
        let header = String::from_utf8_lossy(&rest[..nl]).into_owned();
        rest = &rest[nl + 1..];
        if header.ends_with(" missing") {
            blobs.push(None);
            continue;
        }
        let size: usize = header
            .rsplit(' ')
            .next()
            .and_then(|s| s.parse().ok())
            .ok_or_else(bad)?;
        if rest.len() < size + 1 {
            return Err(bad());
        }
        blobs.push(Some(rest[..size].to_vec()));
        rest = &rest[size + 1..];
    }
    Ok(blobs)
}

/// Reads what a run of `lane` needs from `source`: its baseline, and the
/// keys history holds as drifting for it under `manifest`. `cache` is where
/// a URL's history is fetched to.
pub fn read(
    source: &HistorySource,
    cache: &Path,
    lane: &LaneName,
    manifest: &benchops::manifest::Manifest,
) -> Result<HistoryView, HistoryReadError> {
    let (dir, tip) = match source {
        HistorySource::Local(p) => {
            let dir = local_git_dir(p)?;
            let tip = tip_of(&dir)?;
            (dir, tip)
        }
        HistorySource::Url(u) => fetch(u, cache)?,
    };
    let Some(tip) = tip else {
        return Ok(HistoryView::default());
    };
    let name = source.display();
    let invalid = |path: &str, reason: String| HistoryReadError::Invalid {
        source_name: name.clone(),
        path: path.to_owned(),
        reason,
    };
    // The baseline.
    let bpath = layout::baseline_path(lane);
    let baseline = match read_blobs(&dir, &tip, std::slice::from_ref(&bpath))?
        .pop()
        .flatten()
    {
        None => None,
        Some(bytes) => {
            let pointer = BaselinePointer::from_bytes(&bytes, lane)
                .map_err(|e| invalid(&bpath, e.join("; ")))?;
            let bytes = read_blobs(&dir, &tip, std::slice::from_ref(&pointer.path))?
                .pop()
                .flatten()
                .ok_or_else(|| {
                    invalid(
                        &bpath,
                        format!("its record {} is not on the branch", pointer.path),
                    )
                })?;
            let record = benchops::seal::verify(&bytes, Some(&pointer.record))
                .map_err(|e| invalid(&pointer.path, e.to_string()))?;
            Some(Baseline { pointer, record })
        }
    };
    // Every record, for the drift state.
    let mut ls = git(&dir);
    ls.args(["ls-tree", "-r", "--name-only", &tip, "--", "results/"]);
    let listing = run(ls, "the record listing")?;
    let paths: Vec<String> = String::from_utf8_lossy(&listing)
        .lines()
        .filter(|p| RecordEntry::parse(p).is_ok())
        .take(MAX_RECORDS)
        .map(str::to_owned)
        .collect();
    let blobs = read_blobs(&dir, &tip, &paths)?;
    let mut sealed = Vec::with_capacity(paths.len());
    let mut skipped = Vec::new();
    for (p, b) in paths.iter().zip(blobs) {
        let Some(bytes) = b else { continue };
        let digest = RecordEntry::parse(p).map(|e| e.digest).ok();
        match benchops::seal::verify(&bytes, digest.as_ref()) {
            Ok(s) => sealed.push(s),
            Err(e) => skipped.push(format!(
                "{p}: {}",
                benchops::excerpt::bytes_prefix(e.to_string().as_bytes(), 200)
            )),
        }
    }
    let history: Vec<HistoryRecord<'_>> = sealed
        .iter()
        .map(|s| HistoryRecord {
            digest: s.digest(),
            record: s.record(),
        })
        .collect();
    let drifting = drift_statuses(manifest, &history)
        .into_iter()
        .filter(|s| match &s.standing {
            Standing::Reproducing { holding } => holding.contains(lane),
            Standing::Uncovered | Standing::Cleared { .. } => false,
        })
        .map(|s| s.key)
        .collect();
    Ok(HistoryView {
        tip: Some(tip),
        baseline,
        drifting,
        records: sealed.len(),
        skipped,
    })
}
