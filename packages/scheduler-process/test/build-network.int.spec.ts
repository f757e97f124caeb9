import { createServer, type Server } from 'node:net';
import { aRun, aSpec } from './support/fixtures';
import { fixtureBuildpack } from './support/buildpacks';
import { CompileFixture } from './support/compile';
import { describeWithSandbox } from './support/sandbox';

jest.setTimeout(120_000);

/** The npm registry's address on this machine's network (registry.npmjs.org resolves to it). */
const REGISTRY = '203.0.113.80';
/** This machine's own address besides loopback. */
const HOST_ADDRESS = '192.0.2.2';

/**
 * Hostile build code: connects to each `[host, port]` of ENV_DIR/TARGETS and prints
 * `<host> <port> connected` or the error; then resolves the registry's name and fetches a
 * package document over HTTPS with the host's certificate authorities.
 */
const PROBE = `
const fs = require('fs');
const net = require('net');
const https = require('https');
const dns = require('dns');
const targets = JSON.parse(fs.readFileSync(process.argv[2] + '/TARGETS', 'utf8'));
const connect = ([host, port]) => new Promise((resolve) => {
  const socket = net.connect({ host, port });
  socket.setTimeout(4000, () => { socket.destroy(); resolve('timeout'); });
  socket.on('connect', () => { socket.destroy(); resolve('connected'); });
  socket.on('error', (error) => resolve(error.code));
});
(async () => {
  for (const target of targets) console.log(target[0] + ' ' + target[1] + ' ' + (await connect(target)));
  if (process.argv[3] !== 'registry') return;
  dns.lookup('registry.npmjs.org', (error, address) => console.log('dns ' + (error ? error.code : address)));
  https.get('https://registry.npmjs.org/is-number', (res) => { console.log('https ' + res.statusCode); res.resume(); })
    .on('error', (error) => console.log('https ' + error.code));
})();
`;

function listen(host: string): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.end('secret service\n');
    });
    server.listen(0, host, () => {
      const address = server.address();
      resolve({ server, port: typeof address === 'object' && address !== null ? address.port : 0 });
    });
  });
}

