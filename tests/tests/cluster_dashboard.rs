//! `kruntimes-console dashboard` against the Console the chart installs on
//! the real node of `hack/cluster`: a developer whose kubeconfig user is
//! `viewer` (an exec plugin handing out the viewer's token, plus the RBAC
//! docs/dashboard.md names: port-forward to the Console Pods, read the
//! APIService) opens the Console through the loopback proxy.
//!
//! One test, in order: the listen address is refused unless loopback, before
//! anything else happens; a client-certificate kubeconfig is refused while
//! the Console takes no client certificates; through the proxy `/api/session`
//! names the kubeconfig user, a browser's own `Authorization`, `Cookie` and
//! `Impersonate-User` are dropped, the user's own permissions decide; a
//! foreign `Host` or `Origin` (and a state change without `Origin`) is
//! refused and never reaches the Console (its access log shows forwarded
//! paths and not the refused ones); Chromium (console/web/e2e/dashboard.spec.ts)
//! sees the user without a token page; no token is in the proxy's or the
//! Console's log; after SIGTERM the proxy exits 0, and the Console sees no
//! connection left from the port-forward. Skipped without a cluster.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use kruntimes_tests::cluster::{CONSOLE_NS, Cluster, RELEASE, cluster, eventually};
use kruntimes_tests::env::{repo_root, unique};
use serde_json::{Value, json};

const TEAM: &str = "team-a";
const OTHER: &str = "team-b";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn binary() -> PathBuf {
    let bin = kruntimes_tests::env::bin_dir().join("kruntimes-console");
    assert!(
        bin.exists(),
        "{} is missing: cargo build -p kruntimes-console",
        bin.display()
    );
    bin
}

