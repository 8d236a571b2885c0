/**
 * The Run-log cursor contract (records carry `cursor`; a follow ends with a
 * Kubernetes `Status` line) as a local extension of the generated types,
 * until `./types` renders it from the server's own.
 */
import type { LogRecord, RunLog } from './types';

/** A record as the server sends it: with its cursor (`"<secs>.<nanos9>-<seq>"`), opaque to clients. */
export type CursorRecord = LogRecord & { cursor?: string };

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
}

/** A cursor is `[0-9.-]` only; anything else in a URL fragment is not one. */
export const CURSOR_RE = /^\d+\.\d{9}-\d+$/;
