//! Response bodies in GitHub's shapes. Every builder here produces what
//! the OpenAPI description requires for its schema (checked by
//! `tests/openapi_contract.rs`).

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::auth::permissions_json;
use super::clock::{iso, iso_with_offset};
use super::git::{Commit, ObjectKind, Signature, TreeEntry};
#[cfg(feature = "platform")]
use super::pulls::{CommitStatus, PullRequest, PullView};
use super::state::{
    Actor, App, BranchPolicy, BypassActor, Comment, Environment, Installation, Issue, Label, Repo,
    Ruleset,
};

/// Where web pages would live (only used for `html_url` members).
pub const HTML: &str = "https://github.com";

/// A `simple-user`.
pub fn user(api: &str, login: &str, id: u64, kind: &str) -> Value {
    // GitHub percent-encodes bot logins in URLs (`app%5Bbot%5D`).
    let seg = encode_segment(login);
    let u = format!("{api}/users/{seg}");
    json!({
        "login": login,
        "id": id,
        "node_id": format!("U_sim{id}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"),
        "gravatar_id": "",
        "url": u,
        "html_url": format!("{HTML}/{seg}"),
        "followers_url": format!("{u}/followers"),
        "following_url": format!("{u}/following{{/other_user}}"),
        "gists_url": format!("{u}/gists{{/gist_id}}"),
        "starred_url": format!("{u}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{u}/subscriptions"),
        "organizations_url": format!("{u}/orgs"),
        "repos_url": format!("{u}/repos"),
        "events_url": format!("{u}/events{{/privacy}}"),
        "received_events_url": format!("{u}/received_events"),
        "type": kind,
        "user_view_type": "public",
        "site_admin": false,
    })
}

/// The user behind an [`Actor`].
pub fn actor(api: &str, a: &Actor) -> Value {
    user(api, &a.login, a.id, if a.bot { "Bot" } else { "User" })
}

/// The owning account of a repository or installation.
pub fn account(api: &str, login: &str, id: u64) -> Value {
    user(api, login, id, "Organization")
}

/// A full `repository`.
pub fn repository(api: &str, r: &Repo, owner_id: u64) -> Value {
    let full = r.full_name();
    let u = format!("{api}/repos/{full}");
    let html = format!("{HTML}/{full}");
    let created = iso(r.created_at);
    let open_issues = r.issues.iter().filter(|i| i.open).count();
    json!({
        "id": r.id,
        "node_id": format!("R_sim{}", r.id),
        "name": r.name,
        "full_name": full,
        "owner": account(api, &r.owner, owner_id),
        "private": true,
        "html_url": html,
        "description": null,
        "fork": false,
        "url": u,
        "archive_url": format!("{u}/{{archive_format}}{{/ref}}"),
        "assignees_url": format!("{u}/assignees{{/user}}"),
        "blobs_url": format!("{u}/git/blobs{{/sha}}"),
        "branches_url": format!("{u}/branches{{/branch}}"),
        "collaborators_url": format!("{u}/collaborators{{/collaborator}}"),
        "comments_url": format!("{u}/comments{{/number}}"),
        "commits_url": format!("{u}/commits{{/sha}}"),
        "compare_url": format!("{u}/compare/{{base}}...{{head}}"),
        "contents_url": format!("{u}/contents/{{+path}}"),
        "contributors_url": format!("{u}/contributors"),
        "deployments_url": format!("{u}/deployments"),
        "downloads_url": format!("{u}/downloads"),
        "events_url": format!("{u}/events"),
        "forks_url": format!("{u}/forks"),
        "git_commits_url": format!("{u}/git/commits{{/sha}}"),
        "git_refs_url": format!("{u}/git/refs{{/sha}}"),
        "git_tags_url": format!("{u}/git/tags{{/sha}}"),
        "git_url": format!("git://github.com/{full}.git"),
        "issue_comment_url": format!("{u}/issues/comments{{/number}}"),
        "issue_events_url": format!("{u}/issues/events{{/number}}"),
        "issues_url": format!("{u}/issues{{/number}}"),
        "keys_url": format!("{u}/keys{{/key_id}}"),
        "labels_url": format!("{u}/labels{{/name}}"),
        "languages_url": format!("{u}/languages"),
        "merges_url": format!("{u}/merges"),
        "milestones_url": format!("{u}/milestones{{/number}}"),
        "notifications_url": format!("{u}/notifications{{?since,all,participating}}"),
        "pulls_url": format!("{u}/pulls{{/number}}"),
        "releases_url": format!("{u}/releases{{/id}}"),
        "ssh_url": format!("git@github.com:{full}.git"),
        "stargazers_url": format!("{u}/stargazers"),
        "statuses_url": format!("{u}/statuses/{{sha}}"),
        "subscribers_url": format!("{u}/subscribers"),
        "subscription_url": format!("{u}/subscription"),
        "tags_url": format!("{u}/tags"),
        "teams_url": format!("{u}/teams"),
        "trees_url": format!("{u}/git/trees{{/sha}}"),
        "clone_url": format!("{html}.git"),
        "mirror_url": null,
        "hooks_url": format!("{u}/hooks"),
        "svn_url": html,
        "homepage": null,
        "language": null,
        "forks_count": 0,
        "forks": 0,
        "stargazers_count": 0,
        "watchers_count": 0,
        "watchers": 0,
        "size": 0,
        "default_branch": r.default_branch,
        "open_issues_count": open_issues,
        "open_issues": open_issues,
        "is_template": false,
        "topics": [],
        "has_issues": true,
        "has_projects": false,
        "has_wiki": false,
        "has_pages": false,
        "has_downloads": false,
        "has_discussions": false,
        "archived": false,
        "disabled": false,
        "visibility": "private",
        "pushed_at": created,
        "created_at": created,
        "updated_at": created,
        "license": null,
        "allow_forking": false,
        "web_commit_signoff_required": false,
    })
}

