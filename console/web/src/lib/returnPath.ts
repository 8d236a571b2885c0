/**
 * The page to return to after a login (`/login?next=...`): only a path of
 * this Console is accepted, never another origin. Pure, no DOM.
 */

/**
 * `next` when it is a same-origin path (`/namespaces/a/runs/x?tab=1#L3`),
 * else null. Refused: anything not starting with exactly one `/` (absolute
 * URLs, schemes such as `javascript:`, protocol-relative `//host`), any
 * backslash (browsers read `/\host` as `//host`), control characters and
 * spaces (stripped or read differently by URL parsers), and `/login` itself.
 * Checked once more by resolving it against a dummy origin: the origin must
 * not change.
 */
export function safeReturnPath(next: string | null | undefined): string | null {
  if (!next || next.length > 2048) return null;
  if (!next.startsWith('/') || next.startsWith('//')) return null;
  if (next.includes('\\')) return null;
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u0020\u007f]/.test(next)) return null;
  let decoded: string;
  try {
    decoded = decodeURIComponent(next);
  } catch {
    return null;
  }
  // An encoded slash or backslash at the start still reads as another host to some routers.
  if (decoded.startsWith('//') || decoded.includes('\\')) return null;
  const base = 'https://console.invalid';
  let u: URL;
  try {
    u = new URL(next, base);
  } catch {
    return null;
  }
  if (u.origin !== base) return null;
  if (u.pathname === '/login' || u.pathname.startsWith('/login/')) return null;
  return u.pathname + u.search + u.hash;
}
