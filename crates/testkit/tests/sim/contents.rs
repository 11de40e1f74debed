//! Writing files through the contents API: create, update with the
//! blob `sha` GitHub requires, delete, on the default branch or another,
//! and the refusals GitHub answers.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::Method;
use serde_json::{Value, json};

use crate::pulls::platform_token;
use crate::{Env, OWNER, REPO, Resp, env};

async fn put(e: &Env, t: &str, path: &str, body: Value) -> Resp {
    e.call_as(
        Some(t),
        Method::PUT,
        &e.repo_path(&format!("/contents/{path}")),
        Some(body),
    )
    .await
}

async fn delete(e: &Env, t: &str, path: &str, body: Value) -> Resp {
    e.call_as(
        Some(t),
        Method::DELETE,
        &e.repo_path(&format!("/contents/{path}")),
        Some(body),
    )
    .await
}

#[tokio::test]
async fn files_are_created_updated_with_their_sha_and_deleted() {
    let e = env().await;
    let t = platform_token(&e);
    let main = e.sim.ref_sha(OWNER, REPO, "heads/main").expect("main");
    let path = "results/lane/probe.json";

    let made = put(
        &e,
        &t,
        path,
        json!({"message": "add probe", "content": STANDARD.encode("one\n")}),
    )
    .await;
    assert_eq!(made.status, 201, "{:?}", made.body);
    let blob = made.body["content"]["sha"]
        .as_str()
        .expect("blob")
        .to_owned();
    assert_eq!(
        (
            made.body["content"]["name"].as_str(),
            made.body["content"]["path"].as_str(),
            made.body["content"]["type"].as_str()
        ),
        (Some("probe.json"), Some(path), Some("file"))
    );
    let commit = made.body["commit"]["sha"]
        .as_str()
        .expect("commit")
        .to_owned();
    assert_eq!(made.body["commit"]["parents"][0]["sha"], main.as_str());
    assert_eq!(made.body["commit"]["message"], "add probe");
    assert_eq!(made.body["commit"]["author"]["name"], "benchops-test[bot]");
    assert_eq!(
        e.sim.ref_sha(OWNER, REPO, "heads/main").as_deref(),
        Some(commit.as_str())
    );
    assert_eq!(
        e.sim.file(OWNER, REPO, "main", path).as_deref(),
        Some(&b"one\n"[..])
    );

    let r = put(
        &e,
        &t,
        path,
        json!({"message": "m", "content": STANDARD.encode("two\n")}),
    )
    .await;
    assert_eq!(
        (r.status, r.message()),
        (422, "Invalid request.\n\n\"sha\" wasn't supplied.")
    );
    let r = put(
        &e,
        &t,
        path,
        json!({"message": "m", "content": STANDARD.encode("two\n"), "sha": main}),
    )
    .await;
    assert_eq!(
        (r.status, r.message()),
        (409, format!("{path} does not match {main}").as_str())
    );
    let r = put(
        &e,
        &t,
        path,
        json!({"message": "m", "content": "not base64!", "sha": blob}),
    )
    .await;
    assert_eq!(r.status, 422);
    let updated = put(
        &e,
        &t,
        path,
        json!({"message": "update probe", "content": STANDARD.encode("two\n"), "sha": blob,
               "committer": {"name": "Lane Bot", "email": "lane@example.com"}}),
    )
    .await;
    assert_eq!(updated.status, 200, "{:?}", updated.body);
    assert_eq!(updated.body["commit"]["parents"][0]["sha"], commit.as_str());
    assert_eq!(updated.body["commit"]["committer"]["name"], "Lane Bot");
    assert_eq!(updated.body["commit"]["author"]["name"], "Lane Bot");
    let blob2 = updated.body["content"]["sha"]
        .as_str()
        .expect("blob")
        .to_owned();
    assert_eq!(
        e.sim.file(OWNER, REPO, "main", path).as_deref(),
        Some(&b"two\n"[..])
    );
    // The sha of a file that does not exist is ignored, as on GitHub.
    let r = put(
        &e,
        &t,
        "other.txt",
        json!({"message": "m", "content": "", "sha": blob}),
    )
    .await;
    assert_eq!(r.status, 201);

    let r = delete(&e, &t, path, json!({"message": "drop"})).await;
    assert_eq!(
        (r.status, r.message()),
        (422, "Invalid request.\n\n\"sha\" wasn't supplied.")
    );
    let r = delete(&e, &t, path, json!({"message": "drop", "sha": blob})).await;
    assert_eq!(
        (r.status, r.message()),
        (409, format!("{path} does not match {blob}").as_str())
    );
    let gone = delete(&e, &t, path, json!({"message": "drop", "sha": blob2})).await;
    assert_eq!(
        (gone.status, gone.body["content"].clone()),
        (200, Value::Null)
    );
    assert_eq!(gone.body["commit"]["message"], "drop");
    assert_eq!(e.sim.file(OWNER, REPO, "main", path), None);
    assert!(
        !e.sim
            .file_paths(OWNER, REPO, "main")
            .iter()
            .any(|p| p.starts_with("results")),
        "empty directories go"
    );
    let r = delete(&e, &t, path, json!({"message": "drop", "sha": blob2})).await;
    assert_eq!(r.status, 404);
    let r = delete(&e, &t, "results", json!({"message": "drop", "sha": blob2})).await;
    assert_eq!(r.status, 404);
}

