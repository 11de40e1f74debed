//! `/status.json` through the router: the built status is reused while
//! the history tip and the recorded facts are unchanged, and rebuilt as
//! soon as either changes.

use crate::common;

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use benchops::LaneName;
use benchops::manifest::BaselinePolicy;
use benchops_app::AppState;
use benchops_history::LocalHistory;
use benchops_testkit::records::drift;
use http_body_util::BodyExt as _;
use serde_json::{Value, json};
use tower::ServiceExt as _;

use common::{Options, setup, sign};

async fn get_json(app: &Arc<AppState>) -> Value {
    let resp = benchops_app::router(app.clone())
        .oneshot(
            Request::get("/status.json")
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
    assert_eq!(resp.status(), StatusCode::OK);
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    serde_json::from_slice(&bytes).expect("json")
}

fn persist(h: &LocalHistory, slot: &str) {
    let policies: BTreeMap<LaneName, BaselinePolicy> = BTreeMap::from([(
        LaneName::new("nightly").expect("lane"),
        BaselinePolicy::LastClean,
    )]);
    common::history::persist(h, &[drift("nightly", slot)], &policies, slot);
}

#[tokio::test]
async fn the_status_is_reused_until_history_or_the_facts_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("history.git");
    let h = LocalHistory::open_or_init(&path).expect("history");
    persist(&h, "2026-11-29T01:00:00Z");
    let s = setup(&Options {
        history: Some(path),
        ..Options::default()
    });
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, worker) = benchops_app::build(cfg).expect("build");
    let worker = tokio::spawn(worker.run());

    let first = get_json(&app).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let again = get_json(&app).await;
    assert_eq!(
        first["generated_at"], again["generated_at"],
        "nothing changed: the same build"
    );

    // A new record moves the tip: rebuilt, and the record is there.
    persist(&h, "2026-11-30T01:00:00Z");
    let after_record = get_json(&app).await;
    assert_ne!(after_record["generated_at"], first["generated_at"]);
    assert_ne!(after_record, first);

    // A recorded webhook fact: rebuilt too.
    let body = serde_json::to_vec(&json!({
        "action": "completed",
        "workflow_run": {"id": 9, "run_attempt": 1, "path": ".github/workflows/publish.yml",
                         "event": "schedule", "status": "completed", "conclusion": "failure",
                         "updated_at": "2026-11-30T10:00:00Z"},
        "repository": {"full_name": "octo/bench"}
    }))
    .expect("json");
    let resp = benchops_app::router(app.clone())
        .oneshot(
            Request::post("/webhook")
                .header("x-github-event", "workflow_run")
                .header("x-github-delivery", "run-9")
                .header("x-hub-signature-256", sign(&body))
                .body(Body::from(body))
                .expect("request"),
        )
        .await
        .expect("infallible");
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let now = get_json(&app).await;
        if now.to_string().contains("failure") {
            assert_ne!(now["generated_at"], after_record["generated_at"]);
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the workflow run never showed: {now}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    drop(app);
    worker.await.expect("worker");
}

#[tokio::test]
async fn a_drift_marker_counts_only_in_an_issue_this_apps_bot_opened() {
    let s = setup(&Options::default());
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, worker) = benchops_app::build(cfg).expect("build");
    app.bot_login
        .set("benchops[bot]".to_owned())
        .expect("bot login unset");
    let worker = tokio::spawn(worker.run());
    for (n, author) in [(1u64, "benchops[bot]"), (2, "other-app[bot]")] {
        let body = serde_json::to_vec(&json!({
            "action": "closed",
            "issue": {"number": n, "title": "drift", "labels": [{"name": "benchmark-drift"}],
                      "body": "<!-- benchops:drift key=parse/large/wall_s -->\nbody",
                      "user": {"login": author, "type": "Bot"},
                      "updated_at": "2026-11-30T10:00:00Z"},
            "repository": {"full_name": "octo/bench"},
            "sender": {"login": "octocat", "type": "User"}
        }))
        .expect("json");
        let resp = benchops_app::router(app.clone())
            .oneshot(
                Request::post("/webhook")
                    .header("x-github-event", "issues")
                    .header("x-github-delivery", format!("issue-{n}"))
                    .header("x-hub-signature-256", sign(&body))
                    .body(Body::from(body))
                    .expect("request"),
            )
            .await
            .expect("infallible");
        assert_eq!(resp.status(), StatusCode::ACCEPTED);
    }
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    let rows = loop {
        let now = get_json(&app).await;
        let rows = now["decisions"]["items"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        if rows.len() == 2 {
            break rows;
        }
        assert!(tokio::time::Instant::now() < deadline, "{now}");
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    let key_of = |n: u64| {
        rows.iter()
            .find(|r| r["issue"] == n)
            .map(|r| r["drift_key"].clone())
            .expect("row")
    };
    assert_eq!(key_of(1), json!("parse/large/wall_s"));
    assert_eq!(key_of(2), Value::Null, "another App's issue carries no key");
    drop(app);
    worker.await.expect("worker");
}
