import { describe, expect, it } from 'vitest';
import { layoutDag, stageJobs, type DagJobInput, dagRowLabel } from './dag';

const stagesOf = (jobs: DagJobInput[]) => stageJobs(jobs).stages;

describe('stageJobs', () => {
  it('puts roots in the first stage and pushes consumers right', () => {
    expect(
      stagesOf([
        { id: 'build' },
        { id: 'lint' },
        { id: 'test', needs: ['build'] },
        { id: 'deploy', needs: ['test', 'lint'] },
      ]),
    ).toEqual([['build', 'lint'], ['test'], ['deploy']]);
  });

  it('stages a diamond with a merge into the last job', () => {
    const s = stageJobs([
      { id: 'a' },
      { id: 'b', needs: ['a'] },
      { id: 'c', needs: ['a'] },
      { id: 'd', needs: ['b', 'c'] },
    ]);
    expect(s.stages).toEqual([['a'], ['b', 'c'], ['d']]);
    const layout = layoutDag(s);
    expect(layout.merges).toEqual([expect.objectContaining({ id: 'd', count: 2 })]);
    expect(layout.edges.map((e) => `${e.from}->${e.to}`).sort()).toEqual(['a->b', 'a->c', 'b->d', 'c->d']);
    expect(layout.edges.every((e) => !e.long && !e.backward)).toBe(true);
  });

  it('uses the longest path, not the shortest', () => {
    const s = stageJobs([
      { id: 'final', needs: ['a', 'c'] },
      { id: 'a' },
      { id: 'b', needs: ['a'] },
      { id: 'c', needs: ['b'] },
    ]);
    expect(s.jobs.get('final')!.stage).toBe(3);
    const layout = layoutDag(s);
    const skip = layout.edges.find((e) => e.from === 'a' && e.to === 'final')!;
    expect(skip.long).toBe(true);
  });

  it('handles a long chain without recursion limits', () => {
    const jobs: DagJobInput[] = Array.from({ length: 2000 }, (_, i) => ({
      id: `j${i}`,
      needs: i === 0 ? [] : [`j${i - 1}`],
    }));
    const s = stageJobs(jobs.reverse());
    expect(s.stages.length).toBe(2000);
    expect(s.jobs.get('j1999')!.stage).toBe(1999);
    const layout = layoutDag(s);
    expect(layout.cards.length).toBe(2000);
    expect(layout.width).toBeGreaterThan(layout.cards[1999]!.x);
  });

  it('keeps a wide stage in one card with one row per job', () => {
    const jobs: DagJobInput[] = [{ id: 'setup' }];
    for (let i = 0; i < 60; i++) jobs.push({ id: `shard-${i}`, needs: ['setup'] });
    jobs.push({ id: 'report', needs: jobs.slice(1).map((j) => j.id) });
    const s = stageJobs(jobs);
    expect(s.stages.map((x) => x.length)).toEqual([1, 60, 1]);
    const layout = layoutDag(s);
    expect(layout.cards[1]!.height).toBeGreaterThan(layout.cards[0]!.height);
    const rows = s.stages[1]!.map((id) => layout.rows.get(id)!);
    expect(new Set(rows.map((r) => r.x)).size).toBe(1);
    expect(rows.every((r, i) => i === 0 || r.y > rows[i - 1]!.y)).toBe(true);
    expect(layout.merges.find((m) => m.id === 'report')!.count).toBe(60);
  });

  it('reports unknown needs without drawing edges for them', () => {
    const s = stageJobs([{ id: 'a' }, { id: 'b', needs: ['a', 'ghost'] }, { id: 'c', needs: ['nope'] }]);
    expect(s.stages).toEqual([['a', 'c'], ['b']]);
    expect(s.jobs.get('b')!.unknownNeeds).toEqual(['ghost']);
    expect(s.jobs.get('c')!.unknownNeeds).toEqual(['nope']);
    expect(layoutDag(s).edges).toHaveLength(1);
  });

  it('treats a self-dependency as unknown', () => {
    const s = stageJobs([{ id: 'a', needs: ['a'] }]);
    expect(s.stages).toEqual([['a']]);
    expect(s.jobs.get('a')!.unknownNeeds).toEqual(['a']);
  });

  it('terminates on cycles and flags the jobs involved', () => {
    const s = stageJobs([
      { id: 'root' },
      { id: 'x', needs: ['root', 'z'] },
      { id: 'y', needs: ['x'] },
      { id: 'z', needs: ['y'] },
      { id: 'after', needs: ['z'] },
    ]);
    expect(s.hasCycle).toBe(true);
    expect(s.jobs.get('root')!.cyclic).toBe(false);
    for (const id of ['x', 'y', 'z', 'after']) expect(s.jobs.get(id)!.cyclic).toBe(true);
    // every job is placed exactly once
    expect(s.stages.flat().sort()).toEqual(['after', 'root', 'x', 'y', 'z']);
    const layout = layoutDag(s);
    expect(layout.edges.some((e) => e.backward)).toBe(true);
  });

  it('de-duplicates repeated job ids and needs', () => {
    const s = stageJobs([{ id: 'a' }, { id: 'a' }, { id: 'b', needs: ['a', 'a'] }]);
    expect(s.order).toEqual(['a', 'b']);
    expect(s.jobs.get('b')!.needs).toEqual(['a']);
  });

  it('orders rows by the position of their needs to keep edges short', () => {
    const s = stageJobs([
      { id: 'p1' },
      { id: 'p2' },
      { id: 'c2', needs: ['p2'] },
      { id: 'c1', needs: ['p1'] },
    ]);
    expect(s.stages[1]).toEqual(['c1', 'c2']);
  });

  it('returns an empty layout for no jobs', () => {
    const layout = layoutDag(stageJobs([]));
    expect(layout.cards).toEqual([]);
    expect(layout.edges).toEqual([]);
  });
});

describe('job row names', () => {
  it('start with the visible text, then say what only the drawing shows', () => {
    expect(dagRowLabel('lint', 'Failed · 3 lint errors', ['checkout'], false)).toBe('lint Failed · 3 lint errors, needs checkout');
    expect(dagRowLabel('checkout', 'Succeeded', [], false)).toBe('checkout Succeeded');
    expect(dagRowLabel('deploy', 'Pending', ['build', 'ghost'], true)).toBe('deploy Pending, needs build, ghost, has dependency problems');
  });
});
