import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { createEngine, type Docker } from '@svc/scheduler-docker';
import { loadConfig, startServer, type RunningServer } from '../src';
import { ApiClient, closeSwarmTest, signUp, viaRouter, type Session } from './support';
import { WorkingCopy, keyPair, nodeApp } from '../../builder-git/test/support/git-client';
import { holdSwarm } from '../../scheduler-docker/test/support/swarm';

jest.setTimeout(600_000);

/** The two-node swarm of `.ci/swarm.sh`, its open registry (the stack image) and the one that asks for a login (the builds). */
const TEST_SWARM_HOST = process.env.TEST_SWARM_HOST?.trim() || null;
const TEST_SWARM_WORKER_HOST = process.env.TEST_SWARM_WORKER_HOST?.trim() || null;
const TEST_SWARM_REGISTRY = process.env.TEST_SWARM_REGISTRY?.trim() || null;
const TEST_SWARM_AUTH_REGISTRY = process.env.TEST_SWARM_AUTH_REGISTRY?.trim() || null;
const READY = TEST_SWARM_HOST !== null && TEST_SWARM_WORKER_HOST !== null && TEST_SWARM_REGISTRY !== null && TEST_SWARM_AUTH_REGISTRY !== null;

const describeSwarm = READY ? describe : process.env.CI === 'true' ? describe : describe.skip;
if (!READY && process.env.CI !== 'true') {
  process.stdout.write('Git pushes on a two-node Docker Swarm (e2e) were not run: start one with eval "$(.ci/swarm.sh start)".\n');
}

/**
 * REGISTRY end to end on the two-node swarm of `.ci/swarm.sh`: a git push is built on the
 * manager's engine, pushed with the login to a registry that asks for one, recorded by digest,
 * and its tasks run on both nodes, the worker pulling the exact image by that digest with the
 * login Swarm keeps with the service.
 */
// Its tasks run on both nodes: no other file may drain one meanwhile.
holdSwarm('shared');

describeSwarm('git pushes on a two-node Docker Swarm with a registry (SCHEDULER=swarm, REGISTRY, REGISTRY_USERNAME, REGISTRY_PASSWORD)', () => {
  const tag = process.pid.toString(36);
  const prefix = `reg${tag}`;
  const env = {
    SCHEDULER: 'swarm',
    // The swarm's registry is on a private network: only one the operator names may be pulled from.
    REGISTRY_ALLOW: TEST_SWARM_REGISTRY ?? '',
    DOCKER_HOST: TEST_SWARM_HOST ?? '',
    REGISTRY: TEST_SWARM_AUTH_REGISTRY ?? '',
    REGISTRY_USERNAME: process.env.TEST_SWARM_REGISTRY_USERNAME ?? '',
    REGISTRY_PASSWORD: process.env.TEST_SWARM_REGISTRY_PASSWORD ?? '',
    DOCKER_INSTANCE: `e2e-reg-${tag}`,
    SWARM_SERVICE_PREFIX: prefix,
    // The tasks' network of .ci/swarm.sh (ICC off), when it made one.
    SWARM_NETWORK: process.env.TEST_SWARM_NETWORK?.trim() ?? '',
    SWARM_DRAIN_SECONDS: '1',
    SWARM_HEALTH_INTERVAL_SECONDS: '1',
    SWARM_UPDATE_MONITOR_SECONDS: '1',
    HEALTHCHECK_TIMEOUT: '60',
    GIT_SSH_PORT: '0',
    STACK_IMAGE: `${TEST_SWARM_REGISTRY ?? ''}/svc-test/node:20`,
    BUILD_TIMEOUT_SECONDS: '120',
    ROUTER_PORT: '0',
    LOG_LEVEL: 'silent',
    HOST: '127.0.0.1',
    PORT: '0',
  };
  let manager: Docker;
  let worker: Docker;
  let dataDir: string;
  let server: RunningServer;
  let alice: Session;
  const routerPort = (): number => server.routerPort ?? 0;

  beforeAll(async () => {
    if (!READY) throw new Error('TEST_SWARM_HOST, TEST_SWARM_WORKER_HOST, TEST_SWARM_REGISTRY and TEST_SWARM_AUTH_REGISTRY must be set under CI=true (.ci/swarm.sh starts a swarm)');
    manager = createEngine(TEST_SWARM_HOST);
    worker = createEngine(TEST_SWARM_WORKER_HOST);
    dataDir = await mkdtemp(join(tmpdir(), 'svc-swarm-registry-e2e-'));
    server = await startServer(loadConfig({ ...env, DATA_DIR: dataDir }), pino({ level: 'silent' }));
    alice = await signUp(new ApiClient(server.url), `alice${tag}`);
  });

  afterAll(async () => {
    await closeSwarmTest({ server, manager: manager, instance: env.DOCKER_INSTANCE, dataDir });
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
      expect(outcome.stderr).toMatch(new RegExp(`remote: +Pushed ${TEST_SWARM_AUTH_REGISTRY as string}/${pushed}@sha256:[0-9a-f]{64}`));
      const builds = (await alice.api.get<{ results: Array<{ image: string }> }>(`/v1/apps/${pushed}/builds/`)).body.results;
      expect(builds).toEqual([expect.objectContaining({ image: expect.stringMatching(new RegExp(`^${TEST_SWARM_AUTH_REGISTRY as string}/${pushed}@sha256:[0-9a-f]{64}$`)) })]);
      expect((await alice.api.post(`/v1/apps/${pushed}/scale/`, { web: 2 })).status).toBe(204);
      const webService = `${prefix}-${pushed}-web`;
      const onWorkerNow = await worker.listContainers({ filters: { label: [`com.docker.swarm.service.name=${webService}`], status: ['running'] } });
      expect(onWorkerNow).toHaveLength(1);
      // The worker never had the image: it pulled the build by its digest, with the login.
      expect((await worker.getImage(builds[0]?.image as string).inspect()).RepoDigests).toContain(builds[0]?.image);
      // Without the login, the registry gives the image to no one.
      const image = builds[0]?.image as string;
      const anonymous = await fetch(`http://${TEST_SWARM_AUTH_REGISTRY as string}/v2/${pushed}/manifests/${image.slice(image.indexOf('@') + 1)}`);
      expect(anonymous.status).toBe(401);
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
