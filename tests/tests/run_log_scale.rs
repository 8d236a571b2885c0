//! The Run-log API at scale, end to end (kubectl → kube-apiserver →
//! aggregated listener → pods/log → fake kubelet): record cursors, resuming
//! and paging with them, the floor of every read, the final Status line of
//! a follow, and one upstream stream per Pod shared by its followers.

use std::process::Stdio;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use kruntimes_tests::env::{
    ConsoleProcess, Fixtures, env, log_path, now_rfc3339, runtimed_line, unique,
};
use kruntimes_tests::stream;
use serde_json::{Value, json};

const NS: &str = "team-a";

fn get_raw(path: &str) -> Value {
    let out = env().kubectl(Some(env().token("viewer")), &["get", "--raw", path]);
    assert!(
        out.status.success(),
        "{path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a JSON answer")
}

fn get_raw_err(path: &str) -> String {
    let out = env().kubectl(Some(env().token("viewer")), &["get", "--raw", path]);
    assert!(!out.status.success(), "{path} was accepted");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn messages(v: &Value) -> Vec<String> {
    v["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn cursors(v: &Value) -> Vec<String> {
    v["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["cursor"].as_str().expect("a cursor").to_owned())
        .collect()
}

fn stamp(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S%.9fZ").to_string()
}

/// A Run of its own Pod, assigned now (with or without a startTime).
struct Logged {
    fx: Fixtures,
    run: String,
    uid: String,
    pod: String,
}

impl Logged {
    async fn new(prefix: &str) -> Self {
        let fx = Fixtures::new(NS).await;
        let pod = unique("pool");
        let pod_uid = fx.create_pod(&pod, "bash").await;
        let run = unique(prefix);
        let uid = fx.create_run(&run, "bash", "task", json!({})).await;
        fx.assign(&run, &pod, &pod_uid, &now_rfc3339()).await;
        Self { fx, run, uid, pod }
    }

    fn line(&self, message: &str) -> String {
        runtimed_line(&self.uid, &self.run, NS, &self.pod, "stdout", message)
    }

    fn path(&self, query: &str) -> String {
        log_path(NS, &self.run, query)
    }
}

/// A line of another Run, to interleave.
fn noise(pod: &str, i: usize) -> String {
    runtimed_line(
        "00000000-0000-4000-8000-000000000000",
        "other",
        NS,
        pod,
        "stdout",
        &format!("noise {i}"),
    )
}

/// A `kubectl get --raw` follow whose NDJSON lines are read by a thread.
fn follow(path: &str) -> (std::process::Child, mpsc::Receiver<String>) {
    stream::kubectl_follow(env().token("viewer"), path)
}

fn next_line(rx: &mpsc::Receiver<String>) -> Value {
    let line = rx
        .recv_timeout(Duration::from_secs(20))
        .expect("a line within 20 s");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad NDJSON line ({e}): {line}"))
}

fn is_cursor(c: &str) -> bool {
    let Some((stamp, seq)) = c.split_once('-') else {
        return false;
    };
    let Some((secs, nanos)) = stamp.split_once('.') else {
        return false;
    };
    !secs.is_empty()
        && nanos.len() == 9
        && !seq.is_empty()
        && [secs, nanos, seq]
            .iter()
            .all(|p| p.bytes().all(|b| b.is_ascii_digit()))
}

#[tokio::test]
async fn before_cursor_pages_back_to_the_first_record_and_since_cursor_pages_forward() {
    let l = Logged::new("paged").await;
    // 25 records in groups of equal timestamps (the sequence tells them
    // apart), with another Run's lines in the same groups.
    let base = jiff::Timestamp::now();
    let mut lines = Vec::new();
    for i in 0..25usize {
        let at = stamp(base + jiff::SignedDuration::from_millis((i / 3) as i64));
        if i % 2 == 0 {
            lines.push((at.clone(), noise(&l.pod, i)));
        }
        lines.push((at, l.line(&format!("r{i}"))));
    }
    l.fx.append_log_at(&l.pod, &lines);
    let want = |r: std::ops::Range<usize>| r.map(|i| format!("r{i}")).collect::<Vec<_>>();

    let all = get_raw(&l.path("?tailLines=500"));
    assert_eq!(messages(&all), want(0..25));
    let all_cursors = cursors(&all);
    assert!(all_cursors.iter().all(|c| is_cursor(c)), "{all_cursors:?}");
    let mut unique_cursors = all_cursors.clone();
    unique_cursors.dedup();
    assert_eq!(unique_cursors.len(), 25, "cursors are distinct");
    assert!(
        all_cursors.iter().any(|c| !c.ends_with("-0")),
        "equal timestamps get a sequence: {all_cursors:?}"
    );

    // Back, ten at a time, to the first record.
    let page = get_raw(&l.path("?tailLines=10"));
    assert_eq!(messages(&page), want(15..25));
    assert_eq!(page["truncated"], true);
    assert_eq!(cursors(&page), all_cursors[15..25], "stable addresses");
    let page = get_raw(&l.path(&format!("?tailLines=10&beforeCursor={}", all_cursors[15])));
    assert_eq!(messages(&page), want(5..15));
    assert_eq!(page["truncated"], true);
    assert_eq!(page["truncatedBy"], "tailLines");
    let page = get_raw(&l.path(&format!("?tailLines=10&beforeCursor={}", all_cursors[5])));
    assert_eq!(messages(&page), want(0..5));
    assert_eq!(page["truncated"], false, "the first record ends the paging");
    let page = get_raw(&l.path(&format!("?beforeCursor={}", all_cursors[0])));
    assert_eq!(messages(&page), Vec::<String>::new());
    assert_eq!(page["truncated"], false);

    // Forward from a cursor.
    let page = get_raw(&l.path(&format!("?tailLines=10&sinceCursor={}", all_cursors[4])));
    assert_eq!(messages(&page), want(5..15));
    assert_eq!(page["truncated"], true);
    assert_eq!(page["truncatedBy"], "tailLines");
    assert_eq!(cursors(&page), all_cursors[5..15]);
    let page = get_raw(&l.path(&format!("?sinceCursor={}", all_cursors[20])));
    assert_eq!(messages(&page), want(21..25));
    assert_eq!(page["truncated"], false);

    // The Console's /api relay passes cursors through.
    let api = |q: &str| -> Value {
        let (code, body) = env().curl(
            &format!(
                "{}/api/namespaces/{NS}/runs/{}/logs{q}",
                env().var("CONSOLE_URL"),
                l.run
            ),
            &[
                "--cacert",
                env().var("CONSOLE_CA"),
                "-H",
                &format!("Authorization: Bearer {}", env().token("viewer")),
            ],
        );
        assert_eq!(code, 200, "{q}: {body}");
        serde_json::from_str(&body).unwrap()
    };
    let page = api(&format!("?tail=3&beforeCursor={}", all_cursors[10]));
    assert_eq!(messages(&page), want(7..10));
    assert_eq!(cursors(&page), all_cursors[7..10]);
    let page = api(&format!("?tail=3&sinceCursor={}", all_cursors[10]));
    assert_eq!(messages(&page), want(11..14));

    // Bad cursors and combinations are refused, naming the parameter.
    for (q, word) in [
        ("?sinceCursor=yesterday", "sinceCursor"),
        ("?beforeCursor=1.5-0", "beforeCursor"),
        (
            &format!(
                "?sinceCursor={}&beforeCursor={}",
                all_cursors[1], all_cursors[2]
            )[..],
            "combined",
        ),
        (
            &format!("?follow=true&beforeCursor={}", all_cursors[1])[..],
            "beforeCursor",
        ),
    ] {
        let err = get_raw_err(&l.path(q));
        assert!(
            err.contains("BadRequest") && err.contains(word),
            "{q}: {err}"
        );
    }
}

#[tokio::test]
async fn since_cursor_resumes_a_follow_without_gap_or_duplicate_while_lines_arrive() {
    let l = Logged::new("resumed").await;
    l.fx.append_log(&l.pod, &[l.line("m0")]);
    let (mut first, mut rx) = follow(&l.path("?follow=true&tailLines=500"));
    let v = next_line(&rx);
    assert_eq!(v["message"], "m0");
    let mut last_cursor = v["cursor"].as_str().unwrap().to_owned();
    // A follower that falls behind the writer (a slow reader on a busy
    // machine) is ended with FellBehind; as a client does, it comes back
    // with sinceCursor after the last record it has: the same contract this
    // test checks, a few more times.
    let mut fell_behind = 0;
    let mut behind = |v: &Value, last: &str| -> Option<_> {
        if v["reason"] != "FellBehind" {
            return None;
        }
        fell_behind += 1;
        assert!(fell_behind <= 10, "fell behind {fell_behind} times: {v}");
        Some(follow(&l.path(&format!("?follow=true&sinceCursor={last}"))))
    };

    // A writer appends 400 records (in groups of equal timestamps, with
    // another Run's lines between) while the follower reconnects.
    let total = 400usize;
    let writer = {
        let fx_path = l.fx.log_path(&l.pod);
        let (uid, run, pod) = (l.uid.clone(), l.run.clone(), l.pod.clone());
        std::thread::spawn(move || {
            use std::io::Write;
            for batch in 0..(total - 1) / 4 + 1 {
                let at = stamp(jiff::Timestamp::now());
                let mut buf = String::new();
                for k in 0..4 {
                    let i = 1 + batch * 4 + k;
                    if i >= total {
                        break;
                    }
                    let rec = runtimed_line(&uid, &run, NS, &pod, "stdout", &format!("m{i}"));
                    buf.push_str(&format!("{at} stdout F {}\n", noise(&pod, i)));
                    buf.push_str(&format!("{at} stdout F {rec}\n"));
                }
                let mut f = std::fs::OpenOptions::new()
                    .append(true)
                    .open(&fx_path)
                    .expect("log");
                f.write_all(buf.as_bytes()).expect("append");
                drop(f);
                std::thread::sleep(Duration::from_millis(15));
            }
        })
    };
    let mut got = vec!["m0".to_owned()];
    while got.len() < 120 {
        let v = next_line(&rx);
        if let Some((again, again_rx)) = behind(&v, &last_cursor) {
            let _ = first.kill();
            let _ = first.wait();
            (first, rx) = (again, again_rx);
            continue;
        }
        assert!(v.get("kind").is_none(), "no final line yet: {v}");
        got.push(v["message"].as_str().unwrap().to_owned());
        last_cursor = v["cursor"].as_str().unwrap().to_owned();
    }
    let _ = first.kill();
    let _ = first.wait();
    // Lines keep arriving while nobody follows; then the follower comes back.
    std::thread::sleep(Duration::from_millis(300));
    let (mut second, mut rx) = follow(&l.path(&format!("?follow=true&sinceCursor={last_cursor}")));
    let last = format!("m{}", total - 1);
    while got.last() != Some(&last) {
        let v = next_line(&rx);
        if let Some((again, again_rx)) = behind(&v, &last_cursor) {
            let _ = second.kill();
            let _ = second.wait();
            (second, rx) = (again, again_rx);
            continue;
        }
        assert!(v.get("kind").is_none(), "no final line yet: {v}");
        got.push(v["message"].as_str().unwrap().to_owned());
        last_cursor = v["cursor"].as_str().unwrap().to_owned();
    }
    writer.join().expect("writer");
    let _ = second.kill();
    let _ = second.wait();
    let want: Vec<String> = (0..total).map(|i| format!("m{i}")).collect();
    assert_eq!(got, want, "no gap and no duplicate across the reconnect");
}

/// Bytes the fake kubelet served for the Pod's `runtimed` log since
/// `from` requests were recorded (see `Served` in the fake kubelet).
fn served(fx: &Fixtures, pod: &str) -> Vec<Value> {
    let path = fx.log_path(pod).with_file_name("runtimed.requests");
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("a request record"))
        .collect()
}

fn bytes_served(records: &[Value]) -> u64 {
    records
        .iter()
        .filter(|r| r["event"] == "close")
        .map(|r| r["bytes"].as_u64().unwrap_or(0))
        .sum()
}

/// Writes `n` lines of another Run stamped from `from`, 1 ms apart; returns their bytes.
fn write_noise(fx: &Fixtures, pod: &str, from: jiff::Timestamp, n: usize) -> u64 {
    let pad = "x".repeat(300);
    let lines: Vec<(String, String)> = (0..n)
        .map(|i| {
            let at = stamp(from + jiff::SignedDuration::from_millis(i as i64));
            (at, noise(pod, i).replace("noise", &format!("noise {pad}")))
        })
        .collect();
    let bytes: usize = lines.iter().map(|(a, l)| a.len() + l.len() + 11).sum();
    fx.append_log_at(pod, &lines);
    bytes as u64
}

#[tokio::test]
async fn a_run_without_start_time_reads_only_from_its_creation() {
    let fx = Fixtures::new(NS).await;
    let pod = unique("pool");
    let pod_uid = fx.create_pod(&pod, "bash").await;
    // 16 MiB of other Runs' lines, written long before the Run existed.
    let old = jiff::Timestamp::now() - jiff::SignedDuration::from_secs(3600);
    let before = write_noise(&fx, &pod, old, 40_000);
    assert!(before > 12 << 20);
    let run = unique("nostart");
    let uid = fx.create_run(&run, "bash", "task", json!({})).await;
    // Assigned, Running, and no startTime.
    fx.set_run_status(
        &run,
        json!({"phase": "Running", "assignedPod": pod, "assignedPodUID": pod_uid}),
    )
    .await;
    let lines: Vec<String> = (0..3)
        .map(|i| runtimed_line(&uid, &run, NS, &pod, "stdout", &format!("n{i}")))
        .collect();
    fx.append_log(&pod, &lines);
    let after: u64 = lines.iter().map(|l| l.len() as u64 + 42).sum();

    let already = served(&fx, &pod).len();
    // Fewer records than asked for: the read goes down to the floor.
    let v = get_raw(&log_path(NS, &run, "?tailLines=500"));
    assert_eq!(messages(&v), ["n0", "n1", "n2"]);
    assert_eq!(v["truncated"], false);
    let requests = served(&fx, &pod).split_off(already);
    let read = bytes_served(&requests);
    // Only the log since the Run's creation (less the skew margin) is read;
    // the kubelet's readahead of a few chunks is allowed for.
    assert!(
        read <= after * 12 / 10 + (1 << 20),
        "read {read} bytes for {after} bytes since the Run's creation (and {before} before it): {requests:?}"
    );
}

#[tokio::test]
async fn a_finished_run_reads_only_its_own_stretch_of_a_long_log() {
    let fx = Fixtures::new(NS).await;
    let pod = unique("pool");
    let pod_uid = fx.create_pod(&pod, "bash").await;
    let run = unique("middle");
    let uid = fx.create_run(&run, "bash", "task", json!({})).await;
    let now = jiff::Timestamp::now();
    let at = |secs: i64| now + jiff::SignedDuration::from_secs(secs);
    let before = write_noise(&fx, &pod, at(-3600), 20_000);
    // The Run's stretch: noise and its records from +2 s to +12 s.
    let mut stretch = 0u64;
    let mut lines = Vec::new();
    for i in 0..10i64 {
        let when = stamp(at(2 + i));
        let rec = runtimed_line(&uid, &run, NS, &pod, "stdout", &format!("d{i}"));
        stretch += (when.len() + rec.len() + 11) as u64;
        lines.push((when, rec));
    }
    fx.append_log_at(&pod, &lines);
    stretch += write_noise(&fx, &pod, at(12), 1_000);
    // Long after its completion (past the slack), many more lines.
    let after = write_noise(&fx, &pod, at(600), 60_000);
    let stamp_s = |t: jiff::Timestamp| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string();
    fx.set_run_status(
        &run,
        json!({"phase": "Succeeded", "assignedPod": pod, "assignedPodUID": pod_uid,
               "startTime": stamp_s(at(1)), "completionTime": stamp_s(at(13))}),
    )
    .await;
    let already = served(&fx, &pod).len();
    let v = get_raw(&log_path(NS, &run, "?tailLines=500"));
    let want: Vec<String> = (0..10).map(|i| format!("d{i}")).collect();
    assert_eq!(messages(&v), want);
    let requests = served(&fx, &pod).split_off(already);
    let read = bytes_served(&requests);
    // What the kubelet had written into the socket before the Console's close
    // reached it depends on scheduling (6.4 MB seen on two busy cores); the
    // completion bound ignored reads all 30 MB after the stretch.
    assert!(
        read <= stretch * 12 / 10 + (12 << 20) && read < after / 2,
        "read {read} bytes for a stretch of {stretch} (log: {before} before, {after} after): {requests:?}"
    );
}

/// The final line of a follow, and that nothing follows it.
fn final_status(rx: &mpsc::Receiver<String>, child: &mut std::process::Child) -> Value {
    let v = next_line(rx);
    assert_eq!(v["kind"], "Status", "a final Status line: {v}");
    assert!(
        matches!(
            rx.recv_timeout(Duration::from_secs(20)),
            Err(mpsc::RecvTimeoutError::Disconnected)
        ),
        "the follow ends after its Status"
    );
    let status = child.wait().expect("kubectl exit");
    assert!(status.success(), "the follow answered 200: {status:?}");
    v
}

fn assert_unavailable(v: &Value) {
    assert_eq!(v["status"], "Failure", "{v}");
    assert_eq!(v["code"], 503, "{v}");
    assert_eq!(v["reason"], "ServiceUnavailable", "{v}");
    assert!(
        v["message"]
            .as_str()
            .is_some_and(|m| m.contains("sinceCursor")),
        "{v}"
    );
}

#[tokio::test]
async fn a_follow_whose_upstream_fails_ends_with_a_status_line() {
    let l = Logged::new("failing").await;
    // No container log yet (the container has not started): the kubelet says 404.
    let (mut child, rx) = follow(&l.path("?follow=true"));
    assert_unavailable(&final_status(&rx, &mut child));

    // The kubelet failing (kube-apiserver answers 5xx).
    l.fx.append_log(&l.pod, &[l.line("first")]);
    let fail = l.fx.log_path(&l.pod).with_file_name("runtimed.fail");
    std::fs::write(&fail, "500 simulated kubelet failure").unwrap();
    let (mut child, rx) = follow(&l.path("?follow=true"));
    assert_unavailable(&final_status(&rx, &mut child));

    // A stream that broke off while live.
    std::fs::remove_file(&fail).unwrap();
    let (mut child, rx) = follow(&l.path("?follow=true"));
    assert_eq!(next_line(&rx)["message"], "first");
    l.fx.append_log(&l.pod, &[l.line("second")]);
    assert_eq!(next_line(&rx)["message"], "second");
    std::fs::remove_file(l.fx.log_path(&l.pod)).unwrap();
    assert_unavailable(&final_status(&rx, &mut child));

    // A Run that finished: its history, then a line saying so.
    l.fx.append_log(&l.pod, &[l.line("third")]);
    let done = jiff::Timestamp::now() + jiff::SignedDuration::from_secs(1);
    l.fx.set_run_status(
        &l.run,
        json!({"phase": "Failed", "completionTime": done.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()}),
    )
    .await;
    let (mut child, rx) = follow(&l.path("?follow=true"));
    assert_eq!(next_line(&rx)["message"], "third");
    let v = final_status(&rx, &mut child);
    assert_eq!(v["status"], "Success", "{v}");
    assert_eq!(v["code"], 200, "{v}");
    assert_eq!(v["reason"], "RunFinished", "{v}");
    assert_eq!(v["message"], "the Run finished: Failed", "{v}");
}

/// A follow straight to a Console's aggregated listener (its own process,
/// so its gauges count these followers only), as the viewer.
fn follow_direct(port: u16, path: &str) -> (std::process::Child, mpsc::Receiver<String>) {
    let mut child = std::process::Command::new("curl")
        .args([
            "-sS",
            "-N",
            "--http1.1",
            "--cacert",
            env().var("CONSOLE_CA"),
        ])
        .arg("-H")
        .arg(format!("Authorization: Bearer {}", env().token("viewer")))
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

/// Upstream follows of the Pod's log open now at the fake kubelet.
fn open_upstream_follows(fx: &Fixtures, pod: &str) -> i64 {
    served(fx, pod)
        .iter()
        .filter(|r| r["follow"] == true)
        .map(|r| if r["event"] == "open" { 1 } else { -1 })
        .sum()
}

/// Waits up to 20 s for `f` to hold.
async fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !f() {
        assert!(Instant::now() < deadline, "{what}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Five Runs on two Pods (three and two), each with a first record.
async fn five_runs_on_two_pods(fx: &Fixtures) -> Vec<(String, String, String)> {
    let mut pods = Vec::new();
    for _ in 0..2 {
        let pod = unique("pool");
        let uid = fx.create_pod(&pod, "bash").await;
        pods.push((pod, uid));
    }
    let mut runs = Vec::new();
    for i in 0..5 {
        let (pod, pod_uid) = &pods[usize::from(i >= 3)];
        let run = unique("shared");
        let uid = fx.create_run(&run, "bash", "task", json!({})).await;
        fx.assign(&run, pod, pod_uid, &now_rfc3339()).await;
        fx.append_log(
            pod,
            &[runtimed_line(
                &uid,
                &run,
                NS,
                pod,
                "stdout",
                &format!("first of {run}"),
            )],
        );
        runs.push((run, uid, pod.clone()));
    }
    runs
}

type Follower = (std::process::Child, mpsc::Receiver<String>, usize);

/// Four followers per Run; each has received its Run's first record.
fn twenty_followers(
    runs: &[(String, String, String)],
    open: impl Fn(&str) -> (std::process::Child, mpsc::Receiver<String>),
) -> Vec<Follower> {
    let mut followers = Vec::new();
    for (i, (run, _, _)) in runs.iter().enumerate() {
        for _ in 0..4 {
            let (child, rx) = open(&log_path(NS, run, "?follow=true"));
            followers.push((child, rx, i));
        }
    }
    for (_, rx, i) in &followers {
        assert_eq!(next_line(rx)["message"], format!("first of {}", runs[*i].0));
    }
    followers
}

/// A new record of each Run reaches its four followers, and only them.
fn each_gets_its_own(fx: &Fixtures, runs: &[(String, String, String)], followers: &[Follower]) {
    for (run, uid, pod) in runs {
        fx.append_log(
            pod,
            &[runtimed_line(
                uid,
                run,
                NS,
                pod,
                "stdout",
                &format!("next of {run}"),
            )],
        );
    }
    for (_, rx, i) in followers {
        assert_eq!(next_line(rx)["message"], format!("next of {}", runs[*i].0));
    }
}

#[tokio::test]
async fn followers_of_runs_on_one_pod_share_one_upstream_stream() {
    let fx = Fixtures::new(NS).await;
    let runs = five_runs_on_two_pods(&fx).await;
    let pods: Vec<String> = vec![runs[0].2.clone(), runs[4].2.clone()];

    // Through kubectl and kube-apiserver: the kubelet serves one follow per Pod.
    let mut followers = twenty_followers(&runs, follow);
    each_gets_its_own(&fx, &runs, &followers);
    for pod in &pods {
        assert_eq!(
            open_upstream_follows(&fx, pod),
            1,
            "one upstream follow for pod {pod}: {:?}",
            served(&fx, pod)
        );
    }
    for (child, _, _) in &mut followers {
        let _ = child.kill();
        let _ = child.wait();
    }
    for pod in &pods {
        eventually(&format!("the upstream follow of {pod} closes"), || {
            open_upstream_follows(&fx, pod) == 0
        })
        .await;
    }

    // A Console of its own, for its gauges.
    let dir = tempfile::tempdir().unwrap();
    let own = ConsoleProcess::start(dir.path(), &[]);
    let gauge = |name: &str| own.metric(name).unwrap_or(-1.0);
    assert_eq!(gauge("kruntimes_console_log_upstream_streams"), 0.0);
    let port = own.api_port;
    let mut followers = twenty_followers(&runs, |path| follow_direct(port, path));
    assert_eq!(gauge("kruntimes_console_log_upstream_streams"), 2.0);
    assert_eq!(gauge("kruntimes_console_log_followers"), 20.0);
    each_gets_its_own(&fx, &runs, &followers);
    // Half of one Run's followers leave: the others stay on the stream.
    for (child, _, _) in followers.iter_mut().take(2) {
        let _ = child.kill();
        let _ = child.wait();
    }
    eventually("two followers left", || {
        gauge("kruntimes_console_log_followers") == 18.0
    })
    .await;
    assert_eq!(gauge("kruntimes_console_log_upstream_streams"), 2.0);
    each_gets_its_own(&fx, &runs, &followers[2..]);
    for (child, _, _) in &mut followers {
        let _ = child.kill();
        let _ = child.wait();
    }
    eventually("every follower left", || {
        gauge("kruntimes_console_log_followers") == 0.0
    })
    .await;
    eventually("the upstream streams closed", || {
        gauge("kruntimes_console_log_upstream_streams") == 0.0
    })
    .await;
    for pod in &pods {
        eventually(&format!("the kubelet's follow of {pod} closes"), || {
            open_upstream_follows(&fx, pod) == 0
        })
        .await;
    }
}

#[tokio::test]
async fn a_follower_that_stops_reading_is_ended_without_slowing_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let own = ConsoleProcess::start(
        dir.path(),
        &[
            "--log-follower-buffer-records=32".to_owned(),
            "--log-follower-buffer-bytes=65536".to_owned(),
            "--log-follower-final-timeout=60s".to_owned(),
        ],
    );
    let gauge = |name: &str| own.metric(name).unwrap_or(-1.0);
    let slow = Logged::new("slow").await;
    let fx = &slow.fx;
    // A second Run on the same Pod.
    let fast_run = unique("fast");
    let fast_uid = fx.create_run(&fast_run, "bash", "task", json!({})).await;
    fx.assign(
        &fast_run,
        &slow.pod,
        &pod_uid(fx, &slow.pod).await,
        &now_rfc3339(),
    )
    .await;
    let fast_line = |m: &str| runtimed_line(&fast_uid, &fast_run, NS, &slow.pod, "stdout", m);
    fx.append_log(&slow.pod, &[slow.line("s-first"), fast_line("f-first")]);

    let (mut slow_child, slow_rx) = follow_direct(own.api_port, &slow.path("?follow=true"));
    let (mut fast_child, fast_rx) =
        follow_direct(own.api_port, &log_path(NS, &fast_run, "?follow=true"));
    assert_eq!(next_line(&slow_rx)["message"], "s-first");
    assert_eq!(next_line(&fast_rx)["message"], "f-first");
    assert_eq!(gauge("kruntimes_console_log_upstream_streams"), 1.0);
    assert_eq!(gauge("kruntimes_console_log_followers"), 2.0);

    // The slow client stops reading.
    let pid = slow_child.id().to_string();
    assert!(
        std::process::Command::new("kill")
            .args(["-STOP", &pid])
            .status()
            .unwrap()
            .success()
    );
    let pad = "p".repeat(1000);
    let mut dropped = false;
    for round in 0..60 {
        let mut lines: Vec<String> = (0..2000)
            .map(|i| slow.line(&format!("s-{round}-{i} {pad}")))
            .collect();
        lines.push(fast_line(&format!("f-{round}")));
        fx.append_log(&slow.pod, &lines);
        // The other follower keeps receiving, within seconds, whatever the slow one does.
        let got = fast_rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or_else(|_| panic!("round {round}: the fast follower was held up"));
        let v: Value = serde_json::from_str(&got).unwrap();
        assert_eq!(v["message"], format!("f-{round}"), "{v}");
        if gauge("kruntimes_console_log_followers") == 1.0 {
            dropped = true;
            break;
        }
    }
    assert!(dropped, "the slow follower was never dropped");
    assert_eq!(gauge("kruntimes_console_log_upstream_streams"), 1.0);
    fx.append_log(&slow.pod, &[fast_line("f-after")]);
    assert_eq!(next_line(&fast_rx)["message"], "f-after");

    // Reading again, the slow client gets what was in flight, then the final line.
    assert!(
        std::process::Command::new("kill")
            .args(["-CONT", &pid])
            .status()
            .unwrap()
            .success()
    );
    let mut last = None;
    let mut records = 0usize;
    while let Ok(line) = slow_rx.recv_timeout(Duration::from_secs(30)) {
        let v: Value = serde_json::from_str(&line).unwrap();
        if v.get("kind").is_none() {
            assert!(v["message"].as_str().unwrap().starts_with("s-"), "{v}");
            records += 1;
        }
        last = Some(v);
    }
    let last = last.expect("lines from the slow follower");
    assert_eq!(last["kind"], "Status", "{last}");
    assert_eq!(last["code"], 503, "{last}");
    assert_eq!(last["reason"], "FellBehind", "{last}");
    assert!(records > 0);
    let _ = slow_child.wait();
    let _ = fast_child.kill();
    let _ = fast_child.wait();
    eventually("the upstream stream closed", || {
        gauge("kruntimes_console_log_upstream_streams") == 0.0
    })
    .await;
}

async fn pod_uid(fx: &Fixtures, pod: &str) -> String {
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(fx.client.clone(), &fx.ns);
    pods.get(pod).await.unwrap().metadata.uid.unwrap()
}

#[tokio::test]
async fn a_follow_ends_with_run_finished_when_its_run_finishes() {
    let l = Logged::new("finishing").await;
    l.fx.append_log(&l.pod, &[l.line("working")]);
    let (mut child, rx) = follow(&l.path("?follow=true"));
    assert_eq!(next_line(&rx)["message"], "working");
    l.fx.append_log(&l.pod, &[l.line("last words")]);
    assert_eq!(next_line(&rx)["message"], "last words");
    l.fx.set_run_status(
        &l.run,
        json!({"phase": "Succeeded", "completionTime": now_rfc3339()}),
    )
    .await;
    let v = final_status(&rx, &mut child);
    assert_eq!(v["status"], "Success", "{v}");
    assert_eq!(v["reason"], "RunFinished", "{v}");
    assert_eq!(v["message"], "the Run finished: Succeeded", "{v}");
}

/// A `sinceCursor` follow whose history holds more recent records than a
/// follower's buffer (256): the Pod's shared stream, which starts a few
/// seconds back, brings them again while the history is sent. Those the
/// history covers are not a gap: the follow goes live instead of ending
/// with `FellBehind`, without a duplicate.
#[tokio::test]
async fn a_long_recent_history_does_not_end_a_resumed_follow_as_fallen_behind() {
    let l = Logged::new("recent").await;
    l.fx.append_log(&l.pod, &[l.line("r0")]);
    let first = get_raw(&l.path("?tailLines=1"));
    let cursor = first["records"][0]["cursor"].as_str().unwrap().to_owned();
    let total = 20_000usize;
    let lines: Vec<String> = (1..total).map(|i| l.line(&format!("r{i}"))).collect();
    l.fx.append_log(&l.pod, &lines);
    let (mut child, rx) = follow(&l.path(&format!("?follow=true&sinceCursor={cursor}")));
    let mut got = Vec::new();
    while got.len() < total - 1 {
        let v = next_line(&rx);
        assert!(
            v.get("kind").is_none(),
            "the follow ended after {} records: {v}",
            got.len()
        );
        got.push(v["message"].as_str().unwrap().to_owned());
    }
    // Live now: a new record arrives, once.
    l.fx.append_log(&l.pod, &[l.line("after")]);
    let v = next_line(&rx);
    assert_eq!(v["message"], "after", "{v}");
    let _ = child.kill();
    let _ = child.wait();
    let want: Vec<String> = (1..total).map(|i| format!("r{i}")).collect();
    assert_eq!(got, want, "every record of the history once, in order");
    l.fx.delete_pod(&l.pod).await;
}
