import { useId, useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';
import { useActions } from '../api/queries';
import type { ObjectListQuery } from '../api/types';
import { ActionReadyBadge } from '../components/Kinds';
import { NameFilter, Pager, SnapshotNote, SortHeader, useListUrl } from '../components/ListControls';
import { LiveToggle } from '../components/LiveToggle';
import { PageHeader, TableWrap } from '../components/Page';
import { Empty, ErrorState, Loading } from '../components/States';
import { age, dateTime } from '../lib/format';
import { ACTION_COLUMNS, sortActions, type ActionColumn } from '../lib/kinds';

/** The reusable step definitions of a namespace (read with the caller's credential only). */
export function ActionsPage() {
  const { ns = 'default' } = useParams();
  const id = useId();
  const url = useListUrl<ActionColumn>(ACTION_COLUMNS);
  const { name, limit, cont } = url;
  const [live, setLive] = useState(true);
  const query: ObjectListQuery = useMemo(() => ({ ...(name ? { name } : {}), limit, ...(cont ? { continue: cont } : {}) }), [name, limit, cont]);
  const q = useActions(ns, { live: live && !cont }, query);
  const data = q.data;
  return (
    <>
      <PageHeader
        title="Actions"
        crumbs={[{ label: ns }, { label: 'Actions' }]}
        actions={
          cont ? (
            <SnapshotNote pages={url.pages.length} updatedAt={q.dataUpdatedAt} when={(t) => dateTime(new Date(t).toISOString())} />
          ) : (
            <LiveToggle live={live} onChange={setLive} updatedAt={q.dataUpdatedAt} fetching={q.isFetching} />
          )
        }
      />
      <NameFilter url={url} id={id} label="Filter Actions" />
      {q.isPending ? (
        <Loading what="Actions" />
      ) : !data ? (
        <ErrorState error={q.error} what="Actions" />
      ) : data.items.length === 0 ? (
        name ? (
          <Empty title="No Actions match this name">Change or clear the name.</Empty>
        ) : (
          <Empty title={`No Actions in namespace ${ns}`}>Reusable step definitions that Workflow Run steps call with uses appear here.</Empty>
        )
      ) : (
        <>
          <TableWrap label="Actions">
            <table className="table">
              <caption className="visually-hidden">Actions in namespace {ns}</caption>
              <thead>
                <tr>
                  <SortHeader url={url} column="name" label="Name" />
                  <SortHeader url={url} column="ready" label="Ready" />
                  <th scope="col" className="num">Inputs</th>
                  <th scope="col" className="num">Outputs</th>
                  <SortHeader url={url} column="steps" label="Steps" className="num" />
                  <SortHeader url={url} column="age" label="Age" className="num" />
                </tr>
              </thead>
              <tbody>
                {sortActions(data.items, url.sort).map((a) => (
                  <tr key={a.metadata.name}>
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
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <Pager url={url} count={data.items.length} noun="Actions" loading={q.isPlaceholderData} next={data.continue} remaining={data.remainingItemCount} />
        </>
      )}
    </>
  );
}
