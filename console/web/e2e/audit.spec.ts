// UI audit: the return path after a login, the public summary on a "Login
// needed" page, live durations and the completion sort of the Runs list, the
// Session panel when the Runtime gateway is down, the Run log follow across
// status changes, focus after a route change, a namespace that does not
// exist, condition glyphs by meaning, and the Workflow Run and job pages at
// 390 px. Each test runs against the real Console and demo data.
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { STYLES, THEMES, assert, chosen, close, env, eventually, login, newPage, test, type Browser, type Json, type Page } from './support';

const NS = env.ns;

function kubectl(args: string[], input?: string): string {
  return execFileSync('kubectl', args, { input, stdio: ['pipe', 'pipe', 'inherit'] }).toString();
}

function patchStatus(name: string, status: Record<string, unknown>): void {
  kubectl(['-n', NS, 'patch', 'run', name, '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify({ status })]);
}

function createRun(name: string, label: string, mode = '{task: {}}'): void {
  kubectl(
    ['apply', '-f', '-'],
    `apiVersion: kruntimes.io/v1alpha1\nkind: Run\nmetadata: {name: ${name}, namespace: ${NS}, labels: {app: ${label}}}\nspec: {runtime: bash, mode: ${mode}}\n`,
  );
}

function deleteRuns(label: string): void {
  kubectl(['-n', NS, 'delete', 'run', '-l', `app=${label}`, '--wait=false']);
}

/** Screenshots of `path` (prepared by `ready`) in every Style x Theme, at `width`. */
interface ShotOptions {
  token?: string;
  user?: string;
  width?: number;
  ready?: (p: Page) => Promise<unknown>;
}

async function shots(browser: Browser, name: string, path: string, { token, user = '', width = 1360, ready }: ShotOptions): Promise<void> {
  for (const style of chosen(STYLES, 'SHOT_STYLES')) {
    for (const theme of chosen(THEMES, 'SHOT_THEMES')) {
      const page = await newPage(browser, { style, theme, viewport: { width, height: width < 600 ? 844 : 900 } });
      if (token) await login(page, token, user);
      await page.goto(`${env.url}${path}`);
      await page.locator('h1').first().waitFor();
      if (ready) await ready(page);
      await page.screenshot({ path: join(env.shots, `audit-${name}--${style}-${theme}${width < 600 ? '-390' : ''}.png`), fullPage: true });
      await close(page);
    }
  }
}

// --- 1. login return and the public summary ----------------------------------

test('audit 1: "Login needed" shows the public summary; login returns to the page asked for; bad return paths go home', async ({ browser }) => {
  const page = await newPage(browser);
  await page.goto(`${env.url}/namespaces/${NS}/runs/build-running`);
  const state = page.locator('.state', { hasText: 'Login needed' });
  await state.waitFor();
  // The public summary of this Run, as the public list shows it: phase and runtime.
  const summary = page.locator('[data-public-summary]');
  await summary.waitFor({ timeout: 5000 }).catch(() => {});
  assert((await summary.count()) === 1, 'the Login needed page shows no public summary of the Run');
  const text = await summary.innerText();
  assert(/Running/.test(text) && /bash/.test(text), `the public summary lacks phase and runtime:\n${text}`);

  // Log in from there: back on the Run page.
  await state.getByRole('link', { name: 'Log in' }).click();
  await eventually('the login page with next=', () => /\/login\?next=/.test(page.url()));
  await page.getByText(`After logging in you return to /namespaces/${NS}/runs/build-running.`).waitFor();
  await page.getByLabel('Kubernetes bearer token').fill(env.viewer);
  await page.getByRole('button', { name: 'Connect' }).click();
  await eventually('back on the Run page', () => new URL(page.url()).pathname === `/namespaces/${NS}/runs/build-running`);
  await page.getByRole('heading', { name: 'build-running', level: 1 }).waitFor();

  // Bad return paths: the home page (which lands in a namespace), never another origin.
  for (const bad of ['https://evil.example/x', '//evil.example/x', '/\\evil.example/x', '\\\\evil.example', 'javascript:alert(1)', '/%5C%5Cevil.example', ' /x']) {
    await page.goto(`${env.url}/login?next=${encodeURIComponent(bad)}`);
    await page.getByLabel('Kubernetes bearer token').fill(env.viewer);
    await page.getByRole('button', { name: 'Connect' }).click();
    await eventually(`the home page after next=${bad}`, () => {
      const u = new URL(page.url());
      return u.origin === new URL(env.url).origin && /^\/namespaces\/[^/]+\/runs$/.test(u.pathname);
    });
  }
  await close(page);
});

test('audit 1: screenshots of the login return and Login needed with the public summary', async ({ browser }) => {
  await shots(browser, 'login-next', `/login?next=${encodeURIComponent(`/namespaces/${NS}/runs/build-running`)}`, {});
  await shots(browser, 'login-next', `/login?next=${encodeURIComponent(`/namespaces/${NS}/runs/build-running`)}`, { width: 390 });
  await shots(browser, 'login-needed', `/namespaces/${NS}/runs/build-running`, { ready: (p) => p.locator('[data-public-summary]').waitFor() });
  await shots(browser, 'login-needed', `/namespaces/${NS}/runs/build-running`, { width: 390, ready: (p) => p.locator('[data-public-summary]').waitFor() });
});

// --- 2. live durations, message, completion sort ---------------------------------

test('audit 2: the Runs list shows status.message and a live duration, and sorts by completion time both ways', async ({ browser }) => {
  const label = `e2e-audit-${Date.now()}`;
  const t = (s: number) => new Date(Date.now() - s * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
  const names = { early: `${label}-early`, late: `${label}-late`, open: `${label}-open` };
  for (const n of Object.values(names)) createRun(n, label);
  try {
    patchStatus(names.early, { phase: 'Succeeded', message: 'finished first', startTime: t(600), completionTime: t(500) });
    patchStatus(names.late, { phase: 'Failed', message: 'exit status 3', startTime: t(300), completionTime: t(100) });
    patchStatus(names.open, { phase: 'Running', message: 'still going', startTime: t(5) });
    const page = await newPage(browser);
    // Counts the page's running intervals of a second or less.
    await page.context().addInitScript(() => {
      const live = new Map<number, number>();
      const set = window.setInterval.bind(window);
      const clear = window.clearInterval.bind(window);
      window.setInterval = ((fn: TimerHandler, ms?: number, ...a: unknown[]) => {
        const id = set(fn, ms, ...a);
        live.set(id, ms ?? 0);
        return id;
      }) as typeof window.setInterval;
      window.clearInterval = ((id?: number) => {
        if (id !== undefined) live.delete(id);
        clear(id);
      }) as typeof window.clearInterval;
      (window as unknown as { __fastIntervals: () => number }).__fastIntervals = () => [...live.values()].filter((ms) => ms <= 1000).length;
    });
    await login(page, env.viewer, 'viewer');
    await page.goto(`${env.url}/namespaces/${NS}/runs?labelSelector=app%3D${label}`);
    const rows = page.locator('table.table tbody tr');
    await eventually('three rows', async () => (await rows.count()) === 3);
    const row = (n: string) => rows.filter({ has: page.getByRole('link', { name: n, exact: true }) });
    await eventually('the message of each Run', async () => (await row(names.late).innerText()).includes('exit status 3') && (await row(names.open).innerText()).includes('still going'));
    const header = page.locator('thead th', { hasText: 'Duration' });
    assert((await header.count()) === 1, 'no Duration column');
    const col = await header.evaluate((th) => [...th.parentElement!.children].indexOf(th) + 1);
    const dur = (n: string) => row(n).locator(`td:nth-child(${col})`).innerText();
    assert((await dur(names.early)) === '1m 40s', `the early Run's duration reads ${await dur(names.early)}`);

    // Live: with the list not refreshing, the running Run's duration and the ages still move.
    await page.getByLabel('Auto-refresh').uncheck();
    const before = await dur(names.open);
    await eventually(`the running duration to move on from ${before}`, async () => (await dur(names.open)) !== before, 4000);
    // One shared timer: not one interval per cell.
    const timers = await page.evaluate(() => (window as unknown as { __fastIntervals: () => number }).__fastIntervals());
    assert(timers === 1, `${timers} timers of a second or less tick on the page (one shared timer expected)`);

    // Sort by completion: ascending oldest first, descending newest first; a Run not completed is last both ways.
    const completed = page.locator('th', { has: page.getByRole('button', { name: /^Completed/ }) });
    await completed.getByRole('button').click();
    await eventually('sort=completed', () => /[?&]sort=completed(&|$)/.test(page.url()));
    const order = () => rows.locator('td:first-child > a').allInnerTexts();
    await eventually('ascending by completion', async () => JSON.stringify(await order()) === JSON.stringify([names.early, names.late, names.open]));
    await completed.getByRole('button').click();
    await eventually('sort=-completed', () => /[?&]sort=-completed(&|$)/.test(page.url()));
    await eventually('descending by completion', async () => JSON.stringify(await order()) === JSON.stringify([names.late, names.early, names.open]));
    await page.screenshot({ path: join(env.shots, 'audit-runs-columns.png'), fullPage: true });
    await close(page);
    await shots(browser, 'runs-columns', `/namespaces/${NS}/runs?labelSelector=app%3D${label}&sort=-completed`, { token: env.viewer, user: 'viewer', ready: (p) => p.locator('table.table tbody tr').nth(2).waitFor() });
    await shots(browser, 'runs-columns', `/namespaces/${NS}/runs?labelSelector=app%3D${label}&sort=-completed`, { token: env.viewer, user: 'viewer', width: 390, ready: (p) => p.locator('table.table tbody tr').nth(2).waitFor() });
  } finally {
    deleteRuns(label);
  }
});

// --- 3. session panel: gateway down; the log follow across status changes -----------

async function gateway(path: string) {
  const r = await fetch(`${process.env.TESTENV_GATEWAY_CONTROL}${path}`, { method: 'POST' });
  assert(r.ok, `gateway control ${path}: HTTP ${r.status}`);
}

test('audit 3: with the gateway down the Session panel says "gateway unreachable, retrying", checks access again, and runs once it is back', async ({ browser }) => {
  assert(process.env.TESTENV_GATEWAY_CONTROL, 'TESTENV_GATEWAY_CONTROL is not set');
  const page = await newPage(browser);
  await login(page, env.operator, 'operator');
  let accessChecks = 0;
  page.on('request', (r) => r.url().endsWith('/operations/access') && accessChecks++);
  await page.goto(`${env.url}/namespaces/${NS}/runs/shell-session`);
  const panel = page.locator('#session');
  const cmd = panel.getByRole('textbox', { name: 'Command' });
  await eventually('the command input to be enabled', () => cmd.isEnabled());
  const checksBefore = accessChecks;
  await gateway('/down');
  try {
    const marker = `after-outage-${Date.now()}`;
    await cmd.fill(`echo ${marker}`);
    await panel.getByRole('button', { name: 'Run', exact: true }).click();
    const out = panel.getByRole('log', { name: 'Session events' });
    await eventually('"gateway unreachable, retrying"', async () => /gateway unreachable, retrying/i.test(await out.innerText()), 15_000);
    const text = await out.innerText();
    assert(!/forbidden/i.test(text), `the panel says Forbidden:\n${text}`);
    assert((await panel.locator('.state-forbidden').count()) === 0, 'the panel shows the Forbidden state');
    assert(accessChecks > checksBefore, 'the access check did not run again');
    for (const style of chosen(STYLES, 'SHOT_STYLES')) {
      for (const theme of chosen(THEMES, 'SHOT_THEMES')) {
        await page.evaluate(([s, t]) => {
          document.documentElement.dataset.style = s;
          document.documentElement.dataset.theme = t;
        }, [style, theme]);
        await panel.screenshot({ path: join(env.shots, `audit-session-gateway-unreachable--${style}-${theme}.png`) });
      }
    }
    await page.setViewportSize({ width: 390, height: 844 });
    for (const style of chosen(STYLES, 'SHOT_STYLES')) {
      for (const theme of chosen(THEMES, 'SHOT_THEMES')) {
        await page.evaluate(([s, t]) => {
          document.documentElement.dataset.style = s;
          document.documentElement.dataset.theme = t;
        }, [style, theme]);
        await panel.screenshot({ path: join(env.shots, `audit-session-gateway-unreachable--${style}-${theme}-390.png`) });
      }
    }
    await gateway('/up');
    await out.locator('.ev-output', { hasText: marker }).waitFor({ timeout: 30_000 });
  } finally {
    await gateway('/up').catch(() => {});
  }
  await close(page);
});

test('audit 3: the Run log follow does not restart when the Run status changes (phase still active)', async ({ browser }) => {
  const label = `e2e-follow-${Date.now()}`;
  const name = `${label}-run`;
  createRun(name, label);
  try {
    // A Pod of the demo: the follow, open before the assignment, is served by the Run-log API once it is made.
    const pod = kubectl(['-n', NS, 'get', 'run', 'build-running', '-o', 'jsonpath={.status.assignedPod}']).trim();
    const page = await newPage(browser);
    await login(page, env.viewer, 'viewer');
    const follows: string[] = [];
    page.on('request', (r) => /\/log(s)?\b.*follow=true/.test(r.url()) && follows.push(r.url()));
    await page.goto(`${env.url}/namespaces/${NS}/runs/${name}`);
    await page.getByRole('heading', { name, level: 1 }).waitFor();
    await eventually('a log follow', () => follows.length >= 1);
    await page.waitForTimeout(1500);
    const before = follows.length;
    patchStatus(name, { phase: 'Pending', message: 'waiting for a Pod' });
    await eventually('the page to show Pending', () => page.getByText('waiting for a Pod').first().isVisible(), 5000);
    patchStatus(name, { phase: 'Running', message: 'first', assignedPod: pod, startTime: new Date().toISOString() });
    await eventually('the page to show the assignment', () => page.getByText(pod).first().isVisible(), 5000);
    for (let i = 0; i < 3; i++) {
      patchStatus(name, { phase: 'Running', message: `status change ${i}`, attempt: i + 1 });
      await eventually(`the page to show status change ${i}`, () => page.getByText(`status change ${i}`).first().isVisible(), 5000);
    }
    await page.waitForTimeout(1500);
    assert(follows.length === before, `the follow restarted ${follows.length - before} times on status changes:\n${follows.join('\n')}`);
    await close(page);
  } finally {
    deleteRuns(label);
  }
});

// --- 4. focus after a route change ---------------------------------------------

test('audit 4: after a route change the focus is on the main heading; not on the first load', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  await page.goto(`${env.url}/namespaces/${NS}/runs?labelSelector=app%3Ddemo`);
  await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
  await page.locator('table.table tbody tr').first().waitFor();
  const focused = () => page.evaluate(() => {
    const a = document.activeElement;
    return a ? { tag: a.tagName, text: a.textContent, tabIndex: a.getAttribute('tabindex') } : null;
  });
  const first = await focused();
  assert(first?.tag !== 'H1', 'the heading took the focus on the first load');
  await page.getByRole('link', { name: 'build-running', exact: true }).click();
  await page.getByRole('heading', { name: 'build-running', level: 1 }).waitFor();
  await eventually('the focus on the h1 of the Run page', async () => {
    const f = await focused();
    return f?.tag === 'H1' && f.text === 'build-running' && f.tabIndex === '-1';
  }, 3000);
  await page.goBack();
  await eventually('the focus on the h1 of the Runs page', async () => {
    const f = await focused();
    return f?.tag === 'H1' && f.text === 'Runs';
  }, 3000);
  await close(page);
});

// --- 5. a namespace that does not exist; condition glyphs -------------------------

// Whether a namespace exists is told only from the caller's own get of it
// (docs/security.md): a caller who may read namespaces is told it does not
// exist; one who may not is told nothing, so it reads as Forbidden, as a
// namespace that exists and is not theirs does.
test('audit 5: a namespace that does not exist says so to a caller who may read namespaces', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.admin, 'admin');
  await page.goto(`${env.url}/namespaces/no-such-namespace-e2e/runs`);
  await page.getByRole('heading', { level: 1 }).first().waitFor();
  await eventually('"does not exist"', () => page.getByText(/namespace no-such-namespace-e2e does not exist/i).first().isVisible(), 8000);
  assert(!(await page.getByText('Forbidden').first().isVisible().catch(() => false)), 'the page still says Forbidden');
  await close(page);

  const viewer = await newPage(browser);
  await login(viewer, env.viewer, 'viewer');
  for (const ns of ['no-such-namespace-e2e', 'kube-system']) {
    await viewer.goto(`${env.url}/namespaces/${ns}/runs`);
    await viewer.locator('.state-forbidden').waitFor();
    assert(!(await viewer.getByText(/does not exist/).first().isVisible().catch(() => false)), `${ns} is said not to exist to the viewer`);
  }
  await close(viewer);
});

