import { RecoverDeploys, Unavailable, jittered } from '@svc/core';
import type { Actor, DeployLease } from '@svc/core';
import { SeededRandom } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const PAGE = { page: 1, pageSize: 100 };

/** Whether a promise has settled, without waiting for it. */
function tracked<T>(promise: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let settled = false;
  const watched = promise.finally(() => {
    settled = true;
  });
  // The test awaits it later; an early rejection must not count as unhandled meanwhile.
  watched.catch(() => undefined);
  return { promise: watched, settled: () => settled };
}

/** Lets every callback already queued run (the in-memory fakes answer without timers); no time passes. */
async function settle(): Promise<void> {
  for (let round = 0; round < 5; round++) await new Promise((resolve) => setImmediate(resolve));
}

/** Alice deploys `slow` (one web), Bob deploys `quick` (one web). */
async function twoTenants(): Promise<{ world: World; alice: Actor; bob: Actor }> {
  const world = new World();
  const alice = await world.actor('alice');
  const bob = await world.actor('bob');
  await world.deployedApp(alice, 'slow');
  await world.deployedApp(bob, 'quick');
  return { world, alice, bob };
}

function aLease(world: World, app: string, overrides: Partial<DeployLease> = {}): DeployLease {
  const now = world.clock.now();
  return {
    app,
    holder: 'dead-controller',
    version: 3,
    containers: [],
    started: now,
    heartbeat: now,
    expires: new Date(now.getTime() + 30_000),
    ...overrides,
  };
}

