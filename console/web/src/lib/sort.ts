/**
 * Column sorting of a list page, kept in the URL as `sort=<column>` or
 * `sort=-<column>` (descending). Pure, no DOM.
 */
import type { RunListItem } from '../api/types';

export type RunColumn = 'name' | 'phase' | 'runtime' | 'pod' | 'attempt' | 'age';
export const RUN_COLUMNS: readonly RunColumn[] = ['name', 'phase', 'runtime', 'pod', 'attempt', 'age'];

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

function key(r: RunListItem, c: RunColumn): string | number {
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
    case 'age':
      // Ascending age is youngest first, as the column reads.
      return -(Date.parse(r.metadata.creationTimestamp ?? '') || 0);
  }
}

/** The Runs of a page sorted by `sort` (stable; ties keep the server's order). */
export function sortRuns(items: readonly RunListItem[], sort: Sort<RunColumn> | null): RunListItem[] {
  if (!sort) return [...items];
  const dir = sort.descending ? -1 : 1;
  return items
    .map((r, i) => ({ r, i, k: key(r, sort.column) }))
    .sort((a, b) => {
      const c = typeof a.k === 'number' && typeof b.k === 'number' ? a.k - b.k : String(a.k).localeCompare(String(b.k));
      return c * dir || a.i - b.i;
    })
    .map((x) => x.r);
}