describeWithSandbox('build network (hostile build steps, real iptables rules)', () => {
  const t = new CompileFixture();
  /** Stands for the API and the git server: listens on every address, IPv4 and IPv6. */
  let api: { server: Server; port: number };
  /** Stands for the router: the one local port apps may reach, and builds may not. */
  let router: { server: Server; port: number };

  beforeAll(async () => {
    api = await listen('::');
    router = await listen('::');
  });

  afterAll(async () => {
    api.server.close();
    router.server.close();
  });

  afterEach(async () => {
    await t.tearDown();
  });

  /** Runs the probe as `app`'s compile step and resolves with its lines. */
  const probeInBuild = async (app: string, targets: Array<[string, number]>, extra = ''): Promise<string[]> => {
    const buildpack = await fixtureBuildpack('probe', { compile: `exec node "$(dirname "$0")/../probe.js" "$3" ${extra}`, files: { 'probe.js': PROBE } });
    const session = await t.compiler.open(await t.checkout(app, { 'a.txt': 'a' }, { TARGETS: JSON.stringify(targets) }));
    const lines: string[] = [];
    await session.compile(buildpack, (line) => lines.push(line));
    await session.finish(() => undefined);
    return lines;
  };

  it("reaches the registry (DNS through the host's resolver, HTTPS with the host's CAs) but nothing of this machine, other apps or private ranges", async () => {
    await t.setUp({}, [router.port]);
    // Another app's process, listening on this machine.
    const web = aSpec({ app: 'other', command: `exec node -e "require('http').createServer((q, r) => r.end('other')).listen(process.env.PORT)"` });
    await t.scheduler.start(web);
    const otherPort = t.scheduler.endpoints('other', 'web')[0]?.port as number;
    expect(otherPort).toBeGreaterThan(0);

    const blocked: Array<[string, number]> = [
      ['127.0.0.1', 5432],
      [HOST_ADDRESS, 5432],
      ['127.0.0.1', api.port],
      ['::1', api.port],
      ['127.0.0.2', api.port],
      ['::', api.port],
      ['0.0.0.0', api.port],
      [HOST_ADDRESS, api.port],
      ['fd00::2', api.port],
      ['127.0.0.1', router.port],
      [HOST_ADDRESS, router.port],
      ['127.0.0.1', otherPort],
      ['::1', otherPort],
      ['10.255.255.53', 80],
      ['169.254.169.254', 80],
      ['100.64.0.1', 80],
      ['172.17.0.1', 80],
      ['192.168.0.1', 80],
    ];
    const lines = await probeInBuild('myapp', [[REGISTRY, 443], ...blocked], 'registry');

    expect(lines).toContain(`${REGISTRY} 443 connected`);
    expect(lines).toContain(`dns ${REGISTRY}`);
    expect(lines).toContain('https 200');
    for (const [host, port] of blocked) {
      const line = lines.find((l) => l.startsWith(`${host} ${port} `));
      expect(line).toMatch(/ (ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|EACCES|EPERM)$/);
    }

    // The apps' own rules are unchanged: at run time the app reaches the router and the
    // internet, and still nothing else of this machine.
    const targets: Array<[string, number]> = [['127.0.0.1', router.port], [REGISTRY, 443], ['127.0.0.1', api.port]];
    const files = { 'probe.js': PROBE, 'targets/TARGETS': JSON.stringify(targets) };
    const runtime = await t.scheduler.run(aRun('node probe.js /app/targets', { app: 'myapp', workdir: (await t.checkout('myapp', files)).directory }));
    expect(runtime.output).toBe(`127.0.0.1 ${router.port} connected\n${REGISTRY} 443 connected\n127.0.0.1 ${api.port} ECONNREFUSED\n`);
  });

  it("reaches the operator's mirror on this machine (BUILD_NETWORK_ALLOW: its address and port), and still no other port or address of it", async () => {
    const mirror = await listen('::');
    try {
      await t.setUp({}, [router.port], 256, [{ cidr: `${HOST_ADDRESS}/32`, port: mirror.port }]);
      const lines = await probeInBuild('myapp', [
        [HOST_ADDRESS, mirror.port],
        [HOST_ADDRESS, api.port],
        ['127.0.0.1', mirror.port],
        ['192.168.0.1', 80],
      ]);
      expect(lines).toEqual([
        `${HOST_ADDRESS} ${mirror.port} connected`,
        expect.stringMatching(new RegExp(`^${HOST_ADDRESS} ${api.port} (ECONNREFUSED|EACCES|EPERM)$`)),
        expect.stringMatching(new RegExp(`^127\\.0\\.0\\.1 ${mirror.port} (ECONNREFUSED|EACCES|EPERM)$`)),
        expect.stringMatching(/^192\.168\.0\.1 80 (ECONNREFUSED|EHOSTUNREACH|ENETUNREACH|EACCES|EPERM)$/),
      ]);
      // An app at run time is not a build: the mirror stays out of its reach.
      const files = { 'probe.js': PROBE, 'targets/TARGETS': JSON.stringify([[HOST_ADDRESS, mirror.port]]) };
      const runtime = await t.scheduler.run(aRun('node probe.js /app/targets', { app: 'myapp', workdir: (await t.checkout('myapp', files)).directory }));
      expect(runtime.output).toMatch(new RegExp(`^${HOST_ADDRESS} ${mirror.port} (ECONNREFUSED|EACCES|EPERM)\n$`));
    } finally {
      mirror.server.close();
    }
  });

  it("cannot read another app's checkout or cache, nor the data directory", async () => {
    await t.setUp();
    const victim = await t.checkout('victim', { 'secret.txt': 'victim secret' });
    const own = await fixtureBuildpack('own', { compile: 'echo cached > "$2/secret.txt"' });
    const session = await t.compiler.open(victim);
    await session.compile(own, () => undefined);
    await session.finish(() => undefined);

    const prying = await fixtureBuildpack('prying', {
      compile: `for f in ${victim.directory}/secret.txt ${t.cacheDir('victim')}/secret.txt ${t.dataDir}/sandbox/uids.json; do cat "$f" 2>&1 || true; done
ls / ; cat /proc/*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c SECRET || true`,
    });
    const attacker = await t.compiler.open(await t.checkout('attacker', { 'a.txt': 'a' }));
    const lines: string[] = [];
    await attacker.compile(prying, (line) => lines.push(line));
    await attacker.finish(() => undefined);
    expect(lines.join('\n')).not.toMatch(/victim secret|cached/);
    // No uid of uids.json; the paths the refusals name hold random ids, which may have digits in a row.
    expect(lines.filter((line) => !/No such file or directory/.test(line)).join('\n')).not.toMatch(/[0-9]{6}/);
    expect(lines.filter((line) => /No such file or directory/.test(line))).toHaveLength(3);
    expect(lines).toContain('0');
  });
});
