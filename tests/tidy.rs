//! Tidy checks over the workspace source, in the manner of rust-analyzer's
//! `tidy.rs`: plain std, no build step, a few milliseconds per run.
//!
//! The checked source is every `.rs` file under the `src/` directory of each
//! crate of the workspace: the root package (`src/`), every `crates/*/src/`
//! and `xtask/src/`. Directories named `target` or starting with `.` are
//! skipped. Integration tests (`tests/`) and benches (`benches/`) are not
//! checked.
//!
//! Each check is its own test, so a failure names the rule it breaks:
//!
//! - [`code_map_names_every_crate_and_directory`]: ARCHITECTURE.md's code
//!   map has a section per crate, naming every directory of its `src/`.
//! - [`every_source_file_has_a_module_doc`]: every file opens with `//!`.
//! - [`no_source_file_is_too_long`]: at most [`MAX_LINES`] lines, unless
//!   [`LONG_FILES`] gives the file and the reason.
//! - [`no_import_cycle_between_top_level_modules`]: no `use crate::` cycle
//!   among the top-level modules of [`ACYCLIC_CRATES`].
//!
//! # Crates and module names
//!
//! A crate is named by its directory with a trailing slash, as the code map
//! headings name it: `src/` for the root package, `crates/<name>/` for the
//! crates under `crates/`, and `xtask/`.
//!
//! The module name of a file (used by the import-cycle check) is its path
//! relative to the crate's `src/`, without `.rs`, with a trailing `/mod`
//! dropped and every `/` written as `::`: `src/reconcile/plan.rs` is
//! `reconcile::plan`. `lib.rs` is the crate itself; binary roots keep their
//! file name (`main.rs`).
//!
//! # The code map
//!
//! The code map is the part of ARCHITECTURE.md between the `## Code map`
//! heading and the next `## ` heading. In it, a `### ` heading whose first
//! backticked word ends in `/` (`` ### `crates/exec/` — `benchops-exec` ``)
//! opens the section of that crate; a `### ` heading without one (such as
//! "Other folders") opens a section this test ignores. The map is a map of
//! crates and directories, not of files (each file's `//!` doc says what it
//! is): every directory under a crate's `src/` that holds a source file must
//! be named in backticks in the crate's section, with a trailing `/`
//! (`backend/`, `backend/slurm/`), and every such name must exist. The
//! check reports crates with no section, directories not named, names of
//! directories that do not exist, repeated sections and sections of crates
//! that do not exist.
//!
//! # Module docs
//!
//! The first line of every file that is neither blank nor part of an inner
//! attribute (`#![...]`, possibly over several lines) starts with `//!`.
//!
//! # Import cycles
//!
//! In each crate of [`ACYCLIC_CRATES`], the nodes are the top-level modules
//! of the library: `src/A.rs` or `src/A/mod.rs` is node `A`, and every file
//! under `src/A/` belongs to it. `lib.rs`, `main.rs` and the modules that
//! `main.rs` declares but `lib.rs` does not are the binary's and are left
//! out. There is an edge `A -> B` when a file of `A` mentions `crate::B` for
//! another node `B`: `crate::B::…`, `crate::B;`, `crate::B}`, or an item of a
//! group such as `use crate::{a::X, b};` (edges to `a` and `b`). Comments
//! (doc comments included) and string and char literals are blanked before
//! the scan, so a mention there is no edge. Only `crate::` paths count:
//! `super::` paths and names re-exported at the crate root
//! (`crate::GitHubError`) make no edge. A depth-first search over the graph
//! reports every cycle it closes, as a path with the file and line of each
//! edge.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// The longest a source file may be, in lines.
const MAX_LINES: usize = 800;

