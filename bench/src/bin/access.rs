//! The Runtime access handler (`/v1`): invoke through the Console versus
//! straight to the fake gateway at several concurrencies, the operations
//! WebSocket round trip, and the Console's memory with many open operation
//! sockets. See README.md §5.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use clap::Parser;
use futures::{SinkExt, StreamExt};
use kruntimes_bench::envfile::BenchEnv;
use kruntimes_bench::fixtures::Fixtures;
use kruntimes_bench::keepalive::{Conn, TlsClient};
use kruntimes_bench::nginx::{Identity, Nginx, NginxConfig, WrkPass, h2load, tls_probe, wrk};
use kruntimes_bench::procfs::{self, mib};
use kruntimes_bench::{metrics, stats};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;

type Ws = WebSocketStream<TlsStream<TcpStream>>;

#[derive(Parser)]
struct Args {
    /// The `hack/testenv` state directory.
    #[arg(long, default_value = "target/bench-env")]
    state: PathBuf,
    /// Concurrencies (keep-alive connections) of the invoke passes.
    #[arg(long, default_value = "1,64", value_delimiter = ',')]
    concurrency: Vec<usize>,
    /// Invokes per connection per pass.
    #[arg(long, default_value_t = 1000)]
    per_conn_c1: usize,
    #[arg(long, default_value_t = 300)]
    per_conn: usize,
    #[arg(long, default_value_t = 3)]
    passes: usize,
    /// Operations per WebSocket pass.
    #[arg(long, default_value_t = 200)]
    ws_ops: usize,
    /// Operation sockets held open at once.
    #[arg(long, default_value_t = 1000)]
    sockets: usize,
    #[arg(long, default_value_t = 50)]
    open_concurrency: usize,
    #[arg(long, default_value_t = 2)]
    socket_cycles: usize,
    /// Simulated function times in ms (the gateway answers after this
    /// delay; 0 answers at once, from memory).
    #[arg(long, default_value = "0,2", value_delimiter = ',')]
    function_ms: Vec<u64>,
    /// CPU placement: `shared` leaves every process on every core; `split`
    /// gives the Console core 1 and puts the gateway and this client on core
    /// 0, as if the Console ran on its own node share (both paths then have
    /// exactly one core for client and gateway); for the nginx comparison,
    /// nginx shares core 1 with the Console and `wrk`/`h2load` run on core 0.
    #[arg(long, default_value = "shared")]
    cpus: String,
    /// Parts to run: invoke, ws, sockets, nginx (the Console against nginx
    /// in front of the same gateway, HTTP/1.1 driven by `wrk`), nginx-h2
    /// (the same over HTTP/2, driven by `h2load`).
    #[arg(long, default_value = "invoke,ws,sockets,nginx", value_delimiter = ',')]
    only: Vec<String>,
    /// Seconds per `wrk` or `h2load` pass of the nginx comparison.
    #[arg(long, default_value_t = 8)]
    wrk_seconds: u64,
    /// Concurrencies (calls in flight) of the nginx comparison.
    #[arg(long, default_value = "1,64", value_delimiter = ',')]
    wrk_concurrency: Vec<usize>,
}

const NS: &str = "team-a";
const FUNCTION_RUN: &str = "bench-invoke";
const SESSION_RUN: &str = "bench-session";

/// A Ready Run of runtime `bash` in `mode`; its UID.
async fn ready_run(fx: &Fixtures, name: &str, mode: Value) -> Result<String> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kruntimes.io", "v1alpha1", "Run"),
        "runs",
    );
    let api: Api<DynamicObject> = Api::namespaced_with(fx.client.clone(), NS, &ar);
    let uid = match fx.run_uid(name).await? {
        Some(uid) => uid,
        None => {
            let obj: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                "metadata": {"name": name},
                "spec": {"runtime": "bash", "mode": mode},
            }))?;
            api.create(&PostParams::default(), &obj)
                .await
                .with_context(|| format!("creating {name}"))?
                .metadata
                .uid
                .context("no UID")?
        }
    };
    fx.set_run_status(name, json!({"phase": "Ready"})).await?;
    Ok(uid)
}

struct Side {
    name: &'static str,
    client: TlsClient,
    headers: Vec<(String, String)>,
}

impl Side {
    fn headers(&self) -> Vec<(&str, &str)> {
        self.headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect()
    }
}

struct Pass {
    lat_ms: Vec<f64>,
    rps: f64,
    cpu_console_ms: f64,
    cpu_gateway_ms: f64,
    connects: u64,
}

