//! Test support shared by the benchops crates.
//!
//! - [`sim`]: a stateful GitHub REST API simulator on loopback
//!   ([`GitHubSim`]), with a fault plan and a request log.
//! - [`openapi`]: GitHub's OpenAPI description (a vendored subset) turned
//!   into JSON Schema validators for request and response bodies.

#![recursion_limit = "256"]

use std::path::PathBuf;

pub mod openapi;
pub mod records;
pub mod sim;

pub use sim::GitHubSim;

/// The workspace root (for reading `examples/`, `schemas/` and fixtures).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Reads a file under the workspace root.
pub fn read_fixture(rel: &str) -> Vec<u8> {
    let p = workspace_root().join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("fixture {} unreadable: {e}", p.display()))
}
