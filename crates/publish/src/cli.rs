//! The command line of `benchops-publish` (clap types only;
//! [`crate::commands`] maps them to library calls and exit codes).
//!
//! The `///` comments of the argument types are the `--help` text users
//! read, written for a terminal (`[labels]`, `<file>.sig`, bare URLs), not
//! as rustdoc; rustdoc's link and HTML checks are off for this module.
#![allow(
    rustdoc::broken_intra_doc_links,
    rustdoc::invalid_html_tags,
    rustdoc::bare_urls,
    reason = "the doc comments here are clap's --help text, not rustdoc"
)]

use std::path::PathBuf;

use benchops::fsio::DEFAULT_MAX_RECORD_BYTES;
use clap::{Parser, Subcommand};

/// Validate, persist and announce sealed benchmark records. Never runs a
/// benchmark and never decides drift.
#[derive(Debug, Parser)]
#[command(name = "benchops-publish", version, about, long_about = None)]
pub struct Cli {
    /// --quiet and --color.
    #[command(flatten)]
    pub output: benchops_cli::OutputArgs,
    /// The command.
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Check sealed benchmark-result/v1, v2 and v3 files: canonical bytes, digest (when
    /// the file name carries one), schema and semantic invariants.
    ///
    /// Directories are searched recursively for *.json. Exit status: 0 all
    /// valid, 1 any invalid, 2 usage error (including a path that cannot be
    /// read).
    #[command(
        after_help = "Examples:\n  benchops-publish validate sealed/\n  benchops-publish validate --json results/nightly/2026/11/*.json   # needs a checkout of the benchmark-history branch\n  benchops-publish validate --manifest examples/lane/schedule.toml sealed/   # signatures too"
    )]
    Validate {
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print one JSON document instead of a table.
        #[arg(long)]
        json: bool,
        /// List every problem of a file that is not a benchops record at
        /// all (by default it gets one line: `not a benchops record`).
        #[arg(long, short)]
        verbose: bool,
        /// The largest record file read, in bytes; a larger one is
        /// reported as too-large without being read.
        #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_RECORD_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
        max_record_bytes: u64,
        /// Also check signatures as the sweep does, with this schedule
        /// manifest's [signing] table: each valid record's <file>.sig is
        /// verified against the allowed_signers file it names (its lane as
        /// principal, now), and a lane that must sign needs one.
        #[arg(long, value_name = "FILE")]
        manifest: Option<PathBuf>,
    },
    /// Sweep sealed handoffs into history and issues: validate, persist,
    /// reconcile, report. Two modes: `--local DIR` (no GitHub) and
    /// `--github` (a repository, with one App installation token per phase).
    ///
    /// Local mode takes the sweep lock DIR/.sweep.lock (one sweep per DIR
    /// at a time), then reads DIR/sealed/*.json (what `benchops-exec bench
    /// seal --out DIR/sealed` writes). Invalid handoffs are copied to
    /// DIR/quarantine/ with a .why.txt and never persisted; their source
    /// file is left in place. New records are persisted in one commit (with
    /// a receipt) on the benchmark-history branch of DIR/history.git
    /// (created when missing); nothing new, no commit. Handoffs whose
    /// record is in history are then moved to DIR/sealed/.persisted/. Drift issues are then reconciled from all of
    /// history into the ledger DIR/issues.json, one atomic write per action,
    /// and a summary with a per-lane health table is printed.
    ///
    /// GitHub mode reads --handoff DIR/*.json (invalid ones are copied to
    /// DIR/quarantine/, consumed ones moved to DIR/.persisted/) and/or, with --handoff-refs, the handoff refs
    /// refs/heads/benchmark-result/* of the repository (each a commit whose
    /// tree holds exactly one <hex>.json; invalid ones are left in place
    /// and reported). It persists with a contents-phase token (one tree and
    /// commit on benchmark-history, the ref moved without force, rebuilt on
    /// the new tip when it moved), then deletes the consumed handoff refs,
    /// and reconciles drift issues with an issues-phase token (only the
    /// App bot's marker comments count); each token is revoked when its
    /// phase ends. The API is GITHUB_API_URL (default
    /// https://api.github.com).
    ///
    /// Rerunning converges in both modes: records already present and
    /// issues already up to date are left alone.
    ///
    /// Exit status: 0 done, 1 done but at least one handoff was quarantined
    /// (or a consumed handoff ref or file is still there, for the next
    /// sweep to take care of), 2 usage error or a failure that stopped the
    /// sweep (the message names the phase and step; rerun after fixing it;
    /// nothing is half-written), 3 (local mode) another sweep of DIR held
    /// the sweep lock for the whole --lock-wait (nothing done; run again).
    #[command(
        after_help = "Examples:\n  benchops-publish sweep --local .benchops/ --manifest examples/lane/schedule.toml\n  benchops-publish sweep --local --manifest examples/schedule.toml   # DIR defaults to .benchops\n  BENCHOPS_APP_KEY_FILE=app.pem benchops-publish sweep --github --repo acme/bench --app-id 12345 --handoff sealed/ --manifest examples/lane/schedule.toml   # needs GitHub\n  BENCHOPS_APP_KEY_FILE=app.pem benchops-publish sweep --github --repo acme/bench --app-id 12345 --handoff-refs --manifest examples/lane/schedule.toml   # needs GitHub\n  benchops-publish sweep --github --repo acme/bench --token-service https://benchops-app.example.org --handoff-refs --manifest examples/lane/schedule.toml   # needs GitHub\n  git fetch --depth=1 origin benchmark-history && benchops-publish sweep --github --repo acme/bench --token-service https://benchops-app.example.org --handoff-refs --history-objects . --manifest examples/lane/schedule.toml   # needs GitHub\n\nSee docs/cli/sweep-local.md for the layout, markers, ledger format and retry rules.",
        group(clap::ArgGroup::new("mode").required(true).args(["local", "github"]))
    )]
    Sweep(SweepArgs),
    /// The missed-run watchdog: each manifest lane's expected slots over the
    /// lookback, classified on_time, late, missed, failed or pending, from
    /// the history branch's record paths and the metadata of the records
    /// inside the lookback. Reads only; runs and changes nothing.
    ///
    /// A lane's slots count from its first record on; a lane with no record
    /// is expected over the whole lookback. A slot is late when its record
    /// finished after the completion window, or when none is there yet but
    /// the grace period after the window has not run out; missed when the
    /// grace period is over too; failed when its record says every case
    /// errored or fewer than half of its runs succeeded.
    ///
    /// Exit status: 0 nothing missed or failed, 1 a lane has a missed or
    /// failed slot, a bad schedule, or a record could not be read, 2 usage
    /// error or no readable history.
    #[command(
        after_help = "Examples:\n  benchops-publish watchdog --local .benchops --manifest examples/lane/schedule.toml   # exits 1 while a slot is missed\n  benchops-publish watchdog --local --manifest examples/lane/schedule.toml --json   # exits 1 while a slot is missed\n  benchops-publish watchdog --local --manifest examples/lane/schedule.toml --markdown >> \"$GITHUB_STEP_SUMMARY\"   # needs a GitHub Actions runner\n  benchops-publish watchdog --local --manifest examples/lane/schedule.toml --annotations --lookback-hours 168   # exits 1 while a slot is missed\n  benchops-publish watchdog --history \"$RUNNER_TEMP/history\" --manifest examples/lane/schedule.toml --markdown   # needs a GitHub Actions runner\n\nSee docs/cli/watchdog.md for the classes, the JSON report and the annotations."
    )]
    Watchdog {
        /// Where to look, and over which slots.
        #[command(flatten)]
        look: Look,
        /// Print the watchdog-report/v1 JSON document.
        #[arg(long, conflicts_with_all = ["markdown", "annotations"])]
        json: bool,
        /// Print markdown for $GITHUB_STEP_SUMMARY.
        #[arg(long, conflicts_with = "annotations")]
        markdown: bool,
        /// Print GitHub Actions annotations (::error for a missed or failed
        /// slot, ::warning for a late one) after the text.
        #[arg(long)]
        annotations: bool,
    },
    /// Lane health: per manifest lane, the watchdog's last on-time slot,
    /// last success and misses in a row, the latest run durations and
    /// their trend, the open drift issues of the cases it covers (from the
    /// local ledger) with the change point of each key's series, and the
    /// baseline's age; for the branch, the history growth trigger (packed
    /// size over 100 MB or a file over 10 MB). Reads only.
    ///
    /// Exit status: 0 all well, 1 a lane has a missed or failed slot or
    /// cannot be watched, or the growth trigger is reached, 2 usage error or
    /// no readable history.
    #[command(
        after_help = "Examples:\n  benchops-publish health --local .benchops --manifest examples/lane/schedule.toml   # exits 1 while a slot is missed\n  benchops-publish health --local --manifest examples/lane/schedule.toml --json   # exits 1 while a slot is missed\n  benchops-publish health --history \"$RUNNER_TEMP/history\" --manifest examples/lane/schedule.toml --markdown >> \"$GITHUB_STEP_SUMMARY\"   # needs a GitHub Actions runner\n\nSee docs/cli/health.md."
    )]
    Health {
        /// Where to look, and over which slots.
        #[command(flatten)]
        look: Look,
        /// With --history: an issue ledger to read drift issues from
        /// (with --local it is DIR/issues.json).
        #[arg(
            long,
            value_name = "FILE",
            requires = "history",
            conflicts_with = "local"
        )]
        ledger: Option<PathBuf>,
        /// Print the health-report/v2 JSON document.
        #[arg(long, conflicts_with = "markdown")]
        json: bool,
        /// Print markdown for $GITHUB_STEP_SUMMARY.
        #[arg(long)]
        markdown: bool,
        /// Read and verify every record of history (not only what the
        /// history index names), and check the index against them.
        #[arg(long)]
        full: bool,
    },
    /// Check (verify), preview (plan) or create (apply) how a repository
    /// is set up to publish: the App, the environment, rulesets, labels
    /// and the workflow file.
    #[command(subcommand)]
    Provision(ProvisionCommand),
    /// Check schedule manifests: the TOML, the schema, the rules the
    /// sweep applies when it loads one, and that every lane's cron and IANA
    /// time zone can be evaluated. Reads only.
    ///
    /// Exit status: 0 every manifest valid, 1 a manifest is invalid (each
    /// problem is printed, with the file), 2 usage error.
    #[command(
        after_help = "Examples:\n  benchops-publish check-manifest examples/lane/schedule.toml\n  benchops-publish check-manifest benchmarks/schedule*.toml\n\nSee docs/cli/benchops-publish.md."
    )]
    CheckManifest {
        /// Manifest files (TOML).
        #[arg(required = true, value_name = "FILE")]
        manifests: Vec<PathBuf>,
    },
    /// Show one sealed record for people: subject, lane, slot, runs, each
    /// case's metrics with units, each key's verdict, the confirmation
    /// mode and the culprit, if any. Text from the record is printed
    /// inert. Reads only.
    ///
    /// RECORD is a record file, or a digest (`sha256:<hex>`, or a prefix of
    /// at least 4 hex digits that only one record has) looked up in the
    /// history that sweep --local DIR writes (DIR/history.git; `--local`
    /// alone and the default mean `.benchops`), or in --history REPO.
    ///
    /// Exit status: 0 shown, 2 usage error, an unknown or ambiguous
    /// digest, an invalid file, or no history.
    #[command(
        after_help = "Examples:\n  benchops-publish show .benchops/sealed/.persisted/<hex>.json   # needs a record: <hex> is its digest\n  benchops-publish show 3f1c2a9d --local .benchops   # needs a record whose digest starts so\n  benchops-publish show sha256:<hex> --history \"$RUNNER_TEMP/history\" --json   # needs a GitHub Actions runner\n\nSee docs/cli/benchops-publish.md."
    )]
    Show {
        /// A record file, or a record's digest or digest prefix.
        #[arg(value_name = "RECORD")]
        record: String,
        /// Where history is.
        #[command(flatten)]
        place: Place,
        /// Print the record's canonical JSON (its sealed bytes).
        #[arg(long)]
        json: bool,
    },
    /// One lane's series from history: per record (oldest first) its slot,
    /// commit, digest and the median of each case's metric, a value not
    /// measured left as a gap. Reads the lane's newest --limit records only.
    ///
    /// Reads a local repository: DIR/history.git of sweep --local DIR, or
    /// --history REPO (for GitHub mode, fetch the branch first: `git fetch
    /// origin benchmark-history:benchmark-history`, then --history .).
    ///
    /// Exit status: 0 shown, 2 usage error, an unknown case or metric, or
    /// no history.
    #[command(
        after_help = "Examples:\n  benchops-publish history --lane comprehensive\n  benchops-publish history --lane comprehensive --case widgets/size=large --metric work_s --csv > work.csv\n  benchops-publish history --lane comprehensive --case widgets/size=large --metric work_s --svg work.svg\n\nSee docs/cli/benchops-publish.md."
    )]
    History {
        /// Where history is.
        #[command(flatten)]
        place: Place,
        /// The lane.
        #[arg(long, value_name = "LANE")]
        lane: String,
        /// Only this case.
        #[arg(long, value_name = "CASE")]
        case: Option<String>,
        /// Only this metric.
        #[arg(long, value_name = "METRIC")]
        metric: Option<String>,
        /// Read the lane's newest N records at most.
        #[arg(long, value_name = "N", default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=10_000))]
        limit: u32,
        /// Print CSV (one row per record and key; an empty value is a gap).
        #[arg(long, conflicts_with = "json")]
        csv: bool,
        /// Print one JSON document.
        #[arg(long)]
        json: bool,
        /// Also draw the series as an SVG file, with the status page's
        /// renderer (needs exactly one series: pass --case and --metric).
        #[arg(long, value_name = "FILE")]
        svg: Option<PathBuf>,
    },
    /// A lane's baseline pointer (baselines/<lane>.json): show it, or move
    /// it by hand with a receipt that says who and why.
    #[command(subcommand)]
    Baseline(BaselineCommand),
}

