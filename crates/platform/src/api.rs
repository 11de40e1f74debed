//! The measuring REST client of the `harness-api` driver: a small blocking
//! `reqwest` client that counts every request it makes. It is the platform
//! lane's own, not the publication client (`crates/github`), which neither
//! this crate nor exec links (`tests/dependency_invariants.rs`).
//!
//! For each request it records the bytes sent (request line, the headers it
//! sets, the body) and received (status line, headers, body), the
//! `x-github-request-id` and the last `x-ratelimit-remaining`, so that a row
//! can report exactly what an operation cost ([`ApiClient::since`]). A
//! response body is read up to [`MAX_RESPONSE_BYTES`]. Every failure,
//! including an answer without a field the driver needs, is an [`ApiError`]
//! with the request it was about: the driver turns it into a failed row,
//! never a crash. The token is sent as `Authorization: Bearer` and never
//! appears in an error, a row or a log.

use std::io::Read as _;
use std::sync::Mutex;
use std::time::Duration;

use serde_json::Value;

use super::row::ApiMetrics;

/// The most of a response body read.
pub const MAX_RESPONSE_BYTES: u64 = 8 * 1024 * 1024;

/// A request that failed, or an answer the driver cannot use.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what}: {message}")]
pub struct ApiError {
    /// `METHOD /path`.
    pub what: String,
    /// The HTTP status, when there was an answer.
    pub status: Option<u16>,
    /// Why, with GitHub's message when it sent one.
    pub message: String,
}

/// The client.
#[derive(Debug)]
pub struct ApiClient {
    http: reqwest::blocking::Client,
    base: String,
    token: String,
    metrics: Mutex<ApiMetrics>,
}

/// GitHub's API when no base URL is given.
pub const GITHUB_API: &str = "https://api.github.com";

impl ApiClient {
    /// A client for `base` (`None`: GitHub's) with `token`, each request
    /// bounded by `timeout`. Fails when the HTTP client cannot be built
    /// (its TLS backend does not load).
    pub fn new(
        base: Option<&str>,
        token: &str,
        timeout: Duration,
    ) -> Result<ApiClient, reqwest::Error> {
        let http = reqwest::blocking::Client::builder()
            .timeout(timeout)
            .user_agent(concat!("benchops-exec/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(ApiClient {
            http,
            base: base.unwrap_or(GITHUB_API).trim_end_matches('/').to_owned(),
            token: token.to_owned(),
            metrics: Mutex::new(ApiMetrics::default()),
        })
    }