test('audit 5: Failed=True and Completed=False are not green checks', async ({ browser }) => {
  const label = `e2e-glyph-${Date.now()}`;
  const name = `${label}-run`;
  createRun(name, label);
  try {
    const now = new Date().toISOString().replace(/\.\d+Z$/, 'Z');
    patchStatus(name, {
      phase: 'Failed',
      completionTime: now,
      conditions: [
        { type: 'Scheduled', status: 'True', reason: 'Assigned', lastTransitionTime: now, message: 'ok' },
        { type: 'Failed', status: 'True', reason: 'Exited', lastTransitionTime: now, message: 'exit 1' },
        { type: 'Completed', status: 'False', reason: 'Exited', lastTransitionTime: now, message: 'exit 1' },
      ],
    });
    const page = await newPage(browser);
    await login(page, env.viewer, 'viewer');
    await page.goto(`${env.url}/namespaces/${NS}/runs/${name}`);
    const item = (t: string) => page.locator('#conditions .tl-item', { has: page.locator('strong', { hasText: new RegExp(`^${t}$`) }) });
    await item('Failed').waitFor();
    const tone = async (t: string) => (await item(t).getAttribute('class')) ?? '';
    assert(/tone-success/.test(await tone('Scheduled')), `Scheduled=True: ${await tone('Scheduled')}`);
    assert(/tone-danger/.test(await tone('Failed')), `Failed=True is not red: ${await tone('Failed')}`);
    assert(/tone-danger/.test(await tone('Completed')), `Completed=False is not red: ${await tone('Completed')}`);
    await close(page);
  } finally {
    deleteRuns(label);
  }
});