/// Source files allowed over [`MAX_LINES`]: the workspace-relative path and
/// the reason. An entry whose file is gone or back under the limit fails the
/// check, so the list stays true.
const LONG_FILES: &[(&str, &str)] = &[
    (
        "src/onepass/mod.rs",
        "the one-pass decoder mirrors the whole benchmark-result schema in one place, so that the differential test holds one file to the schema; split by member, the correspondence would be scattered",
    ),
    (
        "crates/github/src/oidc.rs",
        "OIDC verification is one security boundary read top to bottom (discovery, keys, signature, claims); about half of it is the tests of each forged-token case",
    ),
    (
        "crates/github/src/client.rs",
        "one request path: build, send, classify the failure, retry and pace; split, the retry loop would be read in two places",
    ),
    (
        "crates/publish/src/github.rs",
        "GitHub mode's setup and its two adapters share the per-phase token lifecycle (mint at the phase's start, revoke at its end)",
    ),
    (
        "crates/publish/src/sweep/mod.rs",
        "the sweep engine's phase order (validate, persist, reconcile, report) is one function with its steps; the ports and errors are already beside it",
    ),
    (
        "crates/publish/src/sweep/report.rs",
        "the sweep's report and its one text rendering, kept together so that every field printed is a field reported",
    ),
    (
        "crates/publish/src/provision/checks.rs",
        "one pure function per provisioning check, each with its remedy; a table of checks reads best as one file",
    ),
    (
        "crates/exec/src/backend/slurm/mod.rs",
        "the Slurm backend's launch, snapshot and evidence rules refer to each other (grace, order, requeues); parsing and tool calls are already apart",
    ),
    (
        "crates/exec/src/bench.rs",
        "the library API of the bench commands (plan, submit, run a child, refresh, analyze, cancel, list), each a thin function over the same state",
    ),
    (
        "crates/testkit/src/sim/mod.rs",
        "the simulator's state and the operations a person does outside the API (open, label, close, edit), used together by every test",
    ),
    (
        "crates/app/src/config.rs",
        "every configuration key with its default and validation, one table an operator reads against docs/cli/benchops-app.md",
    ),
    (
        "xtask/src/detection.rs",
        "the detection benchmark's driver: every policy in both modes over one seeded corpus, and the targets table that compares them in the same run",
    ),
    (
        "xtask/src/detection/report.rs",
        "the figures of every policy in both modes and their one text and JSON rendering, kept together so that every figure printed is a figure scored",
    ),
    (
        "xtask/src/selfbench.rs",
        "one benchmark task: set up the history, run the lanes, publish and report",
    ),
    (
        "xtask/src/bench_webhooks.rs",
        "one benchmark task: benchops-app and the Node peer side by side under wrk, each phase with its figures",
    ),
];

/// The crates whose top-level modules must not import each other in a cycle.
const ACYCLIC_CRATES: &[&str] = &[
    "crates/app/",
    "crates/exec/",
    "crates/github/",
    "crates/history/",
    "crates/publish/",
    "crates/platform/",
];

/// The map this test holds the tree to, relative to the workspace root.
const ARCHITECTURE: &str = "ARCHITECTURE.md";

// ---------------------------------------------------------------------------
// The checks

