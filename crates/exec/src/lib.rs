//! `benchops-exec`: the execution side of benchops.
//!
//! Every CLI command is a public function here with the same inputs and
//! outputs; `main.rs` only parses arguments and maps errors to exit codes.
//! This crate holds no GitHub client and no publication credentials.

pub mod bench;
pub mod child;
pub mod procfs;
pub mod result;
pub mod seal;
pub mod slurm;
pub mod state;
