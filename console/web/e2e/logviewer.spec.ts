// The log viewer a daily user trusts, against the real Console and the demo
// data (hack/demo seed): ANSI colours rendered and every other escape
// stripped, ::group:: folds, a failed Run opening at its first error, line
// numbers that do not change, copyable line links, the state at the top of
// the log, and the whole-log download.
import { appendFileSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { STYLES, THEMES, api, appendRunLog, assert, axeViolations, close, describeViolations, env, eventually, getJson, login, newPage, test, type Locator, type Page } from './support';
import { applyRun, deleteRun, kubectl, patchRunStatus, podUid } from './kube';

const NS = env.ns;
const FAILED = 'compile-failed';

async function openRun(page: Page, run: string, hash = ''): Promise<Locator> {
  await page.goto(`${env.url}/namespaces/${NS}/runs/${run}${hash}`);
  await page.getByRole('heading', { name: run, level: 1 }).waitFor();
  const logs = page.locator('#logs');
  await logs.locator('.log-line').first().waitFor();
  return logs;
}

/** Whether `el` is inside the visible part of the log's scroll area. */
const inView = (loc: Locator) =>
  loc.evaluate((el) => {
    const box = el.getBoundingClientRect();
    const area = el.closest('.log-scroll')!.getBoundingClientRect();
    return box.top >= area.top - 1 && box.bottom <= area.bottom + 1;
  });

test('log viewer: ANSI colours are rendered, other escapes stripped, never shown raw', async ({ browser }) => {
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openRun(page, FAILED);
    const texts = await logs.locator('.log-line .msg').allInnerTexts();
    const raw = texts.filter((t) => t.includes(String.fromCharCode(27)) || /␛|\[\d+(;\d+)*m|\[2K|\[1G/.test(t));
    assert(raw.length === 0, `escape sequences are shown raw:\n${raw.join('\n')}`);
    // The red, bold ERROR of the stderr line: a class mapped to the theme's red, bold.
    const error = logs.locator('.log-line .msg span', { hasText: /^ERROR$/ });
    await error.waitFor();
    const look = await error.evaluate((el) => {
      const cs = getComputedStyle(el);
      const root = getComputedStyle(el.closest('.log-scroll')!);
      return { cls: el.className, color: cs.color, weight: cs.fontWeight, red: root.getPropertyValue('--ansi-1').trim(), fg: getComputedStyle(el.closest('.msg')!).color };
    });
    assert(/ansi-fg-1/.test(look.cls) && /ansi-bold/.test(look.cls), `ERROR has classes "${look.cls}"`);
    assert(Number(look.weight) >= 700, `ERROR is not bold (${look.weight})`);
    // The cursor movement before "linking" is gone; the underline and italic are drawn.
    const linking = logs.locator('.log-line .msg', { hasText: 'linking and checking' });
    assert((await linking.innerText()) === 'linking and checking', `the line reads ${JSON.stringify(await linking.innerText())}`);
    assert((await linking.locator('.ansi-underline', { hasText: 'linking' }).count()) === 1, '"linking" is not underlined');
    assert((await linking.locator('.ansi-italic', { hasText: 'checking' }).count()) === 1, '"checking" is not italic');
    // 256 colours and truecolour: exact colours, readable on the log's background (4.5:1).
    for (const word of ['warning', 'note']) {
      const ratio = await logs
        .locator('.log-line .msg span', { hasText: new RegExp(`^${word}$`) })
        .evaluate((el) => {
          const rgb = (s: string) => s.match(/[\d.]+/g)!.slice(0, 3).map(Number);
          const lum = ([r = 0, g = 0, b = 0]: number[]) => {
            const c = (v: number) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
            return 0.2126 * c(r) + 0.7152 * c(g) + 0.0722 * c(b);
          };
          const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(rgb(getComputedStyle(el.closest('.log-scroll')!).backgroundColor))];
          return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        });
      assert(ratio >= 4.5, `"${word}" has a contrast of ${ratio.toFixed(2)} on the log background`);
    }
  } finally {
    await close(page);
  }
});

test('log viewer: ::group:: folds collapsed by default, with its line count, and a toggle', async ({ browser }) => {
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openRun(page, FAILED);
    const texts = await logs.locator('.log-line .msg').allInnerTexts();
    assert(!texts.some((t) => t.includes('::group::') || t.includes('::endgroup::')), `group markers are shown raw:\n${texts.join('\n')}`);
    const setup = logs.getByRole('button', { name: /Set up job/ });
    assert((await setup.innerText()).includes('(2 lines)'), `the group header reads ${JSON.stringify(await setup.innerText())}`);
    assert((await setup.getAttribute('aria-expanded')) === 'false', 'the group is not collapsed by default');
    assert((await logs.getByText('Runner: bash-pool-1').count()) === 0, 'a collapsed group shows its lines');
    await setup.click();
    await logs.getByText('Runner: bash-pool-1').waitFor();
    assert((await setup.getAttribute('aria-expanded')) === 'true', 'the toggle does not say the group is open');
    // The other group stays folded; the keyboard folds the first one again.
    assert((await logs.getByText('installed 12 packages').count()) === 0, 'the other group opened too');
    await setup.focus();
    await page.keyboard.press('Enter');
    await eventually('the group folded again', async () => (await logs.getByText('Runner: bash-pool-1').count()) === 0);
  } finally {
    await close(page);
  }
});

test('log viewer: a failed Run opens at its first error; "Jump to first error" goes there', async ({ browser }) => {
  const page = await newPage(browser, { viewport: { width: 1360, height: 700 } });
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openRun(page, FAILED);
    const target = logs.locator('.log-line.jump-target');
    await target.waitFor();
    const text = await target.locator('.msg').innerText();
    assert(text.startsWith('error[E0308]'), `the log opened at ${JSON.stringify(text)}, not the first stderr record`);
    assert(await inView(target), 'the first error is not scrolled into view');
    await logs.locator('.log-scroll').evaluate((e) => (e.scrollTop = 0));
    await logs.getByRole('button', { name: 'Jump to first error' }).click();
    await eventually('the first error in view', async () => inView(logs.locator('.log-line.jump-target')));
    // A Run that did not fail offers no such jump.
    const ok = await openRun(page, 'test-succeeded');
    assert((await ok.getByRole('button', { name: 'Jump to first error' }).count()) === 0, 'a Succeeded Run offers "Jump to first error"');
  } finally {
    await close(page);
  }
});

