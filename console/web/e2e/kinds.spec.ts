// Actions and Persistent Workspaces in the browser against the real Console
// and the demo data (hack/demo seed): the sidebar leads to both lists, the
// detail pages show what the engine's objects say (never an env value),
// a visitor without a login is asked to log in, and every list and detail
// page is checked with axe and shot in every Style x Theme, wide and at 390 px.
import { join } from 'node:path';
import { STYLES, THEMES, assert, axeViolations, chosen, close, describeViolations, env, eventually, firstLine, login, messageOf, newPage, test, type Page } from './support';

const NS = env.ns;
/** The value of the demo Action's step env (hack/lib/demo.sh): never on screen. */
const ENV_VALUE = 'demo-proxy-token-value';

test('Actions: sidebar, list, definition without env values, callers', async ({ browser }) => {
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    await page.goto(`${env.url}/namespaces/${NS}/runs`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Actions' }).click();
    await page.waitForURL(`**/namespaces/${NS}/actions`);
    const row = page.locator('table.table tbody tr').filter({ has: page.getByRole('link', { name: 'setup-go', exact: true }) });
    await row.waitFor();
    assert((await row.innerText()).includes('Ready'), `the setup-go row says: ${await row.innerText()}`);
    await page.getByRole('link', { name: 'publish-report', exact: true }).waitFor();
    await row.getByRole('link', { name: 'setup-go' }).click();
    await page.locator('h1', { hasText: 'setup-go' }).waitFor();
    const steps = page.locator('#steps');
    await steps.locator('.action-step-name', { hasText: 'install' }).waitFor();
    await steps.getByText('GOPROXY_TOKEN').waitFor();
    assert(await steps.getByText('values not shown').first().isVisible(), 'the env names are not marked as names only');
    const inputs = page.locator('#inputs');
    await inputs.getByText('go-version').waitFor();
    assert((await inputs.innerText()).includes('required'), 'the required input is not marked');
    await page.locator('#outputs').getByText('steps.install.outputs.goroot').waitFor();
    // The YAML view hides the value too.
    await page.locator('#yaml').getByRole('button', { name: 'Show YAML' }).click();
    await page.locator('#yaml pre.yaml').waitFor();
    assert(!(await page.content()).includes(ENV_VALUE), 'an env value is on the page');
    const caller = page.locator('#used-by').getByRole('link', { name: 'nightly-go', exact: true });
    await caller.click();
    await page.waitForURL(`**/namespaces/${NS}/workflowruns/nightly-go`);
  } finally {
    await close(page);
  }
});

test('Persistent Workspaces: sidebar, phases, bound Pod and volume', async ({ browser }) => {
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    await page.goto(`${env.url}/namespaces/${NS}/runs`);
    await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'Workspaces' }).click();
    await page.waitForURL(`**/namespaces/${NS}/persistentworkspaces`);
    const rowOf = (name: string) => page.locator('table.table tbody tr').filter({ has: page.getByRole('link', { name, exact: true }) });
    await rowOf('go-build-cache').waitFor();
    const bound = await rowOf('go-build-cache').innerText();
    assert(bound.includes('Bound') && bound.includes('bash-pool-0') && bound.includes('ago'), `go-build-cache row: ${bound}`);
    const pending = await rowOf('notebook-scratch').innerText();
    assert(pending.includes('Pending') && pending.includes('never'), `notebook-scratch row: ${pending}`);
    await rowOf('go-build-cache').getByRole('link', { name: 'go-build-cache' }).click();
    await page.locator('h1', { hasText: 'go-build-cache' }).waitFor();
    const pod = page.locator('#pod');
    await pod.getByRole('link', { name: 'bash-pool-0' }).waitFor();
    assert((await pod.innerText()).includes('Running'), `bound Pod panel: ${await pod.innerText()}`);
    await page.locator('#volume').getByText('emptyDir', { exact: true }).waitFor();
    await eventually('the retention words', async () => (await page.locator('.kv').first().innerText()).includes('Deleted 24 h after its last use'));
    await pod.getByRole('link', { name: 'bash-pool-0' }).click();
    await page.waitForURL(`**/namespaces/${NS}/runtimes/bash#pod-bash-pool-0`);
    // The Pending workspace has no Pod: its panel says so instead of failing.
    await page.goto(`${env.url}/namespaces/${NS}/persistentworkspaces/notebook-scratch`);
    await page.locator('#pod').getByText('not bound to a Runtime Pod').waitFor();
  } finally {
    await close(page);
  }
});

test('Actions and Persistent Workspaces ask a visitor without a login to log in', async ({ browser }) => {
  const page = await newPage(browser);
  try {
    for (const path of [`/namespaces/${NS}/actions`, `/namespaces/${NS}/persistentworkspaces/go-build-cache`]) {
      await page.goto(`${env.url}${path}`);
      const state = page.locator('.state-error').filter({ hasText: 'Login needed' });
      await state.waitFor();
      assert((await state.innerText()).includes('not part of public read'), `${path}: ${await state.innerText()}`);
      assert(!(await page.content()).includes('setup-go'), `${path} shows an Action to a visitor`);
    }
  } finally {
    await close(page);
  }
});

const PAGES: [string, string, (p: Page) => Promise<void>][] = [
  ['actions', `/namespaces/${NS}/actions`, (p) => p.getByRole('link', { name: 'setup-go', exact: true }).waitFor()],
  ['action-detail', `/namespaces/${NS}/actions/setup-go`, (p) => p.locator('#used-by').getByRole('link', { name: 'nightly-go' }).waitFor()],
  ['workspaces', `/namespaces/${NS}/persistentworkspaces`, (p) => p.getByRole('link', { name: 'go-build-cache', exact: true }).waitFor()],
  ['workspace-detail', `/namespaces/${NS}/persistentworkspaces/go-build-cache`, (p) => p.locator('#pod').getByRole('link', { name: 'bash-pool-0' }).waitFor()],
  ['workspace-pending', `/namespaces/${NS}/persistentworkspaces/notebook-scratch`, (p) => p.locator('#volume .kv').waitFor()],
];

for (const [width, suffix] of [
  [1360, ''],
  [390, '--390'],
] as const) {
  test(`Actions and Persistent Workspaces at ${width} px in every Style x Theme: axe finds no serious or critical violation; screenshots`, async ({ browser }) => {
    const problems: string[] = [];
    for (const style of chosen(STYLES, 'SHOT_STYLES')) {
      for (const theme of chosen(THEMES, 'SHOT_THEMES')) {
        const page = await newPage(browser, { style, theme, viewport: { width, height: width > 400 ? 900 : 844 } });
        try {
          await login(page, env.viewer, 'viewer');
          for (const [name, path, ready] of PAGES) {
            try {
              await page.goto(`${env.url}${path}`);
              await page.locator('h1').first().waitFor();
              await ready(page);
              await page.locator('.state-loading').first().waitFor({ state: 'detached', timeout: 10_000 }).catch(() => {});
              await page.waitForTimeout(150);
              const vs = await axeViolations(page);
              if (vs.length) problems.push(`${name} (${style}/${theme}, ${width} px):\n${describeViolations(vs)}`);
              await page.evaluate(() => window.scrollTo(0, 0));
              await page.screenshot({ path: join(env.shots, `${name}--${style}-${theme}${suffix}.png`), fullPage: true });
            } catch (e) {
              problems.push(`${name} (${style}/${theme}, ${width} px): ${firstLine(e)}`);
            }
          }
        } finally {
          await close(page).catch((e: unknown) => problems.push(messageOf(e)));
        }
      }
    }
    assert(problems.length === 0, problems.join('\n'));
  });
}
