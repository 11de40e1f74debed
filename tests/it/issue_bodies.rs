//! Snapshots of the drift issue text (issue 5): the title, the body (summary,
//! per-lane status table, evidence table linking the history files, trend
//! chart as a Mermaid `xychart-beta` block), the evidence comments and the
//! closing comment. For a v3 record (`examples/result-v3.draft.json`): the
//! culprit commit linked to GitHub with the bisection table, the range when
//! no culprit was named, and the same-session A/B verdict.
//!
//! Every input is fixed: record digests are `Sha256Digest::of(<name>)` rather
//! than the records' seals, so a change to the record encoding does not churn
//! the snapshots; only a change to the rendering does. Besides the snapshots,
//! each rendered text is checked for the shape a snapshot review could miss:
//! tables with a consistent column count, history links of the right form,
//! and Mermaid numbers in plain decimal notation. A last test renders
//! records whose texts are hostile (markers, mentions, references, pipes,
//! newlines, 100 KB) and checks that none of it acts as markup.

use std::collections::{BTreeMap, BTreeSet};

use benchops::manifest::{BaselinePolicy, Labels, Lane, Manifest};
use benchops::num::Finite;
use benchops::reconcile::{
    DriftKey, DriftStatus, HistoryRecord, IssueState, RenderOptions, Standing, drift_statuses,
    render_closing_comment, render_duplicate_body, render_evidence_comment, render_issue_body,
    render_title, render_trend_chart,
};
use benchops::record::{
    BaselineMetric, Case, CaseCounts, Direction, DriftEvidence, DriftReport, Environment, Executor,
    Metric, Outcome, PublicationPlan, RESULT_SCHEMA, ResultRecord, RunCounts, Subject, Summary,
    Verdict,
};
use benchops::{CaseId, LaneName, Sha256Digest};

const BASE: &str = "https://github.com/example/widgets/blob/benchmark-history";

// ---------------------------------------------------------------------------
// Records
// ---------------------------------------------------------------------------

#[derive(Clone, Copy)]
enum Spec {
    Pass(f64),
    /// Median, baseline median.
    Drift(f64, f64),
}

fn f(v: f64) -> Finite {
    Finite::new(v).expect("finite")
}

fn lane(name: &str) -> LaneName {
    LaneName::new(name).expect("lane name")
}

fn case_id(id: &str) -> CaseId {
    CaseId::new(id).expect("case id")
}

fn wall(v: f64) -> Metric {
    Metric {
        name: "wall_s".into(),
        unit: "s".into(),
        direction: Direction::LowerIsBetter,
        samples: vec![Some(f(v)); 3],
        summary: Some(Summary {
            n: 3,
            median: f(v),
            mad: Finite::ZERO,
            min: f(v),
            max: f(v),
            ci: None,
        }),
    }
}

fn build_case(id: &str, spec: Spec) -> Case {
    let runs = RunCounts {
        total: 3,
        succeeded: 3,
        ..RunCounts::default()
    };
    let (outcome, v, drift) = match spec {
        Spec::Pass(v) => (Outcome::Pass, v, None),
        Spec::Drift(v, base) => (
            Outcome::Drift,
            v,
            Some(DriftEvidence {
                metric: "wall_s".into(),
                baseline: BaselineMetric {
                    record: Sha256Digest::of(b"baseline"),
                    median: f(base),
                },
                initial_samples: vec![f(v); 3],
                confirmation_samples: vec![f(v); 3],
                test: "median-ratio".into(),
                threshold: f(0.1),
                statistic: f(v / base - 1.0),
                verdict: Verdict::Confirmed,
            }),
        ),
    };
    Case {
        id: case_id(id),
        outcome,
        skip_reason: None,
        error: None,
        runs,
        metrics: vec![wall(v)],
        drift,
    }
}

