/**
 * A Run's log on a page: useRunLogStream reads it, LogToolbar holds the
 * controls, LogViewer renders it. Bounded tail, live follow (on by default
 * for an active Run) with a visible paused state, "load older", wrap and
 * timestamp toggles, search over everything loaded with a match count and an
 * "only matching lines" filter, line deep links that name the record's
 * cursor, download of everything loaded.
 */
import { useDeferredValue, useEffect, useMemo, useReducer, useRef, useState } from 'react';
import { useLocation } from 'react-router';
import { matchCountText, useWholeLogSearch, type WholeLogMatch } from '../api/logSearch';
import { useRunLogStream } from '../api/logStream';
import { stripAnsi } from '../lib/ansi';
import { blobSink, downloadWholeLog, fileName, pageText, pickFileSink, saveBlob, type LogFormat } from '../lib/logDownload';
import { firstError } from '../lib/logFold';
import { INITIAL_FOLLOW, clampTail, followReducer, indexOfCursor, parseCursorHash, searchLines, stepMatch } from '../lib/logs';
import { LogToolbar } from './LogToolbar';
import { LogViewer } from './LogViewer';
import './RunLogView.css';

export interface RunLogViewProps {
  ns: string;
  run: string;
  /** The Run is not terminal: follow may reconnect after a dropped stream. */
  active: boolean;
  defaultTail?: number;
  /** Prefix of line anchors (`L` → `#L12`); distinct per viewer on one page. */
  anchorPrefix?: string;
  /** Height of the scroll area in CSS pixels, or `fill`: the window's height less the page's header and the log's toolbar. */
  height?: number | 'fill';
  /** The Pod the Run is assigned to (a 409 then means its log is not readable yet); null: none yet; undefined: not known. */
  assignedPod?: string | null | undefined;
  /** The Run failed: the log opens at its first error, and offers to jump there. */
  failed?: boolean;
}

/** The window's inner height, followed as it changes. */
function useWindowHeight(): number {
  const [h, setH] = useState(() => window.innerHeight);
  useEffect(() => {
    const on = () => setH(window.innerHeight);
    window.addEventListener('resize', on);
    return () => window.removeEventListener('resize', on);
  }, []);
  return h;
}

/** Space above and below a log that fills the window: the top bar, the sticky toolbar and state line, the panel's padding. */
const FILL_CHROME = 230;

