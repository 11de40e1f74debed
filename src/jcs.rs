//! Canonical JSON per RFC 8785 (JSON Canonicalization Scheme).
//!
//! - Object members are sorted by the UTF-16 code units of their names.
//! - Numbers are IEEE-754 doubles written the way ECMAScript's
//!   `Number.prototype.toString` writes them (integers up to 2^53 in plain
//!   decimal; everything else through `ryu-js`). Integers that a double cannot
//!   hold exactly are rounded, as the RFC requires.
//! - Strings escape only `"`, `\`, and the C0 controls (`\b \t \n \f \r` by
//!   name, the rest as lowercase `\u00xx`); everything else is written as
//!   UTF-8.
//! - No insignificant whitespace.
//!
//! [`check_canonical`] compares bytes with the canonical form of a parsed
//! value; `Stream` does the same comparison token by token while the bytes
//! are being parsed, so that verification needs no tree of the document
//! (see `crate::scan`).
//!
//! Non-finite numbers cannot exist in a [`serde_json::Value`], and lone
//! surrogates cannot exist in a Rust `String`: parsing text that contains
//! either fails ([`parse`]), and serializing a typed value that holds a
//! non-finite number fails ([`to_canonical_vec`], through
//! [`crate::Finite`]).

use std::cmp::Ordering;
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::path::{JsonPath, Segment};

/// Text that is not JSON at all, or not I-JSON (non-finite numbers, lone
/// surrogates).
#[derive(Debug, thiserror::Error)]
#[error("malformed JSON at line {line}, column {column}: {reason}")]
pub struct ParseError {
    /// 1-based line of the error.
    pub line: usize,
    /// 1-based column of the error.
    pub column: usize,
    /// What the parser objected to.
    pub reason: String,
}

/// A typed value that has no canonical JSON form.
#[derive(Debug, thiserror::Error)]
#[error("value has no canonical JSON form")]
pub struct SerializeError(#[from] serde_json::Error);

/// Bytes that parse as JSON but are not the canonical form of what they hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "not canonical JSON at {path} (byte {offset}): {hint}; expected `{expected}`, found `{found}`"
)]
pub struct NotCanonical {
    /// Where in the document the first difference is.
    pub path: JsonPath,
    /// Byte offset of the first difference.
    pub offset: usize,
    /// A short reading of what is wrong.
    pub hint: Hint,
    /// The canonical bytes from the first difference (abbreviated).
    pub expected: String,
    /// The given bytes from the first difference (abbreviated).
    pub found: String,
}

/// The kind of difference [`check_canonical`] found first.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hint {
    /// A number is written in a non-canonical way (`1.0`, `1e2`, `-0`).
    Number,
    /// A string uses an escape the RFC does not allow, or misses one.
    StringEscape,
    /// Whitespace outside strings.
    Whitespace,
    /// Object members out of order (or duplicated).
    KeyOrder,
    /// Bytes after the end of the document.
    TrailingBytes,
    /// The document ends before the canonical form does.
    Truncated,
    /// Any other difference.
    Other,
}

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Hint::Number => "number is not in canonical form",
            Hint::StringEscape => "string is not escaped canonically",
            Hint::Whitespace => "insignificant whitespace",
            Hint::KeyOrder => "object members are not in canonical order (or are duplicated)",
            Hint::TrailingBytes => "bytes after the end of the document",
            Hint::Truncated => "document ends early",
            Hint::Other => "bytes differ from the canonical form",
        })
    }
}

/// Parses JSON text strictly: no trailing garbage, no lone surrogates, no
/// numbers outside the double range.
pub fn parse(bytes: &[u8]) -> Result<Value, ParseError> {
    serde_json::from_slice(bytes).map_err(|e| ParseError {
        line: e.line(),
        column: e.column(),
        reason: strip_position(&e.to_string()),
    })
}

fn strip_position(msg: &str) -> String {
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_owned(),
        None => msg.to_owned(),
    }
}

/// The canonical bytes of a parsed value.
pub fn canonical_bytes(value: &Value) -> Vec<u8> {
    let mut out = VecOut(Vec::with_capacity(256));
    let mut path = Vec::new();
    // Writing into a Vec never stops early.
    let _ = write_value(value, &mut out, &mut path);
    out.0
}

