/**
 * Pure state of the Session panel: its entries (one updating progress line
 * per operation), the command history the arrow keys walk, the text "Copy
 * output" copies, and a command placeholder that fits the Runtime.
 */
import type { ParsedFrame } from './session';

export type Entry =
  | { kind: 'command'; text: string }
  | { kind: 'event'; frame: ParsedFrame; text?: string }
  | { kind: 'transport'; tone: 'info' | 'error'; text: string };

const isProgress = (e: Entry) => e.kind === 'event' && e.frame.type === 'progress';

/**
 * Appends `e`. A progress event replaces the operation's previous progress
 * line (everything after its command), which moves to the end: one line
 * that updates, not a pile of duplicates.
 */
export function appendEntry(entries: readonly Entry[], e: Entry): Entry[] {
  if (!isProgress(e)) return [...entries, e];
  let start = entries.length;
  while (start > 0 && entries[start - 1]!.kind !== 'command') start--;
  const out = entries.filter((x, i) => i < start || !isProgress(x));
  out.push(e);
  return out;
}

/** The operation's output as text, as it was written (stdout and stderr in order). */
export function outputText(entries: readonly Entry[]): string {
  let out = '';
  for (const e of entries) {
    if (e.kind === 'command') out += `$ ${e.text}\n`;
    else if (e.kind === 'event' && e.frame.type === 'output') out += e.text ?? '';
    else if (e.kind === 'event' && e.frame.type === 'terminal') {
      const f = e.frame;
      if (!out.endsWith('\n') && out) out += '\n';
      out += `[${f.status}${f.exitCode !== undefined ? `, exit code ${f.exitCode}` : ''}]\n`;
    }
  }
  return out;
}

/** Commands run in this panel, newest last; the arrow keys walk them like a shell's history. */
export class CommandHistory {
  private items: string[] = [];
  /** Position while walking: items.length means "the line being typed". */
  private at = 0;
  private draft = '';

  constructor(private readonly max = 50) {}

  get list(): readonly string[] {
    return this.items;
  }

  /** Records a command that was run; walking starts again from the newest. */
  push(command: string): void {
    const c = command.trim();
    if (!c) return;
    if (this.items[this.items.length - 1] !== c) this.items.push(c);
    if (this.items.length > this.max) this.items.splice(0, this.items.length - this.max);
    this.at = this.items.length;
    this.draft = '';
  }

  /** One older command (ArrowUp), keeping `current` as the draft to come back to; null at the oldest. */
  older(current: string): string | null {
    if (this.at === 0 || this.items.length === 0) return null;
    if (this.at === this.items.length) this.draft = current;
    this.at--;
    return this.items[this.at]!;
  }

  /** One newer command (ArrowDown); past the newest, the draft; null when not walking. */
  newer(): string | null {
    if (this.at >= this.items.length) return null;
    this.at++;
    return this.at === this.items.length ? this.draft : this.items[this.at]!;
  }
}

/** An example command for the Runtime's name: a Python one only where Python is likely there. */
export function commandPlaceholder(runtime: string): string {
  const r = runtime.toLowerCase();
  if (/py(thon)?/.test(r)) return 'python -c "print(42)"';
  if (/node|js|deno|bun/.test(r)) return 'node -e "console.log(42)"';
  return 'echo hello';
}
