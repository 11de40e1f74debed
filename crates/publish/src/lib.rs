//! `benchops-publish`: the publication side of benchops. It carries out what
//! sealed records say; it never runs a benchmark and never decides drift.
//!
//! Every CLI command is a public function here; `main.rs` is a thin shim.

pub mod github_sweep;
pub mod history;
pub mod ledger;
pub mod sweep;
pub mod validate;
