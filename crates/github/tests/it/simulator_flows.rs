//! The real client against the real GitHub simulator (`benchops-testkit`),
//! over loopback HTTP, with no mocks: the App flow and a fast-forward
//! publication, losing a race on the ref, permission enforcement on both
//! sides (the client's phase check and the simulator's 403), issues with
//! pagination, and the fault plan (5xx, secondary rate limits, dropped
//! connections). Every flow ends with a contract check: each request body
//! the client built validates against GitHub's OpenAPI description, and no
//! log entry carries a credential.
//!
//! Time is a `ManualClock` that is also the sleeper, started at the
//! simulator's clock, so every wait is instant and recorded.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use benchops_github::{
    AppId, AppKey, CommentDeletion, GitHubClient, GitHubError, GitSha, HandoffContent,
    InstallationToken, IssueState, IssueUpdate, LabelOutcome, LabelSpec, ManualClock, NewIssue,
    Phase, RefDeletion, RefName, Repo, StateFilter, StateReason, TreeFile,
};
use benchops_testkit::GitHubSim;
use benchops_testkit::openapi;
use benchops_testkit::sim::auth::TEST_APP_PRIVATE_KEY_PEM;
use benchops_testkit::sim::{AuthKind, Fault, FaultRule, LoggedRequest};
use serde_json::json;

const OWNER: &str = "acme";
const NAME: &str = "bench";

/// A simulator with `acme/bench`, and a client pointed at it.
struct Env {
    sim: GitHubSim,
    clock: ManualClock,
    client: GitHubClient,
    repo: Repo,
}

impl Env {
    /// `acme/bench` with one commit on `main` (a README).
    async fn new() -> Env {
        let sim = GitHubSim::start().await;
        sim.create_repo(OWNER, NAME);
        Env::with_sim(sim)
    }

    /// `acme/bench` without any commit or ref.
    async fn empty() -> Env {
        let sim = GitHubSim::start().await;
        sim.create_empty_repo(OWNER, NAME);
        Env::with_sim(sim)
    }

    fn with_sim(sim: GitHubSim) -> Env {
        let start = u64::try_from(sim.now()).expect("the simulator's clock is after 1970");
        let clock = ManualClock::at_unix(start);
        let client = GitHubClient::builder()
            .base_url(sim.base_url())
            .clock(Arc::new(clock.clone()))
            .sleeper(Arc::new(clock.clone()))
            .jitter_seed(7)
            .timeout(Duration::from_secs(5))
            .build()
            .expect("client builds");
        Env {
            sim,
            clock,
            client,
            repo: Repo::new(OWNER, NAME).expect("valid repo"),
        }
    }

    fn app_key(&self) -> AppKey {
        AppKey::from_pem(
            AppId::new(self.sim.app_id()),
            TEST_APP_PRIVATE_KEY_PEM.as_bytes(),
        )
        .expect("the simulator's test key parses")
    }

    /// An installation token for `phase`, through the real App flow (App
    /// JWT, installation lookup, token minting). Call it before anything
    /// sleeps on the manual clock, so the JWT's `iat` matches the
    /// simulator's clock.
    async fn token(&self, phase: Phase) -> InstallationToken {
        let app = self.client.app(self.app_key());
        let installation = app
            .repo_installation(&self.repo)
            .await
            .expect("the App is installed on acme");
        app.create_installation_token(installation.id, phase, std::slice::from_ref(&self.repo))
            .await
            .expect("an installation token")
    }

    fn ref_sha(&self, branch: &str) -> String {
        self.sim
            .ref_sha(OWNER, NAME, &format!("heads/{branch}"))
            .expect("the ref exists")
    }

    /// Log entries routed to an OpenAPI operation id.
    fn logged(&self, operation: &str) -> Vec<LoggedRequest> {
        self.sim
            .requests()
            .into_iter()
            .filter(|e| e.operation == Some(operation))
            .collect()
    }

    /// The contract check every flow ends with: every request was routed
    /// to a served operation, sent with `Bearer`, never forced a ref; every
    /// body validates against GitHub's OpenAPI description; and the log
    /// holds no credential (neither `secrets` nor anything shaped like an
    /// installation token or a JWT).
    fn assert_contract(&self, secrets: &[&InstallationToken]) {
        let log = self.sim.requests();
        assert!(!log.is_empty(), "the flow sent requests");
        let mut violations = Vec::new();
        let mut bodies = 0;
        for entry in &log {
            assert!(
                entry.route.is_some() && entry.operation.is_some(),
                "a request to an operation the simulator does not serve: {entry:?}"
            );
            assert_eq!(entry.auth_scheme.as_deref(), Some("Bearer"), "{entry:?}");
            if let Some(body) = &entry.body {
                bodies += 1;
                assert_ne!(body.get("force"), Some(&json!(true)), "{entry:?}");
            }
            if let Err(e) = openapi::validate_logged_request(entry) {
                violations.push(format!("#{} {e}", entry.seq));
            }
        }
        assert!(bodies > 0, "the flow sent request bodies to validate");
        assert!(
            violations.is_empty(),
            "request bodies violate GitHub's OpenAPI description:\n{}",
            violations.join("\n")
        );
        let shown = format!("{log:?}");
        for t in secrets {
            let secret = t.token.expose();
            assert!(!secret.is_empty());
            assert!(
                !shown.contains(secret),
                "the request log shows a token value"
            );
        }
        assert!(!shown.contains("ghs_"), "the request log shows a token");
        // Every JWT starts with the base64 of `{"`.
        assert!(!shown.contains("eyJ"), "the request log shows a JWT");
    }
}

fn branch(name: &str) -> RefName {
    RefName::branch(name).expect("valid branch")
}

fn file(path: &str, content: &str) -> TreeFile {
    TreeFile {
        path: path.to_owned(),
        content: content.to_owned(),
    }
}

fn sha(s: &str) -> GitSha {
    GitSha::new(s).expect("a sha")
}

/// The commits from `tip` back along first parents.
fn history(sim: &GitHubSim, tip: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut next = Some(tip.to_owned());
    while let Some(c) = next {
        let commit = sim
            .commit(OWNER, NAME, &c)
            .expect("a commit in the history");
        next = commit.parents.first().cloned();
        out.push(c);
    }
    out
}

// ---- the git CLI as the reference for object ids ---------------------------

