/**
 * JSON contract between the browser UI and the Kruntimes Console server.
 *
 * Every `/api/...` endpoint answers `application/json` (the log follow
 * endpoint answers `application/x-ndjson`). The Rust server implements these
 * shapes; a field marked optional (`?`) may be omitted entirely, and the UI
 * never relies on `null` for "absent" (omit the field instead). Timestamps are
 * RFC 3339 strings in UTC, exactly as Kubernetes writes them.
 *
 * The API is internal and versioned with the binary; it is not a stable
 * public API.
 *
 * Endpoint → type:
 *
 * | method + path                                         | success body            |
 * | ----------------------------------------------------- | ----------------------- |
 * | GET    /api/session                                   | {@link SessionInfo}     |
 * | POST   /api/session  body {@link SessionLogin}        | {@link SessionInfo}     |
 * | DELETE /api/session                                   | {@link SessionInfo}     |
 * | GET    /api/namespaces                                | {@link NamespaceList}   |
 * | GET    /api/namespaces/{ns}/runs?{@link RunListQuery} | {@link RunList}         |
 * | GET    /api/namespaces/{ns}/runs/{name}               | {@link RunDetail}       |
 * | GET    /api/namespaces/{ns}/runs/{name}/logs?tail=N   | {@link RunLog}          |
 * | GET    …/logs?follow=true&tail=N                      | NDJSON of {@link LogStreamLine} |
 * | GET    /api/namespaces/{ns}/runtimes                  | {@link RuntimeList}     |
 * | GET    /api/namespaces/{ns}/runtimes/{name}           | {@link RuntimeDetail}   |
 * | GET    /api/namespaces/{ns}/workflowruns              | {@link WorkflowRunList} |
 * | GET    /api/namespaces/{ns}/workflowruns/{name}       | {@link WorkflowRunDetail} |
 * | WS     /v1/namespaces/{ns}/runs/{name}/{uid}/operations:ws | {@link SessionClientFrame} ⇄ {@link SessionServerEvent} |
 *
 * Any non-2xx answer on `/api/` carries an {@link ApiErrorBody}.
 */

// ---------------------------------------------------------------------------
// Errors
// ---------------------------------------------------------------------------

/**
 * Body of every non-2xx `/api/` answer. Kubernetes 401/403/404/409 are passed
 * through with their code, reason and message; the cluster being unreachable
 * is 503 `ServiceUnavailable`.
 */
export interface ApiErrorBody {
  error: ApiErrorInfo;
}

export interface ApiErrorInfo {
  /** HTTP status code, repeated in the body. */
  code: number;
  /**
   * Kubernetes `StatusReason` style word: `Unauthorized`, `Forbidden`,
   * `NotFound`, `BadRequest`, `Conflict`, `ServiceUnavailable`, `Timeout`,
   * `InternalError`, `RequestEntityTooLarge`.
   */
  reason: string;
  /** Human-readable explanation; shown to the user verbatim. Never contains a token. */
  message: string;
  /**
   * Optional: the access check that failed, when the server knows it
   * (Kubernetes `Status.details` or the SubjectAccessReview it made). The UI
   * also knows what it asked for, so this is only a refinement.
   */
  access?: AccessRequest;
}

/** One Kubernetes authorization question: may the caller `verb` this resource? */
export interface AccessRequest {
  /** `get`, `list`, `watch`, `create`. */
  verb: string;
  /** API group; `""` for the core group. */
  group: string;
  /** Plural resource name, e.g. `runs`, `pods`, `events`. */
  resource: string;
  subresource?: string;
  namespace?: string;
  name?: string;
}

// ---------------------------------------------------------------------------
// Session
// ---------------------------------------------------------------------------

/** `POST /api/session` request body. The token is validated with TokenReview. */
export interface SessionLogin {
  token: string;
}

/**
 * Answer of `GET`, `POST` and `DELETE /api/session`. A successful `POST` sets
 * the HttpOnly session cookie; `DELETE` clears it and answers
 * `{authenticated:false}`. `GET` without a valid cookie answers 200 with
 * `{authenticated:false}` (not 401). The token itself is never returned.
 */
