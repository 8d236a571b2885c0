// The Runtime, Workflow Run and Run pages on data shaped as the kruntimes
// engine writes it (hack/demo seed): no readyReplicas, the image in the Pod
// template, the default capacity of 2 Runs per Pod, used capacity as the
// sum of the assigned Runs' requests; WorkflowRuns without start or
// completion times, with Action steps, a snapshot and a failed call's
// message; Runs with the engine's conditions, a waiting message and retry
// Events.
import { attr, assert, close, env, eventually, login, newPage, test } from './support';

const NS = env.ns;

test('engine data: Runtimes count their ready Pods, show the template image and the engine capacity', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  await page.goto(`${env.url}/namespaces/${NS}/runtimes`);
  const bash = page.locator('table.table tbody tr', { has: page.locator('td:first-child > a', { hasText: /^bash$/ }) });
  await bash.waitFor();
  // The engine leaves status.readyReplicas unset: the Console counts the Pods.
  await eventually('bash 2/2 ready', async () => (await bash.locator('.ratio').innerText()).trim() === '2/2');
  assert((await bash.innerText()).includes('ghcr.io/kruntimes/runtime-bash:demo'), 'the list does not show the template image');

  // python declares no capacity: each Pod takes the engine default of 2 Runs.
  await page.goto(`${env.url}/namespaces/${NS}/runtimes/python`);
  const overview = page.locator('.kv').first();
  await overview.getByText('ghcr.io/kruntimes/runtime-python:demo').waitFor();
  await overview.getByText('engine default').waitFor();
  const chip = page.locator('tr#pod-python-pool-0 .chip.capacity[data-resource="runs"]');
  await chip.waitFor();
  const text = await chip.innerText();
  // etl-running and resize-function are active there, one run each.
  assert(/^runs: 2\/2 used · 0 free\s*\(default\)/.test(text), `python-pool-0: ${text}`);
  await page.getByRole('heading', { level: 1, name: 'python' }).waitFor();
  assert((await page.locator('.page-header').first().innerText()).includes('1/1 ready'), 'the header does not count the ready Pod');
  await close(page);
});

test('engine data: a Workflow Run takes its times from its Runs and shows Action steps, snapshot and message', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  await page.goto(`${env.url}/namespaces/${NS}/workflowruns`);
  const row = (name: string) => page.locator('table.table tbody tr', { has: page.locator('td:first-child > a', { hasText: new RegExp(`^${name}$`) }) });
  const release = row('release-1-4');
  await release.waitFor();
  // Started: from its first step Run (the engine writes no startTime).
  await eventually('a start for release-1-4', async () => /ago/.test(await release.locator('td').nth(3).innerText()));
  const failed = row('nightly-docs-x7k2p');
  await failed.getByText('Action not found in namespace').waitFor();

  await page.goto(`${env.url}/namespaces/${NS}/workflowruns/release-1-4`);
  const ov = page.locator('.kv', { has: page.locator('dt', { hasText: /^Snapshot$/ }) });
  await ov.getByText('release-1-4-snapshot').waitFor();
  const started = await ov.locator('.kv-row', { hasText: /^Started/ }).locator('dd').innerText();
  assert(/\d{4}-\d\d-\d\d/.test(started), `Started is "${started}"`);
  const completed = await ov.locator('.kv-row', { hasText: /^Completed/ }).locator('dd').innerText();
  assert(completed.trim() === '—', `a Running WorkflowRun shows a completion: ${completed}`);

  // The job whose step calls an Action: its steps' Runs, linked.
  await page.goto(`${env.url}/namespaces/${NS}/workflowruns/release-1-4/jobs/unit?step=1`);
  const steps = page.locator('.action-steps');
  await steps.waitFor();
  for (const [step, run] of [
    ['fetch', 'setup-fetch'],
    ['install', 'setup-install'],
  ]) {
    const link = steps.locator(`[data-action-step="${step}"]`).getByRole('link', { name: run, exact: true });
    await link.waitFor();
    assert((await attr(link, 'href')).endsWith(`/namespaces/${NS}/runs/${run}`), `${step} links elsewhere`);
  }
  await page.locator('.kv-row', { hasText: /^Started after/ }).getByRole('link', { name: 'checkout' }).waitFor();

  await page.goto(`${env.url}/namespaces/${NS}/workflowruns/nightly-docs-x7k2p`);
  await page.locator('#wr-message.danger').getByText('Action not found in namespace').waitFor();
  await close(page);
});

test('engine data: Runs name their Workflow Run step, read the engine conditions, attempts and windowed events', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  await page.goto(`${env.url}/namespaces/${NS}/runs?labelSelector=app%3Ddemo`);
  const note = page.locator('table.table tbody tr', { has: page.locator('td:first-child > a', { hasText: /^setup-install$/ }) }).locator('[data-workflowrun]');
  await note.waitFor();
  const said = await note.innerText();
  assert(said.includes('release-1-4') && said.includes('unit') && said.includes('install'), `the row says "${said}"`);

  await page.goto(`${env.url}/namespaces/${NS}/runs/lint-failed`);
  const state = page.locator('#run-state');
  await state.waitFor();
  assert((await state.getAttribute('data-stage')) === 'failed', 'lint-failed is not failed');
  assert((await state.innerText()).includes('RuntimeExecute'), 'no failure reason');
  const attempts = page.locator('.attempts .attempt');
  await eventually('five attempt events', async () => (await attempts.count()) === 5);
  assert((await attempts.first().innerText()).includes('Attempt 1 of 3'), await attempts.first().innerText());
  assert((await attempts.last().innerText()).includes('Gave up after 3 attempts'), await attempts.last().innerText());
  const events = page.locator('#events ul.events');
  await events.getByText('Readiness probe failed').waitFor();
  const all = await events.innerText();
  assert(!all.includes('already present on machine') && !all.includes('Stopping container'), 'Pod events from outside the Run are shown');
  await page.locator('#overview').getByRole('link', { name: 'release-1-4', exact: true }).waitFor();

  await page.goto(`${env.url}/namespaces/${NS}/runs/build-pending`);
  await page.locator('#waiting').getByText('waiting for available runtime pods for runtime bash').waitFor();
  await close(page);
});
