import { Link } from 'react-router';
import { PageHeader } from '../components/Page';
import { lastNamespace } from '../lib/namespace';

export function NotFoundPage() {
  return (
    <>
      <PageHeader title="Page not found" />
      <p className="prose">
        This address does not match any page of the Console. Go to{' '}
        <Link to={`/namespaces/${lastNamespace()}/runs`}>Runs</Link>.
      </p>
    </>
  );
}
