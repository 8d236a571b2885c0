// Screenshots of every page in 3 Styles x Light/Dark, against the built UI
// (dist/) with the Console API answered from tests/fixtures.mjs.
//
//   npm run build && node tests/screenshots.mjs [outDir]
//
// Env: CHROMIUM (default /usr/bin/chromium), SHOT_STYLES, SHOT_THEMES, SHOT_PAGES
// (comma-separated filters), SHOT_WIDTH (viewport width, default 1360).
// Prints the output folder.
//
// Two runs of the same build give the same pictures: the fixtures' times are
// fixed (fixtures.mjs NOW), the page's clock is fixed to the same instant
// (Date only; timers run), in UTC and en-US, with reduced motion (no
// transitions) and animations stopped, and each shot waits for the page to
// stop moving.
import { createReadStream, existsSync, mkdirSync, statSync } from 'node:fs';
import { createServer } from 'node:http';
import { extname, join, normalize } from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import * as fx from './fixtures.mjs';

const root = fileURLToPath(new URL('../dist/', import.meta.url));
const outDir = process.argv[2] ?? '/tmp/ui-shots';
mkdirSync(outDir, { recursive: true });

const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml' };

/**
 * Static server for dist/ with the SPA fallback the Console server also has.
 * Log follows are answered here too (the route handler passes them on):
 * `route.fulfill` can only send a whole body, and a follow stays open.
 */
function serve() {
  const server = createServer((req, res) => {
    const url = new URL(req.url, 'http://x');
    const follow = /^\/api\/namespaces\/[^/]+\/runs\/([^/]+)\/logs$/.exec(url.pathname);
    if (follow && url.searchParams.get('follow') === 'true') return answerFollow(decodeURIComponent(follow[1]), url.searchParams, res);
    let file = normalize(join(root, decodeURIComponent(url.pathname)));
    if (!file.startsWith(root) || !existsSync(file) || statSync(file).isDirectory()) file = join(root, 'index.html');
    res.setHeader('Content-Type', TYPES[extname(file)] ?? 'application/octet-stream');
    res.setHeader('Content-Security-Policy', "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'");
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve(server)));
}

const json = (route, body, status = 200) =>
  route.fulfill({ status, contentType: 'application/json', body: JSON.stringify(body) });

/** The log of every Run without one of its own below. */
const RUN_LOG = fx.logRecords(100);

// The engine's runtimed writes a Run's records only when it ends: a running
// Run's lines are live output (no time when first read, a time once
// followed); a Timeout Run has none, and its answer says why.
const liveLine = (i, stream, message, time) => ({
  stream,
  message,
  pod: 'python-pool-7d9f4',
  cursor: `L2-${stream === 'stdout' ? i : 3}-${stream === 'stderr' ? i : 0}-${stream === 'stdout' ? 'o' : 'e'}`,
  source: 'status',
  ...(time ? { time } : {}),
});
const ENGINE_LOGS = {
  'train-live': {
    records: [
      liveLine(1, 'stdout', 'epoch 1/20: loss 0.912 acc 0.611'),
      liveLine(2, 'stdout', 'epoch 2/20: loss 0.704 acc 0.702'),
      liveLine(1, 'stderr', 'WARNING: gradient norm 41.2 clipped to 10.0', fx.ago(0)),
      liveLine(3, 'stdout', 'epoch 3/20: loss 0.655 acc 0.731', fx.ago(0)),
    ],
    notes: [],
  },
  'etl-timeout': {
    records: [],
    notes: [
      { reason: 'NoneWrittenForPhase', message: 'the Run ended as Timeout: runtimed writes no records for Timeout and Cancelled Runs, so what it printed was kept only while it ran (as live output)' },
      { reason: 'EarlierAttemptsNotKept', message: "this is attempt 2: runtimed keeps only the last attempt's records; the earlier attempts' output is not kept" },
    ],
  },
  'report-done': {
    records: [
      { stream: 'stdout', message: 'rendered 14 pages', pod: 'python-pool-7d9f4', time: fx.ago(0), cursor: '1764601040.100000000-0', writtenAtEnd: true },
      { stream: 'stdout', message: '[output truncated]', pod: 'python-pool-7d9f4', time: fx.ago(0), cursor: '1764601040.100000000-1', writtenAtEnd: true },
      { stream: 'stderr', message: 'warning: font cache rebuilt', pod: 'python-pool-7d9f4', time: fx.ago(0), cursor: '1764601040.100000000-2', writtenAtEnd: true },
    ],
    notes: [
      { reason: 'OutputTruncated', message: 'a stream passed the runtime\'s size bound (1 MiB per stream) and was cut where the line "[output truncated]" is' },
      { reason: 'WrittenAtEnd', message: 'runtimed wrote these records when the Run ended: their times are when they were written, not when each line was printed (stdout lines come before stderr lines)' },
    ],
  },
};
const ENGINE_RUNS = {
  'train-live': { phase: 'Running', attempt: 2 },
  'etl-timeout': { phase: 'Timeout', attempt: 2, completionTime: fx.ago(0), message: 'Run exceeded its timeout of 10m' },
  'report-done': { phase: 'Succeeded', attempt: 1, completionTime: fx.ago(0) },
};

