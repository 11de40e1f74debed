//! Change points of a series: e-divisive means over sliding windows, with a
//! deterministic two-sample t-test as the significance test, then a merge
//! pass that drops the weakest points until every one left is significant.
//!
//! The structure is that of Fleming et al., "Hunter: Using Change Point
//! Detection to Hunt for Performance Regressions" (ICPE 2023), as Apache
//! Otava runs it; the divisive step is Matteson and James's e-divisive with
//! exponent 1. Permutation tests are replaced by Student's t-test, so the
//! result is a pure function of the series and the [`Config`].
//!
//! # The algorithm
//!
//! 1. **Split.** Windows of `window` points start at 0 and advance by half a
//!    window, or to the last change point the window found if that is
//!    further. In each window, e-divisive repeatedly takes the split with
//!    the largest statistic Q̂ over all current segments, and keeps it while
//!    the t-test of the two sides of that split, inside its segment, gives
//!    `p <= first_pass_p` ([`Config::first_pass_p`], looser than `max_p`).
//!    The union over windows gives the weak change points.
//! 2. **Merge.** The t-test of every weak point is recomputed between its
//!    neighbours over the whole series. While some point has `p > max_p`,
//!    the one with the largest p is dropped; then, while the smallest
//!    relative change is at most `min_magnitude`, that point is dropped.
//!    After each drop both neighbours are recomputed.
//!
//! Q̂ for a split of segment values into `X` (n values) and `Y` (m values)
//! is `2/(n+m) Σ|x-y| - 2m/((n+m)(n-1)) Σ_{i<k}|x_i-x_k| -
//! 2n/((n+m)(m-1)) Σ_{j<k}|y_j-y_k|` (a within-sum term is 0 when its side
//! has one value), maximised over the split point τ and the end κ of `Y`.
//! It is computed from prefix sums of the window's distance matrix in
//! O(L²) per segment of length L.
//!
//! # Work
//!
//! O(N · window · k) time for N points and k change points per window, and
//! O(window²) memory; `window` is capped at [`MAX_WINDOW`].

use crate::dist::student_t_two_sided;

/// The largest window accepted (the distance table is window² doubles).
pub const MAX_WINDOW: usize = 1000;

/// How the standard deviation of each side is computed for the t-test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spread {
    /// The sample standard deviation (divisor n - 1): Student's test as
    /// textbooks state it.
    Sample,
    /// The population standard deviation (divisor n), fed into the same
    /// pooled formula. This is what Otava does; it makes the test slightly
    /// more eager. For reproducing that peer.
    Population,
}

/// Parameters of [`change_points`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Config {
    /// Points per sliding window, in `2..=MAX_WINDOW`.
    pub window: usize,
    /// Significance level of the final change points, in (0, 1].
    pub max_p: f64,
    /// Change points whose relative change of the mean is at most this are
    /// dropped in the merge (0 keeps every significant point).
    pub min_magnitude: f64,
    /// Standard deviation convention of the t-test.
    pub spread: Spread,
}

impl Default for Config {
    /// Window 50, `max_p` 0.001, no magnitude floor, sample spread.
    fn default() -> Self {
        Self {
            window: 50,
            max_p: 0.001,
            min_magnitude: 0.0,
            spread: Spread::Sample,
        }
    }
}

impl Config {
    /// The looser level of the split pass: 10 × `max_p` below 0.05,
    /// 2 × `max_p` below 0.5, else `max_p` (Otava's rule).
    pub fn first_pass_p(&self) -> f64 {
        if self.max_p < 0.05 {
            self.max_p * 10.0
        } else if self.max_p < 0.5 {
            self.max_p * 2.0
        } else {
            self.max_p
        }
    }
}

