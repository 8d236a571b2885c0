/**
 * Renders a log: the toolbar it is given, the state line (loading, following,
 * paused with a resume button, finished, dropped and missing lines), "load
 * older", errors, and the lines themselves, virtualised so 100,000+ stay
 * smooth, with line numbers as deep links that name the record's cursor
 * (#L<cursor>; #L<n> for records without one), search highlights, an
 * only-matching filter and an optional timestamp column. It reads nothing
 * itself: the records come from useRunLogStream (see RunLogView).
 */
import { useVirtualizer } from '@tanstack/react-virtual';
import { useLayoutEffect, useMemo, useRef, useState, type ReactNode } from 'react';
import { useLocation, useNavigate } from 'react-router';
import { ApiError } from '../api/errors';
import type { RunLogStream } from '../api/logStream';
import type { CursorRecord } from '../api/logTypes';
import type { NoteReason } from '../api/types';
import { parseCssColor } from '../lib/ansi';
import { logTime } from '../lib/format';
import { findGroups, groupOf, visibleLines, type LogGroup } from '../lib/logFold';
import {
  atBottom,
  indexOfCursor,
  indexOfLine,
  isPaused,
  parseCursorHash,
  parseLineHash,
  recordHash,
  tailSummary,
  type FollowEvent,
  type FollowState,
  type SearchMatch,
} from '../lib/logs';
import { AnsiText } from './AnsiText';
import { ArrowDownIcon } from './Icons';
import { Forbidden } from './States';
import './LogViewer.css';

const ROW_HEIGHT = 20;
/** The log area shrinks to short logs, down to this height. */
const MIN_HEIGHT = 120;
/** Height of the "Load older" bar above the first line (a small button and its padding). */
const OLDER_BAR_HEIGHT = 40;

export interface LogViewerProps {
  /** Name of the Run, for the log's accessible name. */
  run: string;
  /** The records and the state of reading them. */
  log: Omit<RunLogStream, 'reload'>;
  /** The Pod the Run is assigned to (a 409 then is not "no Pod yet"); null: known to have none yet; undefined: not known. */
  assignedPod?: string | null | undefined;
  /** Show only the lines of `search.lines`. */
  onlyMatching?: boolean;
  /** The controls shown above the log (e.g. a LogToolbar). */
  toolbar?: ReactNode;
  follow: FollowState;
  onFollowEvent: (e: FollowEvent) => void;
  wrap: boolean;
  timestamps: boolean;
  /** The search as applied: its query, the lines that match and the current match. */
  search: { query: string; lines: ReadonlySet<number>; current: SearchMatch | undefined };
  /** Scrolls to this 0-based line (and marks it); a new object scrolls again. */
  jump: { line: number } | null;
  /** Prefix of line anchors (`L` → `#L12`); distinct per viewer on one page. */
  anchorPrefix: string;
  /** Height of the scroll area in CSS pixels. */
  height: number;
}

/** Notes about records that are missing (not only about what records mean). */
const NOTE_WARNS: ReadonlySet<NoteReason> = new Set<NoteReason>([
  'LiveOutputUnavailable',
  'NoneWrittenForPhase',
  'EarlierAttemptsNotKept',
  'OutputTruncated',
  'PreviousLogGone',
]);

/** A record's time, never a dump time presented as when the line was printed. */
function RecordTime({ record }: { record: CursorRecord }) {
  if (record.writtenAtEnd) {
    return (
      <span className="ts muted" title={`Written by runtimed when the Run ended${record.time ? ` (${record.time})` : ''}; when the line was printed is not known`}>
        at end
      </span>
    );
  }
  if (record.source === 'status' && !record.time) {
    return (
      <span className="ts muted" title="Live output read from runtimed; when the line was printed is not known">
        live
      </span>
    );
  }
  return <span className="ts">{logTime(record.time)}</span>;
}

type Rgb = [number, number, number];

/** The log area's background colour, read again whenever the Style or Theme changes (attributes of <html>). */
function useBackground(ref: { current: HTMLElement | null }): Rgb | null {
  const [bg, setBg] = useState<Rgb | null>(null);
  useLayoutEffect(() => {
    const read = () => {
      const el = ref.current;
      const c = el ? parseCssColor(getComputedStyle(el).backgroundColor) : null;
      setBg((old) => (old && c && old.join() === c.join() ? old : c));
    };
    read();
    const mo = new MutationObserver(read);
    mo.observe(document.documentElement, { attributes: true });
    return () => mo.disconnect();
  }, [ref]);
  return bg;
}

