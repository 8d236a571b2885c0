//! The invoke fast path against a scripted gateway: callers speak TLS to a
//! Console listener serving [`InvokeFastPath`]; the gateway writes exactly
//! the answers a test scripts, in the pieces it scripts.

use super::*;
use crate::runtime_access::testkit::{
    FUNCTION, Gateway, NS, Script, Split, TOKEN, UID, answer, bounds, chunked, console_listener,
    field_of, states, within,
};
use bytes::BytesMut;
use kruntimes_transport::tls_stream::{self, ClientStream};
use rustls_pki_types::ServerName;
use tokio::net::TcpStream;

#[test]
fn only_plain_invoke_paths_are_taken() {
    assert_eq!(
        invoke_path("/v1/namespaces/team-a/runs/r.1/6f1c-2b/invoke"),
        Some(("team-a", "r.1", "6f1c-2b"))
    );
    for t in [
        "/v1/namespaces/team-a/runs/r/u/invoke/",
        "/v1/namespaces/team-a/runs/r/u/invoke?x=1",
        "/v1/namespaces/team%2Da/runs/r/u/invoke",
        "/v1/namespaces//runs/r/u/invoke",
        "/v1/namespaces/a/run/r/u/invoke",
        "/v1/namespaces/a/runs/r/u/operations:ws",
        "/v1/namespaces/a/runs/r/u/x/invoke",
        "/api/namespaces/a/runs/r/u/invoke",
        "/v1/namespaces/a/runs//u/invoke",
        "/v1/namespaces/a/runs/r//invoke",
        "/v1/namespaces/a/runs/r/\u{fc}/invoke",
        "/v1/namespaces/a/runs/r/u/invoke\0",
        "/v1/namespaces/a/runs/r/u",
    ] {
        assert_eq!(invoke_path(t), None, "{t}");
    }
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]

    /// The byte-wise split takes exactly the targets the plain reading of
    /// the route takes (its first form, on `str`): targets in the route's
    /// shape, with each piece right or a near miss.
    #[test]
    fn invoke_paths_are_split_as_the_plain_reading_splits_them(
        // Right pieces are drawn more often than near misses, so that
        // the targets taken are many too.
        prefix in proptest::sample::select(vec![
            "/v1/namespaces/", "/v1/namespaces/", "/v1/namespaces/", "/v1/namespace/",
            "/api/namespaces/", "",
        ]),
        segments in proptest::collection::vec(
            proptest::sample::select(vec![
                "team-a", "r.1", "u_2~", "6f1c-2b", "A.Z", "team-a", "r.1", "u_2~", "", "%2D",
                "\u{fc}", "a b", "x?y", "\0",
            ]),
            3,
        ),
        runs in proptest::sample::select(vec!["runs", "runs", "runs", "run", "Runs"]),
        invoke in proptest::sample::select(vec![
            "invoke", "invoke", "invoke", "invoke/", "operations:ws", "invoke?x=1",
        ]),
        extra in proptest::sample::select(vec!["", "", "", "/", "/x", "//"]),
    ) {
        let target = format!(
            "{prefix}{}/{runs}/{}/{}/{invoke}{extra}",
            segments[0], segments[1], segments[2]
        );
        proptest::prop_assert_eq!(invoke_path(&target), plain_reading(&target), "{:?}", target);
    }
}

/// The route read on `str`, as the fast path first did.
fn plain_reading(target: &str) -> Option<(&str, &str, &str)> {
    let rest = target.strip_prefix("/v1/namespaces/")?;
    let mut parts = rest.split('/');
    let (ns, runs, name, uid, invoke) = (
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
        parts.next()?,
    );
    let plain = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~'))
    };
    (parts.next().is_none()
        && runs == "runs"
        && invoke == "invoke"
        && plain(ns)
        && plain(name)
        && plain(uid))
    .then_some((ns, name, uid))
}

/// A Console listener with the fast path, calling a scripted gateway.
struct Console {
    addr: std::net::SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    fast: Arc<InvokeFastPath>,
    gw: Arc<Gateway>,
}

async fn console() -> Console {
    console_with(bounds()).await
}

async fn console_with(bounds: super::super::AccessBounds) -> Console {
    let gw = Arc::new(Gateway::start().await);
    let (state, access) = states(&gw, bounds).await;
    let l = console_listener(state, access, true).await;
    Console {
        addr: l.addr,
        tls: l.tls,
        fast: l.fast.unwrap(),
        gw,
    }
}

