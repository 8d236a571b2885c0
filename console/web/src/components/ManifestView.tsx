/**
 * The YAML view of an object: the whole object as the server sanitized it
 * (no env values, managed fields, secret references or embedded copies),
 * read only once opened, with copy buttons for the matching kubectl commands.
 */
import { useState } from 'react';
import type { ManifestResource } from '../api/client';
import { useManifest } from '../api/queries';
import { toYaml } from '../lib/yaml';
import { ErrorState, Loading } from './States';
import './ManifestView.css';

/** The kubectl commands that show what this view shows (and, for a Run, its log). */
export function kubectlCommands(resource: ManifestResource, ns: string, name: string): Array<[string, string]> {
  const cmds: Array<[string, string]> = [[`kubectl -n ${ns} get ${resource}.kruntimes.io ${name} -o yaml`, 'Copy the get command']];
  if (resource === 'runs')
    cmds.push([`kubectl get --raw /apis/logs.kruntimes.io/v1alpha1/namespaces/${ns}/runs/${name}/log`, 'Copy the log command']);
  return cmds;
}

function CopyButton({ text, label }: { text: string; label: string }) {
  const [state, setState] = useState<'idle' | 'copied' | 'failed'>('idle');
  const copy = () => {
    const done = (ok: boolean) => {
      setState(ok ? 'copied' : 'failed');
      window.setTimeout(() => setState('idle'), 2000);
    };
    if (!navigator.clipboard) return done(false);
    navigator.clipboard.writeText(text).then(
      () => done(true),
      () => done(false),
    );
  };
  return (
    <button type="button" className="button subtle small" onClick={copy} aria-label={label}>
      {state === 'copied' ? 'Copied' : state === 'failed' ? 'Copy failed: select the text' : 'Copy'}
    </button>
  );
}

export function ManifestView({ resource, ns, name }: { resource: ManifestResource; ns: string; name: string }) {
  const [open, setOpen] = useState(false);
  const q = useManifest(resource, ns, name, open);
  const yaml = q.data ? toYaml(q.data.object) : '';
  return (
    <div className="manifest">
      <ul className="kubectl-cmds" aria-label="kubectl commands">
        {kubectlCommands(resource, ns, name).map(([cmd, label]) => (
          <li key={cmd}>
            <code className="cmd wrap-anywhere">{cmd}</code> <CopyButton text={cmd} label={label} />
          </li>
        ))}
      </ul>
      <button type="button" className="button small" aria-expanded={open} onClick={() => setOpen(!open)}>
        {open ? 'Hide YAML' : 'Show YAML'}
      </button>
      {open && (
        <div className="manifest-body">
          {q.isPending ? (
            <Loading what="the YAML" />
          ) : q.isError ? (
            <ErrorState error={q.error} what="the YAML" />
          ) : (
            <>
              <div className="manifest-tools">
                <CopyButton text={yaml} label="Copy the YAML" />
                {q.data.hidden.length > 0 && (
                  <span className="muted small">
                    {q.data.hidden.length} field{q.data.hidden.length === 1 ? '' : 's'} hidden by the Console (env values,
                    managed fields, secret references)
                  </span>
                )}
              </div>
              <pre className="yaml" tabIndex={0} aria-label={`YAML of ${name}`}>
                <code>{yaml}</code>
              </pre>
            </>
          )}
        </div>
      )}
    </div>
  );
}
