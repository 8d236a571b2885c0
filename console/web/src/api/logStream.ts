/**
 * `useRunLogStream`: a Run's log as the viewer shows it. It reads the bounded
 * tail or follows the NDJSON stream, reconnects a dropped follow with back-off,
 * de-duplicates the records a reconnect re-sends, batches arrivals into one
 * update per animation frame and caps what is kept in memory.
 */
import { useEffect, useEffectEvent, useState, useSyncExternalStore } from 'react';
import { ResumeMatcher } from '../lib/logs';
import { followRunLog, getRunLogTail } from './client';
import { ApiError } from './errors';
import type { LogRecord, RunLog } from './types';

/** Lines kept in memory; beyond this the oldest are dropped and counted. */
export const MAX_LINES = 250_000;
/** Longest wait between two reconnects of a follow. */
const MAX_BACKOFF_MS = 10_000;

export type LogStreamStatus = 'loading' | 'ready' | 'connecting' | 'following' | 'reconnecting' | 'ended' | 'error';

/**
 * The records in memory: one array that grows in place, so large logs are
 * never copied. A new LogLines object stands for every change.
 */
export interface LogLines {
  /** Oldest first. Grows in place: `version` tells that it changed. */
  lines: readonly LogRecord[];
  /** Changes whenever `lines`, `gaps` or `dropped` change. */
  version: number;
  /** Older lines dropped from memory (the first kept line is number `dropped + 1`). */
  dropped: number;
  /** Indexes into `lines` before which records may be missing (a reconnect found no overlap). */
  gaps: ReadonlySet<number>;
}

export interface RunLogStreamOptions {
  /** Records to read: the whole bounded tail, or the first records of a follow (1..500). */
  tail: number;
  /** Follow the live stream instead of reading the tail once. */
  follow: boolean;
  /** The Run is not terminal: a follow that ends or drops connects again. */
  active: boolean;
  /** Told how many records were appended, once per batch. */
  onAppend?: (count: number) => void;
}

export interface RunLogStream {
  records: LogLines;
  status: LogStreamStatus;
  /** The last failure (an ApiError from the client); null while things work. */
  error: unknown;
  /** The last tail read was cut, and why (`RunLog.truncatedBy`). */
  truncated: { cut: boolean; by?: string };
  /** Seconds until the next reconnect while `reconnecting`; 0 while connecting. */
  retryIn: number;
  /** Reads the tail again with the same options. */
  reload: () => void;
}

/** Wait before reconnect number `failures` (1, 2, ...): 1 s doubling up to 10 s. */
export function backoffMs(failures: number): number {
  return Math.min(MAX_BACKOFF_MS, 500 * 2 ** Math.min(failures, 5));
}

/**
 * The records of one viewer, as an external store for `useSyncExternalStore`.
 * Arrivals are queued and appended once per animation frame.
 */
export class LogBuffer {
  private lines: LogRecord[] = [];
  private gaps = new Set<number>();
  private dropped = 0;
  private pending: LogRecord[] = [];
  private frame = 0;
  private snap: LogLines;
  private readonly listeners = new Set<() => void>();
  private readonly appendListeners = new Set<(count: number) => void>();

  constructor(private readonly max = MAX_LINES) {
    this.snap = { lines: this.lines, version: 0, dropped: 0, gaps: this.gaps };
  }

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  snapshot = (): LogLines => this.snap;

  /** Calls `listener` with the number of records each appended batch had. */
  onAppend(listener: (count: number) => void): () => void {
    this.appendListeners.add(listener);
    return () => this.appendListeners.delete(listener);
  }

  /** Everything shown or queued. */
  get length(): number {
    return this.lines.length + this.pending.length;
  }

  /** The records shown (after a `flush`, also those queued). */
  get records(): readonly LogRecord[] {
    return this.lines;
  }

  /** Replaces everything (a new tail). */
  replace(records: readonly LogRecord[]): void {
    this.cancelFrame();
    this.pending = [];
    this.lines = records.slice();
    this.gaps = new Set();
    this.dropped = 0;
    this.publish();
  }

  /** Queues records; they are appended on the next animation frame. */
  enqueue(records: readonly LogRecord[]): void {
    for (const r of records) this.pending.push(r);
    if (!this.frame) this.frame = window.requestAnimationFrame(() => this.flush());
  }

  /** Marks that records may be missing before the next record queued. */
  markGap(): void {
    this.gaps.add(this.length);
  }

  /** Appends what is queued now. */
  flush(): void {
    this.cancelFrame();
    const batch = this.pending;
    if (batch.length === 0) return;
    this.pending = [];
    for (const r of batch) this.lines.push(r);
    if (this.lines.length > this.max) {
      const drop = this.lines.length - this.max;
      this.lines.splice(0, drop);
      this.dropped += drop;
      const shifted = new Set<number>();
      for (const g of this.gaps) if (g - drop >= 0) shifted.add(g - drop);
      this.gaps = shifted;
    }
    this.publish();
    for (const l of this.appendListeners) l(batch.length);
  }

