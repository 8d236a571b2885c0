import { describe, expect, it } from 'vitest';
// Records of a server without cursors: the fallback the viewer keeps.
import type { CursorRecord as LogRecord } from '../api/logTypes';
import {
  INITIAL_FOLLOW,
  ResumeMatcher,
  atBottom,
  clampTail,
  followReducer,
  highlight,
  isPaused,
  logText,
  mergeResumed,
  parseLineHash,
  searchLines,
  stepMatch,
  tailSummary,
  type FollowEvent,
} from './logs';

const rec = (message: string, time?: string, stream: 'stdout' | 'stderr' = 'stdout'): LogRecord => ({
  stream,
  message,
  pod: 'pool-0',
  ...(time ? { time } : {}),
});
const t = (s: number) => `2025-01-01T00:00:${String(s).padStart(2, '0')}Z`;

describe('resume after reconnect', () => {
  it('drops the re-sent tail and keeps new records', () => {
    const history = [rec('a', t(1)), rec('b', t(2)), rec('c', t(3))];
    const { append, gap } = mergeResumed(history, [rec('b', t(2)), rec('c', t(3)), rec('d', t(4))]);
    expect(append.map((r) => r.message)).toEqual(['d']);
    expect(gap).toBe(false);
  });

  it('keeps a new line equal in text to an old one but with another time', () => {
    const history = [rec('tick', t(1)), rec('tick', t(2))];
    const { append } = mergeResumed(history, [rec('tick', t(1)), rec('tick', t(2)), rec('tick', t(3))]);
    expect(append).toEqual([rec('tick', t(3))]);
  });

  it('prefers the longest overlap when the tail repeats itself', () => {
    const history = [rec('a'), rec('x'), rec('y'), rec('x'), rec('y')];
    const { append } = mergeResumed(history, [rec('x'), rec('y'), rec('x'), rec('y'), rec('new')]);
    expect(append.map((r) => r.message)).toEqual(['new']);
  });

  it('falls back to a shorter overlap when the longer one breaks', () => {
    const history = [rec('a'), rec('x'), rec('y'), rec('x'), rec('y')];
    const { append, gap } = mergeResumed(history, [rec('x'), rec('y'), rec('z')]);
    expect(append.map((r) => r.message)).toEqual(['z']);
    expect(gap).toBe(false);
  });

  it('reports a gap when more than the tail was written while disconnected', () => {
    const history = [rec('a', t(1)), rec('b', t(2))];
    const { append, gap } = mergeResumed(history, [rec('e', t(5)), rec('f', t(6))]);
    expect(append.map((r) => r.message)).toEqual(['e', 'f']);
    expect(gap).toBe(true);
  });

  it('emits nothing when nothing new was written', () => {
    const history = [rec('a', t(1)), rec('b', t(2))];
    expect(mergeResumed(history, [rec('a', t(1)), rec('b', t(2))]).append).toEqual([]);
  });

  it('holds records until the overlap is decided, then streams', () => {
    const m = new ResumeMatcher([rec('a', t(1)), rec('b', t(2))]);
    expect(m.push(rec('a', t(1)))).toEqual([]);
    expect(m.resumed).toBe(false);
    expect(m.push(rec('b', t(2)))).toEqual([]);
    expect(m.resumed).toBe(true);
    expect(m.push(rec('c', t(3)))).toEqual([rec('c', t(3))]);
  });

  it('passes everything through with no history', () => {
    const m = new ResumeMatcher([]);
    expect(m.push(rec('a'))).toEqual([rec('a')]);
  });
});

describe('search', () => {
  const lines = ['Error: disk full', 'ok', 'error again, ERROR twice', ''];

  it('counts every case-insensitive occurrence', () => {
    const r = searchLines(lines, 'error');
    expect(r.matches).toHaveLength(3);
    expect(r.lines).toEqual([0, 2]);
    expect(r.matches[1]).toEqual({ line: 2, start: 0, end: 5 });
  });

  it('finds nothing for an empty query', () => {
    expect(searchLines(lines, '').matches).toEqual([]);
  });

  it('steps through matches with wrap-around', () => {
    expect(stepMatch(3, -1, 1)).toBe(0);
    expect(stepMatch(3, 2, 1)).toBe(0);
    expect(stepMatch(3, 0, -1)).toBe(2);
    expect(stepMatch(0, 0, 1)).toBe(-1);
  });

  it('splits a line into highlighted parts', () => {
    expect(highlight('a Err b err', 'err')).toEqual([
      { text: 'a ', hit: false },
      { text: 'Err', hit: true },
      { text: ' b ', hit: false },
      { text: 'err', hit: true },
    ]);
  });

  it('searches 100,000 lines', () => {
    const many = Array.from({ length: 100_000 }, (_, i) => `line ${i} ${i % 1000 === 0 ? 'needle' : ''}`);
    expect(searchLines(many, 'NEEDLE').matches).toHaveLength(100);
  });
});

