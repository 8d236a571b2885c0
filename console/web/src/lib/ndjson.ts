/**
 * Incremental NDJSON splitter: feed it decoded text chunks, get back complete
 * lines. A partial trailing line is kept until its newline arrives.
 */
export class NdjsonSplitter {
  private buffer = '';

  /** Returns the complete, non-empty lines contained in `chunk` plus what was buffered. */
  push(chunk: string): string[] {
    this.buffer += chunk;
    const parts = this.buffer.split('\n');
    this.buffer = parts.pop() ?? '';
    return parts.map((l) => l.replace(/\r$/, '')).filter((l) => l.trim() !== '');
  }

  /** Returns the last line when the stream ends without a final newline. */
  flush(): string[] {
    const rest = this.buffer.trim();
    this.buffer = '';
    return rest ? [rest] : [];
  }
}
