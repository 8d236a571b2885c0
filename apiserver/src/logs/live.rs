//! A running Run's live output, read from runtimed's status endpoint.
//!
//! The engine's runtimed writes a Run's records to its log only once the
//! Run has ended. Until then its output exists only in runtimed's gRPC
//! `Runtime.Status` answer (the whole of each stream so far), served in
//! plain HTTP/2 on port 9093 of the Runtime Pod. The Run-log API reads it
//! with the server's own identity, from the address of the very Pod it
//! checked (`status.podIP`), and turns each new complete line into a record
//! of the usual shape, `source: "status"`, addressed by a *live cursor*:
//!
//! `L<attempt>-<stdout lines>-<stderr lines>-<o|e>`: how many lines of each
//! stream of that attempt were delivered up to and including the record,
//! and the record's own stream (`o` stdout, `e` stderr).
//!
//! Lines are split as runtimed splits a stream when it writes the records
//! (one trailing newline dropped, split on `\n`, empty lines skipped, a
//! trailing `\r` dropped), so the `n`-th live line of a stream is the `n`-th
//! record runtimed writes for it: once written records appear, the first
//! `stdout lines` and `stderr lines` of them are the ones already delivered,
//! and are skipped (the hand-over, without a gap or a duplicate).

use std::collections::VecDeque;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::{TokioExecutor, TokioIo};
use kruntimes_core::runtimed::{self, StatusRequest, StatusResponse};

use super::MAX_LINE_BYTES;
use super::filter::{LogRecord, StreamFilter};
use super::tail::{Cut, TailWindow};

/// Default of `--live-output-poll-interval`.
pub const DEFAULT_POLL_INTERVAL: Duration = Duration::from_millis(500);
/// Default of `--live-output-timeout`.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(3);
/// Default of `--live-output-max-bytes`: both streams at the runtime's 1 MiB
/// bound each, with room to spare.
pub const DEFAULT_MAX_BYTES: usize = 4 << 20;
/// `source` of a record read from runtimed's status endpoint.
pub const SOURCE_STATUS: &str = "status";

/// How the Run-log API reaches runtimed's status endpoint.
#[derive(Clone, Debug)]
pub struct LiveConfig {
    /// Off: running Runs show only what runtimed wrote to its log.
    pub enabled: bool,
    /// The status endpoint's port on the Runtime Pod.
    pub port: u16,
    /// How often a follow asks for new output.
    pub poll_interval: Duration,
    /// Bounds one call: connecting, the request and the whole answer.
    pub timeout: Duration,
    /// The largest answer read.
    pub max_bytes: usize,
    /// Accept loopback Pod addresses (development environments whose Pods
    /// are simulated on this host); never in a cluster.
    pub allow_loopback: bool,
}

impl Default for LiveConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            port: runtimed::DEFAULT_STATUS_PORT,
            poll_interval: DEFAULT_POLL_INTERVAL,
            timeout: DEFAULT_TIMEOUT,
            max_bytes: DEFAULT_MAX_BYTES,
            allow_loopback: false,
        }
    }
}

/// Why live output could not be read.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum LiveError {
    /// The Pod has no IP address yet.
    #[error("the Pod has no address yet")]
    NoAddress,
    /// The Pod's address is not one the Console reads from.
    #[error("the Pod's address {0:?} is not one the status endpoint is read from")]
    RefusedAddress(String),
    /// No answer within the timeout.
    #[error("runtimed's status endpoint at {0} did not answer within {1:?}")]
    Timeout(SocketAddr, Duration),
    /// The connection failed.
    #[error("runtimed's status endpoint at {0} is unreachable: {1}")]
    Unreachable(SocketAddr, String),
    /// An answer that is not the status message.
    #[error("runtimed's status endpoint at {0} answered badly: {1}")]
    Protocol(SocketAddr, String),
    /// A gRPC status other than OK.
    #[error("runtimed's status endpoint at {0} answered gRPC status {1}: {2}")]
    Grpc(SocketAddr, u32, String),
}

impl LiveError {
    /// What the error says to a caller of the Run-log API: what went
    /// wrong, without the Pod's address or the transport's own words.
    pub fn public(&self) -> &'static str {
        match self {
            LiveError::NoAddress => "the Runtime Pod has no address yet",
            LiveError::RefusedAddress(_) => {
                "the Runtime Pod's address is not one the Console dials (unspecified, loopback, link-local, multicast or broadcast)"
            }
            LiveError::Timeout(..) => {
                "runtimed's status endpoint did not answer in time (a NetworkPolicy may isolate the Runtime Pod: see the Console's live output settings)"
            }
            LiveError::Unreachable(..) => {
                "runtimed's status endpoint is unreachable (a NetworkPolicy may isolate the Runtime Pod: see the Console's live output settings)"
            }
            LiveError::Protocol(..) => {
                "runtimed's status endpoint answered with something else than a status"
            }
            LiveError::Grpc(..) => "runtimed's status endpoint answered with an error",
        }
    }
}

