import { installationId } from '../src';

describe('installationId', () => {
  const a = 'k3y-of-installation-a-0123456789abcdef';
  const b = 'k3y-of-installation-b-0123456789abcdef';

  it('is the first 16 hex characters of HMAC-SHA256(SECRET_KEY, "svc docker installation") (vectors from openssl dgst -hmac)', () => {
    expect(installationId(a)).toBe('88b5223350a84195');
    expect(installationId(b)).toBe('6b5fc223ef0e9baf');
  });

  it('is the same for every process of one installation, and differs between installations', () => {
    expect(installationId(a)).toBe(installationId(`${a}`));
    expect(installationId(a)).not.toBe(installationId(b));
  });

  it('does not show the key', () => {
    expect(installationId(a)).toMatch(/^[0-9a-f]{16}$/);
    expect(a).not.toContain(installationId(a));
  });

  it('refuses an empty key', () => {
    expect(() => installationId('')).toThrow('must not be empty');
  });
});
