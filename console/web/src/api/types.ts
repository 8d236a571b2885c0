// Generated from console/src/api/types.rs; do not edit. Regenerate with
//   KRUNTIMES_WRITE_TS=1 cargo test -p kruntimes-console --lib api::types
/**
 * JSON contract between the browser UI and the Kruntimes Console server.
 *
 * Every `/api/...` endpoint answers `application/json` (the log follow
 * endpoint answers `application/x-ndjson`). A field marked optional (`?`) may
 * be omitted entirely, and the UI never relies on `null` for "absent".
 * Timestamps are RFC 3339 strings in UTC, exactly as Kubernetes writes them.
 * Any non-2xx answer on `/api/` carries an {@link ApiErrorBody}.
 */

/**
 * Body of every non-2xx `/api/` answer. Kubernetes 401/403/404/409 are passed
 * through with their code, reason and message; the cluster being unreachable
 * is 503 `ServiceUnavailable`.
 */
export type ApiErrorBody = {
  /**
   * What failed.
   */
  error: ApiErrorInfo;
};

/**
 * The `error` object of an `ApiErrorBody`.
 */
export type ApiErrorInfo = {
  /**
   * HTTP status code, repeated in the body.
   */
  code: number;
  /**
   * Kubernetes `StatusReason` style word: `Unauthorized`, `Forbidden`,
   * `NotFound`, `BadRequest`, `Conflict`, `ServiceUnavailable`, `Timeout`,
   * `InternalError`, `RequestEntityTooLarge`.
   */
  reason: string;
  /**
   * Human-readable explanation; shown to the user verbatim. Never contains a token.
   */
  message: string;
  /**
   * The access check that failed, when the server knows it. The UI also
   * knows what it asked for, so this is only a refinement.
   */
  access?: AccessRequest;
};

/**
 * One Kubernetes authorization question: may the caller `verb` this resource?
 * Named in forbidden answers so the UI can show `kubectl auth can-i`.
 */
export type AccessRequest = {
  /**
   * `get`, `list`, `watch`, `create`.
   */
  verb: string;
  /**
   * API group; `""` for the core group.
   */
  group: string;
  /**
   * Plural resource name, e.g. `runs`, `pods`, `events`.
   */
  resource: string;
  /**
   * Subresource, e.g. `log`, `operations`.
   */
  subresource?: string;
  /**
   * Namespace; absent for cluster-scoped resources.
   */
  namespace?: string;
  /**
   * Object name; absent when the check covers every object (list, watch).
   */
  name?: string;
};

/**
 * `POST /api/session` request body. The token is validated with TokenReview.
 */
export type SessionLogin = {
  /**
   * The caller's Kubernetes bearer token; kept only sealed in the HttpOnly
   * session cookie.
   */
  token: string;
};

/**
 * `GET /api/session` (and `POST`, `DELETE`). `GET` without a valid cookie
 * answers 200 with `{authenticated:false}` (not 401). The token itself is never returned.
 */
export type SessionInfo = {
  /**
   * Whether the request carried a valid credential: the session cookie, a
   * bearer token or a client certificate.
   */
  authenticated: boolean;
  /**
   * Kubernetes username from TokenReview, e.g. `system:serviceaccount:team-a:viewer`.
   */
  username?: string;
  /**
   * Whether list endpoints answer summaries without credentials
   * (`console.publicRead`). Lets the UI offer browsing before login.
   */
  publicRead?: boolean;
};

/**
 * `GET /api/namespaces/{ns}/runs/{name}/operations/access`: whether the
 * caller may run session operations on the Run, asked with their own token
 * (a SelfSubjectAccessReview), so the session panel can say so before
 * anyone types a command.
 */
export type AccessDecision = {
  /**
   * Whether the authorizer allows it.
   */
  allowed: boolean;
  /**
   * Why, as the authorizer said it (often empty).
   */
  reason?: string;
  /**
   * The question asked: `create runs/operations` on this Run.
   */
  access: AccessRequest;
};

/**
 * A list answer. `continue` is the Kubernetes continue token for the next page
 * (absent on the last page). `summary` is `true` when the list was served as a
 * public-read summary without the caller's credential: items then carry only
 * the summary fields (documented per item type) and details need a login.
 */
export type ListResponse<T> = {
  /**
   * This page's items.
   */
  items: Array<T>;
  /**
   * Kubernetes continue token for the next page; absent on the last page.
   */
  continue?: string;
  /**
   * `true` when served as a public-read summary without the caller's
   * credential.
   */
  summary?: boolean;
  /**
   * Kubernetes `remainingItemCount` when the API server reported it.
   */
  remainingItemCount?: number;
};

/**
 * The subset of Kubernetes `ObjectMeta` the UI shows.
 */
export type ObjectMeta = {
  /**
   * Object name.
   */
  name: string;
  /**
   * Object namespace.
   */
  namespace: string;
  /**
   * Absent in public-read summaries.
   */
  uid?: string;
  /**
   * When the object was created (RFC 3339).
   */
  creationTimestamp?: string;
  /**
   * The object's labels; absent in public-read summaries.
   */
  labels?: Record<string, string>;
  /**
   * Only non-sensitive annotations; the server drops `kubectl.kubernetes.io/last-applied-configuration`.
   */
  annotations?: Record<string, string>;
  /**
   * `metadata.generation`; absent in public-read summaries.
   */
  generation?: number;
  /**
   * `metadata.resourceVersion`; absent in public-read summaries.
   */
  resourceVersion?: string;
};

