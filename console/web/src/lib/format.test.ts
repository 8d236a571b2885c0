import { describe, expect, it } from 'vitest';
import { dateTime, describeValue, logTime, zoneOf } from './format';
import { conditionTone } from './phase';

describe('times carry their zone', () => {
  it('dateTime ends with the zone of the local time', () => {
    const t = '2026-12-01T15:04:05Z';
    const d = new Date(t);
    expect(dateTime(t).endsWith(` ${zoneOf(d)}`)).toBe(true);
    expect(zoneOf(d)).toMatch(/^UTC([+-]\d{2}:\d{2})?$/);
  });
  it('zoneOf writes the offset with the sign of UTC±', () => {
    const at = (offsetMinutes: number) => ({ getTimezoneOffset: () => offsetMinutes }) as Date;
    expect(zoneOf(at(0))).toBe('UTC');
    expect(zoneOf(at(-60))).toBe('UTC+01:00');
    expect(zoneOf(at(330))).toBe('UTC-05:30');
  });
  it('log times are UTC and say so', () => {
    expect(logTime('2026-12-01T15:04:05.123456789Z')).toBe('2026-12-01 15:04:05.123Z');
  });
});

describe('describeValue (a retry policy)', () => {
  it('turns JSON into readable pairs', () => {
    expect(describeValue({ maxAttempts: 3, backoff: { initial: '10s', max_delay: '1m' }, on: ['Failed', 'Timeout'] })).toEqual([
      ['Max attempts', '3'],
      ['Backoff initial', '10s'],
      ['Backoff max delay', '1m'],
      ['On', 'Failed, Timeout'],
    ]);
    expect(describeValue(null)).toEqual([]);
  });
});

describe('conditionTone', () => {
  it('an expected wait of a Pending Run is pending, not a failure', () => {
    expect(conditionTone('False', 'NoCapacity', 'Pending')).toBe('pending');
    expect(conditionTone('False', undefined, '')).toBe('pending');
  });
  it('failures stay red', () => {
    expect(conditionTone('False', 'ImagePullBackOff', 'Pending')).toBe('danger');
    expect(conditionTone('False', 'RunFailed', 'Failed')).toBe('danger');
    expect(conditionTone('False', 'SomethingElse', 'Failed')).toBe('danger');
    // Not a Run (a Runtime's Ready=False): red as before.
    expect(conditionTone('False', 'MinimumReplicasUnavailable')).toBe('danger');
  });
  it('True is success and Unknown neutral', () => {
    expect(conditionTone('True', 'Scheduled', 'Running')).toBe('success');
    expect(conditionTone('Unknown', undefined, 'Running')).toBe('neutral');
  });
});
