//! `/v1` Runtime access end to end: the real control plane, the Console and
//! the fake Runtime gateway.

use std::process::Command;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use kruntimes_tests::curl::{self, Body, Reply, bearer};
use kruntimes_tests::env::{
    Fixtures, env, free_port, gateway_requests, header_values, ops_path, unique,
};
use kruntimes_tests::stream::{self, Ws, WsTarget};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

/// A POST through curl; `body_file` sends a file's bytes instead of `body`.
fn post(
    url: &str,
    headers: &[(&str, &str)],
    body: &str,
    body_file: Option<&std::path::Path>,
) -> Reply {
    let body = body_file.map_or(Body::Raw(body), Body::File);
    curl::request("POST", url, headers, body)
}

/// A Run in the fixtures' namespace with `mode` and `phase`, once the shared
/// Console's watch-backed Run cache shows it so; returns (name, uid).
async fn run(fx: &Fixtures, runtime: &str, mode: &str, phase: &str) -> (String, String) {
    let name = unique(&format!("{mode}-run"));
    let spec = if mode == "session" {
        json!({"mode": {"session": {"leaseSeconds": 60}}})
    } else {
        json!({})
    };
    let uid = fx.create_run(&name, runtime, mode, spec).await;
    fx.set_run_status(&name, json!({"phase": phase})).await;
    settle(&fx.ns, &name, &uid, mode, phase).await;
    (name, uid)
}

fn invoke_url(ns: &str, name: &str, uid: &str) -> String {
    format!(
        "{}/v1/namespaces/{ns}/runs/{name}/{uid}/invoke",
        env().var("CONSOLE_URL")
    )
}

/// Waits until the Console's Run cache holds the Run in `mode` and `phase`
/// (a new Run is first seen without its status); fails after 10 s.
async fn settle(ns: &str, name: &str, uid: &str, mode: &str, phase: &str) {
    let admin = bearer("admin");
    let mut last = String::new();
    for _ in 0..100 {
        let seen = if mode == "session" {
            // Only a session socket resolves a session Run's phase.
            match ws_connect(&ops_path(ns, name, uid), &[("Authorization", &admin)]).await {
                Ok(mut ws) => {
                    let _ = ws.close(None).await;
                    last = "upgraded".into();
                    phase == "Ready"
                }
                Err(code) => {
                    last = code.to_string();
                    phase != "Ready" && code == 503
                }
            }
        } else {
            let r = post(
                &invoke_url(ns, name, uid),
                &[("Authorization", &admin)],
                "{}",
                None,
            );
            last = format!("{} {}", r.code, r.body);
            match (mode, phase) {
                ("function", "Ready") => r.code == 200,
                ("function", _) => r.code == 503 && r.body.contains(&format!("is {phase}")),
                _ => r.code == 400,
            }
        };
        if seen {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the Console never showed {mode} Run {ns}/{name} as {phase}; last answer: {last}");
}

#[tokio::test]
async fn operator_invokes_and_the_gateway_sees_identity_but_no_credentials() {
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, "bash", "function", "Ready").await;
    let r = post(
        &invoke_url("team-a", &name, &uid),
        &[
            ("Authorization", &bearer("operator")),
            ("Cookie", "sid=should-not-pass"),
            ("X-Remote-User", "admin"),
            ("X-Remote-Group", "system:masters"),
            ("X-Kruntime-Invocation-ID", "inv-given-1"),
            ("Content-Type", "application/json"),
        ],
        r#"{"input": 42}"#,
        None,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["user"], "operator");
    assert_eq!(v["body"]["input"], 42);
    assert_eq!(r.header("x-kruntime-invocation-id"), Some("inv-given-1"));
    let seen = gateway_requests(&name);
    let req = seen.last().expect("the gateway saw the call");
    assert!(header_values(req, "authorization").is_empty());
    assert!(header_values(req, "cookie").is_empty());
    assert_eq!(header_values(req, "x-remote-user"), ["operator"]);
    let groups = header_values(req, "x-remote-group");
    assert!(
        groups.contains(&"testenv:users".to_owned())
            && !groups.contains(&"system:masters".to_owned()),
        "{groups:?}"
    );
    assert_eq!(req["clientCN"], "kruntimes-console");

    // Without an ID one is generated and echoed.
    let r = post(
        &invoke_url("team-a", &name, &uid),
        &[("Authorization", &bearer("operator"))],
        "{}",
        None,
    );
    assert!(
        r.header("x-kruntime-invocation-id")
            .is_some_and(|v| v.starts_with("inv-"))
    );
}

#[tokio::test]
async fn who_may_invoke() {
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, "bash", "function", "Ready").await;
    let url = invoke_url("team-a", &name, &uid);
    for user in ["viewer", "outsider"] {
        let r = post(&url, &[("Authorization", &bearer(user))], "{}", None);
        assert_eq!(r.code, 403, "{user}: {}", r.body);
        assert_eq!(r.json()["error"]["access"]["subresource"], "invoke");
    }
    assert_eq!(post(&url, &[], "{}", None).code, 401);
    assert_eq!(
        post(&url, &[("Authorization", "Bearer not-a-token")], "{}", None).code,
        401
    );
    // A client certificate authenticates /v1 (user viewer: authenticated, not allowed).
    let out = Command::new("curl")
        .args([
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            "-X",
            "POST",
            "--cacert",
            env().var("CONSOLE_CA"),
            "--cert",
        ])
        .arg(env().pki("user-viewer.crt"))
        .arg("--key")
        .arg(env().pki("user-viewer.key"))
        .arg(&url)
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "403");
}

#[tokio::test]
async fn session_cookie_works_and_an_explicit_header_wins() {
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, "bash", "function", "Ready").await;
    let login = |user: &str| {
        let r = post(
            &format!("{}/api/session", env().var("CONSOLE_URL")),
            &[("Content-Type", "application/json")],
            &json!({"token": env().token(user)}).to_string(),
            None,
        );
        assert_eq!(r.code, 200);
        r.headers
            .iter()
            .filter(|(k, v)| k == "set-cookie" && !v.contains("Max-Age=0"))
            .filter_map(|(_, v)| v.split(';').next().map(str::to_owned))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let origin = env().var("CONSOLE_URL").to_owned();
    let url = invoke_url("team-a", &name, &uid);
    let op_cookie = login("operator");
    let r = post(
        &url,
        &[("Cookie", &op_cookie), ("Origin", &origin)],
        "{}",
        None,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.json()["user"], "operator");
    // Without a matching Origin a cookie cannot change anything.
    assert_eq!(post(&url, &[("Cookie", &op_cookie)], "{}", None).code, 403);
    // The header wins over the cookie, both ways.
    let r = post(
        &url,
        &[
            ("Cookie", &op_cookie),
            ("Origin", &origin),
            ("Authorization", &bearer("viewer")),
        ],
        "{}",
        None,
    );
    assert_eq!(r.code, 403);
    let viewer_cookie = login("viewer");
    let r = post(
        &url,
        &[
            ("Cookie", &viewer_cookie),
            ("Origin", &origin),
            ("Authorization", &bearer("operator")),
        ],
        "{}",
        None,
    );
    assert_eq!(r.code, 200);
}

#[tokio::test]
async fn run_resolution_errors() {
    let fx = Fixtures::new("team-a").await;
    let (fname, fuid) = run(&fx, "bash", "function", "Ready").await;
    let (pname, puid) = run(&fx, "bash", "function", "Pending").await;
    let (tname, tuid) = run(&fx, "bash", "task", "Running").await;
    let op = bearer("operator");
    let h = [("Authorization", op.as_str())];
    let wrong = post(
        &invoke_url("team-a", &fname, "00000000-0000-0000-0000-000000000000"),
        &h,
        "{}",
        None,
    );
    assert_eq!(wrong.code, 404, "{}", wrong.body);
    assert_eq!(
        post(&invoke_url("team-a", "no-such-run", &fuid), &h, "{}", None).code,
        404
    );
    let pending = post(&invoke_url("team-a", &pname, &puid), &h, "{}", None);
    assert_eq!(pending.code, 503, "{}", pending.body);
    assert!(pending.header("retry-after").is_some());
    let task = post(&invoke_url("team-a", &tname, &tuid), &h, "{}", None);
    assert_eq!(task.code, 400, "{}", task.body);
    assert!(
        task.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("task")
    );
    let bad = post(
        &format!(
            "{}/v1/namespaces/team-a/runs/{fname}/..%2F..%2Fx/invoke",
            env().var("CONSOLE_URL")
        ),
        &h,
        "{}",
        None,
    );
    assert!(bad.code == 400 || bad.code == 404, "{}", bad.code);
}

