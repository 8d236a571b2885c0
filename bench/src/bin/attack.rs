//! Attacks at the Console's default caps, with its resident memory sampled
//! every second (README.md §8):
//!
//! - `h2-stall`: HTTP/2 clients without credentials that announce a stream
//!   window of 0 (`SETTINGS_INITIAL_WINDOW_SIZE`) and ask for the largest
//!   asset of the web UI, so its answer can never be sent, from one source
//!   address and from sixteen, as many as the connection caps allow;
//! - `stalled-bodies`: `/v1` invokes that announce a 1 MiB body, send 1,000
//!   bytes of it and withhold the rest, from one identity and from sixteen;
//! - `stalled-frames`: `operations:ws` sockets that send the header of a
//!   1,000,000-byte frame and 1,000 bytes of it, then stall, likewise.
//!
//! Each phase records how many were accepted and held, what the Console
//! refused and how (its metrics), when it ended what it held, the Console's
//! VmRSS (every second) and VmHWM, and whether another caller was served
//! meanwhile.
//!
//! Every phase is bounded in count (connections per address or identity)
//! and in time (`--*-hold-secs`); every connection goes to the Console on
//! 127.0.0.1, from source addresses in 127.0.0.0/8. The sixteen identities
//! are ServiceAccounts `bench-attack-N` in `team-a` bound to the operator's
//! ClusterRole; they are deleted at the end.

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use bytes::Bytes;
use clap::Parser;
use futures::{SinkExt, StreamExt};
use k8s_openapi::api::authentication::v1::TokenRequest;
use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::RoleBinding;
use kruntimes_bench::envfile::BenchEnv;
use kruntimes_bench::fixtures::Fixtures;
use kruntimes_bench::http::loopback_addr;
use kruntimes_bench::keepalive::TlsClient;
use kruntimes_bench::procfs::{self, mib};
use kruntimes_bench::stats;
use kube::Api;
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use serde::Serialize;
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::{Semaphore, watch};
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;

type Ws = WebSocketStream<TlsStream<TcpStream>>;

#[derive(Parser)]
struct Args {
    /// The `hack/testenv` state directory (a fresh Console with its default caps).
    #[arg(long, default_value = "target/attack-env")]
    state: PathBuf,
    /// Scenarios to run: h2-stall, stalled-bodies, stalled-frames.
    #[arg(
        long,
        default_value = "h2-stall,stalled-bodies,stalled-frames",
        value_delimiter = ','
    )]
    only: Vec<String>,
    /// Source addresses (h2-stall) or identities (the others) of each phase:
    /// 1 and 16 (127.0.0.2 onwards).
    #[arg(long, default_value = "1,16", value_delimiter = ',')]
    sources: Vec<usize>,
    /// HTTP/2 connections tried from each source address: the default
    /// `--max-connections-per-peer` (256) and 8 more, which it should refuse.
    #[arg(long, default_value_t = 264)]
    h2_per_source: usize,
    /// Stalled streams per HTTP/2 connection.
    #[arg(long, default_value_t = 1)]
    h2_streams: usize,
    /// How long the stalled connections are held at most after the last one
    /// opened (the default `--send-timeout` is 60 s, seen within 120 s).
    #[arg(long, default_value_t = 130)]
    h2_hold_secs: u64,
    /// Withheld invoke bodies per identity (the default
    /// `--access-max-concurrent-calls-per-caller`).
    #[arg(long, default_value_t = 64)]
    bodies_per_identity: usize,
    /// The length each body announces.
    #[arg(long, default_value_t = 1 << 20)]
    body_announced: usize,
    /// Bytes of each body sent before it stalls.
    #[arg(long, default_value_t = 1000)]
    body_sent: usize,
    /// How long the withheld bodies are held at most (the default
    /// `--access-body-timeout` is 30 s).
    #[arg(long, default_value_t = 40)]
    body_hold_secs: u64,
    /// Stalled operation sockets per identity.
    #[arg(long, default_value_t = 64)]
    sockets_per_identity: usize,
    /// The payload length the stalled frame's header announces.
    #[arg(long, default_value_t = 1_000_000)]
    frame_announced: u64,
    /// Payload bytes of the frame sent before it stalls.
    #[arg(long, default_value_t = 1000)]
    frame_sent: usize,
    /// How long the stalled sockets are held at most (the default
    /// `--access-idle-timeout` is 60 s).
    #[arg(long, default_value_t = 70)]
    frame_hold_secs: u64,
    /// Connections being opened at once.
    #[arg(long, default_value_t = 64)]
    open_concurrency: usize,
    /// How often another caller tries to be served during a hold.
    #[arg(long, default_value_t = 5)]
    probe_secs: u64,
    /// Also writes every phase, RSS samples included, as JSON to this file.
    #[arg(long)]
    json: Option<PathBuf>,
}

const NS: &str = "team-a";
const FUNCTION_RUN: &str = "bench-invoke";
const SESSION_RUN: &str = "bench-session";
/// The sixteen identities' ServiceAccounts are `bench-attack-N`, bound by this RoleBinding.
const ROBOT: &str = "bench-attack";
/// Another caller's address in the 16-address HTTP/2 case (outside the attackers').
const VIEWER_ASIDE: Ipv4Addr = Ipv4Addr::new(127, 0, 0, 20);
const BYSTANDER: Ipv4Addr = Ipv4Addr::LOCALHOST;
/// Any single connect, handshake or answer the bench waits for.
const STEP: Duration = Duration::from_secs(10);

/// The attackers' source addresses: 127.0.0.2 onwards.
fn source(i: usize) -> Ipv4Addr {
    assert!(i < 16, "at most 16 source addresses");
    Ipv4Addr::new(127, 0, 0, 2 + i as u8)
}

/// A TLS client of the Console's listener from a chosen loopback address.
#[derive(Clone)]
struct Dialer {
    addr: SocketAddr,
    h1: TlsConnector,
    h2: TlsConnector,
}

impl Dialer {
    fn new(url: &str, ca: &Path) -> Result<Self> {
        let (tls, addr) = loopback_addr(url)?;
        ensure!(tls, "{url}: expected https");
        let pem = std::fs::read(ca).with_context(|| format!("reading {}", ca.display()))?;
        let mut roots = RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(&pem) {
            roots.add(c.context("CA certificate")?)?;
        }
        let config = |alpn: &[u8]| {
            let mut c = rustls::ClientConfig::builder()
                .with_root_certificates(roots.clone())
                .with_no_client_auth();
            c.alpn_protocols = vec![alpn.to_vec()];
            TlsConnector::from(Arc::new(c))
        };
        Ok(Self {
            addr,
            h1: config(b"http/1.1"),
            h2: config(b"h2"),
        })
    }

