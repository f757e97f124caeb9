import { randomUUID } from 'node:crypto';
import type { ContainerSpec } from '@svc/core';
import { SwarmScheduler } from '../src';
import { SWARM_BUSYBOX, TEST_SWARM_FIREWALL as FIREWALL, describeWithSwarmNetwork, holdSwarm, testSwarm, type TestSwarm } from './support/swarm';

const TIMEOUT = 180_000;
const settle = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));

function spec(app: string, type: string, num: number, command: string, env: Record<string, string> = {}): ContainerSpec {
  return { id: randomUUID(), app, type, num, release: 1, image: SWARM_BUSYBOX, command, workdir: null, env: { SVC_APP: app, SVC_RELEASE: 'v1', ...env }, memory: '64M', cpu: 256 };
}

async function waitForLines(t: TestSwarm, app: string, pattern: RegExp, count: number): Promise<string[]> {
  for (let waited = 0; waited < 60_000; waited += 250) {
    const found = (await t.lines(app)).filter((l) => pattern.test(l));
    if (found.length >= count) return found;
    await settle(250);
  }
  throw new Error(`${app}: fewer than ${count} log lines match ${pattern}: ${(await t.lines(app)).join(' | ')}`);
}

/** A TCP request from inside a task: `REACHED <what>` when the answer holds the text, else `blocked <what>`. */
const probe = (what: string, host: string, port: string, text: string): string =>
  `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${host} ${port} 2>/dev/null | grep -q ${text} && echo "REACHED ${what}" || echo "blocked ${what}"`;

// Its tasks spread over both nodes: no other file may drain one meanwhile.
holdSwarm('shared');

/**
 * Hostile app code on a swarm whose tasks join SWARM_NETWORK (config-only bridge networks with
 * inter-container communication off on every node): app B's task, on a node where app A has a
 * task, tries A's tasks by their container addresses.
 */
