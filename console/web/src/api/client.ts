/**
 * The one typed client of the Console API. Views and hooks call these
 * functions; nothing else in the UI calls `fetch` or opens a WebSocket.
 *
 * Credentials travel only as the server's HttpOnly session cookie
 * (`credentials: 'same-origin'`); the token is sent once, in the login POST
 * body, and never kept by the client.
 */
import { ApiError, isApiErrorBody, toApiError } from './errors';
import { NdjsonSplitter } from '../lib/ndjson';
import { isLogEndStatus, type CursorRecord, type CursorRunLog, type LogEndStatus, type LogSearchQuery, type LogWindow } from './logTypes';
import type {
  AccessDecision,
  AccessRequest,
  LogStreamLine,
  NamespaceCheck,
  NamespaceList,
  ObjectListQuery,
  ObjectManifest,
  RunDetail,
  RunList,
  RunListQuery,
  RuntimeDetail,
  RuntimeList,
  SessionInfo,
  SessionLogin,
  WorkflowRunDetail,
  WatchLine,
  WorkflowRunList,
} from './types';
import type { ActionDetail, ActionList, WorkspaceDetail, WorkspaceList } from './kinds';

const GROUP = 'kruntimes.io';
const LOG_GROUP = 'logs.kruntimes.io';

function seg(s: string): string {
  return encodeURIComponent(s);
}

async function readBody(res: Response): Promise<unknown> {
  const text = await res.text();
  if (!text) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

/** Listeners told when any call answers 401, so the shell can refresh the session state. */
const unauthorizedListeners = new Set<() => void>();

export function onUnauthorized(listener: () => void): () => void {
  unauthorizedListeners.add(listener);
  return () => unauthorizedListeners.delete(listener);
}

async function request<T>(
  path: string,
  init: RequestInit & { access?: AccessRequest } = {},
): Promise<T> {
  const { access, ...rest } = init;
  let res: Response;
  try {
    res = await fetch(path, {
      credentials: 'same-origin',
      ...rest,
      headers: { Accept: 'application/json', ...(rest.headers ?? {}) },
    });
  } catch {
    throw toApiError(0, undefined, access);
  }
  const body = await readBody(res);
  if (!res.ok) {
    const err = toApiError(res.status, body, access);
    if (err.isUnauthorized) unauthorizedListeners.forEach((l) => l());
    throw err;
  }
  return body as T;
}

function query(params: Record<string, string | number | boolean | undefined>): string {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v === undefined || v === '') continue;
    q.set(k, String(v));
  }
  const s = q.toString();
  return s ? `?${s}` : '';
}

// --- session ---------------------------------------------------------------

export function getSession(): Promise<SessionInfo> {
  return request<SessionInfo>('/api/session');
}

export function login(token: string): Promise<SessionInfo> {
  return request<SessionInfo>('/api/session', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ token } satisfies SessionLogin),
  });
}

export function logout(): Promise<SessionInfo> {
  return request<SessionInfo>('/api/session', { method: 'DELETE' });
}

// --- resources -------------------------------------------------------------

/** Whether namespace `ns` exists, when the Console may tell (see NamespaceCheck). */
export function getNamespace(ns: string): Promise<NamespaceCheck> {
  return request<NamespaceCheck>(`/api/namespaces/${seg(ns)}`, {
    access: { verb: 'get', group: '', resource: 'namespaces', name: ns },
  });
}

export function listNamespaces(): Promise<NamespaceList> {
  return request<NamespaceList>('/api/namespaces', {
    access: { verb: 'list', group: '', resource: 'namespaces' },
  });
}

export function listRuns(ns: string, q: RunListQuery = {}): Promise<RunList> {
  return request<RunList>(
    `/api/namespaces/${seg(ns)}/runs${query({
      phase: q.phase,
      runtime: q.runtime,
      assignedPod: q.assignedPod,
      labelSelector: q.labelSelector,
      createdAfter: q.createdAfter,
      name: q.name,
      limit: q.limit,
      continue: q.continue,
    })}`,
    { access: { verb: 'list', group: GROUP, resource: 'runs', namespace: ns } },
  );
}

export function getRun(ns: string, name: string): Promise<RunDetail> {
  return request<RunDetail>(`/api/namespaces/${seg(ns)}/runs/${seg(name)}`, {
    access: { verb: 'get', group: GROUP, resource: 'runs', namespace: ns, name },
  });
}

/** The kinds with a YAML view, by their plural resource name. */
export type ManifestResource = 'runs' | 'runtimes' | 'workflowruns' | 'actions' | 'persistentworkspaces';

/** The whole object, sanitized by the server, for the YAML view. */
export function getManifest(resource: ManifestResource, ns: string, name: string): Promise<ObjectManifest> {
  return request<ObjectManifest>(`/api/namespaces/${seg(ns)}/${resource}/${seg(name)}/manifest`, {
    access: { verb: 'get', group: GROUP, resource, namespace: ns, name },
  });
}

export function logAccess(ns: string, name: string): AccessRequest {
  return { verb: 'get', group: LOG_GROUP, resource: 'runs', subresource: 'log', namespace: ns, name };
}

