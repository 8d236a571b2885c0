//! End-to-end checks of the fake gateway in-process: mutual TLS, invoke echo, the request log,
//! scripted operations, failure modes and taking the listener down and up.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use futures::{SinkExt, StreamExt};
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use rcgen::{
    BasicConstraints, CertificateParams, DnType, ExtendedKeyUsagePurpose, IsCa, Issuer, KeyPair,
};
use rustls::ClientConfig;
use rustls_pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
use serde_json::{Value, json};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_tungstenite::tungstenite::Message;

use crate::sim::gateway::{Gateway, TlsSide};
use crate::sim::gateway_ops::BINARY_BYTES;
use crate::sim::tls;

struct Pki {
    _dir: tempfile::TempDir,
    client: Arc<ClientConfig>,
    anonymous: Arc<ClientConfig>,
    server: Arc<rustls::ServerConfig>,
}

fn ca() -> (rcgen::Certificate, Issuer<'static, KeyPair>) {
    let mut params = CertificateParams::new(Vec::new()).expect("params");
    params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(DnType::CommonName, "test ca");
    let key = KeyPair::generate().expect("key");
    let cert = params.self_signed(&key).expect("ca cert");
    (cert, Issuer::new(params, key))
}

fn leaf(
    issuer: &Issuer<'static, KeyPair>,
    cn: &str,
    usage: ExtendedKeyUsagePurpose,
) -> (rcgen::Certificate, KeyPair) {
    let mut params = CertificateParams::new(vec!["localhost".to_owned()]).expect("params");
    params.distinguished_name.push(DnType::CommonName, cn);
    params.extended_key_usages.push(usage);
    let key = KeyPair::generate().expect("key");
    let cert = params.signed_by(&key, issuer).expect("leaf cert");
    (cert, key)
}

fn write(dir: &Path, name: &str, pem: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(&path, pem).expect("write pem");
    path
}

fn pki() -> Pki {
    tls::install_crypto_provider();
    let dir = tempfile::tempdir().expect("tempdir");
    let (ca_cert, issuer) = ca();
    let (server_cert, server_key) = leaf(&issuer, "gateway", ExtendedKeyUsagePurpose::ServerAuth);
    let (client_cert, client_key) = leaf(
        &issuer,
        "kruntimes-console",
        ExtendedKeyUsagePurpose::ClientAuth,
    );
    let ca_path = write(dir.path(), "ca.pem", &ca_cert.pem());
    let cert_path = write(dir.path(), "server.pem", &server_cert.pem());
    let key_path = write(dir.path(), "server-key.pem", &server_key.serialize_pem());
    let server = tls::server_config(&cert_path, &key_path, Some(&ca_path)).expect("server config");

    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca_cert.der().clone()).expect("root");
    let roots = Arc::new(roots);
    let client = ClientConfig::builder()
        .with_root_certificates(Arc::clone(&roots))
        .with_client_auth_cert(
            vec![client_cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(client_key.serialize_der())),
        )
        .expect("client config");
    let anonymous = ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Pki {
        _dir: dir,
        client: Arc::new(client),
        anonymous: Arc::new(anonymous),
        server,
    }
}

struct Harness {
    pki: Pki,
    gateway: Arc<Gateway>,
    tls: Arc<TlsSide>,
    control: SocketAddr,
}

async fn start() -> Harness {
    let pki = pki();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let gateway = Arc::new(Gateway::default());
    let tls = TlsSide::start(
        Arc::clone(&gateway),
        listener,
        addr,
        Arc::clone(&pki.server),
    );
    let control_listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let control = control_listener.local_addr().expect("addr");
    let router = crate::sim::gateway_control::router(Arc::clone(&gateway), Arc::clone(&tls));
    tokio::spawn(async move { axum::serve(control_listener, router).await });
    Harness {
        pki,
        gateway,
        tls,
        control,
    }
}

type Answer = (http::StatusCode, http::HeaderMap, Bytes);

async fn send_over<S>(io: S, request: http::Request<Full<Bytes>>) -> Result<Answer, String>
where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(conn);
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let (parts, body) = response.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok((parts.status, parts.headers, body))
}

async fn tls_stream(
    addr: SocketAddr,
    config: &Arc<ClientConfig>,
) -> Result<tokio_rustls::client::TlsStream<TcpStream>, String> {
    let tcp = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    TlsConnector::from(Arc::clone(config))
        .connect(ServerName::try_from("localhost").expect("name"), tcp)
        .await
        .map_err(|e| e.to_string())
}

async fn gateway_request(
    h: &Harness,
    config: &Arc<ClientConfig>,
    request: http::Request<Full<Bytes>>,
) -> Result<Answer, String> {
    send_over(tls_stream(h.tls.addr(), config).await?, request).await
}

async fn control(h: &Harness, method: &str, path: &str, body: Value) -> Value {
    let tcp = TcpStream::connect(h.control)
        .await
        .expect("connect control");
    let request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("host", "control")
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .expect("request");
    let (status, _, body) = send_over(tcp, request).await.expect("control request");
    assert!(status.is_success(), "{method} {path}: {status} {body:?}");
    serde_json::from_slice(&body).unwrap_or(Value::Null)
}

