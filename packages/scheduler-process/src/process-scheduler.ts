import { randomUUID } from 'node:crypto';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { BatchedLogWriter, formatBytes, memoryLimitBytes, type Clock, type ContainerSpec, type ContainerState, type RunResult, type RunSpec, type Scheduler } from '@svc/core';
import { formatSeconds, niceForCpuShares } from './limits';
import { CappedOutput, LineSplitter, OutputTail } from './output';
import { PortAllocator, portIsFree } from './ports';
import { groupMembers, groupResidentBytes, procAvailable, readStat } from './proc';
import {
  describeExit,
  exitCodeOf,
  signalGroup,
  spawnGroup,
  terminateGroup,
  waitForGroupGone,
  waitUntilGone,
  type ExitStatus,
  type ProcessGroup,
} from './process-group';
import { ProcessRecords, type ProcessRecord } from './records';
import { acceptsConnections, healthcheckUrl, httpStatus } from './readiness';
import { AppUsers, type Confinement, type LentUser } from './app-users';
import { LoopbackFirewall } from './egress';
import { APP_MOUNT, SANDBOX_PATH, Sandbox, type SandboxedCommand } from './sandbox';
import type { BackoffOptions, Endpoint, ProcessSchedulerOptions, SandboxStatus } from './scheduler-options';
import { outOfMemory, processCgroup, removeWhenGone, type ProcessCgroup } from './container-limits';

/** The source of the lines the scheduler itself writes to an app's log. */
export const SCHEDULER_LOG_SOURCE = 'svc[scheduler]';

/** The exit code reported for a one-off command stopped by its timeout (as `timeout(1)` does). */
export const RUN_TIMEOUT_EXIT_CODE = 124;

export type { BackoffOptions, Endpoint, ProcessSchedulerOptions, SandboxStatus } from './scheduler-options';

/** One supervised container. */
interface Supervised {
  readonly spec: ContainerSpec;
  /** `web.1 (v3)`: how the scheduler's log lines name it. */
  readonly label: string;
  readonly memoryLimit: number | null;
  cwd: string | null;
  port: number | null;
  state: ContainerState;
  group: ProcessGroup | null;
  launch: Promise<void> | null;
  stopping: boolean;
  stopped: Promise<void> | null;
  upSince: number | null;
  /** Crashes in a row, for the back-off. */
  failures: number;
  restartTimer: NodeJS.Timeout | null;
  /** Why the scheduler killed the current process (memory), to report instead of the signal. */
  killedFor: string | null;
  /** The last lines of the current process's output, for the reason of a failure. */
  readonly tail: OutputTail;
  forgotten: boolean;
  /** The app's user and its /etc files, once it has them (sandboxed only). */
  confinement: Confinement | null;
  /** The cgroup of the current process (sandboxed only): its memory, CPU and process limits. */
  cgroup: ProcessCgroup | null;
}

/** One one-off command being run. */
interface OneOff {
  readonly id: string;
  readonly app: string;
  readonly ownDirectory: boolean;
  group: ProcessGroup | null;
}

/** The process could not be created at all (as opposed to exiting or not becoming ready). */
class SpawnFailed extends Error {}

const APP_ID = /^[a-z0-9]+(-[a-z0-9]+)*$/;
const sleep = (ms: number): Promise<void> => new Promise((done) => setTimeout(done, ms));
const messageOf = (error: unknown): string => (error instanceof Error && error.message ? error.message : String(error));
const systemClock: Clock = { now: () => new Date() };

/**
 * A scheduler that runs each container as a supervised operating-system process: the
 * process type's command from the build's Procfile, under `sh -c`, in its own process group,
 * with the release's environment and a PORT of its own. It restarts crashed processes with
 * exponential back-off, kills processes over their memory limit, and writes every line they
 * print to the app's log.
 */
