//! The `baseline-pointer/v1` contract and the one rule by which pointers
//! move.
//!
//! A record's `publication.baseline_proposal` moves `baselines/<lane>.json`
//! only when the lane's policy (from the schedule manifest) is
//! `last-clean`, and only when the record's slot is strictly later, as an
//! instant, than the pointer's. Records are considered in the order given,
//! as if persisted one by one; the pointer that lands records as `previous`
//! the record it replaces on the branch. Pinned lanes, and lanes the policy
//! map does not name, never move automatically.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::manifest::BaselinePolicy;
use crate::schema::{Contract, canonical_contract_bytes};
use crate::seal::SealedRecord;
use crate::time::Utc;
use crate::{LaneName, Sha256Digest, jcs};

/// A `baseline-pointer/v1` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselinePointer {
    /// Always `baseline-pointer/v1`.
    pub schema: String,
    /// The lane.
    pub lane: LaneName,
    /// The baseline record.
    pub record: Sha256Digest,
    /// Its path on the branch.
    pub path: String,
    /// Its slot (RFC 3339, as in the record).
    pub slot: String,
    /// The policy under which the pointer was written.
    pub policy: BaselinePolicy,
    /// The record this pointer replaced, if any.
    pub previous: Option<Sha256Digest>,
}

impl BaselinePointer {
    /// Reads a stored pointer of `lane`: canonical JSON, the schema, and the
    /// lane it names. Every problem is returned with its JSON path.
    pub fn from_bytes(bytes: &[u8], lane: &LaneName) -> Result<BaselinePointer, Vec<String>> {
        let value = jcs::parse(bytes).map_err(|e| vec![e.to_string()])?;
        Contract::BaselinePointerV1.validate(&value).map_err(|v| {
            v.iter()
                .map(|v| format!("{}: {}", v.path, v.reason))
                .collect::<Vec<_>>()
        })?;
        let pointer: BaselinePointer =
            serde_json::from_value(value).map_err(|e| vec![e.to_string()])?;
        if pointer.lane != *lane {
            return Err(vec![format!(
                "$.lane: the pointer of lane {lane} names lane {}",
                pointer.lane
            )]);
        }
        Ok(pointer)
    }

    /// The canonical bytes, checked against the schema.
    pub fn canonical_bytes(&self) -> Result<Vec<u8>, Vec<String>> {
        canonical_contract_bytes(self, Contract::BaselinePointerV1)
    }
}

/// The last-clean lanes for which some record proposes a baseline: the
/// lanes whose current pointer [`plan_baseline_moves`] needs.
pub fn lanes_with_proposals<'a>(
    records: impl IntoIterator<Item = &'a SealedRecord>,
    policies: &BTreeMap<LaneName, BaselinePolicy>,
) -> BTreeSet<LaneName> {
    records
        .into_iter()
        .filter_map(|s| s.record().publication.baseline_proposal.as_ref())
        .map(|p| &p.lane)
        .filter(|lane| policies.get(*lane) == Some(&BaselinePolicy::LastClean))
        .cloned()
        .collect()
}

/// A pointer that moves: the record it pointed at before, and the new
/// pointer.
pub type Move = (Option<Sha256Digest>, BaselinePointer);