/// How long a status endpoint that failed is not dialled again by plain
/// reads (a follow's polling backs off on its own).
pub const FAILURE_TTL: Duration = Duration::from_secs(10);
/// Most addresses remembered as failed.
const MAX_FAILURES: usize = 4096;

/// Status endpoints that failed lately: plain reads of running Runs on a
/// Pod the Console cannot reach answer at once instead of each waiting for
/// `--live-output-timeout`.
#[derive(Default)]
pub struct RecentFailures(
    std::sync::Mutex<std::collections::HashMap<SocketAddr, (std::time::Instant, LiveError)>>,
);

impl RecentFailures {
    /// The failure remembered for `addr`, if it is recent.
    pub fn get(&self, addr: SocketAddr) -> Option<LiveError> {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.get(&addr)
            .filter(|(at, _)| at.elapsed() < FAILURE_TTL)
            .map(|(_, e)| e.clone())
    }

    /// Remembers a failure, or forgets one when `result` is not.
    pub fn record(&self, addr: SocketAddr, result: Option<&LiveError>) {
        let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match result {
            None => {
                map.remove(&addr);
            }
            Some(e) => {
                if map.len() >= MAX_FAILURES {
                    map.retain(|_, (at, _)| at.elapsed() < FAILURE_TTL);
                }
                if map.len() < MAX_FAILURES {
                    map.insert(addr, (std::time::Instant::now(), e.clone()));
                }
            }
        }
    }
}

/// The address the status endpoint of a Pod at `ip` is read from, if it
/// is one: never an unspecified, multicast, link-local (cloud metadata) or
/// broadcast address, and loopback only where allowed.
pub fn target(ip: &str, config: &LiveConfig) -> Result<SocketAddr, LiveError> {
    if ip.is_empty() {
        return Err(LiveError::NoAddress);
    }
    let parsed: IpAddr = ip
        .parse()
        .map_err(|_| LiveError::RefusedAddress(ip.to_owned()))?;
    // An IPv4 address written as IPv6 (`::ffff:a.b.c.d`) is judged as IPv4.
    let parsed = match parsed {
        IpAddr::V6(a) => a.to_ipv4_mapped().map_or(parsed, IpAddr::V4),
        v4 => v4,
    };
    let refused = match parsed {
        IpAddr::V4(a) => {
            a.is_unspecified()
                || a.is_multicast()
                || a.is_link_local()
                || a.is_broadcast()
                || (a.is_loopback() && !config.allow_loopback)
        }
        IpAddr::V6(a) => {
            a.is_unspecified()
                || a.is_multicast()
                || a.is_unicast_link_local()
                || (a.is_loopback() && !config.allow_loopback)
        }
    };
    if refused {
        return Err(LiveError::RefusedAddress(ip.to_owned()));
    }
    Ok(SocketAddr::new(parsed, config.port))
}

/// One HTTP/2 connection to a Pod's status endpoint, kept for a follow's
/// polls and made again when it breaks.
pub struct StatusConn {
    addr: SocketAddr,
    config: LiveConfig,
    sender: Option<hyper::client::conn::http2::SendRequest<Full<Bytes>>>,
}

impl StatusConn {
    /// A connection to the status endpoint at `addr`.
    pub fn new(addr: SocketAddr, config: LiveConfig) -> Self {
        Self {
            addr,
            config,
            sender: None,
        }
    }

    /// The execution's status: `None` when runtimed does not know it (not
    /// started yet, or forgotten once its records were written).
    pub async fn status(&mut self, uid: &str) -> Result<Option<StatusResponse>, LiveError> {
        let timeout = self.config.timeout;
        match tokio::time::timeout(timeout, self.call(uid)).await {
            Ok(Err(e)) => {
                self.sender = None;
                Err(e)
            }
            Ok(ok) => ok,
            Err(_) => {
                self.sender = None;
                Err(LiveError::Timeout(self.addr, timeout))
            }
        }
    }

