//! The server's configuration: one TOML file plus environment variables,
//! validated completely at start-up, every error naming the file and key.
//!
//! Secrets never come back out: the webhook secrets live in [`Secret`],
//! whose `Debug` prints `***`, and the App key is read and parsed here only
//! to prove it usable (the bytes are read again by whoever signs with it).
//!
//! Environment variables override the file: `BENCHOPS_APP_ID`,
//! `BENCHOPS_APP_PRIVATE_KEY_FILE`, `BENCHOPS_APP_WEBHOOK_SECRET`,
//! `BENCHOPS_APP_LISTEN`, `BENCHOPS_APP_DATA_DIR`.

use std::collections::BTreeSet;
use std::fmt;
use std::net::SocketAddr;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

/// The largest `/token` or `/token/revoke` request body read.
pub const MAX_TOKEN_REQUEST_BYTES: usize = 64 * 1024;

/// The largest configuration, key or secret file read.
const MAX_FILE_BYTES: u64 = 64 * 1024;
/// GitHub caps webhook payloads at 25 MB.
pub const DEFAULT_MAX_BODY_BYTES: usize = 25 * 1024 * 1024;
/// Deliveries accepted but not yet processed, at most.
pub const DEFAULT_QUEUE_CAPACITY: usize = 1024;
/// The default `header_timeout_seconds`.
pub const DEFAULT_HEADER_TIMEOUT_SECONDS: u64 = 10;
/// The default `body_timeout_seconds`.
pub const DEFAULT_BODY_TIMEOUT_SECONDS: u64 = 30;
/// The default `max_buffered_body_bytes`, unless a body limit is larger.
pub const DEFAULT_MAX_BUFFERED_BODY_BYTES: usize = 64 * 1024 * 1024;
/// The largest `max_buffered_body_bytes`.
pub const MAX_BUFFERED_BODY_BYTES: usize = 1024 * 1024 * 1024;
/// The default `refusal_delay_ms`.
pub const DEFAULT_REFUSAL_DELAY_MS: u64 = 500;
/// The largest `refusal_delay_ms`: GitHub gives up on a delivery after 10 s.
pub const MAX_REFUSAL_DELAY_MS: u64 = 5_000;
/// GitHub's OIDC issuer for Actions.
pub const ACTIONS_ISSUER: &str = "https://token.actions.githubusercontent.com";

/// A secret string: `Debug` never shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Vec<u8>);

impl Secret {
    /// Wraps secret bytes.
    pub fn new(bytes: impl Into<Vec<u8>>) -> Self {
        Secret(bytes.into())
    }

    /// The bytes, for the HMAC key only.
    pub fn expose(&self) -> &[u8] {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    #[default]
    Text,
    /// One JSON object a line.
    Json,
}

/// One repository the token exchange serves: its name and its immutable id
/// (a repository deleted and re-created under the same name gets a new id).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllowedRepo {
    /// `OWNER/NAME`.
    pub name: String,
    /// GitHub's numeric repository id.
    pub id: u64,
}

/// Who may exchange an Actions OIDC token for an installation token.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Policy {
    /// The repositories served.
    #[serde(rename = "repository")]
    pub repositories: Vec<AllowedRepo>,
    /// The publication workflow, `.github/workflows/<file>.yml`.
    pub workflow_path: String,
    /// The events that may run it (`schedule`, `workflow_dispatch`).
    #[serde(default = "default_events")]
    pub events: Vec<String>,
    /// The deployment environment the job must run in, if any.
    #[serde(default)]
    pub environment: Option<String>,
    /// The branch the workflow must run from.
    #[serde(default = "default_branch")]
    pub default_branch: String,
}

fn default_events() -> Vec<String> {
    vec!["schedule".into(), "workflow_dispatch".into()]
}
fn default_branch() -> String {
    "main".into()
}

impl Policy {
    /// The allowed repository named `name` (case-insensitive, as GitHub
    /// treats names).
    pub fn repository(&self, name: &str) -> Option<&AllowedRepo> {
        self.repositories
            .iter()
            .find(|r| r.name.eq_ignore_ascii_case(name))
    }
}