impl Console {
    /// A new caller connection.
    async fn caller(&self) -> Caller {
        let tcp = TcpStream::connect(self.addr).await.unwrap();
        let name = ServerName::try_from("localhost").unwrap();
        let io = within(
            "the caller's TLS handshake",
            tls_stream::connect(self.tls.clone(), name, tcp),
        )
        .await
        .unwrap();
        Caller {
            io,
            buf: BytesMut::new(),
        }
    }

    /// Idle gateway connections in the pool (every call runs on this
    /// thread), once the Console's tasks have run.
    async fn pooled(&self) -> usize {
        for _ in 0..8 {
            tokio::task::yield_now().await;
        }
        self.fast.upstreams.idle_count()
    }

    /// Invokes served by the fast path so far.
    fn served_fast(&self) -> u64 {
        self.fast.observer.metrics.fast_path_requests.get()
    }
}

/// An invoke of the function Run with invocation ID `inv`.
fn invoke(inv: &str, body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "POST /v1/namespaces/{NS}/runs/{FUNCTION}/{UID}/invoke HTTP/1.1\r\n\
         host: console.test\r\nauthorization: Bearer {TOKEN}\r\n\
         content-type: text/plain\r\nx-kruntime-invocation-id: {inv}\r\n\
         content-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

/// An answer as the caller read it.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
    /// Relayed with chunked framing.
    chunked: bool,
}

impl Answer {
    fn field(&self, name: &str) -> Option<&str> {
        field_of(&self.head, name)
    }
}

/// Why a caller did not get a whole answer.
#[derive(Debug, PartialEq)]
enum Cut {
    /// The connection ended first; what had arrived of the answer.
    Closed(Vec<u8>),
}

struct Caller {
    io: ClientStream<TcpStream>,
    buf: BytesMut,
}

impl Caller {
    async fn send(&mut self, bytes: &[u8]) {
        within("the caller's write", async {
            self.io.write_all(bytes).await.unwrap();
            self.io.flush().await.unwrap();
        })
        .await
    }

    /// Reads more; false at the end of the connection (clean or not).
    async fn more(&mut self) -> bool {
        matches!(read_into(&mut self.io, &mut self.buf).await, Ok(n) if n > 0)
    }

    /// Reads one answer, framed as HTTP/1.1 frames it. The bytes after it stay buffered.
    async fn answer(&mut self) -> Result<Answer, Cut> {
        within("an answer at the caller", async {
            let cut = |buf: &BytesMut| Cut::Closed(buf.to_vec());
            let end = loop {
                if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    break end + 4;
                }
                if !self.more().await {
                    return Err(cut(&self.buf));
                }
            };
            let head = String::from_utf8(self.buf[..end].to_vec()).unwrap();
            let status: u16 = head[9..12].parse().unwrap();
            let chunked = field_of(&head, "transfer-encoding") == Some("chunked");
            let mut at = end;
            let mut body = Vec::new();
            if status == 204 || status == 304 {
            } else if chunked {
                // An independent reading of RFC 9112 §7.1, strict about CRLFs.
                loop {
                    let line_end = loop {
                        if let Some(i) = self.buf[at..].windows(2).position(|w| w == b"\r\n") {
                            break at + i;
                        }
                        if !self.more().await {
                            return Err(cut(&self.buf));
                        }
                    };
                    let line = std::str::from_utf8(&self.buf[at..line_end]).unwrap();
                    let size = usize::from_str_radix(line.split(';').next().unwrap(), 16)
                        .unwrap_or_else(|_| panic!("a bad chunk size line {line:?}"));
                    at = line_end + 2;
                    if size == 0 {
                        // Trailers, up to the blank line.
                        loop {
                            while !self.buf[at..].windows(2).any(|w| w == b"\r\n") {
                                if !self.more().await {
                                    return Err(cut(&self.buf));
                                }
                            }
                            let i = self.buf[at..].windows(2).position(|w| w == b"\r\n");
                            let i = i.unwrap();
                            at += i + 2;
                            if i == 0 {
                                break;
                            }
                        }
                        break;
                    }
                    while self.buf.len() < at + size + 2 {
                        if !self.more().await {
                            return Err(cut(&self.buf));
                        }
                    }
                    body.extend_from_slice(&self.buf[at..at + size]);
                    assert_eq!(&self.buf[at + size..at + size + 2], b"\r\n", "chunk end");
                    at += size + 2;
                }
            } else {
                let len: usize = field_of(&head, "content-length")
                    .expect("an answer with a length or chunks")
                    .parse()
                    .unwrap();
                while self.buf.len() < at + len {
                    if !self.more().await {
                        return Err(cut(&self.buf));
                    }
                }
                body.extend_from_slice(&self.buf[at..at + len]);
                at += len;
            }
            self.buf.advance(at);
            Ok(Answer {
                status,
                head,
                body,
                chunked,
            })
        })
        .await
    }

    /// Waits for the Console to close the connection; false when it sent
    /// more bytes first.
    async fn closed(&mut self) -> bool {
        within("the Console closing the caller's connection", async {
            while self.more().await {}
        })
        .await;
        self.buf.is_empty()
    }

    /// Invokes with `inv` and `body` and reads the answer.
    async fn call(&mut self, inv: &str, body: &[u8]) -> Result<Answer, Cut> {
        self.send(&invoke(inv, body)).await;
        self.answer().await
    }
}

