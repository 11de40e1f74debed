//! The pure core of benchops: canonical JSON (RFC 8785), content addresses,
//! the contract types and their schemas, sealing and verification.
//!
//! This crate does no I/O of its own: no network, no clock, no environment.
//! Callers inject those.

pub mod analysis;
pub mod backoff;
pub mod baseline;
pub mod bisect;
pub mod changepoint;
pub mod chart;
pub mod classify;
pub mod compare;
pub mod digest;
pub mod dist;
pub mod effect;
pub mod excerpt;
pub mod fsio;
pub mod gc_policy;
pub mod history_index;
pub mod intent;
pub mod jcs;
pub mod layout;
pub mod manifest;
pub mod mann_whitney;
pub mod markup;
pub mod names;
pub mod num;
pub mod onepass;
pub mod path;
pub mod plan;
pub mod provenance;
pub mod receipt;
pub mod reconcile;
pub mod record;
pub mod same_session;
pub mod scan;
pub mod schedule;
pub mod schema;
pub mod seal;
pub mod spelling;
pub mod stats;
pub mod terminal;
pub mod time;
pub mod units;
pub mod watchdog;

pub use digest::Sha256Digest;
pub use names::{CaseId, LaneName};
pub use num::Finite;
pub use path::JsonPath;
pub use record::ResultRecord;
pub use seal::{SealedRecord, VerifyError, VerifyIssue, seal, verify};