/// Appends the canonical JSON form of the string `s` (quoted, escaped as
/// RFC 8785 says) to `buf`: what [`canonical_bytes`] writes for a string,
/// without building a value.
pub fn push_string(buf: &mut Vec<u8>, s: &str) {
    let mut out = VecOut(std::mem::take(buf));
    let _ = write_string(s, &mut out, Token::String, &[] as &[Segment]);
    *buf = out.0;
}

/// The canonical bytes of any serializable value. Fails on non-finite numbers
/// held in [`crate::Finite`] and on maps with non-string keys.
pub fn to_canonical_vec<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>, SerializeError> {
    let v = serde_json::to_value(value)?;
    Ok(canonical_bytes(&v))
}

/// Parses and re-canonicalizes JSON text.
pub fn canonicalize(bytes: &[u8]) -> Result<Vec<u8>, ParseError> {
    parse(bytes).map(|v| canonical_bytes(&v))
}

/// Checks that `bytes` are exactly the canonical form of `value` (which must
/// be what `bytes` parse to), without allocating the canonical form.
pub fn check_canonical(bytes: &[u8], value: &Value) -> Result<(), NotCanonical> {
    let mut out = CmpOut {
        given: bytes,
        pos: 0,
        mismatch: None,
    };
    let mut path = Vec::new();
    let completed = write_value(value, &mut out, &mut path);
    if let Some(m) = out.mismatch {
        return Err(m);
    }
    debug_assert!(completed);
    if out.pos < bytes.len() {
        return Err(NotCanonical {
            path: JsonPath::root(),
            offset: out.pos,
            hint: Hint::TrailingBytes,
            expected: String::new(),
            found: snippet(&bytes[out.pos..]),
        });
    }
    Ok(())
}

/// Compares object member names by their UTF-16 code units (RFC 8785 §3.2.3).
pub fn cmp_utf16(a: &str, b: &str) -> Ordering {
    // UTF-8 byte order equals code point order, and code point order equals
    // UTF-16 order unless a character at or above U+E000 is involved (lead
    // byte 0xEE or higher), where surrogate pairs sort below U+E000..U+FFFF.
    let high = |s: &str| s.bytes().any(|b| b >= 0xEE);
    if !high(a) && !high(b) {
        a.as_bytes().cmp(b.as_bytes())
    } else {
        a.encode_utf16().cmp(b.encode_utf16())
    }
}

#[derive(Clone, Copy)]
enum PathRef<'a> {
    Key(&'a str),
    Index(usize),
}

/// A path being walked, turned into a [`JsonPath`] only when a mismatch is
/// reported.
pub(crate) trait PathSource {
    /// The path, without its last `drop_last` segments.
    fn json_path(&self, drop_last: usize) -> JsonPath;
}

impl PathSource for [PathRef<'_>] {
    fn json_path(&self, drop_last: usize) -> JsonPath {
        let mut p = JsonPath::root();
        for s in &self[..self.len().saturating_sub(drop_last)] {
            p.push(match s {
                PathRef::Key(k) => Segment::Key((*k).to_owned()),
                PathRef::Index(i) => Segment::Index(*i),
            });
        }
        p
    }
}

impl PathSource for [Segment] {
    fn json_path(&self, drop_last: usize) -> JsonPath {
        let mut p = JsonPath::root();
        for s in &self[..self.len().saturating_sub(drop_last)] {
            p.push(s.clone());
        }
        p
    }
}

/// What a token being written is, for mismatch hints.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Token {
    Number,
    String,
    Key,
    Punct,
    Literal,
}

pub(crate) trait Out {
    /// Writes `bytes`; returns false to stop the walk.
    fn put<P: PathSource + ?Sized>(&mut self, bytes: &[u8], token: Token, path: &P) -> bool;

    /// When checking given bytes, accepts a non-integer number that is
    /// canonical by its spelling alone (see [`is_plainly_canonical`]);
    /// returns false when it cannot tell, and the number is formatted.
    fn accept_plain_number(&mut self) -> bool {
        false
    }

    /// Notes a member name that does not sort after the one before it.
    fn misordered(&mut self, _previous: &str, _object: &[Segment]) {}
}