/// Which baseline pointers move, and from what. Records are taken in the
/// given order, each with its history path. See the module documentation
/// for the rule. Pure: every history store moves pointers by it.
pub fn plan_baseline_moves<'a>(
    records: impl IntoIterator<Item = (&'a SealedRecord, &'a str)>,
    policies: &BTreeMap<LaneName, BaselinePolicy>,
    on_branch: &BTreeMap<LaneName, Option<BaselinePointer>>,
) -> BTreeMap<LaneName, Move> {
    let mut moved: BTreeMap<LaneName, Move> = BTreeMap::new();
    for (sealed, path) in records {
        let r = sealed.record();
        let Some(proposal) = &r.publication.baseline_proposal else {
            continue;
        };
        let lane = &proposal.lane;
        if policies.get(lane) != Some(&BaselinePolicy::LastClean) {
            continue;
        }
        let Ok(slot) = Utc::parse(&r.slot) else {
            continue;
        };
        let current = on_branch.get(lane).cloned().flatten();
        let latest = moved
            .get(lane)
            .map(|(_, p)| p.clone())
            .or_else(|| current.clone());
        let newer = match &latest {
            None => true,
            Some(p) => Utc::parse(&p.slot).map_or(true, |s| slot > s),
        };
        if !newer {
            continue;
        }
        let pointer = BaselinePointer {
            schema: Contract::BaselinePointerV1.id().to_owned(),
            lane: lane.clone(),
            record: sealed.digest(),
            path: path.to_owned(),
            slot: r.slot.clone(),
            policy: BaselinePolicy::LastClean,
            previous: current.as_ref().map(|p| p.record),
        };
        moved.insert(lane.clone(), (current.map(|p| p.record), pointer));
    }
    moved
}

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::*;
    use crate::seal::seal_json;

    /// A clean `nightly` record at `slot` that proposes itself as the
    /// lane's baseline (the example, without its drift and error cases).
    fn proposing(slot: &str) -> SealedRecord {
        let mut v: Value = serde_json::from_slice(include_bytes!("../examples/result.draft.json"))
            .expect("the example is JSON");
        v["slot"] = json!(slot);
        v["started_at"] = json!(slot);
        v["finished_at"] = json!(slot);
        let cases: Vec<Value> = v["cases"]
            .as_array()
            .expect("cases")
            .iter()
            .filter(|c| c["id"] == "parse/small" || c["id"] == "parse/large")
            .cloned()
            .map(|mut c| {
                c["outcome"] = json!("pass");
                c["drift"] = Value::Null;
                c
            })
            .collect();
        v["cases"] = Value::Array(cases);
        v["runs"] = json!({"total": 15, "succeeded": 15, "failed": 0, "incomplete": 0,
            "missing": 0, "stale": 0, "scheduler_inconsistent": 0});
        v["case_counts"] = json!({"total": 2, "pass": 2, "drift": 0, "skipped": 0, "error": 0});
        v["publication"] = json!({
            "drift_reports": [],
            "cleared": ["parse/large", "parse/small"],
            "baseline_proposal": {"lane": "nightly", "reason": "clean run"}
        });
        seal_json(&serde_json::to_vec(&v).expect("serializes")).expect("a valid record")
    }

    #[test]
    fn a_pointer_moves_only_to_a_later_instant_however_it_is_written() {
        let lane = LaneName::new("nightly").expect("lane");
        let policies = BTreeMap::from([(lane.clone(), BaselinePolicy::LastClean)]);
        let current = proposing("2026-12-01T01:00:00Z");
        let on_branch = BTreeMap::from([(
            lane.clone(),
            Some(BaselinePointer {
                schema: Contract::BaselinePointerV1.id().to_owned(),
                lane: lane.clone(),
                record: current.digest(),
                path: "current.json".into(),
                slot: current.record().slot.clone(),
                policy: BaselinePolicy::LastClean,
                previous: None,
            }),
        )]);
        // The same instant with milliseconds is not later, though its text
        // sorts differently; a millisecond later is.
        let same = proposing("2026-12-01T01:00:00.000Z");
        assert!(plan_baseline_moves([(&same, "same.json")], &policies, &on_branch).is_empty());
        let later = proposing("2026-12-01T01:00:00.001Z");
        let moved = plan_baseline_moves(
            [(&same, "same.json"), (&later, "later.json")],
            &policies,
            &on_branch,
        );
        let (from, pointer) = moved.get(&lane).expect("moved");
        assert_eq!(*from, Some(current.digest()));
        assert_eq!(pointer.record, later.digest());
        assert_eq!(pointer.slot, "2026-12-01T01:00:00.001Z");
    }
}
