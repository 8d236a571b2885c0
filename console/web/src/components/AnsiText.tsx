/**
 * A log message with its ANSI colours: spans from `parseAnsi` rendered as
 * React elements (classes for the 16 theme colours and attributes, inline
 * colours for 256-colour and truecolour ones, moved until they read on the
 * log's background), with the search's matches marked. Never HTML.
 */
import type { CSSProperties, ReactNode } from 'react';
import { parseAnsi, readableRgb, type AnsiColor, type AnsiStyle } from '../lib/ansi';
import './AnsiText.css';

type Rgb = [number, number, number];

function classes(s: AnsiStyle): string {
  const c: string[] = [];
  if (s.fg?.kind === 'palette') c.push(`ansi-fg-${s.fg.index}`);
  if (s.bg?.kind === 'palette') c.push(`ansi-bg-${s.bg.index}`);
  if (s.bold) c.push('ansi-bold');
  if (s.dim) c.push('ansi-dim');
  if (s.italic) c.push('ansi-italic');
  if (s.underline) c.push('ansi-underline');
  if (s.strike) c.push('ansi-strike');
  if (s.inverse) c.push('ansi-inverse');
  return c.join(' ');
}

function rgbOf(c: AnsiColor | undefined): Rgb | null {
  return c?.kind === 'rgb' ? [c.r, c.g, c.b] : null;
}

function inline(s: AnsiStyle, bg: Rgb | null): CSSProperties | undefined {
  const fg = rgbOf(s.fg);
  const back = rgbOf(s.bg);
  if (!fg && !back) return undefined;
  const out: CSSProperties = {};
  if (fg) {
    const [r, g, b] = bg ? readableRgb(fg, bg) : fg;
    out.color = `rgb(${r}, ${g}, ${b})`;
  }
  // A background is a tint, so the text on it (the log's own colour) stays readable.
  if (back) out.backgroundColor = `rgba(${back[0]}, ${back[1]}, ${back[2]}, 0.3)`;
  return out;
}

/** The ranges of `query` (case-insensitive) in `text`. */
function hitRanges(text: string, query: string): Array<[number, number]> {
  const out: Array<[number, number]> = [];
  if (!query) return out;
  const lower = text.toLowerCase();
  const q = query.toLowerCase();
  let from = 0;
  for (;;) {
    const at = lower.indexOf(q, from);
    if (at < 0) break;
    out.push([at, at + q.length]);
    from = at + Math.max(1, q.length);
  }
  return out;
}

export interface AnsiTextProps {
  text: string;
  /** Marks its matches (case-insensitive), when set. */
  query?: string;
  /** The log's background, to keep exact colours readable on it. */
  background?: Rgb | null;
}

export function AnsiText({ text, query = '', background = null }: AnsiTextProps) {
  const spans = parseAnsi(text);
  const plain = spans.length === 1 && !spans[0]!.style.fg && Object.keys(spans[0]!.style).length === 0;
  if (!query && plain) return <>{spans[0]!.text}</>;
  const hits = hitRanges(
    spans.map((s) => s.text).join(''),
    query,
  );
  const out: ReactNode[] = [];
  let pos = 0;
  let h = 0;
  spans.forEach((span, si) => {
    const cls = classes(span.style);
    const style = inline(span.style, background);
    const wrap = (t: string, key: string) =>
      cls || style ? (
        <span key={key} className={cls || undefined} style={style}>
          {t}
        </span>
      ) : (
        <span key={key}>{t}</span>
      );
    const end = pos + span.text.length;
    let at = pos;
    while (at < end) {
      while (h < hits.length && hits[h]![1] <= at) h++;
      const hit = hits[h];
      if (!hit || hit[0] >= end) {
        out.push(wrap(span.text.slice(at - pos), `${si}-${at}`));
        at = end;
      } else if (hit[0] > at) {
        out.push(wrap(span.text.slice(at - pos, hit[0] - pos), `${si}-${at}`));
        at = hit[0];
      } else {
        const stop = Math.min(hit[1], end);
        out.push(<mark key={`${si}-${at}m`}>{wrap(span.text.slice(at - pos, stop - pos), `${si}-${at}i`)}</mark>);
        at = stop;
      }
    }
    pos = end;
  });
  return <>{out}</>;
}
