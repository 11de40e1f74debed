//! `benchops-exec platform` from the real binary, one test binary (each
//! costs a link): the fake provider, skips and configuration errors
//! ([`cli`]), a CLI adapter platform ([`adapter`]), `gh` and `git`
//! ([`ghcli`]), and the `harness-api` driver against the GitHub simulator
//! ([`api`]). The lane itself is `benchops-platform`, tested through its
//! library in `crates/platform/tests/it/`.

mod adapter;
mod api;
mod cli;
mod ghcli;
