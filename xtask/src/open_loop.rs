//! A fixed-rate (open-loop) HTTP/1.1 load generator for
//! `cargo xtask bench-webhooks`: the latency a server gives at an offered
//! rate. A closed loop such as wrk cannot show it, since it slows down
//! with the server, and at its saturation its percentiles measure the
//! queue it builds itself.
//!
//! Each of the kept-alive connections has its own schedule: its request
//! `k` is due at `start + offset + k × period`, with `period = connections
//! / rate` and the offsets spread over one period. A request whose
//! connection is still waiting for the previous answer at its due time is
//! sent when that answer arrives, and its latency counts from its due time:
//! the queueing a slow server causes is counted, not hidden (no coordinated
//! omission). A request whose connection was free is sent when the timer
//! fires and counts from then, so the generator's own timer lateness (the
//! runtime's timer has a 1 ms tick) is not charged to the server. Every
//! latency is kept and sorted: the percentiles are exact.
//!
//! It runs on one thread, on a current-thread tokio runtime, and can pin
//! that thread to CPUs with `taskset -p` on its own thread id.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// The longest wait for one answer; a request without an answer by then
/// is an error, and its connection is opened again. Also how long after
/// the window a request may still be sent: one that a slow server kept
/// waiting longer is counted as not sent.
const ANSWER_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest answer head read.
const MAX_HEAD: usize = 16 * 1024;
/// The largest answer body read.
const MAX_BODY: usize = 1024 * 1024;

/// What to send, how fast, for how long.
pub(crate) struct Plan {
    pub addr: SocketAddr,
    /// Requests a second, over all connections.
    pub rate: f64,
    pub connections: u32,
    pub duration: Duration,
    /// The `taskset -c` list to pin the generator's thread to, if any.
    pub cpus: Option<String>,
    /// Request `n` (counted from 0 over the run), whole.
    pub request: Arc<dyn Fn(u64) -> Vec<u8> + Send + Sync>,
}

/// What a run measured.
#[derive(Debug, Clone)]
pub(crate) struct Outcome {
    /// The rate asked for.
    pub offered_per_s: f64,
    /// Requests due in the run's window.
    pub due: u64,
    /// Answers with a 2xx status.
    pub ok: u64,
    /// Answers with another status.
    pub non_2xx: u64,
    /// Requests without an answer: a connection error or a timeout.
    pub errors: u64,
    /// Requests due in the window that could not be sent within
    /// [`ANSWER_TIMEOUT`] of its end, their connection still busy.
    pub unsent: u64,
    /// From the first due time to the last answer, in seconds: the window,
    /// or longer when the server fell behind.
    pub elapsed_s: f64,
    /// Every answered request's latency, in microseconds, sorted.
    latencies_us: Vec<u32>,
}

impl Outcome {
    /// 2xx answers a second, over the time they took to come.
    pub fn ok_per_s(&self) -> f64 {
        if self.elapsed_s > 0.0 {
            self.ok as f64 / self.elapsed_s
        } else {
            0.0
        }
    }

    /// The latency at percentile `p` (0 to 100), in milliseconds: the
    /// smallest latency at or above which `100 - p` % of answers lie.
    pub fn percentile_ms(&self, p: f64) -> f64 {
        percentile(&self.latencies_us, p) as f64 / 1e3
    }

    pub fn max_ms(&self) -> f64 {
        self.latencies_us.last().copied().unwrap_or(0) as f64 / 1e3
    }
}

/// The nearest-rank percentile of sorted values.
fn percentile(sorted: &[u32], p: f64) -> u32 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Runs `plan` on a new thread and waits for it.
pub(crate) fn run(plan: Plan) -> Result<Outcome> {
    if !(plan.rate > 0.0 && plan.rate.is_finite()) || plan.connections == 0 {
        bail!("open loop: the rate and the connections must be positive");
    }
    std::thread::Builder::new()
        .name("open-loop".into())
        .spawn(move || {
            if let Some(cpus) = &plan.cpus {
                pin_this_thread(cpus)?;
            }
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            rt.block_on(drive(plan))
        })?
        .join()
        .map_err(|_| anyhow::anyhow!("the open-loop generator panicked"))?
}