/// The gateway's answer to invocation `inv` with a length.
fn ok(inv: &str, body: &[u8]) -> Vec<u8> {
    let len = body.len().to_string();
    answer(
        "HTTP/1.1 200 OK",
        Some(inv),
        &[("content-type", "text/plain"), ("content-length", &len)],
        body,
    )
}

/// A 200 answer to `inv` carrying `body`: with its length, or in chunks of
/// `chunk` bytes.
fn ok_framed(inv: &str, body: &[u8], chunk: Option<usize>) -> Vec<u8> {
    let Some(size) = chunk else {
        return ok(inv, body);
    };
    let mut a = answer(
        "HTTP/1.1 200 OK",
        Some(inv),
        &[("transfer-encoding", "chunked")],
        b"",
    );
    a.extend(chunked(body, size));
    a
}

/// The gateway reads one request on `g`, checks its invocation ID, and
/// answers with `bytes` in the pieces `split` makes.
async fn serve_one(g: &mut Script, inv: &str, bytes: &[u8], split: Split) -> Vec<u8> {
    let req = g.read_request().await;
    assert_eq!(req.field("x-kruntime-invocation-id"), Some(inv), "{req:?}");
    g.send(bytes, split).await;
    req.body
}

/// Length framing: the request reaches the gateway as the Console builds
/// it, the answer is relayed with its length, and the gateway connection
/// goes back to the pool and carries the next call.
#[tokio::test]
async fn a_length_answer_is_relayed_and_its_connection_reused() {
    let c = console().await;
    let mut caller = c.caller().await;
    caller.send(&invoke("inv-1", b"ping")).await;
    let mut g = c.gw.accept().await;
    let req = g.read_request().await;
    assert!(
        req.head.starts_with(&format!(
            "POST /v1/namespaces/{NS}/runs/{FUNCTION}/{UID}/invoke HTTP/1.1\r\n"
        )),
        "{req:?}"
    );
    assert_eq!(req.body, b"ping");
    assert_eq!(req.field("x-remote-user"), Some("alice"));
    assert_eq!(req.field("content-type"), Some("text/plain"));
    assert_eq!(req.field("authorization"), None, "credentials forwarded");
    let big = vec![b'x'; 40 << 10];
    g.send(&ok("inv-1", &big), Split::Whole).await;
    let a = caller.answer().await.unwrap();
    assert_eq!((a.status, a.chunked), (200, false));
    assert_eq!(a.field("content-length"), Some("40960"));
    assert_eq!(a.field("x-kruntime-invocation-id"), Some("inv-1"));
    assert_eq!(a.body, big);
    assert_eq!(
        c.pooled().await,
        1,
        "a whole length answer leaves its connection poolable"
    );
    // The second call goes out on the same gateway connection.
    caller.send(&invoke("inv-2", b"again")).await;
    assert_eq!(
        serve_one(&mut g, "inv-2", &ok("inv-2", b"pong"), Split::Whole).await,
        b"again"
    );
    let a = caller.answer().await.unwrap();
    assert_eq!((a.status, a.body.as_slice()), (200, &b"pong"[..]));
    assert!(
        !c.gw.has_new_connection().await,
        "a second connection was opened"
    );
    assert_eq!(c.served_fast(), 2, "not served by the fast path");
}