/// A `full-repository` (`GET /repos/{owner}/{repo}`): a `repository`
/// with the members only the single-repository answer carries.
pub fn full_repository(api: &str, r: &Repo, owner_id: u64) -> Value {
    let mut v = repository(api, r, owner_id);
    v["network_count"] = json!(0);
    v["subscribers_count"] = json!(0);
    v["organization"] = account(api, &r.owner, owner_id);
    v
}

/// A `team` (an environment reviewer), named after its id.
fn team(api: &str, org: &str, id: u64) -> Value {
    let slug = format!("team-{id}");
    json!({
        "id": id,
        "node_id": format!("T_sim{id}"),
        "url": format!("{api}/teams/{id}"),
        "html_url": format!("{HTML}/orgs/{org}/teams/{slug}"),
        "name": slug,
        "slug": slug,
        "description": null,
        "privacy": "closed",
        "notification_setting": "notifications_enabled",
        "permission": "pull",
        "members_url": format!("{api}/teams/{id}/members{{/member}}"),
        "repositories_url": format!("{api}/teams/{id}/repos"),
        "parent": null,
        "type": "organization",
    })
}

/// An `environment`: its protection rules (`wait_timer`,
/// `required_reviewers`, `branch_policy`, each only when set) and its
/// `deployment_branch_policy` (`null` when every branch may deploy).
pub fn environment(api: &str, r: &Repo, e: &Environment) -> Value {
    let full = r.full_name();
    let seg = encode_segment(&e.name);
    let rule = |k: u64, kind: &str| {
        let id = e.id * 10 + k;
        json!({ "id": id, "node_id": format!("GA_sim{id}"), "type": kind })
    };
    let mut rules = Vec::new();
    if e.wait_timer > 0 {
        let mut w = rule(1, "wait_timer");
        w["wait_timer"] = json!(e.wait_timer);
        rules.push(w);
    }
    if !e.reviewers.is_empty() {
        let mut rv = rule(2, "required_reviewers");
        rv["prevent_self_review"] = json!(e.prevent_self_review);
        rv["reviewers"] = e
            .reviewers
            .iter()
            .map(|(kind, id)| {
                let reviewer = if kind == "Team" {
                    team(api, &r.owner, *id)
                } else {
                    user(api, &format!("user-{id}"), *id, "User")
                };
                json!({ "type": kind, "reviewer": reviewer })
            })
            .collect();
        rules.push(rv);
    }
    if e.branch_policy.is_some() {
        rules.push(rule(3, "branch_policy"));
    }
    json!({
        "id": e.id,
        "node_id": format!("EN_sim{}", e.id),
        "name": e.name,
        "url": format!("{api}/repos/{full}/environments/{seg}"),
        "html_url": format!("{HTML}/{full}/deployments/activity_log?environments_filter={seg}"),
        "created_at": iso(e.created_at),
        "updated_at": iso(e.updated_at),
        "protection_rules": rules,
        "deployment_branch_policy": e.branch_policy.map(|(protected, custom)| json!({
            "protected_branches": protected,
            "custom_branch_policies": custom,
        })),
    })
}

