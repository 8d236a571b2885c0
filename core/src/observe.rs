//! Per-request metrics and the JSON access log, shared by every listener:
//! each request gets an ID (logged and returned as `X-Request-Id`), is
//! counted by route and code, and its latency is recorded. Headers are never
//! logged.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use axum::extract::{MatchedPath, Request, State};
use axum::middleware::Next;
use axum::response::Response;
use http::HeaderValue;

use crate::metrics::{Metrics, RequestLabels, RouteLabels};

/// What one listener's observer needs.
#[derive(Clone)]
pub struct Observer {
    pub metrics: Metrics,
    pub listener: &'static str,
    /// Maps a matched route template to a fixed label (route names never leak paths).
    pub route_name: fn(&str) -> &'static str,
    /// Label for requests that matched no route.
    pub unmatched: &'static str,
}

fn request_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static BASE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let base = *BASE.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    });
    format!(
        "{:016x}",
        base.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed))
    )
}

/// One finished request, as the access log records it.
#[derive(Debug)]
pub struct Access<'a> {
    pub listener: &'static str,
    pub request_id: &'a str,
    pub method: &'a str,
    pub path: &'a str,
    pub code: u16,
    pub ms: f64,
}

/// Writes one access record.
pub type AccessLog = fn(&Access<'_>);

static ACCESS_LOG: OnceLock<AccessLog> = OnceLock::new();

/// Replaces the access log's writer (once per process). Without it records go
/// through `tracing`; a binary that formats its own lines can skip that cost.
/// The record is written only when `tracing` enables INFO for this module.
pub fn set_access_log(log: AccessLog) {
    let _ = ACCESS_LOG.set(log);
}

fn trace_access(a: &Access<'_>) {
    tracing::info!(
        listener = a.listener,
        request_id = a.request_id,
        method = a.method,
        path = a.path,
        code = a.code,
        ms = a.ms,
        "request"
    );
}

/// The middleware (its state is shared, not copied, per request).
pub async fn observe(State(o): State<Arc<Observer>>, req: Request, next: Next) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| (o.route_name)(p.as_str()))
        .unwrap_or(o.unmatched);
    let method = req.method().clone();
    // Copied only when the access line will be written.
    let path = tracing::enabled!(tracing::Level::INFO).then(|| req.uri().path().to_owned());
    let id = request_id();
    let started = Instant::now();
    let mut resp = next.run(req).await;
    let elapsed = started.elapsed();
    let code = resp.status().as_u16();
    let listener = o.listener;
    o.metrics
        .request_seconds
        .get_or_create(&RouteLabels { listener, route })
        .observe(elapsed.as_secs_f64());
    o.metrics
        .requests
        .get_or_create(&RequestLabels {
            listener,
            route,
            code,
        })
        .inc();
    if let Ok(v) = HeaderValue::from_str(&id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    if let Some(path) = &path {
        let log = ACCESS_LOG.get().copied().unwrap_or(trace_access);
        log(&Access {
            listener,
            request_id: &id,
            method: method.as_str(),
            path,
            code,
            ms: elapsed.as_secs_f64() * 1e3,
        });
    }
    resp
}
