import { join, resolve } from 'node:path';
import { runOneOff } from './one-off-run';
import {
  BatchedLogWriter,
  DEFAULT_PROBE_INTERVAL_MS,
  DEFAULT_SETTLE_MS,
  DEFAULT_START_TIMEOUT_MS,
  DEFAULT_STOP_TIMEOUT_MS,
  LineSplitter,
  SCHEDULER_LOG_SOURCE,
  endpointsOf,
  formatSeconds,
  isRoutedType,
  outputSource,
  readinessCheck,
  restartBackoff,
  startTimeoutOf,
  withProfileScripts,
  type Clock,
  type ContainerSpec,
  type ContainerState,
  type RestartBackoff,
  type RunResult,
  type RunSpec,
  type Scheduler,
} from '@svc/core';
import { sleep, waitUntilUp } from '@svc/supervisor-node';
import { niceForCpuShares } from './limits';
import { PortAllocator, portIsFree } from './ports';
import { procAvailable } from './proc';
import { describeExit, spawnGroup, terminateGroup, type ExitStatus, type ProcessGroup } from './process-group';
import { ProcessRecords } from './records';
import type { LentUser } from './app-users';
import type { Endpoint, ProcessSchedulerOptions, SandboxStatus } from './scheduler-options';
import { outOfMemory, processCgroup, removeWhenGone } from './container-limits';
import { supervised, type OneOff, type Supervised } from './supervised';
import { MemoryWatch } from './memory-watch';
import { AppDirectories } from './app-directories';
import { AppConfinement } from './confinement';
import { LeftoverGroups, recordGroup } from './leftovers';
import { imageBuildNote, processBuildProblem } from './image-builds';

export { RUN_TIMEOUT_EXIT_CODE, SCHEDULER_LOG_SOURCE } from '@svc/core';
export type { BackoffOptions, Endpoint, ProcessSchedulerOptions, SandboxStatus } from './scheduler-options';

