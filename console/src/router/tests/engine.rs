//! The Console's answers on objects shaped as the kruntimes engine writes
//! them: Runtimes with a Pod template and no `readyReplicas`, Runs without
//! field selectors and with the engine's conditions, WorkflowRuns without
//! start or completion times, with Action steps, a message and a snapshot.
//! The stand-in serves them to `eve-token` in namespace `eng`.

use axum::body::Body;
use http::{StatusCode, header};
use serde_json::{Value, json};

use super::{app, request, send, state};

const NS: &str = "eng";
const WR_UID: &str = "0b1c2d3e-wr-release";

fn owner(name: &str, uid: &str) -> Value {
    json!([{"apiVersion": "kruntimes.io/v1alpha1", "kind": "WorkflowRun", "name": name,
            "uid": uid, "controller": true, "blockOwnerDeletion": true}])
}

fn cond(t: &str, s: &str, reason: &str, msg: &str, at: &str) -> Value {
    json!({"type": t, "status": s, "reason": reason, "message": msg, "lastTransitionTime": at})
}

fn runtimes() -> Vec<Value> {
    vec![
        json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "Runtime",
               "metadata": {"name": "bash", "namespace": NS, "uid": "rt-bash",
                            "creationTimestamp": "2026-01-01T08:00:00Z"},
               "spec": {"replicas": 2, "template": {"spec": {"containers": [
                   {"name": "runtime", "image": "ghcr.io/kruntimes/runtime-bash:1.4"}]}}}}),
        json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "Runtime",
               "metadata": {"name": "gpu", "namespace": NS, "uid": "rt-gpu",
                            "creationTimestamp": "2026-01-01T08:00:00Z"},
               "spec": {"template": {"spec": {"containers": [
                   {"name": "runtime", "image": "ghcr.io/kruntimes/runtime-cuda:12"}]}},
                        "capacity": {"resources": {"runs": 4, "gpu": "2"}}},
               "status": {"readyReplicas": 0}}),
    ]
}

fn pod(name: &str, runtime: &str, annotations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                        "labels": {"runtime": runtime, "app": format!("kruntimes-{runtime}")},
                        "annotations": annotations},
           "spec": {"nodeName": "node-1", "containers": [
               {"name": "runtime", "image": "x"}, {"name": "runtimed", "image": "y"}]},
           "status": {"phase": "Running", "conditions": [
               {"type": "Ready", "status": "True"},
               {"type": "kruntimes.io/RuntimedReady", "status": "True", "reason": "Heartbeat"}]}})
}

fn pods() -> Vec<Value> {
    vec![
        pod("bash-0", "bash", json!({})),
        pod("bash-1", "bash", json!({})),
        pod(
            "gpu-0",
            "gpu",
            json!({"kruntimes.io/capacity.runs": "4", "kruntimes.io/capacity.gpu": "2"}),
        ),
    ]
}

#[allow(clippy::too_many_arguments)]
fn run(
    name: &str,
    runtime: &str,
    labels: Value,
    owners: Value,
    requests: Value,
    status: Value,
) -> Value {
    json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
           "metadata": {"name": name, "namespace": NS, "uid": format!("uid-{name}"),
                        "creationTimestamp": "2026-01-01T08:59:00Z",
                        "labels": labels, "ownerReferences": owners},
           "spec": {"runtime": runtime, "mode": {"task": {"args": ["x"]}},
                    "resources": {"requests": requests}},
           "status": status})
}

fn step_labels(job: &str, step: &str, action_step: Option<&str>) -> Value {
    let mut l = json!({"kruntimes.io/workflowrun-uid": WR_UID,
                       "kruntimes.io/workflow-job": job, "kruntimes.io/workflow-step": step});
    if let Some(a) = action_step {
        l["kruntimes.io/workflow-action-step"] = json!(a);
    }
    l
}

