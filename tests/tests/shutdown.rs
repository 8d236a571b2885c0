//! Graceful shutdown of a Console process on SIGTERM, against the real
//! control plane: readiness drops first while requests are still served on
//! new connections, then open follows end with a final `Status` line (on
//! the aggregated listener and on `/api`), and the process exits by itself
//! within the shutdown delay and timeout.

use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kruntimes_tests::env::{ConsoleProcess, Fixtures, LoggedRun, env, runtimed_line};
use kruntimes_tests::stream;
use serde_json::Value;

const NS: &str = "team-a";

/// A curl follow streaming lines into a channel.
fn follow(url: &str, token: &str, ca: &std::path::Path) -> (Child, mpsc::Receiver<String>) {
    let mut child = Command::new("curl")
        .args(["-sSN", "--cacert"])
        .arg(ca)
        .args(["-H", &format!("Authorization: Bearer {token}"), url])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("curl");
    let rx = stream::lines(&mut child);
    (child, rx)
}

fn ready_code(admin_port: u16) -> u16 {
    env()
        .curl(&format!("http://127.0.0.1:{admin_port}/ready"), &[])
        .0
}

fn sigterm(pid: u32) {
    let ok = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok, "SIGTERM to {pid}");
}

/// Waits for the line the follow gets first (a record), failing after 20 s.
fn first_line(rx: &mpsc::Receiver<String>, what: &str) -> Value {
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .unwrap_or_else(|_| panic!("{what}: no record within 20 s"));
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("{what}: not JSON ({e}): {line}"))
}

#[tokio::test]
async fn sigterm_drops_readiness_then_ends_follows_with_a_status_and_exits() {
    let e = env();
    let fx = Fixtures::new(NS).await;
    let LoggedRun { run, uid, pod } = fx.logged_run("run", "first").await;

    let dir = tempfile::tempdir().unwrap();
    let delay = Duration::from_secs(3);
    let mut console = ConsoleProcess::start(
        dir.path(),
        &[
            "--shutdown-delay=3s".into(),
            "--shutdown-timeout=10s".into(),
        ],
    );
    let pid = console.pid();
    let viewer = e.token("viewer");
    let ca = e.pki("console-ca.crt");
    let path =
        format!("/apis/logs.kruntimes.io/v1alpha1/namespaces/{NS}/runs/{run}/log?follow=true");
    // Straight to this process's aggregated listener, and through its /api
    // (which forwards to the aggregated API through kube-apiserver).
    let (mut direct, direct_rx) = follow(
        &format!("https://127.0.0.1:{}{path}", console.api_port),
        viewer,
        &ca,
    );
    let (mut api, api_rx) = follow(
        &format!(
            "https://127.0.0.1:{}/api/namespaces/{NS}/runs/{run}/logs?follow=true",
            console.console_port
        ),
        viewer,
        &ca,
    );
    for (rx, what) in [(&direct_rx, "aggregated follow"), (&api_rx, "/api follow")] {
        assert_eq!(first_line(rx, what)["message"], "first", "{what}");
    }
    assert_eq!(ready_code(console.admin_port), 200);

    let stopped_at = Instant::now();
    sigterm(pid);
    // Readiness drops at once...
    let mut code = 0;
    for _ in 0..20 {
        code = ready_code(console.admin_port);
        if code == 503 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(code, 503, "/ready after SIGTERM");
    // ...while new connections are still served and follows still deliver.
    let (code, body) = e.curl(
        &format!(
            "https://127.0.0.1:{}/api/namespaces/{NS}/runs/{run}",
            console.console_port
        ),
        &[
            "--cacert",
            ca.to_str().unwrap(),
            "-H",
            &format!("Authorization: Bearer {viewer}"),
        ],
    );
    assert_eq!(code, 200, "a request during the shutdown delay: {body}");
    assert!(
        stopped_at.elapsed() < delay,
        "the checks during the delay took too long to prove anything"
    );
    fx.append_log(
        &pod,
        &[runtimed_line(
            &uid,
            &run,
            NS,
            &pod,
            "stdout",
            "during the delay",
        )],
    );
    for (rx, what) in [(&direct_rx, "aggregated follow"), (&api_rx, "/api follow")] {
        assert_eq!(
            first_line(rx, what)["message"],
            "during the delay",
            "{what} during the delay"
        );
    }

    // After the delay each follow ends with a Status saying why.
    for (rx, what) in [(&direct_rx, "aggregated follow"), (&api_rx, "/api follow")] {
        let last = first_line(rx, what);
        assert!(
            stopped_at.elapsed() >= delay,
            "{what} ended before the shutdown delay was over: {last}"
        );
        assert_eq!(last["kind"], "Status", "{what}: {last}");
        assert_eq!(last["code"], 503, "{what}: {last}");
        assert!(
            last["message"].as_str().unwrap().contains("shutting down"),
            "{what}: {last}"
        );
        assert!(
            rx.recv_timeout(Duration::from_secs(5)).is_err(),
            "{what}: nothing after the final Status"
        );
    }
    for (child, what) in [(&mut direct, "aggregated"), (&mut api, "/api")] {
        let status = child.wait().expect("curl");
        assert!(
            status.success(),
            "the {what} follow ended cleanly: {status}"
        );
    }

    // The process exits by itself, well before the timeout: nothing was left open.
    let status = console.wait_exit(Duration::from_secs(10));
    assert_eq!(status.and_then(|s| s.code()), Some(0), "exit status");
    let log = std::fs::read_to_string(&console.log).unwrap();
    assert!(log.contains("\"shut down\""), "{log}");
}
