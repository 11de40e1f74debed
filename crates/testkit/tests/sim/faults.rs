//! The fault plan: 5xx, secondary rate limits, latency, dropped
//! connections and a concurrent ref move.

use std::time::{Duration, Instant};

use benchops_testkit::sim::{Fault, FaultPlan, FaultRule};
use reqwest::Method;
use serde_json::json;

use crate::{OWNER, REPO, env};

#[tokio::test]
async fn server_errors_hit_the_nth_request_or_a_route() {
    let e = env().await;
    e.sim.set_fault_plan(
        FaultPlan::new()
            .rule(FaultRule::nth_request(2, Fault::Status(502)))
            .rule(FaultRule::on_operation("issues/create", Fault::Status(503)).times(2)),
    );
    let path = e.repo_path("/git/ref/heads/main");
    assert_eq!(e.call(Method::GET, &path, None).await.status, 200);
    let second = e.call(Method::GET, &path, None).await;
    assert_eq!(second.status, 502);
    assert!(second.header("x-github-request-id").is_some());
    assert_eq!(e.call(Method::GET, &path, None).await.status, 200);

    let body = Some(json!({"title": "t"}));
    let issues = e.repo_path("/issues");
    assert_eq!(
        e.call(Method::POST, &issues, body.clone()).await.status,
        503
    );
    assert_eq!(
        e.call(Method::POST, &issues, body.clone()).await.status,
        503
    );
    assert_eq!(e.call(Method::POST, &issues, body).await.status, 201);
    // The failed creates changed nothing.
    assert_eq!(e.sim.issues(OWNER, REPO).len(), 1);

    let log = e.sim.requests();
    assert_eq!(log[1].status, Some(502));
    assert_eq!(log[1].faults, ["Status(502)"]);
    assert!(log[0].faults.is_empty());

    // A rule on an exact method and path.
    e.sim
        .push_fault(FaultRule::on_path("GET", &path, Fault::Status(500)));
    assert_eq!(e.call(Method::GET, &path, None).await.status, 500);
    assert_eq!(e.call(Method::GET, &path, None).await.status, 200);
}

#[tokio::test]
async fn secondary_rate_limits_carry_retry_after_and_the_documented_message() {
    let e = env().await;
    e.sim.push_fault(FaultRule::on_operation(
        "git/create-tree",
        Fault::SecondaryRateLimit {
            status: 403,
            retry_after: 60,
        },
    ));
    e.sim.push_fault(FaultRule::on_operation(
        "issues/create",
        Fault::SecondaryRateLimit {
            status: 429,
            retry_after: 7,
        },
    ));
    let r = e
        .call(
            Method::POST,
            &e.repo_path("/git/trees"),
            Some(json!({"tree": []})),
        )
        .await;
    assert_eq!(r.status, 403);
    assert_eq!(r.header("retry-after"), Some("60"));
    let rid = r.header("x-github-request-id").expect("request id");
    assert_eq!(
        r.message(),
        format!(
            "You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID {rid}."
        )
    );
    // The primary limit is not exhausted: remaining is not 0.
    assert_ne!(r.header("x-ratelimit-remaining"), Some("0"));
    let r = e
        .call(
            Method::POST,
            &e.repo_path("/issues"),
            Some(json!({"title": "t"})),
        )
        .await;
    assert_eq!(r.status, 429);
    assert_eq!(r.header("retry-after"), Some("7"));
    // Next time it goes through.
    let r = e
        .call(
            Method::POST,
            &e.repo_path("/issues"),
            Some(json!({"title": "t"})),
        )
        .await;
    assert_eq!(r.status, 201);
}

#[tokio::test]
async fn latency_is_added() {
    let e = env().await;
    e.sim.push_fault(FaultRule::on_operation(
        "git/get-ref",
        Fault::Latency(Duration::from_millis(300)),
    ));
    let path = e.repo_path("/git/ref/heads/main");
    let start = Instant::now();
    let r = e.call(Method::GET, &path, None).await;
    assert_eq!(r.status, 200);
    assert!(start.elapsed() >= Duration::from_millis(300));
    let start = Instant::now();
    e.call(Method::GET, &path, None).await;
    assert!(start.elapsed() < Duration::from_millis(300));
}

