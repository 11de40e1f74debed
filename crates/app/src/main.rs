//! `benchops-app`: the GitHub App backend (not yet available).

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!("benchops-app: the App backend is not part of this build yet");
    ExitCode::from(2)
}