/// A record of `lane_name` at `slot`. `summaries` gives each drifting case's
/// report summary (the drift report is what makes a record evidence).
fn record(
    lane_name: &str,
    slot: &str,
    finished_at: &str,
    cases: &[(&str, Spec)],
    summaries: &[(&str, &str)],
) -> ResultRecord {
    let cases: Vec<Case> = cases.iter().map(|(id, s)| build_case(id, *s)).collect();
    let mut runs = RunCounts::default();
    for c in &cases {
        runs.add(&c.runs);
    }
    let drift_reports = cases
        .iter()
        .filter_map(|c| {
            let d = c.drift.as_ref()?;
            let summary = summaries
                .iter()
                .find(|(id, _)| *id == c.id.as_str())
                .map(|(_, s)| (*s).to_owned())
                .expect("every drifting case has a summary");
            Some(DriftReport {
                case: c.id.clone(),
                metric: d.metric.clone(),
                summary,
            })
        })
        .collect();
    let cleared = cases
        .iter()
        .filter(|c| c.outcome == Outcome::Pass)
        .map(|c| c.id.clone())
        .collect();
    ResultRecord {
        schema: RESULT_SCHEMA.into(),
        lane: lane(lane_name),
        slot: slot.into(),
        subject: Subject {
            repository: "example/widgets".into(),
            commit: "3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d".into(),
        },
        manifest_digest: Sha256Digest::of(b"manifest"),
        benchmark_digest: Sha256Digest::of(b"benchmark"),
        environment: Environment::from_facts(BTreeMap::from([("os".into(), "linux".into())])),
        executor: Executor::Local {
            host: "bench-01".into(),
        },
        started_at: slot.into(),
        finished_at: finished_at.into(),
        runs,
        case_counts: CaseCounts::of(&cases),
        cases,
        baseline: None,
        publication: PublicationPlan {
            drift_reports,
            cleared,
            baseline_proposal: None,
        },
        comparison: None,
        unscheduled: None,
        skipped: None,
    }
}

/// A named record: its digest is `Sha256Digest::of(name)`.
struct Named {
    name: &'static str,
    record: ResultRecord,
}

fn named(name: &'static str, record: ResultRecord) -> Named {
    Named { name, record }
}

fn digest(name: &str) -> Sha256Digest {
    Sha256Digest::of(name.as_bytes())
}

// ---------------------------------------------------------------------------
// Manifests
// ---------------------------------------------------------------------------

fn lane_def(name: &str, cron: &str, cases: &[&str]) -> Lane {
    Lane {
        name: lane(name),
        cron: cron.into(),
        timezone: "Asia/Jerusalem".into(),
        completion_window_minutes: 50,
        cases: cases.iter().map(|c| (*c).to_owned()).collect(),
        baseline: BaselinePolicy::LastClean,
        comparison: None,
        confirm: None,
        bisect: None,
        catch_up: None,
    }
}

fn manifest(sentinel: &[&str], comprehensive: &[&str]) -> Manifest {
    Manifest {
        schema: "schedule-manifest/v1".into(),
        suite: None,
        build: None,
        gc: None,
        repository: Some("example/widgets".into()),
        labels: Labels::default(),
        signing: None,
        lanes: vec![
            lane_def("sentinel", "0 * * * *", sentinel),
            lane_def("comprehensive", "0 1 * * *", comprehensive),
        ],
    }
}

/// The status of `parse/large · wall_s` over `records`.
fn status(manifest: &Manifest, records: &[Named]) -> DriftStatus {
    let history: Vec<HistoryRecord<'_>> = records
        .iter()
        .map(|n| HistoryRecord {
            digest: digest(n.name),
            record: &n.record,
        })
        .collect();
    drift_statuses(manifest, &history)
        .into_iter()
        .find(|s| s.key.case.as_str() == "parse/large" && s.key.metric == "wall_s")
        .expect("parse/large drifted on wall_s")
}

fn options() -> RenderOptions {
    RenderOptions::new(BASE)
}

// ---------------------------------------------------------------------------
// Scenario 1: a sentinel that covers the case drifted with comprehensive
// (three evidence records over two lanes), then cleared; comprehensive still
// holds the issue open.
// ---------------------------------------------------------------------------

