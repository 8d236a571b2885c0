/**
 * What every list page keeps in the URL: the page (`cont`, one continue
 * token per page after the first), the page size (`limit`), the sort
 * (`sort=column` or `sort=-column`) and the name search (`name`), with the
 * column headers, the name field and the pager that change them.
 */
import { useState, type ReactNode } from 'react';
import { useSearchParams } from 'react-router';
import { nextSort, parseSort, type Sort } from '../lib/sort';
import './ListControls.css';

export const PAGE_SIZES = [25, 50, 100, 200, 500];
export const DEFAULT_PAGE_SIZE = 50;

export interface ListUrl<C extends string> {
  params: URLSearchParams;
  setParams: ReturnType<typeof useSearchParams>[1];
  name: string;
  limit: number;
  sort: Sort<C> | null;
  /** The continue tokens of the pages read so far. */
  pages: string[];
  /** The continue token of the page shown (none on page 1). */
  cont: string | undefined;
  /** Sets one parameter; any but the sort starts again at the first page. */
  setParam(key: string, value: string): void;
  goToPage(next: string[]): void;
}

export function useListUrl<C extends string>(columns: readonly C[]): ListUrl<C> {
  const [params, setParams] = useSearchParams();
  const pages = params.getAll('cont');
  return {
    params,
    setParams,
    name: params.get('name') ?? '',
    limit: Number(params.get('limit')) || DEFAULT_PAGE_SIZE,
    sort: parseSort(params.get('sort'), columns),
    pages,
    cont: pages[pages.length - 1],
    setParam(key, value) {
      const next = new URLSearchParams(params);
      if (value) next.set(key, value);
      else next.delete(key);
      if (key !== 'sort') next.delete('cont');
      setParams(next, { replace: true });
    },
    goToPage(next) {
      const p = new URLSearchParams(params);
      p.delete('cont');
      for (const c of next) p.append('cont', c);
      setParams(p);
    },
  };
}

/** A column header that sorts the page shown: ascending, descending, unsorted. */
export function SortHeader<C extends string>({
  url,
  column,
  label,
  className,
}: {
  url: ListUrl<C>;
  column: C;
  label: string;
  className?: string;
}) {
  const active = url.sort?.column === column;
  const descending = active && url.sort?.descending === true;
  return (
    <th scope="col" className={className} aria-sort={active ? (descending ? 'descending' : 'ascending') : 'none'}>
      <button type="button" className="th-sort" onClick={() => url.setParam('sort', nextSort(url.sort, column))}>
        {label}
        <span className="sort-mark" aria-hidden="true">
          {active ? (descending ? '▼' : '▲') : '↕'}
        </span>
      </button>
    </th>
  );
}

/** The draft of a text filter: follows the URL's value when that changes (Back, a link), edited freely otherwise. */
export function useDraft(value: string): [string, (v: string) => void] {
  const [draft, setDraft] = useState(value);
  const [draftFor, setDraftFor] = useState(value);
  if (draftFor !== value) {
    setDraftFor(value);
    setDraft(value);
  }
  return [draft, setDraft];
}

/** The name search and page size of an object list, applied with Enter or Apply. */
export function NameFilter<C extends string>({ url, id, label, children }: { url: ListUrl<C>; id: string; label: string; children?: ReactNode }) {
  const [draft, setDraft] = useDraft(url.name);
  return (
    <form
      className="filters"
      aria-label={label}
      onSubmit={(e) => {
        e.preventDefault();
        url.setParam('name', draft.trim().toLowerCase());
      }}
    >
      <div className="field">
        <label htmlFor={`${id}-name`}>Name</label>
        <div className="input-group">
          <input
            id={`${id}-name`}
            className="input mono"
            type="search"
            value={draft}
            placeholder="part of a name"
            spellCheck={false}
            autoComplete="off"
            onChange={(e) => setDraft(e.target.value)}
            size={16}
          />
          <button type="submit" className="button">
            Apply
          </button>
        </div>
      </div>
      <PageSize url={url} id={id} />
      {children}
    </form>
  );
}

export function PageSize<C extends string>({ url, id }: { url: ListUrl<C>; id: string }) {
  return (
    <div className="field">
      <label htmlFor={`${id}-limit`}>Per page</label>
      <select
        id={`${id}-limit`}
        className="input"
        value={url.limit}
        onChange={(e) => url.setParam('limit', Number(e.target.value) === DEFAULT_PAGE_SIZE ? '' : e.target.value)}
      >
        {PAGE_SIZES.map((n) => (
          <option key={n} value={n}>
            {n}
          </option>
        ))}
      </select>
    </div>
  );
}

/** Previous and Next: links in the URL, so a page can be shared and reloaded. */
export function Pager<C extends string>({
  url,
  count,
  noun,
  loading,
  next,
  remaining,
}: {
  url: ListUrl<C>;
  count: number;
  noun: string;
  loading: boolean;
  next: string | undefined;
  remaining: number | undefined;
}) {
  return (
    <div className="pager" role="navigation" aria-label="Pages">
      <button type="button" className="button" disabled={url.pages.length === 0} onClick={() => url.goToPage(url.pages.slice(0, -1))}>
        ← Previous
      </button>
      <span className="muted small">
        Page {url.pages.length + 1} · {loading ? 'loading…' : `${count} ${noun}${url.sort ? ' (this page sorted)' : ''}`}
        {remaining !== undefined ? ` · ${remaining} more` : ''}
      </span>
      <button type="button" className="button" disabled={!next} onClick={() => next && url.goToPage([...url.pages, next])}>
        Next →
      </button>
    </div>
  );
}

/** The header note of a later page: it is read once, as listed then. */
export function SnapshotNote({ pages, updatedAt, when }: { pages: number; updatedAt: number; when: (t: number) => string }) {
  return (
    <div className="live">
      <span className="muted small" role="status">
        Page {pages + 1} as listed at {updatedAt ? when(updatedAt) : '…'}; only page 1 refreshes.
      </span>
    </div>
  );
}
