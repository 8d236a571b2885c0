//! The simulated runtimed on hack/testenv, through the real kube-apiserver: a Runtime Pod with
//! a loopback Pod IP whose runtimed serves its status endpoint there, writes a Run's records
//! only at its end (engine mode), and whose container restart leaves them in the previous
//! container's log (`kubectl logs --previous`).

use std::net::SocketAddr;

use k8s_openapi::api::core::v1::Pod;
use kruntimes_core::runtimed::{DEFAULT_STATUS_PORT, ExecutionState};
use kruntimes_tests::env::{Fixtures, env, unique};
use kruntimes_tests::sim::cri::Stream;
use kruntimes_tests::sim::runtimed::{Mode, Phase};
use kruntimes_tests::sim::runtimed_status::call_status;
use serde_json::Value;

const NS: &str = "team-a";

/// Which lines of a container log [`pod_log`] reads.
#[derive(Default)]
struct Which {
    /// The previous (terminated) container's log, `kubectl logs --previous`.
    previous: bool,
    /// Only the last lines, `--tail`.
    tail: Option<i64>,
}

/// The Pod's runtimed container log as admin, through kube-apiserver's
/// `pods/log` (what `kubectl logs` reads): the text, or the API's refusal
/// as its reason and message.
async fn pod_log(pod: &str, which: Which) -> Result<String, String> {
    let pods: kube::Api<Pod> = kube::Api::namespaced(env().admin().await, NS);
    let params = kube::api::LogParams {
        container: Some("runtimed".to_owned()),
        previous: which.previous,
        tail_lines: which.tail,
        ..Default::default()
    };
    pods.logs(pod, &params)
        .await
        .map_err(|e| kruntimes_tests::objects::describe(&e))
}

