//! The client against wiremock: exact request shapes, error mapping,
//! retries, pacing, pagination and App authentication. Time is a
//! `ManualClock` that is also the sleeper, so every wait is instant and
//! recorded.

use std::collections::BTreeMap;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use benchops_github::{
    AppId, AppKey, GitHubClient, GitHubError, GitSha, InstallationId, InstallationToken,
    IssueState, IssueUpdate, LabelOutcome, LabelSpec, ManualClock, NewIssue, PacingLimits, Phase,
    RefName, Repo, RetryPolicy, StateFilter, Token, TreeFile,
};
use serde_json::{Value, json};
use wiremock::matchers::{
    any, body_json, body_partial_json, header, method, path, path_regex, query_param,
    query_param_is_missing,
};
use wiremock::{Mock, MockServer, ResponseTemplate};

const TOKEN: &str = "ghs_TestInstallationToken0123456789";
const START: u64 = 1_700_000_000;

fn clock() -> ManualClock {
    ManualClock::at_unix(START)
}

fn client(server: &MockServer, clock: &ManualClock) -> GitHubClient {
    GitHubClient::builder()
        .base_url(server.uri())
        .clock(Arc::new(clock.clone()))
        .sleeper(Arc::new(clock.clone()))
        .jitter_seed(7)
        .build()
        .expect("client builds")
}

fn installation_token(phase: Phase) -> InstallationToken {
    InstallationToken {
        token: Token::new(TOKEN),
        expires_at: "2030-01-01T00:00:00Z".parse().expect("timestamp"),
        permissions: BTreeMap::new(),
        phase,
        repositories: vec!["bench".into()],
    }
}

fn repo() -> Repo {
    Repo::parse("octo/bench").expect("valid repo")
}

fn sha(c: char) -> String {
    c.to_string().repeat(40)
}

fn git_sha(c: char) -> GitSha {
    GitSha::new(&sha(c)).expect("valid sha")
}

fn branch() -> RefName {
    RefName::branch("benchmark-history").expect("valid ref")
}

/// A response with the headers GitHub always sends.
fn gh(status: u16, body: Value, request_id: &str) -> ResponseTemplate {
    ResponseTemplate::new(status)
        .set_body_json(body)
        .insert_header("x-github-request-id", request_id)
        .insert_header("x-ratelimit-remaining", "4990")
        .insert_header("x-ratelimit-reset", (START + 3600).to_string().as_str())
}

fn std_headers() -> (
    wiremock::matchers::HeaderExactMatcher,
    wiremock::matchers::HeaderExactMatcher,
    wiremock::matchers::HeaderExactMatcher,
) {
    (
        header("accept", "application/vnd.github+json"),
        header("x-github-api-version", "2022-11-28"),
        header("authorization", format!("Bearer {TOKEN}").as_str()),
    )
}

/// A mock for `verb p` that also requires the headers every request must
/// carry: Accept, the API version and the installation token.
fn given(verb: &str, p: &str) -> wiremock::MockBuilder {
    let (accept, version, auth) = std_headers();
    Mock::given(method(verb))
        .and(path(p))
        .and(accept)
        .and(version)
        .and(auth)
}

fn ref_json(c: char) -> Value {
    json!({
        "ref": "refs/heads/benchmark-history",
        "node_id": "MDM6UmVmcmVmcy9oZWFkcy9mZWF0dXJlQQ==",
        "url": "https://api.github.com/repos/octo/bench/git/refs/heads/benchmark-history",
        "object": {"type": "commit", "sha": sha(c), "url": "https://api.github.com/x"}
    })
}

/// Routes that a contents-phase flow must never call.
async fn forbid_issue_writes_blobs_and_force(server: &MockServer) {
    Mock::given(method("PATCH"))
        .and(path_regex(r"/git/refs/"))
        .and(body_partial_json(json!({"force": true})))
        .respond_with(ResponseTemplate::new(200))
        .with_priority(1)
        .expect(0)
        .named("a forced ref update")
        .mount(server)
        .await;
    Mock::given(path_regex(r"/(issues|labels)"))
        .respond_with(ResponseTemplate::new(201))
        .with_priority(1)
        .expect(0)
        .named("any issue or label request during the contents phase")
        .mount(server)
        .await;
    Mock::given(path_regex(r"/git/blobs"))
        .respond_with(ResponseTemplate::new(201))
        .with_priority(1)
        .expect(0)
        .named("a per-file blob call")
        .mount(server)
        .await;
}

