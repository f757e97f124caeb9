import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { LABELS, createEngine, type Docker } from '@svc/scheduler-docker';
import { loadConfig, startServer, type RunningServer } from '../src';
import { ApiClient, ENGINE_E2E_ENV, signUp, viaRouter, type Session } from './support';

jest.setTimeout(300_000);

/** The two-node swarm of `.ci/swarm.sh`: a manager, and the registry both nodes pull from. */
const TEST_SWARM_HOST = process.env.TEST_SWARM_HOST?.trim() || null;
const TEST_SWARM_WORKER_HOST = process.env.TEST_SWARM_WORKER_HOST?.trim() || null;
const TEST_SWARM_REGISTRY = process.env.TEST_SWARM_REGISTRY?.trim() || null;
/** The host end of the worker's only network link: down, the worker is lost to the swarm, as a machine that dies or drops off the network. */
const TEST_SWARM_WORKER_LINK = process.env.TEST_SWARM_WORKER_LINK?.trim() || null;

/** Waits until `probe` holds, polling every 250 ms; fails naming `what` after `timeoutMs`. */
async function until(what: string, timeoutMs: number, probe: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  while (!(await probe())) {
    if (Date.now() - started > timeoutMs) throw new Error(`${what} did not happen within ${timeoutMs / 1000} s`);
    await new Promise((done) => setTimeout(done, 250));
  }
  return Date.now() - started;
}

/**
 * The web command of the test app: `/` answers the GREETING config value, `/cgi-bin/slow` the
 * same after 0.3 s (requests in flight while tasks are replaced).
 */
const WEB = [
  'mkdir -p /tmp/www/cgi-bin',
  'echo "$GREETING" > /tmp/www/index.html',
  `printf '%s\\n' '#!/bin/sh' 'sleep 0.3' 'printf "Content-Type: text/plain\\r\\n\\r\\n"' 'cat /tmp/www/index.html' > /tmp/www/cgi-bin/slow`,
  'chmod +x /tmp/www/cgi-bin/slow',
  'echo "serving $GREETING"',
  'exec httpd -f -p "$PORT" -h /tmp/www',
].join(' && ');

/** Steady traffic through the router: every answer that is not a 200 counts as a failed request. */
function trafficThroughRouter(port: number, app: string, loops = 8): { stop(): Promise<{ ok: number; failed: string[]; last: string[] }> } {
  let running = true;
  const report = { ok: 0, failed: [] as string[], last: [] as string[] };
  const loop = async (): Promise<void> => {
    while (running) {
      const answer = await viaRouter(port, app, '/cgi-bin/slow');
      if (answer.status === 200) {
        report.ok++;
        report.last.push(answer.text.trim());
        if (report.last.length > 8) report.last.shift();
      } else {
        report.failed.push(`${answer.status} ${answer.error ?? answer.text}`.trim());
      }
      await new Promise((done) => setTimeout(done, 10));
    }
  };
  const running$ = Array.from({ length: loops }, () => loop());
  return {
    async stop() {
      running = false;
      await Promise.all(running$);
      return report;
    },
  };
}

interface ContainerJson {
  type: string;
  num: number;
  state: string;
  release: string;
}

const ready = TEST_SWARM_HOST !== null && TEST_SWARM_WORKER_HOST !== null && TEST_SWARM_REGISTRY !== null;
const describeSwarm = ready || process.env.CI === 'true' ? describe : describe.skip;
if (!ready && process.env.CI !== 'true') {
  process.stdout.write('The controller on a Docker Swarm (e2e) was not run: set TEST_SWARM_HOST, TEST_SWARM_WORKER_HOST and TEST_SWARM_REGISTRY (.ci/swarm.sh).\n');
}

