/**
 * Pure logic of the log viewer: resuming a follow without duplicates, search,
 * the follow/paused state machine, `#L<n>` deep links and the download text.
 */
import { CURSOR_RE, type CursorRecord } from '../api/logTypes';

/** Largest tail the API accepts. */
export const MAX_TAIL = 500;

export function clampTail(n: number): number {
  if (!Number.isFinite(n)) return 100;
  return Math.min(MAX_TAIL, Math.max(1, Math.round(n)));
}

/** Identity of a record for de-duplication: its cursor, else its time and message. */
export function recordKey(r: CursorRecord): string {
  return r.cursor ? `c\u0000${r.cursor}` : `${r.time ?? ''}\u0000${r.message}`;
}

/**
 * De-duplicates the records a follow re-sends after a reconnect.
 *
 * A reconnect re-requests `tail=N`, so the new stream starts with (up to) N
 * records already shown, followed by new ones. The already-shown part is a
 * contiguous run that ends exactly at the last record we have. The matcher
 * holds incoming records back while they still continue such a run in
 * `history` (compared on time + message); once the run reaches the end of
 * history they are dropped as duplicates and everything after passes
 * through. If the incoming records stop matching, nothing was overlapping
 * (more than N lines were written while disconnected): the held records are
 * released and `gap` is set so the viewer can mark possibly missing lines.
 */
export class ResumeMatcher {
  private readonly keys: string[];
  /** Candidate start offsets into `keys` that still match what arrived. */
  private candidates: number[] | null = null;
  private held: CursorRecord[] = [];
  /** Number of held records proven to be duplicates by a completed candidate. */
  private completed = 0;
  private passthrough: boolean;
  /** True when the new stream did not overlap what was already shown. */
  gap = false;

  /** `history`: the records already shown (only the last `window` are considered). */
  constructor(history: readonly CursorRecord[], window: number = MAX_TAIL) {
    const start = Math.max(0, history.length - window);
    this.keys = history.slice(start).map(recordKey);
    this.passthrough = this.keys.length === 0;
  }

  /** Feeds one incoming record; returns the records to append now (possibly none). */
  push(r: CursorRecord): CursorRecord[] {
    if (this.passthrough) return [r];
    const k = recordKey(r);
    const i = this.held.length;
    this.held.push(r);
    const matching =
      this.candidates === null
        ? this.keys.flatMap((key, s) => (key === k ? [s] : []))
        : this.candidates.filter((s) => this.keys[s + i] === k);
    // A candidate that reached our last record proves the held records are
    // duplicates; earlier-starting candidates (longer overlaps) may still go on.
    const alive: number[] = [];
    for (const s of matching) {
      if (s + i + 1 === this.keys.length) this.completed = i + 1;
      else alive.push(s);
    }
    this.candidates = alive;
    if (alive.length > 0) return [];
    this.passthrough = true;
    const out = this.completed > 0 ? this.held.slice(this.completed) : this.held;
    if (this.completed === 0) this.gap = true;
    this.held = [];
    return out;
  }

  /** The stream ended: every held record matched history, so all are duplicates. */
  finish(): CursorRecord[] {
    this.held = [];
    this.passthrough = true;
    return [];
  }

  get resumed(): boolean {
    return this.passthrough;
  }
}

/** Convenience for batches: de-duplicates `incoming` against `history`. */
export function mergeResumed(
  history: readonly CursorRecord[],
  incoming: readonly CursorRecord[],
): { append: CursorRecord[]; gap: boolean } {
  const m = new ResumeMatcher(history);
  const append: CursorRecord[] = [];
  for (const r of incoming) append.push(...m.push(r));
  append.push(...m.finish());
  return { append, gap: m.gap };
}

// ---------------------------------------------------------------------------
// Search
// ---------------------------------------------------------------------------

export interface SearchMatch {
  /** 0-based index of the line. */
  line: number;
  start: number;
  end: number;
}

