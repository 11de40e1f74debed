//! The semantic rules of a record that its JSON Schema cannot express:
//! counts that add up, summaries that match their samples, skips with
//! reasons, and the comparison's own rules ([`crate::compare`]).

use std::collections::{BTreeMap, BTreeSet};

use crate::excerpt::quote;
use crate::path::JsonPath;
use crate::record::{CaseCounts, Outcome, ResultRecord, RunCounts, Verdict};

use super::{IssueKind, VerifyIssue, parse_utc};

/// The most semantic problems [`verify`](fn@super::verify) lists for one record; the rest are
/// counted in one last issue, so a small hostile record cannot make reports
/// and receipts many times its size.
pub const MAX_SEMANTIC_ISSUES: usize = 100;

/// The semantic invariants of a record that the schema cannot express.
pub fn semantic_issues(r: &ResultRecord) -> Vec<VerifyIssue> {
    let mut out = Vec::new();
    let mut push = |path: JsonPath, reason: String| {
        out.push(VerifyIssue {
            kind: IssueKind::Semantic,
            path,
            reason,
        });
    };
    let root = JsonPath::root();

    check_runs(&r.runs, || root.key("runs"), &mut push);
    let mut case_runs = RunCounts::default();
    let mut seen = BTreeSet::new();
    let mut by_id = BTreeMap::new();
    // One buffer for every metric's samples.
    let mut buffer = Vec::new();
    for (i, case) in r.cases.iter().enumerate() {
        // Paths are built only for a problem found.
        let p = || root.key("cases").index(i);
        if !seen.insert(&case.id) {
            push(
                p().key("id"),
                format!("case id {} appears more than once", quote(case.id.as_str())),
            );
        }
        by_id.insert(&case.id, case);
        check_runs(&case.runs, || p().key("runs"), &mut push);
        case_runs.add(&case.runs);

        match (&case.outcome, &case.skip_reason) {
            (Outcome::Skipped, None) => {
                push(
                    p().key("skip_reason"),
                    "a skipped case must say why it was skipped".into(),
                );
            }
            (Outcome::Skipped, Some(reason)) if reason.trim().is_empty() => {
                push(
                    p().key("skip_reason"),
                    "skip_reason must not be blank".into(),
                );
            }
            (Outcome::Skipped, Some(_)) | (_, None) => {}
            (o, Some(_)) => push(
                p().key("skip_reason"),
                format!("only skipped cases carry a skip_reason; this case is {o:?}")
                    .to_lowercase(),
            ),
        }
        match (case.outcome, &case.error) {
            (Outcome::Error, None) => {
                push(
                    p().key("error"),
                    "a case in error must carry error detail".into(),
                );
            }
            (Outcome::Error, Some(_)) | (_, None) => {}
            (_, Some(_)) => push(
                p().key("error"),
                "only cases in error carry error detail".into(),
            ),
        }
        match (case.outcome, &case.drift) {
            // v2 keeps drift evidence in `comparison`, checked below.
            (_, None) if r.is_v2() => {}
            (_, Some(_)) if r.is_v2() => push(
                p().key("drift"),
                "a v2 record keeps drift evidence in `comparison`; `drift` must be null".into(),
            ),
            (Outcome::Drift, None) => {
                push(
                    p().key("drift"),
                    "a drift case must carry its drift evidence".into(),
                );
            }
            (Outcome::Drift, Some(d)) => {
                if d.verdict != Verdict::Confirmed {
                    push(
                        p().key("drift").key("verdict"),
                        "a drift outcome needs a confirmed verdict".into(),
                    );
                }
                if d.confirmation_samples.is_empty() {
                    push(
                        p().key("drift").key("confirmation_samples"),
                        "a confirmed drift needs confirmation samples from a re-run".into(),
                    );
                }
            }
            (Outcome::Pass, Some(d)) if d.verdict == Verdict::Confirmed => push(
                p().key("drift").key("verdict"),
                "a passing case cannot carry a confirmed drift verdict".into(),
            ),
            (Outcome::Pass, _) => {}
            (_, Some(_)) => push(
                p().key("drift"),
                "only measured cases (pass or drift) carry drift evidence".into(),
            ),
            (_, None) => {}
        }
        if let Some(d) = &case.drift
            && !case.metrics.iter().any(|m| m.name == d.metric)
        {
            push(
                p().key("drift").key("metric"),
                format!(
                    "drift metric {} is not among the case's metrics",
                    quote(&d.metric)
                ),
            );
        }
        // A skipped case has no child runs, unless its command ran, succeeded
        // every time, and measured none of its own metrics (it said why).
        if matches!(case.outcome, Outcome::Skipped) && case.runs.total != 0 {
            let own: Vec<_> = case
                .metrics
                .iter()
                .filter(|m| !crate::analysis::BUILTIN_METRICS.contains(&m.name.as_str()))
                .collect();
            let skipped_by_command = case.runs.succeeded == case.runs.total
                && !own.is_empty()
                && own.iter().all(|m| m.samples.iter().all(Option::is_none));
            if !skipped_by_command {
                push(
                    p().key("runs").key("total"),
                    "a skipped case has no child runs, or only succeeded runs whose command measured none of its own metrics".into(),
                );
            }
        }
        let mut names = BTreeSet::new();
        for (j, m) in case.metrics.iter().enumerate() {
            let mp = || p().key("metrics").index(j);
            if !names.insert(&m.name) {
                push(
                    mp().key("name"),
                    format!("metric {} appears more than once", quote(&m.name)),
                );
            }
            check_summary(m, mp, &mut buffer, &mut push);
        }
    }
    if case_runs != r.runs {
        push(
            root.key("runs"),
            format!(
                "record-level run counts must equal the sum over cases (cases sum to total {}, succeeded {}, failed {})",
                case_runs.total, case_runs.succeeded, case_runs.failed
            ),
        );
    }
    let counts = CaseCounts::of(&r.cases);
    if counts != r.case_counts {
        push(
            root.key("case_counts"),
            format!(
                "counts do not add up: cases hold total {}, pass {}, drift {}, skipped {}, error {}",
                counts.total, counts.pass, counts.drift, counts.skipped, counts.error
            ),
        );
    }
    if crate::record::fingerprint_of(&r.environment.facts) != r.environment.fingerprint {
        push(
            root.key("environment").key("fingerprint"),
            "fingerprint is not the digest of the canonical facts".into(),
        );
    }
    for (field, value) in [
        ("slot", &r.slot),
        ("started_at", &r.started_at),
        ("finished_at", &r.finished_at),
    ] {
        if let Err(e) = crate::time::Utc::parse(value) {
            push(
                root.key(field),
                format!("not a valid instant: {}", e.reason),
            );
        }
    }
    match (parse_utc(&r.started_at), parse_utc(&r.finished_at)) {
        (Some(s), Some(f)) if f < s => {
            push(
                root.key("finished_at"),
                "finished_at is earlier than started_at".into(),
            );
        }
        _ => {}
    }
    if let Some(k) = &r.skipped {
        let at = root.key("skipped");
        if !r.is_v3() {
            push(
                at.clone(),
                "only a benchmark-result/v3 record says which slots were skipped".into(),
            );
        }
        if crate::manifest::CatchUp::from_word(&k.catch_up).is_none() {
            push(at.key("catch_up"), "not `latest` or `none`".into());
        }
        if k.count == 0 {
            push(
                at.key("count"),
                "at least 1 slot, or no `skipped` at all".into(),
            );
        }
        match (parse_utc(&k.first), parse_utc(&k.last), parse_utc(&r.slot)) {
            (Some(first), Some(last), Some(slot)) => {
                if last < first {
                    push(at.key("last"), "earlier than `first`".into());
                }
                if last >= slot {
                    push(at.key("last"), "not before the record's slot".into());
                }
            }
            _ => push(at, "`first` and `last` must be valid instants".into()),
        }
    }

    // The publication plan must agree with the outcomes.
    let plan = root.key("publication");
    let mut reported = BTreeSet::new();
    let mut reported_keys = BTreeSet::new();
    for (i, rep) in r.publication.drift_reports.iter().enumerate() {
        let p = plan.key("drift_reports").index(i);
        if r.is_v2() {
            // Several metrics of one case may drift; one report per key.
            if !reported_keys.insert((&rep.case, &rep.metric)) {
                push(
                    p.clone(),
                    format!(
                        "case {} metric {} is reported more than once",
                        quote(rep.case.as_str()),
                        quote(&rep.metric)
                    ),
                );
            }
            reported.insert(&rep.case);
        } else if !reported.insert(&rep.case) {
            push(
                p.key("case"),
                format!(
                    "case {} is reported more than once",
                    quote(rep.case.as_str())
                ),
            );
        }
        match by_id.get(&rep.case) {
            None => push(
                p.key("case"),
                format!("reported case {} is not in cases", quote(rep.case.as_str())),
            ),
            Some(c) if c.outcome != Outcome::Drift => push(
                p.key("case"),
                format!(
                    "reported case {} is not a drift case",
                    quote(rep.case.as_str())
                ),
            ),
            Some(c) => {
                if c.drift.as_ref().is_some_and(|d| d.metric != rep.metric) {
                    push(
                        p.key("metric"),
                        "report metric differs from the drift evidence".into(),
                    );
                }
            }
        }
    }
    for case in r.cases.iter().filter(|c| c.outcome == Outcome::Drift) {
        if !reported.contains(&case.id) {
            push(
                plan.key("drift_reports"),
                format!("drift case {} has no drift report", quote(case.id.as_str())),
            );
        }
    }
    for (i, id) in r.publication.cleared.iter().enumerate() {
        match by_id.get(id) {
            Some(c) if c.outcome == Outcome::Pass => {}
            Some(c) => push(
                plan.key("cleared").index(i),
                format!(
                    "cleared case {} did not pass (outcome {})",
                    quote(id.as_str()),
                    format!("{:?}", c.outcome).to_lowercase()
                ),
            ),
            None => push(
                plan.key("cleared").index(i),
                format!("cleared case {} is not in cases", quote(id.as_str())),
            ),
        }
    }
    if let Some(p) = &r.publication.baseline_proposal {
        let bp = plan.key("baseline_proposal");
        if p.lane != r.lane {
            push(
                bp.key("lane"),
                "a record may only propose a baseline for its own lane".into(),
            );
        }
        // v3: a case in drift only by keys drifting in history that were
        // measured against their own anchor in the same session does not
        // hold the lane's baseline (ADR 0008).
        let anchored_only = r.is_v3()
            && r.comparison.as_ref().is_some_and(|c| {
                c.keys
                    .iter()
                    .filter(|k| k.verdict == crate::record::KeyVerdict::ConfirmedRegression)
                    .all(|k| {
                        k.drifting_in_history
                            && k.decided_by == Some(crate::record::DecidedBy::SameSession)
                    })
            });
        let drift = r.case_counts.drift > 0 && !anchored_only;
        if drift || r.case_counts.error > 0 || r.runs.succeeded == 0 {
            push(
                bp.clone(),
                "only a clean record (no drift but that of keys measured against their own anchor, no error, at least one success) may be proposed as a baseline".into(),
            );
        }
    }
    if let Some(c) = &r.comparison {
        super::comparison::check_comparison(r, c, &mut push);
    }
    out
}

