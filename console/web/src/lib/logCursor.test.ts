// @vitest-environment jsdom
// The Run-log cursor contract as the UI uses it (fixtures in the shapes of
// /work contract: `cursor` on every record, `sinceCursor` / `beforeCursor`,
// a final `Status` line on every follow the server ends).
import { act, renderHook, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LogBuffer, backoffMs, useRunLogStream, type RunLogStreamOptions } from '../api/logStream';
import type { CursorRecord } from '../api/logTypes';
import { cursorHash, indexOfCursor, parseCursorHash, parseLineHash, recordHash } from './logs';

const cur = (s: number, seq = 0) => `17646010${String(s).padStart(2, '0')}.123456789-${seq}`;
const rec = (message: string, s: number, seq = 0): CursorRecord => ({
  stream: 'stdout',
  message,
  pod: 'pool-0',
  time: `2025-12-01T15:00:${String(s).padStart(2, '0')}.123456789Z`,
  cursor: cur(s, seq),
});
const status = (code: number, reason: string, message: string) => ({
  kind: 'Status',
  apiVersion: 'v1',
  metadata: {},
  status: code === 200 ? 'Success' : 'Failure',
  code,
  reason,
  message,
});

class LiveBody {
  private ctrl!: ReadableStreamDefaultController<Uint8Array>;
  readonly response: Response;
  constructor() {
    const stream = new ReadableStream<Uint8Array>({ start: (c) => void (this.ctrl = c) });
    this.response = new Response(stream, { status: 200, headers: { 'Content-Type': 'application/x-ndjson' } });
  }
  send(...lines: unknown[]) {
    this.ctrl.enqueue(new TextEncoder().encode(lines.map((l) => `${JSON.stringify(l)}\n`).join('')));
  }
  close() {
    this.ctrl.close();
  }
}

function stubFetch(answer: (url: string, n: number) => Response) {
  const calls: string[] = [];
  vi.stubGlobal('fetch', async (url: string) => {
    calls.push(url);
    return answer(url, calls.length - 1);
  });
  return calls;
}

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status });
const page = (truncated: boolean, ...rs: CursorRecord[]) =>
  json({ kind: 'RunLog', metadata: { name: 'r', namespace: 'ns', uid: 'u' }, pod: 'pool-0', records: rs, truncated, ...(truncated ? { truncatedBy: 'tailLines' } : {}) });
const messages = (rs: readonly CursorRecord[]) => rs.map((r) => r.message);
const params = (url: string) => Object.fromEntries(new URL(url, 'http://x').searchParams);

