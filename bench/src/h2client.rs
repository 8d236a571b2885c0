//! HTTP/2 over TLS with a client certificate: many streams multiplexed over
//! few connections, as kube-apiserver's aggregator connects to an aggregated
//! API server (front-proxy certificate, `X-Remote-User` / `X-Remote-Group`).

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, ensure};
use bytes::Bytes;
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;

use crate::http::loopback_addr;

/// Receive window of one stream and of one connection; the client reads
/// every stream as its data arrives and gives the window back at once.
const STREAM_WINDOW: u32 = 1 << 20;
const CONNECTION_WINDOW: u32 = 16 << 20;

/// An HTTPS listener on loopback reached over HTTP/2 with a client certificate.
#[derive(Clone)]
pub struct H2Target {
    connector: TlsConnector,
    addr: SocketAddr,
}

impl H2Target {
    pub fn new(url: &str, ca_file: &Path, cert: &Path, key: &Path) -> Result<Self> {
        let (tls, addr) = loopback_addr(url)?;
        ensure!(tls, "{url}: expected https");
        let pem =
            std::fs::read(ca_file).with_context(|| format!("reading {}", ca_file.display()))?;
        let mut roots = RootCertStore::empty();
        for c in CertificateDer::pem_slice_iter(&pem) {
            roots.add(c.context("CA certificate")?)?;
        }
        let chain = CertificateDer::pem_file_iter(cert)
            .with_context(|| format!("reading {}", cert.display()))?
            .collect::<Result<Vec<_>, _>>()?;
        let key = PrivateKeyDer::from_pem_file(key)
            .with_context(|| format!("reading {}", key.display()))?;
        let mut config = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_client_auth_cert(chain, key)?;
        config.alpn_protocols = vec![b"h2".to_vec()];
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
            addr,
        })
    }

    pub fn authority(&self) -> String {
        self.addr.to_string()
    }

    /// Opens one connection; its driver runs on a task of its own until the
    /// connection closes.
    pub async fn connect(&self) -> Result<h2::client::SendRequest<Bytes>> {
        let tcp = TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let name = ServerName::IpAddress(self.addr.ip().into());
        let tls = self.connector.connect(name, tcp).await?;
        ensure!(
            tls.get_ref().1.alpn_protocol() == Some(&b"h2"[..]),
            "{}: the server did not agree to HTTP/2",
            self.addr
        );
        let (send, conn) = h2::client::Builder::new()
            .initial_window_size(STREAM_WINDOW)
            .initial_connection_window_size(CONNECTION_WINDOW)
            .handshake::<_, Bytes>(tls)
            .await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(send.ready().await?)
    }
}

/// A `GET` on an open connection with the given headers; the response head
/// and its body stream.
pub async fn get(
    send: &h2::client::SendRequest<Bytes>,
    authority: &str,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<(http::StatusCode, h2::RecvStream)> {
    let mut req = http::Request::builder()
        .method("GET")
        .uri(format!("https://{authority}{path}"));
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let req = req.body(())?;
    let mut send = send.clone().ready().await?;
    let (resp, _) = send.send_request(req, true)?;
    let resp = resp.await?;
    let status = resp.status();
    Ok((status, resp.into_body()))
}

/// The next piece of a body, its flow-control window given back; `None` at the end.
pub async fn next(body: &mut h2::RecvStream) -> Result<Option<Bytes>> {
    match body.data().await {
        None => Ok(None),
        Some(piece) => {
            let piece = piece?;
            let _ = body.flow_control().release_capacity(piece.len());
            Ok(Some(piece))
        }
    }
}
