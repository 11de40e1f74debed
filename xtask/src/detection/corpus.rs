//! The labelled synthetic corpus: series of lane runs of one case, each run
//! a session on a machine whose speed shifts between sessions, each sample
//! the true level of the measured commit times the session's factor times
//! a noise factor inside the session. Every series carries its truth (the
//! commits that changed the level, how much, and for how long), and every
//! batch of samples is drawn from a generator seeded by the series seed,
//! the run and the stream, so the corpus is a pure function of the master
//! seed.
//!
//! Every sample measured in a session (the first look, the stored-baseline
//! re-runs, both sides of a same-session comparison, the steps of a
//! bisection) is multiplied by that session's factor: re-runs in a shifted
//! session confirm the shift, and an A/B comparison cancels it.

use super::rng::{Rng, derive};

/// Coefficients of variation inside a session. 0 is a session without
/// independent noise: every sample of a commit in one session is the same.
pub(crate) const CVS: [f64; 6] = [0.0, 0.005, 0.01, 0.03, 0.05, 0.10];
/// Step sizes (relative) in the corpus, used in both directions.
pub(crate) const STEPS: [f64; 5] = [0.02, 0.05, 0.10, 0.20, 0.30];
/// Level growth per run of a slow code drift (+0.2%).
pub(crate) const DRIFT_PER_RUN: f64 = 0.002;
/// Share of samples in the upper mode of the bimodal noise.
pub(crate) const BIMODAL_UPPER: f64 = 0.2;
/// Distance of the upper mode, in CVs.
pub(crate) const BIMODAL_GAP_CVS: f64 = 3.0;
/// Chance that a batch of samples holds an outlier burst.
pub(crate) const BURST_CHANCE: f64 = 0.10;
/// Commits between two lane runs: run `t` measures commit `t · 8`, and a
/// change that shows first at run `t` was made by one of the commits
/// `(t − 1)·8 + 1 ..= t·8`.
pub(crate) const COMMITS_PER_RUN: usize = 8;
/// The slow drift of the machine: its speed follows `1 + 3% · sin(2π t /
/// 60 + φ)` over the sessions, with a random phase per series (at most
/// about 0.3% from one session to the next), times a session factor of CV
/// 1%.
pub(crate) const MACHINE_DRIFT_AMPLITUDE: f64 = 0.03;
/// Sessions per period of the machine's drift.
pub(crate) const MACHINE_DRIFT_PERIOD: f64 = 60.0;
/// The session CV on top of the machine's drift.
pub(crate) const MACHINE_DRIFT_SESSION_CV: f64 = 0.01;

/// Stream labels of a run's batches.
const STREAM_FIRST_LOOK: u64 = 0;
const STREAM_RERUNS: u64 = 1;
const STREAM_SIDE_A: u64 = 2;
const STREAM_SIDE_B: u64 = 3;
const STREAM_SESSION: u64 = 4;
const STREAM_BISECT: u64 = 5;
const STREAM_CULPRITS: u64 = 6;
const STREAM_PHASE: u64 = 7;

/// The noise of a sample around its session's level.
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

/// How the machine's speed moves between sessions (lane runs).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Session {
    /// Every session runs at the same speed (the corpus before sessions
    /// were modelled).
    Stable,
    /// Each session's samples are all multiplied by one log-normal factor
    /// of mean 1 and this CV.
    Shift(f64),
    /// The machine drifts slowly ([`MACHINE_DRIFT_AMPLITUDE`] over
    /// [`MACHINE_DRIFT_PERIOD`] sessions) and each session shifts by a
    /// factor of CV [`MACHINE_DRIFT_SESSION_CV`] on top.
    Drift,
}

impl Session {
    pub(crate) const ALL: [Session; 5] = [
        Session::Stable,
        Session::Shift(0.01),
        Session::Shift(0.02),
        Session::Shift(0.03),
        Session::Drift,
    ];

    pub(crate) fn name(self) -> String {
        match self {
            Session::Stable => "none".into(),
            Session::Shift(cv) => format!("cv {}%", cv * 100.0),
            Session::Drift => "drift".into(),
        }
    }

    /// Index in [`Session::ALL`].
    pub(crate) fn index(self) -> usize {
        Session::ALL.iter().position(|s| *s == self).unwrap_or(0)
    }

