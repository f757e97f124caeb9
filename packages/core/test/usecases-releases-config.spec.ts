import { RequestRejected, Unavailable, ValidationFailed } from '@svc/core';
import { aliceWithApp } from './support/fixtures';
import { World, rejectionOf } from './support/world';

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
