import { useState } from 'react';
import { Elapsed } from '../components/Time';
import { Link, useParams, useSearchParams } from 'react-router';
import { useWorkflowRun } from '../api/queries';
import { useDag } from '../components/DagView';
import { ChevronIcon } from '../components/Icons';
import { RunLogView } from '../components/RunLogView';
import { KeyValues, PageHeader, Panel } from '../components/Page';
import { PhaseBadge, StatusGlyph } from '../components/Status';
import { ErrorState, Loading } from '../components/States';
import { dateTime, duration } from '../lib/format';
import { failedStep } from '../lib/timeline';
import { isTerminal, phaseTone } from '../lib/phase';
import type { ActionStepStatus, StepSpec, StepStatus, WorkflowRunDetail } from '../api/types';
import './ActionSteps.css';
import './JobDetail.css';

interface StepView {
  index: number;
  name: string;
  spec?: StepSpec;
  status?: StepStatus;
}

/** Declared steps joined with observed ones (by position, then by name). */
function stepsOf(wr: WorkflowRunDetail, job: string): StepView[] {
  const declared = wr.spec.jobs[job]?.steps ?? [];
  const observed = wr.status.jobs?.[job]?.steps ?? [];
  const n = Math.max(declared.length, observed.length);
  const out: StepView[] = [];
  for (let i = 0; i < n; i++) {
    const spec = declared[i];
    const status = observed[i];
    out.push({
      index: i,
      name: status?.name ?? spec?.name ?? spec?.uses ?? `Step ${i + 1}`,
      ...(spec ? { spec } : {}),
      ...(status ? { status } : {}),
    });
  }
  return out;
}

/** The steps of the Action a step calls, each with its Run (the step itself has none). */
function ActionSteps({ ns, steps }: { ns: string; steps: ActionStepStatus[] }) {
  return (
    <ol className="action-steps" aria-label="Action steps">
      {steps.map((a) => (
        <li key={a.name} className="action-step" data-action-step={a.name}>
          <StatusGlyph tone={phaseTone(a.phase ?? 'Pending')} />
          <span className="step-name">{a.name}</span>
          <span className="muted small">{a.phase ?? 'Pending'}</span>
          {a.runName ? (
            <span className="small">
              Run <Link to={`/namespaces/${ns}/runs/${a.runName}`}>{a.runName}</Link>
            </span>
          ) : (
            <span className="muted small">no Run yet</span>
          )}
          <span className="muted small step-dur">{a.startTime ? <Elapsed start={a.startTime} end={a.completionTime} /> : ''}</span>
          {a.outputs && Object.keys(a.outputs).length > 0 && (
            <span className="chips">
              {Object.entries(a.outputs).map(([k, v]) => (
                <span key={k} className="chip mono">
                  {k}: {v}
                </span>
              ))}
            </span>
          )}
        </li>
      ))}
    </ol>
  );
}

