import { AlreadyExists, AppNotVisible, Forbidden, NotFound, Unavailable, ValidationFailed } from '@svc/core';
import type { Actor, UseCases } from '@svc/core';
import { FAKE_NOW } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const PAGE = { page: 1, pageSize: 100 };

describe('CreateApp', () => {
  it('creates the app owned by the caller, unscaled, stamped with the clock', async () => {
    const world = new World();
    const alice = await world.actor('alice');

    const app = await world.useCases.createApp.execute(alice, { id: 'myapp' });

    expect(app).toEqual({
      uuid: expect.stringMatching(/^[0-9a-f-]{36}$/),
      id: 'myapp',
      owner: 'alice',
      structure: {},
      created: new Date(FAKE_NOW),
      updated: new Date(FAKE_NOW),
    });
    expect(world.uow.snapshot().apps).toEqual([app]);
  });

  it('creates, in the same transaction, an empty config and release v1 without a build, "alice created initial release"', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    const committedBefore = world.uow.stats.committed;

    await world.useCases.createApp.execute(alice, { id: 'myapp' });

    const state = world.uow.snapshot();
    expect(world.uow.stats.committed - committedBefore).toBe(1);
    expect(state.configs).toEqual([
      expect.objectContaining({ app: 'myapp', owner: 'alice', values: {}, memory: {}, cpu: {}, tags: {} }),
    ]);
    expect(state.releases).toEqual([
      expect.objectContaining({
        app: 'myapp',
        owner: 'alice',
        version: 1,
        build: null,
        config: state.configs[0]?.uuid,
        summary: 'alice created initial release',
      }),
    ]);
  });

  it('writes the creation to the app log', async () => {
    const world = new World();
    const alice = await world.actor('alice');

    await world.app(alice);

    expect(world.logs.entries('myapp')).toEqual([
      { time: new Date(FAKE_NOW), source: 'svc[api]', message: 'alice created initial release' },
    ]);
  });

  it('GetConfig of a fresh app is the empty config of release v1', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice);

    const { config, release, build } = await world.useCases.getConfig.execute(alice, 'myapp');

    expect(release.version).toBe(1);
    expect(build).toBeNull();
    expect(config).toMatchObject({ values: {}, memory: {}, cpu: {}, tags: {} });
  });

  it.each([[undefined], [{}], [{ id: null }]])('without an id (%p) generates an unused <adjective>-<noun> name', async (body) => {
    const world = new World();
    const alice = await world.actor('alice');
    world.random.force(14, 24);

    const app = await world.useCases.createApp.execute(alice, body);

    expect(app.id).toBe('dusty-lantern');
    expect(world.releaseVersions('dusty-lantern')).toEqual([1]);
  });

  it('draws another name when the generated one is taken', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice, 'dusty-lantern');
    world.random.force(14, 24, 0, 0);

    const app = await world.useCases.createApp.execute(alice, {});

    expect(app.id).toBe('amber-anchor');
  });

  it('never generates a reserved name', async () => {
    const world = new World({ reservedAppNames: ['dusty-lantern'] });
    const alice = await world.actor('alice');
    world.random.force(14, 24, 0, 0);

    const app = await world.useCases.createApp.execute(alice, {});

    expect(app.id).toBe('amber-anchor');
  });

  it('gives up with Unavailable, creating nothing, when every generated name is taken', async () => {
    const world = new World({ reservedAppNames: ['dusty-lantern', 'dusty-lantern-0'] });
    const alice = await world.actor('alice');
    for (let attempt = 0; attempt < 10; attempt++) world.random.force(...(attempt < 3 ? [14, 24] : [14, 24, 0]));

    const error = await rejectionOf(world.useCases.createApp.execute(alice, {}));

    expect(error).toBeInstanceOf(Unavailable);
    expect(world.uow.snapshot().apps).toEqual([]);
  });

  it('refuses an invalid id on field id and stores nothing', async () => {
    const world = new World();
    const alice = await world.actor('alice');

    const error = await rejectionOf(world.useCases.createApp.execute(alice, { id: 'My_App' }));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(error.fields?.id?.[0]).toMatch(/^App IDs can only contain \[a-z0-9-\]/);
    expect(world.uow.snapshot().apps).toEqual([]);
  });

  it('refuses a reserved id with "<name> is a reserved name."', async () => {
    const world = new World({ reservedAppNames: ['billing'] });
    const alice = await world.actor('alice');

    const error = await rejectionOf(world.useCases.createApp.execute(alice, { id: 'billing' }));

    expect(error.fields).toEqual({ id: ['billing is a reserved name.'] });
  });

  it('refuses a taken id with AlreadyExists on id, leaving the first app alone', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.app(alice);
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.createApp.execute(bob, { id: 'myapp' }));

    expect(error).toBeInstanceOf(AlreadyExists);
    expect(error.fields).toEqual({ id: ['This field must be unique.'] });
    expect(world.uow.snapshot()).toEqual(before);
  });
});