#[tokio::test]
async fn contents_phase_flow_sends_exact_shapes_and_never_forces_or_touches_issues() {
    let server = MockServer::start().await;
    let clock = clock();
    forbid_issue_writes_blobs_and_force(&server).await;
    given("GET", "/repos/octo/bench/git/ref/heads/benchmark-history")
        .respond_with(gh(200, ref_json('a'), "REQ-1"))
        .expect(1)
        .mount(&server)
        .await;
    given(
        "GET",
        &format!("/repos/octo/bench/git/commits/{}", sha('a')),
    )
    .respond_with(gh(
        200,
        json!({"sha": sha('a'), "tree": {"sha": sha('b'), "url": "u"}, "parents": [],
                   "message": "initial", "committer": {"name": "x"}}),
        "REQ-1b",
    ))
    .expect(1)
    .mount(&server)
    .await;
    given("POST", "/repos/octo/bench/git/trees")
        .and(header("content-type", "application/json"))
        .and(body_json(json!({
            "base_tree": sha('b'),
            "tree": [
                {"path": "records/ab.json", "mode": "100644", "type": "blob", "content": "{\"a\":1}"},
                {"path": "lanes/nightly/baseline.json", "mode": "100644", "type": "blob", "content": "{}"}
            ]
        })))
        .respond_with(gh(
            201,
            json!({"sha": sha('c'), "url": "u", "truncated": false, "tree": [
                {"path": "records/ab.json", "mode": "100644", "type": "blob", "size": 7, "sha": sha('d'), "url": "u"}
            ]}),
            "REQ-2",
        ))
        .expect(1)
        .mount(&server)
        .await;
    given("POST", "/repos/octo/bench/git/commits")
        .and(body_json(json!({"message": "record ab", "tree": sha('c'), "parents": [sha('a')]})))
        .respond_with(gh(
            201,
            json!({"sha": sha('e'), "node_id": "x", "tree": {"sha": sha('c'), "url": "u"},
                   "parents": [{"sha": sha('a'), "url": "u", "html_url": "h"}], "message": "record ab",
                   "author": {"name": "benchops"}, "verification": {"verified": false}}),
            "REQ-3",
        ))
        .expect(1)
        .mount(&server)
        .await;
    given(
        "PATCH",
        "/repos/octo/bench/git/refs/heads/benchmark-history",
    )
    .and(body_json(json!({"sha": sha('e'), "force": false})))
    .respond_with(gh(200, ref_json('e'), "REQ-4"))
    .expect(1)
    .mount(&server)
    .await;

    let gh = client(&server, &clock).with_installation_token(&installation_token(Phase::Contents));
    let tip = gh.get_ref(&repo(), &branch()).await.expect("get ref");
    assert_eq!(tip.object.sha, git_sha('a'));
    assert_eq!(tip.name, "refs/heads/benchmark-history");
    let base = gh
        .get_commit(&repo(), &tip.object.sha)
        .await
        .expect("get commit")
        .tree
        .sha;
    let files = [
        TreeFile {
            path: "records/ab.json".into(),
            content: "{\"a\":1}".into(),
        },
        TreeFile {
            path: "lanes/nightly/baseline.json".into(),
            content: "{}".into(),
        },
    ];
    let tree = gh
        .create_tree(&repo(), Some(&base), &files)
        .await
        .expect("create tree");
    assert_eq!(tree.sha, git_sha('c'));
    let commit = gh
        .create_commit(
            &repo(),
            "record ab",
            &tree.sha,
            std::slice::from_ref(&tip.object.sha),
        )
        .await
        .expect("create commit");
    assert_eq!(commit.parents[0].sha, git_sha('a'));
    let moved = gh
        .update_ref(&repo(), &branch(), &commit.sha)
        .await
        .expect("update ref");
    assert_eq!(moved.object.sha, git_sha('e'));

    // An issue write with the contents-phase token is refused locally.
    let refused = gh
        .create_issue(
            &repo(),
            &NewIssue {
                title: "t".into(),
                body: "b".into(),
                labels: vec![],
            },
        )
        .await
        .expect_err("contents phase cannot write issues");
    assert!(
        matches!(
            refused,
            GitHubError::PhaseForbids {
                phase: Phase::Contents,
                needs: Phase::Issues,
                ..
            }
        ),
        "{refused:?}"
    );
    let labels = [LabelSpec {
        name: "bench".into(),
        color: "ffffff".into(),
        description: None,
    }];
    assert!(matches!(
        gh.ensure_labels(&repo(), &labels).await,
        Err(GitHubError::PhaseForbids { .. })
    ));

    let metrics = gh.metrics();
    let total = metrics.total();
    assert_eq!(total.requests, 5);
    assert_eq!(total.retries, 0);
    assert_eq!(total.waited_ms, 0);
    assert_eq!(
        total.request_ids,
        ["REQ-1", "REQ-1b", "REQ-2", "REQ-3", "REQ-4"],
        "in order"
    );
    assert_eq!(metrics.rate_limit_remaining, Some(4990));
    let update = metrics
        .operation("git.update_ref")
        .expect("update_ref measured");
    assert_eq!(update.requests, 1);
    assert_eq!(
        update.bytes_sent,
        json!({"sha": sha('e'), "force": false}).to_string().len() as u64
    );
    assert!(update.bytes_received > 0);

    for request in server.received_requests().await.expect("recording is on") {
        let body = String::from_utf8_lossy(&request.body).replace(' ', "");
        assert!(!body.contains("\"force\":true"), "{body}");
    }
    server.verify().await;
}

#[tokio::test]
async fn not_a_fast_forward_is_ref_moved_and_is_not_retried() {
    let server = MockServer::start().await;
    let clock = clock();
    given(
        "PATCH",
        "/repos/octo/bench/git/refs/heads/benchmark-history",
    )
    .and(body_json(json!({"sha": sha('e'), "force": false})))
    .respond_with(gh(
        422,
        json!({"message": "Update is not a fast forward",
                   "documentation_url": "https://docs.github.com/rest/git/refs#update-a-reference",
                   "status": "422"}),
        "MOVED-1",
    ))
    .expect(1)
    .mount(&server)
    .await;
    let gh = client(&server, &clock).with_installation_token(&installation_token(Phase::Contents));
    let err = gh
        .update_ref(&repo(), &branch(), &git_sha('e'))
        .await
        .expect_err("ref moved");
    assert!(matches!(err, GitHubError::RefMoved { .. }), "{err:?}");
    assert_eq!(err.request_id(), Some("MOVED-1"));
    assert_eq!(
        err.to_string(),
        "update ref: the ref moved, the update is not a fast forward (422) [request id MOVED-1]"
    );
    assert!(clock.sleeps().is_empty());
    server.verify().await;
}

