//! Connection and stream limits end to end: private Consoles with small
//! limits on the real control plane, driven over raw TCP, TLS, HTTP/1 and HTTP/2.

use std::process::Stdio;
use std::sync::{Arc, mpsc};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kruntimes_tests::env::{
    ConsoleProcess, Fixtures, LoggedRun, env, invoke_path, ops_path, runtimed_line, unique,
};
use kruntimes_tests::objects;
use kruntimes_tests::stream::{self, next_message};
use kube::Api;
use serde_json::Value;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

type Tls = tokio_rustls::client::TlsStream<TcpStream>;

/// A private Console with `args`; its temporary directory lives as long as it.
fn console(args: &[&str]) -> (ConsoleProcess, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let args: Vec<String> = args.iter().map(|a| (*a).to_owned()).collect();
    (ConsoleProcess::start(dir.path(), &args), dir)
}

fn client_config(alpn: &[u8]) -> Arc<rustls::ClientConfig> {
    use rustls::pki_types::pem::PemObject;
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(env().var("CONSOLE_CA")).unwrap();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
        roots.add(c.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    Arc::new(config)
}

async fn tls_connect(port: u16, alpn: &[u8]) -> std::io::Result<Tls> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).await?;
    tokio_rustls::TlsConnector::from(client_config(alpn))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
}

/// POSTs `body` (JSON) as `user` over a new HTTP/2 connection with hyper's
/// client, which keeps an answer that comes before the body is taken and a
/// stream reset with NO_ERROR after it: (status, Retry-After, body).
async fn h2_post(
    port: u16,
    path: &str,
    user: &str,
    body: Vec<u8>,
) -> (u16, Option<String>, String) {
    let tls = tls_connect(port, b"h2").await.unwrap();
    let (mut send, conn) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    let conn = tokio::spawn(conn);
    let bearer = kruntimes_tests::curl::bearer(user);
    let answer = h2_send(&mut send, port, path, &bearer, body.into()).await;
    drop(send);
    conn.abort();
    answer
}

/// POSTs `body` (JSON) with `authorization` on an open HTTP/2 connection:
/// (status, Retry-After, body).
async fn h2_send(
    send: &mut hyper::client::conn::http2::SendRequest<http_body_util::Full<bytes::Bytes>>,
    port: u16,
    path: &str,
    authorization: &str,
    body: bytes::Bytes,
) -> (u16, Option<String>, String) {
    use http_body_util::BodyExt;
    let req = http::Request::post(format!("https://localhost:{port}{path}"))
        .header("authorization", authorization)
        .header("content-type", "application/json")
        .body(http_body_util::Full::new(body))
        .unwrap();
    let resp = tokio::time::timeout(Duration::from_secs(30), send.send_request(req))
        .await
        .expect("an HTTP/2 answer within 30 s")
        .expect("an HTTP/2 answer");
    let code = resp.status().as_u16();
    let retry_after = resp
        .headers()
        .get("retry-after")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = tokio::time::timeout(Duration::from_secs(30), resp.into_body().collect())
        .await
        .expect("the answer's body within 30 s")
        .map(|b| String::from_utf8_lossy(&b.to_bytes()).into_owned())
        .unwrap_or_else(|e| format!("(the answer's body failed: {e})"));
    (code, retry_after, body)
}

/// Reads until the peer closes; `Some(bytes read)` when it did within `within`.
async fn closed_within(stream: &mut (impl AsyncRead + Unpin), within: Duration) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, stream.read(&mut buf)).await {
            Err(_) => return None,
            Ok(Ok(0)) | Ok(Err(_)) => return Some(got),
            Ok(Ok(n)) => got.extend_from_slice(&buf[..n]),
        }
    }
}

/// Margin over a deadline for the close to be seen (scheduling, a loaded machine).
const MARGIN: Duration = Duration::from_secs(5);

// The handshake, first-request and idle deadlines are tested on the accept
// loop itself (transport/src/serve.rs), their flags in
// kruntimes-console/src/args.rs; here, what needs the whole Console.

