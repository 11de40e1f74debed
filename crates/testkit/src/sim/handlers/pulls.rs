//! Pull requests (create, get, merge) and commit statuses (create one,
//! the combined status of a ref).

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use axum::{Extension, Router};
use serde_json::{Map, Value, json};

use super::{
    ApiError, Ctx, Result, Sh, authorize, bot, created, json_response, object_body, paginate_with,
};
use crate::sim::admin::{RefChange, rule_violations};
use crate::sim::auth::Access;
use crate::sim::git::{Commit, Object, Signature};
use crate::sim::merge;
use crate::sim::pulls::{CommitStatus, PullRequest, combined_state};
use crate::sim::shapes;
use crate::sim::state::State as SimState;

/// The pull-request and commit-status routes, added to `router`.
pub(crate) fn routes(router: Router<Sh>) -> Router<Sh> {
    router
        .route("/repos/{owner}/{repo}/pulls", post(create))
        .route("/repos/{owner}/{repo}/pulls/{number}", get(get_one))
        .route(
            "/repos/{owner}/{repo}/pulls/{number}/merge",
            put(merge_pull),
        )
        .route("/repos/{owner}/{repo}/statuses/{sha}", post(create_status))
        .route(
            "/repos/{owner}/{repo}/commits/{*rest}",
            get(combined_status),
        )
}

fn respond(r: Result<Response>) -> Response {
    r.unwrap_or_else(IntoResponse::into_response)
}

/// The id of the account that owns the repository `key`.
fn owner_id(st: &SimState, key: &str) -> u64 {
    st.repos
        .get(key)
        .and_then(|r| st.installations.get(&r.installation_id))
        .map_or(0, |i| i.account_id)
}

fn pull_number(s: &str, docs: &'static str) -> Result<u64> {
    s.parse().map_err(|_| ApiError::not_found(docs))
}

/// 422 `Validation Failed` with one `custom` error and its message, as
/// GitHub refuses a pull request it cannot open.
fn refused(message: String, docs: &'static str) -> ApiError {
    let mut e = ApiError::unprocessable("Validation Failed", docs);
    e.errors = Some(json!([{ "resource": "PullRequest", "code": "custom", "message": message }]));
    e
}

/// An optional string member: absent or `null` is `None`, another type
/// is 422 `invalid` for `resource`.
fn optional_str(
    body: &Map<String, Value>,
    field: &str,
    resource: &str,
    docs: &'static str,
) -> Result<Option<String>> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ApiError::validation(resource, field, "invalid", docs)),
    }
}

/// A required string member of a pull request: 422 `missing_field` when
/// absent or blank.
fn required_str(body: &Map<String, Value>, field: &str, docs: &'static str) -> Result<String> {
    optional_str(body, field, "PullRequest", docs)?
        .filter(|s| !s.trim().is_empty())
        .ok_or_else(|| ApiError::validation("PullRequest", field, "missing_field", docs))
}

/// `POST /repos/{owner}/{repo}/pulls`: `title`, `head` (a branch of this
/// repository, optionally `owner:branch`), `base`, optional `body` and
/// `draft`.
pub(crate) async fn create(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "pull_requests", Access::Write)?;
        st.sync_pulls();
        let body = object_body(&body, ctx.docs)?;
        let title = required_str(&body, "title", ctx.docs)?;
        let head = required_str(&body, "head", ctx.docs)?;
        let base = required_str(&body, "base", ctx.docs)?;
        let text = optional_str(&body, "body", "PullRequest", ctx.docs)?;
        let draft = match body.get("draft") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(_) => {
                return Err(ApiError::validation(
                    "PullRequest",
                    "draft",
                    "invalid",
                    ctx.docs,
                ));
            }
        };
        let (now, user, id, delay) = (st.now(), bot(&st), st.next_id(), st.mergeable_delay);
        let owner_id = owner_id(&st, &key);
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let head = match head.split_once(':') {
            Some((o, b)) if o.eq_ignore_ascii_case(&r.owner) => b.to_owned(),
            Some(_) => {
                return Err(ApiError::validation(
                    "PullRequest",
                    "head",
                    "invalid",
                    ctx.docs,
                ));
            }
            None => head,
        };
        let base_sha = r
            .branch_tip(&base)
            .cloned()
            .ok_or_else(|| ApiError::validation("PullRequest", "base", "invalid", ctx.docs))?;
        let head_sha = r
            .branch_tip(&head)
            .cloned()
            .ok_or_else(|| ApiError::validation("PullRequest", "head", "invalid", ctx.docs))?;
        if r.pulls
            .list
            .iter()
            .any(|p| p.open && p.head == head && p.base == base)
        {
            return Err(refused(
                format!("A pull request already exists for {}:{head}.", r.owner),
                ctx.docs,
            ));
        }
        if merge::merge_base(&r.store, &base_sha, &head_sha).is_none() {
            return Err(refused(
                format!("The {head} branch has no history in common with {base}"),
                ctx.docs,
            ));
        }
        if r.store.is_ancestor(&head_sha, &base_sha) {
            return Err(refused(
                format!("No commits between {base} and {head}"),
                ctx.docs,
            ));
        }
        let number = r.next_number();
        r.pulls.list.push(PullRequest {
            id,
            number,
            title,
            body: text,
            draft,
            head,
            base,
            head_sha,
            base_sha,
            user,
            created_at: now,
            updated_at: now,
            closed_at: None,
            merged_at: None,
            merge_commit_sha: None,
            merged_by: None,
            open: true,
            moved_at: now,
            reads: 0,
            mergeable: None,
        });
        let idx = r.pulls.list.len() - 1;
        let view = r.pull_view(idx, delay, now, false);
        let v = shapes::pull_request(&sh.api, r, &r.pulls.list[idx], owner_id, &view);
        let url = v["url"].as_str().unwrap_or_default().to_owned();
        Ok(created(&v, &url))
    })())
}