export interface SearchResult {
  matches: SearchMatch[];
  /** Lines containing at least one match (0-based, ascending). */
  lines: number[];
}

/** Case-insensitive substring search over lines; every occurrence counts. */
export function searchLines(lines: readonly string[], query: string, limit = 100_000): SearchResult {
  const matches: SearchMatch[] = [];
  const hitLines: number[] = [];
  if (!query) return { matches, lines: hitLines };
  const q = query.toLowerCase();
  for (let i = 0; i < lines.length && matches.length < limit; i++) {
    const text = lines[i]!.toLowerCase();
    let from = 0;
    let found = false;
    for (;;) {
      const at = text.indexOf(q, from);
      if (at < 0) break;
      matches.push({ line: i, start: at, end: at + q.length });
      found = true;
      from = at + Math.max(1, q.length);
      if (matches.length >= limit) break;
    }
    if (found) hitLines.push(i);
  }
  return { matches, lines: hitLines };
}

/** Index of the next (or previous) match after moving from `current`, wrapping around. */
export function stepMatch(count: number, current: number, direction: 1 | -1): number {
  if (count === 0) return -1;
  if (current < 0) return direction === 1 ? 0 : count - 1;
  return (current + direction + count) % count;
}

/** Splits a line into plain and highlighted parts for the given query. */
export function highlight(text: string, query: string): Array<{ text: string; hit: boolean }> {
  if (!query) return [{ text, hit: false }];
  const lower = text.toLowerCase();
  const q = query.toLowerCase();
  const parts: Array<{ text: string; hit: boolean }> = [];
  let from = 0;
  for (;;) {
    const at = lower.indexOf(q, from);
    if (at < 0) break;
    if (at > from) parts.push({ text: text.slice(from, at), hit: false });
    parts.push({ text: text.slice(at, at + q.length), hit: true });
    from = at + q.length;
  }
  if (from < text.length || parts.length === 0) parts.push({ text: text.slice(from), hit: false });
  return parts;
}

// ---------------------------------------------------------------------------
// Follow / paused
// ---------------------------------------------------------------------------

export interface FollowState {
  /** The user asked to follow the live stream. */
  follow: boolean;
  /** The view is scrolled to the bottom and moves with new lines. */
  pinned: boolean;
  /** Lines appended while not pinned. */
  unseen: number;
  /** The view left the bottom for a jump (a search match, the first error), not a scroll: it is held there, not "paused". */
  heldAt?: 'match' | 'error' | null;
}

export type FollowEvent =
  | { type: 'toggle'; follow: boolean }
  | { type: 'scrolled'; atBottom: boolean }
  | { type: 'appended'; count: number }
  | { type: 'jumpToBottom' }
  /** A jump moved the view to a line (a search match, the first error). */
  | { type: 'held'; at: 'match' | 'error' };

export const INITIAL_FOLLOW: FollowState = { follow: false, pinned: true, unseen: 0 };

export function followReducer(state: FollowState, e: FollowEvent): FollowState {
  switch (e.type) {
    case 'toggle':
      return e.follow ? { follow: true, pinned: true, unseen: 0, heldAt: null } : { ...state, follow: false, unseen: 0 };
    case 'scrolled':
      if (e.atBottom === state.pinned) return state;
      return e.atBottom ? { ...state, pinned: true, unseen: 0, heldAt: null } : { ...state, pinned: false, heldAt: null };
    case 'held':
      return { ...state, pinned: false, heldAt: e.at };
    case 'appended':
      if (e.count <= 0 || state.pinned) return state;
      return { ...state, unseen: state.unseen + e.count };
    case 'jumpToBottom':
      return { ...state, pinned: true, unseen: 0, heldAt: null };
  }
}

/** Following, but the user scrolled up: the view does not move. */
export function isPaused(s: FollowState): boolean {
  return s.follow && !s.pinned;
}

