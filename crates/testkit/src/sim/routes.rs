//! The operations the simulator serves, named as in GitHub's OpenAPI
//! description, and a matcher from a raw request path to its operation.

/// One served operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    /// HTTP method, upper case.
    pub method: &'static str,
    /// OpenAPI path template.
    pub template: &'static str,
    /// OpenAPI `operationId`.
    pub id: &'static str,
    /// GitHub's documentation page, sent back in error bodies.
    pub docs: &'static str,
}

const fn op(
    method: &'static str,
    template: &'static str,
    id: &'static str,
    docs: &'static str,
) -> Operation {
    Operation {
        method,
        template,
        id,
        docs,
    }
}

/// Every operation the simulator serves. `openapi/extract.py` keeps the
/// same list; `tests/openapi_contract.rs` checks both agree.
pub const OPERATIONS: &[Operation] = &[
    op(
        "POST",
        "/repos/{owner}/{repo}/git/blobs",
        "git/create-blob",
        "https://docs.github.com/rest/git/blobs#create-a-blob",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/git/blobs/{file_sha}",
        "git/get-blob",
        "https://docs.github.com/rest/git/blobs#get-a-blob",
    ),
    op(
        "POST",
        "/repos/{owner}/{repo}/git/trees",
        "git/create-tree",
        "https://docs.github.com/rest/git/trees#create-a-tree",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/git/trees/{tree_sha}",
        "git/get-tree",
        "https://docs.github.com/rest/git/trees#get-a-tree",
    ),
    op(
        "POST",
        "/repos/{owner}/{repo}/git/commits",
        "git/create-commit",
        "https://docs.github.com/rest/git/commits#create-a-commit",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/git/commits/{commit_sha}",
        "git/get-commit",
        "https://docs.github.com/rest/git/commits#get-a-commit-object",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/git/ref/{ref}",
        "git/get-ref",
        "https://docs.github.com/rest/git/refs#get-a-reference",
    ),
    op(
        "POST",
        "/repos/{owner}/{repo}/git/refs",
        "git/create-ref",
        "https://docs.github.com/rest/git/refs#create-a-reference",
    ),
    op(
        "PATCH",
        "/repos/{owner}/{repo}/git/refs/{ref}",
        "git/update-ref",
        "https://docs.github.com/rest/git/refs#update-a-reference",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/git/matching-refs/{ref}",
        "git/list-matching-refs",
        "https://docs.github.com/rest/git/refs#list-matching-references",
    ),
    op(
        "DELETE",
        "/repos/{owner}/{repo}/git/refs/{ref}",
        "git/delete-ref",
        "https://docs.github.com/rest/git/refs#delete-a-reference",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/contents/{path}",
        "repos/get-content",
        "https://docs.github.com/rest/repos/contents#get-repository-content",
    ),
    op(
        "PUT",
        "/repos/{owner}/{repo}/contents/{path}",
        "repos/create-or-update-file-contents",
        "https://docs.github.com/rest/repos/contents#create-or-update-file-contents",
    ),
    op(
        "DELETE",
        "/repos/{owner}/{repo}/contents/{path}",
        "repos/delete-file",
        "https://docs.github.com/rest/repos/contents#delete-a-file",
    ),
    #[cfg(feature = "platform")]
    op(
        "POST",
        "/repos/{owner}/{repo}/pulls",
        "pulls/create",
        "https://docs.github.com/rest/pulls/pulls#create-a-pull-request",
    ),
    #[cfg(feature = "platform")]
    op(
        "GET",
        "/repos/{owner}/{repo}/pulls/{pull_number}",
        "pulls/get",
        "https://docs.github.com/rest/pulls/pulls#get-a-pull-request",
    ),
    #[cfg(feature = "platform")]
    op(
        "PUT",
        "/repos/{owner}/{repo}/pulls/{pull_number}/merge",
        "pulls/merge",
        "https://docs.github.com/rest/pulls/pulls#merge-a-pull-request",
    ),
    #[cfg(feature = "platform")]
    op(
        "POST",
        "/repos/{owner}/{repo}/statuses/{sha}",
        "repos/create-commit-status",
        "https://docs.github.com/rest/commits/statuses#create-a-commit-status",
    ),
    #[cfg(feature = "platform")]
    op(
        "GET",
        "/repos/{owner}/{repo}/commits/{ref}/status",
        "repos/get-combined-status-for-ref",
        "https://docs.github.com/rest/commits/statuses#get-the-combined-status-for-a-specific-reference",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/issues",
        "issues/list-for-repo",
        "https://docs.github.com/rest/issues/issues#list-repository-issues",
    ),
    op(
        "POST",
        "/repos/{owner}/{repo}/issues",
        "issues/create",
        "https://docs.github.com/rest/issues/issues#create-an-issue",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        "issues/get",
        "https://docs.github.com/rest/issues/issues#get-an-issue",
    ),
    op(
        "PATCH",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        "issues/update",
        "https://docs.github.com/rest/issues/issues#update-an-issue",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        "issues/list-comments",
        "https://docs.github.com/rest/issues/comments#list-issue-comments",
    ),
    op(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        "issues/create-comment",
        "https://docs.github.com/rest/issues/comments#create-an-issue-comment",
    ),
    op(
        "DELETE",
        "/repos/{owner}/{repo}/issues/comments/{comment_id}",
        "issues/delete-comment",
        "https://docs.github.com/rest/issues/comments#delete-an-issue-comment",
    ),
    op(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        "issues/add-labels",
        "https://docs.github.com/rest/issues/labels#add-labels-to-an-issue",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/labels",
        "issues/list-labels-for-repo",
        "https://docs.github.com/rest/issues/labels#list-labels-for-a-repository",
    ),
    op(
        "POST",
        "/repos/{owner}/{repo}/labels",
        "issues/create-label",
        "https://docs.github.com/rest/issues/labels#create-a-label",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/labels/{name}",
        "issues/get-label",
        "https://docs.github.com/rest/issues/labels#get-a-label",
    ),
    op(
        "GET",
        "/app",
        "apps/get-authenticated",
        "https://docs.github.com/rest/apps/apps#get-the-authenticated-app",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/installation",
        "apps/get-repo-installation",
        "https://docs.github.com/rest/apps/apps#get-a-repository-installation-for-the-authenticated-app",
    ),
    op(
        "POST",
        "/app/installations/{installation_id}/access_tokens",
        "apps/create-installation-access-token",
        "https://docs.github.com/rest/apps/apps#create-an-installation-access-token-for-an-app",
    ),
    op(
        "DELETE",
        "/installation/token",
        "apps/revoke-installation-access-token",
        "https://docs.github.com/rest/apps/installations#revoke-an-installation-access-token",
    ),
    op(
        "GET",
        "/rate_limit",
        "rate-limit/get",
        "https://docs.github.com/rest/rate-limit/rate-limit#get-rate-limit-status-for-the-authenticated-user",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}",
        "repos/get",
        "https://docs.github.com/rest/repos/repos#get-a-repository",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/environments/{environment_name}",
        "repos/get-environment",
        "https://docs.github.com/rest/deployments/environments#get-an-environment",
    ),
    op(
        "PUT",
        "/repos/{owner}/{repo}/environments/{environment_name}",
        "repos/create-or-update-environment",
        "https://docs.github.com/rest/deployments/environments#create-or-update-an-environment",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/environments/{environment_name}/deployment-branch-policies",
        "repos/list-deployment-branch-policies",
        "https://docs.github.com/rest/deployments/branch-policies#list-deployment-branch-policies",
    ),
    op(
        "POST",
        "/repos/{owner}/{repo}/environments/{environment_name}/deployment-branch-policies",
        "repos/create-deployment-branch-policy",
        "https://docs.github.com/rest/deployments/branch-policies#create-a-deployment-branch-policy",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/environments/{environment_name}/deployment-branch-policies/{branch_policy_id}",
        "repos/get-deployment-branch-policy",
        "https://docs.github.com/rest/deployments/branch-policies#get-a-deployment-branch-policy",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/rulesets",
        "repos/get-repo-rulesets",
        "https://docs.github.com/rest/repos/rules#get-all-repository-rulesets",
    ),
    op(
        "POST",
        "/repos/{owner}/{repo}/rulesets",
        "repos/create-repo-ruleset",
        "https://docs.github.com/rest/repos/rules#create-a-repository-ruleset",
    ),
    op(
        "GET",
        "/repos/{owner}/{repo}/rulesets/{ruleset_id}",
        "repos/get-repo-ruleset",
        "https://docs.github.com/rest/repos/rules#get-a-repository-ruleset",
    ),
];

