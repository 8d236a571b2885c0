/**
 * Read-only staged DAG of a WorkflowRun in SVG. Stage cards hold parallel job
 * rows; edges run between stages and visibly merge in front of jobs with
 * several needs. Job rows are ordinary links (Tab reaches them). Dragging on
 * empty canvas pans in any direction; wheel and scrollbars keep working.
 */
import { useMemo, useRef, type MouseEvent, type PointerEvent } from 'react';
import { useNavigate } from 'react-router';
import type { WorkflowRunDetail } from '../api/types';
import { dagRowLabel, layoutDag, stageJobs, type DagLayout, type Staging } from '../lib/dag';
import { bounded } from '../lib/format';
import { phaseTone } from '../lib/phase';

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
          width={layout.width}
          height={layout.height}
          viewBox={`0 0 ${layout.width} ${layout.height}`}
          className="dag-svg"
          role="group"
          aria-label={`Job graph of ${wr.metadata.name}: ${staging.stages.length} stages, ${staging.order.length} jobs`}
        >
          <g className="dag-edges" aria-hidden="true">
            {layout.edges.map((e) => (
              <path
                key={`${e.from}->${e.to}`}
                d={e.d}
                className={`dag-edge ${e.long ? 'long' : ''} ${e.backward ? 'backward' : ''} ${selected && (e.from === selected || e.to === selected) ? 'hl' : ''}`}
              />
            ))}
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
          {staging.order.map((id) => {
            const r = layout.rows.get(id)!;
            const j = staging.jobs.get(id)!;
            const st = jobs[id];
            const phase = st?.phase ?? 'Pending';
            const result = st?.outputs?.result;
            const display = wr.spec.jobs[id]?.name ?? id;
            const maxChars = Math.floor((rowW - 52) / 7.2);
            const title = bounded(display, Math.floor((rowW - 52) / 7.6));
            const sub = result !== undefined ? `${phase} · ${bounded(result, 200).text}` : phase;
            const subText = bounded(sub, maxChars);
            const warn = j.unknownNeeds.length > 0 || j.cyclic;
            const href = `${base}${encodeURIComponent(id)}`;
            return (
              <a
                key={id}
                href={href}
                className={`dag-row ${selected === id ? 'selected' : ''}`}
                onClick={(e) => onLink(e, href)}
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
        Drag the empty canvas to pan; scroll or use the scrollbars. Select a job to open its steps and logs.
      </p>
    </div>
  );
}
