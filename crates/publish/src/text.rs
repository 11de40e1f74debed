//! Text as this crate prints it: one terminal line that no record or file
//! name can break or restyle ([`escape_text`], [`shown_path`]) and an error
//! with every cause on one line ([`error_line`]), both the core's one rule
//! (`benchops::terminal`, `benchops::excerpt`), and a markdown table cell
//! ([`markdown_cell`]). A leaf: it depends on no other module of the crate.

pub use benchops::excerpt::error_chain as error_line;
pub use benchops::terminal::{MAX_SHOWN_PATH, escape as escape_text, shown_path};

/// Text safe in a markdown table cell: no pipe, no markup, no mention or
/// reference, one line, at most 200 characters.
pub fn markdown_cell(t: &str) -> String {
    t.chars()
        .take(200)
        .map(|c| match c {
            '|' | '<' | '>' | '`' | '*' | '[' | ']' | '\\' | '@' | '#' => ' ',
            c if benchops::terminal::needs_escape(c) => ' ',
            c => c,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::path::Path;

    use super::*;

    #[test]
    fn a_markdown_cell_blanks_markup_controls_and_invisibles() {
        assert_eq!(markdown_cell("a|b\u{202e}c\u{200b}d\ne@f"), "a b c d e f");
    }

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
