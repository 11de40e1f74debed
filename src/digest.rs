//! Content addresses: `sha256:<64 lowercase hex>`.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

/// A SHA-256 digest, written `sha256:` followed by 64 lowercase hex digits.
/// Parsing is strict: no uppercase, no other prefix, no whitespace.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Sha256Digest([u8; 32]);

/// Text that is not a `sha256:<hex>` digest.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DigestParseError {
    /// The `sha256:` prefix is missing.
    #[error("digest must start with `sha256:`")]
    MissingPrefix,
    /// The hex part has the wrong length.
    #[error("digest must have 64 hex digits after `sha256:`, found {0}")]
    WrongLength(usize),
    /// The hex part holds something other than lowercase hex digits.
    #[error("digest hex must be lowercase 0-9a-f, found {0:?}")]
    BadDigit(char),
}

impl Sha256Digest {
    /// The digest of `bytes`.
    pub fn of(bytes: &[u8]) -> Self {
        Self(Sha256::digest(bytes).into())
    }

    /// The raw 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// The digest with these raw 32 bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Writes the 64 lowercase hex digits into `out`, without allocating.
    pub fn write_hex(&self, out: &mut [u8; 64]) {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        for (k, b) in self.0.iter().enumerate() {
            out[2 * k] = HEX[(b >> 4) as usize];
            out[2 * k + 1] = HEX[(b & 0xF) as usize];
        }
    }

    /// The 64 lowercase hex digits, without the prefix.
    pub fn hex(&self) -> String {
        const HEX: &[u8; 16] = b"0123456789abcdef";
        let mut s = String::with_capacity(64);
        for b in self.0 {
            s.push(HEX[(b >> 4) as usize] as char);
            s.push(HEX[(b & 0xF) as usize] as char);
        }
        s
    }

    /// Parses 64 lowercase hex digits with no prefix (as in file names).
    pub fn from_hex(hex: &str) -> Result<Self, DigestParseError> {
        if hex.len() != 64 {
            return Err(DigestParseError::WrongLength(hex.chars().count()));
        }
        let mut out = [0u8; 32];
        let digit = |c: u8| match c {
            b'0'..=b'9' => Ok(c - b'0'),
            b'a'..=b'f' => Ok(c - b'a' + 10),
            _ => Err(DigestParseError::BadDigit(c as char)),
        };
        for (i, pair) in hex.as_bytes().chunks_exact(2).enumerate() {
            out[i] = (digit(pair[0])? << 4) | digit(pair[1])?;
        }
        Ok(Self(out))
    }
}

impl FromStr for Sha256Digest {
    type Err = DigestParseError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let hex = s
            .strip_prefix("sha256:")
            .ok_or(DigestParseError::MissingPrefix)?;
        Self::from_hex(hex)
    }
}

impl TryFrom<String> for Sha256Digest {
    type Error = DigestParseError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<Sha256Digest> for String {
    fn from(d: Sha256Digest) -> String {
        d.to_string()
    }
}

impl fmt::Display for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", self.hex())
    }
}

impl fmt::Debug for Sha256Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Sha256Digest({self})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_vector() {
        assert_eq!(
            Sha256Digest::of(b"abc").to_string(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn round_trips_and_is_strict() {
        let d = Sha256Digest::of(b"x");
        assert_eq!(d.to_string().parse::<Sha256Digest>(), Ok(d));
        let hex = d.hex();
        assert_eq!(
            hex.parse::<Sha256Digest>(),
            Err(DigestParseError::MissingPrefix)
        );
        assert_eq!(
            format!("sha256:{}", hex.to_uppercase()).parse::<Sha256Digest>(),
            Err(DigestParseError::BadDigit(
                hex.to_uppercase()
                    .chars()
                    .find(|c| c.is_ascii_uppercase())
                    .expect("has a letter")
            ))
        );
        assert_eq!(
            "sha256:abc".parse::<Sha256Digest>(),
            Err(DigestParseError::WrongLength(3))
        );
        assert!(format!("sha256:{hex} ").parse::<Sha256Digest>().is_err());
        assert!(format!("SHA256:{hex}").parse::<Sha256Digest>().is_err());
        let json = serde_json::to_string(&d).expect("serializes");
        assert_eq!(
            serde_json::from_str::<Sha256Digest>(&json).expect("parses"),
            d
        );
        assert!(serde_json::from_str::<Sha256Digest>("\"sha256:zz\"").is_err());
    }
}
