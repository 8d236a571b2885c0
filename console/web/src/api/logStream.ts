/**
 * `useRunLogStream`: a Run's log as the viewer shows it. It reads the bounded
 * tail (or the window around a deep-linked cursor) or follows the NDJSON
 * stream, resumes a dropped follow exactly where it stopped (`sinceCursor`
 * of the last record shown) with back-off, pages back on request
 * (`beforeCursor` of the first), ends on the stream's final `Status` line,
 * batches arrivals into one update per animation frame and caps what is kept
 * in memory. Records without cursors (an older server) fall back to
 * re-reading the tail and skipping what it re-sends.
 */
import { useEffect, useEffectEvent, useRef, useState, useSyncExternalStore } from 'react';
import { ResumeMatcher, indexOfCursor } from '../lib/logs';
import { followRunLog, getRunLogTail, logAccess } from './client';
import { ApiError } from './errors';
import type { CursorRecord, CursorRunLog, LogEndStatus } from './logTypes';
import type { LogNote } from './types';

type LogRecord = CursorRecord;

/** Lines kept in memory; beyond this the oldest are dropped and counted. */
export const MAX_LINES = 250_000;
/** Longest wait between two reconnects of a follow. */
const MAX_BACKOFF_MS = 10_000;

export type LogStreamStatus =
  | 'loading'
  | 'ready'
  | 'connecting'
  | 'following'
  | 'reconnecting'
  | 'ended'
  /** The follow ended with `Status` Success: the Run finished. */
  | 'finished'
  | 'error';

/** Pages "load older" walks back at most to find a deep-linked record. */
const MAX_ANCHOR_PAGES = 20;
/** Records read before a deep-linked record, for context. */
const ANCHOR_CONTEXT = 50;

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
  /** Indexes into `lines` before which records may be missing (a reconnect found no overlap, or restarted from the tail). */
  gaps: ReadonlySet<number>;
  /** Records put before the first one so far ("load older"), for keeping the view in place. */
  prepended: number;
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
  /** A deep-linked record's cursor: the first read is the window around it instead of the tail. */
  anchor?: string | null;
}

/**
 * The top of what is loaded: whether records before the first loaded one may
 * exist ("Load older"), whether the first loaded record is the Run's first
 * (`start`), or whether older ones are gone from the Pod log (`gone`: the
 * server answered 410), and the state of reading them.
 */
export interface OlderState {
  available: boolean;
  loading: boolean;
  error: unknown;
  /** The first loaded record is the Run's first record. */
  start: boolean;
  /** The records before the first loaded one are no longer in the Pod log. */
  gone: boolean;
}

const NO_OLDER: OlderState = { available: false, loading: false, error: null, start: false, gone: false };

/** The top state after a plain read that ends at the newest record (or a page back): older records exist, or this is the start. */
function topAfter(log: CursorRunLog): OlderState {
  const more = olderAfter(log);
  return { ...NO_OLDER, available: more, start: !log.truncated };
}

export interface RunLogStream {
  records: LogLines;
  status: LogStreamStatus;
  /** The last failure (an ApiError from the client); null while things work. */
  error: unknown;
  /** The last tail read was cut, and why (`RunLog.truncatedBy`). */
  truncated: { cut: boolean; by?: string };
  /** Why the last tail read held no or only some records (`RunLog.notes`); empty while following. */
  notes: readonly LogNote[];
  /** Seconds until the next reconnect while `reconnecting`; 0 while connecting. */
  retryIn: number;
  /** Reads the tail again with the same options. */
  reload: () => void;
  /** The final `Status` line of the follow, once it ended with one. */
  end: LogEndStatus | null;
  older: OlderState;
  /** Reads the `tail` records before the first loaded one and puts them in front. */
  loadOlder: () => void;
  /** The deep-linked record: null without one; `found` once it was looked for. */
  anchor: { cursor: string; found: boolean | null } | null;
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
  private prepended = 0;
  private pending: LogRecord[] = [];
  private frame = 0;
  private snap: LogLines;
  private readonly listeners = new Set<() => void>();
  private readonly appendListeners = new Set<(count: number) => void>();

  constructor(private readonly max = MAX_LINES) {
    this.snap = { lines: this.lines, version: 0, dropped: 0, gaps: this.gaps, prepended: 0 };
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
    this.prepended = 0;
    this.publish();
  }

