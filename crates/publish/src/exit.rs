//! The exit codes of `benchops-publish`, documented in one table in
//! `docs/cli/exit-codes.md`.

/// Everything done; nothing was quarantined or left behind.
pub const OK: u8 = 0;
/// Done, but something needs a person: a record that does not validate
/// (`validate`), a quarantined handoff or a consumed handoff ref that is
/// still there (`sweep`).
pub const ATTENTION: u8 = 1;
/// A usage error, an unreadable input, or a failure that stopped the sweep
/// (the message names the phase and the step; nothing is half-written).
pub const FAILED: u8 = 2;
/// `sweep --local`: another sweep of the directory held its sweep lock for
/// the whole `--lock-wait`. Nothing was read or written; run it again
/// later.
pub const BUSY: u8 = 3;