export function RunLogView({ ns, run, active, defaultTail = 100, anchorPrefix = 'L', height = 420, assignedPod, failed = false }: RunLogViewProps) {
  const location = useLocation();
  const windowHeight = useWindowHeight();
  const [tail, setTail] = useState(clampTail(defaultTail));
  const [tailDraft, setTailDraft] = useState(String(clampTail(defaultTail)));
  // The record a deep link names, as the page was opened (a click on a line later only marks it).
  // A jump to a match of the whole-log search moves it to that match's cursor (the log is read around it).
  const [anchor, setAnchor] = useState(() => parseCursorHash(location.hash, anchorPrefix));
  // An active Run is followed from the start; a finished one shows its tail.
  const [follow, dispatch] = useReducer(followReducer, { ...INITIAL_FOLLOW, follow: active, pinned: !anchor });
  const [onlyMatching, setOnlyMatching] = useState(false);
  const [wrap, setWrap] = useState(false);
  const [timestamps, setTimestamps] = useState(false);
  const [query, setQuery] = useState('');
  const deferredQuery = useDeferredValue(query);
  // The chosen match belongs to the query it was chosen for; a new query starts at none.
  const [pick, setPick] = useState({ query: '', index: -1 });
  const [jump, setJump] = useState<{ line: number } | null>(null);

  const log = useRunLogStream(ns, run, {
    tail,
    follow: follow.follow,
    active,
    anchor,
    onAppend: (count) => dispatch({ type: 'appended', count }),
  });
  const { records } = log;
  const lines = records.lines;

  const result = useMemo(
    () => (deferredQuery ? searchLines(records.lines.map((r) => stripAnsi(r.message)), deferredQuery) : null),
    [deferredQuery, records],
  );
  const matchLines = useMemo(() => new Set(result?.lines ?? []), [result]);
  const matchCount = result?.matches.length ?? 0;
  const current = pick.query === deferredQuery ? pick.index : -1;

  // Search in the whole log (on the server): its matches, the one shown, the cursor to scroll to once loaded.
  const [scope, setScope] = useState<'loaded' | 'whole'>('loaded');
  const [regex, setRegex] = useState(false);
  const whole = useWholeLogSearch(ns, run, deferredQuery, regex, scope === 'whole');
  const wholeKey = `${deferredQuery}\u0000${regex}`;
  const [wholePick, setWholePick] = useState({ key: '', index: -1 });
  const wholeCurrent = wholePick.key === wholeKey ? wholePick.index : -1;
  const [pendingCursor, setPendingCursor] = useState<string | null>(null);
  const goToWhole = (index: number, matches: readonly WholeLogMatch[]) => {
    const m = matches[index];
    if (!m) return;
    setWholePick({ key: wholeKey, index });
    dispatch({ type: 'held', at: 'match' });
    setPendingCursor(m.cursor);
    setAnchor(m.cursor);
  };
  const stepWhole = async (dir: 1 | -1) => {
    let ms = whole.matches;
    if (ms.length === 0) return;
    if (dir === 1 && wholeCurrent === ms.length - 1 && whole.more) ms = await whole.loadMore();
    goToWhole(stepMatch(ms.length, wholeCurrent, dir), ms);
  };
  // The match's record is loaded (the window around it was read): scroll to it.
  if (pendingCursor && log.anchor?.cursor === pendingCursor && log.anchor.found !== null) {
    setPendingCursor(null);
    const at = indexOfCursor(lines, pendingCursor);
    if (at >= 0) setJump({ line: at });
  }
  // A whole-log search goes to its first match once it is answered.
  const [wholeSearched, setWholeSearched] = useState('');
  if (scope === 'whole' && whole.status === 'ready' && wholeSearched !== wholeKey) {
    setWholeSearched(wholeKey);
    if (whole.matches.length > 0) goToWhole(0, whole.matches);
  }

  const goToMatch = (dir: 1 | -1) => {
    if (scope === 'whole') {
      void stepWhole(dir);
      return;
    }
    if (!result || matchCount === 0) return;
    const next = stepMatch(matchCount, current, dir);
    setPick({ query: deferredQuery, index: next });
    const m = result.matches[next];
    if (m) {
      dispatch({ type: 'held', at: 'match' });
      setJump({ line: m.line });
    }
  };

  // Typing a search goes to its first match (once per query; Enter / the arrows step on).
  const [searched, setSearched] = useState('');
  if (deferredQuery !== searched && result && scope === 'loaded') {
    setSearched(deferredQuery);
    const m = result.matches[0];
    if (m) {
      setPick({ query: deferredQuery, index: 0 });
      dispatch({ type: 'held', at: 'match' });
      setJump({ line: m.line });
    }
  } else if (!deferredQuery && searched) {
    setSearched('');
  }

  // The first error of what is loaded: the first stderr record, else the first line that reads like one.
  const errorLine = useMemo(() => (failed ? firstError(records.lines) : -1), [failed, records]);
  const jumpToError = () => {
    if (errorLine < 0) return;
    dispatch({ type: 'held', at: 'error' });
    setJump({ line: errorLine });
  };
  // A failed Run's log opens at its first error (unless a link names a line): once, when it is loaded.
  const [openedAtError, setOpenedAtError] = useState(false);
  if (failed && !anchor && !openedAtError && log.status === 'ready' && errorLine >= 0) {
    setOpenedAtError(true);
    jumpToError();
  }

  // A whole-log download: records written so far, and how it ended.
  const [saving, setSaving] = useState<{ format: LogFormat; records: number; state: 'running' | 'done' | 'cancelled' | 'error'; message?: string } | null>(null);
  const cancelRef = useRef<AbortController | null>(null);

  const download = (what: 'loaded' | 'whole', format: LogFormat) => {
    const name = fileName(ns, run, format);
    const type = format === 'ndjson' ? 'application/x-ndjson' : 'text/plain;charset=utf-8';
    if (what === 'loaded') {
      saveBlob(new Blob([pageText(lines, format, timestamps)], { type }), name);
      return;
    }
    const ctrl = new AbortController();
    cancelRef.current = ctrl;
    setSaving({ format, records: 0, state: 'running' });
    void (async () => {
      try {
        // The picker first: it needs the click's user activation.
        const sink = (await pickFileSink(name, format)) ?? blobSink(name, type);
        const got = await downloadWholeLog(ns, run, sink, {
          format,
          timestamps,
          signal: ctrl.signal,
          onProgress: (records) => setSaving((s) => (s && s.state === 'running' ? { ...s, records } : s)),
        });
        setSaving({
          format,
          records: got.records,
          state: 'done',
          ...(got.incomplete ? { message: 'the server gives no cursors, so only the first page could be read' } : {}),
        });
      } catch (e) {
        if (e instanceof DOMException && e.name === 'AbortError') setSaving((s) => ({ format, records: s?.records ?? 0, state: 'cancelled' }));
        else setSaving((s) => ({ format, records: s?.records ?? 0, state: 'error', message: e instanceof Error ? e.message : String(e) }));
      } finally {
        if (cancelRef.current === ctrl) cancelRef.current = null;
      }
    })();
  };

  const applyTail = () => {
    const n = clampTail(Number(tailDraft));
    setTailDraft(String(n));
    if (n === tail) log.reload();
    else setTail(n);
  };

  const savingNote = saving && (
    <div className={`log-saving small ${saving.state === 'error' ? 'danger-text' : ''}`} role="status">
      {saving.state === 'running' && <>Downloading the whole log: {saving.records.toLocaleString()} records so far… </>}
      {saving.state === 'done' && (
        <>
          Downloaded the whole log: {saving.records.toLocaleString()} records{saving.message ? `; ${saving.message}` : ''}.{' '}
        </>
      )}
      {saving.state === 'cancelled' && <>Download cancelled after {saving.records.toLocaleString()} records. </>}
      {saving.state === 'error' && <>The download failed after {saving.records.toLocaleString()} records: {saving.message} </>}
      {saving.state === 'running' ? (
        <button type="button" className="button small" onClick={() => cancelRef.current?.abort()}>
          Cancel
        </button>
      ) : (
        <button type="button" className="button small" onClick={() => setSaving(null)}>
          Dismiss
        </button>
      )}
    </div>
  );

  return (
    <LogViewer
      run={run}
      log={log}
      assignedPod={assignedPod}
      onlyMatching={onlyMatching && !!deferredQuery && scope === 'loaded'}
      toolbar={
        <>
          <LogToolbar
            tailDraft={tailDraft}
            onTailDraft={setTailDraft}
            onApplyTail={applyTail}
            follow={follow.follow}
            onFollow={(on) => dispatch({ type: 'toggle', follow: on })}
            wrap={wrap}
            onWrap={setWrap}
            timestamps={timestamps}
            onTimestamps={setTimestamps}
            query={query}
            onQuery={setQuery}
            matchCount={scope === 'whole' ? whole.matches.length : matchCount}
            currentMatch={scope === 'whole' ? wholeCurrent : current}
            scope={scope}
            onScope={setScope}
            regex={regex}
            onRegex={setRegex}
            countText={
              scope !== 'whole' || !deferredQuery
                ? undefined
                : whole.status === 'searching'
                  ? 'Searching…'
                  : whole.status === 'error'
                    ? `Search failed: ${whole.error instanceof Error ? whole.error.message : String(whole.error)}`
                    : whole.total === 0
                      ? 'No matches'
                      : `${wholeCurrent >= 0 ? `${(wholeCurrent + 1).toLocaleString()} of ` : ''}${matchCountText(whole.total, whole.capped)}`
            }
            onStepMatch={goToMatch}
            onlyMatching={onlyMatching}
            onOnlyMatching={setOnlyMatching}
            canDownload={lines.length > 0}
            loadedCount={lines.length}
            onDownload={download}
            downloading={saving?.state === 'running'}
            firstError={failed ? (errorLine >= 0 ? jumpToError : null) : undefined}
          />
          {savingNote}
        </>
      }
      follow={follow}
      onFollowEvent={dispatch}
      wrap={wrap}
      timestamps={timestamps}
      search={{ query: deferredQuery, lines: matchLines, current: current >= 0 ? result?.matches[current] : undefined }}
      jump={jump}
      anchorPrefix={anchorPrefix}
      height={height === 'fill' ? Math.max(320, windowHeight - FILL_CHROME) : height}
    />
  );
}
