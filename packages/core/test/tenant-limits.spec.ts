import {
  DEFAULT_SETTINGS,
  EscapingLogStore,
  QuotaExceeded,
  TooMany,
  Unavailable,
  assertConfigQuota,
  assertStructureQuota,
  configSize,
  escapeLogText,
  formatLogLine,
} from '@svc/core';
import { InMemoryLogStore } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const PROCFILE = { web: 'node server.js', worker: 'node worker.js', clock: 'node clock.js' };
const quotas = (overrides: Partial<typeof DEFAULT_SETTINGS.quotas>) => ({ ...DEFAULT_SETTINGS.quotas, ...overrides });

describe('quota rules', () => {
  it('counts config size as the UTF-8 bytes of keys and values', () => {
    expect(configSize({ AB: 'xyz', E: 'é', SMILE: '😀' })).toBe(2 + 3 + 1 + 2 + 5 + 4);
  });

  it('lets a change that shrinks an oversized config or structure through', () => {
    const limits = quotas({ configBytes: 4, processesPerApp: 2 });
    expect(() => assertConfigQuota({ A: '1234' }, limits, { A: '123456' })).not.toThrow();
    expect(() => assertConfigQuota({ A: '1234' }, limits, { A: '12' })).toThrow(QuotaExceeded);
    expect(() => assertStructureQuota({ web: 3 }, limits, { web: 5 })).not.toThrow();
    expect(() => assertStructureQuota({ web: 3 }, limits, { web: 2 })).toThrow(QuotaExceeded);
  });

  it('does not count process types scaled to 0', () => {
    expect(() => assertStructureQuota({ web: 1, worker: 0, clock: 0 }, quotas({ processTypesPerApp: 1 }))).not.toThrow();
  });
});

describe('quotas in the use cases', () => {
  it('apps per user: the limit is reached, one more is QuotaExceeded and nothing is created; another user still creates', async () => {
    const world = new World({ quotas: quotas({ appsPerUser: 2 }) });
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.app(alice, 'one');
    await world.app(alice, 'two');

    const error = await rejectionOf(world.app(alice, 'three'));

    expect(error).toBeInstanceOf(QuotaExceeded);
    expect(error).toMatchObject({ code: 'QUOTA.EXCEEDED', kind: 'forbidden', quota: 'apps_per_user', limit: 2 });
    expect(world.uow.snapshot().apps.map((a) => a.id)).toEqual(['one', 'two']);
    await expect(world.app(bob, 'three')).resolves.toMatchObject({ owner: 'bob' });
  });

  it('processes per app: scaling past it is refused and nothing starts', async () => {
    const world = new World({ quotas: quotas({ processesPerApp: 4 }) });
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'myapp', PROCFILE);
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 2, worker: 2 });
    const before = world.recordedContainers();

    const error = await rejectionOf(world.useCases.scaleApp.execute(alice, 'myapp', { web: 3 }));

    expect(error).toMatchObject({ quota: 'processes_per_app', limit: 4 });
    expect(world.recordedContainers()).toEqual(before);
    expect(world.uow.snapshot().apps[0]?.structure).toEqual({ web: 2, worker: 2 });
  });

  it('process types per app: a third type is refused when two are allowed', async () => {
    const world = new World({ quotas: quotas({ processTypesPerApp: 2 }) });
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'myapp', PROCFILE);
    await world.useCases.scaleApp.execute(alice, 'myapp', { worker: 1 });

    expect(await rejectionOf(world.useCases.scaleApp.execute(alice, 'myapp', { clock: 1 }))).toMatchObject({ quota: 'process_types_per_app' });
    await expect(world.useCases.scaleApp.execute(alice, 'myapp', { web: 0, clock: 1 })).resolves.toBeUndefined();
  });

  it("processes per user: the owner's apps together, charged to the owner even when a collaborator scales", async () => {
    const world = new World({ quotas: quotas({ processesPerUser: 5 }) });
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.deployedApp(alice, 'one', PROCFILE);
    await world.deployedApp(alice, 'two', PROCFILE);
    await world.deployedApp(bob, 'bobs', PROCFILE);
    await world.useCases.grantPermission.execute(alice, 'two', { username: 'bob' });
    await world.useCases.scaleApp.execute(alice, 'one', { web: 3 });
    await world.useCases.scaleApp.execute(bob, 'bobs', { web: 5 });

    expect(await rejectionOf(world.useCases.scaleApp.execute(bob, 'two', { web: 3 }))).toMatchObject({ quota: 'processes_per_user', limit: 5 });
    await expect(world.useCases.scaleApp.execute(bob, 'two', { web: 2 })).resolves.toBeUndefined();
  });

  it("a change that adds no process passes the owner's quota without reading the owner's other apps, even past the quota", async () => {
    const world = new World({ quotas: quotas({ processesPerUser: 5 }) });
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'one', PROCFILE);
    await world.useCases.scaleApp.execute(alice, 'one', { web: 5 });
    await world.deployedApp(alice, 'two', PROCFILE).catch(() => undefined);
    const listing = jest.spyOn(world.uow.repositories.apps, 'listVisibleTo');

    await world.useCases.setConfig.execute(alice, 'one', { values: { A: '1' } });
    await world.useCases.scaleApp.execute(alice, 'one', { web: 4 });
    expect(listing).not.toHaveBeenCalled();
    expect(world.recordedContainers('one')).toHaveLength(4);

    await world.useCases.scaleApp.execute(alice, 'one', { web: 5 });
    expect(listing).toHaveBeenCalled();
  });

  it('config size: a change past the limit is refused and no release is made', async () => {
    const world = new World({ quotas: quotas({ configBytes: 20 }) });
    const alice = await world.actor('alice');
    await world.app(alice, 'myapp');
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { KEY: '0123456789' } });
    const releases = world.uow.snapshot().releases.length;

    const error = await rejectionOf(world.useCases.setConfig.execute(alice, 'myapp', { values: { OTHER: 'abcdefghij' } }));

    expect(error).toMatchObject({ quota: 'config_bytes', limit: 20 });
    expect(world.uow.snapshot().releases.length).toBe(releases);
  });

  it('domains per app: the next domain is refused', async () => {
    const world = new World({ quotas: quotas({ domainsPerApp: 1 }) });
    const alice = await world.actor('alice');
    await world.app(alice, 'myapp');
    await world.useCases.addDomain.execute(alice, 'myapp', { domain: 'one.example.com' });

    expect(await rejectionOf(world.useCases.addDomain.execute(alice, 'myapp', { domain: 'two.example.com' }))).toMatchObject({ quota: 'domains_per_app' });
    expect(world.uow.snapshot().domains.map((d) => d.domain)).toEqual(['one.example.com']);
  });
});

