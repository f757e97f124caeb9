import { randomUUID } from 'node:crypto';
import type { Readable } from 'node:stream';
import type Docker from 'dockerode';
import {
  CappedOutput,
  DEFAULT_PROBE_INTERVAL_MS,
  RUN_TIMEOUT_EXIT_CODE,
  SCHEDULER_LOG_SOURCE,
  endpointsOf,
  isRoutedType,
  formatSeconds,
  memoryLimitBytes,
  outputSource,
  readinessCheck,
  restartBackoff,
  runTimeoutNote,
  withProfileScripts,
  type BatchedLogWriter,
  type ContainerSpec,
  type ContainerState,
  type Endpoint,
  type RestartBackoff,
  type RunResult,
  type RunSpec,
  type Scheduler,
} from '@svc/core';
import { acceptsConnections, sleep, waitUntilUp } from '@svc/supervisor-node';
import { LABELS, engineReason, engineStatus, environmentList, followFrames, followLines, waitAtMost } from './engine';
import { containerUserFor } from './container-user';
import { engineScheduling, startTimeoutOf, type EngineScheduling, type EngineSchedulerOptions } from './options';
import { DEFAULT_CONTAINER_PORT, ImageNotFound, assertRunnable, containerPortFor } from './images';
import { addressOn, containerDigest, containerLabels, containerName, describeExit, hostConfigOf, runningFromInspection, runningFromListing, type RunningContainer } from './container-config';
import { platformNetworkOf, preparePlatformNetwork, removePlatformNetwork, type PlatformNetwork, type PlatformNetworkOptions } from './platform-network';
import { managedContainer, type Managed } from './managed-container';
import { isOwnedBy, ownerLabels } from './installation';

export { RUN_TIMEOUT_EXIT_CODE, type Endpoint } from '@svc/core';
export { containerName } from './container-config';

/** How a DockerScheduler isolates and supervises containers; its network's options are platform-network.ts's. */
export interface DockerSchedulerOptions extends EngineSchedulerOptions, PlatformNetworkOptions {
  /** Back-off of crash restarts (see the core's RestartBackoff; defaults 1 s, 60 s, 60 s). */
  backoff?: Partial<RestartBackoff>;
  /** How often readiness is checked while a container starts. Default 100. */
  probeIntervalMs?: number;
}

const messageOf = (error: unknown): string => engineReason(error);

/**
 * A scheduler that runs each container of a release as a Docker Engine container of the
 * release's image, isolated (non-root user, no capabilities, no-new-privileges, pids,
 * memory and CPU limits, a network of the platform's own), supervised (crash restarts with
 * back-off, out-of-memory kills reported), and its output followed into the app's log.
 */
export class DockerScheduler implements Scheduler {
  /** Starts of different containers run side by side (adoption at start-up is mostly waiting on the engine). */
  readonly concurrentStarts = 16;
  /** Before a rollback: a build made for the process scheduler, or an image the engine cannot get, is refused with the reason. */
  readonly checkRunnable: NonNullable<Scheduler['checkRunnable']> = (build) => this.base.checkRunnable(build);
  private readonly docker: Docker;
  private readonly log: BatchedLogWriter;
  private readonly base: EngineScheduling;
  private readonly network: string;
  private readonly platform: PlatformNetwork;
  private readonly backoff: RestartBackoff;
  private readonly probeIntervalMs: number;
  private readonly containers = new Map<string, Managed>();
  private readonly runs = new Map<string, Docker.Container>();
  private prepared: Promise<void> | null = null;
  /** This instance's engine containers by name, listed once at start-up for adoption (see `survey()`); null once it is over. */
  private surveyed: Map<string, RunningContainer> | null = null;
  private closing: Promise<void> | null = null;

  constructor(options: DockerSchedulerOptions) {
    this.base = engineScheduling(options);
    this.docker = this.base.docker;
    this.log = this.base.log;
    this.platform = platformNetworkOf(this.docker, options);
    this.network = this.platform.network;
    this.backoff = restartBackoff(options.backoff);
    this.probeIntervalMs = options.probeIntervalMs ?? DEFAULT_PROBE_INTERVAL_MS;
  }

