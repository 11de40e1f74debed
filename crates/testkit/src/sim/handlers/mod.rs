//! Route handlers and what they share: errors in GitHub's shape, the
//! request context the front layer attaches, permission checks, JSON
//! bodies, query strings and pagination.

use std::sync::{Arc, Mutex, MutexGuard};

use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderValue, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, patch, post};
use rsa::RsaPublicKey;
use serde_json::{Value, json};

use super::auth::Access;
use super::state::{Actor, State};

pub(crate) mod admin;
pub(crate) mod apps;
pub(crate) mod contents;
pub(crate) mod git;
pub(crate) mod issues;
#[cfg(feature = "platform")]
pub(crate) mod pulls;

/// State shared by the front layer and the handlers.
#[derive(Debug)]
pub(crate) struct Shared {
    pub state: Mutex<State>,
    /// `http://127.0.0.1:PORT`, no trailing slash.
    pub api: String,
    pub public_key: RsaPublicKey,
}

impl Shared {
    pub fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

pub(crate) type Sh = Arc<Shared>;

/// Who is calling, as established by the front layer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Caller {
    /// A valid App JWT.
    App,
    /// A live installation token (index into `State::tokens`, 1-based).
    Installation { token_id: u64 },
}

/// Per-request context, put into the request's extensions by the front
/// layer.
#[derive(Debug, Clone)]
pub(crate) struct Ctx {
    pub caller: Caller,
    /// The operation's documentation URL, for error bodies.
    pub docs: &'static str,
}

/// An error response in GitHub's shape:
/// `{"message", "documentation_url", "status", "errors"?}`.
#[derive(Debug)]
pub(crate) struct ApiError {
    pub status: StatusCode,
    pub message: String,
    pub docs: &'static str,
    pub errors: Option<Value>,
    pub headers: Vec<(&'static str, String)>,
}

impl ApiError {
    pub fn new(status: StatusCode, message: impl Into<String>, docs: &'static str) -> Self {
        ApiError {
            status,
            message: message.into(),
            docs,
            errors: None,
            headers: Vec::new(),
        }
    }

    pub fn not_found(docs: &'static str) -> Self {
        ApiError::new(StatusCode::NOT_FOUND, "Not Found", docs)
    }

    pub fn unprocessable(message: impl Into<String>, docs: &'static str) -> Self {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, message, docs)
    }

    /// `Validation Failed` with one `errors` item.
    pub fn validation(resource: &str, field: &str, code: &str, docs: &'static str) -> Self {
        let mut e = ApiError::unprocessable("Validation Failed", docs);
        e.errors = Some(json!([{ "resource": resource, "code": code, "field": field }]));
        e
    }

