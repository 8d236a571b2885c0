/**
 * The page of one kind's objects in a namespace: header with the live switch
 * (or, on a later page, the snapshot note), the name search, the loading,
 * error and empty states, the sortable table and the pager. A page supplies
 * its columns and rows; `useListPage` keeps the rest in the URL.
 */
import { useId, useMemo, useState, type ReactNode } from 'react';
import { useParams } from 'react-router';
import type { ListResponse, ObjectListQuery } from '../api/types';
import { dateTime } from '../lib/format';
import type { Sort } from '../lib/sort';
import { NameFilter, Pager, SnapshotNote, SortHeader, useListUrl, type ListUrl } from './ListControls';
import { LiveToggle, SummaryBanner } from './LiveToggle';
import { PageHeader, TableWrap } from './Page';
import { Empty, ErrorState, Loading } from './States';

/** What a list page reads from the URL and the live switch, and what it asks its query hook for. */
export interface ListPageState<C extends string> {
  ns: string;
  url: ListUrl<C>;
  /** The live switch. */
  live: boolean;
  setLive(v: boolean): void;
  /** The query hook's options: only the first page refreshes live (a continue token reads the list as it was). */
  options: { live: boolean };
  /** The query hook's list query: name search, page size and continue token. */
  query: ObjectListQuery;
}

/** The URL state and live switch of a list page whose columns `sortable` may sort. */
export function useListPage<C extends string>(sortable: readonly C[]): ListPageState<C> {
  const { ns = 'default' } = useParams();
  const url = useListUrl<C>(sortable);
  const { name, limit, cont } = url;
  const [live, setLive] = useState(true);
  const query: ObjectListQuery = useMemo(() => ({ ...(name ? { name } : {}), limit, ...(cont ? { continue: cont } : {}) }), [name, limit, cont]);
  return { ns, url, live, setLive, options: { live: live && !cont }, query };
}

/** The part of a list query's result the page shows (a TanStack Query result fits). */
export interface ListResult<T> {
  data: ListResponse<T> | undefined;
  error: unknown;
  isPending: boolean;
  isFetching: boolean;
  isPlaceholderData: boolean;
  dataUpdatedAt: number;
}

/** A column header: sorts the page by `sort` when given, a plain header otherwise. */
export interface ListColumn<C extends string> {
  label: string;
  sort?: C;
  className?: string;
}

/** A list page: everything but the columns and the cells of a row. */
export function ListPage<T extends { metadata: { name: string } }, C extends string>({
  list,
  result,
  title,
  columns,
  sort,
  cells,
  emptyHint,
  summary = false,
}: {
  list: ListPageState<C>;
  result: ListResult<T>;
  /** The page title, also the plural noun of every text on it ("Runtimes"). */
  title: string;
  columns: readonly ListColumn<C>[];
  sort: (items: readonly T[], sort: Sort<C> | null) => T[];
  /** The cells of one row. */
  cells: (item: T) => ReactNode;
  /** Below the empty state's title when no name search is set. */
  emptyHint?: ReactNode;
  /** Whether the list may be served as a public summary: then a banner says so. */
  summary?: boolean;
}) {
  const { ns, url, live, setLive } = list;
  const id = useId();
  const data = result.data;
  return (
    <>
      <PageHeader
        title={title}
        crumbs={[{ label: ns }, { label: title }]}
        actions={
          url.cont ? (
            <SnapshotNote pages={url.pages.length} updatedAt={result.dataUpdatedAt} when={(t) => dateTime(new Date(t).toISOString())} />
          ) : (
            <LiveToggle live={live} onChange={setLive} updatedAt={result.dataUpdatedAt} fetching={result.isFetching} />
          )
        }
      />
      <NameFilter url={url} id={id} label={`Filter ${title}`} />
      {summary && data?.summary && <SummaryBanner />}
      {result.isPending ? (
        <Loading what={title} />
      ) : !data ? (
        <ErrorState error={result.error} what={title} />
      ) : data.items.length === 0 ? (
        url.name ? (
          <Empty title={`No ${title} match this name`}>Change or clear the name.</Empty>
        ) : (
          <Empty title={`No ${title} in namespace ${ns}`}>{emptyHint}</Empty>
        )
      ) : (
        <>
          <TableWrap label={title}>
            <table className="table">
              <caption className="visually-hidden">{`${title} in namespace ${ns}`}</caption>
              <thead>
                <tr>
                  {columns.map((c) =>
                    c.sort ? (
                      <SortHeader key={c.label} url={url} column={c.sort} label={c.label} className={c.className} />
                    ) : (
                      <th key={c.label} scope="col" className={c.className}>
                        {c.label}
                      </th>
                    ),
                  )}
                </tr>
              </thead>
              <tbody>
                {sort(data.items, url.sort).map((item) => (
                  <tr key={item.metadata.name}>{cells(item)}</tr>
                ))}
              </tbody>
            </table>
          </TableWrap>
          <Pager url={url} count={data.items.length} noun={title} loading={result.isPlaceholderData} next={data.continue} remaining={data.remainingItemCount} />
        </>
      )}
    </>
  );
}
