/**
 * Session panel of a session Run: runs one command per WebSocket operation
 * against `/v1/.../operations:ws` and renders its events in order, with one
 * updating progress line, a command history (arrow keys) and "Copy output".
 * Before anyone types, it asks whether the caller may run operations (a
 * SelfSubjectAccessReview with their own token); without the permission it
 * is read-only and names the missing verb. The only control in the Console
 * that changes anything.
 */
import { useEffect, useId, useRef, useState, type FormEvent, type KeyboardEvent } from 'react';
import { openOperationsSocket, operationsAccess } from '../api/client';
import { ApiError } from '../api/errors';
import { useOperationsAccess, useSession } from '../api/queries';
import type { SessionClientFrame } from '../api/requests';
import type { RunDetail } from '../api/types';
import { GATEWAY_ATTEMPTS, classifyClose, decodeOutput, explainRefusal, gatewayRetryMs, heartbeatMs, parseServerFrame, toOperation } from '../lib/session';
import { CommandHistory, appendEntry, commandPlaceholder, outputText, type Entry } from '../lib/sessionPanel';
import { CopyIcon, TerminalIcon } from './Icons';
import { Forbidden } from './States';
import './SessionPanel.css';

/** Copies `text`: the Clipboard API where the page may use it, else a selected text area. */
async function copyText(text: string): Promise<void> {
  if (navigator.clipboard?.writeText) {
    await navigator.clipboard.writeText(text);
    return;
  }
  const area = document.createElement('textarea');
  area.value = text;
  area.setAttribute('readonly', '');
  area.style.position = 'fixed';
  area.style.opacity = '0';
  document.body.appendChild(area);
  area.select();
  const ok = document.execCommand('copy');
  area.remove();
  if (!ok) throw new Error('the browser refused to copy');
}

type OpState = 'idle' | 'connecting' | 'running' | 'done' | 'failed';

