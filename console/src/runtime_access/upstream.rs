//! The gateway client of every invoke: keep-alive HTTP/1.1 connections to
//! Runtime gateways, one pool per connection thread, so a call and the
//! gateway connection it uses stay on one thread. HTTPS only, HTTP/1.1, a
//! connection idle 60 s is closed, a request is never re-sent once it may
//! have reached the gateway, an answer is matched to its call and a
//! connection is reused only when its answer's end was certain and nothing
//! follows it. The HTTP/1.1 fast path ([`super::fast`]) relays an answer
//! onto its caller's connection itself; the router (HTTP/2 callers and the
//! HTTP/1.1 requests the fast path leaves) streams it as a [`GatewayBody`].

use std::collections::HashMap;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker, ready};
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http::{HeaderMap, HeaderValue, header};
use kruntimes_core::auth::Caller as Identity;
use kruntimes_core::limit::Slot;
use kruntimes_core::trace;
use kruntimes_transport::h1::{self, BodyKind, Parsed, field};
use kruntimes_transport::serve::{Watchdog, read_into};
use kruntimes_transport::workers::PerThread;
use rustls::ClientConfig;
use tokio::io::AsyncWriteExt;
use tokio::time::Instant;

use super::failure::AccessFailure;
use super::gateway::{self, GatewayError, GatewayTarget};
use super::policy::{
    INVOCATION_ID, broke_off, identity_fields, is_final_answer, is_forwarded_request_header,
    is_passable,
};
use crate::error::ConsoleError;

/// Largest response head read from a gateway (hyper's default read buffer bound).
const MAX_RESPONSE_HEAD: usize = 8192 + 4096 * 100;

/// How long an unused connection is kept.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// One connection to a gateway, with its read buffer and header map.
pub struct Upstream {
    /// The TLS connection.
    pub io: gateway::GatewayStream,
    /// Bytes read from the gateway and not yet consumed.
    pub buf: BytesMut,
    /// The headers of the answer read last (the map is reused from call to
    /// call).
    pub headers: HeaderMap,
}

impl Upstream {
    /// Has the gateway closed (or sent anything) since the last answer? An
    /// idle connection's socket has nothing to read; readiness is what the
    /// reactor last saw, so this costs no system call.
    fn is_closed(&self) -> bool {
        if !self.buf.is_empty() {
            return true;
        }
        let mut cx = Context::from_waker(Waker::noop());
        matches!(self.io.get_ref().poll_read_ready(&mut cx), Poll::Ready(_))
    }

    /// Does TLS hold bytes the last answer did not account for (decrypted
    /// and not read, or the gateway's close)? Such a connection is not
    /// reused: its bytes would begin the next caller's answer.
    fn has_leftovers(&self) -> bool {
        self.io.has_buffered()
    }
}

struct Idle {
    conn: Box<Upstream>,
    since: Instant,
}

#[derive(Default)]
struct Pool {
    idle: HashMap<GatewayTarget, Vec<Idle>>,
    reaping: bool,
}

impl Pool {
    fn prune(&mut self, now: Instant) {
        self.idle.retain(|_, conns| {
            conns.retain(|c| now.duration_since(c.since) < IDLE_TIMEOUT);
            !conns.is_empty()
        });
    }
}

/// The pools of every connection thread.
pub struct Upstreams {
    pools: PerThread<Arc<Mutex<Pool>>>,
    tls: Arc<ClientConfig>,
    connect_timeout: Duration,
}

impl Upstreams {
    /// Pools for `threads` connection threads (and the main runtime), whose
    /// connections use `tls` and wait at most `connect_timeout` for each step
    /// of connecting.
    pub fn new(threads: usize, tls: Arc<ClientConfig>, connect_timeout: Duration) -> Self {
        Self {
            pools: PerThread::new(threads, Default::default),
            tls,
            connect_timeout,
        }
    }

    /// An idle connection to `target` from this thread's pool, or `None`.
    pub fn idle(&self, target: &GatewayTarget) -> Option<Box<Upstream>> {
        let mut pool = self.pools.get().lock().unwrap_or_else(|e| e.into_inner());
        let conns = pool.idle.get_mut(target)?;
        let now = Instant::now();
        // The most recently used first: it is the warmest.
        let found = loop {
            let Some(c) = conns.pop() else { break None };
            if now.duration_since(c.since) < IDLE_TIMEOUT && !c.conn.is_closed() {
                break Some(c.conn);
            }
        };
        if conns.is_empty() {
            pool.idle.remove(target);
        }
        found
    }