/// A `deployment-branch-policy`.
pub fn branch_policy(p: &BranchPolicy) -> Value {
    json!({
        "id": p.id,
        "node_id": format!("DBP_sim{}", p.id),
        "name": p.name,
        "type": p.kind,
    })
}

fn bypass_actor(a: &BypassActor) -> Value {
    json!({
        "actor_id": a.actor_id,
        "actor_type": a.actor_type,
        "bypass_mode": a.bypass_mode,
    })
}

/// A `repository-ruleset` as the list of rulesets gives it: no
/// conditions, rules, bypass actors or `current_user_can_bypass`.
pub fn ruleset_summary(api: &str, r: &Repo, rs: &Ruleset) -> Value {
    let full = r.full_name();
    json!({
        "id": rs.id,
        "name": rs.name,
        "target": rs.target,
        "source_type": "Repository",
        "source": full,
        "enforcement": rs.enforcement,
        "node_id": format!("RRS_sim{}", rs.id),
        "_links": {
            "self": { "href": format!("{api}/repos/{full}/rulesets/{}", rs.id) },
            "html": { "href": format!("{HTML}/{full}/rules/{}", rs.id) },
        },
        "created_at": iso(rs.created_at),
        "updated_at": iso(rs.updated_at),
    })
}

/// A full `repository-ruleset` (`GET .../rulesets/{ruleset_id}`).
/// `bypass_actors` is sent only to callers that may write the ruleset, as
/// on GitHub.
pub fn ruleset(
    api: &str,
    r: &Repo,
    rs: &Ruleset,
    current_user_can_bypass: &str,
    with_bypass_actors: bool,
) -> Value {
    let mut v = ruleset_summary(api, r, rs);
    if with_bypass_actors {
        v["bypass_actors"] = rs.bypass_actors.iter().map(bypass_actor).collect();
    }
    v["current_user_can_bypass"] = json!(current_user_can_bypass);
    v["conditions"] = rs.ref_name.as_ref().map_or(
        Value::Null,
        |(include, exclude)| json!({ "ref_name": { "include": include, "exclude": exclude } }),
    );
    v["rules"] = Value::Array(rs.rules.clone());
    v
}

/// A `label`.
pub fn label(api: &str, r: &Repo, l: &Label) -> Value {
    json!({
        "id": l.id,
        "node_id": format!("LA_sim{}", l.id),
        "url": format!("{api}/repos/{}/labels/{}", r.full_name(), encode_segment(&l.name)),
        "name": l.name,
        "description": l.description,
        "color": l.color,
        "default": l.default,
    })
}

fn reactions(url: &str) -> Value {
    json!({
        "url": format!("{url}/reactions"),
        "total_count": 0, "+1": 0, "-1": 0, "laugh": 0, "confused": 0,
        "heart": 0, "hooray": 0, "eyes": 0, "rocket": 0,
    })
}

/// An `issue`.
pub fn issue(api: &str, r: &Repo, i: &Issue) -> Value {
    let repo_url = format!("{api}/repos/{}", r.full_name());
    let u = format!("{repo_url}/issues/{}", i.number);
    let labels: Vec<Value> = i
        .labels
        .iter()
        .filter_map(|id| r.label_by_id(*id))
        .map(|l| label(api, r, l))
        .collect();
    json!({
        "id": i.id,
        "node_id": format!("I_sim{}", i.id),
        "url": u,
        "repository_url": repo_url,
        "labels_url": format!("{u}/labels{{/name}}"),
        "comments_url": format!("{u}/comments"),
        "events_url": format!("{u}/events"),
        "html_url": format!("{HTML}/{}/issues/{}", r.full_name(), i.number),
        "timeline_url": format!("{u}/timeline"),
        "number": i.number,
        "state": if i.open { "open" } else { "closed" },
        "state_reason": i.state_reason,
        "title": i.title,
        "body": i.body,
        "user": actor(api, &i.user),
        "labels": labels,
        "assignee": null,
        "assignees": [],
        "milestone": null,
        "locked": false,
        "active_lock_reason": null,
        "comments": i.comments.len(),
        "closed_at": i.closed_at.map(iso),
        "created_at": iso(i.created_at),
        "updated_at": iso(i.updated_at),
        "closed_by": i.closed_by.as_ref().map(|a| actor(api, a)),
        "author_association": "NONE",
        "performed_via_github_app": null,
        "reactions": reactions(&u),
    })
}

