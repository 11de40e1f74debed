//! The webhook events the router handles, and what is taken from each
//! payload at intake (after its signature is verified).
//!
//! Parsing is tolerant: GitHub's older examples lack newer fields, so every
//! field is optional and a missing one means "not said", never a default
//! that could be mistaken for a fact. What the worker needs is kept as a
//! small [`Work`] extract (stored in the inbox), not the payload.

use serde::{Deserialize, Serialize};

/// The events this router subscribes to and handles (the App manifest's
/// `default_events` must equal [`SUBSCRIBED_EVENTS`]).
pub const HANDLED_EVENTS: &[&str] = &[
    "ping",
    "installation",
    "installation_repositories",
    "issues",
    "push",
    "workflow_run",
];

/// The events an App subscribes to in its manifest: [`HANDLED_EVENTS`]
/// without `ping`, `installation` and `installation_repositories`, which
/// GitHub delivers to every App without a subscription.
pub const SUBSCRIBED_EVENTS: &[&str] = &["issues", "push", "workflow_run"];

/// The `issues` actions recorded on drift issues.
pub const ISSUE_ACTIONS: &[&str] = &["closed", "reopened", "labeled", "unlabeled"];

/// A name and an id, as payloads give repositories.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepoRef {
    /// `OWNER/NAME`.
    pub full_name: String,
    /// The numeric id.
    pub id: u64,
}

/// What the worker has to do for one delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Work {
    /// `installation`: created, deleted, suspend, unsuspend, ...
    Installation {
        /// The action.
        action: String,
        /// The installation id.
        id: u64,
        /// The account's login.
        account: String,
        /// The repositories listed (for `created`).
        repositories: Vec<RepoRef>,
    },
    /// `installation_repositories`: added or removed.
    InstallationRepositories {
        /// The installation id.
        id: u64,
        /// The account's login.
        account: String,
        /// Repositories added.
        added: Vec<RepoRef>,
        /// Repositories removed.
        removed: Vec<RepoRef>,
    },
    /// `issues` on a drift issue.
    Issue {
        /// `OWNER/NAME`.
        repository: String,
        /// The issue number.
        number: u64,
        /// Its title.
        title: String,
        /// The drift key its body's marker names (`<case>/<metric>`), if any,
        /// read only when a bot opened the issue (a person's issue could
        /// carry a copied marker); `/status` trusts it only when that bot
        /// is this App's.
        drift_key: Option<String>,
        /// Who opened the issue.
        #[serde(default)]
        author: Option<String>,
        /// closed, reopened, labeled, unlabeled.
        action: String,
        /// The label added or removed.
        label: Option<String>,
        /// Who did it.
        actor: String,
        /// The actor is a bot.
        actor_is_bot: bool,
        /// When (the issue's `updated_at`, else the delivery time).
        at: String,
    },
    /// `push` to the history branch.
    HistoryPush {
        /// `OWNER/NAME`.
        repository: String,
        /// The installation the delivery came through.
        installation: Option<u64>,
        /// The new tip.
        after: String,
        /// Whether the push was forced.
        forced: bool,
        /// The sender's login.
        sender: String,
        /// The sender is a bot.
        sender_is_bot: bool,
    },
    /// `workflow_run` of the publication workflow.
    WorkflowRun {
        /// `OWNER/NAME`.
        repository: String,
        /// The run id.
        run_id: u64,
        /// The attempt.
        run_attempt: u64,
        /// The workflow file.
        workflow_path: String,
        /// The event that started it.
        event: String,
        /// queued, in_progress, completed.
        status: String,
        /// The conclusion, once completed.
        conclusion: Option<String>,
        /// The run's `updated_at`.
        at: String,
    },
}

/// How a verified delivery is routed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    /// `ping`: answered at once.
    Ping,
    /// Work for the worker.
    Work(Work),
    /// A handled event that needs nothing (a push to another branch, an
    /// issue that is not a drift issue): acknowledged, with the reason.
    NothingToDo(&'static str),
    /// An event this router does not handle.
    Unhandled,
}

/// Why a verified payload could not be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{event} payload: {reason}")]
pub struct PayloadError {
    /// The event.
    pub event: String,
    /// Why (the JSON path and what was wrong, no payload text).
    pub reason: String,
}

