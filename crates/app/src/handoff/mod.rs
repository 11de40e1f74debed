//! `POST /handoff`: a sealed record and its signature, handed to the App by
//! an execution host that holds no GitHub credential (`benchops-exec
//! handoff --to URL`). The App checks both and writes the handoff ref
//! `refs/heads/benchmark-result/<lane>/<hex>-<sig>` ([`handoff_ref`]) with its own contents-phase
//! token; the sweep then consumes the ref as it consumes any other, and
//! checks the signature again.
//!
//! The request is JSON:
//!
//! ```json
//! {"repository": "OWNER/NAME", "record": "<the sealed bytes>",
//!  "signature": "-----BEGIN SSH SIGNATURE-----\n…", "digest": "<hex>"}
//! ```
//!
//! `repository` may be left out when the App serves one repository;
//! `digest`, when given, must be the sha256 of `record` (it catches a
//! record cut short on the way). Checks, in order, each answered with
//! `{"reason": "<code>", "detail": "…"}` and writing nothing:
//!
//! 1. the body fits `[handoff] max_body_bytes` (413 `too-large`) and
//!    parses (400 `bad-request`); the repository is served (403
//!    `repository-not-served`, 400 `repository-required`);
//! 2. the signature is an SSHSIG in the namespace `benchops-result` that
//!    verifies over the record with the key it carries (403
//!    `signature-malformed`, `wrong-namespace`, `bad-signature`): no
//!    network, no state;
//! 3. that key is within its rate limit (429 `rate-limited`, with
//!    `Retry-After`; [`limit`]);
//! 4. the record is a valid sealed record (422 `invalid-record`,
//!    `digest-mismatch`);
//! 5. the repository's manifest has `[signing]` (403
//!    `signing-not-configured`) and its `allowed_signers` lists the key
//!    for the record's lane, valid now (403 `unknown-key`,
//!    `wrong-principal`, `outside-validity`; [`trust`]), and the record's
//!    lane is one of the manifest's (422 `unknown-lane`).
//!
//! Then the record is written, or found: 201 `{"status": "accepted", …}`
//! for a new ref, 200 `{"status": "already-present", …}` for a record
//! taken before with the same signature (the store remembers each one) or
//! whose ref exists. A replay therefore writes nothing; the same record
//! signed again (after a key change) is a new handoff. GitHub failing is 502 `github-error`
//! (retry), the App not installed 403 `not-installed`, the repository's
//! manifest or `allowed_signers` missing or invalid 500 `trust-config`
//! (an operator fixes the default branch).
//!
//! Every answer is counted in `benchops_app_handoffs_total{reason}` and
//! logged. The decision log (kind `handoff`, the key's fingerprint as
//! subject) keeps the answers to a key that `allowed_signers` lists (for
//! any lane): anyone can make a key and sign with it, so the refusals of
//! other requests are not stored, and their log lines are bounded to
//! [`crate::REFUSALS_LOGGED_PER_SECOND`] a second. Nothing from the
//! request is logged but its digest, lane and key fingerprint.

pub mod limit;
pub mod trust;

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use benchops::provenance::{self, Rejection};
use benchops_github::{GitHubClient, GitHubError, RefName, Repo, TreeFile};
use serde::Deserialize;
use sha2::Digest as _;

use crate::AppState;
use crate::config::Handoff as HandoffConfig;
use crate::store::{Decision, HandedOff};

use self::limit::KeyLimiter;
use self::trust::{TrustCache, TrustError};

/// The longest `detail` in an answer, in characters.
pub const MAX_DETAIL_CHARS: usize = 1000;

/// The handoff endpoint's state.
#[derive(Debug)]
pub struct Handoffs {
    /// The configuration.
    pub config: HandoffConfig,
    /// The per-key limit.
    pub limiter: KeyLimiter,
    /// Tokens and trust by repository.
    pub trust: TrustCache,
}

