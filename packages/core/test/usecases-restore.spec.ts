import { DEFAULT_SETTINGS, RESTORE_CONCURRENCY, RESTORE_PAGE_SIZE } from '@svc/core';
import type { Actor } from '@svc/core';
import { aContainer } from '@svc/core/testing';
import { World } from './support/world';

const PROCFILE = { web: 'node server.js', worker: 'node worker.js' };

/** A world in which the scheduler has forgotten every container, as after a controller restart. */
async function forgetRunning(world: World): Promise<void> {
  for (const container of world.scheduler.running()) await world.scheduler.stop(container.id);
  world.scheduler.clearCalls();
}

async function scaledApp(world: World, alice: Actor, id: string): Promise<void> {
  await world.deployedApp(alice, id, PROCFILE);
  await world.useCases.scaleApp.execute(alice, id, { web: 2, worker: 1 });
}

describe('RestoreContainers', () => {
  it('starts every recorded container again on the current release, with its recorded id, type and number', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await scaledApp(world, alice, 'myapp');
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { GREETING: 'hello' }, memory: { web: '256M' } });
    await world.deployedApp(alice, 'other', PROCFILE);
    const recorded = world.uow.snapshot().containers.map((c) => ({ uuid: c.uuid, app: c.app, type: c.type, num: c.num }));
    await forgetRunning(world);

    const result = await world.useCases.restoreContainers.execute();

    expect(result).toEqual({ restored: 4 });
    const started = world.scheduler.started();
    expect(started.map((s) => ({ uuid: s.id, app: s.app, type: s.type, num: s.num })).sort((a, b) => a.uuid.localeCompare(b.uuid))).toEqual(
      [...recorded].sort((a, b) => a.uuid.localeCompare(b.uuid)),
    );
    expect(started.find((s) => s.app === 'myapp' && s.type === 'web')).toEqual({
      id: expect.any(String),
      app: 'myapp',
      type: 'web',
      num: expect.any(Number),
      release: 3,
      image: 'example/myapp:v1',
      command: 'node server.js',
      workdir: null,
      env: { GREETING: 'hello', SVC_APP: 'myapp', SVC_RELEASE: 'v3' },
      memory: '256M',
      cpu: null,
    });
    expect(world.runningContainers('myapp')).toEqual(['web.1@v3', 'web.2@v3', 'worker.1@v3']);
    expect(world.recordedContainers('myapp')).toEqual(['web.1@v3', 'web.2@v3', 'worker.1@v3']);
    expect(world.runningContainers('other')).toEqual(['web.1@v2']);
  });

  it('records the state the scheduler reports for each restored container', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'myapp', PROCFILE);
    await world.uow.transaction((repos) => repos.containers.updateState(world.uow.snapshot().containers[0]!.uuid, 'crashed', world.clock.now()));
    await forgetRunning(world);
    world.clock.advance(60_000);

    await world.useCases.restoreContainers.execute();

    expect(world.uow.snapshot().containers.map((c) => ({ state: c.state, updated: c.updated }))).toEqual([{ state: 'up', updated: world.clock.now() }]);
  });

  it('deletes leftover records of one-off run containers without starting them', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'myapp', PROCFILE);
    await world.uow.transaction((repos) => repos.containers.create(aContainer({ app: 'myapp', type: 'run', num: 1, release: 2 })));
    await forgetRunning(world);

    const result = await world.useCases.restoreContainers.execute();

    expect(result).toEqual({ restored: 1 });
    expect(world.recordedContainers()).toEqual(['web.1@v2']);
    expect(world.scheduler.started().map((s) => s.type)).toEqual(['web']);
  });

  it('records a container that fails to start as error, logs why, and goes on with the others', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await scaledApp(world, alice, 'myapp');
    await world.deployedApp(alice, 'other', PROCFILE);
    await forgetRunning(world);
    world.scheduler.failStartOf((spec) => spec.app === 'myapp' && spec.type === 'worker', new Error('it exited with code 1 before it was up'));

    const result = await world.useCases.restoreContainers.execute();

    expect(result).toEqual({ restored: 3 });
    expect(world.runningContainers('myapp')).toEqual(['web.1@v2', 'web.2@v2']);
    expect(world.runningContainers('other')).toEqual(['web.1@v2']);
    const states = world.uow.snapshot().containers.filter((c) => c.app === 'myapp').map((c) => `${c.type}.${c.num}:${c.state}`).sort();
    expect(states).toEqual(['web.1:up', 'web.2:up', 'worker.1:error']);
    expect(world.logs.entries('myapp').at(-1)).toMatchObject({
      source: 'svc[scheduler]',
      message: 'failed to restore worker.1: it exited with code 1 before it was up',
    });
  });

  it("starts an app's containers a few at a time when the scheduler takes that: a slow one does not hold the others up, and no more than RESTORE_CONCURRENCY wait at once", async () => {
    const world = new World();
    world.scheduler.concurrentStarts = 100;
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'myapp', PROCFILE);
    const count = RESTORE_CONCURRENCY + 4;
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: count });
    await forgetRunning(world);
    // Starts asked for while every one so far is held: the lanes in use.
    let asked = 0;
    const slow = world.scheduler.holdStartsOf((spec) => {
      asked++;
      return spec.num === 1;
    });
    const others = world.scheduler.holdStartsOf((spec) => spec.num !== 1);
    const result = world.useCases.restoreContainers.execute();
    await slow.reached;
    await others.reached;
    expect(asked).toBe(RESTORE_CONCURRENCY);
    others.release();
    // Every other container is up while web.1 still waits.
    for (let i = 0; i < 50 && world.scheduler.started().length < count - 1; i++) await new Promise((done) => setImmediate(done));
    expect(world.scheduler.started().map((s) => s.num).sort((a, b) => a - b)).toEqual(Array.from({ length: count - 1 }, (_, i) => i + 2));
    slow.release();

    await expect(result).resolves.toEqual({ restored: count });
    expect(world.runningContainers('myapp')).toHaveLength(count);
    expect(world.uow.snapshot().containers.every((c) => c.state === 'up')).toBe(true);
  });

  it('starts them one after the other when the scheduler does not say it takes concurrent starts', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'myapp', PROCFILE);
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 3 });
    await forgetRunning(world);
    let asked = 0;
    const held = world.scheduler.holdStartsOf(() => (asked++, true));
    const result = world.useCases.restoreContainers.execute();
    await held.reached;
    for (let i = 0; i < 20; i++) await new Promise((done) => setImmediate(done));

    expect(asked).toBe(1);
    held.release();
    await expect(result).resolves.toEqual({ restored: 3 });
  });

  it('goes through every page of apps', async () => {
    const world = new World({ quotas: { ...DEFAULT_SETTINGS.quotas, appsPerUser: 1000 } });
    const alice = await world.actor('alice');
    const count = RESTORE_PAGE_SIZE + 3;
    for (let i = 0; i < count; i++) await world.deployedApp(alice, `app-${i}`, { web: 'node server.js' });
    await forgetRunning(world);

    const result = await world.useCases.restoreContainers.execute();

    expect(result).toEqual({ restored: count });
    expect(new Set(world.scheduler.started().map((s) => s.app)).size).toBe(count);
  });

  it('starts nothing and changes nothing for apps without containers', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice, 'empty');
    await world.deployedApp(alice, 'scaled-down', PROCFILE);
    await world.useCases.scaleApp.execute(alice, 'scaled-down', { web: 0 });
    await forgetRunning(world);
    const before = world.uow.snapshot();

    const result = await world.useCases.restoreContainers.execute();

    expect(result).toEqual({ restored: 0 });
    expect(world.scheduler.calls).toEqual([]);
    expect(world.uow.snapshot()).toEqual(before);
  });
});
