// @vitest-environment jsdom
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { cleanup, fireEvent, render, screen, waitFor, within } from '@testing-library/react';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runDetail } from '../../tests/fixtures.mjs';
import * as client from '../api/client';
import type { AccessDecision, RunDetail, SessionInfo } from '../api/types';
import { toOperation } from '../lib/session';
import { SessionPanel } from './SessionPanel';

vi.mock('../api/client', async (importOriginal) => {
  const real = await importOriginal<typeof import('../api/client')>();
  return { ...real, getOperationsAccess: vi.fn(), getSession: vi.fn(), openOperationsSocket: vi.fn() };
});

const NAME = 'notebook-session';
const run: RunDetail = runDetail(NAME);
const NS = run.metadata.namespace;

const decision = (allowed: boolean): AccessDecision => ({
  allowed,
  access: client.operationsAccess(NS, NAME),
});

/** A WebSocket the test opens, answers and closes; what the panel sends is kept. */
class FakeSocket {
  static readonly OPEN = 1;
  readyState = 0;
  sent: string[] = [];
  onopen: (() => void) | null = null;
  onmessage: ((m: { data: unknown }) => void) | null = null;
  onerror: (() => void) | null = null;
  onclose: ((c: { code: number; reason: string }) => void) | null = null;
  send(data: string) {
    this.sent.push(data);
  }
  close(code = 1000, reason = '') {
    if (this.readyState === 3) return;
    this.readyState = 3;
    this.onclose?.({ code, reason });
  }
  open() {
    this.readyState = 1;
    this.onopen?.();
  }
  frame(f: object) {
    this.onmessage?.({ data: JSON.stringify(f) });
  }
}

function renderPanel(r: RunDetail = run) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false } } });
  return render(
    <QueryClientProvider client={qc}>
      <SessionPanel run={r} />
    </QueryClientProvider>,
  );
}

beforeEach(() => {
  vi.stubGlobal('WebSocket', FakeSocket);
  vi.mocked(client.getSession).mockResolvedValue({ authenticated: true, user: 'operator' } as SessionInfo);
});

afterEach(() => {
  cleanup();
  vi.unstubAllGlobals();
  vi.clearAllMocks();
});

describe('SessionPanel', () => {
  it('tells a caller without access that operations are forbidden before anything is typed, and opens no socket', async () => {
    vi.mocked(client.getOperationsAccess).mockResolvedValue(decision(false));
    renderPanel();
    const readOnly = await screen.findByText(new RegExp(`kubectl auth can-i create runs.kruntimes.io/${NAME} --subresource=operations -n ${NS}`));
    expect(readOnly).toBeTruthy();
    const cmd = screen.getByRole('textbox', { name: 'Command' });
    expect((cmd as HTMLInputElement).disabled).toBe(true);
    expect(client.getOperationsAccess).toHaveBeenCalledWith(NS, NAME);
    expect(client.openOperationsSocket).not.toHaveBeenCalled();
  });

  it('asks nothing while the Run is not Ready', async () => {
    const pending: RunDetail = { ...run, status: { ...run.status, phase: 'Pending' } };
    renderPanel(pending);
    const cmd = screen.getByRole('textbox', { name: 'Command' });
    expect((cmd as HTMLInputElement).disabled).toBe(true);
    expect(cmd.getAttribute('placeholder')).toBe('Waiting for the Run to be Ready');
    await new Promise((r) => setTimeout(r, 20));
    expect(client.getOperationsAccess).not.toHaveBeenCalled();
  });

  it('runs a command: sends one operation once the socket is open, shows the events in order, and frees the input', async () => {
    vi.mocked(client.getOperationsAccess).mockResolvedValue(decision(true));
    const ws = new FakeSocket();
    vi.mocked(client.openOperationsSocket).mockReturnValue(ws as unknown as WebSocket);
    renderPanel();
    const cmd = screen.getByRole('textbox', { name: 'Command' });
    await waitFor(() => expect((cmd as HTMLInputElement).disabled).toBe(false));
    fireEvent.change(cmd, { target: { value: 'echo hello' } });
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
    expect(client.openOperationsSocket).toHaveBeenCalledWith(NS, NAME, run.metadata.uid);
    // Nothing is sent before the socket is open (a retry never runs a command twice).
    expect(ws.sent).toHaveLength(0);
    ws.open();
    expect(ws.sent).toHaveLength(1);
    expect(JSON.parse(ws.sent[0]!)).toEqual({ type: 'send', operation: toOperation('echo hello') });
    ws.frame({ type: 'accepted', operationID: 'op-1' });
    ws.frame({ type: 'output', stream: 'stdout', data: 'hello\n' });
    ws.frame({ type: 'terminal', status: 'Succeeded', exitCode: 0 });
    const log = screen.getByRole('log', { name: 'Session events' });
    await waitFor(() => expect(log.querySelector('.ev-terminal')).not.toBeNull());
    const kinds = [...log.querySelectorAll('.ev')].map((e) => e.className.split(' ')[1]);
    expect(kinds).toEqual(['ev-command', 'ev-accepted', 'ev-output', 'ev-terminal']);
    expect(within(log).getByText(/hello/, { selector: '.ev-output *, .ev-output' })).toBeTruthy();
    expect(log.querySelector('.ev-terminal')?.textContent).toContain('Succeeded');
    await waitFor(() => expect((cmd as HTMLInputElement).disabled).toBe(false));
  });

  it('re-reads the session and the access when the socket is refused before it opened', async () => {
    vi.mocked(client.getOperationsAccess).mockResolvedValueOnce(decision(true)).mockResolvedValue(decision(false));
    const ws = new FakeSocket();
    vi.mocked(client.openOperationsSocket).mockReturnValue(ws as unknown as WebSocket);
    renderPanel();
    const cmd = screen.getByRole('textbox', { name: 'Command' });
    await waitFor(() => expect((cmd as HTMLInputElement).disabled).toBe(false));
    const sessionReads = vi.mocked(client.getSession).mock.calls.length;
    fireEvent.change(cmd, { target: { value: 'echo hi' } });
    fireEvent.click(screen.getByRole('button', { name: 'Run' }));
    ws.close(1006, '');
    await waitFor(() => expect(client.getOperationsAccess).toHaveBeenCalledTimes(2));
    expect(vi.mocked(client.getSession).mock.calls.length).toBeGreaterThan(sessionReads);
    // The second check said no: the panel explains the denial.
    await screen.findByText(/may not create runs\/operations here \(HTTP 403\)/);
    expect(ws.sent).toHaveLength(0);
  });
});
