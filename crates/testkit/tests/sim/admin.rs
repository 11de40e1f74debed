//! Repository administration over HTTP: the repository, deployment
//! environments and their branch policies, rulesets (and their effect on
//! ref updates), the permissions each needs, and the seeding helpers.

use reqwest::Method;
use serde_json::{Value, json};

use crate::{Env, OWNER, REPO, Resp, env};

const PUBLISH: &str = "benchmark-publish";

/// A token that may administer the repository and read environments.
fn admin_token(e: &Env) -> String {
    e.sim.mint_token(
        e.installation_id,
        &[("administration", "write"), ("actions", "read")],
        None,
    )
}

fn env_path(e: &Env, name: &str) -> String {
    e.repo_path(&format!("/environments/{name}"))
}

fn policies_path(e: &Env, name: &str) -> String {
    e.repo_path(&format!("/environments/{name}/deployment-branch-policies"))
}

async fn put_env(e: &Env, token: &str, name: &str, body: Option<Value>) -> Resp {
    e.call_as(Some(token), Method::PUT, &env_path(e, name), body)
        .await
}

fn custom_policies() -> Value {
    json!({"deployment_branch_policy": {"protected_branches": false, "custom_branch_policies": true}})
}

fn history_ruleset(rules: &[&str], bypass_app: Option<u64>) -> Value {
    let bypass: Vec<Value> = bypass_app
        .map(|id| json!({"actor_id": id, "actor_type": "Integration", "bypass_mode": "always"}))
        .into_iter()
        .collect();
    json!({
        "name": "benchmark history",
        "target": "branch",
        "enforcement": "active",
        "bypass_actors": bypass,
        "conditions": {"ref_name": {
            "include": ["refs/heads/benchmark-history", "refs/heads/benchmark-result/*"],
            "exclude": [],
        }},
        "rules": rules.iter().map(|t| json!({"type": t})).collect::<Vec<_>>(),
    })
}

#[tokio::test]
async fn the_repository_reports_its_default_branch_to_any_token() {
    let e = env().await;
    let r = e.call(Method::GET, &e.repo_path(""), None).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["default_branch"], "main");
    assert_eq!(r.body["full_name"], format!("{OWNER}/{REPO}"));
    assert_eq!(r.body["owner"]["login"], OWNER);
    // Metadata is implied by every token; a foreign repository is 404.
    let bare = e.sim.mint_token(e.installation_id, &[], None);
    let r = e
        .call_as(Some(&bare), Method::GET, &e.repo_path(""), None)
        .await;
    assert_eq!(r.status, 200);
    let r = e.call(Method::GET, "/repos/acme/elsewhere", None).await;
    assert_eq!((r.status, r.message()), (404, "Not Found"));
    // An App JWT reaches no repository data.
    let jwt = e.sim.app_jwt();
    let r = e
        .http
        .get(e.url(&e.repo_path("")))
        .header("authorization", format!("Bearer {jwt}"))
        .send()
        .await
        .expect("answers");
    assert_eq!(r.status().as_u16(), 403);
}

