//! Integers as a draft spells them: the text-level half of the lossless
//! rule (ADR 0001).
//!
//! A parsed draft holds doubles, so `9007199254740993.0`, `9007199254740993e0`
//! and `18446744073709551617` have already become another number by the
//! time a value tree exists. This pass reads the number tokens of the text
//! itself, with their JSON paths, and finds every token that denotes an
//! integer (whatever its spelling: a fraction of zeros, an exponent) whose
//! canonical form denotes a different integer. `1e300` is not one of them:
//! its canonical form, `1e+300`, denotes the same number. Fractions that
//! are not integers are rounded to the nearest double by RFC 8785, by
//! design, and are not reported.
//!
//! The text must be JSON already (the caller parsed it): the pass does not
//! validate, it only follows the structure to name paths.

use crate::jcs;
use crate::path::{JsonPath, Segment};

/// One integer token that canonical JSON would change.
#[derive(Debug, Clone, PartialEq)]
pub struct LossyInteger {
    /// Where it is.
    pub path: JsonPath,
    /// The token as the draft spells it.
    pub token: String,
    /// What canonical JSON would write instead.
    pub canonical: String,
}

enum Frame {
    Object {
        key: Option<String>,
        expect_key: bool,
    },
    Array {
        index: usize,
    },
}

/// Every integer token of `text` (valid JSON) whose canonical form denotes
/// another number, in document order, at most `max`.
pub fn lossy_integers(text: &[u8], max: usize) -> Vec<LossyInteger> {
    let mut out = Vec::new();
    let mut stack: Vec<Frame> = Vec::new();
    let mut i = 0;
    while i < text.len() && out.len() < max {
        match text[i] {
            b'{' => {
                stack.push(Frame::Object {
                    key: None,
                    expect_key: true,
                });
                i += 1;
            }
            b'[' => {
                stack.push(Frame::Array { index: 0 });
                i += 1;
            }
            b'}' | b']' => {
                stack.pop();
                i += 1;
            }
            b',' => {
                match stack.last_mut() {
                    Some(Frame::Array { index }) => *index += 1,
                    Some(Frame::Object { key, expect_key }) => {
                        *key = None;
                        *expect_key = true;
                    }
                    None => {}
                }
                i += 1;
            }
            b'"' => {
                let end = string_end(text, i);
                if let Some(Frame::Object { key, expect_key }) = stack.last_mut()
                    && *expect_key
                {
                    *key = serde_json::from_slice::<String>(&text[i..end]).ok();
                    *expect_key = false;
                }
                i = end;
            }
            b'-' | b'0'..=b'9' => {
                let start = i;
                while i < text.len()
                    && matches!(text[i], b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E')
                {
                    i += 1;
                }
                let token = String::from_utf8_lossy(&text[start..i]).into_owned();
                if let Some(canonical) = changed_integer(&token) {
                    out.push(LossyInteger {
                        path: path_of(&stack),
                        token,
                        canonical,
                    });
                }
            }
            _ => i += 1,
        }
    }
    out
}

/// The index just past the string token that opens at `start`.
fn string_end(text: &[u8], start: usize) -> usize {
    let mut i = start + 1;
    while i < text.len() {
        match text[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    text.len()
}

fn path_of(stack: &[Frame]) -> JsonPath {
    let mut p = JsonPath::root();
    for f in stack {
        match f {
            Frame::Object { key: Some(k), .. } => p.push(Segment::Key(k.clone())),
            Frame::Object { key: None, .. } => {}
            Frame::Array { index } => p.push(Segment::Index(*index)),
        }
    }
    p
}

/// A decimal number as digits without leading or trailing zeros and a
/// power of ten: `(negative, digits, exponent)`, the value being
/// `digits × 10^exponent`. `None` for zero or text that is not a number.
fn decimal(token: &str) -> Option<(bool, String, i64)> {
    let (negative, rest) = match token.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, token),
    };
    let (mantissa, exponent) = match rest.find(['e', 'E']) {
        Some(at) => (&rest[..at], rest[at + 1..].parse::<i64>().ok()?),
        None => (rest, 0),
    };
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    let mut digits: String = int.chars().chain(frac.chars()).collect();
    if !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let mut exponent = exponent.checked_sub(i64::try_from(frac.len()).ok()?)?;
    let lead = digits.len() - digits.trim_start_matches('0').len();
    digits.drain(..lead);
    while digits.ends_with('0') {
        digits.pop();
        exponent = exponent.checked_add(1)?;
    }
    if digits.is_empty() {
        return None;
    }
    Some((negative, digits, exponent))
}

/// For a token that denotes an integer above 2^53 in magnitude: the
/// canonical text, when it denotes another number.
fn changed_integer(token: &str) -> Option<String> {
    let (negative, digits, exponent) = decimal(token)?;
    // Not an integer, or at most 15 digits (below 2^53, always exact).
    let width = i64::try_from(digits.len()).ok()?.checked_add(exponent)?;
    if exponent < 0 || width <= 15 || width > 400 {
        return None;
    }
    let value: f64 = token.parse().ok()?;
    let canonical = String::from_utf8(jcs::canonical_bytes(&serde_json::Value::Number(
        serde_json::Number::from_f64(value)?,
    )))
    .ok()?;
    (decimal(&canonical) != Some((negative, digits, exponent))).then_some(canonical)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn found(text: &str) -> Vec<(String, String, String)> {
        lossy_integers(text.as_bytes(), 16)
            .into_iter()
            .map(|l| (l.path.to_string(), l.token, l.canonical))
            .collect()
    }

    #[test]
    fn integers_above_two_to_the_53_are_found_whatever_their_spelling() {
        let text = r#"{"a":{"seed":9007199254740993.0},"b":[1,9007199254740993e0,90071992547409930e-1],
            "c":18446744073709551617,"d":-9007199254740993,"k\"ey":[[0,{"x":9007199254740995.00}]]}"#;
        let f = found(text);
        let paths: Vec<&str> = f.iter().map(|(p, _, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "$.a.seed",
                "$.b[1]",
                "$.b[2]",
                "$.c",
                "$.d",
                "$[\"k\\\"ey\"][0][1].x"
            ]
        );
        assert_eq!(f[0].2, "9007199254740992");
        assert_eq!(f[3].2, "18446744073709552000");
    }

    #[test]
    fn exact_integers_large_exponents_and_fractions_are_not_reported() {
        let text = r#"{"a":9007199254740992.0,"b":1e300,"c":123456789012345678e3,"d":0.1,
            "e":9007199254740993.5,"f":"9007199254740993","g":[0,-0.0,1E2,12345678901234567890e-3]}"#;
        // 123456789012345678e3 is not a double: reported. Everything else
        // is exact, a fraction, or a string.
        let f = found(text);
        assert_eq!(f.len(), 1, "{f:?}");
        assert_eq!(f[0].0, "$.c");
    }
}
