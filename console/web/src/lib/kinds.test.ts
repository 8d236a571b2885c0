import { describe, expect, it } from 'vitest';
import type { ActionListItem, WorkspaceListItem } from '../api/kinds';
import { retention, sortActions, sortWorkspaces, ttlWords, workspaceTone } from './kinds';

const ws = (name: string, phase: string, lastUsedTime?: string): WorkspaceListItem => ({
  metadata: { name, namespace: 'team-a', creationTimestamp: '2026-01-01T00:00:00Z' },
  phase,
  runtime: 'bash',
  ...(lastUsedTime ? { lastUsedTime } : {}),
});

describe('workspace views', () => {
  it('sorts by last use, most recent first and never used last', () => {
    const items = [ws('never', 'Pending'), ws('old', 'Bound', '2026-01-01T00:00:00Z'), ws('new', 'Bound', '2026-01-03T00:00:00Z')];
    expect(sortWorkspaces(items, { column: 'used', descending: false }).map((w) => w.metadata.name)).toEqual(['new', 'old', 'never']);
    expect(sortWorkspaces(items, { column: 'phase', descending: false }).map((w) => w.phase)).toEqual(['Bound', 'Bound', 'Pending']);
  });

  it('gives each phase a tone that is not only a colour name', () => {
    expect(workspaceTone('Bound')).toBe('success');
    expect(workspaceTone('Lost')).toBe('danger');
    expect(workspaceTone('Pending')).toBe('pending');
    expect(workspaceTone('Released')).toBe('neutral');
  });

  it('says when the data goes away', () => {
    const now = Date.parse('2026-01-01T01:00:00Z');
    expect(retention({ cleanupPolicy: 'Retain', ttlSecondsAfterUnused: 60 }, undefined, now)).toContain('Retain');
    expect(retention({ ttlSecondsAfterUnused: 7200 }, '2026-01-01T00:00:00Z', now)).toBe(
      'Deleted 2 h after its last use (DeleteAfterTTL): in 60 min unless used again.',
    );
    expect(retention({ ttlSecondsAfterUnused: 60 }, '2026-01-01T00:00:00Z', now)).toContain('that time has passed');
    expect(retention({}, undefined, now)).toContain('no TTL set');
    expect(ttlWords(90)).toBe('90 s');
    expect(ttlWords(3 * 86400)).toBe('3 d');
    // Time left is never rounded up: 23 h 34 min, not 24 h.
    expect(ttlWords(86400 - 26 * 60)).toBe('23 h 34 min');
  });
});

describe('action views', () => {
  it('sorts by step count', () => {
    const a = (name: string, steps: number): ActionListItem => ({ metadata: { name, namespace: 'team-a' }, inputs: 0, outputs: 0, steps });
    expect(sortActions([a('x', 3), a('y', 1)], { column: 'steps', descending: false }).map((i) => i.metadata.name)).toEqual(['y', 'x']);
  });
});
