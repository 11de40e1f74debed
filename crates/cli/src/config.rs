//! The optional project config file, `benchops.toml`: defaults for
//! `--state`, `--manifest` and `--history`, so that a repository need not
//! repeat them on every command. One definition, for every binary.
//!
//! **Where.** `BENCHOPS_CONFIG`, when set and not empty, names the file
//! (it must exist). Otherwise the nearest `benchops.toml` from the current
//! directory up to the top of its git work tree (the directory holding
//! `.git`); outside a git work tree, the current directory only. No file,
//! no defaults.
//!
//! **What.** Three keys, each a non-empty string path, all optional:
//! `state`, `manifest`, `history`. A relative path is relative to the
//! file's directory, so a command run from a subdirectory finds the same
//! files. Any other key, or a value that is not a string, is an error
//! naming the file and the key.
//!
//! **Precedence.** The flag, then its environment variable where one
//! exists (`BENCHOPS_STATE`), then the file, then the built-in default.
//! The file fills an option only where the command already has a value
//! without one: a required option (`lane run --manifest`, `sweep
//! --manifest`, …) or one with a built-in default (`--state`). An optional
//! option whose absence means something (`validate --manifest`, which
//! turns on signature checks; `watchdog --history`, which picks the mode)
//! is never switched on by the file.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

/// The file's name, looked for from the current directory upward.
pub const FILE_NAME: &str = "benchops.toml";

/// The variable that names the file instead.
pub const ENV_VAR: &str = "BENCHOPS_CONFIG";

/// The keys the file may hold, in the order the docs list them.
pub const KEYS: [&str; 3] = ["state", "manifest", "history"];

/// The most a config file may hold; a real one is a few lines.
const MAX_BYTES: u64 = 64 * 1024;

/// A project config file, read and checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectConfig {
    /// The file it was read from.
    pub path: PathBuf,
    /// The default of `--state`, resolved against the file's directory.
    pub state: Option<PathBuf>,
    /// The default of `--manifest`.
    pub manifest: Option<PathBuf>,
    /// The default of `--history` (a path; a URL is kept as written).
    pub history: Option<PathBuf>,
}

/// Why the config file could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// `BENCHOPS_CONFIG` names a file that cannot be read (the path as
    /// the variable holds it).
    #[error(
        "{ENV_VAR}={} cannot be read: {reason}; point {ENV_VAR} at a benchops.toml, or unset it to look for benchops.toml in the repository",
        shown(path)
    )]
    EnvPath {
        /// The path the variable holds.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The file cannot be read.
    #[error("cannot read the config file {}: {reason}", shown(path))]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// The file is not valid TOML.
    #[error("the config file {} is not valid TOML: {message}", shown(path))]
    Syntax {
        /// The file.
        path: PathBuf,
        /// The parser's message (its position and a caret diagram).
        message: String,
    },
    /// A key the file may not hold.
    #[error(
        "the config file {} has an unknown key `{key}`: it may hold only {} (each a path)",
        shown(path),
        KEYS.map(|k| format!("`{k}`")).join(", ")
    )]
    UnknownKey {
        /// The file.
        path: PathBuf,
        /// The key, escaped.
        key: String,
    },
    /// A value of the wrong type, or an empty one.
    #[error(
        "the config file {}: `{key}` must be {expected}, not {found}",
        shown(path)
    )]
    BadValue {
        /// The file.
        path: PathBuf,
        /// The key.
        key: String,
        /// What it must be.
        expected: &'static str,
        /// What it is.
        found: String,
    },
}

fn shown(p: &Path) -> String {
    benchops::terminal::shown_path(p)
}

