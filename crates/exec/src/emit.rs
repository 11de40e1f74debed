//! `lane schedule --emit`: the units or lines that start a manifest's lanes
//! on schedule, each calling `lane due --run` for its lane.
//!
//! - **systemd**: per lane a service (`Type=oneshot`, `lane due --run
//!   --wait`, exit 4 counted as success, hardening options) and a timer
//!   whose `OnCalendar=` is the lane's cron in the lane's own zone
//!   (systemd takes a zone in calendar specs), `Persistent=true` so a slot
//!   missed while the machine was off fires at boot (`lane due` then
//!   applies the lane's `catch_up`), and no randomised delay. The cron is
//!   translated field by field ([`on_calendar`]); when day-of-month and
//!   day-of-week are both restricted, cron fires on either, so the timer
//!   gets one `OnCalendar=` for each. A cron that has no translation (the
//!   `L`, `W` and `#` extensions) is refused, naming the lane.
//! - **cron**: per lane a `CRON_TZ=` line and the lane's own cron (for
//!   cron implementations that honour `CRON_TZ`, such as cronie), and, for
//!   those that do not (Debian's), one line that calls `lane due --run`
//!   every minute for every lane, which needs no zone at all.
//! - **scrontab** ([`scrontab`]): per lane an entry every minute, since
//!   scrontab has no zone of its own; `lane due` decides.
//! - **slurm**: a chain of batch jobs per lane, in [`crate::chain`].
//!
//! Hand-written because no library translates cron to systemd calendar
//! specs; `systemd-analyze calendar` checks the translation in the tests.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use benchops::manifest::Lane;

/// Why a lane's schedule could not be emitted.
#[derive(Debug, thiserror::Error)]
pub enum EmitError {
    /// The cron has no systemd calendar translation.
    #[error(
        "lane `{lane}`: cron {cron:?} has no systemd calendar form ({reason}); use `--emit cron`, or a timer that calls `lane due --run` every minute (docs/scheduling.md)"
    )]
    NoCalendar {
        /// The lane.
        lane: String,
        /// Its cron.
        cron: String,
        /// Why.
        reason: String,
    },
}

/// Where Slurm jobs that call `lane due` run (a chain's jobs, scrontab's
/// entries).
#[derive(Debug, Clone, Default)]
pub struct SlurmPlace {
    /// `--partition`.
    pub partition: Option<String>,
    /// `--account`.
    pub account: Option<String>,
}

/// What every unit or line runs: the binary, the state directory and the
/// `lane due --run` options, all absolute.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// `benchops-exec`.
    pub exe: PathBuf,
    /// The state directory.
    pub state: PathBuf,
    /// The manifest.
    pub manifest: PathBuf,
    /// The history, as `lane run` takes it.
    pub history: String,
    /// The subject checkout.
    pub subject: PathBuf,
    /// Where sealed records go.
    pub out: PathBuf,
    /// Backend options, as given (`--backend slurm`, …).
    pub backend_args: Vec<String>,
    /// The working directory of the service.
    pub workdir: PathBuf,
}

impl Invocation {
    /// The command line for `lane` (`None`: every lane), words quoted for
    /// a shell and for systemd's `ExecStart=` alike.
    pub fn command(&self, lane: Option<&str>, wait: bool) -> String {
        let due: &[&str] = if wait {
            &["lane", "due", "--run", "--wait"]
        } else {
            &["lane", "due", "--run"]
        };
        self.line(due, lane)
    }

    /// The command a Slurm chain job runs first: submit its successor, for
    /// `lane`'s next slot ([`crate::chain`]).
    pub fn chain_command(&self, lane: &str) -> String {
        self.line(
            &["lane", "schedule", "--emit", "slurm", "--chain-next"],
            Some(lane),
        )
    }

