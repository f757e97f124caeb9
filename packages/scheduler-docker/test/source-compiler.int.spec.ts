import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { DomainError, boundedDiskBytes, type InstalledBuildpack } from '@svc/core';
import { APP_LABEL, APP_UUID_LABEL, DockerSourceCompiler, cacheVolumeName, unguardBuildBridge, type DockerSourceCompilerOptions } from '../src';
import { LOOP_LINK_LABEL } from '../src/bounded-volume';
import { SCRIPT_BUILDPACK, addNpm, compileWith, makeStackImage, writeTree } from './support/compile';
import { TEST_DOCKER_HOST, TEST_REGISTRY, connectTestEngine, describeWithEngine, itWithRegistry, runIn } from './support/engine';

jest.setTimeout(180_000);

const MIB = 1024 * 1024;

/** The repository's Node.js buildpack. */
const NODE_BUILDPACK = resolve(__dirname, '../../../buildpacks/node');

/** A lockfile of a package depending on is-number 7.0.0 alone. */
const IS_NUMBER_LOCK = (name: string): object => ({
  name,
  version: '1.0.0',
  lockfileVersion: 3,
  requires: true,
  packages: {
    '': { name, version: '1.0.0', dependencies: { 'is-number': '7.0.0' } },
    'node_modules/is-number': {
      version: '7.0.0',
      resolved: 'https://registry.npmjs.org/is-number/-/is-number-7.0.0.tgz',
      integrity: 'sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng==',
      engines: { node: '>=0.12.0' },
    },
  },
});

