//! The Run-log API on the engine's runtimed, end to end: a running Run's
//! live output read from runtimed's status endpoint (simulated here, on the
//! Pod's own loopback address) through kubectl → kube-apiserver → the
//! aggregated listener, handed over to the records runtimed writes when the
//! Run ends; Runs that end with no or partial records say why; a runtimed
//! restart keeps finished Runs' logs.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use kruntimes_tests::env::{Fixtures, env, log_path, now_rfc3339, unique};
use kruntimes_tests::runtime_pod::{SimulatedRuntimePod, free_loopback_ip};
use kruntimes_tests::sim::cri::Stream;
use kruntimes_tests::sim::runtimed::{Mode, Phase};
use kruntimes_tests::stream;
use serde_json::{Value, json};

const NS: &str = "team-a";
/// The Runtime of these Runs and Pods: one of their own, so the ready Pods of
/// the demo's Runtimes stay what the browser suite expects.
const RT: &str = "live-engine";

fn get_raw(path: &str) -> Value {
    let out = env().kubectl(Some(env().token("viewer")), &["get", "--raw", path]);
    assert!(
        out.status.success(),
        "kubectl get --raw {path}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("a RunLog")
}

fn follow(path: &str) -> (std::process::Child, mpsc::Receiver<String>) {
    stream::kubectl_follow(env().token("viewer"), path)
}

/// The next NDJSON line of a follow, parsed (panics after 15 s).
fn next(rx: &mpsc::Receiver<String>) -> Value {
    let line = rx
        .recv_timeout(Duration::from_secs(15))
        .expect("a follow line within 15 s");
    serde_json::from_str(&line).unwrap_or_else(|e| panic!("bad NDJSON line ({e}): {line}"))
}

fn messages(v: &Value) -> Vec<String> {
    v["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn reasons(v: &Value) -> Vec<String> {
    v["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .map(|n| n["reason"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A task Run assigned to `sim`'s Pod, running, its execution started in
/// runtimed. Returns its name and UID.
async fn running_run(fx: &Fixtures, sim: &SimulatedRuntimePod) -> (String, String) {
    let run = unique("live");
    let uid = fx.create_run(&run, RT, "task", json!({})).await;
    // The engine leaves `attempt` blank during a first attempt.
    fx.set_run_status(
        &run,
        json!({"phase": "Running", "assignedPod": sim.pod.name, "assignedPodUID": sim.pod.uid, "startTime": now_rfc3339()}),
    )
    .await;
    sim.runtimed
        .start(&uid, &run)
        .expect("starting the execution");
    (run, uid)
}

/// Ends the Run as the engine does: the terminal status first, then runtimed
/// writes the records (or none) and forgets the execution.
async fn end_run(fx: &Fixtures, sim: &SimulatedRuntimePod, run: &str, uid: &str, phase: Phase) {
    let name = format!("{phase:?}");
    fx.set_run_status(
        run,
        json!({"phase": name, "completionTime": now_rfc3339(), "attempt": 1}),
    )
    .await;
    sim.runtimed
        .finish(uid, phase)
        .expect("finishing the execution");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_follow_gets_live_lines_while_the_run_runs_and_the_written_records_without_a_duplicate() {
    let fx = Fixtures::new(NS).await;
    let sim = fx.simulated_runtime_pod(RT, Mode::Engine).await;
    let (run, uid) = running_run(&fx, &sim).await;
    let rt = &sim.runtimed;
    rt.print(&uid, Stream::Stdout, "one\ntwo\n").unwrap();
    rt.print(&uid, Stream::Stderr, "warn one\n").unwrap();

    let (mut child, rx) = follow(&log_path(NS, &run, "?follow=true"));
    let mut got = Vec::new();
    for _ in 0..3 {
        let r = next(&rx);
        assert_eq!(r["source"], "status", "live output is marked: {r}");
        got.push((r["stream"].clone(), r["message"].clone()));
    }
    assert_eq!(
        got,
        [
            (json!("stdout"), json!("one")),
            (json!("stdout"), json!("two")),
            (json!("stderr"), json!("warn one"))
        ]
    );

    // A line printed now reaches the reader while the Run runs (measured,
    // reported; the bound is the poll interval plus a round trip).
    let printed = Instant::now();
    rt.print(&uid, Stream::Stdout, "three\nfour-without-a-newline")
        .unwrap();
    let r = next(&rx);
    let latency = printed.elapsed();
    assert_eq!(r["message"], "three");
    assert_eq!(r["source"], "status");
    assert!(
        r["time"].is_string(),
        "a followed live line has a time: {r}"
    );
    assert!(
        r["cursor"]
            .as_str()
            .unwrap_or_default()
            .starts_with("L1-3-1-"),
        "{r}"
    );
    eprintln!("live line delivered {latency:?} after it was printed");

    // The Run ends: runtimed writes one, two, three, the last partial line,
    // then the stderr line. Only the partial line is new to the reader.
    end_run(&fx, &sim, &run, &uid, Phase::Succeeded).await;
    let r = next(&rx);
    assert_eq!(r["message"], "four-without-a-newline", "{r}");
    assert!(r["source"].is_null(), "a written record: {r}");
    let end = next(&rx);
    assert_eq!(
        end["kind"], "Status",
        "nothing but the final line follows: {end}"
    );
    assert_eq!(end["reason"], "RunFinished", "{end}");
    let status = child.wait().expect("kubectl exit");
    assert!(status.success());

    // The same log read after the end holds each line once, from runtimed's records.
    let log = get_raw(&log_path(NS, &run, ""));
    assert_eq!(
        messages(&log),
        ["one", "two", "three", "four-without-a-newline", "warn one"]
    );
    assert!(reasons(&log).contains(&"WrittenAtEnd".to_owned()), "{log}");
    assert!(
        log["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["writtenAtEnd"] == true && r["source"].is_null()),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tail_of_a_running_run_is_its_live_output_and_its_cursors_hand_over() {
    let fx = Fixtures::new(NS).await;
    let sim = fx.simulated_runtime_pod(RT, Mode::Engine).await;
    let (run, uid) = running_run(&fx, &sim).await;
    let rt = &sim.runtimed;
    // Nothing printed yet: no records, and the answer says why.
    let log = get_raw(&log_path(NS, &run, ""));
    assert!(messages(&log).is_empty());
    assert_eq!(reasons(&log), ["LiveOutput"], "{log}");

    rt.print(&uid, Stream::Stdout, "a\nb\nc\n").unwrap();
    rt.print(&uid, Stream::Stderr, "e1\n").unwrap();
    let log = get_raw(&log_path(NS, &run, "?tailLines=3"));
    assert_eq!(messages(&log), ["b", "c", "e1"]);
    assert_eq!(log["truncated"], true);
    assert_eq!(reasons(&log), ["LiveOutput"]);
    let cursors: Vec<&str> = log["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["cursor"].as_str().unwrap())
        .collect();
    assert_eq!(cursors, ["L1-2-0-o", "L1-3-0-o", "L1-3-1-e"]);
    // Older pages by live cursor.
    let older = get_raw(&log_path(NS, &run, "?tailLines=3&beforeCursor=L1-2-0-o"));
    assert_eq!(messages(&older), ["a"]);
    // Only stderr.
    let err = get_raw(&log_path(NS, &run, "?stream=stderr"));
    assert_eq!(messages(&err), ["e1"]);
    // After a live cursor, while still live.
    rt.print(&uid, Stream::Stdout, "d\n").unwrap();
    let after = get_raw(&log_path(NS, &run, "?sinceCursor=L1-2-0-o"));
    assert_eq!(messages(&after), ["c", "d", "e1"]);

    // Once runtimed wrote the records, the same cursor continues in them.
    end_run(&fx, &sim, &run, &uid, Phase::Failed).await;
    let after = get_raw(&log_path(NS, &run, "?sinceCursor=L1-2-0-o"));
    assert_eq!(messages(&after), ["c", "d", "e1"], "{after}");
    assert!(
        after["records"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["source"].is_null()),
        "{after}"
    );
    // A reconnecting follow with that cursor too, then the Run's end.
    let (mut child, rx) = follow(&log_path(NS, &run, "?follow=true&sinceCursor=L1-3-1-e"));
    assert_eq!(next(&rx)["message"], "d");
    let end = next(&rx);
    assert_eq!(end["reason"], "RunFinished", "{end}");
    let _ = child.wait();
    // A bad live cursor is a 400 naming the parameter.
    let out = env().kubectl(
        Some(env().token("viewer")),
        &["get", "--raw", &log_path(NS, &run, "?sinceCursor=L1-0-0-o")],
    );
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("sinceCursor"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_timed_out_run_keeps_its_live_lines_and_says_why_it_has_no_records() {
    let fx = Fixtures::new(NS).await;
    let sim = fx.simulated_runtime_pod(RT, Mode::Engine).await;
    let (run, uid) = running_run(&fx, &sim).await;
    sim.runtimed
        .print(&uid, Stream::Stdout, "working\nstill working\n")
        .unwrap();
    let (mut child, rx) = follow(&log_path(NS, &run, "?follow=true"));
    assert_eq!(next(&rx)["message"], "working");
    assert_eq!(next(&rx)["message"], "still working");
    end_run(&fx, &sim, &run, &uid, Phase::Timeout).await;
    let end = next(&rx);
    assert_eq!(end["reason"], "RunFinished", "{end}");
    let msg = end["message"].as_str().unwrap_or_default();
    assert!(
        msg.contains("Timeout") && msg.contains("no records"),
        "the final line says why: {end}"
    );
    let _ = child.wait();
    let log = get_raw(&log_path(NS, &run, ""));
    assert!(messages(&log).is_empty());
    assert_eq!(reasons(&log), ["NoneWrittenForPhase"], "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retried_run_keeps_only_its_last_attempt_and_says_so() {
    let fx = Fixtures::new(NS).await;
    let sim = fx.simulated_runtime_pod(RT, Mode::Engine).await;
    let (run, uid) = running_run(&fx, &sim).await;
    let rt = &sim.runtimed;
    rt.print(&uid, Stream::Stdout, "first try\n").unwrap();
    let (mut child, rx) = follow(&log_path(NS, &run, "?follow=true"));
    let r = next(&rx);
    assert_eq!(r["message"], "first try");
    assert_eq!(r["cursor"], "L1-1-0-o");
    // The engine retries: a new attempt's output starts over.
    fx.set_run_status(&run, json!({"attempt": 2})).await;
    rt.retry(&uid).unwrap();
    rt.print(&uid, Stream::Stdout, "second try\n").unwrap();
    let r = next(&rx);
    assert_eq!(r["message"], "second try");
    assert_eq!(r["cursor"], "L2-1-0-o", "a new attempt counts again: {r}");
    fx.set_run_status(
        &run,
        json!({"phase": "Succeeded", "completionTime": now_rfc3339()}),
    )
    .await;
    rt.finish(&uid, Phase::Succeeded).unwrap();
    let end = next(&rx);
    assert_eq!(
        end["reason"], "RunFinished",
        "no duplicate of the written record: {end}"
    );
    let _ = child.wait();
    let log = get_raw(&log_path(NS, &run, ""));
    assert_eq!(messages(&log), ["second try"]);
    let r = reasons(&log);
    assert!(r.contains(&"EarlierAttemptsNotKept".to_owned()), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_runtimed_restart_keeps_finished_runs_logs() {
    let fx = Fixtures::new(NS).await;
    let sim = fx.simulated_runtime_pod(RT, Mode::Engine).await;
    let (run, uid) = running_run(&fx, &sim).await;
    sim.runtimed
        .print(&uid, Stream::Stdout, "before the restart\n")
        .unwrap();
    end_run(&fx, &sim, &run, &uid, Phase::Succeeded).await;
    let log = get_raw(&log_path(NS, &run, ""));
    assert_eq!(messages(&log), ["before the restart"]);

    fx.restart_simulated_runtimed(&sim).await;
    let log = get_raw(&log_path(NS, &run, ""));
    assert_eq!(
        messages(&log),
        ["before the restart"],
        "the previous container's log is read: {log}"
    );
    assert!(
        reasons(&log).contains(&"PreviousContainer".to_owned()),
        "{log}"
    );
    // Paging and a follow of the finished Run read it too.
    let first = log["records"][0]["cursor"].as_str().unwrap().to_owned();
    let older = get_raw(&log_path(NS, &run, &format!("?beforeCursor={first}")));
    assert!(messages(&older).is_empty());
    let (mut child, rx) = follow(&log_path(NS, &run, "?follow=true"));
    assert_eq!(next(&rx)["message"], "before the restart");
    assert_eq!(next(&rx)["reason"], "RunFinished");
    let _ = child.wait();

    // A Run that runs across the restart: its earlier records, then its later ones.
    let (run2, uid2) = running_run(&fx, &sim).await;
    sim.runtimed
        .print(&uid2, Stream::Stdout, "after\n")
        .unwrap();
    end_run(&fx, &sim, &run2, &uid2, Phase::Succeeded).await;
    let log = get_raw(&log_path(NS, &run2, ""));
    assert_eq!(messages(&log), ["after"]);
    assert!(
        !reasons(&log).contains(&"PreviousContainer".to_owned()),
        "{log}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn line_numbers_run_on_across_a_runtimed_restart() {
    let fx = Fixtures::new(NS).await;
    let sim = fx.simulated_runtime_pod(RT, Mode::Live).await;
    let (run, uid) = running_run(&fx, &sim).await;
    sim.runtimed
        .print(&uid, Stream::Stdout, "p1\np2\n")
        .unwrap();
    fx.restart_simulated_runtimed(&sim).await;
    sim.runtimed.print(&uid, Stream::Stdout, "c1\n").unwrap();
    end_run(&fx, &sim, &run, &uid, Phase::Succeeded).await;
    let lines = |v: &Value| -> Vec<(String, u64)> {
        v["records"]
            .as_array()
            .expect("records")
            .iter()
            .map(|r| {
                (
                    r["message"].as_str().unwrap_or_default().to_owned(),
                    r["line"].as_u64().unwrap_or(0),
                )
            })
            .collect()
    };
    let pair = |m: &str, n: u64| (m.to_owned(), n);
    let all = get_raw(&log_path(NS, &run, ""));
    assert_eq!(
        lines(&all),
        [pair("p1", 1), pair("p2", 2), pair("c1", 3)],
        "{all}"
    );
    let cursor = |i: usize| all["records"][i]["cursor"].as_str().unwrap().to_owned();
    // Pages on either side of the restart keep their numbers.
    let older = get_raw(&log_path(NS, &run, &format!("?beforeCursor={}", cursor(2))));
    assert_eq!(lines(&older), [pair("p1", 1), pair("p2", 2)], "{older}");
    let newer = get_raw(&log_path(NS, &run, &format!("?sinceCursor={}", cursor(0))));
    assert_eq!(lines(&newer), [pair("p2", 2), pair("c1", 3)], "{newer}");
    let first = get_raw(&log_path(NS, &run, "?fromStart=true&tailLines=2"));
    assert_eq!(lines(&first), [pair("p1", 1), pair("p2", 2)], "{first}");
    let last = get_raw(&log_path(NS, &run, "?tailLines=1"));
    assert_eq!(lines(&last), [pair("c1", 3)], "{last}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runtimed_writing_records_as_they_happen_changes_nothing() {
    let fx = Fixtures::new(NS).await;
    let sim = fx.simulated_runtime_pod(RT, Mode::Live).await;
    let (run, uid) = running_run(&fx, &sim).await;
    let rt = &sim.runtimed;
    rt.print(&uid, Stream::Stdout, "x1\nx2\n").unwrap();
    let (mut child, rx) = follow(&log_path(NS, &run, "?follow=true"));
    for want in ["x1", "x2"] {
        let r = next(&rx);
        assert_eq!(r["message"], want);
        assert!(
            r["source"].is_null(),
            "records from the log, not live output: {r}"
        );
    }
    rt.print(&uid, Stream::Stdout, "x3\n").unwrap();
    assert_eq!(next(&rx)["message"], "x3");
    // The Run ends in a later second than its first line (completionTime has
    // whole seconds): its records were not all written at its end.
    kruntimes_tests::env::into_a_later_second().await;
    end_run(&fx, &sim, &run, &uid, Phase::Succeeded).await;
    assert_eq!(next(&rx)["reason"], "RunFinished");
    let _ = child.wait();
    let log = get_raw(&log_path(NS, &run, ""));
    assert_eq!(messages(&log), ["x1", "x2", "x3"]);
    assert!(reasons(&log).is_empty(), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_or_refused_status_endpoint_is_said_and_never_dialled() {
    let fx = Fixtures::new(NS).await;
    // A Pod whose runtimed status endpoint does not listen.
    let pod = unique("quiet");
    let ip = free_loopback_ip(kruntimes_core::runtimed::DEFAULT_STATUS_PORT);
    let pod_uid = fx.create_runtime_pod(&pod, RT, ip).await;
    // The container runs and has written nothing yet.
    fx.append_log(&pod, &[]);
    let run = unique("live");
    let _uid = fx.create_run(&run, RT, "task", json!({})).await;
    fx.assign(&run, &pod, &pod_uid, &now_rfc3339()).await;
    let log = get_raw(&log_path(NS, &run, ""));
    assert!(messages(&log).is_empty());
    assert_eq!(reasons(&log), ["LiveOutputUnavailable"], "{log}");
    let note = log["notes"][0]["message"].as_str().unwrap_or_default();
    assert!(note.contains("unreachable"), "{note}");

    // A Pod whose address is the cloud metadata address is never dialled.
    let pod = unique("metadata");
    let pod_uid = fx
        .create_runtime_pod(&pod, RT, "169.254.169.254".parse().unwrap())
        .await;
    fx.append_log(&pod, &[]);
    let run = unique("live");
    let _uid = fx.create_run(&run, RT, "task", json!({})).await;
    fx.assign(&run, &pod, &pod_uid, &now_rfc3339()).await;
    let log = get_raw(&log_path(NS, &run, ""));
    assert_eq!(reasons(&log), ["LiveOutputUnavailable"], "{log}");
    let note = log["notes"][0]["message"].as_str().unwrap_or_default();
    assert!(note.contains("not one the Console dials"), "{note}");
    assert!(
        !note.contains("169.254"),
        "no address in the answer: {note}"
    );
}
