// One browser test per defect of the Web UI issue (4 to 9; 1 is in
// logs.mjs), against the real Console and the demo data.
import { join } from 'node:path';
import { attr, STYLES, THEMES, assert, close, env, eventually, login, newPage, quiet, test, type Locator } from './support';
import { applyRun, deleteRun } from './kube';

const NS = env.ns;

/** Contrast of an element's text against the first opaque background behind it. */
async function textContrast(locator: Locator) {
  return locator.evaluate((el) => {
    const rgb = (s: string) => (s.match(/[\d.]+/g) ?? []).map(Number);
    const lum = ([r = 0, g = 0, b = 0]: number[]) => {
      const c = (v: number) => {
        const x = v / 255;
        return x <= 0.03928 ? x / 12.92 : ((x + 0.055) / 1.055) ** 2.4;
      };
      return 0.2126 * c(r) + 0.7152 * c(g) + 0.0722 * c(b);
    };
    let bg: number[] | null = null;
    for (let n: Element | null = el; n && !bg; n = n.parentElement) {
      const v = rgb(getComputedStyle(n).backgroundColor);
      if (v.length >= 3 && (v.length === 3 || v[3] > 0.99)) bg = v;
    }
    bg ??= [255, 255, 255];
    const fg = rgb(getComputedStyle(el).color);
    const [a, b] = [lum(fg), lum(bg)];
    return { ratio: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05), fg: getComputedStyle(el).color, bg: `rgb(${bg.join(',')})` };
  });
}

test('defect 4: links on hovered rows and on the 404 page keep 4.5:1 in every Style x Theme', async ({ browser }) => {
  const problems = [];
  for (const style of STYLES) {
    for (const theme of THEMES) {
      const page = await newPage(browser, { style, theme });
      await login(page, env.operator, 'operator');
      await page.goto(`${env.url}/namespaces/${NS}/runs?labelSelector=app%3Ddemo`);
      const row = page.locator('table.table tbody tr').first();
      await row.waitFor();
      await row.hover();
      await page.waitForTimeout(50);
      for (const link of await row.locator('a').all()) {
        const c = await textContrast(link);
        if (c.ratio < 4.5) problems.push(`${style}/${theme} hovered row link ${await link.innerText()}: ${c.ratio.toFixed(2)} (${c.fg} on ${c.bg})`);
      }
      await page.goto(`${env.url}/no/such/page`);
      const link = page.locator('main a').first();
      await link.waitFor();
      const c = await textContrast(link);
      if (c.ratio < 4.5) problems.push(`${style}/${theme} 404 page link: ${c.ratio.toFixed(2)} (${c.fg} on ${c.bg})`);
      await close(page);
    }
  }
  assert(problems.length === 0, problems.join('\n'));
});

/** Every page of the Console, as the operator sees it. */
const PAGES = [
  `/namespaces/${NS}/runs?labelSelector=app%3Ddemo`,
  `/namespaces/${NS}/runs/test-succeeded`,
  `/namespaces/${NS}/runs/build-running`,
  `/namespaces/${NS}/runs/build-pending`,
  `/namespaces/${NS}/runs/shell-session`,
  `/namespaces/${NS}/runtimes`,
  `/namespaces/${NS}/runtimes/bash`,
  `/namespaces/${NS}/workflowruns`,
  `/namespaces/${NS}/workflowruns/release-1-4`,
  `/namespaces/${NS}/workflowruns/release-1-4?view=table`,
  `/namespaces/${NS}/workflowruns/release-1-4/jobs/lint?step=1`,
  `/namespaces/team-b/runs`,
  '/settings',
  '/about',
  '/no/such/page',
  '/login',
];

