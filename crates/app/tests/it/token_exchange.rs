//! `POST /token` and `POST /token/revoke`: Actions OIDC tokens signed with
//! a local RSA key that a test JWKS endpoint (wiremock) serves, exchanged
//! for installation tokens minted by the stateful GitHub simulator, which
//! enforces each token's permissions.

use crate::common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use benchops_app::AppState;
use benchops_testkit::sim::GitHubSim;
use benchops_testkit::sim::auth::{
    OTHER_PRIVATE_KEY_PEM, TEST_APP_PRIVATE_KEY_PEM, sign_jwt_with_kid,
};
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tower::ServiceExt as _;
use wiremock::MockServer;

use common::{Options, setup};

const ISSUER_KEY: &str = OTHER_PRIVATE_KEY_PEM;

struct World {
    sim: GitHubSim,
    issuer: MockServer,
    app: Arc<AppState>,
    repo_id: u64,
    _setup: common::Setup,
}

async fn world() -> World {
    world_with(true).await
}

async fn world_with(installed: bool) -> World {
    let sim = GitHubSim::start().await;
    let repo_id = if installed {
        sim.create_repo("octo", "bench")
    } else {
        sim.create_repo("someone", "else");
        456_789
    };
    let issuer = MockServer::start().await;
    common::mount_issuer(&issuer, ISSUER_KEY, "k1").await;
    let s = setup(&Options {
        api_url: Some(sim.base_url()),
        issuer: issuer.uri(),
        app_id: sim.app_id(),
        key_pem: TEST_APP_PRIVATE_KEY_PEM.as_bytes().to_vec(),
        repo_id,
        ..Options::default()
    });
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, _worker) = benchops_app::build(cfg).expect("build");
    World {
        sim,
        issuer,
        app,
        repo_id,
        _setup: s,
    }
}

fn now() -> i64 {
    jiff::Timestamp::now().as_second()
}

impl World {
    /// The claims of the publication job, as GitHub Actions issues them.
    fn claims(&self) -> Value {
        let n = now();
        json!({
            "jti": "a1b2", "sub": "repo:octo/bench:environment:publication",
            "environment": "publication", "aud": "benchops-app",
            "ref": "refs/heads/main", "sha": "0123456789abcdef0123456789abcdef01234567",
            "repository": "octo/bench", "repository_owner": "octo",
            "actor_id": "1", "repository_visibility": "private",
            "repository_id": self.repo_id.to_string(), "repository_owner_id": "20001",
            "run_id": "99", "run_number": "7", "run_attempt": "1",
            "runner_environment": "github-hosted", "actor": "octocat",
            "workflow": "publish", "head_ref": "", "base_ref": "",
            "event_name": "schedule", "ref_type": "branch",
            "workflow_ref": "octo/bench/.github/workflows/publish.yml@refs/heads/main",
            "workflow_sha": "0123456789abcdef0123456789abcdef01234567",
            "job_workflow_ref": "octo/bench/.github/workflows/publish.yml@refs/heads/main",
            "job_workflow_sha": "0123456789abcdef0123456789abcdef01234567",
            "iss": self.issuer.uri(), "nbf": n - 5, "exp": n + 300, "iat": n - 5
        })
    }

    async fn exchange(&self, jwt: &str, phase: &str) -> (StatusCode, Value) {
        let req = Request::post("/token")
            .header("authorization", format!("Bearer {jwt}"))
            .header("content-type", "application/json")
            .body(Body::from(json!({ "phase": phase }).to_string()))
            .expect("request");
        call(&self.app, req).await
    }

    async fn revoke(&self, token: &str) -> (StatusCode, Value) {
        let req = Request::post("/token/revoke")
            .header("authorization", format!("Bearer {token}"))
            .body(Body::empty())
            .expect("request");
        call(&self.app, req).await
    }
}

