//! The benchops GitHub App backend.
//!
//! It will expose `router(state) -> axum::Router`: webhook intake with
//! constant-time HMAC verification, and minting of installation tokens scoped
//! to one publication phase. Nothing is served yet; the `benchops-app` binary
//! says so and exits with status 2 rather than pretending to run.
