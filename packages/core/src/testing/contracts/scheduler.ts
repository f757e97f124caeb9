/// <reference types="jest" />
import type { BuildToRun, ContainerSpec, RunSpec, Scheduler } from '../../ports/services';

/** A scheduler opened for the contract tests, and how to release it and what it started. */
export interface OpenedScheduler {
  scheduler: Scheduler;
  close(): Promise<void>;
}

/** How the contract runs against one scheduler. */
export interface SchedulerContractSetup {
  /** Opens a scheduler; called once for the whole suite. */
  open(): Promise<OpenedScheduler>;
  /** The image the specs name (ignored by schedulers that run Procfile commands as processes). */
  image: string;
  /** A POSIX shell command that serves HTTP on `$PORT` until it is stopped. */
  listen: string;
  /**
   * Whether the scheduler really executes commands. The tests of what an executed command
   * sees and does (exit codes, output, environment, timeouts, a start that fails) are only
   * registered for those that do; test doubles get the tests of the port's bookkeeping.
   */
  executes: boolean;
  /** Longest wait for one operation, ms. Default 60000. */
  timeoutMs?: number;
  /**
   * For a scheduler that has `checkRunnable`: builds it must refuse, each with what its
   * reason must say. Absent: the scheduler must not have `checkRunnable`.
   */
  unrunnable?: UnrunnableBuild[];
}

/** A build a scheduler must refuse to run (see `SchedulerContractSetup.unrunnable`). */
export interface UnrunnableBuild {
  /** What the build is, for the test's name. */
  what: string;
  /** How it differs from a build of the setup's image with the setup's command (`listen` as `web`). */
  build: Partial<BuildToRun>;
  /** What the reason says. */
  reason: RegExp;
}

/** The exit code of a one-off command stopped by its timeout (as `timeout(1)` reports it). */
export const CONTRACT_RUN_TIMEOUT_EXIT_CODE = 124;

let sequence = 0;

