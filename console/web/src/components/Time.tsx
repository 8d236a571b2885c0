/** Times that move with the shared clock (lib/now): "5m" ages and running durations. */
import { age, dateTime, duration } from '../lib/format';
import { useNow } from '../lib/now';

/** Compact age of `t` ("12s", "5m"), ticking; the full date-time as its title. */
export function Ago({ t, suffix = '' }: { t: string | undefined; suffix?: string }) {
  const now = useNow();
  if (!t) return <span className="muted">—</span>;
  return (
    <time dateTime={t} title={dateTime(t)}>
      {age(t, now)}
      {suffix}
    </time>
  );
}

/** From `start` to `end`, or to now while there is no end (ticking). */
export function Elapsed({ start, end }: { start: string | undefined; end?: string | undefined }) {
  const now = useNow();
  if (!start) return <span className="muted">—</span>;
  return <span title={end ? `${dateTime(start)} → ${dateTime(end)}` : `since ${dateTime(start)}`}>{duration(start, end, now)}</span>;
}