/// An `issue-comment`.
pub fn comment(api: &str, r: &Repo, i: &Issue, c: &Comment) -> Value {
    let repo_url = format!("{api}/repos/{}", r.full_name());
    let u = format!("{repo_url}/issues/comments/{}", c.id);
    json!({
        "id": c.id,
        "node_id": format!("IC_sim{}", c.id),
        "url": u,
        "body": c.body,
        "html_url": format!("{HTML}/{}/issues/{}#issuecomment-{}", r.full_name(), i.number, c.id),
        "issue_url": format!("{repo_url}/issues/{}", i.number),
        "user": actor(api, &c.user),
        "created_at": iso(c.created_at),
        "updated_at": iso(c.updated_at),
        "author_association": "NONE",
        "performed_via_github_app": null,
        "reactions": reactions(&u),
    })
}

/// A `git-ref`.
pub fn git_ref(api: &str, r: &Repo, name: &str, sha: &str) -> Value {
    let u = format!("{api}/repos/{}", r.full_name());
    json!({
        "ref": name,
        "node_id": format!("REF_sim{}", &sha[..12]),
        "url": format!("{u}/git/{name}"),
        "object": {
            "type": "commit",
            "sha": sha,
            "url": format!("{u}/git/commits/{sha}"),
        },
    })
}

fn signature(s: &Signature) -> Value {
    json!({
        "name": s.name,
        "email": s.email,
        "date": iso_with_offset(s.time, s.offset_minutes),
    })
}

/// A `git-commit`.
pub fn git_commit(api: &str, r: &Repo, sha: &str, c: &Commit) -> Value {
    let u = format!("{api}/repos/{}", r.full_name());
    let parents: Vec<Value> = c
        .parents
        .iter()
        .map(|p| {
            json!({
                "sha": p,
                "url": format!("{u}/git/commits/{p}"),
                "html_url": format!("{HTML}/{}/commit/{p}", r.full_name()),
            })
        })
        .collect();
    json!({
        "sha": sha,
        "node_id": format!("C_sim{}", &sha[..12]),
        "url": format!("{u}/git/commits/{sha}"),
        "html_url": format!("{HTML}/{}/commit/{sha}", r.full_name()),
        "author": signature(&c.author),
        "committer": signature(&c.committer),
        "message": c.message,
        "tree": { "sha": c.tree, "url": format!("{u}/git/trees/{}", c.tree) },
        "parents": parents,
        "verification": {
            "verified": false,
            "reason": "unsigned",
            "signature": null,
            "payload": null,
            "verified_at": null,
        },
    })
}

/// One entry of a `git-tree`.
pub fn tree_entry(api: &str, r: &Repo, path: &str, e: &TreeEntry) -> Value {
    let u = format!("{api}/repos/{}", r.full_name());
    let mut v = json!({
        "path": path,
        "mode": e.api_mode(),
        "type": e.kind().as_str(),
        "sha": e.sha,
    });
    match e.kind() {
        ObjectKind::Blob => {
            v["size"] = json!(r.store.blob(&e.sha).map_or(0, <[u8]>::len));
            v["url"] = json!(format!("{u}/git/blobs/{}", e.sha));
        }
        ObjectKind::Tree => v["url"] = json!(format!("{u}/git/trees/{}", e.sha)),
        ObjectKind::Commit => {}
    }
    v
}

/// A `git-tree` with the given entries.
pub fn git_tree(api: &str, r: &Repo, sha: &str, entries: Vec<Value>) -> Value {
    git_tree_listing(api, r, sha, entries, false)
}

/// A `git-tree` listing, `truncated` when entries were left out.
pub fn git_tree_listing(
    api: &str,
    r: &Repo,
    sha: &str,
    entries: Vec<Value>,
    truncated: bool,
) -> Value {
    json!({
        "sha": sha,
        "url": format!("{api}/repos/{}/git/trees/{sha}", r.full_name()),
        "tree": entries,
        "truncated": truncated,
    })
}

/// Base64 the way GitHub sends file content: lines of 60 characters, each
/// ending in a newline.
pub fn base64_lines(bytes: &[u8]) -> String {
    let flat = STANDARD.encode(bytes);
    let mut out = String::with_capacity(flat.len() + flat.len() / 60 + 1);
    for chunk in flat.as_bytes().chunks(60) {
        out.push_str(&String::from_utf8_lossy(chunk));
        out.push('\n');
    }
    out
}

