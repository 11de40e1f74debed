//! The Mann-Whitney U (Wilcoxon rank-sum) test of two independent samples.
//!
//! The statistic is the U of the first sample `x`: the number of pairs
//! `(x_i, y_j)` with `x_i > y_j`, plus one half for every tied pair. It is
//! the `W` of R's `wilcox.test(x, y)` and the statistic SciPy's
//! `mannwhitneyu(x, y)` returns.
//!
//! Two ways to get the p-value:
//!
//! - **Exact**: the null distribution of U without ties, counted exactly in
//!   integers as the coefficients of the Gaussian binomial coefficient
//!   `[n+m choose n]_q`. Used by [`Method::Auto`] when there are no ties and
//!   both samples are smaller than [`EXACT_LIMIT`] (R's rule).
//! - **Normal**: the normal approximation with the tie-corrected variance and
//!   a continuity correction of one half, as R and SciPy compute it.
//!
//! One-sided p-values are given for both directions: `p_greater` is for the
//! alternative that `x` tends to be larger than `y`, `p_less` for smaller.

use crate::dist::{normal_cdf, normal_sf};

/// [`Method::Auto`] computes the exact distribution only when both sample
/// sizes are below this limit and there are no ties.
pub const EXACT_LIMIT: usize = 50;

/// How to compute the p-value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Exact when there are no ties and both sizes are below
    /// [`EXACT_LIMIT`]; the normal approximation otherwise.
    Auto,
    /// The exact null distribution. Refused (the test returns `None`) when
    /// there are ties or either size reaches [`EXACT_LIMIT`].
    Exact,
    /// The normal approximation with tie and continuity corrections.
    Normal,
}

/// Which computation produced the p-values of a [`MannWhitney`] result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Used {
    /// The exact null distribution (no ties).
    Exact,
    /// The normal approximation; `z` is the continuity-corrected score.
    Normal {
        /// `(U - nm/2 - sign * 1/2) / sd`, the score of the two-sided test.
        z: f64,
    },
}

/// The outcome of a Mann-Whitney U test.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MannWhitney {
    /// U of the first sample: pairs with `x > y`, plus half the tied pairs.
    pub u: f64,
    /// Size of the first sample.
    pub n_x: usize,
    /// Size of the second sample.
    pub n_y: usize,
    /// Whether any value occurs more than once in the pooled sample.
    pub ties: bool,
    /// The computation used.
    pub used: Used,
    /// Two-sided p-value, at most 1.
    pub p_two_sided: f64,
    /// One-sided p-value for "x tends to be larger than y".
    pub p_greater: f64,
    /// One-sided p-value for "x tends to be smaller than y".
    pub p_less: f64,
}

/// Runs the test with [`Method::Auto`]. See [`mann_whitney_with`].
pub fn mann_whitney(x: &[f64], y: &[f64]) -> Option<MannWhitney> {
    mann_whitney_with(x, y, Method::Auto)
}

/// Runs the test. `None` when a sample is empty, a value is not finite, or
/// [`Method::Exact`] is asked for where it does not apply.
///
/// Work is O((n+m) log(n+m)) for the ranks, plus O(min(n,m)² · max(n,m))
/// integer steps for an exact distribution (bounded by [`EXACT_LIMIT`]).
pub fn mann_whitney_with(x: &[f64], y: &[f64], method: Method) -> Option<MannWhitney> {
    let (n_x, n_y) = (x.len(), y.len());
    if n_x == 0 || n_y == 0 || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let ranks = RankSums::of(x, y);
    let u = ranks.rank_sum_x - (n_x as f64) * (n_x as f64 + 1.0) / 2.0;
    let ties = ranks.tie_term > 0.0;
    let small = n_x < EXACT_LIMIT && n_y < EXACT_LIMIT;
    let exact = match method {
        Method::Auto => !ties && small,
        Method::Exact if ties || !small => return None,
        Method::Exact => true,
        Method::Normal => false,
    };
    let (used, p_greater, p_less, p_two_sided) = if exact {
        // Without ties U is an integer in 0..=n*m.
        let (le, ge) = exact_tails(n_x, n_y, u.round() as usize);
        (Used::Exact, ge, le, (2.0 * le.min(ge)).min(1.0))
    } else {
        normal_tails(u, n_x, n_y, ranks.tie_term)
    };
    Some(MannWhitney {
        u,
        n_x,
        n_y,
        ties,
        used,
        p_two_sided,
        p_greater,
        p_less,
    })
}

/// The rank sum of `x` in the pooled sample (mid-ranks for ties) and the
/// tie term `Σ (t³ - t)` over groups of `t` equal values.
struct RankSums {
    rank_sum_x: f64,
    tie_term: f64,
}

impl RankSums {
    fn of(x: &[f64], y: &[f64]) -> Self {
        let mut pooled: Vec<(f64, bool)> = x
            .iter()
            .map(|&v| (v, true))
            .chain(y.iter().map(|&v| (v, false)))
            .collect();
        pooled.sort_by(|a, b| a.0.total_cmp(&b.0));
        let (mut rank_sum_x, mut tie_term) = (0.0, 0.0);
        let mut start = 0;
        while start < pooled.len() {
            // -0.0 and 0.0 are one value here, as they compare equal.
            let mut end = start + 1;
            while end < pooled.len() && pooled[end].0 == pooled[start].0 {
                end += 1;
            }
            let t = (end - start) as f64;
            // Ranks start + 1 ..= end share their mean.
            let mid = (start + 1 + end) as f64 / 2.0;
            let in_x = pooled[start..end].iter().filter(|p| p.1).count();
            rank_sum_x += mid * in_x as f64;
            tie_term += t * t * t - t;
            start = end;
        }
        Self {
            rank_sum_x,
            tie_term,
        }
    }
}