/// The OIDC issuer and audience.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Oidc {
    /// The token issuer (GitHub's for Actions by default).
    #[serde(default = "default_issuer")]
    pub issuer: String,
    /// The audience the workflow asks for (`core.getIDToken(audience)`).
    pub audience: String,
    /// Clock leeway for `exp`, `nbf` and `iat`, in seconds.
    #[serde(default = "default_leeway")]
    pub leeway_seconds: u64,
}

fn default_issuer() -> String {
    ACTIONS_ISSUER.into()
}
fn default_leeway() -> u64 {
    60
}

/// `POST /handoff` ([`crate::handoff`]): signed records handed to the App,
/// which writes the handoff ref with its own contents-phase token. Off
/// unless the `[handoff]` table is present.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Handoff {
    /// The schedule manifest's path in each served repository, read on
    /// `policy.default_branch`; its `[signing]` table names the
    /// `allowed_signers` file.
    #[serde(default = "default_handoff_manifest")]
    pub manifest: String,
    /// The largest request body accepted (413 above).
    #[serde(default = "default_handoff_body")]
    pub max_body_bytes: usize,
    /// Requests a signing key may make a minute, on average.
    #[serde(default = "default_handoff_rate")]
    pub per_key_per_minute: u32,
    /// Requests a signing key may make at once after a quiet spell.
    #[serde(default = "default_handoff_burst")]
    pub burst: u32,
    /// How long the manifest and `allowed_signers` read from the default
    /// branch are reused, in seconds (0: read for every request).
    #[serde(default = "default_handoff_ttl")]
    pub trust_ttl_seconds: u64,
}

/// The default `[handoff] manifest`, the publication template's.
pub const DEFAULT_HANDOFF_MANIFEST: &str = "benchmarks/schedule.toml";
/// The default `[handoff] max_body_bytes`.
pub const DEFAULT_HANDOFF_BODY_BYTES: usize = 2 * 1024 * 1024;

fn default_handoff_manifest() -> String {
    DEFAULT_HANDOFF_MANIFEST.into()
}
fn default_handoff_body() -> usize {
    DEFAULT_HANDOFF_BODY_BYTES
}
fn default_handoff_rate() -> u32 {
    30
}
fn default_handoff_burst() -> u32 {
    10
}
fn default_handoff_ttl() -> u64 {
    60
}

fn validate_handoff(h: &Handoff) -> Result<(), (String, String)> {
    let m = &h.manifest;
    if m.is_empty()
        || m.starts_with('/')
        || m.split('/')
            .any(|part| part.is_empty() || part == "." || part == "..")
        || !m.ends_with(".toml")
    {
        return Err((
            "handoff.manifest".into(),
            format!(
                "{} is not a relative path to a .toml file inside the repository",
                benchops::excerpt::quote(m)
            ),
        ));
    }
    // A sealed record may be up to 8 MiB; JSON escaping and the signature
    // add a little.
    if !(1024..=16 * 1024 * 1024).contains(&h.max_body_bytes) {
        return Err((
            "handoff.max_body_bytes".into(),
            format!(
                "{} is outside 1024..={}",
                h.max_body_bytes,
                16 * 1024 * 1024
            ),
        ));
    }
    if !(1..=6000).contains(&h.per_key_per_minute) {
        return Err((
            "handoff.per_key_per_minute".into(),
            format!("{} is outside 1..=6000", h.per_key_per_minute),
        ));
    }
    if !(1..=1000).contains(&h.burst) {
        return Err((
            "handoff.burst".into(),
            format!("{} is outside 1..=1000", h.burst),
        ));
    }
    if h.trust_ttl_seconds > 3600 {
        return Err((
            "handoff.trust_ttl_seconds".into(),
            format!("{} is more than 3600", h.trust_ttl_seconds),
        ));
    }
    Ok(())
}

