/**
 * Style × Theme preferences. Stored in localStorage under two keys, applied
 * to <html> as data attributes (`data-style`, `data-theme`,
 * `data-theme-pref`). `public/theme-init.js` repeats `readSettings` +
 * `applySettings` before React loads; keep the two in step.
 */

export const STYLES = ['github', 'stripe', 'neumorphism'] as const;
export type StyleName = (typeof STYLES)[number];

export const THEMES = ['light', 'dark', 'system'] as const;
export type ThemePref = (typeof THEMES)[number];

export type ResolvedTheme = 'light' | 'dark';

export const STYLE_KEY = 'kruntimes.console.style';
export const THEME_KEY = 'kruntimes.console.theme';

export const DEFAULT_STYLE: StyleName = 'github';
export const DEFAULT_THEME: ThemePref = 'system';

export const STYLE_LABELS: Record<StyleName, string> = {
  github: 'GitHub',
  stripe: 'Stripe-inspired',
  neumorphism: 'Neumorphism',
};

export const THEME_LABELS: Record<ThemePref, string> = {
  light: 'Light',
  dark: 'Dark',
  system: 'System',
};

export interface Settings {
  style: StyleName;
  theme: ThemePref;
}

/** The part of `Storage` used here; any of it may throw (disabled storage, quota). */
export type SettingsStorage = Pick<Storage, 'getItem' | 'setItem'>;

export function parseStyle(value: unknown): StyleName {
  return typeof value === 'string' && (STYLES as readonly string[]).includes(value)
    ? (value as StyleName)
    : DEFAULT_STYLE;
}

export function parseTheme(value: unknown): ThemePref {
  return typeof value === 'string' && (THEMES as readonly string[]).includes(value)
    ? (value as ThemePref)
    : DEFAULT_THEME;
}

function safeGet(storage: SettingsStorage | null, key: string): string | null {
  if (!storage) return null;
  try {
    return storage.getItem(key);
  } catch {
    return null;
  }
}

/** Reads both preferences; invalid or unreadable values fall back to GitHub / System. */
export function readSettings(storage: SettingsStorage | null): Settings {
  return {
    style: parseStyle(safeGet(storage, STYLE_KEY)),
    theme: parseTheme(safeGet(storage, THEME_KEY)),
  };
}

/**
 * Stores the preferences. Returns false when storage is unavailable or throws;
 * the caller still applies the new values to the current page.
 */
export function writeSettings(storage: SettingsStorage | null, s: Settings): boolean {
  if (!storage) return false;
  try {
    storage.setItem(STYLE_KEY, s.style);
    storage.setItem(THEME_KEY, s.theme);
    return true;
  } catch {
    return false;
  }
}

export function resolveTheme(pref: ThemePref, prefersDark: boolean): ResolvedTheme {
  if (pref === 'system') return prefersDark ? 'dark' : 'light';
  return pref;
}

/** The minimal element surface applySettings needs (lets tests pass a fake). */
export interface AttributeTarget {
  setAttribute(name: string, value: string): void;
}

export function applySettings(root: AttributeTarget, s: Settings, prefersDark: boolean): void {
  root.setAttribute('data-style', s.style);
  root.setAttribute('data-theme-pref', s.theme);
  root.setAttribute('data-theme', resolveTheme(s.theme, prefersDark));
}

/** `window.localStorage`, or null when merely touching it throws (sandboxed iframes, privacy modes). */
export function browserStorage(): SettingsStorage | null {
  try {
    return window.localStorage;
  } catch {
    return null;
  }
}
