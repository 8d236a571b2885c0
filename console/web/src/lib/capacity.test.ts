import { describe, expect, it } from 'vitest';
import { waiting, waitingSentence } from './capacity';
import type { RuntimeDetail, RuntimePod } from '../api/types';

function pod(name: string, ready: boolean, used: number, cap = 8): RuntimePod {
  return {
    name,
    uid: name,
    phase: 'Running',
    ready,
    restarts: 0,
    capacity: { runs: String(cap), cpu: '2' },
    runs: [],
    usage: [
      { resource: 'cpu', capacity: '2' },
      { resource: 'runs', capacity: String(cap), used, free: Math.max(0, cap - used) },
    ],
  };
}

function runtime(pods: RuntimePod[], queue: string[]): RuntimeDetail {
  return {
    metadata: { name: 'bash', namespace: 'team-a' },
    spec: { replicas: pods.length },
    status: { readyReplicas: pods.filter((p) => p.ready).length },
    pods: { state: 'ok', items: pods },
    queue: { state: 'ok', items: queue.map((name) => ({ name, reason: 'NoCapacity' })) },
  };
}

describe('why a Run waits', () => {
  it('sums free places over ready Pods and finds the place in the queue', () => {
    const w = waiting('b', runtime([pod('p0', true, 8), pod('p1', true, 6), pod('p2', false, 0)], ['a', 'b', 'c']));
    expect(w).toEqual({ position: 2, queued: 3, readyPods: 2, pods: 3, free: 2, capacity: 16 });
  });

  it('says the Pods are full, not ready, or missing', () => {
    expect(waitingSentence(waiting('a', runtime([pod('p0', true, 8)], ['a'])), 'bash')).toContain('full: 8 of 8');
    expect(waitingSentence(waiting('a', runtime([pod('p0', false, 0)], ['a'])), 'bash')).toContain('None of the 1 Pods');
    expect(waitingSentence(waiting('a', runtime([], ['a'])), 'bash')).toContain('no Pods');
  });

  it('knows nothing without the Runtime, or when its sections are forbidden', () => {
    expect(waiting('a', undefined).position).toBeNull();
    const rt = runtime([], []);
    rt.pods = { state: 'forbidden', message: 'no' };
    rt.queue = { state: 'forbidden', message: 'no' };
    expect(waiting('a', rt)).toEqual({ position: null, queued: 0, readyPods: null, pods: null, free: null, capacity: null });
  });
});