/// Parameters that may span several path segments (refs and file paths).
const MULTI_SEGMENT: &[&str] = &["{ref}", "{path}"];

/// The operation a request goes to, from its method and raw path.
pub fn match_route(method: &str, path: &str) -> Option<&'static Operation> {
    let segments: Vec<&str> = path.trim_end_matches('/').split('/').collect();
    OPERATIONS
        .iter()
        .find(|op| op.method.eq_ignore_ascii_case(method) && matches(op.template, &segments))
}

/// Whether path segments fit a template. A multi-segment parameter takes
/// one or more non-empty segments: all the rest when it ends the template,
/// else as many as leave the template's fixed tail
/// (`/commits/{ref}/status`).
fn matches(template: &str, segments: &[&str]) -> bool {
    let tpl: Vec<&str> = template.split('/').collect();
    for (i, t) in tpl.iter().enumerate() {
        if MULTI_SEGMENT.contains(t) {
            let tail = &tpl[i + 1..];
            if segments.len() < i + 1 + tail.len() {
                return false;
            }
            let split = segments.len() - tail.len();
            return segments[i..split].iter().all(|s| !s.is_empty())
                && segments[split..].iter().zip(tail).all(|(s, t)| s == t);
        }
        let Some(s) = segments.get(i) else {
            return false;
        };
        let is_param = t.starts_with('{');
        if (is_param && s.is_empty()) || (!is_param && t != s) {
            return false;
        }
    }
    segments.len() == tpl.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_paths_find_their_operation() {
        let id = |m, p| match_route(m, p).map(|o| o.id);
        assert_eq!(
            id("GET", "/repos/o/r/git/ref/heads/benchmark-history"),
            Some("git/get-ref")
        );
        assert_eq!(
            id("PATCH", "/repos/o/r/git/refs/heads/a/b"),
            Some("git/update-ref")
        );
        assert_eq!(id("POST", "/repos/o/r/git/refs"), Some("git/create-ref"));
        assert_eq!(
            id("GET", "/repos/o/r/contents/results/x.json"),
            Some("repos/get-content")
        );
        assert_eq!(id("GET", "/repos/o/r/issues/7"), Some("issues/get"));
        assert_eq!(
            id("POST", "/repos/o/r/issues/7/comments"),
            Some("issues/create-comment")
        );
        assert_eq!(
            id("GET", "/repos/o/r/labels/perf%20drift"),
            Some("issues/get-label")
        );
        assert_eq!(
            id("DELETE", "/installation/token"),
            Some("apps/revoke-installation-access-token")
        );
        assert_eq!(
            id(
                "GET",
                "/repos/o/r/git/matching-refs/heads/benchmark-result/"
            ),
            Some("git/list-matching-refs")
        );
        assert_eq!(
            id("DELETE", "/repos/o/r/git/refs/heads/benchmark-result/x"),
            Some("git/delete-ref")
        );
        assert_eq!(
            id("POST", "/repos/o/r/issues/7/labels"),
            Some("issues/add-labels")
        );
        assert_eq!(
            id("DELETE", "/repos/o/r/issues/comments/42"),
            Some("issues/delete-comment")
        );
        assert_eq!(id("GET", "/app"), Some("apps/get-authenticated"));
        assert_eq!(id("GET", "/repos/o/r"), Some("repos/get"));
        assert_eq!(id("GET", "/repos/o/r/"), Some("repos/get"));
        assert_eq!(
            id("GET", "/repos/o/r/environments/benchmark-publish"),
            Some("repos/get-environment")
        );
        assert_eq!(
            id("PUT", "/repos/o/r/environments/release%2Fprod"),
            Some("repos/create-or-update-environment")
        );
        let policies = "/repos/o/r/environments/publish/deployment-branch-policies";
        assert_eq!(
            id("GET", policies),
            Some("repos/list-deployment-branch-policies")
        );
        assert_eq!(
            id("POST", policies),
            Some("repos/create-deployment-branch-policy")
        );
        assert_eq!(
            id(
                "GET",
                "/repos/o/r/environments/publish/deployment-branch-policies/361471"
            ),
            Some("repos/get-deployment-branch-policy")
        );
        assert_eq!(
            id("GET", "/repos/o/r/rulesets"),
            Some("repos/get-repo-rulesets")
        );
        assert_eq!(
            id("POST", "/repos/o/r/rulesets"),
            Some("repos/create-repo-ruleset")
        );
        assert_eq!(
            id("GET", "/repos/o/r/rulesets/42"),
            Some("repos/get-repo-ruleset")
        );
        assert_eq!(
            id("PUT", "/repos/o/r/contents/results/x.json"),
            Some("repos/create-or-update-file-contents")
        );
        assert_eq!(
            id("DELETE", "/repos/o/r/contents/x.json"),
            Some("repos/delete-file")
        );
        // The pull-request slice (the `platform` feature).
        if cfg!(feature = "platform") {
            assert_eq!(id("POST", "/repos/o/r/pulls"), Some("pulls/create"));
            assert_eq!(id("GET", "/repos/o/r/pulls/3"), Some("pulls/get"));
            assert_eq!(id("PUT", "/repos/o/r/pulls/3/merge"), Some("pulls/merge"));
            assert_eq!(
                id("POST", "/repos/o/r/statuses/abc123"),
                Some("repos/create-commit-status")
            );
            assert_eq!(
                id("GET", "/repos/o/r/commits/main/status"),
                Some("repos/get-combined-status-for-ref")
            );
            assert_eq!(
                id("GET", "/repos/o/r/commits/feature/x/status"),
                Some("repos/get-combined-status-for-ref")
            );
        }
        assert_eq!(id("GET", "/repos/o/r/commits/status"), None);
        assert_eq!(id("GET", "/repos/o/r/commits/main/statuses"), None);
        assert_eq!(id("GET", "/repos/o/r/pulls/3/merge"), None);
        assert_eq!(id("PUT", "/repos/o/r/rulesets/42"), None);
        assert_eq!(id("GET", "/repos/o/r/environments"), None);
        assert_eq!(id("DELETE", "/repos/o/r"), None);
        assert_eq!(id("PUT", "/repos/o/r/issues/7"), None);
        assert_eq!(id("GET", "/repos/o/r/git/ref/"), None);
        assert_eq!(id("GET", "/repos/o/r/issues/7/comments/x"), None);
    }
}
