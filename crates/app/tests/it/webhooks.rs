//! `POST /webhook` against GitHub's real example payloads
//! (`@octokit/webhooks-examples`, vendored under `fixtures/`), signed as
//! GitHub signs them, through the real router and a real SQLite database.

use crate::common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use benchops_app::AppState;
use http_body_util::BodyExt as _;
use serde_json::Value;
use tower::ServiceExt as _;

use common::{Options, SECRET, setup, sign};

const EXAMPLES: &str = include_str!("../fixtures/webhooks-examples/index.json");

fn examples() -> Vec<(String, Vec<u8>)> {
    let groups: Vec<Value> = serde_json::from_str(EXAMPLES).expect("index.json parses");
    let mut out = Vec::new();
    for g in groups {
        let name = g["name"].as_str().expect("name").to_owned();
        for ex in g["examples"].as_array().expect("examples") {
            out.push((name.clone(), serde_json::to_vec(ex).expect("serializes")));
        }
    }
    out
}

struct Reply {
    status: StatusCode,
    text: String,
}

async fn post(
    app: &Arc<AppState>,
    event: &str,
    delivery: &str,
    body: Vec<u8>,
    signature: Option<String>,
) -> Reply {
    let mut req = Request::post("/webhook")
        .header("content-type", "application/json")
        .header("x-github-event", event)
        .header("x-github-delivery", delivery);
    if let Some(s) = signature {
        req = req.header("x-hub-signature-256", s);
    }
    let resp = benchops_app::router(app.clone())
        .oneshot(req.body(Body::from(body)).expect("request"))
        .await
        .expect("infallible");
    let status = resp.status();
    let bytes = resp.into_body().collect().await.expect("body").to_bytes();
    Reply {
        status,
        text: String::from_utf8_lossy(&bytes).into_owned(),
    }
}

/// What a refused delivery must leave unchanged.
fn state_of(app: &AppState) -> (u64, usize, usize) {
    (
        app.store.delivery_count().expect("count"),
        app.store.inbox(1_000_000).expect("inbox").len(),
        app.queue.max_capacity() - app.queue.capacity(),
    )
}

#[tokio::test]
async fn every_example_is_accepted_when_signed_refused_when_not_and_ignored_when_replayed() {
    let s = setup(&Options::default());
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, _worker) = benchops_app::build(cfg).expect("build");
    let all = examples();
    assert_eq!(all.len(), 329, "the vendored index holds 329 examples");
    let mut accepted = 0;
    let mut worked = 0;
    for (i, (event, body)) in all.iter().enumerate() {
        let delivery = format!("0000-{i:04}");
        let before = state_of(&app);

        // Refusals: each leaves no trace.
        let mut tampered = body.clone();
        tampered.push(b' ');
        let good = sign(body);
        let mut bad_sig = good.clone().into_bytes();
        let last = bad_sig.len() - 1;
        bad_sig[last] = if bad_sig[last] == b'0' { b'1' } else { b'0' };
        let wrong_secret = benchops_app::webhook::sign(b"not-the-secret", body);
        for (what, b, sig) in [
            ("tampered body", tampered, Some(good.clone())),
            (
                "tampered signature",
                body.clone(),
                Some(String::from_utf8(bad_sig).expect("ascii")),
            ),
            ("missing header", body.clone(), None),
            ("wrong secret", body.clone(), Some(wrong_secret)),
        ] {
            let r = post(&app, event, &delivery, b, sig).await;
            assert_eq!(r.status, StatusCode::UNAUTHORIZED, "{event} #{i}: {what}");
            assert!(!r.text.contains(SECRET));
            assert_eq!(state_of(&app), before, "{event} #{i}: {what} changed state");
        }

        let r = post(&app, event, &delivery, body.clone(), Some(good.clone())).await;
        assert!(
            r.status == StatusCode::ACCEPTED || (event == "ping" && r.status == StatusCode::OK),
            "{event} #{i}: {} {}",
            r.status,
            r.text
        );
        accepted += 1;
        let after_first = state_of(&app);
        // Work is recorded with its delivery id and queued; a delivery
        // without work leaves nothing, and is answered alike when replayed.
        let work = r.status == StatusCode::ACCEPTED && r.text == "accepted\n";
        let grew = usize::from(work);
        assert_eq!(
            (after_first.0, after_first.1),
            (before.0 + grew as u64, before.1 + grew),
            "{event} #{i}: {}",
            r.text
        );
        if work {
            worked += 1;
        }

        let replay = post(&app, event, &delivery, body.clone(), Some(good)).await;
        if work {
            assert_eq!(replay.status, StatusCode::OK, "{event} #{i}: replay");
            assert!(replay.text.contains("duplicate"), "{}", replay.text);
        } else {
            assert_eq!(
                (replay.status, &replay.text),
                (r.status, &r.text),
                "{event} #{i}: replay"
            );
        }
        assert_eq!(
            state_of(&app),
            after_first,
            "{event} #{i}: replay changed state"
        );
    }
    assert_eq!(accepted, 329);
    // Installation events, drift-issue decisions and the like are work;
    // most examples (pushes to other branches, stars, other workflows) are
    // not.
    assert!(
        (1..329).contains(&worked),
        "{worked} of 329 examples were work"
    );
}

