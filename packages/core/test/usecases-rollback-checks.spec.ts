import { BuildNotRunnable, RequestRejected, RollbackWithoutBuild, Unavailable, createUseCases } from '@svc/core';
import type { Actor, PushedSource, Scheduler } from '@svc/core';
import { fakeFingerprint, fakePublicKey } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const SHA1 = '1111111111111111111111111111111111111111';
const SHA2 = '2222222222222222222222222222222222222222';

function pushed(sha: string): PushedSource {
  return { sha, procfile: 'web: node server.js', dockerfile: null, workdir: `/data/builds/myapp/${sha}` };
}

/** A world with alice, her key, and her app `myapp` (v1, no build). */
async function withKey(settings = {}): Promise<{ world: World; alice: Actor; key: string }> {
  const world = new World(settings);
  const alice = await world.actor('alice');
  await world.app(alice);
  await world.useCases.addKey.execute(alice, { id: 'laptop', public: fakePublicKey('alice') });
  return { world, alice, key: fakeFingerprint(fakePublicKey('alice').split(' ')[1] as string) };
}

/** v1 initial (no build), v2 build example/myapp:v1, v3 config, v4 build example/myapp:v2. */
async function deployedFourTimes(): Promise<{ world: World; alice: Actor }> {
  const world = new World();
  const alice = await world.actor('alice');
  await world.deployedApp(alice);
  await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: '1' } });
  await world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v2', procfile: { web: 'node server.js' } });
  return { world, alice };
}

describe('Rollback to a release without a build', () => {
  it('of an app that runs a build: a conflict that says why and names the releases with a build; nothing changes', async () => {
    const { world, alice } = await deployedFourTimes();
    world.scheduler.clearCalls();
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version: 1 }));

    expect(error).toBeInstanceOf(RollbackWithoutBuild);
    expect({ kind: error.kind, code: error.code }).toEqual({ kind: 'conflict', code: 'RELEASE.ROLLBACK_WITHOUT_BUILD' });
    expect(error.message).toBe(
      'Release v1 has no build: rolling back to it would stop every process of myapp. Releases that can be rolled back to: v2 to v4.',
    );
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.scheduler.calls).toEqual([]);
    expect(world.scheduler.checked).toEqual([]);
    expect(world.runningContainers()).toEqual(['web.1@v4']);
  });

  it('without a version, from the first build back to the initial release, is refused the same way', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', {}));

    expect(error).toBeInstanceOf(RollbackWithoutBuild);
    expect(error.message).toMatch(/^Release v1 has no build: .* Releases that can be rolled back to: v2\.$/);
    expect(world.releaseVersions()).toEqual([1, 2]);
  });

  it('leaves the build in place: a config change afterwards deploys it with the new config', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version: 1 }));

    const published = await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });

    expect(published.build?.image).toBe('example/myapp:v1');
    expect(world.runningContainers()).toEqual(['web.1@v3']);
  });

  it('of an app that never had a build: allowed as before, and nothing is asked of the scheduler', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice);
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: '1' } });
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { BAR: '2' } });

    const published = await world.useCases.rollback.execute(alice, 'myapp', { version: 2 });

    expect(published.release).toMatchObject({ version: 4, build: null, summary: 'alice rolled back to v2' });
    expect(published.config.values).toEqual({ FOO: '1' });
    expect(world.scheduler.checked).toEqual([]);
  });

  it('names only the releases whose build can still be rolled back to: pushed builds past the retention are left out', async () => {
    const { world, alice, key } = await withKey({ buildRetention: 1 });
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1));
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA2));
    await world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v1', procfile: { web: 'x' } });
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: '1' } });

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version: 1 }));

    // v2 and v3 ran pushed builds whose checkouts are gone: rolling back to them is refused too.
    expect(error.message).toMatch(/Releases that can be rolled back to: v4 to v5\.$/);
    const removed = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version: 3 }));
    expect(removed).toBeInstanceOf(RequestRejected);
    expect(removed.code).toBe('RELEASE.SOURCE_REMOVED');
  });
});

describe('Rollback to a build the scheduler cannot run', () => {
  it("is a conflict with the scheduler's reason, asked before anything starts or stops; nothing changes", async () => {
    const { world, alice } = await deployedFourTimes();
    world.scheduler.refuseToRun((build) => build.image === 'example/myapp:v1', 'image example/myapp:v1 cannot be pulled: manifest unknown');
    world.scheduler.clearCalls();
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version: 2 }));

    expect(error).toBeInstanceOf(BuildNotRunnable);
    expect({ kind: error.kind, code: error.code }).toEqual({ kind: 'conflict', code: 'RELEASE.BUILD_NOT_RUNNABLE' });
    expect(error.message).toBe('Release v2 cannot be rolled back to: image example/myapp:v1 cannot be pulled: manifest unknown');
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.scheduler.calls).toEqual([]);
    expect(world.runningContainers()).toEqual(['web.1@v4']);
    // Asked for the release the rollback would have made.
    expect(world.scheduler.checked).toEqual([{ app: 'myapp', release: 5, image: 'example/myapp:v1', workdir: null, procfile: { web: 'node server.js' } }]);
  });

  it("asks about a pushed build with its checkout, and a refusal of it stops nothing", async () => {
    const { world, alice, key } = await withKey({ buildRetention: 2 });
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA1));
    await world.useCases.deploySource.execute(key, 'myapp', pushed(SHA2));
    world.scheduler.refuseToRun((build) => build.workdir !== null, 'its build was made for the process scheduler');

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version: 2 }));

    expect(error.message).toBe('Release v2 cannot be rolled back to: its build was made for the process scheduler');
    expect(world.scheduler.checked.map((b) => [b.release, b.workdir])).toEqual([[4, `/data/builds/myapp/${SHA1}`]]);
    expect(world.runningContainers()).toEqual(['web.1@v3']);
  });

  it('runs the build when the scheduler says it can', async () => {
    const { world, alice } = await deployedFourTimes();

    const published = await world.useCases.rollback.execute(alice, 'myapp', { version: 2 });

    expect(published.build?.image).toBe('example/myapp:v1');
    expect(world.scheduler.checked.map((b) => b.image)).toEqual(['example/myapp:v1']);
    expect(world.runningContainers()).toEqual(['web.1@v5']);
  });

  it('when the scheduler fails to answer: Unavailable, and nothing changes', async () => {
    const { world, alice } = await deployedFourTimes();
    world.scheduler.failChecks(1);
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version: 2 }));

    expect(error).toBeInstanceOf(Unavailable);
    expect(error.message).toBe('The scheduler failed to check the build of myapp v2: Scheduler checkRunnable failed (injected)');
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.runningContainers()).toEqual(['web.1@v4']);
  });

  it('with a scheduler that has no check, rolls back as before', async () => {
    const world = new World();
    const fake = world.scheduler;
    const bare: Scheduler = { start: (s) => fake.start(s), stop: (id) => fake.stop(id), run: (s) => fake.run(s), states: (ids) => fake.states(ids) };
    const useCases = createUseCases({ ...world.deps, scheduler: bare });
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    await world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v2', procfile: { web: 'w' } });

    const published = await useCases.rollback.execute(alice, 'myapp', { version: 2 });

    expect(published.release.version).toBe(4);
    expect(world.runningContainers()).toEqual(['web.1@v4']);
    expect(fake.checked).toEqual([]);
  });
});
