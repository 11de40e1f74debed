//! Pull requests over HTTP: opening one, mergeability that is computed
//! after a delay (in reads or in seconds of the simulator's clock), the
//! merge commit, conflicts, required status checks, merges that fail on
//! demand, the refusals and the permissions.

use benchops_testkit::sim::{Fault, FaultRule, MergeableDelay};
use reqwest::Method;
use serde_json::{Value, json};

use crate::{Env, OWNER, REPO, Resp, env};

pub const CHECK: &str = "benchops/check-instant";

/// A token with what the platform lane uses: contents, pull requests and
/// statuses write.
pub fn platform_token(e: &Env) -> String {
    e.sim.mint_token(
        e.installation_id,
        &[
            ("contents", "write"),
            ("pull_requests", "write"),
            ("statuses", "write"),
        ],
        None,
    )
}

/// Creates `refs/heads/<name>` at main's tip over HTTP.
pub async fn branch(e: &Env, t: &str, name: &str) {
    let main = e.sim.ref_sha(OWNER, REPO, "heads/main").expect("main");
    let r = e
        .call_as(
            Some(t),
            Method::POST,
            &e.repo_path("/git/refs"),
            Some(json!({"ref": format!("refs/heads/{name}"), "sha": main})),
        )
        .await;
    assert_eq!(r.status, 201, "{:?}", r.body);
}

/// Writes a file on a branch through the contents API, replacing it when
/// it exists.
pub async fn write(e: &Env, t: &str, branch: &str, path: &str, text: &str) -> Resp {
    use base64::Engine as _;
    let current = e.sim.file(OWNER, REPO, branch, path).map(|bytes| {
        benchops_testkit::sim::git::hash_object(
            benchops_testkit::sim::git::ObjectKind::Blob,
            &bytes,
        )
    });
    let mut body = json!({
        "message": format!("write {path}"),
        "content": base64::engine::general_purpose::STANDARD.encode(text),
        "branch": branch,
    });
    if let Some(sha) = current {
        body["sha"] = json!(sha);
    }
    let r = e
        .call_as(
            Some(t),
            Method::PUT,
            &e.repo_path(&format!("/contents/{path}")),
            Some(body),
        )
        .await;
    assert!(r.status == 200 || r.status == 201, "{:?}", r.body);
    r
}

pub async fn open(e: &Env, t: &str, head: &str, base: &str) -> Resp {
    e.call_as(
        Some(t),
        Method::POST,
        &e.repo_path("/pulls"),
        Some(json!({"title": format!("Change {head}"), "head": head, "base": base})),
    )
    .await
}

pub async fn get(e: &Env, t: &str, number: u64) -> Resp {
    e.call_as(
        Some(t),
        Method::GET,
        &e.repo_path(&format!("/pulls/{number}")),
        None,
    )
    .await
}

pub async fn merge(e: &Env, t: &str, number: u64, body: Option<Value>) -> Resp {
    e.call_as(
        Some(t),
        Method::PUT,
        &e.repo_path(&format!("/pulls/{number}/merge")),
        body,
    )
    .await
}

fn number(r: &Resp) -> u64 {
    r.body["number"].as_u64().expect("pull request number")
}