describe('quotas under concurrency and on first deploys', () => {
  it('the process a first deploy starts by default counts against processes per user: past it, refused with nothing recorded or running', async () => {
    const world = new World({ quotas: quotas({ processesPerUser: 2 }) });
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'one');
    await world.deployedApp(alice, 'two', { worker: 'node worker.js' });
    await world.app(alice, 'three');
    const builds = world.uow.snapshot().builds.length;

    const error = await rejectionOf(world.useCases.createBuild.execute(alice, 'three', { image: 'example/three:v1', procfile: { web: 'serve' } }));

    expect(error).toMatchObject({ code: 'QUOTA.EXCEEDED', quota: 'processes_per_user', limit: 2 });
    expect(world.releaseVersions('three')).toEqual([1]);
    expect(world.uow.snapshot().builds.length).toBe(builds);
    expect(world.recordedContainers('three')).toEqual([]);
    expect(world.runningContainers('three')).toEqual([]);
    expect(world.uow.snapshot().apps.find((a) => a.id === 'three')?.structure).toEqual({});
    // Scaling one app down frees the place for the first deploy.
    await world.useCases.scaleApp.execute(alice, 'one', { web: 0 });
    await expect(world.useCases.createBuild.execute(alice, 'three', { image: 'example/three:v1', procfile: { web: 'serve' } })).resolves.toBeDefined();
  });

  it('concurrent first deploys of 12 apps against processes per user of 5: exactly 5 run, the others are refused and leave nothing', async () => {
    const world = new World({ quotas: quotas({ processesPerUser: 5 }) });
    const alice = await world.actor('alice');
    for (let i = 0; i < 12; i++) await world.app(alice, `app-${i}`);

    const outcomes = await Promise.allSettled(
      Array.from({ length: 12 }, (_, i) => world.useCases.createBuild.execute(alice, `app-${i}`, { image: `example/app-${i}:v1`, procfile: { web: 'serve' } })),
    );

    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(5);
    for (const outcome of outcomes) if (outcome.status === 'rejected') expect(outcome.reason).toMatchObject({ quota: 'processes_per_user' });
    const structures = world.uow.snapshot().apps.map((a) => a.structure.web ?? 0);
    expect(structures.reduce((sum, n) => sum + n, 0)).toBe(5);
    expect(world.uow.snapshot().containers).toHaveLength(5);
    expect(world.scheduler.running()).toHaveLength(5);
  });

  it('concurrent scales of different apps against processes per user: the total is exactly the quota', async () => {
    const world = new World({ quotas: quotas({ processesPerUser: 14 }) });
    const alice = await world.actor('alice');
    for (let i = 0; i < 10; i++) await world.deployedApp(alice, `app-${i}`);

    const outcomes = await Promise.allSettled(
      Array.from({ length: 10 }, (_, i) => world.useCases.scaleApp.execute(alice, `app-${i}`, { web: 3 })),
    );

    // 10 running, each scale adds 2: two succeed (14), the rest would pass it.
    expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(2);
    const total = world.uow.snapshot().apps.reduce((sum, a) => sum + (a.structure.web ?? 0), 0);
    expect(total).toBe(14);
    expect(world.scheduler.running()).toHaveLength(14);
  });
});

