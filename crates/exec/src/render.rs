//! What `benchops-exec` prints: the status table, the analysis in its three
//! formats, the planned children as JSON lines, the one-line notes of
//! `plan`, `list` and `seal`, an invalid draft's problems, the lane's and
//! `compare`'s tables. Pure functions of library values (the progress bars
//! are in [`crate::progress`]). Verdict words are painted
//! ([`benchops_cli::output`]); the writer drops the colour where it is off,
//! and JSON is never painted.

use std::fmt::Write as _;
use std::io;
use std::path::Path;

use benchops::analysis::Analysis;
use benchops::classify::RunClass;
use benchops::fsio::Created;
use benchops::plan::Plan;
use benchops::seal::VerifyError;

use benchops_cli::output::{BAD, GOOD, PLAIN, UNSURE, paint};

use crate::bench::{Planned, Status};
use crate::seal::SealOutcome;

/// An output format of an analysis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A table for humans.
    Table,
    /// Canonical JSON, byte-identical across runs.
    Json,
    /// Markdown.
    Markdown,
}

/// The analysis in `format`, ready to print.
pub fn analysis(a: &Analysis, format: Format) -> Vec<u8> {
    match format {
        Format::Table => a.render_table().into_bytes(),
        Format::Markdown => a.render_markdown().into_bytes(),
        Format::Json => {
            let mut out = a.to_canonical();
            out.push(b'\n');
            out
        }
    }
}

/// The status table: counts of every class, whether the benchmark is
/// terminal, and one line per child that did not succeed, with its reason.
pub fn status(s: &Status) -> String {
    let mut o = String::new();
    let c = &s.counts;
    let _ = writeln!(
        o,
        "benchmark {}{}",
        s.benchmark,
        if s.cancelled { " (cancelled)" } else { "" }
    );
    let _ = writeln!(
        o,
        "children {}: succeeded {}, failed {}, incomplete {}, missing {}, stale {}, scheduler-inconsistent {}",
        c.total, c.succeeded, c.failed, c.incomplete, c.missing, c.stale, c.scheduler_inconsistent
    );
    let _ = writeln!(
        o,
        "{}",
        if s.terminal {
            "all children are terminal"
        } else {
            "some children are still pending or running"
        }
    );
    if let Some(snap) = s.scheduler.as_ref().filter(|snap| !snap.complete) {
        let _ = writeln!(
            o,
            "the scheduler gave an incomplete answer; children that depend on it stay incomplete: {}",
            snap.errors.join("; ")
        );
    }
    for ch in s
        .children
        .iter()
        .filter(|c| c.classified.class != RunClass::Succeeded)
    {
        let _ = writeln!(
            o,
            "  #{:<5} {:<24} {:<40} {}",
            ch.index,
            ch.classified.class.as_str(),
            escape_line(&ch.case),
            escape_line(&ch.classified.reason)
        );
    }
    o
}

/// Every child with its evidence, as pretty JSON (`status --json`,
/// `refresh`).
pub fn status_json(s: &Status) -> Result<String, serde_json::Error> {
    serde_json::to_string_pretty(s)
}

