//! The parts of the `Run` custom resource this server reads.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use serde::{Deserialize, Serialize};
use ts_rs::TS;

use crate::runtime::{RUNS, quantity_text, whole_quantity};

/// `status.phase` of a Run. `Ready` is active and non-terminal (session and function Runs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize, Serialize, TS)]
#[ts(rename = "RunPhase")]
pub enum Phase {
    /// Waiting to be placed on a Runtime Pod.
    Pending,
    /// Placed on a Runtime Pod (`status.assignedPod` set), not yet claimed by
    /// the Pod's runtimed.
    Scheduled,
    /// Claimed by runtimed and executing.
    Running,
    /// A function or session Run that is up and takes invocations or
    /// operations: active, not terminal.
    Ready,
    /// Finished with success.
    Succeeded,
    /// Finished with a failure; `status.message` and the conditions say why.
    Failed,
    /// Ended because it ran longer than `spec.timeout`.
    Timeout,
    /// Ended because cancellation was asked for.
    Cancelled,
}

impl Phase {
    /// Every phase, in the order a Run passes through them.
    pub const ALL: [Phase; 8] = [
        Phase::Pending,
        Phase::Scheduled,
        Phase::Running,
        Phase::Ready,
        Phase::Succeeded,
        Phase::Failed,
        Phase::Timeout,
        Phase::Cancelled,
    ];

    /// Phases after which a Run changes no more.
    pub const TERMINAL: [Phase; 4] = [
        Phase::Succeeded,
        Phase::Failed,
        Phase::Timeout,
        Phase::Cancelled,
    ];

    /// The phases a finished job or step counts as failed in.
    pub const FAILED: [Phase; 3] = [Phase::Failed, Phase::Timeout, Phase::Cancelled];

    /// The phase as `status.phase` writes it.
    pub fn as_str(self) -> &'static str {
        match self {
            Phase::Pending => "Pending",
            Phase::Scheduled => "Scheduled",
            Phase::Running => "Running",
            Phase::Ready => "Ready",
            Phase::Succeeded => "Succeeded",
            Phase::Failed => "Failed",
            Phase::Timeout => "Timeout",
            Phase::Cancelled => "Cancelled",
        }
    }

    /// The phase written as `s`, when it is one.
    pub fn parse(s: &str) -> Option<Phase> {
        Phase::ALL.into_iter().find(|p| p.as_str() == s)
    }

    /// Whether the Run changes no more in this phase (one of
    /// [`Phase::TERMINAL`]).
    pub fn is_terminal(self) -> bool {
        Phase::TERMINAL.contains(&self)
    }
}

impl std::fmt::Display for Phase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Is `phase` (as written in a status) one after which nothing changes?
pub fn is_terminal_phase(phase: &str) -> bool {
    Phase::parse(phase).is_some_and(Phase::is_terminal)
}

/// Spec of a Run (only what the log API and Console read; `env` is never deserialized).
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize)]
#[kube(
    group = "kruntimes.io",
    version = "v1alpha1",
    kind = "Run",
    plural = "runs",
    namespaced,
    status = "RunStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct RunSpec {
    /// Name of the Runtime whose Pods execute the Run (they carry the label
    /// `runtime=<name>`).
    #[serde(default)]
    pub runtime: String,
    /// The execution mode; `None` when the spec sets none.
    #[serde(default)]
    pub mode: Option<RunMode>,
    /// Duration string as written in the spec, e.g. `10m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// `spec.retryPolicy` as written (attempts, backoff, retried reasons);
    /// unset means a single attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_policy: Option<serde_json::Value>,
    /// What the Run takes from its Pod's capacity while active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<RunResources>,
}

/// `spec.resources`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct RunResources {
    /// Resource name to the amount the Run takes while it is Scheduled, Running
    /// or Ready.
    #[serde(default)]
    pub requests: std::collections::BTreeMap<String, IntOrString>,
}

impl RunSpec {
    /// The capacity the Run takes, as the engine's scheduler counts it: each
    /// request a whole quantity, and `runs: 1` unless it asks for more.
    /// `None` when a request is not a whole non-negative quantity (the
    /// engine then counts nothing for the Run).
    pub fn requests(&self) -> Option<std::collections::BTreeMap<String, i64>> {
        let mut out = std::collections::BTreeMap::new();
        for (name, q) in self.resources.iter().flat_map(|r| &r.requests) {
            let n = whole_quantity(&quantity_text(q))?;
            if n > 0 {
                out.insert(name.clone(), n);
            }
        }
        out.entry(RUNS.to_owned()).or_insert(1);
        Some(out)
    }
}

