import { AppNotVisible, NotAuthenticated, NotFound, RequestRejected, Unavailable, ValidationFailed, UNKNOWN_KEY } from '@svc/core';
import type { Actor, PushedSource } from '@svc/core';
import { fakeFingerprint, fakePublicKey } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const SHA1 = '1111111111111111111111111111111111111111';
const SHA2 = '2222222222222222222222222222222222222222';

/** The fingerprint the fake parser gives to `fakePublicKey(seed)`. */
function fingerprintOf(seed: string): string {
  return fakeFingerprint(fakePublicKey(seed).split(' ')[1] as string);
}

function pushed(sha: string, overrides: Partial<PushedSource> = {}): PushedSource {
  return { sha, procfile: 'web: node server.js', dockerfile: null, workdir: `/data/builds/myapp/${sha}`, ...overrides };
}

async function worldWithKey(settings = {}): Promise<{ world: World; alice: Actor; key: string }> {
  const world = new World(settings);
  const alice = await world.actor('alice');
  await world.app(alice);
  await world.useCases.addKey.execute(alice, { id: 'laptop', public: fakePublicKey('alice') });
  return { world, alice, key: fingerprintOf('alice') };
}

describe('AuthenticateKey', () => {
  it('finds the user who registered the key', async () => {
    const { world, key } = await worldWithKey();

    expect((await world.useCases.authenticateKey.execute(key)).username).toBe('alice');
  });

  it('refuses a key nobody registered', async () => {
    const { world } = await worldWithKey();

    const error = await rejectionOf(world.useCases.authenticateKey.execute(fingerprintOf('stranger')));

    expect(error).toBeInstanceOf(NotAuthenticated);
    expect(error.message).toBe(UNKNOWN_KEY);
  });

  it('refuses a key as soon as it is deleted', async () => {
    const { world, alice, key } = await worldWithKey();
    await world.useCases.removeKey.execute(alice, 'laptop');

    expect(await rejectionOf(world.useCases.authenticateKey.execute(key))).toBeInstanceOf(NotAuthenticated);
  });

  it('refuses the key of an inactive user', async () => {
    const { world, alice, key } = await worldWithKey();
    await world.uow.repositories.users.update({ ...alice.user, isActive: false });

    expect(await rejectionOf(world.useCases.authenticateKey.execute(key))).toBeInstanceOf(NotAuthenticated);
  });

  it('refuses the key of a cancelled account', async () => {
    const world = new World();
    await world.actor('root', { admin: true });
    const bob = await world.actor('bob');
    await world.useCases.addKey.execute(bob, { id: 'laptop', public: fakePublicKey('bob') });
    await world.useCases.cancelAccount.execute(bob, undefined, '1.7');

    expect(await rejectionOf(world.useCases.authenticateKey.execute(fingerprintOf('bob')))).toBeInstanceOf(NotAuthenticated);
  });
});

describe('AuthorizeGitAccess', () => {
  it('lets the owner, a collaborator and an administrator in, and names the app', async () => {
    const { world, alice, key } = await worldWithKey();
    const root = await world.actor('root', { admin: true });
    const bob = await world.actor('bob');
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'bob' });
    await world.useCases.addKey.execute(root, { id: 'k', public: fakePublicKey('root') });
    await world.useCases.addKey.execute(bob, { id: 'k', public: fakePublicKey('bob') });

    for (const [fingerprint, username] of [[key, 'alice'], [fingerprintOf('bob'), 'bob'], [fingerprintOf('root'), 'root']]) {
      const access = await world.useCases.authorizeGitAccess.execute(fingerprint as string, 'myapp');
      expect({ user: access.user.username, app: access.app.id }).toEqual({ user: username, app: 'myapp' });
    }
  });

  it('refuses a stranger as it refuses an app that does not exist', async () => {
    const { world } = await worldWithKey();
    const carol = await world.actor('carol');
    await world.useCases.addKey.execute(carol, { id: 'k', public: fakePublicKey('carol') });

    expect(await rejectionOf(world.useCases.authorizeGitAccess.execute(fingerprintOf('carol'), 'myapp'))).toBeInstanceOf(AppNotVisible);
    expect(await rejectionOf(world.useCases.authorizeGitAccess.execute(fingerprintOf('carol'), 'nope'))).toBeInstanceOf(NotFound);
  });

  it('refuses a deleted key before looking at the app', async () => {
    const { world, alice, key } = await worldWithKey();
    await world.useCases.removeKey.execute(alice, 'laptop');

    expect(await rejectionOf(world.useCases.authorizeGitAccess.execute(key, 'myapp'))).toBeInstanceOf(NotAuthenticated);
  });

  it('refuses a collaborator whose permission was revoked', async () => {
    const { world, alice } = await worldWithKey();
    const bob = await world.actor('bob');
    await world.useCases.addKey.execute(bob, { id: 'k', public: fakePublicKey('bob') });
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'bob' });
    await world.useCases.revokePermission.execute(alice, 'myapp', 'bob');

    expect(await rejectionOf(world.useCases.authorizeGitAccess.execute(fingerprintOf('bob'), 'myapp'))).toBeInstanceOf(AppNotVisible);
  });
});