    /// A new connection to `target` (TCP and TLS within the connect timeout).
    /// Boxed: a call moves its connection several times, and the TLS state
    /// is over a kilobyte.
    pub async fn connect(&self, target: &GatewayTarget) -> Result<Box<Upstream>, GatewayError> {
        let io = gateway::connect(&self.tls, target, self.connect_timeout).await?;
        Ok(Box::new(Upstream {
            io,
            buf: BytesMut::with_capacity(4096),
            headers: HeaderMap::new(),
        }))
    }

    /// Returns a connection whose last answer was read to its end.
    pub fn put(&self, target: &GatewayTarget, mut conn: Box<Upstream>) {
        if !conn.buf.is_empty() || conn.has_leftovers() {
            return;
        }
        conn.headers.clear();
        if conn.buf.capacity() > 64 << 10 {
            conn.buf = BytesMut::with_capacity(4096);
        }
        let pool = self.pools.get();
        let mut p = pool.lock().unwrap_or_else(|e| e.into_inner());
        let since = Instant::now();
        match p.idle.get_mut(target) {
            Some(v) => v.push(Idle { conn, since }),
            None => {
                p.idle.insert(target.clone(), vec![Idle { conn, since }]);
            }
        }
        if !p.reaping {
            p.reaping = true;
            // Closes connections idle too long while no call comes; ends
            // once the pool is empty (the next connection put starts another).
            let pool = pool.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(IDLE_TIMEOUT / 4).await;
                    let mut p = pool.lock().unwrap_or_else(|e| e.into_inner());
                    p.prune(Instant::now());
                    if p.idle.is_empty() {
                        p.reaping = false;
                        return;
                    }
                }
            });
        }
    }

    /// Sends `req` (head and body) on a pooled or new connection to
    /// `target` and reads the answer's head, every wait within `deadline`.
    /// Interim answers are read past; a gateway that answers (a refusal)
    /// and closes before it read the whole request has its answer relayed,
    /// on a connection not reused.
    pub async fn exchange(
        &self,
        timer: &mut Watchdog,
        target: &Arc<GatewayTarget>,
        req: &[u8],
        deadline: Instant,
    ) -> Result<(Box<Upstream>, AnswerHead), ConsoleError> {
        let timed_out = || ConsoleError::from(AccessFailure::GatewayTimeout);
        let mut up = match self.idle(target) {
            Some(up) => up,
            // A new connection's future (TCP, TLS) is large and the pooled
            // path needs none: on the heap, so the exchange stays small.
            None => match timer.run(deadline, Box::pin(self.connect(target))).await {
                Some(Ok(up)) => up,
                Some(Err(e)) => return Err(e.into()),
                None => return Err(timed_out()),
            },
        };
        let sent = timer
            .run(deadline, async {
                up.io.write_all(req).await?;
                up.io.flush().await
            })
            .await;
        let write_failed = match sent {
            Some(Ok(())) => None,
            Some(Err(e)) => Some(e.to_string()),
            None => return Err(timed_out()),
        };
        loop {
            match read_head(&mut up.buf, &mut up.headers) {
                Head::Final(head) => {
                    if !head.http11 || write_failed.is_some() {
                        // An HTTP/1.0 answer, or one to a request not
                        // wholly sent, leaves the connection unusable.
                        up.headers
                            .append(header::CONNECTION, HeaderValue::from_static("close"));
                    }
                    return Ok((up, head));
                }
                Head::More => {}
                Head::Malformed => return Err(broken_off(target, "malformed response head")),
            }
            match timer
                .run(deadline, read_into(&mut up.io, &mut up.buf))
                .await
            {
                Some(Ok(n)) if n > 0 => {}
                Some(Ok(_)) => {
                    return Err(broken_off(
                        target,
                        write_failed.as_deref().unwrap_or("closed"),
                    ));
                }
                Some(Err(e)) => {
                    let why = write_failed.unwrap_or_else(|| e.to_string());
                    return Err(broken_off(target, &why));
                }
                None => return Err(timed_out()),
            }
        }
    }

    /// Idle connections in this thread's pool (tests).
    pub fn idle_count(&self) -> usize {
        let p = self.pools.get().lock().unwrap_or_else(|e| e.into_inner());
        p.idle.values().map(Vec::len).sum()
    }
}

