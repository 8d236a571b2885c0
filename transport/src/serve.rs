//! The accept loop shared by every listener. `axum::serve` cannot see
//! client certificates, so connections are accepted with tokio-rustls and
//! served with hyper-util; each request carries its connection's peer
//! certificates as a [`PeerCertificates`] extension.
//!
//! Every connection is bounded: a cap on connections (per listener and per
//! peer address), a deadline for the TLS handshake and for the first
//! request, an idle timeout once no request is in flight (HTTP/1 keep-alive
//! and HTTP/2 alike), HTTP/2 keep-alive pings and a cap on concurrent
//! streams. A request counts as in flight until its response body ends, so a
//! follow is never idle; an upgraded connection (WebSocket) leaves hyper and
//! this timer altogether.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use bytes::{Buf, Bytes, BytesMut};
use http::HeaderMap;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use rustls_pki_types::CertificateDer;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;
use tower::ServiceExt;

use crate::h1::{self, Parsed, RequestHead};
use crate::workers::Workers;
use kruntimes_core::limit::Reserve;
use kruntimes_core::metrics::{ConnRefusalLabels, ListenerLabels, Metrics, RequestRefusalLabels};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;

pub use kruntimes_core::tls::PeerCertificates;

/// The client's socket address.
#[derive(Clone, Copy, Debug)]
pub struct RemoteAddr(pub SocketAddr);

/// State of one connection's own, the same for every request it carries
/// (each request has it as an extension): what a handler keeps for the
/// connection's next requests. Empty at first; gone with the connection.
#[derive(Clone, Default)]
pub struct ConnectionLocal(Arc<Mutex<Option<Box<dyn std::any::Any + Send>>>>);

impl ConnectionLocal {
    /// Runs `f` on the connection's `T` (a new one when it held none, or
    /// held another type).
    pub fn with<T: Default + Send + 'static, R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let mut slot = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if !slot.as_ref().is_some_and(|b| b.is::<T>()) {
            *slot = Some(Box::new(T::default()));
        }
        let t = slot
            .as_mut()
            .and_then(|b| b.downcast_mut::<T>())
            .expect("the slot holds a T");
        f(t)
    }
}

/// A server-side TLS connection.
pub type ServerTls = crate::tls_stream::ServerStream<TcpStream>;

/// A handler that serves some HTTP/1.1 requests itself, on the bytes of the
/// connection, instead of through hyper and the router (`/v1` invoke, where
/// a plain proxy's cost per call is the bar). It claims a request by its
/// head alone and must answer it as the router would; the first request it
/// does not claim, and everything after it on that connection, goes to
/// hyper and the router as usual. HTTP/2 connections never reach it.
pub trait FastPath: Send + Sync + 'static {
    /// Whether this request is served here. Nothing may be done yet: a
    /// request not claimed is served by the router from the same bytes.
    fn claims(&self, head: &RequestHead, headers: &HeaderMap) -> bool;

    /// Serves a claimed request, whose head is already consumed from
    /// `conn.buf` (its fields are in `conn.headers`). Answers whether the
    /// connection may carry another request.
    fn serve<'a>(
        &'a self,
        head: RequestHead,
        conn: &'a mut FastConn,
    ) -> Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>>;

    /// The shortest bound any of its waits has (the connection's timer
    /// fires at least this often).
    fn shortest_timeout(&self) -> Duration;

    /// Serves a request of an HTTP/2 connection itself, without the router,
    /// when it claims it; `Err` hands the request back to the router. The
    /// request carries the connection's [`PeerCertificates`] and
    /// [`RemoteAddr`], as the router's do. It must answer as the router
    /// would. By default nothing is claimed.
    // The request is handed back by value: boxing it would cost every
    // request an allocation to save a move.
    #[allow(clippy::result_large_err)]
    fn direct(
        &self,
        req: http::Request<axum::body::Body>,
    ) -> Result<DirectAnswer, http::Request<axum::body::Body>> {
        Err(req)
    }
}

/// The answer of a request served by [`FastPath::direct`].
pub struct DirectAnswer(
    pub Pin<Box<dyn std::future::Future<Output = http::Response<axum::body::Body>> + Send>>,
);

impl std::future::Future for DirectAnswer {
    type Output = Result<http::Response<axum::body::Body>, std::convert::Infallible>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.as_mut().poll(cx).map(Ok)
    }
}

/// A connection as a [`FastPath`] sees it.
pub struct FastConn {
    /// The TLS stream.
    pub io: ServerTls,
    /// Bytes read and not consumed yet (a body's start, a next request).
    pub buf: BytesMut,
    /// The fields of the request being served (the map is reused).
    pub headers: HeaderMap,
    /// A reusable buffer for what is written.
    pub out: Vec<u8>,
    /// The client's certificate chain (empty without one).
    pub peer: PeerCertificates,
    /// The client's address.
    pub remote: SocketAddr,
    /// Bounds every wait of the connection, its requests' included.
    pub timer: Watchdog,
    stop: watch::Receiver<bool>,
}

impl FastConn {
    /// Is the listener stopping? An answer written now says `Connection:
    /// close`, as hyper's graceful shutdown does: the connection closes after it.
    pub fn stopping(&self) -> bool {
        *self.stop.borrow()
    }
}

/// Reads more of `io` into `buf`; `Ok(0)` at its end.
pub async fn read_into<S: AsyncRead + Unpin>(
    io: &mut S,
    buf: &mut BytesMut,
) -> std::io::Result<usize> {
    if buf.capacity() - buf.len() < 1024 {
        buf.reserve(4096);
    }
    io.read_buf(buf).await
}

/// One timer for all the waits of a connection. A fresh timer per wait
/// (`tokio::time::timeout`) costs a wake-up of the runtime's driver
/// whenever it is due before the driver's next one, which a per-request
/// deadline always is; this one is only ever moved later, when it fires.
/// It fires at least every `step` (the shortest bound any wait has), so it
/// is never due after a deadline given to [`Watchdog::run`].
pub struct Watchdog {
    sleep: Pin<Box<tokio::time::Sleep>>,
    step: Duration,
}

impl Watchdog {
    /// A watchdog that fires at least every `step`.
    pub fn new(step: Duration) -> Self {
        Self {
            sleep: Box::pin(tokio::time::sleep(step)),
            step,
        }
    }

    /// The watchdog's timer, set for `deadline`: for a wait that goes on
    /// after the watchdog's (a relayed body), without a second timer.
    pub fn into_sleep(mut self, deadline: Instant) -> Pin<Box<tokio::time::Sleep>> {
        self.sleep.as_mut().reset(deadline);
        self.sleep
    }

    /// Runs `f` until `deadline`; `None` when the deadline came first. A
    /// deadline already past is `None` without polling `f`: a peer that
    /// always has bytes ready (endless trailers, say) would otherwise win
    /// every race against the timer, and a loop of reads would never end.
    pub async fn run<F: std::future::Future>(
        &mut self,
        deadline: Instant,
        f: F,
    ) -> Option<F::Output> {
        if Instant::now() >= deadline {
            return None;
        }
        tokio::pin!(f);
        loop {
            tokio::select! {
                biased;
                out = &mut f => return Some(out),
                () = self.sleep.as_mut() => {
                    let now = Instant::now();
                    if now >= deadline {
                        return None;
                    }
                    self.sleep.as_mut().reset(deadline.min(now + self.step));
                }
            }
        }
    }
}

/// Limits of the connection layer.
#[derive(Clone, Copy, Debug)]
pub struct ConnLimits {
    /// Longest TLS handshake.
    pub handshake_timeout: Duration,
    /// A connection whose first request header is not complete by then is closed.
    pub first_request_timeout: Duration,
    /// A connection with no request in flight for this long is closed (HTTP/1
    /// keep-alive and HTTP/2); also bounds reading a later request header.
    pub idle_timeout: Duration,
    /// Interval of HTTP/2 keep-alive pings.
    pub h2_keepalive_interval: Duration,
    /// An HTTP/2 connection whose ping is not answered within this is closed.
    pub h2_keepalive_timeout: Duration,
    /// Concurrent HTTP/2 streams per connection.
    pub h2_max_concurrent_streams: u32,
    /// Open connections on the listener.
    pub max_connections: usize,
    /// Open connections from one peer IP address on the listener.
    pub max_connections_per_peer: usize,
    /// Open requests on the listener, across its connections (HTTP/2
    /// streams and HTTP/1.1 requests the router serves); more are answered
    /// 503. Bounds the memory of many connections each holding many
    /// streams, which the connection cap alone does not.
    pub max_open_requests: usize,
    /// Open requests from one peer IP address on the listener.
    pub max_open_requests_per_peer: usize,
    /// Largest request header block accepted (HTTP/1.1 read buffer and HTTP/2 header list).
    pub max_header_bytes: usize,
    /// After `shutdown`, how long open connections may take to finish.
    pub drain_timeout: Duration,
    /// A response whose next part the connection has not taken for this long
    /// (a client that stops reading, an HTTP/2 window held at zero) ends its
    /// connection: a response in flight keeps the idle timer off, and
    /// HTTP/2 pings are answered while it is stuck.
    pub send_timeout: Duration,
    /// After a connection closes while its caller may still be sending (a
    /// refused body), how long what still arrives is read and dropped:
    /// closed with unread bytes, the socket would reset, and the caller's
    /// next write would fail before it read the answer. Zero closes at once.
    pub linger_timeout: Duration,
    /// The share (percent) of `max_connections` and of `max_open_requests`
    /// kept for light peer addresses: an address that would hold more than
    /// a sixteenth of its own cap is refused the last places, so addresses
    /// that each fill their own cap leave room for others.
    pub reserve_percent: u8,
}

impl Default for ConnLimits {
    fn default() -> Self {
        Self {
            handshake_timeout: Duration::from_secs(10),
            first_request_timeout: Duration::from_secs(10),
            idle_timeout: Duration::from_secs(90),
            h2_keepalive_interval: Duration::from_secs(30),
            h2_keepalive_timeout: Duration::from_secs(10),
            h2_max_concurrent_streams: 100,
            max_connections: 4096,
            max_connections_per_peer: 256,
            max_open_requests: 16_384,
            max_open_requests_per_peer: 2_048,
            max_header_bytes: 16 << 10,
            drain_timeout: Duration::from_secs(25),
            send_timeout: Duration::from_secs(60),
            linger_timeout: Duration::from_secs(2),
            reserve_percent: 25,
        }
    }
}

/// Why a connection was refused right after accept.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// The listener holds `max_connections`.
    Listener,
    /// The peer address holds `max_connections_per_peer`.
    Peer,
    /// Only the reserve for light addresses is left, and the peer address
    /// holds too many to take it.
    Reserve,
}

impl Refusal {
    fn label(self) -> &'static str {
        match self {
            Refusal::Listener => "max_connections",
            Refusal::Peer => "max_connections_per_peer",
            Refusal::Reserve => "reserve_for_light_callers",
        }
    }
}

/// Counts a listener's open connections, in total and per peer address.
#[derive(Debug)]
pub struct ConnGate {
    max: usize,
    max_per_peer: usize,
    reserve: Reserve,
    open: Mutex<(usize, HashMap<IpAddr, PeerEntry>)>,
}

/// A peer address's open connections, and the open requests on them.
#[derive(Debug)]
struct PeerEntry {
    connections: usize,
    requests: Arc<AtomicUsize>,
}

/// One admitted connection; dropping it frees its place.
#[derive(Debug)]
pub struct ConnPermit {
    gate: Arc<ConnGate>,
    peer: IpAddr,
    /// Open requests of the peer address, on all its connections.
    requests: Arc<AtomicUsize>,
}

impl ConnGate {
    /// A gate for at most `max` connections, `max_per_peer` of them from
    /// one address, the last `reserve_percent` % of them for addresses
    /// holding a sixteenth of `max_per_peer` or fewer.
    pub fn new(max: usize, max_per_peer: usize, reserve_percent: u8) -> Arc<Self> {
        Arc::new(Self {
            max,
            max_per_peer,
            reserve: Reserve::share(max, max_per_peer, reserve_percent),
            open: Mutex::new((0, HashMap::new())),
        })
    }