fn check_runs(c: &RunCounts, path: impl Fn() -> JsonPath, push: &mut impl FnMut(JsonPath, String)) {
    match c.class_sum() {
        Some(sum) if sum == c.total => {}
        Some(sum) => push(
            path().key("total"),
            format!("total is {} but the classes add up to {sum}", c.total),
        ),
        None => push(path().key("total"), "class counts overflow".into()),
    }
}

fn check_summary(
    m: &crate::record::Metric,
    path: impl Fn() -> JsonPath,
    values: &mut Vec<f64>,
    push: &mut impl FnMut(JsonPath, String),
) {
    // Most summaries are right: confirmed by counting, with no copy of the
    // samples; anything else is computed in full, which names the problem.
    if let Some(s) = &m.summary
        && summary_holds(m, s)
    {
        return;
    }
    values.clear();
    values.extend(m.samples.iter().flatten().map(|f| f.get()));
    match (&m.summary, values.is_empty()) {
        (None, true) => {}
        (None, false) => push(
            path().key("summary"),
            "samples are present but summary is null".into(),
        ),
        (Some(_), true) => {
            push(
                path().key("summary"),
                "summary must be null when no sample was measured".into(),
            );
        }
        (Some(s), false) => {
            if s.n != values.len() as u64 {
                push(
                    path().key("summary").key("n"),
                    format!(
                        "n is {} but there are {} non-null samples",
                        s.n,
                        values.len()
                    ),
                );
                return;
            }
            let want = summary_in_place(values);
            let checks = [
                ("median", s.median.get(), want.median),
                ("mad", s.mad.get(), want.mad),
                ("min", s.min.get(), want.min),
                ("max", s.max.get(), want.max),
            ];
            for (name, got, want) in checks {
                if got != want {
                    push(
                        path().key("summary").key(name),
                        format!("{name} is {got} but the samples give {want}"),
                    );
                }
            }
            if let Some(ci) = &s.ci
                && ci.low.get() > ci.high.get()
            {
                push(
                    path().key("summary").key("ci"),
                    "ci.low is above ci.high".into(),
                );
            }
        }
    }
}

