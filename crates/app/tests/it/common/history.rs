//! Seeding a `benchmark-history` branch for the App's tests with the
//! history crate's writer: the records at their layout paths and, for
//! last-clean lanes, the baseline pointers the publisher would move (the
//! core's `plan_baseline_moves`), in one commit per call. No receipt is
//! written: the status page does not read receipts.

use std::collections::BTreeMap;

use benchops::LaneName;
use benchops::baseline::{BaselinePointer, lanes_with_proposals, plan_baseline_moves};
use benchops::layout::baseline_path;
use benchops::manifest::BaselinePolicy;
use benchops::seal::SealedRecord;
use benchops_history::{LocalHistory, record_path};

/// Commits `records` (those not on the branch yet) and the baseline
/// pointers they move on the branch's tip, dated `at` (RFC 3339), and
/// moves the branch.
pub fn persist(
    h: &LocalHistory,
    records: &[SealedRecord],
    policies: &BTreeMap<LaneName, BaselinePolicy>,
    at: &str,
) {
    let tip = h.tip_index().expect("tip");
    let placed: Vec<(&SealedRecord, String)> = records
        .iter()
        .map(|r| (r, record_path(r).expect("record path")))
        .collect();
    let on_branch: BTreeMap<LaneName, Option<BaselinePointer>> =
        lanes_with_proposals(records, policies)
            .into_iter()
            .map(|lane| {
                let pointer = h.baseline(&lane).expect("baseline pointer");
                (lane, pointer)
            })
            .collect();
    let moves = plan_baseline_moves(
        placed.iter().map(|(r, p)| (*r, p.as_str())),
        policies,
        &on_branch,
    );
    let mut files: Vec<(String, Vec<u8>)> = placed
        .iter()
        .filter(|(_, p)| !tip.files.contains_key(p))
        .map(|(r, p)| (p.clone(), r.bytes().to_vec()))
        .collect();
    for (lane, (_, pointer)) in moves {
        files.push((
            baseline_path(&lane),
            pointer.canonical_bytes().expect("pointer"),
        ));
    }
    let date: jiff::Timestamp = at.parse().expect("timestamp");
    let (commit, _) = h
        .write_commit(&tip, &files, "test history", date.as_second())
        .expect("commit written");
    h.advance(tip.commit.as_deref(), &commit)
        .expect("branch moved");
}
