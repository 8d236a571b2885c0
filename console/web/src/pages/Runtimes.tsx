import { useId, useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';
import { useRuntimes } from '../api/queries';
import type { ObjectListQuery } from '../api/types';
import { NameFilter, Pager, SnapshotNote, SortHeader, useListUrl } from '../components/ListControls';
import { LiveToggle, SummaryBanner } from '../components/LiveToggle';
import { PageHeader, TableWrap } from '../components/Page';
import { ConditionBadge } from '../components/Status';
import { Empty, ErrorState, Loading } from '../components/States';
import { age, dateTime } from '../lib/format';
import { RUNTIME_COLUMNS, sortRuntimes, type RuntimeColumn } from '../lib/sort';

export function RuntimesPage() {
  const { ns = 'default' } = useParams();
  const id = useId();
  const url = useListUrl<RuntimeColumn>(RUNTIME_COLUMNS);
  const { name, limit, cont } = url;
  const [live, setLive] = useState(true);
  const query: ObjectListQuery = useMemo(() => ({ ...(name ? { name } : {}), limit, ...(cont ? { continue: cont } : {}) }), [name, limit, cont]);
  // Only the first page refreshes live (a continue token reads the list as it was).
  const q = useRuntimes(ns, { live: live && !cont }, query);
  const data = q.data;
  return (
    <>
      <PageHeader
        title="Runtimes"
        crumbs={[{ label: ns }, { label: 'Runtimes' }]}
        actions={
          cont ? (
            <SnapshotNote pages={url.pages.length} updatedAt={q.dataUpdatedAt} when={(t) => dateTime(new Date(t).toISOString())} />
          ) : (
            <LiveToggle live={live} onChange={setLive} updatedAt={q.dataUpdatedAt} fetching={q.isFetching} />
          )
        }
      />
      <NameFilter url={url} id={id} label="Filter Runtimes" />
      {data?.summary && <SummaryBanner />}
      {q.isPending ? (
        <Loading what="Runtimes" />
      ) : !data ? (
        <ErrorState error={q.error} what="Runtimes" />
      ) : data.items.length === 0 ? (
        name ? (
          <Empty title="No Runtimes match this name">Change or clear the name.</Empty>
        ) : (
          <Empty title={`No Runtimes in namespace ${ns}`}>Runtime pools created in this namespace will appear here.</Empty>
        )
      ) : (
        <>
        <TableWrap label="Runtimes">
          <table className="table">
            <caption className="visually-hidden">Runtimes in namespace {ns}</caption>
            <thead>
              <tr>
                <SortHeader url={url} column="name" label="Name" />
                <SortHeader url={url} column="ready" label="Ready Pods" />
                <th scope="col">Health</th>
                <SortHeader url={url} column="age" label="Age" className="num" />
              </tr>
            </thead>
            <tbody>
              {sortRuntimes(data.items, url.sort).map((r) => {
                const ready = r.readyReplicas;
                const full = ready !== undefined && ready >= r.replicas && r.replicas > 0;
                return (
                  <tr key={r.metadata.name}>
                    <td className="name">
                      <Link to={`/namespaces/${ns}/runtimes/${r.metadata.name}`}>{r.metadata.name}</Link>
                      {r.image && <p className="row-note muted small mono wrap-anywhere">{r.image}</p>}
                    </td>
                    <td>
                      <span className="ratio">
                        <meter min={0} max={Math.max(1, r.replicas)} value={ready ?? 0} aria-label={ready === undefined ? 'Ready Pods unknown' : `${ready} of ${r.replicas} Pods ready`} />
                        {ready ?? '—'}/{r.replicas}
                      </span>
                    </td>
                    <td>
                      {r.ready ? (
                        <span title={r.ready.message}>
                          <ConditionBadge status={r.ready.status} label={r.ready.status === 'True' ? 'Ready' : r.ready.reason ?? 'Not ready'} />
                        </span>
                      ) : ready === undefined ? (
                        <span className="muted">—</span>
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
        <Pager url={url} count={data.items.length} noun="Runtimes" loading={q.isPlaceholderData} next={data.continue} remaining={data.remainingItemCount} />
        </>
      )}
    </>
  );
}
