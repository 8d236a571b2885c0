import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// The text colours of what the live lists, YAML view, timeline, queue and
// DAG added, on the backgrounds they are drawn on, in every Style x Theme
// (WCAG AA: 4.5:1 for normal text, 3:1 for the focus ring and highlighted
// edges, which are not text).

const css = readFileSync(new URL('./tokens.css', import.meta.url), 'utf8');

function luminance(hex: string): number {
  const channel = (i: number) => {
    const c = parseInt(hex.slice(1 + i, 3 + i), 16) / 255;
    return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
  };
  return 0.2126 * channel(0) + 0.7152 * channel(2) + 0.0722 * channel(4);
}

function contrast(a: string, b: string): number {
  const [la, lb] = [luminance(a), luminance(b)];
  return (Math.max(la, lb) + 0.05) / (Math.min(la, lb) + 0.05);
}

/** [foreground, background, minimum, where] */
const PAIRS: Array<[string, string, number, string]> = [
  ['--success', '--surface', 4.5, 'the Live badge in a page header'],
  ['--warning', '--surface', 4.5, 'the Reconnecting badge'],
  ['--success', '--bg', 4.5, 'the Live badge on the page background'],
  ['--warning', '--bg', 4.5, 'the Reconnecting badge on the page background'],
  ['--text-muted', '--bg', 4.5, 'the Polling badge on the page background'],
  ['--text-muted', '--surface', 4.5, 'timeline times, capacity notes, sort marks'],
  ['--text', '--dag-canvas', 4.5, 'the YAML text'],
  ['--text-muted', '--dag-card', 4.5, 'DAG stage titles and zoom level'],
  ['--text', '--dag-card', 4.5, 'DAG job names'],
  ['--focus', '--dag-card', 3, 'the focused DAG row outline'],
  ['--dag-edge-hl', '--dag-card', 3, 'highlighted edges and rows'],
  ['--dag-edge-hl', '--dag-canvas', 3, 'highlighted edges on the canvas'],
  ...Array.from({ length: 16 }, (_, i): [string, string, number, string] => [`--ansi-${i}`, '--log-bg', 4.5, `ANSI colour ${i} in a log line`]),
];

const HEX = /^#[0-9a-fA-F]{6}$/;

/** Every Style x Theme block with the variables it sets, later blocks of the same Style inheriting earlier ones. */
function themes(): Array<[string, Record<string, string>]> {
  const out: Array<[string, Record<string, string>]> = [];
  for (const block of css.matchAll(/([^{}]+)\{([^{}]*)\}/g)) {
    const selector = (block[1] ?? '').trim().split('\n').pop() ?? '';
    const vars = Object.fromEntries([...(block[2] ?? '').matchAll(/(--[\w-]+):\s*([^;]+);/g)].map((m) => [m[1] ?? '', (m[2] ?? '').trim()]));
    if (/data-theme/.test(selector)) out.push([selector, vars]);
  }
  return out;
}

describe('colours of the added views', () => {
  it('keep their contrast in every Style x Theme', () => {
    const ts = themes();
    expect(ts.length).toBeGreaterThanOrEqual(6);
    let checked = 0;
    for (const [selector, vars] of ts) {
      for (const [fg, bg, min, where] of PAIRS) {
        const [f, b] = [vars[fg] ?? '', vars[bg] ?? ''];
        if (!HEX.test(f) || !HEX.test(b)) continue;
        expect(contrast(f, b), `${selector}: ${where}: ${fg} ${f} on ${bg} ${b}`).toBeGreaterThanOrEqual(min);
        checked++;
      }
    }
    expect(checked).toBeGreaterThanOrEqual(PAIRS.length * 6);
  });
});
