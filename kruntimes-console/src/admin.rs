//! The plain-HTTP admin listener: `/metrics`, `/live`, `/ready`.

use axum::Router;
use axum::extract::State;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderValue, StatusCode, header};
use kruntimes_core::failure::Reason;
use kruntimes_core::lifecycle::{Lifecycle, Phase};
use kruntimes_core::metrics::Metrics;
use kruntimes_core::ready::Readiness;
use kruntimes_transport::serve::{ConnLimits, serve_plain};
use prometheus_client::registry::Registry;
use std::sync::Arc;
use tokio::net::TcpListener;

#[derive(Clone)]
struct AdminState {
    registry: Arc<Registry>,
    metrics: Metrics,
    readiness: Readiness,
    lifecycle: Lifecycle,
}

async fn metrics(State(s): State<AdminState>) -> Response {
    s.metrics.before_scrape();
    let mut out = String::new();
    if prometheus_client::encoding::text::encode(&mut out, &s.registry).is_err() {
        return Reason::Internal.code().into_response();
    }
    let mut resp = out.into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/openmetrics-text; version=1.0.0; charset=utf-8"),
    );
    resp
}

async fn ready(State(s): State<AdminState>) -> Response {
    if s.lifecycle.phase() != Phase::Serving {
        return (Reason::Unavailable.code(), "shutting down\n").into_response();
    }
    let pending = s.readiness.pending();
    if pending.is_empty() {
        (StatusCode::OK, "ready\n").into_response()
    } else {
        (
            Reason::Unavailable.code(),
            format!("not ready: waiting for {}\n", pending.join(", ")),
        )
            .into_response()
    }
}

/// Serves the admin endpoints until `shutdown` resolves.
pub async fn serve(
    listener: TcpListener,
    metrics_set: Metrics,
    readiness: Readiness,
    lifecycle: Lifecycle,
    limits: ConnLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let mut registry = Registry::default();
    metrics_set.register(&mut registry);
    let state = AdminState {
        registry: Arc::new(registry),
        metrics: metrics_set.clone(),
        readiness,
        lifecycle,
    };
    let app = Router::new()
        .route("/metrics", get(metrics))
        .route("/live", get(|| async { "live\n" }))
        .route("/ready", get(ready))
        .with_state(state);
    serve_plain(listener, app, limits, "admin", metrics_set, shutdown).await;
}
