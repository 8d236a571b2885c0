import { describe, expect, it } from 'vitest';
import { applySgr, color256, contrastRatio, luminance, parseAnsi, readableRgb, stripAnsi } from './ansi';

const E = '\u001b';

describe('parseAnsi', () => {
  it('leaves plain text alone', () => {
    expect(parseAnsi('hello world')).toEqual([{ text: 'hello world', style: {} }]);
    expect(parseAnsi('a\tb')).toEqual([{ text: 'a\tb', style: {} }]);
    expect(parseAnsi('')).toEqual([]);
  });

  it('renders the 16 colours and resets', () => {
    expect(parseAnsi(`${E}[31mERROR${E}[0m done`)).toEqual([
      { text: 'ERROR', style: { fg: { kind: 'palette', index: 1 } } },
      { text: ' done', style: {} },
    ]);
    expect(parseAnsi(`${E}[92mok${E}[39m`)).toEqual([{ text: 'ok', style: { fg: { kind: 'palette', index: 10 } } }]);
    expect(parseAnsi(`${E}[44;97mx`)).toEqual([
      { text: 'x', style: { bg: { kind: 'palette', index: 4 }, fg: { kind: 'palette', index: 15 } } },
    ]);
    // ESC[m is a reset too.
    expect(parseAnsi(`${E}[1mb${E}[mn`)).toEqual([
      { text: 'b', style: { bold: true } },
      { text: 'n', style: {} },
    ]);
  });

  it('renders bold, italic, underline and their own resets', () => {
    const spans = parseAnsi(`${E}[1;3;4ma${E}[22mb${E}[23mc${E}[24md`);
    expect(spans.map((s) => [s.text, s.style])).toEqual([
      ['a', { bold: true, italic: true, underline: true }],
      ['b', { italic: true, underline: true }],
      ['c', { underline: true }],
      ['d', {}],
    ]);
  });

  it('renders 256 colours and truecolour (; and : separators)', () => {
    expect(parseAnsi(`${E}[38;5;196mr`)[0]!.style.fg).toEqual({ kind: 'rgb', r: 255, g: 0, b: 0 });
    expect(parseAnsi(`${E}[38;5;9mr`)[0]!.style.fg).toEqual({ kind: 'palette', index: 9 });
    expect(parseAnsi(`${E}[48;5;244mg`)[0]!.style.bg).toEqual({ kind: 'rgb', r: 128, g: 128, b: 128 });
    expect(parseAnsi(`${E}[38;2;10;20;30mt`)[0]!.style.fg).toEqual({ kind: 'rgb', r: 10, g: 20, b: 30 });
    expect(parseAnsi(`${E}[38:2:1:2:3mt`)[0]!.style.fg).toEqual({ kind: 'rgb', r: 1, g: 2, b: 3 });
    // A colour then more attributes in one sequence.
    expect(parseAnsi(`${E}[38;5;21;1mt`)[0]!.style).toEqual({ fg: color256(21), bold: true });
  });

  it('strips every escape sequence that is not SGR', () => {
    expect(stripAnsi(`${E}[2K${E}[1Gprogress 50%`)).toBe('progress 50%');
    expect(stripAnsi(`${E}]0;window title${E}\\text`)).toBe('text');
    expect(stripAnsi(`${E}]8;;https://example.com${E}\\link${E}]8;;${E}\\`)).toBe('link');
    expect(stripAnsi(`${E}]0;title\u0007after`)).toBe('after');
    expect(stripAnsi(`${E}P1;2|data${E}\\x`)).toBe('x');
    expect(stripAnsi(`${E}(Bcharset${E}=`)).toBe('charset');
    expect(stripAnsi(`${E}[?25lhidden cursor${E}[?25h`)).toBe('hidden cursor');
    expect(stripAnsi('\u009b31mC1 CSI')).toBe('C1 CSI');
    expect(stripAnsi('carriage\rreturn\u0008 bell\u0007')).toBe('carriagereturn bell');
  });

  it('survives hostile input', () => {
    // Unterminated sequences swallow only themselves, never the text before.
    expect(stripAnsi(`before${E}[31`)).toBe('before');
    expect(stripAnsi(`before${E}`)).toBe('before');
    expect(stripAnsi(`before${E}]unterminated osc`)).toBe('before');
    expect(stripAnsi(`a${E}[31\nb`)).toBe('ab');
    // Huge parameters: clamped, not parsed into giant numbers; no colour out of range.
    const huge = parseAnsi(`${E}[38;5;${'9'.repeat(10_000)}mx`);
    expect(huge).toEqual([{ text: 'x', style: {} }]);
    const many = parseAnsi(`${E}[${'1;'.repeat(100_000)}31my`);
    expect(many.map((s) => s.text).join('')).toBe('y');
    expect(parseAnsi(`${E}[38;2;999;0;300mz`)[0]!.style.fg).toEqual({ kind: 'rgb', r: 255, g: 0, b: 255 });
    // A parameter that is not a number makes the sequence no SGR: dropped, style unchanged.
    expect(parseAnsi(`${E}[38;2;1;-1;3mz`)).toEqual([{ text: 'z', style: {} }]);
    // Truncated extended colours do not throw.
    expect(stripAnsi(`${E}[38;5mq${E}[38;2;1mr${E}[48mw`)).toBe('qrw');
    // Linear time on a long run of escapes.
    const long = `${E}[31m`.repeat(200_000) + 'end';
    const t0 = performance.now();
    expect(stripAnsi(long)).toBe('end');
    expect(performance.now() - t0).toBeLessThan(2000);
    // No text is ever markup: angle brackets stay text.
    expect(stripAnsi(`${E}[31m<img src=x onerror=alert(1)>`)).toBe('<img src=x onerror=alert(1)>');
  });
});

describe('applySgr', () => {
  it('resets everything on 0 and on no parameters', () => {
    expect(applySgr({ bold: true, fg: { kind: 'palette', index: 1 } }, [0])).toEqual({});
    expect(applySgr({ bold: true }, [])).toEqual({});
  });
});

describe('readableRgb', () => {
  it('moves a colour until it reads on the background', () => {
    const navy: [number, number, number] = [0, 0, 128];
    const dark: [number, number, number] = [1, 4, 9];
    const out = readableRgb(navy, dark);
    expect(contrastRatio(luminance(...out), luminance(...dark))).toBeGreaterThanOrEqual(4.5);
    const yellow: [number, number, number] = [255, 255, 0];
    const light: [number, number, number] = [246, 248, 250];
    const y = readableRgb(yellow, light);
    expect(contrastRatio(luminance(...y), luminance(...light))).toBeGreaterThanOrEqual(4.5);
    // A readable colour is kept.
    expect(readableRgb([255, 255, 255], dark)).toEqual([255, 255, 255]);
  });
});