/// Why [`change_points`] refused its input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum ChangePointError {
    /// A value of the series is NaN or infinite.
    #[error("series value at index {index} is not finite ({value})")]
    NotFinite {
        /// Position in the series.
        index: usize,
        /// The value.
        value: f64,
    },
    /// The window is outside `2..=MAX_WINDOW`.
    #[error("window {0} is outside 2..={MAX_WINDOW}")]
    Window(usize),
    /// `max_p` is outside (0, 1] or `min_magnitude` is negative or NaN.
    #[error(
        "max_p must be in (0, 1] and min_magnitude at least 0; got {max_p} and {min_magnitude}"
    )]
    Threshold {
        /// The level given.
        max_p: f64,
        /// The magnitude floor given.
        min_magnitude: f64,
    },
}

/// The two-sample t-test of the points before and after a change point.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TTest {
    /// Points before (`len_before`) and from the change point on.
    pub len_before: usize,
    /// Points in the segment that starts at the change point.
    pub len_after: usize,
    /// Mean before.
    pub mean_before: f64,
    /// Mean after.
    pub mean_after: f64,
    /// Standard deviation before, in the [`Spread`] used (0 for one point).
    pub sd_before: f64,
    /// Standard deviation after.
    pub sd_after: f64,
    /// `(mean_after - mean_before) / se` with the pooled variance; 0 when
    /// both means and spreads are equal, infinite when only the spread is 0.
    pub t: f64,
    /// Degrees of freedom, `len_before + len_after - 2`.
    pub df: f64,
    /// Two-sided p-value; 1 when there are fewer than three points.
    pub p: f64,
}

impl TTest {
    /// Student's pooled two-sample t-test of `before` against `after`
    /// (both non-empty).
    pub fn of(before: &[f64], after: &[f64], spread: Spread) -> TTest {
        let (mean_before, sd_before) = mean_sd(before, spread);
        let (mean_after, sd_after) = mean_sd(after, spread);
        let (n1, n2) = (before.len() as f64, after.len() as f64);
        let df = n1 + n2 - 2.0;
        let mut test = TTest {
            len_before: before.len(),
            len_after: after.len(),
            mean_before,
            mean_after,
            sd_before,
            sd_after,
            t: 0.0,
            df,
            p: 1.0,
        };
        if df < 1.0 {
            return test;
        }
        let pooled = ((n1 - 1.0) * sd_before * sd_before + (n2 - 1.0) * sd_after * sd_after) / df;
        let se = (pooled * (1.0 / n1 + 1.0 / n2)).sqrt();
        let diff = mean_after - mean_before;
        if diff == 0.0 {
            return test;
        }
        test.t = diff / se; // ±inf when se is 0
        test.p = student_t_two_sided(test.t, df).unwrap_or(1.0);
        test
    }

    /// The larger of the forward and backward relative change of the mean,
    /// `max(|after/before - 1|, |before/after - 1|)`; a direction whose
    /// denominator is 0 counts as 0 (Otava's convention).
    pub fn magnitude(&self) -> f64 {
        let rel = |num: f64, den: f64| {
            if den == 0.0 {
                0.0
            } else {
                (num / den - 1.0).abs()
            }
        };
        rel(self.mean_after, self.mean_before).max(rel(self.mean_before, self.mean_after))
    }
}

fn mean_sd(values: &[f64], spread: Spread) -> (f64, f64) {
    let n = values.len() as f64;
    let mean = values.iter().sum::<f64>() / n;
    if values.len() < 2 {
        return (mean, 0.0);
    }
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    let divisor = match spread {
        Spread::Sample => n - 1.0,
        Spread::Population => n,
    };
    (mean, (ss / divisor).sqrt())
}

/// One change point of a series.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangePoint {
    /// Index of the first point of the new regime.
    pub index: usize,
    /// The e-divisive statistic Q̂ of the split, as found in its window.
    pub qhat: f64,
    /// The t-test against the neighbouring change points (or the ends).
    pub test: TTest,
}

/// The change points of `series` under `config`, sorted by index.
///
/// Pure and deterministic: the same series and config give the same
/// points. A series shorter than two points has none.
pub fn change_points(
    series: &[f64],
    config: &Config,
) -> Result<Vec<ChangePoint>, ChangePointError> {
    validate(series, config)?;
    Ok(merge(series, weak(series, config), config))
}

