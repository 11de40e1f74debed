//! Git data over HTTP: trees, commits, refs with fast-forward rules, and
//! the contents API.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::Method;
use serde_json::{Value, json};

use crate::{Env, OWNER, REPO, env};

const HISTORY: &str = "heads/benchmark-history";

async fn main_sha(e: &Env) -> String {
    let r = e
        .call(Method::GET, &e.repo_path("/git/ref/heads/main"), None)
        .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["ref"], "refs/heads/main");
    assert_eq!(r.body["object"]["type"], "commit");
    r.body["object"]["sha"].as_str().expect("sha").to_owned()
}

async fn tree_of(e: &Env, commit: &str) -> String {
    let r = e
        .call(
            Method::GET,
            &e.repo_path(&format!("/git/commits/{commit}")),
            None,
        )
        .await;
    assert_eq!(r.status, 200);
    r.body["tree"]["sha"].as_str().expect("tree sha").to_owned()
}

/// Creates a tree (inline content over `base`) and a commit on `parent`.
async fn commit_file(e: &Env, parent: &str, path: &str, content: &str) -> String {
    let base = tree_of(e, parent).await;
    let t = e
        .call(
            Method::POST,
            &e.repo_path("/git/trees"),
            Some(json!({
                "base_tree": base,
                "tree": [{"path": path, "mode": "100644", "type": "blob", "content": content}],
            })),
        )
        .await;
    assert_eq!(t.status, 201, "{:?}", t.body);
    let c = e
        .call(
            Method::POST,
            &e.repo_path("/git/commits"),
            Some(json!({"message": format!("add {path}"), "tree": t.body["sha"], "parents": [parent]})),
        )
        .await;
    assert_eq!(c.status, 201, "{:?}", c.body);
    c.body["sha"].as_str().expect("commit sha").to_owned()
}

async fn patch_ref(e: &Env, sha: &str, force: Option<bool>) -> crate::Resp {
    let mut body = json!({ "sha": sha });
    if let Some(f) = force {
        body["force"] = Value::Bool(f);
    }
    e.call(
        Method::PATCH,
        &e.repo_path(&format!("/git/refs/{HISTORY}")),
        Some(body),
    )
    .await
}

