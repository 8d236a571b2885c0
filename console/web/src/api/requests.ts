/**
 * The frames of the session operations WebSocket: the Runtime gateway's
 * protocol, relayed verbatim between the browser and the gateway by
 * `/v1/.../operations:ws`, so the Console has no type of its own for them.
 * Everything the Console itself answers or reads (the Run list query too)
 * is in `./types`, generated from the Rust types.
 */
import type { LogRecord } from './types';

// ---------------------------------------------------------------------------
// Session operations WebSocket (/v1/namespaces/{ns}/runs/{name}/{uid}/operations:ws)
// ---------------------------------------------------------------------------

/** The operation the client asks the session Runtime to run. */
export interface SessionOperation {
  command: string;
  args?: string[];
  /** Text written to the command's standard input. */
  stdin?: string;
}

/**
 * Client → server frames. The first frame is always `send`; `cancel` names
 * the `operationID` from `accepted`; `heartbeat` is sent periodically while
 * the socket is open when the Run has `spec.mode.session.leaseSeconds`.
 */
export type SessionClientFrame =
  | { type: 'send'; operation: SessionOperation }
  | { type: 'cancel'; operationID: string }
  | { type: 'heartbeat' };

/** Server → client events, in order: `accepted`, then `output`/`progress`, then one `terminal`. */
export type SessionServerEvent =
  | { type: 'accepted'; operationID: string }
  | {
      type: 'output';
      stream?: LogRecord['stream'];
      /** Text, or base64 when `encoding` is `base64` (binary output). */
      data: string;
      encoding?: 'base64';
    }
  | { type: 'progress'; message?: string; percent?: number }
  | {
      type: 'terminal';
      exitCode?: number;
      /** e.g. `Succeeded`, `Failed`, `Cancelled`, `TimedOut`. */
      status: string;
      error?: string;
    };