#[test]
fn code_map_names_every_crate_and_directory() {
    let ws = Workspace::load();
    let md = fs::read_to_string(ws.root.join(ARCHITECTURE)).expect("ARCHITECTURE.md is readable");
    let map = parse_code_map(&md);
    let mut report = map.problems.clone();

    for krate in &ws.crates {
        let in_tree = krate.directories();
        let Some(section) = map.sections.get(&krate.label) else {
            report.push(format!(
                "{}: no `### ` section names this crate; its directories: {}",
                krate.label,
                join(&in_tree)
            ));
            continue;
        };
        let named: BTreeSet<String> = backticked(&section.text)
            .into_iter()
            .filter(|w| w.ends_with('/') && *w != krate.label)
            .collect();
        let missing: BTreeSet<_> = in_tree.difference(&named).cloned().collect();
        let stale: BTreeSet<_> = named.difference(&in_tree).cloned().collect();
        if !missing.is_empty() {
            report.push(format!(
                "{}: directories the section does not name: {}",
                krate.label,
                join(&missing)
            ));
        }
        if !stale.is_empty() {
            report.push(format!(
                "{ARCHITECTURE}:{}: `{}` names directories that do not exist: {}",
                section.line,
                krate.label,
                join(&stale)
            ));
        }
    }
    let labels: BTreeSet<&str> = ws.crates.iter().map(|c| c.label.as_str()).collect();
    for (label, section) in &map.sections {
        if !labels.contains(label.as_str()) {
            report.push(format!(
                "{ARCHITECTURE}:{}: section `{label}` names no crate of the workspace",
                section.line
            ));
        }
    }

    assert!(
        report.is_empty(),
        "the code map in {ARCHITECTURE} does not match the source tree (a section per crate, \
         naming every directory under its src/ as `dir/`):\n{}",
        report.join("\n")
    );
}

#[test]
fn every_source_file_has_a_module_doc() {
    let ws = Workspace::load();
    let mut report = Vec::new();
    for file in ws.files() {
        if let Err(line) = check_module_doc(&file.text) {
            report.push(format!(
                "{}:{line}: does not start with a `//!` module doc",
                file.rel
            ));
        }
    }
    assert!(
        report.is_empty(),
        "every source file must open with a `//!` doc (after `#![...]` and blank lines):\n{}",
        report.join("\n")
    );
}

#[test]
fn no_source_file_is_too_long() {
    let ws = Workspace::load();
    let allowed: BTreeMap<&str, &str> = LONG_FILES.iter().copied().collect();
    let mut report = Vec::new();
    let mut seen = BTreeSet::new();
    for file in ws.files() {
        let lines = file.text.lines().count();
        match allowed.get(file.rel.as_str()) {
            Some(reason) => {
                seen.insert(file.rel.as_str());
                if reason.trim().is_empty() {
                    report.push(format!("{}: allow-listed without a reason", file.rel));
                }
                if lines <= MAX_LINES {
                    report.push(format!(
                        "{}: {lines} lines, no longer over {MAX_LINES}: remove it from LONG_FILES",
                        file.rel
                    ));
                }
            }
            None if lines > MAX_LINES => {
                report.push(format!("{}: {lines} lines (limit {MAX_LINES})", file.rel));
            }
            None => {}
        }
    }
    for path in allowed.keys() {
        if !seen.contains(path) {
            report.push(format!(
                "{path}: in LONG_FILES but not a checked source file"
            ));
        }
    }
    assert!(
        report.is_empty(),
        "source files over {MAX_LINES} lines (split them, or add the path and the reason to \
         LONG_FILES in tests/tidy.rs):\n{}",
        report.join("\n")
    );
}

#[test]
fn no_import_cycle_between_top_level_modules() {
    let ws = Workspace::load();
    let mut report = Vec::new();
    for label in ACYCLIC_CRATES {
        let krate = ws
            .crates
            .iter()
            .find(|c| c.label == *label)
            .unwrap_or_else(|| panic!("{label} is a crate of the workspace"));
        let graph = ModuleGraph::of(krate);
        for cycle in find_cycles(&graph.edges()) {
            let mut line = format!("{label}: {}", cycle.join(" -> "));
            for pair in cycle.windows(2) {
                let (file, at) = &graph.edges[&pair[0]][&pair[1]];
                let _ = write!(line, "\n    {} -> {}: {file}:{at}", pair[0], pair[1]);
            }
            report.push(line);
        }
    }
    assert!(
        report.is_empty(),
        "`use crate::` cycles between top-level modules:\n{}",
        report.join("\n")
    );
}

// ---------------------------------------------------------------------------
// Self-checks of the helpers, on small inputs.

