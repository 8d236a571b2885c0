// @vitest-environment jsdom
// The whole-log download: pages oldest first (fromStart, then sinceCursor of
// the last record) into a sink, never the whole log at once; a server without
// fromStart (400) is paged back from its tail to the start first.
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { CursorRecord } from '../api/logTypes';
import { downloadWholeLog, type LogSink } from './logDownload';

const cur = (i: number) => `1764601000.${String(i).padStart(9, '0')}-0`;
const rec = (i: number): CursorRecord => ({ stream: i % 3 ? 'stdout' : 'stderr', message: `m${i}`, pod: 'p', cursor: cur(i) });
const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status });
const params = (url: string) => Object.fromEntries(new URL(url, 'http://x').searchParams);

/** A server with `n` records answering plain reads of `tail` records: fromStart, sinceCursor, beforeCursor, the tail. */
function server(n: number, { fromStart = true } = {}) {
  const all = Array.from({ length: n }, (_, i) => rec(i + 1));
  const calls: Array<Record<string, string>> = [];
  vi.stubGlobal('fetch', async (url: string) => {
    const p = params(url);
    calls.push(p);
    const tail = Number(p.tail);
    let from: number;
    let to: number;
    let truncated: boolean;
    if (p.fromStart) {
      if (!fromStart) return json({ error: { code: 400, reason: 'BadRequest', message: 'unknown parameter "fromStart"' } }, 400);
      [from, to] = [0, Math.min(n, tail)];
      truncated = to < n;
    } else if (p.sinceCursor) {
      const at = all.findIndex((r) => r.cursor === p.sinceCursor) + 1;
      [from, to] = [at, Math.min(n, at + tail)];
      truncated = to < n;
    } else {
      const end = p.beforeCursor ? all.findIndex((r) => r.cursor === p.beforeCursor) : n;
      [from, to] = [Math.max(0, end - tail), end];
      truncated = from > 0;
    }
    return json({ kind: 'RunLog', records: all.slice(from, to), truncated, ...(truncated ? { truncatedBy: 'tailLines' } : {}), notes: [] });
  });
  return calls;
}

function sink() {
  const writes: string[] = [];
  let closed = false;
  let aborted = false;
  const s: LogSink = {
    write: async (t) => void writes.push(t),
    close: async () => void (closed = true),
    abort: async () => void (aborted = true),
  };
  return { s, writes, state: () => ({ closed, aborted }) };
}

const expected = (n: number) => Array.from({ length: n }, (_, i) => rec(i + 1)).map((r) => (r.stream === 'stderr' ? `[stderr] ${r.message}\n` : `${r.message}\n`)).join('');

afterEach(() => vi.unstubAllGlobals());

describe('downloadWholeLog', () => {
  it('pages forward from the start, 500 records a page, one write a page', async () => {
    const calls = server(1234);
    const out = sink();
    const progress: number[] = [];
    const got = await downloadWholeLog('ns', 'r', out.s, { format: 'text', timestamps: false, signal: new AbortController().signal, onProgress: (n) => progress.push(n) });
    expect(got).toEqual({ records: 1234, incomplete: false });
    expect(out.writes.join('')).toBe(expected(1234));
    expect(out.writes).toHaveLength(3);
    expect(progress).toEqual([500, 1000, 1234]);
    expect(calls).toEqual([
      { tail: '500', fromStart: 'true' },
      { tail: '500', sinceCursor: cur(500) },
      { tail: '500', sinceCursor: cur(1000) },
    ]);
    expect(out.state()).toEqual({ closed: true, aborted: false });
  });

  it('without fromStart on the server, finds the start by paging back, then pages forward', async () => {
    const calls = server(1234, { fromStart: false });
    const out = sink();
    const got = await downloadWholeLog('ns', 'r', out.s, { format: 'text', timestamps: false, signal: new AbortController().signal, onProgress: () => undefined });
    expect(got.records).toBe(1234);
    expect(out.writes.join('')).toBe(expected(1234));
    expect(calls.map((c) => c.beforeCursor ?? c.sinceCursor ?? (c.fromStart ? 'fromStart' : 'tail'))).toEqual(['fromStart', 'tail', cur(735), cur(235), cur(234), cur(734)]);
  });

  it('writes NDJSON records as they came; a short log is one page', async () => {
    server(3);
    const out = sink();
    await downloadWholeLog('ns', 'r', out.s, { format: 'ndjson', timestamps: false, signal: new AbortController().signal, onProgress: () => undefined });
    expect(out.writes.join('').trim().split('\n').map((l) => JSON.parse(l))).toEqual([rec(1), rec(2), rec(3)]);
  });

  it('stops on cancel and aborts the sink', async () => {
    server(5000);
    const out = sink();
    const ctrl = new AbortController();
    const run = downloadWholeLog('ns', 'r', out.s, { format: 'text', timestamps: false, signal: ctrl.signal, onProgress: (n) => n >= 1000 && ctrl.abort() });
    await expect(run).rejects.toThrow('cancelled');
    expect(out.state()).toEqual({ closed: false, aborted: true });
    expect(out.writes.length).toBeLessThan(10);
  });
});
