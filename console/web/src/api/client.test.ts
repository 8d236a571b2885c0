import { afterEach, describe, expect, it, vi } from 'vitest';
import {
  followRunLog,
  getRun,
  getRunLogTail,
  listRuns,
  login,
  onUnauthorized,
  operationsSocketUrl,
} from './client';
import { ApiError } from './errors';
// Records of a server without cursors: the fallback the viewer keeps.
import type { CursorRecord as LogRecord } from './logTypes';

/** Replaces `fetch` with `answer`, recording every call. */
function stubFetch(answer: (url: string, init: RequestInit) => Response | Promise<Response>) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  vi.stubGlobal('fetch', async (url: string, init: RequestInit) => {
    calls.push({ url, init });
    return answer(url, init);
  });
  return calls;
}

const json = (body: unknown, status = 200) =>
  new Response(JSON.stringify(body), { status, headers: { 'Content-Type': 'application/json' } });

/** A streamed body that sends `chunks` one per read, then ends (or fails with `fail`). */
function streamed(chunks: string[], fail?: Error): Response {
  const enc = new TextEncoder();
  const left = [...chunks];
  return new Response(
    new ReadableStream<Uint8Array>({
      pull(c) {
        const next = left.shift();
        if (next !== undefined) c.enqueue(enc.encode(next));
        else if (fail) c.error(fail);
        else c.close();
      },
    }),
    { status: 200, headers: { 'Content-Type': 'application/x-ndjson' } },
  );
}

const rec = (message: string): LogRecord => ({ stream: 'stdout', message, pod: 'pool-0' });

afterEach(() => {
  vi.unstubAllGlobals();
});

describe('requests', () => {
  it('sends the session cookie, asks for JSON and encodes path segments', async () => {
    const calls = stubFetch(() => json({ metadata: { name: 'a b' } }));
    await getRun('team-a', 'a b/c');
    expect(calls).toHaveLength(1);
    expect(calls[0]!.url).toBe('/api/namespaces/team-a/runs/a%20b%2Fc');
    expect(calls[0]!.init.credentials).toBe('same-origin');
    expect(calls[0]!.init.headers).toMatchObject({ Accept: 'application/json' });
  });

  it('leaves unset and empty list filters out of the query', async () => {
    const calls = stubFetch(() => json({ items: [] }));
    await listRuns('team-a', { phase: 'Running', labelSelector: '', limit: 50 });
    expect(calls[0]!.url).toBe('/api/namespaces/team-a/runs?phase=Running&limit=50');
  });

  it('reads a tail with ?tail=N', async () => {
    const calls = stubFetch(() => json({ records: [rec('a')], truncated: false }));
    const log = await getRunLogTail('team-a', 'build-1', 20);
    expect(calls[0]!.url).toBe('/api/namespaces/team-a/runs/build-1/logs?tail=20');
    expect(log.records.map((r) => r.message)).toEqual(['a']);
  });

  it('sends the token only in the login body', async () => {
    const calls = stubFetch(() => json({ authenticated: true, username: 'viewer' }));
    await login('secret-token');
    expect(calls[0]!.url).toBe('/api/session');
    expect(calls[0]!.init.method).toBe('POST');
    expect(JSON.parse(String(calls[0]!.init.body))).toEqual({ token: 'secret-token' });
    expect(JSON.stringify(calls[0]!.init.headers)).not.toContain('secret-token');
  });
});

describe('errors', () => {
  it('turns an {"error":...} answer into an ApiError with the server access check', async () => {
    const access = { verb: 'get', group: 'kruntimes.io', resource: 'runs', namespace: 'team-a', name: 'x' };
    stubFetch(() => json({ error: { code: 403, reason: 'Forbidden', message: 'runs "x" is forbidden', access } }, 403));
    const e = await getRun('team-a', 'x').catch((e: unknown) => e);
    expect(e).toBeInstanceOf(ApiError);
    expect((e as ApiError).isForbidden).toBe(true);
    expect((e as ApiError).message).toBe('runs "x" is forbidden');
    expect((e as ApiError).access).toEqual(access);
  });

  it('names the access it asked for when the answer has no body', async () => {
    stubFetch(() => new Response('', { status: 403 }));
    const e = (await getRunLogTail('team-a', 'x', 5).catch((e: unknown) => e)) as ApiError;
    expect(e.status).toBe(403);
    expect(e.access).toMatchObject({ verb: 'get', group: 'logs.kruntimes.io', resource: 'runs', subresource: 'log', name: 'x' });
  });

  it('reports an unreachable Console as status 0', async () => {
    vi.stubGlobal('fetch', () => Promise.reject(new TypeError('Failed to fetch')));
    const e = (await getRun('team-a', 'x').catch((e: unknown) => e)) as ApiError;
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(0);
  });

  it('tells the unauthorized listeners about a 401, and no one after they unsubscribe', async () => {
    stubFetch(() => json({ error: { code: 401, reason: 'Unauthorized', message: 'log in' } }, 401));
    const heard = vi.fn();
    const off = onUnauthorized(heard);
    await getRun('team-a', 'x').catch(() => {});
    expect(heard).toHaveBeenCalledTimes(1);
    off();
    await getRun('team-a', 'x').catch(() => {});
    expect(heard).toHaveBeenCalledTimes(1);
  });

  it('does not tell the unauthorized listeners about a 403', async () => {
    stubFetch(() => json({ error: { code: 403, reason: 'Forbidden', message: 'no' } }, 403));
    const heard = vi.fn();
    const off = onUnauthorized(heard);
    await getRun('team-a', 'x').catch(() => {});
    off();
    expect(heard).not.toHaveBeenCalled();
  });
});

