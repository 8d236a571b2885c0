import { TERMINAL_PHASES } from '../api/types';

/** Maps Run/Job/Pod phases to a small set of visual tones. */
export type Tone = 'success' | 'danger' | 'warning' | 'active' | 'pending' | 'neutral';

const TONES: Record<string, Tone> = {
  Succeeded: 'success',
  Completed: 'success',
  Failed: 'danger',
  Error: 'danger',
  Timeout: 'warning',
  TimedOut: 'warning',
  Running: 'active',
  Ready: 'active',
  Active: 'active',
  Pending: 'pending',
  Scheduled: 'pending',
  Waiting: 'pending',
  Cancelled: 'neutral',
  Canceled: 'neutral',
  Skipped: 'neutral',
};

export function phaseTone(phase: string | undefined): Tone {
  return (phase && TONES[phase]) || 'neutral';
}

/** A Run's terminal phases (from the server's types) and a skipped workflow step. */
const TERMINAL: ReadonlySet<string> = new Set<string>([...TERMINAL_PHASES, 'Skipped']);

export function isTerminal(phase: string | undefined): boolean {
  return !!phase && TERMINAL.has(phase);
}

/** Reasons of a False condition that name an expected wait, not a failure. */
const WAIT_REASONS: ReadonlySet<string> = new Set([
  'NoCapacity',
  'Pending',
  'Waiting',
  'Queued',
  'Unscheduled',
  'NotScheduled',
  'Scheduling',
  'Assigning',
  'ContainerCreating',
  'PodPending',
  'PodNotReady',
  'NotReady',
  'Starting',
  'Initializing',
  'NoReadyPods',
  'WaitingForPod',
  'WaitingForRuntime',
]);
/** Reasons that name a failure whatever the phase. */
const FAILURE_RE = /fail|error|invalid|denied|forbidden|crash|backoff|oom|evicted|rejected|timeout|timedout|notfound/i;
/**
 * The engine's failure reasons (Running=False and Completed=False) that the
 * pattern above does not catch; `Completed` (Running=False on success) and
 * `Cancelled` are not failures.
 */
const ENGINE_FAILURES: ReadonlySet<string> = new Set([
  'RuntimeExecute',
  'PrepareSource',
  'ExecutionLost',
  'PodGone',
  'PodTerminating',
  'PodUnhealthy',
  'OutputsTooLarge',
]);

/**
 * Whether a condition type's True is good news (`positive`: Ready, Scheduled,
 * Completed, ...) or names a problem (`negative`: Failed, Degraded, ...).
 * Kubernetes and the engine name most conditions positively; the ones here
 * are the usual negative names. Unknown types are positive.
 */
export const CONDITION_POLARITY: Readonly<Record<string, 'positive' | 'negative'>> = {
  Ready: 'positive',
  Available: 'positive',
  Scheduled: 'positive',
  Running: 'positive',
  Completed: 'positive',
  Succeeded: 'positive',
  Accepted: 'positive',
  Established: 'positive',
  Failed: 'negative',
  Failure: 'negative',
  Error: 'negative',
  Degraded: 'negative',
  Stalled: 'negative',
  TimedOut: 'negative',
  Timeout: 'negative',
  Cancelled: 'negative',
  Evicted: 'negative',
  DiskPressure: 'negative',
  MemoryPressure: 'negative',
  PIDPressure: 'negative',
  NetworkUnavailable: 'negative',
  ReplicaFailure: 'negative',
};

export function conditionPolarity(type: string): 'positive' | 'negative' {
  return CONDITION_POLARITY[type] ?? 'positive';
}

/**
 * The tone of a condition: for a negative type (Failed, Degraded; see
 * CONDITION_POLARITY) True is a failure and False neutral. Otherwise True is success; False is a failure (red) only
 * when its reason says so or the Run ended without succeeding. An expected
 * wait (Scheduled=False/NoCapacity on a Pending Run) is pending, not red.
 * `phase` is the Run's phase (`''` when it has none yet); without it (a
 * Runtime's conditions) False is red unless its reason names a wait.
 */
export function conditionTone(status: string | undefined, reason: string | undefined, phase?: string, type?: string): Tone {
  if (type !== undefined && conditionPolarity(type) === 'negative') {
    // A problem condition: True is the problem, False its absence (not an achievement).
    if (status === 'True') return 'danger';
    return 'neutral';
  }
  if (status === 'True') return 'success';
  if (status !== 'False') return 'neutral';
  if (reason && (FAILURE_RE.test(reason) || ENGINE_FAILURES.has(reason))) return 'danger';
  if (reason && WAIT_REASONS.has(reason)) return isTerminal(phase) ? 'neutral' : 'pending';
  // Not a Run's condition (no phase given): False is a problem, as before.
  if (phase === undefined) return 'danger';
  if (!isTerminal(phase)) return 'pending';
  return phase === 'Succeeded' || phase === 'Cancelled' ? 'neutral' : 'danger';
}
