//! The command line of `benchops-exec`: clap types, and their conversion
//! into the library's inputs. Nothing here runs a command; [`crate::cmd`]
//! does.
//!
//! The doc comments of the clap types are the CLI's help text, written for
//! a terminal (`OUT/<hex>.json`), not as rustdoc markup.
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;
use std::time::Duration;

mod lane;

pub use self::lane::{
    Emit, LaneBackendArgs, LaneBisectArgs, LaneCommand, LaneDueArgs, LaneRunArgs, LaneScheduleArgs,
};
use crate::backend::{self, LocalOptions, SchedulerOptions, SlurmOptions, Task};
use crate::render;
use anyhow::{Context as _, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

/// Plan, run, observe, analyze and seal benchmarks. Holds no GitHub
/// credentials, and passes none to the benchmarks it runs.
#[derive(Debug, Parser)]
#[command(name = "benchops-exec", version, about, long_about = None)]
pub struct Cli {
    /// State directory holding benchmark records and run evidence.
    #[arg(
        long,
        global = true,
        env = "BENCHOPS_STATE",
        default_value = ".benchops"
    )]
    pub state: PathBuf,
    /// Longest wait for one Slurm tool call (squeue, sacct, scontrol,
    /// sbatch, scancel), in seconds. A call that takes longer is killed with
    /// its process group; for squeue and sacct that is an incomplete answer.
    #[arg(
        long,
        global = true,
        env = "BENCHOPS_SCHEDULER_TIMEOUT",
        default_value = "20",
        value_name = "SECONDS",
        value_parser = parse_timeout
    )]
    pub scheduler_timeout: Duration,
    /// --quiet and --color.
    #[command(flatten)]
    pub output: benchops_cli::OutputArgs,
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// How the scheduler tools are called.
    pub fn scheduler(&self) -> SchedulerOptions {
        SchedulerOptions {
            timeout: self.scheduler_timeout,
        }
    }
}