/**
 * A Kubernetes condition (`metav1.Condition`).
 */
export type Condition = {
  /**
   * Condition type, CamelCase or prefixed with a DNS subdomain
   * (`kruntimes.io/RuntimedReady`).
   */
  type: string;
  /**
   * `True`, `False` or `Unknown`.
   */
  status: 'True' | 'False' | 'Unknown';
  /**
   * Machine-readable CamelCase reason for the last transition.
   */
  reason?: string;
  /**
   * Human-readable detail about the last transition.
   */
  message?: string;
  /**
   * When the status last changed (RFC 3339).
   */
  lastTransitionTime?: string;
  /**
   * `metadata.generation` the condition was computed from.
   */
  observedGeneration?: number;
};

/**
 * A part of a detail answer that needs its own permission. The page renders
 * whatever sections are `ok` and explains the others instead of failing.
 *
 * - `ok`: the data fields of `T` are present.
 * - `forbidden`: the caller may not read it; `message` is the Kubernetes
 *   message and `access` (when known) the denied check.
 * - `absent`: nothing to show (no Pod assigned yet, Pod gone); `message` says why.
 * - `error`: reading it failed for another reason (e.g. 503).
 */
export type Section<T> = { "state": "ok" } & T | { "state": "forbidden", 
/**
 * The Kubernetes message.
 */
message: string, 
/**
 * The denied check, when known.
 */
access?: AccessRequest, } | { "state": "absent", 
/**
 * Why there is nothing.
 */
message: string, } | { "state": "error", 
/**
 * What failed.
 */
message: string, 
/**
 * The failure's HTTP status code, when known (e.g. 503).
 */
code?: number, };

/**
 * The `ok` part of a list section.
 */
export type Items<T> = {
  /**
   * The section's entries.
   */
  items: Array<T>;
};

/**
 * One namespace of a `NamespaceList`.
 */
export type NamespaceItem = {
  /**
   * Namespace name.
   */
  name: string;
  /**
   * `Active` or `Terminating`.
   */
  phase?: string;
  /**
   * Whether the caller may list Runs here (a SelfSubjectAccessReview with
   * the caller's own token). Absent on public summaries.
   */
  readable?: boolean;
};

/**
 * `GET /api/namespaces`: the namespaces the caller can read. A caller who may
 * list namespaces gets all of them, each marked `readable` or not; one who
 * may not gets only those where a SelfSubjectAccessReview allows listing
 * Runs. `home` is where the UI lands when nothing is remembered: the
 * ServiceAccount's own namespace (from the TokenReview username
 * `system:serviceaccount:NS:NAME`) when the caller may read it, else the
 * first readable namespace. Without a credential the answer is 401.
 */
export type NamespaceList = {
  /**
   * The namespaces, each marked `readable` or not.
   */
  items: Array<NamespaceItem>;
  /**
   * Always absent: the list is no longer served without a credential
   * (401), so it is never a public-read summary.
   */
  summary?: boolean;
  /**
   * Where the UI lands when nothing is remembered; absent when no namespace
   * is readable.
   */
  home?: string;
};

/**
 * `GET /api/namespaces/{ns}`: whether the namespace exists, when the Console
 * may tell this caller. `exists` is absent when it may not: the caller's own
 * read of the namespace was forbidden. Without a credential the answer is
 * 401. docs/security.md gives the reasoning.
 */
export type NamespaceCheck = {
  /**
   * The namespace name asked about.
   */
  name: string;
  /**
   * Whether it exists; absent when the caller's read of it was forbidden.
   */
  exists?: boolean;
};

/**
 * `status.phase` of a Run. `Ready` is active and non-terminal (session and function Runs).
 */
export type RunPhase = "Pending" | "Scheduled" | "Running" | "Ready" | "Succeeded" | "Failed" | "Timeout" | "Cancelled";

/** Every Run phase. */
export const RUN_PHASES: readonly RunPhase[] = ['Pending', 'Scheduled', 'Running', 'Ready', 'Succeeded', 'Failed', 'Timeout', 'Cancelled'];

/** Phases after which a Run changes no more. */
export const TERMINAL_PHASES: readonly RunPhase[] = ['Succeeded', 'Failed', 'Timeout', 'Cancelled'];

/**
 * Which of the three modes a Run uses (exactly one of `spec.mode.*`).
 */
export type RunModeName = "task" | "function" | "session";

/**
 * `spec.mode`: exactly one of the modes is set.
 */
export type RunMode = {
  /**
   * A one-shot execution (`entrypoint`, `args`), kept as written.
   */
  task?: Record<string, unknown>;
  /**
   * A callable function (`handler`), kept as written: once Ready it serves
   * `/v1/.../invoke`.
   */
  function?: Record<string, unknown>;
  /**
   * An interactive session: once Ready it takes operations over
   * `/v1/.../operations:ws`.
   */
  session?: SessionMode;
};

/**
 * `spec.mode.session`: the settings of a session Run.
 */
export type SessionMode = {
  /**
   * When set, the browser sends `heartbeat` frames while an operations socket is open.
   */
  leaseSeconds?: number;
};

/**
 * The condition with the latest `lastTransitionTime`.
 */
export type LastTransition = {
  /**
   * The condition's type.
   */
  type: string;
  /**
   * `True`, `False` or `Unknown`.
   */
  status?: Condition['status'];
  /**
   * Machine-readable CamelCase reason for the transition.
   */
  reason?: string;
  /**
   * Human-readable detail about the transition.
   */
  message?: string;
  /**
   * `lastTransitionTime` (RFC 3339).
   */
  time?: string;
};

