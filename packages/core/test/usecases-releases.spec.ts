import { NotFound, RequestRejected, RollbackWithoutBuild, Unavailable, ValidationFailed } from '@svc/core';
import type { Actor, ContainerRepository } from '@svc/core';
import { World, rejectionOf } from './support/world';

const PAGE = { page: 1, pageSize: 100 };

async function aliceWithApp(settings = {}): Promise<{ world: World; alice: Actor }> {
  const world = new World(settings);
  const alice = await world.actor('alice');
  await world.app(alice);
  return { world, alice };
}

describe('SetConfig', () => {
  it('creates release v2 pointing at a new config with the merged values', async () => {
    const { world, alice } = await aliceWithApp();

    const published = await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });

    expect(published.release).toMatchObject({ app: 'myapp', version: 2, owner: 'alice', build: null, config: published.config.uuid });
    expect(published.config).toMatchObject({ app: 'myapp', owner: 'alice', values: { FOO: 'bar' }, memory: {}, cpu: {}, tags: {} });
    const state = world.uow.snapshot();
    expect(state.releases.map((r) => r.version)).toEqual([1, 2]);
    expect(state.configs).toHaveLength(2);
  });

  it('keeps the service variables out of the stored values (they belong to the release)', async () => {
    const { world, alice } = await aliceWithApp();

    const published = await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });

    expect(Object.keys(published.config.values)).toEqual(['FOO']);
  });

  it.each<[unknown, string]>([
    [{}, 'alice changed nothing'],
    [{ values: { FOO: 'x' }, memory: { web: '512M' } }, 'alice added FOO and changed limits for memory'],
    [{ values: { B: '1', A: '2' }, cpu: { web: 100 }, memory: { web: '1G' } }, 'alice added A, B and changed limits for memory, cpu'],
    [{ tags: { rack: 'a' } }, 'alice added tag rack'],
  ])('summarises %j as %p', async (body, summary) => {
    const { world, alice } = await aliceWithApp();

    const published = await world.useCases.setConfig.execute(alice, 'myapp', body);

    expect(published.release.summary).toBe(summary);
  });

  it('summarises changes and deletions against the current config', async () => {
    const { world, alice } = await aliceWithApp();
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { KEEP: '1', CHANGE: '1', DROP: '1' } });

    const published = await world.useCases.setConfig.execute(alice, 'myapp', { values: { CHANGE: '2', DROP: null, NEW: '1' } });

    expect(published.release.summary).toBe('alice added NEW, changed CHANGE, deleted DROP');
    expect(published.config.values).toEqual({ KEEP: '1', CHANGE: '2', NEW: '1' });
  });

  it('a change that changes nothing still creates a release', async () => {
    const { world, alice } = await aliceWithApp();
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });

    const published = await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });

    expect(published.release.version).toBe(3);
    expect(published.release.summary).toBe('alice changed nothing');
  });

  it('accepts a double-encoded JSON string body', async () => {
    const { world, alice } = await aliceWithApp();

    const published = await world.useCases.setConfig.execute(alice, 'myapp', JSON.stringify({ values: { FOO: 1 } }));

    expect(published.config.values).toEqual({ FOO: '1' });
  });

  it('numbers releases 1, 2, 3, ... without gaps', async () => {
    const { world, alice } = await aliceWithApp();

    for (let i = 0; i < 4; i++) await world.useCases.setConfig.execute(alice, 'myapp', { values: { N: String(i) } });

    expect(world.releaseVersions()).toEqual([1, 2, 3, 4, 5]);
  });

  it('refuses an invalid body without creating anything', async () => {
    const { world, alice } = await aliceWithApp();
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.setConfig.execute(alice, 'myapp', { values: { SVC_RELEASE: 'v9' } }));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(error.fields).toEqual({ values: ['SVC_RELEASE is set by the platform and cannot be changed.'] });
    expect(world.uow.snapshot()).toEqual(before);
  });

  it('accepts and ignores the service variables repeated with their current values (a pulled config pushed back)', async () => {
    const { world, alice } = await aliceWithApp();
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });

    const { config, release } = await world.useCases.setConfig.execute(alice, 'myapp', {
      values: { FOO: 'bar', SVC_APP: 'myapp', SVC_RELEASE: 'v2' },
    });

    expect(release.version).toBe(3);
    expect(release.summary).toBe('alice changed nothing');
    expect(config.values).toEqual({ FOO: 'bar' });
  });

  it('refuses a repeated SVC_APP naming another app without creating anything', async () => {
    const { world, alice } = await aliceWithApp();
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.setConfig.execute(alice, 'myapp', { values: { SVC_APP: 'other', SVC_RELEASE: 'v1' } }));

    expect(error.fields).toEqual({ values: ['SVC_APP is set by the platform and cannot be changed.'] });
    expect(world.uow.snapshot()).toEqual(before);
  });

  it('writes the release summary to the app log', async () => {
    const { world, alice } = await aliceWithApp();

    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });

    expect(world.logs.messages('myapp')).toEqual(['alice created initial release', 'alice added FOO']);
  });

  it('on a deployed app, replaces the containers with ones on the new release with the new environment', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    const old = world.uow.snapshot().containers.map((c) => c.uuid);

    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });

    expect(world.recordedContainers()).toEqual(['web.1@v3']);
    expect(world.runningContainers()).toEqual(['web.1@v3']);
    expect(world.scheduler.stopped()).toEqual(old);
    expect(world.scheduler.started().at(-1)?.env).toEqual({ FOO: 'bar', SVC_APP: 'myapp', SVC_RELEASE: 'v3' });
  });

  it('on a deployed app whose scheduler fails: Unavailable, no release or config kept, old containers still running', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    const before = world.uow.snapshot();
    world.scheduler.failStarts(1);

    const error = await rejectionOf(world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } }));

    expect(error).toBeInstanceOf(Unavailable);
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.runningContainers()).toEqual(['web.1@v2']);
    expect(world.logs.messages('myapp')).not.toContain('alice added FOO');
  });

  it("on a deployed app whose scheduler refuses the request itself (an image no registry has): that refusal (400), nothing kept", async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    const before = world.uow.snapshot();
    world.scheduler.failStarts(1, new RequestRejected('IMAGE.NOT_FOUND', 'pulling example/missing:1 failed: manifest unknown'));

    const error = await rejectionOf(world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } }));

    expect(error).toBeInstanceOf(RequestRejected);
    expect((error as RequestRejected).code).toBe('IMAGE.NOT_FOUND');
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.runningContainers()).toEqual(['web.1@v2']);
  });

  it('merges onto the config now current after a rollback', async () => {
    const { world, alice } = await aliceWithApp();
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: '1' } });
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { BAR: '2' } });
    await world.useCases.rollback.execute(alice, 'myapp', { version: 2 });

    const published = await world.useCases.setConfig.execute(alice, 'myapp', { values: { BAZ: '3' } });

    expect(published.release.version).toBe(5);
    expect(published.config.values).toEqual({ FOO: '1', BAZ: '3' });
    expect(published.release.summary).toBe('alice added BAZ');
  });

  it('GetConfig returns the config of the newest release', async () => {
    const { world, alice } = await aliceWithApp();
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });

    const current = await world.useCases.getConfig.execute(alice, 'myapp');

    expect(current.release.version).toBe(2);
    expect(current.config.values).toEqual({ FOO: 'bar' });
  });
});