/// Pins the calling thread with `taskset -p` on its thread id.
fn pin_this_thread(cpus: &str) -> Result<()> {
    let me = std::fs::read_link("/proc/thread-self").context("no /proc/thread-self")?;
    let tid = me
        .file_name()
        .and_then(|t| t.to_str())
        .context("no thread id in /proc/thread-self")?
        .to_owned();
    let status = std::process::Command::new("taskset")
        .args(["-p", "-c", cpus, &tid])
        .stdout(std::process::Stdio::null())
        .status()
        .context("failed to run taskset")?;
    if !status.success() {
        bail!("taskset -p -c {cpus} {tid} failed with {status}");
    }
    Ok(())
}

/// One connection's tally.
#[derive(Default)]
struct Tally {
    due: u64,
    ok: u64,
    non_2xx: u64,
    errors: u64,
    unsent: u64,
    last: Option<Instant>,
    latencies_us: Vec<u32>,
}

async fn drive(plan: Plan) -> Result<Outcome> {
    let conns = plan.connections;
    let period = Duration::from_secs_f64(f64::from(conns) / plan.rate);
    // Connect first, so that connecting is not in any latency.
    let mut streams = Vec::with_capacity(conns as usize);
    for _ in 0..conns {
        streams.push(connect(plan.addr).await?);
    }
    let start = Instant::now() + Duration::from_millis(20);
    let end = start + plan.duration;
    let mut tasks = Vec::with_capacity(conns as usize);
    for (i, stream) in streams.into_iter().enumerate() {
        let offset = period.mul_f64(i as f64 / f64::from(conns));
        let request = Arc::clone(&plan.request);
        let addr = plan.addr;
        let conns = u64::from(conns);
        tasks.push(tokio::spawn(async move {
            let mut t = Tally::default();
            let mut stream = Some(stream);
            let mut buf = Vec::with_capacity(4096);
            let mut free_at = start;
            for k in 0u64.. {
                let due = start + offset + period.mul_f64(k as f64);
                if due >= end {
                    break;
                }
                t.due += 1;
                if free_at > end + ANSWER_TIMEOUT {
                    t.unsent += 1;
                    continue;
                }
                let from = if free_at <= due {
                    tokio::time::sleep_until(due).await;
                    Instant::now()
                } else {
                    due
                };
                let n = k * conns + i as u64;
                let answer = match stream.take() {
                    Some(s) => Ok(s),
                    None => connect(addr).await,
                };
                let result = match answer {
                    Ok(mut s) => {
                        let bytes = request(n);
                        let exchange = exchange(&mut s, &bytes, &mut buf);
                        match tokio::time::timeout(ANSWER_TIMEOUT, exchange).await {
                            Ok(Ok((status, keep))) => {
                                if keep {
                                    stream = Some(s);
                                }
                                Some(status)
                            }
                            _ => None,
                        }
                    }
                    Err(_) => None,
                };
                free_at = Instant::now();
                t.last = Some(free_at);
                match result {
                    Some(status) => {
                        let us = free_at.duration_since(from).as_micros();
                        t.latencies_us.push(u32::try_from(us).unwrap_or(u32::MAX));
                        if (200..300).contains(&status) {
                            t.ok += 1;
                        } else {
                            t.non_2xx += 1;
                        }
                    }
                    None => t.errors += 1,
                }
            }
            t
        }));
    }
    let mut all = Tally::default();
    for task in tasks {
        let t = task.await.context("an open-loop connection task failed")?;
        all.due += t.due;
        all.ok += t.ok;
        all.non_2xx += t.non_2xx;
        all.errors += t.errors;
        all.unsent += t.unsent;
        all.last = all.last.max(t.last);
        all.latencies_us.extend(t.latencies_us);
    }
    all.latencies_us.sort_unstable();
    Ok(Outcome {
        offered_per_s: plan.rate,
        due: all.due,
        ok: all.ok,
        non_2xx: all.non_2xx,
        errors: all.errors,
        unsent: all.unsent,
        elapsed_s: all
            .last
            .map_or(0.0, |l| l.saturating_duration_since(start).as_secs_f64()),
        latencies_us: all.latencies_us,
    })
}

