//! Architectural invariants of the dependency graph, read from
//! `cargo metadata`: the executor never links the GitHub client, only the
//! GitHub crate talks to GitHub, and the core stays free of async/network
//! stacks. The platform lane's exception (ADR 0003) is a crate boundary:
//! `benchops-platform` holds the only GitHub REST client outside
//! `benchops-github`, links neither that crate nor the publisher, and exec
//! reaches GitHub's REST API only through it. History is read through
//! `benchops-history` (no GitHub client), by exec, the publisher and the
//! App, and the App does not link the publisher.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::process::Command;

use serde_json::Value;

/// The resolved graph: package id -> name, and id -> dependencies with
/// whether each is a normal (non-dev, non-build) dependency.
struct Graph {
    names: BTreeMap<String, String>,
    deps: BTreeMap<String, Vec<(String, bool)>>,
}

impl Graph {
    fn load() -> Self {
        let cargo = option_env!("CARGO").unwrap_or("cargo");
        let out = Command::new(cargo)
            .args(["metadata", "--format-version", "1"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("cargo metadata runs");
        assert!(
            out.status.success(),
            "cargo metadata failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata is JSON");
        let names = meta["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .map(|p| {
                (
                    p["id"].as_str().expect("package id").to_owned(),
                    p["name"].as_str().expect("package name").to_owned(),
                )
            })
            .collect();
        let deps = meta["resolve"]["nodes"]
            .as_array()
            .expect("resolve graph (not --no-deps)")
            .iter()
            .map(|n| {
                let id = n["id"].as_str().expect("node id").to_owned();
                let deps = n["deps"]
                    .as_array()
                    .expect("node deps")
                    .iter()
                    .map(|d| {
                        let pkg = d["pkg"].as_str().expect("dep pkg").to_owned();
                        let normal = d["dep_kinds"]
                            .as_array()
                            .expect("dep kinds")
                            .iter()
                            .any(|k| k["kind"].is_null());
                        (pkg, normal)
                    })
                    .collect();
                (id, deps)
            })
            .collect();
        Graph { names, deps }
    }

    fn name<'a>(&'a self, id: &'a str) -> &'a str {
        self.names.get(id).map_or(id, String::as_str)
    }

    fn id_of(&self, name: &str) -> String {
        let ids: Vec<&String> = self
            .names
            .iter()
            .filter(|(_, n)| *n == name)
            .map(|(id, _)| id)
            .collect();
        assert_eq!(ids.len(), 1, "exactly one package named {name}: {ids:?}");
        ids[0].clone()
    }

    /// Names of every package reachable from `root` through normal
    /// dependencies (not including `root`).
    fn normal_closure(&self, root: &str) -> BTreeSet<String> {
        let start = self.id_of(root);
        let mut seen = BTreeSet::from([start.clone()]);
        let mut queue = VecDeque::from([start.clone()]);
        while let Some(id) = queue.pop_front() {
            for (dep, normal) in self.deps.get(&id).into_iter().flatten() {
                if *normal && seen.insert(dep.clone()) {
                    queue.push_back(dep.clone());
                }
            }
        }
        seen.remove(&start);
        seen.iter().map(|id| self.name(id).to_owned()).collect()
    }

    /// Names of the normal (non-dev, non-build) direct dependencies of
    /// `name`.
    fn normal_deps(&self, name: &str) -> BTreeSet<String> {
        let id = self.id_of(name);
        self.deps
            .get(&id)
            .into_iter()
            .flatten()
            .filter(|(_, normal)| *normal)
            .map(|(dep, _)| self.name(dep).to_owned())
            .collect()
    }

    /// Names of packages that depend directly (any kind) on `name`.
    fn direct_dependents(&self, name: &str) -> BTreeSet<String> {
        self.deps
            .iter()
            .filter(|(_, deps)| deps.iter().any(|(d, _)| self.name(d) == name))
            .map(|(id, _)| self.name(id).to_owned())
            .collect()
    }
}

#[test]
fn exec_does_not_link_the_github_crate() {
    let g = Graph::load();
    let closure = g.normal_closure("benchops-exec");
    assert!(
        closure.contains("benchops"),
        "sanity: exec depends on the core: {closure:?}"
    );
    assert!(
        !closure.contains("benchops-github"),
        "benchops-exec must not depend on benchops-github: {closure:?}"
    );
    // The publisher, the App and the simulator all reach GitHub's client;
    // `handoff` talks to the App over plain HTTP instead.
    for forbidden in [
        "octocrab",
        "jsonwebtoken",
        "benchops-publish",
        "benchops-app",
        "benchops-testkit",
    ] {
        assert!(
            !closure.contains(forbidden),
            "benchops-exec must not depend on {forbidden}"
        );
    }
    assert!(
        closure.contains("reqwest"),
        "sanity: exec's HTTP client for `handoff` is visible: {closure:?}"
    );
    assert!(
        closure.contains("benchops-platform"),
        "sanity: exec calls the platform lane's crate: {closure:?}"
    );
}

#[test]
fn the_platform_crate_links_no_publication_code() {
    let g = Graph::load();
    let closure = g.normal_closure("benchops-platform");
    assert!(
        closure.contains("benchops") && closure.contains("reqwest"),
        "sanity: the platform crate's core and HTTP client are visible: {closure:?}"
    );
    for forbidden in [
        "benchops-github",
        "benchops-publish",
        "benchops-app",
        "benchops-exec",
        "benchops-testkit",
        "octocrab",
        "jsonwebtoken",
    ] {
        assert!(
            !closure.contains(forbidden),
            "benchops-platform must not depend on {forbidden}: {closure:?}"
        );
    }
}

#[test]
fn history_is_read_through_the_history_crate_which_links_no_github_client() {
    let g = Graph::load();
    let closure = g.normal_closure("benchops-history");
    assert!(
        closure.contains("benchops"),
        "sanity: the history crate depends on the core: {closure:?}"
    );
    for forbidden in [
        "benchops-github",
        "benchops-publish",
        "benchops-app",
        "benchops-exec",
        "benchops-platform",
        "benchops-testkit",
        "octocrab",
        "jsonwebtoken",
        "reqwest",
        "hyper",
        "tokio",
    ] {
        assert!(
            !closure.contains(forbidden),
            "benchops-history must not depend on {forbidden}: {closure:?}"
        );
    }
    // Exec (a lane's baseline), the publisher (its local store) and the
    // App (its status page) read history through it.
    for reader in ["benchops-exec", "benchops-publish", "benchops-app"] {
        assert!(
            g.normal_deps(reader).contains("benchops-history"),
            "{reader} reads history through benchops-history"
        );
    }
    // The App links the history crate, not the publisher.
    let app = g.normal_closure("benchops-app");
    assert!(
        !app.contains("benchops-publish"),
        "benchops-app must not depend on benchops-publish: {app:?}"
    );
}

#[test]
fn the_shared_command_line_crate_links_no_runner_and_no_publication_code() {
    let g = Graph::load();
    let closure = g.normal_closure("benchops-cli");
    assert!(
        closure.contains("benchops") && closure.contains("clap"),
        "sanity: the command-line crate depends on the core and clap: {closure:?}"
    );
    for forbidden in [
        "benchops-github",
        "benchops-publish",
        "benchops-app",
        "benchops-exec",
        "benchops-platform",
        "benchops-history",
        "benchops-testkit",
        "octocrab",
        "reqwest",
        "tokio",
    ] {
        assert!(
            !closure.contains(forbidden),
            "benchops-cli must not depend on {forbidden}: {closure:?}"
        );
    }
    // Both CLIs take their global options and config file from it.
    for user in ["benchops-exec", "benchops-publish"] {
        assert!(
            g.normal_deps(user).contains("benchops-cli"),
            "{user} parses its command line through benchops-cli"
        );
    }
}

/// What only a GitHub REST client sends: the API version header and
/// GitHub's media type.
const GITHUB_REST_MARKERS: [&str; 2] = ["x-github-api-version", "application/vnd.github"];

/// The source trees that may speak GitHub's REST API: the publication
/// client, the platform lane's measuring client, and the simulator (test
/// support, never linked by what ships).
const GITHUB_REST_SPEAKERS: [&str; 3] = ["crates/github/", "crates/platform/", "crates/testkit/"];

/// Every `.rs` file under `dir`, recursively.
fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

#[test]
fn only_the_github_and_platform_crates_hold_a_github_rest_client() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut trees = vec![("src/".to_owned(), root.join("src"))];
    for e in std::fs::read_dir(root.join("crates"))
        .expect("crates/ is readable")
        .flatten()
    {
        let name = format!("crates/{}/", e.file_name().to_string_lossy());
        trees.push((name, e.path().join("src")));
    }
    assert!(
        trees.iter().any(|(n, _)| n == "crates/exec/")
            && trees.iter().any(|(n, _)| n == "crates/platform/"),
        "sanity: the crates are found: {trees:?}"
    );
    let mut speakers = BTreeSet::new();
    let mut offenders = Vec::new();
    for (name, src) in &trees {
        let mut files = Vec::new();
        rust_files(src, &mut files);
        for f in files {
            let text = std::fs::read_to_string(&f)
                .unwrap_or_default()
                .to_ascii_lowercase();
            if GITHUB_REST_MARKERS.iter().any(|m| text.contains(m)) {
                speakers.insert(name.clone());
                if !GITHUB_REST_SPEAKERS.contains(&name.as_str()) {
                    offenders.push(f.display().to_string());
                }
            }
        }
    }
    assert!(
        offenders.is_empty(),
        "only benchops-github and benchops-platform may hold a GitHub REST \
         client (exec reaches the API through benchops-platform): {offenders:?}"
    );
    assert!(
        speakers.contains("crates/github/") && speakers.contains("crates/platform/"),
        "sanity: both clients are found by their markers: {speakers:?}"
    );
}

