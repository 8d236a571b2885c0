//! The aggregated Run-log API end to end: kubectl → kube-apiserver →
//! aggregated listener → pods/log → fake kubelet, with the real RBAC.

use std::sync::mpsc;
use std::time::Duration;

use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1::APIService;
use kruntimes_tests::env::{Fixtures, env, log_path, now_rfc3339, runtimed_line, unique};
use kruntimes_tests::stream::{self, next_message};
use serde_json::Value;

const NS: &str = "team-a";

fn get_raw(token: Option<&str>, path: &str) -> (bool, String, String) {
    let out = env().kubectl(token, &["get", "--raw", path]);
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn messages(body: &str) -> Vec<String> {
    let v: Value = serde_json::from_str(body).unwrap_or_else(|e| panic!("not JSON ({e}): {body}"));
    v["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["message"].as_str().unwrap_or_default().to_owned())
        .collect()
}

/// A Pod shared by two Runs, with noise that must never leak into either.
struct Scenario {
    fx: Fixtures,
    pod: String,
    run_a: String,
    uid_a: String,
    run_b: String,
    uid_b: String,
}

async fn scenario(ns: &str) -> Scenario {
    let fx = Fixtures::new(ns).await;
    let pod = unique("pool");
    let pod_uid = fx.create_pod(&pod, "bash").await;
    let run_a = unique("run-a");
    let run_b = unique("run-b");
    let uid_a = fx
        .create_run(&run_a, "bash", "task", serde_json::json!({}))
        .await;
    let uid_b = fx
        .create_run(&run_b, "bash", "task", serde_json::json!({}))
        .await;
    let start = now_rfc3339();
    fx.assign(&run_a, &pod, &pod_uid, &start).await;
    fx.assign(&run_b, &pod, &pod_uid, &start).await;
    let a = |m: &str| runtimed_line(&uid_a, &run_a, ns, &pod, "stdout", m);
    let b = |m: &str| runtimed_line(&uid_b, &run_b, ns, &pod, "stdout", m);
    let lines = vec![
        "runtimed starting (plain text)".to_owned(),
        a("a1"),
        b(&format!("b1 mentions {uid_a}")),
        format!("not json at all {uid_a}"),
        a("a2"),
        format!(r#"{{"message":"no run_uid here {uid_a}","stream":"stdout"}}"#),
        format!(r#"["{uid_a}","array line"]"#),
        runtimed_line(&uid_a, &run_a, ns, &pod, "stderr", "a3 on stderr"),
        b("b2"),
        format!(r#"{{"run_uid":"{uid_a}-other","message":"superstring uid"}}"#),
        a("a4"),
        b(&format!("{{\"run_uid\":\"{uid_a}\"}} as text")),
        a("a5"),
        "trailing noise".to_owned(),
    ];
    fx.append_log(&pod, &lines);
    Scenario {
        fx,
        pod,
        run_a,
        uid_a,
        run_b,
        uid_b,
    }
}

#[tokio::test]
async fn apiservice_is_available_and_discoverable() {
    let e = env();
    let apiservices: kube::Api<APIService> = kube::Api::all(e.admin().await);
    let apiservice = apiservices
        .get("v1alpha1.logs.kruntimes.io")
        .await
        .expect("the APIService");
    let available = apiservice
        .status
        .and_then(|s| s.conditions)
        .unwrap_or_default()
        .into_iter()
        .find(|c| c.type_ == "Available")
        .map(|c| c.status);
    assert_eq!(available.as_deref(), Some("True"));

    let (ok, body, err) = get_raw(Some(e.token("viewer")), "/apis/logs.kruntimes.io/v1alpha1");
    assert!(ok, "{err}");
    let list: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list["kind"], "APIResourceList");
    let res = &list["resources"][0];
    assert_eq!(res["name"], "runs/log");
    assert_eq!(res["namespaced"], true);
    assert_eq!(res["verbs"], serde_json::json!(["get"]));

    // kubectl api-resources succeeds for the group (client-go lists only
    // top-level resources, so the subresource is checked in discovery above).
    let out = e.kubectl(
        Some(e.token("admin")),
        &["api-resources", "--api-group=logs.kruntimes.io"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Aggregated discovery (v2) through kube-apiserver names runs/log.
    let (code, body) = e.curl(
        &format!("{}/apis", e.var("TESTENV_APISERVER")),
        &[
            "--cacert",
            e.var("TESTENV_CA"),
            "-H",
            &format!("Authorization: Bearer {}", e.token("admin")),
            "-H",
            "Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
        ],
    );
    assert_eq!(code, 200);
    let doc: Value = serde_json::from_str(&body).unwrap();
    let group = doc["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["metadata"]["name"] == "logs.kruntimes.io")
        .expect("logs.kruntimes.io in aggregated discovery");
    let run = &group["versions"][0]["resources"][0];
    assert_eq!(run["resource"], "runs");
    assert_eq!(run["subresources"][0]["subresource"], "log");
    assert_eq!(run["subresources"][0]["verbs"], serde_json::json!(["get"]));

    // OpenAPI v3 of the group is published through kube-apiserver.
    let (ok, body, err) = get_raw(
        Some(e.token("admin")),
        "/openapi/v3/apis/logs.kruntimes.io/v1alpha1",
    );
    assert!(ok, "{err}");
    assert!(body.contains("RunLog"));
}

#[tokio::test]
async fn tail_returns_exactly_the_runs_records_in_order() {
    let s = scenario(NS).await;
    let viewer = env().token("viewer");
    let (ok, body, err) = get_raw(Some(viewer), &log_path(NS, &s.run_a, "?tailLines=10"));
    assert!(ok, "{err}");
    assert_eq!(messages(&body), ["a1", "a2", "a3 on stderr", "a4", "a5"]);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["kind"], "RunLog");
    assert_eq!(v["metadata"]["uid"], s.uid_a.as_str());
    assert_eq!(v["truncated"], false);
    assert_eq!(v["records"][0]["pod"], s.pod.as_str());
    assert!(
        v["records"][0]["time"]
            .as_str()
            .is_some_and(|t| t.starts_with("20")),
        "time is known"
    );

    let (ok, body, _) = get_raw(Some(viewer), &log_path(NS, &s.run_a, "?tailLines=2"));
    assert!(ok);
    assert_eq!(messages(&body), ["a4", "a5"]);
    let v: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(v["truncated"], true);
    assert_eq!(v["truncatedBy"], "tailLines");

    let (ok, body, _) = get_raw(Some(viewer), &log_path(NS, &s.run_a, "?stream=stderr"));
    assert!(ok);
    assert_eq!(messages(&body), ["a3 on stderr"]);

    // The other Run sees only its own records, although they name A's UID.
    let (ok, body, _) = get_raw(Some(viewer), &log_path(NS, &s.run_b, ""));
    assert!(ok);
    let mb = messages(&body);
    assert_eq!(mb.len(), 3);
    assert!(
        mb.iter()
            .all(|m| m.starts_with("b") || m.contains("as text")),
        "{mb:?}"
    );
    assert!(!body.contains("\"a1\""));
    let _ = (&s.uid_b, &s.run_b);
}

#[tokio::test]
async fn limit_bytes_bounds_the_response() {
    let s = scenario(NS).await;
    let (ok, body, err) = get_raw(
        Some(env().token("viewer")),
        &log_path(NS, &s.run_a, "?limitBytes=3"),
    );
    assert!(ok, "{err}");
    assert_eq!(messages(&body), ["a5"]);
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["truncatedBy"],
        "limitBytes"
    );
}

/// Does `text` hold run A's first record? (Its message, as a JSON field: the
/// bare "a1" also occurs in the random hex of generated names.)
fn carries_record(text: &str) -> bool {
    text.contains(r#""message":"a1""#)
}

#[tokio::test]
async fn access_is_checked_and_denials_carry_no_log_lines() {
    let e = env();
    let s = scenario(NS).await;
    let path = log_path(NS, &s.run_a, "");

    let (ok, body, err) = get_raw(Some(e.token("outsider")), &path);
    assert!(!ok);
    assert!(
        err.contains("Forbidden") || err.contains("forbidden"),
        "{err}"
    );
    assert!(!carries_record(&body) && !carries_record(&err));

    let (ok, _, err) = get_raw(Some("not-a-valid-token"), &path);
    assert!(!ok);
    assert!(err.contains("Unauthorized"), "{err}");

    // No credential at all (kubectl would prompt, so curl speaks for it).
    let (code, body) = e.curl(
        &format!("{}{path}", e.var("TESTENV_APISERVER")),
        &["--cacert", e.var("TESTENV_CA")],
    );
    assert_eq!(code, 401, "{body}");
    assert!(!carries_record(&body));

    // The viewer's rights end at team-a.
    let sb = scenario("team-b").await;
    let (ok, body, err) = get_raw(Some(e.token("viewer")), &log_path("team-b", &sb.run_a, ""));
    assert!(!ok);
    assert!(err.contains("forbidden"), "{err}");
    assert!(!carries_record(&body) && !carries_record(&err));
    // The admin reads it, and the check above would see a record.
    let (ok, body, _) = get_raw(Some(e.token("admin")), &log_path("team-b", &sb.run_a, ""));
    assert!(ok && carries_record(&body), "{body}");
    let (ok, body, _) = get_raw(
        Some(e.token("admin")),
        &log_path("team-b", &sb.run_a, "?tailLines=1"),
    );
    assert!(ok);
    assert_eq!(messages(&body), ["a5"]);
}

#[tokio::test]
async fn bad_parameters_and_names_are_400_with_a_reason() {
    let s = scenario(NS).await;
    let viewer = env().token("viewer");
    let cases = [
        ("?tailLines=0", "tailLines"),
        ("?tailLines=-1", "tailLines"),
        ("?tailLines=501", "tailLines"),
        ("?tailLines=abc", "tailLines"),
        ("?limitBytes=1048577", "limitBytes"),
        ("?follow=maybe", "follow"),
        ("?stream=both", "stream"),
        ("?container=x", "unknown parameter"),
    ];
    for (q, word) in cases {
        let (ok, _, err) = get_raw(Some(viewer), &log_path(NS, &s.run_a, q));
        assert!(!ok, "{q} accepted");
        assert!(
            err.contains("BadRequest") && err.contains(word),
            "{q}: {err}"
        );
    }
    let (ok, _, err) = get_raw(Some(viewer), &log_path(NS, "Bad_Name", ""));
    assert!(!ok);
    assert!(
        err.contains("BadRequest") && err.contains("not a valid name"),
        "{err}"
    );
}

#[tokio::test]
async fn missing_and_unassigned_runs() {
    let fx = Fixtures::new(NS).await;
    let viewer = env().token("viewer");
    let (ok, _, err) = get_raw(Some(viewer), &log_path(NS, "no-such-run", ""));
    assert!(!ok);
    assert!(err.contains("NotFound"), "{err}");

    let run = unique("pending");
    fx.create_run(&run, "bash", "task", serde_json::json!({}))
        .await;
    let (ok, _, err) = get_raw(Some(viewer), &log_path(NS, &run, ""));
    assert!(!ok);
    assert!(
        err.contains("Conflict") && err.contains("not yet assigned"),
        "{err}"
    );
}

#[tokio::test]
async fn replaced_pod_returns_none_of_its_lines() {
    let s = scenario(NS).await;
    s.fx.delete_pod(&s.pod).await;
    let viewer = env().token("viewer");
    let (ok, _, err) = get_raw(Some(viewer), &log_path(NS, &s.run_a, ""));
    assert!(!ok);
    assert!(
        err.contains("NotFound") && err.contains("no longer exists"),
        "{err}"
    );

    // A new Pod with the same name: even lines carrying the Run's UID stay hidden.
    std::fs::remove_file(s.fx.log_path(&s.pod)).ok();
    s.fx.create_pod(&s.pod, "bash").await;
    s.fx.append_log(
        &s.pod,
        &[runtimed_line(
            &s.uid_a,
            &s.run_a,
            NS,
            &s.pod,
            "stdout",
            "from the new pod",
        )],
    );
    let (ok, body, err) = get_raw(Some(viewer), &log_path(NS, &s.run_a, ""));
    assert!(!ok);
    assert!(
        err.contains("NotFound") && err.contains("replaced"),
        "{err}"
    );
    assert!(!body.contains("from the new pod") && !err.contains("from the new pod"));
}

#[tokio::test]
async fn oversized_line_is_bounded() {
    let s = scenario(NS).await;
    let huge = "x".repeat(5 << 20);
    // runtimed's field order (run_uid first), then the UID after the message.
    s.fx.append_log(
        &s.pod,
        &[runtimed_line(
            &s.uid_a, &s.run_a, NS, &s.pod, "stdout", &huge,
        )],
    );
    let late =
        serde_json::json!({"message": huge, "pod": s.pod, "run_uid": s.uid_a, "stream": "stderr"});
    s.fx.append_log(&s.pod, &[late.to_string()]);
    s.fx.append_log(
        &s.pod,
        &[runtimed_line(
            &s.uid_a, &s.run_a, NS, &s.pod, "stdout", "after",
        )],
    );
    let (ok, body, err) = get_raw(
        Some(env().token("viewer")),
        &log_path(NS, &s.run_a, "?tailLines=3"),
    );
    assert!(ok, "{err}");
    assert!(body.len() < 64 << 10, "response is {} bytes", body.len());
    let v: Value = serde_json::from_str(&body).unwrap();
    for i in 0..2 {
        assert_eq!(v["records"][i]["truncated"], true, "{body}");
        assert!(
            v["records"][i]["message"]
                .as_str()
                .unwrap()
                .contains("exceeds")
        );
    }
    assert_eq!(v["records"][1]["stream"], "stderr");
    assert_eq!(v["records"][2]["message"], "after");
}

/// Reads NDJSON lines of a `kubectl get --raw` follow in a thread.
fn follow(token: &str, path: &str) -> (std::process::Child, mpsc::Receiver<String>) {
    stream::kubectl_follow(token, path)
}

#[tokio::test]
async fn follow_streams_new_lines_of_the_run_only_and_ends_with_the_pod() {
    let s = scenario(NS).await;
    let (mut child, rx) = follow(
        env().token("viewer"),
        &log_path(NS, &s.run_a, "?follow=true&tailLines=2"),
    );
    assert_eq!(next_message(&rx).as_deref(), Some("a4"));
    assert_eq!(next_message(&rx).as_deref(), Some("a5"));
    s.fx.append_log(
        &s.pod,
        &[
            runtimed_line(&s.uid_b, &s.run_b, NS, &s.pod, "stdout", "b-new"),
            runtimed_line(&s.uid_a, &s.run_a, NS, &s.pod, "stdout", "a-new"),
        ],
    );
    assert_eq!(
        next_message(&rx).as_deref(),
        Some("a-new"),
        "appended line arrives, b's does not"
    );
    s.fx.delete_pod(&s.pod).await;
    // The stream ends with a final Status saying why, and nothing else.
    let rest: Vec<String> = rx.iter().collect();
    assert_eq!(rest.len(), 1, "one final line after delete: {rest:?}");
    let status: Value = serde_json::from_str(&rest[0]).unwrap();
    assert_eq!(status["kind"], "Status", "{status}");
    assert_eq!(status["status"], "Failure", "{status}");
    assert_eq!(status["code"], 404, "{status}");
    assert_eq!(status["reason"], "NotFound", "{status}");
    let status = child.wait().expect("kubectl exit");
    assert!(status.success(), "kubectl follow ended with {status:?}");
}

#[tokio::test]
async fn follow_waits_for_assignment() {
    let fx = Fixtures::new(NS).await;
    let run = unique("later");
    let uid = fx
        .create_run(&run, "bash", "task", serde_json::json!({}))
        .await;
    let (mut child, rx) = follow(env().token("viewer"), &log_path(NS, &run, "?follow=true"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    let pod = unique("pool");
    let pod_uid = fx.create_pod(&pod, "bash").await;
    fx.append_log(
        &pod,
        &[runtimed_line(&uid, &run, NS, &pod, "stdout", "first")],
    );
    fx.assign(&run, &pod, &pod_uid, &now_rfc3339()).await;
    assert_eq!(next_message(&rx).as_deref(), Some("first"));
    fx.append_log(
        &pod,
        &[runtimed_line(&uid, &run, NS, &pod, "stdout", "second")],
    );
    assert_eq!(next_message(&rx).as_deref(), Some("second"));
    let _ = child.kill();
    fx.delete_pod(&pod).await;
}

#[tokio::test]
async fn a_finished_run_is_read_between_its_start_and_completion() {
    let fx = Fixtures::new(NS).await;
    let pod = unique("pool");
    let pod_uid = fx.create_pod(&pod, "bash").await;
    let run = unique("done");
    let uid = fx
        .create_run(&run, "bash", "task", serde_json::json!({}))
        .await;
    // The Run was created just now and cannot have older lines: its stretch
    // is placed after its creation (the node's stamps run ahead).
    let now = jiff::Timestamp::now();
    let at = |secs: i64| {
        (now + jiff::SignedDuration::from_secs(secs))
            .strftime("%Y-%m-%dT%H:%M:%S%.9fZ")
            .to_string()
    };
    let stamp = |secs: i64| {
        (now + jiff::SignedDuration::from_secs(secs))
            .strftime("%Y-%m-%dT%H:%M:%SZ")
            .to_string()
    };
    let line = |m: &str| runtimed_line(&uid, &run, NS, &pod, "stdout", m);
    fx.append_log_at(
        &pod,
        &[
            (at(6), line("before the start")),
            (at(20), line("one")),
            (at(40), line("two")),
            // Written well after completion (past the 30 s slack): a finished Run cannot have it.
            (at(100), line("after the end")),
            (at(101), "unrelated trailing line".to_owned()),
        ],
    );
    fx.set_run_status(
        &run,
        serde_json::json!({"phase": "Succeeded", "assignedPod": pod, "assignedPodUID": pod_uid,
                           "startTime": stamp(12), "completionTime": stamp(60)}),
    )
    .await;
    let (ok, body, err) = get_raw(Some(env().token("viewer")), &log_path(NS, &run, ""));
    assert!(ok, "{err}");
    assert_eq!(messages(&body), ["one", "two"]);

    // Following a finished Run gives its tail and ends, saying so.
    let (mut child, rx) = follow(env().token("viewer"), &log_path(NS, &run, "?follow=true"));
    assert_eq!(next_message(&rx).as_deref(), Some("one"));
    assert_eq!(next_message(&rx).as_deref(), Some("two"));
    let rest: Vec<String> = rx.iter().collect();
    assert_eq!(rest.len(), 1, "{rest:?}");
    let status: Value = serde_json::from_str(&rest[0]).unwrap();
    assert_eq!(
        status,
        serde_json::json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
            "status": "Success", "code": 200, "reason": "RunFinished",
            "message": "the Run finished: Succeeded"})
    );
    assert!(child.wait().unwrap().success());
}
