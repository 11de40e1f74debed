//! `benchops-publish provision plan|apply|verify`: whether a repository is
//! set up to publish benchmarks, read through the API, as a pass/fail
//! checklist ([`checks`]); what `apply` would change; and `apply` itself,
//! which creates what is missing where its token allows and lists what an
//! owner has to do by hand.
//!
//! Credentials:
//! - **The App** (`--app-id` with `--app-key-file`): the installation is
//!   read as the App (only the App can read it), and everything else with a
//!   read-only installation token of [`Phase::Audit`], revoked at the end.
//!   `apply` creates labels with an issues-phase token. The App never holds
//!   `administration`, so it cannot create environments or rulesets.
//! - **An owner's token** (`--token-env VAR`, the variable holding it; for
//!   example from `gh auth token`): used for every read but the
//!   installation, and for `apply`'s environment, branch-policy and
//!   ruleset steps, which need `administration: write`.
//!
//! Nothing here updates or deletes anything: `apply` only creates (a
//! missing label, the missing environment with its default-branch policy,
//! a missing branch policy, a missing ruleset), and what would need a
//! change to something that exists is a manual step.

pub mod checks;
pub mod workflow;

use std::collections::BTreeMap;
use std::path::PathBuf;

use benchops_github::{
    AppClient, AppId, AppKey, BypassActor, DeploymentBranchPolicy, EnvironmentSettings,
    GitHubClient, GitHubError, LabelSpec, Phase, Repo, Token,
};
use serde::Serialize;

pub use checks::{Check, Expected, Observed, Remedy, Step};

use crate::github::{ClientSettings, build_client_with};
use crate::sweep;

/// The environment the publication job deploys to.
pub const DEFAULT_ENVIRONMENT: &str = "benchmark-publication";
/// Where the publication workflow lives on the default branch.
pub const DEFAULT_WORKFLOW_PATH: &str = ".github/workflows/benchmark-publication.yml";
/// The schema name of the JSON report.
pub const REPORT_SCHEMA: &str = "provision-report/v1";
/// The largest App key file read, in bytes.
pub const MAX_KEY_BYTES: u64 = 64 * 1024;
/// The most rulesets read in full.
pub const MAX_RULESETS: usize = 200;

