//! The provisioning checks, as pure functions of what is expected and what
//! was read ([`Observed`]). Each check passes or fails with a detail, and a
//! failing one carries its remedy: steps `apply` can take with the right
//! token, or what a person has to change.

use std::collections::BTreeMap;
use std::sync::Arc;

use benchops_github::{
    BranchPolicy, BypassActor, Environment, GitHubError, Installation, Label, NewRuleset,
    RefNameCondition, Rule, Ruleset, RulesetConditions,
};
use globset::{GlobBuilder, GlobMatcher};
use serde::Serialize;

use super::workflow;
use crate::text::error_line;

/// The ref benchops publishes to.
pub const HISTORY_REF: &str = "refs/heads/benchmark-history";
/// Refs a handoff may take; every one must be covered by the handoff
/// ruleset.
pub const HANDOFF_SAMPLES: [&str; 2] = [
    "refs/heads/benchmark-result/record",
    "refs/heads/benchmark-result/nightly/record",
];
/// The pattern of the handoff ruleset `apply` creates.
pub const HANDOFF_PATTERN: &str = "refs/heads/benchmark-result/**/*";
/// The rules the history ruleset must have.
pub const HISTORY_RULES: [&str; 3] = ["deletion", "non_fast_forward", "update"];
/// The rules the handoff ruleset must have.
pub const HANDOFF_RULES: [&str; 2] = ["creation", "update"];

/// What the repository should look like.
#[derive(Debug, Clone)]
pub struct Expected {
    /// The App's id, when known (its bypass entry in the rulesets).
    pub app_id: Option<u64>,
    /// The permissions the App's installation must grant, exactly.
    pub app_permissions: BTreeMap<String, String>,
    /// The publication environment.
    pub environment: String,
    /// The workflow file on the default branch.
    pub workflow_path: String,
    /// Whether execution hands off through `benchmark-result/*` refs.
    pub handoff_refs: bool,
    /// Who may push handoff refs (the execution identity).
    pub execution_actors: Vec<BypassActor>,
    /// Whether handoff refs are written by the App (benchops-app's `POST
    /// /handoff`): then the App's own bypass is enough, and no execution
    /// identity need push.
    pub handoff_via_app: bool,
    /// Labels that must exist, with their colours.
    pub labels: Vec<(String, String, String)>,
}

/// What was read; `Err` says why a part could not be.
#[derive(Debug, Clone)]
pub struct Observed {
    /// The App's installation on the repository.
    pub installation: Result<Installation, ReadError>,
    /// The default branch.
    pub default_branch: Result<String, ReadError>,
    /// The environment and its branch policies (`None`: it does not exist).
    pub environment: Result<Option<(Environment, Vec<BranchPolicy>)>, ReadError>,
    /// Every ruleset, in full.
    pub rulesets: Result<Vec<Ruleset>, ReadError>,
    /// The labels.
    pub labels: Result<Vec<Label>, ReadError>,
    /// The workflow file's bytes (`None`: it does not exist).
    pub workflow: Result<Option<Vec<u8>>, ReadError>,
}

/// Why a part of the repository could not be read. A check that needs it
/// fails with this reason and its causes.
#[derive(Debug, Clone, thiserror::Error)]
pub enum ReadError {
    /// GitHub refused or failed the read (its message names the
    /// operation).
    #[error(transparent)]
    GitHub(Arc<GitHubError>),
    /// The installation is read with the App's own JWT, and no App
    /// credentials were given.
    #[error("it is readable only as the App: pass --app-id and --app-key-file")]
    NotAsApp,
    /// More rulesets than [`super::MAX_RULESETS`] apply.
    #[error("{count} rulesets, more than the {max} read")]
    TooManyRulesets {
        /// How many the repository has.
        count: usize,
        /// How many are read in full.
        max: usize,
    },
    /// One ruleset could not be read in full.
    #[error("ruleset {id}")]
    Ruleset {
        /// Its id.
        id: u64,
        /// GitHub's error.
        #[source]
        source: Arc<GitHubError>,
    },
    /// The read needs the default branch, which could not be read.
    #[error("the default branch is unknown")]
    NoDefaultBranch(#[source] Box<ReadError>),
}

impl From<GitHubError> for ReadError {
    fn from(e: GitHubError) -> Self {
        ReadError::GitHub(Arc::new(e))
    }
}

/// A step `apply` can take.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "step", rename_all = "snake_case")]
pub enum Step {
    /// Create a label (`issues: write`).
    CreateLabel {
        /// Its name.
        name: String,
        /// Its colour.
        color: String,
        /// Its description.
        description: String,
    },
    /// Create the missing environment with custom branch policies
    /// (`administration: write`).
    PutEnvironment {
        /// The environment.
        name: String,
    },
    /// Add a branch policy to the environment (`administration: write`).
    CreateBranchPolicy {
        /// The environment.
        environment: String,
        /// The branch.
        branch: String,
    },
    /// Create a ruleset (`administration: write`).
    CreateRuleset {
        /// What it is for.
        purpose: String,
        /// The request body.
        ruleset: NewRuleset,
    },
}

impl Step {
    /// The permission the step needs.
    pub fn needs(&self) -> &'static str {
        match self {
            Step::CreateLabel { .. } => "issues: write",
            _ => "administration: write",
        }
    }