test('defect 5: at 390 px no page scrolls sideways; the nav folds and content starts near the top', async ({ browser }) => {
  const problems = [];
  const page = await newPage(browser, { viewport: { width: 390, height: 844 } });
  await login(page, env.operator, 'operator');
  for (const path of PAGES) {
    await page.goto(`${env.url}${path}`);
    await page.locator('h1').first().waitFor();
    await quiet(page);
    // The open step's log toolbar is what overflowed; its lines need not be there.
    if (path.includes('jobs/lint')) await page.locator('.step .log-toolbar').first().waitFor();
    const shot = path.replace(/^\//, '').replace(/[^a-z0-9]+/gi, '_').slice(0, 60) || 'root';
    await page.screenshot({ path: join(env.shots, `m390--${shot}.png`), fullPage: true });
    const w = await page.evaluate(() => ({ doc: document.documentElement.scrollWidth, body: document.body.scrollWidth, view: window.innerWidth }));
    if (Math.max(w.doc, w.body) > w.view) problems.push(`${path}: ${Math.max(w.doc, w.body)} px wide in a ${w.view} px window`);
  }
  // The header and the folded nav leave the screen to the content.
  await page.goto(`${env.url}/namespaces/${NS}/runs`);
  await page.locator('h1').first().waitFor();
  const top = await page.locator('main h1').first().evaluate((el) => el.getBoundingClientRect().top + window.scrollY);
  if (top > 140) problems.push(`the page title starts ${Math.round(top)} px down`);
  const nav = page.getByRole('navigation', { name: 'Main' });
  assert(!(await nav.isVisible()), 'the navigation is not folded at 390 px');
  const menu = page.getByRole('button', { name: 'Menu' });
  await menu.click();
  await nav.getByRole('link', { name: 'Runtimes' }).click();
  await page.getByRole('heading', { name: 'Runtimes', level: 1 }).waitFor();
  assert(!(await nav.isVisible()), 'the navigation stays open after going to a page');
  assert((await menu.getAttribute('aria-expanded')) === 'false', 'Menu still says expanded');
  await close(page);
  assert(problems.length === 0, problems.join('\n'));
});

test('defect 6: a Pending Run waiting for capacity is not shown as failed', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  await page.goto(`${env.url}/namespaces/${NS}/runs/build-pending`);
  // The engine sets no condition on a waiting Run, only its message.
  const state = page.locator('#run-state');
  await state.waitFor();
  assert((await state.getAttribute('data-stage')) === 'waiting', `the stage is ${await state.getAttribute('data-stage')}`);
  assert(!(await attr(state, 'class')).includes('danger'), 'a waiting Run is shown as failed');
  await page.locator('#conditions').getByText('No conditions reported yet.').waitFor();
  // A real failure stays red.
  await page.goto(`${env.url}/namespaces/${NS}/runs/lint-failed`);
  const failed = page.locator('#conditions .tl-item', { hasText: 'RuntimeExecute' }).first();
  await failed.waitFor();
  assert((await failed.locator('.glyph.tone-danger').count()) > 0, 'Completed=False/RuntimeExecute is not red');
  await close(page);
});

test('defect 7a: a 409 on a Run that has a Pod says why, not "not assigned yet"', async ({ browser }) => {
  const name = 'e2e-bad-pod';
  // Assigned (Pod and UID), but to a name no Pod can have: the log API answers 409 and says why.
  applyRun(NS, name, {
    status: { phase: 'Running', assignedPod: 'Not_A_Pod', assignedPodUID: '0b7c1c5e-0000-4000-8000-000000000000', attempt: 1, startTime: '2026-01-01T00:00:00Z' },
  });
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    await page.goto(`${env.url}/namespaces/${NS}/runs/${name}`);
    await page.locator('#overview').getByText('Not_A_Pod').waitFor();
    const logs = page.locator('#logs');
    const notice = logs.locator('.notice').first();
    await notice.waitFor();
    const text = await notice.innerText();
    assert(!/not been assigned/i.test(text), `the log says the Run is not assigned: ${text}`);
    assert(text.includes('Not_A_Pod') && /invalid|assignedPod/i.test(text), `the log does not say why: ${text}`);
  } finally {
    deleteRun(NS, name);
    await close(page);
  }
});

