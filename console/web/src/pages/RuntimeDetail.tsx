import { Link, useParams } from 'react-router';
import { useRuntime } from '../api/queries';
import { KeyValues, PageHeader, Panel, TableWrap } from '../components/Page';
import { ConditionBadge, PhaseBadge } from '../components/Status';
import { PublicSummary } from '../components/PublicSummary';
import { ErrorState, Forbidden, Loading } from '../components/States';
import { age, dateTime } from '../lib/format';
import { ConditionsTimeline } from './RunDetail';
import { ManifestView } from '../components/ManifestView';
import type { CapacityUse, RuntimeDetail } from '../api/types';
import { waiting } from '../lib/capacity';
import { LiveBadge } from '../components/LiveToggle';
import './RuntimeDetail.css';

/** One resource of a Pod: used / capacity and what is free, or the capacity alone. */
function CapacityChip({ use }: { use: CapacityUse }) {
  if (use.used === undefined)
    return (
      <span className="chip mono" title="No per-Run use is known for this resource">
        {use.resource}: {use.capacity}
      </span>
    );
  const cap = Number(use.capacity);
  const full = use.free === 0;
  return (
    <span
      className={`chip mono capacity ${full ? 'full' : ''}`}
      data-resource={use.resource}
      title={
        use.default
          ? 'The engine default: the Runtime declares no capacity, so each Pod takes 2 Runs'
          : `The sum of the ${use.resource} requests of the Scheduled, Running and Ready Runs on this Pod`
      }
    >
      {use.resource}: {use.used}/{use.capacity} used{use.free !== undefined ? ` · ${use.free} free` : ''}
      {use.default && <span className="muted"> (default)</span>}
      {Number.isFinite(cap) && cap > 0 && (
        <span className="meter" aria-hidden="true">
          <span style={{ width: `${Math.min(100, (use.used / cap) * 100)}%` }} />
        </span>
      )}
    </span>
  );
}

/** The Pending Runs of the Runtime, oldest first: the order they wait in. */
function Queue({ rt, ns }: { rt: RuntimeDetail; ns: string }) {
  const w = waiting('', rt);
  if (rt.queue.state === 'forbidden') return <Forbidden access={rt.queue.access} message={rt.queue.message} />;
  if (rt.queue.state !== 'ok') return <p className="muted">{rt.queue.message}</p>;
  return (
    <>
      <p className="queue-summary">
        {rt.queue.items.length === 0 ? 'No Run is waiting for this Runtime.' : `${rt.queue.items.length} Pending Run${rt.queue.items.length === 1 ? '' : 's'} waiting.`}{' '}
        {w.free !== null && `Free Run places on ready Pods: ${w.free} of ${w.capacity}.`}
      </p>
      {rt.queue.items.length > 0 && (
        <TableWrap label="Queue">
          <table className="table flat">
            <thead>
              <tr>
                <th scope="col" className="num">#</th>
                <th scope="col">Run</th>
                <th scope="col">Waiting</th>
                <th scope="col">Reason</th>
                <th scope="col">Why it waits</th>
              </tr>
            </thead>
            <tbody>
              {rt.queue.items.map((r, i) => (
                <tr key={r.name} id={`queued-${r.name}`}>
                  <td className="num">{i + 1}</td>
                  <td className="name">
                    <Link to={`/namespaces/${ns}/runs/${r.name}`}>{r.name}</Link>
                  </td>
                  <td>{r.creationTimestamp ? `${age(r.creationTimestamp)}` : '—'}</td>
                  <td>{r.reason ? <span className="tag">{r.reason}</span> : '—'}</td>
                  <td>{r.message ?? '—'}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </TableWrap>
      )}
    </>
  );
}

export function RuntimeDetailPage() {
  const { ns = 'default', name = '' } = useParams();
  const q = useRuntime(ns, name);
  const rt = q.data;
  const crumbs = [{ label: ns }, { label: 'Runtimes', to: `/namespaces/${ns}/runtimes` }, { label: name }];
  if (q.isPending) return (<><PageHeader title={name} crumbs={crumbs} /><Loading what="the Runtime" /></>);
  if (!rt) return (<><PageHeader title={name} crumbs={crumbs} /><ErrorState error={q.error} what="this Runtime" summary={<PublicSummary kind="runtimes" ns={ns} name={name} />} /></>);

  const ready = rt.status.readyReplicas;
  const healthy = ready !== undefined && ready >= rt.spec.replicas && rt.spec.replicas > 0;
  const declared = Object.entries(rt.spec.capacity?.resources ?? {});
  return (
    <>
      <PageHeader
        title={name}
        crumbs={crumbs}
        badge={<ConditionBadge status={ready === undefined ? 'Unknown' : healthy ? 'True' : 'False'} label={`${ready ?? '—'}/${rt.spec.replicas} ready`} />}
        actions={
          <>
            <LiveBadge />
            <Link className="button" to={`/namespaces/${ns}/runs?runtime=${encodeURIComponent(name)}`}>
              Runs on this Runtime
            </Link>
          </>
        }
      />
      {q.isError && <ErrorState error={q.error} what="the latest state" />}
      <div className="grid-2">
        <Panel title="Overview">
          <KeyValues
            items={[
              ['Replicas', rt.spec.replicas],
              ['Ready Pods', ready],
              ['Port', rt.spec.port],
              ['Image', rt.spec.image ? <code key="i" className="wrap-anywhere">{rt.spec.image}</code> : undefined],
              [
                'Capacity per Pod',
                declared.length ? (
                  <span key="c" className="chips">
                    {declared.map(([k, v]) => (
                      <span key={k} className="chip mono">
                        {k}: {v}
                      </span>
                    ))}
                  </span>
                ) : (
                  <span key="c" className="chips" title="No spec.capacity: the engine places 2 Runs on each Pod">
                    <span className="chip mono">runs: 2</span> <span className="muted small">engine default</span>
                  </span>
                ),
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
                        {p.usage.length === 0 ? (
                          <span className="muted">—</span>
                        ) : (
                          p.usage.map((u) => <CapacityChip key={u.resource} use={u} />)
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
                              {r.requests && (
                                <span className="muted small mono" title="spec.resources.requests">
                                  {' '}
                                  {Object.entries(r.requests)
                                    .filter(([k, v]) => !(k === 'runs' && v === 1))
                                    .map(([k, v]) => `${k} ${v}`)
                                    .join(', ')}
                                </span>
                              )}
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
      <Panel title="Queue" id="queue">
        <Queue rt={rt} ns={ns} />
      </Panel>
      <Panel title="YAML" id="yaml">
        <ManifestView resource="runtimes" ns={ns} name={name} />
      </Panel>
    </>
  );
}
