// @vitest-environment jsdom
import { cleanup, fireEvent, render, screen, within } from '@testing-library/react';
import { MemoryRouter, Route, Routes, useLocation } from 'react-router';
import { afterEach, describe, expect, it } from 'vitest';
import type { ListResponse, ObjectListQuery } from '../api/types';
import { sortBy, type Sort } from '../lib/sort';
import { ListPage, useListPage, type ListResult } from './ListPage';

afterEach(cleanup);

type Thing = { metadata: { name: string }; size: number };
type ThingColumn = 'name' | 'size';
const THING_COLUMNS: readonly ThingColumn[] = ['name', 'size'];
const sortThings = (items: readonly Thing[], sort: Sort<ThingColumn> | null) =>
  sortBy(items, sort, (t, c) => (c === 'name' ? t.metadata.name : t.size));

const thing = (name: string, size: number): Thing => ({ metadata: { name }, size });
const things = [thing('beta', 2), thing('alpha', 3), thing('gamma', 1)];

const result = (over: Partial<ListResult<Thing>> = {}): ListResult<Thing> => ({
  data: undefined,
  error: null,
  isPending: false,
  isFetching: false,
  isPlaceholderData: false,
  dataUpdatedAt: Date.parse('2026-12-03T12:00:00Z'),
  ...over,
});
const answer = (items: Thing[], over: Partial<ListResponse<Thing>> = {}) => result({ data: { items, ...over } });

/** What the page asked its query hook for, render after render. */
let asked: { live: boolean; query: ObjectListQuery }[] = [];

function Where() {
  const loc = useLocation();
  return <output data-testid="where">{loc.search}</output>;
}

function ThingsPage({ res, summary, hint }: { res: ListResult<Thing>; summary?: boolean; hint?: string }) {
  const list = useListPage(THING_COLUMNS);
  asked.push({ live: list.options.live, query: list.query });
  return (
    <ListPage
      list={list}
      result={res}
      title="Things"
      summary={summary}
      emptyHint={hint}
      columns={[
        { label: 'Name', sort: 'name' },
        { label: 'Colour' },
        { label: 'Size', sort: 'size', className: 'num' },
      ]}
      sort={sortThings}
      cells={(t) => (
        <>
          <td className="name">{t.metadata.name}</td>
          <td>grey</td>
          <td className="num">{t.size}</td>
        </>
      )}
    />
  );
}

function show(res: ListResult<Thing>, search = '', props: { summary?: boolean; hint?: string } = {}) {
  asked = [];
  return render(
    <MemoryRouter initialEntries={[`/namespaces/team-a/things${search}`]}>
      <Routes>
        <Route
          path="/namespaces/:ns/things"
          element={
            <>
              <ThingsPage res={res} {...props} />
              <Where />
            </>
          }
        />
      </Routes>
    </MemoryRouter>,
  );
}

const names = () => screen.getAllByRole('row').slice(1).map((r) => r.querySelector('td')?.textContent);
const where = () => screen.getByTestId('where').textContent;

