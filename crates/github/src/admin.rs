//! Repository settings that provisioning reads and, with an owner's
//! token, creates: the repository itself (its default branch), deployment
//! environments and their branch policies, and repository rulesets.
//!
//! Reads work with an installation token of the read-only
//! [`Phase::Audit`](crate::Phase::Audit) (`actions: read` covers
//! environments, `metadata: read` rulesets and the repository). Writes
//! need `administration: write`, which the publication App never has:
//! they are meant for a client built with
//! [`with_token`](GitHubClient::with_token) from an owner's token, and
//! GitHub refuses them (403) to anything else. None of them is retried
//! after a 5xx (a 5xx may hide a success; provisioning re-reads before it
//! writes again).

use http::Method;
use serde::{Deserialize, Serialize};

use crate::client::{GitHubClient, Op};
use crate::error::GitHubError;
use crate::issues::PER_PAGE;
use crate::names::{Repo, encode_component};
use crate::retry::Idempotency;

const GET_REPO: Op = Op::read("repos.get", "get repository");
const GET_ENVIRONMENT: Op = Op::read("repos.get_environment", "get environment");
const PUT_ENVIRONMENT: Op = Op::admin(
    "repos.create_or_update_environment",
    "create or update environment",
    Idempotency::Idempotent,
);
const LIST_BRANCH_POLICIES: Op = Op::read(
    "repos.list_deployment_branch_policies",
    "list deployment branch policies",
);
const CREATE_BRANCH_POLICY: Op = Op::admin(
    "repos.create_deployment_branch_policy",
    "create deployment branch policy",
    Idempotency::NotIdempotent,
);
const LIST_RULESETS: Op = Op::read("repos.get_repo_rulesets", "list repository rulesets");
const GET_RULESET: Op = Op::read("repos.get_repo_ruleset", "get repository ruleset");
const CREATE_RULESET: Op = Op::admin(
    "repos.create_repo_ruleset",
    "create repository ruleset",
    Idempotency::NotIdempotent,
);

/// A repository, as far as provisioning needs it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Repository {
    /// Its id.
    pub id: u64,
    /// `owner/name`.
    pub full_name: String,
    /// The default branch (`main`).
    pub default_branch: String,
}

/// Which branches may deploy to an environment. `None` on an
/// [`Environment`] means every branch may.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DeploymentBranchPolicy {
    /// Only branches with branch protection.
    pub protected_branches: bool,
    /// Only the branches named by the environment's branch policies.
    pub custom_branch_policies: bool,
}

/// A deployment environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Environment {
    /// Its id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// Which branches may deploy; `None`: all of them.
    #[serde(default)]
    pub deployment_branch_policy: Option<DeploymentBranchPolicy>,
}

/// The body of `PUT …/environments/{name}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct EnvironmentSettings {
    /// Which branches may deploy (`null`: all of them).
    pub deployment_branch_policy: Option<DeploymentBranchPolicy>,
}

/// One deployment branch (or tag) policy of an environment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BranchPolicy {
    /// Its id.
    pub id: u64,
    /// The branch name pattern (`main`, `release/*`).
    pub name: String,
    /// `branch` or `tag` (older servers omit it: a branch).
    #[serde(rename = "type", default)]
    pub kind: Option<String>,
}

impl BranchPolicy {
    /// Whether this policy is for tags rather than branches.
    pub fn is_tag(&self) -> bool {
        self.kind.as_deref() == Some("tag")
    }
}

#[derive(Debug, Deserialize)]
struct BranchPolicyPage {
    total_count: u64,
    branch_policies: Vec<BranchPolicy>,
}

/// An actor that may bypass a ruleset.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BypassActor {
    /// The actor's id (an App id for `Integration`; absent for
    /// `OrganizationAdmin` and `DeployKey`).
    #[serde(default)]
    pub actor_id: Option<u64>,
    /// `Integration`, `RepositoryRole`, `Team`, `OrganizationAdmin` or
    /// `DeployKey`.
    pub actor_type: String,
    /// `always` or `pull_request`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bypass_mode: Option<String>,
}

/// The ref patterns a ruleset applies to.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RefNameCondition {
    /// Included patterns (`refs/heads/benchmark-history`, `~ALL`,
    /// `~DEFAULT_BRANCH`, fnmatch globs).
    #[serde(default)]
    pub include: Vec<String>,
    /// Excluded patterns.
    #[serde(default)]
    pub exclude: Vec<String>,
}

/// A ruleset's conditions (only `ref_name` matters to repository
/// rulesets).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct RulesetConditions {
    /// Which refs it covers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ref_name: Option<RefNameCondition>,
}

