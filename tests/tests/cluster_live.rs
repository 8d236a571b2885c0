//! Live output on a real node: the Console installed by the chart reads a
//! running Run's output from the runtimed stand-in's status endpoint (engine
//! mode: records are written only when the Run ends) over the Pod network,
//! a `follow=true` reader through kube-apiserver gets each line while the Run
//! runs, the hand-over to the written records has no gap and no duplicate, a
//! Timeout Run says why it has no records, and a real restart of the
//! `runtimed` container keeps a finished Run's log (the previous container's
//! log, as `kubectl logs --previous` shows it).

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kruntimes_tests::cluster::{CONSOLE_NS, Cluster, RELEASE, cluster, eventually, pod_ready};
use kruntimes_tests::env::unique;
use serde_json::{Value, json};

const TEAM: &str = "team-a";
const APISERVICE: &str = "v1alpha1.logs.kruntimes.io";

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// `kubectl` as the viewer (a token only).
fn viewer(c: &Cluster) -> Command {
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
        .arg(c.var("CLUSTER_TOKEN_VIEWER"));
    cmd
}

fn log_path(run: &str, query: &str) -> String {
    kruntimes_tests::env::log_path(TEAM, run, query)
}

fn run_log(c: &Cluster, run: &str, query: &str) -> Value {
    let out = viewer(c)
        .args(["get", "--raw", &log_path(run, query)])
        .output()
        .expect("kubectl");
    assert!(out.status.success(), "runs/log: {}", text(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("a RunLog")
}

fn messages(log: &Value) -> Vec<String> {
    log["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn reasons(log: &Value) -> Vec<String> {
    log["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .map(|n| n["reason"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// POSTs to the stand-in's control port at the Pod's address.
fn control(ip: &str, path: &str, body: Value) {
    let out = Command::new("curl")
        .args([
            "-sf",
            "--max-time",
            "10",
            "-X",
            "POST",
            "-H",
            "content-type: application/json",
        ])
        .args(["--data", &body.to_string()])
        .arg(format!("http://{ip}:8080{path}"))
        .output()
        .expect("curl");
    assert!(
        out.status.success(),
        "POST {path}: {}{}",
        text(&out.stdout),
        text(&out.stderr)
    );
}

fn patch_status(c: &Cluster, run: &str, status: Value) {
    c.patch_run_status(TEAM, run, status);
}

fn now(offset: i64) -> String {
    let t = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(offset);
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

struct Cleanup<'a> {
    c: &'a Cluster,
    label: String,
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
        for (api_version, kind) in [("v1", "Pod"), ("kruntimes.io/v1alpha1", "Run")] {
            let _ = self
                .c
                .delete_all(api_version, kind, Some(TEAM), &self.label);
        }
    }
}

/// A follow as the viewer, its NDJSON lines with the time each arrived.
fn follow(c: &Cluster, run: &str) -> (std::process::Child, mpsc::Receiver<(Instant, Value)>) {
    let mut child = viewer(c)
        .args(["get", "--raw", &log_path(run, "?follow=true")])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("kubectl follow");
    let out = child.stdout.take().expect("stdout");
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            let v: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
            if tx.send((Instant::now(), v)).is_err() {
                break;
            }
        }
    });
    (child, rx)
}

fn next(rx: &mpsc::Receiver<(Instant, Value)>) -> (Instant, Value) {
    rx.recv_timeout(Duration::from_secs(30))
        .expect("a follow line within 30 s")
}

#[test]
fn live_output_reaches_a_follower_on_a_real_node_and_hands_over_to_the_records() {
    let Some(c) =
        cluster("live_output_reaches_a_follower_on_a_real_node_and_hands_over_to_the_records")
    else {
        return;
    };
    let rt = unique("live");
    let label = format!("krt-test={rt}");
    let _cleanup = Cleanup {
        c,
        label: label.clone(),
    };
    let (repo, tag) = c.console_image();
    let images = kruntimes_tests::env::parse_exports(
        &std::fs::read_to_string(c.state().join("images.env")).expect("images.env"),
    );
    let runtimed_image = images["IMAGE_RUNTIMED"].clone();

    // ---- the Console, installed by the chart (one replica)
    c.helm_ok(&[
        "install",
        RELEASE,
        "chart",
        "-n",
        CONSOLE_NS,
        "--create-namespace",
        "--set",
        "console.replicas=1",
        "--set",
        &format!("console.image.repository={repo}"),
        "--set",
        &format!("console.image.tag={tag}"),
        "--set",
        "console.image.pullPolicy=Never",
        // The NetworkPolicy that admits the Console to the status port
        // (the bridge plugin does not enforce it; it must still apply).
        "--set",
        &format!("console.liveOutput.networkPolicy.namespaces={{{TEAM}}}"),
        "--wait",
        "--timeout",
        "5m",
    ]);
    c.wait_console_pods(1);
    eventually("APIService Available", 120, || {
        c.apiservice_available(APISERVICE).then_some(())
    });
    let np = c.get(
        &c.api::<NetworkPolicy>(TEAM),
        "kruntimes-console-live-output",
    );
    assert_eq!(np["spec"]["ingress"][0]["ports"][0]["port"], 9093);

    // ---- a Runtime Pod laid out as the engine's: the stand-in as runtimed,
    // in engine mode, its status endpoint on 9093 (served, not declared).
    let pod = format!("{rt}-0");
    c.apply(&format!(
        r#"
apiVersion: v1
kind: Pod
metadata:
  name: {pod}
  namespace: {TEAM}
  labels: {{krt-test: {rt}, runtime: {rt}, app: kruntimes-{rt}}}
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: runtimed
    image: {runtimed_image}
    imagePullPolicy: Never
    env:
    - {{name: RUNTIMED_MODE, value: engine}}
    - {{name: RUNTIMED_COUNT, value: "0"}}
    - {{name: RUNTIME_NAME, value: {rt}}}
    - {{name: POD_NAME, valueFrom: {{fieldRef: {{fieldPath: metadata.name}}}}}}
    - {{name: POD_NAMESPACE, valueFrom: {{fieldRef: {{fieldPath: metadata.namespace}}}}}}
    readinessProbe: {{httpGet: {{path: /healthz, port: 8080}}, periodSeconds: 1}}
"#
    ));
    let p = eventually("the runtimed Pod ready", 120, || {
        let p = c.get(&c.api::<Pod>(TEAM), &pod);
        pod_ready(&p).then_some(p)
    });
    let pod_uid = p["metadata"]["uid"].as_str().unwrap().to_owned();
    let ip = p["status"]["podIP"].as_str().unwrap().to_owned();
    assert!(ip.starts_with("198.18.0."), "a Pod network address: {ip}");

    let new_run = |suffix: &str| -> (String, String) {
        let name = format!("{rt}-{suffix}");
        c.apply(
            &json!({
                "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                "metadata": {"name": name, "namespace": TEAM, "labels": {"krt-test": rt}},
                "spec": {"runtime": rt, "mode": {"task": {"entrypoint": "main.sh"}}},
            })
            .to_string(),
        );
        let uid = c
            .get_kind("kruntimes.io/v1alpha1", "Run", TEAM, &name)
            .and_then(|r| r["metadata"]["uid"].as_str().map(str::to_owned))
            .expect("the Run's UID");
        patch_status(
            c,
            &name,
            json!({"phase": "Running", "assignedPod": pod, "assignedPodUID": pod_uid, "startTime": now(-2)}),
        );
        control(&ip, &format!("/runs/{uid}/start"), json!({"name": name}));
        (name, uid)
    };
    let print = |uid: &str, stream: &str, data: &str| {
        control(
            &ip,
            &format!("/runs/{uid}/print"),
            json!({"stream": stream, "data": data}),
        );
    };

    // ---- a follow gets each line while the Run runs
    let (run, uid) = new_run("a");
    print(&uid, "stdout", "first\n");
    let (mut child, rx) = follow(c, &run);
    let (_, r) = next(&rx);
    assert_eq!(r["message"], "first", "{r}");
    assert_eq!(r["source"], "status", "live output: {r}");
    let mut latencies = Vec::new();
    for i in 1..=5 {
        let printed = Instant::now();
        print(
            &uid,
            if i % 2 == 0 { "stderr" } else { "stdout" },
            &format!("line {i}\n"),
        );
        let (at, r) = next(&rx);
        assert_eq!(r["message"], format!("line {i}"), "{r}");
        assert_eq!(r["source"], "status");
        latencies.push(at.duration_since(printed));
    }
    let worst = latencies.iter().max().copied().unwrap_or_default();
    eprintln!("live lines on the node: print to follower {latencies:?} (worst {worst:?})");
    // Nothing was written to the container log yet: the engine writes at the end.
    let logs = c.logs_ok(TEAM, &pod, Some("runtimed"), None, false);
    assert!(
        !logs.contains(&uid),
        "no record before the Run ends: {logs}"
    );

    // ---- the Run ends: a last line still being printed arrives from the records, once
    print(&uid, "stdout", "the last words");
    patch_status(
        c,
        &run,
        json!({"phase": "Succeeded", "completionTime": now(0), "attempt": 1}),
    );
    control(
        &ip,
        &format!("/runs/{uid}/finish"),
        json!({"phase": "Succeeded"}),
    );
    let (_, r) = next(&rx);
    assert_eq!(r["message"], "the last words", "{r}");
    assert!(r["source"].is_null(), "a written record: {r}");
    let (_, end) = next(&rx);
    assert_eq!(end["kind"], "Status", "nothing else follows: {end}");
    assert_eq!(end["reason"], "RunFinished", "{end}");
    let _ = child.wait();
    let want = [
        "first",
        "line 1",
        "line 3",
        "line 5",
        "the last words",
        "line 2",
        "line 4",
    ];
    let log = run_log(c, &run, "");
    assert_eq!(
        messages(&log),
        want,
        "stdout then stderr, as runtimed wrote them"
    );
    assert!(reasons(&log).contains(&"WrittenAtEnd".to_owned()), "{log}");

    // ---- a Timeout Run keeps only what was read live, and says why
    let (run_t, uid_t) = new_run("t");
    print(&uid_t, "stdout", "slow work\n");
    let live = run_log(c, &run_t, "");
    assert_eq!(messages(&live), ["slow work"]);
    assert_eq!(reasons(&live), ["LiveOutput"]);
    patch_status(
        c,
        &run_t,
        json!({"phase": "Timeout", "completionTime": now(0), "attempt": 1}),
    );
    control(
        &ip,
        &format!("/runs/{uid_t}/finish"),
        json!({"phase": "Timeout"}),
    );
    let done = run_log(c, &run_t, "");
    assert!(messages(&done).is_empty());
    assert_eq!(reasons(&done), ["NoneWrittenForPhase"], "{done}");

    // ---- a real restart of the runtimed container keeps the finished Run's log
    let container = p["status"]["containerStatuses"][0]["containerID"]
        .as_str()
        .unwrap()
        .trim_start_matches("containerd://")
        .to_owned();
    let kill = Command::new("ctr")
        .args([
            "--address",
            c.var("CLUSTER_CONTAINERD"),
            "-n",
            "k8s.io",
            "task",
            "kill",
            "-s",
            "SIGKILL",
            &container,
        ])
        .output()
        .expect("ctr");
    assert!(
        kill.status.success(),
        "ctr task kill: {}",
        text(&kill.stderr)
    );
    eventually("the runtimed container restarted", 120, || {
        let p = c.get(&c.api::<Pod>(TEAM), &pod);
        let s = &p["status"]["containerStatuses"][0];
        (s["restartCount"].as_i64() >= Some(1) && s["state"]["running"].is_object()).then_some(())
    });
    let previous = c.logs_ok(TEAM, &pod, Some("runtimed"), None, true);
    assert!(
        previous.contains(&uid),
        "the previous container's log holds the records"
    );
    let after = run_log(c, &run, "");
    assert_eq!(messages(&after), want, "{after}");
    assert!(
        reasons(&after).contains(&"PreviousContainer".to_owned()),
        "{after}"
    );
}
