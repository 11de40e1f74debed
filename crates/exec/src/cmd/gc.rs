//! `benchops-exec gc`: one call to [`crate::gc::collect`], its report as
//! text (each item, its size and why) or one JSON object, and the exit
//! code.

use anyhow::Result;

use crate::cli::GcArgs;
use crate::exit;
use crate::gc::{self, GcReport, Item, Policy};
use crate::print::{info, line, note};
use crate::state::StateDir;

pub(super) fn gc_command(state: &StateDir, args: &GcArgs) -> Result<u8> {
    // Like the lane commands, it holds no publication credential.
    crate::lane::refuse_credentials(std::env::vars_os().map(|(k, v)| {
        (
            k.to_string_lossy().into_owned(),
            v.to_string_lossy().into_owned(),
        )
    }))?;
    let policy = Policy {
        keep_days: args.keep_days,
        max_bytes: args.max_bytes,
    };
    let report = gc::collect(state, &policy, std::time::SystemTime::now(), args.dry_run)?;
    if args.json {
        line(serde_json::to_string(&report)?)?;
    } else {
        print_text(&report)?;
    }
    if let Some(o) = &report.over_budget {
        note(format_args!("note: {}\n", gc::over_budget_text(o)));
        return Ok(exit::GC_OVER_BUDGET);
    }
    Ok(exit::OK)
}

fn row(verb: &str, i: &Item) -> String {
    let lane = i
        .lane
        .as_ref()
        .map(|l| format!(" (lane {l})"))
        .unwrap_or_default();
    let of = i
        .execution
        .as_ref()
        .map(|e| format!(", execution {}", &e[..12.min(e.len())]))
        .unwrap_or_default();
    format!(
        "{verb} {} {}{lane}  {}, {} file(s): {}{of}",
        i.kind,
        i.id,
        gc::bytes(i.bytes),
        i.files,
        i.why
    )
}

fn print_text(r: &GcReport) -> Result<()> {
    let verb = if r.dry_run { "would remove" } else { "removed" };
    for i in &r.removed {
        line(row(verb, i))?;
    }
    for i in &r.kept {
        line(row("kept", i))?;
    }
    info(format_args!(
        "{} (it held {} in {} file(s))\n",
        gc::summary(r),
        gc::bytes(r.before.bytes),
        r.before.files
    ));
    Ok(())
}