export class ProcessScheduler implements Scheduler {
  private readonly containers = new Map<string, Supervised>();
  private readonly runs = new Map<string, OneOff>();
  private readonly ports: PortAllocator;
  private readonly records: ProcessRecords;
  private readonly log: BatchedLogWriter;
  private readonly appsDir: string;
  private readonly host: string;
  private readonly startTimeoutMs: number;
  private readonly settleMs: number;
  private readonly stopTimeoutMs: number;
  private readonly backoff: Required<BackoffOptions>;
  private readonly memoryPollMs: number;
  private readonly probeIntervalMs: number;
  private readonly baseEnvironment: Record<string, string>;
  private readonly canMeasure = procAvailable();
  private memoryTimer: NodeJS.Timeout | null = null;
  private measuring = false;
  private closing: Promise<void> | null = null;
  private readonly sandbox: Sandbox | null;
  private readonly sandboxHint: string;
  private readonly firewall: LoopbackFirewall | null;
  private preparing: Promise<SandboxStatus> | null = null;
  private readonly users: AppUsers;
  private firewallInstalled = false;

  constructor(options: ProcessSchedulerOptions) {
    const dataDir = resolve(options.dataDir);
    this.appsDir = join(dataDir, 'apps');
    this.records = new ProcessRecords(join(dataDir, 'processes'));
    this.log = new BatchedLogWriter(options.logs, options.clock ?? systemClock);
    this.ports = new PortAllocator(options.portRange ?? { from: 20000, to: 29999 });
    this.host = options.host ?? '127.0.0.1';
    this.startTimeoutMs = options.startTimeoutMs ?? 30_000;
    this.settleMs = options.settleMs ?? 1000;
    this.stopTimeoutMs = options.stopTimeoutMs ?? 10_000;
    this.backoff = {
      initialMs: options.backoff?.initialMs ?? 1000,
      maxMs: options.backoff?.maxMs ?? 60_000,
      resetAfterMs: options.backoff?.resetAfterMs ?? 60_000,
    };
    this.memoryPollMs = options.memoryPollMs ?? 1000;
    this.probeIntervalMs = options.probeIntervalMs ?? 100;
    this.sandbox = options.sandbox === null ? null : new Sandbox(join(dataDir, 'sandbox'), options.sandbox);
    this.sandboxHint = options.sandboxHint ?? '';
    this.users = new AppUsers(this.sandbox, () => this.runningApps());
    this.firewall = this.sandbox === null ? null : new LoopbackFirewall(this.sandbox.range, this.sandbox.buildGroup);
    this.baseEnvironment = options.baseEnvironment ?? { PATH: this.sandbox !== null ? SANDBOX_PATH : (process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin') };
  }

  /**
   * Sets up the confinement of apps once: checks that the sandbox works on this machine and
   * installs the rules that keep apps off this machine's addresses, except `allowLocalPorts`
   * (the router's; they may be given as a promise, for ports bound after this call), and from
   * answering on `controllerPorts` (the API's, the router's and the git server's) on any
   * address. Call it
   * before starting any process; `start` and `run` call it (with no port) when it was not
   * called, and wait for it when it was. When the
   * sandbox is wanted and unavailable, the status says why, and every `start` and `run`
   * rejects with that reason: no app code runs unconfined unless the sandbox option is null.
   */
  prepare(allowLocalPorts: number[] | Promise<number[]> = [], controllerPorts: number[] | Promise<number[]> = []): Promise<SandboxStatus> {
    this.preparing ??= (async (): Promise<SandboxStatus> => {
      if (this.sandbox === null || this.firewall === null) return { mode: 'off', problem: null };
      const hint = this.sandboxHint ? `. ${this.sandboxHint}` : '';
      const problem = await this.sandbox.problem();
      const ports = await allowLocalPorts;
      const ownPorts = await controllerPorts;
      if (problem !== null) return { mode: 'unavailable', problem: `apps cannot run: the sandbox is unavailable: ${problem}${hint}` };
      await this.sandbox.cgroups.removeLeftovers();
      try {
        await this.firewall.install(ports, ownPorts);
        this.firewallInstalled = true;
        // A shutdown meanwhile found no rules to take away.
        if (this.closing !== null) await this.firewall.remove();
      } catch (error) {
        await this.firewall.remove().catch(() => undefined);
        return { mode: 'unavailable', problem: `apps cannot run: their network rules cannot be installed: ${messageOf(error)}${hint}` };
      }
      return { mode: 'on', problem: null };
    })();
    return this.preparing;
  }

  /** @throws Error with the reason when apps cannot be confined as they must. */
  private async assertConfinable(): Promise<void> {
    const status = await this.prepare();
    if (status.problem !== null) throw new Error(status.problem);
  }

  /** The apps something of which runs: a process (not yet forgotten) or a one-off command. */
  private runningApps(): Set<string> {
    const running = new Set([...this.containers.values()].filter((c) => !c.forgotten).map((c) => c.spec.app));
    for (const r of this.runs.values()) running.add(r.app);
    return running;
  }

  /**
   * Lends the app's user to a build of its code (ProcessSourceCompiler), so that the build
   * runs as exactly the user its processes will run as: the app's uid (given now when it has
   * none), its /etc files and the sandbox to run build steps in. Until `release` the uid stays
   * the app's and the app's processes are not swept; `release` sweeps them when nothing else
   * of the app runs. Without a sandbox, the user is null (builds run unconfined, as apps do).
   * @throws Error with the reason when apps cannot be confined as they must, or the scheduler is shutting down.
   */
  async lendUser(app: string): Promise<LentUser> {
    this.assertOpen();
    await this.assertConfinable();
    this.assertOpen();
    return this.users.lend(app);
  }

  /**
   * Starts the container's process and resolves with `up` once it is: a `web` process when
   * its PORT accepts connections (or its HEALTHCHECK_URL answers 2xx), another type once it
   * has kept running for a moment. A type without a command (an image build) resolves with
   * `crashed` and says why in the app's log. Starting a known id restarts it.
   * @throws Error with the reason when the process exits or is not up in time; nothing of it keeps running then.
   */
  async start(spec: ContainerSpec): Promise<ContainerState> {
    this.assertOpen();
    if (spec.command !== null) await this.assertConfinable();
    if (this.containers.has(spec.id)) await this.stop(spec.id);
    this.assertOpen();
    const container: Supervised = {
      spec,
      label: `${spec.type}.${spec.num} (v${spec.release})`,
      memoryLimit: memoryLimitBytes(spec.memory),
      cwd: null,
      port: null,
      state: 'created',
      group: null,
      launch: null,
      stopping: false,
      stopped: null,
      upSince: null,
      failures: 0,
      restartTimer: null,
      killedFor: null,
      tail: new OutputTail(),
      forgotten: false,
      confinement: null,
      cgroup: null,
    };
    if (spec.command === null) {
      container.state = 'crashed';
      this.containers.set(spec.id, container);
      this.event(
        spec.app,
        `${container.label} cannot run: the build has no command for the process type ${spec.type} (an image build). ` +
          'Image builds need a container scheduler; this scheduler runs the commands of a Procfile as processes.',
      );
      return container.state;
    }
    this.containers.set(spec.id, container);
    try {
      container.cwd = await this.workdir(spec.app, spec.workdir);
      container.confinement = await this.users.confine(spec.app, container.cwd);
      if (container.stopping) throw new Error('it was stopped before it was up');
      const port = await this.ports.allocate();
      if (container.forgotten) {
        // Stopped while the port was being chosen: the stop has already cleaned up without it.
        this.ports.release(port);
        throw new Error('it was stopped before it was up');
      }
      container.port = port;
      if (container.memoryLimit !== null && !this.canMeasure) {
        this.event(spec.app, `${container.label}: the memory limit ${spec.memory ?? ''} cannot be enforced on this system (no /proc)`);
      }
      container.launch = this.launch(container);
      await container.launch;
    } catch (error) {
      const reason = messageOf(error);
      if (!container.stopping) this.event(spec.app, `${container.label} did not start: ${reason}`);
      await this.forget(container);
      throw new Error(reason);
    } finally {
      container.launch = null;
    }
    return container.state;
  }

  /** Stops the container's process group (SIGTERM, then SIGKILL after the stop timeout) and forgets it; unknown ids are fine. */
  async stop(id: string): Promise<void> {
    const container = this.containers.get(id);
    if (!container) return;
    container.stopped ??= this.halt(container, 'stopped');
    await container.stopped;
  }

  /**
   * Runs a one-off command with the release's environment and a PORT, and waits for it.
   * Output (stdout and stderr as they arrive) is capped at the spec's limit; a command still
   * running at its timeout is killed and reported with exit code 124.
   * @throws Error when the command cannot be started.
   */
  async run(spec: RunSpec): Promise<RunResult> {
    this.assertOpen();
    await this.assertConfinable();
    this.assertOpen();
    const oneOff: OneOff = { id: `run-${randomUUID()}`, app: spec.app, ownDirectory: spec.workdir === null, group: null };
    this.runs.set(oneOff.id, oneOff);
    let port: number | null = null;
    let cgroup: ProcessCgroup | null = null;
    let group: ProcessGroup | null = null;
    try {
      const cwd = await this.workdir(spec.app, spec.workdir);
      const confinement = await this.users.confine(spec.app, cwd);
      port = await this.ports.allocate();
      const output = new CappedOutput(spec.outputLimitBytes);
      cgroup = await processCgroup(this.sandbox, 'run', null, null);
      group = await spawnGroup({
        command: spec.command,
        cwd,
        env: this.environment(spec.env, cwd, port),
        nice: 0,
        onOutput: (chunk) => output.push(chunk),
        sandboxed: this.sandboxed(spec.app, confinement, cwd, spec.command, 0, cgroup),
      });
      const started = group;
      oneOff.group = started;
      await this.record(oneOff.id, spec.app, 'run', started);
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        void terminateGroup(started, 2000);
      }, spec.timeoutSeconds * 1000);
      const status = await started.exited;
      clearTimeout(timer);
      await this.drain(started);
      const oom = await outOfMemory(cgroup);
      await cgroup?.cgroup.remove();
      const notes = timedOut ? [`killed after the timeout of ${spec.timeoutSeconds} s`] : oom !== null ? [`a process ${oom}`] : [];
      return { exitCode: timedOut ? RUN_TIMEOUT_EXIT_CODE : exitCodeOf(status), output: output.text(notes) };
    } finally {
      removeWhenGone(cgroup, group);
      if (port !== null) this.ports.release(port);
      this.records.remove(oneOff.id);
      this.runs.delete(oneOff.id);
      if (oneOff.ownDirectory) await this.removeWorkdirIfUnused(spec.app);
      await this.users.sweep(spec.app);
    }
  }

