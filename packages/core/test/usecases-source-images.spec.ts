import { BUILD_FAILED, RequestRejected, Unavailable, buildFailed } from '@svc/core';
import type { Actor, PushedSource } from '@svc/core';
import { FakeImageBuilder, fakeFingerprint, fakePublicKey } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const sha = (digit: number): string => String(digit).repeat(40);

function pushed(commit: string, overrides: Partial<PushedSource> = {}): PushedSource {
  return { sha: commit, procfile: 'web: node server.js', dockerfile: null, workdir: `/data/builds/myapp/${commit}`, ...overrides };
}

async function worldWithBuilder(settings = {}): Promise<{ world: World; images: FakeImageBuilder; alice: Actor; key: string }> {
  const images = new FakeImageBuilder();
  const world = new World(settings, images);
  const alice = await world.actor('alice');
  await world.app(alice);
  await world.useCases.addKey.execute(alice, { id: 'laptop', public: fakePublicKey('alice') });
  return { world, images, alice, key: fakeFingerprint(fakePublicKey('alice').split(' ')[1] as string) };
}

describe('DeploySource with an image builder', () => {
  it('builds a Procfile commit onto the stack, names the image <app>:<version>, records no workdir and streams the output', async () => {
    const { world, images, key } = await worldWithBuilder();
    const lines: string[] = [];

    const published = await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(1)), (line) => lines.push(line));

    const app = await world.uow.repositories.apps.findById('myapp');
    expect(images.requests).toEqual([{ app: 'myapp', appUuid: app?.uuid, directory: `/data/builds/myapp/${sha(1)}`, kind: 'procfile' }]);
    expect(published.release.version).toBe(2);
    expect(published.build).toMatchObject({ image: 'myapp:2', workdir: null, sha: sha(1), procfile: { web: 'node server.js' } });
    expect(images.tags()).toEqual(['myapp:2']);
    expect(lines).toEqual(['Step 1/1 : building procfile of myapp']);
    expect(world.scheduler.started()).toEqual([expect.objectContaining({ type: 'web', image: 'myapp:2', workdir: null })]);
  });

  it('builds the Dockerfile of a commit that has one, even with a Procfile', async () => {
    const { world, images, key } = await worldWithBuilder();

    await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(1), { dockerfile: 'FROM busybox\n' }));
    await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(2), { dockerfile: 'FROM busybox\n', procfile: null }));

    expect(images.requests.map((r) => r.kind)).toEqual(['dockerfile', 'dockerfile']);
    expect(images.tags()).toEqual(['myapp:2', 'myapp:3']);
  });

  it('names the image after the version the release really gets, when other releases came first', async () => {
    const { world, alice, key } = await worldWithBuilder();
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { A: '1' } });
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { B: '2' } });

    const published = await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(1)));

    expect(published.release.version).toBe(4);
    expect(published.build.image).toBe('myapp:4');
  });

  it('rejects a source that does not build with the builder\'s reason and keeps nothing', async () => {
    const { world, images, key } = await worldWithBuilder();
    images.failNextBuild(() => buildFailed('The command \'/bin/sh -c false\' returned a non-zero code: 1'));

    const error = await rejectionOf(world.useCases.deploySource.execute(key, 'myapp', pushed(sha(1))));

    expect(error).toBeInstanceOf(RequestRejected);
    expect(error.code).toBe(BUILD_FAILED);
    expect(error.message).toMatch(/non-zero code: 1/);
    expect(world.uow.snapshot().builds).toEqual([]);
    expect(world.releaseVersions()).toEqual([1]);
    expect(images.images.size).toBe(0);
  });

  it('answers an engine that cannot be used as unavailable, keeping nothing', async () => {
    const { world, images, key } = await worldWithBuilder();
    images.failNextBuild(() => new Error('connect ENOENT /var/run/docker.sock'));

    const error = await rejectionOf(world.useCases.deploySource.execute(key, 'myapp', pushed(sha(1))));

    expect(error).toBeInstanceOf(Unavailable);
    expect(error.code).toBe('BUILDER.FAILED');
    expect(world.releaseVersions()).toEqual([1]);
  });

  it('removes the built image when the release fails to start, keeping no build or release', async () => {
    const { world, images, key } = await worldWithBuilder();
    world.scheduler.failStarts(1);

    expect(await rejectionOf(world.useCases.deploySource.execute(key, 'myapp', pushed(sha(1))))).toBeInstanceOf(Unavailable);

    expect(images.requests).toHaveLength(1);
    expect(images.images.size).toBe(0);
    expect(world.uow.snapshot().builds).toEqual([]);
    expect(world.releaseVersions()).toEqual([1]);
  });

  it('removes the built image when it cannot be named', async () => {
    const { world, images, key } = await worldWithBuilder();
    images.failNextTag();

    expect(await rejectionOf(world.useCases.deploySource.execute(key, 'myapp', pushed(sha(1))))).toBeInstanceOf(Unavailable);

    expect(images.images.size).toBe(0);
    expect(world.releaseVersions()).toEqual([1]);
  });

  it('builds nothing for a pusher who may not see the app', async () => {
    const { world, images } = await worldWithBuilder();
    const bob = await world.actor('bob');
    await world.useCases.addKey.execute(bob, { id: 'k', public: fakePublicKey('bob') });

    await rejectionOf(world.useCases.deploySource.execute(fakeFingerprint(fakePublicKey('bob').split(' ')[1] as string), 'myapp', pushed(sha(1))));

    expect(images.requests).toEqual([]);
  });

  it('keeps the images of the last BUILD_RETENTION released builds, including one a rollback brought back', async () => {
    const { world, images, alice, key } = await worldWithBuilder({ buildRetention: 2 });
    for (const digit of [1, 2, 3]) await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(digit)));
    expect(images.tags()).toEqual(['myapp:3', 'myapp:4']);

    await world.useCases.rollback.execute(alice, 'myapp', { version: 3 });
    await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(4)));

    // v5 rolled back to myapp:3; v6 is the new build: the two most recently released builds.
    expect(images.tags()).toEqual(['myapp:3', 'myapp:6']);
  });

  it('refuses to roll back to a build whose image is no longer kept', async () => {
    const { world, alice, key } = await worldWithBuilder({ buildRetention: 1 });
    await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(1)));
    await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(2)));

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version: 2 }));

    expect(error.code).toBe('RELEASE.SOURCE_REMOVED');
    expect(world.releaseVersions()).toEqual([1, 2, 3]);
  });

  it('never removes an image a container still uses, and a failing prune leaves the release live with a log line', async () => {
    const { world, images, key } = await worldWithBuilder({ buildRetention: 1 });
    await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(1)));
    images.inUse.add('myapp:2');
    await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(2)));
    expect(images.tags()).toEqual(['myapp:2', 'myapp:3']);

    images.failNextPrune();
    const published = await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(3)));

    expect(published.release.version).toBe(4);
    const log = await world.logs.tail('myapp', 10);
    expect(log.map((entry) => entry.message)).toContainEqual(expect.stringMatching(/old images could not be removed: prune failed/));
  });
});

