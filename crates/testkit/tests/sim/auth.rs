//! App JWTs, installation tokens and their permissions, expiry,
//! revocation, rate-limit headers, and what the request log records.

use benchops_testkit::sim::auth::{OTHER_PRIVATE_KEY_PEM, app_jwt, sign_jwt};
use benchops_testkit::sim::{AuthKind, DEFAULT_APP_ID};
use reqwest::Method;
use serde_json::{Value, json};

use crate::{Env, OWNER, REPO, Resp, env};

async fn with_bearer(e: &Env, jwt: &str, method: Method, path: &str, body: Option<Value>) -> Resp {
    let mut req = e
        .http
        .request(method, e.url(path))
        .header("authorization", format!("Bearer {jwt}"));
    if let Some(b) = body {
        req = req.json(&b);
    }
    let r = req.send().await.expect("answers");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let body = r.json().await.unwrap_or(Value::Null);
    Resp {
        status,
        headers,
        body,
    }
}

#[tokio::test]
async fn app_jwt_gets_the_installation_and_a_scoped_token() {
    let e = env().await;
    let jwt = e.sim.app_jwt();
    let inst = with_bearer(&e, &jwt, Method::GET, &e.repo_path("/installation"), None).await;
    assert_eq!(inst.status, 200, "{:?}", inst.body);
    assert_eq!(inst.body["id"], e.installation_id);
    assert_eq!(inst.body["app_id"], DEFAULT_APP_ID);
    assert_eq!(inst.body["account"]["login"], OWNER);

    let path = format!("/app/installations/{}/access_tokens", e.installation_id);
    let tok = with_bearer(
        &e,
        &jwt,
        Method::POST,
        &path,
        Some(json!({"repositories": [REPO], "permissions": {"contents": "write"}})),
    )
    .await;
    assert_eq!(tok.status, 201, "{:?}", tok.body);
    let token = tok.body["token"].as_str().expect("token").to_owned();
    assert!(token.starts_with("ghs_") && token.len() == 40);
    assert_eq!(
        tok.body["permissions"],
        json!({"contents": "write", "metadata": "read"})
    );
    assert_eq!(tok.body["repository_selection"], "selected");
    assert_eq!(
        tok.body["repositories"][0]["full_name"],
        format!("{OWNER}/{REPO}")
    );
    let expires = benchops_testkit::sim::clock::parse_iso(
        tok.body["expires_at"].as_str().expect("expires_at"),
    )
    .expect("iso")
    .0;
    assert!((expires - e.sim.now() - 3600).abs() <= 2);

    // The new token works for contents, not for issues.
    let ok = e
        .call_as(
            Some(&token),
            Method::GET,
            &e.repo_path("/git/ref/heads/main"),
            None,
        )
        .await;
    assert_eq!(ok.status, 200);
    let denied = e
        .call_as(
            Some(&token),
            Method::POST,
            &e.repo_path("/issues"),
            Some(json!({"title": "t"})),
        )
        .await;
    assert_eq!(denied.status, 403);

    // Asking for more than the installation has, or for a foreign
    // repository, is 422; an unknown installation is 404.
    e.sim
        .set_installation_permissions(e.installation_id, &[("contents", "read")]);
    let too_much = with_bearer(
        &e,
        &jwt,
        Method::POST,
        &path,
        Some(json!({"permissions": {"contents": "write"}})),
    )
    .await;
    assert_eq!(too_much.status, 422);
    assert_eq!(
        too_much.message(),
        "The permissions requested are not granted to this installation."
    );
    let foreign = with_bearer(
        &e,
        &jwt,
        Method::POST,
        &path,
        Some(json!({"repositories": ["elsewhere"]})),
    )
    .await;
    assert_eq!(foreign.status, 422);
    let nowhere = with_bearer(
        &e,
        &jwt,
        Method::POST,
        "/app/installations/1/access_tokens",
        None,
    )
    .await;
    assert_eq!(nowhere.status, 404);
}

