import { statSync, writeFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { utils } from 'ssh2';
import { fingerprintOf, loadOrCreateHostKey } from '@svc/builder-git';

describe('loadOrCreateHostKey', () => {
  let dir: string;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'svc-host-key-'));
  });

  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('generates an ed25519 key readable only by its owner, once', () => {
    const path = join(dir, 'ssh_host_ed25519_key');

    const first = loadOrCreateHostKey(path);
    const second = loadOrCreateHostKey(path);

    const parsed = utils.parseKey(first.privateKey);
    expect(parsed).not.toBeInstanceOf(Error);
    expect((parsed as { type: string }).type).toBe('ssh-ed25519');
    expect(statSync(path).mode & 0o777).toBe(0o600);
    expect(second).toEqual(first);
    expect(first.fingerprint).toMatch(/^SHA256:[A-Za-z0-9+/]{43}$/);
  });

  it('always writes a key it can read again, though a few generated keys in a thousand are unreadable', () => {
    // ssh2's generator now and then makes a key its parser refuses; 1000 fresh keys met one
    // almost every time before loadOrCreateHostKey threw those away.
    for (let i = 0; i < 1000; i++) {
      const path = join(dir, `key-${i}`);
      const created = loadOrCreateHostKey(path);
      expect(loadOrCreateHostKey(path)).toEqual(created);
    }
  });

  it('refuses a file that holds no private key, naming it', () => {
    const path = join(dir, 'ssh_host_ed25519_key');
    writeFileSync(path, 'not a key\n');

    expect(() => loadOrCreateHostKey(path)).toThrow(`${path} is not an SSH private key`);
  });
});

describe('fingerprintOf', () => {
  it('is the fingerprint ssh-keygen prints for the key', () => {
    // `ssh-keygen -lf` of `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGDHVmqRq0AHPnuAJlOfeyTfU3G0GAOKK8PmDPpj5/bJ`.
    const blob = Buffer.from('AAAAC3NzaC1lZDI1NTE5AAAAIGDHVmqRq0AHPnuAJlOfeyTfU3G0GAOKK8PmDPpj5/bJ', 'base64');

    expect(fingerprintOf(blob)).toBe('SHA256:Ft5Y3VearBiWdBebcsh7mTfow8aTj6HfBP3TjyF5LEk');
  });
});
