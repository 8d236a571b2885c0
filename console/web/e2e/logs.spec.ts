// The log viewer against the real Console and the demo data: follow by
// default, deep links that name a record's cursor (and survive new lines),
// "load older", search over everything loaded with "only matching lines",
// download, exact resume after a dropped connection, the final Status line.
// The demo writer (hack/demo writer) appends a line a second to every
// Running demo Run.
import { readFileSync } from 'node:fs';
import { api, appendRunLog, assert, capture, close, env, eventually, getJson, login, newPage, test, type Locator, type Page } from './support';
import { applyRun, deleteRun, patchRunStatus, podUid } from './kube';

const NS = env.ns;
const CURSOR = /^\d+\.\d{9}-\d+$/;

async function openLogs(page: Page, run: string, hash = ''): Promise<Locator> {
  await page.goto(`${env.url}/namespaces/${NS}/runs/${run}${hash}`);
  await page.getByRole('heading', { name: run, level: 1 }).waitFor();
  const logs = page.locator('#logs');
  await logs.locator('.log-line').first().waitFor();
  return logs;
}

const state = (logs: Locator) => logs.locator('.log-state').first().innerText();
const stamp = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z');

/** A Succeeded Run of its own on bash-pool-0 with `lines` records in its Pod's log, written after it was created. */
async function finishedRun(name: string, lines: string[]): Promise<void> {
  const pod = 'bash-pool-0';
  applyRun(NS, name, { status: { phase: 'Running', assignedPod: pod, assignedPodUID: podUid(NS, pod), attempt: 1, startTime: stamp(Date.now() - 1000) } });
  const ctx = await api(env.viewer);
  const run = await getJson(ctx, `/api/namespaces/${NS}/runs/${name}`);
  await ctx.dispose();
  for (const m of lines) appendRunLog(run, m);
  await new Promise((r) => setTimeout(r, 1100));
  patchRunStatus(NS, name, { phase: 'Succeeded', completionTime: stamp(Date.now() + 1000) });
}

test('logs: follow is on by default for an active Run, off for a finished one', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  let logs = await openLogs(page, 'build-running');
  assert(await logs.getByLabel('Follow').isChecked(), 'Follow is not on for a Running Run');
  await eventually('Following', async () => (await state(logs)).includes('Following'));
  const name = 'e2e-log-done';
  await finishedRun(name, ['done 1', 'done 2']);
  try {
    logs = await openLogs(page, name);
    assert(!(await logs.getByLabel('Follow').isChecked()), 'Follow is on for a Succeeded Run');
    await eventually('the tail', async () => (await state(logs)).startsWith('Last '));
  } finally {
    deleteRun(NS, name);
  }
  await close(page);
});

test('logs: turning Follow off before the follow delivered anything reads the tail', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  // The follow answers nothing (a slow Pod log, a loaded machine); the plain tail answers at once.
  await page.route(/\/logs\?(.*&)?follow=true/, () => {});
  await page.goto(`${env.url}/namespaces/${NS}/runs/build-scheduled`);
  await page.getByRole('heading', { name: 'build-scheduled', level: 1 }).waitFor();
  const logs = page.locator('#logs');
  await eventually('the follow started', async () => (await state(logs)).includes('Connecting') || (await state(logs)).includes('Following'));
  await logs.getByLabel('Follow').uncheck();
  await eventually('the tail with the seeded records', async () => /^Last [1-9]/.test(await state(logs)), 15_000);
  const text = await logs.locator('.log-line').allInnerTexts();
  assert(text.some((t) => t.includes('step 1 of build-scheduled: ok')), `the tail lacks the first record:\n${text.join('\n')}`);
  await close(page);
});