fn runs() -> Vec<Value> {
    let assigned = |pod: &str| {
        cond(
            "Scheduled",
            "True",
            "Assigned",
            &format!("assigned to pod {pod}"),
            "2026-01-01T09:00:00Z",
        )
    };
    vec![
        run(
            "r-done",
            "bash",
            step_labels("lint", "lint", None),
            owner("release", WR_UID),
            json!({}),
            json!({"phase": "Succeeded", "assignedPod": "bash-0", "assignedPodUID": "uid-bash-0",
                   "attempt": 1, "startTime": "2026-01-01T09:00:00Z",
                   "completionTime": "2026-01-01T09:05:00Z",
                   "conditions": [assigned("bash-0"),
                       cond("Running", "False", "Completed", "run completed", "2026-01-01T09:05:00Z"),
                       cond("Completed", "True", "RunCompleted", "run completed", "2026-01-01T09:05:00Z")]}),
        ),
        // A Run some other tool made for the step: no owner, no labels.
        run(
            "r-compile",
            "bash",
            json!({}),
            json!([]),
            json!({}),
            json!({"phase": "Succeeded", "assignedPod": "bash-0", "assignedPodUID": "uid-bash-0",
                   "startTime": "2026-01-01T09:06:00Z", "completionTime": "2026-01-01T09:08:00Z"}),
        ),
        run(
            "r-running",
            "bash",
            step_labels("build", "setup", Some("fetch")),
            owner("release", WR_UID),
            json!({}),
            json!({"phase": "Running", "assignedPod": "bash-0", "assignedPodUID": "uid-bash-0",
                   "startTime": "2026-01-01T10:00:00Z",
                   "conditions": [assigned("bash-0"),
                       cond("Running", "True", "Claimed", "claimed by runtimed", "2026-01-01T10:00:00Z")]}),
        ),
        run(
            "r-scheduled",
            "bash",
            json!({}),
            json!([]),
            json!({"runs": "2"}),
            json!({"phase": "Scheduled", "assignedPod": "bash-1", "assignedPodUID": "uid-bash-1",
                   "conditions": [assigned("bash-1")]}),
        ),
        run(
            "r-failed",
            "bash",
            json!({}),
            json!([]),
            json!({}),
            json!({"phase": "Failed", "assignedPod": "bash-1", "assignedPodUID": "uid-bash-1",
                   "attempt": 2, "message": "exit status 2",
                   "startTime": "2026-01-01T09:10:00Z", "completionTime": "2026-01-01T09:20:00Z",
                   "conditions": [assigned("bash-1"),
                       cond("Running", "False", "RuntimeExecute", "exit status 2", "2026-01-01T09:20:00Z"),
                       cond("Completed", "False", "RuntimeExecute", "exit status 2", "2026-01-01T09:20:00Z")]}),
        ),
        run(
            "r-waiting",
            "bash",
            json!({}),
            json!([]),
            json!({}),
            json!({"phase": "Pending",
                   "message": "waiting for available runtime pods for runtime bash"}),
        ),
        run(
            "g-1",
            "gpu",
            json!({}),
            json!([]),
            json!({"gpu": 1}),
            json!({"phase": "Running", "assignedPod": "gpu-0", "assignedPodUID": "uid-gpu-0",
                   "startTime": "2026-01-01T10:00:00Z"}),
        ),
    ]
}

