//! `benchops-app`: the GitHub App backend (not yet available).

use std::io::Write as _;
use std::process::ExitCode;

fn main() -> ExitCode {
    // A closed standard error is no reason to panic.
    let _ = writeln!(
        std::io::stderr(),
        "benchops-app: the App backend is not part of this build yet"
    );
    ExitCode::from(2)
}
