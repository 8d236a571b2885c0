// Generated from console/src/api/kinds.rs; do not edit. Regenerate with
//   KRUNTIMES_WRITE_TS=1 cargo test -p kruntimes-console --lib api::kinds
/** Answers of the Action and PersistentWorkspace endpoints (see `./types` for the shared shapes). */
import type { Condition, ListResponse, ObjectMeta, PodSection, Section, WorkflowPhase } from './types';

/**
 * One row of the Action list. Actions have no public read: the list needs
 * the caller's credential like a detail does.
 */
export type ActionListItem = {
  /**
   * The Action's metadata.
   */
  metadata: ObjectMeta;
  /**
   * Inputs declared in `spec.inputs`.
   */
  inputs: number;
  /**
   * Outputs declared in `spec.outputs`.
   */
  outputs: number;
  /**
   * Steps in `spec.steps`.
   */
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
  /**
   * Input name.
   */
  name: string;
  /**
   * `string` unless the object says otherwise.
   */
  type: string;
  /**
   * Whether a caller must pass the input.
   */
  required: boolean;
  /**
   * The value used when the caller passes none.
   */
  default?: string;
};

/**
 * `spec.outputs.<name>`: the expression that computes it.
 */
export type ActionOutputView = {
  /**
   * Output name.
   */
  name: string;
  /**
   * The `${{ }}` expression evaluated after the steps ran.
   */
  value: string;
};

/**
 * `spec.steps[i]`. Of the step's `env` only the names are returned, never a value.
 */
export type ActionStepView = {
  /**
   * Step name; it becomes a label value on the step's Run.
   */
  name: string;
  /**
   * The step's script.
   */
  run?: string;
  /**
   * Positional arguments for the step.
   */
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
  /**
   * The WorkflowRun's name.
   */
  name: string;
  /**
   * The WorkflowRun's `status.phase`.
   */
  phase?: WorkflowPhase;
  /**
   * Job ids whose steps call the Action.
   */
  jobs: Array<string>;
  /**
   * When the WorkflowRun was created (RFC 3339).
   */
  creationTimestamp?: string;
};

/**
 * The WorkflowRuns that call the Action (`uses: <name>` in a step), newest
 * first, from one list of at most 500 WorkflowRuns in the namespace.
 */
export type ActionUsage = {
  /**
   * The calling WorkflowRuns, newest first.
   */
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
  /**
   * The Action's metadata.
   */
  metadata: ObjectMeta;
  /**
   * `spec.inputs`, by name.
   */
  inputs: Array<ActionInputView>;
  /**
   * `spec.outputs`, by name.
   */
  outputs: Array<ActionOutputView>;
  /**
   * `spec.steps`, in the order they run.
   */
  steps: Array<ActionStepView>;
  /**
   * The Action's conditions (`Ready` when the engine accepted it).
   */
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
  /**
   * The PersistentWorkspace's metadata.
   */
  metadata: ObjectMeta;
  /**
   * `Pending`, `Bound`, `Lost` or `Released`; `Pending` when unset.
   */
  phase: string;
  /**
   * `spec.runtime`: the Runtime whose workspace volume holds the data.
   */
  runtime: string;
  /**
   * The Runtime Pod that holds the data now, when one is bound.
   */
  boundPod?: string;
  /**
   * When a Run last used the workspace (RFC 3339).
   */
  lastUsedTime?: string;
};

/** `GET /api/namespaces/{ns}/persistentworkspaces`. */
export type WorkspaceList = ListResponse<WorkspaceListItem>;

/**
 * PersistentWorkspace `spec`.
 */
export type WorkspaceSpecView = {
  /**
   * The Runtime whose workspace volume holds the data.
   */
  runtime: string;
  /**
   * How the workspace is bound: `RuntimePodLocal` binds it to one Runtime
   * Pod.
   */
  mode?: string;
  /**
   * Seconds the data is kept after the last use (ignored with `Retain`).
   */
  ttlSecondsAfterUnused?: number;
  /**
   * `DeleteAfterTTL` (the default) or `Retain`.
   */
  cleanupPolicy?: string;
};

/**
 * PersistentWorkspace `status`.
 */
export type WorkspaceStatusView = {
  /**
   * `Pending`, `Bound`, `Lost` or `Released`; `Pending` when unset.
   */
  phase: string;
  /**
   * The Runtime observed backing the workspace.
   */
  runtime?: string;
  /**
   * The Runtime Pod that holds the data now, when one is bound.
   */
  boundPod?: string;
  /**
   * Path of the workspace inside the bound Pod's workspace volume.
   */
  path?: string;
  /**
   * When a Run last used the workspace (RFC 3339).
   */
  lastUsedTime?: string;
  /**
   * The workspace's conditions (`Accepted`, `RuntimeReady`).
   */
  conditions?: Array<Condition>;
};

/**
 * The volume the workspace lives in: the Runtime's `spec.workspace`. Only
 * the kind of volume and a PersistentVolumeClaim's name are returned.
 */
export type WorkspaceVolume = {
  /**
   * The Runtime whose volume this is.
   */
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
  /**
   * The PersistentVolumeClaim's name, for a `persistentVolumeClaim` source.
   */
  claimName?: string;
};

/**
 * `GET /api/namespaces/{ns}/persistentworkspaces/{name}`.
 */
export type WorkspaceDetail = {
  /**
   * The PersistentWorkspace's metadata.
   */
  metadata: ObjectMeta;
  /**
   * The PersistentWorkspace's spec.
   */
  spec: WorkspaceSpecView;
  /**
   * The PersistentWorkspace's status.
   */
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
