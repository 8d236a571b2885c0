import { useId } from 'react';
import { PageHeader, Panel } from '../components/Page';
import { useSettings } from '../components/SettingsContext';
import { STYLES, STYLE_LABELS, THEMES, THEME_LABELS, type StyleName, type ThemePref } from '../lib/settings';
import './Settings.css';

const STYLE_NOTES: Record<StyleName, string> = {
  github: 'Restrained Primer colours, 6px corners, green primary actions. The default.',
  stripe: 'Fine borders, layered soft shadows, 12px panels and a purple accent on a light grid.',
  neumorphism: 'One material for every surface, with raised and pressed double shadows.',
};

const THEME_NOTES: Record<ThemePref, string> = {
  light: 'Always light.',
  dark: 'Always dark.',
  system: 'Follows the colour preference of your browser or operating system.',
};

export function SettingsPage() {
  const { settings, persisted, update } = useSettings();
  const id = useId();
  return (
    <>
      <PageHeader title="Settings" />
      {!persisted && (
        <p className="notice warning" role="status">
          Browser storage is not available, so this choice applies to this page only and is forgotten on reload.
        </p>
      )}
      <div className="stack">
        <Panel title="Style">
          <fieldset className="choice-group">
            <legend className="visually-hidden">Style</legend>
            {STYLES.map((s) => (
              <label key={s} className={`choice ${settings.style === s ? 'selected' : ''}`}>
                <input
                  type="radio"
                  name={`${id}-style`}
                  value={s}
                  checked={settings.style === s}
                  onChange={() => update({ style: s })}
                />
                <span className={`swatch swatch-${s}`} aria-hidden="true">
                  <span />
                  <span />
                  <span />
                </span>
                <span className="choice-text">
                  <span className="choice-title">{STYLE_LABELS[s]}</span>
                  <span className="choice-note">{STYLE_NOTES[s]}</span>
                </span>
              </label>
            ))}
          </fieldset>
        </Panel>
        <Panel title="Theme">
          <fieldset className="choice-group">
            <legend className="visually-hidden">Theme</legend>
            {THEMES.map((t) => (
              <label key={t} className={`choice ${settings.theme === t ? 'selected' : ''}`}>
                <input
                  type="radio"
                  name={`${id}-theme`}
                  value={t}
                  checked={settings.theme === t}
                  onChange={() => update({ theme: t })}
                />
                <span className="choice-text">
                  <span className="choice-title">{THEME_LABELS[t]}</span>
                  <span className="choice-note">{THEME_NOTES[t]}</span>
                </span>
              </label>
            ))}
          </fieldset>
          <p className="muted prose small">
            Motion follows your system&rsquo;s &ldquo;reduce motion&rdquo; setting: when it is on, hover lifts, press
            effects and transitions are turned off in every style.
          </p>
        </Panel>
      </div>
    </>
  );
}
