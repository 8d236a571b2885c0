//! WorkflowRuns: list and detail (jobs, needs, steps with Run links,
//! bounded outputs, child WorkflowRun links).

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Json;
use kruntimes_core::run::Phase;
use kube::api::{DynamicObject, ListParams};
use serde_json::Value;

use super::objects::{bounded_outputs, conditions, lenient, meta, present};
use super::types::{
    JobCounts, JobSpec, JobStatus, ListResponse, StepStatus, WorkflowRunDetail, WorkflowRunList,
    WorkflowRunListItem, WorkflowRunSpecView, WorkflowRunStatusView,
};
use super::{
    ApiPath, Reader, check_name, check_namespace, kruntimes_api, list_reader, user_client,
};
use crate::api::types::AccessRequest;
use crate::error::{ConsoleError, KubeFailure};
use crate::state::{ConsoleState, RequestCredentials};

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

/// A string field as written.
fn text(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned)
}

/// `spec.workflowRef`: `{name}` or the name itself.
fn workflow_ref(o: &DynamicObject) -> Option<String> {
    let r = &o.data["spec"]["workflowRef"];
    text(r, "name").or_else(|| r.as_str().map(str::to_owned))
}

fn item(o: &DynamicObject, summary: bool) -> WorkflowRunListItem {
    let jobs = o.data["spec"]["jobs"]
        .as_object()
        .map(serde_json::Map::len)
        .unwrap_or(0);
    let statuses: Vec<&str> = o.data["status"]["jobs"]
        .as_object()
        .map(|m| m.values().filter_map(|j| j["phase"].as_str()).collect())
        .unwrap_or_default();
    let count = |p: &[Phase]| {
        statuses
            .iter()
            .filter(|s| p.iter().any(|p| p.as_str() == **s))
            .count()
    };
    let mut out = WorkflowRunListItem {
        metadata: meta(&o.metadata, summary),
        phase: text(&o.data["status"], "phase"),
        workflow: None,
        jobs: JobCounts {
            total: jobs,
            succeeded: count(&[Phase::Succeeded]),
            failed: count(&Phase::FAILED),
            running: count(&[Phase::Running]),
        },
        start_time: None,
        completion_time: None,
        parent_workflow_run: None,
    };
    if summary {
        return out;
    }
    out.workflow = workflow_ref(o);
    out.start_time = text(&o.data["status"], "startTime");
    out.completion_time = text(&o.data["status"], "completionTime");
    out.parent_workflow_run = parent(o);
    out
}

pub async fn list(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath(ns): ApiPath<String>,
) -> Result<Json<WorkflowRunList>, ConsoleError> {
    check_namespace(&ns)?;
    let reader = list_reader(&state, &caller)?;
    let api = kruntimes_api(reader.client().clone(), &ns, "WorkflowRun", "workflowruns");
    let list = api
        .list(&ListParams::default().limit(500))
        .await
        .map_err(|e| {
            KubeFailure::new(
                e,
                "listing workflowruns",
                AccessRequest::new("list", "kruntimes.io", "workflowruns", &ns, None),
            )
        })?;
    let summary = matches!(reader, Reader::Public(_));
    let items = list.items.iter().map(|o| item(o, summary)).collect();
    Ok(Json(ListResponse::new(items, summary)))
}

fn job_spec(j: &Value) -> JobSpec {
    JobSpec {
        name: present(j.get("name")),
        runs_on: present(j.get("runs-on")),
        needs: present(j.get("needs")),
        steps: j
            .get("steps")
            .and_then(Value::as_array)
            .map(|steps| steps.iter().map(lenient).collect()),
        uses: present(j.get("uses")),
        with: present(j.get("with")),
    }
}

fn step_status(s: &Value) -> StepStatus {
    StepStatus {
        name: present(s.get("name")),
        phase: present(s.get("phase")),
        run_name: present(s.get("runName")),
        outputs: bounded_outputs(s.get("outputs")),
        start_time: present(s.get("startTime")),
        completion_time: present(s.get("completionTime")),
        message: present(s.get("message")),
    }
}

fn job_status(j: &Value) -> JobStatus {
    JobStatus {
        phase: present(j.get("phase")),
        steps: j
            .get("steps")
            .and_then(Value::as_array)
            .map(|steps| steps.iter().map(step_status).collect()),
        outputs: bounded_outputs(j.get("outputs")),
        workflow_run_name: present(j.get("workflowRunName")),
        start_time: present(j.get("startTime")),
        completion_time: present(j.get("completionTime")),
        message: present(j.get("message")),
    }
}

pub async fn detail(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<WorkflowRunDetail>, ConsoleError> {
    check_namespace(&ns)?;
    check_name("workflowrun", &name)?;
    let client = user_client(&state, &caller)?;
    let o = kruntimes_api(client, &ns, "WorkflowRun", "workflowruns")
        .get(&name)
        .await
        .map_err(|e| {
            KubeFailure::new(
                e,
                "reading the workflowrun",
                AccessRequest::new("get", "kruntimes.io", "workflowruns", &ns, Some(&name)),
            )
        })?;
    let jobs = o.data["spec"]["jobs"]
        .as_object()
        .map(|m| m.iter().map(|(k, v)| (k.clone(), job_spec(v))).collect())
        .unwrap_or_default();
    let status = &o.data["status"];
    Ok(Json(WorkflowRunDetail {
        metadata: meta(&o.metadata, false),
        spec: WorkflowRunSpecView {
            workflow_ref: workflow_ref(&o),
            jobs,
        },
        status: WorkflowRunStatusView {
            phase: present(status.get("phase")),
            start_time: present(status.get("startTime")),
            completion_time: present(status.get("completionTime")),
            conditions: conditions(status.get("conditions")),
            jobs: status["jobs"]
                .as_object()
                .map(|js| js.iter().map(|(k, v)| (k.clone(), job_status(v))).collect()),
        },
        parent_workflow_run: parent(&o),
    }))
}
