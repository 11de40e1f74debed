//! `benchops-publish`: a thin shim over the `benchops_publish` library,
//! whose [`benchops_publish::commands`] parses the command line, runs the
//! command and returns the exit code.

// Parsing sealed records and state files is allocation-heavy; mimalloc
// roughly halves the time spent in the allocator.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(benchops_publish::commands::main_with_args(
        std::env::args_os(),
    ))
}