/// Whether a number token is certainly the ECMAScript form of the double it
/// denotes, judged from its spelling: plain decimal notation, no leading
/// zeros, a fraction without trailing zeros, at most 15 significant digits,
/// and a magnitude in [1e-6, 1e21). Such a decimal round-trips through a
/// double (15 digits never collide), no shorter decimal denotes the same
/// double (that would need trailing zeros), and ECMAScript prints numbers in
/// that range in plain notation. Anything else is decided by formatting.
fn is_plainly_canonical(t: &[u8]) -> bool {
    let t = t.strip_prefix(b"-").unwrap_or(t);
    let (int, frac) = match t.iter().position(|&b| b == b'.') {
        Some(i) => (&t[..i], &t[i + 1..]),
        None => return false, // integers take the exact integer path
    };
    if int.is_empty()
        || frac.is_empty()
        || !int.iter().all(u8::is_ascii_digit)
        || !frac.iter().all(u8::is_ascii_digit)
        || frac.last() == Some(&b'0')
        || (int.len() > 1 && int[0] == b'0')
        || int.len() > 21
    {
        return false;
    }
    let (sig, leading_frac_zeros) = if int == b"0" {
        let z = frac.iter().take_while(|&&b| b == b'0').count();
        (frac.len() - z, z)
    } else {
        (int.len() + frac.len(), 0)
    };
    sig <= 15 && leading_frac_zeros <= 5
}

pub(crate) struct VecOut(Vec<u8>);

impl Out for VecOut {
    fn put<P: PathSource + ?Sized>(&mut self, bytes: &[u8], _: Token, _: &P) -> bool {
        self.0.extend_from_slice(bytes);
        true
    }
}

pub(crate) struct CmpOut<'g> {
    given: &'g [u8],
    pos: usize,
    mismatch: Option<NotCanonical>,
}

fn snippet(bytes: &[u8]) -> String {
    crate::excerpt::bytes_prefix(bytes, 32)
}