  /** The current state of each known container; unknown ids are left out. */
  async states(ids: string[]): Promise<Map<string, ContainerState>> {
    const states = new Map<string, ContainerState>();
    for (const id of ids) {
      const container = this.containers.get(id);
      if (container) states.set(id, container.state);
    }
    return states;
  }

  /** Where the `up` processes of one process type of an app listen, in container number order. */
  endpoints(app: string, type: string): Endpoint[] {
    return [...this.containers.values()]
      .filter((c) => c.spec.app === app && c.spec.type === type && c.state === 'up' && c.port !== null)
      .sort((a, b) => a.spec.num - b.spec.num)
      .map((c) => ({ host: this.host, port: c.port as number, id: c.spec.id }));
  }

  /**
   * Stops every process (SIGTERM to all groups at once, SIGKILL to those still there after
   * the stop timeout) and refuses new work; resolves once they are gone and their log lines
   * are written. Calling it again returns the same promise.
   */
  shutdown(): Promise<void> {
    this.closing ??= (async () => {
      if (this.memoryTimer !== null) clearInterval(this.memoryTimer);
      this.memoryTimer = null;
      const halts = [...this.containers.values()].map((c) => (c.stopped ??= this.halt(c, 'stopped: the controller is shutting down')));
      const runs = [...this.runs.values()].map((r) => (r.group ? terminateGroup(r.group, this.stopTimeoutMs) : Promise.resolve()));
      await Promise.all([...halts, ...runs]);
      await this.sandbox?.cgroups.removeAll().catch(() => undefined);
      if (this.firewallInstalled) await this.firewall?.remove().catch(() => undefined);
      await this.log.flush();
    })();
    return this.closing;
  }