  /** Puts older records in front of the first one ("load older"); the gap marks move with their lines. */
  prepend(records: readonly LogRecord[]): void {
    if (records.length === 0) return;
    this.flush();
    this.lines = [...records, ...this.lines];
    const shifted = new Set<number>();
    for (const g of this.gaps) shifted.add(g + records.length);
    this.gaps = shifted;
    this.prepended += records.length;
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
    this.snap = { lines: this.lines, version: this.snap.version + 1, dropped: this.dropped, gaps: this.gaps, prepended: this.prepended };
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

const firstCursor = (rs: readonly LogRecord[]) => rs[0]?.cursor;
const lastCursor = (rs: readonly LogRecord[]) => rs[rs.length - 1]?.cursor;

/** Whether a plain read says that older records exist before its first one. */
function olderAfter(log: CursorRunLog): boolean {
  return log.truncated && firstCursor(log.records) !== undefined;
}

/**
 * The first read of a deep link: a little context before the record, then
 * the records from it on. When nothing comes before it (it is the first
 * record, or not a record of this Run) the tail is read and paged back until
 * the record is found, at most MAX_ANCHOR_PAGES times.
 */
async function readAround(ns: string, run: string, cursor: string, tail: number): Promise<{ records: LogRecord[]; older: boolean; truncated: CursorRunLog }> {
  const before = await getRunLogTail(ns, run, { tail: ANCHOR_CONTEXT, beforeCursor: cursor });
  const from = lastCursor(before.records);
  if (from) {
    const after = await getRunLogTail(ns, run, { tail, sinceCursor: from });
    return { records: [...before.records, ...after.records], older: olderAfter(before), truncated: after };
  }
  const last = await getRunLogTail(ns, run, tail);
  let records = last.records;
  let older = olderAfter(last);
  for (let page = 0; older && indexOfCursor(records, cursor) < 0 && page < MAX_ANCHOR_PAGES; page++) {
    const first = firstCursor(records)!;
    const prev = await getRunLogTail(ns, run, { tail: 500, beforeCursor: first });
    records = [...prev.records, ...records];
    older = olderAfter(prev);
  }
  return { records, older, truncated: last };
}

/**
 * A Run's log: the bounded tail (`follow: false`, one request per change of
 * `tail` or `reload()`), or the followed stream (`follow: true`). A follow
 * starts after the last record loaded (`sinceCursor`), else with the tail; on
 * a drop it resumes after the last record shown. It stops on 4xx answers
 * other than 409 (no Pod yet), on a final `Status` Failure 401/403/404, and
 * on a `Status` Success (the Run finished); other failures reconnect.
 */
export function useRunLogStream(ns: string, run: string, { tail, follow, active, onAppend, anchor = null }: RunLogStreamOptions): RunLogStream {
  const [buffer] = useState(() => new LogBuffer());
  const records = useSyncExternalStore(buffer.subscribe, buffer.snapshot);
  const [reloads, setReloads] = useState(0);
  // What was read first: a change (another tail, a reload) replaces what is shown.
  const base = [ns, run, tail, reloads, anchor ?? ''].join('\u0000');
  // The request the reports belong to; `reload()` re-reads a tail and leaves a follow alone.
  // A follow of a Run that finishes meanwhile is opened again after its last
  // record: the server then sends what is left and its final Status line.
  const key = [ns, run, tail, follow ? `follow ${active ? 'active' : 'done'}` : `tail ${reloads}`, anchor ?? ''].join('\u0000');
  const loadedRef = useRef<string | null>(null);
  const [progress, setProgress] = useState<Progress>({ key: '', status: 'loading', error: null, retryIn: 0 });
  const [truncated, setTruncated] = useState<{ cut: boolean; by?: string }>({ cut: false });
  const [notes, setNotes] = useState<readonly LogNote[]>([]);
  const [end, setEnd] = useState<{ key: string; status: LogEndStatus } | null>(null);
  const [older, setOlder] = useState<OlderState>(NO_OLDER);
  const [found, setFound] = useState<{ base: string; found: boolean } | null>(null);

  const isActive = useEffectEvent(() => active);
  const appended = useEffectEvent((count: number) => onAppend?.(count));

  useEffect(() => {
    const off = buffer.onAppend((n) => appended(n));
    return () => {
      off();
      buffer.cancelFrame();
    };
  }, [buffer]);

  useEffect(() => {
    const ctrl = new AbortController();
    let error: unknown = null;
    const report = (status: LogStreamStatus, retryIn = 0) => {
      if (!ctrl.signal.aborted) setProgress({ key, status, error, retryIn });
    };
    const fresh = loadedRef.current !== base;

    /**
     * The first read: the tail, or the window around the anchor. Keeps what
     * is loaded when only `follow` changed, unless nothing was: a follow
     * turned off before it delivered anything leaves the tail to be read.
     */
    const firstRead = async (): Promise<boolean> => {
      if (!fresh && buffer.length > 0) return true;
      if (follow && !anchor) {
        // A follow without an anchor starts with the tail itself.
        buffer.replace([]);
        setOlder(NO_OLDER);
        setNotes([]);
        loadedRef.current = base;
        return true;
      }
      try {
        if (anchor) {
          const got = await readAround(ns, run, anchor, tail);
          if (ctrl.signal.aborted) return false;
          buffer.replace(got.records);
          setFound({ base, found: indexOfCursor(got.records, anchor) >= 0 });
          setOlder({ ...NO_OLDER, available: got.older, start: !got.older && got.records.length > 0 });
          setTruncated({ cut: got.truncated.truncated, ...(got.truncated.truncatedBy ? { by: got.truncated.truncatedBy } : {}) });
          setNotes(got.truncated.notes ?? []);
        } else {
          const log = await getRunLogTail(ns, run, tail);
          if (ctrl.signal.aborted) return false;
          buffer.replace(log.records);
          setOlder(topAfter(log));
          setTruncated({ cut: log.truncated, ...(log.truncatedBy ? { by: log.truncatedBy } : {}) });
          setNotes(log.notes ?? []);
        }
        loadedRef.current = base;
        return true;
      } catch (e) {
        if (ctrl.signal.aborted) return false;
        buffer.replace([]);
        if (anchor) setFound({ base, found: false });
        error = e;
        report('error');
        return false;
      }
    };

    const followLoop = async () => {
      let failures = 0;
      let connected = false;
      // Set when the record to resume after is gone from the Pod log (410):
      // the next connection starts from the tail, after a gap mark.
      let fromTail = false;
      while (!ctrl.signal.aborted) {
        buffer.flush();
        const since = fromTail ? undefined : lastCursor(buffer.records);
        if (fromTail && buffer.length > 0) buffer.markGap();
        fromTail = false;
        // Without cursors, a reconnect re-reads the tail and skips what it re-sends.
        const matcher = since ? null : new ResumeMatcher(buffer.records, tail);
        let gapMarked = false;
        let startedEmpty = buffer.length === 0;
        if (connected) report('reconnecting');
        try {
          const ended = await followRunLog(
            ns,
            run,
            since ? { sinceCursor: since } : { tail },
            (r) => {
              failures = 0;
              if (since && r.cursor === since) return;
              const out = matcher ? matcher.push(r) : [r];
              if (out.length === 0) return;
              if (matcher?.gap && !gapMarked && buffer.length > 0) {
                gapMarked = true;
                buffer.markGap();
              }
              if (startedEmpty && out[0]?.cursor) {
                // The first records of a follow from the tail: older ones may exist.
                startedEmpty = false;
                setOlder({ ...NO_OLDER, available: true });
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
          matcher?.finish();
          buffer.flush();
          if (ended?.status === 'Success') {
            error = null;
            setEnd({ key, status: ended });
            report('finished');
            return;
          }
          if (ended) {
            error = new ApiError(ended.code, ended.reason ?? 'Error', ended.message ?? `the log stream ended (${ended.code})`, logAccess(ns, run));
            if (ended.code === 410) fromTail = true;
            if (ended.code === 401 || ended.code === 403 || ended.code === 404) {
              setEnd({ key, status: ended });
              report('error');
              return;
            }
          } else {
            error = null;
            if (!isActive()) {
              report('ended');
              return;
            }
          }
        } catch (e) {
          if (ctrl.signal.aborted) return;
          error = e;
          if (e instanceof ApiError && e.status === 410 && since) {
            // The record to resume after is gone: start again from the tail, marking the gap.
            fromTail = true;
            failures = 0;
            continue;
          }
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
    };

    void (async () => {
      if (!(await firstRead())) return;
      if (ctrl.signal.aborted) return;
      if (follow) await followLoop();
      else report('ready');
    })();
    return () => ctrl.abort();
    // `base` and `key` name every input that matters here.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [buffer, base, key]);

  const loadOlder = () => {
    const first = firstCursor(buffer.records);
    if (!first || older.loading) return;
    setOlder((o) => ({ ...o, loading: true, error: null }));
    getRunLogTail(ns, run, { tail, beforeCursor: first }).then(
      (log) => {
        // Another read replaced the lines meanwhile: these belong to nothing shown.
        if (firstCursor(buffer.records) !== first) return;
        buffer.prepend(log.records);
        setOlder(topAfter(log));
      },
      (e: unknown) => {
        if (firstCursor(buffer.records) !== first) return;
        // 410: the records before the first loaded one are no longer in the Pod log.
        if (e instanceof ApiError && e.status === 410) setOlder({ ...NO_OLDER, gone: true });
        else setOlder((o) => ({ ...o, loading: false, error: e }));
      },
    );
  };

  // Until the current request reports, it is loading (tail) or connecting
  // (follow); a follow keeps showing the previous failure until it opens.
  const current = progress.key === key;
  return {
    records,
    status: current ? progress.status : follow ? 'connecting' : 'loading',
    error: current || follow ? progress.error : null,
    truncated,
    notes,
    retryIn: current ? progress.retryIn : 0,
    reload: () => setReloads((n) => n + 1),
    end: end?.key === key ? end.status : null,
    older,
    loadOlder,
    anchor: anchor ? { cursor: anchor, found: found?.base === base ? found.found : null } : null,
  };
}