    /// `benchops-exec --state S --quiet`, the subcommand's words, then the
    /// manifest, history, subject, output, lane and backend options.
    fn line(&self, subcommand: &[&str], lane: Option<&str>) -> String {
        let mut words: Vec<String> = vec![
            path_word(&self.exe),
            "--state".into(),
            path_word(&self.state),
            "--quiet".into(),
        ];
        words.extend(subcommand.iter().map(|w| (*w).to_owned()));
        words.extend([
            "--manifest".into(),
            path_word(&self.manifest),
            "--history".into(),
            quote(&self.history),
            "--subject".into(),
            path_word(&self.subject),
            "--out".into(),
            path_word(&self.out),
        ]);
        if let Some(l) = lane {
            words.extend(["--lane".into(), quote(l)]);
        }
        words.extend(self.backend_args.iter().map(|a| quote(a)));
        words.join(" ")
    }
}

fn path_word(p: &Path) -> String {
    quote(&p.display().to_string())
}

/// A word as both a POSIX shell and systemd read it: bare when it holds
/// only safe characters, else in single quotes (a quote inside is closed,
/// escaped and reopened).
pub(crate) fn quote(w: &str) -> String {
    let safe = !w.is_empty()
        && w.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@+,".contains(c));
    if safe {
        w.to_owned()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

const DAYS: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const MONTHS: [&str; 12] = [
    "JAN", "FEB", "MAR", "APR", "MAY", "JUN", "JUL", "AUG", "SEP", "OCT", "NOV", "DEC",
];

/// One cron field in systemd's syntax (`a-b` → `a..b`, `*/s` → `lo/s`,
/// day names for the day of week), or why not.
fn field(text: &str, lo: u32, day_of_week: bool) -> Result<String, String> {
    if text.contains(['#', '?']) {
        return Err(format!("`{text}` uses a cron extension"));
    }
    let value = |v: &str| -> Result<String, String> {
        let upper = v.to_ascii_uppercase();
        let n: u32 = if let Some(i) = MONTHS.iter().position(|m| *m == upper) {
            u32::try_from(i + 1).unwrap_or(1)
        } else if let Some(i) = DAYS.iter().position(|d| d.to_ascii_uppercase() == upper) {
            u32::try_from(i).unwrap_or(0)
        } else {
            // `L`, `5L`, `15W`: cron extensions with no calendar form.
            v.parse()
                .map_err(|_| format!("`{v}` is a cron extension or not a number"))?
        };
        Ok(if day_of_week {
            DAYS[usize::try_from(n % 7).unwrap_or(0)].to_owned()
        } else {
            format!("{n:02}")
        })
    };
    let mut parts = Vec::new();
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, Some(s)),
            None => (part, None),
        };
        let mut out = match range {
            "*" if step.is_some() => {
                if day_of_week {
                    return Err(format!("`{part}`: a step over the days of the week"));
                }
                format!("{lo:02}")
            }
            "*" => "*".to_owned(),
            r => match r.split_once('-') {
                Some((a, b)) => format!("{}..{}", value(a)?, value(b)?),
                None => value(r)?,
            },
        };
        if let Some(s) = step {
            if day_of_week {
                return Err(format!("`{part}`: a step over the days of the week"));
            }
            let s: u32 = s
                .parse()
                .map_err(|_| format!("step `{s}` is not a number"))?;
            let _ = write!(out, "/{s}");
        }
        parts.push(out);
    }
    Ok(parts.join(","))
}

