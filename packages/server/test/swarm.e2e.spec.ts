import { mkdtemp, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { LABELS, createEngine, type Docker } from '@svc/scheduler-docker';
import { loadConfig, startServer, type RunningServer } from '../src';
import { ApiClient, signUp, type Session } from './support';
import { WorkingCopy, keyPair, nodeApp } from '../../builder-git/test/support/git-client';

jest.setTimeout(600_000);

/** The two-node swarm and the registry of `.ci/swarm.sh`. */
const TEST_SWARM_HOST = process.env.TEST_SWARM_HOST?.trim() || null;
const TEST_SWARM_WORKER_HOST = process.env.TEST_SWARM_WORKER_HOST?.trim() || null;
const TEST_SWARM_REGISTRY = process.env.TEST_SWARM_REGISTRY?.trim() || null;
const READY = TEST_SWARM_HOST !== null && TEST_SWARM_WORKER_HOST !== null && TEST_SWARM_REGISTRY !== null;

/** One GET through the router to the app; status 0 when no answer came. */
function viaRouter(port: number, app: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { Host: `${app}.localhost` }, agent: false, timeout: 10_000 }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      res.on('error', (error) => resolve({ status: 0, text: error.message }));
    });
    req.on('timeout', () => req.destroy(new Error('no answer within 10 s')));
    req.on('error', (error) => resolve({ status: 0, text: error.message }));
    req.end();
  });
}

/** What steady traffic through the router saw. */
interface Traffic {
  ok: number;
  failures: string[];
  /** How many answers had each body. */
  bodies: Record<string, number>;
}

/** Steady traffic through the router (`workers` requests in flight, one after another each) until stopped. */
function steadyTraffic(port: number, app: string, workers = 4): { stop(): Promise<Traffic> } {
  const traffic: Traffic = { ok: 0, failures: [], bodies: {} };
  let running = true;
  const loop = async (): Promise<void> => {
    while (running) {
      const answer = await viaRouter(port, app);
      if (answer.status === 200) {
        traffic.ok++;
        traffic.bodies[answer.text] = (traffic.bodies[answer.text] ?? 0) + 1;
      } else {
        traffic.failures.push(`${new Date().toISOString()} ${answer.status} ${answer.text.slice(0, 200)}`);
      }
    }
  };
  const loops = Array.from({ length: workers }, () => loop());
  return {
    async stop() {
      running = false;
      await Promise.all(loops);
      return traffic;
    },
  };
}

/** Makes an image serving its GREETING config value (default `one`) on port 8080, pushed to the registry. */
async function makeImage(docker: Docker, base: string, repo: string): Promise<void> {
  const builder = await docker.createContainer({ Image: base, Cmd: ['sh', '-c', 'mkdir -p /www && chmod 777 /www'] });
  await builder.start();
  await builder.wait();
  await builder.commit({
    repo,
    tag: '1',
    changes: ['EXPOSE 8080', 'CMD ["/bin/sh", "-c", "echo ${GREETING:-one} > /www/index.html; exec httpd -f -p 8080 -h /www"]'],
  } as never);
  await builder.remove({ force: true });
  const stream = (await docker.getImage(`${repo}:1`).push({ authconfig: {} } as never)) as unknown as NodeJS.ReadableStream;
  await new Promise<void>((resolve, reject) =>
    docker.modem.followProgress(stream, (error: Error | null, output: { error?: string }[]) => {
      const failed = error ?? output.find((o) => o.error);
      if (failed) reject(failed instanceof Error ? failed : new Error(String(failed.error)));
      else resolve();
    }),
  );
}

