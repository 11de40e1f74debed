//! Object ids from the simulator equal what the git CLI computes for the
//! same content.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use reqwest::Method;
use serde_json::json;

use crate::env;

fn git(dir: &Path, args: &[&str], stdin: Option<&[u8]>, envs: &[(&str, &str)]) -> String {
    let mut cmd = Command::new("git");
    cmd.current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .stdin(if stdin.is_some() {
            Stdio::piped()
        } else {
            Stdio::null()
        })
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().expect("git runs (the git CLI is required)");
    if let Some(input) = stdin {
        child
            .stdin
            .take()
            .expect("stdin piped")
            .write_all(input)
            .expect("write to git");
    }
    let out = child.wait_with_output().expect("git finishes");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .expect("git prints UTF-8")
        .trim()
        .to_owned()
}

#[tokio::test]
async fn blob_tree_and_commit_ids_match_the_git_cli() {
    let e = env().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    git(d, &["init", "-q"], None, &[]);

    // Blobs, including bytes that are not valid UTF-8 through the base64
    // encoding of the blobs API.
    let text = "{\"median\": 1.5}\n";
    let blob = e
        .call(
            Method::POST,
            &e.repo_path("/git/blobs"),
            Some(json!({"content": text, "encoding": "utf-8"})),
        )
        .await;
    assert_eq!(blob.status, 201);
    let git_blob = git(
        d,
        &["hash-object", "--stdin", "-w"],
        Some(text.as_bytes()),
        &[],
    );
    assert_eq!(blob.body["sha"], git_blob.as_str());

    let binary = [0u8, 159, 146, 150, 255, 10];
    let bin_blob = e
        .call(
            Method::POST,
            &e.repo_path("/git/blobs"),
            Some(json!({"content": "AJ+Slv8K", "encoding": "base64"})),
        )
        .await;
    assert_eq!(
        bin_blob.body["sha"],
        git(d, &["hash-object", "--stdin", "-w"], Some(&binary), &[]).as_str()
    );

    // A flat tree: inline content entries and a sha entry, in an order git
    // must re-sort (`a-b`, `a.json`, then the directory `a`).
    let sub = e
        .call(
            Method::POST,
            &e.repo_path("/git/trees"),
            Some(json!({"tree": [{"path": "inner.txt", "mode": "100644", "type": "blob", "content": "inner\n"}]})),
        )
        .await;
    assert_eq!(sub.status, 201);
    let sub_sha = sub.body["sha"].as_str().expect("sha").to_owned();
    let inner_blob = git(d, &["hash-object", "--stdin", "-w"], Some(b"inner\n"), &[]);
    let git_sub = git(
        d,
        &["mktree"],
        Some(format!("100644 blob {inner_blob}\tinner.txt\n").as_bytes()),
        &[],
    );
    assert_eq!(sub_sha, git_sub);

    let flat = e
        .call(
            Method::POST,
            &e.repo_path("/git/trees"),
            Some(json!({"tree": [
                {"path": "a", "mode": "040000", "type": "tree", "sha": sub_sha},
                {"path": "a.json", "mode": "100644", "type": "blob", "content": text},
                {"path": "a-b", "mode": "100755", "type": "blob", "sha": git_blob},
            ]})),
        )
        .await;
    assert_eq!(flat.status, 201, "{:?}", flat.body);
    let listing = format!(
        "040000 tree {git_sub}\ta\n100644 blob {git_blob}\ta.json\n100755 blob {git_blob}\ta-b\n"
    );
    let git_flat = git(d, &["mktree"], Some(listing.as_bytes()), &[]);
    assert_eq!(flat.body["sha"], git_flat.as_str());
    let names: Vec<&str> = flat.body["tree"]
        .as_array()
        .expect("tree entries")
        .iter()
        .map(|t| t["path"].as_str().expect("path"))
        .collect();
    assert_eq!(names, ["a-b", "a.json", "a"], "git order");

    // Nested paths over a base tree create subtrees like the index does.
    let nested = e
        .call(
            Method::POST,
            &e.repo_path("/git/trees"),
            Some(json!({
                "base_tree": git_flat,
                "tree": [
                    {"path": "results/lane/2026/11/x.json", "mode": "100644", "type": "blob", "content": text},
                    {"path": "a/deeper/y.txt", "mode": "100644", "type": "blob", "content": "inner\n"},
                ],
            })),
        )
        .await;
    assert_eq!(nested.status, 201, "{:?}", nested.body);
    git(d, &["read-tree", &git_flat], None, &[]);
    for (path, sha) in [
        ("results/lane/2026/11/x.json", &git_blob),
        ("a/deeper/y.txt", &inner_blob),
    ] {
        git(
            d,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("100644,{sha},{path}"),
            ],
            None,
            &[],
        );
    }
    let git_nested = git(d, &["write-tree"], None, &[]);
    assert_eq!(nested.body["sha"], git_nested.as_str());

    // A root commit and a child commit with explicit authors and offsets.
    let author_env = [
        ("GIT_AUTHOR_NAME", "Bench Bot"),
        ("GIT_AUTHOR_EMAIL", "bench@example.com"),
        ("GIT_AUTHOR_DATE", "1793700000 +0200"),
        ("GIT_COMMITTER_NAME", "Publisher"),
        ("GIT_COMMITTER_EMAIL", "publisher@example.com"),
        ("GIT_COMMITTER_DATE", "1793703600 -0530"),
    ];
    let msg_path = d.join("msg");
    std::fs::write(&msg_path, "benchmark results\n\nlane nightly\n").expect("write message");
    let msg = msg_path.to_str().expect("utf-8 path");
    let git_root = git(d, &["commit-tree", &git_flat, "-F", msg], None, &author_env);
    let git_child = git(
        d,
        &["commit-tree", &git_nested, "-p", &git_root, "-F", msg],
        None,
        &author_env,
    );
    let commit = |tree: &str, parents: Vec<&str>| {
        json!({
            "message": "benchmark results\n\nlane nightly\n",
            "tree": tree,
            "parents": parents,
            "author": {"name": "Bench Bot", "email": "bench@example.com", "date": "2026-11-03T12:00:00+02:00"},
            "committer": {"name": "Publisher", "email": "publisher@example.com", "date": "2026-11-03T05:30:00-05:30"},
        })
    };
    let root = e
        .call(
            Method::POST,
            &e.repo_path("/git/commits"),
            Some(commit(&git_flat, vec![])),
        )
        .await;
    assert_eq!(root.status, 201, "{:?}", root.body);
    assert_eq!(root.body["sha"], git_root.as_str());
    assert_eq!(root.body["author"]["date"], "2026-11-03T12:00:00+02:00");
    let child = e
        .call(
            Method::POST,
            &e.repo_path("/git/commits"),
            Some(commit(&git_nested, vec![&git_root])),
        )
        .await;
    assert_eq!(child.body["sha"], git_child.as_str());
    assert_eq!(child.body["parents"][0]["sha"], git_root.as_str());

    // The simulator's own object bytes agree with `git cat-file`.
    let stored = e
        .sim
        .commit(crate::OWNER, crate::REPO, &git_child)
        .expect("commit stored");
    assert_eq!(stored.tree, git_nested);
    assert_eq!(
        git(d, &["cat-file", "-p", &git_child], None, &[]),
        String::from_utf8(
            benchops_testkit::sim::git::Object::Commit(stored)
                .body()
                .clone()
        )
        .expect("utf-8")
        .trim()
    );
}