#[test]
fn only_the_github_crate_uses_github_clients_directly() {
    let g = Graph::load();
    for client in ["octocrab", "jsonwebtoken"] {
        let users = g.direct_dependents(client);
        let others: Vec<&String> = users.iter().filter(|u| *u != "benchops-github").collect();
        assert!(
            others.is_empty(),
            "only benchops-github may depend on {client} directly; also: {others:?}"
        );
    }
}

#[test]
fn core_has_no_async_or_network_stack() {
    let g = Graph::load();
    let closure = g.normal_closure("benchops");
    assert!(
        closure.contains("serde_json") && closure.contains("sha2"),
        "sanity: the core's normal dependencies are visible: {closure:?}"
    );
    for forbidden in ["tokio", "reqwest", "hyper", "octocrab"] {
        assert!(
            !closure.contains(forbidden),
            "the core must not depend on {forbidden}: {closure:?}"
        );
    }
}

#[test]
fn dev_dependencies_are_not_counted_as_normal() {
    // criterion is a dev-dependency of the core; the normal closure must not
    // contain it, or the checks above would be stricter than intended and
    // prove nothing about what ships.
    let g = Graph::load();
    assert!(
        g.direct_dependents("criterion").contains("benchops"),
        "sanity: benchops has criterion as a dev-dependency"
    );
    assert!(!g.normal_closure("benchops").contains("criterion"));
}
