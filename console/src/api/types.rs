//! The shapes of every `/api` answer. `console/web/src/api/types.ts` is
//! rendered from these types ([`typescript`]); a unit test fails when the
//! committed file is stale. Regenerate it with
//! `KRUNTIMES_WRITE_TS=1 cargo test -p kruntimes-console --lib api::types`.

use std::collections::BTreeMap;

use kruntimes_apiserver::logs::filter::LogRecord;
use kruntimes_apiserver::logs::handler::{RunLog, RunLogMeta};
use kruntimes_apiserver::logs::notes::{LogNote, NoteReason};
use kruntimes_apiserver::logs::search::SearchSummary;
use kruntimes_apiserver::logs::tail::Cut;
use kruntimes_core::run::{ModeName, Phase, RunMode, SessionMode};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use ts_rs::TS;

/// One Kubernetes authorization question: may the caller `verb` this resource?
/// Named in forbidden answers so the UI can show `kubectl auth can-i`.
#[derive(Clone, Debug, Serialize, PartialEq, Eq, ts_rs::TS)]
#[ts(optional_fields)]
pub struct AccessRequest {
    /// `get`, `list`, `watch`, `create`.
    pub verb: String,
    /// API group; `""` for the core group.
    pub group: String,
    /// Plural resource name, e.g. `runs`, `pods`, `events`.
    pub resource: String,
    /// Subresource, e.g. `log`, `operations`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subresource: Option<String>,
    /// Namespace; absent for cluster-scoped resources.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Object name; absent when the check covers every object (list, watch).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl AccessRequest {
    /// A check of `verb` on `resource` in `group`, in `namespace`, on the
    /// object `name` or on all of them.
    pub fn new(
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
        name: Option<&str>,
    ) -> Self {
        Self {
            verb: verb.into(),
            group: group.into(),
            resource: resource.into(),
            subresource: None,
            namespace: Some(namespace.into()),
            name: name.map(Into::into),
        }
    }
}

/// Body of every non-2xx `/api/` answer. Kubernetes 401/403/404/409 are passed
/// through with their code, reason and message; the cluster being unreachable
/// is 503 `ServiceUnavailable`.
#[derive(Debug, Serialize, TS)]
pub struct ApiErrorBody {
    /// What failed.
    pub error: ApiErrorInfo,
}

/// The `error` object of an `ApiErrorBody`.
#[derive(Debug, Serialize, TS)]
#[ts(optional_fields)]
pub struct ApiErrorInfo {
    /// HTTP status code, repeated in the body.
    pub code: u16,
    /// Kubernetes `StatusReason` style word: `Unauthorized`, `Forbidden`,
    /// `NotFound`, `BadRequest`, `Conflict`, `ServiceUnavailable`, `Timeout`,
    /// `InternalError`, `RequestEntityTooLarge`.
    pub reason: String,
    /// Human-readable explanation; shown to the user verbatim. Never contains a token.
    pub message: String,
    /// The access check that failed, when the server knows it. The UI also
    /// knows what it asked for, so this is only a refinement.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub access: Option<AccessRequest>,
}

/// The last line of a log follow that the server ended (a Kubernetes
/// `Status`; a record never has a `kind`). `Success` with reason
/// `RunFinished`: the Run finished, stop. `Failure` with code 401, 403 or
/// 404: stop and show the message. Any other `Failure` (503
/// `ServiceUnavailable`, `FellBehind`): reconnect with `sinceCursor=` the last
/// record's cursor.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct LogStreamStatus {
    /// Always `Status`: what tells this line from a record.
    #[ts(type = "'Status'")]
    pub kind: String,
    /// Always `v1`.
    pub api_version: String,
    /// `Success` when the Run finished, `Failure` for any other end.
    #[ts(type = "'Success' | 'Failure'")]
    pub status: String,
    /// 200 on `Success`; on `Failure` the failure's HTTP status code (401, 403,
    /// 404, 410, 503).
    pub code: u16,
    /// `RunFinished` on `Success`; on `Failure` the failure's reason
    /// (`ServiceUnavailable`, `FellBehind`, `NotFound`, `Gone`, `Unauthorized`,
    /// `Forbidden`).
    pub reason: String,
    /// Why the follow ended, for people.
    pub message: String,
}

/// A list answer. `continue` is the Kubernetes continue token for the next page
/// (absent on the last page). `summary` is `true` when the list was served as a
/// public-read summary without the caller's credential: items then carry only
/// the summary fields (documented per item type) and details need a login.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct ListResponse<T: TS> {
    /// This page's items.
    pub items: Vec<T>,
    /// Kubernetes continue token for the next page; absent on the last page.
    #[serde(rename = "continue", skip_serializing_if = "Option::is_none")]
    pub cont: Option<String>,
    /// `true` when served as a public-read summary without the caller's
    /// credential.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<bool>,
    /// Kubernetes `remainingItemCount` when the API server reported it.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "number")]
    pub remaining_item_count: Option<i64>,
}

impl<T: TS> ListResponse<T> {
    /// All `items`, marked as a summary when `summary`.
    pub fn new(items: Vec<T>, summary: bool) -> Self {
        Self {
            items,
            cont: None,
            summary: summary.then_some(true),
            remaining_item_count: None,
        }
    }
}

/// The subset of Kubernetes `ObjectMeta` the UI shows.
#[derive(Debug, Default, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "ObjectMeta", optional_fields)]
pub struct Meta {
    /// Object name.
    pub name: String,
    /// Object namespace.
    pub namespace: String,
    /// Absent in public-read summaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// When the object was created (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// The object's labels; absent in public-read summaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Record<string, string>")]
    pub labels: Option<BTreeMap<String, String>>,
    /// Only non-sensitive annotations; the server drops `kubectl.kubernetes.io/last-applied-configuration`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Record<string, string>")]
    pub annotations: Option<BTreeMap<String, String>>,
    /// `metadata.generation`; absent in public-read summaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub generation: Option<i64>,
    /// `metadata.resourceVersion`; absent in public-read summaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
}