  /**
   * Stops the process groups an earlier controller process left running (it crashed or was
   * killed before it could stop them), as recorded under the data directory, and resolves
   * with how many it stopped. Call it at start-up, before starting containers again.
   */
  async reapOrphans(): Promise<number> {
    let reaped = 0;
    const records = this.records.list().filter((r) => !this.containers.has(r.id) && !this.runs.has(r.id));
    await Promise.all(
      records.map(async (record) => {
        if (await this.isLeftover(record)) {
          signalGroup(record.pid, 'SIGTERM');
          if (!(await waitForGroupGone(record.pid, this.stopTimeoutMs))) {
            signalGroup(record.pid, 'SIGKILL');
            await waitForGroupGone(record.pid, 2000);
          }
          reaped++;
          this.event(record.app, `${record.name}: stopped process group ${record.pid}, left running by an earlier controller process`);
        }
        this.records.remove(record.id);
      }),
    );
    await this.log.flush();
    return reaped;
  }

  private assertOpen(): void {
    if (this.closing !== null) throw new Error('the scheduler is shutting down');
  }

  /** Spawns the container's process and waits until it is up; on failure nothing of it keeps running. */
  private async launch(container: Supervised): Promise<void> {
    container.state = 'created';
    container.killedFor = null;
    container.tail.clear();
    try {
      const group = await this.spawn(container);
      await this.waitUntilUp(container, group);
      container.state = 'up';
      container.upSince = Date.now();
      const where = container.spec.type === 'web' ? ` on port ${container.port}` : '';
      this.event(container.spec.app, `${container.label} is up${where}`);
      // It may have exited in the instant between the last check and now: that is a crash.
      const status = group.exitStatus();
      if (status !== null) this.exited(container, group, status);
    } catch (error) {
      const group = container.group;
      container.group = null;
      if (group) {
        await terminateGroup(group, this.stopTimeoutMs);
        this.records.remove(container.spec.id);
      }
      removeWhenGone(container.cgroup, null);
      container.cgroup = null;
      throw error;
    }
  }

