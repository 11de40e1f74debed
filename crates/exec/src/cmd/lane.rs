//! The `lane` commands of the CLI: a lane run and its end (verdicts, the
//! JSON step, the exit code of a sealed execution), a bisection by hand,
//! advancing and looking, and `lane due`.

use anyhow::Result;

use crate::cli::LaneCommand;
use crate::print::{info, line, note, out};
use crate::state::StateDir;
use crate::{exit, render};

/// Refuses to go on when a publication credential is in this process's
/// environment ([`crate::lane::refuse_credentials`]).
/// `--wait` of `lane run` and `lane bisect`: drive the execution to its
/// end with a progress bar, printing the notes.
fn wait_with_bar(
    state: &StateDir,
    scheduler: &crate::backend::SchedulerOptions,
    id: &str,
    p: crate::lane::Progress,
    poll: std::time::Duration,
) -> Result<crate::lane::Progress> {
    if p.execution.phase.is_final() {
        return Ok(p);
    }
    let bar = crate::progress::LaneProgress::new();
    let done = crate::lane::wait(state, id, scheduler, None, p.processes, poll, |s| {
        bar.update(s)
    })?;
    bar.finish();
    for n in &done.notes {
        info(format_args!("{n}\n"));
    }
    Ok(done)
}

fn refuse_credentials_here() -> Result<(), crate::lane::LaneError> {
    crate::lane::refuse_credentials(std::env::vars_os().map(|(k, v)| {
        (
            k.to_string_lossy().into_owned(),
            v.to_string_lossy().into_owned(),
        )
    }))
}

