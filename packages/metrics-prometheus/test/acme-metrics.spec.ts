import type { TlsName } from '@svc/core';
import { ControllerMetrics, createAcmeMetrics } from '@svc/metrics-prometheus';
import { parseExposition, sampleValue as value } from './support/exposition';

const now = Date.now();
const row = (name: string, state: TlsName['state'], expiresInDays: number | null): TlsName => ({
  name,
  app: 'shop',
  state,
  certificate: expiresInDays === null ? null : 'PEM',
  sealedKey: null,
  expires: expiresInDays === null ? null : new Date(now + expiresInDays * 86_400_000),
  reason: null,
  failures: 0,
  nextAttempt: new Date(now),
  updated: new Date(now),
});

describe('createAcmeMetrics', () => {
  it('counts attempts by outcome and reads the names by state and the soonest expiry at each scrape', async () => {
    const metrics = new ControllerMetrics({ processMetrics: false });
    const names = [row('a.example', 'issued', 80), row('b.example', 'issued', 10), row('c.example', 'failed', null), row('d.example', 'pending', null)];
    const observer = createAcmeMetrics(metrics.registry, { names: async () => names });
    observer.attempted('issued');
    observer.attempted('issued');
    observer.attempted('failed');

    const families = parseExposition(await metrics.render());

    expect(value(families, 'svc_acme_issuance_attempts_total', { outcome: 'issued' })).toBe(2);
    expect(value(families, 'svc_acme_issuance_attempts_total', { outcome: 'failed' })).toBe(1);
    expect(value(families, 'svc_tls_names', { state: 'issued' })).toBe(2);
    expect(value(families, 'svc_tls_names', { state: 'failed' })).toBe(1);
    expect(value(families, 'svc_tls_names', { state: 'pending' })).toBe(1);
    expect(value(families, 'svc_tls_certificate_expiry_seconds', {})).toBeGreaterThan(9.9 * 86_400);
    expect(value(families, 'svc_tls_certificate_expiry_seconds', {})).toBeLessThan(10.1 * 86_400);
  });
});
