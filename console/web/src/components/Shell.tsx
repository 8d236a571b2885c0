import { useMutation, useQuery, useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState, type ReactNode } from 'react';
import { NavLink, Outlet, useLocation, useNavigate, useNavigationType, useParams } from 'react-router';
import { getNamespace, logout, onUnauthorized } from '../api/client';
import { queryKeys, useLandingNamespace, useSession } from '../api/queries';
import { rememberNamespace } from '../lib/namespace';
import { AboutIcon, ActionIcon, LogoutIcon, MenuIcon, RunsIcon, RuntimesIcon, SettingsIcon, WorkflowIcon, WorkspaceIcon } from './Icons';
import { NamespaceSelect } from './NamespaceSelect';
import { PageHeader } from './Page';
import { LiveProvider } from '../api/watch';
import './Shell.css';

function NavItem({ to, icon, label }: { to: string; icon: ReactNode; label: string }) {
  return (
    <li>
      <NavLink to={to} className={({ isActive }) => (isActive ? 'nav-item active' : 'nav-item')}>
        <span className="nav-icon">{icon}</span>
        <span>{label}</span>
      </NavLink>
    </li>
  );
}

function Account() {
  const session = useSession();
  const qc = useQueryClient();
  const navigate = useNavigate();
  const out = useMutation({
    mutationFn: logout,
    onSettled: () => {
      qc.clear();
      navigate('/login');
    },
  });
  if (session.isPending) return <span className="muted account">…</span>;
  if (!session.data?.authenticated)
    return (
      <NavLink className="button" to="/login">
        Log in
      </NavLink>
    );
  return (
    <div className="account">
      <span className="account-label" title={session.data.username}>
        <span className="visually-hidden">Signed in as </span>
        {session.data.username ?? 'signed in'}
      </span>
      <button type="button" className="button subtle" onClick={() => out.mutate()} disabled={out.isPending}>
        <LogoutIcon /> Log out
      </button>
    </div>
  );
}

export function Shell() {
  const { ns: routeNs } = useParams();
  const landing = useLandingNamespace();
  const session = useSession();
  const ns = routeNs ?? landing.ns;
  const qc = useQueryClient();
  const location = useLocation();
  // On narrow screens the navigation folds behind a Menu button; going to a page folds it again.
  const [nav, setNav] = useState({ open: false, at: location.pathname });
  if (nav.open && nav.at !== location.pathname) setNav({ open: false, at: location.pathname });
  const navOpen = nav.open && nav.at === location.pathname;

  useEffect(() => {
    if (routeNs) rememberNamespace(routeNs);
  }, [routeNs]);

  useFocusHeading(location.pathname);

  // Any 401 means the session changed (expired, logged out elsewhere): re-check it.
  useEffect(() => onUnauthorized(() => void qc.invalidateQueries({ queryKey: queryKeys.session })), [qc]);

  return (
    <div className="shell">
      <a className="skip-link" href="#main">
        Skip to content
      </a>
      <header className="topbar">
        <button
          type="button"
          className="button subtle nav-toggle"
          aria-expanded={navOpen}
          aria-controls="main-nav"
          onClick={() => setNav({ open: !navOpen, at: location.pathname })}
        >
          <MenuIcon /> Menu
        </button>
        <NavLink to={`/namespaces/${ns}/runs`} className="brand" aria-label="Kruntimes Console home">
          <img src="/favicon.svg" alt="" width="22" height="22" />
          <span>Kruntimes Console</span>
        </NavLink>
        <NamespaceSelect current={ns} routeNs={routeNs} />
        <div className="topbar-spacer" />
        <Account />
      </header>
      <div className={`sidebar-col ${navOpen ? 'open' : ''}`}>
      <nav className="sidebar" id="main-nav" aria-label="Main">
        <p className="nav-group" id="nav-resources">
          Kruntimes resources
        </p>
        <ul aria-labelledby="nav-resources">
          <NavItem to={`/namespaces/${ns}/runs`} icon={<RunsIcon />} label="Runs" />
          <NavItem to={`/namespaces/${ns}/runtimes`} icon={<RuntimesIcon />} label="Runtimes" />
          <NavItem to={`/namespaces/${ns}/workflowruns`} icon={<WorkflowIcon />} label="Workflow Runs" />
          <NavItem to={`/namespaces/${ns}/actions`} icon={<ActionIcon />} label="Actions" />
          <NavItem to={`/namespaces/${ns}/persistentworkspaces`} icon={<WorkspaceIcon />} label="Workspaces" />
        </ul>
        <p className="nav-group" id="nav-dashboard">
          Dashboard
        </p>
        <ul aria-labelledby="nav-dashboard">
          <NavItem to="/settings" icon={<SettingsIcon />} label="Settings" />
          <NavItem to="/about" icon={<AboutIcon />} label="About" />
        </ul>
      </nav>
      </div>
      <main id="main" className="main" tabIndex={-1}>
        <LiveProvider ns={routeNs} enabled={session.data?.authenticated === true}>
          {routeNs ? (
            <NamespaceGate ns={routeNs}>
              <Outlet />
            </NamespaceGate>
          ) : (
            <Outlet />
          )}
        </LiveProvider>
      </main>
    </div>
  );
}

/**
 * After a route change (another path, not another query), moves the focus to
 * the page's main heading (`#main h1`, tabIndex -1), which screen readers
 * then announce; the first load and the index redirect that follows it leave
 * the focus where the browser put it. The heading may render a few frames
 * after the route: it is looked for until it appears, for up to a second.
 */
function useFocusHeading(pathname: string) {
  const seen = useRef<string | null>(null);
  const type = useNavigationType();
  useEffect(() => {
    const prev = seen.current;
    seen.current = pathname;
    if (prev === null || prev === pathname) return;
    // `/` redirects (replacing itself) to a namespace: still the first load.
    if (prev === '/' && type === 'REPLACE') return;
    let frame = 0;
    let tries = 0;
    const look = () => {
      const h = document.querySelector<HTMLElement>('#main h1');
      if (h) {
        h.focus({ preventScroll: false });
        return;
      }
      if (++tries < 60) frame = requestAnimationFrame(look);
    };
    frame = requestAnimationFrame(look);
    return () => cancelAnimationFrame(frame);
  }, [pathname, type]);
}

/**
 * A namespace's pages, unless the Console says the namespace does not exist
 * (`exists: false`); it says nothing (and the page shows what the cluster
 * answered, such as Forbidden) when the caller could not learn it anyway.
 */
function NamespaceGate({ ns, children }: { ns: string; children: ReactNode }) {
  const check = useQuery({
    queryKey: ['namespace', ns],
    queryFn: () => getNamespace(ns),
    staleTime: 60_000,
    retry: false,
  });
  if (check.data?.exists !== false) return <>{children}</>;
  return (
    <>
      <PageHeader title={ns} crumbs={[{ label: 'Namespaces' }, { label: ns }]} />
      <div className="state state-error" role="alert">
        <p className="state-title">Namespace {ns} does not exist</p>
        <p className="state-body prose">
          There is no namespace named <code>{ns}</code> in this cluster. Pick another one in the namespace list above, or
          check the address.
        </p>
      </div>
    </>
  );
}
