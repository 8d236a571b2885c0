//! WorkflowRuns: list and detail (jobs, needs, steps and Action steps with
//! Run links, bounded outputs, child WorkflowRun links). The engine writes
//! no start or completion time on a WorkflowRun, its jobs or its steps:
//! they are read from the Runs of the steps.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Json;
use kruntimes_core::run::{Phase, Run};
use kruntimes_core::workflowrun::{self as wfr, WorkflowRun};
use kube::Api;
use kube::api::ListParams;

use super::listing::{ListAccess, ListedKind};

use super::objects::{bounded_outputs, conditions, lenient, meta};
use super::types::{
    ActionStepStatus, JobCounts, JobSpec, JobStatus, StepStatus, WorkflowRunDetail,
    WorkflowRunListItem, WorkflowRunSpecView, WorkflowRunStatusView,
};
use super::{ApiPath, check_name, check_namespace, user_client};
use crate::api::types::AccessRequest;
use crate::error::{ConsoleError, KubeFailure};
use crate::state::{ConsoleState, RequestCredentials};

/// Phases after which a WorkflowRun changes no more.
const DONE: [&str; 3] = ["Succeeded", "Failed", "Cancelled"];

fn item(o: &WorkflowRun, summary: bool) -> WorkflowRunListItem {
    let status = o.status.clone().unwrap_or_default();
    let statuses: Vec<String> = status
        .jobs
        .iter()
        .flatten()
        .filter_map(|(_, j)| j.phase.clone())
        .collect();
    let count = |p: &[Phase]| {
        statuses
            .iter()
            .filter(|s| p.iter().any(|p| p.as_str() == s.as_str()))
            .count()
    };
    let mut out = WorkflowRunListItem {
        metadata: meta(&o.metadata, summary),
        phase: status.phase.clone(),
        jobs: JobCounts {
            total: o.spec.jobs.len(),
            succeeded: count(&[Phase::Succeeded]),
            failed: count(&Phase::FAILED),
            running: count(&[Phase::Running]),
        },
        message: None,
        start_time: None,
        completion_time: None,
        parent_workflow_run: None,
    };
    if summary {
        return out;
    }
    out.message = status.message.filter(|m| !m.is_empty());
    out.parent_workflow_run = o.parent().map(str::to_owned);
    out
}

impl ListedKind for WorkflowRun {
    const KIND: &'static str = "WorkflowRun";
    const PLURAL: &'static str = "workflowruns";
    const LISTING: &'static str = "listing workflowruns";
    const ACCESS: ListAccess = ListAccess::PublicSummaries;
    type Item = WorkflowRunListItem;

    async fn items(
        page: &[Self],
        client: Option<&kube::Client>,
        ns: &str,
    ) -> Vec<WorkflowRunListItem> {
        let mut items: Vec<WorkflowRunListItem> =
            page.iter().map(|o| item(o, client.is_none())).collect();
        if let Some(client) = client
            && !page.is_empty()
        {
            let runs = step_runs(client, ns, page, false).await;
            for (o, it) in page.iter().zip(items.iter_mut()) {
                let (start, end) = span(o, &runs);
                it.start_time = start;
                it.completion_time = end;
            }
        }
        items
    }
}

fn job_spec(j: &wfr::JobSpec) -> JobSpec {
    JobSpec {
        runs_on: j.runs_on.clone(),
        needs: j.needs.clone(),
        steps: j.steps.as_ref().map(|steps| {
            steps
                .iter()
                .map(|s| lenient(&serde_json::json!(s)))
                .collect()
        }),
        uses: j.uses.clone(),
        with: j.with.clone().filter(|v| !v.is_null()),
    }
}

fn action_step_status(a: &wfr::ActionStepStatus) -> ActionStepStatus {
    ActionStepStatus {
        name: a.name.clone().unwrap_or_default(),
        phase: a.phase.clone(),
        run_name: a.run_name.clone().filter(|n| !n.is_empty()),
        outputs: bounded_outputs(a.outputs.as_ref()),
        start_time: None,
        completion_time: None,
    }
}

