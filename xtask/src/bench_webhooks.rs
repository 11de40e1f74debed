//! `cargo xtask bench-webhooks`: webhook ingestion throughput of
//! `benchops-app` against a Node peer on `@octokit/webhooks` (the receiver
//! a Probot App runs), both loaded by `wrk` on loopback.
//!
//! ```text
//! cargo xtask bench-webhooks [--app-only | --node-only]
//! ```
//!
//! The body is the first `push` example to a branch of the vendored
//! `@octokit/webhooks-examples` (`crates/app/tests/fixtures/`), in RFC 8785
//! canonical form, padded to exactly 8,192 bytes by a last member
//! `zz_benchops_padding` that starts with a canary, and signed with a fresh
//! secret. `benchops-app` is built in release and started with a throwaway
//! config (temporary data directory, an `openssl genrsa` key of mode 0600);
//! the Node receiver is `xtask/bench-webhooks/receiver.mjs`, as one process
//! and as a cluster of two. The push goes to another branch: the App
//! routes it to nothing to do and does not record it. Each server gets:
//!
//! 1. a valid and a badly signed request by hand, and a warm-up;
//! 2. `wrk -t2 -c64 -s wrk.lua`, a distinct `X-GitHub-Delivery` per
//!    request: the saturation rate, with the latency of wrk's closed loop;
//! 3. the fixed-rate run: 30,000 requests a second offered by this task's
//!    own open-loop generator ([`crate::open_loop`]) on 64 connections,
//!    whose latency counts from when each request was due, so a server
//!    that falls behind is charged for the queue. The p99 target is read
//!    here, and is met only if the server answered 99 % of what was
//!    offered.
//!
//! The App then gets deliveries that bring work (`installation` `created`,
//! padded to the same size: recorded, queued and worked) under the same
//! wrk, and the bad-signature flood: valid traffic (`-t1 -c32`) alone, then
//! alongside a second `wrk -t1 -c32` with wrong signatures. Afterwards its
//! log must not hold the canaries, payload keys or values, or the secret.
//! The result is a markdown table with the ratio to the better Node
//! configuration and the targets (≥ 30,000 req/s, p99 ≤ 5 ms at 30,000/s
//! offered, ≥ 2× Node) marked met or missed, also written to
//! `target/bench-webhooks.json`.
//!
//! `BENCH_SERVER_CPUS` and `BENCH_WRK_CPUS` (a `taskset -c` list, such as
//! `0` and `1`) pin the servers and the load generator to separate CPUs, so
//! that wrk's own share of the machine is known; the report says which.
//! `BENCH_RATE` sets the fixed rate (default 30000 a second); the
//! generator runs on `BENCH_WRK_CPUS` too.
//! `BENCH_DURATION` sets the seconds of each measured run (default 15),
//! `BENCH_WARMUP` those of each warm-up (default 3); `BENCH_APP_EXE` runs
//! that `benchops-app` binary instead of building one. Every process started
//! here is stopped when the task ends, on error too; every wait has a
//! deadline. Missed targets do not fail the task; a wrong answer, a leak
//! into the App's log or a failed run does.

