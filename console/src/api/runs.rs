//! Runs: the paged, filtered list and the detail with its Pod and Events.

use kruntimes_core::failure::{Reason, Refusal as _};
use std::sync::Arc;

use axum::Extension;
use axum::extract::{RawQuery, State};
use axum::response::Json;
use k8s_openapi::api::core::v1::{Event, Pod};
use kube::api::ListParams;
use kube::{Api, Client};
use serde_json::Value;

use super::listing::{
    self, Scan, check_label_selector, check_name_part, list_page, name_matches, parse_limit,
};
use super::objects::{bounded_outputs, conditions, lenient, meta};
use super::types::{
    ArtifactRef, AttemptEvent, Condition, EventInfo, Items, LastTransition, ListResponse, PodInfo,
    PodSection, RunDetail, RunList, RunListItem, RunListQuery, RunSpecView, RunStage, RunState,
    RunStatusView, Section, StepOwner,
};
use super::{ApiPath, Reader, check_name, check_namespace, list_reader, user_client};
use crate::api::types::AccessRequest;
use crate::error::{ConsoleError, KubeFailure};
use crate::state::{ConsoleState, RequestCredentials};
use kruntimes_core::names::is_dns1123_subdomain;
use kruntimes_core::query;
use kruntimes_core::run::{Phase, Run};
use kruntimes_core::workflowrun::WorkflowRun;
/// The default page size.
pub const DEFAULT_LIMIT: u32 = 50;
pub use super::listing::{MAX_LIMIT, PUBLIC_SCAN_PAGES, SCAN_PAGES};

/// Parsed query of the Run list.
#[derive(Debug, Default, PartialEq)]
pub struct RunQuery {
    /// Phases to keep (`phase`, comma-separated); empty keeps every phase.
    pub phases: Vec<String>,
    /// Only Runs of this Runtime (`runtime`).
    pub runtime: Option<String>,
    /// Only Runs assigned to this Pod (`assignedPod`).
    pub assigned_pod: Option<String>,
    /// A label selector for the API server (`labelSelector`).
    pub label_selector: Option<String>,
    /// Only Runs created at or after this instant (`createdAfter`).
    pub created_after: Option<jiff::Timestamp>,
    /// A substring of the name (the name search).
    pub name: Option<String>,
    /// Page size, 1..=[`MAX_LIMIT`], default [`DEFAULT_LIMIT`].
    pub limit: u32,
    /// The continue token of the previous page (`continue`).
    pub cont: Option<String>,
}

/// Sorts the parameters of the strict query parser into the Run list's
/// own, refusing any other name.
fn run_list_query(raw: Option<&str>) -> Result<RunListQuery, ConsoleError> {
    let mut q = RunListQuery::default();
    query::parse(raw, |k, v| {
        let field = match k.as_str() {
            "phase" => &mut q.phase,
            "runtime" => &mut q.runtime,
            "assignedPod" => &mut q.assigned_pod,
            "labelSelector" => &mut q.label_selector,
            "createdAfter" => &mut q.created_after,
            "name" => &mut q.name,
            "limit" => &mut q.limit,
            "continue" => &mut q.cont,
            other => {
                return Err(ConsoleError::bad_request(format!(
                    "unknown parameter {other:?}; the Run list accepts phase, runtime, assignedPod, labelSelector, createdAfter, name, limit and continue"
                )));
            }
        };
        *field = Some(v);
        Ok(())
    })?;
    Ok(q)
}

/// Parses the query string strictly.
pub fn parse_query(raw: Option<&str>) -> Result<RunQuery, ConsoleError> {
    let sent = run_list_query(raw)?;
    let nonempty = |v: Option<String>| v.filter(|v| !v.is_empty());
    let mut q = RunQuery {
        limit: DEFAULT_LIMIT,
        ..Default::default()
    };
    for p in sent
        .phase
        .iter()
        .flat_map(|v| v.split(','))
        .filter(|p| !p.is_empty())
    {
        if Phase::parse(p).is_none() {
            return Err(ConsoleError::bad_request(format!(
                "phase {p:?} is not a Run phase; use one of {}",
                Phase::ALL.map(Phase::as_str).join(", ")
            )));
        }
        q.phases.push(p.to_owned());
    }
    if let Some(r) = nonempty(sent.runtime) {
        check_name("runtime", &r)?;
        q.runtime = Some(r);
    }
    if let Some(p) = nonempty(sent.assigned_pod) {
        check_name("pod", &p)?;
        q.assigned_pod = Some(p);
    }
    if let Some(l) = sent.label_selector {
        check_label_selector(&l)?;
        q.label_selector = nonempty(Some(l));
    }
    if let Some(t) = nonempty(sent.created_after) {
        q.created_after = Some(t.parse().map_err(|_| {
            ConsoleError::bad_request(format!(
                "createdAfter {t:?} is not an RFC 3339 time such as 2026-01-02T15:04:05Z"
            ))
        })?);
    }
    if let Some(n) = nonempty(sent.name) {
        check_name_part("Run", &n)?;
        q.name = Some(n);
    }
    if let Some(v) = sent.limit {
        q.limit = parse_limit(&v)?;
    }
    q.cont = nonempty(sent.cont);
    Ok(q)
}

