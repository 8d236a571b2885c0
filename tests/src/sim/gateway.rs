//! The fake Runtime gateway's TLS side: `/v1` invoke and `operations:ws`, with a
//! record of every request seen and scripted failure modes driven by the control API.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use axum::extract::{Path, Request, State, WebSocketUpgrade};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use bytes::Bytes;
use rustls::ServerConfig;
use serde_json::{Value, json};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::sim::gateway_ops;
pub use crate::sim::gateway_state::{
    Gateway, INVOCATION_ID, MAX_BODY, Mode, ModeConfig, REQUEST_LOG_SIZE, RecordedRequest, Stats,
    bump, new_id,
};
use crate::sim::serve::{Injector, PeerInfo, serve_tls};

/// The TLS listener, which the control API can close and reopen on the same address.
pub struct TlsSide {
    gateway: Arc<Gateway>,
    addr: SocketAddr,
    tls: Arc<ServerConfig>,
    router: Router,
    running: tokio::sync::Mutex<Option<(CancellationToken, JoinHandle<()>)>>,
}

impl TlsSide {
    /// Starts serving on an already bound listener (whose address `up` reuses).
    pub fn start(
        gateway: Arc<Gateway>,
        listener: tokio::net::TcpListener,
        addr: SocketAddr,
        tls: Arc<ServerConfig>,
    ) -> Arc<Self> {
        let router = router(Arc::clone(&gateway));
        let token = gateway.connection_token();
        let task = tokio::spawn(serve_tls(
            listener,
            Arc::clone(&tls),
            router.clone(),
            token.clone(),
        ));
        Arc::new(Self {
            gateway,
            addr,
            tls,
            router,
            running: tokio::sync::Mutex::new(Some((token, task))),
        })
    }

    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether the listener is open.
    pub async fn is_up(&self) -> bool {
        self.running.lock().await.is_some()
    }

    /// Closes the listener and every connection (including WebSockets). Idempotent.
    pub async fn down(&self) {
        let mut running = self.running.lock().await;
        if let Some((token, task)) = running.take() {
            token.cancel();
            let _ = task.await;
            tracing::info!(addr = %self.addr, "gateway listener closed");
        }
    }

    /// Reopens the listener on the same address. Idempotent.
    pub async fn up(&self) -> std::io::Result<()> {
        let mut running = self.running.lock().await;
        if running.is_some() {
            return Ok(());
        }
        let listener = tokio::net::TcpListener::bind(self.addr).await?;
        let token = CancellationToken::new();
        self.gateway.set_connection_token(token.clone());
        let task = tokio::spawn(serve_tls(
            listener,
            Arc::clone(&self.tls),
            self.router.clone(),
            token.clone(),
        ));
        *running = Some((token, task));
        tracing::info!(addr = %self.addr, "gateway listener reopened");
        Ok(())
    }
}

/// The `/v1` router of the TLS side.
pub fn router(gateway: Arc<Gateway>) -> Router {
    Router::new()
        .route(
            "/v1/namespaces/{namespace}/runs/{name}/{uid}/invoke",
            post(invoke),
        )
        .route(
            "/v1/namespaces/{namespace}/runs/{name}/{uid}/operations:ws",
            get(operations_ws),
        )
        .fallback(|| async { error(StatusCode::NOT_FOUND, "no such gateway endpoint") })
        .layer(middleware::from_fn_with_state(
            Arc::clone(&gateway),
            record_and_apply_mode,
        ))
        .with_state(gateway)
}

/// A JSON error body.
pub fn error(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({ "error": message }))).into_response()
}

fn header_pairs(headers: &HeaderMap) -> Vec<(String, String)> {
    headers
        .iter()
        .map(|(name, value)| {
            (
                name.as_str().to_owned(),
                String::from_utf8_lossy(value.as_bytes()).into_owned(),
            )
        })
        .collect()
}

