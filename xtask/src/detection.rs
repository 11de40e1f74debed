//! `cargo xtask detection-bench`: the detection quality of benchops' drift
//! policy, in its stored-baseline and same-session modes, against a
//! Pinpoint-style A/B policy and re-implementations of four peer tools'
//! published alarm rules, on a labelled synthetic corpus drawn from fixed
//! seeds (lane runs on a machine whose speed shifts between sessions), and
//! the culprit bisection on ranges of commits. Figures, not a timed test;
//! `docs/detection.md` describes the corpus, the rules and the scoring, and
//! holds the measured tables.
//!
//! ```text
//! cargo run -p xtask --release -- detection-bench [--quick] [--n N]
//!     [--seed S] [--threads T] [--json PATH] [--no-curves] [--sweep]
//!     [--explain] [--bisect-reps N] [--threshold X] [--fence X]
//!     [--confirm-runs N] [--level X] [--confirm-level X] [--resamples N]
//! ```
//!
//! - `--quick`: a corpus about a sixth of the default one, and fewer
//!   bisection trials.
//! - `--n`: samples per run (default 10).
//! - `--bisect-reps`: trials per condition, range and step size of the
//!   bisection experiment (default 12, 2 with `--quick`).
//! - `--threshold`, `--fence`, … change the benchops settings under test
//!   (`band.threshold`, `band.noise_fence_mads`, `confirm_runs`, `level`,
//!   `confirm_level`, `resamples`).
//! - `--sweep`: also runs a small grid of alternative benchops settings and
//!   prints the targets for each.
//! - `--no-curves`: skips the peers' threshold grids (the equal-recall
//!   comparison).

mod bisection;
mod corpus;
mod policies;
mod report;
mod rng;
mod score;

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use benchops::compare::Settings;
use serde_json::{Value, json};

use bisection::{StepRule, TrialScore};
use corpus::{Family, Series, Session, Spec};
use policies::{Mode, Observed, PINPOINT_ALPHA, Policy, SsRule};
use report::Figures;
use score::SeriesScore;

/// The master seed of the corpus (`"detect"` in ASCII).
const DEFAULT_SEED: u64 = 0x6465_7465_6374;

#[derive(Debug, Clone)]
struct Args {
    quick: bool,
    n: usize,
    seed: u64,
    threads: usize,
    json: Option<String>,
    curves: bool,
    sweep: bool,
    explain: bool,
    bisect_reps: Option<usize>,
    settings: Settings,
}

fn parse(args: &[String]) -> Result<Args> {
    let mut a = Args {
        quick: false,
        n: 10,
        seed: DEFAULT_SEED,
        threads: std::thread::available_parallelism().map_or(2, |n| n.get()),
        json: None,
        curves: true,
        sweep: false,
        explain: false,
        bisect_reps: None,
        settings: Settings::default(),
    };
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || {
            it.next()
                .with_context(|| format!("{flag} needs a value"))
                .cloned()
        };
        let num = |v: String| -> Result<f64> {
            v.parse::<f64>()
                .with_context(|| format!("{flag}: not a number: {v}"))
        };
        match flag.as_str() {
            "--quick" => a.quick = true,
            "--no-curves" => a.curves = false,
            "--sweep" => a.sweep = true,
            "--explain" => a.explain = true,
            "--n" => a.n = value()?.parse().context("--n")?,
            "--seed" => a.seed = value()?.parse().context("--seed")?,
            "--threads" => a.threads = value()?.parse().context("--threads")?,
            "--bisect-reps" => a.bisect_reps = Some(value()?.parse().context("--bisect-reps")?),
            "--json" => a.json = Some(value()?),
            "--threshold" => a.settings.band.threshold = num(value()?)?,
            "--fence" => a.settings.band.noise_fence_mads = num(value()?)?,
            "--confirm-runs" => {
                a.settings.confirm_runs = value()?.parse().context("--confirm-runs")?
            }
            "--level" => a.settings.level = num(value()?)?,
            "--confirm-level" => a.settings.confirm_level = num(value()?)?,
            "--resamples" => a.settings.resamples = value()?.parse().context("--resamples")?,
            other => bail!("detection-bench: unknown flag {other}"),
        }
    }
    if a.n < 2 || a.threads == 0 {
        bail!("--n must be at least 2 and --threads at least 1");
    }
    if a.settings.confirm_runs < 2 {
        bail!(
            "--confirm-runs must be at least 2: a same-session comparison needs samples on both sides"
        );
    }
    Ok(a)
}

/// Peers at their published defaults.
fn main_peers() -> Vec<Policy> {
    vec![
        Policy::Gab(2.0),
        Policy::Gab(1.1),
        Policy::Conbench(5.0),
        Policy::Perfherder(7.0),
        Policy::Otava(0.001),
    ]
}

