//! One HTTP/2 connection of the accept loop ([`serve_connection`] with
//! [`Versions::Http2Only`]: hyper's server with the connection's own stream
//! executor, [`WithStreams`]) over an in-memory pipe, driven by a client
//! program decoded from any bytes. The fuzz target `http2_connection` and
//! the seeded test `any_http2_program_ends_its_connection_and_gives_every_place_back`
//! run it; it is public only for the fuzz target.
//!
//! The program opens streams to handlers that answer at once, after a
//! timer, after reading the body, with a body larger than the flow-control
//! window, on the router or on the direct path; sends bodies, resets,
//! window updates, settings and pings; stops the listener; and mixes in
//! frames of any kind and bytes that are no frame. Whatever it sends:
//!
//! - the connection ends once the client has closed and read everything,
//!   or by the server's own deadlines when the client stays, its request
//!   places are all given back, and no handler is left running (a stream
//!   the executor lost would hold them);
//! - what the server wrote is a sequence of well-formed frames;
//! - for a program of well-formed requests only, every request the client
//!   ended is answered.
//!
//! Run it on a runtime whose clock is paused (`start_paused`): waits then
//! cost no wall time, and a connection that does not end is seen at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use axum::Router;
use axum::body::Body;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::sync::watch;

use super::{
    ConnLimits, DirectAnswer, FastConn, FastPath, PeerCertificates, RequestSlots, Versions,
    serve_connection,
};
use crate::h1::RequestHead;

/// Most requests (streams) a program opens.
const MAX_STREAMS: u32 = 16;
/// Most steps a program has.
const MAX_STEPS: usize = 32;
/// How long the client waits for answers, and then for the end (on the
/// paused clock).
const WAIT: Duration = Duration::from_secs(10);
/// How long a client that does not close waits for the server to end the
/// connection: past the default keep-alive (30 s and 10 s), send (60 s)
/// and idle (90 s) deadlines.
const STAY: Duration = Duration::from_secs(200);

/// The handlers a request can reach.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    /// The router answers at once.
    Now,
    /// The router reads the body, then answers its length.
    Echo,
    /// The router answers after a timer.
    Wait,
    /// The router answers 80 KB in pieces: more than a stream's initial
    /// window.
    Large,
    /// The direct path answers at once.
    Direct,
    /// The direct path answers after a timer, its body in pieces.
    DirectWait,
    /// The direct path reads the body, then answers.
    DirectEcho,
}

const ROUTES: [Route; 7] = [
    Route::Now,
    Route::Echo,
    Route::Wait,
    Route::Large,
    Route::Direct,
    Route::DirectWait,
    Route::DirectEcho,
];

impl Route {
    fn path(self) -> &'static str {
        match self {
            Self::Now => "/",
            Self::Echo => "/echo",
            Self::Wait => "/wait",
            Self::Large => "/large",
            Self::Direct => "/direct",
            Self::DirectWait => "/direct-wait",
            Self::DirectEcho => "/direct-echo",
        }
    }
}

/// What the client writes, in order.
#[derive(Debug)]
enum Step {
    /// Bytes (one or more frames, or anything).
    Write(Vec<u8>),
    /// The listener stops (a graceful shutdown of its connections).
    Stop,
}

/// A client program: its steps, how its bytes are cut, how it reads.
///
/// Its input: a mode byte (bit 0: the client reads slowly; bit 1: a small
/// pipe; bit 2: well-formed steps only; bit 3: the client does not close; bit 4: it answers pings), a count of piece sizes (1 to 4)
/// and that many 16-bit sizes, then up to 32 steps, each a kind byte and
/// an argument byte, some with more bytes after.
#[derive(Debug)]
pub struct Program {
    steps: Vec<Step>,
    /// Sizes the bytes are written in, in turn.
    pieces: Vec<usize>,
    /// The client reads a few bytes at a time.
    slow_reader: bool,
    /// The pipe holds 1 KiB each way (64 KiB otherwise).
    small_pipe: bool,
    /// The client does not close: it reads, and the server must end the
    /// connection itself (its keep-alive, idle and send deadlines).
    stays: bool,
    /// The client answers the server's pings (then only the idle and send
    /// deadlines end a connection it does not close).
    pongs: bool,
    /// Streams the client ended and must see answered when `clean`.
    ended: Vec<u32>,
    /// Only well-formed requests, bodies, window updates, settings and
    /// pings: every stream the client ended is answered.
    clean: bool,
}