/// The messages of the JSON records of `uid` in a log's text.
fn record_messages(text: &str, uid: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v["run_uid"] == uid)
        .map(|v| {
            (
                v["stream"].as_str().unwrap_or_default().to_owned(),
                v["message"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(s, m)| ((*s).to_owned(), (*m).to_owned()))
        .collect()
}

async fn read_pod(fx: &Fixtures, name: &str) -> Value {
    let pods: kube::Api<Pod> = kube::Api::namespaced(fx.client.clone(), NS);
    serde_json::to_value(pods.get(name).await.expect("reading the Pod")).expect("pod json")
}

#[tokio::test]
async fn a_runtime_pod_has_a_loopback_ip_where_its_runtimed_serves_status() {
    let fx = Fixtures::new(NS).await;
    let sim = fx.simulated_runtime_pod("standin-rt", Mode::Engine).await;
    let pod = read_pod(&fx, &sim.pod.name).await;

    // kube-apiserver took the loopback address as the Pod's IP.
    let ip = sim.pod.ip.to_string();
    assert_eq!(pod["status"]["podIP"], ip.as_str(), "{pod}");
    assert_eq!(pod["status"]["podIPs"][0]["ip"], ip.as_str());
    assert_eq!(pod["metadata"]["labels"]["runtime"], "standin-rt");
    assert_eq!(pod["metadata"]["labels"]["app"], "kruntimes-standin-rt");
    let names: Vec<&str> = pod["spec"]["containers"]
        .as_array()
        .expect("containers")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    assert_eq!(names, ["runtime", "runtimed"]);
    let runtimed_ports = pod["spec"]["containers"][1]["ports"].to_string();
    assert!(
        !runtimed_ports.contains("9093"),
        "9093 is not declared: {runtimed_ports}"
    );
    let status = &pod["status"]["containerStatuses"]
        .as_array()
        .expect("statuses")
        .iter()
        .find(|s| s["name"] == "runtimed")
        .cloned()
        .expect("runtimed status");
    assert_eq!(status["restartCount"], 0);
    assert!(
        status["state"]["running"]["startedAt"].is_string(),
        "{status}"
    );

    // The status endpoint, reached at the address the API gives.
    let addr = SocketAddr::new(ip.parse().expect("ip"), DEFAULT_STATUS_PORT);
    assert_eq!(addr, sim.status_addr);
    let run = unique("run");
    let uid = format!("uid-{run}");
    sim.runtimed.start(&uid, &run).unwrap();
    sim.runtimed
        .print(&uid, Stream::Stdout, "compiling\nlinking")
        .unwrap();
    sim.runtimed
        .print(&uid, Stream::Stderr, "warning: x\n")
        .unwrap();
    let answer = call_status(addr, &uid).await.expect("Status call");
    assert_eq!(answer.grpc_status, 0, "{answer:?}");
    let resp = answer.response.expect("a StatusResponse");
    assert_eq!(resp.state, ExecutionState::Running as i32);
    assert_eq!(
        (resp.stdout.as_str(), resp.stderr.as_str()),
        ("compiling\nlinking", "warning: x\n")
    );
    assert_eq!(sim.runtimed.status_requests(&uid), 1);

    // Engine mode: nothing in the container log while the Run runs, only runtimed's text.
    let log = pod_log(&sim.pod.name, Which::default()).await.unwrap();
    assert!(record_messages(&log, &uid).is_empty(), "{log}");
    assert!(log.contains(&format!("Claimed run {run}")), "{log}");

    sim.runtimed.finish(&uid, Phase::Failed).unwrap();
    let log = pod_log(&sim.pod.name, Which::default()).await.unwrap();
    assert_eq!(
        record_messages(&log, &uid),
        pairs(&[
            ("stdout", "compiling"),
            ("stdout", "linking"),
            ("stderr", "warning: x")
        ])
    );
    let answer = call_status(addr, &uid).await.expect("Status call");
    assert_eq!(answer.grpc_status, 5, "forgotten: {answer:?}");
    assert_eq!(answer.grpc_message, format!("request {uid} not found"));
    fx.delete_pod(&sim.pod.name).await;
}

#[tokio::test]
async fn a_runtimed_restart_leaves_the_records_in_the_previous_log() {
    let fx = Fixtures::new(NS).await;
    let sim = fx.simulated_runtime_pod("standin-rt", Mode::Engine).await;
    let pod = &sim.pod.name;

    // No previous container yet: kube-apiserver passes on the kubelet's 400.
    let previous = Which {
        previous: true,
        ..Default::default()
    };
    let err = pod_log(pod, previous).await.unwrap_err();
    assert!(
        err.contains(&format!(
            r#"previous terminated container "runtimed" in pod "{pod}" not found"#
        )),
        "{err}"
    );
    assert!(err.contains("BadRequest"), "{err}");

    let run = unique("run");
    let uid = format!("uid-{run}");
    sim.runtimed.start(&uid, &run).unwrap();
    sim.runtimed.print(&uid, Stream::Stdout, "done\n").unwrap();
    sim.runtimed.finish(&uid, Phase::Succeeded).unwrap();
    let before = pod_log(pod, Which::default()).await.unwrap();
    assert_eq!(record_messages(&before, &uid), pairs(&[("stdout", "done")]));

    fx.restart_simulated_runtimed(&sim).await;
    let status = read_pod(&fx, pod).await["status"]["containerStatuses"]
        .as_array()
        .expect("statuses")
        .iter()
        .find(|s| s["name"] == "runtimed")
        .cloned()
        .expect("runtimed status");
    assert_eq!(status["restartCount"], 1, "{status}");
    let terminated = &status["lastState"]["terminated"];
    assert!(terminated["finishedAt"].is_string(), "{status}");
    assert!(
        terminated["containerID"]
            .as_str()
            .is_some_and(|id| id.starts_with("containerd://")),
        "{status}"
    );
    assert_ne!(terminated["containerID"], status["containerID"]);
    assert!(
        status["state"]["running"]["startedAt"].is_string(),
        "{status}"
    );

    let previous = pod_log(
        pod,
        Which {
            previous: true,
            ..Default::default()
        },
    )
    .await
    .unwrap();
    assert_eq!(
        previous, before,
        "the previous container's log is the old one"
    );
    let current = pod_log(pod, Which::default()).await.unwrap();
    assert!(record_messages(&current, &uid).is_empty(), "{current}");
    assert!(current.contains("runtimed controller started"), "{current}");
    // The same options apply to the previous log.
    let tail = pod_log(
        pod,
        Which {
            previous: true,
            tail: Some(1),
        },
    )
    .await
    .unwrap();
    assert_eq!(tail.lines().count(), 1, "{tail}");
    assert_eq!(tail.lines().next(), before.lines().last());
    fx.delete_pod(pod).await;
}

/// The stand-in binary, as a Runtime Pod runs it: control port and status endpoint on a
/// loopback address of its own, records on stdout.
struct Standin {
    child: std::process::Child,
    control: String,
    status: SocketAddr,
    stdout: std::sync::Arc<std::sync::Mutex<String>>,
}

impl Drop for Standin {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Standin {
    fn start(mode: &str) -> Self {
        Self::start_with(mode, &[])
    }

    fn start_with(mode: &str, extra: &[&str]) -> Self {
        use std::io::BufRead;
        let (ip, control_port) = loop {
            let ip = kruntimes_tests::runtime_pod::free_loopback_ip(DEFAULT_STATUS_PORT);
            if std::net::TcpListener::bind((ip, 8080)).is_ok() {
                break (ip, 8080);
            }
        };
        let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_runtimed-standin"))
            .args([
                "--count",
                "0",
                "--mode",
                mode,
                "--namespace",
                NS,
                "--pod",
                "bash-7",
            ])
            .args(["--runtime", "bash"])
            .arg(format!("--control-listen={ip}:{control_port}"))
            .arg(format!("--status-listen={ip}:{DEFAULT_STATUS_PORT}"))
            .args(extra)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("starting runtimed-standin");
        let stdout = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let pipe = child.stdout.take().expect("stdout");
        let sink = std::sync::Arc::clone(&stdout);
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                let mut all = sink.lock().expect("stdout");
                all.push_str(&line);
                all.push('\n');
            }
        });
        let s = Self {
            child,
            control: format!("http://{ip}:{control_port}"),
            status: SocketAddr::new(ip.into(), DEFAULT_STATUS_PORT),
            stdout,
        };
        for _ in 0..100 {
            if env_free_curl(&format!("{}/healthz", s.control), None).0 == 200 {
                return s;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("runtimed-standin did not start");
    }

    fn post(&self, path: &str, body: Option<&str>) -> (u16, String) {
        env_free_curl(&format!("{}{path}", self.control), body)
    }

    fn stdout(&self) -> String {
        self.stdout.lock().expect("stdout").clone()
    }
}

/// curl without the test environment: (status, body); a POST when `body` is given.
fn env_free_curl(url: &str, body: Option<&str>) -> (u16, String) {
    let mut cmd = std::process::Command::new("curl");
    cmd.args(["-s", "-o", "-", "-w", "\n%{http_code}", "--max-time", "10"]);
    if let Some(body) = body {
        cmd.args([
            "-X",
            "POST",
            "-H",
            "content-type: application/json",
            "-d",
            body,
        ]);
    }
    let out = cmd.arg(url).output().expect("running curl");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let (body, code) = text.rsplit_once('\n').unwrap_or(("", "0"));
    (code.trim().parse().unwrap_or(0), body.to_owned())
}

#[tokio::test]
async fn the_standin_binary_writes_records_at_the_end_in_engine_mode() {
    let s = Standin::start_with("engine", &["--output-limit-bytes=16"]);
    assert_eq!(
        s.post("/runs/u-1/start", Some(r#"{"name":"run-1"}"#)).0,
        200
    );
    assert_eq!(
        s.post("/runs/u-1/start", Some(r#"{"name":"run-1"}"#)).0,
        409
    );
    let print = |stream: &str, data: &str| {
        s.post(
            "/runs/u-1/print",
            Some(&serde_json::json!({"stream": stream, "data": data}).to_string()),
        )
    };
    assert_eq!(print("stdout", "first attempt\n").0, 200);
    assert_eq!(s.post("/runs/u-1/retry", Some("{}")).0, 200);
    assert_eq!(print("stdout", "one\ntwo\n").0, 200);
    assert_eq!(print("stderr", "oops\n").0, 200);
    let (code, body) = print("stdin", "x");
    assert_eq!(code, 400, "{body}");
    // Over the 16-byte limit: kept, then the marker.
    assert_eq!(print("stdout", "three and more\n").0, 200);

    let answer = call_status(s.status, "u-1").await.expect("Status call");
    let resp = answer.response.expect("running");
    assert_eq!(resp.stdout, "one\ntwo\nthree an\n[output truncated]\n");
    assert_eq!(resp.stderr, "oops\n");
    assert!(
        s.stdout().is_empty(),
        "nothing written while it runs: {}",
        s.stdout()
    );

    let (code, body) = s.post("/runs/u-1/finish", Some(r#"{"phase":"Done"}"#));
    assert_eq!(code, 400, "{body}");
    assert_eq!(
        s.post("/runs/u-1/finish", Some(r#"{"phase":"Failed"}"#)).0,
        200
    );
    let mut written = String::new();
    for _ in 0..100 {
        written = s.stdout();
        if written.lines().count() >= 5 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        record_messages(&written, "u-1"),
        pairs(&[
            ("stdout", "one"),
            ("stdout", "two"),
            ("stdout", "three an"),
            ("stdout", "[output truncated]"),
            ("stderr", "oops"),
        ])
    );
    let first: Value = serde_json::from_str(written.lines().next().unwrap_or("")).expect("JSON");
    // runtimed's keys, in its order.
    let line = written.lines().next().unwrap_or("");
    let at: Vec<usize> = [
        "run_uid",
        "run_name",
        "namespace",
        "runtime",
        "pod",
        "stream",
        "message",
    ]
    .iter()
    .map(|k| line.find(&format!("\"{k}\":")).unwrap_or(usize::MAX))
    .collect();
    assert!(
        at.windows(2).all(|w| w[0] < w[1]) && at[6] != usize::MAX,
        "{line}"
    );
    assert_eq!(first.as_object().map(|o| o.len()), Some(7), "{line}");
    assert_eq!(first["pod"], "bash-7");
    assert_eq!(call_status(s.status, "u-1").await.unwrap().grpc_status, 5);
    assert_eq!(
        s.post("/runs/u-1/print", Some(r#"{"stream":"stdout","data":"x"}"#))
            .0,
        404
    );
    let (_, stats) = env_free_curl(&format!("{}/stats", s.control), None);
    let stats: Value = serde_json::from_str(&stats).expect("stats JSON");
    assert_eq!(stats["mode"], "engine");
    assert_eq!(stats["status"]["by_id"]["u-1"], 2, "{stats}");
}

#[tokio::test]
async fn the_standin_binary_writes_each_line_as_printed_in_live_mode() {
    let s = Standin::start("live");
    assert_eq!(
        s.post("/runs/u-2/start", Some(r#"{"name":"run-2"}"#)).0,
        200
    );
    let body = serde_json::json!({"stream": "stdout", "data": "now\npart"}).to_string();
    assert_eq!(s.post("/runs/u-2/print", Some(&body)).0, 200);
    let mut written = String::new();
    for _ in 0..100 {
        written = s.stdout();
        if !written.is_empty() {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        record_messages(&written, "u-2"),
        pairs(&[("stdout", "now")])
    );
    assert_eq!(
        s.post("/runs/u-2/finish", Some(r#"{"phase":"Cancelled"}"#))
            .0,
        200
    );
    for _ in 0..100 {
        written = s.stdout();
        if written.lines().count() >= 2 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        record_messages(&written, "u-2"),
        pairs(&[("stdout", "now"), ("stdout", "part")])
    );
}

#[tokio::test]
async fn the_standins_scripted_executions_end_in_their_phases() {
    let s = Standin::start_with(
        "engine",
        &[
            "--executions=ok=u-ok:Succeeded,late=u-late:Timeout,on=u-on",
            "--execution-lines=3",
            "--rate=200",
        ],
    );
    let mut written = String::new();
    for _ in 0..100 {
        written = s.stdout();
        if written.lines().count() >= 3 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(
        record_messages(&written, "u-ok"),
        pairs(&[
            ("stdout", "step 1 of ok"),
            ("stdout", "step 2 of ok"),
            ("stderr", "step 3 of ok"),
        ])
    );
    assert!(record_messages(&written, "u-late").is_empty(), "{written}");
    assert!(record_messages(&written, "u-on").is_empty(), "{written}");
    // The one without a phase keeps running, its output on the status endpoint.
    let resp = call_status(s.status, "u-on")
        .await
        .expect("Status call")
        .response
        .expect("running");
    assert_eq!(resp.stdout, "step 1 of on\nstep 2 of on\n");
    assert_eq!(resp.stderr, "step 3 of on\n");
    assert_eq!(
        call_status(s.status, "u-late").await.unwrap().grpc_status,
        5
    );
}
