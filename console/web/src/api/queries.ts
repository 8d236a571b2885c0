/** TanStack Query hooks over the API client: caching, polling and retry policy live here. */
import { keepPreviousData, useQuery } from '@tanstack/react-query';
import * as api from './client';
import { ApiError } from './errors';
import { useLive } from './watch';
import type { ObjectListQuery, RunListQuery } from './types';
import { landingNamespace, rememberedNamespace } from '../lib/namespace';

/** How often visible lists and details refresh. */
export const LIVE_INTERVAL_MS = 5000;

/** Do not retry answers that will not change by retrying (4xx). */
export function shouldRetry(failureCount: number, error: unknown): boolean {
  if (error instanceof ApiError && error.status >= 400 && error.status < 500) return false;
  return failureCount < 2;
}

export const queryKeys = {
  session: ['session'] as const,
  namespaces: ['namespaces'] as const,
  runs: (ns: string, q: RunListQuery) => ['runs', ns, q] as const,
  run: (ns: string, name: string) => ['run', ns, name] as const,
  runtimes: (ns: string, q: ObjectListQuery = {}) => ['runtimes', ns, q] as const,
  runtime: (ns: string, name: string) => ['runtime', ns, name] as const,
  workflowRuns: (ns: string, q: ObjectListQuery = {}) => ['workflowruns', ns, q] as const,
  workflowRun: (ns: string, name: string) => ['workflowrun', ns, name] as const,
  manifest: (resource: string, ns: string, name: string) => ['manifest', resource, ns, name] as const,
  actions: (ns: string, q: ObjectListQuery = {}) => ['actions', ns, q] as const,
  action: (ns: string, name: string) => ['action', ns, name] as const,
  workspaces: (ns: string, q: ObjectListQuery = {}) => ['persistentworkspaces', ns, q] as const,
  workspace: (ns: string, name: string) => ['persistentworkspace', ns, name] as const,
  operationsAccess: (ns: string, name: string) => ['operations-access', ns, name] as const,
};

type Live = { live?: boolean };

/**
 * Polling every 5 s is the fallback while the namespace watch is not live;
 * a paused view (`live: false`) neither polls nor takes the watch's updates.
 */
function useLiveOptions(live: boolean | undefined): { refetchInterval: number | false; meta: { paused: boolean } } {
  const watch = useLive();
  return { refetchInterval: live === false || watch.state === 'live' ? false : LIVE_INTERVAL_MS, meta: { paused: live === false } };
}

export function useSession() {
  return useQuery({ queryKey: queryKeys.session, queryFn: api.getSession, staleTime: 60_000 });
}

/**
 * May the caller run session operations on the Run (the review the Console
 * makes before the upgrade)? Asked once `enabled` (the Run is Ready), before
 * anyone types; a denial is an answer, not an error, so it is not retried.
 */
export function useOperationsAccess(ns: string, name: string, enabled: boolean) {
  return useQuery({
    queryKey: queryKeys.operationsAccess(ns, name),
    queryFn: () => api.getOperationsAccess(ns, name),
    enabled,
    staleTime: 30_000,
    retry: false,
  });
}

export function useNamespaces() {
  return useQuery({ queryKey: queryKeys.namespaces, queryFn: api.listNamespaces, staleTime: 60_000 });
}

/** The namespace to land in (see landingNamespace); `ready` once the namespace list answered or failed. */
export function useLandingNamespace(): { ns: string; ready: boolean } {
  const session = useSession();
  const list = useNamespaces();
  const ready = !session.isPending && !list.isPending;
  const usable = session.data?.authenticated || list.data?.summary ? list.data : undefined;
  return { ns: landingNamespace(rememberedNamespace(), usable), ready };
}

export function useRuns(ns: string, q: RunListQuery, opts: Live = {}) {
  return useQuery({
    queryKey: queryKeys.runs(ns, q),
    queryFn: () => api.listRuns(ns, q),
    placeholderData: keepPreviousData,
    ...useLiveOptions(opts.live),
  });
}

export function useRun(ns: string, name: string, opts: Live = {}) {
  return useQuery({ queryKey: queryKeys.run(ns, name), queryFn: () => api.getRun(ns, name), ...useLiveOptions(opts.live) });
}

export function useRuntimes(ns: string, opts: Live = {}, q: ObjectListQuery = {}) {
  return useQuery({
    queryKey: queryKeys.runtimes(ns, q),
    queryFn: () => api.listRuntimes(ns, q),
    placeholderData: keepPreviousData,
    ...useLiveOptions(opts.live),
  });
}

export function useRuntime(ns: string, name: string, opts: Live = {}) {
  return useQuery({
    queryKey: queryKeys.runtime(ns, name),
    queryFn: () => api.getRuntime(ns, name),
    ...useLiveOptions(opts.live),
  });
}

export function useWorkflowRuns(ns: string, opts: Live = {}, q: ObjectListQuery = {}) {
  return useQuery({
    queryKey: queryKeys.workflowRuns(ns, q),
    queryFn: () => api.listWorkflowRuns(ns, q),
    placeholderData: keepPreviousData,
    ...useLiveOptions(opts.live),
  });
}

export function useWorkflowRun(ns: string, name: string, opts: Live = {}) {
  return useQuery({
    queryKey: queryKeys.workflowRun(ns, name),
    queryFn: () => api.getWorkflowRun(ns, name),
    ...useLiveOptions(opts.live),
  });
}

/** The sanitized object for the YAML view, read only while it is shown. */
export function useManifest(resource: api.ManifestResource, ns: string, name: string, enabled: boolean) {
  return useQuery({
    queryKey: queryKeys.manifest(resource, ns, name),
    queryFn: () => api.getManifest(resource, ns, name),
    enabled,
  });
}

/**
 * Actions and PersistentWorkspaces are not on the namespace watch: their
 * views poll every 5 s while live.
 */
function pollOptions(live: boolean | undefined): { refetchInterval: number | false; meta: { paused: boolean } } {
  return { refetchInterval: live === false ? false : LIVE_INTERVAL_MS, meta: { paused: live === false } };
}

export function useActions(ns: string, opts: Live = {}, q: ObjectListQuery = {}) {
  return useQuery({
    queryKey: queryKeys.actions(ns, q),
    queryFn: () => api.listActions(ns, q),
    placeholderData: keepPreviousData,
    ...pollOptions(opts.live),
  });
}

export function useAction(ns: string, name: string, opts: Live = {}) {
  return useQuery({ queryKey: queryKeys.action(ns, name), queryFn: () => api.getAction(ns, name), ...pollOptions(opts.live) });
}

export function useWorkspaces(ns: string, opts: Live = {}, q: ObjectListQuery = {}) {
  return useQuery({
    queryKey: queryKeys.workspaces(ns, q),
    queryFn: () => api.listWorkspaces(ns, q),
    placeholderData: keepPreviousData,
    ...pollOptions(opts.live),
  });
}

export function useWorkspace(ns: string, name: string, opts: Live = {}) {
  return useQuery({ queryKey: queryKeys.workspace(ns, name), queryFn: () => api.getWorkspace(ns, name), ...pollOptions(opts.live) });
}
