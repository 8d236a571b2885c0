//! runtimed's gRPC status endpoint (port 9093 of a Runtime Pod): plain HTTP/2 with prior
//! knowledge (h2c, what a gRPC client speaks without TLS), one method answered,
//! `POST /executor.v1.Runtime/Status`. Answers follow grpc-go's server:
//! - a known execution: HTTP 200, `content-type: application/grpc`, the framed
//!   `StatusResponse`, trailers `grpc-status: 0`;
//! - an unknown or forgotten ID: trailers-only (HTTP 200, `grpc-status: 5`, `grpc-message:
//!   request <id> not found`, as the bash runtime says through runtimed's proxy);
//! - another method of `executor.v1.Runtime`: `grpc-status: 12`, as runtimed's proxy, which
//!   implements only Status, answers; another service: 12 too (`unknown service`);
//! - a body that is not one StatusRequest: `grpc-status: 3`; one over [`MAX_REQUEST`]: 8;
//! - not POST: HTTP 405; not `application/grpc`: HTTP 415.

use std::convert::Infallible;
use std::net::SocketAddr;

use bytes::Bytes;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Empty, Limited, StreamBody};
use hyper::body::{Frame, Incoming};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kruntimes_core::runtimed::{STATUS_PATH, StatusRequest, code, frame, unframe};
use tokio::net::TcpListener;

use crate::sim::runtimed::Runtimed;

/// The largest request body read (a StatusRequest is an ID).
pub const MAX_REQUEST: usize = 64 * 1024;
const SERVICE_PREFIX: &str = "/executor.v1.Runtime/";

type Body = BoxBody<Bytes, Infallible>;