fn is_upgrade(request: &Request) -> bool {
    request.headers().contains_key(header::UPGRADE) || request.method() == http::Method::CONNECT
}

/// Counts the client going away while armed (the future holding it was dropped).
struct DisconnectWatch<'a> {
    gateway: &'a Gateway,
    armed: bool,
}

impl Drop for DisconnectWatch<'_> {
    fn drop(&mut self) {
        if self.armed {
            bump(&self.gateway.stats.upstream_disconnects);
        }
    }
}

/// Records every request, then applies the failure mode.
async fn record_and_apply_mode(
    State(gateway): State<Arc<Gateway>>,
    request: Request,
    next: Next,
) -> Response {
    bump(&gateway.stats.requests);
    let peer = request.extensions().get::<PeerInfo>().cloned();
    let (parts, body) = request.into_parts();
    let mut record = RecordedRequest {
        time: jiff::Timestamp::now().to_string(),
        method: parts.method.to_string(),
        path: parts
            .uri
            .path_and_query()
            .map_or_else(|| parts.uri.path().to_owned(), |pq| pq.as_str().to_owned()),
        authority: parts
            .headers
            .get(header::HOST)
            .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned())
            .or_else(|| parts.uri.authority().map(|a| a.as_str().to_owned())),
        version: format!("{:?}", parts.version),
        headers: header_pairs(&parts.headers),
        body_length: 0,
        client_cn: peer.as_ref().and_then(|p| p.client_cn.clone()),
        remote_addr: peer.as_ref().map(|p| p.remote.to_string()),
        tls_version: peer.and_then(|p| p.tls_version),
    };
    if gateway.mode().mode == Mode::EarlyTooLarge && !parts.headers.contains_key(header::UPGRADE) {
        // The body is never read: the connection closes with it unread.
        gateway.record(record);
        let mut response = error(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the request body is too large",
        );
        response
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        return response;
    }
    let request = Request::from_parts(parts, body);
    let request = if is_upgrade(&request) {
        gateway.record(record);
        request
    } else {
        let (parts, body) = request.into_parts();
        let bytes = match axum::body::to_bytes(body, MAX_BODY).await {
            Ok(bytes) => bytes,
            Err(err) => {
                gateway.record(record);
                return error(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    &format!("cannot read the request body (limit {MAX_BODY} bytes): {err}"),
                );
            }
        };
        record.body_length = bytes.len() as u64;
        gateway.record(record);
        Request::from_parts(parts, Body::from(bytes))
    };

    let mode = gateway.mode();
    match mode.mode {
        Mode::Normal | Mode::EarlyTooLarge => {}
        Mode::ExtraAnswer => {
            if is_upgrade(&request) {
                return next.run(request).await;
            }
            let injector = request.extensions().get::<Injector>().cloned();
            let http1 = request.version() == http::Version::HTTP_11;
            let (parts, body) = next.run(request).await.into_parts();
            let body = axum::body::to_bytes(body, MAX_BODY)
                .await
                .unwrap_or_default();
            if let Some(injector) = injector.filter(|_| http1) {
                injector.before_next_answer(&raw_answer(&parts, &body));
            }
            return Response::from_parts(parts, Body::from(body));
        }
        Mode::TooManyRequests => {
            let mut response = error(StatusCode::TOO_MANY_REQUESTS, "the runtime is busy");
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("1"));
            return response;
        }
        Mode::ServerError => {
            return error(StatusCode::INTERNAL_SERVER_ERROR, "the runtime failed");
        }
        Mode::Slow => {
            let mut watch = DisconnectWatch {
                gateway: &gateway,
                armed: true,
            };
            tokio::time::sleep(Duration::from_millis(mode.delay_ms)).await;
            watch.armed = false;
        }
        Mode::Chunked => return streamed(next.run(request).await, None),
        Mode::Stall => {
            let stall = Duration::from_millis(mode.delay_ms);
            return streamed(next.run(request).await, Some(stall));
        }
    }
    next.run(request).await
}

