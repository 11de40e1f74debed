//! App JWTs (RS256) and installation-token permissions.
//!
//! `jsonwebtoken` is reserved for `benchops-github` (an architecture
//! invariant), so the simulator checks RS256 signatures with `rsa` directly.
//! The key pair under `crates/testkit/keys/` is a throwaway test key.

use std::collections::BTreeMap;
use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use rsa::pkcs1::DecodeRsaPrivateKey as _;
use rsa::pkcs1v15::{Signature, SigningKey, VerifyingKey};
use rsa::pkcs8::{DecodePrivateKey as _, DecodePublicKey as _};
use rsa::signature::{SignatureEncoding as _, Signer as _, Verifier as _};
use rsa::{RsaPrivateKey, RsaPublicKey};
use serde_json::{Value, json};
use sha2::Sha256;

/// The simulated App's private key (PKCS#1 PEM, the format GitHub hands
/// out). A throwaway test key: see `crates/testkit/keys/README.md`.
pub const TEST_APP_PRIVATE_KEY_PEM: &str = include_str!("../../keys/test-app.private-key.pem");

/// The public half of [`TEST_APP_PRIVATE_KEY_PEM`], which the simulator
/// verifies App JWTs against.
pub const TEST_APP_PUBLIC_KEY_PEM: &str = include_str!("../../keys/test-app.public-key.pem");

/// An unrelated private key (PKCS#8 PEM): JWTs signed with it must fail.
pub const OTHER_PRIVATE_KEY_PEM: &str = include_str!("../../keys/other.private-key.pem");

/// Parses an RSA private key from PKCS#1 or PKCS#8 PEM.
///
/// # Panics
/// When the PEM is not an RSA private key (test keys only).
pub fn private_key(pem: &str) -> RsaPrivateKey {
    RsaPrivateKey::from_pkcs1_pem(pem)
        .or_else(|_| RsaPrivateKey::from_pkcs8_pem(pem))
        .expect("test private key is RSA PEM (PKCS#1 or PKCS#8)")
}

/// The simulator's verifying key.
///
/// # Panics
/// When the bundled public key does not parse (a build defect).
pub fn test_public_key() -> RsaPublicKey {
    RsaPublicKey::from_public_key_pem(TEST_APP_PUBLIC_KEY_PEM)
        .expect("bundled test public key is SPKI PEM")
}

/// Signs arbitrary claims as an RS256 JWT with the given private key.
pub fn sign_jwt(private_key_pem: &str, claims: &Value) -> String {
    let header = URL_SAFE_NO_PAD.encode(br#"{"alg":"RS256","typ":"JWT"}"#);
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signing_input = format!("{header}.{payload}");
    let key = SigningKey::<Sha256>::new(private_key(private_key_pem));
    let signature = key.sign(signing_input.as_bytes()).to_bytes();
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// Signs claims as an RS256 JWT whose header names the key `kid` (how an
/// OIDC issuer signs ID tokens).
pub fn sign_jwt_with_kid(private_key_pem: &str, kid: &str, claims: &Value) -> String {
    let header =
        URL_SAFE_NO_PAD.encode(json!({ "alg": "RS256", "typ": "JWT", "kid": kid }).to_string());
    let payload = URL_SAFE_NO_PAD.encode(claims.to_string());
    let signing_input = format!("{header}.{payload}");
    let key = SigningKey::<Sha256>::new(private_key(private_key_pem));
    let signature = key.sign(signing_input.as_bytes()).to_bytes();
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(signature))
}

/// The public JWK (RFC 7517) of a private key, named `kid`: what an OIDC
/// issuer lists in its JWKS.
pub fn public_jwk(private_key_pem: &str, kid: &str) -> Value {
    use rsa::traits::PublicKeyParts as _;
    let public = RsaPublicKey::from(&private_key(private_key_pem));
    json!({
        "kty": "RSA",
        "alg": "RS256",
        "use": "sig",
        "kid": kid,
        "n": URL_SAFE_NO_PAD.encode(public.n().to_bytes_be()),
        "e": URL_SAFE_NO_PAD.encode(public.e().to_bytes_be()),
    })
}

/// An App JWT for `app_id` signed with the test key, the way GitHub
/// documents it: `iss` the App id, `iat` and `exp` in Unix seconds.
pub fn app_jwt(app_id: u64, iat: i64, exp: i64) -> String {
    sign_jwt(
        TEST_APP_PRIVATE_KEY_PEM,
        &json!({ "iat": iat, "exp": exp, "iss": app_id.to_string() }),
    )
}

/// Why an App JWT was refused (each is a 401).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JwtError {
    /// Not three base64url parts, not JSON, not RS256, or a bad signature.
    Undecodable,
    /// `exp` is missing or not after now.
    Expired,
    /// `exp` is more than 10 minutes ahead of now (or of `iat` plus 60 s).
    ExpTooFar,
    /// `iat` is missing or more than 60 s in the future.
    BadIssuedAt,
    /// `iss` is not this App's id.
    WrongIssuer,
}

impl JwtError {
    /// The message GitHub sends for this failure.
    pub fn message(self) -> &'static str {
        match self {
            JwtError::Undecodable => "A JSON web token could not be decoded",
            JwtError::Expired => {
                "'Expiration time' claim ('exp') must be a numeric value representing the future time at which the assertion expires"
            }
            JwtError::ExpTooFar => "'Expiration time' claim ('exp') is too far in the future",
            JwtError::BadIssuedAt => {
                "'Issued at' claim ('iat') must be an Integer representing the time that the assertion was issued"
            }
            JwtError::WrongIssuer => "Integration not found",
        }
    }
}

impl fmt::Display for JwtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

