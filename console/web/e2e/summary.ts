// Closes the output with the line the suites that run these flows read
// (tests/tests/cluster_helm.rs, cluster_dashboard.rs): "N passed, N failed".
import type { FullResult, Reporter, TestCase, TestResult } from '@playwright/test/reporter';

export default class Summary implements Reporter {
  private passed = 0;
  private failed = 0;

  onTestEnd(test: TestCase, result: TestResult): void {
    // Only the final attempt counts (there are no retries by default).
    if (result.retry < test.retries && result.status !== 'passed' && result.status !== 'skipped') return;
    if (test.outcome() === 'expected' || test.outcome() === 'flaky') this.passed++;
    else if (test.outcome() === 'unexpected') this.failed++;
  }

  onEnd(result: FullResult): void {
    // A run that did not start its tests (a broken config or file) is a failure too.
    if (result.status !== 'passed' && this.failed === 0) this.failed = 1;
    console.log(`${this.passed} passed, ${this.failed} failed`);
  }

  printsToStdio(): boolean {
    return true;
  }
}
