//! `benchops-exec`: thin shim over the `benchops_exec` library.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

/// Plan, run, observe, analyze and seal benchmarks. Holds no GitHub
/// credentials.
#[derive(Debug, Parser)]
#[command(name = "benchops-exec", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
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
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::Seal { draft, out } => match benchops_exec::seal::seal_file(&draft, &out) {
            Ok(o) => {
                let note = match o.created {
                    benchops::fsio::Created::New => "sealed",
                    benchops::fsio::Created::AlreadyPresent => "already sealed",
                };
                println!("{note} {} -> {}", o.digest, o.path.display());
                ExitCode::SUCCESS
            }
            Err(benchops_exec::seal::SealFileError::Invalid { path, source }) => {
                eprintln!(
                    "error: draft {} is not a valid benchmark-result/v1 record:",
                    path.display()
                );
                for issue in &source.issues {
                    eprintln!("  - {issue}");
                }
                ExitCode::from(1)
            }
            Err(e) => {
                eprintln!(
                    "error: {}",
                    anyhow::Error::from(e)
                        .chain()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(": ")
                );
                ExitCode::from(2)
            }
        },
    }
}
