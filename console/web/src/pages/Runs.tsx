import { useId, useMemo, useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router';
import { useRuns, useRuntimes } from '../api/queries';
import type { RunListQuery } from '../api/types';
import { RUN_PHASES } from '../api/types';
import { LiveToggle, SummaryBanner } from '../components/LiveToggle';
import { PageHeader, TableWrap } from '../components/Page';
import { PhaseBadge } from '../components/Status';
import { Empty, ErrorState, Loading } from '../components/States';
import { bounded, dateTime } from '../lib/format';
import { Ago, Elapsed } from '../components/Time';
import { RUN_COLUMNS, sortRuns, type RunColumn } from '../lib/sort';
import { PageSize, Pager, SnapshotNote, SortHeader, useDraft, useListUrl } from '../components/ListControls';
import './Runs.css';

export function RunsPage() {
  const { ns = 'default' } = useParams();
  const url = useListUrl<RunColumn>(RUN_COLUMNS);
  const { params, setParams, name, limit, sort, pages, cont, setParam } = url;
  const id = useId();
  const phase = params.get('phase') ?? '';
  const runtime = params.get('runtime') ?? '';
  const labelSelector = params.get('labelSelector') ?? '';
  const assignedPod = params.get('assignedPod') ?? '';
  const [live, setLive] = useState(true);

  const q: RunListQuery = useMemo(
    () => ({
      ...(phase ? { phase } : {}),
      ...(runtime ? { runtime } : {}),
      ...(labelSelector ? { labelSelector } : {}),
      ...(assignedPod ? { assignedPod } : {}),
      ...(name ? { name } : {}),
      limit,
      ...(cont ? { continue: cont } : {}),
    }),
    [phase, runtime, labelSelector, assignedPod, name, limit, cont],
  );
  // Only the first page refreshes live: a continue token reads the list as it
  // was when page 1 was read, so reading it again shows nothing new.
  const runs = useRuns(ns, q, { live: live && !cont });
  const setLiveAndRead = (on: boolean) => {
    setLive(on);
    if (on) void runs.refetch();
  };
  const runtimes = useRuntimes(ns, { live: false });

  const [draftName, setDraftName] = useDraft(name);
  const [draftSelector, setDraftSelector] = useDraft(labelSelector);

  const onSelector = (e: FormEvent) => {
    e.preventDefault();
    const next = new URLSearchParams(params);
    for (const [k, v] of [
      ['labelSelector', draftSelector.trim()],
      ['name', draftName.trim().toLowerCase()],
    ] as const) {
      if (v) next.set(k, v);
      else next.delete(k);
    }
    next.delete('cont');
    setParams(next, { replace: true });
  };

  const sortHeader = (column: RunColumn, label: string, className?: string) => (
    <SortHeader url={url} column={column} label={label} {...(className ? { className } : {})} />
  );

  const filtered = Boolean(phase || runtime || labelSelector || assignedPod || name);
  const data = runs.data;
  const summary = data?.summary === true;

  return (
    <>
      <PageHeader
        title="Runs"
        crumbs={[{ label: ns }, { label: 'Runs' }]}
        actions={
          cont ? (
            <SnapshotNote pages={pages.length} updatedAt={runs.dataUpdatedAt} when={(t) => dateTime(new Date(t).toISOString())} />
          ) : (
            <LiveToggle live={live} onChange={setLiveAndRead} updatedAt={runs.dataUpdatedAt} fetching={runs.isFetching} />
          )
        }
      />
      <form className="filters" onSubmit={onSelector} aria-label="Filter Runs">
        <div className="field">
          <label htmlFor={`${id}-phase`}>Phase</label>
          <select
            id={`${id}-phase`}
            className="input"
            value={phase}
            onChange={(e) => setParam('phase', e.target.value)}
          >
            <option value="">All phases</option>
            {RUN_PHASES.map((p) => (
              <option key={p} value={p}>
                {p}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-runtime`}>Runtime</label>
          <select
            id={`${id}-runtime`}
            className="input"
            value={runtime}
            onChange={(e) => setParam('runtime', e.target.value)}
          >
            <option value="">All runtimes</option>
            {runtime && !runtimes.data?.items.some((r) => r.metadata.name === runtime) && (
              <option value={runtime}>{runtime}</option>
            )}
            {runtimes.data?.items.map((r) => (
              <option key={r.metadata.name} value={r.metadata.name}>
                {r.metadata.name}
              </option>
            ))}
          </select>
        </div>
        <div className="field">
          <label htmlFor={`${id}-name`}>Name</label>
          <input
            id={`${id}-name`}
            className="input mono"
            type="search"
            value={draftName}
            placeholder="part of a name"
            spellCheck={false}
            autoComplete="off"
            onChange={(e) => setDraftName(e.target.value)}
            size={16}
          />
        </div>
        {summary && !labelSelector ? (
          // A public summary hides labels, so the server refuses a label selector without a login.
          <div className="field end">
            <button type="submit" className="button">
              Apply
            </button>
          </div>
        ) : (
          <div className="field grow">
            <label htmlFor={`${id}-sel`}>Label selector</label>
            <div className="input-group">
              <input
                id={`${id}-sel`}
                className="input mono"
                value={draftSelector}
                placeholder="app=web,tier!=db"
                spellCheck={false}
                onChange={(e) => setDraftSelector(e.target.value)}
              />
              <button type="submit" className="button">
                Apply
              </button>
            </div>
          </div>
        )}
        {assignedPod && (
          <div className="field">
            <span className="field-label-static">Assigned Pod</span>
            <span className="chip">
              {assignedPod}
              <button type="button" className="chip-x" aria-label="Remove Pod filter" onClick={() => setParam('assignedPod', '')}>
                ×
              </button>
            </span>
          </div>
        )}
        <PageSize url={url} id={id} />
        {filtered && (
          <div className="field end">
            <button type="button" className="button subtle" onClick={() => setParams(new URLSearchParams(), { replace: true })}>
              Clear filters
            </button>
          </div>
        )}
      </form>

      {summary && <SummaryBanner />}
      {runs.isPending ? (
        <Loading what="Runs" />
      ) : runs.isError && !data ? (
        <ErrorState error={runs.error} what="Runs" />
      ) : data && data.items.length === 0 ? (
        <Empty title={filtered ? 'No Runs match these filters' : `No Runs in namespace ${ns}`}>
          {filtered ? 'Change or clear the filters.' : 'Runs created in this namespace will appear here.'}
        </Empty>
      ) : data ? (
        <>
          {runs.isError && <ErrorState error={runs.error} what="the latest Runs" />}
          <TableWrap label="Runs">
            <table className="table">
              <caption className="visually-hidden">Runs in namespace {ns}</caption>
              <thead>
                <tr>
                  {sortHeader('name', 'Name')}
                  {sortHeader('phase', 'Phase')}
                  {sortHeader('runtime', 'Runtime')}
                  {!summary && (
                    <>
                      {sortHeader('pod', 'Assigned Pod')}
                      {sortHeader('attempt', 'Attempts', 'num')}
                      <th scope="col">Status</th>
                      {sortHeader('duration', 'Duration', 'num')}
                      {sortHeader('completed', 'Completed', 'num')}
                    </>
                  )}
                  {sortHeader('age', 'Age', 'num')}
                </tr>
              </thead>
              <tbody>
                {sortRuns(data.items, sort).map((r) => (
                  <tr key={r.metadata.uid ?? r.metadata.name}>
                    <td className="name">
                      <Link to={`/namespaces/${ns}/runs/${r.metadata.name}`}>{r.metadata.name}</Link>
                      {r.mode && <span className="tag">{r.mode}</span>}
                      {r.workflowRun && (
                        <p className="row-note muted small" data-workflowrun={r.workflowRun.name}>
                          from <Link to={`/namespaces/${ns}/workflowruns/${r.workflowRun.name}`}>{r.workflowRun.name}</Link>
                          {r.workflowRun.job && (
                            <>
                              {' · '}
                              <Link to={`/namespaces/${ns}/workflowruns/${r.workflowRun.name}/jobs/${encodeURIComponent(r.workflowRun.job)}`}>{r.workflowRun.job}</Link>
                            </>
                          )}
                          {r.workflowRun.step && ` · ${r.workflowRun.step}`}
                          {r.workflowRun.actionStep && ` › ${r.workflowRun.actionStep}`}
                        </p>
                      )}
                    </td>
                    <td>
                      <PhaseBadge phase={r.phase} />
                    </td>
                    <td>
                      <Link to={`/namespaces/${ns}/runtimes/${r.runtime}`}>{r.runtime}</Link>
                    </td>
                    {!summary && (
                    <>
                    <td className="mono">
                      {r.assignedPod ? (
                        <Link
                          title="Show the Runs on this Pod"
                          to={`/namespaces/${ns}/runs?assignedPod=${encodeURIComponent(r.assignedPod)}`}
                        >
                          {r.assignedPod}
                        </Link>
                      ) : (
                        <span className="muted">—</span>
                      )}
                    </td>
                    <td className="num">{r.attempt ?? <span className="muted">—</span>}</td>
                    <td className="reason">
                      {r.message && (
                        <span className="run-message" title={r.message}>
                          {bounded(r.message, 120).text}
                        </span>
                      )}
                      {r.lastTransition ? (
                        <span className="muted small run-transition" title={r.lastTransition.message ?? ''}>
                          <strong>{r.lastTransition.reason ?? r.lastTransition.type}</strong>
                          {r.lastTransition.time && <> · <Ago t={r.lastTransition.time} suffix=" ago" /></>}
                        </span>
                      ) : (
                        !r.message && <span className="muted">—</span>
                      )}
                    </td>
                    <td className="num">
                      <Elapsed start={r.startTime} end={r.completionTime} />
                    </td>
                    <td className="num">{r.completionTime ? <Ago t={r.completionTime} suffix=" ago" /> : <span className="muted">—</span>}</td>
                    </>
                    )}
                    <td className="num">
                      <Ago t={r.metadata.creationTimestamp} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <Pager
            url={url}
            count={data.items.length}
            noun="Runs"
            loading={runs.isPlaceholderData}
            next={data.continue}
            remaining={data.remainingItemCount}
          />
        </>
      ) : null}
    </>
  );
}