#[tokio::test]
async fn refs_are_created_once_and_only_fast_forwarded() {
    let e = env().await;
    let base = main_sha(&e).await;

    let missing = e
        .call(
            Method::GET,
            &e.repo_path(&format!("/git/ref/{HISTORY}")),
            None,
        )
        .await;
    assert_eq!(missing.status, 404);

    let create = json!({"ref": format!("refs/{HISTORY}"), "sha": base});
    let created = e
        .call(
            Method::POST,
            &e.repo_path("/git/refs"),
            Some(create.clone()),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    assert_eq!(created.body["object"]["sha"], base.as_str());
    assert!(created.header("location").is_some());
    let again = e
        .call(Method::POST, &e.repo_path("/git/refs"), Some(create))
        .await;
    assert_eq!(again.status, 422);
    assert_eq!(again.message(), "Reference already exists");

    let bad_name = e
        .call(
            Method::POST,
            &e.repo_path("/git/refs"),
            Some(json!({"ref": "benchmark-history", "sha": base})),
        )
        .await;
    assert_eq!(bad_name.status, 422);

    // Fast forward.
    let c1 = commit_file(&e, &base, "results/lane/2026/11/x.json", "{}\n").await;
    let ff = patch_ref(&e, &c1, Some(false)).await;
    assert_eq!(ff.status, 200, "{:?}", ff.body);
    assert_eq!(ff.body["object"]["sha"], c1.as_str());
    assert_eq!(e.sim.ref_sha(OWNER, REPO, HISTORY), Some(c1.clone()));

    // A sibling of c1 (parent: base) is not a fast forward from c1.
    let sibling = commit_file(&e, &base, "results/lane/2026/11/y.json", "{}\n").await;
    let nonff = patch_ref(&e, &sibling, None).await;
    assert_eq!(nonff.status, 422);
    assert_eq!(nonff.message(), "Update is not a fast forward");
    assert_eq!(
        nonff.body["documentation_url"],
        "https://docs.github.com/rest/git/refs#update-a-reference"
    );
    assert_eq!(e.sim.ref_sha(OWNER, REPO, HISTORY), Some(c1.clone()));

    // Setting the same commit again is allowed (idempotent).
    assert_eq!(patch_ref(&e, &c1, None).await.status, 200);

    // An unknown commit and an unknown ref.
    let unknown = patch_ref(&e, &"0".repeat(40), None).await;
    assert_eq!(unknown.status, 422);
    assert_eq!(unknown.message(), "Object does not exist");
    let no_ref = e
        .call(
            Method::PATCH,
            &e.repo_path("/git/refs/heads/nope"),
            Some(json!({"sha": c1})),
        )
        .await;
    assert_eq!(no_ref.status, 422);
    assert_eq!(no_ref.message(), "Reference does not exist");

    // The simulator honours force (benchops never sends it; the request
    // log would show it).
    let forced = patch_ref(&e, &sibling, Some(true)).await;
    assert_eq!(forced.status, 200);
    assert!(
        e.sim
            .requests()
            .iter()
            .any(|r| r.body.as_ref().is_some_and(|b| b["force"] == true))
    );
}

#[tokio::test]
async fn empty_repository_is_a_conflict() {
    let e = env().await;
    e.sim.create_empty_repo(OWNER, "empty");
    let r = e
        .call(
            Method::GET,
            &format!("/repos/{OWNER}/empty/git/ref/heads/main"),
            None,
        )
        .await;
    assert_eq!(r.status, 409);
    assert_eq!(r.message(), "Git Repository is empty.");
}

#[tokio::test]
async fn trees_list_recursively_and_contents_decode() {
    let e = env().await;
    let base = main_sha(&e).await;
    let payload = "{\"median\":1.5}\n".repeat(10);
    let c = commit_file(&e, &base, "results/lane/2026/11/x.json", &payload).await;
    e.call(
        Method::POST,
        &e.repo_path("/git/refs"),
        Some(json!({"ref": format!("refs/{HISTORY}"), "sha": c})),
    )
    .await;

    let flat = e
        .call(Method::GET, &e.repo_path(&format!("/git/trees/{c}")), None)
        .await;
    assert_eq!(flat.status, 200);
    let paths = |v: &Value| -> Vec<String> {
        v["tree"]
            .as_array()
            .expect("entries")
            .iter()
            .map(|t| t["path"].as_str().expect("path").to_owned())
            .collect()
    };
    assert_eq!(paths(&flat.body), ["README.md", "results"]);
    let rec = e
        .call(
            Method::GET,
            &e.repo_path("/git/trees/benchmark-history?recursive=1"),
            None,
        )
        .await;
    assert_eq!(rec.status, 200);
    assert_eq!(
        paths(&rec.body),
        [
            "README.md",
            "results",
            "results/lane",
            "results/lane/2026",
            "results/lane/2026/11",
            "results/lane/2026/11/x.json"
        ]
    );
    assert_eq!(rec.body["truncated"], false);
    let last = &rec.body["tree"][5];
    assert_eq!(last["type"], "blob");
    assert_eq!(last["mode"], "100644");
    assert_eq!(last["size"], payload.len());
    assert_eq!(rec.body["tree"][1]["mode"], "040000");

    let file = e
        .call(
            Method::GET,
            &e.repo_path("/contents/results/lane/2026/11/x.json?ref=benchmark-history"),
            None,
        )
        .await;
    assert_eq!(file.status, 200, "{:?}", file.body);
    assert_eq!(file.body["type"], "file");
    assert_eq!(file.body["encoding"], "base64");
    assert_eq!(file.body["sha"], last["sha"]);
    let content = file.body["content"].as_str().expect("content");
    assert!(content.lines().all(|l| l.len() <= 60), "wrapped at 60");
    let decoded = STANDARD
        .decode(content.replace('\n', ""))
        .expect("valid base64");
    assert_eq!(decoded, payload.as_bytes());
    assert_eq!(
        e.sim.file(
            OWNER,
            REPO,
            "benchmark-history",
            "results/lane/2026/11/x.json"
        ),
        Some(payload.into_bytes())
    );

    let dir = e
        .call(
            Method::GET,
            &e.repo_path("/contents/results?ref=benchmark-history"),
            None,
        )
        .await;
    assert_eq!(dir.status, 200);
    assert_eq!(dir.body[0]["type"], "dir");
    assert_eq!(dir.body[0]["path"], "results/lane");

    // The default branch has no results; unknown refs say so.
    let on_main = e
        .call(Method::GET, &e.repo_path("/contents/results/lane"), None)
        .await;
    assert_eq!(on_main.status, 404);
    let bad_ref = e
        .call(
            Method::GET,
            &e.repo_path("/contents/README.md?ref=nope"),
            None,
        )
        .await;
    assert_eq!(bad_ref.status, 404);
    assert_eq!(bad_ref.message(), "No commit found for the ref nope");
}

#[tokio::test]
async fn bad_git_requests_are_rejected_with_github_errors() {
    let e = env().await;
    let base = main_sha(&e).await;
    let tree = tree_of(&e, &base).await;
    let cases = [
        (
            "/git/trees",
            json!({"tree": [{"path": "x", "mode": "100600", "type": "blob", "content": "x"}]}),
        ),
        (
            "/git/trees",
            json!({"tree": [{"path": "x", "mode": "040000", "type": "blob", "content": "x"}]}),
        ),
        (
            "/git/trees",
            json!({"tree": [{"path": "x", "mode": "100644", "type": "blob", "sha": "0".repeat(40)}]}),
        ),
        (
            "/git/trees",
            json!({"base_tree": "1".repeat(40), "tree": []}),
        ),
        (
            "/git/trees",
            json!({"tree": [{"path": "README.md/inside", "mode": "100644", "type": "blob", "content": "x"}], "base_tree": tree}),
        ),
        ("/git/commits", json!({"message": "m"})),
        (
            "/git/commits",
            json!({"message": "m", "tree": "2".repeat(40)}),
        ),
        (
            "/git/commits",
            json!({"message": "m", "tree": tree, "parents": ["3".repeat(40)]}),
        ),
        ("/git/refs", json!({"ref": "refs/heads/x"})),
    ];
    for (path, body) in cases {
        let r = e
            .call(Method::POST, &e.repo_path(path), Some(body.clone()))
            .await;
        assert_eq!(r.status, 422, "{path} {body}: {:?}", r.body);
        assert!(r.body["documentation_url"].is_string());
    }
    let raw = e
        .http
        .post(e.url(&e.repo_path("/git/trees")))
        .header("authorization", format!("token {}", e.token))
        .body("{not json")
        .send()
        .await
        .expect("answers");
    assert_eq!(raw.status(), 400);

    // Deleting a path with a null sha.
    let del = e
        .call(
            Method::POST,
            &e.repo_path("/git/trees"),
            Some(json!({"base_tree": tree, "tree": [{"path": "README.md", "mode": "100644", "type": "blob", "sha": null}]})),
        )
        .await;
    assert_eq!(del.status, 201);
    assert_eq!(del.body["sha"], benchops_testkit::sim::git::EMPTY_TREE);
}
