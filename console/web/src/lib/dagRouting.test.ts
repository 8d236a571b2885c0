import { describe, expect, it } from 'vitest';
import { fitScale, focusOrder, layoutDag, lineage, moveFocus, onLineage, stageJobs, type DagJobInput, type DagLayout } from './dag';

/** Points along an SVG path of absolute M, L, Q and C commands (what layoutDag writes). */
function sample(d: string): Array<[number, number]> {
  const tokens = d.match(/[MLQC]|-?\d+(?:\.\d+)?(?:e-?\d+)?/g) ?? [];
  const pts: Array<[number, number]> = [];
  let i = 0;
  let cur: [number, number] = [0, 0];
  const num = () => Number(tokens[i++]);
  while (i < tokens.length) {
    const cmd = tokens[i++];
    if (cmd === 'M') {
      cur = [num(), num()];
      pts.push(cur);
    } else if (cmd === 'L') {
      const to: [number, number] = [num(), num()];
      for (let k = 1; k <= 40; k++) pts.push([cur[0] + ((to[0] - cur[0]) * k) / 40, cur[1] + ((to[1] - cur[1]) * k) / 40]);
      cur = to;
    } else if (cmd === 'Q') {
      const c: [number, number] = [num(), num()];
      const to: [number, number] = [num(), num()];
      for (let k = 1; k <= 20; k++) {
        const t = k / 20;
        pts.push([
          (1 - t) ** 2 * cur[0] + 2 * (1 - t) * t * c[0] + t * t * to[0],
          (1 - t) ** 2 * cur[1] + 2 * (1 - t) * t * c[1] + t * t * to[1],
        ]);
      }
      cur = to;
    } else if (cmd === 'C') {
      const c1: [number, number] = [num(), num()];
      const c2: [number, number] = [num(), num()];
      const to: [number, number] = [num(), num()];
      for (let k = 1; k <= 40; k++) {
        const t = k / 40;
        const b = (a: number, b1: number, b2: number, e: number) =>
          (1 - t) ** 3 * a + 3 * (1 - t) ** 2 * t * b1 + 3 * (1 - t) * t * t * b2 + t ** 3 * e;
        pts.push([b(cur[0], c1[0], c2[0], to[0]), b(cur[1], c1[1], c2[1], to[1])]);
      }
      cur = to;
    } else {
      throw new Error(`unexpected path token ${cmd}`);
    }
  }
  return pts;
}

/**
 * Edges that come near another job's merge point (within 28 px), or cross
 * where that job's needs converge (the last 30 px of the edges into it):
 * such an edge reads as one more need of that job.
 */
function falseMerges(layout: DagLayout, within = 6, zone = 30, clear = 28): string[] {
  const out: string[] = [];
  for (const m of layout.merges) {
    const fan = layout.edges
      .filter((e) => e.to === m.id)
      .flatMap((e) => sample(e.d))
      .filter(([x]) => x >= m.x - zone && x <= m.x);
    fan.push([m.x, m.y]);
    for (const e of layout.edges) {
      if (e.to === m.id) continue;
      const pts = sample(e.d);
      const close =
        pts.some(([x, y]) => Math.hypot(x - m.x, y - m.y) < clear) ||
        pts.some(([x, y]) => fan.some(([fx, fy]) => Math.hypot(x - fx, y - fy) < within));
      if (close) out.push(`${e.from}->${e.to} crosses the merge of ${m.id}`);
    }
  }
  return out;
}

/** The demo release WorkflowRun (hack/lib/demo.sh). */
const release: DagJobInput[] = [
  { id: 'build', needs: ['lint', 'unit', 'typecheck'] },
  { id: 'checkout' },
  { id: 'lint', needs: ['checkout'] },
  { id: 'publish', needs: ['build', 'security'] },
  { id: 'security', needs: ['checkout'] },
  { id: 'typecheck', needs: ['checkout'] },
  { id: 'unit', needs: ['checkout'] },
];

