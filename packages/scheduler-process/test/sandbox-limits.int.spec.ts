import { spawn } from 'node:child_process';
import { closeSync, openSync } from 'node:fs';
import { mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { connect, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { InMemoryLogStore } from '@svc/core/testing';
import { ProcessScheduler, type ProcessSchedulerOptions } from '@svc/scheduler-process';
import { aRun, aSpec, eventually } from './support/fixtures';
import { describeWithSandbox, testUidRange } from './support/sandbox';

jest.setTimeout(120_000);

const PORTS = { from: 46000, to: 46999 };

/** A listener on 127.0.0.1 standing for one of the controller's own (API, router, git): it answers `controller`. */
function controllerListener(): Promise<{ server: Server; port: number }> {
  return new Promise((done) => {
    const server = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.end('controller\n');
    });
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      done({ server, port: typeof address === 'object' && address !== null ? address.port : 0 });
    });
  });
}

/** Connects to host:port, sends a login, and resolves with what came back, or the error. */
function sendLogin(host: string, port: number): Promise<string> {
  return new Promise((done) => {
    const socket = connect({ host, port });
    let answer = '';
    const finish = (text: string): void => {
      socket.destroy();
      done(text);
    };
    socket.setTimeout(1500, () => finish(answer || 'timeout'));
    socket.on('connect', () => socket.write('POST /login password=hunter2\n'));
    socket.on('data', (chunk: Buffer) => (answer += chunk.toString()));
    socket.on('end', () => finish(answer));
    socket.on('error', (error: NodeJS.ErrnoException) => finish(answer || (error.code ?? 'error')));
  });
}

/** A squatter in node: listens on every address form on each port, prints which binds succeeded and everything it receives. */
const squatter = (ports: number[]): string =>
  `exec node -e "
const net = require('net');
for (const port of ${JSON.stringify(ports)}) for (const host of ['127.0.0.1', '127.0.0.2', '::1', '::', '0.0.0.0']) {
  const s = net.createServer((c) => { c.on('data', (d) => console.log('STOLEN ' + d.toString().trim())); c.on('error', () => {}); c.write('squatter'); });
  s.on('error', (e) => console.log('refused ' + host + ' ' + port + ' ' + e.code));
  s.listen({ host, port, ipv6Only: host === '::' }, () => console.log('bound ' + host + ' ' + port));
}
setInterval(() => {}, 1000);"`;

