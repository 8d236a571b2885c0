//! `/v1` invoke over HTTP/1.1 without hyper or the router: the Console
//! listener's accept loop hands a keep-alive connection's requests here
//! ([`kruntimes_transport::serve::FastPath`]), and an invoke is read, checked,
//! forwarded and answered on the connection's own buffers, with one write
//! each way. Every rule is the router's, through the same functions: the
//! header bound, the credentials and the Origin rule, admission
//! ([`super::admit_invoke`]), the body bound and deadline, the forwarded
//! and stripped headers, the security headers, the request ID, the metrics
//! and the access line. What this path does not take (another route or
//! method, a query, a percent-encoded or over-long path, `Expect`, a
//! transfer coding, an oversized head) goes to hyper and the router,
//! together with the rest of its connection. An invoke over HTTP/2 is
//! framed by hyper and served here without the router (`Direct`).

use kruntimes_core::failure::{Reason, Refusal as _};
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::response::IntoResponse;
use bytes::Buf;
use http::Request;
use http::Response;
use http::{Method, header};
use kruntimes_core::observe::{Observer, access_logged, request_id, request_id_value};
use kruntimes_core::trace;
use kruntimes_transport::h1::{self, BodyKind, RequestHead, field};
use kruntimes_transport::serve::{
    ConnectionLocal, DirectAnswer, FastConn, FastPath, PeerCertificates, read_into,
};
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;

use super::memo::CallerMemo;
use super::policy::{INVOCATION_ID, answers_call, connection_listed, is_stripped};
use super::upstream::{
    AnswerBody, Framing, Piece, Upstream, Upstreams, field_num, framing, write_request_head,
};
use super::{AccessFailure, AccessState, AdmittedInvoke, INVOKE_ROUTE, admit_invoke, invoke_call};
use crate::error::{ConsoleError, REFUSAL_DRAIN_BYTES, refuse};
use crate::headers::{SECURITY_HEADERS, header_bytes, is_security_header, oversized};
use crate::origin::{caller, caller_until, cross_origin};
use crate::state::{ConsoleState, RequestCredentials};

/// The largest write buffer a connection keeps between calls.
const KEPT_OUT_BYTES: usize = 64 << 10;

/// How long a refused request's body may take to be read and dropped.
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// The invoke fast path of the Console listener.
pub struct InvokeFastPath {
    console: Arc<ConsoleState>,
    access: Arc<AccessState>,
    upstreams: Arc<Upstreams>,
    observer: Arc<Observer>,
    max_header_bytes: usize,
    /// The security headers, written as they are on every answer.
    security: Vec<u8>,
    /// What an HTTP/2 invoke served directly needs (one reference a call).
    direct: Arc<Direct>,
}

impl InvokeFastPath {
    /// Calls go to the gateways through `access`'s client.
    pub fn new(
        console: Arc<ConsoleState>,
        access: Arc<AccessState>,
        observer: Arc<Observer>,
        max_header_bytes: usize,
    ) -> Self {
        let mut security = Vec::new();
        for (name, value) in SECURITY_HEADERS {
            field(&mut security, name, value.as_bytes());
        }
        let upstreams = access.upstreams.clone();
        let direct = Arc::new(Direct {
            console: console.clone(),
            access: access.clone(),
            observer: observer.clone(),
            max_header_bytes,
        });
        Self {
            console,
            access,
            upstreams,
            observer,
            max_header_bytes,
            security,
            direct,
        }
    }
}

