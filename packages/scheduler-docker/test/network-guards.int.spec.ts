import { execFileSync } from 'node:child_process';
import type Docker from 'dockerode';
import {
  DockerSourceCompiler,
  EngineIptables,
  LABELS,
  applySteps,
  buildGuardSteps,
  egressChainName,
  guardChainName,
  guardHostFromBridge,
  unguardBuildBridge,
  unguardHostFromBridge,
} from '../src';
import { GUARD_HELPER_LABEL } from '../src/iptables-engine';
import { makeStackImage } from './support/compile';
import { BUSYBOX, TEST_DOCKER_HOST, connectTestEngine, describeWithEngine, testScheduler } from './support/engine';

jest.setTimeout(180_000);

/** The filter table's rules as this machine's iptables prints them (the engine runs on this machine). */
const rules = (): string[] => execFileSync('iptables', ['-w', '-S'], { encoding: 'utf8' }).split('\n');
/** How many of them mention the bridge (the engine's own rules for it, and the guards' chains and jumps). */
const mentioning = (bridge: string): number => rules().filter((line) => line.split(/\s+/).some((word) => word === bridge || word.endsWith(`-${bridge}`))).length;

describeWithEngine("The networks' guards on a real engine", () => {
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}`.slice(-8);
  const stack = `svc-test/stack:guards-${tag}`;
  let docker: Docker;
  let engine: EngineIptables;

  beforeAll(async () => {
    ({ docker } = await connectTestEngine(TEST_DOCKER_HOST, 'Docker engine'));
    await makeStackImage(stack);
    engine = new EngineIptables(docker, stack);
  }, 600_000);

  afterAll(async () => {
    await docker?.getImage(stack).remove({ force: true }).catch(() => undefined);
  });

  it("installs a host guard through a helper container on the engine: the host's iptables shows it, its removal leaves nothing", async () => {
    const bridge = `svcg${tag}`.slice(0, 15);
    expect(mentioning(bridge)).toBe(0);
    try {
      await guardHostFromBridge(bridge, [8080], engine);
      await guardHostFromBridge(bridge, [8080], engine);
      const chain = guardChainName(bridge);
      expect(rules()).toEqual(expect.arrayContaining([`-N ${chain}`, `-A ${chain} -p tcp -m tcp --dport 8080 -j ACCEPT`, `-A ${chain} -j DROP`, `-A INPUT -i ${bridge} -j ${chain}`]));
      expect(rules().filter((line) => line === `-A INPUT -i ${bridge} -j ${chain}`)).toHaveLength(1);
      await unguardHostFromBridge(bridge, engine);
      expect(mentioning(bridge)).toBe(0);
    } finally {
      await unguardHostFromBridge(bridge);
    }
    const helpers = await docker.listContainers({ all: true, filters: { label: [GUARD_HELPER_LABEL], ancestor: [stack] } });
    expect(helpers).toEqual([]);
  });

  it('installs both guards of a build bridge in one helper container, the egress chain jumped to from DOCKER-USER, and removes them', async () => {
    const bridge = `svcx${tag}`.slice(0, 15);
    try {
      await applySteps(engine, buildGuardSteps(bridge, ['192.0.2.53'], []));
      expect(rules()).toEqual(expect.arrayContaining([`-A DOCKER-USER -i ${bridge} -j ${egressChainName(bridge)}`, `-A ${egressChainName(bridge)} -d 10.0.0.0/8 -j REJECT --reject-with icmp-port-unreachable`, `-A INPUT -i ${bridge} -j ${guardChainName(bridge)}`]));
      await unguardBuildBridge(bridge, engine);
      expect(mentioning(bridge)).toBe(0);
    } finally {
      await unguardBuildBridge(bridge);
    }
  });

  it('reports what iptables said when a rule cannot be installed', async () => {
    await expect(applySteps(engine, [{ kind: 'must', args: ['-A', `SVC-NONE-${tag}`, '-j', 'DROP'] }])).rejects.toThrow(
      new RegExp(`^iptables -A SVC-NONE-${tag} -j DROP \\(through a helper container of ${stack.replace(/[/.]/g, '\\$&')} on the engine\\): .+`),
    );
  });

  for (const guards of ['engine', 'local'] as const) {
    it(`the Docker scheduler's teardown (${guards} iptables) removes its containers, its network and its guard: the bridge's rules are back to none`, async () => {
      const setup = await testScheduler({ guards, guardImage: stack, bridge: `svct${guards[0] ?? ''}${tag}`.slice(0, 15) });
      const bridge = setup.options.bridge ?? '';
      const network = setup.options.network ?? '';
      try {
        const before = mentioning(bridge);
        await setup.scheduler.prepare();
        const guarded = mentioning(bridge);
        expect(rules()).toContain(`-A INPUT -i ${bridge} -j ${guardChainName(bridge)}`);
        expect(guarded).toBeGreaterThan(before);
        // A container of the instance on the network, which the teardown removes first.
        const container = await docker.createContainer({ Image: BUSYBOX, Cmd: ['sleep', '600'], Labels: { [LABELS.instance]: setup.options.instance ?? '' }, HostConfig: { NetworkMode: network } });
        await container.start();
        expect(await setup.scheduler.teardown()).toBe(1);
        expect(mentioning(bridge)).toBe(before);
        await expect(docker.getNetwork(network).inspect()).rejects.toMatchObject({ statusCode: 404 });
        await expect(container.inspect()).rejects.toMatchObject({ statusCode: 404 });
      } finally {
        await setup.cleanUp();
      }
    });
  }

  it("the buildpack compiler's teardown (engine iptables) removes its network and both guards: the bridge's rules are back to none", async () => {
    const network = `svc-build-g${tag}`;
    const bridge = `svcb${tag}`.slice(0, 15);
    const compiler = new DockerSourceCompiler({ docker, stackImage: stack, dockerHost: TEST_DOCKER_HOST, network, bridge, guards: 'engine' });
    try {
      const before = mentioning(bridge);
      await compiler.prepare();
      expect(rules()).toEqual(expect.arrayContaining([`-A INPUT -i ${bridge} -j ${guardChainName(bridge)}`, `-A DOCKER-USER -i ${bridge} -j ${egressChainName(bridge)}`]));
      expect(mentioning(bridge)).toBeGreaterThan(before);
      await compiler.teardown();
      expect(mentioning(bridge)).toBe(before);
      await expect(docker.getNetwork(network).inspect()).rejects.toMatchObject({ statusCode: 404 });
    } finally {
      await docker.getNetwork(network).remove().catch(() => undefined);
      await unguardBuildBridge(bridge);
    }
  });
});