/**
 * One row of the Run table. In a public-read summary (`summary: true`) only
 * `metadata.name`, `metadata.namespace`, `metadata.creationTimestamp`,
 * `phase`, `runtime` and `mode` are present.
 */
export type RunListItem = {
  /**
   * Object metadata (name, namespace and creation time in a summary).
   */
  metadata: ObjectMeta;
  /**
   * `status.phase`; absent until the engine writes one.
   */
  phase?: RunPhase;
  /**
   * `spec.runtime`: the Runtime whose Pods execute the Run.
   */
  runtime: string;
  /**
   * Which of `spec.mode.*` is set.
   */
  mode?: RunModeName;
  /**
   * `status.assignedPod`: the Runtime Pod executing the Run.
   */
  assignedPod?: string;
  /**
   * `status.attempt` (1-based).
   */
  attempt?: number;
  /**
   * The Run's most recent condition change.
   */
  lastTransition?: LastTransition;
  /**
   * `status.message`: why the Run waits, or how it ended (absent when empty).
   */
  message?: string;
  /**
   * The WorkflowRun step that created this Run (its controller owner
   * reference and the engine's `kruntimes.io/workflow-*` labels).
   */
  workflowRun?: StepOwner;
  /**
   * `status.startTime` (RFC 3339): when runtimed claimed the Run.
   */
  startTime?: string;
  /**
   * `status.completionTime` (RFC 3339): when the Run reached a terminal
   * phase.
   */
  completionTime?: string;
};

/**
 * Query of `GET /api/namespaces/{ns}/runs` as it is sent: every parameter
 * optional and a string on the wire. The server pushes what it can to the
 * API server (field selectors on `.status.phase`, `.spec.runtime`,
 * `.status.assignedPod`; `labelSelector` as is) and filters the rest itself.
 */
export type RunListQuery = {
  /**
   * One phase, or several comma-separated.
   */
  phase?: string;
  /**
   * Only Runs of this Runtime.
   */
  runtime?: string;
  /**
   * Only Runs assigned to this Runtime Pod.
   */
  assignedPod?: string;
  /**
   * Kubernetes label selector syntax, e.g. `app=web,tier!=db`.
   */
  labelSelector?: string;
  /**
   * RFC 3339; only Runs created at or after this instant.
   */
  createdAfter?: string;
  /**
   * Only Runs whose name contains this (lowercase letters, digits, `-`
   * and `.`); filtered by the Console, like `createdAfter`.
   */
  name?: string;
  /**
   * Page size, 1..500, default 50.
   */
  limit?: number;
  /**
   * Continue token from the previous page.
   */
  continue?: string;
};

/**
 * Query of `GET /api/namespaces/{ns}/runtimes` and `.../workflowruns`:
 * a name search (filtered by the Console), a label selector (passed to the
 * API server) and paging. Page size 1..500, default 500.
 */
export type ObjectListQuery = {
  /**
   * Only objects whose name contains this (lowercase letters, digits, `-` and `.`).
   */
  name?: string;
  /**
   * Kubernetes label selector syntax; needs a credential.
   */
  labelSelector?: string;
  /**
   * Page size, 1..500, default 500.
   */
  limit?: number;
  /**
   * Continue token from the previous page.
   */
  continue?: string;
};

/** `GET /api/namespaces/{ns}/runs`. */
export type RunList = ListResponse<RunListItem>;

/**
 * One entry of `status.artifactRefs`. The UI shows it as metadata only; no download.
 */
export type ArtifactRef = {
  /**
   * Logical artifact name.
   */
  name: string;
  /**
   * Artifact store that holds it (e.g. `filesystem`, `s3`).
   */
  driver?: string;
  /**
   * How the content is represented (e.g. `file`, `directory`, `archive`).
   */
  type?: string;
  /**
   * `s3://bucket/key`, `pvc://claim/path` or `file:///path`.
   */
  location?: string;
  /**
   * Stored size in bytes.
   */
  sizeBytes?: number;
  /**
   * Content digest with its algorithm prefix (`sha256:…`).
   */
  digest?: string;
  /**
   * Media type of the content.
   */
  contentType?: string;
  /**
   * When the artifact was stored (RFC 3339).
   */
  createdAt?: string;
};

/**
 * Run `spec`, without `env` (never returned).
 */
export type RunSpec = {
  /**
   * The Runtime whose Pods execute the Run.
   */
  runtime: string;
  /**
   * The execution mode: exactly one of `task`, `function`, `session`.
   */
  mode: RunMode;
  /**
   * Duration string as written in the spec, e.g. `10m`.
   */
  timeout?: string;
  /**
   * `spec.retryPolicy` as the CRD declares it; shown as key/value pairs.
   */
  retryPolicy?: Record<string, unknown>;
};

/**
 * Where a Ready function or session Run answers (`caBundle` is omitted).
 */
export type Endpoint = {
  /**
   * Endpoint protocol (`HTTPS`).
   */
  protocol?: string;
  /**
   * Invoke or operations URL; its path carries the Run UID.
   */
  url?: string;
};

/**
 * Run `status`, with bounded outputs and without the endpoint's `caBundle`.
 */