    async fn connect(&mut self) -> Result<(), LiveError> {
        let addr = self.addr;
        let tcp = tokio::net::TcpStream::connect(addr)
            .await
            .map_err(|e| LiveError::Unreachable(addr, e.to_string()))?;
        let _ = tcp.set_nodelay(true);
        let mut builder = hyper::client::conn::http2::Builder::new(TokioExecutor::new());
        // A window as large as the answer may be: one round trip.
        let window = u32::try_from(self.config.max_bytes + 64).unwrap_or(u32::MAX >> 1);
        builder
            .initial_stream_window_size(window.min((1 << 31) - 1))
            .initial_connection_window_size(window.min((1 << 31) - 1))
            .max_header_list_size(16 << 10);
        let (sender, conn) = builder
            .handshake(TokioIo::new(tcp))
            .await
            .map_err(|e| LiveError::Unreachable(addr, e.to_string()))?;
        tokio::spawn(async move {
            if let Err(error) = conn.await {
                tracing::debug!(%error, %addr, "runtimed status connection ended");
            }
        });
        self.sender = Some(sender);
        Ok(())
    }

    async fn call(&mut self, uid: &str) -> Result<Option<StatusResponse>, LiveError> {
        let addr = self.addr;
        if self.sender.as_ref().is_none_or(|s| s.is_closed()) {
            self.connect().await?;
        }
        let Some(sender) = self.sender.as_mut() else {
            return Err(LiveError::Unreachable(addr, "no connection".into()));
        };
        sender
            .ready()
            .await
            .map_err(|e| LiveError::Unreachable(addr, e.to_string()))?;
        let body = runtimed::frame(&StatusRequest { id: uid.to_owned() });
        let req = http::Request::post(format!("http://{addr}{}", runtimed::STATUS_PATH))
            .header(http::header::CONTENT_TYPE, "application/grpc")
            .header(http::header::TE, "trailers")
            .body(Full::new(body))
            .map_err(|e| LiveError::Protocol(addr, e.to_string()))?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| LiveError::Unreachable(addr, e.to_string()))?;
        let (head, mut body) = resp.into_parts();
        if head.status != http::StatusCode::OK {
            return Err(LiveError::Protocol(
                addr,
                format!("HTTP status {}", head.status.as_u16()),
            ));
        }
        // A trailers-only answer carries its gRPC status in the headers.
        let mut grpc = grpc_status(&head.headers);
        let max = self.config.max_bytes + 5;
        let mut data = BytesMut::new();
        while let Some(frame) = body.frame().await {
            let frame = frame.map_err(|e| LiveError::Protocol(addr, e.to_string()))?;
            match frame.into_data() {
                Ok(chunk) => {
                    if data.len() + chunk.len() > max {
                        return Err(LiveError::Protocol(
                            addr,
                            format!(
                                "the answer is over {} bytes (--live-output-max-bytes)",
                                self.config.max_bytes
                            ),
                        ));
                    }
                    data.extend_from_slice(&chunk);
                }
                Err(frame) => {
                    if let Ok(trailers) = frame.into_trailers() {
                        grpc = grpc.or_else(|| grpc_status(&trailers));
                    }
                }
            }
        }
        match grpc {
            Some((runtimed::code::OK, _)) => {}
            Some((runtimed::code::NOT_FOUND, _)) => return Ok(None),
            Some((code, message)) => return Err(LiveError::Grpc(addr, code, message)),
            None => return Err(LiveError::Protocol(addr, "no grpc-status".into())),
        }
        runtimed::unframe::<StatusResponse>(&data, self.config.max_bytes)
            .map(Some)
            .map_err(|e| LiveError::Protocol(addr, e.to_string()))
    }
}

/// `grpc-status` and `grpc-message` of a header block, when it has them.
fn grpc_status(headers: &http::HeaderMap) -> Option<(u32, String)> {
    let code = headers.get("grpc-status")?.to_str().ok()?.parse().ok()?;
    let message = headers
        .get("grpc-message")
        .and_then(|v| v.to_str().ok())
        .map(|m| {
            percent_decode(m)
                .chars()
                .filter(|c| !c.is_control())
                .take(200)
                .collect()
        })
        .unwrap_or_default();
    Some((code, message))
}

fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

/// Counts a call to a status endpoint in `kruntimes_console_log_live_reads_total`.
pub fn count<T>(metrics: &kruntimes_core::metrics::Metrics, result: &Result<Option<T>, LiveError>) {
    let result = match result {
        Ok(Some(_)) => "ok",
        Ok(None) => "not_found",
        Err(_) => "error",
    };
    metrics
        .log_live_reads
        .get_or_create(&kruntimes_core::metrics::ResultLabels { result })
        .inc();
}

/// Where a reader is in a Run's live output: lines delivered per stream of
/// one attempt.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct LivePos {
    /// The Run's attempt (1-based) the counts are of.
    pub attempt: u32,
    /// Standard output records of that attempt.
    pub stdout: u32,
    /// Standard error records of that attempt.
    pub stderr: u32,
}

/// A live cursor that is not `L<attempt>-<stdout lines>-<stderr lines>-<o|e>`.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
#[error("expected L<attempt>-<stdout lines>-<stderr lines>-<o|e>, e.g. L1-12-0-o")]
pub struct BadLivePos;