    /// The factor of the session drawn from `seed` (its own stream), at
    /// session number `t` of a series whose machine drift has phase `phase`.
    pub(crate) fn factor(self, seed: u64, t: usize, phase: f64) -> f64 {
        let lognormal = |cv: f64| {
            let mut rng = Rng::new(seed);
            let s2 = (1.0 + cv * cv).ln();
            (s2.sqrt() * rng.normal() - s2 / 2.0).exp()
        };
        match self {
            Session::Stable => 1.0,
            Session::Shift(cv) => lognormal(cv),
            Session::Drift => {
                let angle = std::f64::consts::TAU * t as f64 / MACHINE_DRIFT_PERIOD + phase;
                (1.0 + MACHINE_DRIFT_AMPLITUDE * angle.sin()) * lognormal(MACHINE_DRIFT_SESSION_CV)
            }
        }
    }
}

/// What a series holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Family {
    /// No change at all.
    AA,
    /// One step of the given signed size at the onset (negative: faster).
    Step(f64),
    /// The level grows by [`DRIFT_PER_RUN`] every run (a slow code drift).
    Drift,
    /// +10% at the onset and +10% more five runs later.
    Nearby,
    /// +20% at the onset, back to the old level fifteen runs later.
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

/// Where the changes of a family fall and how long its series are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Shape {
    /// The run where the (first) change shows.
    pub(crate) onset: usize,
    /// The second change of the two-nearby series.
    pub(crate) second: usize,
    /// The run where a regression-then-fix series is fixed.
    pub(crate) fix: usize,
    pub(crate) aa_runs: usize,
    pub(crate) step_runs: usize,
    pub(crate) drift_runs: usize,
    pub(crate) nearby_runs: usize,
    pub(crate) fix_runs: usize,
}

/// The series of every cell: 20 runs before the change (enough for every
/// rule, Perfherder's 12-run windows included), 15 after a step, a second
/// change 5 runs after the first, a fix 15 runs after the regression and
/// 15 runs after the fix; A/A series of 100 runs.
pub(crate) const SHAPE: Shape = Shape {
    onset: 20,
    second: 25,
    fix: 35,
    aa_runs: 100,
    step_runs: 35,
    drift_runs: 60,
    nearby_runs: 40,
    fix_runs: 50,
};

/// One labelled series.
#[derive(Debug, Clone)]
pub(crate) struct Series {
    pub(crate) family: Family,
    pub(crate) noise: Noise,
    pub(crate) cv: f64,
    pub(crate) session: Session,
    pub(crate) shape: Shape,
    pub(crate) runs: usize,
    pub(crate) seed: u64,
    /// Commits that change the level, in order: (commit, new level).
    changes: Vec<(usize, f64)>,
    /// Phase of the machine's drift.
    phase: f64,
}

/// A true regression: the run where it starts and its size.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Onset {
    pub(crate) run: usize,
    pub(crate) size: f64,
}

/// The samples of one commit in one session: `k` draws of `level · session
/// · noise` from the generator seeded with `seed`.
pub(crate) fn draw(
    seed: u64,
    level: f64,
    session: f64,
    noise: Noise,
    cv: f64,
    k: usize,
) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let mut out: Vec<f64> = (0..k)
        .map(|_| level * session * factor(&mut rng, noise, cv))
        .collect();
    if noise == Noise::Outliers && k > 0 && rng.uniform() < BURST_CHANCE {
        let hits = 1 + rng.below(3);
        for _ in 0..hits {
            let i = rng.below(k);
            out[i] *= 1.5 + 1.5 * rng.uniform();
        }
    }
    out
}

impl Series {
    pub(crate) fn new(
        family: Family,
        noise: Noise,
        cv: f64,
        session: Session,
        shape: Shape,
        seed: u64,
    ) -> Series {
        let runs = match family {
            Family::AA => shape.aa_runs,
            Family::Step(_) => shape.step_runs,
            Family::Drift => shape.drift_runs,
            Family::Nearby => shape.nearby_runs,
            Family::RegressFix => shape.fix_runs,
        };
        // The commit inside a run's range that made each change.
        let mut rng = Rng::new(derive(seed, &[STREAM_CULPRITS]));
        let mut at = |run: usize| (run - 1) * COMMITS_PER_RUN + 1 + rng.below(COMMITS_PER_RUN);
        let changes = match family {
            Family::AA | Family::Drift => Vec::new(),
            Family::Step(s) => vec![(at(shape.onset), 1.0 + s)],
            Family::Nearby => vec![(at(shape.onset), 1.1), (at(shape.second), 1.21)],
            Family::RegressFix => vec![(at(shape.onset), 1.2), (at(shape.fix), 1.0)],
        };
        let phase = Rng::new(derive(seed, &[STREAM_PHASE])).uniform() * std::f64::consts::TAU;
        Series {
            family,
            noise,
            cv,
            session,
            shape,
            runs,
            seed,
            changes,
            phase,
        }
    }

