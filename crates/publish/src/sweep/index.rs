//! The history index in a sweep ([`benchops::history_index`]): opened at
//! the tip the persist builds on, kept up to date in the persist's commit,
//! and used after it to read only the records the sweep's rules need.
//!
//! - [`open`] reads the pointer and the evidence at a tip. A pointer built
//!   on another commit than the tip's parent (stale), a part that fails its
//!   checks (corrupt) or no pointer (missing) makes it rebuild the index
//!   from every record at the tip, read in chunks so memory follows the
//!   chunk; the summary says why.
//! - [`read_needed`] reads the parts and records
//!   [`HistoryIndex::next_reads`] asks for, round by round, and returns
//!   that subset of history. A record the index names and the tree does
//!   not hold means the index is wrong: the sweep then reads all of
//!   history, says so, and commits the rebuilt index by itself
//!   ([`repair`]).
//! - [`carried`] keeps a fresh index fresh across a commit that adds no
//!   record (a baseline moved by hand).

use std::collections::{BTreeMap, HashMap};

use benchops::history_index::{
    EVIDENCE_PATH, HistoryIndex, INDEX_DIR, IndexEntry, Needs, POINTER_PATH, segment_path,
};
use benchops::layout::{self, RESULTS_DIR};
use benchops::manifest::Manifest;
use benchops::{LaneName, SealedRecord, Sha256Digest};

use super::error::{Cause, StepError};
use super::ports::{HistoryStore, TipIndex};

/// How many records a rebuild reads at once.
const REBUILD_CHUNK: usize = 4096;

/// The index at a tip, and why it had to be rebuilt (None: it was fresh).
#[derive(Debug)]
pub struct Opened {
    /// The index.
    pub index: HistoryIndex,
    /// Why it was rebuilt, for the summary.
    pub rebuilt: Option<String>,
}

/// What the sweep's rules need of each lane, for a sweep whose contents
/// phase finished at `finished_at`: the newest records the trend and the
/// durations look at, and the watchdog's default lookback before
/// `finished_at` (the watchdog's own clock reads later, so its window lies
/// inside).
pub fn needs(finished_at: &str) -> Needs {
    let since = finished_at.parse::<jiff::Timestamp>().ok().and_then(|t| {
        let since = t - jiff::SignedDuration::from_hours(i64::from(
            benchops::watchdog::DEFAULT_LOOKBACK_HOURS,
        ));
        benchops::time::Utc::parse(&since.to_string()).ok()
    });
    Needs {
        recent: benchops::reconcile::TREND_RECORDS.max(super::report::DURATION_POINTS),
        since,
        drift: true,
    }
}

/// The directory of a record's month (`results/<lane>/<yyyy>/<mm>/`).
pub fn month_dir(path: &str) -> String {
    match path.rfind('/') {
        Some(i) => path[..=i].to_owned(),
        None => path.to_owned(),
    }
}

fn corrupt(path: &str, reason: String) -> StepError {
    StepError::new(
        format!("read {path}"),
        Cause::CorruptHistory {
            path: path.to_owned(),
            reason,
        },
    )
}

/// Reads `path` at `tip`, which must cover it; `None` when absent.
async fn read_file<S: HistoryStore>(
    store: &mut S,
    tip: &TipIndex,
    path: &str,
) -> Result<Option<Vec<u8>>, StepError> {
    let Some(blob) = tip.files.get(path).cloned() else {
        return Ok(None);
    };
    store.read_blob(tip, path, &blob).await.map(Some)
}

/// Opens the index at `tip` (see the module documentation). `tip` is
/// widened to `index/` (and to `results/` for a rebuild).
pub async fn open<S: HistoryStore>(store: &mut S, tip: &mut TipIndex) -> Result<Opened, StepError> {
    if tip.commit.is_none() {
        return Ok(Opened {
            index: HistoryIndex::empty(),
            rebuilt: None,
        });
    }
    store.widen(tip, &[INDEX_DIR.to_owned()]).await?;
    let why = match read_fresh(store, tip).await? {
        Ok(index) => {
            return Ok(Opened {
                index,
                rebuilt: None,
            });
        }
        Err(why) => why,
    };
    let index = rebuild(store, tip).await?;
    Ok(Opened {
        rebuilt: Some(format!(
            "history index rebuilt from {} record(s): {why}",
            index.records()
        )),
        index,
    })
}

/// The index at `tip` when it is there, fresh and sound; else why not.
pub async fn read_fresh<S: HistoryStore>(
    store: &mut S,
    tip: &TipIndex,
) -> Result<Result<HistoryIndex, String>, StepError> {
    let Some(bytes) = read_file(store, tip, POINTER_PATH).await? else {
        return Ok(Err(format!("{POINTER_PATH} is missing")));
    };
    let (mut index, evidence) = match HistoryIndex::from_pointer(&bytes) {
        Ok(v) => v,
        Err(e) => return Ok(Err(format!("corrupt: {e}"))),
    };
    if let Some(why) = index.stale_at(tip.parent.as_deref()) {
        return Ok(Err(why));
    }
    if evidence.records > 0 {
        let Some(bytes) = read_file(store, tip, EVIDENCE_PATH).await? else {
            return Ok(Err(format!("corrupt: {EVIDENCE_PATH} is missing")));
        };
        if let Err(e) = index.load_evidence(&evidence, &bytes) {
            return Ok(Err(format!("corrupt: {e}")));
        }
    }
    Ok(Ok(index))
}

