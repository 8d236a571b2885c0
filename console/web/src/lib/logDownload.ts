/**
 * Downloads of a Run's log: the lines loaded in the viewer, or its whole log
 * read page by page (500 records a page, oldest first) and streamed to a
 * file, never held as one string: with the File System Access API a
 * writable file stream takes each page; without it each page becomes a Blob
 * (Blob storage is outside the JavaScript heap) and one Blob made of the
 * parts is saved at the end.
 */
import { getRunLogTail } from '../api/client';
import { ApiError } from '../api/errors';
import type { CursorRecord, CursorRunLog } from '../api/logTypes';

export type LogFormat = 'text' | 'ndjson';

/** Records a page of the whole-log download reads. */
export const PAGE = 500;

/** One record as a line of the file: the viewer's text (with its time when asked for), or the record's JSON. */
export function recordLine(r: CursorRecord, format: LogFormat, timestamps: boolean): string {
  if (format === 'ndjson') return `${JSON.stringify(r)}\n`;
  let out = timestamps && r.time ? `${r.time} ` : '';
  out += r.stream === 'stderr' ? `[stderr] ${r.message}` : r.message;
  return `${out}\n`;
}

export function pageText(records: readonly CursorRecord[], format: LogFormat, timestamps: boolean): string {
  let out = '';
  for (const r of records) out += recordLine(r, format, timestamps);
  return out;
}

export function fileName(ns: string, run: string, format: LogFormat): string {
  return `${ns}_${run}.${format === 'ndjson' ? 'ndjson' : 'log'}`;
}

const lastCursor = (rs: readonly CursorRecord[]) => rs[rs.length - 1]?.cursor;

/** Where pages go. */
export interface LogSink {
  write(text: string): Promise<void>;
  close(): Promise<void>;
  abort(): Promise<void>;
}

/** A sink that keeps each page as a Blob and saves one Blob of the parts (an `<a download>` click) on close. */
export function blobSink(name: string, type: string): LogSink {
  let parts: Blob[] = [];
  return {
    write: async (text) => {
      parts.push(new Blob([text], { type }));
    },
    close: async () => {
      saveBlob(new Blob(parts, { type }), name);
      parts = [];
    },
    abort: async () => {
      parts = [];
    },
  };
}

/** Saves a Blob as a file through a temporary object URL. */
export function saveBlob(blob: Blob, name: string): void {
  const url = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = url;
  a.download = name;
  document.body.appendChild(a);
  a.click();
  a.remove();
  window.setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

interface SaveFilePickerWindow {
  showSaveFilePicker?: (options: {
    suggestedName?: string;
    types?: Array<{ description: string; accept: Record<string, string[]> }>;
  }) => Promise<{ createWritable: () => Promise<{ write: (data: string) => Promise<void>; close: () => Promise<void>; abort: () => Promise<void> }> }>;
}

/**
 * A sink writing to a file the user picks (File System Access API), or
 * null when the browser has none; throws an AbortError when the user
 * cancels the picker. Call it from the click itself (the picker needs the
 * user's gesture).
 */
export async function pickFileSink(name: string, format: LogFormat): Promise<LogSink | null> {
  const w = window as unknown as SaveFilePickerWindow;
  if (typeof w.showSaveFilePicker !== 'function') return null;
  const handle = await w.showSaveFilePicker({
    suggestedName: name,
    types: [
      format === 'ndjson'
        ? { description: 'NDJSON log records', accept: { 'application/x-ndjson': ['.ndjson'] } }
        : { description: 'Log text', accept: { 'text/plain': ['.log', '.txt'] } },
    ],
  });
  const file = await handle.createWritable();
  return { write: (t) => file.write(t), close: () => file.close(), abort: () => file.abort() };
}

/** The Run's first page (its oldest records), on a server that does not know `fromStart`: the tail, then pages back until the start. */
async function oldestPage(ns: string, run: string, signal: AbortSignal): Promise<{ log: CursorRunLog; walked: boolean }> {
  let log = await getRunLogTail(ns, run, PAGE);
  let walked = false;
  while (log.truncated && log.records[0]?.cursor && !signal.aborted) {
    const before = await getRunLogTail(ns, run, { tail: PAGE, beforeCursor: log.records[0].cursor });
    if (before.records.length === 0) break;
    log = before;
    walked = true;
  }
  return { log, walked };
}

export interface WholeLogResult {
  records: number;
  /** Records without cursors stopped the paging (an older server): the file holds only the first page. */
  incomplete: boolean;
}

/**
 * Reads the Run's whole log, oldest first, and writes each page to `sink`:
 * `fromStart=true&tailLines=500`, then `sinceCursor=<last>&tailLines=500`
 * until an answer is not truncated. A server without `fromStart` (400) is
 * read from its tail back to the start first. `onProgress` is told the
 * records written so far. Aborting `signal` stops it (the sink is aborted).
 */
export async function downloadWholeLog(
  ns: string,
  run: string,
  sink: LogSink,
  { format, timestamps, signal, onProgress }: { format: LogFormat; timestamps: boolean; signal: AbortSignal; onProgress: (records: number) => void },
): Promise<WholeLogResult> {
  let written = 0;
  const put = async (records: readonly CursorRecord[]) => {
    if (records.length === 0) return;
    await sink.write(pageText(records, format, timestamps));
    written += records.length;
    onProgress(written);
  };
  try {
    let log: CursorRunLog;
    // More records follow the first page: `truncated` of a fromStart read says so; after a walk back they always may.
    let more: boolean;
    try {
      log = await getRunLogTail(ns, run, { tail: PAGE, fromStart: true });
      more = log.truncated;
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 400)) throw e;
      const oldest = await oldestPage(ns, run, signal);
      log = oldest.log;
      more = oldest.walked;
    }
    let incomplete = false;
    for (;;) {
      if (signal.aborted) throw new DOMException('cancelled', 'AbortError');
      await put(log.records);
      if (!more) break;
      const since = lastCursor(log.records);
      if (!since) {
        incomplete = log.records.length > 0;
        break;
      }
      log = await getRunLogTail(ns, run, { tail: PAGE, sinceCursor: since });
      more = log.truncated && log.records.length > 0;
    }
    if (signal.aborted) throw new DOMException('cancelled', 'AbortError');
    await sink.close();
    return { records: written, incomplete };
  } catch (e) {
    await sink.abort().catch(() => undefined);
    throw e;
  }
}