/// Where a reading command finds history: the repository that sweep
/// --local DIR writes, or any repository with the branch.
#[derive(Debug, Clone, clap::Args)]
pub struct Place {
    /// The sweep directory; DIR/history.git is read. `--local` alone, and
    /// no --local or --history at all, mean `.benchops`.
    #[arg(
        long,
        value_name = "DIR",
        num_args = 0..=1,
        default_missing_value = ".benchops",
        conflicts_with = "history"
    )]
    pub local: Option<PathBuf>,
    /// A git repository (bare or not) with a local benchmark-history
    /// branch, for example a clone, or one after `git fetch origin
    /// benchmark-history:benchmark-history`.
    #[arg(long, value_name = "REPO")]
    pub history: Option<PathBuf>,
}

impl Place {
    /// The history repository: --history, or DIR/history.git.
    pub fn history_repo(&self) -> PathBuf {
        history_repo(self.local.as_deref(), self.history.as_deref())
    }

    /// The sweep directory, unless --history names the repository.
    pub fn sweep_dir(&self) -> Option<PathBuf> {
        match self.history {
            Some(_) => None,
            None => Some(
                self.local
                    .clone()
                    .unwrap_or_else(|| PathBuf::from(DEFAULT_SWEEP_DIR)),
            ),
        }
    }

