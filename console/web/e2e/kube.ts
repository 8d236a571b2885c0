// kubectl against the test environment (KUBECONFIG, exported by hack/e2e)
// for the flows that need a Run to appear, change or go away mid-test.
import { execFileSync } from 'node:child_process';

function kubeconfig(): string {
  const k = process.env.KUBECONFIG;
  if (!k) throw new Error('KUBECONFIG is not set: run the flows through hack/e2e');
  return k;
}

export function kubectl(args: string[], input?: string): string {
  return execFileSync('kubectl', ['--kubeconfig', kubeconfig(), ...args], {
    input,
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

export interface RunOptions {
  runtime?: string;
  labels?: Record<string, string>;
  status?: Record<string, unknown>;
}

/** Creates (or replaces) a Run without status; `status` (an object) is then written with the status subresource. */
export function applyRun(ns: string, name: string, { runtime = 'bash', labels = {}, status }: RunOptions = {}): void {
  const run = {
    apiVersion: 'kruntimes.io/v1alpha1',
    kind: 'Run',
    metadata: { name, namespace: ns, labels: { e2e: 'console-web', ...labels } },
    spec: { runtime, mode: { task: {} }, timeout: '10m' },
  };
  kubectl(['apply', '-f', '-'], JSON.stringify(run));
  if (status) kubectl(['-n', ns, 'patch', 'run', name, '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify({ status })]);
}

export function patchRunStatus(ns: string, name: string, status: Record<string, unknown>): void {
  kubectl(['-n', ns, 'patch', 'run', name, '--subresource', 'status', '--type', 'merge', '-p', JSON.stringify({ status })]);
}

export function deleteRun(ns: string, name: string): void {
  kubectl(['-n', ns, 'delete', 'run', name, '--ignore-not-found', '--wait=false']);
}

export function podUid(ns: string, pod: string): string {
  return kubectl(['-n', ns, 'get', 'pod', pod, '-o', 'jsonpath={.metadata.uid}']).trim();
}
