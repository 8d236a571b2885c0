//! Paging a Run's log reaches every record exactly once: a property test
//! over the real API (kube-apiserver → aggregated listener → pods/log →
//! fake kubelet). A random Pod log (bursts of equal timestamps, small and
//! large lines, both streams, other Runs' records and noise that names the
//! Run) is paged back from the tail to the start and forward from the start
//! to the end; both must give exactly what was written for the Run, each
//! record with its stable line number. Then the log is rotated: a cursor
//! whose record is gone is answered 410 Gone, never with a silent skip.
//!
//! `PAGING_SEED=<n>` replays one case; the seed is printed on failure.

use std::time::Duration;

use futures::{AsyncBufReadExt, StreamExt};
use kruntimes_tests::env::{Fixtures, env, log_path, runtimed_line, unique};
use kube::Client;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

const NS: &str = "team-a";

/// One record the Run should have, in log order.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Want {
    stream: String,
    message: String,
}

/// A written Pod log and what it holds for the Run.
struct Written {
    /// `(timestamp, content)` lines in file order.
    lines: Vec<(String, String)>,
    /// For each line, the index of the Run's record it is, if it is one.
    record_at: Vec<Option<usize>>,
    wants: Vec<Want>,
}

fn message(rng: &mut StdRng, i: usize) -> String {
    let len = match rng.random_range(0..100) {
        0..=4 => rng.random_range(2_000..20_000),
        5..=9 => 0,
        _ => rng.random_range(1..200),
    };
    let mut m = format!("r{i} ");
    while m.len() < len {
        m.push(char::from(b'a' + rng.random_range(0..26u8)));
    }
    m
}

/// A random log of about `n` lines, stamped from `t0` on.
fn random_log(
    rng: &mut StdRng,
    n: usize,
    t0: jiff::Timestamp,
    run: (&str, &str),
    other: (&str, &str),
    pod: &str,
) -> Written {
    let (uid, name) = run;
    let mut out = Written {
        lines: Vec::new(),
        record_at: Vec::new(),
        wants: Vec::new(),
    };
    let mut t = t0;
    for i in 0..n {
        // Bursts: a third of the lines share the previous line's stamp.
        if i == 0 || rng.random_range(0..3) != 0 {
            t += jiff::SignedDuration::from_micros(rng.random_range(1..20_000));
        }
        let ts = t.strftime("%Y-%m-%dT%H:%M:%S%.9fZ").to_string();
        let stream = if rng.random_bool(0.8) {
            "stdout"
        } else {
            "stderr"
        };
        let (content, want) = match rng.random_range(0..10) {
            0..=5 => {
                let m = message(rng, i);
                let line = runtimed_line(uid, name, NS, pod, stream, &m);
                (
                    line,
                    Some(Want {
                        stream: stream.to_owned(),
                        message: m,
                    }),
                )
            }
            6 | 7 => {
                let m = message(rng, i);
                (runtimed_line(other.0, other.1, NS, pod, stream, &m), None)
            }
            // Noise that names the Run but is no record of it.
            8 => (
                format!("I1203 runtimed: scheduling {uid} (plain text)"),
                None,
            ),
            _ => (
                runtimed_line(other.0, other.1, NS, pod, "stdout", &format!("about {uid}")),
                None,
            ),
        };
        out.record_at.push(want.as_ref().map(|_| out.wants.len()));
        out.wants.extend(want);
        out.lines.push((ts, content));
    }
    out
}

/// `GET` of the Run's log through kube-apiserver: the answer, or the error's code and body.
async fn get(client: &Client, run: &str, query: &str) -> Result<Value, (u16, String)> {
    let req = http::Request::get(log_path(NS, run, query))
        .body(Vec::new())
        .expect("request");
    match client.request_text(req).await {
        Ok(text) => Ok(serde_json::from_str(&text).expect("a RunLog")),
        Err(kube::Error::Api(e)) => Err((e.code, e.message)),
        Err(e) => panic!("reading {run}'s log: {e}"),
    }
}