/// Chunked framing, the gateway writing in random pieces: the data is
/// relayed as chunks, whole, and the connection is reused.
#[tokio::test]
async fn a_chunked_answer_in_random_pieces_is_relayed_and_its_connection_reused() {
    let c = console().await;
    let mut caller = c.caller().await;
    let body: Vec<u8> = (0..3000u32).map(|i| (i % 251) as u8).collect();
    let mut g = None;
    for seed in 1..=4u64 {
        let inv = format!("inv-{seed}");
        caller.send(&invoke(&inv, b"")).await;
        let g = match &mut g {
            Some(g) => g,
            None => g.insert(c.gw.accept().await),
        };
        let mut bytes = answer(
            "HTTP/1.1 200 OK",
            Some(&inv),
            &[("transfer-encoding", "chunked"), ("trailer", "x-trailer")],
            b"",
        );
        bytes.extend(chunked(&body, 700));
        serve_one(g, &inv, &bytes, Split::Random(seed)).await;
        let a = caller.answer().await.unwrap();
        assert_eq!((a.status, a.chunked), (200, true), "seed {seed}");
        assert_eq!(a.body, body, "seed {seed}");
        assert_eq!(c.pooled().await, 1, "seed {seed}");
    }
    assert!(!c.gw.has_new_connection().await);
}

/// Answers of 48 KiB, with a length or in chunks, arriving whole or in
/// pieces of many sizes: each is relayed whole, and its connection carries
/// the next call. (Reads of the gateway's connection are a few KiB, so the
/// relay writes out before each read; the 16 KiB bound on what waits is
/// not reached here.)
#[tokio::test]
async fn answers_over_16_kib_in_pieces_are_relayed_whole_and_reused() {
    let c = console().await;
    let mut caller = c.caller().await;
    let body: Vec<u8> = (0..(48u32 << 10)).map(|i| (i % 251) as u8).collect();
    let mut g = None;
    let splits = [
        Split::Whole,
        Split::Every(1000),
        Split::Every(6000),
        Split::Every(16 << 10),
        Split::Random(7),
    ];
    let mut call = 0;
    for split in splits {
        for chunks in [false, true] {
            call += 1;
            let inv = format!("inv-{call}");
            caller.send(&invoke(&inv, b"")).await;
            let g = match &mut g {
                Some(g) => g,
                None => g.insert(c.gw.accept().await),
            };
            let bytes = ok_framed(&inv, &body, chunks.then_some(7000));
            serve_one(g, &inv, &bytes, split).await;
            let a = caller.answer().await.unwrap();
            let what = format!("{split:?}, chunks {chunks}");
            assert_eq!((a.status, a.chunked), (200, chunks), "{what}");
            assert_eq!(a.body, body, "{what}");
            assert_eq!(c.pooled().await, 1, "{what}");
        }
    }
    assert!(
        !c.gw.has_new_connection().await,
        "a second connection was opened"
    );
}

/// Any answer in any pieces, drawn from a seed: a length or chunks of any
/// size (around the 4 KiB of a read and the 16 KiB bound on what waits
/// most often), written in pieces of any size up to 20,000 bytes, whole,
/// or a few bytes at a time. Each is relayed byte for byte with its framing,
/// and one gateway connection carries every call. `RELAY_CASES` (default
/// 40) and `RELAY_SEED` (default 20261207) choose the calls.
#[tokio::test]
async fn any_answer_in_any_pieces_is_relayed_whole_and_reused() {
    use rand::{Rng, SeedableRng};
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let cases = env("RELAY_CASES", 40);
    let seed = env("RELAY_SEED", 20261207);
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let c = console().await;
    let mut caller = c.caller().await;
    let mut g = None;
    for call in 0..cases {
        let around = |rng: &mut rand::rngs::StdRng, at: usize| at + rng.random_range(0..3) - 1;
        let len = match rng.random_range(0..6) {
            0 => rng.random_range(0..4),
            1 => around(&mut rng, 4096),
            2 => around(&mut rng, 16 << 10),
            3 => around(&mut rng, 32 << 10),
            _ => rng.random_range(0..70_000),
        };
        let body: Vec<u8> = (0..len).map(|_| rng.random()).collect();
        let chunks = rng.random_bool(0.5);
        let chunk_size = match rng.random_range(0..3) {
            0 => rng.random_range(1..64),
            1 => around(&mut rng, 16 << 10),
            _ => rng.random_range(1..40_000),
        };
        let split = match rng.random_range(0..4) {
            0 => Split::Whole,
            1 => Split::Every(rng.random_range(1..20_000)),
            2 => Split::UpTo(rng.random(), 20_000),
            // A few bytes at a time makes thousands of records: short bodies only.
            _ if len < 4096 => Split::Random(rng.random()),
            _ => Split::UpTo(rng.random(), 3000),
        };
        let inv = format!("inv-{call}");
        caller.send(&invoke(&inv, b"")).await;
        let g = match &mut g {
            Some(g) => g,
            None => g.insert(c.gw.accept().await),
        };
        let bytes = ok_framed(&inv, &body, chunks.then_some(chunk_size));
        serve_one(g, &inv, &bytes, split).await;
        let a = caller.answer().await.unwrap();
        let what = format!(
            "seed {seed}, call {call}: {len} bytes, chunks {chunks} ({chunk_size}), {split:?}"
        );
        assert_eq!((a.status, a.chunked), (200, chunks), "{what}");
        assert!(a.body == body, "{what}: {} bytes relayed", a.body.len());
        assert_eq!(c.pooled().await, 1, "{what}");
    }
    assert!(
        !c.gw.has_new_connection().await,
        "a second gateway connection was opened"
    );
}