fn step_status(s: &wfr::StepStatus) -> StepStatus {
    StepStatus {
        name: s.name.clone().unwrap_or_default(),
        phase: s.phase.clone(),
        run_name: s.run_name.clone().filter(|n| !n.is_empty()),
        outputs: bounded_outputs(s.outputs.as_ref()),
        action_steps: s
            .action_steps
            .as_ref()
            .map(|a| a.iter().map(action_step_status).collect()),
        start_time: None,
        completion_time: None,
    }
}

fn job_status(j: &wfr::JobStatus) -> JobStatus {
    JobStatus {
        phase: j.phase.clone(),
        pre: j.pre.clone(),
        steps: j
            .steps
            .as_ref()
            .map(|steps| steps.iter().map(step_status).collect()),
        outputs: bounded_outputs(j.outputs.as_ref()),
        workflow_run_name: j.workflow_run_name.clone().filter(|n| !n.is_empty()),
        start_time: None,
        completion_time: None,
    }
}

/// `GET /api/namespaces/{ns}/workflowruns/{name}`: the WorkflowRun with its
/// jobs and steps timed from their Runs, read with the caller's token.
pub async fn detail(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<WorkflowRunDetail>, ConsoleError> {
    check_namespace(&ns)?;
    check_name("workflowrun", &name)?;
    let client = user_client(&state, &caller)?;
    let o = Api::<WorkflowRun>::namespaced(client.clone(), &ns)
        .get(&name)
        .await
        .map_err(|e| {
            KubeFailure::new(
                e,
                "reading the workflowrun",
                AccessRequest::new("get", "kruntimes.io", "workflowruns", &ns, Some(&name)),
            )
        })?;
    let jobs = o
        .spec
        .jobs
        .iter()
        .map(|(k, v)| (k.clone(), job_spec(v)))
        .collect();
    let status = o.status.clone().unwrap_or_default();
    let runs = step_runs(&client, &ns, std::slice::from_ref(&o), true).await;
    let mut job_statuses: Option<BTreeMap<String, JobStatus>> = status
        .jobs
        .as_ref()
        .map(|js| js.iter().map(|(k, v)| (k.clone(), job_status(v))).collect());
    if let Some(js) = job_statuses.as_mut() {
        fill_times(js, &runs);
    }
    let (start_time, completion_time) = span(&o, &runs);
    Ok(Json(WorkflowRunDetail {
        metadata: meta(&o.metadata, false),
        spec: WorkflowRunSpecView { jobs },
        status: WorkflowRunStatusView {
            phase: status.phase,
            message: status.message.filter(|m| !m.is_empty()),
            snapshot_name: status.snapshot_name.filter(|m| !m.is_empty()),
            start_time,
            completion_time,
            conditions: conditions(status.conditions.as_ref()),
            jobs: job_statuses,
        },
        parent_workflow_run: o.parent().map(str::to_owned),
    }))
}

/// Most Runs read to time WorkflowRuns (500 a page).
const MAX_TIMED_PAGES: usize = 4;

/// Start and completion of a step's Run.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RunTimes {
    /// The Run's `status.startTime` (RFC 3339).
    pub start: Option<String>,
    /// The Run's `status.completionTime` (RFC 3339).
    pub completion: Option<String>,
    /// The WorkflowRun that created the Run (its controller owner), if any.
    pub owner: Option<String>,
}

/// The times of the step Runs of `wrs` by name, read with the caller's
/// token: the Runs the engine labelled with a WorkflowRun UID (the one's
/// UID when `one`), then, for step Runs without that label, one bounded
/// list of the namespace's Runs. Empty when the caller may not list Runs.
async fn step_runs(
    client: &kube::Client,
    ns: &str,
    wrs: &[WorkflowRun],
    one: bool,
) -> HashMap<String, RunTimes> {
    let api: Api<Run> = Api::namespaced(client.clone(), ns);
    let selector = match wrs.first().and_then(|w| w.metadata.uid.as_deref()) {
        Some(uid) if one => format!("{}={uid}", wfr::UID_LABEL),
        _ => wfr::UID_LABEL.to_owned(),
    };
    let mut out = HashMap::new();
    read_runs(
        &api,
        ListParams::default().labels(&selector),
        &mut out,
        None,
    )
    .await;
    let missing: HashSet<&str> = wrs
        .iter()
        .flat_map(WorkflowRun::run_names)
        .filter(|n| !out.contains_key(*n))
        .collect();
    if !missing.is_empty() {
        read_runs(&api, ListParams::default(), &mut out, Some(&missing)).await;
    }
    out
}

