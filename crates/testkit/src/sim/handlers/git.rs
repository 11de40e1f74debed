//! Git data: blobs, trees, commits, refs, and the contents API.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value};

use super::{
    ApiError, Ctx, Result, Sh, authorize, created, json_response, object_body, query_get,
    query_pairs,
};
use crate::sim::admin::{RefChange, rule_violations};
use crate::sim::auth::Access;
use crate::sim::clock::parse_iso;
use crate::sim::git::{self, Change, Commit, Object, ObjectKind, Signature, TreeError};
use crate::sim::shapes;
use crate::sim::state::State as SimState;

fn respond(r: Result<Response>) -> Response {
    r.unwrap_or_else(IntoResponse::into_response)
}

pub(super) fn str_field<'a>(
    body: &'a Map<String, Value>,
    field: &str,
    docs: &'static str,
) -> Result<&'a str> {
    match body.get(field) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(ApiError::missing(field, docs)),
        Some(_) => Err(ApiError::unprocessable(
            format!(
                "Invalid request.\n\nFor 'properties/{field}', {} is not a string.",
                body[field]
            ),
            docs,
        )),
    }
}

/// `POST /repos/{owner}/{repo}/git/blobs`
pub(crate) async fn create_blob(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Write)?;
        let body = object_body(&body, ctx.docs)?;
        let content = str_field(&body, "content", ctx.docs)?;
        let bytes = match body
            .get("encoding")
            .and_then(Value::as_str)
            .unwrap_or("utf-8")
        {
            "utf-8" | "utf8" => content.as_bytes().to_vec(),
            "base64" => {
                let compact: String = content.split_whitespace().collect();
                STANDARD.decode(compact).map_err(|_| {
                    ApiError::unprocessable(
                        "Invalid request.\n\ncontent is not valid Base64",
                        ctx.docs,
                    )
                })?
            }
            other => {
                return Err(ApiError::unprocessable(
                    format!("Invalid request.\n\nencoding {other:?} is not supported"),
                    ctx.docs,
                ));
            }
        };
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let sha = r.store.insert_blob(bytes);
        let url = format!("{}/repos/{}/git/blobs/{sha}", sh.api, r.full_name());
        Ok(created(
            &serde_json::json!({ "sha": sha, "url": url }),
            &url,
        ))
    })())
}

/// `GET /repos/{owner}/{repo}/git/blobs/{file_sha}`
pub(crate) async fn get_blob(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, sha)): Path<(String, String, String)>,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Read)?;
        let r = &st.repos[&key];
        let bytes = r
            .store
            .blob(&sha)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let sha = sha.to_ascii_lowercase();
        Ok(json_response(
            StatusCode::OK,
            &serde_json::json!({
                "sha": sha,
                "node_id": format!("B_sim{}", &sha[..12]),
                "size": bytes.len(),
                "url": format!("{}/repos/{}/git/blobs/{sha}", sh.api, r.full_name()),
                "content": shapes::base64_lines(bytes),
                "encoding": "base64",
            }),
        ))
    })())
}