impl Out for CmpOut<'_> {
    fn misordered(&mut self, previous: &str, object: &[Segment]) {
        if self.mismatch.is_some() {
            return;
        }
        let offset = self.pos;
        self.mismatch = Some(NotCanonical {
            path: object.json_path(0),
            offset,
            hint: Hint::KeyOrder,
            expected: format!(
                "a member name sorting after \"{}\"",
                crate::excerpt::bytes_prefix(previous.as_bytes(), 32)
            ),
            found: snippet(&self.given[offset..]),
        });
    }

    fn accept_plain_number(&mut self) -> bool {
        let rest = &self.given[self.pos..];
        let len = rest
            .iter()
            .take_while(|b| matches!(b, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
            .count();
        if is_plainly_canonical(&rest[..len]) {
            self.pos += len;
            true
        } else {
            false
        }
    }

    fn put<P: PathSource + ?Sized>(&mut self, bytes: &[u8], token: Token, path: &P) -> bool {
        if self.mismatch.is_some() {
            return false;
        }
        let rest = &self.given[self.pos..];
        if rest.len() >= bytes.len() && &rest[..bytes.len()] == bytes {
            let next = rest.get(bytes.len()).copied();
            let runs_on = token == Token::Number
                && matches!(next, Some(b'.' | b'e' | b'E' | b'+' | b'-' | b'0'..=b'9'));
            if !runs_on {
                self.pos += bytes.len();
                return true;
            }
        }
        let common = rest.iter().zip(bytes).take_while(|(a, b)| a == b).count();
        let offset = self.pos + common;
        let found_byte = self.given.get(offset).copied();
        let hint = match (found_byte, token) {
            (None, _) => Hint::Truncated,
            (Some(b' ' | b'\n' | b'\r' | b'\t'), _) => Hint::Whitespace,
            (_, Token::Number) => Hint::Number,
            (_, Token::String) => Hint::StringEscape,
            (_, Token::Key) => Hint::KeyOrder,
            (Some(b'.' | b'e' | b'E' | b'0'..=b'9'), Token::Punct) => Hint::Number,
            _ => Hint::Other,
        };
        // A misplaced member name is a fault of the object that holds it.
        let drop_last = usize::from(token == Token::Key);
        self.mismatch = Some(NotCanonical {
            path: path.json_path(drop_last),
            offset,
            hint,
            expected: if common == bytes.len() {
                format!("{} (then the next token)", snippet(bytes))
            } else {
                snippet(&bytes[common..])
            },
            found: snippet(&self.given[offset..]),
        });
        false
    }
}

fn write_value<'a, O: Out>(value: &'a Value, out: &mut O, path: &mut Vec<PathRef<'a>>) -> bool {
    match value {
        Value::Bool(true) => out.put(b"true", Token::Literal, path.as_slice()),
        Value::Bool(false) => out.put(b"false", Token::Literal, path.as_slice()),
        Value::Number(n) => {
            let num = match (n.as_u64(), n.as_i64()) {
                (Some(u), _) => Num::U(u),
                (_, Some(i)) => Num::I(i),
                _ => Num::F(n.as_f64().unwrap_or(0.0)),
            };
            write_number(num, out, path.as_slice())
        }
        Value::String(s) => write_string(s, out, Token::String, path.as_slice()),
        Value::Array(items) => {
            if !out.put(b"[", Token::Punct, path.as_slice()) {
                return false;
            }
            for (i, item) in items.iter().enumerate() {
                if i > 0 && !out.put(b",", Token::Punct, path.as_slice()) {
                    return false;
                }
                path.push(PathRef::Index(i));
                let ok = write_value(item, out, path);
                path.pop();
                if !ok {
                    return false;
                }
            }
            out.put(b"]", Token::Punct, path.as_slice())
        }
        Value::Object(map) => {
            if !out.put(b"{", Token::Punct, path.as_slice()) {
                return false;
            }
            // The map usually iterates in canonical order already (a sorted
            // map whose names have no character at or above U+E000); sort
            // only when it does not.
            let in_order = map
                .keys()
                .zip(map.keys().skip(1))
                .all(|(a, b)| cmp_utf16(a, b) == Ordering::Less);
            let mut sorted: Vec<(&'a String, &'a Value)>;
            let entries: &mut dyn Iterator<Item = (&'a String, &'a Value)> = if in_order {
                &mut map.iter()
            } else {
                sorted = map.iter().collect();
                sorted.sort_by(|a, b| cmp_utf16(a.0, b.0));
                &mut sorted.into_iter()
            };
            for (i, (k, v)) in entries.enumerate() {
                if i > 0 && !out.put(b",", Token::Punct, path.as_slice()) {
                    return false;
                }
                path.push(PathRef::Key(k));
                let ok = write_string(k, out, Token::Key, path.as_slice())
                    && out.put(b":", Token::Punct, path.as_slice())
                    && write_value(v, out, path);
                path.pop();
                if !ok {
                    return false;
                }
            }
            out.put(b"}", Token::Punct, path.as_slice())
        }
        Value::Null => out.put(b"null", Token::Literal, path.as_slice()),
    }
}

/// A number as the parser delivered it.
#[derive(Clone, Copy)]
enum Num {
    U(u64),
    I(i64),
    F(f64),
}

fn write_number<O: Out, P: PathSource + ?Sized>(num: Num, out: &mut O, path: &P) -> bool {
    if matches!(num, Num::F(_)) && out.accept_plain_number() {
        return true;
    }
    let mut ibuf = itoa_like::Buf::default();
    let mut fbuf = ryu_js::Buffer::new();
    let text: &[u8] = match num {
        Num::U(u) if u <= MAX_SAFE => ibuf.format_i64(u as i64),
        Num::I(i) if i.unsigned_abs() <= MAX_SAFE => ibuf.format_i64(i),
        // Not exactly representable as a safe integer: go through the
        // double, as ECMAScript would.
        Num::U(u) => fbuf.format_finite(u as f64).as_bytes(),
        Num::I(i) => fbuf.format_finite(i as f64).as_bytes(),
        Num::F(f) => fbuf.format_finite(f).as_bytes(),
    };
    out.put(text, Token::Number, path)
}

/// Writes a document token by token, in document order: either compares
/// the canonical form of each token with given bytes or collects it. The caller walks the document (see
/// `crate::scan`); members are taken in the order given, and the caller
/// reports names out of order. No tree of the document is needed.
pub(crate) struct Stream<O> {
    out: O,
}

impl<O: Out> Stream<O> {
    /// `{ } [ ] , :`.
    pub(crate) fn punct(&mut self, bytes: &'static [u8], path: &[Segment]) {
        self.out.put(bytes, Token::Punct, path);
    }

