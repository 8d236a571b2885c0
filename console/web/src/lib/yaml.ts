/**
 * A small YAML writer for JSON values (what the YAML view shows): block
 * maps and sequences, plain scalars where YAML reads them back as the same
 * string, double-quoted (JSON) strings everywhere else. Keys keep their order.
 */

const RESERVED = /^(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|y|Y|n|N)$/;
const NUMBER = /^[-+]?(?:\.?[0-9][0-9_]*(?:\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?|0x[0-9a-fA-F]+|0o[0-7]+|\.inf|\.Inf|\.nan|\.NaN)$/;

/** Whether `s` can be written unquoted and still read back as this string. */
export function isPlain(s: string): boolean {
  if (s === '' || s.trim() !== s) return false;
  if (RESERVED.test(s) || NUMBER.test(s)) return false;
  if (/^[-?:,[\]{}#&*!|>'"%@`]/.test(s)) return false;
  if (/[\n\r\t]|: |:$| #/.test(s)) return false;
  // Control characters and anything outside printable ASCII are quoted.
  return /^[\x20-\x7e]+$/.test(s);
}

function scalar(v: unknown): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'string') return isPlain(v) ? v : JSON.stringify(v);
  if (typeof v === 'number' || typeof v === 'boolean') return String(v);
  return JSON.stringify(v);
}

function isCollection(v: unknown): v is Record<string, unknown> | unknown[] {
  return typeof v === 'object' && v !== null && (Array.isArray(v) ? v.length > 0 : Object.keys(v).length > 0);
}

function emptyOrScalar(v: unknown): string {
  if (Array.isArray(v)) return '[]';
  if (typeof v === 'object' && v !== null) return '{}';
  return scalar(v);
}

function block(v: Record<string, unknown> | unknown[], indent: number, out: string[]): void {
  const pad = ' '.repeat(indent);
  if (Array.isArray(v)) {
    for (const item of v) {
      if (isCollection(item)) {
        const inner: string[] = [];
        block(item, indent + 2, inner);
        // The first line of the item goes after "- ".
        out.push(`${pad}- ${inner[0]!.slice(indent + 2)}`, ...inner.slice(1));
      } else {
        out.push(`${pad}- ${emptyOrScalar(item)}`);
      }
    }
    return;
  }
  for (const [k, item] of Object.entries(v)) {
    const key = isPlain(k) ? k : JSON.stringify(k);
    if (isCollection(item)) {
      out.push(`${pad}${key}:`);
      // Sequences inside maps are indented like kubectl writes them.
      block(item, indent + 2, out);
    } else {
      out.push(`${pad}${key}: ${emptyOrScalar(item)}`);
    }
  }
}

/** `value` as a YAML document (ending in a newline). */
export function toYaml(value: unknown): string {
  if (!isCollection(value)) return `${emptyOrScalar(value)}\n`;
  const out: string[] = [];
  block(value, 0, out);
  return `${out.join('\n')}\n`;
}
