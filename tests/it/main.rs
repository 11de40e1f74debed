//! The core's integration tests, one binary: each module is one area
//! (golden bytes, canonical JSON vectors, tampering, fuzzing, reconcile
//! scenarios, issue bodies, statistics, schedules, workflow templates). One
//! binary links the crate once instead of once per file.

mod golden;
mod issue_bodies;
mod jcs_vectors;
mod lane_records;
mod plan_golden;
mod provenance_openssh;
mod reconcile_scenarios;
mod schedule_dst;
mod skipped_by_command;
mod stats_changepoint;
mod stats_effect;
mod stats_mann_whitney;
mod verify_differential;
mod verify_fuzz;
mod verify_hostile;
mod verify_tamper;
mod watchdog;
mod workflow_templates;
