//! Writing files through the contents API: create or update one file,
//! or delete one, each as one commit on top of a branch.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

use super::git::{signature, str_field};
use super::{ApiError, Ctx, Result, Sh, authorize, bot, json_response, object_body};
use crate::sim::admin::{RefChange, rule_violations};
use crate::sim::auth::Access;
use crate::sim::git::{self, Change, Commit, Object, ObjectKind, Signature, TreeEntry, TreeError};
use crate::sim::shapes;
use crate::sim::state::{Actor, Repo};

fn respond(r: Result<Response>) -> Response {
    r.unwrap_or_else(IntoResponse::into_response)
}

/// The branch a write goes to (`branch`, else the default branch) and its
/// tip. An empty repository takes a first commit on its default branch;
/// another missing branch is 404 `Branch x not found`.
fn target_branch(
    r: &Repo,
    body: &Map<String, Value>,
    docs: &'static str,
) -> Result<(String, Option<String>)> {
    let branch = match body.get("branch") {
        None | Some(Value::Null) => r.default_branch.clone(),
        Some(Value::String(b)) => b.trim_start_matches("refs/heads/").to_owned(),
        Some(_) => return Err(ApiError::validation("Content", "branch", "invalid", docs)),
    };
    match r.branch_tip(&branch) {
        Some(tip) => Ok((branch, Some(tip.clone()))),
        None if r.refs.is_empty() && branch == r.default_branch => Ok((branch, None)),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("Branch {branch} not found"),
            docs,
        )),
    }
}

/// Author and committer from the body, as the contents API defaults them:
/// the committer is the caller (the App's bot) unless given, the author
/// the committer unless given.
fn signatures(
    body: &Map<String, Value>,
    caller: &Actor,
    now: i64,
    docs: &'static str,
) -> Result<(Signature, Signature)> {
    let committer = signature(
        body.get("committer").unwrap_or(&Value::Null),
        "committer",
        docs,
        now,
    )?
    .unwrap_or_else(|| Signature {
        name: caller.login.clone(),
        email: format!("{}+{}@users.noreply.github.com", caller.id, caller.login),
        time: now,
        offset_minutes: 0,
    });
    let author = signature(
        body.get("author").unwrap_or(&Value::Null),
        "author",
        docs,
        now,
    )?
    .unwrap_or_else(|| committer.clone());
    Ok((author, committer))
}

/// The file at `path` on the branch tip `parent`, checked against the
/// `sha` the caller sent: 409 `<path> does not match <sha>` when it is
/// not the file's blob id. A directory is 422.
fn current_file(
    r: &Repo,
    parent: Option<&str>,
    path: &str,
    docs: &'static str,
) -> Result<Option<TreeEntry>> {
    let Some(tree) = parent.and_then(|p| r.store.commit(p)).map(|c| &c.tree) else {
        return Ok(None);
    };
    match r.store.lookup_path(tree, path) {
        Some(e) if e.kind() == ObjectKind::Tree => Err(ApiError::unprocessable(
            format!("Invalid request.\n\n{path} is a directory, not a file."),
            docs,
        )),
        found => Ok(found),
    }
}

fn check_sha(entry: &TreeEntry, sent: &str, path: &str, docs: &'static str) -> Result<()> {
    if entry.sha.eq_ignore_ascii_case(sent) {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::CONFLICT,
            format!("{path} does not match {sent}"),
            docs,
        ))
    }
}

/// Applies one change to the branch: a new tree and commit, checked
/// against the repository's rulesets (a refusal is a 409, as the
/// contents API reports rule violations), then the branch moves. Returns
/// the commit's id and the commit.
#[allow(clippy::too_many_arguments)]
fn commit_change(
    r: &mut Repo,
    app_id: u64,
    branch: &str,
    parent: Option<String>,
    change: (String, Change),
    (author, committer): (Signature, Signature),
    message: String,
    docs: &'static str,
) -> Result<(String, Commit)> {
    let base = parent
        .as_ref()
        .and_then(|p| r.store.commit(p))
        .map(|c| c.tree.clone());
    let tree = git::build_tree(&mut r.store, base.as_deref(), &[change]).map_err(|e| {
        let p = match e {
            TreeError::BadBase(p) | TreeError::BadPath(p) | TreeError::PathConflict(p) => p,
        };
        ApiError::unprocessable(
            format!("Invalid request.\n\npath {p:?} is not valid."),
            docs,
        )
    })?;
    let ref_name = format!("refs/heads/{branch}");
    let kind = if parent.is_some() {
        RefChange::Update { fast_forward: true }
    } else {
        RefChange::Create
    };
    rule_violations(r, app_id, &ref_name, kind, docs).map_err(|mut e| {
        e.status = StatusCode::CONFLICT;
        e
    })?;
    let commit = Commit {
        tree,
        parents: parent.into_iter().collect(),
        author,
        committer,
        message,
    };
    let sha = r.store.insert(Object::Commit(commit.clone()));
    r.refs.insert(ref_name, sha.clone());
    Ok((sha, commit))
}