/// The first `want` lines of a follow (records, then its final Status).
async fn follow(client: &Client, run: &str, query: &str, want: usize) -> Vec<Value> {
    let req = http::Request::get(log_path(NS, run, query))
        .body(Vec::new())
        .expect("request");
    let body = client.request_stream(req).await.expect("a follow");
    let mut lines = body.lines();
    let mut out: Vec<Value> = Vec::new();
    while out.len() < want {
        let line = tokio::time::timeout(Duration::from_secs(30), lines.next())
            .await
            .unwrap_or_else(|_| panic!("{want} lines of {query} did not come: {out:?}"));
        let Some(line) = line else { break };
        let line = line.expect("a follow line");
        out.push(serde_json::from_str(&line).expect("an NDJSON line"));
        if out.last().is_some_and(|v| v["kind"] == json!("Status")) {
            break;
        }
    }
    out
}

fn records(page: &Value) -> Vec<Value> {
    page["records"].as_array().expect("records").clone()
}

fn want_of(r: &Value) -> Want {
    Want {
        stream: r["stream"].as_str().unwrap_or_default().to_owned(),
        message: r["message"].as_str().unwrap_or_default().to_owned(),
    }
}

/// Every record of the Run, paged back from the tail to the start.
async fn page_back(client: &Client, run: &str, bounds: &str, most: usize) -> Vec<Value> {
    let mut page = get(client, run, &format!("?{bounds}")).await.expect("tail");
    let mut all = records(&page);
    for _ in 0..most {
        if page["truncated"] != json!(true) {
            return all;
        }
        let first = all.first().expect("a truncated page has records")["cursor"]
            .as_str()
            .expect("cursor")
            .to_owned();
        page = get(client, run, &format!("?{bounds}&beforeCursor={first}"))
            .await
            .unwrap_or_else(|e| panic!("before {first}: {e:?}"));
        let mut older = records(&page);
        assert!(
            !older.is_empty() || page["truncated"] != json!(true),
            "an empty page says older records exist: {page}"
        );
        older.append(&mut all);
        all = older;
    }
    panic!("paging back did not reach the start in {most} pages");
}

/// Every record of the Run, paged forward from the start to the end.
async fn page_forward(client: &Client, run: &str, bounds: &str, most: usize) -> Vec<Value> {
    let mut page = get(client, run, &format!("?{bounds}&fromStart=true"))
        .await
        .expect("first page");
    let mut all = records(&page);
    for _ in 0..most {
        if page["truncated"] != json!(true) {
            return all;
        }
        let last = all.last().expect("a truncated page has records")["cursor"]
            .as_str()
            .expect("cursor")
            .to_owned();
        page = get(client, run, &format!("?{bounds}&sinceCursor={last}"))
            .await
            .unwrap_or_else(|e| panic!("after {last}: {e:?}"));
        all.extend(records(&page));
    }
    panic!("paging forward did not reach the end in {most} pages");
}

/// Checks one paging against what was written: every record exactly once,
/// in order, each with its stable line number.
fn check(how: &str, got: &[Value], wants: &[Want], seed: u64) {
    let got_wants: Vec<Want> = got.iter().map(want_of).collect();
    if got_wants != wants {
        let at = got_wants
            .iter()
            .zip(wants)
            .position(|(g, w)| g != w)
            .unwrap_or(got_wants.len().min(wants.len()));
        panic!(
            "seed {seed}: {how} gave {} records, {} were written; first difference at {at}: got {:?}, want {:?}",
            got_wants.len(),
            wants.len(),
            got_wants.get(at).map(|w| &w.message),
            wants.get(at).map(|w| &w.message)
        );
    }
    for (i, r) in got.iter().enumerate() {
        assert_eq!(
            r["line"],
            json!(i + 1),
            "seed {seed}: {how}: record {i} ({}) has line {}",
            r["cursor"],
            r["line"]
        );
    }
}

