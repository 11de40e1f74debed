//! The full scheduled flow with no App key in the publication job:
//! `benchops-publish`'s GitHub sweep (`--token-service`) exchanges an
//! Actions ID token at a running benchops-app for a contents-phase token,
//! persists, revokes it through the app, then does the same for the issues
//! phase, against the stateful GitHub simulator. The simulator's request
//! log shows that no token outlives its phase.

use crate::common;

use std::fs;
use std::time::Duration;

use benchops_github::{IdTokenRequest, Token};
use benchops_publish::github::{
    ClientSettings, GitHubSweepOptions, TokenServiceOptions, sweep_github,
};
use benchops_publish::sweep::Clock;
use benchops_testkit::records::{TWO_LANE_MANIFEST, drift};
use benchops_testkit::sim::auth::{
    OTHER_PRIVATE_KEY_PEM, TEST_APP_PRIVATE_KEY_PEM, sign_jwt_with_kid,
};
use benchops_testkit::sim::{AuthKind, GitHubSim};
use serde_json::json;
use wiremock::matchers::{header, method, path, query_param};
use wiremock::{Mock, MockServer, ResponseTemplate};

use common::{Options, setup};

#[tokio::test]
async fn a_sweep_with_the_token_service_uses_one_short_lived_token_per_phase() {
    let sim = GitHubSim::start().await;
    let repo_id = sim.create_repo("octo", "bench");

    // The OIDC issuer, which is also the Actions runtime's token endpoint.
    let issuer = MockServer::start().await;
    let n = jiff::Timestamp::now().as_second();
    let claims = json!({
        "iss": issuer.uri(), "aud": "benchops-app",
        "sub": "repo:octo/bench:environment:publication", "environment": "publication",
        "repository": "octo/bench", "repository_id": repo_id.to_string(),
        "repository_owner": "octo", "repository_owner_id": "20001",
        "workflow_ref": "octo/bench/.github/workflows/publish.yml@refs/heads/main",
        "job_workflow_ref": "octo/bench/.github/workflows/publish.yml@refs/heads/main",
        "event_name": "schedule", "ref": "refs/heads/main", "run_id": "4711",
        "run_attempt": "1", "iat": n - 5, "nbf": n - 5, "exp": n + 300
    });
    let id_token = sign_jwt_with_kid(OTHER_PRIVATE_KEY_PEM, "k1", &claims);
    common::mount_issuer(&issuer, OTHER_PRIVATE_KEY_PEM, "k1").await;
    Mock::given(method("GET"))
        .and(path("/actions-id-token"))
        .and(query_param("audience", "benchops-app"))
        .and(header("authorization", "bearer runtime-request-token"))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "value": id_token })))
        .expect(2)
        .mount(&issuer)
        .await;

    // benchops-app on a real socket.
    let s = setup(&Options {
        api_url: Some(sim.base_url()),
        issuer: issuer.uri(),
        app_id: sim.app_id(),
        key_pem: TEST_APP_PRIVATE_KEY_PEM.as_bytes().to_vec(),
        repo_id,
        ..Options::default()
    });
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (state, worker) = benchops_app::build(cfg).expect("build");
    let store = state.store.clone();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("addr"));
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let server = tokio::spawn(benchops_app::serve_on(
        listener,
        state,
        worker,
        async move {
            let _ = stopped.await;
        },
        Duration::from_secs(5),
    ));

    // The publication job: sealed records, a manifest, no App key.
    let tmp = tempfile::tempdir().expect("tempdir");
    let handoff = tmp.path().join("sealed");
    fs::create_dir_all(&handoff).expect("handoff dir");
    let record = drift("nightly", "2026-12-01T01:00:00Z");
    fs::write(handoff.join(record.file_name()), record.bytes()).expect("handoff");
    let manifest = tmp.path().join("schedule.toml");
    fs::write(&manifest, TWO_LANE_MANIFEST).expect("manifest");
    let mut opts = GitHubSweepOptions::new("octo/bench", 0, "", Some(handoff), &manifest);
    opts.clock = Clock::fixed("2026-12-02T00:00:00.000Z");
    opts.trigger = "schedule".into();
    opts.client = ClientSettings {
        api_url: Some(sim.base_url()),
        timeout: Some(Duration::from_secs(10)),
        ..ClientSettings::default()
    };
    opts.token_service = Some(TokenServiceOptions {
        url: url.clone(),
        audience: "benchops-app".into(),
        id_token_request: Some(IdTokenRequest {
            url: format!("{}/actions-id-token?api-version=2.0", issuer.uri()),
            bearer: Token::new("runtime-request-token"),
        }),
    });
    let report = match sweep_github(&opts).await {
        Ok(r) => r,
        Err(e) => panic!("sweep failed: {e}: {}", e.cause),
    };
    assert_eq!(report.persisted.len(), 1, "{report:?}");

    // The record is in history and the drift issue is the bot's.
    assert!(
        sim.file_paths("octo", "bench", "benchmark-history")
            .iter()
            .any(|p| p.ends_with(&record.file_name())),
        "the record is persisted"
    );
    let issues = sim.issues("octo", "bench");
    assert_eq!(issues.len(), 1, "one drift issue");

    // Two tokens, one per phase, each with that phase's permissions only,
    // both revoked.
    let tokens = sim.tokens();
    assert_eq!(tokens.len(), 2);
    let perms = |i: usize| {
        tokens[i]
            .permissions
            .iter()
            .map(|(k, v)| format!("{k}:{v}"))
            .collect::<Vec<_>>()
    };
    assert_eq!(perms(0), ["contents:write", "metadata:read"]);
    assert_eq!(perms(1), ["issues:write", "metadata:read"]);
    assert!(tokens.iter().all(|t| t.revoked), "both revoked");

    // No token outlives its phase: every use of token 1 comes before its
    // revocation, which comes before the first use of token 2, and nothing
    // uses a token after its revocation.
    let log = sim.requests();
    let uses = |id: u64| -> Vec<(u64, String, String)> {
        log.iter()
            .filter(|r| matches!(r.auth, AuthKind::InstallationToken { token_id, .. } if token_id == id))
            .map(|r| (r.seq, r.method.clone(), r.path.clone()))
            .collect()
    };
    let first = uses(1);
    let second = uses(2);
    let revoke_1 = first
        .iter()
        .find(|(_, m, p)| m == "DELETE" && p == "/installation/token")
        .map(|(seq, _, _)| *seq)
        .expect("token 1 revoked");
    assert_eq!(
        first.last().map(|u| u.0),
        Some(revoke_1),
        "token 1 used after revocation"
    );
    assert!(
        second.first().map(|u| u.0) > Some(revoke_1),
        "token 2 used before token 1 was revoked"
    );
    assert_eq!(
        second.last().map(|u| (u.1.as_str(), u.2.as_str())),
        Some(("DELETE", "/installation/token"))
    );
    assert!(
        first.iter().all(|(_, _, p)| !p.contains("/issues")),
        "the contents token touched issues"
    );
    assert!(
        log.iter()
            .all(|r| !matches!(r.auth, AuthKind::Rejected { .. })),
        "a revoked token was used"
    );

    // The app's decision log: exchange, revoke, exchange, revoke.
    let decisions = store.decisions(10).expect("log");
    let mut seen: Vec<(String, String)> = decisions
        .iter()
        .map(|d| (d.kind.clone(), d.reason.clone()))
        .collect();
    seen.reverse();
    assert_eq!(
        seen,
        [
            ("exchange".to_owned(), "granted".to_owned()),
            ("revoke".to_owned(), "revoked".to_owned()),
            ("exchange".to_owned(), "granted".to_owned()),
            ("revoke".to_owned(), "revoked".to_owned()),
        ]
    );
    let _ = stop.send(());
    server.await.expect("server task").expect("server");
}