/// The pointer of a commit on `tip` that adds no record (a baseline moved
/// by hand): the index at `tip` carried over, when it is fresh there; else
/// nothing, and the next sweep rebuilds it.
pub async fn carried<S: HistoryStore>(
    store: &mut S,
    tip: &mut TipIndex,
) -> Result<Vec<(String, Vec<u8>)>, StepError> {
    if tip.commit.is_none() {
        return Ok(Vec::new());
    }
    store.widen(tip, &[INDEX_DIR.to_owned()]).await?;
    Ok(match read_fresh(store, tip).await? {
        Ok(mut index) => index.files(tip.commit.as_deref()),
        Err(_) => Vec::new(),
    })
}

/// Commits `index` (rebuilt because the one on the branch was wrong) on
/// `tip` by itself, so the next sweep does not trust the wrong one, and
/// moves `tip` to that commit. The commit id, or None when the branch moved
/// meanwhile (the next sweep finds the index wrong again and repeats this).
pub async fn repair<S: HistoryStore>(
    store: &mut S,
    tip: &mut TipIndex,
    index: &mut HistoryIndex,
    date_unix: i64,
) -> Result<Option<String>, StepError> {
    let files = index.files(tip.commit.as_deref());
    let commit = store
        .commit(
            tip,
            &files,
            "benchops: rebuild the history index\n\nThe index named records the branch does not hold.\n",
            date_unix,
        )
        .await?;
    match store.advance(tip, &commit).await? {
        super::ports::Advance::Done => {
            index.written(tip.commit.as_deref());
            // The tip is that commit now: the same tree with these files.
            for (path, bytes) in &files {
                tip.files.insert(path.clone(), store.blob_id(bytes));
            }
            if tip.tree.is_some() {
                tip.base_tree = tip.tree.take();
            }
            tip.parent = tip.commit.replace(commit.clone());
            Ok(Some(commit))
        }
        super::ports::Advance::Moved => Ok(None),
    }
}

/// Reads the month parts `wanted` names into `index`; an error says which
/// part is missing or corrupt.
pub async fn load_segments<S: HistoryStore>(
    store: &mut S,
    tip: &TipIndex,
    index: &mut HistoryIndex,
    wanted: &[(LaneName, String)],
) -> Result<Result<(), String>, StepError> {
    let paths: Vec<String> = wanted.iter().map(|(l, m)| segment_path(l, m)).collect();
    let mut blobs = Vec::with_capacity(paths.len());
    for p in &paths {
        match tip.files.get(p) {
            Some(b) => blobs.push((p.as_str(), b.as_str())),
            None => return Ok(Err(format!("corrupt: {p} is missing"))),
        }
    }
    let bytes = store.read_blobs(tip, &blobs).await?;
    for ((lane, month), b) in wanted.iter().zip(bytes) {
        if let Err(e) = index.load_segment(lane, month, &b) {
            return Ok(Err(format!("corrupt: {e}")));
        }
    }
    Ok(Ok(()))
}

/// The index of every record at `tip`, read in chunks and checked as the
/// full read-back checks them.
pub async fn rebuild<S: HistoryStore>(
    store: &mut S,
    tip: &mut TipIndex,
) -> Result<HistoryIndex, StepError> {
    store.widen(tip, &[RESULTS_DIR.to_owned()]).await?;
    let entries: Vec<(String, String, layout::RecordEntry)> = record_paths(tip);
    let mut index = HistoryIndex::empty();
    for chunk in entries.chunks(REBUILD_CHUNK) {
        let read = read_checked(store, tip, chunk).await?;
        index.extend(read.iter().map(|(_, s)| s));
    }
    Ok(index)
}

/// Every record path under `results/` that `tip` lists, with its blob.
fn record_paths(tip: &TipIndex) -> Vec<(String, String, layout::RecordEntry)> {
    tip.files
        .range(RESULTS_DIR.to_owned()..)
        .take_while(|(p, _)| p.starts_with(RESULTS_DIR))
        .filter_map(|(p, b)| {
            let e = layout::RecordEntry::parse(p).ok()?;
            Some((p.clone(), b.clone(), e))
        })
        .collect()
}