/// A Kubernetes condition (`metav1.Condition`).
#[derive(Clone, Debug, Default, Deserialize, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct Condition {
    /// Condition type, CamelCase or prefixed with a DNS subdomain
    /// (`kruntimes.io/RuntimedReady`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    #[ts(optional = false, type = "string")]
    pub type_: Option<String>,
    /// `True`, `False` or `Unknown`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional = false, type = "'True' | 'False' | 'Unknown'")]
    pub status: Option<String>,
    /// Machine-readable CamelCase reason for the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable detail about the last transition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When the status last changed (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_transition_time: Option<String>,
    /// `metadata.generation` the condition was computed from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub observed_generation: Option<i64>,
}

/// A part of a detail answer that needs its own permission. The page renders
/// whatever sections are `ok` and explains the others instead of failing.
///
/// - `ok`: the data fields of `T` are present.
/// - `forbidden`: the caller may not read it; `message` is the Kubernetes
///   message and `access` (when known) the denied check.
/// - `absent`: nothing to show (no Pod assigned yet, Pod gone); `message` says why.
/// - `error`: reading it failed for another reason (e.g. 503).
#[derive(Debug, Serialize, TS)]
#[serde(tag = "state", rename_all = "camelCase")]
pub enum Section<T> {
    /// The section could be read: `T`'s fields are present.
    Ok(T),
    /// The caller may not read the section.
    #[ts(optional_fields)]
    Forbidden {
        /// The Kubernetes message.
        message: String,
        /// The denied check, when known.
        #[serde(skip_serializing_if = "Option::is_none")]
        access: Option<AccessRequest>,
    },
    /// Nothing to show (no Pod assigned yet, Pod gone).
    Absent {
        /// Why there is nothing.
        message: String,
    },
    /// Reading the section failed for another reason.
    #[ts(optional_fields)]
    Error {
        /// What failed.
        message: String,
        /// The failure's HTTP status code, when known (e.g. 503).
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<u16>,
    },
}

/// Query of `GET /api/namespaces/{ns}/runs` as it is sent: every parameter
/// optional and a string on the wire. The server pushes what it can to the
/// API server (field selectors on `.status.phase`, `.spec.runtime`,
/// `.status.assignedPod`; `labelSelector` as is) and filters the rest itself.
#[derive(Debug, Default, PartialEq, Eq, TS)]
#[ts(rename_all = "camelCase", optional_fields)]
pub struct RunListQuery {
    /// One phase, or several comma-separated.
    pub phase: Option<String>,
    /// Only Runs of this Runtime.
    pub runtime: Option<String>,
    /// Only Runs assigned to this Runtime Pod.
    pub assigned_pod: Option<String>,
    /// Kubernetes label selector syntax, e.g. `app=web,tier!=db`.
    pub label_selector: Option<String>,
    /// RFC 3339; only Runs created at or after this instant.
    pub created_after: Option<String>,
    /// Only Runs whose name contains this (lowercase letters, digits, `-`
    /// and `.`); filtered by the Console, like `createdAfter`.
    pub name: Option<String>,
    /// Page size, 1..500, default 50.
    #[ts(type = "number", optional)]
    pub limit: Option<String>,
    /// Continue token from the previous page.
    #[ts(rename = "continue")]
    pub cont: Option<String>,
}

/// Query of `GET /api/namespaces/{ns}/runtimes` and `.../workflowruns`:
/// a name search (filtered by the Console), a label selector (passed to the
/// API server) and paging. Page size 1..500, default 500.
#[derive(Debug, Default, PartialEq, Eq, TS)]
#[ts(rename_all = "camelCase", optional_fields)]
pub struct ObjectListQuery {
    /// Only objects whose name contains this (lowercase letters, digits, `-` and `.`).
    pub name: Option<String>,
    /// Kubernetes label selector syntax; needs a credential.
    pub label_selector: Option<String>,
    /// Page size, 1..500, default 500.
    #[ts(type = "number", optional)]
    pub limit: Option<String>,
    /// Continue token from the previous page.
    #[ts(rename = "continue")]
    pub cont: Option<String>,
}

/// `GET /api/session` (and `POST`, `DELETE`). `GET` without a valid cookie
/// answers 200 with `{authenticated:false}` (not 401). The token itself is never returned.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct SessionInfo {
    /// Whether the request carried a valid credential: the session cookie, a
    /// bearer token or a client certificate.
    pub authenticated: bool,
    /// Kubernetes username from TokenReview, e.g. `system:serviceaccount:team-a:viewer`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    /// Whether list endpoints answer summaries without credentials
    /// (`console.publicRead`). Lets the UI offer browsing before login.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub public_read: Option<bool>,
}

/// `GET /api/namespaces/{ns}/runs/{name}/operations/access`: whether the
/// caller may run session operations on the Run, asked with their own token
/// (a SelfSubjectAccessReview), so the session panel can say so before
/// anyone types a command.
#[derive(Debug, Serialize, TS)]
#[ts(optional_fields)]
pub struct AccessDecision {
    /// Whether the authorizer allows it.
    pub allowed: bool,
    /// Why, as the authorizer said it (often empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The question asked: `create runs/operations` on this Run.
    pub access: AccessRequest,
}

/// `POST /api/session` request body. The token is validated with TokenReview.
#[derive(Debug, Deserialize, TS)]
pub struct SessionLogin {
    /// The caller's Kubernetes bearer token; kept only sealed in the HttpOnly
    /// session cookie.
    pub token: String,
}

/// One namespace of a `NamespaceList`.
#[derive(Debug, Serialize, TS)]
#[ts(optional_fields)]
pub struct NamespaceItem {
    /// Namespace name.
    pub name: String,
    /// `Active` or `Terminating`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<String>,
    /// Whether the caller may list Runs here (a SelfSubjectAccessReview with
    /// the caller's own token). Absent on public summaries.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub readable: Option<bool>,
}