#[tokio::test]
async fn a_dropped_connection_gets_no_response() {
    let e = env().await;
    e.sim.push_fault(FaultRule::on_operation(
        "issues/create",
        Fault::DropConnection,
    ));
    let err = e
        .http
        .post(e.url(&e.repo_path("/issues")))
        .header("authorization", format!("token {}", e.token))
        .json(&json!({"title": "lost"}))
        .send()
        .await
        .expect_err("the connection is closed without a response");
    assert!(!err.is_status() && !err.is_timeout(), "{err:?}");
    assert!(e.sim.issues(OWNER, REPO).is_empty());
    let log = e.sim.requests();
    assert_eq!(log.last().map(|r| r.status), Some(None));
    // The simulator keeps serving.
    let ok = e
        .call(
            Method::POST,
            &e.repo_path("/issues"),
            Some(json!({"title": "kept"})),
        )
        .await;
    assert_eq!(ok.status, 201);
}

#[tokio::test]
async fn a_concurrent_ref_move_makes_the_update_lose_the_race_once() {
    let e = env().await;
    let main = e.sim.ref_sha(OWNER, REPO, "heads/main").expect("main");
    let created = e
        .call(
            Method::POST,
            &e.repo_path("/git/refs"),
            Some(json!({"ref": "refs/heads/benchmark-history", "sha": main})),
        )
        .await;
    assert_eq!(created.status, 201);
    e.sim.push_fault(FaultRule::on_operation(
        "git/update-ref",
        Fault::ConcurrentRefMove,
    ));

    // Build a commit on the tip we saw, then try to move the ref.
    let commit_on = |parent: String| {
        let e = &e;
        async move {
            let tree = e.sim.commit(OWNER, REPO, &parent).expect("parent").tree;
            let t = e
                .call(
                    Method::POST,
                    &e.repo_path("/git/trees"),
                    Some(json!({"base_tree": tree, "tree": [{"path": "r.json", "mode": "100644", "type": "blob", "content": "{}"}]})),
                )
                .await;
            let c = e
                .call(
                    Method::POST,
                    &e.repo_path("/git/commits"),
                    Some(json!({"message": "results", "tree": t.body["sha"], "parents": [parent]})),
                )
                .await;
            c.body["sha"].as_str().expect("sha").to_owned()
        }
    };
    let ours = commit_on(main.clone()).await;
    let patch = e.repo_path("/git/refs/heads/benchmark-history");
    let lost = e
        .call(
            Method::PATCH,
            &patch,
            Some(json!({"sha": ours, "force": false})),
        )
        .await;
    assert_eq!(lost.status, 422);
    assert_eq!(lost.message(), "Update is not a fast forward");
    let theirs = e
        .sim
        .ref_sha(OWNER, REPO, "heads/benchmark-history")
        .expect("ref");
    assert_ne!(theirs, main);
    assert_eq!(
        e.sim.commit(OWNER, REPO, &theirs).expect("racer").parents,
        [main]
    );
    let log = e.sim.requests();
    let entry = log.last().expect("logged");
    assert!(
        entry
            .faults
            .iter()
            .any(|f| f.starts_with("moved refs/heads/benchmark-history to"))
    );

    // Retry on the new tip: the fault fired once, so this wins.
    let tip = e
        .call(
            Method::GET,
            &e.repo_path("/git/ref/heads/benchmark-history"),
            None,
        )
        .await;
    let tip = tip.body["object"]["sha"].as_str().expect("sha").to_owned();
    assert_eq!(tip, theirs);
    let retried = commit_on(tip).await;
    let won = e
        .call(
            Method::PATCH,
            &patch,
            Some(json!({"sha": retried, "force": false})),
        )
        .await;
    assert_eq!(won.status, 200);
    assert_eq!(
        e.sim.ref_sha(OWNER, REPO, "heads/benchmark-history"),
        Some(retried)
    );
}
