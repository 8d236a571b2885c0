//! kube-apiserver restarts under the Console: requests answer 503 while it is
//! away, and the watch-backed /v1 Run cache resumes afterwards. This binary
//! stops the shared control plane's kube-apiserver, so it holds one test
//! (test binaries run one after another).

use std::process::Command;
use std::time::Duration;

use kruntimes_tests::env::{Fixtures, env, unique};
use serde_json::json;

fn console_get(path: &str, user: &str) -> u16 {
    let h = format!("Authorization: Bearer {}", env().token(user));
    env()
        .curl(
            &format!("{}{path}", env().var("CONSOLE_URL")),
            &["--cacert", env().var("CONSOLE_CA"), "-H", &h],
        )
        .0
}

fn invoke(name: &str, uid: &str) -> u16 {
    let h = format!("Authorization: Bearer {}", env().token("operator"));
    env()
        .curl(
            &format!(
                "{}/v1/namespaces/team-a/runs/{name}/{uid}/invoke",
                env().var("CONSOLE_URL")
            ),
            &[
                "--cacert",
                env().var("CONSOLE_CA"),
                "-X",
                "POST",
                "-d",
                "{}",
                "-H",
                &h,
            ],
        )
        .0
}

async fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    for _ in 0..300 {
        if f() {
            return;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    panic!("timed out waiting for {what}");
}

#[tokio::test]
async fn requests_503_while_kube_apiserver_is_away_and_watches_resume() {
    let e = env();
    let state = e.state();
    let pid_file = state.join("run/kube-apiserver.pid");
    let pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_owned();
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap();
    let argv: Vec<String> = cmdline
        .split(|b| *b == 0)
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();

    let _ = Command::new("kill").args(["-KILL", &pid]).status();
    wait_for("kube-apiserver to stop", || {
        !std::path::Path::new(&format!("/proc/{pid}")).exists()
    })
    .await;
    // A token the Console has not seen needs a TokenReview: 503, not 401.
    let code = console_get(
        "/api/namespaces/team-a/runs?limit=1&labelSelector=restart-probe%3D1",
        "outsider",
    );
    // Asserted once kube-apiserver is back, so a failure here never leaves
    // the shared control plane down for the test binaries that follow.

    let log = std::fs::File::options()
        .append(true)
        .open(state.join("log/kube-apiserver.log"))
        .unwrap();
    let child = Command::new("setsid")
        .args(&argv)
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .expect("restarting kube-apiserver");
    std::fs::write(&pid_file, format!("{}\n", child.id())).unwrap();
    // It outlives this test (hack/testenv down stops it); reap it if it exits first.
    let mut child = child;
    std::thread::spawn(move || {
        let _ = child.wait();
    });
    wait_for("kube-apiserver to serve", || {
        console_get("/api/namespaces/team-a/runs?limit=1", "viewer") == 200
    })
    .await;
    assert_eq!(code, 503, "while kube-apiserver was away");

    // A Run created after the restart is resolved by /v1: the watch resumed.
    let fx = Fixtures::new("team-a").await;
    let name = unique("after-restart");
    let uid = fx.create_run(&name, "bash", "function", json!({})).await;
    fx.set_run_status(&name, json!({"phase": "Ready"})).await;
    wait_for("the Run cache to see the new Run", || {
        invoke(&name, &uid) == 200
    })
    .await;
    // And the aggregated API is back (APIService Available again).
    wait_for("the aggregated API", || {
        e.kubectl(
            Some(e.token("admin")),
            &["get", "--raw", "/apis/logs.kruntimes.io/v1alpha1"],
        )
        .status
        .success()
    })
    .await;
}