async fn connect(addr: SocketAddr) -> Result<TcpStream> {
    let s = tokio::time::timeout(ANSWER_TIMEOUT, TcpStream::connect(addr))
        .await
        .with_context(|| format!("connecting to {addr} timed out"))?
        .with_context(|| format!("cannot connect to {addr}"))?;
    s.set_nodelay(true)?;
    Ok(s)
}

/// Sends one request and reads its answer: the status, and whether the
/// connection may be used again. Answers must have a `Content-Length`.
async fn exchange(s: &mut TcpStream, request: &[u8], buf: &mut Vec<u8>) -> Result<(u16, bool)> {
    s.write_all(request).await?;
    buf.clear();
    let head_end = loop {
        if let Some(i) = find(buf, b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > MAX_HEAD {
            bail!("an answer head longer than {MAX_HEAD} bytes");
        }
        if s.read_buf(buf).await? == 0 {
            bail!("the server closed the connection");
        }
    };
    let head = std::str::from_utf8(&buf[..head_end]).context("a head that is not text")?;
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .context("an answer without a status")?;
    let mut length = None;
    let mut keep = true;
    for line in head.lines().skip(1) {
        let Some((name, value)) = line.split_once(':') else {
            continue;
        };
        let (name, value) = (name.trim(), value.trim());
        if name.eq_ignore_ascii_case("content-length") {
            length = Some(value.parse::<usize>().context("a bad Content-Length")?);
        } else if name.eq_ignore_ascii_case("transfer-encoding") {
            bail!("a chunked answer: this generator reads Content-Length answers only");
        } else if name.eq_ignore_ascii_case("connection") && value.eq_ignore_ascii_case("close") {
            keep = false;
        }
    }
    let length = length.context("an answer without Content-Length")?;
    if length > MAX_BODY {
        bail!("an answer body of {length} bytes");
    }
    while buf.len() < head_end + length {
        if s.read_buf(buf).await? == 0 {
            bail!("the server closed the connection mid-answer");
        }
    }
    Ok((status, keep))
}

fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_are_nearest_rank() {
        let v: Vec<u32> = (1..=100).collect();
        assert_eq!(percentile(&v, 50.0), 50);
        assert_eq!(percentile(&v, 99.0), 99);
        assert_eq!(percentile(&v, 99.9), 100);
        assert_eq!(percentile(&v, 0.0), 1);
        assert_eq!(percentile(&[], 99.0), 0);
    }

    /// A server that answers at once, except that it holds its 5th answer
    /// back `stall`: the requests due meanwhile on that connection count
    /// the wait, as an open loop must.
    #[test]
    fn a_stall_is_charged_to_every_request_due_during_it() {
        use std::io::{BufRead as _, BufReader, Write as _};
        let stall = Duration::from_millis(300);
        let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        std::thread::spawn(move || {
            let Ok((s, _)) = listener.accept() else {
                return;
            };
            let mut w = s.try_clone().expect("clone");
            let mut r = BufReader::new(s);
            let mut n = 0;
            let mut line = String::new();
            loop {
                line.clear();
                if r.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                if line == "\r\n" {
                    n += 1;
                    if n == 5 {
                        std::thread::sleep(stall);
                    }
                    let _ = w.write_all(b"HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n");
                }
            }
        });
        let out = run(Plan {
            addr,
            rate: 100.0,
            connections: 1,
            duration: Duration::from_secs(1),
            cpus: None,
            request: Arc::new(|_| b"GET / HTTP/1.1\r\nHost: x\r\n\r\n".to_vec()),
        })
        .expect("run");
        assert_eq!(
            (out.due, out.errors, out.non_2xx, out.unsent),
            (100, 0, 0, 0)
        );
        assert_eq!(out.ok, 100);
        assert!(out.elapsed_s >= 0.99, "{}", out.elapsed_s);
        // The stalled answer, and about 29 due while it was held: each
        // waited at least until the stall ended, less how late it was due.
        assert!(out.max_ms() >= 300.0, "{}", out.max_ms());
        let over_100ms = out.latencies_us.iter().filter(|&&l| l >= 100_000).count();
        assert!(over_100ms >= 15, "{over_100ms} latencies of 100 ms or more");
    }
}
