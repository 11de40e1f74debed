//! Repository administration over HTTP: the repository itself, deployment
//! environments and their branch policies, and rulesets.
//!
//! Permissions are GitHub's for installation tokens: reading the repository
//! and its rulesets needs `metadata: read`, reading environments and branch
//! policies `actions: read`, and every write here `administration: write`.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};

use super::{
    ApiError, Ctx, Result, Sh, authorize, caller_has, created, json_response, object_body,
    paginate, paginate_with, query_get, query_pairs,
};
use crate::sim::admin;
use crate::sim::auth::Access;
use crate::sim::shapes::{self, encode_segment};
use crate::sim::state::{BranchPolicy, Environment, Repo};

fn respond(r: Result<Response>) -> Response {
    r.unwrap_or_else(IntoResponse::into_response)
}

/// The longest wait timer GitHub accepts, in minutes (30 days).
const MAX_WAIT_TIMER: u64 = 43_200;
/// The most required reviewers an environment may have.
const MAX_REVIEWERS: usize = 6;
/// The longest environment name GitHub accepts, in characters.
const MAX_ENVIRONMENT_NAME: usize = 255;
/// The members a create-or-update-environment body may have (the schema
/// has `additionalProperties: false`).
const ENVIRONMENT_KEYS: &[&str] = &[
    "wait_timer",
    "prevent_self_review",
    "reviewers",
    "deployment_branch_policy",
];

/// `GET /repos/{owner}/{repo}` (`metadata: read`): the `full-repository`.
pub(crate) async fn get_repo(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "metadata", Access::Read)?;
        let r = &st.repos[&key];
        let owner_id = st
            .installations
            .get(&r.installation_id)
            .map_or(0, |i| i.account_id);
        Ok(json_response(
            StatusCode::OK,
            &shapes::full_repository(&sh.api, r, owner_id),
        ))
    })())
}

fn find_environment<'a>(r: &'a Repo, name: &str, docs: &'static str) -> Result<&'a Environment> {
    r.environment(name).ok_or_else(|| ApiError::not_found(docs))
}

/// The environment, when its `deployment_branch_policy` allows custom
/// branch policies; GitHub answers 404 otherwise (as for a missing one).
fn custom_environment<'a>(r: &'a Repo, name: &str, docs: &'static str) -> Result<&'a Environment> {
    let e = find_environment(r, name, docs)?;
    if e.branch_policy.is_some_and(|(_, custom)| custom) {
        Ok(e)
    } else {
        Err(ApiError::not_found(docs))
    }
}

/// `GET /repos/{owner}/{repo}/environments/{environment_name}`
/// (`actions: read`).
pub(crate) async fn get_environment(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, name)): Path<(String, String, String)>,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "actions", Access::Read)?;
        let r = &st.repos[&key];
        let e = find_environment(r, &name, ctx.docs)?;
        Ok(json_response(
            StatusCode::OK,
            &shapes::environment(&sh.api, r, e),
        ))
    })())
}

/// What a create-or-update-environment body sets; `None` keeps the
/// current value (or the default for a new environment).
#[derive(Debug, Default)]
struct EnvironmentUpdate {
    wait_timer: Option<u64>,
    prevent_self_review: Option<bool>,
    reviewers: Option<Vec<(String, u64)>>,
    branch_policy: Option<Option<(bool, bool)>>,
}

fn not_a(field: &str, kind: &str, v: &Value, docs: &'static str) -> ApiError {
    ApiError::unprocessable(
        format!("Invalid request.\n\nFor 'properties/{field}', {v} is not {kind}."),
        docs,
    )
}

fn reviewer(v: &Value, docs: &'static str) -> Result<(String, u64)> {
    let kind = admin::one_of(
        v.get("type").unwrap_or(&Value::Null),
        "/reviewers/type",
        &["User", "Team"],
        docs,
    )?;
    let id = v.get("id").and_then(Value::as_u64).ok_or_else(|| {
        not_a(
            "id",
            "an integer",
            v.get("id").unwrap_or(&Value::Null),
            docs,
        )
    })?;
    Ok((kind, id))
}

