//! The commands of `benchops-exec`: parse the command line ([`crate::cli`]),
//! call one library function per command, print what it returns, and map
//! errors to the exit codes of [`crate::exit`]. The binary's `main` is one
//! call to [`main_with_args`].

use std::io::{self, Write as _};

use anyhow::{Context as _, Result};

use crate::print::{StdoutClosed, info, line, note, out, stdout_error};

use crate::cli::{self, BenchCommand, Cli, Command};
use crate::result::{self, SealContext};
use crate::seal::{self, SealFileError};
use crate::state::StateDir;
use crate::{bench, exit, render, watch};

mod gc;
mod lane;

use lane::lane_command;

/// Runs `benchops-exec` with `args` (the program name first) and returns
/// its exit code: what the binary's `main` does, callable from elsewhere
/// (the Python package's console script runs the same CLI through it).
pub fn main_with_args<I, T>(args: I) -> u8
where
    I: IntoIterator<Item = T>,
    T: Into<std::ffi::OsString> + Clone,
{
    let config = match benchops_cli::ProjectConfig::from_env() {
        Ok(c) => c,
        Err(e) => {
            note(format_args!(
                "{} {e}\n",
                benchops_cli::output::error_prefix()
            ));
            return exit::ERROR;
        }
    };
    let cli = match benchops_cli::parse::<Cli, _, _>(args, config.as_ref()) {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout and are not errors.
            let _ = e.print();
            return if e.use_stderr() {
                exit::ERROR
            } else {
                exit::OK
            };
        }
    };
    cli.output.apply();
    match run(cli) {
        Ok(code) => code,
        Err(e) if e.downcast_ref::<StdoutClosed>().is_some() => exit::OK,
        Err(e) => {
            note(format_args!(
                "{} {}\n",
                benchops_cli::output::error_prefix(),
                e.chain()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(": ")
            ));
            exit::ERROR
        }
    }
}

