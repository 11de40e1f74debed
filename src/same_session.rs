//! Same-session confirmation, pure: the verdict on a key from the baseline
//! commit (side A) and the candidate (side B) measured in the same
//! session, interleaved.
//!
//! Machines drift between sessions (frequency scaling, heat, neighbours, a
//! kernel update, another node), and every sample of a session moves with
//! it. A stored baseline from another session therefore only chooses what
//! to re-measure ([`crate::compare::first_look`]); the verdict that raises or
//! clears an alarm compares A and B measured side by side, so the session's
//! shift cancels out.
//!
//! # The rule
//!
//! - **Effect.** The Hodges-Lehmann shift of B against A over A's median,
//!   positive worse, with a seeded bootstrap interval
//!   ([`crate::compare::estimate`]).
//! - **Band.** `max(threshold, noise fence, min_absolute / |A median|)`, as
//!   in a stored-baseline comparison, but the noise fence comes from this
//!   session's samples of both sides: the median absolute deviation of
//!   every sample from its own side's median. A single noisy record can no
//!   longer widen the band for as long as a regression lasts.
//! - **Suspect regression** (or improvement): confirmed when the interval
//!   at `confirm_level` lies wholly above (below) the band; otherwise not
//!   confirmed, and nothing is announced.
//! - **Clear** of a drifting key: cleared when the interval at `level` lies
//!   wholly below the band's upper edge, that is, the evidence shows the
//!   regression gone. It need not be inside the band on both sides: a
//!   faster candidate clears. A clear whose interval lies wholly below the
//!   band is also a confirmed improvement, its own event. An interval still
//!   wholly above the band reproduces the drift; anything else is
//!   inconclusive and neither reproduces nor clears.

use crate::compare::{NotComparable, Position, Settings, derive_seed, estimate, position};
use crate::names::CaseId;
use crate::num::Finite;
use crate::record::{Band, ConfirmationRole, Direction, EffectEstimate, KeyVerdict};
use crate::stats::Summary;

/// Which side of a same-session comparison a run measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Side {
    /// The baseline commit.
    A,
    /// The candidate.
    B,
}

impl Side {
    /// `a` or `b`.
    pub fn as_str(self) -> &'static str {
        match self {
            Side::A => "a",
            Side::B => "b",
        }
    }
}

/// The verdict on one key from a same-session A/B measurement.
#[derive(Debug, Clone, PartialEq)]
pub struct AbDecision {
    /// The verdict.
    pub verdict: KeyVerdict,
    /// The band, from this session's samples.
    pub band: Band,
    /// The effect that decided, at `confirm_level` for a suspect and at
    /// `level` for a clear.
    pub effect: EffectEstimate,
    /// One line saying why.
    pub reason: String,
}

/// The band of a same-session comparison: A's median for scale, and the
/// noise of both sides, each around its own median.
pub fn session_band(
    settings: &Settings,
    metric: &str,
    a: &[f64],
    b: &[f64],
) -> Result<Band, NotComparable> {
    let sa = Summary::of(a).ok_or_else(|| NotComparable("side A has no finite samples".into()))?;
    let sb = Summary::of(b).ok_or_else(|| NotComparable("side B has no finite samples".into()))?;
    if sa.median == 0.0 {
        return Err(NotComparable(
            "side A's median is 0, so a relative effect is undefined".into(),
        ));
    }
    let deviations: Vec<f64> = a
        .iter()
        .map(|v| (v - sa.median).abs())
        .chain(b.iter().map(|v| (v - sb.median).abs()))
        .collect();
    let mad = crate::stats::median(&deviations).unwrap_or(0.0);
    let s = settings.band_for(metric);
    let m = sa.median.abs();
    let noise_fence = s.noise_fence_mads * crate::compare::MAD_SCALE * mad / m;
    let abs_rel = s.min_absolute / m;
    let relative = s.threshold.max(noise_fence).max(abs_rel);
    let fin = |v: f64| Finite::new(v).unwrap_or(Finite::ZERO);
    Ok(Band {
        relative: fin(relative),
        threshold: fin(s.threshold),
        min_absolute: fin(s.min_absolute),
        noise_fence: fin(noise_fence),
        noise_fence_mads: fin(s.noise_fence_mads),
    })
}

fn pct(v: f64) -> String {
    format!("{:+.1}%", v * 100.0)
}

