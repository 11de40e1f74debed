//! Test support shared by the benchops crates.
//!
//! - [`sim`]: a stateful GitHub REST API simulator on loopback
//!   ([`GitHubSim`]), with a fault plan and a request log. Its pull
//!   requests, merges and commit statuses are behind the `platform`
//!   feature, which only the platform lane's tests turn on.
//! - [`openapi`]: GitHub's OpenAPI description (a vendored subset) turned
//!   into JSON Schema validators for request and response bodies.

#![recursion_limit = "256"]

use std::path::PathBuf;

pub mod openapi;
pub mod records;
pub mod sim;

pub use sim::GitHubSim;

/// The workspace root (for reading `examples/`, `schemas/` and fixtures).
///
/// Found at run time from the package under test (cargo and nextest set
/// `CARGO_MANIFEST_DIR` for the test process): the nearest directory with a
/// `Cargo.lock`. The directory this crate was compiled in is only the
/// fallback, since a build directory shared by several checkouts can hold
/// an artifact compiled elsewhere.
pub fn workspace_root() -> PathBuf {
    std::env::var_os("CARGO_MANIFEST_DIR")
        .map(PathBuf::from)
        .and_then(|dir| {
            dir.ancestors()
                .find(|d| d.join("Cargo.lock").is_file())
                .map(PathBuf::from)
        })
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../.."))
}

/// Reads a file under the workspace root.
pub fn read_fixture(rel: &str) -> Vec<u8> {
    let p = workspace_root().join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("fixture {} unreadable: {e}", p.display()))
}