fn run(cli: Cli) -> Result<u8> {
    let state = StateDir::new(&cli.state);
    let scheduler = cli.scheduler();
    match cli.command {
        Command::Handoff {
            to,
            repository,
            attempts,
            backoff_ms,
            max_backoff_ms,
            timeout,
            keep,
            json,
            inputs,
        } => {
            use crate::handoff::{self, HandoffOptions, Outcome};
            let mut opts = HandoffOptions::new(to);
            opts.repository = repository;
            opts.attempts = attempts;
            opts.initial_backoff = std::time::Duration::from_millis(backoff_ms);
            opts.max_backoff = std::time::Duration::from_millis(max_backoff_ms.max(backoff_ms));
            opts.timeout = std::time::Duration::from_secs(timeout);
            opts.keep = keep;
            let files = handoff::collect(&inputs)?;
            // Say what each pause waits for: with the defaults, the tries of
            // one record can take half a minute.
            let done = handoff::deliver(&opts, &files, &mut |r| {
                note(format_args!(
                    "handoff: {} not delivered on try {} of {} ({}); trying again in {:.1} s\n",
                    r.file.display(),
                    r.attempt,
                    r.attempts,
                    benchops::terminal::escape_bounded(r.error, 200),
                    r.pause.as_secs_f64()
                ));
                std::thread::sleep(r.pause);
            })?;
            for d in &done {
                if json {
                    line(serde_json::to_string(d)?)?;
                } else {
                    line(render::handoff(d))?;
                }
            }
            let any = |f: fn(&Outcome) -> bool| done.iter().any(|d| f(&d.outcome));
            Ok(
                if any(|o| matches!(o, Outcome::Refused { .. } | Outcome::Invalid { .. })) {
                    exit::HANDOFF_REFUSED
                } else if any(|o| matches!(o, Outcome::Undelivered { .. })) {
                    exit::HANDOFF_UNDELIVERED
                } else {
                    exit::OK
                },
            )
        }
        Command::Platform(a) => {
            use benchops_platform::{self as platform, Driver, PlatformOptions, Verdict};
            let opts = PlatformOptions {
                platform: a.platform,
                driver: match a.driver {
                    cli::PlatformDriver::HarnessApi => Driver::HarnessApi,
                    cli::PlatformDriver::Cli => Driver::Cli,
                    cli::PlatformDriver::FakeProvider => Driver::FakeProvider,
                },
                scenario: a.scenario,
                protection_variant: a.protection_variant,
                repo: a.repo,
                runs: a.runs,
                token_env: a.token_env,
                spec: a.spec,
                semantics: a.semantics,
                results: a.results,
                workdir: a.workdir,
                api_url: a.api_url,
                ops_per_hour: a.ops_per_hour,
                admitted_output_chars: a.admitted_output_chars,
                lock_wait: std::time::Duration::from_secs(a.lock_wait),
                keep_workdirs: a.keep_workdirs,
                allow_large_live_run: a.allow_large_live_run,
            };
            let clock = platform::clock::SystemClock::new();
            let var = |k: &str| std::env::var(k).ok();
            let mut say = |l: &str| info(format_args!("{l}\n"));
            let mut env = platform::Env {
                var: &var,
                which: &platform::on_path,
                clock: &clock,
                say: &mut say,
            };
            if a.metrics && a.runs != 1 {
                note(format_args!(
                    "error: --metrics runs one run per case (a lane repeats the case); drop --runs\n"
                ));
                return Ok(exit::ERROR);
            }
            let report = match platform::run(&opts, &mut env) {
                Ok(r) => r,
                Err(e) => {
                    note(format_args!(
                        "{} {e}\n",
                        benchops_cli::output::error_prefix()
                    ));
                    return Ok(exit::ERROR);
                }
            };
            if a.metrics {
                for m in platform::metric_lines(&report.rows) {
                    line(m)?;
                }
                note(format_args!(
                    "[result] {}\n[summary] {}\n",
                    report.results.display(),
                    report.summary.display()
                ));
                return Ok(match report.verdict {
                    Verdict::Failed => exit::PLATFORM_FAILED,
                    Verdict::Ok | Verdict::AllSkipped => exit::OK,
                });
            }
            if a.json {
                line(serde_json::json!({
                    "run_id": report.run_id,
                    "results": report.results,
                    "summary": report.summary,
                    "rows": report.rows.len(),
                    "skipped": report.rows.iter().filter(|r| r.skipped).count(),
                    "failed": report.rows.iter().filter(|r| r.failed()).count(),
                }))?;
            } else {
                line(format_args!("[result] {}", report.results.display()))?;
                line(format_args!("[summary] {}", report.summary.display()))?;
            }
            Ok(match report.verdict {
                Verdict::Ok => exit::OK,
                Verdict::Failed => exit::PLATFORM_FAILED,
                Verdict::AllSkipped => exit::PLATFORM_ALL_SKIPPED,
            })
        }
        Command::Keygen { out, comment } => {
            let pair = crate::signing::keygen(&out, &comment)?;
            info(format_args!(
                "wrote {} (private, mode 0600) and {}\nfingerprint {}\nadd to allowed_signers, after the lane name (or *):\n",
                pair.private.display(),
                pair.public.display(),
                pair.fingerprint
            ));
            line(format_args!("{}", pair.public_line))?;
            Ok(exit::OK)
        }
        Command::Seal {
            draft,
            out,
            sign_key,
        } => match seal::seal_file(&draft, &out, load_signer(sign_key.as_deref())?.as_ref()) {
            Ok(o) => {
                line(render::sealed(&o))?;
                Ok(exit::OK)
            }
            Err(SealFileError::Invalid { path, source }) => {
                note(render::invalid_draft(&path, &source));
                Ok(exit::INVALID_DRAFT)
            }
            Err(e) => Err(e.into()),
        },
        Command::Worker { benchmark, attempt } => {
            let digest = state.resolve(&benchmark)?;
            let run = bench::run_worker(&state, &digest, attempt)?;
            Ok(if run.failed > 0 {
                exit::CHILD_FAILED
            } else {
                exit::OK
            })
        }
        Command::Child {
            benchmark,
            attempt,
            index,
            slurm,
            first_index,
        } => {
            let digest = state.resolve(&benchmark)?;
            let task = cli::task(index, slurm, first_index)?;
            let run = bench::run_task(&state, &digest, attempt, task)?;
            match run.result {
                Some(r) if r.succeeded() => Ok(exit::OK),
                Some(_) => Ok(exit::CHILD_FAILED),
                None => {
                    note(format_args!(
                        "benchmark was cancelled before child {} started\n",
                        run.index
                    ));
                    Ok(exit::CHILD_FAILED)
                }
            }
        }
        Command::Compare(args) => compare_command(&state, &scheduler, &args),
        Command::Bench(b) => bench_command(&state, &scheduler, b),
        Command::Lane(l) => lane_command(&state, &scheduler, l),
        Command::Gc(args) => gc::gc_command(&state, &args),
        Command::Subject(c) => {
            let subjects = crate::subject::Subjects::new(&state);
            match c {
                cli::SubjectCommand::List => {
                    for (commit, used) in subjects.list() {
                        let used = jiff::Timestamp::try_from(used)
                            .map(|t| t.to_string())
                            .unwrap_or_default();
                        line(format_args!(
                            "{commit}  last used {used}  {}",
                            subjects.tree(&commit).display()
                        ))?;
                    }
                }
                cli::SubjectCommand::Prune { keep } => {
                    let removed = subjects.prune(keep, &[])?;
                    for commit in &removed {
                        line(format_args!("removed {commit}"))?;
                    }
                    line(format_args!(
                        "{} tree(s) removed, {} kept",
                        removed.len(),
                        subjects.list().len()
                    ))?;
                }
            }
            Ok(exit::OK)
        }
    }
}

