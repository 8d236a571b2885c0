// Shared support of the browser tests against a real Console (hack/testenv up
// --with-console, then hack/demo seed): the environment, browser contexts,
// login, accessibility, and API and log file helpers. The runner is
// @playwright/test (playwright.config.ts); `test` is its test function.
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request, test as base } from '@playwright/test';
import type { APIRequestContext, Browser, BrowserContext, Locator, Page, Request } from '@playwright/test';

const require = createRequire(import.meta.url);
const here = fileURLToPath(new URL('.', import.meta.url));

export const test = base;
export type { Browser, Locator, Page };

// --- environment -------------------------------------------------------------

function need(name: string): string {
  const v = process.env[name];
  if (!v) {
    throw new Error(
      `${name} is not set: run hack/testenv up --with-console and hack/demo seed, then export its lines (hack/e2e does all of this)`,
    );
  }
  return v;
}

// The variables a flow needs are read when it first uses them, so flows with
// other needs (cluster.spec.ts) share this module.
export const env = {
  get url(): string {
    return need('CONSOLE_URL').replace(/\/$/, '');
  },
  get viewer(): string {
    return need('TESTENV_TOKEN_VIEWER');
  },
  get operator(): string {
    return need('TESTENV_TOKEN_OPERATOR');
  },
  get admin(): string {
    return need('TESTENV_TOKEN_ADMIN');
  },
  get logs(): string {
    return need('TESTENV_LOGS');
  },
  ns: process.env.E2E_NAMESPACE ?? 'team-a',
  shots: process.env.E2E_SHOTS ?? join(here, '..', '..', '..', 'target', 'ui-shots'),
  chromium: process.env.CHROMIUM ?? '/usr/bin/chromium',
};

export const STYLES = ['github', 'stripe', 'neumorphism'] as const;
export const THEMES = ['light', 'dark'] as const;
export type Style = (typeof STYLES)[number];
export type Theme = (typeof THEMES)[number];

// --- assertions ---------------------------------------------------------------

export class Failure extends Error {}

export function assert(cond: unknown, message: string): asserts cond {
  if (!cond) throw new Failure(message);
}