describeWithSwarmNetwork('Swarm tasks on SWARM_NETWORK (real swarm, hostile app code)', () => {
  let t: TestSwarm;
  const tag = process.pid.toString(36);
  const victim = `iso-a-${tag}`;
  const hostile = `iso-b-${tag}`;

  beforeAll(async () => {
    t = await testSwarm();
  }, TIMEOUT);

  afterAll(async () => {
    await t?.cleanUp();
  }, TIMEOUT);

  it("cannot reach another app's task by its container address on the same node; the host still reaches it at its published port", async () => {
    // Two tasks of A, spread: one on each node of the swarm, so B's task shares a node with one.
    const serveA = 'mkdir -p /tmp/www && echo secret-of-a > /tmp/www/index.html && echo "addr $(hostname -i) $PORT" && exec httpd -f -p "$PORT" -h /tmp/www';
    for (const num of [1, 2]) await expect(t.scheduler.start(spec(victim, 'web', num, serveA))).resolves.toBe('up');
    const addresses = (await waitForLines(t, victim, /\[web\.\d+\]: addr \S+ \d+$/, 2)).map((l) => /addr (\S+) (\d+)$/.exec(l)?.slice(1, 3).join(':') as string);
    const published = t.scheduler.endpoints(victim, 'web');
    expect(published).toHaveLength(2);
    // The host (the router's path) reaches A at its published ports.
    for (const endpoint of published) expect(await (await fetch(`http://${endpoint.host}:${endpoint.port}/`)).text()).toContain('secret-of-a');

    const hostileCode = [
      // A control: B's own server by B's own container address answers, so the probe works.
      'mkdir -p /tmp/b && echo self-of-b > /tmp/b/index.html && (httpd -f -p 8081 -h /tmp/b &)',
      'sleep 1',
      probe('self', '$(hostname -i)', '8081', 'self-of-b'),
      'for target in $TARGETS; do ' + probe('direct $target', '${target%:*}', '${target#*:}', 'secret-of-a') + '; done',
      // What the router uses: the nodes' addresses (this node's gateway too) at A's published ports.
      'gateway=$(ip route | awk \'/^default/ {print $3}\')',
      'for target in $PUBLISHED; do ' + probe('node $target', '${target%:*}', '${target#*:}', 'secret-of-a') + '; done',
      'for target in $PUBLISHED; do ' + probe('node $gateway:${target#*:}', '$gateway', '${target#*:}', 'secret-of-a') + '; done',
      'echo checks done',
      'exec sleep 600',
    ].join('; ');
    const env = { TARGETS: addresses.join(' '), PUBLISHED: published.map((e) => `${e.host}:${e.port}`).join(' ') };
    await expect(t.scheduler.start(spec(hostile, 'worker', 1, hostileCode, env))).resolves.toBe('up');
    await waitForLines(t, hostile, /\]: checks done$/, 1);
    const lines = (await t.lines(hostile)).filter((l) => /\]: (REACHED|blocked) /.test(l)).map((l) => l.replace(/^.*?\]: /, ''));
    process.stdout.write(`hostile task on SWARM_NETWORK: ${lines.join('; ')}\n`);

    const [node] = t.scheduler.placement(hostile, 'worker');
    expect(t.scheduler.placement(victim, 'web')).toContain(node);
    expect(lines).toContain('REACHED self');
    expect(lines.filter((l) => l.startsWith('blocked direct '))).toHaveLength(2);
    expect(lines.filter((l) => l.startsWith('REACHED direct '))).toEqual([]);
    if (FIREWALL) {
      // With the nodes' firewall of docs/operations.md, neither the nodes' addresses nor this
      // node's gateway lead to A: only the router's path from outside the bridge does.
      expect(lines.filter((l) => l.startsWith('blocked node '))).toHaveLength(4);
      expect(lines.filter((l) => l.startsWith('REACHED node '))).toEqual([]);
    } else {
      process.stdout.write('the nodes have no firewall (TEST_SWARM_FIREWALL unset): what B reached at the nodes is printed above, not checked\n');
    }
    // A is still served through its published ports.
    for (const endpoint of published) expect(await (await fetch(`http://${endpoint.host}:${endpoint.port}/`)).text()).toContain('secret-of-a');
  }, TIMEOUT);

  it('refuses at start-up a SWARM_NETWORK that is missing, not a swarm-scoped bridge, or lets tasks reach each other; warns without one', async () => {
    const made: string[] = [];
    const create = async (body: Record<string, unknown>): Promise<void> => {
      await t.docker.createNetwork(body as never);
      made.unshift(body.Name as string);
    };
    try {
      await create({ Name: `t${tag}-open-config`, ConfigOnly: true, IPAM: { Config: [{ Subnet: '10.82.0.0/24' }] }, Options: { 'com.docker.network.bridge.name': `t${tag}o0`.slice(0, 15) } });
      await create({ Name: `t${tag}-open`, Driver: 'bridge', Scope: 'swarm', ConfigFrom: { Network: `t${tag}-open-config` } });
      await create({ Name: `t${tag}-overlay`, Driver: 'overlay' });
      const prepared = async (network: string | null, warnings: string[] = []): Promise<void> => {
        const scheduler = new SwarmScheduler({ ...t.options, network, onWarning: (w) => warnings.push(w) });
        try {
          await scheduler.prepare();
        } finally {
          await scheduler.shutdown();
        }
      };
      await expect(prepared(`t${tag}-missing`)).rejects.toThrow(/^SWARM_NETWORK: the network t\w+-missing is not on the swarm manager/);
      await expect(prepared(`t${tag}-overlay`)).rejects.toThrow(/^SWARM_NETWORK: .* must be a bridge network of scope swarm, it is a overlay network/);
      await expect(prepared(`t${tag}-open`)).rejects.toThrow(/^SWARM_NETWORK: the config-only network t\w+-open-config lets containers reach each other/);
      const warnings: string[] = [];
      await prepared(null, warnings);
      expect(warnings).toEqual([expect.stringMatching(/^SWARM_NETWORK is not set: app tasks .* can reach each other/)]);
      await expect(prepared(t.options.network ?? '')).resolves.toBeUndefined();
    } finally {
      for (const name of made) await t.docker.getNetwork(name).remove().catch(() => undefined);
    }
  }, TIMEOUT);
});
