/**
 * "Why is my Run waiting?": what a Runtime has free and where a Pending Run
 * stands in its queue, from the Runtime detail. Pure, no DOM.
 */
import type { RuntimeDetail } from '../api/types';

export interface Waiting {
  /** 1-based place in the Runtime's queue of Pending Runs; null when not in it. */
  position: number | null;
  queued: number;
  /** Ready Pods / all Pods; null when the Pods could not be read. */
  readyPods: number | null;
  pods: number | null;
  /** Free `runs` (or `slots`) summed over ready Pods; null when no Pod declares them. */
  free: number | null;
  /** Capacity of those resources over ready Pods. */
  capacity: number | null;
}

/** The facts that explain why `run` waits for `rt`. */
export function waiting(run: string, rt: RuntimeDetail | undefined): Waiting {
  const out: Waiting = { position: null, queued: 0, readyPods: null, pods: null, free: null, capacity: null };
  if (!rt) return out;
  if (rt.queue.state === 'ok') {
    out.queued = rt.queue.items.length;
    const i = rt.queue.items.findIndex((q) => q.name === run);
    out.position = i < 0 ? null : i + 1;
  }
  if (rt.pods.state === 'ok') {
    out.pods = rt.pods.items.length;
    const ready = rt.pods.items.filter((p) => p.ready && (p.runtimedReady === undefined || p.runtimedReady.status === 'True'));
    out.readyPods = ready.length;
    for (const p of ready) {
      const u = p.usage.find((x) => x.resource === 'runs') ?? p.usage.find((x) => x.resource === 'slots');
      if (!u) continue;
      const cap = Number(u.capacity);
      if (u.free !== undefined) out.free = (out.free ?? 0) + u.free;
      if (Number.isFinite(cap)) out.capacity = (out.capacity ?? 0) + cap;
    }
  }
  return out;
}

/** One sentence on why the Run waits. */
export function waitingSentence(w: Waiting, runtime: string): string {
  if (w.pods === 0) return `Runtime ${runtime} has no Pods, so nothing can run yet.`;
  if (w.readyPods === 0) return `None of the ${w.pods} Pods of Runtime ${runtime} is ready.`;
  if (w.free === 0) return `Every ready Pod of Runtime ${runtime} is full: ${w.capacity} of ${w.capacity} Run places are taken.`;
  if (w.free !== null) return `Runtime ${runtime} has ${w.free} free Run place${w.free === 1 ? '' : 's'} on its ready Pods; the Run should be scheduled shortly.`;
  return `Runtime ${runtime} declares no per-Run capacity on its Pods; see its Pods for their state.`;
}
