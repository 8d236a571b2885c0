//! Request hardening against the real Console on `hack/testenv`: static
//! paths, the Origin rule for certificates, the `/v1` header allow-list,
//! public-read filters, `status.assignedPod` checks and cookie-key rotation.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use base64::Engine;
use futures::{SinkExt, StreamExt};
use kruntimes_tests::curl::{self, Body, Reply, bearer};
use kruntimes_tests::env::{
    ConsoleProcess, Fixtures, env, free_port, gateway_requests, header_values, invoke_path,
    ops_path, runtimed_line, unique,
};
use kruntimes_tests::stream::{self, Ws, WsTarget};
use serde_json::{Value, json};
use tokio_tungstenite::tungstenite::Message;

fn console_url() -> String {
    env().var("CONSOLE_URL").to_owned()
}

fn header_names(req: &Value) -> Vec<String> {
    req["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h[0].as_str().unwrap().to_ascii_lowercase())
        .collect()
}

/// Polls until an operator's invoke on `base` answers 200 (the Console's Run cache saw the Run).
async fn until_invocable(base: &str, path: &str) {
    let mut last = String::new();
    for _ in 0..150 {
        let r = curl::request(
            "POST",
            &format!("{base}{path}"),
            &[("Authorization", &bearer("operator"))],
            Body::Raw("{}"),
        );
        if r.code == 200 {
            return;
        }
        last = format!("{} {}", r.code, r.body);
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("{path} never became invocable: {last}");
}

// ---- item 1: static assets -------------------------------------------------

/// curl with `--path-as-is` (the path goes out exactly as written).
fn raw_get(url: &str) -> (u16, String) {
    env().curl(url, &["--path-as-is", "--cacert", env().var("CONSOLE_CA")])
}

#[tokio::test]
async fn static_paths_never_leave_the_embedded_assets() {
    let base = console_url();
    let (_, index) = raw_get(&format!("{base}/"));
    assert!(
        index.to_ascii_lowercase().contains("<!doctype html"),
        "{index}"
    );
    let mtab = std::fs::read_to_string("/etc/mtab").unwrap_or_default();
    let first_mount = mtab.lines().next().unwrap_or("proc /proc").to_owned();
    for path in [
        "/../../../../../../../../etc/mtab",
        "/assets/../../../../../../../../../etc/mtab",
        "/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/%2e%2e/etc/mtab",
        "/..%2f..%2f..%2f..%2f..%2f..%2f..%2f..%2fetc%2fmtab",
        "/..\\..\\..\\..\\..\\..\\..\\..\\etc\\mtab",
    ] {
        let (code, body) = raw_get(&format!("{base}{path}"));
        assert!(
            !body.contains(&first_mount),
            "{path} served the host's mounts"
        );
        assert_eq!(code, 400, "{path}: {body}");
        assert!(body.contains("invalid path"), "{path}: {body}");
    }
    // Odd but harmless shapes are client-side routes: index.html, never a lookup.
    for path in [
        "/runs//x",
        "/./index.html",
        "/namespaces/team-a/runs/x",
        "/a%20b",
    ] {
        let (code, body) = raw_get(&format!("{base}{path}"));
        assert_eq!(code, 200, "{path}");
        assert_eq!(body, index, "{path} is not the SPA's index.html");
    }
}

/// A symbolic link dropped into the folder a debug build embeds from is
/// not served: the build embeds, it does not read the folder at run time.
#[tokio::test]
async fn a_symlink_among_the_assets_is_not_served() {
    let build = kruntimes_tests::env::build_dir().join("build");
    let name = format!("{}.txt", unique("planted"));
    let secret = std::env::temp_dir().join(&name);
    std::fs::write(&secret, "planted-secret-contents").unwrap();
    let mut planted: Vec<PathBuf> = Vec::new();
    for entry in std::fs::read_dir(&build).unwrap().flatten() {
        let web = entry.path().join("out/web");
        if entry
            .file_name()
            .to_string_lossy()
            .starts_with("kruntimes-console-")
            && web.is_dir()
        {
            let link = web.join(&name);
            std::os::unix::fs::symlink(&secret, &link).unwrap();
            planted.push(link);
        }
    }
    assert!(
        !planted.is_empty(),
        "no staged web folder under {}",
        build.display()
    );
    let (_, body) = raw_get(&format!("{}/{name}", console_url()));
    for l in &planted {
        let _ = std::fs::remove_file(l);
    }
    let _ = std::fs::remove_file(&secret);
    assert!(
        !body.contains("planted-secret-contents"),
        "a symlink among the assets was followed"
    );
}

// ---- item 2: the Origin rule for client certificates -----------------------

/// A CA of the test's own and a client certificate CN=operator, O=testenv:users.
fn operator_pki(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let run = |args: &[&str]| {
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
    };
    run(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-sha256",
        "-days",
        "1",
        "-keyout",
        "ca.key",
        "-out",
        "ca.crt",
        "-subj",
        "/CN=hardening-client-ca",
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
    std::fs::write(
        dir.join("op.ext"),
        "basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=clientAuth\n",
    )
    .unwrap();
    run(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-sha256",
        "-keyout",
        "op.key",
        "-out",
        "op.csr",
        "-subj",
        "/O=testenv:users/CN=operator",
    ]);
    run(&[
        "x509",
        "-req",
        "-sha256",
        "-days",
        "1",
        "-in",
        "op.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "op.crt",
        "-extfile",
        "op.ext",
    ]);
    (dir.join("ca.crt"), dir.join("op.crt"), dir.join("op.key"))
}

/// A Console of its own trusting `client_ca`, with the gateway flags.
fn console_with_client_ca(dir: &Path, client_ca: &Path) -> ConsoleProcess {
    let e = env();
    ConsoleProcess::start(
        dir,
        &[
            format!("--client-ca-file={}", client_ca.display()),
            format!("--gateway-ca-file={}", e.pki("gateway-ca.crt").display()),
            format!("--gateway-client-cert={}", e.pki("console.crt").display()),
            format!("--gateway-client-key={}", e.pki("console.key").display()),
        ],
    )
}

/// An invoke with a client certificate through curl (`text/plain`, as a
/// cross-origin form or fetch would send it).
fn cert_invoke(url: &str, cert: &Path, key: &Path, origin: Option<&str>) -> Reply {
    let mut headers = vec![("Content-Type", "text/plain")];
    if let Some(o) = origin {
        headers.push(("Origin", o));
    }
    let cert = cert.display().to_string();
    let key = key.display().to_string();
    // curl::request has no client-certificate option: run curl here.
    let dir = tempfile::tempdir().unwrap();
    let hfile = dir.path().join("h");
    let mut cmd = Command::new("curl");
    cmd.args(["-s", "-X", "POST", "--max-time", "30", "--cacert"])
        .arg(env().var("CONSOLE_CA"))
        .args(["--cert", &cert, "--key", &key, "-D"])
        .arg(&hfile)
        .args(["-o", "-", "-w", "\n%{http_code}", "--data-binary", "hello"]);
    for (k, v) in &headers {
        cmd.arg("-H").arg(format!("{k}: {v}"));
    }
    let out = cmd.arg(url).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    let code = code.trim().parse().unwrap_or(0);
    Reply {
        code,
        headers: Vec::new(),
        body: body.to_owned(),
        // As curl::request_as: what curl said only when it got no answer.
        error: if code == 0 {
            String::from_utf8_lossy(&out.stderr).into_owned()
        } else {
            String::new()
        },
    }
}

/// Opens operations:ws on `authority`, optionally with a client certificate.
async fn ws_connect(
    authority: &str,
    path: &str,
    headers: &[(&str, &str)],
    cert: Option<(&Path, &Path)>,
) -> Result<Ws, u16> {
    let ca = std::path::PathBuf::from(env().var("CONSOLE_CA"));
    let target = WsTarget {
        addr: authority,
        server_name: "localhost",
        ca: &ca,
        client_cert: cert,
    };
    stream::ws_connect(&target, path, headers).await
}

/// Sends `echo` and reads to the terminal event; returns its exit code.
async fn echo_session(ws: &mut Ws) -> i64 {
    let send = json!({"type": "send", "operation": {"command": "echo", "args": ["hi"]}});
    ws.send(Message::Text(send.to_string().into()))
        .await
        .unwrap();
    loop {
        let m = tokio::time::timeout(Duration::from_secs(15), ws.next())
            .await
            .expect("an event in time")
            .expect("socket open")
            .expect("frame");
        if let Message::Text(t) = m {
            let ev: Value = serde_json::from_str(t.as_str()).unwrap();
            if ev["type"] == "terminal" {
                return ev["exitCode"].as_i64().unwrap_or(-1);
            }
        }
    }
}

#[tokio::test]
async fn a_client_certificate_needs_the_console_origin_on_state_changes_and_upgrades() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, crt, key) = operator_pki(dir.path());
    let console = console_with_client_ca(dir.path(), &ca);
    let authority = format!("127.0.0.1:{}", console.console_port);
    let base = format!("https://{authority}");
    let fx = Fixtures::new("team-a").await;
    let (fname, fuid) = fx.ready_run("function").await;
    let (sname, suid) = fx.ready_run("session").await;
    let ipath = invoke_path("team-a", &fname, &fuid);
    until_invocable(&base, &ipath).await;
    let url = format!("{base}{ipath}");
    let evil = "https://evil.example";

    // Cross-origin with the certificate: refused, nothing reaches the gateway.
    let before = gateway_requests(&fname).len();
    let r = cert_invoke(&url, &crt, &key, Some(evil));
    assert_eq!(r.code, 403, "{}", r.body);
    assert!(r.body.contains("client certificate"), "{}", r.body);
    assert_eq!(
        gateway_requests(&fname).len(),
        before,
        "the call was forwarded"
    );
    let sbefore = gateway_requests(&sname).len();
    let opath = ops_path("team-a", &sname, &suid);
    let refused = ws_connect(&authority, &opath, &[("Origin", evil)], Some((&crt, &key))).await;
    assert_eq!(
        refused.err(),
        Some(403),
        "a cross-origin upgrade with a certificate"
    );
    assert_eq!(
        gateway_requests(&sname).len(),
        sbefore,
        "the socket was forwarded"
    );

    // No Origin (a CLI): works. The Console's own Origin: works.
    let r = cert_invoke(&url, &crt, &key, None);
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        serde_json::from_str::<Value>(&r.body).unwrap()["user"],
        "operator"
    );
    let own = base.clone();
    let r = cert_invoke(&url, &crt, &key, Some(&own));
    assert_eq!(r.code, 200, "{}", r.body);
    let mut ws = ws_connect(&authority, &opath, &[], Some((&crt, &key)))
        .await
        .expect("an upgrade without Origin");
    assert_eq!(echo_session(&mut ws).await, 0);
    let _ = ws.close(None).await;
    let mut ws = ws_connect(&authority, &opath, &[("Origin", &own)], Some((&crt, &key)))
        .await
        .expect("an upgrade from the Console's origin");
    assert_eq!(echo_session(&mut ws).await, 0);
    let _ = ws.close(None).await;

    // An explicit Authorization header is unaffected by Origin.
    let r = curl::request(
        "POST",
        &url,
        &[("Authorization", &bearer("operator")), ("Origin", evil)],
        Body::Raw("{}"),
    );
    assert_eq!(r.code, 200, "{}", r.body);
}

