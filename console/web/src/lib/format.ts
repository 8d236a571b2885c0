/** Small, pure formatting helpers for timestamps, ages, sizes. */

/** Compact age like `kubectl get`: 45s, 12m, 3h, 5d, 2y. */
export function age(timestamp: string | undefined, now: number = Date.now()): string {
  if (!timestamp) return '—';
  const t = Date.parse(timestamp);
  if (Number.isNaN(t)) return '—';
  let s = Math.max(0, Math.floor((now - t) / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  const d = Math.floor(h / 24);
  if (d < 730) return `${d}d`;
  s = Math.floor(d / 365);
  return `${s}y`;
}

/** Duration between two timestamps (or until now), like 1m 05s. */
export function duration(start?: string, end?: string, now: number = Date.now()): string {
  if (!start) return '—';
  const a = Date.parse(start);
  const b = end ? Date.parse(end) : now;
  if (Number.isNaN(a) || Number.isNaN(b)) return '—';
  const s = Math.max(0, Math.round((b - a) / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m ${String(s % 60).padStart(2, '0')}s`;
  const h = Math.floor(m / 60);
  return `${h}h ${String(m % 60).padStart(2, '0')}m`;
}

/** The zone of a local time as `UTC` or `UTC±HH:MM` (JavaScript's offset has the other sign). */
export function zoneOf(d: Date): string {
  const off = -d.getTimezoneOffset();
  if (off === 0) return 'UTC';
  const a = Math.abs(off);
  return `UTC${off > 0 ? '+' : '-'}${String(Math.floor(a / 60)).padStart(2, '0')}:${String(a % 60).padStart(2, '0')}`;
}

/** Local date-time, second precision, stable across locales, with its zone (YYYY-MM-DD HH:MM:SS UTC+01:00). */
export function dateTime(timestamp: string | undefined): string {
  if (!timestamp) return '—';
  const d = new Date(timestamp);
  if (Number.isNaN(d.getTime())) return timestamp;
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(
    d.getMinutes(),
  )}:${p(d.getSeconds())} ${zoneOf(d)}`;
}

/** "maxAttempts" → "Max attempts". */
function words(key: string): string {
  const w = key.replace(/([a-z0-9])([A-Z])/g, '$1 $2').replace(/[_-]+/g, ' ').toLowerCase();
  return w.charAt(0).toUpperCase() + w.slice(1);
}

/**
 * A JSON value (a Run's retry policy) as readable pairs: nested objects
 * flatten to "Backoff initial", lists join with commas.
 */
export function describeValue(value: unknown, prefix = ''): Array<[string, string]> {
  if (value === null || value === undefined) return [];
  if (typeof value !== 'object') return [[prefix || 'Value', String(value)]];
  if (Array.isArray(value)) {
    return [[prefix || 'Values', value.map((v) => (typeof v === 'object' && v !== null ? JSON.stringify(v) : String(v))).join(', ')]];
  }
  const out: Array<[string, string]> = [];
  for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
    const label = prefix ? `${prefix} ${words(k).toLowerCase()}` : words(k);
    out.push(...describeValue(v, label));
  }
  return out;
}

/** Log timestamp: ISO 8601 in UTC with milliseconds and its zone marker (2025-01-01 10:00:00.123Z). */
export function logTime(timestamp: string | undefined): string {
  if (!timestamp) return '';
  const d = new Date(timestamp);
  if (Number.isNaN(d.getTime())) return timestamp;
  return d.toISOString().replace('T', ' ');
}

export function bytes(n: number | undefined): string {
  if (n === undefined || !Number.isFinite(n)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = 0;
  while (v >= 1024 && i < units.length - 1) {
    v /= 1024;
    i++;
  }
  return i === 0 ? `${v} B` : `${v.toFixed(v < 10 ? 1 : 0)} ${units[i]}`;
}

/** Cuts text to `max` characters with an ellipsis; returns whether it was cut. */
export function bounded(text: string, max: number): { text: string; cut: boolean } {
  const single = text.replace(/\s+/g, ' ').trim();
  if (single.length <= max) return { text: single, cut: false };
  return { text: `${single.slice(0, Math.max(0, max - 1))}…`, cut: true };
}
