// Generated from console/src/api/kinds.rs; do not edit. Regenerate with
//   KRUNTIMES_WRITE_TS=1 cargo test -p kruntimes-console --lib api::kinds
/** Answers of the Action and PersistentWorkspace endpoints (see `./types` for the shared shapes). */
import type { Condition, ListResponse, ObjectMeta, PodSection, Section, WorkflowPhase } from './types';

/**
 * One row of the Action list. Actions have no public read: the list needs
 * the caller's credential like a detail does.
 */
export type ActionListItem = {
  metadata: ObjectMeta;
  inputs: number;
  outputs: number;
  steps: number;
  /**
   * Condition `Ready` (the engine sets it when it accepts the definition).
   */
  ready?: Condition;
};

/** `GET /api/namespaces/{ns}/actions`. */
export type ActionList = ListResponse<ActionListItem>;

/**
 * `spec.inputs.<name>`.
 */
export type ActionInputView = {
  name: string;
  /**
   * `string` unless the object says otherwise.
   */
  type: string;
  required: boolean;
  default?: string;
};

/**
 * `spec.outputs.<name>`: the expression that computes it.
 */
export type ActionOutputView = {
  name: string;
  value: string;
};

/**
 * `spec.steps[i]`. Of the step's `env` only the names are returned, never a value.
 */
export type ActionStepView = {
  name: string;
  /**
   * The step's script.
   */
  run?: string;
  args?: Array<string>;
  /**
   * Names of the step's extra environment variables.
   */
  envNames: Array<string>;
};

/**
 * A WorkflowRun with a step that calls the Action.
 */
export type ActionCaller = {
  name: string;
  phase?: WorkflowPhase;
  /**
   * Job ids whose steps call the Action.
   */
  jobs: Array<string>;
  creationTimestamp?: string;
};

/**
 * The WorkflowRuns that call the Action (`uses: <name>` in a step), newest
 * first, from one list of at most 500 WorkflowRuns in the namespace.
 */
export type ActionUsage = {
  items: Array<ActionCaller>;
  /**
   * `false` when the namespace has more WorkflowRuns than were read.
   */
  complete: boolean;
};

/**
 * `GET /api/namespaces/{ns}/actions/{name}`: the definition, read-only.
 */
export type ActionDetail = {
  metadata: ObjectMeta;
  inputs: Array<ActionInputView>;
  outputs: Array<ActionOutputView>;
  steps: Array<ActionStepView>;
  conditions?: Array<Condition>;
  /**
   * Needs `list workflowruns` in the namespace.
   */
  usedBy: Section<ActionUsage>;
};

/**
 * One row of the PersistentWorkspace list (credential needed, no public read).
 */
export type WorkspaceListItem = {
  metadata: ObjectMeta;
  /**
   * `Pending`, `Bound`, `Lost` or `Released`; `Pending` when unset.
   */
  phase: string;
  runtime: string;
  boundPod?: string;
  lastUsedTime?: string;
};

/** `GET /api/namespaces/{ns}/persistentworkspaces`. */
export type WorkspaceList = ListResponse<WorkspaceListItem>;

export type WorkspaceSpecView = {
  runtime: string;
  mode?: string;
  ttlSecondsAfterUnused?: number;
  cleanupPolicy?: string;
};

export type WorkspaceStatusView = {
  phase: string;
  runtime?: string;
  boundPod?: string;
  /**
   * Path of the workspace inside the bound Pod's workspace volume.
   */
  path?: string;
  lastUsedTime?: string;
  conditions?: Array<Condition>;
};

/**
 * The volume the workspace lives in: the Runtime's `spec.workspace`. Only
 * the kind of volume and a PersistentVolumeClaim's name are returned.
 */
export type WorkspaceVolume = {
  runtime: string;
  /**
   * The volume source's key, e.g. `persistentVolumeClaim`, `emptyDir`.
   */
  source: string;
  /**
   * `false` when the Runtime declares no workspace volume: its Pods then
   * get an `emptyDir`, and the data lives as long as the Pod.
   */
  declared: boolean;
  claimName?: string;
};

/**
 * `GET /api/namespaces/{ns}/persistentworkspaces/{name}`.
 */
export type WorkspaceDetail = {
  metadata: ObjectMeta;
  spec: WorkspaceSpecView;
  status: WorkspaceStatusView;
  /**
   * The bound Pod. Needs `get pods`; `absent` when none is bound or it is gone.
   */
  pod: Section<PodSection>;
  /**
   * Needs `get runtimes`; `absent` when the Runtime does not exist.
   */
  volume: Section<WorkspaceVolume>;
};