/** One call per use case that names an app, as `actor` on `appId`. */
function everyAppUseCase(useCases: UseCases, actor: Actor, appId: string): Array<[string, () => Promise<unknown>]> {
  return [
    ['getApp', () => useCases.getApp.execute(actor, appId)],
    ['updateApp', () => useCases.updateApp.execute(actor, appId, { owner: actor.user.username })],
    ['deleteApp', () => useCases.deleteApp.execute(actor, appId)],
    ['getLogs', () => useCases.getLogs.execute(actor, appId, undefined)],
    ['followLogs', () => useCases.followLogs.execute(actor, appId, undefined, () => undefined).then((followed) => followed.unsubscribe())],
    ['runCommand', () => useCases.runCommand.execute(actor, appId, { command: 'ls' })],
    ['listContainers', () => useCases.listContainers.execute(actor, appId, undefined, PAGE)],
    ['scaleApp', () => useCases.scaleApp.execute(actor, appId, { web: 2 })],
    ['restartContainers', () => useCases.restartContainers.execute(actor, appId, {})],
    ['getConfig', () => useCases.getConfig.execute(actor, appId)],
    ['setConfig', () => useCases.setConfig.execute(actor, appId, { values: { FOO: 'bar' } })],
    ['listBuilds', () => useCases.listBuilds.execute(actor, appId, PAGE)],
    ['createBuild', () => useCases.createBuild.execute(actor, appId, { image: 'evil/image' })],
    ['listReleases', () => useCases.listReleases.execute(actor, appId, PAGE)],
    ['getRelease', () => useCases.getRelease.execute(actor, appId, 1)],
    ['rollback', () => useCases.rollback.execute(actor, appId, {})],
    ['listDomains', () => useCases.listDomains.execute(actor, appId, PAGE)],
    ['addDomain', () => useCases.addDomain.execute(actor, appId, { domain: 'evil.example.com' })],
    ['removeDomain', () => useCases.removeDomain.execute(actor, appId, 'www.example.com')],
    ['listPermissions', () => useCases.listPermissions.execute(actor, appId)],
    ['grantPermission', () => useCases.grantPermission.execute(actor, appId, { username: actor.user.username })],
    ['revokePermission', () => useCases.revokePermission.execute(actor, appId, 'carol')],
  ];
}

describe('app visibility', () => {
  let world: World;
  let alice: Actor;
  let bob: Actor;
  let carol: Actor;
  let root: Actor;

  beforeEach(async () => {
    world = new World();
    root = await world.actor('root', { admin: true });
    alice = await world.actor('alice');
    bob = await world.actor('bob');
    carol = await world.actor('carol');
    await world.deployedApp(alice);
    await world.useCases.addDomain.execute(alice, 'myapp', { domain: 'www.example.com' });
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'carol' });
  });

  it('a stranger gets AppNotVisible from every use case on the app, and nothing changes', async () => {
    const before = world.uow.snapshot();
    const startsBefore = world.scheduler.started().length;

    for (const [name, call] of everyAppUseCase(world.useCases, bob, 'myapp')) {
      const error = await rejectionOf(call());
      expect([name, error]).toEqual([name, expect.any(AppNotVisible)]);
      expect(error.kind).toBe('hidden');
    }
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.scheduler.started()).toHaveLength(startsBefore);
  });

  it('an unknown app is NotFound for every use case, for a user and an administrator alike', async () => {
    for (const actor of [bob, root]) {
      for (const [name, call] of everyAppUseCase(world.useCases, actor, 'nosuchapp')) {
        const error = await rejectionOf(call());
        expect([name, error]).toEqual([name, expect.any(NotFound)]);
        expect(error.kind).toBe('not_found');
      }
    }
  });

  it('a collaborator sees the app and may change it', async () => {
    await expect(world.useCases.getApp.execute(carol, 'myapp')).resolves.toMatchObject({ id: 'myapp' });

    const published = await world.useCases.setConfig.execute(carol, 'myapp', { values: { FOO: 'bar' } });

    expect(published.release.summary).toBe('carol added FOO');
  });

  it.each<[string, (u: UseCases, a: Actor) => Promise<unknown>]>([
    ['deleteApp', (u, a) => u.deleteApp.execute(a, 'myapp')],
    ['updateApp (transfer)', (u, a) => u.updateApp.execute(a, 'myapp', { owner: 'carol' })],
    ['grantPermission', (u, a) => u.grantPermission.execute(a, 'myapp', { username: 'bob' })],
    ['revokePermission of another user', (u, a) => u.revokePermission.execute(a, 'myapp', 'dave')],
  ])('a collaborator is Forbidden to %s, and nothing changes', async (_name, call) => {
    await world.actor('dave');
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'dave' });
    const before = world.uow.snapshot();

    const error = await rejectionOf(call(world.useCases, carol));

    expect(error).toBeInstanceOf(Forbidden);
    expect(error.message).toBe('Only the owner of the application or an administrator may do this.');
    expect(world.uow.snapshot()).toEqual(before);
  });

  it('an administrator sees and administers any app', async () => {
    await expect(world.useCases.getApp.execute(root, 'myapp')).resolves.toMatchObject({ owner: 'alice' });
    await world.useCases.grantPermission.execute(root, 'myapp', { username: 'bob' });

    await world.useCases.deleteApp.execute(root, 'myapp');

    expect(world.uow.snapshot().apps).toEqual([]);
  });
});