export type RunStatus = {
  /**
   * `status.phase`; absent until the engine writes one.
   */
  phase?: RunPhase;
  /**
   * The Runtime Pod executing the Run.
   */
  assignedPod?: string;
  /**
   * UID of the assigned Pod: tells a replaced Pod of the same name apart.
   */
  assignedPodUID?: string;
  /**
   * Where a Ready function or session Run answers.
   */
  endpoint?: Endpoint;
  /**
   * Human-readable summary of the current state (why it waits, how it
   * ended).
   */
  message?: string;
  /**
   * When runtimed claimed the Run (RFC 3339).
   */
  startTime?: string;
  /**
   * When the Run reached a terminal phase (RFC 3339).
   */
  completionTime?: string;
  /**
   * At most 64 keys. Values are strings; the server truncates each to 4 KiB.
   */
  outputs?: Record<string, string>;
  /**
   * Artifacts the Run stored outside etcd.
   */
  artifactRefs?: Array<ArtifactRef>;
  /**
   * `status.attempt` (1-based); the engine writes it only at the end or on a
   * retry.
   */
  attempt?: number;
  /**
   * The engine's conditions (`Scheduled`, `Running`, `Completed`).
   */
  conditions?: Array<Condition>;
};

/**
 * A Pod as seen by the caller (the Pod section of a Run, the Pods of a Runtime).
 */
export type PodInfo = {
  /**
   * Pod name.
   */
  name: string;
  /**
   * Pod namespace.
   */
  namespace: string;
  /**
   * Pod UID.
   */
  uid: string;
  /**
   * `Pending`, `Running`, `Succeeded`, `Failed`, `Unknown`.
   */
  phase: string;
  /**
   * The Node the Pod is bound to.
   */
  node?: string;
  /**
   * The Pod's IP address.
   */
  podIP?: string;
  /**
   * When the kubelet acknowledged the Pod (RFC 3339).
   */
  startTime?: string;
  /**
   * Pod condition `Ready` is True.
   */
  ready: boolean;
  /**
   * Pod condition `kruntimes.io/RuntimedReady`, when present.
   */
  runtimedReady?: Condition;
  /**
   * Sum of container restart counts.
   */
  restarts: number;
  /**
   * The Pod's UID no longer matches `status.assignedPodUID` (Pod was replaced).
   */
  replaced?: boolean;
  /**
   * The Pod's labels.
   */
  labels?: Record<string, string>;
};

/**
 * A Kubernetes Event related to the Run or its Pod.
 */
export type EventInfo = {
  /**
   * `Normal` or `Warning`.
   */
  type: string;
  /**
   * Machine-readable reason, e.g. `RunRetrying`, `Scheduled`.
   */
  reason: string;
  /**
   * Human-readable description.
   */
  message: string;
  /**
   * `Kind/name` of the involved object, e.g. `Run/build-42`, `Pod/py-0`.
   */
  involvedObject: string;
  /**
   * Times the event occurred, when Kubernetes aggregated repeats.
   */
  count?: number;
  /**
   * When the event first occurred (RFC 3339).
   */
  firstTime?: string;
  /**
   * When it last occurred (RFC 3339): `lastTimestamp`, else `eventTime`.
   */
  lastTime?: string;
  /**
   * The component that reported it (e.g. `kubelet`).
   */
  source?: string;
};

/**
 * The `ok` part of a Run's Pod section.
 */
export type PodSection = {
  /**
   * The assigned Pod.
   */
  pod: PodInfo;
};

/**
 * Where a Run sits in a WorkflowRun: the WorkflowRun, and the job, step
 * and Action step when known.
 */
export type StepOwner = {
  /**
   * The WorkflowRun's name.
   */
  name: string;
  /**
   * The job id, when known.
   */
  job?: string;
  /**
   * The step's name, when it has one.
   */
  step?: string;
  /**
   * For a step that calls an Action: the Action's step this Run executed.
   */
  actionStep?: string;
};

/**
 * Where a Run is in its life, read from its phase and the engine's
 * conditions (`Scheduled` True/Assigned; `Running` True/Claimed or
 * Retrying, False/Completed or a failure reason; `Completed`
 * True/RunCompleted or False/a failure reason).
 */
export type RunStage = "waiting" | "scheduled" | "running" | "retrying" | "ready" | "succeeded" | "failed";

/**
 * The Run's stage with the reason and message that explain it.
 */
export type RunState = {
  /**
   * Where the Run is in its life.
   */
  stage: RunStage;
  /**
   * The condition reason, e.g. `Assigned`, `Claimed`, `RunCompleted`,
   * `RuntimeExecute`, `PodUnhealthy`.
   */
  reason?: string;
  /**
   * The condition's message, else `status.message`.
   */
  message?: string;
};

/**
 * One attempt event of a Run: the engine keeps its retry history only as
 * Events (`RunFailedRetrying`, `RunRetrying`, `StaleRunRetrying`,
 * `RunRetriesExhausted`).
 */
export type AttemptEvent = {
  /**
   * The Event's reason: `RunFailedRetrying`, `RunRetrying`,
   * `StaleRunRetrying` or `RunRetriesExhausted`.
   */
  reason: string;
  /**
   * The Event's message.
   */
  message: string;
  /**
   * The attempt the event is about (1-based), when its message says.
   */
  attempt?: number;
  /**
   * The retry policy's `maxAttempts`, when the message says.
   */
  maxAttempts?: number;
  /**
   * When the Event last occurred, else when it first did (RFC 3339).
   */
  time?: string;
};

