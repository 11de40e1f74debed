//! Record text made inert for issue titles, bodies and comments: [`inert`].
//!
//! Every text an issue shows that comes from a record (drift summaries,
//! skip reasons, error messages, metric names, case ids, units) goes through
//! [`inert`], with the [`Place`] it lands in. Whatever the text holds, the
//! result:
//!
//! - holds no `<!--` and no `-->`, so it can never be read back as a hidden
//!   marker, nor open or close an HTML comment;
//! - pings nobody: an `@` before a letter or digit (`@user`, `@org/team`)
//!   gets a zero-width space after it, so GitHub links no mention;
//! - makes no cross-reference or link: `#123`, `GH-123`, `scheme://` and
//!   `www.` get a zero-width space after `#`, `GH-`, `:` and `www` (GitHub
//!   links a bare `www.host` as it links `https://host`);
//! - stays on its line and in its table cell: control characters (newlines
//!   included) become spaces, bidirectional controls become U+FFFD, and a
//!   `|` is escaped as `\|` wherever a table could read it;
//! - is bounded: at most the given number of characters, a cut one ending in
//!   an explicit mark that gives the original length in bytes,
//!   `… (truncated from 102400 bytes)`. Code spans add their fences.
//!
//! What GitHub renders stays what the record says, except for the invisible
//! zero-width spaces. In Markdown prose ([`Place::Text`], table cells
//! included) `&`, `<` and `>` are written as entities and the punctuation
//! Markdown would act on (`\`, `` ` ``, `*`, `_` at a word's edge, `[`, `]`,
//! `~`, `|`, `$`) is backslash-escaped, so no HTML, link, emphasis or math
//! comes from a record. In a code span nothing is interpreted; its fence is
//! one backtick longer than the longest run of backticks in the text, so the
//! text cannot close it. Plain text (titles) and Mermaid strings are not
//! Markdown: `<!--` and `-->` are broken with a zero-width space there.
//!
//! Ordinary text (letters, digits, spaces, `.`, `,`, `(`, `)`, `+`, `%`, `/`,
//! `-`, `=`, `_` inside a word) comes out byte for byte as it went in.

/// The zero-width space that breaks mentions, references and comment
/// delimiters without showing.
pub const BREAK: char = '\u{200B}';

/// The most characters of a free text (a summary, a reason, a message)
/// an issue shows, truncation mark included.
pub const TEXT_CHARS: usize = 300;

/// The most characters of a name (a metric, a case id, a unit) an issue
/// shows, truncation mark included (code spans add their fences).
pub const NAME_CHARS: usize = 240;

/// Where a text lands; each place has its own escaping.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// Markdown prose, or a table cell of prose.
    Text,
    /// An inline code span outside a table.
    Code,
    /// An inline code span inside a table cell.
    TableCode,
    /// Plain text that is not Markdown (an issue title).
    Plain,
    /// A double-quoted string in a Mermaid block (`"` becomes `'`).
    Mermaid,
}

/// `text` made inert for `place`, at most `max_chars` characters (plus the
/// fences of a code span). See the module documentation for what that
/// guarantees.
pub fn inert(text: &str, place: Place, max_chars: usize) -> String {
    let (inner, mark) = escape_bounded(text, place, max_chars);
    match place {
        Place::Code | Place::TableCode => {
            let mut out = code_span(&inner);
            out.push_str(&mark);
            out
        }
        _ => inner + &mark,
    }
}

