//! The OTLP trace exporter: built only when `OTEL_EXPORTER_OTLP_ENDPOINT`
//! or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set (docs/operations.md,
//! "Traces"). Spans go out as OTLP http/protobuf through the Console's own
//! hyper client with rustls on ring: no reqwest, no tonic, no aws-lc-rs or
//! OpenSSL in the binary. The SDK's batch processor holds the finished spans
//! on its own thread in a bounded queue (`OTEL_BSP_MAX_QUEUE_SIZE`, 2,048 by
//! default; spans past it are dropped, never waited for) and sends them in
//! batches; each send runs on the Console's runtime, bounded by
//! `OTEL_EXPORTER_OTLP_TIMEOUT`.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client as HyperClient;
use hyper_util::client::legacy::connect::HttpConnector;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_http::{HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{SdkTracerProvider, Tracer};

/// The service name when neither `OTEL_SERVICE_NAME` nor a `service.name`
/// in `OTEL_RESOURCE_ATTRIBUTES` names one.
pub const DEFAULT_SERVICE_NAME: &str = "kruntimes-console";

/// How long one export may take unless `OTEL_EXPORTER_OTLP_TIMEOUT` says.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(10);

/// Largest answer read from the collector (it is only checked for its status).
const MAX_ANSWER_BYTES: usize = 64 << 10;

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Whether the environment asks for traces.
pub fn configured() -> bool {
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.eq_ignore_ascii_case("none"));
    !disabled
        && (var("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT").is_some()
            || var("OTEL_EXPORTER_OTLP_ENDPOINT").is_some())
}

/// The first of these variables that is set.
fn first(names: &[&str]) -> Option<(String, String)> {
    names
        .iter()
        .find_map(|n| var(n).map(|v| ((*n).to_owned(), v)))
}

/// The exporter's settings from the environment, refused with the variable
/// at fault when the Console cannot honour them.
fn check_env() -> anyhow::Result<Duration> {
    if let Some((name, v)) = first(&[
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
        "OTEL_EXPORTER_OTLP_PROTOCOL",
    ]) && v != "http/protobuf"
    {
        bail!("{name}={v:?}: the Console exports traces as OTLP http/protobuf only");
    }
    if let Some((name, v)) = first(&["OTEL_TRACES_EXPORTER"])
        && v != "otlp"
    {
        bail!("{name}={v:?}: the Console's trace exporter is otlp (or none)");
    }
    match first(&[
        "OTEL_EXPORTER_OTLP_TRACES_TIMEOUT",
        "OTEL_EXPORTER_OTLP_TIMEOUT",
    ]) {
        Some((name, v)) => {
            let ms: u64 =
                v.parse().ok().filter(|ms| *ms > 0).with_context(|| {
                    format!("{name}={v:?}: not a positive number of milliseconds")
                })?;
            Ok(Duration::from_millis(ms))
        }
        None => Ok(DEFAULT_TIMEOUT),
    }
}

/// TLS for an `https://` collector: the CA of `OTEL_EXPORTER_OTLP_CERTIFICATE`
/// (or `..._TRACES_CERTIFICATE`), else the system's roots.
fn tls() -> anyhow::Result<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    match first(&[
        "OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE",
        "OTEL_EXPORTER_OTLP_CERTIFICATE",
    ]) {
        Some((name, path)) => {
            let pem =
                std::fs::read(&path).with_context(|| format!("{name}={path}: cannot be read"))?;
            roots = kruntimes_core::tls::root_store(&pem, &format!("{name}={path}"))?;
        }
        None => {
            for cert in rustls_native_certs::load_native_certs().certs {
                let _ = roots.add(cert);
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth())
}

/// Sends the exporter's requests on the Console's runtime (the batch
/// processor calls from its own thread, outside any runtime).
#[derive(Clone)]
struct OtlpClient {
    client: HyperClient<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>,
    runtime: tokio::runtime::Handle,
    timeout: Duration,
}

impl std::fmt::Debug for OtlpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OtlpClient")
            .field("timeout", &self.timeout)
            .finish_non_exhaustive()
    }
}

impl OtlpClient {
    async fn exchange(&self, req: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let (parts, body) = req.into_parts();
        let req = hyper::Request::from_parts(parts, Full::new(body));
        let resp = self.client.request(req).await?;
        let (parts, body) = resp.into_parts();
        let body = Limited::new(body, MAX_ANSWER_BYTES)
            .collect()
            .await?
            .to_bytes();
        Ok(Response::from_parts(parts, body))
    }
}

#[async_trait::async_trait]
impl HttpClient for OtlpClient {
    async fn send_bytes(&self, req: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let this = self.clone();
        let timeout = self.timeout;
        let sent = self
            .runtime
            .spawn(async move { tokio::time::timeout(timeout, this.exchange(req)).await })
            .await;
        let res = match sent {
            Ok(Ok(res)) => res,
            Ok(Err(_)) => Err(format!(
                "no answer within {}s (OTEL_EXPORTER_OTLP_TIMEOUT)",
                timeout.as_secs_f32()
            )
            .into()),
            Err(e) => Err(e.into()),
        };
        match &res {
            Ok(r) if !r.status().is_success() => {
                tracing::warn!(
                    status = r.status().as_u16(),
                    "trace export refused by the collector"
                )
            }
            Err(error) => tracing::warn!(%error, "trace export failed"),
            Ok(_) => {}
        }
        res
    }
}

/// The resource: `OTEL_SERVICE_NAME` and `OTEL_RESOURCE_ATTRIBUTES` as the
/// SDK reads them, with `kruntimes-console` as the service name by default.
fn resource() -> Resource {
    let named = var("OTEL_SERVICE_NAME").is_some()
        || var("OTEL_RESOURCE_ATTRIBUTES").is_some_and(|attrs| {
            attrs
                .split(',')
                .any(|kv| kv.split('=').next().map(str::trim) == Some("service.name"))
        });
    let builder = Resource::builder();
    if named {
        builder.build()
    } else {
        builder.with_service_name(DEFAULT_SERVICE_NAME).build()
    }
}

/// Keeps the exporter; dropping it sends what is queued (within the export
/// timeout) and stops the batch thread.
pub struct TraceGuard(SdkTracerProvider);

impl Drop for TraceGuard {
    fn drop(&mut self) {
        if let Err(error) = self.0.shutdown() {
            tracing::warn!(%error, "traces still queued at exit could not be sent");
        }
    }
}

/// Builds the exporter when the environment asks for traces (`None`
/// otherwise: nothing is built). `runtime` carries the exports.
pub fn exporter(runtime: tokio::runtime::Handle) -> anyhow::Result<Option<(Tracer, TraceGuard)>> {
    if !configured() {
        return Ok(None);
    }
    let timeout = check_env()?;
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls()?)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    let client = OtlpClient {
        client: HyperClient::builder(hyper_util::rt::TokioExecutor::new())
            .pool_idle_timeout(Duration::from_secs(30))
            .pool_max_idle_per_host(1)
            .build(https),
        runtime,
        timeout,
    };
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_http_client(client)
        .with_protocol(Protocol::HttpBinary)
        .with_timeout(timeout)
        .build()
        .context("the OTLP trace exporter (OTEL_EXPORTER_OTLP_*)")?;
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource())
        .build();
    let tracer = provider.tracer("kruntimes-console");
    Ok(Some((tracer, TraceGuard(provider))))
}
