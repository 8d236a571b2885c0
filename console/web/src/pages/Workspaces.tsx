import { useId, useMemo, useState } from 'react';
import { Link, useParams } from 'react-router';
import { useWorkspaces } from '../api/queries';
import type { ObjectListQuery } from '../api/types';
import { WorkspacePhaseBadge } from '../components/Kinds';
import { NameFilter, Pager, SnapshotNote, SortHeader, useListUrl } from '../components/ListControls';
import { LiveToggle } from '../components/LiveToggle';
import { PageHeader, TableWrap } from '../components/Page';
import { Empty, ErrorState, Loading } from '../components/States';
import { age, dateTime } from '../lib/format';
import { sortWorkspaces, WORKSPACE_COLUMNS, type WorkspaceColumn } from '../lib/kinds';

/** The PersistentWorkspaces of a namespace (read with the caller's credential only). */
export function WorkspacesPage() {
  const { ns = 'default' } = useParams();
  const id = useId();
  const url = useListUrl<WorkspaceColumn>(WORKSPACE_COLUMNS);
  const { name, limit, cont } = url;
  const [live, setLive] = useState(true);
  const query: ObjectListQuery = useMemo(() => ({ ...(name ? { name } : {}), limit, ...(cont ? { continue: cont } : {}) }), [name, limit, cont]);
  const q = useWorkspaces(ns, { live: live && !cont }, query);
  const data = q.data;
  return (
    <>
      <PageHeader
        title="Persistent Workspaces"
        crumbs={[{ label: ns }, { label: 'Persistent Workspaces' }]}
        actions={
          cont ? (
            <SnapshotNote pages={url.pages.length} updatedAt={q.dataUpdatedAt} when={(t) => dateTime(new Date(t).toISOString())} />
          ) : (
            <LiveToggle live={live} onChange={setLive} updatedAt={q.dataUpdatedAt} fetching={q.isFetching} />
          )
        }
      />
      <NameFilter url={url} id={id} label="Filter Persistent Workspaces" />
      {q.isPending ? (
        <Loading what="Persistent Workspaces" />
      ) : !data ? (
        <ErrorState error={q.error} what="Persistent Workspaces" />
      ) : data.items.length === 0 ? (
        name ? (
          <Empty title="No Persistent Workspaces match this name">Change or clear the name.</Empty>
        ) : (
          <Empty title={`No Persistent Workspaces in namespace ${ns}`}>Workspaces that keep data on a Runtime Pod between Runs appear here.</Empty>
        )
      ) : (
        <>
          <TableWrap label="Persistent Workspaces">
            <table className="table">
              <caption className="visually-hidden">Persistent Workspaces in namespace {ns}</caption>
              <thead>
                <tr>
                  <SortHeader url={url} column="name" label="Name" />
                  <SortHeader url={url} column="phase" label="Phase" />
                  <SortHeader url={url} column="runtime" label="Runtime" />
                  <SortHeader url={url} column="pod" label="Bound Pod" />
                  <SortHeader url={url} column="used" label="Last used" />
                  <SortHeader url={url} column="age" label="Age" className="num" />
                </tr>
              </thead>
              <tbody>
                {sortWorkspaces(data.items, url.sort).map((w) => (
                  <tr key={w.metadata.name}>
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
                  </tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <Pager url={url} count={data.items.length} noun="Persistent Workspaces" loading={q.isPlaceholderData} next={data.continue} remaining={data.remainingItemCount} />
        </>
      )}
    </>
  );
}