impl Program {
    /// Whether only well-formed requests, bodies, window updates, settings
    /// and pings are sent (then every ended stream must be answered).
    pub fn is_clean(&self) -> bool {
        self.clean
    }

    /// How many answers [`run`] checks for.
    pub fn answered_streams(&self) -> usize {
        if self.clean { self.ended.len() } else { 0 }
    }
}

/// Reads the input as a program; any bytes make one.
pub fn decode(data: &[u8]) -> Program {
    let mut r = Reader(data);
    let mode = r.byte();
    // Bit 2: well-formed steps only (requests, bodies, window updates,
    // settings, pings), so that answers are checked more often.
    let strict = mode & 4 == 4;
    let kinds = if strict { 10 } else { 16 };
    let pieces: Vec<usize> = (0..r.byte() % 4 + 1)
        .map(|_| usize::from(r.u16()) % 4096 + 1)
        .collect();
    let mut p = Program {
        steps: Vec::new(),
        pieces,
        slow_reader: mode & 1 == 1,
        small_pipe: mode & 2 == 2,
        stays: mode & 8 == 8,
        pongs: mode & 16 == 16,
        ended: Vec::new(),
        clean: true,
    };
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    frame(&mut out, 4, 0, 0, &[]);
    // Streams opened (ids 1, 3, 5...) and whether the client ended each.
    let mut open: Vec<(u32, bool)> = Vec::new();
    for _ in 0..MAX_STEPS {
        if r.0.is_empty() {
            break;
        }
        let (op, a) = (r.byte(), r.byte());
        let pick = |open: &[(u32, bool)]| open.get(usize::from(a) % open.len().max(1)).copied();
        match op % kinds {
            // A request on the next stream; its headers end it or not.
            0..=4 => {
                let id = 2 * open.len() as u32 + 1;
                if id > 2 * MAX_STREAMS {
                    continue;
                }
                let route = ROUTES[usize::from(a & 0x7f) % ROUTES.len()];
                let end = a & 0x80 != 0;
                frame(&mut out, 1, 0x4 | u8::from(end), id, &request(route));
                open.push((id, end));
            }
            // Some of a stream's body, which may end it.
            5 | 6 => {
                let Some((id, ended)) = pick(&open) else {
                    continue;
                };
                let end = a & 0x80 != 0;
                let len = usize::from(r.byte()) * 64;
                frame(&mut out, 0, u8::from(end), id, &vec![0x2a; len]);
                if ended {
                    // Data on a stream the client ended: its error.
                    p.clean = false;
                }
                if end && let Some(s) = open.iter_mut().find(|s| s.0 == id) {
                    s.1 = true;
                }
            }
            // A window update, for the connection or a stream.
            7 => {
                let id = if a & 1 == 0 {
                    0
                } else {
                    pick(&open).map_or(0, |s| s.0)
                };
                let inc = u32::from(r.u16()) << if strict { 0 } else { a >> 4 };
                // Zero, or enough to overflow a window: the peer's error.
                if inc == 0 || inc > 0xffff {
                    p.clean = false;
                }
                frame(&mut out, 8, 0, id, &(inc & 0x7fff_ffff).to_be_bytes());
            }
            // Settings: the initial window (zero holds every answer body).
            8 => {
                let window = u32::from(r.u16()) << (a % if strict { 9 } else { 16 });
                // Enough for a window update to overflow a stream's window.
                if window > 1 << 24 {
                    p.clean = false;
                }
                let mut s = vec![0, 4];
                s.extend_from_slice(&window.to_be_bytes());
                frame(&mut out, 4, 0, 0, &s);
            }
            // A ping, or an acknowledgement of one never sent.
            9 => frame(&mut out, 6, a & 1, 0, &[a; 8]),
            // The stream's reset.
            10 => {
                let Some((id, _)) = pick(&open) else {
                    continue;
                };
                frame(&mut out, 3, 0, id, &u32::from(a >> 4).to_be_bytes());
                p.clean = false;
            }
            // The client goes away.
            11 => {
                let mut g = (2 * open.len() as u32).to_be_bytes().to_vec();
                g.extend_from_slice(&u32::from(a).to_be_bytes());
                frame(&mut out, 7, 0, 0, &g);
                p.clean = false;
            }
            // The listener stops.
            12 => {
                p.steps.push(Step::Write(std::mem::take(&mut out)));
                p.steps.push(Step::Stop);
                p.clean = false;
            }
            // A frame of any kind, flags, stream and payload.
            13 => {
                let (flags, stream) = (r.byte(), u32::from(r.byte() % 16));
                let payload = r.take(usize::from(a % 64));
                frame(&mut out, a % 11, flags, stream, payload);
                p.clean = false;
            }
            // Bytes that are no frame.
            14 => {
                out.extend_from_slice(r.take(usize::from(a % 32)));
                p.clean = false;
            }
            // A bit flipped in what was written so far, past the preface.
            _ => {
                let at = 24 + usize::from(r.u16());
                if let Some(b) = out.get_mut(at) {
                    *b ^= 1 << (a % 8);
                    p.clean = false;
                }
            }
        }
    }
    p.steps.push(Step::Write(out));
    p.ended = open.iter().filter(|s| s.1).map(|s| s.0).collect();
    p
}