fn git(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> String {
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

/// What git computes for a tree holding `files` (mode 100644): the blob id
/// of each path, the root tree id, and `git ls-tree -r -t` as
/// `(mode, type, sha, path)`.
struct GitReference {
    blobs: BTreeMap<String, String>,
    root: String,
    listing: Vec<(String, String, String, String)>,
}

fn git_reference(files: &[TreeFile]) -> GitReference {
    let dir = tempfile::tempdir().expect("temp dir");
    let d = dir.path();
    git(d, &["init", "-q"], None);
    let mut blobs = BTreeMap::new();
    for f in files {
        let id = git(
            d,
            &["hash-object", "-w", "--stdin"],
            Some(f.content.as_bytes()),
        );
        git(
            d,
            &[
                "update-index",
                "--add",
                "--cacheinfo",
                &format!("100644,{id},{}", f.path),
            ],
            None,
        );
        blobs.insert(f.path.clone(), id);
    }
    let root = git(d, &["write-tree"], None);
    let listing = git(d, &["ls-tree", "-r", "-t", &root], None)
        .lines()
        .map(|line| {
            let (meta, path) = line.split_once('\t').expect("ls-tree line");
            let mut m = meta.split(' ');
            let mut next = || m.next().expect("ls-tree field").to_owned();
            (next(), next(), next(), path.to_owned())
        })
        .collect();
    GitReference {
        blobs,
        root,
        listing,
    }
}

/// The contract check is not vacuous: the validator rejects bodies that
/// break GitHub's description.
#[test]
fn the_contract_validator_rejects_malformed_bodies() {
    let bad = [
        (
            "PATCH",
            "/repos/{owner}/{repo}/git/refs/{ref}",
            json!({"force": false}),
        ),
        (
            "POST",
            "/repos/{owner}/{repo}/issues",
            json!({"body": "no title"}),
        ),
        (
            "POST",
            "/repos/{owner}/{repo}/git/trees",
            json!({"tree": [{"path": "x", "mode": "100600", "type": "blob", "content": ""}]}),
        ),
    ];
    for (method, template, body) in bad {
        assert!(
            openapi::validate_request(method, template, &body).is_err(),
            "{method} {template} {body}"
        );
    }
}

// ---- 1. the App flow and a fast-forward publication --------------------------

#[tokio::test]
async fn app_flow_publishes_nested_files_by_fast_forward_then_revokes() {
    let e = Env::empty().await;
    let installation_id = e.sim.installation_id(OWNER).expect("installed");

    // The App finds its installation and mints a contents-phase token.
    let app = e.client.app(e.app_key());
    let installation = app.repo_installation(&e.repo).await.expect("installation");
    assert_eq!(installation.id.get(), installation_id);
    assert_eq!(installation.app_id.map(AppId::get), Some(e.sim.app_id()));
    assert_eq!(
        installation.account.as_ref().map(|a| a.login.as_str()),
        Some(OWNER)
    );
    let token = app
        .create_installation_token(
            installation.id,
            Phase::Contents,
            std::slice::from_ref(&e.repo),
        )
        .await
        .expect("token");
    assert_eq!(token.phase, Phase::Contents);
    assert_eq!(
        token.permissions,
        BTreeMap::from([
            ("contents".to_owned(), "write".to_owned()),
            ("metadata".to_owned(), "read".to_owned()),
        ])
    );
    assert_eq!(token.repositories, [NAME]);
    let ttl = token.expires_at.as_second() - e.sim.now();
    assert!((3598..=3600).contains(&ttl), "expires in an hour: {ttl} s");
    assert!(!format!("{token:?}").contains(token.token.expose()));
    let minted = e.sim.tokens();
    assert_eq!(minted.len(), 1);
    assert_eq!(minted[0].installation_id, installation_id);
    assert_eq!(minted[0].permissions, token.permissions);
    assert_eq!(minted[0].repositories, Some(vec![NAME.to_owned()]));
    assert!(!minted[0].revoked);
    // The App endpoints were called with a JWT, not a token.
    assert!(
        e.sim.requests().iter().all(|r| r.auth == AuthKind::AppJwt),
        "{:?}",
        e.sim.requests()
    );

    let gh = e.client.with_installation_token(&token);
    let history_branch = branch("benchmark-history");

    // An empty repository: 409, so the history starts with a root commit.
    let err = gh
        .get_ref(&e.repo, &history_branch)
        .await
        .expect_err("an empty repository has no refs");
    assert!(
        matches!(&err, GitHubError::Conflict { message, .. } if message == "Git Repository is empty."),
        "{err:?}"
    );
    let seed = [file("README.md", "# Benchmark history\n")];
    let root_tree = gh.create_tree(&e.repo, None, &seed).await.expect("tree");
    let root = gh
        .create_commit(&e.repo, "Start the history\n", &root_tree.sha, &[])
        .await
        .expect("root commit");
    assert!(root.parents.is_empty());
    assert_eq!(root.tree.sha, root_tree.sha);
    let created = gh
        .create_ref(&e.repo, &history_branch, &root.sha)
        .await
        .expect("create ref");
    assert_eq!(created.name, "refs/heads/benchmark-history");
    assert_eq!(created.object.sha, root.sha);
    assert_eq!(e.ref_sha("benchmark-history"), root.sha.as_str());
    assert_eq!(
        root_tree.sha.as_str(),
        git_reference(&seed).root,
        "the root tree id is git's"
    );
    // The ref exists now: creating it again is a 422, and another branch
    // is still a 404.
    let err = gh
        .create_ref(&e.repo, &history_branch, &root.sha)
        .await
        .expect_err("the ref exists");
    assert!(
        matches!(&err, GitHubError::Unprocessable { message, .. } if message == "Reference already exists"),
        "{err:?}"
    );
    let err = gh
        .get_ref(&e.repo, &branch("main"))
        .await
        .expect_err("no main");
    assert!(err.is_not_found(), "{err:?}");

    // The publication: ref, tip commit, one tree with inline contents over
    // the base tree, a commit, a fast-forward update.
    let tip = gh.get_ref(&e.repo, &history_branch).await.expect("ref");
    assert_eq!(tip.object.sha, root.sha);
    assert_eq!(tip.object.kind, "commit");
    let tip_commit = gh.get_commit(&e.repo, &tip.object.sha).await.expect("tip");
    assert_eq!(tip_commit.tree.sha, root_tree.sha);
    assert_eq!(tip_commit.message, "Start the history\n");
    let records = [
        file(
            "results/lane/2026/11/x.json",
            "{\"median_ns\": 1532, \"lane\": \"x\"}\n",
        ),
        file("results/lane/2026/11/y.json", "{\"median_ns\": 88}\n"),
        file("results/other/z.json", "[]\n"),
    ];
    let tree = gh
        .create_tree(&e.repo, Some(&tip_commit.tree.sha), &records)
        .await
        .expect("tree");
    let commit = gh
        .create_commit(
            &e.repo,
            "Record x, y, z\n",
            &tree.sha,
            std::slice::from_ref(&tip.object.sha),
        )
        .await
        .expect("commit");
    assert_eq!(commit.tree.sha, tree.sha);
    assert_eq!(
        commit.parents.iter().map(|p| &p.sha).collect::<Vec<_>>(),
        [&root.sha]
    );
    let moved = gh
        .update_ref(&e.repo, &history_branch, &commit.sha)
        .await
        .expect("fast forward");
    assert_eq!(moved.object.sha, commit.sha);

    // The simulator's state.
    assert_eq!(e.ref_sha("benchmark-history"), commit.sha.as_str());
    let stored = e
        .sim
        .commit(OWNER, NAME, commit.sha.as_str())
        .expect("stored commit");
    assert_eq!(stored.tree, tree.sha.as_str());
    assert_eq!(stored.parents, [root.sha.as_str()]);
    assert_eq!(stored.message, "Record x, y, z\n");
    assert_eq!(
        history(&e.sim, commit.sha.as_str()),
        [commit.sha.as_str(), root.sha.as_str()]
    );
    assert_eq!(
        e.sim.file_paths(OWNER, NAME, "benchmark-history"),
        [
            "README.md",
            "results/lane/2026/11/x.json",
            "results/lane/2026/11/y.json",
            "results/other/z.json",
        ]
    );

    // git's ids for the same content.
    let all: Vec<TreeFile> = seed.iter().chain(&records).cloned().collect();
    let reference = git_reference(&all);
    assert_eq!(tree.sha.as_str(), reference.root, "the tree id is git's");

    // Read every file back, by branch and by commit.
    for f in &all {
        for rev in ["benchmark-history", commit.sha.as_str()] {
            let got = gh.get_file(&e.repo, &f.path, rev).await.expect("file");
            assert_eq!(got.path, f.path);
            assert_eq!(got.bytes, f.content.as_bytes(), "{}", f.path);
            assert_eq!(got.sha.as_str(), reference.blobs[&f.path], "{}", f.path);
        }
        assert_eq!(
            e.sim.file(OWNER, NAME, "benchmark-history", &f.path),
            Some(f.content.as_bytes().to_vec())
        );
    }
    let err = gh
        .get_file(&e.repo, "results/missing.json", "benchmark-history")
        .await
        .expect_err("no such file");
    assert!(err.is_not_found(), "{err:?}");

    // The recursive listing is exactly `git ls-tree -r -t`.
    let listing = gh
        .get_tree_recursive(&e.repo, &commit.sha)
        .await
        .expect("tree listing");
    assert_eq!(listing.sha, tree.sha, "a commit lists its tree");
    assert!(!listing.truncated);
    let got: Vec<(String, String, String, String)> = listing
        .tree
        .iter()
        .map(|t| {
            (
                t.mode.clone(),
                t.kind.clone(),
                t.sha.as_str().to_owned(),
                t.path.clone(),
            )
        })
        .collect();
    assert_eq!(got, reference.listing);
    for t in &listing.tree {
        if t.kind == "blob" {
            let len = all
                .iter()
                .find(|f| f.path == t.path)
                .map(|f| f.content.len() as u64);
            assert_eq!(t.size, len, "{}", t.path);
        }
    }

    // The client's metrics saw every response the simulator logged, in
    // order, under one request id each.
    let metrics = e.client.metrics();
    let log = e.sim.requests();
    assert_eq!(
        metrics.request_ids,
        log.iter().map(|r| r.request_id.clone()).collect::<Vec<_>>()
    );
    assert_eq!(metrics.total().requests, log.len() as u64);
    assert_eq!(metrics.total().retries, 0);
    let update = metrics.operation("git.update_ref").expect("update metrics");
    assert_eq!(update.requests, 1);
    assert!(update.bytes_sent > 0 && update.bytes_received > 0);
    assert!(metrics.rate_limit_remaining.is_some_and(|r| r < 5000));
    assert_eq!(
        e.sim.rate_limit_used(installation_id),
        log.iter()
            .filter(|r| matches!(r.auth, AuthKind::InstallationToken { .. }))
            .count() as u64
    );

    // Revoked, the token is dead: a typed 401.
    gh.revoke_token().await.expect("revoke");
    assert!(e.sim.tokens()[0].revoked);
    let err = gh
        .get_ref(&e.repo, &history_branch)
        .await
        .expect_err("a revoked token");
    assert!(
        matches!(&err, GitHubError::Unauthorized { message, .. } if message == "Bad credentials"),
        "{err:?}"
    );
    let last = e.sim.requests().pop().expect("logged");
    assert_eq!(last.status, Some(401));
    assert!(matches!(last.auth, AuthKind::Rejected { .. }), "{last:?}");
    // Nothing moved.
    assert_eq!(e.ref_sha("benchmark-history"), commit.sha.as_str());

    e.assert_contract(&[&token]);
}

// ---- 2. losing a race on the ref -------------------------------------------------

#[tokio::test]
async fn a_lost_race_is_ref_moved_and_the_retry_on_the_new_tip_keeps_both_commits() {
    let e = Env::new().await;
    let token = e.token(Phase::Contents).await;
    let gh = e.client.with_installation_token(&token);
    let main = branch("main");
    let start = e.ref_sha("main");

    let records = [file("results/lane/2026/11/run-1.json", "{\"run\": 1}\n")];
    let tip = gh.get_ref(&e.repo, &main).await.expect("ref").object.sha;
    assert_eq!(tip.as_str(), start);
    let base = gh.get_commit(&e.repo, &tip).await.expect("tip").tree.sha;
    let tree = gh
        .create_tree(&e.repo, Some(&base), &records)
        .await
        .expect("tree");
    let ours = gh
        .create_commit(
            &e.repo,
            "Record run 1\n",
            &tree.sha,
            std::slice::from_ref(&tip),
        )
        .await
        .expect("commit");

    // Another writer moves main just before our PATCH arrives.
    e.sim.push_fault(FaultRule::on_operation(
        "git/update-ref",
        Fault::ConcurrentRefMove,
    ));
    let err = gh
        .update_ref(&e.repo, &main, &ours.sha)
        .await
        .expect_err("the ref moved");
    assert!(matches!(err, GitHubError::RefMoved { .. }), "{err:?}");
    let patches = e.logged("git/update-ref");
    assert_eq!(patches.len(), 1, "RefMoved is not retried blindly");
    assert_eq!(patches[0].status, Some(422));
    assert!(
        patches[0]
            .faults
            .iter()
            .any(|f| f.contains("ConcurrentRefMove")),
        "{:?}",
        patches[0].faults
    );
    assert_eq!(
        patches[0].body,
        Some(json!({"sha": ours.sha.as_str(), "force": false}))
    );
    assert_eq!(err.request_id(), Some(patches[0].request_id.as_str()));
    let racer = e.ref_sha("main");
    assert_ne!(racer, start);
    assert_ne!(racer, ours.sha.as_str());
    let racer_commit = e.sim.commit(OWNER, NAME, &racer).expect("racer's commit");
    assert_eq!(racer_commit.parents, std::slice::from_ref(&start));
    assert_eq!(racer_commit.author.name, "concurrent-writer");
    let update = e.client.metrics();
    let update = update.operation("git.update_ref").expect("update metrics");
    assert_eq!((update.requests, update.retries), (1, 0));

    // Re-read the ref, rebuild on the new tip, update again.
    let tip = gh.get_ref(&e.repo, &main).await.expect("ref").object.sha;
    assert_eq!(tip.as_str(), racer);
    let base = gh.get_commit(&e.repo, &tip).await.expect("tip").tree.sha;
    let rebuilt_tree = gh
        .create_tree(&e.repo, Some(&base), &records)
        .await
        .expect("tree");
    assert_eq!(
        rebuilt_tree.sha, tree.sha,
        "the racer changed no file, so the tree is the same object"
    );
    let rebuilt = gh
        .create_commit(
            &e.repo,
            "Record run 1\n",
            &rebuilt_tree.sha,
            std::slice::from_ref(&tip),
        )
        .await
        .expect("commit");
    assert_ne!(rebuilt.sha, ours.sha, "another parent, another commit");
    let moved = gh
        .update_ref(&e.repo, &main, &rebuilt.sha)
        .await
        .expect("a fast forward now");
    assert_eq!(moved.object.sha, rebuilt.sha);

    // History: the seed, the racer's commit, ours; the lost commit is not
    // on it.
    assert_eq!(e.ref_sha("main"), rebuilt.sha.as_str());
    let h = history(&e.sim, rebuilt.sha.as_str());
    assert_eq!(h, [rebuilt.sha.as_str(), racer.as_str(), start.as_str()]);
    assert!(!h.contains(&ours.sha.as_str().to_owned()));
    let got = gh
        .get_file(&e.repo, "results/lane/2026/11/run-1.json", "main")
        .await
        .expect("file");
    assert_eq!(got.bytes, b"{\"run\": 1}\n");
    assert_eq!(
        e.sim.file(OWNER, NAME, "main", "README.md"),
        Some(b"# bench\n".to_vec())
    );
    let patches = e.logged("git/update-ref");
    assert_eq!(
        patches.iter().map(|p| p.status).collect::<Vec<_>>(),
        [Some(422), Some(200)]
    );

    e.assert_contract(&[&token]);
}

// ---- 3. permissions ---------------------------------------------------------------

fn new_issue(title: &str, labels: &[&str]) -> NewIssue {
    NewIssue {
        title: title.to_owned(),
        body: format!("<!-- benchops:{title} -->\nBody of {title}."),
        labels: labels.iter().map(|l| (*l).to_owned()).collect(),
    }
}

fn label(name: &str, color: &str, description: Option<&str>) -> LabelSpec {
    LabelSpec {
        name: name.to_owned(),
        color: color.to_owned(),
        description: description.map(str::to_owned),
    }
}

#[tokio::test]
async fn phase_tokens_are_enforced_by_the_client_and_by_the_simulator() {
    let e = Env::new().await;
    let installation_id = e.sim.installation_id(OWNER).expect("installed");
    let contents = e.token(Phase::Contents).await;
    let issues = e.token(Phase::Issues).await;
    let main_before = e.ref_sha("main");

    // The phase-scoped client refuses before sending anything.
    let gh = e.client.with_installation_token(&contents);
    let sent = e.sim.requests().len();
    let err = gh
        .create_issue(&e.repo, &new_issue("x", &[]))
        .await
        .expect_err("contents phase");
    assert!(
        matches!(
            err,
            GitHubError::PhaseForbids {
                phase: Phase::Contents,
                needs: Phase::Issues,
                ..
            }
        ),
        "{err:?}"
    );
    let err = gh
        .ensure_labels(&e.repo, &[label("bench:drift", "b60205", None)])
        .await
        .expect_err("contents phase");
    assert!(matches!(err, GitHubError::PhaseForbids { .. }), "{err:?}");
    let err = gh
        .create_comment(&e.repo, 1, "hi")
        .await
        .expect_err("contents phase");
    assert!(matches!(err, GitHubError::PhaseForbids { .. }), "{err:?}");
    assert_eq!(e.sim.requests().len(), sent, "nothing was sent");

    // The same token without the client's phase check: the simulator
    // refuses with 403 and changes nothing.
    let raw = e.client.with_token(contents.token.clone());
    assert_eq!(raw.phase(), None);
    let err = raw
        .create_issue(&e.repo, &new_issue("x", &[]))
        .await
        .expect_err("the server enforces the permission");
    assert!(
        matches!(&err, GitHubError::Forbidden { message, .. } if message == "Resource not accessible by integration"),
        "{err:?}"
    );
    let last = e.sim.requests().pop().expect("logged");
    assert_eq!(
        (last.method.as_str(), last.path.as_str(), last.status),
        ("POST", "/repos/acme/bench/issues", Some(403))
    );
    assert_eq!(last.operation, Some("issues/create"));
    assert!(
        matches!(last.auth, AuthKind::InstallationToken { installation_id: i, .. } if i == installation_id),
        "{last:?}"
    );
    assert_eq!(err.request_id(), Some(last.request_id.as_str()));
    let err = raw
        .ensure_labels(&e.repo, &[label("bench:drift", "b60205", None)])
        .await
        .expect_err("labels need the issues permission");
    assert!(matches!(err, GitHubError::Forbidden { .. }), "{err:?}");
    assert!(e.sim.issues(OWNER, NAME).is_empty());
    assert!(e.sim.labels(OWNER, NAME).is_empty());
    // Forbidden is final: no retry.
    let m = e.client.metrics();
    let create = m.operation("issues.create").expect("issue metrics");
    assert_eq!((create.requests, create.retries), (1, 0));
    // Its own permission still works.
    let tip = raw.get_ref(&e.repo, &branch("main")).await.expect("read");
    assert_eq!(tip.object.sha.as_str(), main_before);

    // The other way round: an issues-phase token cannot write git data.
    let ghi = e.client.with_installation_token(&issues);
    let files = [file("results/x.json", "{}")];
    let err = ghi
        .create_tree(&e.repo, None, &files)
        .await
        .expect_err("issues phase");
    assert!(
        matches!(
            err,
            GitHubError::PhaseForbids {
                phase: Phase::Issues,
                needs: Phase::Contents,
                ..
            }
        ),
        "{err:?}"
    );
    let err = ghi
        .update_ref(&e.repo, &branch("main"), &sha(&main_before))
        .await
        .expect_err("issues phase");
    assert!(matches!(err, GitHubError::PhaseForbids { .. }), "{err:?}");
    let raw_issues = e.client.with_token(issues.token.clone());
    let err = raw_issues
        .create_tree(&e.repo, None, &files)
        .await
        .expect_err("the server enforces the permission");
    assert!(matches!(err, GitHubError::Forbidden { .. }), "{err:?}");
    let last = e.sim.requests().pop().expect("logged");
    assert_eq!(
        (last.operation, last.status),
        (Some("git/create-tree"), Some(403))
    );
    assert_eq!(e.ref_sha("main"), main_before);

    e.assert_contract(&[&contents, &issues]);
}

#[tokio::test]
async fn comments_are_deleted_idempotently_with_the_issues_permission_only() {
    let e = Env::new().await;
    let contents = e.token(Phase::Contents).await;
    let issues = e.token(Phase::Issues).await;
    let gh = e.client.with_installation_token(&issues);
    let issue = gh
        .create_issue(&e.repo, &new_issue("t", &[]))
        .await
        .expect("issue");
    let keep = gh
        .create_comment(&e.repo, issue.number, "<!-- benchops:x -->")
        .await
        .expect("comment");
    let copy = gh
        .create_comment(&e.repo, issue.number, "<!-- benchops:x -->")
        .await
        .expect("comment");

    // A contents-phase client refuses before sending anything.
    let ghc = e.client.with_installation_token(&contents);
    let sent = e.sim.requests().len();
    let err = ghc
        .delete_comment(&e.repo, copy.id)
        .await
        .expect_err("contents phase");
    assert!(
        matches!(
            err,
            GitHubError::PhaseForbids {
                phase: Phase::Contents,
                needs: Phase::Issues,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(e.sim.requests().len(), sent, "nothing was sent");
    // Without the client's check, the simulator refuses with 403.
    let raw = e.client.with_token(contents.token.clone());
    let err = raw
        .delete_comment(&e.repo, copy.id)
        .await
        .expect_err("the server enforces the permission");
    assert!(matches!(err, GitHubError::Forbidden { .. }), "{err:?}");
    let last = e.sim.requests().pop().expect("logged");
    assert_eq!(
        (last.method.as_str(), last.operation, last.status),
        ("DELETE", Some("issues/delete-comment"), Some(403))
    );
    assert_eq!(e.sim.comments(OWNER, NAME, issue.number).len(), 2);

    // 204, then 404 is "already gone": deleting is idempotent.
    assert_eq!(
        gh.delete_comment(&e.repo, copy.id).await.expect("deleted"),
        CommentDeletion::Deleted
    );
    assert_eq!(
        gh.delete_comment(&e.repo, copy.id).await.expect("gone"),
        CommentDeletion::AlreadyGone
    );
    let statuses: Vec<Option<u16>> = e
        .sim
        .requests()
        .iter()
        .filter(|r| r.operation == Some("issues/delete-comment"))
        .map(|r| r.status)
        .collect();
    assert_eq!(statuses, [Some(403), Some(204), Some(404)]);
    let left: Vec<u64> = e
        .sim
        .comments(OWNER, NAME, issue.number)
        .iter()
        .map(|c| c.id)
        .collect();
    assert_eq!(left, [keep.id]);
    let listed = gh
        .list_comments(&e.repo, issue.number)
        .await
        .expect("listed");
    assert_eq!(listed.len(), 1);

    e.assert_contract(&[&contents, &issues]);
}

#[tokio::test]
async fn an_issues_token_manages_labels_issues_and_comments_across_pages() {
    let e = Env::new().await;
    let token = e.token(Phase::Issues).await;
    let gh = e.client.with_installation_token(&token);

    // Labels: created once, then found.
    let labels = [
        label("bench:drift", "B60205", Some("A lane drifted")),
        label("bench:run", "0e8a16", None),
    ];
    let outcome = gh.ensure_labels(&e.repo, &labels).await.expect("labels");
    assert_eq!(
        outcome,
        [
            ("bench:drift".to_owned(), LabelOutcome::Created),
            ("bench:run".to_owned(), LabelOutcome::Created),
        ]
    );
    let outcome = gh.ensure_labels(&e.repo, &labels).await.expect("labels");
    assert!(
        outcome.iter().all(|(_, o)| *o == LabelOutcome::Existed),
        "{outcome:?}"
    );
    let stored = e.sim.labels(OWNER, NAME);
    assert_eq!(stored.len(), 2);
    assert_eq!(stored[0].name, "bench:drift");
    assert_eq!(stored[0].description.as_deref(), Some("A lane drifted"));
    assert_eq!(stored[1].name, "bench:run");

    // More issues than one page holds. The client lists 100 per page (the
    // most GitHub allows) and has no smaller page size, so 35 issues would
    // fit one page; 120 take two.
    const N: u64 = 120;
    for i in 1..=N {
        let labels: &[&str] = if i % 2 == 0 {
            &["bench:drift", "bench:run"]
        } else {
            &["bench:run"]
        };
        let issue = gh
            .create_issue(&e.repo, &new_issue(&format!("run-{i}"), labels))
            .await
            .expect("issue");
        assert_eq!(issue.number, i);
        assert_eq!(issue.state, IssueState::Open);
        assert_eq!(issue.labels.len(), labels.len());
    }
    assert_eq!(e.sim.issues(OWNER, NAME).len(), N as usize);
    // More than 80 content-creating requests in a minute: the client paced
    // them, and reported the wait.
    let m = e.client.metrics();
    let creates = m.operation("issues.create").expect("create metrics");
    assert_eq!((creates.requests, creates.retries), (N, 0));
    assert!(creates.pacing_waited_ms > 0, "{creates:?}");
    assert_eq!(m.total().retry_waited_ms, 0);
    assert!(
        m.total().pacing_waited_ms >= u64::try_from(e.clock.slept().as_millis()).expect("ms")
            && !e.clock.sleeps().is_empty()
    );

    let numbers = |issues: &[benchops_github::Issue]| -> BTreeSet<u64> {
        issues.iter().map(|i| i.number).collect()
    };
    e.sim.clear_requests();
    let all = gh
        .list_issues(&e.repo, StateFilter::All, &[])
        .await
        .expect("list");
    assert_eq!(all.len(), N as usize);
    assert_eq!(numbers(&all), (1..=N).collect(), "each issue exactly once");
    let pages = e.logged("issues/list-for-repo");
    assert_eq!(pages.len(), 2, "two pages");
    assert!(
        pages[1]
            .query
            .as_deref()
            .is_some_and(|q| q.split('&').any(|kv| kv == "page=2")),
        "{:?}",
        pages[1].query
    );
    let drift = gh
        .list_issues(&e.repo, StateFilter::Open, &["bench:drift"])
        .await
        .expect("list by label");
    assert_eq!(
        numbers(&drift),
        (1..=N).filter(|i| i % 2 == 0).collect(),
        "only the drift issues"
    );
    assert!(drift.iter().all(|i| i.has_label("bench:drift")));

    // Close, list closed, reopen.
    for n in 1..=5 {
        let closed = gh.close_issue(&e.repo, n).await.expect("close");
        assert_eq!(closed.state, IssueState::Closed);
    }
    let closed = gh
        .list_issues(&e.repo, StateFilter::Closed, &[])
        .await
        .expect("closed");
    assert_eq!(numbers(&closed), (1..=5).collect());
    let open = gh
        .list_issues(&e.repo, StateFilter::Open, &[])
        .await
        .expect("open");
    assert_eq!(numbers(&open), (6..=N).collect());
    let reopened = gh.reopen_issue(&e.repo, 3).await.expect("reopen");
    assert_eq!(reopened.state, IssueState::Open);
    let snapshot = e.sim.issues(OWNER, NAME);
    assert_eq!(snapshot[2].state, "open");
    assert_eq!(snapshot[2].state_reason.as_deref(), Some("reopened"));
    assert_eq!(snapshot[0].state, "closed");
    assert_eq!(snapshot[0].state_reason.as_deref(), Some("completed"));
    let closed = gh
        .list_issues(&e.repo, StateFilter::Closed, &[])
        .await
        .expect("closed");
    assert_eq!(numbers(&closed), BTreeSet::from([1, 2, 4, 5]));

    // An update sets absolute values.
    let updated = gh
        .update_issue(
            &e.repo,
            10,
            &IssueUpdate {
                title: Some("run-10 (drift)".into()),
                labels: Some(vec!["bench:run".into()]),
                ..IssueUpdate::default()
            },
        )
        .await
        .expect("update");
    assert_eq!(updated.title, "run-10 (drift)");
    assert!(!updated.has_label("bench:drift") && updated.has_label("bench:run"));
    assert_eq!(e.sim.issues(OWNER, NAME)[9].labels, ["bench:run"]);
    // Adding labels keeps the ones the issue has, a person's included.
    assert!(e.sim.add_label_as_user(OWNER, NAME, 10, "drift-accepted"));
    let all = gh
        .add_labels(&e.repo, 10, &["bench:drift".into(), "bench:run".into()])
        .await
        .expect("add labels");
    assert_eq!(
        all.iter().map(|l| l.name.as_str()).collect::<Vec<_>>(),
        ["bench:run", "drift-accepted", "bench:drift"]
    );
    assert_eq!(
        e.sim.issues(OWNER, NAME)[9].labels,
        ["bench:run", "drift-accepted", "bench:drift"]
    );
    // A state reason is stored as sent.
    let dup = gh
        .update_issue(
            &e.repo,
            11,
            &IssueUpdate {
                state: Some(IssueState::Closed),
                state_reason: Some(StateReason::Duplicate),
                ..IssueUpdate::default()
            },
        )
        .await
        .expect("close as duplicate");
    assert_eq!(dup.state, IssueState::Closed);
    assert_eq!(
        e.sim.issues(OWNER, NAME)[10].state_reason.as_deref(),
        Some("duplicate")
    );
    assert_eq!(dup.author(), Some(e.sim.bot_login().as_str()));

    // Comments, oldest first.
    let first = gh
        .create_comment(&e.repo, 7, "First measurement.")
        .await
        .expect("comment");
    let second = gh
        .create_comment(&e.repo, 7, "Second measurement.")
        .await
        .expect("comment");
    assert_ne!(first.id, second.id);
    let comments = gh.list_comments(&e.repo, 7).await.expect("comments");
    assert_eq!(
        comments.iter().map(|c| c.body.as_str()).collect::<Vec<_>>(),
        ["First measurement.", "Second measurement."]
    );
    assert_eq!(
        e.sim.issues(OWNER, NAME)[6].comments,
        ["First measurement.", "Second measurement."]
    );
    assert!(gh.list_comments(&e.repo, 8).await.expect("none").is_empty());

    e.assert_contract(&[&token]);
}

// ---- 4. faults -----------------------------------------------------------------------

/// The retry waits the client imposed (what it slept on the manual clock).
fn retry_wait_ms(e: &Env, op: &str) -> u64 {
    e.client
        .metrics()
        .operation(op)
        .map_or(0, |m| m.retry_waited_ms)
}

#[tokio::test]
async fn a_server_error_on_an_idempotent_request_is_retried_after_a_reported_backoff() {
    let e = Env::new().await;
    let token = e.token(Phase::Contents).await;
    let gh = e.client.with_installation_token(&token);
    let main = branch("main");

    e.sim
        .push_fault(FaultRule::on_operation("git/get-ref", Fault::Status(502)));
    let tip = gh.get_ref(&e.repo, &main).await.expect("retried");
    assert_eq!(tip.object.sha.as_str(), e.ref_sha("main"));
    let gets = e.logged("git/get-ref");
    assert_eq!(
        gets.iter().map(|g| g.status).collect::<Vec<_>>(),
        [Some(502), Some(200)]
    );
    assert_eq!(gets[0].faults, ["Status(502)"]);
    let m = e.client.metrics();
    let get = m.operation("git.get_ref").expect("metrics");
    assert_eq!((get.requests, get.retries), (2, 1));
    assert_eq!(
        get.request_ids,
        gets.iter()
            .map(|g| g.request_id.clone())
            .collect::<Vec<_>>(),
        "the failed attempt's request id is kept"
    );
    let sleeps = e.clock.sleeps();
    assert_eq!(sleeps.len(), 1, "{sleeps:?}");
    assert!(
        sleeps[0] >= Duration::from_secs(1) && sleeps[0] <= Duration::from_millis(1250),
        "1 s backoff plus at most 25% jitter: {sleeps:?}"
    );
    assert!(get.waited_ms > 0);
    assert_eq!(get.waited_ms, get.retry_waited_ms);
    assert_eq!(
        get.retry_waited_ms,
        u64::try_from(sleeps[0].as_nanos().div_ceil(1_000_000)).expect("ms")
    );

    // The ref update is idempotent (never forced): a 503 is retried too,
    // and the ref moves once.
    let base = gh.get_commit(&e.repo, &tip.object.sha).await.expect("tip");
    let tree = gh
        .create_tree(&e.repo, Some(&base.tree.sha), &[file("r/1.json", "1\n")])
        .await
        .expect("tree");
    let commit = gh
        .create_commit(
            &e.repo,
            "r1\n",
            &tree.sha,
            std::slice::from_ref(&tip.object.sha),
        )
        .await
        .expect("commit");
    e.sim.push_fault(FaultRule::on_operation(
        "git/update-ref",
        Fault::Status(503),
    ));
    gh.update_ref(&e.repo, &main, &commit.sha)
        .await
        .expect("retried");
    assert_eq!(
        e.logged("git/update-ref")
            .iter()
            .map(|p| p.status)
            .collect::<Vec<_>>(),
        [Some(503), Some(200)]
    );
    assert_eq!(e.ref_sha("main"), commit.sha.as_str());
    assert_eq!(
        history(&e.sim, commit.sha.as_str()).len(),
        2,
        "one commit on the seed"
    );
    assert!(retry_wait_ms(&e, "git.update_ref") > 0);
    assert_eq!(e.clock.sleeps().len(), 2);

    e.assert_contract(&[&token]);
}

#[tokio::test]
async fn a_secondary_rate_limit_waits_exactly_retry_after() {
    let e = Env::new().await;
    let token = e.token(Phase::Contents).await;
    let gh = e.client.with_installation_token(&token);
    let tip = sha(&e.ref_sha("main"));

    // 403 with retry-after on a GET.
    e.sim.push_fault(FaultRule::on_operation(
        "git/get-commit",
        Fault::SecondaryRateLimit {
            status: 403,
            retry_after: 42,
        },
    ));
    let commit = gh.get_commit(&e.repo, &tip).await.expect("retried");
    assert_eq!(commit.sha, tip);
    assert_eq!(e.clock.sleeps(), [Duration::from_secs(42)]);
    let m = e.client.metrics();
    let get = m.operation("git.get_commit").expect("metrics");
    assert_eq!((get.requests, get.retries), (2, 1));
    assert_eq!(get.retry_waited_ms, 42_000);
    assert_eq!(get.waited_ms, 42_000);
    assert_eq!(
        e.logged("git/get-commit")
            .iter()
            .map(|g| g.status)
            .collect::<Vec<_>>(),
        [Some(403), Some(200)]
    );

    // 429 with retry-after on another GET.
    e.sim.push_fault(FaultRule::on_operation(
        "repos/get-content",
        Fault::SecondaryRateLimit {
            status: 429,
            retry_after: 7,
        },
    ));
    let readme = gh
        .get_file(&e.repo, "README.md", "main")
        .await
        .expect("retried");
    assert_eq!(readme.bytes, b"# bench\n");
    assert_eq!(
        e.clock.sleeps(),
        [Duration::from_secs(42), Duration::from_secs(7)]
    );
    assert_eq!(retry_wait_ms(&e, "repos.get_contents"), 7_000);

    // A secondary limit rejects a request without acting on it, so even a
    // creating POST is retried after it.
    e.sim.push_fault(FaultRule::on_operation(
        "git/create-tree",
        Fault::SecondaryRateLimit {
            status: 403,
            retry_after: 60,
        },
    ));
    let tree = gh
        .create_tree(&e.repo, Some(&commit.tree.sha), &[file("r/1.json", "1\n")])
        .await
        .expect("retried");
    assert_eq!(
        e.logged("git/create-tree")
            .iter()
            .map(|g| g.status)
            .collect::<Vec<_>>(),
        [Some(403), Some(201)]
    );
    assert_eq!(retry_wait_ms(&e, "git.create_tree"), 60_000);
    assert_eq!(tree.tree.len(), 2, "README.md and r/");
    assert_eq!(
        e.client.metrics().total().retry_waited_ms,
        109_000,
        "every wait is reported"
    );

    e.assert_contract(&[&token]);
}

#[tokio::test]
async fn a_server_error_on_a_creating_post_is_not_retried() {
    let e = Env::new().await;
    let contents = e.token(Phase::Contents).await;
    let issues = e.token(Phase::Issues).await;
    let gh = e.client.with_installation_token(&issues);

    e.sim
        .push_fault(FaultRule::on_operation("issues/create", Fault::Status(502)));
    let err = gh
        .create_issue(&e.repo, &new_issue("run-1", &[]))
        .await
        .expect_err("not retried");
    assert!(
        matches!(err, GitHubError::Server { status: 502, .. }),
        "{err:?}"
    );
    let posts = e.logged("issues/create");
    assert_eq!(posts.len(), 1, "exactly one POST");
    assert_eq!(posts[0].status, Some(502));
    assert_eq!(err.request_id(), Some(posts[0].request_id.as_str()));
    assert!(e.sim.issues(OWNER, NAME).is_empty());
    let m = e.client.metrics();
    let create = m.operation("issues.create").expect("metrics");
    assert_eq!(
        (create.requests, create.retries, create.retry_waited_ms),
        (1, 0, 0)
    );
    assert!(e.clock.sleeps().is_empty());

    // The caller decides to try again: it works once the fault is spent.
    let issue = gh
        .create_issue(&e.repo, &new_issue("run-1", &[]))
        .await
        .expect("created");
    assert_eq!(issue.number, 1);
    assert_eq!(e.sim.issues(OWNER, NAME).len(), 1);

    // The same for git objects.
    let ghc = e.client.with_installation_token(&contents);
    let tip = sha(&e.ref_sha("main"));
    let base = ghc.get_commit(&e.repo, &tip).await.expect("tip").tree.sha;
    e.sim.push_fault(FaultRule::on_operation(
        "git/create-commit",
        Fault::Status(500),
    ));
    let err = ghc
        .create_commit(&e.repo, "x\n", &base, &[tip])
        .await
        .expect_err("not retried");
    assert!(
        matches!(err, GitHubError::Server { status: 500, .. }),
        "{err:?}"
    );
    assert_eq!(e.logged("git/create-commit").len(), 1);

    e.assert_contract(&[&contents, &issues]);
}

#[tokio::test]
async fn a_dropped_connection_is_retried_for_a_get_only() {
    let e = Env::new().await;
    let token = e.token(Phase::Contents).await;
    let gh = e.client.with_installation_token(&token);
    let main = branch("main");

    e.sim.push_fault(FaultRule::on_operation(
        "git/get-ref",
        Fault::DropConnection,
    ));
    let tip = gh.get_ref(&e.repo, &main).await.expect("retried");
    assert_eq!(tip.object.sha.as_str(), e.ref_sha("main"));
    let gets = e.logged("git/get-ref");
    assert_eq!(
        gets.iter().map(|g| g.status).collect::<Vec<_>>(),
        [None, Some(200)],
        "a dropped attempt, then a response"
    );
    assert_eq!(gets[0].faults, ["DropConnection"]);
    let m = e.client.metrics();
    let get = m.operation("git.get_ref").expect("metrics");
    assert_eq!((get.requests, get.retries), (2, 1));
    assert!(get.retry_waited_ms > 0);
    assert_eq!(e.clock.sleeps().len(), 1);

    // A creating POST whose connection dropped may have taken effect: it
    // is not retried, and the error is a transport error.
    let base = gh.get_commit(&e.repo, &tip.object.sha).await.expect("tip");
    e.sim.push_fault(FaultRule::on_operation(
        "git/create-tree",
        Fault::DropConnection,
    ));
    let err = gh
        .create_tree(&e.repo, Some(&base.tree.sha), &[file("r/1.json", "1\n")])
        .await
        .expect_err("not retried");
    assert!(matches!(err, GitHubError::Transport { .. }), "{err:?}");
    let posts = e.logged("git/create-tree");
    assert_eq!(posts.len(), 1);
    assert_eq!(posts[0].status, None);
    assert_eq!(e.clock.sleeps().len(), 1, "no backoff for the POST");

    e.assert_contract(&[&token]);
}

#[tokio::test]
async fn handoff_refs_are_listed_read_by_layout_and_deleted_idempotently() {
    let e = Env::new().await;
    let hex = "ab".repeat(32);
    let good = format!("{hex}.json");
    let good_commit = e
        .sim
        .push_handoff_ref(OWNER, NAME, "run-1", &good, b"{\"sealed\":true}\n");
    // Layouts that are not a handoff.
    e.sim.push_ref(
        OWNER,
        NAME,
        "heads/benchmark-result/two-files",
        &[(good.as_str(), b"{}"), ("notes.txt", b"n")],
        "two\n",
    );
    e.sim.push_ref(
        OWNER,
        NAME,
        "heads/benchmark-result/nested",
        &[(format!("dir/{good}").as_str(), b"{}")],
        "nested\n",
    );
    e.sim
        .push_handoff_ref(OWNER, NAME, "bad-name", "record.json", b"{}");
    e.sim.push_handoff_ref(
        OWNER,
        NAME,
        "upper",
        &format!("{}.json", "AB".repeat(32)),
        b"{}",
    );
    // Not a handoff ref at all.
    e.sim.push_ref(
        OWNER,
        NAME,
        "heads/benchmark-results",
        &[("x", b"x")],
        "x\n",
    );

    let token = e.token(Phase::Contents).await;
    let gh = e.client.with_installation_token(&token);
    let refs = gh.list_handoff_refs(&e.repo).await.expect("listed");
    let names: Vec<&str> = refs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "refs/heads/benchmark-result/bad-name",
            "refs/heads/benchmark-result/nested",
            "refs/heads/benchmark-result/run-1",
            "refs/heads/benchmark-result/two-files",
            "refs/heads/benchmark-result/upper",
        ]
    );
    let mut read = BTreeMap::new();
    for r in &refs {
        let content = gh.read_handoff(&e.repo, r).await.expect("read");
        read.insert(r.name.rsplit('/').next().expect("name").to_owned(), content);
    }
    match &read["run-1"] {
        HandoffContent::Sealed(f) => {
            assert_eq!(f.file_name, good);
            assert_eq!(f.bytes, b"{\"sealed\":true}\n");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(refs[2].sha.as_str(), good_commit);
    for (name, says) in [
        ("two-files", "exactly one file"),
        ("nested", "is a tree"),
        ("bad-name", "\"record.json\""),
        ("upper", "not <64 lowercase hex digits>.json"),
    ] {
        match &read[name] {
            HandoffContent::Invalid { reason } => {
                assert!(reason.contains(says), "{name}: {reason}");
            }
            other => panic!("{name}: {other:?}"),
        }
    }
    // Three reads per handoff of the right shape, two for the others.
    assert_eq!(e.logged("git/get-blob").len(), 1);
    assert_eq!(e.logged("git/get-commit").len(), 5);
    assert_eq!(
        e.logged("git/list-matching-refs")[0].path,
        format!("/repos/{OWNER}/{NAME}/git/matching-refs/heads/benchmark-result/")
    );

    // Deleting is idempotent; a 5xx on it is retried (it is idempotent).
    let run1 = refs[2].ref_name().expect("addressable");
    e.sim.push_fault(FaultRule::on_operation(
        "git/delete-ref",
        Fault::Status(502),
    ));
    assert_eq!(
        gh.delete_ref(&e.repo, &run1).await.expect("deleted"),
        RefDeletion::Deleted
    );
    assert_eq!(
        gh.delete_ref(&e.repo, &run1).await.expect("already gone"),
        RefDeletion::AlreadyGone
    );
    let deletes: Vec<Option<u16>> = e
        .logged("git/delete-ref")
        .iter()
        .map(|r| r.status)
        .collect();
    assert_eq!(deletes, [Some(502), Some(204), Some(422)]);
    assert_eq!(
        e.sim
            .refs(OWNER, NAME, "refs/heads/benchmark-result/")
            .len(),
        4
    );
    // Any other refusal is an error, not "already gone".
    let err = gh
        .delete_ref(&e.repo, &branch("main"))
        .await
        .expect_err("the default branch");
    assert!(matches!(err, GitHubError::Unprocessable { .. }), "{err:?}");

    // An issues-phase client cannot delete refs (nothing is sent).
    let issues = e.token(Phase::Issues).await;
    let sent = e.sim.requests().len();
    let err = e
        .client
        .with_installation_token(&issues)
        .delete_ref(&e.repo, &run1)
        .await
        .expect_err("wrong phase");
    assert!(matches!(err, GitHubError::PhaseForbids { .. }), "{err:?}");
    assert_eq!(e.sim.requests().len(), sent);
    // A bad prefix is refused before sending.
    assert!(matches!(
        gh.list_matching_refs(&e.repo, "heads/../x/").await,
        Err(GitHubError::InvalidInput { .. })
    ));

    // Comments report their author: the App's bot (whose login `GET /app`
    // gives) or a person.
    let app = e.client.app(e.app_key()).get_app().await.expect("the app");
    assert_eq!(app.slug, "benchops-test");
    assert_eq!(app.bot_login(), e.sim.bot_login());
    let ig = e.client.with_installation_token(&issues);
    let issue = ig
        .create_issue(&e.repo, &new_issue("drift", &[]))
        .await
        .expect("issue");
    let mine = ig
        .create_comment(&e.repo, issue.number, "by the bot")
        .await
        .expect("comment");
    assert_eq!(mine.author(), Some(app.bot_login().as_str()));
    e.sim
        .comment_as_user(OWNER, NAME, issue.number, "octocat", "by a person")
        .expect("commented");
    let authors: Vec<Option<String>> = ig
        .list_comments(&e.repo, issue.number)
        .await
        .expect("listed")
        .iter()
        .map(|c| c.author().map(str::to_owned))
        .collect();
    assert_eq!(authors, [Some(app.bot_login()), Some("octocat".to_owned())]);

    e.assert_contract(&[&token, &issues]);
}