#[tokio::test]
async fn a_pull_request_opens_becomes_mergeable_and_merges_into_a_two_parent_commit() {
    let e = env().await;
    let t = platform_token(&e);
    branch(&e, &t, "lane/change").await;
    write(
        &e,
        &t,
        "lane/change",
        "lane/result.json",
        "{\"ok\": true}\n",
    )
    .await;
    let main_before = e.sim.ref_sha(OWNER, REPO, "heads/main").expect("main");
    let head = e
        .sim
        .ref_sha(OWNER, REPO, "heads/lane/change")
        .expect("head");

    let pr = open(&e, &t, "lane/change", "main").await;
    assert_eq!(pr.status, 201, "{:?}", pr.body);
    let n = number(&pr);
    assert_eq!(pr.header("location"), pr.body["url"].as_str());
    assert_eq!(
        (
            pr.body["state"].as_str(),
            pr.body["merged"].as_bool(),
            pr.body["mergeable"].clone(),
            pr.body["mergeable_state"].as_str(),
        ),
        (Some("open"), Some(false), Value::Null, Some("unknown"))
    );
    assert_eq!(pr.body["head"]["ref"], "lane/change");
    assert_eq!(pr.body["head"]["sha"], head.as_str());
    assert_eq!(pr.body["base"]["ref"], "main");
    assert_eq!(pr.body["base"]["sha"], main_before.as_str());
    assert_eq!(
        (
            pr.body["commits"].as_u64(),
            pr.body["changed_files"].as_u64(),
            pr.body["additions"].as_u64()
        ),
        (Some(1), Some(1), Some(1))
    );
    assert!(pr.header("x-github-request-id").is_some());
    assert!(pr.header("x-ratelimit-remaining").is_some());

    // Default delay: the first read is null, the second knows.
    let first = get(&e, &t, n).await;
    assert_eq!(
        (first.status, first.body["mergeable"].clone()),
        (200, Value::Null)
    );
    assert_eq!(e.sim.pulls(OWNER, REPO)[0].mergeable, None);
    let second = get(&e, &t, n).await;
    assert_eq!(
        (
            second.body["mergeable"].as_bool(),
            second.body["mergeable_state"].as_str()
        ),
        (Some(true), Some("clean"))
    );
    assert_eq!(e.sim.pulls(OWNER, REPO)[0].mergeable, Some(true));

    // Seconds on the simulator's clock: moving the head restarts it.
    e.sim.set_mergeable_delay(MergeableDelay::Seconds(30));
    e.sim.set_now(1_793_700_000);
    write(&e, &t, "lane/change", "lane/second.json", "{}\n").await;
    let head = e
        .sim
        .ref_sha(OWNER, REPO, "heads/lane/change")
        .expect("head");
    let r = get(&e, &t, n).await;
    assert_eq!(
        (r.body["mergeable"].clone(), r.body["head"]["sha"].as_str()),
        (Value::Null, Some(head.as_str()))
    );
    e.sim.advance_clock(29);
    assert_eq!(get(&e, &t, n).await.body["mergeable"], Value::Null);
    e.sim.advance_clock(1);
    assert_eq!(get(&e, &t, n).await.body["mergeable"], true);

    // A number of reads.
    e.sim.set_mergeable_delay(MergeableDelay::Reads(3));
    e.sim
        .advance_ref(OWNER, REPO, "heads/lane/change")
        .expect("moved");
    let seen: Vec<Value> = {
        let mut v = Vec::new();
        for _ in 0..4 {
            v.push(get(&e, &t, n).await.body["mergeable"].clone());
        }
        v
    };
    assert_eq!(
        seen,
        [Value::Null, Value::Null, Value::Null, Value::Bool(true)]
    );
    let head = e
        .sim
        .ref_sha(OWNER, REPO, "heads/lane/change")
        .expect("head");

    let m = merge(&e, &t, n, Some(json!({"sha": head}))).await;
    assert_eq!(m.status, 200, "{:?}", m.body);
    assert_eq!(
        (m.body["merged"].as_bool(), m.body["message"].as_str()),
        (Some(true), Some("Pull Request successfully merged"))
    );
    let merge_sha = m.body["sha"].as_str().expect("sha").to_owned();
    assert_eq!(
        e.sim.ref_sha(OWNER, REPO, "heads/main").as_deref(),
        Some(merge_sha.as_str())
    );
    let commit = e.sim.commit(OWNER, REPO, &merge_sha).expect("merge commit");
    assert_eq!(commit.parents, [main_before.clone(), head.clone()]);
    assert!(
        commit.message.starts_with(&format!(
            "Merge pull request #{n} from {OWNER}/lane/change\n\nChange lane/change"
        )),
        "{}",
        commit.message
    );
    assert_eq!(
        e.sim
            .file(OWNER, REPO, "main", "lane/result.json")
            .as_deref(),
        Some(&b"{\"ok\": true}\n"[..])
    );
    assert!(e.sim.file(OWNER, REPO, "main", "README.md").is_some());

    let after = get(&e, &t, n).await;
    assert_eq!(
        (
            after.body["state"].as_str(),
            after.body["merged"].as_bool(),
            after.body["merge_commit_sha"].as_str(),
            after.body["merged_by"]["login"].as_str(),
        ),
        (
            Some("closed"),
            Some(true),
            Some(merge_sha.as_str()),
            Some("benchops-test[bot]")
        )
    );
    assert!(after.body["merged_at"].is_string() && after.body["closed_at"].is_string());
    let snap = &e.sim.pulls(OWNER, REPO)[0];
    assert_eq!((snap.state.as_str(), snap.merged), ("closed", true));
    assert_eq!(snap.merge_commit_sha.as_deref(), Some(merge_sha.as_str()));

    let again = merge(&e, &t, n, None).await;
    assert_eq!(
        (again.status, again.message()),
        (405, "Pull Request is not mergeable")
    );

    // The head branch can go after the merge, the pull request stays.
    let del = e
        .call_as(
            Some(&t),
            Method::DELETE,
            &e.repo_path("/git/refs/heads/lane/change"),
            None,
        )
        .await;
    assert_eq!(del.status, 204);
    assert_eq!(get(&e, &t, n).await.body["merged"], true);

    let ops: Vec<&str> = e
        .sim
        .requests()
        .iter()
        .filter_map(|r| r.operation)
        .collect();
    for op in [
        "pulls/create",
        "pulls/get",
        "pulls/merge",
        "repos/create-or-update-file-contents",
    ] {
        assert!(ops.contains(&op), "{op} logged");
    }
}