impl Handoffs {
    /// The state for `config`.
    pub fn new(config: HandoffConfig) -> Handoffs {
        Handoffs {
            limiter: KeyLimiter::new(config.per_key_per_minute, config.burst),
            trust: TrustCache::new(Duration::from_secs(config.trust_ttl_seconds)),
            config,
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct HandoffRequest {
    #[serde(default)]
    repository: Option<String>,
    record: String,
    signature: String,
    #[serde(default)]
    digest: Option<String>,
}

/// One answer: its status, reason code and detail.
struct Answer {
    status: StatusCode,
    code: &'static str,
    detail: Option<String>,
    retry_after: Option<Duration>,
}

fn refuse(status: StatusCode, code: &'static str, detail: impl Into<Option<String>>) -> Answer {
    Answer {
        status,
        code,
        detail: detail.into(),
        retry_after: None,
    }
}

fn bounded(text: &str) -> String {
    if text.chars().count() <= MAX_DETAIL_CHARS {
        return text.to_owned();
    }
    let mut cut: String = text.chars().take(MAX_DETAIL_CHARS).collect();
    cut.push('…');
    cut
}

impl IntoResponse for Answer {
    fn into_response(self) -> Response {
        let mut body = serde_json::json!({ "reason": self.code });
        if let Some(d) = &self.detail {
            body["detail"] = serde_json::Value::String(bounded(d));
        }
        let mut r = (self.status, axum::Json(body)).into_response();
        if let Some(wait) = self.retry_after {
            let secs = wait.as_secs() + u64::from(wait.subsec_nanos() > 0);
            if let Ok(v) = HeaderValue::from_str(&secs.max(1).to_string()) {
                r.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        r
    }
}

fn rejection_code(r: &Rejection) -> &'static str {
    match r {
        Rejection::Missing => "unsigned",
        Rejection::Malformed(_) => "signature-malformed",
        Rejection::Namespace { .. } => "wrong-namespace",
        Rejection::UnknownKey { .. } => "unknown-key",
        Rejection::BadSignature { .. } => "bad-signature",
        Rejection::WrongPrincipal { .. } => "wrong-principal",
        Rejection::OutsideValidity { .. } => "outside-validity",
    }
}

/// What the request is known to be so far, for the decision log.
#[derive(Default)]
struct Known {
    repository: Option<String>,
    fingerprint: Option<String>,
    digest: Option<String>,
    lane: Option<String>,
    /// The key is in the repository's `allowed_signers` (for some lane).
    listed: bool,
}

impl AppState {
    fn handoff_decision(&self, known: &Known, code: &'static str, granted: bool) {
        self.metrics.handoff(code);
        if !known.listed {
            if let Some(held_back) = self.unproven_log.admit() {
                tracing::info!(
                    granted,
                    reason = code,
                    repository = known.repository.as_deref().unwrap_or("-"),
                    lane = known.lane.as_deref().unwrap_or("-"),
                    digest = known.digest.as_deref().unwrap_or("-"),
                    key = known.fingerprint.as_deref().unwrap_or("-"),
                    held_back,
                    "handoff decision"
                );
            }
            return;
        }
        tracing::info!(
            granted,
            reason = code,
            repository = known.repository.as_deref().unwrap_or("-"),
            lane = known.lane.as_deref().unwrap_or("-"),
            digest = known.digest.as_deref().unwrap_or("-"),
            key = known.fingerprint.as_deref().unwrap_or("-"),
            "handoff decision"
        );
        let d = Decision {
            at: jiff::Timestamp::now().to_string(),
            kind: "handoff".into(),
            granted,
            reason: code.into(),
            repository: known.repository.clone(),
            subject: known.fingerprint.clone(),
            ..Decision::default()
        };
        if let Err(e) = self.store.log_decision(&d) {
            tracing::error!(error = %e, "could not write the decision log");
        }
    }
}

/// `POST /handoff`.
pub async fn receive(
    State(app): State<Arc<AppState>>,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    let mut known = Known::default();
    let result = handle(&app, body, &mut known).await;
    match result {
        Ok((status, code, taken)) => {
            app.handoff_decision(&known, code, true);
            let mut v = serde_json::to_value(&taken).unwrap_or_default();
            v["status"] = serde_json::Value::String(code.to_owned());
            (status, axum::Json(v)).into_response()
        }
        Err(answer) => {
            app.handoff_decision(&known, answer.code, false);
            answer.into_response()
        }
    }
}

async fn handle(
    app: &AppState,
    body: Result<Bytes, BytesRejection>,
    known: &mut Known,
) -> Result<(StatusCode, &'static str, HandedOff), Answer> {
    let Some(handoffs) = &app.handoffs else {
        return Err(refuse(
            StatusCode::NOT_FOUND,
            "handoff-disabled",
            "this server has no [handoff] table in its configuration".to_owned(),
        ));
    };
    let limit = handoffs.config.max_body_bytes;
    let body = body.map_err(|e| {
        if e.status() == StatusCode::PAYLOAD_TOO_LARGE {
            refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                "too-large",
                format!("the body is larger than the {limit} bytes this server takes"),
            )
        } else {
            refuse(StatusCode::BAD_REQUEST, "bad-request", e.body_text())
        }
    })?;

    // 1. The request's shape and the repository.
    let de = &mut serde_json::Deserializer::from_slice(&body);
    let req: HandoffRequest = serde_path_to_error::deserialize(de).map_err(|e| {
        refuse(
            StatusCode::BAD_REQUEST,
            "bad-request",
            crate::events::json_problem(&e),
        )
    })?;
    let served = &app.config.policy.repositories;
    let allowed = match &req.repository {
        Some(name) => app.config.policy.repository(name).ok_or_else(|| {
            refuse(
                StatusCode::FORBIDDEN,
                "repository-not-served",
                format!(
                    "{} is not one of this server's [[policy.repository]]",
                    benchops::excerpt::quote(name)
                ),
            )
        })?,
        None => match served.as_slice() {
            [only] => only,
            _ => {
                return Err(refuse(
                    StatusCode::BAD_REQUEST,
                    "repository-required",
                    "this server serves several repositories: name one in `repository`".to_owned(),
                ));
            }
        },
    };
    known.repository = Some(allowed.name.clone());
    let repo = Repo::parse(&allowed.name)
        .map_err(|_| refuse(StatusCode::INTERNAL_SERVER_ERROR, "config", None))?;
    let record = req.record.as_bytes();
    let signature = req.signature.as_bytes();

    // 2. The signature, by the key it carries: no network, no state.
    if signature.len() as u64 > provenance::MAX_SIGNATURE_BYTES {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "signature-malformed",
            format!(
                "the signature is more than {} bytes",
                provenance::MAX_SIGNATURE_BYTES
            ),
        ));
    }
    let fingerprint = provenance::signer(record, signature)
        .map_err(|r| refuse(StatusCode::FORBIDDEN, rejection_code(&r), r.to_string()))?;
    known.fingerprint = Some(fingerprint.clone());

    // 3. The key's rate limit.
    if let Err(wait) = handoffs.limiter.admit(&fingerprint, Instant::now()) {
        let mut a = refuse(
            StatusCode::TOO_MANY_REQUESTS,
            "rate-limited",
            format!(
                "{fingerprint} may hand off {} records a minute ({} at once)",
                handoffs.config.per_key_per_minute, handoffs.config.burst
            ),
        );
        a.retry_after = Some(wait);
        return Err(a);
    }

    // 4. The record.
    let sealed = benchops::seal::verify(record, None).map_err(|e| {
        refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid-record",
            format!("the record is not a valid sealed record: {e}"),
        )
    })?;
    let hex = sealed.digest().hex();
    known.digest = Some(hex.clone());
    let lane = sealed.record().lane.as_str().to_owned();
    known.lane = Some(lane.clone());
    if let Some(claimed) = &req.digest {
        if claimed != &hex {
            return Err(refuse(
                StatusCode::UNPROCESSABLE_ENTITY,
                "digest-mismatch",
                format!(
                    "the record's sha256 is {hex}, not {} (was it cut short?)",
                    benchops::excerpt::quote(claimed)
                ),
            ));
        }
    }

