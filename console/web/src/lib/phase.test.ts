import { describe, expect, it } from 'vitest';
import { CONDITION_POLARITY, conditionPolarity, conditionTone } from './phase';

describe('conditions read by the engine reasons', () => {
  it('is green for Scheduled/Assigned, Running/Claimed and Completed/RunCompleted', () => {
    expect(conditionTone('True', 'Assigned', 'Scheduled')).toBe('success');
    expect(conditionTone('True', 'Claimed', 'Running')).toBe('success');
    expect(conditionTone('True', 'RunCompleted', 'Succeeded')).toBe('success');
  });
  it('is not red for Running=False/Completed on a Run that succeeded', () => {
    expect(conditionTone('False', 'Completed', 'Succeeded')).toBe('neutral');
  });
  it('is red for the engine failure reasons, even while a retry follows', () => {
    for (const r of ['RuntimeExecute', 'PrepareSource', 'ExecutionLost', 'PodGone', 'PodTerminating', 'PodUnhealthy', 'OutputsTooLarge']) {
      expect(conditionTone('False', r, 'Pending'), r).toBe('danger');
      expect(conditionTone('False', r, 'Failed'), r).toBe('danger');
    }
    expect(conditionTone('False', 'Timeout', 'Timeout')).toBe('danger');
  });
  it('is not red for a cancelled Run', () => {
    expect(conditionTone('False', 'Cancelled', 'Cancelled')).toBe('neutral');
  });
});

describe('condition polarity by type', () => {
  it('reads a True negative condition as a failure, never a green check', () => {
    for (const phase of [undefined, '', 'Pending', 'Running', 'Failed', 'Succeeded']) {
      expect(conditionTone('True', 'Exited', phase, 'Failed'), String(phase)).toBe('danger');
      expect(conditionTone('True', undefined, phase, 'Degraded'), String(phase)).toBe('danger');
      expect(conditionTone('False', undefined, phase, 'Failed'), String(phase)).toBe('neutral');
    }
  });
  it('never reads Completed=False as a green check', () => {
    for (const [reason, phase] of [['RuntimeExecute', 'Failed'], ['Exited', 'Failed'], ['Cancelled', 'Cancelled'], [undefined, 'Running'], [undefined, undefined]] as const) {
      expect(conditionTone('False', reason, phase, 'Completed')).not.toBe('success');
    }
    expect(conditionTone('True', 'RunCompleted', 'Succeeded', 'Completed')).toBe('success');
  });
  it('has a table of types: the engine and Kubernetes positive names, the usual negative ones', () => {
    for (const t of ['Ready', 'Scheduled', 'Running', 'Completed', 'Accepted']) expect(conditionPolarity(t), t).toBe('positive');
    for (const t of ['Failed', 'Degraded', 'Stalled', 'TimedOut', 'DiskPressure']) expect(conditionPolarity(t), t).toBe('negative');
    expect(conditionPolarity('SomethingNew')).toBe('positive');
    expect(Object.values(CONDITION_POLARITY).every((p) => p === 'positive' || p === 'negative')).toBe(true);
  });
});
