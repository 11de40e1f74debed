//! Text placed in HTML or SVG markup: the one escape every page and chart
//! uses for text it did not write (record fields, lane and case names,
//! issue titles).

/// `text` safe in HTML or SVG element content and in a quoted attribute
/// value: `&`, `<`, `>`, `"` and `'` become character references.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_covers_markup_and_both_quotes() {
        assert_eq!(
            escape(r#"<script>alert("x" & 'y')</script>"#),
            "&lt;script&gt;alert(&quot;x&quot; &amp; &#39;y&#39;)&lt;/script&gt;"
        );
        assert_eq!(escape("plain text, é"), "plain text, é");
        assert_eq!(escape("&amp;"), "&amp;amp;", "escaping is not idempotent");
    }
}
