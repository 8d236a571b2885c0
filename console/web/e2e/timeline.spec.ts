// Durations and the timeline: start, end and duration of Runs, jobs and
// steps (a job's and a step's come from their Runs when the WorkflowRun does
// not state them); the timeline view of a WorkflowRun's jobs; the failed step
// opens by itself, and closing it sticks.
import { assert, close, env, eventually, login, newPage, test } from './support';

const NS = env.ns;
// Times carry their zone (UTC or UTC±HH:MM).
const WHEN = /\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC(?:[+-]\d\d:\d\d)? – (\d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC(?:[+-]\d\d:\d\d)?|running) · \d+(s|m \d\ds|h \d\dm)/;

test('timeline: durations of Runs, jobs and steps, a timeline of the jobs, and the failed step open by itself', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');

  // A Run: start, end, duration.
  await page.goto(`${env.url}/namespaces/${NS}/runs/lint-failed`);
  const overview = page.locator('#overview');
  for (const label of ['Started', 'Completed', 'Duration']) {
    await overview.locator('dt', { hasText: new RegExp(`^${label}$`) }).waitFor();
  }

  // The timeline of release-1-4: one row per job in stage order, bars for the started ones.
  await page.goto(`${env.url}/namespaces/${NS}/workflowruns/release-1-4`);
  await page.getByRole('button', { name: 'Timeline' }).click();
  await eventually('the view in the URL', () => page.url().includes('view=timeline'));
  const rows = page.locator('.tl-row');
  await eventually('7 timeline rows', async () => (await rows.count()) === 7);
  const jobs = await rows.evaluateAll((rs) => rs.map((r) => r.dataset.job));
  assert(jobs[0] === 'checkout' && jobs[6] === 'publish', `timeline order ${jobs.join(', ')}`);
  for (const job of ['checkout', 'lint', 'unit', 'typecheck']) {
    const row = page.locator(`.tl-row[data-job="${job}"]`);
    assert((await row.locator('.tl-bar').count()) === 1, `${job} has no bar`);
    const when = await row.locator('.tl-when').innerText();
    assert(WHEN.test(when), `${job}: "${when}" does not give start, end and duration`);
  }
  // unit's Run still runs; build has not started.
  assert((await page.locator('.tl-row[data-job="unit"] .tl-when').innerText()).includes('running'), 'unit is not shown running');
  assert((await page.locator('.tl-row[data-job="build"] .tl-bar').count()) === 0, 'build has a bar');
  assert((await page.locator('.tl-row[data-job="build"] .tl-when').innerText()).includes('not started'), 'build is not "not started"');

  // The job page: the failed step is open without a click, with its times and log.
  await page.locator('.tl-row[data-job="lint"] a').click();
  await page.getByRole('heading', { name: 'lint', level: 1 }).waitFor();
  const step = page.locator('.step-toggle', { hasText: 'lint' });
  await eventually('the failed step to be open', async () => (await step.getAttribute('aria-expanded')) === 'true');
  await page.getByRole('log', { name: 'Log of Run lint-failed' }).waitFor();
  const times = await page.locator('.step-times').innerText();
  assert(/Started .*, ended .* · \d+/.test(times), `step times: ${times}`);
  for (const label of ['Started', 'Completed', 'Duration']) {
    await page.locator('dt', { hasText: new RegExp(`^${label}$`) }).first().waitFor();
  }
  // Closing it is remembered in the URL and survives a reload.
  await step.click();
  await eventually('the step closed', async () => (await step.getAttribute('aria-expanded')) === 'false');
  assert(/[?&]step=(&|$)/.test(page.url()), `the URL does not say no step is open: ${page.url()}`);
  await page.reload();
  await page.locator('.step-toggle', { hasText: 'lint' }).waitFor();
  assert((await page.locator('.step-toggle', { hasText: 'lint' }).getAttribute('aria-expanded')) === 'false', 'the step opened again after a reload');
  // A job whose steps all succeeded opens none.
  await page.goto(`${env.url}/namespaces/${NS}/workflowruns/release-1-4/jobs/checkout`);
  await page.locator('.step-toggle').first().waitFor();
  assert((await page.locator('.step-toggle[aria-expanded="true"]').count()) === 0, 'a step of a succeeded job opened by itself');
  await close(page);
});
