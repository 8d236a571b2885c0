import { describe, expect, it } from 'vitest';
import { canIHint, describeAccess, toApiError } from '../api/errors';
import { NdjsonSplitter } from './ndjson';
import { GATEWAY_ATTEMPTS, classifyClose, decodeOutput, explainRefusal, gatewayRetryMs, heartbeatMs, parseServerFrame, splitCommandLine, toOperation } from './session';

describe('session command line', () => {
  it('splits on whitespace with quotes and escapes', () => {
    expect(splitCommandLine(`python -c "print('a b')"  x\\ y ''`)).toEqual(['python', '-c', "print('a b')", 'x y', '']);
  });

  it('builds the send operation', () => {
    expect(toOperation('ls -la /tmp')).toEqual({ command: 'ls', args: ['-la', '/tmp'] });
    expect(toOperation('cat', 'input')).toEqual({ command: 'cat', stdin: 'input' });
    expect(toOperation('   ')).toBeNull();
  });
});

describe('server frames', () => {
  it('parses the four event types', () => {
    expect(parseServerFrame('{"type":"accepted","operationID":"op1"}')).toEqual({ type: 'accepted', operationID: 'op1' });
    expect(parseServerFrame('{"type":"output","stream":"stderr","data":"x"}')).toEqual({ type: 'output', stream: 'stderr', data: 'x' });
    expect(parseServerFrame('{"type":"progress","message":"half","percent":50}')).toEqual({ type: 'progress', message: 'half', percent: 50 });
    expect(parseServerFrame('{"type":"terminal","status":"Failed","exitCode":2,"error":"boom"}')).toEqual({
      type: 'terminal',
      status: 'Failed',
      exitCode: 2,
      error: 'boom',
    });
  });

  it('keeps anything else as unknown', () => {
    expect(parseServerFrame('not json').type).toBe('unknown');
    expect(parseServerFrame('{"type":"accepted"}').type).toBe('unknown');
    expect(parseServerFrame('{"type":"weird"}').type).toBe('unknown');
  });

  it('decodes base64 output as UTF-8', () => {
    const data = Buffer.from('héllo ✓\n').toString('base64');
    expect(decodeOutput({ data, encoding: 'base64' })).toBe('héllo ✓\n');
    expect(decodeOutput({ data: 'plain' })).toBe('plain');
    expect(decodeOutput({ data: '%%%', encoding: 'base64' })).toMatch(/undecodable/);
    // Bytes that are not UTF-8 text are shown as a hex preview, not as mojibake.
    const bin = btoa(String.fromCharCode(0xff, 0xfe, 0x00, 0x80, 0xc3, 0x28, 0x6b, 0x72, 0x74, 0x0a));
    expect(decodeOutput({ data: bin, encoding: 'base64' })).toBe('[binary output, 10 bytes: ff fe 00 80 c3 28 6b 72 74 0a]\n');
    // Valid UTF-8 with a control character is not text either.
    expect(decodeOutput({ data: btoa('a\u0001b'), encoding: 'base64' })).toMatch(/^\[binary output, 3 bytes: 61 01 62\]/);
    const long = btoa(String.fromCharCode(...Array.from({ length: 100 }, () => 0xff)));
    expect(decodeOutput({ data: long, encoding: 'base64' })).toMatch(/100 bytes: (ff ){63}ff …\]/);
  });

  it('sends heartbeats at a third of the lease, bounded', () => {
    expect(heartbeatMs(undefined)).toBeNull();
    expect(heartbeatMs(0)).toBeNull();
    expect(heartbeatMs(30)).toBe(10_000);
    expect(heartbeatMs(1)).toBe(1000);
    expect(heartbeatMs(3600)).toBe(30_000);
  });

  it('explains closes', () => {
    expect(classifyClose(1006, false, false)).toBe('refused');
    expect(classifyClose(4403, true, false)).toBe('forbidden');
    expect(classifyClose(1006, true, false)).toBe('early');
    expect(classifyClose(1000, true, true)).toBe('normal');
  });
});

describe('errors and forbidden hints', () => {
  it('renders the kubectl auth can-i line', () => {
    expect(canIHint({ verb: 'list', group: 'kruntimes.io', resource: 'runs', namespace: 'team-b' })).toBe(
      'kubectl auth can-i list runs.kruntimes.io -n team-b',
    );
    expect(
      canIHint({ verb: 'get', group: 'logs.kruntimes.io', resource: 'runs', subresource: 'log', namespace: 'team-a', name: 'r1' }),
    ).toBe('kubectl auth can-i get runs.logs.kruntimes.io/r1 --subresource=log -n team-a');
    expect(canIHint({ verb: 'list', group: '', resource: 'events', namespace: 'a' })).toBe('kubectl auth can-i list events -n a');
  });

  it('names verb, resource and namespace', () => {
    expect(describeAccess({ verb: 'create', group: 'kruntimes.io', resource: 'runs', subresource: 'operations', namespace: 'a', name: 's' })).toBe(
      'create runs.kruntimes.io/operations "s" in namespace "a"',
    );
  });

  it('builds errors from the body or the status alone', () => {
    const asked = { verb: 'list', group: 'kruntimes.io', resource: 'runs', namespace: 'x' };
    const e = toApiError(403, { error: { code: 403, reason: 'Forbidden', message: 'no' } }, asked);
    expect([e.status, e.reason, e.message, e.isForbidden]).toEqual([403, 'Forbidden', 'no', true]);
    expect(e.access).toEqual(asked);
    const bare = toApiError(503, '<html>');
    expect(bare.reason).toBe('ServiceUnavailable');
  });
});

describe('NDJSON splitting', () => {
  it('joins lines split across chunks and keeps the tail', () => {
    const s = new NdjsonSplitter();
    expect(s.push('{"a":1}\n{"b"')).toEqual(['{"a":1}']);
    expect(s.push(':2}\r\n\n{"c":3}')).toEqual(['{"b":2}']);
    expect(s.flush()).toEqual(['{"c":3}']);
  });
});

describe('gateway error frames and refused sockets', () => {
  it('parses error frames', () => {
    expect(parseServerFrame('{"type":"error","operationID":"op1","error":"no such operation is running"}')).toEqual({
      type: 'error',
      operationID: 'op1',
      error: 'no such operation is running',
    });
    expect(parseServerFrame('{"type":"error","message":"bad frame"}')).toEqual({ type: 'error', error: 'bad frame' });
  });

  it('explains a socket refused before it opened', () => {
    expect(explainRefusal(false, true, undefined)).toBe('unauthorized');
    expect(explainRefusal(false, true, true)).toBe('unauthorized');
    expect(explainRefusal(true, false, true)).toBe('not-ready');
    expect(explainRefusal(true, true, false)).toBe('forbidden');
    // Signed in, Ready and allowed: the refusal came after the access check, from the gateway (502/503).
    expect(explainRefusal(true, true, true)).toBe('gateway');
    // The session or the access check could not be read: nothing to tell.
    expect(explainRefusal(undefined, true, true)).toBe('unknown');
    expect(explainRefusal(true, true, undefined)).toBe('unknown');
    expect(explainRefusal(undefined, true, undefined)).toBe('unknown');
  });
  it('retries a refused handshake with a growing wait, a bounded number of times', () => {
    expect([1, 2, 3, 4, 5, 6].map(gatewayRetryMs)).toEqual([1000, 2000, 4000, 8000, 10000, 10000]);
    expect(GATEWAY_ATTEMPTS).toBeGreaterThan(1);
  });
});
