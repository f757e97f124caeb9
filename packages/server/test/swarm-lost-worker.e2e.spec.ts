import { spawnSync } from 'node:child_process';
import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createEngine, type Docker } from '@svc/scheduler-docker';
import { loadConfig, startServer, type RunningServer } from '../src';
import { ApiClient, closeSwarmTest, ENGINE_E2E_ENV, signUp, viaRouter, type Session } from './support';
import { holdSwarm } from '../../scheduler-docker/test/support/swarm';

jest.setTimeout(400_000);

/**
 * A two-node swarm of its own (`.ci/run` starts a second one with `.ci/swarm.sh`, its variables
 * renamed TEST_LOST_SWARM_*): cutting its worker off leaves the swarm the other tests use alone.
 */
const HOST = process.env.TEST_LOST_SWARM_HOST?.trim() || null;
const WORKER_HOST = process.env.TEST_LOST_SWARM_WORKER_HOST?.trim() || null;
const REGISTRY = process.env.TEST_LOST_SWARM_REGISTRY?.trim() || null;
/** The host end of the worker's only network link: down, the worker is lost to the swarm, as a machine that dies or drops off the network. */
const WORKER_LINK = process.env.TEST_LOST_SWARM_WORKER_LINK?.trim() || null;
const ready = HOST !== null && WORKER_HOST !== null && REGISTRY !== null && WORKER_LINK !== null;
const describeSwarm = ready || process.env.CI === 'true' ? describe : describe.skip;
if (!ready && process.env.CI !== 'true') {
  process.stdout.write(
    'The lost Swarm worker (e2e) was not run: start a swarm of its own with .ci/swarm.sh and set TEST_LOST_SWARM_HOST, TEST_LOST_SWARM_WORKER_HOST, TEST_LOST_SWARM_REGISTRY and TEST_LOST_SWARM_WORKER_LINK from its TEST_SWARM_* values.\n',
  );
}

const WEB = 'mkdir -p /tmp/www && echo "$GREETING" > /tmp/www/index.html && echo "serving $GREETING" && exec httpd -f -p "$PORT" -h /tmp/www';

