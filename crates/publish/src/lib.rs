//! `benchops-publish`: the publication side of benchops. It carries out what
//! sealed records say; it never runs a benchmark and never decides drift.
//!
//! The sweep is one engine ([`sweep`]) over two ports, a history store and
//! an issue tracker; [`local`] and [`github`] build the ports for each mode.
//! Every CLI command is a public function here; `main.rs` is a thin shim.

pub mod exit;
pub mod github;
pub mod health;
pub mod history;
pub mod ledger;
pub mod local;
pub mod provision;
pub mod signatures;
pub mod sweep;
pub mod text;
pub mod validate;
pub mod verify;
pub mod watchdog;
