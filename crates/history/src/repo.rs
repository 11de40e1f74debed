//! The local history repository: a real git repository on disk whose
//! `benchmark-history` branch holds sealed records, receipts and per-lane
//! baseline pointers ([`benchops::layout`]).
//!
//! Everything goes through the `git` CLI with plumbing commands only; the
//! work tree and the repository's own index are never touched (a non-bare
//! repository works, but should not have `benchmark-history` checked out).
//! One persist costs a fixed number of git processes, whatever the number
//! of records: the tip and its tree (`for-each-ref`, `ls-tree -r`), one
//! `fast-import` that writes every new blob, the trees along their paths
//! and the commit (loose below git's unpack limit, one pack above it; no
//! scratch files, and no ref: its scratch branch is reset before it ends),
//! and one `update-ref --stdin` transaction whose `update <ref> <new>
//! <old>` line carries the old value: a compare-and-swap, so a ref that
//! moved meanwhile is never overwritten (nothing ever forces). The commit
//! costs what the new files cost, whatever the size of history. Reading
//! history back is one `cat-file --batch --buffer` (the `batch` module).
//!
//! Commits are deterministic: fixed author and committer
//! (`benchops-publish`), the date and the message the writer gives (the
//! publisher's persist: the receipt's `sweep.finished_at`, and a message
//! derived from the content). Because the ref update is the only visible
//! step, a crash at any earlier point leaves the branch as it was and a
//! rerun with the same inputs builds the same tree and commit.
//!
//! The rules of a persist (create-only paths, baseline moves, receipts)
//! are the publisher's; this repository only reads, writes a commit and
//! moves the branch by compare-and-swap.

use std::collections::BTreeMap;
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use benchops::LaneName;
use benchops::Sha256Digest;
use benchops::baseline::BaselinePointer;
use benchops::layout::{HISTORY_REF, RecordEntry, baseline_path};
use benchops::seal::{SealedRecord, verify};
use benchops::time::order_key;

use crate::batch::{self, Verdicts};
use crate::command::{args_text, bare_git, run, run_checked, stderr_text};
use crate::error::HistoryError;
use crate::object::git_blob_id;
use crate::setup;
use crate::tree::{TipIndex, ls_tree};

/// How many times one ref update waits for another writer's ref lock
/// (20 ms apart) while the tip has not moved. Git itself already waits up to
/// `core.filesRefLockTimeout` (100 ms by default) per try.
const LOCK_WAITS: u32 = 50;

const AUTHOR_NAME: &str = "benchops-publish";
const AUTHOR_EMAIL: &str = "benchops-publish@localhost";
const REFLOG_MESSAGE: &str = "benchops-publish: persist";

/// A git repository holding the `benchmark-history` branch.
#[derive(Debug, Clone)]
pub struct LocalHistory {
    path: PathBuf,
    git_dir: PathBuf,
    sha256: bool,
}

/// The branch `write_commit` commits on inside fast-import; it is reset
/// before fast-import ends, so it never exists in the repository.
const SCRATCH_BRANCH: &str = "refs/benchops/scratch/persist";

/// Whether fast-import reads `path` as written: the layout's paths are
/// plain, so anything it would have to quote is refused.
fn fast_import_path_ok(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('"')
        && !path.starts_with('/')
        && !path.contains(['\n', '\0', '\\'])
}

fn utf8_line(args: &[&str], out: &[u8]) -> Result<String, HistoryError> {
    let s = std::str::from_utf8(out).map_err(|_| HistoryError::UnexpectedOutput {
        args: args_text(args),
        output: String::from_utf8_lossy(out).into_owned(),
    })?;
    let s = s.trim();
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(HistoryError::UnexpectedOutput {
            args: args_text(args),
            output: s.to_owned(),
        });
    }
    Ok(s.to_owned())
}

