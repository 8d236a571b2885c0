//! The TLS stream (`tls_stream`, records on rustls's unbuffered API)
//! against tokio-rustls at the other end, over a transport that reads and
//! writes in pieces of any size and can alter one byte it reads. Shared by
//! the property tests in `src/tls_stream.rs` (which include this file by
//! path) and the `tls_stream` fuzz target (through `mod.rs`); the including
//! module names the stream's API `tls_api`.

use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll, ready};

use rustls::pki_types::{PrivateKeyDer, ServerName};
use rustls::server::WebPkiClientVerifier;
use rustls::{ClientConfig, RootCertStore, ServerConfig};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, DuplexStream, ReadBuf};

use super::tls_api::{ClientStream, ServerStream, accept, connect};

/// No byte is to be altered.
const NO_FLIP: u64 = u64::MAX;

/// A transport whose reads and writes each take at most the next size of
/// a cycle, and which may flip a bit of one byte it reads.
pub struct Chop<IO> {
    io: IO,
    sizes: Vec<usize>,
    at: usize,
    /// Bytes read so far.
    read: u64,
    /// The offset (in bytes read) of the byte to alter, or [`NO_FLIP`].
    flip: Arc<AtomicU64>,
}

impl<IO> Chop<IO> {
    fn new(io: IO, sizes: Vec<usize>) -> Self {
        Self {
            io,
            sizes: if sizes.is_empty() {
                vec![1 << 14]
            } else {
                sizes
            },
            at: 0,
            read: 0,
            flip: Arc::new(AtomicU64::new(NO_FLIP)),
        }
    }

    fn next_size(&mut self) -> usize {
        let n = self.sizes[self.at % self.sizes.len()];
        self.at += 1;
        n.max(1)
    }
}

impl<IO: AsyncRead + Unpin> AsyncRead for Chop<IO> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let n = self.next_size().min(buf.remaining());
        let mut tmp = vec![0u8; n];
        let mut small = ReadBuf::new(&mut tmp);
        ready!(Pin::new(&mut self.io).poll_read(cx, &mut small))?;
        let mut got = small.filled().to_vec();
        let (from, to) = (self.read, self.read + got.len() as u64);
        let at = self.flip.load(Ordering::Relaxed);
        if (from..to).contains(&at) {
            got[(at - from) as usize] ^= 0x20;
            self.flip.store(NO_FLIP, Ordering::Relaxed);
        }
        self.read = to;
        buf.put_slice(&got);
        Poll::Ready(Ok(()))
    }
}

impl<IO: AsyncWrite + Unpin> AsyncWrite for Chop<IO> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let n = self.next_size().min(buf.len());
        Pin::new(&mut self.io).poll_write(cx, &buf[..n])
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// One step of an exchange between the stream and tokio-rustls.
#[derive(Clone, Debug)]
pub enum Step {
    /// `n` bytes one way (from the stream under test when `ours`), read
    /// `chunk` bytes at a time.
    Send { ours: bool, n: usize, chunk: usize },
    /// tokio-rustls asks for new traffic keys.
    KeyUpdate,
}

/// A server and a client configuration under one CA; the server requires
/// the client's certificate.
pub struct Pki {
    pub server: Arc<ServerConfig>,
    pub client: Arc<ClientConfig>,
}

/// The configurations every case shares (key generation is slow).
pub fn shared_pki() -> &'static Pki {
    static PKI: OnceLock<Pki> = OnceLock::new();
    PKI.get_or_init(|| {
        let ca_key = rcgen::KeyPair::generate().expect("a CA key");
        let mut ca = rcgen::CertificateParams::new(Vec::<String>::new()).expect("CA params");
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        let ca_cert = ca.self_signed(&ca_key).expect("a CA");
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let issue = |names: Vec<String>| {
            let key = rcgen::KeyPair::generate().expect("a key");
            let cert = rcgen::CertificateParams::new(names)
                .expect("params")
                .signed_by(&key, &issuer)
                .expect("a certificate");
            (
                vec![cert.der().clone()],
                PrivateKeyDer::Pkcs8(key.serialize_der().into()),
            )
        };
        let (server_chain, server_key) = issue(vec!["localhost".into()]);
        let (client_chain, client_key) = issue(vec![]);
        let mut roots = RootCertStore::empty();
        roots.add(ca_cert.der().clone()).expect("the CA as a root");
        let roots = Arc::new(roots);
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let verifier = WebPkiClientVerifier::builder_with_provider(roots.clone(), provider.clone())
            .build()
            .expect("a client verifier");
        let server = ServerConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_client_cert_verifier(verifier)
            .with_single_cert(server_chain, server_key)
            .expect("the server certificate");
        let client = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .expect("TLS versions")
            .with_root_certificates(roots)
            .with_client_auth_cert(client_chain, client_key)
            .expect("the client certificate");
        Pki {
            server: Arc::new(server),
            client: Arc::new(client),
        }
    })
}

