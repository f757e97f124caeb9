import { ContainerModule, type Container, type ResolutionContext } from 'inversify';
import type { Logger } from 'pino';
import { TOKENS, type LogStore, type Scheduler, type SourceCompiler, type UseCases } from '@svc/core';
import { MemoryScheduler } from '@svc/scheduler-memory';
import { ProcessScheduler, ProcessSourceCompiler, type ProcessRecord, type SandboxOptions, type SandboxStatus } from '@svc/scheduler-process';
import { DockerScheduler, InstanceOfAnotherInstallation, SwarmScheduler, createEngine, pingEngine, type Docker, type EngineSchedulerOptions, type RegistryLogin } from '@svc/scheduler-docker';
import { ChaosScheduler, type ChaosOptions } from '@svc/scheduler-chaos';
import { prepareEngineBuilds, type DockerCompileSetup } from './compose-builds';
import { UNSAFE_SWITCH, type DockerSettings, type SchedulerKind, type ServerConfig, type SwarmSettings } from './config';
import { PreflightError, checkSchedulerRecord, readinessDetails } from './preflight';
import { BuildReadinessReport } from './build-readiness';
import { DrainingScheduler, LeavingContainers, type EndpointSource } from './routing';

/**
 * The scheduler of the controller, in one place: which one runs the apps (SCHEDULER, or the
 * one picked when it is unset), what it is built from, and what must be ready before the
 * controller serves. The order of start-up, each step needing the one before:
 *
 * 1. `chooseScheduler`: SCHEDULER or the pick, then the data directory's record of the
 *    scheduler that ran its apps (a change needs SCHEDULER_ADOPT; preflight.ts).
 * 2. `schedulerSetup` → `compose` (composition.ts binds the scheduler with `schedulerModule`).
 * 3. `SchedulerStartup.beforeServing`, before any port of the controller is bound:
 *    an engine scheduler refuses an instance another installation holds (label
 *    `svc.installation`, from SECRET_KEY), touching nothing; the process scheduler starts
 *    setting up its sandbox (it waits for the ports of step 4) and stops the processes an
 *    earlier controller process left; deploys a dead controller left half-way are cleaned up;
 *    an engine scheduler adopts the containers still running (restoring the recorded ones as
 *    they are, removing the others) and its buildpack builds are checked.
 * 4. `SchedulerStartup.afterPortsBound`, once the API, git and router listen: the process
 *    scheduler's sandbox is told the ports no app may take, then the apps' processes, which
 *    did not survive the earlier controller process, are started again; then whether pushed
 *    commits can be built is checked (build-readiness.ts), and said when they cannot.
 * 5. `SchedulerStartup.stop` at shutdown (the apps first; engine containers keep running for
 *    the next controller process to adopt).
 *
 * With a router that outlives the controller (ROUTER_SOCKET, `keepApps`), the process
 * scheduler's processes outlive it too: step 5 leaves them running, step 3 holds those an
 * earlier controller process left instead of stopping them, step 4 starts their replacements,
 * and `afterRoutesServed`, once the router sends requests to the replacements, stops them.
 */

/** Tokens of the schedulers the server binds (part of SERVER_TOKENS). */
export const SCHEDULER_TOKENS = Object.freeze({
  ProcessScheduler: Symbol.for('svc.ProcessScheduler'),
  /** The Docker Engine client (dockerode), shared by everything that speaks to the engine. */
  DockerEngine: Symbol.for('svc.DockerEngine'),
  DockerScheduler: Symbol.for('svc.DockerScheduler'),
  SwarmScheduler: Symbol.for('svc.SwarmScheduler'),
  LeavingContainers: Symbol.for('svc.LeavingContainers'),
});

/** Where and how the process scheduler runs apps. */
export interface ProcessSchedulerSetup {
  /** Holds the apps' working directories and the records of running processes. */
  dataDir: string;
  portRange: { from: number; to: number };
  startTimeoutMs: number;
  stopTimeoutMs: number;
  /** How apps are confined; null runs them unconfined as the controller's user. */
  sandbox: SandboxOptions | null;
  /** How the operator fixes a sandbox that cannot be set up. */
  sandboxHint?: string;
  /** The apps' processes outlive the controller process (a router process of its own: ROUTER_SOCKET). */
  outliveController?: boolean;
}

