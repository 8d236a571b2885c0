//! A gateway's whole answer, head and body, as both invoke paths read it
//! (`upstream::read_head`, `upstream::framing` and `upstream::AnswerBody`:
//! the HTTP/1.1 fast path relays it onto the caller's connection, the
//! router's `GatewayBody` hands it to hyper), against hyper's HTTP/1.1
//! client reading the same bytes in the same pieces. Shared by the stable
//! test (`tests/gateway_answer.rs`) and the `gateway_answer` fuzz target.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::HeaderMap;
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use kruntimes_console_http::runtime_access::gateway::GatewayTarget;
use kruntimes_console_http::runtime_access::upstream::{
    AnswerBody, Head, Piece, framing, read_head,
};
use kruntimes_transport::h1;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::Tape;

/// An answer as a client read it: the final status, HTTP/1.1 or not, its
/// fields in order, its body's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub status: u16,
    pub http11: bool,
    pub fields: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

/// What a reader made of the bytes: the answer, or a refusal (an answer
/// cut short by the gateway's close included).
pub type Outcome = Result<Answer, Refused>;

/// Why a reader refused (ours says; hyper's reasons are not compared).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The head: malformed, a 101, or the connection closed before it.
    Head,
    /// The framing the head announces (ambiguous or unreadable).
    Framing,
    /// An announced length, or the data, over the bound.
    TooLarge,
    /// The body: malformed chunks, or cut short by the close.
    Body,
    /// hyper's client refused.
    Hyper,
}

/// `bytes` cut at `cuts` (any offsets): the pieces the gateway's writes
/// arrive in.
pub fn split(bytes: &[u8], cuts: &[usize]) -> Vec<Vec<u8>> {
    let mut cuts: Vec<usize> = cuts.iter().map(|&c| c.min(bytes.len())).collect();
    cuts.sort_unstable();
    let mut at = 0;
    let mut out = Vec::new();
    for c in cuts {
        if c > at {
            out.push(bytes[at..c].to_vec());
            at = c;
        }
    }
    out.push(bytes[at..].to_vec());
    out
}

fn fields_of(headers: &HeaderMap) -> Vec<(String, Vec<u8>)> {
    headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.as_bytes().to_vec()))
        .collect()
}

