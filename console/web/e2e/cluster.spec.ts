// The core browser flow against any running Console, set up only through
// the environment (no demo data, no log files): the cluster suite
// (tests/tests/cluster_helm.rs) runs it through `kubectl port-forward` to the
// Console installed by the chart; hack/e2e --core runs it on hack/testenv.
//
//   npm run e2e:cluster       (playwright test --project=cluster)
//
// CONSOLE_URL        the Console, e.g. https://kruntimes-console.kruntimes-system.svc:9443
// CONSOLE_CA         PEM file of the CA the Console's certificate must chain to
// E2E_HOST_RULES     optional Chromium host resolver rules, e.g.
//                    "MAP kruntimes-console.kruntimes-system.svc 127.0.0.1"
// E2E_VIEWER_TOKEN   a bearer token with read access to E2E_NAMESPACE
// E2E_VIEWER_USER    the username the header must show (default viewer)
// E2E_NAMESPACE      the namespace of the Runs
// E2E_RUNTIME        a Runtime of that namespace; E2E_RUN runs on it
// E2E_RUN            a Run with log records
// E2E_RUN_MESSAGES   JSON array of messages its tail must show, in this order
// E2E_APPEND_CMD     shell command (sh -c, the message as $1) that makes the
//                    Runtime Pod print one record with that message for E2E_RUN
// E2E_SHOTS          screenshot folder (default target/ui-shots); CHROMIUM
//
// Certificates: Chromium has no flag for an extra trusted CA, and
// ignoreHTTPSErrors would accept any certificate. So before Chromium starts,
// the certificate the Console serves is verified here with Node's TLS client
// against CONSOLE_CA and the URL's host name, and Chromium is started with
// --ignore-certificate-errors-spki-list holding only the SHA-256 of that
// verified certificate's public key; its contexts keep certificate errors
// on. Any other certificate (another key, or a different server) is refused
// by Chromium, which the first test checks.
// Prints one line per test and a final "N passed, N failed" (e2e/summary.ts).
import { execFile } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { checkServerIdentity, connect } from 'node:tls';
import { chromium, type LaunchOptions } from '@playwright/test';
import { LAUNCH_ARGS, assert, assertNoToken, capture, close, env, eventually, login, newPage, test as base, type Locator, type Page } from './support';

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (see the head of console/web/e2e/cluster.spec.ts)`);
  return v;
}

const cfg = {
  url: need('CONSOLE_URL').replace(/\/$/, ''),
  ca: need('CONSOLE_CA'),
  hostRules: process.env.E2E_HOST_RULES ?? '',
  token: need('E2E_VIEWER_TOKEN'),
  user: process.env.E2E_VIEWER_USER || 'viewer',
  ns: need('E2E_NAMESPACE'),
  runtime: need('E2E_RUNTIME'),
  run: need('E2E_RUN'),
  messages: JSON.parse(need('E2E_RUN_MESSAGES')) as unknown,
  append: need('E2E_APPEND_CMD'),
};
assert(
  Array.isArray(cfg.messages) && cfg.messages.length > 0 && cfg.messages.every((m) => typeof m === 'string'),
  'E2E_RUN_MESSAGES must be a non-empty JSON array of strings',
);
const MESSAGES = cfg.messages as string[];

/** Where Chromium connects for `host` under E2E_HOST_RULES ("MAP host target" entries, comma-separated). */
function resolveLike(rules: string, host: string): string {
  for (const rule of rules.split(',')) {
    const [verb, pattern, target] = rule.trim().split(/\s+/);
    if (verb === 'MAP' && pattern === host && target) return target;
  }
  return host;
}

/**
 * Connects to the Console as Chromium will, verifies its certificate chain
 * against CONSOLE_CA and its name against the URL's host, and returns the
 * base64 SHA-256 of the verified certificate's SubjectPublicKeyInfo.
 */
function verifiedSpki(): Promise<string> {
  const u = new URL(cfg.url);
  const host = u.hostname.replace(/^\[|\]$/g, '');
  const port = Number(u.port || 443);
  const address = resolveLike(cfg.hostRules, host);
  return new Promise((resolve, reject) => {
    const socket = connect({
      host: address,
      port,
      ca: readFileSync(cfg.ca),
      rejectUnauthorized: true,
      // The name checked is the URL's host, not the address connected to.
      ...(isIP(host) ? {} : { servername: host }),
      checkServerIdentity: (_, cert) => checkServerIdentity(host, cert),
      ALPNProtocols: ['http/1.1'],
      timeout: 20_000,
    });
    socket.once('secureConnect', () => {
      const der = socket.getPeerCertificate().raw;
      socket.end();
      const key = new X509Certificate(der).publicKey.export({ type: 'spki', format: 'der' });
      resolve(createHash('sha256').update(key).digest('base64'));
    });
    socket.once('timeout', () => socket.destroy(new Error(`no TLS handshake with ${address}:${port} within 20 s`)));
    socket.once('error', (e) => reject(new Error(`the Console's certificate at ${address}:${port} does not verify against ${cfg.ca} as ${host}: ${e.message}`)));
  });
}

