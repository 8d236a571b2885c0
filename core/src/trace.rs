//! OpenTelemetry traces: one span per request and a child span for each call
//! it makes (kube-apiserver, the Runtime gateway, a Pod log read), with the
//! caller's W3C `traceparent` as the request span's parent and a
//! `traceparent` of the same trace on every outgoing call.
//!
//! Off unless the binary installs an exporter ([`enable`]): until then no
//! span is made, no header is read and none is added; every hook here is one
//! atomic load.
//!
//! What a span carries is chosen here and nowhere else: the route template
//! (`http.route`, never the path), the method, the status code, the request
//! ID (the access log has the path under the same ID), the kube-apiserver
//! path without its query, the Pod's name. Never a header's value, a query
//! string, a body or a caller's identity.

use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context as TaskContext, Poll};

use http::{HeaderMap, HeaderValue};
use opentelemetry::Context;
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The `tracing` target of every span made here; the exporter's layer
/// takes these spans and nothing else.
pub const TARGET: &str = "kruntimes_trace";

/// Longest `traceparent` taken from a caller (a version-00 one is 55 bytes;
/// later versions may append fields).
pub const MAX_TRACEPARENT: usize = 256;
/// Longest `tracestate` taken from a caller (the size W3C asks every
/// participant to pass on); a longer one is dropped, not cut.
pub const MAX_TRACESTATE: usize = 512;
/// Most list members of a `tracestate` (W3C's limit).
const MAX_TRACESTATE_MEMBERS: usize = 32;

static ENABLED: AtomicBool = AtomicBool::new(false);

/// The filter of the exporter's layer: the spans made here ([`TARGET`]),
/// nothing else (no log line becomes a span event).
///
/// It never answers `Interest::always` for a callsite. A per-layer filter's
/// decision reaches its layer through a thread-local set by the `enabled`
/// pass just before a span is made; a callsite every filter finds always
/// interesting skips that pass, and its span is then judged by whatever the
/// last pass on the thread left there. After a `tracing::enabled!` check
/// ([`crate::observe::access_logged`]), which runs a pass no span or event
/// follows, that is this filter's "no" to a log event: the next span made
/// here on the thread was dropped from the traces (a request's gateway call,
/// made on the thread that had just checked whether the access line is
/// logged). Answering `sometimes` runs the pass for every span.
#[derive(Clone, Copy, Debug, Default)]
pub struct SpanFilter;

impl SpanFilter {
    fn takes(meta: &tracing::Metadata<'_>) -> bool {
        meta.is_span() && meta.target() == TARGET
    }
}

impl<S> tracing_subscriber::layer::Filter<S> for SpanFilter {
    fn enabled(
        &self,
        meta: &tracing::Metadata<'_>,
        _: &tracing_subscriber::layer::Context<'_, S>,
    ) -> bool {
        Self::takes(meta)
    }

    fn callsite_enabled(
        &self,
        meta: &'static tracing::Metadata<'static>,
    ) -> tracing::subscriber::Interest {
        if Self::takes(meta) {
            tracing::subscriber::Interest::sometimes()
        } else {
            tracing::subscriber::Interest::never()
        }
    }
}

/// Whether traces are exported (an exporter was installed).
#[inline]
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Turns the hooks on; called once the exporter's layer is installed.
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

fn hex_field<const N: usize>(s: &str) -> Option<[u8; N]> {
    if s.len() != 2 * N || !s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
        return None;
    }
    let mut out = [0u8; N];
    for (i, o) in out.iter_mut().enumerate() {
        *o = u8::from_str_radix(&s[2 * i..2 * i + 2], 16).ok()?;
    }
    Some(out)
}

/// Parses a W3C `traceparent`; `None` for anything malformed or oversize
/// (lowercase hex only, version `ff` and all-zero IDs refused, a version-00
/// header exactly 55 bytes, a later version's extra fields ignored).
pub fn parse_traceparent(value: &[u8]) -> Option<SpanContext> {
    if value.len() > MAX_TRACEPARENT || value.len() < 55 {
        return None;
    }
    let s = std::str::from_utf8(value).ok()?;
    let version = hex_field::<1>(&s[0..2])?[0];
    if version == 0xff || &s[2..3] != "-" || &s[35..36] != "-" || &s[52..53] != "-" {
        return None;
    }
    if version == 0 && s.len() != 55 {
        return None;
    }
    if s.len() > 55 && &s[55..56] != "-" {
        return None;
    }
    let trace = TraceId::from_bytes(hex_field::<16>(&s[3..35])?);
    let span = SpanId::from_bytes(hex_field::<8>(&s[36..52])?);
    let flags = hex_field::<1>(&s[53..55])?[0];
    if trace == TraceId::INVALID || span == SpanId::INVALID {
        return None;
    }
    Some(SpanContext::new(
        trace,
        span,
        TraceFlags::new(flags) & TraceFlags::SAMPLED,
        true,
        TraceState::default(),
    ))
}