/// The rest of the input; missing bytes read as zero.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn byte(&mut self) -> u8 {
        let Some((&b, rest)) = self.0.split_first() else {
            return 0;
        };
        self.0 = rest;
        b
    }

    fn u16(&mut self) -> u16 {
        u16::from_le_bytes([self.byte(), self.byte()])
    }

    fn take(&mut self, n: usize) -> &'a [u8] {
        let (taken, rest) = self.0.split_at(n.min(self.0.len()));
        self.0 = rest;
        taken
    }
}

/// Appends a frame: length, type, flags, stream, payload.
fn frame(out: &mut Vec<u8>, kind: u8, flags: u8, stream: u32, payload: &[u8]) {
    out.extend_from_slice(&(payload.len() as u32).to_be_bytes()[1..]);
    out.extend_from_slice(&[kind, flags]);
    out.extend_from_slice(&(stream & 0x7fff_ffff).to_be_bytes());
    out.extend_from_slice(payload);
}

/// A request's header block (HPACK, static table and literals only).
fn request(route: Route) -> Vec<u8> {
    let path = route.path().as_bytes();
    // :method POST or GET, :scheme https, :path (literal), :authority x.
    let post = matches!(route, Route::Echo | Route::DirectEcho);
    let mut b = vec![if post { 0x83 } else { 0x82 }, 0x87, 0x04, path.len() as u8];
    b.extend_from_slice(path);
    b.extend_from_slice(&[0x01, 0x01, b'x']);
    b
}

/// Counts handlers under way: each holds one of these while it runs.
#[derive(Clone, Default)]
struct Running(Arc<AtomicUsize>);

struct RunningGuard(Arc<AtomicUsize>);

impl Running {
    fn enter(&self) -> RunningGuard {
        self.0.fetch_add(1, Ordering::SeqCst);
        RunningGuard(self.0.clone())
    }
}

impl Drop for RunningGuard {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A body that holds a [`RunningGuard`] until it is dropped.
fn guarded(body: Body, guard: RunningGuard) -> Body {
    use futures::StreamExt;
    Body::from_stream(body.into_data_stream().map(move |piece| {
        let _ = &guard;
        piece
    }))
}

/// A body of `n` pieces of `size` bytes, each after a yield.
fn pieces(n: usize, size: usize) -> Body {
    Body::from_stream(futures::stream::unfold(n, move |left| async move {
        if left == 0 {
            return None;
        }
        tokio::task::yield_now().await;
        Some((
            Ok::<_, std::convert::Infallible>(bytes::Bytes::from(vec![b'x'; size])),
            left - 1,
        ))
    }))
}

/// Reads a request body within a bound, as the Console's handlers do
/// (a body that never ends would hold its stream, and so its connection).
async fn read_all(body: Body) -> Option<usize> {
    let read = axum::body::to_bytes(body, usize::MAX);
    match tokio::time::timeout(Duration::from_secs(30), read).await {
        Ok(Ok(b)) => Some(b.len()),
        _ => None,
    }
}

fn router(running: &Running) -> Router {
    let (now, echo, wait, large) = (
        running.clone(),
        running.clone(),
        running.clone(),
        running.clone(),
    );
    Router::new()
        .route(
            "/",
            axum::routing::any(move || async move {
                let _g = now.enter();
                "now"
            }),
        )
        .route(
            "/echo",
            axum::routing::any(move |body: Body| async move {
                let _g = echo.enter();
                // Its length, or that it was not read whole.
                read_all(body)
                    .await
                    .map_or_else(|| "unread".to_owned(), |n| n.to_string())
            }),
        )
        .route(
            "/wait",
            axum::routing::any(move || async move {
                let _g = wait.enter();
                tokio::time::sleep(Duration::from_millis(1)).await;
                "waited"
            }),
        )
        .route(
            "/large",
            axum::routing::any(move || async move {
                let g = large.enter();
                guarded(pieces(4, 20_000), g)
            }),
        )
}

/// Serves `/direct...` requests on the direct path.
struct Direct(Running);

impl FastPath for Direct {
    fn claims(&self, _: &RequestHead, _: &http::HeaderMap) -> bool {
        false
    }

