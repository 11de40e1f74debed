//! The command line of `benchops-exec lane`: its subcommands and their
//! options (a lane run, a bisection by hand, advancing and looking). The
//! doc comments are the CLI's help text.
#![allow(rustdoc::invalid_html_tags)]

use std::path::PathBuf;

use clap::{Args, Subcommand};

use super::Backend;

/// `benchops-exec lane ...`.
#[derive(Debug, Subcommand)]
pub enum LaneCommand {
    /// Start a lane run: measure every case the lane covers, then (with
    /// `lane advance`, a Slurm follow-up job, or --wait) compare with the
    /// lane's baseline, re-measure suspects beside the baseline commit in
    /// the same session, bisect a confirmed regression to its culprit
    /// commit, and seal a benchmark-result/v3 record into OUT.
    ///
    /// Reads the baseline and the drift state from the history branch of H
    /// (a local git repository, or a git URL fetched read-only with the
    /// environment's own git access; no GitHub API, no token). Refuses to
    /// start when publication credentials are in the environment. Running
    /// it again with the same inputs resumes the same execution. Prints the
    /// execution id.
    #[command(
        after_help = "Example:\n  benchops-exec lane run --manifest examples/lane/schedule.toml --lane comprehensive \\\n    --history .benchops/history.git --subject widgets --out .benchops/sealed --wait"
    )]
    Run(Box<LaneRunArgs>),
    /// List the lanes whose latest slot needs a lane run now; with --run,
    /// start them.
    ///
    /// A lane is due when its latest slot (a firing of its cron in its own
    /// time zone, at or before now) has no lane execution in the state
    /// directory and its completion window is open. The lane's `catch_up`
    /// (manifest v3) says what happens to a slot that was not run when it
    /// came: `latest` (default) runs it inside its window, `none` runs a
    /// slot only on time and reports a late one as skipped. With --run,
    /// under a lock, it starts each due lane (as `lane run` would) and moves
    /// every unsealed execution of those slots one step on: safe to call
    /// every minute, from a timer, with nobody there. Refuses to start when
    /// publication credentials are in the environment. Exit 0 when a lane
    /// was due (or started, or moved on), 4 when nothing was due, 2 on
    /// error.
    #[command(
        after_help = "Examples:\n  benchops-exec lane due --manifest examples/lane/schedule.toml --now 2026-12-04T23:05:00Z\n  benchops-exec lane due --manifest examples/lane/schedule.toml --lane comprehensive --run --now 2026-12-04T23:05:00Z \\\n    --history .benchops/history.git --subject widgets --out .benchops/sealed\n\nSee docs/scheduling.md (a timer that calls it every minute)."
    )]
    Due(Box<LaneDueArgs>),
    /// Write what starts the manifest's lanes on schedule: systemd units
    /// (a service and a timer per lane, in the lane's own zone), crontab
    /// or scrontab lines, or a Slurm chain per lane, each calling `lane due
    /// --run` for its lane.
    ///
    /// systemd: DIR/benchops-lane-<lane>.service and .timer, checked with
    /// `systemd-analyze verify`; install them with `systemctl link` or a
    /// copy into /etc/systemd/system, then `systemctl enable --now` the
    /// timers. cron and scrontab: printed on standard output, for `crontab
    /// -e` or `scrontab`. slurm: installs each lane's chain now (a batch job
    /// held until the lane's next slot, which submits its successor); a
    /// second install starts no second chain; `--status` lists the chains
    /// and `--stop` stops them.
    #[command(
        after_help = "Examples:\n  benchops-exec lane schedule --emit systemd --dir units --manifest examples/lane/schedule.toml \\\n    --history .benchops/history.git --subject widgets --out .benchops/sealed\n  benchops-exec lane schedule --emit cron --manifest examples/lane/schedule.toml \\\n    --history .benchops/history.git --subject widgets --out .benchops/sealed\n  benchops-exec lane schedule --emit slurm --manifest examples/lane/schedule.toml \\\n    --history .benchops/history.git --subject widgets --out .benchops/sealed   # needs a Slurm cluster\n  benchops-exec lane schedule --status --manifest examples/lane/schedule.toml   # needs a Slurm cluster\n  benchops-exec lane schedule --stop --manifest examples/lane/schedule.toml   # needs a Slurm cluster\n\nSee docs/scheduling.md."
    )]
    Schedule(Box<LaneScheduleArgs>),
    /// Bisect by hand: find the commit between GOOD and BAD (first-parent
    /// range of --subject) that made CASE's METRIC worse, with the lane's
    /// settings, build step and budget.
    ///
    /// Each step measures the midpoint interleaved with both bounds in
    /// one stage, exported fresh from the subject's repository. The
    /// bisection is a lane execution of its own: running the command again
    /// resumes it, `lane advance ID` moves it on, and on Slurm follow-up
    /// jobs drive it with nobody waiting. It seals no record. Exit 0 when
    /// one commit is named, 1 when only a range could be proved, 2 on
    /// error.
    #[command(after_help = "Example:
  benchops-exec lane bisect --manifest examples/lane/schedule.toml --lane comprehensive \
    --subject .benchops/lane-demo/widgets --good HEAD~4 --bad HEAD~1 --case widgets/size=large --wait   # needs the demo subject of `cargo xtask pipeline`")]
    Bisect(Box<LaneBisectArgs>),
    /// Move a lane execution forward as far as it can go now (idempotent).
    #[command(
        after_help = "Example:\n  benchops-exec lane advance b97e1b5a   # needs a lane execution id from `lane list`"
    )]
    Advance {
        /// Lane execution id (or unique hex prefix of at least 8 digits).
        id: String,
        /// Run as a Slurm follow-up job: when the stage is not finished
        /// yet, schedule the next follow-up.
        #[arg(long)]
        follow_up: bool,
        /// Print the step as JSON (as `lane run --json` does).
        #[arg(long)]
        json: bool,
    },
    /// Show where a lane execution is (read-only).
    #[command(
        after_help = "Example:\n  benchops-exec lane status b97e1b5a --json   # needs a lane execution id from `lane list`"
    )]
    Status {
        /// Lane execution id (or unique hex prefix).
        id: String,
        /// Print the execution and its stage as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the lane executions in the state directory, newest first: id,
    /// phase, lane, slot, commit and when it started.
    #[command(after_help = "Example:\n  benchops-exec lane list --json")]
    List {
        /// Print one JSON array instead of a table.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Args)]
pub struct LaneRunArgs {
    /// The schedule manifest (schedule-manifest/v2, with a `suite`).
    #[arg(long)]
    pub manifest: PathBuf,
    /// The lane to run.
    #[arg(long)]
    pub lane: String,
    /// The history: a local git repository (bare, or a checkout) or a git URL.
    #[arg(long)]
    pub history: String,
    /// The slot this run fills (RFC 3339 UTC): a firing of the lane's cron
    /// in its time zone, at or before now; by default the latest one.
    #[arg(long)]
    pub slot: Option<String>,
    /// Record an ad-hoc run on purpose, with this reason: the slot (now by
    /// default) need not be a firing of the lane's cron, the record says
    /// why, and the watchdog lists it without crediting it to a slot.
    #[arg(long, value_name = "REASON")]
    pub unscheduled: Option<String>,
    /// The subject repository, owner/name (default: the manifest's).
    #[arg(long)]
    pub repository: Option<String>,
    /// The subject commit (default: `git rev-parse HEAD` in --subject).
    #[arg(long)]
    pub commit: Option<String>,
    /// The subject checkout the commit is read from.
    #[arg(long, default_value = ".")]
    pub subject: PathBuf,
    /// Directory for the sealed record.
    #[arg(long)]
    pub out: PathBuf,
    #[command(flatten)]
    pub on: LaneBackendArgs,
    /// Drive the execution to its sealed record, with a progress bar.
    #[arg(long)]
    pub wait: bool,
    /// Print the outcome as one JSON object: the execution, the notes, the
    /// sealed record once sealed, and every case whose runs did not all
    /// succeed (`failures`), in place of the verdict table and the id.
    #[arg(long)]
    pub json: bool,
    /// Sign the sealed record: also write OUT/<hex>.json.sig, an OpenSSH
    /// signature (SSHSIG, namespace benchops-result) by this Ed25519 key
    /// (mode 0600). The key is checked before anything runs; the
    /// execution remembers the file (never the key), so a resumed run or a
    /// Slurm follow-up signs with it. The environment variable names the
    /// file and is never passed to children.
    #[arg(long, value_name = "FILE", env = "BENCHOPS_SIGN_KEY")]
    pub sign_key: Option<PathBuf>,
}

#[derive(Debug, Args)]
pub struct LaneDueArgs {
    /// The schedule manifest (schedule-manifest/v2 or v3, with a `suite`).
    #[arg(long)]
    pub manifest: PathBuf,
    /// Only these lanes (repeat the option; default: every lane).
    #[arg(long)]
    pub lane: Vec<String>,
    /// Evaluate as if it were this instant (RFC 3339), to check a schedule;
    /// default: now.
    #[arg(long, value_name = "RFC3339")]
    pub now: Option<String>,
    /// Start each due lane and move unsealed ones on, under a lock.
    #[arg(long, requires_all = ["history", "out"])]
    pub run: bool,
    /// With --run: then drive each lane it started or moved on to its
    /// sealed record before returning (what a timer that fires at the slot
    /// itself, rather than every minute, needs).
    #[arg(long, requires = "run")]
    pub wait: bool,
    /// With --run: the history, as for `lane run`.
    #[arg(long)]
    pub history: Option<String>,
    /// With --run: the subject checkout, as for `lane run`.
    #[arg(long, default_value = ".")]
    pub subject: PathBuf,
    /// With --run: where sealed records go, as for `lane run`.
    #[arg(long)]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub on: LaneBackendArgs,
    /// With --run: sign sealed records with this key, as for `lane run`.
    #[arg(long, value_name = "FILE", env = "BENCHOPS_SIGN_KEY")]
    pub sign_key: Option<PathBuf>,
    /// Print one JSON object per lane instead of a table.
    #[arg(long)]
    pub json: bool,
}

/// What `lane schedule` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Emit {
    /// A service and a timer per lane.
    Systemd,
    /// Crontab lines.
    Cron,
    /// A self-renewing chain of Slurm batch jobs per lane, submitted now.
    Slurm,
    /// scrontab lines, for clusters that enable scrontab.
    Scrontab,
}

#[derive(Debug, Args)]
pub struct LaneScheduleArgs {
    /// What to write (with `slurm`: install each lane's chain).
    #[arg(long, value_enum, required_unless_present_any = ["status", "stop"])]
    pub emit: Option<Emit>,
    /// List each lane's Slurm chain jobs (pending, running) instead.
    #[arg(long, conflicts_with_all = ["emit", "stop"])]
    pub status: bool,
    /// Stop each lane's Slurm chain: cancel its pending job; a running job
    /// finishes its slot and submits no successor.
    #[arg(long, conflicts_with = "emit")]
    pub stop: bool,
    /// Used by a chain job: submit its successor unless the chain was
    /// stopped.
    #[arg(long, hide = true, requires = "emit")]
    pub chain_next: bool,
    /// The schedule manifest.
    #[arg(long)]
    pub manifest: PathBuf,
    /// Only these lanes (repeat the option; default: every lane).
    #[arg(long)]
    pub lane: Vec<String>,
    /// The history, as for `lane run`.
    #[arg(long, required_unless_present_any = ["status", "stop"])]
    pub history: Option<String>,
    /// The subject checkout, as for `lane run`.
    #[arg(long, default_value = ".")]
    pub subject: PathBuf,
    /// Where sealed records go, as for `lane run`.
    #[arg(long, required_unless_present_any = ["status", "stop"])]
    pub out: Option<PathBuf>,
    /// systemd: the directory the unit files are written to.
    #[arg(long, default_value = ".")]
    pub dir: PathBuf,
    #[command(flatten)]
    pub on: LaneBackendArgs,
    /// With --emit slurm, --status or --stop: print one JSON object per
    /// lane.
    #[arg(long)]
    pub json: bool,
}

#[derive(Debug, Args)]
pub struct LaneBisectArgs {
    /// The schedule manifest (schedule-manifest/v2 or v3, with a `suite`).
    #[arg(long)]
    pub manifest: PathBuf,
    /// The lane whose settings, build step and budget apply.
    #[arg(long)]
    pub lane: String,
    /// The subject checkout (a git repository holding both commits).
    #[arg(long, default_value = ".")]
    pub subject: PathBuf,
    /// The last commit known good (any revision git resolves).
    #[arg(long)]
    pub good: String,
    /// The first commit known bad.
    #[arg(long)]
    pub bad: String,
    /// The case, as the lane names it (`widgets/size=large`).
    #[arg(long)]
    pub case: String,
    /// The metric (default: the lane's only compared metric, else wall_s).
    #[arg(long)]
    pub metric: Option<String>,
    /// Most steps (default: the lane's budget, ⌈log2 N⌉ + 2).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=64))]
    pub max_steps: Option<u32>,
    #[command(flatten)]
    pub on: LaneBackendArgs,
    /// Drive the bisection to its answer, with a progress bar.
    #[arg(long)]
    pub wait: bool,
    /// Print the answer (the bisection, as a benchmark-result/v3 record
    /// holds it) as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Where a lane execution's children run: the options `lane run` and
/// `lane bisect` share.
#[derive(Debug, Args)]
pub struct LaneBackendArgs {
    /// Where to run the children.
    #[arg(long, value_enum, default_value = "local")]
    pub backend: Backend,
    /// Children running at once (local backend).
    #[arg(long, default_value_t = 1)]
    pub slots: u32,
    /// Slurm partition.
    #[arg(long)]
    pub partition: Option<String>,
    /// Slurm account.
    #[arg(long)]
    pub account: Option<String>,
    /// Slurm array throttle.
    #[arg(long)]
    pub throttle: Option<u32>,
}

impl LaneBackendArgs {
    /// The options as words, to pass on to a `lane due` a unit runs.
    pub fn words(&self) -> Vec<String> {
        let mut w = Vec::new();
        match self.backend {
            Backend::Local => w.extend(["--slots".to_owned(), self.slots.to_string()]),
            Backend::Slurm => {
                w.extend(["--backend".to_owned(), "slurm".to_owned()]);
                for (flag, v) in [
                    ("--partition", &self.partition),
                    ("--account", &self.account),
                ] {
                    if let Some(v) = v {
                        w.extend([flag.to_owned(), v.clone()]);
                    }
                }
                if let Some(t) = self.throttle {
                    w.extend(["--throttle".to_owned(), t.to_string()]);
                }
            }
        }
        w
    }

    /// The backend of the execution.
    pub fn lane_backend(&self) -> crate::lane::LaneBackend {
        match self.backend {
            Backend::Local => crate::lane::LaneBackend::Local { slots: self.slots },
            Backend::Slurm => crate::lane::LaneBackend::Slurm {
                partition: self.partition.clone(),
                account: self.account.clone(),
                throttle: self.throttle,
            },
        }
    }

    /// How often a waiting command looks: children locally, the
    /// scheduler on Slurm.
    pub fn poll(&self) -> std::time::Duration {
        match self.backend {
            Backend::Local => std::time::Duration::from_millis(200),
            Backend::Slurm => std::time::Duration::from_secs(2),
        }
    }
}
