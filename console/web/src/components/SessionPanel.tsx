/**
 * Session panel of a session Run: runs one command per WebSocket operation
 * against `/v1/.../operations:ws` and renders its events in order. The only
 * control in the Console that changes anything.
 */
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { getSession, openOperationsSocket, operationsAccess } from '../api/client';
import type { SessionClientFrame } from '../api/requests';
import type { RunDetail } from '../api/types';
import { classifyClose, decodeOutput, explainRefusal, heartbeatMs, parseServerFrame, toOperation, type ParsedFrame } from '../lib/session';
import { TerminalIcon } from './Icons';
import { Forbidden } from './States';

type Entry =
  | { kind: 'command'; text: string }
  | { kind: 'event'; frame: ParsedFrame; text?: string }
  | { kind: 'transport'; tone: 'info' | 'error'; text: string };

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
  const wsRef = useRef<WebSocket | null>(null);
  const outRef = useRef<HTMLDivElement>(null);

  const add = (e: Entry) => setEntries((prev) => [...prev, e]);

  // Close the socket when leaving the page. This does not release the session Run.
  useEffect(() => () => wsRef.current?.close(1000, 'page closed'), []);

  useEffect(() => {
    const el = outRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  }, [entries]);

  const send = (ws: WebSocket, f: SessionClientFrame) => {
    if (ws.readyState === WebSocket.OPEN) ws.send(JSON.stringify(f));
  };

  const start = (e: FormEvent) => {
    e.preventDefault();
    if (!ready || !uid) return;
    const op = toOperation(line, stdin || undefined);
    if (!op) return;
    wsRef.current?.close(1000, 'new operation');
    setForbidden(false);
    setOperationID(null);
    setState('connecting');
    add({ kind: 'command', text: line });

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
          // session to tell an expired login from a missing permission.
          void getSession()
            .then((s) => s.authenticated, () => undefined)
            .then((signedIn) => {
              switch (explainRefusal(signedIn, ready)) {
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
                    text: `The Console refused the connection before it opened (code ${c.code}${detail}). You are logged in and the Run is Ready, so your account most likely lacks permission to create runs/operations (HTTP 403). If the kubectl check above says yes, the Runtime gateway was unreachable (503): try again.`,
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
    const ws = wsRef.current;
    if (ws && operationID) {
      send(ws, { type: 'cancel', operationID });
      add({ kind: 'transport', tone: 'info', text: `Cancel requested for operation ${operationID}.` });
    }
  };

  const busy = state === 'connecting' || state === 'running';
  const hasRun = entries.length > 0;

  return (
    <div className="session">
      {!ready && (
        <p className="notice" role="status">
          The session panel is available once the Run is <strong>Ready</strong> (now{' '}
          <strong>{run.status.phase ?? 'Unknown'}</strong>).
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
            placeholder={ready ? 'python -c "print(42)"' : 'Waiting for the Run to be Ready'}
            disabled={!ready || busy}
            spellCheck={false}
            autoComplete="off"
          />
          <button type="submit" className="button primary" disabled={!ready || busy || !line.trim()}>
            {hasRun && !busy ? 'Run again' : 'Run'}
          </button>
          <button type="button" className="button" onClick={cancel} disabled={!busy || !operationID}>
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
            disabled={!ready || busy}
          />
        </details>
        <p className="muted small">
          Each Run starts a new operation over a new connection.
          {lease ? ` While connected, heartbeats keep the ${lease}s lease alive.` : ''} Closing the page does not end
          the session Run.
        </p>
      </form>
      {forbidden && <Forbidden access={operationsAccess(ns, name)} />}
      {hasRun && (
        <div className="session-output" ref={outRef} role="log" aria-label="Session events" tabIndex={0}>
          {entries.map((e, i) => (
            <SessionEntry key={i} entry={e} />
          ))}
          {busy && <div className="ev ev-wait muted">{state === 'connecting' ? 'connecting…' : 'running…'}</div>}
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
