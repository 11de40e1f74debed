//! Validated names that end up in request paths: repositories, refs, file
//! paths, git object ids. Every path segment is percent-encoded before it is
//! sent, and validation keeps `..`, empty segments and control characters
//! out, so no input can address another endpoint.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::error::GitHubError;

fn invalid(what: &'static str, value: &str, reason: &'static str) -> GitHubError {
    GitHubError::InvalidInput {
        what,
        value: value.to_owned(),
        reason,
    }
}

/// A repository, `owner/name`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Repo {
    owner: String,
    name: String,
}

fn check_repo_part(what: &'static str, s: &str, max: usize) -> Result<(), GitHubError> {
    if s.is_empty() || s.len() > max {
        return Err(invalid(what, s, "must be 1 to 100 characters"));
    }
    if s == "." || s == ".." {
        return Err(invalid(what, s, "must not be . or .."));
    }
    if !s
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    {
        return Err(invalid(
            what,
            s,
            "may contain only ASCII letters, digits, '-', '_' and '.'",
        ));
    }
    Ok(())
}

impl Repo {
    /// A repository from its owner and name.
    pub fn new(owner: &str, name: &str) -> Result<Self, GitHubError> {
        check_repo_part("repository owner", owner, 100)?;
        check_repo_part("repository name", name, 100)?;
        Ok(Repo {
            owner: owner.to_owned(),
            name: name.to_owned(),
        })
    }

    /// Parses `owner/name`.
    pub fn parse(full: &str) -> Result<Self, GitHubError> {
        let (owner, name) = full
            .split_once('/')
            .ok_or_else(|| invalid("repository", full, "must be owner/name"))?;
        Self::new(owner, name)
    }

    /// The owner (user or organization).
    pub fn owner(&self) -> &str {
        &self.owner
    }

    /// The repository name without its owner.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// `/repos/{owner}/{name}`; both parts are already path-safe.
    pub(crate) fn api_path(&self) -> String {
        format!("/repos/{}/{}", self.owner, self.name)
    }
}

impl fmt::Display for Repo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// A git reference under `refs/`, such as `heads/benchmark-history`.
///
/// Accepts `refs/heads/x` or `heads/x` and stores the short form, which is
/// what the ref endpoints take in their path; [`RefName::full`] gives the
/// `refs/…` form that creating a ref takes in its body. The rules are the
/// part of `git check-ref-format` that matters for addressing: at least two
/// components, no empty, `.`-leading or `.lock` components, no `..`, `@{`,
/// whitespace, control characters or any of `~^:?*[\`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RefName(String);

impl RefName {
    /// Validates a ref name.
    pub fn new(name: &str) -> Result<Self, GitHubError> {
        let short = name.strip_prefix("refs/").unwrap_or(name);
        let bad = |reason| Err(invalid("ref name", name, reason));
        if short.split('/').count() < 2 {
            return bad("must have a namespace, as in heads/<branch>");
        }
        if short.contains("..") || short.contains("@{") {
            return bad("must not contain '..' or '@{'");
        }
        if short
            .chars()
            .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c))
        {
            return bad("must not contain whitespace, control characters or any of ~^:?*[\\");
        }
        for part in short.split('/') {
            if part.is_empty() || part.starts_with('.') || part.ends_with(".lock") {
                return bad("components must be non-empty, not start with '.', not end in .lock");
            }
        }
        if short.ends_with('.') {
            return bad("must not end with '.'");
        }
        Ok(RefName(short.to_owned()))
    }

    /// A branch: `heads/<branch>`.
    pub fn branch(branch: &str) -> Result<Self, GitHubError> {
        Self::new(&format!("heads/{branch}"))
    }

    /// The short form, `heads/…`.
    pub fn short(&self) -> &str {
        &self.0
    }

    /// The full form, `refs/heads/…`.
    pub fn full(&self) -> String {
        format!("refs/{}", self.0)
    }

    /// The short form with each component percent-encoded, for paths.
    pub(crate) fn path(&self) -> String {
        self.0
            .split('/')
            .map(encode_component)
            .collect::<Vec<_>>()
            .join("/")
    }
}

impl fmt::Display for RefName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Validates a ref prefix for `matching-refs` (`heads/benchmark-result/`)
/// and returns it in the short form (without `refs/`) with each component
/// percent-encoded, the trailing `/` kept. The rules are those of
/// [`RefName`] except that one component is enough and a trailing `/` is
/// allowed (it limits the match to refs under that directory).
pub(crate) fn ref_prefix_path(prefix: &str) -> Result<String, GitHubError> {
    let short = prefix.strip_prefix("refs/").unwrap_or(prefix);
    let bad = |reason| Err(invalid("ref prefix", prefix, reason));
    let body = short.strip_suffix('/').unwrap_or(short);
    if body.is_empty() {
        return bad("must name at least one component, as in heads/");
    }
    if body.contains("..") || body.contains("@{") {
        return bad("must not contain '..' or '@{'");
    }
    if body
        .chars()
        .any(|c| c.is_control() || c.is_whitespace() || "~^:?*[\\".contains(c))
    {
        return bad("must not contain whitespace, control characters or any of ~^:?*[\\");
    }
    if body
        .split('/')
        .any(|part| part.is_empty() || part.starts_with('.'))
    {
        return bad("components must be non-empty and not start with '.'");
    }
    let mut path = encode_path(body);
    if short.ends_with('/') {
        path.push('/');
    }
    Ok(path)
}