/// The permissions the App's installation must grant, exactly (those of
/// `app-manifest/benchops-app.json`).
pub fn app_permissions() -> BTreeMap<String, String> {
    [
        ("actions", "read"),
        ("contents", "write"),
        ("issues", "write"),
        ("metadata", "read"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect()
}

/// Parses an `--execution-actor`: `TYPE` or `TYPE:ID`, where TYPE is one
/// of GitHub's bypass actor types.
pub fn parse_actor(s: &str) -> Result<BypassActor, String> {
    const TYPES: [&str; 5] = [
        "Integration",
        "RepositoryRole",
        "Team",
        "OrganizationAdmin",
        "DeployKey",
    ];
    let (kind, id) = match s.split_once(':') {
        Some((k, id)) => (
            k,
            Some(
                id.parse::<u64>()
                    .map_err(|_| format!("{s:?}: the id after ':' must be a number"))?,
            ),
        ),
        None => (s, None),
    };
    if !TYPES.contains(&kind) {
        return Err(format!(
            "{s:?}: the actor type must be one of {}",
            TYPES.join(", ")
        ));
    }
    let needs_id = !matches!(kind, "OrganizationAdmin" | "DeployKey");
    if needs_id != id.is_some() {
        return Err(if needs_id {
            format!("{s:?}: {kind} needs an id ({kind}:ID)")
        } else {
            format!("{s:?}: {kind} takes no id")
        });
    }
    Ok(BypassActor {
        actor_id: id,
        actor_type: kind.to_owned(),
        bypass_mode: Some("always".to_owned()),
    })
}

/// What `provision` works on.
#[derive(Debug, Clone)]
pub struct ProvisionOptions {
    /// `owner/name`.
    pub repo: String,
    /// The schedule manifest (its labels and lanes).
    pub manifest: PathBuf,
    /// The App's id.
    pub app_id: Option<u64>,
    /// The App's private key file.
    pub app_key_file: Option<PathBuf>,
    /// An owner's token.
    pub owner_token: Option<Token>,
    /// The publication environment.
    pub environment: String,
    /// The workflow file on the default branch.
    pub workflow_path: String,
    /// Whether handoffs come as `benchmark-result/*` refs.
    pub handoff_refs: bool,
    /// Who pushes handoff refs.
    pub execution_actors: Vec<BypassActor>,
    /// Handoff refs are written by benchops-app (`POST /handoff`).
    pub handoff_via_app: bool,
    /// The missed-run label the workflow's sweep sets, if any.
    pub missed_run_label: Option<String>,
    /// The health issue's label the workflow's sweep sets, if any.
    pub health_label: Option<String>,
    /// How the client is built.
    pub client: ClientSettings,
}

impl ProvisionOptions {
    /// Options with the defaults: the default environment and workflow
    /// path, no handoff refs, the default missed-run label.
    pub fn new(repo: impl Into<String>, manifest: impl Into<PathBuf>) -> Self {
        ProvisionOptions {
            repo: repo.into(),
            manifest: manifest.into(),
            app_id: None,
            app_key_file: None,
            owner_token: None,
            environment: DEFAULT_ENVIRONMENT.to_owned(),
            workflow_path: DEFAULT_WORKFLOW_PATH.to_owned(),
            handoff_refs: false,
            execution_actors: Vec::new(),
            handoff_via_app: false,
            missed_run_label: Some("benchmark-missed-run".to_owned()),
            health_label: Some(sweep::health_issue::DEFAULT_HEALTH_LABEL.to_owned()),
            client: ClientSettings::default(),
        }
    }
}

/// Which subcommand made a report.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    /// Checks only.
    Verify,
    /// Checks, and what `apply` would do.
    Plan,
    /// Steps taken, then checks again.
    Apply,
}

/// A step and how it went (or, for `plan`, who would take it).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct StepOutcome {
    /// The step.
    #[serde(flatten)]
    pub step: Step,
    /// `done`, `failed`, `would_do` (plan) or `needs_owner`.
    pub outcome: &'static str,
    /// The credential that takes it (`owner token`, `App issues token`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub credential: Option<&'static str>,
    /// Why it failed, or what is needed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// The report of one `provision` command (`provision-report/v1`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// `provision-report/v1`.
    pub schema: &'static str,
    /// Which subcommand.
    pub mode: Mode,
    /// `owner/name`.
    pub repository: String,
    /// Whether every check passed (for `apply`: after its steps).
    pub passed: bool,
    /// The checks (for `apply`: after its steps).
    pub checks: Vec<Check>,
    /// `plan`: the steps `apply` would take; `apply`: those it took.
    pub steps: Vec<StepOutcome>,
    /// What a person has to do, one instruction per failing check.
    pub manual: Vec<String>,
}

/// Why `provision` could not run at all.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct ProvisionError(pub String);

fn err(what: &str) -> impl Fn(GitHubError) -> ProvisionError + '_ {
    move |e| ProvisionError(format!("{what}: {e}"))
}

struct Session {
    repo: Repo,
    client: GitHubClient,
    app: Option<AppClient>,
    owner: Option<GitHubClient>,
    expected: Expected,
}

fn expected(opts: &ProvisionOptions) -> Result<Expected, ProvisionError> {
    let manifest = sweep::load_manifest(&opts.manifest).map_err(|e| {
        ProvisionError(format!(
            "{}: {}",
            e.step,
            crate::text::error_line(&*e.cause)
        ))
    })?;
    let mut labels: Vec<(String, String, String)> = sweep::label_needs(&manifest, &[])
        .into_iter()
        .map(|l| (l.name, l.color, l.description))
        .collect();
    if let Some(label) = &opts.missed_run_label {
        let l = sweep::missed_run_label_need(label);
        labels.push((l.name, l.color, l.description));
    }
    if let Some(label) = &opts.health_label {
        let l = sweep::health_label_need(label);
        labels.push((l.name, l.color, l.description));
    }
    Ok(Expected {
        app_id: opts.app_id,
        app_permissions: app_permissions(),
        environment: opts.environment.clone(),
        workflow_path: opts.workflow_path.clone(),
        handoff_refs: opts.handoff_refs,
        execution_actors: opts.execution_actors.clone(),
        handoff_via_app: opts.handoff_via_app,
        labels,
    })
}