    /// How the command line named the history: `--history REPO` or
    /// `--local DIR`.
    pub fn flag(&self) -> &'static str {
        if self.history.is_some() {
            "--history"
        } else {
            "--local"
        }
    }
}

/// The sweep directory when `--local` gives none.
pub const DEFAULT_SWEEP_DIR: &str = ".benchops";

/// The history repository of `--history REPO`, or of the sweep directory
/// `--local DIR` (DIR/history.git, as `sweep --local` names it).
pub fn history_repo(local: Option<&std::path::Path>, history: Option<&std::path::Path>) -> PathBuf {
    match history {
        Some(h) => h.to_path_buf(),
        None => local
            .unwrap_or(std::path::Path::new(DEFAULT_SWEEP_DIR))
            .join(crate::local::HISTORY_DIR),
    }
}

/// GitHub mode of a command that reads or moves one file of
/// benchmark-history: the repository's branch through the API, with one
/// contents-phase installation token (revoked at the end).
#[derive(Debug, Clone, clap::Args)]
pub struct Remote {
    /// GitHub mode: work on benchmark-history of --repo through the API
    /// (GITHUB_API_URL, default https://api.github.com), with a
    /// contents-phase token from --app-id/--app-key-file or
    /// --token-service, as the sweep's persist does.
    #[arg(long, conflicts_with_all = ["local", "history"])]
    pub github: bool,
    /// The repository and its credentials.
    #[command(flatten)]
    pub auth: GitHubAuth,
}