/// Length and chunked answers written one byte at a time are relayed whole.
#[tokio::test]
async fn answers_written_one_byte_at_a_time_are_relayed() {
    let c = console().await;
    let mut caller = c.caller().await;
    caller.send(&invoke("inv-1", b"")).await;
    let mut g = c.gw.accept().await;
    serve_one(
        &mut g,
        "inv-1",
        &ok("inv-1", b"hello, caller"),
        Split::Every(1),
    )
    .await;
    let a = caller.answer().await.unwrap();
    assert_eq!((a.status, a.body.as_slice()), (200, &b"hello, caller"[..]));
    caller.send(&invoke("inv-2", b"")).await;
    let mut bytes = answer(
        "HTTP/1.1 201 Created",
        Some("inv-2"),
        &[("transfer-encoding", "chunked")],
        b"",
    );
    bytes.extend(chunked(b"split into single bytes", 5));
    serve_one(&mut g, "inv-2", &bytes, Split::Every(1)).await;
    let a = caller.answer().await.unwrap();
    assert_eq!(
        (a.status, a.body.as_slice()),
        (201, &b"split into single bytes"[..])
    );
    assert_eq!(c.pooled().await, 1);
}

/// Close framing: a body that ends with the gateway's close (close_notify)
/// is relayed whole, as chunks; that connection is never reused.
#[tokio::test]
async fn a_close_delimited_answer_is_relayed_whole_and_not_reused() {
    let c = console().await;
    let mut caller = c.caller().await;
    caller.send(&invoke("inv-1", b"")).await;
    let mut g = c.gw.accept().await;
    let body = vec![b'c'; 20 << 10];
    serve_one(
        &mut g,
        "inv-1",
        &answer("HTTP/1.1 200 OK", Some("inv-1"), &[], &body),
        Split::Random(7),
    )
    .await;
    g.close().await;
    let a = caller.answer().await.unwrap();
    assert_eq!((a.status, a.chunked), (200, true));
    assert_eq!(a.body, body);
    assert_eq!(
        c.pooled().await,
        0,
        "a close-delimited answer's connection was pooled"
    );
    // The caller's connection stays; the next call opens a new gateway connection.
    caller.send(&invoke("inv-2", b"")).await;
    let mut g = c.gw.accept().await;
    serve_one(&mut g, "inv-2", &ok("inv-2", b"new"), Split::Whole).await;
    assert_eq!(caller.answer().await.unwrap().body, b"new");
}

/// Interim (1xx) answers are read past; the final answer is relayed.
#[tokio::test]
async fn interim_answers_are_read_past() {
    let c = console().await;
    let mut caller = c.caller().await;
    caller.send(&invoke("inv-1", b"")).await;
    let mut g = c.gw.accept().await;
    let mut bytes =
        b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nlink: </x>\r\n\r\n".to_vec();
    bytes.extend(ok("inv-1", b"final"));
    serve_one(&mut g, "inv-1", &bytes, Split::Random(3)).await;
    let a = caller.answer().await.unwrap();
    assert_eq!((a.status, a.body.as_slice()), (200, &b"final"[..]));
    assert_eq!(
        a.field("link"),
        None,
        "an interim answer's field was relayed"
    );
    assert!(
        caller.buf.is_empty(),
        "more than one answer: {:?}",
        caller.buf
    );
    assert_eq!(c.pooled().await, 1);
}

