import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../src';

describe('ACME configuration', () => {
  it('is off without ACME_DIRECTORY_URL', () => {
    expect(loadConfig({}).acme).toBeNull();
  });

  it('takes Let\'s Encrypt by name and the defaults: renew 30 days ahead, retry after 5 minutes up to a day, 4 orders at once, 10 pending names per user', () => {
    expect(loadConfig({ ACME_DIRECTORY_URL: 'letsencrypt-staging' }).acme).toEqual({
      directory: 'https://acme-staging-v02.api.letsencrypt.org/directory',
      email: null,
      ca: null,
      intervalMs: 60_000,
      settings: { renewBeforeSeconds: 30 * 86_400, retryBaseSeconds: 300, retryMaxSeconds: 86_400, leaseSeconds: 300, concurrency: 4, pendingPerOwner: 10 },
    });
    expect(loadConfig({ ACME_DIRECTORY_URL: 'letsencrypt' }).acme?.directory).toBe('https://acme-v02.api.letsencrypt.org/directory');
  });

  it('reads every ACME_* setting, and the CA file\'s certificates', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-acme-config-'));
    try {
      writeFileSync(join(dir, 'ca.pem'), '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n');
      const acme = loadConfig({
        ACME_DIRECTORY_URL: 'https://127.0.0.1:14000/dir',
        ACME_EMAIL: 'ops@example.com',
        ACME_CA_FILE: join(dir, 'ca.pem'),
        ACME_RENEW_DAYS: '10',
        ACME_RETRY_BASE_SECONDS: '60',
        ACME_RETRY_MAX_SECONDS: '600',
        ACME_INTERVAL_SECONDS: '5',
        ACME_LEASE_SECONDS: '240',
        ACME_CONCURRENCY: '2',
        ACME_PENDING_PER_USER: '3',
      }).acme;
      expect(acme).toMatchObject({ directory: 'https://127.0.0.1:14000/dir', email: 'ops@example.com', intervalMs: 5000 });
      expect(acme?.ca).toContain('BEGIN CERTIFICATE');
      expect(acme?.settings).toEqual({ renewBeforeSeconds: 10 * 86_400, retryBaseSeconds: 60, retryMaxSeconds: 600, leaseSeconds: 240, concurrency: 2, pendingPerOwner: 3 });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it.each([
    ['ACME_DIRECTORY_URL', 'http://acme.example/dir', /ACME_DIRECTORY_URL: must be an https:\/\/ URL/],
    ['ACME_DIRECTORY_URL', 'not a url', /ACME_DIRECTORY_URL: must be an https:\/\/ URL of an ACME directory/],
    ['ACME_EMAIL', 'nobody', /ACME_EMAIL: must be an e-mail address/],
    ['ACME_CA_FILE', '/nonexistent/ca.pem', /ACME_CA_FILE: cannot be read/],
    ['ACME_RENEW_DAYS', '0', /ACME_RENEW_DAYS: must be an integer from 1 to 3650/],
    ['ACME_CONCURRENCY', '0', /ACME_CONCURRENCY: must be an integer from 1 to 64/],
    ['ACME_PENDING_PER_USER', 'many', /ACME_PENDING_PER_USER: must be an integer from 1 to 1000/],
  ])('refuses %s=%s with a message naming it', (name, value, message) => {
    expect(() => loadConfig({ ACME_DIRECTORY_URL: 'letsencrypt-staging', [name]: value })).toThrow(message);
  });
});
