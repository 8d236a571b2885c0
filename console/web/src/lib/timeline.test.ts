import { describe, expect, it } from 'vitest';
import { failedStep, timeline } from './timeline';

const t0 = Date.parse('2026-01-01T10:00:00Z');

describe('timeline', () => {
  it('places each job on an axis from the first start to the last end', () => {
    const tl = timeline(['a', 'b', 'c', 'd'], {
      a: { phase: 'Succeeded', startTime: '2026-01-01T10:00:00Z', completionTime: '2026-01-01T10:01:00Z' },
      b: { phase: 'Failed', startTime: '2026-01-01T10:01:00Z', completionTime: '2026-01-01T10:04:00Z' },
      c: { phase: 'Running', startTime: '2026-01-01T10:02:00Z' },
      d: { phase: 'Waiting' },
    }, t0 + 4 * 60_000);
    expect(tl.from).toBe(t0);
    expect(tl.to).toBe(t0 + 4 * 60_000);
    const [a, b, c, d] = tl.bars;
    expect([a!.left, a!.width, a!.ms]).toEqual([0, 25, 60_000]);
    expect([b!.left, b!.width]).toEqual([25, 75]);
    // A running job lasts until now.
    expect([c!.left, c!.width, c!.running]).toEqual([50, 50, true]);
    expect(d!.left).toBeUndefined();
    expect(d!.phase).toBe('Waiting');
  });

  it('has no axis when nothing started', () => {
    expect(timeline(['a'], { a: { phase: 'Waiting' } }).from).toBeUndefined();
    expect(timeline(['a'], undefined).bars).toEqual([{ id: 'a', phase: 'Pending', running: false }]);
  });

  it('opens the first failed step', () => {
    expect(failedStep(['Succeeded', 'Failed', 'Failed'])).toBe(1);
    expect(failedStep(['Succeeded', 'Timeout'])).toBe(1);
    expect(failedStep(['Succeeded', undefined])).toBeNull();
  });
});