/// `GET /api/namespaces`: the namespaces the caller can read. A caller who may
/// list namespaces gets all of them, each marked `readable` or not; one who
/// may not gets only those where a SelfSubjectAccessReview allows listing
/// Runs. `home` is where the UI lands when nothing is remembered: the
/// ServiceAccount's own namespace (from the TokenReview username
/// `system:serviceaccount:NS:NAME`) when the caller may read it, else the
/// first readable namespace. Without a credential the answer is 401.
#[derive(Debug, Serialize, TS)]
#[ts(optional_fields)]
pub struct NamespaceList {
    /// The namespaces, each marked `readable` or not.
    pub items: Vec<NamespaceItem>,
    /// Always absent: the list is no longer served without a credential
    /// (401), so it is never a public-read summary.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub summary: Option<bool>,
    /// Where the UI lands when nothing is remembered; absent when no namespace
    /// is readable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub home: Option<String>,
}

/// `GET /api/namespaces/{ns}`: whether the namespace exists, when the Console
/// may tell this caller. `exists` is absent when it may not: the caller's own
/// read of the namespace was forbidden. Without a credential the answer is
/// 401. docs/security.md gives the reasoning.
#[derive(Debug, Serialize, TS)]
#[ts(optional_fields)]
pub struct NamespaceCheck {
    /// The namespace name asked about.
    pub name: String,
    /// Whether it exists; absent when the caller's read of it was forbidden.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
}

/// The condition with the latest `lastTransitionTime`.
#[derive(Debug, Serialize, TS)]
#[ts(optional_fields)]
pub struct LastTransition {
    /// The condition's type.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    #[ts(optional = false, type = "string")]
    pub type_: Option<String>,
    /// `True`, `False` or `Unknown`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Condition['status']")]
    pub status: Option<String>,
    /// Machine-readable CamelCase reason for the transition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Human-readable detail about the transition.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// `lastTransitionTime` (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
}

/// One row of the Run table. In a public-read summary (`summary: true`) only
/// `metadata.name`, `metadata.namespace`, `metadata.creationTimestamp`,
/// `phase`, `runtime` and `mode` are present.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct RunListItem {
    /// Object metadata (name, namespace and creation time in a summary).
    pub metadata: Meta,
    /// `status.phase`; absent until the engine writes one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<Phase>")]
    pub phase: Option<String>,
    /// `spec.runtime`: the Runtime whose Pods execute the Run.
    pub runtime: String,
    /// Which of `spec.mode.*` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<ModeName>,
    /// `status.assignedPod`: the Runtime Pod executing the Run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assigned_pod: Option<String>,
    /// `status.attempt` (1-based).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub attempt: Option<i64>,
    /// The Run's most recent condition change.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_transition: Option<LastTransition>,
    /// `status.message`: why the Run waits, or how it ended (absent when empty).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The WorkflowRun step that created this Run (its controller owner
    /// reference and the engine's `kruntimes.io/workflow-*` labels).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_run: Option<StepOwner>,
    /// `status.startTime` (RFC 3339): when runtimed claimed the Run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// `status.completionTime` (RFC 3339): when the Run reached a terminal
    /// phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
}

/// One entry of `status.artifactRefs`. The UI shows it as metadata only; no download.
#[derive(Debug, Default, Deserialize, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct ArtifactRef {
    /// Logical artifact name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional = false, type = "string")]
    pub name: Option<String>,
    /// Artifact store that holds it (e.g. `filesystem`, `s3`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub driver: Option<String>,
    /// How the content is represented (e.g. `file`, `directory`, `archive`).
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// `s3://bucket/key`, `pvc://claim/path` or `file:///path`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "string")]
    pub location: Option<Value>,
    /// Stored size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub size_bytes: Option<i64>,
    /// Content digest with its algorithm prefix (`sha256:…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    /// Media type of the content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_type: Option<String>,
    /// When the artifact was stored (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
}

/// Run `spec`, without `env` (never returned).
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "RunSpec", optional_fields)]
pub struct RunSpecView {
    /// The Runtime whose Pods execute the Run.
    pub runtime: String,
    /// The execution mode: exactly one of `task`, `function`, `session`.
    pub mode: RunMode,
    /// Duration string as written in the spec, e.g. `10m`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
    /// `spec.retryPolicy` as the CRD declares it; shown as key/value pairs.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Record<string, unknown>")]
    pub retry_policy: Option<Value>,
}

