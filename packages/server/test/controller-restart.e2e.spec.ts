import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describeWithSandbox, testUidRange } from '../../scheduler-process/test/support/sandbox';
import { call } from './processes/http';
import { buildWorkspace, type WorkspaceBuild } from './processes/workspace-build';
import { inlineNode } from './support';
import { answered, failed, killRecordedGroups, recordedGroups, restartUnderLoad, type Load } from './support/restart';

/*
 * A controller restarted under load behind a router process of its own, with the process
 * scheduler: its apps' processes replaced (unconfined) or held in their sandbox while no
 * controller runs. The Docker engine's case is in controller-restart-docker.e2e.spec.ts.
 */

jest.setTimeout(300_000);

/**
 * The app of the process scheduler's case: answers its instance id (one per process), prints
 * a line every 200 requests and one when told to stop, and on SIGTERM stops accepting and
 * finishes what it is answering, as a well-behaved web process does. Its lines are printed
 * while no controller reads its output too: it must neither die of that nor lose them.
 */
const APP_JS = `
const http = require('http');
const instance = require('crypto').randomUUID();
let answered = 0;
const server = http.createServer((req, res) => {
  if (++answered % 200 === 0) console.log(instance + ' answered ' + answered);
  res.end(instance);
});
server.keepAliveTimeout = 30000;
server.listen(Number(process.env.PORT));
process.on('SIGTERM', () => {
  console.log('stopping ' + instance + ' after ' + answered);
  server.close(() => process.exit(0));
});
`;

/**
 * No request failed; the process of the first controller answered before the restart and its
 * replacement after; what the first process printed after its controller left reached the
 * app's log, up to its last line.
 */
function expectReplacedWithoutLoss(load: Load, bodiesBefore: Set<string>, log: string): void {
  expect(load.failures).toEqual([]);
  expect(failed(load)).toBe(0);
  expect(answered(load)).toBeGreaterThan(1000);
  expect(bodiesBefore.size).toBe(1);
  expect(load.bodies.size).toBe(2);
  const [first] = [...bodiesBefore];
  expect(log).toMatch(new RegExp(`\\[web\\.1\\]: stopping ${first} after [0-9]+\\n`));
}


describe('a controller restart behind a router process of its own (ROUTER_SOCKET)', () => {
  let build: WorkspaceBuild;
  let dataDir: string;

  beforeAll(async () => {
    build = await buildWorkspace();
  });

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-restart-'));
  });

  afterEach(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('with the process scheduler: no request fails, and the apps\' processes are replaced by the new controller\'s', async () => {
    const env = {
      SCHEDULER: 'process',
      // The sandbox is another file's subject (sandbox.e2e): here the processes run unconfined.
      UNSAFE_SINGLE_USER_DEV: '1',
      PROCESS_PORT_RANGE: '56000-56999',
      HEALTHCHECK_TIMEOUT: '30',
      PROCESS_STOP_TIMEOUT_SECONDS: '5',
      DATA_DIR: dataDir,
      ROUTER_SOCKET: join(dataDir, 'router.sock'),
    };
    const { load, bodiesBefore, log } = await restartUnderLoad(
      build,
      {
        env,
        deploy: async ({ url, token }, app) => {
          const built = await call(url, 'POST', `/v1/apps/${app}/builds/`, token, { image: 'example/restart:v1', procfile: { web: inlineNode(APP_JS) } });
          expect(built.status).toBe(201);
        },
      },
      'process scheduler',
    );
    expectReplacedWithoutLoss(load, bodiesBefore, log);
  });
});

/**
 * A hostile worker of the sandboxed case, held with the app's web process while no controller
 * runs: it keeps trying to reach the router's control socket (ROUTER_SOCKET, outside its
 * sandbox), to list the keeper's output files (its own app's and a neighbour's), and to connect
 * to a port of this machine (CANARY_PORT, which the apps' firewall chain must keep refusing
 * while no controller runs and while the next one installs it again). It prints `GAINED` on any
 * success, and how often it was refused, also while no controller reads its output.
 */
const HOSTILE_JS = `
const net = require('net');
const fs = require('fs');
const instance = require('crypto').randomUUID();
const refused = { socket: 0, output: 0, port: 0 };
const gained = (what) => console.log('GAINED ' + what);
setInterval(() => {
  const control = net.connect(process.env.PROBE_SOCKET);
  control.on('connect', () => { gained('the control socket'); control.destroy(); });
  control.on('error', () => refused.socket++);
  try { gained('the output files: ' + fs.readdirSync(process.env.PROBE_OUTPUT).join(' ')); } catch { refused.output++; }
}, 20);
const port = () => {
  const socket = net.connect(Number(process.env.CANARY_PORT), '127.0.0.1');
  socket.on('connect', () => { gained('port ' + process.env.CANARY_PORT); socket.destroy(); setTimeout(port, 2); });
  socket.on('error', () => { refused.port++; setTimeout(port, 2); });
};
port();
setInterval(() => console.log(instance + ' refused ' + JSON.stringify(refused)), 500);
process.on('SIGTERM', () => { console.log('stopping ' + instance + ' refused ' + JSON.stringify(refused)); process.exit(0); });
`;

