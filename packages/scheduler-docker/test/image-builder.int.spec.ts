import { mkdtemp, mkdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { BUILD_FAILED, DomainError } from '@svc/core';
import { APP_LABEL, APP_UID, DockerImageBuilder } from '../src';
import { BUSYBOX_IMAGE, describeWithEngineClient as describeWithEngine, imageExists, runIn } from './support/engine';



async function failureOf(promise: Promise<unknown>): Promise<DomainError> {
  try {
    await promise;
  } catch (error) {
    if (DomainError.is(error)) return error;
    throw error;
  }
  throw new Error('Expected the build to fail');
}

/** The layer ids a build's output names (` ---> 0123456789ab`). */
const layersIn = (lines: string[]): string[] => lines.flatMap((line) => /^ ---> ([0-9a-f]{12})$/.exec(line)?.[1] ?? []);

describeWithEngine('DockerImageBuilder against a real engine', (engine) => {
  const suffix = `${process.pid}-${Date.now().toString(36)}`;
  const app = `imgtest-${suffix}`;
  const other = `imgother-${suffix}`;
  const appUuid = `uuid-of-${app}`;
  const otherUuid = `uuid-of-${other}`;
  let root: string;
  let builder: DockerImageBuilder;

  /** A checkout with the given files. */
  const checkout = async (name: string, files: Record<string, string>): Promise<string> => {
    const dir = join(root, name);
    for (const [path, content] of Object.entries(files)) {
      await mkdir(join(dir, path, '..'), { recursive: true });
      await writeFile(join(dir, path), content);
    }
    return dir;
  };

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-image-builder-'));
    builder = new DockerImageBuilder(engine(), { stackImage: BUSYBOX_IMAGE, timeoutMs: 120_000 });
  });

  afterAll(async () => {
    const docker = engine();
    for (const name of [app, other]) {
      const images = await docker.listImages({ filters: JSON.stringify({ label: [`${APP_LABEL}=${name}`] }) });
      for (const image of images) await docker.getImage(image.Id).remove({ force: true }).catch(() => undefined);
    }
    await rm(root, { recursive: true, force: true });
    // Removing the images takes longer than jest's default 5 s on a busy shared engine.
  }, 120_000);

  it('builds a Dockerfile into an image with its CMD and files, streaming the output, and names it <app>:<version>', async () => {
    const dir = await checkout('dockerfile', {
      Dockerfile: 'FROM svc-test/busybox:1\nCOPY greeting.txt /greeting.txt\nRUN echo built-by-run > /run.txt && echo step-output-marker\nCMD ["sh", "-c", "cat /greeting.txt /run.txt"]\n',
      'greeting.txt': 'hello from the commit\n',
    });
    const lines: string[] = [];

    const id = await builder.build({ app, appUuid, directory: dir, kind: 'dockerfile' }, (line) => lines.push(line));
    await builder.tag(id, `${app}:1`);

    const image = await engine().getImage(`${app}:1`).inspect();
    expect(image.Id).toBe(id);
    expect(image.Config.Cmd).toEqual(['sh', '-c', 'cat /greeting.txt /run.txt']);
    expect(image.Config.Labels?.[APP_LABEL]).toBe(app);
    expect(lines).toContainEqual(expect.stringMatching(/^Step 1\/\d+ : FROM svc-test\/busybox:1$/));
    expect(lines).toContain('step-output-marker');
    expect(await runIn(engine(), `${app}:1`)).toBe('hello from the commit\nbuilt-by-run\n');
  }, 180_000);

  it('lays a Procfile-only commit onto the stack image as one layer in /app, owned by the app user', async () => {
    const dir = await checkout('procfile', { Procfile: 'web: sh -c "httpd -f -p $PORT"\n', 'index.html': '<h1>hi</h1>\n', 'lib/util.sh': 'echo util\n' });
    const lines: string[] = [];

    const id = await builder.build({ app, appUuid, directory: dir, kind: 'procfile' }, (line) => lines.push(line));
    await builder.tag(id, `${app}:2`);

    const [image, stack] = await Promise.all([engine().getImage(`${app}:2`).inspect(), engine().getImage(BUSYBOX_IMAGE).inspect()]);
    expect(image.RootFS.Layers).toEqual([...(stack.RootFS.Layers ?? []), expect.any(String)]);
    expect(image.Config.WorkingDir).toBe('/app');
    const listing = await runIn(engine(), `${app}:2`, ['ls', '-lnRa', '/app']);
    expect(listing).toMatch(new RegExp(`Procfile`));
    expect(listing).toMatch(/index\.html/);
    expect(listing).toMatch(/util\.sh/);
    // Every entry (., the files, lib) belongs to the app user; none to root.
    const owners = listing.split('\n').filter((line) => /^[-d]/.test(line) && !line.endsWith(' ..')).map((line) => line.split(/\s+/).slice(2, 4).join(':'));
    expect(owners.length).toBeGreaterThanOrEqual(5);
    expect(new Set(owners)).toEqual(new Set([`${APP_UID}:${APP_UID}`]));
    expect(lines[0]).toMatch(/^Step 1\/\d+ : FROM svc-test\/busybox:1$/);
  }, 180_000);

  it('leaves out of a Dockerfile build what its .dockerignore names, exceptions included, and still builds a Dockerfile it lists', async () => {
    const dir = await checkout('dockerignore', {
      Dockerfile: 'FROM svc-test/busybox:1\nCOPY . /ctx/\nCMD ["ls", "-aR", "/ctx"]\n',
      '.dockerignore': '# what stays out\nDockerfile\nsecret.txt\nnode_modules\n!node_modules/keep.txt\n*.log\n',
      'secret.txt': 'do not send\n',
      'debug.log': 'noise\n',
      'node_modules/big/index.js': 'module.exports = 1;\n',
      'node_modules/keep.txt': 'kept\n',
      'src/app.js': 'console.log(1);\n',
    });

    const id = await builder.build({ app, appUuid, directory: dir, kind: 'dockerfile' }, () => undefined);
    await builder.tag(id, `${app}:31`);

    const listing = await runIn(engine(), `${app}:31`);
    expect(listing).toMatch(/app\.js/);
    expect(listing).toMatch(/keep\.txt/);
    // Sent for the build, then left out of the context, as the docker client and engine do.
    expect(listing).not.toMatch(/secret\.txt|debug\.log|index\.js|Dockerfile/);
  }, 120_000);

  it('fails a build whose step fails with the engine\'s reason, and leaves none of its layers', async () => {
    const dir = await checkout('failing', { Dockerfile: 'FROM svc-test/busybox:1\nRUN echo one > /one\nRUN echo two > /two\nRUN echo about-to-fail && exit 3\n' });
    const lines: string[] = [];

    const error = await failureOf(builder.build({ app, appUuid, directory: dir, kind: 'dockerfile' }, (line) => lines.push(line)));

    expect(error.code).toBe(BUILD_FAILED);
    expect(error.message).toMatch(/returned a non-zero code: 3/);
    expect(lines).toContain('about-to-fail');
    const layers = layersIn(lines).filter((layer) => !(layer === ''));
    // The base image's layer is shown after FROM; the two RUN steps made one each.
    const base = (await engine().getImage(BUSYBOX_IMAGE).inspect()).Id.replace('sha256:', '').slice(0, 12);
    const made = layers.filter((layer) => layer !== base);
    expect(made.length).toBeGreaterThanOrEqual(2);
    for (const layer of made) expect(await imageExists(engine(), layer)).toBe(false);
    expect(await imageExists(engine(), BUSYBOX_IMAGE)).toBe(true);
  }, 180_000);

  it('fails a Dockerfile the engine cannot parse with the engine\'s reason', async () => {
    const dir = await checkout('unparsable', { Dockerfile: 'FROM svc-test/busybox:1\nFORM nothing\n' });

    const error = await failureOf(builder.build({ app, appUuid, directory: dir, kind: 'dockerfile' }, () => undefined));

    expect(error.code).toBe(BUILD_FAILED);
    expect(error.message).toMatch(/unknown instruction: FORM/i);
  }, 60_000);

  it('runs build steps with the memory limit, no swap, CPU shares and network it is given, and stops a build past its time limit', async () => {
    const slow = new DockerImageBuilder(engine(), { stackImage: BUSYBOX_IMAGE, timeoutMs: 6_000, memoryBytes: 96 * 1024 * 1024, cpuShares: 256 });
    const dir = await checkout('slow', { Dockerfile: 'FROM svc-test/busybox:1\nRUN echo sleeping && sleep 120\n' });
    let step: Promise<Docker.ContainerInspectInfo> | null = null;

    const error = await failureOf(slow.build({ app, appUuid, directory: dir, kind: 'dockerfile' }, (line) => {
      const running = /^ ---> Running in ([0-9a-f]{12})$/.exec(line)?.[1];
      if (running !== undefined) step = engine().getContainer(running).inspect();
    }));

    expect(error.code).toBe(BUILD_FAILED);
    expect(error.message).toMatch(/took longer than 6 seconds/);
    expect(step).not.toBeNull();
    const container = await (step as unknown as Promise<Docker.ContainerInspectInfo>);
    expect(container.HostConfig).toMatchObject({ Memory: 96 * 1024 * 1024, MemorySwap: 96 * 1024 * 1024, CpuShares: 256, NetworkMode: 'none' });
    // The engine stops the step once the build's connection is gone.
    let gone = false;
    for (let i = 0; i < 60 && !gone; i += 1) {
      gone = !(await engine().getContainer(container.Id).inspect().then(() => true, () => false));
      if (!gone) await new Promise((done) => setTimeout(done, 500));
    }
    expect(gone).toBe(true);
  }, 120_000);

  it('refuses a Dockerfile that builds from another app\'s image', async () => {
    const dir = await checkout('victim', { Dockerfile: 'FROM svc-test/busybox:1\nRUN echo secret > /secret\n' });
    const id = await builder.build({ app: other, appUuid: otherUuid, directory: dir, kind: 'dockerfile' }, () => undefined);
    await builder.tag(id, `${other}:1`);
    const attempts = [
      `FROM ${other}:1\n`,
      `ARG BASE=${other}:1\nFROM \${BASE}\n`,
      `FROM svc-test/busybox:1\nCOPY --from=${other}:1 /secret /stolen\n`,
      `FROM svc-test/busybox:1\nONBUILD COPY --from=${other}:1 /secret /stolen\n`,
    ];
    for (const [index, dockerfile] of attempts.entries()) {
      const attempt = await checkout(`thief-${index}`, { Dockerfile: dockerfile });

      const error = await failureOf(builder.build({ app, appUuid, directory: attempt, kind: 'dockerfile' }, () => undefined));

      expect(error.message).toMatch(/an image of another app/);
    }
    // The same id, another app: the one that had the id was deleted and it was taken again.
    const again = await checkout('same-id', { Dockerfile: `FROM ${other}:1\n` });
    const error = await failureOf(builder.build({ app: other, appUuid: `${otherUuid}-again`, directory: again, kind: 'dockerfile' }, () => undefined));
    expect(error.message).toMatch(/an image of another app/);
    // The app itself may build on its own images.
    const own = await checkout('own', { Dockerfile: `FROM ${other}:1\nRUN cat /secret\n` });
    const lines: string[] = [];
    await builder.build({ app: other, appUuid: otherUuid, directory: own, kind: 'dockerfile' }, (line) => lines.push(line));
    expect(lines).toContain('secret');
  }, 180_000);

  it('refuses a Dockerfile that is a link instead of reading what it points to', async () => {
    const dir = await checkout('linked', { 'real.txt': 'FROM svc-test/busybox:1\n' });
    await symlink('/etc/hostname', join(dir, 'Dockerfile'));

    const error = await failureOf(builder.build({ app, appUuid, directory: dir, kind: 'dockerfile' }, () => undefined));

    expect(error.message).toMatch(/the Dockerfile must be a regular file/);
  }, 60_000);

  it('refuses a checkout larger than the context limit before sending it', async () => {
    const small = new DockerImageBuilder(engine(), { stackImage: BUSYBOX_IMAGE, contextLimitBytes: 1024 * 1024 });
    const dir = await checkout('large', { Procfile: 'web: true\n', 'blob.bin': 'x'.repeat(2 * 1024 * 1024) });

    const error = await failureOf(small.build({ app, appUuid, directory: dir, kind: 'procfile' }, () => undefined));

    expect(error.message).toMatch(/more than 1 MiB/);
  }, 60_000);

  it('prunes the app\'s images not kept, except one a container uses, and never another app\'s', async () => {
    const dir = await checkout('prune', { Procfile: 'web: true\n' });
    for (const version of [11, 12, 13]) {
      const id = await builder.build({ app, appUuid, directory: dir, kind: 'procfile' }, () => undefined);
      await builder.tag(id, `${app}:${version}`);
    }
    const user = await engine().createContainer({ Image: `${app}:12`, Cmd: ['true'] });
    try {
      const removed = await builder.prune(app, [`${app}:13`, `${app}:1`, `${app}:2`]);

      expect(removed).toEqual([`${app}:11`, `${app}:31`]);
      expect(await imageExists(engine(), `${app}:11`)).toBe(false);
      expect(await imageExists(engine(), `${app}:12`)).toBe(true);
      expect(await imageExists(engine(), `${app}:13`)).toBe(true);
      expect(await imageExists(engine(), `${other}:1`)).toBe(true);
    } finally {
      await user.remove({ force: true });
    }
    expect(await builder.prune(app, [`${app}:13`])).toEqual([`${app}:1`, `${app}:12`, `${app}:2`]);
    expect(await imageExists(engine(), `${app}:13`)).toBe(true);
  }, 240_000);

  it('removes an image with every name it has', async () => {
    const dir = await checkout('remove', { Procfile: 'web: true\n' });
    const id = await builder.build({ app, appUuid, directory: dir, kind: 'procfile' }, () => undefined);
    await builder.tag(id, `${app}:21`);

    await builder.remove(id);
    await builder.remove(id);

    expect(await imageExists(engine(), `${app}:21`)).toBe(false);
    expect(await imageExists(engine(), id)).toBe(false);
  }, 120_000);
});