/// `compare`: plan both sides, submit what is not submitted yet, wait with
/// the progress bar of `bench run`, then print the verdicts.
fn compare_command(
    state: &StateDir,
    scheduler: &crate::backend::SchedulerOptions,
    args: &cli::CompareArgs,
) -> Result<u8> {
    use crate::ab::{self, Outcome};
    let suite = match (&args.intent, &args.manifest, &args.lane) {
        (Some(intent), _, _) => ab::Suite::Intent(intent.clone()),
        (None, Some(manifest), Some(lane)) => ab::Suite::Lane {
            manifest: manifest.clone(),
            lane: lane.clone(),
        },
        _ => anyhow::bail!("give --intent FILE, or --manifest FILE with --lane LANE"),
    };
    let [a, b] = args.commits.as_slice() else {
        anyhow::bail!("--commits takes two revisions: A (the baseline) and B (the candidate)");
    };
    let opts = ab::CompareOptions {
        suite,
        subject: args.subject.clone(),
        a: a.clone(),
        b: b.clone(),
        runs: args.runs,
        cases: args.cases.clone(),
        seed: args.seed,
    };
    // `gc` does not decide between planning both sides and submitting them.
    let held = crate::state::StateUse::hold(state)?;
    let planned = ab::plan(state, &opts)?;
    let short = |c: &str| c.chars().take(12).collect::<String>();
    info(format_args!(
        "comparing B {} ({}) against A {} ({}): {} case(s), {} run(s) per side, interleaved (seed {})\n",
        short(&planned.b.commit),
        planned.b.rev,
        short(&planned.a.commit),
        planned.a.rev,
        planned.stages.iter().map(|s| s.cases.len()).sum::<usize>(),
        planned.runs,
        planned.seed
    ));
    let launched = ab::submit(state, &planned, &args.on.backend(*scheduler))?;
    drop(held);
    let progress = crate::progress::Progress::new();
    for l in &launched {
        match &l.note {
            Some(n) => info(format_args!("{n}\n")),
            None => info(format_args!(
                "resuming: {} was submitted before\n",
                l.benchmark
            )),
        }
        info(format_args!(
            "benchmark {} ({} children)\n",
            l.benchmark, l.children
        ));
    }
    crate::interrupt::arm(
        "the children keep running; run the same `compare` command again to wait for them and read the verdict (it resumes the same benchmark)",
    );
    progress.start(launched.iter().map(|l| l.children).sum());
    let statuses = ab::wait(state, launched, scheduler, |c| progress.counts(c))?;
    progress.finish();
    let report = ab::report(state, &planned, &statuses)?;
    if args.json {
        line(serde_json::to_string(&report)?)?;
    } else {
        out(render::compare(&report))?;
    }
    if let Some(summary) = render::compare_failures(&report) {
        note(summary);
    }
    Ok(match report.outcome {
        Outcome::NotSlower => exit::OK,
        Outcome::Slower => exit::SLOWER,
        Outcome::NotCompared => exit::NOT_COMPARED,
    })
}

/// The signer of `--sign-key`, checked before any work.
fn load_signer(path: Option<&std::path::Path>) -> Result<Option<crate::signing::Signer>> {
    Ok(match path {
        Some(p) => Some(crate::signing::Signer::load(p)?),
        None => None,
    })
}