function Step({ ns, step, open, onToggle }: { ns: string; step: StepView; open: boolean; onToggle(): void }) {
  const st = step.status;
  const bodyId = `step-${step.index}-body`;
  return (
    <li className={`step ${open ? 'open' : ''}`}>
      <h3 className="step-head">
        <button type="button" className="step-toggle" aria-expanded={open} aria-controls={bodyId} onClick={onToggle}>
          <ChevronIcon open={open} />
          <StatusGlyph tone={phaseTone(st?.phase ?? 'Pending')} />
          <span className="step-name">{step.name}</span>
          <span className="muted small">{st?.phase ?? 'Pending'}</span>
          <span className="muted small step-dur">{st?.startTime ? <Elapsed start={st.startTime} end={st.completionTime} /> : ''}</span>
        </button>
      </h3>
      {open && (
        <div className="step-body" id={bodyId}>
          {step.spec?.run && (
            <pre className="cmd">
              <code>{step.spec.run}</code>
            </pre>
          )}
          {step.spec?.uses && (
            <p>
              Uses <code>{step.spec.uses}</code>
            </p>
          )}
          {st?.startTime && (
            <p className="muted small step-times">
              Started {dateTime(st.startTime)}
              {st.completionTime ? `, ended ${dateTime(st.completionTime)}` : ', still running'} · {duration(st.startTime, st.completionTime)}
            </p>
          )}
          {st?.actionSteps && st.actionSteps.length > 0 && <ActionSteps ns={ns} steps={st.actionSteps} />}
          {st?.outputs && Object.keys(st.outputs).length > 0 && (
            <KeyValues items={Object.entries(st.outputs).map(([k, v]) => [k, <code key={k} className="wrap-anywhere">{v}</code>])} />
          )}
          {st?.runName ? (
            <>
              <p className="small">
                Run <Link to={`/namespaces/${ns}/runs/${st.runName}`}>{st.runName}</Link>
              </p>
              <RunLogView ns={ns} run={st.runName} active={!isTerminal(st.phase)} anchorPrefix={`S${step.index + 1}L`} height={320} />
            </>
          ) : st?.actionSteps?.length ? null : (
            <p className="muted small">This step has no Run yet, so there is no log.</p>
          )}
        </div>
      )}
    </li>
  );
}

export function JobDetailPage() {
  const { ns = 'default', wr: name = '', job = '' } = useParams();
  const [params, setParams] = useSearchParams();
  const q = useWorkflowRun(ns, name);
  const wr = q.data;
  const crumbs = [
    { label: ns },
    { label: 'Workflow Runs', to: `/namespaces/${ns}/workflowruns` },
    { label: name, to: `/namespaces/${ns}/workflowruns/${name}` },
    { label: job },
  ];

  // Open steps are kept in the URL (?step=1,3) so a view can be shared; with
  // no ?step the first failed step opens by itself, as GitHub Actions does
  // (?step= with nothing opens none).
  const stepParam = params.get('step');
  const observed = q.data?.status.jobs?.[job]?.steps ?? [];
  const autoOpen = stepParam === null ? failedStep(observed.map((s) => s.phase)) : null;
  const openSteps = new Set(
    stepParam === null ? (autoOpen === null ? [] : [autoOpen + 1]) : stepParam.split(',').filter(Boolean).map(Number),
  );
  const toggle = (i: number) => {
    const next = new Set(openSteps);
    if (next.has(i + 1)) next.delete(i + 1);
    else next.add(i + 1);
    const p = new URLSearchParams(params);
    p.set('step', [...next].sort((a, b) => a - b).join(','));
    setParams(p, { replace: true, preventScrollReset: true });
  };

  if (q.isPending) return (<><PageHeader title={job} crumbs={crumbs} /><Loading what="the job" /></>);
  if (!wr) return (<><PageHeader title={job} crumbs={crumbs} /><ErrorState error={q.error} what="this Workflow Run" /></>);
  return <JobBody wr={wr} ns={ns} job={job} crumbs={crumbs} openSteps={openSteps} toggle={toggle} />;
}

