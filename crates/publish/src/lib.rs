//! `benchops-publish`: the publication side of benchops. It carries out what
//! sealed records say; it never runs a benchmark and never decides drift.
//!
//! The modules form layers, each importing only from those below it (the
//! workspace's tidy test holds the top-level modules acyclic):
//!
//! 1. leaves: [`text`] (terminal text), [`verify`] (the one rule for a
//!    sealed file and its name), [`signatures`] (the `[signing]` policy),
//!    [`exit`] (the exit codes);
//! 2. the engine and its ports: [`sweep`], one engine over a history store
//!    and an issue tracker, which owns every value that crosses them;
//! 3. the adapters and the modes: [`history`] (a local git repository),
//!    [`ledger`] (the local issue ledger), [`local`] and [`github`], which
//!    build the ports for each mode and run the engine;
//! 4. the commands: [`validate`], [`watchdog`], [`health`] and
//!    [`provision`], then [`cli`] and [`commands`], which parse the command
//!    line, print and pick the exit code. `main.rs` is a thin shim.

pub mod cli;
pub mod commands;
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