export function SessionPanel({ run }: { run: RunDetail }) {
  const id = useId();
  const ns = run.metadata.namespace;
  const name = run.metadata.name;
  const uid = run.metadata.uid;
  const ready = run.status.phase === 'Ready' && !!uid;
  const lease = run.spec.mode.session?.leaseSeconds;

  const [line, setLine] = useState('');
  const [stdin, setStdin] = useState('');
  const [entries, setEntries] = useState<Entry[]>([]);
  const [state, setState] = useState<OpState>('idle');
  const [operationID, setOperationID] = useState<string | null>(null);
  const [forbidden, setForbidden] = useState(false);
  const [copied, setCopied] = useState<{ ok: boolean; text: string } | null>(null);
  const [history] = useState(() => new CommandHistory());
  const wsRef = useRef<WebSocket | null>(null);
  // A retry of a handshake the gateway refused, waiting to start.
  const retryRef = useRef(0);
  const [retrying, setRetrying] = useState(false);
  const outRef = useRef<HTMLDivElement>(null);

  // May this account run operations here? Asked once the Run is Ready, before anyone types.
  const can = useOperationsAccess(ns, name, ready);
  const session = useSession();
  const denied = can.data?.allowed === false;
  const loggedOut = can.error instanceof ApiError && can.error.isUnauthorized;
  const readOnly = denied || loggedOut;

  const add = (e: Entry) => setEntries((prev) => appendEntry(prev, e));

  // Close the socket when leaving the page. This does not release the session Run.
  useEffect(
    () => () => {
      window.clearTimeout(retryRef.current);
      wsRef.current?.close(1000, 'page closed');
    },
    [],
  );

  useEffect(() => {
    const el = outRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [entries]);

  const send = (ws: WebSocket, f: SessionClientFrame) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(f));
  };

  const start = (e: FormEvent) => {
    e.preventDefault();
    if (!ready || !uid || readOnly) return;
    const op = toOperation(line, stdin || undefined);
    if (!op) return;
    history.push(line);
    setCopied(null);
    window.clearTimeout(retryRef.current);
    setRetrying(false);
    wsRef.current?.close(1000, 'new operation');
    setForbidden(false);
    setOperationID(null);
    add({ kind: 'command', text: line });
    connect(uid, op, 1);
  };

  /** Opens the socket for `op` (`attempt` counts handshakes the gateway refused). */
  const connect = (uid: string, op: NonNullable<ReturnType<typeof toOperation>>, attempt: number) => {
    setRetrying(false);
    setState('connecting');
    let opened = false;
    let terminal = false;
    let heartbeat = 0;
    let ws: WebSocket;
    try {
      ws = openOperationsSocket(ns, name, uid);
    } catch (err) {
      setState('failed');
      add({ kind: 'transport', tone: 'error', text: `Could not open the connection: ${String(err)}` });
      return;
    }
    wsRef.current = ws;

    ws.onopen = () => {
      opened = true;
      setState('running');
      send(ws, { type: 'send', operation: op });
      const every = heartbeatMs(lease);
      if (every) heartbeat = window.setInterval(() => send(ws, { type: 'heartbeat' }), every);
    };
    ws.onmessage = (m) => {
      if (typeof m.data !== 'string') {
        add({ kind: 'transport', tone: 'error', text: 'Ignored a binary frame the protocol does not define.' });
        return;
      }
      const frame = parseServerFrame(m.data);
      if (frame.type === 'accepted') setOperationID(frame.operationID);
      if (frame.type === 'terminal') {
        terminal = true;
        setState(frame.status === 'Succeeded' && (frame.exitCode ?? 0) === 0 ? 'done' : 'failed');
      }
      add({ kind: 'event', frame, ...(frame.type === 'output' ? { text: decodeOutput(frame) } : {}) });
      if (terminal) ws.close(1000, 'operation finished');
    };
    ws.onerror = () => {
      // The close event that follows carries the details.
    };
    ws.onclose = (c) => {
      window.clearInterval(heartbeat);
      if (wsRef.current === ws) wsRef.current = null;
      const kind = classifyClose(c.code, opened, terminal);
      if (kind === 'normal') return;
      setState('failed');
      const detail = c.reason ? `: ${c.reason}` : '';
      switch (kind) {
        case 'forbidden':
          setForbidden(true);
          add({ kind: 'transport', tone: 'error', text: `Forbidden${detail}` });
          break;
        case 'unauthorized':
          add({ kind: 'transport', tone: 'error', text: `Your session is not valid any more; log in again${detail}.` });
          break;
        case 'not-ready':
          add({ kind: 'transport', tone: 'error', text: `The Run is not Ready for operations${detail}.` });
          break;
        case 'refused':
          // The browser hides the HTTP status of a refused upgrade: re-read the
          // session and run the access check again to tell an expired login
          // (401) and a missing permission (403) from an unreachable gateway (502/503).
          void Promise.all([
            session.refetch().then(
              (r) => (r.isError ? undefined : r.data?.authenticated),
              () => undefined,
            ),
            can.refetch().then(
              (r) => (r.isError ? undefined : r.data?.allowed),
              () => undefined,
            ),
          ]).then(([signedIn, allowed]) => {
            switch (explainRefusal(signedIn, ready, allowed)) {
              case 'unauthorized':
                add({ kind: 'transport', tone: 'error', text: 'The Console refused the connection: you are not logged in any more. Log in again.' });
                break;
              case 'not-ready':
                add({ kind: 'transport', tone: 'error', text: 'The Console refused the connection: the Run is not Ready for operations.' });
                break;
              case 'forbidden':
                setForbidden(true);
                add({
                  kind: 'transport',
                  tone: 'error',
                  text: `The Console refused the connection before it opened (code ${c.code}${detail}): your account may not create runs/operations here (HTTP 403).`,
                });
                break;
              case 'gateway': {
                if (attempt >= GATEWAY_ATTEMPTS) {
                  add({
                    kind: 'transport',
                    tone: 'error',
                    text: `The Runtime gateway is still unreachable after ${attempt} attempts; the command did not run. Try again later.`,
                  });
                  break;
                }
                const wait = gatewayRetryMs(attempt);
                add({
                  kind: 'transport',
                  tone: 'info',
                  text: `Runtime gateway unreachable, retrying in ${Math.round(wait / 1000)} s (attempt ${attempt + 1} of ${GATEWAY_ATTEMPTS}). You may run operations here; the command has not run yet.`,
                });
                setState('connecting');
                setRetrying(true);
                retryRef.current = window.setTimeout(() => connect(uid, op, attempt + 1), wait);
                break;
              }
              case 'unknown':
                add({
                  kind: 'transport',
                  tone: 'error',
                  text: `The Console refused the connection before it opened (code ${c.code}${detail}), and it could not be checked why (a missing permission, or an unreachable Runtime gateway). Try again.`,
                });
                break;
            }
          });
          break;
        case 'early':
          add({
            kind: 'transport',
            tone: 'error',
            text: `The connection closed before the operation finished (code ${c.code}${detail}). The operation may still be running in the session; its result is unknown here.`,
          });
          break;
      }
    };
  };

  const cancel = () => {
    if (retrying) {
      window.clearTimeout(retryRef.current);
      setRetrying(false);
      setState('failed');
      add({ kind: 'transport', tone: 'info', text: 'Stopped retrying; the command did not run.' });
      return;
    }
    const ws = wsRef.current;
    if (ws && operationID) {
      send(ws, { type: 'cancel', operationID });
      add({ kind: 'transport', tone: 'info', text: `Cancel requested for operation ${operationID}.` });
    }
  };

  const busy = state === 'connecting' || state === 'running';
  const hasRun = entries.length > 0;

  const onCommandKey = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key !== 'ArrowUp' && e.key !== 'ArrowDown') return;
    const next = e.key === 'ArrowUp' ? history.older(line) : history.newer();
    if (next === null) return;
    e.preventDefault();
    setLine(next);
  };

  const copy = () => {
    const text = outputText(entries);
    copyText(text).then(
      () => setCopied({ ok: true, text: 'Output copied.' }),
      (err: unknown) => setCopied({ ok: false, text: `Could not copy: ${err instanceof Error ? err.message : String(err)}` }),
    );
  };

  return (
    <div className="session">
      {!ready && (
        <p className="notice" role="status">
          The session panel is available once the Run is <strong>Ready</strong> (now{' '}
          <strong>{run.status.phase ?? 'Unknown'}</strong>).
        </p>
      )}
      {ready && denied && can.data && (
        <div className="session-readonly" role="status">
          <p className="notice">
            <strong>Read-only.</strong> You cannot run commands in this session: the <code>{can.data.access.verb}</code>{' '}
            verb on <code>runs/{can.data.access.subresource}</code> is missing. The log and details stay readable.
          </p>
          <Forbidden access={can.data.access} message={can.data.reason} />
        </div>
      )}
      {ready && loggedOut && (
        <p className="notice" role="status">
          <strong>Read-only.</strong> Log in to run commands in this session.
        </p>
      )}
      {ready && can.isError && !loggedOut && (
        <p className="notice warning small" role="status">
          Could not check whether you may run commands ({can.error instanceof Error ? can.error.message : String(can.error)}); the
          Console checks again when you run one.
        </p>
      )}
      <form className="session-form" onSubmit={start} aria-label="Run a command in the session">
        <label htmlFor={`${id}-cmd`} className="field-label">
          Command
        </label>
        <div className="input-group">
          <span className="prompt" aria-hidden="true">
            <TerminalIcon />
          </span>
          <input
            id={`${id}-cmd`}
            className="input mono grow"
            value={line}
            onChange={(e) => setLine(e.target.value)}
            onKeyDown={onCommandKey}
            placeholder={!ready ? 'Waiting for the Run to be Ready' : readOnly ? 'Read-only: you may not run commands here' : commandPlaceholder(run.spec.runtime)}
            disabled={!ready || busy || readOnly || can.isPending}
            aria-describedby={`${id}-hint`}
            spellCheck={false}
            autoComplete="off"
          />
          <button type="submit" className="button primary" disabled={!ready || busy || readOnly || can.isPending || !line.trim()}>
            Run
          </button>
          <button type="button" className="button" onClick={cancel} disabled={!busy || (!operationID && !retrying)}>
            Cancel
          </button>
        </div>
        <details className="stdin">
          <summary>Standard input</summary>
          <label htmlFor={`${id}-stdin`} className="visually-hidden">
            Standard input
          </label>
          <textarea
            id={`${id}-stdin`}
            className="input mono"
            rows={3}
            value={stdin}
            onChange={(e) => setStdin(e.target.value)}
            disabled={!ready || busy || readOnly}
          />
        </details>
        <p className="muted small" id={`${id}-hint`}>
          Each Run starts a new operation over a new connection. ↑ and ↓ walk the commands run here.
          {lease ? ` While connected, heartbeats keep the ${lease}s lease alive.` : ''} Closing the page does not end
          the session Run.
        </p>
      </form>
      {forbidden && <Forbidden access={operationsAccess(ns, name)} />}
      {hasRun && (
        <div className="session-tools">
          <button type="button" className="button small" onClick={copy}>
            <CopyIcon /> Copy output
          </button>
          <span className={`small ${copied && !copied.ok ? 'danger-text' : 'muted'}`} role="status">
            {copied?.text ?? ''}
          </span>
        </div>
      )}
      {hasRun && (
        <div className="session-output" ref={outRef} role="log" aria-label="Session events" tabIndex={0}>
          {entries.map((e, i) => (
            <SessionEntry key={i} entry={e} />
          ))}
          {busy && <div className="ev ev-wait muted">{retrying ? 'waiting to retry…' : state === 'connecting' ? 'connecting…' : 'running…'}</div>}
        </div>
      )}
    </div>
  );
}