/** Where the Docker engine is and how the Docker scheduler isolates apps: its settings, and what the server adds. */
export interface DockerSchedulerSetup extends DockerSettings {
  /** Host ports containers may still reach (the router's). */
  hostPortsAllowed: number[];
  startTimeoutMs: number;
  stopTimeoutMs: number;
  /** What the operator should know (a host guard that could not be installed). */
  onWarning: (message: string) => void;
}

/** The scheduler part of the composition's options. */
export interface SchedulerSetup {
  scheduler: SchedulerKind;
  /** How the process scheduler runs apps; required when `scheduler` is `process`. */
  processes?: ProcessSchedulerSetup;
  /** How the Docker scheduler runs apps; required when `scheduler` is `docker` (and its DOCKER_* settings with `swarm`). */
  docker?: DockerSchedulerSetup;
  /** How the Swarm scheduler runs apps; required when `scheduler` is `swarm`. */
  swarm?: SwarmSettings;
  /** Wraps the scheduler in fault injection (tests and resilience drills); absent or null: off. */
  schedulerChaos?: ChaosOptions | null;
  /**
   * The installation's fingerprint on the engine (label `svc.installation`): the composition
   * derives it from SECRET_KEY, the same in every controller process of one installation. The
   * Docker and Swarm schedulers refuse an instance whose objects carry another's, and never
   * adopt or remove those. Absent or null: not labelled, not checked.
   */
  installation?: string | null;
}

/** How long the start-up waits for a Docker engine to answer when SCHEDULER is unset. */
const ENGINE_PING_TIMEOUT_MS = 2000;

/**
 * The scheduler to use: SCHEDULER when set; when unset, `docker` if an engine answers at
 * DOCKER_HOST (default unix:///var/run/docker.sock) within two seconds, else `process`.
 * Logs which one and why.
 */
export async function pickScheduler(config: ServerConfig, logger: Logger): Promise<SchedulerKind> {
  if (config.scheduler !== 'auto') return config.scheduler;
  const where = config.docker.host ?? 'unix:///var/run/docker.sock';
  const reason = await pingEngine(createEngine(config.docker.host), ENGINE_PING_TIMEOUT_MS);
  if (reason === null) {
    logger.info({ scheduler: 'docker', dockerHost: where }, `SCHEDULER is unset: using the Docker scheduler, a Docker engine answers at ${where}`);
    return 'docker';
  }
  logger.info(
    { scheduler: 'process', dockerHost: where, reason },
    `SCHEDULER is unset: using the process scheduler, no Docker engine answers at ${where} (${reason})`,
  );
  return 'process';
}

/**
 * Step 1: the scheduler to use (`pickScheduler`), refused when the data directory's apps ran
 * on another one and SCHEDULER_ADOPT is not set.
 */
export async function chooseScheduler(config: ServerConfig, dataDir: string, appsWithContainers: () => Promise<string[]>, logger: Logger): Promise<SchedulerKind> {
  const kind = await pickScheduler(config, logger);
  await checkSchedulerRecord(dataDir, kind, appsWithContainers, config.schedulerAdopt, logger);
  return kind;
}

/** The fix named when the sandbox cannot be set up. */
export const SANDBOX_HINT =
  `Run the controller as root on Linux with bubblewrap, util-linux and iptables installed (apt-get install bubblewrap util-linux iptables), ` +
  `or, for one trusted developer on their own machine only, set ${UNSAFE_SWITCH}=1 to run apps unconfined; ` +
  `or run them on a Docker engine (start one at DOCKER_HOST: with SCHEDULER unset it is picked, or set SCHEDULER=docker)`;

/** Step 2: what the composition builds the chosen scheduler from, out of the configuration. */
export function schedulerSetup(config: ServerConfig, kind: SchedulerKind, dataDir: string, logger: Logger): SchedulerSetup {
  return {
    scheduler: kind,
    docker: {
      ...config.docker,
      // Containers may call other apps through the router's fixed ports, nothing else of this host.
      hostPortsAllowed: [config.routerPort, config.routerTlsPort].filter((port): port is number => port !== null && port > 0),
      startTimeoutMs: config.processes.healthcheckTimeoutMs,
      stopTimeoutMs: config.processes.stopTimeoutMs,
      onWarning: (message) => logger.warn({ scheduler: kind }, message),
    },
    swarm: config.swarm,
    processes: {
      dataDir,
      portRange: config.processes.portRange,
      startTimeoutMs: config.processes.healthcheckTimeoutMs,
      stopTimeoutMs: config.processes.stopTimeoutMs,
      sandbox: config.processes.sandbox,
      sandboxHint: SANDBOX_HINT,
      // The next controller process holds them until their replacements serve (SchedulerStartup's keepApps).
      outliveController: config.router.socket !== null,
    },
    schedulerChaos: config.schedulerChaos,
  };
}

