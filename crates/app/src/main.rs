//! `benchops-app`: a thin shim over the `benchops_app` library, whose
//! [`benchops_app::cli`] parses the command line, runs the command and
//! returns the exit code.

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(benchops_app::cli::main_with_args(std::env::args_os()))
}
