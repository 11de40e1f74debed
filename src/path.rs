//! JSON paths used in every error message (`$.cases[2].skip_reason`).

use std::fmt;

/// One step into a JSON document.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Segment {
    /// An object member.
    Key(String),
    /// An array element.
    Index(usize),
}

/// A location inside a JSON document, written `$` for the root, `.key` for a
/// member (or `["key"]` when the key is not a plain identifier) and `[i]` for
/// an array element.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct JsonPath(Vec<Segment>);

impl JsonPath {
    /// The document root, `$`.
    pub fn root() -> Self {
        Self(Vec::new())
    }

    /// This path extended by an object key.
    #[must_use]
    pub fn key(&self, key: impl Into<String>) -> Self {
        let mut v = self.0.clone();
        v.push(Segment::Key(key.into()));
        Self(v)
    }

    /// This path extended by an array index.
    #[must_use]
    pub fn index(&self, index: usize) -> Self {
        let mut v = self.0.clone();
        v.push(Segment::Index(index));
        Self(v)
    }

    /// Appends a segment in place.
    pub fn push(&mut self, segment: Segment) {
        self.0.push(segment);
    }

    /// Removes the last segment in place.
    pub fn pop(&mut self) {
        self.0.pop();
    }

    /// The segments from the root.
    pub fn segments(&self) -> &[Segment] {
        &self.0
    }

    /// Builds a path from an RFC 6901 JSON Pointer (`/cases/0/id`). Segments
    /// made only of ASCII digits are taken as array indices.
    pub fn from_pointer(pointer: &str) -> Self {
        let mut path = Self::root();
        if pointer.is_empty() {
            return path;
        }
        for raw in pointer.trim_start_matches('/').split('/') {
            let token = raw.replace("~1", "/").replace("~0", "~");
            match token.parse::<usize>() {
                Ok(i) if !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit()) => {
                    path.push(Segment::Index(i));
                }
                _ => path.push(Segment::Key(token)),
            }
        }
        path
    }
}

fn is_identifier(key: &str) -> bool {
    let mut chars = key.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

impl fmt::Display for JsonPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("$")?;
        for segment in &self.0 {
            match segment {
                Segment::Key(k) if is_identifier(k) && k.len() <= crate::excerpt::MAX_CHARS => {
                    write!(f, ".{k}")?;
                }
                // Quoted, and cut when long: a member name can be huge.
                Segment::Key(k) => write!(f, "[{}]", crate::excerpt::quote_json_str(k))?,
                Segment::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn displays_keys_indices_and_quoted_keys() {
        let p = JsonPath::root().key("cases").index(2).key("skip_reason");
        assert_eq!(p.to_string(), "$.cases[2].skip_reason");
        assert_eq!(JsonPath::root().key("a b").to_string(), "$[\"a b\"]");
        assert_eq!(JsonPath::root().to_string(), "$");
    }

    #[test]
    fn long_member_names_are_cut() {
        let p = JsonPath::root().key("k".repeat(100_000)).index(1);
        let shown = p.to_string();
        assert!(shown.len() < 120, "{shown}");
        assert!(shown.ends_with("…\" (100000 bytes)][1]"), "{shown}");
        let p = JsonPath::root().key("a\nb");
        assert_eq!(p.to_string(), "$[\"a\\nb\"]");
    }

    #[test]
    fn parses_json_pointers() {
        assert_eq!(
            JsonPath::from_pointer("/cases/0/id").to_string(),
            "$.cases[0].id"
        );
        assert_eq!(
            JsonPath::from_pointer("/a~1b/x~0y").to_string(),
            "$[\"a/b\"][\"x~y\"]"
        );
        assert_eq!(JsonPath::from_pointer(""), JsonPath::root());
    }
}