fn session(opts: &ProvisionOptions) -> Result<Session, ProvisionError> {
    let repo = Repo::parse(&opts.repo).map_err(err("--repo"))?;
    let client = build_client_with(&opts.client)
        .map_err(|e| ProvisionError(crate::text::error_line(&*e.cause)))?;
    let app = match (opts.app_id, &opts.app_key_file) {
        (Some(id), Some(file)) => {
            // Bounded and non-blocking, like every file the publisher reads.
            let pem = benchops::fsio::read_input_file(file, MAX_KEY_BYTES)
                .map_err(|e| ProvisionError(format!("{}: {e}", file.display())))?;
            let key = AppKey::from_pem(AppId::new(id), &pem)
                .map_err(|e| ProvisionError(format!("{}: {e}", file.display())))?;
            Some(client.app(key))
        }
        _ => None,
    };
    let owner = opts.owner_token.clone().map(|t| client.with_token(t));
    if app.is_none() && owner.is_none() {
        return Err(ProvisionError(
            "provision needs --app-id with --app-key-file (or BENCHOPS_APP_KEY_FILE), --token-env VAR, or both"
                .to_owned(),
        ));
    }
    Ok(Session {
        repo,
        client,
        app,
        owner,
        expected: expected(opts)?,
    })
}

fn reason(e: &GitHubError) -> String {
    e.to_string()
}

/// Reads everything the checks need. The reads use the owner's token when
/// there is one, else an audit-phase installation token (revoked before
/// returning).
async fn observe(s: &Session) -> Result<Observed, ProvisionError> {
    let installation = match &s.app {
        Some(app) => app.repo_installation(&s.repo).await.map_err(|e| reason(&e)),
        None => Err("it is readable only as the App: pass --app-id and --app-key-file".to_owned()),
    };
    let (reads, minted) = match (&s.owner, &s.app, &installation) {
        (Some(owner), _, _) => (owner.clone(), false),
        (None, Some(app), Ok(inst)) => {
            let token = app
                .create_installation_token(inst.id, Phase::Audit, std::slice::from_ref(&s.repo))
                .await
                .map_err(err("mint a read-only installation token"))?;
            (s.client.with_installation_token(&token), true)
        }
        (None, _, Err(why)) => {
            return Err(ProvisionError(format!(
                "the App's installation on {} cannot be read, and no --token-env was given: {why}",
                s.repo
            )));
        }
        (None, None, Ok(_)) => unreachable!("an installation is only read with the App"),
    };
    let observed = read_all(s, &reads, installation).await;
    if let Err(why) = &observed.default_branch {
        if minted {
            let _ = reads.revoke_token().await;
        }
        return Err(ProvisionError(format!(
            "{} cannot be read with this credential: {why}",
            s.repo
        )));
    }
    if minted {
        // A failed revocation leaves a read-only token to expire within
        // the hour; say so, but the checks stand.
        if let Err(e) = reads.revoke_token().await {
            eprintln!("warning: could not revoke the read-only token: {e}");
        }
    }
    Ok(observed)
}