/// The weak change points of `series`: the split pass alone, at the looser
/// level [`Config::first_pass_p`], each tested between its neighbours over
/// the whole series. [`change_points`] keeps a subset of these.
pub fn weak_change_points(
    series: &[f64],
    config: &Config,
) -> Result<Vec<ChangePoint>, ChangePointError> {
    validate(series, config)?;
    Ok(weak(series, config))
}

fn validate(series: &[f64], config: &Config) -> Result<(), ChangePointError> {
    if let Some((index, &value)) = series.iter().enumerate().find(|(_, v)| !v.is_finite()) {
        return Err(ChangePointError::NotFinite { index, value });
    }
    if !(2..=MAX_WINDOW).contains(&config.window) {
        return Err(ChangePointError::Window(config.window));
    }
    let level_ok = config.max_p > 0.0 && config.max_p <= 1.0;
    let floor_ok = config.min_magnitude >= 0.0; // false for NaN
    if !(level_ok && floor_ok) {
        return Err(ChangePointError::Threshold {
            max_p: config.max_p,
            min_magnitude: config.min_magnitude,
        });
    }
    Ok(())
}

/// A split point and its Q̂.
#[derive(Debug, Clone, Copy)]
struct Candidate {
    index: usize,
    qhat: f64,
}

/// The split pass: the union of the e-divisive points of each window.
fn split(series: &[f64], config: &Config) -> Vec<Candidate> {
    let n = series.len();
    let step = config.window / 2;
    let mut found: Vec<Candidate> = Vec::new();
    let mut start = 0;
    while start < n {
        let end = (start + config.window).min(n);
        let local = e_divisive(&series[start..end], config.first_pass_p(), config.spread);
        let last = local.last().map_or(0, |c| c.index + start);
        for c in local {
            let index = c.index + start;
            if !found.iter().any(|f| f.index == index) {
                found.push(Candidate {
                    index,
                    qhat: c.qhat,
                });
            }
        }
        start = last.max(start + step);
    }
    found.sort_by_key(|c| c.index);
    found
}

/// The split pass, with each point tested between its neighbours.
fn weak(series: &[f64], config: &Config) -> Vec<ChangePoint> {
    let found = split(series, config);
    let cuts: Vec<usize> = found.iter().map(|c| c.index).collect();
    found
        .iter()
        .enumerate()
        .map(|(i, c)| ChangePoint {
            index: c.index,
            qhat: c.qhat,
            test: test_between(series, &cuts, i, config.spread),
        })
        .collect()
}

/// The merge pass over the weak points (sorted by index).
fn merge(series: &[f64], mut points: Vec<ChangePoint>, config: &Config) -> Vec<ChangePoint> {
    while !points.is_empty() {
        let weakest_p = first_extreme(&points, |p| p.test.p, |a, b| a > b);
        let drop = if points[weakest_p].test.p > config.max_p {
            weakest_p
        } else {
            let smallest = first_extreme(&points, |p| p.test.magnitude(), |a, b| a < b);
            if points[smallest].test.magnitude() > config.min_magnitude {
                break;
            }
            smallest
        };
        points.remove(drop);
        // The points on either side of the gap now span a longer segment.
        let cuts: Vec<usize> = points.iter().map(|p| p.index).collect();
        for i in [drop.wrapping_sub(1), drop] {
            if i < points.len() {
                points[i].test = test_between(series, &cuts, i, config.spread);
            }
        }
    }
    points
}

/// The index of the first point whose key wins under `better`.
fn first_extreme(
    points: &[ChangePoint],
    key: impl Fn(&ChangePoint) -> f64,
    better: impl Fn(f64, f64) -> bool,
) -> usize {
    let mut best = 0;
    for i in 1..points.len() {
        if better(key(&points[i]), key(&points[best])) {
            best = i;
        }
    }
    best
}