    // 5. The repository's trust.
    let gh = handoffs
        .trust
        .client(app, &repo)
        .await
        .map_err(trust_answer)?;
    let trust = handoffs
        .trust
        .trust(app, &gh, &repo, &handoffs.config.manifest)
        .await
        .map_err(trust_answer)?;
    if trust.signing.is_none() {
        return Err(refuse(
            StatusCode::FORBIDDEN,
            "signing-not-configured",
            format!(
                "{}:{} has no [signing] table, so no signature can be trusted",
                app.config.policy.default_branch, handoffs.config.manifest
            ),
        ));
    }
    if !trust.lanes.iter().any(|l| l == &lane) {
        return Err(refuse(
            StatusCode::UNPROCESSABLE_ENTITY,
            "unknown-lane",
            format!(
                "the record's lane {} is not a lane of {}:{}",
                benchops::excerpt::quote(&lane),
                app.config.policy.default_branch,
                handoffs.config.manifest
            ),
        ));
    }
    provenance::verify(
        record,
        signature,
        &trust.signers,
        &lane,
        jiff::Timestamp::now(),
    )
    .map_err(|r| {
        known.listed = matches!(
            r,
            Rejection::WrongPrincipal { .. } | Rejection::OutsideValidity { .. }
        );
        refuse(
            StatusCode::FORBIDDEN,
            rejection_code(&r),
            format!("{r} ({})", trust.source),
        )
    })?;
    known.listed = true;

