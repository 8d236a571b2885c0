//! The parts of the `Run` custom resource this server reads.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

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
}

/// Exactly one of the modes is set.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunMode {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub function: Option<serde_json::Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionMode>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionMode {
    #[serde(default, skip_serializing_if = "Option::is_none")]
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
}

/// Phases after which a Run changes no more.
pub const TERMINAL_PHASES: [&str; 4] = ["Succeeded", "Failed", "Timeout", "Cancelled"];

impl Run {
    pub fn phase(&self) -> &str {
        self.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Pending")
    }

    pub fn is_terminal(&self) -> bool {
        TERMINAL_PHASES.contains(&self.phase())
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

    /// Start time, when set and valid.
    pub fn start_time(&self) -> Option<jiff::Timestamp> {
        self.status.as_ref()?.start_time.as_deref()?.parse().ok()
    }
}