#[tokio::test]
async fn a_conflict_with_what_merged_first_makes_the_other_unmergeable() {
    let e = env().await;
    let t = platform_token(&e);
    for b in ["one", "two"] {
        branch(&e, &t, b).await;
        write(
            &e,
            &t,
            b,
            "shared/result.json",
            &format!("{{\"by\": \"{b}\"}}\n"),
        )
        .await;
    }
    let a = number(&open(&e, &t, "one", "two").await.then_ok());
    assert_eq!(a, 1);
    let one = number(&open(&e, &t, "one", "main").await.then_ok());
    let two = number(&open(&e, &t, "two", "main").await.then_ok());
    assert_eq!((one, two), (2, 3));
    for n in [one, two] {
        get(&e, &t, n).await;
        assert_eq!(get(&e, &t, n).await.body["mergeable"], true);
    }
    // `one` into `two` is an add/add conflict of the same path.
    get(&e, &t, a).await;
    let r = get(&e, &t, a).await;
    assert_eq!(
        (
            r.body["mergeable"].as_bool(),
            r.body["mergeable_state"].as_str()
        ),
        (Some(false), Some("dirty"))
    );

    assert_eq!(merge(&e, &t, one, None).await.status, 200);
    // Main moved: `two` is unknown again for one read, then conflicts.
    assert_eq!(get(&e, &t, two).await.body["mergeable"], Value::Null);
    let r = get(&e, &t, two).await;
    assert_eq!(
        (
            r.body["mergeable"].as_bool(),
            r.body["mergeable_state"].as_str()
        ),
        (Some(false), Some("dirty"))
    );
    let refused = merge(&e, &t, two, None).await;
    assert_eq!(
        (refused.status, refused.message()),
        (405, "Pull Request is not mergeable")
    );
    assert_eq!(e.sim.pulls(OWNER, REPO)[2].state, "open");

    // Resolving on the head (same content as main) makes it clean.
    write(&e, &t, "two", "shared/result.json", "{\"by\": \"one\"}\n").await;
    write(&e, &t, "two", "shared/other.json", "{}\n").await;
    get(&e, &t, two).await;
    assert_eq!(get(&e, &t, two).await.body["mergeable"], true);
    assert_eq!(merge(&e, &t, two, None).await.status, 200);
}

trait ThenOk {
    fn then_ok(self) -> Resp;
}

impl ThenOk for Resp {
    fn then_ok(self) -> Resp {
        assert!(self.status < 300, "{} {:?}", self.status, self.body);
        self
    }
}