use std::fs::{self, File};
use std::io::{Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use benchops::Sha256Digest;
use serde_json::{Value, json};

use crate::open_loop::{self, Outcome};
use crate::{run, target_dir};

/// The vendored webhook examples, relative to the workspace root.
const EXAMPLES: &str = "crates/app/tests/fixtures/webhooks-examples/index.json";
/// The Node peer and the wrk script, relative to the workspace root.
const PEER_DIR: &str = "xtask/bench-webhooks";
/// The size of the request body, in bytes.
const BODY_BYTES: usize = 8192;
/// The name of the padding member, last in canonical order.
const PADDING_KEY: &str = "zz_benchops_padding";
/// The targets: valid deliveries per second, p99 in ms, ratio to Node.
const TARGET_RPS: f64 = 30_000.0;
const TARGET_P99_MS: f64 = 5.0;
const TARGET_RATIO: f64 = 2.0;
/// The connections of the fixed-rate run.
const FIXED_RATE_CONNECTIONS: u32 = 64;
/// The share of the offered rate a server must answer with 2xx for its
/// fixed-rate latency to count.
const SUSTAINED: f64 = 0.99;
/// How long a server may take to print `listening on`.
const START_DEADLINE: Duration = Duration::from_secs(30);
/// How long a server gets to exit after SIGTERM before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);

/// The entry point.
pub(crate) fn main(args: &[String]) -> Result<()> {
    let (with_app, with_node) = match args.first().map(String::as_str) {
        None => (true, true),
        Some("--app-only") => (true, false),
        Some("--node-only") => (false, true),
        Some(other) => bail!("bench-webhooks: unknown argument {other:?}"),
    };
    let duration = env_secs("BENCH_DURATION", 15)?.max(1);
    let cpus = Cpus {
        server: env_cpus("BENCH_SERVER_CPUS")?,
        wrk: env_cpus("BENCH_WRK_CPUS")?,
    };
    if (cpus.server.is_some() || cpus.wrk.is_some()) && !on_path("taskset") {
        bail!("BENCH_SERVER_CPUS and BENCH_WRK_CPUS need `taskset` (util-linux) on PATH");
    }
    let warmup = env_secs("BENCH_WARMUP", 3)?.min(duration);
    let rate = match std::env::var("BENCH_RATE") {
        Err(_) => TARGET_RPS,
        Ok(v) => match v.trim().parse::<f64>() {
            Ok(r) if (1.0..=1e6).contains(&r) => r,
            _ => bail!("BENCH_RATE={v:?} is not a rate between 1 and 1000000 requests a second"),
        },
    };
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .context("xtask has no parent directory")?
        .to_path_buf();
    let peer = root.join(PEER_DIR);
    let tools = ["wrk", "openssl", "node"];
    if let Some(tool) = tools[..2 + usize::from(with_node)]
        .iter()
        .find(|t| !on_path(t))
    {
        bail!("bench-webhooks needs `{tool}` on PATH (scripts/test-deps.sh installs it)");
    }
    if with_node && !peer.join("node_modules/@octokit/webhooks").is_dir() {
        let dir = peer.display().to_string();
        let npm = ["ci", "--prefix", &dir, "--no-audit", "--no-fund"];
        run("npm", &npm, &[])?;
    }

    let scratch = Scratch::new()?;
    let nonce = u32::from_be_bytes(random_bytes::<4>()?);
    let body = Body::build(&root.join(EXAMPLES), nonce)?;
    let body_file = scratch.path.join("body.json");
    fs::write(&body_file, &body.bytes)?;
    let work = Body::work(&root.join(EXAMPLES), nonce)?;
    let work_file = scratch.path.join("work.json");
    fs::write(&work_file, &work.bytes)?;
    let secret = hex(&random_bytes::<24>()?);
    let secret_file = scratch.path.join("webhook-secret");
    fs::write(&secret_file, &secret)?;
    fs::set_permissions(&secret_file, fs::Permissions::from_mode(0o600))?;
    let mut bench = Bench {
        wrk_lua: peer.join("wrk.lua"),
        body_file,
        good_sig: sign(secret.as_bytes(), &body.bytes),
        bad_sig: sign(b"not the secret", &body.bytes),
        work_file,
        work_sig: sign(secret.as_bytes(), &work.bytes),
        work,
        body,
        secret,
        secret_file,
        nonce,
        runs: 0,
        duration,
        warmup,
        rate,
        scratch: scratch.path.clone(),
        cpus: cpus.clone(),
    };

    let mut app = None;
    if with_app {
        let exe = match std::env::var_os("BENCH_APP_EXE") {
            Some(exe) => PathBuf::from(exe),
            None => {
                let build = ["build", "--locked", "--release", "-p", "benchops-app"];
                run("cargo", &build, &[])?;
                target_dir()?.join("release/benchops-app")
            }
        };
        app = Some(bench_app(&mut bench, &exe)?);
    }
    let mut nodes = Vec::new();
    if with_node {
        for workers in [1, 2] {
            nodes.push(bench_node(&mut bench, &peer, workers)?);
        }
    }

    let octokit = octokit_version(&peer);
    let report = Report {
        cpus,
        duration,
        warmup,
        rate,
        app,
        nodes,
        octokit,
    };
    println!("{}", report.markdown());
    let json_path = target_dir()?.join("bench-webhooks.json");
    fs::create_dir_all(json_path.parent().unwrap_or(Path::new(".")))?;
    let text = serde_json::to_string_pretty(&report.json())? + "\n";
    fs::write(&json_path, text)?;
    eprintln!("xtask: wrote {}", json_path.display());
    if let Some(app) = report.app.as_ref().filter(|a| !a.leaks.is_empty()) {
        let leaks = app.leaks.join(", ");
        bail!("the App's log holds payload or secret text: {leaks}");
    }
    Ok(())
}

/// What every run shares.
#[derive(Debug)]
struct Bench {
    wrk_lua: PathBuf,
    body_file: PathBuf,
    body: Body,
    good_sig: String,
    bad_sig: String,
    /// The `installation` delivery that brings work, and its signature.
    work_file: PathBuf,
    work_sig: String,
    work: Body,
    secret: String,
    secret_file: PathBuf,
    nonce: u32,
    /// wrk runs so far; part of every delivery id, so no id repeats.
    runs: u32,
    duration: u64,
    warmup: u64,
    /// The fixed rate offered, requests a second.
    rate: f64,
    scratch: PathBuf,
    cpus: Cpus,
}

/// What a wrk run sends.
#[derive(Debug, Clone, Copy)]
enum Load {
    /// The signed push to another branch: verified and routed, no work.
    Valid,
    /// The same push under a wrong signature.
    WrongSignature,
    /// The signed `installation` delivery: recorded, queued and worked.
    Work,
}

/// Where the servers and wrk run: `taskset -c` lists, or anywhere.
#[derive(Debug, Clone, Default)]
struct Cpus {
    server: Option<String>,
    wrk: Option<String>,
}

/// `program`, started under `taskset -c cpus` when `cpus` is given.
fn pinned(cpus: Option<&str>, program: impl AsRef<std::ffi::OsStr>) -> Command {
    match cpus {
        Some(list) => {
            let mut cmd = Command::new("taskset");
            cmd.args(["-c", list]).arg(program);
            cmd
        }
        None => Command::new(program),
    }
}

impl Bench {
    /// Starts one wrk run against `url` with one thread per 32
    /// connections, of `load`.
    fn start_wrk(&mut self, url: &str, conns: u32, secs: u64, load: Load) -> Result<Proc> {
        self.runs += 1;
        let prefix = format!("{:08x}-{:04x}", self.nonce, self.runs & 0xffff);
        let (file, sig, event) = match load {
            Load::Valid => (&self.body_file, &self.good_sig, "push"),
            Load::WrongSignature => (&self.body_file, &self.bad_sig, "push"),
            Load::Work => (&self.work_file, &self.work_sig, "installation"),
        };
        let mut cmd = pinned(self.cpus.wrk.as_deref(), "wrk");
        let threads = (conns / 32).max(1);
        let shape = [format!("-t{threads}"), format!("-c{conns}")];
        cmd.args(shape)
            .args([format!("-d{secs}s").as_str(), "--timeout", "5s", "-s"])
            .arg(&self.wrk_lua)
            .args([url, "--"])
            .arg(file)
            .args([sig.as_str(), &prefix, event]);
        let out = self.scratch.join(format!("wrk-{}.out", self.runs));
        Proc::spawn("wrk", cmd, &out)
    }

    /// One wrk run to its end, parsed.
    fn wrk(&mut self, url: &str, conns: u32, secs: u64, load: Load) -> Result<Wrk> {
        let p = self.start_wrk(url, conns, secs, load)?;
        p.finish(Duration::from_secs(secs + 30))
    }

    /// The warm-up and the measured run of the main scenario.
    fn measure(&mut self, url: &str) -> Result<Wrk> {
        if self.warmup > 0 {
            let w = self.wrk(url, 64, self.warmup, Load::Valid)?;
            eprintln!("xtask: warm-up {:.0} req/s", w.ok_rps());
        }
        let w = self.wrk(url, 64, self.duration, Load::Valid)?;
        let (rps, p99, bad) = (w.ok_rps(), w.p99_ms, w.status_errors);
        eprintln!("xtask: {rps:.0} req/s, p99 {p99:.2} ms, {bad} non-2xx");
        Ok(w)
    }

    /// The fixed-rate run against `addr`: valid deliveries at
    /// [`Bench::rate`], open loop.
    fn fixed_rate(&mut self, addr: SocketAddr) -> Result<Outcome> {
        self.runs += 1;
        let prefix = format!("{:08x}-{:04x}", self.nonce, self.runs & 0xffff);
        let head = format!(
            "POST /webhook HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\n\
             User-Agent: GitHub-Hookshot/bench\r\nX-GitHub-Event: push\r\n\
             X-GitHub-Hook-ID: 1\r\nX-Hub-Signature-256: {}\r\nContent-Length: {}\r\n\
             X-GitHub-Delivery: {prefix}-4fff-",
            self.good_sig,
            self.body.bytes.len()
        );
        let body = self.body.bytes.clone();
        let request = move |n: u64| {
            let mut r = Vec::with_capacity(head.len() + 24 + body.len());
            r.extend_from_slice(head.as_bytes());
            r.extend_from_slice(format!("a000-{n:012x}\r\n\r\n").as_bytes());
            r.extend_from_slice(&body);
            r
        };
        let out = open_loop::run(open_loop::Plan {
            addr,
            rate: self.rate,
            connections: FIXED_RATE_CONNECTIONS,
            duration: Duration::from_secs(self.duration),
            cpus: self.cpus.wrk.clone(),
            request: Arc::new(request),
        })?;
        eprintln!(
            "xtask: fixed rate {:.0}/s offered: {:.0}/s answered 2xx, p99 {:.2} ms, {} non-2xx, {} errors, {} not sent",
            out.offered_per_s,
            out.ok_per_s(),
            out.percentile_ms(99.0),
            out.non_2xx,
            out.errors,
            out.unsent
        );
        Ok(out)
    }

    /// One valid and one badly signed delivery, by hand; their statuses.
    fn probe(&self, name: &str, addr: SocketAddr) -> Result<(u16, u16)> {
        let mut statuses = [0u16; 2];
        for (i, sig) in [&self.good_sig, &self.bad_sig].into_iter().enumerate() {
            let head = format!(
                "POST /webhook HTTP/1.1\r\nContent-Type: application/json\r\n\
                 X-GitHub-Event: push\r\nX-Hub-Signature-256: {sig}\r\n\
                 X-GitHub-Delivery: {:08x}-ffff-4fff-a000-{i:012x}\r\n",
                self.nonce
            );
            statuses[i] = http(addr, &head, &self.body.bytes)?;
        }
        let [valid, bad] = statuses;
        eprintln!("xtask: {name} answers {valid} (valid), {bad} (wrong signature)");
        if !(200..300).contains(&valid) || (200..300).contains(&bad) {
            bail!("{name} answered {valid} to a valid delivery and {bad} to a wrong signature");
        }
        Ok((valid, bad))
    }
}

/// The figures of `benchops-app`.
#[derive(Debug)]
struct AppFigures {
    main: Wrk,
    fixed: Outcome,
    /// Deliveries that bring work, at saturation.
    work: Wrk,
    alone: Wrk,
    with_flood: Wrk,
    flood: Wrk,
    /// The answers to a valid and to a badly signed request.
    statuses: (u16, u16),
    leaks: Vec<String>,
}

fn bench_app(bench: &mut Bench, exe: &Path) -> Result<AppFigures> {
    let dir = bench.scratch.join("app");
    fs::create_dir_all(dir.join("data"))?;
    let key = dir.join("private-key.pem");
    let status = Command::new("openssl")
        .args(["genrsa", "-out"])
        .arg(&key)
        .arg("2048")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .context("failed to run openssl genrsa")?;
    if !status.success() {
        bail!("openssl genrsa failed with {status}");
    }
    fs::set_permissions(&key, fs::Permissions::from_mode(0o600))?;
    let addr = free_port()?;
    let config = dir.join("config.toml");
    fs::write(&config, app_config(addr, &key, &dir.join("data"), bench))?;
    let mut cmd = pinned(bench.cpus.server.as_deref(), exe);
    cmd.args(["serve", "--config"]).arg(&config);
    let mut app = Proc::spawn("benchops-app", cmd, &dir.join("app.log"))?;
    app.wait_listening(START_DEADLINE)?;
    wait_healthz(addr, Duration::from_secs(10))?;
    let url = format!("http://{addr}/webhook");
    let statuses = bench.probe("benchops-app", addr)?;
    let main = bench.measure(&url)?;
    let fixed = bench.fixed_rate(addr)?;
    eprintln!("xtask: deliveries that bring work (installation)");
    let work = bench.wrk(&url, 64, bench.duration, Load::Work)?;
    let (rps, p99, bad) = (work.ok_rps(), work.p99_ms, work.status_errors);
    eprintln!("xtask: work: {rps:.0} req/s, p99 {p99:.2} ms, {bad} non-2xx");

    eprintln!("xtask: bad-signature flood: valid traffic alone, then with the flood");
    let secs = bench.duration;
    let alone = bench.wrk(&url, 32, secs, Load::Valid)?;
    let flood = bench.start_wrk(&url, 32, secs, Load::WrongSignature)?;
    let valid = bench.start_wrk(&url, 32, secs, Load::Valid)?;
    let with_flood = valid.finish(Duration::from_secs(secs + 30))?;
    let flood = flood.finish(Duration::from_secs(secs + 30))?;
    if flood.status_errors < flood.requests {
        let (accepted, all) = (flood.requests - flood.status_errors, flood.requests);
        bail!("benchops-app accepted {accepted} of {all} badly signed deliveries");
    }
    app.stop();
    let text = app.log_text();
    let probes = bench.body.probes.iter().chain(&bench.work.probes);
    let mut leaks: Vec<String> = probes
        .filter(|p| text.contains(p.as_str()))
        .cloned()
        .collect();
    if text.contains(&bench.secret) {
        leaks.push("the webhook secret".to_owned());
    }
    Ok(AppFigures {
        main,
        fixed,
        work,
        alone,
        with_flood,
        flood,
        statuses,
        leaks,
    })
}

/// The throwaway config of the App under test.
fn app_config(addr: SocketAddr, key: &Path, data: &Path, bench: &Bench) -> String {
    let q = |p: &Path| Value::String(p.display().to_string()).to_string();
    format!(
        "# Written by cargo xtask bench-webhooks; removed when it ends.\n\
         app_id = 1\n\
         private_key_file = {key}\n\
         webhook_secret_file = {secret}\n\
         listen = \"{addr}\"\n\
         data_dir = {data}\n\
         # Nothing in this benchmark may reach GitHub: a closed loopback port.\n\
         github_api_url = \"http://127.0.0.1:9\"\n\
         log_format = \"text\"\n\
         \n\
         [oidc]\n\
         issuer = \"https://token.actions.githubusercontent.com\"\n\
         audience = \"benchops-bench\"\n\
         \n\
         [policy]\n\
         workflow_path = \".github/workflows/benchmarks.yml\"\n\
         events = [\"schedule\", \"workflow_dispatch\"]\n\
         environment = \"benchmarks\"\n\
         default_branch = \"main\"\n\
         \n\
         [[policy.repository]]\n\
         name = {repo}\n\
         id = {id}\n",
        key = q(key),
        secret = q(&bench.secret_file),
        data = q(data),
        repo = Value::String(bench.body.repo.clone()),
        id = bench.body.repo_id,
    )
}

/// The figures of one Node configuration.
#[derive(Debug)]
struct NodeFigures {
    workers: u32,
    main: Wrk,
    fixed: Outcome,
    /// The answers to a valid and to a badly signed request.
    statuses: (u16, u16),
}

fn bench_node(bench: &mut Bench, peer: &Path, workers: u32) -> Result<NodeFigures> {
    let addr = free_port()?;
    let mut cmd = pinned(bench.cpus.server.as_deref(), "node");
    cmd.current_dir(peer)
        .arg("receiver.mjs")
        .args(["--port", &addr.port().to_string()])
        .args(["--workers", &workers.to_string()])
        .arg("--secret-file")
        .arg(&bench.secret_file);
    eprintln!("xtask: Node receiver, {workers} worker(s), on {addr}");
    let log = bench.scratch.join(format!("node-{workers}.log"));
    let mut node = Proc::spawn("node receiver", cmd, &log)?;
    node.wait_listening(START_DEADLINE)?;
    wait_healthz(addr, Duration::from_secs(10))?;
    let statuses = bench.probe("the Node receiver", addr)?;
    let main = bench.measure(&format!("http://{addr}/webhook"))?;
    let fixed = bench.fixed_rate(addr)?;
    node.stop();
    Ok(NodeFigures {
        workers,
        main,
        fixed,
        statuses,
    })
}

/// The request body and what must never show in a log.
#[derive(Debug)]
struct Body {
    bytes: Vec<u8>,
    /// Texts only a dump of the body would show: the canary, a key, a value.
    probes: Vec<String>,
    repo: String,
    repo_id: u64,
}

impl Body {
    /// The first `push` example to a branch, canonical, padded to
    /// [`BODY_BYTES`]: an event the App routes to nothing to do.
    fn build(examples: &Path, nonce: u32) -> Result<Self> {
        let to_branch = |e: &Value| {
            e["ref"]
                .as_str()
                .is_some_and(|r| r.starts_with("refs/heads/"))
        };
        let example = example(examples, "push", to_branch)?;
        let mut body = Self::padded(&example, nonce)?;
        body.probes.extend(
            example["head_commit"]["tree_id"]
                .as_str()
                .map(str::to_owned),
        );
        let repo = &example["repository"];
        body.repo = repo["full_name"]
            .as_str()
            .unwrap_or("Codertocat/Hello-World")
            .to_owned();
        body.repo_id = repo["id"].as_u64().unwrap_or(1);
        Ok(body)
    }

    /// The first `installation` `created` example, canonical, padded to
    /// [`BODY_BYTES`]: work the App records and its worker applies to
    /// its registry (no request to GitHub).
    fn work(examples: &Path, nonce: u32) -> Result<Self> {
        let created = |e: &Value| e["action"] == "created";
        let example = example(examples, "installation", created)?;
        Self::padded(&example, nonce)
    }

    /// `example` in canonical form, padded to [`BODY_BYTES`] by a last
    /// member that starts with a canary.
    fn padded(example: &Value, nonce: u32) -> Result<Self> {
        let canonical = benchops::jcs::canonical_bytes(example);
        let canary = format!("benchops-bench-canary-{nonce:08x}-");
        let head = &canonical[..canonical.len() - 1];
        let member = format!(",\"{PADDING_KEY}\":\"{canary}");
        let fill = BODY_BYTES
            .checked_sub(head.len() + member.len() + 2)
            .context("the push example is longer than the body size")?;
        let mut bytes = Vec::with_capacity(BODY_BYTES);
        bytes.extend_from_slice(head);
        bytes.extend_from_slice(member.as_bytes());
        bytes.resize(bytes.len() + fill, b'x');
        bytes.extend_from_slice(b"\"}");
        serde_json::from_slice::<Value>(&bytes).context("the padded body is not JSON")?;
        // The first member name of the payload: a key only a dump shows.
        let first_key = example
            .as_object()
            .and_then(|o| o.keys().min())
            .map(|k| format!("\"{k}\":"));
        let mut probes = vec![canary, PADDING_KEY.to_owned()];
        probes.extend(first_key);
        Ok(Self {
            bytes,
            probes,
            repo: String::new(),
            repo_id: 0,
        })
    }
}

/// The first example of `event` that `pick` takes, from the vendored
/// index.
fn example(examples: &Path, event: &str, pick: impl Fn(&Value) -> bool) -> Result<Value> {
    let text = fs::read(examples).with_context(|| format!("cannot read {}", examples.display()))?;
    let index: Value = serde_json::from_slice(&text).context("the examples are not JSON")?;
    let events = index.as_array().context("the examples are not an array")?;
    let of_event = events
        .iter()
        .find(|e| e["name"] == event)
        .with_context(|| format!("no {event} event"))?;
    of_event["examples"]
        .as_array()
        .and_then(|v| v.iter().find(|e| pick(e)))
        .cloned()
        .with_context(|| format!("no {event} example of the kind wanted"))
}

/// The parsed `BENCH_RESULT` line of one wrk run.
#[derive(Debug, Clone)]
struct Wrk {
    requests: u64,
    duration_s: f64,
    status_errors: u64,
    socket_errors: u64,
    p50_ms: f64,
    p90_ms: f64,
    p99_ms: f64,
    max_ms: f64,
}

impl Wrk {
    fn parse(out: &str) -> Result<Self> {
        let line = out
            .lines()
            .find_map(|l| l.strip_prefix("BENCH_RESULT "))
            .with_context(|| format!("wrk printed no BENCH_RESULT line:\n{out}"))?;
        let v: Value = serde_json::from_str(line).context("bad BENCH_RESULT line")?;
        let n = |p: &str| v.pointer(p).and_then(Value::as_f64).unwrap_or(0.0);
        let socket = ["connect", "read", "write", "timeout"].map(|k| n(&format!("/errors/{k}")));
        Ok(Self {
            requests: n("/requests") as u64,
            duration_s: n("/duration_us") / 1e6,
            status_errors: n("/errors/status") as u64,
            socket_errors: socket.iter().sum::<f64>() as u64,
            p50_ms: n("/latency_us/p50") / 1e3,
            p90_ms: n("/latency_us/p90") / 1e3,
            p99_ms: n("/latency_us/p99") / 1e3,
            max_ms: n("/latency_us/max") / 1e3,
        })
    }

    /// Answers per second, all of them or only those below 400.
    fn per_s(&self, ok_only: bool) -> f64 {
        let n = if ok_only {
            self.requests.saturating_sub(self.status_errors)
        } else {
            self.requests
        };
        if self.duration_s > 0.0 {
            n as f64 / self.duration_s
        } else {
            0.0
        }
    }

    fn ok_rps(&self) -> f64 {
        self.per_s(true)
    }

    fn json(&self) -> Value {
        json!({
            "requests": self.requests,
            "duration_s": round(self.duration_s, 3),
            "ok_per_s": round(self.ok_rps(), 1),
            "all_per_s": round(self.per_s(false), 1),
            "status_errors": self.status_errors,
            "socket_errors": self.socket_errors,
            "latency_ms": {
                "p50": round(self.p50_ms, 3),
                "p90": round(self.p90_ms, 3),
                "p99": round(self.p99_ms, 3),
                "max": round(self.max_ms, 3),
            },
        })
    }
}

/// Everything measured, for the table and the JSON file.
#[derive(Debug)]
struct Report {
    cpus: Cpus,
    duration: u64,
    warmup: u64,
    rate: f64,
    app: Option<AppFigures>,
    nodes: Vec<NodeFigures>,
    octokit: String,
}

impl Report {
    fn best_node(&self) -> Option<&NodeFigures> {
        self.nodes
            .iter()
            .max_by(|a, b| a.main.ok_rps().total_cmp(&b.main.ok_rps()))
    }

    fn ratio(&self) -> Option<f64> {
        let (app, node) = (self.app.as_ref()?, self.best_node()?);
        (node.main.ok_rps() > 0.0).then(|| app.main.ok_rps() / node.main.ok_rps())
    }

    fn node_name(&self, n: &NodeFigures) -> String {
        let how = match n.workers {
            1 => "1 process".to_owned(),
            w => format!("cluster of {w}"),
        };
        format!("Node, @octokit/webhooks {}, {how}", self.octokit)
    }

    /// `(target, measured, met, value)` for each target that was measured.
    fn targets(&self) -> Vec<(&'static str, String, bool, f64)> {
        let mut out = Vec::new();
        if let Some(app) = &self.app {
            let rps = app.main.ok_rps();
            let shown = format!("{} /s", thousands(rps));
            out.push(("≥ 30,000 valid deliveries/s", shown, rps >= TARGET_RPS, rps));
            let f = &app.fixed;
            let p99 = f.percentile_ms(99.0);
            let sustained = f.ok_per_s() >= SUSTAINED * f.offered_per_s;
            let at_target = f.offered_per_s >= TARGET_RPS;
            let shown = if sustained {
                format!("{p99:.2} ms")
            } else {
                format!("{p99:.2} ms, {} /s answered", thousands(f.ok_per_s()))
            };
            out.push((
                "p99 ≤ 5 ms at 30,000/s offered",
                shown,
                at_target && sustained && p99 <= TARGET_P99_MS,
                p99,
            ));
        }
        if let Some(r) = self.ratio() {
            out.push((
                "≥ 2× the better Node",
                format!("{r:.2}×"),
                r >= TARGET_RATIO,
                r,
            ));
        }
        out
    }

    fn markdown(&self) -> String {
        let mut s = format!(
            "\n## Webhook ingestion: {} s per run after {} s of warm-up, wrk -t2 -c64, \
             {BODY_BYTES}-byte signed push\n\n\
             | server | valid deliveries/s | p50 | p99 | max | non-2xx | socket errors |\n\
             |---|--:|--:|--:|--:|--:|--:|\n",
            self.duration, self.warmup
        );
        if self.cpus.server.is_some() || self.cpus.wrk.is_some() {
            let any = "any".to_owned();
            s = s.replacen(
                "\n\n|",
                &format!(
                    "\n\nServers on CPUs {}, wrk on CPUs {} (`taskset -c`).\n\n|",
                    self.cpus.server.as_ref().unwrap_or(&any),
                    self.cpus.wrk.as_ref().unwrap_or(&any)
                ),
                1,
            );
        }
        let mut row = |name: &str, w: &Wrk| {
            let (rps, p50, p99, max) = (thousands(w.ok_rps()), w.p50_ms, w.p99_ms, w.max_ms);
            let (st, so) = (w.status_errors, w.socket_errors);
            s += &format!(
                "| {name} | {rps} | {p50:.2} ms | {p99:.2} ms | {max:.1} ms | {st} | {so} |\n"
            );
        };
        if let Some(app) = &self.app {
            row("benchops-app", &app.main);
        }
        let work = self.app.as_ref().map(|a| a.work.clone());
        for n in &self.nodes {
            row(&self.node_name(n), &n.main);
        }
        if let (Some(r), Some(n)) = (self.ratio(), self.best_node()) {
            s += &format!("\nbenchops-app / {}: **{r:.2}×**\n", self.node_name(n));
        }
        if let Some(w) = work {
            s += &format!(
                "\nThe push goes to another branch: verified, parsed and routed to nothing \
                 to do, which is not recorded. Deliveries that bring work (`installation` \
                 `created`, same size, each recorded with its delivery id, queued and applied \
                 to the registry by the worker), with the default `queue_capacity`: \
                 {} /s answered 2xx, p50 {:.2} ms, p99 {:.2} ms, {} non-2xx (503 when the \
                 worker is behind).\n",
                thousands(w.ok_rps()),
                w.p50_ms,
                w.p99_ms,
                w.status_errors
            );
        }
        let targets = self.targets();
        if !targets.is_empty() {
            s += "\n| target | measured | |\n|---|--:|---|\n";
            for (t, m, met, _) in &targets {
                s += &format!("| {t} | {m} | {} |\n", if *met { "met" } else { "missed" });
            }
        }
        s += &format!(
            "\n### Fixed rate: {} requests/s offered, open loop, {FIXED_RATE_CONNECTIONS} connections\n\n\
             Latency counts from when each request was due. 2xx/s is over the time the \
             answers took to come; `not sent` counts requests still waiting for their \
             connection 5 s after the window.\n\n\
             | server | 2xx/s | p50 | p90 | p99 | p99.9 | max | non-2xx | errors | not sent |\n\
             |---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
            thousands(self.rate)
        );
        let mut fixed_row = |name: &str, f: &Outcome| {
            s += &format!(
                "| {name} | {} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.1} ms | {} | {} | {} |\n",
                thousands(f.ok_per_s()),
                f.percentile_ms(50.0),
                f.percentile_ms(90.0),
                f.percentile_ms(99.0),
                f.percentile_ms(99.9),
                f.max_ms(),
                f.non_2xx,
                f.errors,
                f.unsent
            );
        };
        if let Some(app) = &self.app {
            fixed_row("benchops-app", &app.fixed);
        }
        for n in &self.nodes {
            fixed_row(&self.node_name(n), &n.fixed);
        }
        let Some(app) = &self.app else {
            return s;
        };
        let (alone, during, bad) = (&app.alone, &app.with_flood, &app.flood);
        let kept = match alone.ok_rps() {
            a if a > 0.0 => format!("{:.0}%", 100.0 * during.ok_rps() / a),
            _ => "-".to_owned(),
        };
        s += &format!(
            "\n### Bad-signature flood (benchops-app, wrk -t1 -c32 per stream)\n\n\
             | traffic | per second | p99 | non-2xx |\n|---|--:|--:|--:|\n\
             | valid, alone | {} | {:.2} ms | {} |\n\
             | valid, during the flood | {} ({kept} of alone) | {:.2} ms | {} |\n\
             | wrong signatures (answered {}) | {} rejected | {:.2} ms | {} |\n",
            thousands(alone.ok_rps()),
            alone.p99_ms,
            alone.status_errors,
            thousands(during.ok_rps()),
            during.p99_ms,
            during.status_errors,
            app.statuses.1,
            thousands(bad.per_s(false)),
            bad.p99_ms,
            bad.status_errors,
        );
        s += &match app.leaks.as_slice() {
            [] => "\nPayload text or secret in the App's log: none found.\n".to_owned(),
            l => format!(
                "\nPayload text or secret in the App's log: **found** ({}).\n",
                l.join(", ")
            ),
        };
        s
    }

    fn json(&self) -> Value {
        let cpus = std::thread::available_parallelism().map_or(0, usize::from);
        json!({
            "duration_s": self.duration,
            "warmup_s": self.warmup,
            "fixed_rate": {
                "offered_per_s": self.rate,
                "connections": FIXED_RATE_CONNECTIONS,
                "sustained_share": SUSTAINED,
            },
            "body_bytes": BODY_BYTES,
            "wrk": { "threads": 2, "connections": 64 },
            "cpus": { "servers": self.cpus.server, "wrk": self.cpus.wrk },
            "machine": {
                "cpus": cpus,
                "wrk": first_line("wrk", &["--version"]),
                "node": first_line("node", &["--version"]),
            },
            "app": self.app.as_ref().map(|a| json!({
                "statuses": [a.statuses.0, a.statuses.1],
                "main": a.main.json(),
                "fixed_rate": fixed_json(&a.fixed),
                "work": a.work.json(),
                "flood": {
                    "valid_alone": a.alone.json(),
                    "valid_during_flood": a.with_flood.json(),
                    "bad_signatures": a.flood.json(),
                },
                "log_leaks": a.leaks,
            })),
            "node": self.nodes.iter().map(|n| json!({
                "octokit_webhooks": self.octokit,
                "workers": n.workers,
                "statuses": [n.statuses.0, n.statuses.1],
                "main": n.main.json(),
                "fixed_rate": fixed_json(&n.fixed),
            })).collect::<Vec<_>>(),
            "ratio_to_best_node": self.ratio().map(|r| round(r, 3)),
            "targets": self.targets().iter().map(|(t, _, met, v)| json!({
                "target": t, "value": round(*v, 3), "met": met,
            })).collect::<Vec<_>>(),
        })
    }
}

/// The figures of a fixed-rate run, for the JSON file.
fn fixed_json(f: &Outcome) -> Value {
    json!({
        "offered_per_s": f.offered_per_s,
        "due": f.due,
        "ok": f.ok,
        "ok_per_s": round(f.ok_per_s(), 1),
        "non_2xx": f.non_2xx,
        "errors": f.errors,
        "not_sent": f.unsent,
        "elapsed_s": round(f.elapsed_s, 3),
        "latency_ms": {
            "p50": round(f.percentile_ms(50.0), 3),
            "p90": round(f.percentile_ms(90.0), 3),
            "p99": round(f.percentile_ms(99.0), 3),
            "p999": round(f.percentile_ms(99.9), 3),
            "max": round(f.max_ms(), 3),
        },
    })
}

/// A child process with its output in a file; stopped when dropped.
#[derive(Debug)]
struct Proc {
    name: &'static str,
    child: Option<Child>,
    log: PathBuf,
}

impl Proc {
    fn spawn(name: &'static str, mut cmd: Command, log: &Path) -> Result<Self> {
        let out = File::create(log)?;
        let err = out.try_clone()?;
        let child = cmd
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .with_context(|| format!("failed to start {name}"))?;
        Ok(Self {
            name,
            child: Some(child),
            log: log.to_path_buf(),
        })
    }

    fn log_text(&self) -> String {
        String::from_utf8_lossy(&fs::read(&self.log).unwrap_or_default()).into_owned()
    }

    /// The last lines of the output, for error messages.
    fn tail(&self) -> String {
        let text = self.log_text();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Waits for a `listening on` line in the output.
    fn wait_listening(&mut self, deadline: Duration) -> Result<()> {
        let start = Instant::now();
        loop {
            if self.log_text().contains("listening on") {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Some(status) = child.try_wait()?
            {
                self.child = None;
                bail!(
                    "{} exited with {status} before listening:\n{}",
                    self.name,
                    self.tail()
                );
            }
            if start.elapsed() > deadline {
                bail!(
                    "{} printed no `listening on` within {deadline:?}:\n{}",
                    self.name,
                    self.tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Waits for the process to end by itself (a wrk run), then parses it.
    fn finish(mut self, deadline: Duration) -> Result<Wrk> {
        let start = Instant::now();
        let Some(child) = self.child.as_mut() else {
            bail!("{} is not running", self.name);
        };
        let status = loop {
            if let Some(status) = child.try_wait()? {
                break status;
            }
            if start.elapsed() > deadline {
                bail!("{} did not end within {deadline:?}", self.name);
            }
            std::thread::sleep(Duration::from_millis(50));
        };
        self.child = None;
        let out = self.log_text();
        if !status.success() {
            bail!("{} failed with {status}:\n{out}", self.name);
        }
        Wrk::parse(&out)
    }

    /// SIGTERM, then SIGKILL after [`STOP_GRACE`].
    fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        if matches!(child.try_wait(), Ok(Some(_))) {
            return;
        }
        let _ = Command::new("kill")
            .args(["-TERM", &child.id().to_string()])
            .stderr(Stdio::null())
            .status();
        let start = Instant::now();
        while start.elapsed() < STOP_GRACE {
            if matches!(child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(25));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A temporary directory, removed when dropped.
#[derive(Debug)]
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn new() -> Result<Self> {
        let path =
            std::env::temp_dir().join(format!("benchops-bench-webhooks-{}", std::process::id()));
        let _ = fs::remove_dir_all(&path);
        fs::create_dir_all(&path)?;
        fs::set_permissions(&path, fs::Permissions::from_mode(0o700))?;
        Ok(Self { path })
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = fs::remove_dir_all(&self.path);
    }
}

/// A minimal HTTP/1.1 exchange: `head` is the request line and any
/// headers; `Host`, `Connection: close` and `Content-Length` are added.
/// Returns the status code.
fn http(addr: SocketAddr, head: &str, body: &[u8]) -> Result<u16> {
    let mut s = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    s.set_read_timeout(Some(Duration::from_secs(5)))?;
    s.set_write_timeout(Some(Duration::from_secs(5)))?;
    let len = body.len();
    let req = format!("{head}Host: {addr}\r\nConnection: close\r\nContent-Length: {len}\r\n\r\n");
    s.write_all(req.as_bytes())?;
    s.write_all(body)?;
    let mut got = Vec::new();
    let mut buf = [0u8; 512];
    while !got.windows(2).any(|w| w == b"\r\n") && got.len() < 4096 {
        match s.read(&mut buf)? {
            0 => break,
            n => got.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&got);
    let status = text.split_whitespace().nth(1).and_then(|c| c.parse().ok());
    status.with_context(|| format!("no HTTP status from {addr}: {:?}", text.lines().next()))
}

/// Polls `GET /healthz` until it answers 200.
fn wait_healthz(addr: SocketAddr, deadline: Duration) -> Result<()> {
    let start = Instant::now();
    loop {
        let last = http(addr, "GET /healthz HTTP/1.1\r\n", b"");
        if matches!(last, Ok(200)) {
            return Ok(());
        }
        if start.elapsed() > deadline {
            bail!("GET /healthz on {addr} did not answer 200 within {deadline:?}: {last:?}");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A loopback address with a port that was free a moment ago.
fn free_port() -> Result<SocketAddr> {
    let l = TcpListener::bind("127.0.0.1:0")?;
    Ok(l.local_addr()?)
}

/// HMAC-SHA256 (RFC 2104) over the workspace's SHA-256.
fn hmac_sha256(key: &[u8], msg: &[u8]) -> [u8; 32] {
    let mut k = [0u8; 64];
    if key.len() > 64 {
        k[..32].copy_from_slice(Sha256Digest::of(key).as_bytes());
    } else {
        k[..key.len()].copy_from_slice(key);
    }
    let mut inner: Vec<u8> = k.iter().map(|b| b ^ 0x36).collect();
    inner.extend_from_slice(msg);
    let mut outer: Vec<u8> = k.iter().map(|b| b ^ 0x5c).collect();
    outer.extend_from_slice(Sha256Digest::of(&inner).as_bytes());
    *Sha256Digest::of(&outer).as_bytes()
}

/// The `X-Hub-Signature-256` value of `body` under `key`.
fn sign(key: &[u8], body: &[u8]) -> String {
    format!("sha256={}", hex(&hmac_sha256(key, body)))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut out = [0u8; N];
    File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut out))
        .context("cannot read /dev/urandom")?;
    Ok(out)
}

/// Whole seconds from the environment, or the default.
/// A `taskset -c` CPU list from `name` (digits, `,` and `-`), if set.
fn env_cpus(name: &str) -> Result<Option<String>> {
    match std::env::var(name) {
        Err(_) => Ok(None),
        Ok(v)
            if !v.is_empty()
                && v.chars()
                    .all(|c| c.is_ascii_digit() || c == ',' || c == '-') =>
        {
            Ok(Some(v))
        }
        Ok(v) => bail!("{name}={v:?} is not a CPU list for `taskset -c` (such as `0` or `0,2-3`)"),
    }
}

fn env_secs(name: &str, default: u64) -> Result<u64> {
    match std::env::var(name) {
        Err(_) => Ok(default),
        Ok(v) => {
            let n: u64 = v
                .trim()
                .trim_end_matches('s')
                .parse()
                .with_context(|| format!("{name}={v:?} is not a number of seconds"))?;
            Ok(n.min(3600))
        }
    }
}

fn on_path(tool: &str) -> bool {
    std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join(tool).is_file()))
}

/// The first line a tool prints about itself, on either stream.
fn first_line(tool: &str, args: &[&str]) -> String {
    let Ok(o) = Command::new(tool).args(args).output() else {
        return String::new();
    };
    let text = String::from_utf8_lossy(if o.stdout.is_empty() {
        &o.stderr
    } else {
        &o.stdout
    });
    text.lines().next().unwrap_or("").trim().to_owned()
}

/// The installed version of `@octokit/webhooks`.
fn octokit_version(peer: &Path) -> String {
    fs::read(peer.join("node_modules/@octokit/webhooks/package.json"))
        .ok()
        .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        .and_then(|v| v["version"].as_str().map(str::to_owned))
        .unwrap_or_else(|| "?".to_owned())
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// `31234.4` as `31,234`.
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.max(0.0));
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hmac_matches_rfc_4231() {
        // Case 2, and case 6 with a key longer than the block.
        let mac = hmac_sha256(b"Jefe", b"what do ya want for nothing?");
        let want = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";
        assert_eq!(hex(&mac), want);
        let msg = b"Test Using Larger Than Block-Size Key - Hash Key First";
        let want = "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54";
        assert_eq!(hex(&hmac_sha256(&[0xaa; 131], msg)), want);
    }

    #[test]
    fn body_is_exactly_the_size_and_valid_json() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("..")
            .join(EXAMPLES);
        let body = Body::build(&path, 7).expect("body");
        assert_eq!(body.bytes.len(), BODY_BYTES);
        let v: Value = serde_json::from_slice(&body.bytes).expect("json");
        assert!(v["ref"].as_str().unwrap_or("").starts_with("refs/heads/"));
        let padding = v[PADDING_KEY].as_str().unwrap_or("");
        assert!(padding.starts_with("benchops-bench-canary-00000007-"));
        assert_eq!(body.bytes, Body::build(&path, 7).expect("body").bytes);
        // The main body is routed to nothing to do, the work body to work.
        let work = Body::work(&path, 7).expect("work body");
        assert_eq!(work.bytes.len(), BODY_BYTES);
        let rules = benchops_app::events::RouteRules {
            drift_label: benchops_app::DEFAULT_DRIFT_LABEL.to_owned(),
            history_ref: benchops::layout::HISTORY_REF.to_owned(),
            workflow_path: ".github/workflows/benchmarks.yml".to_owned(),
        };
        let at = "2026-01-01T00:00:00Z";
        let route = |event, bytes| benchops_app::events::route(event, bytes, &rules, at);
        assert!(matches!(
            route("push", &body.bytes),
            Ok(benchops_app::events::Route::NothingToDo(_))
        ));
        assert!(matches!(
            route("installation", &work.bytes),
            Ok(benchops_app::events::Route::Work(_))
        ));
    }

    #[test]
    fn wrk_line_parses() {
        let out = "Running 1s test\nBENCH_RESULT {\"requests\":1000,\"duration_us\":2000000,\"bytes\":1,\
                   \"errors\":{\"connect\":0,\"read\":1,\"write\":0,\"status\":10,\"timeout\":2},\
                   \"latency_us\":{\"p50\":1500,\"p90\":2000,\"p99\":4000,\"p999\":5000,\"max\":9000,\"mean\":1600.0}}\n";
        let w = Wrk::parse(out).expect("parse");
        assert_eq!(
            (w.requests, w.status_errors, w.socket_errors),
            (1000, 10, 3)
        );
        assert!((w.ok_rps() - 495.0).abs() < 1e-9);
        assert!((w.p99_ms - 4.0).abs() < 1e-9);
    }

    #[test]
    fn thousands_groups_digits() {
        let got = [0.4, 999.0, 31234.4, 1234567.0].map(thousands);
        assert_eq!(got, ["0", "999", "31,234", "1,234,567"]);
    }
}