export interface SessionInfo {
  authenticated: boolean;
  /** Kubernetes username from TokenReview, e.g. `system:serviceaccount:team-a:viewer`. */
  username?: string;
  /** Kubernetes groups from TokenReview, when the server chooses to show them. */
  groups?: string[];
  /**
   * Whether list endpoints answer summaries without credentials
   * (`console.publicRead`). Lets the UI offer browsing before login.
   */
  publicRead?: boolean;
}

// ---------------------------------------------------------------------------
// Shared building blocks
// ---------------------------------------------------------------------------

/**
 * A list answer. `continue` is the Kubernetes continue token for the next page
 * (absent on the last page). `summary` is `true` when the list was served as a
 * public-read summary without the caller's credential: items then carry only
 * the summary fields (documented per item type) and details need a login.
 */
export interface ListResponse<T> {
  items: T[];
  continue?: string;
  summary?: boolean;
  /** Kubernetes `remainingItemCount` when the API server reported it. */
  remainingItemCount?: number;
}

/** The subset of Kubernetes `ObjectMeta` the UI shows. */
export interface ObjectMeta {
  name: string;
  namespace: string;
  /** Absent in public-read summaries. */
  uid?: string;
  creationTimestamp?: string;
  labels?: Record<string, string>;
  /** Only non-sensitive annotations; the server drops `kubectl.kubernetes.io/last-applied-configuration`. */
  annotations?: Record<string, string>;
  generation?: number;
  resourceVersion?: string;
}

/** A Kubernetes condition (`metav1.Condition`). */
export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  reason?: string;
  message?: string;
  lastTransitionTime?: string;
  observedGeneration?: number;
}

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
export type Section<T> =
  | ({ state: 'ok' } & T)
  | { state: 'forbidden'; message: string; access?: AccessRequest }
  | { state: 'absent'; message: string }
  | { state: 'error'; message: string; code?: number };

// ---------------------------------------------------------------------------
// Namespaces
// ---------------------------------------------------------------------------

export interface NamespaceItem {
  name: string;
  /** `Active` or `Terminating`. */
  phase?: string;
}

/** `GET /api/namespaces`. A 403 means the UI falls back to free-text namespace entry. */
export type NamespaceList = ListResponse<NamespaceItem>;

// ---------------------------------------------------------------------------
// Runs
// ---------------------------------------------------------------------------

/** `status.phase` of a Run. `Ready` is active and non-terminal (session and function Runs). */
export type RunPhase =
  | 'Pending'
  | 'Scheduled'
  | 'Running'
  | 'Ready'
  | 'Succeeded'
  | 'Failed'
  | 'Timeout'
  | 'Cancelled';

export const RUN_PHASES: readonly RunPhase[] = [
  'Pending',
  'Scheduled',
  'Running',
  'Ready',
  'Succeeded',
  'Failed',
  'Timeout',
  'Cancelled',
];

/** Which of the three modes the Run uses (exactly one of `spec.mode.*`). */
export type RunModeName = 'task' | 'function' | 'session';

/** `spec.mode`: exactly one key is present. */
export interface RunMode {
  task?: Record<string, unknown>;
  function?: Record<string, unknown>;
  session?: {
    /** When set, the browser sends `heartbeat` frames while an operations socket is open. */
    leaseSeconds?: number;
  };
}

/**
 * Query of `GET /api/namespaces/{ns}/runs`. All optional; the server pushes
 * them to the API server (field selectors on `.status.phase`, `.spec.runtime`,
 * `.status.assignedPod`; `labelSelector` as is) and filters the rest itself.
 */
export interface RunListQuery {
  /** One phase, or several comma-separated. */
  phase?: string;
  runtime?: string;
  assignedPod?: string;
  /** Kubernetes label selector syntax, e.g. `app=web,tier!=db`. */
  labelSelector?: string;
  /** RFC 3339; only Runs created at or after this instant. */
  createdAfter?: string;
  /** Page size, 1..500, default 50. */
  limit?: number;
  /** Continue token from the previous page. */
  continue?: string;
}

