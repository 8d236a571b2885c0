/** The last namespace the user browsed, so `/` opens it again. Not a credential. */
const KEY = 'kruntimes.console.namespace';
const NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function isNamespaceName(s: string): boolean {
  return NAME.test(s);
}

export function lastNamespace(): string {
  try {
    const v = window.localStorage.getItem(KEY);
    if (v && isNamespaceName(v)) return v;
  } catch {
    /* storage disabled */
  }
  return 'default';
}

export function rememberNamespace(ns: string): void {
  try {
    window.localStorage.setItem(KEY, ns);
  } catch {
    /* storage disabled */
  }
}

/** The section of a path under /namespaces/{ns}/ (runs, runtimes, workflowruns), for switching namespace. */
export function sectionOf(pathname: string): string {
  const m = /^\/namespaces\/[^/]+\/([^/]+)/.exec(pathname);
  const s = m?.[1];
  return s === 'runtimes' || s === 'workflowruns' ? s : 'runs';
}