describeWithSandbox('ProcessScheduler sandbox limits (hostile apps, real processes)', () => {
  let dataDir: string;
  let logs: InMemoryLogStore;
  const uidRange = testUidRange();
  const schedulers: ProcessScheduler[] = [];

  const prepared = async (options: Partial<ProcessSchedulerOptions> = {}, controllerPorts: number[] = []): Promise<ProcessScheduler> => {
    const s = new ProcessScheduler({
      dataDir,
      logs,
      portRange: PORTS,
      startTimeoutMs: 20_000,
      settleMs: 300,
      stopTimeoutMs: 3000,
      memoryPollMs: 200,
      backoff: { initialMs: 60_000, maxMs: 60_000, resetAfterMs: 60_000 },
      sandbox: { uidRange, maxProcesses: 64, maxOpenFiles: 256 },
      ...options,
    });
    schedulers.push(s);
    await expect(s.prepare([], controllerPorts)).resolves.toEqual({ mode: 'on', problem: null });
    return s;
  };
  const messages = (app = 'myapp'): string[] => logs.entries(app).map((e) => e.message);

  beforeEach(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'svc-limits-data-'));
    logs = new InMemoryLogStore();
  });

  afterEach(async () => {
    for (const s of schedulers.splice(0)) await s.shutdown();
    await rm(dataDir, { recursive: true, force: true });
  });

  it('kills a process that allocates 1.2 GB under the default memory limit (1G), and reports the container crashed with the reason', async () => {
    const s = await prepared();
    const hog = `exec node -e "const hog = []; for (let i = 0; i < 12; i++) hog.push(Buffer.alloc(100 * 1000 * 1000, 1)); console.log('allocated'); setInterval(() => {}, 1000)"`;
    const spec = aSpec({ type: 'worker', command: `sleep 2; ${hog}` });

    await expect(s.start(spec)).resolves.toBe('up');

    await eventually(async () => (await s.states([spec.id])).get(spec.id) === 'crashed', 30_000, 'crashed');
    await eventually(() => messages().some((m) => /^worker\.1 \(v2\) crashed: it was killed for using more than its memory limit of 1\.0 GiB \(out of memory\)/.test(m)), 10_000, 'the reason in the log');
    expect(messages().join('\n')).not.toContain('allocated');

    // A one-off command is held to it too, and says so.
    const run = await s.run(aRun(hog.replace(/^exec /, ''), { timeoutSeconds: 30 }));
    expect(run.exitCode).toBe(137);
    expect(run.output).toContain('[a process was killed for using more than its memory limit of 1.0 GiB (out of memory)]');
  });

  it('holds a container to its own memory limit and kills all of it, even a process that left its group', async () => {
    const s = await prepared();
    const grow = `node -e "const hog = []; const t = setInterval(() => (hog.length < 20 ? hog.push(Buffer.alloc(16 * 1024 * 1024, 1)) : clearInterval(t)), 50); setInterval(() => undefined, 1000)"`;
    const spec = aSpec({ type: 'worker', command: `setsid ${grow} & exec sleep 1000`, memory: '100M' });

    await s.start(spec);

    await eventually(async () => (await s.states([spec.id])).get(spec.id) === 'crashed', 20_000, 'crashed');
    await eventually(() => messages().some((m) => m.startsWith('worker.1 (v2) crashed: it was killed for using more than its memory limit of 100.0 MiB (out of memory)')));
    expect(messages()).toContain('worker.1 (v2) ran out of memory (a process of it was killed for using more than its memory limit of 100.0 MiB (out of memory)): killing it');
  });

  it('limits the CPU time of a process to its share (256 = a quarter of one CPU)', async () => {
    const s = await prepared();
    const spin = `exec node -e "const end = Date.now() + 2000; while (Date.now() < end); const u = process.cpuUsage(); console.log('cpu ' + (u.user + u.system) / 1000)"`;
    const spec = aSpec({ type: 'worker', command: spin, cpu: 256 });

    await s.start(spec).catch(() => undefined);

    const line = await eventually(() => messages().find((m) => m.startsWith('cpu ')), 20_000, 'the CPU time');
    // Two seconds of wall time at a quarter of a CPU: about half a second of CPU, never the whole two.
    expect(Number(line.slice(4))).toBeLessThan(1000);
  });

  it('stops a fork bomb at the process limit of its cgroup: the controller and other apps go on', async () => {
    const s = await prepared();
    // The one-off command's cgroup, as the kernel counts it, watched while the bomb goes off.
    const cgroupDirs = async (): Promise<string[]> => {
      for (const parent of [`/sys/fs/cgroup/pids/svc/${uidRange.from}`, `/sys/fs/cgroup/svc/${uidRange.from}`]) {
        const found = (await readdir(parent).catch(() => [] as string[])).filter((name) => name.startsWith('run-'));
        if (found.length > 0) return found.map((name) => join(parent, name));
      }
      return [];
    };
    let peak = 0;
    let limit = '';
    let refused = '';
    let over = false;
    // Each call lives a second after it forked (its `sleep`), so that the bomb holds its count at the
    // limit long enough to be seen: without it, it reached the limit and burnt out between two
    // readings of pids.current on a fast machine, and the test saw 3 processes.
    const watching = s.run(aRun('bomb() { bomb | bomb & sleep 1; }; bomb; sleep 4', { timeoutSeconds: 8 })).finally(() => {
      over = true;
    });
    const [dir] = await eventually(async () => ((await cgroupDirs()).length > 0 ? cgroupDirs() : undefined), 10_000, 'the cgroup');
    // Watched while the bomb runs (on a busy machine it takes longer to reach the limit), until the kernel refused forks.
    for (let i = 0; i < 80 && !over; i++) {
      peak = Math.max(peak, Number(await readFile(join(dir!, 'pids.current'), 'utf8').catch(() => '0')));
      limit = (await readFile(join(dir!, 'pids.max'), 'utf8').catch(() => limit)).trim();
      refused = await readFile(join(dir!, 'pids.events'), 'utf8').catch(() => refused);
      if (peak > 32 && Number(/max\s+([0-9]+)/.exec(refused)?.[1]) > 0) break;
      await new Promise((done) => setTimeout(done, 100));
    }
    const bomb = await watching;

    expect(limit).toBe('64');
    expect(peak).toBeGreaterThan(32);
    expect(peak).toBeLessThanOrEqual(64);
    // The kernel refused forks past the limit.
    expect(Number(/max\s+([0-9]+)/.exec(refused)?.[1])).toBeGreaterThan(0);
    expect(bomb.output).not.toContain('killed after the timeout');
    await expect(s.run(aRun('echo fine', { app: 'other' }))).resolves.toEqual({ exitCode: 0, output: 'fine\n' });
  });

  it('refuses new user namespaces inside: unshare -U and clone(CLONE_NEWUSER) fail', async () => {
    const s = await prepared();

    const probe = await s.run(aRun('unshare -U true; echo "unshare $?"; unshare -Ur id; echo "mapped $?"; unshare --fork -U -p true; echo "fork $?"; grep Seccomp: /proc/self/status'));

    expect(probe.output).toContain('unshare 1');
    expect(probe.output).toContain('mapped 1');
    expect(probe.output).toContain('fork 1');
    expect(probe.output).toContain('Operation not permitted');
    expect(probe.output).toMatch(/Seccomp:\s+2/);
    // Ordinary processes and threads still start (the C library falls back from clone3).
    const threads = await s.run(aRun(`node -e "new (require('worker_threads').Worker)('console.log(42)', { eval: true }); require('child_process').execSync('true')"`));
    expect(threads).toEqual({ exitCode: 0, output: '42\n' });
  });

  it('gives an app only descriptors 0, 1 and 2, even from a controller that holds others without close-on-exec', async () => {
    // A controller process of its own, given a descriptor by its parent (inherited: no close-on-exec).
    const secret = join(dataDir, 'controller-secret');
    await writeFile(secret, 'controller secret\n');
    const held = openSync(secret, 'r');
    const script = join(dataDir, 'controller.js');
    const root = resolve(__dirname, '../../..');
    await writeFile(
      script,
      `require(${JSON.stringify(require.resolve('ts-node'))}).register({ transpileOnly: true, compilerOptions: { module: 'commonjs' } });
const Module = require('module');
const original = Module._resolveFilename;
Module._resolveFilename = function (request, ...rest) {
  const match = /^@svc\\/([a-z0-9-]+)$/.exec(request);
  return original.call(this, match ? ${JSON.stringify(root)} + '/packages/' + match[1] + '/src/index.ts' : request, ...rest);
};
const fs = require('fs');
const { ProcessScheduler } = require('@svc/scheduler-process');
const flags = (fd) => { try { return parseInt(fs.readFileSync('/proc/self/fdinfo/' + fd, 'utf8').match(/flags:\\s+([0-7]+)/)[1], 8); } catch { return 0o2000000; } };
const held = fs.readdirSync('/proc/self/fd').filter((fd) => !(flags(fd) & 0o2000000));
const s = new ProcessScheduler({ dataDir: ${JSON.stringify(join(dataDir, 'inner'))}, logs: { append: async () => undefined }, portRange: ${JSON.stringify(PORTS)}, sandbox: { uidRange: ${JSON.stringify(uidRange)} } });
s.run({ app: 'myapp', release: 1, image: 'x', workdir: null, command: 'ls /proc/self/fd | tr "\\\\n" " "; cat /proc/self/fd/40 || echo "no 40"', env: {}, timeoutSeconds: 20, outputLimitBytes: 10000 })
  .then((r) => s.shutdown().then(() => process.stdout.write(JSON.stringify({ held, output: r.output }))))
  .catch((e) => { process.stderr.write(String(e)); process.exit(1); });
`,
    );
    // Descriptor 40: node marks low inherited ones close-on-exec at start-up, a high one stays open across exec.
    const stdio: Array<'ignore' | 'pipe' | number> = ['ignore', 'pipe', 'pipe', ...new Array<'ignore'>(37).fill('ignore'), held];
    const child = spawn(process.execPath, [script], { stdio });
    let out = '';
    let err = '';
    child.stdout!.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (err += chunk.toString()));
    await new Promise((done) => child.on('close', done));
    closeSync(held);

    expect(err).toBe('');
    const result = JSON.parse(out) as { held: string[]; output: string };
    // The controller did hold them: the test could fail.
    expect(result.held).toContain('40');
    // `ls` sees its own directory's descriptor (3) besides 0-2, and nothing else.
    expect(result.output).toMatch(/^0 1 2 3 [^0-9]/);
    expect(result.output).toContain('no 40');
    expect(result.output).not.toContain('controller secret');
  });

  it('gives an app a private /tmp it can write, bounded, and lets it write its own /app, a checkout it was not built in included', async () => {
    const s = await prepared({ sandbox: { uidRange, maxProcesses: 64, tmpBytes: 4 * 1024 * 1024 } });
    // A Procfile-only push that was not compiled: a checkout made by the controller (root).
    const checkout = await mkdtemp(join(tmpdir(), 'svc-limits-checkout-'));
    try {
      await writeFile(join(checkout, 'Procfile'), 'worker: sleep 1000\n');
      const spec = aSpec({ type: 'worker', workdir: checkout, command: 'echo state > /app/state.txt && echo tmp > /tmp/t && cat /tmp/t && exec sleep 1000' });
      await expect(s.start(spec)).resolves.toBe('up');
      const uid = (await stat(join(checkout, 'state.txt'))).uid;
      expect(uid).toBeGreaterThanOrEqual(uidRange.from);
      expect((await stat(join(checkout, 'Procfile'))).uid).toBe(uid);
      expect(await readFile(join(checkout, 'state.txt'), 'utf8')).toBe('state\n');
      expect(messages()).toContain('tmp');

      const probe = await s.run(aRun('id -u; stat -c "%a %U" /tmp; echo x > /tmp/a && echo "tmp ok"; head -c 8388608 /dev/zero > /tmp/big; echo "big $?"; echo y > /app/b && echo "app ok"; stat -c %U /app'));
      expect(probe.output).toContain('1777 root');
      expect(probe.output).toContain('tmp ok');
      expect(probe.output).toMatch(/big [1-9]/);
      expect(probe.output).toContain('app ok');
      expect(probe.output).toMatch(/^app$/m);
    } finally {
      await rm(checkout, { recursive: true, force: true });
    }
  });

  it('keeps a squatter on the controller’s ports (every address form) from receiving what is meant for the controller', async () => {
    const listeners = await Promise.all([controllerListener(), controllerListener(), controllerListener()]);
    const ports = listeners.map((l) => l.port);
    try {
      const s = await prepared({}, ports);
      await s.start(aSpec({ type: 'worker', command: squatter(ports) }));
      // The squatter bound what was free: the addresses the controller does not listen on.
      await eventually(() => messages().filter((m) => m.startsWith('bound ') || m.startsWith('refused ')).length === 15, 15_000, 'every bind tried');
      expect(messages()).toContain(`bound ::1 ${ports[0]}`);
      expect(messages()).toContain(`bound 127.0.0.2 ${ports[0]}`);

      const answers = await Promise.all(ports.flatMap((port) => ['localhost', '::1', '127.0.0.1', '127.0.0.2'].map(async (host) => `${host} ${port} ${await sendLogin(host, port)}`)));

      for (const answer of answers) expect(answer).not.toContain('squatter');
      // Where the controller listens, it still answers.
      for (const port of ports) expect(answers).toContain(`127.0.0.1 ${port} controller\n`);
      await new Promise((done) => setTimeout(done, 500));
      expect(messages().join('\n')).not.toContain('STOLEN');
      expect(messages().join('\n')).not.toContain('hunter2');
    } finally {
      for (const { server } of listeners) server.close();
    }
  });
});
