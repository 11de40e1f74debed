//! GitHub Actions OIDC ID token verification against a wiremock issuer that
//! serves OpenID discovery and a JWKS. Tokens are signed here with the
//! throwaway fixture keys (`fixtures/test-app-key.pem`, and
//! `fixtures/oidc-key-2.pem` for rotation and forged signatures, made with
//! `openssl genrsa -traditional 2048`); each JWK's `n` and `e` are read
//! from the PEM's PKCS#1 DER. Token times are fixed through `verify_at`.

use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use benchops_github::oidc::{JwksError, MAX_DOCUMENT_BYTES};
use benchops_github::{ActionsClaims, OidcError, OidcSettings, OidcVerifier};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

const KEY_1: &[u8] = include_bytes!("../fixtures/test-app-key.pem");
const KEY_2: &[u8] = include_bytes!("../fixtures/oidc-key-2.pem");
const KID_1: &str = "key-1";
const KID_2: &str = "key-2";
const AUDIENCE: &str = "benchops";
const NOW: u64 = 1_700_000_000;
const DISCOVERY: &str = "/.well-known/openid-configuration";
const JWKS: &str = "/.well-known/jwks";

// ---------------------------------------------------------------------------
// Keys and tokens

/// One DER element: its tag, its content and what follows it.
fn der(input: &[u8]) -> (u8, &[u8], &[u8]) {
    let tag = input[0];
    let first = usize::from(input[1]);
    let (len, start) = if first < 0x80 {
        (first, 2)
    } else {
        let n = first & 0x7f;
        let len = input[2..2 + n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        (len, 2 + n)
    };
    (tag, &input[start..start + len], &input[start + len..])
}

/// The public JWK of a PKCS#1 PEM private key, named `kid`.
fn jwk(pem: &[u8], kid: &str) -> Value {
    let text = std::str::from_utf8(pem).expect("PEM is text");
    let body: String = text.lines().filter(|l| !l.starts_with("-----")).collect();
    let der_bytes = STANDARD.decode(body).expect("PEM body is base64");
    let (tag, seq, _) = der(&der_bytes);
    assert_eq!(tag, 0x30, "RSAPrivateKey is a SEQUENCE");
    let (_, _version, rest) = der(seq);
    let (tag_n, n, rest) = der(rest);
    let (tag_e, e, _) = der(rest);
    assert_eq!((tag_n, tag_e), (0x02, 0x02), "n and e are INTEGERs");
    let unsigned = |x: &[u8]| {
        let skip = x.iter().take_while(|b| **b == 0).count();
        URL_SAFE_NO_PAD.encode(&x[skip..])
    };
    json!({"kty": "RSA", "use": "sig", "alg": "RS256", "kid": kid, "n": unsigned(n), "e": unsigned(e)})
}

fn sign_with(alg: Algorithm, key: &EncodingKey, kid: Option<&str>, claims: &Value) -> String {
    let mut header = Header::new(alg);
    header.kid = kid.map(str::to_owned);
    jsonwebtoken::encode(&header, claims, key).expect("the token signs")
}

/// An RS256 token signed with `pem`, its header naming `kid`.
fn sign(pem: &[u8], kid: &str, claims: &Value) -> String {
    let key = EncodingKey::from_rsa_pem(pem).expect("fixture key parses");
    sign_with(Algorithm::RS256, &key, Some(kid), claims)
}

/// An unsigned token with the given header.
fn unsigned(header: &Value, claims: &Value) -> String {
    let part = |v: &Value| URL_SAFE_NO_PAD.encode(serde_json::to_vec(v).expect("JSON"));
    format!("{}.{}.", part(header), part(claims))
}

/// The claim set GitHub issues to a job (docs: "About security hardening
/// with OpenID Connect"), for `issuer`, issued at [`NOW`].
fn github_claims(issuer: &str) -> Value {
    json!({
        "jti": "6d3d3a3e-3b1c-4c55-9f1e-8b8f7a2c1d00",
        "sub": "repo:octo-org/octo-repo:environment:prod",
        "environment": "prod",
        "aud": AUDIENCE,
        "ref": "refs/heads/main",
        "sha": "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
        "repository": "octo-org/octo-repo",
        "repository_owner": "octo-org",
        "actor_id": "12",
        "repository_visibility": "private",
        "repository_id": "74",
        "repository_owner_id": "65",
        "run_id": "6123456789",
        "run_number": "10",
        "run_attempt": "2",
        "runner_environment": "github-hosted",
        "actor": "octocat",
        "workflow": "bench",
        "head_ref": "",
        "base_ref": "",
        "event_name": "schedule",
        "ref_type": "branch",
        "workflow_ref": "octo-org/octo-repo/.github/workflows/bench.yml@refs/heads/main",
        "workflow_sha": "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
        "job_workflow_ref": "octo-org/octo-repo/.github/workflows/bench.yml@refs/heads/main",
        "job_workflow_sha": "a1b2c3d4e5f60718293a4b5c6d7e8f9012345678",
        "iss": issuer,
        "nbf": NOW - 600,
        "exp": NOW + 300,
        "iat": NOW,
    })
}

fn with(mut claims: Value, key: &str, value: Value) -> Value {
    claims[key] = value;
    claims
}

fn without(mut claims: Value, key: &str) -> Value {
    claims
        .as_object_mut()
        .expect("claims are an object")
        .remove(key);
    claims
}

// ---------------------------------------------------------------------------
// The issuer

fn discovery_doc(server: &MockServer) -> Value {
    json!({
        "issuer": server.uri(),
        "jwks_uri": format!("{}{JWKS}", server.uri()),
        "subject_types_supported": ["public", "pairwise"],
        "response_types_supported": ["id_token"],
        "id_token_signing_alg_values_supported": ["RS256"],
    })
}

async fn mount_discovery(server: &MockServer) {
    Mock::given(method("GET"))
        .and(path(DISCOVERY))
        .respond_with(ResponseTemplate::new(200).set_body_json(discovery_doc(server)))
        .mount(server)
        .await;
}

async fn mount_jwks(server: &MockServer, keys: &[Value]) {
    Mock::given(method("GET"))
        .and(path(JWKS))
        .respond_with(ResponseTemplate::new(200).set_body_json(json!({ "keys": keys })))
        .mount(server)
        .await;
}

/// An issuer whose JWKS holds `keys`.
async fn issuer(keys: &[Value]) -> MockServer {
    let server = MockServer::start().await;
    mount_discovery(&server).await;
    mount_jwks(&server, keys).await;
    server
}

fn settings(server: &MockServer) -> OidcSettings {
    OidcSettings {
        http_timeout: Duration::from_secs(5),
        ..OidcSettings::new(server.uri(), AUDIENCE)
    }
}

fn verifier(server: &MockServer) -> OidcVerifier {
    OidcVerifier::new(settings(server)).expect("settings are valid")
}

async fn requests_to(server: &MockServer, p: &str) -> usize {
    server
        .received_requests()
        .await
        .expect("wiremock records requests")
        .iter()
        .filter(|r| r.url.path() == p)
        .count()
}

/// Verifies `token` at [`NOW`], expects a failure and checks that the error
/// never shows the token.
async fn refused(verifier: &OidcVerifier, token: &str) -> OidcError {
    let err = verifier
        .verify_at(token, NOW)
        .await
        .expect_err("the token is refused");
    let shown = format!("{err} {err:?}");
    for part in token.split('.').filter(|p| p.len() > 8) {
        assert!(!shown.contains(part), "the error shows the token: {shown}");
    }
    err
}

// ---------------------------------------------------------------------------
// Valid tokens

#[tokio::test]
async fn a_github_actions_token_verifies_and_its_claims_decode() {
    let server = issuer(&[jwk(KEY_1, KID_1)]).await;
    let verifier = verifier(&server);
    let token = sign(KEY_1, KID_1, &github_claims(&server.uri()));
    let claims = verifier.verify_at(&token, NOW).await.expect("valid token");
    let expected = ActionsClaims {
        iss: server.uri(),
        aud: vec![AUDIENCE.to_owned()],
        sub: "repo:octo-org/octo-repo:environment:prod".into(),
        exp: NOW + 300,
        nbf: Some(NOW - 600),
        iat: NOW,
        repository: "octo-org/octo-repo".into(),
        repository_id: "74".into(),
        repository_owner: Some("octo-org".into()),
        repository_owner_id: Some("65".into()),
        workflow_ref: Some("octo-org/octo-repo/.github/workflows/bench.yml@refs/heads/main".into()),
        job_workflow_ref: Some(
            "octo-org/octo-repo/.github/workflows/bench.yml@refs/heads/main".into(),
        ),
        event_name: Some("schedule".into()),
        environment: Some("prod".into()),
        ref_: Some("refs/heads/main".into()),
        run_id: Some("6123456789".into()),
        run_attempt: Some("2".into()),
        actor: Some("octocat".into()),
        jti: Some("6d3d3a3e-3b1c-4c55-9f1e-8b8f7a2c1d00".into()),
    };
    assert_eq!(claims, expected);
    let serialized = serde_json::to_value(&claims).expect("claims serialize");
    assert_eq!(serialized["ref"], "refs/heads/main");

    // The keys are cached: a second token fetches nothing.
    verifier
        .verify_at(&token, NOW + 30)
        .await
        .expect("still valid");
    assert_eq!(requests_to(&server, DISCOVERY).await, 1);
    assert_eq!(requests_to(&server, JWKS).await, 1);
}

#[tokio::test]
async fn aud_may_be_an_array_ids_may_be_numbers_and_optional_claims_absent() {
    let server = issuer(&[jwk(KEY_1, KID_1)]).await;
    let verifier = verifier(&server);
    let minimal = json!({
        "iss": server.uri(),
        "aud": ["https://github.com/octo-org", AUDIENCE],
        "sub": "repo:octo-org/octo-repo:ref:refs/heads/main",
        "exp": NOW + 300,
        "iat": NOW,
        "repository": "octo-org/octo-repo",
        "repository_id": 74,
        "run_id": 6_123_456_789_u64,
    });
    let claims = verifier
        .verify_at(&sign(KEY_1, KID_1, &minimal), NOW)
        .await
        .expect("valid token");
    assert_eq!(claims.aud, ["https://github.com/octo-org", AUDIENCE]);
    assert_eq!(claims.repository_id, "74");
    assert_eq!(claims.run_id.as_deref(), Some("6123456789"));
    assert_eq!(
        (claims.nbf, claims.environment, claims.ref_),
        (None, None, None)
    );
}

#[tokio::test]
async fn verify_uses_the_system_clock() {
    let server = issuer(&[jwk(KEY_1, KID_1)]).await;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("after the epoch")
        .as_secs();
    let claims = with(github_claims(&server.uri()), "iat", json!(now));
    let claims = with(claims, "nbf", json!(now - 600));
    let fresh = with(claims.clone(), "exp", json!(now + 300));
    let stale = with(claims, "exp", json!(now - 300));
    let verifier = verifier(&server);
    verifier
        .verify(&sign(KEY_1, KID_1, &fresh))
        .await
        .expect("valid now");
    let err = verifier
        .verify(&sign(KEY_1, KID_1, &stale))
        .await
        .expect_err("expired now");
    assert_eq!(err.reason_code(), "expired");
}

// ---------------------------------------------------------------------------
// Claims refused

#[tokio::test]
async fn the_issuer_must_match_exactly() {
    let server = issuer(&[jwk(KEY_1, KID_1)]).await;
    let verifier = verifier(&server);
    for iss in [
        "https://token.actions.githubusercontent.com".to_owned(),
        format!("{}/", server.uri()),
        server.uri().to_uppercase(),
    ] {
        let token = sign(
            KEY_1,
            KID_1,
            &with(github_claims(&server.uri()), "iss", json!(iss)),
        );
        let err = refused(&verifier, &token).await;
        assert_eq!(err.reason_code(), "wrong-issuer", "{iss}");
        assert!(matches!(err, OidcError::WrongIssuer { ref found, .. } if *found == iss));
    }
}

#[tokio::test]
async fn the_audience_must_be_ours() {
    let server = issuer(&[jwk(KEY_1, KID_1)]).await;
    let verifier = verifier(&server);
    for aud in [
        json!("https://github.com/octo-org"),
        json!(["https://github.com/octo-org", "benchops-staging"]),
        json!([]),
        json!("BENCHOPS"),
    ] {
        let token = sign(
            KEY_1,
            KID_1,
            &with(github_claims(&server.uri()), "aud", aud.clone()),
        );
        let err = refused(&verifier, &token).await;
        assert_eq!(err.reason_code(), "wrong-audience", "{aud}");
    }
}

#[tokio::test]
async fn expiry_not_before_and_issued_at_are_checked_with_the_leeway() {
    let server = issuer(&[jwk(KEY_1, KID_1)]).await;
    let verifier = verifier(&server); // leeway 60 s
    let base = github_claims(&server.uri());
    let cases = [
        ("exp", json!(NOW - 61), Some("expired")),
        ("exp", json!(NOW - 60), Some("expired")),
        ("exp", json!(NOW - 59), None),
        ("nbf", json!(NOW + 61), Some("not-yet-valid")),
        ("nbf", json!(NOW + 60), None),
        ("iat", json!(NOW + 61), Some("issued-in-future")),
        ("iat", json!(NOW + 60), None),
    ];
    for (claim, value, code) in cases {
        let token = sign(KEY_1, KID_1, &with(base.clone(), claim, value.clone()));
        match code {
            Some(code) => assert_eq!(
                refused(&verifier, &token).await.reason_code(),
                code,
                "{claim} = {value}"
            ),
            None => {
                verifier
                    .verify_at(&token, NOW)
                    .await
                    .unwrap_or_else(|e| panic!("{claim} = {value} is within the leeway: {e}"));
            }
        }
    }

    let strict = OidcVerifier::new(OidcSettings {
        leeway: Duration::ZERO,
        ..settings(&server)
    })
    .expect("settings are valid");
    let token = sign(KEY_1, KID_1, &with(base, "iat", json!(NOW + 1)));
    assert_eq!(
        refused(&strict, &token).await.reason_code(),
        "issued-in-future"
    );
}

#[tokio::test]
async fn a_missing_required_claim_is_named() {
    let server = issuer(&[jwk(KEY_1, KID_1)]).await;
    let verifier = verifier(&server);
    for claim in [
        "iss",
        "aud",
        "sub",
        "exp",
        "iat",
        "repository",
        "repository_id",
    ] {
        let token = sign(KEY_1, KID_1, &without(github_claims(&server.uri()), claim));
        let err = refused(&verifier, &token).await;
        assert_eq!(err.reason_code(), "missing-claim", "{claim}");
        assert!(matches!(err, OidcError::MissingClaim { claim: c } if c == claim));
    }
    let token = sign(
        KEY_1,
        KID_1,
        &with(github_claims(&server.uri()), "repository_id", Value::Null),
    );
    assert_eq!(
        refused(&verifier, &token).await.reason_code(),
        "missing-claim"
    );
    // Present but of the wrong type.
    let token = sign(
        KEY_1,
        KID_1,
        &with(github_claims(&server.uri()), "exp", json!("soon")),
    );
    assert_eq!(
        refused(&verifier, &token).await.reason_code(),
        "malformed-token"
    );
}

// ---------------------------------------------------------------------------
// Signatures and algorithms refused

#[tokio::test]
async fn only_rs256_is_accepted_and_the_rest_is_refused_before_any_fetch() {
    let server = issuer(&[jwk(KEY_1, KID_1)]).await;
    let verifier = verifier(&server);
    let claims = github_claims(&server.uri());
    let public_pem = include_bytes!("../fixtures/test-app-key.pub.pem");
    let rsa = EncodingKey::from_rsa_pem(KEY_1).expect("fixture key parses");
    let tokens = [
        unsigned(&json!({"alg": "none", "kid": KID_1}), &claims),
        unsigned(&json!({"alg": "None", "kid": KID_1}), &claims),
        // The public key as an HMAC secret: the classic confusion attack.
        sign_with(
            Algorithm::HS256,
            &EncodingKey::from_secret(public_pem),
            Some(KID_1),
            &claims,
        ),
        sign_with(
            Algorithm::HS512,
            &EncodingKey::from_secret(b"secret"),
            Some(KID_1),
            &claims,
        ),
        sign_with(Algorithm::RS512, &rsa, Some(KID_1), &claims),
        sign_with(Algorithm::PS256, &rsa, Some(KID_1), &claims),
    ];
    for token in &tokens {
        let err = refused(&verifier, token).await;
        assert_eq!(err.reason_code(), "unsupported-algorithm", "{err}");
    }
    assert_eq!(requests_to(&server, JWKS).await, 0);
}

#[tokio::test]
async fn a_signature_by_another_key_under_a_known_kid_is_refused() {
    let server = issuer(&[jwk(KEY_1, KID_1)]).await;
    let verifier = verifier(&server);
    let claims = github_claims(&server.uri());
    let forged = sign(KEY_2, KID_1, &claims);
    assert_eq!(
        refused(&verifier, &forged).await.reason_code(),
        "bad-signature"
    );

    // A genuine token with its claims swapped for others.
    let genuine = sign(KEY_1, KID_1, &claims);
    let other = sign(
        KEY_1,
        KID_1,
        &with(claims, "repository", json!("evil/repo")),
    );
    let g: Vec<&str> = genuine.split('.').collect();
    let o: Vec<&str> = other.split('.').collect();
    let spliced = format!("{}.{}.{}", g[0], o[1], g[2]);
    assert_eq!(
        refused(&verifier, &spliced).await.reason_code(),
        "bad-signature"
    );
    let stripped = format!("{}.{}.", g[0], g[1]);
    assert_eq!(
        refused(&verifier, &stripped).await.reason_code(),
        "bad-signature"
    );
}

#[tokio::test]
async fn malformed_tokens_are_refused() {
    let server = issuer(&[jwk(KEY_1, KID_1)]).await;
    let verifier = verifier(&server);
    let claims = github_claims(&server.uri());
    let genuine = sign(KEY_1, KID_1, &claims);
    let rsa = EncodingKey::from_rsa_pem(KEY_1).expect("fixture key parses");
    let tokens = [
        String::new(),
        "not-a-token".to_owned(),
        "a.b".to_owned(),
        format!("{genuine}.extra"),
        format!("!!!.{}", genuine.split_once('.').expect("dots").1),
        format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode("not json"),
            genuine.split_once('.').expect("dots").1
        ),
        sign_with(Algorithm::RS256, &rsa, None, &claims),
        sign_with(Algorithm::RS256, &rsa, Some(""), &claims),
        unsigned(
            &json!({"alg": "RS256", "kid": KID_1, "crit": ["exp"]}),
            &claims,
        ),
        format!("{}{}", genuine, "A".repeat(16 * 1024)),
    ];
    for token in &tokens {
        let err = refused(&verifier, token).await;
        assert_eq!(err.reason_code(), "malformed-token", "{err}");
    }
}

