//! Figures of one policy over the corpus or a part of it (one session
//! condition), and their text tables and JSON form.

use serde_json::{Value, json};

use super::bisection::Named;
use super::corpus::{CVS, Family, Noise, STEPS, Session};
use super::policies::Cost;
use super::score::SeriesScore;

/// A count out of a total.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(crate) struct Ratio {
    pub(crate) num: usize,
    pub(crate) den: usize,
}

impl Ratio {
    pub(crate) fn of<'a>(
        scores: impl IntoIterator<Item = &'a SeriesScore>,
        f: impl Fn(&SeriesScore) -> (usize, usize),
    ) -> Ratio {
        scores.into_iter().fold(Ratio::default(), |acc, s| {
            let (n, d) = f(s);
            Ratio {
                num: acc.num + n,
                den: acc.den + d,
            }
        })
    }

    pub(crate) fn value(self) -> Option<f64> {
        (self.den > 0).then(|| self.num as f64 / self.den as f64)
    }

    /// As a percentage, `-` when there is nothing to count.
    pub(crate) fn pct(self) -> String {
        self.value()
            .map_or_else(|| "-".into(), |v| format!("{:.1}%", v * 100.0))
    }

    /// Per 1,000 with three decimals, `-` when there is nothing to count.
    pub(crate) fn pm(self) -> String {
        self.value()
            .map_or_else(|| "-".into(), |v| format!("{:.3}", v * 1000.0))
    }

    pub(crate) fn plus(self, o: Ratio) -> Ratio {
        Ratio {
            num: self.num + o.num,
            den: self.den + o.den,
        }
    }

    /// Per 1,000.
    pub(crate) fn per_mille(self) -> f64 {
        self.value().unwrap_or(0.0) * 1000.0
    }

    pub(crate) fn json(self) -> Value {
        json!({"num": self.num, "den": self.den, "value": self.value()})
    }
}

fn is_aa(s: &SeriesScore) -> bool {
    s.family == Family::AA
}

fn is_regression_step(s: &SeriesScore) -> bool {
    matches!(s.family, Family::Step(x) if x > 0.0)
}

/// The figures of one policy.
#[derive(Debug, Clone)]
pub(crate) struct Figures {
    pub(crate) label: String,
    /// A/A alarms per case-run, by noise and CV.
    pub(crate) fa: Vec<Vec<Ratio>>,
    pub(crate) fa_le3: Ratio,
    pub(crate) fa_all: Ratio,
    /// A/A announcements (issue openings) per case-run at CV ≤ 3%.
    pub(crate) opens_le3: Ratio,
    /// Recall of regression steps by step size and CV (all noise kinds).
    pub(crate) recall: Vec<Vec<Ratio>>,
    /// Recall of steps ≥ 10% at CV ≤ 3%, by noise kind.
    pub(crate) recall_noise: Vec<Ratio>,
    pub(crate) recall_ge10_le3: Ratio,
    pub(crate) recall_ge5_le1: Ratio,
    /// Recall over every true regression of the corpus.
    pub(crate) recall_all: Ratio,
    pub(crate) nearby_first: Ratio,
    pub(crate) nearby_second: Ratio,
    pub(crate) fix: Ratio,
    pub(crate) precision: Ratio,
    pub(crate) median_delay: Option<f64>,
    pub(crate) extra_aa: f64,
    pub(crate) extra_all: f64,
    pub(crate) confirm_share_aa: Ratio,
    pub(crate) episodes: usize,
    pub(crate) with_issue: usize,
    pub(crate) issues_per_episode: f64,
    pub(crate) duplicates: usize,
    pub(crate) flaps: Ratio,
    pub(crate) wrong_closes: Ratio,
    pub(crate) open_after_fix: Ratio,
    pub(crate) drift_alarmed: Ratio,
    pub(crate) drift_first: Option<f64>,
    pub(crate) verdicts: [usize; 5],
    /// benchops verdicts on the A/A series, by CV.
    pub(crate) aa_verdicts: Vec<[usize; 5]>,
    /// Fixed regressions whose issue is still open at the end, by CV.
    pub(crate) open_after_fix_by_cv: Vec<Ratio>,
    /// A/A issue openings (false issues) per case-run at CV ≤ 3%.
    pub(crate) issues_le3: Ratio,
    /// A/A issues opened again after one closed, per case-run at CV ≤ 3%.
    pub(crate) reopens_le3: Ratio,
    /// Share of `inconclusive` and `not_confirmed` verdicts on the A/A
    /// series at CV ≤ 3%.
    pub(crate) inconclusive_le3: Ratio,
    pub(crate) not_confirmed_le3: Ratio,
    /// Fixed regressions with an issue open at the fix, CV ≤ 5%: closed
    /// within 2 lane runs of the fix.
    pub(crate) close_within2_le5: Ratio,
    /// The same, by CV.
    pub(crate) close_within2_by_cv: Vec<Ratio>,
    /// Extra measurement and builds over the A/A series, and their
    /// case-runs.
    pub(crate) cost_aa: Cost,
    pub(crate) runs_aa: usize,
    /// Bisections started on the A/A series, and their builds.
    pub(crate) bisections_aa: usize,
    /// Bisections started on a single-commit regression of 10% or more at
    /// CV ≤ 3%, by what they named.
    pub(crate) lane_named: [usize; 4],
    /// Their steps and builds.
    pub(crate) lane_steps: usize,
    /// Bisection builds (one per step) per bisection started on a true
    /// regression.
    pub(crate) builds_per_regression: Option<f64>,
    /// Samples per run.
    pub(crate) n: usize,
}