/** What the Docker and Swarm schedulers both take: the shared engine client, the log store, the clock and the DOCKER_* settings. */
function engineOptions(ctx: ResolutionContext, docker: DockerSchedulerSetup, registryLogin: RegistryLogin | null, installation: string | null): EngineSchedulerOptions {
  return {
    docker: ctx.get<Docker>(SCHEDULER_TOKENS.DockerEngine),
    logs: ctx.get<LogStore>(TOKENS.LogStore),
    clock: ctx.get(TOKENS.Clock),
    instance: docker.instance,
    installation,
    onWarning: docker.onWarning,
    user: docker.user,
    pidsLimit: docker.pidsLimit,
    readonlyRootfs: docker.readonlyRootfs,
    pullPolicy: docker.pullPolicy,
    defaultMemory: docker.defaultMemory,
    defaultCpu: docker.defaultCpu,
    startTimeoutMs: docker.startTimeoutMs,
    stopTimeoutMs: docker.stopTimeoutMs,
    registryLogin,
    registryAllow: docker.registryAllow ?? [],
    ...(docker.logLimit === undefined ? {} : { logLimit: docker.logLimit }),
  };
}

/**
 * Binds every scheduler the server knows (each built only when asked for) and the port's
 * `Scheduler`: the chosen one, in fault injection when asked, in the router's draining.
 */
export const schedulerModule = (setup: SchedulerSetup, registryLogin: RegistryLogin | null) =>
  new ContainerModule(({ bind }) => {
    const { scheduler: kind, processes, docker, swarm } = setup;
    const installation = setup.installation ?? null;
    const chaos = setup.schedulerChaos ?? null;
    bind<SwarmScheduler>(SCHEDULER_TOKENS.SwarmScheduler).toDynamicValue((ctx) => {
      if (docker === undefined || swarm === undefined) throw new Error('The Swarm scheduler needs its setup (CompositionOptions.docker and .swarm)');
      const leaving = ctx.get<LeavingContainers>(SCHEDULER_TOKENS.LeavingContainers);
      return new SwarmScheduler({
        ...engineOptions(ctx, docker, registryLogin, installation),
        prefix: swarm.prefix,
        drainMs: swarm.drainMs,
        healthIntervalMs: swarm.healthIntervalMs,
        monitorMs: swarm.monitorMs,
        updateTimeoutMs: swarm.updateTimeoutMs,
        nodeAddresses: swarm.nodeAddresses,
        network: swarm.network,
        // Swarm replaces and moves tasks by itself: the router hears of it at once.
        onEndpointsChanged: () => void leaving.refreshRoutes().catch(() => undefined),
      });
    });
    bind<Docker>(SCHEDULER_TOKENS.DockerEngine).toDynamicValue(() => createEngine(docker?.host ?? null));
    bind<DockerScheduler>(SCHEDULER_TOKENS.DockerScheduler).toDynamicValue((ctx) => {
      if (docker === undefined) throw new Error('The Docker scheduler needs its setup (CompositionOptions.docker)');
      return new DockerScheduler({
        ...engineOptions(ctx, docker, registryLogin, installation),
        network: docker.network,
        bridge: docker.bridge,
        guardHost: docker.guardHost,
        hostPortsAllowed: docker.hostPortsAllowed,
        guards: docker.guards,
        guardImage: docker.guardImage,
      });
    });
    bind<ProcessScheduler>(SCHEDULER_TOKENS.ProcessScheduler).toDynamicValue((ctx) => {
      if (processes === undefined) throw new Error('The process scheduler needs its setup (CompositionOptions.processes)');
      return new ProcessScheduler({
        dataDir: processes.dataDir,
        logs: ctx.get<LogStore>(TOKENS.LogStore),
        clock: ctx.get(TOKENS.Clock),
        portRange: processes.portRange,
        startTimeoutMs: processes.startTimeoutMs,
        stopTimeoutMs: processes.stopTimeoutMs,
        sandbox: processes.sandbox,
        sandboxHint: processes.sandboxHint,
        outliveController: processes.outliveController ?? false,
      });
    });
    bind<Scheduler>(TOKENS.Scheduler).toDynamicValue((ctx): Scheduler => {
      const scheduler = engineSchedulerOf(kind, ctx) ?? new MemoryScheduler();
      const wrapped = chaos === null ? scheduler : new ChaosScheduler(scheduler, chaos);
      // Containers leave the router's routes before they are stopped.
      return new DrainingScheduler(wrapped, ctx.get<LeavingContainers>(SCHEDULER_TOKENS.LeavingContainers));
    });
    bind<LeavingContainers>(SCHEDULER_TOKENS.LeavingContainers).toConstantValue(new LeavingContainers());
  });

