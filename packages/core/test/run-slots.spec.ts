import { InMemoryBuildSlotStore, TooMany, createUseCases, runSlotsOf, type Actor, type UseCases } from '@svc/core';
import { World, rejectionOf } from './support/world';

const LIMIT = 2;

/** alice owns `myapp` (deployed), carol collaborates on it; runs are counted in `store`. */
async function setup(): Promise<{ world: World; store: InMemoryBuildSlotStore; useCases: UseCases; alice: Actor; carol: Actor }> {
  const world = new World({ runsPerUser: LIMIT });
  const store = new InMemoryBuildSlotStore();
  const useCases = createUseCases({ ...world.deps, runSlots: store });
  const alice = await world.actor('alice');
  const carol = await world.actor('carol');
  await world.deployedApp(alice);
  await useCases.grantPermission.execute(alice, 'myapp', { username: 'carol' });
  world.scheduler.clearCalls();
  return { world, store, useCases, alice, carol };
}

/** Takes a slot of `username` as another controller's run would, live for 60 s. */
async function holdElsewhere(world: World, store: InMemoryBuildSlotStore, id: string, username = 'alice'): Promise<void> {
  const now = world.clock.now();
  await store.acquire({ build: id, username, started: now, expires: new Date(now.getTime() + 60_000) }, 100, now);
}

const runCalls = (world: World): number => world.scheduler.calls.filter((call) => call.method === 'run').length;

describe('one-off processes per owner (QUOTA_RUNS_PER_USER)', () => {
  it('refuses a run past the owner\'s quota with TooMany RUN.TOO_MANY, charged to the owner whoever runs it; nothing runs or is recorded', async () => {
    const { world, store, useCases, carol } = await setup();
    await holdElsewhere(world, store, 'other-1');
    await holdElsewhere(world, store, 'other-2');

    const error = await rejectionOf(useCases.runCommand.execute(carol, 'myapp', { command: 'ls' }));

    expect(error).toBeInstanceOf(TooMany);
    expect(error.code).toBe('RUN.TOO_MANY');
    expect(error.message).toContain('already run 2 one-off processes');
    expect(runCalls(world)).toBe(0);
    expect(world.uow.snapshot().containers.filter((c) => c.type === 'run')).toEqual([]);
    // Another owner's slots are their own.
    await holdElsewhere(world, store, 'bob-1', 'bob');
    expect(store.of('alice')).toBe(2);
  });

  it('holds a slot while the run runs and gives it back after, also when the scheduler fails', async () => {
    const { world, store, useCases, alice } = await setup();
    let heldDuringRun = -1;
    world.scheduler.setRunResult(() => {
      heldDuringRun = store.of('alice');
      return { exitCode: 0, output: 'ok' };
    });

    await useCases.runCommand.execute(alice, 'myapp', { command: 'ls' });
    expect(heldDuringRun).toBe(1);
    expect(store.of('alice')).toBe(0);

    world.scheduler.failRuns(1);
    await expect(useCases.runCommand.execute(alice, 'myapp', { command: 'ls' })).rejects.toMatchObject({ code: 'SCHEDULER.FAILED' });
    expect(store.of('alice')).toBe(0);
  });

  it('takes over a slot whose controller stopped renewing it once it expired', async () => {
    const { world, store, useCases, alice } = await setup();
    await holdElsewhere(world, store, 'dead-1');
    await holdElsewhere(world, store, 'dead-2');
    await expect(useCases.runCommand.execute(alice, 'myapp', { command: 'ls' })).rejects.toBeInstanceOf(TooMany);

    world.clock.advanceSeconds(61);

    await expect(useCases.runCommand.execute(alice, 'myapp', { command: 'ls' })).resolves.toMatchObject({ exitCode: 0 });
  });

  it('counts release phases: a deploy whose release phase finds the quota full is refused with nothing released', async () => {
    const { world, store, useCases, alice } = await setup();
    await holdElsewhere(world, store, 'other-1');
    await holdElsewhere(world, store, 'other-2');
    const before = world.releaseVersions();

    const error = await rejectionOf(useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v2', procfile: { web: 'node server.js', release: 'migrate' } }));

    expect(error.code).toBe('RUN.TOO_MANY');
    expect(runCalls(world)).toBe(0);
    expect(world.releaseVersions()).toEqual(before);
    await store.release('other-1');
    await expect(useCases.createBuild.execute(alice, 'myapp', { image: 'example/myapp:v2', procfile: { web: 'node server.js', release: 'migrate' } })).resolves.toBeDefined();
    expect(runCalls(world)).toBe(1);
    expect(store.of('alice')).toBe(1);
  });

  it('without a shared store, counts the runs and release phases of one unit of work together in memory', async () => {
    const world = new World({ runsPerUser: 1 });
    const alice = await world.actor('alice');
    await world.deployedApp(alice);
    const release = await runSlotsOf(world.deps).take('alice', 1);

    await expect(world.useCases.runCommand.execute(alice, 'myapp', { command: 'ls' })).rejects.toMatchObject({ code: 'RUN.TOO_MANY' });
    await expect(world.useCases.createBuild.execute(alice, 'myapp', { image: 'x/y:2', procfile: { web: 'a', release: 'b' } })).rejects.toMatchObject({ code: 'RUN.TOO_MANY' });
    await release();
    await expect(world.useCases.runCommand.execute(alice, 'myapp', { command: 'ls' })).resolves.toMatchObject({ exitCode: 0 });
  });
});