/// A timeout in seconds: at least a millisecond and at most a day.
fn parse_timeout(text: &str) -> Result<Duration, String> {
    let s: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number of seconds"))?;
    if !(0.001..=86_400.0).contains(&s) {
        return Err(format!(
            "{text:?} must be at least 0.001 and at most 86400 seconds"
        ));
    }
    Ok(Duration::from_secs_f64(s))
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Plan, submit, observe, analyze, cancel and seal benchmarks.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Run a lane: measure, compare with the lane's baseline, confirm
    /// suspects beside the baseline commit in the same session, bisect a
    /// regression to its culprit, and seal a benchmark-result/v3 record.
    #[command(subcommand)]
    Lane(LaneCommand),
    /// The subject's trees at a commit, cached in the state directory for
    /// same-session confirmation and bisection.
    #[command(subcommand)]
    Subject(SubjectCommand),
    /// Keep the state directory small: remove sealed lane executions older
    /// than --keep-days with the benchmarks only they use, benchmarks no
    /// lane execution uses that nobody touched for as long, and subject
    /// trees nobody used for as long; then, with --max-bytes, the oldest
    /// of what was kept only for its age until the state fits.
    ///
    /// Never removed: an unsealed lane execution and what it uses, the
    /// newest execution of each lane, a benchmark with a running child, a
    /// subject tree in use or among the 16 most recently used. Prints each
    /// item removed and kept, its size and why. Safe while lane runs go on
    /// (they wait for it to decide; it never removes what they use), and
    /// after a SIGKILL (the next gc finishes what it left in <state>/.gc).
    /// Exit 0 when done, 1 when what must be kept does not fit in
    /// --max-bytes (the rest was removed), 2 on an error.
    #[command(
        after_help = "Examples:\n  benchops-exec gc --dry-run                    # what would go, nothing removed\n  benchops-exec gc --keep-days 14 --max-bytes 2G\n  benchops-exec gc --dry-run --json            # one JSON object"
    )]
    Gc(GcArgs),
    /// Measure two commits of a subject side by side, interleaved in one
    /// benchmark, and say whether the second (B) is slower than the first
    /// (A): "did my branch make it slower?".
    ///
    /// Both commits are exported from the subject's repository into the
    /// state directory; each run sees its own side's tree as
    /// $BENCHOPS_SUBJECT_DIR. Every case and compared metric gets a
    /// verdict of B against A at the confirmation level: slower, faster,
    /// same (the interval lies inside the band), inconclusive or
    /// not_compared. Waits with a progress bar like `bench run`; running
    /// the same command again resumes (or re-reads) the same benchmark.
    /// Exit 0 when B is slower on no key, 1 when it is slower on one, 2
    /// when the comparison could not be made (a run failed: standard error
    /// names the cases and their first lines of standard error) or on an
    /// error.
    #[command(
        after_help = "Example (after `cargo xtask pipeline`, whose demo subject has five commits; HEAD~2 made the large case 30% slower):\n  benchops-exec compare --intent examples/lane/bench.toml \\\n    --subject .benchops/lane-demo/widgets --commits HEAD~4 HEAD~2 --slots 2   # needs the demo subject of `cargo xtask pipeline`"
    )]
    Compare(Box<CompareArgs>),
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
        /// Also write OUT/<hex>.json.sig, an OpenSSH signature (SSHSIG,
        /// namespace benchops-result) of the record by this Ed25519 key
        /// (`benchops-exec keygen`, or `ssh-keygen -t ed25519 -N ''`; mode
        /// 0600). The environment variable names the file.
        #[arg(long, value_name = "FILE", env = "BENCHOPS_SIGN_KEY")]
        sign_key: Option<PathBuf>,
    },
    /// Write a new OpenSSH Ed25519 key pair for signing sealed records:
    /// FILE (mode 0600) and FILE.pub. Prints the public key line to add to
    /// the repository's allowed_signers file after the lane name. Never
    /// overwrites a file.
    #[command(
        after_help = "Example:\n  benchops-exec keygen --out ~/.config/benchops/nightly.key --comment 'nightly lane, host bench-01'\n  # then, on the default branch: echo \"nightly $(cat ~/.config/benchops/nightly.key.pub)\" >> benchmarks/allowed_signers"
    )]
    Keygen {
        /// The private key file to create (FILE.pub is the public key).
        #[arg(long, value_name = "FILE")]
        out: PathBuf,
        /// The key's comment.
        #[arg(long, default_value = "benchops")]
        comment: String,
    },
    /// Hand signed sealed records to benchops-app (`POST /handoff`), which
    /// checks them against the repository's allowed_signers and writes the
    /// handoff refs with its own token. Needs no GitHub credential.
    ///
    /// Takes each <sha256>.json (with its .sig beside it) directly inside
    /// each DIR, or named as a file. Records that fail a local check (name,
    /// bytes, signature) are not sent. Connection errors, timeouts, 429,
    /// 502, 503 and 504 are retried with exponential backoff and jitter (or
    /// after Retry-After); every other answer is final. Delivered records
    /// (accepted, or already present) move to DIR/.handed-off/. Exit 0 when
    /// every record was delivered, 1 when one was refused or invalid, 3
    /// when one could not be delivered (run again later), 2 on an error.
    #[command(
        after_help = "Example:\n  # after `lane run --sign-key ~/.config/benchops/nightly.key … --out out/`:\n  benchops-exec handoff --to https://benchops-app.example.org out/   # needs a running benchops-app"
    )]
    Handoff {
        /// benchops-app's base URL (`/handoff` is appended).
        #[arg(long, value_name = "URL", env = "BENCHOPS_HANDOFF_URL")]
        to: String,
        /// The repository, OWNER/NAME, when the App serves several.
        #[arg(long, value_name = "OWNER/NAME")]
        repository: Option<String>,
        /// Tries per record, the first included.
        #[arg(long, default_value_t = 6, value_parser = clap::value_parser!(u32).range(1..=100))]
        attempts: u32,
        /// The first pause between tries, in milliseconds (it doubles).
        #[arg(long, value_name = "MS", default_value_t = 1000)]
        backoff_ms: u64,
        /// The longest pause between tries, in milliseconds.
        #[arg(long, value_name = "MS", default_value_t = 60_000)]
        max_backoff_ms: u64,
        /// The timeout of one request, in seconds.
        #[arg(long, value_name = "SECONDS", default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..=3600))]
        timeout: u64,
        /// Leave delivered records in place instead of moving them to
        /// DIR/.handed-off/.
        #[arg(long)]
        keep: bool,
        /// Print one JSON object per record instead of text lines.
        #[arg(long)]
        json: bool,
        /// Directories of sealed records, or record files.
        #[arg(required = true, value_name = "DIR")]
        inputs: Vec<PathBuf>,
    },
    /// Measure a hosted integration workflow (the platform lane): run a
    /// scenario's declared operations once per run and write one row per
    /// operation to RESULTS/<run id>.jsonl, with a markdown summary.
    ///
    /// Missing credentials, binaries or repository turn every operation
    /// into a skip row with its reason. Exit 0 when every measured row
    /// succeeded, 1 when one failed, 2 on a configuration error, 3 when
    /// every row was skipped. See docs/platform-lane.md.
    #[command(
        after_help = "Examples:\n  benchops-exec platform --driver fake-provider --scenario branch_triage_n8 \\\n    --spec examples/platform/scenarios.toml --semantics examples/platform/semantics.toml\n  GITHUB_TOKEN=... benchops-exec platform --driver harness-api --scenario pr_single_anatomy \\\n    --repo your-org/disposable-bench-repo --runs 3 \\\n    --spec examples/platform/scenarios.toml --semantics examples/platform/semantics.toml   # needs GitHub"
    )]
    Platform(PlatformArgs),
    /// Run one child of a benchmark (a Slurm array task; or one child by
    /// hand, for debugging).
    ///
    /// Re-plans the benchmark from the state directory, checks the child's
    /// digest, then runs and measures the command and writes started.json
    /// and result.json.
    Child {
        /// Benchmark digest (or unique hex prefix).
        #[arg(long)]
        benchmark: String,
        /// Attempt number.
        #[arg(long)]
        attempt: u32,
        /// Child index.
        #[arg(long, required_unless_present = "slurm")]
        index: Option<u64>,
        /// Slurm array task: the child is FIRST_INDEX + $SLURM_ARRAY_TASK_ID,
        /// and $SLURM_RESTART_COUNT selects a fresh directory per requeue.
        #[arg(long, requires = "first_index")]
        slurm: bool,
        /// Child index of array task 0 (with --slurm).
        #[arg(long)]
        first_index: Option<u64>,
    },
    /// A local worker (started by `bench submit` and by a refresh; not for
    /// direct use): takes a free slot of the attempt, then claims and runs
    /// children one after another until none is left.
    #[command(hide = true)]
    Worker {
        /// Benchmark digest (or unique hex prefix).
        #[arg(long)]
        benchmark: String,
        /// Attempt number.
        #[arg(long)]
        attempt: u32,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum Backend {
    /// Local worker processes (at most --slots at once).
    Local,
    /// Slurm job arrays (one sbatch call per chunk).
    Slurm,
}

#[derive(Debug, Clone, Copy, ValueEnum, PartialEq, Eq)]
pub enum Format {
    /// A table for humans.
    Table,
    /// Canonical JSON.
    Json,
    /// Markdown.
    Markdown,
}

#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The benchmark intent (TOML, benchmark-intent/v1).
    pub intent: PathBuf,
    #[command(flatten)]
    pub on: BackendArgs,
}