/// hyper's client posts a call over an in-memory pipe and reads `answer`,
/// written in the given pieces, then the pipe closed. Nothing is spawned:
/// the client's connection, the gateway and the call are driven here and
/// dropped before it returns (a fuzz target's runtime lives on, and a task
/// left on it would hold its pipe to the end of the process).
pub async fn hyper_reads(answer: &[u8], cuts: &[usize]) -> Outcome {
    let (client, mut gateway) = tokio::io::duplex(256 << 10);
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(client))
        .await
        .expect("handshake");
    let pieces = split(answer, cuts);
    let gateway = async move {
        let mut head = Vec::new();
        let mut b = [0u8; 1024];
        // The request: its head and its two-byte body.
        while !head.windows(6).any(|w| w == b"\r\n\r\nhi") {
            let n = gateway.read(&mut b).await.unwrap_or(0);
            if n == 0 {
                return;
            }
            head.extend_from_slice(&b[..n]);
        }
        for p in pieces {
            if gateway.write_all(&p).await.is_err() {
                return;
            }
            tokio::task::yield_now().await;
        }
        let _ = gateway.shutdown().await;
        // Keep reading so the client never sees a reset instead of the end.
        while gateway.read(&mut b).await.unwrap_or(0) > 0 {}
    };
    let req = http::Request::post("/invoke")
        .header("host", "gateway")
        .body(Full::new(Bytes::from_static(b"hi")))
        .expect("a request");
    let call = async {
        let resp = send.send_request(req).await.map_err(|_| Refused::Hyper)?;
        let status = resp.status().as_u16();
        let http11 = resp.version() == http::Version::HTTP_11;
        let fields = fields_of(resp.headers());
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|_| Refused::Hyper)?;
        Ok(Answer {
            status,
            http11,
            fields,
            body: body.to_bytes().to_vec(),
        })
    };
    let driven = async {
        tokio::pin!(conn, gateway, call);
        let (mut conn_done, mut gateway_done) = (false, false);
        loop {
            tokio::select! {
                out = &mut call => break out,
                _ = &mut conn, if !conn_done => conn_done = true,
                () = &mut gateway, if !gateway_done => gateway_done = true,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(10), driven)
        .await
        .expect("hyper's client finished within 10 s")
}

/// The invoke paths' reading of the same pieces, as both feed it: what is
/// not consumed stays in the buffer for the next read, at most `max` bytes
/// of data, the close after the last piece.
pub fn ours(answer: &[u8], cuts: &[usize], max: usize) -> Outcome {
    let target = GatewayTarget {
        host: "gateway.example".into(),
        port: 443,
        addrs: Vec::new(),
    };
    let mut buf = BytesMut::new();
    let mut headers = HeaderMap::new();
    let mut head: Option<(u16, bool, AnswerBody)> = None;
    let mut body = Vec::new();
    for p in split(answer, cuts) {
        buf.extend_from_slice(&p);
        loop {
            let Some((_, _, reader)) = head.as_mut() else {
                match read_head(&mut buf, &mut headers) {
                    Head::Final(h) => {
                        let (status, http11) = (h.status, h.http11);
                        let f = framing(h, &headers, max, &target).map_err(|e| {
                            if e.to_string().contains("exceeds") {
                                Refused::TooLarge
                            } else {
                                Refused::Framing
                            }
                        })?;
                        head = Some((status, http11, AnswerBody::new(&f, max)));
                        continue;
                    }
                    Head::More => break,
                    Head::Malformed => return Err(Refused::Head),
                }
            };
            match reader.next(&mut buf) {
                Ok(Piece::Data(d)) => body.extend_from_slice(&d),
                Ok(Piece::More) => break,
                Ok(Piece::End) => break,
                Err(why) if why.contains("max") => return Err(Refused::TooLarge),
                Err(_) => return Err(Refused::Body),
            }
        }
        if head.as_ref().is_some_and(|(_, _, r)| r.is_done()) {
            break;
        }
    }
    // The gateway closed.
    let Some((status, http11, mut reader)) = head else {
        return Err(Refused::Head);
    };
    reader.closed().map_err(|_| Refused::Body)?;
    assert!(
        matches!(reader.next(&mut buf), Ok(Piece::End)),
        "a body that ended goes on"
    );
    Ok(Answer {
        status,
        http11,
        fields: fields_of(&headers),
        body,
    })
}

/// Where the invoke paths may refuse an answer hyper's client reads: the
/// framing they do not guess at (a length and a transfer coding, several or
/// listed lengths, a transfer coding other than a lone `chunked`: a
/// response-splitting risk), a 101 to a call that asked for no upgrade,
/// and data over the bound.
fn stricter(theirs: &Answer, ours: &Refused, max: usize) -> bool {
    let mut headers = HeaderMap::new();
    for (k, v) in &theirs.fields {
        headers.append(
            http::HeaderName::from_bytes(k.as_bytes()).expect("a name hyper read"),
            http::HeaderValue::from_bytes(v).expect("a value hyper read"),
        );
    }
    match ours {
        Refused::Framing => h1::body_kind(&headers).is_none(),
        Refused::Head => theirs.status == 101,
        Refused::TooLarge => {
            theirs.body.len() > max
                || matches!(h1::body_kind(&headers), Some(h1::BodyKind::Length(n)) if n > max as u64)
        }
        _ => false,
    }
}

/// Both readers over the same answer and split: the same answer, both
/// refusing, or ours refusing where it is allowed to be stricter (panics
/// otherwise, naming `what`).
pub async fn same(answer: &[u8], cuts: &[usize], max: usize, what: &str) -> Outcome {
    let theirs = hyper_reads(answer, cuts).await;
    let ours = ours(answer, cuts, max);
    let shown = String::from_utf8_lossy(&answer[..answer.len().min(400)]).into_owned();
    match (&ours, &theirs) {
        (Ok(a), Ok(b)) => assert_eq!(
            a, b,
            "{what}: the answers differ for {shown:?} (cut at {cuts:?}, max {max})"
        ),
        (Err(_), Err(_)) => {}
        (Err(why), Ok(b)) => assert!(
            stricter(b, why, max),
            "{what}: ours refuses ({why:?}) what hyper reads for {shown:?} (cut at {cuts:?}, max {max}): {b:?}"
        ),
        (Ok(a), Err(_)) => panic!(
            "{what}: ours reads what hyper refuses, {shown:?} (cut at {cuts:?}, max {max}): {a:?}"
        ),
    }
    ours
}

/// The bound a tape asks for: mostly large, sometimes at the edge.
pub fn bound(t: &mut Tape<'_>) -> usize {
    match t.below(4) {
        0 => t.below(48),
        _ => 1 << 20,
    }
}

/// Cut positions in an answer of `len` bytes a tape asks for.
pub fn cuts(t: &mut Tape<'_>, len: usize) -> Vec<usize> {
    (0..t.below(8)).map(|_| t.below(len + 1)).collect()
}

/// True about one time in `n`, never for a tape used up (zeros draw the
/// plain choice).
fn rare(t: &mut Tape<'_>, n: usize) -> bool {
    t.below(n) == n - 1
}

/// Decisions for a gateway's answer drawn from a tape: interim answers,
/// the final status line, fields (framing fields right, wrong and
/// ambiguous), a body framed by length, chunks (with extensions, trailers
/// and odd grammar) or the close, then perhaps a byte flipped or the answer
/// cut short.
pub fn generate(t: &mut Tape<'_>) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..t.below(3) {
        let code = [100, 102, 103, 199][t.below(4)];
        out.extend_from_slice(format!("HTTP/1.1 {code} Interim\r\n").as_bytes());
        if rare(t, 2) {
            out.extend_from_slice(b"link: </a>; rel=preload\r\n");
        }
        out.extend_from_slice(b"\r\n");
    }
    let version = match t.below(16) {
        0..=11 => "HTTP/1.1",
        12..=14 => "HTTP/1.0",
        _ => "HTTP/2.0",
    };
    let status = match t.below(32) {
        28 => 101,
        29 => 100,
        30 => 600,
        31 => 999,
        n => [200, 201, 204, 304, 404, 413, 500, 502, 599][n % 9],
    };
    out.extend_from_slice(format!("{version} {status} Reason\r\n").as_bytes());
    // The body, before its framing fields (a length needs it).
    let data: Vec<u8> = (0..t.below(40)).map(|_| b'a' + t.below(26) as u8).collect();
    enum Frame {
        Length(String),
        Chunked(Vec<u8>),
        Close,
    }
    let frame = match t.below(8) {
        0..=2 => {
            let n = data.len();
            let value = match t.below(10) {
                9 => format!("{}", n + 1 + t.below(4)),
                8 if n > 0 => format!("{}", n - 1),
                7 => format!("+{n}"),
                6 => format!("{n}, {n}"),
                5 => format!("0{n}"),
                4 => "99999999999999999999".into(),
                _ => format!("{n}"),
            };
            Frame::Length(value)
        }
        3..=5 => {
            let mut body = Vec::new();
            let mut at = 0;
            while at < data.len() {
                let n = (1 + t.below(16)).min(data.len() - at);
                match t.below(40) {
                    0 => body.extend_from_slice(format!("{n:X}").as_bytes()),
                    1 => body.extend_from_slice(format!("0{n:x}").as_bytes()),
                    2 => body.extend_from_slice(format!(" {n:x}").as_bytes()),
                    3 => body.extend_from_slice(format!("{n:x} ").as_bytes()),
                    _ => body.extend_from_slice(format!("{n:x}").as_bytes()),
                }
                match t.below(40) {
                    0..=3 => body.extend_from_slice(b";ext"),
                    4..=6 => body.extend_from_slice(b";a=b;c=\"d\""),
                    7 => body.extend_from_slice(b";\rbad"),
                    _ => {}
                }
                body.extend_from_slice(if rare(t, 40) { b"\n" } else { b"\r\n" });
                body.extend_from_slice(&data[at..at + n]);
                body.extend_from_slice(if rare(t, 40) { b"\r" } else { b"\r\n" });
                at += n;
            }
            body.extend_from_slice(b"0");
            if rare(t, 6) {
                body.extend_from_slice(b";last");
            }
            body.extend_from_slice(b"\r\n");
            for _ in 0..t.below(3) {
                match t.below(12) {
                    0 => body.extend_from_slice(b"not a field\r\n"),
                    1 => body.extend_from_slice(b"x-sum: \x01\r\n"),
                    _ => body.extend_from_slice(b"x-sum: 42\r\n"),
                }
            }
            if !rare(t, 20) {
                body.extend_from_slice(b"\r\n");
            }
            Frame::Chunked(body)
        }
        _ => Frame::Close,
    };
    let mut fields: Vec<(String, String)> = Vec::new();
    match &frame {
        Frame::Length(v) => {
            fields.push(("content-length".into(), v.clone()));
            if rare(t, 8) {
                fields.push(("Content-Length".into(), v.clone()));
            }
            if rare(t, 8) {
                fields.push(("transfer-encoding".into(), "chunked".into()));
            }
        }
        Frame::Chunked(_) => {
            let te = [
                "chunked",
                "Chunked",
                " chunked",
                "gzip, chunked",
                "chunked, gzip",
                "identity",
            ][if rare(t, 2) { 0 } else { t.below(6) }];
            fields.push(("transfer-encoding".into(), te.into()));
            if rare(t, 8) {
                fields.push(("transfer-encoding".into(), "chunked".into()));
            }
        }
        Frame::Close => {}
    }
    for _ in 0..t.below(4) {
        let f = match t.below(8) {
            0 => ("connection", "close"),
            1 => ("connection", "keep-alive"),
            2 => ("x-krt-invocation-id", "0123456789abcdef"),
            3 => ("content-type", "application/json"),
            4 => ("set-cookie", "a=b"),
            5 => ("x-empty", ""),
            6 => ("x-obs", "a\r\n folded"),
            _ => ("x-a", "b"),
        };
        let at = t.below(fields.len() + 1);
        fields.insert(at, (f.0.into(), f.1.into()));
    }
    for (k, v) in &fields {
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"\r\n");
    match frame {
        Frame::Chunked(body) => out.extend_from_slice(&body),
        _ => out.extend_from_slice(&data),
    }
    if rare(t, 6) {
        // Bytes after the answer (a late or extra answer).
        out.extend_from_slice(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nno");
    }
    match t.below(16) {
        15 if !out.is_empty() => {
            let at = t.below(out.len());
            out[at] ^= 1 << t.below(8);
        }
        14 if !out.is_empty() => {
            let at = t.below(out.len());
            out.truncate(at);
        }
        _ => {}
    }
    out
}