describe('followRunLog', () => {
  const follow = (signal = new AbortController().signal) => {
    const got: LogRecord[] = [];
    const opened = vi.fn();
    const done = followRunLog('team-a', 'build-1', 50, (r) => got.push(r), signal, opened);
    return { got, opened, done };
  };

  it('asks for NDJSON with follow and tail, and hands over records split across chunks', async () => {
    const calls = stubFetch(() => streamed(['{"stream":"stdout","message":"a","pod":"p"}\n{"stream":"std', 'err","message":"b","pod":"p"}\n{"stream":"stdout","message":"c","pod":"p"}']));
    const { got, opened, done } = follow();
    await done;
    expect(calls[0]!.url).toBe('/api/namespaces/team-a/runs/build-1/logs?follow=true&tail=50');
    expect(calls[0]!.init.headers).toMatchObject({ Accept: 'application/x-ndjson' });
    expect(opened).toHaveBeenCalledTimes(1);
    expect(got.map((r) => [r.stream, r.message])).toEqual([
      ['stdout', 'a'],
      ['stderr', 'b'],
      ['stdout', 'c'],
    ]);
  });

  it('skips a torn line and goes on', async () => {
    stubFetch(() => streamed(['{"message":"a","stream":"stdout","pod":"p"}\n{"mess\n{"message":"b","stream":"stdout","pod":"p"}\n']));
    const { got, done } = follow();
    await done;
    expect(got.map((r) => r.message)).toEqual(['a', 'b']);
  });

  it('rejects with the ApiError of a final {"error":...} line, after the records before it', async () => {
    stubFetch(() => streamed(['{"message":"a","stream":"stdout","pod":"p"}\n{"error":{"code":503,"reason":"ServiceUnavailable","message":"pod log closed"}}\n']));
    const { got, done } = follow();
    const e = (await done.catch((e: unknown) => e)) as ApiError;
    expect(got.map((r) => r.message)).toEqual(['a']);
    expect(e).toBeInstanceOf(ApiError);
    expect(e.status).toBe(503);
    expect(e.message).toBe('pod log closed');
  });

  it('rejects with the HTTP error before opening', async () => {
    stubFetch(() => json({ error: { code: 409, reason: 'Conflict', message: 'no Pod yet' } }, 409));
    const { opened, done } = follow();
    const e = (await done.catch((e: unknown) => e)) as ApiError;
    expect(e.status).toBe(409);
    expect(opened).not.toHaveBeenCalled();
  });

  it('reports an interrupted stream as StreamClosed', async () => {
    stubFetch(() => streamed(['{"message":"a","stream":"stdout","pod":"p"}\n'], new Error('connection reset')));
    const { got, done } = follow();
    const e = (await done.catch((e: unknown) => e)) as ApiError;
    expect(got.map((r) => r.message)).toEqual(['a']);
    expect(e.reason).toBe('StreamClosed');
  });

  it('resolves quietly when aborted', async () => {
    const ctrl = new AbortController();
    stubFetch((_url, init) => {
      expect(init.signal).toBe(ctrl.signal);
      ctrl.abort();
      return Promise.reject(new DOMException('aborted', 'AbortError'));
    });
    await expect(follow(ctrl.signal).done).resolves.toBeUndefined();
  });
});

describe('operations socket', () => {
  it('is same-origin, wss on an https page, with encoded segments', () => {
    vi.stubGlobal('window', { location: { protocol: 'https:', host: 'console.example:8443' } });
    expect(operationsSocketUrl('team-a', 'shell 1', 'u-1')).toBe('wss://console.example:8443/v1/namespaces/team-a/runs/shell%201/u-1/operations:ws');
    vi.stubGlobal('window', { location: { protocol: 'http:', host: '127.0.0.1:8080' } });
    expect(operationsSocketUrl('team-a', 'shell', 'u')).toBe('ws://127.0.0.1:8080/v1/namespaces/team-a/runs/shell/u/operations:ws');
  });
});