/// Where children run: the options `bench submit`, `bench run` and
/// `compare` share.
#[derive(Debug, Args)]
pub struct BackendArgs {
    /// Where to run the children.
    #[arg(long, value_enum, default_value = "local")]
    pub backend: Backend,
    /// Children running at once (local backend).
    #[arg(long, default_value_t = 1)]
    pub slots: u32,
    /// Slurm partition (overrides the intent).
    #[arg(long)]
    pub partition: Option<String>,
    /// Slurm account (overrides the intent).
    #[arg(long)]
    pub account: Option<String>,
    /// Array throttle: at most this many tasks at once (overrides the intent).
    #[arg(long)]
    pub throttle: Option<u32>,
}

#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Expand an intent into its ordered child runs and persist the record.
    ///
    /// Prints the benchmark digest. Planning is deterministic: equivalent
    /// intents give the same children and digests.
    #[command(after_help = "Example:\n  benchops-exec bench plan examples/bench.toml")]
    Plan {
        /// The benchmark intent (TOML).
        intent: PathBuf,
        /// Print every child configuration as JSON lines.
        #[arg(long, conflicts_with = "json")]
        children: bool,
        /// Print the benchmark digest, its cases and every child digest as
        /// one JSON object (what the Python package's `plan()` returns).
        #[arg(long)]
        json: bool,
    },
    /// Plan and start every child, then return at once.
    ///
    /// Children run as detached processes that survive this command; observe
    /// them later with `bench status`.
    #[command(after_help = "Example:\n  benchops-exec bench submit examples/bench.toml --slots 2")]
    Submit {
        #[command(flatten)]
        args: SubmitArgs,
        /// Not an option of `bench submit`, which returns at once: it is
        /// here to point to `bench run`, which waits.
        #[arg(long, hide = true)]
        wait: bool,
    },
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
    #[command(after_help = "Example:\n  benchops-exec bench status a964e405")]
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
    #[command(after_help = "Example:\n  benchops-exec bench refresh a964e405")]
    Refresh {
        /// Benchmark digest (or unique hex prefix).
        benchmark: String,
    },
    /// Aggregate the successes per case and metric (median, MAD, bootstrap CI).
    ///
    /// Counts of every class are always shown; an incomplete benchmark is
    /// labelled as such and nothing is extrapolated. The JSON output is
    /// canonical and byte-identical across runs.
    #[command(after_help = "Example:\n  benchops-exec bench analyze a964e405 --format markdown")]
    Analyze {
        /// Benchmark digest (or unique hex prefix).
        benchmark: String,
        /// Output format.
        #[arg(long, value_enum, default_value = "table")]
        format: Format,
    },
    /// Stop the benchmark's running children and record the cancellation.
    #[command(after_help = "Example:\n  benchops-exec bench cancel a964e405")]
    Cancel {
        /// Benchmark digest (or unique hex prefix).
        benchmark: String,
    },
    /// List the benchmarks in the state directory, newest first: digest,
    /// when it was planned, its intent, its children, its attempts and how
    /// many children have a result (read from the files; no scheduler call).
    #[command(after_help = "Example:\n  benchops-exec bench list --json")]
    List {
        /// Print one JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Seal a finished benchmark as a benchmark-result/v1 record.
    ///
    /// Writes OUT/<sha256-hex>.json create-only. Refuses while any child is
    /// incomplete: pending, running, or waiting for a complete answer from
    /// the scheduler.
    #[command(
        after_help = "Example:\n  benchops-exec bench seal a964e405 --manifest examples/schedule.toml \\\n    --lane comprehensive --slot 2026-11-29T23:00:00Z --repository example/widgets \\\n    --commit 3f1c2a9d8e7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d --out .benchops/sealed"
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
        /// Also write OUT/<hex>.json.sig, an OpenSSH signature (SSHSIG,
        /// namespace benchops-result) of the record by this Ed25519 key
        /// (`benchops-exec keygen`, or `ssh-keygen -t ed25519 -N ''`; mode
        /// 0600). The environment variable names the file.
        #[arg(long, value_name = "FILE", env = "BENCHOPS_SIGN_KEY")]
        sign_key: Option<PathBuf>,
    },
}