/// The verdict on one key: `role` is what the first look asked (a suspect
/// to confirm, or a drifting key to clear), `a` and `b` the non-null
/// samples of each side from this session. `stage` names the comparison in
/// the seed (`same-session`, or a bisection step's name), so that every
/// interval can be recomputed.
#[expect(
    clippy::too_many_arguments,
    reason = "the key, its role, both sides and the stage are each needed, and a struct would only rename them"
)]
pub fn decide(
    settings: &Settings,
    case: &CaseId,
    metric: &str,
    direction: Direction,
    role: ConfirmationRole,
    a: &[f64],
    b: &[f64],
    stage: &str,
) -> Result<AbDecision, NotComparable> {
    let band = session_band(settings, metric, a, b)?;
    let half = band.relative.get();
    let band_txt = format!("±{:.1}%", half * 100.0);
    let at = |level: f64, what: &str| {
        estimate(
            a,
            b,
            direction,
            level,
            settings.resamples,
            derive_seed(
                settings.seed,
                case.as_str(),
                metric,
                &format!("{stage}/{what}"),
            ),
            settings.min_samples_for_test,
        )
    };
    let describe = |e: &EffectEstimate| {
        format!(
            "B against A in the same session {} [{}, {}] at {:.0}% (A {} runs, B {} runs)",
            pct(e.estimate.get()),
            pct(e.low.get()),
            pct(e.high.get()),
            e.level.get() * 100.0,
            a.len(),
            b.len()
        )
    };
    let decision = |verdict, effect: EffectEstimate, reason: String| AbDecision {
        verdict,
        band: band.clone(),
        effect,
        reason,
    };
    Ok(match role {
        ConfirmationRole::ConfirmClear => {
            let e = at(settings.level, "clear")?;
            let text = describe(&e);
            match position(&e, half) {
                Position::Above => decision(
                    KeyVerdict::ConfirmedRegression,
                    e,
                    format!("still drifting: {text} lies above the band {band_txt}"),
                ),
                Position::Below => decision(
                    KeyVerdict::ConfirmedImprovement,
                    e,
                    format!("cleared, and better: {text} lies below the band {band_txt}"),
                ),
                _ if e.high.get() < half => decision(
                    KeyVerdict::WithinBand,
                    e,
                    format!(
                        "cleared: {text} lies below the band's upper edge {}",
                        pct(half)
                    ),
                ),
                _ => decision(
                    KeyVerdict::Inconclusive,
                    e,
                    format!(
                        "inconclusive: {text} neither shows the drift nor rules it out (band {band_txt})"
                    ),
                ),
            }
        }
        ConfirmationRole::SuspectRegression
        | ConfirmationRole::SuspectImprovement
        | ConfirmationRole::None => {
            let e = at(settings.confirm_level, "confirm")?;
            let text = describe(&e);
            match (position(&e, half), role) {
                (Position::Above, ConfirmationRole::SuspectRegression | ConfirmationRole::None) => {
                    decision(
                        KeyVerdict::ConfirmedRegression,
                        e,
                        format!("confirmed: {text} lies above the band {band_txt}"),
                    )
                }
                (
                    Position::Below,
                    ConfirmationRole::SuspectImprovement | ConfirmationRole::None,
                ) => decision(
                    KeyVerdict::ConfirmedImprovement,
                    e,
                    format!("confirmed improvement: {text} lies below the band {band_txt}"),
                ),
                _ => decision(
                    KeyVerdict::NotConfirmed,
                    e,
                    format!(
                        "not confirmed: {text} does not lie beyond the band {band_txt} on the suspected side"
                    ),
                ),
            }
        }
    })
}

/// The order in which the runs of a same-session comparison run:
/// `pairs` pairs, each pair's order drawn from `seed` (randomised blocks),
/// so that a drift during the session reaches both sides alike and no side
/// always runs first. The same seed gives the same order.
pub fn interleaved_order(pairs: u32, seed: u64) -> Vec<Side> {
    block_order(2, pairs, seed)
        .into_iter()
        .map(|i| if i == 0 { Side::A } else { Side::B })
        .collect()
}