    fn serve<'a>(
        &'a self,
        _: RequestHead,
        _: &'a mut FastConn,
    ) -> std::pin::Pin<Box<dyn Future<Output = bool> + Send + 'a>> {
        Box::pin(async { false })
    }

    fn shortest_timeout(&self) -> Duration {
        Duration::from_secs(5)
    }

    fn direct(&self, req: http::Request<Body>) -> Result<DirectAnswer, http::Request<Body>> {
        let route = match req.uri().path() {
            "/direct" => Route::Direct,
            "/direct-wait" => Route::DirectWait,
            "/direct-echo" => Route::DirectEcho,
            _ => return Err(req),
        };
        let g = self.0.enter();
        Ok(DirectAnswer(Box::pin(async move {
            let body = match route {
                Route::DirectWait => {
                    tokio::time::sleep(Duration::from_millis(1)).await;
                    pieces(3, 100)
                }
                Route::DirectEcho => Body::from(
                    read_all(req.into_body())
                        .await
                        .map_or_else(|| "unread".to_owned(), |n| n.to_string()),
                ),
                _ => Body::from("direct"),
            };
            http::Response::new(guarded(body, g))
        })))
    }
}

/// What the server wrote, read into frames once, as it comes.
#[derive(Default)]
struct Written {
    bytes: Vec<u8>,
    /// Bytes read into `frames` so far.
    read: usize,
    /// The frames, as (type, flags, stream).
    frames: Vec<(u8, u8, u32)>,
    /// The first way they are not a sequence of well-formed frames.
    fault: Option<String>,
}

impl Written {
    /// Takes more of what the server wrote; each ping (not an
    /// acknowledgement) goes to `pings`. A frame cut short at the end is
    /// left for more (the connection can end in the middle of a write).
    fn take(&mut self, more: &[u8], pings: &tokio::sync::mpsc::UnboundedSender<Vec<u8>>) {
        self.bytes.extend_from_slice(more);
        while self.fault.is_none()
            && let Some(head) = self.bytes.get(self.read..self.read + 9)
        {
            let len = u32::from_be_bytes([0, head[0], head[1], head[2]]) as usize;
            let (kind, flags) = (head[3], head[4]);
            let stream = u32::from_be_bytes([head[5], head[6], head[7], head[8]]);
            // The client never raises SETTINGS_MAX_FRAME_SIZE.
            if len > 16_384 {
                self.fault = Some(format!("a frame of {len} bytes after {:?}", self.frames));
            } else if self.frames.is_empty() && (kind, stream) != (4, 0) {
                self.fault = Some(format!(
                    "the server began with frame type {kind} on {stream}"
                ));
            }
            let Some(payload) = self.bytes.get(self.read + 9..self.read + 9 + len) else {
                break;
            };
            if kind == 6 && flags & 1 == 0 {
                let _ = pings.send(payload.to_vec());
            }
            self.frames.push((kind, flags, stream));
            self.read += 9 + len;
        }
    }

    /// Whether the server answered (sent headers on) every stream in `ended`.
    fn answered(&self, ended: &[u32]) -> bool {
        ended.iter().all(|id| {
            self.frames
                .iter()
                .any(|&(kind, _, s)| kind == 1 && s == *id)
        })
    }
}