    async fn tcp(&self, from: Ipv4Addr) -> Result<TcpStream> {
        ensure!(from.is_loopback(), "{from}: not a loopback address");
        let sock = TcpSocket::new_v4()?;
        sock.bind(SocketAddr::new(IpAddr::V4(from), 0))
            .with_context(|| format!("binding {from}"))?;
        let tcp = tokio::time::timeout(STEP, sock.connect(self.addr))
            .await
            .context("connect timed out")??;
        tcp.set_nodelay(true)?;
        Ok(tcp)
    }

    /// TCP and TLS from `from`; an error names the step that failed.
    async fn tls(&self, from: Ipv4Addr, h2: bool) -> Result<TlsStream<TcpStream>, Failure> {
        let tcp = self.tcp(from).await.map_err(|e| Failure::new("tcp", e))?;
        let name = ServerName::IpAddress(self.addr.ip().into());
        let conn = if h2 { &self.h2 } else { &self.h1 };
        match tokio::time::timeout(STEP, conn.connect(name, tcp)).await {
            Ok(Ok(s)) => Ok(s),
            Ok(Err(e)) => Err(Failure::new("tls", e)),
            Err(_) => Err(Failure::new("tls", "handshake timed out")),
        }
    }

    fn host(&self) -> String {
        self.addr.to_string()
    }
}

/// Counts an attempt as tried when dropped (whether it went out or failed).
struct Tried<'a>(&'a AtomicUsize);

impl Drop for Tried<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// Why an attempt was not held: the step and what happened.
#[derive(Debug)]
struct Failure {
    step: &'static str,
    detail: String,
}

impl Failure {
    fn new(step: &'static str, e: impl std::fmt::Display) -> Self {
        Self {
            step,
            detail: e.to_string(),
        }
    }
}

/// VmRSS of the Console, sampled every second until dropped.
struct Sampler {
    samples: Arc<Mutex<Vec<(f64, f64)>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Sampler {
    fn start(pid: u32, t0: Instant) -> Self {
        let samples = Arc::new(Mutex::new(Vec::new()));
        let out = samples.clone();
        let task = tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_secs(1));
            // Bounded by the phase, which aborts it; at most an hour regardless.
            for _ in 0..3600 {
                tick.tick().await;
                if let Ok(m) = procfs::memory(pid) {
                    out.lock()
                        .unwrap()
                        .push((t0.elapsed().as_secs_f64(), m.rss_kib as f64 / 1024.0));
                }
            }
        });
        Self { samples, task }
    }

    fn stop(self) -> Vec<(f64, f64)> {
        self.task.abort();
        self.samples.lock().unwrap().clone()
    }
}

/// One phase of one scenario, as printed and as written to `--json`.
#[derive(Debug, Default, Serialize)]
struct Phase {
    scenario: &'static str,
    /// Source addresses (h2-stall) or identities.
    sources: usize,
    attempted: usize,
    /// Held: an HTTP/2 answer head received (its body stalled), a body or
    /// a socket not answered nor closed by the end of the refusal window.
    held: usize,
    /// HTTP/2 streams held (h2-stall).
    streams_held: usize,
    /// Attempts not held, by how (the client's view: a step that failed,
    /// a status, a close code).
    refused: BTreeMap<String, usize>,
    /// What the Console did with the held ones, by outcome, and when
    /// (seconds after the request, the body or the frame went out).
    ended: BTreeMap<String, usize>,
    ended_after_s: Vec<f64>,
    still_held_at_end: usize,
    open_secs: f64,
    hold_secs: f64,
    rss_before_mib: f64,
    rss_peak_mib: f64,
    rss_sampled_max_mib: f64,
    rss_after_mib: f64,
    rss_samples: Vec<(f64, f64)>,
    /// Metrics of the Console at the check (deltas for counters).
    metrics: BTreeMap<String, f64>,
    /// Gauges once the attackers let go (3 s later).
    metrics_after: BTreeMap<String, f64>,
    /// Another caller's tries during the hold: who, and what each got.
    bystander: String,
    bystander_results: Vec<String>,
    notes: Vec<String>,
}

impl Phase {
    fn bystander_served(&self) -> usize {
        self.bystander_results
            .iter()
            .filter(|r| r.starts_with("ok"))
            .count()
    }
}

/// The sum of the samples of `name` whose labels include all of `labels`.
fn metric(text: &str, name: &str, labels: &[(&str, &str)]) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let rest = l.strip_prefix(name)?;
            let (set, value) = match rest.strip_prefix('{') {
                Some(r) => {
                    let end = r.find('}')?;
                    (&r[..end], &r[end + 1..])
                }
                None => ("", rest),
            };
            let value = value.strip_prefix(' ')?;
            let all = labels.iter().all(|(k, v)| {
                set.split(',')
                    .any(|p| p.split_once('=') == Some((k, &format!("\"{v}\""))))
            });
            all.then(|| value.split_whitespace().next()?.parse::<f64>().ok())?
        })
        .sum::<f64>()
        + 0.0
}

async fn scrape(env: &BenchEnv) -> Result<String> {
    kruntimes_bench::http::get_plain(&format!("{}/metrics", env.var("CONSOLE_ADMIN_URL")?)).await
}

/// The Console listener's metrics a phase looks at (counters to be subtracted).
fn console_metrics(text: &str) -> BTreeMap<String, f64> {
    const P: &str = "kruntimes_console_";
    let mut m = BTreeMap::new();
    for reason in ["max_connections", "max_connections_per_peer"] {
        m.insert(
            format!("connections_refused_total{{reason={reason}}}"),
            metric(
                text,
                &format!("{P}connections_refused_total"),
                &[("listener", "console"), ("reason", reason)],
            ),
        );
    }
    for reason in ["max_open_requests", "max_open_requests_per_peer"] {
        m.insert(
            format!("requests_refused_total{{reason={reason}}}"),
            metric(
                text,
                &format!("{P}requests_refused_total"),
                &[("listener", "console"), ("reason", reason)],
            ),
        );
    }
    m.insert(
        "requests_open".into(),
        metric(
            text,
            &format!("{P}requests_open"),
            &[("listener", "console")],
        ),
    );
    m.insert(
        "connections_open".into(),
        metric(
            text,
            &format!("{P}connections_open"),
            &[("listener", "console")],
        ),
    );
    for cap in ["v1_buffered_bytes", "v1_calls"] {
        for scope in ["total", "per_caller"] {
            m.insert(
                format!("cap_refusals_total{{cap={cap},scope={scope}}}"),
                metric(
                    text,
                    &format!("{P}cap_refusals_total"),
                    &[("cap", cap), ("scope", scope)],
                ),
            );
        }
        m.insert(
            format!("cap_in_use{{cap={cap}}}"),
            metric(text, &format!("{P}cap_in_use"), &[("cap", cap)]),
        );
    }
    m
}

