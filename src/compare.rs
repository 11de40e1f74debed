//! The lane comparison, pure: each case and metric of a lane run against
//! the lane's baseline, the band an effect must leave, the first look that
//! names suspects, and the verdict after in-run confirmation.
//!
//! # The rule
//!
//! - **Effect.** The Hodges-Lehmann shift of the candidate against the
//!   baseline, divided by the baseline's median, signed so that positive is
//!   worse whatever the metric's direction. Its interval is a seeded
//!   percentile bootstrap ([`crate::effect::effect_ci`]); a two-sided
//!   Mann-Whitney U p-value is recorded when both sides have enough samples.
//! - **Band.** `max(threshold, noise fence, min_absolute / |baseline
//!   median|)`, where the noise fence is `noise_fence_mads × 1.4826 × MAD /
//!   |median|` of the baseline's own samples. An effect must clear all three.
//! - **First look** (at `level`): an interval wholly above the band is a
//!   suspect regression, wholly below a suspect improvement; wholly inside is
//!   within the band; anything else is inconclusive. A key that history
//!   says is drifting is re-run whatever the first look says, unless that
//!   look already names a suspect: it clears only on confirmed evidence.
//! - **Confirmation.** A suspect is confirmed only when the pooled samples
//!   (first look plus re-runs) put the interval wholly outside the band at
//!   the stricter `confirm_level`, **and** the re-runs alone point the same
//!   way beyond the band. Otherwise it is `not_confirmed`: recorded, never
//!   announced, and it clears nothing. A clear is confirmed when the pooled
//!   interval at `level` lies wholly inside the band and the re-runs alone
//!   estimate an effect inside it; an inconclusive result neither
//!   reproduces nor clears.
//!
//! Every interval's seed is derived from the policy seed, the case, the
//! metric and the stage, so a record can be recomputed bit for bit.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest as _, Sha256};

use crate::effect::{Effect, effect_ci};
use crate::mann_whitney::mann_whitney;
use crate::names::CaseId;
use crate::num::Finite;
use crate::record::{
    Band, ComparisonPolicy, Confirmation, ConfirmationRole, Direction, EffectEstimate,
    KeyComparison, KeyVerdict, RunCounts,
};
use crate::stats::Summary;

/// The effect every comparison estimates.
pub const EFFECT: &str = "hodges-lehmann-relative";

/// The scale that makes a MAD estimate a normal standard deviation.
pub const MAD_SCALE: f64 = 1.4826;

/// The settings of one metric's band.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BandSettings {
    /// Relative threshold (0.03 is 3%).
    pub threshold: f64,
    /// Smallest absolute effect, in the metric's unit.
    pub min_absolute: f64,
    /// Multiple of the baseline's scaled MAD, relative to its median.
    pub noise_fence_mads: f64,
}

impl Default for BandSettings {
    fn default() -> Self {
        BandSettings {
            threshold: 0.03,
            min_absolute: 0.0,
            noise_fence_mads: 1.0,
        }
    }
}

/// The settings of a lane's comparison.
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Band settings for metrics without their own.
    pub band: BandSettings,
    /// Per-metric band settings.
    pub per_metric: BTreeMap<String, BandSettings>,
    /// Metrics to compare; `None` compares every metric but the resource
    /// ones ([`RESOURCE_METRICS`]).
    pub metrics: Option<Vec<String>>,
    /// Level of the first look and of the clearing test.
    pub level: f64,
    /// Level the pooled evidence must meet to confirm a drift.
    pub confirm_level: f64,
    /// Bootstrap resamples per interval.
    pub resamples: usize,
    /// The policy seed.
    pub seed: u64,
    /// Measured re-runs of each suspect.
    pub confirm_runs: u32,
    /// Fewest samples per side for a Mann-Whitney p-value.
    pub min_samples_for_test: usize,
}

/// Metrics not compared unless a lane names them: resource figures whose
/// resolution is coarse next to short runs.
pub const RESOURCE_METRICS: [&str; 3] = ["user_s", "sys_s", "max_rss_bytes"];

/// The default policy seed (`"benchops"` in ASCII, cut to 53 bits).
pub const DEFAULT_SEED: u64 = 0x0062_656e_6368_6f70;

