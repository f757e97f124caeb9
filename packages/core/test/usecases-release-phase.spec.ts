import { RELEASE_NOT_SCALABLE, Unavailable, ValidationFailed } from '@svc/core';
import type { Actor, PushedSource, Settings } from '@svc/core';
import { FakeBuildpackCatalog, FakeImageBuilder, FakeSourceCompiler, fakeFingerprint, fakePublicKey } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const WITH_RELEASE = { web: 'node server.js', release: './migrate' };

async function deployed(settings: Partial<Settings> = {}): Promise<{ world: World; alice: Actor }> {
  const world = new World(settings);
  const alice = await world.actor('alice');
  await world.deployedApp(alice, 'myapp', WITH_RELEASE);
  return { world, alice };
}

/** The lines of the app's log written by the release phase. */
async function releaseLog(world: World): Promise<string[]> {
  return (await world.logs.tail('myapp', 1000)).filter((e) => e.source === 'svc[release]').map((e) => e.message);
}

/** What a failed release must leave: the state before it, and the old containers running. */
async function expectUnchanged(world: World, before: ReturnType<World['uow']['snapshot']>, running: string[]): Promise<void> {
  const after = world.uow.snapshot();
  expect(after.releases).toEqual(before.releases);
  expect(after.builds).toEqual(before.builds);
  expect(after.configs).toEqual(before.configs);
  expect(after.containers).toEqual(before.containers);
  expect(after.apps).toEqual(before.apps);
  expect(world.runningContainers()).toEqual(running);
}

describe('the release phase', () => {
  it('runs the release command once on the new release, before any of its processes starts, and never starts it as a container', async () => {
    const world = new World({ releasePhaseTimeoutSeconds: 42 });
    const alice = await world.actor('alice');
    await world.app(alice);
    await world.useCases.setConfig.execute(alice, 'myapp', { values: { DATABASE_URL: 'postgres://db/x' } });
    world.scheduler.setRunResult({ exitCode: 0, output: 'migrating\nmigrated 3 tables\n' });

    const published = await world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/app:v1', procfile: WITH_RELEASE });

    expect(published.release.version).toBe(3);
    const methods = world.scheduler.calls.filter((c) => c.method !== 'states').map((c) => c.method);
    expect(methods).toEqual(['run', 'start']);
    expect(world.scheduler.runs()).toEqual([{
      app: 'myapp',
      release: 3,
      image: 'example/app:v1',
      workdir: null,
      command: './migrate',
      env: { DATABASE_URL: 'postgres://db/x', SVC_APP: 'myapp', SVC_RELEASE: 'v3' },
      timeoutSeconds: 42,
      outputLimitBytes: world.settings.runOutputLimitBytes,
    }]);
    expect(world.runningContainers()).toEqual(['web.1@v3']);
    expect(published.app.structure).toEqual({ web: 1 });
    expect(await releaseLog(world)).toEqual([
      'release phase of v3 started: ./migrate',
      'migrating',
      'migrated 3 tables',
      'release phase of v3 succeeded',
    ]);
  });

  it('does not run for a build without a release type', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);

    expect(world.scheduler.runs()).toEqual([]);
  });

  it('fails a release whose phase exits non-zero with 503, its exit code and last lines, recording nothing and keeping the old release serving', async () => {
    const { world, alice } = await deployed();
    const before = world.uow.snapshot();
    const running = world.runningContainers();
    world.scheduler.setRunResult({ exitCode: 2, output: Array.from({ length: 25 }, (_, i) => `step ${i + 1}`).join('\n') });

    const error = await rejectionOf(world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/app:v2', procfile: WITH_RELEASE }));

    expect(error).toBeInstanceOf(Unavailable);
    expect(error.code).toBe('RELEASE.PHASE_FAILED');
    expect(error.message).toMatch(/^The release phase of v3 exited with code 2; the release was not made and the previous one keeps running\. Its last lines:\nstep 6\n/);
    expect(error.message).not.toContain('step 5\n');
    expect(error.message.endsWith('step 25')).toBe(true);
    await expectUnchanged(world, before, running);
    expect(await releaseLog(world)).toContain('release phase of v3 exited with code 2; v3 was not released');
  });

  it('fails a release whose phase times out, saying after how long', async () => {
    const { world, alice } = await deployed({ releasePhaseTimeoutSeconds: 7 });
    const before = world.uow.snapshot();
    const running = world.runningContainers();
    world.scheduler.setRunResult({ exitCode: 124, output: 'waiting for the database\n[killed after the timeout of 7 s]' });

    const error = await rejectionOf(world.useCases.setConfig.execute(alice, 'myapp', { values: { A: '1' } }));

    expect(error.code).toBe('RELEASE.PHASE_FAILED');
    expect(error.message).toMatch(/^The release phase of v3 timed out after 7 s;/);
    expect(error.message).toContain('waiting for the database');
    await expectUnchanged(world, before, running);
  });

  it('answers a scheduler that cannot run the phase as unavailable, recording nothing', async () => {
    const { world, alice } = await deployed();
    const before = world.uow.snapshot();
    const running = world.runningContainers();
    world.scheduler.failRuns(1, new Error('engine gone'));

    const error = await rejectionOf(world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/app:v2', procfile: WITH_RELEASE }));

    expect(error.code).toBe('SCHEDULER.FAILED');
    expect(error.message).toMatch(/engine gone/);
    await expectUnchanged(world, before, running);
  });

  it('runs again on a config change, with the new config and version', async () => {
    const { world, alice } = await deployed();

    await world.useCases.setConfig.execute(alice, 'myapp', { values: { FEATURE: 'on' } });

    const last = world.scheduler.runs().at(-1);
    expect(world.scheduler.runs()).toHaveLength(2);
    expect(last).toMatchObject({ release: 3, command: './migrate', env: { FEATURE: 'on', SVC_RELEASE: 'v3' } });
  });

  it('runs again on a rollback, with the build rolled back to', async () => {
    const { world, alice } = await deployed();
    await world.useCases.createBuild.execute(alice, 'myapp', { image: 'example/app:v2', procfile: { web: 'x', release: './migrate-v2' } });

    await world.useCases.rollback.execute(alice, 'myapp', { version: 2 });

    expect(world.scheduler.runs().map((r) => `${r.release}:${r.image}:${r.command}`)).toEqual([
      '2:example/myapp:v1:./migrate',
      '3:example/app:v2:./migrate-v2',
      '4:example/myapp:v1:./migrate',
    ]);
  });

  it('is said to the pusher of a git push, and a failure leaves no image, build or release', async () => {
    const images = new FakeImageBuilder();
    const compiler = new FakeSourceCompiler(images).behave('node', {
      detect: 'node',
      release: 'default_process_types:\n  web: npm start\n  release: npm run migrate\n',
    });
    const world = new World({}, images, { compiler, buildpacks: new FakeBuildpackCatalog() });
    const alice = await world.actor('alice');
    await world.app(alice);
    await world.useCases.addKey.execute(alice, { id: 'laptop', public: fakePublicKey('alice') });
    const key = fakeFingerprint(fakePublicKey('alice').split(' ')[1] as string);
    const source = (sha: string): PushedSource => ({ sha: sha.repeat(40), procfile: null, dockerfile: null, workdir: `/data/builds/myapp/${sha}` });
    world.scheduler.setRunResult({ exitCode: 0, output: 'migrated\n' });
    const lines: string[] = [];

    await world.useCases.deploySource.execute(key, 'myapp', source('1'), (l) => lines.push(l));

    expect(lines.slice(-3)).toEqual(['Running the release phase of v2: npm run migrate', 'migrated', 'Release phase of v2 succeeded']);
    expect(world.scheduler.runs()[0]).toMatchObject({ image: 'myapp:2', command: 'npm run migrate' });

    world.scheduler.setRunResult({ exitCode: 1, output: 'relation "users" already exists\n' });
    const failedLines: string[] = [];
    const error = await rejectionOf(world.useCases.deploySource.execute(key, 'myapp', source('2'), (l) => failedLines.push(l)));

    expect(error.code).toBe('RELEASE.PHASE_FAILED');
    expect(failedLines).toContain('relation "users" already exists');
    expect(images.tags()).toEqual(['myapp:2']);
    expect(images.images.size).toBe(1);
    expect(world.releaseVersions()).toEqual([1, 2]);
    expect(world.runningContainers()).toEqual(['web.1@v2']);
  });
});