/// Counters as deltas from `before`; gauges as they are.
fn metric_deltas(
    before: &BTreeMap<String, f64>,
    now: &BTreeMap<String, f64>,
) -> BTreeMap<String, f64> {
    now.iter()
        .map(|(k, v)| {
            let d = if k.contains("_total") {
                v - before.get(k).copied().unwrap_or(0.0)
            } else {
                *v
            };
            (k.clone(), d)
        })
        .collect()
}

/// The flag a refusal's message names (`… --flag sets it …`).
fn named_flag(body: &str) -> String {
    body.find(" sets it")
        .and_then(|i| body[..i].rsplit(' ').next())
        .filter(|f| f.starts_with("--"))
        .map_or_else(|| body.chars().take(80).collect::<String>(), str::to_owned)
}

/// The phase's start: VmHWM reset, RSS before, sampler, metrics before.
struct Start {
    t0: Instant,
    sampler: Sampler,
    rss_before: f64,
    metrics: BTreeMap<String, f64>,
}

async fn begin(env: &BenchEnv) -> Result<Start> {
    let pid = env.pid("console")?;
    // Settle: what the previous phase left is closed and its memory given
    // back (it takes a few seconds): at least 5 s, then until three samples
    // a second apart are within 0.5 MiB, at most 20 s.
    let mut last = Vec::new();
    for i in 0..20 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        last.push(procfs::memory(pid)?.rss_kib as f64 / 1024.0);
        let tail = &last[last.len().saturating_sub(3)..];
        if i >= 4 && stats::max(tail) - stats::min(tail) < 0.5 {
            break;
        }
    }
    procfs::reset_peak(pid)?;
    let m = procfs::memory(pid)?;
    let t0 = Instant::now();
    Ok(Start {
        t0,
        sampler: Sampler::start(pid, t0),
        rss_before: m.rss_kib as f64 / 1024.0,
        metrics: console_metrics(&scrape(env).await?),
    })
}

/// Fills the memory columns once every attacker let go (3 s later).
async fn finish(env: &BenchEnv, start: Start, phase: &mut Phase) -> Result<()> {
    let pid = env.pid("console")?;
    let peak = procfs::memory(pid)?.hwm_kib as f64 / 1024.0;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let after = procfs::memory(pid)?;
    let samples = start.sampler.stop();
    phase.rss_before_mib = start.rss_before;
    phase.rss_peak_mib = peak.max(after.hwm_kib as f64 / 1024.0);
    phase.rss_sampled_max_mib = samples.iter().map(|s| s.1).fold(0.0, f64::max);
    phase.rss_after_mib = after.rss_kib as f64 / 1024.0;
    phase.rss_samples = samples;
    let now = console_metrics(&scrape(env).await?);
    for key in [
        "connections_open",
        "cap_in_use{cap=v1_buffered_bytes}",
        "cap_in_use{cap=v1_calls}",
    ] {
        phase
            .metrics_after
            .insert(key.to_owned(), now.get(key).copied().unwrap_or(0.0));
    }
    Ok(())
}

// ---------------------------------------------------------------- h2-stall

/// The largest asset the web UI's `index.html` refers to: its path and size.
async fn largest_asset(d: &Dialer) -> Result<(String, usize)> {
    let get = |path: String| async move {
        let tls = d
            .tls(BYSTANDER, false)
            .await
            .map_err(|f| anyhow::anyhow!("{f:?}"))?;
        let resp = kruntimes_bench::http::request(tls, &d.host(), &path, None).await?;
        ensure!(resp.status == 200, "GET {path}: {}", resp.status);
        resp.body.read_all().await
    };
    let index = String::from_utf8_lossy(&get("/".into()).await?).into_owned();
    let mut best = None;
    for part in index.split("\"/assets/").skip(1).take(32) {
        let Some(end) = part.find('"') else { continue };
        let path = format!("/assets/{}", &part[..end]);
        let len = get(path.clone()).await?.len();
        if best.as_ref().is_none_or(|(_, l)| len > *l) {
            best = Some((path, len));
        }
    }
    best.context("index.html refers to no /assets/ file")
}

/// One stalled HTTP/2 connection: kept alive while the phase holds it.
struct H2Held {
    _send: h2::client::SendRequest<Bytes>,
    bodies: Vec<h2::RecvStream>,
    /// Streams answered 503 (a cap on open requests), not held.
    crowded: usize,
    head_at: Instant,
    ended: Arc<Mutex<Option<(Instant, String)>>>,
}

async fn h2_open(
    d: &Dialer,
    from: Ipv4Addr,
    asset: &str,
    streams: usize,
) -> Result<H2Held, Failure> {
    let tls = d.tls(from, true).await?;
    if tls.get_ref().1.alpn_protocol() != Some(&b"h2"[..]) {
        return Err(Failure::new("alpn", "the server did not agree to h2"));
    }
    let (send, conn) = h2::client::Builder::new()
        // SETTINGS_INITIAL_WINDOW_SIZE = 0: no stream may send DATA.
        .initial_window_size(0)
        .handshake::<_, Bytes>(tls)
        .await
        .map_err(|e| Failure::new("h2", e))?;
    let ended = Arc::new(Mutex::new(None));
    let mark = ended.clone();
    // Driving the connection answers the Console's PINGs.
    tokio::spawn(async move {
        let how = match conn.await {
            Ok(()) => "closed".to_owned(),
            Err(e) if e.is_go_away() => format!("goaway {:?}", e.reason()),
            Err(e) if e.is_io() => "reset".to_owned(),
            Err(e) => format!("error {:?}", e.reason()),
        };
        *mark.lock().unwrap() = Some((Instant::now(), how));
    });
    let mut bodies = Vec::with_capacity(streams);
    let mut crowded = 0;
    let mut head_at = Instant::now();
    for _ in 0..streams {
        let req = http::Request::builder()
            .method("GET")
            .uri(format!("https://{}{asset}", d.host()))
            .body(())
            .map_err(|e| Failure::new("request", e))?;
        let mut ready = tokio::time::timeout(STEP, send.clone().ready())
            .await
            .map_err(|_| Failure::new("h2", "no stream available"))?
            .map_err(|e| Failure::new("h2", e))?;
        let (resp, _) = ready
            .send_request(req, true)
            .map_err(|e| Failure::new("h2", e))?;
        let resp = tokio::time::timeout(STEP, resp)
            .await
            .map_err(|_| Failure::new("head", "no answer head"))?
            .map_err(|e| Failure::new("head", e))?;
        // Refused by a cap on open requests: the connection keeps the
        // streams it holds and tries the next.
        if resp.status() == 503 {
            crowded += 1;
            continue;
        }
        if resp.status() != 200 {
            return Err(Failure::new("status", resp.status()));
        }
        head_at = Instant::now();
        bodies.push(resp.into_body());
    }
    if bodies.is_empty() {
        return Err(Failure::new("every stream 503", "refused"));
    }
    Ok(H2Held {
        _send: send,
        bodies,
        crowded,
        head_at,
        ended,
    })
}