/// A `content-file` (with `content`) or a `content-directory` item
/// (without).
pub fn content_item(
    api: &str,
    r: &Repo,
    git_ref: &str,
    path: &str,
    e: &TreeEntry,
    with_content: bool,
) -> Value {
    let full = r.full_name();
    let name = path.rsplit('/').next().unwrap_or(path);
    let self_url = format!("{api}/repos/{full}/contents/{path}?ref={git_ref}");
    let (kind, git_url, html_url, download) = match e.kind() {
        ObjectKind::Tree => (
            "dir",
            json!(format!("{api}/repos/{full}/git/trees/{}", e.sha)),
            json!(format!("{HTML}/{full}/tree/{git_ref}/{path}")),
            Value::Null,
        ),
        ObjectKind::Commit => ("submodule", Value::Null, Value::Null, Value::Null),
        ObjectKind::Blob => (
            if e.mode == "120000" {
                "symlink"
            } else {
                "file"
            },
            json!(format!("{api}/repos/{full}/git/blobs/{}", e.sha)),
            json!(format!("{HTML}/{full}/blob/{git_ref}/{path}")),
            json!(format!(
                "https://raw.githubusercontent.com/{full}/{git_ref}/{path}"
            )),
        ),
    };
    let blob = r.store.blob(&e.sha);
    let mut v = json!({
        "type": kind,
        "size": blob.map_or(0, <[u8]>::len),
        "name": name,
        "path": path,
        "sha": e.sha,
        "url": self_url,
        "git_url": git_url,
        "html_url": html_url,
        "download_url": download,
        "_links": { "self": self_url, "git": git_url, "html": html_url },
    });
    if with_content {
        if let Some(bytes) = blob {
            v["content"] = json!(base64_lines(bytes));
            v["encoding"] = json!("base64");
        }
    }
    v
}

/// A `pull-request`. `view` carries what is computed on each read
/// (mergeability and the size of the change); `owner_id` is the owning
/// account's id.
#[cfg(feature = "platform")]
pub fn pull_request(api: &str, r: &Repo, p: &PullRequest, owner_id: u64, view: &PullView) -> Value {
    let full = r.full_name();
    let repo_url = format!("{api}/repos/{full}");
    let u = format!("{repo_url}/pulls/{}", p.number);
    let html = format!("{HTML}/{full}/pull/{}", p.number);
    let issue_url = format!("{repo_url}/issues/{}", p.number);
    let comments_url = format!("{issue_url}/comments");
    let review_comments_url = format!("{u}/comments");
    let review_comment_url = format!("{repo_url}/pulls/comments{{/number}}");
    let commits_url = format!("{u}/commits");
    let statuses_url = format!("{repo_url}/statuses/{}", p.head_sha);
    let repo = repository(api, r, owner_id);
    let owner = account(api, &r.owner, owner_id);
    let side = |branch: &str, sha: &str| {
        json!({
            "label": format!("{}:{branch}", r.owner),
            "ref": branch,
            "sha": sha,
            "user": owner,
            "repo": repo,
        })
    };
    let link = |href: &str| json!({ "href": href });
    json!({
        "url": u,
        "id": p.id,
        "node_id": format!("PR_sim{}", p.id),
        "html_url": html,
        "diff_url": format!("{html}.diff"),
        "patch_url": format!("{html}.patch"),
        "issue_url": issue_url,
        "commits_url": commits_url,
        "review_comments_url": review_comments_url,
        "review_comment_url": review_comment_url,
        "comments_url": comments_url,
        "statuses_url": statuses_url,
        "number": p.number,
        "state": if p.open { "open" } else { "closed" },
        "locked": false,
        "title": p.title,
        "user": actor(api, &p.user),
        "body": p.body,
        "labels": [],
        "milestone": null,
        "active_lock_reason": null,
        "created_at": iso(p.created_at),
        "updated_at": iso(p.updated_at),
        "closed_at": p.closed_at.map(iso),
        "merged_at": p.merged_at.map(iso),
        "merge_commit_sha": p.merge_commit_sha,
        "assignee": null,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "head": side(&p.head, &p.head_sha),
        "base": side(&p.base, &p.base_sha),
        "_links": {
            "self": link(&u),
            "html": link(&html),
            "issue": link(&issue_url),
            "comments": link(&comments_url),
            "review_comments": link(&review_comments_url),
            "review_comment": link(&review_comment_url),
            "commits": link(&commits_url),
            "statuses": link(&statuses_url),
        },
        "author_association": "NONE",
        "auto_merge": null,
        "draft": p.draft,
        "merged": p.merged_at.is_some(),
        "mergeable": view.mergeable,
        "rebaseable": null,
        "mergeable_state": view.mergeable_state,
        "merged_by": p.merged_by.as_ref().map(|a| actor(api, a)),
        "comments": 0,
        "review_comments": 0,
        "maintainer_can_modify": false,
        "commits": view.stats.commits,
        "additions": view.stats.additions,
        "deletions": view.stats.deletions,
        "changed_files": view.stats.changed_files,
    })
}

