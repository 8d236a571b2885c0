/** Badges and detail sections of the Action and PersistentWorkspace views. */
import type { ReactNode } from 'react';
import type { Condition, Section } from '../api/types';
import { workspaceTone } from '../lib/kinds';
import { ConditionBadge, StatusGlyph } from './Status';
import { Forbidden } from './States';

/** A workspace phase: glyph plus the phase word (Pending when none is written). */
export function WorkspacePhaseBadge({ phase }: { phase: string | undefined }) {
  const tone = workspaceTone(phase);
  return (
    <span className={`badge tone-${tone}`}>
      <StatusGlyph tone={tone} size={12} />
      <span>{phase || 'Pending'}</span>
    </span>
  );
}

/** An Action's `Ready` condition, or that the engine has not judged it yet. */
export function ActionReadyBadge({ ready }: { ready: Condition | undefined }) {
  if (!ready) return <ConditionBadge status="Unknown" label="Not checked yet" />;
  return (
    <span title={ready.message}>
      <ConditionBadge status={ready.status} label={ready.status === 'True' ? 'Ready' : ready.reason ?? 'Not ready'} />
    </span>
  );
}

/** A detail section: its content when readable, else why not (the page itself still shows). */
export function SectionView<T>({ section, what, children }: { section: Section<T>; what: string; children: (ok: T) => ReactNode }) {
  switch (section.state) {
    case 'ok':
      return <>{children(section as unknown as T)}</>;
    case 'forbidden':
      return <Forbidden access={section.access} message={section.message} />;
    case 'absent':
      return <p className="muted">{section.message}</p>;
    case 'error':
      return (
        <p className="notice warning" role="status">
          Could not read {what}: {section.message}
        </p>
      );
  }
}
