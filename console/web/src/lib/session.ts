/**
 * Pure helpers of the Session panel: command-line splitting, server frame
 * parsing, base64 output decoding, heartbeat timing and close explanations.
 */
import type { SessionOperation, SessionServerEvent } from '../api/requests';

/** Splits a command line on whitespace, honouring '…' and "…" quoting and \ escapes. */
export function splitCommandLine(line: string): string[] {
  const out: string[] = [];
  let cur = '';
  let inToken = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < line.length; i++) {
    const ch = line[i]!;
    if (quote) {
      if (ch === quote) quote = null;
      else if (ch === '\\' && quote === '"' && i + 1 < line.length) cur += line[++i];
      else cur += ch;
    } else if (ch === '"' || ch === "'") {
      quote = ch;
      inToken = true;
    } else if (ch === '\\' && i + 1 < line.length) {
      cur += line[++i];
      inToken = true;
    } else if (/\s/.test(ch)) {
      if (inToken) out.push(cur);
      cur = '';
      inToken = false;
    } else {
      cur += ch;
      inToken = true;
    }
  }
  if (inToken) out.push(cur);
  return out;
}

/** Builds the operation of a `send` frame, or null when the line is empty. */
export function toOperation(line: string, stdin?: string): SessionOperation | null {
  const [command, ...args] = splitCommandLine(line);
  if (!command) return null;
  const op: SessionOperation = { command };
  if (args.length) op.args = args;
  if (stdin) op.stdin = stdin;
  return op;
}

/**
 * A parsed server frame. Besides the protocol events, a gateway may answer a
 * frame it could not act on with `{"type":"error","error":"..."}`; anything
 * else is kept as `unknown` for display.
 */
export type ParsedFrame =
  | SessionServerEvent
  | { type: 'error'; error: string; operationID?: string }
  | { type: 'unknown'; raw: string };

/** Parses a server text frame; anything unexpected is kept as `unknown` for display. */
export function parseServerFrame(raw: string): ParsedFrame {
  let v: unknown;
  try {
    v = JSON.parse(raw);
  } catch {
    return { type: 'unknown', raw };
  }
  if (typeof v !== 'object' || v === null || !('type' in v)) return { type: 'unknown', raw };
  const f = v as Record<string, unknown>;
  switch (f.type) {
    case 'accepted':
      return typeof f.operationID === 'string' ? { type: 'accepted', operationID: f.operationID } : { type: 'unknown', raw };
    case 'output':
      return typeof f.data === 'string'
        ? {
            type: 'output',
            data: f.data,
            ...(f.stream === 'stdout' || f.stream === 'stderr' ? { stream: f.stream } : {}),
            ...(f.encoding === 'base64' ? { encoding: 'base64' as const } : {}),
          }
        : { type: 'unknown', raw };
    case 'progress':
      return {
        type: 'progress',
        ...(typeof f.message === 'string' ? { message: f.message } : {}),
        ...(typeof f.percent === 'number' ? { percent: f.percent } : {}),
      };
    case 'terminal':
      return {
        type: 'terminal',
        status: typeof f.status === 'string' ? f.status : 'Unknown',
        ...(typeof f.exitCode === 'number' ? { exitCode: f.exitCode } : {}),
        ...(typeof f.error === 'string' && f.error ? { error: f.error } : {}),
      };
    case 'error':
      return {
        type: 'error',
        error: typeof f.error === 'string' ? f.error : typeof f.message === 'string' ? f.message : raw,
        ...(typeof f.operationID === 'string' ? { operationID: f.operationID } : {}),
      };
    default:
      return { type: 'unknown', raw };
  }
}

/** Bytes shown in the hex preview of binary output. */
const HEX_PREVIEW = 64;

/**
 * Text of an output event. Base64 data that is valid UTF-8 text is shown as
 * text; other bytes (invalid UTF-8, control characters) are shown as a byte
 * count and a hex preview, never as mojibake.
 */
export function decodeOutput(e: { data: string; encoding?: 'base64' }): string {
  if (e.encoding !== 'base64') return e.data;
  let bytes: Uint8Array;
  try {
    const bin = atob(e.data);
    bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
  } catch {
    return `[undecodable base64 output: ${e.data.length} characters]`;
  }
  try {
    const text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    if (!hasControlCharacter(text)) return text;
  } catch {
    // not UTF-8: fall through to the hex preview
  }
  const shown = Array.from(bytes.subarray(0, HEX_PREVIEW), (b) => b.toString(16).padStart(2, '0')).join(' ');
  const more = bytes.length > HEX_PREVIEW ? ' …' : '';
  return `[binary output, ${bytes.length} byte${bytes.length === 1 ? '' : 's'}: ${shown}${more}]\n`;
}

/** Tabs, newlines and carriage returns are text; other control characters (C0 and DEL) are not. */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || c === 0x7f) return true;
  }
  return false;
}

/** Heartbeat period for a lease: a third of it, between 1 s and 30 s. */
export function heartbeatMs(leaseSeconds: number | undefined): number | null {
  if (!leaseSeconds || leaseSeconds <= 0) return null;
  return Math.round(Math.min(30, Math.max(1, leaseSeconds / 3)) * 1000);
}

export type CloseKind = 'refused' | 'forbidden' | 'unauthorized' | 'not-ready' | 'early' | 'normal';

/**
 * Explains a socket close. Browsers hide the HTTP status of a refused
 * upgrade (it surfaces as code 1006 before `open`); servers that accept and
 * then refuse use 4000 + HTTP status (4401, 4403, 4503).
 */
export function classifyClose(code: number, opened: boolean, terminal: boolean): CloseKind {
  if (code === 4403) return 'forbidden';
  if (code === 4401) return 'unauthorized';
  if (code === 4503 || code === 4409) return 'not-ready';
  if (!opened) return 'refused';
  if (!terminal) return 'early';
  return 'normal';
}

/** Why the operations socket failed before it opened, as far as the panel can tell. */
export type Refusal = 'unauthorized' | 'not-ready' | 'forbidden' | 'gateway' | 'unknown';

/**
 * What to tell the user when the operations socket failed before it opened.
 * Browsers hide the HTTP status of a refused upgrade (401, 403, 502, 503 all
 * read as code 1006), so the panel re-reads the session and runs the access
 * check again (the same SelfSubjectAccessReview the Console makes before the
 * upgrade): signed out means 401; a Run no longer Ready cannot take
 * operations; a denied check means 403. A granted check leaves the step after
 * it, the Runtime gateway, as the cause (the Console answers 502/503 when it
 * cannot reach it): the panel retries. A check that could not be made tells
 * nothing.
 */
export function explainRefusal(signedIn: boolean | undefined, ready: boolean, allowed: boolean | undefined): Refusal {
  if (signedIn === false) return 'unauthorized';
  if (!ready) return 'not-ready';
  if (allowed === false) return 'forbidden';
  if (allowed === true && signedIn === true) return 'gateway';
  return 'unknown';
}

/** Attempts of an operation whose handshake the gateway refused, the first included. */
export const GATEWAY_ATTEMPTS = 6;

/** Wait before retry `n` (1-based) of a refused handshake: 1, 2, 4, 8, 10 s. */
export function gatewayRetryMs(n: number): number {
  return Math.min(10_000, 1000 * 2 ** Math.max(0, n - 1));
}