#[tokio::test]
async fn bounds_are_enforced_before_forwarding() {
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, "bash", "function", "Ready").await;
    let url = invoke_url("team-a", &name, &uid);
    let op = bearer("operator");
    let before = gateway_requests(&name).len();

    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    std::fs::write(&big, vec![b'x'; (1 << 20) + 1]).unwrap();
    let r = post(&url, &[("Authorization", &op)], "", Some(&big));
    assert_eq!(r.code, 413, "{}", r.body);
    // Chunked (no Content-Length): refused while streaming, still nothing forwarded.
    let r = post(
        &url,
        &[("Authorization", &op), ("Transfer-Encoding", "chunked")],
        "",
        Some(&big),
    );
    assert_eq!(r.code, 413, "{}", r.body);
    let filler = "f".repeat(17 << 10);
    let r = post(
        &url,
        &[("Authorization", &op), ("X-Filler", &filler)],
        "{}",
        None,
    );
    assert_eq!(r.code, 431, "{}", r.body);
    let id = "i".repeat(129);
    let r = post(
        &url,
        &[("Authorization", &op), ("X-Kruntime-Invocation-ID", &id)],
        "{}",
        None,
    );
    assert_eq!(r.code, 400);
    assert_eq!(
        gateway_requests(&name).len(),
        before,
        "the gateway saw a refused request"
    );
    // Exactly 1 MiB is fine.
    std::fs::write(&big, vec![b'x'; 1 << 20]).unwrap();
    assert_eq!(
        post(&url, &[("Authorization", &op)], "", Some(&big)).code,
        200
    );
}

