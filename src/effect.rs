//! Effect sizes of a candidate sample against a baseline sample, with
//! seeded percentile-bootstrap confidence intervals.
//!
//! - [`hodges_lehmann`]: the median of all pairwise differences
//!   `candidate_j - baseline_i`, found by an exact selection in
//!   O((n+m) log(n·m)) expected time and O(n+m) memory, never by forming the
//!   n·m differences.
//! - [`Effect::RelativeShift`]: that shift divided by the baseline median.
//! - [`Effect::MedianRatio`]: the candidate median over the baseline median.
//!
//! [`effect_ci`] resamples both samples independently with replacement, from
//! one [`SplitMix64`] stream seeded by the caller, so the same inputs and
//! seed give the same interval bit for bit.

use crate::stats::SplitMix64;

/// The largest number of resamples [`effect_ci`] accepts, which bounds its
/// work to `MAX_RESAMPLES` effect evaluations.
pub const MAX_RESAMPLES: usize = 100_000;

/// Which effect to estimate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// The Hodges-Lehmann shift, in the unit of the samples.
    Shift,
    /// The Hodges-Lehmann shift over the baseline median (0.3 is 30% more).
    RelativeShift,
    /// Candidate median over baseline median (1.3 is 30% more).
    MedianRatio,
}

impl Effect {
    /// The effect of `candidate` against `baseline`: `None` when a sample is
    /// empty or has a non-finite value, or when a relative effect has a zero
    /// baseline median or a non-finite result.
    pub fn estimate(self, baseline: &[f64], candidate: &[f64]) -> Option<f64> {
        if baseline.is_empty()
            || candidate.is_empty()
            || baseline.iter().chain(candidate).any(|v| !v.is_finite())
        {
            return None;
        }
        let mut b = baseline.to_vec();
        let mut c = candidate.to_vec();
        b.sort_by(f64::total_cmp);
        c.sort_by(f64::total_cmp);
        self.of_sorted(&b, &c)
    }

    /// The effect over sorted, finite, non-empty samples.
    fn of_sorted(self, b: &[f64], c: &[f64]) -> Option<f64> {
        let value = match self {
            Effect::Shift => shift_sorted(b, c),
            Effect::RelativeShift => shift_sorted(b, c) / nonzero(median_of_sorted(b))?,
            Effect::MedianRatio => median_of_sorted(c) / nonzero(median_of_sorted(b))?,
        };
        value.is_finite().then_some(value)
    }
}

fn nonzero(v: f64) -> Option<f64> {
    (v != 0.0).then_some(v)
}

fn median_of_sorted(s: &[f64]) -> f64 {
    let n = s.len();
    if n % 2 == 1 {
        s[n / 2]
    } else {
        s[n / 2 - 1] / 2.0 + s[n / 2] / 2.0
    }
}

/// The Hodges-Lehmann shift of `candidate` against `baseline`: the median of
/// `candidate_j - baseline_i` over all pairs (the mean of the two middle
/// differences when n·m is even). `None` when a sample is empty or a value
/// is not finite.
pub fn hodges_lehmann(baseline: &[f64], candidate: &[f64]) -> Option<f64> {
    Effect::Shift.estimate(baseline, candidate)
}

/// The median of `candidate` over the median of `baseline` (`None` as for
/// [`Effect::estimate`]).
pub fn ratio_of_medians(baseline: &[f64], candidate: &[f64]) -> Option<f64> {
    Effect::MedianRatio.estimate(baseline, candidate)
}

/// HL shift over sorted, non-empty samples.
fn shift_sorted(b: &[f64], c: &[f64]) -> f64 {
    let total = b.len() * c.len();
    let diffs = PairwiseDiffs::new(b, c);
    if total % 2 == 1 {
        diffs.select(total / 2)
    } else {
        diffs.select(total / 2 - 1) / 2.0 + diffs.select(total / 2) / 2.0
    }
}

/// The implicit n×m matrix `a[i][j] = c[j] - b[n-1-i]` over sorted samples.
/// Rows and columns are both non-decreasing, because floating-point
/// subtraction is monotone in each argument.
struct PairwiseDiffs<'a> {
    b: &'a [f64],
    c: &'a [f64],
}

impl<'a> PairwiseDiffs<'a> {
    fn new(b: &'a [f64], c: &'a [f64]) -> Self {
        Self { b, c }
    }

    fn rows(&self) -> usize {
        self.b.len()
    }

    fn at(&self, i: usize, j: usize) -> f64 {
        self.c[j] - self.b[self.b.len() - 1 - i]
    }