    /// `null`, `true` or `false`.
    pub(crate) fn literal(&mut self, bytes: &'static [u8], path: &[Segment]) {
        self.out.put(bytes, Token::Literal, path);
    }

    /// A string value.
    pub(crate) fn string(&mut self, s: &str, path: &[Segment]) {
        write_string(s, &mut self.out, Token::String, path);
    }

    /// A member name; `path` ends with that member.
    pub(crate) fn key(&mut self, s: &str, path: &[Segment]) {
        write_string(s, &mut self.out, Token::Key, path);
    }

    /// A non-negative integer that fits a u64.
    pub(crate) fn u64(&mut self, v: u64, path: &[Segment]) {
        write_number(Num::U(v), &mut self.out, path);
    }

    /// A negative integer that fits an i64.
    pub(crate) fn i64(&mut self, v: i64, path: &[Segment]) {
        write_number(Num::I(v), &mut self.out, path);
    }

    /// Any other number.
    pub(crate) fn f64(&mut self, v: f64, path: &[Segment]) {
        write_number(Num::F(v), &mut self.out, path);
    }

    /// Reports that the member about to be written does not sort after
    /// `previous`, the member before it in the object at `object`.
    pub(crate) fn misordered(&mut self, previous: &str, object: &[Segment]) {
        self.out.misordered(previous, object);
    }
}

impl<'g> Stream<CmpOut<'g>> {
    /// Starts comparing with `given`.
    pub(crate) fn new(given: &'g [u8]) -> Self {
        Stream {
            out: CmpOut {
                given,
                pos: 0,
                mismatch: None,
            },
        }
    }

    /// The first difference, or bytes left after the document.
    pub(crate) fn finish(self) -> Result<(), NotCanonical> {
        let out = self.out;
        if let Some(m) = out.mismatch {
            return Err(m);
        }
        if out.pos < out.given.len() {
            return Err(NotCanonical {
                path: JsonPath::root(),
                offset: out.pos,
                hint: Hint::TrailingBytes,
                expected: String::new(),
                found: snippet(&out.given[out.pos..]),
            });
        }
        Ok(())
    }
}

impl Stream<VecOut> {
    /// Starts an empty buffer.
    pub(crate) fn new_buffer(capacity: usize) -> Self {
        Stream {
            out: VecOut(Vec::with_capacity(capacity)),
        }
    }

    /// The bytes written.
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.out.0
    }
}

/// 2^53: integers up to this magnitude print identically as i64 and as an
/// ECMAScript double.
const MAX_SAFE: u64 = 1 << 53;

fn write_string<O: Out, P: PathSource + ?Sized>(
    s: &str,
    out: &mut O,
    token: Token,
    path: &P,
) -> bool {
    // Most strings need no escaping: write them without a copy.
    if !s.bytes().any(|b| b < 0x20 || b == b'"' || b == b'\\') {
        return out.put(b"\"", token, path)
            && out.put(s.as_bytes(), token, path)
            && out.put(b"\"", token, path);
    }
    let mut buf = Vec::with_capacity(s.len() + 2);
    buf.push(b'"');
    for &b in s.as_bytes() {
        match b {
            b'"' => buf.extend_from_slice(b"\\\""),
            b'\\' => buf.extend_from_slice(b"\\\\"),
            0x08 => buf.extend_from_slice(b"\\b"),
            0x09 => buf.extend_from_slice(b"\\t"),
            0x0A => buf.extend_from_slice(b"\\n"),
            0x0C => buf.extend_from_slice(b"\\f"),
            0x0D => buf.extend_from_slice(b"\\r"),
            0x00..=0x1F => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                buf.extend_from_slice(b"\\u00");
                buf.push(HEX[(b >> 4) as usize]);
                buf.push(HEX[(b & 0xF) as usize]);
            }
            _ => buf.push(b),
        }
    }
    buf.push(b'"');
    out.put(&buf, token, path)
}

mod itoa_like {
    /// A tiny integer formatter (no allocation).
    #[derive(Default)]
    pub(super) struct Buf([u8; 24]);