impl Figures {
    /// Extra runs per A/A case-run: candidate side, baseline side,
    /// bisection.
    pub(crate) fn extra_split(&self) -> (f64, f64, f64) {
        let per = |x: usize| {
            if self.runs_aa == 0 {
                0.0
            } else {
                x as f64 / self.n as f64 / self.runs_aa as f64
            }
        };
        (
            per(self.cost_aa.b_side),
            per(self.cost_aa.a_side),
            per(self.cost_aa.bisect),
        )
    }

    /// Builds per A/A case-run (side A and bisection midpoints).
    pub(crate) fn builds_aa(&self) -> f64 {
        if self.runs_aa == 0 {
            0.0
        } else {
            (self.cost_aa.ab_builds + self.cost_aa.bisect_builds) as f64 / self.runs_aa as f64
        }
    }

    /// Exact culprits among the lane's bisections of single-commit
    /// regressions of 10% or more at CV ≤ 3%.
    pub(crate) fn lane_exact(&self) -> Ratio {
        Ratio {
            num: self.lane_named[0],
            den: self.lane_named.iter().sum(),
        }
    }

    pub(crate) fn f1(&self) -> Option<f64> {
        let p = self.precision.value()?;
        let r = self.recall_all.value()?;
        (p + r > 0.0).then(|| 2.0 * p * r / (p + r))
    }
}

fn median(mut v: Vec<f64>) -> Option<f64> {
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let k = v.len();
    Some(if k % 2 == 1 {
        v[k / 2]
    } else {
        (v[k / 2 - 1] + v[k / 2]) / 2.0
    })
}

