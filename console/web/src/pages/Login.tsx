import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useId, useRef, useState, type FormEvent } from 'react';
import { useNavigate, useSearchParams } from 'react-router';
import { login } from '../api/client';
import { ApiError } from '../api/errors';
import { queryKeys, useSession } from '../api/queries';
import { safeReturnPath } from '../lib/returnPath';
import './Login.css';

/** Explains a failed login in words. */
function loginError(e: unknown): string {
  if (e instanceof ApiError) {
    if (e.status === 401)
      return 'The cluster rejected this token: it is invalid, expired, or not a Kubernetes bearer token. Create a new one and try again.';
    if (e.status === 400) return `The token could not be used: ${e.message}`;
    if (e.status === 403) return `The Console refused the login: ${e.message}`;
    if (e.status === 0) return 'The Console could not be reached. Check your connection and try again.';
    if (e.status === 503) return 'The Kubernetes API server is not reachable from the Console right now. Try again shortly.';
    return `Login failed (HTTP ${e.status} ${e.reason}): ${e.message}`;
  }
  return 'Login failed for an unknown reason.';
}

export function LoginPage() {
  const [token, setToken] = useState('');
  const [params] = useSearchParams();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const session = useSession();
  const id = useId();
  // With no `next`, `/` picks a namespace the new session may read.
  const asked = safeReturnPath(params.get('next'));
  const next = asked ?? '/';
  const input = useRef<HTMLInputElement>(null);

  useEffect(() => {
    document.title = 'Log in · Kruntimes Console';
  }, []);

  const m = useMutation({
    mutationFn: (t: string) => login(t),
    onSuccess: (info) => {
      setToken('');
      qc.setQueryData(queryKeys.session, info);
      // The namespace list depends on who is signed in: never land by the old one.
      qc.removeQueries({ queryKey: queryKeys.namespaces });
      void qc.invalidateQueries();
      navigate(next, { replace: true });
    },
    // The Connect button was disabled while connecting, which drops focus to
    // the page: put it back on the token, which the error now describes.
    onError: () => {
      input.current?.focus();
      input.current?.select();
    },
  });

  const onSubmit = (e: FormEvent) => {
    e.preventDefault();
    const t = token.trim();
    if (t) m.mutate(t);
  };

  return (
    <main className="login-page" id="main">
      <div className="login-card panel">
        <div className="login-brand">
          <img src="/favicon.svg" alt="" width="32" height="32" />
          <h1>Kruntimes Console</h1>
        </div>
        {session.data?.authenticated && (
          <p className="notice" role="status">
            Signed in as <strong>{session.data.username}</strong>. Log in again to switch accounts.
          </p>
        )}
        {asked && asked !== '/' && (
          <p className="muted small login-next">
            After logging in you return to <code className="wrap-anywhere">{asked}</code>.
          </p>
        )}
        <form onSubmit={onSubmit} noValidate>
          <label htmlFor={`${id}-token`} className="field-label">
            Kubernetes bearer token
          </label>
          <input
            ref={input}
            id={`${id}-token`}
            className="input wide"
            type="password"
            autoComplete="off"
            spellCheck={false}
            value={token}
            onChange={(e) => setToken(e.target.value)}
            aria-invalid={m.isError || undefined}
            aria-describedby={`${id}-help ${m.isError ? `${id}-err` : ''}`}
            required
            autoFocus
          />
          {m.isError && (
            <p id={`${id}-err`} className="field-error" role="alert">
              {loginError(m.error)}
            </p>
          )}
          <div className="login-help prose" id={`${id}-help`}>
            <p>
              The token is checked with a Kubernetes TokenReview and kept only in an HttpOnly session cookie for 8 hours.
              Your own RBAC permissions decide what you can see, and the Console opens a namespace you may read. Create a
              short-lived token for a ServiceAccount (such as the viewer account of the operations guide) in the namespace
              where that ServiceAccount lives:
            </p>
            <pre className="cmd">
              <code>kubectl -n NAMESPACE create token SERVICEACCOUNT --duration=1h</code>
            </pre>
          </div>
          <div className="form-actions">
            <button className="button primary" type="submit" disabled={m.isPending || !token.trim()}>
              {m.isPending ? 'Connecting…' : 'Connect'}
            </button>
            <button type="button" className="button subtle" onClick={() => navigate(next)}>
              Browse public summaries
            </button>
          </div>
        </form>
      </div>
    </main>
  );
}