fn bench_command(
    state: &StateDir,
    scheduler: &crate::backend::SchedulerOptions,
    cmd: BenchCommand,
) -> Result<u8> {
    match cmd {
        BenchCommand::Plan {
            intent,
            children,
            json,
        } => {
            let planned = bench::plan(state, &intent)?;
            if json {
                line(render::plan_json(
                    &planned.plan,
                    &planned.digest,
                    &planned.record.intent_source,
                ))?;
                return Ok(exit::OK);
            }
            if children {
                let mut o = io::stdout().lock();
                render::write_children(&planned.plan, &mut o)
                    .and_then(|()| o.flush())
                    .map_err(stdout_error)?;
            }
            info(format_args!("{}\n", render::planned(&planned)));
            line(planned.digest)?;
        }
        BenchCommand::Submit { args, wait } => {
            if wait {
                note(format_args!(
                    "error: `bench submit` has no --wait: it returns once the children are started. To start them and wait for the analysis, run `benchops-exec bench run {}` with the same options.\n",
                    benchops::terminal::shown_path(&args.intent)
                ));
                return Ok(exit::ERROR);
            }
            let s = bench::submit(state, &args.intent, &args.backend(*scheduler))?;
            info(format_args!("{}\n", s.note));
            line(s.digest)?;
        }
        BenchCommand::Run { submit, format } => {
            let progress = crate::progress::Progress::new();
            crate::interrupt::arm("nothing was started yet");
            let (_, analysis) = watch::run(
                state,
                &submit.intent,
                &submit.backend(*scheduler),
                scheduler,
                |s| {
                    info(format_args!("{}\n", s.note));
                    info(format_args!(
                        "benchmark {} ({} children)\n",
                        s.digest, s.children
                    ));
                    let short = &s.digest.hex()[..12];
                    crate::interrupt::arm(format!(
                        "the children keep running; follow them with `benchops-exec bench status {short} --watch`, and read the analysis with `benchops-exec bench analyze {short}` once they are done"
                    ));
                    progress.start(s.children);
                },
                |s| progress.update(s),
            )?;
            progress.finish();
            out(render::analysis(&analysis, format.into()))?;
            let status = bench::refresh(state, &analysis.benchmark, scheduler)?;
            if let Some(summary) =
                crate::failures::render(&crate::failures::of_status(state, &status))
            {
                note(summary);
                return Ok(exit::ATTENTION);
            }
        }
        BenchCommand::Status {
            benchmark,
            json,
            watch,
        } => {
            let digest = state.resolve(&benchmark)?;
            let status = if watch {
                watch::until_terminal(state, &digest, scheduler, |s| info(render::status(s)))?
            } else {
                bench::refresh(state, &digest, scheduler)?
            };
            if json {
                line(render::status_json(&status)?)?;
            } else {
                out(render::status(&status))?;
                let errors = crate::failures::metric_errors(state, &status);
                if let Some(text) = crate::failures::render_metric_errors(&errors) {
                    out(text)?;
                }
            }
        }
        BenchCommand::Refresh { benchmark } => {
            let digest = state.resolve(&benchmark)?;
            line(render::status_json(&bench::refresh(
                state, &digest, scheduler,
            )?)?)?;
        }
        BenchCommand::Analyze { benchmark, format } => {
            let digest = state.resolve(&benchmark)?;
            let (status, analysis) = bench::analyze(state, &digest, scheduler)?;
            out(render::analysis(&analysis, format.into()))?;
            // On standard error, so that the analysis itself stays as it is.
            let errors = crate::failures::metric_errors(state, &status);
            if let Some(text) = crate::failures::render_metric_errors(&errors) {
                note(text);
            }
        }
        BenchCommand::Cancel { benchmark } => {
            let digest = state.resolve(&benchmark)?;
            let c = bench::cancel(state, &digest, scheduler)?;
            for a in &c.actions {
                info(format_args!("{a}\n"));
            }
            line(format_args!("cancelled {}", c.benchmark))?;
        }
        BenchCommand::List { json } => {
            let rows: Vec<bench::ListRow> = bench::list(state)
                .iter()
                .map(|l| bench::list_row(state, l))
                .collect();
            if json {
                line(serde_json::to_string_pretty(&rows)?)?;
            } else {
                out(render::listed(&rows))?;
            }
        }
        BenchCommand::Seal {
            benchmark,
            manifest,
            lane,
            slot,
            repository,
            commit,
            out: dir,
            sign_key,
        } => {
            let signer = load_signer(sign_key.as_deref())?;
            let digest = state.resolve(&benchmark)?;
            let ctx = SealContext {
                lane: benchops::LaneName::new(lane).context("invalid --lane")?,
                slot,
                repository,
                commit,
                manifest,
            };
            let o =
                result::seal_benchmark_to(state, &digest, &ctx, &dir, scheduler, signer.as_ref())?;
            line(render::sealed(&o))?;
        }
    }
    Ok(exit::OK)
}