/// A final answer's status line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AnswerHead {
    /// Its status (200 to 999).
    pub status: u16,
    /// HTTP/1.1 (an HTTP/1.0 answer leaves the connection unusable, and
    /// has no transfer coding).
    pub http11: bool,
}

/// What [`read_head`] made of the bytes read so far.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Head {
    /// The final answer's head, consumed; its fields are in the map.
    Final(AnswerHead),
    /// Not whole yet (and under the head's bound).
    More,
    /// Not an answer this client reads: malformed, over the bound, or a 101.
    Malformed,
}

/// Reads an answer's head from the front of `buf`: interim answers (1xx
/// but 101) are consumed and read past, as hyper's client does, then the
/// final answer's head is consumed with its fields in `headers`.
pub fn read_head(buf: &mut BytesMut, headers: &mut HeaderMap) -> Head {
    loop {
        match h1::parse_response(buf, headers) {
            Parsed::Complete(h) if (100..200).contains(&h.status) && h.status != 101 => {
                buf.advance(h.len);
            }
            Parsed::Complete(h) if is_final_answer(h.status) => {
                buf.advance(h.len);
                return Head::Final(AnswerHead {
                    status: h.status,
                    http11: h.http11,
                });
            }
            Parsed::Partial if buf.len() < MAX_RESPONSE_HEAD => return Head::More,
            _ => return Head::Malformed,
        }
    }
}

/// A call dispatched and broken off: not retried (it may have run).
pub(crate) fn broken_off(target: &GatewayTarget, why: &str) -> ConsoleError {
    tracing::warn!(gateway = %target.authority(), error = why, connect = false, "Runtime gateway call failed");
    broke_off()
}

/// Writes an invoke's request head for `target` into `req`: the gateway's
/// `path`, the caller's headers that are forwarded, the caller's identity,
/// the invocation ID, the trace context of `span` and the body's length
/// (none for an empty body, as hyper's client sends it).
#[allow(clippy::too_many_arguments)]
pub fn write_request_head(
    req: &mut Vec<u8>,
    path: &str,
    target: &GatewayTarget,
    headers: &HeaderMap,
    caller: &Identity,
    inv: &HeaderValue,
    span: Option<&tracing::Span>,
    len: u64,
) {
    req.extend_from_slice(b"POST ");
    req.extend_from_slice(path.as_bytes());
    req.extend_from_slice(b" HTTP/1.1\r\n");
    host_field(req, target);
    for (k, v) in headers {
        if k.as_str() != INVOCATION_ID
            && is_forwarded_request_header(k)
            && is_passable(k, v.as_bytes())
        {
            field(req, k.as_str(), v.as_bytes());
        }
    }
    identity_fields(caller, |k, v| field(req, k, v.as_bytes()));
    field(req, INVOCATION_ID, inv.as_bytes());
    if let Some((parent, state)) = span.and_then(trace::headers_of) {
        field(req, "traceparent", parent.as_bytes());
        if let Some(state) = state {
            field(req, "tracestate", state.as_bytes());
        }
    }
    if len > 0 {
        field_num(req, "content-length", len);
    }
    req.extend_from_slice(b"\r\n");
}

/// The `host` field of a call to `target`, its port left out when 443
/// (written without the formatter: on every call).
pub fn host_field(req: &mut Vec<u8>, target: &GatewayTarget) {
    req.extend_from_slice(b"host: ");
    req.extend_from_slice(target.host.as_bytes());
    if target.port != 443 {
        req.push(b':');
        req.extend_from_slice(itoa::Buffer::new().format(target.port).as_bytes());
    }
    req.extend_from_slice(b"\r\n");
}

/// A field whose value is a number (written without an allocation).
pub fn field_num(out: &mut Vec<u8>, name: &str, n: u64) {
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b": ");
    out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
    out.extend_from_slice(b"\r\n");
}