/// One rule of a ruleset (`non_fast_forward`, `deletion`, `update`,
/// `creation`, …).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rule {
    /// The rule type.
    #[serde(rename = "type")]
    pub kind: String,
}

impl Rule {
    /// A rule of `kind` without parameters.
    pub fn new(kind: &str) -> Self {
        Rule {
            kind: kind.to_owned(),
        }
    }
}

/// A repository ruleset as `GET …/rulesets` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RulesetSummary {
    /// Its id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// `branch`, `tag` or `push`.
    #[serde(default)]
    pub target: Option<String>,
    /// `active`, `disabled` or `evaluate`.
    pub enforcement: String,
}

/// A repository ruleset in full.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Ruleset {
    /// Its id.
    pub id: u64,
    /// Its name.
    pub name: String,
    /// `branch`, `tag` or `push`.
    #[serde(default)]
    pub target: Option<String>,
    /// `active`, `disabled` or `evaluate`.
    pub enforcement: String,
    /// Who may bypass it. GitHub sends this only to a caller with
    /// `administration` access: `None` means "not shown", not "nobody".
    #[serde(default)]
    pub bypass_actors: Option<Vec<BypassActor>>,
    /// Which refs it covers.
    #[serde(default)]
    pub conditions: Option<RulesetConditions>,
    /// Its rules.
    #[serde(default)]
    pub rules: Vec<Rule>,
}

impl Ruleset {
    /// Whether it has a rule of `kind`.
    pub fn has_rule(&self, kind: &str) -> bool {
        self.rules.iter().any(|r| r.kind == kind)
    }

    /// Its included ref patterns.
    pub fn includes(&self) -> &[String] {
        self.conditions
            .as_ref()
            .and_then(|c| c.ref_name.as_ref())
            .map(|r| r.include.as_slice())
            .unwrap_or(&[])
    }

    /// Its excluded ref patterns.
    pub fn excludes(&self) -> &[String] {
        self.conditions
            .as_ref()
            .and_then(|c| c.ref_name.as_ref())
            .map(|r| r.exclude.as_slice())
            .unwrap_or(&[])
    }
}

/// The body of `POST …/rulesets`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct NewRuleset {
    /// Its name.
    pub name: String,
    /// `branch`.
    pub target: String,
    /// `active`.
    pub enforcement: String,
    /// Who may bypass it.
    pub bypass_actors: Vec<BypassActor>,
    /// Which refs it covers.
    pub conditions: RulesetConditions,
    /// Its rules.
    pub rules: Vec<Rule>,
}

impl GitHubClient {
    /// `GET /repos/{owner}/{repo}`.
    pub async fn get_repository(&self, repo: &Repo) -> Result<Repository, GitHubError> {
        self.send(&GET_REPO, Method::GET, &repo.api_path(), None::<&()>)
            .await?
            .json(&GET_REPO)
    }