/// Where a Ready function or session Run answers (`caBundle` is omitted).
#[derive(Debug, Default, Deserialize, Serialize, TS)]
#[ts(optional_fields)]
pub struct Endpoint {
    /// Endpoint protocol (`HTTPS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// Invoke or operations URL; its path carries the Run UID.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

/// Output values by name: at most 64 keys, each value a string of at most 4 KiB.
pub type Outputs = BTreeMap<String, String>;

/// Run `status`, with bounded outputs and without the endpoint's `caBundle`.
#[derive(Debug, Default, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "RunStatus", optional_fields)]
pub struct RunStatusView {
    /// `status.phase`; absent until the engine writes one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<Phase>")]
    pub phase: Option<String>,
    /// The Runtime Pod executing the Run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assigned_pod: Option<String>,
    /// UID of the assigned Pod: tells a replaced Pod of the same name apart.
    #[serde(rename = "assignedPodUID", skip_serializing_if = "Option::is_none")]
    pub assigned_pod_uid: Option<String>,
    /// Where a Ready function or session Run answers.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub endpoint: Option<Endpoint>,
    /// Human-readable summary of the current state (why it waits, how it
    /// ended).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// When runtimed claimed the Run (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// When the Run reached a terminal phase (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
    /// At most 64 keys. Values are strings; the server truncates each to 4 KiB.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Record<string, string>")]
    pub outputs: Option<Outputs>,
    /// Artifacts the Run stored outside etcd.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub artifact_refs: Option<Vec<ArtifactRef>>,
    /// `status.attempt` (1-based); the engine writes it only at the end or on a
    /// retry.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub attempt: Option<i64>,
    /// The engine's conditions (`Scheduled`, `Running`, `Completed`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// A Pod as seen by the caller (the Pod section of a Run, the Pods of a Runtime).
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct PodInfo {
    /// Pod name.
    pub name: String,
    /// Pod namespace.
    pub namespace: String,
    /// Pod UID.
    pub uid: String,
    /// `Pending`, `Running`, `Succeeded`, `Failed`, `Unknown`.
    pub phase: String,
    /// The Node the Pod is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The Pod's IP address.
    #[serde(rename = "podIP", skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<String>,
    /// When the kubelet acknowledged the Pod (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// Pod condition `Ready` is True.
    pub ready: bool,
    /// Pod condition `kruntimes.io/RuntimedReady`, when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtimed_ready: Option<Condition>,
    /// Sum of container restart counts.
    pub restarts: i32,
    /// The Pod's UID no longer matches `status.assignedPodUID` (Pod was replaced).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced: Option<bool>,
    /// The Pod's labels.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Record<string, string>")]
    pub labels: Option<BTreeMap<String, String>>,
}

/// A Kubernetes Event related to the Run or its Pod.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(rename = "EventInfo", optional_fields)]
pub struct EventInfo {
    /// `Normal` or `Warning`.
    #[serde(rename = "type")]
    pub type_: String,
    /// Machine-readable reason, e.g. `RunRetrying`, `Scheduled`.
    pub reason: String,
    /// Human-readable description.
    pub message: String,
    /// `Kind/name` of the involved object, e.g. `Run/build-42`, `Pod/py-0`.
    pub involved_object: String,
    /// Times the event occurred, when Kubernetes aggregated repeats.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub count: Option<i32>,
    /// When the event first occurred (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_time: Option<String>,
    /// When it last occurred (RFC 3339): `lastTimestamp`, else `eventTime`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_time: Option<String>,
    /// The component that reported it (e.g. `kubelet`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
}

/// The `ok` part of a Run's Pod section.
#[derive(Debug, Serialize, TS)]
pub struct PodSection {
    /// The assigned Pod.
    pub pod: PodInfo,
}

/// The `ok` part of a list section.
#[derive(Debug, Serialize, TS)]
pub struct Items<T> {
    /// The section's entries.
    pub items: Vec<T>,
}

/// `GET /api/namespaces/{ns}/runs/{name}`.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub struct RunDetail {
    /// The Run's metadata.
    pub metadata: Meta,
    /// The Run's spec, without `env`.
    pub spec: RunSpecView,
    /// The Run's status.
    pub status: RunStatusView,
    /// Needs `get pods` in the namespace. `absent` when no Pod is assigned or it is gone.
    pub pod: Section<PodSection>,
    /// What the phase and conditions say, and why a Pending Run waits.
    pub state: RunState,
    /// Needs `list events` in the namespace. The Run's Events and, of its
    /// Pod's, those from the Run's window (its start, or creation, to its
    /// completion). Items oldest first.
    pub events: Section<Items<EventInfo>>,
    /// The Run's retry history from its Events, oldest first (empty when it
    /// has none or the Events cannot be read).
    pub attempts: Vec<AttemptEvent>,
    /// The WorkflowRun step that started this Run: its controller owner
    /// reference and labels, else the step (or Action step) whose `runName`
    /// names it among the namespace's WorkflowRuns (needs `list
    /// workflowruns`). `absent` when no WorkflowRun names it.
    pub workflow_run: Section<StepOwner>,
}

/// `GET /api/namespaces/{ns}/{runs|runtimes|workflowruns}/{name}/manifest`:
/// the whole object, sanitized by the server (env values, managed fields,
/// secret and ConfigMap references and annotations that embed a copy of the
/// object are hidden), for the YAML view.
#[derive(Debug, Serialize, TS)]
pub struct ObjectManifest {
    /// The object, sanitized.
    #[ts(type = "Record<string, unknown>")]
    pub object: Value,
    /// The JSON paths of what was hidden or removed, e.g. `spec.env[0]`.
    pub hidden: Vec<String>,
}

/// One line of `GET /api/namespaces/{ns}/watch` (NDJSON). `type` is
/// `ADDED`, `MODIFIED` or `DELETED` (with `kind` and `name`: read it again),
/// `BOOKMARK` (resume `kind` from `resourceVersion`), `RESYNC` (too old to
/// resume: read every `kind` object again), `ERROR` (that kind's watch
/// ended: `code`, `message`), `HEARTBEAT`, or `END` (the stream ends:
/// `code` 401/403 when access was revoked, 503 on shutdown).
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct WatchLine {
    /// `runs`, `runtimes` or `workflowruns`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// What happened (see the type's description).
    #[serde(rename = "type")]
    #[ts(
        type = "'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'RESYNC' | 'ERROR' | 'HEARTBEAT' | 'END'"
    )]
    pub type_: String,
    /// The object that changed (`ADDED`, `MODIFIED`, `DELETED`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Where to resume `kind` from (`BOOKMARK`, `RESYNC`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_version: Option<String>,
    /// HTTP-style code of an `ERROR` or `END`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub code: Option<u16>,
    /// Why an `ERROR` or `END` happened.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl WatchLine {
    fn of(type_: &str) -> Self {
        Self {
            kind: None,
            type_: type_.to_owned(),
            name: None,
            resource_version: None,
            code: None,
            message: None,
        }
    }
    /// A `BOOKMARK`: resume `kind` from resourceVersion `rv`.
    pub fn bookmark(kind: &str, rv: &str) -> Self {
        Self {
            kind: Some(kind.to_owned()),
            resource_version: Some(rv.to_owned()),
            ..Self::of("BOOKMARK")
        }
    }
    /// A `RESYNC`: `rv` is too old to resume from; read every `kind` object
    /// again.
    pub fn resync(kind: &str, rv: &str) -> Self {
        Self {
            type_: "RESYNC".into(),
            ..Self::bookmark(kind, rv)
        }
    }
    /// An `ERROR`: the watch of `kind` ended with `code`.
    pub fn error(kind: &str, code: u16, message: String) -> Self {
        Self {
            kind: Some(kind.to_owned()),
            code: Some(code),
            message: Some(message),
            ..Self::of("ERROR")
        }
    }
    /// The `END` of the stream: 401/403 when access was revoked, 503 on
    /// shutdown.
    pub fn end(code: u16, message: String) -> Self {
        Self {
            code: Some(code),
            message: Some(message),
            ..Self::of("END")
        }
    }
    /// A `HEARTBEAT`, sent while nothing changes.
    pub fn heartbeat() -> Self {
        Self::of("HEARTBEAT")
    }
}