    /// Everything counted so far.
    pub fn snapshot(&self) -> ApiMetrics {
        self.metrics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// What was counted since `before` (a [`Self::snapshot`]).
    pub fn since(&self, before: &ApiMetrics) -> ApiMetrics {
        let now = self.snapshot();
        let n = (now.request_count - before.request_count) as usize;
        ApiMetrics {
            request_count: now.request_count - before.request_count,
            request_bytes: now.request_bytes - before.request_bytes,
            response_bytes: now.response_bytes - before.response_bytes,
            rate_limit_remaining: now.rate_limit_remaining,
            request_ids: now.request_ids[now.request_ids.len() - n..].to_vec(),
        }
    }

    /// One request; the JSON answer (`Null` for an empty body) or why not.
    pub fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Result<Value, ApiError> {
        let what = format!("{method} {path}");
        let err = |status: Option<u16>, message: String| ApiError {
            what: what.clone(),
            status,
            message,
        };
        let m =
            reqwest::Method::from_bytes(method.as_bytes()).map_err(|e| err(None, e.to_string()))?;
        let mut req = self
            .http
            .request(m, format!("{}{path}", self.base))
            .header("accept", "application/vnd.github+json")
            .header("x-github-api-version", "2022-11-28")
            .bearer_auth(&self.token);
        let body_bytes = match body {
            Some(b) => serde_json::to_vec(b).map_err(|e| err(None, e.to_string()))?,
            None => Vec::new(),
        };
        if body.is_some() {
            req = req
                .header("content-type", "application/json")
                .body(body_bytes.clone());
        }
        let req = req.build().map_err(|e| err(None, e.to_string()))?;
        let sent = format!("{method} {path} HTTP/1.1\r\n").len()
            + req
                .headers()
                .iter()
                .map(|(k, v)| k.as_str().len() + v.as_bytes().len() + 4)
                .sum::<usize>()
            + 2
            + body_bytes.len();
        let result = self.http.execute(req);
        let mut metrics = self
            .metrics
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        metrics.request_count += 1;
        metrics.request_bytes += sent as u64;
        let resp = match result {
            Ok(r) => r,
            Err(e) => {
                metrics.request_ids.push(None);
                return Err(err(None, error_chain(&e)));
            }
        };
        let status = resp.status().as_u16();
        let header = |k: &str| {
            resp.headers()
                .get(k)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        metrics.request_ids.push(header("x-github-request-id"));
        if let Some(left) = header("x-ratelimit-remaining").and_then(|v| v.parse().ok()) {
            metrics.rate_limit_remaining = Some(left);
        }
        let head = format!("HTTP/1.1 {status}\r\n").len()
            + resp
                .headers()
                .iter()
                .map(|(k, v)| k.as_str().len() + v.as_bytes().len() + 4)
                .sum::<usize>()
            + 2;
        let mut bytes = Vec::new();
        let read = resp.take(MAX_RESPONSE_BYTES + 1).read_to_end(&mut bytes);
        metrics.response_bytes += (head + bytes.len()) as u64;
        drop(metrics);
        read.map_err(|e| err(Some(status), format!("reading the answer: {e}")))?;
        if bytes.len() as u64 > MAX_RESPONSE_BYTES {
            return Err(err(
                Some(status),
                format!("the answer is larger than {MAX_RESPONSE_BYTES} bytes"),
            ));
        }
        let json: Option<Value> = if bytes.is_empty() {
            Some(Value::Null)
        } else {
            serde_json::from_slice(&bytes).ok()
        };
        if !(200..300).contains(&status) {
            let message = json
                .as_ref()
                .and_then(|j| j.get("message"))
                .and_then(Value::as_str)
                .map_or_else(
                    || format!("HTTP {status}"),
                    |m| format!("HTTP {status}: {m}"),
                );
            return Err(err(Some(status), super::row::tail(&message)));
        }
        json.ok_or_else(|| err(Some(status), "the answer is not JSON".into()))
    }

    /// `GET /repos/{repo}`.
    pub fn get_repo(&self, repo: &str) -> Result<Value, ApiError> {
        self.call("GET", &format!("/repos/{repo}"), None)
    }

    /// The sha `heads/{branch}` points at.
    pub fn branch_sha(&self, repo: &str, branch: &str) -> Result<String, ApiError> {
        let path = format!("/repos/{repo}/git/ref/heads/{branch}");
        let v = self.call("GET", &path, None)?;
        field_str(&v, &["object", "sha"], &format!("GET {path}"))
    }

    /// `POST /repos/{repo}/git/refs`.
    pub fn create_branch(&self, repo: &str, branch: &str, sha: &str) -> Result<(), ApiError> {
        let body = serde_json::json!({"ref": format!("refs/heads/{branch}"), "sha": sha});
        self.call("POST", &format!("/repos/{repo}/git/refs"), Some(&body))
            .map(|_| ())
    }

    /// `DELETE /repos/{repo}/git/refs/heads/{branch}`.
    pub fn delete_branch(&self, repo: &str, branch: &str) -> Result<(), ApiError> {
        self.call(
            "DELETE",
            &format!("/repos/{repo}/git/refs/heads/{branch}"),
            None,
        )
        .map(|_| ())
    }

    /// The blob sha of `path` on `branch`, if the file exists.
    pub fn file_sha(
        &self,
        repo: &str,
        path: &str,
        branch: &str,
    ) -> Result<Option<String>, ApiError> {
        let p = format!("/repos/{repo}/contents/{path}?ref={branch}");
        match self.call("GET", &p, None) {
            Ok(v) => field_str(&v, &["sha"], &format!("GET {p}")).map(Some),
            Err(e) if e.status == Some(404) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Creates `path` on `branch` with one request; the new commit's sha.
    /// The path must be new (every payload path carries the run id): an
    /// existing file is not looked up and the platform refuses the write.
    pub fn create_file(
        &self,
        repo: &str,
        path: &str,
        branch: &str,
        message: &str,
        content: &[u8],
    ) -> Result<String, ApiError> {
        let body = serde_json::json!({
            "message": message,
            "content": base64(content),
            "branch": branch,
        });
        let p = format!("/repos/{repo}/contents/{path}");
        let v = self.call("PUT", &p, Some(&body))?;
        field_str(&v, &["commit", "sha"], &format!("PUT {p}"))
    }

    /// Deletes `path` on `branch`, if it is there.
    pub fn delete_file(
        &self,
        repo: &str,
        path: &str,
        branch: &str,
        message: &str,
    ) -> Result<(), ApiError> {
        let Some(sha) = self.file_sha(repo, path, branch)? else {
            return Ok(());
        };
        let body = serde_json::json!({"message": message, "sha": sha, "branch": branch});
        self.call(
            "DELETE",
            &format!("/repos/{repo}/contents/{path}"),
            Some(&body),
        )
        .map(|_| ())
    }

    /// Opens a pull request; its number and head sha.
    pub fn create_pr(
        &self,
        repo: &str,
        title: &str,
        head: &str,
        base: &str,
    ) -> Result<(u64, String), ApiError> {
        let p = format!("/repos/{repo}/pulls");
        let body = serde_json::json!({"title": title, "head": head, "base": base,
            "body": "A disposable pull request of a benchops platform-lane run."});
        let v = self.call("POST", &p, Some(&body))?;
        let what = format!("POST {p}");
        let n = v
            .get("number")
            .and_then(Value::as_u64)
            .ok_or_else(|| missing(&what, "number"))?;
        Ok((n, field_str(&v, &["head", "sha"], &what)?))
    }

    /// `GET /repos/{repo}/pulls/{n}`.
    pub fn get_pr(&self, repo: &str, n: u64) -> Result<Value, ApiError> {
        self.call("GET", &format!("/repos/{repo}/pulls/{n}"), None)
    }

    /// `PUT /repos/{repo}/pulls/{n}/merge`.
    pub fn merge_pr(&self, repo: &str, n: u64) -> Result<(), ApiError> {
        let body = serde_json::json!({"merge_method": "merge"});
        self.call(
            "PUT",
            &format!("/repos/{repo}/pulls/{n}/merge"),
            Some(&body),
        )
        .map(|_| ())
    }

    /// `POST /repos/{repo}/statuses/{sha}`.
    pub fn post_status(
        &self,
        repo: &str,
        sha: &str,
        state: &str,
        context: &str,
    ) -> Result<(), ApiError> {
        let body = serde_json::json!({"state": state, "context": context,
            "description": "posted by the benchops platform lane"});
        self.call(
            "POST",
            &format!("/repos/{repo}/statuses/{sha}"),
            Some(&body),
        )
        .map(|_| ())
    }

    /// The combined status `state` of `sha`.
    pub fn combined_state(&self, repo: &str, sha: &str) -> Result<String, ApiError> {
        let p = format!("/repos/{repo}/commits/{sha}/status");
        let v = self.call("GET", &p, None)?;
        field_str(&v, &["state"], &format!("GET {p}"))
    }
}

fn missing(what: &str, field: &str) -> ApiError {
    ApiError {
        what: what.to_owned(),
        status: None,
        message: format!("the answer has no `{field}`"),
    }
}

/// The string at `path` in `v`, or an error naming it.
pub fn field_str(v: &Value, path: &[&str], what: &str) -> Result<String, ApiError> {
    let mut cur = v;
    for k in path {
        cur = cur.get(k).ok_or_else(|| missing(what, &path.join(".")))?;
    }
    cur.as_str()
        .map(str::to_owned)
        .ok_or_else(|| missing(what, &path.join(".")))
}

/// An error and its causes, `: `-separated (a transport error's cause
/// says what failed: the connection, the TLS handshake, the timeout).
fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}

/// Standard base64 with padding (the contents API's encoding).
pub fn base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_matches_rfc_4648_vectors() {
        for (i, o) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(base64(i.as_bytes()), o);
        }
    }

    #[test]
    fn a_missing_field_is_an_error_naming_it() {
        let v = serde_json::json!({"commit": {}});
        let e = field_str(&v, &["commit", "sha"], "PUT /x").expect_err("missing");
        assert_eq!(e.to_string(), "PUT /x: the answer has no `commit.sha`");
    }
}