#[test]
fn tidy_module_names_follow_the_documented_rule() {
    assert_eq!(module_name("lib.rs"), None);
    assert_eq!(module_name("main.rs").as_deref(), Some("main.rs"));
    assert_eq!(module_name("bin/tool.rs").as_deref(), Some("bin/tool.rs"));
    assert_eq!(module_name("jcs.rs").as_deref(), Some("jcs"));
    assert_eq!(module_name("sweep/mod.rs").as_deref(), Some("sweep"));
    assert_eq!(
        module_name("sweep/ports.rs").as_deref(),
        Some("sweep::ports")
    );
    assert_eq!(
        module_name("backend/slurm/parse.rs").as_deref(),
        Some("backend::slurm::parse")
    );
}

#[test]
fn tidy_code_map_parser_reads_sections_and_their_text() {
    let md = "\
# A
`ignored/` before the code map
## Code map
### `src/` — crate `core`
The core; `seal/` seals, `reconcile/` reconciles.
### Other folders
`docs/` is ignored
### `src/` again
## Invariants
`x/` after the code map
";
    let map = parse_code_map(md);
    assert_eq!(map.sections.len(), 1);
    let words = backticked(&map.sections["src/"].text);
    assert_eq!(words, ["seal/", "reconcile/"]);
    assert_eq!(map.problems.len(), 1, "{:?}", map.problems);
    assert!(map.problems[0].contains(":8:"), "{:?}", map.problems);
}

#[test]
fn tidy_crate_refs_skip_comments_and_read_groups() {
    let code = r##"
//! See `crate::doc_only`.
/// Uses crate::in_doc_comment.
// use crate::in_comment;
/* crate::in_block /* nested crate::deeper */ */
use crate::{alpha::X, beta, gamma::{Y, Z}, self};
use crate::delta;
pub(crate) fn f() -> crate::epsilon::T { let _ = "crate::in_string"; let _ = r#"crate::raw"#; let _ = '"'; crate::zeta::g() }
fn h<'a>(x: &'a str) -> &'a str { crate::eta }
struct W(my_crate::not_this);
"##;
    let refs: Vec<(String, usize)> = crate_refs(&strip_comments_and_literals(code));
    let names: Vec<&str> = refs.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(
        names,
        ["alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta"]
    );
    assert_eq!(refs[0].1, 6);
    assert_eq!(refs[3].1, 7);
}

#[test]
fn tidy_cycle_search_reports_the_path() {
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (a, b) in [("a", "b"), ("b", "c"), ("c", "a"), ("d", "a"), ("c", "e")] {
        edges.entry(a.to_owned()).or_default().insert(b.to_owned());
    }
    assert_eq!(find_cycles(&edges), [["a", "b", "c", "a"]]);
    edges.get_mut("c").expect("c has edges").remove("a");
    assert!(find_cycles(&edges).is_empty());
}

#[test]
fn tidy_module_graph_leaves_out_the_binary() {
    let file = |in_src: &str, text: &str| SourceFile {
        rel: format!("crates/x/src/{in_src}"),
        in_src: in_src.to_owned(),
        text: text.to_owned(),
    };
    let krate = Crate {
        label: String::from("crates/x/"),
        files: vec![
            file("lib.rs", "pub mod a;\nmod b;\n"),
            file("main.rs", "mod cli;\nuse crate::cli::Args;\n"),
            file("cli.rs", "use crate::a::Thing;\n"),
            file("a.rs", "use crate::b::X;\n"),
            file(
                "b/mod.rs",
                "//! Unlike crate::cli, this module\nmod inner;\n",
            ),
            file("b/inner.rs", "use crate::{a, cli};\n"),
        ],
    };
    let graph = ModuleGraph::of(&krate);
    assert_eq!(find_cycles(&graph.edges()), [["a", "b", "a"]]);
    assert_eq!(
        graph.edges["b"]["a"],
        (String::from("crates/x/src/b/inner.rs"), 1)
    );
    assert!(!graph.edges.contains_key("cli"));
}