  private async spawn(container: Supervised): Promise<ProcessGroup> {
    const { spec } = container;
    const source = `${spec.app}[${spec.type}.${spec.num}]`;
    const lines = { stdout: new LineSplitter(), stderr: new LineSplitter() };
    const emit = (line: string): void => {
      container.tail.push(line);
      this.log.write(spec.app, source, line);
    };
    let group: ProcessGroup;
    const cgroup = await processCgroup(this.sandbox, 'ctr', container.memoryLimit, spec.cpu).catch((error: unknown) => {
      throw new SpawnFailed(`its cgroup could not be made: ${messageOf(error)}`);
    });
    try {
      group = await spawnGroup({
        command: spec.command as string,
        cwd: container.cwd as string,
        env: this.environment(spec.env, container.cwd as string, container.port as number),
        nice: niceForCpuShares(spec.cpu),
        onOutput: (chunk, stream) => lines[stream].push(chunk).forEach(emit),
        sandboxed: this.sandboxed(spec.app, container.confinement, container.cwd as string, spec.command as string, niceForCpuShares(spec.cpu), cgroup),
      });
    } catch (error) {
      removeWhenGone(cgroup, null);
      throw new SpawnFailed(`it could not be started: ${messageOf(error)}`);
    }
    container.cgroup = cgroup;
    void group.outputClosed.then(() => [...lines.stdout.end(), ...lines.stderr.end()].forEach(emit));
    container.group = group;
    void group.exited.then((status) => this.exited(container, group, status));
    await this.record(spec.id, spec.app, `${spec.type}.${spec.num}`, group);
    // In a sandbox the kernel holds the process to its memory limit (its cgroup's); the watch sees its kills.
    if (container.memoryLimit !== null || container.cgroup !== null) this.watchMemory();
    if (container.stopping) throw new Error('it was stopped before it was up');
    return group;
  }

  private async record(id: string, app: string, name: string, group: ProcessGroup): Promise<void> {
    const startTime = this.canMeasure ? ((await readStat(group.pid))?.startTime ?? null) : null;
    try {
      this.records.write({ id, app, name, pid: group.pid, startTime });
    } catch {
      // Without the record only the clean-up after a controller crash is lost, not the process.
    }
  }

