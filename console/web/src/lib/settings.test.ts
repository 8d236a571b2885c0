import { readFileSync } from 'node:fs';
import { runInNewContext } from 'node:vm';
import { describe, expect, it } from 'vitest';
import {
  STYLE_KEY,
  THEME_KEY,
  applySettings,
  readSettings,
  resolveTheme,
  writeSettings,
  type SettingsStorage,
} from './settings';

function memoryStorage(init: Record<string, string> = {}): SettingsStorage & { data: Record<string, string> } {
  const data = { ...init };
  return {
    data,
    getItem: (k) => (k in data ? data[k]! : null),
    setItem: (k, v) => {
      data[k] = v;
    },
  };
}

const throwing: SettingsStorage = {
  getItem: () => {
    throw new Error('SecurityError');
  },
  setItem: () => {
    throw new Error('QuotaExceededError');
  },
};

describe('settings', () => {
  it('defaults to GitHub / System', () => {
    expect(readSettings(memoryStorage())).toEqual({ style: 'github', theme: 'system' });
    expect(readSettings(null)).toEqual({ style: 'github', theme: 'system' });
  });

  it('reads valid values', () => {
    const s = memoryStorage({ [STYLE_KEY]: 'neumorphism', [THEME_KEY]: 'dark' });
    expect(readSettings(s)).toEqual({ style: 'neumorphism', theme: 'dark' });
  });

  it('falls back independently for invalid values', () => {
    expect(readSettings(memoryStorage({ [STYLE_KEY]: 'Stripe', [THEME_KEY]: 'light' }))).toEqual({
      style: 'github',
      theme: 'light',
    });
    expect(readSettings(memoryStorage({ [STYLE_KEY]: 'stripe', [THEME_KEY]: 'sepia' }))).toEqual({
      style: 'stripe',
      theme: 'system',
    });
  });

  it('survives a storage that throws', () => {
    expect(readSettings(throwing)).toEqual({ style: 'github', theme: 'system' });
    expect(writeSettings(throwing, { style: 'stripe', theme: 'dark' })).toBe(false);
  });

  it('writes both keys', () => {
    const s = memoryStorage();
    expect(writeSettings(s, { style: 'stripe', theme: 'light' })).toBe(true);
    expect(s.data).toEqual({ [STYLE_KEY]: 'stripe', [THEME_KEY]: 'light' });
  });

  it('resolves System from the colour-scheme preference', () => {
    expect(resolveTheme('system', true)).toBe('dark');
    expect(resolveTheme('system', false)).toBe('light');
    expect(resolveTheme('light', true)).toBe('light');
  });

  it('applies data attributes', () => {
    const attrs: Record<string, string> = {};
    applySettings({ setAttribute: (k, v) => (attrs[k] = v) }, { style: 'stripe', theme: 'system' }, true);
    expect(attrs).toEqual({ 'data-style': 'stripe', 'data-theme-pref': 'system', 'data-theme': 'dark' });
  });
});

describe('public/theme-init.js (runs before React)', () => {
  const script = readFileSync(new URL('../../public/theme-init.js', import.meta.url), 'utf8');

  function runInit(storage: SettingsStorage | 'throws', prefersDark: boolean): Record<string, string> {
    const attrs: Record<string, string> = {};
    const window = {
      get localStorage() {
        if (storage === 'throws') throw new Error('SecurityError');
        return storage;
      },
      matchMedia: () => ({ matches: prefersDark }),
    };
    const document = { documentElement: { setAttribute: (k: string, v: string) => (attrs[k] = v) } };
    runInNewContext(script, { window, document });
    return attrs;
  }

  it('agrees with readSettings + applySettings', () => {
    const cases: Array<Record<string, string>> = [
      {},
      { [STYLE_KEY]: 'stripe', [THEME_KEY]: 'dark' },
      { [STYLE_KEY]: 'neumorphism', [THEME_KEY]: 'system' },
      { [STYLE_KEY]: 'bogus', [THEME_KEY]: '' },
    ];
    for (const c of cases) {
      for (const dark of [true, false]) {
        const expected: Record<string, string> = {};
        applySettings({ setAttribute: (k, v) => (expected[k] = v) }, readSettings(memoryStorage(c)), dark);
        expect(runInit(memoryStorage(c), dark)).toEqual(expected);
      }
    }
  });

  it('falls back when storage throws', () => {
    expect(runInit('throws', false)).toEqual({
      'data-style': 'github',
      'data-theme-pref': 'system',
      'data-theme': 'light',
    });
  });
});
