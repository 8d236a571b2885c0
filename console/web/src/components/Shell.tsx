import { useMutation, useQueryClient } from '@tanstack/react-query';
import { useEffect, useState, type ReactNode } from 'react';
import { NavLink, Outlet, useLocation, useNavigate, useParams } from 'react-router';
import { logout, onUnauthorized } from '../api/client';
import { queryKeys, useLandingNamespace, useSession } from '../api/queries';
import { rememberNamespace } from '../lib/namespace';
import { AboutIcon, ActionIcon, LogoutIcon, MenuIcon, RunsIcon, RuntimesIcon, SettingsIcon, WorkflowIcon, WorkspaceIcon } from './Icons';
import { NamespaceSelect } from './NamespaceSelect';
import { LiveProvider } from '../api/watch';

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
          <Outlet />
        </LiveProvider>
      </main>
    </div>
  );
}
