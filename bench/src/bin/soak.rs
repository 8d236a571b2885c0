//! Soak: a steady mix of `/api` reads, `/v1` invokes, `operations:ws`
//! sessions and Run-log follows (through `/api` and through kube-apiserver's
//! aggregated path) against one Console for a fixed time, with the
//! Console's resident memory sampled at a fixed interval, while a writer
//! appends runtimed lines to the followed Pod's log. Fails on any 5xx or
//! transport error, and on memory growth after the warm-up. See README.md §6.
//!
//! Bounded in time (`--duration`, every operation has its own deadline) and
//! in count (`--rate` × `--duration` operations, at most `--max-in-flight`
//! at once); it talks to loopback listeners only.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use futures::{SinkExt, StreamExt};
use kruntimes_bench::envfile::BenchEnv;
use kruntimes_bench::fixtures::Fixtures;
use kruntimes_bench::http::TlsTarget;
use kruntimes_bench::keepalive::TlsClient;
use kruntimes_bench::lines::{LineGen, RunIdentity, rfc3339_nano};
use kruntimes_bench::procfs::{self, mib};
use kruntimes_bench::{metrics, stats};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use rand::Rng;
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::{self, Message};

/// `30m`, `90s`, `500ms`, `1h`.
fn parse_duration(s: &str) -> Result<Duration, String> {
    let i = s
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{s:?}: a unit is required (ms, s, m, h)"))?;
    let (num, unit) = s.split_at(i);
    let n: u64 = num.parse().map_err(|_| format!("{s:?}: not a duration"))?;
    Ok(match unit {
        "ms" => Duration::from_millis(n),
        "s" => Duration::from_secs(n),
        "m" => Duration::from_secs(n * 60),
        "h" => Duration::from_secs(n * 3600),
        _ => return Err(format!("{s:?}: unknown unit {unit:?} (ms, s, m or h)")),
    })
}

#[derive(Parser)]
struct Args {
    /// The `hack/testenv` state directory.
    #[arg(long, default_value = "target/bench-env")]
    state: PathBuf,
    /// How long the steady load runs.
    #[arg(long, default_value = "30m", value_parser = parse_duration)]
    duration: Duration,
    /// Operations started per second, in a fixed mix (bench/README.md §6).
    #[arg(long, default_value_t = 10.0)]
    rate: f64,
    /// How often the Console's VmRSS is sampled.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    sample_interval: Duration,
    /// How long each follow is held open before it is closed.
    #[arg(long, default_value = "3s", value_parser = parse_duration)]
    follow_hold: Duration,
    /// runtimed lines appended to the followed Pod's log per second.
    #[arg(long, default_value_t = 20.0)]
    writer_rate: f64,
    /// Operations in flight at most; a start beyond it is skipped and counted.
    #[arg(long, default_value_t = 64)]
    max_in_flight: usize,
    /// Growth after warm-up that fails the run: the maximum RSS of the last
    /// third of the samples over that of the middle third by more than this
    /// many percent…
    #[arg(long, default_value_t = 10.0)]
    max_growth_percent: f64,
    /// …and by more than this many MiB.
    #[arg(long, default_value_t = 4.0)]
    max_growth_mib: f64,
    /// Namespace of the soak's Runs and Pod.
    #[arg(long, default_value = "team-a")]
    namespace: String,
    /// Also write the RSS curve as CSV to this file.
    #[arg(long)]
    csv: Option<PathBuf>,
}

/// One operation of the mix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Op {
    /// `GET /api/namespaces/{ns}/runs?limit=50` as the viewer.
    ApiList,
    /// The same without a credential (public summaries).
    ApiPublicList,
    /// `GET /api/namespaces/{ns}/runs/{run}` as the viewer.
    ApiDetail,
    /// `POST /v1/.../invoke` as the operator.
    Invoke,
    /// `operations:ws`: open, send `echo`, read to `terminal`, close.
    Session,
    /// `GET /api/.../logs?follow=true`, held `--follow-hold`.
    FollowApi,
    /// `GET /apis/logs.kruntimes.io/.../log?follow=true` through kube-apiserver, held.
    FollowAggregated,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::ApiList => "/api Run list (viewer)",
            Op::ApiPublicList => "/api Run list (public)",
            Op::ApiDetail => "/api Run detail (viewer)",
            Op::Invoke => "/v1 invoke (operator)",
            Op::Session => "operations:ws session (operator)",
            Op::FollowApi => "follow via /api (viewer)",
            Op::FollowAggregated => "follow via kube-apiserver (viewer)",
        }
    }
}