function runAppend(message: string): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile('/bin/sh', ['-c', cfg.append, 'e2e-append', message], { timeout: 20_000 }, (err, stdout, stderr) => {
      if (err) reject(new Error(`E2E_APPEND_CMD failed (${err.code ?? err.signal}): ${stderr || stdout}`));
      else resolve();
    });
  });
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(env.shots, `cluster-${name}.png`), fullPage: false });
}

/** Every record the virtualised log panel holds, read by scrolling it from top to bottom: [line number, message]. */
async function panelRecords(logs: Locator): Promise<[number, string][]> {
  const scroll = logs.locator('.log-scroll');
  const seen = new Map<number, string>();
  let top = 0;
  for (let i = 0; i < 2_000; i++) {
    const { rows, height, client } = await scroll.evaluate((el, y) => {
      el.scrollTop = y;
      return {
        rows: [...el.querySelectorAll('.log-line')].map((r) => [Number(r.querySelector('.ln')?.textContent), r.querySelector('.msg')?.textContent ?? ''] as [number, string]),
        height: el.scrollHeight,
        client: el.clientHeight,
      };
    }, top);
    for (const [n, m] of rows) seen.set(n, m);
    if (top + client >= height) break;
    top += Math.max(1, Math.floor(client / 2));
    // Let the virtualiser render the rows of the new position.
    await scroll.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  }
  return [...seen.entries()].sort((a, b) => a[0] - b[0]);
}

/** Index in `have` after the in-order match of every `want`, or the first missing one. */
function inOrder(have: string[], want: string[]): { ok?: true; missing?: string } {
  let i = 0;
  for (const w of want) {
    while (i < have.length && have[i] !== w) i++;
    if (i === have.length) return { missing: w };
    i++;
  }
  return { ok: true };
}

const hostRuleArgs = cfg.hostRules ? [`--host-resolver-rules=${cfg.hostRules}`] : [];

/** Chromium trusts only the key of the Console's verified certificate (checked once per worker). */
const test = base.extend<object, { launchOptions: LaunchOptions }>({
  launchOptions: [
    async ({ launchOptions }, use) => {
      const spki = await verifiedSpki();
      console.log(`Console certificate verified against ${cfg.ca}; Chromium trusts only its key (sha256/${spki})`);
      await use({ ...launchOptions, args: [...(launchOptions.args ?? []), ...hostRuleArgs, `--ignore-certificate-errors-spki-list=${spki}`] });
    },
    { scope: 'worker' },
  ],
});

test('Chromium refuses the Console without the verified key', async () => {
  const bare = await chromium.launch({
    executablePath: env.chromium,
    args: [...LAUNCH_ARGS, ...(cfg.hostRules ? [`--host-resolver-rules=${cfg.hostRules}`] : [])],
  });
  try {
    const page = await (await bare.newContext({ ignoreHTTPSErrors: false })).newPage();
    const err = await page.goto(`${cfg.url}/login`, { timeout: 20_000 }).then(
      () => null,
      (e) => e,
    );
    assert(err && /ERR_CERT_/.test(err.message), `the page loaded without the pinned key: ${err?.message ?? 'no error'}`);
  } finally {
    await bare.close();
  }
});