fn tree_change(
    st: &mut SimState,
    key: &str,
    entry: &Value,
    docs: &'static str,
) -> Result<(String, Change)> {
    let invalid = |msg: String| ApiError::unprocessable(msg, docs);
    let obj = entry
        .as_object()
        .ok_or_else(|| invalid("Invalid tree info".to_owned()))?;
    let path = match obj.get("path") {
        Some(Value::String(p)) => p.clone(),
        _ => return Err(ApiError::missing("tree.path", docs)),
    };
    let mode = match obj.get("mode") {
        Some(Value::String(m)) => m.clone(),
        _ => return Err(ApiError::missing("tree.mode", docs)),
    };
    let kind = match mode.as_str() {
        "100644" | "100755" | "120000" => ObjectKind::Blob,
        "040000" | "40000" => ObjectKind::Tree,
        "160000" => ObjectKind::Commit,
        _ => {
            return Err(invalid(format!(
                "Invalid tree info: mode {mode:?} for {path}"
            )));
        }
    };
    if let Some(t) = obj.get("type") {
        if t.as_str() != Some(kind.as_str()) {
            return Err(invalid(format!(
                "Invalid tree info: type {t} does not match mode {mode} for {path}"
            )));
        }
    }
    let raw_mode = if kind == ObjectKind::Tree {
        "40000".to_owned()
    } else {
        mode.clone()
    };
    let r = st
        .repos
        .get_mut(key)
        .ok_or_else(|| ApiError::not_found(docs))?;
    match (obj.get("content"), obj.get("sha")) {
        (Some(_), Some(s)) if !s.is_null() => Err(invalid(
            "Invalid tree info: use either tree.sha or tree.content, not both".to_owned(),
        )),
        (Some(Value::String(content)), _) => {
            if kind != ObjectKind::Blob {
                return Err(invalid(format!(
                    "Invalid tree info: content for a {} entry",
                    kind.as_str()
                )));
            }
            let sha = r.store.insert_blob(content.as_bytes().to_vec());
            Ok((
                path,
                Change::Set {
                    mode: raw_mode,
                    sha,
                },
            ))
        }
        (Some(_), _) => Err(invalid(
            "Invalid tree info: content must be a string".to_owned(),
        )),
        (None, Some(Value::Null)) => Ok((path, Change::Delete)),
        (None, Some(Value::String(sha))) => {
            let sha = sha.to_ascii_lowercase();
            let ok = match kind {
                ObjectKind::Blob => r.store.blob(&sha).is_some(),
                ObjectKind::Tree => r.store.tree(&sha).is_some(),
                ObjectKind::Commit => git::is_sha(&sha),
            };
            if !ok {
                return Err(invalid(format!(
                    "tree.sha {sha} is not a valid {}",
                    kind.as_str()
                )));
            }
            Ok((
                path,
                Change::Set {
                    mode: raw_mode,
                    sha,
                },
            ))
        }
        _ => Err(invalid(
            "Must supply either tree.sha or tree.content".to_owned(),
        )),
    }
}

/// `POST /repos/{owner}/{repo}/git/trees`
pub(crate) async fn create_tree(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Write)?;
        let body = object_body(&body, ctx.docs)?;
        let entries = match body.get("tree") {
            Some(Value::Array(a)) => a.clone(),
            _ => return Err(ApiError::missing("tree", ctx.docs)),
        };
        let base = match body.get("base_tree") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.to_ascii_lowercase()),
            Some(_) => {
                return Err(ApiError::unprocessable(
                    "Invalid request.\n\nbase_tree must be a string",
                    ctx.docs,
                ));
            }
        };
        let mut changes = Vec::with_capacity(entries.len());
        for e in &entries {
            changes.push(tree_change(&mut st, &key, e, ctx.docs)?);
        }
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let sha =
            git::build_tree(&mut r.store, base.as_deref(), &changes).map_err(|e| match e {
                TreeError::BadBase(b) => {
                    ApiError::unprocessable(format!("base_tree {b} is not a valid tree"), ctx.docs)
                }
                TreeError::BadPath(p) => {
                    ApiError::unprocessable(format!("Invalid tree info: bad path {p:?}"), ctx.docs)
                }
                TreeError::PathConflict(p) => ApiError::unprocessable(
                    format!("Invalid tree info: {p:?} goes through a file"),
                    ctx.docs,
                ),
            })?;
        let r = &st.repos[&key];
        let items: Vec<Value> = r
            .store
            .tree(&sha)
            .unwrap_or(&[])
            .iter()
            .map(|e| shapes::tree_entry(&sh.api, r, &e.name, e))
            .collect();
        let body = shapes::git_tree(&sh.api, r, &sha, items);
        let url = format!("{}/repos/{}/git/trees/{sha}", sh.api, r.full_name());
        Ok(created(&body, &url))
    })())
}