// ---------------------------------------------------------------------------
// Keys: cache, rotation, rate-limited refresh

#[tokio::test]
async fn an_unknown_kid_refetches_the_rotated_jwks_once_discovered() {
    let server = MockServer::start().await;
    mount_discovery(&server).await;
    // The first JWKS holds key 1 only; every later one has rotated to key 2.
    Mock::given(method("GET"))
        .and(path(JWKS))
        .respond_with(
            ResponseTemplate::new(200).set_body_json(json!({"keys": [jwk(KEY_1, KID_1)]})),
        )
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mount_jwks(&server, &[jwk(KEY_2, KID_2)]).await;
    let verifier = OidcVerifier::new(OidcSettings {
        min_refresh_interval: Duration::ZERO,
        ..settings(&server)
    })
    .expect("settings are valid");
    let claims = github_claims(&server.uri());
    let old = sign(KEY_1, KID_1, &claims);
    let new = sign(KEY_2, KID_2, &claims);

    verifier.verify_at(&old, NOW).await.expect("key 1 verifies");
    verifier
        .verify_at(&new, NOW)
        .await
        .expect("key 2 after a refetch");
    assert_eq!(requests_to(&server, JWKS).await, 2);
    // Discovery is done once; the rotated set replaced the old one.
    assert_eq!(requests_to(&server, DISCOVERY).await, 1);
    let err = refused(&verifier, &old).await;
    assert_eq!(err.reason_code(), "unknown-key");
    assert!(matches!(err, OidcError::UnknownKey { ref kid } if kid == KID_1));
    assert_eq!(requests_to(&server, JWKS).await, 3);
    assert_eq!(requests_to(&server, DISCOVERY).await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn unknown_kids_refetch_at_most_once_per_interval() {
    let server = issuer(&[jwk(KEY_1, KID_1)]).await;
    let verifier = OidcVerifier::new(OidcSettings {
        min_refresh_interval: Duration::from_millis(1500),
        ..settings(&server)
    })
    .expect("settings are valid");
    let claims = github_claims(&server.uri());
    let unknown = sign(KEY_2, "rotated-later", &claims);

    // Concurrent callers share the one fetch of the empty cache.
    let calls: Vec<_> = (0..8)
        .map(|_| {
            let verifier = verifier.clone();
            let token = unknown.clone();
            tokio::spawn(async move { verifier.verify_at(&token, NOW).await })
        })
        .collect();
    for call in calls {
        let err = call
            .await
            .expect("the task finishes")
            .expect_err("the kid is unknown");
        assert_eq!(err.reason_code(), "unknown-key");
    }
    assert_eq!(requests_to(&server, JWKS).await, 1);

    // Within the interval: no refetch, and known keys still verify.
    assert_eq!(
        refused(&verifier, &unknown).await.reason_code(),
        "unknown-key"
    );
    verifier
        .verify_at(&sign(KEY_1, KID_1, &claims), NOW)
        .await
        .expect("the known key verifies");
    assert_eq!(requests_to(&server, JWKS).await, 1);

    // After the interval, the next unknown kid refetches once more.
    tokio::time::sleep(Duration::from_millis(1600)).await;
    assert_eq!(
        refused(&verifier, &unknown).await.reason_code(),
        "unknown-key"
    );
    assert_eq!(
        refused(&verifier, &unknown).await.reason_code(),
        "unknown-key"
    );
    assert_eq!(requests_to(&server, JWKS).await, 2);
    assert_eq!(requests_to(&server, DISCOVERY).await, 1);
}

#[tokio::test]
async fn the_default_interval_allows_one_refetch_a_minute() {
    let server = issuer(&[jwk(KEY_1, KID_1)]).await;
    let settings = settings(&server);
    assert_eq!(settings.min_refresh_interval, Duration::from_secs(60));
    assert_eq!(settings.leeway, Duration::from_secs(60));
    let verifier = OidcVerifier::new(settings).expect("settings are valid");
    let claims = github_claims(&server.uri());
    for kid in ["a", "b", "c"] {
        let token = sign(KEY_2, kid, &claims);
        assert_eq!(
            refused(&verifier, &token).await.reason_code(),
            "unknown-key"
        );
    }
    assert_eq!(requests_to(&server, JWKS).await, 1);
}

// ---------------------------------------------------------------------------
// The issuer unavailable or wrong

async fn unavailable(server: &MockServer) -> OidcError {
    let verifier = OidcVerifier::new(OidcSettings {
        http_timeout: Duration::from_secs(1),
        ..settings(server)
    })
    .expect("settings are valid");
    refused(
        &verifier,
        &sign(KEY_1, KID_1, &github_claims(&server.uri())),
    )
    .await
}

#[tokio::test]
async fn a_jwks_endpoint_that_is_down_is_jwks_unavailable() {
    let server = MockServer::start().await;
    mount_discovery(&server).await;
    Mock::given(method("GET"))
        .and(path(JWKS))
        .respond_with(ResponseTemplate::new(503))
        .mount(&server)
        .await;
    let err = unavailable(&server).await;
    assert_eq!(err.reason_code(), "jwks-unavailable");
    assert!(err.to_string().contains("503"), "{err}");
}

/// The discovery document of an issuer, given its URI.
type DocFor = fn(&str) -> Value;

/// An issuer whose discovery document is `doc(issuer)` and whose JWKS
/// endpoint answers `jwks`.
async fn odd_issuer(doc: DocFor, jwks: ResponseTemplate) -> MockServer {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(DISCOVERY))
        .respond_with(ResponseTemplate::new(200).set_body_json(doc(&server.uri())))
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(JWKS))
        .respond_with(jwks)
        .mount(&server)
        .await;
    server
}

