//! A platform other than GitHub, as a CLI adapter configured in the
//! semantics config: its binary, the commands of each operation it runs,
//! and the operations it has no equivalent for (structural rows with the
//! reason). Its untimed `setup` commands prepare the run (a mount, a first
//! commit: "the task branch exists locally") and its `cleanup` commands
//! undo it, whatever happened.
//!
//! In every command, `{repo}`, `{branch}`, `{run_id}`, `{run}` and
//! `{workdir}` are replaced. The subject token reaches the adapter's
//! commands under its own variable's name, and nothing else.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use super::command;
use super::race::SetupError;
use super::row::Row;
use super::runner::{Ctx, run_operations};
use super::spec::PlatformSemantics;

/// The values a command's placeholders take.
#[derive(Debug, Clone)]
pub struct Vars {
    /// `{repo}`.
    pub repo: String,
    /// `{branch}`.
    pub branch: String,
    /// `{workdir}`.
    pub workdir: String,
}

fn expand(cmd: &[String], ctx: &Ctx<'_>, v: &Vars) -> Vec<String> {
    cmd.iter()
        .map(|a| {
            a.replace("{repo}", &v.repo)
                .replace("{branch}", &v.branch)
                .replace("{run_id}", &ctx.meta.run_id)
                .replace("{run}", &ctx.run.to_string())
                .replace("{workdir}", &v.workdir)
        })
        .collect()
}

/// One run of a single-branch scenario through the adapter.
pub fn run(
    ctx: &Ctx<'_>,
    adapter: &PlatformSemantics,
    operations: &[String],
    workdir: &Path,
    env: &BTreeMap<String, String>,
    admitted: usize,
    vars: &Vars,
) -> Vec<Row> {
    let timeout = Duration::from_secs_f64(ctx.settings.command_timeout_s);
    if let Err(e) = setup(ctx, adapter, workdir, env, admitted, vars) {
        return ctx.skip_all(operations, &e.skip_reason());
    }
    let mut handler = |op: &str| -> Option<Row> {
        if let Some(note) = adapter.structural.get(op) {
            return Some(Row::structural(ctx.meta, ctx.scenario, ctx.run, op, note));
        }
        let commands: Vec<Vec<String>> = adapter
            .commands
            .get(op)?
            .iter()
            .map(|c| expand(c, ctx, vars))
            .collect();
        let mut r = ctx.row(op);
        command::sequence_row(
            &mut r, ctx.clock, &commands, workdir, env, admitted, timeout,
        );
        Some(r)
    };
    let rows = run_operations(ctx, operations, &mut handler);
    undo(ctx, adapter, workdir, env, admitted, vars);
    rows
}

/// One branch of a race through the adapter: its own setup, paced
/// commands, its own cleanup.
struct AdapterBranch<'a> {
    ctx: &'a Ctx<'a>,
    adapter: &'a PlatformSemantics,
    workdir: std::path::PathBuf,
    env: &'a BTreeMap<String, String>,
    admitted: usize,
    vars: Vars,
}

impl super::race::RaceBranch for AdapterBranch<'_> {
    fn op(&mut self, op: &str, pace: &mut dyn FnMut()) -> Option<Row> {
        let ctx = self.ctx;
        if let Some(note) = self.adapter.structural.get(op) {
            return Some(Row::structural(ctx.meta, ctx.scenario, ctx.run, op, note));
        }
        let commands: Vec<Vec<String>> = self
            .adapter
            .commands
            .get(op)?
            .iter()
            .map(|c| expand(c, ctx, &self.vars))
            .collect();
        let timeout = Duration::from_secs_f64(ctx.settings.command_timeout_s);
        let mut r = super::race::paced(ctx, pace, || {
            let mut r = ctx.row(op);
            command::sequence_row(
                &mut r,
                ctx.clock,
                &commands,
                &self.workdir,
                self.env,
                self.admitted,
                timeout,
            );
            r
        });
        r.set("race_branch_name", &self.vars.branch);
        Some(r)
    }

    fn cleanup(&mut self) {
        undo(
            self.ctx,
            self.adapter,
            &self.workdir,
            self.env,
            self.admitted,
            &self.vars,
        );
    }
}

/// A race through the adapter: each branch its own setup in
/// `workdir/b<k>`, content commands paced inside their timed region.
#[allow(clippy::too_many_arguments)]
pub fn race<'a>(
    ctx: &'a Ctx<'a>,
    adapter: &'a PlatformSemantics,
    operations: &[String],
    workdir: &'a Path,
    env: &'a BTreeMap<String, String>,
    admitted: usize,
    repo: &'a str,
    branches: u32,
    ops_per_hour: f64,
) -> Vec<Row> {
    let mut make = move |b: u32| -> Result<Box<dyn super::race::RaceBranch + 'a>, SetupError> {
        let dir = workdir.join(format!("b{b}"));
        let vars = Vars {
            repo: repo.to_owned(),
            branch: super::anatomy::branch_name(&ctx.meta.run_id, ctx.run, Some(b)),
            workdir: dir.display().to_string(),
        };
        setup(ctx, adapter, &dir, env, admitted, &vars)?;
        Ok(Box::new(AdapterBranch {
            ctx,
            adapter,
            workdir: dir,
            env,
            admitted,
            vars,
        }))
    };
    super::race::run_race(ctx, operations, branches, ops_per_hour, &mut make)
}

/// The untimed setup; `Err` says which step failed (its
/// [`SetupError::skip_reason`] is the rows' skip reason).
fn setup(
    ctx: &Ctx<'_>,
    adapter: &PlatformSemantics,
    workdir: &Path,
    env: &BTreeMap<String, String>,
    admitted: usize,
    vars: &Vars,
) -> Result<(), SetupError> {
    let timeout = Duration::from_secs_f64(ctx.settings.command_timeout_s);
    std::fs::create_dir_all(workdir).map_err(|source| SetupError::Workdir {
        path: workdir.to_path_buf(),
        source,
    })?;
    for cmd in &adapter.setup {
        let cmd = expand(cmd, ctx, vars);
        let cap = command::run(ctx.clock, &cmd, workdir, env, admitted, timeout);
        if !cap.ok() {
            undo(ctx, adapter, workdir, env, admitted, vars);
            return Err(SetupError::Command {
                step: cmd.first().cloned().unwrap_or_default(),
                output: cap.error.unwrap_or(cap.stderr),
            });
        }
    }
    Ok(())
}

/// The untimed cleanup; its failures are not data.
fn undo(
    ctx: &Ctx<'_>,
    adapter: &PlatformSemantics,
    workdir: &Path,
    env: &BTreeMap<String, String>,
    admitted: usize,
    vars: &Vars,
) {
    let timeout = Duration::from_secs_f64(ctx.settings.command_timeout_s);
    for cmd in &adapter.cleanup {
        let cmd = expand(cmd, ctx, vars);
        let _ = command::run(ctx.clock, &cmd, workdir, env, admitted, timeout);
    }
}