/// A 204 and a 304 have no body: none is relayed or announced. Without a
/// length the connection is reused; a 304 announcing a body is not trusted
/// and its connection is not reused.
#[tokio::test]
async fn answers_204_and_304_are_relayed_without_a_body() {
    let c = console().await;
    let mut caller = c.caller().await;
    caller.send(&invoke("inv-1", b"")).await;
    let mut g = c.gw.accept().await;
    let no_content = answer("HTTP/1.1 204 No Content", Some("inv-1"), &[], b"");
    serve_one(&mut g, "inv-1", &no_content, Split::Every(1)).await;
    let a = caller.answer().await.unwrap();
    assert_eq!(a.status, 204);
    assert_eq!(a.field("content-length"), None);
    assert_eq!(a.field("transfer-encoding"), None);
    assert_eq!(c.pooled().await, 1, "a 204 without a length is poolable");

    caller.send(&invoke("inv-2", b"")).await;
    let not_modified = answer(
        "HTTP/1.1 304 Not Modified",
        Some("inv-2"),
        &[("content-length", "5"), ("etag", "\"e1\"")],
        b"",
    );
    serve_one(&mut g, "inv-2", &not_modified, Split::Whole).await;
    let a = caller.answer().await.unwrap();
    assert_eq!(a.status, 304);
    assert_eq!(a.field("etag"), Some("\"e1\""));
    assert_eq!(a.field("content-length"), None);
    assert_eq!(
        c.pooled().await,
        0,
        "a 304 that announced a body was pooled"
    );
    // Nothing more was relayed, and the caller's connection carries another call.
    assert!(caller.buf.is_empty());
    caller.send(&invoke("inv-3", b"")).await;
    let mut g = c.gw.accept().await;
    serve_one(&mut g, "inv-3", &ok("inv-3", b"3"), Split::Whole).await;
    assert_eq!(caller.answer().await.unwrap().body, b"3");
}

/// An HTTP/1.0 answer is relayed (as HTTP/1.1); its connection is not reused.
#[tokio::test]
async fn an_http10_answer_is_relayed_and_not_reused() {
    let c = console().await;
    let mut caller = c.caller().await;
    caller.send(&invoke("inv-1", b"")).await;
    let mut g = c.gw.accept().await;
    let old = answer(
        "HTTP/1.0 200 OK",
        Some("inv-1"),
        &[("content-length", "3")],
        b"old",
    );
    serve_one(&mut g, "inv-1", &old, Split::Whole).await;
    let a = caller.answer().await.unwrap();
    assert!(a.head.starts_with("HTTP/1.1 200 OK\r\n"), "{a:?}");
    assert_eq!(a.body, b"old");
    assert_eq!(
        a.field("connection"),
        None,
        "the gateway's close reached the caller"
    );
    assert_eq!(
        c.pooled().await,
        0,
        "an HTTP/1.0 answer's connection was pooled"
    );
}

/// `Connection: close` from the gateway: relayed without the field, the
/// gateway connection is not reused, the caller's connection stays open.
#[tokio::test]
async fn a_connection_close_answer_is_relayed_and_not_reused() {
    let c = console().await;
    let mut caller = c.caller().await;
    caller.send(&invoke("inv-1", b"")).await;
    let mut g = c.gw.accept().await;
    let closing = answer(
        "HTTP/1.1 200 OK",
        Some("inv-1"),
        &[
            ("connection", "close, x-hop"),
            ("x-hop", "1"),
            ("content-length", "4"),
        ],
        b"done",
    );
    serve_one(&mut g, "inv-1", &closing, Split::Whole).await;
    let a = caller.answer().await.unwrap();
    assert_eq!(a.body, b"done");
    assert_eq!(a.field("connection"), None);
    assert_eq!(
        a.field("x-hop"),
        None,
        "a field the gateway listed in Connection"
    );
    assert_eq!(
        c.pooled().await,
        0,
        "a Connection: close answer's connection was pooled"
    );
    caller.send(&invoke("inv-2", b"")).await;
    let mut g2 = c.gw.accept().await;
    serve_one(&mut g2, "inv-2", &ok("inv-2", b"next"), Split::Whole).await;
    assert_eq!(caller.answer().await.unwrap().body, b"next");
}

