import { describe, expect, it } from 'vitest';
import { safeReturnPath } from './returnPath';

describe('the return path after a login', () => {
  it('keeps a path of this Console with its query and fragment', () => {
    expect(safeReturnPath('/namespaces/team-a/runs/build-running')).toBe('/namespaces/team-a/runs/build-running');
    expect(safeReturnPath('/namespaces/team-a/runs?phase=Running&sort=-age')).toBe('/namespaces/team-a/runs?phase=Running&sort=-age');
    expect(safeReturnPath('/namespaces/a/runs/x#L12')).toBe('/namespaces/a/runs/x#L12');
    expect(safeReturnPath('/')).toBe('/');
  });
  it('refuses other origins in every spelling', () => {
    for (const bad of [
      'https://evil.example/x',
      'http:/evil.example',
      '//evil.example/x',
      '///evil.example',
      '/\\evil.example/x',
      '\\\\evil.example',
      '\\/evil.example',
      '/%5C%5Cevil.example',
      '/%2F%2Fevil.example',
      '/%2f/evil.example',
      'javascript:alert(1)',
      'JavaScript:alert(1)',
      'data:text/html,x',
      ' /x',
      '/\tx',
      '/x\n',
      'evil.example',
      '',
      null,
      undefined,
      '/login',
      '/login?next=/x',
      '/%',
      `/${'a'.repeat(3000)}`,
    ]) {
      expect(safeReturnPath(bad), String(bad)).toBeNull();
    }
  });
});
