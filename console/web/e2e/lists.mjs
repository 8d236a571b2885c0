// The Run list keeps page, sort and filters in the URL: columns sort, a
// name search filters on the server, Next and Previous are shareable links,
// and a reload (or a pasted URL) shows the same view.
import { assert, close, env, eventually, login, newPage, test } from './harness.mjs';

const NS = env.ns;

test('lists: sort by column, name search and page in the URL, kept across a reload', async (browser) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  await page.goto(`${env.url}/namespaces/${NS}/runs?labelSelector=app%3Ddemo`);
  const rows = page.locator('table.table tbody tr');
  await rows.first().waitFor();
  const names = () => rows.locator('td:first-child a').allInnerTexts();

  // Sort by name descending (two clicks), read back from the URL after a reload.
  const nameHeader = page.locator('th', { has: page.getByRole('button', { name: /^Name/ }) });
  await nameHeader.getByRole('button').click();
  await eventually('sort=name in the URL', () => /[?&]sort=name(&|$)/.test(page.url()));
  await nameHeader.getByRole('button').click();
  await eventually('sort=-name in the URL', () => /[?&]sort=-name(&|$)/.test(page.url()));
  // The URL changes first; the table renders from it a moment later.
  await eventually('the Name column marked descending', async () => (await nameHeader.getAttribute('aria-sort')) === 'descending');
  let shown = [];
  await eventually('the rows sorted by name descending', async () => {
    shown = await names();
    return shown.length >= 2 && JSON.stringify(shown) === JSON.stringify([...shown].sort().reverse());
  });
  await page.reload();
  await rows.first().waitFor();
  shown = await names();
  assert(JSON.stringify(shown) === JSON.stringify([...shown].sort().reverse()), `the sort did not survive a reload: ${shown.join(', ')}`);

  // Name search (server side): only names containing "build".
  await page.getByLabel('Name', { exact: true }).fill('build');
  await page.getByLabel('Name', { exact: true }).press('Enter');
  await eventually('name=build in the URL', () => /[?&]name=build(&|$)/.test(page.url()));
  await eventually('only build Runs', async () => {
    const n = await names();
    return n.length >= 3 && n.every((x) => x.includes('build'));
  });
  const api = await page.evaluate(async (ns) => (await (await fetch(`/api/namespaces/${ns}/runs?name=build&labelSelector=app%3Ddemo`)).json()).items.map((r) => r.metadata.name), NS);
  assert(api.length >= 3 && api.every((n) => n.includes('build')), `the API name search answered ${api.join(', ')}`);

  // Pages (one Run per page here): Next and Previous are in the URL, a reload keeps the page, Back returns.
  await page.goto(`${env.url}/namespaces/${NS}/runs?labelSelector=app%3Ddemo&limit=1`);
  await rows.first().waitFor();
  const first = await names();
  await page.getByRole('button', { name: 'Next →' }).click();
  await eventually('page 2 in the URL', async () => /[?&]cont=/.test(page.url()) && (await page.locator('.pager').innerText()).includes('Page 2'));
  await eventually('another Run on page 2', async () => (await names())[0] !== first[0]);
  const second = await names();
  await page.reload();
  await rows.first().waitFor();
  assert((await page.locator('.pager').innerText()).includes('Page 2'), 'the page did not survive a reload');
  await eventually('the same Runs on page 2 after a reload', async () => JSON.stringify(await names()) === JSON.stringify(second));
  await page.getByRole('button', { name: '← Previous' }).click();
  await eventually('page 1', async () => (await page.locator('.pager').innerText()).includes('Page 1') && !/[?&]cont=/.test(page.url()));
  await eventually('the first page again', async () => JSON.stringify(await names()) === JSON.stringify(first));
  await page.goBack();
  await eventually('Back to page 2', async () => (await page.locator('.pager').innerText()).includes('Page 2'));
  await close(page);
});
