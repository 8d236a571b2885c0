import { Link } from 'react-router';
import { useRuntimes } from '../api/queries';
import { ListPage, useListPage } from '../components/ListPage';
import { ConditionBadge } from '../components/Status';
import { age, dateTime } from '../lib/format';
import { RUNTIME_COLUMNS, sortRuntimes } from '../lib/sort';

/** The Runtime pools of a namespace. */
export function RuntimesPage() {
  const list = useListPage(RUNTIME_COLUMNS);
  const { ns } = list;
  const q = useRuntimes(ns, list.options, list.query);
  return (
    <ListPage
      list={list}
      result={q}
      title="Runtimes"
      summary
      emptyHint="Runtime pools created in this namespace will appear here."
      columns={[
        { label: 'Name', sort: 'name' },
        { label: 'Ready Pods', sort: 'ready' },
        { label: 'Health' },
        { label: 'Age', sort: 'age', className: 'num' },
      ]}
      sort={sortRuntimes}
      cells={(r) => {
        const ready = r.readyReplicas;
        const full = ready !== undefined && ready >= r.replicas && r.replicas > 0;
        return (
          <>
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
          </>
        );
      }}
    />
  );
}
