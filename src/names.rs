//! Validated names used as keys across the contracts.

use std::fmt;

use serde::{Deserialize, Serialize};

/// A name that failed validation.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid {what} {value:?}: {reason}")]
pub struct NameError {
    /// Which kind of name.
    pub what: &'static str,
    /// The rejected text.
    pub value: String,
    /// Why it was rejected.
    pub reason: &'static str,
}

macro_rules! name_type {
    ($(#[$doc:meta])* $name:ident, $what:literal, $max:literal, $extra:expr) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
        #[serde(try_from = "String", into = "String")]
        pub struct $name(String);

        impl $name {
            /// Validates and wraps `value`.
            pub fn new(value: impl Into<String>) -> Result<Self, NameError> {
                let value = value.into();
                let err = |reason| Err(NameError { what: $what, value: value.clone(), reason });
                if value.is_empty() {
                    return err("must not be empty");
                }
                if value.len() > $max {
                    return err(concat!("must be at most ", stringify!($max), " bytes"));
                }
                let extra: fn(char) -> bool = $extra;
                if !value.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') || extra(c)) {
                    return err("may hold only ASCII letters, digits and - _ . (and / for case ids)");
                }
                if value.starts_with('.') || value.contains("..") {
                    return err("must not start with `.` or contain `..`");
                }
                Ok(Self(value))
            }

            /// The name as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl TryFrom<String> for $name {
            type Error = NameError;
            fn try_from(s: String) -> Result<Self, NameError> {
                Self::new(s)
            }
        }

        impl From<$name> for String {
            fn from(n: $name) -> String {
                n.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

name_type!(
    /// A scheduled lane (`sentinel`, `comprehensive`). Used in history paths,
    /// so it is restricted to `[A-Za-z0-9._-]`.
    LaneName, "lane name", 64, |_| false
);
name_type!(
    /// A benchmark case (`parse/small`). Also allows `/` and `=` and `,` so
    /// parameter points can be named.
    CaseId, "case id", 200, |c| matches!(c, '/' | '=' | ',' | '+')
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_names_are_path_safe() {
        assert!(LaneName::new("comprehensive").is_ok());
        assert!(LaneName::new("").is_err());
        assert!(LaneName::new("a/b").is_err());
        assert!(LaneName::new("..").is_err());
        assert!(LaneName::new("x".repeat(65)).is_err());
        assert!(serde_json::from_str::<LaneName>("\"bad lane\"").is_err());
    }

    #[test]
    fn case_ids_allow_parameter_points() {
        assert!(CaseId::new("parse/size=10,threads=2").is_ok());
        assert!(CaseId::new("a b").is_err());
    }
}
