//! Keep-alive HTTP/1.1 over TLS (optionally with a client certificate) and
//! WebSocket connections for the Console's `/api` and `/v1` benchmarks.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use anyhow::{Context, Result, bail, ensure};
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::io::AsyncWriteExt;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::{HeaderName, HeaderValue};

use crate::http::{loopback_addr, read_response};

/// A TLS listener on loopback: its address and how to reach it.
#[derive(Clone)]
pub struct TlsClient {
    connector: TlsConnector,
    addr: SocketAddr,
    /// TCP+TLS connections opened so far.
    pub connects: Arc<AtomicU64>,
}

impl TlsClient {
    /// Verifies the server against `ca_file`; presents `cert`/`key` when given.
    pub fn new(url: &str, ca_file: &Path, client_cert: Option<(&Path, &Path)>) -> Result<Self> {
        let (tls, addr) = loopback_addr(url)?;
        ensure!(tls, "{url}: expected https");
        let pem =
            std::fs::read(ca_file).with_context(|| format!("reading {}", ca_file.display()))?;
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            roots.add(cert.context("CA certificate")?)?;
        }
        let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
        let mut config = match client_cert {
            Some((cert, key)) => {
                let chain = CertificateDer::pem_file_iter(cert)
                    .with_context(|| format!("reading {}", cert.display()))?
                    .collect::<Result<Vec<_>, _>>()?;
                let key = PrivateKeyDer::from_pem_file(key)
                    .with_context(|| format!("reading {}", key.display()))?;
                builder.with_client_auth_cert(chain, key)?
            }
            None => builder.with_no_client_auth(),
        };
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
            addr,
            connects: Arc::default(),
        })
    }

    pub async fn connect(&self) -> Result<TlsStream<TcpStream>> {
        let tcp = TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let name = ServerName::IpAddress(self.addr.ip().into());
        let tls = self.connector.connect(name, tcp).await?;
        self.connects.fetch_add(1, Ordering::Relaxed);
        Ok(tls)
    }

    /// A connection that is opened on first use and kept alive.
    pub fn keep_alive(&self) -> Conn {
        Conn {
            client: self.clone(),
            stream: None,
        }
    }

    /// Opens a WebSocket on `path` with optional extra headers.
    pub async fn websocket(
        &self,
        path: &str,
        headers: &[(&str, &str)],
    ) -> Result<WebSocketStream<TlsStream<TcpStream>>> {
        let stream = self.connect().await?;
        let url = format!("wss://{}{path}", self.addr);
        let mut req = url.as_str().into_client_request()?;
        for (k, v) in headers {
            req.headers_mut().insert(
                HeaderName::from_bytes(k.as_bytes())?,
                HeaderValue::from_str(v)?,
            );
        }
        let (ws, _) = tokio_tungstenite::client_async(req, stream)
            .await
            .with_context(|| format!("opening the WebSocket {path}"))?;
        Ok(ws)
    }
}

/// One keep-alive connection; requests go one after another.
pub struct Conn {
    client: TlsClient,
    stream: Option<TlsStream<TcpStream>>,
}

impl Conn {
    /// Sends one request and reads the whole response: status and body.
    pub async fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<(u16, Vec<u8>)> {
        let mut stream = match self.stream.take() {
            Some(s) => s,
            None => self.client.connect().await?,
        };
        let mut req = format!(
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nAccept: */*\r\nContent-Length: {}\r\n",
            self.client.addr,
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        let mut out = req.into_bytes();
        out.extend_from_slice(body);
        stream.write_all(&out).await?;
        stream.flush().await?;
        let resp = read_response(stream, Vec::new()).await?;
        let (status, close) = (resp.status, resp.close);
        let (body, stream, rest) = resp.body.finish().await?;
        if !close {
            if !rest.is_empty() {
                bail!("{} bytes after a response", rest.len());
            }
            self.stream = Some(stream);
        }
        Ok((status, body))
    }
}
