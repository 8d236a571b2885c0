// The WorkflowRun DAG by keyboard and pointer (defect 3 and relationships):
// a 14-job graph is Tab-ordered by stage, arrows move between jobs and
// stages, the focused row is scrolled into view and outlined, edges end in
// arrowheads, hover and focus highlight upstream and downstream, zoom and
// fit-to-view scale the drawing; a step Run links back to its job and every
// Pod name is a link.
import { execFileSync } from 'node:child_process';
import { attr, assert, close, env, eventually, login, newPage, test, type Page } from './support';

const NS = env.ns;
const WR = 'e2e-dag-14';

// Ids chosen so that alphabetical order is not stage order.
const JOBS = {
  checkout: [],
  deps: ['checkout'],
  lint: ['deps'],
  unit: ['deps'],
  typecheck: ['deps'],
  security: ['checkout'],
  licenses: ['checkout'],
  'build-linux': ['lint', 'unit', 'typecheck'],
  'build-mac': ['lint', 'unit'],
  integration: ['build-linux', 'build-mac'],
  docs: ['deps'],
  package: ['integration', 'security', 'licenses'],
  sign: ['package'],
  publish: ['sign', 'docs', 'security'],
};

function applyWorkflowRun() {
  const jobs = Object.entries(JOBS)
    .map(([id, needs]) => `    ${id}: {runs-on: bash, needs: [${needs.join(', ')}], steps: [{name: ${id}, run: make ${id}}]}`)
    .join('\n');
  const yaml = `apiVersion: kruntimes.io/v1alpha1\nkind: WorkflowRun\nmetadata: {name: ${WR}, namespace: ${NS}}\nspec:\n  jobs:\n${jobs}\n`;
  execFileSync('kubectl', ['apply', '-f', '-'], { input: yaml, stdio: ['pipe', 'ignore', 'inherit'] });
}

type Row = NonNullable<Awaited<ReturnType<typeof focusedRow>>>;

/** The focused job row, which must be one (focus left the graph fails the test). */
async function focusedIn(page: Page): Promise<Row> {
  const f = await focusedRow(page);
  assert(f, 'the focus left the graph');
  return f;
}

/** The focused job row: its id and its box relative to the canvas. */
async function focusedRow(page: Page) {
  return page.evaluate(() => {
    const a = document.activeElement;
    const canvas = document.querySelector('[data-testid="dag-canvas"]');
    if (!(a instanceof SVGElement || a instanceof HTMLElement) || !a.matches('a.dag-row') || !canvas) return null;
    const bg = a.querySelector('.dag-row-bg');
    if (!bg) return null;
    const r = bg.getBoundingClientRect();
    const c = canvas.getBoundingClientRect();
    const stroke = getComputedStyle(bg).stroke;
    return {
      id: a.dataset.job ?? '',
      x: r.left - c.left + canvas.scrollLeft,
      y: r.top - c.top + canvas.scrollTop,
      visible: r.left >= c.left - 1 && r.right <= c.left + canvas.clientWidth + 1 && r.top >= c.top - 1 && r.bottom <= c.top + canvas.clientHeight + 1,
      stroke,
    };
  });
}

