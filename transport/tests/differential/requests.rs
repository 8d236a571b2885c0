//! Request framing (`h1::parse_request`, `h1::body_kind`, `h1::Chunked`, as
//! the accept loop's fast path reads a connection) against hyper's server
//! parser reading the same bytes over an in-memory pipe.
//!
//! The fast path frames requests itself while it can and hands the rest of
//! the connection to hyper as soon as a head is one it does not take
//! (`Parsed::Invalid`, an ambiguous body framing). So the rule is: every
//! request the fast path frames, hyper frames the same way (same method,
//! target, fields and body, so the same boundary: the requests after it
//! agree too); and where the fast path waits for more bytes at the end of
//! the input, or stops after a `Connection: close`, hyper has no further
//! request either.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::HeaderMap;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use kruntimes_transport::h1::{self, BodyKind, Chunked, Parsed};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::split;

/// One framed request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Framed {
    pub method: String,
    pub target: String,
    /// Fields in order, names lowercase.
    pub fields: Vec<(String, Vec<u8>)>,
    pub body: Vec<u8>,
}

/// Why the fast path's framing stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// The input ended inside a head or a body (or at a boundary): the fast
    /// path would wait for more.
    NeedMore,
    /// A head or body the fast path does not frame: hyper takes over.
    HandedOver,
    /// A request asked for `Connection: close`: nothing after it is read.
    Closed,
}

fn fields(headers: &HeaderMap) -> Vec<(String, Vec<u8>)> {
    // `HeaderMap` iterates by name, then in order within a name.
    headers
        .iter()
        .map(|(k, v)| (k.as_str().to_owned(), v.as_bytes().to_vec()))
        .collect()
}

/// The fast path's framing of `input` arriving in the given pieces.
pub fn fast_path_frames(input: &[u8], cuts: &[usize]) -> (Vec<Framed>, End) {
    enum State {
        Head,
        Length(Framed, usize),
        Chunked(Framed, Chunked),
    }
    let mut out = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    let mut headers = HeaderMap::new();
    let mut state = State::Head;
    let mut close = false;
    for piece in split(input, cuts) {
        buf.extend_from_slice(&piece);
        loop {
            match std::mem::replace(&mut state, State::Head) {
                State::Head => {
                    if buf.is_empty() {
                        break;
                    }
                    let head = match h1::parse_request(&buf, &mut headers) {
                        Parsed::Partial => break,
                        Parsed::Invalid => return (out, End::HandedOver),
                        Parsed::Complete(head) => head,
                    };
                    close = h1::wants_close(&headers);
                    let req = Framed {
                        method: head.method.as_str().to_owned(),
                        target: head.target.clone(),
                        fields: fields(&headers),
                        body: Vec::new(),
                    };
                    buf.drain(..head.len);
                    state = match h1::body_kind(&headers) {
                        None => return (out, End::HandedOver),
                        Some(BodyKind::Close) => State::Length(req, 0),
                        Some(BodyKind::Length(n)) => match usize::try_from(n) {
                            Ok(n) => State::Length(req, n),
                            Err(_) => return (out, End::HandedOver),
                        },
                        Some(BodyKind::Chunked) => State::Chunked(req, Chunked::default()),
                    };
                }
                State::Length(mut req, n) => {
                    let take = n.min(buf.len());
                    req.body.extend(buf.drain(..take));
                    if take == n {
                        out.push(req);
                        if close {
                            return (out, End::Closed);
                        }
                    } else {
                        state = State::Length(req, n - take);
                        break;
                    }
                }
                State::Chunked(mut req, mut d) => {
                    let Ok(used) = d.decode(&buf, &mut req.body) else {
                        return (out, End::HandedOver);
                    };
                    buf.drain(..used);
                    if d.is_done() {
                        out.push(req);
                        if close {
                            return (out, End::Closed);
                        }
                    } else {
                        state = State::Chunked(req, d);
                        break;
                    }
                }
            }
        }
    }
    (out, End::NeedMore)
}

/// The requests hyper's server reads from `input` written in the given
/// pieces, then the writing half closed: every request whose body it read
/// whole, in order.
pub async fn hyper_frames(input: &[u8], cuts: &[usize]) -> Vec<Framed> {
    let (mut client, server) = tokio::io::duplex(256 << 10);
    let seen: Arc<Mutex<Vec<Framed>>> = Arc::default();
    let service = {
        let seen = seen.clone();
        hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
            let seen = seen.clone();
            async move {
                let (parts, body) = req.into_parts();
                if let Ok(body) = body.collect().await {
                    seen.lock().unwrap().push(Framed {
                        method: parts.method.as_str().to_owned(),
                        target: parts.uri.to_string(),
                        fields: fields(&parts.headers),
                        body: body.to_bytes().to_vec(),
                    });
                }
                Ok::<_, std::convert::Infallible>(http::Response::new(Empty::<Bytes>::new()))
            }
        })
    };
    let conn = hyper::server::conn::http1::Builder::new()
        .half_close(true)
        .serve_connection(TokioIo::new(server), service);
    let conn = tokio::spawn(conn);
    let pieces = split(input, cuts);
    let peer = async move {
        for p in pieces {
            if client.write_all(&p).await.is_err() {
                break;
            }
            tokio::task::yield_now().await;
        }
        let _ = client.shutdown().await;
        let mut b = [0u8; 4096];
        while client.read(&mut b).await.unwrap_or(0) > 0 {}
    };
    tokio::time::timeout(Duration::from_secs(10), async {
        peer.await;
        let _ = conn.await;
    })
    .await
    .expect("hyper's server finished within 10 s");
    std::mem::take(&mut *seen.lock().unwrap())
}

/// Frames `input` both ways and holds the fast path to hyper (panics with
/// `what` on a difference). Returns the fast path's requests and end.
pub async fn same(input: &[u8], cuts: &[usize], what: &str) -> (Vec<Framed>, End) {
    let (ours, end) = fast_path_frames(input, cuts);
    let theirs = hyper_frames(input, cuts).await;
    let shown = || String::from_utf8_lossy(&input[..input.len().min(400)]).into_owned();
    for (i, req) in ours.iter().enumerate() {
        assert_eq!(
            Some(req),
            theirs.get(i),
            "{what}: request {i} framed differently from hyper in {:?} (cut at {cuts:?})",
            shown()
        );
    }
    if end != End::HandedOver {
        assert_eq!(
            ours.len(),
            theirs.len(),
            "{what}: hyper read more requests than the fast path from {:?} (cut at {cuts:?})",
            shown()
        );
    }
    (ours, end)
}
