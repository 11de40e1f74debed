//! `cargo xtask detection-bench`: the detection quality of benchops' drift
//! policy against re-implementations of peer tools' published alarm rules,
//! on a labelled synthetic corpus drawn from fixed seeds. Figures, not a
//! timed test; `docs/detection.md` describes the corpus, the rules and the
//! scoring, and holds the measured tables.
//!
//! ```text
//! cargo run -p xtask --release -- detection-bench [--quick] [--n N]
//!     [--seed S] [--threads T] [--json PATH] [--no-curves] [--sweep]
//!     [--threshold X] [--fence X] [--confirm-runs N] [--level X]
//!     [--confirm-level X] [--resamples N]
//! ```
//!
//! - `--quick`: a corpus about an eighth of the default one.
//! - `--n`: samples per run (default 10).
//! - `--threshold`, `--fence`, … change the benchops settings under test
//!   (`band.threshold`, `band.noise_fence_mads`, `confirm_runs`, `level`,
//!   `confirm_level`, `resamples`).
//! - `--sweep`: also runs a small grid of alternative benchops settings and
//!   prints the targets for each.
//! - `--no-curves`: skips the peers' threshold grids (the equal-recall
//!   comparison).

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

use corpus::{Family, Series, Spec};
use policies::{Observed, Policy};
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
    add("confirm_level 0.995", &|s| s.confirm_level = 0.995);
    add("confirm_level 0.999", &|s| s.confirm_level = 0.999);
    add("fence 1.5 MAD", &|s| s.band.noise_fence_mads = 1.5);
    add("fence 2 MAD", &|s| s.band.noise_fence_mads = 2.0);
    add("level 0.99", &|s| s.level = 0.99);
    add("confirm_runs 20", &|s| s.confirm_runs = 20);
    add("fence 1.5, confirm_runs 20", &|s| {
        s.band.noise_fence_mads = 1.5;
        s.confirm_runs = 20;
    });
    out
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

