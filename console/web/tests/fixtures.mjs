// Fixture answers of the Console API for screenshots and browser checks.
// Test-only: injected by Playwright route interception, never part of the app bundle.
// Typed with the generated API types (tsconfig.test.json checks this file), so a
// fixture cannot drift from what the server answers.
/** @import { LogRecord, NamespaceList, RunDetail, RunList, RunListItem, RunPhase, RuntimeDetail, RuntimeList, WorkflowRunDetail, WorkflowRunList } from '../src/api/types' */

/**
 * The fixtures' "now": a fixed instant, not the clock, so that two runs of the
 * screenshot script give the same pictures (it also fixes the page's clock to it).
 */
export const NOW = Date.parse('2026-06-01T12:00:00Z');
/** The time `s` seconds before NOW (RFC 3339). */
export const ago = (/** @type {number} */ s) => new Date(NOW - s * 1000).toISOString();

export const NS = 'team-a';

/** @type {RunPhase[]} */
const phases = ['Running', 'Succeeded', 'Failed', 'Pending', 'Ready', 'Scheduled', 'Timeout', 'Cancelled'];
const runtimes = ['python-pool', 'node-pool', 'gpu-pool'];

/**
 * @param {number} i
 * @returns {RunListItem}
 */
function runItem(i) {
  const phase = phases[i % phases.length] ?? 'Running';
  const runtime = runtimes[i % runtimes.length] ?? 'python-pool';
  const assigned = phase === 'Pending' ? undefined : `${runtime}-${['7d9f4', 'k2x8q', 'm5n1z'][i % 3]}`;
  const reasons = {
    Running: ['Running', 'Claimed', 'claimed by runtimed'],
    Succeeded: ['Completed', 'RunCompleted', 'run completed'],
    Failed: ['Completed', 'RuntimeExecute', 'exit status 1'],
    Pending: undefined,
    Ready: ['Ready', 'Serving', 'Session is accepting operations'],
    Scheduled: ['Scheduled', 'Assigned', 'assigned to pod'],
    Timeout: ['Completed', 'Timeout', 'run exceeded its 10m timeout'],
    Cancelled: ['Completed', 'Cancelled', 'cancelled by user'],
  }[phase];
  return {
    metadata: {
      name: i === 4 ? 'notebook-session' : `build-${String(4211 - i).padStart(4, '0')}`,
      namespace: NS,
      uid: `0b6f${i}c3e-1d2a-4c55-9e0f-7a1b2c3d4e5${i % 10}`,
      creationTimestamp: ago(60 * (i * 7 + 2)),
      labels: { app: 'ci', branch: i % 2 ? 'main' : 'feature/logs' },
    },
    phase,
    runtime,
    mode: i === 4 ? 'session' : 'task',
    ...(assigned ? { assignedPod: assigned } : {}),
    attempt: phase === 'Failed' ? 2 : 1,
    ...(reasons ? { lastTransition: { type: reasons[0] ?? phase, status: phase === 'Failed' || phase === 'Timeout' || phase === 'Cancelled' ? 'False' : 'True', reason: reasons[1], message: reasons[2], time: ago(60 * i + 30) } } : {}),
    ...(i % 3 === 1 ? { workflowRun: { name: 'release-2025-06', job: 'unit-tests', step: 'run' } } : {}),
    startTime: ago(60 * (i * 7 + 1)),
  };
}

/** @type {RunList} */
export const runList = { items: Array.from({ length: 14 }, (_, i) => runItem(i)), continue: 'eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MTIzfQ' };

/**
 * @param {string} name
 * @returns {RunDetail}
 */