    /// `GET /repos/{owner}/{repo}/environments/{name}`; `None` when it does
    /// not exist (404).
    pub async fn get_environment(
        &self,
        repo: &Repo,
        name: &str,
    ) -> Result<Option<Environment>, GitHubError> {
        let path = format!(
            "{}/environments/{}",
            repo.api_path(),
            encode_component(name)
        );
        match self
            .send(&GET_ENVIRONMENT, Method::GET, &path, None::<&()>)
            .await
        {
            Ok(reply) => reply.json(&GET_ENVIRONMENT).map(Some),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// `PUT /repos/{owner}/{repo}/environments/{name}`: creates the
    /// environment or sets its branch policy. Needs `administration:
    /// write`.
    pub async fn put_environment(
        &self,
        repo: &Repo,
        name: &str,
        settings: &EnvironmentSettings,
    ) -> Result<Environment, GitHubError> {
        let path = format!(
            "{}/environments/{}",
            repo.api_path(),
            encode_component(name)
        );
        self.send(&PUT_ENVIRONMENT, Method::PUT, &path, Some(settings))
            .await?
            .json(&PUT_ENVIRONMENT)
    }

    /// `GET …/environments/{name}/deployment-branch-policies`, every page.
    pub async fn list_branch_policies(
        &self,
        repo: &Repo,
        environment: &str,
    ) -> Result<Vec<BranchPolicy>, GitHubError> {
        let mut all = Vec::new();
        for page in 1..=crate::MAX_PAGES {
            let path = format!(
                "{}/environments/{}/deployment-branch-policies?per_page={PER_PAGE}&page={page}",
                repo.api_path(),
                encode_component(environment)
            );
            let reply = self
                .send(&LIST_BRANCH_POLICIES, Method::GET, &path, None::<&()>)
                .await?;
            let p: BranchPolicyPage = reply.json(&LIST_BRANCH_POLICIES)?;
            let empty = p.branch_policies.is_empty();
            all.extend(p.branch_policies);
            if empty || all.len() as u64 >= p.total_count {
                return Ok(all);
            }
        }
        Err(GitHubError::UnexpectedResponse {
            operation: LIST_BRANCH_POLICIES.what,
            reason: format!("more than {} pages", crate::MAX_PAGES),
            request_id: None,
        })
    }

    /// `POST …/environments/{name}/deployment-branch-policies` for the
    /// branch pattern `name`. Needs `administration: write`, and an
    /// environment whose policy has `custom_branch_policies: true`.
    pub async fn create_branch_policy(
        &self,
        repo: &Repo,
        environment: &str,
        name: &str,
    ) -> Result<BranchPolicy, GitHubError> {
        #[derive(Serialize)]
        struct Body<'a> {
            name: &'a str,
            #[serde(rename = "type")]
            kind: &'static str,
        }
        let path = format!(
            "{}/environments/{}/deployment-branch-policies",
            repo.api_path(),
            encode_component(environment)
        );
        let body = Body {
            name,
            kind: "branch",
        };
        self.send(&CREATE_BRANCH_POLICY, Method::POST, &path, Some(&body))
            .await?
            .json(&CREATE_BRANCH_POLICY)
    }

    /// `GET /repos/{owner}/{repo}/rulesets`, every page (the repository's
    /// own and those it inherits).
    pub async fn list_rulesets(&self, repo: &Repo) -> Result<Vec<RulesetSummary>, GitHubError> {
        let path = format!("{}/rulesets?per_page={PER_PAGE}", repo.api_path());
        self.get_all(&LIST_RULESETS, path).await
    }

    /// `GET /repos/{owner}/{repo}/rulesets/{id}`.
    pub async fn get_ruleset(&self, repo: &Repo, id: u64) -> Result<Ruleset, GitHubError> {
        let path = format!("{}/rulesets/{id}", repo.api_path());
        self.send(&GET_RULESET, Method::GET, &path, None::<&()>)
            .await?
            .json(&GET_RULESET)
    }

    /// `POST /repos/{owner}/{repo}/rulesets`. Needs `administration:
    /// write`.
    pub async fn create_ruleset(
        &self,
        repo: &Repo,
        ruleset: &NewRuleset,
    ) -> Result<Ruleset, GitHubError> {
        let path = format!("{}/rulesets", repo.api_path());
        self.send(&CREATE_RULESET, Method::POST, &path, Some(ruleset))
            .await?
            .json(&CREATE_RULESET)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rulesets_read_leniently_and_answer_questions() {
        let r: Ruleset = serde_json::from_str(
            r#"{"id":4,"name":"history","target":"branch","source_type":"Repository",
                "source":"o/r","enforcement":"active",
                "bypass_actors":[{"actor_id":9,"actor_type":"Integration","bypass_mode":"always"}],
                "conditions":{"ref_name":{"include":["refs/heads/benchmark-history"],"exclude":[]}},
                "rules":[{"type":"deletion"},{"type":"non_fast_forward"},
                         {"type":"pull_request","parameters":{"required_approving_review_count":1}}]}"#,
        )
        .expect("parses");
        assert!(r.has_rule("deletion") && r.has_rule("non_fast_forward"));
        assert!(!r.has_rule("update"));
        assert_eq!(r.includes(), ["refs/heads/benchmark-history".to_owned()]);
        assert!(r.excludes().is_empty());
        let bare: Ruleset = serde_json::from_str(r#"{"id":1,"name":"x","enforcement":"disabled"}"#)
            .expect("parses");
        assert!(bare.includes().is_empty() && bare.rules.is_empty());
        assert_eq!(bare.bypass_actors, None, "absent is unknown, not empty");
    }

    #[test]
    fn an_environment_without_policy_allows_every_branch() {
        let e: Environment = serde_json::from_str(
            r#"{"id":1,"name":"benchmark-publication","deployment_branch_policy":null}"#,
        )
        .expect("parses");
        assert_eq!(e.deployment_branch_policy, None);
        let body = serde_json::to_string(&EnvironmentSettings {
            deployment_branch_policy: None,
        })
        .expect("serializes");
        assert_eq!(body, r#"{"deployment_branch_policy":null}"#);
    }
}
