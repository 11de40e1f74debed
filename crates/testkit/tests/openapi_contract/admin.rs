//! The repository-administration part of the contract flow: the
//! repository, deployment environments and their branch policies, and
//! rulesets, each success and main error validated like the rest.

use reqwest::Method;
use serde_json::{Value, json};

use crate::{Cred, Flow, OWNER, REPO};

/// Runs the administration requests with `t` (the flow's contents and
/// issues token) and a token with `administration: write` and
/// `actions: read` minted for installation `iid`.
pub(crate) async fn flow(f: &mut Flow, t: &Cred, iid: &str) {
    let or = [("owner", OWNER), ("repo", REPO)];
    // Reading the repository and its rulesets needs only metadata (any
    // token); environments need actions read and every write here
    // administration write.
    let (s, full) = f
        .call(t, Method::GET, "/repos/{owner}/{repo}", &or, "", None)
        .await;
    assert_eq!((s, full["default_branch"].as_str()), (200, Some("main")));
    let (s, _) = f
        .call(
            t,
            Method::GET,
            "/repos/{owner}/{repo}",
            &[or[0], ("repo", "elsewhere")],
            "",
            None,
        )
        .await;
    assert_eq!(s, 404);
    let admin = Cred::Token(f.sim.mint_token(
        iid.parse().expect("id"),
        &[("administration", "write"), ("actions", "read")],
        None,
    ));
    let env_path = "/repos/{owner}/{repo}/environments/{environment_name}";
    let publish = [or[0], or[1], ("environment_name", "benchmark-publish")];
    let (s, env) = f
        .call(
            &admin,
            Method::PUT,
            env_path,
            &publish,
            "",
            Some(json!({
                "wait_timer": 5,
                "prevent_self_review": true,
                "reviewers": [{"type": "User", "id": 1}, {"type": "Team", "id": 2}],
                "deployment_branch_policy": {"protected_branches": false, "custom_branch_policies": true},
            })),
        )
        .await;
    assert_eq!(
        (
            s,
            env["deployment_branch_policy"]["custom_branch_policies"].as_bool()
        ),
        (200, Some(true))
    );
    let (s, _) = f
        .call(
            &admin,
            Method::PUT,
            env_path,
            &publish,
            "",
            Some(json!({"deployment_branch_policy": {"protected_branches": true, "custom_branch_policies": true}})),
        )
        .await;
    assert_eq!(s, 422);
    let other = [or[0], or[1], ("environment_name", "other")];
    let (s, _) = f
        .call(&admin, Method::PUT, env_path, &other, "", None)
        .await;
    assert_eq!(s, 200);
    let (s, env) = f
        .call(&admin, Method::GET, env_path, &publish, "", None)
        .await;
    assert_eq!((s, env["name"].as_str()), (200, Some("benchmark-publish")));
    let policies = format!("{env_path}/deployment-branch-policies");
    for body in [
        json!({"name": "main"}),
        json!({"name": "benchmark-result/*", "type": "branch"}),
    ] {
        let (s, _) = f
            .call(&admin, Method::POST, &policies, &publish, "", Some(body))
            .await;
        assert_eq!(s, 200);
    }
    let (s, again) = f
        .call(
            &admin,
            Method::POST,
            &policies,
            &publish,
            "",
            Some(json!({"name": "main"})),
        )
        .await;
    assert_eq!((s, again), (303, Value::Null));
    // The description declares no body for this operation's 404 (an
    // environment without custom branch policies), while GitHub sends
    // its usual JSON message with it, so that 404 is exercised in
    // tests/sim/admin.rs instead.
    let (s, listed) = f
        .call(
            &admin,
            Method::GET,
            &policies,
            &publish,
            "?per_page=1",
            None,
        )
        .await;
    assert_eq!(
        (
            s,
            listed["total_count"].as_u64(),
            listed["branch_policies"].as_array().map(Vec::len)
        ),
        (200, Some(2), Some(1))
    );
    let policy_id = listed["branch_policies"][0]["id"]
        .as_u64()
        .expect("policy id")
        .to_string();
    let (s, one) = f
        .call(
            &admin,
            Method::GET,
            &format!("{policies}/{{branch_policy_id}}"),
            &[
                publish[0],
                publish[1],
                publish[2],
                ("branch_policy_id", &policy_id),
            ],
            "",
            None,
        )
        .await;
    assert_eq!((s, one["name"].as_str()), (200, Some("main")));
    let rulesets = "/repos/{owner}/{repo}/rulesets";
    let (s, created) = f
        .call(
            &admin,
            Method::POST,
            rulesets,
            &or,
            "",
            Some(json!({
                "name": "benchmark refs",
                "target": "branch",
                "enforcement": "active",
                "bypass_actors": [{"actor_id": f.sim.app_id(), "actor_type": "Integration", "bypass_mode": "always"}],
                "conditions": {"ref_name": {"include": ["refs/heads/benchmark-history", "refs/heads/benchmark-result/*"], "exclude": []}},
                "rules": [{"type": "deletion"}, {"type": "non_fast_forward"}],
            })),
        )
        .await;
    assert_eq!(
        (s, created["current_user_can_bypass"].as_str()),
        (201, Some("always"))
    );
    let (s, _) = f
        .call(
            &admin,
            Method::POST,
            rulesets,
            &or,
            "",
            Some(
                json!({"name": "x", "enforcement": "active", "rules": [{"type": "no_such_rule"}]}),
            ),
        )
        .await;
    assert_eq!(s, 422);
    let (s, all) = f.call(t, Method::GET, rulesets, &or, "", None).await;
    assert_eq!((s, all.as_array().map(Vec::len)), (200, Some(1)));
    let ruleset_id = created["id"].as_u64().expect("ruleset id").to_string();
    let one_ruleset = "/repos/{owner}/{repo}/rulesets/{ruleset_id}";
    let (s, got) = f
        .call(
            t,
            Method::GET,
            one_ruleset,
            &[or[0], or[1], ("ruleset_id", &ruleset_id)],
            "",
            None,
        )
        .await;
    assert_eq!((s, got["rules"].as_array().map(Vec::len)), (200, Some(2)));
    let (s, _) = f
        .call(
            t,
            Method::GET,
            one_ruleset,
            &[or[0], or[1], ("ruleset_id", "1")],
            "",
            None,
        )
        .await;
    assert_eq!(s, 404);
}
