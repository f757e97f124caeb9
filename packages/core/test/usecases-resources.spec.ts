import { AlreadyExists, AppNotVisible, Forbidden, NotFound, RequestRejected, ValidationFailed } from '@svc/core';
import type { Actor } from '@svc/core';
import {
  FAKE_CERT_EXPIRES,
  FAKE_CERT_ISSUER,
  FAKE_CERT_STARTS,
  fakeCertificateFingerprint,
  fakeCertificatePem,
  fakeFingerprint,
  fakePrivateKeyPem,
  fakePublicKey,
} from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const PAGE = { page: 1, pageSize: 100 };

async function aliceWithApp(settings = {}): Promise<{ world: World; alice: Actor }> {
  const world = new World(settings);
  const alice = await world.actor('alice');
  await world.app(alice);
  return { world, alice };
}

describe('AddDomain, ListDomains and RemoveDomain', () => {
  it('stores the domain in lower case without the trailing dot, owned by the caller, and logs it', async () => {
    const { world, alice } = await aliceWithApp();

    const domain = await world.useCases.addDomain.execute(alice, 'myapp', { domain: 'WWW.Example.COM.' });

    expect(domain).toMatchObject({ app: 'myapp', domain: 'www.example.com', owner: 'alice', created: world.clock.now() });
    expect(world.uow.snapshot().domains.map((d) => d.domain)).toEqual(['www.example.com']);
    expect(world.logs.messages('myapp').at(-1)).toBe('alice added domain www.example.com');
  });

  it('lets a collaborator add a domain', async () => {
    const { world, alice } = await aliceWithApp();
    const carol = await world.actor('carol');
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'carol' });

    await expect(world.useCases.addDomain.execute(carol, 'myapp', { domain: 'shop.example.com' })).resolves.toMatchObject({ owner: 'carol' });
  });

  it('lists the app\'s domains sorted', async () => {
    const { world, alice } = await aliceWithApp();
    for (const domain of ['www.example.com', 'api.example.com', 'b.example.org']) {
      await world.useCases.addDomain.execute(alice, 'myapp', { domain });
    }

    const page = await world.useCases.listDomains.execute(alice, 'myapp', PAGE);

    expect(page.items.map((d) => d.domain)).toEqual(['api.example.com', 'b.example.org', 'www.example.com']);
  });

  it('refuses a domain already used by this or another app, in any case, with AlreadyExists on domain', async () => {
    const { world, alice } = await aliceWithApp();
    const bob = await world.actor('bob');
    await world.app(bob, 'bobs');
    await world.useCases.addDomain.execute(alice, 'myapp', { domain: 'www.example.com' });

    const again = await rejectionOf(world.useCases.addDomain.execute(alice, 'myapp', { domain: 'www.example.com' }));
    const elsewhere = await rejectionOf(world.useCases.addDomain.execute(bob, 'bobs', { domain: 'WWW.EXAMPLE.COM.' }));

    for (const error of [again, elsewhere]) {
      expect(error).toBeInstanceOf(AlreadyExists);
      expect(error.fields).toEqual({ domain: ['This field must be unique.'] });
    }
    expect(world.uow.snapshot().domains).toHaveLength(1);
  });

  it('refuses invalid names and names under the platform domain', async () => {
    const { world, alice } = await aliceWithApp({ platformDomain: 'apps.example.net' });

    const invalid = await rejectionOf(world.useCases.addDomain.execute(alice, 'myapp', { domain: '*.example.com' }));
    const platform = await rejectionOf(world.useCases.addDomain.execute(alice, 'myapp', { domain: 'other.apps.example.net' }));
    const missing = await rejectionOf(world.useCases.addDomain.execute(alice, 'myapp', {}));

    expect(invalid.fields).toEqual({ domain: ['Wildcard domains are not supported.'] });
    expect(platform.fields).toEqual({ domain: ['Domains under apps.example.net are reserved for the platform.'] });
    expect(missing.fields).toEqual({ domain: ['This field is required.'] });
    expect(world.uow.snapshot().domains).toEqual([]);
  });

  it('removes a domain named in any case, with or without the trailing dot, and logs it', async () => {
    const { world, alice } = await aliceWithApp();
    await world.useCases.addDomain.execute(alice, 'myapp', { domain: 'www.example.com' });

    await world.useCases.removeDomain.execute(alice, 'myapp', 'WWW.example.com.');

    expect(world.uow.snapshot().domains).toEqual([]);
    expect(world.logs.messages('myapp').at(-1)).toBe('alice removed domain www.example.com');
  });

  it('answers NotFound for an unknown domain and for a domain of another app, which stays', async () => {
    const { world, alice } = await aliceWithApp();
    const bob = await world.actor('bob');
    await world.app(bob, 'bobs');
    await world.useCases.addDomain.execute(bob, 'bobs', { domain: 'bob.example.com' });

    expect(await rejectionOf(world.useCases.removeDomain.execute(alice, 'myapp', 'nope.example.com'))).toBeInstanceOf(NotFound);
    expect(await rejectionOf(world.useCases.removeDomain.execute(alice, 'myapp', 'bob.example.com'))).toBeInstanceOf(NotFound);
    expect(world.uow.snapshot().domains.map((d) => d.domain)).toEqual(['bob.example.com']);
  });
});