/**
 * `GET /api/namespaces/{ns}/{runs|runtimes|workflowruns}/{name}/manifest`:
 * the whole object, sanitized by the server (env values, managed fields,
 * secret and ConfigMap references and annotations that embed a copy of the
 * object are hidden), for the YAML view.
 */
export type ObjectManifest = {
  /**
   * The object, sanitized.
   */
  object: Record<string, unknown>;
  /**
   * The JSON paths of what was hidden or removed, e.g. `spec.env[0]`.
   */
  hidden: Array<string>;
};

/**
 * One line of `GET /api/namespaces/{ns}/watch` (NDJSON). `type` is
 * `ADDED`, `MODIFIED` or `DELETED` (with `kind` and `name`: read it again),
 * `BOOKMARK` (resume `kind` from `resourceVersion`), `RESYNC` (too old to
 * resume: read every `kind` object again), `ERROR` (that kind's watch
 * ended: `code`, `message`), `HEARTBEAT`, or `END` (the stream ends:
 * `code` 401/403 when access was revoked, 503 on shutdown).
 */
export type WatchLine = {
  /**
   * `runs`, `runtimes` or `workflowruns`.
   */
  kind?: string;
  /**
   * What happened (see the type's description).
   */
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'RESYNC' | 'ERROR' | 'HEARTBEAT' | 'END';
  /**
   * The object that changed (`ADDED`, `MODIFIED`, `DELETED`).
   */
  name?: string;
  /**
   * Where to resume `kind` from (`BOOKMARK`, `RESYNC`).
   */
  resourceVersion?: string;
  /**
   * HTTP-style code of an `ERROR` or `END`.
   */
  code?: number;
  /**
   * Why an `ERROR` or `END` happened.
   */
  message?: string;
};

/**
 * `GET /api/namespaces/{ns}/runs/{name}`.
 */
export type RunDetail = {
  /**
   * The Run's metadata.
   */
  metadata: ObjectMeta;
  /**
   * The Run's spec, without `env`.
   */
  spec: RunSpec;
  /**
   * The Run's status.
   */
  status: RunStatus;
  /**
   * Needs `get pods` in the namespace. `absent` when no Pod is assigned or it is gone.
   */
  pod: Section<PodSection>;
  /**
   * What the phase and conditions say, and why a Pending Run waits.
   */
  state: RunState;
  /**
   * Needs `list events` in the namespace. The Run's Events and, of its
   * Pod's, those from the Run's window (its start, or creation, to its
   * completion). Items oldest first.
   */
  events: Section<Items<EventInfo>>;
  /**
   * The Run's retry history from its Events, oldest first (empty when it
   * has none or the Events cannot be read).
   */
  attempts: Array<AttemptEvent>;
  /**
   * The WorkflowRun step that started this Run: its controller owner
   * reference and labels, else the step (or Action step) whose `runName`
   * names it among the namespace's WorkflowRuns (needs `list
   * workflowruns`). `absent` when no WorkflowRun names it.
   */
  workflowRun: Section<StepOwner>;
};

/**
 * Which bound cut a result short.
 */
export type Cut = "tailLines" | "limitBytes" | "searchWindow";

/**
 * One record of a Run's log, as the API returns it.
 */
export type LogRecord = {
  /**
   * `stdout` or `stderr` as runtimed reported it.
   */
  stream: 'stdout' | 'stderr';
  /**
   * The message runtimed recorded (the program's output line).
   */
  message: string;
  /**
   * The Runtime Pod that wrote the record.
   */
  pod: string;
  /**
   * The invocation the record belongs to, when runtimed named one.
   */
  invocationID?: string;
  /**
   * When the kubelet received the line (RFC 3339), when known.
   */
  time?: string;
  /**
   * The record's address, `<secs>.<nanos9>-<seq>` (its CRI timestamp and
   * its index among the Pod log's lines of that timestamp): hand it back
   * as `sinceCursor` or `beforeCursor`. Opaque to clients.
   */
  cursor: string;
  /**
   * The record's number (1-based) among the Run's records of the
   * streams asked for, counted from the start of the Run's window:
   * the same record has the same number in every answer. Absent when
   * it is not known (live output; a count that would read more than
   * `--log-numbering-max-bytes` of the log).
   */
  line?: number;
  /**
   * Set when the line was longer than the server keeps and its message was dropped.
   */
  truncated?: boolean;
  /**
   * Where the record was read: absent for runtimed's log, `status` for
   * the live output of a Run whose records runtimed has not written yet
   * (its cursor is then a live cursor,
   * `L<attempt>-<stdout lines>-<stderr lines>-<o|e>`).
   */
  source?: 'status';
  /**
   * Set when runtimed wrote the record only when the Run ended: its
   * `time` is when it was written, not when the line was printed.
   */
  writtenAtEnd?: boolean;
  /**
   * Set on the records of a `search` answer that match it (the others
   * are context).
   */
  match?: boolean;
};

/**
 * What a note is about.
 */
export type NoteReason = "LiveOutput" | "LiveOutputUnavailable" | "NotYetWritten" | "NoneWrittenForPhase" | "EarlierAttemptsNotKept" | "OutputTruncated" | "PreviousContainer" | "PreviousLogGone" | "WrittenAtEnd";

/**
 * One note of a `RunLog` answer.
 */
export type LogNote = {
  /**
   * Why the note is there.
   */
  reason: NoteReason;
  /**
   * A sentence for people.
   */
  message: string;
};