test('defect 7b: a Run deleted while open shows only Not found', async ({ browser }) => {
  const name = 'e2e-deleted';
  applyRun(NS, name, { status: { phase: 'Pending' } });
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    await page.goto(`${env.url}/namespaces/${NS}/runs/${name}`);
    await page.locator('.page-header .badge').waitFor();
    deleteRun(NS, name);
    await page.locator('.state-title', { hasText: 'Not found' }).waitFor({ timeout: 30_000 });
    assert((await page.locator('.page-header .badge').count()) === 0, 'the deleted Run keeps its phase badge');
    assert((await page.locator('#overview, #logs, #conditions').count()) === 0, 'the deleted Run keeps its panels');
  } finally {
    deleteRun(NS, name);
    await close(page);
  }
});

test('defect 7c: a job the Workflow Run does not declare has no phase badge', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  await page.goto(`${env.url}/namespaces/${NS}/workflowruns/release-1-4/jobs/nope`);
  await page.getByText('No job named').waitFor();
  assert((await page.locator('.page-header .badge').count()) === 0, '/jobs/nope shows a phase badge');
  await close(page);
});

test('defect 7d: after a failed login the focus is on the token field', async ({ browser }) => {
  const page = await newPage(browser);
  await page.goto(`${env.url}/login`);
  const field = page.getByLabel('Kubernetes bearer token');
  await field.fill('not-a-valid-token');
  await page.getByRole('button', { name: 'Connect' }).click();
  await page.getByRole('alert').waitFor();
  const focused = await page.evaluate(() => `${document.activeElement?.tagName}#${document.activeElement?.id}`);
  const id = await field.getAttribute('id');
  assert(focused === `INPUT#${id}`, `focus is on ${focused} after the failed login`);
  await close(page);
});

test('defect 7e: the Runs page is in the URL; later pages say they are a snapshot; auto-refresh back on reads at once', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  const list = `${env.url}/namespaces/${NS}/runs?labelSelector=app%3Ddemo&limit=3`;
  await page.goto(list);
  await page.locator('table.table tbody tr').first().waitFor();
  const firstOnPage1 = await page.locator('table.table tbody tr td:first-child a').first().innerText();
  await page.getByRole('button', { name: 'Next →' }).click();
  await eventually('the page in the URL', () => page.url().includes('cont='));
  await page.getByText(/Page 2 · \d+ Runs/).waitFor();
  const firstOnPage2 = await page.locator('table.table tbody tr td:first-child a').first().innerText();
  assert(firstOnPage2 !== firstOnPage1, `page 2 starts with ${firstOnPage2}, as page 1 does`);
  await page.reload();
  await page.getByText(/Page 2 · \d+ Runs/).waitFor();
  assert((await page.locator('table.table tbody tr td:first-child a').first().innerText()) === firstOnPage2, 'a reload of page 2 shows another page');
  assert((await page.getByText(/updated \d+s ago/).count()) === 0, 'page 2 claims to be freshly updated');
  await page.getByText('only page 1 refreshes').waitFor();
  // Page 1: auto-refresh off, then on again, reads at once.
  await page.goto(list);
  await page.locator('table.table tbody tr').first().waitFor();
  const toggle = page.getByLabel('Auto-refresh');
  await toggle.uncheck();
  await page.waitForTimeout(300);
  const read = page.waitForRequest((r) => r.url().includes(`/api/namespaces/${NS}/runs?`), { timeout: 2500 });
  await toggle.check();
  await read;
  await close(page);
});