describe('ListPage', () => {
  it('shows the header, breadcrumbs, name filter and live switch, and asks for page 1 live', () => {
    show(answer(things));
    expect(screen.getByRole('heading', { level: 1 }).textContent).toBe('Things');
    expect(document.title).toBe('Things · Kruntimes Console');
    expect(within(screen.getByRole('navigation', { name: 'Breadcrumb' })).getAllByRole('listitem').map((li) => li.textContent)).toEqual(['team-a', 'Things']);
    expect(screen.getByRole('form', { name: 'Filter Things' })).toBeTruthy();
    expect(screen.getByLabelText('Auto-refresh')).toHaveProperty('checked', true);
    expect(asked.at(-1)).toEqual({ live: true, query: { limit: 50 } });
  });

  it('shows the loading state', () => {
    show(result({ isPending: true, isFetching: true }));
    expect(screen.getByText(/Loading Things…/).getAttribute('role')).toBe('status');
    expect(screen.queryByRole('table')).toBeNull();
  });

  it('shows the error of a list that could not be read', () => {
    show(result({ error: new Error('connection refused') }));
    const alert = screen.getByRole('alert');
    expect(alert.textContent).toContain('Could not load Things');
    expect(alert.textContent).toContain('connection refused');
    expect(screen.queryByRole('table')).toBeNull();
  });

  it('shows the empty state of the namespace, with the hint when given', () => {
    show(answer([]), '', { hint: 'Things created here appear here.' });
    expect(screen.getByText('No Things in namespace team-a')).toBeTruthy();
    expect(screen.getByText('Things created here appear here.')).toBeTruthy();
    expect(screen.queryByRole('table')).toBeNull();
    cleanup();
    const { container } = show(answer([]));
    expect(container.querySelector('.state-empty')?.innerHTML).toBe('<p class="state-title">No Things in namespace team-a</p>');
  });

  it('shows the empty state of a name search', () => {
    show(answer([]), '?name=zz', { hint: 'Things created here appear here.' });
    expect(screen.getByText('No Things match this name')).toBeTruthy();
    expect(screen.getByText('Change or clear the name.')).toBeTruthy();
    expect(screen.queryByText('Things created here appear here.')).toBeNull();
    expect(asked.at(-1)?.query).toEqual({ name: 'zz', limit: 50 });
  });

  it('applies a name search to the URL, lower case, from the first page', () => {
    show(answer(things), '?cont=c1');
    fireEvent.change(screen.getByLabelText('Name'), { target: { value: ' Al ' } });
    fireEvent.submit(screen.getByRole('form', { name: 'Filter Things' }));
    expect(where()).toBe('?name=al');
  });

  it('renders the rows in the server order, then sorted by the column clicked', () => {
    show(answer(things));
    expect(screen.getAllByRole('columnheader').map((h) => [h.textContent, h.getAttribute('aria-sort'), h.className])).toEqual([
      ['Name↕', 'none', ''],
      ['Colour', null, ''],
      ['Size↕', 'none', 'num'],
    ]);
    expect(names()).toEqual(['beta', 'alpha', 'gamma']);
    const name = screen.getByRole('button', { name: /^Name/ });
    fireEvent.click(name);
    expect(where()).toBe('?sort=name');
    expect(names()).toEqual(['alpha', 'beta', 'gamma']);
    expect(name.closest('th')?.getAttribute('aria-sort')).toBe('ascending');
    fireEvent.click(name);
    expect(names()).toEqual(['gamma', 'beta', 'alpha']);
    expect(name.closest('th')?.getAttribute('aria-sort')).toBe('descending');
    fireEvent.click(screen.getByRole('button', { name: /^Size/ }));
    expect(names()).toEqual(['gamma', 'beta', 'alpha']);
    expect(where()).toBe('?sort=size');
  });

  it('reads the sort from the URL', () => {
    show(answer(things), '?sort=-size');
    expect(names()).toEqual(['alpha', 'beta', 'gamma']);
    expect(within(screen.getAllByRole('row')[1]!).getAllByRole('cell').map((c) => c.textContent)).toEqual(['alpha', 'grey', '3']);
  });

  it('shows the public summary banner when the list is a summary and the page allows one', () => {
    show(answer(things, { summary: true }), '', { summary: true });
    expect(screen.getByText(/You are seeing a public summary/)).toBeTruthy();
    cleanup();
    show(answer(things), '', { summary: true });
    expect(screen.queryByText(/public summary/)).toBeNull();
    cleanup();
    show(answer(things, { summary: true }));
    expect(screen.queryByText(/public summary/)).toBeNull();
  });

  it('pages with Next and Previous; a later page is a snapshot and is not read live', () => {
    show(answer(things, { continue: 'c1', remainingItemCount: 4 }), '?sort=name');
    const pager = screen.getByRole('navigation', { name: 'Pages' });
    expect(pager.textContent).toContain('Page 1 · 3 Things (this page sorted) · 4 more');
    expect(within(pager).getByRole('button', { name: '← Previous' })).toHaveProperty('disabled', true);
    fireEvent.click(within(pager).getByRole('button', { name: 'Next →' }));
    expect(where()).toBe('?sort=name&cont=c1');
    expect(pager.textContent).toContain('Page 2 · 3 Things');
    expect(screen.queryByLabelText('Auto-refresh')).toBeNull();
    expect(screen.getByText(/only page 1 refreshes/).textContent).toBe('Page 2 as listed at 2026-12-03 12:00:00 UTC; only page 1 refreshes.');
    expect(asked.at(-1)).toEqual({ live: false, query: { limit: 50, continue: 'c1' } });
    fireEvent.click(within(pager).getByRole('button', { name: '← Previous' }));
    expect(where()).toBe('?sort=name');
    expect(asked.at(-1)).toEqual({ live: true, query: { limit: 50 } });
  });

  it('says loading in the pager while the next page is read, and offers no Next on the last page', () => {
    show(result({ data: { items: things }, isPlaceholderData: true }));
    const pager = screen.getByRole('navigation', { name: 'Pages' });
    expect(pager.textContent).toContain('Page 1 · loading…');
    expect(within(pager).getByRole('button', { name: 'Next →' })).toHaveProperty('disabled', true);
  });

  it('stops asking for live updates when the switch is turned off', () => {
    show(answer(things));
    fireEvent.click(screen.getByLabelText('Auto-refresh'));
    expect(screen.getByLabelText('Auto-refresh')).toHaveProperty('checked', false);
    expect(asked.at(-1)?.live).toBe(false);
  });
});