    /// Admits a connection from `peer`, or says which cap refuses it.
    pub fn admit(self: &Arc<Self>, peer: IpAddr) -> Result<ConnPermit, Refusal> {
        let mut guard = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let open = &mut *guard;
        if open.0 >= self.max {
            return Err(Refusal::Listener);
        }
        let of_peer = open.1.entry(peer).or_insert_with(|| PeerEntry {
            connections: 0,
            requests: Arc::default(),
        });
        if of_peer.connections >= self.max_per_peer {
            return Err(Refusal::Peer);
        }
        // A refusal leaves no empty entry: it needs connections held.
        if self
            .reserve
            .refuses(open.0, of_peer.connections, 1, self.max)
        {
            return Err(Refusal::Reserve);
        }
        of_peer.connections += 1;
        let requests = of_peer.requests.clone();
        open.0 += 1;
        Ok(ConnPermit {
            gate: self.clone(),
            peer,
            requests,
        })
    }

    /// Connections open now.
    pub fn open(&self) -> usize {
        self.open.lock().unwrap_or_else(|e| e.into_inner()).0
    }
}

impl Drop for ConnPermit {
    fn drop(&mut self) {
        let mut open = self.gate.open.lock().unwrap_or_else(|e| e.into_inner());
        open.0 -= 1;
        if let Some(entry) = open.1.get_mut(&self.peer) {
            entry.connections -= 1;
            if entry.connections == 0 {
                open.1.remove(&self.peer);
            }
        }
    }
}

/// Requests in flight on one connection. The idle timer reads it when it
/// fires; a request starting or ending wakes nothing (re-arming a timer per
/// request costs a wake-up of the runtime's driver).
#[derive(Debug)]
struct Activity {
    state: Mutex<ActivityState>,
    slots: RequestSlots,
    /// A request was answered 101: the socket now belongs to the upgrade's
    /// handler, and does not linger when hyper's connection ends.
    upgraded: AtomicBool,
}

/// A listener's open requests and their caps, shared by its connections.
#[derive(Debug)]
struct RequestCaps {
    /// Open requests on the listener (exported as `requests_open`).
    open: Gauge,
    max: usize,
    max_per_peer: usize,
    reserve: Reserve,
    refused_listener: Counter,
    refused_peer: Counter,
    refused_reserve: Counter,
}

/// What one connection counts its requests against: its listener's caps
/// and its peer address's count.
#[derive(Clone, Debug)]
struct RequestSlots {
    caps: Arc<RequestCaps>,
    of_peer: Arc<AtomicUsize>,
}

/// Why a request was answered 503 without being served.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Crowded {
    /// The listener holds `max_open_requests`.
    Listener,
    /// The peer address holds `max_open_requests_per_peer`.
    Peer,
    /// Only the reserve for light addresses is left, and the peer address
    /// holds too many open requests to take it.
    Reserve,
}

impl RequestSlots {
    /// Slots under caps that never refuse (unit tests of the body tracking).
    #[cfg(test)]
    fn unbounded() -> Self {
        Self::at_most(usize::MAX)
    }

    /// Slots of one connection alone under a cap of `max` open requests,
    /// no reserve and no cap per peer (tests and the fuzz harness).
    fn at_most(max: usize) -> Self {
        Self {
            caps: Arc::new(RequestCaps {
                open: Gauge::default(),
                max,
                max_per_peer: usize::MAX,
                reserve: Reserve::default(),
                refused_listener: Counter::default(),
                refused_peer: Counter::default(),
                refused_reserve: Counter::default(),
            }),
            of_peer: Arc::default(),
        }
    }

    /// Takes a place for one request, or says which cap refuses it (and
    /// counts the refusal). Two atomic additions; no lock.
    fn take(&self) -> Result<(), Crowded> {
        let caps = &*self.caps;
        let open = caps.open.inc() as usize;
        if open >= caps.max {
            caps.open.dec();
            caps.refused_listener.inc();
            return Err(Crowded::Listener);
        }
        let mine = self.of_peer.fetch_add(1, Ordering::Relaxed);
        let refused = if mine >= caps.max_per_peer {
            Some((Crowded::Peer, &caps.refused_peer))
        } else if caps.reserve.refuses(open, mine, 1, caps.max) {
            Some((Crowded::Reserve, &caps.refused_reserve))
        } else {
            None
        };
        if let Some((why, counter)) = refused {
            self.of_peer.fetch_sub(1, Ordering::Relaxed);
            caps.open.dec();
            counter.inc();
            return Err(why);
        }
        Ok(())
    }

    fn give_back(&self) {
        self.of_peer.fetch_sub(1, Ordering::Relaxed);
        self.caps.open.dec();
    }
}

/// The answer to a request a cap on open requests refused: 503 with
/// Retry-After and no body, so that the stream ends with its head and
/// holds nothing (a body could wait on a window the client keeps shut).
fn crowded(why: Crowded) -> http::Response<axum::body::Body> {
    let flag = match why {
        Crowded::Listener => "max-open-requests",
        Crowded::Peer => "max-open-requests-per-peer",
        Crowded::Reserve => "reserve-for-light-callers",
    };
    let mut resp = http::Response::new(axum::body::Body::empty());
    *resp.status_mut() = kruntimes_core::failure::Reason::Unavailable.code();
    let h = resp.headers_mut();
    h.insert(
        http::header::RETRY_AFTER,
        http::HeaderValue::from_static("1"),
    );
    h.insert(
        http::header::CONTENT_LENGTH,
        http::HeaderValue::from_static("0"),
    );
    h.insert(
        http::HeaderName::from_static("x-kruntimes-refused-by"),
        http::HeaderValue::from_static(flag),
    );
    resp
}

#[derive(Clone, Debug)]
struct ActivityState {
    in_flight: usize,
    started: u64,
    /// When the last request ended (or the connection opened).
    idle_since: Instant,
    /// Response bodies waiting for the connection to take their next part
    /// (their head is out, or their last part was handed over, and hyper has
    /// not asked again), with since when. A body waiting for its own data is
    /// not here: that wait is the handler's.
    unsent: Vec<(u64, Instant)>,
    /// The id of the next response body.
    bodies: u64,
}

impl ActivityState {
    fn sent(&mut self, body: u64) {
        if let Some(i) = self.unsent.iter().position(|(b, _)| *b == body) {
            self.unsent.swap_remove(i);
        }
    }

    /// `body` waits to be sent from `since` (its entry, if any, updated in place).
    fn waits(&mut self, body: u64, since: Instant) {
        match self.unsent.iter_mut().find(|(b, _)| *b == body) {
            Some(entry) => entry.1 = since,
            None => self.unsent.push((body, since)),
        }
    }

    /// Since when the longest-waiting response has been waiting to be sent.
    fn oldest_unsent(&self) -> Option<Instant> {
        self.unsent.iter().map(|(_, t)| *t).min()
    }
}

impl Activity {
    fn lock(&self) -> std::sync::MutexGuard<'_, ActivityState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A request in flight: held by the service future, then by the response body.
struct InFlight(Arc<Activity>);

impl InFlight {
    /// Counts a request as in flight, or says which cap on open requests
    /// refuses it.
    fn start(activity: &Arc<Activity>) -> Result<Self, Crowded> {
        activity.slots.take()?;
        let mut st = activity.lock();
        st.in_flight += 1;
        st.started += 1;
        drop(st);
        Ok(Self(activity.clone()))
    }

    /// Its answer is a 101: the connection's socket goes to the upgrade.
    fn upgraded(&self) {
        self.0.upgraded.store(true, Ordering::Relaxed);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        self.0.slots.give_back();
        let mut st = self.0.lock();
        st.in_flight -= 1;
        if st.in_flight == 0 {
            st.idle_since = Instant::now();
        }
    }
}

/// The largest part of a response handed to hyper at once (an HTTP/2 DATA
/// frame's default size). hyper takes the next part only once the last one
/// is on its way, so a response larger than the client's window stays in
/// flight, and its stall is seen, until all but its last part are sent.
const RESPONSE_PART: usize = 16 << 10;

/// A response body that keeps its request in flight until it ends or is
/// dropped, tells the connection when it waits to be sent, and hands its
/// data over in parts of at most [`RESPONSE_PART`] bytes.
struct TrackedBody {
    inner: axum::body::Body,
    flight: Option<InFlight>,
    id: u64,
    /// What is left of a data frame larger than a part.
    rest: Bytes,
    /// In the connection's `unsent` list (the lock is taken only to change it).
    waiting: bool,
}

impl TrackedBody {
    fn new(inner: axum::body::Body, flight: InFlight) -> Self {
        let id = {
            let mut st = flight.0.lock();
            st.bodies += 1;
            let id = st.bodies;
            st.unsent.push((id, Instant::now()));
            id
        };
        Self {
            inner,
            flight: Some(flight),
            id,
            rest: Bytes::new(),
            waiting: true,
        }
    }
}

impl Drop for TrackedBody {
    fn drop(&mut self) {
        if let Some(flight) = &self.flight
            && self.waiting
        {
            flight.0.lock().sent(self.id);
        }
    }
}

impl http_body::Body for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        let res = if self.rest.is_empty() {
            match Pin::new(&mut self.inner).poll_frame(cx) {
                Poll::Ready(Some(Ok(frame))) => match frame.into_data() {
                    Ok(mut data) if data.len() > RESPONSE_PART => {
                        self.rest = data.split_off(RESPONSE_PART);
                        Poll::Ready(Some(Ok(http_body::Frame::data(data))))
                    }
                    Ok(data) => Poll::Ready(Some(Ok(http_body::Frame::data(data)))),
                    Err(frame) => Poll::Ready(Some(Ok(frame))),
                },
                other => other,
            }
        } else {
            let n = self.rest.len().min(RESPONSE_PART);
            let part = self.rest.split_to(n);
            Poll::Ready(Some(Ok(http_body::Frame::data(part))))
        };
        let (id, waiting) = (self.id, self.waiting);
        match &res {
            Poll::Ready(None) => {
                if let Some(flight) = self.flight.take()
                    && waiting
                {
                    flight.0.lock().sent(id);
                }
                self.waiting = false;
            }
            // Asked for more, and its part is ready: waiting to be sent now.
            Poll::Ready(Some(_)) => {
                if let Some(flight) = &self.flight {
                    flight.0.lock().waits(id, Instant::now());
                }
                self.waiting = true;
            }
            // Asked for more and has none yet: the handler's wait.
            Poll::Pending => {
                if let Some(flight) = &self.flight
                    && waiting
                {
                    flight.0.lock().sent(id);
                }
                self.waiting = false;
            }
        }
        res
    }

    fn is_end_stream(&self) -> bool {
        self.rest.is_empty() && self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        let rest = self.rest.len() as u64;
        let inner = self.inner.size_hint();
        let mut hint = http_body::SizeHint::new();
        hint.set_lower(inner.lower() + rest);
        if let Some(upper) = inner.upper() {
            hint.set_upper(upper + rest);
        }
        hint
    }
}

/// Accepts TLS connections on `listener` and serves `router` on each until
/// `shutdown` resolves; open connections then finish gracefully. With
/// `workers`, each connection is served on one of those threads.
#[allow(clippy::too_many_arguments)]
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    limits: ConnLimits,
    name: &'static str,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    workers: Option<Workers>,
    fast: Option<Arc<dyn FastPath>>,
) {
    serve(
        listener,
        Some(tls),
        router,
        limits,
        name,
        metrics,
        shutdown,
        workers,
        fast,
    )
    .await
}

/// Serves `router` over plain HTTP with the same connection limits (the admin listener).
pub async fn serve_plain(
    listener: TcpListener,
    router: Router,
    limits: ConnLimits,
    name: &'static str,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    serve(
        listener, None, router, limits, name, metrics, shutdown, None, None,
    )
    .await
}