/// The stream under test, over a [`Chop`] transport.
pub type Ours = Either<ServerStream<Chop<DuplexStream>>, ClientStream<Chop<DuplexStream>>>;
/// tokio-rustls at the other end.
pub type Peer = Either<
    tokio_rustls::client::TlsStream<DuplexStream>,
    tokio_rustls::server::TlsStream<DuplexStream>,
>;

/// The stream under test (a server when `server`, over a transport cut
/// into `sizes`) and tokio-rustls at the other end, after the handshake;
/// and the handle that picks a byte of what the stream reads to alter.
pub async fn with_peer(server: bool, sizes: Vec<usize>) -> (Ours, Peer, Arc<AtomicU64>) {
    let pki = shared_pki();
    let (ours_io, peer_io) = tokio::io::duplex(1 << 15);
    let ours_io = Chop::new(ours_io, sizes);
    let flip = ours_io.flip.clone();
    let name = ServerName::try_from("localhost").expect("a name");
    if server {
        let peer = tokio_rustls::TlsConnector::from(pki.client.clone()).connect(name, peer_io);
        let (ours, peer) = tokio::join!(accept(pki.server.clone(), ours_io), peer);
        (
            Either::A(ours.expect("our handshake")),
            Either::A(peer.expect("the peer's handshake")),
            flip,
        )
    } else {
        let peer = tokio_rustls::TlsAcceptor::from(pki.server.clone()).accept(peer_io);
        let (ours, peer) = tokio::join!(connect(pki.client.clone(), name, ours_io), peer);
        (
            Either::B(ours.expect("our handshake")),
            Either::B(peer.expect("the peer's handshake")),
            flip,
        )
    }
}

/// Sends `n` patterned bytes one way while reading them the other way in
/// reads of `chunk` bytes; every byte must arrive, in order.
pub async fn transfer<A, B>(from: &mut A, to: &mut B, n: usize, chunk: usize)
where
    A: AsyncWrite + Unpin,
    B: AsyncRead + Unpin,
{
    let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
    let write = async {
        from.write_all(&data).await.expect("write");
        from.flush().await.expect("flush");
    };
    let read = async {
        let mut got = Vec::with_capacity(n);
        let mut buf = vec![0; chunk.max(1)];
        while got.len() < n {
            let k = to.read(&mut buf).await.expect("read");
            assert!(k > 0, "end of stream after {} of {n} bytes", got.len());
            got.extend_from_slice(&buf[..k]);
        }
        got
    };
    let ((), got) = tokio::join!(write, read);
    assert!(got == data, "bytes differ");
}

