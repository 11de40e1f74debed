//! `benchops-publish sweep`: builds the options of the chosen mode
//! ([`crate::local`] or [`crate::github`]) from the command line, runs the
//! sweep, prints its summary and picks the exit code; a sweep that stopped
//! is a [`CommandError`] carrying what became of its receipt.

use std::path::{Path, PathBuf};

use benchops::fsio::WriteError;

use super::{CommandError, note, out};
use crate::cli::SweepArgs;
use crate::exit::{ATTENTION, FAILED, OK};
use crate::sweep::{SweepError, SweepReport, render_summary};
use crate::text::error_line;
use crate::{github, local};

/// A sweep that stopped, and what became of its receipt.
#[derive(Debug)]
pub struct Stopped {
    /// Why it stopped (its receipt taken out).
    pub error: SweepError,
    /// Its receipt.
    pub receipt: ReceiptOutcome,
}

/// What became of a stopped sweep's receipt (`--receipt-out FILE`, or
/// standard error).
#[derive(Debug)]
pub enum ReceiptOutcome {
    /// The sweep stopped before it had a receipt (in setup).
    None,
    /// Written to `--receipt-out` (atomically).
    Written(PathBuf),
    /// `--receipt-out` could not be written; the receipt is printed on
    /// standard error instead.
    Unwritten {
        /// Why it could not be written.
        error: WriteError,
        /// The receipt's bytes.
        receipt: Vec<u8>,
    },
    /// Printed on standard error as one JSON line (no `--receipt-out`).
    Printed(Vec<u8>),
}

impl ReceiptOutcome {
    /// Writes `receipt` to `out` (atomically) when given; says what became
    /// of it.
    fn emit(receipt: Option<Vec<u8>>, out: Option<&Path>) -> ReceiptOutcome {
        let Some(bytes) = receipt else {
            return ReceiptOutcome::None;
        };
        match out {
            Some(path) => match benchops::fsio::write_atomic(path, &bytes) {
                Ok(()) => ReceiptOutcome::Written(path.to_path_buf()),
                Err(error) => ReceiptOutcome::Unwritten {
                    error,
                    receipt: bytes,
                },
            },
            None => ReceiptOutcome::Printed(bytes),
        }
    }

    /// What is printed on standard error about it, line by line.
    pub fn report(&self) -> String {
        match self {
            ReceiptOutcome::None => String::new(),
            ReceiptOutcome::Written(path) => format!("receipt written to {}\n", path.display()),
            ReceiptOutcome::Unwritten { error, receipt } => format!(
                "error: failed to write the receipt: {}\n{}\n",
                error_line(error),
                String::from_utf8_lossy(receipt)
            ),
            ReceiptOutcome::Printed(receipt) => {
                format!("{}\n", String::from_utf8_lossy(receipt))
            }
        }
    }
}

/// Runs the sweep the arguments ask for.
pub(super) fn sweep(a: SweepArgs) -> Result<u8, CommandError> {
    let swept = if a.github {
        let (Some(access), true) = (
            super::github_access(a.auth),
            a.handoff.is_some() || a.handoff_refs,
        ) else {
            return Err(CommandError::GitHubOptions);
        };
        let mut opts = github::GitHubSweepOptions::new(
            access.repo,
            access.app_id,
            access.app_key_file,
            a.handoff,
            a.manifest,
        );
        opts.token_service = access.token_service;
        opts.handoff_refs = a.handoff_refs;
        opts.history_objects = a.history_objects;
        opts.max_record_bytes = a.max_record_bytes;
        let (trigger, run, server) = github::actions_context_from_env();
        opts.trigger = trigger;
        opts.workflow_run = run;
        opts.history_base_url = github::history_base_url(&server, &opts.repo);
        opts.missed_run_label = a.missed_run_issues;
        opts.health_issue_label = a.health_issue;
        github::sweep_github_blocking(&opts)
    } else if let Some(dir) = a.local {
        let mut opts = local::LocalSweepOptions::new(dir, a.manifest);
        opts.lock_wait = std::time::Duration::from_secs(a.lock_wait);
        opts.lock_notice = |m| eprintln!("sweep: {m}");
        opts.max_record_bytes = a.max_record_bytes;
        opts.missed_run_label = a.missed_run_issues;
        opts.health_issue_label = a.health_issue;
        match local::sweep_local(&opts) {
            Err(e) if local::is_locked_out(&e) => return Err(CommandError::SweepBusy(e)),
            swept => swept,
        }
    } else {
        return Err(CommandError::NoMode);
    };
    finish(swept, a.receipt_out.as_deref())
}

/// Prints a sweep's summary and picks the exit code; a stopped sweep's
/// receipt goes to `receipt_out` (or standard error).
fn finish(
    swept: Result<SweepReport, SweepError>,
    receipt_out: Option<&Path>,
) -> Result<u8, CommandError> {
    let report = match swept {
        Ok(report) => report,
        Err(mut error) => {
            let receipt = ReceiptOutcome::emit(error.receipt.take(), receipt_out);
            return Err(CommandError::SweepStopped(Box::new(Stopped {
                error,
                receipt,
            })));
        }
    };
    out(render_summary(&report));
    let mut status = OK;
    if report.quarantined() > 0 {
        let place = report.quarantine.as_ref().map_or_else(
            || "handoff refs left in place".to_owned(),
            |q| format!("files in {}, handoff refs left in place", q.display()),
        );
        note(format_args!(
            "error: {} handoff(s) quarantined ({place})\n",
            report.quarantined()
        ));
        status = ATTENTION;
    }
    if report.invalid_left() > 0 {
        // Not quarantined means not done: no copy and no `.why.txt`
        // exist, and the handoff still sits in `sealed/`. The valid
        // handoffs were persisted and reconciled all the same; the
        // sweep reports a failure so that it never looks finished.
        note(format_args!(
            "error: {} invalid handoff(s) could not be quarantined and were left in place (see their quarantine-failed problem); fix the quarantine directory and run the sweep again\n",
            report.invalid_left()
        ));
        status = FAILED;
    }
    let files_left = report.consumed.iter().filter(|c| !c.is_gone()).count();
    if files_left > 0 {
        note(format_args!(
            "error: {files_left} handoff file(s) whose record is in history could not be moved to .persisted/; the next sweep tries again\n"
        ));
        status = status.max(ATTENTION);
    }
    if report.refs_left() > 0 {
        note(format_args!(
            "error: {} consumed handoff ref(s) could not be deleted; their records are in history and the next sweep deletes them\n",
            report.refs_left()
        ));
        status = status.max(ATTENTION);
    }
    Ok(status)
}