impl LivePos {
    /// Lines of `stream` delivered.
    pub fn count(&self, stream: Stream) -> u32 {
        match stream {
            Stream::Stdout => self.stdout,
            Stream::Stderr => self.stderr,
        }
    }

    fn count_mut(&mut self, stream: Stream) -> &mut u32 {
        match stream {
            Stream::Stdout => &mut self.stdout,
            Stream::Stderr => &mut self.stderr,
        }
    }
}

/// The address of one live record: the position just after it and its stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LiveCursor {
    /// The position just after the record.
    pub pos: LivePos,
    /// The record's stream.
    pub stream: Stream,
}

impl LiveCursor {
    /// Longest text form accepted.
    pub const MAX_LEN: usize = 40;

    /// Is `s` written as a live cursor (it may still be a bad one)?
    pub fn is_live(s: &str) -> bool {
        s.starts_with('L')
    }

    /// Reads a live cursor as its `Display` writes it.
    pub fn parse(s: &str) -> Result<LiveCursor, BadLivePos> {
        if s.len() > Self::MAX_LEN {
            return Err(BadLivePos);
        }
        let rest = s.strip_prefix('L').ok_or(BadLivePos)?;
        let mut parts = rest.split('-');
        let mut num = || -> Result<u32, BadLivePos> {
            let p = parts.next().ok_or(BadLivePos)?;
            if p.is_empty() || p.len() > 9 || !p.bytes().all(|b| b.is_ascii_digit()) {
                return Err(BadLivePos);
            }
            p.parse().map_err(|_| BadLivePos)
        };
        let (attempt, stdout, stderr) = (num()?, num()?, num()?);
        let stream = match parts.next() {
            Some("o") => Stream::Stdout,
            Some("e") => Stream::Stderr,
            _ => return Err(BadLivePos),
        };
        let pos = LivePos {
            attempt,
            stdout,
            stderr,
        };
        if parts.next().is_some() || attempt == 0 || pos.count(stream) == 0 {
            return Err(BadLivePos);
        }
        Ok(LiveCursor { pos, stream })
    }

    /// The position just before the record: what a reader had been given.
    pub fn before(&self) -> LivePos {
        let mut p = self.pos;
        *p.count_mut(self.stream) -= 1;
        p
    }
}

impl fmt::Display for LiveCursor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self.stream {
            Stream::Stdout => 'o',
            Stream::Stderr => 'e',
        };
        write!(
            f,
            "L{}-{}-{}-{s}",
            self.pos.attempt, self.pos.stdout, self.pos.stderr
        )
    }
}

