//! Robust statistics over validated samples. Deterministic: the bootstrap uses
//! a seeded generator, so the same samples always give the same bytes.

/// n, median, MAD, min and max of a non-empty sample.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Sample size.
    pub n: usize,
    /// Median (mean of the two middle values for even n).
    pub median: f64,
    /// Median absolute deviation from the median (unscaled).
    pub mad: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
}

impl Summary {
    /// Summarises `values`; `None` when empty or when a value is not finite.
    pub fn of(values: &[f64]) -> Option<Summary> {
        if values.is_empty() || values.iter().any(|v| !v.is_finite()) {
            return None;
        }
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        let median = median_sorted(&sorted);
        let mut dev: Vec<f64> = sorted.iter().map(|v| (v - median).abs()).collect();
        dev.sort_by(f64::total_cmp);
        Some(Summary {
            n: sorted.len(),
            median,
            mad: median_sorted(&dev),
            min: sorted[0],
            max: sorted[sorted.len() - 1],
        })
    }
}

/// Median of an already sorted, non-empty slice.
fn median_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        // Halve before adding so huge values cannot overflow to infinity.
        sorted[n / 2 - 1] / 2.0 + sorted[n / 2] / 2.0
    }
}

/// The median of a non-empty slice (any order); `None` when empty.
pub fn median(values: &[f64]) -> Option<f64> {
    Summary::of(values).map(|s| s.median)
}

/// SplitMix64: a tiny, well-known, seedable generator. Not for secrets.
#[derive(Debug, Clone)]
pub struct SplitMix64(u64);

impl SplitMix64 {
    /// A generator started from `seed`.
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A uniform index below `n` (n > 0), by Lemire's multiply-shift.
    pub fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

/// A percentile-bootstrap confidence interval of the median.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BootstrapCi {
    /// Confidence level.
    pub level: f64,
    /// Lower bound.
    pub low: f64,
    /// Upper bound.
    pub high: f64,
    /// Resamples drawn.
    pub resamples: usize,
    /// Seed used.
    pub seed: u64,
}

/// The default seed for analysis bootstraps.
///
/// It is below 2^53 so that it survives canonical JSON (RFC 8785 numbers are
/// doubles) and the recorded seed is exactly the seed used.
pub const DEFAULT_SEED: u64 = 0x0062_656e_6368; // "bench"
/// The default number of bootstrap resamples.
pub const DEFAULT_RESAMPLES: usize = 1000;

/// The resampling of a bootstrap of the median, for one sample size.
///
/// A resample draws `n` ranks with replacement; because the median depends
/// only on which ranks were drawn, each resample reduces to the pair of
/// middle ranks `(lo, hi)` of the drawn multiset, and its median over sorted
/// values `x` is `x[lo]/2 + x[hi]/2`. The same draws therefore serve every
/// metric of a case (a paired bootstrap), and can be reused for every case of
/// the same size. The generator is [`SplitMix64`] seeded with `seed`, so the
/// interval is reproducible bit for bit.
#[derive(Debug, Clone)]
pub struct MedianBootstrap {
    n: usize,
    seed: u64,
    pairs: Vec<(u32, u32)>,
}

impl MedianBootstrap {
    /// Draws `resamples` resamples of size `n` (`None` when `n < 2`,
    /// `resamples == 0`, or `n` does not fit in `u32`).
    pub fn new(n: usize, resamples: usize, seed: u64) -> Option<Self> {
        if n < 2 || resamples == 0 || u32::try_from(n).is_err() {
            return None;
        }
        let mut rng = SplitMix64::new(seed);
        let mut counts = vec![0u32; n];
        let mut pairs = Vec::with_capacity(resamples);
        let (want_lo, want_hi) = ((n - 1) / 2, n / 2);
        for _ in 0..resamples {
            counts.iter_mut().for_each(|c| *c = 0);
            for _ in 0..n {
                counts[rng.below(n)] += 1;
            }
            // Walk the cumulative counts to the ranks at positions
            // (n-1)/2 and n/2 of the sorted resample.
            let (mut lo, mut hi, mut seen) = (None, None, 0usize);
            for (rank, &c) in counts.iter().enumerate() {
                seen += c as usize;
                if lo.is_none() && seen > want_lo {
                    lo = Some(rank as u32);
                }
                if seen > want_hi {
                    hi = Some(rank as u32);
                    break;
                }
            }
            let lo = lo.unwrap_or(0);
            pairs.push((lo, hi.unwrap_or(lo)));
        }
        Some(Self { n, seed, pairs })
    }