/** Waits until `probe` holds, polling every 250 ms; fails naming `what` after `timeoutMs`. Resolves with the time it took. */
async function until(what: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await probe())) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what} did not happen within ${timeoutMs / 1000} s`);
    await new Promise((done) => setTimeout(done, 250));
  }
  return Date.now() - started;
}

interface ContainerJson {
  type: string;
  num: number;
  state: string;
}

// It cuts the worker off: nothing else may run on that swarm meanwhile (it is one of its own in CI).
holdSwarm('exclusive', HOST);

describeSwarm('a lost Swarm worker (SCHEDULER=swarm)', () => {
  const tag = process.pid.toString(36);
  const app = `lostapp-${tag}`;
  const env = {
    SCHEDULER: 'swarm',
    // The swarm's registry is on a private network: only one the operator names may be pulled from.
    REGISTRY_ALLOW: REGISTRY ?? '',
    DOCKER_HOST: HOST ?? '',
    DOCKER_INSTANCE: `e2e-lost-${tag}`,
    SWARM_SERVICE_PREFIX: `lost${tag}`,
    SWARM_NETWORK: process.env.TEST_LOST_SWARM_NETWORK?.trim() ?? '',
    SWARM_DRAIN_SECONDS: '1',
    SWARM_HEALTH_INTERVAL_SECONDS: '1',
    SWARM_UPDATE_MONITOR_SECONDS: '1',
    IMAGE_BUILDER: 'none',
    ...ENGINE_E2E_ENV,
  };
  const service = `lost${tag}-${app}-web`;
  let docker: Docker;
  let workerEngine: Docker;
  let dataDir: string;
  let server: RunningServer;
  let alice: Session;
  let worker: string;

  const containers = async (): Promise<ContainerJson[]> => (await alice.api.get<{ results: ContainerJson[] }>(`/v1/apps/${app}/containers/`)).body.results;
  const taskNodes = async (): Promise<string[]> =>
    (await docker.listTasks({ filters: { service: [service], 'desired-state': ['running'] } }))
      .filter((task) => task.Status?.State === 'running')
      .map((task) => task.NodeID as string);
  const nodeState = async (id: string): Promise<string> => ((await docker.getNode(id).inspect()) as { Status?: { State?: string } }).Status?.State ?? '';
  const runningOnWorker = async (): Promise<number> =>
    (await workerEngine.listContainers({ filters: { label: [`com.docker.swarm.service.name=${service}`], status: ['running'] } })).length;
  const setLink = (state: 'up' | 'down'): void => {
    const outcome = spawnSync('ip', ['link', 'set', WORKER_LINK as string, state], { encoding: 'utf8' });
    if (outcome.status !== 0) throw new Error(`ip link set ${WORKER_LINK as string} ${state} failed: ${outcome.stderr}`);
  };

  beforeAll(async () => {
    if (!ready) throw new Error('TEST_LOST_SWARM_HOST, TEST_LOST_SWARM_WORKER_HOST, TEST_LOST_SWARM_REGISTRY and TEST_LOST_SWARM_WORKER_LINK are not set under CI=true (.ci/run starts a second swarm)');
    docker = createEngine(HOST);
    workerEngine = createEngine(WORKER_HOST);
    const nodes = (await docker.listNodes()) as Array<{ ID: string; ManagerStatus?: unknown }>;
    worker = nodes.find((node) => node.ManagerStatus === undefined)?.ID as string;
    expect(worker).toBeDefined();
    dataDir = await mkdtemp(join(tmpdir(), 'svc-swarm-lost-e2e-'));
    server = await startServer(loadConfig({ ...env, DATA_DIR: dataDir }), pino({ level: 'silent' }));
    alice = await signUp(new ApiClient(server.url), `alice${tag}`);
    expect((await alice.api.post('/v1/apps/', { id: app })).status).toBe(201);
  });

  afterAll(async () => {
    if (WORKER_LINK !== null) {
      try {
        setLink('up');
      } catch {
        // The link is up already.
      }
    }
    await alice?.api.delete(`/v1/apps/${app}/`).catch(() => undefined);
    await closeSwarmTest({ server, manager: docker, instance: env.DOCKER_INSTANCE, dataDir });
  });

  it('Swarm starts the lost worker\'s tasks again on the manager, the states and the router follow, and the worker rejoins', async () => {
    expect((await alice.api.post(`/v1/apps/${app}/config/`, { values: { GREETING: 'here' } })).status).toBe(201);
    expect((await alice.api.post(`/v1/apps/${app}/builds/`, { image: `${REGISTRY as string}/svc-test/busybox:1`, procfile: { web: WEB } })).status).toBe(201);
    // Three tasks spread over two nodes: one at least is on the worker.
    expect((await alice.api.post(`/v1/apps/${app}/scale/`, { web: 3 })).status).toBe(204);
    await until('a task on the worker', 60_000, async () => (await taskNodes()).includes(worker));
    const onWorker = (await taskNodes()).filter((node) => node === worker).length;
    expect(await runningOnWorker()).toBe(onWorker);
    expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'here\n' });

    setLink('down');
    try {
      const down = await until('the worker marked down', 90_000, async () => (await nodeState(worker)) === 'down');
      const moved = await until('three running tasks on the manager', 90_000, async () => {
        const nodes = await taskNodes();
        return nodes.length === 3 && !nodes.includes(worker);
      });
      await until('every container up in the API', 30_000, async () => {
        const states = await containers();
        return states.length === 3 && states.every((c) => c.state === 'up');
      });
      // The router no longer sends anything to the lost node.
      for (let i = 0; i < 12; i++) expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'here\n' });
      process.stdout.write(`swarm e2e, worker lost: marked down after ${(down / 1000).toFixed(1)} s, its ${onWorker} task(s) running on the manager ${(moved / 1000).toFixed(1)} s later\n`);
    } finally {
      setLink('up');
    }

    // Back on the network, the worker rejoins and stops the tasks that were moved away: none runs twice.
    const rejoined = await until('the worker ready again', 90_000, async () => (await nodeState(worker)) === 'ready');
    const stopped = await until("the worker's old tasks stopped", 60_000, async () => (await runningOnWorker()) === 0);
    expect((await containers()).map((c) => `${c.type}.${c.num} ${c.state}`)).toEqual(['web.1 up', 'web.2 up', 'web.3 up']);
    expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'here\n' });
    process.stdout.write(`swarm e2e, worker back: ready after ${(rejoined / 1000).toFixed(1)} s, its old task(s) stopped ${(stopped / 1000).toFixed(1)} s later\n`);
  });
});