/// Each peer's threshold grid, for the comparison at equal recall.
fn curves() -> Vec<(&'static str, Vec<Policy>)> {
    let gab = [1.01, 1.02, 1.03, 1.05, 1.07, 1.1, 1.15, 1.2, 1.3, 1.5, 2.0];
    let conbench = [1.0, 1.5, 2.0, 2.5, 3.0, 3.5, 4.0, 5.0, 6.0, 8.0];
    let perfherder = [2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 9.0, 12.0];
    let otava = [0.05, 0.01, 0.001, 1e-4, 1e-5];
    vec![
        ("github-action-benchmark", gab.map(Policy::Gab).to_vec()),
        ("conbench", conbench.map(Policy::Conbench).to_vec()),
        ("perfherder", perfherder.map(Policy::Perfherder).to_vec()),
        ("otava", otava.map(Policy::Otava).to_vec()),
    ]
}

/// Alternative benchops settings tried by `--sweep`, each with a name.
fn sweep_grid(base: &Settings) -> Vec<(String, Settings)> {
    let mut out = Vec::new();
    let mut add = |name: &str, f: &dyn Fn(&mut Settings)| {
        let mut s = base.clone();
        f(&mut s);
        out.push((name.to_owned(), s));
    };
    add("cl 0.995", &|s| s.confirm_level = 0.995);
    add("fence 1.5", &|s| s.band.noise_fence_mads = 1.5);
    out
}

/// Alternative lane-side rules of the same-session mode tried by
/// `--sweep` (with the settings under test), each with a name.
fn lane_grid() -> Vec<(&'static str, SsRule)> {
    vec![
        (
            "clear x1",
            SsRule {
                clear_factor: 1,
                ..SsRule::LANE
            },
        ),
        (
            "clear x2",
            SsRule {
                clear_factor: 2,
                ..SsRule::LANE
            },
        ),
        (
            "clear x2 1-sided",
            SsRule {
                clear_factor: 2,
                one_sided_clear: true,
                ..SsRule::LANE
            },
        ),
    ]
}

fn describe(s: &Settings) -> String {
    format!(
        "band.threshold {} | noise_fence_mads {} | level {} | confirm_level {} | confirm_runs {} | resamples {}",
        s.band.threshold,
        s.band.noise_fence_mads,
        s.level,
        s.confirm_level,
        s.confirm_runs,
        s.resamples
    )
}

/// One series' scores and thread time, by policy.
type SeriesDone = (usize, Vec<SeriesScore>, Vec<Duration>);