fn good_doc(issuer: &str) -> Value {
    json!({"issuer": issuer, "jwks_uri": format!("{issuer}{JWKS}")})
}

fn good_jwks() -> ResponseTemplate {
    ResponseTemplate::new(200).set_body_json(json!({"keys": [jwk(KEY_1, KID_1)]}))
}

#[tokio::test]
async fn bad_discovery_or_jwks_responses_are_jwks_unavailable() {
    // No discovery document at all.
    let server = MockServer::start().await;
    assert_eq!(unavailable(&server).await.reason_code(), "jwks-unavailable");

    let padded = json!({"keys": [jwk(KEY_1, KID_1)], "pad": "x".repeat(MAX_DOCUMENT_BYTES)});
    let no_rsa = json!({"keys": [{"kty": "EC", "kid": "k", "crv": "P-256", "x": "AA", "y": "AA"}]});
    let cases: [(&str, DocFor, ResponseTemplate); 8] = [
        (
            "a document naming another issuer",
            |_| good_doc("https://token.actions.githubusercontent.com"),
            good_jwks(),
        ),
        (
            "a document without an issuer",
            |issuer| json!({"jwks_uri": format!("{issuer}{JWKS}")}),
            good_jwks(),
        ),
        (
            "a document without jwks_uri",
            |issuer| json!({"issuer": issuer}),
            good_jwks(),
        ),
        (
            "a jwks_uri that is not http(s)",
            |issuer| json!({"issuer": issuer, "jwks_uri": "file:///etc/jwks.json"}),
            good_jwks(),
        ),
        (
            "a JWKS that is not JSON",
            good_doc,
            ResponseTemplate::new(200).set_body_string("<html>"),
        ),
        (
            "a JWKS without RSA keys",
            good_doc,
            ResponseTemplate::new(200).set_body_json(no_rsa),
        ),
        (
            "a JWKS over the size limit",
            good_doc,
            ResponseTemplate::new(200).set_body_json(padded),
        ),
        (
            "a JWKS slower than the timeout",
            good_doc,
            good_jwks().set_delay(Duration::from_secs(4)),
        ),
    ];
    // Each failure says what went wrong, and where.
    let says = [
        "names the issuer \"https://token.actions.githubusercontent.com\"",
        "has no issuer",
        "has no jwks_uri",
        "the jwks_uri \"file:///etc/jwks.json\" is not a URL: ",
        "/.well-known/jwks: not the expected JSON: ",
        "/.well-known/jwks holds no RSA signing key",
        "/.well-known/jwks: read the body: ",
        "/.well-known/jwks: no answer within 1s",
    ];
    for ((what, doc, jwks), says) in cases.into_iter().zip(says) {
        let server = odd_issuer(doc, jwks).await;
        let err = unavailable(&server).await;
        assert_eq!(err.reason_code(), "jwks-unavailable", "{what}: {err}");
        assert!(err.to_string().contains(says), "{what}: {err}");
    }
}