impl ProjectConfig {
    /// Finds and reads the project's config file, as the module doc says:
    /// `env` is the value of `BENCHOPS_CONFIG` (`None` when unset), `cwd`
    /// the directory to start from.
    pub fn discover(env: Option<OsString>, cwd: &Path) -> Result<Option<Self>, ConfigError> {
        if let Some(written) = env.filter(|v| !v.is_empty()).map(PathBuf::from) {
            let path = cwd.join(&written);
            return read_text(&path)
                .map_err(|reason| ConfigError::EnvPath {
                    path: written,
                    reason,
                })
                .and_then(|text| Self::parse(&path, &text))
                .map(Some);
        }
        match find(cwd) {
            Some(path) => {
                let text = read_text(&path).map_err(|reason| ConfigError::Read {
                    path: path.clone(),
                    reason,
                })?;
                Self::parse(&path, &text).map(Some)
            }
            None => Ok(None),
        }
    }

    /// [`Self::discover`] for this process: `BENCHOPS_CONFIG` and the
    /// current directory.
    pub fn from_env() -> Result<Option<Self>, ConfigError> {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Self::discover(std::env::var_os(ENV_VAR), &cwd)
    }

    /// Checks the text of the file at `path`.
    pub fn parse(path: &Path, text: &str) -> Result<Self, ConfigError> {
        let table: toml::Table =
            text.parse()
                .map_err(|e: toml::de::Error| ConfigError::Syntax {
                    path: path.to_path_buf(),
                    message: e.to_string().trim_end().to_owned(),
                })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let mut c = ProjectConfig {
            path: path.to_path_buf(),
            state: None,
            manifest: None,
            history: None,
        };
        for (key, value) in &table {
            let slot = match key.as_str() {
                "state" => &mut c.state,
                "manifest" => &mut c.manifest,
                "history" => &mut c.history,
                _ => {
                    return Err(ConfigError::UnknownKey {
                        path: path.to_path_buf(),
                        key: benchops::terminal::escape_bounded(key, 100),
                    });
                }
            };
            let bad = |found: String| ConfigError::BadValue {
                path: path.to_path_buf(),
                key: key.clone(),
                expected: "a non-empty string (a path)",
                found,
            };
            let text = match value {
                toml::Value::String(s) if !s.trim().is_empty() => s,
                toml::Value::String(_) => return Err(bad("an empty string".into())),
                other => {
                    let t = other.type_str();
                    let article = if t.starts_with(['a', 'e', 'i', 'o', 'u']) {
                        "an"
                    } else {
                        "a"
                    };
                    return Err(bad(format!("{article} {t}")));
                }
            };
            *slot = Some(resolve(dir, text));
        }
        Ok(c)
    }

    /// The default the file gives the option `id`, if any.
    pub fn value(&self, id: &str) -> Option<&Path> {
        match id {
            "state" => self.state.as_deref(),
            "manifest" => self.manifest.as_deref(),
            "history" => self.history.as_deref(),
            _ => None,
        }
    }
}

/// A path from the file, relative to its directory; a URL as written.
fn resolve(dir: &Path, text: &str) -> PathBuf {
    let p = Path::new(text);
    if p.is_absolute() || text.contains("://") || looks_like_scp(text) {
        p.to_path_buf()
    } else {
        dir.join(p)
    }
}

/// `host:path`, git's scp-like URL (`git@github.com:o/r.git`).
fn looks_like_scp(text: &str) -> bool {
    match text.split_once(':') {
        Some((host, _)) => !host.is_empty() && !host.contains('/'),
        None => false,
    }
}

/// The nearest `benchops.toml` from `cwd` up to the top of its git work
/// tree; `cwd` only outside one.
fn find(cwd: &Path) -> Option<PathBuf> {
    let top = cwd.ancestors().find(|d| d.join(".git").exists());
    let Some(top) = top else {
        let f = cwd.join(FILE_NAME);
        return f.is_file().then_some(f);
    };
    cwd.ancestors()
        .take_while(|d| d.starts_with(top))
        .map(|d| d.join(FILE_NAME))
        .find(|f| f.is_file())
}

fn read_text(path: &Path) -> Result<String, String> {
    benchops::fsio::read_input_text(path, MAX_BYTES).map_err(|e| e.to_string())
}

