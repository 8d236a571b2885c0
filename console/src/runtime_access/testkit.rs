//! Fixtures of the `/v1` modules' tests: a scripted Runtime gateway on
//! loopback (TLS with an rcgen certificate) that writes exactly the bytes a
//! test scripts, in the pieces it scripts, and hands back what it received;
//! and the state a call is admitted with, over an in-process stand-in for
//! kube-apiserver (TokenReview, the Run list, the gateway Service).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Buf, Bytes, BytesMut};
use http::{Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody, combinators::BoxBody};
use kruntimes_core::auth::{AccessReview, Authenticator, Recheck, TokenReviewer};
use kruntimes_core::lifecycle::Lifecycle;
use kruntimes_core::limit::Caps;
use kruntimes_core::metrics::Metrics;
use kruntimes_core::tls::{ClientRoots, DynamicClientVerifier};
use kruntimes_transport::serve::{ConnLimits, FastPath, read_into, serve_tls};
use kruntimes_transport::tls_stream::{self, ServerStream};
use rustls::{ClientConfig, ServerConfig};
use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tower::ServiceExt;
use tower::util::BoxCloneSyncService;

use super::fast::InvokeFastPath;
use super::gateway::{GatewayResolver, GatewayTarget};
use super::runs::RunCache;
use super::{AccessBounds, AccessState};
use crate::clients::UserClients;
use crate::session::SessionSealer;
use crate::state::ConsoleState;

/// The Run namespace, the function Run and the session Run the stand-in lists.
pub const NS: &str = "team-a";
pub const FUNCTION: &str = "fn-1";
pub const SESSION: &str = "shell";
pub const UID: &str = "6f1c2b9e-0000-4000-8000-000000000001";
/// A function Run that is not Ready (phase `Pending`), with [`UID`].
pub const PENDING: &str = "fn-pending";
/// A Ready function Run of Runtime `down`, whose gateway Service names a
/// port that refuses connections ([`Gateway::refusing_port`]), with [`UID`].
pub const DOWN: &str = "fn-down";
/// A token the stand-in authenticates as `alice`, in `system:masters` (so
/// every call is allowed without a SubjectAccessReview).
pub const TOKEN: &str = "alice-token";

/// Every wait of a test is bounded by this.
pub const WAIT: Duration = Duration::from_secs(10);

/// Runs `f` within [`WAIT`]; a test that hangs fails instead.
pub async fn within<F: std::future::Future>(what: &str, f: F) -> F::Output {
    tokio::time::timeout(WAIT, f)
        .await
        .unwrap_or_else(|_| panic!("timed out: {what}"))
}

/// A self-signed `localhost` server config and a client config that trusts it.
pub fn tls_pair() -> (Arc<ServerConfig>, Arc<ClientConfig>) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = rcgen::CertificateParams::new(vec!["localhost".to_owned()])
        .unwrap()
        .self_signed(&key)
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into()),
        )
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert.der().clone()).unwrap();
    let mut client = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    client.alpn_protocols = vec![b"http/1.1".to_vec()];
    (Arc::new(server), Arc::new(client))
}

/// The scripted gateway: a TLS listener on 127.0.0.1 whose connections
/// the test drives one by one ([`Gateway::accept`]).
pub struct Gateway {
    listener: TcpListener,
    server: Arc<ServerConfig>,
    /// A loopback port bound and never listened on: connections to it are
    /// refused for as long as the gateway lives.
    refusing: tokio::net::TcpSocket,
    /// Where the Console dials it (host `localhost`, the certificate's name).
    pub target: Arc<GatewayTarget>,
    /// The Console's side of its TLS: trusts its certificate.
    pub tls: Arc<ClientConfig>,
}

impl Gateway {
    pub async fn start() -> Self {
        let (server, tls) = tls_pair();
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let refusing = tokio::net::TcpSocket::new_v4().unwrap();
        refusing.bind("127.0.0.1:0".parse().unwrap()).unwrap();
        Self {
            listener,
            server,
            refusing,
            target: Arc::new(GatewayTarget {
                host: "localhost".into(),
                port: addr.port(),
                addrs: vec![addr],
            }),
            tls,
        }
    }