/// The figures of one policy's scores; `n` samples per run.
pub(crate) fn figures(label: String, scores: &[&SeriesScore], n: usize) -> Figures {
    let scores: Vec<&SeriesScore> = scores.to_vec();
    let scores = &scores[..];
    let aa = || scores.iter().copied().filter(|s| is_aa(s));
    let alarms = |s: &SeriesScore| (s.alarms, s.runs);
    let fa = Noise::ALL
        .iter()
        .map(|&noise| {
            (0..CVS.len())
                .map(|cv| Ratio::of(aa().filter(|s| s.noise == noise && s.cv == cv), alarms))
                .collect()
        })
        .collect();
    let le3 = |s: &&SeriesScore| s.cv_value() <= 0.03 + 1e-12;
    let step_events = |pred: &dyn Fn(&SeriesScore) -> bool| {
        Ratio::of(
            scores
                .iter()
                .copied()
                .filter(|s| is_regression_step(s) && pred(s)),
            |s| {
                let e = &s.events;
                (e.iter().filter(|e| e.detected).count(), e.len())
            },
        )
    };
    let recall = (0..STEPS.len())
        .map(|k| {
            (0..CVS.len())
                .map(|cv| step_events(&|s| s.step_index() == Some(k) && s.cv == cv))
                .collect()
        })
        .collect();
    let big = |s: &SeriesScore| s.step_index().is_some_and(|k| STEPS[k] >= 0.10 - 1e-12);
    let le3p = |s: &SeriesScore| s.cv_value() <= 0.03 + 1e-12;
    let recall_noise = Noise::ALL
        .iter()
        .map(|&noise| step_events(&|s| big(s) && le3p(s) && s.noise == noise))
        .collect();
    let event_ratio = |fam: Family, order: Option<usize>| {
        Ratio::of(scores.iter().copied().filter(|s| s.family == fam), |s| {
            let e: Vec<_> = s
                .events
                .iter()
                .filter(|e| order.is_none_or(|o| e.order == o))
                .collect();
            (e.iter().filter(|e| e.detected).count(), e.len())
        })
    };
    let not_drift = || scores.iter().copied().filter(|s| s.family != Family::Drift);
    let delays: Vec<f64> = not_drift()
        .flat_map(|s| s.events.iter().filter_map(|e| e.delay.map(|d| d as f64)))
        .collect();
    let extra = |it: &mut dyn Iterator<Item = &SeriesScore>| {
        let (x, r) = it.fold((0usize, 0usize), |(x, r), s| {
            (x + s.cost.samples(), r + s.runs)
        });
        if r == 0 {
            0.0
        } else {
            x as f64 / n as f64 / r as f64
        }
    };
    let eps: Vec<_> = scores.iter().filter_map(|s| s.episode).collect();
    let with_issue: Vec<_> = eps.iter().filter(|e| e.had_issue).collect();
    let fixed: Vec<_> = scores
        .iter()
        .filter(|s| s.family == Family::RegressFix)
        .filter_map(|s| s.episode)
        .filter(|e| e.had_issue)
        .collect();
    let drift: Vec<_> = scores
        .iter()
        .copied()
        .filter(|s| s.family == Family::Drift)
        .collect();
    let sum_verdicts = |it: &mut dyn Iterator<Item = &SeriesScore>| {
        let mut v = [0usize; 5];
        for s in it {
            for (a, b) in v.iter_mut().zip(s.verdicts) {
                *a += b;
            }
        }
        v
    };
    let verdicts = sum_verdicts(&mut scores.iter().copied());
    let aa_verdicts = (0..CVS.len())
        .map(|cv| sum_verdicts(&mut aa().filter(|s| s.cv == cv)))
        .collect();
    let close_within2 = |pred: &dyn Fn(&SeriesScore) -> bool| {
        let eps: Vec<Option<usize>> = scores
            .iter()
            .copied()
            .filter(|s| s.family == Family::RegressFix && pred(s))
            .filter_map(|s| s.episode.and_then(|e| e.close_after_fix))
            .collect();
        Ratio {
            num: eps.iter().filter(|c| c.is_some_and(|c| c <= 2)).count(),
            den: eps.len(),
        }
    };
    let mut lane_named = [0usize; 4];
    let mut lane_steps = 0;
    for s in scores.iter().filter(|s| {
        matches!(s.family, Family::Step(x) if x >= 0.10 - 1e-12) && s.cv_value() <= 0.03 + 1e-12
    }) {
        for b in s.bisections.iter().filter(|b| b.single_culprit) {
            if let Some(i) = Named::ALL.iter().position(|n| *n == b.named) {
                lane_named[i] += 1;
            }
            lane_steps += b.steps;
        }
    }
    let builds_per_regression = {
        let (steps, count) = scores
            .iter()
            .filter(|s| s.family != Family::AA && s.family != Family::Drift)
            .flat_map(|s| s.bisections.iter())
            .filter(|b| b.single_culprit)
            .fold((0, 0), |(x, n), b| (x + b.steps, n + 1));
        (count > 0).then(|| steps as f64 / count as f64)
    };
    let open_after_fix_by_cv = (0..CVS.len())
        .map(|cv| {
            let eps: Vec<_> = scores
                .iter()
                .filter(|s| s.family == Family::RegressFix && s.cv == cv)
                .filter_map(|s| s.episode)
                .filter(|e| e.had_issue)
                .collect();
            Ratio {
                num: eps.iter().filter(|e| e.left_open_after_fix).count(),
                den: eps.len(),
            }
        })
        .collect();
    Figures {
        label,
        fa,
        fa_le3: Ratio::of(aa().filter(le3), alarms),
        fa_all: Ratio::of(aa(), alarms),
        opens_le3: Ratio::of(aa().filter(le3), |s| (s.opens, s.runs)),
        recall,
        recall_noise,
        recall_ge10_le3: step_events(&|s| big(s) && le3p(s)),
        recall_ge5_le1: step_events(&|s| {
            s.step_index().is_some_and(|k| STEPS[k] >= 0.05 - 1e-12) && s.cv_value() <= 0.01 + 1e-12
        }),
        recall_all: Ratio::of(not_drift(), |s| {
            let e = &s.events;
            (e.iter().filter(|e| e.detected).count(), e.len())
        }),
        nearby_first: event_ratio(Family::Nearby, Some(0)),
        nearby_second: event_ratio(Family::Nearby, Some(1)),
        fix: event_ratio(Family::RegressFix, None),
        precision: Ratio::of(not_drift(), |s| (s.true_opens, s.opens)),
        median_delay: median(delays),
        extra_aa: extra(&mut aa()),
        extra_all: extra(&mut scores.iter().copied()),
        confirm_share_aa: Ratio::of(aa(), |s| (s.confirmations, s.runs)),
        episodes: eps.len(),
        with_issue: with_issue.len(),
        issues_per_episode: if with_issue.is_empty() {
            0.0
        } else {
            with_issue.iter().map(|e| e.issues_opened).sum::<usize>() as f64
                / with_issue.len() as f64
        },
        duplicates: scores.iter().map(|s| s.duplicates).sum(),
        flaps: Ratio {
            num: with_issue.iter().filter(|e| e.flapped).count(),
            den: with_issue.len(),
        },
        wrong_closes: Ratio {
            num: with_issue.iter().filter(|e| e.wrong_closed).count(),
            den: with_issue.len(),
        },
        open_after_fix: Ratio {
            num: fixed.iter().filter(|e| e.left_open_after_fix).count(),
            den: fixed.len(),
        },
        drift_alarmed: Ratio {
            num: drift.iter().filter(|s| s.first_alarm.is_some()).count(),
            den: drift.len(),
        },
        drift_first: median(
            drift
                .iter()
                .filter_map(|s| s.first_alarm.map(|t| t as f64))
                .collect(),
        ),
        verdicts,
        aa_verdicts,
        open_after_fix_by_cv,
        issues_le3: Ratio::of(aa().filter(le3), |s| (s.opens, s.runs)),
        reopens_le3: Ratio::of(aa().filter(le3), |s| (s.reopens, s.runs)),
        inconclusive_le3: Ratio::of(aa().filter(le3), |s| {
            (s.verdicts[1], s.verdicts.iter().sum())
        }),
        not_confirmed_le3: Ratio::of(aa().filter(le3), |s| {
            (s.verdicts[2], s.verdicts.iter().sum())
        }),
        close_within2_le5: close_within2(&|s| s.cv_value() <= 0.05 + 1e-12),
        close_within2_by_cv: (0..CVS.len())
            .map(|cv| close_within2(&|s| s.cv == cv))
            .collect(),
        cost_aa: aa().fold(Cost::default(), |mut c, s| {
            c.add(&s.cost);
            c
        }),
        runs_aa: aa().map(|s| s.runs).sum(),
        bisections_aa: aa().map(|s| s.bisections.len()).sum(),
        lane_named,
        lane_steps,
        builds_per_regression,
        n,
    }
}

fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{v:.digits$}"))
}

/// The name of a CV inside a session.
pub(crate) fn cv_name(cv: f64) -> String {
    if cv == 0.0 {
        "none".into()
    } else {
        format!("{}%", cv * 100.0)
    }
}

fn cv_header() -> String {
    CVS.iter()
        .map(|&c| {
            format!(
                "{:>9}",
                if c == 0.0 {
                    "cv none".into()
                } else {
                    format!("cv {}%", c * 100.0)
                }
            )
        })
        .collect()
}

/// The summary table over the given policies.
pub(crate) fn summary(figs: &[&Figures]) -> String {
    let mut s = format!(
        "{:<22}{:>9}{:>9}{:>9}{:>9}{:>9}{:>8}{:>8}{:>7}{:>7}{:>8}{:>8}\n",
        "policy",
        "FA<=3%",
        "FA all",
        "R all",
        "R>=10%",
        "R>=5%",
        "prec",
        "F1",
        "delay",
        "extra",
        "announc",
        "true"
    );
    s += &format!(
        "{:<22}{:>9}{:>9}{:>9}{:>9}{:>9}{:>8}{:>8}{:>7}{:>7}{:>8}{:>8}\n",
        "", "/1000", "/1000", "", "cv<=3%", "cv<=1%", "", "", "runs", "A/A", "", ""
    );
    for f in figs {
        s += &format!(
            "{:<22}{:>9.3}{:>9.3}{:>9}{:>9}{:>9}{:>8}{:>8}{:>7}{:>7.3}{:>8}{:>8}\n",
            f.label,
            f.fa_le3.per_mille(),
            f.fa_all.per_mille(),
            f.recall_all.pct(),
            f.recall_ge10_le3.pct(),
            f.recall_ge5_le1.pct(),
            f.precision.pct(),
            opt(f.f1().map(|v| v * 100.0), 2),
            opt(f.median_delay, 1),
            f.extra_aa,
            f.precision.den,
            f.precision.num,
        );
    }
    s
}

