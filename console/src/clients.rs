//! Kubernetes clients: the Console's own (ServiceAccount) client, and
//! request-scoped clients that carry a caller's token over one shared
//! connection pool.

use bytes::Bytes;
use http::HeaderValue;
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::rt::TokioExecutor;
use kruntimes_core::auth::BearerToken;
use kube::client::ConfigExt;
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

/// Builds a client per caller without building TLS or a pool per caller.
#[derive(Clone)]
pub struct UserClients {
    config: kube::Config,
    upstream: Upstream,
}

impl UserClients {
    /// `config` is the Console's own configuration; its credentials are dropped.
    pub fn new(mut config: kube::Config) -> anyhow::Result<Self> {
        config.auth_info = Default::default();
        let https = config.rustls_https_connector()?;
        let pool = HyperClient::builder(TokioExecutor::new())
            .pool_idle_timeout(std::time::Duration::from_secs(90))
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
            .service(self.upstream.clone());
        Ok(kube::Client::new(
            service,
            self.config.default_namespace.clone(),
        ))
    }
}
