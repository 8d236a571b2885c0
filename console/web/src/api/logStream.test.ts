// @vitest-environment jsdom
import { act, renderHook, waitFor } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LogBuffer, backoffMs, useRunLogStream, type RunLogStreamOptions } from './logStream';
// Records of a server without cursors: the fallback the viewer keeps.
import type { CursorRecord as LogRecord } from './logTypes';

const rec = (message: string, s?: number): LogRecord => ({
  stream: 'stdout',
  message,
  pod: 'pool-0',
  ...(s !== undefined ? { time: `2025-01-01T00:00:${String(s).padStart(2, '0')}Z` } : {}),
});
const line = (r: LogRecord) => `${JSON.stringify(r)}\n`;

/** A follow answer the test writes into and closes. */
class LiveBody {
  private ctrl!: ReadableStreamDefaultController<Uint8Array>;
  readonly response: Response;
  constructor() {
    const stream = new ReadableStream<Uint8Array>({ start: (c) => void (this.ctrl = c) });
    this.response = new Response(stream, { status: 200, headers: { 'Content-Type': 'application/x-ndjson' } });
  }
  send(...rs: LogRecord[]) {
    this.ctrl.enqueue(new TextEncoder().encode(rs.map(line).join('')));
  }
  close() {
    this.ctrl.close();
  }
}

interface Call {
  url: string;
  signal: AbortSignal | undefined;
}

/**
 * `fetch` answered by `answer` in call order; calls are recorded. A follow
 * request's signal aborts its body like a real connection would.
 */
function stubFetch(answer: (url: string, n: number) => Response) {
  const calls: Call[] = [];
  vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
    calls.push({ url, signal: init.signal ?? undefined });
    return answer(url, calls.length - 1);
  });
  return calls;
}

const json = (body: unknown, status = 200) => new Response(JSON.stringify(body), { status });
const tailOf = (...rs: LogRecord[]) => json({ metadata: { name: 'r', namespace: 'ns', uid: 'u' }, records: rs, truncated: true, truncatedBy: 'tailLines' });
const messages = (rs: readonly LogRecord[]) => rs.map((r) => r.message);

function render(opts: RunLogStreamOptions) {
  return renderHook((o: RunLogStreamOptions) => useRunLogStream('team-a', 'build-1', o), { initialProps: opts });
}

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('useRunLogStream: tail', () => {
  it('reads the bounded tail once and reports how it was cut', async () => {
    const calls = stubFetch(() => tailOf(rec('a', 1), rec('b', 2)));
    const { result } = render({ tail: 20, follow: false, active: true });
    expect(result.current.status).toBe('loading');
    await waitFor(() => expect(result.current.status).toBe('ready'));
    expect(messages(result.current.records.lines)).toEqual(['a', 'b']);
    expect(result.current.truncated).toEqual({ cut: true, by: 'tailLines' });
    expect(calls.map((c) => c.url)).toEqual(['/api/namespaces/team-a/runs/build-1/logs?tail=20']);
  });

  it('reads again on reload() and on a new tail, replacing what was shown', async () => {
    const calls = stubFetch((_url, n) => tailOf(rec(`read ${n}`)));
    const { result, rerender } = render({ tail: 20, follow: false, active: true });
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['read 0']));
    act(() => result.current.reload());
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['read 1']));
    rerender({ tail: 5, follow: false, active: true });
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['read 2']));
    expect(calls.map((c) => c.url.split('?')[1])).toEqual(['tail=20', 'tail=20', 'tail=5']);
  });

  it('shows the error of a failed read and no lines', async () => {
    stubFetch(() => json({ error: { code: 409, reason: 'Conflict', message: 'no Pod yet' } }, 409));
    const { result } = render({ tail: 20, follow: false, active: true });
    await waitFor(() => expect(result.current.status).toBe('error'));
    expect(result.current.error).toMatchObject({ status: 409, message: 'no Pod yet' });
    expect(result.current.records.lines).toEqual([]);
  });
});

