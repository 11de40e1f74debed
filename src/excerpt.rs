//! Bounded quotations of values in error messages.
//!
//! A message that names a value shows at most [`MAX_CHARS`] characters of
//! it; a longer value is cut, marked with `…`, and followed by its full size
//! (`` `aaaa…` (200000000 bytes) ``). Control, bidirectional and zero-width
//! characters are escaped by the one rule of [`crate::terminal`], so a
//! quoted value can never start a new line of output or reorder it.

use std::fmt::{self, Write as _};

use serde_json::Value;

/// How many characters of a value a message shows.
pub const MAX_CHARS: usize = 64;

/// An error and every source under it, on one line joined by `: `, as the
/// binaries print errors (`error: ` and this). The one rendering of an
/// error chain; each message is expected to quote what it names already.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

/// `text` in backticks, cut to [`MAX_CHARS`] characters (plus its size in
/// bytes when cut), control characters escaped.
pub fn quote(text: &str) -> String {
    let mut out = String::with_capacity(text.len().min(MAX_CHARS) + 24);
    out.push('`');
    let cut = push_escaped(&mut out, text, MAX_CHARS);
    out.push('`');
    if cut {
        let _ = write!(out, " ({} bytes)", text.len());
    }
    out
}

/// Raw bytes (possibly not UTF-8) quoted like [`quote`], without backticks:
/// what [`crate::jcs::NotCanonical`] shows of the bytes around a difference.
pub fn bytes_prefix(bytes: &[u8], max_bytes: usize) -> String {
    let end = bytes.len().min(max_bytes);
    let text = String::from_utf8_lossy(&bytes[..end]);
    let mut out = String::with_capacity(end + 4);
    push_escaped(&mut out, &text, max_bytes);
    if bytes.len() > end {
        out.push('…');
    }
    out
}

/// A JSON value as JSON text, cut to [`MAX_CHARS`] characters (plus its
/// size when cut: a string's length in bytes, or the length of any other
/// value's JSON text). Never builds the whole text of a large value.
pub fn quote_json(value: &Value) -> String {
    match value {
        Value::String(s) => quote_json_str(s),
        _ => json_head(value).unwrap_or_else(|| {
            let mut size = Counter(0);
            let _ = serde_json::to_writer(&mut size, value);
            format!("{}… ({} bytes)", json_prefix(value), size.0)
        }),
    }
}

/// A string as a JSON string literal, cut like [`quote_json`].
pub fn quote_json_str(text: &str) -> String {
    match json_head(text) {
        Some(whole) => whole,
        None => format!("{}…\" ({} bytes)", json_prefix(text), text.len()),
    }
}

/// The whole JSON text of `value` when it fits in [`MAX_CHARS`].
fn json_head<T: serde::Serialize + ?Sized>(value: &T) -> Option<String> {
    let mut head = Bounded {
        text: String::new(),
        room: MAX_CHARS,
        cut: false,
    };
    // `Bounded` refuses to grow past its room, which stops serialization
    // early; that error is the expected way out.
    let _ = serde_json::to_writer(&mut head, value);
    (!head.cut).then_some(head.text)
}

/// The first [`MAX_CHARS`] characters of the JSON text of `value`.
fn json_prefix<T: serde::Serialize + ?Sized>(value: &T) -> String {
    let mut head = Bounded {
        text: String::new(),
        room: MAX_CHARS,
        cut: false,
    };
    let _ = serde_json::to_writer(&mut head, value);
    head.text
}

/// Appends `text` with control characters escaped, stopping after `max`
/// characters; returns whether it stopped early.
fn push_escaped(out: &mut String, text: &str, max: usize) -> bool {
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push('…');
            return true;
        }
        crate::terminal::push_char(out, c, false);
    }
    false
}

/// Keeps the first characters written to it; fails once full.
struct Bounded {
    text: String,
    room: usize,
    cut: bool,
}

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let chunk = String::from_utf8_lossy(buf);
        for c in chunk.chars() {
            if self.room == 0 {
                self.cut = true;
                return Err(std::io::Error::other("excerpt is full"));
            }
            self.room -= 1;
            crate::terminal::push_char(&mut self.text, c, false);
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Counts bytes written to it.
struct Counter(u64);

impl std::io::Write for Counter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len() as u64;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// A lazily quoted value, for `format!` arguments.
#[derive(Debug, Clone, Copy)]
pub struct Quoted<'a>(pub &'a str);

impl fmt::Display for Quoted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&quote(self.0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_values_are_quoted_whole() {
        assert_eq!(quote("host"), "`host`");
        assert_eq!(
            quote_json(&Value::String("bad lane".into())),
            "\"bad lane\""
        );
        assert_eq!(quote_json(&serde_json::json!([1, 2])), "[1,2]");
    }

    #[test]
    fn long_values_are_cut_and_sized() {
        let long = "a".repeat(200_000);
        let q = quote(&long);
        assert_eq!(q, format!("`{}…` (200000 bytes)", "a".repeat(MAX_CHARS)));
        let j = quote_json(&Value::String(long));
        assert_eq!(
            j,
            format!("\"{}…\" (200000 bytes)", "a".repeat(MAX_CHARS - 1))
        );
        let arr = Value::Array(vec![Value::from(0); 10_000]);
        let j = quote_json(&arr);
        assert!(j.len() < 100, "{j}");
        assert!(j.ends_with("… (20001 bytes)"), "{j}");
    }

    #[test]
    fn control_characters_cannot_start_a_line() {
        let q = quote("x\nforged.json  valid\r");
        assert!(!q.contains('\n') && !q.contains('\r'), "{q}");
        assert_eq!(q, "`x\\nforged.json  valid\\r`");
        assert_eq!(bytes_prefix(b"a\nb", 32), "a\\nb");
        assert_eq!(bytes_prefix(b"abcdef", 3), "abc…");
    }
}
