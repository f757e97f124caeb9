import { NotFound, RequestRejected, RollbackWithoutBuild, Unavailable, ValidationFailed } from '@svc/core';
import type { Actor } from '@svc/core';
import { PAGE, aliceWithApp } from './support/fixtures';
import { World, rejectionOf } from './support/world';

describe('Rollback', () => {
  /** v1 initial, v2 FOO=1, v3 BAR=2. */
  async function threeReleases(): Promise<{ world: World; alice: Actor }> {
    const { world, alice } = await aliceWithApp();
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: '1' } });
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { BAR: '2' } });
    return { world, alice };
  }

  it.each([[{}], [undefined], [{ version: null }]])(
    'without a version (%p) rolls back to the release before the current one',
    async (body) => {
      const { world, alice } = await threeReleases();

      const published = await world.useCases.rollback.execute(alice, 'myapp', body);

      expect(published.release.version).toBe(4);
      expect(published.release.summary).toBe('alice rolled back to v2');
      expect(published.config.values).toEqual({ FOO: '1' });
    },
  );

  it('copies the target\'s build and config references without writing new ones', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: '1' } });
    const target = await world.uow.repositories.releases.findByVersion('myapp', 2);
    const before = world.uow.snapshot();

    const published = await world.useCases.rollback.execute(alice, 'myapp', { version: 2 });

    expect(published.release).toMatchObject({ version: 4, build: target?.build, config: target?.config });
    const after = world.uow.snapshot();
    expect(after.configs).toEqual(before.configs);
    expect(after.builds).toEqual(before.builds);
  });

  it('rolls back to an explicit version, given as a number or a numeric string', async () => {
    const { world, alice } = await threeReleases();

    const first = await world.useCases.rollback.execute(alice, 'myapp', { version: 1 });
    const second = await world.useCases.rollback.execute(alice, 'myapp', { version: '3' });

    expect(first.release.summary).toBe('alice rolled back to v1');
    expect(first.config.values).toEqual({});
    expect(second.release).toMatchObject({ version: 5, summary: 'alice rolled back to v3' });
    expect(second.config.values).toEqual({ FOO: '1', BAR: '2' });
  });

  it.each([[0], [-1], ['-3']])('refuses version %p with "version cannot be below 1"', async (version) => {
    const { world, alice } = await threeReleases();
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version }));

    expect(error).toBeInstanceOf(RequestRejected);
    expect(error.kind).toBe('invalid');
    expect(error.message).toBe('version cannot be below 1');
    expect(world.uow.snapshot()).toEqual(before);
  });

  it.each([[1.5], ['1.5'], ['v2'], [true], [[2]], [{}]])('refuses the non-integer version %p on field version', async (version) => {
    const { world, alice } = await threeReleases();

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version }));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(error.fields).toEqual({ version: ['A valid integer is required.'] });
  });

  it('answers NotFound for a version that does not exist', async () => {
    const { world, alice } = await threeReleases();
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version: 9 }));

    expect(error).toBeInstanceOf(NotFound);
    expect(world.uow.snapshot()).toEqual(before);
  });

  it('on an app with a single release and no version: "version cannot be below 1"', async () => {
    const { world, alice } = await aliceWithApp();

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', {}));

    expect(error).toBeInstanceOf(RequestRejected);
    expect(error.message).toBe('version cannot be below 1');
    expect(world.releaseVersions()).toEqual([1]);
  });

  it('redeploys the earlier build on a new release', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    await world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v2', procfile: { web: 'w' } });

    await world.useCases.rollback.execute(alice, 'myapp', {});

    expect(world.runningContainers()).toEqual(['web.1@v4']);
    expect(world.scheduler.running()[0]?.spec).toMatchObject({ image: 'example/myapp:v1', env: { SVC_RELEASE: 'v4' } });
  });

  it('to the initial release (no build) of a deployed app is refused, and its process keeps running', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);

    const error = await rejectionOf(world.useCases.rollback.execute(alice, 'myapp', { version: 1 }));

    expect(error).toBeInstanceOf(RollbackWithoutBuild);
    expect(world.recordedContainers()).toEqual(['web.1@v2']);
    expect(world.runningContainers()).toEqual(['web.1@v2']);
  });

  it('when the scheduler fails: Unavailable and nothing changes', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    await world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v2', procfile: { web: 'w' } });
    const before = world.uow.snapshot();
    world.scheduler.failStarts(1);

    await expect(world.useCases.rollback.execute(alice, 'myapp', {})).rejects.toBeInstanceOf(Unavailable);

    expect(world.uow.snapshot()).toEqual(before);
    expect(world.runningContainers()).toEqual(['web.1@v3']);
  });
});

