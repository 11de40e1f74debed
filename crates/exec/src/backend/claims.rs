//! The files of one local attempt, under `attempts/<NNNN>/`: the claims
//! by which workers take children, the registry of the workers that hold
//! a concurrency slot, the slot locks and the workers' logs.
//!
//! ```text
//! attempts/<NNNN>/claims/<index>        claim of child <index>, first run
//! attempts/<NNNN>/claims/<index>.r<G>   claim of its reclaim G (after a worker died holding it)
//! attempts/<NNNN>/workers/<k>           the worker that holds slot k
//! attempts/<NNNN>/slots/<k>.lock        slot k (flock, held by its worker until it exits)
//! attempts/<NNNN>/logs/worker-<n>.log   standard error of one worker
//! ```
//!
//! A claim and a registry entry are symbolic links whose target is the
//! text `<pid>.<start ticks>` of the worker (the start time is field 22 of
//! `/proc/PID/stat`; with the pid it tells a live worker from a reused
//! pid), or `done` once the claimed child's result is recorded. A link is
//! created in one `symlink(2)`, which fails when the name exists: two
//! workers never hold the same claim, and a reader never sees half a
//! claim. A claim is changed only by its holder (to `done`, by renaming
//! a new link over it), and a dead holder's claim is never changed: the
//! child is claimed again under the next generation's name.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use crate::procfs;
use crate::state::LocalHandle;

/// The target of a claim whose child's result is recorded.
const DONE: &str = "done";

/// Who holds a claim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Owner {
    /// A worker, which may have died since.
    Worker(LocalHandle),
    /// The holder recorded the child's result and let go.
    Done,
    /// The link's target is not a claim (altered by hand).
    Unreadable,
}

/// The newest claim of one child.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claim {
    /// 0 for the first claim, G for `<index>.r<G>`: the run (restart)
    /// number of the child's run directory.
    pub generation: u32,
    /// Its holder.
    pub owner: Owner,
}

/// The files of one local attempt.
#[derive(Debug, Clone)]
pub struct AttemptFiles {
    root: PathBuf,
}

/// `<pid>.<start ticks>`.
pub fn owner_text(h: &LocalHandle) -> String {
    format!("{}.{}", h.pid, h.start_ticks)
}

fn parse_owner(text: &str) -> Owner {
    if text == DONE {
        return Owner::Done;
    }
    let parsed = text
        .split_once('.')
        .and_then(|(p, t)| Some((p.parse().ok()?, t.parse().ok()?)));
    match parsed {
        Some((pid, start_ticks)) => Owner::Worker(LocalHandle { pid, start_ticks }),
        None => Owner::Unreadable,
    }
}

/// `<index>` for generation 0, `<index>.r<G>` after.
fn claim_name(index: u64, generation: u32) -> String {
    if generation == 0 {
        index.to_string()
    } else {
        format!("{index}.r{generation}")
    }
}

fn parse_claim_name(name: &str) -> Option<(u64, u32)> {
    match name.split_once(".r") {
        Some((i, g)) => Some((i.parse().ok()?, g.parse().ok()?)),
        None => Some((name.parse().ok()?, 0)),
    }
}

impl AttemptFiles {
    /// The files under `root` (`attempts/<NNNN>/`).
    pub fn new(root: PathBuf) -> Self {
        AttemptFiles { root }
    }

    /// `attempts/<NNNN>/`.
    pub fn root(&self) -> &Path {
        &self.root
    }

    fn claims(&self) -> PathBuf {
        self.root.join("claims")
    }

    fn workers(&self) -> PathBuf {
        self.root.join("workers")
    }

    /// `slots/<k>.lock`.
    pub fn slot_lock(&self, slot: u32) -> PathBuf {
        self.root.join("slots").join(format!("{slot}.lock"))
    }

    /// Creates the directories.
    pub fn create(&self) -> io::Result<()> {
        for d in ["claims", "workers", "slots", "logs"] {
            fs::create_dir_all(self.root.join(d))?;
        }
        Ok(())
    }

    /// A new, empty log file for a worker: `logs/worker-<n>.log`.
    pub fn new_log(&self) -> io::Result<fs::File> {
        let dir = self.root.join("logs");
        fs::create_dir_all(&dir)?;
        for n in 0u32.. {
            match fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(dir.join(format!("worker-{n}.log")))
            {
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                other => return other,
            }
        }
        Err(io::Error::other("no free log name"))
    }

    /// How many worker logs there are: how many workers were started.
    pub fn logs(&self) -> usize {
        fs::read_dir(self.root.join("logs")).map_or(0, |rd| rd.flatten().count())
    }

    /// The newest claim of every claimed child: one listing of `claims/`
    /// and one `readlink` per child.
    pub fn scan(&self) -> HashMap<u64, Claim> {
        let mut newest: HashMap<u64, u32> = HashMap::new();
        if let Ok(rd) = fs::read_dir(self.claims()) {
            for e in rd.flatten() {
                if let Some((i, g)) = e.file_name().to_str().and_then(parse_claim_name) {
                    let slot = newest.entry(i).or_insert(g);
                    *slot = (*slot).max(g);
                }
            }
        }
        newest
            .into_iter()
            .map(|(index, generation)| {
                let owner = self.read(index, generation).unwrap_or(Owner::Unreadable);
                (index, Claim { generation, owner })
            })
            .collect()
    }

    /// The holder of claim `generation` of child `index`; `None` when there
    /// is no such claim.
    pub fn read(&self, index: u64, generation: u32) -> Option<Owner> {
        let target = fs::read_link(self.claims().join(claim_name(index, generation))).ok()?;
        Some(parse_owner(&target.to_string_lossy()))
    }