/**
 * The Run a `RunLog` is of.
 */
export type RunLogMeta = {
  /**
   * The Run's name.
   */
  name: string;
  /**
   * The Run's namespace.
   */
  namespace: string;
  /**
   * The Run's UID.
   */
  uid: string;
};

/**
 * What a search answer says of the matches.
 */
export type SearchSummary = {
  /**
   * Matching records in this answer.
   */
  matches: number;
  /**
   * Matching records in the Run's whole window (also before `sinceCursor`).
   */
  total: number;
  /**
   * Counting stopped at the server's bound: `total` is a lower bound.
   */
  totalCapped: boolean;
};

/**
 * The plain (non-follow) answer.
 */
export type RunLog = {
  /**
   * Always `RunLog`.
   */
  kind: string;
  /**
   * Always `logs.kruntimes.io/v1alpha1`.
   */
  apiVersion: string;
  /**
   * The Run the log is of.
   */
  metadata: RunLogMeta;
  /**
   * The Runtime Pod read.
   */
  pod: string;
  /**
   * The Run's records, oldest first.
   */
  records: Array<LogRecord>;
  /**
   * Whether a bound cut the result short.
   */
  truncated: boolean;
  /**
   * Which bound, when `truncated`.
   */
  truncatedBy?: Cut;
  /**
   * Why the answer holds no or only some of the Run's records, and what
   * its records' times mean.
   */
  notes: Array<LogNote>;
  /**
   * The matches of a `search` (absent without one).
   */
  search?: SearchSummary;
};

/**
 * The last line of a log follow that the server ended (a Kubernetes
 * `Status`; a record never has a `kind`). `Success` with reason
 * `RunFinished`: the Run finished, stop. `Failure` with code 401, 403 or
 * 404: stop and show the message. Any other `Failure` (503
 * `ServiceUnavailable`, `FellBehind`): reconnect with `sinceCursor=` the last
 * record's cursor.
 */
export type LogStreamStatus = {
  /**
   * Always `Status`: what tells this line from a record.
   */
  kind: 'Status';
  /**
   * Always `v1`.
   */
  apiVersion: string;
  /**
   * `Success` when the Run finished, `Failure` for any other end.
   */
  status: 'Success' | 'Failure';
  /**
   * 200 on `Success`; on `Failure` the failure's HTTP status code (401, 403,
   * 404, 410, 503).
   */
  code: number;
  /**
   * `RunFinished` on `Success`; on `Failure` the failure's reason
   * (`ServiceUnavailable`, `FellBehind`, `NotFound`, `Gone`, `Unauthorized`,
   * `Forbidden`).
   */
  reason: string;
  /**
   * Why the follow ended, for people.
   */
  message: string;
};

/** A line of `GET …/logs?follow=true`: a record, or the one final `Status`. */
export type LogStreamLine = LogRecord | LogStreamStatus;

/**
 * One row of the Runtime list. In a public-read summary only `metadata.name`,
 * `metadata.namespace`, `metadata.creationTimestamp`, `replicas` and
 * `readyReplicas` are present.
 */
export type RuntimeListItem = {
  /**
   * Object metadata (name, namespace and creation time in a summary).
   */
  metadata: ObjectMeta;
  /**
   * `spec.replicas`; unset and 0 mean 1, as the engine reads them.
   */
  replicas: number;
  /**
   * Runtime Pods whose `Ready` condition is True, counted by the Console
   * (the engine does not keep `status.readyReplicas`); `status.readyReplicas`
   * only when the Pods cannot be read; absent when neither is known.
   */
  readyReplicas?: number;
  /**
   * The Runtime server's image: `spec.template.spec.containers[0].image`.
   */
  image?: string;
  /**
   * Condition `Ready` of the Runtime, when it has one.
   */
  ready?: Condition;
};

/** `GET /api/namespaces/{ns}/runtimes`. */
export type RuntimeList = ListResponse<RuntimeListItem>;

/**
 * A Run assigned to a Runtime Pod (non-terminal phases only).
 */
export type AssignedRun = {
  /**
   * Run name.
   */
  name: string;
  /**
   * Run UID.
   */
  uid?: string;
  /**
   * The Run's phase (Pending when unset).
   */
  phase: RunPhase;
  /**
   * Which of `spec.mode.*` is set.
   */
  mode?: RunModeName;
  /**
   * When the Run was created (RFC 3339).
   */
  creationTimestamp?: string;
  /**
   * `spec.resources.requests` as the scheduler counts them (`runs: 1`
   * unless more is asked); absent when the Run takes just one of `runs`.
   */
  requests?: Record<string, number>;
};

/**
 * One resource of a Runtime Pod's capacity.
 */
export type CapacityUse = {
  /**
   * Resource name, e.g. `runs`, `gpu`.
   */
  resource: string;
  /**
   * As annotated (`kruntimes.io/capacity.<resource>`), or the engine's default.
   */
  capacity: string;
  /**
   * The capacity is the engine's default (2 Runs per Pod), not annotated.
   */
  default?: boolean;
  /**
   * Sum of the requests of the Scheduled, Running and Ready Runs assigned
   * here.
   */
  used?: number;
  /**
   * `capacity - used`, never below 0; absent when either is unknown.
   */
  free?: number;
};

/**
 * A Pod of a Runtime (`runtime=<name>` label).
 */