async fn read_runs(
    api: &Api<Run>,
    lp: ListParams,
    out: &mut HashMap<String, RunTimes>,
    only: Option<&HashSet<&str>>,
) {
    let mut lp = lp.limit(500);
    for _ in 0..MAX_TIMED_PAGES {
        let Ok(list) = api.list(&lp).await else {
            return;
        };
        for r in list.items {
            let Some(name) = r.metadata.name.clone() else {
                continue;
            };
            if only.is_some_and(|o| !o.contains(name.as_str())) {
                continue;
            }
            let owner = wfr::controller_workflow_run(&r.metadata).map(str::to_owned);
            let st = r.status.unwrap_or_default();
            out.insert(
                name,
                RunTimes {
                    start: st.start_time,
                    completion: st.completion_time,
                    owner,
                },
            );
        }
        match list.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => lp = lp.continue_token(&c),
            None => return,
        }
    }
}

/// A WorkflowRun's start and completion, from the Runs of its steps: it
/// starts with the first of them and, once it is Succeeded, Failed or
/// Cancelled, completes with the last to complete.
pub fn span(o: &WorkflowRun, runs: &HashMap<String, RunTimes>) -> (Option<String>, Option<String>) {
    let name = o.metadata.name.as_deref();
    let mine: Vec<&RunTimes> = o
        .run_names()
        .filter_map(|n| runs.get(n))
        .chain(
            // Runs it created whose step the status does not list (yet).
            runs.values()
                .filter(|t| t.owner.is_some() && t.owner.as_deref() == name),
        )
        .collect();
    let start = mine.iter().filter_map(|t| t.start.clone()).min();
    let done = o
        .status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .is_some_and(|p| DONE.contains(&p));
    let end = done
        .then(|| mine.iter().filter_map(|t| t.completion.clone()).max())
        .flatten();
    (start, end)
}