/// The null counts of U for sizes `n` and `m` without ties: entry `k` is the
/// number of orderings of the pooled sample in which U equals `k`, out of
/// `C(n+m, n)`.
///
/// These are the coefficients of `Π_{i=1..n} (1 - q^(m+i)) / (1 - q^i)`,
/// built one factor at a time. Every partial product is itself a Gaussian
/// binomial coefficient, so the division is exact; i128 holds every count for
/// `n + m <= 2 * (EXACT_LIMIT - 1)` (C(98, 49) < 2^95).
pub fn exact_counts(n: usize, m: usize) -> Vec<i128> {
    let (n, m) = (n.min(m), n.max(m));
    let top = n * m;
    let mut c = vec![0i128; top + n + 1];
    c[0] = 1;
    for i in 1..=n {
        let shift = m + i;
        for k in (shift..c.len()).rev() {
            c[k] -= c[k - shift];
        }
        for k in i..c.len() {
            c[k] += c[k - i];
        }
    }
    c.truncate(top + 1);
    c
}

/// `(P(U <= u), P(U >= u))` under the exact null distribution.
fn exact_tails(n: usize, m: usize, u: usize) -> (f64, f64) {
    let counts = exact_counts(n, m);
    let total: i128 = counts.iter().sum();
    let u = u.min(counts.len() - 1);
    let le: i128 = counts[..=u].iter().sum();
    let ge: i128 = counts[u..].iter().sum();
    (ratio(le, total), ratio(ge, total))
}

/// `a / b` for counts, rounded once. Both convert to f64 with relative error
/// below 2^-53, which is far inside any use of a p-value.
fn ratio(a: i128, b: i128) -> f64 {
    (a as f64 / b as f64).min(1.0)
}

/// `(used, p_greater, p_less, p_two_sided)` under the normal approximation.
fn normal_tails(u: f64, n: usize, m: usize, tie_term: f64) -> (Used, f64, f64, f64) {
    let (nf, mf) = (n as f64, m as f64);
    let total = nf + mf;
    let mean = nf * mf / 2.0;
    let var = if total > 1.0 {
        nf * mf / 12.0 * ((total + 1.0) - tie_term / (total * (total - 1.0)))
    } else {
        0.0
    };
    if var <= 0.0 {
        // Every value equal: no evidence either way.
        return (Used::Normal { z: 0.0 }, 1.0, 1.0, 1.0);
    }
    let sd = var.sqrt();
    let d = u - mean;
    let correction = if d > 0.0 {
        0.5
    } else if d < 0.0 {
        -0.5
    } else {
        0.0
    };
    let z = (d - correction) / sd;
    let p_greater = normal_sf((d - 0.5) / sd);
    let p_less = normal_cdf((d + 0.5) / sd);
    let p_two = (2.0 * normal_sf((d.abs() - 0.5) / sd)).min(1.0);
    (Used::Normal { z }, p_greater, p_less, p_two)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binomial(n: u32, k: u32) -> i128 {
        (0..k).fold(1i128, |acc, i| acc * i128::from(n - i) / i128::from(i + 1))
    }

    #[test]
    fn exact_counts_sum_to_the_binomial_and_are_symmetric() {
        for (n, m) in [(1, 1), (2, 3), (5, 4), (10, 12), (49, 49)] {
            let c = exact_counts(n, m);
            assert_eq!(c.len(), n * m + 1);
            assert_eq!(c.iter().sum::<i128>(), binomial((n + m) as u32, n as u32));
            assert!(c.iter().all(|&v| v > 0));
            let rev: Vec<i128> = c.iter().rev().copied().collect();
            assert_eq!(c, rev, "n={n} m={m}");
        }
        // Sizes 2 and 2: U takes 0,1,2,3,4 in 1,1,2,1,1 of the 6 orderings.
        assert_eq!(exact_counts(2, 2), vec![1, 1, 2, 1, 1]);
    }

    #[test]
    fn u_counts_pairs_and_half_ties() {
        let r = mann_whitney(&[1.0, 2.0, 3.0], &[0.5, 2.0]).expect("valid");
        // Pairs x > y: (1,.5) (2,.5) (3,.5) (3,2) = 4, one tie (2,2) = 0.5.
        assert_eq!(r.u, 4.5);
        assert!(r.ties);
        assert!(matches!(r.used, Used::Normal { .. }));
    }

    #[test]
    fn exact_is_refused_with_ties_or_large_samples() {
        assert!(mann_whitney_with(&[1.0, 1.0], &[2.0], Method::Exact).is_none());
        let big: Vec<f64> = (0..50).map(f64::from).collect();
        assert!(mann_whitney_with(&big, &[100.0], Method::Exact).is_none());
        let r = mann_whitney(&big, &[100.0]).expect("valid");
        assert!(matches!(r.used, Used::Normal { .. }));
    }

    #[test]
    fn bad_input_gives_none() {
        assert!(mann_whitney(&[], &[1.0]).is_none());
        assert!(mann_whitney(&[1.0], &[]).is_none());
        assert!(mann_whitney(&[f64::NAN], &[1.0]).is_none());
        assert!(mann_whitney(&[1.0], &[f64::INFINITY]).is_none());
    }

    #[test]
    fn all_equal_values_give_p_one() {
        let r = mann_whitney(&[3.0; 4], &[3.0; 5]).expect("valid");
        assert_eq!((r.p_two_sided, r.p_greater, r.p_less), (1.0, 1.0, 1.0));
    }
}
