//! `benchops-exec`: a thin shim over the `benchops_exec` library. It parses
//! the command line ([`cli`]), calls one library function per command,
//! prints what it returns, and maps errors to the exit codes of
//! [`benchops_exec::exit`].

mod cli;

// Parsing sealed records and state files is allocation-heavy; mimalloc
// roughly halves the time spent in the allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::{Context as _, Result};
use benchops_exec::result::{self, SealContext};
use benchops_exec::seal::{self, SealFileError};
use benchops_exec::state::StateDir;
use benchops_exec::{bench, exit, render, watch};
use clap::Parser as _;

use cli::{BenchCommand, Cli, Command};

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) => {
            // Help and version go to stdout and are not errors.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() {
                exit::ERROR
            } else {
                exit::OK
            });
        }
    };
    match run(cli) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!(
                "error: {}",
                e.chain()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(": ")
            );
            ExitCode::from(exit::ERROR)
        }
    }
}

fn run(cli: Cli) -> Result<u8> {
    let state = StateDir::new(&cli.state);
    match cli.command {
        Command::Seal { draft, out } => match seal::seal_file(&draft, &out) {
            Ok(o) => {
                println!("{}", render::sealed(&o));
                Ok(exit::OK)
            }
            Err(SealFileError::Invalid { path, source }) => {
                eprint!("{}", render::invalid_draft(&path, &source));
                Ok(exit::INVALID_DRAFT)
            }
            Err(e) => Err(e.into()),
        },
        Command::Child {
            benchmark,
            attempt,
            index,
            slots,
            slurm,
            first_index,
        } => {
            let digest = state.resolve(&benchmark)?;
            let task = cli::task(index, slurm, first_index)?;
            let run = bench::run_task(&state, &digest, attempt, task, slots)?;
            match run.result {
                Some(r) if r.succeeded() => Ok(exit::OK),
                Some(_) => Ok(exit::CHILD_FAILED),
                None => {
                    eprintln!("benchmark was cancelled before child {} started", run.index);
                    Ok(exit::CHILD_FAILED)
                }
            }
        }
        Command::Bench(b) => bench_command(&state, b),
    }
}

fn bench_command(state: &StateDir, cmd: BenchCommand) -> Result<u8> {
    match cmd {
        BenchCommand::Plan { intent, children } => {
            let planned = bench::plan(state, &intent)?;
            if children {
                render::write_children(&planned.plan, &mut std::io::stdout().lock())?;
            }
            eprintln!("{}", render::planned(&planned));
            println!("{}", planned.digest);
        }
        BenchCommand::Submit(args) => {
            let s = bench::submit(state, &args.intent, &args.backend())?;
            eprintln!("{}", s.note);
            println!("{}", s.digest);
        }
        BenchCommand::Run { submit, format } => {
            let progress = render::Progress::new();
            let (_, analysis) = watch::run(
                state,
                &submit.intent,
                &submit.backend(),
                |s| {
                    eprintln!("{}", s.note);
                    eprintln!("benchmark {} ({} children)", s.digest, s.children);
                    progress.start(s.children);
                },
                |s| progress.update(s),
            )?;
            progress.finish();
            std::io::stdout().write_all(&render::analysis(&analysis, format.into()))?;
        }
        BenchCommand::Status {
            benchmark,
            json,
            watch,
        } => {
            let digest = state.resolve(&benchmark)?;
            let status = if watch {
                watch::until_terminal(state, &digest, |s| eprint!("{}", render::status(s)))?
            } else {
                bench::refresh(state, &digest)?
            };
            if json {
                println!("{}", render::status_json(&status)?);
            } else {
                print!("{}", render::status(&status));
            }
        }
        BenchCommand::Refresh { benchmark } => {
            let digest = state.resolve(&benchmark)?;
            println!("{}", render::status_json(&bench::refresh(state, &digest)?)?);
        }
        BenchCommand::Analyze { benchmark, format } => {
            let digest = state.resolve(&benchmark)?;
            let (_, analysis) = bench::analyze(state, &digest)?;
            std::io::stdout().write_all(&render::analysis(&analysis, format.into()))?;
        }
        BenchCommand::Cancel { benchmark } => {
            let digest = state.resolve(&benchmark)?;
            let c = bench::cancel(state, &digest)?;
            for a in &c.actions {
                eprintln!("{a}");
            }
            println!("cancelled {}", c.benchmark);
        }
        BenchCommand::List => {
            for l in bench::list(state) {
                println!("{}", render::listed(&l));
            }
        }
        BenchCommand::Seal {
            benchmark,
            manifest,
            lane,
            slot,
            repository,
            commit,
            out,
        } => {
            let digest = state.resolve(&benchmark)?;
            let ctx = SealContext {
                lane: benchops::LaneName::new(lane).context("invalid --lane")?,
                slot,
                repository,
                commit,
                manifest,
            };
            let o = result::seal_benchmark_to(state, &digest, &ctx, &out)?;
            println!("{}", render::sealed(&o));
        }
    }
    Ok(exit::OK)
}
