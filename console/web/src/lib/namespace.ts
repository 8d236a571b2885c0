import type { NamespaceList } from '../api/types';

/** The last namespace the user browsed, so `/` opens it again. Not a credential. */
const KEY = 'kruntimes.console.namespace';
const NAME = /^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/;

export function isNamespaceName(s: string): boolean {
  return NAME.test(s);
}

/** The namespace stored by the last visit, or null when none is remembered. */
export function rememberedNamespace(): string | null {
  try {
    const v = window.localStorage.getItem(KEY);
    if (v && isNamespaceName(v)) return v;
  } catch {
    /* storage disabled */
  }
  return null;
}

/**
 * Where `/` (and a login with no `next`) lands: the remembered namespace
 * while the caller may still read it, else the server's `home` (the
 * ServiceAccount's own namespace, or the first one the caller may list Runs
 * in), else whatever is remembered, else `default`.
 */
export function landingNamespace(remembered: string | null, list: NamespaceList | undefined): string {
  if (remembered) {
    const known = list && !list.summary ? list.items.find((i) => i.name === remembered) : undefined;
    const readable = !list || list.summary || (known !== undefined && known.readable !== false);
    if (readable) return remembered;
  }
  return list?.home ?? remembered ?? 'default';
}

/** The namespaces the selector offers: those the caller may read, when the server knows. */
export function offeredNamespaces(list: NamespaceList | undefined): string[] {
  return (list?.items ?? []).filter((i) => i.readable !== false).map((i) => i.name);
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
