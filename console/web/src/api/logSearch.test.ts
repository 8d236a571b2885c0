// @vitest-environment jsdom
// Search in the whole log, as the UI asks the server (runs/log?search=…):
// the count, the matches' cursors, the next page after the last match.
import { act, renderHook, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { matchCountText, useWholeLogSearch } from './logSearch';

const cur = (i: number) => `1764601000.${String(i).padStart(9, '0')}-0`;
const rec = (i: number, match = false) => ({ stream: 'stdout', message: `m${i}`, pod: 'p', cursor: cur(i), ...(match ? { match: true } : {}) });
const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status });
const params = (url: string) => Object.fromEntries(new URL(url, 'http://x').searchParams);

afterEach(() => vi.unstubAllGlobals());

describe('useWholeLogSearch', () => {
  it('asks the server, counts the whole log, and pages on after the last match', async () => {
    const calls: Array<Record<string, string>> = [];
    vi.stubGlobal('fetch', async (url: string) => {
      const p = params(url);
      calls.push(p);
      if (!p.sinceCursor)
        return json({ kind: 'RunLog', records: [rec(1), rec(2, true), rec(3), rec(7, true), rec(8)], truncated: true, truncatedBy: 'TailLines', search: { matches: 2, total: 1000, totalCapped: true } });
      return json({ kind: 'RunLog', records: [rec(11, true)], truncated: false, search: { matches: 1, total: 1000, totalCapped: true } });
    });
    const { result } = renderHook(() => useWholeLogSearch('team-a', 'build-1', 'needle', false, true));
    await waitFor(() => expect(result.current.status).toBe('ready'));
    expect(calls[0]).toEqual({ search: 'needle', ignoreCase: 'true', context: '2', tail: '100' });
    expect(result.current.matches.map((m) => m.cursor)).toEqual([cur(2), cur(7)]);
    expect(result.current).toMatchObject({ total: 1000, capped: true, more: true });
    await act(async () => void (await result.current.loadMore()));
    expect(calls[1]).toEqual({ search: 'needle', ignoreCase: 'true', context: '2', tail: '100', sinceCursor: cur(7) });
    expect(result.current.matches.map((m) => m.cursor)).toEqual([cur(2), cur(7), cur(11)]);
    expect(result.current.more).toBe(false);
  });

  it('sends regex=true, and does nothing while off or empty', async () => {
    const calls: string[] = [];
    vi.stubGlobal('fetch', async (url: string) => {
      calls.push(url);
      return json({ error: { code: 400, reason: 'BadRequest', message: 'search: the pattern does not compile' } }, 400);
    });
    const off = renderHook(() => useWholeLogSearch('team-a', 'build-1', 'x', false, false));
    const empty = renderHook(() => useWholeLogSearch('team-a', 'build-1', '', false, true));
    expect(off.result.current.status).toBe('idle');
    expect(empty.result.current.status).toBe('idle');
    const { result } = renderHook(() => useWholeLogSearch('team-a', 'build-1', '(', true, true));
    await waitFor(() => expect(result.current.status).toBe('error'));
    expect(calls).toHaveLength(1);
    expect(params(calls[0]!).regex).toBe('true');
    expect((result.current.error as Error).message).toContain('does not compile');
  });

  it('says the count as people read it', () => {
    expect(matchCountText(12, false)).toBe('12 matches');
    expect(matchCountText(1, false)).toBe('1 match');
    expect(matchCountText(1000, true)).toBe('1,000+ matches');
  });
});