  private startTimeout(spec: ContainerSpec): number {
    const own = Number(spec.env.HEALTHCHECK_TIMEOUT);
    return Number.isFinite(own) && own > 0 ? Math.min(own * 1000, this.startTimeoutMs) : this.startTimeoutMs;
  }

  private async waitUntilUp(container: Supervised, group: ProcessGroup): Promise<void> {
    const { spec } = container;
    const port = container.port as number;
    const failed = async (): Promise<Error | null> => {
      if (container.stopping) return new Error('it was stopped before it was up');
      const status = group.exitStatus();
      if (status === null) return null;
      // Its last lines may still be in the pipes.
      await Promise.race([group.outputClosed, sleep(500)]);
      const oom = await outOfMemory(container.cgroup);
      return new Error(`it ${oom ?? container.killedFor ?? describeExit(status)} before it was up${this.lastOutput(container)}`);
    };
    if (spec.type !== 'web') {
      await Promise.race([group.exited, sleep(this.settleMs)]);
      const failure = await failed();
      if (failure) throw failure;
      return;
    }
    const timeoutMs = this.startTimeout(spec);
    const deadline = Date.now() + timeoutMs;
    const health = healthcheckUrl(spec.env.HEALTHCHECK_URL, this.host, port);
    let lastAnswer = 'no answer';
    for (;;) {
      const failure = await failed();
      if (failure) throw failure;
      const wait = Math.max(100, Math.min(2000, deadline - Date.now()));
      if (health !== null) {
        const status = await httpStatus(health, wait);
        if (status !== null && status >= 200 && status < 300) return;
        lastAnswer = status === null ? 'no answer' : `status ${status}`;
      } else if (await acceptsConnections(this.host, port, wait)) {
        return;
      }
      if (Date.now() >= deadline) break;
      await Promise.race([group.exited, sleep(this.probeIntervalMs)]);
    }
    const failure = await failed();
    if (failure) throw failure;
    const within = formatSeconds(timeoutMs);
    throw new Error(
      health !== null
        ? `HEALTHCHECK_URL ${new URL(health).pathname} did not answer 2xx within ${within} (last: ${lastAnswer})${this.lastOutput(container)}`
        : `it did not accept connections on port ${port} within ${within}${this.lastOutput(container)}`,
    );
  }

  /** The last lines of output of a process that did not start (up to 20), or that crashed (one: the log has the rest). */
  private lastOutput(container: Supervised, lines?: number): string {
    return container.tail.note(lines);
  }

  /** The leader of a container's process group exited. */
  private exited(container: Supervised, group: ProcessGroup, status: ExitStatus): void {
    // A start in progress and a stop report the exit themselves.
    if (container.group !== group || container.state !== 'up' || container.stopping || this.closing !== null) return;
    container.group = null;
    this.records.remove(container.spec.id);
    // Whatever the shell started goes with it before the process type starts again.
    group.signal('SIGKILL');
    const cgroup = container.cgroup;
    container.cgroup = null;
    const killedFor = container.killedFor;
    // Until the reason is read the container is no longer up: a stop meanwhile reports itself.
    container.state = 'crashed';
    void outOfMemory(cgroup)
      .catch(() => null)
      .then((oom) => {
        removeWhenGone(cgroup, group);
        if (container.stopping || this.closing !== null || container.forgotten) return;
        this.crashed(container, `it ${oom ?? killedFor ?? describeExit(status)}${this.lastOutput(container, 1)}`, 'crashed');
      });
  }

  /** Records a failure and schedules the next start after the back-off. */
  private crashed(container: Supervised, reason: string, state: 'crashed' | 'error'): void {
    const now = Date.now();
    if (container.upSince !== null && now - container.upSince >= this.backoff.resetAfterMs) container.failures = 0;
    container.upSince = null;
    const delay = Math.min(this.backoff.maxMs, this.backoff.initialMs * 2 ** container.failures);
    container.failures++;
    container.state = state;
    this.event(container.spec.app, `${container.label} ${state === 'error' ? 'failed' : 'crashed'}: ${reason}; starting it again in ${formatSeconds(delay)}`);
    container.restartTimer = setTimeout(() => void this.restart(container), delay);
    container.restartTimer.unref();
  }

