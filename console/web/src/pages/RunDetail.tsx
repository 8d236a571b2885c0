import { useState } from 'react';
import { Ago, Elapsed } from '../components/Time';
import { Link, useParams } from 'react-router';
import { useRun, useRuntime } from '../api/queries';
import type { AttemptEvent, Condition, RunDetail, RunStage, RunState, Section } from '../api/types';
import { RunLogView } from '../components/RunLogView';
import { KeyValues, PageHeader, Panel, TableWrap } from '../components/Page';
import { SessionPanel } from '../components/SessionPanel';
import { ConditionBadge, PhaseBadge, StatusGlyph } from '../components/Status';
import { PublicSummary } from '../components/PublicSummary';
import { ErrorState, Forbidden, Loading } from '../components/States';
import { ApiError } from '../api/errors';
import { age, bytes, dateTime, describeValue } from '../lib/format';
import { conditionTone, isTerminal } from '../lib/phase';
import { waiting, waitingSentence } from '../lib/capacity';
import { ManifestView } from '../components/ManifestView';
import { LiveBadge } from '../components/LiveToggle';
import './RunDetail.css';

function modeOf(run: RunDetail): string {
  const m = run.spec.mode;
  if (m.session) return 'session';
  if (m.function) return 'function';
  if (m.task) return 'task';
  return 'unknown';
}

/**
 * Conditions, most recent transition last, as a vertical timeline. A False
 * condition is red only when it is a failure; an expected wait
 * (Scheduled=False/NoCapacity while Pending) is shown as waiting.
 */
export function ConditionsTimeline({ conditions, phase }: { conditions: Condition[] | undefined; phase?: string | undefined }) {
  if (!conditions?.length) return <p className="muted">No conditions reported yet.</p>;
  const sorted = [...conditions].sort(
    (a, b) => Date.parse(a.lastTransitionTime ?? '') - Date.parse(b.lastTransitionTime ?? '') || 0,
  );
  return (
    <ol className="timeline">
      {sorted.map((c) => {
        const tone = conditionTone(c.status, c.reason, phase, c.type);
        return (
        <li key={c.type} className={`tl-item status-${c.status} tone-${tone}`}>
          <span className="tl-dot" aria-hidden="true">
            <StatusGlyph tone={tone} size={14} />
          </span>
          <div className="tl-body">
            <div className="tl-head">
              <strong>{c.type}</strong> <ConditionBadge status={c.status} tone={tone} />
              {c.reason && <span className="tag">{c.reason}</span>}
              <span className="muted small" title={dateTime(c.lastTransitionTime)}>
                {c.lastTransitionTime ? <>{dateTime(c.lastTransitionTime)} · <Ago t={c.lastTransitionTime} suffix=" ago" /></> : ''}
              </span>
            </div>
            {c.message && <p className="tl-msg">{c.message}</p>}
          </div>
        </li>
        );
      })}
    </ol>
  );
}

function SectionView<T>({ section, children, what }: { section: Section<T>; what: string; children: (ok: T) => React.ReactNode }) {
  switch (section.state) {
    case 'ok':
      return <>{children(section as unknown as T)}</>;
    case 'forbidden':
      return <Forbidden access={section.access} message={section.message} />;
    case 'absent':
      return <p className="muted">{section.message}</p>;
    case 'error':
      return (
        <p className="notice warning" role="status">
          Could not read {what}: {section.message}
        </p>
      );
  }
}

function OutputValue({ value }: { value: unknown }) {
  const [open, setOpen] = useState(false);
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  const long = text.length > 160 || text.includes('\n');
  if (!long) return <code className="wrap-anywhere">{text}</code>;
  return (
    <div>
      <pre className={`output-value ${open ? 'open' : ''}`}>{open ? text : `${text.slice(0, 160)}…`}</pre>
      <button type="button" className="linklike small" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? 'Show less' : `Show all (${text.length.toLocaleString()} characters)`}
      </button>
    </div>
  );
}

/** A retry policy as readable pairs ("Max attempts 3 · Backoff 10s"), not raw JSON. */
function RetryPolicy({ value }: { value: unknown }) {
  const pairs = describeValue(value);
  if (pairs.length === 0) return <span className="muted">none</span>;
  return (
    <ul className="inline-pairs" aria-label="Retry policy">
      {pairs.map(([k, v]) => (
        <li key={k}>
          <span className="muted">{k}</span> <strong>{v}</strong>
        </li>
      ))}
    </ul>
  );
}

