//! The subject at any commit: a tree of the subject's repository at a given
//! commit, materialised in the state directory, so that a lane run can
//! measure the baseline commit beside the candidate and bisect the commits
//! between them.
//!
//! * **Materialised by export.** `git archive <commit>` unpacked into a
//!   temporary directory, then renamed to `<state>/subjects/<commit>/`. An
//!   export leaves nothing in the user's repository (no worktree to
//!   register or prune), and the rename makes it all or nothing: a tree
//!   that exists is complete, and one cut short by `SIGKILL` is a
//!   `.tmp-*` directory that the next [`Subjects::prune`] removes.
//!   Submodules and files kept out of archives (`export-ignore`) are not
//!   part of an export.
//! * **Cached by commit**, with a bounded size: [`Subjects::prune`] keeps
//!   the most recently used trees up to a count (every lane run calls it
//!   with [`DEFAULT_KEEP`]) and `benchops-exec subject prune` runs it by
//!   hand.
//! * **First-parent ranges** for bisection: [`first_parent_range`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use benchops::record::RunSide;
use serde_json::Value;

/// The parameter of an interleaved stage that carries a run's token
/// (`003-b`: round 3 of side B; see `lane::sides`).
pub const RUN_PARAM: &str = "benchops_run";

/// A token's parts: whether it is a warm-up, and its side.
pub fn parse_token(token: &str) -> Option<(bool, RunSide)> {
    let (round, side) = token.split_once('-')?;
    let warm = round.starts_with('w');
    let side = match side {
        "a" => RunSide::A,
        "b" => RunSide::B,
        "good" => RunSide::Good,
        "mid" => RunSide::Mid,
        "bad" => RunSide::Bad,
        _ => return None,
    };
    Some((warm, side))
}

/// The variables the child wrapper adds for a run of an interleaved
/// stage: its own side's `BENCHOPS_SUBJECT_DIR` and
/// `BENCHOPS_SUBJECT_COMMIT`, and `BENCHOPS_SIDE`. Nothing for any other
/// run. This is the one place a run learns its side.
pub fn side_env(
    point: &BTreeMap<String, Value>,
    env: &BTreeMap<String, String>,
) -> Vec<(String, String)> {
    let Some((_, side)) = point
        .get(RUN_PARAM)
        .and_then(Value::as_str)
        .and_then(parse_token)
    else {
        return Vec::new();
    };
    let up = side.as_str().to_ascii_uppercase();
    let mut out = vec![("BENCHOPS_SIDE".to_owned(), side.as_str().to_owned())];
    for what in ["DIR", "COMMIT"] {
        if let Some(v) = env.get(&format!("BENCHOPS_SUBJECT_{what}_{up}")) {
            out.push((format!("BENCHOPS_SUBJECT_{what}"), v.clone()));
        }
    }
    out
}

/// Trees a lane run leaves in the cache.
pub const DEFAULT_KEEP: usize = 16;

/// The longest first-parent range a bisection takes, in commits.
pub const MAX_RANGE: usize = 4096;

/// Why a subject could not be materialised or inspected.
#[derive(Debug, thiserror::Error)]
pub enum SubjectError {
    /// `git` could not be started.
    #[error("failed to run git in {dir}: {source}")]
    Spawn {
        /// The repository.
        dir: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The directory is not a git checkout.
    #[error("{} is not a git checkout", .0.display())]
    NotGit(PathBuf),
    /// The commit is not in the repository.
    #[error("commit {commit} is not in the repository at {}", dir.display())]
    UnknownCommit {
        /// The repository.
        dir: PathBuf,
        /// The commit.
        commit: String,
    },
    /// A git command failed.
    #[error("git {what} failed in {}: {stderr}", dir.display())]
    Git {
        /// What was asked.
        what: String,
        /// The repository.
        dir: PathBuf,
        /// The first lines of its standard error.
        stderr: String,
    },
    /// The cache could not be written.
    #[error("failed to write the subject cache at {}: {source}", path.display())]
    Io {
        /// The path.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// The range is longer than a bisection takes.
    #[error(
        "the first-parent range from {good} to {bad} holds more than {MAX_RANGE} commits; bisect a shorter range"
    )]
    RangeTooLong {
        /// The good bound.
        good: String,
        /// The bad bound.
        bad: String,
    },
    /// The good bound is not on the bad bound's first-parent chain.
    #[error("{good} is not an ancestor of {bad} on its first-parent chain")]
    NotAncestor {
        /// The good bound.
        good: String,
        /// The bad bound.
        bad: String,
    },
}

fn git(dir: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C")
        .arg(dir)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null());
    c
}