#[allow(clippy::too_many_arguments)]
async fn serve(
    listener: TcpListener,
    acceptor: Option<Arc<rustls::ServerConfig>>,
    router: Router,
    limits: ConnLimits,
    name: &'static str,
    metrics: Metrics,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
    workers: Option<Workers>,
    fast: Option<Arc<dyn FastPath>>,
) {
    let gate = ConnGate::new(
        limits.max_connections,
        limits.max_connections_per_peer,
        limits.reserve_percent,
    );
    let refused = |reason| {
        metrics
            .requests_refused
            .get_or_create(&RequestRefusalLabels {
                listener: name,
                reason,
            })
            .clone()
    };
    let caps = Arc::new(RequestCaps {
        open: metrics
            .requests_open
            .get_or_create(&ListenerLabels { listener: name })
            .clone(),
        max: limits.max_open_requests,
        max_per_peer: limits.max_open_requests_per_peer,
        reserve: Reserve::share(
            limits.max_open_requests,
            limits.max_open_requests_per_peer,
            limits.reserve_percent,
        ),
        refused_listener: refused("max_open_requests"),
        refused_peer: refused("max_open_requests_per_peer"),
        refused_reserve: refused("reserve_for_light_callers"),
    });
    let (stop_tx, stop_rx) = watch::channel(false);
    // Every connection task holds a clone; `recv` answers `None` once all ended.
    let (alive_tx, mut alive_rx) = mpsc::channel::<()>(1);
    let open = metrics
        .connections_open
        .get_or_create(&ListenerLabels { listener: name })
        .clone();
    tokio::pin!(shutdown);
    loop {
        let (tcp, remote) = tokio::select! {
            res = listener.accept() => match res {
                Ok(c) => c,
                Err(error) => {
                    tracing::warn!(%error, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let permit = match gate.admit(remote.ip()) {
            Ok(p) => p,
            Err(refusal) => {
                metrics
                    .connections_refused
                    .get_or_create(&ConnRefusalLabels {
                        listener: name,
                        reason: refusal.label(),
                    })
                    .inc();
                tracing::debug!(%remote, reason = refusal.label(), "connection refused");
                drop(tcp);
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let router = router.clone();
        let stop = stop_rx.clone();
        let alive = alive_tx.clone();
        let open = open.clone();
        let fast = fast.clone();
        let slots = RequestSlots {
            caps: caps.clone(),
            of_peer: permit.requests.clone(),
        };
        let connection = move |tcp: TcpStream| async move {
            let _permit = permit;
            let _alive = alive;
            open.inc();
            match acceptor {
                Some(config) => {
                    let tls = match tokio::time::timeout(
                        limits.handshake_timeout,
                        crate::tls_stream::accept(config, tcp),
                    )
                    .await
                    {
                        Ok(Ok(s)) => s,
                        Ok(Err(error)) => {
                            tracing::debug!(%error, %remote, "TLS handshake failed");
                            open.dec();
                            return;
                        }
                        Err(_) => {
                            tracing::debug!(%remote, "TLS handshake timed out");
                            open.dec();
                            return;
                        }
                    };
                    let chain: Vec<CertificateDer<'static>> = tls
                        .common()
                        .peer_certificates()
                        .map(|c| c.iter().map(|c| c.clone().into_owned()).collect())
                        .unwrap_or_default();
                    let peer = PeerCertificates(Arc::new(chain));
                    let alpn = tls.common().alpn_protocol();
                    let h2 = alpn == Some(b"h2");
                    // A connection that chose HTTP/1.1 stays on it: an HTTP/2
                    // preface on it is a malformed HTTP/1.1 request (RFC 9113
                    // §3.3: over TLS, HTTP/2 only through ALPN). One that
                    // chose h2 speaks HTTP/2 from its first byte.
                    let versions = match alpn {
                        Some(b"http/1.1") => Versions::Http1Only,
                        Some(b"h2") => Versions::Http2Only,
                        _ => Versions::Any,
                    };
                    match fast {
                        Some(fast) if !h2 => {
                            serve_fast(
                                fast, tls, peer, remote, router, limits, slots, stop, versions,
                            )
                            .await
                        }
                        _ => {
                            let handle = second_handle(tls.get_ref());
                            serve_connection(
                                tls, peer, remote, router, limits, slots, stop, versions, fast,
                                handle,
                            )
                            .await
                        }
                    }
                }
                None => {
                    let handle = second_handle(&tcp);
                    serve_connection(
                        tcp,
                        PeerCertificates::default(),
                        remote,
                        router,
                        limits,
                        slots,
                        stop,
                        Versions::Any,
                        None,
                        handle,
                    )
                    .await
                }
            }
            open.dec();
        };
        match &workers {
            // The socket moves to the connection thread's own reactor: left
            // with this runtime's, every readiness event of the connection
            // would wake this runtime first and then cross to the thread.
            // The connection's state (~10 KB) is allocated there too, where it
            // is freed: the task sent over holds only what it starts from.
            Some(w) => match tcp.into_std() {
                Ok(std) => w.spawn(async move {
                    match TcpStream::from_std(std) {
                        Ok(tcp) => Box::pin(connection(tcp)).await,
                        Err(error) => {
                            tracing::warn!(%error, %remote, "cannot register a connection")
                        }
                    }
                }),
                Err(error) => tracing::warn!(%error, %remote, "cannot hand a connection over"),
            },
            None => drop(tokio::spawn(connection(tcp))),
        }
    }
    drop(alive_tx);
    let _ = stop_tx.send(true);
    // Idle connections close now (HTTP/2 with GOAWAY); open requests get a
    // bounded time to finish.
    let _ = tokio::time::timeout(limits.drain_timeout, alive_rx.recv()).await;
}

/// A connection's service: the requests of HTTP/2 connections that
/// [`FastPath::direct`] claims are served there, the others by the router.
#[derive(Clone)]
struct Dispatch {
    direct: Option<Arc<dyn FastPath>>,
    router: Router,
}

type Routed = tower::util::Oneshot<Router, http::Request<axum::body::Body>>;
type DispatchFuture = futures::future::Either<DirectAnswer, Routed>;

impl tower::Service<http::Request<axum::body::Body>> for Dispatch {
    type Response = http::Response<axum::body::Body>;
    type Error = std::convert::Infallible;
    type Future = DispatchFuture;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        // The router is always ready; `oneshot` asks it again.
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: http::Request<axum::body::Body>) -> Self::Future {
        let routed = match &self.direct {
            Some(d) if req.version() == http::Version::HTTP_2 => d.direct(req),
            _ => Err(req),
        };
        match routed {
            Ok(answer) => futures::future::Either::Left(answer),
            Err(req) => futures::future::Either::Right(self.router.clone().oneshot(req)),
        }
    }
}

/// Serves an HTTP/1.1 connection: requests the fast path claims here, and
/// from the first one it does not claim on, hyper and the router (which
/// then see the connection's bytes from that request's first byte on).
/// The bounds are the same as hyper's: the first request head within
/// `first_request_timeout`, a later one within `idle_timeout` of the last
/// answer, a head no larger than hyper's read buffer.
#[allow(clippy::too_many_arguments)]
async fn serve_fast(
    fast: Arc<dyn FastPath>,
    io: ServerTls,
    peer: PeerCertificates,
    remote: SocketAddr,
    router: Router,
    limits: ConnLimits,
    slots: RequestSlots,
    stop: watch::Receiver<bool>,
    mut versions: Versions,
) {
    let first = limits.first_request_timeout.min(limits.idle_timeout);
    let mut conn = FastConn {
        io,
        buf: BytesMut::new(),
        headers: HeaderMap::new(),
        out: Vec::new(),
        peer,
        remote,
        timer: Watchdog::new(first.min(fast.shortest_timeout())),
        stop,
    };
    let max_head = limits.max_header_bytes.max(8192);
    let mut deadline = Instant::now() + first;
    loop {
        // Reads until a whole head is buffered, or it is clear this loop
        // will not serve it.
        let head = loop {
            if !conn.buf.is_empty() {
                match h1::parse_request(&conn.buf, &mut conn.headers) {
                    // Over hyper's bound: hyper refuses it.
                    Parsed::Complete(head) if head.len > max_head => break None,
                    Parsed::Complete(head) => break Some(head),
                    Parsed::Invalid => break None,
                    Parsed::Partial if conn.buf.len() >= max_head => break None,
                    Parsed::Partial => {}
                }
            }
            let read = async {
                tokio::select! {
                    biased;
                    res = read_into(&mut conn.io, &mut conn.buf) => matches!(res, Ok(n) if n > 0),
                    () = stopped(&mut conn.stop) => false,
                }
            };
            match conn.timer.run(deadline, read).await {
                Some(true) => {}
                Some(false) => return,
                None => {
                    tracing::debug!(%remote, "closing an idle connection");
                    return;
                }
            }
        };
        let claimed = head
            .as_ref()
            .is_some_and(|head| fast.claims(head, &conn.headers));
        let Some(head) = head.filter(|_| claimed) else {
            let FastConn {
                io,
                buf,
                peer,
                stop,
                ..
            } = conn;
            let handle = second_handle(io.get_ref());
            let io = Rewind { pre: buf, io };
            serve_connection(
                io, peer, remote, router, limits, slots, stop, versions, None, handle,
            )
            .await;
            return;
        };
        // After an HTTP/1.1 request, the connection is HTTP/1.1 to its end:
        // an HTTP/2 preface later on does not switch it (RFC 9113 §3.3).
        versions = Versions::Http1Only;
        conn.buf.advance(head.len);
        let keep = fast.serve(head, &mut conn).await;
        // The request's fields (its credentials among them) are not kept.
        conn.headers.clear();
        if !keep || conn.stopping() {
            use tokio::io::AsyncWriteExt;
            let _ = tokio::time::timeout(Duration::from_secs(1), conn.io.shutdown()).await;
            Box::pin(linger(conn.io.get_ref(), limits.linger_timeout)).await;
            return;
        }
        deadline = Instant::now() + limits.idle_timeout;
        // A connection does not keep buffers grown by one large call.
        if conn.buf.is_empty() && conn.buf.capacity() > 16 << 10 {
            conn.buf = BytesMut::new();
        }
        if conn.out.capacity() > 64 << 10 {
            conn.out = Vec::new();
        }
    }
}

/// Reads and drops what the caller still sends on `tcp` (its write side
/// already shut) until it closes or `linger` passes; the bytes are not
/// decrypted.
async fn linger(tcp: &TcpStream, linger: Duration) {
    if linger.is_zero() {
        return;
    }
    let mut scratch = [0u8; 8 << 10];
    let _ = tokio::time::timeout(linger, async {
        loop {
            if tcp.readable().await.is_err() {
                return;
            }
            match tcp.try_read(&mut scratch) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(_) => return,
            }
        }
    })
    .await;
}

/// A connection whose first bytes were already read: they are read again first.
struct Rewind<S> {
    pre: BytesMut,
    io: S,
}

impl<S: AsyncRead + Unpin> AsyncRead for Rewind<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        if !self.pre.is_empty() {
            let n = self.pre.len().min(buf.remaining());
            buf.put_slice(&self.pre[..n]);
            self.pre.advance(n);
            if self.pre.is_empty() {
                self.pre = BytesMut::new();
            }
            return Poll::Ready(Ok(()));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Rewind<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// The HTTP versions hyper may serve on a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Versions {
    /// HTTP/1.1, or HTTP/2 when the connection opens with its preface.
    Any,
    /// HTTP/1.1 only: ALPN chose it, or HTTP/1.1 requests were served.
    Http1Only,
    /// HTTP/2 only: ALPN chose it (hyper's HTTP/2 server, without the auto
    /// builder's look at the first bytes and the wrapper it leaves around
    /// every read).
    Http2Only,
}

/// The HTTP/2 settings of a listener's `limits`, on hyper's HTTP/2 builder
/// or the auto builder's HTTP/2 half (two types with the same methods).
macro_rules! h2_settings {
    ($builder:expr, $limits:expr) => {
        $builder
            .timer(hyper_util::rt::TokioTimer::new())
            .max_header_list_size($limits.max_header_bytes as u32)
            .max_concurrent_streams($limits.h2_max_concurrent_streams)
            .keep_alive_interval($limits.h2_keepalive_interval)
            .keep_alive_timeout($limits.h2_keepalive_timeout)
    };
}

/// Serves one connection until it ends, is idle past its deadline, or the listener stops.
#[allow(clippy::too_many_arguments)]
async fn serve_connection<S>(
    io: S,
    peer: PeerCertificates,
    remote: SocketAddr,
    router: Router,
    limits: ConnLimits,
    slots: RequestSlots,
    mut stop: watch::Receiver<bool>,
    versions: Versions,
    direct: Option<Arc<dyn FastPath>>,
    handle: Option<std::net::TcpStream>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity {
        state: Mutex::new(ActivityState {
            in_flight: 0,
            started: 0,
            idle_since: Instant::now(),
            unsent: Vec::new(),
            bodies: 0,
        }),
        slots,
        upgraded: AtomicBool::new(false),
    });
    let tracked = activity.clone();
    // HTTP/2 requests the fast path serves directly; everything else, the router.
    let svc = Dispatch { direct, router };
    let local = ConnectionLocal::default();
    let svc = svc
        .map_request(move |mut req: http::Request<hyper::body::Incoming>| {
            req.extensions_mut().insert(peer.clone());
            req.extensions_mut().insert(RemoteAddr(remote));
            req.extensions_mut().insert(local.clone());
            req.map(axum::body::Body::new)
        })
        .map_future(move |fut: DispatchFuture| {
            let flight = InFlight::start(&tracked);
            async move {
                // A refused request's future is dropped unpolled: the
                // router has only matched its route.
                let flight = match flight {
                    Ok(flight) => flight,
                    Err(why) => {
                        tracing::debug!(%remote, ?why, "request refused: too many open requests");
                        return Ok(crowded(why));
                    }
                };
                let mut resp: http::Response<axum::body::Body> = fut.await?;
                if resp.status() == http::StatusCode::SWITCHING_PROTOCOLS {
                    flight.upgraded();
                }
                // A 204 or 1xx answer carries no Content-Length (RFC 9110
                // §8.6); the router sets one from an empty body, which hyper
                // drops over HTTP/1.1 but not over HTTP/2.
                let s = resp.status();
                if s == http::StatusCode::NO_CONTENT || s.is_informational() {
                    resp.headers_mut().remove(http::header::CONTENT_LENGTH);
                }
                Ok::<_, std::convert::Infallible>(
                    resp.map(|inner| axum::body::Body::new(TrackedBody::new(inner, flight))),
                )
            }
        });
    let io = TokioIo::new(io);
    let svc = TowerToHyperService::new(svc);
    // No timer for HTTP/1: hyper would arm a header-read timeout for every
    // request. The idle timer in `drive` bounds a keep-alive gap and a
    // trickled header alike (a request is in flight only once its head is read).
    let max_buf = limits.max_header_bytes.max(8192);
    let ended_by_hyper = match versions {
        Versions::Http1Only => {
            // hyper's own HTTP/1 server: hyper-util's auto builder looks for
            // an HTTP/2 preface whatever `http1_only` says once upgrades are
            // served, so on this connection a preface is a bad request.
            let mut h1 = hyper::server::conn::http1::Builder::new();
            h1.max_buf_size(max_buf);
            let conn = h1.serve_connection(io, svc).with_upgrades();
            tokio::pin!(conn);
            drive(
                conn,
                |c| c.graceful_shutdown(),
                &activity,
                &limits,
                remote,
                &mut stop,
            )
            .await
        }
        Versions::Http2Only => {
            let streams = Streams::default();
            let mut h2 = hyper::server::conn::http2::Builder::new(streams.clone());
            h2_settings!(h2, limits);
            let conn = WithStreams::new(h2.serve_connection(io, svc), streams);
            tokio::pin!(conn);
            let ended = drive(
                conn.as_mut(),
                |c| {
                    if let Some(c) = c.conn() {
                        c.graceful_shutdown();
                    }
                },
                &activity,
                &limits,
                remote,
                &mut stop,
            )
            .await;
            // The connection is over; streams still running (a response
            // whose send now fails, a gateway call under way) end as they
            // would in tasks of their own.
            conn.finish().await;
            ended
        }
        Versions::Any => {
            let mut builder = Builder::new(TokioExecutor::new());
            builder.http1().max_buf_size(max_buf);
            h2_settings!(builder.http2(), limits);
            let conn = builder.serve_connection_with_upgrades(io, svc);
            tokio::pin!(conn);
            drive(
                conn,
                |c| c.graceful_shutdown(),
                &activity,
                &limits,
                remote,
                &mut stop,
            )
            .await
        }
    };
    // hyper has dropped the connection; its socket lingers on the second
    // handle, so a caller still sending reads the last answer, not a reset.
    // An upgraded socket lives on with the upgrade's handler: left alone;
    // one the idle or send deadline closed has nobody sending. Boxed: the
    // linger's buffers are not carried by every connection's task.
    if let Some(handle) = handle
        && ended_by_hyper
        && !activity.upgraded.load(Ordering::Relaxed)
    {
        Box::pin(linger_after(handle, limits.linger_timeout)).await;
    }
}

/// The streams of one HTTP/2 connection, run inside the connection's own
/// task rather than a task each: hyper hands every stream to this executor
/// while the connection is polled, and [`WithStreams`] polls them next to
/// the connection. Spawning, scheduling and waking a task per stream cost
/// more than the stream's own work on a warm invoke.
#[derive(Clone, Default)]
struct Streams {
    new: Arc<Mutex<Vec<StreamFuture>>>,
}

type StreamFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

impl<F> hyper::rt::Executor<F> for Streams
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, stream: F) {
        // Only called while the connection is polled by `WithStreams`,
        // which takes the new streams right after.
        self.new
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Box::pin(stream));
    }
}

