//! `GET /api/namespaces/{ns}/{runs,runtimes,workflowruns,actions,persistentworkspaces}/{name}/manifest`:
//! the whole object as the caller may read it, sanitized on the server so the
//! UI can show it as YAML: no env value, no managed fields, no secret or
//! ConfigMap reference, no annotation that embeds a copy of the object.

use kruntimes_core::failure::Refusal as _;
use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Json;
use serde_json::{Map, Value};

use super::types::{AccessRequest, ObjectManifest};
use super::{ApiPath, check_name, check_namespace, kruntimes_api, user_client};
use crate::error::{ConsoleError, KubeFailure};
use crate::state::{ConsoleState, RequestCredentials};

/// What replaces a value that is never shown.
pub const HIDDEN: &str = "(hidden by the Console)";

/// Annotations that hold a serialized copy of the object (and so its env).
const COPY_ANNOTATIONS: &[&str] = &["kubectl.kubernetes.io/last-applied-configuration"];

/// Sanitizes `obj` in place and returns the JSON paths of what was hidden or removed.
pub fn sanitize(obj: &mut Value) -> Vec<String> {
    let mut hidden = Vec::new();
    if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if meta.remove("managedFields").is_some() {
            hidden.push("metadata.managedFields".into());
        }
        if let Some(ann) = meta.get_mut("annotations").and_then(Value::as_object_mut) {
            let drop: Vec<String> = ann
                .iter()
                .filter(|(k, v)| COPY_ANNOTATIONS.contains(&k.as_str()) || embeds_object(v))
                .map(|(k, _)| k.clone())
                .collect();
            for k in drop {
                ann.remove(&k);
                hidden.push(format!("metadata.annotations[{k:?}]"));
            }
        }
    }
    walk(obj, "", &mut hidden);
    hidden
}

/// An annotation whose value is a JSON object or array: a serialized copy of something.
fn embeds_object(v: &Value) -> bool {
    let Some(s) = v.as_str() else { return false };
    let t = s.trim_start();
    (t.starts_with('{') || t.starts_with('[')) && serde_json::from_str::<Value>(t).is_ok()
}

fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_owned()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(v: &mut Value, path: &str, hidden: &mut Vec<String>) {
    match v {
        Value::Object(map) => {
            for (k, child) in map.iter_mut() {
                let p = join(path, k);
                match k.as_str() {
                    "env" => hide_env(child, &p, hidden),
                    "envFrom" | "secretKeyRef" | "configMapKeyRef" | "secretRef"
                    | "configMapRef" | "secrets" => {
                        *child = Value::String(HIDDEN.into());
                        hidden.push(p);
                    }
                    _ => walk(child, &p, hidden),
                }
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter_mut().enumerate() {
                walk(child, &format!("{path}[{i}]"), hidden);
            }
        }
        _ => {}
    }
}

/// `env` as a list of `{name, value | valueFrom}` keeps the names; as a map
/// (a workflow step's `env`) keeps the keys; anything else is hidden whole.
fn hide_env(env: &mut Value, path: &str, hidden: &mut Vec<String>) {
    match env {
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                let name = item.get("name").cloned();
                let mut kept = Map::new();
                if let Some(n) = name.filter(Value::is_string) {
                    kept.insert("name".into(), n);
                }
                let had_value = item.as_object().is_some_and(|o| o.len() > kept.len());
                if had_value {
                    kept.insert("value".into(), Value::String(HIDDEN.into()));
                    hidden.push(format!("{path}[{i}]"));
                }
                *item = Value::Object(kept);
            }
        }
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                *val = Value::String(HIDDEN.into());
                hidden.push(format!("{path}.{k}"));
            }
        }
        Value::Null => {}
        other => {
            *other = Value::String(HIDDEN.into());
            hidden.push(path.to_owned());
        }
    }
}