/// Public summaries show phase and runtime, so only those filter them: a
/// filter on anything a summary hides (the Pod, labels, the exact creation
/// time) would reveal it.
pub fn check_public_filters(q: &RunQuery) -> Result<(), ConsoleError> {
    let mut hidden = Vec::new();
    if q.assigned_pod.is_some() {
        hidden.push("assignedPod");
    }
    if q.label_selector.is_some() {
        hidden.push("labelSelector");
    }
    if q.created_after.is_some() {
        hidden.push("createdAfter");
    }
    if hidden.is_empty() {
        return Ok(());
    }
    Err(ConsoleError::unauthorized(format!(
        "filtering by {} needs a credential: log in or send a bearer token (without one, Runs filter by phase and runtime only)",
        hidden.join(", ")
    )))
}

/// Filters the Console applies itself: `fields` when the API server
/// refused the field selector.
struct Residual<'a> {
    q: &'a RunQuery,
    fields: bool,
}

impl Residual<'_> {
    /// Whether anything is filtered here even when the field selector is taken.
    fn any(q: &RunQuery) -> bool {
        q.created_after.is_some() || q.name.is_some() || q.phases.len() > 1
    }

    fn admits(&self, o: &Run) -> bool {
        let q = self.q;
        if !name_matches(q.name.as_deref(), o.metadata.name.as_deref()) {
            return false;
        }
        if let Some(after) = q.created_after {
            let created = o.metadata.creation_timestamp.as_ref().map(|t| t.0);
            if created.is_none_or(|c| c < after) {
                return false;
            }
        }
        let status = o.status.as_ref();
        let phase = status.and_then(|s| s.phase.as_deref()).unwrap_or("");
        if (q.phases.len() > 1 || (self.fields && !q.phases.is_empty()))
            && !q.phases.iter().any(|p| p == phase)
        {
            return false;
        }
        if self.fields {
            if let Some(r) = &q.runtime
                && o.spec.runtime != *r
            {
                return false;
            }
            if let Some(p) = &q.assigned_pod
                && status.and_then(|s| s.assigned_pod.as_deref()) != Some(p.as_str())
            {
                return false;
            }
        }
        true
    }
}

fn field_selector(q: &RunQuery) -> Option<String> {
    let mut parts = Vec::new();
    if let Some(r) = &q.runtime {
        parts.push(format!("spec.runtime={r}"));
    }
    if q.phases.len() == 1 {
        parts.push(format!("status.phase={}", q.phases[0]));
    }
    if let Some(p) = &q.assigned_pod {
        parts.push(format!("status.assignedPod={p}"));
    }
    (!parts.is_empty()).then(|| parts.join(","))
}

/// A page of Runs matching `q`.
pub type Page = listing::Page<Run>;

/// Lists one page, pushing filters to the API server where the CRD allows
/// and filtering the rest here without listing everything per request.
pub async fn list_runs(
    api: &Api<Run>,
    q: &RunQuery,
    max_pages: usize,
) -> Result<Page, kube::Error> {
    let scan = Scan {
        label_selector: q.label_selector.as_deref(),
        fields: field_selector(q),
        limit: q.limit,
        cont: q.cont.as_deref(),
        max_pages,
        filters: Residual::any(q),
    };
    list_page(api, scan, |o, fields| Residual { q, fields }.admits(o)).await
}

/// The condition with the latest transition.
fn last_transition(conds: &[Condition]) -> Option<LastTransition> {
    let c = conds
        .iter()
        .max_by_key(|c| c.last_transition_time.as_deref().unwrap_or(""))?;
    Some(LastTransition {
        type_: c.type_.clone(),
        status: c.status.clone(),
        reason: c.reason.clone(),
        message: c.message.clone(),
        time: c.last_transition_time.clone(),
    })
}

/// One row of the Run table.
pub fn run_item(o: &Run, summary: bool) -> RunListItem {
    let status = o.status.clone().unwrap_or_default();
    let mut item = RunListItem {
        metadata: meta(&o.metadata, summary),
        phase: status.phase,
        runtime: o.spec.runtime.clone(),
        mode: o.spec.mode.as_ref().and_then(|m| m.name()),
        assigned_pod: None,
        attempt: None,
        last_transition: None,
        message: None,
        workflow_run: None,
        start_time: None,
        completion_time: None,
    };
    if summary {
        return item;
    }
    item.assigned_pod = status.assigned_pod;
    item.start_time = status.start_time;
    item.completion_time = status.completion_time;
    item.attempt = status.attempt;
    item.message = status.message.filter(|m| !m.is_empty());
    item.workflow_run = o.workflow_step().map(StepOwner::from);
    item.last_transition = conditions(status.conditions.as_ref())
        .as_deref()
        .and_then(last_transition);
    item
}