    /// One line saying what it does.
    pub fn describe(&self) -> String {
        match self {
            Step::CreateLabel { name, color, .. } => format!("create label {name:?} (#{color})"),
            Step::PutEnvironment { name } => {
                format!("create environment {name} with custom branch policies")
            }
            Step::CreateBranchPolicy {
                environment,
                branch,
            } => format!("allow branch {branch} to deploy to environment {environment}"),
            Step::CreateRuleset { purpose, ruleset } => {
                format!("create ruleset {:?} ({purpose})", ruleset.name)
            }
        }
    }
}

/// How a failing check is put right.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Remedy {
    /// Nothing to do.
    None,
    /// `apply` can do it.
    Steps {
        /// In order.
        steps: Vec<Step>,
    },
    /// A person with owner rights has to.
    Manual {
        /// What to change.
        instructions: String,
    },
}

/// One check's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Check {
    /// A stable id (`app-installation`, `environment`, …).
    pub id: &'static str,
    /// Whether it passed.
    pub passed: bool,
    /// What was found.
    pub detail: String,
    /// How to put it right.
    pub remedy: Remedy,
}

fn pass(id: &'static str, detail: impl Into<String>) -> Check {
    Check {
        id,
        passed: true,
        detail: detail.into(),
        remedy: Remedy::None,
    }
}

fn fail(id: &'static str, detail: impl Into<String>, remedy: Remedy) -> Check {
    Check {
        id,
        passed: false,
        detail: detail.into(),
        remedy,
    }
}

fn manual(s: impl Into<String>) -> Remedy {
    Remedy::Manual {
        instructions: s.into(),
    }
}

fn unread(id: &'static str, what: &str, why: &ReadError) -> Check {
    fail(
        id,
        format!("could not read {what}: {}", error_line(why)),
        manual(format!(
            "make {what} readable to the credential used (see the error), then run verify again"
        )),
    )
}

/// Every check, in a fixed order.
pub fn run(expected: &Expected, observed: &Observed) -> Vec<Check> {
    vec![
        installation(expected, observed),
        repository_access(observed),
        environment(expected, observed),
        history_ruleset(expected, observed),
        handoff_ruleset(expected, observed),
        labels(expected, observed),
        workflow_file(expected, observed),
    ]
}

fn show_permissions(p: &BTreeMap<String, String>) -> String {
    let v: Vec<String> = p.iter().map(|(k, v)| format!("{k}: {v}")).collect();
    v.join(", ")
}