/// The mix, started in this order over and over (20 slots).
const MIX: [Op; 20] = [
    Op::Invoke,
    Op::ApiList,
    Op::ApiDetail,
    Op::Invoke,
    Op::FollowApi,
    Op::ApiPublicList,
    Op::Invoke,
    Op::Session,
    Op::ApiList,
    Op::FollowAggregated,
    Op::Invoke,
    Op::ApiDetail,
    Op::ApiPublicList,
    Op::Invoke,
    Op::FollowApi,
    Op::ApiList,
    Op::Session,
    Op::Invoke,
    Op::ApiDetail,
    Op::FollowAggregated,
];

/// Every operation's own deadline.
const OP_TIMEOUT: Duration = Duration::from_secs(30);

/// What one operation ended with.
enum Outcome {
    Status(u16),
    /// No HTTP status: the connection, TLS, the WebSocket protocol or the
    /// operation itself failed.
    Error(String),
}

#[derive(Default)]
struct Tally {
    classes: BTreeMap<String, u64>,
    skipped: u64,
    lat_ms: Vec<f64>,
    first_error: Option<String>,
}

#[derive(Default)]
struct Totals {
    by_op: Mutex<BTreeMap<Op, Tally>>,
    follow_lines: AtomicU64,
    started: AtomicU64,
    in_flight: AtomicU64,
}

impl Totals {
    fn record(&self, op: Op, outcome: Outcome, ms: f64) {
        let mut m = self.by_op.lock().unwrap_or_else(|e| e.into_inner());
        let t = m.entry(op).or_default();
        let class = match &outcome {
            Outcome::Status(s) => format!("{}xx", s / 100),
            Outcome::Error(_) => "error".to_owned(),
        };
        *t.classes.entry(class).or_default() += 1;
        if let (Outcome::Error(e), None) = (&outcome, &t.first_error) {
            t.first_error = Some(e.clone());
        }
        if let (Outcome::Status(s), None) = (&outcome, &t.first_error)
            && *s >= 400
        {
            t.first_error = Some(format!("status {s}"));
        }
        t.lat_ms.push(ms);
    }

    fn skip(&self, op: Op) {
        let mut m = self.by_op.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(op).or_default().skipped += 1;
    }
}

/// Everything the operations need.
struct Ctx {
    ns: String,
    console: TlsClient,
    console_target: TlsTarget,
    apiserver: TlsTarget,
    viewer: String,
    operator: String,
    follow_run: String,
    invoke_path: String,
    ops_path: String,
    hold: Duration,
    totals: Totals,
}

const SESSION_COMMAND: &str = r#"{"type":"send","operation":{"command":"echo","args":["soak"]}}"#;

async fn http_op(
    ctx: &Ctx,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Outcome {
    let mut conn = ctx.console.keep_alive();
    match conn.send(method, path, headers, body).await {
        Ok((status, _)) => Outcome::Status(status),
        Err(e) => Outcome::Error(format!("{method} {path}: {e:#}")),
    }
}

async fn session(ctx: &Ctx) -> Outcome {
    let stream = match ctx.console.connect().await {
        Ok(s) => s,
        Err(e) => return Outcome::Error(format!("connecting: {e:#}")),
    };
    let Ok(mut req) = tungstenite::client::IntoClientRequest::into_client_request(format!(
        "wss://localhost{}",
        ctx.ops_path
    )) else {
        return Outcome::Error("building the WebSocket request".into());
    };
    let auth = format!("Bearer {}", ctx.operator);
    if let Ok(v) = auth.parse::<tungstenite::http::HeaderValue>() {
        req.headers_mut().insert("authorization", v);
    }
    let mut ws = match tokio_tungstenite::client_async(req, stream).await {
        Ok((ws, _)) => ws,
        Err(tungstenite::Error::Http(resp)) => return Outcome::Status(resp.status().as_u16()),
        Err(e) => return Outcome::Error(format!("WebSocket handshake: {e}")),
    };
    if let Err(e) = ws
        .send(Message::Text(SESSION_COMMAND.to_owned().into()))
        .await
    {
        return Outcome::Error(format!("sending the operation: {e}"));
    }
    let outcome = loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => {
                let ev: Value = serde_json::from_str(t.as_str()).unwrap_or_default();
                if ev["type"] == "terminal" {
                    break if ev["exitCode"] == 0 {
                        Outcome::Status(101)
                    } else {
                        Outcome::Error(format!("terminal event {ev}"))
                    };
                }
            }
            Some(Ok(Message::Close(c))) => {
                break Outcome::Error(format!("closed before the terminal event: {c:?}"));
            }
            Some(Ok(_)) => {}
            Some(Err(e)) => break Outcome::Error(format!("reading events: {e}")),
            None => break Outcome::Error("socket ended before the terminal event".into()),
        }
    };
    let _ = ws.close(None).await;
    outcome
}

