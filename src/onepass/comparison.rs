//! The v2 member `comparison`: the lane comparison's policy and one entry
//! per compared case and metric, read in canonical member order, with the
//! v3 members (`confirm`, `bisection`, a key's `decided_by` and
//! `same_session`) wherever they occur. Which version may hold which of
//! them is checked once the record's `schema` is read
//! ([`fits`]).

use super::Pass;
use crate::record::{
    Band, BisectionRecord, BisectionStep, Comparison, ComparisonPolicy, ConfirmMode,
    ConfirmModeKind, Confirmation, ConfirmationRole, DecidedBy, EffectEstimate, KeyComparison,
    KeyVerdict, RESULT_SCHEMA_V2, RESULT_SCHEMA_V3, RunSide, SameSession, SideRun, StepFindingKind,
};

/// The most characters of a run's `node` (the schema's `maxLength`).
const NODE_CHARS: usize = 255;

/// The sides a same-session run may name, and those a bisection step's
/// run may name.
const AB: [RunSide; 2] = [RunSide::A, RunSide::B];
const STEP: [RunSide; 3] = [RunSide::Good, RunSide::Mid, RunSide::Bad];

/// Whether the members `c` holds are those `schema` requires and allows:
/// v2 none of the v3 members; v3 `confirm` and every key's `decided_by`.
pub(super) fn fits(c: &Comparison, schema: &str) -> bool {
    match schema {
        RESULT_SCHEMA_V2 => {
            c.confirm.is_none()
                && c.bisection.is_none()
                && c.keys
                    .iter()
                    .all(|k| k.decided_by.is_none() && k.same_session.is_none())
        }
        RESULT_SCHEMA_V3 => c.confirm.is_some() && c.keys.iter().all(|k| k.decided_by.is_some()),
        _ => false,
    }
}

