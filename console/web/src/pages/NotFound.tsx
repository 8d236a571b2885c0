import { Link } from 'react-router';
import { PageHeader } from '../components/Page';
import { useLandingNamespace } from '../api/queries';

export function NotFoundPage() {
  const { ns } = useLandingNamespace();
  return (
    <>
      <PageHeader title="Page not found" />
      <p className="prose">
        This address does not match any page of the Console. Go to{' '}
        <Link to={`/namespaces/${ns}/runs`}>Runs</Link>.
      </p>
    </>
  );
}