#[tokio::test]
async fn a_required_status_check_blocks_the_merge_until_it_succeeds() {
    let e = env().await;
    let t = platform_token(&e);
    assert!(e.sim.require_status_check(OWNER, REPO, "main", CHECK));
    branch(&e, &t, "checked").await;
    write(&e, &t, "checked", "x.txt", "x\n").await;
    let n = number(&open(&e, &t, "checked", "main").await.then_ok());
    let head = e.sim.ref_sha(OWNER, REPO, "heads/checked").expect("head");
    let combined = |r: &str| e.repo_path(&format!("/commits/{r}/status"));

    let c = e
        .call_as(Some(&t), Method::GET, &combined("checked"), None)
        .await;
    assert_eq!(
        (
            c.status,
            c.body["state"].as_str(),
            c.body["total_count"].as_u64(),
            c.body["sha"].as_str()
        ),
        (200, Some("pending"), Some(0), Some(head.as_str()))
    );
    let blocked = merge(&e, &t, n, None).await;
    assert_eq!(
        (blocked.status, blocked.message()),
        (
            405,
            "Required status check \"benchops/check-instant\" is expected."
        )
    );
    get(&e, &t, n).await;
    let r = get(&e, &t, n).await;
    assert_eq!(
        (
            r.body["mergeable"].as_bool(),
            r.body["mergeable_state"].as_str()
        ),
        (Some(true), Some("blocked"))
    );

    let statuses = e.repo_path(&format!("/statuses/{head}"));
    let post = |state: &str, context: Option<&str>| {
        let mut b = json!({"state": state, "description": format!("{state} run")});
        if let Some(c) = context {
            b["context"] = json!(c);
        }
        e.call_as(Some(&t), Method::POST, &statuses, Some(b))
    };
    let p = post("pending", Some(CHECK)).await;
    assert_eq!(
        (
            p.status,
            p.body["context"].as_str(),
            p.body["creator"]["login"].as_str()
        ),
        (201, Some(CHECK), Some("benchops-test[bot]"))
    );
    assert_eq!(
        e.sim
            .combined_status(OWNER, REPO, &head)
            .expect("status")
            .state,
        "pending"
    );
    assert_eq!(post("failure", Some(CHECK)).await.status, 201);
    let c = e
        .call_as(Some(&t), Method::GET, &combined(&head), None)
        .await;
    assert_eq!(
        (c.body["state"].as_str(), c.body["total_count"].as_u64()),
        (Some("failure"), Some(1))
    );
    assert_eq!(merge(&e, &t, n, None).await.status, 405);
    // The context is case-insensitive: this replaces the failure.
    assert_eq!(
        post("success", Some("BenchOps/Check-Instant")).await.status,
        201
    );
    let d = post("success", None).await;
    assert_eq!(d.body["context"], "default");
    let c = e
        .call_as(Some(&t), Method::GET, &combined("checked"), None)
        .await;
    assert_eq!(
        (c.body["state"].as_str(), c.body["total_count"].as_u64()),
        (Some("success"), Some(2))
    );
    let snap = e
        .sim
        .combined_status(OWNER, REPO, "checked")
        .expect("status");
    assert_eq!(snap.state, "success");
    assert_eq!(
        snap.statuses
            .iter()
            .map(|s| s.context.as_str())
            .collect::<Vec<_>>(),
        ["default", "BenchOps/Check-Instant"]
    );
    assert_eq!(get(&e, &t, n).await.body["mergeable_state"], "clean");
    assert_eq!(merge(&e, &t, n, None).await.status, 200);

    // Refusals of a status.
    let r = post("done", Some(CHECK)).await;
    assert_eq!(
        (r.status, r.body["errors"][0]["field"].as_str()),
        (422, Some("state"))
    );
    let r = e
        .call_as(
            Some(&t),
            Method::POST,
            &e.repo_path(&format!("/statuses/{head}")),
            Some(json!({"context": CHECK})),
        )
        .await;
    assert_eq!(
        (r.status, r.body["errors"][0]["code"].as_str()),
        (422, Some("missing_field"))
    );
    let missing = "0".repeat(40);
    let r = e
        .call_as(
            Some(&t),
            Method::POST,
            &e.repo_path(&format!("/statuses/{missing}")),
            Some(json!({"state": "success"})),
        )
        .await;
    assert_eq!(
        (r.status, r.message()),
        (422, format!("No commit found for SHA: {missing}").as_str())
    );
    assert_eq!(
        e.call_as(Some(&t), Method::GET, &combined("nope"), None)
            .await
            .status,
        404
    );

    // A CI service's status seeded without HTTP counts too.
    let main = e.sim.ref_sha(OWNER, REPO, "heads/main").expect("main");
    assert!(
        e.sim
            .set_commit_status(OWNER, REPO, &main, "ci/other", "error")
    );
    assert_eq!(
        e.sim
            .combined_status(OWNER, REPO, "main")
            .expect("status")
            .state,
        "failure"
    );
}

