/**
 * ANSI escape sequences in log lines: a small parser that turns SGR
 * (Select Graphic Rendition: colours, bold, italic, underline, resets) into
 * styled spans and strips every other escape or control sequence, so a log
 * line never shows `␛[31m` and never carries markup. The viewer renders the
 * spans as React elements with classes (the 16 colours map to theme
 * variables) and inline colours (256-colour and truecolour), never as HTML.
 *
 * Hostile input is bounded: the scan is linear in the line's length, a
 * sequence without its final byte swallows the rest of the line, numbers
 * are clamped, and at most MAX_PARAMS parameters of one sequence are read.
 */

/** One of the 16 palette colours (0-7 normal, 8-15 bright), or an exact RGB colour. */
export type AnsiColor = { kind: 'palette'; index: number } | { kind: 'rgb'; r: number; g: number; b: number };

export interface AnsiStyle {
  fg?: AnsiColor;
  bg?: AnsiColor;
  bold?: boolean;
  dim?: boolean;
  italic?: boolean;
  underline?: boolean;
  inverse?: boolean;
  strike?: boolean;
}

export interface AnsiSpan {
  text: string;
  style: AnsiStyle;
}

/** Parameters of one sequence read at most (the rest are ignored). */
const MAX_PARAMS = 32;
/** Largest parameter value kept; longer digit runs are clamped, not parsed. */
const MAX_PARAM = 65_535;

const ESC = 0x1b;
const BEL = 0x07;

/** Whether a line has anything to parse: an escape, a C1 control or another control character but tab. */
// eslint-disable-next-line no-control-regex
const NEEDS_PARSE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;

function isFinal(c: number): boolean {
  return c >= 0x40 && c <= 0x7e;
}

/** The colour an extended (38/48) parameter list names, and how many parameters it used. */
function extendedColor(params: readonly number[], at: number): { color?: AnsiColor; used: number } {
  const mode = params[at + 1];
  if (mode === 5) {
    const n = params[at + 2];
    if (n === undefined) return { used: 2 };
    return { color: color256(n), used: 3 };
  }
  if (mode === 2) {
    const [r, g, b] = [params[at + 2], params[at + 3], params[at + 4]];
    if (r === undefined || g === undefined || b === undefined) return { used: params.length - at };
    const c = (v: number) => Math.max(0, Math.min(255, v));
    return { color: { kind: 'rgb', r: c(r), g: c(g), b: c(b) }, used: 5 };
  }
  return { used: mode === undefined ? 1 : 2 };
}

/** A 256-colour index: the 16 palette colours, the 6x6x6 cube, the 24 greys. */
export function color256(n: number): AnsiColor | undefined {
  if (n < 0 || n > 255) return undefined;
  if (n < 16) return { kind: 'palette', index: n };
  if (n < 232) {
    const v = n - 16;
    const level = (x: number) => (x === 0 ? 0 : 55 + x * 40);
    return { kind: 'rgb', r: level(Math.floor(v / 36)), g: level(Math.floor(v / 6) % 6), b: level(v % 6) };
  }
  const grey = 8 + (n - 232) * 10;
  return { kind: 'rgb', r: grey, g: grey, b: grey };
}

