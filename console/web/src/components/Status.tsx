import { phaseTone, type Tone } from '../lib/phase';
import './Status.css';

/** Round status glyph per tone; shape differs per tone so colour is not the only cue. */
export function StatusGlyph({ tone, size = 14 }: { tone: Tone; size?: number }) {
  return (
    <svg viewBox="0 0 16 16" width={size} height={size} className={`glyph tone-${tone}`} aria-hidden="true" focusable="false">
      <circle cx="8" cy="8" r="7" className="glyph-bg" />
      {tone === 'success' && <path d="M4.8 8.2l2.1 2.1 4.3-4.5" className="glyph-fg" />}
      {tone === 'danger' && <path d="M5.5 5.5l5 5M10.5 5.5l-5 5" className="glyph-fg" />}
      {tone === 'warning' && <path d="M8 4.5v4.2M8 11.2v.3" className="glyph-fg" />}
      {tone === 'active' && <circle cx="8" cy="8" r="2.6" className="glyph-dot" />}
      {tone === 'pending' && <path d="M8 4.8V8l2.2 1.4" className="glyph-fg" />}
      {tone === 'neutral' && <path d="M5 8h6" className="glyph-fg" />}
    </svg>
  );
}

/**
 * A phase label: round glyph plus the phase word. A Run without a phase has
 * no status yet (its controller has not written one): said so, not "Unknown".
 */
export function PhaseBadge({ phase }: { phase: string | undefined }) {
  const tone = phaseTone(phase);
  const none = !phase || phase === 'Unknown';
  return (
    <span className={`badge tone-${tone}`} title={none ? 'No phase reported yet: the controller has not written a status' : undefined}>
      <StatusGlyph tone={tone} size={12} />
      <span>{none ? 'No status yet' : phase}</span>
    </span>
  );
}

/** A True/False/Unknown condition status as a compact badge; `tone` overrides the colour (a wait is not a failure). */
export function ConditionBadge({ status, label, tone: given }: { status: string | undefined; label?: string; tone?: Tone }) {
  const tone: Tone = given ?? (status === 'True' ? 'success' : status === 'False' ? 'danger' : 'neutral');
  return (
    <span className={`badge tone-${tone}`}>
      <StatusGlyph tone={tone} size={12} />
      <span>{label ?? status ?? 'Unknown'}</span>
    </span>
  );
}
