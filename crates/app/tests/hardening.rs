//! The server's defences against a peer that is not GitHub: the issuer it
//! trusts, what an unauthenticated request may cost, what reaches the log,
//! and the headers of its pages.

mod common;

use common::{Options, setup};

#[test]
fn an_issuer_that_only_starts_like_loopback_is_refused() {
    for issuer in [
        "http://127.0.0.1.attacker.example",
        "http://127.0.0.1@attacker.example",
    ] {
        let s = setup(&Options {
            issuer: issuer.into(),
            ..Options::default()
        });
        let e = benchops_app::config::load(&s.config).expect_err(issuer);
        let text = e.to_string();
        assert!(text.contains("`oidc.issuer`"), "{text}");
        assert!(text.contains(issuer), "{text}");
    }
    for issuer in [
        "http://127.0.0.1:9",
        "http://localhost:9",
        "https://issuer.example",
    ] {
        let s = setup(&Options {
            issuer: issuer.into(),
            ..Options::default()
        });
        benchops_app::config::load(&s.config).expect(issuer);
    }
}

/// Answers `req` through the router, with its status and body text.
async fn call(
    app: &std::sync::Arc<benchops_app::AppState>,
    req: axum::http::Request<axum::body::Body>,
) -> (axum::http::StatusCode, String) {
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;
    let resp = benchops_app::router(app.clone())
        .oneshot(req)
        .await
        .expect("infallible");
    let status = resp.status();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    (status, String::from_utf8_lossy(&bytes).into_owned())
}

fn delivery(
    event: &str,
    id: &str,
    content_type: &str,
    body: Vec<u8>,
) -> axum::http::Request<axum::body::Body> {
    axum::http::Request::post("/webhook")
        .header("content-type", content_type)
        .header("x-github-event", event)
        .header("x-github-delivery", id)
        .header("x-hub-signature-256", common::sign(&body))
        .body(axum::body::Body::from(body))
        .expect("request")
}

fn form(payload: &str) -> Vec<u8> {
    form_urlencoded::Serializer::new(String::new())
        .append_pair("payload", payload)
        .finish()
        .into_bytes()
}

#[tokio::test]
async fn a_form_encoded_delivery_is_read_and_a_form_without_payload_is_refused_even_on_ping() {
    const FORM: &str = "application/x-www-form-urlencoded";
    let s = setup(&Options::default());
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, _worker) = benchops_app::build(cfg).expect("build");
    // A push to the history branch, form-encoded as GitHub sends it: the
    // signature is over the form; the work is what the JSON says.
    let push = serde_json::json!({
        "ref": "refs/heads/benchmark-history", "after": "abc", "forced": false,
        "repository": {"full_name": "octo/bench", "id": 456789},
        "sender": {"login": "mallory", "type": "User"}, "installation": {"id": 9}
    })
    .to_string();
    let (status, text) = call(&app, delivery("push", "f-1", FORM, form(&push))).await;
    assert_eq!(status, 202, "{text}");
    let inbox = app.store.inbox(10).expect("inbox");
    assert_eq!(inbox.len(), 1);
    assert!(inbox[0].extract.contains("mallory"), "{inbox:?}");
    // Nothing else in the form counts, wherever `payload` is.
    let mut other = b"zen=keep+it+logically+awesome&".to_vec();
    other.extend(form(r#"{"zen":"z","hook_id":1}"#));
    let (status, text) = call(&app, delivery("ping", "f-2", FORM, other)).await;
    assert_eq!(status, 200, "{text}");
    // A form without `payload`: 400 naming the content type, ping too.
    for (event, id) in [("ping", "f-3"), ("push", "f-4")] {
        let (status, text) = call(
            &app,
            delivery(event, id, FORM, b"zen=keep+it+logically+awesome".to_vec()),
        )
        .await;
        assert_eq!(status, 400, "{event}: {text}");
        assert!(text.contains("application/x-www-form-urlencoded"), "{text}");
    }
    // A type GitHub never sends: 415, named.
    let (status, text) = call(&app, delivery("ping", "f-5", "text/plain", b"{}".to_vec())).await;
    assert_eq!(status, 415, "{text}");
    assert!(text.contains("text/plain"), "{text}");
    // Refusals record nothing: a redelivery in JSON is new.
    assert!(!app.store.has_delivery("f-3").expect("lookup"));
    let (status, text) = call(
        &app,
        delivery("ping", "f-3", "application/json", b"{}".to_vec()),
    )
    .await;
    assert_eq!(status, 200, "{text}");
}

#[tokio::test]
async fn requests_that_prove_nothing_are_counted_not_stored() {
    let s = setup(&Options {
        extra: "\n[handoff]\n".into(),
        ..Options::default()
    });
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, _worker) = benchops_app::build(cfg).expect("build");
    let empty = |path: &str| {
        axum::http::Request::post(path)
            .body(axum::body::Body::empty())
            .expect("request")
    };
    for _ in 0..1000 {
        for path in ["/token", "/token/revoke", "/handoff"] {
            let (status, _) = call(&app, empty(path)).await;
            assert!(status.is_client_error(), "{path}: {status}");
        }
    }
    // A bearer token that is not a JWT, and one not minted here.
    let bearer = |path: &str| {
        axum::http::Request::post(path)
            .header("authorization", "Bearer not-a-jwt")
            .body(axum::body::Body::from(r#"{"phase":"contents"}"#))
            .expect("request")
    };
    for path in ["/token", "/token/revoke"] {
        let (status, _) = call(&app, bearer(path)).await;
        assert_eq!(status, 403, "{path}");
    }
    assert_eq!(app.store.decision_count().expect("count"), 0);
    let metrics = app.metrics.encode();
    for line in [
        r#"benchops_app_token_exchanges_total{kind="exchange",reason="missing-token"} 1000"#,
        r#"benchops_app_token_exchanges_total{kind="revoke",reason="missing-token"} 1000"#,
        r#"benchops_app_token_exchanges_total{kind="exchange",reason="malformed-token"} 1"#,
        r#"benchops_app_token_exchanges_total{kind="revoke",reason="not-minted-here"} 1"#,
        r#"benchops_app_handoffs_total{reason="bad-request"} 1000"#,
    ] {
        assert!(metrics.contains(line), "{line}\n{metrics}");
    }
}