/// Allowed clock drift for `iat` in the future, in seconds.
pub const IAT_SKEW: i64 = 60;
/// Longest JWT lifetime GitHub accepts, in seconds.
pub const MAX_JWT_LIFETIME: i64 = 600;

/// Verifies an RS256 App JWT against `key` at time `now` for `app_id`.
pub fn verify_app_jwt(
    key: &RsaPublicKey,
    token: &str,
    now: i64,
    app_id: u64,
) -> Result<(), JwtError> {
    let mut parts = token.split('.');
    let (Some(h), Some(p), Some(s), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtError::Undecodable);
    };
    let decode = |part: &str| {
        URL_SAFE_NO_PAD
            .decode(part)
            .map_err(|_| JwtError::Undecodable)
    };
    let header: Value = serde_json::from_slice(&decode(h)?).map_err(|_| JwtError::Undecodable)?;
    if header["alg"] != "RS256" {
        return Err(JwtError::Undecodable);
    }
    let signature =
        Signature::try_from(decode(s)?.as_slice()).map_err(|_| JwtError::Undecodable)?;
    VerifyingKey::<Sha256>::new(key.clone())
        .verify(format!("{h}.{p}").as_bytes(), &signature)
        .map_err(|_| JwtError::Undecodable)?;
    let claims: Value = serde_json::from_slice(&decode(p)?).map_err(|_| JwtError::Undecodable)?;
    let iat = claims["iat"].as_i64().ok_or(JwtError::BadIssuedAt)?;
    let exp = claims["exp"].as_i64().ok_or(JwtError::Expired)?;
    let iss_ok = match &claims["iss"] {
        Value::String(s) => s.parse::<u64>().ok() == Some(app_id),
        Value::Number(n) => n.as_u64() == Some(app_id),
        _ => false,
    };
    if !iss_ok {
        return Err(JwtError::WrongIssuer);
    }
    if iat > now + IAT_SKEW {
        return Err(JwtError::BadIssuedAt);
    }
    if exp <= now {
        return Err(JwtError::Expired);
    }
    if exp > now + MAX_JWT_LIFETIME || exp - iat > MAX_JWT_LIFETIME + IAT_SKEW {
        return Err(JwtError::ExpTooFar);
    }
    Ok(())
}

/// An installation permission level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Access {
    /// `read`.
    Read,
    /// `write` (implies read).
    Write,
}

impl Access {
    /// Parses `read` or `write`.
    pub fn parse(s: &str) -> Option<Access> {
        match s {
            "read" => Some(Access::Read),
            "write" => Some(Access::Write),
            _ => None,
        }
    }

    /// `read` or `write`.
    pub fn as_str(self) -> &'static str {
        match self {
            Access::Read => "read",
            Access::Write => "write",
        }
    }
}

/// Permission name (`contents`, `issues`, `metadata`, ...) to level.
pub type Permissions = BTreeMap<String, Access>;

/// Permissions as the API writes them.
pub fn permissions_json(p: &Permissions) -> Value {
    Value::Object(
        p.iter()
            .map(|(k, v)| (k.clone(), Value::String(v.as_str().to_owned())))
            .collect(),
    )
}

/// Builds a permission map from `(name, "read"|"write")` pairs.
///
/// # Panics
/// On a level other than `read` or `write` (a test typo).
pub fn permissions(pairs: &[(&str, &str)]) -> Permissions {
    pairs
        .iter()
        .map(|(k, v)| {
            (
                (*k).to_owned(),
                Access::parse(v).expect("permission level is read or write"),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_793_700_000;

    #[test]
    fn valid_jwt_verifies() {
        let key = test_public_key();
        let jwt = app_jwt(7, NOW - 60, NOW + 540);
        assert_eq!(verify_app_jwt(&key, &jwt, NOW, 7), Ok(()));
        // An integer `iss` is accepted too.
        let jwt = sign_jwt(
            TEST_APP_PRIVATE_KEY_PEM,
            &json!({"iat": NOW - 60, "exp": NOW + 600, "iss": 7}),
        );
        assert_eq!(verify_app_jwt(&key, &jwt, NOW, 7), Ok(()));
    }

    #[test]
    fn each_bad_jwt_has_its_reason() {
        let key = test_public_key();
        let other = sign_jwt(
            OTHER_PRIVATE_KEY_PEM,
            &json!({"iat": NOW - 60, "exp": NOW + 540, "iss": "7"}),
        );
        assert_eq!(
            verify_app_jwt(&key, &other, NOW, 7),
            Err(JwtError::Undecodable)
        );
        assert_eq!(
            verify_app_jwt(&key, "a.b", NOW, 7),
            Err(JwtError::Undecodable)
        );
        let cases = [
            (app_jwt(7, NOW - 700, NOW - 100), JwtError::Expired),
            (app_jwt(7, NOW, NOW + 900), JwtError::ExpTooFar),
            (app_jwt(7, NOW + 300, NOW + 500), JwtError::BadIssuedAt),
            (app_jwt(8, NOW - 60, NOW + 540), JwtError::WrongIssuer),
        ];
        for (jwt, want) in cases {
            assert_eq!(verify_app_jwt(&key, &jwt, NOW, 7), Err(want));
        }
        // A tampered payload breaks the signature.
        let good = app_jwt(7, NOW - 60, NOW + 540);
        let mut parts: Vec<&str> = good.split('.').collect();
        let forged = URL_SAFE_NO_PAD.encode(r#"{"iat":1,"exp":99999999999,"iss":"7"}"#);
        parts[1] = &forged;
        assert_eq!(
            verify_app_jwt(&key, &parts.join("."), NOW, 7),
            Err(JwtError::Undecodable)
        );
    }
}