/// `GET /api/namespaces/{ns}/runs`: a page of the namespace's Runs, filtered
/// and summarized (public read) as the query and the caller allow.
pub async fn list(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath(ns): ApiPath<String>,
    RawQuery(raw): RawQuery,
) -> Result<Json<RunList>, ConsoleError> {
    check_namespace(&ns)?;
    let q = parse_query(raw.as_deref())?;
    let reader = list_reader(&state, &caller)?;
    let max_pages = if reader.is_public() {
        check_public_filters(&q)?;
        PUBLIC_SCAN_PAGES
    } else {
        SCAN_PAGES
    };
    let api: Api<Run> = Api::namespaced(reader.client().clone(), &ns);
    let page = list_runs(&api, &q, max_pages).await.map_err(|e| {
        let mut e = ConsoleError::from(KubeFailure::new(
            e,
            "listing runs",
            AccessRequest::new("list", "kruntimes.io", "runs", &ns, None),
        ));
        if e.is(Reason::BadRequest)
            && let Some(sel) = &q.label_selector
        {
            e.message = format!(
                "labelSelector {sel:?} is not a valid label selector: {}",
                e.message
            );
        }
        e
    })?;
    let summary = matches!(reader, Reader::Public(_));
    let items = page.items.iter().map(|o| run_item(o, summary)).collect();
    Ok(Json(ListResponse {
        cont: page.cont,
        remaining_item_count: page.remaining,
        ..ListResponse::new(items, summary)
    }))
}

/// `GET /api/namespaces/{ns}/runs/{name}`: the Run with its Pod, state, Events,
/// attempts and WorkflowRun step, read with the caller's token.
pub async fn detail(
    State(state): State<Arc<ConsoleState>>,
    Extension(caller): Extension<RequestCredentials>,
    ApiPath((ns, name)): ApiPath<(String, String)>,
) -> Result<Json<RunDetail>, ConsoleError> {
    check_namespace(&ns)?;
    check_name("run", &name)?;
    let client = user_client(&state, &caller)?;
    let run = Api::<Run>::namespaced(client.clone(), &ns)
        .get(&name)
        .await
        .map_err(|e| {
            KubeFailure::new(
                e,
                "reading the run",
                AccessRequest::new("get", "kruntimes.io", "runs", &ns, Some(&name)),
            )
        })?;
    let status = run.status.clone().unwrap_or_default();
    // Allow-listed fields only: never env, secrets or anything else in the spec.
    let spec = RunSpecView {
        runtime: run.spec.runtime.clone(),
        mode: run.spec.mode.clone().unwrap_or_default(),
        timeout: run.spec.timeout.clone(),
        retry_policy: run.spec.retry_policy.clone().filter(|v| !v.is_null()),
    };
    let pod_name = status.assigned_pod.as_deref().filter(|p| !p.is_empty());
    let pod_uid = status.assigned_pod_uid.as_deref();
    let run_uid = run.metadata.uid.clone().unwrap_or_default();
    // The name goes into a URL path and a field selector: checked first.
    let invalid_pod = pod_name.filter(|p| !is_dns1123_subdomain(p));
    let valid_pod = pod_name.filter(|p| is_dns1123_subdomain(p));
    let window = EventWindow::of(&run);
    let (pod, events, workflow_run) = tokio::join!(
        async {
            match invalid_pod {
                Some(p) => Section::Error {
                    message: format!(
                        "invalid assignedPod {p:?}: not a DNS-1123 subdomain; the Pod was not read"
                    ),
                    code: Some(Reason::Invalid.code_u16()),
                },
                None => pod_section(&client, &ns, valid_pod, pod_uid).await,
            }
        },
        events_section(&client, &ns, &run_uid, valid_pod, window),
        step_owner_section(&client, &ns, &run)
    );
    let attempts = match &events {
        Section::Ok(e) => attempts(&e.items),
        _ => Vec::new(),
    };
    let state = run_state(&run);
    let status_out = RunStatusView {
        endpoint: status.endpoint.as_ref().map(lenient),
        outputs: bounded_outputs(status.outputs.as_ref()),
        conditions: conditions(status.conditions.as_ref()),
        artifact_refs: status
            .artifact_refs
            .as_ref()
            .and_then(Value::as_array)
            .map(|refs| refs.iter().map(artifact_ref).collect()),
        phase: status.phase,
        assigned_pod: status.assigned_pod,
        assigned_pod_uid: status.assigned_pod_uid,
        message: status.message,
        start_time: status.start_time,
        completion_time: status.completion_time,
        attempt: status.attempt,
    };
    Ok(Json(RunDetail {
        metadata: meta(&run.metadata, false),
        spec,
        status: status_out,
        pod,
        state,
        events,
        attempts,
        workflow_run,
    }))
}

/// Most WorkflowRuns searched for the step that started a Run.
const MAX_OWNER_SEARCH: u32 = 500;