/** Applies one SGR sequence's parameters to `style` (a new object). */
export function applySgr(style: AnsiStyle, params: readonly number[]): AnsiStyle {
  const s: AnsiStyle = { ...style };
  const ps = params.length === 0 ? [0] : params;
  for (let i = 0; i < ps.length; i++) {
    const p = ps[i]!;
    if (p === 0) {
      for (const k of Object.keys(s)) delete s[k as keyof AnsiStyle];
    } else if (p === 1) s.bold = true;
    else if (p === 2) s.dim = true;
    else if (p === 3) s.italic = true;
    else if (p === 4) s.underline = true;
    else if (p === 7) s.inverse = true;
    else if (p === 9) s.strike = true;
    else if (p === 21 || p === 22) {
      delete s.bold;
      delete s.dim;
    } else if (p === 23) delete s.italic;
    else if (p === 24) delete s.underline;
    else if (p === 27) delete s.inverse;
    else if (p === 29) delete s.strike;
    else if (p >= 30 && p <= 37) s.fg = { kind: 'palette', index: p - 30 };
    else if (p >= 90 && p <= 97) s.fg = { kind: 'palette', index: p - 90 + 8 };
    else if (p === 39) delete s.fg;
    else if (p >= 40 && p <= 47) s.bg = { kind: 'palette', index: p - 40 };
    else if (p >= 100 && p <= 107) s.bg = { kind: 'palette', index: p - 100 + 8 };
    else if (p === 49) delete s.bg;
    else if (p === 38 || p === 48) {
      const { color, used } = extendedColor(ps, i);
      if (color) {
        if (p === 38) s.fg = color;
        else s.bg = color;
      }
      i += used - 1;
    }
    // Anything else (blink, fonts, overline, ...) is ignored.
  }
  return s;
}

/** Parses `a;b:c` SGR parameters; empty ones are 0; at most MAX_PARAMS. */
function parseParams(text: string, from: number, to: number): number[] {
  const out: number[] = [];
  let n = 0;
  let digits = 0;
  for (let i = from; i < to && out.length < MAX_PARAMS; i++) {
    const c = text.charCodeAt(i);
    if (c >= 0x30 && c <= 0x39) {
      if (digits < 6) n = n * 10 + (c - 0x30);
      digits++;
    } else if (c === 0x3b || c === 0x3a) {
      out.push(Math.min(n, MAX_PARAM));
      n = 0;
      digits = 0;
    } else {
      // A private marker or anything else: not an SGR we understand.
      return [-1];
    }
  }
  if (out.length < MAX_PARAMS) out.push(Math.min(n, MAX_PARAM));
  return out;
}

/**
 * Splits a line into styled spans: SGR sequences set the style, every other
 * escape sequence (CSI, OSC, DCS, ...) and control character but tab is
 * dropped. Adjacent text with the same style is one span.
 */
export function parseAnsi(text: string): AnsiSpan[] {
  if (!NEEDS_PARSE.test(text)) return text ? [{ text, style: {} }] : [];
  const spans: AnsiSpan[] = [];
  let style: AnsiStyle = {};
  let buf = '';
  const emit = () => {
    if (!buf) return;
    const last = spans[spans.length - 1];
    if (last && last.style === style) last.text += buf;
    else spans.push({ text: buf, style });
    buf = '';
  };
  const n = text.length;
  let i = 0;
  let plainFrom = 0;
  const cut = (to: number) => {
    if (to > plainFrom) buf += text.slice(plainFrom, to);
  };
  while (i < n) {
    const c = text.charCodeAt(i);
    const isC0 = c < 0x20 && c !== 0x09;
    const isC1 = c >= 0x7f && c <= 0x9f;
    if (!isC0 && !isC1) {
      i++;
      continue;
    }
    cut(i);
    // CSI: ESC [ or the 8-bit 0x9b.
    let csiStart = -1;
    if (c === ESC && text.charCodeAt(i + 1) === 0x5b) csiStart = i + 2;
    else if (c === 0x9b) csiStart = i + 1;
    if (csiStart >= 0) {
      let j = csiStart;
      while (j < n && !isFinal(text.charCodeAt(j))) {
        const d = text.charCodeAt(j);
        // A control character inside a sequence ends it unterminated.
        if (d < 0x20 || d > 0x7e) break;
        j++;
      }
      if (j >= n || !isFinal(text.charCodeAt(j))) {
        // Unterminated: drop the introducer and what follows up to here.
        i = j;
        plainFrom = j;
        continue;
      }
      if (text.charCodeAt(j) === 0x6d) {
        const params = parseParams(text, csiStart, j);
        if (params[0] !== -1) {
          emit();
          style = applySgr(style, params);
        }
      }
      i = j + 1;
      plainFrom = i;
      continue;
    }
    // String sequences: OSC (ESC ]), DCS (ESC P), SOS (ESC X), PM (ESC ^), APC (ESC _)
    // and their 8-bit forms end with BEL or ST (ESC \ or 0x9c).
    const next = text.charCodeAt(i + 1);
    const isString =
      (c === ESC && (next === 0x5d || next === 0x50 || next === 0x58 || next === 0x5e || next === 0x5f)) ||
      c === 0x9d ||
      c === 0x90 ||
      c === 0x98 ||
      c === 0x9e ||
      c === 0x9f;
    if (isString) {
      let j = i + (c === ESC ? 2 : 1);
      while (j < n) {
        const d = text.charCodeAt(j);
        if (d === BEL || d === 0x9c) {
          j++;
          break;
        }
        if (d === ESC && text.charCodeAt(j + 1) === 0x5c) {
          j += 2;
          break;
        }
        j++;
      }
      i = j;
      plainFrom = j;
      continue;
    }
    if (c === ESC) {
      // ESC, intermediates (0x20-0x2f), a final byte: two- or three-byte escapes (charset, keypad, ...).
      let j = i + 1;
      while (j < n && text.charCodeAt(j) >= 0x20 && text.charCodeAt(j) <= 0x2f) j++;
      if (j < n && text.charCodeAt(j) >= 0x30 && text.charCodeAt(j) <= 0x7e) j++;
      i = j;
      plainFrom = j;
      continue;
    }
    // Any other control character (CR, BS, BEL, C1 controls, DEL) is dropped.
    i++;
    plainFrom = i;
  }
  cut(n);
  emit();
  return spans;
}

