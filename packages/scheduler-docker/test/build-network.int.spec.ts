import { mkdtemp, rm } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Docker from 'dockerode';
import type { InstalledBuildpack } from '@svc/core';
import { APP_LABEL, DockerSourceCompiler, cacheVolumeName, egressChainName, guardChainName } from '../src';
import { SCRIPT_BUILDPACK, compileWith, makeStackImage, writeTree } from './support/compile';
import { BUSYBOX, TEST_DOCKER_HOST, connectTestEngine, describeWithEngine } from './support/engine';
import { execFileSync } from 'node:child_process';

jest.setTimeout(180_000);

/** This host's address on its own network (the machine facts: 192.0.2.2), where services bound to all addresses answer. */
const HOST_ADDRESS = process.env.TEST_HOST_ADDRESS ?? '192.0.2.2';

/** A node script that tries a TCP connection to each `host:port` argument and prints `open` or `closed` for each. */
const PROBE = `
const net = require('net');
const targets = process.argv.filter((arg) => /:\\d+$/.test(arg));
(async () => {
  for (const target of targets) {
    const [host, port] = target.split(/:(?=\\d+$)/);
    const open = await new Promise((done) => {
      const socket = net.connect({ host, port: Number(port) });
      socket.setTimeout(3000, () => { socket.destroy(); done(false); });
      socket.once('connect', () => { socket.destroy(); done(true); });
      socket.once('error', () => done(false));
    });
    console.log((open ? 'open ' : 'closed ') + target);
  }
})();
`;

function tcpOpen(host: string, port: number): Promise<boolean> {
  return new Promise((done) => {
    const socket = connect({ host, port });
    socket.setTimeout(3000, () => {
      socket.destroy();
      done(false);
    });
    socket.once('connect', () => {
      socket.destroy();
      done(true);
    });
    socket.once('error', () => done(false));
  });
}

