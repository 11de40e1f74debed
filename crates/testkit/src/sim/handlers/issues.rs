//! Issues, issue comments and labels.

use std::cmp::Reverse;

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value};

use super::{
    ApiError, Ctx, Result, Sh, authorize, bot, created, json_response, object_body, paginate,
    query_get, query_pairs,
};
use crate::sim::auth::Access;
use crate::sim::clock::parse_iso;
use crate::sim::shapes;
use crate::sim::state::{Comment, Issue, Label, Repo};

fn respond(r: Result<Response>) -> Response {
    r.unwrap_or_else(IntoResponse::into_response)
}

fn issue_number(s: &str, docs: &'static str) -> Result<u64> {
    s.parse().map_err(|_| ApiError::not_found(docs))
}

fn find_issue<'a>(r: &'a Repo, number: u64, docs: &'static str) -> Result<&'a Issue> {
    r.issues
        .iter()
        .find(|i| i.number == number)
        .ok_or_else(|| ApiError::not_found(docs))
}

/// Label names from a `labels` member: strings or `{ "name": ... }`.
fn label_names(v: &Value, docs: &'static str) -> Result<Vec<String>> {
    let Value::Array(items) = v else {
        return Err(ApiError::validation("Issue", "labels", "invalid", docs));
    };
    items
        .iter()
        .map(|item| match item {
            Value::String(s) => Ok(s.clone()),
            Value::Object(o) => o
                .get("name")
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| ApiError::validation("Issue", "labels", "invalid", docs)),
            _ => Err(ApiError::validation("Issue", "labels", "invalid", docs)),
        })
        .collect()
}

/// Label ids for names, creating unknown labels (grey, no description)
/// the way GitHub does for callers with push access. `fresh` supplies ids.
fn resolve_labels(
    r: &mut Repo,
    names: &[String],
    fresh: &mut impl Iterator<Item = u64>,
) -> Vec<u64> {
    let mut ids = Vec::new();
    for name in names {
        let id = match r.label_by_name(name) {
            Some(l) => l.id,
            None => {
                let id = fresh.next().unwrap_or(0);
                r.labels.push(Label {
                    id,
                    name: name.clone(),
                    color: "ededed".to_owned(),
                    description: None,
                    default: false,
                });
                id
            }
        };
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    ids
}

/// The longest title GitHub accepts, in characters.
const TITLE_MAX_CHARS: usize = 256;
/// The longest issue or comment body GitHub accepts, in characters.
const BODY_MAX_CHARS: usize = 65_536;

/// A 422 like GitHub's "body is too long (maximum is 65536 characters)"
/// when `text` is longer than `max` characters.
fn check_len(
    text: &str,
    max: usize,
    resource: &str,
    field: &str,
    docs: &'static str,
) -> Result<()> {
    if text.chars().count() > max {
        return Err(ApiError::validation(resource, field, "custom", docs));
    }
    Ok(())
}

fn title_of(v: Option<&Value>, docs: &'static str) -> Result<Option<String>> {
    match v {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => {
            check_len(s, TITLE_MAX_CHARS, "Issue", "title", docs)?;
            Ok(Some(s.clone()))
        }
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(_) => Err(ApiError::validation("Issue", "title", "invalid", docs)),
    }
}

fn body_of(v: Option<&Value>, docs: &'static str) -> Result<Option<Option<String>>> {
    match v {
        None => Ok(None),
        Some(Value::Null) => Ok(Some(None)),
        Some(Value::String(s)) => {
            check_len(s, BODY_MAX_CHARS, "Issue", "body", docs)?;
            Ok(Some(Some(s.clone())))
        }
        Some(_) => Err(ApiError::validation("Issue", "body", "invalid", docs)),
    }
}

/// `GET /repos/{owner}/{repo}/issues` with `state`, `labels`, `sort`,
/// `direction`, `since`, `per_page` and `page`.
pub(crate) async fn list(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
    uri: Uri,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "issues", Access::Read)?;
        let r = &st.repos[&key];
        let q = query_pairs(&uri);
        let state = query_get(&q, "state").unwrap_or_else(|| "open".to_owned());
        if !matches!(state.as_str(), "open" | "closed" | "all") {
            return Err(ApiError::validation("Issue", "state", "invalid", ctx.docs));
        }
        let wanted: Vec<String> = query_get(&q, "labels")
            .map(|l| {
                l.split(',')
                    .map(|s| s.trim().to_owned())
                    .filter(|s| !s.is_empty())
                    .collect()
            })
            .unwrap_or_default();
        let since = match query_get(&q, "since") {
            Some(s) => Some(
                parse_iso(&s)
                    .ok_or_else(|| ApiError::validation("Issue", "since", "invalid", ctx.docs))?
                    .0,
            ),
            None => None,
        };
        let mut issues: Vec<&Issue> = r
            .issues
            .iter()
            .filter(|i| match state.as_str() {
                "open" => i.open,
                "closed" => !i.open,
                _ => true,
            })
            .filter(|i| {
                wanted.iter().all(|w| {
                    i.labels
                        .iter()
                        .filter_map(|id| r.label_by_id(*id))
                        .any(|l| l.name.eq_ignore_ascii_case(w))
                })
            })
            .filter(|i| since.is_none_or(|s| i.updated_at >= s))
            .collect();
        let sort = query_get(&q, "sort").unwrap_or_else(|| "created".to_owned());
        // Ties break on the issue number so pages are stable.
        match sort.as_str() {
            "updated" => issues.sort_by_key(|i| (i.updated_at, i.number)),
            "comments" => issues.sort_by_key(|i| (i.comments.len(), i.number)),
            _ => issues.sort_by_key(|i| (i.created_at, i.number)),
        }
        if query_get(&q, "direction").as_deref() != Some("asc") {
            issues.reverse();
        }
        let items = issues
            .iter()
            .map(|i| shapes::issue(&sh.api, r, i))
            .collect();
        Ok(paginate(&sh.api, &uri, items))
    })())
}