  /**
   * Refuses an instance whose containers or network are another installation's (touching
   * nothing), then creates the platform network (no traffic between containers) and the host
   * guard, once; called by the first start or run, or at start-up before anything is adopted.
   * @throws InstanceOfAnotherInstallation naming them; Error when the engine refuses.
   */
  prepare(): Promise<void> {
    this.prepared ??= preparePlatformNetwork(this.docker, this.base, this.platform, this.base.warn).catch((error: unknown) => {
      this.prepared = null;
      throw error;
    });
    return this.prepared;
  }

  /**
   * Takes the platform off the engine (the operator's teardown): shuts the scheduler down, then
   * removes this instance's containers, its network and the network's iptables guard.
   * Resolves with how many containers it removed.
   * @throws Error when the network is still used by another instance's container or the guard cannot be removed.
   */
  async teardown(): Promise<number> {
    await this.shutdown();
    return removePlatformNetwork(this.docker, this.base.instance, this.platform);
  }

  /**
   * Starts a container of the spec's image and resolves with `up` once it is: a `web`
   * container when its PORT accepts connections (or HEALTHCHECK_URL answers 2xx), another
   * type once it has kept running for a moment. The image is pulled first when the engine
   * lacks it. A container of this id that an earlier controller process left running from the
   * very same spec is adopted, not restarted. Starting a known id restarts it.
   * @throws Error with the reason (the engine's, the pull's, the last output) when it is not up; nothing of it is left.
   */
  async start(spec: ContainerSpec): Promise<ContainerState> {
    this.assertOpen();
    if (this.containers.has(spec.id)) await this.stop(spec.id);
    this.assertOpen();
    const managed = managedContainer(spec, containerDigest(this.base, this.network, spec), this.backoff);
    this.containers.set(spec.id, managed);
    try {
      memoryLimitBytes(spec.memory);
      await this.prepare();
      if (await this.adopt(managed)) return managed.state;
      if (managed.stopping) throw new Error('it was stopped before it was up');
      managed.launch = this.launch(managed);
      await managed.launch;
    } catch (error) {
      const reason = messageOf(error);
      if (!managed.stopping) this.event(spec.app, `${managed.label} did not start: ${reason}`);
      await this.removeEngineContainer(managed);
      this.forget(managed);
      await this.log.flushApp(spec.app);
      if (error instanceof ImageNotFound) throw error;
      throw new Error(reason);
    } finally {
      managed.launch = null;
    }
    return managed.state;
  }

  /** Stops (SIGTERM, SIGKILL after the stop timeout) and removes the container; unknown ids are fine. */
  async stop(id: string): Promise<void> {
    const managed = this.containers.get(id);
    if (!managed) {
      // A container of this id that an earlier controller process left behind.
      await this.removeByName(containerName(id));
      return;
    }
    managed.stopped ??= this.halt(managed, 'stopped');
    await managed.stopped;
  }

  /**
   * Runs a one-off command in a new container of the release's image, isolated like the
   * app's containers, waits for it and removes it. Output (stdout and stderr) is capped at the
   * spec's limit; a command still running at its timeout is killed and reported with exit code 124.
   * @throws Error when the container cannot be created (image, engine).
   */
  async run(spec: RunSpec): Promise<RunResult> {
    this.assertOpen();
    await this.prepare();
    const image = await this.base.images.inspect(spec.app, spec.image, spec.release);
    const name = `svc-run-${randomUUID()}`;
    const port = containerPortFor(spec.env, image);
    const created = await this.docker.createContainer({
      name,
      Image: spec.image,
      Entrypoint: ['/bin/sh', '-c'],
      Cmd: [withProfileScripts(spec.command)],
      Env: environmentList(spec.env, port),
      User: containerUserFor(this.base.user, image),
      Labels: { ...ownerLabels(this.base), [LABELS.app]: spec.app, [LABELS.type]: 'run', [LABELS.release]: String(spec.release) },
      AttachStdout: true,
      AttachStderr: true,
      Tty: false,
      OpenStdin: false,
      HostConfig: hostConfigOf(this.base, this.network, null, null),
    });
    this.runs.set(name, created);
    try {
      const output = new CappedOutput(spec.outputLimitBytes);
      const stream = (await created.attach({ stream: true, stdout: true, stderr: true })) as unknown as Readable;
      const ended = followFrames(stream, (_which, payload) => output.push(payload));
      const waited = created.wait({ condition: 'next-exit' }) as Promise<{ StatusCode?: number }>;
      await created.start();
      let timedOut = false;
      const timer = setTimeout(() => {
        timedOut = true;
        void created.kill().catch(() => undefined);
      }, spec.timeoutSeconds * 1000);
      let status: { StatusCode?: number };
      try {
        status = await waited;
      } finally {
        clearTimeout(timer);
      }
      await waitAtMost(ended, 2000);
      stream.destroy();
      const notes = timedOut ? [runTimeoutNote(spec.timeoutSeconds)] : [];
      return { exitCode: timedOut ? RUN_TIMEOUT_EXIT_CODE : (status.StatusCode ?? 1), output: output.text(notes) };
    } finally {
      this.runs.delete(name);
      await created.remove({ force: true }).catch(() => undefined);
    }
  }

