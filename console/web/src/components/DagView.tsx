/**
 * Read-only staged DAG of a WorkflowRun in SVG. Stage cards hold parallel job
 * rows; edges run between stages, end in arrowheads and visibly merge in
 * front of jobs with several needs. Job rows are ordinary links, in stage
 * order for Tab; the arrow keys move between jobs and stages, and a focused
 * row is scrolled into view. Hover or focus highlights a job's upstream and
 * downstream. Dragging on empty canvas pans in any direction; wheel and
 * scrollbars keep working; zoom buttons and fit-to-view scale the drawing.
 */
import { useId, useMemo, useRef, useState, useSyncExternalStore, type KeyboardEvent, type MouseEvent, type PointerEvent } from 'react';
import { Link, useNavigate } from 'react-router';
import { StatusGlyph } from './Status';
import type { WorkflowRunDetail } from '../api/types';
import {
  dagRowLabel,
  fitScale,
  focusOrder,
  isDagKey,
  layoutDag,
  lineage,
  moveFocus,
  onLineage,
  stageJobs,
  type DagLayout,
  type Staging,
} from '../lib/dag';
import { bounded } from '../lib/format';
import { phaseTone } from '../lib/phase';
import './DagView.css';

export function useDag(wr: WorkflowRunDetail): { staging: Staging; layout: DagLayout } {
  return useMemo(() => {
    const staging = stageJobs(Object.entries(wr.spec.jobs ?? {}).map(([id, j]) => ({ id, needs: j.needs ?? [] })));
    return { staging, layout: layoutDag(staging) };
  }, [wr]);
}

/** Glyph drawn inside an SVG at (x, y) centre. */
function SvgGlyph({ phase, x, y }: { phase: string | undefined; x: number; y: number }) {
  const tone = phaseTone(phase);
  return (
    <g transform={`translate(${x - 8},${y - 8})`} className={`glyph tone-${tone}`} aria-hidden="true">
      <circle cx="8" cy="8" r="7" className="glyph-bg" />
      {tone === 'success' && <path d="M4.8 8.2l2.1 2.1 4.3-4.5" className="glyph-fg" />}
      {tone === 'danger' && <path d="M5.5 5.5l5 5M10.5 5.5l-5 5" className="glyph-fg" />}
      {tone === 'warning' && <path d="M8 4.5v4.2M8 11.2v.3" className="glyph-fg" />}
      {tone === 'active' && <circle cx="8" cy="8" r="2.6" className="glyph-dot" />}
      {tone === 'pending' && <path d="M8 4.8V8l2.2 1.4" className="glyph-fg" />}
      {tone === 'neutral' && <path d="M5 8h6" className="glyph-fg" />}
    </g>
  );
}