function render(opts: RunLogStreamOptions) {
  return renderHook((o: RunLogStreamOptions) => useRunLogStream('team-a', 'build-1', o), { initialProps: opts });
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('follow with cursors', () => {
  it('resumes a dropped follow exactly after the last record shown (sinceCursor), no tail re-read', async () => {
    const first = new LiveBody();
    const second = new LiveBody();
    const calls = stubFetch((_u, n) => (n === 0 ? first : second).response);
    const { result } = render({ tail: 50, follow: true, active: true });
    await waitFor(() => expect(result.current.status).toBe('following'));
    first.send(rec('a', 1), rec('b', 2), rec('b', 2, 1));
    await waitFor(() => expect(result.current.records.lines).toHaveLength(3));
    first.close();
    await waitFor(() => expect(calls).toHaveLength(2), { timeout: 3000 });
    expect(params(calls[0]!)).toEqual({ follow: 'true', tail: '50' });
    expect(params(calls[1]!)).toEqual({ follow: 'true', sinceCursor: cur(2, 1) });
    second.send(rec('c', 3));
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['a', 'b', 'b', 'c']));
    expect(result.current.records.gaps.size).toBe(0);
  });

  it('a follow turned on after a tail read starts after its last record', async () => {
    const body = new LiveBody();
    const calls = stubFetch((u) => (u.includes('follow=true') ? body.response : page(true, rec('a', 1), rec('b', 2))));
    const { result, rerender } = render({ tail: 20, follow: false, active: true });
    await waitFor(() => expect(result.current.status).toBe('ready'));
    rerender({ tail: 20, follow: true, active: true });
    await waitFor(() => expect(result.current.status).toBe('following'));
    expect(params(calls[1]!)).toEqual({ follow: 'true', sinceCursor: cur(2) });
    body.send(rec('c', 3));
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['a', 'b', 'c']));
  });

  it('stops and says the Run finished on a final Status Success', async () => {
    const body = new LiveBody();
    const calls = stubFetch(() => body.response);
    const { result } = render({ tail: 50, follow: true, active: true });
    await waitFor(() => expect(result.current.status).toBe('following'));
    body.send(rec('a', 1), status(200, 'RunFinished', 'the Run finished: Succeeded'));
    body.close();
    await waitFor(() => expect(result.current.status).toBe('finished'));
    expect(result.current.end).toMatchObject({ reason: 'RunFinished', message: 'the Run finished: Succeeded' });
    expect(messages(result.current.records.lines)).toEqual(['a']);
    await new Promise((r) => setTimeout(r, backoffMs(1) + 200));
    expect(calls).toHaveLength(1);
  });

  it('reconnects after a Status Failure 503 (FellBehind) from the last cursor, and stops on a 404', async () => {
    const bodies = [new LiveBody(), new LiveBody()];
    const calls = stubFetch((_u, n) => bodies[n]!.response);
    const { result } = render({ tail: 50, follow: true, active: true });
    await waitFor(() => expect(result.current.status).toBe('following'));
    bodies[0]!.send(rec('a', 1), status(503, 'FellBehind', 'the follower fell behind'));
    bodies[0]!.close();
    await waitFor(() => expect(result.current.status).toBe('reconnecting'));
    expect(result.current.error).toMatchObject({ status: 503, reason: 'FellBehind' });
    await waitFor(() => expect(calls).toHaveLength(2), { timeout: 3000 });
    expect(params(calls[1]!)).toEqual({ follow: 'true', sinceCursor: cur(1) });
    bodies[1]!.send(rec('b', 2), status(404, 'NotFound', 'the Pod pool-0 was deleted'));
    bodies[1]!.close();
    await waitFor(() => expect(result.current.status).toBe('error'));
    expect(result.current.error).toMatchObject({ status: 404, message: 'the Pod pool-0 was deleted' });
    expect(messages(result.current.records.lines)).toEqual(['a', 'b']);
    await new Promise((r) => setTimeout(r, backoffMs(1) + 200));
    expect(calls).toHaveLength(2);
  });
});

describe('load older', () => {
  it('pages back before the first record (beforeCursor) and ends when the Run start is reached', async () => {
    const calls = stubFetch((u) => {
      const p = params(u);
      if (p.beforeCursor === cur(3)) return page(true, rec('b', 2));
      if (p.beforeCursor === cur(2)) return page(false, rec('a', 1));
      return page(true, rec('c', 3), rec('d', 4));
    });
    const { result } = render({ tail: 2, follow: false, active: false });
    await waitFor(() => expect(result.current.status).toBe('ready'));
    expect(result.current.older.available).toBe(true);
    act(() => result.current.loadOlder());
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['b', 'c', 'd']));
    expect(result.current.records.prepended).toBe(1);
    expect(result.current.older.available).toBe(true);
    act(() => result.current.loadOlder());
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['a', 'b', 'c', 'd']));
    expect(result.current.older.available).toBe(false);
    expect(calls.map((u) => params(u))).toEqual([{ tail: '2' }, { tail: '2', beforeCursor: cur(3) }, { tail: '2', beforeCursor: cur(2) }]);
  });

  it('offers nothing older when the tail held the whole log', async () => {
    stubFetch(() => page(false, rec('a', 1)));
    const { result } = render({ tail: 20, follow: false, active: false });
    await waitFor(() => expect(result.current.status).toBe('ready'));
    expect(result.current.older.available).toBe(false);
  });
});

