//! Repository administration: deployment environments and rulesets.
//!
//! The ruleset model shared by the HTTP handlers and the test-side setters:
//! the create-ruleset body validated the way GitHub validates it, which
//! rulesets apply to a ref (`ref_name` include and exclude patterns,
//! `~DEFAULT_BRANCH`, `~ALL`), and the rules that refuse a ref creation,
//! update, force update or deletion by the App. Also the handle's
//! accessors and seeding helpers for environments, rulesets and an
//! installation's repository selection.

use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

use super::GitHubSim;
use super::handlers::{ApiError, Result};
use super::shapes;
use super::state::{BranchPolicy, BypassActor, Environment, Repo, Ruleset};

/// Every rule `type` of the `repository-rule` schema.
const RULE_TYPES: &[&str] = &[
    "creation",
    "update",
    "deletion",
    "required_linear_history",
    "merge_queue",
    "required_deployments",
    "required_signatures",
    "pull_request",
    "required_status_checks",
    "non_fast_forward",
    "commit_message_pattern",
    "commit_author_email_pattern",
    "committer_email_pattern",
    "branch_name_pattern",
    "tag_name_pattern",
    "workflows",
    "code_scanning",
    "copilot_code_review",
    "license_compliance_scanning",
    "file_path_restriction",
    "max_file_path_length",
    "file_extension_restriction",
    "max_file_size",
];

/// The `actor_type`s of `repository-ruleset-bypass-actor`.
const ACTOR_TYPES: &[&str] = &[
    "Integration",
    "OrganizationAdmin",
    "RepositoryRole",
    "Team",
    "DeployKey",
    "User",
];

/// Actor types that must name their actor with `actor_id`.
const ACTOR_TYPES_WITH_ID: &[&str] = &["Integration", "RepositoryRole", "Team", "User"];

/// A ruleset as a create request describes it, validated.
#[derive(Debug, Clone)]
pub(crate) struct RulesetSpec {
    pub name: String,
    pub target: String,
    pub enforcement: String,
    pub bypass_actors: Vec<BypassActor>,
    pub ref_name: Option<(Vec<String>, Vec<String>)>,
    pub rules: Vec<Value>,
}

/// `Invalid request.` with GitHub's detail line (how the rulesets API
/// reports a body that does not match its schema).
fn invalid(detail: &str, docs: &'static str) -> ApiError {
    ApiError::unprocessable(format!("Invalid request.\n\n{detail}"), docs)
}

/// A value as GitHub quotes it in a message: strings bare, others as JSON.
fn shown(v: &Value) -> String {
    v.as_str().map_or_else(|| v.to_string(), str::to_owned)
}

/// `v` when it is one of `allowed`, else GitHub's "is not a possible
/// value" 422 for the property at `at`.
pub(crate) fn one_of(v: &Value, at: &str, allowed: &[&str], docs: &'static str) -> Result<String> {
    match v.as_str() {
        Some(s) if allowed.contains(&s) => Ok(s.to_owned()),
        _ => Err(invalid(
            &format!(
                "Invalid property {at}: `{}` is not a possible value. Must be one of the following: {}.",
                shown(v),
                allowed.join(", ")
            ),
            docs,
        )),
    }
}

fn not_of_type(v: &Value, at: &str, kind: &str, docs: &'static str) -> ApiError {
    invalid(
        &format!(
            "Invalid property {at}: `{}` is not of type `{kind}`.",
            shown(v)
        ),
        docs,
    )
}

fn patterns(v: Option<&Value>, at: &str, docs: &'static str) -> Result<Vec<String>> {
    let items = match v {
        None | Some(Value::Null) => return Ok(Vec::new()),
        Some(Value::Array(items)) => items,
        Some(other) => return Err(not_of_type(other, at, "array", docs)),
    };
    let mut out = Vec::with_capacity(items.len());
    for (i, p) in items.iter().enumerate() {
        let p = p
            .as_str()
            .ok_or_else(|| not_of_type(p, &format!("{at}/{i}"), "string", docs))?;
        if p.trim().is_empty() {
            // GitHub's wording for an empty pattern.
            let mut e = ApiError::unprocessable("Validation Failed", docs);
            e.errors = Some(json!([format!("Invalid target patterns: '{p}'")]));
            return Err(e);
        }
        out.push(p.to_owned());
    }
    Ok(out)
}

