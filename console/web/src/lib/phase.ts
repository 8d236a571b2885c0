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