/**
 * A plain read of a Run's log: the newest `tail` records, or with a cursor
 * the first `tail` after it (`sinceCursor`) or the last `tail` before it
 * (`beforeCursor`, for "load older").
 */
export function getRunLogTail(ns: string, name: string, w: number | LogWindow): Promise<CursorRunLog> {
  const win = typeof w === 'number' ? { tail: w } : w;
  return request<CursorRunLog>(
    `/api/namespaces/${seg(ns)}/runs/${seg(name)}/logs${query({
      tail: win.tail,
      sinceCursor: win.sinceCursor,
      beforeCursor: win.beforeCursor,
      fromStart: win.fromStart ? true : undefined,
    })}`,
    { access: logAccess(ns, name) },
  );
}

/** A search of a Run's whole log: matching records (`match: true`) with context, and the count (`search`). */
export function searchRunLog(ns: string, name: string, q: LogSearchQuery): Promise<CursorRunLog> {
  return request<CursorRunLog>(
    `/api/namespaces/${seg(ns)}/runs/${seg(name)}/logs${query({
      search: q.search,
      regex: q.regex ? true : undefined,
      ignoreCase: q.ignoreCase ? true : undefined,
      context: q.context ?? 2,
      tail: q.tail,
      sinceCursor: q.sinceCursor,
    })}`,
    { access: logAccess(ns, name) },
  );
}

/** Where a follow starts: the newest `tail` records, or everything after `sinceCursor`. */
export type FollowFrom = { tail: number } | { sinceCursor: string };

/**
 * Follows a Run's log: calls `onRecord` for every NDJSON record as it
 * arrives. Resolves when the server ends the stream, with its final `Status`
 * line when it sent one (the Run finished, the Pod went away, the follower
 * fell behind...); rejects with an ApiError on an HTTP error or an
 * `{"error":...}` line; aborts with `signal`. `onOpen` is called once the
 * server accepted the request (headers received).
 */
export async function followRunLog(
  ns: string,
  name: string,
  from: number | FollowFrom,
  onRecord: (r: CursorRecord) => void,
  signal: AbortSignal,
  onOpen?: () => void,
): Promise<LogEndStatus | undefined> {
  const access = logAccess(ns, name);
  const start = typeof from === 'number' ? { tail: from } : from;
  let res: Response;
  try {
    res = await fetch(
      `/api/namespaces/${seg(ns)}/runs/${seg(name)}/logs${query({
        follow: true,
        ...('sinceCursor' in start ? { sinceCursor: start.sinceCursor } : { tail: start.tail }),
      })}`,
      { credentials: 'same-origin', headers: { Accept: 'application/x-ndjson' }, signal },
    );
  } catch {
    if (signal.aborted) return undefined;
    throw toApiError(0, undefined, access);
  }
  if (!res.ok) throw toApiError(res.status, await readBody(res), access);
  onOpen?.();
  if (!res.body) return undefined;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const splitter = new NdjsonSplitter();
  let end: LogEndStatus | undefined;
  const handle = (line: string) => {
    let value: LogStreamLine | LogEndStatus;
    try {
      value = JSON.parse(line) as LogStreamLine | LogEndStatus;
    } catch {
      return; // a torn line cannot be shown faithfully; skip it
    }
    if (isLogEndStatus(value)) {
      end = value;
      return;
    }
    if (isApiErrorBody(value)) throw toApiError(value.error.code, value, access);
    if (typeof value === 'object' && value !== null && 'message' in value) {
      onRecord(value as CursorRecord);
    }
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const line of splitter.push(value)) handle(line);
    }
    for (const line of splitter.flush()) handle(line);
  } catch (e) {
    if (signal.aborted) return undefined;
    if (e instanceof ApiError) throw e;
    // The stream broke after its Status line: the end was told all the same.
    if (end) return end;
    throw new ApiError(0, 'StreamClosed', 'The log stream was interrupted.', access);
  } finally {
    reader.releaseLock();
  }
  return end;
}

function objectQuery(q: ObjectListQuery): string {
  return query({ name: q.name, labelSelector: q.labelSelector, limit: q.limit, continue: q.continue });
}

export function listRuntimes(ns: string, q: ObjectListQuery = {}): Promise<RuntimeList> {
  return request<RuntimeList>(`/api/namespaces/${seg(ns)}/runtimes${objectQuery(q)}`, {
    access: { verb: 'list', group: GROUP, resource: 'runtimes', namespace: ns },
  });
}

export function getRuntime(ns: string, name: string): Promise<RuntimeDetail> {
  return request<RuntimeDetail>(`/api/namespaces/${seg(ns)}/runtimes/${seg(name)}`, {
    access: { verb: 'get', group: GROUP, resource: 'runtimes', namespace: ns, name },
  });
}

export function listWorkflowRuns(ns: string, q: ObjectListQuery = {}): Promise<WorkflowRunList> {
  return request<WorkflowRunList>(`/api/namespaces/${seg(ns)}/workflowruns${objectQuery(q)}`, {
    access: { verb: 'list', group: GROUP, resource: 'workflowruns', namespace: ns },
  });
}