/// One of runtimed's two streams.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl Stream {
    /// Both streams, standard output first.
    pub const BOTH: [Stream; 2] = [Stream::Stdout, Stream::Stderr];

    /// `stdout` or `stderr`.
    pub fn as_str(self) -> &'static str {
        match self {
            Stream::Stdout => "stdout",
            Stream::Stderr => "stderr",
        }
    }

    /// The stream named `s`, if it is one.
    pub fn of(s: &str) -> Option<Stream> {
        match s {
            "stdout" => Some(Stream::Stdout),
            "stderr" => Some(Stream::Stderr),
            _ => None,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// The records runtimed will write for `text`, one stream's output, as
/// its `emitStream` splits it: messages with the byte offset just past
/// each one's line (only complete lines, ending in `\n`).
fn complete_lines(text: &str, from: usize) -> impl Iterator<Item = (&str, usize)> {
    let mut at = from.min(text.len());
    std::iter::from_fn(move || {
        loop {
            let rest = &text[at..];
            let nl = memchr::memchr(b'\n', rest.as_bytes())?;
            let line = &rest[..nl];
            at += nl + 1;
            let line = line.strip_suffix('\r').unwrap_or(line);
            if !line.is_empty() {
                return Some((line, at));
            }
        }
    })
}

/// Which of the new lines an answer keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Take {
    /// The first records within a count and a byte bound; the rest stay
    /// new for the next call.
    First(usize, usize),
    /// The last records within a count and a byte bound; all are read.
    Last(usize, usize),
}

/// Turns successive status answers of one Run into new records.
#[derive(Debug)]
pub struct LiveLines {
    pos: LivePos,
    /// Bytes of each stream consumed; `None` until the first answer was
    /// matched to `pos` (a reader resuming from a cursor).
    offsets: Option<[usize; 2]>,
    /// The last consumed bytes of each stream (up to 64), to notice a
    /// stream that started again (a new attempt).
    guards: [Vec<u8>; 2],
    pod: String,
    streams: StreamFilter,
}

/// Longest tail of a stream kept to recognise it in the next answer.
const GUARD_BYTES: usize = 64;

impl LiveLines {
    /// A reader at `pos` (lines already delivered) of `pod`'s output.
    pub fn new(pos: LivePos, pod: &str, streams: StreamFilter) -> Self {
        Self {
            pos,
            offsets: None,
            guards: [Vec::new(), Vec::new()],
            pod: pod.to_owned(),
            streams,
        }
    }

    /// Where the reader is.
    pub fn pos(&self) -> LivePos {
        self.pos
    }

    /// The new complete lines of `resp` within `take`, as records stamped
    /// `time` (when the line was observed, if that says when it was
    /// printed), and which bound cut them. Each record's cursor is the
    /// position after it. A stream that became shorter, or no longer
    /// starts with what was read, is a new attempt: the counts start
    /// again. Only the records kept are built: a stream of a million short
    /// lines costs their scan, not a million records.
    pub fn advance(
        &mut self,
        resp: &StatusResponse,
        time: Option<&str>,
        take: Take,
    ) -> (Vec<LogRecord>, Option<Cut>) {
        let texts = [resp.stdout.as_str(), resp.stderr.as_str()];
        let offsets = match self.offsets {
            Some(o) if self.same_attempt(&texts, o) => o,
            Some(_) => {
                self.pos = LivePos {
                    attempt: self.pos.attempt.saturating_add(1),
                    stdout: 0,
                    stderr: 0,
                };
                [0, 0]
            }
            None => self.find(&texts),
        };
        let mut next = offsets;
        let mut cut = None;
        match take {
            Take::First(max, max_bytes) => {
                let mut records = Vec::new();
                let mut bytes = 0usize;
                'streams: for stream in Stream::BOTH {
                    let i = stream.index();
                    for (line, end) in complete_lines(texts[i], offsets[i]) {
                        let wanted = self.streams.admits(stream.as_str());
                        if wanted && records.len() == max {
                            cut = Some(Cut::TailLines);
                            break 'streams;
                        }
                        if wanted && bytes + line.len() > max_bytes && !records.is_empty() {
                            cut = Some(Cut::LimitBytes);
                            break 'streams;
                        }
                        next[i] = end;
                        *self.pos.count_mut(stream) += 1;
                        if wanted {
                            let mut rec = self.record(stream, line, time);
                            if rec.weight() > max_bytes {
                                // A single line over the budget keeps its head.
                                let mut keep = max_bytes;
                                while !rec.message.is_char_boundary(keep) {
                                    keep -= 1;
                                }
                                rec.message.truncate(keep);
                                rec.truncated = true;
                                cut = Some(Cut::LimitBytes);
                            }
                            bytes += rec.weight();
                            records.push(rec);
                        }
                    }
                }
                self.remember(&texts, next);
                (records, cut)
            }
            Take::Last(max, max_bytes) => {
                // The last `max` wanted lines, by reference, then built.
                let mut last: VecDeque<(Stream, &str, LivePos)> = VecDeque::new();
                for stream in Stream::BOTH {
                    let i = stream.index();
                    for (line, end) in complete_lines(texts[i], offsets[i]) {
                        next[i] = end;
                        *self.pos.count_mut(stream) += 1;
                        if self.streams.admits(stream.as_str()) {
                            if last.len() == max {
                                last.pop_front();
                                cut = Some(Cut::TailLines);
                            }
                            last.push_back((stream, line, self.pos));
                        }
                    }
                }
                self.remember(&texts, next);
                let mut window = TailWindow::new(max, max_bytes);
                for (stream, line, pos) in last {
                    window.push(record_at(&self.pod, stream, line, pos, time));
                }
                let (records, window_cut) = window.into_parts();
                (records, window_cut.or(cut))
            }
        }
    }

    /// Keeps where the reader is and the bytes that recognise it.
    fn remember(&mut self, texts: &[&str; 2], next: [usize; 2]) {
        for stream in Stream::BOTH {
            let i = stream.index();
            let t = texts[i].as_bytes();
            let from = next[i].saturating_sub(GUARD_BYTES);
            self.guards[i] = t[from..next[i]].to_vec();
        }
        self.offsets = Some(next);
    }

    fn same_attempt(&self, texts: &[&str; 2], offsets: [usize; 2]) -> bool {
        Stream::BOTH.iter().all(|s| {
            let i = s.index();
            let t = texts[i].as_bytes();
            offsets[i] <= t.len() && t[..offsets[i]].ends_with(&self.guards[i])
        })
    }

    /// The offsets just past the lines `pos` counts. A stream with fewer
    /// lines than counted started again: the reader is then at the start of
    /// a later attempt.
    fn find(&mut self, texts: &[&str; 2]) -> [usize; 2] {
        let mut offsets = [0, 0];
        let mut fewer = false;
        for stream in Stream::BOTH {
            let want = self.pos.count(stream) as usize;
            if want == 0 {
                continue;
            }
            match complete_lines(texts[stream.index()], 0).nth(want - 1) {
                Some((_, end)) => offsets[stream.index()] = end,
                None => fewer = true,
            }
        }
        if fewer {
            self.pos = LivePos {
                attempt: self.pos.attempt.saturating_add(1),
                stdout: 0,
                stderr: 0,
            };
            return [0, 0];
        }
        offsets
    }

    fn record(&self, stream: Stream, line: &str, time: Option<&str>) -> LogRecord {
        record_at(&self.pod, stream, line, self.pos, time)
    }
}

