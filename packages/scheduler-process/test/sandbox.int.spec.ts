import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryLogStore } from '@svc/core/testing';
import { APP_MOUNT, ProcessScheduler, type ProcessSchedulerOptions } from '@svc/scheduler-process';
import { aRun, aSpec, eventually, fetchText } from './support/fixtures';
import { describeWithSandbox, testUidRange } from './support/sandbox';

jest.setTimeout(90_000);

const PORTS = { from: 45000, to: 45999 };
const execFileAsync = promisify(execFile);

/** A one-off command that connects to 127.0.0.1:<port> with node and prints `connected` or the error code. */
const connectTo = (port: number): string =>
  `node -e "const s = require('net').connect(${port}, '127.0.0.1'); s.on('connect', () => { console.log('connected'); process.exit(0); }); s.on('error', (e) => { console.log(e.code); process.exit(1); }); setTimeout(() => { console.log('timeout'); process.exit(2); }, 5000)"`;

/** A web process in node, written inline: the sandbox shows no file of the test. */
const WEB = `exec node -e "require('http').createServer((q, r) => r.end('hello ' + process.getuid())).listen(process.env.PORT)"`;

/** The host pids of the live processes whose command line is `text`, and their real uids. */
async function processesWith(text: string): Promise<Array<{ pid: number; uid: number }>> {
  const found: Array<{ pid: number; uid: number }> = [];
  for (const name of await readdir('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      const cmdline = (await readFile(`/proc/${name}/cmdline`, 'utf8')).split('\0').join(' ').trim();
      const status = await readFile(`/proc/${name}/status`, 'utf8');
      if (/^State:\s+Z/m.test(status) || cmdline !== text) continue;
      found.push({ pid: Number(name), uid: Number(/^Uid:\s+([0-9]+)/m.exec(status)?.[1]) });
    } catch {
      // Gone meanwhile.
    }
  }
  return found;
}

/** Whether any live process has the real uid. */
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

function listen(): Promise<{ server: Server; port: number }> {
  return new Promise((resolve) => {
    const server = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.end('secret service\n');
    });
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve({ server, port: typeof address === 'object' && address !== null ? address.port : 0 });
    });
  });
}