export function runDetail(name) {
  const item = runList.items.find((r) => r.metadata.name === name) ?? runItem(0);
  const session = item.mode === 'session';
  return {
    metadata: { ...item.metadata, name },
    spec: {
      runtime: item.runtime,
      mode: session ? { session: { leaseSeconds: 300 } } : { task: {} },
      timeout: '10m',
      retryPolicy: { maxAttempts: 3, backoff: '10s' },
    },
    status: {
      phase: session ? 'Ready' : item.phase,
      assignedPod: item.assignedPod ?? 'python-pool-7d9f4',
      assignedPodUID: '5f1e2d3c-aaaa-bbbb-cccc-1234567890ab',
      ...(session ? { endpoint: { protocol: 'wss', url: `https://console.example.internal/v1/namespaces/${NS}/runs/${name}/${item.metadata.uid}` } } : {}),
      ...(item.phase === 'Failed' ? { message: 'exit status 1' } : {}),
      startTime: item.startTime,
      ...(item.phase === 'Succeeded' || item.phase === 'Failed' ? { completionTime: ago(60) } : {}),
      outputs: {
        result: 'ok: 128 tests passed, 0 failed',
        coverage: '87.4%',
        report: JSON.stringify({ suites: 12, slowest: 'test_join_large', durations: [1.2, 0.4, 3.3] }, null, 2).repeat(3),
      },
      artifactRefs: [
        { name: 'junit.xml', driver: 's3', type: 'file', location: 's3://ci-artifacts/team-a/build-4211/junit.xml', sizeBytes: 48213, digest: 'sha256:9f2c1b7e4a0d3f6e8b5a2c1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f', contentType: 'application/xml', createdAt: ago(70) },
        { name: 'coverage.tar.gz', driver: 's3', type: 'archive', location: 's3://ci-artifacts/team-a/build-4211/coverage.tar.gz', sizeBytes: 3481221, digest: 'sha256:0a1b2c3d4e5f', contentType: 'application/gzip' },
      ],
      attempt: item.attempt,
      conditions: [
        { type: 'Scheduled', status: 'True', reason: 'Assigned', message: `assigned to pod ${item.assignedPod ?? 'python-pool-7d9f4'}`, lastTransitionTime: ago(60 * 40) },
        { type: 'Running', status: item.phase === 'Failed' ? 'False' : 'True', reason: item.phase === 'Failed' ? 'RuntimeExecute' : 'Claimed', message: item.phase === 'Failed' ? 'exit status 1' : 'claimed by runtimed', lastTransitionTime: ago(60 * 39) },
        ...(item.phase === 'Succeeded' || item.phase === 'Failed'
          ? [{ type: 'Completed', status: /** @type {'True' | 'False'} */ (item.phase === 'Succeeded' ? 'True' : 'False'), reason: item.phase === 'Succeeded' ? 'RunCompleted' : 'RuntimeExecute', message: item.phase === 'Succeeded' ? 'run completed' : 'exit status 1', lastTransitionTime: ago(60) }]
          : []),
      ],
    },
    state:
      item.phase === 'Failed'
        ? { stage: 'failed', reason: 'RuntimeExecute', message: 'exit status 1' }
        : item.phase === 'Succeeded'
          ? { stage: 'succeeded', reason: 'RunCompleted', message: 'run completed' }
          : session
            ? { stage: 'ready', reason: 'Serving' }
            : { stage: 'running', reason: 'Claimed', message: 'claimed by runtimed' },
    attempts:
      item.phase === 'Failed'
        ? [
            { reason: 'RunFailedRetrying', message: 'Run failed (attempt 1/3), retrying in 10s. Reason: RuntimeExecute: exit status 1', attempt: 1, maxAttempts: 3, time: ago(60 * 20) },
            { reason: 'RunRetrying', message: 'Retry attempt 2/3 starting', attempt: 2, maxAttempts: 3, time: ago(60 * 19) },
          ]
        : [],
    pod: {
      state: 'ok',
      pod: {
        name: item.assignedPod ?? 'python-pool-7d9f4',
        namespace: NS,
        uid: '5f1e2d3c-aaaa-bbbb-cccc-1234567890ab',
        phase: 'Running',
        node: 'worker-3',
        podIP: '10.244.3.17',
        startTime: ago(3600 * 5),
        ready: true,
        runtimedReady: { type: 'kruntimes.io/RuntimedReady', status: 'True', reason: 'Serving', lastTransitionTime: ago(3600 * 5) },
        restarts: 1,
      },
    },
    events: name.endsWith('4210')
      ? { state: 'forbidden', message: 'events is forbidden: User "viewer" cannot list resource "events" in API group "" in the namespace "team-a"', access: { verb: 'list', group: '', resource: 'events', namespace: NS } }
      : {
          state: 'ok',
          items: [
            { type: 'Normal', reason: 'Assigned', message: `Run assigned to ${item.assignedPod ?? 'python-pool-7d9f4'}`, involvedObject: `Run/${name}`, lastTime: ago(60 * 40), count: 1 },
            { type: 'Warning', reason: 'RunFailedRetrying', message: 'Run failed (attempt 1/3), retrying in 10s. Reason: RuntimeExecute: exit status 1', involvedObject: `Run/${name}`, lastTime: ago(60 * 20), count: 1 },
            { type: 'Normal', reason: 'Started', message: 'runtimed started the invocation', involvedObject: `Pod/${item.assignedPod ?? 'python-pool-7d9f4'}`, lastTime: ago(60 * 19) },
          ],
        },
    workflowRun: { state: 'absent', message: 'no WorkflowRun step started this Run' },
  };
}

/**
 * @param {number} n
 * @returns {LogRecord[]}
 */