/// Opens a follow, reads it for the hold time, closes it.
async fn follow(ctx: &Ctx, target: &TlsTarget, path: &str) -> Outcome {
    let resp = match target.get(path, &ctx.viewer).await {
        Ok(r) => r,
        Err(e) => return Outcome::Error(format!("GET {path}: {e:#}")),
    };
    if resp.status != 200 {
        return Outcome::Status(resp.status);
    }
    let mut body = resp.body;
    let until = tokio::time::Instant::now() + ctx.hold;
    let mut lines = 0u64;
    loop {
        match tokio::time::timeout_at(until, body.next()).await {
            Err(_) => break,
            Ok(Ok(Some(piece))) => lines += memchr::memchr_iter(b'\n', &piece).count() as u64,
            // The stream ended by itself (it should not before the hold).
            Ok(Ok(None)) => {
                ctx.totals.follow_lines.fetch_add(lines, Ordering::Relaxed);
                return Outcome::Error(format!("{path}: the follow ended before the hold time"));
            }
            Ok(Err(e)) => return Outcome::Error(format!("{path}: {e:#}")),
        }
    }
    ctx.totals.follow_lines.fetch_add(lines, Ordering::Relaxed);
    Outcome::Status(200)
}

async fn run_op(ctx: &Ctx, op: Op) -> Outcome {
    let viewer = format!("Bearer {}", ctx.viewer);
    let operator = format!("Bearer {}", ctx.operator);
    let ns = &ctx.ns;
    match op {
        Op::ApiList => {
            let path = format!("/api/namespaces/{ns}/runs?limit=50");
            http_op(ctx, "GET", &path, &[("Authorization", &viewer)], b"").await
        }
        Op::ApiPublicList => {
            let path = format!("/api/namespaces/{ns}/runs?limit=50&phase=Running,Ready");
            http_op(ctx, "GET", &path, &[], b"").await
        }
        Op::ApiDetail => {
            let path = format!("/api/namespaces/{ns}/runs/{}", ctx.follow_run);
            http_op(ctx, "GET", &path, &[("Authorization", &viewer)], b"").await
        }
        Op::Invoke => {
            let headers = [
                ("Authorization", operator.as_str()),
                ("Content-Type", "application/json"),
            ];
            http_op(ctx, "POST", &ctx.invoke_path, &headers, br#"{"soak":1}"#).await
        }
        Op::Session => session(ctx).await,
        Op::FollowApi => {
            let path = format!(
                "/api/namespaces/{ns}/runs/{}/logs?follow=true&tail=1",
                ctx.follow_run
            );
            follow(ctx, &ctx.console_target, &path).await
        }
        Op::FollowAggregated => {
            let path = format!(
                "/apis/logs.kruntimes.io/v1alpha1/namespaces/{ns}/runs/{}/log?follow=true&tailLines=1",
                ctx.follow_run
            );
            follow(ctx, &ctx.apiserver, &path).await
        }
    }
}

/// A Ready Run of runtime `bash` in `mode`; its UID.
async fn ready_run(fx: &Fixtures, name: &str, mode: Value) -> Result<String> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kruntimes.io", "v1alpha1", "Run"),
        "runs",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(fx.client.clone(), &fx.ns, &ar);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
        "metadata": {"name": name},
        "spec": {"runtime": "bash", "mode": mode},
    }))?;
    let uid = api
        .create(&PostParams::default(), &obj)
        .await
        .with_context(|| format!("creating {name}"))?
        .metadata
        .uid
        .context("no UID")?;
    fx.set_run_status(name, json!({"phase": "Ready"})).await?;
    Ok(uid)
}

