//! The router's gateway connections keep a gateway's early answer.
//!
//! A gateway may answer (a 413, say) as soon as it has a request's head and
//! close without reading the body. The Console is then still sending, and
//! the write fails (reset or broken pipe) while the answer waits, whole, in
//! the socket. hyper's client reports the failed write and drops the answer
//! whenever the write fails before it read the answer: a 502 instead of the
//! gateway's status, now and then. The invoke fast path reads on after a
//! failed write; this connection wrapper gives the router the same: once
//! the peer is gone, writes succeed into nothing, so hyper goes on to read
//! what the gateway answered (or the end of the connection, which still
//! makes the call a 502).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use http::Uri;
use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// [`HttpConnector`] whose connections keep a gateway's early answer.
#[derive(Clone)]
pub struct EarlyAnswerConnector(pub HttpConnector);

impl tower::Service<Uri> for EarlyAnswerConnector {
    type Response = EarlyAnswerIo<TokioIo<TcpStream>>;
    type Error = <HttpConnector as tower::Service<Uri>>::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.0.poll_ready(cx)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let connecting = self.0.call(uri);
        Box::pin(async move { connecting.await.map(EarlyAnswerIo::new) })
    }
}

/// A connection whose writes, once the peer is gone, succeed into nothing
/// (reads go on as before).
pub struct EarlyAnswerIo<T> {
    io: T,
    peer_gone: bool,
}

impl<T> EarlyAnswerIo<T> {
    /// Wraps a connection whose peer has not gone yet.
    pub fn new(io: T) -> Self {
        Self {
            io,
            peer_gone: false,
        }
    }
}

/// Does a write error mean the peer closed (rather than a local failure)?
fn is_peer_gone(e: &io::Error) -> bool {
    matches!(
        e.kind(),
        io::ErrorKind::BrokenPipe
            | io::ErrorKind::ConnectionReset
            | io::ErrorKind::ConnectionAborted
    )
}

impl<T> EarlyAnswerIo<T> {
    /// A write's outcome, a peer-gone error turned into `ok`.
    fn absorb<R>(&mut self, res: Poll<io::Result<R>>, ok: R) -> Poll<io::Result<R>> {
        match res {
            Poll::Ready(Err(e)) if is_peer_gone(&e) => {
                tracing::debug!(error = %e, "the Runtime gateway closed while the request was sent; reading its answer");
                self.peer_gone = true;
                Poll::Ready(Ok(ok))
            }
            other => other,
        }
    }
}

impl<T: Read + Unpin> Read for EarlyAnswerIo<T> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_read(cx, buf)
    }
}

impl<T: Write + Unpin> Write for EarlyAnswerIo<T> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.peer_gone {
            return Poll::Ready(Ok(buf.len()));
        }
        let res = Pin::new(&mut this.io).poll_write(cx, buf);
        this.absorb(res, buf.len())
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let len = bufs.iter().map(|b| b.len()).sum();
        if this.peer_gone {
            return Poll::Ready(Ok(len));
        }
        let res = Pin::new(&mut this.io).poll_write_vectored(cx, bufs);
        this.absorb(res, len)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.peer_gone {
            return Poll::Ready(Ok(()));
        }
        let res = Pin::new(&mut this.io).poll_flush(cx);
        this.absorb(res, ())
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.peer_gone {
            return Poll::Ready(Ok(()));
        }
        let res = Pin::new(&mut this.io).poll_shutdown(cx);
        this.absorb(res, ())
    }
}

impl<T: Connection> Connection for EarlyAnswerIo<T> {
    fn connected(&self) -> Connected {
        self.io.connected()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hyper_util::rt::TokioIo;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// A peer that answers and closes with the request unread: the write
    /// that fails is absorbed, and the answer is still read.
    #[tokio::test]
    async fn the_answer_is_read_after_the_peer_closed_mid_request() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let peer = tokio::spawn(async move {
            let (mut s, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 16];
            s.read_exact(&mut head).await.unwrap();
            s.write_all(b"answer").await.unwrap();
            // The answer leaves before the close; closing with unread data
            // then sends a reset.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        });
        let tcp = TcpStream::connect(addr).await.unwrap();
        let mut io = TokioIo::new(EarlyAnswerIo::new(TokioIo::new(tcp)));
        let chunk = vec![b'x'; 64 * 1024];
        // Far more than socket buffers hold: the peer closes in the middle.
        for _ in 0..256 {
            io.write_all(&chunk).await.expect("writes are absorbed");
        }
        io.flush().await.unwrap();
        peer.await.unwrap();
        assert!(io.inner().peer_gone, "the peer's close was never seen");
        let mut got = Vec::new();
        let _ = io.read_to_end(&mut got).await;
        assert_eq!(got, b"answer");
    }
}
