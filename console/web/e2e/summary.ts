// Closes the output with the line the suites that run these flows read
// (tests/tests/cluster_helm.rs, cluster_dashboard.rs): "N passed, N failed".
// A test that never ran (its project waited on another that never ended,
// the run was interrupted) is a failure: the run fails, and the line counts it.
import type { FullResult, Reporter, Suite, TestCase, TestResult } from '@playwright/test/reporter';

export default class Summary implements Reporter {
  private planned: TestCase[] = [];
  private passed = 0;
  private failed = 0;
  private ended = new Set<TestCase>();

  onBegin(_config: unknown, suite: Suite): void {
    this.planned = suite.allTests();
  }

  onTestEnd(test: TestCase, result: TestResult): void {
    // Only the final attempt counts (there are no retries by default).
    if (result.retry < test.retries && result.status !== 'passed' && result.status !== 'skipped') return;
    this.ended.add(test);
    if (test.outcome() === 'expected' || test.outcome() === 'flaky') this.passed++;
    else if (test.outcome() === 'unexpected') this.failed++;
  }

  async onEnd(result: FullResult): Promise<{ status?: FullResult['status'] } | undefined> {
    const notRun = this.planned.filter((t) => !this.ended.has(t));
    if (notRun.length) {
      console.log(`${notRun.length} tests did not run, among them: ${notRun.slice(0, 3).map((t) => t.title).join('; ')}`);
      this.failed += notRun.length;
    }
    // A run that did not start its tests (a broken config or file) is a failure too.
    if (result.status !== 'passed' && this.failed === 0) this.failed = 1;
    console.log(`${this.passed} passed, ${this.failed} failed`);
    return this.failed > 0 ? { status: 'failed' } : undefined;
  }

  printsToStdio(): boolean {
    return true;
  }
}