impl Default for Settings {
    fn default() -> Self {
        Settings {
            band: BandSettings::default(),
            per_metric: BTreeMap::new(),
            metrics: None,
            level: 0.95,
            confirm_level: 0.99,
            resamples: 2000,
            seed: DEFAULT_SEED,
            confirm_runs: 10,
            min_samples_for_test: 3,
        }
    }
}

impl Settings {
    /// Whether `metric` is compared.
    pub fn compares(&self, metric: &str) -> bool {
        match &self.metrics {
            Some(list) => list.iter().any(|m| m == metric),
            None => !RESOURCE_METRICS.contains(&metric),
        }
    }

    /// The metrics the lane names for comparison (`metrics`, and the keys of
    /// `per_metric`) that are not among `reported`, the metrics its cases
    /// report. A name no case reports compares nothing: the lane would see
    /// no drift at all. Empty when the lane names no metrics (it then
    /// compares what the cases report).
    pub fn unreported_metrics<'a>(&'a self, reported: &BTreeSet<&str>) -> Vec<&'a str> {
        let named = self
            .metrics
            .iter()
            .flatten()
            .map(String::as_str)
            .chain(self.per_metric.keys().map(String::as_str));
        let mut out: Vec<&str> = named.filter(|m| !reported.contains(m)).collect();
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The band settings of `metric`.
    pub fn band_for(&self, metric: &str) -> BandSettings {
        self.per_metric.get(metric).copied().unwrap_or(self.band)
    }

    /// The policy as recorded.
    pub fn policy(&self) -> ComparisonPolicy {
        ComparisonPolicy {
            effect: EFFECT.into(),
            level: fin(self.level),
            confirm_level: fin(self.confirm_level),
            resamples: self.resamples as u64,
            seed: self.seed,
            confirm_runs: self.confirm_runs,
            min_samples_for_test: self.min_samples_for_test as u32,
        }
    }
}

fn fin(v: f64) -> Finite {
    Finite::new(v).unwrap_or(Finite::ZERO)
}

/// A seed for one interval, derived from the policy seed and what the
/// interval is of; at most 2^53 − 1 so that it survives canonical JSON.
pub fn derive_seed(seed: u64, case: &str, metric: &str, stage: &str) -> u64 {
    let mut h = Sha256::new();
    h.update(seed.to_be_bytes());
    for part in [case, metric, stage] {
        h.update((part.len() as u64).to_be_bytes());
        h.update(part.as_bytes());
    }
    let d = h.finalize();
    let mut b = [0u8; 8];
    b.copy_from_slice(&d[..8]);
    u64::from_be_bytes(b) & ((1 << 53) - 1)
}

/// Why a key cannot be compared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotComparable(pub String);

/// The band of a metric from the baseline's samples.
pub fn band(settings: BandSettings, baseline: &[f64]) -> Result<Band, NotComparable> {
    let s = Summary::of(baseline)
        .ok_or_else(|| NotComparable("the baseline has no finite samples".into()))?;
    if s.median == 0.0 {
        return Err(NotComparable(
            "the baseline median is 0, so a relative effect is undefined".into(),
        ));
    }
    let m = s.median.abs();
    let noise_fence = settings.noise_fence_mads * MAD_SCALE * s.mad / m;
    let abs_rel = settings.min_absolute / m;
    let relative = settings.threshold.max(noise_fence).max(abs_rel);
    Ok(Band {
        relative: fin(relative),
        threshold: fin(settings.threshold),
        min_absolute: fin(settings.min_absolute),
        noise_fence: fin(noise_fence),
        noise_fence_mads: fin(settings.noise_fence_mads),
    })
}

