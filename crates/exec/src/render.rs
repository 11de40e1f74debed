//! What `benchops-exec` prints: the status table, the analysis in its three
//! formats, the planned children as JSON lines, the one-line notes of
//! `plan`, `list` and `seal`, an invalid draft's problems, and the progress
//! bar of `bench run`. Pure functions of library values, except the
//! progress bar, which draws on standard error.

use std::cell::OnceCell;
use std::fmt::Write as _;
use std::io;
use std::path::Path;

use benchops::analysis::Analysis;
use benchops::classify::RunClass;
use benchops::fsio::Created;
use benchops::plan::Plan;
use benchops::seal::VerifyError;

use crate::bench::{Listed, Planned, Status};
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
            ch.case,
            ch.classified.reason
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
pub fn listed(l: &Listed) -> String {
    let name = match &l.record {
        Ok(r) => format!("{} ({} children)", r.intent_source, r.child_count),
        Err(e) => format!("unreadable: {e}"),
    };
    format!("{}  {name}", l.digest)
}

/// The line of `seal` and `bench seal`: whether the file is new, its
/// digest and where it is.
pub fn sealed(o: &SealOutcome) -> String {
    let note = match o.created {
        Created::New => "sealed",
        Created::AlreadyPresent => "already sealed",
    };
    format!("{note} {} -> {}", o.digest, o.path.display())
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

/// The progress bar of `bench run` on standard error: children in a
/// terminal class out of all, and the successes and failures so far. It
/// appears when the submission is known and disappears when finished.
#[derive(Debug, Default)]
pub struct Progress {
    bar: OnceCell<indicatif::ProgressBar>,
}

impl Progress {
    /// A progress bar that is not shown yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Shows the bar for `children` children.
    pub fn start(&self, children: u64) {
        self.bar.get_or_init(|| {
            let pb = indicatif::ProgressBar::new(children);
            pb.set_style(
                indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} terminal  {msg}")
                    .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
            );
            pb
        });
    }

    /// Shows one look.
    pub fn update(&self, status: &Status) {
        let Some(pb) = self.bar.get() else {
            return;
        };
        let c = &status.counts;
        let done = c.total - c.incomplete;
        pb.set_position(done);
        pb.set_message(format!(
            "ok {} failed {} other {}",
            c.succeeded,
            c.failed,
            done - c.succeeded - c.failed
        ));
    }

    /// Removes the bar.
    pub fn finish(&self) {
        if let Some(pb) = self.bar.get() {
            pb.finish_and_clear();
        }
    }
}