// build-4199 has a large log: 100 records so far; its first follow gets them
// and the 100,000 written while it is open, then its connection drops (no
// Status line, as when the upstream breaks off). The reconnect resumes after
// the last record shown (`sinceCursor`) and gets nothing again.
const BIG_LOG = fx.logRecords(100_100, 100_100);
const BIG_HISTORY = 100;
let bigWritten = BIG_HISTORY;
/** The `sinceCursor` of every resumed follow of build-4199. */
const bigResumes = [];

/** A Run's records written so far. */
function writtenLog(name) {
  if (name in ENGINE_LOGS) return ENGINE_LOGS[name].records;
  if (name === 'build-4199') return BIG_LOG.slice(0, bigWritten);
  return RUN_LOG;
}

/**
 * A follow (`follow=true`), as the Console relays it: the last `tail` records
 * or every record after `sinceCursor`, then it stays open for new ones (there
 * are none, but for build-4199's first follow); a cursor that names no record
 * ends it with a 410 Status line.
 */
function answerFollow(name, params, res) {
  res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'Cache-Control': 'no-store' });
  const read = fx.readLog(writtenLog(name), params);
  if ('gone' in read) {
    res.end(JSON.stringify({ kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', code: 410, reason: 'Gone', message: read.gone }) + '\n');
    return;
  }
  let records = read.records;
  let drop = false;
  if (name === 'build-4199') {
    if (params.has('sinceCursor')) bigResumes.push(params.get('sinceCursor'));
    if (bigWritten < BIG_LOG.length) {
      records = records.concat(BIG_LOG.slice(bigWritten));
      bigWritten = BIG_LOG.length;
      drop = true;
    }
  }
  const body = records.map((r) => JSON.stringify(r) + '\n').join('');
  if (body) res.write(body);
  else res.flushHeaders();
  // Otherwise held open, as the Console's follow of a Run with nothing new to say; the page closes it.
  if (drop) res.end();
}

async function mockApi(page) {
  bigWritten = BIG_HISTORY;
  bigResumes.length = 0;
  await page.route('**/api/**', async (route) => {
    const url = new URL(route.request().url());
    const p = url.pathname;
    const method = route.request().method();
    let m;
    if (p === '/api/session') {
      if (method === 'DELETE') return json(route, { authenticated: false });
      return json(route, { authenticated: true, username: 'system:serviceaccount:team-a:kruntimes-dashboard-viewer' });
    }
    if (p === '/api/namespaces') return json(route, fx.namespaces);
    if (p === '/api/namespaces/team-b/runs')
      return json(
        route,
        { error: { code: 403, reason: 'Forbidden', message: 'runs.kruntimes.io is forbidden: User "viewer" cannot list resource "runs" in API group "kruntimes.io" in the namespace "team-b"' } },
        403,
      );
    if (/^\/api\/namespaces\/[^/]+\/runs$/.test(p)) {
      const phase = url.searchParams.get('phase');
      const items = phase ? fx.runList.items.filter((r) => r.phase === phase) : fx.runList.items;
      return json(route, { ...fx.runList, items });
    }
    if ((m = /^\/api\/namespaces\/([^/]+)\/runs\/([^/]+)\/logs$/.exec(p))) {
      // A follow stays open: the local server answers it (answerFollow).
      if (url.searchParams.get('follow') === 'true') return route.continue();
      const name = decodeURIComponent(m[2]);
      const read = fx.readLog(writtenLog(name), url.searchParams);
      if ('gone' in read) return json(route, { error: { code: 410, reason: 'Gone', message: read.gone } }, 410);
      // Runs on the engine's runtimed: live output while running, notes once ended.
      const notes = ENGINE_LOGS[name]?.notes ?? [];
      return json(route, {
        kind: 'RunLog',
        apiVersion: 'logs.kruntimes.io/v1alpha1',
        metadata: { name, namespace: m[1], uid: 'x' },
        pod: 'python-pool-7d9f4',
        ...read,
        ...(read.truncated ? { truncatedBy: 'tailLines' } : {}),
        notes,
      });
    }
    if ((m = /^\/api\/namespaces\/([^/]+)\/runs\/([^/]+)$/.exec(p)) && m[2] in ENGINE_RUNS) {
      const d = fx.runDetail(m[2]);
      return json(route, { ...d, status: { ...d.status, ...ENGINE_RUNS[m[2]] } });
    }
    if ((m = /^\/api\/namespaces\/([^/]+)\/runs\/([^/]+)$/.exec(p))) return json(route, fx.runDetail(decodeURIComponent(m[2])));
    if (/^\/api\/namespaces\/[^/]+\/runtimes$/.test(p)) return json(route, fx.runtimeList);
    if ((m = /^\/api\/namespaces\/([^/]+)\/runtimes\/([^/]+)$/.exec(p))) return json(route, fx.runtimeDetail(m[2]));
    if (/^\/api\/namespaces\/[^/]+\/workflowruns$/.test(p)) return json(route, fx.workflowRunList);
    if ((m = /^\/api\/namespaces\/([^/]+)\/workflowruns\/([^/]+)$/.exec(p))) return json(route, fx.workflowRunDetail(m[2]));
    return json(route, { error: { code: 404, reason: 'NotFound', message: `no fixture for ${p}` } }, 404);
  });
  await page.routeWebSocket('**/operations:ws', (ws) => {
    ws.onMessage((raw) => {
      const f = JSON.parse(String(raw));
      if (f.type !== 'send') return;
      ws.send(JSON.stringify({ type: 'accepted', operationID: 'op-7f3a' }));
      ws.send(JSON.stringify({ type: 'progress', message: 'started', percent: 0 }));
      ws.send(JSON.stringify({ type: 'output', stream: 'stdout', data: 'Python 3.12.4\n' }));
      ws.send(JSON.stringify({ type: 'output', stream: 'stdout', data: Buffer.from('héllo from base64 ✓\n').toString('base64'), encoding: 'base64' }));
      ws.send(JSON.stringify({ type: 'output', stream: 'stderr', data: 'warning: cache is cold\n' }));
      ws.send(JSON.stringify({ type: 'terminal', status: 'Succeeded', exitCode: 0 }));
    });
  });
}

const NS = fx.NS;
/** Widest viewport of the stacked stages instead of the graph (NARROW_DAG in src/components/DagView.tsx). */
const NARROW_DAG_PX = 600;

/** Waits until `done()` holds (checked every 50 ms), at most `timeout` ms. */
async function until(done, what, timeout = 15000) {
  const start = performance.now();
  while (!(await done())) {
    if (performance.now() - start > timeout) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/**
 * Waits until the page stops moving: its height and every scroll box's
 * position and height the same over 5 checks 50 ms apart (a log's rows are
 * measured after they render, and a view held at a line follows them).
 */
async function still(page) {
  let last = '';
  let same = 0;
  await until(async () => {
    const now = await page.evaluate(() =>
      [document.documentElement.scrollHeight, ...Array.from(document.querySelectorAll('.log-scroll'), (el) => `${el.scrollTop}/${el.scrollHeight}`)].join(' '),
    );
    same = now === last ? same + 1 : 0;
    last = now;
    return same >= 4;
  }, 'the page to stop moving');
}

/**
 * Tells when the page's requests have settled: none in flight for 500 ms.
 * Log follows do not count (they stay open, as the Console's do), which is
 * why this replaces Playwright's `networkidle`.
 */
function trackRequests(page) {
  const open = new Set();
  let changed = performance.now();
  const counts = (r) => !/[?&]follow=true(&|$)/.test(r.url());
  page.on('request', (r) => {
    if (!counts(r)) return;
    open.add(r);
    changed = performance.now();
  });
  const done = (r) => {
    if (open.delete(r)) changed = performance.now();
  };
  page.on('requestfinished', done);
  page.on('requestfailed', done);
  return () => until(() => open.size === 0 && performance.now() - changed >= 500, 'the requests to settle').catch((e) => console.error(e.message));
}

/** Timestamps on, the log in view. */
async function showLog(page) {
  await page.getByLabel('Timestamps').check();
  await page.locator('#logs').scrollIntoViewIfNeeded();
}

const PAGES = [
  ['login', '/login'],
  ['runs', `/namespaces/${NS}/runs`],
  ['runs-forbidden', `/namespaces/team-b/runs`],
  ['run-detail', `/namespaces/${NS}/runs/build-4210#L42`],
  [
    'run-session',
    `/namespaces/${NS}/runs/notebook-session`,
    async (page) => {
      await page.getByRole('textbox', { name: 'Command' }).fill('python -c "print(42)"');
      await page.getByRole('button', { name: 'Run', exact: true }).click();
      await page.getByText('terminal').first().waitFor();
      await page.locator('#session').scrollIntoViewIfNeeded();
    },
  ],
  [
    'run-logs-search',
    `/namespaces/${NS}/runs/build-4211`,
    async (page) => {
      // Typing goes to the first match; Enter then to the second (once the first is chosen).
      await page.getByLabel('Search the log').fill('retrying');
      await page.locator('.match-count').getByText(/^1 \/ \d+$/).waitFor();
      await page.getByLabel('Search the log').press('Enter');
      await page.locator('.match-count').getByText(/^2 \/ \d+$/).waitFor();
      await page.getByLabel('Wrap').check();
      await page.getByLabel('Timestamps').check();
      await page.locator('#logs').scrollIntoViewIfNeeded();
    },
  ],
  [
    'run-logs-100k',
    `/namespaces/${NS}/runs/build-4199`,
    async (page) => {
      await page.getByLabel('Follow').check();
      await page.waitForFunction(() => document.querySelector('.log-status')?.textContent?.includes('100,100 lines'), null, { timeout: 20000 }).catch(async (e) => { console.error(await page.locator('.log-status').textContent()); throw e; });
      const rows = await page.locator('.log-line').count();
      console.log(`100,100 followed lines rendered with ${rows} DOM rows`);
      // The stream dropped: the reconnect must resume after the last record shown and duplicate nothing.
      await until(() => bigResumes.length > 0, 'the follow of build-4199 to reconnect');
      await page.locator('.log-status').getByText('Following').waitFor();
      const last = BIG_LOG[BIG_LOG.length - 1].cursor;
      if (bigResumes[0] !== last) throw new Error(`the reconnect resumed after ${bigResumes[0]}, not after the last record shown (${last})`);
      const status = await page.locator('.log-status').textContent();
      console.log(`after reconnect: ${status}`);
      if (!status.includes('100,100 lines')) throw new Error(`reconnect changed the line count: ${status}`);
      if (rows > 400) throw new Error(`log is not virtualised: ${rows} rows in the DOM`);
      await page.locator('.log-scroll').evaluate((el) => el.scrollBy(0, -2000));
      await page.getByText('Paused').first().waitFor();
      await page.locator('#logs').scrollIntoViewIfNeeded();
    },
  ],
  ['run-logs-live', `/namespaces/${NS}/runs/train-live`, (page) => showLog(page)],
  ['run-logs-none', `/namespaces/${NS}/runs/etl-timeout`, (page) => showLog(page)],
  ['run-logs-at-end', `/namespaces/${NS}/runs/report-done`, (page) => showLog(page)],
  ['runtimes', `/namespaces/${NS}/runtimes`],
  ['runtime-detail', `/namespaces/${NS}/runtimes/python-pool`],
  ['workflowruns', `/namespaces/${NS}/workflowruns`],
  [
    'workflowrun-dag',
    `/namespaces/${NS}/workflowruns/release-2025-06`,
    async (page) => {
      if (page.viewportSize().width <= NARROW_DAG_PX) {
        // A narrow screen shows the stages stacked as lists of job links, no canvas to pan.
        const stages = page.getByRole('list', { name: 'Jobs by stage' });
        await stages.waitFor();
        const jobs = await stages.locator('.dag-stage-job').count();
        const expected = Object.keys(fx.workflowRunDetail('release-2025-06').spec.jobs).length;
        if (jobs !== expected) throw new Error(`the stages list ${jobs} jobs, not ${expected}`);
        if (await page.getByTestId('dag-canvas').count()) throw new Error('the graph canvas is drawn on a narrow screen');
        console.log(`DAG at ${page.viewportSize().width} px: ${jobs} jobs by stage`);
        return;
      }
      // Drag on empty canvas pans the graph; the drag starts outside any job link.
      const canvas = page.getByTestId('dag-canvas');
      const box = await canvas.boundingBox();
      const before = await canvas.evaluate((el) => el.scrollLeft);
      await page.mouse.move(box.x + box.width - 40, box.y + box.height - 20);
      await page.mouse.down();
      await page.mouse.move(box.x + box.width - 240, box.y + box.height - 30, { steps: 5 });
      await page.mouse.up();
      const after = await canvas.evaluate((el) => el.scrollLeft);
      if (!(after > before)) throw new Error(`drag did not pan the DAG (scrollLeft ${before} -> ${after})`);
      console.log(`DAG drag-pan: scrollLeft ${before} -> ${after}`);
    },
  ],
  ['workflowrun-table', `/namespaces/${NS}/workflowruns/release-2025-06?view=table`],
  ['job-detail', `/namespaces/${NS}/workflowruns/release-2025-06/jobs/integration-tests?step=2`],
  ['settings', '/settings'],
  ['about', '/about'],
];

const filter = (env) => (process.env[env] ? process.env[env].split(',') : null);
const styles = filter('SHOT_STYLES') ?? ['github', 'stripe', 'neumorphism'];
const themes = filter('SHOT_THEMES') ?? ['light', 'dark'];
const only = filter('SHOT_PAGES');

const server = await serve();
const base = `http://127.0.0.1:${server.address().port}`;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
  // No partial raster: a tile that changed is drawn again whole, not only its changed part
  // over what it held, whose anti-aliased edges (rounded corners) then vary by one level.
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-partial-raster', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
});
let problems = 0;
try {
  for (const style of styles) {
    for (const theme of themes) {
      const width = Number(process.env.SHOT_WIDTH ?? 1360);
      const context = await browser.newContext({ viewport: { width, height: 900 }, colorScheme: theme, reducedMotion: 'reduce', timezoneId: 'UTC', locale: 'en-US' });
      // Date in the page is the fixtures' NOW; timers and animation frames run as usual.
      await context.clock.setFixedTime(fx.NOW);
      await context.addInitScript(
        ([s, t]) => {
          localStorage.setItem('kruntimes.console.style', s);
          localStorage.setItem('kruntimes.console.theme', t);
        },
        [style, theme],
      );
      const page = await context.newPage();
      page.on('pageerror', (e) => {
        problems++;
        console.error(`[${style}/${theme}] page error: ${e.message}`);
      });
      page.on('console', (m) => {
        if (m.type() === 'error' && !/status of 40[34]/.test(m.text())) console.error(`[${style}/${theme}] console: ${m.text()}`);
      });
      const settled = trackRequests(page);
      await mockApi(page);
      for (const [name, path, act] of PAGES) {
        if (only && !only.includes(name)) continue;
        await page.goto(base + path);
        await settled();
        await page.waitForTimeout(250);
        if (act) await act(page);
        await page.waitForTimeout(150);
        // Full-page shots with a sticky header look wrong when scrolled; shoot from the top.
        await page.evaluate(() => window.scrollTo(0, 0));
        await still(page);
        const file = join(outDir, `${name}--${style}-${theme}${process.env.SHOT_WIDTH ? `-${process.env.SHOT_WIDTH}` : ''}.png`);
        await page.screenshot({ path: file, fullPage: true, animations: 'disabled', caret: 'hide' });
      }
      await context.close();
    }
  }
} finally {
  await browser.close();
  server.closeAllConnections();
  server.close();
}
console.log(`screenshots written to ${outDir}`);
if (problems) process.exitCode = 1;