/// `cmd` with the file's defaults: every option (of the command and of
/// each subcommand, at any depth) whose id is one of [`KEYS`], takes a
/// value, and is required or has a default, gets the file's value as its
/// default and stops being required. A flag or an environment variable
/// still wins (clap reads those before a default).
pub fn apply_defaults(cmd: clap::Command, config: &ProjectConfig) -> clap::Command {
    let cmd = cmd.mut_args(|arg| {
        let Some(value) = config.value(arg.get_id().as_str()) else {
            return arg;
        };
        let takes_value = arg.get_action().takes_values();
        let fillable = arg.is_required_set() || !arg.get_default_values().is_empty();
        if takes_value && fillable {
            arg.required(false)
                .default_value(value.as_os_str().to_owned())
        } else {
            arg
        }
    });
    cmd.mut_subcommands(|sub| apply_defaults(sub, config))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        let p = dir.join(name);
        std::fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
        std::fs::write(&p, text).expect("write");
        p
    }

    #[test]
    fn the_nearest_file_up_to_the_git_top_wins_and_paths_are_its_own() {
        let t = tempfile::tempdir().expect("tempdir");
        let repo = t.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).expect("git dir");
        // Above the work tree: never read.
        write(t.path(), FILE_NAME, "bogus = 1\n");
        write(
            &repo,
            FILE_NAME,
            "manifest = \"bench/schedule.toml\"\nstate = \"/abs/state\"\n",
        );
        let deep = repo.join("a/b");
        std::fs::create_dir_all(&deep).expect("mkdir");
        let c = ProjectConfig::discover(None, &deep)
            .expect("ok")
            .expect("found");
        assert_eq!(c.path, repo.join(FILE_NAME));
        assert_eq!(c.manifest, Some(repo.join("bench/schedule.toml")));
        assert_eq!(c.state, Some(PathBuf::from("/abs/state")));
        assert_eq!(c.history, None);
        // A nearer one wins.
        write(&repo, "a/benchops.toml", "history = \"h.git\"\n");
        let c = ProjectConfig::discover(None, &deep)
            .expect("ok")
            .expect("found");
        assert_eq!(c.history, Some(repo.join("a/h.git")));
        assert_eq!(c.manifest, None);
    }

    #[test]
    fn outside_git_only_the_current_directory_counts() {
        let t = tempfile::tempdir().expect("tempdir");
        write(t.path(), FILE_NAME, "state = \"s\"\n");
        let sub = t.path().join("sub");
        std::fs::create_dir_all(&sub).expect("mkdir");
        // A temporary directory may sit inside some git work tree; only
        // assert when it does not.
        if !t.path().ancestors().any(|d| d.join(".git").exists()) {
            assert_eq!(ProjectConfig::discover(None, &sub).expect("ok"), None);
        }
        let c = ProjectConfig::discover(None, t.path())
            .expect("ok")
            .expect("found");
        assert_eq!(c.state, Some(t.path().join("s")));
    }

    #[test]
    fn the_variable_names_the_file_and_a_bad_one_is_an_error_naming_it() {
        let t = tempfile::tempdir().expect("tempdir");
        let f = write(
            t.path(),
            "elsewhere.toml",
            "history = \"git@example.org:o/r.git\"\n",
        );
        let c = ProjectConfig::discover(Some(f.clone().into()), Path::new("/"))
            .expect("ok")
            .expect("found");
        assert_eq!(c.history, Some(PathBuf::from("git@example.org:o/r.git")));
        let e = ProjectConfig::discover(Some(t.path().join("nope.toml").into()), t.path())
            .expect_err("missing");
        let msg = e.to_string();
        assert!(
            msg.starts_with(&format!(
                "BENCHOPS_CONFIG={}",
                t.path().join("nope.toml").display()
            )),
            "{msg}"
        );
        assert!(
            msg.contains("nope.toml") && msg.contains("No such file"),
            "{msg}"
        );
        // Empty is unset.
        assert_eq!(
            ProjectConfig::discover(Some(OsString::new()), t.path()).expect("ok"),
            None
        );
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_file_and_the_key() {
        let p = Path::new("/repo/benchops.toml");
        let e = ProjectConfig::parse(p, "manifets = \"x\"\n").expect_err("unknown");
        assert_eq!(
            e.to_string(),
            "the config file /repo/benchops.toml has an unknown key `manifets`: it may hold only `state`, `manifest`, `history` (each a path)"
        );
        let e = ProjectConfig::parse(p, "state = 3\n").expect_err("type");
        assert_eq!(
            e.to_string(),
            "the config file /repo/benchops.toml: `state` must be a non-empty string (a path), not an integer"
        );
        let e = ProjectConfig::parse(p, "history = \"\"\n").expect_err("empty");
        assert!(
            e.to_string()
                .contains("`history` must be a non-empty string"),
            "{e}"
        );
        let e = ProjectConfig::parse(p, "state = \n").expect_err("syntax");
        let msg = e.to_string();
        assert!(
            msg.starts_with("the config file /repo/benchops.toml is not valid TOML:"),
            "{msg}"
        );
        assert!(
            msg.contains('\n'),
            "the caret diagram keeps its lines: {msg}"
        );
    }

    #[derive(Debug, clap::Parser)]
    struct Demo {
        #[arg(
            long,
            global = true,
            env = "BENCHOPS_CLI_TEST_STATE",
            default_value = ".benchops"
        )]
        state: PathBuf,
        #[command(subcommand)]
        cmd: Sub,
    }

    #[derive(Debug, clap::Subcommand)]
    enum Sub {
        Run {
            #[arg(long)]
            manifest: PathBuf,
            #[arg(long)]
            history: Option<PathBuf>,
        },
    }

    fn demo(args: &[&str], c: Option<&ProjectConfig>) -> Result<Demo, clap::Error> {
        crate::parse::<Demo, _, _>(std::iter::once("demo").chain(args.iter().copied()), c)
    }

    #[test]
    fn precedence_is_flag_then_environment_then_file_then_default() {
        let c = ProjectConfig::parse(
            Path::new("/p/benchops.toml"),
            "state = \"st\"\nmanifest = \"m.toml\"\nhistory = \"h.git\"\n",
        )
        .expect("valid");
        // The file fills a required option and a default.
        let d = demo(&["run"], Some(&c)).expect("parses");
        assert_eq!(d.state, PathBuf::from("/p/st"));
        let Sub::Run { manifest, history } = d.cmd;
        assert_eq!(manifest, PathBuf::from("/p/m.toml"));
        // An optional option is not switched on by the file.
        assert_eq!(history, None);
        // A flag wins.
        let d = demo(&["--state", "x", "run", "--manifest", "y"], Some(&c)).expect("parses");
        assert_eq!(d.state, PathBuf::from("x"));
        let Sub::Run { manifest, .. } = d.cmd;
        assert_eq!(manifest, PathBuf::from("y"));
        // Without a file: the built-in default, and a required option is
        // required again.
        let d = demo(&["run", "--manifest", "y"], None).expect("parses");
        assert_eq!(d.state, PathBuf::from(".benchops"));
        let e = demo(&["run"], None).expect_err("required");
        assert_eq!(e.kind(), clap::error::ErrorKind::MissingRequiredArgument);
    }

    #[test]
    fn the_environment_wins_over_the_file() {
        // A variable of this test alone, set in a child process so that no
        // other test sees it.
        if std::env::var_os("BENCHOPS_CLI_TEST_CHILD").is_none() {
            let exe = std::env::current_exe().expect("test binary");
            let out = std::process::Command::new(exe)
                .args([
                    "--exact",
                    "config::tests::the_environment_wins_over_the_file",
                ])
                .env("BENCHOPS_CLI_TEST_CHILD", "1")
                .env("BENCHOPS_CLI_TEST_STATE", "/from/env")
                .output()
                .expect("runs");
            assert!(
                out.status.success(),
                "{}",
                String::from_utf8_lossy(&out.stdout)
            );
            return;
        }
        let c =
            ProjectConfig::parse(Path::new("/p/benchops.toml"), "state = \"st\"\n").expect("valid");
        let d = demo(&["run", "--manifest", "m"], Some(&c)).expect("parses");
        assert_eq!(d.state, PathBuf::from("/from/env"));
    }
}