/// `kruntimes-console dashboard ARGS` run to its end (it must end within 60 s).
fn dashboard_fails(args: &[&str]) -> (bool, String) {
    let mut child = Command::new(binary())
        .arg("dashboard")
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting kruntimes-console dashboard");
    for _ in 0..600 {
        if let Ok(Some(_)) = child.try_wait() {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    (
        out.status.success(),
        format!("{}{}", text(&out.stdout), text(&out.stderr)),
    )
}

/// A running proxy: its URL (from the line it prints), its log file.
struct Proxy {
    child: Child,
    url: String,
    authority: String,
    log: PathBuf,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Proxy {
    fn start(kubeconfig: &Path, log: &Path) -> Self {
        let mut child = Command::new(binary())
            .args(["dashboard", "--kubeconfig"])
            .arg(kubeconfig)
            .args(["--port", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("starting kruntimes-console dashboard");
        let stdout = child.stdout.take().unwrap();
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        let url = match rx.recv_timeout(Duration::from_secs(90)) {
            Ok(line) => line
                .strip_prefix("Console: ")
                .unwrap_or_else(|| panic!("the proxy's first line: {line:?}"))
                .trim_end_matches('/')
                .to_owned(),
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "the proxy printed no URL: {}",
                    std::fs::read_to_string(log).unwrap_or_default()
                )
            }
        };
        let authority = url.strip_prefix("http://").unwrap().to_owned();
        Self {
            child,
            url,
            authority,
            log: log.to_owned(),
        }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

/// curl to the proxy: (status, body).
fn curl(url: &str, extra: &[&str]) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "30", "-w", "\n%{http_code}"])
        .args(extra)
        .arg(url)
        .output()
        .expect("curl");
    let body = text(&out.stdout);
    let (body, code) = body.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// Everything the Console Pods logged.
fn console_log(c: &Cluster) -> String {
    c.console_pods()
        .iter()
        .map(|p| {
            let name = p["metadata"]["name"].as_str().unwrap();
            c.logs(CONSOLE_NS, name, None, None, false)
                .unwrap_or_else(|e| e)
        })
        .collect()
}

/// Open connections on the Console listener of every Console Pod (their
/// admin listener's metrics, reached on the Pod IPs).
fn console_connections(c: &Cluster) -> f64 {
    c.console_pods()
        .iter()
        .map(|p| {
            let ip = p["status"]["podIP"].as_str().unwrap();
            let (_, body) = curl(&format!("http://{ip}:9090/metrics"), &[]);
            body.lines()
                .find(|l| l.starts_with("kruntimes_console_connections_open{listener=\"console\"}"))
                .and_then(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
                .unwrap_or(0.0)
        })
        .sum()
}

struct Cleanup<'a> {
    c: &'a Cluster,
    tag: String,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let _ = self.c.helm(&[
            "uninstall",
            RELEASE,
            "-n",
            CONSOLE_NS,
            "--wait",
            "--timeout",
            "2m",
        ]);
        let labels = format!("krt-test={}", self.tag);
        for (api_version, kind) in [
            ("kruntimes.io/v1alpha1", "Run"),
            ("rbac.authorization.k8s.io/v1", "Role"),
            ("rbac.authorization.k8s.io/v1", "RoleBinding"),
            ("rbac.authorization.k8s.io/v1", "ClusterRole"),
            ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ] {
            let _ = self.c.delete_all(api_version, kind, None, &labels);
        }
    }
}

#[test]
fn the_dashboard_proxy_serves_the_console_with_the_kubeconfig_identity() {
    let Some(c) = cluster("the_dashboard_proxy_serves_the_console_with_the_kubeconfig_identity")
    else {
        return;
    };
    let tag = unique("dash");
    let _cleanup = Cleanup {
        c,
        tag: tag.clone(),
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // ---- the listen address: only loopback, refused before anything else
    // (the kubeconfig named does not even exist).
    for (address, why) in [
        ("0.0.0.0", "every interface"),
        ("::", "every interface"),
        ("198.18.1.1", "not a loopback address"),
        ("192.168.1.10", "not a loopback address"),
        ("localhost", "not an IP address"),
    ] {
        let (ok, out) = dashboard_fails(&[
            "--address",
            address,
            "--port",
            "0",
            "--kubeconfig",
            "/nonexistent/kubeconfig",
        ]);
        assert!(!ok, "--address {address} was accepted: {out}");
        assert!(out.contains(why), "--address {address}: {out}");
        assert!(
            !out.contains("/nonexistent"),
            "checked before the kubeconfig: {out}"
        );
    }

    // ---- the Console, installed by the chart (one replica)
    let (repo, image_tag) = c.console_image();
    c.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {CONSOLE_NS}}}\n"
    ));
    c.helm_ok(&[
        "install",
        RELEASE,
        "chart",
        "-n",
        CONSOLE_NS,
        "--set",
        "console.replicas=1",
        "--set",
        &format!("console.image.repository={repo}"),
        "--set",
        &format!("console.image.tag={image_tag}"),
        "--set",
        "console.image.pullPolicy=Never",
        "--wait",
        "--timeout",
        "5m",
    ]);
    c.wait_console_pods(1);

    // ---- the developer: viewer, allowed to port-forward to the Console
    // and to read its APIService (docs/dashboard.md), nothing more there.
    let labels = json!({"krt-test": tag});
    for doc in [
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": tag, "namespace": CONSOLE_NS, "labels": labels},
        "rules": [
            {"apiGroups": [""], "resources": ["services"], "resourceNames": ["kruntimes-console"], "verbs": ["get"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["pods/portforward"], "verbs": ["get", "create"]},
        ]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": tag, "namespace": CONSOLE_NS, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": tag},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": tag, "labels": labels},
            "rules": [{"apiGroups": ["apiregistration.k8s.io"], "resources": ["apiservices"],
                       "resourceNames": ["v1alpha1.logs.kruntimes.io"], "verbs": ["get"]}]}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": tag, "labels": labels},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": tag},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "viewer"}]}),
    ] {
        c.apply(&doc.to_string());
    }
    let (run_a, run_b) = (format!("{tag}-a"), format!("{tag}-b"));
    for (ns, name) in [(TEAM, &run_a), (OTHER, &run_b)] {
        c.apply(
            &json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                "metadata": {"name": name, "namespace": ns, "labels": labels},
                "spec": {"runtime": "bash", "mode": {"task": {}}}})
            .to_string(),
        );
    }
    let viewer = c.var("CLUSTER_TOKEN_VIEWER").to_owned();
    let admin = c.var("CLUSTER_TOKEN_ADMIN").to_owned();

    // A client-certificate user while the Console takes none: refused at
    // start, saying why (the admin's certificate, so it is not a lack of RBAC).
    let cert_kubeconfig = d.join("cert.kubeconfig");
    let pki = c.state().join("pki");
    c.kubeconfig_for(
        &cert_kubeconfig,
        &format!(
            "    client-certificate: {}\n    client-key: {}\n",
            pki.join("apiserver-kubelet-client.crt").display(),
            pki.join("apiserver-kubelet-client.key").display()
        ),
    );
    let (ok, out) = dashboard_fails(&[
        "--kubeconfig",
        cert_kubeconfig.to_str().unwrap(),
        "--port",
        "0",
    ]);
    assert!(!ok, "a client-certificate kubeconfig was taken: {out}");
    assert!(
        out.contains("did not take the kubeconfig's client certificate")
            && out.contains("console.tls.clientCASecretName"),
        "{out}"
    );

    // The exec plugin reads the token from a file and counts its runs.
    let token_file = d.join("viewer.token");
    std::fs::write(&token_file, &viewer).unwrap();
    let runs = d.join("exec.runs");
    let plugin = format!(
        "echo run >> {}; printf '{{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{{\"token\":\"%s\"}}}}' \"$(cat {})\"",
        runs.display(),
        token_file.display()
    );
    let kubeconfig = d.join("dev.kubeconfig");
    c.kubeconfig_for(
        &kubeconfig,
        &format!(
            "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      interactiveMode: Never\n      command: sh\n      args: ['-c', {plugin:?}]\n"
        ),
    );
    let proxy = Proxy::start(&kubeconfig, &d.join("proxy.log"));
    assert!(
        proxy.url.starts_with("http://127.0.0.1:"),
        "the default address is 127.0.0.1: {}",
        proxy.url
    );
    assert!(
        std::fs::read_to_string(&runs)
            .unwrap_or_default()
            .lines()
            .count()
            >= 1,
        "the exec plugin ran"
    );
    let u = &proxy.url;

    // ---- who the Console sees: the kubeconfig user, whatever the browser sends
    let (code, body) = curl(&format!("{u}/api/session"), &[]);
    assert_eq!(code, 200, "{body}");
    let s: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(s["authenticated"], true, "{s}");
    assert_eq!(s["username"], "viewer", "{s}");
    let (code, body) = curl(
        &format!("{u}/api/session"),
        &[
            "-H",
            &format!("Authorization: Bearer {admin}"),
            "-H",
            "Cookie: krt-session=forged",
            "-H",
            "Impersonate-User: admin",
            "-H",
            "X-Remote-User: admin",
        ],
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["username"],
        "viewer",
        "the browser's own credential and identity headers are dropped: {body}"
    );
    // The user's own permissions: their Run, not another namespace's.
    let (code, body) = curl(&format!("{u}/api/namespaces/{TEAM}/runs/{run_a}"), &[]);
    assert_eq!(code, 200, "{body}");
    let (code, body) = curl(&format!("{u}/api/namespaces/{OTHER}/runs/{run_b}"), &[]);
    assert_eq!(code, 403, "viewer may not read {OTHER}: {body}");
    // The web UI itself.
    let (code, body) = curl(&format!("{u}/"), &[]);
    assert_eq!(code, 200);
    assert!(
        body.contains("<div id=\"root\">") || body.contains("id=\"root\""),
        "{body}"
    );

    // ---- refused, never forwarded: each refused path is a marker that must
    // not appear in the Console's access log; the control path must.
    let control = format!("/api/namespaces/{TEAM}/runs/{tag}-control");
    let (code, _) = curl(&format!("{u}{control}"), &[]);
    assert_eq!(code, 404, "the control request reaches the Console");
    let port = proxy.authority.rsplit_once(':').unwrap().1.to_owned();
    let refused: Vec<(String, Vec<String>)> = vec![
        (
            format!("/api/namespaces/{TEAM}/runs/{tag}-host"),
            vec!["-H".into(), format!("Host: evil.example:{port}")],
        ),
        (
            format!("/api/namespaces/{TEAM}/runs/{tag}-localhost"),
            vec!["-H".into(), format!("Host: localhost:{port}")],
        ),
        (
            format!("/api/namespaces/{TEAM}/runs/{tag}-origin-get"),
            vec!["-H".into(), "Origin: http://evil.example".into()],
        ),
        (
            format!("/api/namespaces/{TEAM}/runs/{tag}-origin-post"),
            vec![
                "-X".into(),
                "POST".into(),
                "-H".into(),
                "Origin: http://evil.example".into(),
                "--data".into(),
                "{}".into(),
            ],
        ),
        (
            format!("/api/namespaces/{TEAM}/runs/{tag}-no-origin"),
            vec!["-X".into(), "DELETE".into()],
        ),
        (
            format!(
                "/v1/namespaces/{TEAM}/runs/{tag}-ws/00000000-0000-0000-0000-000000000000/operations:ws"
            ),
            vec![
                "-H".into(),
                "Connection: Upgrade".into(),
                "-H".into(),
                "Upgrade: websocket".into(),
                "-H".into(),
                "Sec-WebSocket-Version: 13".into(),
                "-H".into(),
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==".into(),
                "-H".into(),
                "Origin: http://evil.example".into(),
            ],
        ),
        (
            format!("/api/namespaces/{TEAM}/runs/{tag}-cross-site"),
            vec![
                "-H".into(),
                "Sec-Fetch-Site: cross-site".into(),
                "-H".into(),
                "Sec-Fetch-Mode: no-cors".into(),
            ],
        ),
    ];
    for (path, args) in &refused {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let (code, body) = curl(&format!("{u}{path}"), &a);
        assert_eq!(code, 403, "{path} {args:?}: {body}");
        assert!(body.contains("refused by the dashboard proxy"), "{body}");
    }
    // A state change from the proxy's own Origin goes through (and is the
    // Console's to answer: logout answers 200).
    let (code, body) = curl(
        &format!("{u}/api/session"),
        &["-X", "DELETE", "-H", &format!("Origin: {u}")],
    );
    assert_eq!(code, 200, "{body}");

    // ---- Chromium through the proxy
    browser_flow(&proxy, &viewer, &run_a, &run_b, &tag);

    let log = eventually("the Console logged the control request", 30, || {
        let log = console_log(c);
        log.contains(&control).then_some(log)
    });
    for (path, _) in &refused {
        assert!(!log.contains(path.as_str()), "{path} reached the Console");
    }
    let proxy_log = proxy.log();
    for (path, _) in &refused {
        assert!(
            proxy_log.contains(&format!(" {path}: ")),
            "the proxy logs the refusal of {path}: {proxy_log}"
        );
    }
    // Another page's requests in Chromium (dashboard.mjs): refused, not forwarded.
    if std::env::var("E2E_SKIP_BROWSER").as_deref() != Ok("1") {
        for path in [
            format!("POST /api/namespaces/{TEAM}/runs/{tag}-page-post"),
            format!("GET /v1/namespaces/{TEAM}/runs/{tag}-page-ws/"),
        ] {
            assert!(
                proxy_log.contains(&format!("refused {path}")),
                "Chromium's request from another page was refused: {path}: {proxy_log}"
            );
        }
        assert!(
            !log.contains(&format!("{tag}-page-")),
            "another page's request reached the Console"
        );
    }

    // ---- SIGTERM: a port-forward is open (a keep-alive connection that
    // sent a request), then none.
    let mut held = TcpStream::connect(&proxy.authority).unwrap();
    write!(
        held,
        "GET /api/session HTTP/1.1\r\nHost: {}\r\nAccept: application/json\r\n\r\n",
        proxy.authority
    )
    .unwrap();
    held.set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    let mut first = [0u8; 12];
    held.read_exact(&mut first).unwrap();
    assert_eq!(&first, b"HTTP/1.1 200", "the held connection's answer");
    eventually("the Console sees the port-forward's connection", 30, || {
        (console_connections(c) >= 1.0).then_some(())
    });
    let mut proxy = proxy;
    let pid = proxy.child.id().to_string();
    assert!(
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success()
    );
    let status = eventually("the proxy exits after SIGTERM", 30, || {
        proxy.child.try_wait().unwrap()
    });
    let proxy_log = proxy.log();
    assert!(
        status.success(),
        "exit after SIGTERM: {status}: {proxy_log}"
    );
    assert!(
        proxy_log.contains("SIGTERM: closing every connection and port-forward"),
        "{proxy_log}"
    );
    assert!(
        proxy_log.contains("every port-forward is closed"),
        "{proxy_log}"
    );
    let mut rest = Vec::new();
    let _ = held.read_to_end(&mut rest);
    eventually("no connection left on the Console listener", 60, || {
        (console_connections(c) == 0.0).then_some(())
    });

    // ---- no credential in any log
    let console = console_log(c);
    for (name, token) in [("viewer", &viewer), ("admin", &admin)] {
        assert!(
            !proxy_log.contains(token.as_str()),
            "the {name} token is in the proxy's log"
        );
        assert!(
            !console.contains(token.as_str()),
            "the {name} token is in the Console's log"
        );
    }
}

