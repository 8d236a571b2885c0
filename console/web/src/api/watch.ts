/**
 * Live lists and details: one watch stream per namespace (see
 * `watchNamespace`), resumed from the last resourceVersion after a drop, that
 * tells TanStack Query which answers changed. The state (live, reconnecting)
 * is shown by the pages; while live, the 5 s polling stops.
 */
import { useQueryClient, type QueryClient } from '@tanstack/react-query';
import { createContext, createElement, useContext, useEffect, useState, type ReactNode } from 'react';
import { watchNamespace, type WatchKind } from './client';
import { ApiError } from './errors';
import type { WatchLine } from './types';

export type LiveState = 'off' | 'connecting' | 'live' | 'reconnecting' | 'ended';

export const WATCH_KINDS: readonly WatchKind[] = ['runs', 'runtimes', 'workflowruns'];

/** Waits between reconnects, then the last one again. */
export const BACKOFF_MS = [500, 1000, 2000, 5000];

export interface WatchOptions {
  watch?: typeof watchNamespace;
  /** Something of `kind` changed: `name`, or everything when undefined (a resync). */
  onChange(kind: WatchKind, name: string | undefined): void;
  onState(state: LiveState, detail?: string): void;
  sleep?: (ms: number, signal: AbortSignal) => Promise<void>;
}

function defaultSleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = window.setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      window.clearTimeout(t);
      resolve();
    });
  });
}

function isKind(k: string | undefined): k is WatchKind {
  return k === 'runs' || k === 'runtimes' || k === 'workflowruns';
}

/** A namespace's watch: connects, resumes from the last resourceVersion of each kind, reconnects with backoff. */
export class NamespaceWatch {
  readonly rv: Partial<Record<WatchKind, string>> = {};
  private readonly abort = new AbortController();
  private ended: string | null = null;

  constructor(
    readonly ns: string,
    private readonly opts: WatchOptions,
  ) {}

  stop(): void {
    this.abort.abort();
  }

  private onLine = (l: WatchLine) => {
    const kind = l.kind;
    switch (l.type) {
      case 'BOOKMARK':
        if (isKind(kind) && l.resourceVersion) this.rv[kind] = l.resourceVersion;
        break;
      case 'ADDED':
      case 'MODIFIED':
      case 'DELETED':
        if (!isKind(kind)) break;
        if (l.resourceVersion) this.rv[kind] = l.resourceVersion;
        this.opts.onChange(kind, l.name);
        break;
      case 'RESYNC':
        if (!isKind(kind)) break;
        if (l.resourceVersion) this.rv[kind] = l.resourceVersion;
        this.opts.onChange(kind, undefined);
        break;
      case 'END':
        if (l.code === 401 || l.code === 403) this.ended = l.message ?? 'access ended';
        break;
      case 'ERROR':
        // That kind's watch ended (e.g. its access was refused): read it afresh on reconnect.
        if (isKind(kind)) delete this.rv[kind];
        if (l.code === 401 || l.code === 403) this.ended = l.message ?? 'access ended';
        break;
      default:
        break;
    }
  };

  /** Runs until stopped or access ends. */
  async run(): Promise<void> {
    const watch = this.opts.watch ?? watchNamespace;
    const sleep = this.opts.sleep ?? defaultSleep;
    const signal = this.abort.signal;
    let attempt = 0;
    let first = true;
    while (!signal.aborted) {
      if (first) this.opts.onState('connecting');
      first = false;
      const kinds = Object.fromEntries(WATCH_KINDS.map((k) => [k, this.rv[k]])) as Partial<Record<WatchKind, string | undefined>>;
      try {
        await watch(this.ns, kinds, this.onLine, signal, () => {
          attempt = 0;
          this.opts.onState('live');
          // Changes made while disconnected are read again, once.
          if (Object.keys(this.rv).length) for (const k of WATCH_KINDS) this.opts.onChange(k, undefined);
        });
      } catch (e) {
        if (e instanceof ApiError && (e.status === 401 || e.status === 403)) this.ended = e.message;
      }
      if (signal.aborted) return;
      if (this.ended !== null) {
        this.opts.onState('ended', this.ended);
        return;
      }
      // Not live from the moment the stream drops, through the wait and the next try.
      this.opts.onState('reconnecting');
      await sleep(BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)]!, signal);
      attempt++;
    }
  }
}

/** The query keys an event of `kind` makes stale. */
export function staleKeys(ns: string, kind: WatchKind, name: string | undefined): unknown[][] {
  const one = (k: string) => (name === undefined ? [k, ns] : [k, ns, name]);
  switch (kind) {
    case 'runs':
      // A Run's change moves Runtime Pods' assigned Runs and queues, and step times.
      return [['runs', ns], one('run'), ['runtime', ns], ['workflowrun', ns]];
    case 'runtimes':
      return [['runtimes', ns], one('runtime')];
    case 'workflowruns':
      return [['workflowruns', ns], one('workflowrun')];
  }
}

const LiveContext = createContext<{ state: LiveState; detail?: string | undefined }>({ state: 'off' });

export function useLive(): { state: LiveState; detail?: string | undefined } {
  return useContext(LiveContext);
}

function invalidate(qc: QueryClient, keys: unknown[][]) {
  for (const queryKey of keys) {
    void qc.invalidateQueries({ queryKey, predicate: (q) => !(q.meta as { paused?: boolean } | undefined)?.paused });
  }
}

/** Watches `ns` while `enabled` (signed in) and provides its live state. */
export function LiveProvider({ ns, enabled, children }: { ns: string | undefined; enabled: boolean; children: ReactNode }) {
  const qc = useQueryClient();
  const [live, setLive] = useState<{ state: LiveState; detail?: string | undefined }>({ state: 'off' });
  useEffect(() => {
    if (!ns || !enabled) return;
    let pending = new Map<string, unknown[]>();
    let timer: number | undefined;
    const w = new NamespaceWatch(ns, {
      onState: (state, detail) => setLive({ state, detail }),
      onChange: (kind, name) => {
        for (const k of staleKeys(ns, kind, name)) pending.set(JSON.stringify(k), k);
        // Bursts (a controller writing many Runs) become one refetch.
        timer ??= window.setTimeout(() => {
          const keys = [...pending.values()] as unknown[][];
          pending = new Map();
          timer = undefined;
          invalidate(qc, keys);
        }, 100);
      },
    });
    void w.run();
    return () => {
      w.stop();
      if (timer !== undefined) window.clearTimeout(timer);
      setLive({ state: 'off' });
    };
  }, [ns, enabled, qc]);
  return createElement(LiveContext.Provider, { value: live }, children);
}
