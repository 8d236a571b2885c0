// User flows against the real Console and demo data (hack/demo seed).
// Other suites may have left Runs in the namespace: nothing here assumes an
// otherwise empty namespace; the demo Runs are found by name and label.
import {
  attr,
  api,
  appendRunLog,
  assert,
  assertNoToken,
  close,
  env,
  eventually,
  getJson,
  login,
  newPage,
  test,
} from './support';

const NS = env.ns;

test('viewer: log in, filter Runs, Run detail, log tail then follow, DAG pan, job page, step logs', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');

  // Runs, filtered by phase (and the demo label, so other suites' Runs do not crowd the page).
  await page.goto(`${env.url}/namespaces/${NS}/runs`);
  await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
  await page.locator('table.table tbody tr').first().waitFor();
  await page.getByLabel('Phase').selectOption('Running');
  await page.getByLabel('Label selector').fill('app=demo');
  await page.getByRole('button', { name: 'Apply' }).click();
  await eventually('the URL to carry the filters', () => /phase=Running/.test(page.url()) && /labelSelector=app%3Ddemo/.test(page.url()));
  const rows = page.locator('table.table tbody tr');
  await eventually('only Running demo Runs in the table', async () => {
    const phases = await rows.locator('td:nth-child(2)').allInnerTexts();
    const names = await rows.locator('td:first-child a').allInnerTexts();
    return phases.length > 0 && phases.every((p) => p.includes('Running')) && names.includes('build-running') && !names.includes('test-succeeded');
  });

  // Run detail.
  await rows.getByRole('link', { name: 'build-running', exact: true }).click();
  await page.getByRole('heading', { name: 'build-running', level: 1 }).waitFor();
  assert(page.url().endsWith(`/namespaces/${NS}/runs/build-running`), `unexpected URL ${page.url()}`);
  await page.locator('#overview').getByText('bash-pool-0').waitFor();

  // Logs: an active Run is followed from the start, and a line appended to
  // the Pod log during the test appears.
  const logs = page.locator('#logs');
  assert(await logs.getByLabel('Follow').isChecked(), 'Follow is not on for a Running Run');
  await eventually('the follow stream', async () => (await logs.locator('.log-state').first().innerText()).includes('Following'));
  await eventually('tail lines', async () => (await logs.locator('.log-line').count()) > 0);
  const ctx = await api(env.viewer);
  const run = await getJson(ctx, `/api/namespaces/${NS}/runs/build-running`);
  await ctx.dispose();
  const marker = `e2e follow marker ${Date.now()}`;
  appendRunLog(run, marker, 'stderr');
  const line = logs.locator('.log-line', { hasText: marker });
  await line.waitFor({ timeout: 10_000 });
  assert((await attr(line, 'class')).includes('stderr'), 'the appended stderr line is not marked as stderr');
  // Scrolling up pauses the view; "Resume" follows again.
  await logs.locator('.log-scroll').evaluate((el) => el.scrollTo(0, 0));
  await eventually('the paused state', async () => (await logs.locator('.log-state.is-paused').count()) === 1 || (await logs.locator('.log-scroll').evaluate((el) => el.scrollHeight <= el.clientHeight)));

  // Search counts matches in what is shown.
  await logs.getByLabel('Search the log').fill(marker);
  await eventually('one search match', async () => (await logs.locator('.match-count').innerText()).includes('/ 1'));

  // WorkflowRun DAG.
  await page.getByRole('link', { name: 'Workflow Runs' }).click();
  // The child run's row links its parent too: take the first (the run's own row).
  await page.getByRole('link', { name: 'release-1-4', exact: true }).first().click();
  await page.getByRole('heading', { name: 'release-1-4', level: 1 }).waitFor();
  const canvas = page.getByTestId('dag-canvas');
  await canvas.waitFor();
  for (const job of ['checkout', 'lint', 'unit', 'typecheck', 'security', 'build', 'publish']) {
    assert((await canvas.locator(`a[href$="/jobs/${job}"]`).count()) === 1, `the DAG has no node for job ${job}`);
  }
  // A narrow window makes the canvas scroll; drag on empty canvas pans it.
  await page.setViewportSize({ width: 760, height: 700 });
  await eventually('a scrollable canvas', () => canvas.evaluate((el) => el.scrollWidth > el.clientWidth + 40));
  const box = await canvas.boundingBox();
  const before = await canvas.evaluate((el) => ({ x: el.scrollLeft, y: el.scrollTop }));
  const empty = await canvas.evaluate((el) => {
    // A point of the canvas not covered by a job link or card row.
    const r = el.getBoundingClientRect();
    for (let y = r.bottom - 6; y > r.top; y -= 9) {
      for (let x = r.right - 24; x > r.left; x -= 13) {
        const hit = document.elementFromPoint(x, y);
        if (hit && el.contains(hit) && !hit.closest('a')) return { x, y };
      }
    }
    return null;
  });
  assert(empty, 'found no empty canvas point to drag');
  await page.mouse.move(empty.x, empty.y);
  await page.mouse.down();
  await page.mouse.move(empty.x - 200, empty.y - 10, { steps: 8 });
  await page.mouse.up();
  const after = await canvas.evaluate((el) => ({ x: el.scrollLeft, y: el.scrollTop }));
  assert(after.x > before.x, `dragging did not pan the canvas (scrollLeft ${before.x} → ${after.x}, box ${JSON.stringify(box)})`);
  await page.setViewportSize({ width: 1360, height: 900 });

  // The job node is an ordinary link to the job page; step logs load there.
  await canvas.locator('a[href$="/jobs/lint"]').click();
  await page.getByRole('heading', { name: 'lint', level: 1 }).waitFor();
  assert(page.url().endsWith(`/namespaces/${NS}/workflowruns/release-1-4/jobs/lint`), `unexpected URL ${page.url()}`);
  await page.getByRole('navigation', { name: 'All jobs' }).getByRole('link', { name: /publish/ }).waitFor();
  const step = page.getByRole('button', { name: /lint/ }).and(page.locator('.step-toggle'));
  // The failed step opens by itself (the open ones are kept in ?step=).
  await eventually('the failed step to be open', async () => (await step.getAttribute('aria-expanded')) === 'true');
  const stepLog = page.getByRole('log', { name: 'Log of Run lint-failed' });
  await stepLog.waitFor();
  await eventually('step log lines', async () => (await stepLog.locator('.log-line').count()) > 0);
  assert((await stepLog.innerText()).includes('lint-failed'), 'the step log does not show the step Run\'s records');

  await assertNoToken(page, env.viewer);
  await close(page);
});