/// The relative effect of `candidate` against `baseline`, positive worse,
/// with its interval at `level`.
pub fn estimate(
    baseline: &[f64],
    candidate: &[f64],
    direction: Direction,
    level: f64,
    resamples: usize,
    seed: u64,
    min_samples_for_test: usize,
) -> Result<EffectEstimate, NotComparable> {
    if candidate.is_empty() {
        return Err(NotComparable("no candidate samples".into()));
    }
    let s = Summary::of(baseline)
        .ok_or_else(|| NotComparable("the baseline has no finite samples".into()))?;
    if s.median == 0.0 {
        return Err(NotComparable(
            "the baseline median is 0, so a relative effect is undefined".into(),
        ));
    }
    let m = s.median.abs();
    let ci = effect_ci(baseline, candidate, Effect::Shift, level, resamples, seed)
        .ok_or_else(|| NotComparable("the effect interval could not be computed".into()))?;
    let sign = match direction {
        Direction::LowerIsBetter => 1.0,
        Direction::HigherIsBetter => -1.0,
    };
    let (a, b) = (sign * ci.low / m, sign * ci.high / m);
    let p_value = (baseline.len() >= min_samples_for_test
        && candidate.len() >= min_samples_for_test)
        .then(|| mann_whitney(candidate, baseline))
        .flatten()
        .map(|t| fin(t.p_two_sided.clamp(0.0, 1.0)));
    let rel = sign * ci.estimate / m;
    if !(rel.is_finite() && a.is_finite() && b.is_finite()) {
        return Err(NotComparable("the effect is not a finite number".into()));
    }
    Ok(EffectEstimate {
        estimate: fin(rel),
        low: fin(a.min(b)),
        high: fin(a.max(b)),
        level: fin(level),
        resamples: resamples as u64,
        seed,
        p_value,
        n_baseline: baseline.len() as u64,
        n_candidate: candidate.len() as u64,
    })
}

/// Where an interval lies against a band of half-width `band`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Position {
    /// Wholly above: worse beyond the band.
    Above,
    /// Wholly below: better beyond the band.
    Below,
    /// Wholly inside.
    Inside,
    /// Across an edge of the band.
    Straddles,
}

/// Where `e`'s interval lies against the band.
pub fn position(e: &EffectEstimate, band: f64) -> Position {
    let (lo, hi) = (e.low.get(), e.high.get());
    if lo > band {
        Position::Above
    } else if hi < -band {
        Position::Below
    } else if lo > -band && hi < band {
        Position::Inside
    } else {
        Position::Straddles
    }
}

/// What the first look found for one key, before any re-run.
#[derive(Debug, Clone, PartialEq)]
pub struct FirstLook {
    /// The case.
    pub case: CaseId,
    /// The metric.
    pub metric: String,
    /// Its direction.
    pub direction: Direction,
    /// Whether history holds an unresolved drift of this key.
    pub drifting_in_history: bool,
    /// The baseline's non-null samples.
    pub baseline: Vec<f64>,
    /// This run's non-null samples.
    pub initial_samples: Vec<f64>,
    /// The band.
    pub band: Band,
    /// The first look's effect.
    pub initial: EffectEstimate,
    /// Whether and why to re-run.
    pub role: ConfirmationRole,
}

impl FirstLook {
    /// Whether the key's case must be re-run.
    pub fn needs_confirmation(&self) -> bool {
        self.role != ConfirmationRole::None
    }
}

/// The first look at one key.
pub fn first_look(
    settings: &Settings,
    case: &CaseId,
    metric: &str,
    direction: Direction,
    drifting_in_history: bool,
    baseline: &[f64],
    candidate: &[f64],
) -> Result<FirstLook, NotComparable> {
    let band = band(settings.band_for(metric), baseline)?;
    let initial = estimate(
        baseline,
        candidate,
        direction,
        settings.level,
        settings.resamples,
        derive_seed(settings.seed, case.as_str(), metric, "initial"),
        settings.min_samples_for_test,
    )?;
    let role = match (position(&initial, band.relative.get()), drifting_in_history) {
        (Position::Above, _) => ConfirmationRole::SuspectRegression,
        (Position::Below, _) => ConfirmationRole::SuspectImprovement,
        (_, true) => ConfirmationRole::ConfirmClear,
        (_, false) => ConfirmationRole::None,
    };
    Ok(FirstLook {
        case: case.clone(),
        metric: metric.to_owned(),
        direction,
        drifting_in_history,
        baseline: baseline.to_vec(),
        initial_samples: candidate.to_vec(),
        band,
        initial,
        role,
    })
}

/// The samples and run counts of a key's re-runs.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reruns {
    /// Non-null samples of the metric.
    pub samples: Vec<f64>,
    /// The re-runs' classes.
    pub runs: RunCounts,
}

fn pct(v: f64) -> String {
    format!("{:+.1}%", v * 100.0)
}

