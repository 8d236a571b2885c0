import { Link, useParams } from 'react-router';
import type { ActionDetail } from '../api/kinds';
import { useAction } from '../api/queries';
import { ActionReadyBadge, SectionView } from '../components/Kinds';
import { ManifestView } from '../components/ManifestView';
import { KeyValues, PageHeader, Panel, TableWrap } from '../components/Page';
import { PhaseBadge } from '../components/Status';
import { ErrorState, Loading } from '../components/States';
import { age, dateTime } from '../lib/format';
import { ConditionsTimeline } from './RunDetail';
import './ActionSteps.css';

/** How a Workflow Run step calls this Action: `uses` and its inputs, the required ones first. */
function callSnippet(a: ActionDetail): string {
  const lines = [`- name: ${a.metadata.name}`, `  uses: ${a.metadata.name}`];
  const inputs = [...a.inputs.filter((i) => i.required), ...a.inputs.filter((i) => !i.required)];
  if (inputs.length) {
    lines.push('  with:');
    for (const i of inputs) lines.push(`    ${i.name}: ${i.required ? '…  # required' : JSON.stringify(i.default ?? '')}`);
  }
  return lines.join('\n');
}

export function ActionDetailPage() {
  const { ns = 'default', name = '' } = useParams();
  const q = useAction(ns, name);
  const a = q.data;
  const crumbs = [{ label: ns }, { label: 'Actions', to: `/namespaces/${ns}/actions` }, { label: name }];
  if (q.isPending) return (<><PageHeader title={name} crumbs={crumbs} /><Loading what="the Action" /></>);
  if (!a) return (<><PageHeader title={name} crumbs={crumbs} /><ErrorState error={q.error} what="this Action" /></>);
  const ready = a.conditions?.find((c) => c.type === 'Ready');
  return (
    <>
      <PageHeader title={name} crumbs={crumbs} badge={<ActionReadyBadge ready={ready} />} />
      {q.isError && <ErrorState error={q.error} what="the latest state" />}
      <div className="grid-2">
        <Panel title="Overview">
          <KeyValues
            items={[
              ['Inputs', a.inputs.length],
              ['Outputs', a.outputs.length],
              ['Steps', a.steps.length],
              ['Created', a.metadata.creationTimestamp ? `${dateTime(a.metadata.creationTimestamp)} (${age(a.metadata.creationTimestamp)} ago)` : undefined],
              ['Generation', a.metadata.generation],
            ]}
          />
          <p className="muted small call-label" id="call-snippet">
            A Workflow Run step calls it with:
          </p>
          <pre className="cmd" aria-labelledby="call-snippet">
            <code>{callSnippet(a)}</code>
          </pre>
        </Panel>
        <Panel title="Conditions">
          <ConditionsTimeline conditions={a.conditions} />
        </Panel>
      </div>
      <div className="grid-2">
        <Panel title={`Inputs${a.inputs.length ? ` (${a.inputs.length})` : ''}`} id="inputs">
          {a.inputs.length === 0 ? (
            <p className="muted">This Action takes no inputs.</p>
          ) : (
            <TableWrap label="Inputs">
              <table className="table flat">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Type</th>
                    <th scope="col">Required</th>
                    <th scope="col">Default</th>
                  </tr>
                </thead>
                <tbody>
                  {a.inputs.map((i) => (
                    <tr key={i.name}>
                      <td className="mono">{i.name}</td>
                      <td>{i.type}</td>
                      <td>{i.required ? <strong>required</strong> : <span className="muted">optional</span>}</td>
                      <td>{i.default !== undefined ? <code className="wrap-anywhere">{i.default}</code> : <span className="muted">—</span>}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
        </Panel>
        <Panel title={`Outputs${a.outputs.length ? ` (${a.outputs.length})` : ''}`} id="outputs">
          {a.outputs.length === 0 ? (
            <p className="muted">This Action exposes no outputs.</p>
          ) : (
            <TableWrap label="Outputs">
              <table className="table flat">
                <thead>
                  <tr>
                    <th scope="col">Name</th>
                    <th scope="col">Value</th>
                  </tr>
                </thead>
                <tbody>
                  {a.outputs.map((o) => (
                    <tr key={o.name}>
                      <td className="mono">{o.name}</td>
                      <td>
                        <code className="wrap-anywhere">{o.value}</code>
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </TableWrap>
          )}
        </Panel>
      </div>
      <Panel title={`Steps (${a.steps.length})`} id="steps">
        <ol className="action-steps">
          {a.steps.map((s, i) => (
            <li key={`${i}-${s.name}`} className="action-step">
              <h3 className="action-step-name">
                <span className="muted small">{i + 1}.</span> {s.name}
              </h3>
              {s.run ? (
                <pre className="cmd" aria-label={`Script of step ${s.name}`}>
                  <code>{s.run}</code>
                </pre>
              ) : (
                <p className="muted">No script.</p>
              )}
              {(s.args?.length ?? 0) > 0 && (
                <p className="chips">
                  <span className="muted small">Arguments</span>
                  {s.args?.map((x, j) => (
                    <code key={j} className="chip mono">
                      {x}
                    </code>
                  ))}
                </p>
              )}
              {s.envNames.length > 0 && (
                <p className="chips">
                  <span className="muted small">Environment (values not shown)</span>
                  {s.envNames.map((e) => (
                    <code key={e} className="chip mono">
                      {e}
                    </code>
                  ))}
                </p>
              )}
            </li>
          ))}
        </ol>
      </Panel>
      <Panel title="Used by" id="used-by">
        <SectionView section={a.usedBy} what="the Workflow Runs">
          {(u) =>
            u.items.length === 0 ? (
              <p className="muted">
                No Workflow Run {u.complete ? 'in this namespace' : 'among the 500 read'} calls this Action.
              </p>
            ) : (
              <>
                <TableWrap label="Workflow Runs that call this Action">
                  <table className="table flat">
                    <thead>
                      <tr>
                        <th scope="col">Workflow Run</th>
                        <th scope="col">Phase</th>
                        <th scope="col">Calling jobs</th>
                        <th scope="col" className="num">Age</th>
                      </tr>
                    </thead>
                    <tbody>
                      {u.items.map((c) => (
                        <tr key={c.name}>
                          <td className="name">
                            <Link to={`/namespaces/${ns}/workflowruns/${c.name}`}>{c.name}</Link>
                          </td>
                          <td>
                            <PhaseBadge phase={c.phase} />
                          </td>
                          <td>
                            <span className="chips">
                              {c.jobs.map((j) => (
                                <Link key={j} className="chip mono" to={`/namespaces/${ns}/workflowruns/${c.name}/jobs/${j}`}>
                                  {j}
                                </Link>
                              ))}
                            </span>
                          </td>
                          <td className="num" title={dateTime(c.creationTimestamp)}>
                            {age(c.creationTimestamp)}
                          </td>
                        </tr>
                      ))}
                    </tbody>
                  </table>
                </TableWrap>
                {!u.complete && <p className="muted small">Only the namespace's first 500 Workflow Runs were read; there may be more callers.</p>}
              </>
            )
          }
        </SectionView>
      </Panel>
      <Panel title="YAML" id="yaml">
        <ManifestView resource="actions" ns={ns} name={name} />
      </Panel>
    </>
  );
}