fn bypass_actor(i: usize, v: &Value, docs: &'static str) -> Result<BypassActor> {
    let at = format!("/bypass_actors/{i}");
    let Value::Object(o) = v else {
        return Err(not_of_type(v, &at, "object", docs));
    };
    let actor_type = one_of(
        o.get("actor_type").unwrap_or(&Value::Null),
        &format!("{at}/actor_type"),
        ACTOR_TYPES,
        docs,
    )?;
    let actor_id = match o.get("actor_id") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) if n.as_u64().is_some() => n.as_u64(),
        Some(other) => {
            return Err(not_of_type(
                other,
                &format!("{at}/actor_id"),
                "integer",
                docs,
            ));
        }
    };
    if actor_id.is_none() && ACTOR_TYPES_WITH_ID.contains(&actor_type.as_str()) {
        return Err(invalid(
            &format!(
                "Invalid property {at}: `actor_id` is required for actor type `{actor_type}`."
            ),
            docs,
        ));
    }
    let bypass_mode = match o.get("bypass_mode") {
        None | Some(Value::Null) => "always".to_owned(),
        Some(m) => one_of(
            m,
            &format!("{at}/bypass_mode"),
            &["always", "pull_request", "exempt"],
            docs,
        )?,
    };
    if bypass_mode == "pull_request" && actor_type == "DeployKey" {
        return Err(invalid(
            &format!("Invalid property {at}: `pull_request` is not a bypass mode for `DeployKey`."),
            docs,
        ));
    }
    Ok(BypassActor {
        actor_id,
        actor_type,
        bypass_mode,
    })
}

fn rule(i: usize, v: &Value, docs: &'static str) -> Result<Value> {
    // GitHub's message for a rule that matches none of the rule schemas.
    let no_match = || {
        invalid(
            &format!(
                "Invalid property /rules/{i}: data matches no possible input. See `documentation_url`."
            ),
            docs,
        )
    };
    let Value::Object(o) = v else {
        return Err(no_match());
    };
    let known = o
        .get("type")
        .and_then(Value::as_str)
        .is_some_and(|t| RULE_TYPES.contains(&t));
    let parameters_ok = o
        .get("parameters")
        .is_none_or(|p| p.is_object() || p.is_null());
    if !known || !parameters_ok {
        return Err(no_match());
    }
    Ok(v.clone())
}

/// Validates a create-ruleset body (`repos/create-repo-ruleset`):
/// `name` and `enforcement` are required, `target` defaults to `branch`,
/// bypass actors and rule types must be GitHub's, patterns non-empty.
/// Uniqueness of the name is checked by the caller.
pub(crate) fn parse_ruleset(body: &Map<String, Value>, docs: &'static str) -> Result<RulesetSpec> {
    let name = match body.get("name") {
        None | Some(Value::Null) => return Err(ApiError::missing("name", docs)),
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::String(_)) => {
            let mut e = ApiError::unprocessable("Validation Failed", docs);
            e.errors = Some(json!(["Name can't be blank"]));
            return Err(e);
        }
        Some(other) => return Err(not_of_type(other, "/name", "string", docs)),
    };
    let enforcement = match body.get("enforcement") {
        None | Some(Value::Null) => return Err(ApiError::missing("enforcement", docs)),
        Some(v) => one_of(v, "/enforcement", &["disabled", "active", "evaluate"], docs)?,
    };
    let target = match body.get("target") {
        None | Some(Value::Null) => "branch".to_owned(),
        Some(v) => one_of(v, "/target", &["branch", "tag", "push"], docs)?,
    };
    let bypass_actors = match body.get("bypass_actors") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| bypass_actor(i, v, docs))
            .collect::<Result<_>>()?,
        Some(other) => return Err(not_of_type(other, "/bypass_actors", "array", docs)),
    };
    let ref_name = match body.get("conditions") {
        None | Some(Value::Null) => None,
        Some(Value::Object(c)) => match c.get("ref_name") {
            None | Some(Value::Null) => Some((Vec::new(), Vec::new())),
            Some(Value::Object(r)) => Some((
                patterns(r.get("include"), "/conditions/ref_name/include", docs)?,
                patterns(r.get("exclude"), "/conditions/ref_name/exclude", docs)?,
            )),
            Some(other) => {
                return Err(not_of_type(other, "/conditions/ref_name", "object", docs));
            }
        },
        Some(other) => return Err(not_of_type(other, "/conditions", "object", docs)),
    };
    let rules = match body.get("rules") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .enumerate()
            .map(|(i, v)| rule(i, v, docs))
            .collect::<Result<_>>()?,
        Some(other) => return Err(not_of_type(other, "/rules", "array", docs)),
    };
    Ok(RulesetSpec {
        name,
        target,
        enforcement,
        bypass_actors,
        ref_name,
        rules,
    })
}

