/**
 * Staging and layout of a WorkflowRun's job graph, GitHub-Actions style:
 * jobs without (known) needs sit in the leftmost stage; every dependency
 * pushes its consumer at least one stage to the right of it; each stage is one
 * card holding its parallel jobs as rows. Pure functions, no DOM.
 *
 * Robust to bad input: needs naming unknown jobs are reported, not followed;
 * dependency cycles are broken deterministically (the jobs involved are
 * flagged) so staging always terminates.
 */

export interface DagJobInput {
  id: string;
  needs?: readonly string[];
}

export interface StagedJob {
  id: string;
  stage: number;
  /** Row index inside its stage card. */
  row: number;
  /** Needs that name declared jobs. */
  needs: string[];
  /** Needs that name no declared job (shown as a warning, no edge). */
  unknownNeeds: string[];
  /** True when the job takes part in (or depends on) a dependency cycle. */
  cyclic: boolean;
}

export interface Staging {
  /** `stages[s]` lists job ids of stage `s` in row order. */
  stages: string[][];
  jobs: Map<string, StagedJob>;
  /** Declared order of job ids (first occurrence wins for duplicates). */
  order: string[];
  hasCycle: boolean;
}

/** Assigns each job a stage (longest path from a root) and a row within it. */
export function stageJobs(input: readonly DagJobInput[]): Staging {
  const order: string[] = [];
  const declared = new Map<string, DagJobInput>();
  for (const j of input) {
    if (!declared.has(j.id)) {
      declared.set(j.id, j);
      order.push(j.id);
    }
  }

  const needsOf = new Map<string, string[]>();
  const unknownOf = new Map<string, string[]>();
  for (const id of order) {
    const seen = new Set<string>();
    const known: string[] = [];
    const unknown: string[] = [];
    for (const n of declared.get(id)?.needs ?? []) {
      if (seen.has(n)) continue;
      seen.add(n);
      if (n === id || !declared.has(n)) {
        // A self-dependency can never be satisfied; report it like an unknown need.
        unknown.push(n);
      } else {
        known.push(n);
      }
    }
    needsOf.set(id, known);
    unknownOf.set(id, unknown);
  }

  // Kahn's algorithm over known needs: stage = 1 + max(stage of needs).
  const consumers = new Map<string, string[]>();
  const pending = new Map<string, number>();
  for (const id of order) {
    pending.set(id, needsOf.get(id)!.length);
    for (const n of needsOf.get(id)!) {
      let list = consumers.get(n);
      if (!list) consumers.set(n, (list = []));
      list.push(id);
    }
  }
  const stageOf = new Map<string, number>();
  const queue: string[] = order.filter((id) => pending.get(id) === 0);
  for (let qi = 0; qi < queue.length; qi++) {
    const id = queue[qi]!;
    let s = 0;
    for (const n of needsOf.get(id)!) s = Math.max(s, stageOf.get(n)! + 1);
    stageOf.set(id, s);
    for (const c of consumers.get(id) ?? []) {
      const left = pending.get(c)! - 1;
      pending.set(c, left);
      if (left === 0) queue.push(c);
    }
  }

  // Whatever is left is in, or downstream of, a cycle. Place each (in declared
  // order, repeating until nothing changes) right of its already placed needs.
  const cyclic = new Set<string>();
  let remaining = order.filter((id) => !stageOf.has(id));
  const hasCycle = remaining.length > 0;
  while (remaining.length > 0) {
    const next: string[] = [];
    let progressed = false;
    for (const id of remaining) {
      const needs = needsOf.get(id)!;
      const placedAll = needs.every((n) => stageOf.has(n));
      if (placedAll || !progressed) {
        // Either all needs are placed, or we break the cycle at this job.
        let s = 0;
        for (const n of needs) {
          const ns = stageOf.get(n);
          if (ns !== undefined) s = Math.max(s, ns + 1);
        }
        stageOf.set(id, s);
        cyclic.add(id);
        progressed = true;
      } else {
        next.push(id);
      }
    }
    remaining = next;
  }

  const stageCount = order.reduce((m, id) => Math.max(m, stageOf.get(id)! + 1), 0);
  const stages: string[][] = Array.from({ length: stageCount }, () => []);
  for (const id of order) stages[stageOf.get(id)!]!.push(id);

  // Order rows to keep edges short: by the mean row of the job's needs
  // (barycentre), ties by declared order. Roots keep declared order.
  const rowOf = new Map<string, number>();
  const declaredIndex = new Map(order.map((id, i) => [id, i]));
  stages.forEach((ids, s) => {
    if (s > 0) {
      const key = (id: string) => {
        const rows = needsOf
          .get(id)!
          .map((n) => rowOf.get(n))
          .filter((r): r is number => r !== undefined);
        return rows.length ? rows.reduce((a, b) => a + b, 0) / rows.length : Number.MAX_SAFE_INTEGER;
      };
      const keys = new Map(ids.map((id) => [id, key(id)]));
      ids.sort((a, b) => keys.get(a)! - keys.get(b)! || declaredIndex.get(a)! - declaredIndex.get(b)!);
    }
    ids.forEach((id, r) => rowOf.set(id, r));
  });

  const jobs = new Map<string, StagedJob>();
  for (const id of order) {
    jobs.set(id, {
      id,
      stage: stageOf.get(id)!,
      row: rowOf.get(id)!,
      needs: needsOf.get(id)!,
      unknownNeeds: unknownOf.get(id)!,
      cyclic: cyclic.has(id),
    });
  }
  return { stages, jobs, order, hasCycle };
}