export function DagView({ wr, ns, selected }: { wr: WorkflowRunDetail; ns: string; selected?: string }) {
  const { staging, layout } = useDag(wr);
  const navigate = useNavigate();
  const scrollRef = useRef<HTMLDivElement>(null);
  const drag = useRef<{ x: number; y: number; left: number; top: number; id: number } | null>(null);
  const jobs = wr.status.jobs ?? {};
  const base = `/namespaces/${ns}/workflowruns/${wr.metadata.name}/jobs/`;
  const rowRefs = useRef(new Map<string, HTMLElement | SVGElement>());
  const [hovered, setHovered] = useState<string | null>(null);
  const [focused, setFocused] = useState<string | null>(null);
  const [scale, setScale] = useState(1);
  const arrowId = `${useId().replace(/:/g, '')}-arrow`;
  const active = hovered ?? focused;
  const family = useMemo(() => (active ? lineage(staging, active) : null), [staging, active]);
  const order = useMemo(() => focusOrder(staging), [staging]);

  /** Scrolls the canvas so the row of `id` is fully visible (with a margin). */
  const reveal = (id: string) => {
    const el = scrollRef.current;
    const r = layout.rows.get(id);
    if (!el || !r) return;
    const pad = 16;
    const left = r.x * scale - pad;
    const right = (r.x + r.width) * scale + pad;
    const top = r.y * scale - pad;
    const bottom = (r.y + r.height) * scale + pad;
    if (left < el.scrollLeft) el.scrollLeft = left;
    else if (right > el.scrollLeft + el.clientWidth) el.scrollLeft = right - el.clientWidth;
    if (top < el.scrollTop) el.scrollTop = top;
    else if (bottom > el.scrollTop + el.clientHeight) el.scrollTop = bottom - el.clientHeight;
  };

  const onRowKey = (e: KeyboardEvent<Element>, id: string) => {
    if (!isDagKey(e.key) || e.altKey || e.ctrlKey || e.metaKey) return;
    e.preventDefault();
    const next = moveFocus(staging, layout, id, e.key);
    rowRefs.current.get(next)?.focus();
  };

  const zoom = (next: number) => setScale(Math.min(2, Math.max(0.1, Math.round(next * 100) / 100)));
  const fit = () => {
    const el = scrollRef.current;
    if (!el) return;
    setScale(fitScale(layout.width, layout.height, el.clientWidth - 4, Math.max(240, window.innerHeight * 0.7), 0.1));
  };

  const onPointerDown = (e: PointerEvent<HTMLDivElement>) => {
    if (e.button !== 0) return;
    // Job rows are links: dragging starts only on empty canvas.
    if ((e.target as Element).closest('a')) return;
    const el = scrollRef.current;
    if (!el) return;
    drag.current = { x: e.clientX, y: e.clientY, left: el.scrollLeft, top: el.scrollTop, id: e.pointerId };
    el.setPointerCapture(e.pointerId);
    el.classList.add('dragging');
  };
  const onPointerMove = (e: PointerEvent<HTMLDivElement>) => {
    const d = drag.current;
    const el = scrollRef.current;
    if (!d || !el || d.id !== e.pointerId) return;
    el.scrollLeft = d.left - (e.clientX - d.x);
    el.scrollTop = d.top - (e.clientY - d.y);
  };
  const endDrag = (e: PointerEvent<HTMLDivElement>) => {
    const el = scrollRef.current;
    if (!drag.current || !el) return;
    drag.current = null;
    if (el.hasPointerCapture(e.pointerId)) el.releasePointerCapture(e.pointerId);
    el.classList.remove('dragging');
  };

  const onLink = (e: MouseEvent<Element>, href: string) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
    e.preventDefault();
    navigate(href);
  };

  if (staging.order.length === 0) return <p className="muted">This WorkflowRun declares no jobs.</p>;

  const rowW = layout.cards[0]?.width ?? 240;
  const producers = new Set(layout.edges.map((e) => e.from));
  return (
    <div className="dag">
      {staging.hasCycle && (
        <p className="notice warning" role="status">
          The declared <code>needs</code> contain a cycle; the jobs involved are marked and placed after their other
          needs.
        </p>
      )}
      <div className="dag-tools" role="toolbar" aria-label="Graph view">
        <button type="button" className="button subtle small" onClick={() => zoom(scale - 0.1)} disabled={scale <= 0.1}>
          Zoom out
        </button>
        <span className="dag-zoom" aria-live="polite">
          {Math.round(scale * 100)}%
        </span>
        <button type="button" className="button subtle small" onClick={() => zoom(scale + 0.1)} disabled={scale >= 2}>
          Zoom in
        </button>
        <button type="button" className="button subtle small" onClick={fit}>
          Fit to view
        </button>
        <button type="button" className="button subtle small" onClick={() => setScale(1)} disabled={scale === 1}>
          Actual size
        </button>
      </div>
      <div
        ref={scrollRef}
        className="dag-scroll"
        onPointerDown={onPointerDown}
        onPointerMove={onPointerMove}
        onPointerUp={endDrag}
        onPointerCancel={endDrag}
        data-testid="dag-canvas"
      >
        <svg
          width={Math.round(layout.width * scale)}
          height={Math.round(layout.height * scale)}
          viewBox={`0 0 ${layout.width} ${layout.height}`}
          className="dag-svg"
          role="group"
          aria-label={`Job graph of ${wr.metadata.name}: ${staging.stages.length} stages, ${staging.order.length} jobs`}
        >
          <defs>
            <marker id={arrowId} viewBox="0 0 8 8" refX="7.5" refY="4" markerWidth="7" markerHeight="7" orient="auto">
              <path d="M0,0.5 L8,4 L0,7.5 z" className="dag-arrow" />
            </marker>
            <marker id={`${arrowId}-hl`} viewBox="0 0 8 8" refX="7.5" refY="4" markerWidth="7" markerHeight="7" orient="auto">
              <path d="M0,0.5 L8,4 L0,7.5 z" className="dag-arrow hl" />
            </marker>
          </defs>
          <g className={`dag-edges ${active ? 'has-active' : ''}`} aria-hidden="true">
            {layout.edges.map((e) => {
              const lit = active && family ? onLineage(e, active, family) : false;
              const sel = !active && selected && (e.from === selected || e.to === selected);
              return (
                <path
                  key={`${e.from}->${e.to}`}
                  d={e.d}
                  markerEnd={`url(#${arrowId}${lit || sel ? '-hl' : ''})`}
                  data-edge={`${e.from}->${e.to}`}
                  className={`dag-edge ${e.long ? 'long' : ''} ${e.backward ? 'backward' : ''} ${lit || sel ? 'hl' : ''}`}
                />
              );
            })}
            {layout.merges.map((m) => (
              <circle key={m.id} cx={m.x} cy={m.y} r={3.5} className="dag-merge" />
            ))}
          </g>
          {layout.cards.map((c) => (
            <g key={c.stage} className="dag-card">
              <rect x={c.x} y={c.y} width={c.width} height={c.height} className="dag-card-bg" />
              <text x={c.x + 12} y={c.y + 20} className="dag-card-title">
                Stage {c.stage + 1} · {staging.stages[c.stage]!.length} job{staging.stages[c.stage]!.length === 1 ? '' : 's'}
              </text>
            </g>
          ))}
          {order.map((id) => {
            const r = layout.rows.get(id)!;
            const j = staging.jobs.get(id)!;
            const st = jobs[id];
            const phase = st?.phase ?? 'Pending';
            const result = st?.outputs?.result;
            const display = id;
            const maxChars = Math.floor((rowW - 52) / 7.2);
            const title = bounded(display, Math.floor((rowW - 52) / 7.6));
            const sub = result !== undefined ? `${phase} · ${bounded(result, 200).text}` : phase;
            const subText = bounded(sub, maxChars);
            const warn = j.unknownNeeds.length > 0 || j.cyclic;
            const href = `${base}${encodeURIComponent(id)}`;
            const kin =
              active === id ? 'active' : family?.upstream.has(id) ? 'up' : family?.downstream.has(id) ? 'down' : active ? 'dim' : '';
            return (
              <a
                key={id}
                href={href}
                data-job={id}
                ref={(el) => {
                  if (el) rowRefs.current.set(id, el);
                  else rowRefs.current.delete(id);
                }}
                className={`dag-row ${selected === id ? 'selected' : ''} ${kin}`}
                onClick={(e) => onLink(e, href)}
                onKeyDown={(e) => onRowKey(e, id)}
                onFocus={() => {
                  setFocused(id);
                  reveal(id);
                }}
                onBlur={() => setFocused((f) => (f === id ? null : f))}
                onMouseEnter={() => setHovered(id)}
                onMouseLeave={() => setHovered((h) => (h === id ? null : h))}
                aria-label={dagRowLabel(title.text, subText.text, j.needs, warn)}
              >
                <title>
                  {display} — {phase}
                  {result !== undefined ? `\nresult: ${bounded(result, 400).text}` : ''}
                  {j.unknownNeeds.length ? `\nneeds undeclared job(s): ${j.unknownNeeds.join(', ')}` : ''}
                  {j.cyclic ? '\npart of a dependency cycle' : ''}
                </title>
                <rect x={r.x + 6} y={r.y + 3} width={r.width - 12} height={r.height - 6} className="dag-row-bg" />
                <SvgGlyph phase={phase} x={r.x + 24} y={r.cy} />
                <text x={r.x + 40} y={r.cy - 5} className="dag-row-title">
                  {title.text}
                </text>
                {/* A space between the two texts keeps the row's visible words apart for assistive technology. */}
                {' '}
                <text x={r.x + 40} y={r.cy + 13} className={`dag-row-sub ${result !== undefined ? 'has-result' : ''}`}>
                  {subText.text}
                </text>
                {warn && (
                  <g className="dag-warn" transform={`translate(${r.x + r.width - 26},${r.cy - 8})`}>
                    <path d="M8 1.5l7 13H1z" />
                    <path d="M8 6v4M8 12v.3" className="dag-warn-mark" />
                  </g>
                )}
                {j.needs.length > 0 && <circle cx={r.inX} cy={r.cy} r={3} className="dag-port" />}
                {producers.has(id) && <circle cx={r.outX} cy={r.cy} r={3} className="dag-port" />}
              </a>
            );
          })}
        </svg>
      </div>
      <p className="muted small dag-hint">
        Drag the empty canvas to pan; scroll or use the scrollbars. Tab or the arrow keys move between jobs (Home and End
        to the first and last); hovering or focusing a job highlights what it needs and what needs it. Select a job to
        open its steps and logs.
      </p>
    </div>
  );
}