impl SubmitArgs {
    /// The backend and its launch options.
    pub fn backend(&self, scheduler: SchedulerOptions) -> backend::Backend {
        self.on.backend(scheduler)
    }
}

impl BackendArgs {
    /// The backend and its launch options.
    pub fn backend(&self, scheduler: SchedulerOptions) -> backend::Backend {
        match self.backend {
            Backend::Local => backend::Backend::Local(LocalOptions {
                slots: self.slots,
                exe: None,
                order: backend::ClaimOrder::Plan,
            }),
            Backend::Slurm => backend::Backend::Slurm(SlurmOptions {
                partition: self.partition.clone(),
                account: self.account.clone(),
                throttle: self.throttle,
                scheduler,
                ..SlurmOptions::default()
            }),
        }
    }
}

impl From<Format> for render::Format {
    fn from(f: Format) -> Self {
        match f {
            Format::Table => render::Format::Table,
            Format::Json => render::Format::Json,
            Format::Markdown => render::Format::Markdown,
        }
    }
}

/// The child a `child` command names: `--slurm` with `--first-index`, or
/// `--index`.
pub fn task(index: Option<u64>, slurm: bool, first_index: Option<u64>) -> Result<Task> {
    Ok(if slurm {
        Task::Slurm {
            first_index: first_index.unwrap_or(0),
        }
    } else {
        Task::Local {
            index: index.context("--index is required")?,
        }
    })
}