export type RuntimePod = {
  /**
   * Pod name.
   */
  name: string;
  /**
   * Pod UID.
   */
  uid: string;
  /**
   * `Pending`, `Running`, `Succeeded`, `Failed`, `Unknown`.
   */
  phase: string;
  /**
   * Pod condition `Ready` is True.
   */
  ready: boolean;
  /**
   * Pod condition `kruntimes.io/RuntimedReady`, when present.
   */
  runtimedReady?: Condition;
  /**
   * Sum of container restart counts.
   */
  restarts: number;
  /**
   * The Node the Pod is bound to.
   */
  node?: string;
  /**
   * The Pod's IP address.
   */
  podIP?: string;
  /**
   * When the kubelet acknowledged the Pod (RFC 3339).
   */
  startTime?: string;
  /**
   * The Pod's capacity as the engine's scheduler reads it: `runs: 2`
   * unless the Pod says otherwise, plus every annotation
   * `kruntimes.io/capacity.<res>` (resource name → value as written).
   */
  capacity: Record<string, string>;
  /**
   * Runs whose `status.assignedPod` is this Pod. `forbidden`/`error` are per Runtime, not per Pod.
   */
  runs: Array<AssignedRun>;
  /**
   * Capacity used and free per resource: the sum of
   * `spec.resources.requests` of the Scheduled, Running and Ready Runs
   * assigned here (each takes `runs: 1` unless it requests more).
   */
  usage: Array<CapacityUse>;
};

/**
 * A Pending Run waiting for this Runtime, in the queue's order (oldest first).
 */
export type QueuedRun = {
  /**
   * Run name.
   */
  name: string;
  /**
   * When the Run was created (RFC 3339).
   */
  creationTimestamp?: string;
  /**
   * Reason of a `Scheduled=False` condition, where a platform writes one
   * (the engine writes none for a waiting Run).
   */
  reason?: string;
  /**
   * Why it waits: the Run's `status.message` (e.g. "waiting for
   * available runtime pods for runtime bash").
   */
  message?: string;
};

/**
 * `spec.capacity` of a Runtime. Unset means 2 Runs per Pod.
 */
export type RuntimeCapacity = {
  /**
   * Resource name → declared capacity per Pod, as a quantity string.
   */
  resources: { [key in string]?: string };
};

/**
 * Runtime `spec`: what the Console shows of it.
 */
export type RuntimeSpecView = {
  /**
   * `spec.replicas`; unset and 0 mean 1, as the engine reads them.
   */
  replicas: number;
  /**
   * gRPC port of the Runtime server container.
   */
  port?: number;
  /**
   * Per-Pod capacity; absent means 2 Runs per Pod.
   */
  capacity?: RuntimeCapacity;
  /**
   * The Runtime server's image: `spec.template.spec.containers[0].image`.
   */
  image?: string;
};

/**
 * Runtime `status`, with the ready count the Console makes.
 */
export type RuntimeStatusView = {
  /**
   * The Runtime's Pods whose `Ready` condition is True, counted by the
   * Console; `status.readyReplicas` only when the Pods cannot be read.
   */
  readyReplicas?: number;
  /**
   * The Runtime's conditions.
   */
  conditions?: Array<Condition>;
};

/**
 * `GET /api/namespaces/{ns}/runtimes/{name}`.
 */
export type RuntimeDetail = {
  /**
   * The Runtime's metadata.
   */
  metadata: ObjectMeta;
  /**
   * The Runtime's spec.
   */
  spec: RuntimeSpecView;
  /**
   * The Runtime's status.
   */
  status: RuntimeStatusView;
  /**
   * Needs `list pods` (and `list runs` for `runs`) in the namespace.
   */
  pods: Section<Items<RuntimePod>>;
  /**
   * The Pending Runs of this Runtime, oldest first. Needs `list runs`.
   */
  queue: Section<Items<QueuedRun>>;
};

/** Phase of a WorkflowRun, a job, or a step. Free string; the known values get colours. */
export type WorkflowPhase = RunPhase | 'Waiting' | 'Skipped' | (string & {});

/**
 * Counts of jobs by observed phase; `total` is the number of `spec.jobs`.
 */
export type JobCounts = {
  /**
   * Jobs declared in `spec.jobs`.
   */
  total: number;
  /**
   * Jobs whose phase is Succeeded.
   */
  succeeded: number;
  /**
   * Jobs whose phase is Failed, Timeout or Cancelled.
   */
  failed: number;
  /**
   * Jobs whose phase is Running.
   */
  running: number;
};

/**
 * One row of the WorkflowRun list. In a public-read summary only metadata
 * name/namespace/creationTimestamp, `phase` and `jobs` counts are present.
 */
export type WorkflowRunListItem = {
  /**
   * Object metadata (name, namespace and creation time in a summary).
   */
  metadata: ObjectMeta;
  /**
   * `status.phase`, when the engine has written one.
   */
  phase?: WorkflowPhase;
  /**
   * Counts of the jobs by phase.
   */
  jobs: JobCounts;
  /**
   * `status.message`: why it failed to start or to call a Workflow or Action.
   */
  message?: string;
  /**
   * The earliest start of its steps' Runs (the engine writes none).
   */
  startTime?: string;
  /**
   * Once Succeeded, Failed or Cancelled: the latest completion of its steps' Runs.
   */
  completionTime?: string;
  /**
   * Set when this run was started by a reusable-workflow job of another
   * run (its controller owner reference).
   */
  parentWorkflowRun?: string;
};