/// How an answer's body ends, decided from its head before any of it is
/// relayed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Framing {
    /// Length, chunks, or the connection's close.
    pub kind: BodyKind,
    /// A 204 or 304: no body, whatever the head announces.
    pub no_body: bool,
    /// Its end is certain (a length or chunks; a 204 or 304 announcing no
    /// body), HTTP/1.1 and no close: the connection may carry another call.
    pub reusable: bool,
}

/// The framing of an answer with `head` and `headers`; an announced
/// length over `max` or a framing that cannot be read refuses it. A 204 or
/// 304 has no body whatever it announces; otherwise, as hyper's client
/// reads answers, an HTTP/1.0 answer may not name a transfer coding, but,
/// stricter than hyper, a length and a transfer coding together, several
/// lengths or a transfer coding other than a lone `chunked` are refused
/// rather than guessed at.
pub fn framing(
    head: AnswerHead,
    headers: &HeaderMap,
    max: usize,
    target: &GatewayTarget,
) -> Result<Framing, ConsoleError> {
    let no_body = head.status == 204 || head.status == 304;
    let announced = h1::body_kind(headers);
    if !no_body && !head.http11 && headers.contains_key(header::TRANSFER_ENCODING) {
        return Err(broken_off(
            target,
            "a transfer coding in an HTTP/1.0 answer",
        ));
    }
    let kind = if no_body {
        Some(BodyKind::Length(0))
    } else {
        announced
    };
    let kind = match kind {
        Some(BodyKind::Length(n)) if n > max as u64 => {
            return Err(AccessFailure::ResponseTooLarge { max }.into());
        }
        Some(k) => k,
        None => return Err(broken_off(target, "malformed framing")),
    };
    let framed = if no_body {
        matches!(announced, Some(BodyKind::Close) | Some(BodyKind::Length(0)))
    } else {
        kind != BodyKind::Close
    };
    Ok(Framing {
        kind,
        no_body,
        reusable: framed && !h1::wants_close(headers),
    })
}

/// A piece of an answer's body, as [`AnswerBody::next`] reads it.
#[derive(Debug, PartialEq, Eq)]
pub enum Piece {
    /// Data of the body.
    Data(Bytes),
    /// Nothing whole in the buffer: more must be read.
    More,
    /// The body ended (nothing after it is consumed).
    End,
}

/// An answer's body read out of its connection's buffer: the one framing
/// relay of both invoke paths (the HTTP/1.1 fast path writes its pieces
/// onto the caller's connection, [`GatewayBody`] hands them to hyper). A
/// length-framed body ends after its length, a chunked one after its last
/// chunk and trailers (checked by [`h1::Chunked`] and dropped), a
/// close-delimited one at the connection's end ([`AnswerBody::closed`]);
/// more than `max` bytes of data refuse it. No I/O: the caller reads.
#[derive(Debug)]
pub struct AnswerBody {
    kind: BodyKind,
    /// Bytes of a length-framed body still to come.
    left: u64,
    decoder: h1::Chunked,
    relayed: usize,
    max: usize,
    ended: bool,
}

impl AnswerBody {
    /// The body of an answer framed by `framing`, at most `max` bytes.
    pub fn new(framing: &Framing, max: usize) -> Self {
        let left = match framing.kind {
            BodyKind::Length(n) => n,
            _ => 0,
        };
        Self {
            kind: framing.kind,
            left,
            decoder: h1::Chunked::default(),
            relayed: 0,
            max,
            ended: framing.kind == BodyKind::Length(0),
        }
    }

    /// Has the body ended? (Then the connection carries nothing more of it.)
    pub fn is_done(&self) -> bool {
        self.ended
    }

    /// Bytes of a length-framed body still to come.
    pub fn left(&self) -> Option<u64> {
        matches!(self.kind, BodyKind::Length(_)).then_some(self.left)
    }