/// Steps and Action steps take their Run's times; a step that calls an
/// Action spans its Action steps; a job spans its steps (its completion only
/// once every step with a Run completed).
pub fn fill_times(jobs: &mut BTreeMap<String, JobStatus>, runs: &HashMap<String, RunTimes>) {
    let times = |name: Option<&String>| name.and_then(|n| runs.get(n));
    for job in jobs.values_mut() {
        let Some(steps) = job.steps.as_mut() else {
            continue;
        };
        // (start, completion) of each step that has Runs.
        let mut spans: Vec<(Option<String>, Option<String>)> = Vec::new();
        for step in steps.iter_mut() {
            if let Some(t) = times(step.run_name.as_ref()) {
                step.start_time = t.start.clone();
                step.completion_time = t.completion.clone();
                spans.push((step.start_time.clone(), step.completion_time.clone()));
                continue;
            }
            let Some(actions) = step.action_steps.as_mut() else {
                continue;
            };
            let mut with_run = 0;
            let mut ends = Vec::new();
            for a in actions.iter_mut() {
                let Some(t) = times(a.run_name.as_ref()) else {
                    continue;
                };
                with_run += 1;
                a.start_time = t.start.clone();
                a.completion_time = t.completion.clone();
                ends.extend(a.completion_time.clone());
            }
            if with_run == 0 {
                continue;
            }
            step.start_time = actions.iter().filter_map(|a| a.start_time.clone()).min();
            step.completion_time = (ends.len() == with_run)
                .then(|| ends.into_iter().max())
                .flatten();
            spans.push((step.start_time.clone(), step.completion_time.clone()));
        }
        job.start_time = spans.iter().filter_map(|s| s.0.clone()).min();
        if !spans.is_empty() && spans.iter().all(|s| s.1.is_some()) {
            job.completion_time = spans.iter().filter_map(|s| s.1.clone()).max();
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn wr(v: serde_json::Value) -> WorkflowRun {
        serde_json::from_value(v).unwrap()
    }

    fn t(s: &str, e: Option<&str>) -> RunTimes {
        RunTimes {
            start: Some(s.to_owned()),
            completion: e.map(str::to_owned),
            owner: None,
        }
    }

    #[test]
    fn steps_action_steps_and_jobs_take_their_times_from_the_runs() {
        let o = wr(json!({
            "apiVersion": "kruntimes.io/v1alpha1", "kind": "WorkflowRun",
            "metadata": {"name": "w"},
            "spec": {"jobs": {}},
            "status": {"phase": "Running", "jobs": {
                "lint": {"phase": "Failed", "steps": [{"name": "lint", "phase": "Failed", "runName": "r1"}]},
                "build": {"phase": "Running", "steps": [
                    {"name": "a", "phase": "Succeeded", "runName": "r2"},
                    {"name": "setup", "phase": "Running", "actionSteps": [
                        {"name": "fetch", "phase": "Succeeded", "runName": "r3"},
                        {"name": "unpack", "phase": "Running", "runName": "r4"}]}]},
                "later": {"phase": "Waiting"}}},
        }));
        let mut jobs: BTreeMap<String, JobStatus> = o
            .status
            .as_ref()
            .unwrap()
            .jobs
            .as_ref()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), job_status(v)))
            .collect();
        let runs: HashMap<String, RunTimes> = [
            (
                "r1",
                t("2026-01-01T10:00:00Z", Some("2026-01-01T10:01:00Z")),
            ),
            (
                "r2",
                t("2026-01-01T10:02:00Z", Some("2026-01-01T10:03:00Z")),
            ),
            (
                "r3",
                t("2026-01-01T10:03:00Z", Some("2026-01-01T10:04:00Z")),
            ),
            ("r4", t("2026-01-01T10:04:00Z", None)),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v))
        .collect();
        fill_times(&mut jobs, &runs);
        let lint = &jobs["lint"];
        assert_eq!(lint.start_time.as_deref(), Some("2026-01-01T10:00:00Z"));
        assert_eq!(
            lint.completion_time.as_deref(),
            Some("2026-01-01T10:01:00Z")
        );
        let build = &jobs["build"];
        assert_eq!(build.start_time.as_deref(), Some("2026-01-01T10:02:00Z"));
        // An Action step still runs: neither the step nor the job has ended.
        assert_eq!(build.completion_time, None);
        let setup = &build.steps.as_ref().unwrap()[1];
        assert_eq!(setup.start_time.as_deref(), Some("2026-01-01T10:03:00Z"));
        assert_eq!(setup.completion_time, None);
        let fetch = &setup.action_steps.as_ref().unwrap()[0];
        assert_eq!(
            fetch.completion_time.as_deref(),
            Some("2026-01-01T10:04:00Z")
        );
        assert_eq!(jobs["later"].start_time, None);

        // Running: started with its first Run, not completed.
        assert_eq!(
            span(&o, &runs),
            (Some("2026-01-01T10:00:00Z".to_owned()), None)
        );
        // Finished: completed with its last Run.
        let mut done = o.clone();
        done.status.as_mut().unwrap().phase = Some("Failed".into());
        let mut all = runs.clone();
        all.insert(
            "r4".into(),
            t("2026-01-01T10:04:00Z", Some("2026-01-01T10:09:00Z")),
        );
        assert_eq!(
            span(&done, &all),
            (
                Some("2026-01-01T10:00:00Z".to_owned()),
                Some("2026-01-01T10:09:00Z".to_owned())
            )
        );
        // Runs of another WorkflowRun do not count.
        all.insert(
            "x".into(),
            RunTimes {
                owner: Some("other".into()),
                ..t("2026-01-01T09:00:00Z", Some("2026-01-01T11:00:00Z"))
            },
        );
        assert_eq!(span(&done, &all).0.as_deref(), Some("2026-01-01T10:00:00Z"));
    }
}
