import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createEngine, unguardHostFromBridge, type Docker } from '@svc/scheduler-docker';
import { call } from './processes/http';
import { buildWorkspace, type WorkspaceBuild } from './processes/workspace-build';
import { ownBuildNetwork, removeEngineInstance } from './support';
import { answered, failed, restartUnderLoad } from './support/restart';

/*
 * A controller restarted under load behind a router process of its own, on a Docker engine:
 * the new controller adopts the running container. The process scheduler's cases are in
 * controller-restart.e2e.spec.ts.
 */

jest.setTimeout(300_000);

/** The engine of the Docker tests (`.ci/docker-engine.sh` starts one). */
const TEST_DOCKER_HOST = process.env.TEST_DOCKER_HOST?.trim() || null;
const describeEngine = TEST_DOCKER_HOST !== null ? describe : process.env.CI === 'true' ? describe : describe.skip;
if (TEST_DOCKER_HOST === null && process.env.CI !== 'true') {
  process.stdout.write('A controller restart on a Docker engine (e2e) was not run: set TEST_DOCKER_HOST to run it.\n');
}

describeEngine('a controller restart behind a router process of its own, on a Docker engine', () => {
  const tag = process.pid.toString(36);
  const image = `svc-e2e/restart-${tag}:1`;
  const env = {
    SCHEDULER: 'docker',
    DOCKER_HOST: TEST_DOCKER_HOST ?? '',
    DOCKER_NETWORK: `svc-restart-${tag}`,
    DOCKER_BRIDGE: `svcr${tag}`.slice(0, 15),
    DOCKER_INSTANCE: `restart-${tag}`,
    ...ownBuildNetwork(),
    HEALTHCHECK_TIMEOUT: '30',
    PROCESS_STOP_TIMEOUT_SECONDS: '2',
  };
  let build: WorkspaceBuild;
  let docker: Docker;
  let dataDir: string;

  beforeAll(async () => {
    if (TEST_DOCKER_HOST === null) throw new Error('TEST_DOCKER_HOST is not set under CI=true (.ci/docker-engine.sh starts an engine)');
    build = await buildWorkspace();
    docker = createEngine(TEST_DOCKER_HOST);
    // An image that serves a page on 8080, from the offline busybox image.
    const builder = await docker.createContainer({ Image: 'svc-test/busybox:1', Cmd: ['sh', '-c', 'mkdir -p /www && echo restart > /www/index.html'] });
    await builder.start();
    await builder.wait();
    await builder.commit({ repo: `svc-e2e/restart-${tag}`, tag: '1', changes: ['EXPOSE 8080', 'CMD ["httpd", "-f", "-p", "8080", "-h", "/www"]'] } as never);
    await builder.remove({ force: true });
    dataDir = await mkdtemp(join(tmpdir(), 'svc-restart-docker-'));
  });

  afterAll(async () => {
    if (docker) {
      const build = { network: env.BUILDPACK_NETWORK, bridge: env.BUILDPACK_BRIDGE };
      await removeEngineInstance(docker, { instance: env.DOCKER_INSTANCE, network: env.DOCKER_NETWORK, bridge: env.DOCKER_BRIDGE, build });
      await docker.getImage(image).remove({ force: true }).catch(() => undefined);
    } else await unguardHostFromBridge(env.DOCKER_BRIDGE);
    if (dataDir) await rm(dataDir, { recursive: true, force: true });
  });

  it('no request fails, and the new controller adopts the running container', async () => {
    const { load, bodiesBefore } = await restartUnderLoad(
      build,
      {
        env: { ...env, DATA_DIR: dataDir, ROUTER_SOCKET: join(dataDir, 'router.sock') },
        deploy: async ({ url, token }, app) => {
          const built = await call(url, 'POST', `/v1/apps/${app}/builds/`, token, { image });
          expect(built.status).toBe(201);
        },
      },
      'Docker scheduler',
    );
    expect(load.failures).toEqual([]);
    expect(failed(load)).toBe(0);
    expect(answered(load)).toBeGreaterThan(1000);
    expect(bodiesBefore).toEqual(new Set(['restart']));
    expect(load.bodies).toEqual(new Set(['restart']));
  });
});