describe('deep links by cursor', () => {
  it('opens at the linked record however many lines came after it', async () => {
    const calls = stubFetch((u) => {
      const p = params(u);
      if (p.beforeCursor === cur(40)) return page(true, rec('context', 39));
      if (p.sinceCursor === cur(39)) return page(true, rec('the linked line', 40), rec('next', 41));
      return page(true, rec('much later', 59));
    });
    const { result } = render({ tail: 100, follow: false, active: true, anchor: cur(40) });
    await waitFor(() => expect(result.current.status).toBe('ready'));
    expect(messages(result.current.records.lines)).toEqual(['context', 'the linked line', 'next']);
    expect(result.current.anchor).toEqual({ cursor: cur(40), found: true });
    expect(calls.map((u) => params(u))).toEqual([
      { tail: '50', beforeCursor: cur(40) },
      { tail: '100', sinceCursor: cur(39) },
    ]);
  });

  it('a deep link to the first record reads the tail and pages back to it', async () => {
    stubFetch((u) => {
      const p = params(u);
      if (p.beforeCursor === cur(1)) return page(false);
      if (p.beforeCursor === cur(3)) return page(false, rec('first', 1), rec('second', 2));
      return page(true, rec('third', 3));
    });
    const { result } = render({ tail: 100, follow: false, active: true, anchor: cur(1) });
    await waitFor(() => expect(result.current.status).toBe('ready'));
    expect(messages(result.current.records.lines)).toEqual(['first', 'second', 'third']);
    expect(result.current.anchor?.found).toBe(true);
  });

  it('a following deep link continues after the window it read', async () => {
    const body = new LiveBody();
    const calls = stubFetch((u) => {
      const p = params(u);
      if (p.follow) return body.response;
      if (p.beforeCursor) return page(true, rec('context', 9));
      return page(false, rec('linked', 10));
    });
    const { result } = render({ tail: 100, follow: true, active: true, anchor: cur(10) });
    await waitFor(() => expect(result.current.status).toBe('following'));
    expect(params(calls[2]!)).toEqual({ follow: 'true', sinceCursor: cur(10) });
    body.send(rec('live', 11));
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['context', 'linked', 'live']));
  });

  it('fragments: #L<cursor> names a record, #L12 stays a line number', () => {
    expect(parseCursorHash(cursorHash(cur(5, 2)))).toBe(cur(5, 2));
    expect(parseCursorHash(`#S2L${cur(5)}`, 'S2L')).toBe(cur(5));
    expect(parseCursorHash('#L12')).toBeNull();
    expect(parseCursorHash('#L1.2-3')).toBeNull();
    expect(parseLineHash(cursorHash(cur(5)))).toBeNull();
    expect(recordHash(rec('x', 5), 7)).toBe(`#L${cur(5)}`);
    expect(recordHash({ stream: 'stdout', message: 'x', pod: 'p' }, 7)).toBe('#L7');
    expect(indexOfCursor([rec('a', 1), rec('b', 2)], cur(2))).toBe(1);
  });
});

describe('LogBuffer.prepend', () => {
  it('puts records in front, counts them and moves the gap marks', () => {
    const b = new LogBuffer();
    b.replace([rec('c', 3)]);
    b.markGap();
    b.enqueue([rec('d', 4)]);
    b.flush();
    b.prepend([rec('a', 1), rec('b', 2)]);
    const s = b.snapshot();
    expect(messages(s.lines)).toEqual(['a', 'b', 'c', 'd']);
    expect(s.prepended).toBe(2);
    expect([...s.gaps]).toEqual([3]);
  });
});