#[tokio::test]
async fn environments_and_branch_policies_round_trip() {
    let e = env().await;
    let admin = admin_token(&e);
    assert_eq!(e.sim.environment(OWNER, REPO, PUBLISH), None);
    let missing = e
        .call_as(Some(&admin), Method::GET, &env_path(&e, PUBLISH), None)
        .await;
    assert_eq!(missing.status, 404);

    let created = put_env(&e, &admin, PUBLISH, Some(custom_policies())).await;
    assert_eq!(created.status, 200, "{:?}", created.body);
    assert_eq!(created.body["name"], PUBLISH);
    assert_eq!(
        created.body["deployment_branch_policy"],
        json!({"protected_branches": false, "custom_branch_policies": true})
    );
    assert_eq!(created.body["protection_rules"][0]["type"], "branch_policy");

    for (name, kind) in [("main", None), ("v*", Some("tag"))] {
        let mut body = json!({ "name": name });
        if let Some(k) = kind {
            body["type"] = json!(k);
        }
        let r = e
            .call_as(
                Some(&admin),
                Method::POST,
                &policies_path(&e, PUBLISH),
                Some(body),
            )
            .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        assert_eq!(r.body["name"], name);
        assert_eq!(r.body["type"], kind.unwrap_or("branch"));
    }

    // Listed in pages of `{total_count, branch_policies}`.
    let page = e
        .call_as(
            Some(&admin),
            Method::GET,
            &format!("{}?per_page=1", policies_path(&e, PUBLISH)),
            None,
        )
        .await;
    assert_eq!(page.status, 200);
    assert_eq!(page.body["total_count"], 2);
    assert_eq!(page.body["branch_policies"][0]["name"], "main");
    assert!(
        page.header("link")
            .is_some_and(|l| l.contains("rel=\"next\""))
    );

    // The same pattern again is a 303 to the existing policy; a client that
    // follows redirects ends up with it.
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let again = no_redirects
        .post(e.url(&policies_path(&e, PUBLISH)))
        .header("authorization", format!("token {admin}"))
        .json(&json!({"name": "main"}))
        .send()
        .await
        .expect("answers");
    assert_eq!(again.status().as_u16(), 303);
    let location = again
        .headers()
        .get("location")
        .and_then(|v| v.to_str().ok())
        .expect("location")
        .to_owned();
    let id = page.body["branch_policies"][0]["id"].as_u64().expect("id");
    assert!(location.ends_with(&format!("/deployment-branch-policies/{id}")));
    let followed = e
        .call_as(
            Some(&admin),
            Method::POST,
            &policies_path(&e, PUBLISH),
            Some(json!({"name": "main"})),
        )
        .await;
    assert_eq!(
        (followed.status, followed.body["id"].as_u64()),
        (200, Some(id))
    );

    let got = e
        .call_as(
            Some(&admin),
            Method::GET,
            &env_path(&e, "Benchmark-Publish"),
            None,
        )
        .await;
    assert_eq!(got.status, 200, "names are case-insensitive");
    let snap = e.sim.environment(OWNER, REPO, PUBLISH).expect("exists");
    assert_eq!(snap.deployment_branch_policy, Some((false, true)));
    assert_eq!(
        snap.branch_policies,
        vec![
            ("main".to_owned(), "branch".to_owned()),
            ("v*".to_owned(), "tag".to_owned())
        ]
    );

    // Settings the body leaves out are kept; reviewers and a wait timer
    // become protection rules.
    let r = put_env(
        &e,
        &admin,
        PUBLISH,
        Some(json!({"wait_timer": 10, "reviewers": [{"type": "User", "id": 5}]})),
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let kinds: Vec<&str> = r.body["protection_rules"]
        .as_array()
        .expect("rules")
        .iter()
        .filter_map(|p| p["type"].as_str())
        .collect();
    assert_eq!(kinds, ["wait_timer", "required_reviewers", "branch_policy"]);
    let snap = e.sim.environment(OWNER, REPO, PUBLISH).expect("exists");
    assert_eq!(
        (
            snap.wait_timer,
            snap.deployment_branch_policy,
            snap.branch_policies.len()
        ),
        (10, Some((false, true)), 2)
    );

    // Protected branches instead of custom policies drops the patterns,
    // and the branch-policy endpoints answer 404 from then on.
    let r = put_env(
        &e,
        &admin,
        PUBLISH,
        Some(json!({"deployment_branch_policy": {"protected_branches": true, "custom_branch_policies": false}})),
    )
    .await;
    assert_eq!(r.status, 200);
    let snap = e.sim.environment(OWNER, REPO, PUBLISH).expect("exists");
    assert_eq!(
        (snap.deployment_branch_policy, snap.branch_policies.len()),
        (Some((true, false)), 0)
    );
    let list = e
        .call_as(Some(&admin), Method::GET, &policies_path(&e, PUBLISH), None)
        .await;
    assert_eq!(list.status, 404);
}

#[tokio::test]
async fn environment_bodies_are_validated() {
    let e = env().await;
    let admin = admin_token(&e);
    for (protected, custom) in [(true, true), (false, false)] {
        let r = put_env(
            &e,
            &admin,
            PUBLISH,
            Some(json!({"deployment_branch_policy": {"protected_branches": protected, "custom_branch_policies": custom}})),
        )
        .await;
        assert_eq!(r.status, 422, "{protected} {custom}");
        assert!(r.message().contains("cannot both be"), "{}", r.message());
    }
    assert_eq!(
        e.sim.environment(OWNER, REPO, PUBLISH),
        None,
        "nothing made"
    );
    let cases = [
        json!({"deployment_branch_policy": {"protected_branches": true}}),
        json!({"wait_timer": 50_000}),
        json!({"reviewers": [{"type": "Robot", "id": 1}]}),
        json!({"secrets": []}),
    ];
    for body in cases {
        let r = put_env(&e, &admin, PUBLISH, Some(body.clone())).await;
        assert_eq!(r.status, 422, "{body}");
    }
    // No body at all makes an environment every branch may deploy from.
    let r = put_env(&e, &admin, PUBLISH, None).await;
    assert_eq!(r.status, 200);
    assert_eq!(r.body["deployment_branch_policy"], Value::Null);
    assert_eq!(r.body["protection_rules"], json!([]));
    // Branch policies need an environment with custom branch policies.
    for name in [PUBLISH, "nowhere"] {
        let r = e
            .call_as(
                Some(&admin),
                Method::POST,
                &policies_path(&e, name),
                Some(json!({"name": "main"})),
            )
            .await;
        assert_eq!((r.status, r.message()), (404, "Not Found"), "{name}");
    }
    let r = put_env(&e, &admin, PUBLISH, Some(custom_policies())).await;
    assert_eq!(r.status, 200);
    let r = e
        .call_as(
            Some(&admin),
            Method::POST,
            &policies_path(&e, PUBLISH),
            Some(json!({"type": "branch"})),
        )
        .await;
    assert_eq!(r.status, 422, "name is required");
}

#[tokio::test]
async fn rulesets_round_trip() {
    let e = env().await;
    let admin = admin_token(&e);
    let app_id = e.sim.app_id();
    let created = e
        .call_as(
            Some(&admin),
            Method::POST,
            &e.repo_path("/rulesets"),
            Some(history_ruleset(
                &["deletion", "non_fast_forward"],
                Some(app_id),
            )),
        )
        .await;
    assert_eq!(created.status, 201, "{:?}", created.body);
    let id = created.body["id"].as_u64().expect("id");
    assert_eq!(
        created.header("location"),
        Some(format!("{}/repos/{OWNER}/{REPO}/rulesets/{id}", e.sim.base_url()).as_str())
    );
    assert_eq!(created.body["source_type"], "Repository");
    assert_eq!(created.body["source"], format!("{OWNER}/{REPO}"));
    assert_eq!(created.body["current_user_can_bypass"], "always");
    assert_eq!(
        created.body["bypass_actors"],
        json!([{"actor_id": app_id, "actor_type": "Integration", "bypass_mode": "always"}])
    );

    // The list carries summaries; the ruleset itself carries everything.
    let list = e.call(Method::GET, &e.repo_path("/rulesets"), None).await;
    assert_eq!(list.status, 200);
    let summary = &list.body[0];
    assert_eq!(summary["id"], id);
    assert_eq!(summary["name"], "benchmark history");
    assert!(summary.get("rules").is_none() && summary.get("conditions").is_none());
    let tags = e
        .call(Method::GET, &e.repo_path("/rulesets?targets=tag"), None)
        .await;
    assert_eq!(tags.body, json!([]));

    let path = e.repo_path(&format!("/rulesets/{id}"));
    let full = e.call_as(Some(&admin), Method::GET, &path, None).await;
    assert_eq!(full.status, 200);
    assert_eq!(full.body, created.body);
    // Without administration write, bypass actors are not shown.
    let reader = e.call(Method::GET, &path, None).await;
    assert_eq!(reader.status, 200);
    assert!(reader.body.get("bypass_actors").is_none());
    assert_eq!(
        reader.body["rules"],
        json!([{"type": "deletion"}, {"type": "non_fast_forward"}])
    );
    assert_eq!(
        reader.body["conditions"]["ref_name"]["include"][1],
        "refs/heads/benchmark-result/*"
    );
    let none = e
        .call(Method::GET, &e.repo_path("/rulesets/99999"), None)
        .await;
    assert_eq!(none.status, 404);
    assert_eq!(e.sim.rulesets(OWNER, REPO), vec![created.body.clone()]);
}

#[tokio::test]
async fn ruleset_bodies_are_validated_like_github() {
    let e = env().await;
    let admin = admin_token(&e);
    let post = |body: Value| {
        let admin = admin.clone();
        let e = &e;
        async move {
            e.call_as(
                Some(&admin),
                Method::POST,
                &e.repo_path("/rulesets"),
                Some(body),
            )
            .await
        }
    };
    let r = post(json!({"enforcement": "active"})).await;
    assert_eq!(
        (r.status, r.message()),
        (422, "Invalid request.\n\n\"name\" wasn't supplied.")
    );
    let r = post(json!({"name": "n"})).await;
    assert_eq!(
        (r.status, r.message()),
        (422, "Invalid request.\n\n\"enforcement\" wasn't supplied.")
    );
    let r = post(json!({"name": "n", "enforcement": "active", "rules": [{"type": "deletion"}, {"type": "no_such_rule"}]})).await;
    assert_eq!(
        (r.status, r.message()),
        (
            422,
            "Invalid request.\n\nInvalid property /rules/1: data matches no possible input. See `documentation_url`."
        )
    );
    let r = post(json!({"name": "n", "enforcement": "active",
                        "bypass_actors": [{"actor_id": 1, "actor_type": "Robot"}]}))
    .await;
    assert_eq!(r.status, 422);
    assert!(
        r.message().contains("/bypass_actors/0/actor_type"),
        "{}",
        r.message()
    );
    let r = post(json!({"name": "n", "enforcement": "active",
                        "conditions": {"ref_name": {"include": [""]}}}))
    .await;
    assert_eq!(
        (r.status, r.body["errors"].clone()),
        (422, json!(["Invalid target patterns: ''"]))
    );
    assert!(e.sim.rulesets(OWNER, REPO).is_empty());
    // Names are unique per repository (GitHub sends this error as a
    // string, unlike its `validation-error` schema).
    let r = post(history_ruleset(&["deletion"], None)).await;
    assert_eq!(r.status, 201);
    let r = post(history_ruleset(&["deletion"], None)).await;
    assert_eq!(
        (r.status, r.message(), r.body["errors"].clone()),
        (422, "Validation Failed", json!(["Name must be unique"]))
    );
}

#[tokio::test]
async fn administration_needs_its_permissions() {
    let e = env().await;
    // The environment's token has contents and issues write only.
    let r = put_env(&e, &e.token, PUBLISH, Some(custom_policies())).await;
    assert_eq!(r.status, 403);
    assert_eq!(r.message(), "Resource not accessible by integration");
    assert_eq!(
        r.header("x-accepted-github-permissions"),
        Some("administration=write")
    );
    let r = e
        .call(
            Method::POST,
            &e.repo_path("/rulesets"),
            Some(history_ruleset(&["deletion"], None)),
        )
        .await;
    assert_eq!(
        (r.status, r.header("x-accepted-github-permissions")),
        (403, Some("administration=write"))
    );
    let read_only = e.sim.mint_token(
        e.installation_id,
        &[("administration", "read"), ("actions", "read")],
        None,
    );
    let r = put_env(&e, &read_only, PUBLISH, None).await;
    assert_eq!(r.status, 403);

    // With administration write it works; reading environments needs
    // actions read.
    let admin_only = e
        .sim
        .mint_token(e.installation_id, &[("administration", "write")], None);
    let r = put_env(&e, &admin_only, PUBLISH, Some(custom_policies())).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let r = e
        .call_as(
            Some(&admin_only),
            Method::POST,
            &e.repo_path("/rulesets"),
            Some(history_ruleset(&["deletion"], None)),
        )
        .await;
    assert_eq!(r.status, 201);
    for path in [env_path(&e, PUBLISH), policies_path(&e, PUBLISH)] {
        let r = e.call_as(Some(&admin_only), Method::GET, &path, None).await;
        assert_eq!(
            (r.status, r.header("x-accepted-github-permissions")),
            (403, Some("actions=read")),
            "{path}"
        );
        let r = e.call_as(Some(&read_only), Method::GET, &path, None).await;
        assert_eq!(r.status, 200, "{path}");
    }
    // Rulesets are read with metadata alone.
    let r = e.call(Method::GET, &e.repo_path("/rulesets"), None).await;
    assert_eq!(r.status, 200);
}

#[tokio::test]
async fn seeding_helpers_plant_and_remove_state() {
    let e = env().await;
    // A state the API would refuse: both flags, patterns alongside.
    e.sim
        .put_environment(OWNER, REPO, PUBLISH, Some((true, true)), &["main"]);
    let snap = e.sim.environment(OWNER, REPO, PUBLISH).expect("planted");
    assert_eq!(snap.deployment_branch_policy, Some((true, true)));
    assert_eq!(
        snap.branch_policies,
        vec![("main".to_owned(), "branch".to_owned())]
    );
    let admin = admin_token(&e);
    let r = e
        .call_as(Some(&admin), Method::GET, &policies_path(&e, PUBLISH), None)
        .await;
    assert_eq!(r.body["branch_policies"][0]["name"], "main");
    e.sim.put_environment(OWNER, REPO, PUBLISH, None, &[]);
    let snap = e.sim.environment(OWNER, REPO, PUBLISH).expect("replaced");
    assert_eq!(
        (snap.deployment_branch_policy, snap.branch_policies.len()),
        (None, 0)
    );
    assert!(e.sim.delete_environment(OWNER, REPO, PUBLISH));
    assert!(!e.sim.delete_environment(OWNER, REPO, PUBLISH));
    let r = e
        .call_as(Some(&admin), Method::GET, &env_path(&e, PUBLISH), None)
        .await;
    assert_eq!(r.status, 404);

    let id = e
        .sim
        .insert_ruleset(OWNER, REPO, history_ruleset(&["update"], None));
    let seeded = e.sim.rulesets(OWNER, REPO);
    assert_eq!(seeded.len(), 1);
    assert_eq!(seeded[0]["id"], id);
    assert_eq!(seeded[0]["current_user_can_bypass"], "never");
    let r = e
        .call(Method::GET, &e.repo_path(&format!("/rulesets/{id}")), None)
        .await;
    assert_eq!(r.body["rules"], json!([{"type": "update"}]));
    assert!(e.sim.delete_ruleset(OWNER, REPO, id));
    assert!(!e.sim.delete_ruleset(OWNER, REPO, id));
    assert!(e.sim.rulesets(OWNER, REPO).is_empty());

    // The installation reports its repository selection and permissions.
    let jwt = e.sim.app_jwt();
    let installation = |jwt: String| {
        let e = &e;
        async move {
            e.http
                .get(e.url(&e.repo_path("/installation")))
                .header("authorization", format!("Bearer {jwt}"))
                .send()
                .await
                .expect("answers")
                .json::<Value>()
                .await
                .expect("JSON")
        }
    };
    let before = installation(jwt.clone()).await;
    assert_eq!(before["repository_selection"], "all");
    assert_eq!(before["permissions"]["contents"], "write");
    e.sim
        .set_repository_selection(e.installation_id, "selected");
    e.sim.set_installation_permissions(
        e.installation_id,
        &[("administration", "write"), ("metadata", "read")],
    );
    let after = installation(jwt).await;
    assert_eq!(after["repository_selection"], "selected");
    assert_eq!(
        after["permissions"],
        json!({"administration": "write", "metadata": "read"})
    );
}

fn head(e: &Env, name: &str) -> String {
    e.sim.ref_sha(OWNER, REPO, name).expect("ref exists")
}

#[tokio::test]
async fn active_rulesets_guard_refs_unless_the_app_may_bypass() {
    let e = env().await;
    let main = head(&e, "heads/main");
    let history = e
        .call(
            Method::POST,
            &e.repo_path("/git/refs"),
            Some(json!({"ref": "refs/heads/benchmark-history", "sha": main})),
        )
        .await;
    assert_eq!(history.status, 201);
    let next = e.sim.advance_ref(OWNER, REPO, "heads/main").expect("moved");
    let sibling = e
        .sim
        .commit_files(OWNER, REPO, "scratch", &[("x", b"x")], "sibling\n");
    let id = e.sim.insert_ruleset(
        OWNER,
        REPO,
        history_ruleset(&["non_fast_forward", "deletion", "creation"], None),
    );

    // A fast forward is fine; a forced update, a deletion and a creation
    // under the patterns are refused.
    let ff = e
        .call(
            Method::PATCH,
            &e.repo_path("/git/refs/heads/benchmark-history"),
            Some(json!({"sha": next})),
        )
        .await;
    assert_eq!(ff.status, 200, "{:?}", ff.body);
    let forced = e
        .call(
            Method::PATCH,
            &e.repo_path("/git/refs/heads/benchmark-history"),
            Some(json!({"sha": sibling, "force": true})),
        )
        .await;
    assert_eq!(
        (forced.status, forced.message()),
        (
            422,
            "Repository rule violations found\n\nCannot force-push to this branch\n\n"
        )
    );
    let deleted = e
        .call(
            Method::DELETE,
            &e.repo_path("/git/refs/heads/benchmark-history"),
            None,
        )
        .await;
    assert_eq!(
        (deleted.status, deleted.message()),
        (
            422,
            "Repository rule violations found\n\nCannot delete this branch\n\n"
        )
    );
    let handoff = e
        .call(
            Method::POST,
            &e.repo_path("/git/refs"),
            Some(json!({"ref": "refs/heads/benchmark-result/one", "sha": main})),
        )
        .await;
    assert_eq!(handoff.status, 422);
    assert!(
        handoff
            .message()
            .starts_with("Repository rule violations found")
    );
    assert_eq!(head(&e, "heads/benchmark-history"), next);
    // Refs outside the patterns are untouched by the ruleset.
    let other = e
        .call(
            Method::POST,
            &e.repo_path("/git/refs"),
            Some(json!({"ref": "refs/heads/elsewhere", "sha": main})),
        )
        .await;
    assert_eq!(other.status, 201);

    // With the App as a bypass actor the same requests go through.
    assert!(e.sim.delete_ruleset(OWNER, REPO, id));
    e.sim.insert_ruleset(
        OWNER,
        REPO,
        history_ruleset(
            &["non_fast_forward", "deletion", "creation"],
            Some(e.sim.app_id()),
        ),
    );
    let forced = e
        .call(
            Method::PATCH,
            &e.repo_path("/git/refs/heads/benchmark-history"),
            Some(json!({"sha": sibling, "force": true})),
        )
        .await;
    assert_eq!(forced.status, 200, "{:?}", forced.body);
    let handoff = e
        .call(
            Method::POST,
            &e.repo_path("/git/refs"),
            Some(json!({"ref": "refs/heads/benchmark-result/one", "sha": main})),
        )
        .await;
    assert_eq!(handoff.status, 201);
    let deleted = e
        .call(
            Method::DELETE,
            &e.repo_path("/git/refs/heads/benchmark-result/one"),
            None,
        )
        .await;
    assert_eq!(deleted.status, 204);

    // `update` on the default branch refuses even fast forwards.
    e.sim.insert_ruleset(
        OWNER,
        REPO,
        json!({"name": "main", "enforcement": "active",
               "conditions": {"ref_name": {"include": ["~DEFAULT_BRANCH"], "exclude": []}},
               "rules": [{"type": "update"}]}),
    );
    let tip = head(&e, "heads/main");
    let r = e
        .call(
            Method::PATCH,
            &e.repo_path("/git/refs/heads/main"),
            Some(json!({"sha": tip})),
        )
        .await;
    assert_eq!(
        (r.status, r.message()),
        (
            422,
            "Repository rule violations found\n\nCannot update this protected ref.\n\n"
        )
    );
}