const STAGE_LABEL: Record<RunStage, string> = {
  waiting: 'Waiting',
  scheduled: 'Scheduled',
  running: 'Running',
  retrying: 'Retrying',
  ready: 'Ready',
  succeeded: 'Succeeded',
  failed: 'Failed',
};

/** One line on where the Run is and why, read from the engine's conditions. */
function RunStateLine({ state }: { state: RunState }) {
  if (!state.reason && !state.message) return null;
  const tone = state.stage === 'failed' ? 'danger' : state.stage === 'retrying' ? 'warning' : '';
  return (
    <p className={`notice state-line ${tone}`} id="run-state" data-stage={state.stage}>
      <strong>{STAGE_LABEL[state.stage]}</strong>
      {state.reason && <span className="tag">{state.reason}</span>}
      {state.message && <span className="state-msg">{state.message}</span>}
    </p>
  );
}

function attemptLabel(a: AttemptEvent): string {
  if (a.reason === 'RunRetriesExhausted') return a.attempt !== undefined ? `Gave up after ${a.attempt} attempts` : 'Gave up';
  if (a.attempt === undefined) return 'Attempt';
  return `Attempt ${a.attempt}${a.maxAttempts ? ` of ${a.maxAttempts}` : ''}`;
}

/** The attempts of a Run, from its Events (the engine keeps no other history). */
function Attempts({ attempts }: { attempts: AttemptEvent[] }) {
  return (
    <ol className="attempts" aria-label="Attempts">
      {attempts.map((a, i) => (
        <li key={i} className={`attempt ${a.reason === 'RunRetrying' ? '' : 'warning'}`}>
          <span className="attempt-no">{attemptLabel(a)}</span>
          <span className="tag">{a.reason}</span>
          <span className="muted small" title={dateTime(a.time)}>
            {a.time ? `${age(a.time)} ago` : ''}
          </span>
          <p className="event-msg">{a.message}</p>
        </li>
      ))}
    </ol>
  );
}

/** "Why is my Run waiting?": its Scheduled condition, its place in the queue and the Runtime's free capacity. */
function WhyWaiting({ run, ns }: { run: RunDetail; ns: string }) {
  const runtime = run.spec.runtime;
  const rt = useRuntime(ns, runtime);
  const w = waiting(run.metadata.name, rt.data);
  // The engine sets no condition on a waiting Run, only status.message; a
  // platform's Scheduled=False condition gives a reason too.
  const reason = run.state.stage === 'waiting' ? run.state.reason : undefined;
  const message = run.state.stage === 'waiting' ? run.state.message : run.state.message ?? run.status.message;
  return (
    <div className="why-waiting">
      {(reason || message) && (
        <p className="why-message">
          <strong>{reason ?? 'Waiting'}</strong>
          {message ? `: ${message}` : ''}
        </p>
      )}
      {rt.isPending ? (
        <Loading what="the Runtime's capacity" />
      ) : rt.isError ? (
        <ErrorState error={rt.error} what={`Runtime ${runtime}`} />
      ) : (
        <>
          <p>{waitingSentence(w, runtime)}</p>
          <KeyValues
            items={[
              ['Place in the queue', w.position !== null ? `${w.position} of ${w.queued}` : undefined],
              ['Ready Pods', w.readyPods !== null ? `${w.readyPods} of ${w.pods}` : undefined],
              ['Free Run places', w.free !== null ? `${w.free} of ${w.capacity}` : undefined],
            ]}
          />
        </>
      )}
      <p>
        <Link to={`/namespaces/${ns}/runtimes/${runtime}#queue`}>Capacity and queue of Runtime {runtime}</Link>
      </p>
    </div>
  );
}