    // Taken before, with this signature: nothing to write.
    let signature_sha: String = sha2::Sha256::digest(signature)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    match app.store.handed_off(&allowed.name, &hex, &signature_sha) {
        Ok(Some(before)) => return Ok((StatusCode::OK, "already-present", before)),
        Ok(None) => {}
        Err(e) => {
            tracing::error!(error = %e, "could not read the handoff table");
            return Err(refuse(StatusCode::SERVICE_UNAVAILABLE, "store-error", None));
        }
    }
    let ref_name = handoff_ref(&lane, &hex, &signature_sha)
        .map_err(|e| refuse(StatusCode::INTERNAL_SERVER_ERROR, "config", e.to_string()))?;
    let written = Written {
        hex: &hex,
        record: &req.record,
        signature: &req.signature,
        lane: &lane,
        fingerprint: &fingerprint,
    };
    let created = write_ref(&gh, &repo, &ref_name, &written)
        .await
        .map_err(|e| {
            tracing::warn!(error = %e, "writing the handoff ref failed");
            refuse(StatusCode::BAD_GATEWAY, "github-error", None)
        })?;
    let taken = HandedOff {
        repository: allowed.name.clone(),
        digest: hex,
        signature_sha,
        lane,
        fingerprint,
        ref_name: ref_name.full(),
        at: jiff::Timestamp::now().to_string(),
    };
    if let Err(e) = app.store.record_handoff(&taken) {
        // The ref is written; a replay finds it ("Reference already
        // exists") and answers the same.
        tracing::error!(error = %e, "could not record the handoff");
    }
    Ok(if created {
        (StatusCode::CREATED, "accepted", taken)
    } else {
        (StatusCode::OK, "already-present", taken)
    })
}

fn trust_answer(e: TrustError) -> Answer {
    match e {
        TrustError::NotInstalled(repo) => refuse(
            StatusCode::FORBIDDEN,
            "not-installed",
            format!("the App is not installed on {repo}"),
        ),
        TrustError::Config(why) => refuse(StatusCode::INTERNAL_SERVER_ERROR, "trust-config", why),
        TrustError::GitHub(e) => {
            tracing::warn!(error = %e, "reading the repository's trust failed");
            refuse(StatusCode::BAD_GATEWAY, "github-error", None)
        }
    }
}

/// `heads/benchmark-result/<lane>/<hex>-<first 12 hex of the signature's
/// sha256>`, or without the lane where the lane cannot be a ref component
/// (a lane name with `..` or that ends in `.lock` or `.`). The signature's
/// part lets the same record, signed again after a key change, be handed
/// off beside a ref the sweep quarantined for its old signature.
pub fn handoff_ref(lane: &str, hex: &str, signature_sha: &str) -> Result<RefName, GitHubError> {
    let sig = &signature_sha[..signature_sha.len().min(12)];
    RefName::new(&format!("heads/benchmark-result/{lane}/{hex}-{sig}"))
        .or_else(|_| RefName::new(&format!("heads/benchmark-result/{hex}-{sig}")))
}

/// What a handoff ref holds, and what its commit message says.
struct Written<'a> {
    hex: &'a str,
    record: &'a str,
    signature: &'a str,
    lane: &'a str,
    fingerprint: &'a str,
}

/// Writes the record and its signature as a root commit and points a new
/// handoff ref at it: `Ok(false)` when the ref exists already.
async fn write_ref(
    gh: &GitHubClient,
    repo: &Repo,
    name: &RefName,
    w: &Written<'_>,
) -> Result<bool, GitHubError> {
    let Written {
        hex,
        record,
        signature,
        lane,
        fingerprint,
    } = *w;
    let file = format!("{hex}.json");
    let files = [
        TreeFile {
            path: file.clone(),
            content: record.to_owned(),
        },
        TreeFile {
            path: format!("{file}{}", provenance::SIG_SUFFIX),
            content: signature.to_owned(),
        },
    ];
    let tree = gh.create_tree(repo, None, &files).await?;
    let message = format!(
        "handoff {hex}\n\nLane {lane}, signed by {fingerprint}; taken by benchops-app (POST /handoff)."
    );
    let commit = gh.create_commit(repo, &message, &tree.sha, &[]).await?;
    match gh.create_ref(repo, name, &commit.sha).await {
        Ok(_) => Ok(true),
        Err(GitHubError::Unprocessable { message, .. }) if message.contains("already exists") => {
            Ok(false)
        }
        Err(e) => Err(e),
    }
}