/// Where a Run sits in a WorkflowRun: the WorkflowRun, and the job, step
/// and Action step when known.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct StepOwner {
    /// The WorkflowRun's name.
    pub name: String,
    /// The job id, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub job: Option<String>,
    /// The step's name, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub step: Option<String>,
    /// For a step that calls an Action: the Action's step this Run executed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action_step: Option<String>,
}

impl From<kruntimes_core::workflowrun::StepRef> for StepOwner {
    fn from(r: kruntimes_core::workflowrun::StepRef) -> Self {
        StepOwner {
            name: r.name,
            job: r.job,
            step: r.step,
            action_step: r.action_step,
        }
    }
}

/// Where a Run is in its life, read from its phase and the engine's
/// conditions (`Scheduled` True/Assigned; `Running` True/Claimed or
/// Retrying, False/Completed or a failure reason; `Completed`
/// True/RunCompleted or False/a failure reason).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, TS)]
#[serde(rename_all = "camelCase")]
pub enum RunStage {
    /// Pending without a Pod: `message` says why it waits (the engine sets
    /// no condition, only `status.message`).
    Waiting,
    /// Assigned to a Pod, not yet claimed by runtimed.
    Scheduled,
    /// Claimed and executing.
    Running,
    /// An attempt failed and another follows (`reason` is the failure).
    Retrying,
    /// Active and serving (function and session Runs).
    Ready,
    /// Finished with success.
    Succeeded,
    /// Failed, Timeout or Cancelled: `reason` is the engine's failure reason.
    Failed,
}

/// The Run's stage with the reason and message that explain it.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct RunState {
    /// Where the Run is in its life.
    pub stage: RunStage,
    /// The condition reason, e.g. `Assigned`, `Claimed`, `RunCompleted`,
    /// `RuntimeExecute`, `PodUnhealthy`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// The condition's message, else `status.message`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// One attempt event of a Run: the engine keeps its retry history only as
/// Events (`RunFailedRetrying`, `RunRetrying`, `StaleRunRetrying`,
/// `RunRetriesExhausted`).
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct AttemptEvent {
    /// The Event's reason: `RunFailedRetrying`, `RunRetrying`,
    /// `StaleRunRetrying` or `RunRetriesExhausted`.
    pub reason: String,
    /// The Event's message.
    pub message: String,
    /// The attempt the event is about (1-based), when its message says.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub attempt: Option<i64>,
    /// The retry policy's `maxAttempts`, when the message says.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub max_attempts: Option<i64>,
    /// When the Event last occurred, else when it first did (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
}

/// One row of the Runtime list. In a public-read summary only `metadata.name`,
/// `metadata.namespace`, `metadata.creationTimestamp`, `replicas` and
/// `readyReplicas` are present.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct RuntimeListItem {
    /// Object metadata (name, namespace and creation time in a summary).
    pub metadata: Meta,
    /// `spec.replicas`; unset and 0 mean 1, as the engine reads them.
    #[ts(as = "i32")]
    pub replicas: i64,
    /// Runtime Pods whose `Ready` condition is True, counted by the Console
    /// (the engine does not keep `status.readyReplicas`); `status.readyReplicas`
    /// only when the Pods cannot be read; absent when neither is known.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub ready_replicas: Option<i64>,
    /// The Runtime server's image: `spec.template.spec.containers[0].image`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Condition `Ready` of the Runtime, when it has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<Condition>,
}

/// A Run assigned to a Runtime Pod (non-terminal phases only).
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct AssignedRun {
    /// Run name.
    pub name: String,
    /// Run UID.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// The Run's phase (Pending when unset).
    #[ts(as = "Phase")]
    pub phase: String,
    /// Which of `spec.mode.*` is set.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<ModeName>,
    /// When the Run was created (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// `spec.resources.requests` as the scheduler counts them (`runs: 1`
    /// unless more is asked); absent when the Run takes just one of `runs`.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Record<string, number>")]
    pub requests: Option<BTreeMap<String, i64>>,
}

/// A Pod of a Runtime (`runtime=<name>` label).
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct RuntimePod {
    /// Pod name.
    pub name: String,
    /// Pod UID.
    pub uid: String,
    /// `Pending`, `Running`, `Succeeded`, `Failed`, `Unknown`.
    pub phase: String,
    /// Pod condition `Ready` is True.
    pub ready: bool,
    /// Pod condition `kruntimes.io/RuntimedReady`, when present.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub runtimed_ready: Option<Condition>,
    /// Sum of container restart counts.
    pub restarts: i32,
    /// The Node the Pod is bound to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub node: Option<String>,
    /// The Pod's IP address.
    #[serde(rename = "podIP", skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<String>,
    /// When the kubelet acknowledged the Pod (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// The Pod's capacity as the engine's scheduler reads it: `runs: 2`
    /// unless the Pod says otherwise, plus every annotation
    /// `kruntimes.io/capacity.<res>` (resource name → value as written).
    #[ts(type = "Record<string, string>")]
    pub capacity: BTreeMap<String, String>,
    /// Runs whose `status.assignedPod` is this Pod. `forbidden`/`error` are per Runtime, not per Pod.
    pub runs: Vec<AssignedRun>,
    /// Capacity used and free per resource: the sum of
    /// `spec.resources.requests` of the Scheduled, Running and Ready Runs
    /// assigned here (each takes `runs: 1` unless it requests more).
    pub usage: Vec<CapacityUse>,
}

/// One resource of a Runtime Pod's capacity.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct CapacityUse {
    /// Resource name, e.g. `runs`, `gpu`.
    pub resource: String,
    /// As annotated (`kruntimes.io/capacity.<resource>`), or the engine's default.
    pub capacity: String,
    /// The capacity is the engine's default (2 Runs per Pod), not annotated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<bool>,
    /// Sum of the requests of the Scheduled, Running and Ready Runs assigned
    /// here.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub used: Option<i64>,
    /// `capacity - used`, never below 0; absent when either is unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub free: Option<i64>,
}

