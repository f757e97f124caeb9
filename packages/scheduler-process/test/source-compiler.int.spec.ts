import { existsSync } from 'node:fs';
import { lstat, readdir, readFile, stat, statfs } from 'node:fs/promises';
import { join } from 'node:path';
import { RequestRejected } from '@svc/core';
import { ProcessSourceCompiler } from '@svc/scheduler-process';
import { aRun } from './support/fixtures';
import { fixtureBuildpack, NPM_CI_COMPILE, OFFLINE_APP, REGISTRY_APP } from './support/buildpacks';
import { CompileFixture } from './support/compile';
import { describeWithSandbox } from './support/sandbox';

jest.setTimeout(180_000);

/** Whether any live process has the real uid. */
async function uidHasProcesses(uid: number): Promise<boolean> {
  for (const name of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const status = await readFile(`/proc/${name}/status`, 'utf8');
      if (!/^State:\s+Z/m.test(status) && Number(/^Uid:\s+([0-9]+)/m.exec(status)?.[1]) === uid) return true;
    } catch {
      // Gone meanwhile.
    }
  }
  return false;
}

/** Every path of a tree whose owner is not `uid`. */
async function notOwnedBy(dir: string, uid: number): Promise<string[]> {
  const wrong: string[] = [];
  const walk = async (path: string): Promise<void> => {
    const info = await lstat(path);
    if (info.uid !== uid || info.gid !== uid) wrong.push(`${path} ${info.uid}:${info.gid}`);
    if (info.isDirectory()) for (const name of await readdir(path)) await walk(join(path, name));
  };
  await walk(dir);
  return wrong;
}

