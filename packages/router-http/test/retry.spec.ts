import { IDEMPOTENT, afterClose, keepsConnection, mayResend } from '../src/retry';

describe('the retry policy', () => {
  it('mayResend: idempotent methods without a body or an upgrade only', () => {
    for (const method of IDEMPOTENT) expect(mayResend(method, true, null)).toBe(true);
    expect(mayResend('POST', true, null)).toBe(false);
    expect(mayResend('PATCH', true, null)).toBe(false);
    expect(mayResend('PUT', false, null)).toBe(false);
    expect(mayResend('GET', true, 'websocket')).toBe(false);
  });

  it('afterClose: a connection never made sends any request to the next target', () => {
    for (const resendable of [true, false]) expect(afterClose({ connected: false, reused: false, resendable, answerStarted: false })).toBe('next-target');
  });

  it('afterClose: a kept connection closed under a resendable request sends it again to the same process, anew', () => {
    expect(afterClose({ connected: true, reused: true, resendable: true, answerStarted: false })).toBe('same-target-anew');
  });

  it('afterClose: fails a request that may have reached its process', () => {
    expect(afterClose({ connected: true, reused: false, resendable: true, answerStarted: false })).toBe('fail');
    expect(afterClose({ connected: true, reused: true, resendable: false, answerStarted: false })).toBe('fail');
    expect(afterClose({ connected: true, reused: true, resendable: true, answerStarted: true })).toBe('fail');
  });

  it('keepsConnection: only after a resendable request, and not when the process closes or the body runs until close', () => {
    expect(keepsConnection(true, false, 'length')).toBe(true);
    expect(keepsConnection(false, false, 'length')).toBe(false);
    expect(keepsConnection(true, true, 'chunked')).toBe(false);
    expect(keepsConnection(true, false, 'until-close')).toBe(false);
  });
});
