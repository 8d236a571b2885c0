//! The dashboard proxy's loopback listener: plain HTTP/1.1 to the browser,
//! each browser connection forwarded over a port-forward of its own (opened
//! at its first admitted request, closed with it), with the kubeconfig's
//! credential added to every forwarded request.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{HeaderValue, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::{Mutex, Semaphore};
use tokio_util::sync::CancellationToken;
use tower::BoxError;

use kruntimes_core::failure::Reason;

use super::guard::{self, Own};
use super::upstream::{PortForward, Upstream};

type Body = BoxBody<Bytes, BoxError>;

/// The listener's limits (each a flag of `kruntimes-console dashboard`).
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Open connections at most (`--max-connections`).
    pub max_connections: usize,
    /// Largest request body forwarded (`--max-request-bytes`).
    pub max_request_bytes: usize,
    /// Largest request head (`--max-header-bytes`).
    pub max_header_bytes: usize,
    /// Time for a request head to arrive (`--header-timeout`).
    pub header_timeout: Duration,
    /// Time for the Console to answer (`--response-timeout`).
    pub response_timeout: Duration,
}

/// The upstream connection of one browser connection.
#[derive(Default)]
struct Link {
    sender: Option<SendRequest<Body>>,
    port_forward: Option<PortForward>,
}

struct Shared {
    own: Own,
    upstream: Arc<Upstream>,
    limits: Limits,
}

/// Serves until `shutdown` is cancelled; then every browser connection (and
/// with it its port-forward) is closed.
pub async fn serve(
    listener: TcpListener,
    own: Own,
    upstream: Arc<Upstream>,
    limits: Limits,
    shutdown: CancellationToken,
) {
    let shared = Arc::new(Shared {
        own,
        upstream,
        limits,
    });
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            _ = shutdown.cancelled() => break,
        };
        let (stream, peer) = match accepted {
            Ok(a) => a,
            Err(e) => {
                tracing::warn!(target: "dashboard", "accept: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(target: "dashboard",
                "connection from {peer} closed: {} connections are open (--max-connections)",
                limits.max_connections
            );
            drop(stream);
            continue;
        };
        let shared = shared.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let link = Arc::new(Mutex::new(Link::default()));
            let svc = {
                let link = link.clone();
                hyper::service::service_fn(move |req| {
                    let (shared, link) = (shared.clone(), link.clone());
                    async move { Ok::<_, std::convert::Infallible>(handle(&shared, &link, req).await) }
                })
            };
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_buf_size(limits.max_header_bytes)
                .keep_alive(true);
            let conn = builder
                .serve_connection(TokioIo::new(stream), svc)
                .with_upgrades();
            tokio::select! {
                r = conn => {
                    if let Err(e) = r {
                        tracing::debug!(target: "dashboard", "connection from {peer}: {e}");
                    }
                }
                _ = shutdown.cancelled() => {}
            }
            // The browser connection is gone: so is its port-forward
            // (an upgraded one lives on in its relay until either side closes).
            link.lock().await.port_forward.take();
        });
    }
}