describe('deploys under the app lease', () => {
  it('a config change on another app completes while a deploy waits for its containers', async () => {
    const { world, alice, bob } = await twoTenants();
    const hold = world.scheduler.holdStartsOf((spec) => spec.app === 'slow');

    const slow = tracked(world.useCases.setConfig.execute(alice, 'slow', { values: { A: '1' } }));
    await hold.reached;
    const quick = await world.useCases.setConfig.execute(bob, 'quick', { values: { B: '1' } });

    expect(quick.release.version).toBe(3);
    expect(world.runningContainers('quick')).toEqual(['web.1@v3']);
    expect(slow.settled()).toBe(false);
    hold.release();
    expect((await slow.promise).release.version).toBe(3);
    expect(world.runningContainers('slow')).toEqual(['web.1@v3']);
  });

  it('scale, restart, delete and creating apps on other apps complete while a deploy is pending', async () => {
    const { world, alice, bob } = await twoTenants();
    const hold = world.scheduler.holdStartsOf((spec) => spec.app === 'slow');
    const slow = tracked(world.useCases.createBuild.execute(alice, 'slow', { image: 'example/slow:v2', procfile: { web: 'x' } }));
    await hold.reached;

    await world.useCases.scaleApp.execute(bob, 'quick', { web: 3 });
    await world.useCases.restartContainers.execute(bob, 'quick', { type: 'web', num: 1 });
    await world.app(bob, 'doomed');
    await world.useCases.deleteApp.execute(bob, 'doomed');

    expect(world.runningContainers('quick')).toEqual(['web.1@v2', 'web.2@v2', 'web.3@v2']);
    expect(slow.settled()).toBe(false);
    hold.release();
    await slow.promise;
  });

  it('a pending release is invisible: releases, builds, config, containers and the app stay as they were', async () => {
    const { world, alice } = await twoTenants();
    const hold = world.scheduler.holdStartsOf((spec) => spec.app === 'slow');
    const before = {
      releases: await world.useCases.listReleases.execute(alice, 'slow', PAGE),
      builds: await world.useCases.listBuilds.execute(alice, 'slow', PAGE),
      config: await world.useCases.getConfig.execute(alice, 'slow'),
      containers: await world.useCases.listContainers.execute(alice, 'slow', undefined, PAGE),
      app: await world.useCases.getApp.execute(alice, 'slow'),
    };

    const slow = tracked(world.useCases.createBuild.execute(alice, 'slow', { image: 'example/slow:v2', procfile: { web: 'x', worker: 'y' } }));
    await hold.reached;

    expect(await world.useCases.listReleases.execute(alice, 'slow', PAGE)).toEqual(before.releases);
    expect(await world.useCases.listBuilds.execute(alice, 'slow', PAGE)).toEqual(before.builds);
    expect(await world.useCases.getConfig.execute(alice, 'slow')).toEqual(before.config);
    expect(await world.useCases.listContainers.execute(alice, 'slow', undefined, PAGE)).toEqual(before.containers);
    expect(await world.useCases.getApp.execute(alice, 'slow')).toEqual(before.app);
    expect(await world.uow.repositories.releases.findByVersion('slow', 3)).toBeNull();
    // What is pending is in the lease only: the version, and the container being started.
    const lease = await world.uow.repositories.deploys.find('slow');
    expect(lease).toMatchObject({ app: 'slow', version: 3 });
    expect(lease?.containers).toHaveLength(1);
    hold.release();
    await slow.promise;
    expect((await world.useCases.listReleases.execute(alice, 'slow', PAGE)).count).toBe(3);
    expect(await world.uow.repositories.deploys.find('slow')).toBeNull();
  });

  it('concurrent deploys of one app run one at a time and keep versions contiguous', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'myapp');

    const changes = Array.from({ length: 12 }, (_, i) =>
      i % 3 === 2
        ? world.useCases.scaleApp.execute(alice, 'myapp', { web: (i % 4) + 1 })
        : world.useCases.setConfig.execute(alice, 'myapp', { values: { [`K${i}`]: String(i) } }),
    );
    await Promise.all(changes);

    expect(world.releaseVersions('myapp')).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    const config = await world.useCases.getConfig.execute(alice, 'myapp');
    expect(Object.keys(config.config.values)).toHaveLength(8);
    // Every container of the last release runs, and nothing else does.
    expect(world.runningContainers('myapp')).toEqual(world.recordedContainers('myapp'));
    expect(world.recordedContainers('myapp').every((c) => c.endsWith('@v10'))).toBe(true);
    expect(await world.uow.repositories.deploys.list()).toEqual([]);
  });

  it('a deploy whose containers fail leaves no release, no config, no container and no lease, and answers 503', async () => {
    const { world, alice } = await twoTenants();
    await world.useCases.scaleApp.execute(alice, 'slow', { web: 3 });
    world.scheduler.failStartOf((spec) => spec.app === 'slow' && spec.num === 3);
    const before = world.uow.snapshot();
    const running = world.runningContainers('slow');

    const error = await rejectionOf(world.useCases.setConfig.execute(alice, 'slow', { values: { A: '1' } }));

    expect(error).toBeInstanceOf(Unavailable);
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.runningContainers('slow')).toEqual(running);
  });

  it('a failed scale-up leaves the structure, the containers and the lease as they were', async () => {
    const { world, alice } = await twoTenants();
    world.scheduler.failStartOf((spec) => spec.num === 4);
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.scaleApp.execute(alice, 'slow', { web: 5 }));

    expect(error.code).toBe('SCHEDULER.FAILED');
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.runningContainers('slow')).toEqual(['web.1@v2']);
  });

  it('the holder renews its lease every third of its duration while the scheduler works, keeping the containers it listed', async () => {
    const world = new World({ deployLeaseSeconds: 30 });
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'slow');
    const hold = world.scheduler.holdStartsOf((spec) => spec.app === 'slow');
    const slow = tracked(world.useCases.setConfig.execute(alice, 'slow', { values: { A: '1' } }));
    await hold.reached;
    const taken = await world.uow.repositories.deploys.find('slow');
    const listed = taken?.containers;

    // Just short of a third of the lease: no renewal yet.
    world.clock.advance(9_999);
    await settle();
    expect((await world.uow.repositories.deploys.find('slow'))?.heartbeat).toEqual(taken?.heartbeat);

    world.clock.advance(1);
    await settle();
    const renewed = await world.uow.repositories.deploys.find('slow');

    expect(renewed?.heartbeat).toEqual(world.clock.now());
    expect(renewed?.expires).toEqual(new Date(world.clock.now().getTime() + 30_000));
    expect(renewed?.containers).toEqual(listed);
    expect(listed).toHaveLength(1);
    hold.release();
    expect((await slow.promise).release.version).toBe(3);
  });

  it('a deploy whose lease was taken over meanwhile publishes nothing and stops what it started', async () => {
    const { world, alice } = await twoTenants();
    const hold = world.scheduler.holdStartsOf((spec) => spec.app === 'slow');
    const before = world.uow.snapshot();
    const slow = tracked(world.useCases.setConfig.execute(alice, 'slow', { values: { A: '1' } }));
    await hold.reached;
    const mine = await world.uow.repositories.deploys.find('slow');
    // Another process decided this one was dead, and took the app over.
    await world.uow.repositories.deploys.replace(mine!.holder, { ...mine!, holder: 'another-controller', containers: [] });

    hold.release();
    const error = await rejectionOf(slow.promise);

    expect(error.code).toBe('DEPLOY.LEASE_LOST');
    expect(world.runningContainers('slow')).toEqual(['web.1@v2']);
    expect(world.releaseVersions('slow')).toEqual(before.releases.filter((r) => r.app === 'slow').map((r) => r.version));
    expect(await world.uow.repositories.deploys.find('slow')).toMatchObject({ holder: 'another-controller' });
  });

  it('an expired lease left by a dead controller is taken over: its containers stop, then the deploy goes on', async () => {
    const { world, alice } = await twoTenants();
    await world.scheduler.start({ ...world.scheduler.running()[0]!.spec, id: 'orphan-1', num: 9 });
    await world.uow.repositories.deploys.insert(aLease(world, 'slow', { containers: ['orphan-1'], expires: world.clock.now() }));

    const published = await world.useCases.setConfig.execute(alice, 'slow', { values: { A: '1' } });

    expect(published.release.version).toBe(3);
    expect(world.scheduler.stopped()).toContain('orphan-1');
    expect(world.runningContainers('slow')).toEqual(['web.1@v3']);
    expect(await world.uow.repositories.deploys.find('slow')).toBeNull();
    expect((await world.logs.tail('slow', 10)).map((e) => e.message)).toContain('cleaned up an interrupted deploy of v3: stopped 1 container(s)');
  });

  it('a live lease of another controller process makes a deploy wait until it is gone', async () => {
    const { world, alice } = await twoTenants();
    await world.uow.repositories.deploys.insert(aLease(world, 'slow'));

    const waiting = tracked(world.useCases.setConfig.execute(alice, 'slow', { values: { A: '1' } }));
    await settle();
    expect(world.clock.pendingTimers).toBe(1);
    // Polls again and again, at most every 300 ms (200 ms with jitter), while the lease lives.
    for (let polls = 0; polls < 10; polls++) {
      world.clock.advance(300);
      await settle();
      expect(world.clock.pendingTimers).toBe(1);
    }
    expect(waiting.settled()).toBe(false);
    expect(world.releaseVersions('slow')).toEqual([1, 2]);
    await world.uow.repositories.deploys.remove('slow', 'dead-controller');
    world.clock.advance(300);

    expect((await waiting.promise).release.version).toBe(3);
    expect(world.clock.pendingTimers).toBe(0);
  });

  it('a failed app deletion keeps the app, restarts what it stopped and leaves no lease', async () => {
    const { world, alice } = await twoTenants();
    await world.useCases.scaleApp.execute(alice, 'slow', { web: 2 });
    world.scheduler.failStops(1);
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.deleteApp.execute(alice, 'slow'));

    expect(error.code).toBe('SCHEDULER.FAILED');
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.runningContainers('slow')).toEqual(['web.1@v2', 'web.2@v2']);
  });
});