describe('ListApps', () => {
  it('lists exactly the apps a user owns or collaborates on, by id; administrators see all', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true });
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    const carol = await world.actor('carol');
    await world.app(alice, 'zeta');
    await world.app(alice, 'alpha');
    await world.app(bob, 'bobs');
    await world.useCases.grantPermission.execute(bob, 'bobs', { username: 'alice' });

    const ids = async (actor: Actor) => (await world.useCases.listApps.execute(actor, PAGE)).items.map((a) => a.id);

    expect(await ids(alice)).toEqual(['alpha', 'bobs', 'zeta']);
    expect(await ids(bob)).toEqual(['bobs']);
    expect(await ids(carol)).toEqual([]);
    expect(await ids(root)).toEqual(['alpha', 'bobs', 'zeta']);
  });

  it('pages the list and answers NotFound past the end (page 1 of nothing is fine)', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    expect(await world.useCases.listApps.execute(alice, PAGE)).toEqual({ count: 0, items: [] });
    for (const id of ['a1', 'a2', 'a3']) await world.app(alice, id);

    const second = await world.useCases.listApps.execute(alice, { page: 2, pageSize: 2 });

    expect(second).toMatchObject({ count: 3, items: [expect.objectContaining({ id: 'a3' })] });
    expect(await rejectionOf(world.useCases.listApps.execute(alice, { page: 3, pageSize: 2 }))).toBeInstanceOf(NotFound);
  });
});

describe('UpdateApp (transfer)', () => {
  it('moves the app to the new owner; the previous owner loses access', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.app(alice);
    world.clock.advanceSeconds(30);

    const app = await world.useCases.updateApp.execute(alice, 'myapp', { owner: 'bob' });

    expect(app).toMatchObject({ id: 'myapp', owner: 'bob', updated: world.clock.now() });
    await expect(world.useCases.getApp.execute(bob, 'myapp')).resolves.toMatchObject({ owner: 'bob' });
    expect(await rejectionOf(world.useCases.getApp.execute(alice, 'myapp'))).toBeInstanceOf(AppNotVisible);
    expect(world.logs.messages('myapp')).toContain('alice transferred myapp from alice to bob');
  });

  it('the previous owner keeps access when the new owner grants it', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.app(alice);
    await world.useCases.updateApp.execute(alice, 'myapp', { owner: 'bob' });

    await world.useCases.grantPermission.execute(bob, 'myapp', { username: 'alice' });

    await expect(world.useCases.getApp.execute(alice, 'myapp')).resolves.toMatchObject({ owner: 'bob' });
  });

  it('transferring to a collaborator removes their now redundant collaborator entry', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    const bob = await world.actor('bob');
    await world.app(alice);
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'bob' });

    await world.useCases.updateApp.execute(alice, 'myapp', { owner: 'bob' });

    expect(await world.useCases.listPermissions.execute(bob, 'myapp')).toEqual([]);
  });

  it('an administrator may transfer any app', async () => {
    const world = new World();
    const root = await world.actor('root', { admin: true });
    const alice = await world.actor('alice');
    await world.actor('bob');
    await world.app(alice);

    await world.useCases.updateApp.execute(root, 'myapp', { owner: 'bob' });

    expect(world.uow.snapshot().apps[0]?.owner).toBe('bob');
  });

  it('an unknown new owner is NotFound and the owner stays', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice);

    expect(await rejectionOf(world.useCases.updateApp.execute(alice, 'myapp', { owner: 'nobody' }))).toBeInstanceOf(NotFound);
    expect(world.uow.snapshot().apps[0]?.owner).toBe('alice');
  });

  it('without an owner, or with the same owner, returns the app unchanged and logs nothing', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    const created = await world.app(alice);
    world.clock.advanceSeconds(30);

    expect(await world.useCases.updateApp.execute(alice, 'myapp', {})).toEqual(created);
    expect(await world.useCases.updateApp.execute(alice, 'myapp', { owner: 'alice' })).toEqual(created);
    expect(world.logs.messages('myapp')).toEqual(['alice created initial release']);
  });

  it('refuses an owner that is not a string', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice);

    expect((await rejectionOf(world.useCases.updateApp.execute(alice, 'myapp', { owner: 5 }))).fields).toEqual({
      owner: ['Not a valid string.'],
    });
  });
});