/// The WorkflowRun step that started `run`: from its owner reference and
/// labels when the engine set them, else the step or Action step whose
/// `runName` names it.
async fn step_owner_section(client: &Client, ns: &str, run: &Run) -> Section<StepOwner> {
    if let Some(r) = run.workflow_step() {
        return Section::Ok(r.into());
    }
    let name = run.metadata.name.as_deref().unwrap_or_default();
    let api: Api<WorkflowRun> = Api::namespaced(client.clone(), ns);
    match api
        .list(&ListParams::default().limit(MAX_OWNER_SEARCH))
        .await
    {
        Ok(list) => list
            .items
            .iter()
            .find_map(|wr| wr.step_of(name))
            .map(|r| Section::Ok(r.into()))
            .unwrap_or_else(|| Section::Absent {
                message: "no WorkflowRun step started this Run".into(),
            }),
        Err(e) => Section::failed(KubeFailure::new(
            e,
            "listing workflowruns",
            AccessRequest::new("list", "kruntimes.io", "workflowruns", ns, None),
        )),
    }
}

/// The condition of `type_` among the Run's conditions.
fn condition<'a>(conds: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conds.iter().find(|c| c.type_.as_deref() == Some(type_))
}

/// The Run's stage, read by the engine's condition types and reasons.
pub fn run_state(run: &Run) -> RunState {
    let status = run.status.clone().unwrap_or_default();
    let conds = conditions(status.conditions.as_ref()).unwrap_or_default();
    let message = status.message.filter(|m| !m.is_empty());
    let is = |c: &&Condition, s: &str| c.status.as_deref() == Some(s);
    let said = |c: Option<&Condition>, stage: RunStage| RunState {
        stage,
        reason: c.and_then(|c| c.reason.clone()),
        message: c
            .and_then(|c| c.message.clone())
            .filter(|m| !m.is_empty())
            .or_else(|| message.clone()),
    };
    let running = condition(&conds, "Running");
    let failed_attempt = running.filter(|c| is(c, "False"));
    let retrying = running.filter(|c| is(c, "True") && c.reason.as_deref() == Some("Retrying"));
    match Phase::parse(run.phase()) {
        Some(Phase::Succeeded) => said(condition(&conds, "Completed"), RunStage::Succeeded),
        Some(Phase::Failed | Phase::Timeout | Phase::Cancelled) => said(
            condition(&conds, "Completed")
                .filter(|c| is(c, "False"))
                .or(failed_attempt),
            RunStage::Failed,
        ),
        // A failed attempt's Run goes back to Pending (or stays Running)
        // until the next attempt: the Running condition says why.
        Some(Phase::Pending | Phase::Running) if failed_attempt.is_some() => {
            said(failed_attempt, RunStage::Retrying)
        }
        Some(Phase::Running) if retrying.is_some() => said(retrying, RunStage::Retrying),
        Some(Phase::Running) => said(running.filter(|c| is(c, "True")), RunStage::Running),
        Some(Phase::Scheduled) => said(condition(&conds, "Scheduled"), RunStage::Scheduled),
        Some(Phase::Ready) => said(condition(&conds, "Ready"), RunStage::Ready),
        // Waiting: the engine sets no condition, only the message.
        Some(Phase::Pending) | None => RunState {
            stage: RunStage::Waiting,
            reason: condition(&conds, "Scheduled")
                .filter(|c| is(c, "False"))
                .and_then(|c| c.reason.clone()),
            message,
        },
    }
}

/// Event reasons that record the Run's attempts.
const ATTEMPT_REASONS: [&str; 4] = [
    "RunFailedRetrying",
    "RunRetrying",
    "StaleRunRetrying",
    "RunRetriesExhausted",
];

/// The attempt events among the Run's own events, oldest first; events of
/// the same second in the order the engine writes them (an attempt starts,
/// then fails; the last one gives up).
pub fn attempts(events: &[EventInfo]) -> Vec<AttemptEvent> {
    let rank = |reason: &str| match reason {
        "RunRetrying" => 0,
        "RunRetriesExhausted" => 2,
        _ => 1,
    };
    let mut out: Vec<AttemptEvent> = events
        .iter()
        .filter(|e| e.involved_object.starts_with("Run/"))
        .filter(|e| ATTEMPT_REASONS.contains(&e.reason.as_str()))
        .map(|e| {
            let (attempt, max_attempts) = attempt_numbers(&e.message);
            AttemptEvent {
                reason: e.reason.clone(),
                message: e.message.clone(),
                attempt,
                max_attempts,
                time: e.last_time.clone().or_else(|| e.first_time.clone()),
            }
        })
        .collect();
    out.sort_by(|a, b| {
        (&a.time, a.attempt, rank(&a.reason)).cmp(&(&b.time, b.attempt, rank(&b.reason)))
    });
    out
}

/// "attempt 2/3" → (2, 3); "after 3 attempts" → (3, none).
fn attempt_numbers(msg: &str) -> (Option<i64>, Option<i64>) {
    let num = |s: &str| -> Option<i64> {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        s[..end].parse().ok()
    };
    if let Some(i) = msg.find("attempt ") {
        let rest = &msg[i + "attempt ".len()..];
        if let Some(n) = num(rest) {
            let max = rest
                .split_once('/')
                .filter(|(a, _)| a.len() == n.to_string().len())
                .and_then(|(_, b)| num(b));
            return (Some(n), max);
        }
    }
    if let Some(i) = msg.find("after ") {
        let rest = &msg[i + "after ".len()..];
        if let Some(n) = num(rest)
            && rest[n.to_string().len()..].starts_with(" attempt")
        {
            return (Some(n), None);
        }
    }
    (None, None)
}

