/**
 * Groups in a log, as GitHub Actions writes them: a `::group::NAME` line
 * opens one, `::endgroup::` closes it; the viewer folds each group into its
 * header line (collapsed by default). Also where a failed Run's first error
 * is.
 */
import type { CursorRecord } from '../api/logTypes';
import { stripAnsi } from './ansi';

export const GROUP_START = '::group::';
export const GROUP_END = '::endgroup::';

export interface LogGroup {
  /** Index of the `::group::` line (the header). */
  start: number;
  /** Index of the `::endgroup::` line, or the number of lines while the group is still open. */
  end: number;
  name: string;
  /** Lines inside the group (between its two marker lines). */
  count: number;
  /** A key that stays with the group as lines are loaded before it (its header's cursor). */
  key: string;
}

/** The group a header line opens (its name), or null. */
export function groupName(message: string): string | null {
  const m = message.startsWith(GROUP_START) ? message : message.includes(GROUP_START) ? stripAnsi(message) : message;
  if (!m.startsWith(GROUP_START)) return null;
  return m.slice(GROUP_START.length).trim() || 'Group';
}

export function isGroupEnd(message: string): boolean {
  return message.startsWith(GROUP_END) || (message.includes(GROUP_END) && stripAnsi(message).trim() === GROUP_END);
}

/**
 * The groups of `lines`. Groups do not nest (as in GitHub Actions): a
 * `::group::` inside an open group closes it first. `dropped`: lines dropped
 * before the first, for keys of records without cursors.
 */
export function findGroups(lines: readonly CursorRecord[], dropped = 0): LogGroup[] {
  const groups: LogGroup[] = [];
  let open: LogGroup | null = null;
  for (let i = 0; i < lines.length; i++) {
    const msg = lines[i]!.message;
    if (!msg.includes('::')) continue;
    const name = groupName(msg);
    if (name !== null) {
      if (open) {
        open.end = i;
        open.count = i - open.start - 1;
        groups.push(open);
      }
      open = { start: i, end: lines.length, name, count: 0, key: lines[i]!.cursor ?? `n${i + dropped}` };
    } else if (open && isGroupEnd(msg)) {
      open.end = i;
      open.count = i - open.start - 1;
      groups.push(open);
      open = null;
    }
  }
  if (open) {
    open.count = lines.length - open.start - 1;
    groups.push(open);
  }
  return groups;
}

/**
 * The lines shown (indexes into the loaded lines), with every group folded
 * unless `isOpen` says otherwise: a folded group shows its header only; an
 * open one its header and lines; the `::endgroup::` line never shows. Null
 * when every line shows (no groups).
 */
export function visibleLines(total: number, groups: readonly LogGroup[], isOpen: (g: LogGroup) => boolean): number[] | null {
  if (groups.length === 0) return null;
  const out: number[] = [];
  let next = 0;
  for (const g of groups) {
    for (let i = next; i <= g.start; i++) out.push(i);
    const last = Math.min(g.end, total) - 1;
    if (isOpen(g)) for (let i = g.start + 1; i <= last; i++) out.push(i);
    next = g.end < total ? g.end + 1 : total;
  }
  for (let i = next; i < total; i++) out.push(i);
  return out;
}

/** The group whose lines (not its header) hold line `index`, or undefined. */
export function groupOf(groups: readonly LogGroup[], index: number): LogGroup | undefined {
  let lo = 0;
  let hi = groups.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const g = groups[mid]!;
    if (index <= g.start) hi = mid - 1;
    else if (index >= g.end) lo = mid + 1;
    else return g;
  }
  return undefined;
}

/** What counts as an error line when no record is on stderr. */
export const ERROR_PATTERN = /\b(error|fatal|panic|exception)\b/i;

/** Index of the first error: the first stderr record, else the first line matching ERROR_PATTERN; -1 without one. */
export function firstError(lines: readonly CursorRecord[]): number {
  for (let i = 0; i < lines.length; i++) if (lines[i]!.stream === 'stderr') return i;
  for (let i = 0; i < lines.length; i++) if (ERROR_PATTERN.test(stripAnsi(lines[i]!.message))) return i;
  return -1;
}