/// `POST /repos/{owner}/{repo}/issues`
pub(crate) async fn create(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "issues", Access::Write)?;
        let body = object_body(&body, ctx.docs)?;
        let title = title_of(body.get("title"), ctx.docs)?
            .ok_or_else(|| ApiError::validation("Issue", "title", "missing_field", ctx.docs))?;
        let text = body_of(body.get("body"), ctx.docs)?.flatten();
        let names = match body.get("labels") {
            None | Some(Value::Null) => Vec::new(),
            Some(v) => label_names(v, ctx.docs)?,
        };
        let now = st.now();
        let user = bot(&st);
        let id = st.next_id();
        let mut fresh: Vec<u64> = (0..names.len()).map(|_| st.next_id()).collect();
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let labels = resolve_labels(r, &names, &mut fresh.drain(..));
        let number = r.next_number();
        r.issues.push(Issue {
            id,
            number,
            title,
            body: text,
            open: true,
            state_reason: None,
            labels,
            user,
            created_at: now,
            updated_at: now,
            closed_at: None,
            closed_by: None,
            comments: Vec::new(),
        });
        let i = find_issue(r, number, ctx.docs)?;
        let v = shapes::issue(&sh.api, r, i);
        let url = v["url"].as_str().unwrap_or_default().to_owned();
        Ok(created(&v, &url))
    })())
}

/// `GET /repos/{owner}/{repo}/issues/{issue_number}`
pub(crate) async fn get_one(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, number)): Path<(String, String, String)>,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "issues", Access::Read)?;
        let r = &st.repos[&key];
        let i = find_issue(r, issue_number(&number, ctx.docs)?, ctx.docs)?;
        Ok(json_response(StatusCode::OK, &shapes::issue(&sh.api, r, i)))
    })())
}

fn apply_state(
    i: &mut Issue,
    body: &Map<String, Value>,
    now: i64,
    actor: &crate::sim::state::Actor,
    docs: &'static str,
) -> Result<()> {
    let reason = match body.get("state_reason") {
        None | Some(Value::Null) => None,
        Some(Value::String(s))
            if matches!(
                s.as_str(),
                "completed" | "not_planned" | "duplicate" | "reopened"
            ) =>
        {
            Some(s.clone())
        }
        Some(_) => {
            return Err(ApiError::validation(
                "Issue",
                "state_reason",
                "invalid",
                docs,
            ));
        }
    };
    match body.get("state") {
        None | Some(Value::Null) => {}
        Some(Value::String(s)) if s == "closed" => {
            if i.open {
                i.open = false;
                i.closed_at = Some(now);
                i.closed_by = Some(actor.clone());
                i.state_reason = Some(
                    reason
                        .filter(|r| r != "reopened")
                        .unwrap_or_else(|| "completed".to_owned()),
                );
            }
        }
        Some(Value::String(s)) if s == "open" => {
            if !i.open {
                i.open = true;
                i.closed_at = None;
                i.closed_by = None;
                i.state_reason = Some("reopened".to_owned());
            }
        }
        Some(_) => return Err(ApiError::validation("Issue", "state", "invalid", docs)),
    }
    Ok(())
}

