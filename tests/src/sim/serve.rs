//! A TLS accept loop serving an axum router over HTTP/1.1 and HTTP/2 (with upgrades).

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use rustls::ServerConfig;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

use crate::sim::tls::common_name;

/// What is known about the peer of a TLS connection; inserted into each request's extensions.
#[derive(Clone, Debug)]
pub struct PeerInfo {
    pub remote: SocketAddr,
    /// Common Name of the verified client certificate, when one was presented.
    pub client_cn: Option<String>,
    /// The TLS version the connection negotiated (`TLSv1_3`).
    pub tls_version: Option<String>,
}

/// Bytes a handler leaves to be written on its connection before the next
/// answer there (the gateway's `extra` mode: an answer out of step by one).
/// Inserted into each request's extensions beside [`PeerInfo`].
#[derive(Clone, Default)]
pub struct Injector(Arc<std::sync::Mutex<Injected>>);

#[derive(Default)]
struct Injected {
    /// Left by a handler: written once the next request arrives.
    later: Vec<u8>,
    /// Written ahead of whatever is written next.
    pending: Vec<u8>,
}

impl Injector {
    /// Writes `bytes` ahead of the next answer on the connection: the one
    /// to the next request, not the answer being written now.
    pub fn before_next_answer(&self, bytes: &[u8]) {
        self.lock().later.extend_from_slice(bytes);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Injected> {
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// A connection that writes an [`Injector`]'s bytes first.
struct Injecting<S> {
    inner: S,
    injector: Injector,
}

impl<S: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Injecting<S> {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let res = std::pin::Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(res, std::task::Poll::Ready(Ok(()))) && buf.filled().len() > before {
            // A next request: what the last handler left goes ahead of its answer.
            let mut injected = self.injector.lock();
            let later = std::mem::take(&mut injected.later);
            injected.pending.extend_from_slice(&later);
        }
        res
    }
}

impl<S: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Injecting<S> {
    fn poll_write(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> std::task::Poll<std::io::Result<usize>> {
        use std::task::Poll;
        let this = &mut *self;
        let mut injected = this.injector.lock();
        while !injected.pending.is_empty() {
            match std::pin::Pin::new(&mut this.inner).poll_write(cx, &injected.pending) {
                Poll::Ready(Ok(0)) => {
                    return Poll::Ready(Err(std::io::ErrorKind::WriteZero.into()));
                }
                Poll::Ready(Ok(n)) => {
                    injected.pending.drain(..n);
                }
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
        }
        drop(injected);
        std::pin::Pin::new(&mut this.inner).poll_write(cx, buf)
    }

    fn poll_flush(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<std::io::Result<()>> {
        std::pin::Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// Concurrent HTTP/2 streams per connection.
const MAX_STREAMS: u32 = 4096;

/// Accepts TLS connections until `shutdown` is cancelled. Cancelling also drops every
/// connection accepted by this loop (upgraded connections are not tracked here).
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    router: Router,
    shutdown: CancellationToken,
) {
    let acceptor = TlsAcceptor::from(tls);
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (tcp, remote) = match accepted {
            Ok(pair) => pair,
            Err(err) => {
                tracing::warn!(error = %err, "accept failed");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let router = router.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            let stream = match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                Ok(Ok(stream)) => stream,
                Ok(Err(err)) => {
                    tracing::debug!(%remote, error = %err, "TLS handshake failed");
                    return;
                }
                Err(_) => {
                    tracing::debug!(%remote, "TLS handshake timed out");
                    return;
                }
            };
            let client_cn = stream
                .get_ref()
                .1
                .peer_certificates()
                .and_then(|certs| certs.first())
                .and_then(common_name);
            let tls_version = stream
                .get_ref()
                .1
                .protocol_version()
                .map(|v| format!("{v:?}"));
            let peer = PeerInfo {
                remote,
                client_cn,
                tls_version,
            };
            let injector = Injector::default();
            let stream = Injecting {
                inner: stream,
                injector: injector.clone(),
            };
            let service = router.map_request(move |mut req: http::Request<Incoming>| {
                req.extensions_mut().insert(peer.clone());
                req.extensions_mut().insert(injector.clone());
                req
            });
            let mut builder = Builder::new(TokioExecutor::new());
            // kube-apiserver multiplexes every log follower onto few HTTP/2 connections.
            builder
                .http2()
                .enable_connect_protocol()
                .max_concurrent_streams(MAX_STREAMS);
            let conn = builder.serve_connection_with_upgrades(
                TokioIo::new(stream),
                TowerToHyperService::new(service),
            );
            tokio::select! {
                () = shutdown.cancelled() => {}
                result = conn => {
                    if let Err(err) = result {
                        tracing::debug!(%remote, error = %err, "connection ended with an error");
                    }
                }
            }
        });
    }
}

/// Writes `contents` to `path` atomically (temporary file, then rename), so readers that poll
/// the file never see it half-written.
pub fn write_addr_file(path: &std::path::Path, contents: &str) -> std::io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)
}