pin_project_lite::pin_project! {
    /// A hyper HTTP/2 connection with its streams ([`Streams`]): ready with
    /// the connection's result; [`WithStreams::finish`] then drops the
    /// connection and runs the streams still under way to their end.
    struct WithStreams<C> {
        #[pin]
        conn: Option<C>,
        streams: Streams,
        running: futures::stream::FuturesUnordered<StreamFuture>,
        woken: Arc<ConnWaker>,
    }
}

/// The connection's own waker: it notes that the connection asked to be
/// polled, so a wake-up meant for a stream (a gateway's answer) polls that
/// stream alone, not the whole connection as well.
#[derive(Default)]
struct ConnWaker {
    woken: AtomicBool,
    task: futures::task::AtomicWaker,
}

impl futures::task::ArcWake for ConnWaker {
    fn wake_by_ref(this: &Arc<Self>) {
        this.woken.store(true, Ordering::Release);
        this.task.wake();
    }
}

impl<C> WithStreams<C> {
    fn new(conn: C, streams: Streams) -> Self {
        Self {
            conn: Some(conn),
            streams,
            running: futures::stream::FuturesUnordered::new(),
            woken: Arc::new(ConnWaker {
                woken: AtomicBool::new(true),
                task: futures::task::AtomicWaker::new(),
            }),
        }
    }

    /// The connection, until [`WithStreams::finish`].
    fn conn(self: Pin<&mut Self>) -> Option<Pin<&mut C>> {
        self.project().conn.as_pin_mut()
    }

    /// Takes the streams hyper handed over and polls every woken one;
    /// true once none is left.
    fn poll_streams(
        streams: &Streams,
        running: &mut futures::stream::FuturesUnordered<StreamFuture>,
        cx: &mut std::task::Context<'_>,
    ) -> bool {
        use futures::Stream;
        running.extend(
            streams
                .new
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .drain(..),
        );
        loop {
            match Pin::new(&mut *running).poll_next(cx) {
                std::task::Poll::Ready(Some(())) => {}
                std::task::Poll::Ready(None) => return true,
                std::task::Poll::Pending => return false,
            }
        }
    }

    /// Drops the connection, which tells its streams it is gone (a stream
    /// that was waiting to send ends then), and runs the streams still
    /// under way to their end.
    async fn finish(mut self: Pin<&mut Self>) {
        self.as_mut().project().conn.set(None);
        std::future::poll_fn(|cx| {
            let this = self.as_mut().project();
            if Self::poll_streams(this.streams, this.running, cx) {
                std::task::Poll::Ready(())
            } else {
                std::task::Poll::Pending
            }
        })
        .await;
    }
}

impl<C: Future> Future for WithStreams<C> {
    type Output = C::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<C::Output> {
        let this = self.project();
        let Some(mut conn) = this.conn.as_pin_mut() else {
            // Dropped by `finish`, after which this is never polled.
            return std::task::Poll::Pending;
        };
        this.woken.task.register(cx.waker());
        let mut res = std::task::Poll::Pending;
        // The connection first (it hands over new streams), then the woken
        // streams; a stream that queued its answer has woken the
        // connection, which then sends it in the same turn.
        for _ in 0..2 {
            if this.woken.woken.swap(false, Ordering::AcqRel) {
                let waker = futures::task::waker_ref(this.woken);
                res = conn
                    .as_mut()
                    .poll(&mut std::task::Context::from_waker(&waker));
                if res.is_ready() {
                    break;
                }
            }
            Self::poll_streams(this.streams, this.running, cx);
        }
        res
    }
}

/// A second handle on a connection's socket (the same socket, another
/// descriptor), kept while hyper owns the connection, so that the socket
/// can linger after hyper drops it; `None` when the descriptor cannot be
/// duplicated (then the socket closes with hyper's drop).
fn second_handle(tcp: &TcpStream) -> Option<std::net::TcpStream> {
    use std::os::fd::AsFd;
    tcp.as_fd()
        .try_clone_to_owned()
        .ok()
        .map(std::net::TcpStream::from)
}

/// After hyper dropped a connection: its write side is shut (a FIN, also
/// where hyper sent none), then what the caller still sends is read and
/// dropped ([`linger`]). A caller that already closed costs one read.
async fn linger_after(handle: std::net::TcpStream, timeout: Duration) {
    use std::io::Read;
    let _ = handle.shutdown(std::net::Shutdown::Write);
    if timeout.is_zero() {
        return;
    }
    // The descriptor shares the socket's non-blocking mode.
    let mut scratch = [0u8; 8 << 10];
    match (&handle).read(&mut scratch) {
        Ok(0) => return,
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        Err(_) => return,
    }
    if let Ok(tcp) = TcpStream::from_std(handle) {
        linger(&tcp, timeout).await;
    }
}

/// Drives a hyper connection until it ends, is idle past its deadline, or
/// the listener stops (then it is shut down gracefully with `shutdown`).
///
/// True when hyper ended the connection itself (the caller may still be
/// sending: it lingers), false when the idle or send deadline closed it.
async fn drive<C, E>(
    mut conn: Pin<&mut C>,
    shutdown: fn(Pin<&mut C>),
    activity: &Activity,
    limits: &ConnLimits,
    remote: SocketAddr,
    stop: &mut watch::Receiver<bool>,
) -> bool
where
    C: Future<Output = Result<(), E>>,
    E: std::fmt::Display,
{
    // Fires no later than the earliest time the connection could be idle too
    // long; it then looks at what happened since and closes or re-arms. A
    // request that starts and ends after it looked moves its deadline later,
    // never earlier, than `now + idle_timeout`.
    let opened = Instant::now();
    let idle = tokio::time::sleep(
        limits
            .first_request_timeout
            .min(limits.idle_timeout)
            .min(limits.send_timeout),
    );
    tokio::pin!(idle);
    let mut closing = false;
    loop {
        tokio::select! {
            res = conn.as_mut() => {
                if let Err(error) = res {
                    tracing::debug!(%error, %remote, "connection ended with an error");
                }
                return true;
            }
            () = idle.as_mut() => {
                let now = Instant::now();
                let (deadline, unsent, first) = {
                    let st = activity.lock();
                    let deadline = if st.in_flight > 0 {
                        None
                    } else if st.started == 0 {
                        Some(opened + limits.first_request_timeout)
                    } else {
                        Some(st.idle_since + limits.idle_timeout)
                    };
                    (deadline, st.oldest_unsent(), st.started == 0)
                };
                // A response the connection has not taken for too long: the
                // client stopped reading (or keeps its HTTP/2 window shut).
                // Closing gracefully would wait on the same client.
                if let Some(since) = unsent
                    && now.saturating_duration_since(since) >= limits.send_timeout
                {
                    tracing::debug!(%remote, "closing a connection whose response is not being sent");
                    return false;
                }
                let deadline = deadline.filter(|_| !closing);
                if deadline.is_none_or(|d| d > now) {
                    // While a response is in flight, look again at least
                    // every send timeout: one that stops being sent is seen
                    // within two of them.
                    let mut next = now + limits.idle_timeout.min(limits.send_timeout);
                    if let Some(since) = unsent {
                        next = next.min(since + limits.send_timeout);
                    }
                    idle.as_mut().reset(deadline.map_or(next, |d| d.min(next)));
                    continue;
                }
                tracing::debug!(%remote, first, "closing an idle connection");
                shutdown(conn.as_mut());
                // A peer that does not let go is dropped after a bounded wait.
                let _ = tokio::time::timeout(Duration::from_secs(1), conn.as_mut()).await;
                return false;
            }
            () = stopped(stop), if !closing => {
                closing = true;
                shutdown(conn.as_mut());
            }
        }
    }
}

/// Resolves when the listener stops (never when its sender is gone without stopping).
async fn stopped(stop: &mut watch::Receiver<bool>) {
    if stop.wait_for(|s| *s).await.is_err() {
        std::future::pending::<()>().await;
    }
}

