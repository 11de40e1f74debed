//! A sweep that stopped ([`SweepError`]): the phase and the step where it
//! stopped, what it had done ([`Progress`]), the [`Cause`], whether a rerun
//! can succeed as is, and the receipt saying so.

use std::fmt;

use serde::Serialize;

use super::error::{Cause, StepError};
use super::ports::{Applied, PhaseToken};

/// A phase of the sweep.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Reading options, the manifest and keys; opening the stores.
    Setup,
    /// Validating handoffs.
    Validate,
    /// Persisting to `benchmark-history` (in GitHub mode, with the
    /// contents-phase token).
    Persist,
    /// Reconciling drift issues (in GitHub mode, with the issues-phase
    /// token).
    Reconcile,
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Setup => "setup",
            Phase::Validate => "validate",
            Phase::Persist => "persist",
            Phase::Reconcile => "reconcile",
        })
    }
}

/// What a sweep had done when it stopped (also kept on success).
#[derive(Debug, Clone, Default)]
pub struct Progress {
    /// Handoffs validated (valid or not), from every source.
    pub validated: usize,
    /// Handoffs quarantined (invalid handoff refs included: left in place).
    pub quarantined: usize,
    /// Valid handoff refs read.
    pub handoff_refs: usize,
    /// Consumed handoff refs deleted (or found already gone).
    pub refs_deleted: usize,
    /// Whether the persist finished (its commit landed, or nothing was new).
    pub persisted: bool,
    /// The commit the persist landed, if any.
    pub commit: Option<String>,
    /// Reconcile actions applied, in order.
    pub applied: Vec<Applied>,
    /// Actions the plan held when the sweep stopped, applied or not.
    pub planned: usize,
    /// Tokens minted so far.
    pub tokens: Vec<PhaseToken>,
}

fn short_commit(c: &str) -> &str {
    c.get(..12).unwrap_or(c)
}

fn progress_line(p: &Progress) -> String {
    let persist = match (&p.commit, p.persisted) {
        (Some(c), _) => format!("history commit {} landed", short_commit(c)),
        (None, true) => "history already complete".to_owned(),
        (None, false) => "nothing persisted".to_owned(),
    };
    let refs = if p.handoff_refs > 0 {
        format!(
            ", {} of {} consumed handoff ref(s) deleted",
            p.refs_deleted, p.handoff_refs
        )
    } else {
        String::new()
    };
    format!(
        "{} handoff(s) validated, {persist}{refs}, {} of {} reconcile action(s) applied",
        p.validated,
        p.applied.len(),
        p.planned
    )
}

fn rerun_hint(cause: &Cause) -> &'static str {
    if cause.is_retryable() {
        "; rerun to converge"
    } else {
        "; a rerun will not help until the cause is fixed"
    }
}

/// A sweep that stopped: the phase, the step, what was done, why, and the
/// receipt saying so.
#[derive(Debug, thiserror::Error)]
#[error("sweep stopped in the {phase} phase at {step} ({}){}", progress_line(.progress), rerun_hint(.cause))]
pub struct SweepError {
    /// The phase.
    pub phase: Phase,
    /// The step within the phase.
    pub step: String,
    /// What had been done.
    pub progress: Box<Progress>,
    /// Why.
    #[source]
    pub cause: Box<Cause>,
    /// The sweep's receipt with `stopped` set (canonical `receipt/v1`
    /// bytes), once the sweep got past setup. A failed persist commits
    /// nothing, so this is the only copy; after a failed reconcile it is
    /// the committed receipt (if any) plus `stopped`. The CLI writes it to
    /// `--receipt-out` (or stderr).
    pub receipt: Option<Vec<u8>>,
}

impl SweepError {
    /// A failure in `phase` with no receipt yet.
    pub fn new(phase: Phase, e: StepError, progress: &Progress) -> Self {
        SweepError {
            phase,
            step: e.step,
            progress: Box::new(progress.clone()),
            cause: e.cause,
            receipt: None,
        }
    }

    /// Whether rerunning the same sweep can succeed as is.
    pub fn is_retryable(&self) -> bool {
        self.cause.is_retryable()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The message ends with whether a rerun helps, as the cause says.
    #[test]
    fn the_rerun_hint_follows_the_cause() {
        assert!(rerun_hint(&Cause::IssuesBusy { replans: 5 }).contains("rerun to converge"));
        let conflict = Cause::Conflict {
            path: "p".into(),
            blob: "b".into(),
        };
        assert!(rerun_hint(&conflict).contains("will not help"));
        let e = SweepError::new(
            Phase::Persist,
            StepError::new("write the commit", conflict),
            &Progress::default(),
        );
        assert_eq!(
            e.to_string(),
            "sweep stopped in the persist phase at write the commit (0 handoff(s) validated, nothing persisted, 0 of 0 reconcile action(s) applied); a rerun will not help until the cause is fixed"
        );
    }
}