/// `GET /repos/{owner}/{repo}/git/trees/{tree_sha}[?recursive=1]`
pub(crate) async fn get_tree(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, sha)): Path<(String, String, String)>,
    uri: Uri,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Read)?;
        let r = &st.repos[&key];
        // A tree id, a commit id or a branch name all work, as on GitHub.
        let tree = if r.store.tree(&sha).is_some() {
            sha.to_ascii_lowercase()
        } else {
            let commit = r
                .resolve_commitish(&sha)
                .ok_or_else(|| ApiError::not_found(ctx.docs))?;
            r.store
                .commit(&commit)
                .map(|c| c.tree.clone())
                .ok_or_else(|| ApiError::not_found(ctx.docs))?
        };
        let recursive = query_get(&query_pairs(&uri), "recursive").is_some();
        let mut items: Vec<Value> = if recursive {
            r.store
                .walk(&tree)
                .iter()
                .map(|(p, e)| shapes::tree_entry(&sh.api, r, p, e))
                .collect()
        } else {
            r.store
                .tree(&tree)
                .unwrap_or(&[])
                .iter()
                .map(|e| shapes::tree_entry(&sh.api, r, &e.name, e))
                .collect()
        };
        // A listing over the limits is cut short, as GitHub does.
        let (max_entries, max_bytes) = st.tree_limits;
        let mut bytes = 0;
        let mut keep = items.len();
        for (i, v) in items.iter().enumerate() {
            bytes += v.to_string().len() + 1;
            if i >= max_entries || bytes > max_bytes {
                keep = i;
                break;
            }
        }
        let truncated = keep < items.len();
        items.truncate(keep);
        Ok(json_response(
            StatusCode::OK,
            &shapes::git_tree_listing(&sh.api, r, &tree, items, truncated),
        ))
    })())
}

pub(super) fn signature(
    v: &Value,
    field: &str,
    docs: &'static str,
    now: i64,
) -> Result<Option<Signature>> {
    let obj = match v {
        Value::Null => return Ok(None),
        Value::Object(o) => o,
        _ => {
            return Err(ApiError::unprocessable(
                format!("Invalid request.\n\n{field} must be an object"),
                docs,
            ));
        }
    };
    let name = obj
        .get("name")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::missing(&format!("{field}.name"), docs))?;
    let email = obj
        .get("email")
        .and_then(Value::as_str)
        .ok_or_else(|| ApiError::missing(&format!("{field}.email"), docs))?;
    let (time, offset_minutes) = match obj.get("date") {
        None | Some(Value::Null) => (now, 0),
        Some(Value::String(d)) => parse_iso(d).ok_or_else(|| {
            ApiError::unprocessable(
                format!("Invalid request.\n\n{d:?} is not a valid date-time."),
                docs,
            )
        })?,
        Some(_) => {
            return Err(ApiError::unprocessable(
                "Invalid request.\n\ndate must be a string",
                docs,
            ));
        }
    };
    Ok(Some(Signature {
        name: name.to_owned(),
        email: email.to_owned(),
        time,
        offset_minutes,
    }))
}

/// `POST /repos/{owner}/{repo}/git/commits`
pub(crate) async fn create_commit(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Write)?;
        let body = object_body(&body, ctx.docs)?;
        let message = str_field(&body, "message", ctx.docs)?.to_owned();
        let tree = str_field(&body, "tree", ctx.docs)?.to_ascii_lowercase();
        let parents: Vec<String> = match body.get("parents") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a
                .iter()
                .map(|p| {
                    p.as_str().map(str::to_ascii_lowercase).ok_or_else(|| {
                        ApiError::unprocessable(
                            "Invalid request.\n\nparents must be strings",
                            ctx.docs,
                        )
                    })
                })
                .collect::<Result<_>>()?,
            Some(_) => {
                return Err(ApiError::unprocessable(
                    "Invalid request.\n\nparents must be an array",
                    ctx.docs,
                ));
            }
        };
        let now = st.now();
        let bot = super::bot(&st);
        let author = signature(
            body.get("author").unwrap_or(&Value::Null),
            "author",
            ctx.docs,
            now,
        )?;
        let committer = signature(
            body.get("committer").unwrap_or(&Value::Null),
            "committer",
            ctx.docs,
            now,
        )?;
        let default_sig = Signature {
            name: bot.login.clone(),
            email: format!("{}+{}@users.noreply.github.com", bot.id, bot.login),
            time: now,
            offset_minutes: 0,
        };
        let author = author.unwrap_or(default_sig);
        let committer = committer.unwrap_or_else(|| author.clone());
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        if r.store.tree(&tree).is_none() {
            return Err(ApiError::unprocessable("Tree SHA does not exist", ctx.docs));
        }
        if parents.iter().any(|p| r.store.commit(p).is_none()) {
            return Err(ApiError::unprocessable(
                "Parent SHA does not exist or is not a commit object",
                ctx.docs,
            ));
        }
        let commit = Commit {
            tree,
            parents,
            author,
            committer,
            message,
        };
        let sha = r.store.insert(Object::Commit(commit.clone()));
        let url = format!("{}/repos/{}/git/commits/{sha}", sh.api, r.full_name());
        Ok(created(
            &shapes::git_commit(&sh.api, r, &sha, &commit),
            &url,
        ))
    })())
}