impl LocalHistory {
    /// Opens the git repository at `path` (bare, or a work tree whose `.git`
    /// is at `path`), or initialises a bare one there when `path` does not
    /// exist or is an empty directory. A new repository is built in a
    /// hidden sibling directory and renamed into place, so a crash leaves
    /// no repository or a whole one ([`crate::setup`]). A new repository's
    /// `HEAD` names `benchmark-history`; an existing repository's `HEAD` is
    /// left alone.
    /// Discovery never walks above `path`, so a directory inside some other
    /// repository is not mistaken for one.
    pub fn open_or_init(path: impl AsRef<Path>) -> Result<LocalHistory, HistoryError> {
        let path = path.as_ref().to_path_buf();
        let io_err = |step, source| HistoryError::Io {
            step,
            path: path.clone(),
            source,
        };
        let fresh = match std::fs::metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound => true,
            Err(e) => return Err(io_err("inspect", e)),
            Ok(m) if m.is_dir() => std::fs::read_dir(&path)
                .map_err(|e| io_err("list", e))?
                .next()
                .is_none(),
            Ok(_) => {
                return Err(HistoryError::NotARepository { path });
            }
        };
        if fresh {
            // Built aside and renamed into place: never half-initialised.
            setup::init_atomically(&path, setup::git_init_bare)?;
        }
        let canonical = std::fs::canonicalize(&path).map_err(|e| io_err("resolve", e))?;
        match git_dir_at(&canonical)? {
            Ok(git_dir) => LocalHistory::at(path, git_dir),
            Err(_) => Err(HistoryError::NotARepository { path }),
        }
    }

    /// Opens the existing git repository at `path` (bare, or a work tree
    /// whose `.git` is at `path`); never creates one. Discovery never walks
    /// above `path`. Anything else is [`HistoryError::NoRepository`], with
    /// why.
    pub fn open(path: impl AsRef<Path>) -> Result<LocalHistory, HistoryError> {
        let path = path.as_ref().to_path_buf();
        let refused = |reason: String| HistoryError::NoRepository {
            path: path.clone(),
            reason,
        };
        let canonical = match std::fs::metadata(&path) {
            Ok(m) if m.is_dir() => std::fs::canonicalize(&path).map_err(|e| HistoryError::Io {
                step: "resolve",
                path: path.clone(),
                source: e,
            })?,
            Ok(_) => return Err(refused("it is not a directory".to_owned())),
            Err(e) => return Err(refused(e.to_string())),
        };
        match git_dir_at(&canonical)? {
            Ok(git_dir) => LocalHistory::at(path, git_dir),
            Err(stderr) => Err(refused(stderr)),
        }
    }

    /// The repository whose git directory is `git_dir`, opened as `path`.
    fn at(path: PathBuf, git_dir: PathBuf) -> Result<LocalHistory, HistoryError> {
        let mut h = LocalHistory {
            path,
            git_dir,
            sha256: false,
        };
        let format = h.git(&["rev-parse", "--show-object-format"], None)?;
        h.sha256 = String::from_utf8_lossy(&format).trim() == "sha256";
        Ok(h)
    }

    /// The path the store was opened with.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The repository's git directory (absolute).
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    pub(crate) fn cmd(&self) -> Command {
        let mut c = bare_git();
        c.arg("--git-dir").arg(&self.git_dir);
        c.arg("--literal-pathspecs");
        c
    }

    fn git(&self, args: &[&str], input: Option<&[u8]>) -> Result<Vec<u8>, HistoryError> {
        let mut c = self.cmd();
        c.args(args);
        run_checked(c, args, input)
    }

    /// The commit at the tip of `benchmark-history`, if the branch exists.
    pub fn tip(&self) -> Result<Option<String>, HistoryError> {
        let args = [
            "for-each-ref",
            "--format=%(objectname) %(refname)",
            HISTORY_REF,
        ];
        let out = self.git(&args, None)?;
        let text = String::from_utf8_lossy(&out);
        Ok(text.lines().find_map(|l| {
            let (oid, name) = l.split_once(' ')?;
            (name == HISTORY_REF).then(|| oid.to_owned())
        }))
    }

    /// The tree of the branch's tip, if the branch exists.
    pub fn tip_tree(&self) -> Result<Option<String>, HistoryError> {
        match self.tip()? {
            Some(tip) => self.tree_of(&tip).map(Some),
            None => Ok(None),
        }
    }

    /// The tree of `commit`.
    pub fn tree_of(&self, commit: &str) -> Result<String, HistoryError> {
        let rev = format!("{commit}^{{tree}}");
        let args = ["rev-parse", "--verify", rev.as_str()];
        let out = self.git(&args, None)?;
        utf8_line(&args, &out)
    }

    /// Blob ids at `paths` (or under the directory prefixes, such as
    /// `results/`) in `commit`, by path; every blob of its tree when
    /// `paths` is empty. Paths are literal (no glob). One `ls-tree -r -z`.
    pub fn files(
        &self,
        commit: &str,
        paths: &[&str],
    ) -> Result<BTreeMap<String, String>, HistoryError> {
        let mut args = vec!["ls-tree", "-r", "-z", "--full-tree", commit, "--"];
        args.extend_from_slice(paths);
        ls_tree(self.cmd(), &args)
    }

    fn blob(&self, oid: &str) -> Result<Vec<u8>, HistoryError> {
        self.git(&["cat-file", "blob", oid], None)
    }

    fn read_at_tip(&self, path: &str) -> Result<Vec<u8>, HistoryError> {
        let not_found = || HistoryError::NotFound {
            path: path.to_owned(),
        };
        let tip = self.tip()?.ok_or_else(not_found)?;
        let blobs = self.files(&tip, &[path])?;
        let oid = blobs.get(path).ok_or_else(not_found)?;
        self.blob(oid)
    }

    // -- reading ------------------------------------------------------------

    /// Every record on the branch (of one lane, or all), from the paths
    /// alone, sorted by path. Files under `results/` that do not follow the
    /// layout are not records and are left out.
    pub fn list_records(&self, lane: Option<&LaneName>) -> Result<Vec<RecordEntry>, HistoryError> {
        let Some(tip) = self.tip()? else {
            return Ok(Vec::new());
        };
        let prefix = match lane {
            Some(l) => format!("results/{l}/"),
            None => "results/".to_owned(),
        };
        let blobs = self.files(&tip, &[prefix.as_str()])?;
        Ok(blobs
            .keys()
            .filter_map(|p| RecordEntry::parse(p).ok())
            .collect())
    }

    /// Reads the record at `path` and re-verifies it against the digest in
    /// its name; its lane and slot must match the path.
    pub fn read_record(&self, path: &str) -> Result<SealedRecord, HistoryError> {
        let entry = RecordEntry::parse(path)?;
        let bytes = self.read_at_tip(path)?;
        let sealed =
            verify(&bytes, Some(&entry.digest)).map_err(|source| HistoryError::CorruptRecord {
                path: path.to_owned(),
                source,
            })?;
        let r = sealed.record();
        if !entry.places(&r.lane, &r.slot) {
            return Err(HistoryError::Misplaced {
                path: path.to_owned(),
                lane: r.lane.to_string(),
                slot: r.slot.clone(),
            });
        }
        Ok(sealed)
    }

    /// The latest record of every lane: the greatest slot; records sharing
    /// the latest path slot are read and ordered by full slot, then
    /// `finished_at`, then digest.
    pub fn latest_per_lane(&self) -> Result<BTreeMap<LaneName, RecordEntry>, HistoryError> {
        let mut by_lane: BTreeMap<LaneName, Vec<RecordEntry>> = BTreeMap::new();
        for e in self.list_records(None)? {
            let v = by_lane.entry(e.lane.clone()).or_default();
            match v.first().map(|f| e.slot.cmp(&f.slot)) {
                Some(std::cmp::Ordering::Less) => {}
                Some(std::cmp::Ordering::Equal) => v.push(e),
                _ => *v = vec![e],
            }
        }
        let mut out = BTreeMap::new();
        for (lane, mut tied) in by_lane {
            let latest = if tied.len() == 1 {
                tied.pop()
            } else {
                let mut keyed = Vec::with_capacity(tied.len());
                for e in tied {
                    let s = self.read_record(&e.path)?;
                    let r = s.record();
                    let key = (order_key(&r.slot).0, order_key(&r.finished_at).0, e.digest);
                    keyed.push((key, e));
                }
                keyed
                    .into_iter()
                    .max_by(|a, b| a.0.cmp(&b.0))
                    .map(|(_, e)| e)
            };
            if let Some(e) = latest {
                out.insert(lane, e);
            }
        }
        Ok(out)
    }

    /// The lane's baseline pointer, validated against its schema.
    pub fn baseline(&self, lane: &LaneName) -> Result<Option<BaselinePointer>, HistoryError> {
        match self.tip()? {
            Some(tip) => self.baseline_at(&tip, lane),
            None => Ok(None),
        }
    }

    fn baseline_at(
        &self,
        commit: &str,
        lane: &LaneName,
    ) -> Result<Option<BaselinePointer>, HistoryError> {
        let path = baseline_path(lane);
        let blobs = self.files(commit, &[path.as_str()])?;
        let Some(oid) = blobs.get(&path) else {
            return Ok(None);
        };
        let bytes = self.blob(oid)?;
        let pointer = BaselinePointer::from_bytes(&bytes, lane).map_err(|reasons| {
            HistoryError::InvalidPointer {
                lane: lane.to_string(),
                reasons,
            }
        })?;
        Ok(Some(pointer))
    }

    // -- writing ------------------------------------------------------------

    /// Moves the branch from `parent` (None: the branch must not exist) to
    /// the commit `new`, as a compare-and-swap (`update <ref> <new> <old>`
    /// in a `git update-ref --stdin` transaction; a missing branch is "old"
    /// all zeros, so it must still be missing). A branch already at `new`
    /// (someone published the identical commit) is success.
    ///
    /// Errors: [`HistoryError::RefMoved`] when the branch is no longer at
    /// `parent` (nothing is overwritten), [`HistoryError::RefBusy`] when
    /// another writer held the ref lock throughout.
    pub fn advance(&self, parent: Option<&str>, new: &str) -> Result<(), HistoryError> {
        let zero = "0".repeat(new.len());
        let old = parent.unwrap_or(zero.as_str());
        let mut waits = 0;
        loop {
            let (args, out) = self.update_ref(new, old)?;
            if out.status.success() {
                return Ok(());
            }
            let stderr = String::from_utf8_lossy(&out.stderr).trim().to_owned();
            let now = self.tip()?;
            if now.as_deref() == Some(new) {
                // Someone published the identical commit: converged.
                return Ok(());
            }
            if now.as_deref() != parent {
                return Err(HistoryError::RefMoved {
                    expected: parent.map(str::to_owned),
                    actual: now,
                });
            }
            let locked = stderr.contains("Unable to create") || stderr.contains("File exists");
            if !locked {
                return Err(HistoryError::Git {
                    args: args_text(&args),
                    status: out.status.to_string(),
                    stderr: stderr_text(stderr.as_bytes()),
                });
            }
            waits += 1;
            if waits >= LOCK_WAITS {
                return Err(HistoryError::RefBusy { stderr });
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Removes the history branch's ref lock files that a git process
    /// killed inside a ref update left behind; returns the ones removed.
    /// Sound only while no other process writes the repository: the
    /// publisher's local sweep calls it under its sweep lock.
    pub fn remove_stale_ref_locks(&self) -> Result<Vec<PathBuf>, HistoryError> {
        setup::remove_stale_ref_locks(&self.git_dir)
    }

    /// One compare-and-swap ref update, as a `git update-ref --stdin`
    /// transaction (`start`, `update <ref> <new> <old>`, `prepare`,
    /// `commit`); returns its arguments and output. Under the test hook's
    /// `ref-lock` pause, git holds the ref lock (prepared) while the sweep
    /// sleeps.
    fn update_ref(
        &self,
        new: &str,
        old: &str,
    ) -> Result<([&'static str; 4], Output), HistoryError> {
        let args = ["update-ref", "-m", REFLOG_MESSAGE, "--stdin"];
        let prepared = format!("start\nupdate {HISTORY_REF} {new} {old}\nprepare\n");
        let mut c = self.cmd();
        c.args(args);
        if !setup::pauses_at("ref-lock") {
            let mut input = prepared.into_bytes();
            input.extend_from_slice(b"commit\n");
            return Ok((args, run(c, &args, Some(&input))?));
        }
        let spawn_err = |source| HistoryError::Spawn {
            args: args_text(&args),
            source,
        };
        c.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = c.spawn().map_err(spawn_err)?;
        let mut stdin = child.stdin.take();
        let mut stdout = child.stdout.take().map(io::BufReader::new);
        let mut held = false;
        if let (Some(w), Some(r)) = (stdin.as_mut(), stdout.as_mut()) {
            if w.write_all(prepared.as_bytes())
                .and_then(|()| w.flush())
                .is_ok()
            {
                // `start: ok`, then `prepare: ok` once the lock is held.
                let mut line = String::new();
                for _ in 0..2 {
                    line.clear();
                    if io::BufRead::read_line(r, &mut line).unwrap_or(0) == 0 {
                        break;
                    }
                }
                held = line.trim() == "prepare: ok";
            }
        }
        if held {
            setup::pause_at("ref-lock");
        }
        if let Some(mut w) = stdin.take() {
            let _ = w.write_all(b"commit\n");
        }
        let mut out = child.wait_with_output().map_err(spawn_err)?;
        if let Some(mut r) = stdout {
            let _ = io::Read::read_to_end(&mut r, &mut out.stdout);
        }
        Ok((args, out))
    }

    /// The git blob id of `bytes` in this repository's object format.
    pub fn blob_id_of(&self, bytes: &[u8]) -> String {
        git_blob_id(bytes, self.sha256)
    }

    /// The tip and every blob of its tree.
    pub fn tip_index(&self) -> Result<TipIndex, HistoryError> {
        let Some(tip) = self.tip()? else {
            return Ok(TipIndex::default());
        };
        let (tree, parent) = self.tree_and_parent(&tip)?;
        let files = self.files(&tip, &[])?;
        Ok(TipIndex {
            commit: Some(tip),
            tree: Some(tree),
            parent,
            files,
            scope: None,
            base_tree: None,
        })
    }

    /// The tip with the blobs under `dirs` only (directory prefixes such
    /// as `results/nightly/2026/11/`, or paths): one `ls-tree` that walks
    /// only the trees on those paths, so its cost follows them and not the
    /// size of history.
    pub fn tip_index_within(&self, dirs: &[String]) -> Result<TipIndex, HistoryError> {
        let Some(tip) = self.tip()? else {
            return Ok(TipIndex {
                scope: Some(dirs.iter().cloned().collect()),
                ..TipIndex::default()
            });
        };
        let (tree, parent) = self.tree_and_parent(&tip)?;
        let mut index = TipIndex {
            commit: Some(tip),
            tree: Some(tree),
            parent,
            files: BTreeMap::new(),
            scope: Some(std::collections::BTreeSet::new()),
            base_tree: None,
        };
        self.widen(&mut index, dirs)?;
        Ok(index)
    }

    /// Adds the blobs under `dirs` to a tip listed for some directories
    /// ([`tip_index_within`](Self::tip_index_within)); nothing for a tip
    /// listed whole.
    pub fn widen(&self, tip: &mut TipIndex, dirs: &[String]) -> Result<(), HistoryError> {
        let missing: Vec<&str> = tip
            .uncovered(dirs)
            .into_iter()
            .map(String::as_str)
            .collect();
        if missing.is_empty() {
            return Ok(());
        }
        if let Some(commit) = &tip.commit {
            tip.files.extend(self.files(commit, &missing)?);
        }
        if let Some(scope) = tip.scope.as_mut() {
            scope.extend(missing.iter().map(|d| (*d).to_owned()));
        }
        Ok(())
    }

    /// The tree and the first parent of `commit` (one `cat-file commit`).
    fn tree_and_parent(&self, commit: &str) -> Result<(String, Option<String>), HistoryError> {
        let args = ["cat-file", "commit", commit];
        let out = self.git(&args, None)?;
        let text = String::from_utf8_lossy(&out);
        let mut tree = None;
        let mut parent = None;
        for line in text.lines() {
            if line.is_empty() {
                break;
            }
            if let Some(t) = line.strip_prefix("tree ") {
                tree = Some(t.to_owned());
            } else if let Some(p) = line.strip_prefix("parent ")
                && parent.is_none()
            {
                parent = Some(p.to_owned());
            }
        }
        let tree = tree.ok_or_else(|| HistoryError::UnexpectedOutput {
            args: args_text(&args),
            output: text.chars().take(200).collect(),
        })?;
        Ok((tree, parent))
    }

    /// The bytes of every blob in `oids`, in order, with one
    /// `git cat-file --batch --buffer` (the `batch` module), for any number
    /// of ids: the ids are written while the answers are read (by a writer
    /// thread), and git writes its answers in large blocks rather than one
    /// per object. An id the repository does not have is an error.
    pub fn read_blobs(&self, oids: &[&str]) -> Result<Vec<Vec<u8>>, HistoryError> {
        batch::read_blobs(self.cmd(), oids)
    }

    /// Every item's blob, verified as a sealed record against the item's
    /// digest when given, in order: one `git cat-file --batch --buffer`
    /// whose answers are verified on other threads while git still reads
    /// (the `batch` module).
    pub fn read_verified(
        &self,
        items: &[(&str, Option<&Sha256Digest>)],
    ) -> Result<Verdicts, HistoryError> {
        batch::read_verified(self.cmd(), items)
    }

    /// Writes `files` over `tip`'s tree and a commit on it; returns the
    /// commit and its tree. The branch does not move.
    pub fn write_commit(
        &self,
        tip: &TipIndex,
        files: &[(String, Vec<u8>)],
        message: &str,
        date_unix: i64,
    ) -> Result<(String, String), HistoryError> {
        // One `fast-import` writes the blobs, the trees along their paths
        // and the commit, reading only the parent's trees those paths
        // cross: the cost follows the new files, not the size of history.
        // The commit is made on a scratch branch that is reset before the
        // end, so fast-import writes no ref; the caller moves the branch
        // with a compare-and-swap. Fewer objects than
        // `fastimport.unpackLimit` (100 by default) are stored loose, more
        // as one pack, so small sweeps do not pile up packs.
        let mut stream = Vec::with_capacity(
            files
                .iter()
                .map(|(p, b)| p.len() + b.len() + 40)
                .sum::<usize>()
                + 512,
        );
        let ident = format!("{AUTHOR_NAME} <{AUTHOR_EMAIL}> {date_unix} +0000");
        let mut message = message.to_owned();
        if !message.ends_with('\n') {
            // As `commit-tree -m` completes the last line.
            message.push('\n');
        }
        stream.extend_from_slice(format!("reset {SCRATCH_BRANCH}\n").as_bytes());
        if let Some(t) = &tip.commit {
            stream.extend_from_slice(format!("from {t}\n").as_bytes());
        }
        stream.extend_from_slice(
            format!(
                "commit {SCRATCH_BRANCH}\nmark :1\nauthor {ident}\ncommitter {ident}\ndata {}\n{message}",
                message.len()
            )
            .as_bytes(),
        );
        for (path, bytes) in files {
            if !fast_import_path_ok(path) {
                return Err(HistoryError::UnexpectedOutput {
                    args: "fast-import".to_owned(),
                    output: format!("refusing to write the path {path:?}"),
                });
            }
            stream.extend_from_slice(
                format!("M 100644 inline {path}\ndata {}\n", bytes.len()).as_bytes(),
            );
            stream.extend_from_slice(bytes);
            stream.push(b'\n');
        }
        stream.extend_from_slice(
            format!("get-mark :1\nls :1 \"\"\nreset {SCRATCH_BRANCH}\ndone\n").as_bytes(),
        );
        let args = ["fast-import", "--quiet", "--done"];
        let out = self.git(&args, Some(&stream))?;
        drop(stream);
        let unexpected = || HistoryError::UnexpectedOutput {
            args: args_text(&args),
            output: String::from_utf8_lossy(&out).chars().take(400).collect(),
        };
        let text = std::str::from_utf8(&out).map_err(|_| unexpected())?;
        let mut lines = text.lines();
        let commit = lines.next().ok_or_else(unexpected)?;
        // `ls` answers `040000 tree <id>\t` for the root.
        let tree = lines
            .next()
            .and_then(|l| l.strip_prefix("040000 tree "))
            .and_then(|l| l.strip_suffix('\t'))
            .ok_or_else(unexpected)?;
        let commit = utf8_line(&args, commit.as_bytes())?;
        let tree = utf8_line(&args, tree.as_bytes())?;
        if lines.next().is_some() {
            return Err(unexpected());
        }
        Ok((commit, tree))
    }
}

/// The git directory of the repository at `canonical` (an existing
/// directory), found without walking above it; `Err` with what git said
/// when it is not a repository.
fn git_dir_at(canonical: &Path) -> Result<Result<PathBuf, String>, HistoryError> {
    let args = ["rev-parse", "--absolute-git-dir"];
    let mut c = bare_git();
    c.current_dir(canonical).args(args);
    if let Some(parent) = canonical.parent() {
        c.env("GIT_CEILING_DIRECTORIES", parent);
    }
    let out = run(c, &args, None)?;
    let dir = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    if !out.status.success() || dir.is_empty() {
        return Ok(Err(stderr_text(&out.stderr)));
    }
    Ok(Ok(PathBuf::from(dir)))
}
