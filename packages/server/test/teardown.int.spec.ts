import { execFileSync } from 'node:child_process';
import { DockerScheduler, DockerSourceCompiler, LABELS, createEngine, unguardBuildBridge, unguardHostFromBridge, type Docker } from '@svc/scheduler-docker';
import { loadConfig } from '../src/config';
import { teardownEngine } from '../src/teardown-engine';

jest.setTimeout(120_000);

/** The busybox image `.ci/docker-engine.sh` makes: sh, sed and chroot, all the guards' helper needs. */
const BUSYBOX = 'svc-test/busybox:1';

/** How many rules of this machine's filter table mention the bridge (the engine runs on this machine). */
const mentioning = (bridge: string): number =>
  execFileSync('iptables', ['-w', '-S'], { encoding: 'utf8' })
    .split('\n')
    .filter((line) => line.split(/\s+/).some((word) => word === bridge || word.endsWith(`-${bridge}`))).length;

const engine = process.env.TEST_DOCKER_HOST?.trim() ?? '';

function describeWithEngine(title: string, body: () => void): void {
  if (engine !== '') describe(title, body);
  else if (process.env.CI === 'true') {
    describe(title, () => {
      it('needs a Docker engine: TEST_DOCKER_HOST is not set (.ci/docker-engine.sh starts one)', () => {
        throw new Error('TEST_DOCKER_HOST is not set under CI=true');
      });
    });
  } else {
    process.stdout.write(`${title}: not run, set TEST_DOCKER_HOST to run it.\n`);
    describe.skip(title, body);
  }
}

describeWithEngine('npm run teardown against a real engine', () => {
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`.slice(-7);
  const env = {
    SCHEDULER: 'docker',
    DOCKER_HOST: engine,
    DOCKER_INSTANCE: `teardown-${tag}`,
    DOCKER_NETWORK: `svc-td-${tag}`,
    DOCKER_BRIDGE: `svctd${tag}`,
    BUILDPACK_NETWORK: `svc-tdb-${tag}`,
    BUILDPACK_BRIDGE: `svctb${tag}`,
    // The controller of compose.yaml: no iptables of its own, the guards through the engine.
    DOCKER_GUARDS: 'engine',
    STACK_IMAGE: BUSYBOX,
  };
  let docker: Docker;

  beforeAll(() => {
    docker = createEngine(engine);
  });

  afterAll(async () => {
    await docker.getNetwork(env.DOCKER_NETWORK).remove().catch(() => undefined);
    await docker.getNetwork(env.BUILDPACK_NETWORK).remove().catch(() => undefined);
    await unguardHostFromBridge(env.DOCKER_BRIDGE);
    await unguardBuildBridge(env.BUILDPACK_BRIDGE);
  });

  it("removes the instance's containers, both networks and their guards: the bridges' rules are back to none", async () => {
    const before = { apps: mentioning(env.DOCKER_BRIDGE), builds: mentioning(env.BUILDPACK_BRIDGE) };
    expect(before).toEqual({ apps: 0, builds: 0 });
    const scheduler = new DockerScheduler({ docker, logs: { append: async () => undefined }, instance: env.DOCKER_INSTANCE, network: env.DOCKER_NETWORK, bridge: env.DOCKER_BRIDGE, guards: 'engine', guardImage: BUSYBOX });
    await scheduler.prepare();
    await scheduler.shutdown();
    const compiler = new DockerSourceCompiler({ docker, stackImage: BUSYBOX, makeStackImage: false, network: env.BUILDPACK_NETWORK, bridge: env.BUILDPACK_BRIDGE, guards: 'engine' });
    await compiler.prepare();
    const container = await docker.createContainer({ Image: BUSYBOX, Cmd: ['sleep', '600'], Labels: { [LABELS.instance]: env.DOCKER_INSTANCE }, HostConfig: { NetworkMode: env.DOCKER_NETWORK } });
    await container.start();
    const made = { apps: mentioning(env.DOCKER_BRIDGE), builds: mentioning(env.BUILDPACK_BRIDGE) };
    expect(made.apps).toBeGreaterThan(0);
    expect(made.builds).toBeGreaterThan(0);

    const lines: string[] = [];
    await teardownEngine(loadConfig(env), false, (line) => lines.push(line));
    expect(lines.join('\n')).toContain('Run again with --yes');
    expect({ apps: mentioning(env.DOCKER_BRIDGE), builds: mentioning(env.BUILDPACK_BRIDGE) }).toEqual(made);

    await teardownEngine(loadConfig(env), true, (line) => lines.push(line));
    expect(lines.slice(-2)).toEqual([
      `Removed 1 container(s) of instance ${env.DOCKER_INSTANCE}, the network ${env.DOCKER_NETWORK} and its guard.`,
      `Removed the build network ${env.BUILDPACK_NETWORK} and its guards.`,
    ]);
    expect({ apps: mentioning(env.DOCKER_BRIDGE), builds: mentioning(env.BUILDPACK_BRIDGE) }).toEqual(before);
    await expect(container.inspect()).rejects.toMatchObject({ statusCode: 404 });
    await expect(docker.getNetwork(env.DOCKER_NETWORK).inspect()).rejects.toMatchObject({ statusCode: 404 });
    await expect(docker.getNetwork(env.BUILDPACK_NETWORK).inspect()).rejects.toMatchObject({ statusCode: 404 });
  });
});
