//! Long-lived answers in the suites: the lines a child process prints (a
//! `curl -N` or `kubectl get --raw` follow), and `operations:ws` sockets
//! over verified TLS.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Child;
use std::sync::{Arc, mpsc};

use rustls::pki_types::pem::PemObject;
use tokio_tungstenite::tungstenite;

/// The lines `child` prints on its (piped) stdout, read by a thread until
/// the child closes it. Lines printed after the receiver is dropped are
/// read and discarded: a pipe nobody reads would kill the child with
/// SIGPIPE at its next line (kubectl port-forward prints one per
/// connection).
pub fn lines(child: &mut Child) -> mpsc::Receiver<String> {
    let out = child.stdout.take().expect("the child's stdout is piped");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    rx
}

/// `kubectl get --raw PATH` as the holder of `token` (a follow), and the
/// lines it prints.
pub fn kubectl_follow(token: &str, path: &str) -> (Child, mpsc::Receiver<String>) {
    let mut child = crate::env::env()
        .kubectl_command(Some(token), &["get", "--raw", path])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("kubectl follow");
    let rx = lines(&mut child);
    (child, rx)
}

pub type Ws =
    tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>;

/// Where a WebSocket goes: the address dialled, the name its certificate
/// is verified for against `ca`, and an optional client certificate.
pub struct WsTarget<'a> {
    pub addr: &'a str,
    pub server_name: &'a str,
    pub ca: &'a Path,
    pub client_cert: Option<(&'a Path, &'a Path)>,
}

/// Opens `wss://{addr}{path}` on `target` with `headers`; the HTTP
/// status when the upgrade is refused.
pub async fn ws_connect(
    target: &WsTarget<'_>,
    path: &str,
    headers: &[(&str, &str)],
) -> Result<Ws, u16> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(target.ca).expect("the CA file");
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
        roots
            .add(c.expect("a CA certificate"))
            .expect("a usable CA");
    }
    let builder = rustls::ClientConfig::builder().with_root_certificates(roots);
    let mut config = match target.client_cert {
        Some((cert, key)) => {
            let chain: Vec<_> = rustls::pki_types::CertificateDer::pem_file_iter(cert)
                .expect("the client certificate")
                .map(Result::unwrap)
                .collect();
            let key = rustls::pki_types::PrivateKeyDer::from_pem_file(key).expect("the key");
            builder
                .with_client_auth_cert(chain, key)
                .expect("a usable client certificate")
        }
        None => builder.with_no_client_auth(),
    };
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let tcp = tokio::net::TcpStream::connect(target.addr)
        .await
        .expect("connecting");
    let name = rustls::pki_types::ServerName::try_from(target.server_name.to_owned())
        .expect("a server name");
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .expect("the TLS handshake");
    // The request's Host is the address dialled (what a same-origin
    // `Origin` names).
    let mut req = tungstenite::client::IntoClientRequest::into_client_request(format!(
        "wss://{}{path}",
        target.addr
    ))
    .expect("a WebSocket request");
    for (k, v) in headers {
        req.headers_mut().insert(
            http::HeaderName::from_bytes(k.as_bytes()).expect("a header name"),
            http::HeaderValue::from_str(v).expect("a header value"),
        );
    }
    match tokio_tungstenite::client_async(req, tls).await {
        Ok((ws, _)) => Ok(ws),
        Err(tungstenite::Error::Http(resp)) => Err(resp.status().as_u16()),
        Err(e) => panic!("websocket: {e}"),
    }
}

/// The `message` of the next NDJSON record on `rx` (None after 15 s).
pub fn next_message(rx: &mpsc::Receiver<String>) -> Option<String> {
    let line = rx.recv_timeout(std::time::Duration::from_secs(15)).ok()?;
    let v: serde_json::Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad NDJSON line ({e}): {line}"));
    Some(v["message"].as_str().unwrap_or_default().to_owned())
}