impl Runtimed {
    /// Serves the status endpoint on `addr` (port 0 picks one) until the last clone of this
    /// runtimed is dropped; returns the bound address.
    pub async fn serve_status(&self, addr: SocketAddr) -> std::io::Result<SocketAddr> {
        let listener = TcpListener::bind(addr).await?;
        let bound = listener.local_addr()?;
        // The loop holds a weak reference, so dropping the runtimed ends it.
        let weak = std::sync::Arc::downgrade(&self.inner);
        let servers = std::sync::Arc::downgrade(&self.servers);
        let task = tokio::spawn(async move {
            loop {
                let stream = match listener.accept().await {
                    Ok((stream, _)) => stream,
                    Err(err) => {
                        // Out of descriptors, say: wait rather than spin.
                        tracing::warn!("status endpoint cannot accept: {err}");
                        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                        continue;
                    }
                };
                let (Some(inner), Some(servers)) = (weak.upgrade(), servers.upgrade()) else {
                    return;
                };
                let runtimed = Runtimed::from_parts(inner, servers);
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |req| {
                        let runtimed = runtimed.clone();
                        async move { Ok::<_, Infallible>(answer(&runtimed, req).await) }
                    });
                    let _ = hyper::server::conn::http2::Builder::new(TokioExecutor::new())
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        self.servers
            .0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(task.abort_handle());
        Ok(bound)
    }
}

/// A trailers-only answer (the status in the headers, no body).
fn trailers_only(http: StatusCode, grpc_status: u32, message: &str) -> Response<Body> {
    let mut resp = Response::new(Empty::new().boxed());
    *resp.status_mut() = http;
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    headers.insert("grpc-status", HeaderValue::from(grpc_status));
    if let Ok(value) = HeaderValue::from_str(&percent_encode(message)) {
        headers.insert("grpc-message", value);
    }
    resp
}

/// gRPC's `grpc-message` encoding: bytes outside printable ASCII, and `%`, as `%XX`.
pub fn percent_encode(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    for b in message.bytes() {
        if (0x20..=0x7e).contains(&b) && b != b'%' {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn is_grpc(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| {
            v == "application/grpc"
                || v.starts_with("application/grpc+")
                || v.starts_with("application/grpc;")
        })
}

async fn answer(runtimed: &Runtimed, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_owned();
    if req.method() != Method::POST {
        runtimed.count_request(None);
        return trailers_only(
            StatusCode::METHOD_NOT_ALLOWED,
            13,
            &format!("invalid gRPC request method {:?}", req.method().as_str()),
        );
    }
    if !is_grpc(req.headers()) {
        runtimed.count_request(None);
        let ct = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_owned();
        return trailers_only(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            code::INVALID_ARGUMENT,
            &format!("invalid gRPC request content-type {ct:?}"),
        );
    }
    if path != STATUS_PATH {
        runtimed.count_request(None);
        let message = match path.strip_prefix(SERVICE_PREFIX) {
            Some(method) => format!("method {method} not implemented"),
            None => {
                let service = path
                    .trim_start_matches('/')
                    .split('/')
                    .next()
                    .unwrap_or_default();
                format!("unknown service {service}")
            }
        };
        return trailers_only(StatusCode::OK, code::UNIMPLEMENTED, &message);
    }
    let body = match Limited::new(req.into_body(), MAX_REQUEST + 5)
        .collect()
        .await
    {
        Ok(body) => body.to_bytes(),
        Err(_) => {
            runtimed.count_request(None);
            return trailers_only(
                StatusCode::OK,
                code::RESOURCE_EXHAUSTED,
                &format!("grpc: received message larger than max ({MAX_REQUEST})"),
            );
        }
    };
    let request: StatusRequest = match unframe(&body, MAX_REQUEST) {
        Ok(request) => request,
        Err(err) => {
            runtimed.count_request(None);
            return trailers_only(
                StatusCode::OK,
                code::INVALID_ARGUMENT,
                &format!("grpc: error unmarshalling request: {err}"),
            );
        }
    };
    runtimed.count_request(Some(&request.id));
    if request.id.is_empty() {
        return trailers_only(
            StatusCode::OK,
            code::INVALID_ARGUMENT,
            "request id is required",
        );
    }
    let Some(status) = runtimed.status(&request.id) else {
        return trailers_only(
            StatusCode::OK,
            code::NOT_FOUND,
            &format!("request {} not found", request.id),
        );
    };
    let mut trailers = HeaderMap::new();
    trailers.insert("grpc-status", HeaderValue::from(code::OK));
    let frames = vec![
        Ok::<_, Infallible>(Frame::data(frame(&status))),
        Ok(Frame::trailers(trailers)),
    ];
    let mut resp = Response::new(StreamBody::new(futures::stream::iter(frames)).boxed());
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/grpc"),
    );
    resp
}

/// What a gRPC client makes of a Status call.
#[derive(Debug, PartialEq)]
pub struct StatusAnswer {
    /// `grpc-status` (from the trailers, or the headers of a trailers-only answer).
    pub grpc_status: u32,
    pub grpc_message: String,
    /// The message, when the call succeeded.
    pub response: Option<kruntimes_core::runtimed::StatusResponse>,
}

/// Calls `Status(id)` on a status endpoint over h2c, as a gRPC client does (for tests that
/// check what a simulated runtimed serves).
pub async fn call_status(addr: SocketAddr, id: &str) -> std::io::Result<StatusAnswer> {
    let stream = tokio::net::TcpStream::connect(addr).await?;
    let (mut sender, conn) =
        hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
            .await
            .map_err(std::io::Error::other)?;
    tokio::spawn(conn);
    let req = Request::builder()
        .method(Method::POST)
        .uri(format!("http://{addr}{STATUS_PATH}"))
        .header(header::CONTENT_TYPE, "application/grpc")
        .header("te", "trailers")
        .body(http_body_util::Full::new(frame(&StatusRequest {
            id: id.into(),
        })))
        .map_err(std::io::Error::other)?;
    let resp = sender
        .send_request(req)
        .await
        .map_err(std::io::Error::other)?;
    let (parts, body) = resp.into_parts();
    let collected = body.collect().await.map_err(std::io::Error::other)?;
    let trailers = collected.trailers().cloned().unwrap_or_default();
    let bytes = collected.to_bytes();
    let field = |name: &str| {
        trailers
            .get(name)
            .or_else(|| parts.headers.get(name))
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let grpc_status = field("grpc-status")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("no grpc-status (HTTP {})", parts.status)))?;
    let response = if bytes.is_empty() {
        None
    } else {
        Some(unframe(&bytes, 64 << 20).map_err(std::io::Error::other)?)
    };
    Ok(StatusAnswer {
        grpc_status,
        grpc_message: field("grpc-message").unwrap_or_default(),
        response,
    })
}

#[cfg(test)]
mod tests {
    use http_body_util::Full;
    use kruntimes_core::runtimed::{ExecutionState, StatusResponse};

    use super::*;
    use crate::sim::cri::Stream;
    use crate::sim::runtimed::{Phase, PodIdentity, RuntimedConfig, Sink};

    struct Answer {
        http: StatusCode,
        headers: HeaderMap,
        body: Bytes,
        trailers: Option<HeaderMap>,
    }

    /// One request over a fresh h2c connection, as a gRPC client sends it.
    async fn call(addr: SocketAddr, method: Method, path: &str, ct: &str, body: Bytes) -> Answer {
        let stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(stream))
                .await
                .expect("h2c handshake");
        tokio::spawn(conn);
        let req = Request::builder()
            .method(method)
            .uri(format!("http://{addr}{path}"))
            .header(header::CONTENT_TYPE, ct)
            .header("te", "trailers")
            .body(Full::new(body))
            .expect("request");
        let resp = sender.send_request(req).await.expect("response");
        let (parts, body) = resp.into_parts();
        let collected = body.collect().await.expect("body");
        let trailers = collected.trailers().cloned();
        Answer {
            http: parts.status,
            headers: parts.headers,
            body: collected.to_bytes(),
            trailers,
        }
    }

    async fn status_call(addr: SocketAddr, id: &str) -> Answer {
        call(
            addr,
            Method::POST,
            STATUS_PATH,
            "application/grpc",
            frame(&StatusRequest { id: id.into() }),
        )
        .await
    }

    fn header<'a>(map: &'a HeaderMap, name: &str) -> &'a str {
        map.get(name).and_then(|v| v.to_str().ok()).unwrap_or("")
    }

    async fn serving() -> (Runtimed, SocketAddr) {
        let r = Runtimed::new(RuntimedConfig::new(
            PodIdentity {
                namespace: "team-a".into(),
                runtime: "bash".into(),
                pod: "bash-0".into(),
            },
            Sink::Memory,
        ));
        let addr = r
            .serve_status("127.0.0.1:0".parse().unwrap())
            .await
            .expect("serve");
        (r, addr)
    }

    #[tokio::test]
    async fn answers_a_running_execution_with_its_output_so_far() {
        let (r, addr) = serving().await;
        r.start("u-1", "run-1").unwrap();
        r.print("u-1", Stream::Stdout, "one\ntw").unwrap();
        r.print("u-1", Stream::Stderr, "e\n").unwrap();
        let a = status_call(addr, "u-1").await;
        assert_eq!(a.http, StatusCode::OK);
        assert_eq!(header(&a.headers, "content-type"), "application/grpc");
        assert!(a.headers.get("grpc-status").is_none(), "status in trailers");
        let trailers = a.trailers.expect("trailers");
        assert_eq!(header(&trailers, "grpc-status"), "0");
        let resp: StatusResponse = unframe(&a.body, 1 << 20).expect("one message");
        assert_eq!(
            resp,
            StatusResponse {
                id: "u-1".into(),
                state: ExecutionState::Running as i32,
                exit_code: 0,
                stdout: "one\ntw".into(),
                stderr: "e\n".into(),
                error_message: String::new(),
            }
        );
        assert_eq!(r.status_requests("u-1"), 1);
        let answer = call_status(addr, "u-1").await.expect("call");
        assert_eq!((answer.grpc_status, answer.response), (0, Some(resp)));
        assert_eq!(r.status_requests("u-1"), 2);
    }

    #[tokio::test]
    async fn an_unknown_or_forgotten_id_is_not_found_trailers_only() {
        let (r, addr) = serving().await;
        let a = status_call(addr, "nope").await;
        assert_eq!(a.http, StatusCode::OK);
        assert_eq!(header(&a.headers, "content-type"), "application/grpc");
        assert_eq!(header(&a.headers, "grpc-status"), "5");
        assert_eq!(header(&a.headers, "grpc-message"), "request nope not found");
        assert!(a.body.is_empty());

        r.start("u-1", "run-1").unwrap();
        assert!(status_call(addr, "u-1").await.trailers.is_some());
        r.finish("u-1", Phase::Succeeded).unwrap();
        let a = status_call(addr, "u-1").await;
        assert_eq!(header(&a.headers, "grpc-status"), "5");
        assert_eq!(r.status_requests("u-1"), 2);
        assert_eq!(r.status_requests("nope"), 1);
    }

    #[tokio::test]
    async fn other_methods_are_unimplemented() {
        let (r, addr) = serving().await;
        let body = frame(&StatusRequest { id: "u-1".into() });
        for (path, message) in [
            (
                "/executor.v1.Runtime/Execute",
                "method Execute not implemented",
            ),
            (
                "/executor.v1.Runtime/Forget",
                "method Forget not implemented",
            ),
            (
                "/grpc.health.v1.Health/Check",
                "unknown service grpc.health.v1.Health",
            ),
        ] {
            let a = call(addr, Method::POST, path, "application/grpc", body.clone()).await;
            assert_eq!(a.http, StatusCode::OK, "{path}");
            assert_eq!(header(&a.headers, "grpc-status"), "12", "{path}");
            assert_eq!(header(&a.headers, "grpc-message"), message, "{path}");
        }
        assert_eq!(r.counters().requests, 3);
        assert!(r.counters().by_id.is_empty());
    }

    #[tokio::test]
    async fn a_bad_body_is_invalid_argument_and_a_huge_one_is_refused() {
        let (r, addr) = serving().await;
        r.start("u-1", "run-1").unwrap();
        let mut compressed = frame(&StatusRequest { id: "u-1".into() }).to_vec();
        compressed[0] = 1;
        for body in [
            Bytes::new(),
            Bytes::from_static(b"\x00\x00\x00"),
            Bytes::from_static(b"\x00\x00\x00\x00\x02\xff\xff"),
            Bytes::from(compressed),
            frame(&StatusRequest { id: String::new() }),
        ] {
            let a = call(
                addr,
                Method::POST,
                STATUS_PATH,
                "application/grpc",
                body.clone(),
            )
            .await;
            assert_eq!(a.http, StatusCode::OK, "{body:?}");
            assert_eq!(header(&a.headers, "grpc-status"), "3", "{body:?}");
            assert!(!header(&a.headers, "grpc-message").is_empty(), "{body:?}");
        }
        let huge = frame(&StatusRequest {
            id: "x".repeat(MAX_REQUEST * 2),
        });
        let a = call(addr, Method::POST, STATUS_PATH, "application/grpc", huge).await;
        assert_eq!(header(&a.headers, "grpc-status"), "8");

        let a = call(
            addr,
            Method::GET,
            STATUS_PATH,
            "application/grpc",
            Bytes::new(),
        )
        .await;
        assert_eq!(a.http, StatusCode::METHOD_NOT_ALLOWED);
        let a = call(
            addr,
            Method::POST,
            STATUS_PATH,
            "application/json",
            frame(&StatusRequest { id: "u-1".into() }),
        )
        .await;
        assert_eq!(a.http, StatusCode::UNSUPPORTED_MEDIA_TYPE);
        assert_eq!(
            r.status_requests("u-1"),
            0,
            "no bad request reached the execution"
        );
    }

    #[test]
    fn grpc_messages_are_percent_encoded() {
        assert_eq!(
            percent_encode("request a b not found"),
            "request a b not found"
        );
        assert_eq!(percent_encode("100%\n\u{e9}"), "100%25%0A%C3%A9");
    }
}