test('operator: session command output, cancel a long one, run again', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.operator, 'operator');
  await page.goto(`${env.url}/namespaces/${NS}/runs/shell-session`);
  const panel = page.locator('#session');
  await panel.waitFor();
  const cmd = panel.getByRole('textbox', { name: 'Command' });
  await eventually('the command input to be enabled', () => cmd.isEnabled());

  const marker = `hello-e2e-${Date.now()}`;
  await cmd.fill(`echo ${marker} from the browser`);
  await panel.getByRole('button', { name: 'Run', exact: true }).click();
  const out = panel.getByRole('log', { name: 'Session events' });
  await out.locator('.ev-output', { hasText: marker }).waitFor();
  await out.locator('.ev-terminal').first().waitFor();
  // Events in order: the command, accepted, the output, terminal.
  const kinds = await out.locator('.ev').evaluateAll((els) => els.map((e) => e.className.split(' ')[1]));
  const want = ['ev-command', 'ev-accepted', 'ev-output', 'ev-terminal'];
  assert(JSON.stringify(kinds) === JSON.stringify(want), `events ${kinds.join(', ')}; expected ${want.join(', ')}`);
  assert((await out.locator('.ev-terminal').innerText()).includes('Succeeded'), 'the echo did not succeed');

  // A long command shows progress and can be cancelled.
  await eventually('the input to be free again', () => cmd.isEnabled());
  await cmd.fill('sleep 30');
  await panel.getByRole('button', { name: 'Run', exact: true }).click();
  const cancel = panel.getByRole('button', { name: 'Cancel' });
  await eventually('Cancel to be enabled', () => cancel.isEnabled());
  await out.locator('.ev-progress').first().waitFor();
  await cancel.click();
  await eventually('a cancelled terminal event', async () => {
    const t = await out.locator('.ev-terminal').allInnerTexts();
    return t.length >= 2 && /cancel/i.test(t[t.length - 1]);
  }, 15_000);
  await eventually('the panel to be ready for another command', () => cmd.isEnabled());
  assert(!(await out.innerText()).includes('Forbidden'), 'the operator was told the panel is forbidden');

  await assertNoToken(page, env.operator);
  await close(page);
});

