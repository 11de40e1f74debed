//! The simulator against GitHub's own OpenAPI description (`@octokit/openapi`,
//! vendored subset): every response of a scripted flow validates against the
//! schema of its operation and status, the description's examples validate
//! against their own schemas, and the simulator serves exactly the
//! operations of the subset.

use std::collections::BTreeSet;

use benchops_testkit::GitHubSim;
use benchops_testkit::openapi::{self, resolve};
use benchops_testkit::sim::auth::{OTHER_PRIVATE_KEY_PEM, sign_jwt};
use benchops_testkit::sim::{OPERATIONS, routes};
use reqwest::Method;
use serde_json::{Value, json};

#[path = "openapi_contract/admin.rs"]
mod admin;
#[path = "openapi_contract/pulls.rs"]
mod pulls;

const OWNER: &str = "octo-org";
const REPO: &str = "bench";

#[derive(Debug)]
enum Cred {
    Token(String),
    Jwt(String),
}

#[derive(Debug)]
struct Flow {
    sim: GitHubSim,
    http: reqwest::Client,
    /// (operation id, status) of every validated response.
    checked: Vec<(String, u16)>,
    failures: Vec<String>,
    undeclared: Vec<String>,
}

impl Flow {
    /// Sends a request to `template` with `params` filled in, then
    /// validates the response against the description. Returns the body.
    async fn call(
        &mut self,
        cred: &Cred,
        method: Method,
        template: &str,
        params: &[(&str, &str)],
        query: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let mut path = template.to_owned();
        for (k, v) in params {
            path = path.replace(&format!("{{{k}}}"), v);
        }
        let url = format!("{}{path}{query}", self.sim.base_url());
        let mut req = self.http.request(method.clone(), url);
        req = match cred {
            Cred::Token(t) => req.header("authorization", format!("token {t}")),
            Cred::Jwt(j) => req.header("authorization", format!("Bearer {j}")),
        };
        if let Some(b) = &body {
            req = req.json(b);
        }
        let resp = req.send().await.expect("simulator answers");
        let status = resp.status().as_u16();
        let bytes = resp.bytes().await.expect("body");
        let value: Value = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).expect("JSON body")
        };
        let op = routes::match_route(method.as_str(), &path).expect("a served operation");
        assert_eq!(
            op.template, template,
            "route table agrees with the template"
        );
        match openapi::validate_response(method.as_str(), template, status, &value) {
            Ok(()) => {}
            Err(e) => self.failures.push(e.to_string()),
        }
        if let Ok(Some(schema)) = openapi::response_schema(method.as_str(), template, status) {
            undeclared(
                &schema,
                &schema,
                &value,
                &format!("{} {status}", op.id),
                &mut self.undeclared,
            );
        }
        self.checked.push((op.id.to_owned(), status));
        (status, value)
    }
}