  /** The current state of each known container; unknown ids are left out. */
  async states(ids: string[]): Promise<Map<string, ContainerState>> {
    const states = new Map<string, ContainerState>();
    for (const id of ids) {
      const managed = this.containers.get(id);
      if (managed) states.set(id, managed.state);
    }
    return states;
  }

  /** Where the `up` containers of one process type of an app listen (their address on the platform network), in number order. */
  endpoints(app: string, type: string): Endpoint[] {
    return endpointsOf([...this.containers.values()].map((c) => ({ spec: c.spec, state: c.state, host: c.address, port: c.port })), app, type);
  }

  /**
   * Lists this instance's containers in one call, so that the starts restoring them at start-up
   * adopt each from the list instead of inspecting it (one request, not hundreds). The list
   * serves until `reapOrphans()`; a container not in it is started afresh. Resolves with how many run.
   */
  async survey(): Promise<number> {
    const listed = await this.docker.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${this.base.instance}`] } });
    this.surveyed = new Map(listed.map((info) => runningFromListing(info, this.network)));
    return [...this.surveyed.values()].filter((c) => c.running).length;
  }

  /**
   * Removes the containers of this controller instance that no container of this process
   * stands for (adopted or started since): those the controller no longer records, and
   * one-off commands a stopped controller left; never another installation's. Call it at
   * start-up after restoring. Resolves with how many it removed.
   */
  async reapOrphans(): Promise<number> {
    this.surveyed = null;
    const listed = await this.docker.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${this.base.instance}`] } });
    const known = new Set([...this.containers.values()].map((c) => c.engineId));
    let reaped = 0;
    for (const info of listed) {
      if (known.has(info.Id) || this.runs.has((info.Names[0] ?? '').replace(/^\//, '')) || !isOwnedBy(info.Labels, this.base)) continue;
      const app = info.Labels[LABELS.app];
      await this.docker
        .getContainer(info.Id)
        .remove({ force: true })
        .then(() => {
          reaped++;
          if (app) this.event(app, `removed container ${info.Names[0]?.replace(/^\//, '') ?? info.Id} (${info.Labels[LABELS.type] ?? '?'}.${info.Labels[LABELS.num] ?? '?'}), which the controller no longer records`);
        })
        .catch(() => undefined);
    }
    await this.log.flush();
    return reaped;
  }

  /**
   * Refuses new work and lets go of the engine: follows and waits end, one-off commands are
   * killed and removed, the apps' containers keep running (the next controller process
   * adopts them). Calling it again returns the same promise.
   */
  shutdown(): Promise<void> {
    this.closing ??= (async () => {
      for (const managed of this.containers.values()) {
        if (managed.restartTimer !== null) clearTimeout(managed.restartTimer);
        managed.restartTimer = null;
        managed.watch?.abort();
      }
      await Promise.all([...this.runs.values()].map((c) => c.remove({ force: true }).catch(() => undefined)));
      await this.log.flush();
    })();
    return this.closing;
  }

  private assertOpen(): void {
    if (this.closing !== null) throw new Error('the scheduler is shutting down');
  }

  /** Creates, starts and watches a fresh engine container for the spec; resolves once it is up. */
  private async launch(managed: Managed): Promise<void> {
    const { spec } = managed;
    managed.state = 'created';
    managed.lastLines.clear();
    await this.removeEngineContainer(managed);
    const image = await this.base.images.inspect(spec.app, spec.image, spec.release);
    if (managed.stopping) throw new Error('it was stopped before it was up');
    assertRunnable(image, spec.image, spec.command, spec.type);
    managed.port = containerPortFor(spec.env, image);
    await this.removeByName(containerName(spec.id));
    const container = await this.docker.createContainer({
      name: containerName(spec.id),
      Image: spec.image,
      ...(spec.command === null ? {} : { Entrypoint: ['/bin/sh', '-c'], Cmd: [withProfileScripts(spec.command)] }),
      Env: environmentList(spec.env, managed.port),
      User: containerUserFor(this.base.user, image),
      Labels: containerLabels(this.base.instance, spec, managed.digest, this.base.installation),
      ExposedPorts: { [`${managed.port}/tcp`]: {} },
      Tty: false,
      OpenStdin: false,
      HostConfig: hostConfigOf(this.base, this.network, spec.memory, spec.cpu),
    });
    managed.engineId = container.id;
    if (managed.stopping) throw new Error('it was stopped before it was up');
    await container.start();
    const info = await container.inspect();
    managed.address = addressOn(info, this.network);
    await this.watch(managed, container, 0);
    await this.waitUntilUp(managed, container);
    managed.state = 'up';
    managed.crashes.up(Date.now());
    this.event(spec.app, `${managed.label} is up${isRoutedType(spec.type) ? ` at ${managed.address ?? '?'}:${managed.port}` : ''}`);
    // It may have exited between the last check and now: that is a crash.
    const seen = managed.exitSeen;
    if (seen !== null && seen.engineId === managed.engineId) void this.exited(managed, seen.engineId, seen.code);
  }

  /** Takes over a running container an earlier controller process started from the same spec; false when there is none. */
  private async adopt(managed: Managed): Promise<boolean> {
    const { spec } = managed;
    const found = await this.runningContainer(containerName(spec.id));
    if (found === null || !found.running || !isOwnedBy(found.labels, this.base) || found.labels[LABELS.spec] !== managed.digest) return false;
    const { address } = found;
    const port = found.port ?? DEFAULT_CONTAINER_PORT;
    // A running web container only has to accept a connection: it was up when the previous controller process left it.
    if (isRoutedType(spec.type) && (address === null || !(await acceptsConnections(address, port, 2000)))) return false;
    managed.engineId = found.engineId;
    managed.address = address;
    managed.port = port;
    const container = this.docker.getContainer(found.engineId);
    await this.watch(managed, container, Math.floor(Date.now() / 1000));
    managed.state = 'up';
    managed.crashes.up(Date.now());
    this.event(spec.app, `${managed.label} adopted: still running from before the controller restarted`);
    return true;
  }

  /** The engine container of this name as adoption sees it: from the survey while one is held (each entry serves once), else inspected; null when none. */
  private async runningContainer(name: string): Promise<RunningContainer | null> {
    if (this.surveyed !== null) {
      const listed = this.surveyed.get(name) ?? null;
      this.surveyed.delete(name);
      return listed;
    }
    try {
      return runningFromInspection(await this.docker.getContainer(name).inspect(), this.network);
    } catch (error) {
      if (engineStatus(error) === 404) return null;
      throw error;
    }
  }

  /** Follows the container's output into the app's log and its exit into a crash. */
  private async watch(managed: Managed, container: Docker.Container, since: number): Promise<void> {
    const { spec } = managed;
    const watch = new AbortController();
    managed.watch = watch;
    const source = outputSource(spec);
    const stream = (await container.logs({ follow: true, stdout: true, stderr: true, since, abortSignal: watch.signal })) as unknown as Readable;
    managed.logsEnded = followLines(stream, (_which, line) => {
      managed.lastLines.push(line);
      this.log.write(spec.app, source, line);
    });
    watch.signal.addEventListener('abort', () => stream.destroy(), { once: true });
    const engineId = container.id;
    (container.wait({ abortSignal: watch.signal }) as Promise<{ StatusCode?: number }>).then(
      (status) => {
        managed.exitSeen = { engineId, code: status.StatusCode ?? null };
        void this.exited(managed, engineId, status.StatusCode ?? null);
      },
      () => {
        // Aborted (stop, shutdown) or the engine went away: a stop or the next start handles it.
      },
    );
  }

  private async waitUntilUp(managed: Managed, container: Docker.Container): Promise<void> {
    const { spec } = managed;
    const failed = async (): Promise<Error | null> => {
      if (managed.stopping) return new Error('it was stopped before it was up');
      const info = await container.inspect().catch(() => null);
      if (info === null) return new Error('its engine container is gone');
      if (info.State.Running) return null;
      await Promise.race([managed.logsEnded, sleep(1000)]);
      return new Error(`it ${describeExit(info, spec.memory)} before it was up${managed.lastLines.note()}`);
    };
    const address = managed.address;
    if (isRoutedType(spec.type) && address === null) {
      // A container that exited at once has left the network already: its exit is the reason.
      throw (await failed()) ?? new Error(`it has no address on the network ${this.network}`);
    }
    await waitUntilUp({
      check: readinessCheck(spec.type, spec.env, address ?? '', managed.port),
      settleMs: this.base.settleMs,
      timeoutMs: startTimeoutOf(this.base, spec.env),
      probeIntervalMs: this.probeIntervalMs,
      failed,
      pause: sleep,
      lastOutput: () => managed.lastLines.note(),
    });
  }

  /** The engine container of an `up` container exited by itself: a crash, restarted after the back-off. */
  private async exited(managed: Managed, engineId: string, code: number | null): Promise<void> {
    if (managed.engineId !== engineId || managed.state !== 'up' || managed.stopping || this.closing !== null) return;
    const info = await this.docker.getContainer(engineId).inspect().catch(() => null);
    await Promise.race([managed.logsEnded, sleep(1000)]);
    if (managed.engineId !== engineId || managed.stopping || this.closing !== null) return;
    const reason = info ? describeExit(info, managed.spec.memory) : `exited with code ${code ?? '?'}`;
    this.crashed(managed, `it ${reason}${managed.lastLines.note(1)}`);
  }

  /** Records a failure and schedules the next start after the back-off. */
  private crashed(managed: Managed, reason: string): void {
    const delay = managed.crashes.failed(Date.now());
    managed.state = 'crashed';
    this.event(managed.spec.app, `${managed.label} crashed: ${reason}; starting it again in ${formatSeconds(delay)}`);
    managed.restartTimer = setTimeout(() => void this.restart(managed), delay);
    managed.restartTimer.unref();
  }

  private async restart(managed: Managed): Promise<void> {
    managed.restartTimer = null;
    if (managed.stopping || this.closing !== null) return;
    try {
      managed.launch = this.launch(managed);
      await managed.launch;
    } catch (error) {
      if (managed.stopping || this.closing !== null) return;
      this.crashed(managed, messageOf(error));
    } finally {
      managed.launch = null;
    }
  }

  private async halt(managed: Managed, what: string): Promise<void> {
    managed.stopping = true;
    if (managed.restartTimer !== null) clearTimeout(managed.restartTimer);
    managed.restartTimer = null;
    const wasRunning = managed.engineId !== null;
    managed.state = 'down';
    if (managed.launch) await managed.launch.catch(() => undefined);
    if (managed.engineId !== null) {
      await this.docker
        .getContainer(managed.engineId)
        .stop({ t: Math.ceil(this.base.stopTimeoutMs / 1000) })
        .catch(() => undefined);
      // Its last lines reach the log before the stop is reported.
      await Promise.race([managed.logsEnded, sleep(1000)]);
    }
    await this.removeEngineContainer(managed);
    if (wasRunning) this.event(managed.spec.app, `${managed.label} ${what}`);
    this.forget(managed);
    await this.log.flushApp(managed.spec.app);
  }

  private forget(managed: Managed): void {
    if (managed.forgotten) return;
    managed.forgotten = true;
    managed.state = 'destroyed';
    managed.watch?.abort();
    if (this.containers.get(managed.spec.id) === managed) this.containers.delete(managed.spec.id);
  }

  private async removeEngineContainer(managed: Managed): Promise<void> {
    const id = managed.engineId;
    if (id === null) return;
    managed.watch?.abort();
    managed.watch = null;
    managed.engineId = null;
    managed.address = null;
    await this.docker
      .getContainer(id)
      .remove({ force: true })
      .catch((error: unknown) => {
        if (engineStatus(error) !== 404) throw error;
      });
  }

  private async removeByName(name: string): Promise<void> {
    try {
      const info = await this.docker.getContainer(name).inspect();
      if (!isOwnedBy(info.Config.Labels ?? {}, this.base)) return;
      await this.docker.getContainer(info.Id).remove({ force: true });
    } catch (error) {
      if (engineStatus(error) !== 404) throw error;
    }
  }

  private event(app: string, message: string): void {
    this.log.write(app, SCHEDULER_LOG_SOURCE, message);
  }
}
