import { Navigate } from 'react-router';
import { useLandingNamespace } from '../api/queries';
import { Loading } from '../components/States';

/** `/`: the Runs of the namespace to land in (remembered, the ServiceAccount's own, or the first readable). */
export function HomePage() {
  const { ns, ready } = useLandingNamespace();
  if (!ready) return <Loading what="your namespaces" />;
  return <Navigate to={`/namespaces/${ns}/runs`} replace />;
}