export function RunDetailPage() {
  const { ns = 'default', name = '' } = useParams();
  const q = useRun(ns, name);
  const run = q.data;
  // The logs are the page's main content: the overview folds beside them (wide, open) or above them (narrow, folded).
  const [overviewOpen, setOverviewOpen] = useState(() => typeof window === 'undefined' || window.matchMedia?.('(min-width: 1280px)').matches !== false);

  const crumbs = [{ label: ns }, { label: 'Runs', to: `/namespaces/${ns}/runs` }, { label: name }];
  if (q.isPending) return (<><PageHeader title={name} crumbs={crumbs} /><Loading what="the Run" /></>);
  if (!run) return (<><PageHeader title={name} crumbs={crumbs} /><ErrorState error={q.error} what="this Run" summary={<PublicSummary kind="runs" ns={ns} name={name} />} /></>);
  // Deleted (or never there): what was shown before is not this Run any more.
  if (q.error instanceof ApiError && q.error.isNotFound)
    return (<><PageHeader title={name} crumbs={crumbs} /><ErrorState error={q.error} what="this Run" summary={<PublicSummary kind="runs" ns={ns} name={name} />} /></>);

  const st = run.status;
  const mode = modeOf(run);
  const outputs = Object.entries(st.outputs ?? {});
  const artifacts = st.artifactRefs ?? [];
  const active = !isTerminal(st.phase);

  return (
    <>
      <PageHeader title={name} crumbs={crumbs} badge={<PhaseBadge phase={st.phase} />} actions={<LiveBadge />} />
      {q.isError && <ErrorState error={q.error} what="the latest state" />}
      <RunStateLine state={run.state} />
      {(st.phase ?? 'Pending') === 'Pending' && (
        <Panel title="Why is this Run waiting?" id="waiting">
          <WhyWaiting run={run} ns={ns} />
        </Panel>
      )}
      <div className="run-page">
      <details className="run-overview" open={overviewOpen} onToggle={(e) => setOverviewOpen(e.currentTarget.open)}>
      <summary className="run-overview-toggle">Overview and conditions</summary>
      <div className="grid-2">
        <Panel title="Overview" id="overview">
          <KeyValues
            items={[
              ['Runtime', <Link key="rt" to={`/namespaces/${ns}/runtimes/${run.spec.runtime}`}>{run.spec.runtime}</Link>],
              ['Mode', <span key="m">{mode}{run.spec.mode.session?.leaseSeconds ? ` · lease ${run.spec.mode.session.leaseSeconds}s` : ''}</span>],
              [
                'Assigned Pod',
                st.assignedPod ? (
                  <Link key="p" className="mono" to={`/namespaces/${ns}/runtimes/${run.spec.runtime}#pod-${st.assignedPod}`} title="The Pod on its Runtime's page">
                    {st.assignedPod}
                  </Link>
                ) : undefined,
              ],
              [
                'Workflow Run',
                run.workflowRun.state === 'ok' ? (
                  <span key="wr" className="links-in-text">
                    <Link to={`/namespaces/${ns}/workflowruns/${run.workflowRun.name}`}>{run.workflowRun.name}</Link>
                    {run.workflowRun.job !== undefined && (
                      <>
                        {' · job '}
                        <Link to={`/namespaces/${ns}/workflowruns/${run.workflowRun.name}/jobs/${encodeURIComponent(run.workflowRun.job)}`}>
                          {run.workflowRun.job}
                        </Link>
                      </>
                    )}
                    {run.workflowRun.step ? ` · step ${run.workflowRun.step}` : ''}
                    {run.workflowRun.actionStep ? ` · Action step ${run.workflowRun.actionStep}` : ''}
                  </span>
                ) : undefined,
              ],
              ['Attempt', st.attempt],
              ['Created', run.metadata.creationTimestamp ? <span key="c">{dateTime(run.metadata.creationTimestamp)} (<Ago t={run.metadata.creationTimestamp} suffix=" ago" />)</span> : undefined],
              ['Started', st.startTime ? dateTime(st.startTime) : undefined],
              ['Completed', st.completionTime ? dateTime(st.completionTime) : undefined],
              ['Duration', st.startTime ? <Elapsed key="d" start={st.startTime} end={st.completionTime} /> : undefined],
              ['Timeout', run.spec.timeout],
              ['Retry policy', run.spec.retryPolicy ? <RetryPolicy key="r" value={run.spec.retryPolicy} /> : undefined],
              ['Endpoint', st.endpoint?.url ? <code key="e" className="wrap-anywhere">{st.endpoint.url}</code> : undefined],
              ['UID', run.metadata.uid ? <code key="u">{run.metadata.uid}</code> : undefined],
            ]}
          />
          {run.metadata.labels && Object.keys(run.metadata.labels).length > 0 && (
            <div className="labels" aria-label="Labels">
              {Object.entries(run.metadata.labels).map(([k, v]) => (
                <Link key={k} className="chip mono" to={`/namespaces/${ns}/runs?labelSelector=${encodeURIComponent(`${k}=${v}`)}`}>
                  {k}={v}
                </Link>
              ))}
            </div>
          )}
        </Panel>
        <Panel title="Conditions" id="conditions">
          <ConditionsTimeline conditions={st.conditions} phase={st.phase ?? ''} />
        </Panel>
      </div>
      </details>

      {mode === 'session' && (
        <Panel title="Session" id="session">
          <SessionPanel run={run} />
        </Panel>
      )}

      <Panel title="Logs" id="logs">
        <RunLogView ns={ns} run={name} active={active} assignedPod={st.assignedPod || null} failed={st.phase === 'Failed'} height="fill" />
      </Panel>
      </div>

      <div className="grid-2">
        <Panel title={`Outputs${outputs.length ? ` (${outputs.length})` : ''}`} id="outputs">
          {outputs.length === 0 ? (
            <p className="muted">No outputs.</p>
          ) : (
            <table className="table flat">
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Value</th>
                </tr>
              </thead>
              <tbody>
                {outputs.map(([k, v]) => (
                  <tr key={k}>
                    <td className="mono">{k}</td>
                    <td>
                      <OutputValue value={v} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Panel>
        <Panel title={`Artifacts${artifacts.length ? ` (${artifacts.length})` : ''}`} id="artifacts">
          {artifacts.length === 0 ? (
            <p className="muted">No artifact references.</p>
          ) : (
            <TableWrap label="Artifacts">
              <table className="table flat">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Location</th>
                    <th scope="col" className="num">Size</th>
                    <th scope="col">Type</th>
                    <th scope="col">Digest</th>
                  </tr>
                </thead>
                <tbody>
                  {artifacts.map((a) => (
                    <tr key={a.name}>
                      <td>{a.name}</td>
                      <td className="mono wrap-anywhere">
                        {a.driver && <span className="tag">{a.driver}</span>} {a.location ?? '—'}
                      </td>
                      <td className="num">{bytes(a.sizeBytes)}</td>
                      <td>{a.contentType ?? a.type ?? '—'}</td>
                      <td className="mono small wrap-anywhere" title={a.digest}>
                        {a.digest ? `${a.digest.slice(0, 19)}${a.digest.length > 19 ? '…' : ''}` : '—'}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
          <p className="muted small">Artifacts are shown as references only; the Console does not download them.</p>
        </Panel>
      </div>

      <div className="grid-2">
        <Panel title="Runtime Pod" id="pod">
          <SectionView section={run.pod} what="the Pod">
            {({ pod }) => (
              <>
                {pod.replaced && (
                  <p className="notice warning">This Pod has another UID than the one the Run was assigned to: it was replaced.</p>
                )}
                <KeyValues
                  items={[
                    ['Name', <Link key="n" to={`/namespaces/${ns}/runtimes/${run.spec.runtime}#pod-${pod.name}`}>{pod.name}</Link>],
                    ['Phase', <PhaseBadge key="p" phase={pod.phase} />],
                    ['Ready', <ConditionBadge key="r" status={pod.ready ? 'True' : 'False'} label={pod.ready ? 'Ready' : 'Not ready'} />],
                    ['RuntimedReady', pod.runtimedReady ? <span key="rr"><ConditionBadge status={pod.runtimedReady.status} />{pod.runtimedReady.reason ? ` ${pod.runtimedReady.reason}` : ''}</span> : undefined],
                    ['Restarts', pod.restarts],
                    ['Node', pod.node],
                    ['Pod IP', pod.podIP],
                    ['Started', pod.startTime ? dateTime(pod.startTime) : undefined],
                    ['UID', <code key="u">{pod.uid}</code>],
                  ]}
                />
              </>
            )}
          </SectionView>
        </Panel>
        <Panel title="Events" id="events">
          {run.attempts.length > 0 && (
            <>
              <h3 className="sub-title">Attempts</h3>
              <Attempts attempts={run.attempts} />
              <h3 className="sub-title">All events</h3>
            </>
          )}
          <p className="muted small">The Run&apos;s events, and its Pod&apos;s from the Run&apos;s start to its completion.</p>
          <SectionView section={run.events} what="events">
            {({ items }) =>
              items.length === 0 ? (
                <p className="muted">No events.</p>
              ) : (
                <ul className="events">
                  {items.map((e, i) => (
                    <li key={i} className={`event ${e.type === 'Warning' ? 'warning' : ''}`}>
                      <div className="event-head">
                        <span className={`tag ${e.type === 'Warning' ? 'tag-warning' : ''}`}>{e.type}</span>
                        <strong>{e.reason}</strong>
                        <span className="muted small">{e.involvedObject}</span>
                        <span className="muted small" title={dateTime(e.lastTime)}>
                          {e.lastTime ? `${age(e.lastTime)} ago` : ''}
                          {e.count && e.count > 1 ? ` · ×${e.count}` : ''}
                        </span>
                      </div>
                      <p className="event-msg">{e.message}</p>
                    </li>
                  ))}
                </ul>
              )
            }
          </SectionView>
        </Panel>
      </div>
      <Panel title="YAML" id="yaml">
        <ManifestView resource="runs" ns={ns} name={name} />
      </Panel>
    </>
  );
}
