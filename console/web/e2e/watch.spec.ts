// Live lists and details by watch: a `kubectl patch` shows on the open
// page without a reload, within a second (polling, the fallback, is every
// 5 s and stops while live); the page says when it is live and when it
// reconnects, and after a reconnect it resumes.
import { execFileSync } from 'node:child_process';
import { assert, close, env, eventually, login, newPage, test } from './support';

const NS = env.ns;

function kubectl(args: string[], input?: string): string {
  return execFileSync('kubectl', args, { input, stdio: ['pipe', 'pipe', 'inherit'] }).toString();
}

function patchStatus(name: string, status: Record<string, unknown>): void {
  kubectl(['-n', NS, 'patch', 'run', name, '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify({ status })]);
}

/** Waits up to `ms` for `fn`, and returns how long it took. */
async function within(what: string, ms: number, fn: () => unknown): Promise<number> {
  const t0 = Date.now();
  await eventually(what, fn, ms);
  return Date.now() - t0;
}

test('watch: a kubectl patch shows on the Run list and the Run page within a second, without a reload; live and reconnecting are shown', async ({ browser }) => {
  const name = `e2e-watch-${Date.now()}`;
  kubectl(['apply', '-f', '-'], `apiVersion: kruntimes.io/v1alpha1\nkind: Run\nmetadata: {name: ${name}, namespace: ${NS}, labels: {app: e2e-watch}}\nspec: {runtime: bash, mode: {task: {}}}\n`);
  try {
    const page = await newPage(browser);
    await login(page, env.viewer, 'viewer');
    let navigations = 0;
    page.on('framenavigated', (f) => f === page.mainFrame() && navigations++);
    await page.goto(`${env.url}/namespaces/${NS}/runs?labelSelector=app%3De2e-watch`);
    const row = page.locator('table.table tbody tr', { hasText: name });
    await row.waitFor();
    const badge = page.locator('.live-badge').first();
    await eventually('the live badge', async () => (await badge.getAttribute('data-live')) === 'live');
    const before = navigations;

    patchStatus(name, { phase: 'Running', message: 'started by e2e' });
    const listMs = await within('the list to show Running', 1000, async () => (await row.locator('td:nth-child(2)').innerText()).includes('Running'));

    await row.getByRole('link', { name, exact: true }).click();
    await page.getByRole('heading', { name, level: 1 }).waitFor();
    await eventually('the detail page live', async () => (await page.locator('.live-badge').first().getAttribute('data-live')) === 'live');
    patchStatus(name, { phase: 'Running', message: 'second message from e2e' });
    const detailMs = await within('the detail to show the new message', 1000, () => page.getByText('second message from e2e').isVisible());
    assert(navigations - before === 1, `the page reloaded (${navigations - before} navigations; one was the click)`);

    // Dropped (the browser stops every request in flight, as a lost network
    // does): the page says so, reconnects by itself, and resumes (the next patch arrives).
    // Every change of the badge is recorded in the page as it happens (a
    // state shorter than any polling interval is still seen).
    await page.evaluate(() => {
      const w = window as unknown as { liveSeen: string[] };
      w.liveSeen = [];
      const note = () => {
        const v = document.querySelector('.live-badge')?.getAttribute('data-live');
        if (v && w.liveSeen[w.liveSeen.length - 1] !== v) w.liveSeen.push(v);
      };
      new MutationObserver(note).observe(document.body, { subtree: true, childList: true, attributes: true, attributeFilter: ['data-live'] });
    });
    await page.evaluate(() => window.stop());
    await eventually(
      'live again',
      async () => {
        const seen = await page.evaluate(() => (window as unknown as { liveSeen: string[] }).liveSeen);
        const now = await page.locator('.live-badge').first().getAttribute('data-live');
        if (!(seen.includes('reconnecting') && now === 'live')) throw new Error(`states seen: ${seen.join(' → ') || 'none'}; now ${now}`);
        return true;
      },
      15_000,
    );
    patchStatus(name, { phase: 'Succeeded', message: 'done after the reconnect', completionTime: new Date().toISOString() });
    const resumedMs = await within('the update after the reconnect', 1000, () => page.getByText('done after the reconnect').isVisible());
    console.log(`     list ${listMs} ms, detail ${detailMs} ms, after reconnect ${resumedMs} ms`);
    await close(page);
  } finally {
    kubectl(['-n', NS, 'delete', 'run', name, '--wait=false']);
  }
});

test('watch: the watch endpoint refuses a caller without access to the namespace', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  const r = await page.evaluate(async () => {
    const res = await fetch('/api/namespaces/team-b/watch?runs=', { headers: { Accept: 'application/x-ndjson' } });
    return { status: res.status, body: await res.text() };
  });
  assert(r.status === 403, `team-b watch answered ${r.status}: ${r.body}`);
  const bad = await page.evaluate(async () => (await fetch('/api/namespaces/team-a/watch?pods=')).status);
  assert(bad === 400, `an unknown kind answered ${bad}`);
  await close(page);
});
