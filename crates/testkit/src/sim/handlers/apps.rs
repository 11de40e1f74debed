//! The App side: repository installations, installation access tokens
//! (with permissions and repositories), revocation, and `/rate_limit`.

use axum::Extension;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{ApiError, Caller, Ctx, Result, Sh, created, json_response, object_body};
use crate::sim::auth::{Access, Permissions, permissions_json};
use crate::sim::clock::iso;
use crate::sim::shapes;
use crate::sim::state::State as SimState;

fn respond(r: Result<Response>) -> Response {
    r.unwrap_or_else(IntoResponse::into_response)
}

fn require_app(ctx: &Ctx) -> Result<()> {
    if ctx.caller == Caller::App {
        Ok(())
    } else {
        Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "A JSON web token could not be decoded",
            ctx.docs,
        ))
    }
}

/// The rate-limit bucket a caller draws from: its key and its limit.
pub(crate) fn bucket_key(st: &SimState, caller: Option<Caller>) -> (String, u64) {
    match caller {
        Some(Caller::Installation { token_id }) => {
            let iid = usize::try_from(token_id)
                .ok()
                .and_then(|i| st.tokens.get(i.wrapping_sub(1)))
                .map_or(0, |t| t.installation_id);
            (format!("installation:{iid}"), st.rate_limit)
        }
        Some(Caller::App) => ("app".to_owned(), st.rate_limit),
        None => ("anonymous".to_owned(), 60),
    }
}

/// `GET /app` (App JWT): the App, with its slug.
pub(crate) async fn get_app(State(sh): State<Sh>, Extension(ctx): Extension<Ctx>) -> Response {
    respond((|| {
        require_app(&ctx)?;
        let st = sh.lock();
        let installations = st.installations.len();
        Ok(json_response(
            StatusCode::OK,
            &shapes::app(&sh.api, &st.app, installations),
        ))
    })())
}

/// `GET /repos/{owner}/{repo}/installation` (App JWT).
pub(crate) async fn repo_installation(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path((owner, repo)): Path<(String, String)>,
) -> Response {
    respond((|| {
        require_app(&ctx)?;
        let st = sh.lock();
        let r = st
            .repo(&owner, &repo)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let i = st
            .installations
            .get(&r.installation_id)
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        Ok(json_response(
            StatusCode::OK,
            &shapes::installation(&sh.api, &st.app, i),
        ))
    })())
}

