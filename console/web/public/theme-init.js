/*
 * Applies the stored Style and Theme to <html> before React renders, so the
 * first paint already has the right colours. Mirrors src/lib/settings.ts:
 * unknown values fall back to GitHub / System, and a storage that throws is
 * treated as empty. Loaded as an external file because the Console's CSP
 * forbids inline script.
 */
(function () {
  var STYLES = ['github', 'stripe', 'neumorphism'];
  var THEMES = ['light', 'dark', 'system'];
  function read(key) {
    try {
      return window.localStorage.getItem(key);
    } catch (e) {
      return null;
    }
  }
  var style = read('kruntimes.console.style');
  var theme = read('kruntimes.console.theme');
  if (STYLES.indexOf(style) < 0) style = 'github';
  if (THEMES.indexOf(theme) < 0) theme = 'system';
  var dark = false;
  if (theme === 'dark') dark = true;
  else if (theme === 'system') {
    try {
      dark = window.matchMedia('(prefers-color-scheme: dark)').matches;
    } catch (e) {
      dark = false;
    }
  }
  var root = document.documentElement;
  root.setAttribute('data-style', style);
  root.setAttribute('data-theme-pref', theme);
  root.setAttribute('data-theme', dark ? 'dark' : 'light');
})();