#[tokio::test]
async fn merges_fail_on_demand_and_change_nothing() {
    let e = env().await;
    let t = platform_token(&e);
    branch(&e, &t, "flaky").await;
    write(&e, &t, "flaky", "f.txt", "f\n").await;
    let n = number(&open(&e, &t, "flaky", "main").await.then_ok());
    let main = e.sim.ref_sha(OWNER, REPO, "heads/main");
    assert!(e.sim.fail_next_merge(
        OWNER,
        REPO,
        405,
        "Base branch was modified. Review and try the merge again."
    ));
    let r = merge(&e, &t, n, None).await;
    assert_eq!(
        (r.status, r.message()),
        (
            405,
            "Base branch was modified. Review and try the merge again."
        )
    );
    assert!(r.header("x-github-request-id").is_some());
    assert_eq!(e.sim.ref_sha(OWNER, REPO, "heads/main"), main);
    assert_eq!(e.sim.pulls(OWNER, REPO)[0].state, "open");
    // The fault plan works on merges too.
    e.sim
        .push_fault(FaultRule::on_operation("pulls/merge", Fault::Status(502)));
    assert_eq!(merge(&e, &t, n, None).await.status, 502);
    assert_eq!(e.sim.ref_sha(OWNER, REPO, "heads/main"), main);
    assert_eq!(merge(&e, &t, n, None).await.status, 200);
    let log = e.sim.requests();
    let merges: Vec<Option<u16>> = log
        .iter()
        .filter(|r| r.operation == Some("pulls/merge"))
        .map(|r| r.status)
        .collect();
    assert_eq!(merges, [Some(405), Some(502), Some(200)]);
}