describe('CreateBuild', () => {
  it('deploys a first build whose Procfile has web with one web process, through the scheduler', async () => {
    const { world, alice } = await aliceWithApp();
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' }, memory: { web: '512M' }, cpu: { web: 256 } });

    const published = await world.useCases.createBuild.execute(alice, 'myapp', {
      image: 'example/myapp:v1',
      procfile: { web: 'node server.js', worker: 'node worker.js' },
    });

    expect(published.app.structure).toEqual({ web: 1 });
    expect(published.release).toMatchObject({ version: 3, build: published.build?.uuid, config: published.config.uuid });
    const [container] = world.uow.snapshot().containers;
    expect(world.scheduler.started()).toEqual([
      {
        id: container?.uuid,
        app: 'myapp',
        type: 'web',
        num: 1,
        release: 3,
        image: 'example/myapp:v1',
        command: 'node server.js',
        workdir: null,
        env: { FOO: 'bar', SVC_APP: 'myapp', SVC_RELEASE: 'v3' },
        memory: '512M',
        cpu: 256,
      },
    ]);
    expect(container).toMatchObject({ app: 'myapp', owner: 'alice', release: 3, type: 'web', num: 1, state: 'up' });
    expect(world.uow.snapshot().apps[0]?.structure).toEqual({ web: 1 });
  });

  it('deploys a first build without web in its Procfile as one cmd process running the image command', async () => {
    const { world, alice } = await aliceWithApp();

    const published = await world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v1' });

    expect(published.app.structure).toEqual({ cmd: 1 });
    expect(world.scheduler.started()).toEqual([
      expect.objectContaining({ type: 'cmd', num: 1, command: null, env: { SVC_APP: 'myapp', SVC_RELEASE: 'v2' } }),
    ]);
  });

  it('stores the build with its defaults and summarises it by image', async () => {
    const { world, alice } = await aliceWithApp();

    const published = await world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v1' });

    expect(published.build).toMatchObject({ app: 'myapp', owner: 'alice', image: 'example/myapp:v1', procfile: {}, sha: '', dockerfile: '' });
    expect(published.release.summary).toBe('alice deployed example/myapp:v1');
    expect(world.logs.messages('myapp')).toContain('alice deployed example/myapp:v1');
  });

  it('summarises a build with a sha by its first seven characters and stores the sha in lower case', async () => {
    const { world, alice } = await aliceWithApp();

    const published = await world.useCases.createBuild.execute(alice, 'myapp', {
      image: 'example/myapp:v1',
      sha: 'ABCDEF0123456789',
      dockerfile: 'FROM scratch',
    });

    expect(published.build?.sha).toBe('abcdef0123456789');
    expect(published.build?.dockerfile).toBe('FROM scratch');
    expect(published.release.summary).toBe('alice deployed abcdef0');
  });

  it('refuses invalid fields all at once and creates nothing', async () => {
    const { world, alice } = await aliceWithApp();
    const before = world.uow.snapshot();

    const error = await rejectionOf(
      world.useCases.createBuild.execute(alice, 'myapp', { image: 'has space', sha: 'xyz', procfile: { Web: 'x', web: '' } }),
    );

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(error.fields).toEqual({
      image: ['Enter a valid image reference.'],
      sha: ['A sha is 7 to 40 hexadecimal characters.'],
      procfile: ['Process types can only contain [a-z0-9-_]: Web', 'The command of web must be a non-empty string.'],
    });
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.scheduler.calls).toEqual([]);
  });

  it.each<[Record<string, unknown>, string]>([
    [{}, 'image'],
    [{ image: 'i'.repeat(513) }, 'image'],
    [{ image: 'ok', sha: 'abcdef' }, 'sha'],
    [{ image: 'ok', sha: 'a'.repeat(41) }, 'sha'],
    [{ image: 'ok', procfile: ['web'] }, 'procfile'],
    [{ image: 'ok', procfile: { web: 5 } }, 'procfile'],
    [{ image: 'ok', dockerfile: 7 }, 'dockerfile'],
  ])('refuses %j on %s', async (body, field) => {
    const { world, alice } = await aliceWithApp();

    const error = await rejectionOf(world.useCases.createBuild.execute(alice, 'myapp', body));

    expect(Object.keys(error.fields ?? {})).toEqual([field]);
  });

  it('accepts an image reference of 512 characters and shas of 7 and 40', async () => {
    const { world, alice } = await aliceWithApp();

    await world.useCases.createBuild.execute(alice, 'myapp', { image: 'i'.repeat(512), sha: 'abcdef1' });
    await world.useCases.createBuild.execute(alice, 'myapp', { image: 'ok', sha: 'a'.repeat(40) });

    expect(world.releaseVersions()).toEqual([1, 2, 3]);
  });

  it('when the scheduler fails: Unavailable, no release or build kept, old containers still running', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    const before = world.uow.snapshot();
    world.scheduler.failStarts(1);

    const error = await rejectionOf(world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v2', procfile: { web: 'x' } }));

    expect(error).toBeInstanceOf(Unavailable);
    expect(error.message).toMatch(/^The scheduler failed to start myapp web\.1: /);
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.runningContainers()).toEqual(['web.1@v2']);
  });

  it('when a later start fails, stops the containers it had already started', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 3 });
    const before = world.uow.snapshot();
    world.scheduler.failStartOf((spec) => spec.num === 3);

    const error = await rejectionOf(world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v2', procfile: { web: 'x' } }));

    expect(error).toBeInstanceOf(Unavailable);
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.runningContainers()).toEqual(['web.1@v2', 'web.2@v2', 'web.3@v2']);
  });

  it('when the database fails after containers started, stops them, keeps nothing and rethrows the failure', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    const before = world.uow.snapshot();
    const failure = new Error('connection lost');
    const transaction = world.uow.transaction.bind(world.uow);
    world.uow.transaction = (work) =>
      transaction(async (repos) => {
        // Retiring the old container is the last write, after the new one has started.
        const containers: ContainerRepository = Object.create(repos.containers);
        containers.delete = async () => {
          throw failure;
        };
        return work({ ...repos, containers });
      });

    await expect(world.useCases.createBuild.execute(alice, 'myapp', { image: 'v2', procfile: { web: 'w' } })).rejects.toBe(failure);

    expect(world.scheduler.started().map((s) => s.release)).toEqual([2, 3]);
    expect(world.runningContainers()).toEqual(['web.1@v2']);
    expect(world.uow.snapshot()).toEqual(before);
  });

  it('the first build on a never-deployed app fails cleanly too: the app stays unscaled at v1', async () => {
    const { world, alice } = await aliceWithApp();
    const before = world.uow.snapshot();
    world.scheduler.failStarts(1);

    await expect(world.useCases.createBuild.execute(alice, 'myapp', { image: 'x' })).rejects.toBeInstanceOf(Unavailable);

    expect(world.uow.snapshot()).toEqual(before);
    expect(world.scheduler.running()).toEqual([]);
  });

  it('a later build keeps the scaled structure and replaces every container', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'myapp', { web: 'w', worker: 'k' });
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 2, worker: 1 });

    const published = await world.useCases.createBuild.execute(alice, 'myapp', { image: 'v2', procfile: { web: 'w', worker: 'k' } });

    expect(published.app.structure).toEqual({ web: 2, worker: 1 });
    expect(world.recordedContainers()).toEqual(['web.1@v3', 'web.2@v3', 'worker.1@v3']);
    expect(world.runningContainers()).toEqual(['web.1@v3', 'web.2@v3', 'worker.1@v3']);
  });

  it('a later build drops process types its Procfile no longer has', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'myapp', { web: 'w', worker: 'k' });
    await world.useCases.scaleApp.execute(alice, 'myapp', { worker: 2 });

    const published = await world.useCases.createBuild.execute(alice, 'myapp', { image: 'v2', procfile: { web: 'w' } });

    expect(published.app.structure).toEqual({ web: 1 });
    expect(world.runningContainers()).toEqual(['web.1@v3']);
  });

  it('keeps the release when a replaced container fails to stop after commit, and logs the failure', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    world.scheduler.failStops(1);

    const published = await world.useCases.createBuild.execute(alice, 'myapp', { image: 'v2', procfile: { web: 'w' } });

    expect(published.release.version).toBe(3);
    expect(world.recordedContainers()).toEqual(['web.1@v3']);
    expect(world.logs.entries('myapp').filter((e) => e.source === 'svc[scheduler]').map((e) => e.message)).toEqual([
      'failed to stop a replaced container: Scheduler stop failed (injected)',
    ]);
  });
});

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
