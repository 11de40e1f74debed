//! Text for a terminal line: the one escape rule every binary uses when it
//! prints text it did not write (record fields, case ids, file names,
//! scheduler output).
//!
//! Control characters (newlines, escape sequences) and characters that
//! print nothing or reorder text (zero-width marks, bidirectional overrides
//! and isolates, line and paragraph separators, the byte-order mark) are
//! written as escapes: `\n`, `\r`, `\t`, or `\u{…}` in hex. So no such text
//! can start a new line, restyle the terminal, or show one string while
//! being another.

use std::fmt::Write as _;
use std::path::Path;

/// Characters that print nothing visible or reorder text, beyond the
/// control characters: zero-width marks, bidirectional overrides and
/// isolates, line and paragraph separators, the byte-order mark.
pub fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00ad}'
            | '\u{061c}'
            | '\u{180e}'
            | '\u{200b}'..='\u{200f}'
            | '\u{2028}'..='\u{202e}'
            | '\u{2060}'..='\u{2069}'
            | '\u{feff}'
    )
}

/// Whether `c` is written as an escape by [`push_char`].
pub fn needs_escape(c: char) -> bool {
    c.is_control() || is_invisible(c)
}

/// Appends one character as printed: itself, or an escape (`\n`, `\t`,
/// `\r`, `\u{1b}`) for control and invisible characters, and `\\` for a
/// backslash when `backslash` is set (where a reader must tell an escape
/// from the text, as in a file name).
pub fn push_char(out: &mut String, c: char, backslash: bool) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\\' if backslash => out.push_str("\\\\"),
        c if needs_escape(c) => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// `text` safe for one terminal line (see the module doc). Backslashes are
/// left as they are.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_char(&mut out, c, false);
    }
    out
}

/// [`escape`] of at most `max` characters of `text`, then `…` when it was
/// longer.
pub fn escape_bounded(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max) + 3);
    for (n, c) in text.chars().enumerate() {
        if n == max {
            out.push('…');
            break;
        }
        push_char(&mut out, c, false);
    }
    out
}

/// The longest path [`shown_path`] prints, in characters.
pub const MAX_SHOWN_PATH: usize = 160;

/// A path as printed on a terminal: every byte that is not valid UTF-8 as
/// `\xNN`, control and invisible characters as escapes, a backslash as
/// `\\`; cut in the middle (`…`) to at most [`MAX_SHOWN_PATH`] characters,
/// keeping the end, where the file name is. Machine-readable output (JSON)
/// carries the exact path.
pub fn shown_path(path: &Path) -> String {
    // Each unit is one character or byte of the name, as printed.
    let mut units: Vec<String> = Vec::new();
    for chunk in path.as_os_str().as_encoded_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            let mut u = String::new();
            push_char(&mut u, c, true);
            units.push(u);
        }
        for b in chunk.invalid() {
            units.push(format!("\\x{b:02x}"));
        }
    }
    let width = |us: &[String]| us.iter().map(|u| u.chars().count()).sum::<usize>();
    if width(&units) <= MAX_SHOWN_PATH {
        return units.concat();
    }
    // Keep about a quarter from the start and the rest from the end.
    let (mut head, mut tail) = (0, units.len());
    let mut budget = MAX_SHOWN_PATH - 1;
    let mut used_head = 0;
    while head < tail {
        let w = units[head].chars().count();
        if used_head + w > budget / 4 {
            break;
        }
        used_head += w;
        head += 1;
    }
    budget -= used_head;
    while tail > head {
        let w = units[tail - 1].chars().count();
        if w > budget {
            break;
        }
        budget -= w;
        tail -= 1;
    }
    format!("{}…{}", units[..head].concat(), units[tail..].concat())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_bidi_and_zero_width_characters_are_escaped() {
        assert_eq!(
            escape("a\nb\u{1b}[2J\u{202e}c\u{200b}d\u{2066}e\u{feff}\\"),
            "a\\nb\\u{1b}[2J\\u{202e}c\\u{200b}d\\u{2066}e\\u{feff}\\"
        );
        assert_eq!(escape("plain ünïcode ✓"), "plain ünïcode ✓");
        assert_eq!(escape_bounded("abc\u{202e}def", 4), "abc\\u{202e}…");
        assert_eq!(escape_bounded("abc", 3), "abc");
    }

    #[test]
    fn paths_show_bytes_backslashes_and_keep_their_end() {
        use std::os::unix::ffi::OsStrExt as _;
        let p = Path::new(std::ffi::OsStr::from_bytes(b"a\\b\xff\n.json"));
        assert_eq!(shown_path(p), "a\\\\b\\xff\\n.json");
        let long = format!("{}/tail.json", "d".repeat(400));
        let shown = shown_path(Path::new(&long));
        assert_eq!(shown.chars().count(), MAX_SHOWN_PATH);
        assert!(
            shown.ends_with("/tail.json") && shown.contains('…'),
            "{shown}"
        );
    }
}
