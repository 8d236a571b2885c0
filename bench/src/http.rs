//! A minimal HTTP/1.1 GET client for loopback listeners, with TLS (rustls)
//! or without, that hands out the response body as it arrives (chunked or
//! `Content-Length`). Enough to hold a thousand follow streams cheaply.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail, ensure};
use rustls::RootCertStore;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;

/// Largest response head accepted.
const MAX_HEAD: usize = 64 << 10;

/// `http(s)://127.0.0.1:PORT` or `localhost`: anything else is refused.
pub fn loopback_addr(url: &str) -> Result<(bool, SocketAddr)> {
    let (tls, rest) = if let Some(r) = url.strip_prefix("https://") {
        (true, r)
    } else if let Some(r) = url.strip_prefix("http://") {
        (false, r)
    } else {
        bail!("{url}: not an http(s) URL");
    };
    let authority = rest.split('/').next().unwrap_or_default();
    let (host, port) = authority
        .rsplit_once(':')
        .ok_or_else(|| anyhow!("{url}: no port"))?;
    ensure!(
        host == "127.0.0.1" || host == "localhost",
        "{url}: benchmarks only talk to 127.0.0.1"
    );
    let port: u16 = port.parse().with_context(|| format!("{url}: port"))?;
    Ok((tls, SocketAddr::from(([127, 0, 0, 1], port))))
}

/// A TLS listener on loopback, verified against a CA file.
#[derive(Clone)]
pub struct TlsTarget {
    connector: TlsConnector,
    addr: SocketAddr,
}

impl TlsTarget {
    pub fn new(url: &str, ca_file: &Path) -> Result<Self> {
        let (tls, addr) = loopback_addr(url)?;
        ensure!(tls, "{url}: expected https");
        let pem =
            std::fs::read(ca_file).with_context(|| format!("reading {}", ca_file.display()))?;
        let mut roots = RootCertStore::empty();
        for cert in CertificateDer::pem_slice_iter(&pem) {
            roots.add(cert.context("CA certificate")?)?;
        }
        let config = rustls::ClientConfig::builder()
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(Self {
            connector: TlsConnector::from(Arc::new(config)),
            addr,
        })
    }

    /// Sends `GET path` with a bearer token and reads the response head.
    pub async fn get(&self, path: &str, token: &str) -> Result<Response<TlsStream<TcpStream>>> {
        let tcp = TcpStream::connect(self.addr).await?;
        tcp.set_nodelay(true)?;
        let name = ServerName::IpAddress(self.addr.ip().into());
        let tls = self.connector.connect(name, tcp).await?;
        request(tls, &self.addr.to_string(), path, Some(token)).await
    }
}

/// `GET url` over plain HTTP on loopback; the whole body as text.
pub async fn get_plain(url: &str) -> Result<String> {
    let (tls, addr) = loopback_addr(url)?;
    ensure!(!tls, "{url}: expected http");
    let path = url
        .split_once("://")
        .and_then(|(_, r)| r.find('/').map(|i| &r[i..]))
        .unwrap_or("/");
    let tcp = TcpStream::connect(addr).await?;
    let resp = request(tcp, &addr.to_string(), path, None).await?;
    ensure!(resp.status == 200, "GET {url}: status {}", resp.status);
    Ok(String::from_utf8_lossy(&resp.body.read_all().await?).into_owned())
}

/// Writes the request and reads the response head.
pub async fn request<S: AsyncRead + AsyncWrite + Unpin>(
    mut stream: S,
    host: &str,
    path: &str,
    token: Option<&str>,
) -> Result<Response<S>> {
    let mut req = format!("GET {path} HTTP/1.1\r\nHost: {host}\r\nAccept: */*\r\n");
    if let Some(t) = token {
        req.push_str(&format!("Authorization: Bearer {t}\r\n"));
    }
    req.push_str("Connection: close\r\n\r\n");
    stream.write_all(req.as_bytes()).await?;
    stream.flush().await?;
    read_response(stream, Vec::with_capacity(4096)).await
}