/// `GET /repos/{owner}/{repo}/pulls/{pull_number}`: counts as a read of
/// the pull request for the mergeability delay.
pub(crate) async fn get_one(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, number)): Path<(String, String, String)>,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "pull_requests", Access::Read)?;
        st.sync_pulls();
        let number = pull_number(&number, ctx.docs)?;
        let (now, delay, owner_id) = (st.now(), st.mergeable_delay, owner_id(&st, &key));
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let idx = r
            .pull_index(number)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let view = r.pull_view(idx, delay, now, true);
        Ok(json_response(
            StatusCode::OK,
            &shapes::pull_request(&sh.api, r, &r.pulls.list[idx], owner_id, &view),
        ))
    })())
}

fn not_mergeable(message: impl Into<String>, docs: &'static str) -> ApiError {
    ApiError::new(StatusCode::METHOD_NOT_ALLOWED, message, docs)
}

/// `PUT /repos/{owner}/{repo}/pulls/{pull_number}/merge`: a merge commit
/// (base tip, head tip) on the base branch. Needs `contents: write` and
/// `pull_requests: write`.
pub(crate) async fn merge_pull(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, number)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Write)?;
        authorize(&st, &ctx, &owner, &repo, "pull_requests", Access::Write)?;
        st.sync_pulls();
        // The description allows a `null` body.
        let body = if body.as_ref().trim_ascii() == b"null" {
            Map::new()
        } else {
            object_body(&body, ctx.docs)?
        };
        let number = pull_number(&number, ctx.docs)?;
        let (now, actor, app_id) = (st.now(), bot(&st), st.app.id);
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let idx = r
            .pull_index(number)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        if let Some((status, message)) = r.pulls.merge_failures.pop_front() {
            let status = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
            return Err(ApiError::new(status, message, ctx.docs));
        }
        let title = optional_str(&body, "commit_title", "PullRequest", ctx.docs)?;
        let detail = optional_str(&body, "commit_message", "PullRequest", ctx.docs)?;
        let expected = optional_str(&body, "sha", "PullRequest", ctx.docs)?;
        match optional_str(&body, "merge_method", "PullRequest", ctx.docs)?.as_deref() {
            None | Some("merge") => {}
            Some(m @ ("squash" | "rebase")) => {
                return Err(ApiError::unprocessable(
                    format!(
                        "Invalid request.\n\nmerge_method {m:?} is not served by the simulator (only \"merge\")."
                    ),
                    ctx.docs,
                ));
            }
            Some(m) => {
                return Err(ApiError::unprocessable(
                    format!(
                        "Invalid request.\n\n`{m}` is not a possible value. Must be one of the following: merge, squash, rebase"
                    ),
                    ctx.docs,
                ));
            }
        }
        let p = &r.pulls.list[idx];
        if !p.open {
            return Err(not_mergeable("Pull Request is not mergeable", ctx.docs));
        }
        if expected.is_some_and(|s| !s.eq_ignore_ascii_case(&p.head_sha)) {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "Head branch was modified. Review and try the merge again.",
                ctx.docs,
            ));
        }
        let (base, head) = (p.base.clone(), p.head.clone());
        let (base_sha, head_sha) = (p.base_sha.clone(), p.head_sha.clone());
        let pr_title = p.title.clone();
        let tree = merge::merge_commits(&mut r.store, &base_sha, &head_sha)
            .map_err(|_| not_mergeable("Pull Request is not mergeable", ctx.docs))?;
        if let Some(check) = r.unmet_check(&base, &head_sha) {
            return Err(not_mergeable(
                format!("Required status check \"{check}\" is expected."),
                ctx.docs,
            ));
        }
        let base_ref = format!("refs/heads/{base}");
        rule_violations(
            r,
            app_id,
            &base_ref,
            RefChange::Update { fast_forward: true },
            ctx.docs,
        )
        .map_err(|mut e| {
            e.status = StatusCode::METHOD_NOT_ALLOWED;
            e
        })?;
        let first = title
            .unwrap_or_else(|| format!("Merge pull request #{number} from {}/{head}", r.owner));
        let message = match detail.unwrap_or(pr_title) {
            d if d.is_empty() => first,
            d => format!("{first}\n\n{d}"),
        };
        let author = Signature {
            name: actor.login.clone(),
            email: format!("{}+{}@users.noreply.github.com", actor.id, actor.login),
            time: now,
            offset_minutes: 0,
        };
        let committer = Signature {
            name: "GitHub".to_owned(),
            email: "noreply@github.com".to_owned(),
            time: now,
            offset_minutes: 0,
        };
        let sha = r.store.insert(Object::Commit(Commit {
            tree,
            parents: vec![base_sha, head_sha],
            author,
            committer,
            message,
        }));
        r.refs.insert(base_ref, sha.clone());
        let p = &mut r.pulls.list[idx];
        p.open = false;
        p.merged_at = Some(now);
        p.closed_at = Some(now);
        p.updated_at = now;
        p.merge_commit_sha = Some(sha.clone());
        p.merged_by = Some(actor);
        Ok(json_response(
            StatusCode::OK,
            &json!({ "sha": sha, "merged": true, "message": "Pull Request successfully merged" }),
        ))
    })())
}

