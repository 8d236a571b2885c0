//! Runtimes: list, and detail with Pods, health, capacity and assigned Runs.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Extension;
use axum::extract::State;
use axum::response::Json;
use k8s_openapi::api::core::v1::Pod;
use kruntimes_core::names::is_dns1123_subdomain;
use kruntimes_core::run::Run;
use kruntimes_core::runtime::{
    POD_LABEL, RUNS, Runtime, pod_capacity, quantity_text, whole_quantity,
};
use kube::Api;
use kube::api::ListParams;

use super::listing::{ListAccess, ListedKind};

use super::objects::{conditions, meta};
use super::runs::{RunQuery, list_runs, pod_facts};
use super::types::{
    AssignedRun, CapacityUse, Condition, Items, QueuedRun, RuntimeCapacity, RuntimeDetail,
    RuntimeListItem, RuntimePod, RuntimeSpecView, RuntimeStatusView, Section,
};
use super::{ApiPath, check_name, check_namespace, user_client};
use crate::api::types::AccessRequest;
use crate::error::{ConsoleError, KubeFailure};
use crate::state::{ConsoleState, RequestCredentials};

/// Ready Pods of each Runtime among the namespace's Runtime Pods (one list
/// of Pods with the `runtime` label), or `None` when they cannot be read.
async fn ready_pods(client: &kube::Client, ns: &str) -> Option<BTreeMap<String, i64>> {
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    let mut out = BTreeMap::new();
    let mut lp = ListParams::default().labels(POD_LABEL).limit(500);
    for _ in 0..MAX_POD_PAGES {
        let list = pods.list(&lp).await.ok()?;
        for p in &list.items {
            let Some(rt) = p.metadata.labels.as_ref().and_then(|l| l.get(POD_LABEL)) else {
                continue;
            };
            let n = out.entry(rt.clone()).or_insert(0);
            if pod_facts(p).ready {
                *n += 1;
            }
        }
        match list.metadata.continue_.filter(|c| !c.is_empty()) {
            Some(c) => lp = lp.continue_token(&c),
            None => return Some(out),
        }
    }
    // Too many Pods to count them all: no count rather than a wrong one.
    None
}

/// Pages of Pods read to count the ready ones of a Runtime list.
const MAX_POD_PAGES: usize = 4;

/// The ready count shown: the ready Pods when they could be counted (the
/// Pods are the truth; the engine does not keep `status.readyReplicas`),
/// else `status.readyReplicas` when a platform sets it.
fn ready_count(rt: &Runtime, counted: Option<&BTreeMap<String, i64>>) -> Option<i64> {
    match counted {
        Some(c) => Some(
            c.get(rt.metadata.name.as_deref().unwrap_or_default())
                .copied()
                .unwrap_or(0),
        ),
        None => rt
            .status
            .as_ref()
            .and_then(|s| s.ready_replicas)
            .map(i64::from),
    }
}

fn runtime_item(
    rt: &Runtime,
    counted: Option<&BTreeMap<String, i64>>,
    summary: bool,
) -> RuntimeListItem {
    let ready = (!summary)
        .then(|| conditions(rt.status.as_ref().and_then(|s| s.conditions.as_ref())))
        .flatten()
        .and_then(|cs| cs.into_iter().find(|c| c.type_.as_deref() == Some("Ready")))
        .map(|c| Condition {
            observed_generation: None,
            ..c
        });
    RuntimeListItem {
        metadata: meta(&rt.metadata, summary),
        replicas: i64::from(rt.replicas()),
        ready_replicas: ready_count(rt, counted),
        image: (!summary).then(|| rt.image().map(str::to_owned)).flatten(),
        ready,
    }
}

impl ListedKind for Runtime {
    const KIND: &'static str = "Runtime";
    const PLURAL: &'static str = "runtimes";
    const LISTING: &'static str = "listing runtimes";
    const ACCESS: ListAccess = ListAccess::PublicSummaries;
    type Item = RuntimeListItem;