/// Reads records (path, blob, entry), each verified against the digest
/// its name carries and checked to belong at its path.
async fn read_checked<S: HistoryStore>(
    store: &mut S,
    tip: &TipIndex,
    items: &[(String, String, layout::RecordEntry)],
) -> Result<Vec<(String, SealedRecord)>, StepError> {
    let wanted: Vec<(&str, &str, &Sha256Digest)> = items
        .iter()
        .map(|(p, b, e)| (p.as_str(), b.as_str(), &e.digest))
        .collect();
    let verdicts = store.read_records(tip, &wanted).await?;
    let mut out = Vec::with_capacity(items.len());
    for ((path, _, entry), verdict) in items.iter().zip(verdicts) {
        let sealed =
            verdict.map_err(|e| corrupt(path, format!("does not hold a valid record: {e}")))?;
        let r = sealed.record();
        if let Some(why) = entry.misplaced(&r.lane, &r.slot) {
            return Err(corrupt(path, why));
        }
        out.push((path.clone(), sealed));
    }
    Ok(out)
}

/// What [`read_needed`] read.
#[derive(Debug)]
pub struct Needed {
    /// The records, sorted by path.
    pub records: Vec<(String, SealedRecord)>,
    /// When the index turned out wrong: why. `records` is then all of
    /// history, and the index passed in was replaced by a rebuilt one.
    pub wrong: Option<String>,
}

/// The records of history the sweep's rules need (see the module
/// documentation), sorted by path; `known` are records in memory already
/// (by path). When the index turns out wrong, every record, and why.
pub async fn read_needed<S: HistoryStore>(
    store: &mut S,
    tip: &mut TipIndex,
    index: &mut HistoryIndex,
    known: &BTreeMap<String, SealedRecord>,
    manifest: &Manifest,
    needs: &Needs,
) -> Result<Needed, StepError> {
    if tip.commit.is_none() {
        return Ok(Needed {
            records: Vec::new(),
            wrong: None,
        });
    }
    let mut loaded: HashMap<Sha256Digest, (String, SealedRecord)> = known
        .iter()
        .map(|(p, s)| (s.digest(), (p.clone(), s.clone())))
        .collect();
    let why = loop {
        let reads = index.next_reads(manifest, &|d| loaded.get(d).map(|(_, s)| s.record()), needs);
        if reads.is_empty() {
            break None;
        }
        if !reads.segments.is_empty() {
            store.widen(tip, &[INDEX_DIR.to_owned()]).await?;
            if let Err(why) = load_segments(store, tip, index, &reads.segments).await? {
                break Some(why);
            }
        }
        match read_entries(store, tip, &reads.records).await? {
            Ok(read) => {
                for (p, s) in read {
                    loaded.insert(s.digest(), (p, s));
                }
            }
            Err(why) => break Some(why),
        }
    };
    if let Some(why) = why {
        // The index is wrong: decide from all of history this time.
        let rebuilt = rebuild(store, tip).await?;
        let all = record_paths(tip);
        let mut out = Vec::with_capacity(all.len());
        for chunk in all.chunks(REBUILD_CHUNK) {
            out.extend(read_checked(store, tip, chunk).await?);
        }
        *index = rebuilt;
        return Ok(Needed {
            records: out,
            wrong: Some(format!(
                "history index disagreed with the records ({why}): read all {} record(s)",
                index.records()
            )),
        });
    }
    let mut out: Vec<(String, SealedRecord)> = loaded.into_values().collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    Ok(Needed {
        records: out,
        wrong: None,
    })
}

/// Reads the records the index names; `Err` when the tree lacks one.
async fn read_entries<S: HistoryStore>(
    store: &mut S,
    tip: &mut TipIndex,
    wanted: &[(LaneName, IndexEntry)],
) -> Result<Result<Vec<(String, SealedRecord)>, String>, StepError> {
    let mut items = Vec::with_capacity(wanted.len());
    for (lane, e) in wanted {
        let Ok(path) = layout::record_path(lane, &e.slot, &e.digest) else {
            return Ok(Err(format!("corrupt: slot {:?} of lane {lane}", e.slot)));
        };
        items.push(path);
    }
    // The paths themselves: a listing walks only the trees on them.
    let mut paths = items.clone();
    paths.sort();
    paths.dedup();
    store.widen(tip, &paths).await?;
    let mut checked = Vec::with_capacity(items.len());
    for path in &items {
        let path = path.clone();
        let Some(blob) = tip.files.get(&path).cloned() else {
            return Ok(Err(format!(
                "it names {path}, which the tree does not hold"
            )));
        };
        let Ok(entry) = layout::RecordEntry::parse(&path) else {
            return Ok(Err(format!("it names {path}, not a record path")));
        };
        checked.push((path, blob, entry));
    }
    let read = read_checked(store, tip, &checked).await?;
    for ((_, e), (path, s)) in wanted.iter().zip(&read) {
        let r = s.record();
        if r.slot != e.slot || r.finished_at != e.finished_at {
            return Ok(Err(format!(
                "it gives {path} slot {} and finished_at {}, the record says {} and {}",
                e.slot, e.finished_at, r.slot, r.finished_at
            )));
        }
    }
    Ok(Ok(read))
}
