import { Link } from 'react-router';
import { useActions } from '../api/queries';
import { ActionReadyBadge } from '../components/Kinds';
import { ListPage, useListPage } from '../components/ListPage';
import { age, dateTime } from '../lib/format';
import { ACTION_COLUMNS, sortActions } from '../lib/kinds';

/** The reusable step definitions of a namespace (read with the caller's credential only). */
export function ActionsPage() {
  const list = useListPage(ACTION_COLUMNS);
  const { ns } = list;
  const q = useActions(ns, list.options, list.query);
  return (
    <ListPage
      list={list}
      result={q}
      title="Actions"
      emptyHint="Reusable step definitions that Workflow Run steps call with uses appear here."
      columns={[
        { label: 'Name', sort: 'name' },
        { label: 'Ready', sort: 'ready' },
        { label: 'Inputs', className: 'num' },
        { label: 'Outputs', className: 'num' },
        { label: 'Steps', sort: 'steps', className: 'num' },
        { label: 'Age', sort: 'age', className: 'num' },
      ]}
      sort={sortActions}
      cells={(a) => (
        <>
          <td className="name">
            <Link to={`/namespaces/${ns}/actions/${a.metadata.name}`}>{a.metadata.name}</Link>
          </td>
          <td>
            <ActionReadyBadge ready={a.ready} />
          </td>
          <td className="num">{a.inputs}</td>
          <td className="num">{a.outputs}</td>
          <td className="num">{a.steps}</td>
          <td className="num" title={dateTime(a.metadata.creationTimestamp)}>
            {age(a.metadata.creationTimestamp)}
          </td>
        </>
      )}
    />
  );
}