/// The t-test at `cuts[i]` between its neighbours (or the series ends).
fn test_between(series: &[f64], cuts: &[usize], i: usize, spread: Spread) -> TTest {
    let lo = if i == 0 { 0 } else { cuts[i - 1] };
    let hi = cuts.get(i + 1).copied().unwrap_or(series.len());
    let at = cuts[i];
    TTest::of(&series[lo..at], &series[at..hi], spread)
}

/// E-divisive over one window: splits while the best split is significant.
fn e_divisive(z: &[f64], level: f64, spread: Spread) -> Vec<Candidate> {
    if z.len() < 2 {
        return Vec::new();
    }
    let table = PrefixDistances::new(z);
    let mut cuts: Vec<Candidate> = Vec::new();
    loop {
        // Segments between the current cuts; the first segment with the
        // largest Q̂ wins.
        let mut bounds: Vec<usize> = Vec::with_capacity(cuts.len() + 2);
        bounds.push(0);
        bounds.extend(cuts.iter().map(|c| c.index));
        bounds.push(z.len());
        let mut best: Option<(Candidate, usize, usize)> = None;
        for pair in bounds.windows(2) {
            let (s, e) = (pair[0], pair[1]);
            if e - s < 2 {
                continue;
            }
            let cand = table.best_split(s, e);
            if best.is_none_or(|(b, _, _)| cand.qhat > b.qhat) {
                best = Some((cand, s, e));
            }
        }
        let Some((cand, s, e)) = best else { break };
        let test = TTest::of(&z[s..cand.index], &z[cand.index..e], spread);
        if test.p > level {
            break;
        }
        let at = cuts.partition_point(|c| c.index < cand.index);
        cuts.insert(at, cand);
    }
    cuts
}

/// Row prefix sums of the distance matrix of a window:
/// `row(i)[j] = Σ_{k<j} |z_i - z_k|`.
struct PrefixDistances {
    len: usize,
    sums: Vec<f64>,
}

impl PrefixDistances {
    fn new(z: &[f64]) -> Self {
        let len = z.len();
        let mut sums = vec![0.0; len * (len + 1)];
        for (i, &zi) in z.iter().enumerate() {
            let row = &mut sums[i * (len + 1)..(i + 1) * (len + 1)];
            for (j, &zj) in z.iter().enumerate() {
                row[j + 1] = row[j] + (zi - zj).abs();
            }
        }
        Self { len, sums }
    }

    /// `Σ_{k in a..b} |z_i - z_k|`.
    fn row_sum(&self, i: usize, a: usize, b: usize) -> f64 {
        let row = i * (self.len + 1);
        self.sums[row + b] - self.sums[row + a]
    }