describe('follow and paused state', () => {
  const run = (events: FollowEvent[]) => events.reduce(followReducer, INITIAL_FOLLOW);

  it('is not paused while pinned to the bottom', () => {
    const s = run([{ type: 'toggle', follow: true }, { type: 'appended', count: 5 }]);
    expect(isPaused(s)).toBe(false);
    expect(s.unseen).toBe(0);
  });

  it('pauses when scrolled up and counts unseen lines', () => {
    const s = run([
      { type: 'toggle', follow: true },
      { type: 'scrolled', atBottom: false },
      { type: 'appended', count: 3 },
      { type: 'appended', count: 2 },
    ]);
    expect(isPaused(s)).toBe(true);
    expect(s.unseen).toBe(5);
  });

  it('resumes when scrolled back to the bottom or on jump', () => {
    const paused = run([{ type: 'toggle', follow: true }, { type: 'scrolled', atBottom: false }]);
    expect(isPaused(followReducer(paused, { type: 'scrolled', atBottom: true }))).toBe(false);
    expect(isPaused(followReducer(paused, { type: 'jumpToBottom' }))).toBe(false);
  });

  it('a jump holds the view at its line: not "paused" by a scroll, resumed at the bottom', () => {
    const held = run([{ type: 'toggle', follow: true }, { type: 'held', at: 'match' }, { type: 'scrolled', atBottom: false }, { type: 'appended', count: 2 }]);
    expect(held).toMatchObject({ pinned: false, heldAt: 'match', unseen: 2 });
    expect(followReducer(held, { type: 'scrolled', atBottom: true })).toMatchObject({ pinned: true, heldAt: null });
  });

  it('is never paused when not following', () => {
    expect(isPaused(run([{ type: 'scrolled', atBottom: false }]))).toBe(false);
  });

  it('detects the bottom with a little slack', () => {
    expect(atBottom(900, 1000, 100)).toBe(true);
    expect(atBottom(895, 1000, 100)).toBe(true);
    expect(atBottom(800, 1000, 100)).toBe(false);
  });
});

describe('deep links, tail and download', () => {
  it('parses #L links', () => {
    expect(parseLineHash('#L12')).toEqual({ from: 12, to: 12 });
    expect(parseLineHash('#L20-L12')).toEqual({ from: 12, to: 20 });
    expect(parseLineHash('#L0')).toBeNull();
    expect(parseLineHash('#x')).toBeNull();
  });

  it('clamps the tail to 1..500', () => {
    expect(clampTail(1000)).toBe(500);
    expect(clampTail(0)).toBe(1);
    expect(clampTail(Number.NaN)).toBe(100);
  });

  it('downloads what is shown', () => {
    const rs = [rec('hi', t(1)), rec('bad', t(2), 'stderr')];
    expect(logText(rs, false)).toBe('hi\n[stderr] bad\n');
    expect(logText(rs, true)).toBe(`${t(1)} hi\n${t(2)} [stderr] bad\n`);
  });
});

describe('deep links with a prefix', () => {
  it('keeps viewers on one page apart', () => {
    expect(parseLineHash('#S2L7', 'S2L')).toEqual({ from: 7, to: 7 });
    expect(parseLineHash('#L7', 'S2L')).toBeNull();
    expect(parseLineHash('#S2L7', 'L')).toBeNull();
  });
});

describe('tail summary', () => {
  it('says why a tail is cut', () => {
    expect(tailSummary(3, false)).toBe('Last 3 records');
    expect(tailSummary(1, false)).toBe('Last 1 record');
    expect(tailSummary(100, true, 'tailLines')).toBe('Last 100 records; older records exist');
    expect(tailSummary(42, true, 'limitBytes')).toContain('1 MiB');
    expect(tailSummary(42, true, 'searchWindow')).toContain('too long to search');
    expect(tailSummary(500, true)).toContain('500-record');
  });
});
