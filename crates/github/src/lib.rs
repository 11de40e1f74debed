//! The GitHub publication client of benchops.
//!
//! This crate is the only one allowed to depend on a GitHub client or on
//! JWT signing (see ARCHITECTURE.md, "Invariants"). Its typed operations
//! (git data, refs that never force, issues, labels, installation tokens)
//! arrive with the GitHub-layer work; until then it exposes nothing.
