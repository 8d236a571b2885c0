import { useId, useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';
import { useWorkflowRuns } from '../api/queries';
import type { ObjectListQuery } from '../api/types';
import { NameFilter, Pager, SnapshotNote, SortHeader, useListUrl } from '../components/ListControls';
import { LiveToggle, SummaryBanner } from '../components/LiveToggle';
import { PageHeader, TableWrap } from '../components/Page';
import { PhaseBadge } from '../components/Status';
import { Empty, ErrorState, Loading } from '../components/States';
import { age, dateTime, duration } from '../lib/format';
import { sortWorkflowRuns, WORKFLOW_RUN_COLUMNS, type WorkflowRunColumn } from '../lib/sort';

export function WorkflowRunsPage() {
  const { ns = 'default' } = useParams();
  const id = useId();
  const url = useListUrl<WorkflowRunColumn>(WORKFLOW_RUN_COLUMNS);
  const { name, limit, cont } = url;
  const [live, setLive] = useState(true);
  const query: ObjectListQuery = useMemo(() => ({ ...(name ? { name } : {}), limit, ...(cont ? { continue: cont } : {}) }), [name, limit, cont]);
  // Only the first page refreshes live (a continue token reads the list as it was).
  const q = useWorkflowRuns(ns, { live: live && !cont }, query);
  const data = q.data;
  return (
    <>
      <PageHeader
        title="Workflow Runs"
        crumbs={[{ label: ns }, { label: 'Workflow Runs' }]}
        actions={
          cont ? (
            <SnapshotNote pages={url.pages.length} updatedAt={q.dataUpdatedAt} when={(t) => dateTime(new Date(t).toISOString())} />
          ) : (
            <LiveToggle live={live} onChange={setLive} updatedAt={q.dataUpdatedAt} fetching={q.isFetching} />
          )
        }
      />
      <NameFilter url={url} id={id} label="Filter Workflow Runs" />
      {data?.summary && <SummaryBanner />}
      {q.isPending ? (
        <Loading what="Workflow Runs" />
      ) : !data ? (
        <ErrorState error={q.error} what="Workflow Runs" />
      ) : data.items.length === 0 ? (
        name ? (
          <Empty title="No Workflow Runs match this name">Change or clear the name.</Empty>
        ) : (
          <Empty title={`No Workflow Runs in namespace ${ns}`} />
        )
      ) : (
        <>
        <TableWrap label="Workflow Runs">
          <table className="table">
            <caption className="visually-hidden">Workflow Runs in namespace {ns}</caption>
            <thead>
              <tr>
                <SortHeader url={url} column="name" label="Name" />
                <SortHeader url={url} column="phase" label="Phase" />
                <SortHeader url={url} column="jobs" label="Jobs" />
                <SortHeader url={url} column="started" label="Started" />
                <SortHeader url={url} column="duration" label="Duration" />
                <SortHeader url={url} column="age" label="Age" className="num" />
              </tr>
            </thead>
            <tbody>
              {sortWorkflowRuns(data.items, url.sort).map((w) => (
                <tr key={w.metadata.name}>
                  <td className="name">
                    <Link to={`/namespaces/${ns}/workflowruns/${w.metadata.name}`}>{w.metadata.name}</Link>
                    {w.parentWorkflowRun && (
                      <span className="muted small">
                        {' '}
                        · child of <Link to={`/namespaces/${ns}/workflowruns/${w.parentWorkflowRun}`}>{w.parentWorkflowRun}</Link>
                      </span>
                    )}
                    {w.message && (
                      <p className="row-note clamp-2 text-danger small" title={w.message}>
                        {w.message}
                      </p>
                    )}
                  </td>
                  <td>
                    <PhaseBadge phase={w.phase} />
                  </td>
                  <td>
                    <span className="ratio">
                      <meter min={0} max={Math.max(1, w.jobs.total)} value={w.jobs.succeeded} aria-label={`${w.jobs.succeeded} of ${w.jobs.total} jobs succeeded`} />
                      {w.jobs.succeeded}/{w.jobs.total}
                      {w.jobs.failed > 0 && <span className="text-danger"> · {w.jobs.failed} failed</span>}
                      {w.jobs.running > 0 && <span className="muted"> · {w.jobs.running} running</span>}
                    </span>
                  </td>
                  <td title={w.startTime ? dateTime(w.startTime) : 'No step has started a Run yet'}>
                    {w.startTime ? `${age(w.startTime)} ago` : <span className="muted">—</span>}
                  </td>
                  <td>{duration(w.startTime, w.completionTime)}</td>
                  <td className="num" title={dateTime(w.metadata.creationTimestamp)}>
                    {age(w.metadata.creationTimestamp)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
        <Pager url={url} count={data.items.length} noun="Workflow Runs" loading={q.isPlaceholderData} next={data.continue} remaining={data.remainingItemCount} />
        </>
      )}
    </>
  );
}