async fn every_record_exactly_once(finished: bool) {
    let seed: u64 = std::env::var("PAGING_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| rand::rng().random());
    eprintln!("PAGING_SEED={seed}");
    let mut rng = StdRng::seed_from_u64(seed);
    let fx = Fixtures::new(NS).await;
    let client = env().admin().await;
    let pod = unique("pool");
    let pod_uid = fx.create_pod(&pod, "bash").await;
    let run = unique("paged");
    let uid = fx.create_run(&run, "bash", "task", json!({})).await;
    let other = unique("other");
    let other_uid = fx.create_run(&other, "bash", "task", json!({})).await;
    let now = jiff::Timestamp::now();
    let secs = |s: i64| {
        (now + jiff::SignedDuration::from_secs(s))
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    };
    let mut written = random_log(
        &mut rng,
        2_500,
        now - jiff::SignedDuration::from_secs(3),
        (&uid, &run),
        (&other_uid, &other),
        &pod,
    );
    fx.append_log_at(&pod, &written.lines);
    let mut status = json!({"phase": "Running", "assignedPod": pod, "assignedPodUID": pod_uid,
                            "startTime": secs(0), "attempt": 1});
    if finished {
        status["phase"] = json!("Succeeded");
        status["completionTime"] = json!(secs(60));
    }
    fx.set_run_status(&run, status).await;

    let tail = rng.random_range(10..=100);
    let bytes = rng.random_range(64 << 10..=1 << 20);
    let bounds = format!("tailLines={tail}&limitBytes={bytes}");
    eprintln!("bounds: {bounds}, {} records", written.wants.len());
    let most = written.wants.len() + 10;
    let back = page_back(&client, &run, &bounds, most).await;
    check("paging back", &back, &written.wants, seed);
    let forward = page_forward(&client, &run, &bounds, most).await;
    check("paging forward", &forward, &written.wants, seed);
    let cursors = |rs: &[Value]| -> Vec<String> {
        rs.iter()
            .map(|r| r["cursor"].as_str().unwrap_or_default().to_owned())
            .collect()
    };
    assert_eq!(cursors(&back), cursors(&forward), "seed {seed}");

    if !finished {
        // A follow from a record is numbered on: its history, then what is
        // written while it is open.
        let from = written.wants.len() - 5;
        let cursor = back[from - 1]["cursor"].as_str().expect("cursor");
        // Stamped as a kubelet stamps what it receives: now, and never
        // before the log's last line (whose stamps ran ahead of the clock).
        let last_ts: jiff::Timestamp = written.lines.last().expect("lines").0.parse().expect("ts");
        let base = last_ts.max(jiff::Timestamp::now() + jiff::SignedDuration::from_secs(1));
        let next = |i: i64| {
            (base + jiff::SignedDuration::from_millis(i))
                .strftime("%Y-%m-%dT%H:%M:%S%.9fZ")
                .to_string()
        };
        let appended: Vec<(String, String)> = (1..=3)
            .map(|i| {
                let m = format!("appended {i}");
                (next(i), runtimed_line(&uid, &run, NS, &pod, "stdout", &m))
            })
            .collect();
        let fx2 = Fixtures::new(NS).await;
        let pod2 = pod.clone();
        let to_append = appended.clone();
        let writer = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(1500)).await;
            fx2.append_log_at(&pod2, &to_append);
        });
        let got = follow(
            &client,
            &run,
            &format!("?follow=true&sinceCursor={cursor}"),
            8,
        )
        .await;
        writer.await.expect("writer");
        let lines: Vec<Value> = got.iter().map(|r| r["line"].clone()).collect();
        let want: Vec<Value> = (from + 1..=from + 8).map(|n| json!(n)).collect();
        assert_eq!(lines, want, "seed {seed}: {got:?}");
        assert_eq!(got[7]["message"], json!("appended 3"), "seed {seed}");
        for (i, line) in appended.into_iter().enumerate() {
            written.record_at.push(Some(written.wants.len()));
            written.wants.push(Want {
                stream: "stdout".into(),
                message: format!("appended {}", i + 1),
            });
            written.lines.push(line);
        }
    }

    // The kubelet rotates the log: the older half is gone.
    // (Rotation keeps whole files; a burst of equal stamps split by the cut
    // would renumber the kept lines of the burst, and their cursors rightly
    // become 410s too: the cut is put between two stamps.)
    let mut cut = written.lines.len() / 2;
    while written.lines[cut].0 == written.lines[cut - 1].0 {
        cut += 1;
    }
    let kept = &written.lines[cut..];
    let rotated = fx.log_path(&pod).with_extension("rotated");
    std::fs::write(
        &rotated,
        kept.iter()
            .map(|(ts, l)| format!("{ts} stdout F {l}\n"))
            .collect::<String>(),
    )
    .expect("writing the rotated log");
    std::fs::rename(&rotated, fx.log_path(&pod)).expect("rotating the log");
    let first_kept = written.record_at[cut..]
        .iter()
        .flatten()
        .next()
        .copied()
        .expect("a record after the cut");
    let gone = written.record_at[..cut]
        .iter()
        .flatten()
        .last()
        .copied()
        .expect("a record before the cut");
    let gone_cursor = back[gone]["cursor"].as_str().expect("cursor");
    let ended = follow(
        &client,
        &run,
        &format!("?follow=true&sinceCursor={gone_cursor}"),
        1,
    )
    .await;
    assert_eq!(ended.len(), 1, "seed {seed}: {ended:?}");
    assert_eq!(
        (&ended[0]["kind"], &ended[0]["code"], &ended[0]["reason"]),
        (&json!("Status"), &json!(410), &json!("Gone")),
        "seed {seed}: a follow after a rotated record ends with 410: {ended:?}"
    );
    for param in ["sinceCursor", "beforeCursor"] {
        match get(&client, &run, &format!("?{param}={gone_cursor}")).await {
            Err((410, message)) => assert!(
                message.contains(gone_cursor) && message.contains("no longer"),
                "seed {seed}: {message}"
            ),
            other => {
                panic!("seed {seed}: {param} of a rotated record must be 410 Gone, got {other:?}")
            }
        }
    }
    // A cursor that names no line at all (one past its stamp's last).
    let mut bogus = back[first_kept]["cursor"]
        .as_str()
        .expect("cursor")
        .to_owned();
    bogus.push_str("99");
    assert!(
        matches!(
            get(&client, &run, &format!("?sinceCursor={bogus}")).await,
            Err((410, _))
        ),
        "seed {seed}: {bogus} names no record"
    );
    // What is left pages forward from a kept record, without a word lost.
    let from = back[first_kept]["cursor"].as_str().expect("cursor");
    let mut page = get(&client, &run, &format!("?tailLines=500&sinceCursor={from}"))
        .await
        .expect("after a kept record");
    let mut rest = records(&page);
    while page["truncated"] == json!(true) {
        let last = rest.last().expect("records")["cursor"]
            .as_str()
            .expect("cursor")
            .to_owned();
        page = get(&client, &run, &format!("?tailLines=500&sinceCursor={last}"))
            .await
            .expect("next page");
        rest.extend(records(&page));
    }
    let rest: Vec<Want> = rest.iter().map(want_of).collect();
    assert_eq!(rest, written.wants[first_kept + 1..], "seed {seed}");
    fx.delete_run(&run).await;
    fx.delete_run(&other).await;
    fx.delete_pod(&pod).await;
}

#[tokio::test]
async fn a_running_runs_log_pages_back_and_forth_without_a_record_lost() {
    every_record_exactly_once(false).await;
}

#[tokio::test]
async fn a_finished_runs_log_pages_back_and_forth_without_a_record_lost() {
    every_record_exactly_once(true).await;
}
