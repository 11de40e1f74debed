//! `benchops-app`: a thin shim over the `benchops_app` library, whose
//! [`benchops_app::cli`] parses the command line, runs the command and
//! returns the exit code.

// Every delivery allocates its headers, body and parsed event on one of
// the runtime's threads and frees them on another; mimalloc spends less
// time there than the system allocator (`cargo xtask bench-webhooks`).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(benchops_app::cli::main_with_args(std::env::args_os()))
}