fn installation(expected: &Expected, observed: &Observed) -> Check {
    const ID: &str = "app-installation";
    let inst = match &observed.installation {
        Ok(i) => i,
        Err(why) => {
            return fail(
                ID,
                format!(
                    "the App's installation could not be read: {}",
                    error_line(why)
                ),
                manual(
                    "install the App on this repository (Settings → Integrations → GitHub Apps), and run verify with --app-id and --app-key-file so that it can read the installation",
                ),
            );
        }
    };
    if inst.permissions == expected.app_permissions {
        return pass(
            ID,
            format!(
                "installation {} grants exactly {}",
                inst.id,
                show_permissions(&inst.permissions)
            ),
        );
    }
    let mut diffs = Vec::new();
    for (k, v) in &expected.app_permissions {
        match inst.permissions.get(k) {
            Some(got) if got == v => {}
            Some(got) => diffs.push(format!("{k} is {got}, must be {v}")),
            None => diffs.push(format!("{k} is missing, must be {v}")),
        }
    }
    for (k, got) in &inst.permissions {
        if !expected.app_permissions.contains_key(k) {
            diffs.push(format!("{k}: {got} is granted and must not be"));
        }
    }
    fail(
        ID,
        format!("installation {}: {}", inst.id, diffs.join("; ")),
        manual(format!(
            "set the App's permissions to exactly {} (App settings → Permissions & events), then have an owner accept the change on the installation",
            show_permissions(&expected.app_permissions)
        )),
    )
}

fn repository_access(observed: &Observed) -> Check {
    const ID: &str = "app-repository-access";
    match &observed.installation {
        Err(why) => fail(
            ID,
            format!(
                "unknown: the installation could not be read ({})",
                error_line(why)
            ),
            manual("fix app-installation first"),
        ),
        Ok(i) if i.repository_selection.as_deref() == Some("selected") => {
            pass(ID, "the installation is limited to selected repositories")
        }
        Ok(i) => fail(
            ID,
            format!(
                "the installation covers {} repositories",
                i.repository_selection
                    .as_deref()
                    .unwrap_or("an unknown set of")
            ),
            manual(
                "limit the installation to this repository (installation settings → Repository access → Only select repositories)",
            ),
        ),
    }
}

