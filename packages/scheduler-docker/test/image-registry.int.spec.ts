import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import { Unavailable, buildSourceImage, isDigestReference } from '@svc/core';
import { APP_LABEL, DockerImageBuilder, createEngine } from '../src';
import { ImagePuller } from '../src/images';
import { BUSYBOX_IMAGE, TEST_REGISTRY, describeWithEngineClient as describeWithEngine, itWithRegistry, imageExists, runIn } from './support/engine';

/** The two engines and the registry of `.ci/swarm.sh`, when it ran. */
const SWARM_HOST = process.env.TEST_SWARM_HOST?.trim() || null;
const SWARM_WORKER_HOST = process.env.TEST_SWARM_WORKER_HOST?.trim() || null;
const SWARM_REGISTRY = process.env.TEST_SWARM_REGISTRY?.trim() || null;
/** Its registry that takes no request without a login. */
const SWARM_AUTH_REGISTRY = process.env.TEST_SWARM_AUTH_REGISTRY?.trim() || null;
const SWARM_LOGIN = { username: process.env.TEST_SWARM_REGISTRY_USERNAME ?? '', password: process.env.TEST_SWARM_REGISTRY_PASSWORD ?? '' };

/** Pulls `image` into the engine, failing with the engine's reason. */
async function pull(docker: Docker, image: string): Promise<void> {
  const stream = (await docker.pull(image)) as NodeJS.ReadableStream;
  await new Promise<void>((resolve, reject) => {
    let failure: string | null = null;
    docker.modem.followProgress(
      stream,
      (error: Error | null) => (error ? reject(error) : failure !== null ? reject(new Error(failure)) : resolve()),
      (event: { error?: string }) => {
        if (event.error) failure = event.error;
      },
    );
  });
}

/** A port of 127.0.0.1 that nothing listens on. */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** The images of the engine labelled as `app`'s. */
async function imagesOf(docker: Docker, app: string): Promise<Docker.ImageInfo[]> {
  return docker.listImages({ filters: JSON.stringify({ label: [`${APP_LABEL}=${app}`] }) });
}

async function removeImagesOf(docker: Docker, app: string): Promise<void> {
  for (const image of await imagesOf(docker, app)) await docker.getImage(image.Id).remove({ force: true }).catch(() => undefined);
}

/** A checkout of a Procfile app with one file of its own. */
async function checkout(root: string, name: string, content: string): Promise<string> {
  const dir = join(root, name);
  await mkdir(dir, { recursive: true });
  await writeFile(join(dir, 'Procfile'), 'web: httpd -f -p $PORT\n');
  await writeFile(join(dir, 'marker.txt'), content);
  return dir;
}