pub(super) fn lane_command(
    state: &StateDir,
    scheduler: &crate::backend::SchedulerOptions,
    cmd: LaneCommand,
) -> Result<u8> {
    use crate::lane;
    match cmd {
        LaneCommand::Due(args) => return due(state, scheduler, &args),
        LaneCommand::Schedule(args) => return schedule(state, scheduler, &args),
        LaneCommand::Run(args) => {
            refuse_credentials_here()?;
            let opts = lane::LaneRunOptions {
                manifest: args.manifest.clone(),
                lane: args.lane.clone(),
                history: args.history.clone(),
                slot: args.slot.clone(),
                repository: args.repository.clone(),
                commit: args.commit.clone(),
                subject_dir: args.subject.clone(),
                out: args.out.clone(),
                backend: args.on.lane_backend(),
                exe: None,
                now: jiff::Timestamp::now(),
                sign_key: args.sign_key.clone(),
                unscheduled: args.unscheduled.clone(),
                skipped: None,
            };
            let p = lane::start(state, &opts, scheduler)?;
            for n in &p.notes {
                info(format_args!("{n}\n"));
            }
            let id = p.execution.id.clone();
            crate::interrupt::arm(format!(
                "the lane execution keeps its state and its children keep running; resume with `benchops-exec lane advance {}` (or the same `lane run` again), and look with `benchops-exec lane status {}`",
                &id[..12],
                &id[..12]
            ));
            info(format_args!(
                "lane execution {id} ({}, lane {}, slot {}){}\n",
                p.execution.phase,
                p.execution.lane,
                p.execution.slot,
                if p.resumed { ", resumed" } else { "" }
            ));
            let p = if args.wait {
                wait_with_bar(state, scheduler, &id, p, args.on.poll())?
            } else {
                p
            };
            return lane_end(state, scheduler, &p, args.json, || line(&id));
        }
        LaneCommand::Bisect(args) => {
            refuse_credentials_here()?;
            let opts = lane::LaneBisectOptions {
                manifest: args.manifest.clone(),
                lane: args.lane.clone(),
                subject_dir: args.subject.clone(),
                good: args.good.clone(),
                bad: args.bad.clone(),
                case: args.case.clone(),
                metric: args.metric.clone(),
                max_steps: args.max_steps,
                backend: args.on.lane_backend(),
                exe: None,
            };
            let p = lane::start_bisect(state, &opts, scheduler)?;
            for n in &p.notes {
                info(format_args!("{n}\n"));
            }
            let id = p.execution.id.clone();
            crate::interrupt::arm(format!(
                "the bisection keeps its state and its children keep running; resume with the same `lane bisect` command, or `benchops-exec lane advance {}`",
                &id[..12]
            ));
            info(format_args!(
                "bisection {id} ({}){}\n",
                p.execution.phase,
                if p.resumed { ", resumed" } else { "" }
            ));
            let p = if args.wait {
                wait_with_bar(state, scheduler, &id, p, args.on.poll())?
            } else {
                p
            };
            return bisect_outcome(&p.execution, args.json);
        }
        LaneCommand::Advance {
            id,
            follow_up,
            json,
        } => {
            let mut p = lane::advance(state, &id, scheduler, None, follow_up)?;
            for n in &p.notes {
                info(format_args!("{n}\n"));
            }
            // Local workers are detached; they need no reaping by us.
            p.processes.clear();
            if p.execution.kind == lane::ExecutionKind::Bisect {
                if let Some(r) = &p.sealed {
                    out(render::lane_verdicts(r))?;
                }
                return bisect_outcome(&p.execution, json);
            }
            let (id, phase) = (p.execution.id.clone(), p.execution.phase);
            return lane_end(state, scheduler, &p, json, || {
                line(format_args!("{id} {phase}"))
            });
        }
        LaneCommand::Status { id, json } => {
            let s = lane::status(state, &id, scheduler)?;
            if json {
                line(serde_json::to_string_pretty(&s)?)?;
            } else {
                out(render::lane_status(&s))?;
            }
        }
        LaneCommand::List { json } => {
            let mut list = lane::list(state);
            // Newest first.
            list.sort_by(|a, b| {
                benchops::time::order_key(&b.created_at)
                    .cmp(&benchops::time::order_key(&a.created_at))
                    .then(a.id.cmp(&b.id))
            });
            if json {
                let rows: Vec<serde_json::Value> = list
                    .iter()
                    .map(|e| {
                        serde_json::json!({
                            "id": e.id,
                            "phase": e.phase,
                            "kind": e.kind,
                            "lane": e.lane,
                            "slot": e.slot,
                            "commit": e.commit,
                            "created_at": e.created_at,
                            "sealed": e.sealed.as_ref().map(|s| s.digest.to_string()),
                        })
                    })
                    .collect();
                line(serde_json::to_string_pretty(&rows)?)?;
            } else {
                line(format_args!(
                    "{:<16}  {:<10}  {:<16}  {:<20}  {:<12}  CREATED",
                    "EXECUTION", "PHASE", "LANE", "SLOT", "COMMIT"
                ))?;
                for e in &list {
                    line(format_args!(
                        "{:<16}  {:<10}  {:<16}  {:<20}  {:<12}  {}",
                        &e.id[..16],
                        e.phase.to_string(),
                        render::escape_line(e.lane.as_str()),
                        e.slot,
                        &e.commit[..12.min(e.commit.len())],
                        e.created_at
                    ))?;
                }
            }
        }
    }
    Ok(exit::OK)
}

/// The answer of a bisection by hand, once it has one, and its exit code:
/// [`exit::OK`] when it named one commit, [`exit::ATTENTION`] when it
/// proved only a range. An unfinished one prints its id.
fn bisect_outcome(e: &crate::lane::LaneExecution, json: bool) -> Result<u8> {
    let Some(b) = e.bisect.as_ref().filter(|_| e.phase.is_final()) else {
        line(format_args!("{} {}", e.id, e.phase))?;
        return Ok(exit::OK);
    };
    let record = crate::lane::bisect::record(b)?;
    if json {
        line(serde_json::to_string_pretty(&record)?)?;
    } else {
        out(render::bisection(&record))?;
        line(format_args!("{} {}", e.id, e.phase))?;
    }
    Ok(if record.culprit.is_some() {
        exit::OK
    } else {
        exit::ATTENTION
    })
}

/// The exit code of a sealed lane execution: [`exit::ATTENTION`], with the
/// summary on standard error, when a child run of any stage did not
/// succeed.
fn lane_outcome(failed: &[crate::failures::FailedCase]) -> u8 {
    match crate::failures::render(failed) {
        Some(summary) => {
            note(summary);
            exit::ATTENTION
        }
        None => exit::OK,
    }
}

