/**
 * A WorkflowRun's jobs on a time axis, in stage order: one bar from each
 * job's start to its end (to now while it runs), with start, end and
 * duration in words beside it for every job.
 */
import { Link } from 'react-router';
import type { WorkflowRunDetail } from '../api/types';
import { dateTime, duration } from '../lib/format';
import { focusOrder } from '../lib/dag';
import { phaseTone } from '../lib/phase';
import { timeline } from '../lib/timeline';
import { useDag } from './DagView';
import { StatusGlyph } from './Status';
import './JobTimeline.css';

export function JobTimeline({ wr, ns }: { wr: WorkflowRunDetail; ns: string }) {
  const { staging } = useDag(wr);
  const tl = timeline(focusOrder(staging), wr.status.jobs);
  const base = `/namespaces/${ns}/workflowruns/${wr.metadata.name}/jobs/`;
  return (
    <div className="job-timeline">
      {tl.from === undefined ? (
        <p className="muted">No job has started yet.</p>
      ) : (
        <p className="muted small">
          From {dateTime(new Date(tl.from).toISOString())} to {dateTime(new Date(tl.to!).toISOString())} (
          {duration(new Date(tl.from).toISOString(), new Date(tl.to!).toISOString())})
        </p>
      )}
      <ol className="tl-rows" aria-label={`Timeline of the jobs of ${wr.metadata.name}`}>
        {tl.bars.map((b) => {
          const name = b.id;
          const when = b.start
            ? `${dateTime(b.start)} – ${b.end ? dateTime(b.end) : 'running'} · ${duration(b.start, b.end)}`
            : 'not started';
          return (
            <li key={b.id} className="tl-row" data-job={b.id}>
              <span className="tl-job">
                <StatusGlyph tone={phaseTone(b.phase)} />
                <Link to={`${base}${encodeURIComponent(b.id)}`}>{name}</Link>
              </span>
              <span className="tl-track" aria-hidden="true">
                {b.left !== undefined && (
                  <span
                    className={`tl-bar tone-${phaseTone(b.phase)} ${b.running ? 'running' : ''}`}
                    style={{ left: `${b.left}%`, width: `${b.width}%` }}
                  />
                )}
              </span>
              <span className="tl-when small">
                <span className="visually-hidden">{b.phase}: </span>
                {when}
              </span>
            </li>
          );
        })}
      </ol>
    </div>
  );
}