#[test]
fn tidy_module_doc_may_follow_inner_attributes() {
    assert_eq!(check_module_doc("//! Doc.\n"), Ok(()));
    assert_eq!(
        check_module_doc("\n#![forbid(unsafe_code)]\n#![cfg_attr(\n  x,\n  y\n)]\n\n//! Doc.\n"),
        Ok(())
    );
    assert_eq!(check_module_doc("/// Item doc.\nfn f() {}\n"), Err(1));
    assert_eq!(check_module_doc("#![allow(x)]\n\nuse std::fs;\n"), Err(3));
    assert_eq!(check_module_doc(""), Err(1));
}

// ---------------------------------------------------------------------------
// The workspace

struct Workspace {
    root: PathBuf,
    crates: Vec<Crate>,
}

struct Crate {
    /// `src/`, `crates/<name>/` or `xtask/`.
    label: String,
    files: Vec<SourceFile>,
}

struct SourceFile {
    /// Relative to the workspace root, with `/`.
    rel: String,
    /// Relative to the crate's `src/`, with `/`.
    in_src: String,
    text: String,
}

impl Workspace {
    fn load() -> Self {
        let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
        let mut crates = vec![Crate::load(&root, String::from("src/"), "src")];
        let mut members: Vec<String> = fs::read_dir(root.join("crates"))
            .expect("crates/ is readable")
            .map(|e| e.expect("a directory entry of crates/"))
            .filter(|e| e.path().join("src").is_dir())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        members.sort();
        for name in members {
            crates.push(Crate::load(
                &root,
                format!("crates/{name}/"),
                &format!("crates/{name}/src"),
            ));
        }
        crates.push(Crate::load(&root, String::from("xtask/"), "xtask/src"));
        Self { root, crates }
    }

    fn files(&self) -> impl Iterator<Item = &SourceFile> {
        self.crates.iter().flat_map(|c| &c.files)
    }
}

impl Crate {
    /// Every directory under the crate's `src/` that holds a source file,
    /// relative to `src/`, with a trailing `/` (`backend/`, `backend/slurm/`).
    fn directories(&self) -> BTreeSet<String> {
        self.files
            .iter()
            .filter_map(|f| f.in_src.rsplit_once('/').map(|(dir, _)| format!("{dir}/")))
            .collect()
    }

    fn load(root: &Path, label: String, src: &str) -> Self {
        let mut paths = Vec::new();
        walk(&root.join(src), &mut paths);
        paths.sort();
        let files = paths
            .into_iter()
            .map(|path| {
                let text = fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{} is readable: {e}", path.display()));
                SourceFile {
                    rel: slash_path(path.strip_prefix(root).expect("under the workspace")),
                    in_src: slash_path(path.strip_prefix(root.join(src)).expect("under src/")),
                    text,
                }
            })
            .collect();
        Self { label, files }
    }
}

/// Every `.rs` file under `dir`, skipping `target` and hidden directories.
fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
    let entries =
        fs::read_dir(dir).unwrap_or_else(|e| panic!("{} is readable: {e}", dir.display()));
    for entry in entries {
        let entry = entry.expect("a directory entry");
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let kind = entry.file_type().expect("a file type");
        if kind.is_dir() {
            if name != "target" && !name.starts_with('.') {
                walk(&path, out);
            }
        } else if name.ends_with(".rs") {
            out.push(path);
        }
    }
}

fn slash_path(path: &Path) -> String {
    path.components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect::<Vec<_>>()
        .join("/")
}

fn join(names: &BTreeSet<String>) -> String {
    names
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join(", ")
}

/// The module name of a file, given its path under the crate's `src/`
/// (see the module doc); `None` for `lib.rs`.
fn module_name(in_src: &str) -> Option<String> {
    if in_src == "lib.rs" {
        return None;
    }
    if in_src == "main.rs" || in_src.starts_with("bin/") {
        return Some(in_src.to_owned());
    }
    let stem = in_src.strip_suffix(".rs")?;
    let stem = stem.strip_suffix("/mod").unwrap_or(stem);
    Some(stem.replace('/', "::"))
}