test('log viewer: screenshots of colours and groups in every Style x Theme and at 390 px', async ({ browser }) => {
  const problems = [];
  for (const style of STYLES) {
    for (const theme of THEMES) {
      for (const width of [1360, 390]) {
        const page = await newPage(browser, { style, theme, viewport: { width, height: 900 } });
        try {
          await login(page, env.viewer, 'viewer');
          const logs = await openRun(page, FAILED);
          await logs.getByRole('button', { name: /Install dependencies/ }).click();
          await logs.getByText('installed 12 packages').waitFor();
          await logs.scrollIntoViewIfNeeded();
          await page.screenshot({ path: join(env.shots, `log-colours--${style}-${theme}${width === 390 ? '--390' : ''}.png`), fullPage: false });
          const vs = (await axeViolations(page)).filter((v) => v.id === 'color-contrast');
          if (vs.length) problems.push(`${style}/${theme}/${width}: ${describeViolations(vs)}`);
        } finally {
          await close(page);
        }
      }
    }
  }
  assert(problems.length === 0, problems.join('\n'));
});

// --- whole-log download ------------------------------------------------------

const BULK_POD = 'bulk-pool-0';
// E2E_BULK_RECORDS: the Run's size. hack/test keeps to 20,000; the 200,000-record
// measurement in console/web/README.md is E2E_BULK_RECORDS=200000 (about 15 minutes:
// every record is stamped within a fraction of a second, as runtimed writes a Run's
// output at its end, so each page costs the server a read of that second's burst).
const BULK = Number(process.env.E2E_BULK_RECORDS ?? 20_000);