describe('the release process type and scaling', () => {
  it('refuses to scale release, as a validation error on that type, changing nothing', async () => {
    const { world, alice } = await deployed();
    const before = world.uow.snapshot();

    const error = await rejectionOf(world.useCases.scaleApp.execute(alice, 'myapp', { web: 2, release: 1 }));

    expect(error).toBeInstanceOf(ValidationFailed);
    expect(error.fields).toEqual({ release: [RELEASE_NOT_SCALABLE] });
    expect(world.uow.snapshot()).toEqual(before);
  });

  it('refuses it even at zero and for a build without a release type', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.deployedApp(alice);

    expect((await rejectionOf(world.useCases.scaleApp.execute(alice, 'myapp', { release: 0 }))).fields).toEqual({ release: [RELEASE_NOT_SCALABLE] });
  });
});

describe('DeleteApp and the build cache', () => {
  it('removes the app\'s build cache after the app is deleted', async () => {
    const compiler = new FakeSourceCompiler();
    const world = new World({}, null, { compiler, buildpacks: new FakeBuildpackCatalog() });
    const alice = await world.actor('alice');
    const app = await world.app(alice);

    await world.useCases.deleteApp.execute(alice, 'myapp');

    expect(compiler.calls).toEqual([{ step: 'removeApp', app: 'myapp', appUuid: app.uuid }]);
  });

  it('deletes the app even when the cache cannot be removed', async () => {
    const compiler = new FakeSourceCompiler();
    compiler.removeApp = async () => {
      throw new Error('permission denied');
    };
    const world = new World({}, null, { compiler });
    const alice = await world.actor('alice');
    await world.app(alice);

    await world.useCases.deleteApp.execute(alice, 'myapp');

    expect(await world.uow.repositories.apps.findById('myapp')).toBeNull();
  });
});
