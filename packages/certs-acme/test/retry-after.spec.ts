import { dnsAnswer } from './support/dns';
import { reasonOf, retryAfterOf, validityOf } from '../src';

describe('retryAfterOf', () => {
  const now = new Date('2026-01-01T00:00:00Z');

  it('reads seconds and HTTP dates, and ignores what is absent, unreadable or past', () => {
    expect(retryAfterOf('120', now)?.toISOString()).toBe('2026-01-01T00:02:00.000Z');
    expect(retryAfterOf(['3600'], now)?.toISOString()).toBe('2026-01-01T01:00:00.000Z');
    expect(retryAfterOf('Thu, 01 Jan 2026 05:00:00 GMT', now)?.toISOString()).toBe('2026-01-01T05:00:00.000Z');
    expect(retryAfterOf(undefined, now)).toBeNull();
    expect(retryAfterOf('soon', now)).toBeNull();
    expect(retryAfterOf('0', now)).toBeNull();
    expect(retryAfterOf('Wed, 31 Dec 2025 00:00:00 GMT', now)).toBeNull();
  });
});

describe('reasonOf', () => {
  it('keeps the server\'s problem detail on one bounded line, and names an unreachable server', () => {
    expect(reasonOf(new Error('DNS problem:\n NXDOMAIN'), 'https://acme.test/dir')).toBe('DNS problem: NXDOMAIN');
    expect(reasonOf(new Error('x'.repeat(900)), 'd')).toHaveLength(500);
    expect(reasonOf(new Error('connect ECONNREFUSED 127.0.0.1:1'), 'https://acme.test/dir')).toMatch(/^the ACME server at https:\/\/acme.test\/dir could not be reached/);
    expect(reasonOf(new TypeError("Cannot read properties of undefined (reading 'config')"), 'https://acme.test/dir')).toBe('the ACME server at https://acme.test/dir could not be reached');
  });
});

describe('validityOf', () => {
  it('refuses a chain without a certificate', () => {
    expect(() => validityOf('nothing')).toThrow('no certificate');
  });
});

describe('the test DNS responder', () => {
  const query = (name: string, type = 1): Buffer => {
    const labels = name.split('.').map((label) => Buffer.concat([Buffer.from([label.length]), Buffer.from(label)]));
    return Buffer.concat([Buffer.from([0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0]), ...labels, Buffer.from([0, 0, type, 0, 1])]);
  };

  it('answers a known name with its address and an unknown one with NXDOMAIN', () => {
    const names = new Map([['ok.test', '127.0.0.1']]);
    const known = dnsAnswer(query('OK.test'), names);
    expect(known.readUInt16BE(0)).toBe(0x1234);
    expect((known[3] as number) & 0x0f).toBe(0);
    expect(known.readUInt16BE(6)).toBe(1);
    expect([...known.subarray(known.length - 4)]).toEqual([127, 0, 0, 1]);
    const unknown = dnsAnswer(query('nowhere.test'), names);
    expect((unknown[3] as number) & 0x0f).toBe(3);
    expect(unknown.readUInt16BE(6)).toBe(0);
    expect(dnsAnswer(query('ok.test', 28), names).readUInt16BE(6)).toBe(0);
  });
});
