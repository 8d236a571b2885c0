// Browser test harness for the Console against a real environment
// (hack/testenv up --with-console, then hack/demo seed): a minimal sequential
// runner, the environment, Chromium through playwright-core, and helpers.
import { appendFileSync, existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { createRequire } from 'node:module';
import { chromium, request } from 'playwright-core';

const require = createRequire(import.meta.url);
const here = fileURLToPath(new URL('.', import.meta.url));

// --- environment -------------------------------------------------------------

function need(name) {
  const v = process.env[name];
  if (!v) {
    throw new Error(
      `${name} is not set: run hack/testenv up --with-console and hack/demo seed, then export its lines (hack/e2e does all of this)`,
    );
  }
  return v;
}

// The variables a flow needs are read when it first uses them, so flows with
// other needs (cluster.mjs) share this module.
export const env = {
  get url() {
    return need('CONSOLE_URL').replace(/\/$/, '');
  },
  get viewer() {
    return need('TESTENV_TOKEN_VIEWER');
  },
  get operator() {
    return need('TESTENV_TOKEN_OPERATOR');
  },
  get logs() {
    return need('TESTENV_LOGS');
  },
  ns: process.env.E2E_NAMESPACE ?? 'team-a',
  shots: process.env.E2E_SHOTS ?? join(here, '..', '..', '..', 'target', 'ui-shots'),
  chromium: process.env.CHROMIUM ?? '/usr/bin/chromium',
};

export const STYLES = ['github', 'stripe', 'neumorphism'];
export const THEMES = ['light', 'dark'];

// --- runner -------------------------------------------------------------------

const tests = [];

/** Registers a test; `fn` receives the shared browser. */
export function test(name, fn) {
  tests.push({ name, fn });
}

export class Failure extends Error {}

export function assert(cond, message) {
  if (!cond) throw new Failure(message);
}

/** Polls `fn` until it returns a truthy value, or fails with `what` after `ms`. */
export async function eventually(what, fn, ms = 10_000) {
  const until = Date.now() + ms;
  let last;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > until) throw new Failure(`timed out after ${ms} ms waiting for ${what}${last ? `: ${last.message}` : ''}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export const LAUNCH_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
];

/**
 * Runs every registered test (filtered by E2E_ONLY, a comma-separated list of
 * substrings) in one Chromium started with LAUNCH_ARGS plus `args`.
 */
export async function runAll({ args = [] } = {}) {
  const only = process.env.E2E_ONLY ? process.env.E2E_ONLY.split(',') : null;
  const chosen = only ? tests.filter((t) => only.some((o) => t.name.includes(o))) : tests;
  mkdirSync(env.shots, { recursive: true });
  const browser = await chromium.launch({ executablePath: env.chromium, args: [...LAUNCH_ARGS, ...args] });
  let passed = 0;
  let failed = 0;
  try {
    for (const t of chosen) {
      const started = Date.now();
      try {
        await t.fn(browser);
        passed++;
        console.log(`ok   ${t.name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
      } catch (e) {
        failed++;
        console.log(`FAIL ${t.name} (${((Date.now() - started) / 1000).toFixed(1)} s)`);
        console.log(`     ${(e instanceof Failure ? e.message : (e?.stack ?? String(e))).split('\n').join('\n     ')}`);
      }
    }
  } finally {
    await browser.close();
  }
  console.log(`screenshots: ${env.shots}`);
  console.log(`${passed} passed, ${failed} failed`);
  return failed === 0;
}

// --- browser helpers ----------------------------------------------------------

/**
 * A fresh browser context (own cookie jar). `style`/`theme` preset the stored
 * preferences before any page script runs. Page errors fail the test.
 * `ignoreHTTPSErrors: false` leaves certificate checks to Chromium.
 */
/**
 * Serves the UI's files from `dist` (another build, e.g. an older commit's
 * `vite build`) instead of the Console's embedded ones, with the Console's
 * own API behind them: to see a test fail on the UI it was written against.
 */
async function serveOtherBuild(context, dist) {
  const { readFile } = await import('node:fs/promises');
  const path = await import('node:path');
  const origin = new URL(env.url).origin;
  const types = { '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.html': 'text/html' };
  await context.route(
    (u) => u.origin === origin && !/^\/(api|v1|apis|healthz|readyz|livez|metrics)(\/|$)/.test(u.pathname),
    async (route) => {
      const rel = decodeURIComponent(new URL(route.request().url()).pathname).replace(/^\/+/, '');
      const file = path.join(dist, path.normalize(rel));
      const inside = file.startsWith(path.resolve(dist) + path.sep);
      let body;
      try {
        body = inside && rel ? await readFile(file) : null;
      } catch {
        body = null;
      }
      const served = body ? file : path.join(dist, 'index.html');
      await route.fulfill({
        status: 200,
        body: body ?? (await readFile(served)),
        contentType: types[path.extname(served)] ?? 'application/octet-stream',
      });
    },
  );
}

