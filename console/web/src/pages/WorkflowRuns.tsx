import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { useWorkflowRuns } from '../api/queries';
import { LiveToggle, SummaryBanner } from '../components/LiveToggle';
import { PageHeader, TableWrap } from '../components/Page';
import { PhaseBadge } from '../components/Status';
import { Empty, ErrorState, Loading } from '../components/States';
import { age, dateTime, duration } from '../lib/format';

export function WorkflowRunsPage() {
  const { ns = 'default' } = useParams();
  const [live, setLive] = useState(true);
  const q = useWorkflowRuns(ns, { live });
  const data = q.data;
  return (
    <>
      <PageHeader
        title="Workflow Runs"
        crumbs={[{ label: ns }, { label: 'Workflow Runs' }]}
        actions={<LiveToggle live={live} onChange={setLive} updatedAt={q.dataUpdatedAt} fetching={q.isFetching} />}
      />
      {data?.summary && <SummaryBanner />}
      {q.isPending ? (
        <Loading what="Workflow Runs" />
      ) : !data ? (
        <ErrorState error={q.error} what="Workflow Runs" />
      ) : data.items.length === 0 ? (
        <Empty title={`No Workflow Runs in namespace ${ns}`} />
      ) : (
        <TableWrap label="Workflow Runs">
          <table className="table">
            <caption className="visually-hidden">Workflow Runs in namespace {ns}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Phase</th>
                <th scope="col">Jobs</th>
                <th scope="col">Workflow</th>
                <th scope="col">Duration</th>
                <th scope="col" className="num">Age</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((w) => (
                <tr key={w.metadata.name}>
                  <td className="name">
                    <Link to={`/namespaces/${ns}/workflowruns/${w.metadata.name}`}>{w.metadata.name}</Link>
                    {w.parentWorkflowRun && (
                      <span className="muted small">
                        {' '}
                        · child of <Link to={`/namespaces/${ns}/workflowruns/${w.parentWorkflowRun}`}>{w.parentWorkflowRun}</Link>
                      </span>
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
                  <td>{w.workflow ?? <span className="muted">—</span>}</td>
                  <td>{duration(w.startTime, w.completionTime)}</td>
                  <td className="num" title={dateTime(w.metadata.creationTimestamp)}>
                    {age(w.metadata.creationTimestamp)}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </>
  );
}
