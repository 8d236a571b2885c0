/**
 * One clock for every live "… ago" and duration on the page: a single
 * one-second interval, running only while some component shows a time, so a
 * table of 500 rows ticks with one timer, not one per cell.
 */
import { useSyncExternalStore } from 'react';

const listeners = new Set<() => void>();
let timer = 0;
let now = Date.now();

function subscribe(listener: () => void): () => void {
  listeners.add(listener);
  if (listeners.size === 1) {
    now = Date.now();
    timer = window.setInterval(() => {
      now = Date.now();
      for (const l of listeners) l();
    }, 1000);
  }
  return () => {
    listeners.delete(listener);
    if (listeners.size === 0) {
      window.clearInterval(timer);
      timer = 0;
    }
  };
}

/** The time now, in ms, updated once a second while mounted. */
export function useNow(): number {
  return useSyncExternalStore(
    subscribe,
    () => now,
    () => now,
  );
}