/// Runs the program against one connection; `Err` tells which property
/// broke.
pub async fn run(program: &Program) -> Result<(), String> {
    // Fewer places than the streams a program opens: some are refused 503.
    let slots = RequestSlots::at_most(4);
    let open = slots.caps.open.clone();
    let running = Running::default();
    let (stop_tx, stop) = watch::channel(false);
    let pipe = if program.small_pipe {
        1 << 10
    } else {
        64 << 10
    };
    let (server, client) = tokio::io::duplex(pipe);
    let served = tokio::spawn(serve_connection(
        server,
        PeerCertificates::default(),
        "192.0.2.7:4000".parse().expect("an address"),
        router(&running),
        ConnLimits::default(),
        slots,
        stop,
        Versions::Http2Only,
        Some(Arc::new(Direct(running.clone()))),
        None,
    ));
    let (mut rd, mut wr) = tokio::io::split(client);
    // The client reads all the time, so the server is never held by it;
    // the server's pings go to the writer to be answered.
    let written = Arc::new(std::sync::Mutex::new(Written::default()));
    let more = Arc::new(tokio::sync::Notify::new());
    let (ping_tx, mut pings) = tokio::sync::mpsc::unbounded_channel::<Vec<u8>>();
    let slow = program.slow_reader;
    let reader = tokio::spawn({
        let (written, more) = (written.clone(), more.clone());
        async move {
            let mut buf = vec![0u8; 16 << 10];
            let mut turn = 0usize;
            loop {
                turn += 1;
                let want = if slow { turn % 64 + 1 } else { buf.len() };
                let n = match rd.read(&mut buf[..want]).await {
                    Ok(0) | Err(_) => return,
                    Ok(n) => n,
                };
                written
                    .lock()
                    .expect("not poisoned")
                    .take(&buf[..n], &ping_tx);
                more.notify_one();
                if slow {
                    tokio::task::yield_now().await;
                }
            }
        }
    });
    let mut cut = program.pieces.iter().cycle();
    'steps: for step in &program.steps {
        match step {
            Step::Write(bytes) => {
                let mut rest = &bytes[..];
                while !rest.is_empty() {
                    let n = (*cut.next().expect("a piece size")).min(rest.len());
                    // A write the server no longer reads is bounded too.
                    match tokio::time::timeout(WAIT, wr.write_all(&rest[..n])).await {
                        Ok(Ok(())) => {}
                        _ => break 'steps,
                    }
                    rest = &rest[n..];
                    // The connection reads each piece as it comes.
                    tokio::task::yield_now().await;
                }
            }
            Step::Stop => {
                let _ = stop_tx.send(true);
            }
        }
    }
    if program.clean {
        // Every request the client ended is answered before it closes.
        let waited = tokio::time::timeout(WAIT, async {
            while !written
                .lock()
                .expect("not poisoned")
                .answered(&program.ended)
            {
                more.notified().await;
            }
        })
        .await;
        if waited.is_err() {
            let w = written.lock().expect("not poisoned");
            return Err(format!(
                "streams {:?} not all answered within {WAIT:?}; the server wrote {:?} {:?}",
                program.ended, w.frames, w.fault
            ));
        }
    }
    let wait = if program.stays {
        STAY
    } else {
        let _ = wr.shutdown().await;
        WAIT
    };
    let end = async {
        let _ = reader.await;
        served.await
    };
    let pongs = program.pongs;
    let ended = tokio::time::timeout(wait, async {
        tokio::pin!(end);
        loop {
            tokio::select! {
                ended = &mut end => return ended,
                Some(ping) = pings.recv(), if pongs => {
                    let mut ack = Vec::new();
                    frame(&mut ack, 6, 1, 0, &ping);
                    let _ = wr.write_all(&ack).await;
                }
            }
        }
    })
    .await;
    match ended {
        Ok(Ok(())) => {}
        Ok(Err(e)) => return Err(format!("the connection's task failed: {e}")),
        Err(_) => return Err(format!("the connection did not end within {wait:?}")),
    }
    if open.get() != 0 {
        return Err(format!("{} request places kept", open.get()));
    }
    let left = running.0.load(Ordering::SeqCst);
    if left != 0 {
        return Err(format!("{left} handlers still running"));
    }
    match written.lock().expect("not poisoned").fault.take() {
        Some(fault) => Err(fault),
        None => Ok(()),
    }
}
