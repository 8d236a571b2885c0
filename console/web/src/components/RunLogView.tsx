/**
 * A Run's log on a page: useRunLogStream reads it, LogToolbar holds the
 * controls, LogViewer renders it. Bounded tail, live follow (on by default
 * for an active Run) with a visible paused state, "load older", wrap and
 * timestamp toggles, search over everything loaded with a match count and an
 * "only matching lines" filter, line deep links that name the record's
 * cursor, download of everything loaded.
 */
import { useDeferredValue, useMemo, useReducer, useState } from 'react';
import { useLocation } from 'react-router';
import { useRunLogStream } from '../api/logStream';
import { stripAnsi } from '../lib/ansi';
import { firstError } from '../lib/logFold';
import { INITIAL_FOLLOW, clampTail, followReducer, logText, parseCursorHash, searchLines, stepMatch } from '../lib/logs';
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
      dispatch({ type: 'scrolled', atBottom: false });
      setJump({ line: m.line });
    }
  };

  // The first error of what is loaded: the first stderr record, else the first line that reads like one.
  const errorLine = useMemo(() => (failed ? firstError(records.lines) : -1), [failed, records]);
  const jumpToError = () => {
    if (errorLine < 0) return;
    dispatch({ type: 'scrolled', atBottom: false });
    setJump({ line: errorLine });
  };
  // A failed Run's log opens at its first error (unless a link names a line): once, when it is loaded.
  const [openedAtError, setOpenedAtError] = useState(false);
  if (failed && !anchor && !openedAtError && log.status === 'ready' && errorLine >= 0) {
    setOpenedAtError(true);
    jumpToError();
  }

  const download = () => {
    const blob = new Blob([logText(lines, timestamps)], { type: 'text/plain;charset=utf-8' });
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
    if (n === tail) log.reload();
    else setTail(n);
  };

  return (
    <LogViewer
      run={run}
      log={log}
      assignedPod={assignedPod}
      onlyMatching={onlyMatching && !!deferredQuery}
      toolbar={
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
          onDownload={download}
          firstError={failed ? (errorLine >= 0 ? jumpToError : null) : undefined}
        />
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