#[tokio::test]
async fn cached_keys_outlive_an_outage_and_the_jwks_recovers() {
    let server = MockServer::start().await;
    mount_discovery(&server).await;
    let keys = json!({"keys": [jwk(KEY_1, KID_1)]});
    // Up, then down twice, then up with key 2 as well.
    Mock::given(method("GET"))
        .and(path(JWKS))
        .respond_with(ResponseTemplate::new(200).set_body_json(keys))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    Mock::given(method("GET"))
        .and(path(JWKS))
        .respond_with(ResponseTemplate::new(500))
        .up_to_n_times(2)
        .with_priority(2)
        .mount(&server)
        .await;
    mount_jwks(&server, &[jwk(KEY_1, KID_1), jwk(KEY_2, KID_2)]).await;
    let verifier = OidcVerifier::new(OidcSettings {
        min_refresh_interval: Duration::ZERO,
        ..settings(&server)
    })
    .expect("settings are valid");
    let claims = github_claims(&server.uri());
    let old = sign(KEY_1, KID_1, &claims);
    let new = sign(KEY_2, KID_2, &claims);

    verifier.verify_at(&old, NOW).await.expect("key 1 verifies");
    for _ in 0..2 {
        let err = refused(&verifier, &new).await;
        assert_eq!(err.reason_code(), "jwks-unavailable");
        verifier
            .verify_at(&old, NOW)
            .await
            .expect("the cached key still verifies");
    }
    verifier
        .verify_at(&new, NOW)
        .await
        .expect("the JWKS is back");
    assert_eq!(requests_to(&server, JWKS).await, 4);
    assert_eq!(requests_to(&server, DISCOVERY).await, 1);
}

