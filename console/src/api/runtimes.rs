//! Runtimes: list, and detail with Pods, health, capacity and assigned Runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Json;
use k8s_openapi::api::core::v1::Pod;
use kruntimes_core::names::is_dns1123_subdomain;
use kruntimes_core::run::Run;
use kube::Api;
use kube::api::{DynamicObject, ListParams};
use serde::Deserialize;
use serde_json::Value;

use super::objects::{conditions, lenient, meta};
use super::runs::{RunQuery, list_runs, pod_facts};
use super::types::{
    AssignedRun, Condition, Items, ListResponse, RuntimeCapacity, RuntimeDetail, RuntimeList,
    RuntimeListItem, RuntimePod, RuntimeSpecView, RuntimeStatusView, Section,
};
use super::{
    ApiPath, Reader, check_name, check_namespace, kruntimes_api, list_reader, user_client,
};
use crate::api::types::AccessRequest;
use crate::error::{ConsoleError, KubeFailure};
use crate::state::{ConsoleState, RequestCredentials};

/// The parts of a Runtime the Console reads.
#[derive(Default, Deserialize)]
#[serde(default)]
struct RuntimeObject {
    spec: RuntimeSpec,
    status: RuntimeStatus,
}

#[derive(Default, Deserialize)]
#[serde(default)]
struct RuntimeSpec {
    replicas: Value,
    port: Option<Value>,
    image: Option<Value>,
    capacity: Option<Value>,
}

#[derive(Default, Deserialize)]
#[serde(default, rename_all = "camelCase")]
struct RuntimeStatus {
    ready_replicas: Value,
    conditions: Option<Value>,
}

/// A count as written, 0 when absent or not an integer.
fn count(v: &Value) -> i64 {
    v.as_i64().unwrap_or(0)
}

fn runtime_item(o: &DynamicObject, summary: bool) -> RuntimeListItem {
    let rt: RuntimeObject = lenient(&o.data);
    let ready = (!summary)
        .then(|| conditions(rt.status.conditions.as_ref()))
        .flatten()
        .and_then(|cs| cs.into_iter().find(|c| c.type_.as_deref() == Some("Ready")))
        .map(|c| Condition {
            observed_generation: None,
            ..c
        });
    RuntimeListItem {
        metadata: meta(&o.metadata, summary),
        replicas: count(&rt.spec.replicas),
        ready_replicas: count(&rt.status.ready_replicas),
        ready,
    }
}

pub async fn list(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath(ns): ApiPath<String>,
) -> Result<Json<RuntimeList>, ConsoleError> {
    check_namespace(&ns)?;
    let reader = list_reader(&state, &caller)?;
    let api = kruntimes_api(reader.client().clone(), &ns, "Runtime", "runtimes");
    let list = api
        .list(&ListParams::default().limit(500))
        .await
        .map_err(|e| {
            KubeFailure::new(
                e,
                "listing runtimes",
                AccessRequest::new("list", "kruntimes.io", "runtimes", &ns, None),
            )
        })?;
    let summary = matches!(reader, Reader::Public(_));
    let items = list
        .items
        .iter()
        .map(|o| runtime_item(o, summary))
        .collect();
    Ok(Json(ListResponse::new(items, summary)))
}

