/**
 * Pure helpers of the Action and PersistentWorkspace views: column sorting
 * and what a workspace's phase and TTL mean. No DOM.
 */
import type { ActionListItem, WorkspaceListItem } from '../api/kinds';
import type { Tone } from './phase';
import { sortBy, type Sort } from './sort';

export type ActionColumn = 'name' | 'steps' | 'ready' | 'age';
export const ACTION_COLUMNS: readonly ActionColumn[] = ['name', 'steps', 'ready', 'age'];
export type WorkspaceColumn = 'name' | 'phase' | 'runtime' | 'pod' | 'used' | 'age';
export const WORKSPACE_COLUMNS: readonly WorkspaceColumn[] = ['name', 'phase', 'runtime', 'pod', 'used', 'age'];

/** Ascending age is youngest first, as the column reads. */
function ageKey(t: string | undefined): number {
  return -(Date.parse(t ?? '') || 0);
}

export const sortActions = (items: readonly ActionListItem[], sort: Sort<ActionColumn> | null) =>
  sortBy(items, sort, (a, c) => {
    switch (c) {
      case 'name':
        return a.metadata.name;
      case 'steps':
        return a.steps;
      case 'ready':
        return a.ready?.status ?? '';
      case 'age':
        return ageKey(a.metadata.creationTimestamp);
    }
  });

export const sortWorkspaces = (items: readonly WorkspaceListItem[], sort: Sort<WorkspaceColumn> | null) =>
  sortBy(items, sort, (w, c) => {
    switch (c) {
      case 'name':
        return w.metadata.name;
      case 'phase':
        return w.phase;
      case 'runtime':
        return w.runtime;
      case 'pod':
        return w.boundPod ?? '';
      case 'used':
        // Most recently used first when ascending, never used last.
        return w.lastUsedTime ? ageKey(w.lastUsedTime) : Number.MAX_SAFE_INTEGER;
      case 'age':
        return ageKey(w.metadata.creationTimestamp);
    }
  });

/** The tone of a workspace phase: Bound holds data on a Pod, Lost lost it, Released let it go. */
export function workspaceTone(phase: string | undefined): Tone {
  switch (phase) {
    case 'Bound':
      return 'success';
    case 'Lost':
      return 'danger';
    case 'Pending':
    case undefined:
    case '':
      return 'pending';
    default:
      return 'neutral';
  }
}

/** What the workspace's cleanup policy and TTL mean for its data, in words. */
export function retention(
  spec: { cleanupPolicy?: string; ttlSecondsAfterUnused?: number },
  lastUsedTime: string | undefined,
  now: number = Date.now(),
): string {
  if (spec.cleanupPolicy === 'Retain') return 'Kept after use; something else cleans it up (Retain).';
  const ttl = spec.ttlSecondsAfterUnused;
  if (ttl === undefined) return 'Deleted once unused (DeleteAfterTTL, no TTL set).';
  const used = Date.parse(lastUsedTime ?? '');
  const span = ttlWords(ttl);
  if (Number.isNaN(used)) return `Deleted ${span} after its last use (DeleteAfterTTL).`;
  const left = used + ttl * 1000 - now;
  if (left <= 0) return `Deleted ${span} after its last use (DeleteAfterTTL): that time has passed.`;
  return `Deleted ${span} after its last use (DeleteAfterTTL): in ${ttlWords(Math.ceil(left / 1000))} unless used again.`;
}

/** Seconds in whole units, never more than there are: 90 s, 2 h, 3 d, 23 h 34 min. */
export function ttlWords(seconds: number): string {
  if (seconds < 120) return `${seconds} s`;
  const min = Math.floor(seconds / 60);
  if (seconds < 7200) return `${min} min`;
  const h = Math.floor(min / 60);
  if (seconds < 172800) return min % 60 ? `${h} h ${min % 60} min` : `${h} h`;
  return `${Math.floor(h / 24)} d`;
}
