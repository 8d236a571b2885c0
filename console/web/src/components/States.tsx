/** Loading, empty, error and forbidden states shared by every page. */
import type { ReactNode } from 'react';
import { Link, useLocation } from 'react-router';
import { ApiError, canIHint, describeAccess } from '../api/errors';
import type { AccessRequest } from '../api/types';
import { LockIcon } from './Icons';
import './States.css';

export function Loading({ what }: { what: string }) {
  return (
    <div className="state state-loading" role="status" aria-live="polite">
      <span className="spinner" aria-hidden="true" /> Loading {what}…
    </div>
  );
}

export function Empty({ title, children }: { title: string; children?: ReactNode }) {
  return (
    <div className="state state-empty">
      <p className="state-title">{title}</p>
      {children && <div className="state-body">{children}</div>}
    </div>
  );
}

/** Explains a denied access check: verb, resource, namespace, and the kubectl line to verify it. */
export function Forbidden({ access, message }: { access?: AccessRequest | undefined; message?: string | undefined }) {
  return (
    <div className="state state-forbidden" role="alert">
      <p className="state-title">
        <LockIcon /> Forbidden
      </p>
      {access ? (
        <p className="state-body prose">
          Your account may not <strong>{describeAccess(access)}</strong>. Ask a cluster administrator for a Role that
          grants <code>{access.verb}</code> on{' '}
          <code>
            {access.resource}
            {access.subresource ? `/${access.subresource}` : ''}
          </code>{' '}
          in API group <code>{access.group || 'core'}</code>
          {access.namespace ? (
            <>
              {' '}
              in namespace <code>{access.namespace}</code>
            </>
          ) : null}
          .
        </p>
      ) : null}
      {message && <p className="state-body muted prose">{message}</p>}
      {access && (
        <div className="state-body">
          <span className="muted">Check with:</span>
          <pre className="cmd">
            <code>{canIHint(access)}</code>
          </pre>
        </div>
      )}
    </div>
  );
}

function LoginLink() {
  const loc = useLocation();
  const next = encodeURIComponent(loc.pathname + loc.search + loc.hash);
  return (
    <Link className="button primary" to={`/login?next=${next}`}>
      Log in
    </Link>
  );
}

/**
 * Renders any query error in words. `summary` (a PublicSummary) is shown on
 * the "Login needed" state: what may be read without a login.
 */
export function ErrorState({ error, what, summary }: { error: unknown; what: string; summary?: ReactNode }) {
  if (error instanceof ApiError) {
    if (error.isForbidden) return <Forbidden access={error.access} message={error.message} />;
    if (error.isUnauthorized)
      return (
        <div className="state state-error" role="alert">
          <p className="state-title">Login needed</p>
          <p className="state-body prose">
            {what.charAt(0).toUpperCase() + what.slice(1)} can only be read with your own Kubernetes credential.{' '}
            <span className="muted">{error.message}</span>
          </p>
          {summary && <div className="state-body">{summary}</div>}
          <div className="state-body">
            <LoginLink />
          </div>
        </div>
      );
    if (error.isNotFound)
      return (
        <div className="state state-error" role="alert">
          <p className="state-title">Not found</p>
          <p className="state-body prose">{error.message}</p>
        </div>
      );
    return (
      <div className="state state-error" role="alert">
        <p className="state-title">
          Could not load {what} ({error.status ? `HTTP ${error.status} ` : ''}
          {error.reason})
        </p>
        <p className="state-body prose">{error.message}</p>
      </div>
    );
  }
  return (
    <div className="state state-error" role="alert">
      <p className="state-title">Could not load {what}</p>
      <p className="state-body prose">{error instanceof Error ? error.message : String(error)}</p>
    </div>
  );
}
