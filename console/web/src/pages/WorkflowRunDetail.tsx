import { Link, useParams, useSearchParams } from 'react-router';
import { Ago, Elapsed } from '../components/Time';
import { useWorkflowRun } from '../api/queries';
import type { WorkflowRunDetail } from '../api/types';
import { DagStages, DagView, NARROW_DAG, useDag, useMediaQuery } from '../components/DagView';
import { JobTimeline } from '../components/JobTimeline';
import { KeyValues, PageHeader, Panel, TableWrap } from '../components/Page';
import { PhaseBadge } from '../components/Status';
import { PublicSummary } from '../components/PublicSummary';
import { ErrorState, Loading } from '../components/States';
import { bounded, dateTime } from '../lib/format';
import { ConditionsTimeline } from './RunDetail';
import { ManifestView } from '../components/ManifestView';
import { LiveBadge } from '../components/LiveToggle';

/** The same graph as a table: one row per job, in stage order. */
export function DagTable({ wr, ns }: { wr: WorkflowRunDetail; ns: string }) {
  const { staging } = useDag(wr);
  const base = `/namespaces/${ns}/workflowruns/${wr.metadata.name}/jobs/`;
  return (
    <TableWrap label="Jobs">
      <table className="table flat">
        <caption className="visually-hidden">Jobs of {wr.metadata.name} with their dependencies</caption>
        <thead>
          <tr>
            <th scope="col" className="num">Stage</th>
            <th scope="col">Job</th>
            <th scope="col">Needs</th>
            <th scope="col">Phase</th>
            <th scope="col">Result</th>
            <th scope="col">Steps</th>
            <th scope="col">Child run</th>
          </tr>
        </thead>
        <tbody>
          {staging.stages.flatMap((ids, s) =>
            ids.map((id) => {
              const j = staging.jobs.get(id)!;
              const st = wr.status.jobs?.[id];
              const steps = st?.steps ?? [];
              const done = steps.filter((x) => x.phase === 'Succeeded').length;
              return (
                <tr key={id}>
                  <td className="num">{s + 1}</td>
                  <td className="name">
                    <Link to={`${base}${encodeURIComponent(id)}`}>{id}</Link>
                  </td>
                  <td>
                    {j.needs.length === 0 && j.unknownNeeds.length === 0 ? (
                      <span className="muted">—</span>
                    ) : (
                      <>
                        {j.needs.map((n, i) => (
                          <span key={n}>
                            {i > 0 && ', '}
                            <Link to={`${base}${encodeURIComponent(n)}`}>{n}</Link>
                          </span>
                        ))}
                        {j.unknownNeeds.map((n) => (
                          <span key={n} className="tag tag-warning" title="Not a declared job">
                            {n} (undeclared)
                          </span>
                        ))}
                        {j.cyclic && <span className="tag tag-warning">cycle</span>}
                      </>
                    )}
                  </td>
                  <td>
                    <PhaseBadge phase={st?.phase ?? 'Pending'} />
                  </td>
                  <td className="mono small result" title={st?.outputs?.result}>
                    {st?.outputs?.result !== undefined ? bounded(st.outputs.result, 80).text : <span className="muted">—</span>}
                  </td>
                  <td>{steps.length ? `${done}/${steps.length}` : <span className="muted">—</span>}</td>
                  <td>
                    {st?.workflowRunName ? (
                      <Link to={`/namespaces/${ns}/workflowruns/${st.workflowRunName}`}>{st.workflowRunName}</Link>
                    ) : (
                      <span className="muted">—</span>
                    )}
                  </td>
                </tr>
              );
            }),
          )}
        </tbody>
      </table>
    </TableWrap>
  );
}

