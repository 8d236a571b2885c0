import { Link, useParams } from 'react-router';
import { useWorkspace } from '../api/queries';
import { SectionView, WorkspacePhaseBadge } from '../components/Kinds';
import { ManifestView } from '../components/ManifestView';
import { KeyValues, PageHeader, Panel } from '../components/Page';
import { ConditionBadge, PhaseBadge } from '../components/Status';
import { ErrorState, Loading } from '../components/States';
import { age, dateTime } from '../lib/format';
import { retention, ttlWords } from '../lib/kinds';
import { ConditionsTimeline } from './RunDetail';

export function WorkspaceDetailPage() {
  const { ns = 'default', name = '' } = useParams();
  const q = useWorkspace(ns, name);
  const w = q.data;
  const crumbs = [{ label: ns }, { label: 'Persistent Workspaces', to: `/namespaces/${ns}/persistentworkspaces` }, { label: name }];
  if (q.isPending) return (<><PageHeader title={name} crumbs={crumbs} /><Loading what="the workspace" /></>);
  if (!w) return (<><PageHeader title={name} crumbs={crumbs} /><ErrorState error={q.error} what="this workspace" /></>);
  const runtime = w.spec.runtime;
  return (
    <>
      <PageHeader
        title={name}
        crumbs={crumbs}
        badge={<WorkspacePhaseBadge phase={w.status.phase} />}
        actions={
          <Link className="button" to={`/namespaces/${ns}/runtimes/${runtime}`}>
            Runtime {runtime}
          </Link>
        }
      />
      {q.isError && <ErrorState error={q.error} what="the latest state" />}
      <div className="grid-2">
        <Panel title="Overview">
          <KeyValues
            items={[
              ['Phase', <WorkspacePhaseBadge key="p" phase={w.status.phase} />],
              ['Runtime', <Link key="r" to={`/namespaces/${ns}/runtimes/${runtime}`}>{runtime}</Link>],
              ['Bound Pod', w.status.boundPod ? <code key="b">{w.status.boundPod}</code> : undefined],
              ['Path', w.status.path ? <code key="pa" className="wrap-anywhere">{w.status.path}</code> : undefined],
              ['Last used', w.status.lastUsedTime ? `${dateTime(w.status.lastUsedTime)} (${age(w.status.lastUsedTime)} ago)` : 'never'],
              ['Mode', w.spec.mode ?? 'RuntimePodLocal'],
              ['Cleanup policy', w.spec.cleanupPolicy ?? 'DeleteAfterTTL'],
              ['TTL after last use', w.spec.ttlSecondsAfterUnused !== undefined ? `${ttlWords(w.spec.ttlSecondsAfterUnused)} (${w.spec.ttlSecondsAfterUnused} s)` : undefined],
              ['Data', retention(w.spec, w.status.lastUsedTime)],
              ['Created', w.metadata.creationTimestamp ? `${dateTime(w.metadata.creationTimestamp)} (${age(w.metadata.creationTimestamp)} ago)` : undefined],
            ]}
          />
        </Panel>
        <Panel title="Conditions">
          <ConditionsTimeline conditions={w.status.conditions} />
        </Panel>
      </div>
      <div className="grid-2">
        <Panel title="Bound Pod" id="pod">
          <SectionView section={w.pod} what="the Pod">
            {({ pod }) => (
              <KeyValues
                items={[
                  ['Name', <Link key="n" to={`/namespaces/${ns}/runtimes/${runtime}#pod-${pod.name}`}>{pod.name}</Link>],
                  ['Phase', <PhaseBadge key="p" phase={pod.phase} />],
                  ['Ready', <ConditionBadge key="r" status={pod.ready ? 'True' : 'False'} label={pod.ready ? 'Ready' : 'Not ready'} />],
                  ['RuntimedReady', pod.runtimedReady ? <ConditionBadge key="rr" status={pod.runtimedReady.status} label={pod.runtimedReady.status === 'True' ? 'True' : pod.runtimedReady.reason ?? pod.runtimedReady.status} /> : undefined],
                  ['Restarts', pod.restarts],
                  ['Node', pod.node],
                  ['Started', pod.startTime ? dateTime(pod.startTime) : undefined],
                  ['Runs on this Pod', <Link key="runs" to={`/namespaces/${ns}/runs?assignedPod=${encodeURIComponent(pod.name)}`}>show</Link>],
                ]}
              />
            )}
          </SectionView>
        </Panel>
        <Panel title="Volume" id="volume">
          <SectionView section={w.volume} what="the Runtime's workspace volume">
            {(v) => (
              <>
                <KeyValues
                  items={[
                    ['Runtime', <Link key="r" to={`/namespaces/${ns}/runtimes/${v.runtime}`}>{v.runtime}</Link>],
                    ['Volume', <code key="s">{v.source}</code>],
                    ['Claim', v.claimName ? <code key="c">{v.claimName}</code> : undefined],
                  ]}
                />
                {!v.declared && (
                  <p className="muted small">
                    The Runtime declares no workspace volume, so its Pods get an emptyDir: the data lives only as long as the bound Pod.
                  </p>
                )}
              </>
            )}
          </SectionView>
        </Panel>
      </div>
      <Panel title="YAML" id="yaml">
        <ManifestView resource="persistentworkspaces" ns={ns} name={name} />
      </Panel>
    </>
  );
}