/// Parses a `tracestate` within its bounds; `None` when it is oversize or
/// malformed (it is then dropped whole).
pub fn parse_tracestate(value: &[u8]) -> Option<TraceState> {
    if value.len() > MAX_TRACESTATE {
        return None;
    }
    let s = std::str::from_utf8(value).ok()?;
    if s.split(',').count() > MAX_TRACESTATE_MEMBERS {
        return None;
    }
    s.parse().ok()
}

/// The caller's trace context from its `traceparent` (and `tracestate`);
/// an empty context when there is none or it is not valid.
pub fn extract(headers: &HeaderMap) -> Context {
    let parent = headers
        .get("traceparent")
        .and_then(|v| parse_traceparent(v.as_bytes()));
    let Some(parent) = parent else {
        return Context::new();
    };
    let state = headers
        .get("tracestate")
        .and_then(|v| parse_tracestate(v.as_bytes()))
        .unwrap_or_default();
    let parent = SpanContext::new(
        parent.trace_id(),
        parent.span_id(),
        parent.trace_flags(),
        true,
        state,
    );
    Context::new().with_remote_span_context(parent)
}

/// The `traceparent` and `tracestate` values that name `span` as the parent
/// of the call they go out with; none when the span is not recorded.
pub fn headers_of(span: &Span) -> Option<(HeaderValue, Option<HeaderValue>)> {
    let cx = span.context();
    let sc = cx.span().span_context().clone();
    if !sc.is_valid() {
        return None;
    }
    let parent = format!(
        "00-{}-{}-{:02x}",
        sc.trace_id(),
        sc.span_id(),
        sc.trace_flags().to_u8()
    );
    let parent = HeaderValue::from_str(&parent).ok()?;
    let state = sc.trace_state().header();
    let state = (!state.is_empty() && state.len() <= MAX_TRACESTATE)
        .then(|| HeaderValue::from_str(&state).ok())
        .flatten();
    Some((parent, state))
}

/// Replaces whatever `traceparent`/`tracestate` `headers` hold with those of `span`.
pub fn inject(span: &Span, headers: &mut HeaderMap) {
    headers.remove("traceparent");
    headers.remove("tracestate");
    if let Some((parent, state)) = headers_of(span) {
        headers.insert("traceparent", parent);
        if let Some(state) = state {
            headers.insert("tracestate", state);
        }
    }
}

/// Is this forwarded trace header fit to pass on as it came (traces off):
/// a valid `traceparent`, a `tracestate` within its bounds.
pub fn is_passable(name: &str, value: &[u8]) -> bool {
    match name {
        "traceparent" => parse_traceparent(value).is_some(),
        "tracestate" => parse_tracestate(value).is_some(),
        _ => true,
    }
}

/// A request's span, a child of the caller's `traceparent` when it sent a
/// valid one. `route` is the matched route template (never the path).
pub fn server_span(method: &str, route: Option<&str>, headers: &HeaderMap) -> Span {
    let name = match route {
        Some(r) => format!("{method} {r}"),
        None => method.to_owned(),
    };
    let span = tracing::info_span!(
        target: TARGET,
        "request",
        otel.name = %name,
        otel.kind = "server",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        http.route = route,
        http.response.status_code = tracing::field::Empty,
        request_id = tracing::field::Empty,
    );
    let parent = extract(headers);
    if parent.has_active_span() {
        let _ = span.set_parent(parent);
    }
    span
}

/// A 5xx answer marks its span as an error (OpenTelemetry's HTTP rule).
fn server_error(code: u16) -> bool {
    http::StatusCode::from_u16(code).is_ok_and(|c| c.is_server_error())
}

/// Records a finished request's status code and ID on its span.
pub fn record_response(span: &Span, code: u16, request_id: &[u8; 16]) {
    span.record("http.response.status_code", i64::from(code));
    if let Ok(id) = std::str::from_utf8(request_id) {
        span.record("request_id", id);
    }
    if server_error(code) {
        span.record("otel.status_code", "ERROR");
    }
}

/// A call to kube-apiserver, a child of the current span: its path
/// (kube-apiserver's paths name objects, never credentials) without the query.
pub fn kube_span(method: &str, path: &str) -> Span {
    tracing::info_span!(
        target: TARGET,
        "kube-apiserver",
        otel.name = %format!("kube-apiserver {method}"),
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        http.request.method = %method,
        url.path = %path,
        http.response.status_code = tracing::field::Empty,
    )
}

