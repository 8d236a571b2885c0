/**
 * The Run-log cursor contract as the viewer reads it: records carry
 * `cursor` (`./types` says so), but a record from a server without cursors
 * is still shown, so here the cursor may be missing; a follow ends with a
 * Kubernetes `Status` line.
 */
import type { LogRecord, RunLog, SearchSummary } from './types';

/**
 * A record as a server sends it: with its cursor (`"<secs>.<nanos9>-<seq>"`,
 * opaque to clients), or without on an older server. `line` (its stable
 * number) and `match` (a search hit) come from `./types`.
 */
export type CursorRecord = Omit<LogRecord, 'cursor'> & { cursor?: string };

/** What a search of the whole log found (`runs/log?search=`). */
export type LogSearchSummary = SearchSummary;

/** A plain read whose records carry cursors. */
export type CursorRunLog = Omit<RunLog, 'records'> & { records: CursorRecord[] };

/** The last line of a follow that the server ended: a Kubernetes `Status`. */
export interface LogEndStatus {
  kind: 'Status';
  status: 'Success' | 'Failure';
  code: number;
  reason?: string;
  message?: string;
}

export function isLogEndStatus(value: unknown): value is LogEndStatus {
  return typeof value === 'object' && value !== null && (value as { kind?: unknown }).kind === 'Status';
}

/** Where a plain read starts: the newest `tail`, the records after a cursor, or those before one. */
export interface LogWindow {
  tail: number;
  sinceCursor?: string;
  beforeCursor?: string;
  /** The first `tail` records of the Run, oldest first (plain reads only). */
  fromStart?: boolean;
}

/** A search of the whole log (`runs/log?search=`): its text and how it matches. */
export interface LogSearchQuery {
  search: string;
  regex?: boolean;
  ignoreCase?: boolean;
  /** Records of context before and after each match (0..10). */
  context?: number;
  /** Matches per answer (1..500). */
  tail: number;
  /** The next page: after this record (the last match of the previous page). */
  sinceCursor?: string;
}

/** A cursor is `[0-9.-]` only; anything else in a URL fragment is not one. */
export const CURSOR_RE = /^\d+\.\d{9}-\d+$/;
