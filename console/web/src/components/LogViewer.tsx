/**
 * Run log viewer: bounded tail, live follow (NDJSON) with a visible paused
 * state, reconnect without duplicates, wrap and timestamp toggles, search with
 * a match count, line numbers with #L<n> deep links, download of what is
 * shown. Rows are virtualised so 100,000+ lines stay smooth.
 */
import { useVirtualizer } from '@tanstack/react-virtual';
import {
  useCallback,
  useDeferredValue,
  useEffect,
  useId,
  useLayoutEffect,
  useMemo,
  useReducer,
  useRef,
  useState,
  type KeyboardEvent,
} from 'react';
import { useLocation, useNavigate } from 'react-router';
import { followRunLog, getRunLogTail } from '../api/client';
import { ApiError } from '../api/errors';
import type { LogRecord } from '../api/types';
import { logTime } from '../lib/format';
import {
  INITIAL_FOLLOW,
  MAX_TAIL,
  ResumeMatcher,
  atBottom,
  clampTail,
  followReducer,
  highlight,
  isPaused,
  lineHash,
  logText,
  parseLineHash,
  searchLines,
  stepMatch,
  tailSummary,
} from '../lib/logs';
import { ArrowDownIcon, DownloadIcon, SearchIcon } from './Icons';
import { Forbidden } from './States';

/** Lines kept in memory; beyond this the oldest are dropped and the count is shown. */
const MAX_LINES = 250_000;
const ROW_HEIGHT = 20;
/** The log area shrinks to short logs, down to this height. */
const MIN_HEIGHT = 120;

type Status = 'loading' | 'ready' | 'connecting' | 'following' | 'reconnecting' | 'ended' | 'error';

export interface LogViewerProps {
  ns: string;
  run: string;
  /** The Run is not terminal: follow may reconnect after a dropped stream. */
  active: boolean;
  defaultTail?: number;
  /** Prefix of line anchors (`L` → `#L12`); distinct per viewer on one page. */
  anchorPrefix?: string;
  /** Height of the scroll area in CSS pixels. */
  height?: number;
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = window.setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      window.clearTimeout(t);
      resolve();
    });
  });
}