fn workflowruns() -> Vec<Value> {
    vec![
        json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "WorkflowRun",
               "metadata": {"name": "release", "namespace": NS, "uid": WR_UID,
                            "generateName": "release-", "creationTimestamp": "2026-01-01T08:58:00Z"},
               "spec": {"jobs": {
                   "lint": {"runs-on": "bash", "steps": [{"name": "lint", "run": "make lint"}]},
                   "build": {"runs-on": "bash", "needs": ["lint"], "steps": [
                       {"name": "compile", "run": "make"},
                       {"name": "setup", "uses": "checkout", "with": {"ref": "main"}}]}}},
               "status": {"phase": "Running", "snapshotName": "release-snapshot-7f3a",
                          "jobs": {
                   "lint": {"phase": "Succeeded", "steps": [
                       {"name": "lint", "phase": "Succeeded", "runName": "r-done"}]},
                   "build": {"phase": "Running", "pre": ["lint"], "steps": [
                       {"name": "compile", "phase": "Succeeded", "runName": "r-compile"},
                       {"name": "setup", "phase": "Running", "actionSteps": [
                           {"name": "fetch", "phase": "Running", "runName": "r-running"},
                           {"name": "unpack", "phase": "Pending"}]}]}}}}),
        json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "WorkflowRun",
               "metadata": {"name": "deploy", "namespace": NS, "uid": "wr-deploy",
                            "creationTimestamp": "2026-01-01T09:09:00Z"},
               "spec": {"jobs": {
                   "test": {"runs-on": "bash", "steps": [{"name": "test", "run": "make test"}]},
                   "ship": {"runs-on": "bash", "needs": ["test"], "steps": [
                       {"name": "ship", "uses": "deploy-action"}]}}},
               "status": {"phase": "Failed",
                          "message": "Action \"deploy-action\" not found in namespace eng",
                          "jobs": {
                   "test": {"phase": "Failed", "steps": [
                       {"name": "test", "phase": "Failed", "runName": "r-failed"}]},
                   "ship": {"phase": "Skipped"}}}}),
    ]
}

fn event(name: &str, kind: &str, obj: &str, uid: &str, reason: &str, msg: &str, at: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Event",
           "metadata": {"name": name, "namespace": NS},
           "involvedObject": {"kind": kind, "name": obj, "uid": uid, "namespace": NS},
           "reason": reason, "message": msg, "type": "Warning",
           "firstTimestamp": at, "lastTimestamp": at, "count": 1,
           "source": {"component": "kruntimes"}})
}

fn events() -> Vec<Value> {
    vec![
        event(
            "e1",
            "Run",
            "r-failed",
            "uid-r-failed",
            "RunFailedRetrying",
            "Run failed (attempt 1/2), retrying in 10s. Reason: RuntimeExecute: exit status 1",
            "2026-01-01T09:12:00Z",
        ),
        event(
            "e2",
            "Run",
            "r-failed",
            "uid-r-failed",
            "RunRetrying",
            "Retry attempt 2/2 starting",
            "2026-01-01T09:13:00Z",
        ),
        event(
            "e3",
            "Run",
            "r-failed",
            "uid-r-failed",
            "RunRetriesExhausted",
            "Run failed after 2 attempts: RuntimeExecute: exit status 2",
            "2026-01-01T09:20:00Z",
        ),
        // The Pod's events: only the one inside r-failed's window is its.
        event(
            "p1",
            "Pod",
            "bash-1",
            "uid-bash-1",
            "Pulled",
            "image pulled",
            "2026-01-01T08:00:00Z",
        ),
        event(
            "p2",
            "Pod",
            "bash-1",
            "uid-bash-1",
            "Unhealthy",
            "readiness probe failed",
            "2026-01-01T09:15:00Z",
        ),
        event(
            "p3",
            "Pod",
            "bash-1",
            "uid-bash-1",
            "Killing",
            "stopping container runtime",
            "2026-01-01T11:00:00Z",
        ),
    ]
}

fn decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let hex = (b[i] == b'%')
            .then(|| b.get(i + 1..i + 3))
            .flatten()
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (hex, b[i]) {
            (Some(c), _) => {
                out.push(c);
                i += 3;
            }
            (None, b'+') => {
                out.push(b' ');
                i += 1;
            }
            (None, c) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn param(query: &str, key: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|kv| kv.split_once('='))
        .find(|(k, _)| *k == key)
        .map(|(_, v)| decode(v))
}

/// `key`, `key=value` selectors joined by commas, on labels or fields.
fn selects(sel: &str, get: &dyn Fn(&str) -> Option<String>) -> bool {
    sel.split(',')
        .filter(|p| !p.is_empty())
        .all(|p| match p.split_once('=') {
            Some((k, v)) => get(k).as_deref() == Some(v),
            None => get(p).is_some(),
        })
}