    /// Creates claim `generation` of child `index` for `me`; `Ok(false)`
    /// when another worker holds it already.
    pub fn try_claim(&self, index: u64, generation: u32, me: &LocalHandle) -> io::Result<bool> {
        match symlink(
            owner_text(me),
            self.claims().join(claim_name(index, generation)),
        ) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Marks `me`'s claim `generation` of child `index` as done: its
    /// result is recorded.
    pub fn mark_done(&self, index: u64, generation: u32, me: &LocalHandle) -> io::Result<()> {
        let name = claim_name(index, generation);
        self.replace(&self.claims(), &name, DONE, me)
    }

    /// Atomically points `dir/name` at `target` (a new link renamed over
    /// the old one).
    fn replace(&self, dir: &Path, name: &str, target: &str, me: &LocalHandle) -> io::Result<()> {
        let tmp = dir.join(format!(".{name}.{}.tmp", me.pid));
        let _ = fs::remove_file(&tmp);
        symlink(target, &tmp)?;
        fs::rename(&tmp, dir.join(name)).inspect_err(|_| {
            let _ = fs::remove_file(&tmp);
        })
    }

    /// Records `me` as the worker of slot `slot` (which it holds the lock
    /// of).
    pub fn register(&self, slot: u32, me: &LocalHandle) -> io::Result<()> {
        self.replace(&self.workers(), &slot.to_string(), &owner_text(me), me)
    }

    /// Removes `me`'s registry entry of slot `slot`, when it is still
    /// `me`'s.
    pub fn deregister(&self, slot: u32, me: &LocalHandle) {
        let path = self.workers().join(slot.to_string());
        if fs::read_link(&path).is_ok_and(|t| t.to_string_lossy() == owner_text(me)) {
            let _ = fs::remove_file(path);
        }
    }

    /// The workers of the registry (live or not).
    pub fn registered(&self) -> Vec<LocalHandle> {
        let Ok(rd) = fs::read_dir(self.workers()) else {
            return Vec::new();
        };
        rd.flatten()
            .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
            .filter_map(|e| fs::read_link(e.path()).ok())
            .filter_map(|t| match parse_owner(&t.to_string_lossy()) {
                Owner::Worker(h) => Some(h),
                _ => None,
            })
            .collect()
    }
}

/// Liveness of workers, each looked up in `/proc` once.
#[derive(Debug, Default)]
pub struct Liveness {
    seen: HashMap<LocalHandle, bool>,
}

impl Liveness {
    /// Whether `h` is a live process (not a zombie, not a reused pid).
    pub fn alive(&mut self, h: &LocalHandle) -> bool {
        *self
            .seen
            .entry(*h)
            .or_insert_with(|| procfs::is_alive(h.pid, h.start_ticks))
    }
}

/// Kills what a dead worker `h` left running: the processes of its session
/// (a worker leads its own session, and its children stay in it). Nothing
/// is done when `h`'s pid now belongs to another process: then `h`'s
/// session id is that process's, not `h`'s.
pub fn kill_leftovers(h: &LocalHandle) -> usize {
    if procfs::stat(h.pid).is_some_and(|s| s.start_ticks != h.start_ticks) {
        return 0;
    }
    let mut killed = 0;
    // A member may fork while it is being killed: look a few times.
    for _ in 0..10 {
        let members = procfs::session_members(h.pid);
        if members.is_empty() {
            break;
        }
        for pid in members {
            if nix::sys::signal::kill(
                nix::unistd::Pid::from_raw(pid as i32),
                nix::sys::signal::Signal::SIGKILL,
            )
            .is_ok()
            {
                killed += 1;
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    killed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claim_names_and_owners_round_trip() {
        assert_eq!(claim_name(7, 0), "7");
        assert_eq!(claim_name(7, 2), "7.r2");
        assert_eq!(parse_claim_name("7"), Some((7, 0)));
        assert_eq!(parse_claim_name("7.r2"), Some((7, 2)));
        assert_eq!(parse_claim_name(".7.done.12.tmp"), None);
        let h = LocalHandle {
            pid: 12,
            start_ticks: 345,
        };
        assert_eq!(parse_owner(&owner_text(&h)), Owner::Worker(h));
        assert_eq!(parse_owner("done"), Owner::Done);
        assert_eq!(parse_owner("x"), Owner::Unreadable);
    }

    #[test]
    fn a_claim_is_taken_once_and_the_newest_generation_wins() {
        let dir = tempfile::tempdir().expect("tempdir");
        let files = AttemptFiles::new(dir.path().to_path_buf());
        files.create().expect("dirs");
        let a = LocalHandle {
            pid: 1,
            start_ticks: 1,
        };
        let b = LocalHandle {
            pid: 2,
            start_ticks: 2,
        };
        assert!(files.try_claim(3, 0, &a).expect("claim"));
        assert!(!files.try_claim(3, 0, &b).expect("claim"));
        assert!(files.try_claim(3, 1, &b).expect("reclaim"));
        files.mark_done(3, 1, &b).expect("done");
        let scan = files.scan();
        assert_eq!(
            scan.get(&3),
            Some(&Claim {
                generation: 1,
                owner: Owner::Done
            })
        );
        assert_eq!(files.read(3, 0), Some(Owner::Worker(a)));
        files.register(0, &a).expect("register");
        assert_eq!(files.registered(), vec![a]);
        files.deregister(0, &b);
        assert_eq!(files.registered(), vec![a], "only the holder removes");
        files.deregister(0, &a);
        assert!(files.registered().is_empty());
    }
}