export function LogViewer({ ns, run, active, defaultTail = 100, anchorPrefix = 'L', height = 420 }: LogViewerProps) {
  const id = useId();
  const navigate = useNavigate();
  const location = useLocation();

  const [tail, setTail] = useState(clampTail(defaultTail));
  const [tailDraft, setTailDraft] = useState(String(clampTail(defaultTail)));
  const [follow, dispatch] = useReducer(followReducer, INITIAL_FOLLOW);
  const [wrap, setWrap] = useState(false);
  const [timestamps, setTimestamps] = useState(false);
  const [query, setQuery] = useState('');
  const deferredQuery = useDeferredValue(query);
  const [current, setCurrent] = useState(-1);
  const [status, setStatus] = useState<Status>('loading');
  const [error, setError] = useState<unknown>(null);
  const [truncated, setTruncated] = useState<{ cut: boolean; by?: string }>({ cut: false });
  const [reload, setReload] = useState(0);
  const [retryIn, setRetryIn] = useState(0);

  // The lines live in a ref (no copying of large arrays); `version` re-renders.
  const linesRef = useRef<LogRecord[]>([]);
  const gapsRef = useRef<Set<number>>(new Set());
  const droppedRef = useRef(0);
  const pendingRef = useRef<LogRecord[]>([]);
  const frameRef = useRef(0);
  const [version, setVersion] = useState(0);
  const activeRef = useRef(active);
  activeRef.current = active;

  const flush = useCallback(() => {
    frameRef.current = 0;
    const batch = pendingRef.current;
    if (batch.length === 0) return;
    pendingRef.current = [];
    const lines = linesRef.current;
    for (const r of batch) lines.push(r);
    if (lines.length > MAX_LINES) {
      const drop = lines.length - MAX_LINES;
      lines.splice(0, drop);
      droppedRef.current += drop;
      const shifted = new Set<number>();
      for (const g of gapsRef.current) if (g - drop >= 0) shifted.add(g - drop);
      gapsRef.current = shifted;
    }
    dispatch({ type: 'appended', count: batch.length });
    setVersion((v) => v + 1);
  }, []);

  const enqueue = useCallback(
    (rs: LogRecord[]) => {
      pendingRef.current.push(...rs);
      if (!frameRef.current) frameRef.current = window.requestAnimationFrame(flush);
    },
    [flush],
  );

  const replaceAll = useCallback((rs: LogRecord[]) => {
    pendingRef.current = [];
    linesRef.current = rs.slice();
    gapsRef.current = new Set();
    droppedRef.current = 0;
    setVersion((v) => v + 1);
  }, []);

  useEffect(() => () => window.cancelAnimationFrame(frameRef.current), []);

  // Tail mode: one bounded request.
  useEffect(() => {
    if (follow.follow) return;
    let cancelled = false;
    setStatus('loading');
    setError(null);
    getRunLogTail(ns, run, tail).then(
      (log) => {
        if (cancelled) return;
        replaceAll(log.records);
        setTruncated({ cut: log.truncated, ...(log.truncatedBy ? { by: log.truncatedBy } : {}) });
        setStatus('ready');
      },
      (e: unknown) => {
        if (cancelled) return;
        replaceAll([]);
        setError(e);
        setStatus('error');
      },
    );
    return () => {
      cancelled = true;
    };
  }, [ns, run, tail, follow.follow, reload, replaceAll]);

  // Follow mode: stream, and on a drop re-request the tail and skip what we have.
  useEffect(() => {
    if (!follow.follow) return;
    const ctrl = new AbortController();
    void (async () => {
      let failures = 0;
      let connected = false;
      while (!ctrl.signal.aborted) {
        window.cancelAnimationFrame(frameRef.current);
        flush();
        const matcher = new ResumeMatcher(linesRef.current, tail);
        let gapMarked = false;
        setStatus(connected ? 'reconnecting' : 'connecting');
        setRetryIn(0);
        try {
          await followRunLog(
            ns,
            run,
            tail,
            (r) => {
              failures = 0;
              const out = matcher.push(r);
              if (out.length === 0) return;
              if (matcher.gap && !gapMarked && linesRef.current.length > 0) {
                gapMarked = true;
                gapsRef.current.add(linesRef.current.length + pendingRef.current.length);
              }
              enqueue(out);
            },
            ctrl.signal,
            () => {
              setStatus('following');
              setError(null);
            },
          );
          if (ctrl.signal.aborted) return;
          matcher.finish();
          setError(null);
          if (!activeRef.current) {
            setStatus('ended');
            return;
          }
        } catch (e) {
          if (ctrl.signal.aborted) return;
          setError(e);
          if (e instanceof ApiError && e.status >= 400 && e.status < 500 && e.status !== 409) {
            setStatus('error');
            return;
          }
        }
        connected = true;
        failures++;
        const wait = Math.min(10_000, 500 * 2 ** Math.min(failures, 5));
        setStatus('reconnecting');
        setRetryIn(Math.round(wait / 1000));
        await sleep(wait, ctrl.signal);
      }
    })();
    return () => ctrl.abort();
  }, [ns, run, tail, follow.follow, enqueue, flush]);

  const lines = linesRef.current;
  const count = lines.length;
  const dropped = droppedRef.current;

  // --- search -------------------------------------------------------------
  const result = useMemo(() => {
    if (!deferredQuery) return null;
    return searchLines(
      lines.map((r) => r.message),
      deferredQuery,
    );
    // `version` changes whenever `lines` grows in place.
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [deferredQuery, version]);
  const matchLines = useMemo(() => new Set(result?.lines ?? []), [result]);
  const matchCount = result?.matches.length ?? 0;
  useEffect(() => setCurrent(-1), [deferredQuery]);
  const currentMatch = current >= 0 ? result?.matches[current] : undefined;

  // --- virtual rows -------------------------------------------------------
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
        dispatch({ type: 'scrolled', atBottom: false });
        virtualizer.scrollToIndex(idx, { align: 'center' });
        return;
      }
    }
    if (follow.pinned) el.scrollTop = el.scrollHeight;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [version, follow.pinned, count]);

  const onScroll = () => {
    const el = scrollRef.current;
    if (!el) return;
    dispatch({ type: 'scrolled', atBottom: atBottom(el.scrollTop, el.scrollHeight, el.clientHeight) });
  };

  const goToMatch = (dir: 1 | -1) => {
    if (!result || matchCount === 0) return;
    const next = stepMatch(matchCount, current, dir);
    setCurrent(next);
    const m = result.matches[next];
    if (m) {
      dispatch({ type: 'scrolled', atBottom: false });
      virtualizer.scrollToIndex(m.line, { align: 'center' });
    }
  };

  const onSearchKey = (e: KeyboardEvent<HTMLInputElement>) => {
    if (e.key === 'Enter') {
      e.preventDefault();
      goToMatch(e.shiftKey ? -1 : 1);
    } else if (e.key === 'Escape') {
      setQuery('');
    }
  };

  const jumpToBottom = () => {
    dispatch({ type: 'jumpToBottom' });
    const el = scrollRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  };

  const download = () => {
    const blob = new Blob([logText(linesRef.current, timestamps)], { type: 'text/plain;charset=utf-8' });
    const url = URL.createObjectURL(blob);
    const a = document.createElement('a');
    a.href = url;
    a.download = `${ns}_${run}.log`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    window.setTimeout(() => URL.revokeObjectURL(url), 1000);
  };

  const applyTail = () => {
    const n = clampTail(Number(tailDraft));
    setTailDraft(String(n));
    if (n === tail) setReload((r) => r + 1);
    else setTail(n);
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
            value={tailDraft}
            onChange={(e) => setTailDraft(e.target.value)}
            onKeyDown={(e) => e.key === 'Enter' && applyTail()}
            aria-describedby={`${id}-tail-hint`}
          />
          <span id={`${id}-tail-hint`} className="visually-hidden">
            Number of most recent records, 1 to {MAX_TAIL}
          </span>
          <button type="button" className="button small" onClick={applyTail}>
            Load
          </button>
          <label className="check switch">
            <input
              type="checkbox"
              checked={follow.follow}
              onChange={(e) => dispatch({ type: 'toggle', follow: e.target.checked })}
            />
            Follow
          </label>
          <label className="check">
            <input type="checkbox" checked={wrap} onChange={(e) => setWrap(e.target.checked)} />
            Wrap
          </label>
          <label className="check">
            <input type="checkbox" checked={timestamps} onChange={(e) => setTimestamps(e.target.checked)} />
            Timestamps
          </label>
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
              placeholder="Search"
              value={query}
              onChange={(e) => setQuery(e.target.value)}
              onKeyDown={onSearchKey}
            />
            <span className="match-count small" aria-live="polite">
              {query ? (matchCount ? `${current >= 0 ? current + 1 : 0} / ${matchCount}` : 'No matches') : ''}
            </span>
            <button type="button" className="button small icon-only" aria-label="Previous match" disabled={!matchCount} onClick={() => goToMatch(-1)}>
              ↑
            </button>
            <button type="button" className="button small icon-only" aria-label="Next match" disabled={!matchCount} onClick={() => goToMatch(1)}>
              ↓
            </button>
          </div>
          <button type="button" className="button small" onClick={download} disabled={count === 0}>
            <DownloadIcon /> Download
          </button>
        </div>
      </div>

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
          {gapsRef.current.size > 0 ? ' · some lines may be missing where marked' : ''}
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
            const isCur = currentMatch?.line === v.index;
            const cls = [
              'log-line',
              r.stream === 'stderr' ? 'stderr' : '',
              isSel ? 'selected' : '',
              matchLines.has(v.index) ? 'has-match' : '',
              isCur ? 'current-match' : '',
              gapsRef.current.has(v.index) ? 'gap-before' : '',
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
                  {deferredQuery && matchLines.has(v.index)
                    ? highlight(r.message, deferredQuery).map((p, i) => (p.hit ? <mark key={i}>{p.text}</mark> : <span key={i}>{p.text}</span>))
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