  private async restart(container: Supervised): Promise<void> {
    container.restartTimer = null;
    if (container.stopping || this.closing !== null) return;
    try {
      // Another program may have taken the port while this one was down.
      if (container.port !== null && !(await portIsFree(container.port))) {
        // A stop meanwhile has given the port back already.
        if (container.stopping) return;
        this.ports.release(container.port);
        container.port = null;
        const port = await this.ports.allocate();
        if (container.forgotten) {
          this.ports.release(port);
          return;
        }
        container.port = port;
      }
      if (container.stopping || this.closing !== null) return;
      container.launch = this.launch(container);
      await container.launch;
    } catch (error) {
      if (container.stopping || this.closing !== null) return;
      this.crashed(container, messageOf(error), error instanceof SpawnFailed ? 'error' : 'crashed');
    } finally {
      container.launch = null;
    }
  }

  /** Stops a container for good: no restart, its group terminated, then forgotten. */
  private async halt(container: Supervised, what: string): Promise<void> {
    container.stopping = true;
    if (container.restartTimer !== null) clearTimeout(container.restartTimer);
    container.restartTimer = null;
    const wasRunning = container.group !== null || container.launch !== null;
    container.state = 'down';
    const group = container.group;
    if (group) {
      await terminateGroup(group, this.stopTimeoutMs);
      // Its last lines reach the log before the stop is reported.
      await Promise.race([group.outputClosed, sleep(1000)]);
    }
    if (container.launch === null) {
      removeWhenGone(container.cgroup, null);
      container.cgroup = null;
    }
    // A start in progress notices the stop, cleans up after itself and fails.
    if (container.launch) await container.launch.catch(() => undefined);
    if (wasRunning) this.event(container.spec.app, `${container.label} ${what}`);
    await this.forget(container);
    // The container's last lines are in the log before the stop returns (an app deleted next
    // removes its log, which a late write would create again).
    await this.log.flushApp(container.spec.app);
  }

  /** Drops every trace of a container: entry, port, record, and the app's directory when nothing else uses it. */
  private async forget(container: Supervised): Promise<void> {
    if (container.forgotten) return;
    container.forgotten = true;
    container.state = 'destroyed';
    if (this.containers.get(container.spec.id) === container) this.containers.delete(container.spec.id);
    if (container.port !== null) this.ports.release(container.port);
    this.records.remove(container.spec.id);
    if (container.spec.workdir === null) await this.removeWorkdirIfUnused(container.spec.app);
    await this.users.sweep(container.spec.app);
  }

  /** Waits for the output of a finished one-off command, then kills anything of it still running. */
  private async drain(group: ProcessGroup): Promise<void> {
    const closed = await Promise.race([group.outputClosed.then(() => true), sleep(500).then(() => false)]);
    if (await group.alive()) {
      group.signal('SIGKILL');
      await waitUntilGone(group, 2000);
    }
    // A process outside the group (it changed its session) may still hold the pipes.
    if (!closed && !(await Promise.race([group.outputClosed.then(() => true), sleep(1000).then(() => false)]))) group.detachOutput();
  }

  private environment(env: Record<string, string>, cwd: string, port: number): Record<string, string> {
    return { ...this.baseEnvironment, HOME: this.sandbox === null ? cwd : APP_MOUNT, ...env, PORT: String(port) };
  }

  /** The sandbox command line of a process, or null when apps run unconfined. */
  private sandboxed(app: string, confinement: Confinement | null, cwd: string, command: string, nice: number, cgroup: ProcessCgroup | null): SandboxedCommand | null {
    if (this.sandbox === null) return null;
    if (confinement === null) throw new Error('the app has no user of its own');
    return this.sandbox.command({ app, uid: confinement.uid, hostDir: cwd, command, nice, etcDir: confinement.etcDir, cgroupProcs: cgroup?.cgroup.procsFiles ?? [] });
  }