/** `GET /api/namespaces/{ns}/workflowruns`. */
export type WorkflowRunList = ListResponse<WorkflowRunListItem>;

/**
 * One declared step (display only: `run` scripts are shown, `with` values
 * are not secrets): a script, or a call to an Action (`uses`).
 */
export type StepSpec = {
  /**
   * Step name, unique within the job.
   */
  name?: string;
  /**
   * Shell script of the step.
   */
  run?: string;
  /**
   * The Action this step calls; its steps' Runs are in `actionSteps` of the step's status.
   */
  uses?: string;
  /**
   * Inputs of the Action named by `uses`.
   */
  with?: Record<string, unknown>;
};

/**
 * `spec.jobs.<id>` as declared (keys as in the CRD, including `runs-on`).
 */
export type JobSpec = {
  /**
   * The Runtime that executes the job's steps.
   */
  "runs-on"?: string;
  /**
   * Job ids this job depends on. Unknown ids are shown, not dropped.
   */
  needs?: Array<string>;
  /**
   * The job's steps, in the order they run.
   */
  steps?: Array<StepSpec>;
  /**
   * Reusable workflow this job calls; its run appears as `status.jobs.<id>.workflowRunName`.
   */
  uses?: string;
  /**
   * Inputs passed to the reusable workflow named by `uses`.
   */
  with?: Record<string, unknown>;
};

/**
 * `status.jobs.<id>.steps[i].actionSteps[j]`: one step of the Action a step calls.
 */
export type ActionStepStatus = {
  /**
   * Step name within the Action.
   */
  name: string;
  /**
   * Step phase.
   */
  phase?: WorkflowPhase;
  /**
   * The Run that executed this step of the Action, in the same namespace.
   */
  runName?: string;
  /**
   * Outputs reported by the step's Run (values bounded to 4 KiB).
   */
  outputs?: Record<string, string>;
  /**
   * Its Run's start time.
   */
  startTime?: string;
  /**
   * Its Run's completion time.
   */
  completionTime?: string;
};

/**
 * `status.jobs.<id>.steps[i]`. Times are its Run's (or, for a step that
 * calls an Action, the span of the Action steps' Runs).
 */
export type StepStatus = {
  /**
   * Step name, as declared.
   */
  name: string;
  /**
   * Step phase.
   */
  phase?: WorkflowPhase;
  /**
   * The Run that executed this step, in the same namespace. A step that
   * calls an Action has none: see `actionSteps`.
   */
  runName?: string;
  /**
   * Outputs reported by the step (values bounded to 4 KiB).
   */
  outputs?: Record<string, string>;
  /**
   * The steps of the Action this step calls, each with its Run.
   */
  actionSteps?: Array<ActionStepStatus>;
  /**
   * When its Run started, or the earliest start of its Action steps' Runs
   * (RFC 3339).
   */
  startTime?: string;
  /**
   * When its Run completed, or, once every Action step's Run completed, the
   * latest of them (RFC 3339).
   */
  completionTime?: string;
};

/**
 * `status.jobs.<id>`. Times span its steps' Runs.
 */
export type JobStatus = {
  /**
   * Pending, Waiting, Running, Succeeded, Failed or Skipped.
   */
  phase?: WorkflowPhase;
  /**
   * Jobs that finished before this one started (its resolved `needs`).
   */
  pre?: Array<string>;
  /**
   * Step progress, in declaration order.
   */
  steps?: Array<StepStatus>;
  /**
   * Job outputs; `result` is shown in the DAG (the server bounds each value to 4 KiB).
   */
  outputs?: Record<string, string>;
  /**
   * Child WorkflowRun started by a reusable-workflow job (`uses`).
   */
  workflowRunName?: string;
  /**
   * The earliest start of its steps' Runs (RFC 3339).
   */
  startTime?: string;
  /**
   * Once every step with a Run completed: the latest of their completions
   * (RFC 3339).
   */
  completionTime?: string;
};

/**
 * WorkflowRun `spec`: its jobs as declared.
 */
export type WorkflowRunSpecView = {
  /**
   * Job id to job.
   */
  jobs: Record<string, JobSpec>;
};

/**
 * WorkflowRun `status`, with the times read from its steps' Runs.
 */
export type WorkflowRunStatusView = {
  /**
   * `status.phase`, when the engine has written one.
   */
  phase?: WorkflowPhase;
  /**
   * Why it failed to start, or to call a Workflow or Action.
   */
  message?: string;
  /**
   * The execution snapshot of the Workflow and Actions this run uses.
   */
  snapshotName?: string;
  /**
   * The earliest start of its steps' Runs (the engine writes none).
   */
  startTime?: string;
  /**
   * Once Succeeded, Failed or Cancelled: the latest completion of its steps' Runs.
   */
  completionTime?: string;
  /**
   * The WorkflowRun's conditions.
   */
  conditions?: Array<Condition>;
  /**
   * Job id to job progress.
   */
  jobs?: Record<string, JobStatus>;
};

/**
 * `GET /api/namespaces/{ns}/workflowruns/{name}`.
 */
export type WorkflowRunDetail = {
  /**
   * The WorkflowRun's metadata.
   */
  metadata: ObjectMeta;
  /**
   * The WorkflowRun's spec.
   */
  spec: WorkflowRunSpecView;
  /**
   * The WorkflowRun's status.
   */
  status: WorkflowRunStatusView;
  /**
   * Set when this run is the child of another WorkflowRun's reusable job.
   */
  parentWorkflowRun?: string;
};
