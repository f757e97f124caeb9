import { AppNotVisible, BUILD_FAILED, RequestRejected, Unavailable } from '@svc/core';
import type { Actor, PushedSource } from '@svc/core';
import { FakeBuildpackCatalog, FakeImageBuilder, FakeSourceCompiler, fakeFingerprint, fakePublicKey } from '@svc/core/testing';
import { World, rejectionOf } from './support/world';

const sha = (digit: number): string => String(digit).repeat(40);
const NODE_RELEASE = '---\naddons: []\ndefault_process_types:\n  web: npm start\n';

function pushed(commit: string, overrides: Partial<PushedSource> = {}): PushedSource {
  return { sha: commit, procfile: null, dockerfile: null, workdir: `/data/builds/myapp/${commit}`, ...overrides };
}

interface Setup {
  world: World;
  compiler: FakeSourceCompiler;
  catalog: FakeBuildpackCatalog;
  images: FakeImageBuilder | null;
  alice: Actor;
  key: string;
}

async function setup(options: { settings?: object; images?: boolean } = {}): Promise<Setup> {
  const images = options.images === true ? new FakeImageBuilder() : null;
  const compiler = new FakeSourceCompiler(images);
  const catalog = new FakeBuildpackCatalog();
  const world = new World(options.settings ?? {}, images, { compiler, buildpacks: catalog });
  const alice = await world.actor('alice');
  await world.app(alice);
  await world.useCases.addKey.execute(alice, { id: 'laptop', public: fakePublicKey('alice') });
  return { world, compiler, catalog, images, alice, key: fakeFingerprint(fakePublicKey('alice').split(' ')[1] as string) };
}

/** What a failed push must leave: no build, no release beyond v1, no compile session open. */
function expectNothingRecorded(s: Setup): void {
  expect(s.world.uow.snapshot().builds).toEqual([]);
  expect(s.world.releaseVersions()).toEqual([1]);
  expect(s.compiler.openSessions).toBe(0);
  expect(s.world.scheduler.started()).toEqual([]);
}

