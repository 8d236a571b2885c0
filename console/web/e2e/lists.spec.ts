// The Run list keeps page, sort and filters in the URL: columns sort, a
// name search filters on the server, Next and Previous are shareable links,
// and a reload (or a pasted URL) shows the same view.
import { assert, close, env, eventually, login, newPage, test } from './support';

const NS = env.ns;

test('lists: sort by column, name search and page in the URL, kept across a reload', async ({ browser }) => {
  const page = await newPage(browser);
  await login(page, env.viewer, 'viewer');
  await page.goto(`${env.url}/namespaces/${NS}/runs?labelSelector=app%3Ddemo`);
  const rows = page.locator('table.table tbody tr');
  await rows.first().waitFor();
  const names = () => rows.locator('td:first-child > a').allInnerTexts();

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
  const api = await page.evaluate(async (ns) => (await (await fetch(`/api/namespaces/${ns}/runs?name=build&labelSelector=app%3Ddemo`)).json()).items.map((r: { metadata: { name: string } }) => r.metadata.name) as string[], NS);
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

// The Runtime and Workflow Run lists: the same controls, in the URL.
for (const list of [
  { path: 'runtimes', search: 'pyth', only: 'python' },
  { path: 'workflowruns', search: 'security', only: 'release-1-4-security' },
]) {
  test(`lists: the ${list.path} list sorts, searches by name and pages in the URL, kept across a reload`, async ({ browser }) => {
    const page = await newPage(browser);
    await login(page, env.viewer, 'viewer');
    await page.goto(`${env.url}/namespaces/${NS}/${list.path}`);
    const rows = page.locator('table.table tbody tr');
    await rows.first().waitFor();
    const names = () => rows.locator('td:first-child > a').allInnerTexts();
    const nameHeader = page.locator('th', { has: page.getByRole('button', { name: /^Name/ }) });
    for (const [sort, mark] of [
      ['name', 'ascending'],
      ['-name', 'descending'],
    ]) {
      await nameHeader.getByRole('button').click();
      await eventually(`sort=${sort} in the URL`, () => new RegExp(`[?&]sort=${sort}(&|$)`).test(page.url()));
      await eventually(`the Name column marked ${mark}`, async () => (await nameHeader.getAttribute('aria-sort')) === mark);
      await eventually(`the rows sorted by name, ${mark}`, async () => {
        const shown = await names();
        const sorted = [...shown].sort();
        return shown.length >= 2 && JSON.stringify(shown) === JSON.stringify(mark === 'ascending' ? sorted : sorted.reverse());
      });
    }
    const descending = await names();
    await page.reload();
    await rows.first().waitFor();
    await eventually('the sort kept across a reload', async () => JSON.stringify(await names()) === JSON.stringify(descending));

    // The name search is done by the server: the API answers only matching names.
    await page.getByLabel('Name', { exact: true }).fill(list.search);
    await page.getByLabel('Name', { exact: true }).press('Enter');
    await eventually(`name=${list.search} in the URL`, () => new RegExp(`[?&]name=${list.search}(&|$)`).test(page.url()));
    await eventually(`only ${list.only}`, async () => JSON.stringify(await names()) === JSON.stringify([list.only]));
    const api = await page.evaluate(
      async ([ns, p, q]) => (await (await fetch(`/api/namespaces/${ns}/${p}?name=${q}`)).json()).items.map((o: { metadata: { name: string } }) => o.metadata.name) as string[],
      [NS, list.path, list.search],
    );
    assert(api.length >= 1 && api.every((n) => n.includes(list.search)), `the API name search answered ${api.join(', ')}`);
    const bad = await page.evaluate(async ([ns, p]) => (await fetch(`/api/namespaces/${ns}/${p}?phase=Running`)).status, [NS, list.path]);
    assert(bad === 400, `an unknown parameter answered ${bad}`);

    // One per page: Next and Previous are in the URL; a reload keeps the page.
    await page.goto(`${env.url}/namespaces/${NS}/${list.path}?limit=1`);
    await rows.first().waitFor();
    const first = await names();
    assert(first.length === 1, `limit=1 showed ${first.length} rows`);
    await page.getByRole('button', { name: 'Next →' }).click();
    await eventually('page 2 in the URL', async () => /[?&]cont=/.test(page.url()) && (await page.locator('.pager').innerText()).includes('Page 2'));
    await eventually('another object on page 2', async () => (await names())[0] !== first[0]);
    const second = await names();
    await page.reload();
    await rows.first().waitFor();
    await eventually('the same page 2 after a reload', async () => JSON.stringify(await names()) === JSON.stringify(second));
    assert((await page.getByRole('status').allInnerTexts()).some((t) => t.includes('only page 1 refreshes')), 'page 2 does not say it is a snapshot');
    await page.getByRole('button', { name: '← Previous' }).click();
    await eventually('page 1 again', async () => !/[?&]cont=/.test(page.url()) && JSON.stringify(await names()) === JSON.stringify(first));
    await close(page);
  });
}

test('lists: without a login the public Run list offers no label selector (summaries hide labels; the server refuses it)', async ({ browser }) => {
  const page = await newPage(browser);
  await page.goto(`${env.url}/namespaces/${NS}/runs`);
  await page.locator('table.table tbody tr').first().waitFor();
  await page.getByText('public summary', { exact: false }).first().waitFor();
  assert((await page.getByLabel('Label selector').count()) === 0, 'the public Run list shows a label selector box');
  await page.getByLabel('Name', { exact: true }).fill('build');
  await page.getByLabel('Name', { exact: true }).press('Enter');
  await eventually('name=build in the URL', () => /[?&]name=build(&|$)/.test(page.url()));
  await eventually('only build Runs', async () => {
    const n = await page.locator('table.table tbody tr td:first-child a').allInnerTexts();
    return n.length >= 1 && n.every((x) => x.includes('build'));
  });
  await close(page);
});