async fn read_all(
    s: &Session,
    gh: &GitHubClient,
    installation: Result<benchops_github::Installation, String>,
) -> Observed {
    let repo = &s.repo;
    let default_branch = gh
        .get_repository(repo)
        .await
        .map(|r| r.default_branch)
        .map_err(|e| reason(&e));
    let environment = match gh.get_environment(repo, &s.expected.environment).await {
        Ok(None) => Ok(None),
        Ok(Some(env)) => match gh.list_branch_policies(repo, &env.name).await {
            Ok(p) => Ok(Some((env, p))),
            // An environment that allows every branch has no policy list.
            Err(e) if e.is_not_found() => Ok(Some((env, Vec::new()))),
            Err(e) => Err(reason(&e)),
        },
        Err(e) => Err(reason(&e)),
    };
    let rulesets = match gh.list_rulesets(repo).await {
        Ok(list) if list.len() > MAX_RULESETS => Err(format!(
            "{} rulesets, more than the {MAX_RULESETS} read",
            list.len()
        )),
        Ok(list) => {
            let mut full = Vec::with_capacity(list.len());
            let mut failed = None;
            for r in list {
                match gh.get_ruleset(repo, r.id).await {
                    Ok(f) => full.push(f),
                    Err(e) => {
                        failed = Some(format!("ruleset {}: {e}", r.id));
                        break;
                    }
                }
            }
            failed.map_or(Ok(full), Err)
        }
        Err(e) => Err(reason(&e)),
    };
    let labels = gh.list_labels(repo).await.map_err(|e| reason(&e));
    let workflow = match &default_branch {
        Ok(branch) => match gh.get_file(repo, &s.expected.workflow_path, branch).await {
            Ok(f) => Ok(Some(f.bytes)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(reason(&e)),
        },
        Err(why) => Err(format!("the default branch is unknown: {why}")),
    };
    Observed {
        installation,
        default_branch,
        environment,
        rulesets,
        labels,
        workflow,
    }
}

fn manual_steps(checks: &[Check]) -> Vec<String> {
    checks
        .iter()
        .filter_map(|c| match &c.remedy {
            Remedy::Manual { instructions } => Some(format!("{}: {instructions}", c.id)),
            _ => None,
        })
        .collect()
}

fn steps_of(checks: &[Check]) -> Vec<Step> {
    checks
        .iter()
        .flat_map(|c| match &c.remedy {
            Remedy::Steps { steps } => steps.clone(),
            _ => Vec::new(),
        })
        .collect()
}

fn report(mode: Mode, s: &Session, checks: Vec<Check>, steps: Vec<StepOutcome>) -> Report {
    let mut manual = manual_steps(&checks);
    for st in &steps {
        if st.outcome == "needs_owner" || st.outcome == "failed" {
            manual.push(format!(
                "{}: {}",
                st.step.describe(),
                st.note.as_deref().unwrap_or("")
            ));
        }
    }
    Report {
        schema: REPORT_SCHEMA,
        mode,
        repository: s.repo.to_string(),
        passed: checks.iter().all(|c| c.passed),
        checks,
        steps,
        manual,
    }
}

/// Who can take a step: the owner's token for anything, the App's
/// issues-phase token for labels.
fn credential(s: &Session, step: &Step) -> Option<&'static str> {
    match (step, &s.owner, &s.app) {
        (_, Some(_), _) => Some("owner token"),
        (Step::CreateLabel { .. }, None, Some(_)) => Some("App issues token"),
        _ => None,
    }
}

fn needs_owner(step: &Step) -> String {
    format!(
        "needs a token with {}: run apply with --token-env VAR naming an owner's token, or do it by hand",
        step.needs()
    )
}

/// `provision verify`.
pub async fn verify(opts: &ProvisionOptions) -> Result<Report, ProvisionError> {
    let s = session(opts)?;
    let observed = observe(&s).await?;
    let checks = checks::run(&s.expected, &observed);
    Ok(report(Mode::Verify, &s, checks, Vec::new()))
}

/// `provision plan`: the checks, and what `apply` would do with the
/// credentials given.
pub async fn plan(opts: &ProvisionOptions) -> Result<Report, ProvisionError> {
    let s = session(opts)?;
    let observed = observe(&s).await?;
    let checks = checks::run(&s.expected, &observed);
    let steps = steps_of(&checks)
        .into_iter()
        .map(|step| {
            let credential = credential(&s, &step);
            StepOutcome {
                outcome: if credential.is_some() {
                    "would_do"
                } else {
                    "needs_owner"
                },
                note: credential.is_none().then(|| needs_owner(&step)),
                credential,
                step,
            }
        })
        .collect();
    Ok(report(Mode::Plan, &s, checks, steps))
}

/// `provision apply`: takes every step the credentials allow, in order,
/// then checks again.
pub async fn apply(opts: &ProvisionOptions) -> Result<Report, ProvisionError> {
    let s = session(opts)?;
    let observed = observe(&s).await?;
    let before = checks::run(&s.expected, &observed);
    let mut issues_client: Option<GitHubClient> = None;
    let mut outcomes = Vec::new();
    for step in steps_of(&before) {
        let Some(credential) = credential(&s, &step) else {
            outcomes.push(StepOutcome {
                note: Some(needs_owner(&step)),
                step,
                outcome: "needs_owner",
                credential: None,
            });
            continue;
        };
        let gh = match (&s.owner, &step) {
            (Some(owner), _) => owner.clone(),
            (None, _) => match issues_client.clone() {
                Some(c) => c,
                None => match mint_issues(&s).await {
                    Ok(c) => {
                        issues_client = Some(c.clone());
                        c
                    }
                    Err(e) => {
                        outcomes.push(StepOutcome {
                            note: Some(e.0),
                            step,
                            outcome: "failed",
                            credential: Some(credential),
                        });
                        continue;
                    }
                },
            },
        };
        let result = take(&gh, &s.repo, &step).await;
        outcomes.push(StepOutcome {
            outcome: if result.is_ok() { "done" } else { "failed" },
            note: result.err().map(|e| e.to_string()),
            credential: Some(credential),
            step,
        });
    }
    if let Some(c) = issues_client {
        if let Err(e) = c.revoke_token().await {
            eprintln!("warning: could not revoke the issues-phase token: {e}");
        }
    }
    let observed = observe(&s).await?;
    let after = checks::run(&s.expected, &observed);
    Ok(report(Mode::Apply, &s, after, outcomes))
}

