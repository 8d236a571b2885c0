// The log viewer a daily user trusts, against the real Console and the demo
// data (hack/demo seed): ANSI colours rendered and every other escape
// stripped, ::group:: folds, a failed Run opening at its first error, line
// numbers that do not change, copyable line links, the state at the top of
// the log, and the whole-log download.
import { join } from 'node:path';
import { STYLES, THEMES, assert, axeViolations, close, describeViolations, env, eventually, login, newPage, test } from './harness.mjs';

const NS = env.ns;
const FAILED = 'compile-failed';

async function openRun(page, run, hash = '') {
  await page.goto(`${env.url}/namespaces/${NS}/runs/${run}${hash}`);
  await page.getByRole('heading', { name: run, level: 1 }).waitFor();
  const logs = page.locator('#logs');
  await logs.locator('.log-line').first().waitFor();
  return logs;
}

/** Whether `el` is inside the visible part of the log's scroll area. */
const inView = (loc) =>
  loc.evaluate((el) => {
    const box = el.getBoundingClientRect();
    const area = el.closest('.log-scroll').getBoundingClientRect();
    return box.top >= area.top - 1 && box.bottom <= area.bottom + 1;
  });

test('log viewer: ANSI colours are rendered, other escapes stripped, never shown raw', async (browser) => {
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openRun(page, FAILED);
    const texts = await logs.locator('.log-line .msg').allInnerTexts();
    const raw = texts.filter((t) => t.includes(String.fromCharCode(27)) || /␛|\[\d+(;\d+)*m|\[2K|\[1G/.test(t));
    assert(raw.length === 0, `escape sequences are shown raw:\n${raw.join('\n')}`);
    // The red, bold ERROR of the stderr line: a class mapped to the theme's red, bold.
    const error = logs.locator('.log-line .msg span', { hasText: /^ERROR$/ });
    await error.waitFor();
    const look = await error.evaluate((el) => {
      const cs = getComputedStyle(el);
      const root = getComputedStyle(el.closest('.log-scroll'));
      return { cls: el.className, color: cs.color, weight: cs.fontWeight, red: root.getPropertyValue('--ansi-1').trim(), fg: getComputedStyle(el.closest('.msg')).color };
    });
    assert(/ansi-fg-1/.test(look.cls) && /ansi-bold/.test(look.cls), `ERROR has classes "${look.cls}"`);
    assert(Number(look.weight) >= 700, `ERROR is not bold (${look.weight})`);
    // The cursor movement before "linking" is gone; the underline and italic are drawn.
    const linking = logs.locator('.log-line .msg', { hasText: 'linking and checking' });
    assert((await linking.innerText()) === 'linking and checking', `the line reads ${JSON.stringify(await linking.innerText())}`);
    assert((await linking.locator('.ansi-underline', { hasText: 'linking' }).count()) === 1, '"linking" is not underlined');
    assert((await linking.locator('.ansi-italic', { hasText: 'checking' }).count()) === 1, '"checking" is not italic');
    // 256 colours and truecolour: exact colours, readable on the log's background (4.5:1).
    for (const word of ['warning', 'note']) {
      const ratio = await logs
        .locator('.log-line .msg span', { hasText: new RegExp(`^${word}$`) })
        .evaluate((el) => {
          const rgb = (s) => s.match(/[\d.]+/g).slice(0, 3).map(Number);
          const lum = ([r, g, b]) => {
            const c = (v) => ((v /= 255) <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
            return 0.2126 * c(r) + 0.7152 * c(g) + 0.0722 * c(b);
          };
          const [a, b] = [lum(rgb(getComputedStyle(el).color)), lum(rgb(getComputedStyle(el.closest('.log-scroll')).backgroundColor))];
          return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
        });
      assert(ratio >= 4.5, `"${word}" has a contrast of ${ratio.toFixed(2)} on the log background`);
    }
  } finally {
    await close(page);
  }
});

test('log viewer: ::group:: folds collapsed by default, with its line count, and a toggle', async (browser) => {
  const page = await newPage(browser);
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openRun(page, FAILED);
    const texts = await logs.locator('.log-line .msg').allInnerTexts();
    assert(!texts.some((t) => t.includes('::group::') || t.includes('::endgroup::')), `group markers are shown raw:\n${texts.join('\n')}`);
    const setup = logs.getByRole('button', { name: /Set up job/ });
    assert((await setup.innerText()).includes('(2 lines)'), `the group header reads ${JSON.stringify(await setup.innerText())}`);
    assert((await setup.getAttribute('aria-expanded')) === 'false', 'the group is not collapsed by default');
    assert((await logs.getByText('Runner: bash-pool-1').count()) === 0, 'a collapsed group shows its lines');
    await setup.click();
    await logs.getByText('Runner: bash-pool-1').waitFor();
    assert((await setup.getAttribute('aria-expanded')) === 'true', 'the toggle does not say the group is open');
    // The other group stays folded; the keyboard folds the first one again.
    assert((await logs.getByText('installed 12 packages').count()) === 0, 'the other group opened too');
    await setup.focus();
    await page.keyboard.press('Enter');
    await eventually('the group folded again', async () => (await logs.getByText('Runner: bash-pool-1').count()) === 0);
  } finally {
    await close(page);
  }
});

test('log viewer: a failed Run opens at its first error; "Jump to first error" goes there', async (browser) => {
  const page = await newPage(browser, { viewport: { width: 1360, height: 700 } });
  try {
    await login(page, env.viewer, 'viewer');
    const logs = await openRun(page, FAILED);
    const target = logs.locator('.log-line.jump-target');
    await target.waitFor();
    const text = await target.locator('.msg').innerText();
    assert(text.startsWith('error[E0308]'), `the log opened at ${JSON.stringify(text)}, not the first stderr record`);
    assert(await inView(target), 'the first error is not scrolled into view');
    await logs.locator('.log-scroll').evaluate((e) => (e.scrollTop = 0));
    await logs.getByRole('button', { name: 'Jump to first error' }).click();
    await eventually('the first error in view', async () => inView(logs.locator('.log-line.jump-target')));
    // A Run that did not fail offers no such jump.
    const ok = await openRun(page, 'test-succeeded');
    assert((await ok.getByRole('button', { name: 'Jump to first error' }).count()) === 0, 'a Succeeded Run offers "Jump to first error"');
  } finally {
    await close(page);
  }
});

test('log viewer: screenshots of colours and groups in every Style x Theme and at 390 px', async (browser) => {
  const problems = [];
  for (const style of STYLES) {
    for (const theme of THEMES) {
      for (const width of [1360, 390]) {
        const page = await newPage(browser, { style, theme, viewport: { width, height: 900 } });
        try {
          await login(page, env.viewer, 'viewer');
          const logs = await openRun(page, FAILED);
          await logs.getByRole('button', { name: /Install dependencies/ }).click();
          await logs.getByText('installed 12 packages').waitFor();
          await logs.scrollIntoViewIfNeeded();
          await page.screenshot({ path: join(env.shots, `log-colours--${style}-${theme}${width === 390 ? '--390' : ''}.png`), fullPage: false });
          const vs = (await axeViolations(page)).filter((v) => v.id === 'color-contrast');
          if (vs.length) problems.push(`${style}/${theme}/${width}: ${describeViolations(vs)}`);
        } finally {
          await close(page);
        }
      }
    }
  }
  assert(problems.length === 0, problems.join('\n'));
});
