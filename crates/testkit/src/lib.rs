//! Test support shared by the benchops crates.

use std::path::PathBuf;

/// The workspace root (for reading `examples/`, `schemas/` and fixtures).
pub fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Reads a file under the workspace root.
pub fn read_fixture(rel: &str) -> Vec<u8> {
    let p = workspace_root().join(rel);
    std::fs::read(&p).unwrap_or_else(|e| panic!("fixture {} unreadable: {e}", p.display()))
}