/** The text a line shows: escapes and control characters removed. */
export function stripAnsi(text: string): string {
  if (!NEEDS_PARSE.test(text)) return text;
  let out = '';
  for (const s of parseAnsi(text)) out += s.text;
  return out;
}

// ---------------------------------------------------------------------------
// Readable colours
// ---------------------------------------------------------------------------

function channel(v: number): number {
  const c = v / 255;
  return c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4;
}

export function luminance(r: number, g: number, b: number): number {
  return 0.2126 * channel(r) + 0.7152 * channel(g) + 0.0722 * channel(b);
}

export function contrastRatio(a: number, b: number): number {
  return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}

/** Parses `rgb(r, g, b)` / `rgba(...)` / `#rrggbb` into channels, or null. */
export function parseCssColor(css: string): [number, number, number] | null {
  const hex = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(css.trim());
  if (hex) return [parseInt(hex[1]!, 16), parseInt(hex[2]!, 16), parseInt(hex[3]!, 16)];
  const rgb = /^rgba?\(\s*([\d.]+)[,\s]+([\d.]+)[,\s]+([\d.]+)/i.exec(css.trim());
  if (rgb) return [Number(rgb[1]), Number(rgb[2]), Number(rgb[3])];
  return null;
}

/**
 * An exact colour moved towards white or black (whichever side of the
 * background has room) until it reaches `min` contrast on `bg`: a dark blue
 * stays blue-ish but readable on a dark log.
 */
export function readableRgb(fg: [number, number, number], bg: [number, number, number], min = 4.5): [number, number, number] {
  const lb = luminance(...bg);
  if (contrastRatio(luminance(...fg), lb) >= min) return fg;
  const target = lb < 0.18 ? 255 : 0;
  let lo = 0;
  let hi = 1;
  const mix = (t: number): [number, number, number] => fg.map((v) => Math.round(v + (target - v) * t)) as [number, number, number];
  for (let k = 0; k < 16; k++) {
    const mid = (lo + hi) / 2;
    if (contrastRatio(luminance(...mix(mid)), lb) >= min) hi = mid;
    else lo = mid;
  }
  return mix(hi);
}