/// Randomised blocks of `sides` sides (a bisection step measures three
/// commits): `rounds` rounds, each a permutation of `0..sides` drawn from
/// `seed`, concatenated. Two sides draw one bit per round.
pub fn block_order(sides: usize, rounds: u32, seed: u64) -> Vec<usize> {
    let mut rng = crate::stats::SplitMix64::new(seed);
    let mut out = Vec::with_capacity(sides * rounds as usize);
    for _ in 0..rounds {
        let mut round: Vec<usize> = (0..sides).collect();
        if sides == 2 {
            if rng.next_u64() & 1 == 1 {
                round.swap(0, 1);
            }
        } else {
            for i in (1..sides).rev() {
                let j = (rng.next_u64() % (i as u64 + 1)) as usize;
                round.swap(i, j);
            }
        }
        out.extend(round);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn case() -> CaseId {
        CaseId::new("w/size=large").expect("case")
    }

    /// `n` samples around `level` with relative noise `cv`, from `seed`.
    fn draw(level: f64, cv: f64, n: usize, seed: u64) -> Vec<f64> {
        let mut rng = crate::stats::SplitMix64::new(seed);
        (0..n)
            .map(|_| {
                let u: f64 = (0..12)
                    .map(|_| (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64)
                    .sum::<f64>()
                    - 6.0;
                level * (1.0 + cv * u)
            })
            .collect()
    }

    fn verdict(role: ConfirmationRole, a: &[f64], b: &[f64]) -> KeyVerdict {
        decide(
            &Settings::default(),
            &case(),
            "wall_s",
            Direction::LowerIsBetter,
            role,
            a,
            b,
            "same-session",
        )
        .expect("comparable")
        .verdict
    }

    #[test]
    fn a_session_wide_shift_cancels_out() {
        // The whole session runs 6% slow: both sides move together, and no
        // drift is confirmed; a real +10% on top of it is.
        for seed in 0..20 {
            let a = draw(1.06, 0.01, 10, seed);
            let same = draw(1.06, 0.01, 10, seed + 1000);
            let slow = draw(1.06 * 1.10, 0.01, 10, seed + 2000);
            assert_eq!(
                verdict(ConfirmationRole::SuspectRegression, &a, &same),
                KeyVerdict::NotConfirmed,
                "seed {seed}"
            );
            assert_eq!(
                verdict(ConfirmationRole::SuspectRegression, &a, &slow),
                KeyVerdict::ConfirmedRegression,
                "seed {seed}"
            );
        }
    }

    #[test]
    fn a_clear_needs_the_regression_gone_not_a_two_sided_band() {
        let a = draw(1.0, 0.01, 10, 1);
        // Faster than A after the fix: cleared (and an improvement when
        // beyond the band).
        let faster = draw(0.985, 0.01, 10, 2);
        assert!(verdict(ConfirmationRole::ConfirmClear, &a, &faster).clears());
        let much_faster = draw(0.9, 0.01, 10, 3);
        assert_eq!(
            verdict(ConfirmationRole::ConfirmClear, &a, &much_faster),
            KeyVerdict::ConfirmedImprovement
        );
        // Still 10% slower: the drift reproduces.
        let slow = draw(1.1, 0.01, 10, 4);
        assert_eq!(
            verdict(ConfirmationRole::ConfirmClear, &a, &slow),
            KeyVerdict::ConfirmedRegression
        );
        // Right at the band's edge: neither.
        let edge = draw(1.03, 0.01, 10, 5);
        assert_eq!(
            verdict(ConfirmationRole::ConfirmClear, &a, &edge),
            KeyVerdict::Inconclusive
        );
    }

    #[test]
    fn the_band_comes_from_this_sessions_samples_of_both_sides() {
        let s = Settings::default();
        let quiet = draw(1.0, 0.005, 10, 7);
        let band = session_band(&s, "wall_s", &quiet, &draw(1.2, 0.005, 10, 8)).expect("band");
        // A shift between the sides is not noise.
        assert_eq!(band.relative.get(), s.band.threshold, "{band:?}");
        let noisy = draw(1.0, 0.08, 10, 9);
        let wide = session_band(&s, "wall_s", &noisy, &noisy).expect("band");
        assert!(wide.relative.get() > s.band.threshold, "{wide:?}");
        assert!(session_band(&s, "wall_s", &[], &quiet).is_err());
        assert!(session_band(&s, "wall_s", &[0.0, 0.0], &quiet).is_err());
    }

    #[test]
    fn the_interleaved_order_is_seeded_and_balanced_in_pairs() {
        let o = interleaved_order(50, 42);
        assert_eq!(o, interleaved_order(50, 42));
        assert_ne!(o, interleaved_order(50, 43));
        for pair in o.chunks(2) {
            assert!(pair.contains(&Side::A) && pair.contains(&Side::B));
        }
        let a_first = o.chunks(2).filter(|p| p[0] == Side::A).count();
        assert!((10..=40).contains(&a_first), "{a_first}");
    }
}
