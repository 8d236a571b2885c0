/** The log viewer's controls: tail size, follow, wrap, timestamps, search with a match count and an only-matching filter, download (loaded lines or the whole log). */
import { useId, useRef, type KeyboardEvent } from 'react';
import type { LogFormat } from '../lib/logDownload';
import { MAX_TAIL } from '../lib/logs';
import { DownloadIcon, SearchIcon } from './Icons';
import './LogToolbar.css';

export interface LogToolbarProps {
  /** The tail input as typed (applied with Load or Enter). */
  tailDraft: string;
  onTailDraft: (value: string) => void;
  onApplyTail: () => void;
  follow: boolean;
  onFollow: (follow: boolean) => void;
  wrap: boolean;
  onWrap: (wrap: boolean) => void;
  timestamps: boolean;
  onTimestamps: (timestamps: boolean) => void;
  query: string;
  onQuery: (query: string) => void;
  /** Number of matches of the search and the 0-based current one (-1: none chosen yet). */
  matchCount: number;
  currentMatch: number;
  /** Where the search looks: the loaded lines, or the whole log (on the server). */
  scope: 'loaded' | 'whole';
  onScope: (scope: 'loaded' | 'whole') => void;
  /** The whole-log search takes a regular expression. */
  regex: boolean;
  onRegex: (regex: boolean) => void;
  /** The count as shown, when not "n / m" of the loaded lines (the whole log's count, an error). */
  countText?: string | undefined;
  onStepMatch: (direction: 1 | -1) => void;
  /** Show only the lines that match the search. */
  onlyMatching: boolean;
  onOnlyMatching: (only: boolean) => void;
  /** Download of the loaded lines is offered when there are lines. */
  canDownload: boolean;
  /** How many lines are loaded (the "loaded lines" choice says so). */
  loadedCount: number;
  onDownload: (what: 'loaded' | 'whole', format: LogFormat) => void;
  /** A whole-log download is running: its controls are then disabled. */
  downloading: boolean;
  /** "Jump to first error" (a failed Run): the action, null when no loaded line is an error; undefined: not offered. */
  firstError?: (() => void) | null;
}

export function LogToolbar(p: LogToolbarProps) {
  const id = useId();
  const onSearchKey = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      p.onStepMatch(e.shiftKey ? -1 : 1);
    } else if (e.key === 'Escape') {
      p.onQuery('');
    }
  };
  return (
    <div className="log-toolbar" role="toolbar" aria-label="Log controls">
      <div className="log-tools">
        <label htmlFor={`${id}-tail`} className="small">
          Tail
        </label>
        <input
          id={`${id}-tail`}
          className="input num-input"
          type="number"
          min={1}
          max={MAX_TAIL}
          value={p.tailDraft}
          onChange={(e) => p.onTailDraft(e.target.value)}
          onKeyDown={(e) => e.key === 'Enter' && p.onApplyTail()}
          aria-describedby={`${id}-tail-hint`}
        />
        <span id={`${id}-tail-hint`} className="visually-hidden">
          Number of most recent records, 1 to {MAX_TAIL}
        </span>
        <button type="button" className="button small" onClick={p.onApplyTail}>
          Load
        </button>
        <label className="check switch">
          <input type="checkbox" checked={p.follow} onChange={(e) => p.onFollow(e.target.checked)} />
          Follow
        </label>
        <label className="check">
          <input type="checkbox" checked={p.wrap} onChange={(e) => p.onWrap(e.target.checked)} />
          Wrap
        </label>
        <label className="check">
          <input type="checkbox" checked={p.timestamps} onChange={(e) => p.onTimestamps(e.target.checked)} />
          Timestamps
        </label>
        {p.firstError !== undefined && (
          <button
            type="button"
            className="button small"
            onClick={p.firstError ?? undefined}
            disabled={!p.firstError}
            title={p.firstError ? 'The first stderr record, else the first line with error, fatal, panic or exception' : 'No loaded line is an error'}
          >
            Jump to first error
          </button>
        )}
      </div>
      <div className="log-tools">
        <div className="search">
          <SearchIcon />
          <label htmlFor={`${id}-q`} className="visually-hidden">
            Search the log
          </label>
          <input
            id={`${id}-q`}
            className="input"
            type="search"
            placeholder={p.scope === 'whole' ? 'Search the whole log' : 'Search loaded lines'}
            value={p.query}
            onChange={(e) => p.onQuery(e.target.value)}
            onKeyDown={onSearchKey}
          />
          <span className="match-count small" aria-live="polite">
            {p.countText ?? (p.query ? (p.matchCount ? `${p.currentMatch >= 0 ? p.currentMatch + 1 : 0} / ${p.matchCount}` : 'No matches') : '')}
          </span>
          <button type="button" className="button small icon-only" aria-label="Previous match" disabled={!p.matchCount} onClick={() => p.onStepMatch(-1)}>
            ↑
          </button>
          <button type="button" className="button small icon-only" aria-label="Next match" disabled={!p.matchCount} onClick={() => p.onStepMatch(1)}>
            ↓
          </button>
        </div>
        <label htmlFor={`${id}-scope`} className="visually-hidden">
          Search in
        </label>
        <select id={`${id}-scope`} className="input log-scope" value={p.scope} onChange={(e) => p.onScope(e.target.value === 'whole' ? 'whole' : 'loaded')}>
          <option value="loaded">Loaded lines</option>
          <option value="whole">Whole log</option>
        </select>
        {p.scope === 'whole' ? (
          <label className="check">
            <input type="checkbox" checked={p.regex} onChange={(e) => p.onRegex(e.target.checked)} />
            Regex
          </label>
        ) : (
          <label className="check">
            <input type="checkbox" checked={p.onlyMatching} onChange={(e) => p.onOnlyMatching(e.target.checked)} />
            Only matching lines
          </label>
        )}
        <DownloadMenu {...p} />
      </div>
    </div>
  );
}

/** "Download": the loaded lines or the whole log, as text or NDJSON. */
function DownloadMenu(p: LogToolbarProps) {
  const ref = useRef<HTMLDetailsElement>(null);
  const pick = (what: 'loaded' | 'whole', format: LogFormat) => {
    if (ref.current) ref.current.open = false;
    p.onDownload(what, format);
  };
  const loaded = `${p.loadedCount.toLocaleString()} loaded line${p.loadedCount === 1 ? '' : 's'}`;
  return (
    <details className="log-download" ref={ref}>
      <summary className="button small">
        <DownloadIcon /> Download
      </summary>
      <div className="log-download-menu" role="group" aria-label="Download the log">
        <button type="button" className="button small" disabled={!p.canDownload} onClick={() => pick('loaded', 'text')}>
          Loaded lines ({loaded}), text
        </button>
        <button type="button" className="button small" disabled={!p.canDownload} onClick={() => pick('loaded', 'ndjson')}>
          Loaded lines, NDJSON
        </button>
        <button type="button" className="button small" disabled={p.downloading} onClick={() => pick('whole', 'text')}>
          Whole log, text
        </button>
        <button type="button" className="button small" disabled={p.downloading} onClick={() => pick('whole', 'ndjson')}>
          Whole log, NDJSON
        </button>
      </div>
    </details>
  );
}