/** The process, Docker or Swarm scheduler bound for `kind`; null with the memory scheduler. */
function engineSchedulerOf(kind: SchedulerKind, ctx: Pick<ResolutionContext, 'get'>): (Scheduler & EndpointSource) | null {
  switch (kind) {
    case 'process':
      return ctx.get<ProcessScheduler>(SCHEDULER_TOKENS.ProcessScheduler);
    case 'docker':
      return ctx.get<DockerScheduler>(SCHEDULER_TOKENS.DockerScheduler);
    case 'swarm':
      return ctx.get<SwarmScheduler>(SCHEDULER_TOKENS.SwarmScheduler);
    case 'memory':
      return null;
  }
}

/** Where the router finds the web containers' addresses: the chosen scheduler; none with the memory scheduler (every app answers 503). */
export function schedulerEndpoints(kind: SchedulerKind, ctx: Pick<ResolutionContext, 'get'>): EndpointSource | null {
  return engineSchedulerOf(kind, ctx);
}

/** The chosen scheduler by its own type, for what only it does (endpoints, orphans, adoption, shutdown); the others null. */
export interface BoundSchedulers {
  /** The scheduler as configured (process, memory, chaos), without the router's draining around it. */
  scheduler: Scheduler;
  /** The scheduler that runs processes, when SCHEDULER=process: its endpoints, orphan clean-up and shutdown. */
  processScheduler: ProcessScheduler | null;
  /** The scheduler that runs Docker containers, when SCHEDULER=docker: its endpoints, adoption clean-up and shutdown. */
  dockerScheduler: DockerScheduler | null;
  /** The scheduler that runs Swarm services, when SCHEDULER=swarm: its endpoints, adoption clean-up and shutdown. */
  swarmScheduler: SwarmScheduler | null;
}

/** The schedulers `schedulerModule` bound in `container` for `kind`. */
export function boundSchedulers(container: Pick<Container, 'get'>, kind: SchedulerKind): BoundSchedulers {
  const bound = container.get<Scheduler>(TOKENS.Scheduler);
  return {
    scheduler: bound instanceof DrainingScheduler ? bound.inner : bound,
    processScheduler: kind === 'process' ? container.get<ProcessScheduler>(SCHEDULER_TOKENS.ProcessScheduler) : null,
    dockerScheduler: kind === 'docker' ? container.get<DockerScheduler>(SCHEDULER_TOKENS.DockerScheduler) : null,
    swarmScheduler: kind === 'swarm' ? container.get<SwarmScheduler>(SCHEDULER_TOKENS.SwarmScheduler) : null,
  };
}

/** What `/readyz` adds about the confinement of apps: nothing when they are confined (or none run). */
function sandboxDetails(status: SandboxStatus | null): Record<string, string> {
  if (status === null || status.mode === 'on') return {};
  if (status.mode === 'off') {
    return { sandbox: 'off', warning: `${UNSAFE_SWITCH} is set: apps run unconfined as the controller's user; any app owner controls the controller and the host` };
  }
  return { sandbox: 'unavailable', warning: status.problem ?? 'the sandbox is unavailable' };
}

/** Why the controller cannot run apps, each with its fix; empty when it can. */
function appProblems(status: SandboxStatus | null): string[] {
  return status?.mode === 'unavailable' ? [status.problem ?? 'the sandbox is unavailable'] : [];
}