/// 422 `Validation Failed` with `"Name must be unique"` (GitHub sends the
/// errors as strings here) when `repo` has a ruleset called `name`.
pub(crate) fn check_unique_name(repo: &Repo, name: &str, docs: &'static str) -> Result<()> {
    if repo.rulesets.iter().any(|r| r.name == name) {
        let mut e = ApiError::unprocessable("Validation Failed", docs);
        e.errors = Some(json!(["Name must be unique"]));
        return Err(e);
    }
    Ok(())
}

/// A ruleset from a validated spec.
pub(crate) fn new_ruleset(id: u64, spec: RulesetSpec, now: i64) -> Ruleset {
    Ruleset {
        id,
        name: spec.name,
        target: spec.target,
        enforcement: spec.enforcement,
        bypass_actors: spec.bypass_actors,
        ref_name: spec.ref_name,
        rules: spec.rules,
        created_at: now,
        updated_at: now,
    }
}

/// `current_user_can_bypass` for the App `app_id` (every installation token
/// acts as the App): its `Integration` bypass actor's mode, else `never`.
pub(crate) fn app_can_bypass(rs: &Ruleset, app_id: u64) -> &'static str {
    let mode = rs
        .bypass_actors
        .iter()
        .find(|a| a.actor_type == "Integration" && a.actor_id == Some(app_id))
        .map(|a| a.bypass_mode.as_str());
    match mode {
        Some("always") => "always",
        Some("pull_request") => "pull_requests_only",
        Some("exempt") => "exempt",
        _ => "never",
    }
}

/// fnmatch-style matching of a full ref name: `*` and `?` stay within one
/// path segment, `**` crosses segments.
fn glob(pattern: &[u8], text: &[u8]) -> bool {
    match pattern {
        [] => text.is_empty(),
        [b'*', b'*', rest @ ..] => (0..=text.len()).any(|k| glob(rest, &text[k..])),
        [b'*', rest @ ..] => {
            let run = text.iter().take_while(|&&c| c != b'/').count();
            (0..=run).any(|k| glob(rest, &text[k..]))
        }
        [b'?', rest @ ..] => text
            .split_first()
            .is_some_and(|(c, t)| *c != b'/' && glob(rest, t)),
        [c, rest @ ..] => text
            .split_first()
            .is_some_and(|(t0, t)| t0 == c && glob(rest, t)),
    }
}

/// Whether one `ref_name` pattern matches `ref_name` (full, `refs/heads/x`).
fn pattern_matches(pattern: &str, ref_name: &str, default_branch: &str, prefix: &str) -> bool {
    match pattern {
        "~ALL" => ref_name.starts_with(prefix),
        "~DEFAULT_BRANCH" => ref_name == format!("refs/heads/{default_branch}"),
        p => glob(p.as_bytes(), ref_name.as_bytes()),
    }
}

/// Whether a ruleset targets `ref_name`: a branch ruleset targets
/// `refs/heads/…`, a tag ruleset `refs/tags/…` (a push ruleset no ref),
/// when an include pattern matches and no exclude pattern does. A ruleset
/// without conditions targets nothing.
pub(crate) fn targets(rs: &Ruleset, ref_name: &str, default_branch: &str) -> bool {
    let prefix = match rs.target.as_str() {
        "branch" => "refs/heads/",
        "tag" => "refs/tags/",
        _ => return false,
    };
    let Some((include, exclude)) = &rs.ref_name else {
        return false;
    };
    ref_name.starts_with(prefix)
        && include
            .iter()
            .any(|p| pattern_matches(p, ref_name, default_branch, prefix))
        && !exclude
            .iter()
            .any(|p| pattern_matches(p, ref_name, default_branch, prefix))
}

/// A change of one ref through the git refs API.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RefChange {
    Create,
    Update { fast_forward: bool },
    Delete,
}