/** A Pod of its own with a Succeeded Run of `count` records in its log (written here, as runtimed would): the expected text. */
function bulkRun(name: string, count: number): string {
  kubectl(['apply', '-f', '-'], JSON.stringify({
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: BULK_POD, namespace: NS, labels: { runtime: 'bash', app: 'kruntimes-bash', 'app.kubernetes.io/part-of': 'kruntimes' } },
    spec: { nodeName: process.env.TESTENV_NODE ?? 'testenv-node', containers: [{ name: 'runtime', image: 'ghcr.io/kruntimes/runtime-bash:demo' }, { name: 'runtimed', image: 'ghcr.io/kruntimes/runtimed:demo' }] },
  }));
  kubectl(['-n', NS, 'patch', 'pod', BULK_POD, '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify({
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }], containerStatuses: [{ name: 'runtimed', ready: true, restartCount: 0, image: 'ghcr.io/kruntimes/runtimed:demo', imageID: '', started: true, state: { running: { startedAt: new Date().toISOString().replace(/\.\d+Z$/, 'Z') } } }] },
  })]);
  const start = Date.now() - 2000;
  applyRun(NS, name, { status: { phase: 'Running', assignedPod: BULK_POD, assignedPodUID: podUid(NS, BULK_POD), attempt: 1, startTime: new Date(start).toISOString().replace(/\.\d+Z$/, 'Z') } });
  const run = JSON.parse(kubectl(['-n', NS, 'get', 'run', name, '-o', 'json']));
  const dir = join(env.logs, `${NS}_${BULK_POD}`);
  mkdirSync(dir, { recursive: true });
  // Stamped one microsecond apart from now on, in time order as the kubelet writes them.
  const base = BigInt(Date.now()) * 1_000_000n;
  // The Pod is this test's own: its log starts empty each time.
  writeFileSync(join(dir, 'runtimed.log'), '');
  let file = '';
  let expected = '';
  for (let i = 1; i <= count; i++) {
    const ns = base + BigInt(i) * 1000n;
    const ts = new Date(Number(ns / 1_000_000n)).toISOString().replace(/\.\d{3}Z$/, `.${String(ns % 1_000_000_000n).padStart(9, '0')}Z`);
    const stream = i % 10 === 0 ? 'stderr' : 'stdout';
    const message = `bulk record ${i} of ${count}: ${'x'.repeat(i % 50)}`;
    file += `${ts} ${stream} F ${JSON.stringify({ run_uid: run.metadata.uid, run_name: name, namespace: NS, runtime: 'bash', pod: BULK_POD, stream, message })}\n`;
    expected += stream === 'stderr' ? `[stderr] ${message}\n` : `${message}\n`;
    if (file.length > 8 << 20) {
      appendFileSync(join(dir, 'runtimed.log'), file);
      file = '';
    }
  }
  appendFileSync(join(dir, 'runtimed.log'), file);
  patchRunStatus(NS, name, { phase: 'Succeeded', completionTime: new Date(Date.now() + 2000).toISOString().replace(/\.\d+Z$/, 'Z') });
  return expected;
}