/// An authenticated viewer's `GET /api/namespaces` from `from`.
async fn viewer_get(d: &Dialer, from: Ipv4Addr, token: &str) -> String {
    let t = Instant::now();
    let r = async {
        let tls = d
            .tls(from, false)
            .await
            .map_err(|f| anyhow::anyhow!("{}: {}", f.step, f.detail))?;
        let resp =
            kruntimes_bench::http::request(tls, &d.host(), "/api/namespaces", Some(token)).await?;
        let status = resp.status;
        resp.body.read_all().await?;
        anyhow::Ok(status)
    };
    match tokio::time::timeout(STEP, r).await {
        Ok(Ok(200)) => format!("ok {:.0} ms", t.elapsed().as_secs_f64() * 1e3),
        Ok(Ok(s)) => format!("status {s}"),
        Ok(Err(e)) => format!("failed: {e:#}"),
        Err(_) => "no answer in 10 s".into(),
    }
}

async fn h2_stall(args: &Args, env: &BenchEnv, d: &Dialer, sources: usize) -> Result<Phase> {
    let (asset, size) = largest_asset(d).await?;
    let viewer = env.var("TESTENV_TOKEN_VIEWER")?.to_owned();
    let viewer_from = if sources == 1 {
        BYSTANDER
    } else {
        VIEWER_ASIDE
    };
    let mut phase = Phase {
        scenario: "h2-stall",
        sources,
        attempted: sources * args.h2_per_source,
        bystander: format!("viewer GET /api/namespaces from {viewer_from}"),
        ..Phase::default()
    };
    phase.notes.push(format!(
        "GET {asset} ({size} bytes), {} stream(s) per connection, SETTINGS_INITIAL_WINDOW_SIZE=0, no credential",
        args.h2_streams
    ));
    // Round-robin over the addresses, so that the total is approached evenly.
    let order: Vec<Ipv4Addr> = (0..args.h2_per_source)
        .flat_map(|_| (0..sources).map(source))
        .collect();
    let start = begin(env).await?;
    let results: Vec<Result<H2Held, Failure>> = futures::stream::iter(order)
        .map(|from| {
            let asset = asset.clone();
            async move { h2_open(d, from, &asset, args.h2_streams).await }
        })
        .buffer_unordered(args.open_concurrency)
        .collect()
        .await;
    phase.open_secs = start.t0.elapsed().as_secs_f64();
    let mut held = Vec::new();
    for r in results {
        match r {
            Ok(h) => {
                if h.crowded > 0 {
                    *phase.refused.entry("streams 503".to_owned()).or_default() += h.crowded;
                }
                phase.streams_held += h.bodies.len();
                held.push(h)
            }
            Err(f) => *phase.refused.entry(f.step.to_owned()).or_default() += 1,
        }
    }
    phase.held = held.len();
    let opened = Instant::now();
    tokio::time::sleep(Duration::from_secs(2)).await;
    phase.metrics = metric_deltas(&start.metrics, &console_metrics(&scrape(env).await?));
    // Hold until the Console ended every connection, or the bound.
    let deadline = opened + Duration::from_secs(args.h2_hold_secs);
    let mut next_probe = Instant::now();
    while Instant::now() < deadline {
        if Instant::now() >= next_probe {
            phase
                .bystander_results
                .push(viewer_get(d, viewer_from, &viewer).await);
            next_probe += Duration::from_secs(args.probe_secs);
        }
        let left = held
            .iter()
            .filter(|h| h.ended.lock().unwrap().is_none())
            .count();
        if left == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    phase.hold_secs = opened.elapsed().as_secs_f64();
    for h in &held {
        match &*h.ended.lock().unwrap() {
            Some((at, how)) => {
                *phase.ended.entry(how.clone()).or_default() += 1;
                phase
                    .ended_after_s
                    .push(at.saturating_duration_since(h.head_at).as_secs_f64());
            }
            None => phase.still_held_at_end += 1,
        }
    }
    drop(held);
    // One more try once the attack is over.
    phase.notes.push(format!(
        "viewer after the attack: {}",
        viewer_get(d, viewer_from, &viewer).await
    ));
    finish(env, start, &mut phase).await?;
    Ok(phase)
}

// ------------------------------------------------------------ identities

/// Callers that attack: a name (the Console's user name), a token and a source address.
#[derive(Clone)]
struct Identity {
    user: String,
    token: String,
    from: Ipv4Addr,
}

/// `n` ServiceAccounts bound to the operator's ClusterRole in `team-a`, with tokens.
async fn robots(fx: &Fixtures, n: usize) -> Result<Vec<Identity>> {
    let sas: Api<ServiceAccount> = Api::namespaced(fx.client.clone(), NS);
    let rbs: Api<RoleBinding> = Api::namespaced(fx.client.clone(), NS);
    remove_robots(fx, 16).await;
    let subjects: Vec<Value> = (0..n)
        .map(|i| json!({"kind": "ServiceAccount", "name": format!("{ROBOT}-{i}"), "namespace": NS}))
        .collect();
    let rb: RoleBinding = serde_json::from_value(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": ROBOT},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kruntimes-operator"},
        "subjects": subjects,
    }))?;
    rbs.create(&PostParams::default(), &rb)
        .await
        .context("creating the RoleBinding")?;
    let mut out = Vec::new();
    for i in 0..n {
        let name = format!("{ROBOT}-{i}");
        let sa: ServiceAccount = serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": name},
        }))?;
        sas.create(&PostParams::default(), &sa)
            .await
            .with_context(|| format!("creating ServiceAccount {name}"))?;
        let tr: TokenRequest = serde_json::from_value(json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "spec": {"expirationSeconds": 3600},
        }))?;
        let tr = sas
            .create_token_request(&name, &PostParams::default(), &tr)
            .await
            .with_context(|| format!("a token for {name}"))?;
        let token = tr.status.context("TokenRequest without a status")?.token;
        out.push(Identity {
            user: format!("system:serviceaccount:{NS}:{name}"),
            token,
            from: source(i),
        });
    }
    Ok(out)
}

async fn remove_robots(fx: &Fixtures, n: usize) {
    let sas: Api<ServiceAccount> = Api::namespaced(fx.client.clone(), NS);
    let rbs: Api<RoleBinding> = Api::namespaced(fx.client.clone(), NS);
    let _ = rbs.delete(ROBOT, &DeleteParams::default()).await;
    for i in 0..n {
        let _ = sas
            .delete(&format!("{ROBOT}-{i}"), &DeleteParams::default())
            .await;
    }
}