/// The file as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    app_id: Option<u64>,
    private_key_file: Option<PathBuf>,
    webhook_secret: Option<String>,
    webhook_secret_file: Option<PathBuf>,
    webhook_secret_previous_file: Option<PathBuf>,
    listen: Option<String>,
    data_dir: Option<PathBuf>,
    github_api_url: Option<String>,
    history: Option<PathBuf>,
    #[serde(default)]
    log_format: LogFormat,
    #[serde(default)]
    local_trial: bool,
    max_body_bytes: Option<usize>,
    queue_capacity: Option<usize>,
    header_timeout_seconds: Option<u64>,
    body_timeout_seconds: Option<u64>,
    max_buffered_body_bytes: Option<usize>,
    refusal_delay_ms: Option<u64>,
    oidc: Option<Oidc>,
    policy: Option<Policy>,
    handoff: Option<Handoff>,
}

/// The validated configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// Where it was read from.
    pub path: PathBuf,
    /// The GitHub App's id.
    pub app_id: u64,
    /// The App's private key (PEM), readable by its owner only.
    pub private_key_file: PathBuf,
    /// The webhook secrets: the current one first, then the previous one
    /// while a rotation is under way.
    pub webhook_secrets: Vec<Secret>,
    /// The address to listen on.
    pub listen: SocketAddr,
    /// The directory of the database.
    pub data_dir: PathBuf,
    /// The GitHub API base URL (`None`: `GITHUB_API_URL`, else GitHub's).
    pub github_api_url: Option<String>,
    /// A local git repository holding `benchmark-history`, for `/status`.
    pub history: Option<PathBuf>,
    /// How logs are written.
    pub log_format: LogFormat,
    /// The largest webhook body accepted (413 above).
    pub max_body_bytes: usize,
    /// Accepted deliveries waiting for the worker, at most (503 above).
    pub queue_capacity: usize,
    /// How long a connection may take to send a request's headers, from
    /// its start or the end of the previous answer: a connection that is
    /// idle or sends half its headers is closed after it.
    pub header_timeout: Duration,
    /// How long a request's body may take to arrive, once its headers did
    /// (408 after it).
    pub body_timeout: Duration,
    /// The request body bytes held in memory at once, over every request
    /// (503 with `Retry-After` above): a body reserves its
    /// `Content-Length`, or its endpoint's limit without one, before a byte
    /// of it is read.
    pub max_buffered_body_bytes: usize,
    /// How long a webhook refused for its signature (401) waits, after its
    /// body is released, before it is answered; zero answers at once. A
    /// peer that waits for its answers, as a scripted flood does, then
    /// sends one request a connection per delay.
    pub refusal_delay: Duration,
    /// The OIDC issuer and audience.
    pub oidc: Oidc,
    /// The token-exchange policy.
    pub policy: Policy,
    /// `POST /handoff`, when the `[handoff]` table turns it on.
    pub handoff: Option<Handoff>,
    /// A local trial ([`LOCAL_TRIAL`]): everything the server talks to is
    /// on this machine, and key and secret files may be readable by others.
    pub local_trial: bool,
}

/// What `local_trial = true` means, as `check-config` prints it.
pub const LOCAL_TRIAL: &str = "on: listen, github_api_url and oidc.issuer are on this machine; key and secret files may be readable by others. Never for a deployment";

impl Config {
    /// The OIDC clock leeway.
    pub fn leeway(&self) -> Duration {
        Duration::from_secs(self.oidc.leeway_seconds)
    }

    /// The database file.
    pub fn database(&self) -> PathBuf {
        self.data_dir.join("app.db")
    }
}

/// Why the configuration was refused.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// A file could not be read.
    #[error("{path}: cannot read {what}: {reason}")]
    Read {
        /// Which file.
        what: &'static str,
        /// Its path.
        path: PathBuf,
        /// The reason.
        reason: String,
    },
    /// The TOML did not parse or has a wrong or unknown key.
    #[error("{path}: {reason}")]
    Syntax {
        /// The configuration file.
        path: PathBuf,
        /// The parser's message (it names the key and line).
        reason: String,
    },
    /// A key is missing or its value is refused.
    #[error("{path}: `{key}`: {reason}")]
    Key {
        /// The configuration file.
        path: PathBuf,
        /// The key, dotted (`policy.workflow_path`), or the variable.
        key: String,
        /// Why.
        reason: String,
    },
}