// ---------------------------------------------------------------------------
// The code map

struct CodeMap {
    /// Crate label -> its section.
    sections: BTreeMap<String, Section>,
    /// Repeated sections, a missing `## Code map`.
    problems: Vec<String>,
}

struct Section {
    /// 1-based line of the heading.
    line: usize,
    /// The section's text, up to the next heading.
    text: String,
}

fn parse_code_map(md: &str) -> CodeMap {
    let lines: Vec<&str> = md.lines().collect();
    let mut map = CodeMap {
        sections: BTreeMap::new(),
        problems: Vec::new(),
    };
    let Some(start) = lines.iter().position(|l| l.trim_end() == "## Code map") else {
        map.problems
            .push(format!("{ARCHITECTURE}: no `## Code map` heading"));
        return map;
    };
    let mut current: Option<String> = None;
    for (i, line) in lines.iter().enumerate().skip(start + 1) {
        let number = i + 1;
        if line.starts_with("## ") {
            break;
        }
        if let Some(heading) = line.strip_prefix("### ") {
            current = backticked(heading).into_iter().find(|w| w.ends_with('/'));
            if let Some(label) = &current {
                if map.sections.contains_key(label) {
                    map.problems.push(format!(
                        "{ARCHITECTURE}:{number}: a second section for `{label}`"
                    ));
                }
                map.sections.entry(label.clone()).or_insert(Section {
                    line: number,
                    text: String::new(),
                });
            }
            continue;
        }
        if let Some(label) = &current {
            let section = map
                .sections
                .get_mut(label)
                .expect("the current section exists");
            section.text.push_str(line);
            section.text.push('\n');
        }
    }
    map
}

/// The words of `text` written in single backticks.
fn backticked(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_owned)
        .collect()
}

// ---------------------------------------------------------------------------
// Module docs

/// `Ok` when the first line that is neither blank nor part of a `#![...]`
/// attribute starts with `//!`; otherwise the 1-based number of that line
/// (one past the end for a file with no such line).
fn check_module_doc(text: &str) -> Result<(), usize> {
    let mut depth = 0i32; // open brackets of an inner attribute
    let mut count = 0;
    for (i, line) in text.lines().enumerate() {
        count = i + 1;
        let trimmed = line.trim();
        if depth > 0 || trimmed.starts_with("#![") {
            depth += brackets(trimmed);
            continue;
        }
        if trimmed.is_empty() {
            continue;
        }
        return if trimmed.starts_with("//!") {
            Ok(())
        } else {
            Err(i + 1)
        };
    }
    Err(count + 1)
}

fn brackets(line: &str) -> i32 {
    line.chars()
        .map(|c| i32::from(c == '[') - i32::from(c == ']'))
        .sum()
}

// ---------------------------------------------------------------------------
// Import cycles

struct ModuleGraph {
    /// From -> to -> the first file and line where `from` names `crate::to`.
    edges: BTreeMap<String, BTreeMap<String, (String, usize)>>,
}

impl ModuleGraph {
    fn of(krate: &Crate) -> Self {
        let top = |in_src: &str| -> Option<String> {
            let first = in_src.split('/').next()?;
            match first {
                "lib.rs" | "main.rs" | "bin" | "bin.rs" => None,
                _ => Some(first.strip_suffix(".rs").unwrap_or(first).to_owned()),
            }
        };
        let declared_by = |root: &str| -> BTreeSet<String> {
            krate
                .files
                .iter()
                .find(|f| f.in_src == root)
                .map(|f| mod_decls(&strip_comments_and_literals(&f.text)))
                .unwrap_or_default()
        };
        let (lib, bin) = (declared_by("lib.rs"), declared_by("main.rs"));
        let nodes: BTreeSet<String> = krate
            .files
            .iter()
            .filter_map(|f| top(&f.in_src))
            .filter(|m| lib.contains(m) || !bin.contains(m))
            .collect();

        let mut edges: BTreeMap<String, BTreeMap<String, (String, usize)>> = BTreeMap::new();
        for file in &krate.files {
            let Some(from) = top(&file.in_src).filter(|m| nodes.contains(m)) else {
                continue;
            };
            for (to, line) in crate_refs(&strip_comments_and_literals(&file.text)) {
                if to != from && nodes.contains(&to) {
                    edges
                        .entry(from.clone())
                        .or_default()
                        .entry(to)
                        .or_insert_with(|| (file.rel.clone(), line));
                }
            }
        }
        Self { edges }
    }