async fn invoke_pass(
    side: &Side,
    conns: &mut Vec<Conn>,
    path: &str,
    per_conn: usize,
    pids: (u32, u32),
) -> Result<Pass> {
    let total = conns.len() * per_conn;
    let next = Arc::new(AtomicUsize::new(0));
    let connects0 = side.client.connects.load(Ordering::Relaxed);
    let cpu0 = (procfs::cpu_seconds(pids.0)?, procfs::cpu_seconds(pids.1)?);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for mut conn in conns.drain(..) {
        let headers: Vec<(String, String)> = side.headers.clone();
        let next = next.clone();
        let path = path.to_owned();
        tasks.push(tokio::spawn(async move {
            let h: Vec<(&str, &str)> = headers
                .iter()
                .map(|(k, v)| (k.as_str(), v.as_str()))
                .collect();
            let mut lat = Vec::with_capacity(per_conn);
            let deadline = Instant::now() + Duration::from_secs(120);
            while next.fetch_add(1, Ordering::Relaxed) < total && Instant::now() < deadline {
                let t = Instant::now();
                let (status, body) = conn.send("POST", &path, &h, br#"{"x":1}"#).await?;
                ensure!(
                    status == 200,
                    "POST {path}: {status} {}",
                    String::from_utf8_lossy(&body)
                );
                lat.push(t.elapsed().as_secs_f64() * 1000.0);
            }
            anyhow::Ok((conn, lat))
        }));
    }
    let mut lat_ms = Vec::with_capacity(total);
    for t in tasks {
        let (conn, lat) = t.await??;
        conns.push(conn);
        lat_ms.extend(lat);
    }
    let wall = start.elapsed().as_secs_f64();
    let n = lat_ms.len() as f64;
    Ok(Pass {
        rps: n / wall,
        cpu_console_ms: (procfs::cpu_seconds(pids.0)? - cpu0.0) * 1000.0 / n,
        cpu_gateway_ms: (procfs::cpu_seconds(pids.1)? - cpu0.1) * 1000.0 / n,
        connects: side.client.connects.load(Ordering::Relaxed) - connects0,
        lat_ms,
    })
}

/// One call to the fake gateway's control API (`curl`); the answer's body.
fn gateway_control(
    env: &BenchEnv,
    method: &str,
    path: &str,
    body: Option<&serde_json::Value>,
) -> Result<Vec<u8>> {
    let url = format!("{}{path}", env.var("TESTENV_GATEWAY_CONTROL")?);
    let mut cmd = std::process::Command::new("curl");
    cmd.args(["-sf", "-X", method]);
    if let Some(body) = body {
        cmd.args(["-H", "Content-Type: application/json", "--data"])
            .arg(body.to_string());
    }
    let out = cmd.arg(&url).output().context("running curl")?;
    ensure!(out.status.success(), "{method} {url} failed");
    Ok(out.stdout)
}

/// Tells the fake gateway to answer invokes after `ms` (0: at once).
async fn set_function_time(env: &BenchEnv, ms: u64) -> Result<()> {
    let body = if ms == 0 {
        json!({"mode": "normal"})
    } else {
        json!({"mode": "slow", "delayMs": ms})
    };
    gateway_control(env, "POST", "/mode", Some(&body)).map(drop)
}

/// Empties the fake gateway's log of recorded requests.
fn clear_gateway_requests(env: &BenchEnv) -> Result<()> {
    gateway_control(env, "DELETE", "/requests", None).map(drop)
}

/// The TLS versions of the connections the fake gateway's recorded
/// requests came on.
fn gateway_tls_versions(env: &BenchEnv) -> Result<std::collections::BTreeSet<String>> {
    let out = gateway_control(env, "GET", "/requests", None)?;
    let records: Vec<serde_json::Value> =
        serde_json::from_slice(&out).context("GET /requests of the gateway")?;
    ensure!(!records.is_empty(), "the gateway recorded no request");
    records
        .iter()
        .map(|r| {
            r["tlsVersion"]
                .as_str()
                .map(str::to_owned)
                .with_context(|| format!("a recorded request without tlsVersion: {r}"))
        })
        .collect()
}

/// Pins every thread of `pid` to `cpus` (a `taskset` list).
fn pin(pid: u32, cpus: &str) -> Result<()> {
    let out = std::process::Command::new("taskset")
        .args(["-a", "-p", "-c", cpus, &pid.to_string()])
        .output()
        .context("running taskset")?;
    ensure!(
        out.status.success(),
        "taskset {cpus} {pid}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Ok(())
}

/// Applies `--cpus`; returns a description for the report.
fn place(args: &Args, env: &BenchEnv) -> Result<&'static str> {
    let (console, gateway) = (env.pid("console")?, env.pid("gateway")?);
    let me = std::process::id();
    match args.cpus.as_str() {
        "shared" => {
            for pid in [console, gateway, me] {
                pin(pid, "0-1")?;
            }
            Ok("shared: Console, gateway and client on both cores")
        }
        "split" => {
            pin(console, "1")?;
            pin(gateway, "0")?;
            pin(me, "0")?;
            Ok("split: Console on core 1; gateway and client on core 0")
        }
        other => bail!("--cpus {other}: expected shared or split"),
    }
}

async fn invoke(args: &Args, env: &BenchEnv, sides: &[Side; 2], uid: &str) -> Result<()> {
    let placement = place(args, env)?;
    let result = async {
        for &ms in &args.function_ms {
            set_function_time(env, ms).await?;
            invoke_at(args, env, sides, uid, ms, placement).await?;
        }
        anyhow::Ok(())
    }
    .await;
    set_function_time(env, 0).await?;
    if args.cpus != "shared" {
        for pid in [env.pid("console")?, env.pid("gateway")?, std::process::id()] {
            pin(pid, "0-1")?;
        }
    }
    result
}

async fn invoke_at(
    args: &Args,
    env: &BenchEnv,
    sides: &[Side; 2],
    uid: &str,
    function_ms: u64,
    placement: &str,
) -> Result<()> {
    let path = format!("/v1/namespaces/{NS}/runs/{FUNCTION_RUN}/{uid}/invoke");
    let pids = (env.pid("console")?, env.pid("gateway")?);
    let admin = env.var("CONSOLE_ADMIN_URL")?;
    for &conns in &args.concurrency {
        let per_conn = if conns == 1 {
            args.per_conn_c1
        } else {
            args.per_conn
        };
        // Connections are opened once and kept across passes; the warm-up
        // also fills the token and access caches.
        let mut pools: Vec<Vec<Conn>> = sides
            .iter()
            .map(|s| (0..conns).map(|_| s.client.keep_alive()).collect())
            .collect();
        for (side, pool) in sides.iter().zip(&mut pools) {
            invoke_pass(side, pool, &path, 20, pids).await?;
        }
        let m0 = metrics::scrape(admin).await?;
        let load = procfs::load_average();
        let mut rows: Vec<Vec<Pass>> = vec![Vec::new(), Vec::new()];
        for _ in 0..args.passes {
            // Alternate the two sides so that load drifts hit both.
            for (i, side) in sides.iter().enumerate() {
                rows[i].push(invoke_pass(side, &mut pools[i], &path, per_conn, pids).await?);
            }
        }
        let m1 = metrics::scrape(admin).await?;
        println!(
            "\nfunction time {function_ms} ms, concurrency {conns}, {} invokes per pass, {} passes, {placement} (load {load} → {}); token reviews +{}, access reviews +{}",
            conns * per_conn,
            args.passes,
            procfs::load_average(),
            m1.token_reviews - m0.token_reviews,
            m1.access_reviews - m0.access_reviews,
        );
        println!(
            "| path | p50 ms | p90 ms | p99 ms | max ms | req/s | Console CPU ms/req | gateway CPU ms/req | new connections |"
        );
        println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- |");
        for (i, side) in sides.iter().enumerate() {
            for p in &rows[i] {
                println!(
                    "| {} | {:.3} | {:.3} | {:.3} | {:.3} | {:.0} | {:.3} | {:.3} | {} |",
                    side.name,
                    stats::percentile(&p.lat_ms, 50.0),
                    stats::percentile(&p.lat_ms, 90.0),
                    stats::percentile(&p.lat_ms, 99.0),
                    stats::max(&p.lat_ms),
                    p.rps,
                    p.cpu_console_ms,
                    p.cpu_gateway_ms,
                    p.connects,
                );
            }
        }
        let pct = |i: usize, q: f64| -> Vec<f64> {
            rows[i]
                .iter()
                .map(|p| stats::percentile(&p.lat_ms, q))
                .collect()
        };
        let added = |q: f64| -> Vec<f64> {
            pct(0, q)
                .iter()
                .zip(pct(1, q))
                .map(|(c, d)| c - d)
                .collect()
        };
        let ratio: Vec<f64> = rows[0]
            .iter()
            .zip(&rows[1])
            .map(|(c, d)| 100.0 * c.rps / d.rps)
            .collect();
        println!(
            "SUMMARY function {function_ms} ms c={conns}: console p50 {} p99 {}; direct p50 {} p99 {}; added p50 {} p99 {}; throughput console {} direct {} ratio % {}",
            stats::range(&pct(0, 50.0), 3),
            stats::range(&pct(0, 99.0), 3),
            stats::range(&pct(1, 50.0), 3),
            stats::range(&pct(1, 99.0), 3),
            stats::range(&added(50.0), 3),
            stats::range(&added(99.0), 3),
            stats::range(&rows[0].iter().map(|p| p.rps).collect::<Vec<_>>(), 0),
            stats::range(&rows[1].iter().map(|p| p.rps).collect::<Vec<_>>(), 0),
            stats::range(&ratio, 1),
        );
    }
    Ok(())
}

async fn open_ws(side: &Side, path: &str) -> Result<Ws> {
    side.client.websocket(path, &side.headers()).await
}

/// Waits for the next event of `kind`; every event's type is checked.
async fn wait_event(ws: &mut Ws, kind: &str) -> Result<Value> {
    loop {
        let msg = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .context("no event in 30 s")?
            .context("socket closed")??;
        let text = match msg {
            Message::Text(t) => t.as_str().to_owned(),
            Message::Binary(b) => String::from_utf8_lossy(&b).into_owned(),
            Message::Close(c) => bail!("socket closed: {c:?}"),
            _ => continue,
        };
        let v: Value = serde_json::from_str(&text)?;
        let t = v.get("type").and_then(Value::as_str).unwrap_or_default();
        if t == kind {
            return Ok(v);
        }
        ensure!(t != "error" && t != "terminal", "unexpected event {text}");
    }
}

fn send_frame(command: &str, args: &[&str]) -> Message {
    Message::Text(
        json!({"type": "send", "operation": {"command": command, "args": args}})
            .to_string()
            .into(),
    )
}

/// Sides: the Console first, then the direct path, then (optionally) nginx.
async fn ws_round_trips(args: &Args, sides: &[&Side], uid: &str) -> Result<()> {
    let path = format!("/v1/namespaces/{NS}/runs/{SESSION_RUN}/{uid}/operations:ws");
    let load = procfs::load_average();
    let mut rt: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
    let mut open: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
    let mut all: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
    let mut p99: Vec<Vec<f64>> = vec![Vec::new(); sides.len()];
    for _ in 0..args.passes {
        for (i, side) in sides.iter().enumerate() {
            // Opening a socket: TCP, TLS, upgrade (through the Console: also its checks and the upstream socket).
            let mut opens = Vec::new();
            for _ in 0..20 {
                let t = Instant::now();
                let mut ws = open_ws(side, &path).await?;
                opens.push(t.elapsed().as_secs_f64() * 1000.0);
                ws.close(None).await.ok();
            }
            let mut ws = open_ws(side, &path).await?;
            let mut lat = Vec::new();
            for k in 0..args.ws_ops + 5 {
                let t = Instant::now();
                ws.send(send_frame("echo", &["x"])).await?;
                let term = wait_event(&mut ws, "terminal").await?;
                ensure!(
                    term.get("exitCode").and_then(Value::as_i64) == Some(0),
                    "echo ended with {term}"
                );
                if k >= 5 {
                    lat.push(t.elapsed().as_secs_f64() * 1000.0);
                }
            }
            ws.close(None).await.ok();
            rt[i].push(stats::median(&lat));
            p99[i].push(stats::percentile(&lat, 99.0));
            open[i].push(stats::median(&opens));
            all[i].extend(lat);
        }
    }
    println!(
        "\nWebSocket echo round trip, {} operations × {} passes per path (load {load} → {})",
        args.ws_ops,
        args.passes,
        procfs::load_average()
    );
    println!(
        "| path | send→terminal p50 ms, median (min–max) | p99 ms, median (min–max) | max ms | socket open p50 ms, median (min–max) |"
    );
    println!("| --- | --- | --- | --- | --- |");
    for (i, side) in sides.iter().enumerate() {
        println!(
            "| {} | {} | {} | {:.3} | {} |",
            side.name,
            stats::range(&rt[i], 3),
            stats::range(&p99[i], 3),
            stats::max(&all[i]),
            stats::range(&open[i], 2)
        );
    }
    let added: Vec<f64> = rt[0].iter().zip(&rt[1]).map(|(c, d)| c - d).collect();
    println!("added p50 ms per pass: {}", stats::range(&added, 3));
    if let Some(n) = rt.get(2) {
        let ratio: Vec<f64> = rt[0].iter().zip(n).map(|(c, n)| c / n).collect();
        println!(
            "Console / {} p50 per pass: {}",
            sides[2].name,
            stats::range(&ratio, 2)
        );
    }
    Ok(())
}

/// CPU seconds of a set of processes.
fn cpu_of(pids: &[u32]) -> Result<f64> {
    pids.iter().map(|&p| procfs::cpu_seconds(p)).sum()
}

/// How the callers speak to the proxies.
#[derive(Clone, Copy, PartialEq)]
enum Protocol {
    /// `wrk`: one keep-alive HTTP/1.1 connection per concurrent call.
    Http1,
    /// `h2load`: concurrency 1 is one connection with one stream; more is
    /// two connections (one per core of the proxies) sharing the streams,
    /// as a Go client's pool does once one connection is busy.
    Http2,
}

impl Protocol {
    fn name(self) -> &'static str {
        match self {
            Protocol::Http1 => "HTTP/1.1 (wrk)",
            Protocol::Http2 => "HTTP/2 (h2load)",
        }
    }

    /// One pass of `seconds` at `concurrency` calls in flight.
    fn pass(
        self,
        dir: &Path,
        url: &str,
        headers: &[(&str, &str)],
        concurrency: usize,
        seconds: u64,
    ) -> Result<WrkPass> {
        let body = r#"{"x":1}"#;
        match self {
            Protocol::Http1 => wrk(dir, url, headers, body, concurrency, seconds),
            Protocol::Http2 => {
                let clients = concurrency.clamp(1, 2);
                h2load(
                    dir,
                    url,
                    headers,
                    body,
                    clients,
                    concurrency.div_ceil(clients),
                    seconds,
                )
            }
        }
    }
}