export async function newPage(browser, { style, theme, viewport = { width: 1360, height: 900 }, ignoreHTTPSErrors = true } = {}) {
  const context = await browser.newContext({
    ignoreHTTPSErrors,
    viewport,
    ...(theme ? { colorScheme: theme } : {}),
    reducedMotion: 'reduce',
  });
  if (style || theme) {
    await context.addInitScript(
      ([s, t]) => {
        if (s) localStorage.setItem('kruntimes.console.style', s);
        if (t) localStorage.setItem('kruntimes.console.theme', t);
      },
      [style, theme],
    );
  }
  if (process.env.E2E_WEB_DIST) await serveOtherBuild(context, process.env.E2E_WEB_DIST);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const errors = [];
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  page.pageErrors = errors;
  return page;
}

export async function close(page) {
  const errors = page.pageErrors ?? [];
  await page.context().close();
  assert(errors.length === 0, errors.join('\n'));
}

/** Logs in through the login form of the Console at `url` with `token` and waits for the account label. */
export async function login(page, token, expectUser, url = env.url) {
  await page.goto(`${url}/login`);
  await page.getByLabel('Kubernetes bearer token').fill(token);
  await page.getByRole('button', { name: 'Connect' }).click();
  await page.locator('.account-label').filter({ hasText: expectUser }).waitFor();
  await assertNoToken(page, token);
}

/** The token is nowhere JavaScript can read it: storage and readable cookies. */
export async function assertNoToken(page, token) {
  const seen = await page.evaluate(() => {
    const dump = (s) => {
      const out = [];
      for (let i = 0; i < s.length; i++) {
        const k = s.key(i);
        out.push(`${k}=${s.getItem(k)}`);
      }
      return out.join('\n');
    };
    return { local: dump(localStorage), session: dump(sessionStorage), cookie: document.cookie };
  });
  assert(!seen.local.includes(token), 'the token is in localStorage');
  assert(!seen.session.includes(token), 'the token is in sessionStorage');
  assert(!seen.cookie.includes(token), 'the token is in document.cookie');
  assert(!seen.cookie.includes('krt-session'), `the session cookie is readable by JavaScript: ${seen.cookie}`);
}

// --- accessibility (axe-core) ------------------------------------------------

const AXE_SOURCE = readFileSync(require.resolve('axe-core/axe.min.js'), 'utf8');

/**
 * Runs axe on the page (injected through the DevTools protocol, which the
 * page's CSP does not govern) and returns the serious and critical
 * violations as readable lines.
 */
export async function axeViolations(page) {
  const has = await page.evaluate(() => typeof window.axe === 'object');
  if (!has) await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.map((v) => ({
      id: v.id,
      impact: v.impact,
      help: v.help,
      nodes: v.nodes.slice(0, 5).map((n) => `${n.target.join(' ')} — ${n.failureSummary?.split('\n').slice(1).join(' ') ?? ''}`),
      count: v.nodes.length,
    }));
  });
  return result.filter((v) => v.impact === 'serious' || v.impact === 'critical');
}

export function describeViolations(vs) {
  return vs
    .map((v) => `${v.impact} ${v.id} (${v.count}×): ${v.help}\n${v.nodes.map((n) => `    ${n}`).join('\n')}`)
    .join('\n');
}

// --- API and log file helpers -----------------------------------------------

/** A request context calling the Console API with a bearer token. */
export async function api(token) {
  return request.newContext({
    baseURL: env.url,
    ignoreHTTPSErrors: true,
    extraHTTPHeaders: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
  });
}

export async function getJson(ctx, path) {
  const r = await ctx.get(path);
  assert(r.ok(), `GET ${path}: HTTP ${r.status()} ${await r.text()}`);
  return r.json();
}

/** Appends one runtimed record for `run` (a RunDetail) to its Pod's log, as the Runtime would. */
export function appendRunLog(run, message, stream = 'stdout') {
  const pod = run.status.assignedPod;
  assert(pod, `run ${run.metadata.name} has no assigned Pod`);
  const dir = join(env.logs, `${run.metadata.namespace}_${pod}`);
  const file = join(dir, 'runtimed.log');
  assert(existsSync(dir), `no Pod log folder ${dir}`);
  const record = {
    run_uid: run.metadata.uid,
    run_name: run.metadata.name,
    namespace: run.metadata.namespace,
    runtime: run.spec.runtime,
    pod,
    stream,
    message,
  };
  const now = new Date();
  const ns = String(now.getUTCMilliseconds()).padStart(3, '0') + '000000';
  const ts = now.toISOString().replace(/\.\d{3}Z$/, `.${ns}Z`);
  appendFileSync(file, `${ts} ${stream} F ${JSON.stringify(record)}\n`);
}