test('logs: a line deep link names its cursor and shows the same record after new lines arrive', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  const logs = await openLogs(page, 'build-running');
  await eventually('a few lines', async () => (await logs.locator('.log-line').count()) >= 4);
  // While it follows, the list moves up a row with every new line, and the
  // rows rendered with it: a line near the bottom is picked (its cursor and
  // text read at once) and clicked by its cursor, wherever it has moved.
  const rows = logs.locator('.log-line');
  const picked = await rows.nth((await rows.count()) - 2).evaluate((el) => ({
    cursor: el.querySelector('.ln')?.getAttribute('data-cursor') ?? '',
    message: (el.querySelector('.msg') as HTMLElement).innerText,
  }));
  const message = picked.message;
  assert(CURSOR.test(picked.cursor), `the picked line's cursor ${JSON.stringify(picked.cursor)} is not a cursor`);
  await logs.locator(`.log-line .ln[data-cursor="${picked.cursor}"]`).click();
  await eventually('a #L<cursor> fragment', () => /#L\d+\.\d{9}-\d+$/.test(page.url()));
  const link = page.url();
  const cursor = decodeURIComponent(new URL(link).hash.slice(2));
  assert(cursor === picked.cursor, `the fragment ${new URL(link).hash} names another line than the one clicked (${picked.cursor})`);
  // Six more lines are written (one a second) before the link is opened again.
  const before = await logs.locator('.log-state').first().innerText();
  await page.waitForTimeout(6500);
  const tab = await newPage(browser);
  await login(tab, env.viewer, 'viewer');
  await tab.goto(link);
  const selected = tab.locator('#logs .log-line.selected');
  await selected.waitFor();
  const shown = await selected.locator('.msg').innerText();
  assert(shown === message, `the link ${new URL(link).hash} now shows ${JSON.stringify(shown)}, not ${JSON.stringify(message)} (${before})`);
  assert((await selected.locator('.ln').getAttribute('data-cursor')) === cursor, 'the selected line is another record');
  // It is scrolled into view.
  const visible = await selected.evaluate((el) => {
    const box = el.getBoundingClientRect();
    const area = el.closest('.log-scroll')!.getBoundingClientRect();
    return box.top >= area.top - 1 && box.bottom <= area.bottom + 1;
  });
  assert(visible, 'the linked line is not scrolled into view');
  await close(tab);
  await close(page);
});

test('logs: Load older pages back before the loaded tail until the Run start', async ({ browser }) => {
  const name = 'e2e-log-older';
  await finishedRun(name, ['older 1', 'older 2', 'older 3', 'older 4']);
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  const logs = await openLogs(page, name);
  const all = await logs.locator('.log-line .msg').allInnerTexts();
  assert(JSON.stringify(all) === JSON.stringify(['older 1', 'older 2', 'older 3', 'older 4']), `the Run's log is ${all.join(', ')}`);
  await logs.getByLabel('Tail').fill('1');
  await logs.getByRole('button', { name: 'Load', exact: true }).click();
  await eventually('a one-line tail', async () => (await logs.locator('.log-line').count()) === 1);
  const older = logs.getByRole('button', { name: 'Load older' });
  for (let n = 2; n <= all.length; n++) {
    await older.click();
    await eventually(`${n} lines`, async () => (await logs.locator('.log-line').count()) === n);
  }
  const shown = await logs.locator('.log-line .msg').allInnerTexts();
  assert(JSON.stringify(shown) === JSON.stringify(all), `paging back gave\n${shown.join('\n')}\nnot\n${all.join('\n')}`);
  await eventually('no older lines left', async () => (await older.count()) === 0);
  deleteRun(NS, name);
  await close(page);
});

test('logs: the "Load older" bar covers no line of a short log, nor of a long one at its top', async ({ browser }) => {
  const name = 'e2e-log-older-bar';
  await finishedRun(name, Array.from({ length: 30 }, (_, i) => `line ${i + 1}`));
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openLogs(page, name);
    for (const tail of [3, 5, 6, 8, 20]) {
      await logs.getByLabel('Tail').fill(String(tail));
      await logs.getByRole('button', { name: 'Load', exact: true }).click();
      await eventually(`a ${tail}-line tail`, async () => (await logs.locator('.log-line').count()) === tail);
      await logs.locator('.log-older').waitFor();
      // A long log scrolls under the (sticky) bar: at its top, the bar is above the first line.
      if (tail > 10) await logs.locator('.log-scroll').evaluate((e) => (e.scrollTop = 0));
      await page.waitForTimeout(100);
      const bar = await logs.locator('.log-older').boundingBox();
      assert(bar, 'the "Load older" bar has no box');
      const under = await logs
        .locator('.log-line .ln')
        .evaluateAll((els, b) => els.map((e) => e.getBoundingClientRect()).filter((r) => r.top < b.y + b.height && r.bottom > b.y).length, bar);
      assert(under === 0, `with ${tail} lines, "Load older" covers ${under} line(s)`);
    }
  } finally {
    deleteRun(NS, name);
    await close(page);
  }
});

