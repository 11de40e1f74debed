//! Credentials as data: the App id and its RSA key, the App JWT claims, and
//! the [`Phase`] an installation token is minted for, with the permissions
//! each phase asks for.
//!
//! This module depends on no other module of the crate, so any of them
//! (the client, the App endpoints, the error type) can name these types
//! without an import cycle. The App JWT is RS256, `iss` = the App id, `iat`
//! [`JWT_BACKDATE`] in the past (GitHub's advice against clock drift) and
//! `exp` [`JWT_LIFETIME`] ahead (GitHub allows at most 600 s).
//!
//! The fallible entry points that report a `GitHubError` (reading the key
//! from PEM, signing a JWT into a `Token`) are defined next to the client,
//! which signs a fresh JWT for every request it sends as the App.

use std::collections::BTreeMap;
use std::fmt;
use std::time::{Duration, SystemTime};

use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde::{Deserialize, Serialize};

/// How far `iat` is set in the past.
pub const JWT_BACKDATE: Duration = Duration::from_secs(60);
/// How far `exp` is set in the future (GitHub's maximum is 600 s).
pub const JWT_LIFETIME: Duration = Duration::from_secs(540);

/// A GitHub App's numeric id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(transparent)]
pub struct AppId(u64);

impl AppId {
    /// Wraps an App id.
    pub const fn new(id: u64) -> Self {
        AppId(id)
    }

    /// The number.
    pub const fn get(self) -> u64 {
        self.0
    }
}

impl fmt::Display for AppId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// The claims of an App JWT.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JwtClaims {
    /// Issued at, Unix seconds: now minus [`JWT_BACKDATE`].
    pub iat: u64,
    /// Expires at, Unix seconds: now plus [`JWT_LIFETIME`].
    pub exp: u64,
    /// The App id, as a decimal string.
    pub iss: String,
}

impl JwtClaims {
    /// The claims for `app_id` at wall-clock time `now`.
    pub fn new(app_id: AppId, now: SystemTime) -> Self {
        // Seconds since the Unix epoch (0 before 1970).
        let now = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        JwtClaims {
            iat: now.saturating_sub(JWT_BACKDATE.as_secs()),
            exp: now + JWT_LIFETIME.as_secs(),
            iss: app_id.to_string(),
        }
    }
}

/// A GitHub App's id and RSA private key.
pub struct AppKey {
    app_id: AppId,
    key: EncodingKey,
}

impl fmt::Debug for AppKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AppKey")
            .field("app_id", &self.app_id)
            .field("key", &"***")
            .finish()
    }
}

impl AppKey {
    /// Reads an RSA private key in PEM (PKCS#1 or PKCS#8).
    pub(crate) fn parse_rsa_pem(
        app_id: AppId,
        pem: &[u8],
    ) -> Result<Self, jsonwebtoken::errors::Error> {
        Ok(AppKey {
            app_id,
            key: EncodingKey::from_rsa_pem(pem)?,
        })
    }

    /// The App id.
    pub fn app_id(&self) -> AppId {
        self.app_id
    }

    /// Signs the claims for `now` with RS256. The result is the secret
    /// itself: callers wrap it at once.
    pub(crate) fn sign(&self, now: SystemTime) -> Result<String, jsonwebtoken::errors::Error> {
        let claims = JwtClaims::new(self.app_id, now);
        jsonwebtoken::encode(&Header::new(Algorithm::RS256), &claims, &self.key)
    }
}

/// A permission level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PermissionLevel {
    /// Read.
    Read,
    /// Write.
    Write,
}

/// The phase an installation token is minted for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Phase {
    /// Persisting records: `contents: write`, `metadata: read`.
    Contents,
    /// Announcing them: `issues: write`, `metadata: read`.
    Issues,
    /// Checking how a repository is provisioned, writing nothing:
    /// `actions`, `contents`, `issues` and `metadata`, all `read`. Every
    /// write of the other phases is refused to it.
    Audit,
}

impl Phase {
    /// The permissions a token for this phase asks for.
    pub fn permissions(self) -> BTreeMap<&'static str, PermissionLevel> {
        let write = match self {
            Phase::Contents => "contents",
            Phase::Issues => "issues",
            Phase::Audit => {
                return BTreeMap::from([
                    ("actions", PermissionLevel::Read),
                    ("contents", PermissionLevel::Read),
                    ("issues", PermissionLevel::Read),
                    ("metadata", PermissionLevel::Read),
                ]);
            }
        };
        BTreeMap::from([
            (write, PermissionLevel::Write),
            ("metadata", PermissionLevel::Read),
        ])
    }
}

impl fmt::Display for Phase {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Phase::Contents => "contents",
            Phase::Issues => "issues",
            Phase::Audit => "audit",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn claims_are_backdated_and_short_lived() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let c = JwtClaims::new(AppId::new(42), now);
        assert_eq!(c.iat, 1_700_000_000 - 60);
        assert_eq!(c.exp, 1_700_000_000 + 540);
        assert_eq!(c.iss, "42");
    }

    #[test]
    fn the_key_is_never_shown() {
        let pem = include_bytes!("../tests/fixtures/test-app-key.pem");
        let key = AppKey::parse_rsa_pem(AppId::new(7), pem).expect("the test key parses");
        assert_eq!(
            format!("{key:?}"),
            r#"AppKey { app_id: AppId(7), key: "***" }"#
        );
        assert!(AppKey::parse_rsa_pem(AppId::new(7), b"not a key").is_err());
    }
}
