//! The Console against the real control plane on objects shaped as the
//! kruntimes engine writes them, accepted by the development CRDs: Runtimes
//! with a Pod template and no `readyReplicas`, Runs with `spec.mode` and the
//! engine's conditions, retry Events, WorkflowRuns without start or
//! completion times, with Action steps, a message and a snapshot; and Runs
//! the CRD refuses.

use kruntimes_tests::curl::{self, Body, Reply, bearer};
use kruntimes_tests::env::{Fixtures, env, unique};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

fn get(path: &str) -> Value {
    let url = format!("{}{path}", env().var("CONSOLE_URL"));
    let r: Reply = curl::request(
        "GET",
        &url,
        &[("Authorization", &bearer("admin"))],
        Body::None,
    );
    assert_eq!(r.code, 200, "{path}: {}", r.body);
    r.json()
}

/// A fresh namespace with its Fixtures.
async fn namespace(prefix: &str) -> (String, Fixtures) {
    let ns = unique(prefix);
    let api: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(env().admin().await);
    let obj = serde_json::from_value(json!({"metadata": {"name": ns}})).unwrap();
    api.create(&PostParams::default(), &obj).await.unwrap();
    (ns.clone(), Fixtures::new(&ns).await)
}

fn kind(k: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kruntimes.io", "v1alpha1", k),
        plural,
    )
}

async fn create(ns: &str, ar: &ApiResource, obj: Value) -> DynamicObject {
    let api: Api<DynamicObject> = Api::namespaced_with(env().admin().await, ns, ar);
    let obj: DynamicObject = serde_json::from_value(obj).unwrap();
    api.create(&PostParams::default(), &obj)
        .await
        .unwrap_or_else(|e| panic!("creating {:?}: {e}", obj.metadata.name))
}

async fn patch_status(ns: &str, ar: &ApiResource, name: &str, status: Value) {
    let api: Api<DynamicObject> = Api::namespaced_with(env().admin().await, ns, ar);
    api.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": status})),
    )
    .await
    .unwrap_or_else(|e| panic!("status of {name}: {e}"));
}

/// Marks a Pod Running and Ready (or not), as the kubelet and runtimed would.
async fn pod_ready(ns: &str, name: &str, ready: bool) {
    let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(env().admin().await, ns);
    let s = if ready { "True" } else { "False" };
    pods.patch_status(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": s},
            {"type": "kruntimes.io/RuntimedReady", "status": s, "reason": "Heartbeat"}]}})),
    )
    .await
    .unwrap();
}

fn cond(t: &str, s: &str, reason: &str, msg: &str, at: &str) -> Value {
    json!({"type": t, "status": s, "reason": reason, "message": msg, "lastTransitionTime": at})
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

async fn delete_namespace(ns: &str) {
    kruntimes_tests::objects::delete(
        &kube::Api::<k8s_openapi::api::core::v1::Namespace>::all(env().admin().await),
        ns,
    )
    .await;
}

#[tokio::test]
async fn runtimes_count_ready_pods_read_the_template_image_and_sum_requests() {
    let (ns, fx) = namespace("engine-rt").await;
    let rt = kind("Runtime", "runtimes");
    create(
        &ns,
        &rt,
        json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "Runtime",
               "metadata": {"name": "bash"},
               "spec": {"replicas": 3, "template": {"spec": {"containers": [
                   {"name": "runtime", "image": "ghcr.io/kruntimes/runtime-bash:1.4"}]}}}}),
    )
    .await;
    let mut uids = Vec::new();
    for (pod, ready) in [("bash-a", true), ("bash-b", true), ("bash-c", false)] {
        uids.push(fx.create_pod(pod, "bash").await);
        pod_ready(&ns, pod, ready).await;
    }
    // Two Runs on bash-a (one requesting 2 runs: over the default of 2), a
    // finished one that takes nothing, and one waiting.
    for (name, pod, uid, phase, requests) in [
        ("r1", "bash-a", &uids[0], "Running", json!({})),
        ("r2", "bash-a", &uids[0], "Scheduled", json!({"runs": 2})),
        ("r3", "bash-b", &uids[1], "Succeeded", json!({"runs": 2})),
    ] {
        fx.create_run(
            name,
            "bash",
            "task",
            json!({"resources": {"requests": requests}}),
        )
        .await;
        fx.set_run_status(
            name,
            json!({"phase": phase, "assignedPod": pod, "assignedPodUID": uid}),
        )
        .await;
    }
    fx.create_run("r4", "bash", "task", json!({})).await;
    fx.set_run_status(
        "r4",
        json!({"phase": "Pending", "message": "waiting for available runtime pods for runtime bash"}),
    )
    .await;

    let list = get(&format!("/api/namespaces/{ns}/runtimes"));
    let item = named(&list["items"], "bash");
    assert_eq!(item["readyReplicas"], 2, "{item}");
    assert_eq!(item["replicas"], 3);
    assert_eq!(item["image"], "ghcr.io/kruntimes/runtime-bash:1.4");

    let d = get(&format!("/api/namespaces/{ns}/runtimes/bash"));
    assert_eq!(d["status"]["readyReplicas"], 2, "{}", d["status"]);
    assert_eq!(d["spec"]["image"], "ghcr.io/kruntimes/runtime-bash:1.4");
    let pods = &d["pods"]["items"];
    assert_eq!(
        named(pods, "bash-a")["usage"],
        json!([{"resource": "runs", "capacity": "2", "default": true, "used": 3, "free": 0}])
    );
    assert_eq!(
        named(pods, "bash-b")["usage"],
        json!([{"resource": "runs", "capacity": "2", "default": true, "used": 0, "free": 2}])
    );
    assert_eq!(
        d["queue"]["items"][0]["message"],
        "waiting for available runtime pods for runtime bash"
    );
    delete_namespace(&ns).await;
}

