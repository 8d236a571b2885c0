//! Runtimes: list, and detail with Pods, health, capacity and assigned Runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::response::Json;
use k8s_openapi::api::core::v1::Pod;
use kruntimes_core::names::is_dns1123_subdomain;
use kruntimes_core::run::Run;
use kube::Api;
use kube::api::{DynamicObject, ListParams};
use serde::Deserialize;
use serde_json::Value;

use super::listing::{PUBLIC_SCAN_PAGES, SCAN_PAGES, check_public_list, parse_list_query};
use super::objects::{conditions, lenient, meta};
use super::runs::{RunQuery, list_runs, pod_facts};
use super::types::{
    AssignedRun, CapacityUse, Condition, Items, ListResponse, QueuedRun, RuntimeCapacity,
    RuntimeDetail, RuntimeList, RuntimeListItem, RuntimePod, RuntimeSpecView, RuntimeStatusView,
    Section,
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
    RawQuery(raw): RawQuery,
) -> Result<Json<RuntimeList>, ConsoleError> {
    check_namespace(&ns)?;
    let q = parse_list_query(raw.as_deref(), "Runtime")?;
    let reader = list_reader(&state, &caller)?;
    let summary = matches!(reader, Reader::Public(_));
    if summary {
        check_public_list(&q)?;
    }
    let api = kruntimes_api(reader.client().clone(), &ns, "Runtime", "runtimes");
    let max_pages = if summary {
        PUBLIC_SCAN_PAGES
    } else {
        SCAN_PAGES
    };
    let page = q.page(&api, max_pages).await.map_err(|e| {
        KubeFailure::new(
            e,
            "listing runtimes",
            AccessRequest::new("list", "kruntimes.io", "runtimes", &ns, None),
        )
    })?;
    let items = page
        .items
        .iter()
        .map(|o| runtime_item(o, summary))
        .collect();
    Ok(Json(ListResponse {
        cont: page.cont,
        remaining_item_count: page.remaining,
        ..ListResponse::new(items, summary)
    }))
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
    let mut runs = runtime_runs(&client, &ns, &name).await;
    let pods = pods_section(&client, &ns, &name, &mut runs).await;
    let queue = match runs {
        Ok(r) => Section::Ok(Items { items: r.queue }),
        Err(e) => Section::failed(e),
    };
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
        pods,
        queue,
    }))
}

/// The active Runs of a Runtime by the Pod they are assigned to, and its
/// Pending Runs (the queue, oldest first).
#[derive(Default)]
struct RuntimeRuns {
    by_pod: BTreeMap<String, Vec<AssignedRun>>,
    queue: Vec<QueuedRun>,
}

/// A Pending Run as it waits: its `Scheduled` condition says why.
fn queued(o: &Run) -> QueuedRun {
    let scheduled = o
        .status
        .as_ref()
        .and_then(|s| conditions(s.conditions.as_ref()))
        .and_then(|cs| {
            cs.into_iter()
                .find(|c| c.type_.as_deref() == Some("Scheduled"))
        });
    let message = scheduled
        .as_ref()
        .and_then(|c| c.message.clone())
        .or_else(|| o.status.as_ref().and_then(|s| s.message.clone()));
    QueuedRun {
        name: o.metadata.name.clone().unwrap_or_default(),
        creation_timestamp: o
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        reason: scheduled.and_then(|c| c.reason),
        message,
    }
}

/// Resources whose use is one per active Run.
const PER_RUN: &[&str] = &["runs", "slots"];

/// Capacity used and free on a Pod with `capacity` and `active` Runs.
pub fn usage(capacity: &BTreeMap<String, String>, active: usize) -> Vec<CapacityUse> {
    capacity
        .iter()
        .map(|(resource, cap)| {
            let used = PER_RUN
                .contains(&resource.as_str())
                .then_some(i64::try_from(active).unwrap_or(i64::MAX));
            let free = used
                .zip(cap.trim().parse::<i64>().ok())
                .map(|(u, c)| (c - u).max(0));
            CapacityUse {
                resource: resource.clone(),
                capacity: cap.clone(),
                used,
                free,
            }
        })
        .collect()
}

async fn runtime_runs(
    client: &kube::Client,
    ns: &str,
    runtime: &str,
) -> Result<RuntimeRuns, ConsoleError> {
    let runs: Api<Run> = Api::namespaced(client.clone(), ns);
    let mut out = RuntimeRuns::default();
    let by_pod = &mut out.by_pod;
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
            if o.phase() == "Pending" {
                out.queue.push(queued(o));
                continue;
            }
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
    out.queue
        .sort_by(|a, b| (&a.creation_timestamp, &a.name).cmp(&(&b.creation_timestamp, &b.name)));
    Ok(out)
}

async fn pods_section(
    client: &kube::Client,
    ns: &str,
    runtime: &str,
    runs: &mut Result<RuntimeRuns, ConsoleError>,
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
    let mut none = BTreeMap::new();
    let by_pod = match runs {
        Ok(r) => &mut r.by_pod,
        Err(e) if e.access.is_some() => return Section::failed(e.clone()),
        Err(_) => &mut none,
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
            let runs = by_pod.remove(&facts.name).unwrap_or_default();
            RuntimePod {
                usage: usage(&capacity, runs.len()),
                runs,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_capacity_counts_the_active_runs_and_other_resources_only_their_capacity() {
        let cap: BTreeMap<String, String> = [("runs", "8"), ("cpu", "2"), ("slots", "x")]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.to_owned()))
            .collect();
        let u = usage(&cap, 3);
        let by: BTreeMap<&str, &CapacityUse> = u.iter().map(|c| (c.resource.as_str(), c)).collect();
        assert_eq!((by["runs"].used, by["runs"].free), (Some(3), Some(5)));
        assert_eq!((by["cpu"].used, by["cpu"].free), (None, None));
        assert_eq!(by["cpu"].capacity, "2");
        // Not a number: used is known, free is not.
        assert_eq!((by["slots"].used, by["slots"].free), (Some(3), None));
        // Over-assigned: never below zero.
        assert_eq!(usage(&cap, 11)[1].free, Some(0));
    }
}