/** How many values of an ascending array are below `value`. */
function lowerBound(a: readonly number[], value: number): number {
  let lo = 0;
  let hi = a.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if (a[mid]! < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** Index of `value` in an ascending array, or -1. */
function sortedIndex(a: readonly number[], value: number): number {
  let lo = 0;
  let hi = a.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >> 1;
    const v = a[mid]!;
    if (v === value) return mid;
    if (v < value) lo = mid + 1;
    else hi = mid - 1;
  }
  return -1;
}

export function LogViewer({ run, log, assignedPod, onlyMatching = false, toolbar, follow, onFollowEvent, wrap, timestamps, search, jump, anchorPrefix, height }: LogViewerProps) {
  const navigate = useNavigate();
  const location = useLocation();
  const { status, error, retryIn, truncated, end, older, notes } = log;
  const { lines, version, dropped, gaps, prepended } = log.records;
  const total = lines.length;
  // `::group::` … `::endgroup::` folds, collapsed until opened (by a click, or to show a line in them).
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const groups = useMemo(() => findGroups(lines, dropped), [version]);
  const [openGroups, setOpenGroups] = useState<ReadonlySet<string>>(() => new Set());
  const headers = useMemo(() => new Map(groups.map((g) => [g.start, g])), [groups]);
  // The rows shown (indexes into `lines`): only the matching lines, or every line with folded groups; null: every line.
  const rows = useMemo(
    () => (onlyMatching ? [...search.lines].sort((a, b) => a - b) : visibleLines(total, groups, (g) => openGroups.has(g.key))),
    [onlyMatching, search.lines, total, groups, openGroups],
  );
  const count = rows ? rows.length : total;
  const lineAt = (row: number) => (rows ? rows[row]! : row);
  const rowOf = (line: number) => (rows ? sortedIndex(rows, line) : line);
  const toggleGroup = (g: LogGroup) =>
    setOpenGroups((s) => {
      const n = new Set(s);
      if (n.has(g.key)) n.delete(g.key);
      else n.add(g.key);
      return n;
    });
  /** The row of a line, opening the folded group that hides it (the row then comes on the next render): -1 until shown. */
  const reveal = (line: number): number => {
    const row = rowOf(line);
    if (row >= 0 || onlyMatching) return row;
    const g = groupOf(groups, line);
    if (g && !openGroups.has(g.key)) setOpenGroups((s) => new Set(s).add(g.key));
    return -1;
  };
  // A record's number: the server's stable `line`; without one, its place
  // when the first loaded record is known to be the Run's first; else none
  // (a number counted from what happens to be loaded would change).
  // (and no gap where records may be missing lies before it).
  const firstGap = gaps.size > 0 ? Math.min(...gaps) : Infinity;
  const numberOf = (index: number): number | undefined => lines[index]!.line ?? (older.start && dropped === 0 && index < firstGap ? index + 1 : undefined);
  // The state at the top, above the first line: "Load older", or the start of the log, or older records gone.
  const showTop = !onlyMatching && count > 0 && (older.available || older.loading || older.error != null || older.start || older.gone);
  const offerOlder = older.available || older.loading || older.error != null;

  const scrollRef = useRef<HTMLDivElement>(null);
  const background = useBackground(scrollRef);
  const virtualizer = useVirtualizer({
    count,
    getScrollElement: () => scrollRef.current,
    estimateSize: (row) => (gaps.has(lineAt(row)) ? 2 * ROW_HEIGHT : ROW_HEIGHT),
    overscan: 30,
  });

  // The selected lines: the record a #L<cursor> link names, or a #L<n>[-L<m>] range of line numbers.
  const selCursor = parseCursorHash(location.hash, anchorPrefix);
  const selNumbers = selCursor ? null : parseLineHash(location.hash, anchorPrefix);
  // eslint-disable-next-line react-hooks/exhaustive-deps
  const selIndex = useMemo(() => (selCursor ? indexOfCursor(lines, selCursor) : selNumbers ? indexOfLine(lines, selNumbers.from, older.start ? 0 : -1) : -1), [selCursor, selNumbers?.from, version, older.start]);
  const isSelected = (index: number) => {
    if (selCursor) return index === selIndex;
    if (!selNumbers) return false;
    const n = numberOf(index);
    return n !== undefined && n >= selNumbers.from && n <= selNumbers.to;
  };
  const [copied, setCopied] = useState<{ line: string; ok: boolean } | null>(null);

  // Stay at the bottom while pinned (and on the first load of a tail); a deep
  // link scrolls to its line once (opening its group); lines put in front keep the view in place.
  const jumpedRef = useRef(false);
  // Set when this commit scrolled to a linked line: the view is no longer pinned, whatever this render says.
  const linkScrolledRef = useRef(false);
  const prependedRef = useRef(prepended);
  useLayoutEffect(() => {
    const el = scrollRef.current;
    const added = prepended - prependedRef.current;
    prependedRef.current = prepended;
    if (!el || count === 0) return;
    if ((selCursor || selNumbers) && !jumpedRef.current && selIndex >= 0) {
      const idx = reveal(selIndex);
      if (idx >= 0 && idx < count) {
        jumpedRef.current = true;
        linkScrolledRef.current = true;
        onFollowEvent({ type: 'scrolled', atBottom: false });
        virtualizer.scrollToIndex(idx, { align: 'center' });
        return;
      }
    }
    if (added > 0 && !onlyMatching) {
      // Keep the first line shown before in place: the rows put in front.
      el.scrollTop += (rows ? lowerBound(rows, added) : added) * ROW_HEIGHT;
      return;
    }
    if (follow.pinned) el.scrollTop = el.scrollHeight;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [version, follow.pinned, count, selIndex]);

  // A jump (a search match, the first error) scrolls once its line is shown, opening its group first.
  const pendingJump = useRef<{ line: number } | null>(null);
  useLayoutEffect(() => {
    if (jump) pendingJump.current = jump;
    const j = pendingJump.current;
    if (!j) return;
    const row = reveal(j.line);
    if (row >= 0) {
      pendingJump.current = null;
      virtualizer.scrollToIndex(row, { align: 'center' });
    }
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [jump, rows, virtualizer]);

  // A pinned view stays at the bottom when its lines change height (Wrap, a narrow screen, measured rows).
  const totalSize = virtualizer.getTotalSize();
  useLayoutEffect(() => {
    const el = scrollRef.current;
    const linked = linkScrolledRef.current;
    linkScrolledRef.current = false;
    if (el && follow.pinned && !linked) el.scrollTop = el.scrollHeight;
    // eslint-disable-next-line react-hooks/exhaustive-deps
  }, [totalSize, wrap, height]);

  // Only the reader moving up leaves the bottom: lines growing under a pinned view (Wrap on) do not pause it.
  const lastTopRef = useRef(0);
  const onScroll = () => {
    const el = scrollRef.current;
    if (!el) return;
    const movedUp = el.scrollTop < lastTopRef.current - 1;
    lastTopRef.current = el.scrollTop;
    const bottom = atBottom(el.scrollTop, el.scrollHeight, el.clientHeight);
    if (bottom || movedUp) onFollowEvent({ type: 'scrolled', atBottom: bottom });
  };

  const jumpToBottom = () => {
    onFollowEvent({ type: 'jumpToBottom' });
    const el = scrollRef.current;
    if (el) el.scrollTop = el.scrollHeight;
  };

  const forbidden = error instanceof ApiError && error.isForbidden ? error : null;
  // 409: the log cannot be read yet. Without a Pod that is "not assigned yet";
  // with one, the server's own words say why (the container has not started...).
  const conflict = error instanceof ApiError && error.status === 409;
  const notAssigned = conflict && !assignedPod;
  // A follow of a Run without a Pod waits on the server until it has one.
  const awaitingPod = assignedPod === null && total === 0 && (status === 'connecting' || status === 'following');
  const waiting = awaitingPod || (conflict && (status === 'error' || status === 'reconnecting'));
  const paused = isPaused(follow);
  // Live output (runtimed has not written the Run's records yet) is one
  // stretch at the start or the end of what is loaded.
  const liveShown = total > 0 && (lines[0]!.source === 'status' || lines[total - 1]!.source === 'status');
  const liveNoted = notes.some((n) => n.reason === 'LiveOutput');
  const statusText = (() => {
    switch (status) {
      case 'loading':
        return 'Loading…';
      case 'connecting':
        return awaitingPod ? 'Waiting for a Pod…' : 'Connecting…';
      case 'following':
        return awaitingPod ? 'Waiting for a Pod…' : 'Following';
      case 'reconnecting': {
        if (conflict) {
          const what = notAssigned ? 'Waiting for a Pod' : `Waiting for the log of Pod ${assignedPod}`;
          return retryIn ? `${what}; trying again in ${retryIn}s…` : `${what}…`;
        }
        const why = error ? 'Connection lost' : 'Stream closed';
        return retryIn ? `${why}; reconnecting in ${retryIn}s…` : 'Reconnecting…';
      }
      case 'ended':
        return 'Stream ended';
      case 'finished':
        return 'Run finished';
      case 'error':
        return notAssigned ? 'No Pod yet' : conflict ? 'Log not readable yet' : 'Error';
      case 'ready':
        return tailSummary(total, truncated.cut, truncated.by);
    }
  })();

  return (
    <div className={`logviewer ${wrap ? 'wrap' : ''}`}>
      {toolbar}

      <div className="log-status small" role="status" aria-live="polite">
        <span className={`log-state is-${waiting ? 'waiting' : status}`}>
          <span className="dot" aria-hidden="true" />
          {statusText}
        </span>
        {paused && !follow.heldAt && (
          <span className="log-state is-paused" title="Scrolled up: the view stays here while new lines arrive">
            <span className="dot" aria-hidden="true" />
            Paused
          </span>
        )}
        {paused && follow.heldAt && (
          <span className="log-state is-held" title="The view stays at this line while new lines arrive below">
            {follow.heldAt === 'match' ? 'At a search match' : 'At the first error'}
          </span>
        )}
        {status === 'finished' && end?.message && <span className="muted">{end.message}</span>}
        <span className="muted">
          {onlyMatching ? `${count.toLocaleString()} of ` : ''}
          {total.toLocaleString()} line{total === 1 ? '' : 's'}
          {dropped > 0 ? ` · ${dropped.toLocaleString()} older lines dropped from memory` : ''}
          {gaps.size > 0 ? ' · some lines may be missing where marked' : ''}
        </span>
        {copied && (
          <span className={copied.ok ? 'muted' : 'danger-text'}>
            {copied.ok ? `Link to ${copied.line} copied` : `Could not copy the link to ${copied.line}: it is in the address bar`}
          </span>
        )}
        {paused && (
          <button type="button" className="button small primary" onClick={jumpToBottom}>
            <ArrowDownIcon /> {follow.unseen > 0 ? `${follow.unseen.toLocaleString()} new lines — resume` : 'Resume following'}
          </button>
        )}
      </div>

      {forbidden ? (
        <Forbidden access={forbidden.access} message={forbidden.message} />
      ) : awaitingPod ? (
        <p className="notice" role="status">
          This Run has not been assigned to a Runtime Pod yet, so it has no log. The log opens when it is.
        </p>
      ) : waiting && notAssigned ? (
        <p className="notice" role="status">
          This Run has not been assigned to a Runtime Pod yet, so it has no log.{' '}
          {status === 'error' ? (
            <>
              Turn on <strong>Follow</strong> to wait for it.
            </>
          ) : (
            'The log opens when it is.'
          )}
        </p>
      ) : waiting ? (
        <p className="notice" role="status">
          The Run is assigned to Pod <code>{assignedPod}</code>, but its log cannot be read yet: {error instanceof Error ? error.message : String(error)}
        </p>
      ) : error && status === 'error' ? (
        <div className="state state-error" role="alert">
          <p className="state-title">Could not read the log</p>
          <p className="state-body prose">{error instanceof Error ? error.message : String(error)}</p>
        </div>
      ) : null}
      {(notes.length > 0 || (liveShown && !liveNoted)) && (
        <ul className="log-notes" aria-label="About this log">
          {liveShown && !liveNoted && (
            <li className="notice small">
              Live output: runtimed writes this Run&apos;s records to its log only when the Run ends, so these lines are read from runtimed while it runs.
            </li>
          )}
          {notes.map((n) => (
            <li key={n.reason} className={`notice small ${NOTE_WARNS.has(n.reason) ? 'warning' : ''}`} data-reason={n.reason}>
              {n.message}
            </li>
          ))}
        </ul>
      )}
      {status === 'reconnecting' && !conflict && error instanceof Error && (
        <p className="notice warning small" role="status">
          {error.message}
        </p>
      )}

      <div
        ref={scrollRef}
        hidden={(status === 'error' || awaitingPod) && count === 0}
        className="log-scroll"
        style={{ maxHeight: height, height: wrap ? height : Math.max(MIN_HEIGHT, count * ROW_HEIGHT + gaps.size * ROW_HEIGHT + 14 + (showTop ? OLDER_BAR_HEIGHT : 0)) }}
        onScroll={onScroll}
        tabIndex={0}
        role="log"
        aria-live="off"
        aria-label={`Log of Run ${run}`}
      >
        {showTop && (
          <div className={`log-older ${offerOlder ? '' : 'log-top-mark'}`}>
            {offerOlder ? (
              <button type="button" className="button small" onClick={log.loadOlder} disabled={older.loading}>
                {older.loading ? 'Loading older lines…' : 'Load older'}
              </button>
            ) : older.gone ? (
              <span className="log-gap-text small" role="note">
                Older records are no longer in the Pod log
              </span>
            ) : (
              <span className="log-gap-text small">Start of the log</span>
            )}
            {older.error != null && (
              <span className="small danger-text" role="alert">
                Could not load older lines: {older.error instanceof Error ? older.error.message : String(older.error)}
              </span>
            )}
          </div>
        )}
        {count === 0 && (status === 'ready' || status === 'following' || status === 'ended' || status === 'finished') && (
          <p className="log-empty muted">
            {onlyMatching ? 'No loaded line matches.' : `No log records${follow.follow && status === 'following' ? ' yet; waiting for output' : ''}.`}
          </p>
        )}
        <div style={{ height: virtualizer.getTotalSize(), position: 'relative', minWidth: '100%' }}>
          {virtualizer.getVirtualItems().map((v) => {
            const index = lineAt(v.index);
            const r = lines[index]!;
            const n = numberOf(index);
            const isSel = isSelected(index);
            const isCur = search.current?.line === index;
            const group = onlyMatching ? undefined : headers.get(index);
            const gap = gaps.has(index);
            const cls = [
              'log-line',
              r.stream === 'stderr' ? 'stderr' : '',
              isSel ? 'selected' : '',
              search.lines.has(index) || r.match ? 'has-match' : '',
              isCur ? 'current-match' : '',
              jump?.line === index ? 'jump-target' : '',
              gap ? 'gap-before' : '',
              group ? 'group-header' : '',
            ].join(' ');
            const hash = recordHash(r, n, anchorPrefix);
            const open = group ? openGroups.has(group.key) : false;
            return (
              <div
                key={v.key}
                data-index={v.index}
                data-line={n}
                ref={virtualizer.measureElement}
                className={cls}
                style={{ transform: `translateY(${v.start}px)`, ...(wrap ? {} : { height: gap ? 2 * ROW_HEIGHT : ROW_HEIGHT }) }}
              >
                {gap && (
                  <div className="log-gap" role="note">
                    records may be missing here
                  </div>
                )}
                {hash ? (
                  <a
                    className="ln"
                    href={hash}
                    id={hash.slice(1)}
                    data-cursor={r.cursor}
                    onClick={(e) => {
                      e.preventDefault();
                      jumpedRef.current = true;
                      navigate({ pathname: location.pathname, search: location.search, hash }, { replace: true, preventScrollReset: true });
                      const url = `${window.location.origin}${location.pathname}${location.search}${hash}`;
                      const label = n !== undefined ? `line ${n}` : 'this line';
                      (navigator.clipboard?.writeText(url) ?? Promise.reject(new Error('no clipboard'))).then(
                        () => setCopied({ line: label, ok: true }),
                        () => setCopied({ line: label, ok: false }),
                      );
                    }}
                    title="Copy a link to this line"
                    aria-label={n !== undefined ? `Copy link to line ${n}` : 'Copy link to this line'}
                  >
                    {n ?? ''}
                  </a>
                ) : (
                  <span className="ln" />
                )}
                {timestamps && <RecordTime record={r} />}
                <span className="stream" title={r.stream}>
                  {r.stream === 'stderr' ? 'err' : ''}
                </span>
                <span className="msg">
                  {group ? (
                    <button type="button" className="log-group-toggle" aria-expanded={open} onClick={() => toggleGroup(group)}>
                      <span className="caret" aria-hidden="true">
                        {open ? '▾' : '▸'}
                      </span>{' '}
                      {group.name}{' '}
                      <span className="group-count">
                        ({group.count.toLocaleString()} line{group.count === 1 ? '' : 's'})
                      </span>
                    </button>
                  ) : (
                    <AnsiText text={r.message} query={search.query && search.lines.has(index) ? search.query : ''} background={background} />
                  )}
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