    /// The next connection the Console opens.
    pub async fn accept(&self) -> Script {
        within("the gateway's next connection", async {
            let (tcp, _) = self.listener.accept().await.unwrap();
            let io = tls_stream::accept(self.server.clone(), tcp).await.unwrap();
            Script {
                io,
                buf: BytesMut::new(),
            }
        })
        .await
    }

    /// The port of Runtime `down`'s gateway: bound, never listened on.
    pub fn refusing_port(&self) -> u16 {
        self.refusing.local_addr().unwrap().port()
    }

    /// Serves every connection the Console opens, each on a task of its
    /// own running `serve`, for as long as the test's runtime runs (it ends
    /// with the test). A failed handshake is dropped.
    pub fn serve_each<F, Fut>(self: &Arc<Self>, serve: F)
    where
        F: Fn(Script) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = ()> + Send + 'static,
    {
        let gw = self.clone();
        tokio::spawn(async move {
            loop {
                let Ok((tcp, _)) = gw.listener.accept().await else {
                    continue;
                };
                let handshake = tls_stream::accept(gw.server.clone(), tcp);
                if let Ok(Ok(io)) = tokio::time::timeout(WAIT, handshake).await {
                    tokio::spawn(serve(Script {
                        io,
                        buf: BytesMut::new(),
                    }));
                }
            }
        });
    }

    /// Whether a new connection is waiting to be accepted (it is accepted
    /// and closed). The listener's queue is read without waiting.
    pub async fn has_new_connection(&self) -> bool {
        tokio::task::yield_now().await;
        matches!(
            tokio::time::timeout(Duration::from_millis(50), self.listener.accept()).await,
            Ok(Ok(_))
        )
    }
}

/// How a scripted write is cut into pieces, each its own TLS record and
/// socket write, with the reader given its turn between them.
#[derive(Clone, Copy, Debug)]
pub enum Split {
    Whole,
    /// Pieces of this many bytes.
    Every(usize),
    /// Pieces of 1 to 16 bytes, from this seed.
    Random(u64),
    /// Pieces of 1 to `max` bytes (the second), from this seed (the first).
    UpTo(u64, usize),
}

impl Split {
    fn pieces(self, len: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut left = len;
        // `Random` is `UpTo` with pieces of at most 16 bytes.
        let (mut seed, max) = match self {
            Split::Random(s) => (s | 1, 16),
            Split::UpTo(s, max) => (s | 1, max.max(1) as u64),
            _ => (0, 1),
        };
        let mut next = move || {
            // xorshift64
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        while left > 0 {
            let n = match self {
                Split::Whole => left,
                Split::Every(n) => n.max(1),
                Split::Random(_) | Split::UpTo(..) => (next() % max) as usize + 1,
            };
            let n = n.min(left);
            out.push(n);
            left -= n;
        }
        out
    }
}

/// Writes `bytes` to `io` in the pieces `split` makes, flushing each and
/// letting the other side read it before the next.
pub async fn write_split<W: tokio::io::AsyncWrite + Unpin>(
    io: &mut W,
    bytes: &[u8],
    split: Split,
) -> std::io::Result<()> {
    let mut at = 0;
    for n in split.pieces(bytes.len()) {
        io.write_all(&bytes[at..at + n]).await?;
        io.flush().await?;
        at += n;
        if !matches!(split, Split::Whole) {
            // The reader's task runs after the I/O driver saw this piece.
            for _ in 0..3 {
                tokio::task::yield_now().await;
            }
        }
    }
    Ok(())
}

/// A request as the gateway received it.
#[derive(Debug)]
pub struct Received {
    pub head: String,
    pub body: Vec<u8>,
}

impl Received {
    /// The value of the (first) field `name` (lower case).
    pub fn field(&self, name: &str) -> Option<&str> {
        field_of(&self.head, name)
    }
}

/// The value of the first field `name` (lower case) of a message head.
pub fn field_of<'a>(head: &'a str, name: &str) -> Option<&'a str> {
    head.split("\r\n").skip(1).find_map(|line| {
        let (k, v) = line.split_once(':')?;
        k.eq_ignore_ascii_case(name).then(|| v.trim())
    })
}

