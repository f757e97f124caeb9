import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { LABELS, createEngine, unguardHostFromBridge, type Docker } from '@svc/scheduler-docker';
import { loadConfig, startServer, type RunningServer } from '../src';
import { ApiClient, ENGINE_E2E_ENV, ownBuildNetwork, removeEngineInstance, signUp, viaRouter, type Session } from './support';

jest.setTimeout(300_000);

/** The engine of the Docker tests (`.ci/docker-engine.sh` starts one); a registry to pull from, if any. */
const TEST_DOCKER_HOST = process.env.TEST_DOCKER_HOST?.trim() || null;
const TEST_REGISTRY = process.env.TEST_REGISTRY?.trim() || null;
const BUSYBOX = 'svc-test/busybox:1';

/** Makes an image that serves `text` on port 8080 with its own CMD, from the offline busybox image. */
async function makeImage(docker: Docker, repo: string, tag: string, text: string): Promise<void> {
  const builder = await docker.createContainer({ Image: BUSYBOX, Cmd: ['sh', '-c', `mkdir -p /www && echo ${text} > /www/index.html`] });
  await builder.start();
  await builder.wait();
  await builder.commit({
    repo,
    tag,
    changes: ['EXPOSE 8080', `CMD ["/bin/sh", "-c", "echo serving ${text} as $(id -u); exec httpd -f -p 8080 -h /www"]`],
  } as never);
  await builder.remove({ force: true });
}

async function push(docker: Docker, name: string): Promise<void> {
  const stream = (await docker.getImage(name).push({ authconfig: {} } as never)) as unknown as NodeJS.ReadableStream;
  await new Promise<void>((resolve, reject) =>
    docker.modem.followProgress(stream, (error: Error | null, output: { error?: string }[]) => {
      const failed = error ?? output.find((o) => o.error);
      if (failed) reject(failed instanceof Error ? failed : new Error(String(failed.error)));
      else resolve();
    }),
  );
}

interface ContainerJson {
  type: string;
  num: number;
  state: string;
  release: string;
  uuid: string;
}

const describeEngine = TEST_DOCKER_HOST !== null ? describe : process.env.CI === 'true' ? describe : describe.skip;
if (TEST_DOCKER_HOST === null && process.env.CI !== 'true') {
  process.stdout.write('The controller on a Docker engine (e2e) was not run: set TEST_DOCKER_HOST to run it.\n');
}