/// The key of `v` in the total order of [`f64::total_cmp`]: the keys of two
/// values compare as the values do under it.
fn order_key(v: f64) -> i64 {
    let bits = v.to_bits() as i64;
    bits ^ ((((bits >> 63) as u64) >> 1) as i64)
}

/// Where a value `m` falls among some values, in the total order of
/// [`f64::total_cmp`], from one pass over them.
struct Rank {
    n: usize,
    below: usize,
    at: usize,
    nearest_below: i64,
    nearest_above: i64,
    min: i64,
    max: i64,
}

fn rank(values: impl Iterator<Item = f64>, m: f64) -> Rank {
    let km = order_key(m);
    let mut r = Rank {
        n: 0,
        below: 0,
        at: 0,
        nearest_below: i64::MIN,
        nearest_above: i64::MAX,
        min: i64::MAX,
        max: i64::MIN,
    };
    for v in values {
        let k = order_key(v);
        r.n += 1;
        r.min = r.min.min(k);
        r.max = r.max.max(k);
        if k < km {
            r.below += 1;
            r.nearest_below = r.nearest_below.max(k);
        } else if k == km {
            r.at += 1;
        } else {
            r.nearest_above = r.nearest_above.min(k);
        }
    }
    r
}

impl Rank {
    /// Whether `m` (the value ranked) is the median [`stats::Summary::of`]
    /// gives: the middle value, or, for an even count, the two middle ones
    /// halved and added; bit for bit. Counting replaces selecting.
    fn is_median(&self, m: f64) -> bool {
        let half = self.n / 2;
        let at_or_below = self.below + self.at;
        if self.n % 2 == 1 {
            // The middle value (index `half`) is `m`.
            return self.below <= half && at_or_below > half;
        }
        // The two middle values (indices `half - 1` and `half`), `m` between.
        if self.n == 0 || self.below > half || at_or_below < half {
            return false;
        }
        let from_key = |k: i64| f64::from_bits((k ^ ((((k >> 63) as u64) >> 1) as i64)) as u64);
        let lower = if self.below == half {
            from_key(self.nearest_below)
        } else {
            m
        };
        let upper = if at_or_below > half {
            m
        } else {
            from_key(self.nearest_above)
        };
        (lower / 2.0 + upper / 2.0).to_bits() == m.to_bits()
    }
}