    impl Buf {
        pub(super) fn format_i64(&mut self, v: i64) -> &[u8] {
            let mut n = v.unsigned_abs();
            let mut i = self.0.len();
            loop {
                i -= 1;
                self.0[i] = b'0' + (n % 10) as u8;
                n /= 10;
                if n == 0 {
                    break;
                }
            }
            if v < 0 {
                i -= 1;
                self.0[i] = b'-';
            }
            &self.0[i..]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn canon(s: &str) -> String {
        String::from_utf8(canonicalize(s.as_bytes()).expect("parses")).expect("utf-8")
    }

    #[test]
    fn sorts_and_strips_whitespace() {
        assert_eq!(
            canon(r#"{ "b": [1, 2.0, 1e2], "a": {"d": true, "c": null} }"#),
            r#"{"a":{"c":null,"d":true},"b":[1,2,100]}"#
        );
    }

    #[test]
    fn numbers_follow_ecmascript() {
        assert_eq!(
            canon("[-0, 1E-7, 1e21, 1e20, 0.1, 9007199254740993, -9007199254740992]"),
            "[0,1e-7,1e+21,100000000000000000000,0.1,9007199254740992,-9007199254740992]"
        );
    }

    #[test]
    fn escapes_only_what_the_rfc_says() {
        assert_eq!(
            canon(r#""\u0041\u00e9\u2028\u001f\b\t\n\f\r\"\\/""#),
            "\"Aé\u{2028}\\u001f\\b\\t\\n\\f\\r\\\"\\\\/\""
        );
    }

    #[test]
    fn sorts_by_utf16_not_utf8() {
        // U+1F600 (surrogates D83D DE00) sorts before U+FB01 in UTF-16.
        assert_eq!(cmp_utf16("\u{1F600}", "\u{FB01}"), Ordering::Less);
        assert_eq!("\u{1F600}".cmp("\u{FB01}"), Ordering::Greater);
        assert_eq!(
            canon("{\"\u{FB01}\":1,\"\u{1F600}\":2}"),
            "{\"\u{1F600}\":2,\"\u{FB01}\":1}"
        );
    }

    #[test]
    fn rejects_lone_surrogates_and_non_finite_numbers() {
        assert!(parse(br#""\ud800""#).is_err());
        assert!(parse(br#""\udc00x""#).is_err());
        assert!(parse(b"1e400").is_err());
        assert!(parse(b"NaN").is_err());
    }

    #[test]
    fn plain_spelling_shortcut_agrees_with_formatting() {
        // Every token the shortcut accepts must equal ECMAScript's form.
        let tokens = [
            "0.1",
            "0.000001",
            "0.0000012",
            "123.456",
            "-2.5",
            "999999999999999.9",
            "0.30000000000000004",
            "1.0",
            "0.0000001",
            "01.5",
            "1.50",
            "-0.0",
            "12345678901234.56",
            "100000000000000000000.5",
            "5e-324",
            "1.7976931348623157e308",
        ];
        for t in tokens {
            let Ok(v) = parse(t.as_bytes()) else { continue };
            let formatted = canonical_bytes(&v);
            if is_plainly_canonical(t.as_bytes()) {
                assert_eq!(formatted, t.as_bytes(), "{t}");
            }
            assert_eq!(
                check_canonical(t.as_bytes(), &v).is_ok(),
                formatted == t.as_bytes(),
                "{t}"
            );
        }
    }

    #[test]
    fn check_canonical_names_path_and_hint() {
        let cases: &[(&str, &str, Hint)] = &[
            (r#"{"a":[1,1.0]}"#, "$.a[1]", Hint::Number),
            (r#"{"b":1,"a":2}"#, "$", Hint::KeyOrder),
            (r#"{"a": 1}"#, "$.a", Hint::Whitespace),
            (r#"{"a":"\u0041"}"#, "$.a", Hint::StringEscape),
            ("{\"a\":1}\n", "$", Hint::TrailingBytes),
        ];
        for (text, path, hint) in cases {
            let v = parse(text.as_bytes()).expect("parses");
            let err = check_canonical(text.as_bytes(), &v).expect_err(text);
            assert_eq!(err.path.to_string(), *path, "{text}");
            assert_eq!(err.hint, *hint, "{text}");
        }
        let ok = br#"{"a":[1,2.5],"b":"x"}"#;
        check_canonical(ok, &parse(ok).expect("parses")).expect("canonical");
    }
}
