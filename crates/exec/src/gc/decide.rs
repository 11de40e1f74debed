//! What `gc` removes and what it keeps: the rules of [`super`], applied to
//! the state directory as it is, by reading `lane.json` files, submission
//! records (each bounded) and directory metadata; it changes nothing.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use benchops::Sha256Digest;

use super::{Item, Kind, Policy, Reason, Usage};
use crate::backend::claims::{AttemptFiles, Liveness};
use crate::lane::{ExecutionKind, LaneExecution};
use crate::state::{BackendHandles, StateDir, Submission};
use crate::subject::{self, Subjects};

/// A lane directory without `lane.json` is a start cut short only once it
/// is this old (a start creates the directory, then writes `lane.json`).
pub const UNFINISHED_GRACE: Duration = Duration::from_secs(24 * 3600);
/// The largest `lane.json` or submission record `gc` reads.
const MAX_RECORD_BYTES: u64 = 16 << 20;

/// The disk usage, file count and newest modification time (of a file or
/// directory) under `path`, not following symbolic links; zero for a path
/// that is gone.
pub(super) fn walk(path: &Path) -> (Usage, SystemTime) {
    let mut usage = Usage::default();
    let mut newest = SystemTime::UNIX_EPOCH;
    let mut stack = vec![path.to_path_buf()];
    while let Some(p) = stack.pop() {
        let Ok(md) = fs::symlink_metadata(&p) else {
            continue;
        };
        usage.bytes += md.blocks() * 512;
        // Claims are symbolic links, made when the file beside them is:
        // the files and directories tell when it was last touched.
        if let (false, Ok(m)) = (md.is_symlink(), md.modified()) {
            newest = newest.max(m);
        }
        if md.is_dir() {
            if let Ok(rd) = fs::read_dir(&p) {
                stack.extend(rd.flatten().map(|e| e.path()));
            }
        } else {
            usage.files += 1;
        }
    }
    (usage, newest)
}

pub(super) fn age(now: SystemTime, t: SystemTime) -> Duration {
    now.duration_since(t).unwrap_or(Duration::ZERO)
}

pub(super) fn modified(path: &Path) -> SystemTime {
    fs::metadata(path)
        .and_then(|m| m.modified())
        .unwrap_or(SystemTime::UNIX_EPOCH)
}

/// A JSON record, read only when it is not larger than
/// [`MAX_RECORD_BYTES`].
fn read_small<T: for<'de> serde::Deserialize<'de>>(path: &Path) -> Option<T> {
    let md = fs::metadata(path).ok()?;
    if md.len() > MAX_RECORD_BYTES {
        return None;
    }
    crate::state::read_json(path).ok()
}

/// Every benchmark an execution names.
fn named(exec: &LaneExecution) -> BTreeSet<Sha256Digest> {
    let mut out: BTreeSet<Sha256Digest> = exec.measuring.iter().map(|s| s.benchmark).collect();
    out.extend(exec.confirming.iter().flatten().map(|s| s.benchmark));
    if let Some(b) = &exec.bisect {
        out.extend(b.stages.iter().map(|s| s.benchmark));
        out.extend(
            b.current
                .iter()
                .flat_map(|c| c.stage.iter().map(|s| s.benchmark)),
        );
    }
    out
}

/// The subject trees an execution measures in.
fn trees(exec: &LaneExecution) -> Vec<String> {
    let mut out = Vec::new();
    if let Some(ab) = &exec.ab {
        for d in [&ab.a_dir, &ab.b_dir] {
            if let Some(n) = d.file_name() {
                out.push(n.to_string_lossy().into_owned());
            }
        }
    }
    if let Some(b) = &exec.bisect {
        out.extend(b.commits.iter().cloned());
    }
    out
}

/// Whether a child of the benchmark is running: a live registered local
/// worker, or a Slurm attempt (not cancelled) with a child without a
/// result.
fn running(state: &StateDir, digest: &Sha256Digest, live: &mut Liveness) -> bool {
    let attempts = state.benchmark_dir(digest).join("attempts");
    for e in fs::read_dir(&attempts).into_iter().flatten().flatten() {
        let files = AttemptFiles::new(e.path());
        if files.registered().iter().any(|h| live.alive(h)) {
            return true;
        }
    }
    let subs = state.benchmark_dir(digest).join("submissions");
    let mut newest: Option<PathBuf> = None;
    for e in fs::read_dir(&subs).into_iter().flatten().flatten() {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "json") && newest.as_ref().is_none_or(|n| p > *n) {
            newest = Some(p);
        }
    }
    let Some(sub) = newest.and_then(|p| read_small::<Submission>(&p)) else {
        return false;
    };
    if !matches!(sub.backend, BackendHandles::Slurm { .. })
        || state.is_cancelled(digest, sub.attempt)
    {
        return false;
    }
    sub.indices.to_vec().into_iter().any(|i| {
        let (dir, _) = state.latest_attempt_dir(digest, i, sub.attempt);
        !dir.join("result.json").is_file()
    })
}