/// The options of `gc`.
#[derive(Debug, Args)]
pub struct GcArgs {
    /// Keep what is younger than this many days: a sealed lane execution
    /// by when it was sealed, a benchmark no execution uses by its newest
    /// file, a subject tree by when it was last used.
    #[arg(long, value_name = "DAYS", default_value_t = benchops::manifest::DEFAULT_GC_KEEP_DAYS)]
    pub keep_days: u32,
    /// After the age rule, remove the oldest removable items until the
    /// state directory holds at most this much: bytes, or with a K, M, G or
    /// T suffix (powers of 1024), e.g. 500M or 2G.
    #[arg(long, value_name = "SIZE", value_parser = parse_max_bytes)]
    pub max_bytes: Option<u64>,
    /// Say what would be removed; remove nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// One JSON object: the policy, the sizes before and after, every item
    /// removed and kept with its reason.
    #[arg(long)]
    pub json: bool,
}

/// `--max-bytes`: [`benchops::units::parse_bytes`].
fn parse_max_bytes(text: &str) -> Result<u64, String> {
    benchops::units::parse_bytes(text)
}

/// `benchops-exec subject ...`.
#[derive(Debug, Subcommand)]
pub enum SubjectCommand {
    /// List the cached trees, most recently used first.
    #[command(after_help = "Example:\n  benchops-exec subject list")]
    List,
    /// Remove every cached tree but the KEEP most recently used, with
    /// their builds' outcomes, and every export cut short. Lane runs do
    /// the same with KEEP 16.
    #[command(after_help = "Example:\n  benchops-exec subject prune --keep 4")]
    Prune {
        /// Trees to keep.
        #[arg(long, default_value_t = crate::subject::DEFAULT_KEEP)]
        keep: usize,
    },
}

/// The options of `compare`.
#[derive(Debug, Args)]
#[command(group(clap::ArgGroup::new("suite").required(true).args(["intent", "manifest"])))]
pub struct CompareArgs {
    /// A benchmark intent whose command runs the subject from
    /// $BENCHOPS_SUBJECT_DIR; compared with the default settings (every
    /// metric but user_s, sys_s and max_rss_bytes).
    #[arg(long, value_name = "FILE", conflicts_with_all = ["manifest", "lane"])]
    pub intent: Option<PathBuf>,
    /// A schedule manifest (with --lane): the lane's suite, the cases it
    /// covers and its comparison settings.
    #[arg(long, value_name = "FILE", requires = "lane")]
    pub manifest: Option<PathBuf>,
    /// The lane of --manifest.
    #[arg(long, requires = "manifest")]
    pub lane: Option<String>,
    /// The subject: a git checkout, or a directory inside one (each side
    /// then sees the same directory of its own tree).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub subject: PathBuf,
    /// The baseline (side A) and the candidate (side B): any revisions git
    /// knows (commit ids, branches, tags, HEAD~2).
    #[arg(long, num_args = 2, value_names = ["A", "B"], required = true)]
    pub commits: Vec<String>,
    /// Measured runs per side (default: the lane's confirm_runs, 10).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub runs: Option<u32>,
    /// Only the cases whose id matches one of these globs (`*` matches any
    /// run of characters, `/` included).
    #[arg(long, value_name = "GLOB", num_args = 1..)]
    pub cases: Vec<String>,
    /// The seed of the interleaved order (default: derived from both
    /// commits).
    #[arg(long)]
    pub seed: Option<u64>,
    #[command(flatten)]
    pub on: BackendArgs,
    /// Print the report as one JSON object (schema benchops-compare/v1)
    /// instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// The driver of `platform`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum PlatformDriver {
    /// GitHub's REST API through exec's measuring client.
    HarnessApi,
    /// `gh` and `git`, or the adapter's commands.
    Cli,
    /// The deterministic in-process triage and fleet providers.
    FakeProvider,
}