/// A Ready Run of runtime `bash` in `mode`; its UID (as bench-access makes it).
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

/// A small invoke as `token` from 127.0.0.1: `ok …` on 200.
async fn small_invoke(client: &TlsClient, path: &str, token: &str) -> String {
    let bearer = format!("Bearer {token}");
    let headers = [
        ("Authorization", bearer.as_str()),
        ("Content-Type", "application/json"),
    ];
    let t = Instant::now();
    let mut conn = client.keep_alive();
    match tokio::time::timeout(STEP, conn.send("POST", path, &headers, br#"{"x":1}"#)).await {
        Ok(Ok((200, _))) => format!("ok {:.0} ms", t.elapsed().as_secs_f64() * 1e3),
        Ok(Ok((s, body))) => format!("status {s} {}", named_flag(&String::from_utf8_lossy(&body))),
        Ok(Err(e)) => format!("failed: {e:#}"),
        Err(_) => "no answer in 10 s".into(),
    }
}

/// Waits until every identity is served a small invoke (RBAC reached the
/// authorizer; the caches hold the answers).
async fn until_served(client: &TlsClient, path: &str, ids: &[Identity]) -> Result<()> {
    for id in ids {
        let mut last = String::new();
        for _ in 0..100 {
            last = small_invoke(client, path, &id.token).await;
            if last.starts_with("ok") {
                break;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        ensure!(last.starts_with("ok"), "{} is not served: {last}", id.user);
    }
    Ok(())
}

// ------------------------------------------------------------ stalled-bodies

/// How many each identity held, in the order of the identities.
fn held_per_identity(held_by: &[usize]) -> String {
    let each: Vec<String> = held_by.iter().map(usize::to_string).collect();
    format!(
        "held per identity: {} (at most {} by one)",
        each.join(", "),
        held_by.iter().max().copied().unwrap_or(0)
    )
}

/// What became of one withheld body: when it went out, and the answer (if any).
struct BodyOutcome {
    sent_at: Option<Instant>,
    answer: Result<Option<(Instant, u16, String)>, Failure>,
}

async fn withheld_body(
    d: &Dialer,
    id: &Identity,
    head: &str,
    sent: &[u8],
    gate: &Semaphore,
    tried: &AtomicUsize,
    mut stop: watch::Receiver<bool>,
) -> BodyOutcome {
    let permit = gate.acquire().await;
    let tried_guard = Tried(tried);
    let mut tls = match d.tls(id.from, false).await {
        Ok(t) => t,
        Err(f) => {
            return BodyOutcome {
                sent_at: None,
                answer: Err(f),
            };
        }
    };
    let wrote = async {
        tls.write_all(head.as_bytes()).await?;
        tls.write_all(sent).await?;
        tls.flush().await
    }
    .await;
    if let Err(e) = wrote {
        return BodyOutcome {
            sent_at: None,
            answer: Err(Failure::new("write", e)),
        };
    }
    let sent_at = Instant::now();
    drop(permit);
    drop(tried_guard);
    let answer = async {
        let resp = kruntimes_bench::http::read_response(tls, Vec::new()).await?;
        let at = Instant::now();
        let status = resp.status;
        let body = tokio::time::timeout(Duration::from_secs(2), resp.body.read_all())
            .await
            .ok()
            .and_then(Result::ok)
            .unwrap_or_default();
        anyhow::Ok((at, status, String::from_utf8_lossy(&body).into_owned()))
    };
    let answer = tokio::select! {
        r = answer => r.map(Some).map_err(|e| Failure::new("answer", format!("{e:#}"))),
        _ = stop.wait_for(|s| *s) => Ok(None),
    };
    BodyOutcome {
        sent_at: Some(sent_at),
        answer,
    }
}

async fn stalledbodies(
    args: &Args,
    env: &BenchEnv,
    d: &Dialer,
    ids: &[Identity],
    bystanders: &[(&str, String)],
    client: &TlsClient,
    path: &str,
) -> Result<Phase> {
    let mut phase = Phase {
        scenario: "stalled-bodies",
        sources: ids.len(),
        attempted: ids.len() * args.bodies_per_identity,
        bystander: format!(
            "small invoke by {} from {BYSTANDER}",
            bystanders
                .iter()
                .map(|b| b.0)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ..Phase::default()
    };
    phase.notes.push(format!(
        "POST {path}: Content-Length {}, {} bytes sent, the rest withheld; {} per identity ({})",
        args.body_announced,
        args.body_sent,
        args.bodies_per_identity,
        ids.iter()
            .map(|i| format!("{} from {}", i.user, i.from))
            .collect::<Vec<_>>()
            .join(", ")
    ));
    let sent = vec![b' '; args.body_sent];
    let gate = Arc::new(Semaphore::new(args.open_concurrency));
    let tried = Arc::new(AtomicUsize::new(0));
    let (stop_tx, stop_rx) = watch::channel(false);
    let start = begin(env).await?;
    let mut tasks = Vec::new();
    for id in ids {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {}\r\n\
             Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
            d.host(),
            id.token,
            args.body_announced
        );
        for _ in 0..args.bodies_per_identity {
            let (d, id, head, sent, gate, stop) = (
                d.clone(),
                id.clone(),
                head.clone(),
                sent.clone(),
                gate.clone(),
                stop_rx.clone(),
            );
            let tried = tried.clone();
            tasks.push(tokio::spawn(async move {
                withheld_body(&d, &id, &head, &sent, &gate, &tried, stop).await
            }));
        }
    }
    // Every body out: then the refusals come within 5 s (a refusal waits
    // for up to 64 KiB of the body that long).
    let opened_by = Instant::now() + Duration::from_secs(60);
    while tried.load(Ordering::Relaxed) < phase.attempted && Instant::now() < opened_by {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    phase.open_secs = start.t0.elapsed().as_secs_f64();
    let opened = Instant::now();
    tokio::time::sleep(Duration::from_secs(7)).await;
    phase.metrics = metric_deltas(&start.metrics, &console_metrics(&scrape(env).await?));
    let deadline = opened + Duration::from_secs(args.body_hold_secs);
    let mut next_probe = Instant::now();
    while Instant::now() < deadline {
        if Instant::now() >= next_probe {
            for (who, token) in bystanders {
                let r = small_invoke(client, path, token).await;
                phase.bystander_results.push(format!("{r} ({who})"));
            }
            next_probe += Duration::from_secs(args.probe_secs);
        }
        if tasks.iter().all(tokio::task::JoinHandle::is_finished) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    phase.hold_secs = opened.elapsed().as_secs_f64();
    let _ = stop_tx.send(true);
    let check = opened + Duration::from_secs(7);
    let mut held_by = vec![0usize; ids.len()];
    for (i, t) in tasks.into_iter().enumerate() {
        let o = t.await?;
        let held = matches!(&o.answer, Ok(None))
            || matches!(&o.answer, Ok(Some((at, status, _))) if *at > check || *status == 408);
        held_by[i / args.bodies_per_identity] += usize::from(held);
        match o.answer {
            Err(f) => *phase.refused.entry(f.step.to_owned()).or_default() += 1,
            Ok(None) => {
                phase.held += 1;
                phase.still_held_at_end += 1;
            }
            Ok(Some((at, status, body))) if at <= check && status != 408 => {
                let how = if status == 429 {
                    format!("429 {}", named_flag(&body))
                } else {
                    format!("{status}")
                };
                *phase.refused.entry(how).or_default() += 1;
            }
            Ok(Some((at, status, body))) => {
                phase.held += 1;
                let how = if status == 408 {
                    "408".to_owned()
                } else {
                    format!("{status} {}", named_flag(&body))
                };
                *phase.ended.entry(how).or_default() += 1;
                if let Some(s) = o.sent_at {
                    phase
                        .ended_after_s
                        .push(at.saturating_duration_since(s).as_secs_f64());
                }
            }
        }
    }
    phase.notes.push(held_per_identity(&held_by));
    for (who, token) in bystanders {
        let r = small_invoke(client, path, token).await;
        phase.notes.push(format!("{who} after the attack: {r}"));
    }
    finish(env, start, &mut phase).await?;
    Ok(phase)
}

// ------------------------------------------------------------ stalled-frames

struct FrameOutcome {
    sent_at: Option<Instant>,
    /// A refused upgrade or a failed step; else how the socket ended (if it did).
    end: Result<Option<(Instant, String)>, Failure>,
}

async fn ws_connect(d: &Dialer, from: Ipv4Addr, path: &str, token: &str) -> Result<Ws, Failure> {
    let tls = d.tls(from, false).await?;
    let mut req = format!("wss://{}{path}", d.host())
        .into_client_request()
        .map_err(|e| Failure::new("request", e))?;
    req.headers_mut().insert(
        "authorization",
        format!("Bearer {token}")
            .parse()
            .map_err(|e| Failure::new("request", e))?,
    );
    match tokio::time::timeout(STEP, tokio_tungstenite::client_async(req, tls)).await {
        Ok(Ok((ws, _))) => Ok(ws),
        Ok(Err(tokio_tungstenite::tungstenite::Error::Http(resp))) => {
            let body = resp
                .body()
                .as_ref()
                .map(|b| String::from_utf8_lossy(b).into_owned())
                .unwrap_or_default();
            Err(Failure {
                step: "upgrade",
                detail: format!("{} {}", resp.status().as_u16(), named_flag(&body)),
            })
        }
        Ok(Err(e)) => Err(Failure::new("upgrade", e)),
        Err(_) => Err(Failure::new("upgrade", "timed out")),
    }
}

async fn stalled_frame(
    d: &Dialer,
    id: &Identity,
    path: &str,
    frame: &[u8],
    gate: &Semaphore,
    tried: &AtomicUsize,
    mut stop: watch::Receiver<bool>,
) -> FrameOutcome {
    let permit = gate.acquire().await;
    let tried_guard = Tried(tried);
    let mut ws = match ws_connect(d, id.from, path, &id.token).await {
        Ok(ws) => ws,
        Err(f) => {
            return FrameOutcome {
                sent_at: None,
                end: Err(f),
            };
        }
    };
    let wrote = async {
        ws.get_mut().write_all(frame).await?;
        ws.get_mut().flush().await
    }
    .await;
    if let Err(e) = wrote {
        return FrameOutcome {
            sent_at: None,
            end: Err(Failure::new("write", e)),
        };
    }
    let sent_at = Instant::now();
    drop(permit);
    drop(tried_guard);
    let ended = async {
        // Bounded by the phase's stop; the Console sends nothing unasked.
        loop {
            match ws.next().await {
                Some(Ok(Message::Close(c))) => {
                    return c.map_or_else(
                        || "close without a code".to_owned(),
                        |c| format!("close {}", u16::from(c.code)),
                    );
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return format!("error: {e}"),
                None => return "ended".to_owned(),
            }
        }
    };
    let end = tokio::select! {
        how = ended => Ok(Some((Instant::now(), how))),
        _ = stop.wait_for(|s| *s) => Ok(None),
    };
    FrameOutcome {
        sent_at: Some(sent_at),
        end,
    }
}

/// Another caller's session: open, `echo`, its `terminal` with exit code 0.
async fn small_session(client: &TlsClient, path: &str, token: &str) -> String {
    let bearer = format!("Bearer {token}");
    let t = Instant::now();
    let r = async {
        let mut ws = client
            .websocket(path, &[("Authorization", bearer.as_str())])
            .await?;
        ws.send(Message::Text(
            json!({"type": "send", "operation": {"command": "echo", "args": ["x"]}})
                .to_string()
                .into(),
        ))
        .await?;
        // At most 100 events before the terminal one.
        for _ in 0..100 {
            let msg = ws.next().await.context("socket closed")??;
            let text = match msg {
                Message::Text(t) => t.as_str().to_owned(),
                Message::Close(c) => bail!("closed: {c:?}"),
                _ => continue,
            };
            let v: Value = serde_json::from_str(&text)?;
            if v.get("type").and_then(Value::as_str) == Some("terminal") {
                ensure!(
                    v.get("exitCode").and_then(Value::as_i64) == Some(0),
                    "terminal {text}"
                );
                ws.close(None).await.ok();
                return Ok(());
            }
        }
        bail!("no terminal event")
    };
    match tokio::time::timeout(STEP, r).await {
        Ok(Ok(())) => format!("ok {:.0} ms", t.elapsed().as_secs_f64() * 1e3),
        Ok(Err(e)) => format!("failed: {e:#}"),
        Err(_) => "no terminal in 10 s".into(),
    }
}

#[allow(clippy::too_many_arguments)]
async fn stalled_frames(
    args: &Args,
    env: &BenchEnv,
    d: &Dialer,
    ids: &[Identity],
    bystanders: &[(&str, String)],
    client: &TlsClient,
    path: &str,
    invoke: &str,
) -> Result<Phase> {
    let mut phase = Phase {
        scenario: "stalled-frames",
        sources: ids.len(),
        attempted: ids.len() * args.sockets_per_identity,
        bystander: format!(
            "operations:ws echo and small invoke by {} from {BYSTANDER}",
            bystanders
                .iter()
                .map(|b| b.0)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        ..Phase::default()
    };
    // A masked binary frame announcing `frame_announced` bytes, and the first of them.
    let mut frame = vec![0x82, 0xFF];
    frame.extend_from_slice(&args.frame_announced.to_be_bytes());
    frame.extend_from_slice(&[1, 2, 3, 4]);
    frame.extend(std::iter::repeat_n(0u8, args.frame_sent));
    phase.notes.push(format!(
        "{path}: a binary frame announcing {} bytes, {} sent, then nothing; {} sockets per identity",
        args.frame_announced, args.frame_sent, args.sockets_per_identity
    ));
    let gate = Arc::new(Semaphore::new(args.open_concurrency));
    let tried = Arc::new(AtomicUsize::new(0));
    let (stop_tx, stop_rx) = watch::channel(false);
    let start = begin(env).await?;
    let mut tasks = Vec::new();
    for id in ids {
        for _ in 0..args.sockets_per_identity {
            let (d, id, path, frame, gate, stop) = (
                d.clone(),
                id.clone(),
                path.to_owned(),
                frame.clone(),
                gate.clone(),
                stop_rx.clone(),
            );
            let tried = tried.clone();
            tasks.push(tokio::spawn(async move {
                stalled_frame(&d, &id, &path, &frame, &gate, &tried, stop).await
            }));
        }
    }
    let opened_by = Instant::now() + Duration::from_secs(60);
    while tried.load(Ordering::Relaxed) < phase.attempted && Instant::now() < opened_by {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    phase.open_secs = start.t0.elapsed().as_secs_f64();
    let opened = Instant::now();
    tokio::time::sleep(Duration::from_secs(3)).await;
    phase.metrics = metric_deltas(&start.metrics, &console_metrics(&scrape(env).await?));
    let deadline = opened + Duration::from_secs(args.frame_hold_secs);
    let mut next_probe = Instant::now();
    while Instant::now() < deadline {
        if Instant::now() >= next_probe {
            for (who, token) in bystanders {
                let r = small_session(client, path, token).await;
                phase.bystander_results.push(format!("{r} (ws, {who})"));
                let r = small_invoke(client, invoke, token).await;
                phase.bystander_results.push(format!("{r} (invoke, {who})"));
            }
            next_probe += Duration::from_secs(args.probe_secs);
        }
        if tasks.iter().all(tokio::task::JoinHandle::is_finished) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    phase.hold_secs = opened.elapsed().as_secs_f64();
    let _ = stop_tx.send(true);
    let check = opened + Duration::from_secs(3);
    let mut held_by = vec![0usize; ids.len()];
    for (i, t) in tasks.into_iter().enumerate() {
        let o = t.await?;
        let held = matches!(&o.end, Ok(None)) || matches!(&o.end, Ok(Some((at, _))) if *at > check);
        held_by[i / args.sockets_per_identity] += usize::from(held);
        match o.end {
            Err(f) => {
                let key = if f.step == "upgrade" {
                    format!("upgrade {}", f.detail)
                } else {
                    f.step.to_owned()
                };
                *phase.refused.entry(key).or_default() += 1;
            }
            Ok(None) => {
                phase.held += 1;
                phase.still_held_at_end += 1;
            }
            Ok(Some((at, how))) if at <= check => {
                *phase.refused.entry(how).or_default() += 1;
            }
            Ok(Some((at, how))) => {
                phase.held += 1;
                *phase.ended.entry(how).or_default() += 1;
                if let Some(s) = o.sent_at {
                    phase
                        .ended_after_s
                        .push(at.saturating_duration_since(s).as_secs_f64());
                }
            }
        }
    }
    phase.notes.push(held_per_identity(&held_by));
    finish(env, start, &mut phase).await?;
    Ok(phase)
}

// ------------------------------------------------------------------ report

fn counts(m: &BTreeMap<String, usize>) -> String {
    if m.is_empty() {
        return "—".into();
    }
    m.iter()
        .map(|(k, v)| format!("{v} {k}"))
        .collect::<Vec<_>>()
        .join("; ")
}

fn ended(p: &Phase) -> String {
    if p.ended_after_s.is_empty() {
        return "—".into();
    }
    format!(
        "{} after {:.1} / {:.1} / {:.1} s",
        counts(&p.ended),
        stats::min(&p.ended_after_s),
        stats::median(&p.ended_after_s),
        stats::max(&p.ended_after_s)
    )
}

fn memory(p: &Phase) -> String {
    format!(
        "{:.1} / {:.1} / {:.1} / {:.1}",
        p.rss_before_mib, p.rss_sampled_max_mib, p.rss_peak_mib, p.rss_after_mib
    )
}

fn bystander(p: &Phase) -> String {
    let n = p.bystander_results.len();
    let served = p.bystander_served();
    let mut failed: BTreeMap<String, usize> = BTreeMap::new();
    for r in p.bystander_results.iter().filter(|r| !r.starts_with("ok")) {
        *failed.entry(r.clone()).or_default() += 1;
    }
    if failed.is_empty() {
        format!("{served}/{n} served")
    } else {
        format!("{served}/{n} served; {}", counts(&failed))
    }
}

fn m(p: &Phase, key: &str) -> f64 {
    p.metrics.get(key).copied().unwrap_or(0.0)
}

fn print_phases(phases: &[Phase]) {
    for scenario in ["h2-stall", "stalled-bodies", "stalled-frames"] {
        let rows: Vec<&Phase> = phases.iter().filter(|p| p.scenario == scenario).collect();
        if rows.is_empty() {
            continue;
        }
        println!("\n### {scenario}\n");
        for p in &rows {
            for n in &p.notes {
                println!("- {} × {}: {n}", p.sources, p.scenario);
            }
        }
        println!();
        match scenario {
            "h2-stall" => {
                println!(
                    "| source addresses | tried | held (head 200, body stalled) | streams held | not held (client's view) | refused at accept: per peer / total | requests refused 503: per peer / total | open at check: connections / requests | ended by the Console: how, after min / p50 / max | still held at the bound | hold s | VmRSS MiB before / max sampled / VmHWM / after | viewer served |"
                );
                println!(
                    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
                );
                for p in &rows {
                    println!(
                        "| {} | {} | {} | {} | {} | {:.0} / {:.0} | {:.0} / {:.0} | {:.0} / {:.0} | {} | {} | {:.0} | {} | {} |",
                        p.sources,
                        p.attempted,
                        p.held,
                        p.streams_held,
                        counts(&p.refused),
                        m(
                            p,
                            "connections_refused_total{reason=max_connections_per_peer}"
                        ),
                        m(p, "connections_refused_total{reason=max_connections}"),
                        m(
                            p,
                            "requests_refused_total{reason=max_open_requests_per_peer}"
                        ),
                        m(p, "requests_refused_total{reason=max_open_requests}"),
                        m(p, "connections_open"),
                        m(p, "requests_open"),
                        ended(p),
                        p.still_held_at_end,
                        p.hold_secs,
                        memory(p),
                        bystander(p),
                    );
                }
            }
            _ => {
                println!(
                    "| identities | tried | held | refused (client's view) | buffered MiB in use at check | calls in use | cap refusals v1_buffered_bytes: per caller / total | v1_calls: per caller / total | ended by the Console: how, after min / p50 / max | still held at the bound | hold s | VmRSS MiB before / max sampled / VmHWM / after | other caller served |"
                );
                println!(
                    "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |"
                );
                for p in &rows {
                    println!(
                        "| {} | {} | {} | {} | {:.1} | {:.0} | {:.0} / {:.0} | {:.0} / {:.0} | {} | {} | {:.0} | {} | {} |",
                        p.sources,
                        p.attempted,
                        p.held,
                        counts(&p.refused),
                        m(p, "cap_in_use{cap=v1_buffered_bytes}") / 1048576.0,
                        m(p, "cap_in_use{cap=v1_calls}"),
                        m(
                            p,
                            "cap_refusals_total{cap=v1_buffered_bytes,scope=per_caller}"
                        ),
                        m(p, "cap_refusals_total{cap=v1_buffered_bytes,scope=total}"),
                        m(p, "cap_refusals_total{cap=v1_calls,scope=per_caller}"),
                        m(p, "cap_refusals_total{cap=v1_calls,scope=total}"),
                        ended(p),
                        p.still_held_at_end,
                        p.hold_secs,
                        memory(p),
                        bystander(p),
                    );
                }
            }
        }
        println!();
        for p in &rows {
            let curve: Vec<String> = p
                .rss_samples
                .iter()
                .step_by(5)
                .map(|(t, r)| format!("{t:.0}s {r:.1}"))
                .collect();
            println!(
                "- {} × {}: opened in {:.1} s; VmRSS every 5 s (MiB): {}; after: {}",
                p.sources,
                p.scenario,
                p.open_secs,
                curve.join(", "),
                p.metrics_after
                    .iter()
                    .map(|(k, v)| format!("{k} {v:.0}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            let mut fails: BTreeMap<&str, usize> = BTreeMap::new();
            for r in p.bystander_results.iter().filter(|r| !r.starts_with("ok")) {
                *fails.entry(r.as_str()).or_default() += 1;
            }
            println!(
                "  {}: {}/{} served{}",
                p.bystander,
                p.bystander_served(),
                p.bystander_results.len(),
                if fails.is_empty() {
                    String::new()
                } else {
                    format!(
                        "; {}",
                        fails
                            .iter()
                            .map(|(k, v)| format!("{v}× {k}"))
                            .collect::<Vec<_>>()
                            .join("; ")
                    )
                }
            );
        }
    }
}

fn print_console(env: &BenchEnv, what: &str) -> Result<()> {
    let m = procfs::memory(env.pid("console")?)?;
    println!(
        "Console {what}: VmRSS {} MiB, VmHWM {} MiB (load {})",
        mib(m.rss_kib),
        mib(m.hwm_kib),
        procfs::load_average()
    );
    Ok(())
}

async fn run(args: &Args, env: &BenchEnv, fx: &Fixtures, phases: &mut Vec<Phase>) -> Result<()> {
    let ca = Path::new(env.var("CONSOLE_CA")?);
    let url = env.var("CONSOLE_URL")?;
    let d = Dialer::new(url, ca)?;
    let client = TlsClient::new(url, ca, None)?;
    let wants = |s: &str| args.only.iter().any(|o| o == s);
    for o in &args.only {
        ensure!(
            ["h2-stall", "stalled-bodies", "stalled-frames"].contains(&o.as_str()),
            "--only {o}: expected h2-stall, stalled-bodies or stalled-frames"
        );
    }
    for &n in &args.sources {
        ensure!((1..=16).contains(&n), "--sources {n}: 1 to 16");
    }
    let operator = env.var("TESTENV_TOKEN_OPERATOR")?.to_owned();
    let admin = env.var("TESTENV_TOKEN_ADMIN")?.to_owned();
    if wants("h2-stall") {
        for &n in &args.sources {
            let p = h2_stall(args, env, &d, n).await?;
            print_phases(std::slice::from_ref(&p));
            phases.push(p);
        }
    }
    if !(wants("stalled-bodies") || wants("stalled-frames")) {
        return Ok(());
    }
    let fn_uid = ready_run(fx, FUNCTION_RUN, json!({"function": {}})).await?;
    let ses_uid = ready_run(fx, SESSION_RUN, json!({"session": {"leaseSeconds": 60}})).await?;
    let invoke = format!("/v1/namespaces/{NS}/runs/{FUNCTION_RUN}/{fn_uid}/invoke");
    let ops = format!("/v1/namespaces/{NS}/runs/{SESSION_RUN}/{ses_uid}/operations:ws");
    let most = args.sources.iter().copied().max().unwrap_or(1);
    let robots = if most > 1 {
        robots(fx, most).await?
    } else {
        Vec::new()
    };
    // One identity: the operator (from 127.0.0.2), the admin aside. More:
    // that many ServiceAccounts, the operator and the admin aside.
    let single = vec![Identity {
        user: "operator".into(),
        token: operator.clone(),
        from: source(0),
    }];
    let mut warm = single.clone();
    warm.extend(robots.iter().cloned());
    until_served(&client, &invoke, &warm).await?;
    for scenario in ["stalled-bodies", "stalled-frames"] {
        if !wants(scenario) {
            continue;
        }
        for &n in &args.sources {
            let (ids, bystanders): (&[Identity], Vec<(&str, String)>) = if n == 1 {
                (&single, vec![("admin", admin.clone())])
            } else {
                (
                    &robots[..n],
                    vec![("operator", operator.clone()), ("admin", admin.clone())],
                )
            };
            let p = if scenario == "stalled-bodies" {
                stalledbodies(args, env, &d, ids, &bystanders, &client, &invoke).await?
            } else {
                stalled_frames(args, env, &d, ids, &bystanders, &client, &ops, &invoke).await?
            };
            print_phases(std::slice::from_ref(&p));
            phases.push(p);
        }
    }
    Ok(())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> Result<()> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args = Args::parse();
    let env = BenchEnv::load(&args.state)?;
    let fx = Fixtures::new(&env, NS).await?;
    print_console(&env, "before")?;
    let t = Instant::now();
    let mut phases = Vec::new();
    let result = run(&args, &env, &fx, &mut phases).await;
    remove_robots(&fx, 16).await;
    println!("\n## All phases ({:.0} s)", t.elapsed().as_secs_f64());
    print_phases(&phases);
    print_console(&env, "after")?;
    if let Some(path) = &args.json {
        std::fs::write(path, serde_json::to_vec_pretty(&phases)?)
            .with_context(|| format!("writing {}", path.display()))?;
    }
    result
}