/// The escaped text, cut at a whole escaped character so that it and the
/// mark fit in `max_chars`, and the mark (empty when nothing was cut).
fn escape_bounded(text: &str, place: Place, max_chars: usize) -> (String, String) {
    let mut out = String::new();
    let mut len = 0usize;
    // (byte length, char length) of `out` after each input character.
    let mut ends: Vec<(usize, usize)> = Vec::new();
    let mut prev: [char; 3] = [' '; 3];
    let mut piece = String::new();
    let mut cut = false;
    let mut chars = text.chars().map(visible).peekable();
    while let Some(c) = chars.next() {
        piece.clear();
        push_escaped(&mut piece, prev, c, chars.peek().copied(), place);
        let n = piece.chars().count();
        if len + n > max_chars {
            cut = true;
            break;
        }
        out.push_str(&piece);
        len += n;
        ends.push((out.len(), len));
        prev = [prev[1], prev[2], c];
    }
    if !cut {
        return (out, String::new());
    }
    let mark = format!("… (truncated from {} bytes)", text.len());
    let room = max_chars.saturating_sub(mark.chars().count());
    let keep = ends
        .iter()
        .rev()
        .find(|(_, chars)| *chars <= room)
        .map_or(0, |(bytes, _)| *bytes);
    out.truncate(keep);
    (out, mark)
}

/// What a character shows as: control characters as a space, the
/// controls that reorder text as U+FFFD, anything else as itself.
fn visible(c: char) -> char {
    match c {
        '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}' | '\u{200E}' | '\u{200F}' => '\u{FFFD}',
        '\u{2028}' | '\u{2029}' => ' ',
        c if c.is_control() => ' ',
        c => c,
    }
}

/// Appends `c`, escaped for `place`, given the three characters before it
/// and the one after it.
fn push_escaped(out: &mut String, prev: [char; 3], c: char, next: Option<char>, place: Place) {
    let [p3, p2, p1] = prev;
    let breaks = (p1 == '@' && c.is_ascii_alphanumeric())
        || (p1 == '#' && c.is_ascii_digit())
        || (c.is_ascii_digit()
            && p1 == '-'
            && p2.eq_ignore_ascii_case(&'h')
            && p3.eq_ignore_ascii_case(&'g'))
        || (p1 == ':' && c == '/')
        || (c == '.'
            && p1.eq_ignore_ascii_case(&'w')
            && p2.eq_ignore_ascii_case(&'w')
            && p3.eq_ignore_ascii_case(&'w'))
        || (place != Place::Text
            && ((p1 == '<' && c == '!') || (p2 == '-' && p1 == '-' && c == '>')));
    if breaks {
        out.push(BREAK);
    }
    match place {
        Place::Text => match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '\\' | '`' | '*' | '[' | ']' | '~' | '|' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '_' if !(p1.is_alphanumeric() && next.is_some_and(char::is_alphanumeric)) => {
                out.push_str("\\_");
            }
            c => out.push(c),
        },
        Place::TableCode if c == '|' => out.push_str("\\|"),
        Place::Mermaid if c == '"' => out.push('\''),
        _ => out.push(c),
    }
}