#[tokio::test]
async fn workflowruns_take_their_times_from_their_runs_and_link_action_steps() {
    let (ns, fx) = namespace("engine-wr").await;
    let wrk = kind("WorkflowRun", "workflowruns");
    let wr = create(
        &ns,
        &wrk,
        json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "WorkflowRun",
               "metadata": {"generateName": "release-"},
               "spec": {"jobs": {
                   "lint": {"runs-on": "bash", "steps": [{"name": "lint", "run": "make lint"}]},
                   "build": {"runs-on": "bash", "needs": ["lint"], "steps": [
                       {"name": "setup", "uses": "checkout", "with": {"ref": "main"}}]}}}}),
    )
    .await;
    let name = wr.metadata.name.clone().unwrap();
    let uid = wr.metadata.uid.clone().unwrap();
    // The Runs the engine creates for the steps: owned, labelled.
    let runk = kind("Run", "runs");
    for (run, job, step, action, start, end) in [
        (
            "s-lint",
            "lint",
            "lint",
            None,
            "2026-01-01T09:00:00Z",
            Some("2026-01-01T09:05:00Z"),
        ),
        (
            "s-fetch",
            "build",
            "setup",
            Some("fetch"),
            "2026-01-01T09:06:00Z",
            Some("2026-01-01T09:07:00Z"),
        ),
        (
            "s-unpack",
            "build",
            "setup",
            Some("unpack"),
            "2026-01-01T09:07:00Z",
            None,
        ),
    ] {
        let mut labels = json!({"kruntimes.io/workflowrun-uid": uid,
            "kruntimes.io/workflow-job": job, "kruntimes.io/workflow-step": step});
        if let Some(a) = action {
            labels["kruntimes.io/workflow-action-step"] = json!(a);
        }
        create(
            &ns,
            &runk,
            json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                   "metadata": {"name": run, "labels": labels, "ownerReferences": [
                       {"apiVersion": "kruntimes.io/v1alpha1", "kind": "WorkflowRun", "name": name,
                        "uid": uid, "controller": true, "blockOwnerDeletion": true}]},
                   "spec": {"runtime": "bash", "mode": {"task": {"args": ["x"]}}}}),
        )
        .await;
        let mut st = json!({"phase": if end.is_some() { "Succeeded" } else { "Running" },
                            "startTime": start});
        if let Some(e) = end {
            st["completionTime"] = json!(e);
        }
        fx.set_run_status(run, st).await;
    }
    let status = |phase: &str| {
        json!({"phase": phase, "snapshotName": format!("{name}-snapshot"), "jobs": {
            "lint": {"phase": "Succeeded", "steps": [
                {"name": "lint", "phase": "Succeeded", "runName": "s-lint"}]},
            "build": {"phase": "Running", "pre": ["lint"], "steps": [
                {"name": "setup", "phase": "Running", "actionSteps": [
                    {"name": "fetch", "phase": "Succeeded", "runName": "s-fetch"},
                    {"name": "unpack", "phase": "Running", "runName": "s-unpack"}]}]}}})
    };
    patch_status(&ns, &wrk, &name, status("Running")).await;

    let d = get(&format!("/api/namespaces/{ns}/workflowruns/{name}"));
    let st = &d["status"];
    assert_eq!(st["startTime"], "2026-01-01T09:00:00Z", "{st}");
    assert!(st.get("completionTime").is_none(), "{st}");
    assert_eq!(st["snapshotName"], format!("{name}-snapshot"));
    let build = &st["jobs"]["build"];
    assert_eq!(build["pre"], json!(["lint"]));
    assert_eq!(build["startTime"], "2026-01-01T09:06:00Z", "{build}");
    let setup = &build["steps"][0];
    assert_eq!(
        setup["actionSteps"],
        json!([{"name": "fetch", "phase": "Succeeded", "runName": "s-fetch",
                "startTime": "2026-01-01T09:06:00Z", "completionTime": "2026-01-01T09:07:00Z"},
               {"name": "unpack", "phase": "Running", "runName": "s-unpack",
                "startTime": "2026-01-01T09:07:00Z"}])
    );
    // The Runs list and the Run page name the WorkflowRun step.
    let runs = get(&format!("/api/namespaces/{ns}/runs"));
    assert_eq!(
        named(&runs["items"], "s-unpack")["workflowRun"],
        json!({"name": name, "job": "build", "step": "setup", "actionStep": "unpack"})
    );
    let run = get(&format!("/api/namespaces/{ns}/runs/s-lint"));
    assert_eq!(
        run["workflowRun"],
        json!({"state": "ok", "name": name, "job": "lint", "step": "lint"})
    );

    // Failed, with the engine's message: it completes with its last Run.
    fx.set_run_status(
        "s-unpack",
        json!({"phase": "Failed", "startTime": "2026-01-01T09:07:00Z",
               "completionTime": "2026-01-01T09:09:00Z"}),
    )
    .await;
    let mut failed = status("Failed");
    failed["message"] = json!("resolve Action \"deploy\": Action not found");
    patch_status(&ns, &wrk, &name, failed).await;
    let list = get(&format!("/api/namespaces/{ns}/workflowruns"));
    let item = named(&list["items"], &name);
    assert_eq!(
        (&item["startTime"], &item["completionTime"]),
        (
            &json!("2026-01-01T09:00:00Z"),
            &json!("2026-01-01T09:09:00Z")
        ),
        "{item}"
    );
    assert_eq!(
        item["message"],
        "resolve Action \"deploy\": Action not found"
    );
    delete_namespace(&ns).await;
}

