/**
 * A Run's log on a page: useRunLogStream reads it, LogToolbar holds the
 * controls, LogViewer renders it. Bounded tail, live follow (on by default
 * for an active Run) with a visible paused state, "load older", wrap and
 * timestamp toggles, search over everything loaded with a match count and an
 * "only matching lines" filter, line deep links that name the record's
 * cursor, download of everything loaded.
 */
import { useDeferredValue, useMemo, useReducer, useRef, useState } from 'react';
import { useLocation } from 'react-router';
import { useRunLogStream } from '../api/logStream';
import { stripAnsi } from '../lib/ansi';
import { blobSink, downloadWholeLog, fileName, pageText, pickFileSink, saveBlob, type LogFormat } from '../lib/logDownload';
import { firstError } from '../lib/logFold';
import { INITIAL_FOLLOW, clampTail, followReducer, parseCursorHash, searchLines, stepMatch } from '../lib/logs';
import { LogToolbar } from './LogToolbar';
import { LogViewer } from './LogViewer';

export interface RunLogViewProps {
  ns: string;
  run: string;
  /** The Run is not terminal: follow may reconnect after a dropped stream. */
  active: boolean;
  defaultTail?: number;
  /** Prefix of line anchors (`L` → `#L12`); distinct per viewer on one page. */
  anchorPrefix?: string;
  /** Height of the scroll area in CSS pixels. */
  height?: number;
  /** The Pod the Run is assigned to (a 409 then means its log is not readable yet); null: none yet; undefined: not known. */
  assignedPod?: string | null | undefined;
  /** The Run failed: the log opens at its first error, and offers to jump there. */
  failed?: boolean;
}

export function RunLogView({ ns, run, active, defaultTail = 100, anchorPrefix = 'L', height = 420, assignedPod, failed = false }: RunLogViewProps) {
  const location = useLocation();
  const [tail, setTail] = useState(clampTail(defaultTail));
  const [tailDraft, setTailDraft] = useState(String(clampTail(defaultTail)));
  // The record a deep link names, as the page was opened (a click on a line later only marks it).
  const [anchor] = useState(() => parseCursorHash(location.hash, anchorPrefix));
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

  const goToMatch = (dir: 1 | -1) => {
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
  if (deferredQuery !== searched && result) {
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
      onlyMatching={onlyMatching && !!deferredQuery}
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
            matchCount={matchCount}
            currentMatch={current}
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
      height={height}
    />
  );
}