test(`log viewer: "Whole log" downloads every record of a ${BULK.toLocaleString('en-US')}-record Run, page by page, with progress; the heap stays small`, async ({ browser }) => {
  const name = 'e2e-log-bulk';
  const expected = bulkRun(name, BULK);
  const page = await newPage(browser);
  // The Blob path (browsers without the File System Access API).
  await page.addInitScript(() => delete (window as { showSaveFilePicker?: unknown }).showSaveFilePicker);
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openRun(page, name);
    const cdp = await page.context().newCDPSession(page);
    await cdp.send('HeapProfiler.collectGarbage');
    const before = (await cdp.send('Runtime.getHeapUsage')).usedSize;
    let peak = before;
    let sampling = true;
    const sampler = (async () => {
      while (sampling) {
        try {
          peak = Math.max(peak, (await cdp.send('Runtime.getHeapUsage')).usedSize);
        } catch {
          return; // the page went away (the test failed): nothing more to sample
        }
        await new Promise((r) => setTimeout(r, 50));
      }
    })();
    const pages = [];
    page.on('request', (r) => r.url().includes(`/runs/${name}/logs?`) && pages.push(new URL(r.url()).searchParams));
    const started = Date.now();
    await logs.locator('.log-download summary').click();
    const downloading = page.waitForEvent('download', { timeout: 3_600_000 });
    await logs.getByRole('button', { name: 'Whole log, text' }).click();
    // Progress is shown while it runs.
    await eventually('progress', async () => /Downloading the whole log: [\d,]+ records so far/.test(await logs.locator('.log-saving').innerText()), 30_000);
    const download = await downloading.finally(() => (sampling = false));
    const seconds = (Date.now() - started) / 1000;
    sampling = false;
    await sampler;
    await cdp.send('HeapProfiler.collectGarbage');
    const after = (await cdp.send('Runtime.getHeapUsage')).usedSize;
    const text = readFileSync(await download.path(), 'utf8');
    const lines = text.split('\n').length - 1;
    assert(lines === BULK, `the file has ${lines} lines, the Run ${BULK} records`);
    assert(text === expected, 'the file differs from the records written');
    assert(download.suggestedFilename() === `${NS}_${name}.log`, `the file is named ${download.suggestedFilename()}`);
    await logs.getByText(`Downloaded the whole log: ${BULK.toLocaleString('en-US')} records`).waitFor();
    const mib = (n: number) => (n / 1048576).toFixed(1);
    const figures = `whole-log download of ${BULK} records (${mib(text.length)} MiB of text) in ${seconds.toFixed(1)} s over ${pages.length} requests: JS heap ${mib(before)} MiB before, peak ${mib(peak)} MiB (+${mib(peak - before)}), ${mib(after)} MiB after`;
    console.log(`     ${figures}`);
    // A download held as one string would put the whole text (twice over, as UTF-16) and every record in
    // the heap; page by page it holds one page (a few MiB whatever the log's size).
    const bound = Math.max(4 << 20, text.length / 2);
    assert(peak - before < bound, `the heap grew by ${mib(peak - before)} MiB (bound ${mib(bound)} MiB) for a ${mib(text.length)} MiB file: ${figures}`);
  } finally {
    deleteRun(NS, name);
    kubectl(['-n', NS, 'delete', 'pod', BULK_POD, '--ignore-not-found', '--grace-period=0', '--force', '--wait=false']);
    await close(page);
  }
});

test('log viewer: a whole-log download can be cancelled; NDJSON keeps the records as they came', async ({ browser }) => {
  const name = 'e2e-log-bulk-cancel';
  const count = 20_000;
  bulkRun(name, count);
  const page = await newPage(browser);
  await page.addInitScript(() => delete (window as { showSaveFilePicker?: unknown }).showSaveFilePicker);
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openRun(page, name);
    let downloaded = false;
    page.on('download', () => (downloaded = true));
    await logs.locator('.log-download summary').click();
    await logs.getByRole('button', { name: 'Whole log, NDJSON' }).click();
    await eventually('some records', async () => /[1-9][\d,]* records so far/.test(await logs.locator('.log-saving').innerText()), 600_000);
    await logs.locator('.log-saving').getByRole('button', { name: 'Cancel' }).click();
    await logs.getByText(/Download cancelled after [\d,]+ records/).waitFor();
    await page.waitForTimeout(500);
    assert(!downloaded, 'a cancelled download saved a file');
    // The loaded lines as NDJSON: one record a line, each with its cursor.
    await logs.locator('.log-download summary').click();
    const [dl] = await Promise.all([page.waitForEvent('download'), logs.getByRole('button', { name: 'Loaded lines, NDJSON' }).click()]);
    const recs = readFileSync(await dl.path(), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert(recs.length === 100 && recs.every((r) => /^\d+\.\d{9}-\d+$/.test(r.cursor) && r.message.startsWith('bulk record')), `the NDJSON holds ${recs.length} records`);
    assert(recs[99].message.startsWith(`bulk record ${count} of`), `the last record is ${recs[99].message}`);
  } finally {
    deleteRun(NS, name);
    // The Pod is the test's own: the bash Runtime counts its Pods.
    kubectl(['-n', NS, 'delete', 'pod', BULK_POD, '--ignore-not-found', '--grace-period=0', '--force', '--wait=false']);
    await close(page);
  }
});

// --- line numbers and links ---------------------------------------------------