/// A caller that asks for `Connection: close` gets it after its answer.
#[tokio::test]
async fn a_caller_asking_to_close_gets_its_answer_then_the_close() {
    let c = console().await;
    let mut caller = c.caller().await;
    let req = String::from_utf8(invoke("inv-1", b"x")).unwrap();
    let req = req.replacen("\r\n\r\n", "\r\nconnection: close\r\n\r\n", 1);
    caller.send(req.as_bytes()).await;
    let mut g = c.gw.accept().await;
    serve_one(&mut g, "inv-1", &ok("inv-1", b"bye"), Split::Whole).await;
    let a = caller.answer().await.unwrap();
    assert_eq!(
        (a.body.as_slice(), a.field("connection")),
        (&b"bye"[..], Some("close"))
    );
    assert!(caller.closed().await);
    assert_eq!(c.pooled().await, 1, "the gateway connection is still good");
}

/// Half-close: a caller that ends its side (close_notify, FIN) right after
/// its request still gets the answer.
#[tokio::test]
async fn a_caller_that_half_closes_after_its_request_gets_its_answer() {
    let c = console().await;
    let mut caller = c.caller().await;
    caller.send(&invoke("inv-1", b"last words")).await;
    within("the caller's half-close", caller.io.shutdown())
        .await
        .unwrap();
    let mut g = c.gw.accept().await;
    let got = serve_one(&mut g, "inv-1", &ok("inv-1", b"heard"), Split::Random(5)).await;
    assert_eq!(got, b"last words");
    let a = caller.answer().await.unwrap();
    assert_eq!(a.body, b"heard");
    assert!(caller.closed().await, "more bytes after the answer");
}

/// An early answer: the gateway refuses from the head alone, never reads
/// the (large) body and closes; the caller gets that answer, not a 502.
#[tokio::test]
async fn an_early_answer_is_relayed_when_the_gateway_closes_without_reading_the_body() {
    let c = console().await;
    for (inv, len) in [("inv-small", 10usize), ("inv-large", 6 << 20)] {
        let mut caller = c.caller().await;
        let body = vec![b'b'; len];
        let request = invoke(inv, &body);
        caller.send(&request).await;
        let mut g = c.gw.accept().await;
        let head = g.read_head().await;
        assert_eq!(field_of(&head, "x-kruntime-invocation-id"), Some(inv));
        let refusal = answer(
            "HTTP/1.1 413 Payload Too Large",
            Some(inv),
            &[("connection", "close"), ("content-length", "8")],
            b"too big!",
        );
        g.send(&refusal, Split::Whole).await;
        g.close().await;
        let a = caller.answer().await.unwrap();
        assert_eq!(
            (a.status, a.body.as_slice()),
            (413, &b"too big!"[..]),
            "{inv}"
        );
        assert_eq!(c.pooled().await, 0, "{inv}");
    }
}

/// A gateway that breaks off mid-body: the caller never sees the answer
/// end (no length reached, no last chunk), the caller's connection closes
/// and the gateway's is not reused.
#[tokio::test]
async fn a_gateway_closing_mid_body_breaks_the_answer_off() {
    let c = console().await;
    let length = answer(
        "HTTP/1.1 200 OK",
        Some("inv"),
        &[("content-length", "100")],
        b"only ten b",
    );
    let mut chunks = answer(
        "HTTP/1.1 200 OK",
        Some("inv"),
        &[("transfer-encoding", "chunked")],
        b"",
    );
    chunks.extend_from_slice(b"a\r\n0123456789\r\n64\r\nshort");
    // Close framing whose TCP connection ends without close_notify: a
    // truncation, not the body's end.
    let truncated = answer("HTTP/1.1 200 OK", Some("inv"), &[], &[b'z'; 30 << 10]);
    for (what, bytes, clean) in [
        ("length", length, true),
        ("chunked", chunks, true),
        ("close without close_notify", truncated, false),
    ] {
        let mut caller = c.caller().await;
        caller.send(&invoke("inv", b"")).await;
        let mut g = c.gw.accept().await;
        serve_one(&mut g, "inv", &bytes, Split::Whole).await;
        if clean {
            g.close().await;
        } else {
            drop(g);
        }
        match caller.answer().await {
            Err(Cut::Closed(_)) => {}
            Ok(a) => panic!("{what}: a broken-off answer was relayed as whole: {a:?}"),
        }
        assert_eq!(c.pooled().await, 0, "{what}");
    }
}

