// @vitest-environment jsdom
import { act, renderHook } from '@testing-library/react';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { useNow } from './now';

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('the shared clock', () => {
  it('ticks every second with one interval however many times are shown, and stops with the last', () => {
    vi.useFakeTimers();
    const set = vi.spyOn(window, 'setInterval');
    const clear = vi.spyOn(window, 'clearInterval');
    const hooks = Array.from({ length: 50 }, () => renderHook(() => useNow()));
    expect(set).toHaveBeenCalledTimes(1);
    const before = hooks[0]!.result.current;
    act(() => {
      vi.advanceTimersByTime(3000);
    });
    for (const h of hooks) expect(h.result.current).toBeGreaterThanOrEqual(before + 3000);
    for (const h of hooks.slice(1)) h.unmount();
    expect(clear).not.toHaveBeenCalled();
    hooks[0]!.unmount();
    expect(clear).toHaveBeenCalledTimes(1);
    // Shown again: a new interval.
    const again = renderHook(() => useNow());
    expect(set).toHaveBeenCalledTimes(2);
    again.unmount();
  });
});