/// Members the simulator sends that the schema does not declare (GitHub's
/// schemas allow extra members, so validation alone would not notice an
/// invented or misspelled field). Follows `$ref`, `properties` and `items`.
fn undeclared(root: &Value, schema: &Value, value: &Value, at: &str, out: &mut Vec<String>) {
    let mut s = schema;
    while let Some(r) = s.get("$ref").and_then(Value::as_str) {
        let name = r.trim_start_matches("#/$defs/");
        s = &root["$defs"][name];
    }
    if let Some(all) = s.get("allOf").and_then(Value::as_array) {
        if all.len() == 1 {
            undeclared(root, &all[0], value, at, out);
            return;
        }
    }
    match value {
        Value::Object(m) => {
            let Some(props) = s.get("properties").and_then(Value::as_object) else {
                return;
            };
            for (k, v) in m {
                match props.get(k) {
                    Some(ps) => undeclared(root, ps, v, &format!("{at}.{k}"), out),
                    None => out.push(format!("{at}.{k}")),
                }
            }
        }
        Value::Array(items) => {
            if let Some(is) = s.get("items") {
                for (i, v) in items.iter().enumerate() {
                    undeclared(root, is, v, &format!("{at}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

#[tokio::test]
async fn every_simulator_response_in_a_full_flow_matches_the_description() {
    let sim = GitHubSim::start().await;
    sim.create_repo(OWNER, REPO);
    let iid = sim.installation_id(OWNER).expect("installed").to_string();
    let jwt = Cred::Jwt(sim.app_jwt());
    let mut f = Flow {
        sim,
        // Redirects are answers to check (a duplicate branch policy is a
        // 303), not to follow.
        http: reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .expect("client"),
        checked: Vec::new(),
        failures: Vec::new(),
        undeclared: Vec::new(),
    };
    let or = [("owner", OWNER), ("repo", REPO)];

    // The App: itself, its installation, then a token for one repository.
    let (s, app) = f.call(&jwt, Method::GET, "/app", &[], "", None).await;
    assert_eq!((s, app["slug"].as_str()), (200, Some("benchops-test")));
    f.call(
        &jwt,
        Method::GET,
        "/repos/{owner}/{repo}/installation",
        &or,
        "",
        None,
    )
    .await;
    let tokens = "/app/installations/{installation_id}/access_tokens";
    let bad_jwt = Cred::Jwt(sign_jwt(
        OTHER_PRIVATE_KEY_PEM,
        &json!({"iat": 0, "exp": 1, "iss": "1"}),
    ));
    let (s, _) = f
        .call(
            &bad_jwt,
            Method::POST,
            tokens,
            &[("installation_id", &iid)],
            "",
            None,
        )
        .await;
    assert_eq!(s, 401);
    let (s, _) = f
        .call(
            &jwt,
            Method::POST,
            tokens,
            &[("installation_id", &iid)],
            "",
            Some(json!({"repositories": ["nope"]})),
        )
        .await;
    assert_eq!(s, 422);
    let (s, tok) = f
        .call(
            &jwt,
            Method::POST,
            tokens,
            &[("installation_id", &iid)],
            "",
            Some(json!({"repositories": [REPO], "permissions": {"contents": "write", "issues": "write", "metadata": "read"}})),
        )
        .await;
    assert_eq!(s, 201);
    let t = Cred::Token(tok["token"].as_str().expect("token").to_owned());

    // Git data.
    let (_, main) = f
        .call(
            &t,
            Method::GET,
            "/repos/{owner}/{repo}/git/ref/{ref}",
            &[or[0], or[1], ("ref", "heads/main")],
            "",
            None,
        )
        .await;
    let main_sha = main["object"]["sha"].as_str().expect("sha").to_owned();
    let (s, _) = f
        .call(
            &t,
            Method::GET,
            "/repos/{owner}/{repo}/git/ref/{ref}",
            &[or[0], or[1], ("ref", "heads/nope")],
            "",
            None,
        )
        .await;
    assert_eq!(s, 404);
    let (_, blob) = f
        .call(
            &t,
            Method::POST,
            "/repos/{owner}/{repo}/git/blobs",
            &or,
            "",
            Some(json!({"content": "hello\n"})),
        )
        .await;
    let blob_sha = blob["sha"].as_str().expect("sha").to_owned();
    f.call(
        &t,
        Method::GET,
        "/repos/{owner}/{repo}/git/blobs/{file_sha}",
        &[or[0], or[1], ("file_sha", &blob_sha)],
        "",
        None,
    )
    .await;
    let (_, commit) = f
        .call(
            &t,
            Method::GET,
            "/repos/{owner}/{repo}/git/commits/{commit_sha}",
            &[or[0], or[1], ("commit_sha", &main_sha)],
            "",
            None,
        )
        .await;
    let base_tree = commit["tree"]["sha"].as_str().expect("tree").to_owned();
    let (s, tree) = f
        .call(
            &t,
            Method::POST,
            "/repos/{owner}/{repo}/git/trees",
            &or,
            "",
            Some(json!({"base_tree": base_tree, "tree": [
                {"path": "results/nightly/2026/11/abc.json", "mode": "100644", "type": "blob", "content": "{}\n"},
                {"path": "hello.txt", "mode": "100644", "type": "blob", "sha": blob_sha},
            ]})),
        )
        .await;
    assert_eq!(s, 201);
    let tree_sha = tree["sha"].as_str().expect("sha").to_owned();
    let (s, _) = f
        .call(
            &t,
            Method::POST,
            "/repos/{owner}/{repo}/git/trees",
            &or,
            "",
            Some(json!({"tree": [{"path": "x", "mode": "100644", "type": "blob"}]})),
        )
        .await;
    assert_eq!(s, 422);
    f.call(
        &t,
        Method::GET,
        "/repos/{owner}/{repo}/git/trees/{tree_sha}",
        &[or[0], or[1], ("tree_sha", &tree_sha)],
        "?recursive=1",
        None,
    )
    .await;
    f.call(
        &t,
        Method::GET,
        "/repos/{owner}/{repo}/git/trees/{tree_sha}",
        &[or[0], or[1], ("tree_sha", &tree_sha)],
        "",
        None,
    )
    .await;
    let (s, c1) = f
        .call(
            &t,
            Method::POST,
            "/repos/{owner}/{repo}/git/commits",
            &or,
            "",
            Some(json!({"message": "results", "tree": tree_sha, "parents": [main_sha],
                        "author": {"name": "b", "email": "b@example.com", "date": "2026-11-03T10:00:00Z"}})),
        )
        .await;
    assert_eq!(s, 201);
    let c1 = c1["sha"].as_str().expect("sha").to_owned();
    let (s, c2) = f
        .call(
            &t,
            Method::POST,
            "/repos/{owner}/{repo}/git/commits",
            &or,
            "",
            Some(json!({"message": "sibling", "tree": base_tree, "parents": [main_sha]})),
        )
        .await;
    assert_eq!(s, 201);
    let c2 = c2["sha"].as_str().expect("sha").to_owned();
    let (s, _) = f
        .call(
            &t,
            Method::POST,
            "/repos/{owner}/{repo}/git/commits",
            &or,
            "",
            Some(json!({"message": "m", "tree": "0".repeat(40)})),
        )
        .await;
    assert_eq!(s, 422);
    let create_ref = Some(json!({"ref": "refs/heads/benchmark-history", "sha": main_sha}));
    let (s, _) = f
        .call(
            &t,
            Method::POST,
            "/repos/{owner}/{repo}/git/refs",
            &or,
            "",
            create_ref.clone(),
        )
        .await;
    assert_eq!(s, 201);
    let (s, _) = f
        .call(
            &t,
            Method::POST,
            "/repos/{owner}/{repo}/git/refs",
            &or,
            "",
            create_ref,
        )
        .await;
    assert_eq!(s, 422);
    let history = [or[0], or[1], ("ref", "heads/benchmark-history")];
    let (s, _) = f
        .call(
            &t,
            Method::PATCH,
            "/repos/{owner}/{repo}/git/refs/{ref}",
            &history,
            "",
            Some(json!({"sha": c1, "force": false})),
        )
        .await;
    assert_eq!(s, 200);
    let (s, nonff) = f
        .call(
            &t,
            Method::PATCH,
            "/repos/{owner}/{repo}/git/refs/{ref}",
            &history,
            "",
            Some(json!({"sha": c2, "force": false})),
        )
        .await;
    assert_eq!(
        (s, nonff["message"].as_str()),
        (422, Some("Update is not a fast forward"))
    );
    // Handoff refs: listed by prefix, then deleted (204). The description
    // declares no body for delete's 422, while GitHub (and the simulator)
    // send a JSON message with it, so that 422 is exercised in
    // tests/sim/git.rs instead.
    let matching = "/repos/{owner}/{repo}/git/matching-refs/{ref}";
    let (s, heads) = f
        .call(
            &t,
            Method::GET,
            matching,
            &[or[0], or[1], ("ref", "heads/")],
            "",
            None,
        )
        .await;
    assert_eq!((s, heads.as_array().map(Vec::len)), (200, Some(2)));
    let (s, _) = f
        .call(
            &t,
            Method::POST,
            "/repos/{owner}/{repo}/git/refs",
            &or,
            "",
            Some(json!({"ref": "refs/heads/benchmark-result/one", "sha": c1})),
        )
        .await;
    assert_eq!(s, 201);
    let (s, handoffs) = f
        .call(
            &t,
            Method::GET,
            matching,
            &[or[0], or[1], ("ref", "heads/benchmark-result/")],
            "",
            None,
        )
        .await;
    assert_eq!(
        (s, handoffs[0]["ref"].as_str()),
        (200, Some("refs/heads/benchmark-result/one"))
    );
    let (s, gone) = f
        .call(
            &t,
            Method::DELETE,
            "/repos/{owner}/{repo}/git/refs/{ref}",
            &[or[0], or[1], ("ref", "heads/benchmark-result/one")],
            "",
            None,
        )
        .await;
    assert_eq!((s, gone), (204, Value::Null));
    let (s, file) = f
        .call(
            &t,
            Method::GET,
            "/repos/{owner}/{repo}/contents/{path}",
            &[or[0], or[1], ("path", "results/nightly/2026/11/abc.json")],
            "?ref=benchmark-history",
            None,
        )
        .await;
    assert_eq!((s, file["type"].as_str()), (200, Some("file")));
    let (s, dir) = f
        .call(
            &t,
            Method::GET,
            "/repos/{owner}/{repo}/contents/{path}",
            &[or[0], or[1], ("path", "results")],
            "?ref=benchmark-history",
            None,
        )
        .await;
    assert_eq!((s, dir.is_array()), (200, true));
    let (s, _) = f
        .call(
            &t,
            Method::GET,
            "/repos/{owner}/{repo}/contents/{path}",
            &[or[0], or[1], ("path", "nope.json")],
            "",
            None,
        )
        .await;
    assert_eq!(s, 404);

    // Labels, issues, comments.
    let label =
        Some(json!({"name": "perf-drift", "color": "d73a4a", "description": "Confirmed drift"}));
    let (s, _) = f
        .call(
            &t,
            Method::POST,
            "/repos/{owner}/{repo}/labels",
            &or,
            "",
            label.clone(),
        )
        .await;
    assert_eq!(s, 201);
    let (s, _) = f
        .call(
            &t,
            Method::POST,
            "/repos/{owner}/{repo}/labels",
            &or,
            "",
            label,
        )
        .await;
    assert_eq!(s, 422);
    f.call(
        &t,
        Method::GET,
        "/repos/{owner}/{repo}/labels/{name}",
        &[or[0], or[1], ("name", "perf-drift")],
        "",
        None,
    )
    .await;
    let (s, _) = f
        .call(
            &t,
            Method::GET,
            "/repos/{owner}/{repo}/labels/{name}",
            &[or[0], or[1], ("name", "nope")],
            "",
            None,
        )
        .await;
    assert_eq!(s, 404);
    f.call(
        &t,
        Method::GET,
        "/repos/{owner}/{repo}/labels",
        &or,
        "",
        None,
    )
    .await;
    for i in 0..3 {
        let (s, _) = f
            .call(
                &t,
                Method::POST,
                "/repos/{owner}/{repo}/issues",
                &or,
                "",
                Some(json!({"title": format!("drift {i}"), "body": "<!-- benchops:key -->", "labels": ["perf-drift", "lane:nightly"]})),
            )
            .await;
        assert_eq!(s, 201);
    }
    let (s, _) = f
        .call(
            &t,
            Method::POST,
            "/repos/{owner}/{repo}/issues",
            &or,
            "",
            Some(json!({"body": "no title"})),
        )
        .await;
    assert_eq!(s, 422);
    let one = [or[0], or[1], ("issue_number", "1")];
    f.call(
        &t,
        Method::GET,
        "/repos/{owner}/{repo}/issues/{issue_number}",
        &one,
        "",
        None,
    )
    .await;
    let (s, closed) = f
        .call(
            &t,
            Method::PATCH,
            "/repos/{owner}/{repo}/issues/{issue_number}",
            &one,
            "",
            Some(json!({"state": "closed", "state_reason": "completed", "body": "resolved"})),
        )
        .await;
    assert_eq!((s, closed["state"].as_str()), (200, Some("closed")));
    let (s, _) = f
        .call(
            &t,
            Method::PATCH,
            "/repos/{owner}/{repo}/issues/{issue_number}",
            &one,
            "",
            Some(json!({"state": "reopened"})),
        )
        .await;
    assert_eq!(s, 422);
    f.call(
        &t,
        Method::GET,
        "/repos/{owner}/{repo}/issues",
        &or,
        "?state=all&labels=perf-drift&per_page=2",
        None,
    )
    .await;
    f.call(
        &t,
        Method::GET,
        "/repos/{owner}/{repo}/issues",
        &or,
        "?state=open",
        None,
    )
    .await;
    let add = "/repos/{owner}/{repo}/issues/{issue_number}/labels";
    let (s, added) = f
        .call(
            &t,
            Method::POST,
            add,
            &one,
            "",
            Some(json!({"labels": ["drift-accepted", "perf-drift"]})),
        )
        .await;
    let names: Vec<&str> = added
        .as_array()
        .expect("labels")
        .iter()
        .filter_map(|l| l["name"].as_str())
        .collect();
    assert_eq!(
        (s, names),
        (200, vec!["perf-drift", "lane:nightly", "drift-accepted"])
    );
    let (s, _) = f
        .call(&t, Method::POST, add, &one, "", Some(json!({"labels": []})))
        .await;
    assert_eq!(s, 422);
    let comments = "/repos/{owner}/{repo}/issues/{issue_number}/comments";
    let (s, _) = f
        .call(
            &t,
            Method::POST,
            comments,
            &one,
            "",
            Some(json!({"body": "still reproduces"})),
        )
        .await;
    assert_eq!(s, 201);
    let (s, copy) = f
        .call(
            &t,
            Method::POST,
            comments,
            &one,
            "",
            Some(json!({"body": "still reproduces"})),
        )
        .await;
    assert_eq!(s, 201);
    // The description lists only 204 for a deletion (GitHub answers 404
    // for a comment that is gone; the flows test that, not the contract).
    let copy_id = copy["id"].as_u64().expect("comment id").to_string();
    let (s, _) = f
        .call(
            &t,
            Method::DELETE,
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
            &[or[0], or[1], ("comment_id", copy_id.as_str())],
            "",
            None,
        )
        .await;
    assert_eq!(s, 204);
    let (s, _) = f
        .call(&t, Method::POST, comments, &one, "", Some(json!({})))
        .await;
    assert_eq!(s, 422);
    f.call(&t, Method::GET, comments, &one, "", None).await;
    f.call(&t, Method::GET, "/rate_limit", &[], "", None).await;

    // Repository administration (tests/openapi_contract/admin.rs).
    admin::flow(&mut f, &t, &iid).await;
    // Pull requests, statuses and contents writes
    // (tests/openapi_contract/pulls.rs).
    pulls::flow(&mut f, &iid).await;

    // A contents-only token is refused issue writes (403 is described).
    let contents_only = Cred::Token(f.sim.mint_token(
        iid.parse().expect("id"),
        &[("contents", "write")],
        None,
    ));
    let (s, _) = f
        .call(
            &contents_only,
            Method::POST,
            "/repos/{owner}/{repo}/issues",
            &or,
            "",
            Some(json!({"title": "t"})),
        )
        .await;
    assert_eq!(s, 403);
    let (s, _) = f
        .call(&t, Method::DELETE, "/installation/token", &[], "", None)
        .await;
    assert_eq!(s, 204);

    assert!(
        f.failures.is_empty(),
        "{} response(s) do not match:\n{}",
        f.failures.len(),
        f.failures.join("\n")
    );
    // GitHub sends `"status": "422"` in validation errors too, but the
    // `validation-error` schema (unlike `basic-error`) does not declare it;
    // nor do the inline schemas of the merge's 405 and 409.
    f.undeclared.retain(|m| {
        !(m.ends_with(" 422.status")
            || m == "pulls/merge 405.status"
            || m == "pulls/merge 409.status")
    });
    assert!(
        f.undeclared.is_empty(),
        "members not declared by the description: {:?}",
        f.undeclared
    );
    // Every served operation was exercised.
    let seen: BTreeSet<&str> = f.checked.iter().map(|(id, _)| id.as_str()).collect();
    let all: BTreeSet<&str> = OPERATIONS.iter().map(|o| o.id).collect();
    assert_eq!(
        seen,
        all,
        "operations not exercised: {:?}",
        all.difference(&seen)
    );

    // Every request body the flow sent matches the description too.
    for entry in f.sim.requests() {
        if entry.status.is_some_and(|s| s < 300) {
            openapi::validate_logged_request(&entry).unwrap_or_else(|e| panic!("{e}"));
        }
    }
}

#[test]
fn the_simulator_serves_exactly_the_operations_of_the_subset() {
    let spec = openapi::spec();
    let mut in_spec = BTreeSet::new();
    for (path, item) in spec["paths"].as_object().expect("paths") {
        for (method, op) in item.as_object().expect("path item") {
            if method == "parameters" {
                continue;
            }
            in_spec.insert((
                method.to_ascii_uppercase(),
                path.clone(),
                op["operationId"].as_str().expect("operationId").to_owned(),
            ));
        }
    }
    let served: BTreeSet<(String, String, String)> = OPERATIONS
        .iter()
        .map(|o| (o.method.to_owned(), o.template.to_owned(), o.id.to_owned()))
        .collect();
    assert_eq!(in_spec, served);
    for o in OPERATIONS {
        let op = openapi::operation(o.method, o.template).expect("in spec");
        assert_eq!(op["externalDocs"]["url"], o.docs, "{}", o.id);
    }
    assert!(spec.get("x-webhooks").is_none());
    assert_eq!(
        spec["info"]["version"], "23.0.2",
        "update openapi/README.md with the version"
    );
}

#[test]
fn the_descriptions_own_examples_validate() {
    // Examples in GitHub's description that contradict its own schema,
    // with the reason. Add here rather than weaken the check.
    const KNOWN_BAD: &[(&str, &str)] = &[
        // `full-repository` requires `language`, which the example (and
        // its `source`) leaves out.
        ("repos/get", "default-response"),
        // `"enforcement": "enabled"` is not in the schema's enum
        // (github/rest-api-description#5602 reports the same example
        // for the organization list).
        ("repos/get-repo-rulesets", "default"),
        // The pull request example's `requested_teams` item has no
        // `type`, which the `team` schema requires.
        ("pulls/create", "default"),
        ("pulls/get", "default"),
    ];
    let mut checked = 0;
    let mut failures = Vec::new();
    for o in OPERATIONS {
        for ex in openapi::response_examples(o.method, o.template) {
            let status = ex.status.expect("response example");
            checked += 1;
            if let Err(e) = openapi::validate_response(o.method, o.template, status, &ex.value) {
                if !KNOWN_BAD
                    .iter()
                    .any(|(id, name)| *id == o.id && *name == ex.name)
                {
                    failures.push(format!("{} example {:?}: {e}", o.id, ex.name));
                }
            }
        }
        for ex in openapi::request_examples(o.method, o.template) {
            checked += 1;
            if let Err(e) = openapi::validate_request(o.method, o.template, &ex.value) {
                failures.push(format!("{} request example {:?}: {e}", o.id, ex.name));
            }
        }
    }
    assert!(checked >= 30, "only {checked} examples found");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn request_validation_catches_wrong_shapes() {
    let refs = "/repos/{owner}/{repo}/git/refs/{ref}";
    assert!(openapi::validate_request("PATCH", refs, &json!({"sha": "abc"})).is_ok());
    assert!(openapi::validate_request("PATCH", refs, &json!({"force": false})).is_err());
    assert!(
        openapi::validate_request("PATCH", refs, &json!({"sha": "abc", "force": "no"})).is_err()
    );
    let tokens = "/app/installations/{installation_id}/access_tokens";
    assert!(
        openapi::validate_request(
            "POST",
            tokens,
            &json!({"permissions": {"contents": "write"}, "repositories": ["r"]})
        )
        .is_ok()
    );
    let err = openapi::validate_request(
        "POST",
        tokens,
        &json!({"permissions": {"contents": "admin"}}),
    )
    .expect_err("admin is not a level");
    assert!(err.to_string().contains("/permissions/contents"), "{err}");
    let issues = "/repos/{owner}/{repo}/issues";
    assert!(openapi::validate_request("POST", issues, &json!({"body": "no title"})).is_err());
    // A response with a status the description does not list is reported.
    let undescribed = openapi::validate_response("PATCH", refs, 201, &json!({}));
    assert!(undescribed.is_err());
    // `resolve` follows component references.
    let op = openapi::operation("PATCH", refs).expect("op");
    assert_eq!(
        resolve(&op["responses"]["422"])["description"],
        "Validation failed, or the endpoint has been spammed."
    );
}