fn labelled(o: &Value, query: &str) -> bool {
    param(query, "labelSelector").is_none_or(|sel| {
        selects(&sel, &|k| {
            o["metadata"]["labels"][k].as_str().map(str::to_owned)
        })
    })
}

fn list(kind: &str, items: Vec<Value>, query: &str) -> (u16, Value) {
    let items: Vec<Value> = items.into_iter().filter(|o| labelled(o, query)).collect();
    (
        200,
        json!({"apiVersion": "v1", "kind": format!("{kind}List"), "metadata": {}, "items": items}),
    )
}

fn one(items: Vec<Value>, name: &str) -> (u16, Value) {
    match items.into_iter().find(|o| o["metadata"]["name"] == name) {
        Some(o) => (200, o),
        None => (
            404,
            json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                             "status": "Failure", "reason": "NotFound", "code": 404,
                             "message": format!("{name:?} not found")}),
        ),
    }
}

/// The stand-in API server's answer for `eve-token`.
pub fn answer(path: &str, query: &str) -> (u16, Value) {
    let kr = format!("/apis/kruntimes.io/v1alpha1/namespaces/{NS}/");
    let core = format!("/api/v1/namespaces/{NS}/");
    if let Some(rest) = path.strip_prefix(&kr) {
        let (plural, name) = rest.split_once('/').unwrap_or((rest, ""));
        let items = match plural {
            "runtimes" => runtimes(),
            "runs" => runs(),
            "workflowruns" => workflowruns(),
            _ => Vec::new(),
        };
        if plural == "runs" && name.is_empty() && param(query, "fieldSelector").is_some() {
            // The engine's CRD declares no selectableFields.
            return (
                400,
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {},
                "status": "Failure", "reason": "BadRequest", "code": 400,
                "message": "Unable to find \"kruntimes.io/v1alpha1, Resource=runs\" that match label selector \"\", field selector \"spec.runtime=bash\": field label not supported: spec.runtime"}),
            );
        }
        return if name.is_empty() {
            list(plural, items, query)
        } else {
            one(items, name)
        };
    }
    if let Some(rest) = path.strip_prefix(&core) {
        if rest == "pods" {
            return list("Pod", pods(), query);
        }
        if let Some(name) = rest.strip_prefix("pods/") {
            return one(pods(), name);
        }
        if rest == "events" {
            let fs = param(query, "fieldSelector").unwrap_or_default();
            let items: Vec<Value> = events()
                .into_iter()
                .filter(|e| {
                    selects(&fs, &|k| {
                        let f = k.strip_prefix("involvedObject.")?;
                        e["involvedObject"][f].as_str().map(str::to_owned)
                    })
                })
                .collect();
            return (
                200,
                json!({"apiVersion": "v1", "kind": "EventList", "metadata": {}, "items": items}),
            );
        }
    }
    (
        404,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "reason": "NotFound", "code": 404, "message": "not found"}),
    )
}

async fn get(path: &str) -> Value {
    let app = app(state(false, None));
    let req = request("GET", path)
        .header(header::AUTHORIZATION, "Bearer eve-token")
        .body(Body::empty())
        .unwrap();
    let (code, _, body) = send(&app, req).await;
    assert_eq!(code, StatusCode::OK, "{path}: {body}");
    body
}

fn named<'a>(items: &'a Value, name: &str) -> &'a Value {
    items
        .as_array()
        .and_then(|a| {
            a.iter()
                .find(|i| i["metadata"]["name"] == name || i["name"] == name)
        })
        .unwrap_or_else(|| panic!("{name} not in {items}"))
}

