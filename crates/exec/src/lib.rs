//! `benchops-exec`: the execution side of benchops.
//!
//! Every CLI command is a public function here with the same inputs and
//! outputs; [`cmd`] parses arguments, calls these functions, prints
//! what they return and maps errors to the codes of [`exit`]. This crate
//! holds no GitHub client and no publication credentials. The `platform`
//! command calls the platform lane's own crate, `benchops-platform`.

pub mod ab;
pub mod backend;
pub mod bench;
pub mod chain;
pub mod child;
pub mod cli;
pub mod cmd;
pub mod credentials;
pub mod due;
pub mod emit;
pub mod exit;
pub mod failures;
pub mod gc;
pub mod handoff;
pub mod interrupt;
pub mod lane;
mod print;
pub mod procfs;
pub mod progress;
pub mod render;
pub mod result;
pub mod seal;
pub mod signing;
pub mod state;
pub mod subject;
pub mod watch;

/// The Slurm backend, also reachable as [`backend::slurm`].
pub use backend::slurm;
