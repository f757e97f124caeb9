import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import { connect, createServer } from 'node:net';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { loadConfig, startServer, type RunningServer } from '../src';
import { describeWithSandbox } from '../../scheduler-process/test/support/sandbox';
import { ApiClient, inlineNode, signUp, testUidRange, type Session } from './support';

jest.setTimeout(180_000);

/** A port nothing listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(typeof address === 'object' && address !== null ? address.port : 0));
    });
  });
}

/** A hostile web process: serves its PORT, and keeps trying to take the ports in TARGETS, saying so when it gets one. */
const PORT_THIEF = `
const net = require('net');
require('http').createServer((req, res) => res.end('app')).listen(Number(process.env.PORT));
const targets = (process.env.TARGETS || '').split(',').map(Number);
setInterval(() => {
  for (const port of targets) for (const host of ['127.0.0.1', '0.0.0.0']) {
    const server = net.createServer();
    server.once('error', () => undefined);
    server.listen(port, host, () => console.log('took port ' + port + ' on ' + host));
  }
}, 20);
`;

/** A squatter: serves its PORT, and listens on every address form of each port in TARGETS, printing what it binds and receives. */
const SQUATTER = `
const net = require('net');
require('http').createServer((req, res) => res.end('app')).listen(Number(process.env.PORT));
for (const port of (process.env.TARGETS || '').split(',').map(Number)) for (const host of ['127.0.0.1', '127.0.0.2', '::1', '::', '0.0.0.0']) {
  const server = net.createServer((c) => { c.on('data', (d) => console.log('STOLEN ' + d)); c.on('error', () => undefined); c.write('squatter'); });
  server.on('error', () => undefined);
  server.listen({ port, host, ipv6Only: host === '::' }, () => console.log('bound ' + host + ' ' + port));
}
`;

/** Sends a login to host:port over TCP and resolves with the answer (or the error, or `timeout`). */
function sendLogin(host: string, port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host, port });
    let answer = '';
    const finish = (text: string): void => {
      socket.destroy();
      resolve(text);
    };
    socket.setTimeout(1500, () => finish(answer || 'timeout'));
    socket.on('connect', () => socket.write('POST /v1/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 17\r\n\r\npassword=hunter2\n'));
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('end', () => finish(answer));
    socket.on('error', (error: NodeJS.ErrnoException) => finish(answer || (error.code ?? 'error')));
  });
}

/** A command that connects to 127.0.0.1:<port> and prints `connected` or the error code. */
/**
 * The hostile app's process: it only listens on its PORT (a routed `cmd` is up once it
 * accepts connections), and it is not `node`, so that the process count below sees none.
 */
const LISTENER = `exec perl -MIO::Socket::INET -e '$s = IO::Socket::INET->new(LocalAddr => "127.0.0.1", LocalPort => $ENV{PORT}, Listen => 16, ReuseAddr => 1) or die "listen: $!"; while (1) { my $c = $s->accept; close $c if $c }'`;

const connectTo = (port: number): string =>
  `node -e "const s = require('net').connect(${port}, '127.0.0.1'); s.on('connect', () => { console.log('connected'); process.exit(0); }); s.on('error', (e) => { console.log(e.code); process.exit(1); })"`;

/** What the router answers for `<app>.localhost`. */
function viaRouter(port: number, app: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve) => {
    const req = request({ host: '127.0.0.1', port, path: '/', headers: { Host: `${app}.localhost` }, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', () => resolve({ status: 0, body: '' }));
    req.end();
  });
}

/** Whether a live process has the real uid. */
async function uidHasProcesses(uid: number): Promise<boolean> {
  for (const name of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const status = await readFile(`/proc/${name}/status`, 'utf8');
      if (!/^State:\s+Z/m.test(status) && Number(/^Uid:\s+([0-9]+)/m.exec(status)?.[1]) === uid) return true;
    } catch {
      // Gone meanwhile.
    }
  }
  return false;
}