#[tokio::test]
async fn a_failed_discovery_is_retried_by_the_next_refresh() {
    let server = MockServer::start().await;
    Mock::given(method("GET"))
        .and(path(DISCOVERY))
        .respond_with(ResponseTemplate::new(502))
        .up_to_n_times(1)
        .with_priority(1)
        .mount(&server)
        .await;
    mount_discovery(&server).await;
    mount_jwks(&server, &[jwk(KEY_1, KID_1)]).await;
    let verifier = OidcVerifier::new(OidcSettings {
        min_refresh_interval: Duration::ZERO,
        ..settings(&server)
    })
    .expect("settings are valid");
    let token = sign(KEY_1, KID_1, &github_claims(&server.uri()));
    assert_eq!(
        refused(&verifier, &token).await.reason_code(),
        "jwks-unavailable"
    );
    verifier
        .verify_at(&token, NOW)
        .await
        .expect("discovery succeeds now");
    assert_eq!(requests_to(&server, DISCOVERY).await, 2);
}

// ---------------------------------------------------------------------------
// The API's shape

#[test]
fn reason_codes_are_stable() {
    let codes = [
        (
            OidcError::Malformed {
                reason: String::new(),
            },
            "malformed-token",
        ),
        (
            OidcError::UnsupportedAlgorithm { alg: "none".into() },
            "unsupported-algorithm",
        ),
        (OidcError::UnknownKey { kid: "k".into() }, "unknown-key"),
        (OidcError::BadSignature, "bad-signature"),
        (
            OidcError::WrongIssuer {
                expected: String::new(),
                found: String::new(),
            },
            "wrong-issuer",
        ),
        (
            OidcError::WrongAudience {
                expected: String::new(),
                found: Vec::new(),
            },
            "wrong-audience",
        ),
        (OidcError::Expired { exp: 0, now: 0 }, "expired"),
        (OidcError::NotYetValid { nbf: 0, now: 0 }, "not-yet-valid"),
        (
            OidcError::IssuedInFuture { iat: 0, now: 0 },
            "issued-in-future",
        ),
        (OidcError::MissingClaim { claim: "sub" }, "missing-claim"),
        (
            OidcError::JwksUnavailable {
                reason: std::sync::Arc::new(JwksError::NoIssuer { url: String::new() }),
            },
            "jwks-unavailable",
        ),
        (
            OidcError::Config {
                reason: String::new(),
            },
            "config",
        ),
    ];
    for (err, code) in codes {
        assert_eq!(err.reason_code(), code, "{err:?}");
    }
}

#[test]
fn the_verifier_is_shareable_and_its_debug_shows_the_settings() {
    fn shareable<T: Clone + Send + Sync + 'static>() {}
    shareable::<OidcVerifier>();
    let verifier = OidcVerifier::new(OidcSettings::github_actions(AUDIENCE)).expect("valid");
    let shown = format!("{verifier:?}");
    assert!(
        shown.contains("https://token.actions.githubusercontent.com") && shown.contains(AUDIENCE),
        "{shown}"
    );
    let settings = verifier.settings();
    assert_eq!(settings.issuer, benchops_github::GITHUB_ACTIONS_ISSUER);
}

#[tokio::test]
async fn the_verification_future_is_send() {
    fn send<T: Send>(_: &T) {}
    let verifier = OidcVerifier::new(OidcSettings::github_actions(AUDIENCE)).expect("valid");
    let future = verifier.verify("x.y.z");
    send(&future);
    assert_eq!(
        future.await.expect_err("malformed").reason_code(),
        "malformed-token"
    );
}