/// Writes every child configuration of `plan` as one canonical JSON line,
/// in expansion order (`plan --children`).
pub fn write_children(plan: &Plan, out: &mut impl io::Write) -> io::Result<()> {
    for i in 0..plan.len() {
        if let Some(b) = plan.child_bytes(i) {
            out.write_all(&b)?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

/// The JSON of `plan --json` (and of the Python package's `plan()`): the
/// benchmark digest and every child digest in expansion order, on one line.
/// `intent_source` is what the benchmark record calls the intent.
pub fn plan_json(plan: &Plan, digest: &benchops::Sha256Digest, intent_source: &str) -> String {
    let children: Vec<String> = plan
        .child_digests()
        .iter()
        .map(ToString::to_string)
        .collect();
    serde_json::json!({
        "benchmark": digest.to_string(),
        "intent_digest": plan.intent().digest.to_string(),
        "intent_source": intent_source,
        "child_count": plan.len(),
        "case_count": plan.point_count(),
        "runs_per_point": plan.runs_per_point(),
        "cases": plan.cases().map(ToString::to_string).collect::<Vec<_>>(),
        "children": children,
    })
    .to_string()
}

/// The note of `plan`: how many children over how many cases.
pub fn planned(p: &Planned) -> String {
    format!(
        "planned {} children over {} case(s)",
        p.plan.len(),
        p.plan.point_count()
    )
}

/// One line of `list`: the digest, then the intent file and child count,
/// or why the record could not be read.
pub fn listed(rows: &[crate::bench::ListRow]) -> String {
    let mut o = format!(
        "{:<12}  {:<20}  {:<10}  {:>8}  {:>8}  {:>8}  INTENT\n",
        "BENCHMARK", "CREATED", "STATE", "CHILDREN", "RESULTS", "ATTEMPTS"
    );
    for r in rows {
        let hex = r.digest.trim_start_matches("sha256:");
        let created = r.created_at.as_deref().map_or("-".to_owned(), |c| {
            c.chars().take(19).collect::<String>() + "Z"
        });
        o.push_str(&format!(
            "{:<12}  {:<20}  {:<10}  {:>8}  {:>8}  {:>8}  {}\n",
            &hex[..12.min(hex.len())],
            created,
            escape_line(&r.state),
            r.children.map_or("-".to_owned(), |c| c.to_string()),
            r.with_result,
            r.attempts,
            escape_line(r.intent.as_deref().unwrap_or("-"))
        ));
    }
    o
}

/// The line of `seal` and `bench seal`: whether the file is new, its
/// digest and where it is.
pub fn sealed(o: &SealOutcome) -> String {
    let note = match o.created {
        Created::New => "sealed",
        Created::AlreadyPresent => "already sealed",
    };
    match &o.signature {
        Some(sig) => format!(
            "{note} {} -> {} (signed: {})",
            o.digest,
            o.path.display(),
            sig.display()
        ),
        None => format!("{note} {} -> {}", o.digest, o.path.display()),
    }
}

/// Why a draft cannot be sealed: a heading, then one problem per line.
pub fn invalid_draft(path: &Path, e: &VerifyError) -> String {
    let mut o = format!(
        "error: draft {} is not a valid benchmark-result/v1 record:\n",
        path.display()
    );
    for issue in &e.issues {
        let _ = writeln!(o, "  - {issue}");
    }
    o
}

/// `lane due`: one line per lane: its latest slot, where it stands, and
/// the earlier slots of the lookback that were missed and not caught up.
pub fn lane_due(due: &[crate::due::LaneDue]) -> String {
    use crate::due::DueState;
    let width = due.iter().map(|d| d.lane.len()).max().unwrap_or(4).max(4);
    let mut o = format!("{:<width$}  {:<20}  STATE\n", "LANE", "SLOT");
    for d in due {
        let detail = match &d.state {
            DueState::Due => format!("due (window closes {})", d.window_closes),
            DueState::Started { id } => format!("started {}", &id[..12.min(id.len())]),
            DueState::Running { id, phase } => {
                format!("running {} ({phase})", &id[..12.min(id.len())])
            }
            DueState::Sealed { id } => format!("sealed {}", &id[..12.min(id.len())]),
            DueState::WindowPassed { closed_at } => {
                format!("window passed at {closed_at}: missed")
            }
            DueState::SkippedLate { late_minutes } => {
                format!("skipped: {late_minutes} min late, catch_up = none")
            }
            DueState::Failed { error } => format!("failed: {error}"),
        };
        let _ = write!(o, "{:<width$}  {:<20}  {detail}", d.lane, d.slot);
        if d.missed_before > 0 {
            let _ = write!(
                o,
                "; {} earlier slot(s) of the last 72 h missed, not caught up",
                d.missed_before
            );
        }
        o.push('\n');
    }
    o
}

/// `lane status`: the execution, its stage and its record.
pub fn lane_status(s: &crate::lane::LaneStatus) -> String {
    let e = &s.execution;
    let mut o = format!(
        "lane execution {}\n  lane {}  slot {}  subject {}@{}\n  phase {}\n",
        e.id, e.lane, e.slot, e.repository, e.commit, e.phase
    );
    match &e.baseline {
        Some(b) => o.push_str(&format!("  baseline {} (slot {})\n", b.record, b.slot)),
        None => o.push_str(&format!(
            "  baseline none: {}\n",
            e.no_baseline_reason.as_deref().unwrap_or("")
        )),
    }
    if !e.drifting.is_empty() {
        o.push_str(&format!(
            "  drifting in history: {}\n",
            e.drifting
                .iter()
                .map(|k| format!("{} {}", k.case, k.metric))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for b in &s.stage {
        match &b.counts {
            Some(c) => o.push_str(&format!(
                "  {} {}: {}/{} terminal, {} succeeded, {} failed{}\n",
                e.phase,
                b.benchmark,
                c.total - c.incomplete,
                c.total,
                c.succeeded,
                c.failed,
                if b.terminal { "" } else { " (running)" }
            )),
            None => o.push_str(&format!(
                "  {} {}: not submitted yet\n",
                e.phase, b.benchmark
            )),
        }
    }
    if !e.follow_ups.is_empty() {
        o.push_str(&format!(
            "  slurm follow-up jobs: {}\n",
            e.follow_ups.join(", ")
        ));
    }
    if let Some(r) = &e.sealed {
        let moved = !r.path.exists();
        o.push_str(&format!(
            "  sealed {} at {}{}\n",
            r.digest,
            r.path.display(),
            if moved {
                " (no longer there: a sweep moves the handoffs it persisted to .persisted/)"
            } else {
                ""
            }
        ));
        if let Some(rec) = crate::lane::read_sealed(r) {
            o.push_str(&lane_verdicts(&rec));
        }
    }
    o
}

/// The verdicts of a sealed lane record, one line per compared key that is
/// not simply within the band, then the publication plan.
pub fn lane_verdicts(r: &benchops::seal::SealedRecord) -> String {
    use benchops::record::KeyVerdict;
    let rec = r.record();
    let mut o = String::new();
    if let Some(c) = &rec.comparison {
        if let Some(why) = &c.no_baseline_reason {
            o.push_str(&format!("no comparison: {why}\n"));
        }
        let within = c
            .keys
            .iter()
            .filter(|k| k.verdict == KeyVerdict::WithinBand && k.confirmation.is_none())
            .count();
        for k in &c.keys {
            if k.verdict == KeyVerdict::WithinBand && k.confirmation.is_none() {
                continue;
            }
            let v = serde_json::to_value(k.verdict)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let style = match k.verdict {
                KeyVerdict::ConfirmedRegression => BAD,
                KeyVerdict::ConfirmedImprovement => GOOD,
                KeyVerdict::Inconclusive | KeyVerdict::NotConfirmed => UNSURE,
                KeyVerdict::WithinBand => PLAIN,
            };
            o.push_str(&format!(
                "{}{} {} {}: {}\n",
                paint(style, &v),
                " ".repeat(22usize.saturating_sub(v.chars().count())),
                escape_line(k.case.as_str()),
                escape_line(&k.metric),
                k.reason
            ));
        }
        o.push_str(&format!(
            "{} key(s) compared, {within} within the band on the first look\n",
            c.keys.len()
        ));
        if let Some(m) = &c.confirm {
            o.push_str(&format!("confirmation: {}", m.mode.as_str()));
            if let Some(why) = &m.fallback_reason {
                o.push_str(&format!(
                    " (asked for {}: {})",
                    m.requested.as_str(),
                    escape_line(why)
                ));
            }
            o.push('\n');
        }
        if let Some(b) = &c.bisection {
            o.push_str(&bisection(b));
        }
    }
    let p = &rec.publication;
    o.push_str(&format!(
        "sealed {}: {} drift report(s), {} cleared case(s), baseline proposal: {}\n",
        r.digest(),
        p.drift_reports.len(),
        p.cleared.len(),
        if p.baseline_proposal.is_some() {
            "yes"
        } else {
            "no"
        }
    ));
    o
}

/// A bisection: what it named, then one line per step.
pub fn bisection(b: &benchops::record::BisectionRecord) -> String {
    use benchops::record::StepFindingKind;
    let short = |c: &str| escape_line(&c.chars().take(12).collect::<String>());
    let mut o = match &b.culprit {
        Some(c) => format!(
            "culprit commit {} of {} {}, bisected over {} commit(s) in {} step(s)\n",
            escape_line(c),
            escape_line(b.case.as_str()),
            escape_line(&b.metric),
            b.commits.len().saturating_sub(1),
            b.steps.len()
        ),
        None => format!(
            "culprit not named: one of the commits after {} up to {} ({})\n",
            short(&b.good),
            short(&b.bad),
            escape_line(b.reason.as_deref().unwrap_or("the bisection stopped"))
        ),
    };
    for (n, s) in b.steps.iter().enumerate() {
        let finding = match s.finding {
            StepFindingKind::Good => "good",
            StepFindingKind::Bad => "bad",
            StepFindingKind::Undecided => "undecided",
            StepFindingKind::BuildFailed => "build failed",
        };
        o.push_str(&format!(
            "  step {:>2}  {}  {:<12} {}\n",
            n + 1,
            short(&s.commit),
            finding,
            escape_line(&s.reason)
        ));
    }
    o
}

/// `compare`: one row per case and metric (both medians, B's effect
/// against A with its interval, the band, the verdict, the samples per
/// side and the nodes), the reason of every key that was not compared,
/// then one summary line. Every text from the runs is already escaped in
/// the report.
pub fn compare(r: &crate::ab::Report) -> String {
    use crate::ab::{Outcome, Verdict};
    let pct = |v: f64| format!("{:+.1}%", v * 100.0);
    let header = [
        "CASE".to_owned(),
        "METRIC".to_owned(),
        "A MEDIAN".to_owned(),
        "B MEDIAN".to_owned(),
        format!("B AGAINST A ({:.0}%)", r.level * 100.0),
        "BAND".to_owned(),
        "VERDICT".to_owned(),
        "RUNS A/B".to_owned(),
        "NODES".to_owned(),
    ];
    let mut rows = vec![header];
    for k in &r.keys {
        let median = |m: Option<f64>| benchops::units::quantity(m, &k.unit);
        let nodes = match k.nodes.as_slice() {
            [] => "-".to_owned(),
            [one] => one.clone(),
            many => format!("{} nodes: {}", many.len(), many.join(",")),
        };
        rows.push([
            k.case.clone(),
            k.metric.clone(),
            median(k.a.median),
            median(k.b.median),
            k.effect.as_ref().map_or_else(
                || "-".to_owned(),
                |e| format!("{} [{}, {}]", pct(e.estimate), pct(e.low), pct(e.high)),
            ),
            k.band
                .map_or_else(|| "-".to_owned(), |b| format!("±{:.1}%", b * 100.0)),
            paint(
                match k.verdict {
                    Verdict::Slower => BAD,
                    Verdict::Faster => GOOD,
                    Verdict::Inconclusive | Verdict::NotCompared => UNSURE,
                    Verdict::Same => PLAIN,
                },
                k.verdict.as_str(),
            ),
            format!("{}/{}", k.a.samples, k.b.samples),
            escape_line(&nodes),
        ]);
    }
    let rows: Vec<Vec<String>> = rows.into_iter().map(Vec::from).collect();
    use benchops::units::Align::{Left, Right};
    let mut o = benchops::units::columns(
        &rows,
        &[Left, Left, Right, Right, Left, Left, Left, Left, Left],
    );
    for k in r.keys.iter().filter(|k| k.verdict == Verdict::NotCompared) {
        let _ = writeln!(o, "{} {}: {}", k.case, k.metric, escape_line(&k.reason));
    }
    let short = |c: &str| c.chars().take(12).collect::<String>();
    let sides = format!(
        "B {} ({}) against A {} ({})",
        short(&r.b.commit),
        r.b.rev,
        short(&r.a.commit),
        r.a.rev
    );
    let t = &r.tally;
    let counts = format!(
        "slower {}, faster {}, same {}, inconclusive {}, not compared {}; {} run(s) per side",
        t.slower, t.faster, t.same, t.inconclusive, t.not_compared, r.runs_per_side
    );
    let keys = r.keys.len();
    let _ = writeln!(
        o,
        "{}",
        match r.outcome {
            Outcome::Slower => format!(
                "{} {sides}, on {} of {keys} key(s) ({counts})",
                paint(BAD, "slower:"),
                t.slower
            ),
            Outcome::NotSlower => format!(
                "{} {sides}, on none of {keys} key(s) ({counts})",
                paint(GOOD, "not slower:")
            ),
            Outcome::NotCompared if !r.failed.is_empty() => format!(
                "{} {sides}: runs of {} case(s) did not succeed, see standard error ({counts})",
                paint(UNSURE, "not compared:"),
                r.failed.len()
            ),
            Outcome::NotCompared =>
                format!("{} {sides} ({counts})", paint(UNSURE, "not compared:")),
        }
    );
    o
}

/// The failed runs of `compare`, per case and side, in the words of every
/// run that did not succeed ([`crate::failures::render`]).
pub fn compare_failures(r: &crate::ab::Report) -> Option<String> {
    let cases: Vec<crate::failures::FailedCase> = r
        .failed
        .iter()
        .map(|f| crate::failures::FailedCase {
            case: format!(
                "{} on side {} ({})",
                f.case,
                f.side,
                f.commit.chars().take(12).collect::<String>()
            ),
            failed: f.failed,
            total: f.total,
            first: f.first.clone(),
            stderr: f.stderr.clone(),
        })
        .collect();
    crate::failures::render(&cases)
}

/// One line of record text, at most 200 characters, escaped by the one
/// terminal rule ([`benchops::terminal`]: control, bidirectional and
/// zero-width characters).
pub fn escape_line(s: &str) -> String {
    benchops::terminal::escape_bounded(s, 200)
}

/// One line per handed-off record: `accepted <hex> <ref>`, `already-present
/// <hex> <ref>`, `refused <hex> HTTP <status> <reason>: <detail>`, `invalid
/// <file>: <reason>`, `undelivered <hex> after <n> tries: <error>`.
pub fn handoff(d: &crate::handoff::Delivery) -> String {
    use crate::handoff::Outcome;
    let moved = match (&d.moved_to, &d.move_error) {
        (Some(p), _) => format!(" (moved to {})", p.display()),
        (None, Some(e)) => format!(" (not moved: {e})"),
        (None, None) => String::new(),
    };
    match &d.outcome {
        Outcome::Accepted { ref_name } => format!("accepted {} {ref_name}{moved}", d.digest),
        Outcome::AlreadyPresent { ref_name } => {
            format!("already-present {} {ref_name}{moved}", d.digest)
        }
        Outcome::Refused {
            status,
            reason,
            detail,
        } => format!("refused {} HTTP {status} {reason}: {detail}", d.digest),
        Outcome::Invalid { reason } => format!("invalid {}: {reason}", d.file.display()),
        Outcome::Undelivered { last_error } => format!(
            "undelivered {} after {} tries: {last_error}",
            d.digest, d.attempts
        ),
    }
}
