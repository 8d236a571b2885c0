//! The parts of the `Runtime` custom resource the Console reads, and the
//! engine's capacity rules for its Pods.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use serde::{Deserialize, Serialize};

/// Label on every Pod of a Runtime: `runtime=<name>`.
pub const POD_LABEL: &str = "runtime";
/// Pod annotations `kruntimes.io/capacity.<resource>`, set only when the
/// Runtime declares `spec.capacity`.
pub const CAPACITY_ANNOTATION_PREFIX: &str = "kruntimes.io/capacity.";
/// The resource every Run takes one of unless it requests more.
pub const RUNS: &str = "runs";
/// Runs a Pod takes when neither the Runtime nor the Pod says otherwise.
pub const DEFAULT_RUNS_CAPACITY: i64 = 2;

/// Spec of a Runtime (only what the Console reads).
#[derive(CustomResource, Clone, Debug, Default, Deserialize, Serialize)]
#[kube(
    group = "kruntimes.io",
    version = "v1alpha1",
    kind = "Runtime",
    plural = "runtimes",
    namespaced,
    status = "RuntimeStatus",
    schema = "disabled"
)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeSpec {
    /// The Runtime Pods' template; its first container is the Runtime server.
    #[serde(default)]
    pub template: PodTemplate,
    /// Unset and 0 both mean one Pod to the engine.
    #[serde(default)]
    pub replicas: Option<i32>,
    /// gRPC port of the Runtime server container.
    #[serde(default)]
    pub port: Option<i32>,
    /// Per-Pod capacity used when placing Runs; unset means 2 Runs per Pod.
    #[serde(default)]
    pub capacity: Option<RuntimeCapacity>,
}

/// `spec.template`: the part of a PodTemplateSpec the Console reads.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct PodTemplate {
    /// The Runtime Pods' spec.
    #[serde(default)]
    pub spec: Option<TemplatePodSpec>,
}

/// `spec.template.spec`: the Runtime Pods' containers.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct TemplatePodSpec {
    /// Containers of the Runtime Pod; the first is the Runtime server.
    #[serde(default)]
    pub containers: Vec<TemplateContainer>,
}

/// One container of the Runtime Pod template.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct TemplateContainer {
    /// Container name, unique within the Pod.
    #[serde(default)]
    pub name: String,
    /// Container image reference.
    #[serde(default)]
    pub image: Option<String>,
}

/// `spec.capacity`: resource name to capacity per Pod.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
pub struct RuntimeCapacity {
    /// Resource name (`runs`, `gpu`, …) to the capacity of each Pod.
    #[serde(default)]
    pub resources: BTreeMap<String, IntOrString>,
}

/// Status of a Runtime. The engine declares `readyReplicas` but does not
/// always set it; the Pods' readiness is the truth.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RuntimeStatus {
    /// Runtime Pods ready to accept Runs, when the engine sets it.
    #[serde(default)]
    pub ready_replicas: Option<i32>,
    /// The Runtime's conditions (metav1.Condition shape), kept as written.
    #[serde(default)]
    pub conditions: Option<serde_json::Value>,
}

impl Runtime {
    /// The Runtime server's image: the template's first container's.
    pub fn image(&self) -> Option<&str> {
        self.spec
            .template
            .spec
            .as_ref()?
            .containers
            .first()?
            .image
            .as_deref()
            .filter(|i| !i.is_empty())
    }

    /// Pods the engine keeps: `spec.replicas`, where unset or 0 means 1.
    pub fn replicas(&self) -> i32 {
        self.spec.replicas.filter(|r| *r > 0).unwrap_or(1)
    }
}

/// Written as a quantity string (`2`, `4Ki`), whatever the JSON type was.
pub fn quantity_text(q: &IntOrString) -> String {
    match q {
        IntOrString::Int(i) => i.to_string(),
        IntOrString::String(s) => s.clone(),
    }
}

/// A quantity that is a whole number (`3`, `2k`, `1Ki`), as the engine
/// counts capacity and requests; `None` for fractions, negatives and
/// anything that is not a quantity.
pub fn whole_quantity(s: &str) -> Option<i64> {
    let s = s.trim();
    let digits = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if digits == 0 {
        return None;
    }
    let n: i64 = s[..digits].parse().ok()?;
    let factor: i64 = match &s[digits..] {
        "" => 1,
        "k" => 1_000,
        "M" => 1_000_000,
        "G" => 1_000_000_000,
        "T" => 1_000_000_000_000,
        "P" => 1_000_000_000_000_000,
        "E" => 1_000_000_000_000_000_000,
        "Ki" => 1 << 10,
        "Mi" => 1 << 20,
        "Gi" => 1 << 30,
        "Ti" => 1 << 40,
        "Pi" => 1 << 50,
        "Ei" => 1 << 60,
        _ => return None,
    };
    n.checked_mul(factor)
}

/// A Pod's capacity as the scheduler sees it: `runs: 2`, overridden and
/// extended by the Pod's `kruntimes.io/capacity.<resource>` annotations
/// (values that are not positive quantities are ignored). The flag says
/// whether the value is the engine's default rather than annotated.
pub fn pod_capacity(
    annotations: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, (String, bool)> {
    let mut out = BTreeMap::from([(RUNS.to_owned(), (DEFAULT_RUNS_CAPACITY.to_string(), true))]);
    for (k, v) in annotations.into_iter().flatten() {
        let Some(resource) = k.strip_prefix(CAPACITY_ANNOTATION_PREFIX) else {
            continue;
        };
        if resource.is_empty() || !positive_quantity(v) {
            continue;
        }
        out.insert(resource.to_owned(), (v.trim().to_owned(), false));
    }
    out
}

/// Whether `s` reads as a quantity above zero (fractions included).
fn positive_quantity(s: &str) -> bool {
    let s = s.trim();
    let end = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(end);
    let known = [
        "", "m", "k", "M", "G", "T", "P", "E", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei",
    ];
    known.contains(&suffix) && num.parse::<f64>().is_ok_and(|n| n > 0.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_quantities() {
        assert_eq!(whole_quantity("3"), Some(3));
        assert_eq!(whole_quantity("2k"), Some(2000));
        assert_eq!(whole_quantity("1Ki"), Some(1024));
        for bad in ["", "500m", "1.5", "-1", "x", "3x"] {
            assert_eq!(whole_quantity(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_pod_without_annotations_takes_two_runs() {
        let c = pod_capacity(None);
        assert_eq!(c.len(), 1);
        assert_eq!(c["runs"], ("2".to_owned(), true));
        let ann: BTreeMap<String, String> = [
            ("kruntimes.io/capacity.runs", "8"),
            ("kruntimes.io/capacity.gpu", "1"),
            ("kruntimes.io/capacity.bad", "0"),
            ("other", "5"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let c = pod_capacity(Some(&ann));
        assert_eq!(c["runs"], ("8".to_owned(), false));
        assert_eq!(c["gpu"], ("1".to_owned(), false));
        assert!(!c.contains_key("bad") && !c.contains_key("other"));
    }

    #[test]
    fn the_image_is_the_first_containers() {
        let rt: Runtime = serde_json::from_value(serde_json::json!({
            "apiVersion": "kruntimes.io/v1alpha1", "kind": "Runtime",
            "metadata": {"name": "bash"},
            "spec": {"template": {"spec": {"containers": [
                {"name": "runtime", "image": "ghcr.io/x/bash:1"}, {"name": "side", "image": "y"}]}}},
        }))
        .unwrap();
        assert_eq!(rt.image(), Some("ghcr.io/x/bash:1"));
        assert_eq!(rt.replicas(), 1);
    }
}
