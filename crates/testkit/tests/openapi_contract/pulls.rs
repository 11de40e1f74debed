//! The pull-request part of the contract flow: a branch, file writes
//! through the contents API, a pull request read until its mergeability
//! is known, commit statuses, a required status check, the merge and its
//! refusals, and a file deletion, each success and main error validated
//! like the rest.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use reqwest::Method;
use serde_json::{Value, json};

use crate::{Cred, Flow, OWNER, REPO};

const CHECK: &str = "benchops/check-instant";

/// Runs the pull-request requests with a token minted for installation
/// `iid` with `contents`, `pull_requests` and `statuses` write.
pub(crate) async fn flow(f: &mut Flow, iid: &str) {
    let iid: u64 = iid.parse().expect("installation id");
    let or = [("owner", OWNER), ("repo", REPO)];
    let p = Cred::Token(f.sim.mint_token(
        iid,
        &[
            ("contents", "write"),
            ("pull_requests", "write"),
            ("statuses", "write"),
        ],
        None,
    ));
    let main = f.sim.ref_sha(OWNER, REPO, "heads/main").expect("main");
    let (s, _) = f
        .call(
            &p,
            Method::POST,
            "/repos/{owner}/{repo}/git/refs",
            &or,
            "",
            Some(json!({"ref": "refs/heads/platform/change", "sha": main})),
        )
        .await;
    assert_eq!(s, 201);

    // Contents: create (201), update without `sha` (422), with it (200).
    // A wrong `sha` is a 409 whose schema is a `oneOf` of two error
    // schemas that any error body matches both of, so it cannot validate;
    // tests/sim/pulls.rs covers it.
    let contents = "/repos/{owner}/{repo}/contents/{path}";
    let file = [or[0], or[1], ("path", "platform/probe.txt")];
    let put = |text: &str, sha: Option<&str>| {
        let mut b = json!({
            "message": "platform probe",
            "content": STANDARD.encode(text),
            "branch": "platform/change",
        });
        if let Some(sha) = sha {
            b["sha"] = json!(sha);
        }
        Some(b)
    };
    let (s, made) = f
        .call(&p, Method::PUT, contents, &file, "", put("one\n", None))
        .await;
    assert_eq!(
        (s, made["content"]["path"].as_str()),
        (201, Some("platform/probe.txt"))
    );
    let blob = made["content"]["sha"]
        .as_str()
        .expect("blob sha")
        .to_owned();
    let (s, _) = f
        .call(&p, Method::PUT, contents, &file, "", put("two\n", None))
        .await;
    assert_eq!(s, 422);
    let (s, updated) = f
        .call(
            &p,
            Method::PUT,
            contents,
            &file,
            "",
            put("two\n", Some(&blob)),
        )
        .await;
    assert_eq!(
        (s, updated["commit"]["parents"].as_array().map(Vec::len)),
        (200, Some(1))
    );
    let blob = updated["content"]["sha"]
        .as_str()
        .expect("blob sha")
        .to_owned();

    // A pull request, read until its mergeability is known.
    let pulls = "/repos/{owner}/{repo}/pulls";
    let open = Some(json!({
        "title": "Platform probe",
        "head": "platform/change",
        "base": "main",
        "body": "Opened by the contract flow.",
    }));
    let (s, pr) = f.call(&p, Method::POST, pulls, &or, "", open.clone()).await;
    assert_eq!(
        (s, pr["state"].as_str(), pr["mergeable"].clone()),
        (201, Some("open"), Value::Null)
    );
    let number = pr["number"].as_u64().expect("number").to_string();
    let head = pr["head"]["sha"].as_str().expect("head sha").to_owned();
    let (s, _) = f.call(&p, Method::POST, pulls, &or, "", open).await;
    assert_eq!(s, 422);
    let one = "/repos/{owner}/{repo}/pulls/{pull_number}";
    let this = [or[0], or[1], ("pull_number", number.as_str())];
    let (s, first) = f.call(&p, Method::GET, one, &this, "", None).await;
    assert_eq!((s, first["mergeable"].clone()), (200, Value::Null));
    let (s, second) = f.call(&p, Method::GET, one, &this, "", None).await;
    assert_eq!(
        (
            s,
            second["mergeable"].as_bool(),
            second["mergeable_state"].as_str()
        ),
        (200, Some(true), Some("clean"))
    );
    let (s, _) = f
        .call(
            &p,
            Method::GET,
            one,
            &[or[0], or[1], ("pull_number", "999")],
            "",
            None,
        )
        .await;
    assert_eq!(s, 404);

    // Statuses: pending, then the required check succeeds. The
    // description lists only 201 for creating a status, so its 422s are
    // in tests/sim/pulls.rs.
    f.sim.require_status_check(OWNER, REPO, "main", CHECK);
    let combined = "/repos/{owner}/{repo}/commits/{ref}/status";
    let (s, none) = f
        .call(
            &p,
            Method::GET,
            combined,
            &[or[0], or[1], ("ref", "platform/change")],
            "",
            None,
        )
        .await;
    assert_eq!(
        (s, none["state"].as_str(), none["total_count"].as_u64()),
        (200, Some("pending"), Some(0))
    );
    let (s, _) = f
        .call(
            &p,
            Method::GET,
            combined,
            &[or[0], or[1], ("ref", "no-such-branch")],
            "",
            None,
        )
        .await;
    assert_eq!(s, 404);
    let merge = "/repos/{owner}/{repo}/pulls/{pull_number}/merge";
    let (s, blocked) = f.call(&p, Method::PUT, merge, &this, "", None).await;
    assert_eq!(
        (s, blocked["message"].as_str()),
        (
            405,
            Some("Required status check \"benchops/check-instant\" is expected.")
        )
    );
    let statuses = "/repos/{owner}/{repo}/statuses/{sha}";
    let at_head = [or[0], or[1], ("sha", head.as_str())];
    let (s, posted) = f
        .call(
            &p,
            Method::POST,
            statuses,
            &at_head,
            "",
            Some(json!({"state": "success", "context": CHECK, "description": "ok", "target_url": "https://ci.example.com/1"})),
        )
        .await;
    assert_eq!((s, posted["state"].as_str()), (201, Some("success")));
    let (s, ok) = f
        .call(
            &p,
            Method::GET,
            combined,
            &[or[0], or[1], ("ref", head.as_str())],
            "",
            None,
        )
        .await;
    assert_eq!((s, ok["state"].as_str()), (200, Some("success")));

    // The merge: a stale `sha` (409), an unknown method (422), then 200;
    // again is 405; an unknown number 404.
    let (s, _) = f
        .call(
            &p,
            Method::PUT,
            merge,
            &this,
            "",
            Some(json!({"sha": main})),
        )
        .await;
    assert_eq!(s, 409);
    let (s, _) = f
        .call(
            &p,
            Method::PUT,
            merge,
            &this,
            "",
            Some(json!({"merge_method": "octopus"})),
        )
        .await;
    assert_eq!(s, 422);
    let (s, merged) = f
        .call(
            &p,
            Method::PUT,
            merge,
            &this,
            "",
            Some(json!({"sha": head, "merge_method": "merge", "commit_title": "Merge the probe"})),
        )
        .await;
    assert_eq!((s, merged["merged"].as_bool()), (200, Some(true)));
    let (s, _) = f.call(&p, Method::PUT, merge, &this, "", None).await;
    assert_eq!(s, 405);
    let (s, _) = f
        .call(
            &p,
            Method::PUT,
            merge,
            &[or[0], or[1], ("pull_number", "999")],
            "",
            None,
        )
        .await;
    assert_eq!(s, 404);
    let (s, closed) = f.call(&p, Method::GET, one, &this, "", None).await;
    assert_eq!(
        (
            s,
            closed["state"].as_str(),
            closed["merged"].as_bool(),
            closed["merge_commit_sha"].as_str()
        ),
        (200, Some("closed"), Some(true), merged["sha"].as_str())
    );

    // Deleting the file: a wrong `sha` (409), the right one (200), then
    // it is gone (404).
    let delete = |sha: &str| {
        Some(json!({"message": "drop the probe", "sha": sha, "branch": "platform/change"}))
    };
    let (s, _) = f
        .call(&p, Method::DELETE, contents, &file, "", delete(&main))
        .await;
    assert_eq!(s, 409);
    let (s, gone) = f
        .call(&p, Method::DELETE, contents, &file, "", delete(&blob))
        .await;
    assert_eq!((s, gone["content"].clone()), (200, Value::Null));
    let (s, _) = f
        .call(&p, Method::DELETE, contents, &file, "", delete(&blob))
        .await;
    assert_eq!(s, 404);

    // A token without `pull_requests` cannot open one (403 is described).
    let contents_only = Cred::Token(f.sim.mint_token(iid, &[("contents", "write")], None));
    let (s, _) = f
        .call(
            &contents_only,
            Method::POST,
            pulls,
            &or,
            "",
            Some(json!({"title": "t", "head": "platform/change", "base": "main"})),
        )
        .await;
    assert_eq!(s, 403);
}