function SessionEntry({ entry }: { entry: Entry }) {
  if (entry.kind === 'command')
    return (
      <div className="ev ev-command">
        <span className="ev-tag">$</span> {entry.text}
      </div>
    );
  if (entry.kind === 'transport')
    return (
      <div className={`ev ev-transport ${entry.tone}`} role={entry.tone === 'error' ? 'alert' : undefined}>
        <span className="ev-tag">{entry.tone === 'error' ? 'connection' : 'note'}</span> {entry.text}
      </div>
    );
  const f = entry.frame;
  switch (f.type) {
    case 'accepted':
      return (
        <div className="ev ev-accepted">
          <span className="ev-tag">accepted</span> operation <code>{f.operationID}</code>
        </div>
      );
    case 'output':
      return (
        <div className={`ev ev-output ${f.stream === 'stderr' ? 'stderr' : ''}`}>
          {f.stream === 'stderr' && <span className="ev-tag">err</span>}
          <span className="ev-text">{entry.text}</span>
        </div>
      );
    case 'progress':
      return (
        <div className="ev ev-progress">
          <span className="ev-tag">progress</span> {f.message ?? ''}
          {f.percent !== undefined ? ` ${f.percent}%` : ''}
        </div>
      );
    case 'terminal':
      return (
        <div className={`ev ev-terminal ${f.status === 'Succeeded' && (f.exitCode ?? 0) === 0 ? 'ok' : 'bad'}`}>
          <span className="ev-tag">terminal</span> {f.status}
          {f.exitCode !== undefined ? ` · exit code ${f.exitCode}` : ''}
          {f.error ? ` · ${f.error}` : ''}
        </div>
      );
    case 'error':
      return (
        <div className="ev ev-transport error" role="alert">
          <span className="ev-tag">error</span> {f.error}
        </div>
      );
    case 'unknown':
      return (
        <div className="ev ev-unknown muted">
          <span className="ev-tag">frame</span> {f.raw}
        </div>
      );
  }
}