/// The Console's `/v1` invoke against nginx proxying to the same gateway,
/// both driven by `wrk` (HTTP/1.1) or `h2load` (HTTP/2) with keep-alive
/// connections, passes alternating; CPU per request is the proxy's utime +
/// stime over the requests it served.
async fn against_nginx(
    args: &Args,
    env: &BenchEnv,
    nginx: &Nginx,
    uid: &str,
    protocol: Protocol,
) -> Result<()> {
    let path = format!("/v1/namespaces/{NS}/runs/{FUNCTION_RUN}/{uid}/invoke");
    let dir = env.state()?.join("bench-nginx");
    let console_url = format!("{}{path}", env.var("CONSOLE_URL")?);
    let nginx_url = format!("https://{}{path}", nginx_listen(env)?);
    let token = env.var("TESTENV_TOKEN_OPERATOR")?;
    let bearer = format!("Bearer {token}");
    let console_headers = [
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];
    // The same request to both: nginx drops the token, as the Console does
    // once it has read it.
    let nginx_headers = console_headers;
    let console_pids = [env.pid("console")?];
    let nginx_pids = nginx.pids()?;
    let gateway = env.pid("gateway")?;
    // Both proxies must speak the same TLS on both legs, or the comparison
    // weighs the protocol versions, not the proxies.
    let console_addr = console_url
        .trim_start_matches("https://")
        .split_once('/')
        .map_or(console_url.as_str(), |(a, _)| a)
        .to_owned();
    let front = [tls_probe(&console_addr)?, tls_probe(&nginx_listen(env)?)?];
    ensure!(
        front[0] == front[1],
        "callers negotiate {} with the Console and {} with nginx",
        front[0],
        front[1]
    );
    for &conns in &args.wrk_concurrency {
        // Warm-up: connections, caches, the upstream keep-alive pools; and
        // the TLS version each proxy's upstream connections negotiated, as
        // the gateway saw it.
        clear_gateway_requests(env)?;
        let console_warm = protocol.pass(&dir, &console_url, &console_headers, conns, 2)?;
        let console_back = gateway_tls_versions(env)?;
        clear_gateway_requests(env)?;
        let nginx_warm = protocol.pass(&dir, &nginx_url, &nginx_headers, conns, 2)?;
        let nginx_back = gateway_tls_versions(env)?;
        ensure!(
            console_back == nginx_back && console_back.len() == 1,
            "the gateway saw TLS {console_back:?} from the Console and {nginx_back:?} from nginx"
        );
        ensure!(
            console_warm.tls == nginx_warm.tls,
            "{}: the client negotiated {:?} with the Console and {:?} with nginx",
            protocol.name(),
            console_warm.tls,
            nginx_warm.tls
        );
        let load = procfs::load_average();
        println!(
            "\nnginx comparison, {}, c={conns}, {} s per pass, {} passes alternating (load {load})",
            protocol.name(),
            args.wrk_seconds,
            args.passes
        );
        println!(
            "TLS: OpenSSL client → proxy {}; {}proxy → gateway {}",
            front[0],
            console_warm
                .tls
                .as_ref()
                .map_or(String::new(), |t| format!("h2load → proxy {t}; ")),
            console_back.iter().next().map_or("", String::as_str),
        );
        let latency = match protocol {
            Protocol::Http1 => "p50 ms | p99 ms",
            Protocol::Http2 => "mean ms | max ms",
        };
        println!("| path | req/s | {latency} | proxy CPU ms/req | gateway CPU ms/req | errors |");
        println!("| --- | --- | --- | --- | --- | --- | --- |");
        let mut rows: [Vec<(f64, f64)>; 2] = [Vec::new(), Vec::new()];
        for _ in 0..args.passes {
            for (i, (name, url, headers, pids)) in [
                (
                    "Console",
                    &console_url,
                    &console_headers[..],
                    &console_pids[..],
                ),
                ("nginx", &nginx_url, &nginx_headers[..], &nginx_pids[..]),
            ]
            .into_iter()
            .enumerate()
            {
                let cpu0 = (cpu_of(pids)?, procfs::cpu_seconds(gateway)?);
                let p = protocol.pass(&dir, url, headers, conns, args.wrk_seconds)?;
                let cpu1 = (cpu_of(pids)?, procfs::cpu_seconds(gateway)?);
                ensure!(p.errors == 0, "{name}: {} errors", p.errors);
                let n = p.requests as f64;
                let cpu = (cpu1.0 - cpu0.0) * 1e3 / n;
                println!(
                    "| {name} | {:.0} | {:.3} | {:.3} | {cpu:.4} | {:.4} | {} |",
                    n / p.seconds,
                    p.p50_ms,
                    p.p99_ms,
                    (cpu1.1 - cpu0.1) * 1e3 / n,
                    p.errors
                );
                rows[i].push((n / p.seconds, cpu));
            }
        }
        let rps = |i: usize| rows[i].iter().map(|r| r.0).collect::<Vec<_>>();
        let cpu = |i: usize| rows[i].iter().map(|r| r.1).collect::<Vec<_>>();
        let ratio = |f: &dyn Fn(&(f64, f64)) -> f64| -> Vec<f64> {
            rows[0]
                .iter()
                .zip(&rows[1])
                .map(|(c, n)| f(c) / f(n))
                .collect()
        };
        println!(
            "SUMMARY nginx {} c={conns}: req/s Console {} nginx {} (Console/nginx {}); CPU ms/req Console {} nginx {} (Console/nginx {})",
            protocol.name(),
            stats::range(&rps(0), 0),
            stats::range(&rps(1), 0),
            stats::range(&ratio(&|r| r.0), 2),
            stats::range(&cpu(0), 4),
            stats::range(&cpu(1), 4),
            stats::range(&ratio(&|r| r.1), 2),
        );
    }
    Ok(())
}

