import { AlreadyExists, AppNotVisible, Forbidden, NotFound, RequestRejected, ValidationFailed } from '@svc/core';
import type { Actor } from '@svc/core';
import { fakeFingerprint, fakePublicKey } from '@svc/core/testing';
import { PAGE, aliceWithApp } from './support/fixtures';
import { World, rejectionOf } from './support/world';

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
