//! The semantic rules of a v2 record's comparison that its schema cannot
//! express: a baseline or the reason for lacking one, one key per case and
//! metric of a measured case, confirmations only where a key was re-run,
//! and drift reports and clears that agree with the verdicts.

use std::collections::{BTreeMap, BTreeSet};

use crate::names::CaseId;
use crate::path::JsonPath;
use crate::record::{Comparison, ConfirmationRole, KeyVerdict, Outcome, ResultRecord};

/// The semantic invariants of a v2 record's comparison, reported through
/// `push` (see [`super::semantic_issues`]).
pub(super) fn check_comparison(
    r: &ResultRecord,
    c: &Comparison,
    push: &mut impl FnMut(JsonPath, String),
) {
    let root = JsonPath::root().key("comparison");
    if !r.is_v2() {
        push(
            root.clone(),
            "only a benchmark-result/v2 record carries a comparison".into(),
        );
        return;
    }
    match (&r.baseline, &c.no_baseline_reason) {
        (Some(_), Some(_)) => push(
            root.key("no_baseline_reason"),
            "a record compared with a baseline gives no reason for lacking one".into(),
        ),
        (None, None) => push(
            root.key("no_baseline_reason"),
            "a record without a baseline must say why".into(),
        ),
        (None, Some(_)) if !c.keys.is_empty() => push(
            root.key("keys"),
            "a record without a baseline compares nothing".into(),
        ),
        _ => {}
    }
    let cases: BTreeMap<&CaseId, _> = r.cases.iter().map(|c| (&c.id, c)).collect();
    let reports: BTreeSet<(&CaseId, &str)> = r
        .publication
        .drift_reports
        .iter()
        .map(|d| (&d.case, d.metric.as_str()))
        .collect();
    let mut seen = BTreeSet::new();
    let mut regressing: BTreeSet<&CaseId> = BTreeSet::new();
    let mut by_case: BTreeMap<&CaseId, Vec<KeyVerdict>> = BTreeMap::new();
    for (i, k) in c.keys.iter().enumerate() {
        let p = root.key("keys").index(i);
        if !seen.insert((&k.case, k.metric.as_str())) {
            push(
                p.clone(),
                format!(
                    "case {} metric {} is compared more than once",
                    crate::excerpt::quote(k.case.as_str()),
                    crate::excerpt::quote(&k.metric)
                ),
            );
        }
        match cases.get(&k.case) {
            None => push(
                p.key("case"),
                format!(
                    "compared case {} is not in cases",
                    crate::excerpt::quote(k.case.as_str())
                ),
            ),
            Some(case) => {
                if !matches!(case.outcome, Outcome::Pass | Outcome::Drift) {
                    push(
                        p.key("case"),
                        "only measured cases (pass or drift) are compared".into(),
                    );
                }
                if !case.metrics.iter().any(|m| m.name == k.metric) {
                    push(
                        p.key("metric"),
                        format!(
                            "compared metric {} is not among the case's metrics",
                            crate::excerpt::quote(&k.metric)
                        ),
                    );
                }
            }
        }
        by_case.entry(&k.case).or_default().push(k.verdict);
        let confirmed = matches!(
            k.verdict,
            KeyVerdict::ConfirmedRegression | KeyVerdict::ConfirmedImprovement
        );
        match (&k.role, &k.confirmation) {
            (ConfirmationRole::None, Some(_)) => push(
                p.key("confirmation"),
                "a key that was not re-run has no confirmation".into(),
            ),
            (ConfirmationRole::None, None)
                if confirmed || k.verdict == KeyVerdict::NotConfirmed =>
            {
                push(
                    p.key("verdict"),
                    "only a re-run key can be confirmed or not confirmed".into(),
                )
            }
            _ => {}
        }
        if confirmed && k.confirmation.as_ref().is_none_or(|c| c.samples.is_empty()) {
            push(
                p.key("confirmation"),
                "a confirmed verdict needs confirmation samples from a re-run".into(),
            );
        }
        if k.verdict == KeyVerdict::NotConfirmed
            && !matches!(
                k.role,
                ConfirmationRole::SuspectRegression | ConfirmationRole::SuspectImprovement
            )
        {
            push(
                p.key("verdict"),
                "only a suspect can be not confirmed".into(),
            );
        }
        let is_reported = reports.contains(&(&k.case, k.metric.as_str()));
        if k.verdict == KeyVerdict::ConfirmedRegression {
            regressing.insert(&k.case);
            if !is_reported {
                push(
                    p.key("verdict"),
                    "a confirmed regression must have a drift report".into(),
                );
            }
        } else if is_reported {
            push(
                p.key("verdict"),
                "a drift report needs a confirmed regression verdict".into(),
            );
        }
    }
    for (i, d) in r.publication.drift_reports.iter().enumerate() {
        if !seen.contains(&(&d.case, d.metric.as_str())) {
            push(
                JsonPath::root()
                    .key("publication")
                    .key("drift_reports")
                    .index(i),
                "a drift report must name a compared key".into(),
            );
        }
    }
    for (i, case) in r.cases.iter().enumerate() {
        let drift = case.outcome == Outcome::Drift;
        if drift != regressing.contains(&case.id) {
            push(
                JsonPath::root().key("cases").index(i).key("outcome"),
                "in v2 a case drifts exactly when one of its keys is a confirmed regression".into(),
            );
        }
    }
    for (i, id) in r.publication.cleared.iter().enumerate() {
        let ok = by_case
            .get(id)
            .is_some_and(|v| !v.is_empty() && v.iter().all(|v| v.clears()));
        if !ok {
            push(
                JsonPath::root()
                    .key("publication")
                    .key("cleared")
                    .index(i),
                "in v2 a case is cleared only when every compared key is within the band or improved"
                    .into(),
            );
        }
    }
}
