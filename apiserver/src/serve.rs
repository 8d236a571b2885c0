//! The HTTPS accept loop shared by both listeners. `axum::serve` cannot see
//! client certificates, so connections are accepted with tokio-rustls and
//! served with hyper-util; each request carries its connection's peer
//! certificates as a [`PeerCertificates`] extension.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use rustls_pki_types::CertificateDer;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

/// The certificate chain the client presented during the handshake (empty when none).
#[derive(Clone, Debug, Default)]
pub struct PeerCertificates(pub Arc<Vec<CertificateDer<'static>>>);

/// The client's socket address.
#[derive(Clone, Copy, Debug)]
pub struct RemoteAddr(pub SocketAddr);

/// Limits of the connection layer.
#[derive(Clone, Copy, Debug)]
pub struct ConnLimits {
    pub handshake_timeout: Duration,
    /// Largest request header block accepted (HTTP/1.1 read buffer and HTTP/2 header list).
    pub max_header_bytes: usize,
    /// After `shutdown`, how long open connections may take to finish.
    pub drain_timeout: Duration,
}

impl Default for ConnLimits {
    fn default() -> Self {
        Self {
            handshake_timeout: Duration::from_secs(10),
            max_header_bytes: 16 << 10,
            drain_timeout: Duration::from_secs(25),
        }
    }
}

/// Accepts TLS connections on `listener` and serves `router` on each until
/// `shutdown` resolves; open connections then finish gracefully.
pub async fn serve_tls(
    listener: TcpListener,
    tls: Arc<rustls::ServerConfig>,
    router: Router,
    limits: ConnLimits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) {
    let acceptor = TlsAcceptor::from(tls);
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
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
        let _ = tcp.set_nodelay(true);
        let acceptor = acceptor.clone();
        let router = router.clone();
        let watcher = graceful.watcher();
        tokio::spawn(async move {
            let tls =
                match tokio::time::timeout(limits.handshake_timeout, acceptor.accept(tcp)).await {
                    Ok(Ok(s)) => s,
                    Ok(Err(error)) => {
                        tracing::debug!(%error, %remote, "TLS handshake failed");
                        return;
                    }
                    Err(_) => {
                        tracing::debug!(%remote, "TLS handshake timed out");
                        return;
                    }
                };
            let chain: Vec<CertificateDer<'static>> = tls
                .get_ref()
                .1
                .peer_certificates()
                .map(|c| c.iter().map(|c| c.clone().into_owned()).collect())
                .unwrap_or_default();
            let peer = PeerCertificates(Arc::new(chain));
            let svc = router.map_request(move |mut req: http::Request<hyper::body::Incoming>| {
                req.extensions_mut().insert(peer.clone());
                req.extensions_mut().insert(RemoteAddr(remote));
                req.map(axum::body::Body::new)
            });
            let mut builder = Builder::new(TokioExecutor::new());
            builder
                .http1()
                .timer(hyper_util::rt::TokioTimer::new())
                .max_buf_size(limits.max_header_bytes.max(8192))
                .header_read_timeout(Duration::from_secs(30));
            builder
                .http2()
                .timer(hyper_util::rt::TokioTimer::new())
                .max_header_list_size(limits.max_header_bytes as u32);
            let conn = builder
                .serve_connection_with_upgrades(TokioIo::new(tls), TowerToHyperService::new(svc));
            if let Err(error) = watcher.watch(conn.into_owned()).await {
                tracing::debug!(%error, %remote, "connection ended with an error");
            }
        });
    }
    // Idle connections close now (HTTP/2 with GOAWAY); open requests get a
    // bounded time to finish.
    let _ = tokio::time::timeout(limits.drain_timeout, graceful.shutdown()).await;
}