/// Item 1 of issue 28: an HTTP/2 client that fetches the UI's script bundle
/// and keeps its flow-control window shut (it never reads; hyper's client
/// answers the pings) held its connection past every deadline, since a
/// response in flight keeps the idle timer off. The connection now ends at
/// the send timeout.
#[tokio::test]
async fn an_http2_client_that_stops_reading_loses_its_connection_at_the_send_timeout() {
    let (c, _dir) = console(&[
        "--send-timeout=1s",
        "--connection-idle-timeout=60s",
        "--http2-keepalive-interval=1s",
    ]);
    let mut tls = tls_connect(c.console_port, b"http/1.1").await.unwrap();
    tls.write_all(b"GET / HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let page = closed_within(&mut tls, Duration::from_secs(10))
        .await
        .expect("the index page");
    let page = String::from_utf8_lossy(&page);
    let script = page
        .split("src=\"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .find(|src| src.starts_with("/assets/") && src.ends_with(".js"))
        .unwrap_or_else(|| panic!("no script in the index page: {page}"))
        .to_owned();

    let tls = tls_connect(c.console_port, b"h2").await.unwrap();
    // HTTP/2's default windows (64 KiB), not hyper's 2 MiB.
    let (mut send, conn) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .initial_stream_window_size(65_535)
            .initial_connection_window_size(65_535)
            .handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    let conn = tokio::spawn(conn);
    let req = http::Request::get(format!("https://localhost:{}{script}", c.console_port))
        .body(http_body_util::Empty::<bytes::Bytes>::new())
        .unwrap();
    let resp = send.send_request(req).await.expect("a response");
    assert_eq!(resp.status(), 200, "{script}");
    let length: usize = resp
        .headers()
        .get("content-length")
        .and_then(|v| v.to_str().ok()?.parse().ok())
        .unwrap_or(0);
    assert!(
        length > 256 << 10,
        "{script} is {length} bytes: too small to outlast the window"
    );
    // The response is held, never read: its window stays shut.
    let ended = tokio::time::timeout(Duration::from_secs(2) + MARGIN, conn).await;
    drop(resp);
    assert!(
        ended.is_ok(),
        "an HTTP/2 connection whose response is not read still open past the send timeout"
    );
}

fn refusals(c: &ConsoleProcess, listener: &str) -> f64 {
    let url = format!("http://127.0.0.1:{}/metrics", c.admin_port);
    let (_, body) = env().curl(&url, &[]);
    let want = format!(
        "kruntimes_console_connections_refused_total{{listener=\"{listener}\",reason=\"max_connections_per_peer\"}} "
    );
    body.lines()
        .find_map(|l| l.strip_prefix(&want)?.parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test]
async fn connections_beyond_the_per_peer_cap_are_refused_and_counted() {
    let (c, _dir) = console(&[
        "--first-request-timeout=60s",
        "--max-connections-per-peer=3",
    ]);
    assert_eq!(refusals(&c, "console"), 0.0);
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(
            tls_connect(c.console_port, b"http/1.1")
                .await
                .expect("within the cap"),
        );
    }
    // The fourth is accepted by the kernel and closed right away.
    let refused = tls_connect(c.console_port, b"http/1.1").await;
    assert!(
        refused.is_err(),
        "a fourth connection from one address got through"
    );
    assert_eq!(refusals(&c, "console"), 1.0);
    // The aggregated listener has its own, higher per-peer cap (kube-apiserver is one peer).
    let mut api = Vec::new();
    for _ in 0..4 {
        api.push(
            tls_connect(c.api_port, b"http/1.1")
                .await
                .expect("aggregated listener"),
        );
    }
    assert_eq!(refusals(&c, "apiserver"), 0.0);
    // A place freed is a place to take.
    drop(held.pop());
    let mut again = None;
    for _ in 0..50 {
        if let Ok(t) = tls_connect(c.console_port, b"http/1.1").await {
            again = Some(t);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(again.is_some(), "no connection accepted after one closed");
}

/// Reads the NDJSON lines of a follow on a private Console's aggregated listener.
fn follow_direct(
    port: u16,
    token: &str,
    path: &str,
) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = std::process::Command::new("curl")
        .args([
            "-sS",
            "-N",
            "--http1.1",
            "--cacert",
            env().var("CONSOLE_CA"),
        ])
        .arg("-H")
        .arg(format!("Authorization: Bearer {token}"))
        .arg(format!("https://localhost:{port}{path}"))
        .arg("--resolve")
        .arg(format!("localhost:{port}:127.0.0.1"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("curl follow");
    let rx = stream::lines(&mut child);
    (child, rx)
}

#[tokio::test]
async fn a_follow_outlives_the_idle_timeout() {
    let (c, _dir) = console(&["--connection-idle-timeout=2s"]);
    let ns = "team-a";
    let fx = Fixtures::new(ns).await;
    let LoggedRun { run, uid, pod } = fx.logged_run("follow", "first").await;
    let (mut child, rx) = follow_direct(
        c.api_port,
        env().token("viewer"),
        &format!("/apis/logs.kruntimes.io/v1alpha1/namespaces/{ns}/runs/{run}/log?follow=true"),
    );
    assert_eq!(next_message(&rx).as_deref(), Some("first"));
    let quiet = Instant::now();
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert!(quiet.elapsed() > Duration::from_secs(4));
    fx.append_log(
        &pod,
        &[runtimed_line(&uid, &run, ns, &pod, "stdout", "second")],
    );
    assert_eq!(
        next_message(&rx).as_deref(),
        Some("second"),
        "the follow ended while quiet longer than the idle timeout"
    );
    let _ = child.kill();
    let _ = child.wait();
    fx.delete_pod(&pod).await;
}

// ---- /v1: authentication and authorization before the body, body deadline, call caps.

/// A private Console that can reach the test environment's Runtime gateways.
fn v1_console(args: &[&str]) -> (ConsoleProcess, tempfile::TempDir) {
    let e = env();
    let mut all: Vec<String> = vec![
        "--gateway-ca-file".into(),
        e.pki("gateway-ca.crt").display().to_string(),
        "--gateway-client-cert".into(),
        e.pki("console.crt").display().to_string(),
        "--gateway-client-key".into(),
        e.pki("console.key").display().to_string(),
    ];
    all.extend(args.iter().map(|a| (*a).to_owned()));
    let dir = tempfile::tempdir().unwrap();
    (ConsoleProcess::start(dir.path(), &all), dir)
}

/// Sends a request head (and `body` bytes of its body) on a new HTTP/1.1
/// connection, then withholds the rest; the answer head when one comes within `within`.
async fn withheld(port: u16, head: &str, body: &[u8], within: Duration) -> (Tls, Option<String>) {
    let mut tls = tls_connect(port, b"http/1.1").await.unwrap();
    tls.write_all(head.as_bytes()).await.unwrap();
    tls.write_all(body).await.unwrap();
    tls.flush().await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = tokio::time::Instant::now() + within;
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match tokio::time::timeout_at(deadline, tls.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    (tls, (!text.is_empty()).then_some(text))
}

fn invoke_on(port: u16, path: &str, user: &str) -> kruntimes_tests::curl::Reply {
    kruntimes_tests::curl::request(
        "POST",
        &format!("https://localhost:{port}{path}"),
        &[
            ("Authorization", &kruntimes_tests::curl::bearer(user)),
            ("Content-Type", "application/json"),
        ],
        kruntimes_tests::curl::Body::Raw("{}"),
    )
}

#[tokio::test]
async fn v1_refuses_before_reading_the_body() {
    let (c, _dir) = v1_console(&[]);
    let path = invoke_path(
        "team-a",
        "no-such-run",
        "6f1c2b9e-1111-4a2b-9c3d-000000000001",
    );
    // Announces 1 MiB, sends 1 KiB, withholds the rest: the answer comes anyway.
    for (auth, code) in [
        (String::new(), "401"),
        (
            format!("Authorization: Bearer {}\r\n", env().token("outsider")),
            "403",
        ),
    ] {
        let head = format!(
            "POST {path} HTTP/1.1\r\nHost: localhost\r\n{auth}Content-Type: application/json\r\nContent-Length: 1048576\r\n\r\n"
        );
        let (_conn, answer) = withheld(
            c.console_port,
            &head,
            &[b' '; 1024],
            Duration::from_secs(20),
        )
        .await;
        let answer = answer.expect("no answer while the body is withheld: the body is read first");
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {code}")),
            "expected {code}: {answer}"
        );
    }
}

#[tokio::test]
async fn v1_body_past_its_deadline_gets_408() {
    let (c, _dir) = v1_console(&["--access-body-timeout=2s"]);
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = fx.ready_run("function").await;
    let path = invoke_path("team-a", &name, &uid);
    let mut last = 0;
    for _ in 0..60 {
        last = invoke_on(c.console_port, &path, "operator").code;
        if last == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert_eq!(last, 200, "the private Console never served the Run");
    let head = format!(
        "POST {path} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n",
        env().token("operator")
    );
    let (_conn, answer) = withheld(
        c.console_port,
        &head,
        b"{\"a\":",
        Duration::from_secs(2) + MARGIN + MARGIN,
    )
    .await;
    let answer = answer.expect("no answer to a body that stopped arriving");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
}

type Ws = tokio_tungstenite::WebSocketStream<Tls>;

/// Opens operations:ws on a private Console; on refusal, the status and Retry-After.
async fn ws_open(port: u16, path: &str, user: &str) -> Result<Ws, (u16, Option<String>)> {
    let tls = tls_connect(port, b"http/1.1").await.unwrap();
    let mut req = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
        format!("wss://localhost:{port}{path}"),
    )
    .unwrap();
    req.headers_mut().insert(
        "authorization",
        kruntimes_tests::curl::bearer(user).parse().unwrap(),
    );
    match tokio_tungstenite::client_async(req, tls).await {
        Ok((ws, _)) => Ok(ws),
        Err(tokio_tungstenite::tungstenite::Error::Http(resp)) => Err((
            resp.status().as_u16(),
            resp.headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned),
        )),
        Err(e) => panic!("websocket: {e}"),
    }
}

#[tokio::test]
async fn v1_calls_are_capped_per_caller_and_in_total() {
    let (c, _dir) = v1_console(&[
        "--access-max-concurrent-calls-per-caller=2",
        "--access-max-concurrent-calls=3",
    ]);
    let fx = Fixtures::new("team-a").await;
    let (fname, fuid) = fx.ready_run("function").await;
    let (sname, suid) = fx.ready_run("session").await;
    let invoke = invoke_path("team-a", &fname, &fuid);
    let ops = ops_path("team-a", &sname, &suid);
    let mut ready = false;
    for _ in 0..60 {
        if invoke_on(c.console_port, &invoke, "operator").code == 200
            && ws_open(c.console_port, &ops, "operator").await.is_ok()
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(ready, "the private Console never served both Runs");
    tokio::time::sleep(Duration::from_millis(500)).await;

    let mut op1 = ws_open(c.console_port, &ops, "operator")
        .await
        .expect("first socket");
    let _op2 = ws_open(c.console_port, &ops, "operator")
        .await
        .expect("second socket");
    let Err((code, retry)) = ws_open(c.console_port, &ops, "operator").await else {
        panic!("a third socket of one caller was opened");
    };
    assert_eq!(code, 429);
    assert!(retry.is_some(), "429 without Retry-After");
    let r = invoke_on(c.console_port, &invoke, "operator");
    assert_eq!(r.code, 429, "{}", r.body);
    assert!(r.header("retry-after").is_some());
    assert!(
        r.body.contains("--access-max-concurrent-calls-per-caller"),
        "{}",
        r.body
    );

    // Another caller still passes, up to the total.
    let _adm = ws_open(c.console_port, &ops, "admin")
        .await
        .expect("another caller");
    let r = invoke_on(c.console_port, &invoke, "admin");
    assert_eq!(r.code, 429, "{}", r.body);
    assert!(
        r.body.contains("--access-max-concurrent-calls "),
        "{}",
        r.body
    );

    // A closed socket frees its place.
    op1.close(None).await.unwrap();
    drop(op1);
    let mut code = 0;
    for _ in 0..50 {
        code = invoke_on(c.console_port, &invoke, "operator").code;
        if code == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(code, 200, "the place of a closed socket was not freed");
}

/// Callers that hold many calls leave the reserve's places to light ones:
/// with 8 calls, 8 per caller and a quarter (2) kept for callers holding
/// one, the operator is refused its seventh call, naming the reserve's
/// flag, while the admin, holding none, still takes one of the kept places
/// (and not a second).
#[tokio::test]
async fn heavy_callers_leave_the_reserve_of_v1_calls() {
    let (c, _dir) = v1_console(&[
        "--access-max-concurrent-calls-per-caller=8",
        "--access-max-concurrent-calls=8",
        "--reserve-for-light-callers=25",
    ]);
    let fx = Fixtures::new("team-a").await;
    let (fname, fuid) = fx.ready_run("function").await;
    let (sname, suid) = fx.ready_run("session").await;
    let invoke = invoke_path("team-a", &fname, &fuid);
    let ops = ops_path("team-a", &sname, &suid);
    let mut ready = false;
    for _ in 0..60 {
        if invoke_on(c.console_port, &invoke, "operator").code == 200
            && ws_open(c.console_port, &ops, "operator").await.is_ok()
        {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(ready, "the private Console never served both Runs");
    tokio::time::sleep(Duration::from_millis(500)).await;
    let mut held = Vec::new();
    for n in 0..6 {
        held.push(
            ws_open(c.console_port, &ops, "operator")
                .await
                .unwrap_or_else(|e| panic!("operator's socket {n}: {e:?}")),
        );
    }
    // Six of eight taken: the last two are kept for callers holding one.
    let Err((code, _)) = ws_open(c.console_port, &ops, "operator").await else {
        panic!("a heavy caller took the reserve");
    };
    assert_eq!(code, 429);
    let r = invoke_on(c.console_port, &invoke, "operator");
    assert_eq!(r.code, 429, "{}", r.body);
    assert!(r.body.contains("--reserve-for-light-callers"), "{}", r.body);
    // A caller holding nothing takes a kept place, and only one.
    held.push(
        ws_open(c.console_port, &ops, "admin")
            .await
            .expect("a light caller's socket from the reserve"),
    );
    let r = invoke_on(c.console_port, &invoke, "admin");
    assert_eq!(r.code, 429, "{}", r.body);
    assert!(r.body.contains("--reserve-for-light-callers"), "{}", r.body);
    drop(held);
}

/// Item 2 of issue 28: invoke bodies are read whole before they are
/// forwarded, so they are held under one process-wide budget. Two callers
/// that each announce 600 KB and withhold most of it hold 1.2 MB of a
/// 1.5 MB budget: a third large body is refused with 429 naming the flag
/// (over the fast path and the router), and counted; a small call still
/// passes; once the withheld calls end, the large one passes again.
#[tokio::test]
async fn v1_bodies_held_in_memory_share_one_budget() {
    // No reserve: this is the total's test.
    let (c, _dir) = v1_console(&[
        "--access-max-buffered-bytes=1500000",
        "--reserve-for-light-callers=0",
    ]);
    let fx = Fixtures::new("team-a").await;
    let (fname, fuid) = fx.ready_run("function").await;
    let invoke = invoke_path("team-a", &fname, &fuid);
    let mut ready = false;
    for _ in 0..60 {
        if invoke_on(c.console_port, &invoke, "operator").code == 200 {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(ready, "the private Console never served the Run");

    let head = |user: &str| {
        format!(
            "POST {invoke} HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\n\
             Content-Type: application/json\r\nContent-Length: 600000\r\n\r\n",
            kruntimes_tests::curl::bearer(user)
        )
    };
    let (held_a, early_a) = withheld(
        c.console_port,
        &head("operator"),
        &[b' '; 1000],
        Duration::from_millis(500),
    )
    .await;
    let (held_b, early_b) = withheld(
        c.console_port,
        &head("admin"),
        &[b' '; 1000],
        Duration::from_millis(500),
    )
    .await;
    assert_eq!(
        (early_a, early_b),
        (None, None),
        "a withheld body was answered"
    );

    let big = format!("{{\"pad\":\"{}\"}}", "x".repeat(400_000));
    let dir = tempfile::tempdir().unwrap();
    let big_file = dir.path().join("big.json");
    std::fs::write(&big_file, &big).unwrap();
    // HTTP/1.1 through curl; HTTP/2 through hyper's client: the refusal comes
    // before the body is read, then the stream is reset with NO_ERROR (RFC
    // 9113 §8.1), and curl 7.88 sometimes reports that reset rather than the
    // answer it already holds (curl error 92) when it is still uploading.
    let h1 = kruntimes_tests::curl::request_as(
        Some("1.1"),
        "POST",
        &format!("https://localhost:{}{invoke}", c.console_port),
        &[
            ("Authorization", &kruntimes_tests::curl::bearer("operator")),
            ("Content-Type", "application/json"),
        ],
        kruntimes_tests::curl::Body::File(&big_file),
    );
    let h1_error = h1.error.clone();
    let h1 = (
        h1.code,
        h1.header("retry-after").map(str::to_owned),
        h1.body,
    );
    let h2 = h2_post(c.console_port, &invoke, "operator", big.into_bytes()).await;
    for (version, (code, retry_after, body), error) in
        [("1.1", h1, h1_error), ("2", h2, String::new())]
    {
        let said: String = body.chars().take(300).collect();
        assert_eq!(code, 429, "HTTP/{version}: {said}{error}");
        assert!(retry_after.is_some(), "HTTP/{version}");
        assert!(
            body.contains("--access-max-buffered-bytes"),
            "HTTP/{version}: {said}"
        );
    }
    assert_eq!(invoke_on(c.console_port, &invoke, "viewer").code, 403);
    assert_eq!(invoke_on(c.console_port, &invoke, "operator").code, 200);
    assert_eq!(buffer_refusals(&c, "total"), Some(2.0));

    drop((held_a, held_b));
    let mut code = 0;
    for _ in 0..50 {
        let r = kruntimes_tests::curl::request(
            "POST",
            &format!("https://localhost:{}{invoke}", c.console_port),
            &[
                ("Authorization", &kruntimes_tests::curl::bearer("operator")),
                ("Content-Type", "application/json"),
            ],
            kruntimes_tests::curl::Body::File(&big_file),
        );
        code = r.code;
        if code == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(code, 200, "the bytes of the ended calls were not returned");
}

/// `cap_refusals_total` of the buffer budget in `scope`, from a private Console's metrics.
fn buffer_refusals(c: &ConsoleProcess, scope: &str) -> Option<f64> {
    let (code, metrics) = env().curl(&format!("http://127.0.0.1:{}/metrics", c.admin_port), &[]);
    assert_eq!(code, 200);
    metrics
        .lines()
        .find(|l| {
            l.starts_with("kruntimes_console_cap_refusals_total{")
                && l.contains("cap=\"v1_buffered_bytes\"")
                && l.contains(&format!("scope=\"{scope}\""))
        })
        .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
}

#[tokio::test]
async fn one_caller_holds_at_most_its_share_of_the_buffer_budget_frames_included() {
    let (c, _dir) = v1_console(&[
        "--access-max-buffered-bytes=3000000",
        "--access-max-buffered-bytes-per-caller=1300000",
        "--reserve-for-light-callers=0",
    ]);
    let fx = Fixtures::new("team-a").await;
    let (fname, fuid) = fx.ready_run("function").await;
    let (sname, suid) = fx.ready_run("session").await;
    let invoke = invoke_path("team-a", &fname, &fuid);
    let ops = ops_path("team-a", &sname, &suid);
    let mut ready = false;
    for _ in 0..60 {
        if invoke_on(c.console_port, &invoke, "operator").code == 200 {
            ready = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(ready, "the private Console never served the Run");

    // The operator holds 1.2 MB of its 1.3 MB share in two withheld bodies.
    let head = format!(
        "POST {invoke} HTTP/1.1\r\nHost: localhost\r\nAuthorization: {}\r\n\
         Content-Type: application/json\r\nContent-Length: 600000\r\n\r\n",
        kruntimes_tests::curl::bearer("operator")
    );
    let mut withheld_bodies = Vec::new();
    for _ in 0..2 {
        let (tls, early) = withheld(
            c.console_port,
            &head,
            &[b' '; 1000],
            Duration::from_millis(500),
        )
        .await;
        assert_eq!(early, None, "a withheld body was answered");
        withheld_bodies.push(tls);
    }

    // Its next body is refused on both paths, naming the per-caller flag;
    // another caller's body of the same size, under the total, is served.
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big.json");
    std::fs::write(&big, format!("{{\"pad\":\"{}\"}}", "x".repeat(400_000))).unwrap();
    // HTTP/1.1 through curl; HTTP/2 through hyper's client, which keeps an
    // answer that comes before the body is taken (curl 7.88 then fails
    // with error 92 on the stream's reset).
    // The answer: status, Retry-After, body, and curl's error without one.
    let post = async |version: &str, user: &str| -> (u16, Option<String>, String, String) {
        if version == "2" {
            let body = std::fs::read(&big).unwrap();
            let (code, retry_after, body) = h2_post(c.console_port, &invoke, user, body).await;
            return (code, retry_after, body, String::new());
        }
        let r = kruntimes_tests::curl::request_as(
            Some(version),
            "POST",
            &format!("https://localhost:{}{invoke}", c.console_port),
            &[
                ("Authorization", &kruntimes_tests::curl::bearer(user)),
                ("Content-Type", "application/json"),
            ],
            kruntimes_tests::curl::Body::File(&big),
        );
        let retry_after = r.header("retry-after").map(str::to_owned);
        (r.code, retry_after, r.body, r.error)
    };
    for version in ["1.1", "2"] {
        let (code, retry_after, body, error) = post(version, "operator").await;
        let said: String = body.chars().take(300).collect();
        assert_eq!(code, 429, "HTTP/{version}: {said}{error}");
        assert!(retry_after.is_some(), "HTTP/{version}");
        assert!(
            body.contains("--access-max-buffered-bytes-per-caller")
                && body.contains(r#"held by \"operator\""#),
            "HTTP/{version}: {said}"
        );
        let (code, _, body, error) = post(version, "admin").await;
        let said: String = body.chars().take(300).collect();
        assert_eq!(
            code, 200,
            "HTTP/{version}: another caller was locked out: {said}{error}"
        );
    }

    // An operations socket's frame not yet whole is held under the same
    // share: the header of a 200,000-byte frame takes the operator past it,
    // and the socket is closed with 1013 (try again later).
    let mut ws = ws_open(c.console_port, &ops, "operator").await.unwrap();
    let mut frame = vec![0x82, 0xFF];
    frame.extend_from_slice(&200_000u64.to_be_bytes());
    frame.extend_from_slice(&[1, 2, 3, 4]);
    frame.extend_from_slice(&[0u8; 1000]);
    ws.get_mut().write_all(&frame).await.unwrap();
    ws.get_mut().flush().await.unwrap();
    assert_eq!(ws_close_code(&mut ws).await, Some(1013));
    assert_eq!(buffer_refusals(&c, "per_caller"), Some(3.0));
    assert_eq!(buffer_refusals(&c, "total"), Some(0.0));

    // Once the withheld bodies end, the operator's share is free again.
    drop(withheld_bodies);
    let mut code = 0;
    for _ in 0..50 {
        code = post("1.1", "operator").await.0;
        if code == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(code, 200, "the bytes of the ended calls were not returned");
}

// ---- Follows: per-caller caps on the aggregated API and on /api.

/// One GET with curl on a private Console's port: (status, Retry-After, body).
fn get_once(port: u16, path: &str, user: &str) -> (u16, Option<String>, String) {
    let r = kruntimes_tests::curl::request(
        "GET",
        &format!("https://localhost:{port}{path}"),
        &[("Authorization", &kruntimes_tests::curl::bearer(user))],
        kruntimes_tests::curl::Body::None,
    );
    (r.code, r.header("retry-after").map(str::to_owned), r.body)
}

#[tokio::test]
async fn follows_are_capped_per_caller_and_a_closed_one_frees_its_place() {
    let (c, _dir) = console(&["--max-follows-per-caller=2"]);
    let fx = Fixtures::new("team-a").await;
    let LoggedRun { run, pod, .. } = fx.logged_run("capped", "first").await;
    for (port, path) in [
        (
            c.api_port,
            format!(
                "/apis/logs.kruntimes.io/v1alpha1/namespaces/team-a/runs/{run}/log?follow=true"
            ),
        ),
        (
            c.console_port,
            format!("/api/namespaces/team-a/runs/{run}/logs?follow=true"),
        ),
    ] {
        let (mut first, rx1) = follow_direct(port, env().token("viewer"), &path);
        assert_eq!(next_message(&rx1).as_deref(), Some("first"), "port {port}");
        let (mut second, rx2) = follow_direct(port, env().token("viewer"), &path);
        assert_eq!(next_message(&rx2).as_deref(), Some("first"), "port {port}");
        let (code, retry, body) = get_once(port, &path, "viewer");
        assert_eq!(
            code, 429,
            "a third follow of one caller on port {port}: {body}"
        );
        assert!(retry.is_some(), "429 without Retry-After");
        assert!(body.contains("--max-follows-per-caller"), "{body}");
        let _ = first.kill();
        let _ = first.wait();
        let mut reopened = None;
        for _ in 0..50 {
            let (mut again, rx) = follow_direct(port, env().token("viewer"), &path);
            if next_message(&rx).as_deref() == Some("first") {
                reopened = Some(again);
                break;
            }
            let _ = again.kill();
            let _ = again.wait();
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        let mut again = reopened.expect("no follow accepted after one closed");
        for ch in [&mut second, &mut again] {
            let _ = ch.kill();
            let _ = ch.wait();
        }
    }
    fx.delete_pod(&pod).await;
}

/// The type of the next NDJSON line of a watch stream (None when none came in 15 s).
fn next_watch_line(rx: &mpsc::Receiver<String>) -> Option<String> {
    let line = rx.recv_timeout(Duration::from_secs(15)).ok()?;
    let v: Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad NDJSON line ({e}): {line}"));
    Some(v["type"].as_str().unwrap_or_default().to_owned())
}

fn stop(mut child: std::process::Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Opens a namespace watch as `user`; waits for its first line (a BOOKMARK).
fn open_watch(port: u16, user: &str) -> std::process::Child {
    let (child, rx) = follow_direct(port, env().token(user), WATCH_PATH);
    assert_eq!(
        next_watch_line(&rx).as_deref(),
        Some("BOOKMARK"),
        "the watch of {user} did not start"
    );
    child
}

const WATCH_PATH: &str = "/api/namespaces/team-a/watch?runs=";

#[tokio::test]
async fn watches_are_capped_per_caller_and_in_total_and_a_closed_one_frees_its_place() {
    let (c, _dir) = console(&["--max-watches-per-caller=2", "--max-watches=3"]);
    let port = c.console_port;
    let first = open_watch(port, "viewer");
    let second = open_watch(port, "viewer");
    let (code, retry, body) = get_once(port, WATCH_PATH, "viewer");
    assert_eq!(code, 429, "a third watch of one caller: {body}");
    assert!(retry.is_some(), "429 without Retry-After");
    assert!(body.contains("--max-watches-per-caller"), "{body}");

    // Another caller still gets one: the total is 3.
    let third = open_watch(port, "operator");
    let (code, retry, body) = get_once(port, WATCH_PATH, "admin");
    assert_eq!(code, 429, "a fourth watch in total: {body}");
    assert!(retry.is_some(), "429 without Retry-After");
    assert!(
        body.contains("at most 3 in total; --max-watches sets it"),
        "{body}"
    );

    // A closed watch frees its place (the server sees the close on its next write or bookmark).
    stop(first);
    let mut reopened = None;
    for _ in 0..100 {
        let (child, rx) = follow_direct(port, env().token("viewer"), WATCH_PATH);
        if next_watch_line(&rx).as_deref() == Some("BOOKMARK") {
            reopened = Some(child);
            break;
        }
        stop(child);
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let again = reopened.expect("no watch accepted after one closed");
    for ch in [second, third, again] {
        stop(ch);
    }
}

// ---- Long-lived streams re-check access.

/// A ServiceAccount allowed operations and logs on team-a's Runs, its
/// RoleBinding's name, and a token for it.
async fn robot(client: &kube::Client) -> (String, String, String) {
    let sa = unique("robot");
    let manifest = format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: {sa}, namespace: team-a}}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata: {{name: {sa}, namespace: team-a}}\n\
         rules:\n- {{apiGroups: [kruntimes.io], resources: [runs/operations, runs/invoke], verbs: [create]}}\n\
         - {{apiGroups: [logs.kruntimes.io], resources: [runs/log], verbs: [get]}}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: {sa}, namespace: team-a}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: {sa}}}\n\
         subjects: [{{kind: ServiceAccount, name: {sa}, namespace: team-a}}]\n"
    );
    objects::apply(client, &manifest)
        .await
        .unwrap_or_else(|e| panic!("creating {sa}: {e}"));
    let token = objects::service_account_token(client, "team-a", &sa, 3600).await;
    (sa.clone(), sa, token)
}

/// Deletes team-a's object of kind `K` named `name`, if there is one.
async fn delete_in_team_a<K>(admin: &kube::Client, name: &str)
where
    K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>
        + Clone
        + serde::de::DeserializeOwned
        + std::fmt::Debug,
    K::DynamicType: Default,
{
    objects::delete(&Api::<K>::namespaced(admin.clone(), "team-a"), name).await;
}

async fn ws_open_token(port: u16, path: &str, token: &str) -> Option<Ws> {
    let tls = tls_connect(port, b"http/1.1").await.ok()?;
    let mut req = tokio_tungstenite::tungstenite::client::IntoClientRequest::into_client_request(
        format!("wss://localhost:{port}{path}"),
    )
    .unwrap();
    req.headers_mut()
        .insert("authorization", format!("Bearer {token}").parse().unwrap());
    tokio_tungstenite::client_async(req, tls)
        .await
        .ok()
        .map(|(ws, _)| ws)
}

/// Waits for the socket to end; returns the last text event and the close code.
async fn revoked_socket(ws: &mut Ws, within: Duration) -> (Option<Value>, Option<u16>) {
    use futures::StreamExt;
    let mut last = None;
    let deadline = tokio::time::Instant::now() + within;
    loop {
        match tokio::time::timeout_at(deadline, ws.next()).await {
            Err(_) => panic!("the socket is still open {within:?} after access was revoked"),
            Ok(Some(Ok(tokio_tungstenite::tungstenite::Message::Text(t)))) => {
                last = serde_json::from_str(t.as_str()).ok();
            }
            Ok(Some(Ok(tokio_tungstenite::tungstenite::Message::Close(c)))) => {
                return (last, c.map(|c| u16::from(c.code)));
            }
            Ok(Some(Ok(_))) => {}
            Ok(Some(Err(_)) | None) => return (last, None),
        }
    }
}

/// One invoke over an existing HTTP/2 connection with `token`: its status.
async fn h2_invoke(
    send: &mut hyper::client::conn::http2::SendRequest<http_body_util::Full<bytes::Bytes>>,
    port: u16,
    path: &str,
    token: &str,
) -> u16 {
    let bearer = format!("Bearer {token}");
    h2_send(send, port, path, &bearer, bytes::Bytes::from_static(b"{}"))
        .await
        .0
}

/// Calls every 100 ms over `send` until one answers `want`, within
/// `within`; then the next calls must answer it too. The calls made.
async fn h2_until(
    send: &mut hyper::client::conn::http2::SendRequest<http_body_util::Full<bytes::Bytes>>,
    port: u16,
    path: &str,
    token: &str,
    want: u16,
    within: Duration,
) -> usize {
    let deadline = Instant::now() + within;
    let mut calls = 0;
    loop {
        calls += 1;
        let code = h2_invoke(send, port, path, token).await;
        if code == want {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no {want} within {within:?} ({calls} calls, the last {code})"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for _ in 0..3 {
        assert_eq!(h2_invoke(send, port, path, token).await, want);
    }
    calls
}

/// An HTTP/2 connection keeps what it learned of its caller (the token's
/// credentials, the last access decision), never past the caches' own
/// deadlines: on one connection, a removed permission and then a deleted
/// ServiceAccount are refused within the caches' TTLs, and a second
/// caller's token on the same connection is its own.
#[tokio::test]
async fn one_http2_connection_sees_revocations_within_the_cache_ttls() {
    let (c, _dir) = v1_console(&[
        "--authorization-cache-ttl=2s",
        "--authentication-cache-ttl=2s",
    ]);
    let fx = Fixtures::new("team-a").await;
    let admin = fx.client.clone();
    let (fname, fuid) = fx.ready_run("function").await;
    let path = invoke_path("team-a", &fname, &fuid);
    let port = c.console_port;
    let tls = tls_connect(port, b"h2").await.unwrap();
    let (mut send, conn) =
        hyper::client::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
            .handshake(hyper_util::rt::TokioIo::new(tls))
            .await
            .unwrap();
    let conn = tokio::spawn(conn);
    // A TTL of 2 s each: what the caches decided is gone within one.
    let within = Duration::from_secs(2) + MARGIN;

    // Authorization: allowed (once RBAC has it), then the RoleBinding goes.
    let (_sa, binding, token) = robot(&admin).await;
    h2_until(&mut send, port, &path, &token, 200, Duration::from_secs(30)).await;
    delete_in_team_a::<RoleBinding>(&admin, &binding).await;
    h2_until(&mut send, port, &path, &token, 403, within).await;

    // Another caller on the same connection, then its ServiceAccount goes;
    // the first caller is still refused in between.
    let (sa2, _binding2, token2) = robot(&admin).await;
    h2_until(
        &mut send,
        port,
        &path,
        &token2,
        200,
        Duration::from_secs(30),
    )
    .await;
    assert_eq!(h2_invoke(&mut send, port, &path, &token).await, 403);
    assert_eq!(h2_invoke(&mut send, port, &path, &token2).await, 200);
    delete_in_team_a::<ServiceAccount>(&admin, &sa2).await;
    // kube-apiserver keeps its own yes to a token for 10 s (its token
    // authenticator's cache) before the Console's 2 s begin to matter.
    let apiserver = Duration::from_secs(10);
    h2_until(&mut send, port, &path, &token2, 401, apiserver + within).await;
    drop(send);
    conn.abort();
}

#[tokio::test]
async fn open_streams_end_when_access_is_revoked() {
    let (c, _dir) = v1_console(&[
        "--authorization-cache-ttl=2s",
        "--authentication-cache-ttl=2s",
    ]);
    let fx = Fixtures::new("team-a").await;
    let admin = fx.client.clone();
    let (sname, suid) = fx.ready_run("session").await;
    let ops = ops_path("team-a", &sname, &suid);
    let LoggedRun { run, pod, .. } = fx.logged_run("capped", "first").await;
    let log =
        format!("/apis/logs.kruntimes.io/v1alpha1/namespaces/team-a/runs/{run}/log?follow=true");
    // TTL 2 s each: a revocation is seen within two TTLs and a re-check period.
    let within = Duration::from_secs(6) + MARGIN;

    // Authorization revoked: the RoleBinding goes.
    let (sa, binding, token) = robot(&admin).await;
    let mut ws = None;
    for _ in 0..60 {
        ws = ws_open_token(c.console_port, &ops, &token).await;
        if ws.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut ws = ws.expect("the ServiceAccount's socket");
    let (mut follow, rx) = follow_direct(c.api_port, &token, &log);
    assert_eq!(next_message(&rx).as_deref(), Some("first"));
    delete_in_team_a::<RoleBinding>(&admin, &binding).await;
    let (event, code) = revoked_socket(&mut ws, within).await;
    let event = event.expect("a terminal event before the close");
    assert_eq!(event["type"], "terminal", "{event}");
    assert!(
        event["error"]
            .as_str()
            .unwrap_or_default()
            .contains("revoked"),
        "{event}"
    );
    assert_eq!(code, Some(1008));
    let last = rx.recv_timeout(within).expect("a final Status line");
    let status: Value = serde_json::from_str(&last).unwrap();
    assert_eq!(status["kind"], "Status", "{last}");
    assert_eq!(status["code"], 403, "{last}");
    assert!(
        status["message"]
            .as_str()
            .unwrap_or_default()
            .contains("access was revoked")
    );
    assert!(
        rx.recv_timeout(within).is_err(),
        "the follow went on after its Status"
    );
    let _ = follow.kill();
    let _ = follow.wait();

    // Authentication revoked: the ServiceAccount goes.
    let (sa2, _binding2, token2) = robot(&admin).await;
    let mut ws = ws_open_token(c.console_port, &ops, &token2)
        .await
        .expect("the second ServiceAccount's socket");
    let (mut follow, rx) = follow_direct(
        c.console_port,
        &token2,
        &format!("/api/namespaces/team-a/runs/{run}/logs?follow=true"),
    );
    assert_eq!(next_message(&rx).as_deref(), Some("first"));
    delete_in_team_a::<ServiceAccount>(&admin, &sa2).await;
    let (event, code) = revoked_socket(&mut ws, within).await;
    let event = event.expect("a terminal event before the close");
    assert!(
        event["error"]
            .as_str()
            .unwrap_or_default()
            .contains("no longer authenticates"),
        "{event}"
    );
    assert_eq!(code, Some(1008));
    let last = rx
        .recv_timeout(within)
        .expect("a final Status line on /api");
    let status: Value = serde_json::from_str(&last).unwrap();
    assert_eq!(status["code"], 401, "{last}");
    let _ = follow.kill();
    let _ = follow.wait();

    for name in [&sa, &sa2] {
        delete_in_team_a::<Role>(&admin, name).await;
        delete_in_team_a::<RoleBinding>(&admin, name).await;
        delete_in_team_a::<ServiceAccount>(&admin, name).await;
    }
    fx.delete_pod(&pod).await;
}

// ---- The Console's pools of connections to kube-apiserver.

/// Established TCP connections of process `pid` to 127.0.0.1:`port`.
fn connections_to(pid: u32, port: u16) -> usize {
    let mut inodes = std::collections::HashSet::new();
    for fd in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        if let Ok(target) = std::fs::read_link(fd.path()) {
            let t = target.to_string_lossy();
            if let Some(n) = t.strip_prefix("socket:[").and_then(|r| r.strip_suffix(']')) {
                inodes.insert(n.to_owned());
            }
        }
    }
    let table = std::fs::read_to_string(format!("/proc/{pid}/net/tcp")).unwrap();
    table
        .lines()
        .skip(1)
        .filter(|row| {
            let cols: Vec<&str> = row.split_whitespace().collect();
            // rem_address is HEX_IP:HEX_PORT; st 01 is ESTABLISHED.
            cols.len() > 9
                && cols[2] == format!("0100007F:{port:04X}")
                && cols[3] == "01"
                && inodes.contains(cols[9])
        })
        .count()
}

/// Reads the tail of `run` `n` times at once on the aggregated listener:
/// each read is a few requests to kube-apiserver with the Console's own identity.
fn burst_of_tails(c: &ConsoleProcess, run: &str, n: usize) {
    let path =
        format!("/apis/logs.kruntimes.io/v1alpha1/namespaces/team-a/runs/{run}/log?tailLines=5");
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..n)
            .map(|_| s.spawn(|| get_once(c.api_port, &path, "viewer")))
            .collect();
        for h in handles {
            let (code, _, body) = h.join().unwrap();
            assert_eq!(code, 200, "{body}");
        }
    });
}

/// After a burst of concurrent reads, the Console keeps at most
/// `--kube-idle-connections` idle connections to kube-apiserver; with a
/// large bound the same burst leaves many (so the burst did open them).
#[tokio::test]
async fn a_burst_of_reads_leaves_at_most_kube_idle_connections_to_kube_apiserver() {
    let port: u16 = env()
        .var("TESTENV_APISERVER")
        .rsplit(':')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let fx = Fixtures::new("team-a").await;
    let LoggedRun { run, pod, .. } = fx.logged_run("pooled", "a line").await;
    let mut left = Vec::new();
    for bound in ["1000", "2"] {
        let (c, _dir) = console(&[&format!("--kube-idle-connections={bound}")]);
        // Warm up: the authorization cache and the watches the Console keeps.
        burst_of_tails(&c, &run, 1);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let before = connections_to(c.pid(), port);
        burst_of_tails(&c, &run, 48);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let after = connections_to(c.pid(), port);
        left.push((bound, before, after));
    }
    fx.delete_pod(&pod).await;
    let (_, before, after) = left[0];
    assert!(
        after >= before + 6,
        "with room for 1000 idle connections the burst left only {after} (before: {before}): it did not open several at once {left:?}"
    );
    let (_, before, after) = left[1];
    assert!(
        after <= before + 2,
        "--kube-idle-connections=2, but {after} connections to kube-apiserver are open after the burst (before: {before}) {left:?}"
    );
}

// ---- Pod log reads open at once.

/// With `--log-max-concurrent-reads=1`, a history streamed to a client that
/// reads nothing holds the only place until `--log-follower-final-timeout`;
/// a tail waits for it meanwhile and is answered once it is given up.
#[tokio::test]
async fn pod_log_reads_wait_for_a_place_and_a_client_that_does_not_read_gives_it_up() {
    let (c, _dir) = console(&[
        "--log-max-concurrent-reads=1",
        "--log-follower-final-timeout=3s",
    ]);
    let fx = Fixtures::new("team-a").await;
    let big = fx.logged_run("stalled", "start").await;
    let other = fx.logged_run("waiting", "other").await;
    let base = "/apis/logs.kruntimes.io/v1alpha1/namespaces/team-a/runs";
    let (code, _, body) = get_once(
        c.api_port,
        &format!("{base}/{}/log?tailLines=1", big.run),
        "viewer",
    );
    assert_eq!(code, 200, "{body}");
    let first: Value = serde_json::from_str(&body).unwrap();
    let cursor = first["records"][0]["cursor"].as_str().unwrap().to_owned();
    // ~24 MiB of history after it, more than the sockets hold, stamped
    // right after it: older than what the Pod's shared stream starts with
    // once the follow opens below, so it comes as history only.
    let at: jiff::Timestamp = first["records"][0]["time"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let filler = "x".repeat(1000);
    for batch in 0..24i64 {
        let lines: Vec<(String, String)> = (0..1000i64)
            .map(|i| {
                let t = at + jiff::SignedDuration::from_micros(batch * 1000 + i + 1);
                (
                    t.strftime("%Y-%m-%dT%H:%M:%S%.9fZ").to_string(),
                    runtimed_line(&big.uid, &big.run, "team-a", &big.pod, "stdout", &filler),
                )
            })
            .collect();
        fx.append_log_at(&big.pod, &lines);
    }
    // Past the shared stream's clock-skew margin (5 s).
    tokio::time::sleep(Duration::from_secs(7)).await;
    // A follow from the first record whose client never reads (a small
    // receive buffer: Linux would otherwise take up to 32 MiB of it).
    let socket = tokio::net::TcpSocket::new_v4().unwrap();
    socket.set_recv_buffer_size(64 << 10).unwrap();
    let tcp = socket
        .connect(([127, 0, 0, 1], c.api_port).into())
        .await
        .unwrap();
    let mut stalled = tokio_rustls::TlsConnector::from(client_config(b"http/1.1"))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    let request = format!(
        "GET {base}/{}/log?follow=true&sinceCursor={cursor} HTTP/1.1\r\nHost: localhost\r\nAuthorization: Bearer {}\r\n\r\n",
        big.run,
        env().token("viewer")
    );
    stalled.write_all(request.as_bytes()).await.unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;

    let (tx, rx) = mpsc::channel();
    let port = c.api_port;
    let path = format!("{base}/{}/log?tailLines=1", other.run);
    let started = Instant::now();
    std::thread::spawn(move || {
        let _ = tx.send(get_once(port, &path, "viewer"));
    });
    if let Ok(r) = rx.recv_timeout(Duration::from_millis(1500)) {
        panic!("a tail was answered while the only place was held: {r:?}");
    }
    let (code, _, body) = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("the tail never got the place back from the client that does not read");
    assert_eq!(code, 200, "{body}");
    assert!(body.contains("other"), "{body}");
    assert!(started.elapsed() >= Duration::from_millis(1500));
    drop(stalled);
    fx.delete_pod(&big.pod).await;
    fx.delete_pod(&other.pod).await;
}

/// The next message of a socket within 15 s, or its end (`None`).
async fn ws_next(ws: &mut Ws) -> Option<tokio_tungstenite::tungstenite::Message> {
    use futures::StreamExt;
    match tokio::time::timeout(Duration::from_secs(15), ws.next()).await {
        Err(_) => panic!("no message within 15 s"),
        Ok(Some(Ok(m))) => Some(m),
        Ok(Some(Err(_)) | None) => None,
    }
}

/// The close code a socket ends with, skipping other messages.
async fn ws_close_code(ws: &mut Ws) -> Option<u16> {
    use tokio_tungstenite::tungstenite::Message;
    loop {
        match ws_next(ws).await {
            Some(Message::Close(c)) => return c.map(|c| u16::from(c.code)),
            Some(_) => {}
            None => return None,
        }
    }
}

#[tokio::test]
async fn operations_sockets_keep_their_bounds_and_the_websocket_rules() {
    use futures::SinkExt;
    use tokio_tungstenite::tungstenite::Message;
    use tokio_tungstenite::tungstenite::protocol::frame::Frame;
    use tokio_tungstenite::tungstenite::protocol::frame::coding::{Data, OpCode};
    let (c, _dir) = v1_console(&[
        "--access-max-ws-message-bytes=4096",
        "--access-idle-timeout=3s",
    ]);
    let fx = Fixtures::new("team-a").await;
    let (sname, suid) = fx.ready_run("session").await;
    let ops = ops_path("team-a", &sname, &suid);
    let mut first = None;
    for _ in 0..60 {
        if let Ok(ws) = ws_open(c.console_port, &ops, "operator").await {
            first = Some(ws);
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let mut ws = first.expect("the private Console never served the Run");

    // A message in two fragments with a ping between them reaches the
    // gateway whole; the gateway's pong comes back.
    let op = serde_json::json!({"type": "send", "operation": {"command": "echo", "args": ["in", "fragments"]}})
        .to_string();
    let (head, tail) = op.as_bytes().split_at(10);
    let text = OpCode::Data(Data::Text);
    ws.send(Message::Frame(Frame::message(head.to_vec(), text, false)))
        .await
        .unwrap();
    ws.send(Message::Ping(b"between".to_vec().into()))
        .await
        .unwrap();
    let cont = OpCode::Data(Data::Continue);
    ws.send(Message::Frame(Frame::message(tail.to_vec(), cont, true)))
        .await
        .unwrap();
    let (mut pong, mut output) = (false, String::new());
    loop {
        match ws_next(&mut ws).await.expect("the socket stays open") {
            Message::Pong(p) => pong |= &p[..] == b"between",
            Message::Text(t) => {
                let ev: Value = serde_json::from_str(t.as_str()).unwrap();
                if ev["type"] == "output" {
                    output.push_str(ev["data"].as_str().unwrap_or_default());
                }
                if ev["type"] == "terminal" {
                    assert_eq!(ev["exitCode"], 0, "{ev}");
                    break;
                }
            }
            m => panic!("unexpected {m:?}"),
        }
    }
    assert!(output.contains("in fragments"), "{output}");
    assert!(pong, "the gateway's pong did not come back");

    // Quiet both ways for the idle timeout: closed with 1001, not sooner.
    let quiet = tokio::time::Instant::now();
    assert_eq!(ws_close_code(&mut ws).await, Some(1001));
    assert!(
        quiet.elapsed() >= Duration::from_secs(2),
        "{:?}",
        quiet.elapsed()
    );

    // Over the message bound: 1009, in one frame or in fragments.
    let mut ws = ws_open(c.console_port, &ops, "operator").await.unwrap();
    ws.send(Message::Text("x".repeat(5000).into()))
        .await
        .unwrap();
    assert_eq!(ws_close_code(&mut ws).await, Some(1009));
    let mut ws = ws_open(c.console_port, &ops, "operator").await.unwrap();
    let bin = OpCode::Data(Data::Binary);
    ws.send(Message::Frame(Frame::message(vec![0u8; 3000], bin, false)))
        .await
        .unwrap();
    let _ = ws
        .send(Message::Frame(Frame::message(vec![0u8; 3000], cont, true)))
        .await;
    assert_eq!(ws_close_code(&mut ws).await, Some(1009));

    // Text that is not UTF-8: 1007; a frame the protocol refuses (unmasked): 1002.
    let mut ws = ws_open(c.console_port, &ops, "operator").await.unwrap();
    ws.send(Message::Frame(Frame::message(vec![0xC3, 0x28], text, true)))
        .await
        .unwrap();
    assert_eq!(ws_close_code(&mut ws).await, Some(1007));
    let mut ws = ws_open(c.console_port, &ops, "operator").await.unwrap();
    ws.get_mut().write_all(&[0x81, 0x01, b'x']).await.unwrap();
    ws.get_mut().flush().await.unwrap();
    assert_eq!(ws_close_code(&mut ws).await, Some(1002));

    // The caller's close reaches the gateway and is answered with its code.
    let mut ws = ws_open(c.console_port, &ops, "operator").await.unwrap();
    ws.send(Message::Close(Some(
        tokio_tungstenite::tungstenite::protocol::CloseFrame {
            code: 4000.into(),
            reason: "bye".into(),
        },
    )))
    .await
    .unwrap();
    assert_eq!(ws_close_code(&mut ws).await, Some(4000));
}
