//! Handoff refs (`refs/heads/benchmark-result/*`): listing by prefix,
//! deletion with its permission and 422s, the seeding helper; `GET /app`;
//! comment authors (the App's bot for tokens, a person for the seeding
//! helper).

use reqwest::Method;
use serde_json::{Value, json};

use crate::{Env, OWNER, REPO, Resp, env};

const HEX: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

async fn bearer(e: &Env, jwt: &str, path: &str) -> Resp {
    let r = e
        .http
        .get(e.url(path))
        .header("authorization", format!("Bearer {jwt}"))
        .send()
        .await
        .expect("answers");
    let status = r.status().as_u16();
    let headers = r.headers().clone();
    let body = r.json().await.unwrap_or(Value::Null);
    Resp {
        status,
        headers,
        body,
    }
}

fn names(r: &Resp) -> Vec<String> {
    r.body
        .as_array()
        .expect("an array of refs")
        .iter()
        .map(|v| v["ref"].as_str().expect("ref").to_owned())
        .collect()
}

#[tokio::test]
async fn handoff_refs_are_listed_by_prefix_read_and_deleted_once() {
    let e = env().await;
    let file = format!("{HEX}.json");
    let a = e
        .sim
        .push_handoff_ref(OWNER, REPO, "a", &file, b"{\"x\":1}");
    e.sim
        .push_handoff_ref(OWNER, REPO, "b/nested", &file, b"{\"x\":2}");
    // Not under the directory: a plain prefix without the slash matches it.
    e.sim.push_ref(
        OWNER,
        REPO,
        "heads/benchmark-result-x",
        &[("y.txt", b"y")],
        "other\n",
    );

    let under = e
        .call(
            Method::GET,
            &e.repo_path("/git/matching-refs/heads/benchmark-result/"),
            None,
        )
        .await;
    assert_eq!(under.status, 200, "{:?}", under.body);
    assert_eq!(
        names(&under),
        [
            "refs/heads/benchmark-result/a",
            "refs/heads/benchmark-result/b/nested"
        ]
    );
    assert_eq!(under.body[0]["object"]["sha"], json!(a));
    let plain = e
        .call(
            Method::GET,
            &e.repo_path("/git/matching-refs/heads/benchmark-result"),
            None,
        )
        .await;
    assert_eq!(names(&plain).len(), 3, "{:?}", plain.body);
    let none = e
        .call(Method::GET, &e.repo_path("/git/matching-refs/tags/"), None)
        .await;
    assert_eq!((none.status, none.body.clone()), (200, json!([])));
    // Pages like other lists.
    let page = e
        .call(
            Method::GET,
            &e.repo_path("/git/matching-refs/heads/?per_page=2"),
            None,
        )
        .await;
    assert_eq!(names(&page).len(), 2);
    assert!(
        page.header("link")
            .is_some_and(|l| l.contains("rel=\"next\"")),
        "{:?}",
        page.headers
    );

    // The handoff commit: a root commit whose tree holds the one file.
    let commit = e.sim.commit(OWNER, REPO, &a).expect("commit");
    assert!(commit.parents.is_empty());
    assert_eq!(
        e.sim
            .file_paths(OWNER, REPO, "refs/heads/benchmark-result/a"),
        std::slice::from_ref(&file)
    );
    assert_eq!(
        e.sim
            .file(OWNER, REPO, "refs/heads/benchmark-result/a", &file)
            .as_deref(),
        Some(&b"{\"x\":1}"[..])
    );

    // Delete: 204, then 422 "Reference does not exist".
    let path = e.repo_path("/git/refs/heads/benchmark-result/a");
    let gone = e.call(Method::DELETE, &path, None).await;
    assert_eq!((gone.status, gone.body.clone()), (204, Value::Null));
    let again = e.call(Method::DELETE, &path, None).await;
    assert_eq!(
        (again.status, again.message()),
        (422, "Reference does not exist")
    );
    assert_eq!(
        e.sim
            .refs(OWNER, REPO, "refs/heads/benchmark-result/")
            .into_iter()
            .map(|(n, _)| n)
            .collect::<Vec<_>>(),
        ["refs/heads/benchmark-result/b/nested"]
    );
    // The object stays (only the ref goes), as on GitHub.
    assert!(e.sim.commit(OWNER, REPO, &a).is_some());
    // The default branch cannot be deleted.
    let main = e
        .call(Method::DELETE, &e.repo_path("/git/refs/heads/main"), None)
        .await;
    assert_eq!(
        (main.status, main.message()),
        (422, "Cannot delete the default branch")
    );
}