/// The record of a live `line` of `stream` whose reader is at `pos` once it has it.
fn record_at(pod: &str, stream: Stream, line: &str, pos: LivePos, time: Option<&str>) -> LogRecord {
    let (message, truncated) = if line.len() > MAX_LINE_BYTES {
        // As a written line of that size is answered.
        let note = format!(
            "[record of {} bytes exceeds the {} KiB line bound and was omitted]",
            line.len(),
            MAX_LINE_BYTES >> 10
        );
        (note, true)
    } else {
        (line.to_owned(), false)
    };
    LogRecord {
        stream: stream.as_str().to_owned(),
        message,
        pod: pod.to_owned(),
        invocation_id: None,
        time: time.map(str::to_owned),
        cursor: LiveCursor { pos, stream }.to_string(),
        line: None,
        truncated,
        source: Some(SOURCE_STATUS.to_owned()),
        written_at_end: false,
        is_match: false,
    }
}

/// The complete lines of one answer (stdout lines first, then stderr) as
/// records with their cursors, the last `max` within `max_bytes`; with
/// `before`, only those a reader had been given before that record
/// (whatever order it was given them in).
pub fn snapshot(
    resp: &StatusResponse,
    attempt: u32,
    pod: &str,
    streams: StreamFilter,
    before: Option<LiveCursor>,
    max: usize,
    max_bytes: usize,
) -> (Vec<LogRecord>, Option<Cut>) {
    let start = LivePos {
        attempt,
        stdout: 0,
        stderr: 0,
    };
    let Some(before) = before else {
        return LiveLines::new(start, pod, streams).advance(resp, None, Take::Last(max, max_bytes));
    };
    if before.pos.attempt != attempt {
        return (Vec::new(), None);
    }
    let limit = before.before();
    // Lines past the limit of either stream are left out: read each
    // stream only up to its limit.
    let mut window = TailWindow::new(max, max_bytes);
    let mut pos = start;
    for stream in Stream::BOTH {
        let text = match stream {
            Stream::Stdout => resp.stdout.as_str(),
            Stream::Stderr => resp.stderr.as_str(),
        };
        let wanted = streams.admits(stream.as_str());
        for (line, _) in complete_lines(text, 0).take(limit.count(stream) as usize) {
            *pos.count_mut(stream) += 1;
            if wanted {
                window.push(record_at(pod, stream, line, pos, None));
            }
        }
    }
    window.into_parts()
}

/// Written records a reader at `pos` was already given as live lines:
/// counts down per stream, for the first records runtimed writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Handover {
    skip: [u32; 2],
}

impl Handover {
    /// The hand-over of a reader that was given live lines up to `pos`.
    pub fn new(pos: LivePos) -> Self {
        Self {
            skip: [pos.stdout, pos.stderr],
        }
    }

    /// Whether a written record of `stream` is one already delivered (and
    /// counts it).
    pub fn delivered(&mut self, stream: &str) -> bool {
        let Some(s) = Stream::of(stream) else {
            return false;
        };
        let left = &mut self.skip[s.index()];
        if *left > 0 {
            *left -= 1;
            true
        } else {
            false
        }
    }

