// The browser tests against a real Console (console/web/e2e, see README.md):
// @playwright/test over Debian's Chromium (CHROMIUM, default /usr/bin/chromium;
// no browser is downloaded). Projects:
//
//   parallel  tests that read the demo data or change only objects of their
//             own: every test on its own, on up to 2 workers
//   serial    tests that change what others read (the shared Session Run, the
//             gateway, the capacity of the demo Pods): one at a time, after
//             `parallel` (its teardown, so it runs even when a parallel test
//             failed)
//   sweeps    every page in every Style x Theme and at 390 px (axe and
//             screenshots of the demo data, which the tests above change):
//             one test per Style x Theme and width, on up to 2 workers. Its
//             own run, after the others: `npm run e2e:sweeps` (hack/e2e). A
//             teardown of `serial` it cannot be: Playwright then waits for
//             each before the other, and neither runs.
//   cluster   the core flow (e2e/cluster.spec.ts), any Console: `npm run e2e:cluster`
//   dashboard the dashboard proxy flow (e2e/dashboard.spec.ts): `npm run e2e:dashboard`
//
// E2E_ONLY=substring,... keeps the tests whose title holds one of them.
// E2E_RESULTS is where traces of failed tests go (default: a folder in the
// system's temporary directory); `npx playwright show-trace <zip>` opens one.
// E2E_WORKERS overrides the number of workers (default 2).
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defineConfig } from '@playwright/test';

const SERIAL = ['flows', 'defects', 'audit', 'logviewer', 'capacity'];
const SWEEPS = ['pages'];
const PARALLEL = ['logs', 'dag', 'yaml', 'timeline', 'engine', 'watch', 'lists', 'namespaces', 'kinds'];
const files = (names: string[]) => names.map((n) => `${n}.spec.ts`);

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const only = process.env.E2E_ONLY?.split(',').filter(Boolean);

export default defineConfig({
  testDir: 'e2e',
  outputDir: process.env.E2E_RESULTS ?? join(tmpdir(), 'kruntimes-console-e2e-results'),
  grep: only?.length ? new RegExp(only.map(escape).join('|')) : undefined,
  // A test bounds its own waits (eventually(), waitFor()); this only ends a hung one.
  timeout: 10 * 60_000,
  retries: 0,
  workers: Number(process.env.E2E_WORKERS ?? 2),
  forbidOnly: true,
  reporter: [['list'], ['./e2e/summary.ts']],
  use: {
    // Contexts the tests open themselves (e2e/support.ts newPage) are traced too.
    trace: 'retain-on-failure',
    launchOptions: {
      executablePath: process.env.CHROMIUM ?? '/usr/bin/chromium',
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
        '--no-first-run',
      ],
    },
  },
  projects: [
    { name: 'parallel', testMatch: files(PARALLEL), fullyParallel: true, teardown: 'serial' },
    { name: 'serial', testMatch: files(SERIAL), fullyParallel: false, workers: 1 },
    { name: 'sweeps', testMatch: files(SWEEPS), fullyParallel: true },
    { name: 'cluster', testMatch: 'cluster.spec.ts', workers: 1 },
    { name: 'dashboard', testMatch: 'dashboard.spec.ts', workers: 1 },
  ],
});