    /// The commit run `t` measures.
    pub(crate) fn commit_of(t: usize) -> usize {
        t * COMMITS_PER_RUN
    }

    /// The true level of `commit`.
    pub(crate) fn level_of_commit(&self, commit: usize) -> f64 {
        if self.family == Family::Drift {
            return 1.0 + DRIFT_PER_RUN * commit as f64 / COMMITS_PER_RUN as f64;
        }
        self.changes
            .iter()
            .take_while(|(c, _)| *c <= commit)
            .last()
            .map_or(1.0, |(_, l)| *l)
    }

    /// The true level at run `t`.
    #[cfg(test)]
    pub(crate) fn level(&self, t: usize) -> f64 {
        self.level_of_commit(Self::commit_of(t))
    }

    /// The commits that made the level worse (the culprits to find).
    pub(crate) fn culprits(&self) -> Vec<usize> {
        let mut prev = 1.0;
        let mut out = Vec::new();
        for &(c, l) in &self.changes {
            if l > prev {
                out.push(c);
            }
            prev = l;
        }
        out
    }

    /// The true regressions, in order. A slow drift has none: it is scored
    /// on its own.
    pub(crate) fn onsets(&self) -> Vec<Onset> {
        let sh = self.shape;
        match self.family {
            Family::Step(s) if s > 0.0 => vec![Onset {
                run: sh.onset,
                size: s,
            }],
            Family::Nearby => vec![
                Onset {
                    run: sh.onset,
                    size: 0.1,
                },
                Onset {
                    run: sh.second,
                    size: 0.1,
                },
            ],
            Family::RegressFix => vec![Onset {
                run: sh.onset,
                size: 0.2,
            }],
            _ => Vec::new(),
        }
    }

    /// The runs during which the level is above where it started: the
    /// regression episode, `[start, end)`.
    pub(crate) fn episode(&self) -> Option<(usize, usize)> {
        let sh = self.shape;
        match self.family {
            Family::Step(s) if s > 0.0 => Some((sh.onset, self.runs)),
            Family::Nearby => Some((sh.onset, self.runs)),
            Family::RegressFix => Some((sh.onset, sh.fix)),
            _ => None,
        }
    }

    /// The run where the regression is fixed, for a series that has one.
    pub(crate) fn fix_run(&self) -> Option<usize> {
        (self.family == Family::RegressFix).then_some(self.shape.fix)
    }

    /// The factor of session `t`.
    pub(crate) fn session_factor(&self, t: usize) -> f64 {
        self.session.factor(
            derive(self.seed, &[t as u64, STREAM_SESSION]),
            t,
            self.phase,
        )
    }

    fn batch(&self, t: usize, commit: usize, stream: &[u64], k: usize) -> Vec<f64> {
        let mut parts = vec![t as u64];
        parts.extend_from_slice(stream);
        draw(
            derive(self.seed, &parts),
            self.level_of_commit(commit),
            self.session_factor(t),
            self.noise,
            self.cv,
            k,
        )
    }

    /// The `n` first-look samples of run `t`.
    pub(crate) fn samples(&self, t: usize, n: usize) -> Vec<f64> {
        self.batch(t, Self::commit_of(t), &[STREAM_FIRST_LOOK], n)
    }

    /// `k` re-run samples of run `t` (the stored-baseline confirmation):
    /// the same commit in the same session, from their own stream.
    pub(crate) fn reruns(&self, t: usize, k: usize) -> Vec<f64> {
        self.batch(t, Self::commit_of(t), &[STREAM_RERUNS], k)
    }

    /// `k` samples of the baseline commit `commit` (side A) measured in
    /// session `t`.
    pub(crate) fn side_a(&self, t: usize, commit: usize, k: usize) -> Vec<f64> {
        self.batch(t, commit, &[STREAM_SIDE_A], k)
    }

    /// `k` samples of the candidate of run `t` (side B), measured again in
    /// its session next to side A.
    pub(crate) fn side_b(&self, t: usize, k: usize) -> Vec<f64> {
        self.batch(t, Self::commit_of(t), &[STREAM_SIDE_B], k)
    }