  /** Stops a scheduled append (the viewer went away). */
  cancelFrame(): void {
    if (this.frame) window.cancelAnimationFrame(this.frame);
    this.frame = 0;
  }

  private publish(): void {
    this.snap = { lines: this.lines, version: this.snap.version + 1, dropped: this.dropped, gaps: this.gaps };
    for (const l of this.listeners) l();
  }
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = window.setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      window.clearTimeout(t);
      resolve();
    });
  });
}

/** What a read or a follow reported last, for the request it belongs to (`key`). */
interface Progress {
  key: string;
  status: LogStreamStatus;
  error: unknown;
  retryIn: number;
}

/**
 * A Run's log: the bounded tail (`follow: false`, one request per change of
 * `tail` or `reload()`), or the followed stream (`follow: true`), which on a
 * drop re-requests the tail after a back-off and skips what it already has.
 * 4xx answers other than 409 (no Pod yet) stop a follow.
 */
export function useRunLogStream(ns: string, run: string, { tail, follow, active, onAppend }: RunLogStreamOptions): RunLogStream {
  const [buffer] = useState(() => new LogBuffer());
  const records = useSyncExternalStore(buffer.subscribe, buffer.snapshot);
  const [reloads, setReloads] = useState(0);
  // The request the reports belong to; `reload()` re-reads a tail and leaves a follow alone.
  const key = [ns, run, tail, follow ? 'follow' : `tail ${reloads}`].join('\u0000');
  const [progress, setProgress] = useState<Progress>({ key: '', status: 'loading', error: null, retryIn: 0 });
  const [truncated, setTruncated] = useState<{ cut: boolean; by?: string }>({ cut: false });

  const isActive = useEffectEvent(() => active);
  const appended = useEffectEvent((count: number) => onAppend?.(count));

  useEffect(() => {
    const off = buffer.onAppend((n) => appended(n));
    return () => {
      off();
      buffer.cancelFrame();
    };
  }, [buffer]);

  // Tail mode: one bounded request.
  useEffect(() => {
    if (follow) return;
    let cancelled = false;
    getRunLogTail(ns, run, tail).then(
      (log: RunLog) => {
        if (cancelled) return;
        buffer.replace(log.records);
        setTruncated({ cut: log.truncated, ...(log.truncatedBy ? { by: log.truncatedBy } : {}) });
        setProgress({ key, status: 'ready', error: null, retryIn: 0 });
      },
      (e: unknown) => {
        if (cancelled) return;
        buffer.replace([]);
        setProgress({ key, status: 'error', error: e, retryIn: 0 });
      },
    );
    return () => {
      cancelled = true;
    };
  }, [buffer, key, ns, run, tail, follow]);

  // Follow mode: stream, and on a drop re-request the tail and skip what we have.
  useEffect(() => {
    if (!follow) return;
    const ctrl = new AbortController();
    // The failure of the last attempt: shown while reconnecting, cleared once a stream opens or ends.
    let error: unknown = null;
    const report = (status: LogStreamStatus, retryIn = 0) => setProgress({ key, status, error, retryIn });
    void (async () => {
      let failures = 0;
      let connected = false;
      while (!ctrl.signal.aborted) {
        buffer.flush();
        const matcher = new ResumeMatcher(buffer.records, tail);
        let gapMarked = false;
        if (connected) report('reconnecting');
        try {
          await followRunLog(
            ns,
            run,
            tail,
            (r) => {
              failures = 0;
              const out = matcher.push(r);
              if (out.length === 0) return;
              if (matcher.gap && !gapMarked && buffer.length > 0) {
                gapMarked = true;
                buffer.markGap();
              }
              buffer.enqueue(out);
            },
            ctrl.signal,
            () => {
              error = null;
              report('following');
            },
          );
          if (ctrl.signal.aborted) return;
          matcher.finish();
          error = null;
          if (!isActive()) {
            report('ended');
            return;
          }
        } catch (e) {
          if (ctrl.signal.aborted) return;
          error = e;
          if (e instanceof ApiError && e.status >= 400 && e.status < 500 && e.status !== 409) {
            report('error');
            return;
          }
        }
        connected = true;
        failures++;
        const wait = backoffMs(failures);
        report('reconnecting', Math.round(wait / 1000));
        await sleep(wait, ctrl.signal);
      }
    })();
    return () => ctrl.abort();
  }, [buffer, key, ns, run, tail, follow]);

  // Until the current request reports, it is loading (tail) or connecting
  // (follow); a follow keeps showing the previous failure until it opens.
  const current = progress.key === key;
  return {
    records,
    status: current ? progress.status : follow ? 'connecting' : 'loading',
    error: current || follow ? progress.error : null,
    truncated,
    retryIn: current ? progress.retryIn : 0,
    reload: () => setReloads((n) => n + 1),
  };
}