/// An entry of `status.artifactRefs`, its location (`{s3: {bucket, key}}`,
/// `{filesystem: {...}}`) written as one string.
fn artifact_ref(r: &Value) -> ArtifactRef {
    let mut a: ArtifactRef = lenient(r);
    a.location = match r.get("location") {
        Some(Value::String(s)) => Some(Value::String(s.clone())),
        Some(Value::Object(o)) => Some(Value::String(describe_location(o))),
        _ => None,
    };
    a
}

fn describe_location(o: &serde_json::Map<String, Value>) -> String {
    let text = |v: &Value, k: &str| v.get(k).and_then(Value::as_str).map(str::to_owned);
    if let Some(s3) = o.get("s3") {
        return format!(
            "s3://{}/{}",
            text(s3, "bucket").unwrap_or_default(),
            text(s3, "key").unwrap_or_default()
        );
    }
    if let Some(fs) = o.get("filesystem") {
        let path = text(fs, "path").unwrap_or_default();
        return match text(fs, "volumeClaimName") {
            Some(pvc) => format!("pvc://{pvc}{path}"),
            None => format!("file://{path}"),
        };
    }
    Value::Object(o.clone()).to_string()
}

/// Facts about a Pod the UI shows (never its spec).
pub fn pod_facts(p: &Pod) -> PodInfo {
    let status = p.status.clone().unwrap_or_default();
    let conds = status.conditions.clone().unwrap_or_default();
    let ready = conds
        .iter()
        .any(|c| c.type_ == "Ready" && c.status == "True");
    let restarts: i32 = status
        .container_statuses
        .as_ref()
        .map(|cs| cs.iter().map(|c| c.restart_count).sum())
        .unwrap_or(0);
    let runtimed_ready = conds
        .iter()
        .find(|c| c.type_ == "kruntimes.io/RuntimedReady")
        .map(|c| Condition {
            type_: Some(c.type_.clone()),
            status: Some(c.status.clone()),
            reason: c.reason.clone(),
            message: c.message.clone(),
            last_transition_time: c.last_transition_time.as_ref().map(|t| t.0.to_string()),
            observed_generation: None,
        });
    PodInfo {
        name: p.metadata.name.clone().unwrap_or_default(),
        namespace: p.metadata.namespace.clone().unwrap_or_default(),
        uid: p.metadata.uid.clone().unwrap_or_default(),
        phase: status.phase.clone().unwrap_or_else(|| "Unknown".into()),
        node: p.spec.as_ref().and_then(|s| s.node_name.clone()),
        pod_ip: status.pod_ip.clone(),
        start_time: status.start_time.as_ref().map(|t| t.0.to_string()),
        ready,
        runtimed_ready,
        restarts,
        replaced: None,
        labels: p.metadata.labels.clone(),
    }
}

