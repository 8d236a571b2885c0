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
    Pending,
    Scheduled,
    Running,
    Ready,
    Succeeded,
    Failed,
    Timeout,
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
    #[serde(default)]
    pub runtime: String,
    #[serde(default)]
    pub mode: Option<RunMode>,
    /// Duration string as written in the spec, e.g. `10m`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_policy: Option<serde_json::Value>,
    /// What the Run takes from its Pod's capacity while active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<RunResources>,
}

/// `spec.resources`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct RunResources {
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
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(type = "Record<string, unknown>")]
    pub task: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(type = "Record<string, unknown>")]
    pub function: Option<serde_json::Value>,
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
    Task,
    Function,
    Session,
}

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
    #[serde(default)]
    pub phase: Option<String>,
    #[serde(default)]
    pub assigned_pod: Option<String>,
    #[serde(default, rename = "assignedPodUID")]
    pub assigned_pod_uid: Option<String>,
    #[serde(default)]
    pub start_time: Option<String>,
    #[serde(default)]
    pub completion_time: Option<String>,
    #[serde(default)]
    pub message: Option<String>,
    /// 1-based.
    #[serde(default)]
    pub attempt: Option<i64>,
    #[serde(default)]
    pub endpoint: Option<serde_json::Value>,
    #[serde(default)]
    pub outputs: Option<serde_json::Value>,
    #[serde(default)]
    pub conditions: Option<serde_json::Value>,
    #[serde(default)]
    pub artifact_refs: Option<serde_json::Value>,
}

impl Run {
    pub fn phase(&self) -> &str {
        self.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Pending")
    }

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