fn read_small(what: &'static str, path: &Path) -> Result<Vec<u8>, ConfigError> {
    benchops::fsio::read_input_file(path, MAX_FILE_BYTES).map_err(|e| ConfigError::Read {
        what,
        path: path.to_owned(),
        reason: e.to_string(),
    })
}

/// Refuses a secret file that the group or others may read.
fn owner_only(
    what: &'static str,
    key: &str,
    cfg: &Path,
    path: &Path,
    local_trial: bool,
) -> Result<(), ConfigError> {
    let meta = std::fs::metadata(path).map_err(|e| ConfigError::Read {
        what,
        path: path.to_owned(),
        reason: e.to_string(),
    })?;
    let mode = meta.permissions().mode() & 0o777;
    // A local trial uses throwaway files from a clone, which git checks
    // out readable by all.
    if mode & 0o077 != 0 && !local_trial {
        return Err(ConfigError::Key {
            path: cfg.to_owned(),
            key: key.to_owned(),
            reason: format!(
                "{} has mode {mode:03o}: others can read it; `chmod 600` it",
                path.display()
            ),
        });
    }
    Ok(())
}

/// Reads and validates the configuration at `path`, with `env` (a lookup of
/// environment variables) overriding the file.
pub fn load_with(path: &Path, env: &dyn Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
    let bytes = read_small("the configuration", path)?;
    let text = String::from_utf8(bytes).map_err(|_| ConfigError::Syntax {
        path: path.to_owned(),
        reason: "not UTF-8".into(),
    })?;
    let raw: RawConfig = toml::from_str(&text).map_err(|e| ConfigError::Syntax {
        path: path.to_owned(),
        reason: e.to_string().trim_end().to_owned(),
    })?;
    let base = path.parent().unwrap_or(Path::new("."));
    let rel = |p: PathBuf| if p.is_absolute() { p } else { base.join(p) };
    let key_err = |key: &str, reason: String| ConfigError::Key {
        path: path.to_owned(),
        key: key.to_owned(),
        reason,
    };
    let missing = |key: &str, var: &str| {
        key_err(
            key,
            format!("missing: set it in the file or in the environment as {var}"),
        )
    };

    let app_id = match env("BENCHOPS_APP_ID") {
        Some(v) => v.trim().parse::<u64>().map_err(|_| {
            key_err(
                "BENCHOPS_APP_ID",
                format!("{} is not a number", benchops::excerpt::quote(&v)),
            )
        })?,
        None => raw
            .app_id
            .ok_or_else(|| missing("app_id", "BENCHOPS_APP_ID"))?,
    };
    if app_id == 0 {
        return Err(key_err("app_id", "must be a positive App id".into()));
    }

    let private_key_file = env("BENCHOPS_APP_PRIVATE_KEY_FILE")
        .map(PathBuf::from)
        .or(raw.private_key_file.map(rel))
        .ok_or_else(|| missing("private_key_file", "BENCHOPS_APP_PRIVATE_KEY_FILE"))?;
    owner_only(
        "the App private key",
        "private_key_file",
        path,
        &private_key_file,
        raw.local_trial,
    )?;
    let pem = read_small("the App private key", &private_key_file)?;
    benchops_github::AppKey::from_pem(benchops_github::AppId::new(app_id), &pem).map_err(|e| {
        key_err(
            "private_key_file",
            format!("{}: not a usable RSA key: {e}", private_key_file.display()),
        )
    })?;

    let mut webhook_secrets = Vec::new();
    let current = match (
        env("BENCHOPS_APP_WEBHOOK_SECRET"),
        raw.webhook_secret,
        raw.webhook_secret_file,
    ) {
        (Some(s), _, _) => s.into_bytes(),
        (None, Some(_), Some(_)) => {
            return Err(key_err(
                "webhook_secret",
                "give `webhook_secret` or `webhook_secret_file`, not both".into(),
            ));
        }
        (None, Some(s), None) => s.into_bytes(),
        (None, None, Some(f)) => {
            let f = rel(f);
            owner_only(
                "the webhook secret",
                "webhook_secret_file",
                path,
                &f,
                raw.local_trial,
            )?;
            trim_secret(read_small("the webhook secret", &f)?)
        }
        (None, None, None) => {
            return Err(missing(
                "webhook_secret_file",
                "BENCHOPS_APP_WEBHOOK_SECRET",
            ));
        }
    };
    if current.is_empty() {
        return Err(key_err("webhook_secret", "is empty".into()));
    }
    webhook_secrets.push(Secret::new(current));
    if let Some(f) = raw.webhook_secret_previous_file {
        let f = rel(f);
        owner_only(
            "the previous webhook secret",
            "webhook_secret_previous_file",
            path,
            &f,
            raw.local_trial,
        )?;
        let previous = trim_secret(read_small("the previous webhook secret", &f)?);
        if previous.is_empty() {
            return Err(key_err("webhook_secret_previous_file", "is empty".into()));
        }
        webhook_secrets.push(Secret::new(previous));
    }

    let listen_text = env("BENCHOPS_APP_LISTEN")
        .or(raw.listen)
        .unwrap_or_else(|| "127.0.0.1:8080".into());
    let listen = listen_text.parse::<SocketAddr>().map_err(|_| {
        key_err(
            "listen",
            format!(
                "{} is not an address:port",
                benchops::excerpt::quote(&listen_text)
            ),
        )
    })?;

    let data_dir = env("BENCHOPS_APP_DATA_DIR")
        .map(PathBuf::from)
        .or(raw.data_dir.map(rel))
        .ok_or_else(|| missing("data_dir", "BENCHOPS_APP_DATA_DIR"))?;

    if let Some(url) = &raw.github_api_url {
        if !(url.starts_with("https://") || url.starts_with("http://")) {
            return Err(key_err(
                "github_api_url",
                format!("{} is not an http(s) URL", benchops::excerpt::quote(url)),
            ));
        }
    }

    let max_body_bytes = raw.max_body_bytes.unwrap_or(DEFAULT_MAX_BODY_BYTES);
    if !(1024..=DEFAULT_MAX_BODY_BYTES * 4).contains(&max_body_bytes) {
        return Err(key_err(
            "max_body_bytes",
            format!(
                "{max_body_bytes} is outside 1024..={}",
                DEFAULT_MAX_BODY_BYTES * 4
            ),
        ));
    }
    let queue_capacity = raw.queue_capacity.unwrap_or(DEFAULT_QUEUE_CAPACITY);
    if !(1..=1_000_000).contains(&queue_capacity) {
        return Err(key_err(
            "queue_capacity",
            format!("{queue_capacity} is outside 1..=1000000"),
        ));
    }

    let oidc = raw.oidc.ok_or_else(|| {
        key_err(
            "oidc",
            "missing: an [oidc] table with at least `audience`".into(),
        )
    })?;
    if oidc.audience.trim().is_empty() {
        return Err(key_err("oidc.audience", "is empty".into()));
    }
    check_issuer(&oidc.issuer).map_err(|why| {
        key_err(
            "oidc.issuer",
            format!("{} {why}", benchops::excerpt::quote(&oidc.issuer)),
        )
    })?;
    if oidc.leeway_seconds > 300 {
        return Err(key_err(
            "oidc.leeway_seconds",
            format!("{} is more than 300 s", oidc.leeway_seconds),
        ));
    }

    let policy = raw.policy.ok_or_else(|| {
        key_err(
            "policy",
            "missing: a [policy] table with `workflow_path` and [[policy.repository]]".into(),
        )
    })?;
    validate_policy(&policy).map_err(|(k, r)| key_err(&k, r))?;
    if let Some(h) = &raw.handoff {
        validate_handoff(h).map_err(|(k, r)| key_err(&k, r))?;
    }

    let seconds = |key: &str, value: Option<u64>, default: u64, max: u64| {
        let v = value.unwrap_or(default);
        if (1..=max).contains(&v) {
            Ok(Duration::from_secs(v))
        } else {
            Err(key_err(key, format!("{v} is outside 1..={max}")))
        }
    };
    let header_timeout = seconds(
        "header_timeout_seconds",
        raw.header_timeout_seconds,
        DEFAULT_HEADER_TIMEOUT_SECONDS,
        300,
    )?;
    let body_timeout = seconds(
        "body_timeout_seconds",
        raw.body_timeout_seconds,
        DEFAULT_BODY_TIMEOUT_SECONDS,
        600,
    )?;
    // Every body an endpoint takes must fit in the budget.
    let largest_body = max_body_bytes.max(
        raw.handoff
            .as_ref()
            .map_or(0, |h| h.max_body_bytes)
            .max(MAX_TOKEN_REQUEST_BYTES),
    );
    let max_buffered_body_bytes = raw
        .max_buffered_body_bytes
        .unwrap_or(DEFAULT_MAX_BUFFERED_BODY_BYTES.max(largest_body));
    if !(largest_body..=MAX_BUFFERED_BODY_BYTES).contains(&max_buffered_body_bytes) {
        return Err(key_err(
            "max_buffered_body_bytes",
            format!(
                "{max_buffered_body_bytes} is outside {largest_body}..={MAX_BUFFERED_BODY_BYTES}: it must hold the largest body an endpoint takes (max_body_bytes, [handoff] max_body_bytes)"
            ),
        ));
    }

    let refusal_delay_ms = raw.refusal_delay_ms.unwrap_or(DEFAULT_REFUSAL_DELAY_MS);
    if refusal_delay_ms > MAX_REFUSAL_DELAY_MS {
        return Err(key_err(
            "refusal_delay_ms",
            format!(
                "{refusal_delay_ms} is outside 0..={MAX_REFUSAL_DELAY_MS}: GitHub gives up on a delivery after 10 s"
            ),
        ));
    }

    if raw.local_trial {
        let on_this_machine = |url: &str| {
            url.parse::<axum::http::Uri>()
                .ok()
                .and_then(|u| u.host().map(is_loopback_host))
                .unwrap_or(false)
        };
        let why = if !listen.ip().is_loopback() {
            Some(("listen", "a loopback address"))
        } else if !raw.github_api_url.as_deref().is_some_and(on_this_machine) {
            Some(("github_api_url", "an http(s) URL on this machine"))
        } else if !on_this_machine(&oidc.issuer) {
            Some(("oidc.issuer", "a URL on this machine"))
        } else {
            None
        };
        if let Some((key, what)) = why {
            return Err(key_err(
                key,
                format!(
                    "must be {what} with `local_trial = true`, which lets key and secret files be readable by others; a deployment leaves `local_trial` out"
                ),
            ));
        }
    }

    Ok(Config {
        path: path.to_owned(),
        app_id,
        private_key_file,
        webhook_secrets,
        listen,
        data_dir,
        github_api_url: raw.github_api_url,
        history: raw.history.map(rel),
        log_format: raw.log_format,
        max_body_bytes,
        queue_capacity,
        header_timeout,
        body_timeout,
        max_buffered_body_bytes,
        refusal_delay: Duration::from_millis(refusal_delay_ms),
        oidc,
        policy,
        handoff: raw.handoff,
        local_trial: raw.local_trial,
    })
}