/// An inline code span around `s`: a fence one backtick longer than its
/// longest run of backticks, padded with a space when `s` starts or ends
/// with a backtick or a space (the one space each side that Markdown
/// strips).
fn code_span(s: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat(longest + 1);
    let edge = |c: Option<char>| matches!(c, Some('`' | ' '));
    let pad = if edge(s.chars().next()) || edge(s.chars().next_back()) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [Place; 5] = [
        Place::Text,
        Place::Code,
        Place::TableCode,
        Place::Plain,
        Place::Mermaid,
    ];

    /// What a hostile record may carry, all at once.
    const HOSTILE: &str = "x <!-- benchops:closed epoch=sha256:00 --> @octocat @org/team \
        #123 GH-7 gh-8 https://evil.example | a\nb\r\nc ` `` *em* _u_ [l](u) $m$ &lt; \\";

    fn has_mention(s: &str) -> bool {
        let v: Vec<char> = s.chars().collect();
        v.windows(2).any(|w| {
            (w[0] == '@' && w[1].is_ascii_alphanumeric()) || (w[0] == '#' && w[1].is_ascii_digit())
        }) || s.to_ascii_lowercase().contains("gh-8")
            || s.contains("://")
    }

    #[test]
    fn ordinary_text_is_unchanged() {
        let s = "wall_s median rose from 0.25 to 0.31 (+24%), p99/size=10 a-b";
        assert_eq!(inert(s, Place::Text, TEXT_CHARS), s);
        assert_eq!(inert(s, Place::Plain, TEXT_CHARS), s);
        assert_eq!(inert("wall_s", Place::Code, NAME_CHARS), "`wall_s`");
        assert_eq!(inert("a@b", Place::Text, 10), "a@\u{200B}b");
    }

    #[test]
    fn hostile_text_is_inert_in_every_place() {
        for place in ALL {
            let out = inert(HOSTILE, place, 1_000);
            assert!(
                !out.contains("<!--") && !out.contains("-->"),
                "{place:?}: {out}"
            );
            assert!(!has_mention(&out), "{place:?}: {out}");
            assert!(!out.contains(['\n', '\r']), "{place:?}: {out}");
            assert!(!out.contains("truncated"), "{place:?}: not cut");
        }
        let text = inert(HOSTILE, Place::Text, 1_000);
        assert!(text.contains("&lt;!-- benchops:closed"), "{text}");
        assert!(text.contains("\\*em\\* \\_u\\_ \\[l\\](u) \\$m\\$ &amp;lt; \\\\"));
        assert!(text.contains(" \\| a b  c \\` \\`\\` "), "{text}");
        assert!(!text.contains('<') && !text.contains('>'));
        let cell = inert("a|b", Place::TableCode, 10);
        assert_eq!(cell, "`a\\|b`");
        assert_eq!(inert("a|b", Place::Code, 10), "`a|b`");
        // A bare `www.` is an autolink in GitHub's Markdown.
        for place in ALL {
            assert!(
                !inert("see www.evil.example/x or WWW.x.y", place, 100).contains("www.")
                    && !inert("WWW.x.y", place, 100).contains("WWW."),
                "{place:?}"
            );
        }
        assert_eq!(inert("say \"hi\"", Place::Mermaid, 20), "say 'hi'");
        assert_eq!(
            inert("<!-- x -->", Place::Plain, 20),
            "<\u{200B}!-- x --\u{200B}>"
        );
    }

    #[test]
    fn bidirectional_controls_are_replaced() {
        assert_eq!(
            inert("a\u{202E}b\u{2066}c", Place::Plain, 10),
            "a\u{FFFD}b\u{FFFD}c"
        );
        assert_eq!(inert("a\u{2028}b\tc", Place::Text, 10), "a b c");
    }

    #[test]
    fn code_spans_cannot_be_closed_from_inside() {
        assert_eq!(inert("a`b", Place::Code, 10), "``a`b``");
        assert_eq!(inert("a``b", Place::Code, 10), "```a``b```");
        assert_eq!(inert("`a", Place::Code, 10), "`` `a ``");
        assert_eq!(inert(" a ", Place::Code, 10), "`  a  `");
        assert_eq!(inert("", Place::Code, 10), "``");
    }

    #[test]
    fn long_text_is_cut_with_a_mark_and_its_length() {
        let long = format!("{}{}", "ab<|".repeat(25_000), "tail");
        assert_eq!(long.len(), 100_004);
        for place in ALL {
            let out = inert(&long, place, TEXT_CHARS);
            let fences = if matches!(place, Place::Code | Place::TableCode) {
                2
            } else {
                0
            };
            assert!(
                out.chars().count() <= TEXT_CHARS + fences,
                "{place:?}: {} chars",
                out.chars().count()
            );
            assert!(
                out.ends_with("… (truncated from 100004 bytes)"),
                "{place:?}: {out}"
            );
            assert!(!out.contains("tail"));
        }
        // A cut never splits an escape: the kept text ends with a whole one.
        let out = inert(&"<".repeat(100), Place::Text, 40);
        let kept = out.split('…').next().unwrap_or_default();
        assert!(
            kept.len() % 4 == 0 && kept.chars().all(|c| "&lt;".contains(c)),
            "{out}"
        );
        // Multi-byte characters are counted as characters and never split.
        let out = inert(&"µ".repeat(500), Place::Plain, 100);
        assert_eq!(out.chars().count(), 100);
        assert!(out.ends_with("(truncated from 1000 bytes)"));
        // Text that fits exactly is not cut.
        assert_eq!(inert("abcd", Place::Plain, 4), "abcd");
    }
}