/** A Succeeded Run of its own on bash-pool-0 whose records are "line 1" … "line <count>". */
async function numberedRun(name: string, count: number): Promise<void> {
  const pod = 'bash-pool-0';
  applyRun(NS, name, { status: { phase: 'Running', assignedPod: pod, assignedPodUID: podUid(NS, pod), attempt: 1, startTime: new Date(Date.now() - 1000).toISOString().replace(/\.\d+Z$/, 'Z') } });
  const run = JSON.parse(kubectl(['-n', NS, 'get', 'run', name, '-o', 'json']));
  for (let i = 1; i <= count; i++) appendRunLog(run, `line ${i}`);
  await new Promise((r) => setTimeout(r, 1100));
  patchRunStatus(NS, name, { phase: 'Succeeded', completionTime: new Date(Date.now() + 1000).toISOString().replace(/\.\d+Z$/, 'Z') });
}

/** [shown number or null, message] of every rendered line. */
const numbered = (logs: Locator) =>
  logs.locator('.log-line').evaluateAll((els) => els.map((e) => [e.querySelector('.ln')?.textContent || null, e.querySelector('.msg')?.textContent ?? ''] as [string | null, string]));

test('log viewer: a line number never changes: after Load older each shown number is still its record\'s', async ({ browser }) => {
  const name = 'e2e-log-numbers';
  await numberedRun(name, 30);
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openRun(page, name);
    await logs.getByLabel('Tail').fill('5');
    await logs.getByRole('button', { name: 'Load', exact: true }).click();
    await eventually('a 5-line tail', async () => (await logs.locator('.log-line').count()) === 5);
    const seen = new Map();
    const check = async (when: string) => {
      for (const [n, msg] of await numbered(logs)) {
        if (n === null) continue;
        // Each record's number is its place among the Run's records ("line 26" is record 26).
        assert(`line ${n}` === msg, `${when}: "${msg}" is numbered ${n}`);
        if (seen.has(msg)) assert(seen.get(msg) === n, `${when}: "${msg}" was numbered ${seen.get(msg)}, now ${n}`);
        seen.set(msg, n);
      }
    };
    await check('the tail');
    const older = logs.getByRole('button', { name: 'Load older' });
    for (let shown = 5; shown < 30; ) {
      await older.click();
      const was = shown;
      shown = await eventually('more lines', async () => {
        const n = await logs.locator('.log-line').count();
        return n > was ? n : 0;
      });
      await check('after Load older');
    }
    // At the start: every record has its number, and the top of the log says so.
    await logs.getByText('Start of the log').waitFor();
    assert((await older.count()) === 0, '"Load older" is still offered at the start of the log');
    const all = await numbered(logs);
    assert(all.every(([n]) => n !== null), 'a line at the known start of the log has no number');
    await check('at the start');
    // #L<number> opens that line in a new page, scrolled to it.
    const tab = await newPage(browser, { viewport: { width: 1360, height: 600 } });
    await login(tab, env.viewer, 'viewer');
    const tlogs = await openRun(tab, name, '#L12');
    const sel = tlogs.locator('.log-line.selected');
    await sel.waitFor();
    assert((await sel.locator('.msg').innerText()) === 'line 12', `#L12 selects ${await sel.locator('.msg').innerText()}`);
    assert(await inView(sel), 'the #L12 line is not scrolled into view');
    await close(tab);
  } finally {
    deleteRun(NS, name);
    await close(page);
  }
});

