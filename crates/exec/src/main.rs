//! `benchops-exec`: thin shim over the `benchops_exec` library.

// Parsing sealed records and state files is allocation-heavy; mimalloc
// roughly halves the time spent in the allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::Write as _;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::{Context as _, Result};
use benchops_exec::bench::{self, LocalOptions};
use benchops_exec::state::StateDir;
use clap::{Args, Parser, Subcommand, ValueEnum};

/// Plan, run, observe, analyze and seal benchmarks. Holds no GitHub
/// credentials, and passes none to the benchmarks it runs.
#[derive(Debug, Parser)]
#[command(name = "benchops-exec", version, about, long_about = None)]
struct Cli {
    /// State directory holding benchmark records and run evidence.
    #[arg(
        long,
        global = true,
        env = "BENCHOPS_STATE",
        default_value = ".benchops"
    )]
    state: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Plan, submit, observe, analyze, cancel and seal benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Seal a draft benchmark-result/v1 record into OUT/<sha256-hex>.json.
    ///
    /// The draft may use any JSON formatting. It is checked against the
    /// schema and the semantic invariants, written as RFC 8785 canonical
    /// bytes, and named by their sha256. Sealing the same draft twice is a
    /// no-op. Exit status: 0 sealed, 1 invalid draft, 2 usage or I/O error.
    #[command(
        after_help = "Example:\n  benchops-exec seal examples/result.draft.json --out sealed/"
    )]
    Seal {
        /// The draft record (JSON).
        draft: PathBuf,
        /// Directory for the sealed file.
        #[arg(long)]
        out: PathBuf,
    },
    /// Run one child of a benchmark (started by `bench submit`; not for
    /// direct use).
    ///
    /// Re-plans the benchmark from the state directory, checks the child's
    /// digest, optionally takes a concurrency slot, then runs and measures
    /// the command and writes started.json and result.json.
    Child {
        /// Benchmark digest (or unique hex prefix).
        #[arg(long)]
        benchmark: String,
        /// Attempt number.
        #[arg(long)]
        attempt: u32,
        /// Child index (local backend).
        #[arg(long, required_unless_present = "slurm")]
        index: Option<u64>,
        /// Take slot `index % SLOTS` before running (local backend).
        #[arg(long)]
        slots: Option<u32>,
        /// Slurm array task: the child is FIRST_INDEX + $SLURM_ARRAY_TASK_ID,
        /// and $SLURM_RESTART_COUNT selects a fresh directory per requeue.
        #[arg(long, requires = "first_index")]
        slurm: bool,
        /// Child index of array task 0 (with --slurm).
        #[arg(long)]
        first_index: Option<u64>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum Backend {
    /// Detached local processes.
    Local,
    /// Slurm job arrays (one sbatch call per chunk).
    Slurm,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
enum Format {
    /// A table for humans.
    Table,
    /// Canonical JSON.
    Json,
    /// Markdown.
    Markdown,
}

#[derive(Debug, Args)]
struct SubmitArgs {
    /// The benchmark intent (TOML, benchmark-intent/v1).
    intent: PathBuf,
    /// Where to run the children.
    #[arg(long, value_enum, default_value = "local")]
    backend: Backend,
    /// Children running at once (local backend).
    #[arg(long, default_value_t = 1)]
    slots: u32,
    /// Slurm partition (overrides the intent).
    #[arg(long)]
    partition: Option<String>,
    /// Slurm account (overrides the intent).
    #[arg(long)]
    account: Option<String>,
    /// Array throttle: at most this many tasks at once (overrides the intent).
    #[arg(long)]
    throttle: Option<u32>,
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Expand an intent into its ordered child runs and persist the record.
    ///
    /// Prints the benchmark digest. Planning is deterministic: equivalent
    /// intents give the same children and digests.
    #[command(after_help = "Example:\n  benchops-exec bench plan examples/bench.toml")]
    Plan {
        /// The benchmark intent (TOML).
        intent: PathBuf,
        /// Print every child configuration as JSON lines.
        #[arg(long)]
        children: bool,
    },
    /// Plan and start every child, then return at once.
    ///
    /// Children run as detached processes that survive this command; observe
    /// them later with `bench status`.
    #[command(after_help = "Example:\n  benchops-exec bench submit examples/bench.toml --slots 2")]
    Submit(SubmitArgs),
    /// Submit, then wait for every child with a progress bar.
    #[command(after_help = "Example:\n  benchops-exec bench run examples/bench.toml --slots 2")]
    Run {
        #[command(flatten)]
        submit: SubmitArgs,
        /// Output format of the final analysis.
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// Classify every child from the evidence (read-only).
    ///
    /// Prints counts of every class and each child that did not succeed,
    /// with its reason. Works from any later process.
    #[command(after_help = "Example:\n  benchops-exec bench status 3f1c2a9d")]
    Status {
        /// Benchmark digest (or unique hex prefix of at least 8 digits).
        benchmark: String,
        /// Print every child with its raw evidence as JSON.
        #[arg(long)]
        json: bool,
        /// Refresh until every child is terminal, backing off from 1 s to
        /// 30 s between looks (with jitter).
        #[arg(long)]
        watch: bool,
    },
    /// Same as `status --json`: every child with its evidence.
    #[command(after_help = "Example:\n  benchops-exec bench refresh 3f1c2a9d")]
    Refresh {
        /// Benchmark digest (or unique hex prefix).
        benchmark: String,
    },
    /// Aggregate the successes per case and metric (median, MAD, bootstrap CI).
    ///
    /// Counts of every class are always shown; an incomplete benchmark is
    /// labelled as such and nothing is extrapolated. The JSON output is
    /// canonical and byte-identical across runs.
    #[command(after_help = "Example:\n  benchops-exec bench analyze 3f1c2a9d --format markdown")]
    Analyze {
        /// Benchmark digest (or unique hex prefix).
        benchmark: String,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// Stop the benchmark's running children and record the cancellation.
    #[command(after_help = "Example:\n  benchops-exec bench cancel 3f1c2a9d")]
    Cancel {
        /// Benchmark digest (or unique hex prefix).
        benchmark: String,
    },
    /// List the benchmarks in the state directory.
    List,
    /// Seal a finished benchmark as a benchmark-result/v1 record.
    ///
    /// Writes OUT/<sha256-hex>.json create-only. Refuses while any child is
    /// pending or running.
    #[command(
        after_help = "Example:\n  benchops-exec bench seal 3f1c2a9d --manifest examples/schedule.toml \\\n    --lane comprehensive --slot 2026-11-30T01:00:00Z --repository example/widgets \\\n    --commit 3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d --out .benchops/sealed"
    )]
    Seal {
        /// Benchmark digest (or unique hex prefix).
        benchmark: String,
        /// The schedule manifest (TOML).
        #[arg(long)]
        manifest: PathBuf,
        /// The lane this execution belongs to.
        #[arg(long)]
        lane: String,
        /// The scheduled slot, RFC 3339 UTC.
        #[arg(long)]
        slot: String,
        /// The subject repository, owner/name.
        #[arg(long)]
        repository: String,
        /// The subject commit (40 or 64 hex digits).
        #[arg(long)]
        commit: String,
        /// Directory for the sealed record.
        #[arg(long)]
        out: PathBuf,
    },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!(
                "error: {}",
                e.chain()
                    .map(ToString::to_string)
                    .collect::<Vec<_>>()
                    .join(": ")
            );
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> Result<ExitCode> {
    let state = StateDir::new(&cli.state);
    match cli.command {
        Command::Seal { draft, out } => seal_draft(&draft, &out),
        Command::Child {
            benchmark,
            attempt,
            index,
            slots,
            slurm,
            first_index,
        } => {
            let digest = state.resolve(&benchmark)?;
            let (index, restart) = if slurm {
                let (task, restart) = benchops_exec::slurm::task_from_env()
                    .context("--slurm needs SLURM_ARRAY_TASK_ID in the environment")?;
                (first_index.unwrap_or(0) + task, restart)
            } else {
                (index.context("--index is required")?, 0)
            };
            match bench::run_child_entry(&state, &digest, index, attempt, slots, restart)? {
                Some(r) if r.succeeded() => Ok(ExitCode::SUCCESS),
                Some(_) => Ok(ExitCode::from(1)),
                None => {
                    eprintln!("benchmark was cancelled before child {index} started");
                    Ok(ExitCode::from(1))
                }
            }
        }
        Command::Bench(b) => bench_command(&state, b),
    }
}

fn seal_draft(draft: &std::path::Path, out: &std::path::Path) -> Result<ExitCode> {
    match benchops_exec::seal::seal_file(draft, out) {
        Ok(o) => {
            let note = match o.created {
                benchops::fsio::Created::New => "sealed",
                benchops::fsio::Created::AlreadyPresent => "already sealed",
            };
            println!("{note} {} -> {}", o.digest, o.path.display());
            Ok(ExitCode::SUCCESS)
        }
        Err(benchops_exec::seal::SealFileError::Invalid { path, source }) => {
            eprintln!(
                "error: draft {} is not a valid benchmark-result/v1 record:",
                path.display()
            );
            for issue in &source.issues {
                eprintln!("  - {issue}");
            }
            Ok(ExitCode::from(1))
        }
        Err(e) => Err(e.into()),
    }
}

/// Submits per the chosen backend; returns the digest, the child count and
/// (local only) the wrapper processes.
fn submit(
    state: &StateDir,
    args: &SubmitArgs,
) -> Result<(benchops::Sha256Digest, u64, Vec<std::process::Child>)> {
    match args.backend {
        Backend::Local => {
            let opts = LocalOptions {
                slots: args.slots,
                exe: None,
            };
            let s = bench::submit_local(state, &args.intent, &opts)?;
            eprintln!(
                "submitted {} children (attempt {}) to the local backend",
                s.children, s.attempt
            );
            Ok((s.digest, s.children, s.processes))
        }
        Backend::Slurm => {
            let opts = benchops_exec::slurm::SlurmOptions {
                partition: args.partition.clone(),
                account: args.account.clone(),
                throttle: args.throttle,
                ..Default::default()
            };
            let s = benchops_exec::slurm::submit(state, &args.intent, &opts)?;
            let jobs: Vec<&str> = s.chunks.iter().map(|c| c.job_id.as_str()).collect();
            eprintln!(
                "submitted {} children (attempt {}) to Slurm as array job(s) {} ({} sbatch call(s))",
                s.children,
                s.attempt,
                jobs.join(", "),
                s.sbatch_calls
            );
            Ok((s.digest, s.children, Vec::new()))
        }
    }
}

fn bench_command(state: &StateDir, cmd: BenchCommand) -> Result<ExitCode> {
    match cmd {
        BenchCommand::Plan { intent, children } => {
            let planned = bench::plan(state, &intent)?;
            if children {
                let mut out = std::io::stdout().lock();
                for i in 0..planned.plan.len() {
                    if let Some(b) = planned.plan.child_bytes(i) {
                        out.write_all(&b)?;
                        out.write_all(b"\n")?;
                    }
                }
            }
            eprintln!(
                "planned {} children over {} case(s)",
                planned.plan.len(),
                planned.plan.point_count()
            );
            println!("{}", planned.digest);
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Submit(args) => {
            let (digest, _, _) = submit(state, &args)?;
            println!("{digest}");
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Run {
            submit: args,
            format,
        } => {
            let (digest, children, processes) = submit(state, &args)?;
            eprintln!("benchmark {digest} ({children} children)");
            wait(state, digest, children, processes)?;
            let (_, analysis) = bench::analyze(state, &digest)?;
            print_analysis(&analysis, format)?;
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Status {
            benchmark,
            json,
            watch,
        } => {
            let digest = state.resolve(&benchmark)?;
            let mut delay = 1.0f64;
            let seed = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos().into())
                ^ u64::from(std::process::id());
            let mut rng = benchops::stats::SplitMix64::new(seed);
            loop {
                let status = bench::refresh(state, &digest)?;
                if !watch || status.terminal {
                    if json {
                        println!("{}", serde_json::to_string_pretty(&status)?);
                    } else {
                        print!("{}", render_status(&status));
                    }
                    return Ok(ExitCode::SUCCESS);
                }
                eprint!("{}", render_status(&status));
                // Back off, with jitter so that many watchers do not poll
                // in step.
                let jitter = (rng.next_u64() % 1000) as f64 / 1000.0 * 0.25;
                std::thread::sleep(Duration::from_secs_f64(delay * (1.0 + jitter)));
                delay = (delay * 2.0).min(30.0);
            }
        }
        BenchCommand::Refresh { benchmark } => {
            let digest = state.resolve(&benchmark)?;
            println!(
                "{}",
                serde_json::to_string_pretty(&bench::refresh(state, &digest)?)?
            );
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Analyze { benchmark, format } => {
            let digest = state.resolve(&benchmark)?;
            let (_, analysis) = bench::analyze(state, &digest)?;
            print_analysis(&analysis, format)?;
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::Cancel { benchmark } => {
            let digest = state.resolve(&benchmark)?;
            let c = bench::cancel(state, &digest)?;
            for a in &c.actions {
                eprintln!("{a}");
            }
            println!("cancelled {}", c.benchmark);
            Ok(ExitCode::SUCCESS)
        }
        BenchCommand::List => {
            for d in state.list() {
                let name = state
                    .load_record(&d)
                    .map(|r| format!("{} ({} children)", r.intent_source, r.child_count))
                    .unwrap_or_else(|e| format!("unreadable: {e}"));
                println!("{d}  {name}");
            }
            Ok(ExitCode::SUCCESS)
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
            let ctx = benchops_exec::result::SealContext {
                lane: benchops::LaneName::new(lane).context("invalid --lane")?,
                slot,
                repository,
                commit,
                manifest,
            };
            let sealed = benchops_exec::result::seal_benchmark(state, &digest, &ctx)?;
            let o = benchops_exec::seal::write_sealed(&sealed, &out)?;
            let note = match o.created {
                benchops::fsio::Created::New => "sealed",
                benchops::fsio::Created::AlreadyPresent => "already sealed",
            };
            println!("{note} {} -> {}", o.digest, o.path.display());
            Ok(ExitCode::SUCCESS)
        }
    }
}

fn wait(
    state: &StateDir,
    digest: benchops::Sha256Digest,
    children: u64,
    mut processes: Vec<std::process::Child>,
) -> Result<()> {
    let pb = indicatif::ProgressBar::new(children);
    pb.set_style(
        indicatif::ProgressStyle::with_template("{bar:30} {pos}/{len} terminal  {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
    );
    // Local children are files on this machine: look often. Slurm is asked
    // at most every 2 s.
    let period = if processes.is_empty() {
        Duration::from_secs(2)
    } else {
        Duration::from_millis(100)
    };
    loop {
        // Reap finished wrappers so they do not linger as zombies.
        processes.retain_mut(|p| !matches!(p.try_wait(), Ok(Some(_))));
        let status = bench::refresh(state, &digest)?;
        let done = status.counts.total - status.counts.incomplete;
        pb.set_position(done);
        pb.set_message(format!(
            "ok {} failed {} other {}",
            status.counts.succeeded,
            status.counts.failed,
            done - status.counts.succeeded - status.counts.failed
        ));
        if status.terminal && processes.is_empty() {
            pb.finish_and_clear();
            return Ok(());
        }
        std::thread::sleep(period);
    }
}

fn print_analysis(a: &benchops::analysis::Analysis, format: Format) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match format {
        Format::Table => out.write_all(a.render_table().as_bytes())?,
        Format::Markdown => out.write_all(a.render_markdown().as_bytes())?,
        Format::Json => {
            out.write_all(&a.to_canonical())?;
            out.write_all(b"\n")?;
        }
    }
    Ok(())
}

fn render_status(s: &bench::Status) -> String {
    use std::fmt::Write as _;
    let mut o = String::new();
    let c = &s.counts;
    let _ = writeln!(
        o,
        "benchmark {}{}",
        s.benchmark,
        if s.cancelled { " (cancelled)" } else { "" }
    );
    let _ = writeln!(
        o,
        "children {}: succeeded {}, failed {}, incomplete {}, missing {}, stale {}, scheduler-inconsistent {}",
        c.total, c.succeeded, c.failed, c.incomplete, c.missing, c.stale, c.scheduler_inconsistent
    );
    let _ = writeln!(
        o,
        "{}",
        if s.terminal {
            "all children are terminal"
        } else {
            "some children are still pending or running"
        }
    );
    for ch in s
        .children
        .iter()
        .filter(|c| c.classified.class != benchops::classify::RunClass::Succeeded)
    {
        let _ = writeln!(
            o,
            "  #{:<5} {:<24} {:<40} {}",
            ch.index,
            ch.classified.class.as_str(),
            ch.case,
            ch.classified.reason
        );
    }
    o
}