    /// The sample size this bootstrap was drawn for.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The percentile interval at `level` for sorted values (`None` when the
    /// length differs from `n` or the level is outside (0, 1)).
    pub fn ci(&self, sorted: &[f64], level: f64) -> Option<BootstrapCi> {
        if sorted.len() != self.n || !(level > 0.0 && level < 1.0) {
            return None;
        }
        let mut medians: Vec<f64> = self
            .pairs
            .iter()
            .map(|&(a, b)| sorted[a as usize] / 2.0 + sorted[b as usize] / 2.0)
            .collect();
        let b = medians.len();
        let alpha = (1.0 - level) / 2.0;
        let rank = |q: f64| ((q * (b - 1) as f64).round() as usize).min(b - 1);
        let (lo_rank, hi_rank) = (rank(alpha), rank(1.0 - alpha));
        let low = *medians.select_nth_unstable_by(lo_rank, f64::total_cmp).1;
        let high = *medians.select_nth_unstable_by(hi_rank, f64::total_cmp).1;
        Some(BootstrapCi {
            level,
            low,
            high,
            resamples: b,
            seed: self.seed,
        })
    }
}

/// Bootstraps the median of `values` (any order). See [`MedianBootstrap`].
pub fn bootstrap_median_ci(
    values: &[f64],
    level: f64,
    resamples: usize,
    seed: u64,
) -> Option<BootstrapCi> {
    if values.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    MedianBootstrap::new(values.len(), resamples, seed)?.ci(&sorted, level)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_odd_and_even_samples() {
        let s = Summary::of(&[3.0, 1.0, 2.0, 10.0, 4.0]).expect("non-empty");
        assert_eq!((s.n, s.median, s.min, s.max), (5, 3.0, 1.0, 10.0));
        assert_eq!(s.mad, 1.0); // deviations 0,1,1,2,7 -> 1
        let e = Summary::of(&[1.0, 2.0, 3.0, 4.0]).expect("non-empty");
        assert_eq!(e.median, 2.5);
        assert!(Summary::of(&[]).is_none());
        assert!(Summary::of(&[f64::NAN]).is_none());
    }

    #[test]
    fn bootstrap_is_deterministic_and_brackets_the_median() {
        let v: Vec<f64> = (1..=25).map(f64::from).collect();
        let a = bootstrap_median_ci(&v, 0.95, 500, 7).expect("enough samples");
        let b = bootstrap_median_ci(&v, 0.95, 500, 7).expect("enough samples");
        assert_eq!(a, b);
        assert!(a.low <= 13.0 && 13.0 <= a.high, "{a:?}");
        assert!(bootstrap_median_ci(&[1.0], 0.95, 10, 1).is_none());
        // Constant data has a degenerate interval.
        let c = bootstrap_median_ci(&[2.0; 9], 0.95, 100, 1).expect("enough samples");
        assert_eq!((c.low, c.high), (2.0, 2.0));
    }

    #[test]
    fn rank_pairs_match_a_naive_resample_median() {
        // The rank shortcut must equal sorting an explicit resample.
        let values: Vec<f64> = [5.0, 1.0, 4.0, 2.0, 3.0, 9.0].to_vec();
        let mut sorted = values.clone();
        sorted.sort_by(f64::total_cmp);
        let boot = MedianBootstrap::new(6, 50, 11).expect("valid");
        let mut rng = SplitMix64::new(11);
        for &(a, b) in &boot.pairs {
            let mut draw: Vec<f64> = (0..6).map(|_| sorted[rng.below(6)]).collect();
            draw.sort_by(f64::total_cmp);
            assert_eq!(
                sorted[a as usize] / 2.0 + sorted[b as usize] / 2.0,
                median_sorted(&draw)
            );
        }
    }

    #[test]
    fn splitmix_matches_reference_sequence() {
        // First outputs of SplitMix64 seeded with 0 (published reference values).
        let mut r = SplitMix64::new(0);
        assert_eq!(r.next_u64(), 0xE220_A839_7B1D_CDAF);
        assert_eq!(r.next_u64(), 0x6E78_9E6A_A1B9_65F4);
    }
}