    /// `k` samples of `commit` in step `step` of the bisection started at
    /// run `t`; `role` 0, 1, 2 is the good bound, the midpoint and the bad
    /// bound. Each step is a session of its own.
    pub(crate) fn bisect_samples(
        &self,
        t: usize,
        step: usize,
        role: usize,
        commit: usize,
        k: usize,
    ) -> Vec<f64> {
        let sf = self.session.factor(
            derive(self.seed, &[t as u64, STREAM_BISECT, step as u64]),
            t,
            self.phase,
        );
        draw(
            derive(
                self.seed,
                &[t as u64, STREAM_BISECT, step as u64, role as u64 + 1],
            ),
            self.level_of_commit(commit),
            sf,
            self.noise,
            self.cv,
            k,
        )
    }
}

/// One multiplicative noise factor. Additive kinds are floored at 0.05 so
/// that a time is never negative (reached only by the t₃ tail at 10% CV).
pub(crate) fn factor(rng: &mut Rng, noise: Noise, cv: f64) -> f64 {
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

/// How many series of each family per cell (and per step size and
/// direction for steps). A/A series are split by CV inside the session:
/// the cells at CV ≤ 3% carry the false-alarm target, so they get more.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Counts {
    /// Step sizes of the step series.
    pub(crate) steps: &'static [f64],
    pub(crate) aa_low_cv: usize,
    pub(crate) aa_high_cv: usize,
    pub(crate) regress: usize,
    pub(crate) improve: usize,
    pub(crate) drift: usize,
    pub(crate) nearby: usize,
    pub(crate) fix: usize,
}

/// The corpus: the stable-machine part (every noise kind at every CV of
/// 0.5–10%) and the shifting-machine part (each session condition of
/// `sessions` with the cells of [`session_cells`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Spec {
    pub(crate) stable: Counts,
    pub(crate) shifting: Counts,
    /// The shifting-machine conditions in the corpus.
    pub(crate) sessions: &'static [Session],
    /// Runs of an A/A series.
    pub(crate) aa_runs: usize,
}

impl Spec {
    pub(crate) const DEFAULT: Spec = Spec {
        stable: Counts {
            steps: &STEPS,
            aa_low_cv: 3,
            aa_high_cv: 1,
            regress: 1,
            improve: 1,
            drift: 1,
            nearby: 1,
            fix: 1,
        },
        shifting: Counts {
            steps: &STEPS,
            aa_low_cv: 4,
            aa_high_cv: 2,
            regress: 2,
            improve: 1,
            drift: 1,
            nearby: 1,
            fix: 3,
        },
        sessions: &[
            Session::Shift(0.01),
            Session::Shift(0.02),
            Session::Shift(0.03),
            Session::Drift,
        ],
        aa_runs: 100,
    };
    pub(crate) const QUICK: Spec = Spec {
        stable: Counts {
            steps: &[],
            aa_low_cv: 1,
            aa_high_cv: 0,
            regress: 0,
            improve: 0,
            drift: 0,
            nearby: 0,
            fix: 0,
        },
        shifting: Counts {
            steps: &[0.10, 0.20],
            aa_low_cv: 1,
            aa_high_cv: 0,
            regress: 1,
            improve: 0,
            drift: 0,
            nearby: 0,
            fix: 1,
        },
        sessions: &[Session::Shift(0.03), Session::Drift],
        aa_runs: 50,
    };
}

/// The cells (noise kind inside a session, CV) of each shifting-machine
/// condition: no noise inside the session, normal noise at 1%, 3% and 5%,
/// and every other kind at 3%.
pub(crate) fn session_cells() -> Vec<(Noise, f64)> {
    let mut out = vec![
        (Noise::Normal, 0.0),
        (Noise::Normal, 0.01),
        (Noise::Normal, 0.03),
    ];
    out.extend(
        Noise::ALL
            .iter()
            .filter(|n| **n != Noise::Normal)
            .map(|&n| (n, 0.03)),
    );
    out.push((Noise::Normal, 0.05));
    out
}