/// Runs `work(i)` for `i` in `0..count` on `threads` threads; the results
/// in order of `i`.
fn parallel<T: Send>(
    count: usize,
    threads: usize,
    work: impl Fn(usize) -> Result<T> + Sync,
) -> Result<Vec<T>> {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<(usize, T)>> = Mutex::new(Vec::new());
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= count {
                        break;
                    }
                    match work(i) {
                        Ok(v) => {
                            if let Ok(mut d) = done.lock() {
                                d.push((i, v));
                            }
                        }
                        Err(e) => {
                            if let Ok(mut f) = failure.lock() {
                                f.get_or_insert(e);
                            }
                            next.store(count, Ordering::Relaxed);
                            return;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().ok().flatten() {
        return Err(e);
    }
    let mut done = done
        .into_inner()
        .map_err(|_| anyhow::anyhow!("a worker panicked"))?;
    if done.len() != count {
        bail!("only {} of {count} work items were run", done.len());
    }
    done.sort_by_key(|d| d.0);
    Ok(done.into_iter().map(|d| d.1).collect())
}

/// Runs every policy over every series on `threads` threads; returns the
/// scores by policy then series, and the CPU time spent per policy.
fn execute(
    corpus: &[Series],
    policies: &[Policy],
    n: usize,
    threads: usize,
) -> Result<(Vec<Vec<SeriesScore>>, Vec<Duration>)> {
    let done: Vec<SeriesDone> = parallel(corpus.len(), threads, |i| {
        let obs = Observed::new(&corpus[i], i, n);
        let mut scores = Vec::with_capacity(policies.len());
        let mut times = Vec::with_capacity(policies.len());
        for p in policies {
            let t0 = Instant::now();
            let out = policies::run(p, &obs)?;
            scores.push(score::score(&corpus[i], p.timing(), &out));
            times.push(t0.elapsed());
        }
        Ok((i, scores, times))
    })?;
    let mut by_policy: Vec<Vec<SeriesScore>> =
        vec![Vec::with_capacity(corpus.len()); policies.len()];
    let mut cpu = vec![Duration::ZERO; policies.len()];
    for (_, scores, times) in done {
        for (k, (s, t)) in scores.into_iter().zip(times).enumerate() {
            by_policy[k].push(s);
            cpu[k] += t;
        }
    }
    Ok((by_policy, cpu))
}

/// The best peer at benchops' recall: for each peer, the grid point with
/// the fewest A/A false alarms among those whose recall is at least
/// `recall`.
#[derive(Debug, Clone)]
struct EqualRecall {
    peer: &'static str,
    pick: Option<Figures>,
    loosest_recall: Option<f64>,
}

fn equal_recall(curves: &[(&'static str, Vec<Figures>)], recall: f64) -> Vec<EqualRecall> {
    curves
        .iter()
        .map(|(peer, figs)| {
            let pick = figs
                .iter()
                .filter(|f| f.recall_all.value().unwrap_or(0.0) >= recall)
                .min_by(|a, b| a.fa_all.per_mille().total_cmp(&b.fa_all.per_mille()))
                .cloned();
            let loosest_recall = figs
                .iter()
                .filter_map(|f| f.recall_all.value())
                .max_by(f64::total_cmp);
            EqualRecall {
                peer,
                pick,
                loosest_recall,
            }
        })
        .collect()
}

/// One target: its statement, the figure, and whether it passes (`None`:
/// does not apply to this mode).
#[derive(Debug, Clone)]
struct Target {
    what: &'static str,
    figure: String,
    pass: Option<bool>,
}

/// The targets on a shifting machine, over the whole corpus (`all`), and
/// the bisection experiment's exact share (`None`: the mode does not
/// bisect).
fn session_targets(all: &Figures, bisect: Option<(usize, usize)>) -> Vec<Target> {
    let mut t = Vec::new();
    let fa = all.fa_le3;
    t.push(Target {
        what: "<= 1 false confirmed drift per 1,000 A/A case-runs, session CV <= 3% (and drift), CV inside <= 3%",
        figure: format!("{} /1000 ({} in {})", fa.pm(), fa.num, fa.den),
        pass: Some(fa.per_mille() <= 1.0),
    });
    let r = all.recall_ge10_le3;
    t.push(Target {
        what: "recall >= 98% for steps >= 10%, same conditions",
        figure: format!("{} ({}/{})", r.pct(), r.num, r.den),
        pass: Some(r.value().unwrap_or(0.0) >= 0.98),
    });
    let c = all.close_within2_le5;
    t.push(Target {
        what: "every issue closes within 2 lane runs after the fix, CV inside <= 5%",
        figure: format!("{} ({}/{})", c.pct(), c.num, c.den),
        pass: Some(c.num == c.den),
    });
    t.push(Target {
        what: "culprit named exactly in >= 95% of single-commit regressions >= 10%, N <= 64, within ceil(log2 N) + 2 steps",
        figure: match bisect {
            Some((num, den)) => format!(
                "{} ({num}/{den}, CV inside <= 3%)",
                report::Ratio { num, den }.pct()
            ),
            None => "does not bisect".into(),
        },
        pass: bisect.map(|(num, den)| den > 0 && num as f64 >= 0.95 * den as f64),
    });
    let (b, a, x) = all.extra_split();
    t.push(Target {
        what: "<= 0.5 extra runs per A/A case-run",
        figure: format!(
            "{:.3} (B side {b:.3}, A side {a:.3}, bisection {x:.3}; builds {:.3} per case-run)",
            b + a + x,
            all.builds_aa()
        ),
        pass: Some(b + a + x <= 0.5),
    });
    t
}

/// The targets of the stable-machine corpus (the corpus before sessions).
fn stable_targets(b: &Figures, peers: &[Figures], eq: &[EqualRecall]) -> Vec<Target> {
    let mut t = Vec::new();
    let fa = b.fa_le3.per_mille();
    t.push(Target {
        what: "stable machine: <= 1 false confirmed drift per 1,000 A/A case-runs at CV <= 3% (all noise kinds)",
        figure: format!("{fa:.3} /1000 ({} in {})", b.fa_le3.num, b.fa_le3.den),
        pass: Some(fa <= 1.0),
    });
    let r10 = b.recall_ge10_le3.value().unwrap_or(0.0);
    t.push(Target {
        what: "stable machine: recall >= 98% for steps >= 10% at CV <= 3%",
        figure: format!(
            "{} ({}/{})",
            b.recall_ge10_le3.pct(),
            b.recall_ge10_le3.num,
            b.recall_ge10_le3.den
        ),
        pass: Some(r10 >= 0.98),
    });
    let r5 = b.recall_ge5_le1.value().unwrap_or(0.0);
    t.push(Target {
        what: "stable machine: recall >= 95% for steps >= 5% at CV <= 1%",
        figure: format!(
            "{} ({}/{})",
            b.recall_ge5_le1.pct(),
            b.recall_ge5_le1.num,
            b.recall_ge5_le1.den
        ),
        pass: Some(r5 >= 0.95),
    });
    let f1 = b.f1().unwrap_or(0.0);
    let best_peer_f1 = peers
        .iter()
        .map(|p| (p.f1().unwrap_or(0.0), p.label.clone()))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    t.push(Target {
        what: "stable machine: F1 ahead of every peer",
        figure: match &best_peer_f1 {
            Some((v, l)) => format!("{:.2}% vs best peer {l} {:.2}%", f1 * 100.0, v * 100.0),
            None => format!("{:.2}%", f1 * 100.0),
        },
        pass: Some(best_peer_f1.is_none_or(|(v, _)| f1 > v)),
    });
    let best = eq
        .iter()
        .filter_map(|e| e.pick.as_ref().map(|p| (e.peer, p)))
        .min_by(|a, b| a.1.fa_all.per_mille().total_cmp(&b.1.fa_all.per_mille()));
    let mine = b.fa_all.per_mille();
    t.push(Target {
        what: "stable machine: at equal recall, <= 1/10 of the A/A false alarms of the best peer",
        figure: match best {
            Some((peer, p)) => format!(
                "{mine:.3} vs {peer} ({}) {:.3} /1000 at recall {}",
                p.label,
                p.fa_all.per_mille(),
                p.recall_all.pct()
            ),
            None => format!("{mine:.3} /1000; no peer reaches benchops' recall on its grid"),
        },
        pass: Some(best.is_none_or(|(_, p)| mine <= 0.1 * p.fa_all.per_mille())),
    });
    t.push(Target {
        what: "stable machine: 0 duplicate issues",
        figure: format!(
            "{} (issues per episode {:.3})",
            b.duplicates, b.issues_per_episode
        ),
        pass: Some(b.duplicates == 0),
    });
    t.push(Target {
        what: "stable machine: flaps <= 1% of regression episodes with an issue",
        figure: format!("{} ({}/{})", b.flaps.pct(), b.flaps.num, b.flaps.den),
        pass: Some(b.flaps.value().unwrap_or(0.0) <= 0.01),
    });
    t.push(Target {
        what: "stable machine: wrong closes <= 1% of regression episodes with an issue",
        figure: format!(
            "{} ({}/{})",
            b.wrong_closes.pct(),
            b.wrong_closes.num,
            b.wrong_closes.den
        ),
        pass: Some(b.wrong_closes.value().unwrap_or(0.0) <= 0.01),
    });
    t
}

fn print_targets(ts: &[Target]) {
    for t in ts {
        println!(
            "  [{}] {} — {}",
            match t.pass {
                Some(true) => "PASS",
                Some(false) => "FAIL",
                None => "n/a ",
            },
            t.what,
            t.figure
        );
    }
    let passed = ts.iter().filter(|t| t.pass == Some(true)).count();
    let apply = ts.iter().filter(|t| t.pass.is_some()).count();
    println!("  {passed} of {apply} targets pass");
}

fn targets_json(ts: &[Target]) -> Value {
    ts.iter()
        .map(|t| json!({"target": t.what, "figure": t.figure, "pass": t.pass}))
        .collect()
}

fn print_corpus(corpus: &[Series], args: &Args) {
    let total: usize = corpus.iter().map(|s| s.runs).sum();
    println!(
        "corpus: seed {:#x}, n = {} samples per run, {} series, {} case-runs{}",
        args.seed,
        args.n,
        corpus.len(),
        total,
        if args.quick { ", --quick" } else { "" }
    );
    println!(
        "  {:<22}{:>14}{:>14}{:>14}{:>14}",
        "family", "stable", "shifting", "A/A cv<=3%", "all"
    );
    let mut names: Vec<&str> = Vec::new();
    for s in corpus {
        if !names.contains(&s.family.name()) {
            names.push(s.family.name());
        }
    }
    for name in names {
        let of = |f: &dyn Fn(&Series) -> bool| -> usize {
            corpus
                .iter()
                .filter(|s| s.family.name() == name && f(s))
                .map(|s| s.runs)
                .sum()
        };
        println!(
            "  {name:<22}{:>14}{:>14}{:>14}{:>14}",
            of(&|s| s.session == Session::Stable),
            of(&|s| s.session != Session::Stable),
            of(&|s| s.family == Family::AA && s.cv <= 0.03 + 1e-12),
            of(&|_| true),
        );
    }
}

/// The figures of each policy: pooled, on the stable machine, and by
/// session condition.
struct PolicyFigures {
    all: Figures,
    stable: Figures,
    by_session: Vec<Figures>,
}

fn policy_figures(label: &str, scores: &[SeriesScore], n: usize) -> PolicyFigures {
    let refs = |f: &dyn Fn(&SeriesScore) -> bool| -> Vec<&SeriesScore> {
        scores.iter().filter(|s| f(s)).collect()
    };
    PolicyFigures {
        all: report::figures(label.to_owned(), &refs(&|_| true), n),
        stable: report::figures(label.to_owned(), &refs(&|s| s.session == 0), n),
        by_session: (0..Session::ALL.len())
            .map(|si| report::figures(label.to_owned(), &refs(&|s| s.session == si), n))
            .collect(),
    }
}

/// Entry point of `cargo xtask detection-bench`.
pub(crate) fn main(raw: &[String]) -> Result<()> {
    let args = parse(raw)?;
    let started = Instant::now();
    let spec = if args.quick {
        Spec::QUICK
    } else {
        Spec::DEFAULT
    };
    let corpus = corpus::build(spec, args.seed);
    print_corpus(&corpus, &args);
    println!("benchops settings: {}", describe(&args.settings));
    println!(
        "detection window K = {} runs; threads = {}\n",
        score::K,
        args.threads
    );

    let mut variants: Vec<(String, Settings)> = vec![("".into(), args.settings.clone())];
    if args.sweep {
        variants.extend(sweep_grid(&args.settings));
    }
    let mut policies: Vec<Policy> = Vec::new();
    for (id, (name, s)) in variants.iter().enumerate() {
        for mode in [Mode::Stored, Mode::SameSession(SsRule::LANE)] {
            let label = if name.is_empty() {
                format!("benchops {}", mode.name())
            } else {
                format!(
                    "{} [{name}]",
                    if mode.is_same_session() {
                        "ss"
                    } else {
                        "stored"
                    }
                )
            };
            policies.push(Policy::Benchops {
                id,
                name: label,
                settings: Box::new(s.clone()),
                mode,
            });
        }
    }
    // The same-session comparison with today's lane choices, to show
    // what the lane-side rules add.
    let plain_at = policies.len();
    policies.push(Policy::Benchops {
        id: 0,
        name: "same-session plain".into(),
        settings: Box::new(args.settings.clone()),
        mode: Mode::SameSession(SsRule::PLAIN),
    });
    let lanes = if args.sweep { lane_grid() } else { Vec::new() };
    let lanes_at = policies.len();
    for (name, rule) in &lanes {
        policies.push(Policy::Benchops {
            id: 0,
            name: format!("ss [{name}]"),
            settings: Box::new(args.settings.clone()),
            mode: Mode::SameSession(*rule),
        });
    }
    let pinpoint_at = policies.len();
    policies.push(Policy::Pinpoint {
        alpha: PINPOINT_ALPHA,
        confirm_runs: args.settings.confirm_runs,
    });
    let peers_at = policies.len();
    policies.extend(main_peers());
    let named = policies.len();
    let curve_defs = if args.curves { curves() } else { Vec::new() };
    let mut curve_index: Vec<(&'static str, Vec<usize>)> = Vec::new();
    for (name, grid) in curve_defs {
        let mut idx = Vec::new();
        for p in grid {
            let found = policies[peers_at..]
                .iter()
                .position(|q| q.label() == p.label())
                .map(|k| k + peers_at);
            idx.push(found.unwrap_or_else(|| {
                policies.push(p);
                policies.len() - 1
            }));
        }
        curve_index.push((name, idx));
    }

    let (scores, cpu) = execute(&corpus, &policies, args.n, args.threads)?;
    let figs: Vec<PolicyFigures> = policies
        .iter()
        .zip(&scores)
        .map(|(p, s)| policy_figures(&p.label(), s, args.n))
        .collect();
    let corpus_elapsed = started.elapsed();

    // The bisection experiment: benchops' step rule for each settings
    // variant, and Pinpoint's.
    let reps = args.bisect_reps.unwrap_or(if args.quick { 2 } else { 12 });
    let bisect_started = Instant::now();
    let rules: Vec<(String, StepRule<'_>)> = variants
        .iter()
        .map(|(name, s)| {
            (
                if name.is_empty() {
                    "benchops same-session".to_owned()
                } else {
                    format!("ss [{name}]")
                },
                StepRule::Benchops(s),
            )
        })
        .chain([(
            format!("pinpoint p<={PINPOINT_ALPHA}"),
            StepRule::Pinpoint(PINPOINT_ALPHA),
        )])
        .collect();
    let step_rules: Vec<StepRule<'_>> = rules.iter().map(|r| r.1).collect();
    let per_condition = parallel(bisection::conditions().len(), args.threads, |ci| {
        bisection::experiment(
            &step_rules,
            ci,
            reps,
            args.settings.confirm_runs as usize,
            args.seed,
        )
    })?;
    let mut trials: Vec<(String, Vec<TrialScore>)> =
        rules.iter().map(|r| (r.0.clone(), Vec::new())).collect();
    for cond in per_condition {
        for (k, ts) in cond.into_iter().enumerate() {
            trials[k].1.extend(ts);
        }
    }
    let bisect_elapsed = bisect_started.elapsed();
    let elapsed = started.elapsed();

    let main_idx: Vec<usize> = (0..named).filter(|&k| k < 2 || k >= plain_at).collect();
    let stable_main: Vec<&Figures> = main_idx.iter().map(|&k| &figs[k].stable).collect();
    let all_main: Vec<&Figures> = main_idx.iter().map(|&k| &figs[k].all).collect();
    let peers_stable: Vec<Figures> = (peers_at..named).map(|k| figs[k].stable.clone()).collect();
    let curve_figs: Vec<(&'static str, Vec<Figures>)> = curve_index
        .iter()
        .map(|(name, idx)| (*name, idx.iter().map(|&k| figs[k].stable.clone()).collect()))
        .collect();

    println!("==== Stable machine (session none): the corpus as before sessions were modelled");
    println!(
        "== Summary (FA: A/A alarms per 1,000 case-runs; R: recall of true regressions within K runs;"
    );
    println!(
        "   prec: share of announcements that are a first detection; delay: median runs to a known alarm;"
    );
    println!("   extra: extra runs per A/A case-run)");
    print!("{}", report::summary(&stable_main));
    println!("\n== A/A false alarms per 1,000 case-runs, by noise kind and CV");
    print!("{}", report::false_alarms(&stable_main));
    println!("\n== Recall of regression steps by size and CV (all noise kinds pooled)");
    print!("{}", report::recall(&stable_main));
    println!(
        "\n== Recall of steps >= 10% at CV <= 3% by noise kind; two nearby changes (+10% at run 20, +10% at 25); +20% then fixed"
    );
    print!("{}", report::recall_more(&stable_main));
    println!(
        "\n== Lifecycle (benchops: open on a confirmed regression, close on a clearing verdict;"
    );
    println!(
        "   peers: open on an alarm, close on the next run without one) and slow code drift (+0.2%/run)"
    );
    print!("{}", report::lifecycle(&stable_main));
    for pf in figs.iter().take(2) {
        let b = &pf.stable;
        println!(
            "\n== {} verdicts on the A/A series by CV, and regression-then-fix series whose issue is still open 15 runs after the fix",
            b.label
        );
        print!("{}", report::verdict_mix(b));
    }

    println!(
        "\n==== Shifting machine: each session condition (none, session CV 1/2/3%, slow machine drift), and pooled"
    );
    println!(
        "   FA and recall at CV inside the session <= 3%; issues, re-opens, inconclusive and not-confirmed shares on those A/A series;"
    );
    println!(
        "   close<=2: fixed regressions (issue open at the fix, CV inside <= 5%) closed within 2 lane runs; extra: runs per A/A case-run"
    );
    let rows: Vec<(String, Vec<Figures>, Figures)> = main_idx
        .iter()
        .map(|&k| {
            (
                figs[k].all.label.clone(),
                figs[k].by_session.clone(),
                figs[k].all.clone(),
            )
        })
        .collect();
    print!("{}", report::by_session(&rows));
    println!(
        "\n== A/A false alarms per 1,000 case-runs (FA) and recall of steps >= 10% (R), by session condition and noise inside the session"
    );
    let cell_rows: Vec<(String, &[SeriesScore])> = [0, 1, plain_at, pinpoint_at]
        .iter()
        .map(|&k| (policies[k].label(), &scores[k][..]))
        .collect();
    print!(
        "{}",
        report::session_cells(&cell_rows, &corpus::session_cells())
    );
    println!(
        "\n== Fixed regressions (issue open at the fix) closed within 2 lane runs, by CV inside the session (all session conditions)"
    );
    print!("{}", report::closes(&all_main));
    println!(
        "\n== Cost on the A/A series (extra runs per case-run: candidate side, baseline side, bisection; builds per case-run),"
    );
    println!(
        "   builds per issue on a true regression (side A + bisection midpoints), and the lane's bisections of single-commit regressions >= 10% at CV <= 3%"
    );
    print!("{}", report::costs(&all_main));

    println!(
        "\n== Bisection: ranges of N commits with one culprit, each step the midpoint and both bounds interleaved in one session"
    );
    println!(
        "   ({} trials per condition, range and size; session CV 3%; exact/wrong commit, range with/without the culprit; CV inside <= 3%)",
        reps
    );
    print!("{}", bisection::report(&trials));

    let mut json_variants = Vec::new();
    let eq_for = |f: &Figures| equal_recall(&curve_figs, f.recall_all.value().unwrap_or(0.0));
    println!(
        "\n== Peers at benchops' recall on the stable machine: each peer's grid point with recall >= it and the fewest A/A false alarms"
    );
    for pf in figs.iter().take(2) {
        let f = &pf.stable;
        println!("  {} (recall {}):", f.label, f.recall_all.pct());
        let eq = eq_for(f);
        for e in &eq {
            match &e.pick {
                Some(p) => println!(
                    "    {:<24} {:<20} recall {:>7}  FA {:>8.3} /1000  F1 {}",
                    e.peer,
                    p.label,
                    p.recall_all.pct(),
                    p.fa_all.per_mille(),
                    opt_pct(p.f1())
                ),
                None => println!(
                    "    {:<24} never reaches it on its grid (best recall {})",
                    e.peer,
                    e.loosest_recall
                        .map_or("-".into(), |r| format!("{:.1}%", r * 100.0))
                ),
            }
        }
        if eq.is_empty() {
            println!("    (skipped: --no-curves)");
        }
    }

    for (v, (name, settings)) in variants.iter().enumerate() {
        for (m, mode) in [Mode::Stored, Mode::SameSession(SsRule::LANE)]
            .iter()
            .enumerate()
        {
            let k = 2 * v + m;
            let pf = &figs[k];
            let bis = mode
                .is_same_session()
                .then(|| bisection::exact_in_target(&trials[v].1));
            let mut ts = session_targets(&pf.all, bis);
            let eq = eq_for(&pf.stable);
            ts.extend(stable_targets(&pf.stable, &peers_stable, &eq));
            println!(
                "\n== Targets: {} ({}{})",
                pf.all.label,
                if name.is_empty() { "" } else { "variant; " },
                describe(settings)
            );
            if v > 0 {
                print!(
                    "{}",
                    report::by_session(&[(
                        pf.all.label.clone(),
                        pf.by_session.clone(),
                        pf.all.clone(),
                    )])
                );
            }
            print_targets(&ts);
            json_variants.push(json!({
                "name": pf.all.label,
                "mode": mode.name(),
                "settings": describe(settings),
                "figures": report::to_json(&pf.all),
                "figures_stable": report::to_json(&pf.stable),
                "figures_by_session": pf.by_session.iter().zip(Session::ALL).map(|(f, s)| json!({
                    "session": s.name(),
                    "figures": report::to_json(f),
                })).collect::<Vec<_>>(),
                "bisection_exact_cv_le_3pct": bis.map(|(num, den)| json!({"num": num, "den": den})),
                "targets": targets_json(&ts),
            }));
        }
    }
    for (i, (name, _)) in lanes.iter().enumerate() {
        let pf = &figs[lanes_at + i];
        let ts = session_targets(&pf.all, Some(bisection::exact_in_target(&trials[0].1)));
        println!("\n== Targets: {} (lane-side variant)", pf.all.label);
        print_targets(&ts);
        json_variants.push(json!({
            "name": pf.all.label,
            "mode": "same-session",
            "lane_rule": name,
            "figures": report::to_json(&pf.all),
            "targets": targets_json(&ts),
        }));
    }
    let pinpoint_rule = rules
        .iter()
        .position(|r| matches!(r.1, StepRule::Pinpoint(_)))
        .unwrap_or(0);
    let (pnum, pden) = bisection::exact_in_target(&trials[pinpoint_rule].1);
    println!(
        "\n== Bisection, culprit named exactly at CV inside <= 3% (all ranges and sizes), by step rule"
    );
    for (label, ts) in &trials {
        let (num, den) = bisection::exact_in_target(ts);
        println!(
            "  {label:<28} {} ({num}/{den})",
            report::Ratio { num, den }.pct()
        );
    }
    println!(
        "\n== {} (no targets of its own): FA {} /1000, recall {}, closes within 2 runs {}, culprit exact {}, extra runs {:.3} per A/A case-run",
        figs[pinpoint_at].all.label,
        figs[pinpoint_at].all.fa_le3.pm(),
        figs[pinpoint_at].all.recall_ge10_le3.pct(),
        figs[pinpoint_at].all.close_within2_le5.pct(),
        report::Ratio {
            num: pnum,
            den: pden
        }
        .pct(),
        figs[pinpoint_at].all.extra_aa,
    );

    if args.explain {
        explain(&scores[0], "benchops stored");
        explain(&scores[1], "benchops same-session");
    }

    println!("\n== CPU time by policy (seconds, summed over threads)");
    for (p, t) in policies.iter().zip(&cpu).take(named) {
        println!("  {:<22}{:>9.1}", p.label(), t.as_secs_f64());
    }
    let rest: f64 = cpu.iter().skip(named).map(Duration::as_secs_f64).sum();
    println!("  {:<22}{:>9.1}", "peer grids", rest);
    println!(
        "wall time {:.1} s on {} threads (corpus {:.1} s, bisection experiment {:.1} s); process CPU time {}",
        elapsed.as_secs_f64(),
        args.threads,
        corpus_elapsed.as_secs_f64(),
        bisect_elapsed.as_secs_f64(),
        process_cpu().map_or_else(|| "unknown".into(), |c| format!("{c:.1} s"))
    );

    if let Some(path) = &args.json {
        let doc = json!({
            "seed": args.seed,
            "n": args.n,
            "quick": args.quick,
            "k_runs": score::K,
            "series": corpus.len(),
            "case_runs": corpus.iter().map(|s| s.runs).sum::<usize>(),
            "wall_seconds": elapsed.as_secs_f64(),
            "threads": args.threads,
            "variants": json_variants,
            "policies": main_idx.iter().skip(2).map(|&k| json!({
                "figures": report::to_json(&figs[k].all),
                "figures_stable": report::to_json(&figs[k].stable),
                "figures_by_session": figs[k].by_session.iter().zip(Session::ALL).map(|(f, s)| json!({
                    "session": s.name(),
                    "figures": report::to_json(f),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
            "bisection": trials.iter().map(|(label, ts)| {
                let (num, den) = bisection::exact_in_target(ts);
                json!({"rule": label, "exact_cv_le_3pct": {"num": num, "den": den}, "trials": ts.len()})
            }).collect::<Vec<_>>(),
            "peer_grids": curve_figs.iter().map(|(name, fs)| json!({
                "peer": name,
                "points": fs.iter().map(|f| json!({
                    "policy": f.label,
                    "recall": f.recall_all.json(),
                    "fa_per_1000_all": f.fa_all.per_mille(),
                    "fa_per_1000_cv_le_3pct": f.fa_le3.per_mille(),
                    "precision": f.precision.json(),
                    "f1": f.f1(),
                })).collect::<Vec<_>>(),
            })).collect::<Vec<_>>(),
        });
        let text = serde_json::to_string_pretty(&doc).context("json")?;
        write_figures(path, &(text + "\n"))?;
        println!("figures written to {path}");
    }
    Ok(())
}

/// Writes the `--json` figures to `path`, creating its directory (the
/// default `target/` is absent when `CARGO_TARGET_DIR` points elsewhere).
fn write_figures(path: &str, text: &str) -> Result<()> {
    let dir = std::path::Path::new(path)
        .parent()
        .filter(|d| !d.as_os_str().is_empty());
    if let Some(dir) = dir {
        std::fs::create_dir_all(dir)
            .with_context(|| format!("--json {path}: creating {}", dir.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("--json {path}: writing the figures"))
}

fn opt_pct(v: Option<f64>) -> String {
    v.map_or_else(|| "-".into(), |v| format!("{:.1}%", v * 100.0))
}

/// User plus system CPU seconds of this process, from `/proc/self/stat`
/// (Linux; clock ticks assumed at 100 per second).
fn process_cpu() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the parenthesised command name; utime and stime are the
    // 14th and 15th fields of the line, the 12th and 13th after it.
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = f.get(11)?.parse::<f64>().ok()? + f.get(12)?.parse::<f64>().ok()?;
    Some(ticks / 100.0)
}

/// Prints the benchops series behind its misses and false alarms, with
/// their verdict traces.
fn explain(scores: &[SeriesScore], name: &str) {
    let label = |s: &SeriesScore| {
        let fam = match s.family {
            Family::Step(x) => format!("step {:+.0}%", x * 100.0),
            f => f.name().to_owned(),
        };
        format!(
            "{fam:<20} {:<11} cv {:>4}% session {:<6}",
            s.noise.name(),
            s.cv_value() * 100.0,
            Session::ALL[s.session].name()
        )
    };
    println!(
        "\n== {name} traces (- no baseline, . within band, ? inconclusive, n not confirmed, R confirmed regression, I confirmed improvement)"
    );
    println!("A/A series with an alarm:");
    for s in scores
        .iter()
        .filter(|s| s.family == Family::AA && s.alarms > 0)
    {
        println!("  {}  {}", label(s), s.trace);
    }
    println!("regression steps >= 5% at CV <= 3% not detected within K:");
    for s in scores.iter().filter(|s| {
        matches!(s.family, Family::Step(x) if x >= 0.05 - 1e-12)
            && s.cv_value() <= 0.03 + 1e-12
            && s.events.iter().any(|e| !e.detected)
    }) {
        println!("  {}  {}", label(s), s.trace);
    }
    println!("false announcements outside A/A:");
    for s in scores
        .iter()
        .filter(|s| s.family != Family::AA && s.family != Family::Drift && s.opens > s.true_opens)
    {
        println!("  {}  {}", label(s), s.trace);
    }
    println!("lane bisections of a single culprit that did not name it:");
    for s in scores.iter() {
        for b in s
            .bisections
            .iter()
            .filter(|b| b.single_culprit && b.named != bisection::Named::Exact)
        {
            println!(
                "  {}  at run {} over {} commits: {:?} in {} steps",
                label(s),
                b.at,
                b.commits,
                b.named,
                b.steps
            );
        }
    }
    println!("regression-then-fix series with an issue still open at the end:");
    for s in scores.iter().filter(|s| {
        s.family == Family::RegressFix && s.episode.is_some_and(|e| e.left_open_after_fix)
    }) {
        println!("  {}  {}", label(s), s.trace);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_json_figures_go_into_a_directory_that_does_not_exist_yet() {
        let dir = std::env::temp_dir().join(format!("detection-json-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let path = dir.join("target").join("detection.json");
        let path = path.to_str().expect("utf-8 path");
        write_figures(path, "{}\n").expect("written");
        assert_eq!(std::fs::read_to_string(path).expect("read"), "{}\n");
        // A directory where the file should be: the error names the flag.
        let err = write_figures(dir.to_str().expect("utf-8 path"), "{}").expect_err("a directory");
        assert!(format!("{err:#}").contains("--json"), "{err:#}");
        std::fs::remove_dir_all(&dir).expect("cleanup");
    }
}
