// "Why is my Run waiting?": capacity used and free per Runtime Pod (from the
// capacity annotations and the requests of the Runs assigned to it), the
// queue of Pending Runs per Runtime, and a Pending Run's page that explains
// (with the engine's status.message) and links there.
import { execFileSync } from 'node:child_process';
import { assert, close, env, eventually, login, newPage, test } from './support';

const NS = env.ns;

function kubectl(args: string[], input?: string): string {
  return execFileSync('kubectl', args, { input, stdio: ['pipe', 'pipe', 'inherit'] }).toString();
}

test('capacity: used and free per Runtime Pod, the queue of Pending Runs, and a Pending Run that says why it waits', async ({ browser }) => {
  // One more Pending Run of bash, created after the demo's build-pending: it queues behind it.
  const queued = `e2e-queued-${Date.now()}`;
  kubectl(['apply', '-f', '-'], `apiVersion: kruntimes.io/v1alpha1\nkind: Run\nmetadata: {name: ${queued}, namespace: ${NS}, labels: {app: e2e}}\nspec: {runtime: bash, mode: {task: {}}}\n`);
  try {
    const page = await newPage(browser);
    await login(page, env.viewer, 'viewer');
    await page.goto(`${env.url}/namespaces/${NS}/runtimes/bash`);
    // Each Pod: runs used = its active assigned Runs; free = capacity - used.
    for (const pod of ['bash-pool-0', 'bash-pool-1']) {
      const row = page.locator(`tr#pod-${pod}`);
      const chip = row.locator('.chip.capacity[data-resource="runs"]');
      await chip.waitFor();
      const m = /runs: (\d+)\/(\d+) used · (\d+) free/.exec(await chip.innerText());
      assert(m, `no runs usage on ${pod}: ${await chip.innerText()}`);
      const [used, cap, free] = [Number(m[1]), Number(m[2]), Number(m[3])];
      const assigned = await row.locator('.run-list li').count();
      assert(cap === 8, `${pod} capacity ${cap}, annotated 8`);
      assert(used === assigned, `${pod} uses ${used} but ${assigned} Runs are assigned`);
      assert(free === Math.max(0, cap - used), `${pod} free ${free} for ${used}/${cap}`);
      // cpu: the sum of the assigned Runs' cpu requests (one Run on each Pod asks for 1).
      const cpu = await row.locator('.chip.capacity[data-resource="cpu"]').innerText();
      assert(/^cpu: 1\/2 used · 1 free/.test(cpu), `${pod} cpu: ${cpu}`);
    }
    // The queue: build-pending before the Run created just now.
    const queue = page.locator('#queue');
    await queue.locator(`tr#queued-build-pending`).waitFor();
    const order = await queue.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => tr.id.replace(/^queued-/, '')));
    assert(order.indexOf('build-pending') >= 0 && order.indexOf(queued) > order.indexOf('build-pending'), `queue order ${order.join(', ')}`);
    assert(
      (await queue.locator('tr#queued-build-pending').innerText()).includes('waiting for available runtime pods for runtime bash'),
      'the queue does not say why the Run waits',
    );

    // The Pending Run's page explains and links to the Runtime's queue.
    await page.goto(`${env.url}/namespaces/${NS}/runs/${queued}`);
    const why = page.locator('#waiting');
    const place = why.locator('.kv-row', { hasText: 'Place in the queue' }).locator('dd');
    await eventually('the place in the queue', async () => (await place.innerText()) === `${order.indexOf(queued) + 1} of ${order.length}`);
    await why.getByText(/Runtime bash has \d+ free Run place|Every ready Pod of Runtime bash is full/).waitFor();
    await page.goto(`${env.url}/namespaces/${NS}/runs/build-pending`);
    await page.locator('#waiting').getByText('waiting for available runtime pods for runtime bash').waitFor();
    await page.locator('#waiting').getByRole('link', { name: 'Capacity and queue of Runtime bash' }).click();
    await eventually('the Runtime queue', () => page.url().endsWith(`/namespaces/${NS}/runtimes/bash#queue`));
    await page.locator('#queue tr#queued-build-pending').waitFor();
    // A Run that is not Pending has no such panel.
    await page.goto(`${env.url}/namespaces/${NS}/runs/build-running`);
    await page.locator('#overview').waitFor();
    assert((await page.locator('#waiting').count()) === 0, 'a Running Run says it waits');
    await close(page);
  } finally {
    kubectl(['-n', NS, 'delete', 'run', queued, '--wait=false']);
  }
});
