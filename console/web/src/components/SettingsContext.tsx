import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import {
  applySettings,
  browserStorage,
  readSettings,
  writeSettings,
  type Settings,
} from '../lib/settings';

interface SettingsValue {
  settings: Settings;
  /** False when the last change could not be stored (applies to this page only). */
  persisted: boolean;
  update(next: Partial<Settings>): void;
}

const SettingsCtx = createContext<SettingsValue | null>(null);

function prefersDark(): boolean {
  try {
    return window.matchMedia('(prefers-color-scheme: dark)').matches;
  } catch {
    return false;
  }
}

export function SettingsProvider({ children }: { children: ReactNode }) {
  const [settings, setSettings] = useState<Settings>(() => readSettings(browserStorage()));
  const [persisted, setPersisted] = useState(true);

  useEffect(() => {
    applySettings(document.documentElement, settings, prefersDark());
    if (settings.theme !== 'system') return;
    let mq: MediaQueryList;
    try {
      mq = window.matchMedia('(prefers-color-scheme: dark)');
    } catch {
      return;
    }
    const onChange = () => applySettings(document.documentElement, settings, mq.matches);
    mq.addEventListener('change', onChange);
    return () => mq.removeEventListener('change', onChange);
  }, [settings]);

  const update = useCallback((next: Partial<Settings>) => {
    setSettings((prev) => {
      const merged = { ...prev, ...next };
      setPersisted(writeSettings(browserStorage(), merged));
      return merged;
    });
  }, []);

  const value = useMemo(() => ({ settings, persisted, update }), [settings, persisted, update]);
  return <SettingsCtx.Provider value={value}>{children}</SettingsCtx.Provider>;
}

export function useSettings(): SettingsValue {
  const v = useContext(SettingsCtx);
  if (!v) throw new Error('useSettings outside SettingsProvider');
  return v;
}