/// `PATCH /repos/{owner}/{repo}/issues/{issue_number}`: title, body,
/// state (+ `state_reason`), labels (replaced).
pub(crate) async fn update(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, number)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "issues", Access::Write)?;
        let number = issue_number(&number, ctx.docs)?;
        let body = object_body(&body, ctx.docs)?;
        let title = title_of(body.get("title"), ctx.docs)?;
        let text = body_of(body.get("body"), ctx.docs)?;
        let names = match body.get("labels") {
            None | Some(Value::Null) => None,
            Some(v) => Some(label_names(v, ctx.docs)?),
        };
        let now = st.now();
        let actor = bot(&st);
        let mut fresh: Vec<u64> = (0..names.as_ref().map_or(0, Vec::len))
            .map(|_| st.next_id())
            .collect();
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        find_issue(r, number, ctx.docs)?;
        let labels = names.map(|n| resolve_labels(r, &n, &mut fresh.drain(..)));
        let i = r
            .issues
            .iter_mut()
            .find(|i| i.number == number)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        apply_state(i, &body, now, &actor, ctx.docs)?;
        if let Some(t) = title {
            i.title = t;
        }
        if let Some(b) = text {
            i.body = b;
        }
        if let Some(l) = labels {
            i.labels = l;
        }
        i.updated_at = now;
        let i = find_issue(r, number, ctx.docs)?;
        Ok(json_response(StatusCode::OK, &shapes::issue(&sh.api, r, i)))
    })())
}

/// `POST /repos/{owner}/{repo}/issues/{issue_number}/labels` with
/// `{"labels": [...]}`: adds to the issue's labels (never removes one; a
/// label it has already is kept once) and answers with all of them.
/// Unknown labels are created as on create and update. An empty or
/// missing list is a 422.
pub(crate) async fn add_labels(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, number)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "issues", Access::Write)?;
        let number = issue_number(&number, ctx.docs)?;
        let body = object_body(&body, ctx.docs)?;
        let names = match body.get("labels") {
            Some(v) => label_names(v, ctx.docs)?,
            None => Vec::new(),
        };
        if names.is_empty() {
            return Err(ApiError::validation(
                "Label",
                "labels",
                "missing_field",
                ctx.docs,
            ));
        }
        let now = st.now();
        let mut fresh: Vec<u64> = (0..names.len()).map(|_| st.next_id()).collect();
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        find_issue(r, number, ctx.docs)?;
        let ids = resolve_labels(r, &names, &mut fresh.drain(..));
        let i = r
            .issues
            .iter_mut()
            .find(|i| i.number == number)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        for id in ids {
            if !i.labels.contains(&id) {
                i.labels.push(id);
            }
        }
        i.updated_at = now;
        let i = find_issue(r, number, ctx.docs)?;
        let items: Vec<Value> = i
            .labels
            .iter()
            .filter_map(|id| r.label_by_id(*id))
            .map(|l| shapes::label(&sh.api, r, l))
            .collect();
        Ok(json_response(StatusCode::OK, &Value::Array(items)))
    })())
}

/// `GET /repos/{owner}/{repo}/issues/{issue_number}/comments`, oldest
/// first, paginated.
pub(crate) async fn list_comments(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, number)): Path<(String, String, String)>,
    uri: Uri,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "issues", Access::Read)?;
        let r = &st.repos[&key];
        let i = find_issue(r, issue_number(&number, ctx.docs)?, ctx.docs)?;
        let items = i
            .comments
            .iter()
            .map(|c| shapes::comment(&sh.api, r, i, c))
            .collect();
        Ok(paginate(&sh.api, &uri, items))
    })())
}

