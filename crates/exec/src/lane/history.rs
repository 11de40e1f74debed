//! Reading a lane's baseline and the drift state from the
//! `benchmark-history` branch, read-only, through `benchops-history` (plain
//! `git`): a local repository on disk, or a git URL fetched into a cache
//! with the environment's own git access. No GitHub API and no token.
//!
//! One read costs a fixed number of git processes: the tip, one `ls-tree`
//! of the lane's baseline pointer and every record, the pointer and its
//! record, and one `cat-file --batch` for every record, verified while git
//! reads (the history crate's one reader).

use std::path::{Path, PathBuf};

use benchops::LaneName;
use benchops::baseline::BaselinePointer;
use benchops::layout::{self, RESULTS_DIR, RecordEntry};
use benchops::reconcile::{DriftKey, HistoryRecord, Standing, drift_statuses};
use benchops::seal::SealedRecord;
use benchops_history::{HistoryError, LocalHistory};

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
    /// Git could not be run, failed (for a URL: `git ls-remote` or
    /// `git fetch`, with what it said), or printed something unreadable.
    #[error("reading history {name} failed")]
    Read {
        /// The history, as given.
        name: String,
        /// What failed.
        #[source]
        source: HistoryError,
    },
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
    /// Each drifting key's anchor: the commit its drift was last confirmed
    /// against in this lane.
    pub anchors: Vec<super::types::KeyAnchor>,
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

/// Reads what a run of `lane` needs from `source`: its baseline, and the
/// keys history holds as drifting for it under `manifest`. `cache` is where
/// a URL's history is fetched to.
pub fn read(
    source: &HistorySource,
    cache: &Path,
    lane: &LaneName,
    manifest: &benchops::manifest::Manifest,
) -> Result<HistoryView, HistoryReadError> {
    let name = source.display();
    let failed = |source| HistoryReadError::Read {
        name: name.clone(),
        source,
    };
    let (history, tip) = match source {
        HistorySource::Local(p) => {
            if !p.exists() {
                return Err(HistoryReadError::Missing(p.clone()));
            }
            let history = LocalHistory::open(p).map_err(|e| match e {
                HistoryError::NoRepository { reason, .. } => HistoryReadError::NotARepository {
                    path: p.display().to_string(),
                    reason,
                },
                e => failed(e),
            })?;
            let tip = history.tip().map_err(failed)?;
            (history, tip)
        }
        HistorySource::Url(u) => benchops_history::fetch(u, cache).map_err(failed)?,
    };
    let Some(tip) = tip else {
        return Ok(HistoryView::default());
    };
    let invalid = |path: &str, reason: String| HistoryReadError::Invalid {
        source_name: name.clone(),
        path: path.to_owned(),
        reason,
    };
    // The lane's baseline pointer.
    let bpath = layout::baseline_path(lane);
    let files = history.files(&tip, &[bpath.as_str()]).map_err(failed)?;
    let read_one = |blob: &str| {
        history
            .read_blobs(&[blob])
            .map(|mut b| b.pop().unwrap_or_default())
            .map_err(failed)
    };
    // A record by its path, verified against its digest.
    let record_at = |path: &str,
                     digest: &benchops::Sha256Digest|
     -> Result<Option<SealedRecord>, HistoryReadError> {
        let Some(blob) = history.files(&tip, &[path]).map_err(failed)?.remove(path) else {
            return Ok(None);
        };
        let bytes = read_one(&blob)?;
        benchops::seal::verify(&bytes, Some(digest))
            .map(Some)
            .map_err(|e| invalid(path, e.to_string()))
    };
    // The baseline.
    let baseline = match files.get(&bpath) {
        None => None,
        Some(blob) => {
            let bytes = read_one(blob)?;
            let pointer = BaselinePointer::from_bytes(&bytes, lane)
                .map_err(|e| invalid(&bpath, e.join("; ")))?;
            let record = record_at(&pointer.path, &pointer.record)?.ok_or_else(|| {
                invalid(
                    &bpath,
                    format!("its record {} is not on the branch", pointer.path),
                )
            })?;
            Some(Baseline { pointer, record })
        }
    };
    // The records the drift state needs, through the history index when it
    // is fresh (each lane's latest record, every drift record, each open
    // episode: they decide as all of history does); else every record.
    let needs = benchops::history_index::Needs {
        recent: 1,
        since: None,
        drift: true,
    };
    let (sealed, skipped) = match history.read_indexed(manifest, &needs).map_err(failed)? {
        Ok(r) if r.tip.as_deref() == Some(tip.as_str()) => (
            r.records.into_iter().map(|(_, s)| s).collect::<Vec<_>>(),
            r.unreadable
                .into_iter()
                .map(|(p, why)| format!("{p}: {why}"))
                .collect::<Vec<_>>(),
        ),
        _ => read_all(&history, &tip, &failed)?,
    };
    let history: Vec<HistoryRecord<'_>> = sealed
        .iter()
        .map(|s| HistoryRecord {
            digest: s.digest(),
            record: s.record(),
        })
        .collect();
    let drifting: Vec<DriftKey> = drift_statuses(manifest, &history)
        .into_iter()
        .filter(|s| match &s.standing {
            Standing::Reproducing { holding } => holding.contains(lane),
            Standing::Uncovered | Standing::Cleared { .. } => false,
        })
        .map(|s| s.key)
        .collect();
    let mut anchors = Vec::new();
    for k in &drifting {
        let base =
            |b: &benchops::record::BaselineRef| -> Result<Option<SealedRecord>, HistoryReadError> {
                match sealed.iter().find(|s| s.digest() == b.record) {
                    Some(s) => Ok(Some(s.clone())),
                    None => match layout::record_path(&b.lane, &b.slot, &b.record) {
                        Ok(path) => record_at(&path, &b.record),
                        Err(_) => Ok(None),
                    },
                }
            };
        if let Some(a) = anchor_of(lane, k, &sealed, &base)? {
            anchors.push(a);
        }
    }
    Ok(HistoryView {
        tip: Some(tip),
        baseline,
        drifting,
        anchors,
        records: sealed.len(),
        skipped,
    })
}