#[tokio::test]
async fn the_registry_follows_installation_events_and_drift_issue_decisions_are_recorded() {
    let s = setup(&Options::default());
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, worker) = benchops_app::build(cfg).expect("build");
    let created = serde_json::json!({
        "action": "created",
        "installation": {"id": 77, "account": {"login": "octo"}},
        "repositories": [{"id": 456789, "full_name": "octo/bench", "name": "bench"}],
        "sender": {"login": "octocat", "type": "User"}
    });
    let added = serde_json::json!({
        "action": "added",
        "installation": {"id": 77, "account": {"login": "octo"}},
        "repository_selection": "selected",
        "repositories_added": [{"id": 5, "full_name": "octo/extra"}],
        "repositories_removed": [],
        "sender": {"login": "octocat", "type": "User"}
    });
    let removed = serde_json::json!({
        "action": "removed",
        "installation": {"id": 77, "account": {"login": "octo"}},
        "repositories_added": [],
        "repositories_removed": [{"id": 5, "full_name": "octo/extra"}],
        "sender": {"login": "octocat", "type": "User"}
    });
    let closed = serde_json::json!({
        "action": "closed",
        "issue": {"number": 12, "title": "Drift: <b>case</b>", "labels": [{"name": "benchmark-drift"}],
                  "updated_at": "2026-11-30T10:00:00Z"},
        "repository": {"full_name": "octo/bench"},
        "sender": {"login": "octocat", "type": "User"}
    });
    let other = serde_json::json!({
        "action": "closed",
        "issue": {"number": 13, "title": "unrelated", "labels": [{"name": "bug"}]},
        "repository": {"full_name": "octo/bench"},
        "sender": {"login": "octocat", "type": "User"}
    });
    for (i, (event, body)) in [
        ("installation", created),
        ("installation_repositories", added),
        ("installation_repositories", removed),
        ("issues", closed),
        ("issues", other),
    ]
    .into_iter()
    .enumerate()
    {
        let body = serde_json::to_vec(&body).expect("json");
        let sig = sign(&body);
        let r = post(&app, event, &format!("reg-{i}"), body, Some(sig)).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{event}: {}", r.text);
    }
    // Closing every sender lets the worker drain and stop.
    let store = app.store.clone();
    drop(app);
    worker.run().await;
    let regs = store.installations().expect("registry");
    assert_eq!(regs.len(), 1);
    assert_eq!(regs[0].id, 77);
    assert_eq!(
        regs[0].repositories,
        vec![("octo/bench".to_owned(), 456789)]
    );
    assert_eq!(
        store.installation_of("Octo/Bench").expect("lookup"),
        Some(77)
    );
    assert!(store.inbox(10).expect("inbox").is_empty());
    let recorded: Vec<(u64, String, String, bool)> = store
        .read(|c| {
            let mut s = c.prepare("SELECT issue, action, actor, actor_is_app FROM issue_events")?;
            s.query_map([], |r| {
                Ok((r.get::<_, i64>(0)? as u64, r.get(1)?, r.get(2)?, r.get(3)?))
            })?
            .collect()
        })
        .expect("read");
    assert_eq!(
        recorded,
        vec![(12, "closed".to_owned(), "octocat".to_owned(), false)]
    );
}

/// A `workflow_run` delivery of the publication workflow, run `id` in
/// `status` (concluded `success` once completed), all at one time.
fn publication_run(id: u64, status: &str) -> Vec<u8> {
    let conclusion = (status == "completed").then_some("success");
    serde_json::to_vec(&serde_json::json!({
        "action": "completed",
        "workflow_run": {"id": id, "run_attempt": 1, "path": ".github/workflows/publish.yml",
                         "event": "schedule", "status": status, "conclusion": conclusion,
                         "updated_at": "2026-11-30T10:00:00Z"},
        "repository": {"full_name": "octo/bench"}
    }))
    .expect("json")
}

