import { describe, expect, it } from 'vitest';
import { conditionTone } from '../src/lib/phase';

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