export function getWorkflowRun(ns: string, name: string): Promise<WorkflowRunDetail> {
  return request<WorkflowRunDetail>(`/api/namespaces/${seg(ns)}/workflowruns/${seg(name)}`, {
    access: { verb: 'get', group: GROUP, resource: 'workflowruns', namespace: ns, name },
  });
}

// Actions and PersistentWorkspaces: no public read, a credential is always needed.

export function listActions(ns: string, q: ObjectListQuery = {}): Promise<ActionList> {
  return request<ActionList>(`/api/namespaces/${seg(ns)}/actions${objectQuery(q)}`, {
    access: { verb: 'list', group: GROUP, resource: 'actions', namespace: ns },
  });
}

export function getAction(ns: string, name: string): Promise<ActionDetail> {
  return request<ActionDetail>(`/api/namespaces/${seg(ns)}/actions/${seg(name)}`, {
    access: { verb: 'get', group: GROUP, resource: 'actions', namespace: ns, name },
  });
}

export function listWorkspaces(ns: string, q: ObjectListQuery = {}): Promise<WorkspaceList> {
  return request<WorkspaceList>(`/api/namespaces/${seg(ns)}/persistentworkspaces${objectQuery(q)}`, {
    access: { verb: 'list', group: GROUP, resource: 'persistentworkspaces', namespace: ns },
  });
}

export function getWorkspace(ns: string, name: string): Promise<WorkspaceDetail> {
  return request<WorkspaceDetail>(`/api/namespaces/${seg(ns)}/persistentworkspaces/${seg(name)}`, {
    access: { verb: 'get', group: GROUP, resource: 'persistentworkspaces', namespace: ns, name },
  });
}

// --- session operations (WebSocket) -----------------------------------------

/** Same-origin WebSocket URL of a session Run's operations endpoint. */
export function operationsSocketUrl(ns: string, name: string, uid: string): string {
  const proto = window.location.protocol === 'https:' ? 'wss:' : 'ws:';
  return `${proto}//${window.location.host}/v1/namespaces/${seg(ns)}/runs/${seg(name)}/${seg(uid)}/operations:ws`;
}

/** Opens the operations socket. The browser sends the session cookie; the server injects it. */
export function openOperationsSocket(ns: string, name: string, uid: string): WebSocket {
  return new WebSocket(operationsSocketUrl(ns, name, uid));
}

/**
 * Whether the caller may run session operations on the Run: a
 * SelfSubjectAccessReview the Console sends with the caller's own token.
 */
export function getOperationsAccess(ns: string, name: string): Promise<AccessDecision> {
  return request<AccessDecision>(`/api/namespaces/${seg(ns)}/runs/${seg(name)}/operations/access`);
}

/** The access a session operation needs, for explaining a 403. */
export function operationsAccess(ns: string, name: string): AccessRequest {
  return { verb: 'create', group: GROUP, resource: 'runs', subresource: 'operations', namespace: ns, name };
}

// --- watch -----------------------------------------------------------------

/** The kinds a namespace watch follows. */
export type WatchKind = 'runs' | 'runtimes' | 'workflowruns';

/**
 * Follows what changes in a namespace (`GET /api/namespaces/{ns}/watch`):
 * each kind from its resourceVersion (undefined: from now). Calls `onLine`
 * for every line; resolves when the stream ends, rejects with an ApiError
 * when it is refused or broken.
 */
export async function watchNamespace(
  ns: string,
  kinds: Partial<Record<WatchKind, string | undefined>>,
  onLine: (line: WatchLine) => void,
  signal: AbortSignal,
  onOpen?: () => void,
): Promise<void> {
  const params = Object.entries(kinds)
    .map(([k, rv]) => `${k}=${rv ? encodeURIComponent(rv) : ''}`)
    .join('&');
  const access: AccessRequest = { verb: 'watch', group: GROUP, resource: Object.keys(kinds)[0] ?? 'runs', namespace: ns };
  let res: Response;
  try {
    res = await fetch(`/api/namespaces/${seg(ns)}/watch?${params}`, {
      credentials: 'same-origin',
      headers: { Accept: 'application/x-ndjson' },
      signal,
    });
  } catch {
    if (signal.aborted) return;
    throw toApiError(0, undefined, access);
  }
  if (!res.ok) {
    const err = toApiError(res.status, await readBody(res), access);
    if (err.isUnauthorized) unauthorizedListeners.forEach((l) => l());
    throw err;
  }
  onOpen?.();
  if (!res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  const splitter = new NdjsonSplitter();
  const handle = (line: string) => {
    try {
      onLine(JSON.parse(line) as WatchLine);
    } catch {
      /* a torn line names nothing reliably; the next event or bookmark will */
    }
  };
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      for (const line of splitter.push(value)) handle(line);
    }
    for (const line of splitter.flush()) handle(line);
  } catch {
    if (signal.aborted) return;
    throw new ApiError(0, 'StreamClosed', 'The live updates were interrupted.', access);
  } finally {
    reader.releaseLock();
  }
}