test('log viewer: records rotated out of the Pod log leave a gap mark, never a silent skip', async ({ browser }) => {
  const name = 'e2e-log-rotated';
  bulkRun(name, 30);
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openRun(page, name);
    await logs.getByLabel('Tail').fill('5');
    await logs.getByRole('button', { name: 'Load', exact: true }).click();
    await eventually('a 5-line tail', async () => (await logs.locator('.log-line').count()) === 5);
    // The server numbers every record: the tail is records 26 to 30.
    const numbers = (await numbered(logs)).map(([n]) => n);
    assert(JSON.stringify(numbers) === JSON.stringify(['26', '27', '28', '29', '30']), `the tail is numbered ${JSON.stringify(numbers)}`);
    // The kubelet rotates the log: only the last 3 records are left, so the first one shown is gone.
    const file = join(env.logs, `${NS}_${BULK_POD}`, 'runtimed.log');
    const kept = readFileSync(file, 'utf8').split('\n').filter(Boolean).slice(-3);
    writeFileSync(file, `${kept.join('\n')}\n`);
    await logs.getByRole('button', { name: 'Load older' }).click();
    await logs.getByText('Older records are no longer in the Pod log').waitFor();
    assert((await logs.getByRole('button', { name: 'Load older' }).count()) === 0, '"Load older" is still offered over the gap');
    assert((await logs.getByText('Start of the log').count()) === 0, 'a gap reads "Start of the log"');
    assert((await logs.locator('.log-line').count()) === 5, 'lines were added or lost at the gap');
  } finally {
    deleteRun(NS, name);
    kubectl(['-n', NS, 'delete', 'pod', BULK_POD, '--ignore-not-found', '--grace-period=0', '--force', '--wait=false']);
    await close(page);
  }
});

test('log viewer: a link to a line outside the loaded tail loads around it and scrolls to it; Enter on a line number copies its link', async ({ browser }) => {
  const name = 'e2e-log-link-far';
  await numberedRun(name, 700);
  const page = await newPage(browser);
  try {
    await page.context().grantPermissions(['clipboard-read', 'clipboard-write']);
    await login(page, env.viewer, 'viewer');
    // The cursor of record 40 (the default tail of 100 does not hold it).
    const ctx = await api(env.viewer);
    const tail = await getJson(ctx, `/api/namespaces/${NS}/runs/${name}/logs?tail=500`);
    const back = await getJson(ctx, `/api/namespaces/${NS}/runs/${name}/logs?tail=500&beforeCursor=${tail.records[0].cursor}`);
    await ctx.dispose();
    const target = back.records.find((r: { message: string }) => r.message === 'line 40');
    assert(target, `no record "line 40" before the tail: ${back.records.length} records`);
    const logs = await openRun(page, name, `#L${target.cursor}`);
    const sel = logs.locator('.log-line.selected');
    await sel.waitFor();
    assert((await sel.locator('.msg').innerText()) === 'line 40', `the link selects ${await sel.locator('.msg').innerText()}`);
    assert(await inView(sel), 'the linked line is not scrolled into view');
    // Keyboard: Tab reaches a line number; Enter copies the line's link.
    const ln = logs.locator('.log-line').filter({ has: page.locator('.msg', { hasText: /^line 41$/ }) }).locator('.ln');
    await ln.focus();
    assert(await ln.evaluate((e) => e === document.activeElement), 'the line number cannot take the focus');
    await page.keyboard.press('Enter');
    await logs.getByText(/Link to .* copied/).waitFor();
    const copied = await page.evaluate(() => navigator.clipboard.readText());
    const hash = new URL(copied).hash;
    assert(/^#L\d+\.\d{9}-\d+$/.test(hash), `the copied link is ${copied}`);
    const tab = await newPage(browser);
    await login(tab, env.viewer, 'viewer');
    const tl = await openRun(tab, name, hash);
    await tl.locator('.log-line.selected').waitFor();
    assert((await tl.locator('.log-line.selected .msg').innerText()) === 'line 41', 'the copied link opens another line');
    await close(tab);
  } finally {
    deleteRun(NS, name);
    await close(page);
  }
});

// --- the log view's own defects ---------------------------------------------

const logState = (logs: Locator) => logs.locator('.log-status').innerText();

test('log viewer: typing a search goes to the first match, which does not read "Following · Paused"', async ({ browser }) => {
  const page = await newPage(browser, { viewport: { width: 1360, height: 700 } });
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openRun(page, 'build-running');
    await eventually('Following', async () => (await logState(logs)).includes('Following'));
    await eventually('a few ticks', async () => (await logs.locator('.log-line').count()) >= 3);
    await logs.getByLabel('Search the log').fill('tick');
    const current = logs.locator('.log-line.current-match');
    await current.waitFor();
    assert(await inView(current), 'the first match is not scrolled into view');
    assert((await logs.locator('.match-count').innerText()).startsWith('1 / '), `the count reads ${await logs.locator('.match-count').innerText()}`);
    await page.waitForTimeout(1500);
    const state = await logState(logs);
    assert(!/Paused/.test(state), `jumping to a match reads: ${state}`);
    assert(/At a search match/.test(state), `the state does not say the view is at a match: ${state}`);
  } finally {
    await close(page);
  }
});

