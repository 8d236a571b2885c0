import { useEffect, useRef, useState, type ReactNode } from 'react';
import { Link } from 'react-router';
import './Page.css';

export interface Crumb {
  label: string;
  to?: string;
}

/** Page heading with breadcrumbs; sets the document title. */
export function PageHeader({
  title,
  crumbs = [],
  badge,
  actions,
}: {
  title: string;
  crumbs?: Crumb[];
  badge?: ReactNode;
  actions?: ReactNode;
}) {
  useEffect(() => {
    document.title = `${title} · Kruntimes Console`;
  }, [title]);
  return (
    <div className="page-header">
      {crumbs.length > 0 && (
        <nav aria-label="Breadcrumb" className="crumbs">
          <ol>
            {crumbs.map((c, i) => (
              <li key={i}>{c.to ? <Link to={c.to}>{c.label}</Link> : <span>{c.label}</span>}</li>
            ))}
          </ol>
        </nav>
      )}
      <div className="page-title-row">
        <h1 className="page-title" tabIndex={-1}>
          {title}
        </h1>
        {badge}
        <div className="page-actions">{actions}</div>
      </div>
    </div>
  );
}

/** A titled panel. */
export function Panel({
  title,
  id,
  actions,
  children,
  className,
}: {
  title: ReactNode;
  id?: string;
  actions?: ReactNode;
  children: ReactNode;
  className?: string;
}) {
  const headingId = id ? `${id}-heading` : undefined;
  return (
    <section className={`panel ${className ?? ''}`} id={id} aria-labelledby={headingId}>
      <div className="panel-head">
        <h2 id={headingId} className="panel-title">
          {title}
        </h2>
        {actions && <div className="panel-actions">{actions}</div>}
      </div>
      <div className="panel-body">{children}</div>
    </section>
  );
}

/** Key/value list. Absent values render as an em dash. */
export function KeyValues({ items }: { items: Array<[string, ReactNode]> }) {
  return (
    <dl className="kv">
      {items.map(([k, v]) => (
        <div key={k} className="kv-row">
          <dt>{k}</dt>
          <dd>{v === undefined || v === null || v === '' ? <span className="muted">—</span> : v}</dd>
        </div>
      ))}
    </dl>
  );
}

/**
 * Horizontal scroll container of a wide table. While its content overflows it
 * becomes a labelled, focusable region so keyboard users can scroll it.
 */
export function TableWrap({ label, children }: { label: string; children: ReactNode }) {
  const ref = useRef<HTMLDivElement>(null);
  const [scrolls, setScrolls] = useState(false);
  useEffect(() => {
    const el = ref.current;
    if (!el) return;
    const check = () => setScrolls(el.scrollWidth > el.clientWidth + 1 || el.scrollHeight > el.clientHeight + 1);
    check();
    if (typeof ResizeObserver === 'undefined') return;
    const ro = new ResizeObserver(check);
    ro.observe(el);
    if (el.firstElementChild) ro.observe(el.firstElementChild);
    return () => ro.disconnect();
  }, []);
  return (
    <div
      ref={ref}
      className="table-wrap"
      {...(scrolls ? { tabIndex: 0, role: 'region', 'aria-label': `${label} (scrolls sideways)` } : {})}
    >
      {children}
    </div>
  );
}