/// A/A false alarms per 1,000 case-runs by noise kind and CV.
pub(crate) fn false_alarms(figs: &[&Figures]) -> String {
    let mut s = format!(
        "{:<22}{:<12}{}{:>10}\n",
        "policy",
        "noise",
        cv_header(),
        "cv<=3%"
    );
    for f in figs {
        for (i, noise) in Noise::ALL.iter().enumerate() {
            let row = &f.fa[i];
            let le3 = row
                .iter()
                .zip(CVS)
                .filter(|(_, c)| *c <= 0.03 + 1e-12)
                .fold(Ratio::default(), |a, (r, _)| a.plus(*r));
            s += &format!("{:<22}{:<12}", f.label, noise.name());
            for r in row {
                s += &format!("{:>9}", r.pm());
            }
            s += &format!("{:>10}\n", le3.pm());
        }
    }
    s
}

/// Recall of regression steps by size and CV.
pub(crate) fn recall(figs: &[&Figures]) -> String {
    let mut s = format!("{:<22}{:<8}{}\n", "policy", "step", cv_header());
    for f in figs {
        for (k, step) in STEPS.iter().enumerate() {
            s += &format!("{:<22}{:<8}", f.label, format!("+{}%", step * 100.0));
            for r in &f.recall[k] {
                s += &format!("{:>9}", r.pct());
            }
            s += "\n";
        }
    }
    s
}

/// Recall by noise kind (steps ≥ 10%, CV ≤ 3%) and of the other families.
pub(crate) fn recall_more(figs: &[&Figures]) -> String {
    let mut s = format!("{:<22}", "policy");
    for n in Noise::ALL {
        s += &format!("{:>11}", n.name());
    }
    s += &format!("{:>10}{:>10}{:>10}\n", "2nd:1st", "2nd:2nd", "reg+fix");
    for f in figs {
        s += &format!("{:<22}", f.label);
        for r in &f.recall_noise {
            s += &format!("{:>11}", r.pct());
        }
        s += &format!(
            "{:>10}{:>10}{:>10}\n",
            f.nearby_first.pct(),
            f.nearby_second.pct(),
            f.fix.pct()
        );
    }
    s
}