async fn pod_section(
    client: &Client,
    ns: &str,
    pod: Option<&str>,
    uid: Option<&str>,
) -> Section<PodSection> {
    let Some(pod) = pod else {
        return Section::Absent {
            message: "the Run is not assigned to a Runtime Pod yet".into(),
        };
    };
    let pods: Api<Pod> = Api::namespaced(client.clone(), ns);
    match pods.get_opt(pod).await {
        Ok(Some(p)) => {
            let mut facts = pod_facts(&p);
            if uid.is_some_and(|u| p.metadata.uid.as_deref() != Some(u)) {
                facts.replaced = Some(true);
            }
            Section::Ok(PodSection { pod: facts })
        }
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

fn event_info(e: &Event) -> EventInfo {
    let last = e
        .last_timestamp
        .as_ref()
        .map(|t| t.0.to_string())
        .or_else(|| e.event_time.as_ref().map(|t| t.0.to_string()))
        .filter(|t| !t.is_empty());
    EventInfo {
        type_: e.type_.clone().unwrap_or_else(|| "Normal".into()),
        reason: e.reason.clone().unwrap_or_default(),
        message: e.message.clone().unwrap_or_default(),
        involved_object: format!(
            "{}/{}",
            e.involved_object.kind.clone().unwrap_or_default(),
            e.involved_object.name.clone().unwrap_or_default()
        ),
        count: e.count,
        first_time: e.first_timestamp.as_ref().map(|t| t.0.to_string()),
        last_time: last,
        source: e.source.as_ref().and_then(|s| s.component.clone()),
    }
}

/// The time a Run's Pod events are kept from: its start (its creation
/// before runtimed claims it) to its completion (open while it is active).
#[derive(Clone, Copy, Debug)]
pub struct EventWindow {
    /// Events from this instant on: the Run's start, else its creation.
    pub from: Option<jiff::Timestamp>,
    /// Events up to this instant: the Run's completion; `None` while it is
    /// active.
    pub to: Option<jiff::Timestamp>,
}

impl EventWindow {
    /// The window of `run`.
    pub fn of(run: &Run) -> Self {
        EventWindow {
            from: run
                .start_time()
                .or_else(|| run.metadata.creation_timestamp.as_ref().map(|t| t.0)),
            to: run.completion_time(),
        }
    }

    /// Whether an event seen from `first` to `last` happened in the window.
    pub fn holds(&self, first: Option<&str>, last: Option<&str>) -> bool {
        let t = |s: Option<&str>| s.and_then(|s| s.parse::<jiff::Timestamp>().ok());
        let (first, last) = (t(first).or(t(last)), t(last).or(t(first)));
        let (Some(first), Some(last)) = (first, last) else {
            // An event with no time cannot be placed in the window.
            return false;
        };
        self.from.is_none_or(|f| last >= f) && self.to.is_none_or(|to| first <= to)
    }
}

/// Events of the Run (by UID) and, of its Pod's (shared with every other
/// Run on it), those in the Run's window; oldest first.
async fn events_section(
    client: &Client,
    ns: &str,
    run_uid: &str,
    pod: Option<&str>,
    window: EventWindow,
) -> Section<Items<EventInfo>> {
    let events: Api<Event> = Api::namespaced(client.clone(), ns);
    let mut selectors = vec![(format!("involvedObject.uid={run_uid}"), false)];
    if let Some(p) = pod {
        selectors.push((
            format!("involvedObject.kind=Pod,involvedObject.name={p}"),
            true,
        ));
    }
    let mut items = Vec::new();
    for (fs, windowed) in selectors {
        match events
            .list(&ListParams::default().fields(&fs).limit(200))
            .await
        {
            Ok(list) => items.extend(list.items.iter().map(event_info).filter(|e| {
                !windowed || window.holds(e.first_time.as_deref(), e.last_time.as_deref())
            })),
            Err(e) => {
                return Section::failed(KubeFailure::new(
                    e,
                    "listing events",
                    AccessRequest::new("list", "", "events", ns, None),
                ));
            }
        }
    }
    items.sort_by(|a, b| a.last_time.cmp(&b.last_time));
    Section::Ok(Items { items })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_name_search_is_checked_and_filters_by_substring() {
        let q = parse_query(Some("name=build")).unwrap();
        assert_eq!(q.name.as_deref(), Some("build"));
        assert!(parse_query(Some("name=Build")).is_err());
        assert!(parse_query(Some("name=a%20b")).is_err());
        assert_eq!(parse_query(Some("name=")).unwrap().name, None);
        let residual = Residual {
            q: &q,
            fields: false,
        };
        assert!(Residual::any(&q));
        let run = |n: &str| -> Run {
            serde_json::from_value(serde_json::json!({
                "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                "metadata": {"name": n}, "spec": {"runtime": "bash"}
            }))
            .unwrap()
        };
        assert!(residual.admits(&run("nightly-build-3")));
        assert!(!residual.admits(&run("lint-failed")));
    }

    #[test]
    fn conditions_read_by_the_engines_reasons() {
        use serde_json::json;
        let run = |status: serde_json::Value| -> Run {
            serde_json::from_value(json!({
                "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                "metadata": {"name": "r"}, "spec": {"runtime": "bash", "mode": {"task": {}}},
                "status": status,
            }))
            .unwrap()
        };
        let c = |t: &str, s: &str, r: &str, m: &str| {
            json!({"type": t, "status": s, "reason": r, "message": m,
                   "lastTransitionTime": "2026-01-01T00:00:00Z"})
        };
        let state = |st: serde_json::Value| {
            let s = run_state(&run(st));
            (s.stage, s.reason, s.message)
        };
        let waiting = "waiting for available runtime pods for runtime bash";
        assert_eq!(
            state(json!({"phase": "Pending", "message": waiting})),
            (RunStage::Waiting, None, Some(waiting.to_owned()))
        );
        assert_eq!(
            state(json!({"phase": "Scheduled", "assignedPod": "p",
                         "conditions": [c("Scheduled", "True", "Assigned", "assigned to pod p")]})),
            (
                RunStage::Scheduled,
                Some("Assigned".into()),
                Some("assigned to pod p".into())
            )
        );
        assert_eq!(
            state(json!({"phase": "Running", "conditions": [
                c("Scheduled", "True", "Assigned", "x"), c("Running", "True", "Claimed", "claimed")]})),
            (
                RunStage::Running,
                Some("Claimed".into()),
                Some("claimed".into())
            )
        );
        assert_eq!(
            state(json!({"phase": "Running", "conditions": [
                c("Running", "True", "Retrying", "Retry after failure")]}))
            .0,
            RunStage::Retrying
        );
        // A stale-Pod retry: Pending again, Scheduled=True kept, Running=False says why.
        assert_eq!(
            state(
                json!({"phase": "Pending", "message": "pod p is unhealthy", "conditions": [
                c("Scheduled", "True", "Assigned", "x"), c("Running", "False", "PodUnhealthy", "pod p is unhealthy")]})
            ),
            (
                RunStage::Retrying,
                Some("PodUnhealthy".into()),
                Some("pod p is unhealthy".into())
            )
        );
        assert_eq!(
            state(json!({"phase": "Succeeded", "conditions": [
                c("Running", "False", "Completed", "done"), c("Completed", "True", "RunCompleted", "run completed")]})),
            (
                RunStage::Succeeded,
                Some("RunCompleted".into()),
                Some("run completed".into())
            )
        );
        assert_eq!(
            state(
                json!({"phase": "Failed", "message": "exit status 2", "conditions": [
                c("Running", "False", "RuntimeExecute", "exit status 2"),
                c("Completed", "False", "RuntimeExecute", "exit status 2")]})
            ),
            (
                RunStage::Failed,
                Some("RuntimeExecute".into()),
                Some("exit status 2".into())
            )
        );
    }

    #[test]
    fn pod_events_are_kept_in_the_runs_window_only() {
        let w = EventWindow {
            from: Some("2026-01-01T10:00:00Z".parse().unwrap()),
            to: Some("2026-01-01T10:10:00Z".parse().unwrap()),
        };
        fn at(s: &str) -> Option<&str> {
            Some(s)
        }
        assert!(w.holds(at("2026-01-01T10:05:00Z"), at("2026-01-01T10:05:00Z")));
        // Seen before the Run and again during it: kept.
        assert!(w.holds(at("2026-01-01T09:00:00Z"), at("2026-01-01T10:01:00Z")));
        assert!(!w.holds(at("2026-01-01T09:00:00Z"), at("2026-01-01T09:59:59Z")));
        assert!(!w.holds(at("2026-01-01T10:10:01Z"), at("2026-01-01T10:20:00Z")));
        assert!(!w.holds(None, None));
        // Still active: open-ended.
        let open = EventWindow { to: None, ..w };
        assert!(open.holds(at("2026-01-02T00:00:00Z"), None));
    }

    #[test]
    fn attempts_are_read_from_the_runs_events() {
        let ev = |obj: &str, reason: &str, msg: &str| EventInfo {
            type_: "Warning".into(),
            reason: reason.into(),
            message: msg.into(),
            involved_object: obj.into(),
            count: None,
            first_time: None,
            last_time: Some("2026-01-01T10:00:00Z".into()),
            source: None,
        };
        let a = attempts(&[
            ev(
                "Run/r",
                "RunFailedRetrying",
                "Run failed (attempt 1/3), retrying in 10s. Reason: RuntimeExecute: exit 1",
            ),
            ev("Run/r", "RunRetrying", "Retry attempt 2/3 starting"),
            ev("Pod/p", "RunRetrying", "Retry attempt 9/9 starting"),
            ev("Run/r", "Scheduled", "assigned"),
            ev(
                "Run/r",
                "RunRetriesExhausted",
                "Run failed after 3 attempts: RuntimeExecute: exit 1",
            ),
        ]);
        let got: Vec<_> = a
            .iter()
            .map(|a| (a.reason.as_str(), a.attempt, a.max_attempts))
            .collect();
        assert_eq!(
            got,
            [
                ("RunFailedRetrying", Some(1), Some(3)),
                ("RunRetrying", Some(2), Some(3)),
                ("RunRetriesExhausted", Some(3), None),
            ]
        );
        // All in one second, listed by name: put in the engine's order.
        let a = attempts(&[
            ev(
                "Run/r",
                "RunRetriesExhausted",
                "Run failed after 2 attempts: x",
            ),
            ev(
                "Run/r",
                "RunFailedRetrying",
                "Run failed (attempt 2/2), retrying in 1s",
            ),
            ev("Run/r", "RunRetrying", "Retry attempt 2/2 starting"),
            ev(
                "Run/r",
                "RunFailedRetrying",
                "Run failed (attempt 1/2), retrying in 1s",
            ),
        ]);
        let got: Vec<_> = a.iter().map(|a| (a.reason.as_str(), a.attempt)).collect();
        assert_eq!(
            got,
            [
                ("RunFailedRetrying", Some(1)),
                ("RunRetrying", Some(2)),
                ("RunFailedRetrying", Some(2)),
                ("RunRetriesExhausted", Some(2)),
            ]
        );
    }

    #[test]
    fn query_parsing() {
        let q = parse_query(Some(
            "phase=Failed&runtime=bash&limit=10&labelSelector=app%3Dweb",
        ))
        .unwrap();
        assert_eq!(q.phases, ["Failed"]);
        assert_eq!(q.runtime.as_deref(), Some("bash"));
        assert_eq!(q.limit, 10);
        assert_eq!(q.label_selector.as_deref(), Some("app=web"));
        assert_eq!(
            field_selector(&q).as_deref(),
            Some("spec.runtime=bash,status.phase=Failed")
        );
        for bad in [
            "limit=0",
            "limit=501",
            "limit=abc",
            "phase=Nope",
            "createdAfter=yesterday",
            "runtime=Bad_Name",
            "foo=1",
            "limit=1&limit=2",
            "runtime=a&runtime=b",
            "phase=%zz",
        ] {
            let e = parse_query(Some(bad)).unwrap_err();
            assert_eq!(e.code(), http::StatusCode::BAD_REQUEST, "{bad}");
        }
        assert!(
            parse_query(Some("createdAfter=2026-01-02T15:04:05Z"))
                .unwrap()
                .created_after
                .is_some()
        );
    }

    #[test]
    fn public_filters() {
        for ok in [
            "",
            "phase=Failed,Running&runtime=bash&limit=5",
            "continue=abc",
        ] {
            assert!(
                check_public_filters(&parse_query(Some(ok)).unwrap()).is_ok(),
                "{ok}"
            );
        }
        for bad in [
            "assignedPod=bash-pool-0",
            "labelSelector=app%3Dweb",
            "createdAfter=2026-01-02T15:04:05Z",
        ] {
            let e = check_public_filters(&parse_query(Some(bad)).unwrap()).unwrap_err();
            assert_eq!(e.code(), http::StatusCode::UNAUTHORIZED, "{bad}");
            assert!(e.message.contains("bearer token"), "{}", e.message);
        }
    }

    /// An in-process Kubernetes API that serves endless pages of Runs none
    /// of which match, counting the list calls.
    fn endless_runs() -> (Api<Run>, std::sync::Arc<std::sync::atomic::AtomicUsize>) {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let calls = std::sync::Arc::new(AtomicUsize::new(0));
        let seen = calls.clone();
        let svc = tower::service_fn(move |_req: http::Request<kube::client::Body>| {
            let n = seen.fetch_add(1, Ordering::SeqCst);
            async move {
                let body = serde_json::json!({
                    "apiVersion": "kruntimes.io/v1alpha1", "kind": "RunList",
                    "metadata": {"continue": format!("page-{}", n + 1)},
                    "items": [{"apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
                               "metadata": {"name": format!("r{n}"), "namespace": "ns"},
                               "spec": {"runtime": "bash"}, "status": {"phase": "Running"}}],
                });
                Ok::<_, std::convert::Infallible>(http::Response::new(kube::client::Body::from(
                    body.to_string().into_bytes(),
                )))
            }
        });
        let client = Client::new(svc, "ns");
        (Api::namespaced(client, "ns"), calls)
    }

    #[tokio::test]
    async fn a_public_scan_reads_one_upstream_page() {
        use std::sync::atomic::Ordering;
        // Two phases: filtered on the Console, none of the Runs match.
        let q = parse_query(Some("phase=Failed,Succeeded")).unwrap();
        let (api, calls) = endless_runs();
        let page = list_runs(&api, &q, PUBLIC_SCAN_PAGES).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert!(page.items.is_empty());
        let cont = page.cont.expect("a continue token to go on");
        assert_eq!(
            listing::decode_scan(&cont).unwrap().unwrap().c.as_deref(),
            Some("page-1")
        );
        let (api, calls) = endless_runs();
        list_runs(&api, &q, SCAN_PAGES).await.unwrap();
        assert_eq!(calls.load(Ordering::SeqCst), SCAN_PAGES);
    }

    /// The row keeps the field names and values the UI reads, and a summary
    /// only what public read shows; nothing from the spec but runtime and mode.
    #[test]
    fn a_run_row_has_the_fields_of_the_table() {
        use serde_json::json;
        let run: Run = serde_json::from_value(json!({
            "apiVersion": "kruntimes.io/v1alpha1", "kind": "Run",
            "metadata": {"name": "r1", "namespace": "ns", "uid": "u1",
                         "creationTimestamp": "2026-01-02T15:04:05Z", "labels": {"app": "web"}},
            "spec": {"runtime": "bash", "mode": {"task": {"command": ["true"]}},
                     "env": [{"name": "SECRET", "value": "x"}]},
            "status": {"phase": "Failed", "assignedPod": "bash-0", "attempt": 2,
                       "startTime": "2026-01-02T15:04:06Z", "message": "exit status 1 (secret-ish detail)",
                       "conditions": [
                           {"type": "Scheduled", "status": "True", "lastTransitionTime": "2026-01-02T15:04:06Z"},
                           {"type": "Failed", "status": "True", "reason": "NonZeroExit",
                            "message": "exit 1", "lastTransitionTime": "2026-01-02T15:05:00Z"}]},
        }))
        .unwrap();
        assert_eq!(
            serde_json::to_value(run_item(&run, false)).unwrap(),
            json!({
                "metadata": {"name": "r1", "namespace": "ns", "uid": "u1",
                             "creationTimestamp": "2026-01-02T15:04:05Z", "labels": {"app": "web"}},
                "phase": "Failed", "runtime": "bash", "mode": "task", "assignedPod": "bash-0",
                "attempt": 2, "startTime": "2026-01-02T15:04:06Z",
                "message": "exit status 1 (secret-ish detail)",
                "lastTransition": {"type": "Failed", "status": "True", "reason": "NonZeroExit",
                                   "message": "exit 1", "time": "2026-01-02T15:05:00Z"},
            })
        );
        assert_eq!(
            serde_json::to_value(run_item(&run, true)).unwrap(),
            json!({
                "metadata": {"name": "r1", "namespace": "ns", "creationTimestamp": "2026-01-02T15:04:05Z"},
                "phase": "Failed", "runtime": "bash", "mode": "task",
            })
        );
    }
}
