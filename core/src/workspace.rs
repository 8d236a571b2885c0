//! The parts of the `PersistentWorkspace` custom resource the Console reads:
//! workspace data kept in the workspace volume of one Pod of a Runtime.

use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// Spec of a PersistentWorkspace.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize)]
#[kube(
    group = "kruntimes.io",
    version = "v1alpha1",
    kind = "PersistentWorkspace",
    plural = "persistentworkspaces",
    shortname = "pw",
    namespaced,
    status = "PersistentWorkspaceStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct PersistentWorkspaceSpec {
    /// The Runtime whose workspace volume holds the data.
    #[serde(default)]
    pub runtime: String,
    /// `RuntimePodLocal` (the default and only mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// Seconds the data is kept after the last use (ignored with `Retain`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds_after_unused: Option<i64>,
    /// `DeleteAfterTTL` (the default) or `Retain`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cleanup_policy: Option<String>,
}

/// Status of a PersistentWorkspace.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PersistentWorkspaceStatus {
    /// `Pending`, `Bound`, `Lost` or `Released`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// The Runtime observed backing the workspace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<String>,
    /// The Runtime Pod that holds the data now.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bound_pod: Option<String>,
    /// The workspace's path in that Pod's workspace volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// When a Run last used the workspace (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_time: Option<String>,
    /// `metav1.Condition`s (`Accepted`, `RuntimeReady`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<serde_json::Value>,
}

impl PersistentWorkspace {
    /// The phase as written; the engine's default is `Pending`.
    pub fn phase(&self) -> &str {
        self.status
            .as_ref()
            .and_then(|s| s.phase.as_deref())
            .unwrap_or("Pending")
    }

    /// The bound Pod's name, when one is bound.
    pub fn bound_pod(&self) -> Option<&str> {
        self.status
            .as_ref()?
            .bound_pod
            .as_deref()
            .filter(|p| !p.is_empty())
    }
}