/// Lifecycle and slow-drift figures.
pub(crate) fn lifecycle(figs: &[&Figures]) -> String {
    let mut s = format!(
        "{:<22}{:>9}{:>9}{:>10}{:>6}{:>9}{:>9}{:>11}{:>10}{:>10}\n",
        "policy",
        "episodes",
        "w/issue",
        "issues/ep",
        "dups",
        "flaps",
        "wrong-cl",
        "open@end",
        "drift al.",
        "drift 1st"
    );
    for f in figs {
        s += &format!(
            "{:<22}{:>9}{:>9}{:>10.3}{:>6}{:>9}{:>9}{:>11}{:>10}{:>10}\n",
            f.label,
            f.episodes,
            f.with_issue,
            f.issues_per_episode,
            f.duplicates,
            f.flaps.pct(),
            f.wrong_closes.pct(),
            f.open_after_fix.pct(),
            f.drift_alarmed.pct(),
            opt(f.drift_first, 1),
        );
    }
    s
}

/// benchops' verdict mix on the A/A series by CV, and the fixed
/// regressions left open by CV.
pub(crate) fn verdict_mix(f: &Figures) -> String {
    let mut s = format!(
        "{:<9}{:>12}{:>14}{:>15}{:>14}{:>14}{:>18}\n",
        "A/A cv",
        "within",
        "inconclusive",
        "not confirmed",
        "conf. regr.",
        "conf. impr.",
        "fix left open"
    );
    for (cv, v) in f.aa_verdicts.iter().enumerate() {
        let total: usize = v.iter().sum();
        let pct = |k: usize| {
            Ratio {
                num: v[k],
                den: total,
            }
            .pct()
        };
        s += &format!(
            "{:<9}{:>12}{:>14}{:>15}{:>14}{:>14}{:>18}\n",
            cv_name(CVS[cv]),
            pct(0),
            pct(1),
            pct(2),
            pct(3),
            pct(4),
            {
                let r = f.open_after_fix_by_cv[cv];
                format!("{} ({}/{})", r.pct(), r.num, r.den)
            }
        );
    }
    s
}

/// The figures of each policy on each session condition, and pooled over
/// all of them: `rows` holds a policy's label, its figures by session (in
/// [`Session::ALL`] order) and pooled.
pub(crate) fn by_session(rows: &[(String, Vec<Figures>, Figures)]) -> String {
    let mut s = format!(
        "{:<22}{:<8}{:>21}{:>16}{:>9}{:>9}{:>8}{:>8}{:>17}{:>8}\n",
        "policy",
        "session",
        "FA<=3% /1000",
        "R>=10%",
        "issues",
        "reopens",
        "inconc",
        "not-cf",
        "close<=2",
        "extra"
    );
    s += &format!(
        "{:<22}{:<8}{:>21}{:>16}{:>9}{:>9}{:>8}{:>8}{:>17}{:>8}\n",
        "", "", "(alarms/runs)", "cv<=3%", "/1000", "/1000", "A/A", "A/A", "cv<=5%", "A/A"
    );
    for (label, per, pooled) in rows {
        let names = Session::ALL.iter().map(|x| x.name()).chain(["all".into()]);
        for (f, name) in per.iter().chain([pooled]).zip(names) {
            s += &format!(
                "{:<22}{:<8}{:>21}{:>16}{:>9}{:>9}{:>8}{:>8}{:>17}{:>8.3}\n",
                label,
                name.replace("cv ", ""),
                format!("{} ({}/{})", f.fa_le3.pm(), f.fa_le3.num, f.fa_le3.den),
                format!(
                    "{} ({}/{})",
                    f.recall_ge10_le3.pct(),
                    f.recall_ge10_le3.num,
                    f.recall_ge10_le3.den
                ),
                f.issues_le3.pm(),
                f.reopens_le3.pm(),
                f.inconclusive_le3.pct(),
                f.not_confirmed_le3.pct(),
                format!(
                    "{} ({}/{})",
                    f.close_within2_le5.pct(),
                    f.close_within2_le5.num,
                    f.close_within2_le5.den
                ),
                f.extra_aa,
            );
        }
    }
    s
}

