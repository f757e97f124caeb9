import { Unavailable, ValidationFailed } from '@svc/core';
import type { ContainerRepository } from '@svc/core';
import { aliceWithApp } from './support/fixtures';
import { World, rejectionOf } from './support/world';

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
