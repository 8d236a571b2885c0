// The sanitized YAML view: the demo Runs were created with `kubectl apply`
// (so they carry managed fields and a last-applied annotation that embeds
// their env) and have a literal env value and a secretKeyRef; none of that
// reaches the page or the API answer, and the copy buttons hold the kubectl
// commands.
import { api, assert, close, env, getJson, login, newPage, test } from './support';

const NS = env.ns;
const SECRETS = ['s3cr3t-literal-value', 'demo-credentials', 'managedFields', 'last-applied-configuration', 'password'];

test('yaml: the YAML view of a Run never contains an env value, managed fields or secret references; copy buttons give kubectl commands', async ({ browser }) => {
  // The answer itself, as the API returns it.
  const ctx = await api(env.viewer);
  for (const path of [`/api/namespaces/${NS}/runs/build-running/manifest`, `/api/namespaces/${NS}/runtimes/bash/manifest`, `/api/namespaces/${NS}/workflowruns/release-1-4/manifest`]) {
    const m = await getJson(ctx, path);
    const text = JSON.stringify(m.object);
    for (const s of SECRETS) assert(!text.includes(s), `${path} contains ${s}`);
    assert(m.object.metadata?.name, `${path} has no metadata.name`);
  }
  const run = await getJson(ctx, `/api/namespaces/${NS}/runs/build-running/manifest`);
  assert(run.hidden.includes('metadata.managedFields'), `managedFields not reported hidden: ${run.hidden.join(', ')}`);
  await ctx.dispose();

  const page = await newPage(browser);
  await page.context().grantPermissions(['clipboard-read', 'clipboard-write'], { origin: env.url });
  await login(page, env.viewer, 'viewer');
  await page.goto(`${env.url}/namespaces/${NS}/runs/build-running`);
  const panel = page.locator('#yaml');
  await panel.getByRole('button', { name: 'Show YAML' }).click();
  const yaml = panel.locator('pre.yaml');
  await yaml.waitFor();
  const text = await yaml.innerText();
  assert(text.includes('kind: Run') && text.includes('name: build-running'), `not the Run's YAML:\n${text.slice(0, 400)}`);
  assert(text.includes('- name: DEMO_SECRET_LITERAL') && text.includes('- name: DEMO_SECRET_REF'), `env names are missing:\n${text}`);
  assert(text.includes('(hidden by the Console)'), 'hidden values are not marked');
  for (const s of SECRETS) assert(!text.includes(s), `the YAML view contains ${s}`);

  const cmds = await panel.locator('.kubectl-cmds code').allInnerTexts();
  const get = `kubectl -n ${NS} get runs.kruntimes.io build-running -o yaml`;
  const log = `kubectl get --raw /apis/logs.kruntimes.io/v1alpha1/namespaces/${NS}/runs/build-running/log`;
  assert(JSON.stringify(cmds) === JSON.stringify([get, log]), `commands ${JSON.stringify(cmds)}`);
  await panel.getByRole('button', { name: 'Copy the get command' }).click();
  await panel.getByRole('button', { name: 'Copy the get command' }).filter({ hasText: 'Copied' }).waitFor();
  assert((await page.evaluate(() => navigator.clipboard.readText())) === get, 'the clipboard does not hold the get command');
  await panel.getByRole('button', { name: 'Copy the YAML' }).click();
  const copied = await page.evaluate(() => navigator.clipboard.readText());
  assert(copied === text.replace(/\n?$/, '\n') || copied.trim() === text.trim(), 'the copied YAML is not what is shown');

  // A WorkflowRun and a Runtime have the view too (no log command).
  await page.goto(`${env.url}/namespaces/${NS}/workflowruns/release-1-4`);
  await page.locator('#yaml').getByRole('button', { name: 'Show YAML' }).click();
  await page.locator('#yaml pre.yaml', { hasText: 'kind: WorkflowRun' }).waitFor();
  assert((await page.locator('#yaml .kubectl-cmds code').count()) === 1, 'a WorkflowRun offers a log command');
  await page.goto(`${env.url}/namespaces/${NS}/runtimes/bash`);
  await page.locator('#yaml').getByRole('button', { name: 'Show YAML' }).click();
  await page.locator('#yaml pre.yaml', { hasText: 'kind: Runtime' }).waitFor();
  await close(page);
});