/** A 14-job graph with skips into merges (as in the browser test). */
export const fourteen: DagJobInput[] = [
  { id: 'checkout' },
  { id: 'deps', needs: ['checkout'] },
  { id: 'lint', needs: ['deps'] },
  { id: 'unit', needs: ['deps'] },
  { id: 'typecheck', needs: ['deps'] },
  { id: 'security', needs: ['checkout'] },
  { id: 'licenses', needs: ['checkout'] },
  { id: 'build-linux', needs: ['lint', 'unit', 'typecheck'] },
  { id: 'build-mac', needs: ['lint', 'unit'] },
  { id: 'integration', needs: ['build-linux', 'build-mac'] },
  { id: 'docs', needs: ['deps'] },
  { id: 'package', needs: ['integration', 'security', 'licenses'] },
  { id: 'sign', needs: ['package'] },
  { id: 'publish', needs: ['sign', 'docs', 'security'] },
];

describe('edge routing', () => {
  it('the security -> publish edge of the release DAG does not pass the merge point of build', () => {
    const layout = layoutDag(stageJobs(release));
    expect(layout.merges.map((m) => m.id).sort()).toEqual(['build', 'publish']);
    expect(falseMerges(layout)).toEqual([]);
  });

  it('no edge of a 14-job DAG passes a merge point not its own', () => {
    expect(falseMerges(layoutDag(stageJobs(fourteen)))).toEqual([]);
  });

  it('every edge ends on the left edge of its consumer row, where the arrowhead is drawn', () => {
    const layout = layoutDag(stageJobs(fourteen));
    for (const e of layout.edges) {
      const pts = sample(e.d);
      const [x, y] = pts[pts.length - 1]!;
      const row = layout.rows.get(e.to)!;
      expect([e.from, e.to, x, y]).toEqual([e.from, e.to, row.inX, row.cy]);
      // The last stretch is horizontal, so the arrowhead points into the row.
      const [px, py] = pts[pts.length - 2]!;
      expect(py).toBe(row.cy);
      expect(px).toBeLessThan(x);
    }
  });
});

describe('keyboard order and relationships', () => {
  const staging = stageJobs(fourteen);
  const layout = layoutDag(staging);

  it('Tab goes stage by stage, not in alphabetical or declared order', () => {
    const order = focusOrder(staging);
    expect(order.length).toBe(14);
    const stageOf = (id: string) => staging.jobs.get(id)!.stage;
    for (let i = 1; i < order.length; i++) expect(stageOf(order[i]!)).toBeGreaterThanOrEqual(stageOf(order[i - 1]!));
    expect(order[0]).toBe('checkout');
    expect(order[order.length - 1]).toBe('publish');
  });

  it('arrows move within a stage and to the nearest row of the next stage', () => {
    const s1 = staging.stages[1]!;
    expect(s1.length).toBeGreaterThan(1);
    expect(moveFocus(staging, layout, s1[0]!, 'ArrowDown')).toBe(s1[1]);
    expect(moveFocus(staging, layout, s1[1]!, 'ArrowUp')).toBe(s1[0]);
    expect(moveFocus(staging, layout, s1[0]!, 'ArrowUp')).toBe(s1[0]);
    expect(moveFocus(staging, layout, 'checkout', 'ArrowRight')).toSatisfy((id: string) => s1.includes(id));
    expect(moveFocus(staging, layout, s1[0]!, 'ArrowLeft')).toBe('checkout');
    expect(moveFocus(staging, layout, 'checkout', 'ArrowLeft')).toBe('checkout');
    expect(moveFocus(staging, layout, 'publish', 'ArrowRight')).toBe('publish');
    expect(moveFocus(staging, layout, 'lint', 'Home')).toBe('checkout');
    expect(moveFocus(staging, layout, 'lint', 'End')).toBe('publish');
  });

  it('lineage names every job upstream and downstream, and the edges between them', () => {
    const l = lineage(staging, 'build-mac');
    expect([...l.upstream].sort()).toEqual(['checkout', 'deps', 'lint', 'unit']);
    expect([...l.downstream].sort()).toEqual(['integration', 'package', 'publish', 'sign']);
    const hl = layout.edges.filter((e) => onLineage(e, 'build-mac', l)).map((e) => `${e.from}->${e.to}`);
    expect(hl).toContain('unit->build-mac');
    expect(hl).toContain('integration->package');
    expect(hl).not.toContain('typecheck->build-linux');
    expect(hl).not.toContain('security->package');
    expect(hl).not.toContain('lint->build-linux');
  });

  it('fits a drawing into the view without enlarging it', () => {
    expect(fitScale(2000, 500, 1000, 800)).toBe(0.5);
    expect(fitScale(400, 300, 1000, 800)).toBe(1);
    expect(fitScale(100000, 500, 1000, 800)).toBe(0.3);
  });
});