impl Pass<'_> {
    pub(super) fn comparison(&mut self) -> Option<Comparison> {
        self.lit(b"{\"")?;
        let bisection = if self.lit(b"bisection\":").is_some() {
            let b = self.bisection()?;
            self.lit(b",\"")?;
            Some(b)
        } else {
            None
        };
        let confirm = if self.lit(b"confirm\":").is_some() {
            let c = self.confirm_mode()?;
            self.lit(b",\"")?;
            Some(c)
        } else {
            None
        };
        self.lit(b"environment_differs\":")?;
        let environment_differs = self.bool()?;
        self.next(b"keys")?;
        let keys = self.array(Self::key)?;
        self.next(b"no_baseline_reason")?;
        let no_baseline_reason = if self.null() {
            None
        } else {
            Some(self.nonempty()?)
        };
        self.next(b"policy")?;
        self.first(b"confirm_level")?;
        let confirm_level = self.level()?;
        self.next(b"confirm_runs")?;
        let confirm_runs = self.u32_min1()?;
        self.next(b"effect")?;
        let effect = self.nonempty()?;
        self.next(b"level")?;
        let level = self.level()?;
        self.next(b"min_samples_for_test")?;
        let min_samples_for_test = self.u32_min1()?;
        self.next(b"resamples")?;
        let resamples = self.u64_min1()?;
        self.next(b"seed")?;
        let seed = self.u64()?;
        self.end()?;
        self.end()?;
        Some(Comparison {
            policy: ComparisonPolicy {
                effect,
                level,
                confirm_level,
                resamples,
                seed,
                confirm_runs,
                min_samples_for_test,
            },
            no_baseline_reason,
            environment_differs,
            keys,
            confirm,
            bisection,
        })
    }

    fn band(&mut self) -> Option<Band> {
        self.first(b"min_absolute")?;
        let min_absolute = self.number_min(0.0)?;
        self.next(b"noise_fence")?;
        let noise_fence = self.number_min(0.0)?;
        self.next(b"noise_fence_mads")?;
        let noise_fence_mads = self.number_min(0.0)?;
        self.next(b"relative")?;
        let relative = self.number_min(0.0)?;
        self.next(b"threshold")?;
        let threshold = self.number_min(0.0)?;
        self.end()?;
        Some(Band {
            relative,
            threshold,
            min_absolute,
            noise_fence,
            noise_fence_mads,
        })
    }

    fn key(&mut self) -> Option<KeyComparison> {
        self.first(b"band")?;
        let band = self.band()?;
        self.next(b"baseline_median")?;
        let baseline_median = self.number()?;
        self.next(b"baseline_n")?;
        let baseline_n = self.u64_min1()?;
        self.next(b"case")?;
        let case = self.case_id()?;
        self.next(b"confirmation")?;
        let confirmation = if self.null() {
            None
        } else {
            self.first(b"alone")?;
            let alone = self.effect()?;
            self.next(b"pooled")?;
            let pooled = self.effect()?;
            self.next(b"runs")?;
            let runs = self.run_counts()?;
            self.next(b"samples")?;
            let samples = self.numbers()?;
            self.end()?;
            Some(Confirmation {
                samples,
                runs,
                pooled,
                alone,
            })
        };
        let decided_by = if self.lit(b",\"decided_by\":").is_some() {
            Some(match &*self.string()? {
                "first_look" => DecidedBy::FirstLook,
                "stored_baseline" => DecidedBy::StoredBaseline,
                "same_session" => DecidedBy::SameSession,
                _ => return None,
            })
        } else {
            None
        };
        self.next(b"direction")?;
        let direction = self.direction()?;
        self.next(b"drifting_in_history")?;
        let drifting_in_history = self.bool()?;
        self.next(b"initial")?;
        let initial = self.effect()?;
        self.next(b"metric")?;
        let metric = self.nonempty()?;
        self.next(b"reason")?;
        let reason = self.nonempty()?;
        self.next(b"role")?;
        let role = match &*self.string()? {
            "none" => ConfirmationRole::None,
            "suspect_regression" => ConfirmationRole::SuspectRegression,
            "suspect_improvement" => ConfirmationRole::SuspectImprovement,
            "confirm_clear" => ConfirmationRole::ConfirmClear,
            _ => return None,
        };
        let same_session = if self.lit(b",\"same_session\":").is_some() {
            Some(self.same_session()?)
        } else {
            None
        };
        self.next(b"verdict")?;
        let verdict = match &*self.string()? {
            "within_band" => KeyVerdict::WithinBand,
            "inconclusive" => KeyVerdict::Inconclusive,
            "not_confirmed" => KeyVerdict::NotConfirmed,
            "confirmed_regression" => KeyVerdict::ConfirmedRegression,
            "confirmed_improvement" => KeyVerdict::ConfirmedImprovement,
            _ => return None,
        };
        self.end()?;
        Some(KeyComparison {
            case,
            metric,
            direction,
            drifting_in_history,
            baseline_median,
            baseline_n,
            band,
            initial,
            role,
            confirmation,
            verdict,
            reason,
            decided_by,
            same_session,
        })
    }

    fn confirm_mode(&mut self) -> Option<ConfirmMode> {
        self.first(b"fallback_reason")?;
        let fallback_reason = if self.null() {
            None
        } else {
            Some(self.nonempty()?)
        };
        self.next(b"mode")?;
        let mode = self.confirm_mode_kind()?;
        self.next(b"requested")?;
        let requested = self.confirm_mode_kind()?;
        self.end()?;
        Some(ConfirmMode {
            mode,
            requested,
            fallback_reason,
        })
    }

    fn confirm_mode_kind(&mut self) -> Option<ConfirmModeKind> {
        match &*self.string()? {
            "same-session" => Some(ConfirmModeKind::SameSession),
            "stored-baseline" => Some(ConfirmModeKind::StoredBaseline),
            _ => None,
        }
    }

    /// One measured run whose side is one of `sides`.
    fn side_run(&mut self, sides: &[RunSide]) -> Option<SideRun> {
        self.first(b"node")?;
        let node = self.nonempty()?;
        if node.chars().count() > NODE_CHARS {
            return None;
        }
        self.next(b"side")?;
        let side = match &*self.string()? {
            "a" => RunSide::A,
            "b" => RunSide::B,
            "good" => RunSide::Good,
            "mid" => RunSide::Mid,
            "bad" => RunSide::Bad,
            _ => return None,
        };
        if !sides.contains(&side) {
            return None;
        }
        self.next(b"value")?;
        let value = self.opt_number()?;
        self.end()?;
        Some(SideRun { side, node, value })
    }

    fn same_session(&mut self) -> Option<SameSession> {
        self.first(b"band")?;
        let band = self.band()?;
        self.next(b"baseline_commit")?;
        let baseline_commit = self.commit()?;
        self.next(b"candidate_commit")?;
        let candidate_commit = self.commit()?;
        self.next(b"effect")?;
        let effect = self.effect()?;
        self.next(b"order_seed")?;
        let order_seed = self.u64()?;
        self.next(b"runs")?;
        let runs = self.array(|p| p.side_run(&AB))?;
        self.end()?;
        Some(SameSession {
            baseline_commit,
            candidate_commit,
            order_seed,
            runs,
            band,
            effect,
        })
    }

    fn bisection(&mut self) -> Option<BisectionRecord> {
        self.first(b"bad")?;
        let bad = self.commit()?;
        self.next(b"budget_seconds")?;
        let budget_seconds = self.u64_min1()?;
        self.next(b"budget_steps")?;
        let budget_steps = self.u64_min1()?;
        self.next(b"case")?;
        let case = self.case_id()?;
        self.next(b"commits")?;
        let commits = self.array(Self::commit)?;
        if commits.len() < 2 {
            return None;
        }
        self.next(b"culprit")?;
        let culprit = if self.null() {
            None
        } else {
            Some(self.commit()?)
        };
        self.next(b"good")?;
        let good = self.commit()?;
        self.next(b"metric")?;
        let metric = self.nonempty()?;
        self.next(b"reason")?;
        let reason = if self.null() {
            None
        } else {
            Some(self.nonempty()?)
        };
        self.next(b"steps")?;
        let steps = self.array(Self::step)?;
        self.end()?;
        Some(BisectionRecord {
            case,
            metric,
            commits,
            budget_steps,
            budget_seconds,
            steps,
            culprit,
            good,
            bad,
            reason,
        })
    }

    fn step(&mut self) -> Option<BisectionStep> {
        self.first(b"commit")?;
        let commit = self.commit()?;
        self.next(b"finding")?;
        let finding = match &*self.string()? {
            "good" => StepFindingKind::Good,
            "bad" => StepFindingKind::Bad,
            "undecided" => StepFindingKind::Undecided,
            "build_failed" => StepFindingKind::BuildFailed,
            _ => return None,
        };
        self.next(b"index")?;
        let index = self.u64()?;
        self.next(b"reason")?;
        let reason = self.nonempty()?;
        self.next(b"runs")?;
        let runs = self.array(|p| p.side_run(&STEP))?;
        self.end()?;
        Some(BisectionStep {
            index,
            commit,
            finding,
            reason,
            runs,
        })
    }

    fn effect(&mut self) -> Option<EffectEstimate> {
        self.first(b"estimate")?;
        let estimate = self.number()?;
        self.next(b"high")?;
        let high = self.number()?;
        self.next(b"level")?;
        let level = self.level()?;
        self.next(b"low")?;
        let low = self.number()?;
        self.next(b"n_baseline")?;
        let n_baseline = self.u64_min1()?;
        self.next(b"n_candidate")?;
        let n_candidate = self.u64_min1()?;
        self.next(b"p_value")?;
        let p_value = if self.null() {
            None
        } else {
            Some(self.number().filter(|p| (0.0..=1.0).contains(&p.get()))?)
        };
        self.next(b"resamples")?;
        let resamples = self.u64_min1()?;
        self.next(b"seed")?;
        let seed = self.u64()?;
        self.end()?;
        Some(EffectEstimate {
            estimate,
            low,
            high,
            level,
            resamples,
            seed,
            p_value,
            n_baseline,
            n_candidate,
        })
    }
}
