//! The publisher's integration tests, one binary: each module drives the
//! real binaries or the library end to end (sweeps in both modes, the lane
//! runs, hostile files, provisioning, health and the watchdog), with the
//! shared helpers in `binaries`, `sim_client` and `support`.

mod binaries;
mod sim_client;
mod support;

mod baseline_github;
mod broken_pipe;
mod config_cli;
mod first_verified_run;
mod health_cli;
mod health_issue;
mod history_index;
mod history_local;
mod history_many_blobs;
mod hostile_files;
mod lane_e2e;
mod lane_platform;
mod local_crash;
mod missed_runs;
mod output_cli;
mod provision_checks;
mod provision_cli;
mod read_cli;
mod signed_sweep;
mod sweep_github;
mod sweep_local;
mod sweep_two_ports;
mod validate_cli;
mod watchdog_cli;