  /** The working directory: the build's, which must exist, or the app's own, created empty when the app has no process yet. */
  private async workdir(app: string, given: string | null): Promise<string> {
    if (given !== null) {
      const info = await stat(given).catch(() => null);
      if (!info?.isDirectory()) throw new Error(`the build's working directory ${given} does not exist`);
      return given;
    }
    if (!APP_ID.test(app)) throw new Error(`unusable app id "${app}"`);
    const dir = join(this.appsDir, app);
    if (this.usesOwnDirectory(app, 1)) await rm(dir, { recursive: true, force: true });
    await mkdir(dir, { recursive: true });
    return dir;
  }

  /** Whether at most `allowed` containers and one-off commands of the app use its own directory. */
  private usesOwnDirectory(app: string, allowed: number): boolean {
    let users = 0;
    for (const c of this.containers.values()) if (c.spec.app === app && c.spec.workdir === null && !c.forgotten) users++;
    for (const r of this.runs.values()) if (r.app === app && r.ownDirectory) users++;
    return users <= allowed;
  }

  private async removeWorkdirIfUnused(app: string): Promise<void> {
    if (!APP_ID.test(app) || !this.usesOwnDirectory(app, 0)) return;
    await rm(join(this.appsDir, app), { recursive: true, force: true }).catch(() => undefined);
  }

  private async isLeftover(record: ProcessRecord): Promise<boolean> {
    if (!this.canMeasure) return false;
    const leader = await readStat(record.pid);
    if (leader !== null) return record.startTime !== null && leader.startTime === record.startTime && leader.pgid === record.pid;
    // The leader is gone but members of its group may remain; a group id is never reused while the group exists.
    return ((await groupMembers(new Set([record.pid]))).get(record.pid)?.length ?? 0) > 0;
  }

  private watchMemory(): void {
    if (this.memoryTimer !== null || !this.canMeasure || this.closing !== null) return;
    this.memoryTimer = setInterval(() => void this.measureMemory(), this.memoryPollMs);
    this.memoryTimer.unref();
  }

  /**
   * Kills a container over its memory: one whose cgroup saw the kernel kill a process for want
   * of memory (the rest of it goes too, as on an engine), or one without a cgroup (unconfined)
   * whose processes hold more than its limit.
   */
  private async measureMemory(): Promise<void> {
    if (this.measuring) return;
    const watched = [...this.containers.values()].filter((c) => (c.memoryLimit !== null || c.cgroup !== null) && c.group !== null && !c.stopping && c.killedFor === null);
    if (watched.length === 0) {
      if (this.memoryTimer !== null) clearInterval(this.memoryTimer);
      this.memoryTimer = null;
      return;
    }
    this.measuring = true;
    try {
      const plain = watched.filter((c) => c.cgroup === null);
      const totals = await groupResidentBytes(new Set(plain.map((c) => (c.group as ProcessGroup).pid)));
      for (const container of watched) {
        const group = container.group;
        if (group === null || container.stopping) continue;
        if (container.cgroup !== null) {
          const oom = await outOfMemory(container.cgroup);
          if (oom === null || container.group !== group || container.stopping) continue;
          container.killedFor = oom;
          this.event(container.spec.app, `${container.label} ran out of memory (a process of it ${oom}): killing it`);
          group.signal('SIGKILL');
          continue;
        }
        const used = totals.get(group.pid) ?? 0;
        if (container.memoryLimit === null || used <= container.memoryLimit) continue;
        container.killedFor = `exceeded its memory limit of ${container.spec.memory ?? ''} (${formatBytes(used)} resident) and was killed`;
        this.event(container.spec.app, `${container.label} is over its memory limit of ${container.spec.memory ?? ''} (${formatBytes(used)} resident): killing it`);
        group.signal('SIGKILL');
      }
    } finally {
      this.measuring = false;
    }
  }

  /** Writes a line of the scheduler's to the app's log; a message of several lines (a failure's last output) as several. */
  private event(app: string, message: string): void {
    for (const line of message.split('\n')) this.log.write(app, SCHEDULER_LOG_SOURCE, line);
  }
}
