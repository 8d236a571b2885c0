import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';

// Button and link text must stay readable in every Style and Theme, hovered
// or not (WCAG AA: 4.5:1 for normal text). Checked on the tokens themselves,
// so a hover colour cannot slip through because the browser run did not
// hover. Links use --link on surfaces and --link-tint on tinted areas (the
// page background, hovered rows), as base.css sets --link-here.

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

const PAIRS: [string, string][] = [
  ['--btn-primary-fg', '--btn-primary-bg'],
  ['--btn-primary-fg', '--btn-primary-hover-bg'],
  ['--btn-fg', '--btn-bg'],
  ['--btn-fg', '--btn-hover-bg'],
  ['--link', '--surface'],
  ['--link-tint', '--surface'],
  ['--link-tint', '--bg'],
  ['--link-tint', '--surface-hover'],
  ['--link-tint', '--surface-muted'],
];

const HEX = /^#[0-9a-fA-F]{6}$/;

describe('button and link colour tokens', () => {
  it('keep 4.5:1 between text and background in every block that sets both', () => {
    let checked = 0;
    for (const block of css.matchAll(/([^{}]+)\{([^{}]*)\}/g)) {
      const selector = (block[1] ?? '').trim().split('\n').pop() ?? '';
      const vars: Record<string, string> = Object.fromEntries(
        [...(block[2] ?? '').matchAll(/(--[\w-]+):\s*([^;]+);/g)].map((m) => [m[1] ?? '', (m[2] ?? '').trim()]),
      );
      for (const [fg, bg] of PAIRS) {
        const [f, b] = [vars[fg] ?? '', vars[bg] ?? ''];
        if (!HEX.test(f) || !HEX.test(b)) continue;
        expect(contrast(f, b), `${selector}: ${fg} ${f} on ${bg} ${b}`).toBeGreaterThanOrEqual(4.5);
        checked++;
      }
    }
    // Every Style × Theme sets its button colours; fewer pairs means the parse broke.
    expect(checked).toBeGreaterThanOrEqual(12 + 5 * 6);
  });
});