/// `POST /repos/{owner}/{repo}/issues/{issue_number}/comments`
pub(crate) async fn create_comment(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, number)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "issues", Access::Write)?;
        let number = issue_number(&number, ctx.docs)?;
        let body = object_body(&body, ctx.docs)?;
        let text = match body.get("body") {
            Some(Value::String(s)) => {
                check_len(s, BODY_MAX_CHARS, "IssueComment", "body", ctx.docs)?;
                s.clone()
            }
            _ => {
                return Err(ApiError::validation(
                    "IssueComment",
                    "body",
                    "missing_field",
                    ctx.docs,
                ));
            }
        };
        let now = st.now();
        let user = bot(&st);
        let id = st.next_id();
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let i = r
            .issues
            .iter_mut()
            .find(|i| i.number == number)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        i.comments.push(Comment {
            id,
            body: text,
            user,
            created_at: now,
            updated_at: now,
        });
        i.updated_at = now;
        let i = find_issue(r, number, ctx.docs)?;
        let c = i
            .comments
            .last()
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let v = shapes::comment(&sh.api, r, i, c);
        let url = v["url"].as_str().unwrap_or_default().to_owned();
        Ok(created(&v, &url))
    })())
}

/// `DELETE /repos/{owner}/{repo}/issues/comments/{comment_id}`: 204, or
/// 404 when no issue of the repository has the comment (also when it was
/// deleted already). Needs issues write.
pub(crate) async fn delete_comment(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, comment_id)): Path<(String, String, String)>,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "issues", Access::Write)?;
        let id: u64 = comment_id
            .parse()
            .map_err(|_| ApiError::not_found(ctx.docs))?;
        let now = st.now();
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let found = r.issues.iter_mut().find_map(|i| {
            let at = i.comments.iter().position(|c| c.id == id)?;
            Some((i, at))
        });
        let (issue, at) = found.ok_or_else(|| ApiError::not_found(ctx.docs))?;
        issue.comments.remove(at);
        issue.updated_at = now;
        Ok(StatusCode::NO_CONTENT.into_response())
    })())
}

/// `GET /repos/{owner}/{repo}/labels`, by name, paginated.
pub(crate) async fn list_labels(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
    uri: Uri,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "issues", Access::Read)?;
        let r = &st.repos[&key];
        let mut labels: Vec<&Label> = r.labels.iter().collect();
        labels.sort_by_key(|l| (l.name.to_lowercase(), Reverse(l.id)));
        let items = labels
            .iter()
            .map(|l| shapes::label(&sh.api, r, l))
            .collect();
        Ok(paginate(&sh.api, &uri, items))
    })())
}

/// `POST /repos/{owner}/{repo}/labels`: 422 `already_exists` for a
/// name that exists in any case.
pub(crate) async fn create_label(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "issues", Access::Write)?;
        let body = object_body(&body, ctx.docs)?;
        let name = match body.get("name") {
            Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
            _ => {
                return Err(ApiError::validation(
                    "Label",
                    "name",
                    "missing_field",
                    ctx.docs,
                ));
            }
        };
        let color = match body.get("color") {
            None | Some(Value::Null) => "ededed".to_owned(),
            Some(Value::String(c)) if c.len() == 6 && c.bytes().all(|b| b.is_ascii_hexdigit()) => {
                c.to_ascii_lowercase()
            }
            Some(_) => return Err(ApiError::validation("Label", "color", "invalid", ctx.docs)),
        };
        let description = match body.get("description") {
            None | Some(Value::Null) => None,
            Some(Value::String(d)) if d.chars().count() <= 100 => Some(d.clone()),
            Some(_) => {
                return Err(ApiError::validation(
                    "Label",
                    "description",
                    "invalid",
                    ctx.docs,
                ));
            }
        };
        let id = st.next_id();
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        if r.label_by_name(&name).is_some() {
            return Err(ApiError::validation(
                "Label",
                "name",
                "already_exists",
                ctx.docs,
            ));
        }
        r.labels.push(Label {
            id,
            name: name.clone(),
            color,
            description,
            default: false,
        });
        let l = r
            .label_by_name(&name)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let v = shapes::label(&sh.api, r, l);
        let url = v["url"].as_str().unwrap_or_default().to_owned();
        Ok(created(&v, &url))
    })())
}

/// `GET /repos/{owner}/{repo}/labels/{name}` (case-insensitive).
pub(crate) async fn get_label(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, name)): Path<(String, String, String)>,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "issues", Access::Read)?;
        let r = &st.repos[&key];
        let l = r
            .label_by_name(&name)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        Ok(json_response(StatusCode::OK, &shapes::label(&sh.api, r, l)))
    })())
}