// --- 6. 390 px: the DAG and the job page ----------------------------------------

test('audit 6: at 390 px the Workflow Run jobs stack by stage within the screen; the job page puts steps before the jobs rail', async ({ browser }) => {
  const page = await newPage(browser, { viewport: { width: 390, height: 844 } });
  await login(page, env.operator, 'operator');
  await page.goto(`${env.url}/namespaces/${NS}/workflowruns/release-1-4`);
  await page.getByRole('heading', { name: 'release-1-4', level: 1 }).waitFor();
  const wr: Json = await page.evaluate(async (ns) => (await fetch(`/api/namespaces/${ns}/workflowruns/release-1-4`)).json(), NS);
  const jobs = Object.keys(wr.spec.jobs);
  const panel = page.locator('#jobs');
  const boxes: Record<string, { left: number; right: number; top: number; bottom: number }> = {};
  for (const j of jobs) {
    const link = panel.getByRole('link', { name: new RegExp(`^${j}\\b`) }).first();
    await link.waitFor();
    boxes[j] = await link.evaluate((el) => {
      const r = el.getBoundingClientRect();
      return { left: r.left, right: r.right, top: r.top + window.scrollY, bottom: r.bottom + window.scrollY };
    });
  }
  const out = jobs.filter((j) => boxes[j].left < 0 || boxes[j].right > 390);
  assert(out.length === 0, `jobs outside the 390 px screen: ${out.map((j) => `${j} ${Math.round(boxes[j].left)}..${Math.round(boxes[j].right)}`).join(', ')}`);
  // Stacked: a job that needs another is below it.
  for (const j of jobs) {
    for (const n of wr.spec.jobs[j].needs ?? []) {
      if (boxes[n]) assert(boxes[j].top >= boxes[n].bottom, `${j} (needs ${n}) is not below it`);
    }
  }
  for (const style of chosen(STYLES, 'SHOT_STYLES')) {
    for (const theme of chosen(THEMES, 'SHOT_THEMES')) {
      await page.evaluate(([s, t]) => {
        document.documentElement.dataset.style = s;
        document.documentElement.dataset.theme = t;
      }, [style, theme]);
      await page.screenshot({ path: join(env.shots, `audit-dag--${style}-${theme}-390.png`), fullPage: true });
    }
  }

  await page.goto(`${env.url}/namespaces/${NS}/workflowruns/release-1-4/jobs/lint?step=1`);
  await page.getByRole('heading', { name: 'lint', level: 1 }).waitFor();
  const steps = page.locator('.panel', { has: page.getByRole('heading', { name: /^Steps/ }) });
  await steps.waitFor();
  const stepsTop = await steps.evaluate((el) => el.getBoundingClientRect().top + window.scrollY);
  const railTop = await page.getByRole('navigation', { name: 'All jobs' }).evaluate((el) => el.getBoundingClientRect().top + window.scrollY);
  assert(stepsTop < railTop, `the jobs rail (${Math.round(railTop)} px) comes before the steps (${Math.round(stepsTop)} px)`);
  for (const style of chosen(STYLES, 'SHOT_STYLES')) {
    for (const theme of chosen(THEMES, 'SHOT_THEMES')) {
      await page.evaluate(([s, t]) => {
        document.documentElement.dataset.style = s;
        document.documentElement.dataset.theme = t;
      }, [style, theme]);
      await page.screenshot({ path: join(env.shots, `audit-job--${style}-${theme}-390.png`), fullPage: true });
    }
  }
  await close(page);
});