    /// Nothing left to skip.
    pub fn done(&self) -> bool {
        self.skip == [0, 0]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resp(stdout: &str, stderr: &str) -> StatusResponse {
        StatusResponse {
            id: "u".into(),
            state: 2,
            exit_code: 0,
            stdout: stdout.into(),
            stderr: stderr.into(),
            error_message: String::new(),
        }
    }

    /// Every new line, unbounded.
    fn all(l: &mut LiveLines, r: &StatusResponse, time: Option<&str>) -> Vec<LogRecord> {
        l.advance(r, time, Take::First(usize::MAX, usize::MAX)).0
    }

    fn msgs(records: &[LogRecord]) -> Vec<(String, String, String)> {
        records
            .iter()
            .map(|r| (r.stream.clone(), r.message.clone(), r.cursor.clone()))
            .collect()
    }

    fn at(attempt: u32, stdout: u32, stderr: u32) -> LivePos {
        LivePos {
            attempt,
            stdout,
            stderr,
        }
    }

    #[test]
    fn lines_are_split_as_runtimed_writes_them() {
        let text = "a\r\n\nb\n\n\nc";
        let lines: Vec<_> = complete_lines(text, 0).map(|(l, _)| l).collect();
        // Empty lines are skipped, a trailing \r dropped, the partial "c" waits.
        assert_eq!(lines, ["a", "b"]);
    }

    #[test]
    fn new_lines_only_and_partial_lines_wait() {
        let mut l = LiveLines::new(at(1, 0, 0), "p", StreamFilter::Both);
        let r = all(&mut l, &resp("one\ntw", ""), None);
        assert_eq!(
            msgs(&r),
            [("stdout".into(), "one".into(), "L1-1-0-o".into())]
        );
        let r = all(&mut l, &resp("one\ntwo\n", "err\n"), Some("t"));
        assert_eq!(
            msgs(&r),
            [
                ("stdout".into(), "two".into(), "L1-2-0-o".into()),
                ("stderr".into(), "err".into(), "L1-2-1-e".into())
            ]
        );
        assert_eq!(r[0].time.as_deref(), Some("t"));
        assert_eq!(r[0].source.as_deref(), Some(SOURCE_STATUS));
        assert!(all(&mut l, &resp("one\ntwo\n", "err\n"), None).is_empty());
        assert_eq!(l.pos(), at(1, 2, 1));
    }

    #[test]
    fn a_reader_resumes_from_its_cursor() {
        let mut l = LiveLines::new(at(1, 2, 0), "p", StreamFilter::Both);
        let r = all(&mut l, &resp("a\n\nb\nc\n", "x\n"), None);
        assert_eq!(
            msgs(&r),
            [
                ("stdout".into(), "c".into(), "L1-3-0-o".into()),
                ("stderr".into(), "x".into(), "L1-3-1-e".into())
            ]
        );
    }

    #[test]
    fn a_stream_that_starts_again_is_a_new_attempt() {
        let mut l = LiveLines::new(at(1, 0, 0), "p", StreamFilter::Both);
        all(&mut l, &resp("a\nb\n", ""), None);
        // Retried: the output starts over, even when longer by the next look.
        let r = all(&mut l, &resp("fresh\nlonger output\n", ""), None);
        assert_eq!(
            msgs(&r),
            [
                ("stdout".into(), "fresh".into(), "L2-1-0-o".into()),
                ("stdout".into(), "longer output".into(), "L2-2-0-o".into())
            ]
        );
        // A reader resuming past what a new attempt has: also a new attempt.
        let mut l = LiveLines::new(at(1, 5, 0), "p", StreamFilter::Both);
        let r = all(&mut l, &resp("a\n", ""), None);
        assert_eq!(msgs(&r), [("stdout".into(), "a".into(), "L2-1-0-o".into())]);
    }

    #[test]
    fn streams_not_asked_for_are_counted_but_not_returned() {
        let mut l = LiveLines::new(at(1, 0, 0), "p", StreamFilter::Stderr);
        let r = all(&mut l, &resp("a\nb\n", "e\n"), None);
        assert_eq!(msgs(&r), [("stderr".into(), "e".into(), "L1-2-1-e".into())]);
    }

    #[test]
    fn the_truncation_marker_is_a_line_like_any_other() {
        let mut l = LiveLines::new(at(1, 0, 0), "p", StreamFilter::Both);
        let out = format!("abc\npartial{}", "\n[output truncated]\n");
        let r = all(&mut l, &resp(&out, ""), None);
        let m: Vec<_> = r.iter().map(|r| r.message.as_str()).collect();
        assert_eq!(m, ["abc", "partial", runtimed::TRUNCATED_MARKER]);
    }

    #[test]
    fn a_snapshot_before_a_cursor_holds_what_came_before_it() {
        let r = resp("a\nb\nc\n", "x\ny\n");
        let all = snapshot(&r, 1, "p", StreamFilter::Both, None, 500, 1 << 20).0;
        assert_eq!(all.len(), 5);
        let before = |c: &str| {
            let c = LiveCursor::parse(c).unwrap();
            snapshot(&r, 1, "p", StreamFilter::Both, Some(c), 500, 1 << 20)
                .0
                .into_iter()
                .map(|r| r.message)
                .collect::<Vec<_>>()
        };
        assert_eq!(before("L1-3-0-o"), ["a", "b"]);
        assert_eq!(before("L1-3-2-e"), ["a", "b", "c", "x"]);
        // An interleaved reader's cursors work too: it was given a, x, then b at L1-2-1-o.
        assert_eq!(before("L1-2-1-o"), ["a", "x"]);
        assert_eq!(before("L1-1-1-e"), ["a"]);
        assert!(before("L2-3-0-o").is_empty());
    }

    #[test]
    fn only_the_lines_kept_are_built_and_the_rest_stay_new() {
        let text: String = (1..=1000).map(|i| format!("l{i}\n")).collect();
        let r = resp(&text, "e\n");
        // The first three, then the next three from where it stopped.
        let mut l = LiveLines::new(at(1, 0, 0), "p", StreamFilter::Both);
        let (first, cut) = l.advance(&r, None, Take::First(3, 1 << 20));
        assert_eq!(cut, Some(Cut::TailLines));
        assert_eq!(
            msgs(&first)[2],
            ("stdout".into(), "l3".into(), "L1-3-0-o".into())
        );
        let (next, _) = l.advance(&r, None, Take::First(3, 1 << 20));
        assert_eq!(next[0].message, "l4");
        assert_eq!(l.pos(), at(1, 6, 0));
        // A byte bound stops before a line that does not fit.
        let (small, cut) = l.advance(&r, None, Take::First(100, 7));
        assert_eq!(
            small.iter().map(|r| r.message.as_str()).collect::<Vec<_>>(),
            ["l7", "l8", "l9"]
        );
        assert_eq!(cut, Some(Cut::LimitBytes));
        // The last ones, all read.
        let mut l = LiveLines::new(at(1, 0, 0), "p", StreamFilter::Both);
        let (last, cut) = l.advance(&r, None, Take::Last(2, 1 << 20));
        assert_eq!(cut, Some(Cut::TailLines));
        assert_eq!(
            msgs(&last),
            [
                ("stdout".into(), "l1000".into(), "L1-1000-0-o".into()),
                ("stderr".into(), "e".into(), "L1-1000-1-e".into())
            ]
        );
        assert_eq!(l.pos(), at(1, 1000, 1));
        let (tail, _) = snapshot(&r, 1, "p", StreamFilter::Stdout, None, 2, 1 << 20);
        assert_eq!(
            tail.iter().map(|r| r.message.as_str()).collect::<Vec<_>>(),
            ["l999", "l1000"]
        );
    }

    #[test]
    fn the_handover_skips_what_was_delivered() {
        let mut h = Handover::new(at(1, 2, 1));
        let kept: Vec<bool> = ["stdout", "stdout", "stdout", "stderr", "stderr"]
            .into_iter()
            .map(|s| !h.delivered(s))
            .collect();
        assert_eq!(kept, [false, false, true, false, true]);
        assert!(h.done());
    }

    #[test]
    fn live_cursors_round_trip_and_bad_ones_are_refused() {
        let c = LiveCursor::parse("L2-10-3-e").unwrap();
        assert_eq!(c.pos, at(2, 10, 3));
        assert_eq!(c.stream, Stream::Stderr);
        assert_eq!(c.before(), at(2, 10, 2));
        assert_eq!(c.to_string(), "L2-10-3-e");
        for bad in [
            "L",
            "L1",
            "L1-2",
            "L1-2-3",
            "L0-1-1-o",
            "L1-2-3-x",
            "L1-2-3-o-4",
            "L1--3-o",
            "Lx-1-1-o",
            "L1-1-1234567890-e",
            "L1-0-3-o",
        ] {
            assert_eq!(LiveCursor::parse(bad), Err(BadLivePos), "{bad}");
        }
    }

    #[test]
    fn only_pod_addresses_are_dialled() {
        let c = LiveConfig::default();
        assert_eq!(
            target("198.18.0.7", &c).unwrap(),
            "198.18.0.7:9093".parse().unwrap()
        );
        assert!(target("fd00::7", &c).is_ok());
        for bad in [
            "",
            "0.0.0.0",
            "169.254.169.254",
            "224.0.0.1",
            "255.255.255.255",
            "127.0.0.1",
            "::1",
            "fe80::1",
            "example.com",
            "10.0.0.1:80",
            "::ffff:169.254.169.254",
            "::ffff:127.0.0.1",
        ] {
            assert!(target(bad, &c).is_err(), "{bad}");
        }
        let dev = LiveConfig {
            allow_loopback: true,
            ..LiveConfig::default()
        };
        assert!(target("127.0.0.9", &dev).is_ok());
    }

    #[test]
    fn grpc_messages_are_decoded_and_cleaned() {
        assert_eq!(percent_decode("not%20found%0A"), "not found\n");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        let mut h = http::HeaderMap::new();
        h.insert("grpc-status", "5".parse().unwrap());
        h.insert("grpc-message", "no%20such%0Aexecution".parse().unwrap());
        assert_eq!(grpc_status(&h), Some((5, "no suchexecution".into())));
    }
}