/// The `baseline` subcommands.
#[derive(Debug, Subcommand)]
pub enum BaselineCommand {
    /// The lane's pointer: the record it names, its slot, the policy it was
    /// written under and the record it replaced. Reads only.
    #[command(
        after_help = "Examples:\n  benchops-publish baseline show --lane nightly\n  benchops-publish baseline show --lane nightly --json\n\nSee runbooks/baseline.md."
    )]
    Show {
        /// Where history is.
        #[command(flatten)]
        place: Place,
        /// Or on GitHub.
        #[command(flatten)]
        remote: Remote,
        /// The lane.
        #[arg(long, value_name = "LANE")]
        lane: String,
        /// Print the pointer's JSON (null: none).
        #[arg(long)]
        json: bool,
    },
    /// Point the lane's baseline at one of its records in history, in one
    /// commit with a receipt naming who and why. The branch moves by
    /// compare-and-swap, never forced, and the commit is rebuilt on the new
    /// tip when another writer moved it first. With --local, under the
    /// sweep lock; with --github, through the API with a contents-phase
    /// token, as the sweep's persist writes.
    ///
    /// Exit status: 0 moved (or already there), 2 usage error or refused
    /// (the message says why), 3 another sweep held the lock.
    #[command(
        after_help = "Examples:\n  benchops-publish baseline set --lane nightly --record 3f1c2a9d --reason 'drift #12 accepted' --manifest schedule.toml   # needs a record whose digest starts so\n  BENCHOPS_APP_KEY_FILE=app.pem benchops-publish baseline set --github --repo acme/bench --app-id 12345 --lane nightly --record 3f1c2a9d --reason 'drift #12 accepted' --manifest schedule.toml   # needs GitHub\n\nSee runbooks/baseline.md."
    )]
    Set {
        /// What to move and why.
        #[command(flatten)]
        args: BaselineArgs,
        /// The record: its digest (`sha256:<hex>`) or a prefix of at least
        /// 4 hex digits; it must be one of the lane's records in history.
        #[arg(long, value_name = "DIGEST")]
        record: String,
    },
    /// Point the lane's baseline at its newest record whose child runs all
    /// succeeded with no case in error, as `set` does (commit, receipt, no
    /// force): after a drift is accepted, the lane compares with its
    /// current level from then on.
    ///
    /// Exit status: as `set`.
    #[command(
        after_help = "Examples:\n  benchops-publish baseline reset --lane comprehensive --reason 'new parser accepted (#12)' --actor alice --manifest examples/lane/schedule.toml\n\nSee runbooks/baseline.md."
    )]
    Reset {
        /// What to move and why.
        #[command(flatten)]
        args: BaselineArgs,
    },
}