    /// `Invalid request. "x" wasn't supplied.` (how the git API reports a
    /// missing member).
    pub fn missing(field: &str, docs: &'static str) -> Self {
        ApiError::unprocessable(
            format!("Invalid request.\n\n\"{field}\" wasn't supplied."),
            docs,
        )
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({
            "message": self.message,
            "documentation_url": self.docs,
            "status": self.status.as_u16().to_string(),
        });
        if let Some(errors) = self.errors {
            body["errors"] = errors;
        }
        let mut resp = json_response(self.status, &body);
        for (name, value) in self.headers {
            if let Ok(v) = HeaderValue::from_str(&value) {
                resp.headers_mut().insert(name, v);
            }
        }
        resp
    }
}

pub(crate) type Result<T, E = ApiError> = std::result::Result<T, E>;

/// A JSON response.
pub(crate) fn json_response(status: StatusCode, body: &Value) -> Response {
    let mut resp = (status, body.to_string()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json; charset=utf-8"),
    );
    resp
}

/// A 201 with a `Location` header.
pub(crate) fn created(body: &Value, location: &str) -> Response {
    let mut resp = json_response(StatusCode::CREATED, body);
    if let Ok(v) = HeaderValue::from_str(location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    resp
}

/// Parses a JSON object body; GitHub answers 400 "Problems parsing JSON".
pub(crate) fn object_body(
    bytes: &Bytes,
    docs: &'static str,
) -> Result<serde_json::Map<String, Value>> {
    if bytes.is_empty() {
        return Ok(serde_json::Map::new());
    }
    match serde_json::from_slice::<Value>(bytes) {
        Ok(Value::Object(m)) => Ok(m),
        Ok(_) => Err(ApiError::unprocessable(
            "Invalid request.\n\nThe request body must be a JSON object.",
            docs,
        )),
        Err(_) => Err(ApiError::new(
            StatusCode::BAD_REQUEST,
            "Problems parsing JSON",
            docs,
        )),
    }
}

/// The bot user an installation token acts as.
pub(crate) fn bot(st: &State) -> Actor {
    Actor {
        login: st.app.bot_login(),
        id: st.app.bot_user_id,
        bot: true,
    }
}

/// Checks that the caller may touch `owner/name` with `perm` at `need`
/// and returns the repository's key in `State::repos`.
///
/// Installation tokens see only repositories of their installation (and of
/// their repository list, if any): others are 404, as on GitHub. A missing
/// permission is 403 "Resource not accessible by integration" with the
/// `x-accepted-github-permissions` header. An App JWT reaches no
/// repository data.
pub(crate) fn authorize(
    st: &State,
    ctx: &Ctx,
    owner: &str,
    name: &str,
    perm: &str,
    need: Access,
) -> Result<String> {
    let key = format!("{owner}/{name}").to_ascii_lowercase();
    let token_id = match ctx.caller {
        Caller::Installation { token_id } => token_id,
        Caller::App => {
            return Err(ApiError::new(
                StatusCode::FORBIDDEN,
                "Resource not accessible by integration",
                ctx.docs,
            ));
        }
    };
    let token = usize::try_from(token_id)
        .ok()
        .and_then(|i| st.tokens.get(i.wrapping_sub(1)))
        .ok_or_else(|| ApiError::not_found(ctx.docs))?;
    let repo = st
        .repos
        .get(&key)
        .ok_or_else(|| ApiError::not_found(ctx.docs))?;
    let listed = token
        .repositories
        .as_ref()
        .is_none_or(|names| names.contains(&repo.name.to_ascii_lowercase()));
    if repo.installation_id != token.installation_id || !listed {
        return Err(ApiError::not_found(ctx.docs));
    }
    if !token.allows(perm, need) {
        let mut e = ApiError::new(
            StatusCode::FORBIDDEN,
            "Resource not accessible by integration",
            ctx.docs,
        );
        e.headers.push((
            "x-accepted-github-permissions",
            format!("{perm}={}", need.as_str()),
        ));
        return Err(e);
    }
    Ok(key)
}

/// Whether the caller is an installation token with `perm` at `need` (for
/// answers that depend on it, such as a ruleset's `bypass_actors`).
pub(crate) fn caller_has(st: &State, ctx: &Ctx, perm: &str, need: Access) -> bool {
    let Caller::Installation { token_id } = ctx.caller else {
        return false;
    };
    usize::try_from(token_id)
        .ok()
        .and_then(|i| st.tokens.get(i.wrapping_sub(1)))
        .is_some_and(|t| t.allows(perm, need))
}

/// Decodes one `application/x-www-form-urlencoded` component.
pub(crate) fn decode_component(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Query parameters, decoded, in order.
pub(crate) fn query_pairs(uri: &Uri) -> Vec<(String, String)> {
    uri.query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode_component(k), decode_component(v))
        })
        .collect()
}

/// The last value of a query parameter.
pub(crate) fn query_get(pairs: &[(String, String)], key: &str) -> Option<String> {
    pairs
        .iter()
        .rev()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.clone())
}

/// Pages a list the way GitHub does: `per_page` (default 30, at most 100)
/// and `page` (from 1), with a `Link` header carrying `first`, `prev`,
/// `next` and `last` where they apply.
pub(crate) fn paginate(api: &str, uri: &Uri, items: Vec<Value>) -> Response {
    paginate_with(api, uri, items, Value::Array)
}

