//! The `[gc]` table of a schedule manifest (v3): how much of the state
//! directory `benchops-exec lane due --run` keeps after its lanes had their
//! turn. Read by [`crate::manifest`], which re-exports it; the policy's
//! rules are `benchops-exec gc`'s.

use serde::{Deserialize, Serialize};

/// The state directory's garbage-collection policy (v3, `[gc]`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub struct GcPolicy {
    /// Sealed lane executions (and what only they use) younger than this
    /// many days are kept; [`DEFAULT_GC_KEEP_DAYS`] when absent.
    #[serde(default)]
    pub keep_days: Option<u32>,
    /// After the age rule, the oldest removable items go until the state
    /// directory fits in this many bytes: a number, or a string with a K,
    /// M, G or T suffix (`"2G"`, [`crate::units::parse_bytes`]).
    #[serde(default)]
    pub max_bytes: Option<ByteSize>,
}

/// A size as the manifest gives it: bytes, or text such as `"500M"`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ByteSize {
    /// A number of bytes.
    Bytes(u64),
    /// A number with a unit (`"2G"`).
    Text(String),
}

impl ByteSize {
    /// The number of bytes, or why the text is not a size.
    pub fn bytes(&self) -> Result<u64, String> {
        match self {
            ByteSize::Bytes(n) => Ok(*n),
            ByteSize::Text(t) => crate::units::parse_bytes(t),
        }
    }
}

/// How many days `[gc]` keeps sealed lane executions when it gives no
/// `keep_days`.
pub const DEFAULT_GC_KEEP_DAYS: u32 = 30;

impl GcPolicy {
    /// `keep_days`, or its default.
    pub fn keep_days(&self) -> u32 {
        self.keep_days.unwrap_or(DEFAULT_GC_KEEP_DAYS)
    }

    /// `max_bytes` in bytes (`None`: no size limit). A loaded manifest's
    /// value always parses; a bad one is refused when it is loaded.
    pub fn max_bytes(&self) -> Option<u64> {
        self.max_bytes.as_ref().and_then(|b| b.bytes().ok())
    }
}
