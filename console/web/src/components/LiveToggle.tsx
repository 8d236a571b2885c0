import { useEffect, useState } from 'react';
import { useLive } from '../api/watch';
import { age } from '../lib/format';
import './LiveToggle.css';

/** Whether changes arrive live (the namespace watch), are being reconnected, or are polled. */
export function LiveBadge() {
  const { state, detail } = useLive();
  const text =
    state === 'live'
      ? 'Live'
      : state === 'reconnecting'
        ? 'Reconnecting…'
        : state === 'connecting'
          ? 'Connecting…'
          : state === 'ended'
            ? 'Not live: polling every 5 s'
            : 'Polling every 5 s';
  return (
    <span className={`live-badge live-${state}`} role="status" title={detail} data-live={state}>
      <span className="live-dot" aria-hidden="true" />
      {text}
    </span>
  );
}

/** "Auto-refresh" switch plus when the data was last updated. */
export function LiveToggle({
  live,
  onChange,
  updatedAt,
  fetching,
}: {
  live: boolean;
  onChange(v: boolean): void;
  updatedAt: number;
  fetching: boolean;
}) {
  const [, tick] = useState(0);
  useEffect(() => {
    const t = window.setInterval(() => tick((n) => n + 1), 5000);
    return () => window.clearInterval(t);
  }, []);
  return (
    <div className="live">
      {live && <LiveBadge />}
      <label className="check">
        <input type="checkbox" checked={live} onChange={(e) => onChange(e.target.checked)} />
        Auto-refresh
      </label>
      <span className="muted small" aria-live="off">
        {fetching ? 'updating…' : updatedAt ? `updated ${age(new Date(updatedAt).toISOString())} ago` : ''}
      </span>
    </div>
  );
}

/** Banner shown when a list was served as a public summary without credentials. */
export function SummaryBanner() {
  return (
    <p className="notice" role="status">
      You are seeing a public summary. <a href={`/login?next=${encodeURIComponent(location.pathname)}`}>Log in</a> with
      a Kubernetes token to see details, logs and everything your RBAC permissions allow.
    </p>
  );
}