/// A gateway that closes without answering: 502, and the caller's
/// connection closes (its request may have run).
#[tokio::test]
async fn a_gateway_closing_without_an_answer_is_a_502() {
    let c = console().await;
    let mut caller = c.caller().await;
    caller.send(&invoke("inv-1", b"x")).await;
    let mut g = c.gw.accept().await;
    g.read_request().await;
    g.send(b"HTTP/1.1 200 OK\r\ncontent-le", Split::Whole).await;
    g.close().await;
    let a = caller.answer().await.unwrap();
    assert_eq!(a.status, 502, "{a:?}");
    assert!(caller.closed().await);
    assert_eq!(c.pooled().await, 0);
}

/// Two callers alternating on one pooled gateway connection, whose gateway
/// writes an extra answer after the first one: in the same write, as a
/// record of its own just after, or later while the connection is idle;
/// or closes it while idle. The second caller must get its own answer, on
/// another connection, never a byte of the extra one (which names no call,
/// so nothing but the pool could catch it).
#[tokio::test]
async fn an_extra_answer_makes_the_connection_unpoolable() {
    const EXTRA: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-length: 11\r\n\r\nnot for you";
    for how in [
        "same write",
        "next record",
        "while idle",
        "closed while idle",
    ] {
        let c = console().await;
        let mut a = c.caller().await;
        let mut b = c.caller().await;
        a.send(&invoke("inv-a", b"")).await;
        let mut g1 = c.gw.accept().await;
        g1.read_request().await;
        let mut first = ok("inv-a", b"for a");
        match how {
            "same write" => {
                first.extend_from_slice(EXTRA);
                g1.send(&first, Split::Whole).await;
            }
            "next record" => {
                g1.send(&first, Split::Whole).await;
                g1.send(EXTRA, Split::Whole).await;
            }
            _ => g1.send(&first, Split::Whole).await,
        }
        assert_eq!(a.answer().await.unwrap().body, b"for a", "{how}");
        match how {
            "while idle" => {
                assert_eq!(
                    c.pooled().await,
                    1,
                    "{how}: the connection was clean when its answer ended"
                );
                g1.send(EXTRA, Split::Whole).await;
            }
            "closed while idle" => {
                assert_eq!(c.pooled().await, 1, "{how}");
                g1.close().await;
            }
            _ => assert_eq!(c.pooled().await, 0, "{how}: pooled with bytes left over"),
        }
        // Caller b, then a again: each gets its own answer, on a new
        // connection that is then reused.
        let gw = c.gw.clone();
        let script = tokio::spawn(async move {
            let mut g2 = gw.accept().await;
            serve_one(&mut g2, "inv-b", &ok("inv-b", b"for b"), Split::Whole).await;
            serve_one(
                &mut g2,
                "inv-a2",
                &ok("inv-a2", b"for a again"),
                Split::Whole,
            )
            .await;
        });
        let got = b.call("inv-b", b"").await;
        assert!(
            matches!(&got, Ok(x) if x.status == 200 && x.body == b"for b"),
            "{how}: the second caller got {got:?}"
        );
        let got = a.call("inv-a2", b"").await;
        assert!(
            matches!(&got, Ok(x) if x.body == b"for a again"),
            "{how}: the first caller got {got:?}"
        );
        within("the gateway script", script).await.unwrap();
        assert!(
            b.buf.is_empty() && a.buf.is_empty(),
            "{how}: extra bytes relayed"
        );
    }
}

/// An answer that names another call's invocation ID is never relayed: 502.
#[tokio::test]
async fn an_answer_naming_another_call_is_refused() {
    let c = console().await;
    let mut caller = c.caller().await;
    caller.send(&invoke("inv-mine", b"")).await;
    let mut g = c.gw.accept().await;
    g.read_request().await;
    g.send(&ok("inv-someone-else", b"secret"), Split::Whole)
        .await;
    let a = caller.answer().await.unwrap();
    assert_eq!(a.status, 502, "{a:?}");
    assert!(!a.body.windows(6).any(|w| w == b"secret"));
    assert_eq!(c.pooled().await, 0);
}