describe('RecoverDeploys', () => {
  it('with all, stops the containers of every lease and removes it; nothing else changes', async () => {
    const { world } = await twoTenants();
    const spec = world.scheduler.running()[0]!.spec;
    await world.scheduler.start({ ...spec, id: 'orphan-1' });
    await world.scheduler.start({ ...spec, id: 'orphan-2' });
    await world.uow.repositories.deploys.insert(aLease(world, 'slow', { containers: ['orphan-1', 'orphan-2'] }));
    await world.uow.repositories.deploys.insert(aLease(world, 'quick', { version: null, containers: [] }));
    const { deploys: _deploys, ...before } = world.uow.snapshot();

    const result = await new RecoverDeploys(world.deps).execute({ all: true });

    expect(result).toEqual({ recovered: 2 });
    expect(world.scheduler.running().map((c) => c.id)).not.toContain('orphan-1');
    expect(world.scheduler.running().map((c) => c.id)).not.toContain('orphan-2');
    const { deploys, ...after } = world.uow.snapshot();
    expect(deploys).toEqual([]);
    expect(after).toEqual(before);
    expect(world.runningContainers('slow')).toEqual(['web.1@v2']);
  });

  it('without all, leaves leases that are still being renewed', async () => {
    const { world } = await twoTenants();
    const live = aLease(world, 'slow', { holder: 'live' });
    await world.uow.repositories.deploys.insert(live);
    await world.uow.repositories.deploys.insert(aLease(world, 'quick', { expires: world.clock.now() }));

    const result = await new RecoverDeploys(world.deps).execute({ all: false });

    expect(result).toEqual({ recovered: 1 });
    expect(await world.uow.repositories.deploys.list()).toEqual([live]);
  });

  it('keeps a lease whose containers cannot be stopped, expired, for the next attempt', async () => {
    const { world } = await twoTenants();
    await world.uow.repositories.deploys.insert(aLease(world, 'slow', { containers: ['stuck'] }));
    world.scheduler.failStops(1);

    const result = await new RecoverDeploys(world.deps).execute({ all: true });

    expect(result).toEqual({ recovered: 0 });
    const kept = await world.uow.repositories.deploys.find('slow');
    expect(kept?.containers).toEqual(['stuck']);
    expect(kept!.expires.getTime()).toBeLessThanOrEqual(world.clock.now().getTime());
    expect(await new RecoverDeploys(world.deps).execute({ all: false })).toEqual({ recovered: 1 });
    expect(await world.uow.repositories.deploys.list()).toEqual([]);
  });
});

