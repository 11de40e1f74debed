//! `push` to `benchmark-history` by anyone but the App: an audit issue on
//! the stateful GitHub simulator, opened once per pushed commit, with the
//! pusher's name inert; the App's own pushes and pushes to other branches
//! open nothing; every token the worker mints is revoked.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use benchops_app::AppState;
use benchops_testkit::sim::auth::TEST_APP_PRIVATE_KEY_PEM;
use benchops_testkit::sim::{Fault, FaultRule, GitHubSim};
use serde_json::json;
use tower::ServiceExt as _;

use common::{Options, setup, sign};

async fn deliver(app: &Arc<AppState>, event: &str, delivery: &str, body: serde_json::Value) {
    let body = serde_json::to_vec(&body).expect("json");
    let req = Request::post("/webhook")
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", delivery)
        .header("x-hub-signature-256", sign(&body))
        .body(Body::from(body))
        .expect("request");
    let resp = benchops_app::router(app.clone())
        .oneshot(req)
        .await
        .expect("infallible");
    assert!(
        resp.status() == StatusCode::ACCEPTED || resp.status() == StatusCode::OK,
        "{event} {delivery}: {}",
        resp.status()
    );
}

fn push(git_ref: &str, after: &str, login: &str, kind: &str, forced: bool) -> serde_json::Value {
    json!({
        "ref": git_ref,
        "before": "1111111111111111111111111111111111111111",
        "after": after,
        "forced": forced,
        "repository": {"id": 1, "full_name": "octo/bench", "name": "bench"},
        "pusher": {"name": login},
        "sender": {"login": login, "type": kind}
    })
}

#[tokio::test]
async fn a_push_to_history_by_a_person_opens_one_audit_issue_per_commit() {
    let sim = GitHubSim::start().await;
    let repo_id = sim.create_repo("octo", "bench");
    let s = setup(&Options {
        api_url: Some(sim.base_url()),
        app_id: sim.app_id(),
        key_pem: TEST_APP_PRIVATE_KEY_PEM.as_bytes().to_vec(),
        repo_id,
        ..Options::default()
    });
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, worker) = benchops_app::build(cfg).expect("build");
    let bot = sim.bot_login();
    let hostile = "m@llory <!-- #1 `x`|";
    let a = "a".repeat(40);
    let b = "b".repeat(40);
    let history = "refs/heads/benchmark-history";
    // A person force-pushes history; the same push arrives again under a
    // second delivery id (a second hook, or a manual redelivery).
    deliver(
        &app,
        "push",
        "p-1",
        push(history, &a, hostile, "User", true),
    )
    .await;
    deliver(
        &app,
        "push",
        "p-2",
        push(history, &a, hostile, "User", true),
    )
    .await;
    // The App's own push, a push to another branch, a second foreign commit.
    deliver(&app, "push", "p-3", push(history, &b, &bot, "Bot", false)).await;
    deliver(
        &app,
        "push",
        "p-4",
        push("refs/heads/main", &a, "octocat", "User", false),
    )
    .await;
    let c = "c".repeat(40);
    deliver(
        &app,
        "push",
        "p-5",
        push(history, &c, "octocat", "User", false),
    )
    .await;
    let store = app.store.clone();
    drop(app);
    worker.run().await;

    let issues = sim.issues("octo", "bench");
    assert_eq!(issues.len(), 2, "{issues:#?}");
    for i in &issues {
        assert_eq!(i.labels, vec![benchops_app::worker::AUDIT_LABEL.to_owned()]);
        assert_eq!(i.author, bot, "the App opens audit issues");
        assert_eq!(i.state, "open");
    }
    let bodies: Vec<String> = issues
        .iter()
        .map(|i| i.body.clone().unwrap_or_default())
        .collect();
    let first = &issues[0];
    let body = &bodies[0];
    assert!(body.contains(&format!("after={a}")), "{body}");
    assert!(body.contains("a forced push"), "{body}");
    // The hostile login cannot open a comment, mention or reference.
    assert!(!body.contains("<!-- #1"), "{body}");
    assert!(!body.contains("@llory <"), "{body}");
    assert_eq!(body.matches("<!--").count(), 1, "only the marker: {body}");
    assert!(bodies[1].contains(&format!("after={c}")));
    assert!(!bodies[1].contains("a forced push"));
    assert!(
        bodies.iter().all(|x| !x.contains(&b)),
        "the App's own push is not audited"
    );

    let audits: Vec<(String, Option<i64>)> = store
        .read(|c| {
            let mut s = c.prepare("SELECT after_sha, issue FROM audits ORDER BY after_sha")?;
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect()
        })
        .expect("read");
    assert_eq!(
        audits,
        vec![
            (a.clone(), Some(first.number as i64)),
            (c.clone(), Some(issues[1].number as i64))
        ]
    );
    assert!(store.inbox(10).expect("inbox").is_empty());
    // Every token minted for an audit was revoked.
    let tokens = sim.tokens();
    assert!(!tokens.is_empty());
    assert!(tokens.iter().all(|t| t.revoked), "{tokens:#?}");
}

#[tokio::test]
async fn an_audit_issue_github_refused_is_tried_again_at_the_next_housekeeping_tick() {
    let sim = GitHubSim::start().await;
    let repo_id = sim.create_repo("octo", "bench");
    // Every attempt of the first round is refused (a 422 is not retried by
    // the client); the next round gets through.
    sim.push_fault(FaultRule {
        times: 4,
        ..FaultRule::on_operation("issues/create", Fault::Status(422))
    });
    let s = setup(&Options {
        api_url: Some(sim.base_url()),
        app_id: sim.app_id(),
        key_pem: TEST_APP_PRIVATE_KEY_PEM.as_bytes().to_vec(),
        repo_id,
        ..Options::default()
    });
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, worker) = benchops_app::build(cfg).expect("build");
    let worker = tokio::spawn(worker.housekeeping_every(Duration::from_secs(1)).run());
    let a = "d".repeat(40);
    deliver(
        &app,
        "push",
        "retry-1",
        push("refs/heads/benchmark-history", &a, "octocat", "User", false),
    )
    .await;
    // The first round takes 1 + 2 + 4 s of backoff; the retry follows.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while sim.issues("octo", "bench").is_empty() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the refused audit issue was never tried again"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let store = app.store.clone();
    drop(app);
    worker.await.expect("worker");
    let issues = sim.issues("octo", "bench");
    assert_eq!(issues.len(), 1, "{issues:#?}");
    assert!(store.inbox(10).expect("inbox").is_empty());
    let creates = sim
        .requests()
        .iter()
        .filter(|r| r.operation == Some("issues/create"))
        .count();
    assert_eq!(creates, 5, "four refused, one created");
}