    async fn items(page: &[Self], client: Option<&kube::Client>, ns: &str) -> Vec<RuntimeListItem> {
        // The ServiceAccount behind public summaries may not list Pods.
        let counted = match client {
            Some(c) if !page.is_empty() => ready_pods(c, ns).await,
            _ => None,
        };
        page.iter()
            .map(|o| runtime_item(o, counted.as_ref(), client.is_none()))
            .collect()
    }
}

/// `GET /api/namespaces/{ns}/runtimes/{name}`: the Runtime with its Pods, their
/// capacity and assigned Runs, and its queue of Pending Runs.
pub async fn detail(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<RuntimeDetail>, ConsoleError> {
    check_namespace(&ns)?;
    check_name("runtime", &name)?;
    let client = user_client(&state, &caller)?;
    let rt = Api::<Runtime>::namespaced(client.clone(), &ns)
        .get(&name)
        .await
        .map_err(|e| {
            KubeFailure::new(
                e,
                "reading the runtime",
                AccessRequest::new("get", "kruntimes.io", "runtimes", &ns, Some(&name)),
            )
        })?;
    let mut runs = runtime_runs(&client, &ns, &name).await;
    let pods = pods_section(&client, &ns, &name, &mut runs).await;
    let queue = match runs {
        Ok(r) => Section::Ok(Items { items: r.queue }),
        Err(e) => Section::failed(e),
    };
    let status = rt.status.clone().unwrap_or_default();
    // The Pods are the truth: counted whenever they could be read.
    let ready_replicas = match &pods {
        Section::Ok(p) => Some(p.items.iter().filter(|p| p.ready).count() as i64),
        _ => status.ready_replicas.map(i64::from),
    };
    Ok(Json(RuntimeDetail {
        metadata: meta(&rt.metadata, false),
        spec: RuntimeSpecView {
            replicas: i64::from(rt.replicas()),
            port: rt.spec.port.map(i64::from),
            capacity: rt.spec.capacity.as_ref().map(|c| RuntimeCapacity {
                resources: c
                    .resources
                    .iter()
                    .map(|(k, v)| (k.clone(), quantity_text(v)))
                    .collect(),
            }),
            image: rt.image().map(str::to_owned),
        },
        status: RuntimeStatusView {
            ready_replicas,
            conditions: conditions(status.conditions.as_ref()),
        },
        pods,
        queue,
    }))
}

/// The active Runs of a Runtime by the Pod they are assigned to, and its
/// Pending Runs (the queue, oldest first).
#[derive(Default)]
struct RuntimeRuns {
    by_pod: BTreeMap<String, Vec<Run>>,
    queue: Vec<QueuedRun>,
}

/// A Pending Run as it waits. The engine sets no condition on a waiting
/// Run, only `status.message` ("waiting for available runtime pods for
/// runtime …"); a `Scheduled=False` condition, where a platform writes one,
/// gives the reason.
fn queued(o: &Run) -> QueuedRun {
    let scheduled = o
        .status
        .as_ref()
        .and_then(|s| conditions(s.conditions.as_ref()))
        .and_then(|cs| {
            cs.into_iter().find(|c| {
                c.type_.as_deref() == Some("Scheduled") && c.status.as_deref() == Some("False")
            })
        });
    let message = o
        .status
        .as_ref()
        .and_then(|s| s.message.clone())
        .filter(|m| !m.is_empty())
        .or_else(|| scheduled.as_ref().and_then(|c| c.message.clone()));
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

fn assigned(o: &Run) -> AssignedRun {
    AssignedRun {
        name: o.metadata.name.clone().unwrap_or_default(),
        uid: o.metadata.uid.clone(),
        phase: o.phase().to_owned(),
        mode: o.spec.mode.as_ref().and_then(|m| m.name()),
        creation_timestamp: o
            .metadata
            .creation_timestamp
            .as_ref()
            .map(|t| t.0.to_string()),
        requests: o
            .spec
            .requests()
            .filter(|r| r.len() > 1 || r.get(RUNS) != Some(&1)),
    }
}

/// Capacity used and free on a Pod: per resource of its capacity, the sum
/// of the requests of the active Runs assigned to it (as the engine's
/// scheduler counts; a Run takes `runs: 1` unless it requests more).
pub fn usage(capacity: &BTreeMap<String, (String, bool)>, runs: &[&Run]) -> Vec<CapacityUse> {
    let mut used: BTreeMap<String, i64> = BTreeMap::new();
    for r in runs.iter().filter(|r| r.is_active()) {
        for (k, n) in r.spec.requests().unwrap_or_default() {
            *used.entry(k).or_default() += n;
        }
    }
    capacity
        .iter()
        .map(|(resource, (cap, default))| {
            let u = used.get(resource).copied().unwrap_or(0);
            CapacityUse {
                resource: resource.clone(),
                capacity: cap.clone(),
                default: default.then_some(true),
                used: Some(u),
                free: whole_quantity(cap).map(|c| (c - u).max(0)),
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
            by_pod.entry(pod.to_owned()).or_default().push(o.clone());
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
                .labels(&format!("{POD_LABEL}={runtime}"))
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
            let capacity = pod_capacity(p.metadata.annotations.as_ref());
            let runs = by_pod.remove(&facts.name).unwrap_or_default();
            let refs: Vec<&Run> = runs.iter().collect();
            RuntimePod {
                usage: usage(&capacity, &refs),
                runs: runs.iter().map(assigned).collect(),
                name: facts.name,
                uid: facts.uid,
                phase: facts.phase,
                ready: facts.ready,
                runtimed_ready: facts.runtimed_ready,
                restarts: facts.restarts,
                node: facts.node,
                pod_ip: facts.pod_ip,
                start_time: facts.start_time,
                capacity: capacity.into_iter().map(|(k, (v, _))| (k, v)).collect(),
            }
        })
        .collect();
    Section::Ok(Items { items })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(phase: &str, requests: serde_json::Value) -> Run {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run", "metadata": {"name": "r"},
            "spec": {"runtime": "bash", "mode": {"task": {}}, "resources": {"requests": requests}},
            "status": {"phase": phase, "assignedPod": "bash-0"},
        }))
        .unwrap()
    }

    #[test]
    fn used_capacity_is_the_sum_of_the_active_runs_requests() {
        let ann: BTreeMap<String, String> = [
            ("kruntimes.io/capacity.runs", "8"),
            ("kruntimes.io/capacity.gpu", "2"),
            ("kruntimes.io/capacity.mem", "4Gi"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        let runs = [
            run("Running", serde_json::json!({"gpu": 1})),
            run("Scheduled", serde_json::json!({"runs": "3", "gpu": "1"})),
            run("Ready", serde_json::json!({})),
            // Finished and waiting Runs take nothing.
            run("Succeeded", serde_json::json!({"gpu": 5})),
            run("Pending", serde_json::json!({"gpu": 5})),
        ];
        let refs: Vec<&Run> = runs.iter().collect();
        let u = usage(&pod_capacity(Some(&ann)), &refs);
        let by: BTreeMap<&str, &CapacityUse> = u.iter().map(|c| (c.resource.as_str(), c)).collect();
        assert_eq!((by["runs"].used, by["runs"].free), (Some(5), Some(3)));
        assert_eq!((by["gpu"].used, by["gpu"].free), (Some(2), Some(0)));
        assert_eq!((by["mem"].used, by["mem"].free), (Some(0), Some(4 << 30)));
        assert_eq!(by["runs"].default, None);
        // No annotations: the engine's 2 Runs per Pod.
        let u = usage(&pod_capacity(None), &refs[..1]);
        assert_eq!(u.len(), 1);
        assert_eq!(
            (u[0].capacity.as_str(), u[0].default, u[0].used, u[0].free),
            ("2", Some(true), Some(1), Some(1))
        );
        // Over-assigned: never below zero.
        let u = usage(&pod_capacity(None), &refs);
        assert_eq!((u[0].used, u[0].free), (Some(5), Some(0)));
    }
}