export function logRecords(n, startSeconds = 600) {
  /** @type {LogRecord[]} */
  const out = [];
  for (let i = 0; i < n; i++) {
    const stderr = i % 17 === 5;
    out.push({
      stream: stderr ? 'stderr' : 'stdout',
      message: stderr
        ? `WARNING: retrying request ${i} after connection reset by peer`
        : i % 9 === 0
          ? `collected ${i * 3} items / running shard ${i % 4} of 4 — ${'long line segment '.repeat(i % 5 === 0 ? 12 : 1)}`
          : `test_module_${i}.py::test_case_${i} PASSED [${Math.min(100, i)}%]`,
      pod: 'python-pool-7d9f4',
      time: new Date(NOW - (startSeconds - i) * 1000).toISOString(),
      cursor: `${Math.floor((NOW - (startSeconds - i) * 1000) / 1000)}.000000000-0`,
    });
  }
  return out;
}

/**
 * What `GET .../runs/{name}/logs` answers from a Run's records written so far
 * (`log`, oldest first), by the Run-log API's cursor contract (docs/api.md,
 * "Cursors" and "Follow"): the last `tail` records, or the first with
 * `fromStart`; with `sinceCursor`, only records after it (the first `tail`, or
 * every one when following: a resumed follow never repeats a record); with
 * `beforeCursor`, the last `tail` before it. A cursor that names no record
 * is `gone` (the server's 410).
 * @param {readonly LogRecord[]} log
 * @param {URLSearchParams} params
 * @returns {{ records: LogRecord[]; truncated: boolean } | { gone: string }}
 */
export function readLog(log, params) {
  const tail = Number(params.get('tail') ?? 100);
  const follow = params.get('follow') === 'true';
  const since = params.get('sinceCursor');
  const before = params.get('beforeCursor');
  const at = (/** @type {string} */ cursor) => log.findIndex((r) => r.cursor === cursor);
  if (since !== null) {
    const i = at(since);
    if (i < 0) return { gone: `the record of sinceCursor ${since} is no longer in the Pod log` };
    const after = log.slice(i + 1);
    return follow ? { records: after, truncated: false } : { records: after.slice(0, tail), truncated: after.length > tail };
  }
  if (before !== null) {
    const i = at(before);
    if (i < 0) return { gone: `the record of beforeCursor ${before} is no longer in the Pod log` };
    return { records: log.slice(Math.max(0, i - tail), i), truncated: i > tail };
  }
  if (params.get('fromStart') === 'true') return { records: log.slice(0, tail), truncated: log.length > tail };
  return { records: log.slice(Math.max(0, log.length - tail)), truncated: log.length > tail };
}

/** @type {RuntimeList} */
export const runtimeList = {
  items: [
    { metadata: { name: 'python-pool', namespace: NS, creationTimestamp: ago(86400 * 12) }, replicas: 3, readyReplicas: 3, image: 'ghcr.io/example/python-runtime:3.12' },
    { metadata: { name: 'node-pool', namespace: NS, creationTimestamp: ago(86400 * 3) }, replicas: 2, readyReplicas: 1, image: 'ghcr.io/example/node-runtime:22' },
    { metadata: { name: 'gpu-pool', namespace: NS, creationTimestamp: ago(3600 * 5) }, replicas: 1, readyReplicas: 1, image: 'ghcr.io/example/cuda-runtime:12.4' },
  ],
};

/**
 * @param {string} name
 * @returns {RuntimeDetail}
 */
export function runtimeDetail(name) {
  return {
    metadata: { name, namespace: NS, creationTimestamp: ago(86400 * 12), uid: 'rt-1' },
    spec: { replicas: 3, port: 9091, capacity: { resources: { runs: '4', memory: '8Gi' } }, image: 'ghcr.io/example/python-runtime:3.12' },
    status: { readyReplicas: 2 },
    pods: {
      state: 'ok',
      items: ['7d9f4', 'k2x8q', 'm5n1z'].map((s, i) => ({
        name: `${name}-${s}`,
        uid: `pod-${s}`,
        phase: i === 2 ? 'Pending' : 'Running',
        ready: i !== 2,
        runtimedReady: { type: 'kruntimes.io/RuntimedReady', status: i === 2 ? 'False' : 'True', reason: i === 2 ? 'WarmingUp' : 'Heartbeat' },
        restarts: i,
        node: `worker-${i + 1}`,
        capacity: { runs: '4', memory: '8Gi' },
        runs: i === 2 ? [] : runList.items.slice(i * 2, i * 2 + 2).map((r) => ({ name: r.metadata.name, phase: r.phase ?? 'Pending' })),
        usage: [
          { resource: 'memory', capacity: '8Gi', used: 0, free: 8 * 1024 ** 3 },
          { resource: 'runs', capacity: '4', used: i === 2 ? 0 : 2, free: i === 2 ? 4 : 2 },
        ],
      })),
    },
    queue: { state: 'ok', items: [{ name: 'batch-4211', creationTimestamp: ago(120), message: `waiting for available runtime pods for runtime ${name}` }] },
  };
}