describeSwarm('the controller on a two-node Docker Swarm (SCHEDULER=swarm)', () => {
  const tag = process.pid.toString(36);
  const app = `swarmapp-${tag}`;
  const env = {
    SCHEDULER: 'swarm',
    DOCKER_HOST: TEST_SWARM_HOST ?? '',
    DOCKER_INSTANCE: `e2e-${tag}`,
    SWARM_SERVICE_PREFIX: `e2e${tag}`,
    // The tasks' network of .ci/swarm.sh (ICC off), when it made one.
    SWARM_NETWORK: process.env.TEST_SWARM_NETWORK?.trim() ?? '',
    SWARM_DRAIN_SECONDS: '2',
    SWARM_HEALTH_INTERVAL_SECONDS: '1',
    SWARM_UPDATE_MONITOR_SECONDS: '1',
    IMAGE_BUILDER: 'none',
    ...ENGINE_E2E_ENV,
  };
  let docker: Docker;
  let dataDir: string;
  let server: RunningServer;
  let alice: Session;
  let workerId: string | null = null;
  const image = `${TEST_SWARM_REGISTRY ?? ''}/svc-test/busybox:1`;

  const containers = async (): Promise<ContainerJson[]> => (await alice.api.get<{ results: ContainerJson[] }>(`/v1/apps/${app}/containers/`)).body.results;
  const taskNodes = async (): Promise<string[]> =>
    (await docker.listTasks({ filters: { service: [`e2e${tag}-${app}-web`], 'desired-state': ['running'] } }))
      .filter((task) => task.Status?.State === 'running')
      .map((task) => task.NodeID as string);
  const nodeState = async (id: string): Promise<string> => ((await docker.getNode(id).inspect()) as { Status?: { State?: string } }).Status?.State ?? '';
  const setLink = (state: 'up' | 'down'): void => {
    const outcome = spawnSync('ip', ['link', 'set', TEST_SWARM_WORKER_LINK as string, state], { encoding: 'utf8' });
    if (outcome.status !== 0) throw new Error(`ip link set ${TEST_SWARM_WORKER_LINK as string} ${state} failed: ${outcome.stderr}`);
  };
  const setAvailability = async (id: string, availability: 'active' | 'drain'): Promise<void> => {
    const node = await docker.getNode(id).inspect();
    await docker.getNode(id).update({ version: node.Version.Index, ...node.Spec, Availability: availability } as never);
  };

  beforeAll(async () => {
    if (!ready) throw new Error('TEST_SWARM_HOST, TEST_SWARM_WORKER_HOST and TEST_SWARM_REGISTRY are not set under CI=true (.ci/swarm.sh starts a swarm)');
    docker = createEngine(TEST_SWARM_HOST);
    const nodes = (await docker.listNodes()) as Array<{ ID: string; ManagerStatus?: unknown }>;
    workerId = nodes.find((node) => node.ManagerStatus === undefined)?.ID ?? null;
    dataDir = await mkdtemp(join(tmpdir(), 'svc-swarm-e2e-'));
    server = await startServer(loadConfig({ ...env, DATA_DIR: dataDir }), pino({ level: 'silent' }));
    alice = await signUp(new ApiClient(server.url), `alice${tag}`);
    expect((await alice.api.post('/v1/apps/', { id: app })).status).toBe(201);
  });

  afterAll(async () => {
    if (TEST_SWARM_WORKER_LINK !== null) {
      try {
        setLink('up');
      } catch {
        // The link is up already.
      }
    }
    if (workerId !== null && docker) await setAvailability(workerId, 'active').catch(() => undefined);
    await alice?.api.delete(`/v1/apps/${app}/`).catch(() => undefined);
    await server?.close();
    if (docker) {
      const left = await docker.listServices({ filters: { label: [`${LABELS.instance}=${env.DOCKER_INSTANCE}`] } });
      await Promise.all(left.map((s) => docker.getService(s.ID as string).remove().catch(() => undefined)));
    }
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('deploys and scales to tasks on both nodes, which the router serves', async () => {
    expect(server.schedulerKind).toBe('swarm');
    expect((await alice.api.post(`/v1/apps/${app}/config/`, { values: { GREETING: 'one' } })).status).toBe(201);
    expect((await alice.api.post(`/v1/apps/${app}/builds/`, { image, procfile: { web: WEB } })).status).toBe(201);
    expect((await alice.api.post(`/v1/apps/${app}/scale/`, { web: 2 })).status).toBe(204);
    expect((await containers()).map((c) => `${c.type}.${c.num} ${c.state}`)).toEqual(['web.1 up', 'web.2 up']);
    expect(new Set(await taskNodes()).size).toBe(2);
    expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
    const logs = await alice.api.get(`/v1/apps/${app}/logs/`);
    expect(logs.text).toMatch(new RegExp(`${app}\\[web\\.[12]\\]: serving one`));
  });

  it('rolls a new release out under steady traffic through the router with no failed request', async () => {
    const traffic = trafficThroughRouter(server.routerPort ?? 0, app);
    await new Promise((done) => setTimeout(done, 1000));
    expect((await alice.api.post(`/v1/apps/${app}/config/`, { values: { GREETING: 'two' } })).status).toBe(201);
    await new Promise((done) => setTimeout(done, 2500));
    const report = await traffic.stop();
    process.stdout.write(`swarm e2e, rolling update through the router: ${report.ok} answered, ${report.failed.length} failed\n`);
    expect(report.failed).toEqual([]);
    expect(report.ok).toBeGreaterThan(30);
    expect(report.last.every((text) => text === 'two')).toBe(true);
    expect((await containers()).map((c) => `${c.type}.${c.num} ${c.state}`)).toEqual(['web.1 up', 'web.2 up']);
  });

  it('keeps serving while the worker is drained: Swarm moves its task, the states follow', async () => {
    expect(workerId).not.toBeNull();
    // The update kept one task on each node: draining one leaves the other serving.
    expect(new Set(await taskNodes()).size).toBe(2);
    const traffic = trafficThroughRouter(server.routerPort ?? 0, app);
    await setAvailability(workerId as string, 'drain');
    const deadline = Date.now() + 60_000;
    for (;;) {
      const nodes = await taskNodes();
      if (nodes.length === 2 && !nodes.includes(workerId as string)) break;
      if (Date.now() > deadline) throw new Error(`the tasks did not leave the drained worker: ${nodes.join(' ')}`);
      await new Promise((done) => setTimeout(done, 250));
    }
    await new Promise((done) => setTimeout(done, 2500));
    const report = await traffic.stop();
    process.stdout.write(`swarm e2e, worker drained: ${report.ok} answered, ${report.failed.length} failed\n`);
    expect(report.failed).toEqual([]);
    expect((await containers()).every((c) => c.state === 'up')).toBe(true);
    await setAvailability(workerId as string, 'active');
  });

  it('restarts the containers one after another, serving throughout', async () => {
    const traffic = trafficThroughRouter(server.routerPort ?? 0, app);
    expect((await alice.api.post(`/v1/apps/${app}/containers/restart/`, {})).status).toBe(200);
    await new Promise((done) => setTimeout(done, 1000));
    const report = await traffic.stop();
    process.stdout.write(`swarm e2e, restart: ${report.ok} answered, ${report.failed.length} failed\n`);
    expect(report.failed).toEqual([]);
    expect((await containers()).map((c) => `${c.type}.${c.num} ${c.state}`)).toEqual(['web.1 up', 'web.2 up']);
  });

  it('rolls back to the earlier release, serving throughout', async () => {
    const traffic = trafficThroughRouter(server.routerPort ?? 0, app);
    expect((await alice.api.post(`/v1/apps/${app}/releases/rollback/`, {})).status).toBe(201);
    await new Promise((done) => setTimeout(done, 2500));
    const report = await traffic.stop();
    expect(report.failed).toEqual([]);
    expect(report.last.every((text) => text === 'one')).toBe(true);
  });

  it('survives losing the worker: Swarm starts its tasks again on the manager, the states and the router follow, and the worker rejoins', async () => {
    if (TEST_SWARM_WORKER_LINK === null) throw new Error('TEST_SWARM_WORKER_LINK is not set (.ci/swarm.sh sets it): the worker cannot be cut off');
    const worker = workerId as string;
    // Three tasks spread over two nodes: one at least is on the worker.
    expect((await alice.api.post(`/v1/apps/${app}/scale/`, { web: 3 })).status).toBe(204);
    await until('a task on the worker', 60_000, async () => (await taskNodes()).includes(worker));
    const onWorker = (await taskNodes()).filter((node) => node === worker).length;
    const workerEngine = createEngine(TEST_SWARM_WORKER_HOST);
    const service = `e2e${tag}-${app}-web`;
    const runningOnWorker = async (): Promise<number> =>
      (await workerEngine.listContainers({ filters: { label: [`com.docker.swarm.service.name=${service}`], status: ['running'] } })).length;
    expect(await runningOnWorker()).toBe(onWorker);

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
      for (let i = 0; i < 12; i++) expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });
      process.stdout.write(`swarm e2e, worker lost: marked down after ${(down / 1000).toFixed(1)} s, its ${onWorker} task(s) running on the manager ${(moved / 1000).toFixed(1)} s later\n`);
    } finally {
      setLink('up');
    }

    // Back on the network, the worker rejoins and stops the tasks that were moved away: none runs twice.
    await until('the worker ready again', 90_000, async () => (await nodeState(worker)) === 'ready');
    await until("the worker's old tasks stopped", 60_000, async () => (await runningOnWorker()) === 0);
    expect((await containers()).map((c) => `${c.type}.${c.num} ${c.state}`)).toEqual(['web.1 up', 'web.2 up', 'web.3 up']);
    expect(await viaRouter(server.routerPort ?? 0, app)).toEqual({ status: 200, text: 'one\n' });

    // A task placed on the rejoined worker runs there, and its output reaches the app's log.
    // (Log lines start with their second, `YYYY-MM-DDTHH:MM:SSUTC`; only a new task says it is serving.)
    const startedSince = async (from: number): Promise<boolean> =>
      (await alice.api.get(`/v1/apps/${app}/logs/`)).text
        .split('\n')
        .some((line) => /\]: serving one$/.test(line) && Date.parse(`${line.slice(0, 19)}Z`) >= from);
    const scaledAt = Math.floor(Date.now() / 1000) * 1000;
    expect((await alice.api.post(`/v1/apps/${app}/scale/`, { web: 4 })).status).toBe(204);
    await until('a task on the rejoined worker', 60_000, async () => (await taskNodes()).includes(worker));
    await until("the new task's output in the app's log", 60_000, () => startedSince(scaledAt));
  });
});