    fn edges(&self) -> BTreeMap<String, BTreeSet<String>> {
        self.edges
            .iter()
            .map(|(from, to)| (from.clone(), to.keys().cloned().collect()))
            .collect()
    }
}

/// Every cycle a depth-first search closes, each as a path that starts and
/// ends at the same module. Nodes and edges are visited in sorted order, so
/// the result is deterministic.
fn find_cycles(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        OnPath,
        Done,
    }
    fn visit<'a>(
        node: &'a str,
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<&'a str, Mark>,
        path: &mut Vec<&'a str>,
        cycles: &mut Vec<Vec<String>>,
    ) {
        marks.insert(node, Mark::OnPath);
        path.push(node);
        for next in edges.get(node).into_iter().flatten() {
            match marks.get(next.as_str()) {
                None => visit(next, edges, marks, path, cycles),
                Some(Mark::OnPath) => {
                    let from = path.iter().position(|n| n == next).expect("on the path");
                    let mut cycle: Vec<String> =
                        path[from..].iter().map(|n| (*n).to_owned()).collect();
                    cycle.push(next.clone());
                    cycles.push(cycle);
                }
                Some(Mark::Done) => {}
            }
        }
        path.pop();
        marks.insert(node, Mark::Done);
    }

    let mut marks = BTreeMap::new();
    let mut cycles = Vec::new();
    for node in edges.keys() {
        if !marks.contains_key(node.as_str()) {
            visit(node, edges, &mut marks, &mut Vec::new(), &mut cycles);
        }
    }
    cycles
}

/// `text` with every comment (line, doc, block, nested block) and every
/// string, byte-string, raw-string and char literal blanked to spaces.
/// Newlines are kept, so line numbers stay valid. Lifetimes and labels
/// (`'a`) are left alone.
fn strip_comments_and_literals(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |out: &mut String, span: &[char]| {
        out.extend(span.iter().map(|&c| if c == '\n' { '\n' } else { ' ' }));
    };
    let ident = |c: char| c.is_alphanumeric() || c == '_';
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let end = if c == '/' && next == Some('/') {
            // Line comment, `///` and `//!` included.
            chars[i..]
                .iter()
                .position(|&c| c == '\n')
                .map_or(chars.len(), |n| i + n)
        } else if c == '/' && next == Some('*') {
            let (mut j, mut depth) = (i + 2, 1);
            while j < chars.len() && depth > 0 {
                if chars[j] == '/' && chars.get(j + 1) == Some(&'*') {
                    depth += 1;
                    j += 2;
                } else if chars[j] == '*' && chars.get(j + 1) == Some(&'/') {
                    depth -= 1;
                    j += 2;
                } else {
                    j += 1;
                }
            }
            j
        } else if c == '"' {
            let mut j = i + 1;
            while j < chars.len() && chars[j] != '"' {
                j += if chars[j] == '\\' { 2 } else { 1 };
            }
            (j + 1).min(chars.len())
        } else if c == 'r'
            && (i == 0
                || !ident(chars[i - 1])
                || (chars[i - 1] == 'b' && (i == 1 || !ident(chars[i - 2]))))
            && raw_string_hashes(&chars[i + 1..]).is_some()
        {
            let hashes = raw_string_hashes(&chars[i + 1..]).unwrap_or(0);
            let body = i + 2 + hashes;
            let mut j = body;
            loop {
                if j >= chars.len() {
                    break chars.len();
                }
                if chars[j] == '"'
                    && chars.len() >= j + 1 + hashes
                    && chars[j + 1..j + 1 + hashes].iter().all(|&c| c == '#')
                {
                    break j + 1 + hashes;
                }
                j += 1;
            }
        } else if c == '\'' && next == Some('\\') {
            // An escaped char literal: '\n', '\'', '\u{1F600}'.
            let mut j = i + 3;
            while j < chars.len() && chars[j] != '\'' {
                j += 1;
            }
            (j + 1).min(chars.len())
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            i + 3 // 'x', '"'
        } else {
            out.push(c);
            i += 1;
            continue;
        };
        blank(&mut out, &chars[i..end]);
        i = end;
    }
    out
}