fn covering_sentinel_reproducing() -> DriftStatus {
    let m = manifest(&["parse/small", "parse/large"], &["*"]);
    let records = [
        named(
            "covering/C1",
            record(
                "comprehensive",
                "2026-11-01T01:00:00Z",
                "2026-11-01T02:41:07Z",
                &[
                    ("parse/small", Spec::Pass(0.5)),
                    ("parse/large", Spec::Drift(1.3, 1.0)),
                ],
                &[("parse/large", "wall_s median 1.3 s vs baseline 1 s (+30%)")],
            ),
        ),
        named(
            "covering/S1",
            record(
                "sentinel",
                "2026-11-01T05:00:00Z",
                "2026-11-01T05:12:40Z",
                &[
                    ("parse/small", Spec::Pass(0.5)),
                    ("parse/large", Spec::Drift(1.28, 1.02)),
                ],
                &[(
                    "parse/large",
                    "wall_s median 1.28 s vs baseline 1.02 s (+25.5%) | confirmed twice",
                )],
            ),
        ),
        named(
            "covering/C2",
            record(
                "comprehensive",
                "2026-11-02T01:00:00Z",
                "2026-11-02T02:39:55Z",
                &[
                    ("parse/small", Spec::Pass(0.5)),
                    ("parse/large", Spec::Drift(1.35, 1.0)),
                ],
                &[("parse/large", "wall_s median 1.35 s vs baseline 1 s (+35%)")],
            ),
        ),
        named(
            "covering/S2",
            record(
                "sentinel",
                "2026-11-02T05:00:00Z",
                "2026-11-02T05:11:02Z",
                &[
                    ("parse/small", Spec::Pass(0.5)),
                    ("parse/large", Spec::Pass(1.01)),
                ],
                &[],
            ),
        ),
    ];
    let s = status(&m, &records);
    assert_eq!(s.evidence.len(), 3);
    assert_eq!(s.epoch, digest("covering/C2"));
    assert_eq!(
        s.standing,
        Standing::Reproducing {
            holding: vec![lane("comprehensive")]
        }
    );
    s
}

// ---------------------------------------------------------------------------
// Scenario 2: comprehensive-only drift of a sub-microsecond case (three
// evidence records), a sentinel that does not cover the case (its run of
// the case does not count), then a clearing comprehensive run: closed.
// ---------------------------------------------------------------------------

fn subset_sentinel_cleared() -> DriftStatus {
    let m = manifest(&["parse/small"], &["*"]);
    let records = [
        named(
            "subset/C1",
            record(
                "comprehensive",
                "2026-11-29T01:00:00Z",
                "2026-11-29T02:40:00Z",
                &[("parse/large", Spec::Drift(4.2e-7, 3.5e-7))],
                &[(
                    "parse/large",
                    "wall_s median 420 ns vs baseline 350 ns (+20%)",
                )],
            ),
        ),
        named(
            "subset/C2",
            record(
                "comprehensive",
                "2026-11-30T01:00:00Z",
                "2026-11-30T02:40:00Z",
                &[("parse/large", Spec::Drift(4.5e-7, 3.5e-7))],
                &[(
                    "parse/large",
                    "wall_s median 450 ns vs baseline 350 ns (+28.6%)",
                )],
            ),
        ),
        named(
            "subset/C3",
            record(
                "comprehensive",
                "2026-12-01T01:00:00.5Z",
                "2026-12-01T02:40:00Z",
                &[("parse/large", Spec::Drift(4.4e-7, 3.5e-7))],
                &[(
                    "parse/large",
                    "wall_s median 440 ns vs baseline 350 ns (+25.7%)",
                )],
            ),
        ),
        // The sentinel does not cover parse/large: its pass cannot clear it.
        named(
            "subset/S1",
            record(
                "sentinel",
                "2026-12-01T05:00:00Z",
                "2026-12-01T05:10:00Z",
                &[
                    ("parse/small", Spec::Pass(2.5e-7)),
                    ("parse/large", Spec::Pass(3.5e-7)),
                ],
                &[],
            ),
        ),
        named(
            "subset/C4",
            record(
                "comprehensive",
                "2026-12-02T01:00:00Z",
                "2026-12-02T02:40:00Z",
                &[("parse/large", Spec::Pass(3.6e-7))],
                &[],
            ),
        ),
    ];
    let s = status(&m, &records);
    assert_eq!(s.evidence.len(), 3);
    assert_eq!(s.epoch, digest("subset/C3"));
    let Standing::Cleared { clearing } = &s.standing else {
        panic!("cleared by C4: {:?}", s.standing);
    };
    assert_eq!(
        clearing.iter().map(|r| r.digest).collect::<Vec<_>>(),
        [digest("subset/C4")]
    );
    s
}

