//! Crash durability of webhook intake, against the real `benchops-app`
//! binary on a real socket and a real SQLite file.
//!
//! A burst of signed deliveries (GitHub's example payloads, some given
//! fresh ids so that each leaves a fact of its own) is sent from several
//! concurrent tasks while the worker is held up on its first item (a push
//! to the history branch whose `GET /app` never answers), so that accepted
//! work piles up in the inbox. The process is SIGKILLed half-way through.
//! Then:
//!
//! - every delivery answered 2xx before the kill is in the database, and
//!   every accepted one is either worked or still in the inbox;
//! - the binary starts again on the same data directory and is ready;
//! - a replay of every delivery answered 2xx is a duplicate; a delivery
//!   refused with 503 or never sent is new; one left unanswered by the
//!   kill is accepted at most once; a second replay of any is a duplicate;
//! - the inbox left by the killed process is worked off, and the registry
//!   and the other facts hold exactly one entry per delivery;
//! - SIGTERM stops it with status 0; and on a third start, SIGTERM while
//!   the worker is held up (for less than the drain time) with work queued
//!   behind it still exits 0, with that work done.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use benchops_app::events::{Route, RouteRules, route};
use benchops_app::store::{InstallationRow, Store};
use serde_json::{Value, json};
use wiremock::matchers::{method, path};
use wiremock::{Mock, MockServer, ResponseTemplate};

use common::{Options, setup, sign};

const EXAMPLES: &str = include_str!("../fixtures/webhooks-examples/index.json");

/// The App's slug as the fake `GET /app` reports it after the restart.
const SLUG: &str = "benchops-test";
/// The publication workflow of `common::setup`'s policy.
const WORKFLOW: &str = ".github/workflows/publish.yml";
/// Deliveries in the burst.
const BURST: usize = 400;
/// Tasks sending the burst at once.
const SENDERS: usize = 6;
/// The queue capacity: smaller than the work in the burst, so that some
/// deliveries are refused with 503 while the worker is held up.
const QUEUE_CAPACITY: usize = 128;
/// `--drain-seconds` of every run.
const DRAIN_SECONDS: u64 = 20;
/// The longest wait for anything (a hang guard, not a performance bound).
const PATIENCE: Duration = Duration::from_secs(60);

/// What a delivery leaves in the database once worked.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Effect {
    /// A row of `installation_repos` (and its installation).
    Repo {
        installation: u64,
        account: String,
        repo_id: u64,
        full_name: String,
    },
    /// A row of `issue_events` for this delivery.
    Issue,
    /// A row of `workflow_runs` for this run id.
    Run(u64),
    /// Work that leaves no fact: a push to the history branch by the App's
    /// own bot.
    BotPush,
    /// No work: answered, and not even the delivery id is recorded.
    Nothing,
}

/// One signed delivery.
#[derive(Debug, Clone)]
struct Delivery {
    id: String,
    event: String,
    body: Vec<u8>,
    effect: Effect,
}

/// What the burst got for one delivery before the kill.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Outcome {
    NotSent,
    Answered(u16, String),
    Unanswered(String),
}

fn groups() -> BTreeMap<String, Vec<Value>> {
    let all: Vec<Value> = serde_json::from_str(EXAMPLES).expect("index.json parses");
    all.into_iter()
        .map(|g| {
            (
                g["name"].as_str().expect("name").to_owned(),
                g["examples"].as_array().expect("examples").clone(),
            )
        })
        .collect()
}

fn example(groups: &BTreeMap<String, Vec<Value>>, event: &str, action: &str) -> Value {
    groups[event]
        .iter()
        .find(|e| e["action"] == action)
        .unwrap_or_else(|| panic!("no {event} {action} example"))
        .clone()
}

fn rules() -> RouteRules {
    RouteRules {
        drift_label: benchops_app::DEFAULT_DRIFT_LABEL.to_owned(),
        history_ref: benchops::layout::HISTORY_REF.to_owned(),
        workflow_path: WORKFLOW.to_owned(),
    }
}

