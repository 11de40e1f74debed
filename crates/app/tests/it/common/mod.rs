//! Shared set-up of the App's integration tests: a configuration directory
//! with a throwaway App key (mode 0600), a webhook secret and a database.

#![allow(dead_code)]

pub mod history;

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

/// The webhook secret of the tests.
pub const SECRET: &str = "s3cret-for-tests";
/// The App id of the tests.
pub const APP_ID: u64 = 4242;
/// A throwaway RSA key, also used by the GitHub layer's tests.
pub const APP_KEY: &[u8] = include_bytes!("../../../../github/tests/fixtures/test-app-key.pem");

/// A configuration directory.
#[derive(Debug)]
pub struct Setup {
    pub dir: tempfile::TempDir,
    pub config: PathBuf,
}

/// Options of [`setup`].
#[derive(Debug, Clone)]
pub struct Options {
    pub api_url: Option<String>,
    pub issuer: String,
    pub queue_capacity: usize,
    pub max_body_bytes: usize,
    pub history: Option<PathBuf>,
    pub environment: Option<String>,
    pub listen: String,
    pub app_id: u64,
    pub key_pem: Vec<u8>,
    pub repo_id: u64,
    /// TOML appended to the configuration (a `[handoff]` table, say).
    pub extra: String,
    /// Top-level keys, written before the first table.
    pub top: String,
    /// `refusal_delay_ms`; `None` leaves the server's default. Zero by
    /// default here, so that the many refusals the tests send answer at
    /// once; `hardening` checks the delay.
    pub refusal_delay_ms: Option<u64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            api_url: Some("http://127.0.0.1:9".into()),
            issuer: "http://127.0.0.1:9".into(),
            queue_capacity: 1024,
            max_body_bytes: 26_214_400,
            history: None,
            environment: Some("publication".into()),
            listen: "127.0.0.1:0".into(),
            app_id: APP_ID,
            key_pem: APP_KEY.to_vec(),
            repo_id: 456789,
            extra: String::new(),
            top: String::new(),
            refusal_delay_ms: Some(0),
        }
    }
}

fn write_secret(path: &Path, bytes: &[u8]) {
    std::fs::write(path, bytes).expect("write");
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
}

/// Writes a configuration for `o`.
pub fn setup(o: &Options) -> Setup {
    let dir = tempfile::tempdir().expect("tempdir");
    let key = dir.path().join("app.pem");
    write_secret(&key, &o.key_pem);
    let secret = dir.path().join("webhook-secret");
    write_secret(&secret, format!("{SECRET}\n").as_bytes());
    let mut text = format!(
        "app_id = {}\nprivate_key_file = \"app.pem\"\nwebhook_secret_file = \"webhook-secret\"\n\
         listen = \"{}\"\ndata_dir = \"data\"\nqueue_capacity = {}\nmax_body_bytes = {}\n",
        o.app_id, o.listen, o.queue_capacity, o.max_body_bytes
    );
    if let Some(url) = &o.api_url {
        text.push_str(&format!("github_api_url = \"{url}\"\n"));
    }
    if let Some(h) = &o.history {
        text.push_str(&format!("history = \"{}\"\n", h.display()));
    }
    if let Some(ms) = o.refusal_delay_ms {
        text.push_str(&format!("refusal_delay_ms = {ms}\n"));
    }
    text.push_str(&o.top);
    text.push_str(&format!(
        "\n[oidc]\nissuer = \"{}\"\naudience = \"benchops-app\"\n\n[policy]\n\
         workflow_path = \".github/workflows/publish.yml\"\ndefault_branch = \"main\"\n",
        o.issuer
    ));
    if let Some(env) = &o.environment {
        text.push_str(&format!("environment = \"{env}\"\n"));
    }
    text.push_str(&format!(
        "\n[[policy.repository]]\nname = \"octo/bench\"\nid = {}\n",
        o.repo_id
    ));
    text.push_str(&o.extra);
    let config = dir.path().join("config.toml");
    std::fs::write(&config, text).expect("write config");
    Setup { dir, config }
}

/// The signature GitHub would send.
pub fn sign(body: &[u8]) -> String {
    benchops_app::webhook::sign(SECRET.as_bytes(), body)
}

/// Serves OpenID discovery and a JWKS holding the public half of
/// `key_pem` under `kid` on `issuer`, as GitHub's token issuer does.
pub async fn mount_issuer(issuer: &wiremock::MockServer, key_pem: &str, kid: &str) {
    use wiremock::matchers::{method, path};
    use wiremock::{Mock, ResponseTemplate};
    Mock::given(method("GET"))
        .and(path("/.well-known/openid-configuration"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "issuer": issuer.uri(),
            "jwks_uri": format!("{}/.well-known/jwks", issuer.uri()),
        })))
        .mount(issuer)
        .await;
    Mock::given(method("GET"))
        .and(path("/.well-known/jwks"))
        .respond_with(ResponseTemplate::new(200).set_body_json(serde_json::json!({
            "keys": [benchops_testkit::sim::auth::public_jwk(key_pem, kid)]
        })))
        .mount(issuer)
        .await;
}