// ---------------------------------------------------------------------------
// Shape checks
// ---------------------------------------------------------------------------

/// Every Markdown table row has as many cells as its header. As GitHub's
/// table parser reads a row, every `|` separates cells (inside a code span
/// too) unless a backslash precedes it.
fn check_tables(text: &str) {
    let mut width: Option<usize> = None;
    for line in text.lines() {
        if !line.starts_with('|') {
            width = None;
            continue;
        }
        let mut cells = 0;
        let mut prev = ' ';
        for ch in line.chars() {
            if ch == '|' && prev != '\\' {
                cells += 1;
            }
            prev = ch;
        }
        let cells = cells - 1;
        match width {
            None => width = Some(cells),
            Some(w) => assert_eq!(
                cells, w,
                "table row with {cells} cells, header has {w}: {line}"
            ),
        }
    }
}

/// Every link points at a history file under the base URL:
/// `results/<lane>/<yyyy>/<mm>/<YYYYMMDDTHHMMSSZ>--<hex>.json`, or at a
/// commit of the subject repository on GitHub.
fn check_links(text: &str) {
    let mut n = 0;
    for (i, _) in text.match_indices("](") {
        if text[..i].ends_with('\\') {
            continue; // an escaped `]`: not a link
        }
        let rest = &text[i + 2..];
        let url = &rest[..rest.find(')').expect("link closes")];
        if let Some(commit) = url.strip_prefix("https://github.com/example/widgets/commit/") {
            assert!(
                matches!(commit.len(), 40 | 64)
                    && commit
                        .bytes()
                        .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')),
                "{url}"
            );
            n += 1;
            continue;
        }
        let path = url
            .strip_prefix(BASE)
            .and_then(|p| p.strip_prefix("/results/"))
            .unwrap_or_else(|| panic!("link outside the history: {url}"));
        let parts: Vec<&str> = path.split('/').collect();
        assert_eq!(parts.len(), 4, "{url}");
        let [lane_name, yyyy, mm, file] = parts[..] else {
            unreachable!()
        };
        assert!(LaneName::new(lane_name).is_ok(), "{url}");
        assert!(
            yyyy.len() == 4 && yyyy.bytes().all(|b| b.is_ascii_digit()),
            "{url}"
        );
        assert!(
            mm.len() == 2 && mm.bytes().all(|b| b.is_ascii_digit()),
            "{url}"
        );
        let (stamp, hex) = file
            .strip_suffix(".json")
            .and_then(|f| f.split_once("--"))
            .unwrap_or_else(|| panic!("{url}"));
        let b = stamp.as_bytes();
        assert!(
            b.len() == 16
                && b[8] == b'T'
                && b[15] == b'Z'
                && b[..8].iter().chain(&b[9..15]).all(u8::is_ascii_digit)
                && stamp.starts_with(&format!("{yyyy}{mm}")),
            "{url}"
        );
        assert!(
            hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit()),
            "{url}"
        );
        n += 1;
    }
    assert!(n > 0, "no links in:\n{text}");
}