test('dag: Tab and arrow order on a 14-job DAG, focus scrolled into view and visible, arrowheads, lineage, zoom', async ({ browser }) => {
  applyWorkflowRun();
  const page = await newPage(browser, { viewport: { width: 900, height: 700 } });
  await login(page, env.viewer, 'viewer');
  await page.goto(`${env.url}/namespaces/${NS}/workflowruns/${WR}`);
  const canvas = page.getByTestId('dag-canvas');
  await canvas.waitFor();
  const rows = canvas.locator('a.dag-row');
  await eventually('14 job rows', async () => (await rows.count()) === 14);

  // Tab: from the first row through all 14, stage by stage (left to right), top to bottom within a stage.
  await rows.first().focus();
  const seen: Row[] = [];
  for (let i = 0; i < 14; i++) {
    const f = await focusedRow(page);
    assert(f, `Tab ${i} left the graph`);
    assert(f.visible, `the focused row ${f.id} is not scrolled into view`);
    assert(f.stroke && f.stroke !== 'none', `the focused row ${f.id} has no visible outline (stroke ${f.stroke})`);
    seen.push(f);
    if (i < 13) await page.keyboard.press('Tab');
  }
  const ids = seen.map((f) => f.id);
  assert(new Set(ids).size === 14, `Tab visited ${ids.join(', ')}`);
  assert(ids[0] === 'checkout' && ids[13] === 'publish', `Tab order starts ${ids[0]} and ends ${ids[13]}: ${ids.join(', ')}`);
  for (let i = 1; i < seen.length; i++) {
    const a = seen[i - 1]!;
    const b = seen[i]!;
    const ok = b.x > a.x + 1 || (Math.abs(b.x - a.x) <= 1 && b.y > a.y);
    assert(ok, `Tab went from ${a.id} (${a.x},${a.y}) to ${b.id} (${b.x},${b.y}): not stage order\n${ids.join(', ')}`);
  }
  assert(ids.join() !== [...ids].sort().join(), 'the Tab order is alphabetical');

  // Arrows.
  await page.keyboard.press('Home');
  let f = await focusedIn(page);
  assert(f.id === 'checkout', `Home focused ${f.id}`);
  await page.keyboard.press('ArrowRight');
  f = await focusedIn(page);
  const stage1 = f;
  assert(f.x > seen[0]!.x && ['deps', 'security', 'licenses'].includes(f.id), `ArrowRight from checkout focused ${f.id}`);
  await page.keyboard.press('ArrowDown');
  f = await focusedIn(page);
  assert(Math.abs(f.x - stage1.x) <= 1 && f.y > stage1.y, `ArrowDown stayed in the stage? ${JSON.stringify(f)}`);
  await page.keyboard.press('ArrowUp');
  f = await focusedIn(page);
  assert(f.id === stage1.id, `ArrowUp went back to ${f.id}, not ${stage1.id}`);
  await page.keyboard.press('ArrowLeft');
  f = await focusedIn(page);
  assert(f.id === 'checkout', `ArrowLeft focused ${f.id}`);
  await page.keyboard.press('End');
  f = await focusedIn(page);
  assert(f.id === 'publish', `End focused ${f.id}`);
  assert(f.visible, 'End did not scroll publish into view');
  // The page itself did not scroll with the arrows (they were handled).
  await page.keyboard.press('ArrowRight');
  assert((await focusedIn(page)).id === 'publish', 'ArrowRight past the last stage moved focus');

  // Arrowheads on every edge.
  const markers = await canvas.locator('path.dag-edge').evaluateAll((ps) =>
    ps.map((p) => {
      const m = /url\(#([^)]+)\)/.exec(p.getAttribute('marker-end') ?? '');
      return m ? Boolean(document.getElementById(m[1])?.querySelector('path')) : false;
    }),
  );
  const edgeCount = Object.values(JOBS).reduce((n, needs) => n + needs.length, 0);
  assert(markers.length === edgeCount && markers.every(Boolean), `edges with arrowheads: ${markers.filter(Boolean).length}/${edgeCount}`);

  // Lineage on focus (publish: everything upstream of it), then on hover (build-mac).
  const kin = async () =>
    canvas.locator('a.dag-row').evaluateAll((as) =>
      Object.fromEntries(as.map((a) => [a.dataset.job, ['active', 'up', 'down', 'dim'].find((c) => a.classList.contains(c)) ?? ''])),
    );
  await canvas.locator('a[data-job="build-mac"]').hover();
  await eventually('build-mac lineage', async () => (await kin())['build-mac'] === 'active');
  const k = await kin();
  const want = {
    up: ['checkout', 'deps', 'lint', 'unit'],
    down: ['integration', 'package', 'sign', 'publish'],
    dim: ['typecheck', 'security', 'licenses', 'build-linux', 'docs'],
  };
  for (const [cls, jobs] of Object.entries(want)) {
    for (const j of jobs) assert(k[j] === cls, `${j} is "${k[j]}" on hovering build-mac, expected ${cls}: ${JSON.stringify(k)}`);
  }
  const lit = await canvas.locator('path.dag-edge.hl').evaluateAll((ps) => ps.map((p) => p.dataset.edge));
  for (const e of ['unit->build-mac', 'build-mac->integration', 'integration->package', 'sign->publish']) {
    assert(lit.includes(e), `edge ${e} is not highlighted: ${lit.join(', ')}`);
  }
  for (const e of ['typecheck->build-linux', 'security->package', 'lint->build-linux']) {
    assert(!lit.includes(e), `edge ${e} is highlighted but not on build-mac's paths`);
  }
  await page.mouse.move(2, 2);

  // Zoom out, fit to view, actual size.
  const svgWidth = () => canvas.locator('svg.dag-svg').evaluate((s) => s.getBoundingClientRect().width);
  const full = await svgWidth();
  await page.getByRole('button', { name: 'Zoom out' }).click();
  await eventually('a smaller drawing', async () => (await svgWidth()) < full * 0.95);
  await page.getByRole('button', { name: 'Fit to view' }).click();
  await eventually('the drawing to fit the canvas width', async () => (await svgWidth()) <= (await canvas.evaluate((c) => c.clientWidth)));
  await page.getByRole('button', { name: 'Actual size' }).click();
  await eventually('the drawing at full size', async () => Math.abs((await svgWidth()) - full) < 1);
  await close(page);
});

test('relationships: a step Run links to its WorkflowRun and job; Pod names are links', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  await page.goto(`${env.url}/namespaces/${NS}/runs/lint-failed`);
  const overview = page.locator('#overview');
  await overview.getByRole('link', { name: 'release-1-4', exact: true }).waitFor();
  const job = overview.getByRole('link', { name: 'lint', exact: true });
  assert((await attr(job, 'href')).endsWith(`/namespaces/${NS}/workflowruns/release-1-4/jobs/lint`), 'the job link is wrong');
  // The assigned Pod is a link to its Runtime's Pod row.
  const pod = overview.getByRole('link', { name: 'bash-pool-1', exact: true });
  assert((await attr(pod, 'href')).endsWith(`/namespaces/${NS}/runtimes/bash#pod-bash-pool-1`), 'the Pod link is wrong');
  await job.click();
  await page.getByRole('heading', { name: 'lint', level: 1 }).waitFor();

  // In the Run list and on the Runtime page every Pod name is a link.
  await page.goto(`${env.url}/namespaces/${NS}/runs?labelSelector=app%3Ddemo`);
  const podLinks = page.locator('table.table tbody td.mono a');
  await podLinks.first().waitFor();
  const cells = await page.locator('table.table tbody tr').evaluateAll((trs) =>
    trs.map((tr) => tr.children[3]).filter((td) => td && td.textContent.trim() !== '—').map((td) => Boolean(td.querySelector('a'))),
  );
  assert(cells.length > 0 && cells.every(Boolean), `Pod cells that are not links: ${cells.filter((c) => !c).length}`);
  await page.goto(`${env.url}/namespaces/${NS}/runtimes/bash`);
  const rowLink = page.locator('#pod-bash-pool-0 a', { hasText: 'bash-pool-0' });
  await rowLink.click();
  await eventually('the Runs of the Pod', () => page.url().includes('assignedPod=bash-pool-0'));
  await close(page);
});