/// Where the nginx peer listens: the gateway's port + 1000, kept in the
/// environment's port range.
fn nginx_listen(env: &BenchEnv) -> Result<String> {
    let gw = env.var("TESTENV_GATEWAY")?;
    let port: u16 = gw
        .rsplit_once(':')
        .and_then(|(_, p)| p.parse().ok())
        .with_context(|| format!("TESTENV_GATEWAY {gw}: no port"))?;
    Ok(format!(
        "127.0.0.1:{}",
        20000 + (port - 20000 + 1000) % 10000
    ))
}

/// The identity the Console forwards for the benchmark's token, as the API
/// server reports it: the direct path and nginx send the gateway the same.
fn operator(env: &BenchEnv) -> Result<Identity> {
    let whoami = env
        .kubectl(env.var("TESTENV_TOKEN_OPERATOR")?)?
        .args(["auth", "whoami", "-o", "json"])
        .output()
        .context("kubectl auth whoami")?;
    ensure!(
        whoami.status.success(),
        "kubectl auth whoami: {}",
        String::from_utf8_lossy(&whoami.stderr)
    );
    Identity::from_whoami(&whoami.stdout)
}

fn start_nginx(env: &BenchEnv, identity: &Identity) -> Result<Nginx> {
    let state = env.state()?;
    let pki = state.join("pki");
    let gw = env.var("TESTENV_GATEWAY")?;
    let upstream = gw.trim_start_matches("https://").to_owned();
    let listen = nginx_listen(env)?;
    let workers = std::thread::available_parallelism().map_or(2, usize::from);
    Nginx::start(&NginxConfig {
        dir: &state.join("bench-nginx"),
        listen: &listen,
        server_cert: &pki.join("console.crt"),
        server_key: &pki.join("console.key"),
        upstream: &upstream,
        upstream_name: "localhost",
        upstream_ca: &pki.join("gateway-ca.crt"),
        client_cert: &pki.join("console.crt"),
        client_key: &pki.join("console.key"),
        workers,
        identity,
    })
}