pub async fn detail(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<RuntimeDetail>, ConsoleError> {
    check_namespace(&ns)?;
    check_name("runtime", &name)?;
    let client = user_client(&state, &caller)?;
    let o = kruntimes_api(client.clone(), &ns, "Runtime", "runtimes")
        .get(&name)
        .await
        .map_err(|e| {
            KubeFailure::new(
                e,
                "reading the runtime",
                AccessRequest::new("get", "kruntimes.io", "runtimes", &ns, Some(&name)),
            )
        })?;
    let rt: RuntimeObject = lenient(&o.data);
    Ok(Json(RuntimeDetail {
        metadata: meta(&o.metadata, false),
        spec: RuntimeSpecView {
            replicas: count(&rt.spec.replicas),
            port: rt.spec.port.filter(|v| !v.is_null()),
            capacity: rt.spec.capacity.as_ref().map(lenient::<RuntimeCapacity>),
            image: rt.spec.image.filter(|v| !v.is_null()),
        },
        status: RuntimeStatusView {
            ready_replicas: count(&rt.status.ready_replicas),
            conditions: conditions(rt.status.conditions.as_ref()),
        },
        pods: pods_section(&client, &ns, &name).await,
    }))
}

/// The active Runs of this Runtime, by the Pod they are assigned to.
async fn active_runs(
    client: &kube::Client,
    ns: &str,
    runtime: &str,
) -> Result<BTreeMap<String, Vec<AssignedRun>>, ConsoleError> {
    let runs: Api<Run> = Api::namespaced(client.clone(), ns);
    let mut by_pod: BTreeMap<String, Vec<AssignedRun>> = BTreeMap::new();
    let mut q = RunQuery {
        runtime: Some(runtime.to_owned()),
        limit: 500,
        ..Default::default()
    };
    for _ in 0..20 {
        let page = list_runs(&runs, &q, super::runs::SCAN_PAGES)
            .await
            .map_err(|e| {
                KubeFailure::new(
                    e,
                    "listing runs",
                    AccessRequest::new("list", "kruntimes.io", "runs", ns, None),
                )
            })?;
        for o in &page.items {
            let Some(pod) = o
                .status
                .as_ref()
                .and_then(|s| s.assigned_pod.as_deref())
                .filter(|p| is_dns1123_subdomain(p))
            else {
                continue;
            };
            if o.is_terminal() {
                continue;
            }
            by_pod.entry(pod.to_owned()).or_default().push(AssignedRun {
                name: o.metadata.name.clone().unwrap_or_default(),
                uid: o.metadata.uid.clone(),
                phase: o.phase().to_owned(),
                mode: o.spec.mode.as_ref().and_then(|m| m.name()),
                creation_timestamp: o
                    .metadata
                    .creation_timestamp
                    .as_ref()
                    .map(|t| t.0.to_string()),
            });
        }
        match page.cont {
            Some(c) => q.cont = Some(c),
            None => break,
        }
    }
    Ok(by_pod)
}

async fn pods_section(
    client: &kube::Client,
    ns: &str,
    runtime: &str,
) -> Section<Items<RuntimePod>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let list = match pods
        .list(
            &ListParams::default()
                .labels(&format!("runtime={runtime}"))
                .limit(500),
        )
        .await
    {
        Ok(l) => l,
        Err(e) => {
            return Section::failed(KubeFailure::new(
                e,
                "listing pods",
                AccessRequest::new("list", "", "pods", ns, None),
            ));
        }
    };
    // Runs that cannot be listed for another reason leave the Pods without them.
    let mut by_pod = match active_runs(client, ns, runtime).await {
        Ok(r) => r,
        Err(e) if e.access.is_some() => return Section::failed(e),
        Err(_) => BTreeMap::new(),
    };
    let items = list
        .items
        .iter()
        .map(|p| {
            let facts = pod_facts(p);
            let capacity = p
                .metadata
                .annotations
                .iter()
                .flatten()
                .filter_map(|(k, v)| {
                    k.strip_prefix("kruntimes.io/capacity.")
                        .map(|r| (r.to_owned(), v.clone()))
                })
                .collect();
            RuntimePod {
                runs: by_pod.remove(&facts.name).unwrap_or_default(),
                name: facts.name,
                uid: facts.uid,
                phase: facts.phase,
                ready: facts.ready,
                runtimed_ready: facts.runtimed_ready,
                restarts: facts.restarts,
                node: facts.node,
                pod_ip: facts.pod_ip,
                start_time: facts.start_time,
                capacity,
            }
        })
        .collect();
    Section::Ok(Items { items })
}