/// The Mermaid block's data lines hold plain decimals only (the grammar has
/// no exponent notation), as many per line as there are x-axis labels.
fn check_mermaid(chart: &str) {
    let block = chart
        .split_once("```mermaid\nxychart-beta\n")
        .and_then(|(_, rest)| rest.split_once("```"))
        .map(|(b, _)| b)
        .expect("a mermaid xychart-beta block");
    let mut labels = None;
    let mut lines = 0;
    for l in block.lines() {
        let l = l.trim();
        if let Some(x) = l.strip_prefix("x-axis [") {
            let x = x.strip_suffix(']').expect("x-axis band closes");
            let n = x.split(", ").count();
            assert!(
                x.split(", ")
                    .all(|s| s.len() >= 2 && s.starts_with('"') && s.ends_with('"')),
                "unquoted x-axis label: {l}"
            );
            labels = Some(n);
        } else if let Some(v) = l.strip_prefix("line [") {
            let v = v.strip_suffix(']').expect("line closes");
            let nums: Vec<&str> = v.split(", ").collect();
            for n in &nums {
                let (int, frac) = n.split_once('.').unwrap_or((n, "0"));
                let int = int.strip_prefix('-').unwrap_or(int);
                assert!(
                    !int.is_empty()
                        && !frac.is_empty()
                        && int.bytes().chain(frac.bytes()).all(|b| b.is_ascii_digit()),
                    "not a plain decimal for Mermaid: {n:?} in {l}"
                );
            }
            assert_eq!(Some(nums.len()), labels, "points vs labels: {l}");
            lines += 1;
        }
    }
    assert!(lines > 0, "no line series in:\n{block}");
}

// ---------------------------------------------------------------------------
// Snapshots
// ---------------------------------------------------------------------------

#[test]
fn open_issue_with_a_covering_sentinel() {
    let s = covering_sentinel_reproducing();
    let carried: BTreeSet<Sha256Digest> = s.evidence.iter().map(|e| e.record.digest).collect();
    let body = render_issue_body(
        &s,
        IssueState::Open,
        &carried,
        &Labels::default(),
        &options(),
    );
    check_tables(&body);
    check_links(&body);
    check_mermaid(&body);
    insta::assert_snapshot!("covering_sentinel_title", render_title(&s.key));
    insta::assert_snapshot!("covering_sentinel_body", body);
}

#[test]
fn trend_chart_with_a_covering_sentinel() {
    let chart = render_trend_chart(&covering_sentinel_reproducing());
    check_mermaid(&chart);
    insta::assert_snapshot!("covering_sentinel_trend_chart", chart);
}

#[test]
fn evidence_comments() {
    let s = covering_sentinel_reproducing();
    let labels = Labels::default();
    let o = options();
    let sentinel = &s.evidence[1];
    assert_eq!(sentinel.record.digest, digest("covering/S1"));
    let open = render_evidence_comment(&s, sentinel, false, &labels, &o);
    check_links(&open);
    insta::assert_snapshot!("evidence_comment", open);

    let latest = s.evidence.last().expect("evidence");
    let human = render_evidence_comment(&s, latest, true, &labels, &o);
    check_links(&human);
    insta::assert_snapshot!("evidence_comment_closed_by_human", human);
}

#[test]
fn closed_issue_with_a_subset_sentinel() {
    let s = subset_sentinel_cleared();
    // The body carries the evidence the opening announced (the first two).
    let carried: BTreeSet<Sha256Digest> = [digest("subset/C1"), digest("subset/C2")].into();
    let body = render_issue_body(
        &s,
        IssueState::Closed,
        &carried,
        &Labels::default(),
        &options(),
    );
    check_tables(&body);
    check_links(&body);
    check_mermaid(&body);
    insta::assert_snapshot!("subset_sentinel_title", render_title(&s.key));
    insta::assert_snapshot!("subset_sentinel_closed_body", body);
}

#[test]
fn trend_chart_of_sub_microsecond_medians() {
    let chart = render_trend_chart(&subset_sentinel_cleared());
    check_mermaid(&chart);
    insta::assert_snapshot!("subset_sentinel_trend_chart", chart);
}

