//! The parts of the `WorkflowRun` custom resource the Console reads, and how
//! the engine links the Runs and child WorkflowRuns it creates for one.

use std::collections::BTreeMap;

use kube::CustomResource;
use kube::api::ObjectMeta;
use serde::{Deserialize, Serialize};

/// Label on the Runs and child WorkflowRuns the engine creates for a
/// WorkflowRun: that WorkflowRun's UID.
pub const UID_LABEL: &str = "kruntimes.io/workflowrun-uid";
/// Label on a step's Run: the job id.
pub const JOB_LABEL: &str = "kruntimes.io/workflow-job";
/// Label on a step's Run: the step name.
pub const STEP_LABEL: &str = "kruntimes.io/workflow-step";
/// Label on the Run of an Action's step: that step's name within the Action.
pub const ACTION_STEP_LABEL: &str = "kruntimes.io/workflow-action-step";

/// Spec of a WorkflowRun: its jobs (the engine copies them from the Workflow
/// it was triggered from; there is no reference to the Workflow).
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize)]
#[kube(
    group = "kruntimes.io",
    version = "v1alpha1",
    kind = "WorkflowRun",
    plural = "workflowruns",
    namespaced,
    status = "WorkflowRunStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowRunSpec {
    /// Job id to job. Jobs run in parallel unless ordered by `needs`.
    #[serde(default)]
    pub jobs: BTreeMap<String, JobSpec>,
}

/// `spec.jobs.<id>`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct JobSpec {
    /// `runs-on`: the Runtime that executes the job's steps.
    #[serde(rename = "runs-on", default)]
    pub runs_on: Option<String>,
    /// Ids of the jobs that must finish before this one starts.
    #[serde(default)]
    pub needs: Option<Vec<String>>,
    /// The job's steps, run in order.
    #[serde(default)]
    pub steps: Option<Vec<StepSpec>>,
    /// A reusable Workflow this job calls (a child WorkflowRun).
    #[serde(default)]
    pub uses: Option<String>,
    /// Inputs passed to the reusable Workflow named by `uses`.
    #[serde(default)]
    pub with: Option<serde_json::Value>,
}

/// `spec.jobs.<id>.steps[i]`: a script (`run`) or an Action call (`uses`).
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct StepSpec {
    /// Step name, unique within the job.
    #[serde(default)]
    pub name: Option<String>,
    /// Inline script the step executes as a child Run.
    #[serde(default)]
    pub run: Option<String>,
    /// Name of an Action in the same namespace that the step calls.
    #[serde(default)]
    pub uses: Option<String>,
    /// Inputs of the Action named by `uses`.
    #[serde(default)]
    pub with: Option<serde_json::Value>,
}

/// Status of a WorkflowRun. The engine writes no start or completion time:
/// those come from the Runs of its steps.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkflowRunStatus {
    /// Lifecycle phase as the engine writes it.
    #[serde(default)]
    pub phase: Option<String>,
    /// Why the WorkflowRun failed to start, or to call a Workflow or Action.
    #[serde(default)]
    pub message: Option<String>,
    /// The execution snapshot of the Workflow and Actions this run uses.
    #[serde(default)]
    pub snapshot_name: Option<String>,
    /// Job id to that job's progress.
    #[serde(default)]
    pub jobs: Option<BTreeMap<String, JobStatus>>,
    /// The WorkflowRun's conditions (metav1.Condition shape), kept as written.
    #[serde(default)]
    pub conditions: Option<serde_json::Value>,
}

/// `status.jobs.<id>`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JobStatus {
    /// Pending, Waiting, Running, Succeeded, Failed or Skipped.
    #[serde(default)]
    pub phase: Option<String>,
    /// Jobs that finished before this one started.
    #[serde(default)]
    pub pre: Option<Vec<String>>,
    /// The child WorkflowRun created for a job that calls a reusable Workflow.
    #[serde(default)]
    pub workflow_run_name: Option<String>,
    /// Job outputs (for example `result`), kept as written.
    #[serde(default)]
    pub outputs: Option<serde_json::Value>,
    /// Progress of the job's steps, in declaration order.
    #[serde(default)]
    pub steps: Option<Vec<StepStatus>>,
}

/// `status.jobs.<id>.steps[i]`. A step that calls an Action has no
/// `runName`: its Runs are in `actionSteps`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct StepStatus {
    /// Step name, as in the spec.
    #[serde(default)]
    pub name: Option<String>,
    /// Step phase as the engine writes it.
    #[serde(default)]
    pub phase: Option<String>,
    /// The child Run executing a `run` step; unset for a step that calls an
    /// Action.
    #[serde(default)]
    pub run_name: Option<String>,
    /// Outputs the step reported, kept as written.
    #[serde(default)]
    pub outputs: Option<serde_json::Value>,
    /// Progress of the called Action's steps, for a step that calls an Action.
    #[serde(default)]
    pub action_steps: Option<Vec<ActionStepStatus>>,
}

/// `status.jobs.<id>.steps[i].actionSteps[j]`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ActionStepStatus {
    /// Step name within the Action.
    #[serde(default)]
    pub name: Option<String>,
    /// Step phase as the engine writes it.
    #[serde(default)]
    pub phase: Option<String>,
    /// The child Run executing this step of the Action.
    #[serde(default)]
    pub run_name: Option<String>,
    /// Outputs reported by the step's Run, kept as written.
    #[serde(default)]
    pub outputs: Option<serde_json::Value>,
}

impl StepStatus {
    /// The names of the Runs of this step: its own, or its Action's steps'.
    pub fn run_names(&self) -> impl Iterator<Item = &str> {
        self.run_name.as_deref().into_iter().chain(
            self.action_steps
                .iter()
                .flatten()
                .filter_map(|a| a.run_name.as_deref()),
        )
    }
}

