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
    }
}
