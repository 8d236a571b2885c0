//! Runtimes: list, and detail with Pods, health, capacity and assigned Runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Json, Response};
use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{DynamicObject, ListParams};
use serde_json::{Value, json};

use super::objects::{conditions, meta, mode_name, pick, str_at};
use super::runs::{RunQuery, list_runs, pod_facts};
use super::{
    Reader, check_name, check_namespace, kruntimes_api, kube_error, list_reader, user_client,
};
use crate::console::{Caller, ConsoleState};
use crate::error::{AccessRequest, ConsoleError, from_kube};

const TERMINAL: [&str; 4] = ["Succeeded", "Failed", "Timeout", "Cancelled"];

fn int(v: &Value, path: &[&str]) -> i64 {
    super::objects::at(v, path)
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn runtime_item(o: &DynamicObject, summary: bool) -> Value {
    let mut item = json!({
        "metadata": meta(&o.metadata, summary),
        "replicas": int(&o.data, &["spec", "replicas"]),
        "readyReplicas": int(&o.data, &["status", "readyReplicas"]),
    });
    if !summary
        && let Some(ready) = o.data["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == "Ready"))
    {
        item["ready"] = pick(
            ready,
            &["type", "status", "reason", "message", "lastTransitionTime"],
        );
    }
    item
}

pub async fn list(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<Caller>,
    Path(ns): Path<String>,
) -> Response {
    let r: Result<Value, ConsoleError> = async {
        check_namespace(&ns)?;
        let reader = list_reader(&state, &caller)?;
        let api = kruntimes_api(reader.client().clone(), &ns, "Runtime", "runtimes");
        let list = api
            .list(&ListParams::default().limit(500))
            .await
            .map_err(|e| kube_error(e, "listing runtimes", AccessRequest::new("list", "kruntimes.io", "runtimes", &ns, None)))?;
        let summary = matches!(reader, Reader::Public(_));
        let mut out = json!({"items": list.items.iter().map(|o| runtime_item(o, summary)).collect::<Vec<_>>()});
        if summary {
            out["summary"] = json!(true);
        }
        Ok(out)
    }
    .await;
    match r {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

pub async fn detail(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<Caller>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    match detail_inner(&state, &caller, &ns, &name).await {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}

async fn detail_inner(
    state: &ConsoleState,
    caller: &Caller,
    ns: &str,
    name: &str,
) -> Result<Value, ConsoleError> {
    check_namespace(ns)?;
    check_name("runtime", name)?;
    let client = user_client(state, caller)?;
    let rt = kruntimes_api(client.clone(), ns, "Runtime", "runtimes")
        .get(name)
        .await
        .map_err(|e| {
            kube_error(
                e,
                "reading the runtime",
                AccessRequest::new("get", "kruntimes.io", "runtimes", ns, Some(name)),
            )
        })?;
    let spec = rt.data.get("spec").cloned().unwrap_or(Value::Null);
    let status = rt.data.get("status").cloned().unwrap_or(Value::Null);
    let mut spec_out = pick(&spec, &["port", "image"]);
    spec_out["replicas"] = json!(int(&spec, &["replicas"]));
    if let Some(c) = spec.get("capacity") {
        spec_out["capacity"] = pick(c, &["resources"]);
    }
    let mut status_out = json!({"readyReplicas": int(&status, &["readyReplicas"])});
    if let Some(c) = conditions(status.get("conditions")) {
        status_out["conditions"] = c;
    }
    Ok(json!({
        "metadata": meta(&rt.metadata, false),
        "spec": spec_out,
        "status": status_out,
        "pods": pods_section(&client, ns, name).await,
    }))
}

async fn pods_section(client: &kube::Client, ns: &str, runtime: &str) -> Value {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let list = match pods
        .list(
            &ListParams::default()
                .labels(&format!("runtime={runtime}"))
                .limit(500),
        )
        .await
    {
        Ok(l) => l,
        Err(e) => {
            let e = from_kube(e, "listing pods");
            return if e.code == http::StatusCode::FORBIDDEN {
                json!({"state": "forbidden", "message": e.message, "access": AccessRequest::new("list", "", "pods", ns, None)})
            } else {
                json!({"state": "error", "message": e.message, "code": e.code.as_u16()})
            };
        }
    };
    // Active Runs of this Runtime, grouped by the Pod they are assigned to.
    let runs = kruntimes_api(client.clone(), ns, "Run", "runs");
    let mut by_pod: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    let mut q = RunQuery {
        runtime: Some(runtime.to_owned()),
        limit: 500,
        ..Default::default()
    };
    let mut run_error = None;
    for _ in 0..20 {
        match list_runs(&runs, &q, super::runs::SCAN_PAGES).await {
            Ok(page) => {
                for o in &page.items {
                    let phase = str_at(&o.data, &["status", "phase"]).unwrap_or("Pending");
                    let Some(pod) = str_at(&o.data, &["status", "assignedPod"])
                        .filter(|p| kruntimes_core::names::is_dns1123_subdomain(p))
                    else {
                        continue;
                    };
                    if TERMINAL.contains(&phase) {
                        continue;
                    }
                    let mut r = json!({"name": o.metadata.name.clone().unwrap_or_default(), "phase": phase});
                    if let Some(uid) = &o.metadata.uid {
                        r["uid"] = json!(uid);
                    }
                    if let Some(m) = mode_name(o.data.get("spec").unwrap_or(&Value::Null)) {
                        r["mode"] = json!(m);
                    }
                    if let Some(t) = &o.metadata.creation_timestamp {
                        r["creationTimestamp"] = json!(t.0.to_string());
                    }
                    by_pod.entry(pod.to_owned()).or_default().push(r);
                }
                match page.cont {
                    Some(c) => q.cont = Some(c),
                    None => break,
                }
            }
            Err(e) => {
                run_error = Some(from_kube(e, "listing runs"));
                break;
            }
        }
    }
    if let Some(e) = run_error
        && e.code == http::StatusCode::FORBIDDEN
    {
        return json!({"state": "forbidden", "message": e.message, "access": AccessRequest::new("list", "kruntimes.io", "runs", ns, None)});
    }
    let items: Vec<Value> = list
        .items
        .iter()
        .map(|p| {
            let mut facts = pod_facts(p);
            if let Some(l) = facts.as_object_mut() {
                l.remove("labels");
                l.remove("namespace");
            }
            let capacity: serde_json::Map<String, Value> = p
                .metadata
                .annotations
                .iter()
                .flatten()
                .filter_map(|(k, v)| {
                    k.strip_prefix("kruntimes.io/capacity.")
                        .map(|r| (r.to_owned(), json!(v)))
                })
                .collect();
            facts["capacity"] = Value::Object(capacity);
            let name = p.metadata.name.clone().unwrap_or_default();
            facts["runs"] = json!(by_pod.remove(&name).unwrap_or_default());
            facts
        })
        .collect();
    json!({"state": "ok", "items": items})
}