/// A call to a Run's Runtime gateway, a child of the current span.
pub fn gateway_span(route: &'static str, address: &str, port: u16) -> Span {
    tracing::info_span!(
        target: TARGET,
        "gateway",
        otel.name = "Runtime gateway POST",
        otel.kind = "client",
        otel.status_code = tracing::field::Empty,
        http.request.method = "POST",
        http.route = route,
        server.address = %address,
        server.port = port,
        http.response.status_code = tracing::field::Empty,
    )
}

/// Records a call's answer (or its failure, `None`) on its client span.
pub fn record_call(span: &Span, code: Option<u16>) {
    match code {
        Some(code) => {
            span.record("http.response.status_code", i64::from(code));
            if server_error(code) {
                span.record("otel.status_code", "ERROR");
            }
        }
        None => {
            span.record("otel.status_code", "ERROR");
        }
    }
}

/// A tower layer for the kube `Client`'s stack: each request made within a
/// span gets a [`kube_span`] child of it and that child's `traceparent`
/// (requests outside any span, the background watches, get neither).
#[derive(Clone, Copy, Debug, Default)]
pub struct KubeTraceLayer;

impl<S> tower::Layer<S> for KubeTraceLayer {
    type Service = KubeTrace<S>;

    fn layer(&self, inner: S) -> Self::Service {
        KubeTrace { inner }
    }
}

/// The service of [`KubeTraceLayer`].
#[derive(Clone, Debug)]
pub struct KubeTrace<S> {
    inner: S,
}

