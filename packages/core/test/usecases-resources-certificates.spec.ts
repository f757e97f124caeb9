import { AlreadyExists, Forbidden, NotFound } from '@svc/core';
import type { Actor } from '@svc/core';
import {
  FAKE_CERT_EXPIRES,
  FAKE_CERT_ISSUER,
  FAKE_CERT_STARTS,
  fakeCertificateFingerprint,
  fakeCertificatePem,
  fakePrivateKeyPem,
} from '@svc/core/testing';
import { PAGE } from './support/fixtures';
import { World, rejectionOf } from './support/world';

describe('certificates', () => {
  const pem = (cn: string | null, san?: string[]) => fakeCertificatePem({ cn, ...(san ? { san } : {}) });
  const ALICE_DOMAINS = ['www.example.com', 'example.com', 'a.example.com', 'alias.example.com', 'shop.example.com'];

  /** A user with an app (`<username>-app`) that has the given custom domains. */
  async function tenant(world: World, username: string, domains: string[]): Promise<Actor> {
    const actor = await world.actor(username);
    await world.app(actor, `${username}-app`);
    for (const domain of domains) await world.useCases.addDomain.execute(actor, `${username}-app`, { domain });
    return actor;
  }

  it('stores a certificate under its subject CN with the parsed details', async () => {
    const world = new World();
    const alice = await tenant(world, 'alice', ALICE_DOMAINS);
    const certificate = pem('www.example.com', ['www.example.com', 'example.com']);

    const stored = await world.useCases.addCertificate.execute(alice, { certificate, key: fakePrivateKeyPem('www.example.com') }, '1.7');

    expect(stored).toMatchObject({
      id: 1,
      commonName: 'www.example.com',
      owner: 'alice',
      certificate,
      san: ['www.example.com', 'example.com'],
      fingerprint: fakeCertificateFingerprint(certificate),
      issuer: FAKE_CERT_ISSUER,
      starts: new Date(FAKE_CERT_STARTS),
      expires: new Date(FAKE_CERT_EXPIRES),
      created: world.clock.now(),
    });
  });

  it('stores the private key sealed with the server secret, never in plain text', async () => {
    const world = new World();
    const alice = await tenant(world, 'alice', ALICE_DOMAINS);
    const key = fakePrivateKeyPem('www.example.com');

    const stored = await world.useCases.addCertificate.execute(alice, { certificate: pem('www.example.com'), key }, '1.7');

    expect(stored.sealedKey).not.toBe(key);
    expect(world.secrets.open(stored.sealedKey)).toBe(key);
    expect(JSON.stringify(world.uow.snapshot())).not.toContain('KEY-FOR:');
  });

  it('uses the first DNS name when the certificate has no common name', async () => {
    const world = new World();
    const alice = await tenant(world, 'alice', ALICE_DOMAINS);

    const stored = await world.useCases.addCertificate.execute(
      alice,
      { certificate: pem(null, ['shop.example.com', 'example.com']), key: fakePrivateKeyPem('shop.example.com') },
      '1.7',
    );

    expect(stored.commonName).toBe('shop.example.com');
  });

  it('from 1.3 lets common_name override the subject, in lower case', async () => {
    const world = new World();
    const alice = await tenant(world, 'alice', ALICE_DOMAINS);

    const stored = await world.useCases.addCertificate.execute(
      alice,
      { certificate: pem('www.example.com'), key: fakePrivateKeyPem('www.example.com'), common_name: 'Alias.Example.com' },
      '1.3',
    );

    expect(stored.commonName).toBe('alias.example.com');
  });

  it.each([['1.2'], ['1.0']] as const)('at %s ignores common_name and uses the subject', async (version) => {
    const world = new World();
    const alice = await tenant(world, 'alice', ALICE_DOMAINS);

    const stored = await world.useCases.addCertificate.execute(
      alice,
      { certificate: pem('www.example.com'), key: fakePrivateKeyPem('www.example.com'), common_name: 'alias.example.com' },
      version,
    );

    expect(stored.commonName).toBe('www.example.com');
  });

  it('refuses an invalid common_name override', async () => {
    const world = new World();
    const alice = await tenant(world, 'alice', ALICE_DOMAINS);

    const error = await rejectionOf(
      world.useCases.addCertificate.execute(
        alice,
        { certificate: pem('www.example.com'), key: fakePrivateKeyPem('www.example.com'), common_name: 'not a host' },
        '1.7',
      ),
    );

    expect(error.fields).toEqual({ common_name: ['Enter a valid hostname.'] });
  });

  it('refuses a certificate that names no host', async () => {
    const world = new World();
    const alice = await tenant(world, 'alice', ALICE_DOMAINS);

    const error = await rejectionOf(world.useCases.addCertificate.execute(alice, { certificate: pem(null, []), key: fakePrivateKeyPem('') }, '1.7'));

    expect(Object.keys(error.fields ?? {})).toEqual(['certificate']);
    expect(world.uow.snapshot().certificates).toEqual([]);
  });

  it('refuses a key that does not match, an unreadable certificate, and missing fields', async () => {
    const world = new World();
    const alice = await tenant(world, 'alice', ALICE_DOMAINS);

    const mismatch = await rejectionOf(
      world.useCases.addCertificate.execute(alice, { certificate: pem('www.example.com'), key: fakePrivateKeyPem('other.example.com') }, '1.7'),
    );
    const unreadable = await rejectionOf(
      world.useCases.addCertificate.execute(alice, { certificate: 'garbage', key: fakePrivateKeyPem('www.example.com') }, '1.7'),
    );
    const missing = await rejectionOf(world.useCases.addCertificate.execute(alice, {}, '1.7'));

    expect(Object.keys(mismatch.fields ?? {})).toEqual(['key']);
    expect(Object.keys(unreadable.fields ?? {})).toEqual(['certificate']);
    expect(missing.fields).toEqual({ certificate: ['This field is required.'], key: ['This field is required.'] });
    expect(world.uow.snapshot().certificates).toEqual([]);
  });

  it('refuses a second certificate for the same common name with AlreadyExists on common_name', async () => {
    const world = new World();
    const alice = await tenant(world, 'alice', ALICE_DOMAINS);
    const bob = await tenant(world, 'bob', ['b.example.net']);
    const body = { certificate: pem('www.example.com'), key: fakePrivateKeyPem('www.example.com') };
    await world.useCases.addCertificate.execute(alice, body, '1.7');
    // A collaborator manages the app's domains too.
    await world.useCases.grantPermission.execute(alice, 'alice-app', { username: 'bob' });

    const error = await rejectionOf(world.useCases.addCertificate.execute(bob, body, '1.7'));

    expect(error).toBeInstanceOf(AlreadyExists);
    expect(error.fields).toEqual({ common_name: ['This field must be unique.'] });
  });

  describe('visibility', () => {
    async function twoOwners(): Promise<{ world: World; alice: Actor; bob: Actor; root: Actor }> {
      const world = new World();
      const root = await world.actor('root', { admin: true });
      const alice = await tenant(world, 'alice', ALICE_DOMAINS);
      const bob = await tenant(world, 'bob', ['b.example.net']);
      await world.useCases.addCertificate.execute(alice, { certificate: pem('a.example.com'), key: fakePrivateKeyPem('a.example.com') }, '1.7');
      await world.useCases.addCertificate.execute(bob, { certificate: pem('b.example.net'), key: fakePrivateKeyPem('b.example.net') }, '1.7');
      return { world, alice, bob, root };
    }

    it('a user lists only their own certificates; an administrator lists all', async () => {
      const { world, alice, root } = await twoOwners();

      expect((await world.useCases.listCertificates.execute(alice, PAGE)).items.map((c) => c.commonName)).toEqual(['a.example.com']);
      expect((await world.useCases.listCertificates.execute(root, PAGE)).items.map((c) => c.commonName)).toEqual([
        'a.example.com',
        'b.example.net',
      ]);
    });

    it('the owner gets a certificate by name in any case; another user gets NotFound', async () => {
      const { world, alice, bob } = await twoOwners();

      await expect(world.useCases.getCertificate.execute(alice, 'A.Example.com')).resolves.toMatchObject({ owner: 'alice' });
      expect(await rejectionOf(world.useCases.getCertificate.execute(bob, 'a.example.com'))).toBeInstanceOf(NotFound);
    });

    it('another user cannot remove a certificate; the owner and an administrator can', async () => {
      const { world, alice, bob, root } = await twoOwners();

      expect(await rejectionOf(world.useCases.removeCertificate.execute(bob, 'a.example.com'))).toBeInstanceOf(NotFound);
      await world.useCases.removeCertificate.execute(alice, 'a.example.com');
      await world.useCases.removeCertificate.execute(root, 'b.example.net');

      expect(world.uow.snapshot().certificates).toEqual([]);
    });

    it('an unknown certificate is NotFound, also for an administrator', async () => {
      const { world, root } = await twoOwners();

      expect(await rejectionOf(world.useCases.getCertificate.execute(root, 'nope.example.com'))).toBeInstanceOf(NotFound);
      expect(await rejectionOf(world.useCases.removeCertificate.execute(root, 'nope.example.com'))).toBeInstanceOf(NotFound);
    });
  });

  describe('ownership of the names', () => {
    const upload = (world: World, actor: Actor, cn: string | null, san?: string[], extra: Record<string, unknown> = {}, version: '1.7' | '1.2' = '1.7') =>
      world.useCases.addCertificate.execute(actor, { certificate: pem(cn, san), key: fakePrivateKeyPem(cn ?? san?.[0] ?? 'x'), ...extra }, version);

    it("refuses a certificate for another tenant's domain with Forbidden, and stores nothing", async () => {
      const world = new World();
      await tenant(world, 'alice', ['shop.alice.example']);
      const mallory = await tenant(world, 'mallory', ['mallory.example']);

      const error = await rejectionOf(upload(world, mallory, 'shop.alice.example'));

      expect(error).toBeInstanceOf(Forbidden);
      expect(error.code).toBe('CERT.NAME_NOT_CONTROLLED');
      expect(error.message).toBe('The certificate names shop.alice.example, which is not a domain of an app you manage.');
      expect(world.uow.snapshot().certificates).toEqual([]);
    });

    it('refuses a certificate whose alternative names include one name that is not the caller\'s', async () => {
      const world = new World();
      await tenant(world, 'alice', ['shop.alice.example']);
      const mallory = await tenant(world, 'mallory', ['mallory.example']);

      expect(await rejectionOf(upload(world, mallory, 'mallory.example', ['mallory.example', 'shop.alice.example']))).toBeInstanceOf(Forbidden);
    });

    it('refuses a name attached to no app the same way, and a common_name override that is not the caller\'s', async () => {
      const world = new World();
      const alice = await tenant(world, 'alice', ['shop.alice.example']);

      expect((await rejectionOf(upload(world, alice, 'nobody.example'))).code).toBe('CERT.NAME_NOT_CONTROLLED');
      expect(await rejectionOf(upload(world, alice, 'shop.alice.example', undefined, { common_name: 'bank.example' }))).toBeInstanceOf(Forbidden);
    });

    it("accepts the platform host of the caller's app and names and wildcards under it, not another app's", async () => {
      const world = new World();
      const alice = await tenant(world, 'alice', []);
      await tenant(world, 'bob', []);

      await expect(upload(world, alice, 'alice-app.localhost', ['alice-app.localhost', '*.alice-app.localhost', 'www.alice-app.localhost'])).resolves.toMatchObject({ owner: 'alice' });
      expect(await rejectionOf(upload(world, alice, 'bob-app.localhost'))).toBeInstanceOf(Forbidden);
      expect(await rejectionOf(upload(world, alice, '*.localhost'))).toBeInstanceOf(Forbidden);
    });

    it('refuses a wildcard over a custom domain, even to its owner', async () => {
      const world = new World();
      const alice = await tenant(world, 'alice', ['www.alice.example']);

      expect(await rejectionOf(upload(world, alice, '*.alice.example'))).toBeInstanceOf(Forbidden);
    });

    it("lets an administrator upload the platform wildcard, and certificates for any app's domains", async () => {
      const world = new World({ platformDomain: 'apps.example.net' });
      const root = await world.actor('root', { admin: true });
      await tenant(world, 'alice', ['shop.alice.example']);

      await expect(upload(world, root, '*.apps.example.net', ['*.apps.example.net', 'apps.example.net'])).resolves.toMatchObject({ commonName: '*.apps.example.net' });
      await expect(upload(world, root, 'shop.alice.example')).resolves.toMatchObject({ owner: 'root' });
      expect(await rejectionOf(upload(world, root, 'unattached.example'))).toBeInstanceOf(Forbidden);
    });
  });

  describe('serving', () => {
    it('serves a certificate while its name is the owner\'s, and no longer once the domain moved to another tenant', async () => {
      const world = new World();
      const alice = await tenant(world, 'alice', ['shop.example.org']);
      const bob = await tenant(world, 'bob', []);
      await world.useCases.addCertificate.execute(alice, { certificate: pem('shop.example.org'), key: fakePrivateKeyPem('shop.example.org') }, '1.7');
      expect(await world.useCases.certificateForServerName.execute('Shop.Example.org')).toMatchObject({ owner: 'alice' });

      await world.useCases.removeDomain.execute(alice, 'alice-app', 'shop.example.org');
      expect(await world.useCases.certificateForServerName.execute('shop.example.org')).toBeNull();
      await world.useCases.addDomain.execute(bob, 'bob-app', { domain: 'shop.example.org' });
      expect(await world.useCases.certificateForServerName.execute('shop.example.org')).toBeNull();
    });

    it("replaces a certificate left by a user who no longer has the name when its new owner uploads one", async () => {
      const world = new World();
      const alice = await tenant(world, 'alice', ['shop.example.org']);
      const bob = await tenant(world, 'bob', []);
      await world.useCases.addCertificate.execute(alice, { certificate: pem('shop.example.org'), key: fakePrivateKeyPem('shop.example.org') }, '1.7');
      await world.useCases.removeDomain.execute(alice, 'alice-app', 'shop.example.org');
      await world.useCases.addDomain.execute(bob, 'bob-app', { domain: 'shop.example.org' });

      await world.useCases.addCertificate.execute(bob, { certificate: pem('shop.example.org'), key: fakePrivateKeyPem('shop.example.org') }, '1.7');

      expect(world.uow.snapshot().certificates.map((c) => c.owner)).toEqual(['bob']);
      expect(await world.useCases.certificateForServerName.execute('shop.example.org')).toMatchObject({ owner: 'bob' });
    });

    it('stops serving once the app is transferred to another user, and knows no unknown name', async () => {
      const world = new World();
      const alice = await tenant(world, 'alice', ['shop.example.org']);
      await world.actor('bob');
      await world.useCases.addCertificate.execute(alice, { certificate: pem('shop.example.org'), key: fakePrivateKeyPem('shop.example.org') }, '1.7');

      await world.useCases.updateApp.execute(alice, 'alice-app', { owner: 'bob' });

      expect(await world.useCases.certificateForServerName.execute('shop.example.org')).toBeNull();
      expect(await world.useCases.certificateForServerName.execute('nothing.example.org')).toBeNull();
    });
  });
});