/** @type {WorkflowRunList} */
export const workflowRunList = {
  items: [
    { metadata: { name: 'release-2025-06', namespace: NS, creationTimestamp: ago(3600) }, phase: 'Running', jobs: { total: 9, succeeded: 5, failed: 0, running: 2 }, startTime: ago(3500) },
    { metadata: { name: 'release-2025-06-deploy', namespace: NS, creationTimestamp: ago(1200) }, phase: 'Pending', jobs: { total: 2, succeeded: 0, failed: 0, running: 0 }, parentWorkflowRun: 'release-2025-06' },
    { metadata: { name: 'nightly-1142', namespace: NS, creationTimestamp: ago(86400) }, phase: 'Failed', message: 'resolve Action "publish-docs" for step "publish" in job "docs": Action not found', jobs: { total: 4, succeeded: 2, failed: 1, running: 0 }, startTime: ago(86400), completionTime: ago(84000) },
  ],
};

/**
 * @param {string} name
 * @returns {WorkflowRunDetail}
 */
export function workflowRunDetail(name) {
  const job = (/** @type {string[]} */ needs, extra = {}) => ({ 'runs-on': 'python-pool', needs, steps: [{ name: 'checkout', run: 'git clone $REPO .' }, { name: 'run', run: 'make test' }], ...extra });
  return {
    metadata: { name, namespace: NS, creationTimestamp: ago(3600), uid: 'wr-1' },
    spec: {
      jobs: {
        checkout: job([]),
        lint: job([]),
        'unit-tests': job(['checkout']),
        'integration-tests': job(['checkout']),
        'build-image': job(['checkout', 'lint']),
        'security-scan': job(['build-image']),
        package: job(['unit-tests', 'integration-tests', 'build-image']),
        publish: job(['package', 'security-scan', 'lint']),
        deploy: { uses: 'deploy', needs: ['publish', 'docs-missing'] },
      },
    },
    status: {
      phase: 'Running',
      snapshotName: `${name}-snapshot`,
      startTime: ago(3400),
      conditions: [{ type: 'Accepted', status: 'True', reason: 'SnapshotCreated', message: 'execution snapshot created', lastTransitionTime: ago(3500) }],
      jobs: {
        checkout: { phase: 'Succeeded', outputs: { result: 'sha=4f2a91c' }, steps: [{ name: 'checkout', phase: 'Succeeded', runName: 'build-4211', startTime: ago(3400), completionTime: ago(3380) }, { name: 'run', phase: 'Succeeded', runName: 'build-4210', startTime: ago(3380), completionTime: ago(3300) }] },
        lint: { phase: 'Succeeded', outputs: { result: '0 problems' }, steps: [{ name: 'checkout', phase: 'Succeeded', runName: 'build-4209' }, { name: 'run', phase: 'Succeeded', runName: 'build-4208' }] },
        'unit-tests': { phase: 'Succeeded', outputs: { result: '1,284 passed, 3 skipped in 4m12s — slowest: test_join_large (41s)' }, steps: [{ name: 'checkout', phase: 'Succeeded', runName: 'build-4207' }, { name: 'run', phase: 'Succeeded', runName: 'build-4206' }] },
        'integration-tests': { phase: 'Failed', outputs: { result: '2 failed: test_gateway_tls, test_retry' }, steps: [{ name: 'checkout', phase: 'Succeeded', runName: 'build-4205' }, { name: 'run', phase: 'Failed', runName: 'build-4204' }] },
        'build-image': { phase: 'Succeeded', outputs: { result: 'ghcr.io/example/app@sha256:9f2c1b7e' }, steps: [] },
        'security-scan': { phase: 'Running', steps: [{ name: 'checkout', phase: 'Succeeded', runName: 'build-4203' }, { name: 'run', phase: 'Running', runName: 'build-4200' }] },
        package: { phase: 'Pending' },
        publish: { phase: 'Pending' },
        deploy: { phase: 'Pending', workflowRunName: 'release-2025-06-deploy' },
      },
    },
  };
}

/** @type {NamespaceList} */
export const namespaces = { items: [{ name: 'team-a' }, { name: 'team-b' }, { name: 'default' }] };