/**
 * The neighbour app's web process in the sandboxed case: it serves as APP_JS does, and keeps
 * trying to listen on the controller's API port (PROBE_API_PORT), which it can take only while
 * no controller runs; the next controller must still start.
 */
const SQUATTER_JS = `${APP_JS}
const squat = () => {
  const server = require('net').createServer();
  server.once('error', () => setTimeout(squat, 20));
  server.listen(Number(process.env.PROBE_API_PORT), '127.0.0.1', () => console.log('took the API port'));
};
squat();
`;

/** A port nothing listens on right now. */
function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Takes away what a controller that left its apps to the next one leaves of the sandbox: the firewall chains and the cgroups' directories. */
function removeSandboxLeftovers(from: number): void {
  const quiet = (tool: string, args: string[]): boolean => {
    try {
      execFileSync(tool, ['-w', '10', ...args], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };
  for (const tool of ['iptables', 'ip6tables']) {
    const rules = execFileSync(tool, ['-w', '10', '-S', 'OUTPUT'], { encoding: 'utf8' }).split('\n');
    for (const rule of rules.filter((line) => line.includes(`SVC_APPS_${from}`) || line.includes(`SVC_BUILD_${from}`))) quiet(tool, ['-D', ...rule.split(' ').slice(1)]);
    for (const chain of [`SVC_APPS_${from}`, `SVC_BUILD_${from}`]) if (quiet(tool, ['-F', chain])) quiet(tool, ['-X', chain]);
  }
  for (const controller of ['memory', 'cpu', 'pids', 'unified']) {
    const dir = join('/sys/fs/cgroup', controller, 'svc', String(from));
    if (!existsSync(dir)) continue;
    try {
      execFileSync('find', [dir, '-depth', '-type', 'd', '-exec', 'rmdir', '{}', ';'], { stdio: 'ignore' });
    } catch {
      // A directory still in use stays; the test's assertions say so.
    }
  }
}

describeWithSandbox('a controller restart behind a router process of its own, with the process scheduler\'s sandbox on', () => {
  let build: WorkspaceBuild;
  let dataDir: string;
  let canary: Server;
  let canaryPort: number;
  let canaryConnections = 0;
  const uids = testUidRange();

  beforeAll(async () => {
    build = await buildWorkspace();
    canary = createServer((socket) => {
      canaryConnections++;
      socket.destroy();
    });
    canaryPort = await new Promise<number>((resolve) => canary.listen(0, '127.0.0.1', () => resolve((canary.address() as { port: number }).port)));
    dataDir = await mkdtemp(join(tmpdir(), 'svc-restart-sandbox-'));
  });

  afterAll(async () => {
    canary?.close();
    if (dataDir) {
      await killRecordedGroups(dataDir);
      await rm(dataDir, { recursive: true, force: true });
    }
    removeSandboxLeftovers(uids.from);
  });

  it('no request fails, the held processes stay confined and gain nothing while no controller runs, and what they printed reaches the log', async () => {
    const socket = join(dataDir, 'router.sock');
    // The API's port stays the same across the restart, as in production: the neighbour squats it meanwhile.
    const apiPort = await freePort();
    const env = {
      PORT: String(apiPort),
      SCHEDULER: 'process',
      SANDBOX_UID_RANGE: `${uids.from}-${uids.to}`,
      PROCESS_PORT_RANGE: '55000-55999',
      HEALTHCHECK_TIMEOUT: '30',
      PROCESS_STOP_TIMEOUT_SECONDS: '5',
      DATA_DIR: dataDir,
      ROUTER_SOCKET: socket,
    };
    const neighbour = `nb-${process.pid.toString(36)}`;
    let held: Awaited<ReturnType<typeof recordedGroups>> = [];
    let heldAlive: boolean[] = [];
    let uidsBefore = '';
    let socketMode = 0;
    let afterRestart: { heldAlive: boolean[]; cgroupsLeft: string[]; uids: string; chain: string; neighbourLog: string } | null = null;
    const { load, bodiesBefore, log } = await restartUnderLoad(
      build,
      {
        env,
        deploy: async ({ url, token }, app) => {
          // A neighbour app: the keeper holds its output too while no controller runs.
          expect((await call(url, 'POST', '/v1/apps/', token, { id: neighbour })).status).toBe(201);
          expect((await call(url, 'POST', `/v1/apps/${neighbour}/config/`, token, { values: { PROBE_API_PORT: String(apiPort) } })).status).toBe(201);
          expect((await call(url, 'POST', `/v1/apps/${neighbour}/builds/`, token, { image: 'example/neighbour:v1', procfile: { web: inlineNode(SQUATTER_JS) } })).status).toBe(201);
          const probes = { PROBE_SOCKET: socket, PROBE_OUTPUT: join(dataDir, 'output'), CANARY_PORT: String(canaryPort) };
          expect((await call(url, 'POST', `/v1/apps/${app}/config/`, token, { values: probes })).status).toBe(201);
          const built = await call(url, 'POST', `/v1/apps/${app}/builds/`, token, { image: 'example/restart:v1', procfile: { web: inlineNode(APP_JS), worker: inlineNode(HOSTILE_JS) } });
          expect(built.status).toBe(201);
          expect((await call(url, 'POST', `/v1/apps/${app}/scale/`, token, { web: 1, worker: 1 })).status).toBe(204);
        },
        whileDown: async () => {
          held = await recordedGroups(dataDir);
          heldAlive = held.map((record) => record.sandbox !== undefined && existsSync(`/proc/${record.sandbox.init}`));
          uidsBefore = await readFile(join(dataDir, 'sandbox', 'uids.json'), 'utf8');
          socketMode = (await stat(socket)).mode & 0o777;
        },
        afterRestart: async ({ url, token }) => {
          afterRestart = {
            heldAlive: held.map((record) => record.sandbox !== undefined && existsSync(`/proc/${record.sandbox.init}`)),
            cgroupsLeft: held.flatMap((record) => (record.cgroups ?? []).filter((dir) => existsSync(dir))),
            uids: await readFile(join(dataDir, 'sandbox', 'uids.json'), 'utf8'),
            chain: execFileSync('iptables', ['-w', '10', '-S', `SVC_APPS_${uids.from}`], { encoding: 'utf8' }),
            neighbourLog: (await call(url, 'GET', `/v1/apps/${neighbour}/logs/?log_lines=10000`, token)).body as string,
          };
          expect((await call(url, 'DELETE', `/v1/apps/${neighbour}/`, token)).status).toBeLessThan(300);
        },
      },
      'process scheduler, sandboxed',
    );
    expectReplacedWithoutLoss(load, bodiesBefore, log);

    // While no controller ran: the web and worker sandboxes of the app and the neighbour's web
    // were recorded with their namespace and cgroup, and still ran (they no longer die with the controller).
    const app = `restart-${process.pid.toString(36)}`;
    expect(held.map((record) => `${record.app} ${record.name}`).sort()).toEqual([`${neighbour} web.1`, `${app} web.1`, `${app} worker.1`]);
    expect(held.every((record) => record.sandbox !== undefined && (record.cgroups?.length ?? 0) > 0)).toBe(true);
    expect(heldAlive).toEqual(held.map(() => true));
    expect(socketMode).toBe(0o600);
    // Once their replacements served: stopped, their cgroups removed, every app kept its user, the firewall chain rebuilt.
    const after = afterRestart as unknown as { heldAlive: boolean[]; cgroupsLeft: string[]; uids: string; chain: string; neighbourLog: string };
    expect(after.heldAlive).toEqual(held.map(() => false));
    expect(after.cgroupsLeft).toEqual([]);
    expect(JSON.parse(after.uids)).toEqual(JSON.parse(uidsBefore));
    expect(after.chain).toMatch(/REJECT/);
    // The neighbour took the API's port while no controller ran; the new controller stopped it and started anyway (on that port).
    expect(after.neighbourLog).toMatch(/\[web\.1\]: took the API port\n/);

    // The hostile worker, held while no controller ran, was refused every time and reached nothing.
    expect(log).not.toMatch(/GAINED/);
    expect(canaryConnections).toBe(0);
    const stopping = new RegExp(`\\[worker\\.1\\]: stopping (\\S+) refused (\\{.*\\})\\n`).exec(log);
    expect(stopping).not.toBeNull();
    const [, worker, counts] = stopping as RegExpExecArray;
    const refused = JSON.parse(counts as string) as { socket: number; output: number; port: number };
    process.stdout.write(`held hostile worker refused: control socket ${refused.socket}, output files ${refused.output}, a port of this machine ${refused.port}; canary connections ${canaryConnections}\n`);
    expect(refused.socket).toBeGreaterThan(0);
    expect(refused.output).toBeGreaterThan(0);
    expect(refused.port).toBeGreaterThan(0);
    // It printed while no controller read its output, and those lines reached the log too.
    expect(log.split('\n').filter((line) => line.includes(`[worker.1]: ${worker as string} refused`)).length).toBeGreaterThan(2);
  });
});