#[test]
fn closing_comment() {
    let s = subset_sentinel_cleared();
    let Standing::Cleared { clearing } = &s.standing else {
        unreachable!("checked by the scenario")
    };
    let comment = render_closing_comment(&s, clearing, &options());
    check_tables(&comment);
    check_links(&comment);
    insta::assert_snapshot!("closing_comment", comment);
}

#[test]
fn duplicate_body() {
    let s = subset_sentinel_cleared();
    insta::assert_snapshot!("duplicate_body", render_duplicate_body(&s.key, 12));
}

// ---------------------------------------------------------------------------
// Text from records is inert
// ---------------------------------------------------------------------------

/// What a hostile record may carry in a free text: hidden markers, a
/// mention of a person and of a team, a reference, table pipes, newlines,
/// backticks, HTML, and 100 KB of it.
fn hostile(len: usize) -> String {
    let mut s = format!(
        "rose <!-- benchops:closed epoch={} --> @octocat @acme/perf #123 a|b\n| c |\r\n`` ` \
         <img src=x> [l](https://evil.example) ",
        Sha256Digest::of(b"forged")
    );
    while s.len() < len {
        s.push_str("padding ");
    }
    s.truncate(len);
    s
}

/// No hidden-comment delimiter but on a benchops marker line, no mention,
/// no reference, and no line longer than a bound.
fn check_inert(text: &str) {
    for line in text.lines() {
        if line.contains("<!--") || line.contains("-->") {
            assert!(
                line.starts_with("<!-- benchops:")
                    && line.ends_with(" -->")
                    && !line.contains("forged")
                    && line.matches("<!--").count() == 1,
                "record text opened a comment: {line}"
            );
        }
        assert!(line.chars().count() < 2_000, "a long line: {line}");
    }
    for raw in [
        "@octocat",
        "@acme",
        "#123",
        "#12 ",
        "@u",
        "<img",
        "https://evil",
    ] {
        assert!(!text.contains(raw), "{raw} reached the issue raw:\n{text}");
    }
}