/// An answer as HTTP/1.1 bytes, with its length.
fn raw_answer(parts: &http::response::Parts, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\n",
        parts.status.as_u16(),
        parts.status.canonical_reason().unwrap_or("")
    )
    .into_bytes();
    for (name, value) in &parts.headers {
        if name != header::CONTENT_LENGTH && name != header::TRANSFER_ENCODING {
            out.extend_from_slice(name.as_str().as_bytes());
            out.extend_from_slice(b": ");
            out.extend_from_slice(value.as_bytes());
            out.extend_from_slice(b"\r\n");
        }
    }
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", body.len()).as_bytes());
    out.extend_from_slice(body);
    out
}

/// The answer with its body in three chunks and no length; with `stall`,
/// a wait of that long after the first.
fn streamed(resp: Response, stall: Option<Duration>) -> Response {
    use futures::StreamExt;
    let (mut parts, body) = resp.into_parts();
    parts.headers.remove(header::CONTENT_LENGTH);
    let pieces = futures::stream::once(async move {
        axum::body::to_bytes(body, MAX_BODY)
            .await
            .unwrap_or_default()
    })
    .flat_map(|bytes| {
        let third = bytes.len().div_ceil(3).max(1);
        let pieces: Vec<Bytes> = bytes.chunks(third).map(Bytes::copy_from_slice).collect();
        futures::stream::iter(pieces.into_iter().enumerate())
    })
    .then(move |(i, piece)| async move {
        if i == 1
            && let Some(d) = stall
        {
            tokio::time::sleep(d).await;
        }
        Ok::<_, std::convert::Infallible>(piece)
    });
    Response::from_parts(parts, Body::from_stream(pieces))
}

/// Values of every header with this name.
fn all_values(headers: &HeaderMap, name: &str) -> Vec<String> {
    headers
        .get_all(name)
        .iter()
        .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
        .collect()
}

/// `X-Remote-Extra-<key>` headers as a map (key lower-cased and percent-decoded).
fn extras(headers: &HeaderMap) -> BTreeMap<String, Vec<String>> {
    let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers {
        if let Some(key) = name.as_str().strip_prefix("x-remote-extra-") {
            let key = url::form_urlencoded::parse(format!("k={key}").as_bytes())
                .next()
                .map_or_else(|| key.to_owned(), |(_, v)| v.into_owned());
            map.entry(key)
                .or_default()
                .push(String::from_utf8_lossy(value.as_bytes()).into_owned());
        }
    }
    map
}

async fn invoke(
    State(gateway): State<Arc<Gateway>>,
    Path((namespace, run, uid)): Path<(String, String, String)>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    bump(&gateway.stats.invokes);
    let invocation_id = headers
        .get(INVOCATION_ID)
        .and_then(|v| v.to_str().ok())
        .map_or_else(|| new_id("inv"), str::to_owned);
    let body = serde_json::from_slice::<Value>(&body)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
    let answer = json!({
        "invocationID": invocation_id,
        "namespace": namespace,
        "run": run,
        "uid": uid,
        "user": headers.get("x-remote-user").map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned()),
        "groups": all_values(&headers, "x-remote-group"),
        "extra": extras(&headers),
        "body": body,
    });
    let mut response = axum::Json(answer).into_response();
    if let Ok(value) = HeaderValue::from_str(&invocation_id) {
        response.headers_mut().insert(INVOCATION_ID, value);
    }
    response
}

async fn operations_ws(
    State(gateway): State<Arc<Gateway>>,
    Path((namespace, run, uid)): Path<(String, String, String)>,
    upgrade: WebSocketUpgrade,
) -> Response {
    bump(&gateway.stats.ws_total);
    let token = gateway.connection_token();
    tracing::info!(%namespace, %run, %uid, "operations socket opened");
    upgrade.on_upgrade(move |socket| gateway_ops::session(socket, gateway, token))
}