describe('useRunLogStream: follow', () => {
  it('connects, then appends records as they arrive and counts each batch', async () => {
    const body = new LiveBody();
    const calls = stubFetch(() => body.response);
    const appended: number[] = [];
    const { result } = render({ tail: 50, follow: true, active: true, onAppend: (n) => appended.push(n) });
    expect(result.current.status).toBe('connecting');
    await waitFor(() => expect(result.current.status).toBe('following'));
    expect(calls[0]!.url).toBe('/api/namespaces/team-a/runs/build-1/logs?follow=true&tail=50');
    body.send(rec('a', 1), rec('b', 2));
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['a', 'b']));
    body.send(rec('c', 3));
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['a', 'b', 'c']));
    expect(appended.reduce((a, b) => a + b, 0)).toBe(3);
  });

  it('reconnects after the stream closes, with back-off, without repeating what it has', async () => {
    const first = new LiveBody();
    const second = new LiveBody();
    const calls = stubFetch((_url, n) => (n === 0 ? first : second).response);
    const { result } = render({ tail: 50, follow: true, active: true });
    await waitFor(() => expect(result.current.status).toBe('following'));
    first.send(rec('a', 1), rec('b', 2), rec('c', 3));
    await waitFor(() => expect(result.current.records.lines).toHaveLength(3));
    first.close();
    await waitFor(() => expect(result.current.status).toBe('reconnecting'));
    expect(result.current.retryIn).toBe(backoffMs(1) / 1000);
    expect(result.current.error).toBeNull();
    // The reconnect re-sends the tail: b and c are already shown, d is new.
    await waitFor(() => expect(calls).toHaveLength(2), { timeout: 3000 });
    await waitFor(() => expect(result.current.status).toBe('following'));
    second.send(rec('b', 2), rec('c', 3), rec('d', 4));
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['a', 'b', 'c', 'd']));
    expect(result.current.records.gaps.size).toBe(0);
  });

  it('marks a gap when the reconnect does not overlap what was shown', async () => {
    const first = new LiveBody();
    const second = new LiveBody();
    const calls = stubFetch((_url, n) => (n === 0 ? first : second).response);
    const { result } = render({ tail: 50, follow: true, active: true });
    await waitFor(() => expect(result.current.status).toBe('following'));
    first.send(rec('a', 1), rec('b', 2));
    await waitFor(() => expect(result.current.records.lines).toHaveLength(2));
    first.close();
    await waitFor(() => expect(calls).toHaveLength(2), { timeout: 3000 });
    second.send(rec('x', 8), rec('y', 9));
    await waitFor(() => expect(messages(result.current.records.lines)).toEqual(['a', 'b', 'x', 'y']));
    expect([...result.current.records.gaps]).toEqual([2]);
  });

  it('ends, and does not reconnect, when the stream of a finished Run closes', async () => {
    const body = new LiveBody();
    const calls = stubFetch(() => body.response);
    const { result } = render({ tail: 50, follow: true, active: false });
    await waitFor(() => expect(result.current.status).toBe('following'));
    body.send(rec('a', 1));
    body.close();
    await waitFor(() => expect(result.current.status).toBe('ended'));
    await new Promise((r) => setTimeout(r, backoffMs(1) + 200));
    expect(calls).toHaveLength(1);
    expect(result.current.status).toBe('ended');
  });

  it('stops on a 403 and keeps the error', async () => {
    const calls = stubFetch(() => json({ error: { code: 403, reason: 'Forbidden', message: 'cannot get runs/log' } }, 403));
    const { result } = render({ tail: 50, follow: true, active: true });
    await waitFor(() => expect(result.current.status).toBe('error'));
    expect(result.current.error).toMatchObject({ status: 403 });
    await new Promise((r) => setTimeout(r, backoffMs(1) + 200));
    expect(calls).toHaveLength(1);
  });

  it('keeps trying while the Run has no Pod yet (409)', async () => {
    const calls = stubFetch(() => json({ error: { code: 409, reason: 'Conflict', message: 'no Pod yet' } }, 409));
    const { result } = render({ tail: 50, follow: true, active: true });
    await waitFor(() => expect(result.current.status).toBe('reconnecting'));
    expect(result.current.error).toMatchObject({ status: 409 });
    await waitFor(() => expect(calls).toHaveLength(2), { timeout: 3000 });
  });

  it('closes the stream when the viewer goes away or stops following', async () => {
    const bodies = [new LiveBody(), new LiveBody()];
    const calls = stubFetch((url, n) => (url.includes('follow=true') ? bodies[n === 0 ? 0 : 1]!.response : tailOf(rec('a', 1))));
    const { result, rerender, unmount } = render({ tail: 50, follow: true, active: true });
    await waitFor(() => expect(result.current.status).toBe('following'));
    rerender({ tail: 50, follow: false, active: true });
    expect(calls[0]!.signal?.aborted).toBe(true);
    await waitFor(() => expect(result.current.status).toBe('ready'));
    rerender({ tail: 50, follow: true, active: true });
    await waitFor(() => expect(calls.filter((c) => c.url.includes('follow=true'))).toHaveLength(2));
    const second = calls[calls.length - 1]!;
    expect(second.signal?.aborted).toBe(false);
    unmount();
    expect(second.signal?.aborted).toBe(true);
  });
});

describe('LogBuffer', () => {
  it('appends on the next frame, drops the oldest beyond its bound and moves the gap marks', async () => {
    const b = new LogBuffer(3);
    const seen: number[] = [];
    b.onAppend((n) => seen.push(n));
    b.enqueue([rec('a'), rec('b')]);
    b.markGap();
    b.enqueue([rec('c'), rec('d'), rec('e')]);
    expect(b.snapshot().lines).toEqual([]);
    await new Promise((r) => window.requestAnimationFrame(r));
    const s = b.snapshot();
    expect(messages(s.lines)).toEqual(['c', 'd', 'e']);
    expect(s.dropped).toBe(2);
    expect([...s.gaps]).toEqual([0]);
    expect(seen).toEqual([5]);
  });

  it('gives a new snapshot for every change and replaces everything on replace()', () => {
    const b = new LogBuffer();
    const before = b.snapshot();
    b.enqueue([rec('a')]);
    b.flush();
    const after = b.snapshot();
    expect(after).not.toBe(before);
    expect(after.version).toBe(before.version + 1);
    b.replace([rec('z')]);
    expect(messages(b.snapshot().lines)).toEqual(['z']);
    expect(b.snapshot().dropped).toBe(0);
  });
});

describe('backoffMs', () => {
  it('doubles from 1 s to at most 10 s', () => {
    expect([1, 2, 3, 4, 5, 6, 10].map(backoffMs)).toEqual([1000, 2000, 4000, 8000, 10000, 10000, 10000]);
  });
});