/// Any sequence of transfers both ways and key updates delivers every byte
/// in order, with nothing left unread; close_notify then ends each
/// direction as an end of stream. Returns both ends, closed, for more checks.
pub async fn exchange(server: bool, sizes: Vec<usize>, steps: &[Step]) -> (Ours, Peer) {
    let (mut ours, mut peer, _) = with_peer(server, sizes).await;
    for s in steps {
        match *s {
            Step::Send {
                ours: true,
                n,
                chunk,
            } => transfer(&mut ours, &mut peer, n, chunk).await,
            Step::Send {
                ours: false,
                n,
                chunk,
            } => transfer(&mut peer, &mut ours, n, chunk).await,
            Step::KeyUpdate => match &mut peer {
                Either::A(p) => p.get_mut().1.refresh_traffic_keys().expect("a key update"),
                Either::B(p) => p.get_mut().1.refresh_traffic_keys().expect("a key update"),
            },
        }
    }
    // The next transfer carries a pending key update either way.
    transfer(&mut peer, &mut ours, 10, 10).await;
    transfer(&mut ours, &mut peer, 10, 10).await;
    let unread = match &ours {
        Either::A(s) => s.has_buffered(),
        Either::B(s) => s.has_buffered(),
    };
    assert!(
        !unread,
        "received bytes left unread after the last transfer"
    );
    ours.shutdown().await.expect("our close_notify");
    let mut rest = Vec::new();
    peer.read_to_end(&mut rest)
        .await
        .expect("the peer reads to the end");
    assert!(
        rest.is_empty(),
        "{} bytes after the last transfer",
        rest.len()
    );
    peer.shutdown().await.expect("the peer's close_notify");
    ours.read_to_end(&mut rest)
        .await
        .expect("we read to the end");
    assert!(
        rest.is_empty(),
        "{} bytes after the last transfer",
        rest.len()
    );
    (ours, peer)
}

/// `n` bytes from tokio-rustls with the byte at `at` (modulo `n`, counted
/// from the first record after the handshake) altered in transit: nothing
/// altered is delivered. The stream fails having delivered a prefix of
/// what was sent, or, when the byte is one TLS ignores, delivers all of it.
pub async fn altered(server: bool, sizes: Vec<usize>, n: usize, at: u64) {
    let n = n.max(1);
    let (mut ours, mut peer, flip) = with_peer(server, sizes).await;
    let read_so_far = match &ours {
        Either::A(s) => s.get_ref().read,
        Either::B(s) => s.get_ref().read,
    };
    flip.store(read_so_far + at % n as u64, Ordering::Relaxed);
    let data: Vec<u8> = (0..n).map(|i| (i * 7 % 251) as u8).collect();
    let send = async {
        // The stream may fail first and stop reading.
        let _ = peer.write_all(&data).await;
        let _ = peer.shutdown().await;
    };
    let read = async {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 4096];
        let end = loop {
            match ours.read(&mut buf).await {
                Ok(0) => break Ok(()),
                Ok(k) => got.extend_from_slice(&buf[..k]),
                Err(e) => break Err(e),
            }
        };
        (got, end)
    };
    // Once the stream fails it reads no more, and the peer's writes would
    // wait on the full pipe for ever: the writer is not waited for then.
    tokio::pin!(send, read);
    let (got, end) = tokio::select! {
        biased;
        r = &mut read => r,
        () = &mut send => read.await,
    };
    // rustls reads a record of any version 0x03XX and authenticates TLS 1.3
    // records as 0x0303 whatever their header says (tokio-rustls alike), so
    // an altered low byte of a record's version changes nothing: then the
    // stream must deliver exactly what was sent and end cleanly.
    match end {
        Err(_) => assert!(
            got.len() < n && got[..] == data[..got.len()],
            "altered bytes were delivered"
        ),
        Ok(()) => assert!(
            got == data,
            "an altered stream ended cleanly after {} of {n} bytes, {}",
            got.len(),
            if data.starts_with(&got) {
                "a prefix of them"
            } else {
                "not what was sent"
            }
        ),
    }
}

/// One of two stream types, as one reader and writer.
pub enum Either<A, B> {
    A(A),
    B(B),
}

impl<A: AsyncRead + Unpin, B: AsyncRead + Unpin> AsyncRead for Either<A, B> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Either::A(a) => Pin::new(a).poll_read(cx, buf),
            Either::B(b) => Pin::new(b).poll_read(cx, buf),
        }
    }
}

impl<A: AsyncWrite + Unpin, B: AsyncWrite + Unpin> AsyncWrite for Either<A, B> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Either::A(a) => Pin::new(a).poll_write(cx, buf),
            Either::B(b) => Pin::new(b).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Either::A(a) => Pin::new(a).poll_flush(cx),
            Either::B(b) => Pin::new(b).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Either::A(a) => Pin::new(a).poll_shutdown(cx),
            Either::B(b) => Pin::new(b).poll_shutdown(cx),
        }
    }
}
