//! `runs/log?search=…` end to end: kubectl → kube-apiserver → aggregated
//! listener → pods/log → fake kubelet, and the Console's `/api` path, with
//! the real RBAC: substrings, regular expressions, case, context, paging to
//! the end, bad input, refused callers, live output and a runtimed restart.

use std::time::Duration;

use kruntimes_tests::curl::{self, Body, Reply, bearer};
use kruntimes_tests::env::{Fixtures, env, log_path, now_rfc3339, runtimed_line, unique};
use kruntimes_tests::runtime_pod::SimulatedRuntimePod;
use kruntimes_tests::sim::cri::Stream;
use kruntimes_tests::sim::runtimed::Mode;
use serde_json::{Value, json};

const NS: &str = "team-a";

fn get_raw(token: &str, path: &str) -> (bool, String, String) {
    let out = env().kubectl(Some(token), &["get", "--raw", path]);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A search as the viewer; panics unless it is answered.
fn search(run: &str, query: &str) -> Value {
    let (ok, body, err) = get_raw(env().token("viewer"), &log_path(NS, run, query));
    assert!(ok, "{query}: {err}");
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"))
}

fn records(v: &Value) -> &Vec<Value> {
    v["records"].as_array().expect("records")
}

/// Messages, matches marked with `*`.
fn shown(v: &Value) -> Vec<String> {
    records(v)
        .iter()
        .map(|r| {
            let m = r["message"].as_str().unwrap_or_default();
            if r["match"] == true {
                format!("*{m}")
            } else {
                m.to_owned()
            }
        })
        .collect()
}

fn lines(v: &Value) -> Vec<u64> {
    records(v)
        .iter()
        .map(|r| r["line"].as_u64().expect("a line number"))
        .collect()
}

/// Percent-encodes a query value.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// A Pod shared by Run A and Run B, plus noise naming A's UID: A's records
/// are `record <i>: ok` or, for every 7th, `record <i>: ERROR disk full`
/// (every 5th on stderr), then one `record 31: error in lower case`.
struct Shared {
    fx: Fixtures,
    run_a: String,
    run_b: String,
}

async fn shared(ns: &str) -> Shared {
    let fx = Fixtures::new(ns).await;
    let pod = unique("pool");
    let pod_uid = fx.create_pod(&pod, "bash").await;
    let run_a = unique("run-a");
    let run_b = unique("run-b");
    let uid_a = fx.create_run(&run_a, "bash", "task", json!({})).await;
    let uid_b = fx.create_run(&run_b, "bash", "task", json!({})).await;
    let start = now_rfc3339();
    fx.assign(&run_a, &pod, &pod_uid, &start).await;
    fx.assign(&run_b, &pod, &pod_uid, &start).await;
    let mut log = vec!["runtimed starting: ERROR free noise".to_owned()];
    for i in 1..=30 {
        let msg = if i % 7 == 0 {
            format!("record {i}: ERROR disk full")
        } else {
            format!("record {i}: ok")
        };
        let stream = if i % 5 == 0 { "stderr" } else { "stdout" };
        log.push(runtimed_line(&uid_a, &run_a, ns, &pod, stream, &msg));
        log.push(runtimed_line(
            &uid_b,
            &run_b,
            ns,
            &pod,
            "stdout",
            &format!("other ERROR {i} naming {uid_a}"),
        ));
        if i % 10 == 0 {
            log.push(format!("plain ERROR text naming {uid_a}"));
        }
    }
    log.push(runtimed_line(
        &uid_a,
        &run_a,
        ns,
        &pod,
        "stdout",
        "record 31: error in lower case",
    ));
    fx.append_log(&pod, &log);
    Shared { fx, run_a, run_b }
}

#[tokio::test]
async fn substring_regex_case_and_context_over_the_runs_records_only() {
    let s = shared(NS).await;

    let v = search(&s.run_a, "?search=ERROR&context=1");
    assert_eq!(
        shown(&v),
        [
            "record 6: ok",
            "*record 7: ERROR disk full",
            "record 8: ok",
            "record 13: ok",
            "*record 14: ERROR disk full",
            "record 15: ok",
            "record 20: ok",
            "*record 21: ERROR disk full",
            "record 22: ok",
            "record 27: ok",
            "*record 28: ERROR disk full",
            "record 29: ok",
        ],
        "{v}"
    );
    assert_eq!(lines(&v), [6, 7, 8, 13, 14, 15, 20, 21, 22, 27, 28, 29]);
    assert_eq!(
        v["search"],
        json!({"matches": 4, "total": 4, "totalCapped": false})
    );
    assert_eq!(v["truncated"], false);
    assert_eq!(v["kind"], "RunLog");
    // Records are a tail's: cursor, time, stream, pod.
    let r = &records(&v)[1];
    assert!(r["cursor"].as_str().is_some_and(|c| c.contains('-')), "{r}");
    assert!(
        r["time"].as_str().is_some_and(|t| t.starts_with("20")),
        "{r}"
    );
    assert_eq!(records(&v)[5]["stream"], "stderr", "record 15");

    // The default context is 2; a substring is case-sensitive.
    let v = search(&s.run_a, "?search=ERROR");
    assert_eq!(records(&v).len(), 20, "{v}");
    let v = search(&s.run_a, "?search=error&context=0");
    assert_eq!(shown(&v), ["*record 31: error in lower case"]);
    assert_eq!(lines(&v), [31]);
    let v = search(&s.run_a, "?search=error&ignoreCase=true&context=0");
    assert_eq!(v["search"]["total"], 5, "{v}");
    assert_eq!(lines(&v), [7, 14, 21, 28, 31]);

    // A literal substring is not a pattern.
    let v = search(&s.run_a, &format!("?search={}&context=0", enc("d: E")));
    assert_eq!(v["search"]["total"], 0, "{v}");
    let v = search(&s.run_a, &format!("?search={}&context=0", enc("7: E")));
    assert_eq!(lines(&v), [7]);

    // Regular expressions, also case-insensitive.
    let v = search(
        &s.run_a,
        &format!(
            "?search={}&regex=true&context=0",
            enc(r"^record \d+: ERROR")
        ),
    );
    assert_eq!(lines(&v), [7, 14, 21, 28]);
    let v = search(
        &s.run_a,
        &format!(
            "?search={}&regex=true&ignoreCase=true&context=0",
            enc(r"(disk|LOWER) ")
        ),
    );
    assert_eq!(lines(&v), [7, 14, 21, 28, 31]);

    // Overlapping context is merged: each record once, in log order.
    let v = search(
        &s.run_a,
        &format!("?search={}&regex=true&context=2", enc(r"^record 1[0-2]:")),
    );
    assert_eq!(lines(&v), [8, 9, 10, 11, 12, 13, 14], "{v}");
    let marked: Vec<bool> = records(&v).iter().map(|r| r["match"] == true).collect();
    assert_eq!(marked, [false, false, true, true, true, false, false]);

    // stream= filters matches and context; line numbers count the streams
    // asked for, as a tail's do (the same record, the same number).
    let v = search(&s.run_a, "?search=record&stream=stderr&context=1");
    assert_eq!(lines(&v), [1, 2, 3, 4, 5, 6]);
    assert!(records(&v).iter().all(|r| r["stream"] == "stderr"));
    let tail = search(&s.run_a, "?stream=stderr&tailLines=6");
    assert_eq!(lines(&tail), [1, 2, 3, 4, 5, 6], "{tail}");
    let cursors =
        |v: &Value| -> Vec<Value> { records(v).iter().map(|r| r["cursor"].clone()).collect() };
    assert_eq!(cursors(&tail), cursors(&v), "{tail}");

    // The other Run's records and the noise never answer, although they
    // hold the text and A's UID.
    let v = search(&s.run_a, "?search=other&context=0");
    assert_eq!(v["search"]["total"], 0);
    let v = search(&s.run_a, "?search=naming&context=0");
    assert!(records(&v).is_empty(), "{v}");
    let v = search(&s.run_b, "?search=ERROR&context=0&tailLines=500");
    assert_eq!(v["search"]["total"], 30);
    assert!(
        shown(&v).iter().all(|m| m.starts_with("*other ERROR")),
        "{v}"
    );
}

#[tokio::test]
async fn paging_with_since_cursor_reaches_every_match_once() {
    let fx = Fixtures::new(NS).await;
    let pod = unique("pool");
    let pod_uid = fx.create_pod(&pod, "bash").await;
    let run = unique("pages");
    let uid = fx.create_run(&run, "bash", "task", json!({})).await;
    fx.assign(&run, &pod, &pod_uid, &now_rfc3339()).await;
    let log: Vec<String> = (1..=100)
        .map(|i| {
            let msg = if i % 3 == 0 {
                format!("hit {i}")
            } else {
                format!("miss {i}")
            };
            runtimed_line(&uid, &run, NS, &pod, "stdout", &msg)
        })
        .collect();
    fx.append_log(&pod, &log);

    let want: Vec<String> = (1..=100)
        .filter(|i| i % 3 == 0)
        .map(|i| format!("hit {i}"))
        .collect();
    let mut got: Vec<String> = Vec::new();
    let mut cursor: Option<String> = None;
    let mut pages = 0;
    loop {
        pages += 1;
        assert!(pages <= 20, "paging does not end");
        let q = match &cursor {
            None => "?search=hit&context=1&tailLines=4".to_owned(),
            Some(c) => format!("?search=hit&context=1&tailLines=4&sinceCursor={c}"),
        };
        let v = search(&run, &q);
        assert_eq!(v["search"]["total"], 33, "the whole window is counted: {v}");
        let matches: Vec<&Value> = records(&v).iter().filter(|r| r["match"] == true).collect();
        assert_eq!(v["search"]["matches"], matches.len(), "{v}");
        got.extend(
            matches
                .iter()
                .map(|r| r["message"].as_str().unwrap().to_owned()),
        );
        // Context is never a match, and within a page no record comes twice.
        let mut cursors: Vec<&str> = records(&v)
            .iter()
            .map(|r| r["cursor"].as_str().unwrap())
            .collect();
        let n = cursors.len();
        cursors.dedup();
        assert_eq!(cursors.len(), n, "{v}");
        if v["truncated"] == false {
            break;
        }
        assert_eq!(v["truncatedBy"], "tailLines", "{v}");
        assert_eq!(matches.len(), 4);
        // The last match's context follows it in the page.
        assert!(
            records(&v)
                .last()
                .is_some_and(|r| r["message"].as_str().unwrap().starts_with("miss")),
            "{v}"
        );
        cursor = Some(
            matches.last().unwrap()["cursor"]
                .as_str()
                .unwrap()
                .to_owned(),
        );
    }
    assert_eq!(got, want, "every match exactly once, in order");
    assert_eq!(pages, 9);

    // limitBytes bounds a page too, and paging goes on from its last match.
    let v = search(&run, "?search=hit&context=0&limitBytes=14");
    assert_eq!(shown(&v), ["*hit 3", "*hit 6"]);
    assert_eq!(v["truncatedBy"], "limitBytes");
}

#[tokio::test]
async fn bad_search_parameters_are_400_and_change_nothing() {
    let s = shared(NS).await;
    let viewer = env().token("viewer");
    let cursor = "1764601040.123456789-0";
    let cases = [
        ("?search=".to_owned(), "search must be 1 to 256 bytes"),
        (format!("?search={}", "x".repeat(257)), "got 257 bytes"),
        (
            format!("?search={}&regex=true", enc("a(b")),
            "not a valid regular expression",
        ),
        (
            format!("?search={}&regex=true", enc("(?<=a)b")),
            "not a valid regular expression",
        ),
        (
            format!("?search={}&regex=true", enc(r"\w{100}{100}")),
            "too large a regular expression",
        ),
        (
            "?search=x&regex=yes".to_owned(),
            "regex must be true or false",
        ),
        (
            "?search=x&ignoreCase=2".to_owned(),
            "ignoreCase must be true or false",
        ),
        (
            "?search=x&context=11".to_owned(),
            "context must be an integer from 0 to 10",
        ),
        ("?context=1".to_owned(), "context needs search"),
        ("?regex=true".to_owned(), "regex needs search"),
        (
            "?search=x&follow=true".to_owned(),
            "search cannot be combined with follow=true",
        ),
        (
            format!("?search=x&beforeCursor={cursor}"),
            "search cannot be combined with beforeCursor",
        ),
        ("?search=x&tailLines=501".to_owned(), "tailLines"),
        ("?search=x&search=y".to_owned(), "more than once"),
    ];
    for (q, want) in &cases {
        let (ok, body, err) = get_raw(viewer, &log_path(NS, &s.run_a, q));
        assert!(!ok, "{q} accepted: {body}");
        assert!(
            err.contains("BadRequest") && err.contains(want),
            "{q}: {err}"
        );
    }
    // The Run's log still answers as before.
    let v = search(&s.run_a, "?search=ERROR&context=0");
    assert_eq!(v["search"]["total"], 4);
}

#[tokio::test]
async fn a_caller_without_get_runs_log_gets_403_and_no_lines() {
    let s = shared(NS).await;
    let q = "?search=ERROR&context=10";
    let (ok, body, err) = get_raw(env().token("outsider"), &log_path(NS, &s.run_a, q));
    assert!(!ok);
    assert!(
        err.contains("Forbidden") || err.contains("forbidden"),
        "{err}"
    );
    for text in [&body, &err] {
        assert!(
            !text.contains("disk full") && !text.contains("record 6"),
            "{text}"
        );
    }
    // Bad input from a refused caller is refused too, without a read.
    let (ok, _, err) = get_raw(env().token("outsider"), &log_path(NS, &s.run_a, "?search="));
    assert!(!ok);
    assert!(
        err.contains("BadRequest") || err.contains("forbidden"),
        "{err}"
    );

    // The viewer's rights end at team-b; the admin reads it.
    let sb = shared("team-b").await;
    let (ok, body, err) = get_raw(env().token("viewer"), &log_path("team-b", &sb.run_a, q));
    assert!(!ok);
    assert!(err.contains("forbidden"), "{err}");
    assert!(!body.contains("disk full") && !err.contains("disk full"));
    let (ok, body, _) = get_raw(env().token("admin"), &log_path("team-b", &sb.run_a, q));
    assert!(ok && body.contains("disk full"), "{body}");
    let _ = (&s.fx, &s.run_b);
}

fn console_get(user: &str, path: &str) -> Reply {
    curl::request(
        "GET",
        &format!("{}{path}", env().var("CONSOLE_URL")),
        &[("Authorization", &bearer(user))],
        Body::None,
    )
}

#[tokio::test]
async fn the_consoles_api_path_searches_as_the_caller() {
    let s = shared(NS).await;
    let base = format!("/api/namespaces/{NS}/runs/{}/logs", s.run_a);
    let r = console_get("viewer", &format!("{base}?search=ERROR&context=0&tail=3"));
    assert_eq!(r.code, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(lines(&v), [7, 14, 21]);
    assert_eq!(v["truncatedBy"], "tailLines");
    assert_eq!(v["search"]["total"], 4);
    let last = records(&v)[2]["cursor"].as_str().unwrap().to_owned();
    let r = console_get(
        "viewer",
        &format!("{base}?search=ERROR&context=1&tail=3&sinceCursor={last}"),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    let v = r.json();
    assert_eq!(lines(&v), [27, 28, 29]);
    assert_eq!(v["truncated"], false);

    // Regex and case pass through, encoded.
    let r = console_get(
        "viewer",
        &format!(
            "{base}?search={}&regex=true&ignoreCase=true&context=0",
            enc("LOWER case$")
        ),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(lines(&r.json()), [31]);
    let r = console_get(
        "viewer",
        &format!("{base}?search={}&context=0", enc("d: E&x=1")),
    );
    assert_eq!(r.code, 200, "{}", r.body);
    assert!(records(&r.json()).is_empty());

    // The same strict parsing, before anything is forwarded.
    for (q, want) in [
        (
            format!("?search={}&regex=true", enc("a(")),
            "not a valid regular expression",
        ),
        (
            format!("?search={}&regex=true", enc(r"\w{100}{100}")),
            "too large a regular expression",
        ),
        (
            "?search=x&context=11".to_owned(),
            "context must be an integer from 0 to 10",
        ),
        (
            "?search=x&follow=true".to_owned(),
            "cannot be combined with follow=true",
        ),
        ("?ignoreCase=true".to_owned(), "ignoreCase needs search"),
    ] {
        let r = console_get("viewer", &format!("{base}{q}"));
        assert_eq!(r.code, 400, "{q}: {}", r.body);
        let msg = r.json()["error"]["message"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        assert!(msg.contains(want), "{q}: {msg}");
    }

    let r = console_get("outsider", &format!("{base}?search=ERROR"));
    assert_eq!(r.code, 403, "{}", r.body);
    assert!(!r.body.contains("disk full"));
}

/// A task Run assigned to `sim`'s Pod, running, its execution started.
async fn running_run(fx: &Fixtures, sim: &SimulatedRuntimePod, rt: &str) -> (String, String) {
    let run = unique("live");
    let uid = fx.create_run(&run, rt, "task", json!({})).await;
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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_output_and_both_containers_after_a_restart_are_searched() {
    const RT: &str = "live-engine";
    let fx = Fixtures::new(NS).await;

    // The engine's runtimed writes records at the Run's end: until then
    // the live output is searched.
    let sim = fx.simulated_runtime_pod(RT, Mode::Engine).await;
    let (run, uid) = running_run(&fx, &sim, RT).await;
    sim.runtimed
        .print(
            &uid,
            Stream::Stdout,
            "alpha\nbeta needle\ngamma\ndelta needle\n",
        )
        .unwrap();
    let v = search(&run, "?search=needle&context=1&tailLines=1");
    assert_eq!(shown(&v), ["alpha", "*beta needle", "gamma"], "{v}");
    assert_eq!(records(&v)[1]["source"], "status");
    assert_eq!(v["search"]["total"], 2);
    assert_eq!(v["truncatedBy"], "tailLines");
    let c = records(&v)[1]["cursor"].as_str().unwrap().to_owned();
    assert!(c.starts_with('L'), "{c}");
    let v = search(&run, &format!("?search=needle&context=1&sinceCursor={c}"));
    assert_eq!(shown(&v), ["gamma", "*delta needle"], "{v}");
    assert_eq!(v["truncated"], false);

    // runtimed writing records as they happen, restarted in the middle of
    // a Run: its records in both containers' logs, the previous one first.
    let sim = fx.simulated_runtime_pod(RT, Mode::Live).await;
    let (run, uid) = running_run(&fx, &sim, RT).await;
    sim.runtimed
        .print(&uid, Stream::Stdout, "one needle\ntwo\n")
        .unwrap();
    // Into a later second than the first records.
    kruntimes_tests::env::into_a_later_second().await;
    fx.restart_simulated_runtimed(&sim).await;
    sim.runtimed
        .print(&uid, Stream::Stdout, "three needle\n")
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(15);
    let v = loop {
        let v = search(&run, "?search=needle&context=0");
        if v["search"]["total"] == 2 || std::time::Instant::now() > deadline {
            break v;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(shown(&v), ["*one needle", "*three needle"], "{v}");
    assert_eq!(lines(&v), [1, 3]);
    assert!(records(&v).iter().all(|r| r["source"].is_null()), "{v}");
}