/// Runs `git args` in `dir`; its standard output on success.
fn output(dir: &Path, args: &[&str]) -> Result<std::process::Output, SubjectError> {
    git(dir)
        .args(args)
        .output()
        .map_err(|source| SubjectError::Spawn {
            dir: dir.to_path_buf(),
            source,
        })
}

fn stderr_head(out: &std::process::Output) -> String {
    benchops::terminal::escape_bounded(
        String::from_utf8_lossy(&out.stderr)
            .lines()
            .take(3)
            .collect::<Vec<_>>()
            .join(" / ")
            .trim(),
        400,
    )
}

/// The full commit id `rev` (a commit id, branch, tag or any revision
/// `git rev-parse --verify REV^{commit}` accepts) names in the repository
/// at `dir`. `Err` holds why not, as a parenthesised detail (what git said),
/// for the caller to name its flag. A revision that starts with `-` is
/// refused: it would read as an option.
pub fn resolve_rev(dir: &Path, rev: &str) -> Result<String, String> {
    if rev.is_empty() || rev.starts_with('-') {
        return Err(" (a revision cannot be empty or start with '-')".into());
    }
    let out = output(
        dir,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &format!("{rev}^{{commit}}"),
        ],
    )
    .map_err(|e| format!(" ({e})"))?;
    let text = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || text.is_empty() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let first = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
        return Err(if first.is_empty() {
            String::new()
        } else {
            format!(" (git: {})", benchops::terminal::escape_bounded(first, 200))
        });
    }
    Ok(text)
}

/// Whether `dir` is a git checkout.
pub fn is_git_checkout(dir: &Path) -> bool {
    output(dir, &["rev-parse", "--git-dir"]).is_ok_and(|o| o.status.success())
}

/// Where `dir` lies inside its checkout: `""` at its top, `sub/dir/`
/// below; `None` when `dir` is inside a git directory but no work tree.
pub fn checkout_prefix(dir: &Path) -> Result<Option<String>, SubjectError> {
    let out = output(dir, &["rev-parse", "--show-prefix"])?;
    Ok(out
        .status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned()))
}

/// Whether the repository at `dir` holds `commit`.
pub fn has_commit(dir: &Path, commit: &str) -> bool {
    output(dir, &["cat-file", "-e", &format!("{commit}^{{commit}}")])
        .is_ok_and(|o| o.status.success())
}

/// The first-parent chain from `good` to `bad`: index 0 is `good`, the last
/// is `bad`, and every commit between follows its predecessor as its first
/// child on `bad`'s first-parent history (a merge on that chain is one
/// entry).
pub fn first_parent_range(dir: &Path, good: &str, bad: &str) -> Result<Vec<String>, SubjectError> {
    if !is_git_checkout(dir) {
        return Err(SubjectError::NotGit(dir.to_path_buf()));
    }
    for c in [good, bad] {
        if !has_commit(dir, c) {
            return Err(SubjectError::UnknownCommit {
                dir: dir.to_path_buf(),
                commit: c.to_owned(),
            });
        }
    }
    let limit = format!("--max-count={}", MAX_RANGE + 1);
    let range = format!("{good}..{bad}");
    let out = output(dir, &["rev-list", "--first-parent", &limit, &range])?;
    if !out.status.success() {
        return Err(SubjectError::Git {
            what: "rev-list".into(),
            dir: dir.to_path_buf(),
            stderr: stderr_head(&out),
        });
    }
    let mut after: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(str::to_owned)
        .collect();
    if after.len() > MAX_RANGE {
        return Err(SubjectError::RangeTooLong {
            good: good.to_owned(),
            bad: bad.to_owned(),
        });
    }
    after.reverse();
    // The chain must start right after `good`: the oldest commit of the
    // range has `good` as its first parent.
    let linked = match after.first() {
        None => good == bad,
        Some(oldest) => {
            let parent = output(dir, &["rev-parse", &format!("{oldest}^1")])?;
            parent.status.success() && String::from_utf8_lossy(&parent.stdout).trim() == good
        }
    };
    if !linked {
        return Err(SubjectError::NotAncestor {
            good: good.to_owned(),
            bad: bad.to_owned(),
        });
    }
    let mut commits = Vec::with_capacity(after.len() + 1);
    commits.push(good.to_owned());
    commits.extend(after);
    Ok(commits)
}

/// The first line of a commit's message, for people.
pub fn subject_line(dir: &Path, commit: &str) -> Option<String> {
    let out = output(dir, &["log", "-1", "--format=%s", commit]).ok()?;
    out.status.success().then(|| {
        benchops::terminal::escape_bounded(String::from_utf8_lossy(&out.stdout).trim(), 120)
    })
}

