/**
 * Renders a log: the toolbar it is given, the state line (loading, following,
 * paused with a resume button, dropped and missing lines), errors, and the
 * lines themselves, virtualised so 100,000+ stay smooth, with line numbers as
 * #L<n> deep links, search highlights and an optional timestamp column. It
 * reads nothing itself: the records come from useRunLogStream (see RunLogView).
 */
import { useVirtualizer } from '@tanstack/react-virtual';
import { useLayoutEffect, useRef, type ReactNode } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { ApiError } from '../api/errors';
import type { RunLogStream } from '../api/logStream';
import { logTime } from '../lib/format';
import {
  atBottom,
  highlight,
  isPaused,
  lineHash,
  parseLineHash,
  tailSummary,
  type FollowEvent,
  type FollowState,
  type SearchMatch,
} from '../lib/logs';
import { ArrowDownIcon } from './Icons';
import { Forbidden } from './States';

const ROW_HEIGHT = 20;
/** The log area shrinks to short logs, down to this height. */
const MIN_HEIGHT = 120;

export interface LogViewerProps {
  /** Name of the Run, for the log's accessible name. */
  run: string;
  /** The records and the state of reading them. */
  log: Omit<RunLogStream, 'reload'>;
  /** The controls shown above the log (e.g. a LogToolbar). */
  toolbar?: ReactNode;
  follow: FollowState;
  onFollowEvent: (e: FollowEvent) => void;
  wrap: boolean;
  timestamps: boolean;
  /** The search as applied: its query, the lines that match and the current match. */
  search: { query: string; lines: ReadonlySet<number>; current: SearchMatch | undefined };
  /** Scrolls to this 0-based line; a new object scrolls again. */
  jump: { line: number } | null;
  /** Prefix of line anchors (`L` → `#L12`); distinct per viewer on one page. */
  anchorPrefix: string;
  /** Height of the scroll area in CSS pixels. */
  height: number;
}

