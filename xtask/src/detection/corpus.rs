//! The labelled synthetic corpus: series of runs, each run a true level,
//! each sample the level times a noise factor. Every series carries its
//! truth (where regressions start and how long they hold), and every batch
//! of samples is drawn from a generator seeded by the series seed, the run
//! and the batch, so the corpus is a pure function of the master seed.

use super::rng::{Rng, derive};

/// Coefficients of variation in the corpus.
pub(crate) const CVS: [f64; 5] = [0.005, 0.01, 0.03, 0.05, 0.10];
/// Step sizes (relative) in the corpus, used in both directions.
pub(crate) const STEPS: [f64; 5] = [0.02, 0.05, 0.10, 0.20, 0.30];
/// Runs of an A/A series.
pub(crate) const AA_RUNS: usize = 100;
/// Runs of a step series, and the run where the step starts.
pub(crate) const STEP_RUNS: usize = 60;
/// Where the (first) change of every series with one starts.
pub(crate) const ONSET: usize = 40;
/// Runs of a slow-drift series and its drift per run.
pub(crate) const DRIFT_RUNS: usize = 100;
/// Level growth per run of a slow-drift series (+0.2%).
pub(crate) const DRIFT_PER_RUN: f64 = 0.002;
/// Two nearby changes: +10% at [`ONSET`], another +10% here.
pub(crate) const SECOND_ONSET: usize = 45;
/// Runs of a two-changes series.
pub(crate) const NEARBY_RUNS: usize = 70;
/// A regression of +20% at [`ONSET`], fixed (back to the old level) here.
pub(crate) const FIX_AT: usize = 55;
/// Runs of a regression-and-fix series.
pub(crate) const FIX_RUNS: usize = 80;
/// Share of samples in the upper mode of the bimodal noise.
pub(crate) const BIMODAL_UPPER: f64 = 0.2;
/// Distance of the upper mode, in CVs.
pub(crate) const BIMODAL_GAP_CVS: f64 = 3.0;
/// Chance that a batch of samples holds an outlier burst.
pub(crate) const BURST_CHANCE: f64 = 0.10;

/// The noise of a sample around its run's level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Noise {
    /// `1 + cv·z`.
    Normal,
    /// Log-normal with mean 1 and the given CV.
    LogNormal,
    /// `1 + cv·t₃/√3`: Student's t with 3 degrees of freedom scaled to the CV.
    StudentT3,
    /// 80% `1 + cv·z`, 20% the same shifted up by 3 CVs.
    Bimodal,
    /// Normal, and one batch in ten has 1–3 samples multiplied by 1.5–3.
    Outliers,
}

impl Noise {
    pub(crate) const ALL: [Noise; 5] = [
        Noise::Normal,
        Noise::LogNormal,
        Noise::StudentT3,
        Noise::Bimodal,
        Noise::Outliers,
    ];

    pub(crate) fn name(self) -> &'static str {
        match self {
            Noise::Normal => "normal",
            Noise::LogNormal => "lognormal",
            Noise::StudentT3 => "student-t3",
            Noise::Bimodal => "bimodal",
            Noise::Outliers => "bursts",
        }
    }
}

/// What a series holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Family {
    /// No change at all.
    AA,
    /// One step of the given signed size at [`ONSET`] (negative: faster).
    Step(f64),
    /// The level grows by [`DRIFT_PER_RUN`] every run.
    Drift,
    /// +10% at [`ONSET`] and +10% more at [`SECOND_ONSET`].
    Nearby,
    /// +20% at [`ONSET`], back at [`FIX_AT`].
    RegressFix,
}

impl Family {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Family::AA => "a/a",
            Family::Step(s) if s > 0.0 => "regression step",
            Family::Step(_) => "improvement step",
            Family::Drift => "slow drift",
            Family::Nearby => "two nearby changes",
            Family::RegressFix => "regression then fix",
        }
    }
}

/// One labelled series.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) family: Family,
    pub(crate) noise: Noise,
    pub(crate) cv: f64,
    pub(crate) runs: usize,
    pub(crate) seed: u64,
}

/// A true regression: the run where it starts and its size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Onset {
    pub(crate) run: usize,
    pub(crate) size: f64,
}

impl Series {
    /// The true level at run `t`.
    pub(crate) fn level(&self, t: usize) -> f64 {
        match self.family {
            Family::AA => 1.0,
            Family::Step(s) => {
                if t >= ONSET {
                    1.0 + s
                } else {
                    1.0
                }
            }
            Family::Drift => 1.0 + DRIFT_PER_RUN * t as f64,
            Family::Nearby => {
                if t >= SECOND_ONSET {
                    1.21
                } else if t >= ONSET {
                    1.1
                } else {
                    1.0
                }
            }
            Family::RegressFix => {
                if (ONSET..FIX_AT).contains(&t) {
                    1.2
                } else {
                    1.0
                }
            }
        }
    }