/// The commit `key`'s drift was last confirmed against in `lane`: side A
/// of the latest record of the lane that confirmed it (a same-session
/// verdict), or that record's baseline record's commit (a stored-baseline
/// one).
fn anchor_of(
    lane: &LaneName,
    key: &DriftKey,
    sealed: &[SealedRecord],
    base: &dyn Fn(&benchops::record::BaselineRef) -> Result<Option<SealedRecord>, HistoryReadError>,
) -> Result<Option<super::types::KeyAnchor>, HistoryReadError> {
    use benchops::record::KeyVerdict;
    let Some((record, k)) = sealed
        .iter()
        .filter(|s| s.record().lane == *lane)
        .filter_map(|s| {
            let k = s.record().comparison.as_ref()?.keys.iter().find(|c| {
                c.case == key.case
                    && c.metric == key.metric
                    && c.verdict == KeyVerdict::ConfirmedRegression
            })?;
            Some((s, k))
        })
        .max_by_key(|(s, _)| benchops::time::order_key(&s.record().slot))
    else {
        return Ok(None);
    };
    let commit = match &k.same_session {
        Some(ab) => ab.baseline_commit.clone(),
        None => {
            let Some(b) = record.record().baseline.as_ref() else {
                return Ok(None);
            };
            match base(b)? {
                Some(s) => s.record().subject.commit.clone(),
                None => return Ok(None),
            }
        }
    };
    Ok(Some(super::types::KeyAnchor {
        case: key.case.clone(),
        metric: key.metric.clone(),
        commit,
    }))
}

/// Every record at `tip` (at most [`MAX_RECORDS`], the newest), each
/// verified against the digest its path names; those that fail are listed.
fn read_all(
    history: &LocalHistory,
    tip: &str,
    failed: &dyn Fn(HistoryError) -> HistoryReadError,
) -> Result<(Vec<SealedRecord>, Vec<String>), HistoryReadError> {
    let files = history.files(tip, &[RESULTS_DIR]).map_err(failed)?;
    let mut entries: Vec<(RecordEntry, &str)> = files
        .iter()
        .filter_map(|(p, blob)| Some((RecordEntry::parse(p).ok()?, blob.as_str())))
        .collect();
    // The newest by slot when there are more than the bound.
    entries.sort_by(|a, b| b.0.slot.cmp(&a.0.slot));
    entries.truncate(MAX_RECORDS);
    let items: Vec<_> = entries
        .iter()
        .map(|(e, blob)| (*blob, Some(&e.digest)))
        .collect();
    let verdicts = history.read_verified(&items).map_err(failed)?;
    let mut sealed = Vec::with_capacity(entries.len());
    let mut skipped = Vec::new();
    for ((entry, _), verdict) in entries.iter().zip(verdicts) {
        match verdict {
            Ok(s) => sealed.push(s),
            Err(e) => skipped.push(format!(
                "{}: {}",
                entry.path,
                benchops::excerpt::bytes_prefix(e.to_string().as_bytes(), 200)
            )),
        }
    }
    Ok((sealed, skipped))
}