/// The Run an invoke's target names: `/v1/namespaces/{ns}/runs/{name}/{uid}/invoke`,
/// every segment made of unreserved characters only (nothing to decode).
pub(super) fn invoke_path(target: &str) -> Option<(&str, &str, &str)> {
    let rest = target.strip_prefix("/v1/namespaces/")?;
    // Split on bytes: every segment must be ASCII anyway, and the char
    // searcher cost more than the rest of the check.
    let mut parts = rest.as_bytes().split(|&b| b == b'/');
    let (ns, runs, name, uid, invoke) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    fn plain(s: &[u8]) -> Option<&str> {
        let ok = !s.is_empty()
            && s.iter()
                .all(|&b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'));
        if ok {
            std::str::from_utf8(s).ok()
        } else {
            None
        }
    }
    if parts.next().is_some() || runs != b"runs" || invoke != b"invoke" {
        return None;
    }
    Some((plain(ns)?, plain(name)?, plain(uid)?))
}

/// The request body's length: a `Content-Length`, or none at all (empty).
fn request_length(headers: &http::HeaderMap) -> Option<u64> {
    match h1::body_kind(headers)? {
        BodyKind::Length(n) => Some(n),
        BodyKind::Close => Some(0),
        BodyKind::Chunked => None,
    }
}

fn status_line(out: &mut Vec<u8>, code: u16) {
    use std::io::Write as _;
    let _ = write!(out, "HTTP/1.1 {code} ");
    out.extend_from_slice(h1::reason(code).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// How an exchange with the gateway ended before an answer was relayed.
enum Failed {
    /// Answer this.
    Answer(ConsoleError),
    /// The caller's connection broke or the answer broke off midway: close.
    Abort,
}

impl FastPath for InvokeFastPath {
    fn claims(&self, head: &RequestHead, headers: &http::HeaderMap) -> bool {
        head.method == Method::POST
            && invoke_path(&head.target).is_some()
            && !headers.contains_key(header::EXPECT)
            && !crate::origin::is_upgrade(headers)
            && request_length(headers).is_some()
            && header_bytes(headers) <= self.max_header_bytes
    }

    fn serve<'a>(
        &'a self,
        head: RequestHead,
        conn: &'a mut FastConn,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>> {
        if trace::enabled() {
            use tracing::Instrument;
            let span = trace::server_span("POST", Some(INVOKE_ROUTE), &conn.headers);
            return Box::pin(self.invoke(head, conn).instrument(span));
        }
        Box::pin(self.invoke(head, conn))
    }

    fn shortest_timeout(&self) -> Duration {
        let b = &self.access.bounds;
        b.body_timeout
            .min(b.total_timeout)
            .min(b.connect_timeout)
            .min(DRAIN_TIMEOUT)
    }

    #[allow(clippy::result_large_err)] // as the trait's: the request moves back
    fn direct(&self, req: Request<Body>) -> Result<DirectAnswer, Request<Body>> {
        let claimed = req.method() == Method::POST
            && req.uri().query().is_none()
            && !crate::origin::is_upgrade(req.headers())
            && invoke_path(req.uri().path()).is_some();
        if !claimed {
            return Err(req);
        }
        let direct = self.direct.clone();
        if trace::enabled() {
            use tracing::Instrument;
            let span = trace::server_span("POST", Some(INVOKE_ROUTE), req.headers());
            return Ok(DirectAnswer(Box::pin(
                direct.serve(req, Some(span.clone())).instrument(span),
            )));
        }
        Ok(DirectAnswer(Box::pin(direct.serve(req, None))))
    }
}

/// An HTTP/2 invoke served without the router: its layers (the observer,
/// the header bound with the security headers, the credentials with the
/// Origin rule), written out for this one route in the router's order,
/// around the router's own handler ([`invoke_call`]).
struct Direct {
    console: Arc<ConsoleState>,
    access: Arc<AccessState>,
    observer: Arc<Observer>,
    max_header_bytes: usize,
}

impl Direct {
    async fn serve(
        self: Arc<Self>,
        req: Request<Body>,
        span: Option<tracing::Span>,
    ) -> Response<Body> {
        let started = std::time::Instant::now();
        let id = request_id();
        let uri = access_logged().then(|| req.uri().clone());
        let mut resp = match oversized(req.headers(), req.uri(), self.max_header_bytes) {
            Some(refusal) => refuse(req.into_body(), refusal.into()).await,
            None => self.invoke(req).await,
        };
        crate::headers::secure(resp.headers_mut(), true);
        let code = resp.status().as_u16();
        if let Some(v) = request_id_value(&id) {
            resp.headers_mut().insert("x-request-id", v);
        }
        if let Some(span) = &span {
            trace::record_response(span, code, &id);
        }
        let path = uri.as_ref().map(|u| u.path());
        self.observer.metrics.direct_requests.inc();
        self.observer
            .record("v1", "POST", path, code, started.elapsed(), &id);
        resp
    }

    /// The credentials layer, then the handler.
    async fn invoke(&self, req: Request<Body>) -> Response<Body> {
        let peer = req
            .extensions()
            .get::<PeerCertificates>()
            .cloned()
            .unwrap_or_default();
        // The connection's memo answers a header token it has seen, until
        // the token cache's deadline for it.
        let memo = req.extensions().get::<ConnectionLocal>();
        let kept = memo.and_then(|m| {
            m.with(|c: &mut CallerMemo| c.credentials(req.headers(), std::time::Instant::now()))
        });
        let caller = match kept {
            Some(creds) => {
                self.console.authn.tokens().reused();
                match cross_origin(&creds, req.method(), req.headers(), req.uri()) {
                    Some(e) => return refuse(req.into_body(), e).await,
                    None => RequestCredentials(Some(creds)),
                }
            }
            None => {
                let method = req.method();
                match caller_until(&self.console, method, req.headers(), req.uri(), &peer).await {
                    Ok((c, until)) => {
                        if let (Some(m), Some(creds), Some(until)) = (memo, &c.0, until) {
                            m.with(|k: &mut CallerMemo| k.keep_credentials(creds, until));
                        }
                        c
                    }
                    Err(e) => return refuse(req.into_body(), e).await,
                }
            }
        };
        // The Run the target names, read again from a copy of the target
        // (its bytes are shared, not copied): `direct` claimed it.
        let uri = req.uri().clone();
        let Some((ns, name, uid)) = invoke_path(uri.path()) else {
            return refuse(req.into_body(), ConsoleError::not_found("no such route")).await;
        };
        invoke_call(&self.access, &caller, ns, name, uid, req).await
    }
}

impl InvokeFastPath {
    async fn invoke(&self, head: RequestHead, conn: &mut FastConn) -> bool {
        let started = std::time::Instant::now();
        let id = request_id();
        let Some((ns, name, uid)) = invoke_path(&head.target) else {
            return false;
        };
        let len = request_length(&conn.headers).unwrap_or(0);
        let close = h1::wants_close(&conn.headers);
        let admitted = match self.admit(conn, ns, name, uid).await {
            Ok(a) => a,
            Err(e) => {
                // As the router: a refusal reads (and drops) a little of the
                // body first; a 413 whose announced body is not huge, all of it.
                let max = self.access.bounds.max_request_bytes as u64;
                let budget = if e.is(Reason::PayloadTooLarge) && len <= max * 2 {
                    len
                } else {
                    REFUSAL_DRAIN_BYTES as u64
                };
                // A body over the budget is read up to it (so the answer is
                // not lost to a reset), and the connection then closes.
                let drained = skip(conn, len.min(budget)).await && len <= budget;
                let keep = drained && !close;
                let (code, took) = (e.code().as_u16(), started.elapsed());
                let kept = self.answer_error(conn, e, &id, keep).await && keep;
                self.record(&head, code, took, &id);
                return kept;
            }
        };
        match self
            .forward(conn, &head, admitted, len, started, &id, close)
            .await
        {
            Ok(keep) => keep,
            Err(Failed::Answer(e)) => {
                let (code, took) = (e.code().as_u16(), started.elapsed());
                // The request body may be unread (408): the connection closes.
                self.answer_error(conn, e, &id, false).await;
                self.record(&head, code, took, &id);
                false
            }
            Err(Failed::Abort) => false,
        }
    }

    /// The credentials layer and the handler's admission, as the router runs them.
    async fn admit(
        &self,
        conn: &FastConn,
        ns: &str,
        name: &str,
        uid: &str,
    ) -> Result<AdmittedInvoke, ConsoleError> {
        let caller = caller(
            &self.console,
            &Method::POST,
            &conn.headers,
            &http::Uri::default(),
            &conn.peer,
        )
        .await?;
        admit_invoke(&self.access, &caller, ns, name, uid, &conn.headers, None).await
    }

    /// Counts the call and writes its access line: after the answer is
    /// written, with the time taken up to its head, as the router's observer.
    fn record(&self, head: &RequestHead, code: u16, took: Duration, id: &[u8; 16]) {
        let path = access_logged().then_some(head.target.as_str());
        if trace::enabled() {
            trace::record_response(&tracing::Span::current(), code, id);
        }
        self.observer.metrics.fast_path_requests.inc();
        self.observer.record("v1", "POST", path, code, took, id);
    }

    /// Writes a refusal as the router renders it; `keep`: the connection stays open.
    async fn answer_error(
        &self,
        conn: &mut FastConn,
        e: ConsoleError,
        id: &[u8; 16],
        keep: bool,
    ) -> bool {
        let mut resp = e.into_response();
        crate::headers::secure(resp.headers_mut(), true);
        if let Some(v) = request_id_value(id) {
            resp.headers_mut().insert("x-request-id", v);
        }
        let (parts, body) = resp.into_parts();
        let body = axum::body::to_bytes(body, 1 << 20)
            .await
            .unwrap_or_default();
        let out = &mut conn.out;
        out.clear();
        status_line(out, parts.status.as_u16());
        for (k, v) in &parts.headers {
            field(out, k.as_str(), v.as_bytes());
        }
        field(out, "date", &h1::date());
        if !keep {
            field(out, "connection", b"close");
        }
        field_num(out, "content-length", body.len() as u64);
        out.extend_from_slice(b"\r\n");
        out.extend_from_slice(&body);
        flush_out(conn, Instant::now() + DRAIN_TIMEOUT).await
    }

    /// Reads the body, sends the call to the gateway and relays its answer.
    /// `Ok(keep)`: the answer was relayed; whether the connection stays open.
    #[allow(clippy::too_many_arguments)]
    async fn forward(
        &self,
        conn: &mut FastConn,
        head: &RequestHead,
        admitted: AdmittedInvoke,
        len: u64,
        started: std::time::Instant,
        id: &[u8; 16],
        close: bool,
    ) -> Result<bool, Failed> {
        let AdmittedInvoke {
            creds,
            inv,
            target,
            slot,
            path,
            held,
        } = admitted;
        let bounds = &self.access.bounds;
        // The upstream request: head, then the body as it arrives.
        let mut req = std::mem::take(&mut conn.out);
        req.clear();
        let span =
            trace::enabled().then(|| trace::gateway_span(INVOKE_ROUTE, &target.host, target.port));
        write_request_head(
            &mut req,
            &path,
            &target,
            &conn.headers,
            &creds.caller,
            &inv,
            span.as_ref(),
            len,
        );
        let body_deadline = Instant::now() + bounds.body_timeout;
        let mut left = len as usize;
        loop {
            let take = left.min(conn.buf.len());
            req.extend_from_slice(&conn.buf[..take]);
            conn.buf.advance(take);
            left -= take;
            if left == 0 {
                break;
            }
            match conn
                .timer
                .run(body_deadline, read_into(&mut conn.io, &mut conn.buf))
                .await
            {
                Some(Ok(n)) if n > 0 => {}
                Some(_) => {
                    conn.out = req;
                    return Err(Failed::Answer(ConsoleError::bad_request(
                        "the request body could not be read",
                    )));
                }
                None => {
                    conn.out = req;
                    return Err(Failed::Answer(
                        AccessFailure::BodyTimeout {
                            secs: bounds.body_timeout.as_secs_f32(),
                        }
                        .into(),
                    ));
                }
            }
        }
        let deadline = Instant::now() + bounds.total_timeout;
        let exchange = match &span {
            Some(span) => {
                use tracing::Instrument;
                let x = self
                    .upstreams
                    .exchange(&mut conn.timer, &target, &req, deadline)
                    .instrument(span.clone())
                    .await;
                trace::record_call(span, x.as_ref().ok().map(|(_, head)| head.status));
                x
            }
            None => {
                self.upstreams
                    .exchange(&mut conn.timer, &target, &req, deadline)
                    .await
            }
        };
        // A large body's buffer is not kept for the connection's next call:
        // only bytes under the budget stay in memory.
        if req.capacity() > KEPT_OUT_BYTES {
            req = Vec::new();
        }
        conn.out = req;
        // The body went out with the request: its bytes are no longer held.
        drop(held);
        let (mut up, answer) = match exchange {
            Ok(x) => x,
            Err(e) => return Err(Failed::Answer(e)),
        };
        // An answer to another call: the connection is dropped with it.
        if let Err(e) = answers_call(&up.headers, &inv, &target) {
            return Err(Failed::Answer(e.into()));
        }
        // The answer's framing and size, decided before any of it is relayed.
        let max = bounds.max_response_bytes;
        let framing = framing(answer, &up.headers, max, &target).map_err(Failed::Answer)?;
        let status = answer.status;
        let Framing {
            kind,
            no_body,
            reusable,
        } = framing;
        // A listener that is stopping closes this connection after the answer.
        let close = close || conn.stopping();
        let took = started.elapsed();
        // The answer's head.
        let out = &mut conn.out;
        out.clear();
        status_line(out, status);
        let listed = connection_listed(&up.headers);
        let (mut dated, mut cached) = (false, false);
        for (k, v) in &up.headers {
            let n = k.as_str();
            if is_stripped(k, &listed)
                || is_security_header(n)
                || n == INVOCATION_ID
                || n == "x-request-id"
            {
                continue;
            }
            dated |= n == "date";
            cached |= n == "cache-control";
            field(out, n, v.as_bytes());
        }
        field(out, INVOCATION_ID, inv.as_bytes());
        out.extend_from_slice(&self.security);
        if !cached {
            field(out, "cache-control", b"no-store");
        }
        field(out, "x-request-id", id);
        if !dated {
            field(out, "date", &h1::date());
        }
        if close {
            field(out, "connection", b"close");
        }
        // A 204 or 304 has no body and announces none; a body of unknown
        // length goes to the caller in chunks.
        let chunks = match kind {
            BodyKind::Length(n) => {
                if !no_body {
                    field_num(out, "content-length", n);
                }
                false
            }
            BodyKind::Chunked | BodyKind::Close => {
                field(out, "transfer-encoding", b"chunked");
                true
            }
        };
        out.extend_from_slice(b"\r\n");
        let body = AnswerBody::new(&framing, max);
        let read = relay(conn, &mut up, body, chunks, deadline).await;
        // The gateway's answer is read to its end: its connection is back
        // in the pool before the caller has the answer's last bytes, so a
        // call the caller sends once it has them finds it there.
        if read && reusable && up.buf.is_empty() {
            self.upstreams.put(&target, up);
        }
        let relayed = read && flush_out(conn, deadline).await;
        drop(slot);
        self.record(head, status, took, id);
        if !relayed {
            return Err(Failed::Abort);
        }
        Ok(!close)
    }
}

/// Reads and drops `len` bytes of body; false when they did not come in time.
async fn skip(conn: &mut FastConn, len: u64) -> bool {
    let deadline = Instant::now() + DRAIN_TIMEOUT;
    let mut left = len as usize;
    loop {
        let take = left.min(conn.buf.len());
        conn.buf.advance(take);
        left -= take;
        if left == 0 {
            return true;
        }
        match conn
            .timer
            .run(deadline, read_into(&mut conn.io, &mut conn.buf))
            .await
        {
            Some(Ok(n)) if n > 0 => {}
            _ => return false,
        }
    }
}

/// Writes `conn.out` to the caller.
async fn flush_out(conn: &mut FastConn, deadline: Instant) -> bool {
    let FastConn { io, out, timer, .. } = conn;
    let wrote = timer
        .run(deadline, async {
            io.write_all(out).await?;
            io.flush().await
        })
        .await;
    out.clear();
    matches!(wrote, Some(Ok(())))
}

/// Relays an answer's body after the head in `conn.out`, as it is read
/// (written out before each wait for more, and whenever about 16 KiB are
/// waiting), as chunks when `chunks`; true once the answer is read to its
/// end, with its last part (up to 16 KiB and one read) left in `conn.out`
/// for the caller to send after it has put the gateway's connection back;
/// false when the answer or the caller broke off.
async fn relay(
    conn: &mut FastConn,
    up: &mut Upstream,
    mut body: AnswerBody,
    chunks: bool,
    deadline: Instant,
) -> bool {
    loop {
        match body.next(&mut up.buf) {
            Ok(Piece::Data(data)) => {
                if chunks {
                    use std::io::Write as _;
                    let _ = write!(conn.out, "{:x}\r\n", data.len());
                }
                conn.out.extend_from_slice(&data);
                if chunks {
                    conn.out.extend_from_slice(b"\r\n");
                }
                // A bound on what waits, for a read that brought much (reads
                // are a few KiB). The part that ends the body stays for the
                // caller's flush whatever its size (at most 16 KiB and this
                // read): written here, it could reach the caller before the
                // gateway's connection is back in the pool.
                if conn.out.len() >= 16 << 10 && !body.is_done() && !flush_out(conn, deadline).await
                {
                    return false;
                }
                continue;
            }
            Ok(Piece::End) => {
                if chunks {
                    conn.out.extend_from_slice(b"0\r\n\r\n");
                }
                // The caller's flush sends what is left.
                return true;
            }
            Ok(Piece::More) => {}
            Err(_) => return false,
        }
        if !conn.out.is_empty() && !flush_out(conn, deadline).await {
            return false;
        }
        match conn
            .timer
            .run(deadline, read_into(&mut up.io, &mut up.buf))
            .await
        {
            Some(Ok(k)) if k > 0 => {}
            Some(Ok(_)) if body.closed().is_ok() => {}
            _ => return false,
        }
    }
}

#[cfg(test)]
#[path = "fast_tests.rs"]
mod tests;