fn fds(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/fd")).map_or(0, Iterator::count)
}

async fn sockets(args: &Args, env: &BenchEnv, console: &Side, uid: &str) -> Result<()> {
    let path = format!("/v1/namespaces/{NS}/runs/{SESSION_RUN}/{uid}/operations:ws");
    let pid = env.pid("console")?;
    let gw = env.pid("gateway")?;
    println!(
        "\n| cycle | state | sockets | Console VmRSS MiB | Console RssAnon MiB | Console VmHWM MiB | Console fds | gateway RSS MiB | seconds | load |"
    );
    println!("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |");
    let row = |cycle: usize, state: &str, n: usize, secs: f64| -> Result<procfs::Memory> {
        let m = procfs::memory(pid)?;
        let g = procfs::memory(gw)?;
        println!(
            "| {cycle} | {state} | {n} | {} | {} | {} | {} | {} | {secs:.1} | {} |",
            mib(m.rss_kib),
            mib(m.anon_kib),
            mib(m.hwm_kib),
            fds(pid),
            mib(g.rss_kib),
            procfs::load_average()
        );
        Ok(m)
    };
    let mut held = Vec::new();
    for cycle in 1..=args.socket_cycles {
        procfs::reset_peak(pid)?;
        let before = row(cycle, "before", 0, 0.0)?;
        let start = Instant::now();
        let results: Vec<Result<Ws>> = futures::stream::iter(0..args.sockets)
            .map(|_| {
                let path = path.clone();
                async move {
                    let mut ws = open_ws(console, &path).await?;
                    ws.send(send_frame("sleep", &["60"])).await?;
                    wait_event(&mut ws, "accepted").await?;
                    Ok(ws)
                }
            })
            .buffer_unordered(args.open_concurrency)
            .collect()
            .await;
        let opened = start.elapsed().as_secs_f64();
        let mut open = Vec::new();
        let mut failed = 0;
        let mut first_err = None;
        for r in results {
            match r {
                Ok(ws) => open.push(ws),
                Err(e) => {
                    failed += 1;
                    first_err.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_err {
            eprintln!("{failed} sockets failed to open: {e:#}");
        }
        row(
            cycle,
            "all open, each running `sleep 60`",
            open.len(),
            opened,
        )?;
        tokio::time::sleep(Duration::from_secs(5)).await;
        let later = row(cycle, "5 s later", open.len(), opened + 5.0)?;
        if !open.is_empty() {
            let each = |a: u64, b: u64| b.saturating_sub(a) as f64 / open.len() as f64;
            held.push(format!(
                "cycle {cycle}: VmRSS {:.1} KiB, RssAnon {:.1} KiB",
                each(before.rss_kib, later.rss_kib),
                each(before.anon_kib, later.anon_kib)
            ));
        }
        let t = Instant::now();
        futures::stream::iter(open.drain(..))
            .for_each_concurrent(100, |mut ws| async move {
                let _ = tokio::time::timeout(Duration::from_secs(5), ws.close(None)).await;
            })
            .await;
        tokio::time::sleep(Duration::from_secs(3)).await;
        row(cycle, "closed, 3 s later", 0, t.elapsed().as_secs_f64())?;
    }
    println!(
        "\nEach open socket, 5 s after all opened: {}",
        held.join("; ")
    );
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let env = BenchEnv::load(&args.state)?;
    let fx = Fixtures::new(&env, NS).await?;
    let fn_uid = ready_run(&fx, FUNCTION_RUN, json!({"function": {}})).await?;
    let ses_uid = ready_run(&fx, SESSION_RUN, json!({"session": {"leaseSeconds": 60}})).await?;
    let state = env.state()?;
    let pki = state.join("pki");
    let token = env.var("TESTENV_TOKEN_OPERATOR")?;
    // Asked once: the direct path and nginx send the gateway this identity.
    let identity = operator(&env)?;
    let console = Side {
        name: "Console",
        client: TlsClient::new(
            env.var("CONSOLE_URL")?,
            Path::new(env.var("CONSOLE_CA")?),
            None,
        )?,
        headers: vec![
            ("Authorization".into(), format!("Bearer {token}")),
            ("Content-Type".into(), "application/json".into()),
        ],
    };
    let direct = Side {
        name: "direct",
        client: TlsClient::new(
            env.var("TESTENV_GATEWAY")?,
            &pki.join("gateway-ca.crt"),
            Some((&pki.join("console.crt"), &pki.join("console.key"))),
        )?,
        headers: identity
            .fields()
            .into_iter()
            .chain([("Content-Type".into(), "application/json".into())])
            .collect(),
    };
    // The Console's Run cache follows a watch: wait until it sees both Runs Ready.
    let invoke_path = format!("/v1/namespaces/{NS}/runs/{FUNCTION_RUN}/{fn_uid}/invoke");
    let mut conn = console.client.keep_alive();
    for i in 0.. {
        let (status, body) = conn
            .send("POST", &invoke_path, &console.headers(), b"{}")
            .await?;
        if status == 200 {
            break;
        }
        ensure!(
            i < 100,
            "invoke: {status} {}",
            String::from_utf8_lossy(&body)
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let sides = [console, direct];
    let m = procfs::memory(env.pid("console")?)?;
    println!(
        "Console before: VmRSS {} MiB, VmHWM {} MiB (load {}); idle cores: {}",
        mib(m.rss_kib),
        mib(m.hwm_kib),
        procfs::load_average(),
        procfs::idle_config()
    );
    if args.only.iter().any(|o| o == "invoke") {
        invoke(&args, &env, &sides, &fn_uid).await?;
    }
    if args.only.iter().any(|o| o == "ws") {
        let nginx = args
            .only
            .iter()
            .any(|o| o == "nginx")
            .then(|| start_nginx(&env, &identity))
            .transpose()?;
        let via_nginx = match &nginx {
            Some(_) => Some(Side {
                name: "nginx",
                client: TlsClient::new(
                    &format!("https://{}", nginx_listen(&env)?),
                    Path::new(env.var("CONSOLE_CA")?),
                    None,
                )?,
                headers: vec![("Content-Type".into(), "application/json".into())],
            }),
            None => None,
        };
        let mut ws_sides = vec![&sides[0], &sides[1]];
        ws_sides.extend(via_nginx.as_ref());
        ws_round_trips(&args, &ws_sides, &ses_uid).await?;
    }
    if args.only.iter().any(|o| o == "sockets") {
        sockets(&args, &env, &sides[0], &ses_uid).await?;
    }
    let protocols = [("nginx", Protocol::Http1), ("nginx-h2", Protocol::Http2)];
    let wanted: Vec<Protocol> = protocols
        .into_iter()
        .filter(|(part, _)| args.only.iter().any(|o| o == part))
        .map(|(_, p)| p)
        .collect();
    if !wanted.is_empty() {
        let nginx = start_nginx(&env, &identity)?;
        // With `--cpus split` both proxies share core 1, and the gateway
        // and the load generator (a child of this process, which inherits
        // its placement) core 0.
        let split = args.cpus == "split";
        if split {
            place(&args, &env)?;
            for pid in nginx.pids()? {
                pin(pid, "1")?;
            }
            println!(
                "\nnginx comparison placement: proxies on core 1; gateway and load generator on core 0"
            );
        }
        let result = async {
            for protocol in wanted {
                against_nginx(&args, &env, &nginx, &fn_uid, protocol).await?;
            }
            anyhow::Ok(())
        }
        .await;
        if split {
            for pid in [env.pid("console")?, env.pid("gateway")?, std::process::id()]
                .into_iter()
                .chain(nginx.pids()?)
            {
                pin(pid, "0-1")?;
            }
        }
        result?;
    }
    Ok(())
}