/// A Pending Run waiting for this Runtime, in the queue's order (oldest first).
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct QueuedRun {
    /// Run name.
    pub name: String,
    /// When the Run was created (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
    /// Reason of a `Scheduled=False` condition, where a platform writes one
    /// (the engine writes none for a waiting Run).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Why it waits: the Run's `status.message` (e.g. "waiting for
    /// available runtime pods for runtime bash").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// `spec.capacity` of a Runtime. Unset means 2 Runs per Pod.
#[derive(Debug, Default, Serialize, TS)]
pub struct RuntimeCapacity {
    /// Resource name → declared capacity per Pod, as a quantity string.
    pub resources: BTreeMap<String, String>,
}

/// Runtime `spec`: what the Console shows of it.
#[derive(Debug, Serialize, TS)]
#[ts(optional_fields)]
pub struct RuntimeSpecView {
    /// `spec.replicas`; unset and 0 mean 1, as the engine reads them.
    #[ts(as = "i32")]
    pub replicas: i64,
    /// gRPC port of the Runtime server container.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub port: Option<i64>,
    /// Per-Pod capacity; absent means 2 Runs per Pod.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity: Option<RuntimeCapacity>,
    /// The Runtime server's image: `spec.template.spec.containers[0].image`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

/// Runtime `status`, with the ready count the Console makes.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct RuntimeStatusView {
    /// The Runtime's Pods whose `Ready` condition is True, counted by the
    /// Console; `status.readyReplicas` only when the Pods cannot be read.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(as = "Option<i32>")]
    pub ready_replicas: Option<i64>,
    /// The Runtime's conditions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
}

/// `GET /api/namespaces/{ns}/runtimes/{name}`.
#[derive(Debug, Serialize, TS)]
pub struct RuntimeDetail {
    /// The Runtime's metadata.
    pub metadata: Meta,
    /// The Runtime's spec.
    pub spec: RuntimeSpecView,
    /// The Runtime's status.
    pub status: RuntimeStatusView,
    /// Needs `list pods` (and `list runs` for `runs`) in the namespace.
    pub pods: Section<Items<RuntimePod>>,
    /// The Pending Runs of this Runtime, oldest first. Needs `list runs`.
    pub queue: Section<Items<QueuedRun>>,
}

/// Counts of jobs by observed phase; `total` is the number of `spec.jobs`.
#[derive(Debug, Serialize, TS)]
pub struct JobCounts {
    /// Jobs declared in `spec.jobs`.
    #[ts(as = "i32")]
    pub total: usize,
    /// Jobs whose phase is Succeeded.
    #[ts(as = "i32")]
    pub succeeded: usize,
    /// Jobs whose phase is Failed, Timeout or Cancelled.
    #[ts(as = "i32")]
    pub failed: usize,
    /// Jobs whose phase is Running.
    #[ts(as = "i32")]
    pub running: usize,
}

/// One row of the WorkflowRun list. In a public-read summary only metadata
/// name/namespace/creationTimestamp, `phase` and `jobs` counts are present.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct WorkflowRunListItem {
    /// Object metadata (name, namespace and creation time in a summary).
    pub metadata: Meta,
    /// `status.phase`, when the engine has written one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "WorkflowPhase")]
    pub phase: Option<String>,
    /// Counts of the jobs by phase.
    pub jobs: JobCounts,
    /// `status.message`: why it failed to start or to call a Workflow or Action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The earliest start of its steps' Runs (the engine writes none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// Once Succeeded, Failed or Cancelled: the latest completion of its steps' Runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
    /// Set when this run was started by a reusable-workflow job of another
    /// run (its controller owner reference).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_workflow_run: Option<String>,
}

/// One declared step (display only: `run` scripts are shown, `with` values
/// are not secrets): a script, or a call to an Action (`uses`).
#[derive(Debug, Default, Deserialize, Serialize, TS)]
#[ts(optional_fields)]
pub struct StepSpec {
    /// Step name, unique within the job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "string")]
    pub name: Option<Value>,
    /// Shell script of the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "string")]
    pub run: Option<Value>,
    /// The Action this step calls; its steps' Runs are in `actionSteps` of the step's status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "string")]
    pub uses: Option<Value>,
    /// Inputs of the Action named by `uses`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Record<string, unknown>")]
    pub with: Option<Value>,
}

/// `spec.jobs.<id>` as declared (keys as in the CRD, including `runs-on`).
#[derive(Debug, Serialize, TS)]
#[ts(optional_fields)]
pub struct JobSpec {
    /// The Runtime that executes the job's steps.
    #[serde(rename = "runs-on", default, skip_serializing_if = "Option::is_none")]
    pub runs_on: Option<String>,
    /// Job ids this job depends on. Unknown ids are shown, not dropped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs: Option<Vec<String>>,
    /// The job's steps, in the order they run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepSpec>>,
    /// Reusable workflow this job calls; its run appears as `status.jobs.<id>.workflowRunName`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uses: Option<String>,
    /// Inputs passed to the reusable workflow named by `uses`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Record<string, unknown>")]
    pub with: Option<Value>,
}

/// `status.jobs.<id>.steps[i].actionSteps[j]`: one step of the Action a step calls.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct ActionStepStatus {
    /// Step name within the Action.
    pub name: String,
    /// Step phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "WorkflowPhase")]
    pub phase: Option<String>,
    /// The Run that executed this step of the Action, in the same namespace.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_name: Option<String>,
    /// Outputs reported by the step's Run (values bounded to 4 KiB).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Record<string, string>")]
    pub outputs: Option<Outputs>,
    /// Its Run's start time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// Its Run's completion time.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
}

/// `status.jobs.<id>.steps[i]`. Times are its Run's (or, for a step that
/// calls an Action, the span of the Action steps' Runs).
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct StepStatus {
    /// Step name, as declared.
    pub name: String,
    /// Step phase.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "WorkflowPhase")]
    pub phase: Option<String>,
    /// The Run that executed this step, in the same namespace. A step that
    /// calls an Action has none: see `actionSteps`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub run_name: Option<String>,
    /// Outputs reported by the step (values bounded to 4 KiB).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Record<string, string>")]
    pub outputs: Option<Outputs>,
    /// The steps of the Action this step calls, each with its Run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action_steps: Option<Vec<ActionStepStatus>>,
    /// When its Run started, or the earliest start of its Action steps' Runs
    /// (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// When its Run completed, or, once every Action step's Run completed, the
    /// latest of them (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
}