impl WorkflowRun {
    /// The WorkflowRun whose reusable-workflow job created this one.
    pub fn parent(&self) -> Option<&str> {
        controller_workflow_run(&self.metadata)
    }

    /// Every Run name the steps and Action steps of all jobs name.
    pub fn run_names(&self) -> impl Iterator<Item = &str> {
        self.status
            .iter()
            .flat_map(|s| s.jobs.iter().flatten())
            .flat_map(|(_, j)| j.steps.iter().flatten())
            .flat_map(StepStatus::run_names)
    }

    /// Where `run` sits among this WorkflowRun's steps, found by name.
    pub fn step_of(&self, run: &str) -> Option<StepRef> {
        let name = self.metadata.name.clone()?;
        let jobs = self.status.as_ref()?.jobs.as_ref()?;
        jobs.iter().find_map(|(job, status)| {
            status.steps.iter().flatten().find_map(|step| {
                let action_step = if step.run_name.as_deref() == Some(run) {
                    None
                } else {
                    let a = step
                        .action_steps
                        .iter()
                        .flatten()
                        .find(|a| a.run_name.as_deref() == Some(run))?;
                    Some(a.name.clone().unwrap_or_default())
                };
                Some(StepRef {
                    name: name.clone(),
                    job: Some(job.clone()),
                    step: step.name.clone(),
                    action_step,
                })
            })
        })
    }
}

/// The name of the WorkflowRun that controls an object (its controller
/// owner reference of that kind).
pub fn controller_workflow_run(meta: &ObjectMeta) -> Option<&str> {
    meta.owner_references
        .iter()
        .flatten()
        .find(|r| {
            r.kind == "WorkflowRun"
                && r.api_version.starts_with("kruntimes.io/")
                && r.controller == Some(true)
        })
        .map(|r| r.name.as_str())
}

/// Where a Run sits in a WorkflowRun: the WorkflowRun, and the job, step and
/// Action step when known.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StepRef {
    /// The WorkflowRun's name (same namespace as the Run).
    pub name: String,
    /// The job id, when known.
    pub job: Option<String>,
    /// The step's name within the job, when known.
    pub step: Option<String>,
    /// The step within the called Action, for a Run of an Action's step.
    pub action_step: Option<String>,
}

impl StepRef {
    /// Read from a Run the engine created: its WorkflowRun owner and labels.
    pub fn of(meta: &ObjectMeta) -> Option<StepRef> {
        let name = controller_workflow_run(meta)?.to_owned();
        let label = |k: &str| {
            meta.labels
                .as_ref()
                .and_then(|l| l.get(k))
                .filter(|v| !v.is_empty())
                .cloned()
        };
        Some(StepRef {
            name,
            job: label(JOB_LABEL),
            step: label(STEP_LABEL),
            action_step: label(ACTION_STEP_LABEL),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn wr() -> WorkflowRun {
        serde_json::from_value(json!({
            "apiVersion": "kruntimes.io/v1alpha1", "kind": "WorkflowRun",
            "metadata": {"name": "release-1-4", "namespace": "team-a",
                "ownerReferences": [{"apiVersion": "kruntimes.io/v1alpha1", "kind": "WorkflowRun",
                    "name": "nightly", "uid": "u0", "controller": true}]},
            "spec": {"jobs": {"build": {"runs-on": "bash", "steps": [{"name": "compile", "run": "make"}]}}},
            "status": {"phase": "Running", "jobs": {
                "build": {"phase": "Running", "steps": [
                    {"name": "compile", "phase": "Succeeded", "runName": "r1"},
                    {"name": "setup", "phase": "Running", "actionSteps": [
                        {"name": "fetch", "phase": "Succeeded", "runName": "r2"},
                        {"name": "unpack", "phase": "Running", "runName": "r3"}]}]}}},
        }))
        .unwrap()
    }

    #[test]
    fn action_steps_name_their_runs() {
        let w = wr();
        assert_eq!(w.run_names().collect::<Vec<_>>(), ["r1", "r2", "r3"]);
        let s = w.step_of("r3").unwrap();
        assert_eq!(
            (
                s.job.as_deref(),
                s.step.as_deref(),
                s.action_step.as_deref()
            ),
            (Some("build"), Some("setup"), Some("unpack"))
        );
        assert_eq!(w.step_of("r1").unwrap().action_step, None);
        assert!(w.step_of("r9").is_none());
        assert_eq!(w.parent(), Some("nightly"));
    }

    #[test]
    fn a_run_names_its_workflowrun_by_owner_and_labels() {
        let meta: ObjectMeta = serde_json::from_value(json!({
            "name": "release-1-4-3f2a9c0d1e",
            "labels": {UID_LABEL: "u1", JOB_LABEL: "build", STEP_LABEL: "setup",
                       ACTION_STEP_LABEL: "fetch"},
            "ownerReferences": [{"apiVersion": "kruntimes.io/v1alpha1", "kind": "WorkflowRun",
                "name": "release-1-4", "uid": "u1", "controller": true}]}))
        .unwrap();
        assert_eq!(
            StepRef::of(&meta),
            Some(StepRef {
                name: "release-1-4".into(),
                job: Some("build".into()),
                step: Some("setup".into()),
                action_step: Some("fetch".into()),
            })
        );
        // Labels alone (no owner) do not name a WorkflowRun.
        let meta: ObjectMeta =
            serde_json::from_value(json!({"name": "x", "labels": {JOB_LABEL: "build"}})).unwrap();
        assert_eq!(StepRef::of(&meta), None);
    }
}