describe('jittered', () => {
  it('waits from half to one and a half times the delay, as the random source draws', () => {
    const random = new SeededRandom();
    random.force(0, 9, 199);

    expect(jittered(10, random)).toBe(5);
    expect(jittered(10, random)).toBe(14);
    expect(jittered(200, random)).toBe(299);
  });
});


describe('config changes that start no container', () => {
  it('of an app without a build are made in one transaction, which holds the lease and leaves none', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice, 'plain');
    const transaction = jest.spyOn(world.uow, 'transaction');

    const published = await world.useCases.setConfig.execute(alice, 'plain', { values: { A: '1' } });

    expect(transaction).toHaveBeenCalledTimes(1);
    expect(published.release.version).toBe(2);
    expect(published.config.values).toEqual({ A: '1' });
    expect(world.releaseVersions('plain')).toEqual([1, 2]);
    expect(await world.uow.repositories.deploys.list()).toEqual([]);
    expect((await world.logs.tail('plain', 1)).map((e) => e.message)).toEqual([published.release.summary]);
  });

  it('of an app whose containers run, take the lease outside the transaction and restart them as before', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'busy');

    const published = await world.useCases.setConfig.execute(alice, 'busy', { values: { A: '1' } });

    expect(published.release.version).toBe(3);
    expect(world.runningContainers('busy')).toEqual(['web.1@v3']);
    expect(await world.uow.repositories.deploys.list()).toEqual([]);
  });

  it('that fail inside the transaction leave nothing written: no release, no config, no journal entry, no lease', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice, 'plain');
    const before = world.uow.snapshot();
    const stale = { ...alice, request: { id: 'r', address: '', ifMatch: '"not-the-current-config"' } };

    const error = await rejectionOf(world.useCases.setConfig.execute(stale, 'plain', { values: { A: '1' } }));

    expect(error.code).toBe('REQUEST.PRECONDITION_FAILED');
    expect(world.uow.snapshot()).toEqual(before);
  });

  it('wait while another controller process holds the app lease, then publish once it is gone', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice, 'plain');
    await world.uow.repositories.deploys.insert(aLease(world, 'plain'));

    const waiting = tracked(world.useCases.setConfig.execute(alice, 'plain', { values: { A: '1' } }));
    await settle();
    world.clock.advance(300);
    await settle();
    expect(waiting.settled()).toBe(false);
    expect(world.releaseVersions('plain')).toEqual([1]);
    await world.uow.repositories.deploys.remove('plain', 'dead-controller');
    world.clock.advance(300);

    expect((await waiting.promise).release.version).toBe(2);
    expect(world.releaseVersions('plain')).toEqual([1, 2]);
    expect(await world.uow.repositories.deploys.list()).toEqual([]);
  });

  it('in one transaction keep the order of concurrent changes and contiguous versions', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice, 'plain');

    const results = await Promise.all([1, 2, 3, 4].map((n) => world.useCases.setConfig.execute(alice, 'plain', { values: { [`K${n}`]: `${n}` } })));

    expect(results.map((r) => r.release.version)).toEqual([2, 3, 4, 5]);
    expect(results[3]?.config.values).toEqual({ K1: '1', K2: '2', K3: '3', K4: '4' });
  });
});
