import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { installationId } from '@svc/crypto-node';
import { LABELS, createEngine, unguardHostFromBridge, type Docker } from '@svc/scheduler-docker';
import { loadConfig, startServer, type RunningServer } from '../src';
import { PreflightError } from '../src/preflight';
import { ApiClient, ENGINE_E2E_ENV, describeEachBackend, ownBuildNetwork, removeEngineInstance, signUp, viaRouter, type Backend, type Session, type Store } from './support';

/*
 * Two installations on one Docker engine (issue 34): the second one started with the first
 * one's DOCKER_INSTANCE is refused before it adopts or removes anything, and the first one's
 * apps keep serving; with an instance of its own it starts. Controller processes of one
 * installation (one SECRET_KEY) keep sharing their instance.
 */

jest.setTimeout(300_000);

const TEST_DOCKER_HOST = process.env.TEST_DOCKER_HOST?.trim() || null;
const BUSYBOX = 'svc-test/busybox:1';
const tag = process.pid.toString(36);
const SECRET_A = `installation-a-${tag}-0123456789abcdef0123456789`;
const SECRET_B = `installation-b-${tag}-0123456789abcdef0123456789`;

/** The Docker settings of one instance on the test engine. */
function instanceEnv(name: string): { DOCKER_INSTANCE: string; DOCKER_NETWORK: string; DOCKER_BRIDGE: string; BUILDPACK_NETWORK: string; BUILDPACK_BRIDGE: string } {
  // A build network of its own too: the default one (svc-build) would outlive the test on the shared engine.
  return { DOCKER_INSTANCE: `inst-${name}-${tag}`, DOCKER_NETWORK: `svc-inst-${name}-${tag}`, DOCKER_BRIDGE: `svci${name}${tag}`.slice(0, 15), ...ownBuildNetwork() };
}
const engineNames = (instance: ReturnType<typeof instanceEnv>): Parameters<typeof removeEngineInstance>[1] => ({
  instance: instance.DOCKER_INSTANCE,
  network: instance.DOCKER_NETWORK,
  bridge: instance.DOCKER_BRIDGE,
  build: { network: instance.BUILDPACK_NETWORK, bridge: instance.BUILDPACK_BRIDGE },
});

const describeEngine = TEST_DOCKER_HOST !== null ? describe : process.env.CI === 'true' ? describe : describe.skip;
if (TEST_DOCKER_HOST === null && process.env.CI !== 'true') {
  process.stdout.write('Two installations on one Docker engine (e2e) were not run: set TEST_DOCKER_HOST to run them.\n');
}