describe('DeploySource with an image builder that pushes to a registry', () => {
  const REGISTRY = 'registry.example.com:5000';
  const digestOf = (n: number): string => `${REGISTRY}/myapp@sha256:${String(n).padStart(64, '0')}`;

  async function worldWithRegistry(settings = {}): Promise<{ world: World; images: FakeImageBuilder; alice: Actor; key: string }> {
    const images = new FakeImageBuilder(REGISTRY);
    const world = new World(settings, images);
    const alice = await world.actor('alice');
    await world.app(alice);
    await world.useCases.addKey.execute(alice, { id: 'laptop', public: fakePublicKey('alice') });
    return { world, images, alice, key: fakeFingerprint(fakePublicKey('alice').split(' ')[1] as string) };
  }

  it('records the build by its digest, which every container starts from, and still names it <app>:<version> in the engine', async () => {
    const { world, images, key } = await worldWithRegistry();

    const published = await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(1)));

    expect(published.build).toMatchObject({ image: digestOf(1), workdir: null });
    expect(images.tags()).toEqual(['myapp:2']);
    expect(world.scheduler.started()).toEqual([expect.objectContaining({ type: 'web', image: digestOf(1) })]);
  });

  it('removes the pushed image when the release fails to start', async () => {
    const { world, images, key } = await worldWithRegistry();
    world.scheduler.failStarts(1);

    expect(await rejectionOf(world.useCases.deploySource.execute(key, 'myapp', pushed(sha(1))))).toBeInstanceOf(Unavailable);

    expect(images.images.size).toBe(0);
    expect(world.uow.snapshot().builds).toEqual([]);
  });

  it('keeps the engine\'s copies of the kept builds only, and rolls back to an older build from the registry', async () => {
    const { world, images, alice, key } = await worldWithRegistry({ buildRetention: 2 });
    for (const digit of [1, 2, 3]) await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(digit)));
    expect(images.tags()).toEqual(['myapp:3', 'myapp:4']);

    // v2's image is gone from the engine, not from the registry, which every node pulls from.
    const back = await world.useCases.rollback.execute(alice, 'myapp', { version: 2 });

    expect(back.release.version).toBe(5);
    expect(world.scheduler.started().at(-1)).toEqual(expect.objectContaining({ image: digestOf(1) }));
  });
});

describe('DeploySource without an image builder', () => {
  it('records the checkout as before and names the build <app>:git-<sha7>', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice);
    await world.useCases.addKey.execute(alice, { id: 'laptop', public: fakePublicKey('alice') });
    const lines: string[] = [];

    const published = await world.useCases.deploySource.execute(
      fakeFingerprint(fakePublicKey('alice').split(' ')[1] as string), 'myapp', pushed(sha(1)), (line) => lines.push(line),
    );

    expect(published.build).toMatchObject({ image: 'myapp:git-1111111', workdir: `/data/builds/myapp/${sha(1)}` });
    expect(lines).toEqual([]);
  });
});

describe('DeleteApp with an image builder', () => {
  it('removes the deleted app\'s images, and a new app of the same name starts with none', async () => {
    const { world, images, alice, key } = await worldWithBuilder();
    await world.useCases.deploySource.execute(key, 'myapp', pushed(sha(1)));
    expect(images.images.size).toBe(1);

    await world.useCases.deleteApp.execute(alice, 'myapp');

    expect(images.images.size).toBe(0);
  });
});
