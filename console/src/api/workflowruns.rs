//! WorkflowRuns: list and detail (jobs, needs, steps with Run links,
//! bounded outputs, child WorkflowRun links).

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::response::Json;
use kruntimes_core::run::{Phase, Run};
use kube::api::{DynamicObject, ListParams};
use serde_json::Value;

use super::listing::{PUBLIC_SCAN_PAGES, SCAN_PAGES, check_public_list, parse_list_query};
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
    RawQuery(raw): RawQuery,
) -> Result<Json<WorkflowRunList>, ConsoleError> {
    check_namespace(&ns)?;
    let q = parse_list_query(raw.as_deref(), "WorkflowRun")?;
    let reader = list_reader(&state, &caller)?;
    let summary = matches!(reader, Reader::Public(_));
    if summary {
        check_public_list(&q)?;
    }
    let api = kruntimes_api(reader.client().clone(), &ns, "WorkflowRun", "workflowruns");
    let max_pages = if summary {
        PUBLIC_SCAN_PAGES
    } else {
        SCAN_PAGES
    };
    let page = q.page(&api, max_pages).await.map_err(|e| {
        KubeFailure::new(
            e,
            "listing workflowruns",
            AccessRequest::new("list", "kruntimes.io", "workflowruns", &ns, None),
        )
    })?;
    let items = page.items.iter().map(|o| item(o, summary)).collect();
    Ok(Json(ListResponse {
        cont: page.cont,
        remaining_item_count: page.remaining,
        ..ListResponse::new(items, summary)
    }))
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
    let o = kruntimes_api(client.clone(), &ns, "WorkflowRun", "workflowruns")
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
    let mut job_statuses: Option<BTreeMap<String, JobStatus>> = status["jobs"]
        .as_object()
        .map(|js| js.iter().map(|(k, v)| (k.clone(), job_status(v))).collect());
    if let Some(js) = job_statuses.as_mut() {
        let times = step_run_times(&client, &ns, js).await;
        fill_times(js, &times);
    }
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
            jobs: job_statuses,
        },
        parent_workflow_run: parent(&o),
    }))
}

/// Most Runs read to time the steps of one WorkflowRun.
const MAX_TIMED_RUNS: u32 = 500;

/// Start and completion of a step's Run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunTimes {
    pub start: Option<String>,
    pub completion: Option<String>,
}

/// The times of the Runs the steps name, read with the caller's token (one
/// list of the namespace's Runs); none when the caller may not list Runs.
async fn step_run_times(
    client: &kube::Client,
    ns: &str,
    jobs: &BTreeMap<String, JobStatus>,
) -> HashMap<String, RunTimes> {
    let wanted: HashSet<&str> = jobs
        .values()
        .flat_map(|j| j.steps.iter().flatten())
        .filter_map(|s| s.run_name.as_ref().and_then(Value::as_str))
        .collect();
    if wanted.is_empty() {
        return HashMap::new();
    }
    let api: kube::Api<Run> = kube::Api::namespaced(client.clone(), ns);
    let Ok(list) = api.list(&ListParams::default().limit(MAX_TIMED_RUNS)).await else {
        return HashMap::new();
    };
    list.items
        .into_iter()
        .filter_map(|r| {
            let name = r.metadata.name.clone()?;
            if !wanted.contains(name.as_str()) {
                return None;
            }
            let st = r.status.unwrap_or_default();
            Some((
                name,
                RunTimes {
                    start: st.start_time,
                    completion: st.completion_time,
                },
            ))
        })
        .collect()
}

/// Steps without times take their Run's; a job without times spans its steps
/// (its completion only once every step with a Run completed).
pub fn fill_times(jobs: &mut BTreeMap<String, JobStatus>, runs: &HashMap<String, RunTimes>) {
    for job in jobs.values_mut() {
        let Some(steps) = job.steps.as_mut() else {
            continue;
        };
        for step in steps.iter_mut() {
            let Some(t) = step
                .run_name
                .as_ref()
                .and_then(Value::as_str)
                .and_then(|n| runs.get(n))
            else {
                continue;
            };
            if step.start_time.is_none() {
                step.start_time = t.start.clone().map(Value::String);
            }
            if step.completion_time.is_none() {
                step.completion_time = t.completion.clone().map(Value::String);
            }
        }
        let starts: Vec<&str> = steps
            .iter()
            .filter_map(|s| s.start_time.as_ref().and_then(Value::as_str))
            .collect();
        if job.start_time.is_none()
            && let Some(first) = starts.iter().min()
        {
            job.start_time = Some(Value::String((*first).to_owned()));
        }
        let run_steps: Vec<&StepStatus> = steps.iter().filter(|s| s.run_name.is_some()).collect();
        let ends: Vec<&str> = run_steps
            .iter()
            .filter_map(|s| s.completion_time.as_ref().and_then(Value::as_str))
            .collect();
        if job.completion_time.is_none()
            && !run_steps.is_empty()
            && ends.len() == run_steps.len()
            && let Some(last) = ends.iter().max()
        {
            job.completion_time = Some(Value::String((*last).to_owned()));
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn steps_and_jobs_take_their_times_from_the_step_runs() {
        let mut jobs: BTreeMap<String, JobStatus> = [
            (
                "lint",
                json!({"phase": "Failed", "steps": [{"name": "lint", "runName": "r1"}]}),
            ),
            (
                "build",
                json!({"phase": "Running", "steps": [
                {"name": "a", "runName": "r2"}, {"name": "b", "runName": "r3"}]}),
            ),
            (
                "given",
                json!({"phase": "Succeeded", "startTime": "2026-01-01T00:00:00Z",
                "steps": [{"name": "x", "runName": "r1", "startTime": "2026-01-01T00:00:01Z"}]}),
            ),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), job_status(&v)))
        .collect();
        let t = |s: &str, e: Option<&str>| RunTimes {
            start: Some(s.to_owned()),
            completion: e.map(str::to_owned),
        };
        let runs: HashMap<String, RunTimes> = [
            (
                "r1".to_owned(),
                t("2026-01-01T10:00:00Z", Some("2026-01-01T10:01:00Z")),
            ),
            (
                "r2".to_owned(),
                t("2026-01-01T10:02:00Z", Some("2026-01-01T10:03:00Z")),
            ),
            ("r3".to_owned(), t("2026-01-01T10:03:00Z", None)),
        ]
        .into_iter()
        .collect();
        fill_times(&mut jobs, &runs);
        let lint = &jobs["lint"];
        assert_eq!(lint.start_time, Some(json!("2026-01-01T10:00:00Z")));
        assert_eq!(lint.completion_time, Some(json!("2026-01-01T10:01:00Z")));
        let build = &jobs["build"];
        assert_eq!(build.start_time, Some(json!("2026-01-01T10:02:00Z")));
        // One step still runs: the job has no end yet.
        assert_eq!(build.completion_time, None);
        assert_eq!(build.steps.as_ref().unwrap()[1].completion_time, None);
        // Times the WorkflowRun states itself win.
        let given = &jobs["given"];
        assert_eq!(given.start_time, Some(json!("2026-01-01T00:00:00Z")));
        assert_eq!(
            given.steps.as_ref().unwrap()[0].start_time,
            Some(json!("2026-01-01T00:00:01Z"))
        );
    }
}