/// What `lane run` and `lane advance` end with: the verdicts and the id (or,
/// with `--json`, the step as JSON), then the exit code of a sealed
/// execution ([`lane_outcome`]).
fn lane_end(
    state: &StateDir,
    scheduler: &crate::backend::SchedulerOptions,
    p: &crate::lane::Progress,
    json: bool,
    text_tail: impl FnOnce() -> Result<()>,
) -> Result<u8> {
    let failed = if p.sealed.is_some() {
        crate::lane::failures_of(state, scheduler, &p.execution)?
    } else {
        Vec::new()
    };
    if json {
        line(crate::lane::progress_json(p, &failed))?;
    } else {
        if let Some(r) = &p.sealed {
            out(render::lane_verdicts(r))?;
        }
        text_tail()?;
    }
    Ok(if p.sealed.is_some() {
        lane_outcome(&failed)
    } else {
        exit::OK
    })
}

/// `lane due`: evaluate, and with `--run` start and move on, under the
/// lock (see [`crate::due`]).
fn due(
    state: &StateDir,
    scheduler: &crate::backend::SchedulerOptions,
    args: &crate::cli::LaneDueArgs,
) -> Result<u8> {
    use crate::due::{DueLock, DueState, LOCK_WAIT, evaluate};
    refuse_credentials_here()?;
    let now = match &args.now {
        Some(t) => t.parse::<jiff::Timestamp>().map_err(|e| {
            anyhow::anyhow!(
                "--now {t}: not an RFC 3339 instant ({e}); write e.g. 2026-12-01T01:00:00Z"
            )
        })?,
        None => jiff::Timestamp::now(),
    };
    let (manifest, _) = crate::lane::load_manifest(&args.manifest)?;
    let lanes = &manifest.manifest.lanes;
    // The lock is held from the evaluation to the last start, so that two
    // callers never both find a slot due and start it.
    let lock = if args.run {
        Some(DueLock::take(state, LOCK_WAIT, &mut |m| {
            note(format_args!("lane due: {m}\n"));
        })?)
    } else {
        None
    };
    let mut due = evaluate(lanes, &args.lane, now, &crate::lane::list(state))?;
    let mut acted = false;
    let mut failed = false;
    // Lane runs started here, to drive to their sealed records with
    // `--wait` once the lock is released (another lane's timer must not
    // wait on this lane's run).
    let mut started: Vec<(usize, crate::lane::Progress)> = Vec::new();
    if args.run {
        let (Some(history), Some(out_dir)) = (&args.history, &args.out) else {
            anyhow::bail!("--run needs --history and --out, as `lane run` does");
        };
        // One lane that cannot start (a bad subject, a failing build) does
        // not keep the others from starting: it is reported, and the exit
        // is 2 once every lane had its turn.
        for (i, d) in due.iter_mut().enumerate() {
            if !matches!(d.state, DueState::Due | DueState::Running { .. }) {
                continue;
            }
            acted = true;
            match start_one(state, scheduler, args, history, out_dir, now, d) {
                Ok(p) => {
                    d.state = after_start(&d.state, &p);
                    if args.wait && !p.execution.phase.is_final() {
                        started.push((i, p));
                    }
                }
                Err(e) => failed |= fail(d, &e),
            }
        }
    } else {
        acted = due
            .iter()
            .any(|d| matches!(d.state, DueState::Due | DueState::Running { .. }));
    }
    drop(lock);
    for (i, mut p) in started {
        let d = &mut due[i];
        let id = p.execution.id.clone();
        let processes = std::mem::take(&mut p.processes);
        match crate::lane::wait(
            state,
            &id,
            scheduler,
            None,
            processes,
            args.on.poll(),
            |_| {},
        ) {
            Ok(p) => {
                for n in &p.notes {
                    info(format_args!("{}: {n}\n", d.lane));
                }
                if p.execution.phase.is_final() {
                    d.state = DueState::Sealed { id };
                }
            }
            Err(e) => failed |= fail(d, &e),
        }
    }
    // The manifest's [gc] policy, after every lane had its turn.
    crate::gc::after_lane_due(state, &manifest.manifest, args.run);
    if args.json {
        for d in &due {
            line(serde_json::to_string(d)?)?;
        }
    } else {
        out(render::lane_due(&due))?;
    }
    Ok(if failed {
        exit::ERROR
    } else if acted {
        exit::OK
    } else {
        exit::NOTHING_DUE
    })
}