// ---------------------------------------------------------------------------
// Geometry
// ---------------------------------------------------------------------------

export interface DagMetrics {
  /** Width of a stage card. */
  cardWidth: number;
  /** Horizontal gap between two stage cards (where edges run). */
  gap: number;
  /** Height of the card's header ("Stage 2 · 3 jobs"). */
  header: number;
  /** Height of one job row. */
  rowHeight: number;
  /** Padding inside the card below the header and after the last row. */
  cardPadding: number;
  /** Outer margin of the canvas. */
  margin: number;
  /** Vertical distance between routing lanes of edges that skip stages. */
  laneGap: number;
}

export const DEFAULT_METRICS: DagMetrics = {
  cardWidth: 248,
  gap: 88,
  header: 32,
  rowHeight: 60,
  cardPadding: 6,
  margin: 24,
  laneGap: 10,
};

export interface CardBox {
  stage: number;
  x: number;
  y: number;
  width: number;
  height: number;
}

export interface RowBox {
  id: string;
  stage: number;
  row: number;
  x: number;
  y: number;
  width: number;
  height: number;
  /** Where incoming edges end (left middle) and outgoing start (right middle). */
  inX: number;
  outX: number;
  cy: number;
}

export interface EdgePath {
  from: string;
  to: string;
  /** SVG path data. */
  d: string;
  /** True when the edge skips at least one stage (routed over the cards). */
  long: boolean;
  /** True when the edge points backwards (part of a broken cycle). */
  backward: boolean;
}

export interface MergePoint {
  /** The consumer job whose incoming edges join here. */
  id: string;
  x: number;
  y: number;
  count: number;
}

export interface DagLayout {
  width: number;
  height: number;
  cards: CardBox[];
  rows: Map<string, RowBox>;
  edges: EdgePath[];
  merges: MergePoint[];
}