    /// The true regressions, in order. A slow drift has none: it is scored
    /// on its own.
    pub(crate) fn onsets(&self) -> Vec<Onset> {
        match self.family {
            Family::Step(s) if s > 0.0 => vec![Onset {
                run: ONSET,
                size: s,
            }],
            Family::Nearby => vec![
                Onset {
                    run: ONSET,
                    size: 0.1,
                },
                Onset {
                    run: SECOND_ONSET,
                    size: 0.1,
                },
            ],
            Family::RegressFix => vec![Onset {
                run: ONSET,
                size: 0.2,
            }],
            _ => Vec::new(),
        }
    }

    /// The runs during which the level is above where it started: the
    /// regression episode, `[start, end)`.
    pub(crate) fn episode(&self) -> Option<(usize, usize)> {
        match self.family {
            Family::Step(s) if s > 0.0 => Some((ONSET, self.runs)),
            Family::Nearby => Some((ONSET, self.runs)),
            Family::RegressFix => Some((ONSET, FIX_AT)),
            _ => None,
        }
    }

    /// The `n` first-look samples of run `t`.
    pub(crate) fn samples(&self, t: usize, n: usize) -> Vec<f64> {
        self.batch(t, 0, n)
    }

    /// `k` re-run samples of run `t`: the same level and noise, drawn from
    /// their own stream.
    pub(crate) fn reruns(&self, t: usize, k: usize) -> Vec<f64> {
        self.batch(t, 1, k)
    }

    fn batch(&self, t: usize, stream: u64, k: usize) -> Vec<f64> {
        let mut rng = Rng::new(derive(self.seed, &[t as u64, stream]));
        let level = self.level(t);
        let cv = self.cv;
        let mut out: Vec<f64> = (0..k)
            .map(|_| level * factor(&mut rng, self.noise, cv))
            .collect();
        if self.noise == Noise::Outliers && k > 0 && rng.uniform() < BURST_CHANCE {
            let hits = 1 + rng.below(3);
            for _ in 0..hits {
                let i = rng.below(k);
                out[i] *= 1.5 + 1.5 * rng.uniform();
            }
        }
        out
    }
}

/// One multiplicative noise factor. Additive kinds are floored at 0.05 so
/// that a time is never negative (reached only by the t₃ tail at 10% CV).
fn factor(rng: &mut Rng, noise: Noise, cv: f64) -> f64 {
    let f = match noise {
        Noise::Normal | Noise::Outliers => 1.0 + cv * rng.normal(),
        Noise::LogNormal => {
            let s2 = (1.0 + cv * cv).ln();
            (s2.sqrt() * rng.normal() - s2 / 2.0).exp()
        }
        Noise::StudentT3 => 1.0 + cv * rng.student_t3() / 3f64.sqrt(),
        Noise::Bimodal => {
            let base = 1.0 + cv * rng.normal();
            if rng.uniform() < BIMODAL_UPPER {
                base + BIMODAL_GAP_CVS * cv
            } else {
                base
            }
        }
    };
    f.max(0.05)
}

/// How many series of each family per (noise, CV) cell (and per step size
/// and direction for steps). A/A series are split by CV: the cells at
/// CV <= 3% carry the false-alarm target, so they get more.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    pub(crate) aa_low_cv: usize,
    pub(crate) aa_high_cv: usize,
    pub(crate) regress: usize,
    pub(crate) improve: usize,
    pub(crate) drift: usize,
    pub(crate) nearby: usize,
    pub(crate) fix: usize,
}

impl Spec {
    pub(crate) const DEFAULT: Spec = Spec {
        aa_low_cv: 14,
        aa_high_cv: 4,
        regress: 2,
        improve: 1,
        drift: 1,
        nearby: 2,
        fix: 2,
    };
    pub(crate) const QUICK: Spec = Spec {
        aa_low_cv: 2,
        aa_high_cv: 1,
        regress: 1,
        improve: 0,
        drift: 1,
        nearby: 1,
        fix: 1,
    };
}

/// Every series of the corpus, in a fixed order, seeded from `seed`.
pub(crate) fn build(spec: Spec, seed: u64) -> Vec<Series> {
    let mut out = Vec::new();
    let mut push = |family: Family, noise: Noise, cv: f64, runs: usize, count: usize| {
        for _ in 0..count {
            let id = out.len() as u64;
            out.push(Series {
                family,
                noise,
                cv,
                runs,
                seed: derive(seed, &[id]),
            });
        }
    };
    for noise in Noise::ALL {
        for cv in CVS {
            let aa = if cv <= 0.03 + 1e-12 {
                spec.aa_low_cv
            } else {
                spec.aa_high_cv
            };
            push(Family::AA, noise, cv, AA_RUNS, aa);
            for s in STEPS {
                push(Family::Step(s), noise, cv, STEP_RUNS, spec.regress);
                push(Family::Step(-s), noise, cv, STEP_RUNS, spec.improve);
            }
            push(Family::Drift, noise, cv, DRIFT_RUNS, spec.drift);
            push(Family::Nearby, noise, cv, NEARBY_RUNS, spec.nearby);
            push(Family::RegressFix, noise, cv, FIX_RUNS, spec.fix);
        }
    }
    out
}