describeWithEngine('DockerImageBuilder with a registry (REGISTRY)', (engine) => {
  const suffix = `${process.pid}-${Date.now().toString(36)}`;
  const app = `regtest-${suffix}`;
  let root: string;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-image-registry-'));
  });

  afterAll(async () => {
    await removeImagesOf(engine(), app);
    await rm(root, { recursive: true, force: true });
  });

  itWithRegistry('pushes each build and answers its reference by digest, which pulls the exact image once the local one is gone', async () => {
    const docker = engine();
    const registry = TEST_REGISTRY as string;
    const builder = new DockerImageBuilder(docker, { stackImage: BUSYBOX_IMAGE, timeoutMs: 120_000, registry });
    const lines: string[] = [];
    const reference = await builder.build({ app, appUuid: `uuid-${app}`, directory: await checkout(root, 'one', 'first build'), kind: 'procfile' }, (line) => lines.push(line));

    expect(reference).toMatch(new RegExp(`^${registry.replace(/[.]/g, '\\.')}/${app}@sha256:[0-9a-f]{64}$`));
    expect(isDigestReference(reference)).toBe(true);
    expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^Pushing ${registry.replace(/[.]/g, '\\.')}/${app}:build-[0-9a-f]{16}$`)));
    expect(lines).toContain(`Pushed ${reference}`);
    // The registry has the manifest under that digest.
    const digest = reference.slice(reference.indexOf('@') + 1);
    const manifest = await fetch(`http://${registry}/v2/${app}/manifests/${digest}`, {
      headers: { Accept: 'application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json' },
    });
    expect(manifest.status).toBe(200);

    // The core names it for its release by that reference, as with an engine id.
    await builder.tag(reference, `${app}:1`);
    expect((await docker.getImage(`${app}:1`).inspect()).RepoDigests).toContain(reference);

    // Gone from the engine, every name with it; pulled again by digest, the same files.
    await builder.remove(reference);
    expect(await imageExists(docker, `${app}:1`)).toBe(false);
    expect(await imageExists(docker, reference)).toBe(false);
    await pull(docker, reference);
    expect(await runIn(docker, reference, ['cat', '/app/marker.txt'])).toBe('first build');
  }, 180_000);

  itWithRegistry('prunes a pushed build like any other, keeping the builds named by digest', async () => {
    const docker = engine();
    const registry = TEST_REGISTRY as string;
    const builder = new DockerImageBuilder(docker, { stackImage: BUSYBOX_IMAGE, timeoutMs: 120_000, registry });
    const first = await builder.build({ app, appUuid: `uuid-${app}`, directory: await checkout(root, 'two', 'second build'), kind: 'procfile' }, () => undefined);
    await builder.tag(first, `${app}:2`);
    const second = await builder.build({ app, appUuid: `uuid-${app}`, directory: await checkout(root, 'three', 'third build'), kind: 'procfile' }, () => undefined);
    await builder.tag(second, `${app}:3`);
    expect(second).not.toBe(first);

    const removed = await builder.prune(app, [second]);
    expect(removed).toEqual(expect.arrayContaining([`${app}:2`]));
    expect(removed).not.toContain(`${app}:3`);
    expect(await imageExists(docker, first)).toBe(false);
    expect(await imageExists(docker, `${app}:3`)).toBe(true);
    expect(await runIn(docker, second, ['cat', '/app/marker.txt'])).toBe('third build');
  }, 180_000);

  it('a registry that cannot be reached fails the push as the builder being unavailable, and keeps nothing of the build', async () => {
    const docker = engine();
    const registry = `127.0.0.1:${await closedPort()}`;
    const broken = `${app}-unreachable`;
    const builder = new DockerImageBuilder(docker, { stackImage: BUSYBOX_IMAGE, timeoutMs: 120_000, registry });
    const lines: string[] = [];
    try {
      const failure = await buildSourceImage(builder, { app: broken, appUuid: `uuid-${broken}`, directory: await checkout(root, 'four', 'never pushed'), kind: 'procfile' }, (line) => lines.push(line))
        .then(() => null, (error: unknown) => error);
      expect(failure).toBeInstanceOf(Unavailable);
      expect((failure as Unavailable).code).toBe('BUILDER.FAILED');
      expect((failure as Unavailable).message).toContain(`pushing the image to the registry ${registry} failed`);
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^The push to ${registry.replace(/[.]/g, '\\.')} failed: `)));
      expect(await imagesOf(docker, broken)).toEqual([]);
      const named = (await docker.listImages()).flatMap((image) => image.RepoTags ?? []).filter((tag) => tag.startsWith(`${registry}/`));
      expect(named).toEqual([]);
    } finally {
      await removeImagesOf(docker, broken);
    }
  }, 180_000);
});

/**
 * On the swarm of `.ci/swarm.sh`: a build made on the manager is pulled by the worker, which
 * never had it, by the reference the builder answers.
 */
function describeWithSwarm(title: string, body: () => void): void {
  if (SWARM_HOST !== null && SWARM_WORKER_HOST !== null && SWARM_REGISTRY !== null && SWARM_AUTH_REGISTRY !== null) {
    describe(title, body);
  } else if (process.env.CI === 'true') {
    describe(title, () => {
      it('needs a swarm: TEST_SWARM_HOST, TEST_SWARM_WORKER_HOST, TEST_SWARM_REGISTRY and TEST_SWARM_AUTH_REGISTRY are not set (.ci/swarm.sh starts one)', () => {
        throw new Error('TEST_SWARM_HOST, TEST_SWARM_WORKER_HOST, TEST_SWARM_REGISTRY or TEST_SWARM_AUTH_REGISTRY is not set under CI=true');
      });
    });
  } else {
    process.stdout.write(`${title}: not run, start a swarm with .ci/swarm.sh (eval "$(.ci/swarm.sh start)") to run them.\n`);
    describe.skip(`${title} (skipped: TEST_SWARM_HOST is not set)`, body);
  }
}

describeWithSwarm('DockerImageBuilder with the registry of a two-node swarm', () => {
  const app = `regswarm-${process.pid}-${Date.now().toString(36)}`;
  let root: string;
  let manager: Docker;
  let worker: Docker;

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'svc-image-registry-'));
    manager = createEngine(SWARM_HOST);
    worker = createEngine(SWARM_WORKER_HOST);
  });

  afterAll(async () => {
    await removeImagesOf(manager, app);
    await removeImagesOf(worker, app);
    await rm(root, { recursive: true, force: true });
  });

  it('a build on the manager runs on the worker, pulled by its digest from the registry', async () => {
    const registry = SWARM_REGISTRY as string;
    const builder = new DockerImageBuilder(manager, { stackImage: `${registry}/${BUSYBOX_IMAGE}`, timeoutMs: 120_000, registry });
    const reference = await builder.build({ app, appUuid: `uuid-${app}`, directory: await checkout(root, 'swarm', 'built on the manager'), kind: 'procfile' }, () => undefined);
    expect(reference.startsWith(`${registry}/${app}@sha256:`)).toBe(true);
    expect(await imageExists(worker, reference)).toBe(false);
    await pull(worker, reference);
    expect(await runIn(worker, reference, ['cat', '/app/marker.txt'])).toBe('built on the manager');
  }, 180_000);

  describe('a registry that asks for a login (REGISTRY_USERNAME, REGISTRY_PASSWORD)', () => {
    const registry = (): string => SWARM_AUTH_REGISTRY as string;
    const manifest = (reference: string, authorization?: string) =>
      fetch(`http://${registry()}/v2/${reference.slice(registry().length + 1, reference.indexOf('@'))}/manifests/${reference.slice(reference.indexOf('@') + 1)}`, {
        headers: {
          Accept: 'application/vnd.docker.distribution.manifest.v2+json, application/vnd.oci.image.manifest.v1+json',
          ...(authorization === undefined ? {} : { Authorization: authorization }),
        },
      });
    const basic = (username: string, password: string) => `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
    let reference: string;

    it('the build is pushed with the login, and the registry gives it to no one without it', async () => {
      const builder = new DockerImageBuilder(manager, { stackImage: `${SWARM_REGISTRY as string}/${BUSYBOX_IMAGE}`, timeoutMs: 120_000, registry: registry(), registryLogin: SWARM_LOGIN });
      reference = await builder.build({ app, appUuid: `uuid-${app}`, directory: await checkout(root, 'login', 'behind a login'), kind: 'procfile' }, () => undefined);

      expect(reference.startsWith(`${registry()}/${app}@sha256:`)).toBe(true);
      expect((await manifest(reference, basic(SWARM_LOGIN.username, SWARM_LOGIN.password))).status).toBe(200);
      // What another tenant's code, or anyone on the network, gets: no image without the login.
      expect((await manifest(reference)).status).toBe(401);
      expect((await manifest(reference, basic(SWARM_LOGIN.username, 'guessed'))).status).toBe(401);
    }, 180_000);

    it('a node pulls it with the login only', async () => {
      const events: string[] = [];
      // The swarm's registry is on a private network: the operator's allow-list names it.
      const anonymous = new ImagePuller(worker, 'missing', (_app, line) => events.push(line), null, [registry()]);
      await expect(anonymous.inspect(app, reference, 1)).rejects.toThrow(/pulling .* failed: .*(unauthorized|authentication required|no basic auth credentials|denied)/i);
      expect(await imageExists(worker, reference)).toBe(false);

      const withLogin = new ImagePuller(worker, 'missing', (_app, line) => events.push(line), { registry: registry(), ...SWARM_LOGIN });
      expect((await withLogin.inspect(app, reference, 1)).RepoDigests).toContain(reference);
      expect(await runIn(worker, reference, ['cat', '/app/marker.txt'])).toBe('behind a login');
    }, 180_000);

    it('a wrong password fails the push as the builder being unavailable, and keeps nothing of the build', async () => {
      const refused = `${app}-refused`;
      const builder = new DockerImageBuilder(manager, {
        stackImage: `${SWARM_REGISTRY as string}/${BUSYBOX_IMAGE}`,
        timeoutMs: 120_000,
        registry: registry(),
        registryLogin: { username: SWARM_LOGIN.username, password: 'not-the-password' },
      });
      try {
        const failure = await buildSourceImage(builder, { app: refused, appUuid: `uuid-${refused}`, directory: await checkout(root, 'refused', 'never pushed'), kind: 'procfile' }, () => undefined)
          .then(() => null, (error: unknown) => error);
        expect(failure).toBeInstanceOf(Unavailable);
        expect((failure as Unavailable).message).toContain(`pushing the image to the registry ${registry()} failed`);
        expect((failure as Unavailable).message).not.toContain('not-the-password');
        expect(await imagesOf(manager, refused)).toEqual([]);
      } finally {
        await removeImagesOf(manager, refused);
      }
    }, 180_000);
  });
});