    /// For each row, the number of entries `< pivot` (`strict`) or
    /// `<= pivot`, written into `out`. One staircase walk: O(n + m).
    fn count_below(&self, pivot: f64, strict: bool, out: &mut [usize]) -> usize {
        let m = self.c.len();
        let mut j = m;
        let mut total = 0;
        for (i, slot) in out.iter_mut().enumerate() {
            // Counts shrink down the rows, so j only moves left.
            while j > 0 {
                let v = self.at(i, j - 1);
                let above = if strict { v >= pivot } else { v > pivot };
                if !above {
                    break;
                }
                j -= 1;
            }
            *slot = j;
            total += j;
        }
        total
    }

    /// The entry of 0-based rank `k` in sorted order (k < n·m).
    ///
    /// Randomised selection over the per-row column ranges that can still
    /// hold the answer (the approach of Monahan's algorithm for the
    /// Hodges-Lehmann estimator): each round takes a pivot uniformly among
    /// the remaining entries, counts entries below it with one staircase
    /// walk, and keeps one side. When few entries remain they are gathered
    /// and selected directly. The generator has a fixed seed, and the result
    /// does not depend on it: only the running time does.
    fn select(&self, k: usize) -> f64 {
        let n = self.rows();
        let m = self.c.len();
        let mut lo = vec![0usize; n];
        let mut hi = vec![m; n];
        let mut below = vec![0usize; n];
        let mut at_most = vec![0usize; n];
        let mut rng = SplitMix64::new(0x686c_7365_6c65); // "hlsele"
        loop {
            let remaining: usize = lo.iter().zip(&hi).map(|(l, h)| h - l).sum();
            let skipped: usize = lo.iter().sum();
            if remaining <= n + m {
                let mut rest: Vec<f64> = (0..n)
                    .flat_map(|i| (lo[i]..hi[i]).map(move |j| (i, j)))
                    .map(|(i, j)| self.at(i, j))
                    .collect();
                let rank = k - skipped;
                return *rest.select_nth_unstable_by(rank, f64::total_cmp).1;
            }
            // A uniform pick among the remaining entries.
            let mut pick = rng.below(remaining);
            let mut pivot = f64::NAN;
            for i in 0..n {
                let width = hi[i] - lo[i];
                if pick < width {
                    pivot = self.at(i, lo[i] + pick);
                    break;
                }
                pick -= width;
            }
            let lt = self.count_below(pivot, true, &mut below);
            let le = self.count_below(pivot, false, &mut at_most);
            if k < lt {
                hi.iter_mut()
                    .zip(&below)
                    .for_each(|(h, &b)| *h = (*h).min(b));
            } else if k >= le {
                lo.iter_mut()
                    .zip(&at_most)
                    .for_each(|(l, &a)| *l = (*l).max(a));
            } else {
                return pivot;
            }
        }
    }
}

/// A bootstrap confidence interval of an [`Effect`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EffectCi {
    /// The effect estimated.
    pub effect: Effect,
    /// The point estimate on the full samples.
    pub estimate: f64,
    /// Lower bound of the percentile interval.
    pub low: f64,
    /// Upper bound of the percentile interval.
    pub high: f64,
    /// Confidence level in (0, 1).
    pub level: f64,
    /// Resamples drawn.
    pub resamples: usize,
    /// Seed of the generator.
    pub seed: u64,
}