/// The `OnCalendar=` values that fire when the five-field `cron` fires in
/// zone `tz`: one, or two when cron's day-of-month and day-of-week are
/// both restricted (cron fires on either; a systemd spec needs both).
pub fn on_calendar(cron: &str, tz: &str) -> Result<Vec<String>, String> {
    let f: Vec<&str> = cron.split_whitespace().collect();
    let [minute, hour, dom, month, dow] = f[..] else {
        return Err(format!("{} field(s), not five", f.len()));
    };
    let minute = field(minute, 0, false)?;
    let hour = field(hour, 0, false)?;
    let month = field(month, 1, false)?;
    let time = format!("{hour}:{minute}:00");
    let spec = |days: Option<&str>, dom: &str| match days {
        Some(d) => format!("{d} *-{month}-{dom} {time} {tz}"),
        None => format!("*-{month}-{dom} {time} {tz}"),
    };
    let dom_all = dom == "*";
    let dow_all = dow == "*";
    let dom = field(dom, 1, false)?;
    Ok(match (dom_all, dow_all) {
        (_, true) => vec![spec(None, &dom)],
        (true, false) => vec![spec(Some(&field(dow, 0, true)?), "*")],
        (false, false) => vec![spec(None, &dom), spec(Some(&field(dow, 0, true)?), "*")],
    })
}

/// The unit names of a lane: `benchops-lane-<lane>.service` and `.timer`
/// (characters systemd does not take in a name become `-`).
pub fn unit_name(lane: &str) -> String {
    let safe: String = lane
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    format!("benchops-lane-{safe}")
}

/// The service and timer of every lane, as (file name, text).
pub fn systemd(lanes: &[Lane], inv: &Invocation) -> Result<Vec<(String, String)>, EmitError> {
    let mut files = Vec::new();
    for lane in lanes {
        let name = lane.name.as_str();
        let calendars =
            on_calendar(&lane.cron, &lane.timezone).map_err(|reason| EmitError::NoCalendar {
                lane: name.to_owned(),
                cron: lane.cron.clone(),
                reason,
            })?;
        let unit = unit_name(name);
        let window_s = u64::from(lane.completion_window_minutes) * 60;
        let service = format!(
            "# Generated by `benchops-exec lane schedule --emit systemd`.\n\
             [Unit]\n\
             Description=benchops lane {name}: start its run when its slot is due\n\
             After=network-online.target\n\
             Wants=network-online.target\n\
             \n\
             [Service]\n\
             Type=oneshot\n\
             WorkingDirectory={workdir}\n\
             ExecStart={command}\n\
             # 4: nothing was due (the slot already ran, or its window passed).\n\
             SuccessExitStatus=4\n\
             # The lane's completion window bounds a run.\n\
             TimeoutStartSec={window_s}\n\
             NoNewPrivileges=yes\n\
             PrivateTmp=yes\n\
             ProtectSystem=full\n\
             RestrictSUIDSGID=yes\n\
             LockPersonality=yes\n\
             ProtectKernelTunables=yes\n\
             ProtectControlGroups=yes\n",
            workdir = path_word(&inv.workdir),
            command = inv.command(Some(name), true),
        );
        let mut timer = format!(
            "# Generated by `benchops-exec lane schedule --emit systemd`.\n\
             # cron `{cron}` in {tz}.\n\
             [Unit]\n\
             Description=benchops lane {name}: its slots\n\
             \n\
             [Timer]\n\
             Unit={unit}.service\n",
            cron = lane.cron,
            tz = lane.timezone,
        );
        for c in &calendars {
            let _ = writeln!(timer, "OnCalendar={c}");
        }
        timer.push_str(
            "Persistent=true\nRandomizedDelaySec=0\nAccuracySec=1s\n\n[Install]\nWantedBy=timers.target\n",
        );
        files.push((format!("{unit}.service"), service));
        files.push((format!("{unit}.timer"), timer));
    }
    Ok(files)
}