// ---- item 7: the /v1 header allow-list ------------------------------------

#[tokio::test]
async fn invoke_forwards_only_allow_listed_headers() {
    let fx = Fixtures::new("team-a").await;
    let (name, uid) = fx.ready_run("function").await;
    let base = console_url();
    let path = invoke_path("team-a", &name, &uid);
    until_invocable(&base, &path).await;
    let r = curl::request(
        "POST",
        &format!("{base}{path}"),
        &[
            ("Authorization", &bearer("operator")),
            ("X_Remote_User", "admin"),
            ("x_remote_group", "system:masters"),
            ("x_remote_extra_scopes", "all"),
            ("Impersonate-User", "admin"),
            ("Impersonate_Group", "system:masters"),
            ("Forwarded", "for=10.0.0.1;by=proxy"),
            ("X-Forwarded-For", "10.0.0.1"),
            ("X-Forwarded-Client-Cert", "Hash=abc;Subject=\"CN=admin\""),
            ("X-Real-IP", "10.0.0.1"),
            ("X-Foo", "bar"),
            ("Content-Type", "application/json"),
            ("X-Request-ID", "req-hardening-1"),
            (
                "traceparent",
                "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
            ),
        ],
        Body::Raw(r#"{"x": 1}"#),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let seen = gateway_requests(&name);
    let req = seen.last().expect("the gateway saw the call");
    let names = header_names(req);
    for n in &names {
        let norm = n.replace('_', "-");
        assert!(
            !(norm.starts_with("x-remote-") && n.contains('_')),
            "an underscore identity header reached the gateway: {n}"
        );
        for bad in [
            "impersonate-",
            "forwarded",
            "x-forwarded-",
            "x-real-ip",
            "x-foo",
            "authorization",
            "cookie",
        ] {
            assert!(!norm.starts_with(bad), "{n} reached the gateway: {names:?}");
        }
    }
    assert_eq!(header_values(req, "x-remote-user"), ["operator"]);
    assert!(
        !header_values(req, "x-remote-group").contains(&"system:masters".to_owned()),
        "{names:?}"
    );
    assert!(header_values(req, "x-remote-extra-scopes").is_empty());
    assert_eq!(header_values(req, "content-type"), ["application/json"]);
    assert_eq!(header_values(req, "x-request-id"), ["req-hardening-1"]);
    assert_eq!(header_values(req, "traceparent").len(), 1);
}

// ---- item 8: public read filters ------------------------------------------

#[tokio::test]
async fn public_read_filters_only_by_what_summaries_show() {
    let base = console_url();
    let runs = format!("{base}/api/namespaces/team-a/runs");
    for q in [
        "assignedPod=bash-pool-0",
        "labelSelector=app%3Dweb",
        "createdAfter=2026-01-02T15:04:05Z",
        "phase=Running&assignedPod=bash-pool-0",
    ] {
        let r = curl::request("GET", &format!("{runs}?{q}"), &[], Body::None);
        assert_eq!(r.code, 401, "{q}: {}", r.body);
        let msg = r.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(msg.contains("token"), "{q}: {msg}");
    }
    for q in [
        "",
        "phase=Running",
        "phase=Failed,Succeeded&runtime=bash&limit=5",
    ] {
        let r = curl::request("GET", &format!("{runs}?{q}"), &[], Body::None);
        assert_eq!(r.code, 200, "{q}: {}", r.body);
        assert_eq!(r.json()["summary"], true);
    }
    // With a credential every filter works.
    let r = curl::request(
        "GET",
        &format!("{runs}?assignedPod=bash-pool-0&labelSelector=app%3Dweb"),
        &[("Authorization", &bearer("viewer"))],
        Body::None,
    );
    assert_eq!(r.code, 200, "{}", r.body);
}

// ---- item 9: status.assignedPod -------------------------------------------

#[tokio::test]
async fn a_malformed_assigned_pod_is_never_used_in_a_request() {
    let fx = Fixtures::new("team-a").await;
    let pod = unique("hr-pod");
    let pod_uid = fx.create_pod(&pod, "bash").await;
    let name = unique("hr-badpod");
    let run_uid = fx.create_run(&name, "bash", "task", json!({})).await;
    fx.append_log(
        &pod,
        &[runtimed_line(
            &run_uid,
            &name,
            "team-a",
            &pod,
            "stdout",
            "pod-log-marker",
        )],
    );
    let bad = format!("{pod}/log?container=runtimed&x=");
    fx.set_run_status(
        &name,
        json!({"phase": "Running", "assignedPod": bad, "assignedPodUID": pod_uid, "startTime": kruntimes_tests::env::now_rfc3339(), "attempt": 1}),
    )
    .await;
    let kubelet_log = env().state().join("log/kubelet.log");
    let kubelet_saw_pod = || {
        std::fs::read_to_string(&kubelet_log)
            .unwrap_or_default()
            .contains(&pod)
    };
    let base = console_url();
    let admin = bearer("admin");
    let r = curl::request(
        "GET",
        &format!("{base}/api/namespaces/team-a/runs/{name}"),
        &[("Authorization", &admin)],
        Body::None,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(v["pod"]["state"], "error", "{}", v["pod"]);
    assert!(
        v["pod"]["message"]
            .as_str()
            .unwrap_or_default()
            .contains("invalid assignedPod"),
        "{}",
        v["pod"]
    );
    assert!(!r.body.contains("pod-log-marker"), "the Pod's log was read");
    assert_eq!(v["events"]["state"], "ok", "{}", v["events"]);

    // The log API (through kube-apiserver) refuses it with a clear Status.
    let r = curl::request(
        "GET",
        &format!("{base}/api/namespaces/team-a/runs/{name}/logs?tail=10"),
        &[("Authorization", &admin)],
        Body::None,
    );
    assert_eq!(r.code, 409, "{}", r.body);
    assert!(r.body.contains("invalid status.assignedPod"), "{}", r.body);
    assert!(!r.body.contains("pod-log-marker"));
    let out = env().kubectl(
        Some(env().token("admin")),
        &[
            "get",
            "--raw",
            &format!("/apis/logs.kruntimes.io/v1alpha1/namespaces/team-a/runs/{name}/log"),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(!String::from_utf8_lossy(&out.stdout).contains("pod-log-marker"));
    assert!(
        err.contains("invalid status.assignedPod")
            || err.contains("Conflict")
            || err.contains("409"),
        "{err}"
    );
    assert!(!kubelet_saw_pod(), "the kubelet served the Pod's log");
    fx.delete_run(&name).await;
    fx.delete_pod(&pod).await;
}

// ---- item 12: cookie-key rotation ------------------------------------------

fn login(base: &str) -> String {
    let r = curl::request(
        "POST",
        &format!("{base}/api/session"),
        &[],
        Body::Json(&json!({"token": env().token("viewer")}).to_string()),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    r.header_all("set-cookie")
        .into_iter()
        .find(|c| c.starts_with("__Host-krt-session="))
        .expect("a session cookie")
        .split(';')
        .next()
        .unwrap()
        .to_owned()
}

fn session_user(base: &str, cookie: &str) -> Option<String> {
    let r = curl::request(
        "GET",
        &format!("{base}/api/session"),
        &[("Cookie", cookie)],
        Body::None,
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let v = r.json();
    (v["authenticated"] == true).then(|| v["username"].as_str().unwrap_or_default().to_owned())
}

/// The key ID (first 4 bytes) of a sealed cookie.
fn key_id(cookie: &str) -> Vec<u8> {
    let value = cookie.split_once('=').unwrap().1;
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(value)
        .unwrap();
    raw[..4].to_vec()
}

#[tokio::test]
async fn cookie_keys_rotate_without_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let keys = dir.path().join("cookie");
    std::fs::create_dir(&keys).unwrap();
    // A mounted Secret also holds `..data`-style entries: skipped.
    std::fs::create_dir(keys.join("..data")).unwrap();
    let a = vec![b'a'; 32];
    let b = vec![b'b'; 40];
    std::fs::write(keys.join("key-0"), &a).unwrap();
    let port = free_port();
    let _console = ConsoleProcess::start(
        dir.path(),
        &[
            format!("--console-listen=127.0.0.1:{port}"),
            format!("--cookie-key-file={}", keys.display()),
        ],
    );
    let base = format!("https://127.0.0.1:{port}");
    let with_a = login(&base);
    assert_eq!(session_user(&base, &with_a).as_deref(), Some("viewer"));

    // [B, A]: the A cookie still opens, a new login seals with B.
    std::fs::write(keys.join("key-0"), &b).unwrap();
    std::fs::write(keys.join("key-1"), &a).unwrap();
    let mut with_b = None;
    for _ in 0..60 {
        let c = login(&base);
        if key_id(&c) != key_id(&with_a) {
            with_b = Some(c);
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    let with_b = with_b.expect("the new first key never sealed a cookie");
    assert_eq!(session_user(&base, &with_a).as_deref(), Some("viewer"));
    assert_eq!(session_user(&base, &with_b).as_deref(), Some("viewer"));

    // [B]: the A cookie is refused, the B cookie works.
    std::fs::remove_file(keys.join("key-1")).unwrap();
    let mut refused = false;
    for _ in 0..60 {
        if session_user(&base, &with_a).is_none() {
            refused = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(refused, "a removed key still opens its cookies");
    assert_eq!(session_user(&base, &with_b).as_deref(), Some("viewer"));
    // A read with the refused cookie has no credential: 401.
    let r = curl::request(
        "GET",
        &format!("{base}/api/namespaces/team-a/runs/x"),
        &[("Cookie", &with_a)],
        Body::None,
    );
    assert_eq!(r.code, 401, "{}", r.body);
}

// ---- identities that would change on the way to the gateway ------------------

/// A client certificate signed by the test's CA in `dir` (made by
/// `operator_pki`), with the given CN and O.
fn signed_client_cert(dir: &Path, name: &str, cn: &str, org: &str) -> (PathBuf, PathBuf) {
    let read = |f: &str| std::fs::read_to_string(dir.join(f)).unwrap();
    let ca_key = rcgen::KeyPair::from_pem(&read("ca.key")).unwrap();
    let issuer = rcgen::Issuer::from_ca_cert_pem(&read("ca.crt"), ca_key).unwrap();
    let mut p = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    p.distinguished_name.push(rcgen::DnType::CommonName, cn);
    p.distinguished_name
        .push(rcgen::DnType::OrganizationName, org);
    p.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ClientAuth];
    let key = rcgen::KeyPair::generate().unwrap();
    let cert = p.signed_by(&key, &issuer).unwrap();
    let (crt, keyf) = (
        dir.join(format!("{name}.crt")),
        dir.join(format!("{name}.key")),
    );
    std::fs::write(&crt, cert.pem()).unwrap();
    std::fs::write(&keyf, key.serialize_pem()).unwrap();
    (crt, keyf)
}

/// An invoke with a client certificate over the given HTTP version
/// (`--http1.1`: the fast path; `--http2`: the router).
fn cert_invoke_over(version: &str, url: &str, cert: &Path, key: &Path) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", version, "-X", "POST", "--max-time", "30", "--cacert"])
        .arg(env().var("CONSOLE_CA"))
        .arg("--cert")
        .arg(cert)
        .arg("--key")
        .arg(key)
        .args(["-o", "-", "-w", "\n%{http_code}", "--data-binary", "hello"])
        .arg(url)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

#[tokio::test]
async fn identities_a_gateway_would_read_differently_are_refused_on_both_paths() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, crt, key) = operator_pki(dir.path());
    let console = console_with_client_ca(dir.path(), &ca);
    let base = format!("https://127.0.0.1:{}", console.console_port);
    let fx = Fixtures::new("team-a").await;
    let (fname, fuid) = fx.ready_run("function").await;
    let ipath = invoke_path("team-a", &fname, &fuid);
    until_invocable(&base, &ipath).await;
    let url = format!("{base}{ipath}");
    let bad = [
        ("lead", " operator", "testenv:users", "white space"),
        ("trail", "operator", "system:masters ", "white space"),
        ("comma", "operator", "g1, g2", "comma"),
    ];
    for version in ["--http1.1", "--http2"] {
        // The plain certificate passes, and carries system:authenticated as
        // kube-apiserver's own x509 callers do.
        let (code, body) = cert_invoke_over(version, &url, &crt, &key);
        assert_eq!(code, 200, "{version}: {body}");
        let echo: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(echo["user"], "operator", "{version}");
        assert_eq!(
            echo["groups"],
            json!(["testenv:users", "system:authenticated"]),
            "{version}"
        );
        for (name, cn, org, why) in bad {
            let (c, k) = signed_client_cert(dir.path(), name, cn, org);
            let before = gateway_requests(&fname).len();
            let (code, body) = cert_invoke_over(version, &url, &c, &k);
            assert_eq!(code, 403, "{version} CN={cn:?} O={org:?}: {body}");
            assert!(body.contains(why), "{version} CN={cn:?} O={org:?}: {body}");
            assert_eq!(
                gateway_requests(&fname).len(),
                before,
                "{version} CN={cn:?} O={org:?} reached the gateway"
            );
        }
    }
}