export function LogViewer({ run, log, toolbar, follow, onFollowEvent, wrap, timestamps, search, jump, anchorPrefix, height }: LogViewerProps) {
  const navigate = useNavigate();
  const location = useLocation();
  const { status, error, retryIn, truncated } = log;
  const { lines, version, dropped, gaps } = log.records;
  const count = lines.length;

  const scrollRef = useRef<HTMLDivElement>(null);
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scrollRef.current,
    estimateSize: () => ROW_HEIGHT,
    overscan: 30,
  });

  // Stay at the bottom while pinned (and on the first load of a tail).
  const selected = parseLineHash(location.hash, anchorPrefix);
  const jumpedRef = useRef(false);
  useLayoutEffect(() => {
    const el = scrollRef.current;
    if (!el || count === 0) return;
    if (selected && !jumpedRef.current) {
      const idx = selected.from - 1 - dropped;
      if (idx >= 0 && idx < count) {
        jumpedRef.current = true;
        onFollowEvent({ type: 'scrolled', atBottom: false });
        virtualizer.scrollToIndex(idx, { align: 'center' });
        return;
      }
    }
    if (follow.pinned) el.scrollTop = el.scrollHeight;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [version, follow.pinned, count]);

  useLayoutEffect(() => {
    if (jump) virtualizer.scrollToIndex(jump.line, { align: 'center' });
  }, [jump, virtualizer]);

  const onScroll = () => {
    const el = scrollRef.current;
    if (!el) return;
    onFollowEvent({ type: 'scrolled', atBottom: atBottom(el.scrollTop, el.scrollHeight, el.clientHeight) });
  };

  const jumpToBottom = () => {
    onFollowEvent({ type: 'jumpToBottom' });
    const el = scrollRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  };

  const forbidden = error instanceof ApiError && error.isForbidden ? error : null;
  const notAssigned = error instanceof ApiError && error.status === 409;
  const paused = isPaused(follow);
  const statusText = (() => {
    switch (status) {
      case 'loading':
        return 'Loading…';
      case 'connecting':
        return 'Connecting…';
      case 'following':
        return 'Following';
      case 'reconnecting': {
        const why = error ? 'Connection lost' : 'Stream closed';
        return retryIn ? `${why}; reconnecting in ${retryIn}s…` : 'Reconnecting…';
      }
      case 'ended':
        return 'Stream ended';
      case 'error':
        return notAssigned ? 'No Pod yet' : 'Error';
      case 'ready':
        return tailSummary(count, truncated.cut, truncated.by);
    }
  })();

  return (
    <div className={`logviewer ${wrap ? 'wrap' : ''}`}>
      {toolbar}

      <div className="log-status small" role="status" aria-live="polite">
        <span className={`log-state is-${notAssigned && status === 'error' ? 'waiting' : status}`}>
          <span className="dot" aria-hidden="true" />
          {statusText}
        </span>
        {paused && (
          <span className="log-state is-paused" title="Scrolled up: the view stays here while new lines arrive">
            <span className="dot" aria-hidden="true" />
            Paused
          </span>
        )}
        <span className="muted">
          {count.toLocaleString()} line{count === 1 ? '' : 's'}
          {dropped > 0 ? ` · ${dropped.toLocaleString()} older lines dropped from memory` : ''}
          {gaps.size > 0 ? ' · some lines may be missing where marked' : ''}
        </span>
        {paused && (
          <button type="button" className="button small primary" onClick={jumpToBottom}>
            <ArrowDownIcon /> {follow.unseen > 0 ? `${follow.unseen.toLocaleString()} new lines — resume` : 'Resume following'}
          </button>
        )}
      </div>

      {forbidden ? (
        <Forbidden access={forbidden.access} message={forbidden.message} />
      ) : error && status === 'error' && notAssigned ? (
        <p className="notice" role="status">
          This Run has not been assigned to a Runtime Pod yet, so it has no log. Turn on <strong>Follow</strong> to wait
          for it.
        </p>
      ) : error && status === 'error' ? (
        <div className="state state-error" role="alert">
          <p className="state-title">Could not read the log</p>
          <p className="state-body prose">{error instanceof Error ? error.message : String(error)}</p>
        </div>
      ) : null}
      {status === 'reconnecting' && error instanceof Error && (
        <p className="notice warning small" role="status">
          {error.message}
        </p>
      )}

      <div
        ref={scrollRef}
        hidden={status === 'error' && count === 0}
        className="log-scroll"
        style={{ maxHeight: height, height: wrap ? height : Math.max(MIN_HEIGHT, count * ROW_HEIGHT + 14) }}
        onScroll={onScroll}
        tabIndex={0}
        role="log"
        aria-live="off"
        aria-label={`Log of Run ${run}`}
      >
        {count === 0 && (status === 'ready' || status === 'following' || status === 'ended') && (
          <p className="log-empty muted">No log records{follow.follow ? ' yet; waiting for output' : ''}.</p>
        )}
        <div style={{ height: virtualizer.getTotalSize(), position: 'relative', minWidth: '100%' }}>
          {virtualizer.getVirtualItems().map((v) => {
            const r = lines[v.index]!;
            const n = v.index + 1 + dropped;
            const isSel = selected !== null && n >= selected.from && n <= selected.to;
            const isCur = search.current?.line === v.index;
            const cls = [
              'log-line',
              r.stream === 'stderr' ? 'stderr' : '',
              isSel ? 'selected' : '',
              search.lines.has(v.index) ? 'has-match' : '',
              isCur ? 'current-match' : '',
              gaps.has(v.index) ? 'gap-before' : '',
            ].join(' ');
            return (
              <div
                key={v.key}
                data-index={v.index}
                ref={virtualizer.measureElement}
                className={cls}
                style={{ transform: `translateY(${v.start}px)`, ...(wrap ? {} : { height: ROW_HEIGHT }) }}
              >
                <a
                  className="ln"
                  href={lineHash(n, anchorPrefix)}
                  id={`${anchorPrefix}${n}`}
                  onClick={(e) => {
                    e.preventDefault();
                    jumpedRef.current = true;
                    navigate({ pathname: location.pathname, search: location.search, hash: lineHash(n, anchorPrefix) }, { replace: true, preventScrollReset: true });
                  }}
                  tabIndex={-1}
                  aria-label={`Line ${n}`}
                >
                  {n}
                </a>
                {timestamps && <span className="ts">{logTime(r.time)}</span>}
                <span className="stream" title={r.stream}>
                  {r.stream === 'stderr' ? 'err' : ''}
                </span>
                <span className="msg">
                  {search.query && search.lines.has(v.index)
                    ? highlight(r.message, search.query).map((p, i) => (p.hit ? <mark key={i}>{p.text}</mark> : <span key={i}>{p.text}</span>))
                    : r.message}
                  {r.truncated && (
                    <span className="cut-mark" title="The log API cut this line at its length bound">
                      {' '}[line cut]
                    </span>
                  )}
                </span>
              </div>
            );
          })}
        </div>
      </div>
    </div>
  );
}