#[derive(Deserialize)]
struct Account {
    login: Option<String>,
}
#[derive(Deserialize)]
struct InstallationObj {
    id: u64,
    account: Option<Account>,
}
#[derive(Deserialize)]
struct Repository {
    full_name: String,
}
#[derive(Deserialize)]
struct Sender {
    login: Option<String>,
    #[serde(rename = "type")]
    kind: Option<String>,
}
#[derive(Deserialize)]
struct Label {
    name: Option<String>,
}
#[derive(Deserialize)]
struct IssueObj {
    number: u64,
    title: Option<String>,
    body: Option<String>,
    #[serde(default)]
    labels: Vec<Label>,
    updated_at: Option<String>,
    user: Option<Sender>,
}
#[derive(Deserialize)]
struct InstallationPayload {
    action: String,
    installation: InstallationObj,
    #[serde(default)]
    repositories: Option<Vec<RepoRef>>,
}
#[derive(Deserialize)]
struct InstallationReposPayload {
    installation: InstallationObj,
    #[serde(default)]
    repositories_added: Vec<RepoRef>,
    #[serde(default)]
    repositories_removed: Vec<RepoRefLoose>,
}
/// Removed repositories sometimes lack `full_name` in old payloads.
#[derive(Deserialize)]
struct RepoRefLoose {
    id: u64,
    full_name: Option<String>,
}
#[derive(Deserialize)]
struct IssuesPayload {
    action: String,
    issue: IssueObj,
    label: Option<Label>,
    repository: Repository,
    sender: Option<Sender>,
}
#[derive(Deserialize)]
struct PushPayload {
    #[serde(rename = "ref")]
    git_ref: String,
    after: String,
    #[serde(default)]
    forced: bool,
    repository: Repository,
    sender: Option<Sender>,
    installation: Option<InstallationIdOnly>,
}
#[derive(Deserialize)]
struct InstallationIdOnly {
    id: u64,
}
#[derive(Deserialize)]
struct RunObj {
    id: u64,
    run_attempt: Option<u64>,
    path: Option<String>,
    event: Option<String>,
    status: Option<String>,
    conclusion: Option<String>,
    updated_at: Option<String>,
}
#[derive(Deserialize)]
struct WorkflowObj {
    path: Option<String>,
}
#[derive(Deserialize)]
struct WorkflowRunPayload {
    workflow_run: RunObj,
    workflow: Option<WorkflowObj>,
    repository: Repository,
}

/// What [`route`] needs to know of the configuration.
#[derive(Debug, Clone)]
pub struct RouteRules {
    /// The drift label (`labels.drift` of the schedule manifest).
    pub drift_label: String,
    /// The history branch ref, `refs/heads/benchmark-history`.
    pub history_ref: String,
    /// The publication workflow file.
    pub workflow_path: String,
}

fn parse<'a, T: Deserialize<'a>>(event: &str, body: &'a [u8]) -> Result<T, PayloadError> {
    // The fast path; only a payload that does not parse is read again, to
    // name the JSON path of the problem.
    if let Ok(v) = serde_json::from_slice(body) {
        return Ok(v);
    }
    let de = &mut serde_json::Deserializer::from_slice(body);
    serde_path_to_error::deserialize(de).map_err(|e| PayloadError {
        event: event.to_owned(),
        reason: json_problem(&e),
    })
}

/// What is wrong with a JSON document, without any text of it: the JSON
/// path and what was expected there (`at installation.id: invalid type,
/// expected u64`), or where the syntax broke. serde's own message quotes
/// the value it met (`invalid type: string "…", expected u64`) and the
/// name of an unknown field or variant; neither is kept.
pub fn json_problem(e: &serde_path_to_error::Error<serde_json::Error>) -> String {
    let inner = e.inner();
    let at = format!("line {} column {}", inner.line(), inner.column());
    match inner.classify() {
        serde_json::error::Category::Data => {
            format!(
                "at {}: {} ({at})",
                e.path(),
                data_problem(&inner.to_string())
            )
        }
        // Syntax and end-of-input messages name a token class and a
        // position, never input text.
        _ => inner.to_string(),
    }
}

/// serde's data error without the value it quotes: its kind and, where
/// given, what was expected (which the schema, not the input, says).
fn data_problem(message: &str) -> String {
    let message = message.rsplit_once(" at line ").map_or(message, |(m, _)| m);
    // Names from the schema, not from the input.
    if message.starts_with("missing field `") || message.starts_with("duplicate field `") {
        return message.to_owned();
    }
    for kind in [
        "invalid type",
        "invalid value",
        "invalid length",
        "unknown variant",
        "unknown field",
    ] {
        if message.starts_with(kind) {
            // The last ", expected " is serde's: a quoted value comes before.
            return match message.rsplit_once(", expected ") {
                Some((_, expected)) => format!("{kind}, expected {expected}"),
                None => kind.to_owned(),
            };
        }
    }
    "a value this server cannot use".to_owned()
}

