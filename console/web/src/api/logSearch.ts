/**
 * `useWholeLogSearch`: a search of a Run's whole log on the server
 * (`runs/log?search=`): the matches found so far (their cursors, in log
 * order), the count of the whole log (`search.total`, a lower bound when
 * `totalCapped`), and the next page on request (`sinceCursor` of the last
 * match, while the answer was truncated by `tailLines`).
 */
import { useEffect, useState } from 'react';
import { searchRunLog } from './client';
import type { CursorRunLog } from './logTypes';

/** Matches asked for per answer. */
export const SEARCH_PAGE = 100;

export interface WholeLogMatch {
  cursor: string;
  message: string;
}

export interface WholeLogSearch {
  status: 'idle' | 'searching' | 'ready' | 'error';
  matches: readonly WholeLogMatch[];
  /** Matches in the whole log (counted up to the server's cap). */
  total: number;
  capped: boolean;
  /** More matches than those loaded exist (a next page). */
  more: boolean;
  error: unknown;
  /** Reads the next page of matches; resolves with every match loaded then. */
  loadMore: () => Promise<readonly WholeLogMatch[]>;
}

interface Result {
  key: string;
  status: 'ready' | 'error';
  matches: WholeLogMatch[];
  total: number;
  capped: boolean;
  more: boolean;
  error: unknown;
}

function matchesOf(log: CursorRunLog): WholeLogMatch[] {
  const out: WholeLogMatch[] = [];
  for (const r of log.records) if (r.match && r.cursor) out.push({ cursor: r.cursor, message: r.message });
  return out;
}

const hasNext = (log: CursorRunLog) => log.truncated && (log.truncatedBy as string | undefined)?.toLowerCase() === 'taillines';

/** Searches when `enabled` and `query` is set; case-insensitive; `regex`: the query is a regular expression. */
export function useWholeLogSearch(ns: string, run: string, query: string, regex: boolean, enabled: boolean): WholeLogSearch {
  const key = [ns, run, query, regex].join('\u0000');
  const [result, setResult] = useState<Result | null>(null);
  const active = enabled && query !== '';

  useEffect(() => {
    if (!active) return;
    let gone = false;
    searchRunLog(ns, run, { search: query, regex, ignoreCase: true, context: 2, tail: SEARCH_PAGE }).then(
      (log) => {
        if (gone) return;
        setResult({ key, status: 'ready', matches: matchesOf(log), total: log.search?.total ?? 0, capped: log.search?.totalCapped ?? false, more: hasNext(log), error: null });
      },
      (e: unknown) => {
        if (!gone) setResult({ key, status: 'error', matches: [], total: 0, capped: false, more: false, error: e });
      },
    );
    return () => {
      gone = true;
    };
    // `key` names every input.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [key, active]);

  const current = active && result?.key === key ? result : null;
  const loadMore = async (): Promise<readonly WholeLogMatch[]> => {
    if (!current || !current.more) return current?.matches ?? [];
    const last = current.matches[current.matches.length - 1];
    if (!last) return current.matches;
    const log = await searchRunLog(ns, run, { search: query, regex, ignoreCase: true, context: 2, tail: SEARCH_PAGE, sinceCursor: last.cursor });
    const matches = [...current.matches, ...matchesOf(log)];
    setResult((r) => (r?.key === key ? { ...r, matches, more: hasNext(log) && matchesOf(log).length > 0 } : r));
    return matches;
  };
  if (!active) return { status: 'idle', matches: [], total: 0, capped: false, more: false, error: null, loadMore };
  if (!current) return { status: 'searching', matches: [], total: 0, capped: false, more: false, error: null, loadMore };
  return { ...current, loadMore };
}

/** The count as shown: "12 matches", "1000+ matches". */
export function matchCountText(total: number, capped: boolean): string {
  return `${total.toLocaleString()}${capped ? '+' : ''} match${total === 1 && !capped ? '' : 'es'}`;
}
