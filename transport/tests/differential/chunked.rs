//! The gateway answer's chunked decoding (`h1::Chunked`, used by the `/v1`
//! HTTP/1.1 fast path) against hyper's client, which decodes the same
//! answers on the router path.

use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty};
use hyper_util::rt::TokioIo;
use kruntimes_transport::h1::Chunked;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::split;

/// What a decoder made of a body: its data, or a refusal (incomplete bodies
/// included: the gateway closes after the body).
pub type Outcome = Result<Vec<u8>, ()>;

/// hyper's client reads the answer over an in-memory pipe, `body` written in
/// the given pieces, then the pipe closed.
pub async fn hyper_decodes(body: &[u8], cuts: &[usize]) -> Outcome {
    let (client, mut server) = tokio::io::duplex(256 << 10);
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(client))
        .await
        .expect("handshake");
    tokio::spawn(conn);
    let pieces: Vec<Vec<u8>> = split(body, cuts);
    let gateway = tokio::spawn(async move {
        let mut head = Vec::new();
        let mut b = [0u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") {
            let n = server.read(&mut b).await.unwrap_or(0);
            if n == 0 {
                return;
            }
            head.extend_from_slice(&b[..n]);
        }
        let _ = server
            .write_all(b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n")
            .await;
        for p in pieces {
            if server.write_all(&p).await.is_err() {
                return;
            }
            tokio::task::yield_now().await;
        }
        let _ = server.shutdown().await;
        // Keep reading so the client never sees a reset instead of the end.
        while server.read(&mut b).await.unwrap_or(0) > 0 {}
    });
    let req = http::Request::get("/")
        .header("host", "gateway")
        .body(Empty::<Bytes>::new());
    let out = async {
        let resp = send.send_request(req.unwrap()).await.map_err(|_| ())?;
        let body = resp.into_body().collect().await.map_err(|_| ())?;
        Ok(body.to_bytes().to_vec())
    };
    let out = tokio::time::timeout(Duration::from_secs(10), out)
        .await
        .expect("hyper's client finished within 10 s");
    gateway.abort();
    out
}

/// `h1::Chunked` over the same pieces, as the fast path feeds it: what is
/// not consumed stays in the buffer for the next read.
pub fn chunked_decodes(body: &[u8], cuts: &[usize]) -> Outcome {
    let mut d = Chunked::default();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    for p in split(body, cuts) {
        buf.extend_from_slice(&p);
        let used = d.decode(&buf, &mut out).map_err(|_| ())?;
        buf.drain(..used);
        if d.is_done() {
            return Ok(out);
        }
    }
    Err(())
}

/// Both decoders over the same body and split: they must accept with the
/// same data or both refuse (panics otherwise, naming `what`).
pub async fn same(body: &[u8], cuts: &[usize], what: &str) -> Outcome {
    let theirs = hyper_decodes(body, cuts).await;
    let ours = chunked_decodes(body, cuts);
    assert_eq!(
        ours.is_ok(),
        theirs.is_ok(),
        "{what}: h1::Chunked {} and hyper {} the body {:?} (cut at {cuts:?})",
        if ours.is_ok() { "accepts" } else { "refuses" },
        if theirs.is_ok() { "accepts" } else { "refuses" },
        String::from_utf8_lossy(&body[..body.len().min(300)]),
    );
    assert_eq!(ours, theirs, "{what}: different data");
    ours
}
