import { Panel, KeyValues, PageHeader } from '../components/Page';
import { dateTime } from '../lib/format';
import './About.css';

const DOCS: Array<[string, string]> = [
  ['Kubernetes authentication (bearer tokens)', 'https://kubernetes.io/docs/reference/access-authn-authz/authentication/'],
  ['kubectl create token', 'https://kubernetes.io/docs/reference/kubectl/generated/kubectl_create/kubectl_create_token/'],
  ['Kubernetes RBAC authorization', 'https://kubernetes.io/docs/reference/access-authn-authz/rbac/'],
  ['kubectl auth can-i', 'https://kubernetes.io/docs/reference/kubectl/generated/kubectl_auth/kubectl_auth_can-i/'],
];

export function AboutPage() {
  return (
    <>
      <PageHeader title="About" />
      <div className="stack">
        <Panel title="Kruntimes Console">
          <p className="prose">
            The Console shows Runs, Runtime pools and WorkflowRuns of kruntimes, the Kubernetes-native execution engine.
            It is read-only: what you see is decided by your own Kubernetes RBAC permissions, and the only action it
            offers is running commands in a Ready session Run you are allowed to operate.
          </p>
          <KeyValues
            items={[
              ['Version', <code key="v">{__APP_VERSION__}</code>],
              ['Build', <code key="b">{__APP_BUILD__}</code>],
              ['Built', dateTime(__APP_BUILD_TIME__)],
            ]}
          />
        </Panel>
        <Panel title="Documentation">
          <p className="prose">
            The project documentation (installation, the viewer Role, the log API and the <code>/v1</code> access API)
            ships with the release in its <code>docs/</code> folder. Related Kubernetes references:
          </p>
          <ul className="link-list">
            {DOCS.map(([label, href]) => (
              <li key={href}>
                <a href={href} target="_blank" rel="noreferrer noopener">
                  {label}
                </a>
              </li>
            ))}
          </ul>
        </Panel>
      </div>
    </>
  );
}