/// `status.jobs.<id>`. Times span its steps' Runs.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct JobStatus {
    /// Pending, Waiting, Running, Succeeded, Failed or Skipped.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "WorkflowPhase")]
    pub phase: Option<String>,
    /// Jobs that finished before this one started (its resolved `needs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pre: Option<Vec<String>>,
    /// Step progress, in declaration order.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepStatus>>,
    /// Job outputs; `result` is shown in the DAG (the server bounds each value to 4 KiB).
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Record<string, string>")]
    pub outputs: Option<Outputs>,
    /// Child WorkflowRun started by a reusable-workflow job (`uses`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub workflow_run_name: Option<String>,
    /// The earliest start of its steps' Runs (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// Once every step with a Run completed: the latest of their completions
    /// (RFC 3339).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
}

/// WorkflowRun `spec`: its jobs as declared.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct WorkflowRunSpecView {
    /// Job id to job.
    #[ts(type = "Record<string, JobSpec>")]
    pub jobs: BTreeMap<String, JobSpec>,
}

/// WorkflowRun `status`, with the times read from its steps' Runs.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct WorkflowRunStatusView {
    /// `status.phase`, when the engine has written one.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "WorkflowPhase")]
    pub phase: Option<String>,
    /// Why it failed to start, or to call a Workflow or Action.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The execution snapshot of the Workflow and Actions this run uses.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub snapshot_name: Option<String>,
    /// The earliest start of its steps' Runs (the engine writes none).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub start_time: Option<String>,
    /// Once Succeeded, Failed or Cancelled: the latest completion of its steps' Runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<String>,
    /// The WorkflowRun's conditions.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub conditions: Option<Vec<Condition>>,
    /// Job id to job progress.
    #[serde(skip_serializing_if = "Option::is_none")]
    #[ts(optional, type = "Record<string, JobStatus>")]
    pub jobs: Option<BTreeMap<String, JobStatus>>,
}

/// `GET /api/namespaces/{ns}/workflowruns/{name}`.
#[derive(Debug, Serialize, TS)]
#[serde(rename_all = "camelCase")]
#[ts(optional_fields)]
pub struct WorkflowRunDetail {
    /// The WorkflowRun's metadata.
    pub metadata: Meta,
    /// The WorkflowRun's spec.
    pub spec: WorkflowRunSpecView,
    /// The WorkflowRun's status.
    pub status: WorkflowRunStatusView,
    /// Set when this run is the child of another WorkflowRun's reusable job.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub parent_workflow_run: Option<String>,
}

/// `GET /api/namespaces/{ns}/runs`.
pub type RunList = ListResponse<RunListItem>;
/// `GET /api/namespaces/{ns}/runtimes`.
pub type RuntimeList = ListResponse<RuntimeListItem>;
/// `GET /api/namespaces/{ns}/workflowruns`.
pub type WorkflowRunList = ListResponse<WorkflowRunListItem>;

const HEADER: &str = "\
// Generated from console/src/api/types.rs; do not edit. Regenerate with
//   KRUNTIMES_WRITE_TS=1 cargo test -p kruntimes-console --lib api::types
/**
 * JSON contract between the browser UI and the Kruntimes Console server.
 *
 * Every `/api/...` endpoint answers `application/json` (the log follow
 * endpoint answers `application/x-ndjson`). A field marked optional (`?`) may
 * be omitted entirely, and the UI never relies on `null` for \"absent\".
 * Timestamps are RFC 3339 strings in UTC, exactly as Kubernetes writes them.
 * Any non-2xx answer on `/api/` carries an {@link ApiErrorBody}.
 */
";

fn decl<T: TS>(out: &mut String) {
    out.push('\n');
    if let Some(docs) = T::docs() {
        out.push_str(&docs);
    }
    out.push_str("export ");
    out.push_str(&one_field_a_line(&T::decl()));
    out.push('\n');
}