/** Whether the media query matches now (and again on every change). */
export function useMediaQuery(query: string): boolean {
  return useSyncExternalStore(
    (onChange) => {
      const m = window.matchMedia(query);
      m.addEventListener('change', onChange);
      return () => m.removeEventListener('change', onChange);
    },
    () => window.matchMedia(query).matches,
    () => false,
  );
}

/** Below this width the graph gives way to the stages stacked vertically. */
export const NARROW_DAG = '(max-width: 600px)';

/**
 * The graph on a narrow screen: stages stacked top to bottom, each a list of
 * its jobs (phase glyph, name, what it needs) as links, so every job is on
 * screen without panning.
 */
export function DagStages({ wr, ns }: { wr: WorkflowRunDetail; ns: string }) {
  const { staging } = useDag(wr);
  const jobs = wr.status.jobs ?? {};
  const base = `/namespaces/${ns}/workflowruns/${wr.metadata.name}/jobs/`;
  return (
    <ol className="dag-stages" aria-label="Jobs by stage">
      {staging.stages.map((ids, s) => (
        <li key={s} className="dag-stage">
          <span className="dag-stage-title muted small">Stage {s + 1}</span>
          <ul>
            {ids.map((id) => {
              const phase = jobs[id]?.phase ?? 'Pending';
              const needs = wr.spec.jobs[id]?.needs ?? [];
              return (
                <li key={id}>
                  <Link to={`${base}${encodeURIComponent(id)}`} className="dag-stage-job">
                    <StatusGlyph tone={phaseTone(phase)} />
                    <span className="dag-stage-name">{id}</span>
                    <span className="muted small">{phase}</span>
                  </Link>
                  {needs.length > 0 && <span className="dag-stage-needs muted small">needs {needs.join(', ')}</span>}
                </li>
              );
            })}
          </ul>
        </li>
      ))}
    </ol>
  );
}