describe('AddKey, ListKeys and RemoveKey', () => {
  const laptop = fakePublicKey('laptop', 'alice@laptop');

  it('stores the key with its fingerprint and normalised text, owned by the caller', async () => {
    const world = new World();
    const alice = await world.actor('alice');

    const key = await world.useCases.addKey.execute(alice, { id: 'laptop', public: `  ${laptop}\t` });

    const material = laptop.split(' ')[1] as string;
    expect(key).toMatchObject({ id: 'laptop', owner: 'alice', public: laptop, fingerprint: fakeFingerprint(material) });
    expect(key.fingerprint).toMatch(/^SHA256:/);
    expect(world.uow.snapshot().keys).toEqual([key]);
  });

  it('refuses a second key with the same id for the same user, with AlreadyExists on id', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.useCases.addKey.execute(alice, { id: 'laptop', public: laptop });

    const error = await rejectionOf(world.useCases.addKey.execute(alice, { id: 'laptop', public: fakePublicKey('desktop') }));

    expect(error).toBeInstanceOf(AlreadyExists);
    expect(error.fields).toEqual({ id: ['This field must be unique.'] });
  });

  it('lets two users use the same key id', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.useCases.addKey.execute(alice, { id: 'laptop', public: laptop });

    await world.useCases.addKey.execute(bob, { id: 'laptop', public: fakePublicKey('bobs-laptop') });

    expect(world.uow.snapshot().keys.map((k) => `${k.owner}/${k.id}`)).toEqual(['alice/laptop', 'bob/laptop']);
  });

  it('refuses the same key material anywhere in the platform, whatever its id or comment, with AlreadyExists on public', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.useCases.addKey.execute(alice, { id: 'laptop', public: laptop });
    const sameMaterial = fakePublicKey('laptop', 'someone@else');

    const mine = await rejectionOf(world.useCases.addKey.execute(alice, { id: 'other', public: sameMaterial }));
    const theirs = await rejectionOf(world.useCases.addKey.execute(bob, { id: 'laptop', public: laptop }));

    for (const error of [mine, theirs]) {
      expect(error).toBeInstanceOf(AlreadyExists);
      expect(error.fields).toEqual({ public: ['This field must be unique.'] });
    }
    expect(world.uow.snapshot().keys).toHaveLength(1);
  });

  it('refuses a key the parser rejects, on field public', async () => {
    const world = new World();
    const alice = await world.actor('alice');

    const error = await rejectionOf(world.useCases.addKey.execute(alice, { id: 'old', public: 'ssh-dss AAAAB3NzaC1kc3M=' }));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(error.fields).toEqual({ public: ['Key type ssh-dss is not supported.'] });
    expect(world.uow.snapshot().keys).toEqual([]);
  });

  it('reports a missing id and a missing key at once, and an id longer than 128 characters', async () => {
    const world = new World();
    const alice = await world.actor('alice');

    const missing = await rejectionOf(world.useCases.addKey.execute(alice, {}));
    const long = await rejectionOf(world.useCases.addKey.execute(alice, { id: 'k'.repeat(129), public: laptop }));

    expect(missing.fields).toEqual({ id: ['This field is required.'], public: ['This field is required.'] });
    expect(long.fields).toEqual({ id: ['Ensure this field has no more than 128 characters.'] });
  });

  it('keeps keys private: each user lists and removes only their own', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.useCases.addKey.execute(alice, { id: 'laptop', public: laptop });
    await world.useCases.addKey.execute(bob, { id: 'desktop', public: fakePublicKey('desktop') });

    expect((await world.useCases.listKeys.execute(alice, PAGE)).items.map((k) => k.id)).toEqual(['laptop']);
    expect(await rejectionOf(world.useCases.removeKey.execute(bob, 'laptop'))).toBeInstanceOf(NotFound);
    await world.useCases.removeKey.execute(alice, 'laptop');

    expect(world.uow.snapshot().keys.map((k) => `${k.owner}/${k.id}`)).toEqual(['bob/desktop']);
  });
});