#[tokio::test]
async fn authorization_is_cached_and_revocation_ends_access_within_the_ttl() {
    let e = env();
    let ns = "team-a";
    let user = unique("op-temp");
    let client = e.admin().await;
    kruntimes_tests::objects::apply(
        &client,
        &format!(
            "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: {user}, namespace: {ns}}}\n---\n\
             apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: {user}, namespace: {ns}}}\n\
             roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kruntimes-operator}}\n\
             subjects: [{{kind: ServiceAccount, name: {user}, namespace: {ns}}}]\n"
        ),
    )
    .await
    .unwrap();
    let token = format!(
        "Bearer {}",
        kruntimes_tests::objects::service_account_token(&client, ns, &user, 3600).await
    );
    let fx = Fixtures::new(ns).await;
    let (name, uid) = run(&fx, "bash", "function", "Ready").await;
    // A Console of its own, so no other test's calls move its metrics.
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let console = kruntimes_tests::env::ConsoleProcess::start(
        dir.path(),
        &[
            format!("--console-listen=127.0.0.1:{port}"),
            format!("--gateway-ca-file={}", e.pki("gateway-ca.crt").display()),
            format!("--gateway-client-cert={}", e.pki("console.crt").display()),
            format!("--gateway-client-key={}", e.pki("console.key").display()),
        ],
    );
    let url = format!("https://127.0.0.1:{port}/v1/namespaces/{ns}/runs/{name}/{uid}/invoke");
    // Its Run cache loads first.
    for _ in 0..100 {
        if post(&url, &[("Authorization", &bearer("operator"))], "{}", None).code == 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        post(&url, &[("Authorization", &token)], "{}", None).code,
        200
    );
    let metric = |name| console.metric(name).unwrap_or(0.0);
    let reviews = metric("kruntimes_console_access_reviews_total");
    assert!(reviews >= 1.0, "the first call made no SubjectAccessReview");
    let hits = metric("kruntimes_console_access_review_cache_hits_total");
    assert_eq!(
        post(&url, &[("Authorization", &token)], "{}", None).code,
        200
    );
    assert_eq!(
        metric("kruntimes_console_access_reviews_total"),
        reviews,
        "a second call made a new SubjectAccessReview"
    );
    assert!(metric("kruntimes_console_access_review_cache_hits_total") > hits);

    kruntimes_tests::objects::delete(
        &kube::Api::<k8s_openapi::api::rbac::v1::RoleBinding>::namespaced(client.clone(), ns),
        &user,
    )
    .await;
    let revoked = Instant::now();
    let ttl = Duration::from_secs(10);
    loop {
        let r = post(&url, &[("Authorization", &token)], "{}", None);
        if r.code == 403 {
            break;
        }
        assert!(
            revoked.elapsed() < ttl + Duration::from_secs(5),
            "still allowed {:?} after revocation",
            revoked.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
}

/// Opens operations:ws on the Console; `Err(status)` when the upgrade is refused.
async fn ws_connect(path: &str, headers: &[(&str, &str)]) -> Result<Ws, u16> {
    let ca = std::path::PathBuf::from(env().var("CONSOLE_CA"));
    let target = WsTarget {
        addr: env().var("CONSOLE_URL").trim_start_matches("https://"),
        server_name: "localhost",
        ca: &ca,
        client_cert: None,
    };
    stream::ws_connect(&target, path, headers).await
}

async fn next_event(ws: &mut Ws) -> Value {
    loop {
        let m = tokio::time::timeout(Duration::from_secs(15), ws.next())
            .await
            .expect("an event in time")
            .expect("socket open")
            .expect("frame");
        if let Message::Text(t) = m {
            return serde_json::from_str(t.as_str()).unwrap();
        }
    }
}

#[tokio::test]
async fn session_operations_stream_events_in_order_and_cancel() {
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, "bash", "session", "Ready").await;
    let op = bearer("operator");
    let mut ws = ws_connect(&ops_path("team-a", &name, &uid), &[("Authorization", &op)])
        .await
        .expect("upgrade");
    let send = |cmd: &str, args: &[&str]| {
        Message::Text(
            json!({"type": "send", "operation": {"command": cmd, "args": args}})
                .to_string()
                .into(),
        )
    };
    ws.send(send("echo", &["hello", "world"])).await.unwrap();
    let accepted = next_event(&mut ws).await;
    assert_eq!(accepted["type"], "accepted");
    let mut kinds = vec!["accepted".to_owned()];
    let mut output = String::new();
    loop {
        let ev = next_event(&mut ws).await;
        let t = ev["type"].as_str().unwrap().to_owned();
        if t == "output" {
            output.push_str(ev["data"].as_str().unwrap_or_default());
        }
        kinds.push(t.clone());
        if t == "terminal" {
            assert_eq!(ev["exitCode"], 0);
            break;
        }
    }
    assert!(output.contains("hello world"), "{output}");
    assert_eq!(kinds.first().map(String::as_str), Some("accepted"));
    assert_eq!(kinds.last().map(String::as_str), Some("terminal"));

    // Heartbeats pass; a long operation is cancelled.
    ws.send(Message::Text(
        json!({"type": "heartbeat"}).to_string().into(),
    ))
    .await
    .unwrap();
    ws.send(send("sleep", &["30"])).await.unwrap();
    let accepted = next_event(&mut ws).await;
    let id = accepted["operationID"].as_str().unwrap().to_owned();
    ws.send(Message::Text(
        json!({"type": "cancel", "operationID": id})
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    loop {
        let ev = next_event(&mut ws).await;
        if ev["type"] == "terminal" {
            assert_eq!(ev["status"], "Cancelled");
            break;
        }
    }
    // Binary output arrives base64-encoded.
    ws.send(send("binary", &[])).await.unwrap();
    loop {
        let ev = next_event(&mut ws).await;
        if ev["type"] == "output" && ev["encoding"] == "base64" {
            break;
        }
        assert_ne!(ev["type"], "terminal", "no base64 output");
    }
    ws.close(None).await.unwrap();
}

#[tokio::test]
async fn operations_access_and_resolution() {
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, "bash", "session", "Ready").await;
    let (fname, fuid) = run(&fx, "bash", "function", "Ready").await;
    for user in ["viewer", "outsider"] {
        let r = ws_connect(
            &ops_path("team-a", &name, &uid),
            &[("Authorization", &bearer(user))],
        )
        .await;
        assert_eq!(r.err(), Some(403), "{user}");
    }
    assert_eq!(
        ws_connect(&ops_path("team-a", &name, &uid), &[])
            .await
            .err(),
        Some(401)
    );
    let op = bearer("operator");
    assert_eq!(
        ws_connect(
            &ops_path("team-a", &fname, &fuid),
            &[("Authorization", &op)]
        )
        .await
        .err(),
        Some(400)
    );
    assert_eq!(
        ws_connect(
            &ops_path("team-a", &name, "00000000-0000-0000-0000-000000000000"),
            &[("Authorization", &op)]
        )
        .await
        .err(),
        Some(404)
    );
    // A cookie-authenticated upgrade from another origin is refused.
    let r = post(
        &format!("{}/api/session", env().var("CONSOLE_URL")),
        &[("Content-Type", "application/json")],
        &json!({"token": env().token("operator")}).to_string(),
        None,
    );
    let cookie = r
        .headers
        .iter()
        .filter(|(k, v)| k == "set-cookie" && !v.contains("Max-Age=0"))
        .filter_map(|(_, v)| v.split(';').next().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("; ");
    let evil = ws_connect(
        &ops_path("team-a", &name, &uid),
        &[("Cookie", &cookie), ("Origin", "https://evil.example")],
    )
    .await;
    assert_eq!(evil.err(), Some(403));
    let ok = ws_connect(
        &ops_path("team-a", &name, &uid),
        &[("Cookie", &cookie), ("Origin", env().var("CONSOLE_URL"))],
    )
    .await;
    assert!(ok.is_ok());
}

/// A gateway of its own for fault tests, reached through `<runtime>-gateway`.
struct OwnGateway {
    child: std::process::Child,
    control: String,
    runtime: String,
}

impl Drop for OwnGateway {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn own_gateway() -> OwnGateway {
    let e = env();
    own_gateway_with(
        &e.pki("gateway.crt"),
        &e.pki("gateway.key"),
        &e.pki("console-ca.crt"),
    )
    .await
}

/// A gateway of its own serving `cert`/`key` and trusting clients of `client_ca`.
async fn own_gateway_with(
    cert: &std::path::Path,
    key: &std::path::Path,
    client_ca: &std::path::Path,
) -> OwnGateway {
    let e = env();
    let (port, ctl) = (free_port(), free_port());
    let child = Command::new(env!("CARGO_BIN_EXE_fake-gateway"))
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--control-listen")
        .arg(format!("127.0.0.1:{ctl}"))
        .arg("--tls-cert")
        .arg(cert)
        .arg("--tls-key")
        .arg(key)
        .arg("--client-ca")
        .arg(client_ca)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("fake-gateway");
    let mut child = child;
    // The first stdout line is printed once both listeners are bound.
    let stdout = child.stdout.take().expect("gateway stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        use std::io::BufRead;
        // Keep reading to the end so the gateway never writes to a closed pipe.
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let first = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_default();
    assert!(
        first.starts_with("listening on"),
        "fake-gateway did not start: {first:?}"
    );
    let control = format!("http://127.0.0.1:{ctl}");
    let runtime = unique("faulty");
    let svc = format!(
        "apiVersion: v1\nkind: Service\nmetadata: {{name: {runtime}-gateway, namespace: team-a}}\n\
         spec: {{type: ExternalName, externalName: localhost, ports: [{{name: https, port: {port}}}]}}\n"
    );
    kruntimes_tests::objects::apply(&e.admin().await, &svc)
        .await
        .unwrap();
    OwnGateway {
        child,
        control,
        runtime,
    }
}

#[tokio::test]
async fn gateway_faults_pass_through_or_become_503() {
    let gw = own_gateway().await;
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, &gw.runtime, "function", "Ready").await;
    let url = invoke_url("team-a", &name, &uid);
    let op = bearer("operator");
    let first = post(&url, &[("Authorization", &op)], "{}", None);
    assert_eq!(first.code, 200, "{}", first.body);

    let (code, _) = env().curl(
        &format!("{}/mode", gw.control),
        &[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-d",
            r#"{"mode":"429"}"#,
        ],
    );
    assert_eq!(code, 200);
    let r = post(&url, &[("Authorization", &op)], "{}", None);
    assert_eq!(r.code, 429);
    assert!(r.header("retry-after").is_some());
    let (code, _) = env().curl(
        &format!("{}/mode", gw.control),
        &[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-d",
            r#"{"mode":"500"}"#,
        ],
    );
    assert_eq!(code, 200);
    assert_eq!(post(&url, &[("Authorization", &op)], "{}", None).code, 500);
    env().curl(
        &format!("{}/mode", gw.control),
        &[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-d",
            r#"{"mode":"normal"}"#,
        ],
    );

    env().curl(&format!("{}/down", gw.control), &["-X", "POST"]);
    let r = post(&url, &[("Authorization", &op)], "{}", None);
    assert_eq!(r.code, 503, "{}", r.body);
    assert!(
        r.json()["error"]["message"]
            .as_str()
            .unwrap()
            .contains("unreachable")
    );
    env().curl(&format!("{}/up", gw.control), &["-X", "POST"]);
    assert_eq!(post(&url, &[("Authorization", &op)], "{}", None).code, 200);
}

#[tokio::test]
async fn a_client_leaving_mid_operation_closes_the_upstream_socket() {
    let gw = own_gateway().await;
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, &gw.runtime, "session", "Ready").await;
    let stats = || -> Value {
        serde_json::from_str(&env().curl(&format!("{}/stats", gw.control), &[]).1).unwrap()
    };
    // Settling the Run opened (and closed) a socket: start from a quiet gateway.
    let mut quiet = false;
    for _ in 0..100 {
        if stats()["wsOpen"] == 0 {
            quiet = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(quiet, "the settling socket stayed open: {}", stats());
    let disconnects = stats()["upstreamDisconnects"].as_u64().unwrap_or(0);
    let mut ws = ws_connect(
        &ops_path("team-a", &name, &uid),
        &[("Authorization", &bearer("operator"))],
    )
    .await
    .expect("upgrade");
    ws.send(Message::Text(
        json!({"type": "send", "operation": {"command": "sleep", "args": ["30"]}})
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    assert_eq!(next_event(&mut ws).await["type"], "accepted");
    assert_eq!(stats()["wsOpen"], 1);
    drop(ws);
    let mut closed = false;
    for _ in 0..100 {
        let s = stats();
        if s["wsOpen"] == 0 && s["upstreamDisconnects"].as_u64().unwrap_or(0) > disconnects {
            closed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(closed, "the gateway socket stayed open: {}", stats());
    // The gateway down: the upgrade is refused with 503.
    env().curl(&format!("{}/down", gw.control), &["-X", "POST"]);
    assert_eq!(
        ws_connect(
            &ops_path("team-a", &name, &uid),
            &[("Authorization", &bearer("operator"))]
        )
        .await
        .err(),
        Some(503)
    );
}

#[tokio::test]
async fn a_plain_get_on_operations_tells_whether_the_caller_may() {
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, "bash", "session", "Ready").await;
    let url = format!(
        "{}{}",
        env().var("CONSOLE_URL"),
        ops_path("team-a", &name, &uid)
    );
    let get = |user: &str| {
        let h = format!("Authorization: Bearer {}", env().token(user));
        env()
            .curl(&url, &["--cacert", env().var("CONSOLE_CA"), "-H", &h])
            .0
    };
    assert_eq!(get("viewer"), 403);
    assert_eq!(
        get("operator"),
        400,
        "allowed, but a plain GET is not an upgrade"
    );
}

/// Tests that count the shared Console's fast-path requests hold this for
/// writing; tests that send it HTTP/1.1 invokes of their own hold it for
/// reading, so a count sees only its own test's invokes.
static FAST_PATH_COUNT: tokio::sync::RwLock<()> = tokio::sync::RwLock::const_new(());

/// The `fast_path_requests` counter of the shared Console.
fn fast_path_requests() -> u64 {
    let (code, body) = env().curl(&format!("{}/metrics", env().var("CONSOLE_ADMIN_URL")), &[]);
    assert_eq!(code, 200, "{body}");
    body.lines()
        .find_map(|l| l.strip_prefix("kruntimes_console_fast_path_requests_total "))
        .and_then(|v| v.trim().parse().ok())
        .expect("kruntimes_console_fast_path_requests_total")
}

/// A reply's headers as compared between the two paths: lower-case names,
/// without the framing (which differs by HTTP version) and the values that
/// differ per request (their shape is checked).
fn comparable(r: &Reply) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = r
        .headers
        .iter()
        .filter(|(k, _)| {
            !matches!(
                k.as_str(),
                "content-length" | "connection" | "keep-alive" | "transfer-encoding"
            )
        })
        .map(|(k, v)| match k.as_str() {
            "date" => (k.clone(), "<date>".to_owned()),
            "x-request-id" => {
                assert!(
                    v.len() == 16 && v.bytes().all(|b| b.is_ascii_hexdigit()),
                    "request ID {v:?}"
                );
                (k.clone(), "<id>".to_owned())
            }
            _ => (k.clone(), v.clone()),
        })
        .collect();
    out.sort();
    out
}

/// What is sent: a name, the URL, headers and a body.
type Case<'a> = (&'a str, String, Vec<(&'a str, &'a str)>, Body<'a>);

/// The same invoke over HTTP/1.1 (the Console's fast path) and over HTTP/2
/// (hyper and the router) gets the same answer, refusals included, and the
/// gateway sees the same request.
#[tokio::test]
async fn invoke_answers_are_the_same_over_http1_and_http2() {
    let _counting = FAST_PATH_COUNT.write().await;
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, "bash", "function", "Ready").await;
    let (pending, puid) = run(&fx, "bash", "function", "Pending").await;
    let url = invoke_url("team-a", &name, &uid);
    let op = bearer("operator");
    let dir = tempfile::tempdir().unwrap();
    let big = dir.path().join("big");
    std::fs::write(&big, vec![b'x'; (1 << 20) + 1]).unwrap();
    // Under the 64 KiB a refusal reads (and drops) before answering.
    let medium = dir.path().join("medium");
    std::fs::write(&medium, vec![b'x'; 60 << 10]).unwrap();
    let own = env().var("CONSOLE_URL").to_owned();
    let cookie = {
        let r = curl::request(
            "POST",
            &format!("{own}/api/session"),
            &[],
            Body::Json(&json!({"token": env().token("operator")}).to_string()),
        );
        assert_eq!(r.code, 200, "{}", r.body);
        r.headers
            .iter()
            .filter(|(k, v)| k == "set-cookie" && !v.contains("Max-Age=0"))
            .filter_map(|(_, v)| v.split(';').next().map(str::to_owned))
            .collect::<Vec<_>>()
            .join("; ")
    };
    let long_id = "i".repeat(129);
    let viewer = bearer("viewer");
    // (what, URL, headers, body): curl's `Expect` is turned off, so a
    // large body is sent at once on both.
    let cases: Vec<Case<'_>> = vec![
        (
            "allowed",
            url.clone(),
            vec![
                ("Authorization", &op),
                ("Content-Type", "application/json"),
                ("X-Kruntime-Invocation-ID", "inv-same-1"),
                ("X-Request-Id", "client-rid"),
                (
                    "Traceparent",
                    "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
                ),
                ("X-Remote-User", "admin"),
                ("Cookie", "sid=x"),
                ("X-Forwarded-For", "10.0.0.1"),
            ],
            Body::Raw(r#"{"input": 1}"#),
        ),
        (
            "empty body",
            url.clone(),
            vec![
                ("Authorization", &op),
                ("X-Kruntime-Invocation-ID", "inv-same-2"),
            ],
            Body::None,
        ),
        ("no credentials", url.clone(), vec![], Body::Raw("{}")),
        (
            "bad token",
            url.clone(),
            vec![("Authorization", "Bearer not-a-token")],
            Body::Raw("{}"),
        ),
        (
            "malformed authorization",
            url.clone(),
            vec![("Authorization", "Basic abc")],
            Body::Raw("{}"),
        ),
        (
            "denied",
            url.clone(),
            vec![("Authorization", &viewer)],
            Body::Raw("{}"),
        ),
        (
            "cookie from another origin",
            url.clone(),
            vec![("Cookie", &cookie), ("Origin", "https://evil.example")],
            Body::Raw("{}"),
        ),
        (
            "cookie without origin",
            url.clone(),
            vec![("Cookie", &cookie)],
            Body::Raw("{}"),
        ),
        (
            "cookie from the own origin",
            url.clone(),
            vec![
                ("Cookie", &cookie),
                ("Origin", &own),
                ("X-Kruntime-Invocation-ID", "inv-same-3"),
            ],
            Body::Raw("{}"),
        ),
        (
            "unknown uid",
            invoke_url("team-a", &name, "00000000-0000-0000-0000-000000000000"),
            vec![("Authorization", &op)],
            Body::Raw("{}"),
        ),
        (
            "bad namespace",
            invoke_url("Team-A", &name, &uid),
            vec![("Authorization", &op)],
            Body::Raw("{}"),
        ),
        (
            "pending run",
            invoke_url("team-a", &pending, &puid),
            vec![("Authorization", &op)],
            Body::Raw("{}"),
        ),
        (
            "bad invocation id",
            url.clone(),
            vec![
                ("Authorization", &op),
                ("X-Kruntime-Invocation-ID", &long_id),
            ],
            Body::Raw("{}"),
        ),
        (
            "no credentials, a body the refusal reads and drops",
            url.clone(),
            vec![("Expect", "")],
            Body::File(&medium),
        ),
        (
            "too large",
            url.clone(),
            vec![("Authorization", &op), ("Expect", "")],
            Body::File(&big),
        ),
    ];
    let before = fast_path_requests();
    let mut over_h1 = 0;
    for (what, url, headers, body) in cases {
        let again = match &body {
            Body::None => Body::None,
            Body::Json(b) => Body::Json(b),
            Body::Raw(b) => Body::Raw(b),
            Body::File(f) => Body::File(f),
        };
        let h1 = curl::request_as(Some("1.1"), "POST", &url, &headers, body);
        over_h1 += 1;
        let h2 = curl::request_as(Some("2"), "POST", &url, &headers, again);
        assert_ne!(h1.code, 0, "{what}: no answer over HTTP/1.1");
        assert_eq!(h1.code, h2.code, "{what}: {} / {}", h1.body, h2.body);
        assert_eq!(comparable(&h1), comparable(&h2), "{what}");
        if what == "allowed" {
            // The gateway's echo names the caller and the body; the same on both.
            assert_eq!(h1.json()["user"], "operator");
            assert_eq!(h1.json(), h2.json(), "{what}");
        } else {
            assert_eq!(h1.body, h2.body, "{what}");
        }
    }
    let seen = gateway_requests(&name);
    let headers_of = |inv: &str| {
        let mut all: Vec<Vec<(String, String)>> = seen
            .iter()
            .filter(|r| header_values(r, "x-kruntime-invocation-id") == [inv])
            .map(|r| {
                let mut h: Vec<(String, String)> = r["headers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|h| {
                        (
                            h[0].as_str().unwrap().to_ascii_lowercase(),
                            h[1].as_str().unwrap().to_owned(),
                        )
                    })
                    .collect();
                h.sort();
                h
            })
            .collect();
        assert_eq!(all.len(), 2, "the gateway saw {inv} once per path");
        let b = all.pop().unwrap();
        (all.pop().unwrap(), b)
    };
    for inv in ["inv-same-1", "inv-same-2"] {
        let (a, b) = headers_of(inv);
        assert_eq!(a, b, "the gateway saw different requests for {inv}");
    }
    let (a, _) = headers_of("inv-same-1");
    let names: Vec<&str> = a.iter().map(|(k, _)| k.as_str()).collect();
    for gone in ["authorization", "cookie", "x-forwarded-for"] {
        assert!(
            !names.contains(&gone),
            "{gone} reached the gateway: {names:?}"
        );
    }
    assert!(
        a.contains(&("x-remote-user".into(), "operator".into())),
        "{a:?}"
    );
    let served = fast_path_requests() - before;
    if std::env::var("KRT_TEST_HTTP").is_err() {
        // Nothing else in this suite speaks HTTP/1.1 to /v1 invoke then.
        assert_eq!(
            served, over_h1,
            "every HTTP/1.1 case took the fast path, no HTTP/2 one did"
        );
    } else {
        assert!(served >= over_h1, "{served} < {over_h1}");
    }
}

/// One HTTP/1.1 connection carries invokes on the fast path, then a request
/// it does not take (hyper and the router answer it, from its first byte),
/// then more invokes.
#[tokio::test]
async fn a_keep_alive_connection_moves_from_the_fast_path_to_the_router() {
    let _counting = FAST_PATH_COUNT.write().await;
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, "bash", "function", "Ready").await;
    let url = invoke_url("team-a", &name, &uid);
    let auth = format!("Authorization: {}", bearer("operator"));
    let session = format!("{}/api/session", env().var("CONSOLE_URL"));
    let before = fast_path_requests();
    let mut cmd = Command::new("curl");
    cmd.args([
        "-s",
        "--http1.1",
        "--max-time",
        "30",
        "--cacert",
        env().var("CONSOLE_CA"),
    ]);
    let calls: [(&str, &str, &str); 5] = [
        ("POST", &url, "{\"n\":1}"),
        ("POST", &url, "{\"n\":2}"),
        ("GET", &session, ""),
        ("POST", &url, "{\"n\":3}"),
        ("POST", &url, "{\"n\":4}"),
    ];
    for (i, (method, u, body)) in calls.iter().enumerate() {
        if i > 0 {
            cmd.arg("--next").args([
                "-s",
                "--http1.1",
                "--max-time",
                "30",
                "--cacert",
                env().var("CONSOLE_CA"),
            ]);
        }
        cmd.args([
            "-X",
            method,
            "-H",
            &auth,
            "-w",
            "\n%{http_code} %{num_connects}\n",
        ]);
        if !body.is_empty() {
            cmd.args([
                "-H",
                "Content-Type: application/json",
                "--data-binary",
                body,
            ]);
        }
        cmd.arg(u);
    }
    let out = cmd.output().expect("curl");
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    let is_status = |l: &str| {
        l.split_once(' ').is_some_and(|(code, conns)| {
            code.len() == 3
                && code.bytes().all(|b| b.is_ascii_digit())
                && !conns.is_empty()
                && conns.bytes().all(|b| b.is_ascii_digit())
        })
    };
    let status: Vec<&str> = lines.iter().copied().filter(|l| is_status(l)).collect();
    assert_eq!(
        status,
        ["200 1", "200 0", "200 0", "200 0", "200 0"],
        "one connection, every answer 200: {text}"
    );
    for n in 1..=4 {
        assert!(
            text.contains(&format!("\"n\":{n}")),
            "invoke {n} echoed: {text}"
        );
    }
    assert!(
        text.contains("\"user\":\"operator\"") || text.contains("operator"),
        "{text}"
    );
    let served = fast_path_requests() - before;
    if std::env::var("KRT_TEST_HTTP").is_err() {
        assert_eq!(
            served, 2,
            "the two invokes before the hand-off, none after it"
        );
    }
}

/// Sets the fault mode of a gateway of its own.
fn gateway_mode(gw: &OwnGateway, mode: &str) {
    let (code, body) = env().curl(
        &format!("{}/mode", gw.control),
        &[
            "-X",
            "POST",
            "-H",
            "Content-Type: application/json",
            "-d",
            mode,
        ],
    );
    assert_eq!(code, 200, "{body}");
}

/// The gateway's answer is bounded the same over HTTP/1.1 (the fast path)
/// and HTTP/2 (the router): an announced length over
/// `--access-max-response-bytes` is refused before anything is relayed
/// (502), a chunked answer is relayed whole within the bound and broken off
/// past it, and an answer whose body stalls is broken off at
/// `--access-total-timeout`.
#[tokio::test]
async fn gateway_answers_are_bounded_on_both_paths() {
    let _h1 = FAST_PATH_COUNT.read().await;
    let gw = own_gateway().await;
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, &gw.runtime, "function", "Ready").await;
    let e = env();
    let dir = tempfile::tempdir().unwrap();
    let console = kruntimes_tests::env::ConsoleProcess::start(
        dir.path(),
        &[
            "--access-max-response-bytes=600".to_owned(),
            "--access-total-timeout=2s".to_owned(),
            format!("--gateway-ca-file={}", e.pki("gateway-ca.crt").display()),
            format!("--gateway-client-cert={}", e.pki("console.crt").display()),
            format!("--gateway-client-key={}", e.pki("console.key").display()),
        ],
    );
    let url = format!(
        "https://127.0.0.1:{}/v1/namespaces/team-a/runs/{name}/{uid}/invoke",
        console.console_port
    );
    let op = bearer("operator");
    let call = |version: &str, body: &str| {
        curl::request_as(
            Some(version),
            "POST",
            &url,
            &[("Authorization", &op)],
            Body::Raw(body),
        )
    };
    let mut last = String::new();
    for _ in 0..150 {
        let r = call("2", "{}");
        if r.code == 200 {
            break;
        }
        last = format!("{} {}", r.code, r.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(call("2", "{}").code, 200, "never invocable: {last}");
    // The gateway's echo of a padded body is over 600 bytes; of `{}`, under.
    let padded = json!({"pad": "p".repeat(400)}).to_string();
    for version in ["1.1", "2"] {
        gateway_mode(&gw, r#"{"mode":"normal"}"#);
        let r = call(version, "{}");
        assert_eq!(r.code, 200, "{version}: {}", r.body);
        let whole = r.json();
        let r = call(version, &padded);
        assert_eq!(r.code, 502, "{version}: {}", r.body);
        assert!(
            r.json()["error"]["message"]
                .as_str()
                .unwrap()
                .contains("exceeds 600 bytes"),
            "{}",
            r.body
        );

        gateway_mode(&gw, r#"{"mode":"chunked"}"#);
        let r = call(version, "{}");
        assert_eq!(r.code, 200, "{version}: {}", r.body);
        assert_eq!(
            r.header("content-length"),
            None,
            "{version}: a chunked answer has no length"
        );
        assert_eq!(r.json()["user"], whole["user"], "{version}");
        assert_eq!(r.json()["body"], whole["body"], "{version}");
        let r = call(version, &padded);
        assert!(
            serde_json::from_str::<Value>(&r.body).is_err() && r.body.len() <= 600,
            "{version}: a chunked answer over the bound was relayed whole ({} bytes)",
            r.body.len()
        );

        gateway_mode(&gw, r#"{"mode":"stall","delayMs":20000}"#);
        let started = Instant::now();
        let r = call(version, "{}");
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "{version}: a stalled answer was not broken off at the total timeout"
        );
        assert!(
            serde_json::from_str::<Value>(&r.body).is_err(),
            "{version}: {}",
            r.body
        );
    }
    gateway_mode(&gw, r#"{"mode":"normal"}"#);
    assert_eq!(
        call("1.1", "{}").code,
        200,
        "the Console still serves calls"
    );
    assert_eq!(call("2", "{}").code, 200, "the Console still serves calls");
}

/// The Console's WebSocket handshake with the gateway: the caller's identity
/// in `X-Remote-*` (none of the caller's own), and a gateway that refuses
/// the upgrade gets the caller a 429 (busy) or a 503, never a socket.
#[tokio::test]
async fn the_gateway_handshake_carries_identity_and_its_refusals_pass_through() {
    let gw = own_gateway().await;
    let fx = Fixtures::new("team-a").await;
    let name = unique("ses-hs");
    let uid = fx
        .create_run(
            &name,
            &gw.runtime,
            "session",
            json!({"mode": {"session": {"leaseSeconds": 60}}}),
        )
        .await;
    fx.set_run_status(&name, json!({"phase": "Ready"})).await;
    let path = ops_path("team-a", &name, &uid);
    let op = bearer("operator");
    let headers = [
        ("Authorization", op.as_str()),
        ("X-Remote-User", "admin"),
        ("X-Remote-Group", "system:masters"),
    ];
    let mut last = 0;
    let mut ws = None;
    for _ in 0..100 {
        match ws_connect(&path, &headers).await {
            Ok(w) => {
                ws = Some(w);
                break;
            }
            Err(code) => last = code,
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut ws = ws.unwrap_or_else(|| panic!("no socket: {last}"));
    ws.send(Message::Text(
        json!({"type": "send", "operation": {"command": "echo", "args": ["hs"]}})
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    let mut seen = Vec::new();
    loop {
        let event = next_event(&mut ws).await;
        let terminal = event["type"] == "terminal";
        seen.push(event);
        if terminal {
            break;
        }
    }
    assert_eq!(seen.last().unwrap()["exitCode"], 0, "{seen:?}");
    let _ = ws.close(None).await;
    let (code, body) = env().curl(&format!("{}/requests", gw.control), &[]);
    assert_eq!(code, 200, "{body}");
    let all: Vec<Value> = serde_json::from_str(&body).unwrap();
    let upgrade = all
        .iter()
        .rev()
        .find(|r| r["path"].as_str().unwrap_or("").ends_with("/operations:ws"))
        .expect("the gateway saw the upgrade");
    assert_eq!(header_values(upgrade, "x-remote-user"), ["operator"]);
    let groups = header_values(upgrade, "x-remote-group");
    assert!(!groups.contains(&"system:masters".to_owned()), "{groups:?}");
    assert!(header_values(upgrade, "authorization").is_empty());

    gateway_mode(&gw, r#"{"mode":"429"}"#);
    assert_eq!(ws_connect(&path, &headers[..1]).await.err(), Some(429));
    gateway_mode(&gw, r#"{"mode":"500"}"#);
    assert_eq!(ws_connect(&path, &headers[..1]).await.err(), Some(503));
    gateway_mode(&gw, r#"{"mode":"normal"}"#);
    assert!(ws_connect(&path, &headers[..1]).await.is_ok());
}

/// The operator's session cookie (`name=value`), from a sign-in.
fn operator_cookie() -> String {
    let r = post(
        &format!("{}/api/session", env().var("CONSOLE_URL")),
        &[("Content-Type", "application/json")],
        &json!({"token": env().token("operator")}).to_string(),
        None,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    r.headers
        .iter()
        .filter(|(k, v)| k == "set-cookie" && !v.contains("Max-Age=0"))
        .filter_map(|(_, v)| v.split(';').next().map(str::to_owned))
        .collect::<Vec<_>>()
        .join("; ")
}

/// Sends `head` (a whole HTTP/1.1 request without body) to the shared
/// Console over TLS and returns the status of its answer (0: none).
async fn raw_h1_status(head: &str) -> u16 {
    use rustls::pki_types::pem::PemObject;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut roots = rustls::RootCertStore::empty();
    let pem = std::fs::read(env().var("CONSOLE_CA")).unwrap();
    for c in rustls::pki_types::CertificateDer::pem_slice_iter(&pem) {
        roots.add(c.unwrap()).unwrap();
    }
    let mut config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let addr = env().var("CONSOLE_URL").trim_start_matches("https://");
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    let mut tls = tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap();
    tls.write_all(head.as_bytes()).await.unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match tokio::time::timeout(Duration::from_secs(15), tls.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => got.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    let text = String::from_utf8_lossy(&got);
    text.split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// A TLS connection to the shared Console offering only `alpn`.
async fn console_tls(alpn: &[u8]) -> tokio_rustls::client::TlsStream<tokio::net::TcpStream> {
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
    let addr = env().var("CONSOLE_URL").trim_start_matches("https://");
    let tcp = tokio::net::TcpStream::connect(addr).await.unwrap();
    tokio_rustls::TlsConnector::from(std::sync::Arc::new(config))
        .connect(
            rustls::pki_types::ServerName::try_from("localhost").unwrap(),
            tcp,
        )
        .await
        .unwrap()
}

/// Sends one HTTP/2 request of `fields` (HPACK literals, no Huffman) on
/// stream 1 and returns the first frame the Console sends about that
/// stream: (frame type, payload).
async fn raw_h2_first_answer(fields: &[(&str, &str)]) -> (u8, Vec<u8>) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut tls = console_tls(b"h2").await;
    let mut block = Vec::new();
    for (name, value) in fields {
        // Literal header field without indexing, new name (RFC 7541 §6.2.2);
        // lengths are 7-bit-prefix integers (§5.1).
        let string = |block: &mut Vec<u8>, s: &str| {
            let mut n = s.len();
            if n < 127 {
                block.push(n as u8);
            } else {
                block.push(127);
                n -= 127;
                while n >= 128 {
                    block.push((n % 128) as u8 | 0x80);
                    n /= 128;
                }
                block.push(n as u8);
            }
            block.extend_from_slice(s.as_bytes());
        };
        block.push(0x00);
        string(&mut block, name);
        string(&mut block, value);
    }
    let frame = |kind: u8, flags: u8, stream: u32, payload: &[u8]| {
        let len = payload.len() as u32;
        let mut f = vec![(len >> 16) as u8, (len >> 8) as u8, len as u8, kind, flags];
        f.extend_from_slice(&stream.to_be_bytes());
        f.extend_from_slice(payload);
        f
    };
    let mut out = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec();
    out.extend(frame(0x4, 0, 0, &[])); // SETTINGS
    out.extend(frame(0x1, 0x4 | 0x1, 1, &block)); // HEADERS, END_HEADERS | END_STREAM
    tls.write_all(&out).await.unwrap();
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        // Whole frames in the buffer: the first one about stream 1.
        while buf.len() >= 9 {
            let len =
                (usize::from(buf[0]) << 16) | (usize::from(buf[1]) << 8) | usize::from(buf[2]);
            if buf.len() < 9 + len {
                break;
            }
            let kind = buf[3];
            let stream = u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]) & 0x7fff_ffff;
            let payload = buf[9..9 + len].to_vec();
            buf.drain(..9 + len);
            if stream == 1 || kind == 0x7 {
                return (kind, payload);
            }
        }
        match tokio::time::timeout(Duration::from_secs(15), tls.read(&mut chunk)).await {
            Ok(Ok(n)) if n > 0 => buf.extend_from_slice(&chunk[..n]),
            other => panic!("the Console never answered stream 1: {other:?}"),
        }
    }
}

/// Item 7 of issue 28: an upgrade is an upgrade however its `Upgrade`
/// field is spelt. With the session cookie and a foreign Origin, an
/// `Upgrade` listing `websocket` among other tokens, or two `Upgrade`
/// fields, is refused (403) like the plain one, and nothing reaches the
/// gateway. Over HTTP/2 (the router) the same requests are malformed and
/// their stream is reset before any handler runs.
#[tokio::test]
async fn every_spelling_of_a_cross_origin_upgrade_is_refused() {
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, "bash", "session", "Ready").await;
    let cookie = operator_cookie();
    let path = ops_path("team-a", &name, &uid);
    let host = env().var("CONSOLE_URL").trim_start_matches("https://");
    let request = |origin: &str, upgrade: &str| {
        format!(
            "GET {path} HTTP/1.1\r\nHost: {host}\r\nCookie: {cookie}\r\nOrigin: {origin}\r\n\
             Connection: Upgrade\r\n{upgrade}Sec-WebSocket-Version: 13\r\n\
             Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
        )
    };
    let evil = "https://evil.example";
    let before = gateway_requests(&name).len();
    for upgrade in [
        "Upgrade: websocket\r\n",
        "Upgrade: websocket, x-foo\r\n",
        "Upgrade: x-foo, websocket\r\n",
        "Upgrade: websocket\r\nUpgrade: x-foo\r\n",
        "Upgrade: x-foo\r\nUpgrade: websocket\r\n",
        "Upgrade: WebSocket\r\n",
    ] {
        let code = raw_h1_status(&request(evil, upgrade)).await;
        assert_eq!(
            code, 403,
            "cross-origin upgrade {upgrade:?} answered {code}"
        );
    }
    assert_eq!(
        gateway_requests(&name).len(),
        before,
        "a cross-origin upgrade reached the gateway"
    );
    // The same request from the Console's own origin is a WebSocket.
    let own = env().var("CONSOLE_URL");
    let code = raw_h1_status(&request(own, "Upgrade: websocket\r\n")).await;
    assert_eq!(code, 101, "a same-origin upgrade");

    // HTTP/2, the router: a request carrying `Upgrade` or `Connection` is
    // malformed (RFC 9113 §8.2.2); the stream is reset (PROTOCOL_ERROR)
    // before any handler, whatever the spelling, and nothing is forwarded.
    let before = gateway_requests(&name).len();
    for upgrade in [
        &[("upgrade", "websocket")][..],
        &[("upgrade", "websocket, x-foo")],
        &[("upgrade", "websocket"), ("upgrade", "x-foo")],
        &[("connection", "upgrade"), ("upgrade", "websocket")],
    ] {
        let mut fields = vec![
            (":method", "GET"),
            (":scheme", "https"),
            (":authority", host),
            (":path", path.as_str()),
            ("cookie", cookie.as_str()),
            ("origin", evil),
            ("sec-websocket-version", "13"),
            ("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ=="),
        ];
        fields.extend_from_slice(upgrade);
        let (kind, payload) = raw_h2_first_answer(&fields).await;
        assert_eq!(
            kind, 0x3,
            "HTTP/2 {upgrade:?}: frame type {kind}, not RST_STREAM: {payload:?}"
        );
        assert_eq!(
            payload,
            [0, 0, 0, 1],
            "HTTP/2 {upgrade:?}: not PROTOCOL_ERROR"
        );
    }
    assert_eq!(
        gateway_requests(&name).len(),
        before,
        "an HTTP/2 request with Upgrade reached the gateway"
    );
}

/// Item 8 of issue 28: a gateway that answers 413 as soon as it has the
/// request head and closes, the body unread, gets its 413 relayed on both
/// paths (HTTP/1.1, the fast path; HTTP/2, the router), every time. The body
/// is large enough that the Console is still sending it when the gateway
/// closes; the rounds make a race that loses now and then fail reliably.
#[tokio::test]
async fn an_early_413_and_close_is_relayed_on_both_paths() {
    let _h1 = FAST_PATH_COUNT.read().await;
    let gw = own_gateway().await;
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, &gw.runtime, "function", "Ready").await;
    let url = invoke_url("team-a", &name, &uid);
    let op = bearer("operator");
    let first = post(&url, &[("Authorization", &op)], "{}", None);
    assert_eq!(first.code, 200, "{}", first.body);
    let dir = tempfile::tempdir().unwrap();
    let body = dir.path().join("body");
    // Under the Console's 1 MiB bound, far over what socket buffers hold.
    std::fs::write(&body, vec![b'x'; 1000 * 1024]).unwrap();
    gateway_mode(&gw, r#"{"mode":"early413"}"#);
    const ROUNDS: usize = 40;
    for version in ["1.1", "2"] {
        let mut codes = Vec::new();
        for _ in 0..ROUNDS {
            let r = curl::request_as(
                Some(version),
                "POST",
                &url,
                &[
                    ("Authorization", &op),
                    ("Content-Type", "application/octet-stream"),
                ],
                Body::File(&body),
            );
            codes.push(r.code);
        }
        let relayed = codes.iter().filter(|c| **c == 413).count();
        assert_eq!(
            relayed, ROUNDS,
            "HTTP/{version}: the gateway's 413 relayed {relayed} of {ROUNDS} times: {codes:?}"
        );
    }
    gateway_mode(&gw, r#"{"mode":"normal"}"#);
    let r = post(&url, &[("Authorization", &op)], "{}", None);
    assert_eq!(r.code, 200, "{}", r.body);
}

/// Item 3 of issue 28: a gateway out of step by one answer (it writes each
/// answer again ahead of the next one on the same connection, so the second
/// call on a pooled connection reads the first call's answer) never hands a
/// caller another call's answer, on either path: an answer naming another
/// invocation ID is refused with 502 and its connection closed. Two users
/// alternate, so a relayed stale answer would cross from one to the other.
#[tokio::test]
async fn an_answer_to_another_call_is_never_relayed() {
    let _h1 = FAST_PATH_COUNT.read().await;
    let gw = own_gateway().await;
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, &gw.runtime, "function", "Ready").await;
    let url = invoke_url("team-a", &name, &uid);
    let callers = [("operator", bearer("operator")), ("admin", bearer("admin"))];
    let first = post(&url, &[("Authorization", &callers[0].1)], "{}", None);
    assert_eq!(first.code, 200, "{}", first.body);
    gateway_mode(&gw, r#"{"mode":"extra"}"#);
    const ROUNDS: usize = 10;
    for version in ["1.1", "2"] {
        let (mut answered, mut refused) = (0, 0);
        for round in 0..ROUNDS {
            for (user, token) in &callers {
                let inv = format!("{user}-{version}-{round}");
                let r = curl::request_as(
                    Some(version),
                    "POST",
                    &url,
                    &[("Authorization", token), ("X-Kruntime-Invocation-ID", &inv)],
                    Body::Raw("{}"),
                );
                match r.code {
                    200 => {
                        let v = r.json();
                        assert_eq!(
                            (v["invocationID"].as_str(), v["user"].as_str()),
                            (Some(inv.as_str()), Some(*user)),
                            "HTTP/{version}: {user} was handed another call's answer: {}",
                            r.body
                        );
                        answered += 1;
                    }
                    502 => {
                        assert!(
                            r.body.contains("answered another call"),
                            "HTTP/{version}: {}",
                            r.body
                        );
                        refused += 1;
                    }
                    code => panic!("HTTP/{version}: {user} got {code}: {}", r.body),
                }
            }
        }
        // Both outcomes seen: the stale answers reached the Console (and were
        // refused), and connections were replaced after each refusal.
        assert!(
            answered > 0 && refused > 0,
            "HTTP/{version}: {answered} answered, {refused} refused"
        );
    }
    gateway_mode(&gw, r#"{"mode":"normal"}"#);
    // A copy of a last answer may still wait on a pooled connection (one
    // pool per connection thread, and the router's): a call that meets one
    // is refused like the others, and the connection goes; then calls pass.
    let mut r = post(&url, &[("Authorization", &callers[0].1)], "{}", None);
    for _ in 0..8 {
        if !(r.code == 502 && r.body.contains("answered another call")) {
            break;
        }
        r = post(&url, &[("Authorization", &callers[0].1)], "{}", None);
    }
    assert_eq!(r.code, 200, "{}", r.body);
}

/// Item 9 of issue 28: the gateway gets the path that was authorized, built
/// from the decoded parameters, never the caller's spelling of it (the
/// router decodes `team%2Da` to `team-a` for the access check), over both
/// HTTP versions.
#[tokio::test]
async fn the_gateway_gets_the_authorized_path_not_the_callers_spelling() {
    let _h1 = FAST_PATH_COUNT.read().await;
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = run(&fx, "bash", "function", "Ready").await;
    let canonical = format!("/v1/namespaces/team-a/runs/{name}/{uid}/invoke");
    let spelled = format!(
        "{}/v1/namespaces/team%2Da/runs/{name}/{uid}/invoke",
        env().var("CONSOLE_URL")
    );
    for version in ["1.1", "2"] {
        let r = curl::request_as(
            Some(version),
            "POST",
            &spelled,
            &[("Authorization", &bearer("operator"))],
            Body::Raw("{}"),
        );
        assert_eq!(r.code, 200, "HTTP/{version}: {}", r.body);
        let seen = gateway_requests(&name);
        let req = seen.last().expect("the gateway saw the call");
        assert_eq!(req["path"], canonical.as_str(), "HTTP/{version}");
    }
}

/// Runs openssl in `dir`; panics with its message when it fails.
fn openssl(dir: &std::path::Path, args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A new CA `name` in `dir` and a leaf it signs (`leaf.crt`/`leaf.key`
/// prefixed with `name`) for `usage` (`serverAuth` or `clientAuth`).
fn ca_and_leaf(dir: &std::path::Path, name: &str, cn: &str, usage: &str) {
    let (ca_key, ca_crt) = (format!("{name}-ca.key"), format!("{name}-ca.crt"));
    let (key, csr, crt, ext) = (
        format!("{name}.key"),
        format!("{name}.csr"),
        format!("{name}.crt"),
        format!("{name}.ext"),
    );
    openssl(
        dir,
        &[
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-sha256",
            "-days",
            "1",
            "-keyout",
            &ca_key,
            "-out",
            &ca_crt,
            "-subj",
            &format!("/CN={name}-rotated-ca"),
            "-addext",
            "basicConstraints=critical,CA:TRUE",
            "-addext",
            "keyUsage=critical,keyCertSign,cRLSign",
        ],
    );
    std::fs::write(
        dir.join(&ext),
        format!(
            "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\n\
             extendedKeyUsage={usage}\nsubjectAltName=DNS:localhost,IP:127.0.0.1\n"
        ),
    )
    .unwrap();
    openssl(
        dir,
        &[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            &key,
            "-out",
            &csr,
            "-subj",
            &format!("/CN={cn}"),
        ],
    );
    openssl(
        dir,
        &[
            "x509",
            "-req",
            "-in",
            &csr,
            "-CA",
            &ca_crt,
            "-CAkey",
            &ca_key,
            "-CAcreateserial",
            "-days",
            "1",
            "-sha256",
            "-out",
            &crt,
            "-extfile",
            &ext,
        ],
    );
}

/// Replaces `to` with `from`'s bytes in one step (a new file renamed over it).
fn rotate(from: &std::path::Path, to: &std::path::Path) {
    let tmp = to.with_extension("new");
    std::fs::copy(from, &tmp).unwrap();
    std::fs::rename(&tmp, to).unwrap();
}

/// Item 10 of issue 28: the gateway CA and the Console's client certificate
/// for the gateways are re-read when their files change. A gateway with a
/// new CA, trusting only a new client CA, is unreachable with the files the
/// Console started with; once they are rotated on disk, invokes over both
/// paths and `operations:ws` succeed, presenting the new client
/// certificate, with no restart.
#[tokio::test]
async fn rotated_gateway_tls_files_are_picked_up_without_a_restart() {
    let e = env();
    let dir = tempfile::tempdir().unwrap();
    let pki = dir.path();
    ca_and_leaf(pki, "gw", "rotated-gateway", "serverAuth");
    ca_and_leaf(pki, "client", "rotated-console", "clientAuth");
    let gw = own_gateway_with(
        &pki.join("gw.crt"),
        &pki.join("gw.key"),
        &pki.join("client-ca.crt"),
    )
    .await;
    let fx = Fixtures::new("team-a").await;
    // Not `run`: the shared Console cannot reach this gateway to settle it.
    // The Session Run is Ready before the function Run: once the Console's
    // Run cache has the one, it has the other (a watch keeps their order).
    let session = unique("session-run");
    let suid = fx
        .create_run(&session, &gw.runtime, "session", json!({}))
        .await;
    fx.set_run_status(&session, json!({"phase": "Ready"})).await;
    let name = unique("function-run");
    let uid = fx
        .create_run(&name, &gw.runtime, "function", json!({}))
        .await;
    fx.set_run_status(&name, json!({"phase": "Ready"})).await;

    // The files the Console is started with: the environment's.
    let live = pki.join("live");
    std::fs::create_dir(&live).unwrap();
    let (ca, crt, key) = (
        live.join("ca.crt"),
        live.join("client.crt"),
        live.join("client.key"),
    );
    rotate(&e.pki("gateway-ca.crt"), &ca);
    rotate(&e.pki("console.crt"), &crt);
    rotate(&e.pki("console.key"), &key);
    let cdir = tempfile::tempdir().unwrap();
    let console = kruntimes_tests::env::ConsoleProcess::start(
        cdir.path(),
        &[
            format!("--gateway-ca-file={}", ca.display()),
            format!("--gateway-client-cert={}", crt.display()),
            format!("--gateway-client-key={}", key.display()),
        ],
    );
    let pid = console.pid();
    let url = format!(
        "https://127.0.0.1:{}/v1/namespaces/team-a/runs/{name}/{uid}/invoke",
        console.console_port
    );
    let op = bearer("operator");
    let call = |version: &str| {
        curl::request_as(
            Some(version),
            "POST",
            &url,
            &[("Authorization", &op)],
            Body::Raw("{}"),
        )
    };
    // Until the Run cache has the Run Ready, 404 or 503 "is Pending";
    // then the old CA cannot verify the gateway.
    let mut last = String::new();
    for _ in 0..150 {
        let r = call("2");
        last = format!("{} {}", r.code, r.body);
        if r.body.contains("unreachable") {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for version in ["1.1", "2"] {
        let r = call(version);
        assert_eq!(
            r.code, 503,
            "HTTP/{version} with the old CA (before: {last}): {}",
            r.body
        );
        assert!(r.body.contains("unreachable"), "{}", r.body);
    }
    // The WebSocket path connects the gateway before it answers the upgrade.
    let console_addr = format!("127.0.0.1:{}", console.console_port);
    let console_ca = std::path::PathBuf::from(e.var("CONSOLE_CA"));
    let ws_target = WsTarget {
        addr: &console_addr,
        server_name: "localhost",
        ca: &console_ca,
        client_cert: None,
    };
    let ops = ops_path("team-a", &session, &suid);
    let auth = [("Authorization", op.as_str())];
    let open = || stream::ws_connect(&ws_target, &ops, &auth);
    assert_eq!(
        open().await.err(),
        Some(503),
        "operations:ws with the old CA"
    );

    rotate(&pki.join("gw-ca.crt"), &ca);
    rotate(&pki.join("client.crt"), &crt);
    rotate(&pki.join("client.key"), &key);
    for version in ["1.1", "2"] {
        let mut got = String::new();
        let mut ok = false;
        for _ in 0..100 {
            let r = call(version);
            if r.code == 200 {
                ok = true;
                break;
            }
            got = format!("{} {}", r.code, r.body);
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(
            ok,
            "HTTP/{version}: never succeeded after the rotation: {got}"
        );
    }
    let mut ws = None;
    for _ in 0..100 {
        if let Ok(socket) = open().await {
            ws = Some(socket);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let mut ws = ws.expect("operations:ws after the rotation");
    ws.send(Message::Text(
        json!({"type": "send", "operation": {"command": "echo", "args": ["rotated"]}})
            .to_string()
            .into(),
    ))
    .await
    .unwrap();
    let mut output = String::new();
    loop {
        let ev = next_event(&mut ws).await;
        if ev["type"] == "output" {
            output.push_str(ev["data"].as_str().unwrap_or_default());
        }
        if ev["type"] == "terminal" {
            assert_eq!(ev["exitCode"], 0, "{ev}");
            break;
        }
    }
    assert!(output.contains("rotated"), "{output}");
    let _ = ws.close(None).await;

    assert_eq!(console.pid(), pid, "the Console restarted");
    let (code, body) = e.curl(&format!("{}/requests", gw.control), &[]);
    assert_eq!(code, 200, "{body}");
    let seen: Vec<Value> = serde_json::from_str(&body).unwrap();
    let ours: Vec<&Value> = seen
        .iter()
        .filter(|r| r["path"].as_str().unwrap_or("").contains(&name))
        .collect();
    assert!(ours.len() >= 2, "{body}");
    assert!(
        ours.iter().all(|r| r["clientCN"] == "rotated-console"),
        "the gateway saw another client certificate: {body}"
    );
    let socket: Vec<&Value> = seen
        .iter()
        .filter(|r| r["path"].as_str().unwrap_or("").contains(&session))
        .collect();
    assert!(
        !socket.is_empty() && socket.iter().all(|r| r["clientCN"] == "rotated-console"),
        "operations:ws: {body}"
    );
}