impl<S, B, R> tower::Service<http::Request<B>> for KubeTrace<S>
where
    S: tower::Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = futures::future::Either<
        S::Future,
        futures::future::BoxFuture<'static, Result<S::Response, S::Error>>,
    >;

    fn poll_ready(&mut self, cx: &mut TaskContext<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, mut req: http::Request<B>) -> Self::Future {
        use futures::FutureExt;
        use tracing::Instrument;
        // Only calls made for a request: background watches stay out of traces.
        if !enabled() || Span::current().is_none() {
            return futures::future::Either::Left(self.inner.call(req));
        }
        let span = kube_span(req.method().as_str(), req.uri().path());
        inject(&span, req.headers_mut());
        // Called and polled outside any span: hyper's pool spawns each new
        // connection's task `in_current_span`, which would hold a span open
        // for as long as the connection lives.
        let fut = Span::none().in_scope(|| self.inner.call(req));
        futures::future::Either::Right(
            async move {
                let res = fut.instrument(Span::none()).await;
                record_call(&span, res.as_ref().ok().map(|r| r.status().as_u16()));
                res
            }
            .boxed(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TP: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

    #[test]
    fn a_valid_traceparent_parses() {
        let sc = parse_traceparent(TP.as_bytes()).unwrap();
        assert_eq!(
            sc.trace_id().to_string(),
            "4bf92f3577b34da6a3ce929d0e0e4736"
        );
        assert_eq!(sc.span_id().to_string(), "00f067aa0ba902b7");
        assert!(sc.is_sampled());
        assert!(sc.is_remote());
        // A later version may append fields.
        let later = "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00-extra";
        assert!(!parse_traceparent(later.as_bytes()).unwrap().is_sampled());
    }

    #[test]
    fn malformed_or_oversize_traceparents_are_ignored() {
        let long = format!(
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-{}",
            "a".repeat(300)
        );
        for bad in [
            "",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-0",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-",
            "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
            "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
            "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00_4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
            "00-4bf92f3577b34da6a3ce929d0e0e473g-00f067aa0ba902b7-01",
            "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
            long.as_str(),
        ] {
            assert!(parse_traceparent(bad.as_bytes()).is_none(), "{bad:?}");
            assert!(!is_passable("traceparent", bad.as_bytes()), "{bad:?}");
        }
        let mut h = HeaderMap::new();
        h.insert("traceparent", HeaderValue::from_static("garbage"));
        assert!(!extract(&h).has_active_span());
    }

    #[test]
    fn tracestate_is_bounded() {
        assert!(parse_tracestate(b"congo=t61rcWkgMzE,rojo=00f067aa0ba902b7").is_some());
        let long = format!("a={}", "b".repeat(MAX_TRACESTATE));
        assert!(parse_tracestate(long.as_bytes()).is_none());
        let many: Vec<String> = (0..40).map(|i| format!("k{i}=v")).collect();
        assert!(parse_tracestate(many.join(",").as_bytes()).is_none());
    }

    #[test]
    fn the_callers_context_is_the_parent() {
        let mut h = HeaderMap::new();
        h.insert("traceparent", HeaderValue::from_static(TP));
        h.insert("tracestate", HeaderValue::from_static("congo=t61rcWkgMzE"));
        let cx = extract(&h);
        let span = cx.span();
        let sc = span.span_context();
        assert!(sc.is_valid());
        assert_eq!(sc.trace_state().get("congo"), Some("t61rcWkgMzE"));
    }

    /// The Console's subscriber: the log layer with its own filter first,
    /// then the exporter's layer with [`SpanFilter`].
    fn console_subscriber(
        provider: &opentelemetry_sdk::trace::SdkTracerProvider,
    ) -> impl tracing::Subscriber + Send + Sync {
        use opentelemetry::trace::TracerProvider as _;
        use tracing_subscriber::Layer as _;
        use tracing_subscriber::layer::SubscriberExt;
        tracing_subscriber::registry()
            .with(
                tracing_subscriber::fmt::layer()
                    .with_test_writer()
                    .with_filter(tracing_subscriber::EnvFilter::new(
                        "info,kube=warn,hyper=warn",
                    )),
            )
            .with(
                tracing_opentelemetry::layer()
                    .with_tracer(provider.tracer("test"))
                    .with_filter(SpanFilter),
            )
    }

    /// Checking whether the access line is logged (a `tracing::enabled!`
    /// pass that no event follows) loses no span made after it on the
    /// thread: neither a call's span nor the next request's.
    #[test]
    fn spans_after_an_access_log_check_are_recorded() {
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let _default = tracing::subscriber::set_default(console_subscriber(&provider));
        let mut h = HeaderMap::new();
        h.insert("traceparent", HeaderValue::from_static(TP));
        for _ in 0..3 {
            let _ = crate::observe::access_logged();
            let request = server_span("POST", Some("/r/{x}"), &h);
            assert!(headers_of(&request).is_some(), "the request's span");
            let _ = crate::observe::access_logged();
            let gw = request.in_scope(|| gateway_span("/r/{x}", "gateway.example", 8443));
            let (parent, _) = headers_of(&gw).expect("the gateway call's span");
            let parent = parent.to_str().unwrap().to_owned();
            assert!(
                parent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
                "{parent}"
            );
            let _ = crate::observe::access_logged();
            let kube = request.in_scope(|| kube_span("GET", "/api"));
            assert!(
                headers_of(&kube).is_some(),
                "the kube-apiserver call's span"
            );
        }
    }

    /// A request span from a caller's `traceparent`, and a call to
    /// kube-apiserver made within it through [`KubeTraceLayer`]: the call
    /// carries a `traceparent` of the caller's trace naming a new span (the
    /// call's), the caller's `tracestate`, and nothing of the caller's own.
    #[tokio::test]
    async fn kube_calls_carry_a_traceparent_of_the_request_trace() {
        use tower::{Layer, Service, ServiceExt};
        use tracing::Instrument;
        let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
        let subscriber = console_subscriber(&provider);
        let _default = tracing::subscriber::set_default(subscriber);
        enable();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(HeaderMap::new()));
        let mut svc = KubeTraceLayer.layer(tower::service_fn({
            let seen = seen.clone();
            move |req: http::Request<()>| {
                *seen.lock().unwrap() = req.headers().clone();
                async { Ok::<_, std::convert::Infallible>(http::Response::new(())) }
            }
        }));
        let mut h = HeaderMap::new();
        h.insert("traceparent", HeaderValue::from_static(TP));
        h.insert("tracestate", HeaderValue::from_static("congo=t61rcWkgMzE"));
        let span = server_span("GET", Some("/x/{name}"), &h);
        let call = http::Request::builder()
            .uri("https://kube/api/v1/namespaces/a/pods/b/log?follow=true")
            .header(
                "traceparent",
                "00-11111111111111111111111111111111-2222222222222222-01",
            )
            .body(())
            .unwrap();
        let gw = span.in_scope(|| gateway_span("/r/{x}", "gateway.example", 8443));
        assert!(
            headers_of(&gw).is_some(),
            "the gateway call's span is recorded"
        );
        svc.ready().await.unwrap();
        // Called from within the request's span, as a handler calls kube.
        async { svc.call(call).await }
            .instrument(span)
            .await
            .unwrap();
        let got = seen.lock().unwrap().clone();
        let parent = got.get("traceparent").unwrap().to_str().unwrap();
        assert!(
            parent.starts_with("00-4bf92f3577b34da6a3ce929d0e0e4736-"),
            "{parent}"
        );
        assert!(parent.ends_with("-01"), "{parent}");
        assert!(
            !parent.contains("00f067aa0ba902b7"),
            "a span of its own: {parent}"
        );
        assert_eq!(got.get_all("traceparent").iter().count(), 1);
        assert_eq!(got.get("tracestate").unwrap(), "congo=t61rcWkgMzE");
        // Outside any span nothing is added (background watches).
        let plain = http::Request::builder()
            .uri("https://kube/api")
            .body(())
            .unwrap();
        svc.ready().await.unwrap();
        svc.call(plain).await.unwrap();
        assert!(seen.lock().unwrap().get("traceparent").is_none());
    }
}