describe('DeploySource with buildpacks', () => {
  it('tries the installed buildpacks in order until one detects the app, compiles with it and releases its default process types', async () => {
    const s = await setup();
    s.compiler.behave('node', { detect: 'Node.js', compileOutput: ['installing node 20', 'npm install'], release: NODE_RELEASE });
    const lines: string[] = [];

    const published = await s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1)), (line) => lines.push(line));

    expect(s.compiler.steps()).toEqual(['open', 'detect:node', 'compile:node', 'release:node', 'finish']);
    expect(published.build).toMatchObject({ sha: sha(1), procfile: { web: 'npm start' }, image: `myapp:git-${sha(1).slice(0, 7)}`, workdir: `/data/builds/myapp/${sha(1)}` });
    expect(lines).toEqual(['Detected Node.js', 'Compiling with node', 'installing node 20', 'npm install', 'Process types: web (from the buildpack)']);
    expect(s.world.scheduler.started()).toEqual([expect.objectContaining({ type: 'web', command: 'npm start', workdir: `/data/builds/myapp/${sha(1)}` })]);
  });

  it('asks the next buildpack when the first does not detect the app', async () => {
    const s = await setup();
    s.compiler.behave('plain', { detect: '', release: '' });

    const published = await s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1), { procfile: 'web: ./serve' }));

    expect(s.compiler.steps()).toEqual(['open', 'detect:node', 'detect:plain', 'compile:plain', 'release:plain', 'finish']);
    expect(published.build.procfile).toEqual({ web: './serve' });
  });

  it('opens the build with the app, its uuid, the checkout and the app\'s config values', async () => {
    const s = await setup();
    await s.world.useCases.setConfig.execute(s.alice, 'myapp', { values: { NPM_CONFIG_PRODUCTION: 'false' } });
    s.compiler.behave('node', { detect: 'node', release: NODE_RELEASE });

    await s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1)));

    const app = await s.world.uow.repositories.apps.findById('myapp');
    expect(s.compiler.calls[0]).toEqual({
      step: 'open',
      request: { app: 'myapp', appUuid: app?.uuid, directory: `/data/builds/myapp/${sha(1)}`, env: { NPM_CONFIG_PRODUCTION: 'false' } },
    });
  });

  it('lets the Procfile override the buildpack\'s default process types, type by type', async () => {
    const s = await setup();
    s.compiler.behave('node', { detect: 'node', release: 'default_process_types:\n  web: npm start\n  worker: node worker.js\n' });
    const lines: string[] = [];

    const published = await s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1), { procfile: 'web: node server.js\nclock: node clock.js' }), (l) => lines.push(l));

    expect(published.build.procfile).toEqual({ web: 'node server.js', worker: 'node worker.js', clock: 'node clock.js' });
    expect(lines).toContain('Process types: web (from the Procfile), worker (from the buildpack), clock (from the Procfile)');
  });

  it('refuses a push no buildpack detects, listing what each looks for, and keeps nothing', async () => {
    const s = await setup();

    const error = await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1))));

    expect(error).toBeInstanceOf(RequestRejected);
    expect(error.code).toBe('BUILD.NO_BUILDPACK');
    expect(error.message).toMatch(/^No buildpack detected this app: node needs package.json, plain needs a Procfile\./);
    expect(s.compiler.steps()).toEqual(['open', 'detect:node', 'detect:plain', 'discard']);
    expectNothingRecorded(s);
  });

  it('uses only the installed buildpack BUILDPACK_URL names', async () => {
    const s = await setup();
    await s.world.useCases.setConfig.execute(s.alice, 'myapp', { values: { BUILDPACK_URL: 'plain' } });
    s.compiler.behave('node', { detect: 'node', release: NODE_RELEASE }).behave('plain', { detect: 'plain' });

    await s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1), { procfile: 'web: ./serve' }));

    expect(s.compiler.steps()).toEqual(['open', 'detect:plain', 'compile:plain', 'release:plain', 'finish']);
  });

  it('refuses a BUILDPACK_URL naming no installed buildpack, listing the installed ones, before any build starts', async () => {
    const s = await setup();
    await s.world.useCases.setConfig.execute(s.alice, 'myapp', { values: { BUILDPACK_URL: 'python' } });

    const error = await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1))));

    expect(error.code).toBe('BUILD.BUILDPACK_UNKNOWN');
    expect(error.message).toBe('BUILDPACK_URL names the buildpack "python", which is not installed here. Installed: node, plain.');
    expect(s.compiler.calls).toEqual([]);
    expect(s.world.releaseVersions()).toEqual([1, 2]);
  });

  it('fetches a BUILDPACK_URL the operator admits, at its ref, and compiles with it', async () => {
    const s = await setup({ settings: { buildpackUrlAllow: ['https://github.com/acme/'] } });
    await s.world.useCases.setConfig.execute(s.alice, 'myapp', { values: { BUILDPACK_URL: 'https://github.com/acme/pack.git#v2' } });
    s.compiler.behave('https://github.com/acme/pack.git#v2', { detect: 'Acme', release: 'default_process_types:\n  web: ./acme\n' });
    const lines: string[] = [];

    const published = await s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1)), (l) => lines.push(l));

    expect(s.catalog.fetches).toEqual([{ url: 'https://github.com/acme/pack.git', ref: 'v2' }]);
    expect(lines.slice(0, 3)).toEqual(['Fetching the buildpack https://github.com/acme/pack.git#v2', 'Fetched https://github.com/acme/pack.git#v2', 'Detected Acme']);
    expect(published.build.procfile).toEqual({ web: './acme' });
  });

  it('refuses a BUILDPACK_URL the operator does not admit without fetching or building anything', async () => {
    const s = await setup({ settings: { buildpackUrlAllow: ['https://github.com/acme/'] } });
    await s.world.useCases.setConfig.execute(s.alice, 'myapp', { values: { BUILDPACK_URL: 'https://github.com/evil/pack.git' } });

    const error = await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1))));

    expect(error.code).toBe('BUILD.BUILDPACK_NOT_ALLOWED');
    expect(s.catalog.fetches).toEqual([]);
    expect(s.compiler.calls).toEqual([]);
  });

  it('refuses every BUILDPACK_URL URL when the operator admits none', async () => {
    const s = await setup();
    await s.world.useCases.setConfig.execute(s.alice, 'myapp', { values: { BUILDPACK_URL: 'https://github.com/acme/pack.git' } });

    const error = await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1))));

    expect(error.code).toBe('BUILD.BUILDPACK_NOT_ALLOWED');
    expect(error.message).toContain('BUILDPACK_URL_ALLOW');
    expect(s.catalog.fetches).toEqual([]);
  });

  it('passes on a fetch that fails as the catalog reports it', async () => {
    const s = await setup({ settings: { buildpackUrlAllow: ['https://github.com/acme/pack.git'] } });
    await s.world.useCases.setConfig.execute(s.alice, 'myapp', { values: { BUILDPACK_URL: 'https://github.com/acme/pack.git' } });
    s.catalog.failNextFetch(new RequestRejected('BUILD.BUILDPACK_FETCH', 'repository not found'));

    const error = await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1))));

    expect(error.code).toBe('BUILD.BUILDPACK_FETCH');
    expect(s.compiler.calls).toEqual([]);
  });

  it('discards the build and records nothing when the compile fails, the old release serving on', async () => {
    const s = await setup();
    s.compiler.behave('node', { detect: 'node', release: NODE_RELEASE });
    const first = await s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1)));
    s.compiler.behave('node', { detect: 'node', compileOutput: ['npm ERR! missing script'], compileFails: 'bin/compile exited with code 1' });
    s.compiler.calls.length = 0;
    const lines: string[] = [];

    const error = await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(2)), (l) => lines.push(l)));

    expect(error).toBeInstanceOf(RequestRejected);
    expect(error.code).toBe(BUILD_FAILED);
    expect(error.message).toMatch(/exited with code 1/);
    expect(lines).toContain('npm ERR! missing script');
    expect(s.compiler.steps()).toEqual(['open', 'detect:node', 'compile:node', 'discard']);
    expect(s.compiler.openSessions).toBe(0);
    expect(s.world.releaseVersions()).toEqual([1, 2]);
    expect(s.world.uow.snapshot().builds.map((b) => b.uuid)).toEqual([first.build.uuid]);
    expect(s.world.runningContainers()).toEqual(['web.1@v2']);
  });

  it('refuses a build whose buildpack declares no process type and whose commit has no Procfile, as nothing to run', async () => {
    const s = await setup();
    s.compiler.behave('node', { detect: 'node', release: 'addons: []\n' });

    const error = await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1))));

    expect(error.code).toBe('BUILD.NOTHING_TO_RUN');
    expect(error.message).toMatch(/^The buildpack node declares no default process type\. The pushed commit has neither a Procfile nor a Dockerfile/);
    expect(s.compiler.steps()).toEqual(['open', 'detect:node', 'compile:node', 'release:node', 'discard']);
    expectNothingRecorded(s);
  });

  it('refuses unusable bin/release output and discards the build', async () => {
    const s = await setup();
    s.compiler.behave('node', { detect: 'node', release: 'default_process_types:\n  Web!: x\n' });

    const error = await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1))));

    expect(error.code).toBe('BUILD.RELEASE_INVALID');
    expectNothingRecorded(s);
  });

  it('answers a compile environment that cannot be made as unavailable, keeping nothing', async () => {
    const s = await setup();
    s.compiler.failNextOpen(new Error('stack image localhost/svc-stack:latest not found'));

    const error = await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1))));

    expect(error).toBeInstanceOf(Unavailable);
    expect(error.code).toBe('BUILDER.FAILED');
    expect(error.message).toMatch(/stack image localhost\/svc-stack:latest not found/);
    expectNothingRecorded(s);
  });

  it('discards the build when keeping it fails', async () => {
    const s = await setup();
    s.compiler.behave('node', { detect: 'node', release: NODE_RELEASE });
    s.compiler.failNextFinish(new Error('disk full'));

    const error = await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1))));

    expect(error.code).toBe('BUILDER.FAILED');
    expect(s.compiler.steps().slice(-2)).toEqual(['finish', 'discard']);
    expectNothingRecorded(s);
  });

  it('names a compiled image <app>:<version> and records no workdir, as image builds do', async () => {
    const s = await setup({ images: true });
    s.compiler.behave('node', { detect: 'node', release: NODE_RELEASE });

    const published = await s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1)));

    expect(published.build).toMatchObject({ image: 'myapp:2', workdir: null, procfile: { web: 'npm start' } });
    expect(s.images?.tags()).toEqual(['myapp:2']);
    expect(s.world.scheduler.started()).toEqual([expect.objectContaining({ image: 'myapp:2', workdir: null })]);
  });

  it('removes a compiled image whose release fails to start', async () => {
    const s = await setup({ images: true });
    s.compiler.behave('node', { detect: 'node', release: NODE_RELEASE });
    s.world.scheduler.failStarts(1);

    await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1))));

    expect(s.images?.images.size).toBe(0);
    expect(s.world.releaseVersions()).toEqual([1]);
  });

  it('builds a commit with a Dockerfile with the image builder, never compiling it', async () => {
    const s = await setup({ images: true });

    const published = await s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1), { dockerfile: 'FROM busybox\n' }));

    expect(s.compiler.calls).toEqual([]);
    expect(s.images?.requests.map((r) => r.kind)).toEqual(['dockerfile']);
    expect(published.build.image).toBe('myapp:2');
  });

  it('compiles nothing for an app the pusher may not see', async () => {
    const s = await setup();
    const bob = await s.world.actor('bob');
    await s.world.useCases.addKey.execute(bob, { id: 'bobs', public: fakePublicKey('bob') });

    const error = await rejectionOf(s.world.useCases.deploySource.execute(fakeFingerprint(fakePublicKey('bob').split(' ')[1] as string), 'myapp', pushed(sha(1))));

    expect(error).toBeInstanceOf(AppNotVisible);
    expect(s.compiler.calls).toEqual([]);
  });
});