async fn mint_issues(s: &Session) -> Result<GitHubClient, ProvisionError> {
    let app = s
        .app
        .as_ref()
        .ok_or_else(|| ProvisionError("no App credentials".to_owned()))?;
    let inst = app
        .repo_installation(&s.repo)
        .await
        .map_err(err("read the installation"))?;
    let token = app
        .create_installation_token(inst.id, Phase::Issues, std::slice::from_ref(&s.repo))
        .await
        .map_err(err("mint an issues-phase token"))?;
    Ok(s.client.with_installation_token(&token))
}

async fn take(gh: &GitHubClient, repo: &Repo, step: &Step) -> Result<(), GitHubError> {
    match step {
        Step::CreateLabel {
            name,
            color,
            description,
        } => {
            gh.ensure_labels(
                repo,
                &[LabelSpec {
                    name: name.clone(),
                    color: color.clone(),
                    description: Some(description.clone()),
                }],
            )
            .await?;
        }
        Step::PutEnvironment { name } => {
            let settings = EnvironmentSettings {
                deployment_branch_policy: Some(DeploymentBranchPolicy {
                    protected_branches: false,
                    custom_branch_policies: true,
                }),
            };
            gh.put_environment(repo, name, &settings).await?;
        }
        Step::CreateBranchPolicy {
            environment,
            branch,
        } => {
            gh.create_branch_policy(repo, environment, branch).await?;
        }
        Step::CreateRuleset { ruleset, .. } => {
            gh.create_ruleset(repo, ruleset).await?;
        }
    }
    Ok(())
}

/// Runs `f` on a new single-threaded runtime (what the CLI calls).
pub fn blocking<T>(
    f: impl Future<Output = Result<T, ProvisionError>>,
) -> Result<T, ProvisionError> {
    sweep::block_on(f).map_err(|e| ProvisionError(crate::text::error_line(&*e.cause)))?
}

/// The report as text: one line per check, its remedy under a failing one,
/// then the steps and a count.
pub fn render_text(r: &Report) -> String {
    let mut out = format!(
        "provision {}: {}\n",
        match r.mode {
            Mode::Verify => "verify",
            Mode::Plan => "plan",
            Mode::Apply => "apply",
        },
        r.repository
    );
    if !r.steps.is_empty() {
        out.push_str("steps:\n");
        for st in &r.steps {
            out.push_str(&format!(
                "  {:<11} {}{}\n",
                st.outcome,
                st.step.describe(),
                st.note
                    .as_deref()
                    .map(|n| format!(" ({n})"))
                    .unwrap_or_default()
            ));
        }
    }
    for c in &r.checks {
        out.push_str(&format!(
            "{}  {:<22} {}\n",
            if c.passed { "PASS" } else { "FAIL" },
            c.id,
            c.detail
        ));
        match &c.remedy {
            Remedy::None => {}
            Remedy::Steps { steps } => {
                for st in steps {
                    out.push_str(&format!(
                        "      apply can: {} [{}]\n",
                        st.describe(),
                        st.needs()
                    ));
                }
            }
            Remedy::Manual { instructions } => {
                out.push_str(&format!("      by hand: {instructions}\n"));
            }
        }
    }
    let passed = r.checks.iter().filter(|c| c.passed).count();
    out.push_str(&format!(
        "{passed} of {} checks passed{}\n",
        r.checks.len(),
        if r.passed {
            ""
        } else {
            ": not ready to publish"
        }
    ));
    out
}