describeWithSandbox('ProcessScheduler sandbox (hostile apps, real processes)', () => {
  let dataDir: string;
  let logs: InMemoryLogStore;
  const uidRange = testUidRange();
  const schedulers: ProcessScheduler[] = [];
  /** A listener standing for the router: the one local port apps may reach. */
  let router: { server: Server; port: number };
  /** A listener standing for the database or the API: local, never reachable by apps. */
  let database: { server: Server; port: number };

  const scheduler = (options: Partial<ProcessSchedulerOptions> = {}): ProcessScheduler => {
    const created = new ProcessScheduler({
      dataDir,
      logs,
      portRange: PORTS,
      startTimeoutMs: 20_000,
      settleMs: 300,
      stopTimeoutMs: 3000,
      sandbox: { uidRange, maxProcesses: 64, maxOpenFiles: 256, maxFileBytes: 1024 * 1024 },
      sandboxHint: 'Install bubblewrap, or set UNSAFE_SINGLE_USER_DEV=1',
      ...options,
    });
    schedulers.push(created);
    return created;
  };
  /** A scheduler prepared with the router's port allowed. */
  const prepared = async (options: Partial<ProcessSchedulerOptions> = {}): Promise<ProcessScheduler> => {
    const s = scheduler(options);
    await expect(s.prepare([router.port])).resolves.toEqual({ mode: 'on', problem: null });
    return s;
  };
  const uidOf = async (s: ProcessScheduler, app: string): Promise<number> => {
    const result = await s.run(aRun('id -u', { app }));
    expect(result.exitCode).toBe(0);
    return Number(result.output.trim());
  };

  beforeAll(async () => {
    router = await listen();
    database = await listen();
  });

  afterAll(async () => {
    router.server.close();
    database.server.close();
  });

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-sandbox-data-'));
    logs = new InMemoryLogStore();
  });

  afterEach(async () => {
    for (const s of schedulers.splice(0)) await s.shutdown();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('runs each app as an unprivileged user of its own, recorded, with no capability and no other group', async () => {
    const s = await prepared();

    const mine = await uidOf(s, 'myapp');
    const other = await uidOf(s, 'other');

    expect(mine).toBeGreaterThanOrEqual(uidRange.from);
    expect(mine).toBeLessThanOrEqual(uidRange.to);
    expect(other).not.toBe(mine);
    expect(await uidOf(s, 'myapp')).toBe(mine);
    const ids = await s.run(aRun("id; grep -E '^(CapEff|CapPrm|CapBnd|NoNewPrivs)' /proc/self/status; whoami"));
    expect(ids.output).toContain(`uid=${mine}(app) gid=${mine}(app) groups=${mine}(app)`);
    expect(ids.output).toMatch(/CapPrm:\s+0+\n/);
    expect(ids.output).toMatch(/CapEff:\s+0+\n/);
    expect(ids.output).toMatch(/CapBnd:\s+0+\n/);
    expect(ids.output).toMatch(/NoNewPrivs:\s+1\n/);
    // A new controller process on the same data directory gives each app the same user again.
    await s.shutdown();
    const next = await prepared();
    expect(await uidOf(next, 'other')).toBe(other);
    expect(JSON.parse(await readFile(join(dataDir, 'sandbox', 'uids.json'), 'utf8'))).toEqual({ myapp: mine, other });
  });

  it('shows an app its own directory at /app and nothing of the data directory, other apps or the controller', async () => {
    await writeFile(join(dataDir, 'secret_key'), 'controller secret\n');
    const otherDir = await mkdtemp(join(tmpdir(), 'svc-sandbox-other-'));
    await writeFile(join(otherDir, 'config.txt'), 'other app secret\n');
    process.env.SVC_CONTROLLER_ONLY = 'controller environment secret';
    const s = await prepared();
    try {
      await expect(s.start(aSpec({ app: 'other', type: 'worker', command: 'exec sleep 1000', workdir: otherDir }))).resolves.toBe('up');

      const probe = await s.run(
        aRun(
          [
            'pwd; echo "HOME=$HOME"',
            `cat ${join(dataDir, 'secret_key')} || echo "no data dir"`,
            `ls ${dataDir} || echo "no listing"`,
            `cat ${join(otherDir, 'config.txt')} || echo "no other app"`,
            'ls /; ls /etc | tr "\\n" " "; echo',
            'env',
            'cat /proc/*/environ 2>/dev/null | tr "\\0" "\\n"',
            'echo written > /etc/x || echo "system read-only"',
          ].join('; '),
        ),
      );

      expect(probe.exitCode).toBe(0);
      expect(probe.output).toContain(`${APP_MOUNT}\nHOME=${APP_MOUNT}\n`);
      expect(probe.output).toContain('no data dir');
      expect(probe.output).toContain('no listing');
      expect(probe.output).toContain('no other app');
      expect(probe.output).toContain('system read-only');
      expect(probe.output).not.toContain('controller secret');
      expect(probe.output).not.toContain('other app secret');
      expect(probe.output).not.toContain('controller environment secret');
      expect(probe.output).not.toMatch(/^(root|work|var|home|opt|run)$/m);
      expect(probe.output).not.toMatch(/\b(shadow|ssh|postgresql)\b/);
    } finally {
      delete process.env.SVC_CONTROLLER_ONLY;
      await rm(otherDir, { recursive: true, force: true });
    }
  });

  it('lets an app see only its own processes: another app’s processes and environment are out of sight', async () => {
    const s = await prepared();
    await s.start(aSpec({ app: 'other', type: 'worker', command: 'exec sleep 1001', env: { SVC_APP: 'other', SVC_RELEASE: 'v2', OTHER_SECRET: 'do-not-leak' } }));
    const [sleeper] = await eventually(async () => {
      const found = await processesWith('sleep 1001');
      return found.length > 0 ? found : undefined;
    });

    const probe = await s.run(aRun(`ps -e -o pid=,user=,args=; echo "pids:" $(ls /proc | grep -E '^[0-9]+$'); cat /proc/${sleeper!.pid}/environ || echo "no such process"; kill -9 ${sleeper!.pid} || echo "cannot kill"`));

    expect(probe.output).not.toContain('sleep 1001');
    expect(probe.output).not.toContain('do-not-leak');
    expect(probe.output).toContain('no such process');
    // Its own sandbox: the sandbox's init, its shell and what the shell starts, numbered from 1.
    const listed = (/^pids: ([0-9 ]+)$/m.exec(probe.output)?.[1] ?? '').split(' ').map(Number);
    expect(Math.min(...listed)).toBe(1);
    expect(listed.length).toBeLessThan(8);
    expect((await processesWith('sleep 1001')).length).toBe(1);
  });

  it('refuses connections to this machine’s services (database, API) but lets the router in, and out to the router port', async () => {
    const s = await prepared();

    const toDatabase = await s.run(aRun(connectTo(database.port)));
    const toPostgres = await s.run(aRun(connectTo(5432)));
    const toRouter = await s.run(aRun(connectTo(router.port)));

    expect(toDatabase.output.trim()).toBe('ECONNREFUSED');
    expect(toPostgres.output.trim()).toBe('ECONNREFUSED');
    expect(toRouter.output.trim()).toBe('connected');
    // The controller (the router, readiness checks) still reaches a sandboxed web process.
    await expect(s.start(aSpec({ command: WEB }))).resolves.toBe('up');
    const [endpoint] = s.endpoints('myapp', 'web');
    expect(await fetchText(`http://${endpoint!.host}:${endpoint!.port}/`)).toBe(`hello ${await uidOf(s, 'myapp')}`);
    // A web process of another app is another local service.
    const toOtherApp = await s.run(aRun(connectTo(endpoint!.port), { app: 'other' }));
    expect(toOtherApp.output.trim()).toBe('ECONNREFUSED');
  });

  it('kills what a process detached (setsid, double fork) when its container stops, is scaled down, or its app goes', async () => {
    const s = await prepared();
    const detaching = (tag: string): string => `setsid sh -c 'exec sleep ${tag}' & (sleep ${tag}9 &) ; exec sleep ${tag}8`;
    const one = aSpec({ type: 'worker', num: 1, command: detaching('2001') });
    const two = aSpec({ type: 'worker', num: 2, command: detaching('2002') });
    await s.start(one);
    await s.start(two);
    const count = async (tag: string): Promise<number> =>
      (await Promise.all([tag, `${tag}9`, `${tag}8`].map((t) => processesWith(`sleep ${t}`)))).reduce((sum, found) => sum + found.length, 0);
    await eventually(async () => (await count('2002')) === 3, 10_000, 'the detached processes of worker.2');
    const uid = (await processesWith('sleep 20029'))[0]!.uid;
    expect(uid).toBeGreaterThanOrEqual(uidRange.from);

    // Scaled down: worker.2 goes with everything it detached; worker.1 keeps running.
    await s.stop(two.id);
    await eventually(async () => (await count('2002')) === 0, 10_000, 'nothing of worker.2');
    expect(await count('2001')).toBe(3);

    // The app's last container stops (as when the app is deleted): no process of its user is left.
    await s.stop(one.id);
    expect(await uidHasProcesses(uid)).toBe(false);

    // A one-off command leaves nothing behind either.
    const run = await s.run(aRun(`${detaching('2003').replace(/exec sleep 20038$/, 'echo started')}`));
    expect(run.output.trim()).toBe('started');
    expect(await count('2003')).toBe(0);
    expect(await uidHasProcesses(uid)).toBe(false);
  });

  it('limits the processes of an app (a fork loop fails), its open files and the size of its files', async () => {
    const s = await prepared();
    await s.start(aSpec({ type: 'worker', command: 'exec sleep 3001' }));

    const bomb = await s.run(
      aRun(
        `node -e "const { spawn } = require('child_process'); let started = 0, refused = 0; for (let i = 0; i < 200; i++) { const c = spawn('sleep', ['3002']); c.on('error', () => undefined); if (c.pid) started++; else refused++; } setTimeout(() => { console.log('started ' + started + ' refused ' + refused); process.exit(0); }, 1000)"`,
        { timeoutSeconds: 30 },
      ),
    );
    // The limit (64) counts every process and thread of the app, its running worker and node's own threads included.
    const [, started, refused] = (/^started (\d+) refused (\d+)$/m.exec(bomb.output) ?? []).map(Number);
    expect(started).toBeGreaterThan(10);
    expect(started).toBeLessThan(64);
    expect(refused).toBe(200 - started!);
    expect(await processesWith('sleep 3002')).toEqual([]);
    // The controller still starts other apps' processes.
    await expect(s.run(aRun('echo fine', { app: 'other' }))).resolves.toEqual({ exitCode: 0, output: 'fine\n' });

    const files = await s.run(aRun("ulimit -n; head -c 2097152 /dev/zero > big; echo \"status $?\"; wc -c < big"));
    expect(files.output).toMatch(/^256\n/);
    // The writer is stopped by SIGXFSZ (128 + 25) with the file at the limit.
    expect(files.output).toMatch(/^1048576$/m);
    expect(files.output).toContain('status 153');
  });

  it('refuses to run anything, with the reason and the fix, when the sandbox cannot be set up', async () => {
    const s = scheduler({ sandbox: { uidRange, bwrap: '/nonexistent/bwrap' } });

    const status = await s.prepare([router.port]);

    expect(status).toEqual({
      mode: 'unavailable',
      problem: 'apps cannot run: the sandbox is unavailable: bubblewrap (bwrap) is not installed. Install bubblewrap, or set UNSAFE_SINGLE_USER_DEV=1',
    });
    await expect(s.run(aRun('touch /tmp/ran'))).rejects.toThrow(status.problem as string);
    await expect(s.start(aSpec({ command: 'sleep 1000' }))).rejects.toThrow(status.problem as string);
    expect(await s.states([])).toEqual(new Map());
  });

  it('answers another machine on no address: an app listening on every interface is reached through loopback (the router) only', async () => {
    // Another machine: a network namespace on a veth pair, the host's end on an address of its own.
    const tag = `${process.pid % 10000}`;
    const [ns, host, peer] = [`svc35-${tag}`, `s35h${tag}`, `s35p${tag}`];
    const subnet = `10.235.${process.pid % 250}`;
    const ip = (...args: string[]): string => execFileSync('ip', args, { encoding: 'utf8' });
    ip('netns', 'add', ns);
    try {
      ip('link', 'add', host, 'type', 'veth', 'peer', 'name', peer);
      ip('link', 'set', peer, 'netns', ns);
      ip('addr', 'add', `${subnet}.1/30`, 'dev', host);
      ip('link', 'set', host, 'up');
      ip('netns', 'exec', ns, 'ip', 'addr', 'add', `${subnet}.2/30`, 'dev', peer);
      ip('netns', 'exec', ns, 'ip', 'link', 'set', peer, 'up');
      ip('netns', 'exec', ns, 'ip', 'link', 'set', 'lo', 'up');
      const s = await prepared();
      // The outside client gives up and resets a connection the app accepted (its handshake
      // completes; what the app sends back is dropped): the app ignores that reset rather than
      // crash on it, which would leave its port closed while the supervisor starts it again.
      const wide = `exec node -e "require('net').createServer((c) => { c.on('error', () => {}); c.end('app ' + process.getuid() + '\\n'); }).listen(process.env.PORT, '0.0.0.0')"`;
      await expect(s.start(aSpec({ command: wide }))).resolves.toBe('up');
      const [endpoint] = s.endpoints('myapp', 'web');
      // Run without blocking: the control listener below is this process's own.
      const fromOutside = async (address: string, port: number): Promise<string> =>
        (await execFileAsync('ip', ['netns', 'exec', ns, 'node', '-e', `const s = require('net').connect(${port}, '${address}'); s.on('data', (d) => { console.log('answered ' + d.toString().trim()); process.exit(0); }); s.on('error', (e) => { console.log(e.code); process.exit(0); }); setTimeout(() => { console.log('no answer'); process.exit(0); }, 3000)`], { encoding: 'utf8' })).stdout.trim();

      // A listener of the host's own on the same address answers: the path from outside works.
      const control = await new Promise<{ server: Server; port: number }>((done) => {
        const server = createServer((c) => c.end('host\n')).listen(0, `${subnet}.1`, () => done({ server, port: (server.address() as { port: number }).port }));
      });
      try {
        expect(await fromOutside(`${subnet}.1`, control.port)).toBe('answered host');
      } finally {
        control.server.close();
      }
      // The handshake completes (the kernel's SYN-ACK belongs to no socket of the app's uid yet),
      // and every byte the app sends back is dropped: no answer. What must never come back is the
      // app's answer.
      expect(await fromOutside(`${subnet}.1`, endpoint!.port)).toBe('no answer');
      const viaLoopback = await new Promise<string>((done) => {
        const socket = connect(endpoint!.port, '127.0.0.1');
        socket.on('data', (data) => done(data.toString().trim()));
        socket.on('error', (error: NodeJS.ErrnoException) => done(error.code ?? 'error'));
      });
      expect(viaLoopback).toBe(`app ${await uidOf(s, 'myapp')}`);
    } finally {
      ip('netns', 'del', ns);
    }
  });

  it('installs its network rules idempotently and takes them away at shutdown', async () => {
    const chain = `SVC_APPS_${uidRange.from}`;
    const buildChain = `SVC_BUILD_${uidRange.from}`;
    const rules = (tool = 'iptables'): string => execFileSync(tool, ['-w', '-S'], { encoding: 'utf8' });
    const first = await prepared();
    const second = await prepared();
    for (const tool of ['iptables', 'ip6tables']) {
      expect(rules(tool).split('\n').filter((line) => line.includes(`-j ${chain}`))).toHaveLength(1);
      // Build steps (the range's uids with the build group) pass a chain of their own too.
      expect(rules(tool).split('\n').filter((line) => line.includes(`-j ${buildChain}`))).toEqual([
        `-A OUTPUT -m owner --uid-owner ${uidRange.from}-${uidRange.to} --gid-owner ${uidRange.from - 1} --suppl-groups -j ${buildChain}`,
      ]);
    }

    await first.shutdown();
    await second.shutdown();

    for (const tool of ['iptables', 'ip6tables']) {
      expect(rules(tool)).not.toContain(chain);
      expect(rules(tool)).not.toContain(buildChain);
    }
  });
});