/** The process could not be created at all (as opposed to exiting or not becoming ready). */
class SpawnFailed extends Error {}

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
  private readonly host: string;
  private readonly startTimeoutMs: number;
  private readonly settleMs: number;
  private readonly stopTimeoutMs: number;
  private readonly backoff: RestartBackoff;
  private readonly probeIntervalMs: number;
  private readonly canMeasure = procAvailable();
  private readonly memory: MemoryWatch;
  private readonly directories: AppDirectories;
  private readonly confinement: AppConfinement;
  private closing: Promise<void> | null = null;
  /** The process groups an earlier controller process left running: stopped, or held until their replacements serve. */
  readonly leftovers: LeftoverGroups;
  /** Before a rollback: an image build (no Procfile command) or a pushed build whose checkout is gone is refused with the reason. */
  readonly checkRunnable: NonNullable<Scheduler['checkRunnable']> = processBuildProblem;

  constructor(options: ProcessSchedulerOptions) {
    const dataDir = resolve(options.dataDir);
    this.records = new ProcessRecords(join(dataDir, 'processes'));
    this.log = new BatchedLogWriter(options.logs, options.clock ?? systemClock);
    this.ports = new PortAllocator(options.portRange ?? { from: 20000, to: 29999 });
    this.host = options.host ?? '127.0.0.1';
    this.startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    this.settleMs = options.settleMs ?? DEFAULT_SETTLE_MS;
    this.stopTimeoutMs = options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS;
    this.backoff = restartBackoff(options.backoff);
    this.probeIntervalMs = options.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS;
    this.memory = new MemoryWatch(options.memoryPollMs ?? 1000, this.canMeasure, () => this.containers.values(), (app, message) => this.event(app, message));
    this.directories = new AppDirectories(join(dataDir, 'apps'), (app) => this.ownDirectoryUsers(app));
    this.leftovers = new LeftoverGroups(this.records, { canMeasure: this.canMeasure, stopTimeoutMs: this.stopTimeoutMs, outputDirectory: join(dataDir, 'output'), memoryPollMs: options.memoryPollMs ?? 1000 }, {
      owned: (id) => this.containers.has(id) || this.runs.has(id),
      write: (app, source, line) => this.log.write(app, source, line),
      flush: () => this.log.flush(),
      sweep: (apps) => Promise.all(apps.map((app) => this.confinement.users.sweep(app))).then(() => undefined),
    });
    this.confinement = new AppConfinement(join(dataDir, 'sandbox'), options, () => this.runningApps(), () => this.closing !== null);
  }

  /**
   * Sets up the confinement of apps once: checks the sandbox works here, installs the rules that keep
   * apps off this machine's addresses but `allowLocalPorts` (the router's; a promise for ports bound
   * later) and from answering on `controllerPorts` (API, router, git) on any address. `start` and `run`
   * call it (with no port) or wait for it. When the sandbox is wanted and unavailable, the status says
   * why and every `start` and `run` rejects with it: no app code runs unconfined unless the option is null.
   */
  prepare(allowLocalPorts: number[] | Promise<number[]> = [], controllerPorts: number[] | Promise<number[]> = []): Promise<SandboxStatus> {
    return this.confinement.prepare(allowLocalPorts, controllerPorts);
  }

  /** The apps something of which runs: a process (not yet forgotten), a one-off command, a held group of an earlier controller process. */
  private runningApps(): Set<string> {
    const running = new Set([...this.containers.values()].filter((c) => !c.forgotten).map((c) => c.spec.app));
    for (const r of this.runs.values()) running.add(r.app);
    for (const app of this.leftovers.heldApps()) running.add(app);
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
    await this.confinement.assertConfinable();
    this.assertOpen();
    return this.confinement.lend(app);
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
    if (spec.command !== null) await this.confinement.assertConfinable();
    if (this.containers.has(spec.id)) await this.stop(spec.id);
    this.assertOpen();
    const container = supervised(spec, this.backoff);
    if (spec.command === null) {
      container.state = 'crashed';
      this.containers.set(spec.id, container);
      this.event(spec.app, imageBuildNote(container.label, spec.type));
      return container.state;
    }
    this.containers.set(spec.id, container);
    try {
      container.cwd = await this.directories.workdir(spec.app, spec.workdir);
      container.confinement = await this.confinement.users.confine(spec.app, container.cwd);
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
   * Runs a one-off command with the release's environment and a PORT, and waits for it
   * (runOneOff). @throws Error when the command cannot be started.
   */
  async run(spec: RunSpec): Promise<RunResult> {
    this.assertOpen();
    await this.confinement.assertConfinable();
    this.assertOpen();
    return runOneOff({ directories: this.directories, confinement: this.confinement, ports: this.ports, records: this.records, canMeasure: this.canMeasure, runs: this.runs }, spec);
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
    return endpointsOf([...this.containers.values()].map((c) => ({ spec: c.spec, state: c.state, host: this.host, port: c.port })), app, type);
  }

  /**
   * Stops every process (SIGTERM to all groups at once, SIGKILL after the stop timeout) and refuses
   * new work; resolves once they are gone and their log lines written. Calls share one promise.
   */
  shutdown(): Promise<void> {
    this.closing ??= (async () => {
      this.memory.stop();
      const halts = [...this.containers.values()].map((c) => (c.stopped ??= this.halt(c, 'stopped: the controller is shutting down')));
      const runs = [...this.runs.values()].map((r) => (r.group ? terminateGroup(r.group, this.stopTimeoutMs) : Promise.resolve()));
      await Promise.all([...halts, ...runs]);
      await this.confinement.remove();
      await this.log.flush();
    })();
    return this.closing;
  }

  /** Stops the process groups an earlier controller process left running (LeftoverGroups.reap); resolves with how many. */
  reapOrphans(): Promise<number> {
    return this.leftovers.reap();
  }

  /**
   * Leaves every process running, recorded, for the next controller process (LeftoverGroups.hold):
   * none is restarted or reported any more, their output goes to a keeper; one-off commands stop.
   */
  detach(): Promise<void> {
    this.closing ??= (async () => {
      this.memory.stop();
      this.leftovers.stopWatching();
      for (const c of this.containers.values()) c.stopping = true;
      this.leftovers.keepOutput([...this.containers.values()].flatMap((c) => (c.group === null ? [] : [{ id: c.spec.id, pipes: c.group.outputPipes }])));
      await Promise.all([...this.runs.values()].map((r) => (r.group ? terminateGroup(r.group, this.stopTimeoutMs) : Promise.resolve())));
      await this.log.flush();
    })();
    return this.closing;
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
      container.crashes.up(Date.now());
      const where = isRoutedType(container.spec.type) ? ` on port ${container.port}` : '';
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
    const source = outputSource(spec);
    const lines = { stdout: new LineSplitter(), stderr: new LineSplitter() };
    const emit = (line: string): void => {
      container.tail.push(line);
      this.log.write(spec.app, source, line);
    };
    let group: ProcessGroup;
    const cgroup = await processCgroup(this.confinement.sandbox, 'ctr', container.memoryLimit, spec.cpu).catch((error: unknown) => {
      throw new SpawnFailed(`its cgroup could not be made: ${messageOf(error)}`);
    });
    const command = withProfileScripts(spec.command as string);
    try {
      group = await spawnGroup({
        command,
        cwd: container.cwd as string,
        env: this.confinement.environment(spec.env, container.cwd as string, container.port as number),
        nice: niceForCpuShares(spec.cpu),
        onOutput: (chunk, stream) => lines[stream].push(chunk).forEach(emit),
        sandboxed: this.confinement.sandboxed(spec.app, container.confinement, container.cwd as string, command, niceForCpuShares(spec.cpu), cgroup, 'container'),
      });
    } catch (error) {
      removeWhenGone(cgroup, null);
      throw new SpawnFailed(`it could not be started: ${messageOf(error)}`);
    }
    container.cgroup = cgroup;
    void group.outputClosed.then(() => [...lines.stdout.end(), ...lines.stderr.end()].forEach(emit));
    container.group = group;
    void group.exited.then((status) => this.exited(container, group, status));
    await recordGroup(this.records, this.canMeasure, spec.id, spec.app, `${spec.type}.${spec.num}`, group, cgroup?.cgroup ?? null);
    // In a sandbox the kernel holds the process to its memory limit (its cgroup's); the watch sees its kills.
    if ((container.memoryLimit !== null || container.cgroup !== null) && this.closing === null) this.memory.start();
    if (container.stopping) throw new Error('it was stopped before it was up');
    return group;
  }

  private async waitUntilUp(container: Supervised, group: ProcessGroup): Promise<void> {
    const { spec } = container;
    await waitUntilUp({
      check: readinessCheck(spec.type, spec.env, this.host, container.port as number),
      settleMs: this.settleMs,
      timeoutMs: startTimeoutOf(this.startTimeoutMs, spec.env),
      probeIntervalMs: this.probeIntervalMs,
      failed: async () => {
        if (container.stopping) return new Error('it was stopped before it was up');
        const status = group.exitStatus();
        if (status === null) return null;
        // Its last lines may still be in the pipes.
        await Promise.race([group.outputClosed, sleep(500)]);
        const oom = await outOfMemory(container.cgroup);
        return new Error(`it ${oom ?? container.killedFor ?? describeExit(status)} before it was up${container.tail.note()}`);
      },
      // A process that exits ends the wait.
      pause: (ms) => Promise.race([group.exited.then(() => undefined), sleep(ms)]),
      lastOutput: () => container.tail.note(),
    });
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
        this.crashed(container, `it ${oom ?? killedFor ?? describeExit(status)}${container.tail.note(1)}`, 'crashed');
      });
  }

  /** Records a failure and schedules the next start after the back-off. */
  private crashed(container: Supervised, reason: string, state: 'crashed' | 'error'): void {
    const delay = container.crashes.failed(Date.now());
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
    if (container.spec.workdir === null) await this.directories.removeIfUnused(container.spec.app);
    await this.confinement.users.sweep(container.spec.app);
  }

  /** How many containers and one-off commands of the app (not yet forgotten) use its own directory. */
  private ownDirectoryUsers(app: string): number {
    let users = 0;
    for (const c of this.containers.values()) if (c.spec.app === app && c.spec.workdir === null && !c.forgotten) users++;
    for (const r of this.runs.values()) if (r.app === app && r.ownDirectory) users++;
    return users;
  }

  /** Writes a line of the scheduler's to the app's log; a message of several lines (a failure's last output) as several. */
  private event(app: string, message: string): void {
    for (const line of message.split('\n')) this.log.write(app, SCHEDULER_LOG_SOURCE, line);
  }
}