function JobBody({
  wr,
  ns,
  job,
  crumbs,
  openSteps,
  toggle,
}: {
  wr: WorkflowRunDetail;
  ns: string;
  job: string;
  crumbs: Array<{ label: string; to?: string }>;
  openSteps: Set<number>;
  toggle(i: number): void;
}) {
  const { staging } = useDag(wr);
  const spec = wr.spec.jobs[job];
  const st = wr.status.jobs?.[job];
  const steps = stepsOf(wr, job);
  const base = `/namespaces/${ns}/workflowruns/${wr.metadata.name}/jobs/`;
  const [railOpen, setRailOpen] = useState(true);

  return (
    <>
      {/* A job the Workflow Run does not declare has no phase at all: no badge. */}
      <PageHeader title={job} crumbs={crumbs} badge={spec ? <PhaseBadge phase={st?.phase ?? 'Pending'} /> : undefined} />
      <div className={`job-layout ${railOpen ? '' : 'rail-closed'}`}>
        <div className="stack">
          {!spec ? (
            <div className="state state-error" role="alert">
              <p className="state-title">No job named “{job}”</p>
              <p className="state-body">This Workflow Run does not declare that job. Pick one from the list.</p>
            </div>
          ) : (
            <>
              <Panel title="Job">
                <KeyValues
                  items={[
                    ['Job id', <code key="id">{job}</code>],
                    ['Runs on', spec['runs-on']],
                    [
                      'Needs',
                      spec.needs?.length ? (
                        <span key="n">
                          {spec.needs.map((n, i) => (
                            <span key={n}>
                              {i > 0 && ', '}
                              {wr.spec.jobs[n] ? <Link to={`${base}${encodeURIComponent(n)}`}>{n}</Link> : <span className="tag tag-warning">{n} (undeclared)</span>}
                            </span>
                          ))}
                        </span>
                      ) : undefined,
                    ],
                    ['Uses', spec.uses ? <code key="u">{spec.uses}</code> : undefined],
                    ['Child run', st?.workflowRunName ? <Link key="c" to={`/namespaces/${ns}/workflowruns/${st.workflowRunName}`}>{st.workflowRunName}</Link> : undefined],
                    ['Started', st?.startTime ? dateTime(st.startTime) : undefined],
                    ['Completed', st?.completionTime ? dateTime(st.completionTime) : undefined],
                    ['Duration', st?.startTime ? <Elapsed key="d" start={st.startTime} end={st.completionTime} /> : undefined],
                    [
                      'Started after',
                      st?.pre?.length ? (
                        <span key="p">
                          {st.pre.map((n, i) => (
                            <span key={n}>
                              {i > 0 && ', '}
                              <Link to={`${base}${encodeURIComponent(n)}`}>{n}</Link>
                            </span>
                          ))}
                        </span>
                      ) : undefined,
                    ],
                  ]}
                />
                {st?.outputs && Object.keys(st.outputs).length > 0 && (
                  <>
                    <h3 className="sub-title">Outputs</h3>
                    <KeyValues items={Object.entries(st.outputs).map(([k, v]) => [k, <code key={k} className="wrap-anywhere">{v}</code>])} />
                  </>
                )}
              </Panel>
              <Panel title={`Steps (${steps.length})`}>
                {steps.length === 0 ? (
                  <p className="muted">
                    {spec.uses ? 'This job calls a reusable workflow; see its child run.' : 'This job declares no steps.'}
                  </p>
                ) : (
                  <ol className="steps">
                    {steps.map((s) => (
                      <Step key={s.index} ns={ns} step={s} open={openSteps.has(s.index + 1)} onToggle={() => toggle(s.index)} />
                    ))}
                  </ol>
                )}
              </Panel>
            </>
          )}
        </div>
        {/* After the steps in the document (and so first on narrow screens); the grid puts it on the left where there is room. */}
        <nav className="job-rail panel" aria-label="All jobs">
          <div className="panel-head">
            <h2 className="panel-title">
              All jobs
            </h2>
            <button type="button" className="button small subtle" aria-expanded={railOpen} onClick={() => setRailOpen(!railOpen)}>
              {railOpen ? 'Hide' : 'Show'}
            </button>
          </div>
          {railOpen && (
            <ol className="rail-stages">
              {staging.stages.map((ids, s) => (
                <li key={s}>
                  <span className="rail-stage muted small">Stage {s + 1}</span>
                  <ul>
                    {ids.map((id) => {
                      const phase = wr.status.jobs?.[id]?.phase ?? 'Pending';
                      return (
                        <li key={id}>
                          <Link
                            to={`${base}${encodeURIComponent(id)}`}
                            className={`rail-item ${id === job ? 'active' : ''}`}
                            aria-current={id === job ? 'page' : undefined}
                          >
                            <StatusGlyph tone={phaseTone(phase)} />
                            <span>{id}</span>
                          </Link>
                        </li>
                      );
                    })}
                  </ul>
                </li>
              ))}
            </ol>
          )}
        </nav>
      </div>
    </>
  );
}