test('log viewer: at 390 px, turning Wrap on does not pause following', async ({ browser }) => {
  const page = await newPage(browser, { viewport: { width: 390, height: 844 } });
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openRun(page, 'build-running');
    await eventually('Following', async () => (await logState(logs)).includes('Following'));
    await eventually('a few ticks', async () => (await logs.locator('.log-line').count()) >= 3);
    await logs.getByLabel('Wrap').check();
    await page.waitForTimeout(2500);
    const state = await logState(logs);
    assert(!/Paused/.test(state), `Wrap paused following: ${state}`);
    const last = logs.locator('.log-line').last();
    await eventually('the newest line in view', () => inView(last), 5000);
  } finally {
    await close(page);
  }
});

// --- search in the whole log (runs/log?search=, the server's search) ------------

/** Searches the whole log for `text`, found once: the line jumped to. */
async function searchWholeLog(logs: Locator, text: string): Promise<Locator> {
  await logs.getByLabel('Search in').selectOption('whole');
  await logs.getByLabel('Search the log').fill(text);
  await eventually('the count', async () => (await logs.locator('.match-count').innerText()) === '1 of 1 match', 15_000);
  const current = logs.locator('.log-line.jump-target');
  await current.waitFor();
  return current;
}

test('log viewer: search in the whole log counts every match and jumps to one outside the loaded lines', async ({ browser }) => {
  const page = await newPage(browser, { viewport: { width: 1360, height: 700 } });
  try {
    await login(page, env.viewer, 'viewer');
    // build-running's first records ("step N of build-running") are long before its loaded tail of ticks.
    const logs = await openRun(page, 'build-running');
    await eventually('Following', async () => (await logState(logs)).includes('Following'));
    // A short tail, so the first steps are outside the loaded lines whatever the demo writer has added so far.
    await logs.getByLabel('Tail').fill('3');
    await logs.getByRole('button', { name: 'Load', exact: true }).click();
    await eventually('a 3-line tail', async () => (await logs.locator('.log-line').count()) <= 4);
    assert((await logs.getByText('step 1 of build-running: ok').count()) === 0, 'the first step is in the loaded tail already');
    const current = await searchWholeLog(logs, 'step 2 of build-running');
    assert((await current.locator('.msg').innerText()) === 'step 2 of build-running: ok', `the jump went to ${await current.locator('.msg').innerText()}`);
    assert(await inView(current), 'the match is not scrolled into view');
    assert(!/Paused/.test(await logState(logs)), `the jump reads: ${await logState(logs)}`);
    // A pattern matching every tick: the count is the whole log's (capped counts read "N+").
    await logs.getByLabel('Regex').check();
    await logs.getByLabel('Search the log').fill('tick \\d+');
    await eventually('a count of many', async () => /^1 of [\d,]+\+? matches$/.test(await logs.locator('.match-count').innerText()), 15_000);
    await logs.getByRole('button', { name: 'Next match' }).click();
    await eventually('the second match', async () => (await logs.locator('.match-count').innerText()).startsWith('2 of '));
  } finally {
    await close(page);
  }
});

test('log viewer: screenshots of search in the whole log in every Style x Theme and at 390 px', async ({ browser }) => {
  for (const style of STYLES) {
    for (const theme of THEMES) {
      for (const width of [1360, 390]) {
        const page = await newPage(browser, { style, theme, viewport: { width, height: 900 } });
        try {
          await login(page, env.viewer, 'viewer');
          const logs = await openRun(page, 'build-running');
          await searchWholeLog(logs, 'step 2 of build-running');
          await page.screenshot({ path: join(env.shots, `log-search-whole--${style}-${theme}${width === 390 ? '--390' : ''}.png`), fullPage: false });
        } finally {
          await close(page);
        }
      }
    }
  }
});
