//! The v2 member `comparison`: the lane comparison's policy and one entry
//! per compared case and metric, read in canonical member order.

use super::Pass;
use crate::record::{
    Band, Comparison, ComparisonPolicy, Confirmation, ConfirmationRole, EffectEstimate,
    KeyComparison, KeyVerdict,
};

impl Pass<'_> {
    pub(super) fn comparison(&mut self) -> Option<Comparison> {
        self.first(b"environment_differs")?;
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
            confirm: None,
            bisection: None,
        })
    }

    fn key(&mut self) -> Option<KeyComparison> {
        self.first(b"band")?;
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
            band: Band {
                relative,
                threshold,
                min_absolute,
                noise_fence,
                noise_fence_mads,
            },
            initial,
            role,
            confirmation,
            verdict,
            reason,
            decided_by: None,
            same_session: None,
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