/// Appends runtimed lines to the followed Pod's log until `stop`; one line in
/// four belongs to the followed Run.
fn writer(
    log: PathBuf,
    mut lines: LineGen,
    run: RunIdentity,
    rate: f64,
    stop: Arc<std::sync::atomic::AtomicBool>,
) -> std::thread::JoinHandle<Result<u64>> {
    std::thread::spawn(move || {
        let others: Vec<RunIdentity> = (0..8).map(|_| lines.other_run()).collect();
        let every = Duration::from_secs_f64(1.0 / rate.max(0.1));
        let mut written = 0u64;
        let mut next = Instant::now();
        while !stop.load(Ordering::Relaxed) {
            let who = if written.is_multiple_of(4) {
                run.clone()
            } else {
                others[written as usize % others.len()].clone()
            };
            let msg = lines.message();
            let mut line =
                format!("{} stdout F ", rfc3339_nano(jiff::Timestamp::now())).into_bytes();
            lines.write_line(&who, &msg, &mut line);
            line.push(b'\n');
            std::fs::OpenOptions::new()
                .append(true)
                .open(&log)
                .and_then(|mut f| f.write_all(&line))
                .with_context(|| format!("appending to {}", log.display()))?;
            written += 1;
            next += every;
            if let Some(wait) = next.checked_duration_since(Instant::now()) {
                std::thread::sleep(wait);
            }
        }
        Ok(written)
    })
}

/// One RSS sample.
#[derive(Clone, Copy)]
struct Sample {
    t: f64,
    rss_kib: u64,
    started: u64,
    in_flight: u64,
    follow_streams: f64,
}

/// Growth after warm-up: (middle-third max, last-third max) in KiB.
fn growth(samples: &[Sample]) -> Option<(u64, u64)> {
    let n = samples.len();
    if n < 6 {
        return None;
    }
    let max = |s: &[Sample]| s.iter().map(|s| s.rss_kib).max().unwrap_or(0);
    Some((max(&samples[n / 3..2 * n / 3]), max(&samples[2 * n / 3..])))
}

/// Does the last third grow past both bounds over the middle third?
fn grew(mid: u64, last: u64, percent: f64, mib_bound: f64) -> bool {
    let d = last as f64 - mid as f64;
    d > mid as f64 * percent / 100.0 && d > mib_bound * 1024.0
}

