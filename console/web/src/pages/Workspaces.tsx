import { Link } from 'react-router';
import { useWorkspaces } from '../api/queries';
import { WorkspacePhaseBadge } from '../components/Kinds';
import { ListPage, useListPage } from '../components/ListPage';
import { age, dateTime } from '../lib/format';
import { sortWorkspaces, WORKSPACE_COLUMNS } from '../lib/kinds';

/** The PersistentWorkspaces of a namespace (read with the caller's credential only). */
export function WorkspacesPage() {
  const list = useListPage(WORKSPACE_COLUMNS);
  const { ns } = list;
  const q = useWorkspaces(ns, list.options, list.query);
  return (
    <ListPage
      list={list}
      result={q}
      title="Persistent Workspaces"
      emptyHint="Workspaces that keep data on a Runtime Pod between Runs appear here."
      columns={[
        { label: 'Name', sort: 'name' },
        { label: 'Phase', sort: 'phase' },
        { label: 'Runtime', sort: 'runtime' },
        { label: 'Bound Pod', sort: 'pod' },
        { label: 'Last used', sort: 'used' },
        { label: 'Age', sort: 'age', className: 'num' },
      ]}
      sort={sortWorkspaces}
      cells={(w) => (
        <>
          <td className="name">
            <Link to={`/namespaces/${ns}/persistentworkspaces/${w.metadata.name}`}>{w.metadata.name}</Link>
          </td>
          <td>
            <WorkspacePhaseBadge phase={w.phase} />
          </td>
          <td>
            <Link to={`/namespaces/${ns}/runtimes/${w.runtime}`}>{w.runtime}</Link>
          </td>
          <td className="mono">
            {w.boundPod ? (
              <Link to={`/namespaces/${ns}/runtimes/${w.runtime}#pod-${w.boundPod}`} title={`Pod ${w.boundPod} of Runtime ${w.runtime}`}>
                {w.boundPod}
              </Link>
            ) : (
              <span className="muted">—</span>
            )}
          </td>
          <td title={dateTime(w.lastUsedTime)}>{w.lastUsedTime ? `${age(w.lastUsedTime)} ago` : <span className="muted">never</span>}</td>
          <td className="num" title={dateTime(w.metadata.creationTimestamp)}>
            {age(w.metadata.creationTimestamp)}
          </td>
        </>
      )}
    />
  );
}