/// One gateway connection, driven by the test.
pub struct Script {
    pub io: ServerStream<TcpStream>,
    /// Bytes received and not yet consumed.
    pub buf: BytesMut,
}

impl Script {
    /// Reads up to and including the blank line of a head.
    pub async fn read_head(&mut self) -> String {
        within("a head at the gateway", async {
            loop {
                if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                    let head = String::from_utf8(self.buf[..end + 4].to_vec()).unwrap();
                    self.buf.advance(end + 4);
                    return head;
                }
                let n = read_into(&mut self.io, &mut self.buf).await.unwrap();
                assert!(n > 0, "closed before a whole head: {:?}", self.buf);
            }
        })
        .await
    }

    /// Reads `n` bytes.
    pub async fn read_exact(&mut self, n: usize) -> Vec<u8> {
        within("a body at the gateway", async {
            while self.buf.len() < n {
                let got = read_into(&mut self.io, &mut self.buf).await.unwrap();
                assert!(got > 0, "closed before {n} bytes: {:?}", self.buf);
            }
            self.buf.split_to(n).to_vec()
        })
        .await
    }

    /// Reads a request: its head and the body its `content-length` announces.
    pub async fn read_request(&mut self) -> Received {
        let head = self.read_head().await;
        let len = field_of(&head, "content-length").map_or(0, |v| v.parse().unwrap());
        let body = self.read_exact(len).await;
        Received { head, body }
    }

    /// The next request head on a kept-alive connection, waiting as long
    /// as it takes (a connection served by [`Gateway::serve_each`]); `None`
    /// when the Console closed the connection or broke it off first.
    pub async fn next_head(&mut self) -> Option<String> {
        loop {
            if let Some(end) = self.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                let head = String::from_utf8(self.buf[..end + 4].to_vec()).ok()?;
                self.buf.advance(end + 4);
                return Some(head);
            }
            match read_into(&mut self.io, &mut self.buf).await {
                Ok(n) if n > 0 => {}
                _ => return None,
            }
        }
    }

    /// The body `head` announces with its `content-length`, as
    /// [`Script::next_head`] waits; `None` when the connection ended first.
    pub async fn next_body(&mut self, head: &str) -> Option<Vec<u8>> {
        let len = field_of(head, "content-length").map_or(Some(0), |v| v.parse().ok())?;
        while self.buf.len() < len {
            match read_into(&mut self.io, &mut self.buf).await {
                Ok(n) if n > 0 => {}
                _ => return None,
            }
        }
        Some(self.buf.split_to(len).to_vec())
    }

    /// Writes `bytes` in the pieces `split` makes.
    pub async fn send(&mut self, bytes: &[u8], split: Split) {
        within("a scripted write", write_split(&mut self.io, bytes, split))
            .await
            .unwrap();
    }

    /// Ends the connection as TLS should: `close_notify`, then the TCP FIN.
    pub async fn close(mut self) {
        let _ = within("the gateway's close", self.io.shutdown()).await;
    }

    /// Waits until the Console closes its end; what it sent meanwhile is
    /// returned. `false` in the first: an error, not a clean end.
    pub async fn until_closed(&mut self) -> (bool, Vec<u8>) {
        within("the Console's close", async {
            loop {
                match read_into(&mut self.io, &mut self.buf).await {
                    Ok(0) => return (true, self.buf.split().to_vec()),
                    Ok(_) => {}
                    Err(_) => return (false, self.buf.split().to_vec()),
                }
            }
        })
        .await
    }
}