#[tokio::main(flavor = "multi_thread", worker_threads = 1)]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    ensure!(
        args.rate > 0.0 && args.rate <= 200.0,
        "--rate must be in (0, 200]"
    );
    ensure!(
        args.sample_interval >= Duration::from_secs(1),
        "--sample-interval must be at least 1s"
    );
    let env = BenchEnv::load(&args.state)?;
    let console_pid = env.pid("console")?;
    let fx = Fixtures::new(&env, &args.namespace).await?;

    // Fixtures: a function Run, a session Run, a Runtime Pod with a task Run
    // on it whose log the writer feeds.
    let suffix = format!("{:06x}", rand::rng().random::<u32>() & 0xff_ffff);
    let fn_run = format!("soak-invoke-{suffix}");
    let ses_run = format!("soak-session-{suffix}");
    let pod = format!("soak-pod-{suffix}");
    let follow_run = format!("soak-follow-{suffix}");
    let fn_uid = ready_run(&fx, &fn_run, json!({"function": {}})).await?;
    let ses_uid = ready_run(&fx, &ses_run, json!({"session": {"leaseSeconds": 300}})).await?;
    let pod_uid = fx.create_pod(&pod, "bash").await?;
    let follow_uid = fx.create_run(&follow_run, "bash").await?;
    let start = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(60);
    fx.set_run_status(
        &follow_run,
        json!({"phase": "Running", "assignedPod": pod, "assignedPodUID": pod_uid,
               "startTime": start.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(), "attempt": 1}),
    )
    .await?;
    let log = fx.log_path(&pod);
    std::fs::create_dir_all(log.parent().context("log dir")?)?;
    std::fs::write(&log, b"")?;

    let ca = PathBuf::from(env.var("CONSOLE_CA")?);
    let ctx = Arc::new(Ctx {
        ns: args.namespace.clone(),
        console: TlsClient::new(env.var("CONSOLE_URL")?, &ca, None)?,
        console_target: TlsTarget::new(env.var("CONSOLE_URL")?, &ca)?,
        apiserver: TlsTarget::new(
            env.var("TESTENV_APISERVER")?,
            Path::new(env.var("TESTENV_CA")?),
        )?,
        viewer: env.var("TESTENV_TOKEN_VIEWER")?.to_owned(),
        operator: env.var("TESTENV_TOKEN_OPERATOR")?.to_owned(),
        follow_run: follow_run.clone(),
        invoke_path: format!(
            "/v1/namespaces/{}/runs/{fn_run}/{fn_uid}/invoke",
            args.namespace
        ),
        ops_path: format!(
            "/v1/namespaces/{}/runs/{ses_run}/{ses_uid}/operations:ws",
            args.namespace
        ),
        hold: args.follow_hold,
        totals: Totals::default(),
    });

    let result = soak(
        &args,
        &env,
        console_pid,
        &ctx,
        &log,
        &fx.ns,
        &pod,
        &follow_uid,
    )
    .await;
    for name in [&fn_run, &ses_run, &follow_run] {
        let _ = fx.delete_run(name).await;
    }
    let _ = fx.delete_pod(&pod).await;
    let _ = std::fs::remove_dir_all(log.parent().unwrap_or(&log));
    result
}