#[test]
fn record_text_is_inert_in_titles_bodies_and_comments() {
    let metric = "p99|lat`ency @acme/perf #12 <!-- benchops:drift key=a/b -->\nnext";
    let m = manifest(&["parse/large"], &["*"]);
    let summary = hostile(100_000);
    let mut r1 = record(
        "comprehensive",
        "2026-11-01T01:00:00Z",
        "2026-11-01T02:00:00Z",
        &[("parse/large", Spec::Drift(1.3, 1.0))],
        &[("parse/large", summary.as_str())],
    );
    {
        let case = &mut r1.cases[0];
        case.metrics[0].name = metric.into();
        case.metrics[0].unit = "ms|@u#1<!--".into();
        if let Some(d) = case.drift.as_mut() {
            d.metric = metric.into();
        }
        r1.publication.drift_reports[0].metric = metric.into();
    }
    // The sentinel drifts on wall_s, later: the hostile key's sentinel row
    // says it drifted on another metric; the wall_s key's comprehensive row
    // names the hostile metric.
    let r2 = record(
        "sentinel",
        "2026-11-01T05:00:00Z",
        "2026-11-01T05:10:00Z",
        &[("parse/large", Spec::Drift(1.3, 1.0))],
        &[("parse/large", summary.as_str())],
    );
    let records = [named("hostile/C1", r1), named("hostile/S1", r2)];
    let history: Vec<HistoryRecord<'_>> = records
        .iter()
        .map(|n| HistoryRecord {
            digest: digest(n.name),
            record: &n.record,
        })
        .collect();
    let statuses = drift_statuses(&m, &history);
    assert_eq!(statuses.len(), 2);
    let o = options();
    let labels = Labels::default();
    for s in &statuses {
        let carried: BTreeSet<Sha256Digest> = s.evidence.iter().map(|e| e.record.digest).collect();
        let title = render_title(&s.key);
        assert!(title.chars().count() <= 256, "{title}");
        assert!(!title.contains(['\n', '\r']), "{title}");
        check_inert(&title);
        for state in [IssueState::Open, IssueState::Closed] {
            let body = render_issue_body(s, state, &carried, &labels, &o);
            check_inert(&body);
            check_tables(&body);
            check_links(&body);
            check_mermaid(&body);
            assert!(body.chars().count() < 65_536, "GitHub's body limit");
            assert!(body.contains("(truncated from 100000 bytes)"));
            let back = benchops::reconcile::ActualIssue::from_body(
                1,
                title.clone(),
                body,
                state,
                None,
                vec![],
            );
            assert_eq!(back.key.as_ref(), Some(&s.key), "the key reads back");
            assert_eq!(back.body_evidence, carried, "only the real markers count");
        }
        for e in &s.evidence {
            for human in [false, true] {
                let c = render_evidence_comment(s, e, human, &labels, &o);
                check_inert(&c);
                assert!(c.chars().count() < 5_000);
            }
        }
        let refs: Vec<_> = s.evidence.iter().map(|e| e.record.clone()).collect();
        let closing = render_closing_comment(s, &refs, &o);
        check_inert(&closing);
        check_tables(&closing);
        let dup = render_duplicate_body(&s.key, 7);
        check_inert(&dup);
    }
    let hostile_key = DriftKey::new(case_id("parse/large"), metric);
    let s = statuses
        .iter()
        .find(|s| s.key == hostile_key)
        .expect("the hostile key");
    let body = render_issue_body(s, IssueState::Open, &BTreeSet::new(), &labels, &o);
    // The metric shows as one code span, its pipe escaped for the table
    // parser where it sits in a table, its newline a space.
    assert!(
        body.contains("## Benchmark drift: `parse/large` · ``p99|lat`ency @\u{200B}acme/perf #\u{200B}12 <\u{200B}!-- benchops:drift key=a/b --\u{200B}> next``"),
        "{body}"
    );
    let other = statuses
        .iter()
        .find(|s| s.key.metric == "wall_s")
        .expect("the wall_s key");
    let body = render_issue_body(other, IssueState::Open, &BTreeSet::new(), &labels, &o);
    assert!(
        body.contains("| drift on ``p99\\|lat`ency @\u{200B}acme/perf"),
        "{body}"
    );
}

// ---------------------------------------------------------------------------
// Scenario 3: a v3 record decided in the same session, whose bisection named
// the culprit (the v3 example), and variants of it.
// ---------------------------------------------------------------------------

fn v3_record() -> ResultRecord {
    benchops::seal::seal_json(include_bytes!("../../examples/result-v3.draft.json"))
        .expect("the v3 example seals")
        .record()
        .clone()
}

fn v3_manifest() -> Manifest {
    manifest(&["widgets/size=small"], &["*"])
}

/// The status of `widgets/size=large · wall_s` over `records`.
fn v3_status(records: &[Named]) -> DriftStatus {
    let history: Vec<HistoryRecord<'_>> = records
        .iter()
        .map(|n| HistoryRecord {
            digest: digest(n.name),
            record: &n.record,
        })
        .collect();
    drift_statuses(&v3_manifest(), &history)
        .into_iter()
        .find(|s| s.key.case.as_str() == "widgets/size=large" && s.key.metric == "wall_s")
        .expect("widgets/size=large drifted on wall_s")
}

fn bisection_of(r: &mut ResultRecord) -> &mut benchops::record::BisectionRecord {
    r.comparison
        .as_mut()
        .and_then(|c| c.bisection.as_mut())
        .expect("a bisection")
}