/// A core/v1 Event as the engine's recorder writes it.
async fn event(ns: &str, name: &str, obj: (&str, &str, &str), reason: &str, msg: &str, at: &str) {
    let (kind, oname, uid) = obj;
    let api: Api<k8s_openapi::api::core::v1::Event> = Api::namespaced(env().admin().await, ns);
    let api_version = if kind == "Pod" {
        "v1"
    } else {
        "kruntimes.io/v1alpha1"
    };
    let e = serde_json::from_value(json!({
        "metadata": {"name": name},
        "involvedObject": {"apiVersion": api_version, "kind": kind, "name": oname, "uid": uid,
                           "namespace": ns},
        "reason": reason, "message": msg, "type": "Warning", "count": 1,
        "firstTimestamp": at, "lastTimestamp": at, "source": {"component": "kruntimes"}}))
    .unwrap();
    api.create(&PostParams::default(), &e).await.unwrap();
}

#[tokio::test]
async fn a_run_reads_its_conditions_attempts_and_windowed_pod_events() {
    let (ns, fx) = namespace("engine-run").await;
    let pod_uid = fx.create_pod("bash-a", "bash").await;
    let uid = fx.create_run("failing", "bash", "task", json!({})).await;
    let (start, end) = ("2026-01-01T09:10:00Z", "2026-01-01T09:20:00Z");
    fx.set_run_status(
        "failing",
        json!({"phase": "Failed", "assignedPod": "bash-a", "assignedPodUID": pod_uid,
               "attempt": 2, "message": "exit status 2", "startTime": start, "completionTime": end,
               "conditions": [cond("Scheduled", "True", "Assigned", "assigned to pod bash-a", start),
                              cond("Running", "False", "RuntimeExecute", "exit status 2", end),
                              cond("Completed", "False", "RuntimeExecute", "exit status 2", end)]}),
    )
    .await;
    let run = ("Run", "failing", uid.as_str());
    event(
        &ns,
        "a1",
        run,
        "RunFailedRetrying",
        "Run failed (attempt 1/2), retrying in 10s. Reason: RuntimeExecute: exit status 1",
        "2026-01-01T09:12:00Z",
    )
    .await;
    event(
        &ns,
        "a2",
        run,
        "RunRetrying",
        "Retry attempt 2/2 starting",
        "2026-01-01T09:13:00Z",
    )
    .await;
    event(
        &ns,
        "a3",
        run,
        "RunRetriesExhausted",
        "Run failed after 2 attempts: RuntimeExecute: exit status 2",
        end,
    )
    .await;
    let pod = ("Pod", "bash-a", pod_uid.as_str());
    event(
        &ns,
        "p1",
        pod,
        "Pulled",
        "before the Run",
        "2026-01-01T08:00:00Z",
    )
    .await;
    event(
        &ns,
        "p2",
        pod,
        "Unhealthy",
        "during the Run",
        "2026-01-01T09:15:00Z",
    )
    .await;
    event(
        &ns,
        "p3",
        pod,
        "Killing",
        "after the Run",
        "2026-01-01T11:00:00Z",
    )
    .await;

    let d = get(&format!("/api/namespaces/{ns}/runs/failing"));
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
    assert_eq!(
        reasons,
        [
            "RunFailedRetrying",
            "RunRetrying",
            "Unhealthy",
            "RunRetriesExhausted"
        ],
        "{}",
        d["events"]
    );
    let attempts: Vec<(&Value, &Value)> = d["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| (&a["attempt"], &a["maxAttempts"]))
        .collect();
    assert_eq!(
        attempts,
        [
            (&json!(1), &json!(2)),
            (&json!(2), &json!(2)),
            (&json!(2), &Value::Null)
        ]
    );

    // Waiting: no condition, only the engine's message.
    fx.create_run("waiting", "bash", "task", json!({})).await;
    fx.set_run_status(
        "waiting",
        json!({"phase": "Pending", "message": "waiting for available runtime pods for runtime bash"}),
    )
    .await;
    let d = get(&format!("/api/namespaces/{ns}/runs/waiting"));
    assert_eq!(
        d["state"],
        json!({"stage": "waiting", "message": "waiting for available runtime pods for runtime bash"})
    );
    delete_namespace(&ns).await;
}

#[tokio::test]
async fn the_crds_refuse_a_run_without_exactly_one_mode() {
    let ns = "team-a";
    let runk = kind("Run", "runs");
    let api: Api<DynamicObject> = Api::namespaced_with(env().admin().await, ns, &runk);
    for (spec, says) in [
        (json!({"runtime": "bash"}), "spec.mode: Required value"),
        (
            json!({"runtime": "bash", "mode": {"task": {}, "function": {"handler": "m.f"}}}),
            "exactly one of task, function or session",
        ),
        (
            json!({"runtime": "bash", "mode": {}}),
            "exactly one of task, function or session",
        ),
    ] {
        let name = unique("no-mode");
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
            "metadata": {"name": name}, "spec": spec}))
        .unwrap();
        let err = api
            .create(&PostParams::default(), &obj)
            .await
            .expect_err("the CRD accepted a Run without exactly one mode");
        let kube::Error::Api(s) = err else {
            panic!("not an API error: {err}");
        };
        assert_eq!(s.code, 422, "{s:?}");
        assert!(s.message.contains(says), "{says:?} not in {:?}", s.message);
        assert!(
            api.get_opt(&name).await.unwrap().is_none(),
            "{name} was stored"
        );
    }
    // A Runtime without its Pod template is refused too.
    let rtk = kind("Runtime", "runtimes");
    let api: Api<DynamicObject> = Api::namespaced_with(env().admin().await, ns, &rtk);
    let obj: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "kruntimes.io/v1alpha1", "kind": "Runtime",
        "metadata": {"name": unique("no-template")}, "spec": {"replicas": 1}}))
    .unwrap();
    let err = api.create(&PostParams::default(), &obj).await.unwrap_err();
    assert!(
        err.to_string().contains("spec.template: Required value"),
        "{err}"
    );
}