#[allow(clippy::too_many_arguments)]
async fn soak(
    args: &Args,
    env: &BenchEnv,
    console_pid: u32,
    ctx: &Arc<Ctx>,
    log: &Path,
    ns: &str,
    pod: &str,
    follow_uid: &str,
) -> Result<()> {
    // The Console's Run cache follows a watch: wait until both Runs answer.
    let warm = Instant::now();
    loop {
        let invoke = run_op(ctx, Op::Invoke).await;
        let ses = run_op(ctx, Op::Session).await;
        if matches!(invoke, Outcome::Status(200)) && matches!(ses, Outcome::Status(101)) {
            break;
        }
        ensure!(
            warm.elapsed() < Duration::from_secs(30),
            "the Console never served the soak's Runs"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }

    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut lines = LineGen::new(rand::rng().random(), ns, "bash", pod);
    let _ = lines.uid();
    let run = RunIdentity {
        uid: follow_uid.to_owned(),
        name: ctx.follow_run.clone(),
        invocation: None,
    };
    let writer = writer(log.to_owned(), lines, run, args.writer_rate, stop.clone());

    let admin = env.var("CONSOLE_ADMIN_URL")?.to_owned();
    let m0 = procfs::memory(console_pid)?;
    println!(
        "Soak: {:?} at {} ops/s ({} operations at most, {} in flight at most), RSS every {:?}, follows held {:?}, writer {} lines/s; Console pid {console_pid}, VmRSS {} MiB at start (load {})",
        args.duration,
        args.rate,
        (args.rate * args.duration.as_secs_f64()).ceil() as u64,
        args.max_in_flight,
        args.sample_interval,
        args.follow_hold,
        args.writer_rate,
        mib(m0.rss_kib),
        procfs::load_average(),
    );
    println!();
    println!(
        "| t (s) | Console VmRSS MiB | operations started | in flight | open follows (gauge) |"
    );
    println!("| --- | --- | --- | --- | --- |");

    let began = Instant::now();
    let end = tokio::time::Instant::now() + args.duration;
    let samples: Arc<Mutex<Vec<Sample>>> = Arc::default();
    let sampler = {
        let samples = samples.clone();
        let ctx = ctx.clone();
        let interval = args.sample_interval;
        let admin = admin.clone();
        tokio::spawn(async move {
            let mut tick =
                tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if tokio::time::Instant::now() > end + Duration::from_millis(500) {
                    return;
                }
                let rss = procfs::memory(console_pid).map(|m| m.rss_kib).unwrap_or(0);
                let follows = metrics::scrape(&admin)
                    .await
                    .map(|c| c.follow_streams)
                    .unwrap_or(f64::NAN);
                let s = Sample {
                    t: began.elapsed().as_secs_f64(),
                    rss_kib: rss,
                    started: ctx.totals.started.load(Ordering::Relaxed),
                    in_flight: ctx.totals.in_flight.load(Ordering::Relaxed),
                    follow_streams: follows,
                };
                println!(
                    "| {:.0} | {} | {} | {} | {} |",
                    s.t,
                    mib(s.rss_kib),
                    s.started,
                    s.in_flight,
                    s.follow_streams
                );
                samples.lock().unwrap_or_else(|e| e.into_inner()).push(s);
            }
        })
    };

    let every = Duration::from_secs_f64(1.0 / args.rate);
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let budget = (args.rate * args.duration.as_secs_f64()).ceil() as u64;
    let slots = Arc::new(tokio::sync::Semaphore::new(args.max_in_flight.max(1)));
    let mut tasks = tokio::task::JoinSet::new();
    let mut i = 0u64;
    while i < budget {
        tick.tick().await;
        if tokio::time::Instant::now() >= end {
            break;
        }
        let op = MIX[(i % MIX.len() as u64) as usize];
        i += 1;
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            ctx.totals.skip(op);
            continue;
        };
        let ctx = ctx.clone();
        ctx.totals.started.fetch_add(1, Ordering::Relaxed);
        ctx.totals.in_flight.fetch_add(1, Ordering::Relaxed);
        tasks.spawn(async move {
            let t = Instant::now();
            let outcome = match tokio::time::timeout(OP_TIMEOUT, run_op(&ctx, op)).await {
                Ok(o) => o,
                Err(_) => Outcome::Error(format!("no end within {OP_TIMEOUT:?}")),
            };
            ctx.totals
                .record(op, outcome, t.elapsed().as_secs_f64() * 1000.0);
            ctx.totals.in_flight.fetch_sub(1, Ordering::Relaxed);
            drop(permit);
        });
        // Reap finished tasks as we go.
        while tasks.try_join_next().is_some() {}
    }
    // Operations in flight end within their own deadline.
    while tasks.join_next().await.is_some() {}
    let _ = sampler.await;
    stop.store(true, Ordering::Relaxed);
    // A failing writer is reported with everything else, not instead of it.
    let written = match writer.join() {
        Ok(Ok(n)) => Ok(n),
        Ok(Err(e)) => Err(format!("{e:#}")),
        Err(_) => Err("the writer panicked".to_owned()),
    };

    report(
        args,
        ctx,
        &samples.lock().unwrap_or_else(|e| e.into_inner()),
        written,
        began.elapsed(),
    )
}