/** Whether a scroll position counts as "at the bottom" (a few pixels of slack). */
export function atBottom(scrollTop: number, scrollHeight: number, clientHeight: number, slack = 8): boolean {
  return scrollHeight - (scrollTop + clientHeight) <= slack;
}

// ---------------------------------------------------------------------------
// Deep links and download
// ---------------------------------------------------------------------------

/**
 * Parses `#L12` or `#L12-L20` into a 1-based inclusive range. `prefix`
 * separates several viewers on one page (e.g. `S2L` for `#S2L12`).
 */
export function parseLineHash(hash: string, prefix = 'L'): { from: number; to: number } | null {
  const p = prefix.replace(/[^A-Za-z0-9]/g, '');
  const m = new RegExp(`^#${p}(\\d+)(?:-(?:${p})?(\\d+))?$`).exec(hash);
  if (!m) return null;
  const a = Number(m[1]);
  const b = m[2] ? Number(m[2]) : a;
  if (a < 1 || b < 1) return null;
  return { from: Math.min(a, b), to: Math.max(a, b) };
}

export function lineHash(n: number, prefix = 'L'): string {
  return `#${prefix}${n}`;
}

/**
 * A line's lasting deep link: `#L<cursor>` (`#S2L<cursor>` with a prefix).
 * The cursor names the record itself, so the link shows the same line
 * however many lines are written after it or loaded before it.
 */
export function cursorHash(cursor: string, prefix = 'L'): string {
  return `#${prefix}${cursor}`;
}

/** The cursor a `#L<cursor>` fragment names, or null (line numbers are not cursors). */
export function parseCursorHash(hash: string, prefix = 'L'): string | null {
  const p = prefix.replace(/[^A-Za-z0-9]/g, '');
  if (!hash.startsWith(`#${p}`)) return null;
  const c = hash.slice(p.length + 1);
  return CURSOR_RE.test(c) ? c : null;
}

/** The deep link of a record: its cursor when it has one, else its (stable) line number; '' without either. */
export function recordHash(r: CursorRecord, n: number | undefined, prefix = 'L'): string {
  return r.cursor ? cursorHash(r.cursor, prefix) : n !== undefined ? lineHash(n, prefix) : '';
}

/**
 * Index of the record numbered `n`: the one whose `line` is `n`; without
 * `line` numbers, the `n`th loaded record when `start` (the first loaded
 * record's number minus one) is known (>= 0); else -1.
 */
export function indexOfLine(records: readonly CursorRecord[], n: number, start = -1): number {
  for (let i = 0; i < records.length; i++) if (records[i]!.line === n) return i;
  if (start >= 0 && records.every((r) => r.line === undefined)) {
    const i = n - 1 - start;
    return i >= 0 && i < records.length ? i : -1;
  }
  return -1;
}

/** Index of the record with `cursor` in `records`, or -1. */
export function indexOfCursor(records: readonly CursorRecord[], cursor: string): number {
  for (let i = records.length - 1; i >= 0; i--) if (records[i]!.cursor === cursor) return i;
  return -1;
}

/** The text of the shown records, one per line, as the viewer shows them. */
export function logText(records: readonly CursorRecord[], timestamps: boolean): string {
  let out = '';
  for (const r of records) {
    if (timestamps && r.time) out += `${r.time} `;
    out += r.stream === 'stderr' ? `[stderr] ${r.message}` : r.message;
    out += '\n';
  }
  return out;
}

/** Status line of a loaded tail: how many records, and why older ones are not shown. */
export function tailSummary(count: number, truncated: boolean, truncatedBy?: string): string {
  const base = `Last ${count.toLocaleString()} record${count === 1 ? '' : 's'}`;
  if (!truncated) return base;
  switch (truncatedBy) {
    case 'tailLines':
      return `${base}; older records exist`;
    case 'limitBytes':
      return `${base} (cut by the 1 MiB bound)`;
    case 'searchWindow':
      return `${base}; the Pod log is too long to search back to the Run's start`;
    default:
      return `${base} (cut by the 500-record / 1 MiB bound)`;
  }
}
