import { describe, expect, it } from 'vitest';
import { nextSort, parseSort, RUN_COLUMNS, sortRuns } from './sort';
import type { RunListItem } from '../api/types';

const run = (name: string, phase: string, created: string, attempt?: number): RunListItem => ({
  metadata: { name, namespace: 'team-a', creationTimestamp: created },
  phase: phase as RunListItem['phase'],
  runtime: 'bash',
  ...(attempt !== undefined ? { attempt } : {}),
});

const items = [
  run('b', 'Running', '2026-01-01T10:00:00Z', 2),
  run('a', 'Failed', '2026-01-01T12:00:00Z', 1),
  run('c', 'Running', '2026-01-01T11:00:00Z'),
];

describe('sorting the Run list', () => {
  it('reads sort= from the URL and ignores unknown columns', () => {
    expect(parseSort('-age', RUN_COLUMNS)).toEqual({ column: 'age', descending: true });
    expect(parseSort('name', RUN_COLUMNS)).toEqual({ column: 'name', descending: false });
    expect(parseSort('uid', RUN_COLUMNS)).toBeNull();
    expect(parseSort(null, RUN_COLUMNS)).toBeNull();
  });

  it('cycles ascending, descending, unsorted', () => {
    expect(nextSort(null, 'name')).toBe('name');
    expect(nextSort({ column: 'name', descending: false }, 'name')).toBe('-name');
    expect(nextSort({ column: 'name', descending: true }, 'name')).toBe('');
    expect(nextSort({ column: 'name', descending: true }, 'age')).toBe('age');
  });

  it('sorts by name, age (youngest first) and attempts, stably', () => {
    const names = (s: string) => sortRuns(items, parseSort(s, RUN_COLUMNS)).map((r) => r.metadata.name);
    expect(names('name')).toEqual(['a', 'b', 'c']);
    expect(names('-name')).toEqual(['c', 'b', 'a']);
    expect(names('age')).toEqual(['a', 'c', 'b']);
    expect(names('-age')).toEqual(['b', 'c', 'a']);
    expect(names('attempt')).toEqual(['c', 'a', 'b']);
    // Ties keep the server's order.
    expect(names('phase')).toEqual(['a', 'b', 'c']);
    expect(sortRuns(items, null)).toEqual(items);
  });

  it('sorts by completion time both ways, with Runs not completed last either way', () => {
    const done = (name: string, start: string, end?: string): RunListItem => ({
      ...run(name, end ? 'Succeeded' : 'Running', start),
      startTime: start,
      ...(end ? { completionTime: end } : {}),
    });
    const runs = [
      done('open-1', '2026-01-01T10:00:00Z'),
      done('late', '2026-01-01T10:00:00Z', '2026-01-01T10:30:00Z'),
      { ...run('never-started', 'Pending', '2026-01-01T09:00:00Z') },
      done('early', '2026-01-01T09:00:00Z', '2026-01-01T09:05:00Z'),
      done('open-2', '2026-01-01T11:00:00Z'),
    ];
    const names = (s: string) => sortRuns(runs, parseSort(s, RUN_COLUMNS), Date.parse('2026-01-01T12:00:00Z')).map((r) => r.metadata.name);
    expect(names('completed')).toEqual(['early', 'late', 'open-1', 'never-started', 'open-2']);
    expect(names('-completed')).toEqual(['late', 'early', 'open-1', 'never-started', 'open-2']);
    // Duration: a running Run counts to now; one not started is last either way.
    expect(names('duration')).toEqual(['early', 'late', 'open-2', 'open-1', 'never-started']);
    expect(names('-duration')).toEqual(['open-1', 'open-2', 'late', 'early', 'never-started']);
  });
});