    /// The τ in `s+1..e` of the largest Q̂ over `κ in τ+1..=e`, for the
    /// segment `s..e` (length at least 2). Ties go to the smallest τ, then
    /// the smallest κ.
    fn best_split(&self, s: usize, e: usize) -> Candidate {
        let mut best = Candidate {
            index: s + 1,
            qhat: f64::NEG_INFINITY,
        };
        // Σ_{s<=i<k<τ} |z_i - z_k|, grown with τ.
        let mut within_x = 0.0;
        for tau in s + 1..e {
            within_x += self.row_sum(tau - 1, s, tau - 1);
            let n = (tau - s) as f64;
            let (mut cross, mut within_y) = (0.0, 0.0);
            for kappa in tau + 1..=e {
                let newest = kappa - 1;
                cross += self.row_sum(newest, s, tau);
                within_y += self.row_sum(newest, tau, newest);
                let m = (kappa - tau) as f64;
                let mut q = 2.0 / (n + m) * cross;
                if n > 1.0 {
                    q -= 2.0 * m / ((n + m) * (n - 1.0)) * within_x;
                }
                if m > 1.0 {
                    q -= 2.0 * n / ((n + m) * (m - 1.0)) * within_y;
                }
                if q > best.qhat {
                    best = Candidate {
                        index: tau,
                        qhat: q,
                    };
                }
            }
        }
        best
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Q̂ of one split, from the definition.
    fn qhat_direct(x: &[f64], y: &[f64]) -> f64 {
        let (n, m) = (x.len() as f64, y.len() as f64);
        let cross: f64 = x
            .iter()
            .flat_map(|a| y.iter().map(move |b| (a - b).abs()))
            .sum();
        let within = |v: &[f64]| -> f64 {
            let mut s = 0.0;
            for i in 0..v.len() {
                for k in i + 1..v.len() {
                    s += (v[i] - v[k]).abs();
                }
            }
            s
        };
        let mut q = 2.0 / (n + m) * cross;
        if x.len() > 1 {
            q -= 2.0 * m / ((n + m) * (n - 1.0)) * within(x);
        }
        if y.len() > 1 {
            q -= 2.0 * n / ((n + m) * (m - 1.0)) * within(y);
        }
        q
    }

    #[test]
    fn best_split_matches_the_definition() {
        let z = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0, 5.0, 3.0, 5.0, 8.0];
        let table = PrefixDistances::new(&z);
        for (s, e) in [(0, z.len()), (2, 9), (5, 7)] {
            let mut want = Candidate {
                index: 0,
                qhat: f64::NEG_INFINITY,
            };
            for tau in s + 1..e {
                for kappa in tau + 1..=e {
                    let q = qhat_direct(&z[s..tau], &z[tau..kappa]);
                    if q > want.qhat + 1e-12 {
                        want = Candidate {
                            index: tau,
                            qhat: q,
                        };
                    }
                }
            }
            let got = table.best_split(s, e);
            assert_eq!(got.index, want.index, "segment {s}..{e}");
            assert!(
                (got.qhat - want.qhat).abs() < 1e-9,
                "{} vs {}",
                got.qhat,
                want.qhat
            );
        }
    }

    #[test]
    fn t_test_edge_cases() {
        let t = TTest::of(&[1.0], &[2.0], Spread::Sample);
        assert_eq!((t.p, t.t), (1.0, 0.0));
        let t = TTest::of(&[1.0, 1.0], &[2.0, 2.0], Spread::Sample);
        assert_eq!((t.p, t.t), (0.0, f64::INFINITY));
        let t = TTest::of(&[1.0, 1.0], &[1.0, 1.0, 1.0], Spread::Sample);
        assert_eq!((t.p, t.t), (1.0, 0.0));
        assert_eq!(TTest::of(&[0.0], &[5.0], Spread::Sample).magnitude(), 1.0);
        assert_eq!(TTest::of(&[2.0], &[3.0], Spread::Sample).magnitude(), 0.5);
    }

    #[test]
    fn config_is_validated() {
        let bad = |c: Config| change_points(&[1.0, 2.0], &c).is_err();
        let d = Config::default();
        assert!(bad(Config { window: 1, ..d }));
        assert!(bad(Config {
            window: MAX_WINDOW + 1,
            ..d
        }));
        assert!(bad(Config { max_p: 0.0, ..d }));
        assert!(bad(Config {
            max_p: f64::NAN,
            ..d
        }));
        assert!(bad(Config {
            min_magnitude: -1.0,
            ..d
        }));
        assert!(matches!(
            change_points(&[1.0, f64::NAN], &d),
            Err(ChangePointError::NotFinite { index: 1, .. })
        ));
        assert!(change_points(&[], &d).expect("valid").is_empty());
        assert!(change_points(&[1.0], &d).expect("valid").is_empty());
        assert_eq!(Config { max_p: 0.001, ..d }.first_pass_p(), 0.01);
        assert_eq!(Config { max_p: 0.1, ..d }.first_pass_p(), 0.2);
        assert_eq!(Config { max_p: 0.6, ..d }.first_pass_p(), 0.6);
    }
}