/**
 * One row of the Run table. In a public-read summary (`summary: true`) only
 * `metadata.name`, `metadata.namespace`, `metadata.creationTimestamp`,
 * `phase`, `runtime` and `mode` are present.
 */
export interface RunListItem {
  metadata: ObjectMeta;
  phase?: RunPhase;
  runtime: string;
  mode?: RunModeName;
  assignedPod?: string;
  /** `status.attempt` (1-based). */
  attempt?: number;
  /** The condition with the latest `lastTransitionTime`. */
  lastTransition?: {
    type: string;
    status?: Condition['status'];
    reason?: string;
    message?: string;
    time?: string;
  };
  startTime?: string;
  completionTime?: string;
}

export type RunList = ListResponse<RunListItem>;

/** One entry of `status.artifactRefs`. The UI shows it as metadata only; no download. */
export interface ArtifactRef {
  name: string;
  driver?: string;
  type?: string;
  location?: string;
  sizeBytes?: number;
  digest?: string;
  contentType?: string;
  createdAt?: string;
}

/** `spec.retryPolicy` as the CRD declares it; shown as key/value pairs. */
export type RetryPolicy = Record<string, unknown>;

/** Run `spec`, without `env` (never returned). */
export interface RunSpec {
  runtime: string;
  mode: RunMode;
  /** Duration string as written in the spec, e.g. `10m`. */
  timeout?: string;
  retryPolicy?: RetryPolicy;
}

export interface RunStatus {
  phase?: RunPhase;
  assignedPod?: string;
  assignedPodUID?: string;
  /** Set on Ready function and session Runs; `caBundle` is omitted by the server. */
  endpoint?: { protocol?: string; url?: string };
  message?: string;
  startTime?: string;
  completionTime?: string;
  /** At most 64 keys. Values are strings; the server truncates each to 4 KiB. */
  outputs?: Record<string, string>;
  artifactRefs?: ArtifactRef[];
  attempt?: number;
  conditions?: Condition[];
}

/** The assigned Runtime Pod as seen by the caller (Pod section of a Run). */
export interface PodInfo {
  name: string;
  namespace: string;
  uid: string;
  /** `Pending`, `Running`, `Succeeded`, `Failed`, `Unknown`. */
  phase: string;
  node?: string;
  podIP?: string;
  startTime?: string;
  /** Pod condition `Ready` is True. */
  ready: boolean;
  /** Pod condition `kruntimes.io/RuntimedReady`, when present. */
  runtimedReady?: Condition;
  /** Sum of container restart counts. */
  restarts: number;
  /** The Pod's UID no longer matches `status.assignedPodUID` (Pod was replaced). */
  replaced?: boolean;
  labels?: Record<string, string>;
}

/** A Kubernetes Event related to the Run or its Pod (`core/v1` or `events.k8s.io/v1`). */
export interface EventInfo {
  /** `Normal` or `Warning`. */
  type: string;
  reason: string;
  message: string;
  /** `Kind/name` of the involved object, e.g. `Run/build-42`, `Pod/py-0`. */
  involvedObject: string;
  count?: number;
  firstTime?: string;
  lastTime?: string;
  source?: string;
}

/** `GET /api/namespaces/{ns}/runs/{name}`. */
export interface RunDetail {
  metadata: ObjectMeta;
  spec: RunSpec;
  status: RunStatus;
  /** Needs `get pods` in the namespace. `absent` when no Pod is assigned or it is gone. */
  pod: Section<{ pod: PodInfo }>;
  /** Needs `list events` in the namespace. Items oldest first. */
  events: Section<{ items: EventInfo[] }>;
}

// ---------------------------------------------------------------------------
// Run logs
// ---------------------------------------------------------------------------

export type LogStreamName = 'stdout' | 'stderr';

/** One runtimed log record belonging to the Run (filtered by Run UID on the server). */
export interface LogRecord {
  stream: LogStreamName;
  message: string;
  /** The Runtime Pod that wrote it. */
  pod: string;
  /** Present for function invocations. */
  invocationID?: string;
  /** RFC 3339 (nanosecond precision allowed) when the log line carried a timestamp. */
  time?: string;
  /** The log API cut this record's message at its line bound. */
  truncated?: boolean;
}

