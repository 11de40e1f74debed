//! The layout of the `benchmark-history` branch, defined once for every
//! history store (the local git repository and GitHub) and for the links in
//! issue text.
//!
//! | path | content |
//! |---|---|
//! | `results/<lane>/<yyyy>/<mm>/<slot>--<hex>.json` | a sealed `benchmark-result/v1` record; `<hex>` is the sha256 of its bytes |
//! | `receipts/<yyyy>/<mm>/<hex>.json` | a canonical `receipt/v1`; `<hex>` is its own sha256, `<yyyy>/<mm>` come from `sweep.started_at` |
//! | `baselines/<lane>.json` | the lane's canonical `baseline-pointer/v1` |
//!
//! `<slot>` is the record's `slot` in the compact form `YYYYMMDDTHHMMSSZ`
//! ([`crate::time::Utc::compact`]) and `<yyyy>/<mm>` are its year and
//! month. A sub-second part of the slot is dropped from the path (the
//! `<hex>` keeps paths unique); ordering always uses the full slot.

use crate::time::{TimeError, Utc};
use crate::{LaneName, Sha256Digest};

/// The history branch name.
pub const HISTORY_BRANCH: &str = "benchmark-history";
/// The history branch's full ref.
pub const HISTORY_REF: &str = "refs/heads/benchmark-history";
/// The directory of records.
pub const RESULTS_DIR: &str = "results/";

/// The history path of the record of `lane` at `slot` with `digest`:
/// `results/<lane>/<yyyy>/<mm>/<YYYYMMDDTHHMMSSZ>--<hex>.json`.
pub fn record_path(
    lane: &LaneName,
    slot: &str,
    digest: &Sha256Digest,
) -> Result<String, TimeError> {
    let t = Utc::parse(slot)?;
    Ok(format!(
        "results/{lane}/{}/{}--{}.json",
        t.year_month(),
        t.compact(),
        digest.hex()
    ))
}

/// The history path of a lane's baseline pointer: `baselines/<lane>.json`.
pub fn baseline_path(lane: &LaneName) -> String {
    format!("baselines/{lane}.json")
}

/// The history path of a receipt whose canonical bytes hash to `digest`,
/// for a sweep that started at `started_at`:
/// `receipts/<yyyy>/<mm>/<hex>.json`.
pub fn receipt_path(started_at: &str, digest: &Sha256Digest) -> Result<String, TimeError> {
    let t = Utc::parse(started_at)?;
    Ok(format!("receipts/{}/{}.json", t.year_month(), digest.hex()))
}

/// A path under `results/` that does not follow the layout.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{path} is not a history record path (results/<lane>/<yyyy>/<mm>/<slot>--<hex>.json)")]
pub struct BadRecordPath {
    /// The path.
    pub path: String,
}

/// A record in history, as read from its path alone.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct RecordEntry {
    /// The path on the branch.
    pub path: String,
    /// The lane (from the path).
    pub lane: LaneName,
    /// The slot as `YYYYMMDDTHHMMSSZ` (from the path).
    pub slot: String,
    /// The digest in the file name.
    pub digest: Sha256Digest,
}

impl RecordEntry {
    /// Parses `results/<lane>/<yyyy>/<mm>/<slot>--<hex>.json`, checking that
    /// the year and month directories match the slot.
    pub fn parse(path: &str) -> Result<RecordEntry, BadRecordPath> {
        let bad = || BadRecordPath {
            path: path.to_owned(),
        };
        let parts: Vec<&str> = path.split('/').collect();
        let [root, lane, yyyy, mm, file] = parts.as_slice() else {
            return Err(bad());
        };
        if *root != "results" {
            return Err(bad());
        }
        let lane = LaneName::new(*lane).map_err(|_| bad())?;
        let stem = file.strip_suffix(".json").ok_or_else(bad)?;
        let (slot, hex) = stem.split_once("--").ok_or_else(bad)?;
        let digest = Sha256Digest::from_hex(hex).map_err(|_| bad())?;
        let t = Utc::parse_compact(slot).map_err(|_| bad())?;
        if t.year_month() != format!("{yyyy}/{mm}") {
            return Err(bad());
        }
        Ok(RecordEntry {
            path: path.to_owned(),
            lane,
            slot: slot.to_owned(),
            digest,
        })
    }

    /// Whether a record of `lane` at `slot` belongs at this path.
    pub fn places(&self, lane: &LaneName, slot: &str) -> bool {
        *lane == self.lane && Utc::parse(slot).is_ok_and(|t| t.compact() == self.slot)
    }

    /// Why a record of `lane` at `slot` does not belong at this path, or
    /// `None` when it does: the reason every reader of history gives.
    pub fn misplaced(&self, lane: &LaneName, slot: &str) -> Option<String> {
        (!self.places(lane, slot))
            .then(|| format!("holds a record of lane {lane} slot {slot}, which belongs elsewhere"))
    }
}

impl std::fmt::Display for RecordEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.path)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_paths_round_trip_and_reject_strangers() {
        let hex = "ab".repeat(32);
        let digest = Sha256Digest::from_hex(&hex).expect("digest");
        let lane = LaneName::new("nightly").expect("lane");
        let p = record_path(&lane, "2026-11-30T01:00:00.5Z", &digest).expect("path");
        assert_eq!(
            p,
            format!("results/nightly/2026/11/20261130T010000Z--{hex}.json")
        );
        let e = RecordEntry::parse(&p).expect("parses");
        assert_eq!(e.lane, lane);
        assert_eq!(e.slot, "20261130T010000Z");
        assert_eq!(e.digest, digest);
        assert!(e.places(&lane, "2026-11-30T01:00:00Z"));
        assert!(!e.places(&lane, "2026-11-30T01:00:01Z"));
        for bad in [
            format!("results/nightly/2026/12/20261130T010000Z--{hex}.json"),
            format!("results/nightly/2026/11/20261130T010000Z-{hex}.json"),
            format!("results/nightly/2026/11/{hex}.json"),
            format!("receipts/2026/11/20261130T010000Z--{hex}.json"),
            format!("results/../2026/11/20261130T010000Z--{hex}.json"),
            format!("results/nightly/2026/02/20260230T010000Z--{hex}.json"),
            "results/nightly/2026/11/20261130T010000Z--abc.json".to_owned(),
        ] {
            assert!(RecordEntry::parse(&bad).is_err(), "{bad}");
        }
        assert!(record_path(&lane, "2026-11-30 01:00:00Z", &digest).is_err());
    }

    #[test]
    fn receipts_are_filed_by_the_month_the_sweep_started() {
        let d = Sha256Digest::of(b"receipt");
        assert_eq!(
            receipt_path("2026-12-01T00:00:00.250Z", &d).expect("path"),
            format!("receipts/2026/12/{}.json", d.hex())
        );
        assert!(receipt_path("yesterday", &d).is_err());
    }
}