export function WorkflowRunDetailPage() {
  const { ns = 'default', wr: name = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const v = params.get('view');
  const view = v === 'table' || v === 'timeline' ? v : 'graph';
  const q = useWorkflowRun(ns, name);
  const narrow = useMediaQuery(NARROW_DAG);
  const wr = q.data;
  const crumbs = [{ label: ns }, { label: 'Workflow Runs', to: `/namespaces/${ns}/workflowruns` }, { label: name }];
  if (q.isPending) return (<><PageHeader title={name} crumbs={crumbs} /><Loading what="the Workflow Run" /></>);
  if (!wr) return (<><PageHeader title={name} crumbs={crumbs} /><ErrorState error={q.error} what="this Workflow Run" summary={<PublicSummary kind="workflowruns" ns={ns} name={name} />} /></>);

  const children = Object.entries(wr.status.jobs ?? {}).filter(([, j]) => j.workflowRunName);
  const setView = (v: 'graph' | 'table' | 'timeline') => {
    const next = new URLSearchParams(params);
    if (v !== 'graph') next.set('view', v);
    else next.delete('view');
    setParams(next, { replace: true });
  };

  return (
    <>
      <PageHeader title={name} crumbs={crumbs} badge={<PhaseBadge phase={wr.status.phase} />} actions={<LiveBadge />} />
      {q.isError && <ErrorState error={q.error} what="the latest state" />}
      {wr.status.message && (
        <p className={`notice ${wr.status.phase === 'Failed' ? 'danger' : ''}`} id="wr-message">
          {wr.status.message}
        </p>
      )}
      <Panel
        title="Jobs"
        id="jobs"
        actions={
          <div className="segmented" role="group" aria-label="Show jobs as">
            <button type="button" className="button small" aria-pressed={view === 'graph'} onClick={() => setView('graph')}>
              Graph
            </button>
            <button type="button" className="button small" aria-pressed={view === 'table'} onClick={() => setView('table')}>
              Table
            </button>
            <button type="button" className="button small" aria-pressed={view === 'timeline'} onClick={() => setView('timeline')}>
              Timeline
            </button>
          </div>
        }
      >
        {view === 'graph' ? (narrow ? <DagStages wr={wr} ns={ns} /> : <DagView wr={wr} ns={ns} />) : view === 'table' ? <DagTable wr={wr} ns={ns} /> : <JobTimeline wr={wr} ns={ns} />}
      </Panel>
      <div className="grid-2">
        <Panel title="Overview">
          <KeyValues
            items={[
              ['Snapshot', wr.status.snapshotName ? <code key="s" className="wrap-anywhere">{wr.status.snapshotName}</code> : undefined],
              ['Parent run', wr.parentWorkflowRun ? <Link key="p" to={`/namespaces/${ns}/workflowruns/${wr.parentWorkflowRun}`}>{wr.parentWorkflowRun}</Link> : undefined],
              ['Jobs', Object.keys(wr.spec.jobs ?? {}).length],
              ['Created', wr.metadata.creationTimestamp ? <span key="c">{dateTime(wr.metadata.creationTimestamp)} (<Ago t={wr.metadata.creationTimestamp} suffix=" ago" />)</span> : undefined],
              ['Started', wr.status.startTime ? dateTime(wr.status.startTime) : <span key="s" className="muted">no step has started a Run yet</span>],
              ['Completed', wr.status.completionTime ? dateTime(wr.status.completionTime) : undefined],
              ['Duration', wr.status.startTime ? <Elapsed key="d" start={wr.status.startTime} end={wr.status.completionTime} /> : undefined],
              [
                'Child runs',
                children.length ? (
                  <ul key="c" className="run-list">
                    {children.map(([id, j]) => (
                      <li key={id}>
                        <Link to={`/namespaces/${ns}/workflowruns/${j.workflowRunName}`}>{j.workflowRunName}</Link>{' '}
                        <span className="muted small">from job {id}</span>
                      </li>
                    ))}
                  </ul>
                ) : undefined,
              ],
            ]}
          />
        </Panel>
        <Panel title="Conditions">
          <ConditionsTimeline conditions={wr.status.conditions} />
        </Panel>
      </div>
      <Panel title="YAML" id="yaml">
        <ManifestView resource="workflowruns" ns={ns} name={name} />
      </Panel>
    </>
  );
}
