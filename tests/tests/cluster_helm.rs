//! The Console the way an operator runs it: the image built by `hack/image`,
//! the chart installed by Helm on the real node of `hack/cluster`, two
//! Console Pods in-cluster (their ServiceAccount token, the cluster CA,
//! `KUBERNETES_SERVICE_HOST`, a read-only root filesystem, user 65532).
//! Only the Runtime side is simulated: a runtimed stand-in Pod whose stdout
//! the container runtime writes and the kubelet serves, and the fake gateway
//! as a Pod behind `<runtime>-gateway`.
//!
//! One test, in order: install; APIService Available through the real
//! Service; `runs/log` (tail and follow) from the runtimed Pod's container
//! log; the Console through `kubectl port-forward` (login, `/api`, `/v1`
//! invoke and `operations:ws` reaching the gateway by its DNS name); a
//! Console Pod deleted, `helm upgrade` to a new tag and `helm rollback`
//! under a load loop with no failed request; the TLS Secret replaced and
//! served without a restart; `helm test`; `helm uninstall` removing
//! everything. Skipped without a cluster (`CLUSTER_STATE`).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use kruntimes_tests::cluster::{Cluster, cluster, eventually};
use kruntimes_tests::env::{repo_root, unique};
use kruntimes_tests::stream::{self, WsTarget};
use serde_json::{Value, json};

const NS: &str = "kruntimes-system";
const RELEASE: &str = "kruntimes-console";
const APISERVICE: &str = "v1alpha1.logs.kruntimes.io";
const HOST: &str = "kruntimes-console.kruntimes-system.svc";
const TEAM: &str = "team-a";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `hack/helm ARGS` against the cluster.
fn helm(c: &Cluster, args: &[&str]) -> Output {
    Command::new(repo_root().join("hack/helm"))
        .current_dir(repo_root())
        .env("KUBECONFIG", c.var("KUBECONFIG"))
        .args(args)
        .output()
        .expect("running hack/helm")
}

fn helm_ok(c: &Cluster, args: &[&str]) -> String {
    let out = helm(c, args);
    assert!(
        out.status.success(),
        "helm {args:?} failed: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// `kubectl` as a user of the cluster (a token only, no client certificate).
fn kubectl_as(c: &Cluster, user: &str) -> Command {
    let mut cmd = Command::new("kubectl");
    let empty = c.state().join("empty.kubeconfig");
    if !empty.exists() {
        let _ = std::fs::write(&empty, "apiVersion: v1\nkind: Config\n");
    }
    cmd.arg("--kubeconfig")
        .arg(empty)
        .arg("--server")
        .arg(c.var("CLUSTER_APISERVER"))
        .arg("--certificate-authority")
        .arg(c.var("CLUSTER_CA"))
        .arg("--token")
        .arg(token(c, user));
    cmd
}

fn token(c: &Cluster, user: &str) -> String {
    c.var(&format!("CLUSTER_TOKEN_{}", user.to_uppercase()))
        .to_owned()
}

/// Runs hack/lib/pki.sh functions in `dir`.
fn pki(dir: &Path, script: &str) {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "set -euo pipefail; source '{}'; {script}",
            repo_root().join("hack/lib/pki.sh").display()
        ))
        .env("D", dir)
        .output()
        .expect("bash");
    assert!(out.status.success(), "pki: {}", text(&out.stderr));
}

/// The images `hack/image --state $CLUSTER_STATE` built and imported.
struct Images {
    console_repo: String,
    console_tag: String,
    runtimed: String,
    gateway: String,
}

fn images(c: &Cluster) -> Images {
    let path = c.state().join("images.env");
    let vars =
        kruntimes_tests::env::parse_exports(&std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!(
                "{}: {e} (run hack/image --state $CLUSTER_STATE)",
                path.display()
            )
        }));
    let console = vars["IMAGE_CONSOLE"].clone();
    let (repo, tag) = console.rsplit_once(':').expect("repository:tag");
    Images {
        console_repo: repo.to_owned(),
        console_tag: tag.to_owned(),
        runtimed: vars["IMAGE_RUNTIMED"].clone(),
        gateway: vars["IMAGE_GATEWAY"].clone(),
    }
}

fn json_of(c: &Cluster, args: &[&str]) -> Value {
    let mut a = args.to_vec();
    a.extend(["-o", "json"]);
    serde_json::from_str(&c.kubectl_ok(&a)).expect("kubectl JSON")
}

fn console_pods(c: &Cluster) -> Vec<Value> {
    json_of(
        c,
        &[
            "-n",
            NS,
            "get",
            "pods",
            "-l",
            "app.kubernetes.io/name=kruntimes-console",
        ],
    )["items"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|p| p["metadata"]["name"] != "kruntimes-console-test")
        .collect()
}

fn is_ready(pod: &Value) -> bool {
    pod["metadata"]["deletionTimestamp"].is_null()
        && pod["status"]["conditions"].as_array().is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == "Ready" && c["status"] == "True")
        })
}

/// Waits until exactly `n` Console Pods exist, all Ready, running `image`.
fn wait_console_pods(c: &Cluster, n: usize, image: &str) -> Vec<Value> {
    eventually(
        &format!("{n} ready Console Pods running {image}"),
        240,
        || {
            let pods = console_pods(c);
            (pods.len() == n
                && pods
                    .iter()
                    .all(|p| is_ready(p) && p["spec"]["containers"][0]["image"] == image))
            .then_some(pods)
        },
    )
}