fn environment_update(body: &Map<String, Value>, docs: &'static str) -> Result<EnvironmentUpdate> {
    if let Some(k) = body
        .keys()
        .find(|k| !ENVIRONMENT_KEYS.contains(&k.as_str()))
    {
        return Err(ApiError::unprocessable(
            format!("Invalid request.\n\n\"{k}\" is not a permitted key."),
            docs,
        ));
    }
    let mut u = EnvironmentUpdate::default();
    if let Some(v) = body.get("wait_timer") {
        let minutes = v
            .as_u64()
            .filter(|m| *m <= MAX_WAIT_TIMER)
            .ok_or_else(|| {
                ApiError::unprocessable(
                    format!(
                        "Invalid request.\n\nwait_timer must be an integer between 0 and {MAX_WAIT_TIMER}, not {v}."
                    ),
                    docs,
                )
            })?;
        u.wait_timer = Some(minutes);
    }
    match body.get("prevent_self_review") {
        None => {}
        Some(Value::Bool(b)) => u.prevent_self_review = Some(*b),
        Some(v) => return Err(not_a("prevent_self_review", "a boolean", v, docs)),
    }
    match body.get("reviewers") {
        None => {}
        Some(Value::Null) => u.reviewers = Some(Vec::new()),
        Some(Value::Array(items)) if items.len() <= MAX_REVIEWERS => {
            u.reviewers = Some(
                items
                    .iter()
                    .map(|v| reviewer(v, docs))
                    .collect::<Result<_>>()?,
            );
        }
        Some(Value::Array(_)) => {
            return Err(ApiError::unprocessable(
                format!(
                    "Invalid request.\n\nAn environment can have at most {MAX_REVIEWERS} reviewers."
                ),
                docs,
            ));
        }
        Some(v) => return Err(not_a("reviewers", "an array", v, docs)),
    }
    match body.get("deployment_branch_policy") {
        None => {}
        Some(Value::Null) => u.branch_policy = Some(None),
        Some(Value::Object(p)) => {
            let flag = |k: &str| match p.get(k) {
                Some(Value::Bool(b)) => Ok(*b),
                None | Some(Value::Null) => Err(ApiError::missing(
                    &format!("deployment_branch_policy.{k}"),
                    docs,
                )),
                Some(v) => Err(not_a(
                    &format!("deployment_branch_policy/{k}"),
                    "a boolean",
                    v,
                    docs,
                )),
            };
            let protected = flag("protected_branches")?;
            let custom = flag("custom_branch_policies")?;
            // GitHub's description: a 422 when both are set to the same
            // value (exactly one kind of branch restriction applies).
            if protected == custom {
                return Err(ApiError::unprocessable(
                    format!(
                        "Invalid request.\n\nprotected_branches and custom_branch_policies cannot both be {protected}."
                    ),
                    docs,
                ));
            }
            u.branch_policy = Some(Some((protected, custom)));
        }
        Some(v) => return Err(not_a("deployment_branch_policy", "an object", v, docs)),
    }
    Ok(u)
}

/// `PUT /repos/{owner}/{repo}/environments/{environment_name}`
/// (`administration: write`): creates the environment or updates the
/// members the body names (a member left out keeps its value). Leaving
/// custom branch policies drops the environment's branch policies.
pub(crate) async fn put_environment(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, name)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "administration", Access::Write)?;
        // The body is optional and may be `null`.
        let body = if body.trim_ascii() == b"null" {
            Map::new()
        } else {
            object_body(&body, ctx.docs)?
        };
        let update = environment_update(&body, ctx.docs)?;
        if name.trim().is_empty() || name.chars().count() > MAX_ENVIRONMENT_NAME {
            return Err(ApiError::unprocessable(
                format!(
                    "Invalid request.\n\nThe environment name must be 1 to {MAX_ENVIRONMENT_NAME} characters."
                ),
                ctx.docs,
            ));
        }
        let now = st.now();
        let fresh = st.next_id();
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        if r.environment(&name).is_none() {
            r.environments.push(Environment {
                id: fresh,
                name: name.clone(),
                created_at: now,
                updated_at: now,
                wait_timer: 0,
                prevent_self_review: false,
                reviewers: Vec::new(),
                branch_policy: None,
                branch_policies: Vec::new(),
            });
        }
        let e = r
            .environment_mut(&name)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        if let Some(w) = update.wait_timer {
            e.wait_timer = w;
        }
        if let Some(p) = update.prevent_self_review {
            e.prevent_self_review = p;
        }
        if let Some(rv) = update.reviewers {
            e.reviewers = rv;
        }
        if let Some(bp) = update.branch_policy {
            e.branch_policy = bp;
        }
        if !e.branch_policy.is_some_and(|(_, custom)| custom) {
            e.branch_policies.clear();
        }
        e.updated_at = now;
        let r = &st.repos[&key];
        let e = find_environment(r, &name, ctx.docs)?;
        Ok(json_response(
            StatusCode::OK,
            &shapes::environment(&sh.api, r, e),
        ))
    })())
}

/// `GET .../environments/{environment_name}/deployment-branch-policies`
/// (`actions: read`): `{total_count, branch_policies}`, paginated like
/// other lists. 404 when the environment is missing or does not use custom
/// branch policies.
pub(crate) async fn list_branch_policies(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, name)): Path<(String, String, String)>,
    uri: Uri,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "actions", Access::Read)?;
        let e = custom_environment(&st.repos[&key], &name, ctx.docs)?;
        let items: Vec<Value> = e
            .branch_policies
            .iter()
            .map(shapes::branch_policy)
            .collect();
        let total = items.len();
        Ok(paginate_with(
            &sh.api,
            &uri,
            items,
            |page| json!({ "total_count": total, "branch_policies": page }),
        ))
    })())
}