/// `spec.mode`: exactly one of the modes is set.
#[derive(Clone, Debug, Default, Deserialize, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct RunMode {
    /// A one-shot execution (`entrypoint`, `args`), kept as written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(type = "Record<string, unknown>")]
    pub task: Option<serde_json::Value>,
    /// A callable function (`handler`), kept as written: once Ready it serves
    /// `/v1/.../invoke`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(type = "Record<string, unknown>")]
    pub function: Option<serde_json::Value>,
    /// An interactive session: once Ready it takes operations over
    /// `/v1/.../operations:ws`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionMode>,
}

impl RunMode {
    /// Which of the three modes is set.
    pub fn name(&self) -> Option<ModeName> {
        if self.task.as_ref().is_some_and(|v| !v.is_null()) {
            Some(ModeName::Task)
        } else if self.function.as_ref().is_some_and(|v| !v.is_null()) {
            Some(ModeName::Function)
        } else if self.session.is_some() {
            Some(ModeName::Session)
        } else {
            None
        }
    }
}

/// Which of the three modes a Run uses (exactly one of `spec.mode.*`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "RunModeName")]
pub enum ModeName {
    /// `spec.mode.task`: a one-shot execution.
    Task,
    /// `spec.mode.function`: a function invoked through `/v1/.../invoke`.
    Function,
    /// `spec.mode.session`: a session driven over `/v1/.../operations:ws`.
    Session,
}

/// `spec.mode.session`: the settings of a session Run.
#[derive(Clone, Debug, Default, Deserialize, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct SessionMode {
    /// When set, the browser sends `heartbeat` frames while an operations socket is open.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub lease_seconds: Option<i64>,
}

/// Status of a Run.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunStatus {
    /// Lifecycle phase as written; unset reads as Pending ([`Run::phase`]).
    #[serde(default)]
    pub phase: Option<String>,
    /// Name of the Runtime Pod executing the Run.
    #[serde(default)]
    pub assigned_pod: Option<String>,
    /// UID of the assigned Pod, set and cleared with its name: tells a replaced
    /// Pod of the same name apart.
    #[serde(default, rename = "assignedPodUID")]
    pub assigned_pod_uid: Option<String>,
    /// When execution began (RFC 3339): set when runtimed claims the Run.
    #[serde(default)]
    pub start_time: Option<String>,
    /// When the Run reached a terminal phase (RFC 3339).
    #[serde(default)]
    pub completion_time: Option<String>,
    /// Human-readable summary of the current state (why the Run waits, or
    /// failed).
    #[serde(default)]
    pub message: Option<String>,
    /// 1-based.
    #[serde(default)]
    pub attempt: Option<i64>,
    /// Stable endpoint of a Ready function or session Run (`protocol`, `url`,
    /// `caBundle`), kept as written.
    #[serde(default)]
    pub endpoint: Option<serde_json::Value>,
    /// Key-value outputs the execution reported (at most 64 keys), kept as
    /// written.
    #[serde(default)]
    pub outputs: Option<serde_json::Value>,
    /// The Run's conditions (metav1.Condition shape), kept as written.
    #[serde(default)]
    pub conditions: Option<serde_json::Value>,
    /// References to the artifacts the Run stored outside etcd, kept as
    /// written.
    #[serde(default)]
    pub artifact_refs: Option<serde_json::Value>,
}

impl Run {
    /// `status.phase`, or `Pending` while the status names none.
    pub fn phase(&self) -> &str {
        self.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Pending")
    }

    /// Whether the Run is in a terminal phase and changes no more.
    pub fn is_terminal(&self) -> bool {
        is_terminal_phase(self.phase())
    }

    /// The assigned Pod's name and UID, when both are known.
    pub fn assignment(&self) -> Option<(&str, &str)> {
        let s = self.status.as_ref()?;
        let pod = s.assigned_pod.as_deref().filter(|p| !p.is_empty())?;
        let uid = s.assigned_pod_uid.as_deref().filter(|u| !u.is_empty())?;
        Some((pod, uid))
    }

    /// Completion time, when set and valid.
    pub fn completion_time(&self) -> Option<jiff::Timestamp> {
        self.status
            .as_ref()?
            .completion_time
            .as_deref()?
            .parse()
            .ok()
    }

    /// Whether the Run takes capacity on its Pod (Scheduled, Running, Ready).
    pub fn is_active(&self) -> bool {
        matches!(self.phase(), "Scheduled" | "Running" | "Ready")
    }

    /// The WorkflowRun step that created this Run: its controller owner of
    /// kind WorkflowRun and the engine's job, step and action-step labels.
    pub fn workflow_step(&self) -> Option<crate::workflowrun::StepRef> {
        crate::workflowrun::StepRef::of(&self.metadata)
    }

    /// Start time, when set and valid.
    pub fn start_time(&self) -> Option<jiff::Timestamp> {
        self.status.as_ref()?.start_time.as_deref()?.parse().ok()
    }
}