/// The options of `platform`.
#[derive(Debug, clap::Args)]
pub struct PlatformArgs {
    /// `github`, or an adapter named in the semantics config.
    #[arg(long, default_value = "github")]
    pub platform: String,
    /// The driver.
    #[arg(long, value_enum, default_value = "cli")]
    pub driver: PlatformDriver,
    /// The scenario's name in the spec.
    #[arg(long, default_value = "platform_capability_probe")]
    pub scenario: String,
    /// The protection variant (one the semantics config declares).
    #[arg(long, default_value = "protection-none")]
    pub protection_variant: String,
    /// OWNER/NAME of a DISPOSABLE repository: runs create and merge pull
    /// requests in it.
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// Runs of the scenario.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub runs: u32,
    /// The NAME of the environment variable that holds the subject token
    /// (never the token itself).
    #[arg(long, value_name = "NAME", default_value = "GITHUB_TOKEN")]
    pub token_env: String,
    /// The scenario spec (TOML).
    #[arg(long, value_name = "FILE")]
    pub spec: PathBuf,
    /// The semantics config (TOML).
    #[arg(long, value_name = "FILE")]
    pub semantics: PathBuf,
    /// Where the rows and the summary go.
    #[arg(long, value_name = "DIR", default_value = ".benchops/platform/results")]
    pub results: PathBuf,
    /// Clones, scratch files and the measurement lock.
    #[arg(long, value_name = "DIR", default_value = ".benchops/platform/work")]
    pub workdir: PathBuf,
    /// The GitHub API base URL.
    #[arg(long, value_name = "URL", env = "GITHUB_API_URL")]
    pub api_url: Option<String>,
    /// Race pacing: content operations an hour.
    #[arg(long, value_name = "N", default_value_t = 500.0)]
    pub ops_per_hour: f64,
    /// How much of a command's output an agent reads, in characters (the
    /// token estimates of CLI rows).
    #[arg(long, value_name = "CHARS", default_value_t = 20_000)]
    pub admitted_output_chars: usize,
    /// How long to wait for another platform run's measurement lock, in
    /// seconds.
    #[arg(long, value_name = "SECONDS", default_value_t = 3600)]
    pub lock_wait: u64,
    /// Keep the run's clones and scratch files (WORKDIR/runs/<run id>).
    #[arg(long)]
    pub keep_workdirs: bool,
    /// Let a branch_fleet_nN or an integration_race_nN of more than 100
    /// branches open its pull requests on a live platform (without it,
    /// every row is skipped and nothing is requested). One invocation never
    /// opens more than 1000 (branches times runs), even with it.
    #[arg(long, visible_alias = "allow-large-fleet")]
    pub allow_large_live_run: bool,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Run as a platform case of a lane: print one JSON metric line per
    /// measured value on standard output (a skipped row's values are null
    /// with its reason), the file names on standard error, and exit 0
    /// unless a row failed. Needs --runs 1 (the lane repeats the case).
    #[arg(long, conflicts_with = "json")]
    pub metrics: bool,
}

#[cfg(test)]
mod tests {
    use clap::Parser as _;

    use super::*;

    fn platform(extra: &[&str]) -> PlatformArgs {
        let mut argv = vec![
            "benchops-exec",
            "platform",
            "--spec",
            "s.toml",
            "--semantics",
            "m.toml",
        ];
        argv.extend_from_slice(extra);
        match Cli::try_parse_from(argv).expect("parses").command {
            Command::Platform(a) => a,
            other => panic!("not platform: {other:?}"),
        }
    }

    #[test]
    fn the_large_live_run_opt_in_keeps_its_old_spelling() {
        assert!(!platform(&[]).allow_large_live_run);
        assert!(platform(&["--allow-large-live-run"]).allow_large_live_run);
        assert!(platform(&["--allow-large-fleet"]).allow_large_live_run);
    }
}