#[cfg(test)]
mod tests {
    use benchops::manifest::BaselinePolicy;
    use benchops_history::record_path;
    use benchops_testkit::records::{TWO_LANE_MANIFEST, clean, drift};

    use super::*;

    fn nightly() -> LaneName {
        LaneName::new("nightly").expect("lane")
    }

    fn manifest() -> benchops::manifest::Manifest {
        benchops::manifest::from_toml(TWO_LANE_MANIFEST, "manifest.toml")
            .expect("manifest")
            .manifest
    }

    /// A history whose `nightly` baseline is a clean record, drifting
    /// since, and a file at a record path that holds no record.
    fn history(dir: &Path) -> (PathBuf, SealedRecord, String) {
        let path = dir.join("history.git");
        let h = LocalHistory::open_or_init(&path).expect("history");
        let base = clean("nightly", "2026-11-28T01:00:00Z");
        let later = drift("nightly", "2026-11-29T01:00:00Z");
        let broken = record_path(&drift("sentinel", "2026-11-29T02:00:00Z")).expect("path");
        let pointer = BaselinePointer {
            schema: "baseline-pointer/v1".to_owned(),
            lane: nightly(),
            record: base.digest(),
            path: record_path(&base).expect("path"),
            slot: base.record().slot.clone(),
            policy: BaselinePolicy::LastClean,
            previous: None,
        };
        let files = vec![
            (record_path(&base).expect("path"), base.bytes().to_vec()),
            (record_path(&later).expect("path"), later.bytes().to_vec()),
            (broken.clone(), b"not a record".to_vec()),
            (
                layout::baseline_path(&nightly()),
                pointer.canonical_bytes().expect("pointer"),
            ),
        ];
        let tip = h.tip_index().expect("tip");
        let (commit, _) = h
            .write_commit(&tip, &files, "fixture", 1_764_460_800)
            .expect("commit");
        h.advance(None, &commit).expect("branch");
        (path, base, broken)
    }

    #[test]
    fn a_lane_reads_the_same_view_from_a_path_and_from_a_url() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let (path, base, broken) = history(tmp.path());
        let cache = tmp.path().join("cache");
        let local = read(
            &HistorySource::Local(path.clone()),
            &cache,
            &nightly(),
            &manifest(),
        )
        .expect("read");
        let baseline = local.baseline.as_ref().expect("a baseline");
        assert_eq!(baseline.record.digest(), base.digest());
        assert_eq!(local.records, 2);
        assert_eq!(local.skipped.len(), 1, "{:?}", local.skipped);
        assert!(local.skipped[0].starts_with(&format!("{broken}: ")));
        assert_eq!(
            local
                .drifting
                .iter()
                .map(|k| (k.case.as_str(), k.metric.as_str()))
                .collect::<Vec<_>>(),
            [("parse/large", "wall_s")]
        );

        let url = HistorySource::parse(&format!("file://{}", path.display()));
        assert!(matches!(url, HistorySource::Url(_)));
        let fetched = read(&url, &cache, &nightly(), &manifest()).expect("fetched");
        assert_eq!(fetched.tip, local.tip);
        assert_eq!(
            fetched.baseline.map(|b| b.record.digest()),
            Some(base.digest())
        );
        assert_eq!(
            (fetched.records, fetched.drifting, fetched.skipped.len()),
            (2, local.drifting, 1)
        );
    }

    #[test]
    fn a_wrong_history_path_is_named_and_never_created() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let cache = tmp.path().join("cache");
        let missing = tmp.path().join("absent.git");
        let err = read(
            &HistorySource::Local(missing.clone()),
            &cache,
            &nightly(),
            &manifest(),
        )
        .expect_err("missing");
        assert!(matches!(err, HistoryReadError::Missing(_)), "{err:?}");
        assert!(!missing.exists());

        let empty = tmp.path().join("empty");
        std::fs::create_dir(&empty).expect("dir");
        let err = read(
            &HistorySource::Local(empty.clone()),
            &cache,
            &nightly(),
            &manifest(),
        )
        .expect_err("not a repository");
        assert!(
            err.to_string().starts_with(&format!(
                "history {} is not a git repository: ",
                empty.display()
            )),
            "{err}"
        );
        assert_eq!(std::fs::read_dir(&empty).expect("list").count(), 0);
    }
}