fn delivery(id: String, event: &str, body: &Value, effect: Effect) -> Delivery {
    let body = serde_json::to_vec(body).expect("serializes");
    // The test's own expectation of which deliveries are work.
    let routed = route(event, &body, &rules(), "2026-01-01T00:00:00Z").expect("routes");
    assert_eq!(
        matches!(routed, Route::Work(_)),
        effect != Effect::Nothing,
        "{id}: {event} routed as {routed:?}"
    );
    Delivery {
        id,
        event: event.to_owned(),
        body,
        effect,
    }
}

/// An `installation` `created` (`added == false`) or an
/// `installation_repositories` `added` for installation `installation`
/// with one repository of its own.
fn repo_delivery(
    g: &BTreeMap<String, Vec<Value>>,
    id: String,
    added: bool,
    installation: u64,
) -> Delivery {
    let account = format!("acct-{installation}");
    let name = format!("r{installation}");
    let full_name = format!("{account}/{name}");
    let repo_id = installation + 50_000_000;
    let repo = json!({"id": repo_id, "node_id": "R", "name": name, "full_name": full_name,
                      "private": false});
    let (event, mut body) = if added {
        let mut b = example(g, "installation_repositories", "added");
        b["repositories_added"] = json!([repo]);
        b["repositories_removed"] = json!([]);
        ("installation_repositories", b)
    } else {
        let mut b = example(g, "installation", "created");
        b["repositories"] = json!([repo]);
        ("installation", b)
    };
    body["installation"]["id"] = json!(installation);
    body["installation"]["account"]["login"] = json!(account);
    let effect = Effect::Repo {
        installation,
        account,
        repo_id,
        full_name,
    };
    delivery(id, event, &body, effect)
}

/// The burst: installation and repository events, drift-issue decisions
/// and publication runs, each with ids of its own, and GitHub's examples
/// that need no work (pings, pushes to other branches, stars, issues that
/// are not drift issues, other workflows).
fn burst(g: &BTreeMap<String, Vec<Value>>) -> Vec<Delivery> {
    let labeled = example(g, "issues", "labeled");
    let completed = example(g, "workflow_run", "completed");
    let noise: Vec<(String, Value)> = ["ping", "push", "star", "issues", "workflow_run"]
        .iter()
        .flat_map(|e| g[*e].iter().map(|x| ((*e).to_owned(), x.clone())))
        .collect();
    (0..BURST)
        .map(|i| {
            let id = format!("b{i:04}-0000-4000-8000-000000000000");
            let n = i as u64;
            match i % 5 {
                0 => repo_delivery(g, id, false, 1_000_000 + n),
                1 => repo_delivery(g, id, true, 2_000_000 + n),
                2 => {
                    let mut b = labeled.clone();
                    b["issue"]["number"] = json!(10_000 + n);
                    b["issue"]["labels"] = json!([{"name": benchops_app::DEFAULT_DRIFT_LABEL}]);
                    delivery(id, "issues", &b, Effect::Issue)
                }
                3 => {
                    let mut b = completed.clone();
                    let run = 90_000_000 + n;
                    b["workflow_run"]["id"] = json!(run);
                    b["workflow_run"]["path"] = json!(WORKFLOW);
                    delivery(id, "workflow_run", &b, Effect::Run(run))
                }
                _ => {
                    let (event, body) = &noise[(i / 5) % noise.len()];
                    delivery(id, event, body, Effect::Nothing)
                }
            }
        })
        .collect()
}

/// A push to the history branch by the App's own bot: work that needs
/// `GET /app` (to learn the bot's login) and nothing else.
fn bot_push(g: &BTreeMap<String, Vec<Value>>, id: &str) -> Delivery {
    let mut b = g["push"][0].clone();
    b["ref"] = json!(benchops::layout::HISTORY_REF);
    b["after"] = json!("0123456789abcdef0123456789abcdef01234567");
    b["installation"] = json!({"id": 1});
    b["sender"] = json!({"login": format!("{SLUG}[bot]"), "type": "Bot"});
    delivery(id.to_owned(), "push", &b, Effect::BotPush)
}

