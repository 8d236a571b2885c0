import type { AccessRequest, ApiErrorBody } from './types';

/** A failed Console API call, with the Kubernetes-style reason and the access check it needed. */
export class ApiError extends Error {
  readonly status: number;
  readonly reason: string;
  /** The check that failed (from the server, else what the client asked for). */
  readonly access: AccessRequest | undefined;

  constructor(status: number, reason: string, message: string, access?: AccessRequest) {
    super(message);
    this.name = 'ApiError';
    this.status = status;
    this.reason = reason;
    this.access = access;
  }

  get isForbidden(): boolean {
    return this.status === 403;
  }

  get isUnauthorized(): boolean {
    return this.status === 401;
  }

  get isNotFound(): boolean {
    return this.status === 404;
  }
}

const REASONS: Record<number, string> = {
  400: 'BadRequest',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'NotFound',
  409: 'Conflict',
  413: 'RequestEntityTooLarge',
  429: 'TooManyRequests',
  500: 'InternalError',
  502: 'BadGateway',
  503: 'ServiceUnavailable',
  504: 'Timeout',
};

/** True when `value` has the `{"error":{...}}` shape. */
export function isApiErrorBody(value: unknown): value is ApiErrorBody {
  if (typeof value !== 'object' || value === null || !('error' in value)) return false;
  const e = (value as { error: unknown }).error;
  return typeof e === 'object' && e !== null && 'message' in e;
}

/** Builds an ApiError from a status code and whatever body the server sent. */
export function toApiError(status: number, body: unknown, asked?: AccessRequest): ApiError {
  if (isApiErrorBody(body)) {
    const e = body.error;
    return new ApiError(
      typeof e.code === 'number' ? e.code : status,
      e.reason || REASONS[status] || 'Error',
      e.message || `request failed with HTTP ${status}`,
      e.access ?? asked,
    );
  }
  const reason = REASONS[status] ?? 'Error';
  const message =
    status === 0
      ? 'The Console could not be reached. Check the network connection and try again.'
      : `The Console answered HTTP ${status} (${reason}).`;
  return new ApiError(status, reason, message, asked);
}

/** Renders the `kubectl auth can-i` line that checks an access request. */
export function canIHint(a: AccessRequest): string {
  const resource = a.group ? `${a.resource}.${a.group}` : a.resource;
  const target = a.name ? `${resource}/${a.name}` : resource;
  const parts = ['kubectl auth can-i', a.verb, target];
  if (a.subresource) parts.push(`--subresource=${a.subresource}`);
  if (a.namespace) parts.push('-n', a.namespace);
  return parts.join(' ');
}

/** One sentence naming what was denied, e.g. "list runs.kruntimes.io in namespace team-a". */
export function describeAccess(a: AccessRequest): string {
  const resource = a.group ? `${a.resource}.${a.group}` : a.resource;
  const sub = a.subresource ? `/${a.subresource}` : '';
  const name = a.name ? ` "${a.name}"` : '';
  const ns = a.namespace ? ` in namespace "${a.namespace}"` : '';
  return `${a.verb} ${resource}${sub}${name}${ns}`;
}