/// The states a commit status may have.
const STATUS_STATES: &[&str] = &["error", "failure", "pending", "success"];

/// `POST /repos/{owner}/{repo}/statuses/{sha}`: `state`, `context`
/// (`default` when absent), optional `description` and `target_url`.
pub(crate) async fn create_status(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, sha)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "statuses", Access::Write)?;
        let body = object_body(&body, ctx.docs)?;
        let state = match body.get("state") {
            None | Some(Value::Null) => {
                return Err(ApiError::validation(
                    "Status",
                    "state",
                    "missing_field",
                    ctx.docs,
                ));
            }
            Some(Value::String(s)) if STATUS_STATES.contains(&s.as_str()) => s.clone(),
            Some(_) => {
                return Err(ApiError::validation("Status", "state", "invalid", ctx.docs));
            }
        };
        let context = optional_str(&body, "context", "Status", ctx.docs)?
            .filter(|c| !c.is_empty())
            .unwrap_or_else(|| "default".to_owned());
        let description = optional_str(&body, "description", "Status", ctx.docs)?;
        let target_url = optional_str(&body, "target_url", "Status", ctx.docs)?;
        let (now, creator, id) = (st.now(), bot(&st), st.next_id());
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let sha = sha.to_ascii_lowercase();
        if r.store.commit(&sha).is_none() {
            return Err(ApiError::unprocessable(
                format!("No commit found for SHA: {sha}"),
                ctx.docs,
            ));
        }
        let status = CommitStatus {
            id,
            sha,
            state,
            context,
            description,
            target_url,
            creator,
            created_at: now,
        };
        let v = shapes::status(&sh.api, r, &status);
        let url = v["url"].as_str().unwrap_or_default().to_owned();
        r.pulls.statuses.push(status);
        Ok(created(&v, &url))
    })())
}

/// `GET /repos/{owner}/{repo}/commits/{ref}/status`: the newest status of
/// each context on the commit a ref names, newest first, paginated.
pub(crate) async fn combined_status(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, rest)): Path<(String, String, String)>,
    uri: Uri,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "statuses", Access::Read)?;
        let reference = rest
            .trim_start_matches('/')
            .strip_suffix("/status")
            .filter(|r| !r.is_empty())
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let owner_id = owner_id(&st, &key);
        let r = &st.repos[&key];
        let sha = r.resolve_commitish(reference).ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                format!("No commit found for SHA: {reference}"),
                ctx.docs,
            )
        })?;
        let latest = r.latest_statuses(&sha);
        let state = combined_state(&latest);
        let items: Vec<Value> = latest
            .iter()
            .map(|s| shapes::simple_status(&sh.api, r, s))
            .collect();
        let total = items.len();
        Ok(paginate_with(&sh.api, &uri, items, |page| {
            shapes::combined_status(&sh.api, r, owner_id, &sha, state, page, total)
        }))
    })())
}
