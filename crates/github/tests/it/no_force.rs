//! No code path in this crate can send a forced ref update.
//!
//! The ref update's body type has no settable `force` field (only
//! `NoForce`, which serializes as `false`), and the rules below, checked
//! over every source file of the crate with comments removed, keep it that
//! way:
//!
//! 1. Every identifier that contains "force" (any case) is `force`,
//!    `NoForce` or a form of "enforce"; and every `force` (identifier or
//!    JSON key in a string) is followed by `: NoForce` or `: false`. So
//!    `force: bool`, `force: true`, `"force": true`, `json!({"force": x})`,
//!    `.force(true)`, `force_push` and `forced` all fail.
//! 2. Nothing calls `serialize_bool(true)`; `NoForce`'s `Serialize` impl
//!    calls `serialize_bool(false)`.
//! 3. The ref path (`/git/refs/…`) is written in two places only:
//!    `update_ref`, which sends `Method::PATCH` with an `UpdateRefRequest`,
//!    and `delete_ref`, which sends `Method::DELETE` with no body.
//!
//! The scanner itself is tested on snippets that must fail and pass, so a
//! broken scanner cannot make this test pass vacuously.

use std::fs;
use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).expect("readable source dir") {
        let p = entry.expect("dir entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|e| e == "rs") {
            out.push(p);
        }
    }
}

/// Removes `//` and `/* */` comments (doc comments included), keeping
/// string and char literals intact.
fn strip_comments(src: &str) -> String {
    let b: Vec<char> = src.chars().collect();
    let mut out = String::with_capacity(src.len());
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        let next = b.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < b.len() && b[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < b.len() {
                if b[i] == '/' && b.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if b[i] == '*' && b.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
            out.push(' ');
        } else if c == 'r' && (next == Some('"') || next == Some('#')) && !ident_before(&b, i) {
            // Raw string r"…" or r#"…"#.
            let mut j = i + 1;
            let mut hashes = 0;
            while b.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if b.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            j += 1;
            loop {
                if j >= b.len() {
                    break;
                }
                if b[j] == '"' && (0..hashes).all(|k| b.get(j + 1 + k) == Some(&'#')) {
                    j += 1 + hashes;
                    break;
                }
                j += 1;
            }
            out.extend(&b[i..j.min(b.len())]);
            i = j;
        } else if c == '"' {
            let mut j = i + 1;
            while j < b.len() && b[j] != '"' {
                if b[j] == '\\' {
                    j += 1;
                }
                j += 1;
            }
            out.extend(&b[i..(j + 1).min(b.len())]);
            i = j + 1;
        } else if c == '\'' {
            // A char literal ('x', '\n', '"') or a lifetime ('a).
            if next == Some('\\') {
                let mut j = i + 2;
                while j < b.len() && b[j] != '\'' {
                    j += 1;
                }
                out.extend(&b[i..(j + 1).min(b.len())]);
                i = j + 1;
            } else if b.get(i + 2) == Some(&'\'') {
                out.extend(&b[i..i + 3]);
                i += 3;
            } else {
                out.push(c);
                i += 1;
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(b: &[char], i: usize) -> bool {
    i > 0 && (b[i - 1].is_alphanumeric() || b[i - 1] == '_')
}

/// The code without whitespace, quotes, backslashes or `#`, so that
/// `"force": true`, `\"force\":true` and `force : true` read alike.
fn flatten(code: &str) -> String {
    code.chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '"' | '\\' | '#' | '\''))
        .collect()
}

/// Every violation of rules 1 and 2 in one source text.
fn violations(src: &str) -> Vec<String> {
    let code = strip_comments(src);
    let chars: Vec<char> = code.chars().collect();
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut found = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        if !is_ident(chars[i]) {
            i += 1;
            continue;
        }
        let start = i;
        while i < chars.len() && is_ident(chars[i]) {
            i += 1;
        }
        let ident: String = chars[start..i].iter().collect();
        let lower = ident.to_lowercase();
        if !lower.contains("force") {
            continue;
        }
        let after: String = chars[i..(i + 40).min(chars.len())].iter().collect();
        let rest: String = flatten(&after).chars().take(8).collect();
        let ok = match ident.as_str() {
            "force" => rest.starts_with(":NoForce") || rest.starts_with(":false"),
            "NoForce" => true,
            _ => lower.starts_with("enforce"),
        };
        if !ok {
            found.push(format!("`{ident}` followed by `{rest}`"));
        }
    }
    if flatten(&code).contains("serialize_bool(true") {
        found.push("serialize_bool(true)".to_owned());
    }
    found
}

fn sources() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&root, &mut files);
    files.sort();
    assert!(
        files.len() >= 5,
        "sanity: the crate's sources are found: {files:?}"
    );
    files
        .into_iter()
        .map(|p| {
            let s = fs::read_to_string(&p).expect("readable source");
            (p, s)
        })
        .collect()
}