describe('ListReleases, GetRelease and ListBuilds', () => {
  it('lists releases newest first', async () => {
    const { world, alice } = await aliceWithApp();
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { A: '1' } });
    await world.useCases.createBuild.execute(alice, 'myapp', { image: 'x' });

    const page = await world.useCases.listReleases.execute(alice, 'myapp', PAGE);

    expect(page.count).toBe(3);
    expect(page.items.map((r) => [r.version, r.summary])).toEqual([
      [3, 'alice deployed x'],
      [2, 'alice added A'],
      [1, 'alice created initial release'],
    ]);
  });

  it('gets a release by version and answers NotFound for a missing one', async () => {
    const { world, alice } = await aliceWithApp();

    await expect(world.useCases.getRelease.execute(alice, 'myapp', 1)).resolves.toMatchObject({ version: 1, build: null });
    expect(await rejectionOf(world.useCases.getRelease.execute(alice, 'myapp', 2))).toBeInstanceOf(NotFound);
  });

  it('lists builds newest first and answers NotFound past the last page', async () => {
    const { world, alice } = await aliceWithApp();
    await world.useCases.createBuild.execute(alice, 'myapp', { image: 'first' });
    world.clock.advanceSeconds(1);
    await world.useCases.createBuild.execute(alice, 'myapp', { image: 'second' });

    const page = await world.useCases.listBuilds.execute(alice, 'myapp', PAGE);

    expect(page.items.map((b) => b.image)).toEqual(['second', 'first']);
    expect(await rejectionOf(world.useCases.listBuilds.execute(alice, 'myapp', { page: 2, pageSize: 2 }))).toBeInstanceOf(NotFound);
  });
});

describe('concurrent releases', () => {
  it('20 concurrent config changes on one app produce versions 2..21 exactly', async () => {
    const { world, alice } = await aliceWithApp();

    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => world.useCases.setConfig.execute(alice, 'myapp', { values: { [`K${i}`]: String(i) } })),
    );

    expect(results.map((r) => r.release.version).sort((a, b) => a - b)).toEqual(Array.from({ length: 20 }, (_, i) => i + 2));
    expect(world.releaseVersions()).toEqual(Array.from({ length: 21 }, (_, i) => i + 1));
    // Each change merged onto the one before it: the last config holds every variable.
    const current = await world.useCases.getConfig.execute(alice, 'myapp');
    expect(current.release.version).toBe(21);
    expect(Object.keys(current.config.values)).toHaveLength(20);
  });

  it('concurrent builds, config changes and rollbacks on a deployed app keep versions contiguous and one set of containers', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);

    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        i % 3 === 0
          ? world.useCases.createBuild.execute(alice, 'myapp', { image: `img:${i}`, procfile: { web: 'w' } })
          : i % 3 === 1
            ? world.useCases.setConfig.execute(alice, 'myapp', { values: { [`K${i}`]: 'v' } })
            : world.useCases.rollback.execute(alice, 'myapp', {}),
      ),
    );

    expect(world.releaseVersions()).toEqual(Array.from({ length: 14 }, (_, i) => i + 1));
    expect(world.recordedContainers()).toEqual(['web.1@v14']);
    expect(world.runningContainers()).toEqual(['web.1@v14']);
  });
});