#[tokio::test]
async fn bad_app_jwts_and_missing_credentials_are_401() {
    let e = env().await;
    let now = e.sim.now();
    let path = format!("/app/installations/{}/access_tokens", e.installation_id);
    let wrong_key = sign_jwt(
        OTHER_PRIVATE_KEY_PEM,
        &json!({"iat": now - 60, "exp": now + 540, "iss": DEFAULT_APP_ID.to_string()}),
    );
    let cases = [
        (wrong_key, "A JSON web token could not be decoded"),
        (
            app_jwt(DEFAULT_APP_ID, now - 1200, now - 600),
            "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires",
        ),
        (
            app_jwt(DEFAULT_APP_ID, now + 300, now + 500),
            "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued",
        ),
        (
            app_jwt(DEFAULT_APP_ID, now, now + 3600),
            "'Expiration time' claim ('exp') is too far in the future",
        ),
        (
            "not.a.jwt".to_owned(),
            "A JSON web token could not be decoded",
        ),
    ];
    for (jwt, message) in cases {
        let r = with_bearer(&e, &jwt, Method::POST, &path, None).await;
        assert_eq!(r.status, 401, "{message}");
        assert_eq!(r.message(), message);
    }
    // An installation token is not an App JWT.
    let r = e.call(Method::POST, &path, None).await;
    assert_eq!(r.status, 401);
    // No credentials at all.
    let anon = e
        .call_as(None, Method::GET, &e.repo_path("/issues"), None)
        .await;
    assert_eq!(anon.status, 401);
    assert_eq!(anon.message(), "Requires authentication");
    let junk = e
        .call_as(
            Some("ghp_whatever"),
            Method::GET,
            &e.repo_path("/issues"),
            None,
        )
        .await;
    assert_eq!(junk.status, 401);
    assert_eq!(junk.message(), "Bad credentials");
    // A JWT cannot read repository data.
    let jwt = e.sim.app_jwt();
    let r = with_bearer(&e, &jwt, Method::GET, &e.repo_path("/issues"), None).await;
    assert_eq!(r.status, 403);
}

