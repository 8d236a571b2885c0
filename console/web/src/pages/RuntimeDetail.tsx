import { Link, useParams } from 'react-router';
import { useRuntime } from '../api/queries';
import { KeyValues, PageHeader, Panel, TableWrap } from '../components/Page';
import { ConditionBadge, PhaseBadge } from '../components/Status';
import { ErrorState, Forbidden, Loading } from '../components/States';
import { age, dateTime } from '../lib/format';
import { ConditionsTimeline } from './RunDetail';
import { ManifestView } from '../components/ManifestView';

export function RuntimeDetailPage() {
  const { ns = 'default', name = '' } = useParams();
  const q = useRuntime(ns, name);
  const rt = q.data;
  const crumbs = [{ label: ns }, { label: 'Runtimes', to: `/namespaces/${ns}/runtimes` }, { label: name }];
  if (q.isPending) return (<><PageHeader title={name} crumbs={crumbs} /><Loading what="the Runtime" /></>);
  if (!rt) return (<><PageHeader title={name} crumbs={crumbs} /><ErrorState error={q.error} what="this Runtime" /></>);

  const healthy = rt.status.readyReplicas >= rt.spec.replicas && rt.spec.replicas > 0;
  const declared = Object.entries(rt.spec.capacity?.resources ?? {});
  return (
    <>
      <PageHeader
        title={name}
        crumbs={crumbs}
        badge={<ConditionBadge status={healthy ? 'True' : 'False'} label={`${rt.status.readyReplicas}/${rt.spec.replicas} ready`} />}
        actions={<Link className="button" to={`/namespaces/${ns}/runs?runtime=${encodeURIComponent(name)}`}>Runs on this Runtime</Link>}
      />
      {q.isError && <ErrorState error={q.error} what="the latest state" />}
      <div className="grid-2">
        <Panel title="Overview">
          <KeyValues
            items={[
              ['Replicas', rt.spec.replicas],
              ['Ready Pods', rt.status.readyReplicas],
              ['Port', rt.spec.port],
              ['Image', rt.spec.image ? <code key="i" className="wrap-anywhere">{rt.spec.image}</code> : undefined],
              [
                'Capacity per Pod',
                declared.length ? (
                  <span key="c" className="chips">
                    {declared.map(([k, v]) => (
                      <span key={k} className="chip mono">
                        {k}: {String(v)}
                      </span>
                    ))}
                  </span>
                ) : undefined,
              ],
              ['Created', rt.metadata.creationTimestamp ? `${dateTime(rt.metadata.creationTimestamp)} (${age(rt.metadata.creationTimestamp)} ago)` : undefined],
            ]}
          />
        </Panel>
        <Panel title="Conditions">
          <ConditionsTimeline conditions={rt.status.conditions} />
        </Panel>
      </div>
      <Panel title="Pods">
        {rt.pods.state === 'forbidden' ? (
          <Forbidden access={rt.pods.access} message={rt.pods.message} />
        ) : rt.pods.state !== 'ok' ? (
          <p className="muted">{rt.pods.message}</p>
        ) : rt.pods.items.length === 0 ? (
          <p className="muted">This Runtime has no Pods.</p>
        ) : (
          <TableWrap label="Pods">
            <table className="table flat">
              <thead>
                <tr>
                  <th scope="col">Pod</th>
                  <th scope="col">Phase</th>
                  <th scope="col">Ready</th>
                  <th scope="col">RuntimedReady</th>
                  <th scope="col" className="num">Restarts</th>
                  <th scope="col">Node</th>
                  <th scope="col">Capacity</th>
                  <th scope="col">Assigned Runs</th>
                </tr>
              </thead>
              <tbody>
                {rt.pods.items.map((p) => (
                  <tr key={p.uid} id={`pod-${p.name}`}>
                    <td className="mono">
                      <Link to={`/namespaces/${ns}/runs?assignedPod=${encodeURIComponent(p.name)}`} title="The Runs on this Pod">
                        {p.name}
                      </Link>
                    </td>
                    <td>
                      <PhaseBadge phase={p.phase} />
                    </td>
                    <td>
                      <ConditionBadge status={p.ready ? 'True' : 'False'} label={p.ready ? 'Ready' : 'Not ready'} />
                    </td>
                    <td title={p.runtimedReady?.message}>
                      {p.runtimedReady ? (
                        <ConditionBadge status={p.runtimedReady.status} label={p.runtimedReady.status === 'True' ? 'True' : p.runtimedReady.reason ?? p.runtimedReady.status} />
                      ) : (
                        <span className="muted">—</span>
                      )}
                    </td>
                    <td className="num">{p.restarts}</td>
                    <td className="mono">{p.node ?? '—'}</td>
                    <td>
                      <span className="chips">
                        {Object.entries(p.capacity).length === 0 ? (
                          <span className="muted">—</span>
                        ) : (
                          Object.entries(p.capacity).map(([k, v]) => (
                            <span key={k} className="chip mono">
                              {k}: {v}
                            </span>
                          ))
                        )}
                      </span>
                    </td>
                    <td>
                      {p.runs.length === 0 ? (
                        <span className="muted">none</span>
                      ) : (
                        <ul className="run-list">
                          {p.runs.map((r) => (
                            <li key={r.name}>
                              <Link to={`/namespaces/${ns}/runs/${r.name}`}>{r.name}</Link> <PhaseBadge phase={r.phase} />
                            </li>
                          ))}
                        </ul>
                      )}
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
        )}
      </Panel>
      <Panel title="YAML" id="yaml">
        <ManifestView resource="runtimes" ns={ns} name={name} />
      </Panel>
    </>
  );
}
