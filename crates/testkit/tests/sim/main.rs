//! Integration tests of the GitHub simulator, over real HTTP with reqwest.

mod admin;
mod auth;
mod contents;
mod faults;
mod git;
mod git_ids;
mod handoff;
mod issues;
mod pulls;

use benchops_testkit::GitHubSim;
use reqwest::Method;
use reqwest::header::HeaderMap;
use serde_json::Value;

pub const OWNER: &str = "acme";
pub const REPO: &str = "bench";

/// A simulator with `acme/bench` and a token with contents and issues
/// write.
#[derive(Debug)]
pub struct Env {
    pub sim: GitHubSim,
    pub http: reqwest::Client,
    pub token: String,
    pub installation_id: u64,
}

/// One response: status, headers, JSON body (`Null` when empty).
#[derive(Debug)]
pub struct Resp {
    pub status: u16,
    pub headers: HeaderMap,
    pub body: Value,
}

impl Resp {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    pub fn message(&self) -> &str {
        self.body["message"].as_str().unwrap_or("")
    }
}

pub async fn env() -> Env {
    let sim = GitHubSim::start().await;
    sim.create_repo(OWNER, REPO);
    let installation_id = sim.installation_id(OWNER).expect("installed on acme");
    let token = sim.mint_token(
        installation_id,
        &[("contents", "write"), ("issues", "write")],
        None,
    );
    Env {
        sim,
        http: reqwest::Client::new(),
        token,
        installation_id,
    }
}

impl Env {
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.sim.base_url())
    }

    /// A request with `Authorization: token <t>` (when given).
    pub async fn call_as(
        &self,
        token: Option<&str>,
        method: Method,
        path: &str,
        body: Option<Value>,
    ) -> Resp {
        let mut req = self
            .http
            .request(method, self.url(path))
            .header("accept", "application/vnd.github+json")
            .header("user-agent", "benchops-testkit-tests");
        if let Some(t) = token {
            req = req.header("authorization", format!("token {t}"));
        }
        if let Some(b) = body {
            req = req.json(&b);
        }
        let resp = req.send().await.expect("simulator answers");
        let status = resp.status().as_u16();
        let headers = resp.headers().clone();
        let bytes = resp.bytes().await.expect("body reads");
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).expect("simulator bodies are JSON")
        };
        Resp {
            status,
            headers,
            body,
        }
    }

    /// A request with the environment's token.
    pub async fn call(&self, method: Method, path: &str, body: Option<Value>) -> Resp {
        let token = self.token.clone();
        self.call_as(Some(&token), method, path, body).await
    }

    pub fn repo_path(&self, rest: &str) -> String {
        format!("/repos/{OWNER}/{REPO}{rest}")
    }
}