/// A 422 like GitHub's when active rulesets refuse `change` of `ref_name`
/// by the App `app_id`: `Repository rule violations found` followed by one
/// line per violated rule (the lines are the simulator's wording). Rulesets that list the App as
/// an `Integration` bypass actor (mode `always` or `exempt`) do not apply.
pub(crate) fn rule_violations(
    repo: &Repo,
    app_id: u64,
    ref_name: &str,
    change: RefChange,
    docs: &'static str,
) -> Result<()> {
    let mut found = BTreeSet::new();
    for rs in &repo.rulesets {
        let bypass = matches!(app_can_bypass(rs, app_id), "always" | "exempt");
        if rs.enforcement != "active" || bypass || !targets(rs, ref_name, &repo.default_branch) {
            continue;
        }
        for rule in &rs.rules {
            let message = match (rule["type"].as_str(), change) {
                (Some("creation"), RefChange::Create) => {
                    "Cannot create ref due to creations being restricted."
                }
                (Some("update"), RefChange::Update { .. }) => "Cannot update this protected ref.",
                (
                    Some("non_fast_forward"),
                    RefChange::Update {
                        fast_forward: false,
                    },
                ) => "Cannot force-push to this branch",
                (Some("deletion"), RefChange::Delete) => "Cannot delete this branch",
                _ => continue,
            };
            found.insert(message);
        }
    }
    if found.is_empty() {
        return Ok(());
    }
    let mut message = "Repository rule violations found\n\n".to_owned();
    for m in found {
        message.push_str(m);
        message.push_str("\n\n");
    }
    Err(ApiError::unprocessable(message, docs))
}

/// An environment as the simulator holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EnvironmentSnapshot {
    /// Name, as created.
    pub name: String,
    /// `(protected_branches, custom_branch_policies)`; `None` lets every
    /// branch deploy.
    pub deployment_branch_policy: Option<(bool, bool)>,
    /// The deployment branch policies: `(name pattern, branch|tag)`, in
    /// creation order.
    pub branch_policies: Vec<(String, String)>,
    /// Wait timer in minutes (0: none).
    pub wait_timer: u64,
    /// Whether the creator of a deployment may not approve it.
    pub prevent_self_review: bool,
    /// Required reviewers: `(User|Team, id)`.
    pub reviewers: Vec<(String, u64)>,
}

/// The documentation URL of the errors `insert_ruleset` panics with.
const SEEDED_RULESET_DOCS: &str = "https://docs.github.com/rest/repos/rules";

impl GitHubSim {
    /// An environment (names are case-insensitive), or `None`.
    pub fn environment(&self, owner: &str, repo: &str, name: &str) -> Option<EnvironmentSnapshot> {
        self.with(|st| {
            let e = st.repo(owner, repo)?.environment(name)?;
            Some(EnvironmentSnapshot {
                name: e.name.clone(),
                deployment_branch_policy: e.branch_policy,
                branch_policies: e
                    .branch_policies
                    .iter()
                    .map(|p| (p.name.clone(), p.kind.clone()))
                    .collect(),
                wait_timer: e.wait_timer,
                prevent_self_review: e.prevent_self_review,
                reviewers: e.reviewers.clone(),
            })
        })
    }

    /// Creates or replaces an environment's deployment branch policy
    /// (`(protected_branches, custom_branch_policies)`, `None` for every
    /// branch) and its branch policies (type `branch`), directly in the
    /// state: no token, no validation, so a test can plant what the API
    /// would refuse (both flags true, patterns without custom policies).
    /// Wait timer and reviewers of an existing environment are kept.
    ///
    /// # Panics
    /// When the repository does not exist.
    pub fn put_environment(
        &self,
        owner: &str,
        repo: &str,
        name: &str,
        policy: Option<(bool, bool)>,
        branch_policies: &[&str],
    ) {
        self.with(|st| {
            let now = st.now();
            let env_id = st.next_id();
            let ids: Vec<u64> = branch_policies.iter().map(|_| st.next_id()).collect();
            let r = st.repo_mut(owner, repo).expect("repository exists");
            let policies = branch_policies
                .iter()
                .zip(ids)
                .map(|(n, id)| BranchPolicy {
                    id,
                    name: (*n).to_owned(),
                    kind: "branch".to_owned(),
                })
                .collect();
            match r.environment_mut(name) {
                Some(e) => {
                    e.branch_policy = policy;
                    e.branch_policies = policies;
                    e.updated_at = now;
                }
                None => r.environments.push(Environment {
                    id: env_id,
                    name: name.to_owned(),
                    created_at: now,
                    updated_at: now,
                    wait_timer: 0,
                    prevent_self_review: false,
                    reviewers: Vec::new(),
                    branch_policy: policy,
                    branch_policies: policies,
                }),
            }
        });
    }