fn report(
    args: &Args,
    ctx: &Ctx,
    samples: &[Sample],
    written: Result<u64, String>,
    wall: Duration,
) -> Result<()> {
    println!();
    let writer = match &written {
        Ok(n) => format!("writer appended {n} lines"),
        Err(e) => format!("the writer failed: {e}"),
    };
    println!(
        "Ran {:.0} s; {writer}; follows received {} lines (load {}).",
        wall.as_secs_f64(),
        ctx.totals.follow_lines.load(Ordering::Relaxed),
        procfs::load_average()
    );
    println!();
    println!(
        "| operation | count | 1xx | 2xx | 3xx | 4xx | 5xx | errors | skipped (in-flight cap) | p50 ms | p99 ms | max ms |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let by_op = ctx.totals.by_op.lock().unwrap_or_else(|e| e.into_inner());
    let mut fives = 0;
    let mut errors = 0;
    let mut fours = 0;
    let mut first_problem = Vec::new();
    for (op, t) in by_op.iter() {
        let c = |k: &str| t.classes.get(k).copied().unwrap_or(0);
        fives += c("5xx");
        errors += c("error");
        fours += c("4xx");
        if let Some(e) = &t.first_error {
            first_problem.push(format!("{}: {e}", op.name()));
        }
        println!(
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1} | {:.1} | {:.1} |",
            op.name(),
            t.lat_ms.len(),
            c("1xx"),
            c("2xx"),
            c("3xx"),
            c("4xx"),
            c("5xx"),
            c("error"),
            t.skipped,
            stats::percentile(&t.lat_ms, 50.0),
            stats::percentile(&t.lat_ms, 99.0),
            stats::max(&t.lat_ms),
        );
    }
    drop(by_op);
    for p in &first_problem {
        println!("first problem of {p}");
    }

    println!();
    println!("RSS curve (CSV):");
    let mut csv = String::from("t_s,vmrss_kib,operations_started,in_flight,follow_streams\n");
    for s in samples {
        csv.push_str(&format!(
            "{:.0},{},{},{},{}\n",
            s.t, s.rss_kib, s.started, s.in_flight, s.follow_streams
        ));
    }
    print!("{csv}");
    if let Some(path) = &args.csv {
        std::fs::write(path, &csv).with_context(|| format!("writing {}", path.display()))?;
    }

    let mut failures = Vec::new();
    if let Err(e) = &written {
        failures.push(format!("the writer failed ({e})"));
    }
    if fives > 0 {
        failures.push(format!("{fives} answers were 5xx"));
    }
    if errors > 0 {
        failures.push(format!("{errors} operations failed without an HTTP status"));
    }
    if ctx.totals.follow_lines.load(Ordering::Relaxed) == 0 {
        failures.push("the follows received no lines".to_owned());
    }
    match growth(samples) {
        None => failures.push(format!(
            "{} RSS samples: too few to judge growth (need 6; run longer or sample more often)",
            samples.len()
        )),
        Some((mid, last)) => {
            let verdict = grew(mid, last, args.max_growth_percent, args.max_growth_mib);
            println!();
            println!(
                "Growth after warm-up: max VmRSS {} MiB in the middle third, {} MiB in the last third ({:+.1} MiB, {:+.1}%); bound: more than {}% and more than {} MiB",
                mib(mid),
                mib(last),
                (last as f64 - mid as f64) / 1024.0,
                (last as f64 - mid as f64) * 100.0 / mid.max(1) as f64,
                args.max_growth_percent,
                args.max_growth_mib
            );
            if verdict {
                failures.push("the Console's RSS grew after the warm-up".to_owned());
            }
        }
    }
    if fours > 0 {
        println!(
            "note: {fours} answers were 4xx (not a failure by itself; see the first problem above)"
        );
    }
    if failures.is_empty() {
        println!("PASS: no 5xx, no transport errors, no growth after the warm-up");
        Ok(())
    } else {
        bail!("FAIL: {}", failures.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(rss_kib: u64) -> Sample {
        Sample {
            t: 0.0,
            rss_kib,
            started: 0,
            in_flight: 0,
            follow_streams: 0.0,
        }
    }

    #[test]
    fn growth_compares_the_last_third_with_the_middle_third() {
        let flat: Vec<Sample> = [90_000, 40_000, 41_000, 42_000, 41_500, 42_500]
            .map(s)
            .to_vec();
        let (mid, last) = growth(&flat).unwrap();
        assert_eq!((mid, last), (42_000, 42_500));
        assert!(!grew(mid, last, 10.0, 4.0), "the warm-up third is ignored");
        let rising: Vec<Sample> = [30_000, 40_000, 40_000, 41_000, 50_000, 52_000]
            .map(s)
            .to_vec();
        let (mid, last) = growth(&rising).unwrap();
        assert!(grew(mid, last, 10.0, 4.0));
        // Both bounds must be passed: +12% but only 2 MiB is not growth.
        assert!(!grew(16_000, 18_000, 10.0, 4.0));
        assert!(growth(&flat[..5]).is_none());
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert!(parse_duration("30").is_err());
        assert!(parse_duration("3d").is_err());
    }

    #[test]
    fn the_mix_holds_every_operation() {
        for op in [
            Op::ApiList,
            Op::ApiPublicList,
            Op::ApiDetail,
            Op::Invoke,
            Op::Session,
            Op::FollowApi,
            Op::FollowAggregated,
        ] {
            assert!(MIX.contains(&op), "{op:?}");
        }
    }
}