/// `GET /repos/{owner}/{repo}/git/commits/{commit_sha}`
pub(crate) async fn get_commit(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, sha)): Path<(String, String, String)>,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Read)?;
        let r = &st.repos[&key];
        let sha = sha.to_ascii_lowercase();
        let c = r
            .store
            .commit(&sha)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        Ok(json_response(
            StatusCode::OK,
            &shapes::git_commit(&sh.api, r, &sha, c),
        ))
    })())
}

fn full_ref(param: &str) -> String {
    let p = param.trim_start_matches('/');
    if p.starts_with("refs/") {
        p.to_owned()
    } else {
        format!("refs/{p}")
    }
}

/// `GET /repos/{owner}/{repo}/git/ref/{ref}` (e.g. `heads/benchmark-history`)
pub(crate) async fn get_ref(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, name)): Path<(String, String, String)>,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Read)?;
        let r = &st.repos[&key];
        if r.refs.is_empty() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "Git Repository is empty.",
                ctx.docs,
            ));
        }
        let name = full_ref(&name);
        let sha = r
            .refs
            .get(&name)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        Ok(json_response(
            StatusCode::OK,
            &shapes::git_ref(&sh.api, r, &name, sha),
        ))
    })())
}

/// `POST /repos/{owner}/{repo}/git/refs`
pub(crate) async fn create_ref(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Write)?;
        let body = object_body(&body, ctx.docs)?;
        let name = str_field(&body, "ref", ctx.docs)?.to_owned();
        let sha = str_field(&body, "sha", ctx.docs)?.to_ascii_lowercase();
        if !name.starts_with("refs/") || name.matches('/').count() < 2 || name.ends_with('/') {
            return Err(ApiError::unprocessable(
                "Reference name is not valid",
                ctx.docs,
            ));
        }
        let app_id = st.app.id;
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        if r.store.get(&sha).is_none() {
            return Err(ApiError::unprocessable("Object does not exist", ctx.docs));
        }
        if r.refs.contains_key(&name) {
            return Err(ApiError::unprocessable(
                "Reference already exists",
                ctx.docs,
            ));
        }
        rule_violations(r, app_id, &name, RefChange::Create, ctx.docs)?;
        r.refs.insert(name.clone(), sha.clone());
        let body = shapes::git_ref(&sh.api, r, &name, &sha);
        let url = format!("{}/repos/{}/git/{name}", sh.api, r.full_name());
        Ok(created(&body, &url))
    })())
}

/// `PATCH /repos/{owner}/{repo}/git/refs/{ref}`: fast forward unless
/// `force` (which benchops never sends; the request log shows it if it did).
pub(crate) async fn update_ref(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, name)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Write)?;
        let body = object_body(&body, ctx.docs)?;
        let sha = str_field(&body, "sha", ctx.docs)?.to_ascii_lowercase();
        let force = match body.get("force") {
            None | Some(Value::Null) => false,
            Some(Value::Bool(b)) => *b,
            Some(other) => {
                return Err(ApiError::unprocessable(
                    format!(
                        "Invalid request.\n\nFor 'properties/force', {other} is not a boolean."
                    ),
                    ctx.docs,
                ));
            }
        };
        let name = full_ref(&name);
        let app_id = st.app.id;
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let current = r
            .refs
            .get(&name)
            .cloned()
            .ok_or_else(|| ApiError::unprocessable("Reference does not exist", ctx.docs))?;
        if r.store.commit(&sha).is_none() {
            return Err(ApiError::unprocessable("Object does not exist", ctx.docs));
        }
        let fast_forward = r.store.is_ancestor(&current, &sha);
        if !force && !fast_forward {
            return Err(ApiError::unprocessable(
                "Update is not a fast forward",
                ctx.docs,
            ));
        }
        rule_violations(
            r,
            app_id,
            &name,
            RefChange::Update { fast_forward },
            ctx.docs,
        )?;
        r.refs.insert(name.clone(), sha.clone());
        Ok(json_response(
            StatusCode::OK,
            &shapes::git_ref(&sh.api, r, &name, &sha),
        ))
    })())
}