describe('DeploySource', () => {
  it('records the build with its source image, sha, Procfile and workdir, releases and starts web=1 in the checkout', async () => {
    const { world, key } = await worldWithKey();

    const published = await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1, { dockerfile: 'FROM node:20\n' }));

    expect(published.build).toMatchObject({
      app: 'myapp',
      owner: 'alice',
      image: 'myapp:git-1111111',
      sha: SHA1,
      procfile: { web: 'node server.js' },
      dockerfile: 'FROM node:20\n',
      workdir: `/data/builds/myapp/${SHA1}`,
    });
    expect(published.release).toMatchObject({ version: 2, build: published.build.uuid, summary: 'alice deployed 1111111' });
    expect(published.app.structure).toEqual({ web: 1 });
    expect(world.scheduler.started()).toEqual([
      expect.objectContaining({ type: 'web', num: 1, command: 'node server.js', workdir: `/data/builds/myapp/${SHA1}`, image: 'myapp:git-1111111' }),
    ]);
  });

  it('refuses a commit with nothing to run and keeps no build or release', async () => {
    const { world, key } = await worldWithKey();

    const error = await rejectionOf(world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1, { procfile: null })));

    expect(error).toBeInstanceOf(RequestRejected);
    expect(error.code).toBe('BUILD.NOTHING_TO_RUN');
    expect(world.uow.snapshot().builds).toEqual([]);
    expect(world.releaseVersions()).toEqual([1]);
  });

  it('refuses a broken Procfile with the line at fault', async () => {
    const { world, key } = await worldWithKey();

    const error = await rejectionOf(world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1, { procfile: 'web node' })));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(error.fields?.procfile?.[0]).toMatch(/^Procfile line 1:/);
  });

  it('keeps nothing when the scheduler fails', async () => {
    const { world, key } = await worldWithKey();
    world.scheduler.failStarts(1);

    expect(await rejectionOf(world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1)))).toBeInstanceOf(Unavailable);
    expect(world.uow.snapshot().builds).toEqual([]);
    expect(world.releaseVersions()).toEqual([1]);
  });

  it('refuses a key deleted before the build is recorded', async () => {
    const { world, alice, key } = await worldWithKey();
    await world.useCases.removeKey.execute(alice, 'laptop');

    expect(await rejectionOf(world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1)))).toBeInstanceOf(NotAuthenticated);
    expect(world.releaseVersions()).toEqual([1]);
  });

  it('refuses a stranger', async () => {
    const { world } = await worldWithKey();
    const carol = await world.actor('carol');
    await world.useCases.addKey.execute(carol, { id: 'k', public: fakePublicKey('carol') });

    expect(await rejectionOf(world.useCases.deploySource.execute(fingerprintOf('carol'), 'myapp', pushed(SHA1)))).toBeInstanceOf(AppNotVisible);
  });

  it('refuses an empty workdir', async () => {
    const { world, key } = await worldWithKey();

    expect((await rejectionOf(world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1, { workdir: ' ' })))).fields).toHaveProperty('workdir');
  });

  it('is the only way to a build with a workdir: an API client cannot choose where a build runs', async () => {
    const { world, alice } = await worldWithKey();

    const published = await world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v1', procfile: { web: 'x' }, workdir: '/etc' });

    expect(published.build.workdir).toBeNull();
    expect(world.scheduler.started().map((spec) => spec.workdir)).toEqual([null]);
  });

  it('gives one-off runs the checkout of the current build', async () => {
    const { world, alice, key } = await worldWithKey();
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1));

    await world.useCases.runCommand.execute(alice, 'myapp', { command: 'ls' });

    expect(world.scheduler.runs()[0]?.workdir).toBe(`/data/builds/myapp/${SHA1}`);
  });
});

describe('retention of source builds', () => {
  it('lists the workdirs of the last builds released, newest first by release, shared ones once', async () => {
    const { world, alice, key } = await worldWithKey({ buildRetention: 2 });
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1));
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA2));
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { A: '1' } });
    await world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v1', procfile: { web: 'x' } });

    expect(await world.useCases.listRetainedWorkdirs.execute('myapp')).toEqual([`/data/builds/myapp/${SHA2}`]);
  });

  it('keeps a workdir used by several builds when one of them is kept', async () => {
    const { world, key } = await worldWithKey({ buildRetention: 1 });
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1));
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA2));
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1));

    expect(await world.useCases.listRetainedWorkdirs.execute('myapp')).toEqual([`/data/builds/myapp/${SHA1}`]);
  });

  it('lists nothing for an app that does not exist', async () => {
    const { world } = await worldWithKey();

    expect(await world.useCases.listRetainedWorkdirs.execute('gone')).toEqual([]);
  });

  it('rolls back to a kept source build, running its checkout again', async () => {
    const { world, alice, key } = await worldWithKey({ buildRetention: 2 });
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1));
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA2));
    world.scheduler.clearCalls();

    const published = await world.useCases.rollback.execute(alice, 'myapp', { version: 2 });

    expect(published.build?.sha).toBe(SHA1);
    expect(world.scheduler.started().map((spec) => spec.workdir)).toEqual([`/data/builds/myapp/${SHA1}`]);
  });

  it('refuses to roll back to a source build that is no longer kept, and says why', async () => {
    const { world, alice, key } = await worldWithKey({ buildRetention: 1 });
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1));
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA2));

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version: 2 }));

    expect(error).toBeInstanceOf(RequestRejected);
    expect(error.code).toBe('RELEASE.SOURCE_REMOVED');
    expect(error.message).toBe('Release v2 can no longer be rolled back to: only the last 1 builds keep their source.');
    expect(world.releaseVersions()).toEqual([1, 2, 3]);
  });

  it('still rolls back to old image builds, which have no source to lose', async () => {
    const { world, alice, key } = await worldWithKey({ buildRetention: 1 });
    await world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v1', procfile: { web: 'x' } });
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1));

    expect((await world.useCases.rollback.execute(alice, 'myapp', { version: 2 })).build?.image).toBe('example/myapp:v1');
  });
});