/// A/A alarms per 1,000 case-runs and recall of steps of 10% or more, by
/// session condition and noise cell inside the session, of each policy.
pub(crate) fn session_cells(
    policies: &[(String, &[SeriesScore])],
    cells: &[(Noise, f64)],
) -> String {
    let mut s = format!("{:<22}{:<8}{:<8}", "policy", "session", "figure");
    for (noise, cv) in cells {
        let name = if *cv == 0.0 {
            "none".to_owned()
        } else {
            format!(
                "{} {}",
                &noise.name()[..4.min(noise.name().len())],
                cv_name(*cv)
            )
        };
        s += &format!("{name:>11}");
    }
    s += "\n";
    for (label, scores) in policies {
        for (si, session) in Session::ALL.iter().enumerate().skip(1) {
            for fig in ["FA/1000", "R>=10%"] {
                s += &format!(
                    "{:<22}{:<8}{:<8}",
                    label,
                    session.name().replace("cv ", ""),
                    fig
                );
                for (noise, cv) in cells {
                    let here = scores.iter().filter(|x| {
                        x.session == si && x.noise == *noise && (x.cv_value() - cv).abs() < 1e-12
                    });
                    let cell = if fig == "FA/1000" {
                        Ratio::of(here.filter(|x| is_aa(x)), |x| (x.alarms, x.runs)).pm()
                    } else {
                        Ratio::of(
                            here.filter(|x| {
                                x.step_index().is_some_and(|k| STEPS[k] >= 0.10 - 1e-12)
                                    && is_regression_step(x)
                            }),
                            |x| {
                                (
                                    x.events.iter().filter(|e| e.detected).count(),
                                    x.events.len(),
                                )
                            },
                        )
                        .pct()
                    };
                    s += &format!("{cell:>11}");
                }
                s += "\n";
            }
        }
    }
    s
}

/// Fixed regressions whose issue closed within 2 lane runs of the fix, by
/// CV inside the session.
pub(crate) fn closes(figs: &[&Figures]) -> String {
    let mut s = format!("{:<22}{}\n", "policy", cv_header());
    for f in figs {
        s += &format!("{:<22}", f.label);
        for r in &f.close_within2_by_cv {
            s += &format!("{:>9}", r.pct());
        }
        s += "\n";
    }
    s
}

/// What the extra measurement costs on the A/A series, and the lane's
/// bisections of single-commit regressions.
pub(crate) fn costs(figs: &[&Figures]) -> String {
    let mut s = format!(
        "{:<22}{:>8}{:>8}{:>8}{:>8}{:>10}{:>10}{:>12}{:>18}{:>8}\n",
        "policy",
        "B side",
        "A side",
        "bisect",
        "total",
        "builds",
        "bisect.",
        "bisection",
        "lane culprit",
        "steps"
    );
    s += &format!(
        "{:<22}{:>8}{:>8}{:>8}{:>8}{:>10}{:>10}{:>12}{:>18}{:>8}\n",
        "", "runs", "runs", "runs", "runs", "per run", "on A/A", "builds", "exact >=10%", "mean"
    );
    for f in figs {
        let (b, a, x) = f.extra_split();
        let exact = f.lane_exact();
        s += &format!(
            "{:<22}{:>8.3}{:>8.3}{:>8.3}{:>8.3}{:>10.3}{:>10}{:>12}{:>18}{:>8}\n",
            f.label,
            b,
            a,
            x,
            b + a + x,
            f.builds_aa(),
            f.bisections_aa,
            opt(f.builds_per_regression, 2),
            format!("{} ({}/{})", exact.pct(), exact.num, exact.den),
            if exact.den == 0 {
                "-".into()
            } else {
                format!("{:.2}", f.lane_steps as f64 / exact.den as f64)
            }
        );
    }
    s
}

