//! The secret wrapper for every credential this crate handles.

use std::fmt;

/// A secret credential: an installation access token or a signed App JWT.
///
/// `Debug` and `Display` print `Token(***)` and never the value, so a token
/// can sit in a struct that is logged or put into an error without leaking.
/// The only way to read the value is [`Token::expose`], which the client
/// calls when it writes the `Authorization` header.
#[derive(Clone, PartialEq, Eq)]
pub struct Token(String);

impl Token {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Token(secret.into())
    }

    /// The secret itself, for the `Authorization` header only.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

impl fmt::Display for Token {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Token(***)")
    }
}

impl<'de> serde::Deserialize<'de> for Token {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        String::deserialize(d).map(Token)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_and_display_never_show_the_secret() {
        let secret = "ghs_16C7e42F292c6912E7710c838347Ae178B4a";
        let token = Token::new(secret);
        assert_eq!(format!("{token:?}"), "Token(***)");
        assert_eq!(format!("{token}"), "Token(***)");
        assert_eq!(format!("{token:#?}"), "Token(***)");
        #[derive(Debug)]
        #[expect(dead_code, reason = "only read through Debug")]
        struct Holder {
            token: Token,
        }
        let shown = format!(
            "{:?}",
            Holder {
                token: token.clone()
            }
        );
        assert!(!shown.contains(secret), "{shown}");
        assert!(!shown.contains("ghs_"), "{shown}");
        assert_eq!(token.expose(), secret);
    }
}