/// Routes a verified delivery. `now` stands in for a missing timestamp.
pub fn route(
    event: &str,
    body: &[u8],
    rules: &RouteRules,
    now: &str,
) -> Result<Route, PayloadError> {
    Ok(match event {
        "ping" => Route::Ping,
        "installation" => {
            let p: InstallationPayload = parse(event, body)?;
            Route::Work(Work::Installation {
                action: p.action,
                id: p.installation.id,
                account: p
                    .installation
                    .account
                    .and_then(|a| a.login)
                    .unwrap_or_default(),
                repositories: p.repositories.unwrap_or_default(),
            })
        }
        "installation_repositories" => {
            let p: InstallationReposPayload = parse(event, body)?;
            Route::Work(Work::InstallationRepositories {
                id: p.installation.id,
                account: p
                    .installation
                    .account
                    .and_then(|a| a.login)
                    .unwrap_or_default(),
                added: p.repositories_added,
                removed: p
                    .repositories_removed
                    .into_iter()
                    .map(|r| RepoRef {
                        full_name: r.full_name.unwrap_or_default(),
                        id: r.id,
                    })
                    .collect(),
            })
        }
        "issues" => {
            let p: IssuesPayload = parse(event, body)?;
            if !ISSUE_ACTIONS.contains(&p.action.as_str()) {
                return Ok(Route::NothingToDo("issue action not recorded"));
            }
            let label = p.label.and_then(|l| l.name);
            let drift = p
                .issue
                .labels
                .iter()
                .any(|l| l.name.as_deref() == Some(rules.drift_label.as_str()))
                || label.as_deref() == Some(rules.drift_label.as_str());
            if !drift {
                return Ok(Route::NothingToDo("not a drift issue"));
            }
            let (actor, kind) = p
                .sender
                .map(|s| (s.login.unwrap_or_default(), s.kind))
                .unwrap_or_default();
            let title = p.issue.title.unwrap_or_default();
            let (author, author_kind) = p.issue.user.map(|u| (u.login, u.kind)).unwrap_or_default();
            let by_a_bot = author_kind.as_deref() == Some("Bot");
            let drift_key = p.issue.body.filter(|_| by_a_bot).and_then(|body| {
                benchops::reconcile::ActualIssue::from_body(
                    p.issue.number,
                    title.clone(),
                    body,
                    benchops::reconcile::IssueState::Open,
                    None,
                    Vec::new(),
                )
                .key
                .map(|k| k.marker_value())
            });
            Route::Work(Work::Issue {
                repository: p.repository.full_name,
                number: p.issue.number,
                title,
                drift_key,
                author,
                action: p.action,
                label,
                actor,
                actor_is_bot: kind.as_deref() == Some("Bot"),
                at: p.issue.updated_at.unwrap_or_else(|| now.to_owned()),
            })
        }
        "push" => {
            let p: PushPayload = parse(event, body)?;
            if p.git_ref != rules.history_ref {
                return Ok(Route::NothingToDo("push to another branch"));
            }
            let (sender, kind) = p
                .sender
                .map(|s| (s.login.unwrap_or_default(), s.kind))
                .unwrap_or_default();
            Route::Work(Work::HistoryPush {
                repository: p.repository.full_name,
                installation: p.installation.map(|i| i.id),
                after: p.after,
                forced: p.forced,
                sender,
                sender_is_bot: kind.as_deref() == Some("Bot"),
            })
        }
        "workflow_run" => {
            let p: WorkflowRunPayload = parse(event, body)?;
            let path = p
                .workflow_run
                .path
                .or(p.workflow.and_then(|w| w.path))
                .unwrap_or_default();
            // `path` may carry `@ref` in newer payloads.
            let file = path.split('@').next().unwrap_or_default().to_owned();
            if file != rules.workflow_path {
                return Ok(Route::NothingToDo("not the publication workflow"));
            }
            Route::Work(Work::WorkflowRun {
                repository: p.repository.full_name,
                run_id: p.workflow_run.id,
                run_attempt: p.workflow_run.run_attempt.unwrap_or(1),
                workflow_path: file,
                event: p.workflow_run.event.unwrap_or_default(),
                status: p.workflow_run.status.unwrap_or_default(),
                conclusion: p.workflow_run.conclusion,
                at: p.workflow_run.updated_at.unwrap_or_else(|| now.to_owned()),
            })
        }
        _ => Route::Unhandled,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rules() -> RouteRules {
        RouteRules {
            drift_label: "benchmark-drift".into(),
            history_ref: "refs/heads/benchmark-history".into(),
            workflow_path: ".github/workflows/publish.yml".into(),
        }
    }

    #[test]
    fn a_push_to_another_branch_needs_nothing_and_one_to_history_is_work() {
        let other = br#"{"ref":"refs/heads/main","after":"abc","repository":{"full_name":"o/r"}}"#;
        assert_eq!(
            route("push", other, &rules(), "t").expect("parses"),
            Route::NothingToDo("push to another branch")
        );
        let hist = br#"{"ref":"refs/heads/benchmark-history","after":"abc","forced":true,
            "repository":{"full_name":"o/r"},"sender":{"login":"mallory","type":"User"},
            "installation":{"id":9}}"#;
        match route("push", hist, &rules(), "t").expect("parses") {
            Route::Work(Work::HistoryPush {
                sender,
                forced,
                installation,
                sender_is_bot,
                ..
            }) => {
                assert_eq!(sender, "mallory");
                assert!(forced);
                assert!(!sender_is_bot);
                assert_eq!(installation, Some(9));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_drift_marker_is_read_only_from_an_issue_a_bot_opened() {
        let body = |kind: &str| {
            serde_json::json!({
                "action": "closed",
                "issue": {"number": 4, "title": "t", "labels": [{"name": "benchmark-drift"}],
                          "body": "<!-- benchops:drift key=parse/large/wall_s -->\ntext",
                          "user": {"login": "someone", "type": kind}},
                "repository": {"full_name": "o/r"},
                "sender": {"login": "octocat", "type": "User"}
            })
            .to_string()
        };
        let key_of = |kind: &str| match route("issues", body(kind).as_bytes(), &rules(), "t") {
            Ok(Route::Work(Work::Issue {
                drift_key, author, ..
            })) => (drift_key, author),
            other => panic!("{other:?}"),
        };
        assert_eq!(
            key_of("Bot"),
            (
                Some("parse/large/wall_s".to_owned()),
                Some("someone".to_owned())
            )
        );
        assert_eq!(key_of("User"), (None, Some("someone".to_owned())));
    }

    #[test]
    fn a_bad_payload_names_the_path_without_quoting_the_body() {
        let e = route(
            "push",
            br#"{"ref": 7, "secret": "do-not-echo"}"#,
            &rules(),
            "t",
        )
        .expect_err("refused");
        assert!(e.reason.contains("ref"), "{e}");
        assert!(!e.to_string().contains("do-not-echo"), "{e}");
    }

    #[test]
    fn a_wrong_value_is_named_by_its_path_and_type_never_quoted() {
        let body = br#"{"action":"created","installation":{"id":"ghp_LEAKED_FROM_PAYLOAD"}}"#;
        let e = route("installation", body, &rules(), "t").expect_err("refused");
        assert!(!e.to_string().contains("LEAKED"), "{e}");
        assert!(e.reason.contains("installation.id"), "{e}");
        assert!(e.reason.contains("expected u64"), "{e}");
        // A value that imitates serde's own wording is not kept either.
        let body = br#"{"action":"created","installation":{"id":"x, expected LEAKED"}}"#;
        let e = route("installation", body, &rules(), "t").expect_err("refused");
        assert!(!e.to_string().contains("LEAKED"), "{e}");
        // A number, an array and an object in the wrong place.
        for body in [
            &br#"{"ref":12345678987654321,"after":"a","repository":{"full_name":"o/r"}}"#[..],
            br#"{"ref":"refs/heads/x","after":["LEAKED"],"repository":{"full_name":"o/r"}}"#,
            br#"{"ref":"refs/heads/x","after":"a","repository":{"full_name":{"LEAKED":1}}}"#,
        ] {
            let e = route("push", body, &rules(), "t").expect_err("refused");
            let text = e.to_string();
            assert!(
                !text.contains("LEAKED") && !text.contains("12345678987654321"),
                "{text}"
            );
            assert!(text.contains("expected"), "{text}");
        }
        // A syntax error says where, not what.
        let e = route("push", b"{\"ref\": LEAKED}", &rules(), "t").expect_err("refused");
        assert!(!e.to_string().contains("LEAKED"), "{e}");
        assert!(e.reason.contains("line 1"), "{e}");
    }

    #[test]
    fn issues_route_only_drift_issues_and_recorded_actions() {
        let body = |action: &str, label: &str| {
            format!(
                r#"{{"action":"{action}","issue":{{"number":4,"title":"t","labels":[{{"name":"{label}"}}]}},
                "repository":{{"full_name":"o/r"}},"sender":{{"login":"octocat","type":"User"}}}}"#
            )
        };
        assert!(matches!(
            route(
                "issues",
                body("closed", "benchmark-drift").as_bytes(),
                &rules(),
                "t"
            ),
            Ok(Route::Work(Work::Issue { .. }))
        ));
        assert_eq!(
            route("issues", body("closed", "bug").as_bytes(), &rules(), "t"),
            Ok(Route::NothingToDo("not a drift issue"))
        );
        assert_eq!(
            route(
                "issues",
                body("edited", "benchmark-drift").as_bytes(),
                &rules(),
                "t"
            ),
            Ok(Route::NothingToDo("issue action not recorded"))
        );
    }

    #[test]
    fn subscribed_events_are_the_handled_ones_github_does_not_send_unasked() {
        let mut handled: Vec<&str> = HANDLED_EVENTS.to_vec();
        handled.retain(|e| !matches!(*e, "ping" | "installation" | "installation_repositories"));
        assert_eq!(handled, SUBSCRIBED_EVENTS);
    }
}