#[test]
fn no_source_can_set_force_to_anything_but_false() {
    let mut problems = Vec::new();
    let mut declared = 0;
    for (path, src) in sources() {
        for v in violations(&src) {
            problems.push(format!("{}: {v}", path.display()));
        }
        let flat = flatten(&strip_comments(&src));
        declared += flat.matches("force:NoForce").count();
    }
    assert!(problems.is_empty(), "forcing is possible: {problems:#?}");
    // The field declaration and its one constructor; if these vanish the
    // scan above is looking at the wrong files.
    assert_eq!(
        declared, 2,
        "sanity: `force: NoForce` is declared and set once"
    );
}

#[test]
fn no_force_serializes_false_only() {
    let git = sources()
        .into_iter()
        .find(|(p, _)| p.ends_with("git.rs"))
        .expect("git.rs")
        .1;
    let code = strip_comments(&git);
    let start = code
        .find("impl Serialize for NoForce")
        .expect("NoForce has a hand-written Serialize impl");
    let end = start + code[start..].find("\n}\n").expect("impl ends");
    let body = flatten(&code[start..end]);
    assert!(body.contains("serialize_bool(false)"), "{body}");
    assert!(!body.contains("true"), "{body}");
}

#[test]
fn the_ref_update_path_is_built_in_update_ref_only() {
    let mut places = Vec::new();
    for (path, src) in sources() {
        let code = strip_comments(&src);
        for (at, _) in code.match_indices("/git/refs/") {
            places.push((path.clone(), code.clone(), at));
        }
    }
    let mut functions = Vec::new();
    for (path, code, at) in &places {
        assert!(path.ends_with("git.rs"), "{}", path.display());
        let func = code[..*at]
            .rfind("pub async fn ")
            .expect("inside a function");
        let end = code[*at..]
            .find("pub async fn ")
            .map_or(code.len(), |e| at + e);
        let body = &code[func..end];
        assert!(!body.contains("json!"), "{body}");
        if body.starts_with("pub async fn update_ref(") {
            // The one request with a body: fast forward only.
            assert!(body.contains("UpdateRefRequest::new("), "{body}");
            assert!(body.contains("Method::PATCH"), "{body}");
            functions.push("update_ref");
        } else if body.starts_with("pub async fn delete_ref(") {
            // Deleting sends no body at all, so it cannot carry `force`.
            assert!(body.contains("Method::DELETE"), "{body}");
            assert!(body.contains("None::<&()>"), "{body}");
            assert!(!body.contains("Method::PATCH"), "{body}");
            functions.push("delete_ref");
        } else {
            panic!("a ref path is built outside update_ref and delete_ref: {body}");
        }
    }
    assert_eq!(
        functions,
        ["update_ref", "delete_ref"],
        "one place each builds a ref update path and a ref deletion path"
    );
}

#[test]
fn the_scanner_catches_every_way_to_force() {
    let bad = [
        r#"let body = serde_json::json!({"sha": s, "force": true});"#,
        r##"let body = r#"{"sha":"x","force":true}"#;"##,
        r#"let body = "{\"sha\":\"x\",\"force\": true}";"#,
        "struct UpdateRef { sha: String, force: bool }",
        "UpdateRef { sha, force: flag }",
        "builder.force(true)",
        "let force_push = true;",
        "let forced = 1;",
        "const FORCE: bool = true;",
        r#"json!({"force": !false})"#,
        "s.serialize_bool(true)",
        "/* a comment */ let force = true;",
    ];
    for snippet in bad {
        assert!(!violations(snippet).is_empty(), "not caught: {snippet}");
    }
    let good = [
        "struct UpdateRefRequest { sha: GitSha, force: NoForce }",
        "UpdateRefRequest { sha: sha.clone(), force: NoForce }",
        r#"assert_eq!(v, json!({"sha": "a", "force": false}));"#,
        "// force: true is what we never send",
        "/// `force: true` in a doc comment",
        "/* block force: true */",
        "fn enforce_phase() {} // enforces",
        r#"let url = "https://x/y"; let force_safe = NoForce;"#,
    ];
    for snippet in good.iter().take(7) {
        assert!(
            violations(snippet).is_empty(),
            "false alarm: {snippet}: {:?}",
            violations(snippet)
        );
    }
    // `force_safe` is still an identifier containing "force": flagged.
    assert!(!violations(good[7]).is_empty());
    // Comments are stripped but URLs in strings are not comments.
    assert!(strip_comments(r#"let u = "https://x"; // gone"#).contains("https://x"));
    assert!(!strip_comments(r#"let u = "https://x"; // gone"#).contains("gone"));
}
