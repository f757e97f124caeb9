import { existsSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryLogStore } from '@svc/core/testing';
import { ProcessScheduler, ProcessSourceCompiler } from '@svc/scheduler-process';
import { fixtureBuildpack, removeFixtureBuildpacks, writeTree } from './support/buildpacks';

jest.setTimeout(60_000);

describe('ProcessSourceCompiler without a sandbox (a single trusted developer)', () => {
  let dataDir: string;
  let scheduler: ProcessScheduler;

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-compile-plain-'));
    scheduler = new ProcessScheduler({ dataDir, logs: new InMemoryLogStore(), sandbox: null });
  });

  afterEach(async () => {
    await scheduler.shutdown();
    await rm(dataDir, { recursive: true, force: true });
    await removeFixtureBuildpacks();
  });

  it("runs the steps unconfined with the host's paths as BUILD_DIR, CACHE_DIR and ENV_DIR, and returns the checkout", async () => {
    const compiler = new ProcessSourceCompiler({ scheduler, dataDir });
    const directory = join(dataDir, 'builds', 'myapp', 'abc');
    await writeTree(directory, { Procfile: 'web: sh server.sh\n' });
    const buildpack = await fixtureBuildpack('plain', {
      compile: 'echo "$1|$2|$(cat "$3/GREETING")"; echo built > "$1/built.txt"; echo kept > "$2/kept.txt"',
    });
    const uuid = '0b1c2d3e-4f50-4617-8899-aabbccddeeff';
    const session = await compiler.open({ app: 'myapp', appUuid: uuid, directory, env: { GREETING: 'hello' } });
    await expect(session.detect(buildpack)).resolves.toBe('plain');
    const output: string[] = [];
    await session.compile(buildpack, (line) => output.push(line));
    await expect(session.finish(() => undefined)).resolves.toEqual({ image: null, workdir: directory });

    expect(output).toEqual([`${directory}|${join(dataDir, 'build-cache', uuid)}|hello`]);
    expect(await readFile(join(directory, 'built.txt'), 'utf8')).toBe('built\n');
    expect(await readdir(join(dataDir, 'build-tmp'))).toEqual([]);
    await compiler.removeApp('myapp', uuid);
    expect(existsSync(join(dataDir, 'build-cache', uuid))).toBe(false);
  });

  it('refuses a second build of an app while one is open, and takes one again once it is closed', async () => {
    const compiler = new ProcessSourceCompiler({ scheduler, dataDir });
    await writeTree(join(dataDir, 'checkout'), { a: 'a' });
    const request = { app: 'myapp', appUuid: '0b1c2d3e-4f50-4617-8899-aabbccddeeff', directory: join(dataDir, 'checkout'), env: {} };
    const first = await compiler.open(request);
    await expect(compiler.open(request)).rejects.toMatchObject({ code: 'BUILD.FAILED', message: expect.stringContaining('another build of this app is in progress') });
    const other = await compiler.open({ ...request, app: 'other', appUuid: '1b1c2d3e-4f50-4617-8899-aabbccddeeff' });
    await first.discard();
    await other.finish(() => undefined);
    const again = await compiler.open(request);
    await again.finish(() => undefined);
  });

  it('refuses a checkout that does not exist and an unusable app uuid, before lending anything', async () => {
    const compiler = new ProcessSourceCompiler({ scheduler, dataDir });
    await expect(compiler.open({ app: 'myapp', appUuid: '0b1c2d3e-4f50-4617-8899-aabbccddeeff', directory: join(dataDir, 'none'), env: {} })).rejects.toThrow(/does not exist/);
    await writeTree(join(dataDir, 'checkout'), { a: 'a' });
    await expect(compiler.open({ app: 'myapp', appUuid: '../../etc', directory: join(dataDir, 'checkout'), env: {} })).rejects.toThrow(/unusable app uuid/);
    await expect(compiler.removeApp('myapp', '../x')).rejects.toThrow(/unusable app uuid/);
  });
});