/// What `baseline set` and `reset` work on, and who asks why.
#[derive(Debug, Clone, clap::Args)]
pub struct BaselineArgs {
    /// Where history is.
    #[command(flatten)]
    pub place: Place,
    /// Or on GitHub.
    #[command(flatten)]
    pub remote: Remote,
    /// The lane.
    #[arg(long, value_name = "LANE")]
    pub lane: String,
    /// Why the pointer moves (kept in the receipt), e.g. the drift issue
    /// that was accepted.
    #[arg(long, value_name = "TEXT")]
    pub reason: Option<String>,
    /// Who moves it (kept in the receipt). Default: $GITHUB_ACTOR, else
    /// git's user.name and user.email.
    #[arg(long, value_name = "WHO")]
    pub actor: Option<String>,
    /// The schedule manifest: the lane must be declared there, and its
    /// policy is written into the pointer.
    #[arg(long, value_name = "FILE")]
    pub manifest: PathBuf,
}

/// GitHub mode's repository and where its installation tokens come from:
/// the App key, or benchops-app's OIDC exchange. `sweep --github` and
/// `baseline --github` take the same options.
#[derive(Debug, Clone, clap::Args)]
pub struct GitHubAuth {
    /// GitHub mode: the repository, OWNER/NAME.
    #[arg(long, value_name = "OWNER/NAME", requires = "github")]
    pub repo: Option<String>,
    /// GitHub mode: the GitHub App's id.
    #[arg(long, value_name = "N", requires = "github")]
    pub app_id: Option<u64>,
    /// GitHub mode: the App's private key file (PEM). The environment
    /// variable names the file; it never holds the key.
    #[arg(long, value_name = "PEM", env = "BENCHOPS_APP_KEY_FILE")]
    pub app_key_file: Option<PathBuf>,
    /// GitHub mode: get each phase's installation token from
    /// benchops-app's OIDC exchange at URL instead of a local App key
    /// (the job needs `permissions: id-token: write`); each token is
    /// handed back for revocation when its phase ends.
    #[arg(
        long,
        value_name = "URL",
        conflicts_with_all = ["app_id", "app_key_file"],
        requires = "github"
    )]
    pub token_service: Option<String>,
    /// GitHub mode with --token-service: the audience of the Actions
    /// ID token, as the service's `oidc.audience` expects it.
    #[arg(
        long,
        value_name = "AUDIENCE",
        default_value = "benchops-app",
        requires = "token_service"
    )]
    pub token_audience: String,
}

