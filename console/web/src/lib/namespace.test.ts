import { describe, expect, it } from 'vitest';
import { landingNamespace, offeredNamespaces } from './namespace';
import type { NamespaceList } from '../api/types';

const viewer: NamespaceList = { items: [{ name: 'team-a', readable: true }], home: 'team-a' };
const admin: NamespaceList = {
  items: [
    { name: 'default', readable: true },
    { name: 'team-a', readable: true },
    { name: 'team-b', readable: false },
  ],
  home: 'default',
};
const summary: NamespaceList = { items: [{ name: 'default' }, { name: 'team-a' }], summary: true };

describe('landing namespace', () => {
  it('with nothing remembered lands in the home the server chose, not default', () => {
    expect(landingNamespace(null, viewer)).toBe('team-a');
  });

  it('keeps a remembered namespace the caller may read', () => {
    expect(landingNamespace('team-a', admin)).toBe('team-a');
  });

  it('leaves a remembered namespace the caller may not read for the home', () => {
    expect(landingNamespace('default', viewer)).toBe('team-a');
    expect(landingNamespace('team-b', admin)).toBe('default');
  });

  it('keeps what is remembered when readability is unknown (list failed, or public summary)', () => {
    expect(landingNamespace('team-b', undefined)).toBe('team-b');
    expect(landingNamespace('team-b', summary)).toBe('team-b');
  });

  it('falls back to default only when nothing else is known', () => {
    expect(landingNamespace(null, undefined)).toBe('default');
    expect(landingNamespace(null, { items: [] })).toBe('default');
  });

  it('offers only readable namespaces in the selector', () => {
    expect(offeredNamespaces(admin)).toEqual(['default', 'team-a']);
    expect(offeredNamespaces(summary)).toEqual(['default', 'team-a']);
    expect(offeredNamespaces(undefined)).toEqual([]);
  });
});