/// `npm run e2e:dashboard` in console/web (Chromium: CHROMIUM, default
/// Debian's /usr/bin/chromium). Skipped only with E2E_SKIP_BROWSER=1.
fn browser_flow(proxy: &Proxy, token: &str, run: &str, other_run: &str, marker: &str) {
    if std::env::var("E2E_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("E2E_SKIP_BROWSER=1: the dashboard browser flow is NOT run");
        return;
    }
    let web = repo_root().join("console/web");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "{chromium} is missing: install Debian's chromium, set CHROMIUM, or skip with E2E_SKIP_BROWSER=1"
    );
    assert!(
        web.join("node_modules/playwright-core").exists(),
        "console/web/node_modules is missing: run `npm ci` in console/web"
    );
    let out = Command::new("npm")
        .args(["run", "--silent", "e2e:dashboard"])
        .current_dir(&web)
        .env("CHROMIUM", &chromium)
        .env("DASHBOARD_URL", &proxy.url)
        .env("E2E_USER", "viewer")
        .env("E2E_TOKEN", token)
        .env("E2E_NAMESPACE", TEAM)
        .env("E2E_RUN", run)
        .env("E2E_OTHER_NAMESPACE", OTHER)
        .env("E2E_OTHER_RUN", other_run)
        .env("E2E_MARKER", marker)
        .env("E2E_SHOTS", repo_root().join("target/ui-shots"))
        .env_remove("E2E_ONLY")
        .stdin(Stdio::null())
        .output()
        .expect("npm");
    let report = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let leaked = report.contains(token);
    eprintln!(
        "dashboard browser flow:\n{}",
        report.replace(token, "<viewer token>")
    );
    assert!(!leaked, "the flow's output holds the token");
    assert!(out.status.success(), "the dashboard browser flow failed");
    let last = text(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    assert_eq!(last, "2 passed, 0 failed");
}
