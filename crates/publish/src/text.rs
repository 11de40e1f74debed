//! Text as this crate prints it: one terminal line that no record or file
//! name can break or restyle ([`escape_text`], [`shown_path`]), an error
//! with every cause on one line ([`error_line`]), and a markdown table cell
//! ([`markdown_cell`]). A leaf: it depends on no other module of the crate.

use std::fmt::Write as _;
use std::path::Path;

/// The longest path [`shown_path`] prints, in characters.
pub const MAX_SHOWN_PATH: usize = 160;

/// Characters that print nothing visible or reorder text, beyond the
/// control characters: zero-width marks, bidirectional overrides and
/// isolates, line and paragraph separators, the byte-order mark.
fn is_invisible(c: char) -> bool {
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

/// One character as printed: itself, or an escape (`\n`, `\t`, `\r`,
/// `\u{1b}`) for control and invisible characters, and `\\` for a
/// backslash when `backslash` is set.
fn push_escaped(out: &mut String, c: char, backslash: bool) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\\' if backslash => out.push_str("\\\\"),
        c if c.is_control() || is_invisible(c) => {
            let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
        }
        c => out.push(c),
    }
}

/// `text` safe for one terminal line: control characters (newlines, escape
/// sequences) and invisible characters are written as escapes, so that no
/// text from a record or a file name can start a line or restyle the
/// terminal. Backslashes are left as they are.
pub fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        push_escaped(&mut out, c, false);
    }
    out
}

/// A path as printed on a terminal: every byte that is not valid UTF-8 as
/// `\xNN`, control and invisible characters as escapes, a backslash as
/// `\\`; cut in the middle (`…`) to at most [`MAX_SHOWN_PATH`] characters,
/// keeping the end, where the file name is. `--json` output has the exact
/// path.
pub fn shown_path(path: &Path) -> String {
    // Each unit is one character or byte of the name, as printed.
    let mut units: Vec<String> = Vec::new();
    for chunk in path.as_os_str().as_encoded_bytes().utf8_chunks() {
        for c in chunk.valid().chars() {
            let mut u = String::new();
            push_escaped(&mut u, c, true);
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

/// The error and every cause, on one line.
pub fn error_line(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cause = c.source();
    }
    s
}

/// Text safe in a markdown table cell: no pipe, no markup, no mention or
/// reference, one line, at most 200 characters.
pub fn markdown_cell(t: &str) -> String {
    t.chars()
        .take(200)
        .map(|c| match c {
            '|' | '<' | '>' | '`' | '*' | '[' | ']' | '\\' | '@' | '#' => ' ',
            c if c.is_control() => ' ',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;

    use super::*;

    #[test]
    fn text_escapes_controls_and_invisibles_but_keeps_backslashes() {
        assert_eq!(
            escape_text("a\nb\r\tc\u{1b}[2K\u{202e}d\\e é"),
            "a\\nb\\r\\tc\\u{1b}[2K\\u{202e}d\\e é"
        );
    }

    #[test]
    fn a_shown_path_escapes_bytes_and_backslashes() {
        let p = Path::new(OsStr::from_bytes(b"dir/caf\xe9\\x\n.json"));
        assert_eq!(shown_path(p), "dir/caf\\xe9\\\\x\\n.json");
    }

    #[test]
    fn a_long_shown_path_keeps_its_end_and_whole_escapes() {
        let name = format!("{}\n{}.json", "a".repeat(200), "b".repeat(100));
        let shown = shown_path(Path::new(&name));
        assert_eq!(shown.chars().count(), MAX_SHOWN_PATH, "{shown}");
        assert!(
            shown.ends_with(&format!("\\n{}.json", "b".repeat(100))),
            "{shown}"
        );
        assert!(shown.starts_with("aaaa"), "{shown}");
        assert_eq!(shown.matches('…').count(), 1, "{shown}");
        // A cut never splits an escape.
        let name = format!("{}{}", "\u{1}".repeat(100), "c".repeat(10));
        let shown = shown_path(Path::new(&name));
        assert!(shown.chars().count() <= MAX_SHOWN_PATH, "{shown}");
        let (head, tail) = shown.split_once('…').expect("cut");
        assert!(
            head.len() % 5 == 0 && head.chars().all(|c| "\\u{1}".contains(c)),
            "{head}"
        );
        assert!(tail.ends_with("cccccccccc"), "{tail}");
        assert!((tail.len() - 10) % 5 == 0, "{tail}");
    }
}
