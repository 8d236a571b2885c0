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
    /// Where the requests are counted and timed.
    pub metrics: Metrics,
    /// The listener's label: `apiserver` or `console`.
    pub listener: &'static str,
    /// Maps a matched route template to a fixed label (route names never leak paths).
    pub route_name: fn(&str) -> &'static str,
    /// Label for requests that matched no route.
    pub unmatched: &'static str,
}

/// The `X-Request-ID` field's value for `id`, marked never to be indexed:
/// each answer has its own, so in an HTTP/2 connection's HPACK table it
/// would only push out the fields every answer repeats (the security
/// headers), which would then be sent in full again.
pub fn request_id_value(id: &[u8; 16]) -> Option<HeaderValue> {
    let mut v = HeaderValue::from_bytes(id).ok()?;
    v.set_sensitive(true);
    Some(v)
}

/// A new request ID: 16 hex digits, unique in the process (a start-time
/// base plus a counter), written without allocating.
pub fn request_id() -> [u8; 16] {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    static BASE: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    let base = *BASE.get_or_init(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0)
    });
    let n = base.wrapping_add(NEXT.fetch_add(1, Ordering::Relaxed));
    let mut out = [0u8; 16];
    lower_hex(u128::from(n), &mut out);
    out
}

/// Writes the low `4 × out.len()` bits of `n` into `out` as lower-case hex
/// digits, most significant first (no allocation, no formatter: the IDs of
/// every request and call). At most 32 digits.
pub fn lower_hex(n: u128, out: &mut [u8]) {
    debug_assert!(out.len() <= 32);
    let last = out.len().saturating_sub(1);
    for (i, b) in out.iter_mut().enumerate() {
        *b = b"0123456789abcdef"[((n >> (4 * (last - i))) & 0xf) as usize];
    }
}

/// One finished request, as the access log records it.
#[derive(Debug)]
pub struct Access<'a> {
    /// The listener that served the request: `apiserver` or `console`.
    pub listener: &'static str,
    /// The request ID, 16 hex digits (also sent as `X-Request-Id`).
    pub request_id: &'a str,
    /// The HTTP method.
    pub method: &'a str,
    /// The request path, without the query.
    pub path: &'a str,
    /// The HTTP status code of the answer.
    pub code: u16,
    /// Time to the answer's head, in milliseconds.
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

impl Observer {
    /// Counts a request whose answer's head is ready and writes its access
    /// line (when `path` is given: only when INFO is enabled, see
    /// [`access_logged`]).
    pub fn record(
        &self,
        route: &'static str,
        method: &str,
        path: Option<&str>,
        code: u16,
        elapsed: std::time::Duration,
        id: &[u8; 16],
    ) {
        let listener = self.listener;
        self.metrics
            .request_seconds
            .get_or_create(&RouteLabels { listener, route })
            .observe(elapsed.as_secs_f64());
        self.metrics
            .requests
            .get_or_create(&RequestLabels {
                listener,
                route,
                code,
            })
            .inc();
        if let Some(path) = path {
            let id = std::str::from_utf8(id).unwrap_or_default();
            let log = ACCESS_LOG.get().copied().unwrap_or(trace_access);
            log(&Access {
                listener,
                request_id: id,
                method,
                path,
                code,
                ms: elapsed.as_secs_f64() * 1e3,
            });
        }
    }
}

/// Whether access lines are written (INFO is enabled here).
pub fn access_logged() -> bool {
    tracing::enabled!(tracing::Level::INFO)
}

/// The middleware (its state is shared, not copied, per request). With
/// traces on, the request runs in its span ([`crate::trace::server_span`]).
pub async fn observe(State(o): State<Arc<Observer>>, req: Request, next: Next) -> Response {
    if crate::trace::enabled() {
        use tracing::Instrument;
        let template = req.extensions().get::<MatchedPath>().map(|p| p.as_str());
        let span = crate::trace::server_span(req.method().as_str(), template, req.headers());
        return observed(o, req, next, Some(&span))
            .instrument(span.clone())
            .await;
    }
    observed(o, req, next, None).await
}

