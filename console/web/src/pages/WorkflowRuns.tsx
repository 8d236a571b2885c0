import { Link } from 'react-router';
import { useWorkflowRuns } from '../api/queries';
import { ListPage, useListPage } from '../components/ListPage';
import { PhaseBadge } from '../components/Status';
import { age, dateTime, duration } from '../lib/format';
import { sortWorkflowRuns, WORKFLOW_RUN_COLUMNS } from '../lib/sort';

/** The Workflow Runs of a namespace, child runs marked with their parent. */
export function WorkflowRunsPage() {
  const list = useListPage(WORKFLOW_RUN_COLUMNS);
  const { ns } = list;
  const q = useWorkflowRuns(ns, list.options, list.query);
  return (
    <ListPage
      list={list}
      result={q}
      title="Workflow Runs"
      summary
      columns={[
        { label: 'Name', sort: 'name' },
        { label: 'Phase', sort: 'phase' },
        { label: 'Jobs', sort: 'jobs' },
        { label: 'Started', sort: 'started' },
        { label: 'Duration', sort: 'duration' },
        { label: 'Age', sort: 'age', className: 'num' },
      ]}
      sort={sortWorkflowRuns}
      cells={(w) => (
        <>
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
        </>
      )}
    />
  );
}