#[tokio::test]
async fn runtimes_count_ready_pods_and_read_the_image_from_the_template() {
    let list = get(&format!("/api/namespaces/{NS}/runtimes")).await;
    let bash = named(&list["items"], "bash");
    // No readyReplicas in the status: both Ready Pods are counted.
    assert_eq!(bash["readyReplicas"], 2, "{bash}");
    assert_eq!(bash["replicas"], 2);
    assert_eq!(bash["image"], "ghcr.io/kruntimes/runtime-bash:1.4");
    // The Pods win over a status that says otherwise; unset replicas mean 1.
    let gpu = named(&list["items"], "gpu");
    assert_eq!(
        (&gpu["readyReplicas"], &gpu["replicas"]),
        (&json!(1), &json!(1))
    );

    let d = get(&format!("/api/namespaces/{NS}/runtimes/bash")).await;
    assert_eq!(d["status"]["readyReplicas"], 2, "{d}");
    assert_eq!(d["spec"]["image"], "ghcr.io/kruntimes/runtime-bash:1.4");
    assert!(d["spec"].get("capacity").is_none());
}

#[tokio::test]
async fn runtime_pods_use_the_default_capacity_and_summed_requests() {
    let d = get(&format!("/api/namespaces/{NS}/runtimes/bash")).await;
    let pods = &d["pods"]["items"];
    // No spec.capacity, no annotations: 2 Runs per Pod.
    let b0 = named(pods, "bash-0");
    assert_eq!(
        b0["usage"],
        json!([{"resource": "runs", "capacity": "2", "default": true, "used": 1, "free": 1}]),
        "{b0}"
    );
    assert_eq!(b0["capacity"], json!({"runs": "2"}));
    // A Scheduled Run requesting 2 runs fills bash-1; its Failed Run takes nothing.
    let b1 = named(pods, "bash-1");
    assert_eq!(b1["usage"][0]["used"], 2, "{b1}");
    assert_eq!(b1["usage"][0]["free"], 0);
    assert_eq!(
        named(&b1["runs"], "r-scheduled")["requests"],
        json!({"runs": 2})
    );
    // The waiting Run says why it waits (the engine sets no condition).
    assert_eq!(
        d["queue"]["items"],
        json!([{"name": "r-waiting", "creationTimestamp": "2026-01-01T08:59:00Z",
                "message": "waiting for available runtime pods for runtime bash"}])
    );

    let g = get(&format!("/api/namespaces/{NS}/runtimes/gpu")).await;
    assert_eq!(
        g["spec"]["capacity"],
        json!({"resources": {"gpu": "2", "runs": "4"}})
    );
    let g0 = named(&g["pods"]["items"], "gpu-0");
    assert_eq!(
        g0["usage"],
        json!([{"resource": "gpu", "capacity": "2", "used": 1, "free": 1},
               {"resource": "runs", "capacity": "4", "used": 1, "free": 3}]),
        "{g0}"
    );
}

#[tokio::test]
async fn workflowrun_times_come_from_the_runs_of_its_steps() {
    let d = get(&format!("/api/namespaces/{NS}/workflowruns/release")).await;
    let st = &d["status"];
    assert_eq!(st["startTime"], "2026-01-01T09:00:00Z", "{st}");
    assert!(st.get("completionTime").is_none(), "still Running: {st}");
    assert_eq!(st["snapshotName"], "release-snapshot-7f3a");
    let build = &st["jobs"]["build"];
    assert_eq!(build["pre"], json!(["lint"]));
    // The unlabelled step Run is found by its name.
    assert_eq!(build["startTime"], "2026-01-01T09:06:00Z", "{build}");
    assert!(build.get("completionTime").is_none());
    let setup = &build["steps"][1];
    assert!(setup.get("runName").is_none());
    assert_eq!(
        setup["actionSteps"],
        json!([{"name": "fetch", "phase": "Running", "runName": "r-running",
                "startTime": "2026-01-01T10:00:00Z"},
               {"name": "unpack", "phase": "Pending"}])
    );
    assert_eq!(setup["startTime"], "2026-01-01T10:00:00Z");
    assert_eq!(d["spec"]["jobs"]["build"]["steps"][1]["uses"], "checkout");

    let d = get(&format!("/api/namespaces/{NS}/workflowruns/deploy")).await;
    let st = &d["status"];
    assert_eq!(
        (&st["startTime"], &st["completionTime"]),
        (
            &json!("2026-01-01T09:10:00Z"),
            &json!("2026-01-01T09:20:00Z")
        ),
        "{st}"
    );
    assert_eq!(
        st["message"],
        "Action \"deploy-action\" not found in namespace eng"
    );
    assert_eq!(st["jobs"]["ship"]["phase"], "Skipped");

    let list = get(&format!("/api/namespaces/{NS}/workflowruns")).await;
    let release = named(&list["items"], "release");
    assert_eq!(release["startTime"], "2026-01-01T09:00:00Z", "{release}");
    let deploy = named(&list["items"], "deploy");
    assert_eq!(deploy["completionTime"], "2026-01-01T09:20:00Z", "{deploy}");
    assert_eq!(
        deploy["message"],
        "Action \"deploy-action\" not found in namespace eng"
    );
}