/// One thing to remove: its items (an execution first, then its
/// benchmarks) and their paths.
#[derive(Debug)]
pub(super) struct Unit {
    pub(super) items: Vec<Item>,
    pub(super) paths: Vec<PathBuf>,
    /// When it was last used: the older, the sooner it goes.
    pub(super) used: SystemTime,
    /// The execution whose lock must be taken to remove it.
    pub(super) lock: Option<PathBuf>,
}

impl Unit {
    pub(super) fn usage(&self) -> Usage {
        self.items.iter().fold(Usage::default(), |u, i| Usage {
            bytes: u.bytes + i.bytes,
            files: u.files + i.files,
        })
    }

    /// Its items as kept: the first for its own reason, an execution's
    /// benchmarks as used by it.
    pub(super) fn kept(self, policy: &Policy) -> Vec<Item> {
        let mut items = self.items;
        let head = items.first().map(|i| i.why.clone());
        for i in items.iter_mut().skip(1) {
            i.reason = Reason::UsedByKept;
            if let Some(why) = &head {
                i.why = format!("{} ({why})", Reason::UsedByKept.text(policy));
            }
        }
        items
    }

    pub(super) fn set_reason(&mut self, reason: Reason, policy: &Policy) {
        if let Some(first) = self.items.first_mut() {
            first.reason = reason;
            first.why = reason.text(policy);
        }
    }
}

/// What [`decide`] found: units removed by age, units kept only for their
/// age (removable to fit `max_bytes`), and what is kept in any case.
#[derive(Debug, Default)]
pub(super) struct Decision {
    pub(super) expired: Vec<Unit>,
    pub(super) young: Vec<Unit>,
    pub(super) kept: Vec<Item>,
}

pub(super) struct Ctx<'a> {
    pub(super) state: &'a StateDir,
    pub(super) policy: &'a Policy,
    pub(super) now: SystemTime,
}

impl Ctx<'_> {
    fn item(&self, kind: Kind, id: &str, usage: Usage, reason: Reason) -> Item {
        Item {
            kind,
            id: id.to_owned(),
            lane: None,
            bytes: usage.bytes,
            files: usage.files,
            reason,
            why: reason.text(self.policy),
            execution: None,
        }
    }

    fn young(&self, t: SystemTime) -> bool {
        age(self.now, t) < self.policy.keep()
    }
}