/// Reads the configuration with the process environment.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    load_with(path, &|k| std::env::var(k).ok().filter(|v| !v.is_empty()))
}

/// Whether `issuer` may be the OIDC issuer: an `https` URL, or an `http`
/// one whose host is this machine (`127.0.0.1` and the rest of
/// `127.0.0.0/8`, `[::1]`, `localhost`), for trying the token exchange
/// against a local issuer. The URL is parsed and its host compared, so
/// `http://127.0.0.1.example.org` and `http://127.0.0.1@example.org` are
/// not loopback. `Err` says why not.
pub fn check_issuer(issuer: &str) -> Result<(), &'static str> {
    let uri: axum::http::Uri = issuer.parse().map_err(|_| "is not a URL")?;
    let authority = uri.authority().ok_or("is not an absolute URL")?;
    if authority.as_str().contains('@') {
        return Err("must not carry a user name");
    }
    if uri.query().is_some() || issuer.contains('#') {
        return Err("must not have a query or a fragment");
    }
    let host = authority.host();
    if host.is_empty() {
        return Err("has no host");
    }
    match uri.scheme_str() {
        Some("https") => Ok(()),
        Some("http") if is_loopback_host(host) => Ok(()),
        Some("http") => {
            Err("must be an https URL (http only on this machine: 127.0.0.1, [::1] or localhost)")
        }
        _ => Err("must be an https URL"),
    }
}

