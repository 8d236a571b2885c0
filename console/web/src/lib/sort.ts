/**
 * Column sorting of a list page, kept in the URL as `sort=<column>` or
 * `sort=-<column>` (descending). Pure, no DOM.
 */
import type { RunListItem, RuntimeListItem, WorkflowRunListItem } from '../api/types';

export type RunColumn = 'name' | 'phase' | 'runtime' | 'pod' | 'attempt' | 'duration' | 'completed' | 'age';
export const RUN_COLUMNS: readonly RunColumn[] = ['name', 'phase', 'runtime', 'pod', 'attempt', 'duration', 'completed', 'age'];
export type RuntimeColumn = 'name' | 'ready' | 'age';
export const RUNTIME_COLUMNS: readonly RuntimeColumn[] = ['name', 'ready', 'age'];
export type WorkflowRunColumn = 'name' | 'phase' | 'jobs' | 'started' | 'duration' | 'age';
export const WORKFLOW_RUN_COLUMNS: readonly WorkflowRunColumn[] = ['name', 'phase', 'jobs', 'started', 'duration', 'age'];

/** A sort key; null (no value: a Run not completed) sorts last in both directions. */
type Key = string | number | null;

export interface Sort<C extends string> {
  column: C;
  descending: boolean;
}

/** `sort=` as a Sort, or null when absent or not one of `columns`. */
export function parseSort<C extends string>(raw: string | null, columns: readonly C[]): Sort<C> | null {
  if (!raw) return null;
  const descending = raw.startsWith('-');
  const column = (descending ? raw.slice(1) : raw) as C;
  return columns.includes(column) ? { column, descending } : null;
}

/** The `sort=` value after clicking `column`: ascending first, then descending, then unsorted. */
export function nextSort<C extends string>(current: Sort<C> | null, column: C): string {
  if (!current || current.column !== column) return column;
  return current.descending ? '' : `-${column}`;
}

function runKey(r: RunListItem, c: RunColumn, now: number): Key {
  switch (c) {
    case 'name':
      return r.metadata.name;
    case 'phase':
      return r.phase ?? '';
    case 'runtime':
      return r.runtime;
    case 'pod':
      return r.assignedPod ?? '';
    case 'attempt':
      return r.attempt ?? -1;
    case 'duration': {
      const start = Date.parse(r.startTime ?? '');
      if (Number.isNaN(start)) return null;
      const end = Date.parse(r.completionTime ?? '');
      return (Number.isNaN(end) ? now : end) - start;
    }
    case 'completed': {
      // Runs not completed have no completion time: last, whichever the direction.
      const end = Date.parse(r.completionTime ?? '');
      return Number.isNaN(end) ? null : end;
    }
    case 'age':
      return ageKey(r.metadata.creationTimestamp);
  }
}

/** Ascending age is youngest first, as the column reads. */
function ageKey(created: string | undefined): number {
  return -(Date.parse(created ?? '') || 0);
}

function runtimeKey(r: RuntimeListItem, c: RuntimeColumn): Key {
  switch (c) {
    case 'name':
      return r.metadata.name;
    case 'ready':
      // The share of ready Pods, then how many; unknown first.
      if (r.readyReplicas === undefined) return -2;
      return r.replicas > 0 ? r.readyReplicas / r.replicas + r.readyReplicas / 1e6 : -1;
    case 'age':
      return ageKey(r.metadata.creationTimestamp);
  }
}

function workflowRunKey(w: WorkflowRunListItem, c: WorkflowRunColumn): Key {
  switch (c) {
    case 'name':
      return w.metadata.name;
    case 'phase':
      return w.phase ?? '';
    case 'jobs':
      return w.jobs.total > 0 ? w.jobs.succeeded / w.jobs.total : -1;
    case 'started': {
      // Derived from the steps' Runs; a run that has not started sorts first.
      const start = Date.parse(w.startTime ?? '');
      return Number.isNaN(start) ? -1 : start;
    }
    case 'duration': {
      const start = Date.parse(w.startTime ?? '');
      if (Number.isNaN(start)) return -1;
      const end = Date.parse(w.completionTime ?? '');
      return (Number.isNaN(end) ? Date.now() : end) - start;
    }
    case 'age':
      return ageKey(w.metadata.creationTimestamp);
  }
}

/**
 * `items` sorted by `sort` with `key` (stable; ties keep the server's order).
 * Items whose key is null come last in both directions, in the server's order.
 */
export function sortBy<T, C extends string>(items: readonly T[], sort: Sort<C> | null, key: (t: T, c: C) => Key): T[] {
  if (!sort) return [...items];
  const dir = sort.descending ? -1 : 1;
  return items
    .map((t, i) => ({ t, i, k: key(t, sort.column) }))
    .sort((a, b) => {
      if (a.k === null || b.k === null) return a.k === b.k ? a.i - b.i : a.k === null ? 1 : -1;
      const c = typeof a.k === 'number' && typeof b.k === 'number' ? a.k - b.k : String(a.k).localeCompare(String(b.k));
      return c * dir || a.i - b.i;
    })
    .map((x) => x.t);
}

export const sortRuntimes = (items: readonly RuntimeListItem[], sort: Sort<RuntimeColumn> | null) => sortBy(items, sort, runtimeKey);
export const sortWorkflowRuns = (items: readonly WorkflowRunListItem[], sort: Sort<WorkflowRunColumn> | null) =>
  sortBy(items, sort, workflowRunKey);

/**
 * The Runs of a page sorted by `sort` (stable; ties keep the server's order).
 * By `completed`: oldest completion first (descending: newest first), Runs not
 * completed after them either way. By `duration`: running Runs count to `now`;
 * Runs not started come last.
 */
export function sortRuns(items: readonly RunListItem[], sort: Sort<RunColumn> | null, now: number = Date.now()): RunListItem[] {
  return sortBy(items, sort, (r, c) => runKey(r, c, now));
}
