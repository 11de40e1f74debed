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
    if let Err(e) = std::fs::create_dir_all(workdir) {
        return ctx.skip_all(
            operations,
            &format!("setup_failed:workdir:{}", super::row::tail(&e.to_string())),
        );
    }
    for cmd in &adapter.setup {
        let cmd = expand(cmd, ctx, vars);
        let cap = command::run(ctx.clock, &cmd, workdir, env, admitted, timeout);
        if !cap.ok() {
            let why = cap.error.unwrap_or(cap.stderr);
            let reason = format!(
                "setup_failed:{}:{}",
                cmd.first().map_or("", String::as_str),
                why.trim().chars().take(120).collect::<String>()
            );
            undo(ctx, adapter, workdir, env, admitted, vars);
            return ctx.skip_all(operations, &reason);
        }
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