/**
 * `GET /api/namespaces/{ns}/runs/{name}/logs?tail=N` (N in 1..500, default 100).
 * `truncated` is true when the answer is cut; `truncatedBy` says by what.
 * A Run that is not yet assigned answers 409 `Conflict` (or 200 with no records).
 */
export interface RunLog {
  metadata: { name: string; namespace: string; uid: string };
  records: LogRecord[];
  truncated: boolean;
  /**
   * Why the answer is cut, when it is: `tailLines` (more records exist than
   * asked for — the normal case of a tail), `limitBytes` (the 1 MiB bound) or
   * `searchWindow` (the Pod log was too long to search back to the Run's start).
   */
  truncatedBy?: 'tailLines' | 'limitBytes' | 'searchWindow';
  /** The Runtime Pod that was read (the log API's `RunLog.pod`). */
  pod?: string;
}

/**
 * `GET …/logs?follow=true&tail=N` answers `application/x-ndjson`: one
 * {@link LogRecord} per line, first the last N records then new ones as they
 * are written, until the Pod log stream closes (end of body) or the caller
 * disconnects. A failure after the stream started is sent as one final
 * `{"error":{...}}` line. To resume after a dropped connection the UI
 * re-requests with `tail` and drops records it already has (it de-duplicates
 * on the (time, message) boundary).
 */
export type LogStreamLine = LogRecord | ApiErrorBody;

// ---------------------------------------------------------------------------
// Runtimes
// ---------------------------------------------------------------------------

/**
 * One row of the Runtime list. In a public-read summary only `metadata.name`,
 * `metadata.namespace`, `metadata.creationTimestamp`, `replicas` and
 * `readyReplicas` are present.
 */
export interface RuntimeListItem {
  metadata: ObjectMeta;
  replicas: number;
  readyReplicas: number;
  /** Condition `Ready` of the Runtime, when it has one. */
  ready?: Condition;
  /** Runs currently assigned to Pods of this Runtime (non-terminal phases). */
  activeRuns?: number;
}

export type RuntimeList = ListResponse<RuntimeListItem>;

/** A Run assigned to a Runtime Pod. */
export interface AssignedRun {
  name: string;
  uid?: string;
  phase?: RunPhase;
  mode?: RunModeName;
  creationTimestamp?: string;
}

/** A Pod of a Runtime (`runtime=<name>` label). */
export interface RuntimePod {
  name: string;
  uid: string;
  phase: string;
  ready: boolean;
  runtimedReady?: Condition;
  restarts: number;
  node?: string;
  podIP?: string;
  startTime?: string;
  /**
   * From the annotations `kruntimes.io/capacity.<res>`: resource name (the
   * `<res>` part) → value as written, e.g. `{"slots": "4", "gpu": "1"}`.
   */
  capacity: Record<string, string>;
  /** Runs whose `status.assignedPod` is this Pod. `forbidden`/`error` are per Runtime, not per Pod. */
  runs: AssignedRun[];
}

/** `GET /api/namespaces/{ns}/runtimes/{name}`. */
export interface RuntimeDetail {
  metadata: ObjectMeta;
  spec: {
    replicas: number;
    port?: number;
    /** `spec.capacity.resources`: resource name → declared capacity per Pod. */
    capacity?: { resources?: Record<string, string | number> };
    /** Container image of the Runtime, when declared. */
    image?: string;
  };
  status: {
    readyReplicas: number;
    conditions?: Condition[];
  };
  /** Needs `list pods` (and `list runs` for `runs`) in the namespace. */
  pods: Section<{ items: RuntimePod[] }>;
}

// ---------------------------------------------------------------------------
// WorkflowRuns
// ---------------------------------------------------------------------------

/** Phase of a WorkflowRun, a job, or a step. Free string; the known values get colours. */
export type WorkflowPhase =
  | 'Pending'
  | 'Running'
  | 'Succeeded'
  | 'Failed'
  | 'Cancelled'
  | 'Skipped'
  | 'Timeout'
  | (string & {});

