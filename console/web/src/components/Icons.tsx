/** Small semantic line icons (24×24 grid, currentColor). Decorative: the label carries the meaning. */
import type { ReactNode, SVGProps } from 'react';
import './Icons.css';

function Icon({ children, ...rest }: SVGProps<SVGSVGElement> & { children: ReactNode }) {
  return (
    <svg
      viewBox="0 0 24 24"
      width="16"
      height="16"
      fill="none"
      stroke="currentColor"
      strokeWidth="1.8"
      strokeLinecap="round"
      strokeLinejoin="round"
      aria-hidden="true"
      focusable="false"
      className="icon"
      {...rest}
    >
      {children}
    </svg>
  );
}

/** A Run: one execution — a play triangle in a circle. */
export const RunsIcon = () => (
  <Icon>
    <circle cx="12" cy="12" r="9" />
    <path d="M10 8.5v7l6-3.5z" />
  </Icon>
);

/** A Runtime: a pool of warm Pods — stacked servers. */
export const RuntimesIcon = () => (
  <Icon>
    <rect x="4" y="4" width="16" height="6" rx="1.5" />
    <rect x="4" y="14" width="16" height="6" rx="1.5" />
    <path d="M8 7h.01M8 17h.01M12 7h5M12 17h5" />
  </Icon>
);

/** A WorkflowRun: jobs joined by dependencies — a small graph. */
export const WorkflowIcon = () => (
  <Icon>
    <rect x="3" y="4" width="6" height="5" rx="1.2" />
    <rect x="3" y="15" width="6" height="5" rx="1.2" />
    <rect x="15" y="9.5" width="6" height="5" rx="1.2" />
    <path d="M9 6.5h2.5a1.5 1.5 0 0 1 1.5 1.5v2.5a1.5 1.5 0 0 0 1.5 1.5H15M9 17.5h2.5a1.5 1.5 0 0 0 1.5-1.5v-2.5" />
  </Icon>
);

/** An Action: a reusable step — a puzzle piece that plugs into a workflow. */
export const ActionIcon = () => (
  <Icon>
    <path d="M5 8h3.2a2 2 0 1 1 3.6 0H15v3.2a2 2 0 1 1 0 3.6V19H5z" />
  </Icon>
);

/** A PersistentWorkspace: data kept between Runs — a storage cylinder. */
export const WorkspaceIcon = () => (
  <Icon>
    <ellipse cx="12" cy="6" rx="7" ry="2.6" />
    <path d="M5 6v12c0 1.4 3.1 2.6 7 2.6s7-1.2 7-2.6V6M5 12c0 1.4 3.1 2.6 7 2.6s7-1.2 7-2.6" />
  </Icon>
);

/** Settings: sliders. */
export const SettingsIcon = () => (
  <Icon>
    <path d="M4 7h9M17 7h3M4 17h3M11 17h9" />
    <circle cx="15" cy="7" r="2" />
    <circle cx="9" cy="17" r="2" />
  </Icon>
);

/** About: information. */
export const AboutIcon = () => (
  <Icon>
    <circle cx="12" cy="12" r="9" />
    <path d="M12 11v5M12 8h.01" />
  </Icon>
);

export const LogoutIcon = () => (
  <Icon>
    <path d="M14 4h4a2 2 0 0 1 2 2v12a2 2 0 0 1-2 2h-4M10 16l-4-4 4-4M6 12h10" />
  </Icon>
);

export const SearchIcon = () => (
  <Icon>
    <circle cx="11" cy="11" r="6" />
    <path d="M20 20l-4.5-4.5" />
  </Icon>
);

export const DownloadIcon = () => (
  <Icon>
    <path d="M12 4v11M7 10l5 5 5-5M5 20h14" />
  </Icon>
);

export const ArrowDownIcon = () => (
  <Icon>
    <path d="M12 5v14M6 13l6 6 6-6" />
  </Icon>
);

export const NamespaceIcon = () => (
  <Icon>
    <path d="M4 7l8-4 8 4v10l-8 4-8-4z" />
    <path d="M4 7l8 4 8-4M12 11v10" />
  </Icon>
);

export const LockIcon = () => (
  <Icon>
    <rect x="5" y="11" width="14" height="9" rx="2" />
    <path d="M8 11V8a4 4 0 0 1 8 0v3" />
  </Icon>
);

export const ChevronIcon = ({ open }: { open: boolean }) => (
  <Icon style={{ transform: open ? 'rotate(90deg)' : undefined }} className="icon chevron">
    <path d="M9 6l6 6-6 6" />
  </Icon>
);

export const TerminalIcon = () => (
  <Icon>
    <rect x="3" y="4" width="18" height="16" rx="2" />
    <path d="M7 9l3 3-3 3M13 15h4" />
  </Icon>
);

/** The folded navigation: three bars. */
export const MenuIcon = () => (
  <Icon>
    <path d="M4 7h16M4 12h16M4 17h16" />
  </Icon>
);

/** Copy to the clipboard: two sheets. */
export const CopyIcon = () => (
  <Icon>
    <rect x="8" y="8" width="12" height="12" rx="2" />
    <path d="M16 8V5.5A1.5 1.5 0 0 0 14.5 4h-9A1.5 1.5 0 0 0 4 5.5v9A1.5 1.5 0 0 0 5.5 16H8" />
  </Icon>
);