/// Reports `e` as why `d`'s slot could not start or finish; true.
fn fail(d: &mut crate::due::LaneDue, e: &crate::lane::LaneError) -> bool {
    let error = crate::bench::error_chain(e);
    note(format_args!(
        "{} lane `{}`, slot {}: {error}\n",
        benchops_cli::output::error_prefix(),
        d.lane,
        d.slot
    ));
    d.state = crate::due::DueState::Failed { error };
    true
}

/// `lane due --run` for one lane's slot: start it (when due) or move it on
/// (when running).
fn start_one(
    state: &StateDir,
    scheduler: &crate::backend::SchedulerOptions,
    args: &crate::cli::LaneDueArgs,
    history: &str,
    out_dir: &std::path::Path,
    now: jiff::Timestamp,
    d: &crate::due::LaneDue,
) -> Result<crate::lane::Progress, crate::lane::LaneError> {
    use crate::due::DueState;
    let p = match &d.state {
        DueState::Running { id, .. } => crate::lane::advance(state, id, scheduler, None, false)?,
        _ => {
            let opts = crate::lane::LaneRunOptions {
                manifest: args.manifest.clone(),
                lane: d.lane.clone(),
                history: history.to_owned(),
                slot: Some(d.slot.clone()),
                repository: None,
                commit: None,
                subject_dir: args.subject.clone(),
                out: out_dir.to_path_buf(),
                backend: args.on.lane_backend(),
                exe: None,
                now,
                sign_key: args.sign_key.clone(),
                unscheduled: None,
                skipped: d.skipped.clone(),
            };
            crate::lane::start(state, &opts, scheduler)?
        }
    };
    for n in &p.notes {
        info(format_args!("{}: {n}\n", d.lane));
    }
    Ok(p)
}

/// Where a slot stands once `start_one` started or moved it on.
fn after_start(before: &crate::due::DueState, p: &crate::lane::Progress) -> crate::due::DueState {
    use crate::due::DueState;
    let id = p.execution.id.clone();
    if p.execution.phase.is_final() {
        DueState::Sealed { id }
    } else if matches!(before, DueState::Due) {
        DueState::Started { id }
    } else {
        DueState::Running {
            id,
            phase: p.execution.phase.to_string(),
        }
    }
}

/// `lane schedule`: the units or lines of [`crate::emit`], every path made
/// absolute (a unit runs from anywhere); with `--emit slurm`, `--status`
/// and `--stop`, each lane's chain ([`crate::chain`]).
fn schedule(
    state: &StateDir,
    scheduler: &crate::backend::SchedulerOptions,
    args: &crate::cli::LaneScheduleArgs,
) -> Result<u8> {
    use crate::cli::Emit;
    let (manifest, _) = crate::lane::load_manifest(&args.manifest)?;
    let lanes: Vec<_> = crate::due::select(&manifest.manifest.lanes, &args.lane)?
        .into_iter()
        .cloned()
        .collect();
    if args.status || args.stop {
        return chain_status(state, scheduler, &lanes, args);
    }
    let (Some(emit), Some(history), Some(out_dir)) = (args.emit, &args.history, &args.out) else {
        anyhow::bail!("--emit needs --history and --out, as `lane run` does");
    };
    if args.chain_next && emit != Emit::Slurm {
        anyhow::bail!("--chain-next is for the jobs of `--emit slurm` chains");
    }
    let abs = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    // A local history path is made absolute; a URL is kept as written.
    let history = if std::path::Path::new(history).exists() {
        abs(std::path::Path::new(history)).display().to_string()
    } else {
        history.clone()
    };
    let inv = crate::emit::Invocation {
        exe: std::env::current_exe()?,
        state: abs(state.root()),
        manifest: abs(&args.manifest),
        history,
        subject: abs(&args.subject),
        out: abs(out_dir),
        backend_args: args.on.words(),
        workdir: abs(std::path::Path::new(".")),
    };
    match emit {
        Emit::Systemd => {
            let files = crate::emit::systemd(&lanes, &inv)?;
            std::fs::create_dir_all(&args.dir)?;
            for (name, text) in &files {
                let path = args.dir.join(name);
                benchops::fsio::write_atomic(&path, text.as_bytes())?;
                line(path.display())?;
            }
            note(format_args!(
                "install: copy (or `systemctl link`) the files into /etc/systemd/system, then `systemctl daemon-reload` and `systemctl enable --now {}`\n",
                lanes
                    .iter()
                    .map(|l| format!("{}.timer", crate::emit::unit_name(l.name.as_str())))
                    .collect::<Vec<_>>()
                    .join(" ")
            ));
        }
        Emit::Cron => out(crate::emit::cron(&lanes, &inv))?,
        Emit::Scrontab => out(crate::emit::scrontab(&lanes, &inv, &place(&args.on)))?,
        Emit::Slurm => {
            refuse_credentials_here()?;
            // The chain's state directory must be the absolute one the
            // jobs use, so that both name the chain alike.
            let state = StateDir::new(inv.state.clone());
            let place = place(&args.on);
            let now = jiff::Timestamp::now();
            for lane in &lanes {
                let spec = crate::chain::ChainSpec {
                    lane,
                    inv: &inv,
                    place: &place,
                    scheduler,
                };
                let done = crate::chain::install(&state, &spec, now, args.chain_next)?;
                let name = lane.name.as_str();
                if args.json {
                    let mut v = serde_json::to_value(&done)?;
                    v["lane"] = name.into();
                    line(v)?;
                    continue;
                }
                match &done {
                    crate::chain::Installed::Submitted { job, slot } => line(format_args!(
                        "lane {name}: chain job {job} submitted, held until its slot {slot}"
                    ))?,
                    crate::chain::Installed::AlreadyPending { job, start } => line(format_args!(
                        "lane {name}: chain already installed (job {job} pending, starts {start}); nothing submitted"
                    ))?,
                    crate::chain::Installed::Stopped => line(format_args!(
                        "lane {name}: chain stopped (`lane schedule --stop`); no successor submitted"
                    ))?,
                }
            }
        }
    }
    Ok(exit::OK)
}