/// [`paginate`] for lists GitHub wraps in an object: `wrap` builds the
/// body from the page's items (`total_count` is the caller's to add).
pub(crate) fn paginate_with(
    api: &str,
    uri: &Uri,
    items: Vec<Value>,
    wrap: impl FnOnce(Vec<Value>) -> Value,
) -> Response {
    let pairs = query_pairs(uri);
    let per_page = query_get(&pairs, "per_page")
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .map_or(30, |n| n.min(100));
    let page = query_get(&pairs, "page")
        .and_then(|v| v.parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(1);
    let total = items.len();
    let last = total.div_ceil(per_page).max(1);
    let slice: Vec<Value> = items
        .into_iter()
        .skip((page - 1).saturating_mul(per_page))
        .take(per_page)
        .collect();
    let mut resp = json_response(StatusCode::OK, &wrap(slice));
    let link_to = |p: usize| {
        let mut parts: Vec<String> = uri
            .query()
            .unwrap_or("")
            .split('&')
            .filter(|kv| !kv.is_empty() && !kv.starts_with("page="))
            .map(str::to_owned)
            .collect();
        parts.push(format!("page={p}"));
        format!("<{api}{}?{}>", uri.path(), parts.join("&"))
    };
    let mut links = Vec::new();
    if page > 1 {
        links.push(format!("{}; rel=\"prev\"", link_to((page - 1).min(last))));
    }
    if page < last {
        links.push(format!("{}; rel=\"next\"", link_to(page + 1)));
        links.push(format!("{}; rel=\"last\"", link_to(last)));
    }
    if page > 1 {
        links.push(format!("{}; rel=\"first\"", link_to(1)));
    }
    if !links.is_empty() {
        if let Ok(v) = HeaderValue::from_str(&links.join(", ")) {
            resp.headers_mut().insert(header::LINK, v);
        }
    }
    resp
}

/// The router over every served operation (see `routes::OPERATIONS`).
pub(crate) fn router(sh: Sh) -> Router {
    let router = Router::new()
        .route("/repos/{owner}/{repo}/git/blobs", post(git::create_blob))
        .route("/repos/{owner}/{repo}/git/blobs/{sha}", get(git::get_blob))
        .route("/repos/{owner}/{repo}/git/trees", post(git::create_tree))
        .route("/repos/{owner}/{repo}/git/trees/{sha}", get(git::get_tree))
        .route(
            "/repos/{owner}/{repo}/git/commits",
            post(git::create_commit),
        )
        .route(
            "/repos/{owner}/{repo}/git/commits/{sha}",
            get(git::get_commit),
        )
        .route("/repos/{owner}/{repo}/git/ref/{*ref}", get(git::get_ref))
        .route("/repos/{owner}/{repo}/git/refs", post(git::create_ref))
        .route(
            "/repos/{owner}/{repo}/git/refs/{*ref}",
            patch(git::update_ref).delete(git::delete_ref),
        )
        .route(
            "/repos/{owner}/{repo}/git/matching-refs/{*ref}",
            get(git::list_matching_refs),
        )
        .route(
            "/repos/{owner}/{repo}/contents/{*path}",
            get(git::get_content)
                .put(contents::put_file)
                .delete(contents::delete_file),
        )
        .route(
            "/repos/{owner}/{repo}/issues",
            get(issues::list).post(issues::create),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}",
            get(issues::get_one).patch(issues::update),
        )
        .route(
            "/repos/{owner}/{repo}/issues/comments/{comment_id}",
            delete(issues::delete_comment),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}/comments",
            get(issues::list_comments).post(issues::create_comment),
        )
        .route(
            "/repos/{owner}/{repo}/issues/{number}/labels",
            post(issues::add_labels),
        )
        .route(
            "/repos/{owner}/{repo}/labels",
            get(issues::list_labels).post(issues::create_label),
        )
        .route(
            "/repos/{owner}/{repo}/labels/{name}",
            get(issues::get_label),
        )
        .route("/app", get(apps::get_app))
        .route(
            "/repos/{owner}/{repo}/installation",
            get(apps::repo_installation),
        )
        .route(
            "/app/installations/{id}/access_tokens",
            post(apps::create_token),
        )
        .route("/installation/token", delete(apps::revoke_token))
        .route("/rate_limit", get(apps::rate_limit))
        .route("/repos/{owner}/{repo}", get(admin::get_repo))
        .route(
            "/repos/{owner}/{repo}/environments/{name}",
            get(admin::get_environment).put(admin::put_environment),
        )
        .route(
            "/repos/{owner}/{repo}/environments/{name}/deployment-branch-policies",
            get(admin::list_branch_policies).post(admin::create_branch_policy),
        )
        .route(
            "/repos/{owner}/{repo}/environments/{name}/deployment-branch-policies/{id}",
            get(admin::get_branch_policy),
        )
        .route(
            "/repos/{owner}/{repo}/rulesets",
            get(admin::list_rulesets).post(admin::create_ruleset),
        )
        .route(
            "/repos/{owner}/{repo}/rulesets/{id}",
            get(admin::get_ruleset),
        );
    #[cfg(feature = "platform")]
    let router = pulls::routes(router);
    router
        .fallback(|| async { ApiError::not_found("https://docs.github.com/rest").into_response() })
        .with_state(sh)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_components_decode() {
        assert_eq!(decode_component("perf+drift%2Cx"), "perf drift,x");
        assert_eq!(decode_component("100%"), "100%");
        assert_eq!(decode_component("%zz"), "%zz");
    }
}