    /// Takes the next piece of the body from the front of `buf`; an error
    /// names why the answer broke off.
    pub fn next(&mut self, buf: &mut BytesMut) -> Result<Piece, &'static str> {
        if self.ended {
            return Ok(Piece::End);
        }
        let data = match self.kind {
            BodyKind::Length(_) => {
                if buf.is_empty() {
                    return Ok(Piece::More);
                }
                let take = buf
                    .len()
                    .min(usize::try_from(self.left).unwrap_or(usize::MAX));
                self.left -= take as u64;
                self.ended = self.left == 0;
                buf.split_to(take).freeze()
            }
            BodyKind::Chunked => {
                let mut data = Vec::new();
                while data.is_empty() && !self.ended {
                    let used = self
                        .decoder
                        .decode(buf, &mut data)
                        .map_err(|_| "malformed chunked body")?;
                    buf.advance(used);
                    self.ended = self.decoder.is_done();
                    if used == 0 {
                        break;
                    }
                }
                if data.is_empty() {
                    return Ok(if self.ended { Piece::End } else { Piece::More });
                }
                Bytes::from(data)
            }
            BodyKind::Close => {
                if buf.is_empty() {
                    return Ok(Piece::More);
                }
                buf.split().freeze()
            }
        };
        self.relayed += data.len();
        if self.relayed > self.max {
            return Err("more than --access-max-response-bytes");
        }
        Ok(Piece::Data(data))
    }

    /// The connection ended (nothing more to read): the end of a
    /// close-delimited body, a broken answer otherwise.
    pub fn closed(&mut self) -> Result<(), &'static str> {
        if self.kind == BodyKind::Close || self.ended {
            self.ended = true;
            Ok(())
        } else {
            Err("closed")
        }
    }
}

/// A gateway's answer body streamed to the router's caller: read from its
/// connection as the caller takes it, at most `max` bytes, ending at the
/// call's deadline at the latest; trailers are read within the chunk
/// decoder's bounds and never relayed. At its end the connection goes back
/// to the pool when it may carry another call. The call's place is held
/// until then.
pub struct GatewayBody {
    up: Option<Box<Upstream>>,
    body: AnswerBody,
    deadline: Pin<Box<tokio::time::Sleep>>,
    pool: Arc<Upstreams>,
    target: Arc<GatewayTarget>,
    reusable: bool,
    _slot: Slot,
}

impl GatewayBody {
    /// The body after the head `up` just read, framed by `framing`; it
    /// breaks off when `deadline` (the call's, in its timer) passes.
    pub fn new(
        up: Box<Upstream>,
        framing: Framing,
        max: usize,
        deadline: Pin<Box<tokio::time::Sleep>>,
        pool: Arc<Upstreams>,
        target: Arc<GatewayTarget>,
        slot: Slot,
    ) -> Self {
        let mut body = Self {
            up: Some(up),
            body: AnswerBody::new(&framing, max),
            deadline,
            pool,
            target,
            reusable: framing.reusable,
            _slot: slot,
        };
        if body.body.is_done() {
            // No body: the connection is free at once, and the caller sees
            // the end with the head.
            body.finish();
        }
        body
    }

    /// The answer ended: its connection goes back when it may be reused.
    fn finish(&mut self) {
        if let Some(up) = self.up.take()
            && self.reusable
        {
            self.pool.put(&self.target, up);
        }
    }

    /// The answer broke off: its connection is dropped.
    fn fail(&mut self, why: &str) -> axum::BoxError {
        self.up = None;
        tracing::warn!(gateway = %self.target.authority(), error = why, "a Runtime gateway's answer broke off");
        format!("the Runtime gateway's answer broke off: {why}").into()
    }
}