/** A fresh uuid for a container of the contract tests (time, sequence and randomness: unique across test processes). */
export function contractUuid(): string {
  sequence++;
  const hex = (Date.now().toString(16) + sequence.toString(16).padStart(6, '0') + Math.random().toString(16).slice(2)).padEnd(32, '0').slice(0, 32);
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-4${hex.slice(13, 16)}-8${hex.slice(17, 20)}-${hex.slice(20, 32)}`;
}

/**
 * Registers the shared contract tests of the Scheduler port: what every scheduler (process,
 * Docker, test doubles) must do, so they cannot drift apart.
 */
export function describeSchedulerContract(label: string, setup: SchedulerContractSetup): void {
  describe(`${label}: Scheduler contract`, () => {
    const timeout = setup.timeoutMs ?? 60_000;
    let opened: OpenedScheduler | undefined;
    const started: string[] = [];
    const scheduler = (): Scheduler => {
      if (opened === undefined) throw new Error('The scheduler is only open while the suite runs');
      return opened.scheduler;
    };
    let apps = 0;
    const app = (): string => `contract-${process.pid.toString(36)}-${++apps}`;
    const spec = (overrides: Partial<ContainerSpec> = {}): ContainerSpec => {
      const appId = overrides.app ?? app();
      const made: ContainerSpec = {
        id: contractUuid(),
        app: appId,
        type: 'web',
        num: 1,
        release: 3,
        image: setup.image,
        command: setup.listen,
        workdir: null,
        env: { GREETING: 'hello world', SVC_APP: appId, SVC_RELEASE: 'v3' },
        memory: null,
        cpu: null,
        ...overrides,
      };
      started.push(made.id);
      return made;
    };
    const runSpec = (command: string, overrides: Partial<RunSpec> = {}): RunSpec => {
      const appId = overrides.app ?? app();
      return {
        app: appId,
        release: 3,
        image: setup.image,
        workdir: null,
        command,
        env: { GREETING: 'hello world', SVC_APP: appId, SVC_RELEASE: 'v3' },
        timeoutSeconds: 30,
        outputLimitBytes: 64 * 1024,
        ...overrides,
      };
    };

    beforeAll(async () => {
      opened = await setup.open();
    }, timeout);

    // What a test started goes with it, failed or not: the next one starts on a clean backend.
    afterEach(async () => {
      if (opened === undefined) return;
      for (const id of started.splice(0)) await opened.scheduler.stop(id).catch(() => undefined);
    }, timeout);

    afterAll(async () => {
      await opened?.close();
    }, timeout);

    it('start resolves with up for a web command that listens on PORT, and states reports it', async () => {
      const s = spec();
      await expect(scheduler().start(s)).resolves.toBe('up');
      await expect(scheduler().states([s.id])).resolves.toEqual(new Map([[s.id, 'up']]));
      await scheduler().stop(s.id);
    }, timeout);

    it('start resolves with up for another type that keeps running', async () => {
      const s = spec({ type: 'worker', num: 2 });
      await expect(scheduler().start(s)).resolves.toBe('up');
      await expect(scheduler().states([s.id])).resolves.toEqual(new Map([[s.id, 'up']]));
      await scheduler().stop(s.id);
    }, timeout);

    it('states leaves unknown ids out', async () => {
      const s = spec();
      await scheduler().start(s);
      const states = await scheduler().states([contractUuid(), s.id, contractUuid()]);
      expect([...states.keys()]).toEqual([s.id]);
      await scheduler().stop(s.id);
    }, timeout);

    it('stop removes the container from the states; stopping it again or stopping an unknown id is fine', async () => {
      const s = spec();
      await scheduler().start(s);
      await scheduler().stop(s.id);
      await expect(scheduler().states([s.id])).resolves.toEqual(new Map());
      await expect(scheduler().stop(s.id)).resolves.toBeUndefined();
      await expect(scheduler().stop(contractUuid())).resolves.toBeUndefined();
    }, timeout);

    // That the first process is gone (one answers, not two) is the scenario `restart` of describeSchedulerScenarios.
    it('starting a known id again resolves with up, and states reports that id up', async () => {
      const s = spec();
      await scheduler().start(s);
      await expect(scheduler().start({ ...s, release: 4 })).resolves.toBe('up');
      await expect(scheduler().states([s.id])).resolves.toEqual(new Map([[s.id, 'up']]));
      await scheduler().stop(s.id);
    }, timeout);

    const build = (overrides: Partial<BuildToRun> = {}): BuildToRun => ({
      app: app(),
      release: 3,
      image: setup.image,
      workdir: null,
      procfile: { web: setup.listen },
      ...overrides,
    });

    const unrunnable = setup.unrunnable;
    if (unrunnable === undefined) {
      it('has no checkRunnable (the setup names no build it refuses)', () => {
        expect(scheduler().checkRunnable).toBeUndefined();
      });
    } else {
      it('checkRunnable answers null for a build of the image and command it runs', async () => {
        expect(scheduler().checkRunnable).toBeInstanceOf(Function);
        await expect(scheduler().checkRunnable?.(build())).resolves.toBeNull();
      }, timeout);

      for (const { what, build: differs, reason } of unrunnable) {
        it(`checkRunnable refuses ${what} with the reason`, async () => {
          const answer = await scheduler().checkRunnable?.(build(differs));
          expect(answer).toEqual(expect.stringMatching(reason));
        }, timeout);
      }
    }

    // The shape only: a scheduler that executes nothing has no output to show. Those that
    // execute are held to the command's own exit code and output below.
    it('run resolves with an integer exit code and the output as text', async () => {
      const result = await scheduler().run(runSpec('echo contract'));
      expect(Number.isInteger(result.exitCode)).toBe(true);
      expect(typeof result.output).toBe('string');
    }, timeout);

    if (!setup.executes) return;

    it('a web command that exits before it listens fails the start with a reason, and is not kept', async () => {
      const s = spec({ command: 'echo giving up; exit 3' });
      const failure = await scheduler()
        .start(s)
        .then(
          () => null,
          (error: unknown) => error,
        );
      expect(failure).toBeInstanceOf(Error);
      expect((failure as Error).message).not.toBe('');
      await expect(scheduler().states([s.id])).resolves.toEqual(new Map());
    }, timeout);

    it("run reports the command's exit code and its stdout and stderr", async () => {
      const result = await scheduler().run(runSpec('echo to-stdout; echo to-stderr >&2; exit 7'));
      expect(result.exitCode).toBe(7);
      expect(result.output).toContain('to-stdout');
      expect(result.output).toContain('to-stderr');
    }, timeout);

    it('run gives the command the config values, SVC_APP, SVC_RELEASE and a PORT', async () => {
      const r = runSpec('echo "[$GREETING] [$SVC_APP] [$SVC_RELEASE] [$PORT]"');
      const result = await scheduler().run(r);
      expect(result.exitCode).toBe(0);
      expect(result.output).toMatch(new RegExp(`\\[hello world\\] \\[${r.app}\\] \\[v3\\] \\[[0-9]+\\]`));
    }, timeout);

    it('a started container has the config values, SVC_APP, SVC_RELEASE and PORT in its environment', async () => {
      // The command only listens when its environment is right: a wrong one fails the start.
      const s = spec({ command: `test "$GREETING" = "hello world" && test -n "$SVC_APP" && test "$SVC_RELEASE" = v3 && test -n "$PORT" && ${setup.listen}` });
      await expect(scheduler().start(s)).resolves.toBe('up');
      await scheduler().stop(s.id);
    }, timeout);

    it(`run stops a command at its timeout and reports ${CONTRACT_RUN_TIMEOUT_EXIT_CODE}`, async () => {
      const began = Date.now();
      const result = await scheduler().run(runSpec('echo begun; sleep 60', { timeoutSeconds: 1 }));
      expect(result.exitCode).toBe(CONTRACT_RUN_TIMEOUT_EXIT_CODE);
      expect(result.output).toContain('begun');
      expect(Date.now() - began).toBeLessThan(45_000);
    }, timeout);

    it('run caps the output at the limit', async () => {
      const result = await scheduler().run(runSpec('i=0; while [ $i -lt 3000 ]; do echo 0123456789abcdef; i=$((i+1)); done', { outputLimitBytes: 2048 }));
      expect(Buffer.byteLength(result.output)).toBeLessThanOrEqual(2048);
      expect(result.output).toContain('0123456789abcdef');
    }, timeout);
  });
}