/// A `simple-commit-status` (an item of a combined status).
#[cfg(feature = "platform")]
pub fn simple_status(api: &str, r: &Repo, s: &CommitStatus) -> Value {
    let creator = actor(api, &s.creator);
    json!({
        "id": s.id,
        "node_id": format!("SC_sim{}", s.id),
        "url": format!("{api}/repos/{}/statuses/{}", r.full_name(), s.sha),
        "avatar_url": creator["avatar_url"],
        "state": s.state,
        "description": s.description,
        "target_url": s.target_url,
        "context": s.context,
        "created_at": iso(s.created_at),
        "updated_at": iso(s.created_at),
    })
}

/// A `status` (the answer to creating one): a `simple-commit-status`
/// with its `creator`.
#[cfg(feature = "platform")]
pub fn status(api: &str, r: &Repo, s: &CommitStatus) -> Value {
    let mut v = simple_status(api, r, s);
    v["creator"] = actor(api, &s.creator);
    v
}

/// A `combined-commit-status` around the page of `statuses` given.
#[cfg(feature = "platform")]
pub fn combined_status(
    api: &str,
    r: &Repo,
    owner_id: u64,
    sha: &str,
    state: &str,
    statuses: Vec<Value>,
    total_count: usize,
) -> Value {
    let u = format!("{api}/repos/{}/commits/{sha}", r.full_name());
    json!({
        "state": state,
        "statuses": statuses,
        "sha": sha,
        "total_count": total_count,
        "repository": repository(api, r, owner_id),
        "commit_url": u,
        "url": format!("{u}/status"),
    })
}

/// The account that owns the simulated App.
pub const APP_OWNER: &str = "benchops-sim";

/// An `integration` (`GET /app`).
pub fn app(api: &str, app: &App, installations: usize) -> Value {
    json!({
        "id": app.id,
        "slug": app.slug,
        "node_id": format!("A_sim{}", app.id),
        "client_id": app.client_id,
        "owner": account(api, APP_OWNER, 30_000 + app.id % 10_000),
        "name": app.slug,
        "description": "The GitHub App of the benchops simulator.",
        "external_url": "https://example.invalid/benchops",
        "html_url": format!("{HTML}/apps/{}", app.slug),
        "created_at": iso(app.created_at),
        "updated_at": iso(app.created_at),
        "permissions": permissions_json(&app.permissions),
        "events": ["issues", "issue_comment", "push"],
        "installations_count": installations,
    })
}

/// An `installation`.
pub fn installation(api: &str, app: &App, i: &Installation) -> Value {
    json!({
        "id": i.id,
        "account": account(api, &i.account, i.account_id),
        "repository_selection": i.repository_selection,
        "access_tokens_url": format!("{api}/app/installations/{}/access_tokens", i.id),
        "repositories_url": format!("{api}/installation/repositories"),
        "html_url": format!("{HTML}/organizations/{}/settings/installations/{}", i.account, i.id),
        "app_id": app.id,
        "client_id": app.client_id,
        "app_slug": app.slug,
        "target_id": i.account_id,
        "target_type": "Organization",
        "permissions": permissions_json(&i.permissions),
        "events": ["issues", "issue_comment", "push"],
        "created_at": iso(i.created_at),
        "updated_at": iso(i.created_at),
        "single_file_name": null,
        "has_multiple_single_files": false,
        "single_file_paths": [],
        "suspended_by": null,
        "suspended_at": null,
    })
}

/// Percent-encodes one path segment (label names may hold spaces).
pub fn encode_segment(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}