/// What `sweep` works on and with.
#[derive(Debug, clap::Args)]
pub struct SweepArgs {
    /// Local mode: the sweep directory (sealed/, history.git,
    /// issues.json, quarantine/). `--local` alone means `.benchops`.
    #[arg(
        long,
        value_name = "DIR",
        num_args = 0..=1,
        default_missing_value = ".benchops"
    )]
    pub local: Option<PathBuf>,
    /// GitHub mode: needs --repo, either --token-service URL or
    /// --app-id with --app-key-file (or BENCHOPS_APP_KEY_FILE), and
    /// --handoff, --handoff-refs or both.
    #[arg(long)]
    pub github: bool,
    /// GitHub mode: the repository and the credentials of its tokens.
    #[command(flatten)]
    pub auth: GitHubAuth,
    /// GitHub mode: the directory of sealed handoffs (*.json).
    #[arg(long, value_name = "DIR")]
    pub handoff: Option<PathBuf>,
    /// GitHub mode: also read the handoff refs
    /// refs/heads/benchmark-result/* of the repository, and delete the
    /// ones whose record is in history once the persist succeeded.
    #[arg(long, requires = "github")]
    pub handoff_refs: bool,
    /// GitHub mode: a git repository holding objects of
    /// benchmark-history (a clone, or any repository after `git fetch
    /// origin benchmark-history`). Records found there are read
    /// locally, each checked against its blob id; only the others cost
    /// a request. Without it, reading history back costs one request
    /// per record, which outruns an installation's rate limit (5,000
    /// an hour) once history holds thousands of records.
    #[arg(long, value_name = "DIR", requires = "github")]
    pub history_objects: Option<PathBuf>,
    /// The schedule manifest (schedule-manifest/v1, TOML): lanes,
    /// coverage, labels and baseline policies.
    #[arg(long, value_name = "FILE")]
    pub manifest: PathBuf,
    /// When the sweep fails after validating: write its receipt, whose
    /// `stopped` says the phase and step where it stopped and whether a
    /// rerun can succeed, to FILE (atomic write). A failed persist
    /// commits nothing, so this is the receipt's only copy. Without
    /// this option the receipt is printed to stderr as one JSON line
    /// after the error.
    #[arg(long, value_name = "FILE")]
    pub receipt_out: Option<PathBuf>,
    /// The largest handoff file read, in bytes; a larger one is
    /// quarantined as too-large without being read.
    #[arg(long, value_name = "BYTES", default_value_t = DEFAULT_MAX_RECORD_BYTES, value_parser = clap::value_parser!(u64).range(1..))]
    pub max_record_bytes: u64,
    /// Local mode: wait at most this many seconds for another sweep of
    /// DIR to release the sweep lock (DIR/.sweep.lock), then exit 3
    /// having read and written nothing. 0: do not wait.
    #[arg(long, value_name = "SECONDS", default_value_t = 60)]
    pub lock_wait: u64,
    /// After the drift issues, keep one missed-run issue per lane with
    /// this label (default benchmark-missed-run): opened while the
    /// watchdog says the lane's last slots are missed (last 72 h, 60 min
    /// grace), its body kept up to date, closed when the lane's latest
    /// slot has a good record again.
    #[arg(long, value_name = "LABEL", num_args = 0..=1, default_missing_value = "benchmark-missed-run")]
    pub missed_run_issues: Option<String>,
    /// After the drift and missed-run issues, keep the repository's one
    /// health issue with this label (default benchmark-health): a table
    /// of every lane (watchdog state, last on-time slot, last success,
    /// misses in a row, latest duration and trend, open drift issues),
    /// opened once, then edited in place when it changes. Pin it once
    /// by hand; the REST API cannot.
    #[arg(long, value_name = "LABEL", num_args = 0..=1, default_missing_value = "benchmark-health")]
    pub health_issue: Option<String>,
}

