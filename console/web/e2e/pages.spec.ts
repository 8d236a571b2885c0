// Every page in every Style x Theme against the real Console: axe finds no
// serious or critical violation, and a full-page screenshot is written to
// env.shots as <page>--<style>-<theme>.png (…--390.png at a phone's width).
// One test per Style x Theme and width: the `sweeps` project runs them on
// two workers, after every test that changes the demo data.
import { join } from 'node:path';
import {
  STYLES,
  THEMES,
  assert,
  axeViolations,
  close,
  describeViolations,
  env,
  eventually,
  login,
  newPage,
  quiet,
  test,
  chosen,
  firstLine,
  messageOf,
  type Page,
} from './support';

const NS = env.ns;

/** The page's requests answered (its watch and log follows stay open) and nothing loading. */
const settle = (page: Page) => quiet(page);

/** [name, path, role, action?]: role is the account the page is seen as. */
type Role = 'operator' | 'viewer';

const PAGES: [string, string, Role, ((p: Page) => Promise<unknown>)?][] = [
  ['runs', `/namespaces/${NS}/runs?labelSelector=app%3Ddemo`, 'operator'],
  ['runs-forbidden', `/namespaces/team-b/runs`, 'operator', (p) => p.locator('.state-forbidden').waitFor()],
  [
    'run-detail',
    `/namespaces/${NS}/runs/test-succeeded#L3`,
    'operator',
    async (p) => {
      await p.locator('#outputs').getByText('42 tests passed').waitFor();
      await p.locator('.log-line').first().waitFor();
    },
  ],
  [
    'run-logs-follow',
    `/namespaces/${NS}/runs/build-running`,
    'operator',
    async (p) => {
      const logs = p.locator('#logs');
      await logs.getByLabel('Follow').check();
      await eventually('following', async () => (await logs.locator('.log-state').first().innerText()).includes('Following'));
      await logs.getByLabel('Timestamps').check();
      await logs.getByLabel('Search the log').fill('tick');
      await logs.locator('.log-line').nth(2).waitFor();
      await logs.scrollIntoViewIfNeeded();
    },
  ],
  ['run-pending', `/namespaces/${NS}/runs/build-pending`, 'operator', (p) => p.locator('#logs .log-state.is-waiting').waitFor()],
  [
    'run-session',
    `/namespaces/${NS}/runs/shell-session`,
    'operator',
    async (p) => {
      const panel = p.locator('#session');
      const cmd = panel.getByRole('textbox', { name: 'Command' });
      await eventually('an enabled command input', () => cmd.isEnabled());
      await cmd.fill('demo');
      await panel.getByRole('button', { name: 'Run', exact: true }).click();
      await panel.locator('.ev-terminal').waitFor();
      await panel.scrollIntoViewIfNeeded();
    },
  ],
  [
    'run-session-forbidden',
    `/namespaces/${NS}/runs/shell-session`,
    'viewer',
    async (p) => {
      const panel = p.locator('#session');
      await panel.locator('.state-forbidden').waitFor();
      await panel.scrollIntoViewIfNeeded();
    },
  ],
  ['runtimes', `/namespaces/${NS}/runtimes`, 'operator', (p) => p.getByRole('link', { name: 'bash', exact: true }).waitFor()],
  ['runtime-detail', `/namespaces/${NS}/runtimes/bash`, 'operator', (p) => p.getByText('bash-pool-0').first().waitFor()],
  ['workflowruns', `/namespaces/${NS}/workflowruns`, 'operator', (p) => p.getByRole('link', { name: 'release-1-4', exact: true }).first().waitFor()],
  // Below 600 px the graph is the stages stacked as job lists (.dag-stages).
  ['workflowrun-dag', `/namespaces/${NS}/workflowruns/release-1-4`, 'operator', (p) => p.locator('[data-testid="dag-canvas"], .dag-stages').first().waitFor()],
  ['workflowrun-table', `/namespaces/${NS}/workflowruns/release-1-4?view=table`, 'operator'],
  ['workflowrun-child', `/namespaces/${NS}/workflowruns/release-1-4-security`, 'operator', (p) => p.getByTestId('dag-canvas').waitFor()],
  [
    'job-detail',
    `/namespaces/${NS}/workflowruns/release-1-4/jobs/lint?step=1`,
    'operator',
    (p) => p.locator('.step .log-line').first().waitFor(),
  ],
  ['workflowrun-timeline', `/namespaces/${NS}/workflowruns/release-1-4?view=timeline`, 'operator', (p) => p.locator('.tl-row').first().waitFor()],
  [
    'workflowrun-dag-focus',
    `/namespaces/${NS}/workflowruns/release-1-4`,
    'operator',
    async (p) => {
      const row = p.locator('a.dag-row[data-job="build"]');
      await row.focus();
      await row.hover();
    },
  ],
  [
    'run-yaml',
    `/namespaces/${NS}/runs/build-running`,
    'operator',
    async (p) => {
      await p.locator('#yaml').getByRole('button', { name: 'Show YAML' }).click();
      await p.locator('#yaml pre.yaml').waitFor();
      await p.locator('#yaml').scrollIntoViewIfNeeded();
    },
  ],
  ['runtime-queue', `/namespaces/${NS}/runtimes/bash#queue`, 'operator', (p) => p.locator('#queue').waitFor()],
  ['runtime-default-capacity', `/namespaces/${NS}/runtimes/python`, 'operator', (p) => p.getByText('python-pool-0').first().waitFor()],
  [
    'run-failed-attempts',
    `/namespaces/${NS}/runs/lint-failed`,
    'operator',
    async (p) => {
      // The overview folds above the logs on a narrow screen: open it.
      const overview = p.locator('details.run-overview');
      if (!(await overview.evaluate((d) => (d as HTMLDetailsElement).open))) await overview.locator('summary').click();
      await p.locator('.attempts').waitFor();
    },
  ],
  ['job-action-steps', `/namespaces/${NS}/workflowruns/release-1-4/jobs/unit?step=1`, 'operator', (p) => p.locator('.action-steps').waitFor()],
  ['workflowrun-failed', `/namespaces/${NS}/workflowruns/nightly-docs-x7k2p`, 'operator', (p) => p.locator('#wr-message').waitFor()],
  ['runs-sorted-searched', `/namespaces/${NS}/runs?labelSelector=app%3Ddemo&sort=-age&name=build`, 'operator', (p) => p.locator('table.table tbody tr').first().waitFor()],
  ['settings', '/settings', 'operator'],
  ['about', '/about', 'operator'],
  ['not-found', '/no/such/page', 'operator'],
];