#[doc(hidden)]
pub mod http2_exchange;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Write};

    /// A source that always has bytes ready is cut at the deadline: every
    /// read after it is refused, though each read alone would complete.
    #[tokio::test(start_paused = true)]
    async fn watchdog_ends_reads_that_are_always_ready() {
        let mut timer = Watchdog::new(Duration::from_secs(1));
        let deadline = Instant::now() + Duration::from_secs(5);
        let mut reads = 0u32;
        while timer.run(deadline, std::future::ready(())).await.is_some() {
            reads += 1;
            // Each read takes a little time, as a busy peer's would.
            tokio::time::advance(Duration::from_millis(100)).await;
            assert!(reads < 1000, "the deadline never ended the loop");
        }
        assert_eq!(reads, 50, "reads until the deadline, 100 ms apart");
        assert!(Instant::now() >= deadline);
    }

    /// Sends one keep-alive request and reads its answer's status line and body.
    fn get(conn: &mut BufReader<std::net::TcpStream>) -> std::io::Result<String> {
        conn.get_mut()
            .write_all(b"GET / HTTP/1.1\r\nHost: test\r\n\r\n")?;
        let mut status = String::new();
        conn.read_line(&mut status)?;
        let mut len = 0;
        loop {
            let mut line = String::new();
            conn.read_line(&mut line)?;
            if line == "\r\n" || line.is_empty() {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                len = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0; len];
        std::io::Read::read_exact(conn, &mut body)?;
        Ok(format!(
            "{} {}",
            status.trim(),
            String::from_utf8_lossy(&body)
        ))
    }

    /// A connection handed to a connection thread is driven by that thread's
    /// own runtime: its socket must not stay registered with the runtime that
    /// accepted it (every readiness event would cross threads, and stop when
    /// that runtime is busy).
    #[test]
    fn a_connection_handed_to_a_connection_thread_is_served_without_the_accepting_runtime() {
        let accepting = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let workers = Workers::start(1, "serve-test").unwrap();
        let listener = accepting
            .block_on(TcpListener::bind("127.0.0.1:0"))
            .unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new().route("/", axum::routing::get(|| async { "ok" }));
        accepting.spawn(serve(
            listener,
            None,
            router,
            ConnLimits::default(),
            "test",
            Metrics::default(),
            std::future::pending(),
            Some(workers),
            None,
        ));
        let client = std::thread::spawn(move || {
            let tcp = std::net::TcpStream::connect(addr).unwrap();
            tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut conn = BufReader::new(tcp);
            let first = get(&mut conn).map_err(|e| e.to_string());
            (conn, first)
        });
        // The accepting runtime runs only while the first request is served.
        let (mut conn, first) = accepting.block_on(async {
            loop {
                if client.is_finished() {
                    break client.join().unwrap();
                }
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        });
        assert_eq!(first.as_deref(), Ok("HTTP/1.1 200 OK ok"));
        // Now nothing drives it: the connection thread alone must answer.
        let second = get(&mut conn).map_err(|e| e.kind());
        assert_eq!(second.as_deref(), Ok("HTTP/1.1 200 OK ok"));
    }

    /// A self-signed server config and a client config that trusts it.
    fn tls_pair() -> (Arc<rustls::ServerConfig>, Arc<rustls::ClientConfig>) {
        let key = rcgen::KeyPair::generate().unwrap();
        let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
            .unwrap()
            .self_signed(&key)
            .unwrap();
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let server = rustls::ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_no_client_auth()
            .with_single_cert(
                vec![cert.der().clone()],
                rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
            .unwrap();
        let mut roots = rustls::RootCertStore::empty();
        roots.add(cert.der().clone()).unwrap();
        let client = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .unwrap()
            .with_root_certificates(roots)
            .with_no_client_auth();
        (Arc::new(server), Arc::new(client))
    }

    /// Claims `POST /fast` and answers `fast <body>`.
    struct Echo;

    impl FastPath for Echo {
        fn claims(&self, head: &RequestHead, _: &HeaderMap) -> bool {
            head.method == http::Method::POST
                && (head.target == "/fast" || head.target == "/refuse")
        }

        fn serve<'a>(
            &'a self,
            head: RequestHead,
            conn: &'a mut FastConn,
        ) -> Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>> {
            Box::pin(async move {
                use tokio::io::AsyncWriteExt;
                if head.target == "/refuse" {
                    // Refused from the head: the body is never read.
                    let answer = "HTTP/1.1 413 Payload Too Large\r\ncontent-length: 7\r\nconnection: close\r\n\r\nrefused";
                    let _ = conn.io.write_all(answer.as_bytes()).await;
                    let _ = conn.io.flush().await;
                    return false;
                }
                let len = match h1::body_kind(&conn.headers) {
                    Some(h1::BodyKind::Length(n)) => n as usize,
                    _ => 0,
                };
                while conn.buf.len() < len {
                    if read_into(&mut conn.io, &mut conn.buf).await.unwrap_or(0) == 0 {
                        return false;
                    }
                }
                let body = format!("fast {}", String::from_utf8_lossy(&conn.buf[..len]));
                conn.buf.advance(len);
                let answer = format!(
                    "HTTP/1.1 200 OK\r\ncontent-length: {}\r\n\r\n{body}",
                    body.len()
                );
                conn.io.write_all(answer.as_bytes()).await.is_ok()
            })
        }

        fn shortest_timeout(&self) -> Duration {
            Duration::from_secs(5)
        }
    }

    /// Starts a TLS listener with the `Echo` fast path; its address and a client config.
    async fn fast_listener(limits: ConnLimits) -> (SocketAddr, Arc<rustls::ClientConfig>) {
        let (server, client) = tls_pair();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let router = Router::new()
            .route("/", axum::routing::get(|| async { "router" }))
            .route(
                "/fast",
                axum::routing::post(|body: String| async move { format!("router {body}") }),
            )
            .route("/upgrade", axum::routing::get(upgrade_later))
            .route(
                "/refuse-router",
                axum::routing::post(|| async {
                    // Refused from the head, as the fast path's `/refuse`:
                    // hyper closes the connection with the body unread.
                    (http::StatusCode::PAYLOAD_TOO_LARGE, "refused")
                }),
            );
        tokio::spawn(serve_tls(
            listener,
            server,
            router,
            limits,
            "test",
            Metrics::default(),
            std::future::pending(),
            None,
            Some(Arc::new(Echo)),
        ));
        (addr, client)
    }

    /// Answers 101 and, once hyper's connection has ended, writes on the
    /// upgraded socket, then echoes what it reads.
    async fn upgrade_later(
        mut req: http::Request<axum::body::Body>,
    ) -> http::Response<axum::body::Body> {
        let on = hyper::upgrade::on(&mut req);
        tokio::spawn(async move {
            use tokio::io::{AsyncReadExt, AsyncWriteExt};
            let Ok(up) = on.await else { return };
            let mut io = hyper_util::rt::TokioIo::new(up);
            tokio::time::sleep(Duration::from_millis(300)).await;
            if io.write_all(b"late hello").await.is_err() || io.flush().await.is_err() {
                return;
            }
            let mut b = [0u8; 64];
            if let Ok(n) = io.read(&mut b).await {
                let _ = io.write_all(&b[..n]).await;
                let _ = io.flush().await;
            }
        });
        http::Response::builder()
            .status(http::StatusCode::SWITCHING_PROTOCOLS)
            .header("connection", "upgrade")
            .header("upgrade", "test")
            .body(axum::body::Body::empty())
            .unwrap()
    }

    async fn connect(
        addr: SocketAddr,
        client: Arc<rustls::ClientConfig>,
    ) -> tokio_rustls::client::TlsStream<TcpStream> {
        let tcp = TcpStream::connect(addr).await.unwrap();
        let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
        tokio_rustls::TlsConnector::from(client)
            .connect(name, tcp)
            .await
            .unwrap()
    }

    /// Reads `n` whole answers (framed by `content-length`): status and body.
    async fn answers<S: AsyncRead + Unpin>(io: &mut S, n: usize) -> Vec<(u16, String)> {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        while out.len() < n {
            let mut headers = HeaderMap::new();
            match h1::parse_response(&buf, &mut headers) {
                Parsed::Complete(h) => {
                    let Some(h1::BodyKind::Length(len)) = h1::body_kind(&headers) else {
                        panic!("an answer without a length: {buf:?}");
                    };
                    let end = h.len + len as usize;
                    if buf.len() >= end {
                        let body = String::from_utf8_lossy(&buf[h.len..end]).into_owned();
                        out.push((h.status, body));
                        buf.advance(end);
                        continue;
                    }
                }
                Parsed::Partial => {}
                Parsed::Invalid => panic!("an invalid answer: {buf:?}"),
            }
            let read = tokio::time::timeout(Duration::from_secs(10), read_into(io, &mut buf))
                .await
                .expect("an answer in time")
                .unwrap();
            assert!(read > 0, "closed after {out:?}");
        }
        out
    }

    /// A refusal that closes the connection while the caller is still
    /// sending its body reaches a caller that, as curl does, gives up when
    /// a write fails, on the fast path (`/refuse`) and on hyper's
    /// (`/refuse-router`): the connection lingers, reading and dropping
    /// what arrives, rather than closing with unread bytes (a reset, which
    /// fails the caller's next write before it has read the answer).
    #[tokio::test]
    async fn a_refusal_reaches_a_caller_still_sending_its_body() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (addr, client) = fast_listener(ConnLimits::default()).await;
        let mut lost = Vec::new();
        for path in ["/refuse", "/refuse-router"] {
            for round in 0..20 {
                let io = connect(addr, client.clone()).await;
                let (mut rd, mut wr) = tokio::io::split(io);
                let len = 64usize << 20;
                let head =
                    format!("POST {path} HTTP/1.1\r\nhost: x\r\ncontent-length: {len}\r\n\r\n");
                wr.write_all(head.as_bytes()).await.unwrap();
                let chunk = vec![b'x'; 16 << 10];
                let mut got = Vec::new();
                let mut sent = 0;
                let outcome = tokio::time::timeout(Duration::from_secs(10), async {
                    loop {
                        tokio::select! {
                            r = wr.write_all(&chunk), if sent < len => match r {
                                Ok(()) => sent += chunk.len(),
                                Err(e) => return Err(format!("a write failed: {e}")),
                            },
                            r = rd.read_buf(&mut got) => match r {
                                Ok(0) => return Ok(()),
                                Ok(_) if got.ends_with(b"refused") => return Ok(()),
                                Ok(_) => {}
                                Err(e) => return Err(format!("a read failed: {e}")),
                            },
                        }
                    }
                })
                .await;
                match outcome {
                    Ok(Ok(())) if got.starts_with(b"HTTP/1.1 413") => {}
                    other => lost.push(format!(
                        "{path} round {round}: {other:?} after {sent} bytes"
                    )),
                }
            }
        }
        assert!(lost.is_empty(), "the refusal was lost: {lost:#?}");
    }

    /// Claims HTTP/2 requests to `/direct...` for [`FastPath::direct`]; the
    /// body of `/direct-held` ends only when its sender is dropped.
    struct Claimer {
        claimed: AtomicUsize,
        held: Mutex<Vec<tokio::sync::oneshot::Sender<()>>>,
    }

    impl FastPath for Claimer {
        fn claims(&self, _: &RequestHead, _: &HeaderMap) -> bool {
            false
        }

        fn serve<'a>(
            &'a self,
            _: RequestHead,
            _: &'a mut FastConn,
        ) -> Pin<Box<dyn std::future::Future<Output = bool> + Send + 'a>> {
            Box::pin(async { false })
        }

        fn shortest_timeout(&self) -> Duration {
            Duration::from_secs(5)
        }

        fn direct(
            &self,
            req: http::Request<axum::body::Body>,
        ) -> Result<DirectAnswer, http::Request<axum::body::Body>> {
            let path = req.uri().path().to_owned();
            if !path.starts_with("/direct") {
                return Err(req);
            }
            self.claimed.fetch_add(1, Ordering::SeqCst);
            let remote = req.extensions().get::<RemoteAddr>().map(|r| r.0);
            let (tx, rx) = tokio::sync::oneshot::channel::<()>();
            if path == "/direct-held" {
                self.held.lock().unwrap().push(tx);
            }
            Ok(DirectAnswer(Box::pin(async move {
                let mut resp = match path.as_str() {
                    "/direct-204" => {
                        let mut r = http::Response::new(axum::body::Body::empty());
                        *r.status_mut() = http::StatusCode::NO_CONTENT;
                        r.headers_mut().insert(
                            http::header::CONTENT_LENGTH,
                            http::HeaderValue::from_static("0"),
                        );
                        r
                    }
                    "/direct-held" => {
                        let body = futures::stream::once(async move {
                            let _ = rx.await;
                            Ok::<_, std::convert::Infallible>(Bytes::from_static(b"held"))
                        });
                        http::Response::new(axum::body::Body::from_stream(body))
                    }
                    _ => http::Response::new(axum::body::Body::from(format!(
                        "direct from {remote:?}"
                    ))),
                };
                resp.headers_mut()
                    .insert("x-served", http::HeaderValue::from_static("direct"));
                resp
            })))
        }
    }

    /// Client programs drawn at random (the fuzz target
    /// `http2_connection` draws them from its input): see
    /// [`http2_exchange`] for what must hold whatever a client sends.
    /// `H2_PROGRAM_SEED` replays a run, `H2_PROGRAM_CASES` sets its length.
    #[tokio::test(start_paused = true)]
    async fn any_http2_program_ends_its_connection_and_gives_every_place_back() {
        use rand::{Rng, SeedableRng};
        let seed: u64 = std::env::var("H2_PROGRAM_SEED")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| rand::rng().random());
        let cases: usize = std::env::var("H2_PROGRAM_CASES")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(300);
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let (mut clean, mut answered) = (0, 0);
        for case in 0..cases {
            let len = rng.random_range(0..160);
            let mut input: Vec<u8> = (0..len).map(|_| rng.random()).collect();
            // Half of them well-formed (mode bit 2).
            if let Some(mode) = input.first_mut() {
                *mode = (*mode & !4) | if case % 2 == 0 { 4 } else { 0 };
            }
            let program = http2_exchange::decode(&input);
            if let Err(broken) = http2_exchange::run(&program).await {
                panic!("case {case} (H2_PROGRAM_SEED={seed}): {broken}\n{input:02x?}\n{program:?}");
            }
            clean += usize::from(program.is_clean());
            answered += program.answered_streams();
        }
        // The draw reaches the well-formed programs whose answers count.
        if cases >= 100 {
            assert!(
                clean > 0 && answered > 0,
                "{clean} clean programs, {answered} answers checked"
            );
        }
    }

    /// The connection's service over an in-memory pipe: HTTP/2 requests
    /// `direct` claims are answered there, with the connection's remote
    /// address; others, and every HTTP/1.1 request, go to the router; a 204
    /// loses its `Content-Length`; a direct answer holds a request place
    /// until its body ends, and one over the cap is refused 503.
    #[tokio::test]
    async fn the_connection_service_hands_http2_requests_to_direct_or_the_router() {
        use http_body_util::BodyExt;
        let claimer = Arc::new(Claimer {
            claimed: AtomicUsize::new(0),
            held: Mutex::new(Vec::new()),
        });
        let router = Router::new().route("/", axum::routing::get(|| async { "router" }));
        let remote: SocketAddr = "192.0.2.7:4000".parse().unwrap();
        let limits = ConnLimits::default();
        let slots = RequestSlots::at_most(1);
        let open = slots.caps.open.clone();
        let (_stop_tx, stop) = watch::channel(false);
        let (server, client) = tokio::io::duplex(64 << 10);
        let fast: Arc<dyn FastPath> = claimer.clone();
        tokio::spawn(serve_connection(
            server,
            PeerCertificates::default(),
            remote,
            router.clone(),
            limits,
            slots.clone(),
            stop.clone(),
            Versions::Http2Only,
            Some(fast.clone()),
            None,
        ));
        let (mut send, conn) = hyper::client::conn::http2::handshake(
            hyper_util::rt::TokioExecutor::new(),
            hyper_util::rt::TokioIo::new(client),
        )
        .await
        .unwrap();
        tokio::spawn(conn);
        let get = |path: &str| {
            http::Request::get(format!("http://x{path}"))
                .body(http_body_util::Empty::<Bytes>::new())
                .unwrap()
        };
        async fn read(resp: http::Response<hyper::body::Incoming>) -> (u16, HeaderMap, String) {
            let (parts, body) = resp.into_parts();
            let body = body.collect().await.unwrap().to_bytes();
            (
                parts.status.as_u16(),
                parts.headers,
                String::from_utf8_lossy(&body).into_owned(),
            )
        }
        let (code, headers, body) = read(send.send_request(get("/direct")).await.unwrap()).await;
        assert_eq!(
            (code, body.as_str()),
            (200, "direct from Some(192.0.2.7:4000)")
        );
        assert_eq!(headers["x-served"], "direct");
        let (code, headers, body) = read(send.send_request(get("/")).await.unwrap()).await;
        assert_eq!((code, body.as_str()), (200, "router"));
        assert!(!headers.contains_key("x-served"));
        let (code, headers, _) = read(send.send_request(get("/direct-204")).await.unwrap()).await;
        assert_eq!(code, 204);
        assert!(
            !headers.contains_key(http::header::CONTENT_LENGTH),
            "a 204 kept its content-length: {headers:?}"
        );
        assert_eq!(claimer.claimed.load(Ordering::SeqCst), 2);

        // A direct answer whose body has not ended holds the only place.
        let held = send.send_request(get("/direct-held")).await.unwrap();
        assert_eq!(held.status(), 200);
        assert_eq!(open.get(), 1);
        let (code, _, _) = read(send.send_request(get("/direct")).await.unwrap()).await;
        assert_eq!(code, 503, "a request over the cap was served");
        assert_eq!(claimer.claimed.load(Ordering::SeqCst), 4);
        claimer.held.lock().unwrap().clear();
        let (_, _, body) = read(held).await;
        assert_eq!(body, "held");
        tokio::time::timeout(Duration::from_secs(5), async {
            while open.get() != 0 {
                tokio::task::yield_now().await;
            }
        })
        .await
        .expect("the place given back at the body's end");

        // Over HTTP/1.1, `direct` is not asked: the router answers.
        let (server, client) = tokio::io::duplex(64 << 10);
        tokio::spawn(serve_connection(
            server,
            PeerCertificates::default(),
            remote,
            router,
            limits,
            slots,
            stop,
            Versions::Any,
            Some(fast),
            None,
        ));
        let (mut send, conn) =
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(client))
                .await
                .unwrap();
        tokio::spawn(conn);
        let (code, _, _) = read(send.send_request(get("/direct")).await.unwrap()).await;
        assert_eq!(code, 404);
        assert_eq!(claimer.claimed.load(Ordering::SeqCst), 4);
    }

    /// An upgraded connection belongs to the upgrade's handler after hyper's
    /// connection has ended: it neither lingers nor has its write side shut.
    #[tokio::test]
    async fn an_upgraded_connection_outlives_hypers_and_is_not_shut() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (addr, client) = fast_listener(ConnLimits::default()).await;
        let mut io = connect(addr, client).await;
        io.write_all(
            b"GET /upgrade HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: test\r\n\r\n",
        )
        .await
        .unwrap();
        let mut got = Vec::new();
        let mut b = [0u8; 1024];
        tokio::time::timeout(Duration::from_secs(10), async {
            while !got.ends_with(b"late hello") {
                let n = io.read(&mut b).await.unwrap();
                assert!(n > 0, "closed after {:?}", String::from_utf8_lossy(&got));
                got.extend_from_slice(&b[..n]);
            }
        })
        .await
        .expect("the upgraded socket's bytes in time");
        assert!(got.starts_with(b"HTTP/1.1 101"), "{got:?}");
        io.write_all(b"echo").await.unwrap();
        io.flush().await.unwrap();
        let n = tokio::time::timeout(Duration::from_secs(10), io.read(&mut b))
            .await
            .unwrap()
            .unwrap();
        assert_eq!(&b[..n], b"echo");
    }

    /// Pipelined requests: the fast path serves what it claims, and from the
    /// first request it does not claim on, hyper and the router serve the
    /// connection from that request's first byte (a claimable one included).
    #[tokio::test]
    async fn a_fast_path_serves_pipelined_requests_then_hands_the_connection_to_the_router() {
        use tokio::io::AsyncWriteExt;
        let (addr, client) = fast_listener(ConnLimits::default()).await;
        let mut io = connect(addr, client).await;
        io.write_all(
            b"POST /fast HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\n\r\na\
              POST /fast HTTP/1.1\r\nhost: x\r\ncontent-length: 2\r\n\r\nbc\
              GET / HTTP/1.1\r\nhost: x\r\n\r\n\
              POST /fast HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\n\r\nd",
        )
        .await
        .unwrap();
        assert_eq!(
            answers(&mut io, 4).await,
            [
                (200, "fast a".to_owned()),
                (200, "fast bc".to_owned()),
                (200, "router".to_owned()),
                (200, "router d".to_owned()),
            ]
        );
    }

    /// Item 9 of issue 28: after an HTTP/1.1 request the connection stays
    /// HTTP/1.1; an HTTP/2 preface then is a bad request, never a switch to
    /// HTTP/2 (RFC 9113 §3.3), and nothing of HTTP/2 is answered.
    #[tokio::test]
    async fn an_http2_preface_after_http1_requests_does_not_switch_the_connection() {
        use tokio::io::AsyncWriteExt;
        let (addr, client) = fast_listener(ConnLimits::default()).await;
        let mut io = connect(addr, client).await;
        io.write_all(b"POST /fast HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\n\r\na")
            .await
            .unwrap();
        assert_eq!(answers(&mut io, 1).await, [(200, "fast a".to_owned())]);
        // The preface, then an empty SETTINGS frame.
        io.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
            .await
            .unwrap();
        let mut buf = BytesMut::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), async {
            while read_into(&mut io, &mut buf).await.unwrap_or(0) > 0 {}
        })
        .await;
        let text = String::from_utf8_lossy(&buf);
        assert!(
            buf.is_empty() || text.starts_with("HTTP/1.1 4") || text.starts_with("HTTP/1.1 5"),
            "the connection answered the preface with {buf:?}"
        );
    }

    /// A head over the header bound is not the fast path's: hyper refuses it.
    #[tokio::test]
    async fn an_oversized_head_is_refused_by_hyper_not_served_fast() {
        use tokio::io::AsyncWriteExt;
        let limits = ConnLimits {
            max_header_bytes: 8192,
            ..ConnLimits::default()
        };
        let (addr, client) = fast_listener(limits).await;
        let mut io = connect(addr, client).await;
        let filler = "f".repeat(20_000);
        let req = format!(
            "POST /fast HTTP/1.1\r\nhost: x\r\nx-filler: {filler}\r\ncontent-length: 1\r\n\r\na"
        );
        let _ = io.write_all(req.as_bytes()).await;
        let mut buf = BytesMut::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), async {
            while read_into(&mut io, &mut buf).await.unwrap_or(0) > 0 {}
        })
        .await;
        let text = String::from_utf8_lossy(&buf);
        assert!(text.starts_with("HTTP/1.1 431"), "{text}");
    }

    /// A listener (no fast path) whose `/endless` answer never ends, with a
    /// 300 ms send timeout; its client config offers `alpn`.
    async fn endless_listener(alpn: &[u8]) -> (SocketAddr, Arc<rustls::ClientConfig>) {
        let limits = ConnLimits {
            send_timeout: Duration::from_millis(300),
            ..ConnLimits::default()
        };
        let (addr, client, _) = holding_listener(limits).await;
        (addr, offering(&client, alpn))
    }

    /// Item 1 of issue 28: a client that stops reading an answer (over
    /// HTTP/1.1 its socket fills) has its connection closed once the answer
    /// has not been sent on for the send timeout, though a request in flight
    /// keeps the idle timer off.
    #[tokio::test]
    async fn a_client_that_stops_reading_is_closed_after_the_send_timeout_http1() {
        use tokio::io::AsyncWriteExt;
        let (addr, client) = endless_listener(b"http/1.1").await;
        let mut io = connect(addr, client).await;
        io.write_all(b"GET /endless HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let mut buf = BytesMut::new();
        let mut read = 0usize;
        let end = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                buf.clear();
                match read_into(&mut io, &mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => read += n,
                }
            }
        })
        .await;
        assert!(
            end.is_ok(),
            "still open after 10 s of reading ({read} bytes): never closed"
        );
    }

    /// The same over HTTP/2, where a stream whose window stays shut is never
    /// written to the socket and its connection keeps answering pings.
    #[tokio::test]
    async fn a_client_that_stops_reading_is_closed_after_the_send_timeout_http2() {
        use http_body_util::BodyExt;
        let limits = ConnLimits {
            send_timeout: Duration::from_millis(300),
            ..ConnLimits::default()
        };
        let (addr, client, metrics) = holding_listener(limits).await;
        let client = offering(&client, b"h2");
        let io = connect(addr, client).await;
        let (mut sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
                .await
                .unwrap();
        tokio::spawn(conn);
        let req = http::Request::get("https://localhost/endless")
            .body(http_body_util::Empty::<Bytes>::new())
            .unwrap();
        let resp = sender.send_request(req).await.unwrap();
        assert_eq!(resp.status(), 200);
        // Not read: the stream's window (64 KiB) fills and stays shut.
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let mut body = resp.into_body();
        let mut read = 0usize;
        let end = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(Ok(frame)) = body.frame().await {
                read += frame.data_ref().map_or(0, |d| d.len());
            }
        })
        .await;
        assert!(
            end.is_ok(),
            "still open after 10 s of reading ({read} bytes): never closed"
        );
        // On the Console's side too: the connection's task ends, the stream
        // whose answer could not be sent with it (the request's place given
        // back), though that stream never hears from its client again.
        let ended = tokio::time::timeout(Duration::from_secs(10), async {
            while open_requests(&metrics) != 0 || open_connections(&metrics) != 0 {
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(
            ended.is_ok(),
            "{} requests and {} connections still open",
            open_requests(&metrics),
            open_connections(&metrics)
        );
    }

    /// The fast loop closes a connection idle past the idle timeout, and one
    /// whose first request does not come in time.
    #[tokio::test]
    async fn the_fast_loop_closes_idle_connections() {
        use tokio::io::AsyncWriteExt;
        let limits = ConnLimits {
            first_request_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(300),
            ..ConnLimits::default()
        };
        let (addr, client) = fast_listener(limits).await;
        let mut io = connect(addr, client.clone()).await;
        io.write_all(b"POST /fast HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\n\r\na")
            .await
            .unwrap();
        assert_eq!(answers(&mut io, 1).await, [(200, "fast a".to_owned())]);
        let started = Instant::now();
        let mut buf = BytesMut::new();
        let end = tokio::time::timeout(Duration::from_secs(10), read_into(&mut io, &mut buf)).await;
        assert!(matches!(end, Ok(Ok(0)) | Ok(Err(_))), "{end:?}");
        assert!(started.elapsed() >= Duration::from_millis(250));
        // A connection that never sends a request.
        let mut silent = connect(addr, client).await;
        let end =
            tokio::time::timeout(Duration::from_secs(10), read_into(&mut silent, &mut buf)).await;
        assert!(matches!(end, Ok(Ok(0)) | Ok(Err(_))), "{end:?}");
    }

    /// A head that never ends, sent at once or a byte at a time, does not
    /// hold a connection of the fast loop past its first-request deadline:
    /// a partly read head is no request, and bytes arriving do not move
    /// the deadline.
    #[tokio::test]
    async fn the_fast_loop_closes_a_partial_or_trickled_head_at_its_deadline() {
        use tokio::io::AsyncWriteExt;
        let limits = ConnLimits {
            first_request_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_millis(300),
            ..ConnLimits::default()
        };
        let (addr, client) = fast_listener(limits).await;
        let mut buf = BytesMut::new();

        let mut partial = connect(addr, client.clone()).await;
        partial
            .write_all(b"POST /fast HTTP/1.1\r\nhost: x\r\n")
            .await
            .unwrap();
        partial.flush().await.unwrap();
        let end =
            tokio::time::timeout(Duration::from_secs(10), read_into(&mut partial, &mut buf)).await;
        assert!(
            matches!(end, Ok(Ok(0)) | Ok(Err(_))),
            "a partial head still open after 10 s: {end:?}"
        );

        // A byte every 100 ms: the whole head would take 5 s.
        let head = b"POST /fast HTTP/1.1\r\nhost: x\r\ncontent-length: 1\r\n\r\na";
        let mut trickle = connect(addr, client).await;
        let started = Instant::now();
        let mut closed = None;
        for b in head {
            if trickle.write_all(&[*b]).await.is_err() || trickle.flush().await.is_err() {
                closed = Some(started.elapsed());
                break;
            }
            match tokio::time::timeout(
                Duration::from_millis(100),
                read_into(&mut trickle, &mut buf),
            )
            .await
            {
                Err(_) => {}
                Ok(Ok(n)) if n > 0 => panic!("an answer to a trickled head: {buf:?}"),
                Ok(_) => {
                    closed = Some(started.elapsed());
                    break;
                }
            }
        }
        let closed = closed.expect("a head trickled a byte at a time was read whole");
        assert!(
            closed < Duration::from_secs(3),
            "a trickled head held the connection for {closed:?}"
        );
    }

    /// A listener (HTTP/2 and HTTP/1.1) whose `/hold` answers a head and
    /// then a body that never ends, so its requests stay open, whose
    /// `/endless` sends without end, and whose `/ok` answers `ok`; a client
    /// config that offers HTTP/2, and the listener's metrics.
    async fn holding_listener(
        limits: ConnLimits,
    ) -> (SocketAddr, Arc<rustls::ClientConfig>, Metrics) {
        let (server, client) = tls_pair();
        let mut server = (*server).clone();
        server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
        let client = offering(&client, b"h2");
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let hold = || async {
            axum::body::Body::from_stream(
                futures::stream::pending::<Result<Bytes, std::io::Error>>(),
            )
        };
        let endless = || async {
            let chunk = Bytes::from(vec![b'x'; 64 << 10]);
            axum::body::Body::from_stream(futures::stream::repeat_with(move || {
                Ok::<_, std::convert::Infallible>(chunk.clone())
            }))
        };
        let router = Router::new()
            .route("/hold", axum::routing::get(hold))
            .route("/endless", axum::routing::get(endless))
            .route("/ok", axum::routing::get(|| async { "ok" }));
        let metrics = Metrics::default();
        tokio::spawn(serve_tls(
            listener,
            Arc::new(server),
            router,
            limits,
            "test",
            metrics.clone(),
            std::future::pending(),
            None,
            None,
        ));
        (addr, client, metrics)
    }

    /// `client` offering only `alpn`.
    fn offering(client: &Arc<rustls::ClientConfig>, alpn: &[u8]) -> Arc<rustls::ClientConfig> {
        let mut client = (**client).clone();
        client.alpn_protocols = vec![alpn.to_vec()];
        Arc::new(client)
    }

    /// Waits up to 10 s for `io` to be closed by the server (end of stream or
    /// an error); returns what was read before, or `None` if still open.
    async fn closed<S: AsyncRead + Unpin>(io: &mut S) -> Option<Vec<u8>> {
        let mut got = Vec::new();
        tokio::time::timeout(Duration::from_secs(10), async {
            let mut buf = [0u8; 4096];
            loop {
                match io.read(&mut buf).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => got.extend_from_slice(&buf[..n]),
                }
            }
        })
        .await
        .ok()
        .map(|()| got)
    }

    /// Trickles a request head that never ends, a byte every 20 ms; the
    /// server must close the connection within 10 s.
    async fn assert_cut_off_while_trickling<S: AsyncWrite + Unpin>(io: &mut S, what: &str) {
        use tokio::io::AsyncWriteExt;
        let head = [
            &b"GET /ok HTTP/1.1\r\nhost: x\r\nx-slow: "[..],
            &[b'a'; 200],
        ]
        .concat();
        let trickle = async {
            for &b in &head {
                io.write_all(&[b]).await?;
                io.flush().await?;
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
            std::io::Result::Ok(())
        };
        let trickled = tokio::time::timeout(Duration::from_secs(10), trickle).await;
        assert!(
            matches!(trickled, Ok(Err(_))),
            "{what} kept its connection: {trickled:?}"
        );
    }

    /// A TCP connection that never starts TLS is closed at the handshake
    /// deadline.
    #[tokio::test]
    async fn a_silent_connection_is_closed_at_the_handshake_deadline() {
        let limits = ConnLimits {
            handshake_timeout: Duration::from_millis(300),
            first_request_timeout: Duration::from_secs(60),
            ..ConnLimits::default()
        };
        let (addr, _, _) = holding_listener(limits).await;
        let started = Instant::now();
        let mut tcp = TcpStream::connect(addr).await.unwrap();
        assert!(closed(&mut tcp).await.is_some(), "still open after 10 s");
        assert!(started.elapsed() >= Duration::from_millis(250));
    }

    /// A TLS connection whose first request head is not whole by the first
    /// request deadline is closed: no request at all (HTTP/1.1 and HTTP/2),
    /// or a head trickled in, which is not a request yet.
    #[tokio::test]
    async fn a_connection_without_a_whole_first_request_is_closed_at_its_deadline() {
        let limits = ConnLimits {
            first_request_timeout: Duration::from_millis(300),
            idle_timeout: Duration::from_secs(60),
            ..ConnLimits::default()
        };
        let (addr, client, _) = holding_listener(limits).await;
        for alpn in [&b"http/1.1"[..], b"h2"] {
            let started = Instant::now();
            let mut tls = connect(addr, offering(&client, alpn)).await;
            assert!(
                closed(&mut tls).await.is_some(),
                "{} connection without a request still open",
                String::from_utf8_lossy(alpn)
            );
            assert!(started.elapsed() >= Duration::from_millis(250));
        }
        let mut tls = connect(addr, offering(&client, b"http/1.1")).await;
        assert_cut_off_while_trickling(&mut tls, "a trickled first head").await;
    }

    /// A keep-alive connection with no request in flight is closed at the
    /// idle timeout: HTTP/1.1 after its answer (which did not say close),
    /// HTTP/1.1 while the next head trickles in, HTTP/2 after its stream.
    #[tokio::test]
    async fn an_idle_keep_alive_connection_is_closed_at_the_idle_timeout() {
        use http_body_util::BodyExt;
        use tokio::io::AsyncWriteExt;
        let limits = ConnLimits {
            first_request_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_millis(500),
            ..ConnLimits::default()
        };
        let (addr, client, _) = holding_listener(limits).await;
        let mut tls = connect(addr, offering(&client, b"http/1.1")).await;
        tls.write_all(b"GET /ok HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        let started = Instant::now();
        let got = closed(&mut tls).await.expect("still open after 10 s");
        let text = String::from_utf8_lossy(&got).to_ascii_lowercase();
        assert!(text.starts_with("http/1.1 200"), "{text}");
        assert!(!text.contains("connection: close"), "{text}");
        assert!(started.elapsed() >= Duration::from_millis(400));

        let mut tls = connect(addr, offering(&client, b"http/1.1")).await;
        tls.write_all(b"GET /ok HTTP/1.1\r\nhost: x\r\n\r\n")
            .await
            .unwrap();
        assert_eq!(answers(&mut tls, 1).await, [(200, "ok".to_owned())]);
        assert_cut_off_while_trickling(&mut tls, "a trickled head after an answer").await;

        let io = connect(addr, offering(&client, b"h2")).await;
        let (mut send, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
                .await
                .unwrap();
        let conn = tokio::spawn(conn);
        let req = http::Request::get("https://localhost/ok")
            .body(http_body_util::Empty::<Bytes>::new())
            .unwrap();
        let resp = send.send_request(req).await.unwrap();
        let body = resp.into_body().collect().await.unwrap().to_bytes();
        assert_eq!(&body[..], b"ok");
        let ended = tokio::time::timeout(Duration::from_secs(10), conn).await;
        assert!(
            ended.is_ok(),
            "an idle HTTP/2 connection still open after 10 s"
        );
    }

    /// A connection over the per-peer cap is closed right after accept,
    /// before its handshake, and counted; a place freed can be taken again.
    #[tokio::test]
    async fn connections_over_the_per_peer_cap_are_closed_at_accept_and_counted() {
        let limits = ConnLimits {
            max_connections_per_peer: 2,
            first_request_timeout: Duration::from_secs(60),
            ..ConnLimits::default()
        };
        let (addr, client, metrics) = holding_listener(limits).await;
        let client = offering(&client, b"http/1.1");
        let tls = || {
            let client = client.clone();
            async move {
                let tcp = TcpStream::connect(addr).await?;
                let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
                tokio_rustls::TlsConnector::from(client)
                    .connect(name, tcp)
                    .await
            }
        };
        let mut held = vec![tls().await.expect("first"), tls().await.expect("second")];
        assert!(tls().await.is_err(), "a third got through");
        let refused = |reason| {
            metrics
                .connections_refused
                .get_or_create(&ConnRefusalLabels {
                    listener: "test",
                    reason,
                })
                .get()
        };
        assert_eq!(refused("max_connections_per_peer"), 1);
        assert_eq!(refused("max_connections"), 0);
        drop(held.pop());
        let again = tokio::time::timeout(Duration::from_secs(10), async {
            loop {
                if let Ok(t) = tls().await {
                    return t;
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
        .await;
        assert!(again.is_ok(), "no connection accepted after one closed");
    }

    /// An HTTP/2 connection to `addr`, as a request sender.
    async fn h2(
        addr: SocketAddr,
        client: Arc<rustls::ClientConfig>,
    ) -> hyper::client::conn::http2::SendRequest<http_body_util::Empty<Bytes>> {
        let io = connect(addr, client).await;
        let (sender, conn) =
            hyper::client::conn::http2::handshake(TokioExecutor::new(), TokioIo::new(io))
                .await
                .unwrap();
        tokio::spawn(conn);
        sender
    }

    async fn hold(
        sender: &mut hyper::client::conn::http2::SendRequest<http_body_util::Empty<Bytes>>,
    ) -> http::Response<hyper::body::Incoming> {
        let req = http::Request::get("https://localhost/hold")
            .body(http_body_util::Empty::<Bytes>::new())
            .unwrap();
        tokio::time::timeout(Duration::from_secs(10), sender.send_request(req))
            .await
            .expect("an answer head within 10 s")
            .unwrap()
    }

    fn refused_by(
        resp: &http::Response<hyper::body::Incoming>,
    ) -> (u16, Option<&str>, Option<&str>, bool) {
        let h = resp.headers();
        (
            resp.status().as_u16(),
            h.get("x-kruntimes-refused-by")
                .and_then(|v| v.to_str().ok()),
            h.get("retry-after").and_then(|v| v.to_str().ok()),
            http_body::Body::is_end_stream(resp.body()),
        )
    }

    fn refusals(metrics: &Metrics, reason: &'static str) -> u64 {
        metrics
            .requests_refused
            .get_or_create(&RequestRefusalLabels {
                listener: "test",
                reason,
            })
            .get()
    }

    fn open_connections(metrics: &Metrics) -> i64 {
        metrics
            .connections_open
            .get_or_create(&ListenerLabels { listener: "test" })
            .get()
    }

    fn open_requests(metrics: &Metrics) -> i64 {
        metrics
            .requests_open
            .get_or_create(&ListenerLabels { listener: "test" })
            .get()
    }

    /// Item 2 of issue 28: HTTP/2 multiplies the connection cap by the
    /// streams per connection (4,096 × 100 held answers took 806 MiB). The
    /// listener counts open requests across its connections: past the cap a
    /// request is answered 503 with Retry-After and no body (its stream ends
    /// with the head, so a shut window cannot hold it), and counted.
    #[tokio::test]
    async fn open_requests_are_capped_per_listener_across_connections() {
        let limits = ConnLimits {
            max_open_requests: 3,
            max_open_requests_per_peer: 100,
            ..ConnLimits::default()
        };
        let (addr, client, metrics) = holding_listener(limits).await;
        let mut one = h2(addr, client.clone()).await;
        let mut two = h2(addr, client.clone()).await;
        let a = hold(&mut one).await;
        let b = hold(&mut one).await;
        let c = hold(&mut two).await;
        for r in [&a, &b, &c] {
            assert_eq!(r.status(), 200);
        }
        assert_eq!(open_requests(&metrics), 3);
        let refused = hold(&mut two).await;
        assert_eq!(
            refused_by(&refused),
            (503, Some("max-open-requests"), Some("1"), true)
        );
        assert_eq!(refusals(&metrics, "max_open_requests"), 1);
        // A third connection is refused the same: the cap is the listener's.
        let mut three = h2(addr, client.clone()).await;
        assert_eq!(hold(&mut three).await.status(), 503);
        assert_eq!(refusals(&metrics, "max_open_requests"), 2);
        // A request that ends gives its place back.
        drop(a);
        tokio::time::timeout(Duration::from_secs(10), async {
            while open_requests(&metrics) != 2 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the dropped answer's place given back");
        assert_eq!(hold(&mut three).await.status(), 200);
        assert_eq!(refusals(&metrics, "max_open_requests_per_peer"), 0);
    }

    /// One peer address holds at most its share of the listener's open
    /// requests, on however many connections.
    #[tokio::test]
    async fn open_requests_are_capped_per_peer_address() {
        let limits = ConnLimits {
            max_open_requests: 100,
            max_open_requests_per_peer: 2,
            ..ConnLimits::default()
        };
        let (addr, client, metrics) = holding_listener(limits).await;
        let mut one = h2(addr, client.clone()).await;
        let mut two = h2(addr, client.clone()).await;
        let a = hold(&mut one).await;
        let _b = hold(&mut two).await;
        assert_eq!(a.status(), 200);
        let refused = hold(&mut one).await;
        assert_eq!(
            refused_by(&refused),
            (503, Some("max-open-requests-per-peer"), Some("1"), true)
        );
        assert_eq!(hold(&mut two).await.status(), 503);
        assert_eq!(refusals(&metrics, "max_open_requests_per_peer"), 2);
        assert_eq!(refusals(&metrics, "max_open_requests"), 0);
        assert_eq!(open_requests(&metrics), 2);
        // A connection that closes gives back its requests' places.
        drop((one, a));
        tokio::time::timeout(Duration::from_secs(10), async {
            while open_requests(&metrics) != 1 {
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        })
        .await
        .expect("the closed connection's place given back");
        assert_eq!(hold(&mut two).await.status(), 200);
    }

    #[test]
    fn gate_counts_per_listener_and_per_peer() {
        let gate = ConnGate::new(3, 2, 0);
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.0.2".parse().unwrap();
        let a1 = gate.admit(a).unwrap();
        let _a2 = gate.admit(a).unwrap();
        assert_eq!(gate.admit(a).unwrap_err(), Refusal::Peer);
        let _b1 = gate.admit(b).unwrap();
        assert_eq!(gate.admit(b).unwrap_err(), Refusal::Listener);
        drop(a1);
        assert_eq!(gate.open(), 2);
        let _b2 = gate.admit(b).unwrap();
        assert_eq!(gate.admit(a).unwrap_err(), Refusal::Listener);
    }

    /// Addresses that each fill their own cap leave the reserve (a
    /// quarter) to addresses holding a sixteenth of theirs or fewer, for
    /// connections and for open requests alike.
    #[test]
    fn heavy_addresses_leave_the_reserve_to_light_ones() {
        let gate = ConnGate::new(64, 32, 25);
        let heavy: Vec<IpAddr> = (1..=3)
            .map(|i| format!("10.0.0.{i}").parse().unwrap())
            .collect();
        let mut held = Vec::new();
        for a in &heavy {
            while let Ok(p) = gate.admit(*a) {
                held.push(p);
            }
        }
        // 50 of 64: the first address 32, the second 16, the third the two
        // a light address may take from the reserve.
        assert_eq!(gate.open(), 50);
        assert_eq!(gate.admit(heavy[1]).unwrap_err(), Refusal::Reserve);
        let light: IpAddr = "10.0.1.1".parse().unwrap();
        let _l1 = gate.admit(light).unwrap();
        let _l2 = gate.admit(light).unwrap();
        assert_eq!(gate.admit(light).unwrap_err(), Refusal::Reserve);
        assert_eq!(gate.open(), 52);

        let caps = Arc::new(RequestCaps {
            open: Gauge::default(),
            max: 64,
            max_per_peer: 32,
            reserve: Reserve::share(64, 32, 25),
            refused_listener: Counter::default(),
            refused_peer: Counter::default(),
            refused_reserve: Counter::default(),
        });
        let peer = |_| RequestSlots {
            caps: caps.clone(),
            of_peer: Arc::default(),
        };
        let heavy: Vec<RequestSlots> = (0..3).map(peer).collect();
        let mut taken = 0;
        for p in &heavy {
            while p.take().is_ok() {
                taken += 1;
            }
        }
        assert_eq!(taken, 50);
        assert_eq!(heavy[1].take(), Err(Crowded::Reserve));
        let light = peer(0);
        assert_eq!(light.take(), Ok(()));
        assert_eq!(light.take(), Ok(()));
        assert_eq!(light.take(), Err(Crowded::Reserve));
        assert_eq!(caps.open.get(), 52);
        assert!(caps.refused_reserve.get() >= 3);
        heavy[0].give_back();
        assert_eq!(caps.open.get(), 51);
    }

    /// A body of known frames that tells its exact size and its end.
    struct Frames(std::collections::VecDeque<http_body::Frame<Bytes>>);

    impl http_body::Body for Frames {
        type Data = Bytes;
        type Error = std::convert::Infallible;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<http_body::Frame<Bytes>, Self::Error>>> {
            Poll::Ready(self.0.pop_front().map(Ok))
        }

        fn is_end_stream(&self) -> bool {
            self.0.is_empty()
        }

        fn size_hint(&self) -> http_body::SizeHint {
            let n = self.0.iter().filter_map(|f| f.data_ref()).map(|d| d.len());
            http_body::SizeHint::with_exact(n.sum::<usize>() as u64)
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig {
            cases: 128,
            failure_persistence: None,
            ..Default::default()
        })]

        /// For any data frames (empty, smaller or larger than a part) and
        /// trailers: the same bytes come out in parts of at most
        /// RESPONSE_PART, the size hint stays exact, `is_end_stream` is true
        /// only when nothing more comes, and the connection's list of
        /// unsent bodies holds this one exactly while a part is handed over
        /// and not yet asked past.
        #[test]
        fn a_tracked_body_hands_over_the_same_bytes_in_parts(
            sizes in proptest::collection::vec(0usize..70_000, 0..8),
            trailers in proptest::bool::ANY,
            seed in proptest::num::u8::ANY,
        ) {
            use http_body::Body as _;
            let mut all = Vec::new();
            let mut inner = std::collections::VecDeque::new();
            let mut expected: Vec<Option<usize>> = Vec::new();
            for (i, &n) in sizes.iter().enumerate() {
                let data: Vec<u8> = (0..n).map(|j| (j as u8) ^ (i as u8) ^ seed).collect();
                all.extend_from_slice(&data);
                inner.push_back(http_body::Frame::data(Bytes::from(data)));
                if n == 0 {
                    expected.push(Some(0));
                }
                let mut left = n;
                while left > 0 {
                    let part = left.min(RESPONSE_PART);
                    expected.push(Some(part));
                    left -= part;
                }
            }
            if trailers {
                let mut map = http::HeaderMap::new();
                map.insert("grpc-status", http::HeaderValue::from_static("0"));
                inner.push_back(http_body::Frame::trailers(map));
                expected.push(None);
            }
            let activity = Arc::new(Activity {
                state: Mutex::new(ActivityState {
                    in_flight: 0,
                    started: 0,
                    idle_since: Instant::now(),
                    unsent: Vec::new(),
                    bodies: 0,
                }),
                slots: RequestSlots::unbounded(),
                upgraded: AtomicBool::new(false),
            });
            let mut body = TrackedBody::new(
                axum::body::Body::new(Frames(inner)),
                InFlight::start(&activity).expect("no cap"),
            );
            let unsent = || activity.lock().unsent.len();
            proptest::prop_assert_eq!(unsent(), 1, "a body with its head out waits to be sent");
            let mut cx = Context::from_waker(std::task::Waker::noop());
            let (mut out, mut left) = (Vec::new(), all.len() as u64);
            for (i, want) in expected.iter().enumerate() {
                proptest::prop_assert_eq!(body.size_hint().exact(), Some(left));
                proptest::prop_assert!(!body.is_end_stream(), "ended before part {}", i);
                let frame = match Pin::new(&mut body).poll_frame(&mut cx) {
                    Poll::Ready(Some(Ok(f))) => f,
                    other => return Err(proptest::test_runner::TestCaseError::fail(
                        format!("part {i}: {other:?}"),
                    )),
                };
                proptest::prop_assert_eq!(unsent(), 1);
                match (want, frame.into_data()) {
                    (Some(n), Ok(data)) => {
                        proptest::prop_assert_eq!(data.len(), *n);
                        left -= data.len() as u64;
                        out.extend_from_slice(&data);
                    }
                    (None, Err(f)) => proptest::prop_assert!(f.is_trailers()),
                    (want, got) => return Err(proptest::test_runner::TestCaseError::fail(
                        format!("part {i}: wanted {want:?}, got {got:?}"),
                    )),
                }
            }
            proptest::prop_assert!(body.is_end_stream());
            proptest::prop_assert_eq!(body.size_hint().exact(), Some(0));
            let end = Pin::new(&mut body).poll_frame(&mut cx);
            proptest::prop_assert!(matches!(end, Poll::Ready(None)), "{:?}", end);
            proptest::prop_assert_eq!(out, all);
            proptest::prop_assert_eq!(unsent(), 0, "an ended body no longer waits");
            proptest::prop_assert_eq!(activity.lock().in_flight, 0, "an ended body ends its request");
            drop(body);
            proptest::prop_assert_eq!(unsent(), 0);
        }
    }
}