/// Reads a response head from `stream`, `buf` holding bytes already received.
pub async fn read_response<S: AsyncRead + Unpin>(
    mut stream: S,
    mut buf: Vec<u8>,
) -> Result<Response<S>> {
    let end = loop {
        if let Some(i) = memchr::memmem::find(&buf, b"\r\n\r\n") {
            break i;
        }
        ensure!(buf.len() < MAX_HEAD, "response head too large");
        let n = stream.read_buf(&mut buf).await?;
        ensure!(n > 0, "connection closed before the response head");
    };
    let head = std::str::from_utf8(&buf[..end]).context("response head is not UTF-8")?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next().unwrap_or_default();
    let status: u16 = status_line
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| anyhow!("bad status line {status_line:?}"))?;
    let mut chunked = false;
    let mut length = None;
    let mut close = false;
    for l in lines {
        let Some((k, v)) = l.split_once(':') else {
            continue;
        };
        let v = v.trim();
        if k.eq_ignore_ascii_case("transfer-encoding") && v.eq_ignore_ascii_case("chunked") {
            chunked = true;
        } else if k.eq_ignore_ascii_case("content-length") {
            length = Some(v.parse::<u64>().context("content-length")?);
        } else if k.eq_ignore_ascii_case("connection") && v.eq_ignore_ascii_case("close") {
            close = true;
        }
    }
    let rest = buf[end + 4..].to_vec();
    let framing = match (chunked, length) {
        (true, _) => Framing::Chunked(ChunkState::Size),
        (false, Some(n)) => Framing::Length(n),
        (false, None) => Framing::UntilClose,
    };
    let close = close || matches!(framing, Framing::UntilClose);
    Ok(Response {
        status,
        close,
        body: Body {
            stream,
            buf: rest,
            framing,
        },
    })
}

/// A response head and its body, still to be read.
pub struct Response<S> {
    pub status: u16,
    /// The server closes the connection after this response.
    pub close: bool,
    pub body: Body<S>,
}

#[derive(Debug)]
enum ChunkState {
    Size,
    Data(u64),
    DataEnd,
    Trailers,
    Done,
}

#[derive(Debug)]
enum Framing {
    Chunked(ChunkState),
    Length(u64),
    UntilClose,
}

/// A response body read piece by piece.
pub struct Body<S> {
    stream: S,
    /// Received bytes not yet decoded.
    buf: Vec<u8>,
    framing: Framing,
}

/// Reads more from the connection into `buf`; `false` at its end.
async fn fill<S: AsyncRead + Unpin>(stream: &mut S, buf: &mut Vec<u8>) -> Result<bool> {
    if buf.capacity() - buf.len() < 4096 {
        buf.reserve(16 << 10);
    }
    Ok(stream.read_buf(buf).await? > 0)
}