/**
 * One row of the WorkflowRun list. In a public-read summary only metadata
 * name/namespace/creationTimestamp, `phase` and `jobs` counts are present.
 */
export interface WorkflowRunListItem {
  metadata: ObjectMeta;
  phase?: WorkflowPhase;
  /** Name of the Workflow template, when the run was made from one. */
  workflow?: string;
  /** Counts of jobs by observed phase; `total` is the number of `spec.jobs`. */
  jobs: { total: number; succeeded: number; failed: number; running: number };
  startTime?: string;
  completionTime?: string;
  /** Set when this run was started by a reusable-workflow job of another run. */
  parentWorkflowRun?: string;
}

export type WorkflowRunList = ListResponse<WorkflowRunListItem>;

/** One declared step (display only: `run` scripts are shown, `with` values are not secrets). */
export interface StepSpec {
  name?: string;
  /** Shell script of the step. */
  run?: string;
  uses?: string;
  with?: Record<string, unknown>;
}

/** `spec.jobs.<id>` as declared (keys as in the CRD, including `runs-on`). */
export interface JobSpec {
  name?: string;
  'runs-on'?: string;
  /** Job ids this job depends on. Unknown ids are shown, not dropped. */
  needs?: string[];
  steps?: StepSpec[];
  /** Reusable workflow this job calls; its run appears as `status.jobs.<id>.workflowRunName`. */
  uses?: string;
  with?: Record<string, unknown>;
}

/** `status.jobs.<id>.steps[i]`. */
export interface StepStatus {
  name: string;
  phase?: WorkflowPhase;
  /** The Run that executed this step, in the same namespace. */
  runName?: string;
  outputs?: Record<string, string>;
  startTime?: string;
  completionTime?: string;
  message?: string;
}

/** `status.jobs.<id>`. */
export interface JobStatus {
  phase?: WorkflowPhase;
  steps?: StepStatus[];
  /** Job outputs; `result` is shown in the DAG (the server bounds each value to 4 KiB). */
  outputs?: Record<string, string>;
  /** Child WorkflowRun started by a reusable-workflow job (`uses`). */
  workflowRunName?: string;
  startTime?: string;
  completionTime?: string;
  message?: string;
}

/** `GET /api/namespaces/{ns}/workflowruns/{name}`. */
export interface WorkflowRunDetail {
  metadata: ObjectMeta;
  spec: {
    /** Name of the Workflow template, when referenced. */
    workflowRef?: string;
    jobs: Record<string, JobSpec>;
  };
  status: {
    phase?: WorkflowPhase;
    startTime?: string;
    completionTime?: string;
    conditions?: Condition[];
    jobs?: Record<string, JobStatus>;
  };
  /** Set when this run is the child of another WorkflowRun's reusable job. */
  parentWorkflowRun?: string;
}

// ---------------------------------------------------------------------------
// Session operations WebSocket (/v1/namespaces/{ns}/runs/{name}/{uid}/operations:ws)
// ---------------------------------------------------------------------------

/** The operation the client asks the session Runtime to run. */
export interface SessionOperation {
  command: string;
  args?: string[];
  /** Text written to the command's standard input. */
  stdin?: string;
}

/**
 * Client → server frames. The first frame is always `send`; `cancel` names
 * the `operationID` from `accepted`; `heartbeat` is sent periodically while
 * the socket is open when the Run has `spec.mode.session.leaseSeconds`.
 */
export type SessionClientFrame =
  | { type: 'send'; operation: SessionOperation }
  | { type: 'cancel'; operationID: string }
  | { type: 'heartbeat' };

/** Server → client events, in order: `accepted`, then `output`/`progress`, then one `terminal`. */
export type SessionServerEvent =
  | { type: 'accepted'; operationID: string }
  | {
      type: 'output';
      stream?: LogStreamName;
      /** Text, or base64 when `encoding` is `base64` (binary output). */
      data: string;
      encoding?: 'base64';
    }
  | { type: 'progress'; message?: string; percent?: number }
  | {
      type: 'terminal';
      exitCode?: number;
      /** e.g. `Succeeded`, `Failed`, `Cancelled`, `TimedOut`. */
      status: string;
      error?: string;
    };
