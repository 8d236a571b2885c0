//! Kubernetes clients: the Console's own (ServiceAccount) client, and
//! request-scoped clients that carry a caller's token over one shared
//! connection pool.

use bytes::Bytes;
use http::HeaderValue;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use kruntimes_core::auth::BearerToken;
use kruntimes_core::failure::Refusal as _;
use kube::client::ConfigExt;
use kube::client::retry::RetryPolicy;
use std::time::Duration;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, ServiceBuilder, ServiceExt};
use tower_http::set_header::SetRequestHeaderLayer;

/// What carries the callers' requests to kube-apiserver: one HTTPS pool in
/// the server, an in-process stand-in in router tests.
pub type Upstream = BoxCloneSyncService<
    http::Request<kube::client::Body>,
    http::Response<UnsyncBoxBody<Bytes, BoxError>>,
    BoxError,
>;

/// How long an idle pooled connection to kube-apiserver is kept.
const POOL_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

/// The read buffer of each connection to kube-apiserver. hyper's adaptive
/// buffer grows to ~400 KiB while a Pod log streams through and keeps that
/// size while the connection idles in the pool (~280 KiB each measured);
/// TLS hands over at most 16 KiB at a time anyway. Response headers must
/// fit in it (kube-apiserver's are well under 1 KiB).
const READ_BUFFER_BYTES: usize = 16 << 10;

/// The settings of both pools of connections to kube-apiserver.
fn pool(max_idle: usize) -> hyper_util::client::legacy::Builder {
    let mut builder = HyperClient::builder(TokioExecutor::new());
    builder
        .pool_idle_timeout(POOL_IDLE_TIMEOUT)
        .pool_max_idle_per_host(max_idle)
        .http1_read_buf_exact_size(READ_BUFFER_BYTES);
    builder
}

/// The Console's own client: kube's default stack (timeouts, retries of
/// 429/503/504, the configuration's credentials and headers), a span and a
/// `traceparent` per request when traces are on, over a pool
/// that keeps at most `max_idle` idle connections, each with a small read
/// buffer. kube's own pool keeps every connection a burst opened, for 90 s,
/// with its grown buffer: after 200 follows opened at once that was ~250
/// connections and ~70 MiB.
pub fn service_account(config: &kube::Config, max_idle: usize) -> anyhow::Result<kube::Client> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let https = config.rustls_https_connector_with_connector(http)?;
    let mut connector = hyper_timeout::TimeoutConnector::new(https);
    connector.set_connect_timeout(config.connect_timeout);
    connector.set_read_timeout(config.read_timeout);
    connector.set_write_timeout(config.write_timeout);
    connector.set_reset_reader_on_write(config.reset_reader_on_write);
    let pool: HyperClient<_, kube::client::Body> = pool(max_idle).build(connector);
    let service = ServiceBuilder::new()
        .layer(config.base_uri_layer())
        .option_layer(
            config
                .default_retry
                .then(|| tower::retry::RetryLayer::new(RetryPolicy::server_retry())),
        )
        .option_layer(config.auth_layer()?)
        .layer(config.extra_headers_layer()?)
        .layer(kruntimes_core::trace::KubeTraceLayer)
        .map_err(BoxError::from)
        .service(pool);
    Ok(kube::Client::new(service, config.default_namespace.clone()))
}

/// Builds a client per caller without building TLS or a pool per caller.
#[derive(Clone)]
pub struct UserClients {
    config: kube::Config,
    upstream: Upstream,
}

impl UserClients {
    /// `config` is the Console's own configuration; its credentials are
    /// dropped. The pool keeps at most `max_idle` idle connections.
    pub fn new(mut config: kube::Config, max_idle: usize) -> anyhow::Result<Self> {
        config.auth_info = Default::default();
        let https = config.rustls_https_connector()?;
        let pool = pool(max_idle)
            .build(https)
            .map_response(|resp| resp.map(|body| body.map_err(BoxError::from).boxed_unsync()))
            .map_err(BoxError::from);
        Ok(Self::with_upstream(config, BoxCloneSyncService::new(pool)))
    }

    /// The same over another upstream.
    pub fn with_upstream(mut config: kube::Config, upstream: Upstream) -> Self {
        config.auth_info = Default::default();
        Self { config, upstream }
    }

    /// A client that acts as the holder of `token`.
    pub fn for_token(
        &self,
        token: &BearerToken,
    ) -> Result<kube::Client, crate::error::ConsoleError> {
        let mut value =
            HeaderValue::from_str(&format!("Bearer {}", token.expose())).map_err(|_| {
                crate::error::ConsoleError::unauthorized("the token cannot be sent in a header")
            })?;
        value.set_sensitive(true);
        let service = ServiceBuilder::new()
            .layer(self.config.base_uri_layer())
            .layer(SetRequestHeaderLayer::overriding(
                http::header::AUTHORIZATION,
                value,
            ))
            .layer(kruntimes_core::trace::KubeTraceLayer)
            .service(self.upstream.clone());
        Ok(kube::Client::new(
            service,
            self.config.default_namespace.clone(),
        ))
    }
}