/// The verdict on a key: from the first look alone when it asked for no
/// re-run, else from the re-runs (`None` when they produced nothing).
pub fn decide(settings: &Settings, look: FirstLook, reruns: Option<Reruns>) -> KeyComparison {
    let b = look.band.relative.get();
    let band_txt = format!("±{:.1}%", b * 100.0);
    let first = position(&look.initial, b);
    let est = look.initial.estimate.get();
    let mut confirmation = None;
    let (verdict, reason) = match (look.role, reruns) {
        (ConfirmationRole::None, _) => match first {
            Position::Inside => (
                KeyVerdict::WithinBand,
                format!(
                    "effect {} with its interval inside the band {band_txt}",
                    pct(est)
                ),
            ),
            _ => (
                KeyVerdict::Inconclusive,
                format!(
                    "effect {}, interval [{}, {}] crosses the edge of the band {band_txt}",
                    pct(est),
                    pct(look.initial.low.get()),
                    pct(look.initial.high.get())
                ),
            ),
        },
        (role, None) => (
            match role {
                ConfirmationRole::ConfirmClear => KeyVerdict::Inconclusive,
                _ => KeyVerdict::NotConfirmed,
            },
            "the confirmation re-runs produced no samples of this metric".into(),
        ),
        (role, Some(re)) if re.samples.is_empty() => (
            match role {
                ConfirmationRole::ConfirmClear => KeyVerdict::Inconclusive,
                _ => KeyVerdict::NotConfirmed,
            },
            format!(
                "the confirmation re-runs produced no samples of this metric ({} of {} runs succeeded)",
                re.runs.succeeded, re.runs.total
            ),
        ),
        (role, Some(re)) => {
            let seed = |stage| derive_seed(settings.seed, look.case.as_str(), &look.metric, stage);
            let mut pooled_samples = look.initial_samples.clone();
            pooled_samples.extend_from_slice(&re.samples);
            let at = |samples: &[f64], level, stage| {
                estimate(
                    &look.baseline,
                    samples,
                    look.direction,
                    level,
                    settings.resamples,
                    seed(stage),
                    settings.min_samples_for_test,
                )
            };
            let strict = at(&pooled_samples, settings.confirm_level, "pooled-strict");
            let plain = at(&pooled_samples, settings.level, "pooled");
            let alone = at(&re.samples, settings.level, "alone");
            match (strict, plain, alone) {
                (Ok(strict), Ok(plain), Ok(alone)) => {
                    let a = alone.estimate.get();
                    let (v, reason, pooled) = judge(role, b, &band_txt, strict, plain, a);
                    confirmation = Some(Confirmation {
                        samples: re.samples.iter().map(|&v| fin(v)).collect(),
                        runs: re.runs,
                        pooled,
                        alone,
                    });
                    (v, reason)
                }
                (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => (
                    match role {
                        ConfirmationRole::ConfirmClear => KeyVerdict::Inconclusive,
                        _ => KeyVerdict::NotConfirmed,
                    },
                    format!("the confirmation could not be evaluated: {}", e.0),
                ),
            }
        }
    };
    KeyComparison {
        case: look.case,
        metric: look.metric,
        direction: look.direction,
        drifting_in_history: look.drifting_in_history,
        baseline_median: fin(crate::stats::median(&look.baseline).unwrap_or(0.0)),
        baseline_n: look.baseline.len() as u64,
        band: look.band,
        initial: look.initial,
        role: look.role,
        confirmation,
        verdict,
        reason,
        decided_by: None,
        same_session: None,
    }
}

/// The verdict after re-runs: `strict` and `plain` are the pooled effect at
/// the confirm level and at the first look's level, `alone` the re-runs'
/// own estimate. Returns the verdict, why, and the pooled interval that
/// decided it.
fn judge(
    role: ConfirmationRole,
    b: f64,
    band_txt: &str,
    strict: EffectEstimate,
    plain: EffectEstimate,
    alone: f64,
) -> (KeyVerdict, String, EffectEstimate) {
    let sp = position(&strict, b);
    let describe = |e: &EffectEstimate| {
        format!(
            "pooled effect {} [{}, {}] at {:.0}%",
            pct(e.estimate.get()),
            pct(e.low.get()),
            pct(e.high.get()),
            e.level.get() * 100.0
        )
    };
    if sp == Position::Above && alone > b {
        let r = format!(
            "confirmed: {} lies above the band {band_txt}, and the re-runs alone estimate {}",
            describe(&strict),
            pct(alone)
        );
        return (KeyVerdict::ConfirmedRegression, r, strict);
    }
    if sp == Position::Below && alone < -b {
        let r = format!(
            "confirmed improvement: {} lies below the band {band_txt}, and the re-runs alone estimate {}",
            describe(&strict),
            pct(alone)
        );
        return (KeyVerdict::ConfirmedImprovement, r, strict);
    }
    match role {
        ConfirmationRole::ConfirmClear => {
            if position(&plain, b) == Position::Inside && alone.abs() < b {
                let r = format!(
                    "cleared: {} lies inside the band {band_txt}, and the re-runs alone estimate {}",
                    describe(&plain),
                    pct(alone)
                );
                (KeyVerdict::WithinBand, r, plain)
            } else {
                let r = format!(
                    "inconclusive: {} and re-runs alone {} neither show the drift nor rule it out (band {band_txt})",
                    describe(&plain),
                    pct(alone)
                );
                (KeyVerdict::Inconclusive, r, plain)
            }
        }
        _ => {
            let r = format!(
                "not confirmed: {} and re-runs alone {} against the band {band_txt}",
                describe(&strict),
                pct(alone)
            );
            (KeyVerdict::NotConfirmed, r, strict)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn named_metrics_that_no_case_reports_are_listed_once_in_order() {
        let mut s = Settings::default();
        let reported: BTreeSet<&str> = ["t", "wall_s"].into_iter().collect();
        assert!(
            s.unreported_metrics(&reported).is_empty(),
            "no names, no problem"
        );
        s.metrics = Some(vec!["tt".into(), "t".into(), "a".into()]);
        s.per_metric.insert("tt".into(), BandSettings::default());
        s.per_metric.insert("zz".into(), BandSettings::default());
        assert_eq!(s.unreported_metrics(&reported), ["a", "tt", "zz"]);
    }

    fn case(s: &str) -> CaseId {
        CaseId::new(s).expect("case id")
    }

    fn noisy(center: f64, cv: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = crate::stats::SplitMix64::new(seed);
        (0..n)
            .map(|_| {
                // Sum of uniforms: roughly normal, bounded.
                let u: f64 = (0..12)
                    .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
                    .sum::<f64>()
                    - 6.0;
                center * (1.0 + cv * u)
            })
            .collect()
    }

    #[test]
    fn the_band_is_the_largest_of_its_three_bounds() {
        let base = [10.0, 10.0, 10.0, 11.0, 9.0];
        let b = band(
            BandSettings {
                threshold: 0.03,
                min_absolute: 0.0,
                noise_fence_mads: 0.0,
            },
            &base,
        )
        .expect("band");
        assert_eq!(b.relative.get(), 0.03);
        let b = band(
            BandSettings {
                threshold: 0.03,
                min_absolute: 1.0,
                noise_fence_mads: 0.0,
            },
            &base,
        )
        .expect("band");
        assert_eq!(b.relative.get(), 0.1, "1.0 absolute over a median of 10");
        let wide = [10.0, 12.0, 8.0, 10.0, 11.0];
        let b = band(
            BandSettings {
                threshold: 0.03,
                min_absolute: 0.0,
                noise_fence_mads: 1.0,
            },
            &wide,
        )
        .expect("band");
        assert!((b.relative.get() - MAD_SCALE * 1.0 / 10.0).abs() < 1e-12);
        assert!(band(BandSettings::default(), &[0.0, 0.0, 0.0]).is_err());
    }

    #[test]
    fn a_thirty_percent_slowdown_is_suspected_and_confirmed() {
        let s = Settings::default();
        let base = noisy(1.0, 0.01, 10, 1);
        let slow = noisy(1.3, 0.01, 10, 2);
        let look = first_look(
            &s,
            &case("a/n=1"),
            "wall_s",
            Direction::LowerIsBetter,
            false,
            &base,
            &slow,
        )
        .expect("look");
        assert_eq!(look.role, ConfirmationRole::SuspectRegression);
        let k = decide(
            &s,
            look,
            Some(Reruns {
                samples: noisy(1.3, 0.01, 10, 3),
                runs: RunCounts::default(),
            }),
        );
        assert_eq!(k.verdict, KeyVerdict::ConfirmedRegression, "{}", k.reason);
        assert!((k.initial.estimate.get() - 0.3).abs() < 0.03);
    }

    #[test]
    fn a_suspect_the_reruns_do_not_reproduce_is_not_confirmed() {
        let s = Settings::default();
        let base = noisy(1.0, 0.01, 10, 1);
        let look = first_look(
            &s,
            &case("a"),
            "wall_s",
            Direction::LowerIsBetter,
            false,
            &base,
            &noisy(1.3, 0.01, 10, 2),
        )
        .expect("look");
        let k = decide(
            &s,
            look,
            Some(Reruns {
                samples: noisy(1.0, 0.01, 10, 4),
                runs: RunCounts::default(),
            }),
        );
        assert_eq!(k.verdict, KeyVerdict::NotConfirmed, "{}", k.reason);
    }

    #[test]
    fn direction_decides_what_is_worse() {
        let s = Settings::default();
        let base = noisy(100.0, 0.01, 10, 1);
        let more = noisy(130.0, 0.01, 10, 2);
        let look = first_look(
            &s,
            &case("a"),
            "ops",
            Direction::HigherIsBetter,
            false,
            &base,
            &more,
        )
        .expect("look");
        assert_eq!(look.role, ConfirmationRole::SuspectImprovement);
        assert!(look.initial.estimate.get() < 0.0);
        let k = decide(
            &s,
            look,
            Some(Reruns {
                samples: noisy(130.0, 0.01, 10, 3),
                runs: RunCounts::default(),
            }),
        );
        assert_eq!(k.verdict, KeyVerdict::ConfirmedImprovement);
        assert!(k.verdict.clears());
    }

    #[test]
    fn a_wobble_inside_the_band_is_within_it_and_asks_for_nothing() {
        let s = Settings::default();
        let base = noisy(1.0, 0.002, 10, 1);
        let look = first_look(
            &s,
            &case("a"),
            "wall_s",
            Direction::LowerIsBetter,
            false,
            &base,
            &noisy(1.01, 0.002, 10, 2),
        )
        .expect("look");
        assert_eq!(look.role, ConfirmationRole::None);
        let k = decide(&s, look, None);
        assert_eq!(k.verdict, KeyVerdict::WithinBand, "{}", k.reason);
        assert!(k.confirmation.is_none());
    }

    #[test]
    fn a_drifting_key_clears_only_after_reruns() {
        let s = Settings::default();
        let base = noisy(1.0, 0.005, 10, 1);
        let look = first_look(
            &s,
            &case("a"),
            "wall_s",
            Direction::LowerIsBetter,
            true,
            &base,
            &noisy(1.0, 0.005, 10, 2),
        )
        .expect("look");
        assert_eq!(look.role, ConfirmationRole::ConfirmClear);
        let none = decide(&s, look.clone(), None);
        assert_eq!(
            none.verdict,
            KeyVerdict::Inconclusive,
            "no re-runs, no clear"
        );
        let k = decide(
            &s,
            look,
            Some(Reruns {
                samples: noisy(1.0, 0.005, 10, 3),
                runs: RunCounts::default(),
            }),
        );
        assert_eq!(k.verdict, KeyVerdict::WithinBand, "{}", k.reason);
    }

    #[test]
    fn seeds_are_derived_and_fit_in_53_bits() {
        let a = derive_seed(1, "a", "m", "initial");
        assert_eq!(a, derive_seed(1, "a", "m", "initial"));
        assert_ne!(a, derive_seed(1, "a", "m", "pooled"));
        assert_ne!(
            derive_seed(1, "ab", "c", "x"),
            derive_seed(1, "a", "bc", "x")
        );
        assert!(a < (1 << 53));
    }

    #[test]
    fn decisions_are_deterministic() {
        let s = Settings::default();
        let base = noisy(1.0, 0.03, 10, 1);
        let run = || {
            let look = first_look(
                &s,
                &case("a"),
                "wall_s",
                Direction::LowerIsBetter,
                false,
                &base,
                &noisy(1.2, 0.03, 10, 2),
            )
            .expect("look");
            decide(
                &s,
                look,
                Some(Reruns {
                    samples: noisy(1.2, 0.03, 10, 3),
                    runs: RunCounts::default(),
                }),
            )
        };
        assert_eq!(run(), run());
    }
}