/// Decides what goes and what stays (see the module doc); changes nothing.
pub(super) fn decide(ctx: &Ctx<'_>) -> Decision {
    let state = ctx.state;
    let mut d = Decision::default();
    let lanes = state.root().join("lanes");
    // Every execution, readable or not.
    let mut unreadable = false;
    let mut execs: Vec<(LaneExecution, SystemTime)> = Vec::new();
    for e in fs::read_dir(&lanes).into_iter().flatten().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.len() != 64 || !name.bytes().all(|b| b.is_ascii_hexdigit()) {
            continue;
        }
        let dir = e.path();
        let file = dir.join("lane.json");
        if !file.exists() {
            let (usage, newest) = walk(&dir);
            let unfinished = age(ctx.now, newest) >= UNFINISHED_GRACE && !ctx.young(newest);
            let item = ctx.item(
                Kind::LaneExecution,
                &name,
                usage,
                if unfinished {
                    Reason::Unfinished
                } else {
                    Reason::Young
                },
            );
            if unfinished {
                d.expired.push(Unit {
                    items: vec![item],
                    paths: vec![dir.clone()],
                    used: newest,
                    lock: Some(dir.join(".lock")),
                });
            } else {
                d.kept.push(item);
            }
            continue;
        }
        match read_small::<LaneExecution>(&file) {
            Some(x) if x.id == name => execs.push((x, modified(&file))),
            _ => {
                unreadable = true;
                d.kept
                    .push(ctx.item(Kind::LaneExecution, &name, walk(&dir).0, Reason::Unreadable));
            }
        }
    }
    // The newest of each lane, kind and schedule.
    let mut newest: BTreeMap<(String, bool, bool), (&str, &str)> = BTreeMap::new();
    for (x, _) in &execs {
        let key = (
            x.lane.to_string(),
            x.kind == ExecutionKind::Bisect,
            x.unscheduled.is_some(),
        );
        let cand = (x.created_at.as_str(), x.id.as_str());
        let slot = newest.entry(key).or_insert(cand);
        if cand > *slot {
            *slot = cand;
        }
    }
    let newest: BTreeSet<String> = newest.values().map(|(_, id)| (*id).to_owned()).collect();
    let mut live = Liveness::default();
    let mut owner: BTreeMap<Sha256Digest, String> = BTreeMap::new();
    let mut kept_bench: BTreeMap<Sha256Digest, (Reason, String)> = BTreeMap::new();
    let mut pinned: Vec<String> = Vec::new();
    // First what each execution is, so that a benchmark a kept execution
    // names is never moved with a removable one.
    let mut removable: Vec<(&LaneExecution, SystemTime, BTreeSet<Sha256Digest>)> = Vec::new();
    for (x, sealed_at) in &execs {
        let benches = named(x);
        for b in &benches {
            owner.insert(*b, x.id.clone());
        }
        let reason = if !x.phase.is_final() {
            pinned.extend(trees(x));
            Some(Reason::Unsealed)
        } else if newest.contains(&x.id) {
            Some(Reason::Newest)
        } else if benches.iter().any(|b| running(state, b, &mut live)) {
            Some(Reason::Running)
        } else {
            None
        };
        match reason {
            Some(r) => {
                let mut item = ctx.item(Kind::LaneExecution, &x.id, walk(&lanes.join(&x.id)).0, r);
                item.lane = Some(x.lane.to_string());
                d.kept.push(item);
                for b in benches {
                    kept_bench.insert(b, (r, x.id.clone()));
                }
            }
            None => removable.push((x, *sealed_at, benches)),
        }
    }
    let mut claimed: BTreeSet<Sha256Digest> = BTreeSet::new();
    for (x, sealed_at, benches) in removable {
        let dir = lanes.join(&x.id);
        let mut item = ctx.item(Kind::LaneExecution, &x.id, walk(&dir).0, Reason::Expired);
        item.lane = Some(x.lane.to_string());
        let mut unit = Unit {
            items: vec![item],
            paths: vec![dir.clone()],
            used: sealed_at,
            lock: Some(dir.join(".lock")),
        };
        for b in benches {
            let path = state.benchmark_dir(&b);
            if kept_bench.contains_key(&b) || !claimed.insert(b) || !path.exists() {
                continue;
            }
            let mut i = ctx.item(Kind::Benchmark, &b.hex(), walk(&path).0, Reason::OfRemoved);
            i.execution = Some(x.id.clone());
            unit.items.push(i);
            unit.paths.push(path);
        }
        if ctx.young(sealed_at) {
            unit.set_reason(Reason::Young, ctx.policy);
            d.young.push(unit);
        } else {
            d.expired.push(unit);
        }
    }
    // Benchmarks: a kept execution's are kept; a removable execution's go
    // with it; the others by their own age.
    for digest in state.list() {
        let path = state.benchmark_dir(&digest);
        if let Some((r, id)) = kept_bench.get(&digest) {
            let mut i = ctx.item(Kind::Benchmark, &digest.hex(), walk(&path).0, *r);
            if *r == Reason::Unsealed || *r == Reason::Newest || *r == Reason::Running {
                i.reason = Reason::UsedByKept;
                i.why = format!(
                    "{} ({})",
                    Reason::UsedByKept.text(ctx.policy),
                    r.text(ctx.policy)
                );
            }
            i.execution = Some(id.clone());
            d.kept.push(i);
            continue;
        }
        if owner.contains_key(&digest) {
            continue;
        }
        let (usage, touched) = walk(&path);
        if running(state, &digest, &mut live) {
            d.kept
                .push(ctx.item(Kind::Benchmark, &digest.hex(), usage, Reason::Running));
            continue;
        }
        // A lane.json that cannot be read may name it.
        if unreadable {
            d.kept
                .push(ctx.item(Kind::Benchmark, &digest.hex(), usage, Reason::Unreadable));
            continue;
        }
        let young = ctx.young(touched);
        let item = ctx.item(
            Kind::Benchmark,
            &digest.hex(),
            usage,
            if young {
                Reason::Young
            } else {
                Reason::Unreferenced
            },
        );
        let unit = Unit {
            items: vec![item],
            paths: vec![path],
            used: touched,
            lock: None,
        };
        if young {
            d.young.push(unit);
        } else {
            d.expired.push(unit);
        }
    }
    // Subject trees: what the cache's own rule would prune, by age.
    let subjects = Subjects::new(state);
    let pinned_refs: Vec<&str> = pinned.iter().map(String::as_str).collect();
    let removable = subjects.removable(subject::DEFAULT_KEEP, &pinned_refs);
    for (commit, used) in subjects.list() {
        let mut paths = vec![subjects.tree(&commit)];
        paths.extend(subjects.builds(&commit));
        let usage = paths.iter().fold(Usage::default(), |u, p| {
            let w = walk(p).0;
            Usage {
                bytes: u.bytes + w.bytes,
                files: u.files + w.files,
            }
        });
        if !removable.contains(&commit) {
            let r = if pinned.contains(&commit) {
                Reason::Unsealed
            } else {
                Reason::RecentlyUsed
            };
            d.kept.push(ctx.item(Kind::SubjectTree, &commit, usage, r));
            continue;
        }
        let young = ctx.young(used);
        let item = ctx.item(
            Kind::SubjectTree,
            &commit,
            usage,
            if young { Reason::Young } else { Reason::Unused },
        );
        let unit = Unit {
            items: vec![item],
            paths,
            used,
            lock: None,
        };
        if young {
            d.young.push(unit);
        } else {
            d.expired.push(unit);
        }
    }
    d
}