    /// Deletes an environment directly. Returns whether it existed.
    pub fn delete_environment(&self, owner: &str, repo: &str, name: &str) -> bool {
        self.with(|st| {
            let Some(r) = st.repo_mut(owner, repo) else {
                return false;
            };
            let before = r.environments.len();
            r.environments
                .retain(|e| !e.name.eq_ignore_ascii_case(name));
            r.environments.len() != before
        })
    }

    /// Every ruleset of a repository, oldest first, each in the shape of
    /// `GET /repos/{owner}/{repo}/rulesets/{ruleset_id}` as the App sees it
    /// with `administration: write` (`bypass_actors` included).
    pub fn rulesets(&self, owner: &str, repo: &str) -> Vec<Value> {
        let api = self.base_url();
        self.with(|st| {
            let app_id = st.app.id;
            st.repo(owner, repo)
                .map(|r| {
                    r.rulesets
                        .iter()
                        .map(|rs| shapes::ruleset(&api, r, rs, app_can_bypass(rs, app_id), true))
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// Adds a ruleset directly (no token), `body` in the shape of a
    /// create-ruleset request. Returns its id.
    ///
    /// # Panics
    /// When the repository does not exist or the body is one the API
    /// would refuse (the panic message is GitHub's error).
    pub fn insert_ruleset(&self, owner: &str, repo: &str, body: Value) -> u64 {
        let Value::Object(body) = body else {
            panic!("a ruleset body is a JSON object");
        };
        let spec = parse_ruleset(&body, SEEDED_RULESET_DOCS)
            .unwrap_or_else(|e| panic!("invalid ruleset: {} {:?}", e.message, e.errors));
        self.with(|st| {
            let now = st.now();
            let id = st.next_id();
            let r = st.repo_mut(owner, repo).expect("repository exists");
            check_unique_name(r, &spec.name, SEEDED_RULESET_DOCS)
                .unwrap_or_else(|e| panic!("invalid ruleset: {} {:?}", e.message, e.errors));
            r.rulesets.push(new_ruleset(id, spec, now));
            id
        })
    }

    /// Deletes a ruleset directly. Returns whether it existed.
    pub fn delete_ruleset(&self, owner: &str, repo: &str, id: u64) -> bool {
        self.with(|st| {
            let Some(r) = st.repo_mut(owner, repo) else {
                return false;
            };
            let before = r.rulesets.len();
            r.rulesets.retain(|rs| rs.id != id);
            r.rulesets.len() != before
        })
    }

    /// Sets what an installation reports as its `repository_selection`
    /// (`all`, the default, or `selected`), in
    /// `GET /repos/{owner}/{repo}/installation` and in new tokens. Which
    /// repositories a token reaches does not change.
    ///
    /// # Panics
    /// On a value other than `all` or `selected`.
    pub fn set_repository_selection(&self, installation_id: u64, selection: &str) {
        assert!(
            matches!(selection, "all" | "selected"),
            "repository_selection is all or selected, not {selection:?}"
        );
        self.with(|st| {
            if let Some(i) = st.installations.get_mut(&installation_id) {
                i.repository_selection = selection.to_owned();
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ruleset(include: &[&str], exclude: &[&str], rules: &[&str], bypass: Option<u64>) -> Ruleset {
        let body = json!({
            "name": "r",
            "enforcement": "active",
            "bypass_actors": bypass
                .map(|id| vec![json!({"actor_id": id, "actor_type": "Integration", "bypass_mode": "always"})])
                .unwrap_or_default(),
            "conditions": {"ref_name": {"include": include, "exclude": exclude}},
            "rules": rules.iter().map(|t| json!({"type": t})).collect::<Vec<_>>(),
        });
        let spec = parse_ruleset(body.as_object().expect("object"), "d").expect("valid");
        new_ruleset(1, spec, 0)
    }

    #[test]
    fn patterns_match_like_github() {
        assert!(glob(
            b"refs/heads/benchmark-result/*",
            b"refs/heads/benchmark-result/x"
        ));
        assert!(!glob(
            b"refs/heads/benchmark-result/*",
            b"refs/heads/benchmark-result/a/b"
        ));
        assert!(glob(
            b"refs/heads/benchmark-result/**",
            b"refs/heads/benchmark-result/a/b"
        ));
        assert!(glob(b"refs/heads/release-?", b"refs/heads/release-1"));
        assert!(!glob(b"refs/heads/main", b"refs/heads/main2"));
        let rs = ruleset(
            &["~DEFAULT_BRANCH", "refs/heads/benchmark-history"],
            &[],
            &[],
            None,
        );
        assert!(targets(&rs, "refs/heads/main", "main"));
        assert!(targets(&rs, "refs/heads/benchmark-history", "main"));
        assert!(!targets(&rs, "refs/heads/other", "main"));
        let all = ruleset(&["~ALL"], &["refs/heads/scratch/*"], &[], None);
        assert!(targets(&all, "refs/heads/anything", "main"));
        assert!(!targets(&all, "refs/heads/scratch/x", "main"));
        assert!(!targets(&all, "refs/tags/v1", "main"));
    }

    #[test]
    fn rules_refuse_the_app_unless_it_may_bypass() {
        let mut repo = Repo {
            id: 1,
            owner: "o".into(),
            name: "r".into(),
            installation_id: 1,
            default_branch: "main".into(),
            created_at: 0,
            store: crate::sim::git::ObjectStore::default(),
            refs: Default::default(),
            issues: Vec::new(),
            labels: Vec::new(),
            environments: Vec::new(),
            rulesets: vec![ruleset(
                &["refs/heads/benchmark-history"],
                &[],
                &["non_fast_forward", "deletion"],
                None,
            )],
            #[cfg(feature = "platform")]
            pulls: Default::default(),
        };
        let history = "refs/heads/benchmark-history";
        let check = |repo: &Repo, change| rule_violations(repo, 7, history, change, "d");
        assert!(check(&repo, RefChange::Update { fast_forward: true }).is_ok());
        assert!(check(&repo, RefChange::Create).is_ok());
        let forced = check(
            &repo,
            RefChange::Update {
                fast_forward: false,
            },
        )
        .expect_err("refused");
        assert_eq!(
            forced.message,
            "Repository rule violations found\n\nCannot force-push to this branch\n\n"
        );
        assert!(check(&repo, RefChange::Delete).is_err());
        repo.rulesets[0].enforcement = "evaluate".into();
        assert!(check(&repo, RefChange::Delete).is_ok());
        repo.rulesets = vec![ruleset(&[history], &[], &["deletion"], Some(7))];
        assert!(check(&repo, RefChange::Delete).is_ok());
        assert!(rule_violations(&repo, 8, history, RefChange::Delete, "d").is_err());
    }

    #[test]
    fn bodies_are_validated_like_github() {
        let parse = |v: Value| parse_ruleset(v.as_object().expect("object"), "d");
        let e = parse(json!({"enforcement": "active"})).expect_err("no name");
        assert_eq!(e.message, "Invalid request.\n\n\"name\" wasn't supplied.");
        let e = parse(json!({"name": "n"})).expect_err("no enforcement");
        assert_eq!(
            e.message,
            "Invalid request.\n\n\"enforcement\" wasn't supplied."
        );
        let e = parse(json!({"name": "n", "enforcement": "on"})).expect_err("bad enforcement");
        assert!(
            e.message.contains("`on` is not a possible value"),
            "{}",
            e.message
        );
        let e = parse(json!({"name": "n", "enforcement": "active", "rules": [{"type": "nope"}]}))
            .expect_err("unknown rule");
        assert!(
            e.message
                .contains("/rules/0: data matches no possible input")
        );
        let e = parse(json!({"name": "n", "enforcement": "active",
                             "bypass_actors": [{"actor_id": 1, "actor_type": "Robot"}]}))
        .expect_err("bad actor");
        assert!(e.message.contains("/bypass_actors/0/actor_type"));
        let ok = parse(json!({"name": "n", "enforcement": "active",
                              "bypass_actors": [{"actor_id": 1, "actor_type": "Integration"}]}))
        .expect("valid");
        assert_eq!(ok.bypass_actors[0].bypass_mode, "always");
        assert_eq!(ok.target, "branch");
    }
}