/// The cache of materialised trees: `<state>/subjects/`.
#[derive(Debug, Clone)]
pub struct Subjects {
    root: PathBuf,
}

impl Subjects {
    /// The cache under the state directory `state`.
    pub fn new(state: &crate::state::StateDir) -> Subjects {
        Subjects {
            root: state.root().join("subjects"),
        }
    }

    /// Where the tree of `commit` is (whether or not it exists yet).
    pub fn tree(&self, commit: &str) -> PathBuf {
        self.root.join(commit)
    }

    /// The tree of `commit` from the repository at `repo`, materialised
    /// once and reused after.
    pub fn materialise(&self, repo: &Path, commit: &str) -> Result<PathBuf, SubjectError> {
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SubjectError::Io { path, source }
        };
        let dest = self.tree(commit);
        if dest.is_dir() {
            // Used now: the most recently used trees are the ones kept.
            let _ = filetime_touch(&dest);
            return std::path::absolute(&dest).map_err(io(&dest));
        }
        if !has_commit(repo, commit) {
            return Err(SubjectError::UnknownCommit {
                dir: repo.to_path_buf(),
                commit: commit.to_owned(),
            });
        }
        std::fs::create_dir_all(&self.root).map_err(io(&self.root))?;
        let tmp = self
            .root
            .join(format!(".tmp-{commit}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&tmp);
        std::fs::create_dir_all(&tmp).map_err(io(&tmp))?;
        let mut archive = git(repo)
            .args(["archive", "--format=tar", commit])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|source| SubjectError::Spawn {
                dir: repo.to_path_buf(),
                source,
            })?;
        let unpack = archive
            .stdout
            .take()
            .map(|out| {
                Command::new("tar")
                    .arg("-x")
                    .arg("-C")
                    .arg(&tmp)
                    .stdin(out)
                    .stderr(Stdio::piped())
                    .output()
            })
            .transpose()
            .map_err(io(&tmp))?;
        let archived = archive.wait_with_output().map_err(io(&tmp))?;
        let ok = archived.status.success() && unpack.as_ref().is_some_and(|u| u.status.success());
        if !ok {
            let _ = std::fs::remove_dir_all(&tmp);
            let stderr = if archived.status.success() {
                unpack.as_ref().map(stderr_head).unwrap_or_default()
            } else {
                stderr_head(&archived)
            };
            return Err(SubjectError::Git {
                what: format!("archive {commit}"),
                dir: repo.to_path_buf(),
                stderr,
            });
        }
        match std::fs::rename(&tmp, &dest) {
            Ok(()) => {}
            // Another lane run materialised it first: theirs is as good.
            Err(_) if dest.is_dir() => {
                let _ = std::fs::remove_dir_all(&tmp);
            }
            Err(source) => return Err(SubjectError::Io { path: dest, source }),
        }
        // The rename is what makes the tree exist.
        let _ = std::fs::File::open(&self.root).and_then(|d| d.sync_all());
        std::path::absolute(&dest).map_err(io(&dest))
    }

    /// Every materialised tree: commit, and when it was last used.
    pub fn list(&self) -> Vec<(String, std::time::SystemTime)> {
        let mut out: Vec<(String, std::time::SystemTime)> = std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let hex = (name.len() == 40 || name.len() == 64)
                    && name.bytes().all(|b| b.is_ascii_hexdigit());
                let used = e.metadata().ok()?.modified().ok()?;
                hex.then_some((name, used))
            })
            .collect();
        out.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        out
    }

    /// Removes every tree but the `keep` most recently used and those in
    /// `pinned`, and every unfinished export; returns what it removed.
    pub fn prune(&self, keep: usize, pinned: &[&str]) -> Result<Vec<String>, SubjectError> {
        let mut removed = Vec::new();
        for e in std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
        {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(".tmp-") {
                std::fs::remove_dir_all(e.path()).map_err(|source| SubjectError::Io {
                    path: e.path(),
                    source,
                })?;
            }
        }
        for commit in self.removable(keep, pinned) {
            let path = self.tree(&commit);
            std::fs::remove_dir_all(&path).map_err(|source| SubjectError::Io { path, source })?;
            // Its builds' outcomes go with it.
            for build in self.builds(&commit) {
                let _ = std::fs::remove_dir_all(build);
            }
            removed.push(commit);
        }
        Ok(removed)
    }

    /// The trees the cache may let go: every tree but the `keep` most
    /// recently used and those in `pinned`, least recently used last. The
    /// one rule of [`Subjects::prune`] and of `benchops-exec gc`.
    pub fn removable(&self, keep: usize, pinned: &[&str]) -> Vec<String> {
        self.list()
            .into_iter()
            .filter(|(c, _)| !pinned.contains(&c.as_str()))
            .skip(keep)
            .map(|(c, _)| c)
            .collect()
    }

    /// The kept build outcomes of `commit`'s tree
    /// (`subjects/<commit>.build-<fp>/`).
    pub fn builds(&self, commit: &str) -> Vec<PathBuf> {
        let prefix = format!("{commit}.build-");
        std::fs::read_dir(&self.root)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().starts_with(&prefix))
            .map(|e| e.path())
            .collect()
    }
}