describe('a Run that finishes while followed', () => {
  it('follows again after the last record and shows the final Status line', async () => {
    const bodies = [new LiveBody(), new LiveBody()];
    const calls = stubFetch((_u, n) => bodies[n]!.response);
    const { result, rerender } = render({ tail: 50, follow: true, active: true });
    await waitFor(() => expect(result.current.status).toBe('following'));
    bodies[0]!.send(rec('a', 1));
    await waitFor(() => expect(result.current.records.lines).toHaveLength(1));
    // The Run detail now says the Run finished: the open stream is left and read again.
    rerender({ tail: 50, follow: true, active: false });
    await waitFor(() => expect(calls).toHaveLength(2));
    expect(params(calls[1]!)).toEqual({ follow: 'true', sinceCursor: cur(1) });
    bodies[1]!.send(rec('b', 2), status(200, 'RunFinished', 'the Run finished: Succeeded'));
    bodies[1]!.close();
    await waitFor(() => expect(result.current.status).toBe('finished'));
    expect(messages(result.current.records.lines)).toEqual(['a', 'b']);
  });
});

describe('gaps and the top of the log', () => {
  const gone = () =>
    json({ error: { code: 410, reason: 'Gone', message: 'the record of sinceCursor is no longer in the Pod log' } }, 410);

  it('a whole Run in one read is the start of the log; a cut one offers Load older', async () => {
    stubFetch(() => page(false, rec('a', 1), rec('b', 2)));
    const { result } = render({ tail: 50, follow: false, active: false });
    await waitFor(() => expect(result.current.status).toBe('ready'));
    expect(result.current.older).toMatchObject({ available: false, start: true, gone: false });
  });

  it('Load older answered 410 says older records are gone and stops offering Load older', async () => {
    const calls = stubFetch((u) => (params(u).beforeCursor ? gone() : page(true, rec('b', 2), rec('c', 3))));
    const { result } = render({ tail: 2, follow: false, active: false });
    await waitFor(() => expect(result.current.older.available).toBe(true));
    act(() => result.current.loadOlder());
    await waitFor(() => expect(result.current.older.gone).toBe(true));
    expect(result.current.older).toMatchObject({ available: false, loading: false, start: false, error: null });
    expect(params(calls[1]!)).toEqual({ tail: '2', beforeCursor: cur(2) });
    expect(messages(result.current.records.lines)).toEqual(['b', 'c']);
  });

  it('Load older reaching the Run start says so', async () => {
    stubFetch((u) => (params(u).beforeCursor ? page(false, rec('a', 1)) : page(true, rec('b', 2))));
    const { result } = render({ tail: 1, follow: false, active: false });
    await waitFor(() => expect(result.current.older.available).toBe(true));
    act(() => result.current.loadOlder());
    await waitFor(() => expect(result.current.older.start).toBe(true));
    expect(result.current.older.available).toBe(false);
    expect(messages(result.current.records.lines)).toEqual(['a', 'b']);
  });

  it('a follow whose resume cursor is gone (410) restarts from the tail behind a gap mark', async () => {
    const first = new LiveBody();
    const third = new LiveBody();
    const calls = stubFetch((_u, n) => (n === 0 ? first.response : n === 1 ? gone() : third.response));
    const { result } = render({ tail: 10, follow: true, active: true });
    await waitFor(() => expect(result.current.status).toBe('following'));
    first.send(rec('a', 1), rec('b', 2));
    await waitFor(() => expect(result.current.records.lines).toHaveLength(2));
    first.close();
    await waitFor(() => expect(calls).toHaveLength(3), { timeout: 5000 });
    expect(params(calls[1]!)).toEqual({ follow: 'true', sinceCursor: cur(2) });
    expect(params(calls[2]!)).toEqual({ follow: 'true', tail: '10' });
    third.send(rec('x', 40), rec('y', 41));
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['a', 'b', 'x', 'y']));
    expect([...result.current.records.gaps]).toEqual([2]);
  });
});