/// `PUT /repos/{owner}/{repo}/contents/{path}`: `message`, `content`
/// (base64), optional `branch`, `sha` (required when the file exists),
/// `committer`, `author`. 201 when the file is new, 200 when replaced.
pub(crate) async fn put_file(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, path)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Write)?;
        let body = object_body(&body, ctx.docs)?;
        let message = str_field(&body, "message", ctx.docs)?.to_owned();
        let content = str_field(&body, "content", ctx.docs)?;
        let compact: String = content.split_whitespace().collect();
        let bytes = STANDARD.decode(compact).map_err(|_| {
            ApiError::unprocessable("Invalid request.\n\ncontent is not valid Base64", ctx.docs)
        })?;
        let sent = match body.get("sha") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(ApiError::validation("Content", "sha", "invalid", ctx.docs)),
        };
        let (now, app_id, caller) = (st.now(), st.app.id, bot(&st));
        let sigs = signatures(&body, &caller, now, ctx.docs)?;
        let path = path.trim_matches('/').to_owned();
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let (branch, parent) = target_branch(r, &body, ctx.docs)?;
        let existing = current_file(r, parent.as_deref(), &path, ctx.docs)?;
        if let Some(e) = &existing {
            let sent = sent.ok_or_else(|| ApiError::missing("sha", ctx.docs))?;
            check_sha(e, &sent, &path, ctx.docs)?;
        }
        let blob = r.store.insert_blob(bytes);
        let mode = existing
            .as_ref()
            .map_or_else(|| "100644".to_owned(), |e| e.mode.clone());
        let change = (path.clone(), Change::Set { mode, sha: blob });
        let (sha, commit) =
            commit_change(r, app_id, &branch, parent, change, sigs, message, ctx.docs)?;
        let entry = r
            .store
            .lookup_path(&commit.tree, &path)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let body = json!({
            "content": shapes::content_item(&sh.api, r, &branch, &path, &entry, false),
            "commit": shapes::git_commit(&sh.api, r, &sha, &commit),
        });
        let status = if existing.is_some() {
            StatusCode::OK
        } else {
            StatusCode::CREATED
        };
        Ok(json_response(status, &body))
    })())
}

/// `DELETE /repos/{owner}/{repo}/contents/{path}`: `message`, `sha` (the
/// file's blob id), optional `branch`, `committer`, `author`. 200 with
/// `content: null` and the commit; 404 when the file does not exist.
pub(crate) async fn delete_file(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo, path)): Path<(String, String, String)>,
    body: Bytes,
) -> Response {
    respond((|| {
        let mut st = sh.lock();
        let key = authorize(&st, &ctx, &owner, &repo, "contents", Access::Write)?;
        let body = object_body(&body, ctx.docs)?;
        let message = str_field(&body, "message", ctx.docs)?.to_owned();
        let sent = str_field(&body, "sha", ctx.docs)?.to_owned();
        let (now, app_id, caller) = (st.now(), st.app.id, bot(&st));
        let sigs = signatures(&body, &caller, now, ctx.docs)?;
        let path = path.trim_matches('/').to_owned();
        let r = st
            .repos
            .get_mut(&key)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let (branch, parent) = target_branch(r, &body, ctx.docs)?;
        let existing = current_file(r, parent.as_deref(), &path, ctx.docs)?
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        check_sha(&existing, &sent, &path, ctx.docs)?;
        let change = (path, Change::Delete);
        let (sha, commit) =
            commit_change(r, app_id, &branch, parent, change, sigs, message, ctx.docs)?;
        Ok(json_response(
            StatusCode::OK,
            &json!({
                "content": null,
                "commit": shapes::git_commit(&sh.api, r, &sha, &commit),
            }),
        ))
    })())
}
