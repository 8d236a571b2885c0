import { describe, expect, it } from 'vitest';
import { ApiError } from './errors';
import { NamespaceWatch, staleKeys, type LiveState } from './watch';
import type { WatchKind } from './client';
import type { WatchLine } from './types';

type Call = Partial<Record<WatchKind, string | undefined>>;

/** A scripted watch: each connection plays its lines, then ends or fails. */
function scripted(plays: Array<{ lines: WatchLine[]; fail?: ApiError }>) {
  const calls: Call[] = [];
  let i = 0;
  const watch = async (_ns: string, kinds: Call, onLine: (l: WatchLine) => void, _signal: AbortSignal, onOpen?: () => void) => {
    calls.push({ ...kinds });
    const play = plays[i++];
    if (!play) throw new ApiError(403, 'Forbidden', 'stop here');
    if (play.fail && play.lines.length === 0) throw play.fail;
    onOpen?.();
    for (const l of play.lines) onLine(l);
    if (play.fail) throw play.fail;
  };
  return { watch, calls };
}

async function runWith(plays: Array<{ lines: WatchLine[]; fail?: ApiError }>) {
  const { watch, calls } = scripted(plays);
  const states: LiveState[] = [];
  const changes: Array<[WatchKind, string | undefined]> = [];
  const w = new NamespaceWatch('team-a', {
    watch,
    onState: (s) => states.push(s),
    onChange: (k, n) => changes.push([k, n]),
    sleep: async () => {},
  });
  await w.run();
  return { calls, states, changes, w };
}

describe('NamespaceWatch', () => {
  it('resumes every kind from its last resourceVersion after a drop, and re-reads once', async () => {
    const { calls, states, changes } = await runWith([
      {
        lines: [
          { type: 'BOOKMARK', kind: 'runs', resourceVersion: '10' },
          { type: 'BOOKMARK', kind: 'workflowruns', resourceVersion: '11' },
          { type: 'MODIFIED', kind: 'runs', name: 'build-1', resourceVersion: '12' },
        ],
        fail: new ApiError(0, 'StreamClosed', 'dropped'),
      },
      { lines: [{ type: 'BOOKMARK', kind: 'runs', resourceVersion: '20' }] },
    ]);
    expect(calls[0]).toEqual({ runs: undefined, runtimes: undefined, workflowruns: undefined });
    expect(calls[1]).toEqual({ runs: '12', runtimes: undefined, workflowruns: '11' });
    expect(calls[2]).toEqual({ runs: '20', runtimes: undefined, workflowruns: '11' });
    expect(states.slice(0, 4)).toEqual(['connecting', 'live', 'reconnecting', 'live']);
    expect(changes[0]).toEqual(['runs', 'build-1']);
    // After the reconnect every kind is read again once (changes while away).
    expect(changes.slice(1, 4)).toEqual([['runs', undefined], ['runtimes', undefined], ['workflowruns', undefined]]);
  });

  it('a resync reads the whole kind again; a kind that errored starts afresh', async () => {
    const { calls, changes } = await runWith([
      {
        lines: [
          { type: 'BOOKMARK', kind: 'runtimes', resourceVersion: '5' },
          { type: 'RESYNC', kind: 'runs', resourceVersion: '99' },
          { type: 'ERROR', kind: 'runtimes', code: 500, message: 'broken' },
        ],
      },
    ]);
    expect(changes[0]).toEqual(['runs', undefined]);
    expect(calls[1]).toEqual({ runs: '99', runtimes: undefined, workflowruns: undefined });
  });

  it('ends, without reconnecting, when access ends', async () => {
    const { calls, states } = await runWith([{ lines: [{ type: 'END', code: 403, message: 'access was revoked' }] }]);
    expect(calls.length).toBe(1);
    expect(states[states.length - 1]).toBe('ended');
    const refused = await runWith([{ lines: [], fail: new ApiError(401, 'Unauthorized', 'log in') }]);
    expect(refused.calls.length).toBe(1);
    expect(refused.states).toEqual(['connecting', 'ended']);
  });

  it('says it is reconnecting as soon as the stream drops, during the wait before the next try', async () => {
    const { watch } = scripted([{ lines: [{ type: 'BOOKMARK', kind: 'runs', resourceVersion: '1' }], fail: new ApiError(0, 'StreamClosed', 'dropped') }, { lines: [] }]);
    const states: LiveState[] = [];
    const whileWaiting: LiveState[] = [];
    await new NamespaceWatch('team-a', {
      watch: async (...a) => {
        await watch(...a);
      },
      onState: (s) => states.push(s),
      onChange: () => {},
      sleep: async () => {
        whileWaiting.push(states[states.length - 1]!);
      },
    }).run();
    expect(whileWaiting.length).toBeGreaterThan(0);
    expect(whileWaiting.every((s) => s === 'reconnecting')).toBe(true);
    expect(states.slice(0, 3)).toEqual(['connecting', 'live', 'reconnecting']);
  });

  it('names the cached answers an event makes stale', () => {
    expect(staleKeys('team-a', 'runs', 'r1')).toEqual([['runs', 'team-a'], ['run', 'team-a', 'r1'], ['runtime', 'team-a'], ['workflowrun', 'team-a']]);
    expect(staleKeys('team-a', 'workflowruns', undefined)).toEqual([['workflowruns', 'team-a'], ['workflowrun', 'team-a']]);
  });
});