/// Makes `GET /app` of the fake GitHub API answer after `delay`.
async fn app_endpoint(github: &MockServer, delay: Duration) {
    github.reset().await;
    Mock::given(method("GET"))
        .and(path("/app"))
        .respond_with(
            ResponseTemplate::new(200)
                .set_body_json(json!({"id": common::APP_ID, "slug": SLUG}))
                .set_delay(delay),
        )
        .mount(github)
        .await;
}

/// A running `benchops-app serve`, killed if dropped.
struct Server {
    child: Child,
    base: String,
    log: PathBuf,
}

impl Server {
    fn start(config: &Path, log: PathBuf) -> Server {
        let err = std::fs::File::create(&log).expect("log file");
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_benchops-app"));
        cmd.args(["serve", "--config"])
            .arg(config)
            .args(["--drain-seconds", &DRAIN_SECONDS.to_string()])
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(err);
        for var in [
            "BENCHOPS_APP_CONFIG",
            "BENCHOPS_APP_ID",
            "BENCHOPS_APP_PRIVATE_KEY_FILE",
            "BENCHOPS_APP_WEBHOOK_SECRET",
            "BENCHOPS_APP_LISTEN",
            "BENCHOPS_APP_DATA_DIR",
            "GITHUB_API_URL",
        ] {
            cmd.env_remove(var);
        }
        let child = cmd.spawn().expect("benchops-app starts");
        let mut server = Server {
            child,
            base: String::new(),
            log,
        };
        let deadline = Instant::now() + PATIENCE;
        loop {
            let text = server.log_text();
            if let Some(addr) = text.lines().find_map(|l| l.strip_prefix("listening on ")) {
                server.base = format!("http://{}", addr.trim());
                return server;
            }
            if let Some(status) = server.child.try_wait().expect("try_wait") {
                panic!("benchops-app exited with {status} before listening:\n{text}");
            }
            assert!(
                Instant::now() < deadline,
                "benchops-app did not listen within {PATIENCE:?}:\n{text}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn url(&self, p: &str) -> String {
        format!("{}{p}", self.base)
    }

    /// SIGKILL (what `Child::kill` sends on Unix), then reaps it.
    fn kill(&mut self) {
        self.child.kill().expect("SIGKILL");
        self.child.wait().expect("reaped");
    }

    /// Waits for the exit, killing the process if it takes longer than
    /// `limit`.
    fn wait_at_most(&mut self, limit: Duration) -> ExitStatus {
        let deadline = Instant::now() + limit;
        loop {
            if let Some(status) = self.child.try_wait().expect("try_wait") {
                return status;
            }
            if Instant::now() >= deadline {
                self.kill();
                panic!(
                    "benchops-app did not exit within {limit:?} of SIGTERM:\n{}",
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Sends SIGTERM (with the shell's `kill`).
fn sigterm(child: &Child) {
    let status = Command::new("sh")
        .args(["-c", "kill -s TERM \"$0\"", &child.id().to_string()])
        .status()
        .expect("sh runs");
    assert!(status.success(), "kill -s TERM: {status}");
}

fn client() -> reqwest::Client {
    reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client")
}

async fn post(c: &reqwest::Client, server: &str, d: &Delivery) -> Result<(u16, String), String> {
    let resp = c
        .post(format!("{server}/webhook"))
        .header("content-type", "application/json")
        .header("x-github-event", &d.event)
        .header("x-github-delivery", &d.id)
        .header("x-hub-signature-256", sign(&d.body))
        .body(d.body.clone())
        .send()
        .await
        .map_err(|e| e.to_string())?;
    let status = resp.status().as_u16();
    let text = resp.text().await.map_err(|e| e.to_string())?;
    Ok((status, text))
}

/// Posts `d` as GitHub redelivers: again after a 503, for a while.
async fn deliver(c: &reqwest::Client, server: &Server, d: &Delivery) -> (u16, String) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        match post(c, &server.base, d).await {
            Ok((503, _)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            Ok(r) => return r,
            Err(e) => panic!("{}: {e}\n{}", d.id, server.log_text()),
        }
    }
}

fn is_duplicate(r: &(u16, String)) -> bool {
    r.0 == 200 && r.1.contains("duplicate")
}

fn is_new(r: &(u16, String)) -> bool {
    (200..300).contains(&r.0) && !r.1.contains("duplicate")
}

/// What a delivery seen before gets: `duplicate` for work; a delivery
/// without work is not recorded, so it is answered as new each time.
fn is_replay_of(d: &Delivery, r: &(u16, String)) -> bool {
    if d.effect == Effect::Nothing {
        is_new(r)
    } else {
        is_duplicate(r)
    }
}

/// Waits until `GET path` answers 200.
async fn wait_ok(c: &reqwest::Client, server: &Server, p: &str) {
    let deadline = Instant::now() + PATIENCE;
    loop {
        if let Ok(r) = c.get(server.url(p)).send().await {
            if r.status() == 200 {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "GET {p} not 200 within {PATIENCE:?}:\n{}",
            server.log_text()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn reader(db: &Path) -> rusqlite::Connection {
    benchops_app::store::open_reader(db).expect("the database opens read-only")
}

fn strings(c: &rusqlite::Connection, sql: &str) -> BTreeSet<String> {
    let mut s = c.prepare(sql).expect("prepare");
    s.query_map([], |r| r.get::<_, String>(0))
        .expect("query")
        .collect::<Result<_, _>>()
        .expect("rows")
}

fn count(c: &rusqlite::Connection, sql: &str) -> i64 {
    c.query_row(sql, [], |r| r.get(0)).expect("count")
}

/// Whether the fact `d` leads to is in the database.
fn worked(c: &rusqlite::Connection, d: &Delivery) -> bool {
    let exists = |sql: &str, p: &[&dyn rusqlite::ToSql]| {
        c.query_row(sql, p, |_| Ok(()))
            .map(|()| true)
            .or_else(|e| match e {
                rusqlite::Error::QueryReturnedNoRows => Ok(false),
                e => Err(e),
            })
            .expect("query")
    };
    match &d.effect {
        Effect::Repo {
            installation,
            repo_id,
            ..
        } => exists(
            "SELECT 1 FROM installation_repos WHERE installation_id = ?1 AND repo_id = ?2",
            &[&(*installation as i64), &(*repo_id as i64)],
        ),
        Effect::Issue => exists("SELECT 1 FROM issue_events WHERE delivery = ?1", &[&d.id]),
        Effect::Run(run) => exists(
            "SELECT 1 FROM workflow_runs WHERE run_id = ?1",
            &[&(*run as i64)],
        ),
        Effect::BotPush | Effect::Nothing => true,
    }
}

/// Sends the burst from [`SENDERS`] tasks and SIGKILLs the server once
/// half of it has been started. Returns what each delivery got.
async fn burst_and_kill(server: &mut Server, plan: &Arc<Vec<Delivery>>) -> Vec<Outcome> {
    let outcomes = Arc::new(Mutex::new(vec![Outcome::NotSent; plan.len()]));
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for _ in 0..SENDERS {
        let (plan, outcomes, next, stop) =
            (plan.clone(), outcomes.clone(), next.clone(), stop.clone());
        let base = server.base.clone();
        tasks.push(tokio::spawn(async move {
            let c = client();
            while !stop.load(Ordering::SeqCst) {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(d) = plan.get(i) else { break };
                let outcome = match post(&c, &base, d).await {
                    Ok((status, text)) => Outcome::Answered(status, text),
                    Err(e) => Outcome::Unanswered(e),
                };
                outcomes.lock().expect("lock")[i] = outcome;
            }
        }));
    }
    let deadline = Instant::now() + PATIENCE;
    while next.load(Ordering::SeqCst) < plan.len() / 2 {
        assert!(Instant::now() < deadline, "the burst stalled");
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    server.kill();
    stop.store(true, Ordering::SeqCst);
    for t in tasks {
        t.await.expect("sender");
    }
    outcomes.lock().expect("lock").clone()
}

/// What a SIGKILLed process leaves: every delivery of work answered 2xx is
/// recorded, none answered 503 is, none without work is, and every
/// accepted one is either worked or in the inbox (with the held-up item
/// and work behind it still there).
fn check_left_by_kill(
    db: &Path,
    plan: &[Delivery],
    stall: &Delivery,
    answered: &[&Delivery],
    refused: &[&Delivery],
) {
    let conn = reader(db);
    let recorded = strings(&conn, "SELECT id FROM deliveries");
    let pending = strings(&conn, "SELECT delivery FROM inbox");
    for d in answered {
        assert_eq!(
            recorded.contains(&d.id),
            d.effect != Effect::Nothing,
            "{} ({:?}) was answered 2xx; recorded: {}",
            d.id,
            d.effect,
            recorded.contains(&d.id)
        );
    }
    for d in refused {
        assert!(
            !recorded.contains(&d.id),
            "{} got 503 but is recorded",
            d.id
        );
    }
    assert!(
        pending.contains(&stall.id),
        "the held-up item is not in the inbox"
    );
    for d in plan.iter().filter(|d| recorded.contains(&d.id)) {
        assert!(
            pending.contains(&d.id) || worked(&conn, d),
            "{} was accepted, is not in the inbox and was not worked",
            d.id
        );
    }
    assert!(
        plan.iter().any(|d| pending.contains(&d.id)),
        "no accepted work was left in the inbox by the kill"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn accepted_deliveries_survive_sigkill_and_are_worked_once_after_restart() {
    // A GitHub API whose `GET /app` does not answer: the worker is held up
    // on its first item while the burst is accepted.
    let github = MockServer::start().await;
    app_endpoint(&github, Duration::from_secs(600)).await;
    let s = setup(&Options {
        api_url: Some(github.uri()),
        queue_capacity: QUEUE_CAPACITY,
        ..Options::default()
    });
    let db = s.dir.path().join("data").join("app.db");
    let g = groups();
    let stall = bot_push(&g, "stall");
    let plan = Arc::new(burst(&g));
    let c = client();

    // Run 1: the stalling item, then the burst, killed half-way.
    let mut first = Server::start(&s.config, s.dir.path().join("run1.log"));
    wait_ok(&c, &first, "/healthz").await;
    let r = post(&c, &first.base, &stall).await.expect("answered");
    assert_eq!(r.0, 202, "{}", r.1);
    let outcomes = burst_and_kill(&mut first, &plan).await;

    let mut answered = Vec::new();
    let mut refused = Vec::new();
    let mut unanswered = Vec::new();
    let mut not_sent = Vec::new();
    for (d, o) in plan.iter().zip(&outcomes) {
        match o {
            Outcome::Answered(status, text) if (200..300).contains(status) => {
                assert!(!text.contains("duplicate"), "{}: {text}", d.id);
                answered.push(d);
            }
            Outcome::Answered(503, _) => refused.push(d),
            Outcome::Answered(status, text) => panic!("{}: {status} {text}", d.id),
            Outcome::Unanswered(_) => unanswered.push(d),
            Outcome::NotSent => not_sent.push(d),
        }
    }
    assert!(!answered.is_empty(), "nothing was accepted before the kill");
    assert!(
        !not_sent.is_empty(),
        "the kill came after the whole burst was sent"
    );

    // The dead process's database, as it was left.
    check_left_by_kill(&db, &plan, &stall, &answered, &refused);

    // Run 2 on the same data directory; `GET /app` answers now.
    app_endpoint(&github, Duration::ZERO).await;
    let mut second = Server::start(&s.config, s.dir.path().join("run2.log"));
    wait_ok(&c, &second, "/healthz").await;
    wait_ok(&c, &second, "/readyz").await;

    let r = deliver(&c, &second, &stall).await;
    assert!(is_duplicate(&r), "stall replay: {r:?}");
    for d in &answered {
        let r = deliver(&c, &second, d).await;
        assert!(is_replay_of(d, &r), "{} replay: {r:?}", d.id);
    }
    for d in refused.iter().chain(&not_sent) {
        let r = deliver(&c, &second, d).await;
        assert!(is_new(&r), "{} never recorded, now: {r:?}", d.id);
    }
    for d in &unanswered {
        let r = deliver(&c, &second, d).await;
        assert!(
            (200..300).contains(&r.0),
            "{} unanswered before the kill, now: {r:?}",
            d.id
        );
    }
    for d in std::iter::once(&stall).chain(plan.iter()) {
        let r = deliver(&c, &second, d).await;
        assert!(is_replay_of(d, &r), "{} second replay: {r:?}", d.id);
    }

    // The inbox of the killed process, and everything since, is worked off.
    let deadline = Instant::now() + PATIENCE;
    loop {
        let left = count(&reader(&db), "SELECT count(*) FROM inbox");
        if left == 0 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{left} inbox items not worked within {PATIENCE:?}:\n{}",
            second.log_text()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        second
            .log_text()
            .contains("resuming the inbox of an earlier run"),
        "{}",
        second.log_text()
    );

    // A clean stop once everything is worked.
    sigterm(&second.child);
    let status = second.wait_at_most(Duration::from_secs(DRAIN_SECONDS + 10));
    assert!(status.success(), "SIGTERM: {status}\n{}", second.log_text());

    // Run 3: SIGTERM while the worker is held up (`GET /app` answers after
    // a few seconds, well inside the drain time) with work queued behind
    // it. The queue is drained before the exit.
    app_endpoint(&github, Duration::from_secs(3)).await;
    let mut third = Server::start(&s.config, s.dir.path().join("run3.log"));
    wait_ok(&c, &third, "/healthz").await;
    let mut late = vec![bot_push(&g, "held")];
    late.extend(
        (0..20u64).map(|i| repo_delivery(&g, format!("late-{i:02}"), i % 2 == 1, 3_000_000 + i)),
    );
    for d in &late {
        let r = deliver(&c, &third, d).await;
        assert_eq!(r.0, 202, "{}: {r:?}", d.id);
    }
    let queued = count(&reader(&db), "SELECT count(*) FROM inbox");
    assert!(queued > 1, "the worker was not held up: {queued} queued");
    sigterm(&third.child);
    let status = third.wait_at_most(Duration::from_secs(DRAIN_SECONDS + 10));
    assert!(status.success(), "SIGTERM: {status}\n{}", third.log_text());
    assert!(
        third.log_text().contains("queue drained"),
        "{}",
        third.log_text()
    );

    // Exactly one of everything.
    let all: Vec<&Delivery> = std::iter::once(&stall)
        .chain(plan.iter())
        .chain(late.iter())
        .collect();
    let conn = reader(&db);
    assert_eq!(count(&conn, "SELECT count(*) FROM inbox"), 0);
    let recorded = strings(&conn, "SELECT id FROM deliveries");
    let expected: BTreeSet<String> = all
        .iter()
        .filter(|d| d.effect != Effect::Nothing)
        .map(|d| d.id.clone())
        .collect();
    assert_eq!(recorded, expected);
    for d in &all {
        assert!(worked(&conn, d), "{} was not worked", d.id);
    }
    let of = |f: fn(&Effect) -> bool| all.iter().filter(|d| f(&d.effect)).count() as i64;
    assert_eq!(
        count(&conn, "SELECT count(*) FROM issue_events"),
        of(|e| *e == Effect::Issue)
    );
    assert_eq!(
        count(&conn, "SELECT count(*) FROM workflow_runs"),
        of(|e| matches!(e, Effect::Run(_)))
    );
    drop(conn);
    let store = Store::open(&s.dir.path().join("data")).expect("store");
    let mut want: Vec<InstallationRow> = all
        .iter()
        .filter_map(|d| match &d.effect {
            Effect::Repo {
                installation,
                account,
                repo_id,
                full_name,
            } => Some(InstallationRow {
                id: *installation,
                account: account.clone(),
                suspended: false,
                repositories: vec![(full_name.clone(), *repo_id)],
            }),
            _ => None,
        })
        .collect();
    want.sort_by_key(|i| i.id);
    assert_eq!(store.installations().expect("registry"), want);
}