async fn call(app: &Arc<AppState>, req: Request<Body>) -> (StatusCode, Value) {
    let resp = benchops_app::router(app.clone())
        .oneshot(req)
        .await
        .expect("infallible");
    let status = resp.status();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

fn sign(claims: &Value) -> String {
    sign_jwt_with_kid(ISSUER_KEY, "k1", claims)
}

#[tokio::test]
async fn a_contents_token_cannot_write_issues_and_is_revoked_on_request() {
    let w = world().await;
    let (status, body) = w.exchange(&sign(&w.claims()), "contents").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let token = body["token"].as_str().expect("token").to_owned();
    assert_eq!(body["phase"], "contents");
    assert_eq!(body["repository"], "octo/bench");
    assert_eq!(
        body["permissions"],
        json!({"contents": "write", "metadata": "read"})
    );
    let minted = w.sim.tokens();
    assert_eq!(minted.len(), 1);
    assert_eq!(
        minted[0].repositories.as_deref(),
        Some(&["bench".to_owned()][..])
    );

    // The simulator refuses an issue write with the contents token.
    let http = reqwest::Client::new();
    let r = http
        .post(format!("{}/repos/octo/bench/issues", w.sim.base_url()))
        .header("authorization", format!("token {token}"))
        .header("user-agent", "benchops-test")
        .json(&json!({"title": "x"}))
        .send()
        .await
        .expect("sim answers");
    assert_eq!(r.status().as_u16(), 403, "contents token wrote an issue");

    let (status, body) = w.revoke(&token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert!(w.sim.tokens()[0].revoked, "revoked at GitHub");
    let (status, body) = w.revoke(&token).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let (status, body) = w.revoke("ghs_not-minted-here").await;
    assert_eq!(
        (status, body),
        (StatusCode::FORBIDDEN, json!({"reason": "not-minted-here"}))
    );

    // An issues token gets issues and metadata only.
    let (status, body) = w.exchange(&sign(&w.claims()), "issues").await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        body["permissions"],
        json!({"issues": "write", "metadata": "read"})
    );

    // The decision log names both and never holds a token. The revocation
    // of a token not minted here proves nothing: counted, not stored.
    let decisions = w.app.store.decisions(10).expect("log");
    let reasons: Vec<&str> = decisions.iter().map(|d| d.reason.as_str()).collect();
    assert_eq!(
        reasons,
        ["granted", "already-revoked", "revoked", "granted"]
    );
    assert!(w.app.metrics.encode().contains(
        r#"benchops_app_token_exchanges_total{kind="revoke",reason="not-minted-here"} 1"#
    ));
    let db = std::fs::read(w.app.store.path()).expect("db");
    let wal = std::fs::read(w.app.store.path().with_extension("db-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        assert!(
            !bytes
                .windows(token.len())
                .any(|win| win == token.as_bytes()),
            "the database holds a token"
        );
    }
}

#[tokio::test]
async fn both_subject_formats_are_granted() {
    let w = world().await;
    let mut c = w.claims();
    c["sub"] = json!(format!(
        "repo:octo@20001/bench@{}:environment:publication",
        w.repo_id
    ));
    let (status, body) = w.exchange(&sign(&c), "contents").await;
    assert_eq!(status, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn every_denial_is_403_with_its_reason_and_nothing_more() {
    let w = world().await;
    let n = now();
    type Mutation = Box<dyn Fn(&mut Value)>;
    let cases: Vec<(&str, Mutation)> = vec![
        (
            "wrong-issuer",
            Box::new(|c| c["iss"] = json!("https://evil.example")),
        ),
        (
            "wrong-audience",
            Box::new(|c| c["aud"] = json!("someone-else")),
        ),
        (
            "expired",
            Box::new(move |c| {
                c["exp"] = json!(n - 3600);
                c["iat"] = json!(n - 7200);
                c["nbf"] = json!(n - 7200);
            }),
        ),
        (
            "not-yet-valid",
            Box::new(move |c| c["nbf"] = json!(n + 3600)),
        ),
        (
            "repository-not-allowed",
            Box::new(|c| c["repository"] = json!("octo/other")),
        ),
        (
            "repository-id-mismatch",
            Box::new(|c| c["repository_id"] = json!("1")),
        ),
        (
            "workflow-ref-not-allowed",
            Box::new(|c| {
                c["job_workflow_ref"] =
                    json!("octo/bench/.github/workflows/publish.yml@refs/heads/feature");
                c["workflow_ref"] =
                    json!("octo/bench/.github/workflows/publish.yml@refs/heads/feature");
            }),
        ),
        (
            // Another repository's reusable workflow runs the job, called
            // by the publication workflow.
            "workflow-ref-not-allowed",
            Box::new(|c| {
                c["job_workflow_ref"] = json!("evil/tools/.github/workflows/x.yml@refs/heads/main");
            }),
        ),
        (
            // The publication workflow on main, called from a feature
            // branch's workflow.
            "ref-not-allowed",
            Box::new(|c| {
                c["workflow_ref"] =
                    json!("octo/bench/.github/workflows/caller.yml@refs/heads/feature");
                c["ref"] = json!("refs/heads/feature");
                c["event_name"] = json!("workflow_dispatch");
            }),
        ),
        (
            "event-not-allowed",
            Box::new(|c| c["event_name"] = json!("pull_request")),
        ),
        (
            "environment-mismatch",
            Box::new(|c| c["environment"] = json!("staging")),
        ),
        (
            "subject-mismatch",
            Box::new(|c| c["sub"] = json!("repo:octo/bench:pull_request")),
        ),
    ];
    for (code, tweak) in cases {
        let mut c = w.claims();
        tweak(&mut c);
        let (status, body) = w.exchange(&sign(&c), "contents").await;
        assert_eq!(
            (status, body),
            (StatusCode::FORBIDDEN, json!({ "reason": code })),
            "{code}"
        );
    }
    // Signed by a key the issuer does not publish (unknown kid).
    let forged = sign_jwt_with_kid(TEST_APP_PRIVATE_KEY_PEM, "k9", &w.claims());
    let (status, body) = w.exchange(&forged, "contents").await;
    assert_eq!(
        (status, body),
        (StatusCode::FORBIDDEN, json!({"reason": "unknown-key"}))
    );
    // The right kid, the wrong key.
    let forged = sign_jwt_with_kid(TEST_APP_PRIVATE_KEY_PEM, "k1", &w.claims());
    let (status, body) = w.exchange(&forged, "contents").await;
    assert_eq!(
        (status, body),
        (StatusCode::FORBIDDEN, json!({"reason": "bad-signature"}))
    );
    let (status, body) = w.exchange(&sign(&w.claims()), "admin").await;
    assert_eq!(
        (status, body),
        (StatusCode::BAD_REQUEST, json!({"reason": "unknown-phase"}))
    );
    let req = Request::post("/token")
        .body(Body::from(r#"{"phase":"contents"}"#))
        .expect("request");
    let (status, body) = call(&w.app, req).await;
    assert_eq!(
        (status, body),
        (StatusCode::UNAUTHORIZED, json!({"reason": "missing-token"}))
    );
    assert!(w.sim.tokens().is_empty(), "no denial minted a token");
}

#[tokio::test]
async fn an_allowed_repository_without_the_app_installed_is_refused() {
    let w = world_with(false).await;
    let (status, body) = w.exchange(&sign(&w.claims()), "contents").await;
    assert_eq!(
        (status, body),
        (StatusCode::FORBIDDEN, json!({"reason": "not-installed"}))
    );
    assert!(w.sim.tokens().is_empty());
}
