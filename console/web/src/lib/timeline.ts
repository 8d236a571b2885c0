/**
 * The timeline of a WorkflowRun's jobs: one bar per job from its start to
 * its completion (to now while it runs), on an axis from the first start to
 * the last end. Pure, no DOM.
 */
import type { JobStatus } from '../api/types';

export interface TimelineBar {
  id: string;
  phase: string;
  start?: string;
  end?: string;
  /** Left edge and width in percent of the axis; absent for a job that has not started. */
  left?: number;
  width?: number;
  /** Milliseconds from start to end (or now). */
  ms?: number;
  running: boolean;
}

export interface Timeline {
  bars: TimelineBar[];
  /** Axis start and end (ms since the epoch); absent when no job started. */
  from?: number;
  to?: number;
}

/** Bars for `order` (job ids in stage order), read from `jobs`. */
export function timeline(order: readonly string[], jobs: Record<string, JobStatus> | undefined, now: number = Date.now()): Timeline {
  const spans = order.map((id) => {
    const j = jobs?.[id];
    const a = j?.startTime ? Date.parse(j.startTime) : NaN;
    const b = j?.completionTime ? Date.parse(j.completionTime) : NaN;
    const start = Number.isNaN(a) ? undefined : a;
    const end = start === undefined ? undefined : Number.isNaN(b) ? Math.max(start, now) : Math.max(start, b);
    return { id, j, start, end };
  });
  const starts = spans.flatMap((s) => (s.start === undefined ? [] : [s.start]));
  const ends = spans.flatMap((s) => (s.end === undefined ? [] : [s.end]));
  if (starts.length === 0) {
    return { bars: spans.map((s) => ({ id: s.id, phase: s.j?.phase ?? 'Pending', running: false })) };
  }
  const from = Math.min(...starts);
  const to = Math.max(from + 1000, ...ends);
  const span = to - from;
  const bars = spans.map<TimelineBar>((s) => {
    const bar: TimelineBar = {
      id: s.id,
      phase: s.j?.phase ?? 'Pending',
      running: s.start !== undefined && !s.j?.completionTime,
      ...(s.j?.startTime ? { start: s.j.startTime } : {}),
      ...(s.j?.completionTime ? { end: s.j.completionTime } : {}),
    };
    if (s.start === undefined || s.end === undefined) return bar;
    bar.left = ((s.start - from) / span) * 100;
    // At least a sliver, so an instant job is still visible.
    bar.width = Math.max(0.5, ((s.end - s.start) / span) * 100);
    bar.ms = s.end - s.start;
    return bar;
  });
  return { bars, from, to };
}

/** The step to open when the URL names none: the first failed one, as GitHub Actions does. */
export function failedStep(phases: ReadonlyArray<string | undefined>): number | null {
  const i = phases.findIndex((p) => p === 'Failed' || p === 'Timeout' || p === 'Error');
  return i < 0 ? null : i;
}
