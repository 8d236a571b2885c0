import { describe, expect, it } from 'vitest';
import type { CursorRecord } from '../api/logTypes';
import { findGroups, firstError, groupOf, visibleLines } from './logFold';

const rec = (message: string, stream: 'stdout' | 'stderr' = 'stdout'): CursorRecord => ({ message, stream }) as CursorRecord;
const lines = (...ms: string[]) => ms.map((m) => rec(m));

describe('groups', () => {
  const log = lines('a', '::group::Install', 'i1', 'i2', '::endgroup::', 'b', '::group::Test', 't1');
  const groups = findGroups(log);

  it('finds each group with its name and line count', () => {
    expect(groups.map((g) => [g.start, g.end, g.name, g.count])).toEqual([
      [1, 4, 'Install', 2],
      [6, 8, 'Test', 1],
    ]);
  });

  it('folds groups to their header; the end marker never shows', () => {
    expect(visibleLines(log.length, groups, () => false)).toEqual([0, 1, 5, 6]);
    expect(visibleLines(log.length, groups, () => true)).toEqual([0, 1, 2, 3, 5, 6, 7]);
    expect(visibleLines(log.length, groups, (g) => g.name === 'Test')).toEqual([0, 1, 5, 6, 7]);
    expect(visibleLines(3, [], () => false)).toBeNull();
  });

  it('closes an open group at the next header; a group name may be coloured', () => {
    const g = findGroups(lines('::group::A', 'x', '\u001b[36m::group::B\u001b[0m', 'y', '::endgroup::'));
    expect(g.map((x) => [x.name, x.count])).toEqual([
      ['A', 1],
      ['B', 1],
    ]);
  });

  it('tells which group holds a line', () => {
    expect(groupOf(groups, 2)?.name).toBe('Install');
    expect(groupOf(groups, 1)).toBeUndefined();
    expect(groupOf(groups, 5)).toBeUndefined();
    expect(groupOf(groups, 7)?.name).toBe('Test');
  });
});

describe('firstError', () => {
  it('is the first stderr record', () => {
    expect(firstError([rec('error: not this'), rec('x', 'stderr')])).toBe(1);
  });
  it('else the first line that reads like an error', () => {
    expect(firstError(lines('ok', 'no errors here', 'panic: boom', 'Error: x'))).toBe(2);
    expect(firstError(lines('\u001b[31mERROR\u001b[0m x'))).toBe(0);
    expect(firstError(lines('all good'))).toBe(-1);
  });
});
