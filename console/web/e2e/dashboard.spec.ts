// The Console through the local dashboard proxy (`kruntimes-console
// dashboard`), as a developer's browser sees it: no login page, the
// kubeconfig user's own identity and permissions, and nothing of the
// credential in the page. tests/tests/cluster_dashboard.rs starts the proxy
// on hack/cluster and runs this flow:
//
//   npm run e2e:dashboard       (playwright test --project=dashboard)
//
// DASHBOARD_URL      the URL the proxy printed, e.g. http://127.0.0.1:9080
// E2E_USER           the kubeconfig user the header must show
// E2E_TOKEN          that user's token (it must appear nowhere in the page)
// E2E_NAMESPACE      a namespace the user may read; E2E_RUN a Run there
// E2E_OTHER_NAMESPACE, E2E_OTHER_RUN: a Run the user may not read
// E2E_MARKER         a prefix for the Run names another page's refused requests name
// E2E_SHOTS          screenshot folder (default target/ui-shots); CHROMIUM
//
// Prints one line per test and a final "N passed, N failed" (e2e/summary.ts).
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { assert, assertNoToken, close, env, eventually, newPage, test, type Page } from './support';

function need(name: string): string {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set (see the head of console/web/e2e/dashboard.spec.ts)`);
  return v;
}

const cfg = {
  url: need('DASHBOARD_URL').replace(/\/$/, ''),
  user: need('E2E_USER'),
  token: need('E2E_TOKEN'),
  ns: need('E2E_NAMESPACE'),
  run: need('E2E_RUN'),
  otherNs: need('E2E_OTHER_NAMESPACE'),
  otherRun: need('E2E_OTHER_RUN'),
  marker: need('E2E_MARKER'),
};

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(env.shots, `dashboard-${name}.png`), fullPage: false });
}

/** Every response the page receives, headers and body, must not hold the token. */
function watchResponses(page: Page) {
  const seen: { url: string; leak: boolean; cookie: boolean }[] = [];
  page.on('response', async (r) => {
    const headers = JSON.stringify(await r.allHeaders().catch(() => ({})));
    const body = await r.text().catch(() => '');
    seen.push({ url: r.url(), leak: headers.includes(cfg.token) || body.includes(cfg.token), cookie: 'set-cookie' in (await r.allHeaders().catch(() => ({}))) });
  });
  return seen;
}

test(`${cfg.user}: signed in without a token page, own Runs readable, another namespace's Run forbidden`, async ({ browser }) => {
  const page = await newPage(browser, { ignoreHTTPSErrors: false });
  const responses = watchResponses(page);
  await page.goto(`${cfg.url}/namespaces/${cfg.ns}/runs`);
  await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
  // The header names the kubeconfig user at once; no Log in link, no login page.
  await page.locator('.account-label').filter({ hasText: cfg.user }).waitFor();
  const who = (await page.locator('.account-label').innerText()).replace(/\s+/g, ' ').trim();
  assert(who === `Signed in as ${cfg.user}`, `the header shows ${JSON.stringify(who)}, not ${cfg.user}`);
  assert((await page.getByRole('link', { name: 'Log in' }).count()) === 0, 'a Log in link is shown');
  assert(!new URL(page.url()).pathname.startsWith('/login'), `sent to ${page.url()}`);
  const rows = page.locator('table.table tbody tr');
  await eventually(`${cfg.run} listed`, async () => (await rows.locator('td:first-child a').allInnerTexts()).includes(cfg.run), 15_000);
  await shot(page, 'runs');

  // A detail only the user's own credential may read.
  await rows.getByRole('link', { name: cfg.run, exact: true }).click();
  await page.getByRole('heading', { name: cfg.run, level: 1 }).waitFor();
  assert((await page.locator('.state-forbidden').count()) === 0, 'the own Run shows a Forbidden state');
  assert((await page.getByText('Login needed').count()) === 0, 'the own Run asks for a login');
  await shot(page, 'run');

  // The same user may not read the other namespace's Run: the Console asked
  // kube-apiserver with the user's credential, not its own.
  await page.goto(`${cfg.url}/namespaces/${cfg.otherNs}/runs/${cfg.otherRun}`);
  await page.locator('.state-forbidden').first().waitFor();
  const text = await page.locator('.state-forbidden').first().innerText();
  assert(text.includes('Forbidden'), `the other Run shows ${JSON.stringify(text)}`);
  await shot(page, 'forbidden');

  // What JavaScript can reach holds nothing of the credential, and no
  // response carried it or set a cookie.
  await assertNoToken(page, cfg.token);
  const cookies = await page.context().cookies();
  assert(cookies.length === 0, `the browser holds cookies: ${cookies.map((c) => c.name).join(', ')}`);
  await eventually('the responses to be read', async () => responses.length > 3);
  const leaks = responses.filter((r) => r.leak).map((r) => r.url);
  assert(leaks.length === 0, `responses carried the token: ${leaks.join(', ')}`);
  const setCookie = responses.filter((r) => r.cookie).map((r) => r.url);
  assert(setCookie.length === 0, `responses set cookies: ${setCookie.join(', ')}`);
  await close(page);
});

test('a page of another origin cannot use the proxy', async ({ browser }) => {
  // Another local web page (its own origin on 127.0.0.1) makes the browser
  // post to the proxy and open a WebSocket to it. Chromium sends that page's
  // Origin; the proxy refuses both. The Rust suite checks from the logs that
  // neither reached the Console.
  const server = createServer((_, res) => {
    res.writeHead(200, { 'content-type': 'text/html' });
    res.end('<!doctype html><title>another page</title>');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const other = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const page = await newPage(browser, { ignoreHTTPSErrors: false });
  try {
    await page.goto(`${other}/`);
    const answer = await page.evaluate(
      async ({ url, ns, marker }) => {
        const post = await fetch(`${url}/api/namespaces/${ns}/runs/${marker}-page-post`, { method: 'POST', mode: 'no-cors', body: '{}' }).then(
          (r) => r.type,
          (e) => `error ${e}`,
        );
        const ws = await new Promise<string>((resolve) => {
          const s = new WebSocket(`${url.replace(/^http/, 'ws')}/v1/namespaces/${ns}/runs/${marker}-page-ws/00000000-0000-0000-0000-000000000000/operations:ws`);
          s.onopen = () => resolve('open');
          s.onerror = () => resolve('refused');
        });
        return { post, ws };
      },
      { url: cfg.url, ns: cfg.ns, marker: cfg.marker },
    );
    assert(answer.post === 'opaque' || answer.post.startsWith('error'), `the page read the answer: ${JSON.stringify(answer)}`);
    assert(answer.ws === 'refused', `the WebSocket opened: ${JSON.stringify(answer)}`);
  } finally {
    server.close();
  }
  await close(page);
});

