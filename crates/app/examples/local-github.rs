//! GitHub on this machine, for trying `benchops-app` with
//! `examples/app/local/config.toml` (docs/cli/benchops-app.md, "Trying it
//! locally"):
//!
//! - the GitHub simulator of `benchops-testkit`, with the App (id 424242,
//!   the throwaway test key) installed on `octo/bench` (id 1001), on
//!   `http://127.0.0.1:8182`: the server mints installation tokens there;
//! - an Actions OIDC issuer on `http://127.0.0.1:8181`, whose
//!   `GET /id-token` answers an ID token of the publication job, as a
//!   runner gets one. Each query parameter replaces the claim of its name,
//!   to try a refusal: `/id-token?ref=refs/heads/feature`.
//!
//! ```text
//! cargo run -p benchops-app --example local-github
//! ```
//!
//! Runs until Ctrl-C. Test keys only: nothing here may face a network.

use std::collections::HashMap;
use std::net::SocketAddr;

use axum::Router;
use axum::extract::Query;
use axum::routing::get;
use benchops_testkit::sim::GitHubSim;
use benchops_testkit::sim::auth::{OTHER_PRIVATE_KEY_PEM, public_jwk, sign_jwt_with_kid};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

/// Where the simulator is reached (`github_api_url`).
const GITHUB: &str = "127.0.0.1:8182";
/// The issuer (`[oidc] issuer`).
const ISSUER: &str = "127.0.0.1:8181";
/// The key id the issuer signs with.
const KID: &str = "local-trial";

/// The claims of the publication job of `examples/app/local/config.toml`.
fn claims(overrides: &HashMap<String, String>) -> Value {
    let now = jiff::Timestamp::now().as_second();
    let workflow = "octo/bench/.github/workflows/benchmark-publication.yml@refs/heads/main";
    let mut c = json!({
        "iss": format!("http://{ISSUER}"), "aud": "benchops-app",
        "sub": "repo:octo/bench:environment:benchmark-publication",
        "repository": "octo/bench", "repository_id": "1001",
        "repository_owner": "octo", "repository_owner_id": "20001",
        "workflow_ref": workflow, "job_workflow_ref": workflow,
        "event_name": "workflow_dispatch", "environment": "benchmark-publication",
        "ref": "refs/heads/main", "run_id": "1", "run_attempt": "1", "actor": "octocat",
        "iat": now, "nbf": now, "exp": now + 300,
    });
    for (k, v) in overrides {
        c[k.as_str()] = Value::String(v.clone());
    }
    c
}

/// Forwards every connection on `listener` to `to`.
async fn forward(listener: TcpListener, to: SocketAddr) {
    while let Ok((mut inbound, _)) = listener.accept().await {
        tokio::spawn(async move {
            if let Ok(mut outbound) = TcpStream::connect(to).await {
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            }
        });
    }
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let sim = GitHubSim::start().await;
    let repo_id = sim.create_repo("octo", "bench");
    let sim_addr = sim.addr();
    let github = TcpListener::bind(GITHUB).await?;
    tokio::spawn(forward(github, sim_addr));

    let issuer = Router::new()
        .route(
            "/.well-known/openid-configuration",
            get(|| async {
                axum::Json(json!({
                    "issuer": format!("http://{ISSUER}"),
                    "jwks_uri": format!("http://{ISSUER}/.well-known/jwks"),
                }))
            }),
        )
        .route(
            "/.well-known/jwks",
            get(|| async {
                axum::Json(json!({ "keys": [public_jwk(OTHER_PRIVATE_KEY_PEM, KID)] }))
            }),
        )
        .route(
            "/id-token",
            get(|Query(q): Query<HashMap<String, String>>| async move {
                sign_jwt_with_kid(OTHER_PRIVATE_KEY_PEM, KID, &claims(&q))
            }),
        );
    let listener = TcpListener::bind(ISSUER).await?;
    tokio::spawn(async move { axum::serve(listener, issuer).await });

    println!(
        "GitHub simulator on http://{GITHUB} (octo/bench, id {repo_id}, App 424242 installed)\n\
         OIDC issuer on http://{ISSUER}: GET /id-token for the publication job's ID token\n\
         Now, in another terminal:\n  \
         cargo run -p benchops-app -- serve --config examples/app/local/config.toml\n  \
         curl -s -X POST http://127.0.0.1:8180/token \\\n    \
         -H \"Authorization: Bearer $(curl -s http://{ISSUER}/id-token)\" -d '{{\"phase\":\"contents\"}}'\n\
         Ctrl-C stops."
    );
    tokio::signal::ctrl_c().await?;
    Ok(())
}
