//! `benchops-publish`: thin shim over the `benchops_publish` library.

// Parsing sealed records and state files is allocation-heavy; mimalloc
// roughly halves the time spent in the allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Validate, persist and announce sealed benchmark records. Never runs a
/// benchmark and never decides drift.
#[derive(Debug, Parser)]
#[command(name = "benchops-publish", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Check sealed benchmark-result/v1 files: canonical bytes, digest (when
    /// the file name carries one), schema and semantic invariants.
    ///
    /// Directories are searched recursively for *.json. Exit status: 0 all
    /// valid, 1 any invalid, 2 usage error (including a path that cannot be
    /// read).
    #[command(
        after_help = "Examples:\n  benchops-publish validate sealed/\n  benchops-publish validate --json results/nightly/2026/11/*.json"
    )]
    Validate {
        /// Files or directories.
        #[arg(required = true)]
        paths: Vec<PathBuf>,
        /// Print one JSON document instead of a table.
        #[arg(long)]
        json: bool,
    },
    /// Sweep sealed handoffs into history and issues: validate, persist,
    /// reconcile, report. Local mode (no GitHub) in this build.
    ///
    /// Reads DIR/sealed/*.json (what `benchops-exec bench seal --out
    /// DIR/sealed` writes). Invalid handoffs are copied to DIR/quarantine/
    /// with a .why.txt and never persisted; their source file is left in
    /// place. Valid records are persisted in one commit (with a receipt) on
    /// the benchmark-history branch of DIR/history.git (created when
    /// missing). Drift issues are then reconciled from all of history into
    /// the ledger DIR/issues.json, one atomic write per action, and a summary
    /// with a per-lane health table is printed. Rerunning converges: records
    /// already present and issues already up to date are left alone.
    ///
    /// Exit status: 0 done, 1 done but at least one handoff was quarantined,
    /// 2 usage error or a failure that stopped the sweep (rerun after fixing
    /// it; nothing is half-written).
    #[command(
        after_help = "Examples:\n  benchops-publish sweep --local .benchops/ --manifest schedule.toml\n  benchops-publish sweep --local --manifest examples/schedule.toml   # DIR defaults to .benchops\n\nSee docs/cli/sweep-local.md for the layout, markers, ledger format and retry rules."
    )]
    Sweep {
        /// Local mode: the sweep directory (sealed/, history.git,
        /// issues.json, quarantine/). `--local` alone means `.benchops`.
        #[arg(
            long,
            value_name = "DIR",
            num_args = 0..=1,
            default_missing_value = ".benchops",
            required = true
        )]
        local: Option<PathBuf>,
        /// The schedule manifest (schedule-manifest/v1, TOML): lanes,
        /// coverage, labels and baseline policies.
        #[arg(long, value_name = "FILE")]
        manifest: PathBuf,
    },
}

/// An error and every cause, on one line.
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Validate { paths, json } => {
            let verdicts = match benchops_publish::validate::validate_paths(&paths) {
                Ok(v) => v,
                Err(e) => {
                    let source = std::error::Error::source(&e)
                        .map(|s| format!(": {s}"))
                        .unwrap_or_default();
                    eprintln!("error: {e}{source}");
                    return ExitCode::from(2);
                }
            };
            if json {
                match serde_json::to_string_pretty(&verdicts) {
                    Ok(s) => println!("{s}"),
                    Err(e) => {
                        eprintln!("error: failed to render JSON: {e}");
                        return ExitCode::from(2);
                    }
                }
            } else {
                print!("{}", benchops_publish::validate::render_table(&verdicts));
            }
            if verdicts.iter().all(|v| v.valid) {
                ExitCode::SUCCESS
            } else {
                ExitCode::from(1)
            }
        }
        Command::Sweep { local, manifest } => {
            let Some(dir) = local else {
                eprintln!("error: only local mode exists in this build: pass --local [DIR]");
                return ExitCode::from(2);
            };
            let opts = benchops_publish::sweep::LocalSweepOptions::new(dir, manifest);
            match benchops_publish::sweep::sweep_local(&opts) {
                Ok(report) => {
                    print!("{}", benchops_publish::sweep::render_summary(&report));
                    if report.quarantined() > 0 {
                        eprintln!(
                            "error: {} handoff(s) quarantined in {}",
                            report.quarantined(),
                            report.quarantine.display()
                        );
                        ExitCode::from(1)
                    } else {
                        ExitCode::SUCCESS
                    }
                }
                Err(e) => {
                    eprintln!("error: {}", error_chain(&e));
                    ExitCode::from(2)
                }
            }
        }
    }
}
