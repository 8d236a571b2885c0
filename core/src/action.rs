//! The parts of the `Action` custom resource the Console reads: a reusable
//! step definition that WorkflowRun steps call with `uses`. Step `env`
//! values are never deserialized; only their names are kept.

use std::collections::BTreeMap;

use kube::CustomResource;
use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize};

/// Spec of an Action.
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize)]
#[kube(
    group = "kruntimes.io",
    version = "v1alpha1",
    kind = "Action",
    plural = "actions",
    namespaced,
    status = "ActionStatus",
    schema = "disabled"
)]
pub struct ActionSpec {
    /// Input name to declaration.
    #[serde(default)]
    pub inputs: BTreeMap<String, ActionInput>,
    /// Output name to the expression that computes it.
    #[serde(default)]
    pub outputs: BTreeMap<String, ActionOutput>,
    /// Steps in the order they run.
    #[serde(default)]
    pub steps: Vec<ActionStep>,
}

/// `spec.inputs.<name>`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ActionInput {
    /// `string` (the only type the engine knows; it is the default).
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// Whether a caller must pass the input.
    #[serde(default)]
    pub required: bool,
    /// The value used when the caller passes none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default: Option<String>,
}

/// `spec.outputs.<name>`.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ActionOutput {
    /// A `${{ }}` expression evaluated after the steps ran.
    #[serde(default)]
    pub value: String,
}

/// `spec.steps[i]`: an Action step runs a script.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ActionStep {
    /// Step name; it becomes a label value on the step's Run.
    #[serde(default)]
    pub name: String,
    /// Inline script the step executes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run: Option<String>,
    /// Positional arguments for the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
    /// The names of the step's extra environment variables; the values are
    /// dropped while reading.
    #[serde(
        default,
        deserialize_with = "env_names",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub env: Vec<String>,
}

/// Reads an env map keeping only its keys.
fn env_names<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    let map: Option<BTreeMap<String, IgnoredAny>> = Option::deserialize(d)?;
    Ok(map.map(|m| m.into_keys().collect()).unwrap_or_default())
}

/// Status of an Action.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct ActionStatus {
    /// `metav1.Condition`s; the engine sets `Ready` when it accepts the definition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conditions: Option<serde_json::Value>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn step_env_values_are_never_kept() {
        let a: Action = serde_json::from_value(json!({
            "apiVersion": "kruntimes.io/v1alpha1", "kind": "Action",
            "metadata": {"name": "setup", "namespace": "team-a"},
            "spec": {
                "inputs": {"version": {"required": true}, "mode": {"type": "string", "default": "fast"}},
                "outputs": {"path": {"value": "${{ steps.install.outputs.path }}"}},
                "steps": [{"name": "install", "run": "echo", "env": {"TOKEN": "s3cr3t"}}],
            },
        }))
        .unwrap();
        assert_eq!(a.spec.steps[0].env, ["TOKEN"]);
        assert!(a.spec.inputs["version"].required);
        assert_eq!(a.spec.inputs["mode"].default.as_deref(), Some("fast"));
        assert!(!serde_json::to_string(&a).unwrap().contains("s3cr3t"));
    }
}