async fn manifest(
    state: &ConsoleState,
    caller: &RequestCredentials,
    ns: &str,
    name: &str,
    (kind, plural): (&str, &'static str),
) -> Result<Json<ObjectManifest>, ConsoleError> {
    check_namespace(ns)?;
    check_name(plural.trim_end_matches('s'), name)?;
    let client = user_client(state, caller)?;
    let obj = kruntimes_api(client, ns, kind, plural)
        .get(name)
        .await
        .map_err(|e| {
            KubeFailure::new(
                e,
                "reading the object",
                AccessRequest::new("get", "kruntimes.io", plural, ns, Some(name)),
            )
        })?;
    let mut value = serde_json::to_value(&obj)
        .map_err(|e| ConsoleError::internal(format!("the object could not be read: {e}")))?;
    let hidden = sanitize(&mut value);
    Ok(Json(ObjectManifest {
        object: value,
        hidden,
    }))
}

/// `GET /api/namespaces/{ns}/runs/{name}/manifest`.
pub async fn run(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<ObjectManifest>, ConsoleError> {
    manifest(&state, &caller, &ns, &name, ("Run", "runs")).await
}

/// `GET /api/namespaces/{ns}/runtimes/{name}/manifest`.
pub async fn runtime(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<ObjectManifest>, ConsoleError> {
    manifest(&state, &caller, &ns, &name, ("Runtime", "runtimes")).await
}

/// `GET /api/namespaces/{ns}/workflowruns/{name}/manifest`.
pub async fn workflow_run(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<ObjectManifest>, ConsoleError> {
    manifest(&state, &caller, &ns, &name, ("WorkflowRun", "workflowruns")).await
}

/// `GET /api/namespaces/{ns}/actions/{name}/manifest`.
pub async fn action(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<ObjectManifest>, ConsoleError> {
    manifest(&state, &caller, &ns, &name, ("Action", "actions")).await
}

/// `GET /api/namespaces/{ns}/persistentworkspaces/{name}/manifest`.
pub async fn workspace(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<ObjectManifest>, ConsoleError> {
    manifest(
        &state,
        &caller,
        &ns,
        &name,
        ("PersistentWorkspace", "persistentworkspaces"),
    )
    .await
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn text(v: &Value) -> String {
        v.to_string()
    }

    #[test]
    fn env_values_are_hidden_and_names_kept() {
        let mut run = json!({"spec": {"env": [
            {"name": "LITERAL", "value": "s3cr3t-literal-value"},
            {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "password"}}},
            {"name": "BARE"},
        ]}});
        let hidden = sanitize(&mut run);
        assert_eq!(
            run["spec"]["env"],
            json!([{"name": "LITERAL", "value": HIDDEN}, {"name": "FROM_SECRET", "value": HIDDEN}, {"name": "BARE"}])
        );
        assert!(!text(&run).contains("s3cr3t"));
        assert!(!text(&run).contains("creds"));
        assert_eq!(hidden, ["spec.env[0]", "spec.env[1]"]);
    }

    #[test]
    fn env_maps_anywhere_keep_only_their_keys() {
        let mut wr = json!({"spec": {"jobs": {"build": {"env": {"TOKEN": "abc123"},
            "steps": [{"name": "push", "env": {"PASSWORD": "hunter2"}}]}}}});
        let hidden = sanitize(&mut wr);
        assert_eq!(wr["spec"]["jobs"]["build"]["env"], json!({"TOKEN": HIDDEN}));
        assert_eq!(
            wr["spec"]["jobs"]["build"]["steps"][0]["env"],
            json!({"PASSWORD": HIDDEN})
        );
        assert!(!text(&wr).contains("abc123") && !text(&wr).contains("hunter2"));
        assert_eq!(hidden.len(), 2);
    }

    #[test]
    fn an_env_of_another_shape_is_hidden_whole() {
        let mut v = json!({"spec": {"env": "A=1 B=2"}});
        sanitize(&mut v);
        assert_eq!(v["spec"]["env"], json!(HIDDEN));
    }

    #[test]
    fn managed_fields_are_removed() {
        let mut v = json!({"metadata": {"name": "r", "managedFields": [{"manager": "kubectl",
            "fieldsV1": {"f:spec": {"f:env": {}}}}]}});
        let hidden = sanitize(&mut v);
        assert_eq!(v["metadata"], json!({"name": "r"}));
        assert_eq!(hidden, ["metadata.managedFields"]);
    }

    #[test]
    fn secret_and_config_map_references_are_hidden_wherever_they_are() {
        let mut v = json!({"spec": {
            "envFrom": [{"secretRef": {"name": "all-creds"}}],
            "volumes": [{"secretKeyRef": {"name": "vol-creds", "key": "k"}},
                        {"configMapKeyRef": {"name": "cm", "key": "k"}}],
            "jobs": {"call": {"uses": "./wf", "secrets": {"TOKEN": "${{ secrets.T }}"}}},
        }});
        sanitize(&mut v);
        let t = text(&v);
        for gone in ["all-creds", "vol-creds", "\"cm\"", "secrets.T"] {
            assert!(!t.contains(gone), "{gone} is still in {t}");
        }
        assert_eq!(v["spec"]["jobs"]["call"]["uses"], "./wf");
    }

    #[test]
    fn annotations_that_embed_the_object_are_removed() {
        let applied = json!({"spec": {"env": [{"name": "A", "value": "s3cr3t"}]}}).to_string();
        let mut v = json!({"metadata": {"annotations": {
            "kubectl.kubernetes.io/last-applied-configuration": applied,
            "example.com/copy": "{\"spec\": {\"env\": []}}",
            "example.com/owner": "team-a",
        }}});
        let hidden = sanitize(&mut v);
        assert_eq!(
            v["metadata"]["annotations"],
            json!({"example.com/owner": "team-a"})
        );
        assert!(!text(&v).contains("s3cr3t"));
        assert_eq!(hidden.len(), 2);
    }

    #[test]
    fn everything_else_is_kept_as_written() {
        let orig = json!({"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
            "metadata": {"name": "r", "labels": {"app": "demo"}},
            "spec": {"runtime": "bash", "mode": {"task": {}}, "timeout": "10m"},
            "status": {"phase": "Running", "outputs": {"result": "ok"}}});
        let mut v = orig.clone();
        assert!(sanitize(&mut v).is_empty());
        assert_eq!(v, orig);
    }
}
