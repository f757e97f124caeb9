import { mkdtemp, rm } from 'node:fs/promises';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { InMemoryLogStore } from '@svc/core/testing';
import { ProcessScheduler, RUN_TIMEOUT_EXIT_CODE, SCHEDULER_LOG_SOURCE, type ProcessSchedulerOptions } from '@svc/scheduler-process';
import { aRun, aSpec, appDirectory, eventually, fetchText, isRunning, nodeApp, type AppDirectory } from './support/fixtures';

jest.setTimeout(60_000);

const PORTS = { from: 42000, to: 42999 };

describe('ProcessScheduler (real processes)', () => {
  let app: AppDirectory;
  let dataDir: string;
  let logs: InMemoryLogStore;
  const schedulers: ProcessScheduler[] = [];

  /** A scheduler on this test's data directory with short timings. */
  const scheduler = (options: Partial<ProcessSchedulerOptions> = {}): ProcessScheduler => {
    const created = new ProcessScheduler({
      dataDir,
      logs,
      portRange: PORTS,
      startTimeoutMs: 15_000,
      settleMs: 300,
      stopTimeoutMs: 3000,
      backoff: { initialMs: 300, maxMs: 5000, resetAfterMs: 60_000 },
      memoryPollMs: 200,
      // Unconfined, as the controller's user: what the scheduler does around the processes; sandbox.int.spec.ts confines them.
      sandbox: null,
      ...options,
    });
    schedulers.push(created);
    return created;
  };
  const lines = (source: string): string[] => logs.entries('myapp').filter((e) => e.source === source).map((e) => e.message);
  const events = (): string[] => lines(SCHEDULER_LOG_SOURCE);
  const endpointUrl = (s: ProcessScheduler, path: string, type = 'web', index = 0): string => {
    const endpoint = s.endpoints('myapp', type)[index];
    if (!endpoint) throw new Error(`no endpoint ${type}[${index}]`);
    return `http://${endpoint.host}:${endpoint.port}${path}`;
  };

  beforeEach(async () => {
    app = await appDirectory();
    dataDir = await mkdtemp(join(tmpdir(), 'svc-process-data-'));
    logs = new InMemoryLogStore();
  });

  afterEach(async () => {
    for (const s of schedulers.splice(0)) await s.shutdown();
    await app.remove();
    await rm(dataDir, { recursive: true, force: true });
  });

  describe('start', () => {
    it('resolves up once the web process answers on its PORT, with the release environment and nothing of the controller', async () => {
      process.env.SVC_CONTROLLER_ONLY = 'secret';
      const s = scheduler();
      const spec = aSpec({ command: nodeApp(app.path), env: { SVC_APP: 'myapp', SVC_RELEASE: 'v2', GREETING: 'hi there' } });

      try {
        await expect(s.start(spec)).resolves.toBe('up');
      } finally {
        delete process.env.SVC_CONTROLLER_ONLY;
      }

      const [endpoint] = s.endpoints('myapp', 'web');
      expect(endpoint).toEqual({ host: '127.0.0.1', port: expect.any(Number), id: expect.any(String) });
      expect(endpoint!.port).toBeGreaterThanOrEqual(PORTS.from);
      expect(await fetchText(endpointUrl(s, '/'))).toBe('hello from myapp');
      const env = JSON.parse(await fetchText(endpointUrl(s, '/env'))) as Record<string, string>;
      expect(env).toMatchObject({ GREETING: 'hi there', SVC_APP: 'myapp', SVC_RELEASE: 'v2', PORT: String(endpoint!.port) });
      expect(env.SVC_CONTROLLER_ONLY).toBeUndefined();
      expect(await fetchText(endpointUrl(s, '/cwd'))).toBe(join(dataDir, 'apps', 'myapp'));
      expect(await s.states([spec.id, 'unknown'])).toEqual(new Map([[spec.id, 'up']]));
    });

    it('writes every line the process prints to the app log with the source <app>[<type>.<num>]', async () => {
      const s = scheduler();
      await s.start(aSpec({ type: 'worker', num: 3, command: 'echo first line; echo "to stderr" >&2; printf "no newline"; sleep 1000' }));

      await eventually(() => lines('myapp[worker.3]').length === 2, 10_000, 'two lines');
      expect(lines('myapp[worker.3]').sort()).toEqual(['first line', 'to stderr']);

      // A last line without a line end is written once the process has ended.
      await s.shutdown();
      expect(lines('myapp[worker.3]').sort()).toEqual(['first line', 'no newline', 'to stderr']);
    });

    it('runs the command with sh -c, so its children belong to the process group and stop with it', async () => {
      const s = scheduler();
      const spec = aSpec({ command: `sleep 1000 & echo "child $!"; ${nodeApp(app.path)}` });
      await s.start(spec);
      const childLine = await eventually(() => lines('myapp[web.1]').find((l) => l.startsWith('child ')));
      const child = Number(childLine.split(' ')[1]);
      const leader = Number(await fetchText(endpointUrl(s, '/pid')));
      expect(isRunning(child)).toBe(true);

      await s.stop(spec.id);

      expect(isRunning(leader)).toBe(false);
      await eventually(() => !isRunning(child), 5000, 'the child to be gone');
      expect(await s.states([spec.id])).toEqual(new Map());
      expect(s.endpoints('myapp', 'web')).toEqual([]);
      // Written before stop resolves: an app deleted right after must not get its log back.
      expect(events()).toContain('web.1 (v2) stopped');
    });

    it('rejects a web process that never listens after the start timeout and leaves nothing running', async () => {
      const s = scheduler({ startTimeoutMs: 1500 });
      const spec = aSpec({ command: 'echo "pid $$"; exec sleep 1000' });
      const started = Date.now();

      await expect(s.start(spec)).rejects.toThrow(/^it did not accept connections on port \d+ within 1\.5 s; last output: pid \d+$/);

      expect(Date.now() - started).toBeLessThan(10_000);
      const pid = Number((await eventually(() => lines('myapp[web.1]').find((l) => l.startsWith('pid ')))).split(' ')[1]);
      expect(isRunning(pid)).toBe(false);
      expect(await s.states([spec.id])).toEqual(new Map());
      expect(s.endpoints('myapp', 'web')).toEqual([]);
      await eventually(() => events().some((e) => e.startsWith('web.1 (v2) did not start: it did not accept connections')));
    });

    it('rejects at once with the exit code and the last output when the process exits before it is up', async () => {
      const s = scheduler();

      const error = await s.start(aSpec({ command: 'echo "Error: cannot find module"; exit 3' })).catch((e: Error) => e);

      expect((error as Error).message).toBe('it exited with code 3 before it was up; last output: Error: cannot find module');
    });

    it('reports the last 20 lines of a process that fails its start, each escaped, and writes them to the log line by line', async () => {
      const s = scheduler({ startTimeoutMs: 1500 });
      const printing = 'for n in $(seq 1 30); do echo "stack line $n"; done; printf "\\033[2Jcleared\\n"; sleep 0.2; echo "stderr last" >&2';

      const exited = (await s.start(aSpec({ command: `${printing}; exit 1` })).catch((e: Error) => e)) as Error;
      const silent = (await s.start(aSpec({ num: 2, command: `${printing}; exec sleep 1000` })).catch((e: Error) => e)) as Error;

      const expected = [...Array.from({ length: 18 }, (_, i) => `stack line ${i + 13}`), '\\x1b[2Jcleared', 'stderr last'].join('\n');
      expect(exited.message).toBe(`it exited with code 1 before it was up; last output: ${expected}`);
      expect(silent.message).toMatch(/^it did not accept connections on port \d+ within 1\.5 s; last output: stack line 13\n/);
      expect(silent.message.replace(/^.*; last output: /, '')).toBe(expected);
      await eventually(() => events().includes('stderr last'));
      expect(events().some((e) => e.includes('\n'))).toBe(false);
    });

    it('waits for HEALTHCHECK_URL to answer 2xx, and rejects within HEALTHCHECK_TIMEOUT when it never does', async () => {
      const s = scheduler();
      const healthy = aSpec({ command: nodeApp(app.path), env: { SVC_APP: 'myapp', SVC_RELEASE: 'v2', HEALTHCHECK_URL: '/health', HEALTHY: 'yes' } });
      await expect(s.start(healthy)).resolves.toBe('up');

      const sick = aSpec({
        num: 2,
        command: nodeApp(app.path),
        env: { SVC_APP: 'myapp', SVC_RELEASE: 'v2', HEALTHCHECK_URL: 'http://ignored.example.com/health', HEALTHCHECK_TIMEOUT: '2' },
      });
      const started = Date.now();
      await expect(s.start(sick)).rejects.toThrow(/^HEALTHCHECK_URL \/health did not answer 2xx within 2 s \(last: status 500\)/);
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(s.endpoints('myapp', 'web')).toHaveLength(1);
    });

    it('reports a type without a command (an image build) as crashed and explains why in the log', async () => {
      const s = scheduler();
      const spec = aSpec({ type: 'cmd', command: null });

      await expect(s.start(spec)).resolves.toBe('crashed');

      expect(await s.states([spec.id])).toEqual(new Map([[spec.id, 'crashed']]));
      await eventually(() => events().length > 0);
      expect(events()[0]).toMatch(/^cmd\.1 \(v2\) cannot run: the build has no command for the process type cmd \(an image build\)\. Image builds need a container scheduler/);
      await s.stop(spec.id);
      expect(await s.states([spec.id])).toEqual(new Map());
    });

    it('counts a non-web process as up once it has kept running for a moment', async () => {
      const s = scheduler();
      await expect(s.start(aSpec({ type: 'worker', command: 'sleep 1000' }))).resolves.toBe('up');
      await expect(s.start(aSpec({ type: 'worker', num: 2, command: 'sleep 0.05; exit 1' }))).rejects.toThrow('it exited with code 1 before it was up');
    });

    it('starts processes with a cpu value below 1024 at a higher niceness', async () => {
      const s = scheduler();
      await s.start(aSpec({ type: 'worker', command: 'echo "nice $(nice)"; exec sleep 1000', cpu: 512 }));

      await eventually(() => lines('myapp[worker.1]').includes('nice 3'), 5000, 'nice 3');
    });
  });

  describe('supervision', () => {
    it('restarts a killed process with doubling back-off: crashed while waiting, then up again', async () => {
      const s = scheduler({ backoff: { initialMs: 1000, maxMs: 10_000, resetAfterMs: 60_000 } });
      const spec = aSpec({ command: nodeApp(app.path) });
      await s.start(spec);
      const first = Number(await fetchText(endpointUrl(s, '/pid')));

      process.kill(first, 'SIGKILL');
      await eventually(async () => (await s.states([spec.id])).get(spec.id) === 'crashed', 5000, 'crashed');
      expect(s.endpoints('myapp', 'web')).toEqual([]);
      await eventually(async () => (await s.states([spec.id])).get(spec.id) === 'up', 15_000, 'up again');
      const second = Number(await fetchText(endpointUrl(s, '/pid')));
      expect(second).not.toBe(first);

      process.kill(second, 'SIGKILL');
      await eventually(async () => (await s.states([spec.id])).get(spec.id) === 'crashed', 5000, 'crashed again');
      await eventually(async () => (await s.states([spec.id])).get(spec.id) === 'up', 15_000, 'up a third time');
      await eventually(() => events().filter((e) => e.startsWith('web.1 (v2) is up')).length === 3, 5000, 'three starts in the log');
      const crashes = events().filter((e) => e.startsWith('web.1 (v2) crashed'));
      expect(crashes).toEqual([
        expect.stringMatching(/^web\.1 \(v2\) crashed: it was killed by SIGKILL; last output: listening on \d+; starting it again in 1 s$/),
        expect.stringMatching(/^web\.1 \(v2\) crashed: it was killed by SIGKILL; .*starting it again in 2 s$/),
      ]);
    });

    it('kills a process group over its memory limit, reports it crashed with the reason, and starts it again', async () => {
      const s = scheduler({ backoff: { initialMs: 1500, maxMs: 10_000, resetAfterMs: 60_000 } });
      const spec = aSpec({ command: nodeApp(app.path), memory: '150M' });
      await s.start(spec);
      const pid = Number(await fetchText(endpointUrl(s, '/pid')));

      await fetchText(endpointUrl(s, '/grow'));

      await eventually(async () => (await s.states([spec.id])).get(spec.id) === 'crashed', 15_000, 'crashed');
      expect(isRunning(pid)).toBe(false);
      await eventually(() => events().some((e) => /^web\.1 \(v2\) is over its memory limit of 150M \(\d+\.\d MiB resident\): killing it$/.test(e)));
      await eventually(() => events().some((e) => /^web\.1 \(v2\) crashed: it exceeded its memory limit of 150M \(.* resident\) and was killed; .*starting it again in 1\.5 s$/.test(e)));
      await eventually(async () => (await s.states([spec.id])).get(spec.id) === 'up', 15_000, 'up again');
    });

    it('stops a process that ignores SIGTERM with SIGKILL after the stop timeout', async () => {
      const s = scheduler({ stopTimeoutMs: 500 });
      const spec = aSpec({ type: 'worker', command: `trap "" TERM; echo "pid $$"; while true; do sleep 0.1; done` });
      await s.start(spec);
      const pid = Number((await eventually(() => lines('myapp[worker.1]').find((l) => l.startsWith('pid ')))).split(' ')[1]);
      const started = Date.now();

      await s.stop(spec.id);

      expect(Date.now() - started).toBeGreaterThanOrEqual(450);
      expect(isRunning(pid)).toBe(false);
    });

    it('restarts a known id when it is started again, and stopping an unknown id is no error', async () => {
      const s = scheduler();
      const spec = aSpec({ command: nodeApp(app.path) });
      await s.start(spec);
      const before = Number(await fetchText(endpointUrl(s, '/pid')));

      await s.start(spec);

      const after = Number(await fetchText(endpointUrl(s, '/pid')));
      expect(after).not.toBe(before);
      expect(isRunning(before)).toBe(false);
      expect(s.endpoints('myapp', 'web')).toHaveLength(1);
      await expect(s.stop('no-such-id')).resolves.toBeUndefined();
    });
  });

  describe('run', () => {
    it('returns the real exit code and output, with the environment and a PORT', async () => {
      const s = scheduler();

      const result = await s.run(aRun('echo "$SVC_APP $SVC_RELEASE $FOO port=$PORT"; echo oops >&2; exit 7', { env: { SVC_APP: 'myapp', SVC_RELEASE: 'v2', FOO: 'bar' } }));

      expect(result.exitCode).toBe(7);
      expect(result.output).toMatch(/^myapp v2 bar port=\d+\n/);
      expect(result.output).toContain('oops\n');
    });

    it('kills the command at its timeout and answers exit code 124 with what it printed', async () => {
      const s = scheduler();
      const started = Date.now();

      const result = await s.run(aRun('echo started; exec sleep 30', { timeoutSeconds: 1 }));

      expect(Date.now() - started).toBeLessThan(10_000);
      expect(result).toEqual({ exitCode: RUN_TIMEOUT_EXIT_CODE, output: 'started\n\n[killed after the timeout of 1 s]' });
    });

    it('caps the output at the limit, saying it was truncated, and keeps reading so the command finishes', async () => {
      const s = scheduler();

      const result = await s.run(aRun("head -c 200000 /dev/zero | tr '\\0' x; echo; echo done >&2", { outputLimitBytes: 1024 }));

      expect(result.exitCode).toBe(0);
      expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(1024);
      expect(result.output).toMatch(/^x+\n\[output truncated at 1024 bytes\]$/);
    });

    it('leaves nothing of the command running once it has finished', async () => {
      const s = scheduler();

      const result = await s.run(aRun('sleep 1000 & echo $!'));

      expect(result.exitCode).toBe(0);
      const pid = Number(result.output.trim());
      await eventually(() => !isRunning(pid), 5000, 'the background process to be gone');
    });

    it('reports a command killed by a signal as 128 plus the signal number', async () => {
      const s = scheduler();
      await expect(s.run(aRun('kill -9 $$'))).resolves.toEqual({ exitCode: 137, output: '' });
    });
  });

  describe('shutdown and recovery', () => {
    it('stops every process group on shutdown, leaves no child behind, and refuses new work', async () => {
      const s = scheduler();
      await s.start(aSpec({ command: nodeApp(app.path) }));
      await s.start(aSpec({ num: 2, command: nodeApp(app.path) }));
      await s.start(aSpec({ type: 'worker', command: 'sleep 1000 & echo "child $!"; exec sleep 1000' }));
      const webs = await Promise.all([0, 1].map(async (i) => Number(await fetchText(endpointUrl(s, '/pid', 'web', i)))));
      const child = Number((await eventually(() => lines('myapp[worker.1]').find((l) => l.startsWith('child ')))).split(' ')[1]);
      expect([...webs, child].every(isRunning)).toBe(true);

      await s.shutdown();

      await eventually(() => [...webs, child].every((pid) => !isRunning(pid)), 5000, 'every process to be gone');
      expect(lines('myapp[web.1]')).toContain('got SIGTERM');
      expect(events()).toContain('web.1 (v2) stopped: the controller is shutting down');
      expect(existsSync(join(dataDir, 'processes')) ? readdirSync(join(dataDir, 'processes')) : []).toEqual([]);
      await expect(s.start(aSpec())).rejects.toThrow('the scheduler is shutting down');
      await expect(s.run(aRun('true'))).rejects.toThrow('the scheduler is shutting down');
    });

    it('stops the process groups an earlier controller process left running', async () => {
      // A crashed controller restarts nothing: its back-off outlasts the test, so the process the
      // next one stops is not started again behind the second reaping (as it was with 300 ms under load).
      const crashed = scheduler({ backoff: { initialMs: 600_000, maxMs: 600_000, resetAfterMs: 60_000 } });
      await crashed.start(aSpec({ command: nodeApp(app.path) }));
      const orphan = Number(await fetchText(endpointUrl(crashed, '/pid')));

      // A new controller process on the same data directory, while the old one's processes still run.
      const next = scheduler();
      await expect(next.reapOrphans()).resolves.toBe(1);

      expect(isRunning(orphan)).toBe(false);
      expect(events()).toContainEqual(expect.stringMatching(/^web\.1: stopped process group \d+, left running by an earlier controller process$/));
      await expect(next.reapOrphans()).resolves.toBe(0);
    });

    it('leaves its processes running on detach with a reader for their output; the next controller process holds them, starts replacements, then stops them and logs what they printed meanwhile', async () => {
      const first = scheduler();
      // sh dies of SIGPIPE on the first echo with no reader.
      const spec = aSpec({ type: 'worker', command: 'trap "echo bye; exit 0" TERM; while true; do echo tick; sleep 0.05; done' });
      await first.start(spec);
      const { pid } = JSON.parse(readFileSync(join(dataDir, 'processes', `${spec.id}.json`), 'utf8')) as { pid: number };

      await first.detach();
      const ticksRead = lines('myapp[worker.1]').length;
      await new Promise((resolve) => setTimeout(resolve, 500));
      expect(isRunning(pid)).toBe(true);
      // This process no longer reads the pipes: a keeper of their own does, into a file.
      expect(lines('myapp[worker.1]')).toHaveLength(ticksRead);
      expect(readFileSync(join(dataDir, 'output', `${spec.id}.stdout`), 'utf8')).toMatch(/^(tick\n)+$/);

      const next = scheduler();
      const held = await next.leftovers.hold();
      expect(held).toEqual([expect.objectContaining({ id: `held-${spec.id}`, pid })]);
      await next.start(spec);
      await expect(next.leftovers.stop(held)).resolves.toBe(1);

      expect(isRunning(pid)).toBe(false);
      // Printed once no controller process read its pipes: through the keeper into the log.
      expect(lines('myapp[worker.1]')).toContain('bye');
      // The replacement, started under the same id, keeps its record; the held one is gone.
      expect(readdirSync(join(dataDir, 'processes')).filter((name) => name.endsWith('.json'))).toEqual([`${spec.id}.json`]);
      await next.shutdown();
    });

    it('gives the app an empty directory again once none of its processes is left', async () => {
      const s = scheduler();
      const spec = aSpec({ type: 'worker', command: 'echo data > file.txt; exec sleep 1000' });
      await s.start(spec);
      const dir = join(dataDir, 'apps', 'myapp');
      await eventually(() => existsSync(join(dir, 'file.txt')));

      await s.stop(spec.id);

      expect(existsSync(dir)).toBe(false);
      await expect(s.run(aRun('ls -A'))).resolves.toEqual({ exitCode: 0, output: '' });
    });
  });
});