#[tokio::test]
async fn pull_requests_that_github_refuses_are_refused() {
    let e = env().await;
    let t = platform_token(&e);
    // Numbers are shared with issues.
    let issue = e
        .call(
            Method::POST,
            &e.repo_path("/issues"),
            Some(json!({"title": "first"})),
        )
        .await;
    assert_eq!(issue.body["number"], 1);
    branch(&e, &t, "same").await;
    let custom = |r: &Resp| {
        r.body["errors"][0]["message"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };
    let field = |r: &Resp| {
        r.body["errors"][0]["field"]
            .as_str()
            .unwrap_or("")
            .to_owned()
    };

    let r = open(&e, &t, "nope", "main").await;
    assert_eq!((r.status, field(&r)), (422, "head".to_owned()));
    let r = open(&e, &t, "same", "nope").await;
    assert_eq!((r.status, field(&r)), (422, "base".to_owned()));
    let r = open(&e, &t, "main", "main").await;
    assert_eq!(
        (r.status, custom(&r)),
        (422, "No commits between main and main".to_owned())
    );
    let r = open(&e, &t, "same", "main").await;
    assert_eq!(
        (r.status, custom(&r)),
        (422, "No commits between main and same".to_owned())
    );
    e.sim.push_ref(
        OWNER,
        REPO,
        "heads/orphan",
        &[("o.txt", b"o\n")],
        "orphan\n",
    );
    let r = open(&e, &t, "orphan", "main").await;
    assert_eq!(
        (r.status, custom(&r)),
        (
            422,
            "The orphan branch has no history in common with main".to_owned()
        )
    );
    let r = e
        .call_as(
            Some(&t),
            Method::POST,
            &e.repo_path("/pulls"),
            Some(json!({"head": "same", "base": "main"})),
        )
        .await;
    assert_eq!((r.status, field(&r)), (422, "title".to_owned()));

    write(&e, &t, "same", "s.txt", "s\n").await;
    let ok = open(&e, &t, &format!("{OWNER}:same"), "main").await;
    assert_eq!((ok.status, ok.body["number"].as_u64()), (201, Some(2)));
    let r = open(&e, &t, "same", "main").await;
    assert_eq!(
        (r.status, custom(&r)),
        (
            422,
            format!("A pull request already exists for {OWNER}:same.")
        )
    );
    let r = open(&e, &t, "other-owner:same", "main").await;
    assert_eq!((r.status, field(&r)), (422, "head".to_owned()));

    assert_eq!(
        get(&e, &t, 1).await.status,
        404,
        "issue 1 is not a pull request"
    );
    assert_eq!(get(&e, &t, 99).await.status, 404);
    assert_eq!(merge(&e, &t, 99, None).await.status, 404);
    let r = merge(&e, &t, 2, Some(json!({"merge_method": "squash"}))).await;
    assert_eq!(r.status, 422);
    let r = merge(&e, &t, 2, Some(json!({"sha": "0".repeat(40)}))).await;
    assert_eq!(
        (r.status, r.message()),
        (
            409,
            "Head branch was modified. Review and try the merge again."
        )
    );

    // Deleting the head branch closes the pull request.
    assert!(e.sim.delete_ref(OWNER, REPO, "heads/same"));
    let r = get(&e, &t, 2).await;
    assert_eq!(
        (r.body["state"].as_str(), r.body["merged"].as_bool()),
        (Some("closed"), Some(false))
    );
    assert_eq!(merge(&e, &t, 2, None).await.status, 405);
}

#[tokio::test]
async fn each_operation_needs_its_permission() {
    let e = env().await;
    let t = platform_token(&e);
    branch(&e, &t, "perm").await;
    write(&e, &t, "perm", "p.txt", "p\n").await;
    let head = e.sim.ref_sha(OWNER, REPO, "heads/perm").expect("head");

    // The environment's token has contents and issues, no pull requests.
    let r = e
        .call(
            Method::POST,
            &e.repo_path("/pulls"),
            Some(json!({"title": "t", "head": "perm", "base": "main"})),
        )
        .await;
    assert_eq!(
        (r.status, r.message()),
        (403, "Resource not accessible by integration")
    );
    assert_eq!(
        r.header("x-accepted-github-permissions"),
        Some("pull_requests=write")
    );
    let n = number(&open(&e, &t, "perm", "main").await.then_ok());

    let reader = e.sim.mint_token(
        e.installation_id,
        &[("pull_requests", "read"), ("statuses", "read")],
        None,
    );
    assert_eq!(get(&e, &reader, n).await.status, 200);
    assert_eq!(open(&e, &reader, "perm", "main").await.status, 403);
    let r = merge(&e, &reader, n, None).await;
    assert_eq!(
        (r.status, r.header("x-accepted-github-permissions")),
        (403, Some("contents=write"))
    );
    let pr_only = e.sim.mint_token(
        e.installation_id,
        &[("pull_requests", "write"), ("contents", "read")],
        None,
    );
    let r = merge(&e, &pr_only, n, None).await;
    assert_eq!(
        (r.status, r.header("x-accepted-github-permissions")),
        (403, Some("contents=write"))
    );
    let contents_only = e
        .sim
        .mint_token(e.installation_id, &[("contents", "write")], None);
    let r = merge(&e, &contents_only, n, None).await;
    assert_eq!(
        (r.status, r.header("x-accepted-github-permissions")),
        (403, Some("pull_requests=write"))
    );
    assert_eq!(get(&e, &contents_only, n).await.status, 403);

    let status = e.repo_path(&format!("/statuses/{head}"));
    let r = e
        .call_as(
            Some(&reader),
            Method::POST,
            &status,
            Some(json!({"state": "success"})),
        )
        .await;
    assert_eq!(
        (r.status, r.header("x-accepted-github-permissions")),
        (403, Some("statuses=write"))
    );
    let combined = e.repo_path("/commits/perm/status");
    assert_eq!(
        e.call_as(Some(&reader), Method::GET, &combined, None)
            .await
            .status,
        200
    );
    let r = e
        .call_as(Some(&contents_only), Method::GET, &combined, None)
        .await;
    assert_eq!(
        (r.status, r.header("x-accepted-github-permissions")),
        (403, Some("statuses=read"))
    );
    // Contents writes need contents write.
    let r = e
        .call_as(
            Some(&reader),
            Method::PUT,
            &e.repo_path("/contents/x.txt"),
            Some(json!({"message": "m", "content": ""})),
        )
        .await;
    assert_eq!(
        (r.status, r.header("x-accepted-github-permissions")),
        (403, Some("contents=write"))
    );
    // An App JWT reaches none of it.
    let jwt = e.sim.app_jwt();
    let r = e
        .http
        .get(e.url(&e.repo_path(&format!("/pulls/{n}"))))
        .header("authorization", format!("Bearer {jwt}"))
        .send()
        .await
        .expect("answers");
    assert_eq!(r.status().as_u16(), 403);
}