/// `POST /app/installations/{installation_id}/access_tokens` (App JWT):
/// `repositories`, `repository_ids` and `permissions` narrow the token.
pub(crate) async fn create_token(
    State(sh): State<Sh>,
    Extension(ctx): Extension<Ctx>,
    Path(id): Path<String>,
    body: Bytes,
) -> Response {
    respond((|| {
        require_app(&ctx)?;
        let mut st = sh.lock();
        let iid: u64 = id.parse().map_err(|_| ApiError::not_found(ctx.docs))?;
        let inst = st
            .installations
            .get(&iid)
            .cloned()
            .ok_or_else(|| ApiError::not_found(ctx.docs))?;
        let body = object_body(&body, ctx.docs)?;

        let mut granted: Permissions = match body.get("permissions") {
            None | Some(Value::Null) => inst.permissions.clone(),
            Some(Value::Object(p)) => {
                let mut out = Permissions::new();
                for (name, level) in p {
                    let level = level.as_str().and_then(Access::parse).ok_or_else(|| {
                        ApiError::unprocessable(
                            format!(
                                "Invalid request.\n\npermission {name:?} must be read or write"
                            ),
                            ctx.docs,
                        )
                    })?;
                    let have = inst.permissions.get(name).copied();
                    let implied = name == "metadata" && level == Access::Read;
                    if !implied && have.is_none_or(|h| h < level) {
                        return Err(ApiError::unprocessable(
                            "The permissions requested are not granted to this installation.",
                            ctx.docs,
                        ));
                    }
                    out.insert(name.clone(), level);
                }
                out
            }
            Some(_) => {
                return Err(ApiError::unprocessable(
                    "Invalid request.\n\npermissions must be an object",
                    ctx.docs,
                ));
            }
        };
        granted.entry("metadata".to_owned()).or_insert(Access::Read);

        let in_installation: Vec<(u64, String)> = st
            .repos
            .values()
            .filter(|r| r.installation_id == iid)
            .map(|r| (r.id, r.name.to_ascii_lowercase()))
            .collect();
        let not_accessible = || {
            ApiError::unprocessable(
                "There is at least one repository that does not exist or is not accessible to the parent installation.",
                ctx.docs,
            )
        };
        let mut selected: Option<Vec<String>> = None;
        if let Some(v) = body.get("repositories").filter(|v| !v.is_null()) {
            let names = v.as_array().ok_or_else(not_accessible)?;
            for n in names {
                let n = n.as_str().ok_or_else(not_accessible)?.to_ascii_lowercase();
                // `owner/name` is accepted as well as the bare name.
                let bare = n.rsplit('/').next().unwrap_or(&n).to_owned();
                if !in_installation.iter().any(|(_, name)| *name == bare) {
                    return Err(not_accessible());
                }
                selected.get_or_insert_with(Vec::new).push(bare);
            }
        }
        if let Some(v) = body.get("repository_ids").filter(|v| !v.is_null()) {
            let ids = v.as_array().ok_or_else(not_accessible)?;
            for id in ids {
                let id = id.as_u64().ok_or_else(not_accessible)?;
                let (_, name) = in_installation
                    .iter()
                    .find(|(rid, _)| *rid == id)
                    .ok_or_else(not_accessible)?;
                selected.get_or_insert_with(Vec::new).push(name.clone());
            }
        }

        let token = st.mint_token(iid, granted, selected).clone();
        let mut out = json!({
            "token": token.value,
            "expires_at": iso(token.expires_at),
            "permissions": permissions_json(&token.permissions),
            "repository_selection": if token.repositories.is_some() { "selected" } else { inst.repository_selection.as_str() },
        });
        if let Some(names) = &token.repositories {
            let repos: Vec<Value> = st
                .repos
                .values()
                .filter(|r| {
                    r.installation_id == iid && names.contains(&r.name.to_ascii_lowercase())
                })
                .map(|r| shapes::repository(&sh.api, r, inst.account_id))
                .collect();
            out["repositories"] = Value::Array(repos);
        }
        let url = format!("{}/app/installations/{iid}/access_tokens", sh.api);
        Ok(created(&out, &url))
    })())
}

/// `DELETE /installation/token` (the token revokes itself): 204.
pub(crate) async fn revoke_token(State(sh): State<Sh>, Extension(ctx): Extension<Ctx>) -> Response {
    respond((|| {
        let Caller::Installation { token_id } = ctx.caller else {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "Bad credentials",
                ctx.docs,
            ));
        };
        let mut st = sh.lock();
        if let Some(t) = usize::try_from(token_id)
            .ok()
            .and_then(|i| st.tokens.get_mut(i.wrapping_sub(1)))
        {
            t.revoked = true;
        }
        Ok(StatusCode::NO_CONTENT.into_response())
    })())
}

/// `GET /rate_limit`: the caller's bucket (this request is not counted,
/// as on GitHub).
pub(crate) async fn rate_limit(State(sh): State<Sh>, Extension(ctx): Extension<Ctx>) -> Response {
    let mut st = sh.lock();
    let (key, limit) = bucket_key(&st, Some(ctx.caller));
    let b = st.bucket(&key, limit).clone();
    let core = json!({
        "limit": b.limit,
        "remaining": b.limit.saturating_sub(b.used),
        "reset": b.reset,
        "used": b.used,
    });
    let search = json!({ "limit": 30, "remaining": 30, "reset": b.reset, "used": 0 });
    json_response(
        StatusCode::OK,
        &json!({
            "resources": { "core": core, "search": search },
            "rate": core,
        }),
    )
}
