//! Reading `/proc` to tell a live process from a dead one or a reused pid.

use std::fs;

/// What `/proc/PID/stat` says about a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcStat {
    /// Process state letter (`R`, `S`, `Z`, ...).
    pub state: char,
    /// Parent pid.
    pub ppid: u32,
    /// Process group id.
    pub pgrp: u32,
    /// Session id.
    pub session: u32,
    /// Start time in clock ticks since boot.
    pub start_ticks: u64,
}

/// Parses the contents of `/proc/PID/stat`. The command name (field 2) may
/// hold spaces and parentheses, so fields are counted after its last `)`.
pub fn parse_stat(text: &str) -> Option<ProcStat> {
    let rest = &text[text.rfind(')')? + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    // After the command: field 3 is f[0].
    Some(ProcStat {
        state: f.first()?.chars().next()?,
        ppid: f.get(1)?.parse().ok()?,
        pgrp: f.get(2)?.parse().ok()?,
        session: f.get(3)?.parse().ok()?,
        start_ticks: f.get(19)?.parse().ok()?,
    })
}

/// Reads `/proc/PID/stat`.
pub fn stat(pid: u32) -> Option<ProcStat> {
    parse_stat(&fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Whether `pid` is the same live process that started at `start_ticks`:
/// present, not a zombie, and not a reused pid.
pub fn is_alive(pid: u32, start_ticks: u64) -> bool {
    matches!(stat(pid), Some(s) if s.start_ticks == start_ticks && s.state != 'Z' && s.state != 'X')
}

/// The start ticks of a pid, if it exists.
pub fn start_ticks(pid: u32) -> Option<u64> {
    stat(pid).map(|s| s.start_ticks)
}

/// Every live process, with what `/proc/PID/stat` says about it.
fn processes() -> impl Iterator<Item = (u32, ProcStat)> {
    fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|s| s.parse::<u32>().ok()))
        .filter_map(|pid| stat(pid).map(|s| (pid, s)))
        .filter(|(_, s)| s.state != 'Z' && s.state != 'X')
}

/// Process groups of the live children of `parent`.
pub fn child_groups(parent: u32) -> Vec<u32> {
    let mut out: Vec<u32> = processes()
        .filter(|(_, s)| s.ppid == parent)
        .map(|(_, s)| s.pgrp)
        .collect();
    out.sort_unstable();
    out.dedup();
    out
}

/// The live processes of session `sid` (what a session leader started and
/// left behind, even after it died and they were reparented).
pub fn session_members(sid: u32) -> Vec<u32> {
    processes()
        .filter(|(_, s)| s.session == sid)
        .map(|(pid, _)| pid)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_names_with_spaces_and_parens() {
        let line =
            "1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 98765 1000 100";
        let s = parse_stat(line).expect("parses");
        assert_eq!(
            (s.state, s.ppid, s.pgrp, s.session, s.start_ticks),
            ('S', 1, 1234, 1234, 98765)
        );
        assert!(parse_stat("garbage").is_none());
    }

    #[test]
    fn own_process_is_alive_and_reuse_is_detected() {
        let me = std::process::id();
        let ticks = start_ticks(me).expect("own stat");
        assert!(is_alive(me, ticks));
        assert!(!is_alive(me, ticks + 1));
    }
}