impl http_body::Body for GatewayBody {
    type Data = Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
        let this = &mut *self;
        loop {
            let Some(up) = this.up.as_mut() else {
                return Poll::Ready(None);
            };
            match this.body.next(&mut up.buf) {
                Ok(Piece::Data(data)) => {
                    if this.body.is_done() {
                        // Back to the pool now: a caller told the body's
                        // end by its length does not poll it again.
                        this.finish();
                    }
                    return Poll::Ready(Some(Ok(http_body::Frame::data(data))));
                }
                Ok(Piece::End) => {
                    this.finish();
                    return Poll::Ready(None);
                }
                Ok(Piece::More) => {}
                Err(why) => return Poll::Ready(Some(Err(this.fail(why)))),
            }
            // More must be read: not past the deadline, even from a gateway
            // that always has bytes ready.
            if this.deadline.as_mut().poll(cx).is_ready() {
                tracing::warn!(
                    "a Runtime gateway's answer did not end within --access-total-timeout"
                );
                this.up = None;
                return Poll::Ready(Some(Err(
                    "the Runtime gateway's answer did not end in time".into(),
                )));
            }
            let Some(up) = this.up.as_mut() else {
                return Poll::Ready(None);
            };
            if up.buf.capacity() - up.buf.len() < 1024 {
                up.buf.reserve(4096);
            }
            match ready!(tokio_util::io::poll_read_buf(
                Pin::new(&mut up.io),
                cx,
                &mut up.buf
            )) {
                Ok(0) => match this.body.closed() {
                    Ok(()) => {
                        // A close-delimited body's end: the connection is done.
                        this.up = None;
                        return Poll::Ready(None);
                    }
                    Err(why) => return Poll::Ready(Some(Err(this.fail(why)))),
                },
                Ok(_) => {}
                Err(e) => return Poll::Ready(Some(Err(this.fail(&e.to_string())))),
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.up.is_none()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        match self.body.left() {
            Some(left) => http_body::SizeHint::with_exact(left),
            None => http_body::SizeHint::default(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime_access::testkit::{Gateway, Script, Split, within};
    use kruntimes_transport::serve::read_into;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    fn upstreams(gw: &Gateway) -> Upstreams {
        Upstreams::new(0, gw.tls.clone(), Duration::from_secs(5))
    }

    /// A new connection to `gw`, and the gateway's side of it.
    async fn open(pool: &Upstreams, gw: &Gateway) -> (Box<Upstream>, Script) {
        let (up, g) = tokio::join!(pool.connect(&gw.target), gw.accept());
        (up.unwrap(), g)
    }

    /// One exchange on `up`: `ask` out, `reply` back (read whole into `up.buf`, then consumed).
    async fn exchange(up: &mut Upstream, g: &mut Script, ask: &[u8], reply: &[u8]) {
        within("an exchange", async {
            up.io.write_all(ask).await.unwrap();
            up.io.flush().await.unwrap();
            assert_eq!(g.read_exact(ask.len()).await, ask);
            g.send(reply, Split::Whole).await;
            while up.buf.len() < reply.len() {
                assert!(read_into(&mut up.io, &mut up.buf).await.unwrap() > 0);
            }
            assert_eq!(&up.buf[..], reply);
            up.buf.clear();
        })
        .await
    }

    #[test]
    fn the_host_field_names_the_port_unless_it_is_443() {
        let target = |port| GatewayTarget {
            host: "gw.team-a.svc".into(),
            port,
            addrs: Vec::new(),
        };
        for (port, want) in [
            (443, "host: gw.team-a.svc\r\n"),
            (8443, "host: gw.team-a.svc:8443\r\n"),
            (1, "host: gw.team-a.svc:1\r\n"),
            (65535, "host: gw.team-a.svc:65535\r\n"),
        ] {
            let mut out = Vec::new();
            host_field(&mut out, &target(port));
            assert_eq!(String::from_utf8(out).unwrap(), want, "port {port}");
        }
    }

    /// Lets the I/O driver see what the gateway sent: the pool reads an idle
    /// connection's readiness as the reactor last saw it.
    async fn settle() {
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
    }

    /// A connection put back clean is handed out again, for its own target
    /// only, and carries the next exchange.
    #[tokio::test]
    async fn a_clean_connection_is_handed_out_again_for_its_target() {
        let gw = Gateway::start().await;
        let pool = upstreams(&gw);
        let (mut up, mut g) = open(&pool, &gw).await;
        exchange(&mut up, &mut g, b"one", b"1").await;
        let local = up.io.get_ref().local_addr().unwrap();
        up.headers
            .insert("x-old", http::HeaderValue::from_static("1"));
        pool.put(&gw.target, up);
        assert_eq!(pool.idle_count(), 1);
        let other = GatewayTarget {
            port: gw.target.port.wrapping_add(1),
            ..(*gw.target).clone()
        };
        assert!(pool.idle(&other).is_none(), "handed out for another target");
        let mut up = pool.idle(&gw.target).expect("the clean connection");
        assert_eq!(up.io.get_ref().local_addr().unwrap(), local);
        assert!(up.headers.is_empty(), "the last answer's fields were kept");
        assert_eq!(pool.idle_count(), 0);
        exchange(&mut up, &mut g, b"two", b"2").await;
        assert!(!gw.has_new_connection().await);
    }

    /// Bytes left in the connection's buffer would begin the next caller's
    /// answer: such a connection is not kept.
    #[tokio::test]
    async fn a_connection_with_bytes_in_its_buffer_is_not_kept() {
        let gw = Gateway::start().await;
        let pool = upstreams(&gw);
        let (mut up, mut g) = open(&pool, &gw).await;
        exchange(&mut up, &mut g, b"ask", b"answer").await;
        up.buf.extend_from_slice(b"HTTP/1.1 200 OK\r\n");
        pool.put(&gw.target, up);
        assert_eq!(pool.idle_count(), 0);
        assert!(pool.idle(&gw.target).is_none());
    }

    /// Bytes TLS decrypted and nobody read (a record longer than the last
    /// read), or the gateway's close_notify, make a connection unusable.
    #[tokio::test]
    async fn a_connection_with_bytes_held_by_tls_is_not_kept() {
        let gw = Gateway::start().await;
        let pool = upstreams(&gw);
        let (mut up, mut g) = open(&pool, &gw).await;
        g.send(b"0123456789 an answer and more", Split::Whole).await;
        let mut five = [0u8; 5];
        within("a short read", up.io.read_exact(&mut five))
            .await
            .unwrap();
        assert_eq!(&five, b"01234");
        assert!(up.buf.is_empty());
        pool.put(&gw.target, up);
        assert_eq!(pool.idle_count(), 0, "kept with plaintext left in TLS");

        let (mut up, g) = open(&pool, &gw).await;
        g.close().await;
        // Read to the close: TLS now holds the peer's close_notify.
        let n = within("the close", read_into(&mut up.io, &mut up.buf))
            .await
            .unwrap();
        assert_eq!(n, 0);
        pool.put(&gw.target, up);
        assert_eq!(pool.idle_count(), 0, "kept after the gateway's close");
    }

    /// The gateway sends bytes (a late or extra answer) on an idle
    /// connection, or closes it: once the reactor has seen it, the
    /// connection is not handed out.
    #[tokio::test]
    async fn an_idle_connection_the_gateway_wrote_to_or_closed_is_not_handed_out() {
        let gw = Gateway::start().await;
        let pool = upstreams(&gw);
        for how in ["wrote", "closed", "dropped"] {
            let (mut up, mut g) = open(&pool, &gw).await;
            exchange(&mut up, &mut g, b"ask", b"answer").await;
            match how {
                "wrote" => g.send(b"HTTP/1.1 200 OK\r\n", Split::Whole).await,
                "closed" => g.close().await,
                _ => drop(g),
            }
            // The condition the pool reads: the socket's readiness, as the reactor saw it.
            within("the socket's readiness", up.io.get_ref().readable())
                .await
                .unwrap();
            pool.put(&gw.target, up);
            assert_eq!(pool.idle_count(), 1, "{how}");
            assert!(pool.idle(&gw.target).is_none(), "{how}: handed out");
            assert_eq!(pool.idle_count(), 0, "{how}");
        }
    }

    /// A connection idle longer than [`IDLE_TIMEOUT`] is not handed out, and
    /// the reaper empties the pool while no call comes.
    #[tokio::test]
    async fn connections_idle_too_long_are_closed() {
        let gw = Gateway::start().await;
        let pool = upstreams(&gw);
        let (mut first, mut g1) = open(&pool, &gw).await;
        let (mut second, mut g2) = open(&pool, &gw).await;
        exchange(&mut first, &mut g1, b"a", b"1").await;
        exchange(&mut second, &mut g2, b"b", b"2").await;
        pool.put(&gw.target, first);
        tokio::time::pause();
        tokio::time::advance(IDLE_TIMEOUT / 2).await;
        pool.put(&gw.target, second);
        tokio::time::advance(IDLE_TIMEOUT / 2 + Duration::from_secs(1)).await;
        // The first is past its time; the second (put back later) is not.
        let up = pool.idle(&gw.target).expect("the connection idle for 31 s");
        pool.put(&gw.target, up);
        tokio::time::advance(IDLE_TIMEOUT).await;
        settle().await;
        assert_eq!(pool.idle_count(), 0, "the reaper left idle connections");
        assert!(pool.idle(&gw.target).is_none());
    }
}
