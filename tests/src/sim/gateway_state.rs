//! The fake Runtime gateway's shared state: its failure mode, the record
//! of every request seen and its counters. The TLS side (`gateway`) and the
//! operation sessions (`gateway_ops`) both work on it.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

use serde::Serialize;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// How many requests the log keeps.
pub const REQUEST_LOG_SIZE: usize = 200;
/// Largest request body the gateway reads.
pub const MAX_BODY: usize = 8 * 1024 * 1024;
/// Header carrying the invocation ID.
pub const INVOCATION_ID: &str = "x-kruntime-invocation-id";

/// How the gateway answers `/v1` requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, serde::Deserialize)]
pub enum Mode {
    #[serde(rename = "normal")]
    Normal,
    /// 429 with `Retry-After: 1`.
    #[serde(rename = "429")]
    TooManyRequests,
    /// 500.
    #[serde(rename = "500")]
    ServerError,
    /// Answers after a delay.
    #[serde(rename = "slow")]
    Slow,
    /// Answers normally, the body in three chunks (no length).
    #[serde(rename = "chunked")]
    Chunked,
    /// Sends the head and the first chunk, then waits `delayMs` before the rest.
    #[serde(rename = "stall")]
    Stall,
    /// Answers 413 with `Connection: close` as soon as the request head is
    /// in, without reading the body, and closes (as a gateway with a smaller
    /// body limit does).
    #[serde(rename = "early413")]
    EarlyTooLarge,
    /// Answers, and writes a copy of that answer (its invocation ID
    /// included) ahead of the next answer on the same HTTP/1.1 connection:
    /// a gateway out of step by one answer, so every second call on a
    /// connection would read the call before it's answer.
    #[serde(rename = "extra")]
    ExtraAnswer,
}

/// The mode and, for `slow`, the delay.
#[derive(Clone, Copy, Debug, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ModeConfig {
    pub mode: Mode,
    #[serde(default = "default_delay_ms")]
    pub delay_ms: u64,
}

fn default_delay_ms() -> u64 {
    2000
}

/// One request seen on the TLS side.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    pub time: String,
    pub method: String,
    /// Path and query.
    pub path: String,
    /// The `Host` header, or the request target's authority (HTTP/2).
    pub authority: Option<String>,
    /// `HTTP/1.1` or `HTTP/2.0`.
    pub version: String,
    /// Every header in order, as `[name, value]` (values decoded lossily).
    pub headers: Vec<(String, String)>,
    pub body_length: u64,
    /// Common Name of the client certificate.
    #[serde(rename = "clientCN")]
    pub client_cn: Option<String>,
    pub remote_addr: Option<String>,
    /// The TLS version of the connection the request came on (`TLSv1_3`).
    pub tls_version: Option<String>,
}

/// Counters reported by `GET /stats`.
#[derive(Debug, Default)]
pub struct Stats {
    pub requests: AtomicU64,
    pub invokes: AtomicU64,
    pub ws_open: AtomicU64,
    pub ws_total: AtomicU64,
    pub operations: AtomicU64,
    pub heartbeats: AtomicU64,
    pub cancels: AtomicU64,
    /// The client went away while an operation or a slow answer was in progress.
    pub upstream_disconnects: AtomicU64,
}

impl Stats {
    pub fn snapshot(&self) -> Value {
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        json!({
            "requests": get(&self.requests),
            "invokes": get(&self.invokes),
            "wsOpen": get(&self.ws_open),
            "wsTotal": get(&self.ws_total),
            "operations": get(&self.operations),
            "heartbeats": get(&self.heartbeats),
            "cancels": get(&self.cancels),
            "upstreamDisconnects": get(&self.upstream_disconnects),
        })
    }

    fn reset(&self) {
        for counter in [
            &self.requests,
            &self.invokes,
            &self.ws_total,
            &self.operations,
            &self.heartbeats,
            &self.cancels,
            &self.upstream_disconnects,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
    }
}

/// Adds one to a counter.
pub fn bump(counter: &AtomicU64) {
    counter.fetch_add(1, Ordering::Relaxed);
}

/// Shared gateway state.
#[derive(Debug)]
pub struct Gateway {
    pub stats: Stats,
    requests: Mutex<VecDeque<RecordedRequest>>,
    mode: Mutex<ModeConfig>,
    /// Cancelled when the TLS side goes down; WebSocket sessions end with it.
    connections: Mutex<CancellationToken>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Default for Gateway {
    fn default() -> Self {
        Self {
            stats: Stats::default(),
            requests: Mutex::new(VecDeque::with_capacity(REQUEST_LOG_SIZE)),
            mode: Mutex::new(ModeConfig {
                mode: Mode::Normal,
                delay_ms: default_delay_ms(),
            }),
            connections: Mutex::new(CancellationToken::new()),
        }
    }
}

impl Gateway {
    pub fn requests(&self) -> Vec<RecordedRequest> {
        lock(&self.requests).iter().cloned().collect()
    }

    pub fn clear_requests(&self) {
        lock(&self.requests).clear();
    }

    pub fn record(&self, request: RecordedRequest) {
        let mut log = lock(&self.requests);
        if log.len() == REQUEST_LOG_SIZE {
            log.pop_front();
        }
        log.push_back(request);
    }

    pub fn mode(&self) -> ModeConfig {
        *lock(&self.mode)
    }

    pub fn set_mode(&self, mode: ModeConfig) {
        *lock(&self.mode) = mode;
    }

    /// Clears the request log and counters (not the open-socket gauge) and returns to normal.
    pub fn reset(&self) {
        self.clear_requests();
        self.stats.reset();
        self.set_mode(ModeConfig {
            mode: Mode::Normal,
            delay_ms: default_delay_ms(),
        });
    }

    /// The token that ends connections of the current TLS listener.
    pub fn connection_token(&self) -> CancellationToken {
        lock(&self.connections).clone()
    }

    /// A new TLS listener's token replaces the last one's.
    pub fn set_connection_token(&self, token: CancellationToken) {
        *lock(&self.connections) = token;
    }
}

/// A fresh random ID with a prefix.
pub fn new_id(prefix: &str) -> String {
    let n: u64 = rand::random();
    format!("{prefix}-{n:016x}")
}