describeEngine('two installations on one Docker engine', () => {
  const image = `svc-e2e/inst-${tag}:1`;
  let docker: Docker;
  let run = 0;

  beforeAll(async () => {
    if (TEST_DOCKER_HOST === null) throw new Error('TEST_DOCKER_HOST is not set under CI=true (.ci/docker-engine.sh starts an engine)');
    docker = createEngine(TEST_DOCKER_HOST);
    // An image that serves "one" on its own port 8080 with its own CMD, from the offline busybox image.
    const builder = await docker.createContainer({ Image: BUSYBOX, Cmd: ['sh', '-c', 'mkdir -p /www && echo one > /www/index.html'] });
    await builder.start();
    await builder.wait();
    await builder.commit({ repo: image.split(':')[0], tag: '1', changes: ['EXPOSE 8080', 'CMD ["/bin/sh", "-c", "exec httpd -f -p 8080 -h /www"]'] } as never);
    await builder.remove({ force: true });
  });

  afterAll(async () => {
    await docker?.getImage(image).remove({ force: true }).catch(() => undefined);
  });

  describeEachBackend('an instance held by another installation', (backend: Backend) => {
    // Each backend's run has instances of its own: they are removed at its end.
    run++;
    const shared = instanceEnv(`s${run}`);
    const own = instanceEnv(`o${run}`);
    const app = `inst-${tag}-${run}`;
    const servers: RunningServer[] = [];
    let storeA: Store;
    let a: RunningServer;
    let alice: Session;

    const envOf = (store: Store, secret: string, instance: ReturnType<typeof instanceEnv>): Record<string, string> => ({
      SCHEDULER: 'docker',
      DOCKER_HOST: TEST_DOCKER_HOST ?? '',
      SECRET_KEY: secret,
      DATA_DIR: store.dataDir,
      ...(store.databaseUrl === undefined ? {} : { DATABASE_URL: store.databaseUrl }),
      ...instance,
      ...ENGINE_E2E_ENV,
      // Several controllers in this one test process: routers on their own event loops, not cluster workers of one process.
      ROUTER_WORKERS: '0',
    });
    const start = async (env: Record<string, string>): Promise<RunningServer> => {
      const server = await startServer(loadConfig(env), pino({ level: 'silent' }));
      servers.push(server);
      return server;
    };
    const appContainers = () => docker.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${shared.DOCKER_INSTANCE}`, `${LABELS.app}=${app}`] } });

    beforeAll(async () => {
      storeA = await backend.newStore();
      a = await start(envOf(storeA, SECRET_A, shared));
      alice = await signUp(new ApiClient(a.url), `inst${tag}${run}`);
      expect((await alice.api.post('/v1/apps/', { id: app })).status).toBe(201);
      expect((await alice.api.post(`/v1/apps/${app}/builds/`, { image })).status).toBe(201);
    });

    afterAll(async () => {
      for (const server of servers.splice(0)) await server.close().catch(() => undefined);
      if (docker) {
        await removeEngineInstance(docker, engineNames(shared));
        await removeEngineInstance(docker, engineNames(own));
      } else {
        await unguardHostFromBridge(shared.DOCKER_BRIDGE);
        await unguardHostFromBridge(own.DOCKER_BRIDGE);
      }
    });

    it("labels the first installation's app container and network with its id, derived from its SECRET_KEY", async () => {
      const listed = await appContainers();
      expect(listed).toHaveLength(1);
      expect(listed[0]?.State).toBe('running');
      expect(listed[0]?.Labels[LABELS.installation]).toBe(installationId(SECRET_A));
      expect((await docker.getNetwork(shared.DOCKER_NETWORK).inspect()).Labels).toMatchObject({ [LABELS.installation]: installationId(SECRET_A) });
      expect(await viaRouter(a.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
    });

    it("refuses a second installation's start on the same DOCKER_INSTANCE with one line naming it, and the first one's app keeps running and answering", async () => {
      const [before] = await appContainers();
      const name = (before?.Names[0] ?? '').replace(/^\//, '');
      expect(name).toMatch(/^svc-[0-9a-f-]{36}$/);
      const storeB = await backend.newStore();

      const refused = await start(envOf(storeB, SECRET_B, shared)).then(
        () => null,
        (error: unknown) => error,
      );

      expect(refused).toBeInstanceOf(PreflightError);
      expect(refused).toMatchObject({
        setting: 'DOCKER_INSTANCE',
        message:
          `DOCKER_INSTANCE: the instance "${shared.DOCKER_INSTANCE}" on this engine belongs to another installation ` +
          `(container ${name}, network ${shared.DOCKER_NETWORK}): give this installation its own DOCKER_INSTANCE, DOCKER_NETWORK and DOCKER_BRIDGE`,
      });
      // Nothing was touched: the same engine container, never restarted, still the only one, and serving.
      const after = await appContainers();
      expect(after.map((c) => [c.Id, c.State, c.Labels[LABELS.installation]])).toEqual([[before?.Id, 'running', installationId(SECRET_A)]]);
      const inspected = await docker.getContainer(before?.Id ?? '').inspect();
      expect(inspected.State.Running).toBe(true);
      expect(inspected.RestartCount).toBe(0);
      expect(await viaRouter(a.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
      const containers = await alice.api.get<{ results: Array<{ state: string }> }>(`/v1/apps/${app}/containers/`);
      expect(containers.body.results.map((c) => c.state)).toEqual(['up']);
    });

    it('starts the second installation with a DOCKER_INSTANCE, DOCKER_NETWORK and DOCKER_BRIDGE of its own', async () => {
      const b = await start(envOf(await backend.newStore(), SECRET_B, own));
      expect(b.schedulerKind).toBe('docker');
      expect((await docker.getNetwork(own.DOCKER_NETWORK).inspect()).Labels).toMatchObject({ [LABELS.instance]: own.DOCKER_INSTANCE, [LABELS.installation]: installationId(SECRET_B) });
      expect((await appContainers()).map((c) => c.State)).toEqual(['running']);
      expect(await viaRouter(a.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
    });

    it('lets another controller process of the first installation (same SECRET_KEY) start on the instance and keep the app running', async () => {
      const [before] = await appContainers();
      if (backend.name === 'postgresql') {
        // A second process beside the first: the same database, a data directory of its own.
        const dataDir = await mkdtemp(join(tmpdir(), 'svc-inst-second-'));
        try {
          const second = await start(envOf({ dataDir, databaseUrl: storeA.databaseUrl }, SECRET_A, shared));
          expect(await viaRouter(second.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
          await second.close();
          servers.splice(servers.indexOf(second), 1);
        } finally {
          await rm(dataDir, { recursive: true, force: true });
        }
      } else {
        // SQLite has one process per data directory: the next one, after a restart, adopts the container.
        await a.close();
        servers.splice(servers.indexOf(a), 1);
        a = await start(envOf(storeA, SECRET_A, shared));
      }
      const after = await appContainers();
      expect(after.map((c) => [c.Id, c.State])).toEqual([[before?.Id, 'running']]);
      expect(await viaRouter(a.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
    });
  });
});