#[test]
fn v3_body_names_the_culprit_and_the_same_session_verdict() {
    let r = v3_record();
    let culprit = r
        .comparison
        .as_ref()
        .and_then(|c| c.bisection.as_ref())
        .and_then(|b| b.culprit.clone())
        .expect("the example names a culprit");
    let s = v3_status(&[named("v3/C1", r)]);
    let carried: BTreeSet<Sha256Digest> = s.evidence.iter().map(|e| e.record.digest).collect();
    let body = render_issue_body(
        &s,
        IssueState::Open,
        &carried,
        &Labels::default(),
        &options(),
    );
    check_tables(&body);
    check_links(&body);
    check_mermaid(&body);
    assert!(
        body.contains(&format!(
            "**Culprit: [`{}`](https://github.com/example/widgets/commit/{culprit}) (`{culprit}`).**",
            &culprit[..12]
        )),
        "{body}"
    );
    assert!(body.contains("| A (baseline) |") && body.contains("| B (candidate) |"));
    insta::assert_snapshot!("v3_culprit_body", body);
    let comment = render_evidence_comment(
        &s,
        s.evidence.last().expect("evidence"),
        false,
        &Labels::default(),
        &options(),
    );
    check_links(&comment);
    assert!(comment.contains(&culprit), "{comment}");
    insta::assert_snapshot!("v3_culprit_evidence_comment", comment);
}

#[test]
fn v3_body_names_the_range_when_no_culprit_was_named() {
    let mut r = v3_record();
    let b = bisection_of(&mut r);
    b.culprit = None;
    b.good = b.commits[0].clone();
    b.bad = b.commits[5].clone();
    b.reason = Some(
        "step at commit 2 did not decide: the midpoint against the good bound was inconclusive"
            .into(),
    );
    b.steps.truncate(1);
    b.steps[0].finding = benchops::record::StepFindingKind::Undecided;
    b.steps[0].reason =
        "the midpoint against the good bound was inconclusive, the bad bound against the \
         midpoint a confirmed regression"
            .into();
    let s = v3_status(&[named("v3/range", r)]);
    let body = render_issue_body(
        &s,
        IssueState::Open,
        &BTreeSet::new(),
        &Labels::default(),
        &options(),
    );
    check_tables(&body);
    check_links(&body);
    assert!(!body.contains("**Culprit"), "{body}");
    insta::assert_snapshot!("v3_range_body", body);
}

#[test]
fn a_v2_or_stored_baseline_record_shows_neither_section() {
    let mut r = v3_record();
    let c = r.comparison.as_mut().expect("comparison");
    c.bisection = None;
    c.keys[1].same_session = None;
    let s = v3_status(&[named("v3/plain", r)]);
    let body = render_issue_body(
        &s,
        IssueState::Open,
        &BTreeSet::new(),
        &Labels::default(),
        &options(),
    );
    assert!(
        !body.contains("### Culprit") && !body.contains("### Same-session"),
        "{body}"
    );
}

#[test]
fn the_bisection_table_is_bounded_and_its_text_inert() {
    let mut r = v3_record();
    // A repository no link may be made of, and 40 steps of hostile text.
    r.subject.repository = "../..".into();
    let b = bisection_of(&mut r);
    let step = b.steps[0].clone();
    b.steps = (0..40)
        .map(|i| {
            let mut s = step.clone();
            s.reason = format!("{i} {}", hostile(100_000));
            s
        })
        .collect();
    b.budget_steps = 64;
    b.budget_seconds = 5_430;
    let s = v3_status(&[named("v3/hostile", r)]);
    let body = render_issue_body(
        &s,
        IssueState::Open,
        &BTreeSet::new(),
        &Labels::default(),
        &options(),
    );
    check_inert(&body);
    check_tables(&body);
    assert!(body.chars().count() < 65_536, "GitHub's body limit");
    assert!(!body.contains("github.com/../"), "{body}");
    assert!(
        body.contains("The 16 latest of 40 steps; 24 earlier not shown."),
        "{body}"
    );
    let rows = body
        .lines()
        .filter(|l| l.starts_with("| ") && l.contains("(truncated from 100003 bytes)"))
        .count();
    assert_eq!(rows, 16, "{body}");
    assert!(body.contains("| 25 | `9c0abe51c6e6` | good |"), "{body}");
    assert!(
        body.contains("Budget: 64 step(s) and 5430 s; 40 step(s) taken."),
        "{body}"
    );
}