/// The figures as JSON.
pub(crate) fn to_json(f: &Figures) -> Value {
    let grid = |g: &Vec<Vec<Ratio>>| -> Value {
        g.iter()
            .map(|row| row.iter().map(|r| r.json()).collect::<Vec<_>>())
            .collect()
    };
    json!({
        "policy": f.label,
        "false_alarms_aa": {
            "per_1000_cv_le_3pct": f.fa_le3.per_mille(),
            "per_1000_all": f.fa_all.per_mille(),
            "cv_le_3pct": f.fa_le3.json(),
            "all": f.fa_all.json(),
            "by_noise_then_cv": grid(&f.fa),
            "announcements_cv_le_3pct": f.opens_le3.json(),
        },
        "recall": {
            "all": f.recall_all.json(),
            "steps_ge_10pct_cv_le_3pct": f.recall_ge10_le3.json(),
            "steps_ge_5pct_cv_le_1pct": f.recall_ge5_le1.json(),
            "by_step_then_cv": grid(&f.recall),
            "steps_ge_10pct_cv_le_3pct_by_noise":
                f.recall_noise.iter().map(|r| r.json()).collect::<Vec<_>>(),
            "two_nearby_first": f.nearby_first.json(),
            "two_nearby_second": f.nearby_second.json(),
            "regression_then_fix": f.fix.json(),
        },
        "precision": f.precision.json(),
        "f1": f.f1(),
        "median_delay_runs": f.median_delay,
        "extra_runs_per_case_run": {"aa": f.extra_aa, "all": f.extra_all},
        "confirmations_per_case_run_aa": f.confirm_share_aa.json(),
        "lifecycle": {
            "episodes": f.episodes,
            "episodes_with_issue": f.with_issue,
            "issues_per_episode": f.issues_per_episode,
            "duplicates": f.duplicates,
            "flaps": f.flaps.json(),
            "wrong_closes": f.wrong_closes.json(),
            "open_at_end_after_fix": f.open_after_fix.json(),
        },
        "slow_drift": {
            "series_alarmed": f.drift_alarmed.json(),
            "median_first_alarm_run": f.drift_first,
        },
        "benchops_aa_verdicts_by_cv": f.aa_verdicts.iter().map(|v| v.to_vec()).collect::<Vec<_>>(),
        "open_at_end_after_fix_by_cv": f.open_after_fix_by_cv.iter().map(|r| r.json()).collect::<Vec<_>>(),
        "same_session_figures": {
            "false_issues_aa_cv_le_3pct": f.issues_le3.json(),
            "reopens_aa_cv_le_3pct": f.reopens_le3.json(),
            "inconclusive_aa_cv_le_3pct": f.inconclusive_le3.json(),
            "not_confirmed_aa_cv_le_3pct": f.not_confirmed_le3.json(),
            "closed_within_2_runs_of_fix_cv_le_5pct": f.close_within2_le5.json(),
            "closed_within_2_runs_of_fix_by_cv": f.close_within2_by_cv.iter().map(|r| r.json()).collect::<Vec<_>>(),
            "extra_runs_per_aa_case_run": {
                "b_side": f.extra_split().0,
                "a_side": f.extra_split().1,
                "bisection": f.extra_split().2,
            },
            "builds_per_aa_case_run": f.builds_aa(),
            "bisections_on_aa": f.bisections_aa,
            "builds_per_regression": f.builds_per_regression,
            "lane_bisection_exact_ge_10pct_cv_le_3pct": f.lane_exact().json(),
        },
        "benchops_verdicts": {
            "within_band": f.verdicts[0],
            "inconclusive": f.verdicts[1],
            "not_confirmed": f.verdicts[2],
            "confirmed_regression": f.verdicts[3],
            "confirmed_improvement": f.verdicts[4],
        },
    })
}