describe('DeleteApp', () => {
  async function busyApp(): Promise<{ world: World; alice: Actor }> {
    const world = new World();
    const alice = await world.actor('alice');
    await world.actor('carol');
    await world.deployedApp(alice, 'myapp', { web: 'web', worker: 'work' });
    await world.useCases.scaleApp.execute(alice, 'myapp', { web: 2, worker: 1 });
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FOO: 'bar' } });
    await world.useCases.addDomain.execute(alice, 'myapp', { domain: 'www.example.com' });
    await world.useCases.grantPermission.execute(alice, 'myapp', { username: 'carol' });
    await world.deployedApp(alice, 'other');
    return { world, alice };
  }

  it('stops every container through the scheduler and deletes the app with everything under it', async () => {
    const { world, alice } = await busyApp();
    const containers = world.uow.snapshot().containers.filter((c) => c.app === 'myapp').map((c) => c.uuid);
    expect(containers).toHaveLength(3);
    world.scheduler.clearCalls();

    await world.useCases.deleteApp.execute(alice, 'myapp');

    expect(world.scheduler.stopped().sort()).toEqual([...containers].sort());
    expect(world.runningContainers('myapp')).toEqual([]);
    const state = world.uow.snapshot();
    const mine = (rows: Array<{ app: string }>) => rows.filter((row) => row.app === 'myapp');
    expect(state.apps.map((a) => a.id)).toEqual(['other']);
    expect(mine(state.configs)).toEqual([]);
    expect(mine(state.builds)).toEqual([]);
    expect(mine(state.releases)).toEqual([]);
    expect(mine(state.containers)).toEqual([]);
    expect(mine(state.domains)).toEqual([]);
    expect(mine(state.permissions)).toEqual([]);
    expect(world.logs.entries('myapp')).toEqual([]);
  });

  it('leaves other apps alone', async () => {
    const { world, alice } = await busyApp();

    await world.useCases.deleteApp.execute(alice, 'myapp');

    expect(world.uow.snapshot().apps.map((a) => a.id)).toEqual(['other']);
    expect(world.runningContainers('other')).toEqual(['web.1@v2']);
    expect(world.logs.messages('other')).not.toEqual([]);
  });

  it('when the scheduler cannot stop a container: Unavailable, and nothing is deleted', async () => {
    const { world, alice } = await busyApp();
    const before = world.uow.snapshot();
    world.scheduler.failStops(1);

    const error = await rejectionOf(world.useCases.deleteApp.execute(alice, 'myapp'));

    expect(error).toBeInstanceOf(Unavailable);
    expect(error.message).toMatch(/^The scheduler failed to stop myapp /);
    expect(world.uow.snapshot()).toEqual(before);
    expect(world.logs.messages('myapp')).not.toEqual([]);
  });

  it('the app can be created again after deletion, starting at v1', async () => {
    const { world, alice } = await busyApp();
    await world.useCases.deleteApp.execute(alice, 'myapp');

    await world.app(alice);

    expect(world.releaseVersions('myapp')).toEqual([1]);
  });
});

