import { describe, expect, it } from 'vitest';
import { isPlain, toYaml } from './yaml';

describe('toYaml', () => {
  it('writes maps, sequences and scalars as kubectl would read them', () => {
    const y = toYaml({
      apiVersion: 'kruntimes.io/v1alpha1',
      kind: 'Run',
      metadata: { name: 'build-1', labels: { app: 'demo' } },
      spec: { mode: { task: {} }, env: [{ name: 'A', value: '(hidden by the Console)' }], retries: 3, ok: true, none: null, list: [] },
    });
    expect(y).toBe(
      [
        'apiVersion: kruntimes.io/v1alpha1',
        'kind: Run',
        'metadata:',
        '  name: build-1',
        '  labels:',
        '    app: demo',
        'spec:',
        '  mode:',
        '    task: {}',
        '  env:',
        '    - name: A',
        '      value: (hidden by the Console)',
        '  retries: 3',
        '  ok: true',
        '  none: null',
        '  list: []',
        '',
      ].join('\n'),
    );
  });

  it('quotes strings YAML would read as something else', () => {
    for (const s of ['true', 'no', '123', '1.5', '', ' x', 'a: b', '- x', '#x', 'x #y', 'line\nbreak', 'é']) {
      expect(isPlain(s), s).toBe(false);
    }
    for (const s of ['demo', 'kruntimes.io/runtime', '2026-12-01T10:00:00Z', 's3://bucket/key', 'make build']) {
      expect(isPlain(s), s).toBe(true);
    }
    expect(toYaml({ v: 'true', m: 'a\nb' })).toBe('v: "true"\nm: "a\\nb"\n');
  });

  it('nests sequences of sequences and maps in sequences', () => {
    expect(toYaml({ a: [[1, 2], { b: [{ c: 'd' }] }] })).toBe('a:\n  - - 1\n    - 2\n  - b:\n      - c: d\n');
  });
});