test('defect 8: the Session panel is read-only for a viewer before typing; one progress line; a placeholder for bash', async ({ browser }) => {
  const viewer = await newPage(browser);
  await login(viewer, env.viewer, 'viewer');
  await viewer.goto(`${env.url}/namespaces/${NS}/runs/shell-session`);
  const panel = viewer.locator('#session');
  await panel.getByText('Read-only.').waitFor();
  const text = await panel.innerText();
  assert(text.includes('create') && text.includes('runs/operations'), `the read-only state does not name the verb:\n${text}`);
  assert(!(await panel.getByRole('button', { name: 'Run', exact: true }).isEnabled()), 'a viewer has an enabled Run button');
  assert(!(await panel.getByRole('textbox', { name: 'Command' }).isEnabled()), 'a viewer can type a command');
  assert((await panel.getByRole('button', { name: 'Run again' }).count()) === 0, 'a Run again button');
  await close(viewer);

  const page = await newPage(browser);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: env.url });
  await login(page, env.operator, 'operator');
  await page.goto(`${env.url}/namespaces/${NS}/runs/shell-session`);
  const p2 = page.locator('#session');
  const cmd = p2.getByRole('textbox', { name: 'Command' });
  await eventually('the command input to be enabled', () => cmd.isEnabled());
  const placeholder = await cmd.getAttribute('placeholder');
  assert(!/python/i.test(placeholder ?? ''), `a Python placeholder on a bash Runtime: ${placeholder}`);
  await cmd.fill('sleep 4');
  await p2.getByRole('button', { name: 'Run', exact: true }).click();
  const out = p2.getByRole('log', { name: 'Session events' });
  let most = 0;
  await eventually('the terminal event', async () => {
    most = Math.max(most, await out.locator('.ev-progress').count());
    return (await out.locator('.ev-terminal').count()) === 1;
  }, 20_000);
  assert(most <= 1, `${most} progress lines for one operation`);
  // History: ArrowUp brings the command back.
  await eventually('the input to be free again', () => cmd.isEnabled());
  const marker = `copy-me-${Date.now()}`;
  await cmd.fill(`echo ${marker}`);
  await p2.getByRole('button', { name: 'Run', exact: true }).click();
  await out.locator('.ev-output', { hasText: marker }).waitFor();
  await eventually('the input to be free again', () => cmd.isEnabled());
  await cmd.fill('');
  await cmd.press('ArrowUp');
  assert((await cmd.inputValue()) === `echo ${marker}`, `ArrowUp gave ${await cmd.inputValue()}`);
  await cmd.press('ArrowUp');
  assert((await cmd.inputValue()) === 'sleep 4', `the second ArrowUp gave ${await cmd.inputValue()}`);
  // Copy output.
  await p2.getByRole('button', { name: 'Copy output' }).click();
  await p2.getByText('Output copied.').waitFor();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  assert(copied.includes(marker) && copied.includes('$ sleep 4'), `the clipboard has:\n${copied}`);
  await close(page);
});

test('defect 9: times say their zone; the retry policy reads as words; no "Unknown" phase; the assigned Pod links', async ({ browser }) => {
  const name = 'e2e-no-status';
  applyRun(NS, name, { labels: { e2e: 'no-status' } });
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    await page.goto(`${env.url}/namespaces/${NS}/runs/test-succeeded`);
    const overview = page.locator('#overview');
    await overview.waitFor();
    const created = await overview.locator('dt:text-is("Created") + dd').innerText();
    assert(/ UTC([+-]\d\d:\d\d)? /.test(`${created} `) || / UTC/.test(created), `Created has no zone: ${created}`);
    const retry = await overview.locator('dt:text-is("Retry policy") + dd').innerText();
    assert(retry.includes('Max attempts') && !retry.includes('{'), `the retry policy is raw: ${retry}`);
    const pod = overview.locator('dt:text-is("Assigned Pod") + dd a');
    assert((await pod.count()) === 1, 'the assigned Pod is not a link');
    await pod.click();
    await page.getByRole('heading', { name: 'bash', level: 1 }).waitFor();
    assert(page.url().includes('/runtimes/bash#pod-bash-pool-0'), `the Pod link went to ${page.url()}`);
    await page.goto(`${env.url}/namespaces/${NS}/runs?labelSelector=e2e%3Dno-status`);
    const row = page.locator('table.table tbody tr', { hasText: name });
    await row.waitFor();
    const phase = await row.locator('td:nth-child(2)').innerText();
    assert(!/unknown/i.test(phase), `a Run without status shows ${phase}`);
  } finally {
    deleteRun(NS, name);
    await close(page);
  }
});