fn apiservice_available(c: &Cluster) -> bool {
    let out = c.kubectl(&["get", "apiservice", APISERVICE, "-o", "json"]);
    if !out.status.success() {
        return false;
    }
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_default();
    v["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Available" && c["status"] == "True")
    })
}

fn log_path(run: &str, query: &str) -> String {
    kruntimes_tests::env::log_path(TEAM, run, query)
}

/// A Run's records through `kubectl get --raw` as `user`.
fn run_log(c: &Cluster, user: &str, run: &str, query: &str) -> Result<Value, String> {
    let out = kubectl_as(c, user)
        .args(["get", "--raw", &log_path(run, query)])
        .output()
        .expect("kubectl");
    if !out.status.success() {
        return Err(text(&out.stderr));
    }
    serde_json::from_slice(&out.stdout).map_err(|e| format!("{e}: {}", text(&out.stdout)))
}

fn messages(log: &Value) -> Vec<String> {
    log["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// curl against the Console at `ip:port`, verified as `HOST`.
fn curl(ca: &Path, ip: &str, port: u16, extra: &[&str], path: &str) -> (u16, String) {
    let out = Command::new("curl")
        .args(["-s", "--max-time", "20", "--cacert"])
        .arg(ca)
        .args(["--resolve", &format!("{HOST}:{port}:{ip}")])
        .args(["-w", "\n%{http_code}"])
        .args(extra)
        .arg(format!("https://{HOST}:{port}{path}"))
        .output()
        .expect("curl");
    let body = text(&out.stdout);
    let (body, code) = body.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

/// Everything the test made, removed even when it fails half way.
struct Cleanup<'a> {
    c: &'a Cluster,
    runtime: String,
}

impl Drop for Cleanup<'_> {
    fn drop(&mut self) {
        let _ = helm(
            self.c,
            &["uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "2m"],
        );
        let rt = &self.runtime;
        let _ = self.c.kubectl(&[
            "-n",
            TEAM,
            "delete",
            "pod,service,secret,runs.kruntimes.io,runtimes.kruntimes.io",
            "-l",
            &format!("krt-test={rt}"),
            "--wait=false",
        ]);
        let _ = self.c.kubectl(&[
            "-n",
            NS,
            "delete",
            "secret",
            "gateway-ca",
            "--ignore-not-found",
        ]);
    }
}

#[test]
fn the_chart_installed_by_helm_runs_the_console_in_cluster() {
    let Some(c) = cluster("the_chart_installed_by_helm_runs_the_console_in_cluster") else {
        return;
    };
    let img = images(c);
    let rt = unique("rt");
    let _cleanup = Cleanup {
        c,
        runtime: rt.clone(),
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // The gateway's CA goes to the Console before it starts.
    pki(
        d,
        &format!(
            "pki_ca \"$D\" gw-ca kruntimes-test-gateway-ca; pki_cert \"$D\" gw-ca gw /CN={rt}-gateway serverAuth DNS:{rt}-gateway.{TEAM}.svc"
        ),
    );
    c.apply(&format!(
        "apiVersion: v1\nkind: Namespace\nmetadata: {{name: {NS}}}\n"
    ));
    let _ = c.kubectl(&[
        "-n",
        NS,
        "delete",
        "secret",
        "gateway-ca",
        "--ignore-not-found",
    ]);
    c.kubectl_ok(&[
        "-n",
        NS,
        "create",
        "secret",
        "generic",
        "gateway-ca",
        &format!("--from-file=ca.crt={}", d.join("gw-ca.crt").display()),
    ]);

    // ---- install
    let image = format!("{}:{}", img.console_repo, img.console_tag);
    helm_ok(
        c,
        &[
            "install",
            RELEASE,
            "chart",
            "-n",
            NS,
            "--set",
            "console.replicas=2",
            "--set",
            &format!("console.image.repository={}", img.console_repo),
            "--set",
            &format!("console.image.tag={}", img.console_tag),
            "--set",
            "console.image.pullPolicy=Never",
            "--set",
            "console.access.gatewayCASecretName=gateway-ca",
            "--wait",
            "--timeout",
            "5m",
        ],
    );
    let pods = wait_console_pods(c, 2, &image);
    for p in &pods {
        let args: Vec<&str> = p["spec"]["containers"][0]["args"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        assert!(
            !args.iter().any(|a| a.starts_with("--kubeconfig")),
            "in-cluster configuration, no kubeconfig: {args:?}"
        );
        assert_eq!(p["spec"]["nodeName"], c.var("CLUSTER_NODE"));
    }
    // The processes on the node run as 65532 (the image's user and the chart's).
    let ps = Command::new("ps")
        .args(["-eo", "uid=,args="])
        .output()
        .unwrap();
    let console_uids: Vec<String> = text(&ps.stdout)
        .lines()
        .filter(|l| l.contains("/usr/local/bin/kruntimes-console --apiserver-listen=0.0.0.0:8443"))
        .map(|l| l.split_whitespace().next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(console_uids, ["65532", "65532"], "Console processes' users");
    eventually("APIService Available through the Service", 120, || {
        apiservice_available(c).then_some(())
    });
    let svc = json_of(c, &["get", "apiservice", APISERVICE]);
    assert_eq!(svc["spec"]["service"]["name"], "kruntimes-console");
    assert_eq!(svc["spec"]["service"]["namespace"], NS);
    let discovery = c.kubectl_ok(&["get", "--raw", "/apis/logs.kruntimes.io/v1alpha1"]);
    assert!(discovery.contains("runs/log"), "{discovery}");
    let tls = json_of(c, &["-n", NS, "get", "secret", "kruntimes-console-tls"]);
    let console_ca = d.join("console-ca.crt");
    std::fs::write(
        &console_ca,
        B64.decode(tls["data"]["ca.crt"].as_str().unwrap()).unwrap(),
    )
    .unwrap();

    // ---- the Runtime side: a gateway Pod and a runtimed Pod with two Runs
    let label = format!("krt-test={rt}");
    let secret = |name: &str, files: &[(&str, PathBuf)]| {
        let mut args = vec![
            "-n".to_owned(),
            TEAM.to_owned(),
            "create".into(),
            "secret".into(),
            "generic".into(),
            name.to_owned(),
        ];
        for (k, f) in files {
            args.push(format!("--from-file={k}={}", f.display()));
        }
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        c.kubectl_ok(&a);
        c.kubectl_ok(&["-n", TEAM, "label", "secret", name, &label]);
    };
    secret(
        &format!("{rt}-gateway-tls"),
        &[
            ("tls.crt", d.join("gw.crt")),
            ("tls.key", d.join("gw.key")),
            ("client-ca.crt", console_ca.clone()),
        ],
    );
    let new_run = |name: &str, mode: &str| -> String {
        let spec = if mode == "session" {
            json!({"runtime": rt, "mode": {"session": {"leaseSeconds": 300}}})
        } else {
            json!({"runtime": rt, "mode": {mode: {}}})
        };
        c.apply(
            &json!({
                "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                "metadata": {"name": name, "namespace": TEAM, "labels": {"krt-test": rt}},
                "spec": spec,
            })
            .to_string(),
        );
        c.kubectl_ok(&[
            "-n",
            TEAM,
            "get",
            "run",
            name,
            "-o",
            "jsonpath={.metadata.uid}",
        ])
    };
    let (run_a, run_b, run_f, run_s) = (
        format!("{rt}-a"),
        format!("{rt}-b"),
        format!("{rt}-f"),
        format!("{rt}-s"),
    );
    // The Runtime the Runs name (the Console lists it in the Runs filter).
    c.apply(
        &json!({
            "apiVersion": "kruntimes.io/v1alpha1", "kind": "Runtime",
            "metadata": {"name": rt, "namespace": TEAM, "labels": {"krt-test": rt}},
            "spec": {"replicas": 1, "port": 8080, "template": {"spec": {"containers": [
                {"name": "runtime", "image": img.runtimed}]}}},
        })
        .to_string(),
    );
    let uid_a = new_run(&run_a, "task");
    let uid_b = new_run(&run_b, "task");
    let uid_f = new_run(&run_f, "function");
    let uid_s = new_run(&run_s, "session");
    let started = chrono_now(-5);
    let pod = format!("{rt}-0");
    c.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: {rt}-gateway
  namespace: {TEAM}
  labels: {{krt-test: {rt}, app: {rt}-gateway}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: gateway
    image: {gw}
    imagePullPolicy: Never
    args: ["--listen=0.0.0.0:8443", "--tls-cert=/tls/tls.crt", "--tls-key=/tls/tls.key",
           "--client-ca=/tls/client-ca.crt", "--control-listen=0.0.0.0:8081"]
    ports: [{{containerPort: 8443, name: https}}]
    readinessProbe: {{tcpSocket: {{port: 8443}}, periodSeconds: 1}}
    volumeMounts: [{{name: tls, mountPath: /tls, readOnly: true}}]
  volumes: [{{name: tls, secret: {{secretName: {rt}-gateway-tls}}}}]
---
apiVersion: v1
kind: Service
metadata:
  name: {rt}-gateway
  namespace: {TEAM}
  labels: {{krt-test: {rt}}}
spec:
  selector: {{app: {rt}-gateway}}
  ports: [{{name: https, port: 443, targetPort: https}}]
---
apiVersion: v1
kind: Pod
metadata:
  name: {pod}
  namespace: {TEAM}
  labels: {{krt-test: {rt}, runtime: {rt}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: runtimed
    image: {runtimed}
    imagePullPolicy: Never
    env:
    - {{name: RUNTIMED_RUNS, value: "{run_a}={uid_a},{run_b}={uid_b}"}}
    - {{name: RUNTIMED_COUNT, value: "60"}}
    - {{name: RUNTIMED_RATE, value: "30"}}
    - {{name: RUNTIME_NAME, value: {rt}}}
    - {{name: POD_NAME, valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}}}
    - {{name: POD_NAMESPACE, valueFrom: {{fieldRef: {{fieldPath: metadata.namespace}}}}}}
    readinessProbe: {{httpGet: {{path: /healthz, port: 8080}}, periodSeconds: 1}}
"#,
        gw = img.gateway,
        runtimed = img.runtimed,
    ));
    let runtimed = eventually("the runtimed Pod ready", 120, || {
        let p = json_of(c, &["-n", TEAM, "get", "pod", &pod]);
        is_ready(&p).then_some(p)
    });
    let pod_uid = runtimed["metadata"]["uid"].as_str().unwrap().to_owned();
    let pod_ip = runtimed["status"]["podIP"].as_str().unwrap().to_owned();
    let status = |run: &str, status: Value| {
        c.kubectl_ok(&[
            "-n",
            TEAM,
            "patch",
            "run",
            run,
            "--subresource=status",
            "--type=merge",
            "-p",
            &json!({"status": status}).to_string(),
        ]);
    };
    for run in [&run_a, &run_b] {
        status(
            run,
            json!({"phase": "Running", "assignedPod": pod, "assignedPodUID": pod_uid, "startTime": started}),
        );
    }
    status(&run_f, json!({"phase": "Ready"}));
    status(&run_s, json!({"phase": "Ready"}));
    eventually("the gateway Pod ready", 120, || {
        is_ready(&json_of(
            c,
            &["-n", TEAM, "get", "pod", &format!("{rt}-gateway")],
        ))
        .then_some(())
    });

    // ---- runs/log from the real container log
    let cri_records = eventually("runtimed wrote its 60 lines", 60, || {
        let out = c.kubectl(&["-n", TEAM, "logs", &pod, "-c", "runtimed"]);
        let t = text(&out.stdout);
        (t.lines().count() >= 60).then_some(t)
    });
    let of_run = |uid: &str| -> Vec<String> {
        cri_records
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v["run_uid"] == uid)
            .map(|v| v["message"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    let (want_a, want_b) = (of_run(&uid_a), of_run(&uid_b));
    assert!(
        want_a.len() >= 10 && want_b.len() >= 10,
        "{want_a:?} {want_b:?}"
    );
    let got_a = messages(&run_log(c, "viewer", &run_a, "?tailLines=500").expect("viewer reads A"));
    assert_eq!(got_a, want_a, "exactly run A's records, in order");
    let got_b = messages(&run_log(c, "viewer", &run_b, "?tailLines=500").expect("viewer reads B"));
    assert_eq!(got_b, want_b, "exactly run B's records, in order");
    let tail = messages(&run_log(c, "viewer", &run_a, "?tailLines=3").unwrap());
    assert_eq!(tail, want_a[want_a.len() - 3..]);
    let denied = run_log(c, "outsider", &run_a, "").expect_err("outsider is refused");
    assert!(denied.contains("forbidden"), "{denied}");

    // follow=true delivers what the container prints, and only this Run's lines.
    let mut follow = kubectl_as(c, "viewer")
        .args([
            "get",
            "--raw",
            &log_path(&run_a, "?follow=true&tailLines=1"),
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let rx = stream::lines(&mut follow);
    rx.recv_timeout(Duration::from_secs(20))
        .expect("the follow's history");
    let add_line = |uid: &str, message: &str| {
        let out = Command::new("curl")
            .args([
                "-sSf",
                "--max-time",
                "5",
                "-H",
                "Content-Type: application/json",
                "-d",
            ])
            .arg(json!({"run_uid": uid, "message": message}).to_string())
            .arg(format!("http://{pod_ip}:8080/lines"))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "runtimed control: {}",
            text(&out.stderr)
        );
    };
    let mut delays = Vec::new();
    for i in 0..5 {
        add_line(&uid_b, &format!("b-live-{i}"));
        let want = format!("a-live-{i}");
        let t0 = Instant::now();
        add_line(&uid_a, &want);
        let line = rx
            .recv_timeout(Duration::from_secs(5))
            .unwrap_or_else(|_| panic!("{want} not delivered within 5 s"));
        delays.push(t0.elapsed());
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(
            v["message"],
            want.as_str(),
            "the next line is A's, never B's: {line}"
        );
    }
    delays.sort();
    eprintln!("follow: container print to delivery {delays:?}");
    assert!(
        delays[2] < Duration::from_secs(1),
        "median print-to-delivery {:?} (all: {delays:?})",
        delays[2]
    );
    let _ = follow.kill();

    // ---- the Console through kubectl port-forward
    let port = kruntimes_tests::env::free_port();
    let mut forward = Command::new("kubectl")
        .args([
            "--kubeconfig",
            c.var("KUBECONFIG"),
            "-n",
            NS,
            "port-forward",
        ])
        .arg("svc/kruntimes-console")
        .arg(format!("{port}:443"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let fwd = stream::lines(&mut forward);
    fwd.recv_timeout(Duration::from_secs(30))
        .expect("port-forward started");
    let origin = format!("Origin: https://{HOST}:{port}");
    let viewer = token(c, "viewer");
    let operator = token(c, "operator");
    let jar = d.join("cookies");
    let (code, body) = curl(
        &console_ca,
        "127.0.0.1",
        port,
        &[
            "-H",
            &origin,
            "-H",
            "Content-Type: application/json",
            "-c",
            jar.to_str().unwrap(),
            "--data-binary",
            &json!({"token": viewer}).to_string(),
        ],
        "/api/session",
    );
    assert_eq!(code, 200, "{body}");
    assert!(!body.contains(&viewer), "the token never comes back");
    let jar_text = std::fs::read_to_string(&jar).unwrap();
    let cookie = jar_text
        .lines()
        .find(|l| l.contains("__Host-krt-session"))
        .and_then(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.len() >= 7).then(|| format!("{}={}", f[5], f[6]))
        })
        .expect("session cookie");
    let (code, body) = curl(
        &console_ca,
        "127.0.0.1",
        port,
        &["-H", &format!("Cookie: {cookie}")],
        "/api/session",
    );
    assert_eq!(code, 200);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["username"],
        "viewer"
    );
    let (code, body) = curl(
        &console_ca,
        "127.0.0.1",
        port,
        &["-H", &format!("Cookie: {cookie}")],
        &format!("/api/namespaces/{TEAM}/runs?runtime={rt}"),
    );
    assert_eq!(code, 200, "{body}");
    for run in [&run_a, &run_b] {
        assert!(body.contains(run.as_str()), "{run} listed: {body}");
    }
    let (code, body) = curl(
        &console_ca,
        "127.0.0.1",
        port,
        &["-H", &format!("Cookie: {cookie}")],
        &format!("/api/namespaces/{TEAM}/runs/{run_a}/logs?tail=500"),
    );
    assert_eq!(code, 200, "{body}");
    assert_eq!(
        messages(&serde_json::from_str(&body).unwrap())[..want_a.len()],
        want_a[..],
        "/api logs go through kube-apiserver to the aggregated API"
    );
    // /v1 invoke reaches the gateway Pod by its DNS name.
    let (code, body) = curl(
        &console_ca,
        "127.0.0.1",
        port,
        &[
            "-H",
            &format!("Authorization: Bearer {operator}"),
            "-H",
            "Content-Type: application/json",
            "--data-binary",
            r#"{"input":7}"#,
        ],
        &format!("/v1/namespaces/{TEAM}/runs/{run_f}/{uid_f}/invoke"),
    );
    assert_eq!(code, 200, "{body}");
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["user"], "operator", "{v}");
    assert_eq!(v["body"]["input"], 7, "{v}");
    let (code, body) = curl(
        &console_ca,
        "127.0.0.1",
        port,
        &[
            "-H",
            &format!("Authorization: Bearer {viewer}"),
            "--data-binary",
            "{}",
        ],
        &format!("/v1/namespaces/{TEAM}/runs/{run_f}/{uid_f}/invoke"),
    );
    assert_eq!(code, 403, "a viewer never runs anything: {body}");
    operations_echo(&console_ca, port, &operator, &run_s, &uid_s);
    // The browser suite's core flow in Chromium through the same port-forward.
    let mut tail_a = want_a.clone();
    tail_a.extend((0..5).map(|i| format!("a-live-{i}")));
    browser_core_flow(&BrowserFlow {
        ca: &console_ca,
        port,
        viewer: &viewer,
        runtime: &rt,
        run: &run_a,
        messages: &tail_a,
        append: &format!(
            r#"curl -sSf --max-time 5 -o /dev/null -H "Content-Type: application/json" -d "{{\"run_uid\":\"{uid_a}\",\"message\":\"$1\"}}" http://{pod_ip}:8080/lines"#
        ),
    });
    let _ = forward.kill();
    let _ = forward.wait();

    // ---- HA: a Console Pod deleted, an upgrade and a rollback, under load
    let cluster_ip = c.kubectl_ok(&[
        "-n",
        NS,
        "get",
        "svc",
        "kruntimes-console",
        "-o",
        "jsonpath={.spec.clusterIP}",
    ]);
    let load = Load::start(c, &console_ca, &cluster_ip, &run_a, &rt);
    std::thread::sleep(Duration::from_secs(3));
    let victim = pods[0]["metadata"]["name"].as_str().unwrap().to_owned();
    c.kubectl_ok(&[
        "-n",
        NS,
        "delete",
        "pod",
        &victim,
        "--wait=true",
        "--timeout=90s",
    ]);
    let after_delete = wait_console_pods(c, 2, &image);
    assert!(
        after_delete
            .iter()
            .all(|p| p["metadata"]["name"] != victim.as_str())
    );
    std::thread::sleep(Duration::from_secs(3));
    load.check("deleting a Console Pod");

    let next_tag = format!("{}-next", img.console_tag);
    let next_image = format!("{}:{next_tag}", img.console_repo);
    let out = Command::new("ctr")
        .args([
            "--address",
            c.var("CLUSTER_CONTAINERD"),
            "-n",
            "k8s.io",
            "images",
            "tag",
            "--force",
        ])
        .args([&image, &next_image])
        .output()
        .expect("ctr");
    assert!(
        out.status.success(),
        "ctr images tag: {}",
        text(&out.stderr)
    );
    helm_ok(
        c,
        &[
            "upgrade",
            RELEASE,
            "chart",
            "-n",
            NS,
            "--reuse-values",
            "--set",
            &format!("console.image.tag={next_tag}"),
            "--wait",
            "--timeout",
            "5m",
        ],
    );
    wait_console_pods(c, 2, &next_image);
    std::thread::sleep(Duration::from_secs(3));
    load.check("helm upgrade to a new image tag");

    helm_ok(
        c,
        &[
            "rollback",
            RELEASE,
            "1",
            "-n",
            NS,
            "--wait",
            "--timeout",
            "5m",
        ],
    );
    let pods = wait_console_pods(c, 2, &image);
    std::thread::sleep(Duration::from_secs(3));
    let follows = load.stop("helm rollback");
    eprintln!("follows ended by the Pods they were on: {follows}");
    let history = helm_ok(c, &["history", RELEASE, "-n", NS, "-o", "json"]);
    let revisions: Vec<Value> = serde_json::from_str(&history).unwrap();
    assert_eq!(revisions.len(), 3, "{history}");
    assert_eq!(revisions[2]["status"], "deployed", "{history}");

    // ---- TLS rotation: the Secret replaced, served without a restart
    let restarts = |pods: &[Value]| -> Vec<(String, i64)> {
        pods.iter()
            .map(|p| {
                (
                    p["metadata"]["name"].as_str().unwrap().to_owned(),
                    p["status"]["containerStatuses"][0]["restartCount"]
                        .as_i64()
                        .unwrap_or(-1),
                )
            })
            .collect()
    };
    let before = restarts(&pods);
    pki(
        d,
        &format!(
            "pki_ca \"$D\" ca2 kruntimes-console-rotated-ca; pki_cert \"$D\" ca2 tls2 /CN={HOST} serverAuth,clientAuth DNS:kruntimes-console,DNS:kruntimes-console.{NS},DNS:{HOST},DNS:{HOST}.cluster.local"
        ),
    );
    let b64 = |f: &str| B64.encode(std::fs::read(d.join(f)).unwrap());
    c.kubectl_ok(&[
        "-n", NS, "patch", "secret", "kruntimes-console-tls", "--type=merge", "-p",
        &json!({"data": {"tls.crt": b64("tls2.crt"), "tls.key": b64("tls2.key"), "ca.crt": b64("ca2.crt")}}).to_string(),
    ]);
    c.kubectl_ok(&[
        "patch",
        "apiservice",
        APISERVICE,
        "--type=merge",
        "-p",
        &json!({"spec": {"caBundle": b64("ca2.crt")}}).to_string(),
    ]);
    for p in &pods {
        let ip = p["status"]["podIP"].as_str().unwrap();
        for port in [8443, 9443] {
            eventually(
                &format!("{ip}:{port} serves the rotated certificate"),
                240,
                || {
                    issuer(ip, port)
                        .contains("kruntimes-console-rotated-ca")
                        .then_some(())
                },
            );
        }
    }
    assert_eq!(
        restarts(&console_pods(c)),
        before,
        "no Pod restarted or was replaced"
    );
    eventually("APIService Available with the new caBundle", 120, || {
        apiservice_available(c).then_some(())
    });
    eventually("runs/log through the rotated certificate", 60, || {
        run_log(c, "viewer", &run_a, "?tailLines=1").ok()
    });

    // ---- helm test, and the same check run from the host
    let out = helm_ok(c, &["test", RELEASE, "-n", NS, "--timeout", "3m"]);
    assert!(
        out.contains("TEST SUITE:     kruntimes-console-test\n") && !out.contains("Failed"),
        "{out}"
    );
    let check = |timeout: &str| {
        Command::new(kruntimes_tests::env::debug_dir().join("kruntimes-console"))
            .args([
                "check",
                "--kubeconfig",
                c.var("KUBECONFIG"),
                "--namespace",
                NS,
            ])
            .args(["--timeout", timeout])
            .output()
            .expect("kruntimes-console check")
    };
    let out = check("60s");
    let report = text(&out.stdout);
    assert!(out.status.success(), "check: {report}{}", text(&out.stderr));
    assert!(
        report.contains(&format!("ok: APIService {APISERVICE} is Available")),
        "{report}"
    );
    assert!(
        report.contains("ok: discovery of logs.kruntimes.io/v1alpha1 lists runs/log"),
        "{report}"
    );
    assert!(
        report.contains("ok: 2 ready endpoint(s) of Service kruntimes-console answer /ready"),
        "{report}"
    );

    // ---- helm uninstall removes everything
    helm_ok(
        c,
        &["uninstall", RELEASE, "-n", NS, "--wait", "--timeout", "3m"],
    );
    let out = c.kubectl(&["get", "apiservice", APISERVICE]);
    assert!(!out.status.success(), "the APIService is gone");
    eventually("nothing of the release left", 120, || {
        let left = c.kubectl_ok(&[
            "get",
            "-A",
            "deployments,replicasets,pods,services,serviceaccounts,secrets,configmaps,roles,rolebindings,poddisruptionbudgets,clusterroles,clusterrolebindings",
            "-l",
            &format!("app.kubernetes.io/instance={RELEASE}"),
            "-o",
            "name",
        ]);
        left.trim().is_empty().then_some(()).or_else(|| {
            eprintln!("left: {left}");
            None
        })
    });
    for kind in ["clusterrole", "clusterrolebinding"] {
        let names = c.kubectl_ok(&["get", kind, "-o", "name"]);
        assert!(!names.contains("kruntimes-console"), "{kind}: {names}");
    }
    // The check now fails and says why.
    let out = check("1s");
    assert!(!out.status.success());
    let why = text(&out.stderr);
    assert!(
        why.contains(&format!("reading APIService {APISERVICE}")),
        "{why}"
    );
}

/// `openssl s_client` to `ip:port`: the issuer of the certificate served.
fn issuer(ip: &str, port: u16) -> String {
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "openssl s_client -connect {ip}:{port} -servername {HOST} </dev/null 2>/dev/null | openssl x509 -noout -issuer"
        ))
        .output()
        .expect("openssl");
    text(&out.stdout)
}

/// RFC 3339 `offset` seconds from now.
fn chrono_now(offset: i64) -> String {
    let out = Command::new("date")
        .args([
            "-u",
            "-d",
            &format!("{offset} seconds"),
            "+%Y-%m-%dT%H:%M:%SZ",
        ])
        .output()
        .expect("date");
    text(&out.stdout).trim().to_owned()
}

/// What the browser's core flow needs (console/web/e2e/cluster.spec.ts).
struct BrowserFlow<'a> {
    ca: &'a Path,
    port: u16,
    viewer: &'a str,
    runtime: &'a str,
    run: &'a str,
    messages: &'a [String],
    /// `sh -c` command making the runtimed Pod print one record for `run`; the message is `$1`.
    append: &'a str,
}

/// `npm run e2e:cluster` in console/web: Chromium (CHROMIUM, default
/// Debian's /usr/bin/chromium) opens `https://HOST:port` through the
/// port-forward (the name mapped to 127.0.0.1, the certificate verified
/// against the Console CA), logs in with the viewer token, finds the Run in
/// the Runs of its runtime, reads its log tail, follows it while the Pod
/// prints a new record, and logs out. Skipped only with E2E_SKIP_BROWSER=1.
fn browser_core_flow(f: &BrowserFlow) {
    if std::env::var("E2E_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("E2E_SKIP_BROWSER=1: the browser core flow is NOT run");
        return;
    }
    let web = repo_root().join("console/web");
    let chromium = std::env::var("CHROMIUM").unwrap_or_else(|_| "/usr/bin/chromium".into());
    assert!(
        Path::new(&chromium).exists(),
        "{chromium} is missing: install Debian's chromium (hack/lib/deps.sh deps_apt chromium), set CHROMIUM, or skip the browser flow with E2E_SKIP_BROWSER=1"
    );
    assert!(
        web.join("node_modules/playwright-core").exists(),
        "console/web/node_modules is missing: run `npm ci` in console/web (hack/lib/deps.sh deps_web)"
    );
    let shots = repo_root().join("target/ui-shots");
    let out = Command::new("npm")
        .args(["run", "--silent", "e2e:cluster"])
        .current_dir(&web)
        .env("CHROMIUM", &chromium)
        .env("CONSOLE_URL", format!("https://{HOST}:{}", f.port))
        .env("CONSOLE_CA", f.ca)
        .env("E2E_HOST_RULES", format!("MAP {HOST} 127.0.0.1"))
        .env("E2E_VIEWER_TOKEN", f.viewer)
        .env("E2E_VIEWER_USER", "viewer")
        .env("E2E_NAMESPACE", TEAM)
        .env("E2E_RUNTIME", f.runtime)
        .env("E2E_RUN", f.run)
        .env("E2E_RUN_MESSAGES", json!(f.messages).to_string())
        .env("E2E_APPEND_CMD", f.append)
        .env("E2E_SHOTS", &shots)
        .env_remove("E2E_ONLY")
        .stdin(Stdio::null())
        .output()
        .expect("npm");
    let report = format!("{}{}", text(&out.stdout), text(&out.stderr));
    let leaked = report.contains(f.viewer);
    let report = report.replace(f.viewer, "<viewer token>");
    eprintln!(
        "browser core flow (npm run e2e:cluster), screenshots in {}:\n{report}",
        shots.display()
    );
    assert!(!leaked, "the flow's output holds the viewer token");
    assert!(
        out.status.success(),
        "the browser core flow failed: {}",
        out.status
    );
    let last = text(&out.stdout)
        .lines()
        .last()
        .unwrap_or_default()
        .to_owned();
    let passed: u32 = last
        .strip_suffix(" passed, 0 failed")
        .and_then(|n| n.parse().ok())
        .unwrap_or(0);
    assert!(passed >= 2, "the flow's closing line: {last:?}");
}

/// An `echo` operation over `operations:ws` through the port-forward.
fn operations_echo(ca: &Path, port: u16, token: &str, run: &str, uid: &str) {
    use futures::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let addr = format!("127.0.0.1:{port}");
        let target = WsTarget {
            addr: &addr,
            server_name: HOST,
            ca,
            client_cert: None,
        };
        let path = format!("/v1/namespaces/{TEAM}/runs/{run}/{uid}/operations:ws");
        let auth = format!("Bearer {token}");
        let mut ws = stream::ws_connect(&target, &path, &[("Authorization", &auth)])
            .await
            .expect("operations:ws upgrades");
        ws.send(Message::text(
            json!({"type": "send", "operation": {"command": "echo", "args": ["hello", "cluster"]}})
                .to_string(),
        ))
        .await
        .unwrap();
        let mut kinds = Vec::new();
        let mut output = String::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        loop {
            let m = tokio::time::timeout_at(deadline, ws.next())
                .await
                .expect("events within 20 s")
                .expect("socket open")
                .expect("no socket error");
            let Message::Text(t) = m else { continue };
            let v: Value = serde_json::from_str(&t).unwrap();
            let kind = v["type"].as_str().unwrap_or_default().to_owned();
            if kind == "output" {
                output.push_str(v["data"].as_str().unwrap_or_default());
            }
            kinds.push(kind.clone());
            if kind == "terminal" {
                assert_eq!(v["exitCode"], 0, "{v}");
                break;
            }
        }
        assert_eq!(
            kinds.first().map(String::as_str),
            Some("accepted"),
            "{kinds:?}"
        );
        assert!(output.contains("hello cluster"), "{output:?}");
        let _ = ws.close(None).await;
    });
}

/// A bounded load loop against the Console Service's ClusterIP from the
/// host (as an in-cluster client would reach it, through kube-proxy) and
/// against `runs/log` through kube-apiserver (the APIService path), plus
/// follows that only the Pod holding them may end.
struct Load {
    stop: Arc<AtomicBool>,
    failures: Arc<Mutex<Vec<String>>>,
    counts: Arc<Mutex<[u64; 2]>>,
    workers: Vec<std::thread::JoinHandle<()>>,
    follows: Vec<(Child, mpsc::Receiver<String>)>,
}

impl Load {
    /// Longest the loop runs whatever happens, and the most requests per worker.
    const LIMIT: Duration = Duration::from_secs(900);
    const MAX_REQUESTS: u64 = 20_000;

    fn start(c: &'static Cluster, ca: &Path, ip: &str, run: &str, rt: &str) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let failures = Arc::new(Mutex::new(Vec::new()));
        let counts = Arc::new(Mutex::new([0u64; 2]));
        let mut workers = Vec::new();
        for kind in 0..2 {
            let (stop, failures, counts) = (stop.clone(), failures.clone(), counts.clone());
            let (ca, ip, run, rt) = (ca.to_owned(), ip.to_owned(), run.to_owned(), rt.to_owned());
            let viewer = token(c, "viewer");
            workers.push(std::thread::spawn(move || {
                let t0 = Instant::now();
                let mut n = 0;
                while !stop.load(Ordering::Relaxed)
                    && t0.elapsed() < Self::LIMIT
                    && n < Self::MAX_REQUESTS
                {
                    n += 1;
                    let result = if kind == 0 {
                        let (code, body) = curl(
                            &ca,
                            &ip,
                            443,
                            &["-H", &format!("Authorization: Bearer {viewer}")],
                            &format!("/api/namespaces/{TEAM}/runs?runtime={rt}&limit=5"),
                        );
                        (code == 200)
                            .then_some(())
                            .ok_or(format!("/api: {code} {body}"))
                    } else {
                        run_log(c, "viewer", &run, "?tailLines=5")
                            .map(|_| ())
                            .map_err(|e| format!("runs/log: {e}"))
                    };
                    counts.lock().unwrap()[kind] += 1;
                    if let Err(e) = result {
                        failures
                            .lock()
                            .unwrap()
                            .push(format!("{:?}: {e}", t0.elapsed()));
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }));
        }
        let viewer = token(c, "viewer");
        let follows = (0..4)
            .map(|_| {
                let mut child = Command::new("curl")
                    .args(["-sSN", "--max-time", "900", "--cacert"])
                    .arg(ca)
                    .args(["--resolve", &format!("{HOST}:443:{ip}")])
                    .args(["-H", &format!("Authorization: Bearer {viewer}")])
                    .arg(format!(
                        "https://{HOST}/api/namespaces/{TEAM}/runs/{run}/logs?follow=true&tail=1"
                    ))
                    .stdout(Stdio::piped())
                    .stderr(Stdio::null())
                    .spawn()
                    .unwrap();
                let rx = stream::lines(&mut child);
                rx.recv_timeout(Duration::from_secs(20))
                    .expect("a follow's first record");
                (child, rx)
            })
            .collect();
        Self {
            stop,
            failures,
            counts,
            workers,
            follows,
        }
    }

    /// No request has failed so far.
    fn check(&self, during: &str) {
        let f = self.failures.lock().unwrap();
        let counts = *self.counts.lock().unwrap();
        eprintln!(
            "load during {during}: /api {} and runs/log {} requests",
            counts[0], counts[1]
        );
        assert!(f.is_empty(), "failed requests during {during}: {f:#?}");
        assert!(
            counts[0] > 10 && counts[1] > 10,
            "the load loop ran: {counts:?}"
        );
    }

    /// Stops the loop, checks it, and checks that every follow that ended
    /// ended cleanly with the final Status of a stopping Pod; returns how
    /// many ended.
    fn stop(mut self, during: &str) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        for w in self.workers.drain(..) {
            w.join().unwrap();
        }
        self.check(during);
        let mut ended = 0;
        for (mut child, rx) in self.follows.drain(..) {
            match child.try_wait().unwrap() {
                Some(status) => {
                    ended += 1;
                    let lines: Vec<String> = rx.try_iter().collect();
                    let last = lines.last().cloned().unwrap_or_default();
                    let v: Value = serde_json::from_str(&last).unwrap_or_default();
                    assert!(
                        status.success(),
                        "an ended follow exited cleanly: {status}, {last}"
                    );
                    assert_eq!(v["kind"], "Status", "an ended follow's last line: {last:?}");
                    assert!(
                        v["message"]
                            .as_str()
                            .unwrap_or_default()
                            .contains("shutting down"),
                        "{last}"
                    );
                }
                None => {
                    let _ = child.kill();
                    let _ = child.wait();
                }
            }
        }
        ended
    }
}