/// A run of publication-workflow deliveries is worked in one transaction;
/// when one item's facts cannot be written, the others are written each
/// alone, in order, and that one stays in the inbox.
#[tokio::test]
async fn one_item_that_cannot_be_written_holds_back_no_other_in_its_batch() {
    let s = setup(&Options::default());
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, worker) = benchops_app::build(cfg).expect("build");
    // Run 4's facts are refused by the database.
    app.store
        .write(|tx| {
            tx.execute_batch(
                "CREATE TRIGGER refuse_run_4 BEFORE INSERT ON workflow_runs
                 WHEN NEW.run_id = 4 BEGIN SELECT RAISE(ABORT, 'refused'); END;",
            )
        })
        .expect("trigger");
    // Run 2 twice, the later state last: order decides what is kept.
    let bodies = [
        publication_run(1, "completed"),
        publication_run(2, "queued"),
        publication_run(3, "completed"),
        publication_run(4, "completed"),
        publication_run(2, "completed"),
        publication_run(5, "completed"),
    ];
    for (i, body) in bodies.iter().enumerate() {
        let r = post(
            &app,
            "workflow_run",
            &format!("run-{i}"),
            body.clone(),
            Some(sign(body)),
        )
        .await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{i}: {}", r.text);
    }
    // The worker starts with all six queued, and takes them at once.
    let store = app.store.clone();
    drop(app);
    worker.run().await;
    let runs: Vec<(i64, String)> = store
        .read(|c| {
            let mut s = c.prepare("SELECT run_id, status FROM workflow_runs ORDER BY run_id")?;
            s.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?.collect()
        })
        .expect("read");
    let want = [1, 2, 3, 5].map(|n| (n, "completed".to_owned()));
    assert_eq!(runs, want);
    let left: Vec<String> = store
        .inbox(10)
        .expect("inbox")
        .into_iter()
        .map(|i| i.delivery)
        .collect();
    assert_eq!(left, ["run-3"]);
}

#[tokio::test]
async fn an_oversized_body_gets_413_and_a_full_queue_503_without_recording_the_delivery() {
    let s = setup(&Options {
        queue_capacity: 1,
        max_body_bytes: 4096,
        ..Options::default()
    });
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, worker) = benchops_app::build(cfg).expect("build");
    let big = vec![b' '; 5000];
    let sig = sign(&big);
    let r = post(&app, "push", "big", big, Some(sig)).await;
    assert_eq!(r.status, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(app.store.delivery_count().expect("count"), 0);

    let run = |n: u64| publication_run(n, "completed");
    let first = run(1);
    let r = post(
        &app,
        "workflow_run",
        "run-1",
        first.clone(),
        Some(sign(&first)),
    )
    .await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let second = run(2);
    let r = post(
        &app,
        "workflow_run",
        "run-2",
        second.clone(),
        Some(sign(&second)),
    )
    .await;
    assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.text);
    assert!(
        !app.store.has_delivery("run-2").expect("lookup"),
        "a 503 records nothing"
    );

    // Once the worker has drained the queue, GitHub's redelivery goes through.
    let store = app.store.clone();
    let app2 = app.clone();
    let handle = tokio::spawn(worker.run());
    let mut ok = false;
    for _ in 0..200 {
        let r = post(
            &app2,
            "workflow_run",
            "run-2",
            second.clone(),
            Some(sign(&second)),
        )
        .await;
        if r.status == StatusCode::ACCEPTED {
            ok = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(ok, "the redelivery was accepted after the queue drained");
    drop(app);
    drop(app2);
    handle.await.expect("worker");
    let runs: i64 = store
        .read(|c| c.query_row("SELECT count(*) FROM workflow_runs", [], |r| r.get(0)))
        .expect("count");
    assert_eq!(runs, 2);
}

#[tokio::test]
async fn a_delivery_without_id_or_event_is_a_bad_request_and_unhandled_events_are_acknowledged() {
    let s = setup(&Options::default());
    let cfg = benchops_app::config::load(&s.config).expect("config");
    let (app, _worker) = benchops_app::build(cfg).expect("build");
    let body = b"{}".to_vec();
    let req = Request::post("/webhook")
        .header("x-hub-signature-256", sign(&body))
        .header("x-github-event", "push")
        .body(Body::from(body.clone()))
        .expect("request");
    let resp = benchops_app::router(app.clone())
        .oneshot(req)
        .await
        .expect("infallible");
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let r = post(&app, "star", "star-1", body.clone(), Some(sign(&body))).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    assert!(r.text.contains("not handled"), "{}", r.text);
    let metrics = benchops_app::router(app.clone())
        .oneshot(
            Request::get("/metrics")
                .body(Body::empty())
                .expect("request"),
        )
        .await
        .expect("infallible");
    let text = String::from_utf8(
        metrics
            .into_body()
            .collect()
            .await
            .expect("body")
            .to_bytes()
            .to_vec(),
    )
    .expect("utf8");
    assert!(
        text.contains(r#"benchops_app_deliveries_total{event="other",outcome="ignored"} 1"#),
        "{text}"
    );
    assert!(!text.contains("star"), "{text}");
}