/// Where a lane's Slurm chain jobs run: the partition and account given.
fn place(on: &crate::cli::LaneBackendArgs) -> crate::emit::SlurmPlace {
    crate::emit::SlurmPlace {
        partition: on.partition.clone(),
        account: on.account.clone(),
    }
}

/// `lane schedule --status | --stop`: each lane's chain jobs, or stopping
/// them.
fn chain_status(
    state: &StateDir,
    scheduler: &crate::backend::SchedulerOptions,
    lanes: &[benchops::manifest::Lane],
    args: &crate::cli::LaneScheduleArgs,
) -> Result<u8> {
    let state = StateDir::new(
        std::path::absolute(state.root()).unwrap_or_else(|_| state.root().to_path_buf()),
    );
    for lane in lanes {
        let name = lane.name.as_str();
        let job_name = crate::chain::job_name(state.root(), name);
        if args.stop {
            let s = crate::chain::stop(&state, name, scheduler)?;
            if args.json {
                let mut v = serde_json::to_value(&s)?;
                v["lane"] = name.into();
                line(v)?;
                continue;
            }
            let cancelled = if s.cancelled.is_empty() {
                "no pending job".to_owned()
            } else {
                format!("cancelled job {}", s.cancelled.join(", "))
            };
            let running = if s.running.is_empty() {
                String::new()
            } else {
                format!(
                    "; job {} still runs its slot and submits no successor",
                    s.running.join(", ")
                )
            };
            line(format_args!(
                "lane {name}: chain stopped, {cancelled}{running}"
            ))?;
            continue;
        }
        let jobs = crate::chain::jobs(&job_name, scheduler)?;
        let stopped = crate::chain::is_stopped(&state, name);
        if args.json {
            line(serde_json::json!({
                "lane": name,
                "job_name": job_name,
                "stopped": stopped,
                "jobs": jobs,
            }))?;
            continue;
        }
        if jobs.is_empty() {
            line(format_args!(
                "lane {name}: no chain job ({}); install one with `lane schedule --emit slurm`",
                if stopped { "stopped" } else { "not installed" }
            ))?;
        }
        for j in &jobs {
            line(format_args!(
                "lane {name}: job {} {} (starts {}){}",
                j.job,
                j.state,
                j.start,
                if stopped {
                    ", chain stopped: it submits no successor"
                } else {
                    ""
                }
            ))?;
        }
    }
    Ok(exit::OK)
}