#[tokio::test]
async fn tokens_enforce_their_permissions_and_repositories() {
    let e = env().await;
    e.sim.create_repo(OWNER, "other");
    let contents = e
        .sim
        .mint_token(e.installation_id, &[("contents", "write")], None);
    let issues = e
        .sim
        .mint_token(e.installation_id, &[("issues", "write")], Some(&[REPO]));
    let reader = e
        .sim
        .mint_token(e.installation_id, &[("contents", "read")], None);

    let issue_writes = [
        (Method::POST, "/issues", json!({"title": "t"})),
        (Method::PATCH, "/issues/1", json!({"state": "closed"})),
        (Method::POST, "/issues/1/comments", json!({"body": "b"})),
        (Method::POST, "/labels", json!({"name": "n"})),
    ];
    for (m, p, b) in issue_writes {
        let r = e
            .call_as(Some(&contents), m, &e.repo_path(p), Some(b))
            .await;
        assert_eq!(r.status, 403, "contents-only token on {p}");
        assert_eq!(r.message(), "Resource not accessible by integration");
        assert_eq!(
            r.header("x-accepted-github-permissions"),
            Some("issues=write")
        );
    }
    let git_writes = [
        (Method::POST, "/git/blobs", json!({"content": "x"})),
        (Method::POST, "/git/trees", json!({"tree": []})),
        (
            Method::POST,
            "/git/commits",
            json!({"message": "m", "tree": "t"}),
        ),
        (
            Method::POST,
            "/git/refs",
            json!({"ref": "refs/heads/x", "sha": "s"}),
        ),
        (Method::PATCH, "/git/refs/heads/main", json!({"sha": "s"})),
    ];
    for (m, p, b) in git_writes {
        let r = e
            .call_as(Some(&issues), m.clone(), &e.repo_path(p), Some(b.clone()))
            .await;
        assert_eq!(r.status, 403, "issues-only token on {p}");
        assert_eq!(
            r.header("x-accepted-github-permissions"),
            Some("contents=write")
        );
        let r = e.call_as(Some(&reader), m, &e.repo_path(p), Some(b)).await;
        assert_eq!(r.status, 403, "read-only token on {p}");
    }
    // Reads need the permission too (metadata alone is not enough).
    let r = e
        .call_as(
            Some(&issues),
            Method::GET,
            &e.repo_path("/contents/README.md"),
            None,
        )
        .await;
    assert_eq!(r.status, 403);
    let r = e
        .call_as(
            Some(&reader),
            Method::GET,
            &e.repo_path("/contents/README.md"),
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    // A token limited to `bench` cannot see `other` (404, as on GitHub).
    let r = e
        .call_as(
            Some(&issues),
            Method::GET,
            &format!("/repos/{OWNER}/other/issues"),
            None,
        )
        .await;
    assert_eq!(r.status, 404);
    let r = e
        .call_as(
            Some(&contents),
            Method::GET,
            &format!("/repos/{OWNER}/other/git/ref/heads/main"),
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    // No issue, label or object was created by a refused request.
    assert!(e.sim.issues(OWNER, REPO).is_empty());
    assert!(e.sim.labels(OWNER, REPO).is_empty());
}

#[tokio::test]
async fn tokens_expire_and_can_be_revoked() {
    let e = env().await;
    let path = e.repo_path("/git/ref/heads/main");
    assert_eq!(e.call(Method::GET, &path, None).await.status, 200);
    e.sim.advance_clock(3601);
    let expired = e.call(Method::GET, &path, None).await;
    assert_eq!(expired.status, 401);
    assert_eq!(expired.message(), "Bad credentials");

    let fresh = e
        .sim
        .mint_token(e.installation_id, &[("contents", "read")], None);
    assert_eq!(
        e.call_as(Some(&fresh), Method::GET, &path, None)
            .await
            .status,
        200
    );
    let revoke = e
        .call_as(Some(&fresh), Method::DELETE, "/installation/token", None)
        .await;
    assert_eq!(revoke.status, 204);
    assert!(revoke.body.is_null());
    assert_eq!(
        e.call_as(Some(&fresh), Method::GET, &path, None)
            .await
            .status,
        401
    );
    let infos = e.sim.tokens();
    assert!(infos.iter().any(|t| t.revoked));

    // The log names how each request authenticated, never the token.
    let log = e.sim.requests();
    let kinds: Vec<&AuthKind> = log.iter().map(|r| &r.auth).collect();
    assert!(matches!(
        kinds[0],
        AuthKind::InstallationToken { token_id: 1, .. }
    ));
    assert!(matches!(kinds[1], AuthKind::Rejected { reason } if reason == "expired token"));
    assert!(
        matches!(kinds.last(), Some(AuthKind::Rejected { reason }) if reason == "revoked token")
    );
    assert!(
        log.iter()
            .all(|r| r.auth_scheme.as_deref() == Some("token"))
    );
    let dump = format!("{log:?}");
    assert!(
        !dump.contains(&e.token) && !dump.contains(&fresh),
        "no token value in the log"
    );
    let sim_dump = format!("{:?}", e.sim);
    assert!(sim_dump.contains("ghs_<redacted>"));
    assert!(
        !sim_dump.contains(&e.token) && !sim_dump.contains(&fresh),
        "no token value in Debug"
    );
    assert_eq!(
        log[3].operation,
        Some("apps/revoke-installation-access-token")
    );
}

#[tokio::test]
async fn every_response_carries_rate_limit_headers_and_the_limit_is_enforced() {
    let e = env().await;
    let path = e.repo_path("/issues");
    let first = e.call(Method::GET, &path, None).await;
    let anon = e.call_as(None, Method::GET, &path, None).await;
    let missing = e.call(Method::GET, "/nowhere", None).await;
    for r in [&first, &anon, &missing] {
        for h in [
            "x-ratelimit-limit",
            "x-ratelimit-remaining",
            "x-ratelimit-reset",
            "x-ratelimit-used",
            "x-ratelimit-resource",
            "x-github-request-id",
        ] {
            assert!(r.header(h).is_some(), "{h} missing on {}", r.status);
        }
    }
    assert_eq!(missing.status, 404);
    assert_eq!(first.header("x-ratelimit-limit"), Some("5000"));
    assert_eq!(first.header("x-ratelimit-remaining"), Some("4999"));
    assert_eq!(first.header("x-ratelimit-used"), Some("1"));
    assert_eq!(first.header("x-ratelimit-resource"), Some("core"));
    assert_eq!(anon.header("x-ratelimit-limit"), Some("60"));
    assert_ne!(
        first.header("x-github-request-id"),
        anon.header("x-github-request-id")
    );

    e.sim.set_rate_limit(3);
    let second = e.call(Method::GET, &path, None).await;
    assert_eq!(second.header("x-ratelimit-remaining"), Some("1"));
    let _third = e.call(Method::GET, &path, None).await;
    let limited = e.call(Method::GET, &path, None).await;
    assert_eq!(limited.status, 403);
    assert_eq!(limited.header("x-ratelimit-remaining"), Some("0"));
    assert!(
        limited
            .message()
            .starts_with("API rate limit exceeded for installation ID")
    );
    let reset: i64 = limited
        .header("x-ratelimit-reset")
        .expect("reset")
        .parse()
        .expect("int");
    assert!(reset > e.sim.now());
    // `/rate_limit` answers without counting.
    let rl = e.call(Method::GET, "/rate_limit", None).await;
    assert_eq!(rl.status, 200);
    assert_eq!(rl.body["resources"]["core"]["remaining"], 0);
    assert_eq!(e.sim.rate_limit_used(e.installation_id), 3);
    // The window resets with the clock.
    e.sim.advance_clock(3600);
    // (The old token expired with the window; the bucket is the
    // installation's, so a new token draws from the fresh window.)
    let fresh = e
        .sim
        .mint_token(e.installation_id, &[("issues", "read")], None);
    let again = e.call_as(Some(&fresh), Method::GET, &path, None).await;
    assert_eq!(again.status, 200);
    assert_eq!(again.header("x-ratelimit-used"), Some("1"));
}