/// `POST .../environments/{environment_name}/deployment-branch-policies`
/// (`administration: write`): 200 with the new policy; 303 to the existing
/// one when the same pattern (name and type) exists; 404 when the
/// environment is missing or does not use custom branch policies.
pub(crate) async fn create_branch_policy(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, name)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "administration", Access::Write)?;
        let body = object_body(&body, ctx.docs)?;
        let pattern = match body.get("name") {
            None | Some(Value::Null) => return Err(ApiError::missing("name", ctx.docs)),
            Some(Value::String(s)) => s.clone(),
            Some(v) => return Err(not_a("name", "a string", v, ctx.docs)),
        };
        let kind = match body.get("type") {
            None | Some(Value::Null) => "branch".to_owned(),
            Some(v) => admin::one_of(v, "/type", &["branch", "tag"], ctx.docs)?,
        };
        let e = custom_environment(&st.repos[&key], &name, ctx.docs)?;
        let policy_url = |id: u64| {
            format!(
                "{}/repos/{}/environments/{}/deployment-branch-policies/{id}",
                sh.api,
                st.repos[&key].full_name(),
                encode_segment(&e.name)
            )
        };
        if let Some(p) = e
            .branch_policies
            .iter()
            .find(|p| p.name == pattern && p.kind == kind)
        {
            let mut resp = StatusCode::SEE_OTHER.into_response();
            if let Ok(v) = HeaderValue::from_str(&policy_url(p.id)) {
                resp.headers_mut().insert(header::LOCATION, v);
            }
            return Ok(resp);
        }
        let id = st.next_id();
        let policy = BranchPolicy {
            id,
            name: pattern,
            kind,
        };
        let body = shapes::branch_policy(&policy);
        st.repos
            .get_mut(&key)
            .and_then(|r| r.environment_mut(&name))
            .ok_or_else(|| ApiError::not_found(ctx.docs))?
            .branch_policies
            .push(policy);
        Ok(json_response(StatusCode::OK, &body))
    })())
}

/// `GET .../deployment-branch-policies/{branch_policy_id}`
/// (`actions: read`): where the 303 of a duplicate policy points.
pub(crate) async fn get_branch_policy(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, name, id)): Path<(String, String, String, String)>,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "actions", Access::Read)?;
        let e = custom_environment(&st.repos[&key], &name, ctx.docs)?;
        let id: u64 = id.parse().map_err(|_| ApiError::not_found(ctx.docs))?;
        let p = e
            .branch_policies
            .iter()
            .find(|p| p.id == id)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        Ok(json_response(StatusCode::OK, &shapes::branch_policy(p)))
    })())
}

/// `GET /repos/{owner}/{repo}/rulesets` (`metadata: read`): summaries
/// (no rules, conditions or bypass actors), oldest first, filtered by
/// `targets` (comma-separated) and paginated.
pub(crate) async fn list_rulesets(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
    uri: Uri,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "metadata", Access::Read)?;
        let r = &st.repos[&key];
        let wanted: Option<Vec<String>> = query_get(&query_pairs(&uri), "targets").map(|t| {
            t.split(',')
                .map(|s| s.trim().to_owned())
                .filter(|s| !s.is_empty())
                .collect()
        });
        let items = r
            .rulesets
            .iter()
            .filter(|rs| wanted.as_ref().is_none_or(|w| w.contains(&rs.target)))
            .map(|rs| shapes::ruleset_summary(&sh.api, r, rs))
            .collect();
        Ok(paginate(&sh.api, &uri, items))
    })())
}

/// `GET /repos/{owner}/{repo}/rulesets/{ruleset_id}` (`metadata: read`):
/// the full ruleset; `bypass_actors` only for a token with
/// `administration: write`.
pub(crate) async fn get_ruleset(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, id)): Path<(String, String, String)>,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "metadata", Access::Read)?;
        let r = &st.repos[&key];
        let id: u64 = id.parse().map_err(|_| ApiError::not_found(ctx.docs))?;
        let rs = r
            .rulesets
            .iter()
            .find(|rs| rs.id == id)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let can_write = caller_has(&st, &ctx, "administration", Access::Write);
        let bypass = admin::app_can_bypass(rs, st.app.id);
        Ok(json_response(
            StatusCode::OK,
            &shapes::ruleset(&sh.api, r, rs, bypass, can_write),
        ))
    })())
}

/// `POST /repos/{owner}/{repo}/rulesets` (`administration: write`): 201
/// with the full ruleset; 422 for a missing name or enforcement, an
/// unknown rule type or actor type, or a name already taken.
pub(crate) async fn create_ruleset(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "administration", Access::Write)?;
        let body = object_body(&body, ctx.docs)?;
        let spec = admin::parse_ruleset(&body, ctx.docs)?;
        admin::check_unique_name(&st.repos[&key], &spec.name, ctx.docs)?;
        let now = st.now();
        let id = st.next_id();
        let app_id = st.app.id;
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        r.rulesets.push(admin::new_ruleset(id, spec, now));
        let r = &st.repos[&key];
        let rs = r
            .rulesets
            .iter()
            .find(|rs| rs.id == id)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let body = shapes::ruleset(&sh.api, r, rs, admin::app_can_bypass(rs, app_id), true);
        let url = format!("{}/repos/{}/rulesets/{id}", sh.api, r.full_name());
        Ok(created(&body, &url))
    })())
}