describeWithSandbox('a hostile app owner with SCHEDULER=process and no container engine', () => {
  let dataDir: string;
  let server: RunningServer | undefined;
  let apiPort: number;
  let routerPort: number;
  let alice: Session;
  let mallory: Session;
  const uidRange = testUidRange();

  const start = async (env: Record<string, string> = {}): Promise<RunningServer> => {
    const config = loadConfig({
      SCHEDULER: 'process',
      PROCESS_PORT_RANGE: '57000-57999',
      SANDBOX_UID_RANGE: uidRange,
      PROCESS_STOP_TIMEOUT_SECONDS: '3',
      GIT_SSH_PORT: 'off',
      ROUTER_PORT: String(routerPort),
      LOG_LEVEL: 'silent',
      HOST: '127.0.0.1',
      PORT: String(apiPort),
      DATA_DIR: dataDir,
      ...env,
    });
    server = await startServer(config, pino({ level: 'silent' }));
    return server;
  };
  const run = async (session: Session, app: string, command: string): Promise<[number, string]> => {
    const res = await session.api.post<[number, string]>(`/v1/apps/${app}/run/`, { command });
    expect(res.status).toBe(200);
    return res.body;
  };
  const sessions = (running: RunningServer): void => {
    alice = { ...alice, api: new ApiClient(running.url, alice.token) };
    mallory = { ...mallory, api: new ApiClient(running.url, mallory.token) };
  };

  beforeAll(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-sandbox-server-'));
    apiPort = await freePort();
    routerPort = await freePort();
    const running = await start();
    alice = await signUp(new ApiClient(running.url), 'alice');
    mallory = await signUp(new ApiClient(running.url), 'mallory');
    expect((await alice.api.post('/v1/apps/', { id: 'victim' })).status).toBe(201);
    expect((await mallory.api.post('/v1/apps/', { id: 'hostile' })).status).toBe(201);
    const secret = await alice.api.post('/v1/apps/victim/config/', { values: { VICTIM_SECRET: 'victim-config-secret' } });
    expect(secret.status).toBe(201);
    const web = inlineNode("require('http').createServer((q, r) => r.end('victim ' + process.getuid())).listen(Number(process.env.PORT))");
    expect((await alice.api.post('/v1/apps/victim/builds/', { image: 'example/victim:v1', procfile: { web } })).status).toBe(201);
    expect((await mallory.api.post('/v1/apps/hostile/builds/', { image: 'example/hostile:v1', procfile: { cmd: LISTENER } })).status).toBe(201);
  });

  afterAll(async () => {
    await server?.close();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('runs each app as a user of its own, never root, and /readyz has nothing to warn about', async () => {
    const [, hostile] = await run(mallory, 'hostile', 'id -u');
    const [, victim] = await run(alice, 'victim', 'id -u');

    expect(Number(hostile)).toBeGreaterThanOrEqual(Number(uidRange.split('-')[0]));
    expect(Number(hostile)).not.toBe(0);
    expect(Number(victim)).not.toBe(Number(hostile));
    expect((await viaRouter(routerPort, 'victim')).body).toBe(`victim ${victim.trim()}`);
    const ready = await mallory.api.get('/readyz');
    expect({ status: ready.status, body: ready.body }).toEqual({ status: 200, body: { status: 'ready' } });
    expect(server?.sandbox).toEqual({ mode: 'on', problem: null });
  });

  it('keeps DATA_DIR, other apps’ processes and environments, the database and the API out of reach', async () => {
    const [, files] = await run(mallory, 'hostile', `cat ${join(dataDir, 'secret_key')} || echo "no secret"; ls ${dataDir} || echo "no data dir"; ls ${join(dataDir, 'apps')} || echo "no apps"`);
    const [, processes] = await run(mallory, 'hostile', 'ps -e -o comm= | grep -cx node; cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n" | grep -c VICTIM_SECRET');
    const [, database] = await run(mallory, 'hostile', connectTo(5432));
    const [, api] = await run(mallory, 'hostile', connectTo(apiPort));
    const [, router] = await run(mallory, 'hostile', connectTo(routerPort));

    expect(files).toContain('no secret');
    expect(files).toContain('no data dir');
    expect(files).toContain('no apps');
    expect(files).not.toMatch(/[0-9a-f]{32}/);
    // Only its own `node` would count (there is none): the victim's web process is out of sight, and so is its config.
    expect(processes).toBe('0\n0\n');
    expect(database.trim()).toBe('ECONNREFUSED');
    expect(api.trim()).toBe('ECONNREFUSED');
    expect(router.trim()).toBe('connected');
  });

  it('kills what an app detached (setsid, double fork) when the app is deleted', async () => {
    expect((await mallory.api.post('/v1/apps/', { id: 'detacher' })).status).toBe(201);
    const web = `setsid sh -c 'exec sleep 4001' & (sleep 4002 &); ${inlineNode("require('http').createServer((q, r) => r.end('up')).listen(Number(process.env.PORT))")}`;
    expect((await mallory.api.post('/v1/apps/detacher/builds/', { image: 'example/detacher:v1', procfile: { web } })).status).toBe(201);
    const [, uid] = await run(mallory, 'detacher', 'setsid sh -c "sleep 4004" & id -u');
    expect(await uidHasProcesses(Number(uid))).toBe(true);

    expect((await mallory.api.delete('/v1/apps/detacher/')).status).toBe(204);

    expect(await uidHasProcesses(Number(uid))).toBe(false);
  });

  it('never lets an app answer on the API or router port at another address ([::1], [::], 127.0.0.2): a client on localhost never reaches it', async () => {
    expect((await mallory.api.post('/v1/apps/', { id: 'squatter' })).status).toBe(201);
    expect((await mallory.api.post('/v1/apps/squatter/config/', { values: { TARGETS: `${apiPort},${routerPort}` } })).status).toBe(201);
    expect((await mallory.api.post('/v1/apps/squatter/builds/', { image: 'example/squatter:v1', procfile: { web: inlineNode(SQUATTER) } })).status).toBe(201);
    const logText = async (): Promise<string> => (await mallory.api.get('/v1/apps/squatter/logs/', { headers: { Accept: 'text/plain' } })).text;
    const deadline = Date.now() + 10_000;
    while (!(await logText()).includes(`bound ::1 ${apiPort}`) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 200));
    // It did bind the loopback forms the controller does not listen on.
    expect(await logText()).toContain(`bound ::1 ${apiPort}`);

    const answers = await Promise.all([apiPort, routerPort].flatMap((port) => ['localhost', '::1', '127.0.0.2', '127.0.0.1'].map(async (host) => `${host} ${port}: ${await sendLogin(host, port)}`)));

    for (const answer of answers) expect(answer).not.toContain('squatter');
    // The controller still answers where it listens.
    expect(answers.find((a) => a.startsWith(`127.0.0.1 ${apiPort}:`))).toContain('HTTP/1.1');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(await logText()).not.toContain('STOLEN');
    expect(await logText()).not.toContain('hunter2');
    expect((await mallory.api.delete('/v1/apps/squatter/')).status).toBe(204);
  });

  it('kills an app over its memory limit and shows its container crashed, with the reason in its log', async () => {
    expect((await mallory.api.post('/v1/apps/', { id: 'glutton' })).status).toBe(201);
    expect((await mallory.api.post('/v1/apps/glutton/config/', { memory: { web: '64M' } })).status).toBe(201);
    const web = inlineNode("require('http').createServer((q, r) => r.end('up')).listen(Number(process.env.PORT)); setTimeout(() => { const hog = []; for (let i = 0; i < 10; i++) hog.push(Buffer.alloc(20 * 1000 * 1000, 1)); }, 1500)");
    expect((await mallory.api.post('/v1/apps/glutton/builds/', { image: 'example/glutton:v1', procfile: { web } })).status).toBe(201);

    const reason = 'crashed: it was killed for using more than its memory limit of 64.0 MiB (out of memory)';
    let states: string[] = [];
    let logs = '';
    const deadline = Date.now() + 30_000;
    while (Date.now() < deadline && !(states.includes('crashed') && logs.includes(reason))) {
      states = [...states, ...(await mallory.api.get<{ results: Array<{ state: string }> }>('/v1/apps/glutton/containers/')).body.results.map((c) => c.state)];
      logs = (await mallory.api.get('/v1/apps/glutton/logs/', { headers: { Accept: 'text/plain' } })).text;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(states).toContain('crashed');
    expect(logs).toContain(reason);
    expect((await mallory.api.delete('/v1/apps/glutton/')).status).toBe(204);
  });

  it('never lets an app take the API or router port across a controller restart', async () => {
    const taken = await mallory.api.post('/v1/apps/hostile/config/', { values: { TARGETS: `${apiPort},${routerPort}` } });
    expect(taken.status).toBe(201);
    expect((await mallory.api.post('/v1/apps/hostile/builds/', { image: 'example/hostile:v2', procfile: { web: inlineNode(PORT_THIEF) } })).status).toBe(201);
    expect((await mallory.api.post('/v1/apps/hostile/scale/', { web: 1, cmd: 0 })).status).toBe(204);
    await new Promise((resolve) => setTimeout(resolve, 500));

    await server?.close();
    const running = await start();
    sessions(running);
    await new Promise((resolve) => setTimeout(resolve, 1000));

    expect(running.port).toBe(apiPort);
    expect(running.routerPort).toBe(routerPort);
    const healthz = await mallory.api.get('/healthz');
    expect(healthz.body).toEqual({ status: 'ok' });
    const containers = await mallory.api.get<{ results: Array<{ state: string }> }>('/v1/apps/hostile/containers/');
    expect(containers.body.results.map((c) => c.state)).toEqual(['up']);
    expect((await viaRouter(routerPort, 'hostile')).body).toBe('app');
    const logs = await mallory.api.get('/v1/apps/hostile/logs/', { headers: { Accept: 'text/plain' } });
    expect(logs.text).not.toContain('took port');
  });

  it('runs no app code when the sandbox cannot be set up: 503 with the reason and the fix, and /readyz says so', async () => {
    await server?.close();
    const running = await start({ SANDBOX_BWRAP: '/nonexistent/bwrap' });
    sessions(running);

    const ready = await mallory.api.get('/readyz');
    const run = await mallory.api.post('/v1/apps/hostile/run/', { command: 'id -u' });
    const scale = await mallory.api.post('/v1/apps/hostile/scale/', { web: 2 });
    const containers = await mallory.api.get<{ results: Array<{ state: string }> }>('/v1/apps/hostile/containers/');

    const problem = 'apps cannot run: the sandbox is unavailable: bubblewrap (bwrap) is not installed. Run the controller as root on Linux with bubblewrap';
    // Still 200 (the database answers, SPEC.md), but degraded: no app can run, and why.
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'degraded', reasons: [expect.stringContaining(problem)], sandbox: 'unavailable', warning: expect.stringContaining(problem) });
    expect(ready.body).toEqual(expect.objectContaining({ reasons: [expect.stringContaining('UNSAFE_SINGLE_USER_DEV=1')] }));
    expect(ready.body).toEqual(expect.objectContaining({ reasons: [expect.stringContaining('SCHEDULER=docker')] }));
    expect(run.status).toBe(503);
    expect(JSON.stringify(run.body)).toContain(problem);
    expect(scale.status).toBe(503);
    // Restored containers could not start: recorded error, and nothing of the app runs.
    expect(containers.body.results.map((c) => c.state)).toEqual(['error']);
    expect((await viaRouter(routerPort, 'hostile')).status).toBe(503);
  });

  it('reports an unconfined controller in /readyz when UNSAFE_SINGLE_USER_DEV is set', async () => {
    await server?.close();
    const running = await start({ UNSAFE_SINGLE_USER_DEV: '1' });
    sessions(running);

    const ready = await mallory.api.get('/readyz');

    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ready', sandbox: 'off', warning: expect.stringContaining('UNSAFE_SINGLE_USER_DEV is set: apps run unconfined') });
    const [, uid] = await run(mallory, 'hostile', 'id -u');
    expect(uid).toBe(`${process.getuid?.()}\n`);
  });
});
