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

pub use checks::{Check, Expected, Observed, ReadError, Remedy, Step};

use crate::github::{ClientSettings, build_client_with};
use crate::sweep::{self, StepError};
use crate::text::error_line;

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

/// GitHub's bypass actor types, as `--execution-actor` takes them.
pub const ACTOR_TYPES: [&str; 5] = [
    "Integration",
    "RepositoryRole",
    "Team",
    "OrganizationAdmin",
    "DeployKey",
];

/// Why an `--execution-actor` does not parse; each message starts with
/// the value given.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ActorError {
    /// The part after `:` is not a number.
    #[error("{0:?}: the id after ':' must be a number")]
    Id(String),
    /// Not one of [`ACTOR_TYPES`].
    #[error("{0:?}: the actor type must be one of {types}", types = ACTOR_TYPES.join(", "))]
    Type(String),
    /// A type that needs an id, given none.
    #[error("{value:?}: {kind} needs an id ({kind}:ID)")]
    NeedsId {
        /// The value given.
        value: String,
        /// Its type.
        kind: String,
    },
    /// A type that takes no id, given one.
    #[error("{value:?}: {kind} takes no id")]
    TakesNoId {
        /// The value given.
        value: String,
        /// Its type.
        kind: String,
    },
}

/// Parses an `--execution-actor`: `TYPE` or `TYPE:ID`, where TYPE is one
/// of GitHub's bypass actor types ([`ACTOR_TYPES`]).
pub fn parse_actor(s: &str) -> Result<BypassActor, ActorError> {
    let (kind, id) = match s.split_once(':') {
        Some((k, id)) => (
            k,
            Some(
                id.parse::<u64>()
                    .map_err(|_| ActorError::Id(s.to_owned()))?,
            ),
        ),
        None => (s, None),
    };
    if !ACTOR_TYPES.contains(&kind) {
        return Err(ActorError::Type(s.to_owned()));
    }
    let needs_id = !matches!(kind, "OrganizationAdmin" | "DeployKey");
    if needs_id != id.is_some() {
        let (value, kind) = (s.to_owned(), kind.to_owned());
        return Err(if needs_id {
            ActorError::NeedsId { value, kind }
        } else {
            ActorError::TakesNoId { value, kind }
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

/// Why `provision` could not run at all. Printed with its causes
/// ([`error_line`]).
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    /// `--repo` is not `owner/name`.
    #[error("--repo")]
    Repo(#[source] Box<GitHubError>),
    /// The GitHub client could not be built (`GITHUB_API_URL`, TLS).
    #[error("{}", error_line(&*.0.cause))]
    Client(StepError),
    /// The schedule manifest cannot be read or is invalid.
    #[error("{}: {}", .0.step, error_line(&*.0.cause))]
    Manifest(StepError),
    /// The App key file cannot be read.
    #[error("read the App key file {}", path.display())]
    KeyRead {
        /// The file.
        path: PathBuf,
        /// The OS error (or why the file is refused).
        #[source]
        source: std::io::Error,
    },
    /// The App key file is not an RSA private key.
    #[error("use the App key file {}", path.display())]
    Key {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: Box<GitHubError>,
    },
    /// Neither the App nor an owner's token was given.
    #[error(
        "provision needs --app-id with --app-key-file (or BENCHOPS_APP_KEY_FILE), --token-env VAR, or both"
    )]
    NoCredential,
    /// `apply` needs the App to mint an issues-phase token, and has none.
    #[error("no App credentials")]
    NoAppCredentials,
    /// The App's installation could not be read to mint a token.
    #[error("read the installation")]
    ReadInstallation(#[source] Box<GitHubError>),
    /// The read-only (audit-phase) installation token could not be minted.
    #[error("mint a read-only installation token")]
    MintReadToken(#[source] Box<GitHubError>),
    /// The issues-phase installation token could not be minted.
    #[error("mint an issues-phase token")]
    MintIssuesToken(#[source] Box<GitHubError>),
    /// With the App alone, its installation cannot be read: nothing can be.
    #[error("the App's installation on {repo} cannot be read, and no --token-env was given")]
    Installation {
        /// The repository.
        repo: Repo,
        /// Why.
        #[source]
        source: ReadError,
    },
    /// The repository itself cannot be read with the credential used.
    #[error("{repo} cannot be read with this credential")]
    Repository {
        /// The repository.
        repo: Repo,
        /// Why.
        #[source]
        source: ReadError,
    },
    /// The runtime the commands run on could not start.
    #[error("{}", error_line(&*.0.cause))]
    Runtime(StepError),
}

struct Session {
    repo: Repo,
    client: GitHubClient,
    app: Option<AppClient>,
    owner: Option<GitHubClient>,
    expected: Expected,
}

fn expected(opts: &ProvisionOptions) -> Result<Expected, ProvisionError> {
    let manifest = sweep::load_manifest(&opts.manifest).map_err(ProvisionError::Manifest)?;
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
    let repo = Repo::parse(&opts.repo).map_err(|e| ProvisionError::Repo(Box::new(e)))?;
    let client = build_client_with(&opts.client).map_err(ProvisionError::Client)?;
    let app = match (opts.app_id, &opts.app_key_file) {
        (Some(id), Some(file)) => {
            // Bounded and non-blocking, like every file the publisher reads.
            let pem = benchops::fsio::read_input_file(file, MAX_KEY_BYTES).map_err(|source| {
                ProvisionError::KeyRead {
                    path: file.clone(),
                    source,
                }
            })?;
            let key =
                AppKey::from_pem(AppId::new(id), &pem).map_err(|source| ProvisionError::Key {
                    path: file.clone(),
                    source: Box::new(source),
                })?;
            Some(client.app(key))
        }
        _ => None,
    };
    let owner = opts.owner_token.clone().map(|t| client.with_token(t));
    if app.is_none() && owner.is_none() {
        return Err(ProvisionError::NoCredential);
    }
    Ok(Session {
        repo,
        client,
        app,
        owner,
        expected: expected(opts)?,
    })
}

/// Reads everything the checks need. The reads use the owner's token when
/// there is one, else an audit-phase installation token (revoked before
/// returning).
async fn observe(s: &Session) -> Result<Observed, ProvisionError> {
    let installation = match &s.app {
        Some(app) => app
            .repo_installation(&s.repo)
            .await
            .map_err(ReadError::from),
        None => Err(ReadError::NotAsApp),
    };
    let (reads, minted) = match (&s.owner, &s.app, &installation) {
        (Some(owner), _, _) => (owner.clone(), false),
        (None, Some(app), Ok(inst)) => {
            let token = app
                .create_installation_token(inst.id, Phase::Audit, std::slice::from_ref(&s.repo))
                .await
                .map_err(|e| ProvisionError::MintReadToken(Box::new(e)))?;
            (s.client.with_installation_token(&token), true)
        }
        (None, _, Err(why)) => {
            return Err(ProvisionError::Installation {
                repo: s.repo.clone(),
                source: why.clone(),
            });
        }
        (None, None, Ok(_)) => unreachable!("an installation is only read with the App"),
    };
    let observed = read_all(s, &reads, installation).await;
    if let Err(why) = &observed.default_branch {
        if minted {
            let _ = reads.revoke_token().await;
        }
        return Err(ProvisionError::Repository {
            repo: s.repo.clone(),
            source: why.clone(),
        });
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
    installation: Result<benchops_github::Installation, ReadError>,
) -> Observed {
    let repo = &s.repo;
    let default_branch = gh
        .get_repository(repo)
        .await
        .map(|r| r.default_branch)
        .map_err(ReadError::from);
    let environment = match gh.get_environment(repo, &s.expected.environment).await {
        Ok(None) => Ok(None),
        Ok(Some(env)) => match gh.list_branch_policies(repo, &env.name).await {
            Ok(p) => Ok(Some((env, p))),
            // An environment that allows every branch has no policy list.
            Err(e) if e.is_not_found() => Ok(Some((env, Vec::new()))),
            Err(e) => Err(e.into()),
        },
        Err(e) => Err(e.into()),
    };
    let rulesets = match gh.list_rulesets(repo).await {
        Ok(list) if list.len() > MAX_RULESETS => Err(ReadError::TooManyRulesets {
            count: list.len(),
            max: MAX_RULESETS,
        }),
        Ok(list) => {
            let mut full = Vec::with_capacity(list.len());
            let mut failed = None;
            for r in list {
                match gh.get_ruleset(repo, r.id).await {
                    Ok(f) => full.push(f),
                    Err(e) => {
                        failed = Some(ReadError::Ruleset {
                            id: r.id,
                            source: std::sync::Arc::new(e),
                        });
                        break;
                    }
                }
            }
            failed.map_or(Ok(full), Err)
        }
        Err(e) => Err(e.into()),
    };
    let labels = gh.list_labels(repo).await.map_err(ReadError::from);
    let workflow = match &default_branch {
        Ok(branch) => match gh.get_file(repo, &s.expected.workflow_path, branch).await {
            Ok(f) => Ok(Some(f.bytes)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e.into()),
        },
        Err(why) => Err(ReadError::NoDefaultBranch(Box::new(why.clone()))),
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
                            note: Some(error_line(&e)),
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
    let app = s.app.as_ref().ok_or(ProvisionError::NoAppCredentials)?;
    let inst = app
        .repo_installation(&s.repo)
        .await
        .map_err(|e| ProvisionError::ReadInstallation(Box::new(e)))?;
    let token = app
        .create_installation_token(inst.id, Phase::Issues, std::slice::from_ref(&s.repo))
        .await
        .map_err(|e| ProvisionError::MintIssuesToken(Box::new(e)))?;
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
    sweep::block_on(f).map_err(ProvisionError::Runtime)?
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