async fn observed(
    o: Arc<Observer>,
    req: Request,
    next: Next,
    span: Option<&tracing::Span>,
) -> Response {
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map(|p| (o.route_name)(p.as_str()))
        .unwrap_or(o.unmatched);
    let method = req.method().clone();
    // Kept only when the access line will be written (a shared, not copied, URI).
    let uri = access_logged().then(|| req.uri().clone());
    let id = request_id();
    let started = Instant::now();
    let mut resp = next.run(req).await;
    let elapsed = started.elapsed();
    let code = resp.status().as_u16();
    if let Some(v) = request_id_value(&id) {
        resp.headers_mut().insert("x-request-id", v);
    }
    if let Some(span) = span {
        crate::trace::record_response(span, code, &id);
    }
    o.record(
        route,
        method.as_str(),
        uri.as_ref().map(|u| u.path()),
        code,
        elapsed,
        &id,
    );
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each answer's own ID is never indexed (HPACK), so it cannot push
    /// the fields every answer repeats out of an HTTP/2 connection's table.
    #[test]
    fn a_request_id_is_a_field_never_indexed() {
        let id = request_id();
        let v = request_id_value(&id).unwrap();
        assert!(v.is_sensitive());
        assert_eq!(v.as_bytes(), &id);
    }
    use axum::Router;
    use axum::routing::get;
    use tower::ServiceExt;

    fn route_name(template: &str) -> &'static str {
        match template {
            "/api/namespaces/{ns}/runs/{name}" => "run",
            _ => "other",
        }
    }

    /// The scrape text's lines that start with `name`, sorted (a family's
    /// series come in no fixed order).
    fn series(metrics: &Metrics, name: &str) -> Vec<String> {
        let mut registry = prometheus_client::registry::Registry::default();
        metrics.register(&mut registry);
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).unwrap();
        let mut lines: Vec<String> = out
            .lines()
            .filter(|l| l.starts_with(name))
            .map(str::to_owned)
            .collect();
        lines.sort_by(|a, b| {
            let le = |l: &str| {
                l.split("le=\"")
                    .nth(1)
                    .and_then(|v| v.split('"').next())
                    .map(|v| v.parse::<f64>().unwrap_or(f64::INFINITY))
            };
            match (le(a), le(b)) {
                (Some(x), Some(y)) => x.total_cmp(&y),
                _ => a.cmp(b),
            }
        });
        lines
    }

    #[tokio::test]
    async fn the_duration_histogram_is_labelled_by_route_template_never_by_path() {
        let metrics = Metrics::default();
        let observer = Arc::new(Observer {
            metrics: metrics.clone(),
            listener: "console",
            route_name,
            unmatched: "unmatched",
        });
        let app = Router::new()
            .route("/api/namespaces/{ns}/runs/{name}", get(|| async { "ok" }))
            .layer(axum::middleware::from_fn_with_state(observer, observe));
        for path in [
            "/api/namespaces/a/runs/one",
            "/api/namespaces/b/runs/two",
            "/nope/secret-run-name",
            "/nope/another-path",
        ] {
            let req = Request::get(path).body(axum::body::Body::empty()).unwrap();
            app.clone().oneshot(req).await.unwrap();
        }
        let counts = series(
            &metrics,
            "kruntimes_console_http_request_duration_seconds_count",
        );
        assert_eq!(
            counts,
            [
                "kruntimes_console_http_request_duration_seconds_count{listener=\"console\",route=\"run\"} 2",
                "kruntimes_console_http_request_duration_seconds_count{listener=\"console\",route=\"unmatched\"} 2",
            ],
            "two series: the template's and one for every path that matched no route"
        );
        let all = series(&metrics, "kruntimes_console_http_request");
        assert!(
            !all.iter()
                .any(|l| l.contains("one") || l.contains("secret") || l.contains("nope")),
            "no path in a label: {all:#?}"
        );
        let buckets: Vec<_> = series(
            &metrics,
            "kruntimes_console_http_request_duration_seconds_bucket{",
        )
        .into_iter()
        .filter(|l| l.contains("route=\"run\""))
        .collect();
        assert_eq!(
            buckets.len(),
            crate::metrics::REQUEST_SECONDS_BUCKETS.len() + 1,
            "every bound and +Inf: {buckets:#?}"
        );
        assert!(
            buckets.last().unwrap().contains("le=\"+Inf\"")
                && buckets.last().unwrap().ends_with("} 2"),
            "{buckets:#?}"
        );
        assert_eq!(
            series(&metrics, "kruntimes_console_http_requests_total"),
            [
                "kruntimes_console_http_requests_total{listener=\"console\",route=\"run\",code=\"200\"} 2",
                "kruntimes_console_http_requests_total{listener=\"console\",route=\"unmatched\",code=\"404\"} 2",
            ]
        );
    }

    #[test]
    fn hex_digits_are_the_formatters() {
        for n in [
            0u128,
            1,
            0xabc,
            u64::MAX as u128,
            u128::MAX,
            0x0123_4567_89ab_cdef_fedc_ba98_7654_3210,
        ] {
            let mut full = [0u8; 32];
            lower_hex(n, &mut full);
            assert_eq!(std::str::from_utf8(&full).unwrap(), format!("{n:032x}"));
            let mut low = [0u8; 16];
            lower_hex(n, &mut low);
            assert_eq!(
                std::str::from_utf8(&low).unwrap(),
                format!("{:016x}", n as u64)
            );
        }
    }

    #[test]
    fn request_ids_are_sixteen_hex_digits_and_never_repeat() {
        let a = request_id();
        let b = request_id();
        for id in [a, b] {
            assert!(
                id.iter()
                    .all(|c| c.is_ascii_digit() || (b'a'..=b'f').contains(c)),
                "{id:?}"
            );
        }
        let n = |id: [u8; 16]| u64::from_str_radix(std::str::from_utf8(&id).unwrap(), 16).unwrap();
        assert_eq!(
            n(b),
            n(a).wrapping_add(1),
            "consecutive IDs count up by one"
        );
    }
}