impl<S: AsyncRead + Unpin> Body<S> {
    /// The next piece of body data; `None` at the end of the body.
    pub async fn next(&mut self) -> Result<Option<Vec<u8>>> {
        loop {
            match &mut self.framing {
                Framing::Length(0) => return Ok(None),
                Framing::Length(n) => {
                    if self.buf.is_empty() && !fill(&mut self.stream, &mut self.buf).await? {
                        bail!("connection closed {n} bytes before the end of the body");
                    }
                    let take = (*n).min(self.buf.len() as u64) as usize;
                    *n -= take as u64;
                    return Ok(Some(self.buf.drain(..take).collect()));
                }
                Framing::UntilClose => {
                    if self.buf.is_empty() && !fill(&mut self.stream, &mut self.buf).await? {
                        return Ok(None);
                    }
                    return Ok(Some(std::mem::take(&mut self.buf)));
                }
                Framing::Chunked(state) => match state {
                    ChunkState::Done => return Ok(None),
                    ChunkState::Size => {
                        if let Some(i) = memchr::memmem::find(&self.buf, b"\r\n") {
                            let line = std::str::from_utf8(&self.buf[..i])?;
                            let hex = line.split(';').next().unwrap_or_default().trim();
                            let size = u64::from_str_radix(hex, 16)
                                .with_context(|| format!("chunk size {line:?}"))?;
                            self.buf.drain(..i + 2);
                            *state = if size == 0 {
                                ChunkState::Trailers
                            } else {
                                ChunkState::Data(size)
                            };
                        } else {
                            ensure!(self.buf.len() < 1024, "chunk size line too long");
                            if !fill(&mut self.stream, &mut self.buf).await? {
                                bail!("connection closed inside a chunked body");
                            }
                        }
                    }
                    ChunkState::Data(n) => {
                        if self.buf.is_empty() && !fill(&mut self.stream, &mut self.buf).await? {
                            bail!("connection closed inside a chunk");
                        }
                        let take = (*n).min(self.buf.len() as u64) as usize;
                        *n -= take as u64;
                        if *n == 0 {
                            *state = ChunkState::DataEnd;
                        }
                        return Ok(Some(self.buf.drain(..take).collect()));
                    }
                    ChunkState::DataEnd => {
                        if self.buf.len() >= 2 {
                            ensure!(&self.buf[..2] == b"\r\n", "chunk not followed by CRLF");
                            self.buf.drain(..2);
                            *state = ChunkState::Size;
                        } else if !fill(&mut self.stream, &mut self.buf).await? {
                            bail!("connection closed after a chunk");
                        }
                    }
                    ChunkState::Trailers => {
                        if let Some(i) = memchr::memmem::find(&self.buf, b"\r\n") {
                            let empty = i == 0;
                            self.buf.drain(..i + 2);
                            if empty {
                                *state = ChunkState::Done;
                            }
                        } else if !fill(&mut self.stream, &mut self.buf).await? {
                            // A peer that closes right after the last chunk is tolerated.
                            *state = ChunkState::Done;
                        }
                    }
                },
            }
        }
    }

    /// The whole body, the connection and any bytes received past the body
    /// (for a connection kept alive).
    pub async fn finish(mut self) -> Result<(Vec<u8>, S, Vec<u8>)> {
        let mut out = Vec::new();
        while let Some(piece) = self.next().await? {
            out.extend_from_slice(&piece);
        }
        Ok((out, self.stream, self.buf))
    }

    /// The whole body.
    pub async fn read_all(mut self) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        while let Some(piece) = self.next().await? {
            out.extend_from_slice(&piece);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn parse(raw: &[u8]) -> (u16, Vec<Vec<u8>>) {
        let (client, mut server) = tokio::io::duplex(64);
        let raw = raw.to_vec();
        let writer = tokio::spawn(async move {
            let mut req = Vec::new();
            while memchr::memmem::find(&req, b"\r\n\r\n").is_none() {
                let mut piece = [0u8; 64];
                let n = server.read(&mut piece).await.unwrap();
                assert!(n > 0, "request cut short");
                req.extend_from_slice(&piece[..n]);
            }
            assert!(req.starts_with(b"GET /x HTTP/1.1\r\n"));
            // Dribble the response in small pieces to exercise every state.
            for piece in raw.chunks(3) {
                server.write_all(piece).await.unwrap();
            }
        });
        let mut resp = request(client, "127.0.0.1:1", "/x", Some("t"))
            .await
            .unwrap();
        let mut pieces = Vec::new();
        while let Some(p) = resp.body.next().await.unwrap() {
            pieces.push(p);
        }
        writer.await.unwrap();
        (resp.status, pieces)
    }

    #[tokio::test]
    async fn decodes_chunked_bodies() {
        let raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n1;ext=1\r\n\n\r\n0\r\nX-T: 1\r\n\r\n";
        let (status, pieces) = parse(raw).await;
        assert_eq!(status, 200);
        assert_eq!(pieces.concat(), b"hello\n");
    }

    #[tokio::test]
    async fn reads_length_bodies() {
        let raw = b"HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\nnope";
        let (status, pieces) = parse(raw).await;
        assert_eq!(status, 404);
        assert_eq!(pieces.concat(), b"nope");
    }

    #[test]
    fn only_loopback() {
        assert!(loopback_addr("https://127.0.0.1:8443").is_ok());
        assert!(loopback_addr("http://localhost:80/metrics").is_ok());
        assert!(loopback_addr("https://10.0.0.1:8443").is_err());
        assert!(loopback_addr("https://example.com:443").is_err());
    }
}