#[tokio::test]
async fn status_codes_map_to_typed_errors_without_retrying() {
    let server = MockServer::start().await;
    let clock = clock();
    Mock::given(method("GET"))
        .and(path("/repos/octo/bench/git/ref/heads/missing"))
        .respond_with(gh(404, json!({"message": "Not Found"}), "NF-1"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/bench/git/commits"))
        .respond_with(gh(
            409,
            json!({"message": "Git Repository is empty."}),
            "CF-1",
        ))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/bench/git/refs"))
        .and(body_json(json!({"ref": "refs/heads/benchmark-history", "sha": sha('a')})))
        .respond_with(gh(
            422,
            json!({"message": "Reference already exists", "errors": [{"resource": "Reference", "code": "custom", "field": "ref"}]}),
            "UP-1",
        ))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/octo/bench/git/ref/heads/secret"))
        .respond_with(gh(401, json!({"message": "Bad credentials"}), "UA-1"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/octo/bench/git/ref/heads/private"))
        .respond_with(gh(
            403,
            json!({"message": "Resource not accessible by integration"}),
            "FB-1",
        ))
        .expect(1)
        .mount(&server)
        .await;

    let gh = client(&server, &clock).with_installation_token(&installation_token(Phase::Contents));
    let r = repo();
    let err = gh
        .get_ref(&r, &RefName::branch("missing").expect("valid"))
        .await
        .expect_err("404");
    assert!(
        err.is_not_found() && err.request_id() == Some("NF-1"),
        "{err:?}"
    );

    let err = gh
        .create_commit(&r, "m", &git_sha('c'), &[])
        .await
        .expect_err("409");
    assert!(
        matches!(&err, GitHubError::Conflict { message, .. } if message == "Git Repository is empty."),
        "{err:?}"
    );

    let err = gh
        .create_ref(&r, &branch(), &git_sha('a'))
        .await
        .expect_err("422");
    let GitHubError::Unprocessable {
        message, errors, ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert_eq!(message, "Reference already exists");
    assert_eq!(errors[0].field.as_deref(), Some("ref"));

    let err = gh
        .get_ref(&r, &RefName::branch("secret").expect("valid"))
        .await
        .expect_err("401");
    assert!(matches!(err, GitHubError::Unauthorized { .. }), "{err:?}");
    for shown in [err.to_string(), format!("{err:?}"), format!("{gh:?}")] {
        assert!(!shown.contains(TOKEN) && !shown.contains("ghs_"), "{shown}");
    }

    let err = gh
        .get_ref(&r, &RefName::branch("private").expect("valid"))
        .await
        .expect_err("403");
    assert!(matches!(err, GitHubError::Forbidden { .. }), "{err:?}");

    assert!(clock.sleeps().is_empty(), "no final error is retried");
    server.verify().await;
}

#[tokio::test]
async fn secondary_rate_limit_honours_retry_after_even_for_a_post() {
    let server = MockServer::start().await;
    let clock = clock();
    given("POST", "/repos/octo/bench/issues")
        .respond_with(
            gh(
                403,
                json!({"message": "You have exceeded a secondary rate limit. Please wait a few minutes before you try again.",
                       "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}),
                "SEC-1",
            )
            .insert_header("retry-after", "30"),
        )
        .up_to_n_times(1)
        .expect(1)
        .with_priority(1)
        .mount(&server)
        .await;
    given("POST", "/repos/octo/bench/issues")
        .and(body_json(json!({"title": "Drift: case x", "body": "<!-- benchops:x -->", "labels": ["bench:drift"]})))
        .respond_with(gh(
            201,
            json!({"id": 1, "number": 12, "title": "Drift: case x", "body": "<!-- benchops:x -->",
                   "state": "open", "labels": [{"id": 5, "name": "bench:drift", "color": "ff0000"}],
                   "html_url": "https://github.com/octo/bench/issues/12"}),
            "OK-1",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let gh = client(&server, &clock).with_installation_token(&installation_token(Phase::Issues));
    let issue = gh
        .create_issue(
            &repo(),
            &NewIssue {
                title: "Drift: case x".into(),
                body: "<!-- benchops:x -->".into(),
                labels: vec!["bench:drift".into()],
            },
        )
        .await
        .expect("created after the wait");
    assert_eq!(issue.number, 12);
    assert!(issue.has_label("bench:drift"));
    assert_eq!(clock.sleeps(), [Duration::from_secs(30)]);
    let m = gh.metrics();
    let op = m.operation("issues.create").expect("measured");
    assert_eq!((op.requests, op.retries), (2, 1));
    assert_eq!(op.retry_waited_ms, 30_000);
    assert_eq!(op.waited_ms, 30_000 + op.pacing_waited_ms);
    assert_eq!(op.request_ids, ["SEC-1", "OK-1"]);
    server.verify().await;
}

#[tokio::test]
async fn too_many_requests_waits_for_the_reset_or_backs_off_a_minute() {
    let server = MockServer::start().await;
    let clock = clock();
    // Primary limit exhausted: 429 with remaining 0, reset 100 s ahead.
    Mock::given(method("GET"))
        .and(path("/repos/octo/bench/git/ref/heads/a"))
        .respond_with(
            ResponseTemplate::new(429)
                .set_body_json(json!({"message": "API rate limit exceeded"}))
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-reset", (START + 100).to_string().as_str()),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    // A bare 429: at least 60 s.
    Mock::given(method("GET"))
        .and(path("/repos/octo/bench/git/ref/heads/b"))
        .respond_with(ResponseTemplate::new(429))
        .up_to_n_times(1)
        .with_priority(1)
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path_regex(r"^/repos/octo/bench/git/ref/heads/[ab]$"))
        .respond_with(gh(200, ref_json('a'), "OK"))
        .expect(2)
        .mount(&server)
        .await;
    let gh = client(&server, &clock).with_installation_token(&installation_token(Phase::Contents));
    gh.get_ref(&repo(), &RefName::branch("a").expect("valid"))
        .await
        .expect("after the reset");
    assert_eq!(clock.sleeps(), [Duration::from_secs(101)]);
    gh.get_ref(&repo(), &RefName::branch("b").expect("valid"))
        .await
        .expect("after a backoff");
    let sleeps = clock.sleeps();
    assert_eq!(sleeps.len(), 2);
    assert!(
        sleeps[1] >= Duration::from_secs(60) && sleeps[1] <= Duration::from_secs(75),
        "{sleeps:?}"
    );
    let reported: u64 = sleeps
        .iter()
        .map(|d| u64::try_from(d.as_nanos().div_ceil(1_000_000)).expect("fits"))
        .sum();
    assert_eq!(
        gh.metrics().total().retry_waited_ms,
        reported,
        "every wait is reported"
    );
    server.verify().await;
}

#[tokio::test]
async fn a_reset_beyond_the_longest_wait_gives_up_with_the_reset() {
    let server = MockServer::start().await;
    let clock = clock();
    Mock::given(method("GET"))
        .respond_with(
            ResponseTemplate::new(403)
                .set_body_json(json!({"message": "API rate limit exceeded for installation ID 1."}))
                .insert_header("x-ratelimit-remaining", "0")
                .insert_header("x-ratelimit-reset", (START + 7200).to_string().as_str())
                .insert_header("x-github-request-id", "RL-1"),
        )
        .expect(1)
        .mount(&server)
        .await;
    let gh = client(&server, &clock).with_installation_token(&installation_token(Phase::Contents));
    let err = gh
        .get_ref(&repo(), &branch())
        .await
        .expect_err("rate limited");
    assert!(
        matches!(err, GitHubError::RateLimited { status: 403, reset: Some(r), .. } if r == START + 7200),
        "{err:?}"
    );
    assert_eq!(err.request_id(), Some("RL-1"));
    assert!(clock.sleeps().is_empty());
    server.verify().await;
}

#[tokio::test]
async fn server_errors_are_retried_for_get_but_not_for_post() {
    let server = MockServer::start().await;
    let clock = clock();
    Mock::given(method("GET"))
        .and(path("/repos/octo/bench/git/ref/heads/benchmark-history"))
        .respond_with(gh(502, json!({"message": "Server Error"}), "5XX"))
        .up_to_n_times(2)
        .with_priority(1)
        .expect(2)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/octo/bench/git/ref/heads/benchmark-history"))
        .respond_with(gh(200, ref_json('a'), "OK"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/repos/octo/bench/git/trees"))
        .respond_with(gh(500, json!({"message": "Server Error"}), "5XX-POST"))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/octo/bench/git/ref/heads/down"))
        .respond_with(ResponseTemplate::new(503))
        .expect(5)
        .mount(&server)
        .await;
    let gh = client(&server, &clock).with_installation_token(&installation_token(Phase::Contents));

    gh.get_ref(&repo(), &branch())
        .await
        .expect("third attempt succeeds");
    let sleeps = clock.sleeps();
    assert_eq!(sleeps.len(), 2);
    assert!(sleeps[0] >= Duration::from_secs(1) && sleeps[0] <= Duration::from_millis(1250));
    assert!(sleeps[1] >= Duration::from_secs(2) && sleeps[1] <= Duration::from_millis(2500));

    let files = [TreeFile {
        path: "a".into(),
        content: "b".into(),
    }];
    let err = gh
        .create_tree(&repo(), None, &files)
        .await
        .expect_err("500 on a POST is final");
    assert!(
        matches!(err, GitHubError::Server { status: 500, .. }),
        "{err:?}"
    );
    assert_eq!(clock.sleeps().len(), 2, "no wait for the POST");

    let err = gh
        .get_ref(&repo(), &RefName::branch("down").expect("valid"))
        .await
        .expect_err("gives up");
    assert!(
        matches!(err, GitHubError::Server { status: 503, .. }),
        "{err:?}"
    );
    let m = gh.metrics();
    assert_eq!(
        m.operation("git.get_ref").map(|o| (o.requests, o.retries)),
        Some((8, 6))
    );
    assert_eq!(m.operation("git.create_tree").map(|o| o.requests), Some(1));
    server.verify().await;
}

#[tokio::test]
async fn connection_errors_are_retried_only_for_idempotent_operations() {
    // A port that was free a moment ago: connections are refused.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        l.local_addr().expect("addr").port()
    };
    let clock = clock();
    let gh = GitHubClient::builder()
        .base_url(format!("http://127.0.0.1:{port}"))
        .clock(Arc::new(clock.clone()))
        .sleeper(Arc::new(clock.clone()))
        .retry_policy(RetryPolicy {
            max_attempts: 3,
            ..RetryPolicy::default()
        })
        .build()
        .expect("client")
        .with_installation_token(&installation_token(Phase::Contents));
    let err = gh.get_ref(&repo(), &branch()).await.expect_err("refused");
    assert!(matches!(err, GitHubError::Transport { .. }), "{err:?}");
    assert_eq!(clock.sleeps().len(), 2);
    let err = gh
        .create_commit(&repo(), "m", &git_sha('c'), &[])
        .await
        .expect_err("refused");
    assert!(matches!(err, GitHubError::Transport { .. }), "{err:?}");
    assert_eq!(clock.sleeps().len(), 2, "a POST is not retried");
    let m = gh.metrics();
    assert_eq!(m.operation("git.get_ref").map(|o| o.requests), Some(3));
    assert_eq!(
        m.operation("git.create_commit").map(|o| o.requests),
        Some(1)
    );
}

#[tokio::test]
async fn issues_are_listed_by_label_and_state_across_pages() {
    let server = MockServer::start().await;
    let clock = clock();
    let issue = |n: u64| {
        json!({"id": n, "number": n, "title": format!("t{n}"), "body": "b", "state": "open",
               "labels": [{"name": "bench:drift"}, {"name": "lane:nightly"}]})
    };
    let page2 = format!(
        "{}/repositories/1/issues?state=open&labels=bench%3Adrift%2Clane%3Anightly&per_page=100&page=2",
        server.uri()
    );
    let page3 = format!(
        "{}/repositories/1/issues?state=open&labels=bench%3Adrift%2Clane%3Anightly&per_page=100&page=3",
        server.uri()
    );
    given("GET", "/repos/octo/bench/issues")
        .and(query_param("state", "open"))
        .and(query_param("labels", "bench:drift,lane:nightly"))
        .and(query_param("per_page", "100"))
        .and(query_param_is_missing("page"))
        .respond_with(gh(200, json!([issue(1), issue(2)]), "P1").insert_header(
            "link",
            format!(r#"<{page2}>; rel="next", <{page3}>; rel="last""#).as_str(),
        ))
        .expect(1)
        .mount(&server)
        .await;
    given("GET", "/repositories/1/issues")
        .and(query_param("page", "2"))
        .respond_with(
            gh(
                200,
                json!([issue(3), {"id": 4, "number": 4, "title": "a PR", "state": "open", "labels": [],
                                  "pull_request": {"url": "u"}}]),
                "P2",
            )
            .insert_header("link", format!(r#"<{page3}>; rel="next""#).as_str()),
        )
        .expect(1)
        .mount(&server)
        .await;
    given("GET", "/repositories/1/issues")
        .and(query_param("page", "3"))
        .respond_with(gh(200, json!([issue(5)]), "P3"))
        .expect(1)
        .mount(&server)
        .await;
    let gh = client(&server, &clock).with_installation_token(&installation_token(Phase::Issues));
    let issues = gh
        .list_issues(&repo(), StateFilter::Open, &["bench:drift", "lane:nightly"])
        .await
        .expect("three pages");
    let numbers: Vec<u64> = issues.iter().map(|i| i.number).collect();
    assert_eq!(numbers, [1, 2, 3, 5], "pull requests are left out");
    assert_eq!(
        gh.metrics()
            .operation("issues.list")
            .map(|o| o.request_ids.clone()),
        Some(vec!["P1".to_owned(), "P2".to_owned(), "P3".to_owned()])
    );
    server.verify().await;
}

#[tokio::test]
async fn a_next_link_to_another_host_is_not_followed() {
    let server = MockServer::start().await;
    let clock = clock();
    Mock::given(method("GET"))
        .and(path("/repos/octo/bench/issues/3/comments"))
        .respond_with(
            gh(200, json!([{"id": 1, "body": "x"}]), "C1")
                .insert_header("link", r#"<https://evil.example/steal?page=2>; rel="next""#),
        )
        .expect(1)
        .mount(&server)
        .await;
    let gh = client(&server, &clock).with_installation_token(&installation_token(Phase::Issues));
    let err = gh
        .list_comments(&repo(), 3)
        .await
        .expect_err("foreign link");
    assert!(
        matches!(&err, GitHubError::UnexpectedResponse { reason, .. } if reason.contains("leaves the API host")),
        "{err:?}"
    );
    server.verify().await;
}

#[tokio::test]
async fn issue_updates_comments_and_labels() {
    let server = MockServer::start().await;
    let clock = clock();
    forbid_blob_and_git_writes(&server).await;
    let issue = |state: &str| json!({"number": 9, "title": "t", "body": "b", "state": state, "labels": ["bench:drift"]});
    given("PATCH", "/repos/octo/bench/issues/9")
        .and(body_json(
            json!({"state": "closed", "state_reason": "completed"}),
        ))
        .respond_with(gh(200, issue("closed"), "CL"))
        .expect(1)
        .mount(&server)
        .await;
    given("PATCH", "/repos/octo/bench/issues/9")
        .and(body_json(json!({"state": "open"})))
        .respond_with(gh(200, issue("open"), "RO"))
        .expect(1)
        .mount(&server)
        .await;
    given("PATCH", "/repos/octo/bench/issues/9")
        .and(body_json(
            json!({"title": "new", "body": "<!-- m -->", "labels": ["a", "b"]}),
        ))
        .respond_with(gh(200, issue("open"), "UP"))
        .expect(1)
        .mount(&server)
        .await;
    given("POST", "/repos/octo/bench/issues/9/labels")
        .and(body_json(json!({"labels": ["lane:nightly"]})))
        .respond_with(gh(
            200,
            json!([{"id": 1, "name": "bench:drift", "color": "ff0000"},
                   {"id": 3, "name": "drift-accepted", "color": "0e8a16"},
                   {"id": 4, "name": "lane:nightly", "color": "1d76db"}]),
            "AL",
        ))
        .expect(1)
        .mount(&server)
        .await;
    given("POST", "/repos/octo/bench/issues/9/comments")
        .and(body_json(json!({"body": "still reproduces"})))
        .respond_with(gh(
            201,
            json!({"id": 77, "body": "still reproduces", "user": {"login": "bot"}}),
            "CM",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let next = format!(
        "{}/repos/octo/bench/issues/9/comments?per_page=100&page=2",
        server.uri()
    );
    given("GET", "/repos/octo/bench/issues/9/comments")
        .and(query_param("per_page", "100"))
        .and(query_param_is_missing("page"))
        .respond_with(
            gh(200, json!([{"id": 1, "body": "one"}]), "L1")
                .insert_header("link", format!(r#"<{next}>; rel="next""#).as_str()),
        )
        .expect(1)
        .mount(&server)
        .await;
    given("GET", "/repos/octo/bench/issues/9/comments")
        .and(query_param("page", "2"))
        .respond_with(gh(200, json!([{"id": 2, "body": "two"}]), "L2"))
        .expect(1)
        .mount(&server)
        .await;
    // Labels: one exists, one is created, one is created by someone else first.
    given("GET", "/repos/octo/bench/labels/bench%3Adrift")
        .respond_with(gh(
            200,
            json!({"id": 1, "name": "bench:drift", "color": "ff0000"}),
            "G1",
        ))
        .expect(1)
        .mount(&server)
        .await;
    given("GET", "/repos/octo/bench/labels/lane%3A%20nightly")
        .respond_with(gh(404, json!({"message": "Not Found"}), "G2"))
        .expect(1)
        .mount(&server)
        .await;
    given("GET", "/repos/octo/bench/labels/raced")
        .respond_with(gh(404, json!({"message": "Not Found"}), "G3"))
        .expect(1)
        .mount(&server)
        .await;
    given("POST", "/repos/octo/bench/labels")
        .and(body_json(
            json!({"name": "lane: nightly", "color": "0e8a16", "description": "nightly lane"}),
        ))
        .respond_with(gh(
            201,
            json!({"id": 2, "name": "lane: nightly", "color": "0e8a16"}),
            "P2",
        ))
        .expect(1)
        .mount(&server)
        .await;
    given("POST", "/repos/octo/bench/labels")
        .and(body_json(json!({"name": "raced", "color": "ededed"})))
        .respond_with(gh(
            422,
            json!({"message": "Validation Failed", "errors": [{"resource": "Label", "code": "already_exists", "field": "name"}]}),
            "P3",
        ))
        .expect(1)
        .mount(&server)
        .await;

    let gh = client(&server, &clock).with_installation_token(&installation_token(Phase::Issues));
    let r = repo();
    assert_eq!(
        gh.close_issue(&r, 9).await.expect("close").state,
        IssueState::Closed
    );
    assert_eq!(
        gh.reopen_issue(&r, 9).await.expect("reopen").state,
        IssueState::Open
    );
    let update = IssueUpdate {
        title: Some("new".into()),
        body: Some("<!-- m -->".into()),
        labels: Some(vec!["a".into(), "b".into()]),
        state: None,
        state_reason: None,
    };
    gh.update_issue(&r, 9, &update).await.expect("update");
    // Adding labels keeps every label the issue has (one set meanwhile).
    let all = gh
        .add_labels(&r, 9, &["lane:nightly".to_owned()])
        .await
        .expect("add labels");
    assert_eq!(
        all.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
        ["bench:drift", "drift-accepted", "lane:nightly"]
    );
    assert!(gh.add_labels(&r, 9, &[]).await.is_err(), "nothing to add");
    let c = gh
        .create_comment(&r, 9, "still reproduces")
        .await
        .expect("comment");
    assert_eq!(c.id, 77);
    let all = gh.list_comments(&r, 9).await.expect("comments");
    assert_eq!(all.iter().map(|c| c.id).collect::<Vec<_>>(), [1, 2]);
    let spec = |name: &str, color: &str, description: Option<&str>| LabelSpec {
        name: name.into(),
        color: color.into(),
        description: description.map(Into::into),
    };
    let outcomes = gh
        .ensure_labels(
            &r,
            &[
                spec("bench:drift", "ff0000", None),
                spec("lane: nightly", "0e8a16", Some("nightly lane")),
                spec("raced", "ededed", None),
            ],
        )
        .await
        .expect("labels");
    assert_eq!(
        outcomes,
        [
            ("bench:drift".to_owned(), LabelOutcome::Existed),
            ("lane: nightly".to_owned(), LabelOutcome::Created),
            ("raced".to_owned(), LabelOutcome::CreatedConcurrently),
        ]
    );
    // An issues-phase token cannot write git data.
    let err = gh
        .update_ref(&r, &branch(), &git_sha('a'))
        .await
        .expect_err("wrong phase");
    assert!(
        matches!(
            err,
            GitHubError::PhaseForbids {
                phase: Phase::Issues,
                ..
            }
        ),
        "{err:?}"
    );
    server.verify().await;
}

async fn forbid_blob_and_git_writes(server: &MockServer) {
    Mock::given(path_regex(r"/git/"))
        .respond_with(ResponseTemplate::new(200))
        .with_priority(1)
        .expect(0)
        .named("any git data request during the issues phase")
        .mount(server)
        .await;
}

#[tokio::test]
async fn file_contents_and_recursive_trees() {
    let server = MockServer::start().await;
    let clock = clock();
    // GitHub wraps base64 at 60 columns.
    let content = "eyJzY2hlbWEiOiJiZW5jaG1hcmstcmVzdWx0L3YxIiwiY2FzZXMiOltdfQ==";
    let wrapped = format!("{}\n{}\n", &content[..40], &content[40..]);
    given("GET", "/repos/octo/bench/contents/records/ab%20c.json")
        .and(query_param("ref", "heads/benchmark-history"))
        .respond_with(gh(
            200,
            json!({"type": "file", "encoding": "base64", "size": 44, "name": "ab c.json",
                   "path": "records/ab c.json", "content": wrapped, "sha": sha('f'),
                   "_links": {"self": "u"}}),
            "F1",
        ))
        .expect(1)
        .mount(&server)
        .await;
    given("GET", "/repos/octo/bench/contents/records")
        .respond_with(gh(
            200,
            json!([{"type": "file", "name": "x", "path": "records/x", "sha": sha('1')}]),
            "F2",
        ))
        .expect(1)
        .mount(&server)
        .await;
    given("GET", &format!("/repos/octo/bench/git/trees/{}", sha('c')))
        .and(query_param("recursive", "1"))
        .respond_with(gh(
            200,
            json!({"sha": sha('c'), "url": "u", "truncated": false, "tree": [
                {"path": "records", "mode": "040000", "type": "tree", "sha": sha('2'), "url": "u"},
                {"path": "records/ab c.json", "mode": "100644", "type": "blob", "sha": sha('f'), "size": 44, "url": "u"}
            ]}),
            "T1",
        ))
        .expect(1)
        .mount(&server)
        .await;
    let gh = client(&server, &clock).with_installation_token(&installation_token(Phase::Contents));
    let file = gh
        .get_file(&repo(), "records/ab c.json", "heads/benchmark-history")
        .await
        .expect("file");
    assert_eq!(
        file.bytes,
        br#"{"schema":"benchmark-result/v1","cases":[]}"#
    );
    assert_eq!(file.sha, git_sha('f'));
    let err = gh
        .get_file(&repo(), "records", "heads/benchmark-history")
        .await
        .expect_err("a directory");
    assert!(
        matches!(err, GitHubError::UnexpectedResponse { .. }),
        "{err:?}"
    );
    assert!(matches!(
        gh.get_file(&repo(), "../etc/passwd", "main").await,
        Err(GitHubError::InvalidInput { .. })
    ));
    let tree = gh
        .get_tree_recursive(&repo(), &git_sha('c'))
        .await
        .expect("tree");
    assert!(!tree.truncated);
    assert_eq!(tree.tree[1].path, "records/ab c.json");
    assert_eq!(tree.tree[1].size, Some(44));
    server.verify().await;
}

#[tokio::test]
async fn content_creating_requests_are_paced_and_the_wait_is_reported() {
    let server = MockServer::start().await;
    let clock = clock();
    Mock::given(method("POST"))
        .and(path("/repos/octo/bench/issues/1/comments"))
        .respond_with(gh(201, json!({"id": 1, "body": "x"}), "C"))
        .expect(3)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path("/repos/octo/bench/issues/1/comments"))
        .respond_with(gh(200, json!([]), "L"))
        .expect(3)
        .mount(&server)
        .await;
    let gh = GitHubClient::builder()
        .base_url(server.uri())
        .clock(Arc::new(clock.clone()))
        .sleeper(Arc::new(clock.clone()))
        .pacing_limits(PacingLimits {
            per_minute: NonZeroU32::new(2).expect("non-zero"),
            per_hour: NonZeroU32::new(500).expect("non-zero"),
        })
        .build()
        .expect("client")
        .with_installation_token(&installation_token(Phase::Issues));
    for _ in 0..3 {
        gh.list_comments(&repo(), 1)
            .await
            .expect("reads are not paced");
    }
    assert!(clock.sleeps().is_empty());
    for _ in 0..3 {
        gh.create_comment(&repo(), 1, "x").await.expect("comment");
        clock.advance(Duration::from_secs(1));
    }
    assert_eq!(clock.sleeps(), [Duration::from_secs(58)]);
    let op = gh
        .metrics()
        .operation("issues.create_comment")
        .cloned()
        .expect("measured");
    assert_eq!(op.pacing_waited_ms, 58_000);
    assert_eq!(op.waited_ms, 58_000);
    assert_eq!(op.retry_waited_ms, 0);
    server.verify().await;
}

fn app_key() -> AppKey {
    AppKey::from_pem(
        AppId::new(4242),
        include_bytes!("../fixtures/test-app-key.pem"),
    )
    .expect("the test key parses")
}

fn decode_jwt(jwt: &str) -> benchops_github::JwtClaims {
    let key =
        jsonwebtoken::DecodingKey::from_rsa_pem(include_bytes!("../fixtures/test-app-key.pub.pem"))
            .expect("the test public key parses");
    let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    // The manual clock is in 2023; check the time claims by hand below.
    validation.validate_exp = false;
    validation.set_required_spec_claims(&["iat", "exp", "iss"]);
    validation.set_issuer(&["4242"]);
    jsonwebtoken::decode::<benchops_github::JwtClaims>(jwt, &key, &validation)
        .expect("signature and issuer verify")
        .claims
}

#[test]
fn app_jwt_is_rs256_backdated_and_short_lived() {
    let now = SystemTime::UNIX_EPOCH + Duration::from_secs(START);
    let jwt = app_key().jwt(now).expect("signs");
    assert_eq!(format!("{jwt:?}"), "Token(***)");
    let header = jsonwebtoken::decode_header(jwt.expose()).expect("header");
    assert_eq!(header.alg, jsonwebtoken::Algorithm::RS256);
    let claims = decode_jwt(jwt.expose());
    assert_eq!(claims.iss, "4242");
    assert_eq!(claims.iat, START - 60);
    assert_eq!(claims.exp, START + 540);
    assert!(
        claims.exp - START <= 600,
        "GitHub rejects exp more than 10 minutes ahead"
    );
    assert!(claims.iat < START, "iat is backdated against clock drift");
    // Tampering is caught by the public key.
    let mut forged = jwt.expose().to_owned();
    forged.pop();
    forged.push('A');
    let key =
        jsonwebtoken::DecodingKey::from_rsa_pem(include_bytes!("../fixtures/test-app-key.pub.pem"))
            .expect("key");
    let mut v = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::RS256);
    v.validate_exp = false;
    if forged != jwt.expose() {
        assert!(jsonwebtoken::decode::<benchops_github::JwtClaims>(&forged, &key, &v).is_err());
    }
    assert!(matches!(
        AppKey::from_pem(AppId::new(1), b"not a key"),
        Err(GitHubError::InvalidKey { .. })
    ));
}

#[tokio::test]
async fn installation_tokens_are_minted_for_one_phase_and_revoked() {
    let server = MockServer::start().await;
    let clock = clock();
    let accept = || header("accept", "application/vnd.github+json");
    let version = || header("x-github-api-version", "2022-11-28");
    Mock::given(method("GET"))
        .and(path("/repos/octo/bench/installation"))
        .and(accept())
        .and(version())
        .respond_with(gh(
            200,
            json!({"id": 99, "app_id": 4242, "account": {"login": "octo", "id": 1},
                   "repository_selection": "selected", "target_type": "Organization",
                   "permissions": {"contents": "write", "issues": "write", "metadata": "read"},
                   "events": ["push"]}),
            "I1",
        ))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/app/installations/99/access_tokens"))
        .and(accept())
        .and(version())
        .and(body_json(json!({"repositories": ["bench"], "permissions": {"contents": "write", "metadata": "read"}})))
        .respond_with(gh(
            201,
            json!({"token": TOKEN, "expires_at": "2023-11-14T23:13:20Z",
                   "permissions": {"contents": "write", "metadata": "read"},
                   "repository_selection": "selected",
                   "repositories": [{"id": 1, "name": "bench", "full_name": "octo/bench"}]}),
            "T1",
        ))
        .expect(1)
        .mount(&server)
        .await;
    Mock::given(method("POST"))
        .and(path("/app/installations/99/access_tokens"))
        .and(body_partial_json(
            json!({"permissions": {"issues": "write"}}),
        ))
        .respond_with(gh(500, json!({"message": "boom"}), "T2"))
        .expect(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("DELETE"))
        .and(path("/installation/token"))
        .and(header("authorization", format!("Bearer {TOKEN}").as_str()))
        .and(accept())
        .and(version())
        .respond_with(ResponseTemplate::new(204).insert_header("x-github-request-id", "D1"))
        .expect(1)
        .mount(&server)
        .await;

    let base = client(&server, &clock);
    let app = base.app(app_key());
    let installation = app.repo_installation(&repo()).await.expect("installation");
    assert_eq!(installation.id, InstallationId::new(99));
    assert_eq!(
        installation.account.as_ref().map(|a| a.login.as_str()),
        Some("octo")
    );
    let token = app
        .create_installation_token(installation.id, Phase::Contents, &[repo()])
        .await
        .expect("token");
    assert_eq!(token.phase, Phase::Contents);
    assert_eq!(token.expires_at.as_second(), 1_700_003_600);
    assert_eq!(token.repositories, ["bench"]);
    assert_eq!(
        token.permissions.get("contents").map(String::as_str),
        Some("write")
    );
    let shown = format!("{token:?}");
    assert!(
        !shown.contains(TOKEN) && shown.contains("Token(***)"),
        "{shown}"
    );

    // A 5xx while minting is not retried: the caller decides.
    let err = app
        .create_installation_token(installation.id, Phase::Issues, &[repo()])
        .await
        .expect_err("500");
    assert!(
        matches!(err, GitHubError::Server { status: 500, .. }),
        "{err:?}"
    );
    assert!(clock.sleeps().is_empty());

    let gh = base.with_installation_token(&token);
    assert_eq!(gh.phase(), Some(Phase::Contents));
    gh.revoke_token().await.expect("revoked");

    // The App requests carried a JWT for this App, signed at the clock's time.
    let requests = server.received_requests().await.expect("recording is on");
    let app_auth: Vec<String> = requests
        .iter()
        .filter(|r| r.url.path() != "/installation/token")
        .map(|r| {
            r.headers
                .get("authorization")
                .and_then(|v| v.to_str().ok())
                .expect("authorization header")
                .to_owned()
        })
        .collect();
    assert_eq!(app_auth.len(), 3);
    for value in app_auth {
        let jwt = value.strip_prefix("Bearer ").expect("Bearer scheme");
        let claims = decode_jwt(jwt);
        assert_eq!((claims.iat, claims.exp), (START - 60, START + 540));
    }
    let m = base.metrics();
    assert_eq!(
        m.operation("apps.revoke_installation_token")
            .map(|o| o.request_ids.clone()),
        Some(vec!["D1".to_owned()])
    );
    server.verify().await;
}

#[tokio::test]
async fn the_base_url_must_be_an_absolute_http_url() {
    for bad in ["api.github.com", "ftp://x", "https://x/api?q=1", ""] {
        let r = GitHubClient::builder().base_url(bad).build();
        assert!(matches!(r, Err(GitHubError::Config { .. })), "{bad:?}");
    }
    let c = GitHubClient::builder()
        .base_url("https://ghe.example/api/v3/")
        .build()
        .expect("GHES URL");
    assert_eq!(c.base_url(), "https://ghe.example/api/v3");
}

#[tokio::test]
async fn any_unmatched_route_fails_loudly() {
    // Sanity for the `.expect(0)` guards above: a request that matches no
    // mock gets wiremock's 404, which the client reports as NotFound.
    let server = MockServer::start().await;
    Mock::given(any())
        .and(path("/never"))
        .respond_with(ResponseTemplate::new(200))
        .expect(0)
        .mount(&server)
        .await;
    let gh = client(&server, &clock()).with_token(Token::new(TOKEN));
    let err = gh.get_ref(&repo(), &branch()).await.expect_err("unmatched");
    assert!(err.is_not_found());
    server.verify().await;
}