/// Whether `s` is exactly the summary of `m`'s samples, by counting (two
/// passes over the samples, no copy of them); `false` means "not shown",
/// and the full computation decides.
fn summary_holds(m: &crate::record::Metric, s: &crate::record::Summary) -> bool {
    let values = || m.samples.iter().flatten().map(|f| f.get());
    let (median, mad) = (s.median.get(), s.mad.get());
    let r = rank(values(), median);
    r.n > 0
        && s.n == r.n as u64
        && order_key(s.min.get()) == r.min
        && order_key(s.max.get()) == r.max
        && r.is_median(median)
        && rank(values().map(|v| (v - median).abs()), mad).is_median(mad)
        && s.ci.as_ref().is_none_or(|ci| ci.low.get() <= ci.high.get())
}

/// The summary [`stats::Summary::of`] gives for `values`, computed in the
/// buffer itself (reordered by selection, then overwritten with the deviations), so that
/// checking a large sample needs no further copies of it. `values` must not
/// be empty.
fn summary_in_place(values: &mut [f64]) -> crate::stats::Summary {
    // The order statistics by selection (linear time) rather than by
    // sorting: the same elements under the same total order, so the same
    // values as the statistics module, bit for bit.
    fn median_selected(values: &mut [f64]) -> f64 {
        let n = values.len();
        let (below, upper, _) = values.select_nth_unstable_by(n / 2, f64::total_cmp);
        let upper = *upper;
        if n % 2 == 1 {
            return upper;
        }
        let lower = below
            .iter()
            .copied()
            .max_by(f64::total_cmp)
            .unwrap_or(upper);
        lower / 2.0 + upper / 2.0
    }
    let n = values.len();
    let (mut min, mut max) = (values[0], values[0]);
    for &v in values.iter() {
        if v.total_cmp(&min).is_lt() {
            min = v;
        }
        if v.total_cmp(&max).is_gt() {
            max = v;
        }
    }
    let median = median_selected(values);
    for v in values.iter_mut() {
        *v = (*v - median).abs();
    }
    crate::stats::Summary {
        n,
        median,
        mad: median_selected(values),
        min,
        max,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counting_confirms_exactly_the_summaries_of_the_statistics_module() {
        let mut rng = crate::stats::SplitMix64::new(11);
        let mut confirmed = 0;
        for round in 0..3000 {
            let n = 1 + rng.below(12);
            // Few distinct values (ties), both signs, and zeros of both
            // signs (as a record holds them).
            let values: Vec<f64> = (0..n)
                .map(|_| match rng.below(8) {
                    0 => -0.0,
                    1 => 0.0,
                    _ => (rng.below(7) as f64 - 3.0) / 4.0,
                })
                .map(|v| crate::num::Finite::new(v).expect("finite").get())
                .collect();
            let want = crate::stats::Summary::of(&values).expect("non-empty");
            let metric = |median: f64, mad: f64, min: f64, max: f64| crate::record::Metric {
                name: "m".into(),
                unit: "s".into(),
                direction: crate::record::Direction::LowerIsBetter,
                samples: values
                    .iter()
                    .map(|v| Some(crate::num::Finite::new(*v).expect("finite")))
                    .collect(),
                summary: Some(crate::record::Summary {
                    n: n as u64,
                    median: crate::num::Finite::new(median).expect("finite"),
                    mad: crate::num::Finite::new(mad).expect("finite"),
                    min: crate::num::Finite::new(min).expect("finite"),
                    max: crate::num::Finite::new(max).expect("finite"),
                    ci: None,
                }),
            };
            let right = metric(want.median, want.mad, want.min, want.max);
            let s = right.summary.as_ref().expect("summary");
            assert!(
                summary_holds(&right, s),
                "round {round}: {values:?} {want:?}"
            );
            confirmed += 1;
            // Any other median, MAD, min or max is never confirmed.
            let others = [0.25, -0.25, 0.5, 0.0, -0.0, 0.125, 1.0, -0.75];
            for o in others {
                for wrong in [
                    metric(o, want.mad, want.min, want.max),
                    metric(want.median, o, want.min, want.max),
                    metric(want.median, want.mad, o, want.max),
                    metric(want.median, want.mad, want.min, o),
                ] {
                    let ws = wrong.summary.as_ref().expect("summary");
                    let same = [
                        (ws.median.get(), want.median),
                        (ws.mad.get(), want.mad),
                        (ws.min.get(), want.min),
                        (ws.max.get(), want.max),
                    ]
                    .iter()
                    .all(|(a, b)| a.to_bits() == b.to_bits());
                    assert_eq!(
                        summary_holds(&wrong, ws),
                        same,
                        "round {round}: {values:?} want {want:?} wrong {ws:?}"
                    );
                }
            }
        }
        assert_eq!(confirmed, 3000);
    }

    #[test]
    fn summary_in_place_equals_the_statistics_module() {
        let mut rng = crate::stats::SplitMix64::new(7);
        for n in [1usize, 2, 3, 4, 10, 11, 100, 101, 1000] {
            let values: Vec<f64> = (0..n)
                .map(|_| (rng.next_u64() % 10_000) as f64 / 7.0)
                .collect();
            let want = crate::stats::Summary::of(&values).expect("non-empty");
            let mut buf = values.clone();
            assert_eq!(summary_in_place(&mut buf), want, "n = {n}");
        }
    }
}