/// The `provision` subcommands.
#[derive(Debug, Subcommand)]
pub enum ProvisionCommand {
    /// Read the repository through the API and print a pass/fail
    /// checklist: the App's installation and its permissions, repository
    /// access, the publication environment's branch policy, the
    /// benchmark-history ruleset, the benchmark-result/* ruleset (with
    /// --handoff-refs), the labels and their colours, and the workflow file
    /// on the default branch. Each failing check says what to change.
    /// Reads only.
    ///
    /// Exit status: 0 every check passed, 1 a check failed, 2 usage error
    /// or the repository could not be read at all.
    #[command(
        after_help = "Examples:\n  BENCHOPS_APP_KEY_FILE=app.pem benchops-publish provision verify --repo acme/bench --app-id 12345 --manifest examples/lane/schedule.toml   # needs GitHub\n  GH_TOKEN=$(gh auth token) benchops-publish provision verify --repo acme/bench --app-id 12345 --app-key-file app.pem --token-env GH_TOKEN --manifest examples/lane/schedule.toml --handoff-refs --json   # needs GitHub\n\nSee docs/cli/provision.md and runbooks/provisioning.md."
    )]
    Verify(ProvisionArgs),
    /// The checklist of `verify`, and the steps `apply` would take with
    /// the credentials given; steps that need an owner's token are marked.
    /// Reads only.
    ///
    /// Exit status: as `verify`.
    #[command(
        after_help = "Examples:\n  BENCHOPS_APP_KEY_FILE=app.pem benchops-publish provision plan --repo acme/bench --app-id 12345 --manifest examples/lane/schedule.toml   # needs GitHub\n\nSee docs/cli/provision.md."
    )]
    Plan(ProvisionArgs),
    /// Create what is missing where the credentials allow: labels (the
    /// App's issues-phase token or an owner's token), the environment with
    /// a default-branch-only policy, and the rulesets (an owner's token,
    /// `administration: write`). Never changes or deletes what exists;
    /// prints the manual steps for the rest, then checks again.
    ///
    /// Exit status: 0 every check passes afterwards, 1 something is left
    /// to do by hand (listed), 2 usage error or the repository could not be
    /// read at all.
    #[command(
        after_help = "Examples:\n  GH_TOKEN=$(gh auth token) benchops-publish provision apply --repo acme/bench --app-id 12345 --app-key-file app.pem --token-env GH_TOKEN --manifest examples/lane/schedule.toml   # needs GitHub\n  GH_TOKEN=$(gh auth token) benchops-publish provision apply --repo acme/bench --app-id 12345 --app-key-file app.pem --token-env GH_TOKEN --manifest examples/lane/schedule.toml --handoff-refs --execution-actor DeployKey   # needs GitHub\n\nSee docs/cli/provision.md."
    )]
    Apply(ProvisionArgs),
}

