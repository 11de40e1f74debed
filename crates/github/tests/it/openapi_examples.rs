//! GitHub's own response examples (from the vendored OpenAPI description)
//! deserialize into this crate's response types: the types accept what
//! GitHub documents, not only what the simulator sends.

use benchops_github::{App, Comment, Commit, GitRef, Installation, Issue, IssueLabel, Tree};
use benchops_testkit::openapi::response_examples;
use serde::de::DeserializeOwned;

fn check<T: DeserializeOwned>(method: &str, template: &str, what: &str) -> usize {
    let examples: Vec<_> = response_examples(method, template)
        .into_iter()
        .filter(|e| e.status.is_some_and(|s| (200..300).contains(&s)))
        .collect();
    assert!(
        !examples.is_empty(),
        "{method} {template} has no 2xx example"
    );
    for e in &examples {
        // List endpoints document an array of the item.
        let result = if e.value.is_array() {
            serde_json::from_value::<Vec<T>>(e.value.clone()).map(|_| ())
        } else {
            serde_json::from_value::<T>(e.value.clone()).map(|_| ())
        };
        if let Err(err) = result {
            panic!(
                "{method} {template} example {:?} does not fit {what}: {err}",
                e.name
            );
        }
    }
    examples.len()
}

#[test]
fn documented_examples_deserialize_into_the_client_types() {
    let mut n = 0;
    n += check::<GitRef>("GET", "/repos/{owner}/{repo}/git/ref/{ref}", "GitRef");
    n += check::<GitRef>("POST", "/repos/{owner}/{repo}/git/refs", "GitRef");
    n += check::<GitRef>("PATCH", "/repos/{owner}/{repo}/git/refs/{ref}", "GitRef");
    n += check::<Tree>("POST", "/repos/{owner}/{repo}/git/trees", "Tree");
    n += check::<Tree>("GET", "/repos/{owner}/{repo}/git/trees/{tree_sha}", "Tree");
    n += check::<Commit>("POST", "/repos/{owner}/{repo}/git/commits", "Commit");
    n += check::<Commit>(
        "GET",
        "/repos/{owner}/{repo}/git/commits/{commit_sha}",
        "Commit",
    );
    n += check::<Issue>("POST", "/repos/{owner}/{repo}/issues", "Issue");
    n += check::<Issue>("GET", "/repos/{owner}/{repo}/issues", "Issue");
    n += check::<Issue>(
        "PATCH",
        "/repos/{owner}/{repo}/issues/{issue_number}",
        "Issue",
    );
    n += check::<Comment>(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        "Comment",
    );
    n += check::<Comment>(
        "GET",
        "/repos/{owner}/{repo}/issues/{issue_number}/comments",
        "Comment",
    );
    n += check::<IssueLabel>(
        "POST",
        "/repos/{owner}/{repo}/issues/{issue_number}/labels",
        "IssueLabel",
    );
    n += check::<Installation>("GET", "/repos/{owner}/{repo}/installation", "Installation");
    n += check::<GitRef>(
        "GET",
        "/repos/{owner}/{repo}/git/matching-refs/{ref}",
        "GitRef",
    );
    n += check::<App>("GET", "/app", "App");
    assert!(n >= 16, "{n} examples checked");
}
