/**
 * The public summary of one object on its "Login needed" page: the row the
 * public list already shows without a credential (a Run's phase, runtime and
 * mode; a Runtime's Pods; a Workflow Run's phase and job counts), found by
 * an exact name in the list's name search. Nothing when the Console serves no
 * public summaries (the list answers 401 as well) or the object is not in
 * the first page the public list reads.
 */
import { useQuery } from '@tanstack/react-query';
import { listRuns, listRuntimes, listWorkflowRuns } from '../api/client';
import { age, dateTime } from '../lib/format';
import { KeyValues } from './Page';
import { PhaseBadge } from './Status';

export type SummaryKind = 'runs' | 'runtimes' | 'workflowruns';

async function readSummary(kind: SummaryKind, ns: string, name: string): Promise<Array<[string, React.ReactNode]> | null> {
  const created = (t: string | undefined): [string, React.ReactNode] => [
    'Created',
    t ? <span key="c" title={dateTime(t)}>{age(t)} ago</span> : undefined,
  ];
  switch (kind) {
    case 'runs': {
      const l = await listRuns(ns, { name });
      const r = l.summary ? l.items.find((i) => i.metadata.name === name) : undefined;
      if (!r) return null;
      return [
        ['Phase', <PhaseBadge key="p" phase={r.phase} />],
        ['Runtime', r.runtime],
        ['Mode', r.mode],
        created(r.metadata.creationTimestamp),
      ];
    }
    case 'runtimes': {
      const l = await listRuntimes(ns, { name });
      const r = l.summary ? l.items.find((i) => i.metadata.name === name) : undefined;
      if (!r) return null;
      return [
        ['Ready Pods', r.readyReplicas === undefined ? undefined : `${r.readyReplicas}/${r.replicas}`],
        created(r.metadata.creationTimestamp),
      ];
    }
    case 'workflowruns': {
      const l = await listWorkflowRuns(ns, { name });
      const w = l.summary ? l.items.find((i) => i.metadata.name === name) : undefined;
      if (!w) return null;
      return [
        ['Phase', <PhaseBadge key="p" phase={w.phase} />],
        ['Jobs', `${w.jobs.succeeded}/${w.jobs.total} succeeded`],
        created(w.metadata.creationTimestamp),
      ];
    }
  }
}

export function PublicSummary({ kind, ns, name }: { kind: SummaryKind; ns: string; name: string }) {
  const q = useQuery({
    queryKey: ['public-summary', kind, ns, name],
    queryFn: () => readSummary(kind, ns, name),
    retry: false,
    staleTime: 10_000,
  });
  if (!q.data) return null;
  return (
    <section className="public-summary" data-public-summary aria-labelledby="public-summary-title">
      <h2 id="public-summary-title" className="sub-title">
        Public summary
      </h2>
      <KeyValues items={q.data} />
      <p className="muted small">What anyone may read without logging in. Log in for the details.</p>
    </section>
  );
}
