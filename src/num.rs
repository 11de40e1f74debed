//! Finite numbers: the only floating-point values a contract may hold.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A finite `f64`. Serializing refuses non-finite values (they have no JSON
/// form, and `serde_json` would otherwise turn them into `null`, confusing
/// "not measured" with "broken").
#[derive(Debug, Clone, Copy, PartialEq, PartialOrd)]
pub struct Finite(f64);

/// Attempted to build a [`Finite`] from NaN or an infinity.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[error("number {0} is not finite")]
pub struct NotFinite(pub f64);

impl Finite {
    /// Zero.
    pub const ZERO: Finite = Finite(0.0);

    /// Wraps `v` if it is finite. Negative zero becomes zero.
    pub fn new(v: f64) -> Result<Self, NotFinite> {
        if v.is_finite() {
            Ok(Finite(v + 0.0))
        } else {
            Err(NotFinite(v))
        }
    }

    /// The value.
    pub fn get(self) -> f64 {
        self.0
    }
}

impl TryFrom<f64> for Finite {
    type Error = NotFinite;
    fn try_from(v: f64) -> Result<Self, NotFinite> {
        Finite::new(v)
    }
}

impl From<u32> for Finite {
    fn from(v: u32) -> Self {
        Finite(f64::from(v))
    }
}

impl From<Finite> for f64 {
    fn from(v: Finite) -> f64 {
        v.0
    }
}

impl fmt::Display for Finite {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut b = ryu_js::Buffer::new();
        f.write_str(b.format_finite(self.0))
    }
}

impl Serialize for Finite {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if !self.0.is_finite() {
            return Err(serde::ser::Error::custom(NotFinite(self.0)));
        }
        s.serialize_f64(self.0)
    }
}

impl<'de> Deserialize<'de> for Finite {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = f64::deserialize(d)?;
        Finite::new(v).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_finite_and_normalises_negative_zero() {
        assert!(Finite::new(f64::NAN).is_err());
        assert!(Finite::new(f64::INFINITY).is_err());
        assert!(Finite::new(-0.0).expect("finite").get().is_sign_positive());
    }

    #[test]
    fn serializing_a_non_finite_value_fails_instead_of_writing_null() {
        let bad = Finite(f64::NAN);
        assert!(serde_json::to_value(bad).is_err());
        assert!(crate::jcs::to_canonical_vec(&vec![Finite(1.5), bad]).is_err());
        assert_eq!(
            crate::jcs::to_canonical_vec(&Finite(1.0)).expect("finite"),
            b"1"
        );
    }
}
