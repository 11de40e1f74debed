//! The platform lane's integration tests, one binary (each test binary
//! costs a link): the `harness-api` driver against the GitHub simulator
//! through the library ([`api`]). The runs of the real `benchops-exec
//! platform` binary are exec's tests (`crates/exec/tests/platform/`).

mod api;
