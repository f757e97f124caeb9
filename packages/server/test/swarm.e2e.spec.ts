import { mkdtemp } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { LABELS, createEngine, type Docker } from '@svc/scheduler-docker';
import { loadConfig, startServer, type RunningServer } from '../src';
import { ApiClient, closeSwarmTest, ENGINE_E2E_ENV, signUp, viaRouter, type Session } from './support';
import { holdSwarm } from '../../scheduler-docker/test/support/swarm';

jest.setTimeout(300_000);

/** The two-node swarm of `.ci/swarm.sh`: a manager, and the registry both nodes pull from. */
const TEST_SWARM_HOST = process.env.TEST_SWARM_HOST?.trim() || null;
const TEST_SWARM_WORKER_HOST = process.env.TEST_SWARM_WORKER_HOST?.trim() || null;
const TEST_SWARM_REGISTRY = process.env.TEST_SWARM_REGISTRY?.trim() || null;

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

// It drains the worker: Swarm would move other files' tasks too.
holdSwarm('exclusive');

describeSwarm('the controller on a two-node Docker Swarm (SCHEDULER=swarm)', () => {
  const tag = process.pid.toString(36);
  const app = `swarmapp-${tag}`;
  const env = {
    SCHEDULER: 'swarm',
    // The swarm's registry is on a private network: only one the operator names may be pulled from.
    REGISTRY_ALLOW: TEST_SWARM_REGISTRY ?? '',
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
  const taskNodes = async (): Promise<string[]> => {
    // Each release's web tasks are a service of their own (`-web`, `-web-2`): the app's web services by label.
    const services = await docker.listServices({ filters: { label: [`${LABELS.instance}=e2e-${tag}`, `${LABELS.app}=${app}`, `${LABELS.type}=web`] } });
    if (services.length === 0) return [];
    return (await docker.listTasks({ filters: { service: services.map((service) => service.ID as string), 'desired-state': ['running'] } }))
      .filter((task) => task.Status?.State === 'running')
      .map((task) => task.NodeID as string);
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
    if (workerId !== null && docker) await setAvailability(workerId, 'active').catch(() => undefined);
    await alice?.api.delete(`/v1/apps/${app}/`).catch(() => undefined);
    await closeSwarmTest({ server, manager: docker, instance: env.DOCKER_INSTANCE, dataDir });
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
});
