import { describe, expect, it } from 'vitest';
import { CommandHistory, appendEntry, commandPlaceholder, outputText, type Entry } from './sessionPanel';

const progress = (message: string, percent?: number): Entry => ({
  kind: 'event',
  frame: { type: 'progress', message, ...(percent !== undefined ? { percent } : {}) },
});
const output = (text: string): Entry => ({ kind: 'event', frame: { type: 'output', data: text }, text });

describe('appendEntry', () => {
  it('keeps one updating progress line per operation', () => {
    let es: Entry[] = [];
    for (const e of [
      { kind: 'command', text: 'sleep 3' } as Entry,
      progress('running', 10),
      output('a\n'),
      progress('running', 50),
      progress('running', 90),
    ])
      es = appendEntry(es, e);
    expect(es.filter((e) => e.kind === 'event' && e.frame.type === 'progress')).toHaveLength(1);
    expect(es[es.length - 1]).toEqual(progress('running', 90));
    expect(es.map((e) => e.kind)).toEqual(['command', 'event', 'event']);
  });

  it('leaves the progress line of an earlier operation alone', () => {
    let es: Entry[] = [];
    for (const e of [{ kind: 'command', text: 'a' } as Entry, progress('p', 100), { kind: 'command', text: 'b' } as Entry, progress('q', 1)])
      es = appendEntry(es, e);
    expect(es).toHaveLength(4);
  });
});

describe('CommandHistory', () => {
  it('walks back and forth like a shell and returns to the draft', () => {
    const h = new CommandHistory();
    h.push('echo 1');
    h.push('echo 2');
    h.push('echo 2');
    expect(h.list).toEqual(['echo 1', 'echo 2']);
    expect(h.older('ech')).toBe('echo 2');
    expect(h.older('echo 2')).toBe('echo 1');
    expect(h.older('echo 1')).toBeNull();
    expect(h.newer()).toBe('echo 2');
    expect(h.newer()).toBe('ech');
    expect(h.newer()).toBeNull();
  });
});

describe('outputText and the placeholder', () => {
  it('copies the commands, their output and how they ended', () => {
    const es: Entry[] = [
      { kind: 'command', text: 'echo hi' },
      { kind: 'event', frame: { type: 'accepted', operationID: 'op-1' } },
      output('hi\n'),
      { kind: 'event', frame: { type: 'terminal', status: 'Succeeded', exitCode: 0 } },
    ];
    expect(outputText(es)).toBe('$ echo hi\nhi\n[Succeeded, exit code 0]\n');
  });
  it('offers Python only on a Python Runtime', () => {
    expect(commandPlaceholder('bash-pool')).toBe('echo hello');
    expect(commandPlaceholder('python-3-12')).toMatch(/^python/);
  });
});