/** An instance another installation holds on the engine, as the start-up check it is: one line naming DOCKER_INSTANCE (preflight.ts). */
function asPreflight(error: unknown): unknown {
  return error instanceof InstanceOfAnotherInstallation ? new PreflightError(error.setting, error.message) : error;
}

/** What the start-up of the scheduler works on, once composed. */
export interface ComposedSchedulers extends BoundSchedulers {
  useCases: UseCases;
  builds: { compiler: SourceCompiler | null; docker: DockerCompileSetup | null };
}

/** The controller's own ports, once bound: the router's (apps may call them) and all of them (no app may take one). */
export interface BoundPorts {
  router: number[];
  own: number[];
}

/** Steps 3 to 5 of the start-up (see the top of this file), and what `/readyz` says of the scheduler meanwhile. */
export class SchedulerStartup {
  private parts: ComposedSchedulers | null = null;
  private sandbox: SandboxStatus | null = null;
  // What only some builds need and lack (Dockerfile builds on an engine that runs their steps as root).
  private buildWarning: string | null = null;
  // Whether pushed commits can be built (the core's CheckBuilds), once composed.
  private builds: BuildReadinessReport | null = null;
  private portsBound: (ports: BoundPorts) => void = () => undefined;
  private sandboxReady: Promise<SandboxStatus> | null = null;
  // The processes an earlier controller process left serving, until their replacements serve.
  private held: ProcessRecord[] = [];

  /**
   * `shared`: another controller process may use the database (PostgreSQL); `keepApps`: the
   * router outlives the controller, and so do the apps' processes (see the top of this file).
   */
  constructor(private readonly options: { shared: boolean; logger: Logger; keepApps?: boolean }) {}

  /** The sandbox's state with SCHEDULER=process (null until it is set up, and with the others). */
  get sandboxStatus(): SandboxStatus | null {
    return this.sandbox;
  }

  /** What `GET /readyz` adds: how apps are confined, and what keeps them or their builds from running. */
  readyDetails(): Record<string, string | string[]> {
    const reasons = [...new Set([...appProblems(this.sandbox), ...(this.builds?.current() ?? [])])];
    return { ...sandboxDetails(this.sandbox), ...readinessDetails(reasons, this.buildWarning === null ? [] : [this.buildWarning]) };
  }

  /**
   * Step 3, before any port is bound: leftovers of an earlier controller process go (its
   * processes, its half-done deploys), an engine's running containers are adopted.
   * On failure, the schedulers are stopped and the error rethrown.
   */
  async beforeServing(parts: ComposedSchedulers): Promise<void> {
    this.parts = parts;
    const { processScheduler, useCases } = parts;
    const { logger, shared } = this.options;
    this.builds = new BuildReadinessReport(() => useCases.checkBuilds.execute(), logger, () => appProblems(this.sandbox));
    // The router's ports are allowed to apps once bound; nothing of an app runs before that.
    // So are the controller's own ports (API, router, git): no app may answer on them, on any address.
    const ports = new Promise<BoundPorts>((resolvePorts) => (this.portsBound = resolvePorts));
    this.sandboxReady =
      processScheduler?.prepare(
        ports.then((bound) => bound.router),
        ports.then((bound) => bound.own),
      ) ?? null;
    try {
      // First of all, before anything on the engine is adopted or removed (the deploys' clean-up
      // below stops containers too): an instance another installation holds refuses the start.
      await (parts.dockerScheduler ?? parts.swarmScheduler)?.prepare();
      if (processScheduler !== null && this.options.keepApps === true) {
        this.held = await processScheduler.leftovers.hold();
        if (this.held.length > 0) logger.info({ held: this.held.length }, 'app processes of the earlier controller process serve until their replacements are up');
      } else if (processScheduler !== null) {
        const reaped = await processScheduler.reapOrphans();
        if (reaped > 0) logger.warn({ reaped }, 'stopped app processes left running by an earlier controller process');
      }
      // Builds an earlier controller process left half-way: their file systems and directories.
      const compiler = parts.builds.compiler;
      if (compiler instanceof ProcessSourceCompiler) {
        const left = await compiler.removeLeftovers();
        if (left > 0) logger.warn({ left }, 'removed what builds of an earlier controller process left');
      }
      // Deploys that a dead controller process left half-way: stop what they started. Alone on
      // its database (SQLite) every lease is such a leftover; sharing it, only expired ones are.
      const { recovered } = await useCases.recoverDeploys.execute({ all: !shared });
      if (recovered > 0) logger.warn({ recovered }, 'cleaned up deploys interrupted by an earlier controller process');
    } catch (error) {
      this.portsBound({ router: [], own: [] });
      await this.stop();
      throw asPreflight(error);
    }
    await this.adoptEngineContainers();
  }

