//! The App's integration tests, one binary: each module drives the served
//! binary or the router end to end (webhooks, `/token`, `/handoff`, the
//! status page in Chromium, restarts), with the shared setup in `common`.

mod common;

mod broken_pipe;
mod handoff;
mod hardening;
mod history_push;
mod manifest;
mod restart;
mod scheduled_flow;
mod status_browser;
mod status_cache;
mod status_page;
mod token_exchange;
mod webhooks;