/// Crontab lines: per lane a `CRON_TZ=` line and its cron (for a cron that
/// honours `CRON_TZ`), then, commented out, the one line for a cron that
/// does not: `lane due --run` every minute for every lane.
pub fn cron(lanes: &[Lane], inv: &Invocation) -> String {
    let mut o = String::from(
        "# Generated by `benchops-exec lane schedule --emit cron`.\n\
         # For a cron that honours CRON_TZ (cronie): each lane at its own slots, in its own zone.\n",
    );
    for lane in lanes {
        let name = lane.name.as_str();
        let _ = writeln!(
            o,
            "CRON_TZ={}\n{} cd {} && {} || [ $? -eq 4 ]",
            lane.timezone,
            lane.cron,
            path_word(&inv.workdir),
            inv.command(Some(name), true)
        );
    }
    let _ = writeln!(
        o,
        "# For a cron that does not (Debian's cron): remove the lines above and keep this one;\n\
         # `lane due` evaluates every lane in its own zone, once a minute.\n\
         # * * * * * cd {} && {} || [ $? -eq 4 ]",
        path_word(&inv.workdir),
        inv.command(None, false)
    );
    o
}

/// scrontab lines: per lane, `#SCRON` options (a job name, the lane's
/// completion window as the time limit, the partition and account given)
/// and an entry that calls `lane due --run --wait` for the lane every
/// minute. scrontab reads its times in the controller's zone and has no
/// `CRON_TZ`, so the lane's own cron is not used: `lane due` decides, in
/// the lane's zone, and exits 4 at once when nothing is due; a long run
/// keeps its entry busy, and scrontab starts the next call after it ends.
pub fn scrontab(lanes: &[Lane], inv: &Invocation, place: &SlurmPlace) -> String {
    let mut o = String::from(
        "# Generated by `benchops-exec lane schedule --emit scrontab`; install with `scrontab FILE`.\n\
         # scrontab has no CRON_TZ: each entry calls `lane due` every minute, which decides in the lane's own zone.\n",
    );
    for lane in lanes {
        let name = lane.name.as_str();
        let _ = writeln!(o, "#SCRON --job-name={}-due", unit_name(name));
        let _ = writeln!(o, "#SCRON --time={}", lane.completion_window_minutes.max(1));
        if let Some(p) = &place.partition {
            let _ = writeln!(o, "#SCRON --partition={p}");
        }
        if let Some(a) = &place.account {
            let _ = writeln!(o, "#SCRON --account={a}");
        }
        let _ = writeln!(
            o,
            "* * * * * cd {} && {} || [ $? -eq 4 ]",
            path_word(&inv.workdir),
            inv.command(Some(name), true)
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_translate_to_systemd_calendar_syntax() {
        assert_eq!(
            on_calendar("0 1 * * *", "Asia/Jerusalem"),
            Ok(vec!["*-*-* 01:00:00 Asia/Jerusalem".to_owned()])
        );
        assert_eq!(
            on_calendar("*/15 8-18/2 * 1-3 *", "UTC"),
            Ok(vec!["*-01..03-* 08..18/2:00/15:00 UTC".to_owned()])
        );
        assert_eq!(
            on_calendar("30 2 * * 1-5", "America/New_York"),
            Ok(vec!["Mon..Fri *-*-* 02:30:00 America/New_York".to_owned()])
        );
        assert_eq!(
            on_calendar("0 3 1,15 * 0", "UTC"),
            Ok(vec![
                "*-*-01,15 03:00:00 UTC".to_owned(),
                "Sun *-*-* 03:00:00 UTC".to_owned()
            ])
        );
        assert_eq!(
            on_calendar("0 0 * JAN,JUL SAT", "UTC"),
            Ok(vec!["Sat *-01,07-* 00:00:00 UTC".to_owned()])
        );
        assert!(on_calendar("0 0 L * *", "UTC").is_err());
        assert!(on_calendar("0 0 * * 1#2", "UTC").is_err());
        assert!(on_calendar("0 0 * *", "UTC").is_err());
    }

    #[test]
    fn words_are_quoted_for_a_shell_and_for_systemd() {
        assert_eq!(quote("/srv/bench/history.git"), "/srv/bench/history.git");
        assert_eq!(quote("my lane"), "'my lane'");
        assert_eq!(quote("it's"), "'it'\\''s'");
    }
}