/// What building a tree did.
#[derive(Debug, Clone, PartialEq)]
pub struct BuildOutcome {
    /// Whether the build succeeded.
    pub ok: bool,
    /// How long it took, when it ran.
    pub duration_s: Option<f64>,
    /// One line: the exit and the last lines of its output.
    pub summary: String,
    /// Whether this call ran it (false: the kept outcome of an earlier run).
    pub ran: bool,
}

/// The build's fingerprint: its command and limit, and the machine.
fn build_fingerprint(build: &benchops::manifest::SubjectBuild) -> benchops::Sha256Digest {
    let machine = benchops::record::Environment::from_facts(crate::state::machine_facts());
    let v = serde_json::json!({
        "schema": "benchops-subject-build/v1",
        "command": build.command,
        "timeout_s": build.timeout_s,
        "machine": machine.fingerprint.to_string(),
    });
    benchops::Sha256Digest::of(&benchops::jcs::canonical_bytes(&v))
}

impl Subjects {
    /// Builds the tree of `commit` (materialised at `tree`) with `build`,
    /// once per commit, build command and machine: the outcome, output
    /// tails and duration are kept in `subjects/<commit>.build-<fp>/` (the
    /// wrapper's `started.json` and `result.json`), and a later call
    /// returns the kept outcome, failed or not. A build cut short (no
    /// `result.json`) runs again. Publication credentials are removed from
    /// its environment, as from every child's.
    pub fn build(
        &self,
        tree: &Path,
        commit: &str,
        build: &benchops::manifest::SubjectBuild,
    ) -> Result<BuildOutcome, SubjectError> {
        let fp = build_fingerprint(build);
        let dir = self
            .root
            .join(format!("{commit}.build-{}", &fp.hex()[..16]));
        let io = |path: &Path| {
            let path = path.to_path_buf();
            move |source| SubjectError::Io { path, source }
        };
        std::fs::create_dir_all(&dir).map_err(io(&dir))?;
        let lock_path = dir.join(".lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        // Another lane run building the same tree: wait for its outcome.
        let _guard = nix::fcntl::Flock::lock(lock, nix::fcntl::FlockArg::LockExclusive).map_err(
            |(_, e)| SubjectError::Io {
                path: lock_path.clone(),
                source: e.into(),
            },
        )?;
        let result_path = dir.join("result.json");
        if let Ok(r) = crate::child::read_result(&result_path) {
            return Ok(outcome_of(&r, false));
        }
        let mut env = BTreeMap::new();
        env.insert(
            "BENCHOPS_SUBJECT_DIR".to_owned(),
            tree.display().to_string(),
        );
        env.insert("BENCHOPS_SUBJECT_COMMIT".to_owned(), commit.to_owned());
        let spec = crate::child::ChildSpec {
            argv: build.command.clone(),
            shell: false,
            env,
            env_remove: Vec::new(),
            workdir: Some(tree.to_path_buf()),
            timeout: std::time::Duration::try_from_secs_f64(
                build
                    .timeout_s
                    .unwrap_or(benchops::manifest::DEFAULT_BUILD_TIMEOUT_S),
            )
            .ok(),
            json_metrics: false,
        };
        let id = crate::child::AttemptIdentity {
            benchmark: format!("build:{commit}"),
            index: 0,
            attempt: 1,
            child_digest: fp.to_string(),
            restart: 0,
        };
        let r = crate::child::run_child(&spec, &id, &dir).map_err(|e| SubjectError::Git {
            what: "build".into(),
            dir: tree.to_path_buf(),
            stderr: e.to_string(),
        })?;
        Ok(outcome_of(&r, true))
    }
}

fn outcome_of(r: &crate::child::ChildResult, ran: bool) -> BuildOutcome {
    let ok = r.succeeded();
    let tail: Vec<&str> = r
        .stderr_tail
        .lines()
        .chain(r.stdout_tail.lines())
        .filter(|l| !l.trim().is_empty())
        .collect();
    let last = tail[tail.len().saturating_sub(3)..].join(" / ");
    let exit = r.exit.describe();
    let summary = benchops::terminal::escape_bounded(
        &format!(
            "{} ({exit}) after {:.1} s{}",
            if ok { "built" } else { "the build failed" },
            r.wall_s.map_or(0.0, |w| w.get()),
            if last.is_empty() {
                String::new()
            } else {
                format!(": {last}")
            }
        ),
        600,
    );
    BuildOutcome {
        ok,
        duration_s: r.wall_s.map(|w| w.get()),
        summary,
        ran,
    }
}

/// Sets a directory's modification time to now (its "last used" time).
fn filetime_touch(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.set_modified(std::time::SystemTime::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(dir: &Path, args: &[&str]) -> String {
        let out = Command::new("git")
            .arg("-C")
            .arg(dir)
            .args([
                "-c",
                "user.name=t",
                "-c",
                "user.email=t@t.invalid",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .output()
            .expect("git");
        assert!(out.status.success(), "git {args:?}: {out:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn commit(dir: &Path, file: &str, text: &str) -> String {
        std::fs::write(dir.join(file), text).expect("write");
        sh(dir, &["add", "-A"]);
        sh(dir, &["commit", "-q", "-m", text]);
        sh(dir, &["rev-parse", "HEAD"])
    }

    #[test]
    fn a_commit_is_exported_once_and_the_cache_is_bounded() {
        let t = tempfile::tempdir().expect("tmp");
        let repo = t.path().join("repo");
        std::fs::create_dir_all(&repo).expect("mkdir");
        sh(&repo, &["init", "-q"]);
        let c1 = commit(&repo, "speed.conf", "1");
        let c2 = commit(&repo, "speed.conf", "2");
        let state = crate::state::StateDir::new(t.path().join("state"));
        let s = Subjects::new(&state);
        let d1 = s.materialise(&repo, &c1).expect("c1");
        assert_eq!(
            std::fs::read_to_string(d1.join("speed.conf")).expect("read"),
            "1"
        );
        // Reused, not exported again: a file added to the tree stays.
        std::fs::write(d1.join("marker"), "").expect("marker");
        assert!(
            s.materialise(&repo, &c1)
                .expect("again")
                .join("marker")
                .is_file()
        );
        let d2 = s.materialise(&repo, &c2).expect("c2");
        assert_eq!(
            std::fs::read_to_string(d2.join("speed.conf")).expect("read"),
            "2"
        );
        // An export cut short is removed, and only `keep` trees stay.
        std::fs::create_dir_all(t.path().join("state/subjects/.tmp-x-1")).expect("tmp");
        filetime_touch(&d2).expect("touch");
        let removed = s.prune(1, &[]).expect("prune");
        assert_eq!(s.list().len(), 1);
        assert_eq!(removed.len(), 1);
        assert!(!t.path().join("state/subjects/.tmp-x-1").exists());
        // Pinned trees stay whatever their age.
        let removed = s.prune(0, &[s.list()[0].0.as_str()]).expect("prune");
        assert!(removed.is_empty());
        // A commit the repository lacks is named.
        let missing = "0".repeat(40);
        let e = s.materialise(&repo, &missing).expect_err("missing");
        assert!(e.to_string().contains(&missing), "{e}");
    }

    #[test]
    fn a_first_parent_range_counts_a_merge_once() {
        let t = tempfile::tempdir().expect("tmp");
        let repo = t.path();
        sh(repo, &["init", "-q", "-b", "main"]);
        let base = commit(repo, "a", "1");
        sh(repo, &["checkout", "-q", "-b", "topic"]);
        commit(repo, "b", "topic 1");
        commit(repo, "b", "topic 2");
        sh(repo, &["checkout", "-q", "main"]);
        let m1 = commit(repo, "a", "2");
        sh(
            repo,
            &["merge", "-q", "--no-ff", "-m", "merge topic", "topic"],
        );
        let merge = sh(repo, &["rev-parse", "HEAD"]);
        let last = commit(repo, "a", "3");
        let r = first_parent_range(repo, &base, &last).expect("range");
        assert_eq!(r, vec![base.clone(), m1, merge, last.clone()]);
        // A bound that is not on the chain is refused, by name.
        let topic = sh(repo, &["rev-parse", "topic"]);
        let e = first_parent_range(repo, &topic, &last).expect_err("not first parent");
        assert!(matches!(e, SubjectError::NotAncestor { .. }), "{e}");
        // Not a checkout.
        let plain = tempfile::tempdir().expect("tmp");
        let e = first_parent_range(plain.path(), &base, &last).expect_err("not git");
        assert!(matches!(e, SubjectError::NotGit(_)), "{e}");
    }
}