/// With `rest` just after an `r`: the number of `#` of a raw string opening
/// (`"`, `#"`, `##"`, …), or `None` when none opens there.
fn raw_string_hashes(rest: &[char]) -> Option<usize> {
    let hashes = rest.iter().take_while(|&&c| c == '#').count();
    (rest.get(hashes) == Some(&'"')).then_some(hashes)
}

/// The first segment of every `crate::` path in comment-free `code`, with
/// the 1-based line of the mention, in order. For a group
/// (`crate::{a::X, b}`) each item's first segment; `self` is skipped.
fn crate_refs(code: &str) -> Vec<(String, usize)> {
    let bytes = code.as_bytes();
    let mut refs = Vec::new();
    let mut from = 0;
    while let Some(found) = code[from..].find("crate") {
        let at = from + found;
        from = at + "crate".len();
        if (at > 0 && is_ident_byte(bytes[at - 1]))
            || (from < bytes.len() && is_ident_byte(bytes[from]))
        {
            continue;
        }
        let i = skip_ws(bytes, from);
        if !code[i..].starts_with("::") {
            continue;
        }
        let i = skip_ws(bytes, i + 2);
        if bytes.get(i) != Some(&b'{') {
            refs.extend(first_segment(code, i));
            continue;
        }
        // A group: split at top-level commas, up to the matching brace.
        let (mut depth, mut item, mut j) = (0usize, i + 1, i + 1);
        while j < bytes.len() {
            match bytes[j] {
                b'{' => depth += 1,
                b'}' if depth == 0 => break,
                b'}' => depth -= 1,
                b',' if depth == 0 => {
                    refs.extend(first_segment(code, item));
                    item = j + 1;
                }
                _ => {}
            }
            j += 1;
        }
        refs.extend(first_segment(code, item));
        from = j.min(code.len());
    }
    refs
}

/// The identifier at `start` (after whitespace) with its 1-based line, if
/// there is one and it is not `self`.
fn first_segment(code: &str, start: usize) -> Option<(String, usize)> {
    let bytes = code.as_bytes();
    let i = skip_ws(bytes, start);
    let end = (i..bytes.len())
        .find(|&j| !is_ident_byte(bytes[j]))
        .unwrap_or(bytes.len());
    let name = &code[i..end];
    (!name.is_empty() && name != "self")
        .then(|| (name.to_owned(), code[..i].matches('\n').count() + 1))
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

fn skip_ws(bytes: &[u8], mut i: usize) -> usize {
    while i < bytes.len() && bytes[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The names of `mod x;` and `mod x { … }` declarations in comment-free
/// `code`, whatever their visibility.
fn mod_decls(code: &str) -> BTreeSet<String> {
    let tokens: Vec<&str> = code
        .split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|t| !t.is_empty())
        .collect();
    tokens
        .windows(2)
        .filter(|w| w[0] == "mod")
        .map(|w| w[1].to_owned())
        .collect()
}
