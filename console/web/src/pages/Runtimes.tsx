import { useState } from 'react';
import { Link, useParams } from 'react-router';
import { useRuntimes } from '../api/queries';
import { LiveToggle, SummaryBanner } from '../components/LiveToggle';
import { PageHeader, TableWrap } from '../components/Page';
import { ConditionBadge } from '../components/Status';
import { Empty, ErrorState, Loading } from '../components/States';
import { age, dateTime } from '../lib/format';

export function RuntimesPage() {
  const { ns = 'default' } = useParams();
  const [live, setLive] = useState(true);
  const q = useRuntimes(ns, { live });
  const data = q.data;
  return (
    <>
      <PageHeader
        title="Runtimes"
        crumbs={[{ label: ns }, { label: 'Runtimes' }]}
        actions={<LiveToggle live={live} onChange={setLive} updatedAt={q.dataUpdatedAt} fetching={q.isFetching} />}
      />
      {data?.summary && <SummaryBanner />}
      {q.isPending ? (
        <Loading what="Runtimes" />
      ) : !data ? (
        <ErrorState error={q.error} what="Runtimes" />
      ) : data.items.length === 0 ? (
        <Empty title={`No Runtimes in namespace ${ns}`}>Runtime pools created in this namespace will appear here.</Empty>
      ) : (
        // The server may not count active Runs per Runtime; the column shows only when it does.
        <TableWrap label="Runtimes">
          <table className="table">
            <caption className="visually-hidden">Runtimes in namespace {ns}</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Ready Pods</th>
                <th scope="col">Health</th>
                <th scope="col" className="num">Age</th>
              </tr>
            </thead>
            <tbody>
              {data.items.map((r) => {
                const full = r.readyReplicas >= r.replicas && r.replicas > 0;
                return (
                  <tr key={r.metadata.name}>
                    <td className="name">
                      <Link to={`/namespaces/${ns}/runtimes/${r.metadata.name}`}>{r.metadata.name}</Link>
                    </td>
                    <td>
                      <span className="ratio">
                        <meter min={0} max={Math.max(1, r.replicas)} value={r.readyReplicas} aria-label={`${r.readyReplicas} of ${r.replicas} Pods ready`} />
                        {r.readyReplicas}/{r.replicas}
                      </span>
                    </td>
                    <td>
                      {r.ready ? (
                        <span title={r.ready.message}>
                          <ConditionBadge status={r.ready.status} label={r.ready.status === 'True' ? 'Ready' : r.ready.reason ?? 'Not ready'} />
                        </span>
                      ) : (
                        <ConditionBadge status={full ? 'True' : 'False'} label={full ? 'Ready' : 'Degraded'} />
                      )}
                    </td>
                    <td className="num" title={dateTime(r.metadata.creationTimestamp)}>
                      {age(r.metadata.creationTimestamp)}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </TableWrap>
      )}
    </>
  );
}