test(`${cfg.user}: log in, Runs of runtime ${cfg.runtime}, ${cfg.run}'s log tail, follow a new record, log out`, async ({ browser }) => {
  const page = await newPage(browser, { ignoreHTTPSErrors: false });
  await page.goto(`${cfg.url}/login`);
  await page.getByLabel('Kubernetes bearer token').waitFor();
  await shot(page, 'login');
  await login(page, cfg.token, cfg.user, cfg.url);
  // The header reads "Signed in as <user>" (the first words for screen readers only).
  const who = (await page.locator('.account-label').innerText()).replace(/\s+/g, ' ').trim();
  assert(who === `Signed in as ${cfg.user}`, `the header shows ${JSON.stringify(who)}, not ${cfg.user}`);

  // Runs of the namespace, filtered by runtime in the filter bar.
  await page.goto(`${cfg.url}/namespaces/${cfg.ns}/runs`);
  await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
  const select = page.getByLabel('Runtime', { exact: true });
  await eventually(`Runtime ${cfg.runtime} offered in the Runtime filter`, async () => (await select.locator('option').allInnerTexts()).includes(cfg.runtime), 15_000);
  await select.selectOption(cfg.runtime);
  await eventually('the URL to carry the runtime filter', () => new URL(page.url()).searchParams.get('runtime') === cfg.runtime);
  const rows = page.locator('table.table tbody tr');
  await eventually(`${cfg.run} listed, and only Runs of ${cfg.runtime}`, async () => {
    const runtimes = await rows.locator('td:nth-child(3)').allInnerTexts();
    const names = await rows.locator('td:first-child a').allInnerTexts();
    return runtimes.length > 0 && runtimes.every((r) => r.trim() === cfg.runtime) && names.includes(cfg.run);
  }, 15_000);
  await shot(page, 'runs');

  // The Run, and its log tail.
  await rows.getByRole('link', { name: cfg.run, exact: true }).click();
  await page.getByRole('heading', { name: cfg.run, level: 1 }).waitFor();
  assert(new URL(page.url()).pathname === `/namespaces/${cfg.ns}/runs/${cfg.run}`, `unexpected URL ${page.url()}`);
  const logs = page.locator('#logs');
  await logs.scrollIntoViewIfNeeded();
  const state = logs.locator('.log-state').first();
  // An active Run opens following; the plain tail is read with Follow off.
  await logs.getByLabel('Follow').uncheck();
  await eventually('the log tail', async () => (await state.innerText()).startsWith('Last '), 20_000);
  const shown = Number(capture(/^Last ([\d,]+)/, await state.innerText()).replace(/,/g, ''));
  const records = await panelRecords(logs);
  assert(records.length === shown, `the panel says ${shown} records and holds ${records.length}`);
  assert(records.every(([n], i) => n === records[0][0] + i), 'the panel skips line numbers');
  const tail = records.map(([, m]) => m);
  const order = inOrder(tail, MESSAGES);
  assert(order.ok, `the tail lacks ${JSON.stringify(order.missing)} (or shows it out of order); it shows:\n${tail.join('\n')}`);
  await shot(page, 'run-tail');

  // Follow: a record the Runtime Pod prints now appears in the panel.
  await logs.getByLabel('Follow').check();
  await eventually('the follow stream', async () => (await state.innerText()).includes('Following'), 20_000);
  const marker = `e2e core flow ${Date.now()}-${Math.random().toString(36).slice(2, 8)}`;
  await runAppend(marker);
  await eventually(`the new record "${marker}" in the followed panel`, async () => (await logs.locator('.log-line', { hasText: marker }).count()) > 0, 20_000);
  const after = (await panelRecords(logs)).map(([, m]) => m);
  assert(after.filter((m) => m === marker).length === 1, `the new record is shown ${after.filter((m) => m === marker).length} times`);
  assert(inOrder(after, [...MESSAGES, marker]).ok, 'the new record is not after the tail');
  await shot(page, 'run-follow');
  await assertNoToken(page, cfg.token);

  // Log out: back to the token page, no session left.
  await page.getByRole('button', { name: 'Log out' }).click();
  await page.waitForURL(/\/login/);
  await page.getByLabel('Kubernetes bearer token').waitFor();
  const s = await page.evaluate(async () => (await fetch('/api/session')).json());
  assert(s.authenticated === false, `still authenticated after logout: ${JSON.stringify(s)}`);
  await assertNoToken(page, cfg.token);
  await shot(page, 'logout');
  await close(page);
});