fn invoke_request(body: &str) -> http::Request<Full<Bytes>> {
    http::Request::builder()
        .method("POST")
        .uri("/v1/namespaces/team-a/runs/fn-1/uid-1/invoke")
        .header("host", "localhost")
        .header("x-remote-user", "operator")
        .header("x-remote-group", "team")
        .header("x-remote-group", "system:authenticated")
        .header("x-remote-extra-scopes%2Fa", "one")
        .header("x-kruntime-invocation-id", "inv-42")
        .body(Full::new(Bytes::from(body.to_owned())))
        .expect("request")
}

#[tokio::test]
async fn invoke_echoes_identity_and_body_and_is_recorded() {
    let h = start().await;
    let (status, headers, body) = gateway_request(&h, &h.pki.client, invoke_request(r#"{"x":1}"#))
        .await
        .expect("invoke");
    assert_eq!(status, 200);
    assert_eq!(headers["x-kruntime-invocation-id"], "inv-42");
    let answer: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(
        answer,
        json!({
            "invocationID": "inv-42",
            "namespace": "team-a",
            "run": "fn-1",
            "uid": "uid-1",
            "user": "operator",
            "groups": ["team", "system:authenticated"],
            "extra": {"scopes/a": ["one"]},
            "body": {"x": 1},
        })
    );

    let (_, _, body) = gateway_request(&h, &h.pki.client, invoke_request("not json"))
        .await
        .expect("invoke");
    let answer: Value = serde_json::from_slice(&body).expect("json");
    assert_eq!(answer["body"], "not json");

    let requests = control(&h, "GET", "/requests", Value::Null).await;
    let requests = requests.as_array().expect("array");
    assert_eq!(requests.len(), 2);
    assert_eq!(requests[0]["clientCN"], "kruntimes-console");
    assert_eq!(requests[0]["bodyLength"], 7);
    assert_eq!(requests[0]["method"], "POST");
    assert_eq!(requests[0]["authority"], "localhost");
    assert_eq!(requests[0]["version"], "HTTP/1.1");
    // The test client's rustls negotiates TLS 1.3, as the Console's does.
    assert_eq!(requests[0]["tlsVersion"], "TLSv1_3");
    assert!(
        requests[0]["headers"]
            .as_array()
            .expect("headers")
            .contains(&json!(["x-remote-group", "system:authenticated"]))
    );
    let stats = control(&h, "GET", "/stats", Value::Null).await;
    assert_eq!(stats["invokes"], 2);
}

#[tokio::test]
async fn a_client_without_a_certificate_is_refused() {
    let h = start().await;
    let result = gateway_request(&h, &h.pki.anonymous, invoke_request("{}")).await;
    assert!(result.is_err(), "expected a TLS failure, got {result:?}");
    assert_eq!(
        h.gateway
            .stats
            .invokes
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
}

#[tokio::test]
async fn modes_and_down_up() {
    let h = start().await;
    control(&h, "POST", "/mode", json!({"mode": "429"})).await;
    let (status, headers, _) = gateway_request(&h, &h.pki.client, invoke_request("{}"))
        .await
        .expect("invoke");
    assert_eq!(status, 429);
    assert_eq!(headers["retry-after"], "1");
    control(&h, "POST", "/mode", json!({"mode": "500"})).await;
    let (status, _, _) = gateway_request(&h, &h.pki.client, invoke_request("{}"))
        .await
        .expect("invoke");
    assert_eq!(status, 500);

    // A slow answer abandoned by the client counts as an upstream disconnect.
    control(
        &h,
        "POST",
        "/mode",
        json!({"mode": "slow", "delayMs": 5000}),
    )
    .await;
    let abandoned = tokio::time::timeout(
        Duration::from_millis(300),
        gateway_request(&h, &h.pki.client, invoke_request("{}")),
    )
    .await;
    assert!(abandoned.is_err(), "slow mode answered early");
    wait_for(&h, "upstreamDisconnects", 1).await;

    control(&h, "POST", "/mode", json!({"mode": "normal"})).await;
    let status = control(&h, "POST", "/down", Value::Null).await;
    assert_eq!(status["up"], false);
    let refused = TcpStream::connect(h.tls.addr()).await;
    assert!(refused.is_err(), "listener still accepting");
    let status = control(&h, "POST", "/up", Value::Null).await;
    assert_eq!(status["up"], true);
    let (status, _, _) = gateway_request(&h, &h.pki.client, invoke_request("{}"))
        .await
        .expect("invoke after up");
    assert_eq!(status, 200);

    control(&h, "DELETE", "/requests", Value::Null).await;
    assert_eq!(
        control(&h, "GET", "/requests", Value::Null).await,
        json!([])
    );
}

async fn wait_for(h: &Harness, counter: &str, at_least: u64) {
    for _ in 0..50 {
        let stats = control(h, "GET", "/stats", Value::Null).await;
        if stats[counter].as_u64().unwrap_or(0) >= at_least {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{counter} never reached {at_least}");
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_rustls::client::TlsStream<TcpStream>>;

async fn open_socket(h: &Harness) -> Socket {
    let stream = tls_stream(h.tls.addr(), &h.pki.client).await.expect("tls");
    let (socket, response) = tokio_tungstenite::client_async(
        "wss://localhost/v1/namespaces/team-a/runs/sess-1/uid-9/operations:ws",
        stream,
    )
    .await
    .expect("websocket handshake");
    assert_eq!(response.status(), 101);
    socket
}

async fn next_event(socket: &mut Socket) -> Value {
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(5), socket.next())
            .await
            .expect("event in time")
            .expect("socket open")
            .expect("frame");
        if let Message::Text(text) = frame {
            return serde_json::from_str(text.as_str()).expect("json event");
        }
    }
}

async fn send_frame(socket: &mut Socket, frame: Value) {
    socket
        .send(Message::Text(frame.to_string().into()))
        .await
        .expect("send frame");
}

/// Runs one operation to its end; returns every event after `accepted`.
async fn run_op(socket: &mut Socket, command: &str, args: &[&str]) -> Vec<Value> {
    send_frame(
        socket,
        json!({"type": "send", "operation": {"command": command, "args": args}}),
    )
    .await;
    let accepted = next_event(socket).await;
    assert_eq!(accepted["type"], "accepted");
    let mut events = Vec::new();
    loop {
        let event = next_event(socket).await;
        let done = event["type"] == "terminal";
        events.push(event);
        if done {
            return events;
        }
    }
}

#[tokio::test]
async fn scripted_operations_on_one_socket() {
    let h = start().await;
    let mut socket = open_socket(&h).await;
    send_frame(&mut socket, json!({"type": "heartbeat"})).await;

    let events = run_op(&mut socket, "echo", &["hello", "world"]).await;
    assert_eq!(events[0]["type"], "output");
    assert_eq!(events[0]["data"], "hello world\n");
    assert_eq!(events[1]["exitCode"], 0);
    assert_eq!(events[1]["status"], "Succeeded");

    let events = run_op(&mut socket, "binary", &[]).await;
    assert_eq!(events[0]["encoding"], "base64");
    let data = base64::engine::general_purpose::STANDARD
        .decode(events[0]["data"].as_str().expect("data"))
        .expect("base64");
    assert_eq!(data, BINARY_BYTES);
    assert!(std::str::from_utf8(&data).is_err());

    let events = run_op(&mut socket, "fail", &[]).await;
    let end = events.last().expect("terminal");
    assert_eq!(
        (end["exitCode"].as_i64(), end["status"].as_str()),
        (Some(1), Some("Failed"))
    );
    assert!(end["error"].is_string());

    let events = run_op(&mut socket, "rm", &["-rf", "/"]).await;
    assert_eq!(events.len(), 1);
    assert_eq!(events[0]["exitCode"], 127);
    assert_eq!(events[0]["error"], "command not found");

    let events = run_op(&mut socket, "sleep", &["0.5"]).await;
    assert!(events.iter().filter(|e| e["type"] == "progress").count() >= 2);
    assert_eq!(events.last().expect("terminal")["status"], "Succeeded");

    // Cancel a long sleep.
    send_frame(
        &mut socket,
        json!({"type": "send", "operation": {"command": "sleep", "args": ["30"]}}),
    )
    .await;
    let accepted = next_event(&mut socket).await;
    let id = accepted["operationID"].as_str().expect("id").to_owned();
    assert_eq!(next_event(&mut socket).await["type"], "progress");
    send_frame(&mut socket, json!({"type": "cancel", "operationID": id})).await;
    let end = loop {
        let event = next_event(&mut socket).await;
        if event["type"] == "terminal" {
            break event;
        }
    };
    assert_eq!(end["status"], "Cancelled");
    assert_eq!(end["exitCode"], 130);

    send_frame(&mut socket, json!({"type": "heartbeat"})).await;
    // Another sleep, then the client goes away mid-operation.
    send_frame(
        &mut socket,
        json!({"type": "send", "operation": {"command": "sleep", "args": ["30"]}}),
    )
    .await;
    assert_eq!(next_event(&mut socket).await["type"], "accepted");
    drop(socket);
    wait_for(&h, "upstreamDisconnects", 1).await;
    wait_for(&h, "heartbeats", 2).await;
    let stats = control(&h, "GET", "/stats", Value::Null).await;
    assert_eq!(stats["cancels"], 1);
    assert_eq!(stats["wsTotal"], 1);
    assert_eq!(stats["wsOpen"], 0);
    assert_eq!(stats["operations"], 7);
}

#[tokio::test]
async fn down_closes_open_sockets() {
    let h = start().await;
    let mut socket = open_socket(&h).await;
    let events = run_op(&mut socket, "echo", &["x"]).await;
    assert_eq!(events[0]["data"], "x\n");
    control(&h, "POST", "/down", Value::Null).await;
    let end = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            match socket.next().await {
                None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                Some(Ok(_)) => {}
            }
        }
    })
    .await;
    assert!(end.is_ok(), "socket still open after down");
}