describeWithSandbox('ProcessSourceCompiler (buildpack steps in the app sandbox, real processes)', () => {
  const t = new CompileFixture();

  afterEach(async () => {
    await t.tearDown();
  });

  it('detects, compiles and releases as the app user: BUILD_DIR is /app, CACHE_DIR, ENV_DIR and HOME are its own, and the app runs its compiled files', async () => {
    await t.setUp();
    const buildpack = await fixtureBuildpack('shell', {
      detect: 'test -f "$1/Procfile" && echo "Fixture shell"',
      compile: `set -e
echo "build dir $1 as $(id -u):$(id -g) groups $(id -G)"
echo "secret is $(cat "$3/SECRET")"
ls -la "$3"
echo cached > "$2/cached.txt"
echo home > "$HOME/home.txt" && echo "home $HOME"
mkdir -p "$1/out" && echo compiled > "$1/out/compiled.txt"
printf 'dangling' > "$1/out/link-target" && ln -s /app/out/link-target "$1/out/link"`,
      release: "printf -- '---\\nconfig_vars:\\n  FROM_BUILDPACK: \"yes\"\\n'",
    });
    const request = await t.checkout('myapp', { Procfile: 'web: node server.js\n' }, { SECRET: 's3cret', 'bad/name': 'never' });
    const session = await t.compiler.open(request);

    await expect(session.detect(buildpack)).resolves.toBe('Fixture shell');
    const output: string[] = [];
    await session.compile(buildpack, (line) => output.push(line));
    await expect(session.release(buildpack)).resolves.toBe('---\nconfig_vars:\n  FROM_BUILDPACK: "yes"');
    await expect(session.finish(() => undefined)).resolves.toEqual({ image: null, workdir: request.directory });

    const uid = await t.uidOf('myapp');
    expect(output).toContain(`build dir /app as ${uid}:${uid} groups ${uid} ${t.uidRange.from - 1}`);
    expect(output).toContain('secret is s3cret');
    expect(output.join('\n')).not.toContain('bad');
    expect(output).toContain('home /build/home');
    expect(output.find((line) => line.endsWith(' SECRET'))).toMatch(new RegExp(`^-r-------- 1 app +app .* SECRET$`));
    expect(await notOwnedBy(request.directory, uid)).toEqual([]);
    expect(await readFile(join(t.cacheDir('myapp'), 'cached.txt'), 'utf8')).toBe('cached\n');
    expect(((await stat(t.cacheDir('myapp'))).mode & 0o777).toString(8)).toBe('700');
    expect((await stat(t.cacheDir('myapp'))).uid).toBe(uid);
    // The build's config and home are gone; the app sees its compiled files where the build wrote them.
    expect(await readdir(join(t.dataDir, 'build-tmp'))).toEqual([]);
    const run = await t.scheduler.run(aRun('cat /app/out/compiled.txt /app/out/link && id -u', { app: 'myapp', workdir: request.directory }));
    expect(run.output).toBe(`compiled\ndangling${uid}\n`);
  });

  it('confines a compile as an app: no user namespace, descriptors 0-2 only, a writable /tmp, and a cgroup with its limits', async () => {
    await t.setUp();
    const buildpack = await fixtureBuildpack('prober', {
      compile: `unshare -U true 2>&1; echo "unshare $?"
echo "fds $(ls /proc/self/fd | tr '\\n' ' ')"
echo t > /tmp/t && echo "tmp $(cat /tmp/t)"
echo "cgroup $(cat /proc/self/cgroup | grep -E 'memory|^0::' | head -1)"`,
    });
    const session = await t.compiler.open(await t.checkout('prober', { 'a.txt': 'a' }));
    const output: string[] = [];
    try {
      await session.compile(buildpack, (line) => output.push(line));
    } finally {
      await session.discard();
    }

    expect(output).toContain('unshare 1');
    expect(output.join('\n')).toContain('Operation not permitted');
    // `ls` holds the directory it reads (3) besides 0-2; `$(…)` in sh reads a pipe as its stdout.
    expect(output.find((line) => line.startsWith('fds '))).toMatch(/^fds 0 1 2 3 $/);
    expect(output).toContain('tmp t');
    // The step's own cgroup (the namespace was made before it entered, so the path is relative).
    expect(output.find((line) => line.startsWith('cgroup '))).toMatch(new RegExp(`/svc/${t.uidRange.from}/build-[0-9a-f-]{36}$`));
  });

  it('says a non-matching detect with null, and fails a compile that exits non-zero with BUILD.FAILED', async () => {
    await t.setUp();
    const buildpack = await fixtureBuildpack('failing', { detect: 'exit 1', compile: 'echo trying; exit 3' });
    const session = await t.compiler.open(await t.checkout('myapp', { 'a.txt': 'a' }));
    await expect(session.detect(buildpack)).resolves.toBeNull();
    const output: string[] = [];
    const failure = session.compile(buildpack, (line) => output.push(line));
    await expect(failure).rejects.toBeInstanceOf(RequestRejected);
    await expect(failure).rejects.toMatchObject({ code: 'BUILD.FAILED', message: expect.stringContaining('bin/compile of the buildpack failing exited with code 3') });
    expect(output).toEqual(['trying']);
    await session.discard();
    expect(await readdir(join(t.dataDir, 'build-tmp'))).toEqual([]);
  });

  it('runs npm ci of a file: dependency offline and of a registry dependency over HTTPS, as the app user, and the app requires them', async () => {
    await t.setUp();
    const buildpack = await fixtureBuildpack('npm', { detect: 'test -f "$1/package.json" && echo Node.js', compile: NPM_CI_COMPILE });

    const offline = await t.checkout('offline', OFFLINE_APP, { NPM_FLAGS: '--offline' });
    const offlineSession = await t.compiler.open(offline);
    await expect(offlineSession.detect(buildpack)).resolves.toBe('Node.js');
    const offlineOutput: string[] = [];
    await offlineSession.compile(buildpack, (line) => offlineOutput.push(line));
    await offlineSession.finish(() => undefined);
    const offlineUid = await t.uidOf('offline');
    expect(offlineOutput).toContain(`installed as ${offlineUid}`);
    expect((await lstat(join(offline.directory, 'node_modules', 'local-dep'))).isSymbolicLink()).toBe(true);

    const online = await t.checkout('online', REGISTRY_APP);
    const session = await t.compiler.open(online);
    const output: string[] = [];
    await session.compile(buildpack, (line) => output.push(line));
    await session.finish(() => undefined);
    const uid = await t.uidOf('online');
    expect(output).toContain(`installed as ${uid}`);
    expect(await notOwnedBy(online.directory, uid)).toEqual([]);
    expect(existsSync(join(t.cacheDir('online'), 'npm', '_cacache'))).toBe(true);
    const run = await t.scheduler.run(
      aRun(`node -e "console.log(require('is-number')(5), require('local-dep'))"`, { app: 'online', workdir: online.directory }),
    );
    expect(run).toEqual({ exitCode: 0, output: 'true local dependency\n' });
  });

  it("keeps an app's cache across its builds, shows it to no other app, refuses a build over the limit keeping the previous cache, and removes it with the app", async () => {
    await t.setUp({ cacheLimitBytes: 256 * 1024 });
    const counting = await fixtureBuildpack('counting', {
      compile: `n=$(cat "$2/count" 2>/dev/null || echo 0); echo $((n + 1)) > "$2/count"; echo "build $((n + 1))"; ls -A "$2" | tr '\\n' ' '; echo
if [ -n "$(cat "$3/BIG" 2>/dev/null)" ]; then head -c 1048576 /dev/zero > "$2/big"; fi`,
    });
    const build = async (app: string, env: Record<string, string> = {}): Promise<string[]> => {
      const session = await t.compiler.open(await t.checkout(app, { 'a.txt': 'a' }, env));
      const output: string[] = [];
      try {
        await session.compile(counting, (line) => output.push(line));
        await session.finish(() => undefined);
      } catch (error) {
        await session.discard();
        throw Object.assign(error as Error, { output });
      }
      return output;
    };

    expect(await build('myapp')).toContain('build 1');
    expect(await build('myapp')).toContain('build 2');
    // Another app starts from an empty cache of its own, and cannot reach the first one's.
    expect(await build('other')).toEqual(['build 1', 'count ']);
    const prying = await fixtureBuildpack('prying', {
      compile: `cat ${t.cacheDir('myapp')}/count; ls ${t.dataDir}; ls /build; echo done`,
    });
    const session = await t.compiler.open(await t.checkout('other', { 'a.txt': 'a' }));
    const pried: string[] = [];
    await session.compile(prying, (line) => pried.push(line));
    await session.finish(() => undefined);
    expect(pried.join('\n')).toMatch(/No such file or directory[\s\S]*No such file or directory/);
    expect(pried.filter((line) => !/No such file/.test(line))).toEqual(['buildpack', 'cache', 'env', 'home', 'done']);

    await expect(build('myapp', { BIG: 'yes' })).rejects.toMatchObject({
      code: 'BUILD.FAILED',
      message: expect.stringMatching(/the build cache took 1(\.\d+)? MiB, over BUILD_CACHE_LIMIT_MB=0\.25 \(writes past it fail\): nothing of this build's cache is kept, the previous one stays/),
      output: expect.arrayContaining(['build 3']),
    });
    // The refused build's cache is not kept: the next one starts from the second one's.
    expect(await readdir(t.cacheDir('myapp'))).toEqual(['count']);
    expect(await build('myapp')).toContain('build 3');

    await t.compiler.removeApp('myapp', t.uuid('myapp'));
    expect(existsSync(t.cacheDir('myapp'))).toBe(false);
    expect(existsSync(t.cacheDir('other'))).toBe(true);
    await expect(t.compiler.removeApp('never-built', t.uuid('never-built'))).resolves.toBeUndefined();
  });

  it('kills a step past its time limit, a fork bomb, and a step over its memory limit, leaving no process of the app', async () => {
    await t.setUp({ stepTimeoutMs: 4000, memoryLimitBytes: 128 * 1024 ** 2 }, [], 64);
    const compileWith = async (app: string, body: string): Promise<unknown> => {
      const buildpack = await fixtureBuildpack('hostile', { compile: body });
      const session = await t.compiler.open(await t.checkout(app, { 'a.txt': 'a' }));
      try {
        await session.compile(buildpack, () => undefined);
        return null;
      } catch (error) {
        return error;
      } finally {
        await session.discard();
      }
    };

    const started = Date.now();
    expect(await compileWith('sleeper', '(setsid sleep 300 &); sleep 300')).toMatchObject({
      code: 'BUILD.FAILED',
      message: 'The image build failed: bin/compile of the buildpack hostile ran longer than its time limit of 4 s',
    });
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(await uidHasProcesses(await t.uidOf('sleeper'))).toBe(false);

    const bomb = (await compileWith('bomber', 'b() { b | b & }; b; sleep 300')) as Error;
    expect(bomb.message).toMatch(/ran longer than its time limit of 4 s|exited with code|killed/);
    expect(await uidHasProcesses(await t.uidOf('bomber'))).toBe(false);

    const hog = `node -e "const a = []; setInterval(() => a.push(Buffer.alloc(32 * 1024 * 1024, 1)), 50)"`;
    // The step's cgroup holds it to the limit (the kernel kills it); the poll would catch a slower one.
    expect(await compileWith('hog', hog)).toMatchObject({
      message: expect.stringMatching(/bin\/compile of the buildpack hostile (was killed for using more than its memory limit of 128\.0 MiB \(out of memory\)|held more memory than its limit of 128\.0 MiB)/),
    });
    expect(await uidHasProcesses(await t.uidOf('hog'))).toBe(false);
  });

  it("fails a step past the build's own time limit, and a compile that prints past its output limit", async () => {
    await t.setUp({ buildTimeoutMs: 3000, outputLimitBytes: 64 * 1024 });
    const slow = await fixtureBuildpack('slow', { detect: 'sleep 2; echo slow', compile: 'sleep 300' });
    const session = await t.compiler.open(await t.checkout('myapp', { 'a.txt': 'a' }));
    await expect(session.detect(slow)).resolves.toBe('slow');
    await expect(session.compile(slow, () => undefined)).rejects.toMatchObject({ message: expect.stringContaining("ran past the build's time limit of 3 s") });
    await session.discard();

    const chatty = await fixtureBuildpack('chatty', { compile: 'yes "a line of output"' });
    const chattyCheckout = await t.checkout('myapp', { 'a.txt': 'a' });
    const next = await t.compiler.open(chattyCheckout);
    const lines: string[] = [];
    await expect(next.compile(chatty, (line) => lines.push(line))).rejects.toMatchObject({ message: expect.stringContaining('printed more than its output limit of 64.0 KiB') });
    expect(lines.length).toBeGreaterThan(1000);
    expect(lines.join('\n').length).toBeLessThanOrEqual(64 * 1024);
    await next.discard();
    // A discarded checkout is given back to the controller: no process of the app can write there.
    expect((await stat(chattyCheckout.directory)).uid).toBe(0);
    expect((await stat(join(chattyCheckout.directory, 'a.txt'))).uid).toBe(0);
  });

  describe('disk written by a build: BUILD_IMAGE_LIMIT_MB and BUILD_CACHE_LIMIT_MB met while it runs', () => {
    const MIB = 1024 * 1024;
    /** The most the file system of a limit holds: the limit, a sixteenth for its tables, 8 MiB. */
    const bound = (limit: number): number => limit + limit / 16 + 8 * MIB;
    /** A compile that writes 512 MiB of zeros to `$where/big` (going on past a failed write), then prints the size it got. */
    const writer = (where: string): string => `head -c 536870912 /dev/zero > "${where}/big"; echo "head exit $?"; echo "wrote $(wc -c < "${where}/big")"; exit 0`;
    /** Every mount of this machine under the test's data directory. */
    const mountsUnder = async (dir: string): Promise<string[]> => (await readFile('/proc/mounts', 'utf8')).split('\n').filter((line) => line.includes(dir));
    const attempt = async (app: string, body: string, env: Record<string, string> = {}): Promise<{ error: unknown; output: string[]; directory: string }> => {
      const buildpack = await fixtureBuildpack('writer', { compile: body });
      const request = await t.checkout(app, { 'a.txt': 'a', Procfile: 'web: true\n' }, env);
      const session = await t.compiler.open(request);
      const output: string[] = [];
      try {
        await session.compile(buildpack, (line) => output.push(line));
        await session.finish(() => undefined);
        return { error: null, output, directory: request.directory };
      } catch (error) {
        await session.discard();
        return { error, output, directory: request.directory };
      }
    };
    const wrote = (output: string[]): number => Number(/^wrote (\d+)$/.exec(output.find((line) => line.startsWith('wrote ')) ?? '')?.[1] ?? NaN);

    it('stops a compile writing a big app directory at the limit (ENOSPC), refuses the build with its figures and keeps nothing of it', async () => {
      await t.setUp({ imageLimitBytes: 16 * MIB });
      const before = (await statfs(t.dataDir)).bavail * (await statfs(t.dataDir)).bsize;
      const { error, output, directory } = await attempt('bigapp', writer('$1'));

      expect(output.join('\n')).toContain('No space left on device');
      expect(output).not.toContain('head exit 0');
      // The writer got no more than the limit's file system holds, not the 512 MiB it asked for.
      expect(wrote(output)).toBeGreaterThan(16 * MIB);
      expect(wrote(output)).toBeLessThanOrEqual(bound(16 * MIB));
      expect(error).toMatchObject({ code: 'BUILD.FAILED', message: expect.stringMatching(/the build made (1[6-9]|2[0-5])(\.\d+)? MiB, over BUILD_IMAGE_LIMIT_MB=16: nothing of it is kept/) });
      expect(existsSync(join(directory, 'big'))).toBe(false);
      expect(await readdir(join(t.dataDir, 'build-tmp'))).toEqual([]);
      expect(await mountsUnder(t.dataDir)).toEqual([]);
      // Nothing of what it wrote takes this machine's disk (other files' tests write beside it: a wide margin).
      const after = (await statfs(t.dataDir)).bavail * (await statfs(t.dataDir)).bsize;
      expect(before - after).toBeLessThan(64 * MIB);
    });

    it('stops a compile writing past the cache limit (ENOSPC), refuses the build with its figures and keeps the previous cache', async () => {
      await t.setUp({ cacheLimitBytes: 8 * MIB });
      expect((await attempt('cached', 'echo first > "$2/first"')).error).toBeNull();
      const { error, output } = await attempt('cached', writer('$2'));

      expect(output.join('\n')).toContain('No space left on device');
      expect(wrote(output)).toBeGreaterThan(8 * MIB);
      expect(wrote(output)).toBeLessThanOrEqual(bound(8 * MIB));
      expect(error).toMatchObject({ code: 'BUILD.FAILED', message: expect.stringMatching(/the build cache took (8|9|1[0-7])(\.\d+)? MiB, over BUILD_CACHE_LIMIT_MB=8 /) });
      expect(await readdir(t.cacheDir('cached'))).toEqual(['first']);
      expect(await readdir(join(t.dataDir, 'build-tmp'))).toEqual([]);
      expect(await mountsUnder(t.dataDir)).toEqual([]);
    });

    it("unmounts and removes what builds of an interrupted controller left, at the next one's start", async () => {
      await t.setUp({ imageLimitBytes: 16 * MIB, cacheLimitBytes: 8 * MIB });
      // A build opened and never closed: its controller was killed.
      await t.compiler.open(await t.checkout('killed', { 'a.txt': 'a' }));
      expect(await mountsUnder(t.dataDir)).toHaveLength(3);
      const next = new ProcessSourceCompiler({ scheduler: t.scheduler, dataDir: t.dataDir });
      await expect(next.removeLeftovers()).resolves.toBe(1);
      expect(await mountsUnder(t.dataDir)).toEqual([]);
      expect(await readdir(join(t.dataDir, 'build-tmp'))).toEqual([]);
    });

    it('bounds HOME, the steps\' scratch, by the image limit, and keeps a build within both limits: its app directory and its cache', async () => {
      await t.setUp({ imageLimitBytes: 16 * MIB, cacheLimitBytes: 8 * MIB });
      const { error, output, directory } = await attempt('scratchy', `${writer('$HOME').replace(/; exit 0$/, '')}; rm -f "$HOME/big"; echo made > "$1/made.txt"; echo kept > "$2/kept.txt"`);

      expect(error).toBeNull();
      expect(wrote(output)).toBeLessThanOrEqual(bound(16 * MIB));
      expect(await readFile(join(directory, 'made.txt'), 'utf8')).toBe('made\n');
      expect(await readFile(join(t.cacheDir('scratchy'), 'kept.txt'), 'utf8')).toBe('kept\n');
      expect(await mountsUnder(t.dataDir)).toEqual([]);
    });
  });
});