describe('DeploySource without buildpacks', () => {
  it('still refuses a commit without Procfile and Dockerfile up front, as before', async () => {
    const world = new World();
    const alice = await world.actor('alice');
    await world.app(alice);
    await world.useCases.addKey.execute(alice, { id: 'laptop', public: fakePublicKey('alice') });

    const error = await rejectionOf(world.useCases.deploySource.execute(fakeFingerprint(fakePublicKey('alice').split(' ')[1] as string), 'myapp', pushed(sha(1))));

    expect(error.code).toBe('BUILD.NOTHING_TO_RUN');
    expect(world.useCases.deploySource.compilesWithBuildpacks).toBe(false);
  });

  it('needs both a compiler and a catalog to compile', () => {
    expect(new World({}, null, { compiler: new FakeSourceCompiler() }).useCases.deploySource.compilesWithBuildpacks).toBe(false);
    expect(new World({}, null, { compiler: new FakeSourceCompiler(), buildpacks: new FakeBuildpackCatalog() }).useCases.deploySource.compilesWithBuildpacks).toBe(true);
  });
});

describe('DeploySource with a .buildpacks file (several buildpacks in order)', () => {
  const LISTED = '# the site first, then its server\nhttps://github.com/acme/assets.git#v1\n\nnode\n';

  it('detects and compiles with every listed buildpack in order, fetching the URLs, and takes the last one\'s process types', async () => {
    const s = await setup({ settings: { buildpackUrlAllow: ['https://github.com/acme/'] } });
    s.compiler
      .behave('https://github.com/acme/assets.git#v1', { detect: 'Assets', compileOutput: ['bundling'], release: 'default_process_types:\n  assets: ./watch\n' })
      .behave('node', { detect: 'Node.js', compileOutput: ['npm ci'], release: NODE_RELEASE });
    const lines: string[] = [];

    const published = await s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1), { buildpacks: LISTED }), (l) => lines.push(l));

    expect(s.catalog.fetches).toEqual([{ url: 'https://github.com/acme/assets.git', ref: 'v1' }]);
    expect(s.compiler.steps()).toEqual([
      'open',
      'detect:https://github.com/acme/assets.git#v1',
      'compile:https://github.com/acme/assets.git#v1',
      'detect:node',
      'compile:node',
      'release:node',
      'finish',
    ]);
    expect(lines).toEqual([
      'Fetching the buildpack https://github.com/acme/assets.git#v1',
      'Fetched https://github.com/acme/assets.git#v1',
      'Detected Assets (.buildpacks, 1 of 2)',
      'Compiling with https://github.com/acme/assets.git#v1',
      'bundling',
      'Detected Node.js (.buildpacks, 2 of 2)',
      'Compiling with node',
      'npm ci',
      'Process types: web (from the buildpack)',
    ]);
    expect(published.build.procfile).toEqual({ web: 'npm start' });
  });

  it('refuses the push when a listed buildpack does not detect the app, naming it, and keeps nothing', async () => {
    const s = await setup();
    s.compiler.behave('plain', { detect: 'plain', release: '' });

    const error = await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1), { procfile: 'web: ./serve', buildpacks: 'plain\nnode\n' })));

    expect(error.code).toBe('BUILD.NO_BUILDPACK');
    expect(error.message).toBe('.buildpacks lists node, whose bin/detect does not take this app: add what it looks for, or take it out of .buildpacks.');
    expect(s.compiler.steps()).toEqual(['open', 'detect:plain', 'compile:plain', 'detect:node', 'discard']);
    expectNothingRecorded(s);
  });

  it.each([
    ['an unknown name', 'node\npython\n', 'BUILD.BUILDPACK_UNKNOWN', '.buildpacks names the buildpack "python", which is not installed here. Installed: node, plain.'],
    ['a URL the operator does not admit', 'https://github.com/evil/pack.git\n', 'BUILD.BUILDPACK_NOT_ALLOWED', /^\.buildpacks line 1: "https:\/\/github\.com\/evil\/pack\.git" cannot be used: .* is not among the buildpack URLs the operator admits/],
    ['no entry', '# nothing yet\n\n', 'BUILD.BUILDPACK_NOT_ALLOWED', /^\.buildpacks lists no buildpack/],
    ['more than eight', 'node\n'.repeat(9), 'BUILD.BUILDPACK_NOT_ALLOWED', '.buildpacks lists 9 buildpacks; a build runs at most 8.'],
    ['a path', 'node\n../../etc\n', 'BUILD.BUILDPACK_NOT_ALLOWED', /^\.buildpacks line 2: "\.\.\/\.\.\/etc" cannot be used/],
  ])('refuses a .buildpacks with %s before any build starts', async (_what, text, code, message) => {
    const s = await setup({ settings: { buildpackUrlAllow: ['https://github.com/acme/'] } });

    const error = await rejectionOf(s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1), { procfile: 'web: ./serve', buildpacks: text })));

    expect(error.code).toBe(code);
    if (typeof message === 'string') expect(error.message).toBe(message);
    else expect(error.message).toMatch(message);
    expect(s.catalog.fetches).toEqual([]);
    expect(s.compiler.calls).toEqual([]);
    expectNothingRecorded(s);
  });

  it('leaves .buildpacks unused when BUILDPACK_URL is set, and says so', async () => {
    const s = await setup();
    await s.world.useCases.setConfig.execute(s.alice, 'myapp', { values: { BUILDPACK_URL: 'plain' } });
    s.compiler.behave('plain', { detect: 'plain', release: '' });
    const lines: string[] = [];

    await s.world.useCases.deploySource.execute(s.key, 'myapp', pushed(sha(1), { procfile: 'web: ./serve', buildpacks: 'node\n' }), (l) => lines.push(l));

    expect(lines[0]).toBe('BUILDPACK_URL is set: .buildpacks is not used');
    expect(s.compiler.steps()).toEqual(['open', 'detect:plain', 'compile:plain', 'release:plain', 'finish']);
  });
});
