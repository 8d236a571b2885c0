/**
 * Request shapes the browser sends: the Run list query and the frames of the
 * session operations WebSocket (relayed verbatim between the browser and the
 * Runtime gateway by `/v1/.../operations:ws`). The answers the Console builds
 * are in `./types` (generated from the Rust types).
 */
import type { LogRecord } from './types';

/**
 * Query of `GET /api/namespaces/{ns}/runs`. All optional; the server pushes
 * them to the API server (field selectors on `.status.phase`, `.spec.runtime`,
 * `.status.assignedPod`; `labelSelector` as is) and filters the rest itself.
 */
export interface RunListQuery {
  /** One phase, or several comma-separated. */
  phase?: string;
  runtime?: string;
  assignedPod?: string;
  /** Kubernetes label selector syntax, e.g. `app=web,tier!=db`. */
  labelSelector?: string;
  /** RFC 3339; only Runs created at or after this instant. */
  createdAfter?: string;
  /** Page size, 1..500, default 50. */
  limit?: number;
  /** Continue token from the previous page. */
  continue?: string;
}

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