test('viewer: the Session panel explains that operations are forbidden before anything is typed', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  await page.goto(`${env.url}/namespaces/${NS}/runs/shell-session`);
  const panel = page.locator('#session');
  const cmd = panel.getByRole('textbox', { name: 'Command' });
  const forbidden = panel.locator('.state-forbidden');
  await forbidden.waitFor();
  assert(!(await cmd.isEnabled()), 'the viewer can type a command');
  await forbidden.waitFor();
  const text = await forbidden.innerText();
  assert(text.includes('kubectl auth can-i create runs.kruntimes.io/shell-session --subresource=operations -n team-a'), `no can-i line:\n${text}`);
  assert((await panel.locator('.ev-output, .ev-accepted').count()) === 0, 'the command was accepted for the viewer');
  await close(page);
});

test('session survives a reload; a deep link opens directly; logout ends it', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  await page.reload();
  await page.locator('.account-label', { hasText: 'viewer' }).waitFor();

  // A deep link (with a log line anchor) in a new tab of the same browser session.
  const tab = await page.context().newPage();
  await tab.goto(`${env.url}/namespaces/${NS}/runs/test-succeeded#L2`);
  await tab.getByRole('heading', { name: 'test-succeeded', level: 1 }).waitFor();
  await tab.locator('#outputs').getByText('42 tests passed').waitFor();
  await tab.locator('#artifacts').getByText('s3://demo-artifacts/team-a/test-succeeded/junit.xml').waitFor();
  await tab.locator('.log-line.selected').first().waitFor();
  assert((await tab.locator('.log-line.selected .ln').first().innerText()) === '2', 'line 2 is not the selected line');
  await tab.close();

  const job = `${env.url}/namespaces/${NS}/workflowruns/release-1-4/jobs/build`;
  await page.goto(job);
  await page.getByRole('heading', { name: 'build', level: 1 }).waitFor();
  await assertNoToken(page, env.viewer);

  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(/\/login/);
  await page.getByLabel('Kubernetes bearer token').waitFor();
  // The cookie is gone: a detail read now needs a login again.
  await page.goto(`${env.url}/namespaces/${NS}/runs/test-succeeded`);
  await page.getByText('Login needed').waitFor();
  const s = await page.evaluate(async () => (await fetch('/api/session')).json());
  assert(s.authenticated === false, `still authenticated after logout: ${JSON.stringify(s)}`);
  await close(page);
});

test('settings: Style and Theme switch, persist across a reload, and invalid stored values fall back', async ({ browser }) => {
  const page = await newPage(browser);
  const root = () => page.evaluate(() => ({ style: document.documentElement.dataset.style, theme: document.documentElement.dataset.theme }));
  await page.goto(`${env.url}/settings`);
  await page.evaluate(() => {
    localStorage.setItem('kruntimes.console.style', 'no-such-style');
    localStorage.setItem('kruntimes.console.theme', 'purple');
  });
  await page.reload();
  await page.getByRole('heading', { name: 'Settings', level: 1 }).waitFor();
  // Invalid values fall back to GitHub and System (the test browser prefers light).
  let r = await root();
  assert(r.style === 'github' && r.theme === 'light', `invalid values did not fall back: ${JSON.stringify(r)}`);
  await page.getByRole('radio', { name: /Neumorphism/ }).check();
  await page.getByRole('radio', { name: /Dark/ }).check();
  r = await root();
  assert(r.style === 'neumorphism' && r.theme === 'dark', `switching did not apply: ${JSON.stringify(r)}`);
  // After a reload the stored choice is on <html> before the page's modules run.
  await page.goto(`${env.url}/about`, { waitUntil: 'commit' });
  await page.waitForFunction(() => document.documentElement.dataset.style !== undefined);
  r = await root();
  assert(r.style === 'neumorphism' && r.theme === 'dark', `the choice did not survive a reload: ${JSON.stringify(r)}`);
  await close(page);
});