/// An answer as a gateway writes it, echoing invocation ID `inv` when given.
pub fn answer(status: &str, inv: Option<&str>, fields: &[(&str, &str)], body: &[u8]) -> Vec<u8> {
    let mut out = format!("{status}\r\n");
    if let Some(inv) = inv {
        out.push_str(&format!("x-kruntime-invocation-id: {inv}\r\n"));
    }
    for (k, v) in fields {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut out = out.into_bytes();
    out.extend_from_slice(body);
    out
}

/// A body in chunks of at most `size` bytes, with an extension on the first.
pub fn chunked(body: &[u8], size: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, c) in body.chunks(size).enumerate() {
        let ext = if i == 0 { ";note=first" } else { "" };
        out.extend_from_slice(format!("{:x}{ext}\r\n", c.len()).as_bytes());
        out.extend_from_slice(c);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\nx-trailer: t\r\n\r\n");
    out
}

type KubeBody = BoxBody<Bytes, Infallible>;

/// The stand-in kube-apiserver: authenticates [`TOKEN`], lists the two
/// Runs (and holds every watch open), and names the gateway at `port`
/// through an ExternalName Service `bash-gateway`.
async fn kube(
    req: Request<kube::client::Body>,
    port: u16,
    refusing_port: u16,
) -> Result<Response<KubeBody>, Infallible> {
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or_default().to_owned();
    let body = req.into_body().collect().await.map(|b| b.to_bytes());
    let run_of = |name: &str, runtime: &str, mode: Value, phase: &str| {
        json!({
            "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
            "metadata": {"name": name, "namespace": NS, "uid": UID, "resourceVersion": "1"},
            "spec": {"runtime": runtime, "mode": mode},
            "status": {"phase": phase},
        })
    };
    let run = |name: &str, mode: Value| run_of(name, "bash", mode, "Ready");
    let gateway = |name: &str, port: u16| {
        json!({"apiVersion": "v1", "kind": "Service",
               "metadata": {"name": name, "namespace": NS},
               "spec": {"type": "ExternalName", "externalName": "localhost",
                        "ports": [{"name": "https", "port": port}]}})
    };
    let (code, answer) = match path.as_str() {
        "/apis/authentication.k8s.io/v1/tokenreviews" => {
            let review: Value = body
                .ok()
                .and_then(|b| serde_json::from_slice(&b).ok())
                .unwrap_or_default();
            let status = if review["spec"]["token"] == TOKEN {
                json!({"authenticated": true,
                       "user": {"username": "alice", "uid": "u-1", "groups": ["system:masters"]}})
            } else {
                json!({"authenticated": false})
            };
            (
                201,
                json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "status": status}),
            )
        }
        "/apis/kruntimes.io/v1alpha1/runs" if query.contains("watch=") => {
            // A watch that never sends an event (and never ends).
            let pending = futures::stream::pending::<Result<http_body::Frame<Bytes>, Infallible>>();
            let mut resp = Response::new(BoxBody::new(StreamBody::new(pending)));
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                http::HeaderValue::from_static("application/json"),
            );
            return Ok(resp);
        }
        "/apis/kruntimes.io/v1alpha1/runs" => (
            200,
            json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "RunList",
            "metadata": {"resourceVersion": "1"},
            "items": [
                run(FUNCTION, json!({"function": {}})),
                run(SESSION, json!({"session": {}})),
                run_of(PENDING, "bash", json!({"function": {}}), "Pending"),
                run_of(DOWN, "down", json!({"function": {}}), "Ready"),
            ]}),
        ),
        "/api/v1/namespaces/team-a/services/bash-gateway" => (200, gateway("bash-gateway", port)),
        "/api/v1/namespaces/team-a/services/down-gateway" => {
            (200, gateway("down-gateway", refusing_port))
        }
        _ => (
            404,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                   "reason": "NotFound", "code": 404, "message": "not found"}),
        ),
    };
    let mut resp = Response::new(BoxBody::new(Full::new(Bytes::from(answer.to_string()))));
    *resp.status_mut() = StatusCode::from_u16(code).unwrap();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    Ok(resp)
}

fn kube_client(port: u16, refusing_port: u16) -> kube::Client {
    kube::Client::new(
        tower::service_fn(move |req| kube(req, port, refusing_port)),
        "default",
    )
}