/// Splits `s` at the commas outside brackets, quotes and comments; `None`
/// when a bracket closes one opened before `s` (`a } & T | { b`).
fn top_level_fields(s: &str) -> Option<Vec<&str>> {
    let (mut depth, mut quote, mut comment) = (0i32, None, false);
    let (mut start, mut fields) = (0, Vec::new());
    let b = s.as_bytes();
    for (i, &c) in b.iter().enumerate() {
        if comment {
            comment = !(c == b'/' && i > 0 && b[i - 1] == b'*');
            continue;
        }
        if let Some(q) = quote {
            if c == q {
                quote = None;
            }
            continue;
        }
        match c {
            b'/' if b.get(i + 1) == Some(&b'*') => comment = true,
            b'\'' | b'"' => quote = Some(c),
            b'{' | b'<' | b'(' | b'[' => depth += 1,
            b'}' | b'>' | b')' | b']' => {
                depth -= 1;
                if depth < 0 {
                    return None;
                }
            }
            b',' if depth == 0 => {
                fields.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    fields.push(&s[start..]);
    Some(
        fields
            .into_iter()
            .map(str::trim)
            .filter(|f| !f.is_empty())
            .collect(),
    )
}

/// An object type (`type X = { a: A, b: B, };`) written one field a line;
/// anything else as ts-rs wrote it.
fn one_field_a_line(decl: &str) -> String {
    let Some((head, body)) = decl.split_once(" = { ") else {
        return decl.to_owned();
    };
    let Some(body) = body.strip_suffix(" };") else {
        return decl.to_owned();
    };
    let Some(fields) = top_level_fields(body) else {
        return decl.to_owned();
    };
    let mut out = format!("{head} = {{\n");
    for f in fields {
        for line in f.lines() {
            out.push_str("  ");
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out.pop();
        out.push_str(";\n");
    }
    out.push_str("};");
    out
}

fn alias<T: TS>(out: &mut String, name: &str, docs: &str) {
    out.push('\n');
    if !docs.is_empty() {
        out.push_str(&format!("/** {docs} */\n"));
    }
    out.push_str(&format!("export type {name} = {};\n", T::name()));
}

fn phases(out: &mut String, name: &str, docs: &str, phases: &[Phase]) {
    let list: Vec<String> = phases.iter().map(|p| format!("'{p}'")).collect();
    out.push_str(&format!(
        "\n/** {docs} */\nexport const {name}: readonly RunPhase[] = [{}];\n",
        list.join(", ")
    ));
}

/// The TypeScript declarations of the Console API, as committed in
/// `console/web/src/api/types.ts`.
pub fn typescript() -> String {
    let mut out = String::from(HEADER);
    decl::<ApiErrorBody>(&mut out);
    decl::<ApiErrorInfo>(&mut out);
    decl::<AccessRequest>(&mut out);
    decl::<SessionLogin>(&mut out);
    decl::<SessionInfo>(&mut out);
    decl::<AccessDecision>(&mut out);
    decl::<ListResponse<()>>(&mut out);
    decl::<Meta>(&mut out);
    decl::<Condition>(&mut out);
    decl::<Section<()>>(&mut out);
    decl::<Items<()>>(&mut out);
    decl::<NamespaceItem>(&mut out);
    decl::<NamespaceList>(&mut out);
    decl::<NamespaceCheck>(&mut out);
    decl::<Phase>(&mut out);
    phases(&mut out, "RUN_PHASES", "Every Run phase.", &Phase::ALL);
    phases(
        &mut out,
        "TERMINAL_PHASES",
        "Phases after which a Run changes no more.",
        &Phase::TERMINAL,
    );
    decl::<ModeName>(&mut out);
    decl::<RunMode>(&mut out);
    decl::<SessionMode>(&mut out);
    decl::<LastTransition>(&mut out);
    decl::<RunListItem>(&mut out);
    decl::<RunListQuery>(&mut out);
    decl::<ObjectListQuery>(&mut out);
    alias::<RunList>(&mut out, "RunList", "`GET /api/namespaces/{ns}/runs`.");
    decl::<ArtifactRef>(&mut out);
    decl::<RunSpecView>(&mut out);
    decl::<Endpoint>(&mut out);
    decl::<RunStatusView>(&mut out);
    decl::<PodInfo>(&mut out);
    decl::<EventInfo>(&mut out);
    decl::<PodSection>(&mut out);
    decl::<StepOwner>(&mut out);
    decl::<RunStage>(&mut out);
    decl::<RunState>(&mut out);
    decl::<AttemptEvent>(&mut out);
    decl::<ObjectManifest>(&mut out);
    decl::<WatchLine>(&mut out);
    decl::<RunDetail>(&mut out);
    decl::<Cut>(&mut out);
    decl::<LogRecord>(&mut out);
    decl::<NoteReason>(&mut out);
    decl::<LogNote>(&mut out);
    decl::<RunLogMeta>(&mut out);
    decl::<SearchSummary>(&mut out);
    decl::<RunLog>(&mut out);
    decl::<LogStreamStatus>(&mut out);
    out.push_str(
        "\n/** A line of `GET …/logs?follow=true`: a record, or the one final `Status`. */\n\
         export type LogStreamLine = LogRecord | LogStreamStatus;\n",
    );
    decl::<RuntimeListItem>(&mut out);
    alias::<RuntimeList>(
        &mut out,
        "RuntimeList",
        "`GET /api/namespaces/{ns}/runtimes`.",
    );
    decl::<AssignedRun>(&mut out);
    decl::<CapacityUse>(&mut out);
    decl::<RuntimePod>(&mut out);
    decl::<QueuedRun>(&mut out);
    decl::<RuntimeCapacity>(&mut out);
    decl::<RuntimeSpecView>(&mut out);
    decl::<RuntimeStatusView>(&mut out);
    decl::<RuntimeDetail>(&mut out);
    out.push_str(
        "\n/** Phase of a WorkflowRun, a job, or a step. Free string; the known values get colours. */\n\
         export type WorkflowPhase = RunPhase | 'Waiting' | 'Skipped' | (string & {});\n",
    );
    decl::<JobCounts>(&mut out);
    decl::<WorkflowRunListItem>(&mut out);
    alias::<WorkflowRunList>(
        &mut out,
        "WorkflowRunList",
        "`GET /api/namespaces/{ns}/workflowruns`.",
    );
    decl::<StepSpec>(&mut out);
    decl::<JobSpec>(&mut out);
    decl::<ActionStepStatus>(&mut out);
    decl::<StepStatus>(&mut out);
    decl::<JobStatus>(&mut out);
    decl::<WorkflowRunSpecView>(&mut out);
    decl::<WorkflowRunStatusView>(&mut out);
    decl::<WorkflowRunDetail>(&mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const COMMITTED: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/web/src/api/types.ts");

    #[test]
    fn object_types_are_written_one_field_a_line() {
        assert_eq!(
            one_field_a_line("type A = { a: Record<string, B>, b?: 'x, y' | 'z', };"),
            "type A = {\n  a: Record<string, B>;\n  b?: 'x, y' | 'z';\n};"
        );
        let union =
            "type S<T> = { \"state\": \"ok\" } & T | { \"state\": \"absent\", message: string, };";
        assert_eq!(one_field_a_line(union), union);
    }

    /// The committed TypeScript matches the Rust types; with
    /// `KRUNTIMES_WRITE_TS=1` it is rewritten instead.
    #[test]
    fn typescript_is_current() {
        let want = typescript();
        if std::env::var_os("KRUNTIMES_WRITE_TS").is_some() {
            std::fs::write(COMMITTED, &want).expect("writing types.ts");
            return;
        }
        let have = std::fs::read_to_string(COMMITTED).unwrap_or_default();
        assert!(
            have == want,
            "console/web/src/api/types.ts is stale: the Rust API types in \
             console/src/api/types.rs changed. Regenerate it with\n  \
             KRUNTIMES_WRITE_TS=1 cargo test -p kruntimes-console --lib api::types\n\
             and commit the result."
        );
    }
}
