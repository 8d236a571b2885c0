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
    let admin = e.token("admin");
    let apply = |yaml: String| {
        let mut child = e
            .kubectl_command(Some(admin), &["apply", "-f", "-"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .spawn()
            .unwrap();
        use std::io::Write;
        child
            .stdin
            .take()
            .unwrap()
            .write_all(yaml.as_bytes())
            .unwrap();
        assert!(child.wait().unwrap().success());
    };
    apply(format!(
        "apiVersion: v1\nkind: ServiceAccount\nmetadata: {{name: {user}, namespace: {ns}}}\n---\n\
         apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata: {{name: {user}, namespace: {ns}}}\n\
         roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: kruntimes-operator}}\n\
         subjects: [{{kind: ServiceAccount, name: {user}, namespace: {ns}}}]\n"
    ));
    let out = e.kubectl(Some(admin), &["-n", ns, "create", "token", &user]);
    let token = format!("Bearer {}", String::from_utf8_lossy(&out.stdout).trim());
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

    let _ = e.kubectl(Some(admin), &["-n", ns, "delete", "rolebinding", &user]);
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
    let (port, ctl) = (free_port(), free_port());
    let child = Command::new(kruntimes_tests::env::repo_root().join("target/debug/fake-gateway"))
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--control-listen")
        .arg(format!("127.0.0.1:{ctl}"))
        .arg("--tls-cert")
        .arg(e.pki("gateway.crt"))
        .arg("--tls-key")
        .arg(e.pki("gateway.key"))
        .arg("--client-ca")
        .arg(e.pki("console-ca.crt"))
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
    let mut child_k = e
        .kubectl_command(Some(e.token("admin")), &["apply", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write;
    child_k
        .stdin
        .take()
        .unwrap()
        .write_all(svc.as_bytes())
        .unwrap();
    assert!(child_k.wait().unwrap().success());
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