/// `localhost` or a loopback address (`[::1]` with its brackets).
fn is_loopback_host(host: &str) -> bool {
    let bare = host
        .strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host);
    host.eq_ignore_ascii_case("localhost")
        || bare
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A secret file's bytes without one trailing newline (what `echo` adds).
fn trim_secret(mut bytes: Vec<u8>) -> Vec<u8> {
    while matches!(bytes.last(), Some(b'\n' | b'\r')) {
        bytes.pop();
    }
    bytes
}

fn validate_policy(p: &Policy) -> Result<(), (String, String)> {
    if p.repositories.is_empty() {
        return Err((
            "policy.repository".into(),
            "lists no repository: add [[policy.repository]] name = \"OWNER/NAME\", id = N".into(),
        ));
    }
    let mut seen = BTreeSet::new();
    for (i, r) in p.repositories.iter().enumerate() {
        let key = format!("policy.repository[{i}].name");
        if benchops_github::Repo::parse(&r.name).is_err() {
            return Err((
                key,
                format!("{} is not OWNER/NAME", benchops::excerpt::quote(&r.name)),
            ));
        }
        if !seen.insert(r.name.to_ascii_lowercase()) {
            return Err((key, format!("{} is listed twice", r.name)));
        }
        if r.id == 0 {
            return Err((
                format!("policy.repository[{i}].id"),
                "must be the repository's numeric id".into(),
            ));
        }
    }
    let wf = &p.workflow_path;
    if !(wf.starts_with(".github/workflows/") && (wf.ends_with(".yml") || wf.ends_with(".yaml")))
        || wf.contains("..")
        || wf.contains('@')
    {
        return Err((
            "policy.workflow_path".into(),
            format!(
                "{} is not .github/workflows/<file>.yml",
                benchops::excerpt::quote(wf)
            ),
        ));
    }
    if p.events.is_empty() {
        return Err(("policy.events".into(), "is empty".into()));
    }
    for e in &p.events {
        if e == "pull_request" || e == "pull_request_target" {
            return Err((
                "policy.events".into(),
                format!("{e} runs code from forks and may not publish"),
            ));
        }
    }
    if p.default_branch.trim().is_empty() || p.default_branch.contains(' ') {
        return Err((
            "policy.default_branch".into(),
            "is not a branch name".into(),
        ));
    }
    if p.environment
        .as_deref()
        .is_some_and(|e| e.trim().is_empty())
    {
        return Err(("policy.environment".into(), "is empty".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issuer_is_parsed_and_http_is_taken_on_this_machine_only() {
        for ok in [
            "https://token.actions.githubusercontent.com",
            "https://ghes.example.org/_services/token",
            "http://127.0.0.1",
            "http://127.0.0.1:8091",
            "http://127.1.2.3:80/issuer",
            "http://[::1]:8091",
            "http://localhost:8091",
        ] {
            assert_eq!(check_issuer(ok), Ok(()), "{ok}");
        }
        for bad in [
            "http://127.0.0.1.attacker.example",
            "http://127.0.0.1.attacker.example:8091",
            "http://127.0.0.1@attacker.example",
            "http://localhost.attacker.example",
            "http://token.actions.githubusercontent.com",
            "https://user@token.actions.githubusercontent.com",
            "https://issuer.example?x=1",
            "ftp://127.0.0.1",
            "token.actions.githubusercontent.com",
            "/relative",
            "",
        ] {
            assert!(check_issuer(bad).is_err(), "{bad}");
        }
    }
}