/// Every series of the corpus, in a fixed order, seeded from `seed`.
pub(crate) fn build(spec: Spec, seed: u64) -> Vec<Series> {
    let shape = Shape {
        aa_runs: spec.aa_runs,
        ..SHAPE
    };
    let mut out = Vec::new();
    let mut cell = |noise: Noise, cv: f64, session: Session, c: Counts| {
        let mut push = |family: Family, count: usize| {
            for _ in 0..count {
                let id = out.len() as u64;
                out.push(Series::new(
                    family,
                    noise,
                    cv,
                    session,
                    shape,
                    derive(seed, &[id]),
                ));
            }
        };
        let aa = if cv <= 0.03 + 1e-12 {
            c.aa_low_cv
        } else {
            c.aa_high_cv
        };
        push(Family::AA, aa);
        for &s in c.steps {
            push(Family::Step(s), c.regress);
            push(Family::Step(-s), c.improve);
        }
        push(Family::Drift, c.drift);
        push(Family::Nearby, c.nearby);
        push(Family::RegressFix, c.fix);
    };
    for noise in Noise::ALL {
        for cv in CVS.into_iter().filter(|&c| c > 0.0) {
            cell(noise, cv, Session::Stable, spec.stable);
        }
    }
    for &session in spec.sessions {
        for (noise, cv) in session_cells() {
            cell(noise, cv, session, spec.shifting);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_factor_moves_every_sample_of_the_session_alike() {
        let s = Series::new(
            Family::AA,
            Noise::Normal,
            0.0,
            Session::Shift(0.03),
            SHAPE,
            11,
        );
        // No noise inside the session: the first look, the re-runs and both
        // sides of run 7 are all the session's factor.
        let f = s.session_factor(7);
        assert_ne!(f, 1.0);
        for v in s
            .samples(7, 5)
            .into_iter()
            .chain(s.reruns(7, 5))
            .chain(s.side_a(7, 0, 5))
            .chain(s.side_b(7, 5))
        {
            assert_eq!(v, f);
        }
        assert_ne!(s.session_factor(8), f);
        // Seeded: the same series draws the same samples.
        assert_eq!(
            s.samples(3, 4),
            Series::new(
                Family::AA,
                Noise::Normal,
                0.0,
                Session::Shift(0.03),
                SHAPE,
                11
            )
            .samples(3, 4)
        );
    }

    #[test]
    fn a_change_is_made_by_one_commit_inside_its_run() {
        let s = Series::new(
            Family::Step(0.1),
            Noise::Normal,
            0.01,
            Session::Stable,
            SHAPE,
            5,
        );
        let culprits = s.culprits();
        assert_eq!(culprits.len(), 1);
        let c = culprits[0];
        let on = SHAPE.onset;
        assert!(c > Series::commit_of(on - 1) && c <= Series::commit_of(on));
        assert_eq!(s.level_of_commit(c - 1), 1.0);
        assert_eq!(s.level_of_commit(c), 1.1);
        assert_eq!(s.level(on - 1), 1.0);
        assert_eq!(s.level(on), 1.1);
        let fix = Series::new(
            Family::RegressFix,
            Noise::Normal,
            0.01,
            Session::Stable,
            SHAPE,
            5,
        );
        assert_eq!(fix.culprits().len(), 1, "the fix is not a culprit");
        assert_eq!(fix.level(SHAPE.fix), 1.0);
        assert_eq!(fix.level(SHAPE.fix - 1), 1.2);
    }

    #[test]
    fn the_machine_drift_is_slow_and_spans_its_amplitude() {
        // The same seed draws the same session factor, so the ratio of two
        // sessions is the drift alone.
        let f = |t: usize| Session::Drift.factor(42, t, 0.5);
        let (mut lo, mut hi) = (f64::MAX, f64::MIN);
        for t in 0..120 {
            assert!((f(t + 1) / f(t) - 1.0).abs() < 0.0035, "{t}");
            lo = lo.min(f(t));
            hi = hi.max(f(t));
        }
        let swing = hi / lo;
        assert!(swing > 1.055 && swing < 1.065, "{swing}");
        // Session shifts: mean 1, the given CV.
        let draws: Vec<f64> = (0..20_000)
            .map(|i| Session::Shift(0.03).factor(i, 0, 0.0))
            .collect();
        let mean = draws.iter().sum::<f64>() / draws.len() as f64;
        let sd =
            (draws.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / draws.len() as f64).sqrt();
        assert!((mean - 1.0).abs() < 0.001, "{mean}");
        assert!((sd - 0.03).abs() < 0.001, "{sd}");
        assert_eq!(Session::Stable.factor(7, 3, 0.0), 1.0);
    }
}