describe('log followers', () => {
  it('each user holds at most logFollowersPerUser streams; closing one frees a place; others are not affected', async () => {
    const world = new World({ logFollowersPerUser: 2 });
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.app(alice, 'myapp');
    await world.app(bob, 'bobs');
    const first = await world.useCases.followLogs.execute(alice, 'myapp', undefined, () => undefined);
    await world.useCases.followLogs.execute(alice, 'myapp', undefined, () => undefined);

    const error = await rejectionOf(world.useCases.followLogs.execute(alice, 'myapp', undefined, () => undefined));
    expect(error).toBeInstanceOf(TooMany);
    expect(error).toMatchObject({ code: 'LOGS.TOO_MANY_FOLLOWERS', kind: 'throttled' });
    await expect(world.useCases.followLogs.execute(bob, 'bobs', undefined, () => undefined)).resolves.toBeDefined();

    first.unsubscribe();
    first.unsubscribe();
    await expect(world.useCases.followLogs.execute(alice, 'myapp', undefined, () => undefined)).resolves.toBeDefined();
    expect(await rejectionOf(world.useCases.followLogs.execute(alice, 'myapp', undefined, () => undefined))).toBeInstanceOf(TooMany);
  });

  it('past logFollowersTotal every user is refused with Unavailable', async () => {
    const world = new World({ logFollowersTotal: 1 });
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.app(alice, 'myapp');
    await world.app(bob, 'bobs');
    await world.useCases.followLogs.execute(alice, 'myapp', undefined, () => undefined);

    expect(await rejectionOf(world.useCases.followLogs.execute(bob, 'bobs', undefined, () => undefined))).toBeInstanceOf(Unavailable);
  });

  it('a refused or failed follow does not hold a place', async () => {
    const world = new World({ logFollowersPerUser: 1 });
    const alice = await world.actor('alice');
    await world.app(alice, 'myapp');
    await rejectionOf(world.useCases.followLogs.execute(alice, 'nope', undefined, () => undefined));
    await rejectionOf(world.useCases.followLogs.execute(alice, 'myapp', '0', () => undefined));

    await expect(world.useCases.followLogs.execute(alice, 'myapp', undefined, () => undefined)).resolves.toBeDefined();
  });
});

describe('log control characters', () => {
  it('escapes C0 (but tab), DEL, C1 and bidirectional controls as \\xNN or \\uNNNN, and keeps printable Unicode', () => {
    expect(escapeLogText('a\x1b[31mred\rsvc[api]: x\n\x00\x7f\x9b\tok')).toBe('a\\x1b[31mred\\x0dsvc[api]: x\\x0a\\x00\\x7f\\x9b\tok');
    expect(escapeLogText('abc\u202edcba\u2028')).toBe('abc\\u202edcba\\u2028');
    expect(escapeLogText('héllo 世界 😀 \\x1b')).toBe('héllo 世界 😀 \\x1b');
    expect(escapeLogText(escapeLogText('\x1b\r'))).toBe('\\x1b\\x0d');
  });

  it('EscapingLogStore stores, serves and streams escaped source and message', async () => {
    const inner = new InMemoryLogStore();
    const store = new EscapingLogStore(inner);
    const heard: string[] = [];
    store.subscribe('myapp', (entries) => heard.push(...entries.map((e) => e.message)));
    const time = new Date('2026-11-25T10:00:00Z');

    await store.append('myapp', [{ time, source: 'myapp[web.1]', message: 'ok\r2026-11-25T10:00:00UTC svc[api]: alice deleted myapp\x1b[2K' }]);

    const escaped = 'ok\\x0d2026-11-25T10:00:00UTC svc[api]: alice deleted myapp\\x1b[2K';
    expect(inner.messages('myapp')).toEqual([escaped]);
    expect(heard).toEqual([escaped]);
    expect((await store.tail('myapp', 10)).map(formatLogLine)).toEqual([`2026-11-25T10:00:00UTC myapp[web.1]: ${escaped}`]);
  });

  it('platform lines quoting user input are escaped too', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice, 'myapp', PROCFILE);

    await world.useCases.runCommand.execute(alice, 'myapp', { command: 'ls\n2026 svc[api]: root granted' });

    expect(world.logs.messages('myapp')).toContain("alice runs 'ls\\x0a2026 svc[api]: root granted'");
  });
});
