// @vitest-environment jsdom
import { cleanup, fireEvent, render, screen } from '@testing-library/react';
import { MemoryRouter } from 'react-router';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import type { RunLogStream } from '../api/logStream';
import type { CursorRecord } from '../api/logTypes';
import type { FollowState } from '../lib/logs';
import { LogViewer, type LogViewerProps } from './LogViewer';

const ESC = String.fromCharCode(27);

// jsdom lays nothing out: give the scroll area and the rows a size so the
// virtualiser renders rows (it measures the scroll element and each row).
const sizes: [string, number][] = [
  ['offsetHeight', 400],
  ['offsetWidth', 800],
  ['clientHeight', 400],
  ['clientWidth', 800],
];
const saved = sizes.map(([k]) => [k, Object.getOwnPropertyDescriptor(HTMLElement.prototype, k)] as const);
beforeAll(() => {
  for (const [k, v] of sizes) Object.defineProperty(HTMLElement.prototype, k, { configurable: true, get: () => v });
});
afterAll(() => {
  for (const [k, d] of saved) if (d) Object.defineProperty(HTMLElement.prototype, k, d);
});
afterEach(cleanup);

const rec = (n: number, message: string, stream: 'stdout' | 'stderr' = 'stdout'): CursorRecord => ({
  stream,
  message,
  pod: 'bash-pool-0',
  cursor: `1700000000.${String(n).padStart(9, '0')}-0`,
  line: n,
});

function stream(lines: CursorRecord[], over: Partial<Omit<RunLogStream, 'reload'>> = {}): Omit<RunLogStream, 'reload'> {
  return {
    records: { lines, version: 1, dropped: 0, gaps: new Set(), prepended: 0 },
    status: 'ready',
    error: null,
    truncated: { cut: false },
    notes: [],
    retryIn: 0,
    end: null,
    older: { available: false, loading: false, error: null, start: true, gone: false },
    loadOlder: vi.fn(),
    anchor: null,
    ...over,
  };
}

const follow: FollowState = { follow: false, pinned: true, unseen: 0 };

function renderViewer(log: Omit<RunLogStream, 'reload'>, props: Partial<LogViewerProps> = {}, url = '/namespaces/team-a/runs/r1') {
  return render(
    <MemoryRouter initialEntries={[url]}>
      <LogViewer
        run="r1"
        log={log}
        follow={follow}
        onFollowEvent={() => {}}
        wrap={false}
        timestamps={false}
        search={{ query: '', lines: new Set(), current: undefined }}
        jump={null}
        anchorPrefix="L"
        height={400}
        {...props}
      />
    </MemoryRouter>,
  );
}

const shown = () => [...document.querySelectorAll('.log-line')].map((l) => [l.querySelector('.ln')?.textContent ?? '', l.querySelector('.msg')?.textContent ?? '']);

describe('LogViewer', () => {
  it('shows every record with its stable number, marks stderr, and names the log after the Run', () => {
    renderViewer(stream([rec(7, 'first'), rec(8, 'second', 'stderr'), rec(9, 'third')]));
    const log = screen.getByRole('log', { name: 'Log of Run r1' });
    expect(log).toBeTruthy();
    expect(shown()).toEqual([
      ['7', 'first'],
      ['8', 'second'],
      ['9', 'third'],
    ]);
    expect(document.querySelectorAll('.log-line')[1]!.className).toContain('stderr');
    // A line number is a link that names the record's cursor.
    expect(document.querySelector('.log-line .ln')!.getAttribute('data-cursor')).toBe('1700000000.000000007-0');
  });

  it('renders ANSI colours as classes and never shows an escape sequence', () => {
    renderViewer(stream([rec(1, `${ESC}[1;31mERROR${ESC}[0m: failed ${ESC}[2K${ESC}[1Gdone`)]));
    const msg = document.querySelector('.log-line .msg')!;
    expect(msg.textContent).toBe('ERROR: failed done');
    expect(msg.textContent).not.toContain(ESC);
    const error = [...msg.querySelectorAll('span')].find((s) => s.textContent === 'ERROR')!;
    expect(error.className).toMatch(/ansi-fg-1/);
    expect(error.className).toMatch(/ansi-bold/);
  });

  it('folds a ::group:: collapsed with its line count, and opens it on a click', () => {
    renderViewer(stream([rec(1, 'before'), rec(2, '::group::Install'), rec(3, 'a'), rec(4, 'b'), rec(5, '::endgroup::'), rec(6, 'after')]));
    const messages = () => shown().map(([, m]) => m);
    expect(messages()).not.toContain('a');
    expect(messages().join('\n')).not.toContain('::group::');
    const toggle = screen.getByRole('button', { name: /Install/ });
    expect(toggle.getAttribute('aria-expanded')).toBe('false');
    expect(toggle.querySelector('.group-count')!.textContent).toBe('(2 lines)');
    fireEvent.click(toggle);
    expect(toggle.getAttribute('aria-expanded')).toBe('true');
    expect(messages()).toEqual(expect.arrayContaining(['a', 'b', 'after']));
  });

  it('shows only the matching lines when asked', () => {
    renderViewer(stream([rec(1, 'tick 1'), rec(2, 'other'), rec(3, 'tick 2')]), {
      onlyMatching: true,
      search: { query: 'tick', lines: new Set([0, 2]), current: undefined },
    });
    expect(shown()).toEqual([
      ['1', 'tick 1'],
      ['3', 'tick 2'],
    ]);
  });

  it('offers "Load older" while older records exist, and it asks for them', () => {
    const log = stream([rec(41, 'line 41'), rec(42, 'line 42')], { older: { available: true, loading: false, error: null, start: false, gone: false } });
    renderViewer(log);
    fireEvent.click(screen.getByRole('button', { name: 'Load older' }));
    expect(log.loadOlder).toHaveBeenCalledTimes(1);
  });

  it('selects the record a #L<cursor> link names', () => {
    renderViewer(stream([rec(1, 'one'), rec(2, 'two'), rec(3, 'three')]), {}, '/namespaces/team-a/runs/r1#L1700000000.000000002-0');
    const selected = document.querySelectorAll('.log-line.selected');
    expect(selected).toHaveLength(1);
    expect(selected[0]!.querySelector('.msg')!.textContent).toBe('two');
  });
});