/// What `provision` works on and with.
#[derive(Debug, clap::Args)]
pub struct ProvisionArgs {
    /// The repository, OWNER/NAME.
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: String,
    /// The schedule manifest (its lanes give the lane labels, its
    /// [labels] the label names).
    #[arg(long, value_name = "FILE")]
    pub manifest: PathBuf,
    /// The publication App's id (its bypass entry in the rulesets).
    #[arg(long, value_name = "N")]
    pub app_id: Option<u64>,
    /// The App's private key file (PEM), to read the installation and
    /// mint read-only and issues-phase tokens. The environment variable
    /// names the file; it never holds the key.
    #[arg(
        long,
        value_name = "PEM",
        env = "BENCHOPS_APP_KEY_FILE",
        requires = "app_id"
    )]
    pub app_key_file: Option<PathBuf>,
    /// The name of an environment variable holding an owner's token (for
    /// example GH_TOKEN from `gh auth token`): used for the reads, and by
    /// `apply` for the steps that need `administration: write`. The token
    /// is never printed.
    #[arg(long, value_name = "VAR")]
    pub token_env: Option<String>,
    /// The publication environment.
    #[arg(long, value_name = "NAME", default_value = crate::provision::DEFAULT_ENVIRONMENT)]
    pub environment: String,
    /// The publication workflow's path on the default branch.
    #[arg(long, value_name = "PATH", default_value = crate::provision::DEFAULT_WORKFLOW_PATH)]
    pub workflow: String,
    /// Execution hands off through refs/heads/benchmark-result/* refs:
    /// check (and create) their ruleset too.
    #[arg(long)]
    pub handoff_refs: bool,
    /// With --handoff-refs: who pushes handoff refs, as a ruleset bypass
    /// actor TYPE[:ID] (DeployKey, Integration:APP_ID, RepositoryRole:ID,
    /// Team:ID, OrganizationAdmin). Repeatable.
    #[arg(long, value_name = "TYPE[:ID]", requires = "handoff_refs", value_parser = crate::provision::parse_actor)]
    pub execution_actor: Vec<benchops_github::BypassActor>,
    /// With --handoff-refs: benchops-app writes the handoff refs (`POST
    /// /handoff`, `benchops-exec handoff --to URL`), so the App's bypass
    /// is enough and no --execution-actor is needed.
    #[arg(long, requires = "handoff_refs")]
    pub handoff_via_app: bool,
    /// The missed-run label the publication sweep sets
    /// (--missed-run-issues); `none` if it does not.
    #[arg(long, value_name = "LABEL", default_value = "benchmark-missed-run")]
    pub missed_run_label: String,
    /// The health issue's label the publication sweep sets
    /// (--health-issue); `none` if it does not.
    #[arg(long, value_name = "LABEL", default_value = "benchmark-health")]
    pub health_label: String,
    /// Print the provision-report/v1 JSON document.
    #[arg(long)]
    pub json: bool,
}

/// What `watchdog` and `health` read, and the slots they expect.
#[derive(Debug, clap::Args)]
pub struct Look {
    /// The sweep directory: DIR/history.git is read (and, by `health`, the
    /// ledger DIR/issues.json). `--local` alone means `.benchops`.
    #[arg(
        long,
        value_name = "DIR",
        num_args = 0..=1,
        default_missing_value = ".benchops",
        required_unless_present = "history",
        conflicts_with = "history"
    )]
    pub local: Option<PathBuf>,
    /// A git repository (bare or not) with a local benchmark-history
    /// branch, for example one fetched in a workflow with the read-only
    /// GITHUB_TOKEN: `git fetch --depth=1 origin
    /// benchmark-history:benchmark-history`.
    #[arg(long, value_name = "REPO")]
    pub history: Option<PathBuf>,
    /// The schedule manifest (TOML): each lane's cron, time zone and
    /// completion window.
    #[arg(long, value_name = "FILE")]
    pub manifest: PathBuf,
    /// Slots of the last HOURS hours are expected.
    #[arg(long, value_name = "HOURS", default_value_t = benchops::watchdog::DEFAULT_LOOKBACK_HOURS, value_parser = clap::value_parser!(u32).range(1..=8784))]
    pub lookback_hours: u32,
    /// Minutes after a completion window before a slot without a record
    /// is missed (until then it is late).
    #[arg(long, value_name = "MINUTES", default_value_t = benchops::watchdog::DEFAULT_GRACE_MINUTES)]
    pub grace_minutes: u32,
    /// Look as of this instant (RFC 3339) instead of now.
    #[arg(long, value_name = "TIME")]
    pub now: Option<String>,
}

impl Look {
    /// The history repository: --history, or DIR/history.git.
    pub fn history_repo(&self) -> PathBuf {
        history_repo(self.local.as_deref(), self.history.as_deref())
    }

    /// The sweep directory of --local (`.benchops` when absent).
    pub fn sweep_dir(&self) -> PathBuf {
        self.local
            .clone()
            .unwrap_or_else(|| PathBuf::from(".benchops"))
    }
}