describeWithEngine('The build network against a real engine', () => {
  const tag = `${process.pid.toString(36)}${Date.now().toString(36)}n`;
  const stack = `svc-test/stack:${tag}`;
  const network = `svc-build-${tag}`;
  const bridge = `svcn${tag}`.slice(0, 15);
  const appsNetwork = `svc-test-apps-${tag}`;
  const app = `net-${tag}`;
  const uuid = `uuid-net-${tag}`;
  let docker: Docker;
  let root: string;
  let buildpack: InstalledBuildpack;
  let compiler: DockerSourceCompiler;
  let server: Server;
  let hostPort: number;
  let other: Docker.Container;
  let otherAddress: string;

  /** Runs the probe in a compile step of a build of the app; resolves with its lines. */
  const probeFromBuild = async (targets: string[], script = `node probe.js ${targets.join(' ')}`, on: DockerSourceCompiler = compiler): Promise<string[]> => {
    const dir = await writeTree(join(root, `src-${Date.now()}`), { 'probe.js': PROBE, 'run.sh': `${script}\n` });
    const session = await on.open({ app, appUuid: uuid, directory: dir, env: {} });
    try {
      const { lines, error } = await compileWith(session, buildpack);
      if (error) throw new Error(`${error.message}\n${lines.join('\n')}`);
      return lines;
    } finally {
      await session.discard();
    }
  };

  beforeAll(async () => {
    ({ docker } = await connectTestEngine(TEST_DOCKER_HOST, 'Docker engine'));
    root = await mkdtemp(join(tmpdir(), 'svc-build-net-'));
    buildpack = { name: 'script', directory: await writeTree(join(root, 'buildpack'), SCRIPT_BUILDPACK) };
    await makeStackImage(stack);
    compiler = new DockerSourceCompiler({ docker, stackImage: stack, dockerHost: TEST_DOCKER_HOST, network, bridge, timeoutMs: 120_000 });
    await compiler.prepare();
    // A stand-in for the API: a port of this host open on all addresses.
    server = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.end('hello\n');
    });
    await new Promise<void>((done) => server.listen(0, '0.0.0.0', done));
    hostPort = (server.address() as { port: number }).port;
    // Another app's container on a platform network.
    await docker.createNetwork({ Name: appsNetwork, Driver: 'bridge', Options: { 'com.docker.network.bridge.enable_icc': 'false' } });
    other = await docker.createContainer({ Image: BUSYBOX, Cmd: ['httpd', '-f', '-p', '8080'], Labels: { [APP_LABEL]: `${app}-other` }, HostConfig: { NetworkMode: appsNetwork } });
    await other.start();
    otherAddress = (await other.inspect()).NetworkSettings.Networks[appsNetwork]?.IPAddress ?? '';
  }, 600_000);

  afterAll(async () => {
    await other?.remove({ force: true }).catch(() => undefined);
    await docker.getNetwork(appsNetwork).remove().catch(() => undefined);
    await docker.getVolume(cacheVolumeName(uuid)).remove().catch(() => undefined);
    await docker.getImage(stack).remove({ force: true }).catch(() => undefined);
    // The operator's teardown: the network and both guards.
    await compiler.teardown();
    await new Promise((done) => server?.close(done));
    await rm(root, { recursive: true, force: true });
  });

  it('is a bridge without traffic between its containers, guarded on INPUT and for forwarded traffic', async () => {
    const info = (await docker.getNetwork(network).inspect()) as Docker.NetworkInspectInfo;
    expect(info.Options?.['com.docker.network.bridge.enable_icc']).toBe('false');
    expect(info.EnableIPv6).toBe(false);
    const rules = execFileSync('iptables', ['-w', '-S'], { encoding: 'utf8' });
    expect(rules).toContain(`-A INPUT -i ${bridge} -j ${guardChainName(bridge)}`);
    expect(rules).toContain(`-A DOCKER-USER -i ${bridge} -j ${egressChainName(bridge)}`);
    expect(rules).toContain(`-A ${egressChainName(bridge)} -d 10.0.0.0/8 -j REJECT`);
  });

  it('lets a compile step reach the npm registry over HTTPS, its name resolved through the engine', async () => {
    const lines = await probeFromBuild(
      [],
      `NODE_EXTRA_CA_CERTS=/etc/ssl/certs/ca-certificates.crt node -e "require('https').get('https://registry.npmjs.org/is-number', (r) => { console.log('status ' + r.statusCode); r.resume(); r.on('end', () => process.exit(0)); }).on('error', (e) => { console.log('error ' + e.message); process.exit(1); })"`,
    );
    expect(lines).toEqual(['status 200']);
  });

  it("reaches no port of this host (the gateway, its own address), no private address and no other app's container", async () => {
    const gateway = ((await docker.getNetwork(network).inspect()) as Docker.NetworkInspectInfo).IPAM?.Config?.[0]?.Gateway ?? '';
    expect(gateway).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
    // The targets answer where nothing stops the way: this host reaches the other app, a container on the engine's default bridge reaches the host's port.
    expect(await tcpOpen(otherAddress, 8080)).toBe(true);
    expect(await probeFromDefaultBridge(`${HOST_ADDRESS}:${hostPort}`)).toBe(`open ${HOST_ADDRESS}:${hostPort}`);

    const targets = [`${gateway}:${hostPort}`, `${HOST_ADDRESS}:${hostPort}`, `${gateway}:5432`, `${HOST_ADDRESS}:5432`, `${otherAddress}:8080`, '10.255.255.53:80', '169.254.169.254:80', '100.64.0.1:80', '172.16.0.1:80', '192.168.0.1:80'];
    const lines = await probeFromBuild(targets);
    expect(lines).toEqual(targets.map((target) => `closed ${target}`));
  });

  it("reaches the operator's mirror on this host (BUILD_NETWORK_ALLOW: its address and port), and still nothing else of this host", async () => {
    const mirror = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.end('packages\n');
    });
    await new Promise<void>((done) => mirror.listen(0, '0.0.0.0', done));
    const mirrorPort = (mirror.address() as { port: number }).port;
    const allowing = new DockerSourceCompiler({
      docker,
      stackImage: stack,
      dockerHost: TEST_DOCKER_HOST,
      network: `${network}m`,
      // Another bridge name however the first one ends (the same name would be refused by the engine).
      bridge: `${bridge.slice(0, 14)}${bridge.endsWith('m') ? 'n' : 'm'}`,
      timeoutMs: 120_000,
      buildAllowed: [{ cidr: `${HOST_ADDRESS}/32`, port: mirrorPort }],
    });
    try {
      await allowing.prepare();
      const gateway = ((await docker.getNetwork(`${network}m`).inspect()) as Docker.NetworkInspectInfo).IPAM?.Config?.[0]?.Gateway ?? '';
      const targets = [`${HOST_ADDRESS}:${mirrorPort}`, `${HOST_ADDRESS}:${hostPort}`, `${gateway}:${mirrorPort}`, `${HOST_ADDRESS}:5432`, `${otherAddress}:8080`, '192.168.0.1:80'];
      const lines = await probeFromBuild(targets, undefined, allowing);
      expect(lines).toEqual([`open ${HOST_ADDRESS}:${mirrorPort}`, ...targets.slice(1).map((target) => `closed ${target}`)]);
      // The first network's guards are its own: its builds still do not reach the mirror.
      expect(await probeFromBuild([`${HOST_ADDRESS}:${mirrorPort}`])).toEqual([`closed ${HOST_ADDRESS}:${mirrorPort}`]);
    } finally {
      await allowing.teardown();
      await new Promise((done) => mirror.close(done));
    }
  });

  /** The probe run in a container of the stack on the engine's default bridge (no guard of ours). */
  async function probeFromDefaultBridge(target: string): Promise<string> {
    const container = await docker.createContainer({ Image: stack, Cmd: ['node', '-e', PROBE, target], Tty: true, HostConfig: { NetworkMode: 'bridge' } });
    try {
      await container.start();
      await container.wait();
      return (await container.logs({ stdout: true, stderr: true })).toString('utf8').trim();
    } finally {
      await container.remove({ force: true });
    }
  }
});