/** Places stage cards, job rows, edges and merge points. */
export function layoutDag(staging: Staging, m: DagMetrics = DEFAULT_METRICS): DagLayout {
  const { stages, jobs } = staging;
  const cardHeights = stages.map((ids) => m.header + ids.length * m.rowHeight + m.cardPadding * 2);
  const tallest = cardHeights.reduce((a, b) => Math.max(a, b), 0);

  // Edges that skip stages run in lanes above the cards.
  const longEdges: Array<[string, string]> = [];
  for (const id of staging.order) {
    const j = jobs.get(id)!;
    for (const n of j.needs) {
      const src = jobs.get(n)!;
      if (j.stage - src.stage > 1 || j.stage <= src.stage) longEdges.push([n, id]);
    }
  }
  const laneArea = longEdges.length ? longEdges.length * m.laneGap + m.laneGap : 0;
  const top = m.margin + laneArea;

  const cards: CardBox[] = stages.map((_, s) => ({
    stage: s,
    x: m.margin + s * (m.cardWidth + m.gap),
    y: top + (tallest - cardHeights[s]!) / 2,
    width: m.cardWidth,
    height: cardHeights[s]!,
  }));

  const rows = new Map<string, RowBox>();
  stages.forEach((ids, s) => {
    const card = cards[s]!;
    ids.forEach((id, r) => {
      const y = card.y + m.header + m.cardPadding + r * m.rowHeight;
      rows.set(id, {
        id,
        stage: s,
        row: r,
        x: card.x,
        y,
        width: card.width,
        height: m.rowHeight,
        inX: card.x,
        outX: card.x + card.width,
        cy: y + m.rowHeight / 2,
      });
    });
  });

  // Where the needs of a job join (the merge point) and, before it, a
  // straight run in which every edge into the job is already level with it:
  // edges converge only there, so an edge passing by never looks like one
  // more need. Edges that skip stages rise and fall on tracks near the start
  // of a gap, far from any merge point, each gap's tracks apart.
  const mergeInset = Math.min(18, m.gap / 5);
  const straight = Math.min(24, m.gap / 4);
  const trackStart = 8;
  const trackGap = 5;
  const tracksUsed = new Map<number, number>();
  const track = (gapStartX: number) => {
    const k = tracksUsed.get(gapStartX) ?? 0;
    tracksUsed.set(gapStartX, k + 1);
    const room = Math.max(0, m.gap - mergeInset - straight - 2 * trackStart);
    return gapStartX + trackStart + Math.min(k * trackGap, room);
  };
  const edges: EdgePath[] = [];
  const merges: MergePoint[] = [];
  const laneIndex = new Map(longEdges.map(([a, b], i) => [`${a}\u0000${b}`, i]));
  for (const id of staging.order) {
    const j = jobs.get(id)!;
    if (j.needs.length === 0) continue;
    const target = rows.get(id)!;
    const mx = target.inX - mergeInset;
    const ex = mx - straight;
    const ty = target.cy;
    if (j.needs.length > 1) merges.push({ id, x: mx, y: ty, count: j.needs.length });
    for (const n of j.needs) {
      const src = rows.get(n)!;
      const sx = src.outX;
      const sy = src.cy;
      const lane = laneIndex.get(`${n}\u0000${id}`);
      const backward = j.stage <= src.stage;
      let d: string;
      if (lane === undefined) {
        const c = (ex - sx) / 2;
        d = `M${sx},${sy} C${sx + c},${sy} ${ex - c},${ty} ${ex},${ty} L${target.inX},${ty}`;
      } else {
        const ly = m.margin + lane * m.laneGap + m.laneGap / 2;
        const r = 6;
        const gx1 = track(sx);
        // Down into the gap before the consumer's stage (or, backwards, the gap left of it).
        const gx2 = track(target.inX - m.gap);
        const h = gx2 >= gx1 ? r : -r;
        d =
          `M${sx},${sy} L${gx1 - r},${sy} Q${gx1},${sy} ${gx1},${sy - r} ` +
          `L${gx1},${ly + r} Q${gx1},${ly} ${gx1 + h},${ly} ` +
          `L${gx2 - h},${ly} Q${gx2},${ly} ${gx2},${ly + r} ` +
          `L${gx2},${ty - r} Q${gx2},${ty} ${gx2 + r},${ty} ` +
          `L${target.inX},${ty}`;
      }
      edges.push({ from: n, to: id, d, long: lane !== undefined, backward });
    }
  }

  const width = m.margin * 2 + stages.length * m.cardWidth + Math.max(0, stages.length - 1) * m.gap;
  const height = top + tallest + m.margin;
  return { width, height, cards, rows, edges, merges };
}

/**
 * Accessible name of a job row: its visible text first (so speech input can
 * say what is shown), then what only the drawing tells (needs, problems).
 */