  /**
   * Containers still running from the previous controller process are adopted as they are
   * (same spec: not restarted); then those the controller no longer records are removed.
   */
  private async adoptEngineContainers(): Promise<void> {
    const { dockerScheduler, swarmScheduler, useCases, builds } = this.required();
    const engineScheduler = dockerScheduler ?? swarmScheduler;
    if (engineScheduler === null) return;
    try {
      const began = Date.now();
      await engineScheduler.prepare();
      // One list of the engine's containers instead of an inspection of each one adopted.
      await dockerScheduler?.survey();
      const { restored } = await useCases.restoreContainers.execute();
      const reaped = await engineScheduler.reapOrphans();
      this.options.logger.info({ restored, reaped, durationMs: Date.now() - began }, `restored the apps' containers on the ${swarmScheduler === null ? 'Docker engine' : 'swarm'}`);
      this.buildWarning = await prepareEngineBuilds(builds.compiler, builds.docker, this.options.logger);
    } catch (error) {
      await this.stop();
      throw asPreflight(error);
    }
  }

  /**
   * Step 4, once every port of the controller is bound (so no app can take one): with the
   * process scheduler, its sandbox learns the ports, then the apps' processes start again;
   * then whether pushes can be built is checked, and said in the log when they cannot.
   * On failure the caller stops the schedulers along with its listeners.
   */
  async afterPortsBound(ports: BoundPorts): Promise<void> {
    const { processScheduler } = this.required();
    if (processScheduler !== null) await this.restartProcesses(processScheduler, ports);
    await this.builds?.start();
  }

  /** Step 4 with the process scheduler: the sandbox learns the ports, then the apps' processes start again. */
  private async restartProcesses(processScheduler: ProcessScheduler, ports: BoundPorts): Promise<void> {
    const { useCases } = this.required();
    const { logger } = this.options;
    this.portsBound(ports);
    this.sandbox = await (this.sandboxReady as Promise<SandboxStatus>);
    if (this.sandbox.mode === 'on') logger.info({ sandbox: 'on' }, 'apps run sandboxed: a user of their own each, no view of the controller, no connection to this machine but the router');
    else if (this.sandbox.mode === 'off') logger.warn({ sandbox: 'off' }, `${UNSAFE_SWITCH} is set: apps run UNCONFINED as the controller's user; for one trusted developer only`);
    else logger.error({ sandbox: 'unavailable' }, this.sandbox.problem ?? 'the sandbox is unavailable');
    // The apps' processes did not survive the previous controller process: start them again.
    const { restored } = await useCases.restoreContainers.execute();
    logger.info({ restored }, 'restored the apps\' containers');
  }

  /** Once the router sends requests to the replacements of held processes (`keepApps`): those go. */
  async afterRoutesServed(): Promise<void> {
    const { processScheduler } = this.required();
    const held = this.held;
    this.held = [];
    if (processScheduler === null || held.length === 0) return;
    const stopped = await processScheduler.leftovers.stop(held);
    this.options.logger.info({ stopped }, 'stopped the app processes of the earlier controller process: their replacements serve');
  }

  /**
   * Step 5: stops the apps' processes (with `keepApps`, leaves them running for the next
   * controller process); the apps' engine containers keep running, and the next controller process adopts them.
   */
  async stop(): Promise<void> {
    if (this.parts === null) return;
    if (this.options.keepApps === true) await this.parts.processScheduler?.detach();
    else await this.parts.processScheduler?.shutdown();
    await this.parts.dockerScheduler?.shutdown();
    await this.parts.swarmScheduler?.shutdown();
  }

  private required(): ComposedSchedulers {
    if (this.parts === null) throw new Error('SchedulerStartup: beforeServing must run first');
    return this.parts;
  }
}