/// Bounds short enough for tests, long enough never to fire by accident.
pub fn bounds() -> AccessBounds {
    AccessBounds {
        max_request_bytes: 8 << 20,
        max_response_bytes: 1 << 20,
        max_ws_message_bytes: 1 << 20,
        idle_timeout: Duration::from_secs(30),
        total_timeout: WAIT,
        connect_timeout: Duration::from_secs(5),
        body_timeout: Duration::from_secs(5),
    }
}

/// The Console's state and the `/v1` handler's, calling `gw`.
pub async fn states(gw: &Gateway, bounds: AccessBounds) -> (Arc<ConsoleState>, Arc<AccessState>) {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let metrics = Metrics::default();
    let sa = kube_client(gw.target.port, gw.refusing_port());
    let tokens = TokenReviewer::new(sa.clone(), Duration::from_secs(10), metrics.clone());
    let access = AccessReview::new(sa.clone(), Duration::from_secs(10), metrics.clone());
    let recheck = Recheck {
        tokens: tokens.clone(),
        access: access.clone(),
        interval: Duration::from_secs(3600),
    };
    let users = {
        let upstream = tower::service_fn(move |req| kube(req, 0, 0))
            .map_response(|resp| resp.map(|b| b.map_err(|never| match never {}).boxed_unsync()))
            .map_err(tower::BoxError::from);
        let config = kube::Config::new("http://kube.test".parse().unwrap());
        UserClients::with_upstream(config, BoxCloneSyncService::new(upstream))
    };
    let console = Arc::new(ConsoleState {
        authn: Authenticator::new(
            Arc::new(DynamicClientVerifier::new(ClientRoots::default())),
            None,
            tokens,
        ),
        access: access.clone(),
        sealer: Arc::new(SessionSealer::ephemeral(3600).unwrap()),
        users,
        service_account: sa.clone(),
        public_read: false,
        metrics,
        lifecycle: Lifecycle::default(),
        follows: Caps::new("follows", 8, "--max-follows", 4, "--max-follows-per-caller"),
        watches: Caps::new("watches", 8, "--max-watches", 2, "--max-watches-per-caller"),
        recheck: recheck.clone(),
    });
    let runs = RunCache::start(sa.clone());
    let access = Arc::new(AccessState::new(
        runs,
        GatewayResolver::new(sa, "https".into(), bounds.connect_timeout),
        access,
        gw.tls.clone(),
        bounds,
        Caps::new(
            "concurrent /v1 calls",
            64,
            "--access-max-concurrent-calls",
            64,
            "--access-max-concurrent-calls-per-caller",
        ),
        recheck,
    ));
    within("the Run cache's first list", async {
        while !access.runs.is_ready() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    })
    .await;
    (console, access)
}

/// A Console listener on loopback: the Console's router over `state` and
/// `access`, and the invoke fast path before it when `fast` (as
/// `--access-fast-path`). Its TLS offers `h2` and `http/1.1` by ALPN.
pub struct ConsoleListener {
    pub addr: std::net::SocketAddr,
    /// Trusts the listener's certificate; offers `http/1.1`.
    pub tls: Arc<ClientConfig>,
    pub fast: Option<Arc<InvokeFastPath>>,
}

pub async fn console_listener(
    state: Arc<ConsoleState>,
    access: Arc<AccessState>,
    fast: bool,
) -> ConsoleListener {
    let observer = crate::router::observer(&state);
    let fast = fast.then(|| {
        Arc::new(InvokeFastPath::new(
            state.clone(),
            access.clone(),
            observer.clone(),
            16 << 10,
        ))
    });
    let router = crate::router::router_with(state, super::router(access), 16 << 10, observer);
    let (server, tls) = tls_pair();
    let mut server = Arc::unwrap_or_clone(server);
    server.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(serve_tls(
        listener,
        Arc::new(server),
        router,
        ConnLimits::default(),
        "console",
        Metrics::default(),
        std::future::pending(),
        None,
        fast.clone().map(|f| f as Arc<dyn FastPath>),
    ));
    ConsoleListener { addr, tls, fast }
}