export function dagRowLabel(title: string, sub: string, needs: readonly string[], warn: boolean): string {
  let label = `${title} ${sub}`;
  if (needs.length) label += `, needs ${needs.join(', ')}`;
  if (warn) label += ', has dependency problems';
  return label;
}

// ---------------------------------------------------------------------------
// Keyboard and relationships
// ---------------------------------------------------------------------------

/** Job ids in reading order: stage by stage, top to bottom (the Tab order). */
export function focusOrder(staging: Staging): string[] {
  return staging.stages.flat();
}

export type DagKey = 'ArrowUp' | 'ArrowDown' | 'ArrowLeft' | 'ArrowRight' | 'Home' | 'End';

export function isDagKey(key: string): key is DagKey {
  return key === 'ArrowUp' || key === 'ArrowDown' || key === 'ArrowLeft' || key === 'ArrowRight' || key === 'Home' || key === 'End';
}

/**
 * The job an arrow key moves to from `id`: up and down through the rows of
 * its stage, left and right to the row of the neighbouring stage nearest in
 * height (skipping empty stages), Home and End to the first and last job.
 * Returns `id` itself at an edge of the graph.
 */
export function moveFocus(staging: Staging, layout: DagLayout, id: string, key: DagKey): string {
  const order = focusOrder(staging);
  if (key === 'Home') return order[0] ?? id;
  if (key === 'End') return order[order.length - 1] ?? id;
  const j = staging.jobs.get(id);
  if (!j) return id;
  const stage = staging.stages[j.stage]!;
  if (key === 'ArrowUp') return stage[Math.max(0, j.row - 1)]!;
  if (key === 'ArrowDown') return stage[Math.min(stage.length - 1, j.row + 1)]!;
  const step = key === 'ArrowRight' ? 1 : -1;
  const cy = layout.rows.get(id)?.cy ?? 0;
  for (let s = j.stage + step; s >= 0 && s < staging.stages.length; s += step) {
    const ids = staging.stages[s]!;
    if (ids.length === 0) continue;
    let best = ids[0]!;
    for (const other of ids) {
      const d = Math.abs((layout.rows.get(other)?.cy ?? 0) - cy);
      if (d < Math.abs((layout.rows.get(best)?.cy ?? 0) - cy)) best = other;
    }
    return best;
  }
  return id;
}

/** Every job `id` needs, directly or not (upstream), and every job that needs it (downstream). */
export function lineage(staging: Staging, id: string): { upstream: Set<string>; downstream: Set<string> } {
  const walk = (start: string, next: (x: string) => readonly string[]) => {
    const seen = new Set<string>();
    const stack = [...next(start)];
    while (stack.length) {
      const x = stack.pop()!;
      if (seen.has(x) || x === start) continue;
      seen.add(x);
      stack.push(...next(x));
    }
    return seen;
  };
  const consumers = new Map<string, string[]>();
  for (const [jid, j] of staging.jobs) {
    for (const n of j.needs) {
      let l = consumers.get(n);
      if (!l) consumers.set(n, (l = []));
      l.push(jid);
    }
  }
  return {
    upstream: walk(id, (x) => staging.jobs.get(x)?.needs ?? []),
    downstream: walk(id, (x) => consumers.get(x) ?? []),
  };
}

/** Whether an edge lies on a path through `id` (it joins two jobs of its lineage the right way round). */
export function onLineage(edge: { from: string; to: string }, id: string, l: ReturnType<typeof lineage>): boolean {
  const up = (x: string) => x === id || l.upstream.has(x);
  const down = (x: string) => x === id || l.downstream.has(x);
  return (l.upstream.has(edge.from) && up(edge.to)) || (down(edge.from) && l.downstream.has(edge.to));
}

/** The zoom that fits a `width` x `height` drawing into a `boxW` x `boxH` view, at most 1 and at least `min`. */
export function fitScale(width: number, height: number, boxW: number, boxH: number, min = 0.3): number {
  if (width <= 0 || height <= 0 || boxW <= 0 || boxH <= 0) return 1;
  return Math.max(min, Math.min(1, boxW / width, boxH / height));
}