#[tokio::test]
async fn the_runs_list_names_the_workflowrun_step_and_filters_without_field_selectors() {
    let list = get(&format!(
        "/api/namespaces/{NS}/runs?runtime=bash&phase=Running"
    ))
    .await;
    let items = list["items"].as_array().unwrap();
    assert_eq!(items.len(), 1, "{list}");
    assert_eq!(
        items[0]["workflowRun"],
        json!({"name": "release", "job": "build", "step": "setup", "actionStep": "fetch"})
    );
    let all = get(&format!("/api/namespaces/{NS}/runs?runtime=bash")).await;
    assert_eq!(all["items"].as_array().unwrap().len(), 6, "{all}");
    assert!(
        named(&all["items"], "r-waiting")
            .get("workflowRun")
            .is_none()
    );
    let pod = get(&format!("/api/namespaces/{NS}/runs?assignedPod=bash-1")).await;
    let names: Vec<&str> = pod["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["r-scheduled", "r-failed"]);
}

#[tokio::test]
async fn a_run_reads_its_conditions_attempts_and_windowed_events() {
    let d = get(&format!("/api/namespaces/{NS}/runs/r-failed")).await;
    assert_eq!(
        d["state"],
        json!({"stage": "failed", "reason": "RuntimeExecute", "message": "exit status 2"})
    );
    let reasons: Vec<&str> = d["events"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["reason"].as_str().unwrap())
        .collect();
    // The Pod's events before and after the Run are another Run's business.
    assert_eq!(
        reasons,
        [
            "RunFailedRetrying",
            "RunRetrying",
            "Unhealthy",
            "RunRetriesExhausted"
        ]
    );
    let attempts: Vec<(Value, Value)> = d["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (a["attempt"].clone(), a["maxAttempts"].clone()))
        .collect();
    assert_eq!(
        attempts,
        [
            (json!(1), json!(2)),
            (json!(2), json!(2)),
            (json!(2), Value::Null)
        ]
    );
    // Found by its name among the WorkflowRuns' steps.
    assert_eq!(
        d["workflowRun"],
        json!({"state": "ok", "name": "deploy", "job": "test", "step": "test"})
    );

    let d = get(&format!("/api/namespaces/{NS}/runs/r-waiting")).await;
    assert_eq!(
        d["state"],
        json!({"stage": "waiting",
               "message": "waiting for available runtime pods for runtime bash"})
    );
    let d = get(&format!("/api/namespaces/{NS}/runs/r-running")).await;
    assert_eq!(d["state"]["stage"], "running");
    assert_eq!(d["state"]["reason"], "Claimed");
    assert_eq!(
        d["workflowRun"],
        json!({"state": "ok", "name": "release", "job": "build", "step": "setup",
               "actionStep": "fetch"})
    );
    let d = get(&format!("/api/namespaces/{NS}/runs/r-done")).await;
    assert_eq!(
        d["state"],
        json!({"stage": "succeeded", "reason": "RunCompleted", "message": "run completed"})
    );
}