#[tokio::test]
async fn listing_needs_contents_read_and_deleting_needs_contents_write() {
    let e = env().await;
    e.sim
        .push_handoff_ref(OWNER, REPO, "a", &format!("{HEX}.json"), b"{}");
    let read = e
        .sim
        .mint_token(e.installation_id, &[("contents", "read")], None);
    let issues = e
        .sim
        .mint_token(e.installation_id, &[("issues", "write")], None);
    let list = e.repo_path("/git/matching-refs/heads/benchmark-result/");
    let del = e.repo_path("/git/refs/heads/benchmark-result/a");

    let r = e.call_as(Some(&issues), Method::GET, &list, None).await;
    assert_eq!(r.status, 403);
    assert_eq!(
        r.header("x-accepted-github-permissions"),
        Some("contents=read")
    );
    let r = e.call_as(Some(&read), Method::GET, &list, None).await;
    assert_eq!(r.status, 200);
    let r = e.call_as(Some(&read), Method::DELETE, &del, None).await;
    assert_eq!(
        (r.status, r.header("x-accepted-github-permissions")),
        (403, Some("contents=write"))
    );
    assert_eq!(
        e.sim
            .refs(OWNER, REPO, "refs/heads/benchmark-result/")
            .len(),
        1,
        "a refused delete changes nothing"
    );

    // An empty repository: 409, as for the other ref endpoints.
    e.sim.create_empty_repo(OWNER, "empty");
    let r = e
        .call(
            Method::GET,
            &format!("/repos/{OWNER}/empty/git/matching-refs/heads/"),
            None,
        )
        .await;
    assert_eq!((r.status, r.message()), (409, "Git Repository is empty."));
}

#[tokio::test]
async fn the_app_reports_its_slug_to_a_jwt_only() {
    let e = env().await;
    let r = bearer(&e, &e.sim.app_jwt(), "/app").await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["slug"], "benchops-test");
    assert_eq!(r.body["id"], json!(e.sim.app_id()));
    assert_eq!(r.body["installations_count"], 1);
    assert_eq!(e.sim.bot_login(), "benchops-test[bot]");
    let r = e.call(Method::GET, "/app", None).await;
    assert_eq!(r.status, 401, "an installation token is not the App");
}

#[tokio::test]
async fn comments_record_their_author() {
    let e = env().await;
    let issue = e
        .call(
            Method::POST,
            &e.repo_path("/issues"),
            Some(json!({"title": "t"})),
        )
        .await;
    assert_eq!(issue.status, 201);
    let comments = e.repo_path("/issues/1/comments");
    let c = e
        .call(Method::POST, &comments, Some(json!({"body": "by the bot"})))
        .await;
    assert_eq!(c.status, 201);
    assert_eq!(c.body["user"]["login"], "benchops-test[bot]");
    assert_eq!(c.body["user"]["type"], "Bot");
    let id = e
        .sim
        .comment_as_user(OWNER, REPO, 1, "octocat", "by a person")
        .expect("the issue exists");
    assert_eq!(e.sim.comment_as_user(OWNER, REPO, 99, "octocat", "x"), None);

    let listed = e.call(Method::GET, &comments, None).await;
    let authors: Vec<(&str, &str)> = listed
        .body
        .as_array()
        .expect("comments")
        .iter()
        .map(|c| {
            (
                c["user"]["login"].as_str().expect("login"),
                c["user"]["type"].as_str().expect("type"),
            )
        })
        .collect();
    assert_eq!(
        authors,
        [("benchops-test[bot]", "Bot"), ("octocat", "User")]
    );
    assert_eq!(listed.body[1]["id"], json!(id));
    let snap = e.sim.comments(OWNER, REPO, 1);
    assert_eq!(
        snap.iter()
            .map(|c| (c.author.as_str(), c.bot, c.body.as_str()))
            .collect::<Vec<_>>(),
        [
            ("benchops-test[bot]", true, "by the bot"),
            ("octocat", false, "by a person")
        ]
    );
    let issue = &e.sim.issues(OWNER, REPO)[0];
    assert_eq!(issue.comments.len(), 2);
}