describe('GrantPermission, ListPermissions and RevokePermission', () => {
  async function withUsers(): Promise<{ world: World; alice: Actor; bob: Actor; carol: Actor }> {
    const { world, alice } = await aliceWithApp();
    const bob = await world.actor('bob');
    const carol = await world.actor('carol');
    return { world, alice, bob, carol };
  }

  it('grants access to a user, who can then see the app; the list is sorted', async () => {
    const { world, alice, bob } = await withUsers();

    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'carol' });
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'bob' });

    expect(await world.useCases.listPermissions.execute(alice, 'myapp')).toEqual(['bob', 'carol']);
    await expect(world.useCases.getApp.execute(bob, 'myapp')).resolves.toMatchObject({ id: 'myapp' });
  });

  it('is idempotent: a second grant keeps one permission and logs once', async () => {
    const { world, alice } = await withUsers();

    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'bob' });
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'bob' });

    expect(world.uow.snapshot().permissions).toEqual([{ app: 'myapp', username: 'bob' }]);
    expect(world.logs.messages('myapp').filter((m) => m.includes('collaborators'))).toEqual(['alice added bob to myapp collaborators']);
  });

  it('answers NotFound for an unknown user, and requires a username', async () => {
    const { world, alice } = await withUsers();

    expect(await rejectionOf(world.useCases.grantPermission.execute(alice, 'myapp', { username: 'nobody' }))).toBeInstanceOf(NotFound);
    expect((await rejectionOf(world.useCases.grantPermission.execute(alice, 'myapp', {}))).fields).toEqual({
      username: ['This field is required.'],
    });
    expect(world.uow.snapshot().permissions).toEqual([]);
  });

  it('refuses to grant the owner a permission they already have', async () => {
    const { world, alice } = await withUsers();

    expect(await rejectionOf(world.useCases.grantPermission.execute(alice, 'myapp', { username: 'alice' }))).toBeInstanceOf(RequestRejected);
  });

  it('a collaborator may not grant access to others', async () => {
    const { world, alice, bob } = await withUsers();
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'bob' });

    expect(await rejectionOf(world.useCases.grantPermission.execute(bob, 'myapp', { username: 'carol' }))).toBeInstanceOf(Forbidden);
    expect(await world.useCases.listPermissions.execute(alice, 'myapp')).toEqual(['bob']);
  });

  it('a collaborator may remove themselves, and then loses access', async () => {
    const { world, alice, bob } = await withUsers();
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'bob' });

    await world.useCases.revokePermission.execute(bob, 'myapp', 'bob');

    expect(await world.useCases.listPermissions.execute(alice, 'myapp')).toEqual([]);
    expect(await rejectionOf(world.useCases.getApp.execute(bob, 'myapp'))).toBeInstanceOf(AppNotVisible);
  });

  it('a collaborator may not remove another collaborator', async () => {
    const { world, alice, bob } = await withUsers();
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'bob' });
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'carol' });

    expect(await rejectionOf(world.useCases.revokePermission.execute(bob, 'myapp', 'carol'))).toBeInstanceOf(Forbidden);
    expect(await world.useCases.listPermissions.execute(alice, 'myapp')).toEqual(['bob', 'carol']);
  });

  it('the owner and an administrator revoke collaborators; revoking a non-collaborator is NotFound', async () => {
    const { world, alice } = await withUsers();
    const root = await world.actor('root', { admin: true });
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'bob' });
    await world.useCases.grantPermission.execute(root, 'myapp', { username: 'carol' });

    await world.useCases.revokePermission.execute(alice, 'myapp', 'bob');
    await world.useCases.revokePermission.execute(root, 'myapp', 'carol');

    expect(await world.useCases.listPermissions.execute(alice, 'myapp')).toEqual([]);
    expect(await rejectionOf(world.useCases.revokePermission.execute(alice, 'myapp', 'bob'))).toBeInstanceOf(NotFound);
  });
});

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
