// Where a login lands (defect 2): a namespace the token can read, never a
// Forbidden page in `default`; the selector offers the readable namespaces.
import { assert, close, env, eventually, login, newPage, test } from './support';

test('namespaces: after login with nothing remembered the viewer lands in a namespace it may read', async ({ browser }) => {
  const page = await newPage(browser);
  await page.goto(`${env.url}/login`);
  const help = await page.locator('.login-help').innerText();
  assert(!/-n default\b/.test(help), `the login help still names the default namespace:\n${help}`);
  assert(help.includes('create token'), `the login help has no create token line:\n${help}`);
  await login(page, env.viewer, 'viewer');
  await eventually('the viewer to land on team-a Runs', () => page.url().endsWith('/namespaces/team-a/runs'));
  await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
  await page.locator('table.table tbody tr').first().waitFor();
  assert((await page.locator('.state-forbidden').count()) === 0, 'the landing page is Forbidden');
  // The selector offers team-a and nothing the viewer cannot read.
  const offered = await eventually('the namespace suggestions', async () => {
    const v = await page.locator('.ns-select datalist option').evaluateAll((os) => os.map((o) => (o as HTMLOptionElement).value));
    return v.length ? v : null;
  });
  assert(JSON.stringify(offered) === JSON.stringify(['team-a']), `offered namespaces ${JSON.stringify(offered)}`);
  await close(page);
});

test('namespaces: a remembered namespace the viewer may not read gives way to a readable one at /', async ({ browser }) => {
  const page = await newPage(browser);
  await page.goto(`${env.url}/namespaces/team-b/runs`);
  await page.getByRole('heading', { name: 'Runs', level: 1 }).waitFor();
  const remembered = await page.evaluate(() => localStorage.getItem('kruntimes.console.namespace'));
  assert(remembered === 'team-b', `team-b was not remembered (${remembered})`);
  await login(page, env.viewer, 'viewer');
  await eventually('the viewer to land on team-a Runs', () => page.url().endsWith('/namespaces/team-a/runs'));
  // The remembered namespace stays where the caller may read it.
  await page.goto(`${env.url}/`);
  await eventually('/ to open team-a again', () => page.url().endsWith('/namespaces/team-a/runs'));
  await close(page);
});
