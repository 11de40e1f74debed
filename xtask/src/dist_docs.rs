//! `cargo xtask dist-docs OUT_DIR`: the shell completions and man pages of
//! `benchops-exec`, `benchops-publish` and `benchops-app`, generated from
//! their clap definitions (`clap_complete`, `clap_mangen`), as the release
//! archive ships them:
//!
//! ```text
//! OUT_DIR/completions/bash/<bin>.bash     (source it, or copy it to
//!                                          ~/.local/share/bash-completion/completions/<bin>)
//! OUT_DIR/completions/zsh/_<bin>          (a directory on $fpath)
//! OUT_DIR/completions/fish/<bin>.fish     (~/.config/fish/completions/)
//! OUT_DIR/man/man1/<bin>.1, <bin>-<subcommand>[-<subcommand>].1
//! ```
//!
//! One page per command and visible subcommand (hidden ones, such as
//! `benchops-exec worker`, get none). The output holds no date and no path
//! of the machine that made it.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result, bail};
use clap::CommandFactory as _;
use clap_complete::Shell;

/// The shells completions are made for.
pub const SHELLS: [Shell; 3] = [Shell::Bash, Shell::Zsh, Shell::Fish];

/// The three binaries' command definitions, by binary name.
pub fn commands() -> Vec<clap::Command> {
    vec![
        benchops_exec::cli::Cli::command(),
        benchops_publish::cli::Cli::command(),
        benchops_app::cli::command(),
    ]
}

/// The task: `dist-docs OUT_DIR`.
pub fn main(args: &[String]) -> Result<()> {
    let [out] = args else {
        bail!("usage: cargo xtask dist-docs OUT_DIR");
    };
    let written = write(Path::new(out))?;
    eprintln!(
        "xtask: wrote {} completion file(s) and {} man page(s) under {out}",
        written.completions.len(),
        written.man.len()
    );
    Ok(())
}

/// What [`write()`] wrote.
#[derive(Debug, Default)]
pub struct Written {
    /// The completion scripts.
    pub completions: Vec<PathBuf>,
    /// The man pages.
    pub man: Vec<PathBuf>,
}

/// Writes every completion script and man page under `out`.
pub fn write(out: &Path) -> Result<Written> {
    let mut written = Written::default();
    let man_dir = out.join("man/man1");
    std::fs::create_dir_all(&man_dir)
        .with_context(|| format!("failed to create {}", man_dir.display()))?;
    for cmd in commands() {
        let name = cmd.get_name().to_owned();
        for shell in SHELLS {
            let dir = out.join("completions").join(shell.to_string());
            std::fs::create_dir_all(&dir)
                .with_context(|| format!("failed to create {}", dir.display()))?;
            let mut c = cmd.clone();
            let path = clap_complete::generate_to(shell, &mut c, &name, &dir)
                .with_context(|| format!("failed to write the {shell} completions of {name}"))?;
            written.completions.push(path);
        }
        let before = pages(&man_dir)?;
        clap_mangen::generate_to(cmd, &man_dir)
            .with_context(|| format!("failed to write the man pages of {name}"))?;
        written
            .man
            .extend(pages(&man_dir)?.into_iter().filter(|p| !before.contains(p)));
    }
    written.completions.sort();
    written.man.sort();
    Ok(written)
}

/// The `.1` files in `dir`.
fn pages(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).with_context(|| format!("failed to read {}", dir.display()))? {
        let p = e?.path();
        if p.extension().is_some_and(|x| x == "1") {
            out.push(p);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The page name of every visible command, at any depth:
    /// `benchops-exec-bench-run`.
    fn page_names(cmd: &clap::Command, prefix: &str, out: &mut Vec<String>) {
        let name = if prefix.is_empty() {
            cmd.get_name().to_owned()
        } else {
            format!("{prefix}-{}", cmd.get_name())
        };
        for sub in cmd.get_subcommands().filter(|s| !s.is_hide_set()) {
            if sub.get_name() != "help" {
                page_names(sub, &name, out);
            }
        }
        out.push(name);
    }

    #[test]
    fn every_binary_gets_completions_and_every_subcommand_a_man_page() {
        let t = tempfile::tempdir().expect("temp dir");
        let w = write(t.path()).expect("writes");
        assert_eq!(w.completions.len(), 9, "{:?}", w.completions);
        for bin in ["benchops-exec", "benchops-publish", "benchops-app"] {
            for file in [
                format!("completions/bash/{bin}.bash"),
                format!("completions/zsh/_{bin}"),
                format!("completions/fish/{bin}.fish"),
            ] {
                let text = std::fs::read_to_string(t.path().join(&file)).expect(&file);
                assert!(text.contains(bin), "{file}");
            }
        }
        let bash = std::fs::read_to_string(t.path().join("completions/bash/benchops-exec.bash"))
            .expect("bash");
        for word in ["bench", "lane", "compare", "--quiet", "--color"] {
            assert!(bash.contains(word), "bash completion lacks {word}");
        }
        let mut want = Vec::new();
        for cmd in commands() {
            let mut c = cmd.clone();
            c.build();
            page_names(&c, "", &mut want);
        }
        let mut got: Vec<String> = w
            .man
            .iter()
            .map(|p| p.file_stem().expect("stem").to_string_lossy().into_owned())
            .collect();
        want.sort();
        got.sort();
        assert_eq!(got, want);
        for page in [
            "benchops-exec-bench-run",
            "benchops-exec-lane-run",
            "benchops-publish-sweep",
        ] {
            assert!(got.iter().any(|g| g == page), "no page {page}");
        }
        assert!(!got.iter().any(|g| g == "benchops-exec-worker"), "hidden");
        // Each page is roff that names its command, and no machine path.
        let run = std::fs::read_to_string(t.path().join("man/man1/benchops-exec-bench-run.1"))
            .expect("page");
        assert!(
            run.starts_with(".ie \\n(.g .ds Aq") || run.contains(".TH"),
            "{run}"
        );
        assert!(
            run.contains("bench\\-run") || run.contains("bench-run"),
            "{run}"
        );
        assert!(!run.contains(&*t.path().to_string_lossy()));
    }
}
