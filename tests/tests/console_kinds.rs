//! Actions and PersistentWorkspaces through the Console against the real
//! control plane: read with the caller's own token (the viewer in team-a,
//! never the outsider or team-b), no public read, env values never
//! returned, and the detail sections that fail alone.

use kruntimes_tests::curl::{self, Body, Reply, bearer};
use kruntimes_tests::env::{Fixtures, env, unique};
use kube::Api;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

const SECRET: &str = "s3cr3t-action-env-value";

fn console(path: &str) -> String {
    format!("{}{path}", env().var("CONSOLE_URL"))
}

fn get_as(user: Option<&str>, path: &str) -> Reply {
    let auth = user.map(bearer);
    let headers: Vec<(&str, &str)> = auth
        .as_deref()
        .map(|a| vec![("Authorization", a)])
        .unwrap_or_default();
    curl::request("GET", &console(path), &headers, Body::None)
}

fn api(fx: &Fixtures, kind: &str, plural: &str) -> Api<DynamicObject> {
    let ar = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("kruntimes.io", "v1alpha1", kind),
        plural,
    );
    Api::namespaced_with(fx.client.clone(), &fx.ns, &ar)
}

/// Creates `obj` (kind and plural) and merges `status` into its status.
async fn create(fx: &Fixtures, kind: &str, plural: &str, obj: Value, status: Option<Value>) {
    let mut obj = obj;
    obj["apiVersion"] = json!("kruntimes.io/v1alpha1");
    obj["kind"] = json!(kind);
    let o: DynamicObject = serde_json::from_value(obj).expect("object json");
    let name = o.metadata.name.clone().expect("name");
    let a = api(fx, kind, plural);
    a.create(&PostParams::default(), &o)
        .await
        .unwrap_or_else(|e| panic!("creating {kind} {name}: {e}"));
    if let Some(s) = status {
        a.patch_status(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "status": s })),
        )
        .await
        .unwrap_or_else(|e| panic!("status of {kind} {name}: {e}"));
    }
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| {
            i["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        })
        .collect()
}

#[tokio::test]
async fn actions_are_read_as_the_caller_and_never_show_env_values() {
    let fx = Fixtures::new("team-a").await;
    let action = unique("setup");
    create(
        &fx,
        "Action",
        "actions",
        json!({"metadata": {"name": action},
            "spec": {
                "inputs": {"version": {"required": true}, "cache": {"default": "true"}},
                "outputs": {"root": {"value": "${{ steps.install.outputs.root }}"}},
                "steps": [{"name": "install", "run": "install.sh", "args": ["-q"],
                           "env": {"TOKEN": SECRET}},
                          {"name": "verify", "run": "tool --version"}]}}),
        Some(
            json!({"conditions": [{"type": "Ready", "status": "True", "reason": "Accepted",
            "message": "accepted", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
        ),
    )
    .await;
    let caller = unique("calls");
    create(
        &fx,
        "WorkflowRun",
        "workflowruns",
        json!({"metadata": {"name": caller},
            "spec": {"jobs": {"build": {"runs-on": "bash", "steps": [
                {"name": "setup", "uses": action, "with": {"version": "1"}},
                {"name": "make", "run": "make"}]}}}}),
        Some(json!({"phase": "Running"})),
    )
    .await;

    // The CRD refuses an Action step that calls another Action.
    let nested = api(&fx, "Action", "actions")
        .create(
            &PostParams::default(),
            &serde_json::from_value(
                json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "Action",
                "metadata": {"name": unique("nested")},
                "spec": {"steps": [{"name": "x", "uses": action}]}}),
            )
            .unwrap(),
        )
        .await;
    assert!(nested.is_err(), "a nested Action was accepted");

    let list = get_as(Some("viewer"), "/api/namespaces/team-a/actions");
    assert_eq!(list.code, 200, "{}", list.body);
    assert!(names(&list.json()).contains(&action), "{}", list.body);
    assert!(!list.body.contains(SECRET));

    let path = format!("/api/namespaces/team-a/actions/{action}");
    let d = get_as(Some("viewer"), &path);
    assert_eq!(d.code, 200, "{}", d.body);
    assert!(!d.body.contains(SECRET), "an env value leaked: {}", d.body);
    let v = d.json();
    assert_eq!(v["steps"][0]["envNames"], json!(["TOKEN"]));
    assert_eq!(v["steps"][0]["run"], "install.sh");
    assert_eq!(v["steps"][1]["name"], "verify");
    assert_eq!(
        v["inputs"][1],
        json!({"name": "version", "type": "string", "required": true})
    );
    assert_eq!(
        v["outputs"][0]["value"],
        "${{ steps.install.outputs.root }}"
    );
    assert_eq!(v["conditions"][0]["type"], "Ready");
    assert_eq!(v["usedBy"]["state"], "ok", "{v}");
    let callers: Vec<&str> = v["usedBy"]["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(callers, [caller.as_str()]);
    assert_eq!(v["usedBy"]["items"][0]["jobs"], json!(["build"]));
    let yaml = get_as(Some("viewer"), &format!("{path}/manifest"));
    assert_eq!(yaml.code, 200, "{}", yaml.body);
    assert!(
        !yaml.body.contains(SECRET),
        "an env value leaked: {}",
        yaml.body
    );

    // No public read (the test Console runs with it on), the outsider and
    // team-b are refused, a missing one is 404.
    for p in ["/api/namespaces/team-a/actions", path.as_str()] {
        let anon = get_as(None, p);
        assert_eq!(anon.code, 401, "{p}: {}", anon.body);
        assert!(
            anon.body.contains("not part of public read"),
            "{}",
            anon.body
        );
        assert!(!anon.body.contains(&action) || p == path, "{}", anon.body);
    }
    let o = get_as(Some("outsider"), &path);
    assert_eq!(o.code, 403, "{}", o.body);
    assert_eq!(o.json()["error"]["access"]["resource"], "actions");
    assert_eq!(o.json()["error"]["access"]["verb"], "get");
    let b = get_as(Some("viewer"), "/api/namespaces/team-b/actions");
    assert_eq!(b.code, 403, "{}", b.body);
    assert_eq!(b.json()["error"]["access"]["verb"], "list");
    assert_eq!(
        get_as(Some("viewer"), "/api/namespaces/team-a/actions/not-there").code,
        404
    );
    assert_eq!(
        get_as(Some("viewer"), "/api/namespaces/team-a/actions/Not_A_Name").code,
        400
    );
}

#[tokio::test]
async fn workspaces_show_phase_bound_pod_and_volume_as_the_caller() {
    let fx = Fixtures::new("team-a").await;
    let runtime = unique("wsrt");
    create(
        &fx,
        "Runtime",
        "runtimes",
        json!({"metadata": {"name": runtime}, "spec": {"replicas": 1, "template": {"spec": {"containers": [{"name": "runtime", "image": "kruntimes/runtime-bash:test"}]}}}}),
        None,
    )
    .await;
    let pod = format!("{runtime}-0");
    let pod_uid = fx.create_pod(&pod, &runtime).await;
    let bound = unique("cache");
    create(
        &fx,
        "PersistentWorkspace",
        "persistentworkspaces",
        json!({"metadata": {"name": bound},
               "spec": {"runtime": runtime, "ttlSecondsAfterUnused": 600}}),
        Some(
            json!({"phase": "Bound", "runtime": runtime, "boundPod": pod,
            "path": "/workspace/persistent/cache", "lastUsedTime": "2026-01-01T00:00:00Z",
            "conditions": [{"type": "Accepted", "status": "True", "reason": "Accepted",
                "message": "accepted", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}),
        ),
    )
    .await;
    let orphan = unique("orphan");
    create(
        &fx,
        "PersistentWorkspace",
        "persistentworkspaces",
        json!({"metadata": {"name": orphan}, "spec": {"runtime": "no-such-runtime", "cleanupPolicy": "Retain"}}),
        None,
    )
    .await;

    let list = get_as(
        Some("viewer"),
        "/api/namespaces/team-a/persistentworkspaces",
    );
    assert_eq!(list.code, 200, "{}", list.body);
    let v = list.json();
    let row = v["items"]
        .as_array()
        .unwrap()
        .iter()
        .find(|i| i["metadata"]["name"] == bound.as_str())
        .unwrap_or_else(|| panic!("{bound} not listed: {v}"));
    assert_eq!(
        (&row["phase"], &row["boundPod"]),
        (&json!("Bound"), &json!(pod))
    );

    let d = get_as(
        Some("viewer"),
        &format!("/api/namespaces/team-a/persistentworkspaces/{bound}"),
    );
    assert_eq!(d.code, 200, "{}", d.body);
    let v = d.json();
    assert_eq!(v["status"]["phase"], "Bound");
    assert_eq!(v["status"]["path"], "/workspace/persistent/cache");
    assert_eq!(v["spec"]["ttlSecondsAfterUnused"], 600);
    // The CRD's defaults apply.
    assert_eq!(v["spec"]["cleanupPolicy"], "DeleteAfterTTL");
    assert_eq!(v["spec"]["mode"], "RuntimePodLocal");
    assert_eq!(v["pod"]["state"], "ok", "{v}");
    assert_eq!(v["pod"]["pod"]["uid"], pod_uid.as_str());
    assert_eq!(v["volume"]["state"], "ok", "{v}");
    assert_eq!(v["volume"]["runtime"], runtime.as_str());

    // Pending with no Pod, its Runtime missing: both sections say so.
    let o = get_as(
        Some("viewer"),
        &format!("/api/namespaces/team-a/persistentworkspaces/{orphan}"),
    );
    assert_eq!(o.code, 200, "{}", o.body);
    let v = o.json();
    assert_eq!(v["status"]["phase"], "Pending");
    assert_eq!(v["pod"]["state"], "absent", "{v}");
    assert_eq!(v["volume"]["state"], "absent", "{v}");
    assert!(
        v["volume"]["message"]
            .as_str()
            .unwrap()
            .contains("no-such-runtime")
    );

    let anon = get_as(None, "/api/namespaces/team-a/persistentworkspaces");
    assert_eq!(anon.code, 401, "{}", anon.body);
    assert!(!anon.body.contains(&bound));
    let out = get_as(
        Some("outsider"),
        "/api/namespaces/team-a/persistentworkspaces",
    );
    assert_eq!(out.code, 403, "{}", out.body);
    assert_eq!(
        out.json()["error"]["access"]["resource"],
        "persistentworkspaces"
    );
    let b = get_as(
        Some("viewer"),
        &format!("/api/namespaces/team-b/persistentworkspaces/{bound}"),
    );
    assert_eq!(b.code, 403, "{}", b.body);
    fx.delete_pod(&pod).await;
}