fn environment(expected: &Expected, observed: &Observed) -> Check {
    const ID: &str = "environment";
    let name = &expected.environment;
    let branch = match &observed.default_branch {
        Ok(b) => b,
        Err(why) => return unread(ID, "the repository's default branch", why),
    };
    let want_policy = Step::CreateBranchPolicy {
        environment: name.clone(),
        branch: branch.clone(),
    };
    let (env, policies) = match &observed.environment {
        Err(why) => return unread(ID, &format!("environment {name}"), why),
        Ok(None) => {
            return fail(
                ID,
                format!("environment {name} does not exist"),
                Remedy::Steps {
                    steps: vec![Step::PutEnvironment { name: name.clone() }, want_policy],
                },
            );
        }
        Ok(Some(e)) => e,
    };
    let custom = env
        .deployment_branch_policy
        .is_some_and(|p| p.custom_branch_policies && !p.protected_branches);
    let allowed: Vec<&BranchPolicy> = policies.iter().filter(|p| !p.is_tag()).collect();
    let has_default = allowed.iter().any(|p| &p.name == branch);
    let others: Vec<&str> = allowed
        .iter()
        .filter(|p| &p.name != branch)
        .map(|p| p.name.as_str())
        .collect();
    if custom && has_default && others.is_empty() {
        return pass(
            ID,
            format!("environment {name} allows only the default branch {branch}"),
        );
    }
    if !custom {
        let what = match env.deployment_branch_policy {
            None => "every branch".to_owned(),
            Some(p) if p.protected_branches => "every protected branch".to_owned(),
            Some(_) => "no branch policy in force".to_owned(),
        };
        // The environment exists: apply never changes it (a PUT could
        // reset its reviewers and wait timer).
        return fail(
            ID,
            format!("environment {name} allows {what}, not only {branch}"),
            manual(format!(
                "Settings → Environments → {name} → Deployment branches and tags: choose \"Selected branches and tags\" and add only {branch}"
            )),
        );
    }
    if !others.is_empty() {
        return fail(
            ID,
            format!(
                "environment {name} also allows {}",
                others
                    .iter()
                    .map(|o| format!("{o:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            manual(format!(
                "remove every deployment branch rule of environment {name} but {branch} (Settings → Environments → {name})"
            )),
        );
    }
    fail(
        ID,
        format!("environment {name} does not allow the default branch {branch}"),
        Remedy::Steps {
            steps: vec![want_policy],
        },
    )
}

fn matcher(pattern: &str, default_branch: &str) -> Option<GlobMatcher> {
    let p = match pattern {
        "~ALL" => "**",
        "~DEFAULT_BRANCH" => return matcher(&format!("refs/heads/{default_branch}"), ""),
        p => p,
    };
    GlobBuilder::new(p)
        .literal_separator(true)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// Whether an active branch ruleset applies to `git_ref`.
pub fn covers(r: &Ruleset, git_ref: &str, default_branch: &str) -> bool {
    let hit = |pats: &[String]| {
        pats.iter()
            .any(|p| matcher(p, default_branch).is_some_and(|m| m.is_match(git_ref)))
    };
    r.enforcement == "active"
        && r.target.as_deref().unwrap_or("branch") == "branch"
        && hit(r.includes())
        && !hit(r.excludes())
}

fn is_app(a: &BypassActor, app_id: Option<u64>) -> bool {
    a.actor_type == "Integration" && app_id.is_some() && a.actor_id == app_id
}

fn show_actor(a: &BypassActor) -> String {
    match a.actor_id {
        Some(id) => format!("{} {id}", a.actor_type),
        None => a.actor_type.clone(),
    }
}

fn app_actor(app_id: u64) -> BypassActor {
    BypassActor {
        actor_id: Some(app_id),
        actor_type: "Integration".to_owned(),
        bypass_mode: Some("always".to_owned()),
    }
}

fn new_ruleset(name: &str, pattern: &str, rules: &[&str], actors: Vec<BypassActor>) -> NewRuleset {
    NewRuleset {
        name: name.to_owned(),
        target: "branch".to_owned(),
        enforcement: "active".to_owned(),
        bypass_actors: actors,
        conditions: RulesetConditions {
            ref_name: Some(RefNameCondition {
                include: vec![pattern.to_owned()],
                exclude: Vec::new(),
            }),
        },
        rules: rules.iter().map(|r| Rule::new(r)).collect(),
    }
}

/// The history ruleset `apply` creates for the App `app_id`.
pub fn history_ruleset_body(app_id: u64) -> NewRuleset {
    new_ruleset(
        "benchops: benchmark-history",
        HISTORY_REF,
        &["creation", "deletion", "non_fast_forward", "update"],
        vec![app_actor(app_id)],
    )
}

/// The handoff ruleset `apply` creates.
pub fn handoff_ruleset_body(app_id: u64, execution: &[BypassActor]) -> NewRuleset {
    let mut actors = vec![app_actor(app_id)];
    actors.extend(execution.iter().cloned());
    new_ruleset(
        "benchops: benchmark-result handoffs",
        HANDOFF_PATTERN,
        &["creation", "update"],
        actors,
    )
}

/// What to do when GitHub hides who may bypass a ruleset.
const SHOW_ACTORS: &str = "GitHub shows a ruleset's bypass actors only to a caller with administration access: run verify again with --token-env naming an owner's token";

fn hidden_actors(r: &Ruleset) -> String {
    format!(
        "ruleset {:?} (id {}) does not show who may bypass it to this credential",
        r.name, r.id
    )
}

fn history_ruleset(expected: &Expected, observed: &Observed) -> Check {
    const ID: &str = "history-ruleset";
    let (rulesets, branch) = match (&observed.rulesets, &observed.default_branch) {
        (Err(why), _) => return unread(ID, "the rulesets", why),
        (_, Err(why)) => return unread(ID, "the repository's default branch", why),
        (Ok(r), Ok(b)) => (r, b),
    };
    let Some(app_id) = expected.app_id else {
        return fail(
            ID,
            "the App's id is not known, so who may write cannot be checked",
            manual("run verify with --app-id"),
        );
    };
    let covering: Vec<&Ruleset> = rulesets
        .iter()
        .filter(|r| covers(r, HISTORY_REF, branch))
        .collect();
    let mut problems = Vec::new();
    let mut hidden = false;
    for r in &covering {
        let Some(actors) = &r.bypass_actors else {
            hidden = true;
            problems.push(hidden_actors(r));
            continue;
        };
        let others: Vec<String> = actors
            .iter()
            .filter(|a| !is_app(a, Some(app_id)))
            .map(show_actor)
            .collect();
        if !others.is_empty() {
            problems.push(format!(
                "ruleset {:?} (id {}) also lets {} bypass it",
                r.name,
                r.id,
                others.join(", ")
            ));
        }
        let restricts = r.has_rule("update") || r.has_rule("creation");
        if restricts && !actors.iter().any(|a| is_app(a, Some(app_id))) {
            problems.push(format!(
                "ruleset {:?} (id {}) restricts writes but does not let the App {app_id} bypass it, so publication would be refused",
                r.name, r.id
            ));
        }
    }
    let missing: Vec<&str> = HISTORY_RULES
        .iter()
        .copied()
        .filter(|rule| !covering.iter().any(|r| r.has_rule(rule)))
        .collect();
    if problems.is_empty() && missing.is_empty() {
        return pass(
            ID,
            format!(
                "{} active ruleset(s) on benchmark-history forbid force pushes and deletion and let only the App {app_id} write",
                covering.len()
            ),
        );
    }
    if !problems.is_empty() {
        let mut detail = problems.join("; ");
        if !missing.is_empty() {
            detail.push_str(&format!("; no active ruleset has {}", missing.join(", ")));
        }
        let fix = if hidden {
            format!(
                "{SHOW_ACTORS}; and make sure only the App (Integration {app_id}) may bypass them"
            )
        } else {
            format!(
                "edit the named rulesets (Settings → Rules → Rulesets) so that only the App (Integration {app_id}) may bypass them"
            )
        };
        return fail(ID, detail, manual(fix));
    }
    fail(
        ID,
        format!(
            "no active ruleset on benchmark-history has the rule(s) {}",
            missing.join(", ")
        ),
        Remedy::Steps {
            steps: vec![Step::CreateRuleset {
                purpose: "benchmark-history: no force push, no deletion, only the App writes"
                    .to_owned(),
                ruleset: history_ruleset_body(app_id),
            }],
        },
    )
}

fn handoff_ruleset(expected: &Expected, observed: &Observed) -> Check {
    const ID: &str = "handoff-ruleset";
    if !expected.handoff_refs {
        return pass(
            ID,
            "not needed: handoffs do not use refs (no --handoff-refs)",
        );
    }
    let (rulesets, branch) = match (&observed.rulesets, &observed.default_branch) {
        (Err(why), _) => return unread(ID, "the rulesets", why),
        (_, Err(why)) => return unread(ID, "the repository's default branch", why),
        (Ok(r), Ok(b)) => (r, b),
    };
    let app_id = expected.app_id;
    let mut problems = Vec::new();
    let mut covering_all: Vec<&Ruleset> = Vec::new();
    for sample in HANDOFF_SAMPLES {
        let covering: Vec<&Ruleset> = rulesets
            .iter()
            .filter(|r| covers(r, sample, branch))
            .collect();
        for rule in HANDOFF_RULES {
            if !covering.iter().any(|r| r.has_rule(rule)) {
                problems.push(format!("no active ruleset restricts {rule} of {sample}"));
            }
        }
        for r in covering {
            if !covering_all.iter().any(|c| c.id == r.id) {
                covering_all.push(r);
            }
        }
    }
    let mut hidden = false;
    for r in &covering_all {
        let Some(actors) = &r.bypass_actors else {
            hidden = true;
            problems.push(hidden_actors(r));
            continue;
        };
        let executors: Vec<&BypassActor> = actors.iter().filter(|a| !is_app(a, app_id)).collect();
        if (r.has_rule("creation") || r.has_rule("update"))
            && executors.is_empty()
            && !expected.handoff_via_app
        {
            problems.push(format!(
                "ruleset {:?} (id {}) lets no execution identity push handoff refs",
                r.name, r.id
            ));
        }
        for a in &executors {
            if !expected.execution_actors.is_empty()
                && !expected
                    .execution_actors
                    .iter()
                    .any(|e| e.actor_type == a.actor_type && e.actor_id == a.actor_id)
            {
                problems.push(format!(
                    "ruleset {:?} (id {}) lets {} push handoff refs, which is not an execution identity given",
                    r.name,
                    r.id,
                    show_actor(a)
                ));
            }
        }
        if r.has_rule("deletion") && !actors.iter().any(|a| is_app(a, app_id)) {
            problems.push(format!(
                "ruleset {:?} (id {}) forbids deletion without letting the App bypass it, so consumed handoff refs would stay",
                r.name, r.id
            ));
        }
    }
    if problems.is_empty() {
        let who = match (
            expected.handoff_via_app,
            expected.execution_actors.is_empty(),
        ) {
            (true, true) => "only the App (POST /handoff)",
            (true, false) => "only the App (POST /handoff) and the execution identity",
            (false, _) => "only the execution identity",
        };
        return pass(
            ID,
            format!(
                "{} active ruleset(s) let {who} push benchmark-result/* refs",
                covering_all.len()
            ),
        );
    }
    let remedy = match (
        covering_all.is_empty(),
        app_id,
        expected.execution_actors.is_empty() && !expected.handoff_via_app,
    ) {
        (true, Some(id), false) => Remedy::Steps {
            steps: vec![Step::CreateRuleset {
                purpose: "benchmark-result/*: only the execution identity pushes handoffs"
                    .to_owned(),
                ruleset: handoff_ruleset_body(id, &expected.execution_actors),
            }],
        },
        (true, _, _) => manual(format!(
            "create a branch ruleset on {HANDOFF_PATTERN} restricting creation and updates, with the execution identity (a deploy key or machine user) as bypass actor; or run apply with --app-id and --execution-actor"
        )),
        (false, _, _) if hidden => manual(SHOW_ACTORS),
        (false, _, _) => manual(
            "edit the named rulesets (Settings → Rules → Rulesets) so that only the execution identity may push benchmark-result/* refs",
        ),
    };
    fail(ID, problems.join("; "), remedy)
}

fn labels(expected: &Expected, observed: &Observed) -> Check {
    const ID: &str = "labels";
    let have = match &observed.labels {
        Ok(l) => l,
        Err(why) => return unread(ID, "the labels", why),
    };
    let mut missing = Vec::new();
    let mut recolor = Vec::new();
    for (name, color, description) in &expected.labels {
        match have.iter().find(|l| l.name.eq_ignore_ascii_case(name)) {
            None => missing.push(Step::CreateLabel {
                name: name.clone(),
                color: color.clone(),
                description: description.clone(),
            }),
            Some(l) if !l.color.eq_ignore_ascii_case(color) => {
                recolor.push(format!("{name:?} is #{}, not #{color}", l.color));
            }
            Some(_) => {}
        }
    }
    if missing.is_empty() && recolor.is_empty() {
        return pass(
            ID,
            format!(
                "all {} labels exist with their colours",
                expected.labels.len()
            ),
        );
    }
    let mut detail: Vec<String> = missing
        .iter()
        .map(|s| match s {
            Step::CreateLabel { name, .. } => format!("{name:?} is missing"),
            _ => String::new(),
        })
        .collect();
    detail.extend(recolor.iter().cloned());
    let remedy = if recolor.is_empty() {
        Remedy::Steps { steps: missing }
    } else {
        manual(format!(
            "recolour the labels (Issues → Labels, or `gh label edit NAME --color HEX`): {}{}",
            recolor.join("; "),
            if missing.is_empty() {
                ""
            } else {
                "; then run apply to create the missing ones"
            }
        ))
    };
    fail(ID, detail.join("; "), remedy)
}

fn workflow_file(expected: &Expected, observed: &Observed) -> Check {
    const ID: &str = "workflow";
    let path = &expected.workflow_path;
    let branch = observed
        .default_branch
        .as_deref()
        .unwrap_or("the default branch");
    let bytes = match &observed.workflow {
        Err(why) => return unread(ID, path, why),
        Ok(None) => {
            return fail(
                ID,
                format!("{path} does not exist on {branch}"),
                manual(format!(
                    "copy workflows/benchmark-publication.yml to {path} on {branch} and set its MANIFEST and action pin"
                )),
            );
        }
        Ok(Some(b)) => b,
    };
    let problems = workflow::problems(bytes, &expected.environment);
    if problems.is_empty() {
        pass(
            ID,
            format!(
                "{path} on {branch}: schedule and workflow_dispatch only, contents: read, id-token only in the {} job",
                expected.environment
            ),
        )
    } else {
        fail(
            ID,
            format!("{path} on {branch}: {}", problems.join("; ")),
            manual(format!("edit {path} on {branch} as each problem says")),
        )
    }
}
