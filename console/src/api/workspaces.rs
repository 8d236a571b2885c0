//! PersistentWorkspaces: list and detail (phase, bound Pod, last use, the
//! Runtime's workspace volume, conditions). No public read: without a
//! credential both answer 401.

use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Json;
use k8s_openapi::api::core::v1::Pod;
use kruntimes_core::names::is_dns1123_subdomain;
use kruntimes_core::workspace::PersistentWorkspace;
use kube::Api;
use serde_json::Value;

use super::kinds::{
    WorkspaceDetail, WorkspaceListItem, WorkspaceSpecView, WorkspaceStatusView, WorkspaceVolume,
};
use super::listing::credential_client;
use super::listing::{ListAccess, ListedKind};

use super::objects::{conditions, meta};
use super::runs::pod_facts;
use super::types::{AccessRequest, PodSection, Section};
use super::{ApiPath, check_name, check_namespace, kruntimes_api};
use crate::error::{ConsoleError, KubeFailure};
use crate::state::{ConsoleState, RequestCredentials};

fn item(w: &PersistentWorkspace) -> WorkspaceListItem {
    WorkspaceListItem {
        metadata: meta(&w.metadata, false),
        phase: w.phase().to_owned(),
        runtime: w.spec.runtime.clone(),
        bound_pod: w.bound_pod().map(str::to_owned),
        last_used_time: w.status.as_ref().and_then(|s| s.last_used_time.clone()),
    }
}

impl ListedKind for PersistentWorkspace {
    const KIND: &'static str = "PersistentWorkspace";
    const PLURAL: &'static str = "persistentworkspaces";
    const LISTING: &'static str = "listing persistentworkspaces";
    const ACCESS: ListAccess = ListAccess::CredentialOnly("PersistentWorkspaces");
    type Item = WorkspaceListItem;

    async fn items(page: &[Self], _: Option<&kube::Client>, _: &str) -> Vec<WorkspaceListItem> {
        page.iter().map(item).collect()
    }
}

async fn pod_section(client: kube::Client, ns: &str, pod: Option<&str>) -> Section<PodSection> {
    let Some(pod) = pod else {
        return Section::Absent {
            message: "the workspace is not bound to a Runtime Pod".into(),
        };
    };
    if !is_dns1123_subdomain(pod) {
        return Section::Absent {
            message: format!("the bound Pod {pod:?} is not a valid Pod name"),
        };
    }
    match Api::<Pod>::namespaced(client, ns).get_opt(pod).await {
        Ok(Some(p)) => Section::Ok(PodSection { pod: pod_facts(&p) }),
        Ok(None) => Section::Absent {
            message: format!("pod {pod:?} no longer exists"),
        },
        Err(e) => Section::failed(KubeFailure::new(
            e,
            "reading the pod",
            AccessRequest::new("get", "", "pods", ns, Some(pod)),
        )),
    }
}

/// The kind of volume in a Runtime's `spec.workspace` (a `VolumeSource`
/// written inline) and, for a PersistentVolumeClaim, its name. Nothing else
/// of the volume is returned (a `secret` volume's name stays on the server).
pub fn workspace_volume(runtime: &str, spec: &Value) -> WorkspaceVolume {
    let source = spec["workspace"]
        .as_object()
        .and_then(|w| w.iter().find(|(_, v)| v.is_object()))
        .map(|(k, _)| k.clone());
    WorkspaceVolume {
        runtime: runtime.to_owned(),
        declared: source.is_some(),
        claim_name: spec["workspace"]["persistentVolumeClaim"]["claimName"]
            .as_str()
            .filter(|_| source.as_deref() == Some("persistentVolumeClaim"))
            .map(str::to_owned),
        source: source.unwrap_or_else(|| "emptyDir".into()),
    }
}

async fn volume_section(client: kube::Client, ns: &str, runtime: &str) -> Section<WorkspaceVolume> {
    if !is_dns1123_subdomain(runtime) {
        return Section::Absent {
            message: format!("{runtime:?} is not a valid Runtime name"),
        };
    }
    match kruntimes_api(client, ns, "Runtime", "runtimes")
        .get_opt(runtime)
        .await
    {
        Ok(Some(rt)) => Section::Ok(workspace_volume(runtime, &rt.data["spec"])),
        Ok(None) => Section::Absent {
            message: format!("runtime {runtime:?} does not exist"),
        },
        Err(e) => Section::failed(KubeFailure::new(
            e,
            "reading the runtime",
            AccessRequest::new("get", "kruntimes.io", "runtimes", ns, Some(runtime)),
        )),
    }
}

/// `GET /api/namespaces/{ns}/persistentworkspaces/{name}`: the
/// PersistentWorkspace with its bound Pod and its volume.
pub async fn detail(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<WorkspaceDetail>, ConsoleError> {
    check_namespace(&ns)?;
    check_name("persistentworkspace", &name)?;
    let client = credential_client(&state, &caller, "PersistentWorkspaces")?;
    let w = Api::<PersistentWorkspace>::namespaced(client.clone(), &ns)
        .get(&name)
        .await
        .map_err(|e| {
            KubeFailure::new(
                e,
                "reading the persistentworkspace",
                AccessRequest::new(
                    "get",
                    "kruntimes.io",
                    "persistentworkspaces",
                    &ns,
                    Some(&name),
                ),
            )
        })?;
    let (pod, volume) = tokio::join!(
        pod_section(client.clone(), &ns, w.bound_pod()),
        volume_section(client, &ns, &w.spec.runtime),
    );
    let st = w.status.clone().unwrap_or_default();
    Ok(Json(WorkspaceDetail {
        metadata: meta(&w.metadata, false),
        spec: WorkspaceSpecView {
            runtime: w.spec.runtime.clone(),
            mode: w.spec.mode.clone(),
            ttl_seconds_after_unused: w.spec.ttl_seconds_after_unused,
            cleanup_policy: w.spec.cleanup_policy.clone(),
        },
        status: WorkspaceStatusView {
            phase: w.phase().to_owned(),
            runtime: st.runtime,
            bound_pod: w.bound_pod().map(str::to_owned),
            path: st.path,
            last_used_time: st.last_used_time,
            conditions: conditions(st.conditions.as_ref()),
        },
        pod,
        volume,
    }))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn the_volume_names_its_kind_and_only_a_claim() {
        let pvc = workspace_volume(
            "bash",
            &json!({"workspace": {"persistentVolumeClaim": {"claimName": "ws-data"}}}),
        );
        assert_eq!(
            (pvc.source.as_str(), pvc.declared, pvc.claim_name.as_deref()),
            ("persistentVolumeClaim", true, Some("ws-data"))
        );
        let secret = workspace_volume(
            "bash",
            &json!({"workspace": {"secret": {"secretName": "creds"}}}),
        );
        assert_eq!(
            (secret.source.as_str(), secret.claim_name.as_deref()),
            ("secret", None)
        );
        assert!(!serde_json::to_string(&secret).unwrap().contains("creds"));
        let none = workspace_volume("bash", &json!({"replicas": 1}));
        assert_eq!((none.source.as_str(), none.declared), ("emptyDir", false));
    }
}