describeWithEngine('DockerSourceCompiler against a real engine', () => {
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`;
  const stack = `svc-test/stack:${tag}`;
  const npmStack = `svc-test/stack-npm:${tag}`;
  const network = `svc-build-${tag}`;
  const bridge = `svcb${tag}`.slice(0, 15);
  const apps: Array<{ app: string; uuid: string }> = [];
  let root: string;
  let docker: Awaited<ReturnType<typeof connectTestEngine>>['docker'];
  let buildpack: InstalledBuildpack;
  let compiler: DockerSourceCompiler;
  let appCount = 0;

  const newApp = (): { app: string; uuid: string } => {
    appCount++;
    const made = { app: `cmp-${tag}-${appCount}`, uuid: `uuid-${tag}-${appCount}` };
    apps.push(made);
    return made;
  };
  const checkout = (name: string, files: Record<string, string>): Promise<string> => writeTree(join(root, 'src', name), files);
  const make = (overrides: Partial<DockerSourceCompilerOptions> = {}): DockerSourceCompiler =>
    new DockerSourceCompiler({ docker, stackImage: npmStack, dockerHost: TEST_DOCKER_HOST, network, bridge, pidsLimit: 64, memoryBytes: 256 * MIB, timeoutMs: 120_000, cacheLimitBytes: 2 * MIB, ...overrides });
  const containersOf = async (app: string): Promise<string[]> =>
    (await docker.listContainers({ all: true, filters: { label: [`${APP_LABEL}=${app}`] } })).map((c) => c.Id);
  const volumesOf = async (app: string): Promise<string[]> => ((await docker.listVolumes({ filters: { label: [`${APP_LABEL}=${app}`] } })).Volumes ?? []).map((v) => v.Name).sort();
  /** A step that writes 512 MiB of zeros to `$where/big` (going on past a failed write), then prints the size it got. */
  const writer = (where: string): string => `head -c 536870912 /dev/zero > "${where}/big"; echo "head exit $?"; echo "wrote $(wc -c < "${where}/big")"`;
  const wrote = (lines: string[]): number => Number(/^wrote (\d+)$/.exec(lines.find((line) => line.startsWith('wrote ')) ?? '')?.[1] ?? NaN);
  const imagesOf = async (app: string): Promise<string[]> =>
    (await docker.listImages({ filters: JSON.stringify({ label: [`${APP_LABEL}=${app}`] }) })).map((i) => i.Id);

  beforeAll(async () => {
    ({ docker } = await connectTestEngine(TEST_DOCKER_HOST, 'Docker engine'));
    root = await mkdtemp(join(tmpdir(), 'svc-compile-'));
    buildpack = { name: 'script', directory: await writeTree(join(root, 'buildpacks', 'script'), SCRIPT_BUILDPACK) };
    await makeStackImage(stack);
    await addNpm(docker, stack, npmStack, join(execFileSync('npm', ['root', '-g'], { encoding: 'utf8' }).trim(), 'npm'));
    compiler = make();
  }, 600_000);

  afterAll(async () => {
    for (const { app, uuid } of apps) {
      for (const id of await containersOf(app)) await docker.getContainer(id).remove({ force: true }).catch(() => undefined);
      for (const id of await imagesOf(app)) await docker.getImage(id).remove({ force: true }).catch(() => undefined);
      await docker.getVolume(cacheVolumeName(uuid)).remove().catch(() => undefined);
    }
    for (const image of [npmStack, stack]) await docker.getImage(image).remove({ force: true }).catch(() => undefined);
    await docker.getNetwork(network).remove().catch(() => undefined);
    await unguardBuildBridge(bridge);
    await rm(root, { recursive: true, force: true });
  });

  it('runs detect, compile and release in one confined container and commits /app as one layer that runs as 10000 without the config values', async () => {
    const { app, uuid } = newApp();
    const dir = await checkout('full', {
      'run.sh': [
        'echo "compiling in $(pwd) as $(id -u):$(id -g)"',
        'echo "env files: $(ls "$3" | sort | tr "\\n" " ")"',
        'cat "$3/GREETING" > greeting.txt',
        'echo compiled > compiled.txt',
        'grep CapEff /proc/self/status',
        'grep NoNewPrivs /proc/self/status',
        'touch /etc/written 2>/dev/null && echo "wrote /etc" || echo "cannot write /etc"',
        'echo junk > /tmp/junk',
        // Hostile: end every process it may signal (the idle one is another user's), overwrite the buildpack, leave files in /tmp.
        'kill -9 -1 2>/dev/null; echo "still compiling"',
        'echo > /buildpacks/0/bin/release 2>/dev/null || echo "cannot write bin/release"',
        '',
      ].join('\n'),
      'lib/source.txt': 'from the commit\n',
    });
    const secret = `s3cr3t-${tag}-value`;
    const session = await compiler.open({ app, appUuid: uuid, directory: dir, env: { GREETING: 'hello there', DATABASE_URL: secret } });
    expect(await session.detect(buildpack)).toBe('Script');
    const { lines, error } = await compileWith(session, buildpack);
    expect(error).toBeNull();
    expect(lines).toContain('compiling in /app as 10000:10000');
    expect(lines).toContain('env files: DATABASE_URL GREETING');
    expect(lines).toContainEqual(expect.stringMatching(/^CapEff:\s+0000000000000000$/));
    expect(lines).toContainEqual(expect.stringMatching(/^NoNewPrivs:\s+1$/));
    expect(lines).toContain('cannot write /etc');
    expect(lines).toContain('cannot write bin/release');
    expect(lines).toContain('still compiling');
    expect(await session.release(buildpack)).toContain('default_process_types:\n  web: sh -c "httpd -f -p $PORT"');

    const result = await session.finish(() => undefined);
    expect(result.workdir).toBeNull();
    const image = await docker.getImage(result.image ?? '').inspect();
    expect(image.Config.User).toBe('10000:10000');
    expect(image.Config.WorkingDir).toBe('/app');
    expect(image.Config.Labels?.[APP_LABEL]).toBe(app);
    expect(image.Config.Labels?.[APP_UUID_LABEL]).toBe(uuid);
    expect(image.Config.Entrypoint ?? []).toEqual([]);
    expect(image.Config.Cmd).toEqual(['/bin/sh']);
    expect(image.RootFS.Layers?.length).toBe(((await docker.getImage(npmStack).inspect()).RootFS.Layers?.length ?? 0) + 1);
    const listing = await runIn(docker, result.image ?? '', ['sh', '-c', 'id -u; cat greeting.txt compiled.txt lib/source.txt; stat -c "%u %n" /app/compiled.txt /app/lib/source.txt; ls -A /buildpacks 2>&1; echo "cache: $(ls -A /cache)"; echo "tmp: $(ls -A /tmp)"; true']);
    expect(listing.split('\n').slice(0, 4)).toEqual(['10000', 'hello therecompiled', 'from the commit', '10000 /app/compiled.txt']);
    expect(listing).toContain('10000 /app/lib/source.txt');
    expect(listing).toMatch(/\/buildpacks: No such file or directory/);
    // A mount point stays in the layer as an empty directory; what was mounted there does not.
    expect(listing).toContain('cache: \n');
    expect(listing).toContain('tmp: \n');
    // No config value in any file of the image: the whole file system, read back as one archive.
    const exported = await exportText(result.image ?? '');
    expect(exported).toContain('hello there');
    expect(exported).not.toContain(secret);
    expect(await containersOf(app)).toEqual([]);
  });

  it('keeps the cache between two builds of one app, not for another app; removeApp removes it', async () => {
    const first = newApp();
    const other = newApp();
    const dir = await checkout('cache', { 'run.sh': 'n=$(cat "$2/count" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "$2/count"; echo "build number $n"; ls -ld "$2" | cut -c1-10\n' });
    const build = async (who: { app: string; uuid: string }): Promise<string[]> => {
      const session = await compiler.open({ app: who.app, appUuid: who.uuid, directory: dir, env: {} });
      const { lines, error } = await compileWith(session, buildpack);
      await session.discard();
      expect(error).toBeNull();
      return lines;
    };
    expect(await build(first)).toEqual(['build number 1', 'drwx------']);
    expect(await build(first)).toEqual(['build number 2', 'drwx------']);
    expect(await build(other)).toEqual(['build number 1', 'drwx------']);
    const volume = await docker.getVolume(cacheVolumeName(first.uuid)).inspect();
    expect(volume.Labels?.[APP_LABEL]).toBe(first.app);
    await compiler.removeApp(first.app, first.uuid);
    await expect(docker.getVolume(cacheVolumeName(first.uuid)).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await compiler.removeApp(first.app, first.uuid);
    expect(await build(first)).toEqual(['build number 1', 'drwx------']);
  });

  it('stops a compile writing past the cache limit (ENOSPC) while it runs, refuses the build with the figures and empties the cache; a process left writing is stopped first', async () => {
    const { app, uuid } = newApp();
    const dir = await checkout('bigcache', {
      'run.sh': [
        'echo kept > "$2/before"',
        writer('$2'),
        'mkdir "$2/hidden" && echo x > "$2/hidden/f" && chmod 000 "$2/hidden"',
        '( sleep 3; echo late > "$2/late" ) &',
        'echo done',
        '',
      ].join('\n'),
    });
    let session = await compiler.open({ app, appUuid: uuid, directory: dir, env: {} });
    let compiled = await compileWith(session, buildpack);
    await session.discard();
    expect(compiled.lines.join('\n')).toContain('No space left on device');
    // The writer got the cache's file system (2 MiB and the margin), not the 512 MiB it asked for.
    expect(wrote(compiled.lines)).toBeGreaterThan(2 * MIB);
    expect(wrote(compiled.lines)).toBeLessThanOrEqual(boundedDiskBytes(2 * MIB));
    expect(compiled.error?.message).toMatch(/the build cache took (2|[3-9]|10)(\.\d+)? MiB, over BUILD_CACHE_LIMIT_MB=2 \(writes past it fail\): nothing of this build's cache is kept, the next build starts without one/);
    await new Promise((done) => setTimeout(done, 4000));
    session = await compiler.open({ app, appUuid: uuid, directory: await checkout('lscache', { 'run.sh': 'echo "cache: $(ls -A "$2" | tr "\\n" " ")"\n' }), env: {} });
    compiled = await compileWith(session, buildpack);
    await session.discard();
    expect(compiled.lines).toEqual(['cache:']);
    expect(await volumesOf(app)).toEqual([cacheVolumeName(uuid)]);
  });

  it("stops a compile writing a big /app at BUILD_IMAGE_LIMIT_MB (ENOSPC), with the figures, keeping nothing; the stack's layers do not count", async () => {
    const stackMiB = Math.ceil((await docker.getImage(npmStack).inspect()).Size / MIB);
    const { app, uuid } = newApp();
    const big = make({ imageLimitBytes: 16 * MIB });
    let session = await big.open({ app, appUuid: uuid, directory: await checkout('bigapp', { 'run.sh': `${writer('$1')}\n` }), env: {} });
    let compiled = await compileWith(session, buildpack);
    await session.discard();
    // The file system stops the write (the kernel says ENOSPC, or EIO when the loop device is full first).
    expect(compiled.lines.join('\n')).toMatch(/head exit 1/);
    expect(compiled.lines.join('\n')).toMatch(/No space left on device|I\/O error/);
    expect(wrote(compiled.lines)).toBeLessThanOrEqual(boundedDiskBytes(16 * MIB));
    expect(compiled.error?.message).toMatch(/the build made \d+(\.\d+)? MiB, over BUILD_IMAGE_LIMIT_MB=16: nothing of it is kept/);
    expect(await imagesOf(app)).toEqual([]);
    expect(await containersOf(app)).toEqual([]);
    expect(await volumesOf(app)).toEqual([cacheVolumeName(uuid)]);

    // 4 MiB of /app within the limit: kept, although the stack's layers the image also holds are over it (they are every build's).
    expect(stackMiB).toBeGreaterThan(16);
    const small = make({ imageLimitBytes: 16 * MIB });
    session = await small.open({ app, appUuid: uuid, directory: await checkout('smallapp', { 'run.sh': 'head -c 4194304 /dev/zero > "$1/four"; echo done\n' }), env: {} });
    compiled = await compileWith(session, buildpack);
    expect(compiled.error).toBeNull();
    const kept = (await session.finish(() => undefined)).image ?? '';
    expect(await imagesOf(app)).toEqual([kept]);
    expect((await docker.getImage(kept).inspect()).Size).toBeGreaterThan(stackMiB * MIB);
  });

  it('confines each step: a fork bomb meets the pids limit, a memory hog is killed and reported', async () => {
    const { app, uuid } = newApp();
    const bomb = await checkout('bomb', {
      'run.sh': 'bomb() { bomb | bomb & }; bomb 2>/dev/null; sleep 3; i=0; while [ $i -lt 100 ]; do sleep 5 & i=$((i+1)); done 2>&1 | tail -n 1; echo "still here"\n',
    });
    let session = await compiler.open({ app, appUuid: uuid, directory: bomb, env: {} });
    let compiled = await compileWith(session, buildpack);
    expect(compiled.lines.join('\n')).toMatch(/can't fork|Resource temporarily unavailable/);
    // The bomb's processes were ended after the step: the next step runs.
    expect(await session.release(buildpack)).toContain('default_process_types');
    await session.discard();

    const hog = await checkout('hog', { 'run.sh': 'node -e "const a = []; for (;;) a.push(Buffer.alloc(8 * 1024 * 1024, 1))"\n' });
    session = await compiler.open({ app, appUuid: uuid, directory: hog, env: {} });
    compiled = await compileWith(session, buildpack);
    await session.discard();
    expect(compiled.error).toBeInstanceOf(DomainError);
    expect(compiled.error?.message).toMatch(/bin\/compile of script ran out of memory \(the build's limit of 256 MiB\)/);
    expect(await containersOf(app)).toEqual([]);
  });

  it('stops a build at its time limit and leaves no container or image after discard', async () => {
    const { app, uuid } = newApp();
    const slow = await checkout('slow', { 'run.sh': 'echo starting; sleep 60; echo never\n' });
    const timed = make({ timeoutMs: 5000 });
    const session = await timed.open({ app, appUuid: uuid, directory: slow, env: {} });
    const started = Date.now();
    const compiled = await compileWith(session, buildpack);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(compiled.lines).toEqual(['starting']);
    expect(compiled.error?.message).toBe('The image build failed: it took longer than 5 seconds, the most a build may take.');
    await expect(session.finish(() => undefined)).rejects.toThrow(/took longer than 5 seconds/);
    await session.discard();
    expect(await containersOf(app)).toEqual([]);
    expect(await imagesOf(app)).toEqual([]);

    // A step's own limit: bin/detect has a few seconds, whatever the build has left.
    const stuck: InstalledBuildpack = { name: 'stuck', directory: await writeTree(join(root, 'buildpacks', 'stuck'), { ...SCRIPT_BUILDPACK, 'bin/detect': '#!/bin/sh\nsleep 60\n' }) };
    const detecting = await make({ stepTimeoutMs: 2000 }).open({ app, appUuid: uuid, directory: slow, env: {} });
    await expect(detecting.detect(stuck)).rejects.toThrow('The image build failed: bin/detect of stuck took longer than 2 seconds, the most it may take.');
    await detecting.discard();
    expect(await containersOf(app)).toEqual([]);
  });

  it('removes the build containers an interrupted controller left, once older than twice the time limit, and their file systems', async () => {
    const { app, uuid } = newApp();
    const session = await compiler.open({ app, appUuid: uuid, directory: await checkout('left', { 'run.sh': 'true\n' }), env: {} });
    try {
      expect(await containersOf(app)).toHaveLength(1);
      await expect(compiler.removeLeftovers()).resolves.toBe(0);
      await new Promise((done) => setTimeout(done, 2100));
      const loops = (): string => execFileSync('losetup', ['-a'], { encoding: 'utf8' });
      // Each file system's loop device is attached through a path of its own, named by a label of its volume.
      const fileSystems = (await volumesOf(app)).filter((name) => name.includes('-fs-'));
      const links = await Promise.all(fileSystems.map(async (name) => (await docker.getVolume(name).inspect()).Labels?.[LOOP_LINK_LABEL] ?? 'none'));
      expect(links).toHaveLength(2);
      for (const link of links) expect(loops()).toContain(`/${link}.img`);
      await expect(make({ timeoutMs: 500 }).removeLeftovers()).resolves.toBe(1);
      expect(await containersOf(app)).toEqual([]);
      // Its file systems went too: the volumes (but the app's cache) and their loop devices.
      expect(await volumesOf(app)).toEqual([cacheVolumeName(uuid)]);
      for (const link of links) expect(loops()).not.toContain(`/${link}.img`);
    } finally {
      await session.discard();
    }
    expect(await volumesOf(app)).toEqual([cacheVolumeName(uuid)]);
  });

  it('reaches the npm registry from a compile: npm ci installs a registry dependency into the image', async () => {
    const { app, uuid } = newApp();
    const dir = await checkout('npm', {
      'package.json': JSON.stringify({ name: 'npm-fixture', version: '1.0.0', private: true, dependencies: { 'is-number': '7.0.0' } }),
      'package-lock.json': JSON.stringify(IS_NUMBER_LOCK('npm-fixture')),
      'run.sh': 'export NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt; npm ci --no-audit --no-fund --no-update-notifier --cache "$2/npm" 2>&1 | tail -n 3\n',
    });
    const session = await compiler.open({ app, appUuid: uuid, directory: dir, env: {} });
    const compiled = await compileWith(session, buildpack);
    expect(compiled.error).toBeNull();
    const result = await session.finish(() => undefined);
    const out = await runIn(docker, result.image ?? '', ['node', '-e', 'console.log(String(require("/app/node_modules/is-number")(5)))']);
    expect({ out: out.trim(), lines: compiled.lines }).toMatchObject({ out: 'true', lines: expect.arrayContaining([expect.stringMatching(/^added 1 package/)]) });
  });

  // The repository's own Node.js buildpack, once it is there: a whole session, as a push runs it.
  (existsSync(NODE_BUILDPACK) ? it : it.skip)('builds an npm app with the repository\'s Node.js buildpack: detect, compile (npm ci from the registry), release', async () => {
    const { app, uuid } = newApp();
    const dir = await checkout('node-buildpack', {
      'package.json': JSON.stringify({ name: 'node-fixture', version: '1.0.0', private: true, scripts: { start: 'node server.js' }, dependencies: { 'is-number': '7.0.0' } }),
      'package-lock.json': JSON.stringify(IS_NUMBER_LOCK('node-fixture')),
      'server.js': 'console.log(String(require("is-number")(5)));\n',
    });
    const node: InstalledBuildpack = { name: 'node', directory: NODE_BUILDPACK };
    const session = await compiler.open({ app, appUuid: uuid, directory: dir, env: { NODE_ENV: 'production' } });
    expect(await session.detect(node)).toBe('Node.js');
    const compiled = await compileWith(session, node);
    expect({ error: compiled.error?.message ?? null, lines: compiled.lines }).toMatchObject({ error: null });
    expect(await session.release(node)).toMatch(/web: npm start/);
    const result = await session.finish(() => undefined);
    expect((await runIn(docker, result.image ?? '', ['node', 'server.js'])).trim()).toBe('true');
  });

  itWithRegistry('pushes the committed image to the registry and resolves with its digest reference', async () => {
    const { app, uuid } = newApp();
    const pushing = make({ registry: TEST_REGISTRY });
    const session = await pushing.open({ app, appUuid: uuid, directory: await checkout('push', { 'run.sh': 'echo pushed > pushed.txt\n' }), env: {} });
    expect((await compileWith(session, buildpack)).error).toBeNull();
    const lines: string[] = [];
    const result = await session.finish((line) => lines.push(line));
    expect(result.image).toMatch(new RegExp(`^${TEST_REGISTRY ?? ''}/${app}@sha256:[0-9a-f]{64}$`));
    expect(lines).toContain(`Pushed ${result.image ?? ''}`);
  });

  it('refuses a commit over the source limit before making anything', async () => {
    const { app, uuid } = newApp();
    const dir = await checkout('large', { 'run.sh': 'true\n', 'big.bin': 'x'.repeat(2 * MIB) });
    await expect(make({ sourceLimitBytes: MIB }).open({ app, appUuid: uuid, directory: dir, env: {} })).rejects.toThrow(/more than 1 MiB/);
    expect(await containersOf(app)).toEqual([]);
  });

  /** Every file of an image's file system, as one text (a container of it, exported). */
  async function exportText(image: string): Promise<string> {
    const container = await docker.createContainer({ Image: image, Entrypoint: ['/bin/true'] });
    try {
      const stream = await container.export();
      const chunks: Buffer[] = [];
      for await (const chunk of stream as AsyncIterable<Buffer>) chunks.push(chunk);
      return Buffer.concat(chunks).toString('latin1');
    } finally {
      await container.remove({ force: true });
    }
  }
});