fn text(status: StatusCode, msg: impl Into<String>) -> Response<Body> {
    let mut r = Response::new(
        Full::new(Bytes::from(format!("{}\n", msg.into())))
            .map_err(|e| match e {})
            .boxed(),
    );
    *r.status_mut() = status;
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

async fn handle(shared: &Shared, link: &Mutex<Link>, req: Request<Incoming>) -> Response<Body> {
    let started = Instant::now();
    let method = req.method().clone();
    // Paths only: a query is the page's business and is not logged.
    let path = req.uri().path().to_owned();
    let resp = forward(shared, link, req).await;
    tracing::info!(target: "dashboard",
        "{method} {path} {} {}ms",
        resp.status().as_u16(),
        started.elapsed().as_millis()
    );
    resp
}

async fn forward(
    shared: &Shared,
    link: &Mutex<Link>,
    mut req: Request<Incoming>,
) -> Response<Body> {
    let host = req
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
        .or_else(|| req.uri().authority().map(|a| a.as_str().to_owned()));
    if let Err(refusal) = guard::admit(&shared.own, req.method(), host.as_deref(), req.headers()) {
        tracing::warn!(target: "dashboard", "refused {} {}: {}", req.method(), req.uri().path(), refusal.0);
        return text(
            Reason::Forbidden.code(),
            format!("refused by the dashboard proxy: {}", refusal.0),
        );
    }
    let max = shared.limits.max_request_bytes;
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > max as u64) {
        return text(
            Reason::PayloadTooLarge.code(),
            format!("the request body is over {max} bytes (--max-request-bytes)"),
        );
    }
    let upgrade = guard::is_upgrade(req.headers());
    let browser_upgrade = upgrade.then(|| hyper::upgrade::on(&mut req));

    let authorization = match shared.upstream.credential.authorization().await {
        Ok(v) => v,
        Err(e) => {
            tracing::warn!(target: "dashboard", "{e:#}");
            return text(Reason::BadGateway.code(), format!("{e:#}"));
        }
    };
    let (parts, body) = req.into_parts();
    let path_and_query = parts
        .uri
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_else(|| "/".into());
    let mut out = Request::builder()
        .method(parts.method.clone())
        .uri(path_and_query)
        .version(http::Version::HTTP_11)
        .body(Limited::new(body, max).boxed())
        .expect("a request from valid parts");
    *out.headers_mut() = guard::forward_request_headers(&parts.headers, &shared.upstream.host);
    if let Some(v) = authorization {
        out.headers_mut().insert(header::AUTHORIZATION, v);
    }

    let mut link = link.lock().await;
    let mut sender = match link.sender.take().filter(|s| !s.is_closed()) {
        Some(s) => s,
        None => {
            link.port_forward.take();
            match open(&shared.upstream).await {
                Ok((s, pf)) => {
                    link.port_forward = Some(pf);
                    s
                }
                Err(e) => {
                    tracing::warn!(target: "dashboard", "{e:#}");
                    return text(
                        Reason::BadGateway.code(),
                        format!("cannot reach a Console Pod: {e:#}"),
                    );
                }
            }
        }
    };
    if sender.ready().await.is_err() {
        link.port_forward.take();
        return text(
            Reason::BadGateway.code(),
            "the connection to the Console closed",
        );
    }
    let timeout = shared.limits.response_timeout;
    let resp = match tokio::time::timeout(timeout, sender.send_request(out)).await {
        Ok(Ok(r)) => r,
        Ok(Err(e)) => {
            link.port_forward.take();
            return text(
                Reason::BadGateway.code(),
                format!("the Console did not answer: {e}"),
            );
        }
        Err(_) => {
            link.port_forward.take();
            return text(
                Reason::GatewayTimeout.code(),
                format!("the Console did not answer within {timeout:?} (--response-timeout)"),
            );
        }
    };
    let mut resp = resp;
    let switched = resp.status() == StatusCode::SWITCHING_PROTOCOLS;
    if switched && let Some(browser) = browser_upgrade {
        // The upstream connection is consumed by the upgrade; the relay
        // holds its port-forward until either side closes.
        let pf = link.port_forward.take();
        let upstream_upgrade = hyper::upgrade::on(&mut resp);
        let (mut parts, _) = resp.into_parts();
        tokio::spawn(async move {
            let _pf = pf;
            let (Ok(b), Ok(u)) = (browser.await, upstream_upgrade.await) else {
                return;
            };
            let (mut b, mut u) = (TokioIo::new(b), TokioIo::new(u));
            let _ = tokio::io::copy_bidirectional(&mut b, &mut u).await;
        });
        guard::forward_response_headers(&mut parts.headers, true);
        return Response::from_parts(
            parts,
            http_body_util::Empty::new().map_err(|e| match e {}).boxed(),
        );
    }
    link.sender = Some(sender);
    drop(link);
    let (mut parts, body) = resp.into_parts();
    guard::forward_response_headers(&mut parts.headers, false);
    Response::from_parts(parts, body.map_err(BoxError::from).boxed())
}

/// A new HTTP/1.1 connection to the Console over a port-forward of its own.
async fn open(upstream: &Upstream) -> anyhow::Result<(SendRequest<Body>, PortForward)> {
    let (tls, pf, target) = upstream.connect().await?;
    let (sender, conn) = hyper::client::conn::http1::Builder::new()
        .handshake(TokioIo::new(tls))
        .await?;
    tokio::spawn(async move {
        if let Err(e) = conn.with_upgrades().await {
            tracing::debug!(target: "dashboard", "connection to {target}: {e}");
        }
    });
    Ok((sender, pf))
}