test('logs: search covers everything loaded; only matching lines; download has every loaded line', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  const logs = await openLogs(page, 'build-running');
  await eventually('some ticks', async () => (await logs.locator('.log-line').count()) >= 3);
  await logs.getByLabel('Follow').uncheck();
  await eventually('the tail', async () => (await state(logs)).startsWith('Last '));
  await logs.getByLabel('Search the log').fill('tick');
  await eventually('matches', async () => /\d+ \/ \d+/.test(await logs.locator('.match-count').innerText()));
  await logs.getByLabel('Only matching lines').check();
  const msgs = await logs.locator('.log-line .msg').allInnerTexts();
  assert(msgs.length > 0 && msgs.every((m) => m.toLowerCase().includes('tick')), `lines not matching "tick" are shown:\n${msgs.join('\n')}`);
  await logs.getByLabel('Search the log').fill('no-such-text-anywhere');
  await logs.getByText('No loaded line matches.').waitFor();
  await logs.getByLabel('Only matching lines').uncheck();
  const loaded = await logs.locator('.log-status').innerText();
  const count = Number(capture(/([\d,]+) lines?/, loaded).replace(/,/g, ''));
  await logs.locator('.log-download summary').click();
  const [download] = await Promise.all([page.waitForEvent('download'), logs.getByRole('button', { name: /^Loaded lines .*, text$/ }).click()]);
  const text = readFileSync(await download.path(), 'utf8');
  assert(text.split('\n').filter(Boolean).length === count, `the download has ${text.split('\n').length - 1} lines, ${count} are loaded`);
  await close(page);
});

test('logs: a dropped follow resumes exactly after the last record (sinceCursor): no duplicate, no gap', async ({ browser }) => {
  const page = await newPage(browser);
  // The test's own hand on the connection: every log follow the page opens can
  // be cut (as a network drop would), leaving the page's code to notice and resume.
  await page.context().addInitScript(() => {
    const open = new Set<AbortController>();
    const real = window.fetch.bind(window);
    window.fetch = (input: RequestInfo | URL, init: RequestInit = {}) => {
      const url = typeof input === 'string' ? input : input instanceof URL ? input.href : input.url;
      if (!url.includes('follow=true')) return real(input, init);
      const cut = new AbortController();
      open.add(cut);
      const signal = init.signal ? AbortSignal.any([init.signal, cut.signal]) : cut.signal;
      return real(input, { ...init, signal });
    };
    (window as unknown as { __dropLogFollows: () => void }).__dropLogFollows = () => {
      for (const c of open) c.abort();
      open.clear();
    };
  });
  await login(page, env.viewer, 'viewer');
  const follows: string[] = [];
  page.on('request', (r) => r.url().includes('/logs?') && r.url().includes('follow=true') && follows.push(r.url()));
  const logs = await openLogs(page, 'build-running');
  await eventually('Following', async () => (await state(logs)).includes('Following'));
  await eventually('two lines more', async () => (await logs.locator('.log-line').count()) >= 3);
  await page.evaluate(() => (window as unknown as { __dropLogFollows: () => void }).__dropLogFollows());
  await eventually('a lost connection', async () => /reconnect|lost/i.test(await state(logs)), 15_000);
  const lastBefore = await logs.locator('.log-line .ln').last().getAttribute('data-cursor');
  await eventually('following again', async () => (await state(logs)).includes('Following'), 20_000);
  await eventually('new lines after the reconnect', async () => (await logs.locator('.log-line .ln').last().getAttribute('data-cursor')) !== lastBefore, 10_000);
  const resumed = follows.slice(1).map((u) => new URL(u).searchParams);
  assert(resumed.length > 0 && resumed.every((p) => CURSOR.test(p.get('sinceCursor') ?? '') && !p.has('tail')), `reconnects did not resume by cursor:\n${follows.join('\n')}`);
  // Every record once, in order: the lines written while offline are there too.
  await logs.getByLabel('Follow').uncheck();
  const texts = await logs.locator('.log-line .msg').allInnerTexts();
  const ticks = texts.map((t) => /tick (\d+)/.exec(t)?.[1]).filter(Boolean).map(Number);
  for (let i = 1; i < ticks.length; i++) assert(ticks[i] === ticks[i - 1]! + 1, `tick ${ticks[i - 1]} is followed by ${ticks[i]}: ${ticks.join(',')}`);
  await close(page);
});

test('logs: the final Status line of a follow is shown (the Run finished; the Pod went away)', async ({ browser }) => {
  const name = 'e2e-log-finishes';
  const pod = 'bash-pool-0';
  const start = new Date(Date.now() - 60_000).toISOString().replace(/\.\d+Z$/, 'Z');
  applyRun(NS, name, { status: { phase: 'Running', assignedPod: pod, assignedPodUID: podUid(NS, pod), attempt: 1, startTime: start } });
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    await page.goto(`${env.url}/namespaces/${NS}/runs/${name}`);
    const logs = page.locator('#logs');
    await eventually('Following', async () => (await state(logs)).includes('Following'));
    patchRunStatus(NS, name, { phase: 'Succeeded', completionTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z') });
    await eventually('"Run finished"', async () => (await state(logs)) === 'Run finished', 20_000);
    assert((await logs.locator('.log-status').innerText()).includes('Succeeded'), 'the Status message (the phase) is not shown');
  } finally {
    deleteRun(NS, name);
    await close(page);
  }
});