async function waitFor(what: string, check: () => Promise<boolean>, timeoutMs = 120_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms`);
    await new Promise((done) => setTimeout(done, 500));
  }
}

/** Sets a node's availability (`active`, `drain`). */
async function setAvailability(docker: Docker, nodeId: string, availability: 'active' | 'drain'): Promise<void> {
  const node = (await docker.getNode(nodeId).inspect()) as { Version: { Index: number }; Spec: Record<string, unknown> };
  await docker.getNode(nodeId).update({ version: node.Version.Index, ...node.Spec, Availability: availability });
}

interface ContainerJson {
  type: string;
  num: number;
  state: string;
  release: string;
}

const describeSwarm = READY ? describe : process.env.CI === 'true' ? describe : describe.skip;
if (!READY && process.env.CI !== 'true') {
  process.stdout.write('The controller on a two-node Docker Swarm (e2e) was not run: start one with eval "$(.ci/swarm.sh start)".\n');
}

describeSwarm('the controller on a two-node Docker Swarm (SCHEDULER=swarm)', () => {
  const tag = process.pid.toString(36);
  const app = `swarmapp-${tag}`;
  const prefix = `e2e${tag}`;
  const env = {
    SCHEDULER: 'swarm',
    DOCKER_HOST: TEST_SWARM_HOST ?? '',
    REGISTRY: TEST_SWARM_REGISTRY ?? '',
    DOCKER_INSTANCE: `e2e-${tag}`,
    SWARM_SERVICE_PREFIX: prefix,
    SWARM_DRAIN_SECONDS: '2',
    SWARM_HEALTH_INTERVAL_SECONDS: '1',
    SWARM_UPDATE_MONITOR_SECONDS: '1',
    HEALTHCHECK_TIMEOUT: '60',
    PROCESS_STOP_TIMEOUT_SECONDS: '2',
    GIT_SSH_PORT: '0',
    STACK_IMAGE: `${TEST_SWARM_REGISTRY ?? ''}/svc-test/node:20`,
    BUILD_TIMEOUT_SECONDS: '120',
    ROUTER_PORT: '0',
    LOG_LEVEL: 'silent',
    HOST: '127.0.0.1',
    PORT: '0',
  };
  const service = `${prefix}-${app}-cmd`;
  let manager: Docker;
  let worker: Docker;
  let workerNode: string;
  let image: string;
  let dataDir: string;
  let server: RunningServer;
  let alice: Session;

  const containers = async (): Promise<ContainerJson[]> => (await alice.api.get<{ results: ContainerJson[] }>(`/v1/apps/${app}/containers/`)).body.results;
  /** The app's task containers running on the worker's engine. */
  const onWorker = async (): Promise<number> => (await worker.listContainers({ filters: { label: [`com.docker.swarm.service.name=${service}`], status: ['running'] } })).length;
  const routerPort = (): number => server.routerPort ?? 0;

  beforeAll(async () => {
    if (!READY) throw new Error('TEST_SWARM_HOST, TEST_SWARM_WORKER_HOST and TEST_SWARM_REGISTRY must be set under CI=true (.ci/swarm.sh starts a swarm)');
    manager = createEngine(TEST_SWARM_HOST);
    worker = createEngine(TEST_SWARM_WORKER_HOST);
    const nodes = await manager.listNodes({ filters: JSON.stringify({ role: ['worker'] }) });
    expect(nodes).toHaveLength(1);
    workerNode = nodes[0]?.ID as string;
    image = `${TEST_SWARM_REGISTRY}/svc-e2e/swarm-${tag}:1`;
    await makeImage(manager, `${TEST_SWARM_REGISTRY}/svc-test/busybox:1`, `${TEST_SWARM_REGISTRY}/svc-e2e/swarm-${tag}`);
    dataDir = await mkdtemp(join(tmpdir(), 'svc-swarm-e2e-'));
    server = await startServer(loadConfig({ ...env, DATA_DIR: dataDir }), pino({ level: 'silent' }));
    alice = await signUp(new ApiClient(server.url), `alice${tag}`);
    expect((await alice.api.post('/v1/apps/', { id: app })).status).toBe(201);
  });

  afterAll(async () => {
    if (manager && workerNode) await setAvailability(manager, workerNode, 'active').catch(() => undefined);
    await alice?.api.delete(`/v1/apps/${app}/`).catch(() => undefined);
    await server?.close();
    if (manager) {
      const left = await manager.listServices({ filters: { label: [`${LABELS.instance}=${env.DOCKER_INSTANCE}`] } });
      await Promise.all(left.map((s) => manager.getService(s.ID as string).remove().catch(() => undefined)));
      await manager.getImage(image).remove({ force: true }).catch(() => undefined);
    }
    if (worker) await worker.getImage(image).remove({ force: true }).catch(() => undefined);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('deploys an image from the registry as a Swarm service, and the router serves it', async () => {
    expect(server.schedulerKind).toBe('swarm');
    expect((await alice.api.post(`/v1/apps/${app}/builds/`, { image })).status).toBe(201);
    expect(await containers()).toEqual([expect.objectContaining({ type: 'cmd', num: 1, state: 'up', release: 'v2' })]);
    expect(await viaRouter(routerPort(), app)).toEqual({ status: 200, text: 'one\n' });
    const services = await manager.listServices({ filters: { name: [service] } });
    expect(services.map((s) => s.Spec?.Name)).toEqual([service]);
  });

  it('scales to two replicas, one on each node, both served', async () => {
    expect((await alice.api.post(`/v1/apps/${app}/scale/`, { cmd: 2 })).status).toBe(204);
    expect((await containers()).map((c) => `${c.type}.${c.num} ${c.state}`)).toEqual(['cmd.1 up', 'cmd.2 up']);
    expect(await onWorker()).toBe(1);
    const onManager = await manager.listContainers({ filters: { label: [`com.docker.swarm.service.name=${service}`], status: ['running'] } });
    expect(onManager).toHaveLength(1);
    for (let i = 0; i < 10; i++) expect(await viaRouter(routerPort(), app)).toEqual({ status: 200, text: 'one\n' });
  });

  it('rolls a config change out under steady traffic without one failed request', async () => {
    const traffic = steadyTraffic(routerPort(), app);
    await new Promise((done) => setTimeout(done, 1000));
    const changed = await alice.api.post(`/v1/apps/${app}/config/`, { values: { GREETING: 'two' } });
    expect(changed.status).toBe(201);
    await waitFor('the new release serving', async () => (await viaRouter(routerPort(), app)).text === 'two\n');
    await new Promise((done) => setTimeout(done, 1000));
    const seen = await traffic.stop();
    process.stdout.write(`rolling update under traffic: ${seen.ok} answered, ${seen.failures.length} failed, bodies ${JSON.stringify(seen.bodies)}\n`);
    expect(seen.failures).toEqual([]);
    expect(seen.bodies['one\n']).toBeGreaterThan(0);
    expect(seen.bodies['two\n']).toBeGreaterThan(0);
    expect((await containers()).map((c) => `${c.type}.${c.num} ${c.state} ${c.release}`)).toEqual(['cmd.1 up v3', 'cmd.2 up v3']);
  });

  it('keeps serving while the worker is drained: its tasks move to the manager', async () => {
    // A rolling update places each new task while the old ones still run, so Swarm may have
    // put both on one node: a third replica goes to the node with fewer, the worker.
    process.stdout.write(`after the rolling update: ${await onWorker()} of 2 tasks on the worker\n`);
    expect((await alice.api.post(`/v1/apps/${app}/scale/`, { cmd: 3 })).status).toBe(204);
    await waitFor('a task on the worker', async () => (await onWorker()) >= 1);
    const traffic = steadyTraffic(routerPort(), app);
    await new Promise((done) => setTimeout(done, 1000));
    await setAvailability(manager, workerNode, 'drain');
    try {
      await waitFor('the worker emptied', async () => (await onWorker()) === 0);
      await waitFor('two tasks running on the manager', async () => {
        const running = await manager.listContainers({ filters: { label: [`com.docker.swarm.service.name=${service}`], status: ['running'] } });
        return running.length === 3;
      });
      await new Promise((done) => setTimeout(done, 3000));
      const seen = await traffic.stop();
      process.stdout.write(`draining the worker under traffic: ${seen.ok} answered, ${seen.failures.length} failed\n`);
      expect(seen.failures).toEqual([]);
      expect(seen.ok).toBeGreaterThan(0);
      await waitFor('both containers up in the API', async () => (await containers()).every((c) => c.state === 'up'));
      expect((await containers()).map((c) => `${c.type}.${c.num} ${c.state}`)).toEqual(['cmd.1 up', 'cmd.2 up', 'cmd.3 up']);
      for (let i = 0; i < 10; i++) expect(await viaRouter(routerPort(), app)).toEqual({ status: 200, text: 'two\n' });
    } finally {
      await traffic.stop();
      await setAvailability(manager, workerNode, 'active');
    }
  });

  it('rolls back to the earlier release under steady traffic, still without a failed request', async () => {
    const traffic = steadyTraffic(routerPort(), app);
    await new Promise((done) => setTimeout(done, 1000));
    expect((await alice.api.post(`/v1/apps/${app}/releases/rollback/`, { version: 2 })).status).toBe(201);
    await waitFor('the earlier release serving', async () => (await viaRouter(routerPort(), app)).text === 'one\n');
    await new Promise((done) => setTimeout(done, 1000));
    const seen = await traffic.stop();
    process.stdout.write(`rollback under traffic: ${seen.ok} answered, ${seen.failures.length} failed\n`);
    expect(seen.failures).toEqual([]);
    expect((await containers()).map((c) => `${c.type}.${c.num} ${c.state} ${c.release}`)).toEqual(['cmd.1 up v4', 'cmd.2 up v4', 'cmd.3 up v4']);
    for (let i = 0; i < 10; i++) expect(await viaRouter(routerPort(), app)).toEqual({ status: 200, text: 'one\n' });
  });
  it('a git push is built on the manager, pushed to the registry and run by digest on both nodes', async () => {
    const pushed = `swarmgit-${tag}`;
    const root = await mkdtemp(join(tmpdir(), 'svc-swarm-git-'));
    try {
      expect((await alice.api.post('/v1/apps/', { id: pushed })).status).toBe(201);
      const key = await keyPair(root, 'alice');
      expect((await alice.api.post('/v1/keys/', { id: 'laptop', public: key.publicKey })).status).toBe(201);
      const copy = await WorkingCopy.init(join(root, pushed), join(root, 'home'), key);
      await copy.expectGit(['remote', 'add', 'svc', `ssh://git@127.0.0.1:${server.gitPort as number}/${pushed}.git`]);
      await copy.commit(nodeApp('built and pushed'), 'first');

      const outcome = await copy.git(['push', 'svc', 'main']);

      expect(outcome.code).toBe(0);
      expect(outcome.stderr).toMatch(new RegExp(`remote: +Pushed ${TEST_SWARM_REGISTRY as string}/${pushed}@sha256:[0-9a-f]{64}`));
      const builds = (await alice.api.get<{ results: Array<{ image: string }> }>(`/v1/apps/${pushed}/builds/`)).body.results;
      expect(builds).toEqual([expect.objectContaining({ image: expect.stringMatching(new RegExp(`^${TEST_SWARM_REGISTRY as string}/${pushed}@sha256:[0-9a-f]{64}$`)) })]);
      expect((await alice.api.post(`/v1/apps/${pushed}/scale/`, { web: 2 })).status).toBe(204);
      const webService = `${prefix}-${pushed}-web`;
      const onWorkerNow = await worker.listContainers({ filters: { label: [`com.docker.swarm.service.name=${webService}`], status: ['running'] } });
      expect(onWorkerNow).toHaveLength(1);
      // The worker never had the image: it pulled the build by its digest.
      expect((await worker.getImage(builds[0]?.image as string).inspect()).RepoDigests).toContain(builds[0]?.image);
      for (let i = 0; i < 6; i++) expect(await viaRouter(routerPort(), pushed)).toEqual({ status: 200, text: 'built and pushed\n' });
    } finally {
      await alice.api.delete(`/v1/apps/${pushed}/`).catch(() => undefined);
      for (const engine of [manager, worker]) {
        const made = await engine.listImages({ filters: JSON.stringify({ label: [`svc.app=${pushed}`] }) });
        for (const one of made) await engine.getImage(one.Id).remove({ force: true }).catch(() => undefined);
      }
      await rm(root, { recursive: true, force: true });
    }
  });
});