/// Runs every policy over every series on `threads` threads; returns the
/// scores by policy then series, and the CPU time spent per policy.
fn execute(
    corpus: &[Series],
    policies: &[Policy],
    n: usize,
    threads: usize,
) -> Result<(Vec<Vec<SeriesScore>>, Vec<Duration>)> {
    let next = AtomicUsize::new(0);
    let done: Mutex<Vec<SeriesDone>> = Mutex::new(Vec::new());
    let failure: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= corpus.len() {
                        break;
                    }
                    let obs = Observed::new(&corpus[i], i, n);
                    let mut scores = Vec::with_capacity(policies.len());
                    let mut times = Vec::with_capacity(policies.len());
                    for p in policies {
                        let t0 = Instant::now();
                        match policies::run(p, &obs) {
                            Ok(out) => scores.push(score::score(&corpus[i], p.timing(), &out)),
                            Err(e) => {
                                if let Ok(mut f) = failure.lock() {
                                    f.get_or_insert(e);
                                }
                                next.store(corpus.len(), Ordering::Relaxed);
                                return;
                            }
                        }
                        times.push(t0.elapsed());
                    }
                    if let Ok(mut d) = done.lock() {
                        d.push((i, scores, times));
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
    if done.len() != corpus.len() {
        bail!("only {} of {} series were run", done.len(), corpus.len());
    }
    done.sort_by_key(|d| d.0);
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

/// One target: its statement, the figure, and whether it passes.
#[derive(Debug, Clone)]
struct Target {
    what: &'static str,
    figure: String,
    pass: bool,
}

fn targets(b: &Figures, peers: &[Figures], eq: &[EqualRecall]) -> Vec<Target> {
    let mut t = Vec::new();
    let fa = b.fa_le3.per_mille();
    t.push(Target {
        what: "<= 1 false confirmed drift per 1,000 A/A case-runs at CV <= 3% (all noise kinds)",
        figure: format!("{fa:.3} /1000 ({} in {})", b.fa_le3.num, b.fa_le3.den),
        pass: fa <= 1.0,
    });
    let r10 = b.recall_ge10_le3.value().unwrap_or(0.0);
    t.push(Target {
        what: "recall >= 98% for steps >= 10% at CV <= 3%",
        figure: format!(
            "{} ({}/{})",
            b.recall_ge10_le3.pct(),
            b.recall_ge10_le3.num,
            b.recall_ge10_le3.den
        ),
        pass: r10 >= 0.98,
    });
    let r5 = b.recall_ge5_le1.value().unwrap_or(0.0);
    t.push(Target {
        what: "recall >= 95% for steps >= 5% at CV <= 1%",
        figure: format!(
            "{} ({}/{})",
            b.recall_ge5_le1.pct(),
            b.recall_ge5_le1.num,
            b.recall_ge5_le1.den
        ),
        pass: r5 >= 0.95,
    });
    let f1 = b.f1().unwrap_or(0.0);
    let best_peer_f1 = peers
        .iter()
        .map(|p| (p.f1().unwrap_or(0.0), p.label.clone()))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    t.push(Target {
        what: "F1 ahead of every peer",
        figure: match &best_peer_f1 {
            Some((v, l)) => format!("{:.2}% vs best peer {l} {:.2}%", f1 * 100.0, v * 100.0),
            None => format!("{:.2}%", f1 * 100.0),
        },
        pass: best_peer_f1.is_none_or(|(v, _)| f1 > v),
    });
    let best = eq
        .iter()
        .filter_map(|e| e.pick.as_ref().map(|p| (e.peer, p)))
        .min_by(|a, b| a.1.fa_all.per_mille().total_cmp(&b.1.fa_all.per_mille()));
    let mine = b.fa_all.per_mille();
    t.push(Target {
        what: "at equal recall, <= 1/10 of the A/A false alarms of the best peer",
        figure: match best {
            Some((peer, p)) => format!(
                "{mine:.3} vs {peer} ({}) {:.3} /1000 at recall {}",
                p.label,
                p.fa_all.per_mille(),
                p.recall_all.pct()
            ),
            None => format!("{mine:.3} /1000; no peer reaches benchops' recall on its grid"),
        },
        pass: best.is_none_or(|(_, p)| mine <= 0.1 * p.fa_all.per_mille()),
    });
    t.push(Target {
        what: "0 duplicate issues",
        figure: format!(
            "{} (issues per episode {:.3})",
            b.duplicates, b.issues_per_episode
        ),
        pass: b.duplicates == 0,
    });
    t.push(Target {
        what: "flaps <= 1% of regression episodes with an issue",
        figure: format!("{} ({}/{})", b.flaps.pct(), b.flaps.num, b.flaps.den),
        pass: b.flaps.value().unwrap_or(0.0) <= 0.01,
    });
    t.push(Target {
        what: "wrong closes <= 1% of regression episodes with an issue",
        figure: format!(
            "{} ({}/{})",
            b.wrong_closes.pct(),
            b.wrong_closes.num,
            b.wrong_closes.den
        ),
        pass: b.wrong_closes.value().unwrap_or(0.0) <= 0.01,
    });
    t.push(Target {
        what: "<= 0.3 extra runs per case-run on the A/A series",
        figure: format!("{:.3}", b.extra_aa),
        pass: b.extra_aa <= 0.3,
    });
    t
}

fn print_targets(ts: &[Target]) {
    for t in ts {
        println!(
            "  [{}] {} — {}",
            if t.pass { "PASS" } else { "FAIL" },
            t.what,
            t.figure
        );
    }
    let passed = ts.iter().filter(|t| t.pass).count();
    println!("  {passed} of {} targets pass", ts.len());
}

fn targets_json(ts: &[Target]) -> Value {
    ts.iter()
        .map(|t| json!({"target": t.what, "figure": t.figure, "pass": t.pass}))
        .collect()
}

fn print_corpus(corpus: &[Series], args: &Args) {
    let mut rows: Vec<(&str, usize, usize)> = Vec::new();
    for s in corpus {
        let name = s.family.name();
        match rows.iter_mut().find(|r| r.0 == name) {
            Some(r) => {
                r.1 += 1;
                r.2 += s.runs;
            }
            None => rows.push((name, 1, s.runs)),
        }
    }
    let total: usize = rows.iter().map(|r| r.2).sum();
    let aa_le3: usize = corpus
        .iter()
        .filter(|s| s.family == Family::AA && s.cv <= 0.03 + 1e-12)
        .map(|s| s.runs)
        .sum();
    println!(
        "corpus: seed {:#x}, n = {} samples per run, {} series, {} case-runs ({} A/A case-runs at CV <= 3%){}",
        args.seed,
        args.n,
        corpus.len(),
        total,
        aa_le3,
        if args.quick { ", --quick" } else { "" }
    );
    for (name, series, runs) in rows {
        println!("  {name:<22}{series:>6} series {runs:>8} case-runs");
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

    let mut variants: Vec<(String, Settings)> = vec![("benchops".into(), args.settings.clone())];
    if args.sweep {
        variants.extend(sweep_grid(&args.settings));
    }
    let mut policies: Vec<Policy> = variants
        .iter()
        .map(|(_, s)| Policy::Benchops(Box::new(s.clone())))
        .collect();
    let peers_at = policies.len();
    policies.extend(main_peers());
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
    let figs: Vec<Figures> = policies
        .iter()
        .zip(&scores)
        .enumerate()
        .map(|(k, (p, s))| {
            let label = if k < variants.len() {
                variants[k].0.clone()
            } else {
                p.label()
            };
            report::figures(label, s, args.n)
        })
        .collect();
    let elapsed = started.elapsed();

    let main: Vec<&Figures> = figs[..peers_at + main_peers().len()]
        .iter()
        .enumerate()
        .filter(|(k, _)| *k == 0 || *k >= peers_at)
        .map(|(_, f)| f)
        .collect();
    let peers: Vec<Figures> = figs[peers_at..peers_at + main_peers().len()].to_vec();
    let curve_figs: Vec<(&'static str, Vec<Figures>)> = curve_index
        .iter()
        .map(|(name, idx)| (*name, idx.iter().map(|&k| figs[k].clone()).collect()))
        .collect();

    println!(
        "== Summary (FA: A/A alarms per 1,000 case-runs; R: recall of true regressions within K runs;"
    );
    println!(
        "   prec: share of announcements that are a first detection; delay: median runs to a known alarm;"
    );
    println!("   extra: extra runs per A/A case-run)");
    print!("{}", report::summary(&main));
    println!("\n== A/A false alarms per 1,000 case-runs, by noise kind and CV");
    print!("{}", report::false_alarms(&main));
    println!("\n== Recall of regression steps by size and CV (all noise kinds pooled)");
    print!("{}", report::recall(&main));
    println!(
        "\n== Recall of steps >= 10% at CV <= 3% by noise kind; two nearby changes (+10% at 40, +10% at 45); +20% then fixed"
    );
    print!("{}", report::recall_more(&main));
    println!(
        "\n== Lifecycle (benchops: open on a confirmed regression, close on a clearing verdict;"
    );
    println!(
        "   peers: open on an alarm, close on the next run without one) and slow drift (+0.2%/run)"
    );
    print!("{}", report::lifecycle(&main));
    let b = &figs[0];
    let v = b.verdicts;
    println!(
        "\nbenchops verdicts: within_band {} | inconclusive {} | not_confirmed {} | confirmed_regression {} | confirmed_improvement {}",
        v[0], v[1], v[2], v[3], v[4]
    );
    println!(
        "benchops extra runs per case-run: A/A {:.3} (confirmations on {} of {} A/A case-runs), whole corpus {:.3}",
        b.extra_aa, b.confirm_share_aa.num, b.confirm_share_aa.den, b.extra_all
    );
    println!(
        "\n== benchops verdicts on the A/A series by CV (share of case-runs with a verdict), and regression-then-fix series whose issue is still open 25 runs after the fix"
    );
    print!("{}", report::verdict_mix(b));

    let mut json_variants = Vec::new();
    for (k, (name, settings)) in variants.iter().enumerate() {
        let f = &figs[k];
        let eq = equal_recall(&curve_figs, f.recall_all.value().unwrap_or(0.0));
        if k == 0 {
            println!(
                "\n== Peers at benchops' recall ({}): each peer's grid point with recall >= it and the fewest A/A false alarms",
                f.recall_all.pct()
            );
            for e in &eq {
                match &e.pick {
                    Some(p) => println!(
                        "  {:<24} {:<20} recall {:>7}  FA {:>8.3} /1000  F1 {}",
                        e.peer,
                        p.label,
                        p.recall_all.pct(),
                        p.fa_all.per_mille(),
                        opt_pct(p.f1())
                    ),
                    None => println!(
                        "  {:<24} never reaches it on its grid (best recall {})",
                        e.peer,
                        e.loosest_recall
                            .map_or("-".into(), |r| format!("{:.1}%", r * 100.0))
                    ),
                }
            }
            if eq.is_empty() {
                println!("  (skipped: --no-curves)");
            }
            let online = eq
                .iter()
                .filter(|e| e.peer != "perfherder")
                .filter_map(|e| e.pick.as_ref().map(|p| (e.peer, p)))
                .min_by(|a, b| a.1.fa_all.per_mille().total_cmp(&b.1.fa_all.per_mille()));
            if let Some((peer, p)) = online {
                println!(
                    "  best online peer (Perfherder needs 11 later runs): {peer} {} at {:.3} /1000; benchops {:.3} /1000",
                    p.label,
                    p.fa_all.per_mille(),
                    f.fa_all.per_mille()
                );
            }
        }
        let ts = targets(f, &peers, &eq);
        println!("\n== Targets: {name} ({})", describe(settings));
        if k > 0 {
            print!("{}", report::summary(&[f]));
            print!("{}", report::lifecycle(&[f]));
        }
        print_targets(&ts);
        json_variants.push(json!({
            "name": name,
            "settings": describe(settings),
            "figures": report::to_json(f),
            "targets": targets_json(&ts),
            "equal_recall": eq.iter().map(|e| json!({
                "peer": e.peer,
                "pick": e.pick.as_ref().map(|p| json!({
                    "policy": p.label, "recall": p.recall_all.value(), "fa_per_1000": p.fa_all.per_mille()
                })),
            })).collect::<Vec<_>>(),
        }));
    }

    if args.explain {
        explain(&scores[0]);
    }

    println!("\n== CPU time by policy (seconds, summed over threads)");
    let named = variants.len() + main_peers().len();
    for (p, t) in policies.iter().zip(&cpu).take(named) {
        println!("  {:<22}{:>9.1}", p.label(), t.as_secs_f64());
    }
    let rest: f64 = cpu
        .iter()
        .skip(named)
        .map(Duration::as_secs_f64)
        .sum::<f64>()
        + 0.0;
    println!("  {:<22}{:>9.1}", "peer grids", rest);
    println!(
        "wall time {:.1} s on {} threads; process CPU time {}",
        elapsed.as_secs_f64(),
        args.threads,
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
            "policies": main.iter().skip(1).map(|f| report::to_json(f)).collect::<Vec<_>>(),
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
        std::fs::write(path, text + "\n").with_context(|| format!("writing {path}"))?;
        println!("figures written to {path}");
    }
    Ok(())
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
fn explain(scores: &[SeriesScore]) {
    let label = |s: &SeriesScore| {
        let fam = match s.family {
            Family::Step(x) => format!("step {:+.0}%", x * 100.0),
            f => f.name().to_owned(),
        };
        format!(
            "{fam:<20} {:<11} cv {:>4}%",
            s.noise.name(),
            s.cv_value() * 100.0
        )
    };
    println!(
        "\n== benchops traces (- no baseline, . within band, ? inconclusive, n not confirmed, R confirmed regression, I confirmed improvement)"
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
    println!("regression-then-fix series with an issue still open at the end:");
    for s in scores.iter().filter(|s| {
        s.family == Family::RegressFix && s.episode.is_some_and(|e| e.left_open_after_fix)
    }) {
        println!("  {}  {}", label(s), s.trace);
    }
}
