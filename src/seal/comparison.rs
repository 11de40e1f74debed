//! The semantic rules of a v2 record's comparison that its schema cannot
//! express: a baseline or the reason for lacking one, one key per case and
//! metric of a measured case, confirmations only where a key was re-run,
//! and drift reports and clears that agree with the verdicts. A v3 record
//! keeps every v2 rule and adds those of its own members
//! ([`check_v3_members`]): what decided each key, the same-session
//! evidence, and the culprit bisection.

use std::collections::{BTreeMap, BTreeSet};

use crate::excerpt::quote;
use crate::names::CaseId;
use crate::path::JsonPath;
use crate::record::{
    BisectionRecord, Comparison, ConfirmModeKind, ConfirmationRole, DecidedBy, KeyComparison,
    KeyVerdict, Outcome, ResultRecord, RunSide,
};

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
                    quote(k.case.as_str()),
                    quote(&k.metric)
                ),
            );
        }
        match cases.get(&k.case) {
            None => push(
                p.key("case"),
                format!("compared case {} is not in cases", quote(k.case.as_str())),
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
                            quote(&k.metric)
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
        // v3: side A and side B measured in this run are re-runs too.
        if confirmed
            && k.confirmation.as_ref().is_none_or(|c| c.samples.is_empty())
            && k.same_session.is_none()
        {
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
    check_v3_members(r, c, &root, push);
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

/// The v3 members of a comparison: absent from v2; in v3, `confirm` and
/// every key's `decided_by` present, the same-session evidence exactly on
/// the keys it decided, and a bisection that is consistent in itself and
/// follows a confirmed regression of this record.
fn check_v3_members(
    r: &ResultRecord,
    c: &Comparison,
    root: &JsonPath,
    push: &mut impl FnMut(JsonPath, String),
) {
    if !r.is_v3() {
        let only =
            |member: &str| format!("only a benchmark-result/v3 comparison carries `{member}`");
        if c.confirm.is_some() {
            push(root.key("confirm"), only("confirm"));
        }
        if c.bisection.is_some() {
            push(root.key("bisection"), only("bisection"));
        }
        for (i, k) in c.keys.iter().enumerate() {
            let p = root.key("keys").index(i);
            if k.decided_by.is_some() {
                push(p.key("decided_by"), only("decided_by"));
            }
            if k.same_session.is_some() {
                push(p.key("same_session"), only("same_session"));
            }
        }
        return;
    }
    match &c.confirm {
        None => push(
            root.key("confirm"),
            "a benchmark-result/v3 comparison says how it confirmed (`confirm`)".into(),
        ),
        Some(m) => match (m.mode == m.requested, &m.fallback_reason) {
            (true, Some(_)) => push(
                root.key("confirm").key("fallback_reason"),
                "the mode is the one requested, so there is no fallback to explain".into(),
            ),
            (false, None) => push(
                root.key("confirm").key("fallback_reason"),
                format!(
                    "the mode {} differs from the {} requested, and must say why",
                    m.mode.as_str(),
                    m.requested.as_str()
                ),
            ),
            _ => {}
        },
    }
    let mode = c.confirm.as_ref().map(|m| m.mode);
    for (i, k) in c.keys.iter().enumerate() {
        check_v3_key(r, k, mode, &root.key("keys").index(i), push);
    }
    if let Some(b) = &c.bisection {
        check_bisection(r, c, b, &root.key("bisection"), push);
    }
}

/// A v3 key: what decided it, and its same-session evidence.
fn check_v3_key(
    r: &ResultRecord,
    k: &KeyComparison,
    mode: Option<ConfirmModeKind>,
    p: &JsonPath,
    push: &mut impl FnMut(JsonPath, String),
) {
    let Some(decided_by) = k.decided_by else {
        push(
            p.key("decided_by"),
            "in benchmark-result/v3 every key says what decided it (`decided_by`)".into(),
        );
        return;
    };
    let by_same_session = decided_by == DecidedBy::SameSession;
    match (by_same_session, &k.same_session) {
        (true, None) => push(
            p.key("same_session"),
            "a key decided by the same-session comparison carries its evidence (`same_session`)"
                .into(),
        ),
        (false, Some(_)) => push(
            p.key("same_session"),
            "only a key decided by the same-session comparison carries same-session evidence"
                .into(),
        ),
        _ => {}
    }
    if by_same_session && mode == Some(ConfirmModeKind::StoredBaseline) {
        push(
            p.key("decided_by"),
            "the run confirmed against the stored baseline, so no key was decided in the same session"
                .into(),
        );
    }
    let Some(s) = &k.same_session else {
        return;
    };
    let sp = p.key("same_session");
    for side in [RunSide::A, RunSide::B] {
        let measured = s
            .runs
            .iter()
            .any(|run| run.side == side && run.value.is_some());
        if !measured {
            push(
                sp.key("runs"),
                format!(
                    "side {} has no measured run: a same-session verdict needs both sides",
                    side.as_str().to_uppercase()
                ),
            );
        }
    }
    if s.candidate_commit != r.subject.commit {
        push(
            sp.key("candidate_commit"),
            format!(
                "side B measured {}, but the record's subject is commit {}",
                quote(&s.candidate_commit),
                quote(&r.subject.commit)
            ),
        );
    }
}

/// A culprit bisection: its range ends at the subject, its bounds and
/// culprit lie in the range in order, each step names the commit at its
/// index, a range without a culprit says why, and the key it followed is a
/// confirmed regression of this record.
fn check_bisection(
    r: &ResultRecord,
    c: &Comparison,
    b: &BisectionRecord,
    p: &JsonPath,
    push: &mut impl FnMut(JsonPath, String),
) {
    let commits = &b.commits;
    if commits.len() < 2 {
        push(
            p.key("commits"),
            "a bisection's range holds at least its good bound and its bad bound".into(),
        );
    }
    if commits.last() != Some(&r.subject.commit) {
        push(
            p.key("commits"),
            format!(
                "the range ends at the bad bound the record measured, its subject commit {}",
                quote(&r.subject.commit)
            ),
        );
    }
    let at = |commit: &str| commits.iter().position(|x| x == commit);
    match (at(&b.good), at(&b.bad)) {
        (Some(g), Some(bad)) if g < bad => {
            if b.culprit.is_some() && g + 1 != bad {
                push(
                    p.key("good"),
                    "a culprit is named only when the last good commit comes right before it"
                        .into(),
                );
            }
        }
        (Some(_), Some(_)) => push(
            p.key("good"),
            "the last good commit must come before the first bad one in the range".into(),
        ),
        (g, bad) => {
            if g.is_none() {
                push(
                    p.key("good"),
                    format!("{} is not in the range", quote(&b.good)),
                );
            }
            if bad.is_none() {
                push(
                    p.key("bad"),
                    format!("{} is not in the range", quote(&b.bad)),
                );
            }
        }
    }
    match (&b.culprit, &b.reason) {
        (Some(culprit), reason) => {
            if at(culprit).is_none() {
                push(
                    p.key("culprit"),
                    format!("{} is not in the range", quote(culprit)),
                );
            }
            if *culprit != b.bad {
                push(
                    p.key("culprit"),
                    "the culprit is the first bad commit (`bad`)".into(),
                );
            }
            if reason.is_some() {
                push(
                    p.key("reason"),
                    "a bisection that names a culprit gives no reason for not naming one".into(),
                );
            }
        }
        (None, None) => push(
            p.key("reason"),
            "a bisection that names no culprit must say why".into(),
        ),
        (None, Some(_)) => {}
    }
    if b.steps.len() as u64 > b.budget_steps {
        push(
            p.key("steps"),
            format!(
                "{} steps exceed the budget of {} step(s)",
                b.steps.len(),
                b.budget_steps
            ),
        );
    }
    for (i, s) in b.steps.iter().enumerate() {
        let sp = p.key("steps").index(i);
        let inside = usize::try_from(s.index)
            .ok()
            .filter(|&x| x > 0 && x + 1 < commits.len());
        match inside {
            None => push(
                sp.key("index"),
                format!(
                    "a step measures a commit strictly inside the range of {} commits, not index {}",
                    commits.len(),
                    s.index
                ),
            ),
            Some(x) if commits[x] != s.commit => push(
                sp.key("commit"),
                format!(
                    "the commit at index {} of the range is {}, not {}",
                    s.index,
                    quote(&commits[x]),
                    quote(&s.commit)
                ),
            ),
            Some(_) => {}
        }
    }
    let followed = c.keys.iter().any(|k| {
        k.case == b.case && k.metric == b.metric && k.verdict == KeyVerdict::ConfirmedRegression
    });
    if !followed {
        push(
            p.key("case"),
            format!(
                "case {} metric {} is not a confirmed regression of this record; a bisection follows one",
                quote(b.case.as_str()),
                quote(&b.metric)
            ),
        );
    }
}