#[tokio::test]
async fn writes_go_to_the_named_branch_which_must_exist() {
    let e = env().await;
    let t = platform_token(&e);
    let body =
        |branch: &str| json!({"message": "m", "content": STANDARD.encode("b\n"), "branch": branch});
    let r = put(&e, &t, "b.txt", body("nope")).await;
    assert_eq!((r.status, r.message()), (404, "Branch nope not found"));
    let main = e.sim.ref_sha(OWNER, REPO, "heads/main").expect("main");
    let r = e
        .call_as(
            Some(&t),
            Method::POST,
            &e.repo_path("/git/refs"),
            Some(json!({"ref": "refs/heads/side", "sha": main})),
        )
        .await;
    assert_eq!(r.status, 201);
    assert_eq!(put(&e, &t, "b.txt", body("side")).await.status, 201);
    assert_eq!(
        e.sim.file(OWNER, REPO, "side", "b.txt").as_deref(),
        Some(&b"b\n"[..])
    );
    assert_eq!(e.sim.file(OWNER, REPO, "main", "b.txt"), None);
    assert_eq!(
        e.sim.ref_sha(OWNER, REPO, "heads/main").as_deref(),
        Some(main.as_str())
    );
    // A directory is not a file.
    let r = put(&e, &t, "dir/f.txt", body("side")).await;
    assert_eq!(r.status, 201);
    let r = put(&e, &t, "dir", body("side")).await;
    assert_eq!(r.status, 422);

    // An empty repository takes its first commit on the default branch.
    e.sim.create_empty_repo(OWNER, "empty");
    let r = e
        .call_as(
            Some(&t),
            Method::PUT,
            &format!("/repos/{OWNER}/empty/contents/README.md"),
            Some(json!({"message": "first", "content": STANDARD.encode("# empty\n")})),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
    assert_eq!(r.body["commit"]["parents"], json!([]));
    assert!(e.sim.ref_sha(OWNER, "empty", "heads/main").is_some());
}

#[tokio::test]
async fn rulesets_refuse_contents_writes_with_a_409() {
    let e = env().await;
    let t = platform_token(&e);
    e.sim.insert_ruleset(
        OWNER,
        REPO,
        json!({"name": "frozen", "enforcement": "active",
               "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
               "rules": [{"type": "update"}]}),
    );
    let r = put(&e, &t, "x.txt", json!({"message": "m", "content": ""})).await;
    assert_eq!(r.status, 409);
    assert!(
        r.message().starts_with("Repository rule violations found"),
        "{}",
        r.message()
    );
}