/** Polls `fn` until it returns a truthy value, or fails with `what` after `ms`. */
export async function eventually<T>(what: string, fn: () => T | Promise<T>, ms = 10_000): Promise<T> {
  const until = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (e) {
      last = e;
    }
    if (Date.now() > until) {
      throw new Failure(`timed out after ${ms} ms waiting for ${what}${last instanceof Error ? `: ${last.message}` : ''}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The first line of an error's message (for lists of problems). */
export function firstLine(e: unknown): string {
  return (e instanceof Error ? e.message : String(e)).split('\n')[0] ?? '';
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

// --- browser helpers ----------------------------------------------------------

/**
 * Serves the UI's files from `dist` (another build, e.g. an older commit's
 * `vite build`) instead of the Console's embedded ones, with the Console's
 * own API behind them: to see a test fail on the UI it was written against.
 */
async function serveOtherBuild(context: BrowserContext, dist: string): Promise<void> {
  const { readFile } = await import('node:fs/promises');
  const path = await import('node:path');
  const origin = new URL(env.url).origin;
  const types: Record<string, string> = { '.js': 'text/javascript', '.css': 'text/css', '.svg': 'image/svg+xml', '.html': 'text/html' };
  await context.route(
    (u) => u.origin === origin && !/^\/(api|v1|apis|healthz|readyz|livez|metrics)(\/|$)/.test(u.pathname),
    async (route) => {
      const rel = decodeURIComponent(new URL(route.request().url()).pathname).replace(/^\/+/, '');
      const file = path.join(dist, path.normalize(rel));
      const inside = file.startsWith(path.resolve(dist) + path.sep);
      let body: Buffer | null;
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

export interface PageOptions {
  style?: Style;
  theme?: Theme;
  viewport?: { width: number; height: number };
  ignoreHTTPSErrors?: boolean;
}

const pageErrors = new WeakMap<Page, string[]>();

/** A page's requests still open, besides the streams that stay open (watches, log follows). */
interface Traffic {
  open: Set<Request>;
  /** When a request last started or ended (ms since the epoch). */
  last: number;
}
const traffic = new WeakMap<Page, Traffic>();

/** Requests that stay open by design: a namespace watch, a log follow. */
function isStream(url: string): boolean {
  return /\/watch(\?|$)/.test(url) || /[?&]follow=true(&|$)/.test(url);
}

function trackTraffic(page: Page): void {
  const t: Traffic = { open: new Set(), last: Date.now() };
  traffic.set(page, t);
  page.on('request', (r) => {
    if (isStream(r.url())) return;
    t.open.add(r);
    t.last = Date.now();
  });
  const ended = (r: Request) => {
    if (t.open.delete(r)) t.last = Date.now();
  };
  page.on('requestfinished', ended);
  page.on('requestfailed', ended);
}

/**
 * Waits until the page is quiet: no request open but its streams for
 * `quietMs`, and no loading state shown (each wait bounded; a page that never
 * settles is shot as it is, and its checks say what is missing).
 */
export async function quiet(page: Page, quietMs = 200, maxMs = 5_000): Promise<void> {
  const t = traffic.get(page);
  const deadline = Date.now() + maxMs;
  while (t && Date.now() < deadline && (t.open.size > 0 || Date.now() - t.last < quietMs)) {
    await page.waitForTimeout(50);
  }
  if (t && t.open.size > 0) {
    const open = [...t.open].map((r) => r.url().replace(/^https?:\/\/[^/]+/, '')).join(', ');
    console.warn(`${page.url()}: still waiting after ${maxMs} ms for ${open}`);
  }
  await page.locator('.state-loading').first().waitFor({ state: 'detached', timeout: 10_000 }).catch(() => {});
}

/**
 * A fresh browser context (own cookie jar). `style`/`theme` preset the stored
 * preferences before any page script runs. Page errors fail the test (in
 * `close`). `ignoreHTTPSErrors: false` leaves certificate checks to Chromium.
 */
export async function newPage(
  browser: Browser,
  { style, theme, viewport = { width: 1360, height: 900 }, ignoreHTTPSErrors = true }: PageOptions = {},
): Promise<Page> {
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
      [style, theme] as const,
    );
  }
  if (process.env.E2E_WEB_DIST) await serveOtherBuild(context, process.env.E2E_WEB_DIST);
  const page = await context.newPage();
  trackTraffic(page);
  page.setDefaultTimeout(15_000);
  const errors: string[] = [];
  page.on('pageerror', (e) => errors.push(`page error: ${e.message}`));
  pageErrors.set(page, errors);
  return page;
}

/** Closes the page's context; fails if the page threw an uncaught error. */
export async function close(page: Page): Promise<void> {
  const errors = pageErrors.get(page) ?? [];
  await page.context().close();
  assert(errors.length === 0, errors.join('\n'));
}

/** Logs in through the login form of the Console at `url` with `token` and waits for the account label. */
export async function login(page: Page, token: string, expectUser: string, url = env.url): Promise<void> {
  await page.goto(`${url}/login`);
  await page.getByLabel('Kubernetes bearer token').fill(token);
  await page.getByRole('button', { name: 'Connect' }).click();
  await page.locator('.account-label').filter({ hasText: expectUser }).waitFor();
  await assertNoToken(page, token);
}

/** The token is nowhere JavaScript can read it: storage and readable cookies. */
export async function assertNoToken(page: Page, token: string): Promise<void> {
  const seen = await page.evaluate(() => {
    const dump = (s: Storage) => {
      const out = [];
      for (let i = 0; i < s.length; i++) {
        const k = s.key(i);
        if (k !== null) out.push(`${k}=${s.getItem(k)}`);
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

export interface Violation {
  id: string;
  impact?: string | null;
  help: string;
  nodes: string[];
  count: number;
}

interface AxeWindow {
  axe?: {
    run(
      context: Document,
      options: { resultTypes: string[] },
    ): Promise<{
      violations: {
        id: string;
        impact?: string | null;
        help: string;
        nodes: { target: string[]; failureSummary?: string }[];
      }[];
    }>;
  };
}

/**
 * Runs axe on the page (injected through the DevTools protocol, which the
 * page's CSP does not govern) and returns the serious and critical
 * violations as readable lines.
 */
export async function axeViolations(page: Page): Promise<Violation[]> {
  const has = await page.evaluate(() => typeof (window as AxeWindow).axe === 'object');
  if (!has) await page.evaluate(AXE_SOURCE);
  const result = await page.evaluate(async () => {
    const axe = (window as AxeWindow).axe;
    if (!axe) throw new Error('axe-core did not load');
    const r = await axe.run(document, { resultTypes: ['violations'] });
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

export function describeViolations(vs: Violation[]): string {
  return vs
    .map((v) => `${v.impact} ${v.id} (${v.count}×): ${v.help}\n${v.nodes.map((n) => `    ${n}`).join('\n')}`)
    .join('\n');
}

// --- API and log file helpers -----------------------------------------------

/** A request context calling the Console API with a bearer token. */
export async function api(token: string): Promise<APIRequestContext> {
  return request.newContext({
    baseURL: env.url,
    ignoreHTTPSErrors: true,
    extraHTTPHeaders: { Authorization: `Bearer ${token}`, Accept: 'application/json' },
  });
}

// The JSON the tests read is checked by their assertions, not by types.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
export type Json = any;

export async function getJson(ctx: APIRequestContext, path: string): Promise<Json> {
  const r = await ctx.get(path);
  assert(r.ok(), `GET ${path}: HTTP ${r.status()} ${await r.text()}`);
  return r.json();
}

/** The fields of a Run (as the API's RunDetail gives them) a log record names. */
export interface RunRef {
  metadata: { name: string; namespace: string; uid: string };
  spec: { runtime: string };
  status: { assignedPod?: string | null };
}

/** Appends one runtimed record for `run` (a RunDetail) to its Pod's log, as the Runtime would. */
export function appendRunLog(run: RunRef, message: string, stream = 'stdout'): void {
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

/** An attribute the element must have (a missing one fails the test, as reading it did before). */
export async function attr(loc: Locator, name: string): Promise<string> {
  const v = await loc.getAttribute(name);
  assert(v !== null, `no ${name} attribute on ${loc}`);
  return v;
}

/** The members of `all` the environment variable `name` (comma-separated) keeps; all when it is unset. */
export function chosen<T extends string>(all: readonly T[], name: string): T[] {
  const only = process.env[name];
  return all.filter((x) => !only || only.split(',').includes(x));
}

/** An error's message (anything thrown). */
export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The first group of `re` in `text`; no match fails the test. */
export function capture(re: RegExp, text: string): string {
  const m = re.exec(text);
  assert(m && m[1] !== undefined, `${JSON.stringify(text)} does not match ${re}`);
  return m[1];
}
