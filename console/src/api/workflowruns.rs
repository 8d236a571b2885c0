//! WorkflowRuns: list and detail (jobs, needs, steps with Run links,
//! bounded outputs, child WorkflowRun links).

use std::sync::Arc;

use axum::Extension;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Json, Response};
use kube::api::{DynamicObject, ListParams};
use serde_json::{Map, Value, json};

use super::objects::{bounded_outputs, conditions, meta, pick, str_at};
use super::{
    Reader, check_name, check_namespace, kruntimes_api, kube_error, list_reader, user_client,
};
use crate::console::{Caller, ConsoleState};
use crate::error::{AccessRequest, ConsoleError};

/// The WorkflowRun that started this one through a reusable-workflow job.
fn parent(o: &DynamicObject) -> Option<String> {
    o.metadata
        .owner_references
        .iter()
        .flatten()
        .find(|r| r.kind == "WorkflowRun")
        .map(|r| r.name.clone())
        .or_else(|| {
            o.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get("kruntimes.io/parent-workflowrun").cloned())
        })
}

fn item(o: &DynamicObject, summary: bool) -> Value {
    let jobs = o.data["spec"]["jobs"]
        .as_object()
        .map(Map::len)
        .unwrap_or(0);
    let statuses: Vec<&str> = o.data["status"]["jobs"]
        .as_object()
        .map(|m| m.values().filter_map(|j| j["phase"].as_str()).collect())
        .unwrap_or_default();
    let count = |p: &[&str]| statuses.iter().filter(|s| p.contains(s)).count();
    let mut out = json!({
        "metadata": meta(&o.metadata, summary),
        "jobs": {"total": jobs, "succeeded": count(&["Succeeded"]), "failed": count(&["Failed", "Timeout", "Cancelled"]), "running": count(&["Running"])},
    });
    if let Some(p) = str_at(&o.data, &["status", "phase"]) {
        out["phase"] = json!(p);
    }
    if summary {
        return out;
    }
    if let Some(w) = str_at(&o.data, &["spec", "workflowRef", "name"])
        .or(str_at(&o.data, &["spec", "workflowRef"]))
    {
        out["workflow"] = json!(w);
    }
    for k in ["startTime", "completionTime"] {
        if let Some(v) = str_at(&o.data, &["status", k]) {
            out[k] = json!(v);
        }
    }
    if let Some(p) = parent(o) {
        out["parentWorkflowRun"] = json!(p);
    }
    out
}

pub async fn list(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<Caller>,
    Path(ns): Path<String>,
) -> Response {
    let r: Result<Value, ConsoleError> = async {
        check_namespace(&ns)?;
        let reader = list_reader(&state, &caller)?;
        let api = kruntimes_api(reader.client().clone(), &ns, "WorkflowRun", "workflowruns");
        let list = api
            .list(&ListParams::default().limit(500))
            .await
            .map_err(|e| {
                kube_error(
                    e,
                    "listing workflowruns",
                    AccessRequest::new("list", "kruntimes.io", "workflowruns", &ns, None),
                )
            })?;
        let summary = matches!(reader, Reader::Public(_));
        let mut out =
            json!({"items": list.items.iter().map(|o| item(o, summary)).collect::<Vec<_>>()});
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

fn job_spec(j: &Value) -> Value {
    let mut out = pick(j, &["name", "runs-on", "needs", "uses", "with"]);
    if let Some(steps) = j.get("steps").and_then(Value::as_array) {
        out["steps"] = Value::Array(
            steps
                .iter()
                .map(|s| pick(s, &["name", "run", "uses", "with"]))
                .collect(),
        );
    }
    out
}

fn job_status(j: &Value) -> Value {
    let mut out = pick(
        j,
        &[
            "phase",
            "workflowRunName",
            "startTime",
            "completionTime",
            "message",
        ],
    );
    if let Some(o) = bounded_outputs(j.get("outputs")) {
        out["outputs"] = o;
    }
    if let Some(steps) = j.get("steps").and_then(Value::as_array) {
        out["steps"] = Value::Array(
            steps
                .iter()
                .map(|s| {
                    let mut st = pick(
                        s,
                        &[
                            "name",
                            "phase",
                            "runName",
                            "startTime",
                            "completionTime",
                            "message",
                        ],
                    );
                    if let Some(o) = bounded_outputs(s.get("outputs")) {
                        st["outputs"] = o;
                    }
                    st
                })
                .collect(),
        );
    }
    out
}

pub async fn detail(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<Caller>,
    Path((ns, name)): Path<(String, String)>,
) -> Response {
    let r: Result<Value, ConsoleError> = async {
        check_namespace(&ns)?;
        check_name("workflowrun", &name)?;
        let client = user_client(&state, &caller)?;
        let o = kruntimes_api(client, &ns, "WorkflowRun", "workflowruns")
            .get(&name)
            .await
            .map_err(|e| {
                kube_error(
                    e,
                    "reading the workflowrun",
                    AccessRequest::new("get", "kruntimes.io", "workflowruns", &ns, Some(&name)),
                )
            })?;
        let jobs: Map<String, Value> = o.data["spec"]["jobs"]
            .as_object()
            .map(|m| m.iter().map(|(k, v)| (k.clone(), job_spec(v))).collect())
            .unwrap_or_default();
        let mut spec = json!({"jobs": jobs});
        if let Some(w) = str_at(&o.data, &["spec", "workflowRef", "name"])
            .or(str_at(&o.data, &["spec", "workflowRef"]))
        {
            spec["workflowRef"] = json!(w);
        }
        let mut status = pick(&o.data["status"], &["phase", "startTime", "completionTime"]);
        if let Some(c) = conditions(o.data["status"].get("conditions")) {
            status["conditions"] = c;
        }
        if let Some(js) = o.data["status"]["jobs"].as_object() {
            status["jobs"] =
                Value::Object(js.iter().map(|(k, v)| (k.clone(), job_status(v))).collect());
        }
        let mut out = json!({"metadata": meta(&o.metadata, false), "spec": spec, "status": status});
        if let Some(p) = parent(&o) {
            out["parentWorkflowRun"] = json!(p);
        }
        Ok(out)
    }
    .await;
    match r {
        Ok(v) => Json(v).into_response(),
        Err(e) => e.into_response(),
    }
}
