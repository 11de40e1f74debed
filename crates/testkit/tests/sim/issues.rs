//! Issues, comments and labels over HTTP, with pagination.

use reqwest::Method;
use serde_json::json;

use crate::{Env, OWNER, REPO, env};

async fn create_issue(e: &Env, title: &str, labels: &[&str]) -> u64 {
    let r = e
        .call(
            Method::POST,
            &e.repo_path("/issues"),
            Some(json!({"title": title, "body": format!("<!-- benchops:{title} -->"), "labels": labels})),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    r.body["number"].as_u64().expect("number")
}

/// Parses `Link` into (rel, url) pairs.
fn links(header: Option<&str>) -> Vec<(String, String)> {
    header
        .unwrap_or("")
        .split(", ")
        .filter(|s| !s.is_empty())
        .map(|part| {
            let (url, rel) = part.split_once("; ").expect("url; rel");
            (
                rel.trim_start_matches("rel=\"")
                    .trim_end_matches('"')
                    .to_owned(),
                url.trim_start_matches('<').trim_end_matches('>').to_owned(),
            )
        })
        .collect()
}

#[tokio::test]
async fn issues_are_created_updated_closed_and_reopened() {
    let e = env().await;
    let n = create_issue(&e, "drift in case a", &["benchops", "perf-drift"]).await;
    assert_eq!(n, 1);
    let got = e.call(Method::GET, &e.repo_path("/issues/1"), None).await;
    assert_eq!(got.status, 200);
    assert_eq!(got.body["state"], "open");
    assert_eq!(got.body["user"]["login"], "benchops-test[bot]");
    assert_eq!(got.body["user"]["type"], "Bot");
    assert_eq!(got.body["labels"][1]["name"], "perf-drift");
    // Unknown labels were created on the fly.
    assert_eq!(e.sim.labels(OWNER, REPO).len(), 2);

    let closed = e
        .call(
            Method::PATCH,
            &e.repo_path("/issues/1"),
            Some(json!({"state": "closed", "state_reason": "completed", "body": "resolved"})),
        )
        .await;
    assert_eq!(closed.status, 200, "{:?}", closed.body);
    assert_eq!(closed.body["state"], "closed");
    assert_eq!(closed.body["state_reason"], "completed");
    assert!(closed.body["closed_at"].is_string());
    assert_eq!(closed.body["closed_by"]["login"], "benchops-test[bot]");

    let reopened = e
        .call(
            Method::PATCH,
            &e.repo_path("/issues/1"),
            Some(json!({"state": "open", "labels": ["perf-drift"], "title": "drift again"})),
        )
        .await;
    assert_eq!(reopened.body["state"], "open");
    assert_eq!(reopened.body["state_reason"], "reopened");
    assert!(reopened.body["closed_at"].is_null());
    let snap = &e.sim.issues(OWNER, REPO)[0];
    assert_eq!(snap.title, "drift again");
    assert_eq!(snap.labels, ["perf-drift"]);
    assert_eq!(snap.body.as_deref(), Some("resolved"));

    let not_planned = e
        .call(
            Method::PATCH,
            &e.repo_path("/issues/1"),
            Some(json!({"state": "closed", "state_reason": "not_planned"})),
        )
        .await;
    assert_eq!(not_planned.body["state_reason"], "not_planned");

    let missing_title = e
        .call(
            Method::POST,
            &e.repo_path("/issues"),
            Some(json!({"body": "x"})),
        )
        .await;
    assert_eq!(missing_title.status, 422);
    assert_eq!(missing_title.body["errors"][0]["code"], "missing_field");
    let bad_state = e
        .call(
            Method::PATCH,
            &e.repo_path("/issues/1"),
            Some(json!({"state": "done"})),
        )
        .await;
    assert_eq!(bad_state.status, 422);
    assert_eq!(
        e.call(Method::GET, &e.repo_path("/issues/99"), None)
            .await
            .status,
        404
    );
    assert_eq!(
        e.call(Method::GET, &e.repo_path("/issues/x"), None)
            .await
            .status,
        404
    );
}

#[tokio::test]
async fn listing_filters_by_state_and_labels_and_paginates_with_link() {
    let e = env().await;
    for i in 1..=7 {
        let labels: &[&str] = if i % 2 == 0 {
            &["perf-drift", "lane:nightly"]
        } else {
            &["perf-drift"]
        };
        create_issue(&e, &format!("issue {i}"), labels).await;
    }
    e.call(
        Method::PATCH,
        &e.repo_path("/issues/7"),
        Some(json!({"state": "closed"})),
    )
    .await;

    // Default: open, newest first, 30 per page, no Link on a single page.
    let all_open = e.call(Method::GET, &e.repo_path("/issues"), None).await;
    let numbers: Vec<u64> = all_open
        .body
        .as_array()
        .expect("array")
        .iter()
        .map(|i| i["number"].as_u64().expect("n"))
        .collect();
    assert_eq!(numbers, [6, 5, 4, 3, 2, 1]);
    assert!(all_open.header("link").is_none());

    let closed = e
        .call(Method::GET, &e.repo_path("/issues?state=closed"), None)
        .await;
    assert_eq!(closed.body.as_array().expect("array").len(), 1);
    let both = e
        .call(
            Method::GET,
            &e.repo_path("/issues?state=all&labels=perf-drift,lane%3Anightly"),
            None,
        )
        .await;
    let numbers: Vec<u64> = both
        .body
        .as_array()
        .expect("array")
        .iter()
        .map(|i| i["number"].as_u64().expect("n"))
        .collect();
    assert_eq!(numbers, [6, 4, 2]);
    assert_eq!(
        e.call(Method::GET, &e.repo_path("/issues?state=bogus"), None)
            .await
            .status,
        422
    );

    // Follow `next` links to the end, as a client would.
    let mut url = e.url(&e.repo_path("/issues?state=all&per_page=3&direction=asc"));
    let mut seen = Vec::new();
    let mut pages = 0;
    loop {
        let r = e
            .http
            .get(&url)
            .header("authorization", format!("token {}", e.token))
            .send()
            .await
            .expect("answers");
        let link = r
            .headers()
            .get("link")
            .map(|v| v.to_str().expect("ascii").to_owned());
        let body: serde_json::Value = r.json().await.expect("json");
        seen.extend(
            body.as_array()
                .expect("array")
                .iter()
                .map(|i| i["number"].as_u64().expect("n")),
        );
        pages += 1;
        let rels = links(link.as_deref());
        if pages == 1 {
            let last = rels
                .iter()
                .find(|(rel, _)| rel == "last")
                .expect("rel=last");
            assert!(last.1.contains("page=3"), "{last:?}");
            assert!(last.1.starts_with(&e.sim.base_url()));
        }
        if pages == 2 {
            assert!(rels.iter().any(|(rel, _)| rel == "prev"));
            assert!(rels.iter().any(|(rel, _)| rel == "first"));
        }
        match rels.into_iter().find(|(rel, _)| rel == "next") {
            Some((_, next)) => url = next,
            None => break,
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(seen, [1, 2, 3, 4, 5, 6, 7]);
}

#[tokio::test]
async fn comments_are_created_and_listed_in_pages() {
    let e = env().await;
    let n = create_issue(&e, "with comments", &[]).await;
    for i in 0..5 {
        let r = e
            .call(
                Method::POST,
                &e.repo_path(&format!("/issues/{n}/comments")),
                Some(json!({"body": format!("sample {i}")})),
            )
            .await;
        assert_eq!(r.status, 201);
        assert!(
            r.body["issue_url"]
                .as_str()
                .expect("issue_url")
                .ends_with(&format!("/issues/{n}"))
        );
    }
    let page2 = e
        .call(
            Method::GET,
            &e.repo_path(&format!("/issues/{n}/comments?per_page=2&page=2")),
            None,
        )
        .await;
    let bodies: Vec<&str> = page2
        .body
        .as_array()
        .expect("array")
        .iter()
        .map(|c| c["body"].as_str().expect("body"))
        .collect();
    assert_eq!(bodies, ["sample 2", "sample 3"]);
    let rels = links(page2.header("link"));
    assert_eq!(
        rels.iter().map(|(r, _)| r.as_str()).collect::<Vec<_>>(),
        ["prev", "next", "last", "first"]
    );
    let issue = e
        .call(Method::GET, &e.repo_path(&format!("/issues/{n}")), None)
        .await;
    assert_eq!(issue.body["comments"], 5);
    assert_eq!(e.sim.issues(OWNER, REPO)[0].comments.len(), 5);

    let empty = e
        .call(
            Method::POST,
            &e.repo_path(&format!("/issues/{n}/comments")),
            Some(json!({})),
        )
        .await;
    assert_eq!(empty.status, 422);
    let nowhere = e
        .call(
            Method::POST,
            &e.repo_path("/issues/42/comments"),
            Some(json!({"body": "x"})),
        )
        .await;
    assert_eq!(nowhere.status, 404);
}

#[tokio::test]
async fn labels_are_created_once_and_found_case_insensitively() {
    let e = env().await;
    let body = json!({"name": "perf drift", "color": "d73a4a", "description": "A confirmed drift"});
    let created = e
        .call(Method::POST, &e.repo_path("/labels"), Some(body.clone()))
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.body["color"], "d73a4a");
    let dup = e
        .call(
            Method::POST,
            &e.repo_path("/labels"),
            Some(json!({"name": "Perf Drift"})),
        )
        .await;
    assert_eq!(dup.status, 422);
    assert_eq!(dup.message(), "Validation Failed");
    assert_eq!(dup.body["errors"][0]["code"], "already_exists");
    assert_eq!(dup.body["errors"][0]["resource"], "Label");

    let got = e
        .call(Method::GET, &e.repo_path("/labels/PERF%20DRIFT"), None)
        .await;
    assert_eq!(got.status, 200);
    assert_eq!(got.body["name"], "perf drift");
    assert_eq!(
        e.call(Method::GET, &e.repo_path("/labels/nope"), None)
            .await
            .status,
        404
    );
    let bad_color = e
        .call(
            Method::POST,
            &e.repo_path("/labels"),
            Some(json!({"name": "x", "color": "#fff"})),
        )
        .await;
    assert_eq!(bad_color.status, 422);

    for name in ["b", "a", "c"] {
        e.call(
            Method::POST,
            &e.repo_path("/labels"),
            Some(json!({"name": name})),
        )
        .await;
    }
    let list = e
        .call(Method::GET, &e.repo_path("/labels?per_page=2"), None)
        .await;
    let names: Vec<&str> = list
        .body
        .as_array()
        .expect("array")
        .iter()
        .map(|l| l["name"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["a", "b"]);
    assert!(
        list.header("link")
            .expect("more pages")
            .contains("rel=\"next\"")
    );
}

#[tokio::test]
async fn titles_and_bodies_over_githubs_limits_are_refused() {
    let e = env().await;
    let n = create_issue(&e, "limits", &[]).await;
    let at_limit = "é".repeat(65_536);
    let over = format!("{at_limit}x");
    for (method, path, body, ok) in [
        (
            Method::POST,
            e.repo_path("/issues"),
            json!({"title": "t", "body": over}),
            false,
        ),
        (
            Method::POST,
            e.repo_path("/issues"),
            json!({"title": "x".repeat(257)}),
            false,
        ),
        (
            Method::PATCH,
            e.repo_path(&format!("/issues/{n}")),
            json!({"body": over}),
            false,
        ),
        (
            Method::POST,
            e.repo_path(&format!("/issues/{n}/comments")),
            json!({"body": over}),
            false,
        ),
        (
            Method::POST,
            e.repo_path(&format!("/issues/{n}/comments")),
            json!({"body": at_limit}),
            true,
        ),
        (
            Method::PATCH,
            e.repo_path(&format!("/issues/{n}")),
            json!({"title": "x".repeat(256), "body": at_limit}),
            true,
        ),
    ] {
        let r = e.call(method, &path, Some(body)).await;
        if ok {
            assert!(r.status == 200 || r.status == 201, "{path}: {}", r.status);
        } else {
            assert_eq!(r.status, 422, "{path}: {:?}", r.body);
            assert_eq!(r.body["errors"][0]["code"], "custom");
        }
    }
}
