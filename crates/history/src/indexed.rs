//! Reading a local history through its index
//! ([`benchops::history_index`]): the records a rule needs, not all of
//! history. The publisher's sweep drives the same selection over its
//! store port; this is the blocking form for a local repository, which
//! `lane run`, `health` and the watchdog use.

use std::collections::{BTreeSet, HashMap};

use benchops::history_index::{HistoryIndex, INDEX_DIR, Needs, POINTER_PATH, segment_path};
use benchops::manifest::Manifest;
use benchops::{SealedRecord, Sha256Digest};

use crate::error::HistoryError;
use crate::repo::LocalHistory;
use crate::tree::TipIndex;

/// What [`LocalHistory::read_indexed`] read.
#[derive(Debug, Default)]
pub struct IndexedRead {
    /// The records, each with its path, verified and at its lane and slot.
    pub records: Vec<(String, SealedRecord)>,
    /// Records the index named that could not be read, did not verify or
    /// sit at another lane's or slot's path: (path, why).
    pub unreadable: Vec<(String, String)>,
    /// The tip read.
    pub tip: Option<String>,
}

impl LocalHistory {
    /// The records `needs` asks for under `manifest`, read through the
    /// index at the tip. `Ok(Err(why))` when the index cannot be used
    /// (missing, stale, corrupt, or naming a record the tree lacks): the
    /// caller then reads history in full.
    pub fn read_indexed(
        &self,
        manifest: &Manifest,
        needs: &Needs,
    ) -> Result<Result<IndexedRead, String>, HistoryError> {
        let mut tip = self.tip_index_within(&[INDEX_DIR.to_owned()])?;
        if tip.commit.is_none() {
            return Ok(Ok(IndexedRead::default()));
        }
        let read = |tip: &TipIndex, path: &str| -> Result<Option<Vec<u8>>, HistoryError> {
            match tip.files.get(path) {
                None => Ok(None),
                Some(blob) => Ok(self.read_blobs(&[blob.as_str()])?.pop()),
            }
        };
        let Some(pointer) = read(&tip, POINTER_PATH)? else {
            return Ok(Err(format!("{POINTER_PATH} is missing")));
        };
        let (mut index, evidence) = match HistoryIndex::from_pointer(&pointer) {
            Ok(v) => v,
            Err(e) => return Ok(Err(format!("corrupt: {e}"))),
        };
        if let Some(why) = index.stale_at(tip.parent.as_deref()) {
            return Ok(Err(why));
        }
        if needs.drift && evidence.records > 0 {
            let Some(bytes) = read(&tip, benchops::history_index::EVIDENCE_PATH)? else {
                return Ok(Err("corrupt: the evidence part is missing".to_owned()));
            };
            if let Err(e) = index.load_evidence(&evidence, &bytes) {
                return Ok(Err(format!("corrupt: {e}")));
            }
        }
        let mut got: HashMap<Sha256Digest, (String, SealedRecord)> = HashMap::new();
        let mut tried = BTreeSet::new();
        let mut unreadable = Vec::new();
        loop {
            let reads = index.next_reads(manifest, &|d| got.get(d).map(|(_, s)| s.record()), needs);
            let records: Vec<_> = reads
                .records
                .into_iter()
                .filter(|(_, e)| tried.insert(e.digest))
                .collect();
            if reads.segments.is_empty() && records.is_empty() {
                break;
            }
            for (lane, month) in &reads.segments {
                let path = segment_path(lane, month);
                let Some(bytes) = read(&tip, &path)? else {
                    return Ok(Err(format!("corrupt: {path} is missing")));
                };
                if let Err(e) = index.load_segment(lane, month, &bytes) {
                    return Ok(Err(format!("corrupt: {e}")));
                }
            }
            let mut wanted = Vec::with_capacity(records.len());
            for (lane, e) in &records {
                let Ok(path) = benchops::layout::record_path(lane, &e.slot, &e.digest) else {
                    return Ok(Err(format!("wrong: slot {:?} of lane {lane}", e.slot)));
                };
                wanted.push(path);
            }
            // The paths themselves: the listing walks only the trees on them.
            self.widen(&mut tip, &wanted)?;
            let mut items = Vec::with_capacity(wanted.len());
            for ((_, e), path) in records.iter().zip(&wanted) {
                let Some(blob) = tip.files.get(path) else {
                    return Ok(Err(format!(
                        "wrong: it names {path}, which the tree does not hold"
                    )));
                };
                items.push((blob.as_str(), Some(&e.digest)));
            }
            let verdicts = self.read_verified(&items)?;
            for ((path, (lane, e)), verdict) in wanted.iter().zip(&records).zip(verdicts) {
                match verdict {
                    Ok(s) if s.record().lane == *lane && s.record().slot == e.slot => {
                        got.insert(e.digest, (path.clone(), s));
                    }
                    Ok(_) => unreadable.push((path.clone(), "not at its lane and slot".to_owned())),
                    Err(e) => unreadable.push((path.clone(), format!("not a valid record: {e}"))),
                }
            }
        }
        let mut records: Vec<(String, SealedRecord)> = got.into_values().collect();
        records.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(Ok(IndexedRead {
            records,
            unreadable,
            tip: tip.commit,
        }))
    }
}