/// A percentile-bootstrap interval of `effect` of `candidate` against
/// `baseline` at `level`.
///
/// Each resample draws `baseline.len()` indices into the baseline and then
/// `candidate.len()` into the candidate, with replacement, from one
/// [`SplitMix64`] seeded with `seed`; the bounds are the resampled effects at
/// ranks `round(q · (B - 1))` for `q = (1 - level)/2` and `1 - q`, the rule
/// [`crate::stats::MedianBootstrap`] uses.
///
/// `None` when the point estimate is undefined (see [`Effect::estimate`]),
/// when `level` is outside (0, 1), when `resamples` is 0 or above
/// [`MAX_RESAMPLES`], or when some resample has an undefined relative effect
/// (a resampled baseline median of zero).
///
/// Work is `resamples` × O((n+m) log(n+m)) for the shift effects (sorting
/// each resample, then the exact selection) and `resamples` × O(n + m) more
/// for the ratio; memory is O(n + m + resamples).
pub fn effect_ci(
    baseline: &[f64],
    candidate: &[f64],
    effect: Effect,
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<EffectCi> {
    let estimate = effect.estimate(baseline, candidate)?;
    if !(level > 0.0 && level < 1.0) || resamples == 0 || resamples > MAX_RESAMPLES {
        return None;
    }
    let mut rng = SplitMix64::new(seed);
    let mut draws = Vec::with_capacity(resamples);
    let mut b = vec![0.0; baseline.len()];
    let mut c = vec![0.0; candidate.len()];
    for _ in 0..resamples {
        b.iter_mut()
            .for_each(|v| *v = baseline[rng.below(baseline.len())]);
        c.iter_mut()
            .for_each(|v| *v = candidate[rng.below(candidate.len())]);
        b.sort_by(f64::total_cmp);
        c.sort_by(f64::total_cmp);
        draws.push(effect.of_sorted(&b, &c)?);
    }
    let alpha = (1.0 - level) / 2.0;
    let rank = |q: f64| ((q * (resamples - 1) as f64).round() as usize).min(resamples - 1);
    let low = *draws.select_nth_unstable_by(rank(alpha), f64::total_cmp).1;
    let high = *draws
        .select_nth_unstable_by(rank(1.0 - alpha), f64::total_cmp)
        .1;
    Some(EffectCi {
        effect,
        estimate,
        low,
        high,
        level,
        resamples,
        seed,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The median of all pairwise differences, formed explicitly.
    fn brute_hl(b: &[f64], c: &[f64]) -> f64 {
        let mut d: Vec<f64> = b
            .iter()
            .flat_map(|x| c.iter().map(move |y| y - x))
            .collect();
        d.sort_by(f64::total_cmp);
        median_of_sorted(&d)
    }

    #[test]
    fn selection_matches_brute_force_including_ties() {
        let mut rng = SplitMix64::new(3);
        for round in 0..200 {
            let n = 1 + rng.below(40);
            let m = 1 + rng.below(40);
            // Few distinct values in odd rounds, to force many ties.
            let levels = if round % 2 == 1 { 4 } else { 1_000_000 };
            let mut draw = |len: usize| -> Vec<f64> {
                (0..len).map(|_| rng.below(levels) as f64 / 7.0).collect()
            };
            let (b, c) = (draw(n), draw(m));
            let got = hodges_lehmann(&b, &c).expect("valid");
            assert_eq!(got.to_bits(), brute_hl(&b, &c).to_bits(), "n={n} m={m}");
            // Every rank, not only the middle ones.
            if round < 20 {
                let (mut bs, mut cs) = (b.clone(), c.clone());
                bs.sort_by(f64::total_cmp);
                cs.sort_by(f64::total_cmp);
                let mut all: Vec<f64> = bs
                    .iter()
                    .flat_map(|x| cs.iter().map(move |y| y - x))
                    .collect();
                all.sort_by(f64::total_cmp);
                let diffs = PairwiseDiffs::new(&bs, &cs);
                for (k, want) in all.iter().enumerate() {
                    assert_eq!(diffs.select(k), *want, "rank {k}");
                }
            }
        }
    }

    #[test]
    fn relative_effects_need_a_nonzero_baseline_median() {
        assert_eq!(Effect::MedianRatio.estimate(&[0.0, 0.0, 1.0], &[2.0]), None);
        assert_eq!(Effect::RelativeShift.estimate(&[0.0], &[2.0]), None);
        assert_eq!(ratio_of_medians(&[2.0, 4.0, 6.0], &[6.0]), Some(1.5));
        assert_eq!(Effect::RelativeShift.estimate(&[10.0], &[13.0]), Some(0.3));
        assert_eq!(hodges_lehmann(&[], &[1.0]), None);
        assert_eq!(hodges_lehmann(&[f64::NAN], &[1.0]), None);
    }

    #[test]
    fn ci_rejects_bad_parameters() {
        let b = [1.0, 2.0, 3.0];
        assert!(effect_ci(&b, &b, Effect::Shift, 0.0, 10, 1).is_none());
        assert!(effect_ci(&b, &b, Effect::Shift, 1.0, 10, 1).is_none());
        assert!(effect_ci(&b, &b, Effect::Shift, 0.9, 0, 1).is_none());
        assert!(effect_ci(&b, &b, Effect::Shift, 0.9, MAX_RESAMPLES + 1, 1).is_none());
        // A baseline whose resamples can have a zero median.
        assert!(effect_ci(&[0.0, 0.0, 1.0, 1.0], &b, Effect::MedianRatio, 0.9, 200, 1).is_none());
    }
}