/** Opens `path`, waits for its heading and for it to settle, runs `act`. */
async function visit(page: Page, path: string, act?: (p: Page) => Promise<unknown>): Promise<void> {
  await page.goto(`${env.url}${path}`);
  await page.locator('h1').first().waitFor();
  await settle(page);
  if (act) await act(page);
  await page.waitForTimeout(150);
}

/** axe on the page as it is (violations go to `problems` under `label`), then a full-page screenshot to env.shots/`file`. */
async function checkAndShoot(page: Page, label: string, file: string, problems: string[]): Promise<void> {
  const vs = await axeViolations(page);
  if (vs.length) problems.push(`${label}:\n${describeViolations(vs)}`);
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: join(env.shots, file), fullPage: true });
}

for (const style of chosen(STYLES, 'SHOT_STYLES')) {
  for (const theme of chosen(THEMES, 'SHOT_THEMES')) {
    test(`pages in ${style} / ${theme}: axe finds no serious or critical violation; screenshots`, async ({ browser }) => {
      const problems: string[] = [];
      const pages: Partial<Record<Role, Page>> = {};
      const checked = (page: Page, name: string) => checkAndShoot(page, name, `${name}--${style}-${theme}.png`, problems);
      try {
        // The login page, before and after a failed attempt.
        const anon = await newPage(browser, { style, theme });
        await anon.goto(`${env.url}/login`);
        await anon.getByLabel('Kubernetes bearer token').waitFor();
        await checked(anon, 'login');
        await anon.getByLabel('Kubernetes bearer token').fill('not-a-valid-token');
        await anon.getByRole('button', { name: 'Connect' }).click();
        await anon.getByRole('alert').waitFor();
        await checked(anon, 'login-error');
        // Public summaries without a login (filtered only by what a summary shows).
        await anon.goto(`${env.url}/namespaces/${NS}/runs?phase=Running`);
        await anon.locator('table.table tbody tr').first().waitFor();
        await settle(anon);
        await checked(anon, 'runs-public');
        await close(anon);

        pages.operator = await newPage(browser, { style, theme });
        await login(pages.operator, env.operator, 'operator');
        pages.viewer = await newPage(browser, { style, theme });
        await login(pages.viewer, env.viewer, 'viewer');

        for (const [name, path, role, act] of PAGES) {
          const page = pages[role];
          assert(page, `no page of the ${role}`);
          try {
            await visit(page, path, act);
            await checked(page, name);
          } catch (e) {
            problems.push(`${name}: ${firstLine(e)}`);
          }
        }
      } finally {
        for (const p of Object.values(pages)) await close(p).catch((e: unknown) => problems.push(messageOf(e)));
      }
      assert(problems.length === 0, problems.join('\n'));
    });
  }
}

/** The pages this round added or changed, at a phone's width (390 px), in every Style x Theme. */
const NARROW = [
  'runs-sorted-searched',
  'runtimes',
  'runtime-detail',
  'runtime-default-capacity',
  'workflowruns',
  'run-detail',
  'run-pending',
  'run-failed-attempts',
  'workflowrun-dag',
  'workflowrun-timeline',
  'workflowrun-failed',
  'runtime-queue',
  'run-yaml',
  'job-detail',
  'job-action-steps',
];

for (const style of chosen(STYLES, 'SHOT_STYLES')) {
  for (const theme of chosen(THEMES, 'SHOT_THEMES')) {
    test(`pages at 390 px in ${style} / ${theme}: axe finds no serious or critical violation; screenshots`, async ({ browser }) => {
      const problems: string[] = [];
      const page = await newPage(browser, { style, theme, viewport: { width: 390, height: 844 } });
      try {
        await login(page, env.operator, 'operator');
        for (const [name, path, , act] of PAGES.filter(([n]) => NARROW.includes(n))) {
          try {
            await visit(page, path, act);
            await checkAndShoot(page, `${name} (390 px)`, `${name}--${style}-${theme}--390.png`, problems);
          } catch (e) {
            problems.push(`${name} (390 px): ${firstLine(e)}`);
          }
        }
      } finally {
        await close(page).catch((e: unknown) => problems.push(messageOf(e)));
      }
      assert(problems.length === 0, problems.join('\n'));
    });
  }
}