/// A git object id: 40 (SHA-1) or 64 (SHA-256) lowercase hex digits.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct GitSha(String);

impl GitSha {
    /// Validates an object id.
    pub fn new(hex: &str) -> Result<Self, GitHubError> {
        if (hex.len() == 40 || hex.len() == 64)
            && hex.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        {
            Ok(GitSha(hex.to_owned()))
        } else {
            Err(invalid(
                "git object id",
                hex,
                "must be 40 or 64 lowercase hex digits",
            ))
        }
    }

    /// The hex digits.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl TryFrom<String> for GitSha {
    type Error = GitHubError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        GitSha::new(&s)
    }
}

impl From<GitSha> for String {
    fn from(s: GitSha) -> String {
        s.0
    }
}

impl fmt::Display for GitSha {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Checks a path inside a repository (`records/ab.json`): relative, no
/// empty, `.` or `..` components, no control characters, no `.git`.
pub(crate) fn check_repo_path(path: &str) -> Result<(), GitHubError> {
    let bad = |reason| Err(invalid("repository path", path, reason));
    if path.is_empty() || path.len() > 4096 {
        return bad("must be 1 to 4096 bytes");
    }
    if path.chars().any(char::is_control) {
        return bad("must not contain control characters");
    }
    for part in path.split('/') {
        if part.is_empty() || part == "." || part == ".." {
            return bad("must be relative, without empty, '.' or '..' components");
        }
        if part.eq_ignore_ascii_case(".git") {
            return bad("must not contain a .git component");
        }
    }
    Ok(())
}

/// A repository path with each component percent-encoded.
pub(crate) fn encode_path(path: &str) -> String {
    path.split('/')
        .map(encode_component)
        .collect::<Vec<_>>()
        .join("/")
}

/// Percent-encodes everything but RFC 3986 unreserved characters, so the
/// result is safe as one path segment or one query value.
pub(crate) fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Checks a revision given to a read (`heads/main`, a branch or a sha):
/// non-empty, no whitespace or control characters. It is sent encoded as
/// one query value.
pub(crate) fn check_revision(rev: &str) -> Result<(), GitHubError> {
    if rev.is_empty() || rev.len() > 1024 {
        return Err(invalid("revision", rev, "must be 1 to 1024 bytes"));
    }
    if rev.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(invalid(
            "revision",
            rev,
            "must not contain whitespace or control characters",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn repos_are_path_safe() {
        let r = Repo::parse("bench-ops/history.data").expect("valid");
        assert_eq!(r.api_path(), "/repos/bench-ops/history.data");
        for bad in ["a", "a/", "/b", "a/..", "a/b/c", "a/b c", "a/b%2F", "../x"] {
            assert!(Repo::parse(bad).is_err(), "{bad} must be rejected");
        }
    }

    #[test]
    fn ref_names_normalise_and_reject_unsafe_forms() {
        let r = RefName::new("refs/heads/benchmark-history").expect("valid");
        assert_eq!(r.short(), "heads/benchmark-history");
        assert_eq!(r.full(), "refs/heads/benchmark-history");
        assert_eq!(RefName::branch("a/b").expect("valid").short(), "heads/a/b");
        for bad in [
            "main",
            "heads/",
            "heads//x",
            "heads/../x",
            "heads/x.lock",
            "heads/.x",
            "heads/a b",
            "heads/a~1",
            "heads/a@{1}",
            "heads/x.",
            "heads/a?b",
        ] {
            assert!(RefName::new(bad).is_err(), "{bad} must be rejected");
        }
        assert_eq!(
            RefName::new("heads/a+b#c").expect("valid").path(),
            "heads/a%2Bb%23c"
        );
    }

    #[test]
    fn ref_prefixes() {
        assert_eq!(
            ref_prefix_path("heads/benchmark-result/").expect("valid"),
            "heads/benchmark-result/"
        );
        assert!(ref_prefix_path("refs/heads/a b/").is_err());
        assert_eq!(ref_prefix_path("refs/tags").expect("valid"), "tags");
        assert_eq!(
            ref_prefix_path("heads/a+b/").expect("valid"),
            "heads/a%2Bb/"
        );
        for bad in [
            "",
            "/",
            "refs/",
            "heads//x/",
            "heads/../x",
            "heads/.x",
            "heads/x?",
        ] {
            assert!(ref_prefix_path(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn shas_are_strict() {
        assert!(GitSha::new(&"a".repeat(40)).is_ok());
        assert!(GitSha::new(&"0".repeat(64)).is_ok());
        assert!(GitSha::new(&"A".repeat(40)).is_err());
        assert!(GitSha::new(&"a".repeat(41)).is_err());
        let parsed: Result<GitSha, _> = serde_json::from_str("\"xyz\"");
        assert!(parsed.is_err());
    }

    #[test]
    fn repository_paths() {
        assert!(check_repo_path("records/ab.json").is_ok());
        for bad in [
            "",
            "/a",
            "a/",
            "a//b",
            "a/../b",
            "./a",
            ".git/config",
            "a/.GIT/x",
            "a\nb",
        ] {
            assert!(check_repo_path(bad).is_err(), "{bad:?} must be rejected");
        }
        assert_eq!(encode_path("dir name/a+b.json"), "dir%20name/a%2Bb.json");
        assert_eq!(encode_component("heads/main"), "heads%2Fmain");
    }
}