describeEngine('the controller on a Docker engine (SCHEDULER=docker)', () => {
  const tag = process.pid.toString(36);
  const app = `dockapp-${tag}`;
  const env = {
    SCHEDULER: 'docker',
    DOCKER_HOST: TEST_DOCKER_HOST ?? '',
    DOCKER_NETWORK: `svc-e2e-${tag}`,
    DOCKER_BRIDGE: `svce${tag}`.slice(0, 15),
    DOCKER_INSTANCE: `e2e-${tag}`,
    ...ownBuildNetwork(),
    // The test registry is on loopback: only a registry the operator names may be pulled from there.
    REGISTRY_ALLOW: TEST_REGISTRY ?? '',
    ...ENGINE_E2E_ENV,
  };
  let docker: Docker;
  let dataDir: string;
  let server: RunningServer;
  let alice: Session;
  let images: { one: string; two: string };

  const start = async (): Promise<void> => {
    server = await startServer(loadConfig({ ...env, DATA_DIR: dataDir }), pino({ level: 'silent' }));
    alice = { ...alice, api: new ApiClient(server.url).as(alice.token) };
  };
  const containers = async (): Promise<ContainerJson[]> => (await alice.api.get<{ results: ContainerJson[] }>(`/v1/apps/${app}/containers/`)).body.results;
  const run = async (command: string): Promise<{ rc: number; output: string }> => {
    const response = await alice.api.post<unknown>(`/v1/apps/${app}/run/`, { command });
    expect(response.status).toBe(200);
    const body = response.body as [number, string] | { rc: number; output: string };
    return Array.isArray(body) ? { rc: body[0], output: body[1] } : body;
  };

  beforeAll(async () => {
    if (TEST_DOCKER_HOST === null) throw new Error('TEST_DOCKER_HOST is not set under CI=true (.ci/docker-engine.sh starts an engine)');
    docker = createEngine(TEST_DOCKER_HOST);
    const repo = TEST_REGISTRY === null ? `svc-e2e/web-${tag}` : `${TEST_REGISTRY}/svc-e2e/web-${tag}`;
    images = { one: `${repo}:1`, two: `${repo}:2` };
    await makeImage(docker, repo, '1', 'one');
    await makeImage(docker, repo, '2', 'two');
    if (TEST_REGISTRY !== null) {
      // Deployed by name: the engine pulls them from the registry.
      await push(docker, images.one);
      await push(docker, images.two);
      await docker.getImage(images.one).remove({ force: true });
      await docker.getImage(images.two).remove({ force: true });
    } else {
      process.stdout.write('TEST_REGISTRY is not set: the images are deployed from the engine, not pulled from a registry.\n');
    }
    dataDir = await mkdtemp(join(tmpdir(), 'svc-docker-e2e-'));
    server = await startServer(loadConfig({ ...env, DATA_DIR: dataDir }), pino({ level: 'silent' }));
    alice = await signUp(new ApiClient(server.url), `alice${tag}`);
    expect((await alice.api.post('/v1/apps/', { id: app })).status).toBe(201);
  });

  afterAll(async () => {
    await alice?.api.delete(`/v1/apps/${app}/`).catch(() => undefined);
    await server?.close();
    if (docker) {
      const build = { network: env.BUILDPACK_NETWORK, bridge: env.BUILDPACK_BRIDGE };
      await removeEngineInstance(docker, { instance: env.DOCKER_INSTANCE, network: env.DOCKER_NETWORK, bridge: env.DOCKER_BRIDGE, build });
      for (const image of Object.values(images ?? {})) await docker.getImage(image).remove({ force: true }).catch(() => undefined);
    } else await unguardHostFromBridge(env.DOCKER_BRIDGE);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('deploys an image by name: its own CMD runs as cmd, as a non-root user, and the router serves it', async () => {
    expect(server.schedulerKind).toBe('docker');
    const build = await alice.api.post(`/v1/apps/${app}/builds/`, { image: images.one });
    expect(build.status).toBe(201);
    expect(await containers()).toEqual([expect.objectContaining({ type: 'cmd', num: 1, state: 'up', release: 'v2' })]);
    expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
    // The container's output reaches the log as the engine streams it: its first line may come just after the first answer.
    const line = `${app}[cmd.1]: serving one as 65534`;
    let logs = await alice.api.get(`/v1/apps/${app}/logs/`);
    for (const deadline = Date.now() + 10_000; !logs.text.includes(line) && Date.now() < deadline; ) {
      await new Promise((resolve) => setTimeout(resolve, 100));
      logs = await alice.api.get(`/v1/apps/${app}/logs/`);
    }
    expect(logs.text).toContain(line);
    if (TEST_REGISTRY !== null) expect(logs.text).toContain(`pulling image ${images.one}`);
  });

  it('fails a deploy of an image no registry has: the old release keeps serving, no release is made', async () => {
    const before = (await alice.api.get<{ count: number }>(`/v1/apps/${app}/releases/`)).body.count;
    const missing = `${TEST_REGISTRY ?? '127.0.0.1:9'}/svc-e2e/missing-${tag}:1`;
    const build = await alice.api.post(`/v1/apps/${app}/builds/`, { image: missing });
    // No such image is the request's fault (400); no registry to ask is the platform's (503).
    expect(build.status).toBe(TEST_REGISTRY !== null ? 400 : 503);
    expect(build.text).toContain(`pulling ${missing} failed`);
    expect((await alice.api.get<{ count: number }>(`/v1/apps/${app}/releases/`)).body.count).toBe(before);
    expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
  });

  it("refuses another tenant's deploy of this app's build by its guessable name: 400, nothing made, the app keeps serving", async () => {
    // A build of the app, named and labelled as the image builder names and labels it.
    const built = `${app}:7`;
    const maker = await docker.createContainer({ Image: BUSYBOX, Cmd: ['sh', '-c', 'echo "the owner\'s code" > /secret.txt'] });
    await maker.start();
    await maker.wait();
    await maker.commit({ repo: app, tag: '7', changes: [`LABEL ${LABELS.app}=${app}`, 'CMD ["cat", "/secret.txt"]'] } as never);
    await maker.remove({ force: true });
    try {
      const mallory = await signUp(new ApiClient(server.url), `mallory${tag}`);
      const theirs = `steal-${tag}`;
      expect((await mallory.api.post('/v1/apps/', { id: theirs })).status).toBe(201);

      const deploy = await mallory.api.post(`/v1/apps/${theirs}/builds/`, { image: built });

      expect(deploy.status).toBe(400);
      expect(deploy.text).toContain(`the image ${built} was built for another app`);
      expect((await mallory.api.get<{ count: number }>(`/v1/apps/${theirs}/releases/`)).body.count).toBe(1);
      expect((await mallory.api.get<{ results: unknown[] }>(`/v1/apps/${theirs}/containers/`)).body.results).toEqual([]);
      const made = await docker.listContainers({ all: true, filters: { label: [`${LABELS.app}=${theirs}`] } });
      expect(made).toEqual([]);
      expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
      await mallory.api.delete(`/v1/apps/${theirs}/`);
    } finally {
      await docker.getImage(built).remove({ force: true }).catch(() => undefined);
    }
  });

  it('refuses (409) a rollback to an image the engine no longer has and cannot pull, or to a release without a build, before anything stops', async () => {
    const back = `back-${tag}`;
    // An image only this engine had: its registry (the cloud's metadata address) is one no pull may reach.
    const gone = `169.254.169.254:1/svc-e2e/gone-${tag}`;
    await makeImage(docker, gone, '1', 'gone');
    expect((await alice.api.post('/v1/apps/', { id: back })).status).toBe(201);
    try {
      expect((await alice.api.post(`/v1/apps/${back}/builds/`, { image: `${gone}:1` })).status).toBe(201);
      expect((await alice.api.post(`/v1/apps/${back}/builds/`, { image: images.one })).status).toBe(201);
      await docker.getImage(`${gone}:1`).remove({ force: true });
      const list = async (): Promise<ContainerJson[]> => (await alice.api.get<{ results: ContainerJson[] }>(`/v1/apps/${back}/containers/`)).body.results;
      const serving = await list();
      expect(serving.map((c) => `${c.type}.${c.num} ${c.state} ${c.release}`)).toEqual(['cmd.1 up v3']);
      const engineIds = await Promise.all(serving.map(async (c) => (await docker.getContainer(`svc-${c.uuid}`).inspect()).Id));

      const refused = await alice.api.post(`/v1/apps/${back}/releases/rollback/`, { version: 2 });
      expect({ status: refused.status, body: refused.body }).toEqual({
        status: 409,
        body: { detail: expect.stringMatching(new RegExp(`^Release v2 cannot be rolled back to: image ${gone.replace(/\./g, '\\.')}:1 cannot be pulled: pulls from 169\\.254\\.169\\.254:1 are refused`)) },
      });
      const empty = await alice.api.post(`/v1/apps/${back}/releases/rollback/`, { version: 1 });
      expect({ status: empty.status, body: empty.body }).toEqual({
        status: 409,
        body: { detail: `Release v1 has no build: rolling back to it would stop every process of ${back}. Releases that can be rolled back to: v2 to v3.` },
      });

      expect((await alice.api.get<{ count: number }>(`/v1/apps/${back}/releases/`)).body.count).toBe(3);
      expect(await list()).toEqual(serving);
      const running = await Promise.all(engineIds.map(async (id) => (await docker.getContainer(id).inspect()).State.Running));
      expect(running).toEqual([true]);
      expect(await viaRouter(server.routerPort ?? 0, back)).toEqual({ status: 200, text: 'one\n' });
    } finally {
      await alice.api.delete(`/v1/apps/${back}/`).catch(() => undefined);
      await docker.getImage(`${gone}:1`).remove({ force: true }).catch(() => undefined);
    }
  });

  it('scales, deploys a new image, rolls back to the exact earlier image and restarts, serving throughout', async () => {
    expect((await alice.api.post(`/v1/apps/${app}/scale/`, { cmd: 2 })).status).toBe(204);
    expect((await containers()).map((c) => `${c.type}.${c.num} ${c.state}`)).toEqual(['cmd.1 up', 'cmd.2 up']);

    expect((await alice.api.post(`/v1/apps/${app}/builds/`, { image: images.two })).status).toBe(201);
    expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'two\n' });
    const oneId = (await docker.getImage(images.one).inspect()).Id;

    expect((await alice.api.post(`/v1/apps/${app}/releases/rollback/`, { version: 2 })).status).toBe(201);
    expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
    for (const c of await containers()) {
      const info = await docker.getContainer(`svc-${c.uuid}`).inspect();
      expect(info.Image).toBe(oneId);
    }

    expect((await alice.api.post(`/v1/apps/${app}/containers/restart/`, {})).status).toBe(200);
    expect((await containers()).every((c) => c.state === 'up')).toBe(true);
    expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
  });

  it("runs a one-off command in the current release's image, removed afterwards, without the controller's data or the host's services", async () => {
    // Everything goes to standard output: the engine delivers standard error apart from it, in
    // no fixed order (nc's refusal came first once, on a busy machine), so nc's is dropped.
    const result = await run(`id -u; cat /www/index.html; ls ${dataDir} 2>&1; nc -w 2 127.0.0.1 ${server.port} </dev/null 2>/dev/null && echo REACHED-API; exit 4`);
    expect(result.rc).toBe(4);
    expect(result.output).toMatch(/^65534\none\n/);
    expect(result.output).toMatch(/No such file or directory/);
    expect(result.output).not.toContain('REACHED-API');
    const left = await docker.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${env.DOCKER_INSTANCE}`, `${LABELS.type}=run`] } });
    expect(left).toEqual([]);
  });

  it('adopts the running containers when the controller restarts: same engine containers, not restarted', async () => {
    const before = await Promise.all((await containers()).map(async (c) => (await docker.getContainer(`svc-${c.uuid}`).inspect()).Id));
    await server.close();
    const alive = await Promise.all(before.map(async (id) => (await docker.getContainer(id).inspect()).State.Running));
    expect(alive).toEqual([true, true]);

    await start();
    const after = await Promise.all((await containers()).map(async (c) => (await docker.getContainer(`svc-${c.uuid}`).inspect()).Id));
    expect(after).toEqual(before);
    expect((await containers()).every((c) => c.state === 'up')).toBe(true);
    expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
  });
});