/// `GET /repos/{owner}/{repo}/git/matching-refs/{ref}`: every ref whose
/// full name starts with `refs/{ref}` (a plain string prefix, so a
/// trailing `/` limits the match to one directory), sorted by name,
/// paginated like other lists (GitHub documents a `Link` header here).
/// 409 in a repository without refs.
pub(crate) async fn list_matching_refs(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, _)): Path<(String, String, String)>,
    uri: Uri,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Read)?;
        let r = &st.repos[&key];
        if r.refs.is_empty() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "Git Repository is empty.",
                ctx.docs,
            ));
        }
        // The raw path keeps a trailing `/`, which is part of the prefix.
        let raw = uri
            .path()
            .split_once("/git/matching-refs/")
            .map_or("", |(_, rest)| rest);
        let prefix = full_ref(&super::decode_component(raw));
        let items: Vec<Value> = r
            .refs
            .iter()
            .filter(|(name, _)| name.starts_with(&prefix))
            .map(|(name, sha)| shapes::git_ref(&sh.api, r, name, sha))
            .collect();
        Ok(super::paginate(&sh.api, &uri, items))
    })())
}

/// `DELETE /repos/{owner}/{repo}/git/refs/{ref}`: 204; 422 "Reference does
/// not exist" for a missing ref, and for the default branch 422 "Cannot
/// delete the default branch" (what GitHub's description calls "an
/// attempt was made to delete the default branch").
pub(crate) async fn delete_ref(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, name)): Path<(String, String, String)>,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Write)?;
        let app_id = st.app.id;
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        if r.refs.is_empty() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "Git Repository is empty.",
                ctx.docs,
            ));
        }
        let name = full_ref(&name);
        if name == format!("refs/heads/{}", r.default_branch) {
            return Err(ApiError::unprocessable(
                "Cannot delete the default branch",
                ctx.docs,
            ));
        }
        if !r.refs.contains_key(&name) {
            return Err(ApiError::unprocessable(
                "Reference does not exist",
                ctx.docs,
            ));
        }
        rule_violations(r, app_id, &name, RefChange::Delete, ctx.docs)?;
        r.refs.remove(&name);
        Ok(StatusCode::NO_CONTENT.into_response())
    })())
}

/// `GET /repos/{owner}/{repo}/contents/{path}[?ref=]`: a file (base64
/// content) or a directory listing.
pub(crate) async fn get_content(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, path)): Path<(String, String, String)>,
    uri: Uri,
) -> Response {
    respond((|| {
        let st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Read)?;
        let r = &st.repos[&key];
        let git_ref =
            query_get(&query_pairs(&uri), "ref").unwrap_or_else(|| r.default_branch.clone());
        let commit = r.resolve_commitish(&git_ref).ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                format!("No commit found for the ref {git_ref}"),
                ctx.docs,
            )
        })?;
        let tree = r
            .store
            .commit(&commit)
            .map(|c| c.tree.clone())
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let path = path.trim_matches('/').to_owned();
        let entry = r
            .store
            .lookup_path(&tree, &path)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let body = if entry.kind() == ObjectKind::Tree {
            let items: Vec<Value> = r
                .store
                .tree(&entry.sha)
                .unwrap_or(&[])
                .iter()
                .map(|e| {
                    let p = if path.is_empty() {
                        e.name.clone()
                    } else {
                        format!("{path}/{}", e.name)
                    };
                    shapes::content_item(&sh.api, r, &git_ref, &p, e, false)
                })
                .collect();
            Value::Array(items)
        } else {
            shapes::content_item(&sh.api, r, &git_ref, &path, &entry, true)
        };
        Ok(json_response(StatusCode::OK, &body))
    })())
}
