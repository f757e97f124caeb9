import { createHash, randomUUID } from 'node:crypto';
import type Docker from 'dockerode';
import { memoryLimitBytes, type BatchedLogWriter, type ContainerSpec, type ContainerState, type RunResult, type RunSpec, type Scheduler } from '@svc/core';
import { RUN_TIMEOUT_EXIT_CODE, type Endpoint } from './docker-scheduler';
import { CappedOutput, LABELS, containerLimits, type ContainerLimits, digestOf, engineReason, engineStatus, environmentList, followFrames, followLines, formatSeconds, lastOutputNote, OutputTail, sleep, sortedEntries, waitAtMost } from './engine';
import { assertRunnable, containerPortFor, imageCommand } from './images';
import { containerUserFor } from './container-user';
import { SCHEDULER_LOG_SOURCE, engineScheduling, startTimeoutOf, type EngineScheduling, type EngineSchedulerOptions } from './options';
import { acceptsConnections, healthcheckPath } from './readiness';
import { authFor, type RegistryAuth } from './registry-login';
import {
  TASK_FAILED_STATES,
  TASK_LIVE_STATES,
  callEngine,
  listTasks,
  streamFromEngine,
  type NodeInfo,
  type ServiceInfo,
  type ServiceSpec,
  type SwarmInfo,
  type TaskInfo,
  type TaskTemplate,
} from './swarm-api';

/** The label of a service that lists the platform's containers it stands for, as JSON `[[id, num, digest], ...]`. */
export const MEMBERS_LABEL = 'svc.members';

/** How long a one-off task's logs are read again while the engine cannot read all of them. */
const JOB_LOG_RETRY_MS = 10_000;
/** How long a service's log follower waits before it follows again after the engine could not read all of it. */
const FOLLOW_RETRY_AFTER_ENGINE_ERROR_MS = 5000;

/** How a SwarmScheduler runs apps as Swarm services (`docker`: a client of a manager of the swarm). */
export interface SwarmSchedulerOptions extends EngineSchedulerOptions {
  /** Services are named `<prefix>-<app>-<type>`. Default `svc`. */
  prefix?: string;
  /** How long a whole change of a service (a rolling update of every task, a rollback) may take, ms. Default 300000. */
  updateTimeoutMs?: number;
  /**
   * How long a web task keeps serving after Swarm told it to stop, before its app gets
   * SIGTERM: the router stops sending it requests meanwhile. Default 3000.
   */
  drainMs?: number;
  /** How often the health check of a web task runs, ms. Default 2000. */
  healthIntervalMs?: number;
  /** How long Swarm watches each updated task for a failure before the next (UpdateConfig.Monitor), ms. Default 3000. */
  monitorMs?: number;
  /** Delay between crash restarts of a task, ms. Default 1000. */
  restartDelayMs?: number;
  /** How often the tasks are read for the routes and states, ms. Default 1000; 200 while a change is under way. */
  pollMs?: number;
  /** The address the router uses for a node, by node hostname or id; others use the node's own (Status.Addr). */
  nodeAddresses?: Record<string, string>;
  /**
   * A swarm-scoped bridge network made from a config-only network on every node with
   * inter-container communication off (`com.docker.network.bridge.enable_icc=false`): every
   * task joins it. Unset: tasks use their node's default bridge, where they reach each other.
   */
  network?: string | null;
  /** Called when the endpoints of some app changed (tasks replaced, moved, stopped): the router refreshes its routes. */
  onEndpointsChanged?: () => void;
}

interface Member {
  id: string;
  num: number;
  /** The spec digest the member was started from: the service's current one, or an earlier one (its task was replaced). */
  digest: string;
}

interface TaskView {
  id: string;
  slot: number;
  node: string;
  state: string;
  desired: string;
  created: number;
  port: number | null;
  err: string;
  exitCode: number | null;
  /** The digest of the spec the task was made from (a label of its container), and the service's forced-update count then. */
  spec: string;
  force: number;
}

interface Service {
  readonly name: string;
  readonly app: string;
  readonly type: string;
  id: string;
  digest: string;
  /** The forced-update count of the service's task template. */
  force: number;
  release: number;
  members: Map<string, Member>;
  /** The port tasks listen on inside their containers (published in host mode), null for types that are not routed. */
  port: number | null;
  tasks: TaskView[];
  lastLines: OutputTail;
  logs: AbortController | null;
  /** Ends the log stream being followed, which is then followed again from its last line; null between streams. */
  refollow: (() => void) | null;
  /** The task template and labels before the last change of template made here, to go back to when its containers are stopped. */
  previous: { template: TaskTemplate; endpoint: ServiceSpec['EndpointSpec']; digest: string; release: number; port: number | null } | null;
  gone: boolean;
}

const ms = (value: number): number => Math.round(value * 1e6);

/**
 * Runs each process type of an app as one Swarm service (`<prefix>-<app>-<type>`): replicas
 * for its containers, start-first rolling updates with health checks when its spec changes
 * (Swarm rolls a failed update back), ports published in host mode on dynamic ports, tasks
 * rescheduled by Swarm when a node is drained or lost. The platform's container ids are kept
 * in a label of the service, so a controller restarted later adopts the services as they are.
 */
export class SwarmScheduler implements Scheduler {
  private readonly docker: Docker;
  private readonly log: BatchedLogWriter;
  private readonly base: EngineScheduling;
  private readonly prefix: string;
  private readonly updateTimeoutMs: number;
  private readonly drainMs: number;
  private readonly healthIntervalMs: number;
  private readonly monitorMs: number;
  private readonly restartDelayMs: number;
  private readonly pollMs: number;
  private readonly nodeAddresses: Record<string, string>;
  private readonly network: string | null;
  private readonly endpointsChanged: () => void;
  private readonly services = new Map<string, Service>();
  /** Container ids started or adopted by this process: starting one again restarts it. */
  private readonly started = new Set<string>();
  private readonly queues = new Map<string, Promise<unknown>>();
  private readonly runs = new Set<string>();
  private nodes = new Map<string, { address: string | null; ready: boolean }>();
  private nodesRead = 0;
  private endpointKey = '';
  private busy = 0;
  private pollTimer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private loadedAll: Promise<void> | null = null;
  private prepared: Promise<void> | null = null;
  private closing: Promise<void> | null = null;

  constructor(options: SwarmSchedulerOptions) {
    this.base = engineScheduling(options);
    this.docker = this.base.docker;
    this.log = this.base.log;
    this.prefix = options.prefix ?? 'svc';
    this.updateTimeoutMs = options.updateTimeoutMs ?? 300_000;
    this.drainMs = options.drainMs ?? 3000;
    this.healthIntervalMs = options.healthIntervalMs ?? 2000;
    this.monitorMs = options.monitorMs ?? 3000;
    this.restartDelayMs = options.restartDelayMs ?? 1000;
    this.pollMs = options.pollMs ?? 1000;
    this.nodeAddresses = options.nodeAddresses ?? {};
    this.network = options.network ?? null;
    this.endpointsChanged = options.onEndpointsChanged ?? (() => undefined);
  }

  /**
   * Checks that the engine is a manager of an active swarm, once; called by the first
   * operation, or at start-up to fail early.
   * @throws Error saying what is missing (no swarm, a worker instead of a manager).
   */
  prepare(): Promise<void> {
    this.prepared ??= (async () => {
      const info = await callEngine<SwarmInfo>(this.docker, 'GET', '/info');
      if (info.Swarm?.LocalNodeState !== 'active') {
        throw new Error(`the engine at DOCKER_HOST is not part of a swarm (state: ${info.Swarm?.LocalNodeState ?? 'unknown'}): run docker swarm init, or point DOCKER_HOST at a manager`);
      }
      if (info.Swarm.ControlAvailable !== true) throw new Error('the engine at DOCKER_HOST is a swarm worker: point DOCKER_HOST at a manager of the swarm');
      await this.checkNetwork();
      this.schedulePoll();
    })().catch((error: unknown) => {
      this.prepared = null;
      throw error;
    });
    return this.prepared;
  }

  /**
   * The tasks' network must be a swarm-scoped bridge network (made from a config-only network
   * on each node); without one, says at start-up that tasks can reach each other.
   */
  private async checkNetwork(): Promise<void> {
    if (this.network === null) {
      this.base.warn('SWARM_NETWORK is not set: app tasks use their node\'s default bridge and can reach each other there, not only through the router; see docs/security.md');
      return;
    }
    const fix = 'make it as docs/operations.md says ("Running on a Docker Swarm")';
    let network: { Scope?: string; Driver?: string; ConfigFrom?: { Network?: string } };
    try {
      network = await callEngine(this.docker, 'GET', `/networks/${encodeURIComponent(this.network)}`);
    } catch (error) {
      throw new Error(`SWARM_NETWORK: the network ${this.network} is not on the swarm manager (${engineReason(error)}): ${fix}`);
    }
    if (network.Scope !== 'swarm' || network.Driver !== 'bridge') {
      throw new Error(`SWARM_NETWORK: the network ${this.network} must be a bridge network of scope swarm, it is a ${network.Driver ?? '?'} network of scope ${network.Scope ?? '?'}: ${fix}`);
    }
    const from = network.ConfigFrom?.Network ?? '';
    if (from === '') throw new Error(`SWARM_NETWORK: the network ${this.network} is not made from a config-only network (--config-from): ${fix}`);
    // The manager's own config-only network shows the options every node's should have.
    const config = await callEngine<{ Options?: Record<string, string> }>(this.docker, 'GET', `/networks/${encodeURIComponent(from)}`).catch(() => null);
    if (config !== null && config.Options?.['com.docker.network.bridge.enable_icc'] !== 'false') {
      throw new Error(`SWARM_NETWORK: the config-only network ${from} lets containers reach each other (com.docker.network.bridge.enable_icc is not false): ${fix}`);
    }
  }

  /**
   * Makes the container one of its process type's service and resolves with `up` once the
   * service runs as many healthy tasks as it has containers: creates the service, raises its
   * replicas, or, when the spec differs from the service's, rolls every task to the new spec
   * (start-first, each new task healthy before an old one stops). Starting an id this process
   * started already forces a rolling restart; an id a service already lists with the same
   * spec (a restarted controller) is adopted as it runs.
   * @throws ImageNotFound when no registry has the image; Error with the reason when the
   *   tasks do not come up: the service is then as it was (Swarm rolled the update back).
   */
  async start(spec: ContainerSpec): Promise<ContainerState> {
    this.assertOpen();
    memoryLimitBytes(spec.memory);
    await this.prepare();
    await this.loadAll();
    const image = await this.base.images.inspect(spec.app, spec.image, spec.release);
    assertRunnable(image, spec.image, spec.command, spec.type);
    const own = containerPortFor(spec.env, image);
    const port = isRouted(spec.type) ? own : null;
    const digest = this.digest(spec, own, port);
    const template = this.template(spec, own, port, digest, imageCommand(image), containerUserFor(this.base.user, image));
    const name = this.serviceName(spec.app, spec.type);
    return this.queued(name, () => this.place(spec, name, template, digest, port));
  }

  /**
   * Takes the container out of its service: one replica fewer (the service goes with its last
   * container), resolved once the task has stopped. A container whose task Swarm already
   * replaced (an earlier spec) only leaves the list, unless it was the last of the current
   * spec: the service then goes back to the previous spec. Unknown ids are fine.
   */
  async stop(id: string): Promise<void> {
    await this.loadAll().catch(() => undefined);
    const found = this.serviceOf(id);
    if (found === null) return;
    await this.queued(found.name, async () => {
      const service = this.serviceOf(id);
      if (service === null) return;
      await this.release(service, id);
    });
  }

  /**
   * Runs a one-off command as a Swarm job (one task, never restarted) of the release's image,
   * isolated like the apps' tasks, and removes it. Output is read from the service's logs and
   * capped; a command still running at its timeout is removed and reported with exit code 124.
   * @throws Error when the task cannot run (image, no node, engine).
   */
  async run(spec: RunSpec): Promise<RunResult> {
    this.assertOpen();
    await this.prepare();
    const image = await this.base.images.inspect(spec.app, spec.image, spec.release);
    const port = containerPortFor(spec.env, image);
    const name = `${this.prefix}-run-${randomUUID().slice(0, 13)}`;
    const limits = containerLimits(null, null, { memory: this.base.defaultMemory, cpu: this.base.defaultCpu });
    const body: ServiceSpec = {
      Name: name,
      Labels: { [LABELS.instance]: this.base.instance, [LABELS.app]: spec.app, [LABELS.type]: 'run', [LABELS.release]: String(spec.release) },
      TaskTemplate: {
        ContainerSpec: {
          ...this.containerBase(spec.image, environmentList(spec.env, port), spec.app, 'run', spec.release, containerUserFor(this.base.user, image)),
          Command: ['/bin/sh', '-c', spec.command],
        },
        LogDriver: this.logDriver(),
        Resources: { Limits: this.limitsOf(limits) },
        RestartPolicy: { Condition: 'none' },
        ...this.networks(),
      },
      Mode: { ReplicatedJob: { MaxConcurrent: 1, TotalCompletions: 1 } },
    };
    const created = await callEngine<{ ID: string }>(this.docker, 'POST', '/services/create', {}, body, undefined, this.authOf(body));
    this.runs.add(created.ID);
    try {
      // The command's time counts from when its container runs; getting there has the start timeout.
      let deadline = Date.now() + this.base.startTimeoutMs + spec.timeoutSeconds * 1000;
      let running = false;
      let task: TaskView | null = null;
      for (;;) {
        const tasks = (await listTasks(this.docker, { service: [created.ID] })).map(taskView);
        task = tasks.find((t) => !TASK_LIVE_STATES.has(t.state)) ?? null;
        if (!running && tasks.some((t) => t.state === 'running')) {
          running = true;
          deadline = Date.now() + spec.timeoutSeconds * 1000;
        }
        if (task !== null || Date.now() >= deadline) break;
        await sleep(100);
      }
      const timedOut = task === null;
      if (task !== null && task.state === 'rejected') throw new Error(`the one-off task could not run: ${task.err || task.state}`);
      const { output, missing } = await this.jobOutput(created.ID, spec.outputLimitBytes);
      const notes = [
        ...(timedOut ? [`killed after the timeout of ${spec.timeoutSeconds} s`] : []),
        ...(missing === null ? [] : [`the output could not be read in full: ${missing}`]),
      ];
      return { exitCode: timedOut ? RUN_TIMEOUT_EXIT_CODE : (task?.exitCode ?? 1), output: output.text(notes) };
    } finally {
      this.runs.delete(created.ID);
      await callEngine(this.docker, 'DELETE', `/services/${created.ID}`).catch(() => undefined);
    }
  }

  /**
   * A finished one-off task's output, from its service's logs. While the engine says part of
   * them could not be read (the task's node not reachable just then, e.g. rejoining the
   * swarm), they are read again, for up to JOB_LOG_RETRY_MS; then the error goes with what was read.
   */
  private async jobOutput(serviceId: string, limit: number): Promise<{ output: CappedOutput; missing: string | null }> {
    const deadline = Date.now() + JOB_LOG_RETRY_MS;
    for (;;) {
      const output = new CappedOutput(limit);
      let missing: string | null = null;
      const stream = await streamFromEngine(this.docker, `/services/${serviceId}/logs`, { stdout: true, stderr: true });
      await waitAtMost(followFrames(stream, (_which, payload) => output.push(payload), (error) => (missing ??= error)), 5000);
      stream.destroy();
      if (missing === null || Date.now() >= deadline) return { output, missing };
      await sleep(500);
    }
  }

  /** The state of each container from its service's tasks (last read); unknown ids are left out. */
  async states(ids: string[]): Promise<Map<string, ContainerState>> {
    const states = new Map<string, ContainerState>();
    const byService = new Map<Service, Map<string, TaskView | null>>();
    for (const id of ids) {
      const service = this.serviceOf(id);
      if (service === null) continue;
      let pairs = byService.get(service);
      if (pairs === undefined) {
        pairs = this.pairs(service);
        byService.set(service, pairs);
      }
      const task = pairs.get(id) ?? null;
      states.set(id, task === null ? (service.members.get(id)?.digest === service.digest ? 'created' : 'down') : stateOf(task));
    }
    return states;
  }

  /**
   * Where the running (and, for web, healthy) tasks of one process type of an app listen:
   * their node's address and the port published there. Each carries its task's id
   * (`task:<id>`), not a container's: Swarm, not the stop of a container, decides which task
   * a scale-down stops, so the router follows the tasks (a stopping one is dropped at the next
   * read of the tasks and keeps serving for the drain time).
   */
  endpoints(app: string, type: string): Endpoint[] {
    const service = this.services.get(this.serviceName(app, type));
    return service === undefined ? [] : this.endpointsOf(service);
  }

  private endpointsOf(service: Service): Endpoint[] {
    if (service.port === null) return [];
    const routable = (task: TaskView): boolean => {
      const node = this.nodes.get(task.node);
      return task.state === 'running' && task.port !== null && node !== undefined && node.ready && node.address !== null;
    };
    let tasks = service.tasks.filter((task) => task.desired === 'running' && routable(task));
    // Tasks Swarm is stopping keep serving for the drain time: the last resort while none
    // other runs (every task of a drained node told to stop before its replacements are up).
    if (tasks.length === 0) tasks = service.tasks.filter((task) => task.desired !== 'running' && routable(task));
    return tasks.map((task) => ({ host: this.nodes.get(task.node)?.address as string, port: task.port as number, id: `task:${task.id}` }));
  }

  /** The node each running task of one process type of an app is on (its id), in slot order: what the tests check. */
  placement(app: string, type: string): string[] {
    const service = this.services.get(this.serviceName(app, type));
    return (service?.tasks ?? []).filter((t) => t.state === 'running' && t.desired === 'running').map((t) => t.node);
  }

  /**
   * Removes the services of this controller instance that no container of this process stands
   * for, and takes out of the others the containers nothing restored (call it at start-up
   * after restoring); one-off jobs a stopped controller left go too. Resolves with how many
   * containers it removed.
   */
  async reapOrphans(): Promise<number> {
    await this.prepare();
    const listed = await callEngine<ServiceInfo[]>(this.docker, 'GET', '/services', { filters: JSON.stringify({ label: [`${LABELS.instance}=${this.base.instance}`] }) });
    let reaped = 0;
    for (const info of listed) {
      const labels = info.Spec.Labels;
      if (labels[LABELS.type] === 'run') {
        if (this.runs.has(info.ID)) continue;
        await callEngine(this.docker, 'DELETE', `/services/${info.ID}`).catch(() => undefined);
        continue;
      }
      const service = this.services.get(info.Spec.Name);
      const unclaimed = service === undefined ? membersOf(info) : [...service.members.values()].filter((m) => !this.started.has(m.id));
      for (const member of unclaimed) {
        if (service === undefined) continue;
        await this.queued(service.name, () => this.release(service, member.id));
      }
      if (service === undefined || service.members.size === 0) {
        await callEngine(this.docker, 'DELETE', `/services/${info.ID}`).catch(() => undefined);
        if (service !== undefined) this.forget(service);
      }
      reaped += unclaimed.length;
      const app = labels[LABELS.app];
      if (app && unclaimed.length > 0) this.event(app, `removed ${unclaimed.length} task(s) of ${info.Spec.Name}, which the controller no longer records`);
    }
    await this.log.flush();
    return reaped;
  }

  /**
   * Refuses new work and lets go of the swarm: polls and log follows end, one-off jobs are
   * removed, the services keep running (the next controller process adopts them).
   */
  shutdown(): Promise<void> {
    this.closing ??= (async () => {
      if (this.pollTimer !== null) clearTimeout(this.pollTimer);
      this.pollTimer = null;
      for (const service of this.services.values()) service.logs?.abort();
      await Promise.all([...this.runs].map((id) => callEngine(this.docker, 'DELETE', `/services/${id}`).catch(() => undefined)));
      await this.polling?.catch(() => undefined);
      await this.log.flush();
    })();
    return this.closing;
  }

  // ---- placing containers in services

  private async place(spec: ContainerSpec, name: string, template: TaskTemplate, digest: string, port: number | null): Promise<ContainerState> {
    this.assertOpen();
    let service = this.services.get(name) ?? null;
    const label = `${spec.type}.${spec.num} (v${spec.release})`;
    // A service an earlier controller process left: its output is followed from now on.
    if (service !== null && service.logs === null) this.follow(service, Math.floor(Date.now() / 1000));
    try {
      if (service === null) {
        service = await this.create(spec, name, template, digest, port);
      } else if (service.digest !== digest) {
        await this.roll(service, spec, template, digest, port);
      } else if (service.members.has(spec.id)) {
        if (this.started.has(spec.id)) await this.restart(service, spec);
        else await this.adopt(service);
      } else {
        await this.scaleUp(service, spec);
      }
    } catch (error) {
      const reason = engineReason(error);
      this.event(spec.app, `${label} did not start: ${reason}`);
      await this.log.flushApp(spec.app);
      throw error instanceof Error ? error : new Error(reason);
    }
    this.started.add(spec.id);
    this.event(spec.app, `${label} is up: ${name} runs ${this.running(service)} task(s)`);
    if (service.port !== null) await this.checkReachable(service);
    return 'up';
  }

  private async create(spec: ContainerSpec, name: string, template: TaskTemplate, digest: string, port: number | null): Promise<Service> {
    const members = new Map([[spec.id, { id: spec.id, num: spec.num, digest }]]);
    const body = this.serviceSpec(name, spec.app, spec.type, spec.release, digest, members, template, port);
    const created = await callEngine<{ ID: string }>(this.docker, 'POST', '/services/create', {}, body, undefined, this.authOf(body));
    const service: Service = { name, app: spec.app, type: spec.type, id: created.ID, digest, force: 0, release: spec.release, members, port, tasks: [], lastLines: new OutputTail(), logs: null, refollow: null, previous: null, gone: false };
    this.services.set(name, service);
    this.follow(service, 0);
    this.event(spec.app, `created the service ${name} for ${spec.type} (v${spec.release})`);
    try {
      await this.converge(service, { before: new Set(), update: false, timeoutMs: this.base.startTimeoutMs });
    } catch (error) {
      await this.removeService(service);
      throw error;
    }
    return service;
  }

  /** A new spec for the service: every task is replaced, start-first; a failed update is rolled back by Swarm. */
  private async roll(service: Service, spec: ContainerSpec, template: TaskTemplate, digest: string, port: number | null): Promise<void> {
    const info = await this.inspect(service);
    const members = new Map(service.members);
    members.set(spec.id, { id: spec.id, num: spec.num, digest });
    const body = this.serviceSpec(service.name, spec.app, spec.type, spec.release, digest, members, template, port);
    const previous = { template: info.Spec.TaskTemplate, endpoint: info.Spec.EndpointSpec, digest: service.digest, release: service.release, port: service.port };
    template.ForceUpdate = info.Spec.TaskTemplate.ForceUpdate ?? 0;
    this.event(spec.app, `rolling ${service.name} to v${spec.release}: ${replicasOf(members)} task(s), each new one healthy before an old one stops`);
    const before = await this.taskIds(service);
    await this.update(service, info, body);
    service.previous = previous;
    service.force = template.ForceUpdate;
    service.digest = digest;
    service.release = spec.release;
    service.members = members;
    service.port = port;
    try {
      await this.converge(service, { before, update: true, timeoutMs: this.updateTimeoutMs });
    } catch (error) {
      await this.reload(service);
      if (service.digest === digest) service.previous = null;
      throw error;
    }
  }

  /** Starting a started container again: every task of the service is replaced (a forced rolling update). */
  private async restart(service: Service, spec: ContainerSpec): Promise<void> {
    const info = await this.inspect(service);
    const body: ServiceSpec = { ...info.Spec, TaskTemplate: { ...info.Spec.TaskTemplate, ForceUpdate: (info.Spec.TaskTemplate.ForceUpdate ?? 0) + 1 } };
    this.event(spec.app, `restarting ${service.name}: every task is replaced, each new one healthy before an old one stops`);
    const before = await this.taskIds(service);
    await this.update(service, info, body);
    service.force = body.TaskTemplate.ForceUpdate ?? 0;
    await this.converge(service, { before, update: true, timeoutMs: this.updateTimeoutMs });
  }

  /** A container a service lists from before this process: waits for its tasks as they are. */
  private async adopt(service: Service): Promise<void> {
    await this.converge(service, { before: await this.taskIds(service), update: false, timeoutMs: this.base.startTimeoutMs });
  }

  private async scaleUp(service: Service, spec: ContainerSpec): Promise<void> {
    const members = new Map(service.members);
    members.set(spec.id, { id: spec.id, num: spec.num, digest: service.digest });
    if (replicasOf(members) === replicasOf(service.members)) {
      // Its task already runs: one of a replaced container's.
      await this.setMembers(service, members);
      return;
    }
    const before = await this.taskIds(service);
    await this.setMembers(service, members);
    try {
      await this.converge(service, { before, update: false, timeoutMs: this.base.startTimeoutMs });
    } catch (error) {
      members.delete(spec.id);
      await this.setMembers(service, members).catch(() => undefined);
      throw error;
    }
  }

  /** Takes a container out of its service (see `stop`). */
  private async release(service: Service, id: string): Promise<void> {
    if (!service.members.has(id)) return;
    this.started.delete(id);
    const members = new Map(service.members);
    members.delete(id);
    if (members.size === 0) {
      await this.removeService(service);
      return;
    }
    const current = [...members.values()].filter((m) => m.digest === service.digest).length;
    if (current === 0 && service.previous !== null) {
      await this.revert(service, members);
      return;
    }
    await this.setMembers(service, members);
    await this.waitForStops(service);
  }

  /** The last container of the current spec went while earlier ones remain (a change undone): back to their spec. */
  private async revert(service: Service, members: Map<string, Member>): Promise<void> {
    const previous = service.previous;
    if (previous === null) return;
    const info = await this.inspect(service);
    const back = new Map([...members.values()].map((m) => [m.id, { ...m, digest: previous.digest }]));
    const body: ServiceSpec = {
      ...info.Spec,
      Labels: this.serviceLabels(service.app, service.type, previous.release, previous.digest, back),
      TaskTemplate: previous.template,
      Mode: { Replicated: { Replicas: replicasOf(back) } },
      ...(previous.endpoint === undefined ? {} : { EndpointSpec: previous.endpoint }),
    };
    this.event(service.app, `rolling ${service.name} back to v${previous.release}`);
    const before = await this.taskIds(service);
    await this.update(service, info, body);
    service.digest = previous.digest;
    service.force = previous.template.ForceUpdate ?? 0;
    service.release = previous.release;
    service.port = previous.port;
    service.members = back;
    service.previous = null;
    await this.converge(service, { before, update: true, timeoutMs: this.updateTimeoutMs });
  }

  private async setMembers(service: Service, members: Map<string, Member>): Promise<void> {
    const info = await this.inspect(service);
    const body: ServiceSpec = {
      ...info.Spec,
      Labels: this.serviceLabels(service.app, service.type, service.release, service.digest, members),
      Mode: { Replicated: { Replicas: replicasOf(members) } },
    };
    await this.update(service, info, body);
    service.members = members;
  }

  private async removeService(service: Service): Promise<void> {
    await callEngine(this.docker, 'DELETE', `/services/${service.id}`).catch((error: unknown) => {
      if (engineStatus(error) !== 404) throw error;
    });
    this.event(service.app, `removed the service ${service.name}`);
    this.forget(service);
    // Its tasks stop (after the drain) once the service is gone.
    await this.waitForStops(service, true);
    await this.log.flushApp(service.app);
  }

  private forget(service: Service): void {
    service.gone = true;
    service.logs?.abort();
    service.logs = null;
    service.members = new Map();
    if (this.services.get(service.name) === service) this.services.delete(service.name);
    this.noteEndpoints();
  }

  // ---- watching tasks

  /** The ids of the service's tasks now: a change's new failures are those of other tasks. */
  private async taskIds(service: Service): Promise<Set<string>> {
    return new Set((await listTasks(this.docker, { service: [service.id] })).map((t) => t.ID));
  }

  /**
   * Waits until the service runs as many tasks as it has replicas, every one of its current
   * spec and running (for web: healthy), the rolling update (if any) completed. A new task
   * failing before that fails the wait with its reason (`update`: Swarm rolls the update back
   * first, and the wait fails once the rollback completed).
   */
  private async converge(service: Service, how: { before: Set<string>; update: boolean; timeoutMs: number }): Promise<void> {
    this.busy++;
    try {
      const deadline = Date.now() + how.timeoutMs;
      const replicas = replicasOf(service.members);
      let rollingBack = false;
      let settledAt: number | null = null;
      for (;;) {
        const [info, tasks] = await Promise.all([this.inspect(service), listTasks(this.docker, { service: [service.id] })]);
        service.tasks = tasks.map(taskView);
        await this.readNodes(service.tasks.some((t) => t.node !== '' && !this.nodes.has(t.node))).catch(() => undefined);
        this.noteEndpoints();
        const update = info.UpdateStatus?.State ?? null;
        const failed = service.tasks.filter((t) => TASK_FAILED_STATES.has(t.state) && !how.before.has(t.id));
        if (how.update && update !== null && /rollback|paused/.test(update)) rollingBack = true;
        if (rollingBack) {
          if (update === 'rollback_completed' || update === 'paused' || update === 'rollback_paused' || Date.now() >= deadline) {
            throw new Error(await this.failure(service, failed, info.UpdateStatus?.Message ?? 'the update failed and was rolled back'));
          }
        } else if (!how.update && failed.some((t) => t.spec === service.digest)) {
          throw new Error(await this.failure(service, failed, null));
        } else {
          const live = service.tasks.filter((t) => t.desired === 'running');
          const current = live.filter((t) => t.spec === service.digest && t.force === service.force);
          const done = update !== 'updating' && live.length === replicas && current.length === replicas && live.every((t) => t.state === 'running');
          if (done) {
            // Types without a health check must keep running a moment.
            if (service.type === 'web') return;
            settledAt ??= Date.now();
            if (Date.now() - settledAt >= this.base.settleMs) return;
          } else {
            settledAt = null;
          }
          if (Date.now() >= deadline) {
            if (how.update) {
              // Swarm waits for a task that never gets healthy: the update is rolled back here.
              await callEngine(this.docker, 'POST', `/services/${service.id}/update`, { version: info.Version.Index, rollback: 'previous' }, info.Spec).catch(() => undefined);
              rollingBack = true;
            } else {
              const starting = live.filter((t) => t.state !== 'running').length;
              throw new Error(
                `${starting} task(s) of ${service.name} were not ${service.type === 'web' ? 'healthy' : 'running'} within ${formatSeconds(how.timeoutMs)}${lastOutputNote(service.lastLines.lines())}`,
              );
            }
          }
        }
        await sleep(200);
      }
    } finally {
      this.busy--;
    }
  }

  private async failure(service: Service, failed: TaskView[], summary: string | null): Promise<string> {
    // The failed task's last lines come through the log stream a moment later.
    await sleep(700);
    const task = failed[failed.length - 1];
    const reason = task ? `a task ${task.state}: ${task.err || `exit code ${task.exitCode ?? '?'}`}` : '';
    return [summary, reason].filter((part) => part).join('; ') + lastOutputNote(service.lastLines.lines());
  }

  /** Waits until no task of the service that Swarm was told to stop still runs (at most the stop grace period and a little). */
  private async waitForStops(service: Service, all = false): Promise<void> {
    const deadline = Date.now() + this.drainMs + this.base.stopTimeoutMs + 10_000;
    this.busy++;
    try {
      for (;;) {
        const tasks = (await listTasks(this.docker, { service: [service.id] }).catch(() => [] as TaskInfo[])).map(taskView);
        if (!service.gone) service.tasks = tasks;
        this.noteEndpoints();
        const live = tasks.filter((t) => TASK_LIVE_STATES.has(t.state));
        const stopping = all ? live : live.filter((t) => t.desired !== 'running');
        const extra = all ? 0 : live.filter((t) => t.desired === 'running').length - replicasOf(service.members);
        if ((stopping.length === 0 && extra <= 0) || Date.now() >= deadline) return;
        await sleep(200);
      }
    } finally {
      this.busy--;
    }
  }

  /** Reads every service's tasks and the nodes, for the states and endpoints, now and then. */
  private schedulePoll(): void {
    if (this.closing !== null || this.pollTimer !== null) return;
    this.pollTimer = setTimeout(
      () => {
        this.pollTimer = null;
        this.polling = this.poll()
          .catch(() => undefined)
          .finally(() => {
            this.polling = null;
            this.schedulePoll();
          });
      },
      this.busy > 0 ? Math.min(200, this.pollMs) : this.pollMs,
    );
    this.pollTimer.unref();
  }

  private async poll(): Promise<void> {
    if (this.services.size === 0) return;
    // Only the tasks of this scheduler's services: the swarm may run many others.
    const tasks = await listTasks(this.docker, { service: [...this.services.values()].map((service) => service.id) });
    const byService = new Map<string, TaskView[]>();
    for (const task of tasks) {
      const views = byService.get(task.ServiceID) ?? [];
      views.push(taskView(task));
      byService.set(task.ServiceID, views);
    }
    for (const service of this.services.values()) service.tasks = byService.get(service.id) ?? [];
    await this.readNodes(tasks.some((t) => t.NodeID !== undefined && !this.nodes.has(t.NodeID)));
    this.noteEndpoints();
  }

  private async readNodes(force: boolean): Promise<void> {
    if (!force && Date.now() - this.nodesRead < 5000) return;
    const nodes = await callEngine<NodeInfo[]>(this.docker, 'GET', '/nodes');
    this.nodesRead = Date.now();
    const before = this.nodes;
    this.nodes = new Map(
      nodes.map((node) => {
        const hostname = node.Description?.Hostname ?? '';
        const own = node.Status?.Addr && node.Status.Addr !== '0.0.0.0' ? node.Status.Addr : (node.ManagerStatus?.Addr?.replace(/:[0-9]+$/, '') ?? null);
        const address = this.nodeAddresses[node.ID] ?? this.nodeAddresses[hostname] ?? own;
        return [node.ID, { address, ready: node.Status?.State === 'ready' }];
      }),
    );
    // A node that is back (or new) gets no log subscription made while it was away: the
    // services' logs are followed again, so its tasks' output reaches the apps' logs.
    const back = before.size > 0 && [...this.nodes].some(([id, node]) => node.ready && before.get(id)?.ready !== true);
    if (back) for (const service of this.services.values()) service.refollow?.();
  }

  /** Tells the router when the endpoints changed since it was last told. */
  private noteEndpoints(): void {
    const parts: string[] = [];
    for (const service of [...this.services.values()].sort((a, b) => (a.name < b.name ? -1 : 1))) {
      if (service.port === null) continue;
      parts.push(`${service.name}=${this.endpointsOf(service).map((e) => `${e.id}@${e.host}:${e.port}`).join(',')}`);
    }
    const key = parts.join(' ');
    if (key === this.endpointKey) return;
    this.endpointKey = key;
    this.endpointsChanged();
  }

  /** Each member with the task that stands for it: current members first, by number, with the live tasks by slot. */
  private pairs(service: Service): Map<string, TaskView | null> {
    const members = [...service.members.values()].sort((a, b) => {
      const currentA = a.digest === service.digest ? 0 : 1;
      const currentB = b.digest === service.digest ? 0 : 1;
      return currentA - currentB || a.num - b.num || (a.id < b.id ? -1 : 1);
    });
    const tasks = service.tasks.filter((t) => t.desired === 'running').sort((a, b) => a.slot - b.slot || a.created - b.created);
    return new Map(members.map((member, index) => [member.id, tasks[index] ?? null]));
  }

  private running(service: Service): number {
    return service.tasks.filter((t) => t.state === 'running' && t.desired === 'running').length;
  }

  /** Warns when the controller cannot connect to a running task where the router will send requests. */
  private async checkReachable(service: Service): Promise<void> {
    await this.readNodes(service.tasks.some((t) => !this.nodes.has(t.node)));
    for (const endpoint of this.endpoints(service.app, service.type)) {
      if (await acceptsConnections(endpoint.host, endpoint.port, 2000)) continue;
      const message = `the controller cannot connect to a task of ${service.name} at ${endpoint.host}:${endpoint.port}: set SWARM_NODE_ADDRESSES to addresses of the nodes it can reach`;
      this.event(service.app, message);
      this.base.warn(message);
    }
  }

  /** Follows the output of every task of the service into the app's log, from `since` (seconds). */
  private follow(service: Service, since: number): void {
    const abort = new AbortController();
    service.logs = abort;
    // A stream followed again starts at the second of the last line: lines seen then are skipped.
    let recent = new Set<string>();
    let last = '';
    let from = since;
    let incomplete = false;
    const run = async (): Promise<void> => {
      while (!abort.signal.aborted && !service.gone && this.closing === null) {
        try {
          const stream = await streamFromEngine(
            this.docker,
            `/services/${service.id}/logs`,
            { follow: true, stdout: true, stderr: true, details: true, timestamps: true, since: from },
            abort.signal,
          );
          abort.signal.addEventListener('abort', () => stream.destroy(), { once: true });
          // A node's logs that could not be read (a node rejoining): this stream would go on
          // without them, so it is left, and followed again from the last line seen.
          const onEngineError = (): void => {
            incomplete = true;
            stream.destroy();
          };
          service.refollow = () => stream.destroy();
          await followLines(stream, (_which, line) => {
            const entry = parseServiceLogLine(line);
            const key = `${entry.stamp} ${entry.task} ${entry.message}`;
            if (recent.has(key)) return;
            if (entry.stamp.slice(0, 19) !== last.slice(0, 19)) recent = new Set();
            recent.add(key);
            if (entry.stamp !== '') last = entry.stamp;
            const slot = service.tasks.find((t) => t.id === entry.task)?.slot;
            service.lastLines.push(entry.message);
            this.log.write(service.app, `${service.app}[${service.type}.${slot ?? '?'}]`, entry.message);
          }, onEngineError);
        } catch {
          // The service went, or the manager did not answer: tried again below while the service exists.
        }
        service.refollow = null;
        const stamp = Date.parse(last);
        if (Number.isFinite(stamp)) from = Math.floor(stamp / 1000);
        await sleep(incomplete ? FOLLOW_RETRY_AFTER_ENGINE_ERROR_MS : 1000);
        incomplete = false;
      }
    };
    void run();
  }

  // ---- the engine's objects

  private serviceSpec(
    name: string,
    app: string,
    type: string,
    release: number,
    digest: string,
    members: Map<string, Member>,
    template: TaskTemplate,
    port: number | null,
  ): ServiceSpec {
    // Every task at once, start-first: each new task healthy before its old one stops, as the
    // core's rollouts do on one engine; placed together, the new tasks spread over the nodes.
    const update = { Parallelism: 0, Delay: 0, Monitor: ms(this.monitorMs), MaxFailureRatio: 0, Order: 'start-first' as const };
    return {
      Name: name,
      Labels: this.serviceLabels(app, type, release, digest, members),
      TaskTemplate: template,
      Mode: { Replicated: { Replicas: replicasOf(members) } },
      UpdateConfig: { ...update, FailureAction: 'rollback' },
      RollbackConfig: { ...update, FailureAction: 'pause' },
      EndpointSpec: port === null ? { Mode: 'vip', Ports: [] } : { Mode: 'vip', Ports: [{ Protocol: 'tcp', TargetPort: port, PublishMode: 'host' }] },
    };
  }

  private serviceLabels(app: string, type: string, release: number, digest: string, members: Map<string, Member>): Record<string, string> {
    return {
      [LABELS.instance]: this.base.instance,
      [LABELS.app]: app,
      [LABELS.type]: type,
      [LABELS.release]: String(release),
      [LABELS.spec]: digest,
      [MEMBERS_LABEL]: JSON.stringify([...members.values()].map((m) => [m.id, m.num, m.digest === digest ? '' : m.digest])),
    };
  }

  /** The engine's log limits, for every task. */
  private logDriver(): TaskTemplate['LogDriver'] {
    return { Name: this.base.logConfig.Type, Options: this.base.logConfig.Config };
  }

  private containerBase(image: string, env: string[], app: string, type: string, release: number, user: string): TaskTemplate['ContainerSpec'] {
    return {
      Image: image,
      Env: env,
      User: user,
      Labels: { [LABELS.instance]: this.base.instance, [LABELS.app]: app, [LABELS.type]: type, [LABELS.release]: String(release) },
      Init: true,
      CapabilityDrop: ['ALL'],
      ReadOnly: this.base.readonlyRootfs,
      ...(this.base.readonlyRootfs ? { Mounts: [{ Type: 'tmpfs' as const, Target: '/tmp', TmpfsOptions: { SizeBytes: 64 * 1024 * 1024, Mode: 0o1777 } }] } : {}),
      StopGracePeriod: ms(this.base.stopTimeoutMs),
    };
  }

  private limitsOf(limits: ContainerLimits): TaskTemplate['Resources']['Limits'] {
    return {
      Pids: this.base.pidsLimit,
      ...(limits.memoryBytes === null ? {} : { MemoryBytes: limits.memoryBytes }),
      ...(limits.nanoCpus === null ? {} : { NanoCPUs: limits.nanoCpus }),
    };
  }

  /** The task template of a container spec: command (drained for routed types), health check for web, limits, restart policy. */
  private template(spec: ContainerSpec, own: number, port: number | null, digest: string, imageOwn: string[], user: string): TaskTemplate {
    const base = this.containerBase(spec.image, environmentList(spec.env, own), spec.app, spec.type, spec.release, user);
    base.Labels[LABELS.spec] = digest;
    const command = spec.command === null ? imageOwn : ['/bin/sh', '-c', spec.command];
    const container: TaskTemplate['ContainerSpec'] = { ...base };
    if (port !== null) {
      // Swarm stops a replaced task on its own: it keeps serving while the router drops it.
      container.Command = ['/bin/sh', '-c', drainScript(this.drainMs), 'svc-drain', ...command];
      container.StopGracePeriod = ms(this.drainMs + this.base.stopTimeoutMs);
    } else if (spec.command !== null) {
      container.Command = command;
    }
    if (spec.type === 'web' && port !== null) {
      const timeout = Math.max(1000, Math.min(5000, this.healthIntervalMs));
      container.Healthcheck = {
        Test: ['CMD-SHELL', healthScript(port, spec.env.HEALTHCHECK_URL)],
        Interval: ms(this.healthIntervalMs),
        Timeout: ms(timeout),
        Retries: 3,
        StartPeriod: ms(startTimeoutOf(this.base, spec.env)),
      };
    }
    const limits = containerLimits(spec.memory, spec.cpu, { memory: this.base.defaultMemory, cpu: this.base.defaultCpu });
    return {
      ContainerSpec: container,
      Resources: { Limits: this.limitsOf(limits) },
      RestartPolicy: { Condition: 'any', Delay: ms(this.restartDelayMs), MaxAttempts: 0 },
      LogDriver: this.logDriver(),
      // One node's loss takes as few of a type's tasks as it can.
      Placement: { Preferences: [{ Spread: { SpreadDescriptor: 'node.id' } }] },
      ...this.networks(),
      ForceUpdate: 0,
    };
  }

  private networks(): Pick<TaskTemplate, 'Networks'> {
    return this.network === null ? {} : { Networks: [{ Target: this.network }] };
  }

  /** Everything a service's tasks are made from, but not which containers it stands for. */
  private digest(spec: ContainerSpec, own: number, port: number | null): string {
    return digestOf([
      own,
      spec.app,
      spec.type,
      spec.release,
      spec.image,
      spec.command,
      sortedEntries(spec.env),
      spec.memory,
      spec.cpu,
      port,
      this.base.user,
      this.base.pidsLimit,
      this.base.readonlyRootfs,
      this.base.defaultMemory,
      this.base.defaultCpu,
      this.drainMs,
      this.base.stopTimeoutMs,
      this.healthIntervalMs,
      // Only when set: services made before the setting existed keep their digest.
      ...(this.network === null ? [] : [this.network]),
    ]);
  }

  /** The service of a process type: `<prefix>-<app>-<type>`, or a digest of both when that is no valid name. */
  serviceName(app: string, type: string): string {
    const plain = `${this.prefix}-${app}-${type}`;
    if (/^[a-zA-Z0-9][a-zA-Z0-9-]{0,62}$/.test(plain)) return plain;
    return `${this.prefix}-${createHash('sha256').update(`${app}\n${type}`).digest('hex').slice(0, 24)}`;
  }

  private async inspect(service: Service): Promise<ServiceInfo> {
    return callEngine<ServiceInfo>(this.docker, 'GET', `/services/${service.id}`);
  }

  /** The registry login for a service whose image is the platform registry's: Swarm keeps it, and each node pulls with it. */
  private authOf(body: ServiceSpec): RegistryAuth | undefined {
    return authFor(this.base.registryLogin, body.TaskTemplate.ContainerSpec.Image);
  }

  private async update(service: Service, info: ServiceInfo, body: ServiceSpec): Promise<void> {
    let version = info.Version.Index;
    for (let attempt = 1; ; attempt++) {
      try {
        await callEngine(this.docker, 'POST', `/services/${service.id}/update`, { version }, body, undefined, this.authOf(body));
        return;
      } catch (error) {
        // Swarm itself changed the service meanwhile (the status of an update): its spec is
        // ours, so the same spec goes again on the new version.
        if (attempt >= 3 || !/out of sequence/i.test(engineReason(error))) throw error;
        version = (await this.inspect(service)).Version.Index;
      }
    }
  }

  /** Reads the service's labels again (after Swarm rolled it back, the labels are the earlier ones too). */
  private async reload(service: Service): Promise<void> {
    Object.assign(service, specFields(await this.inspect(service)));
  }

  /** Learns, once, the services this instance has on the swarm (from an earlier controller process). */
  private loadAll(): Promise<void> {
    this.loadedAll ??= (async () => {
      await this.prepare();
      const listed = await callEngine<ServiceInfo[]>(this.docker, 'GET', '/services', { filters: JSON.stringify({ label: [`${LABELS.instance}=${this.base.instance}`] }) });
      for (const info of listed) {
        const labels = info.Spec.Labels;
        const app = labels[LABELS.app];
        const type = labels[LABELS.type];
        if (!app || !type || type === 'run' || this.services.has(info.Spec.Name)) continue;
        const service: Service = {
          name: info.Spec.Name,
          app,
          type,
          id: info.ID,
          ...specFields(info),
          tasks: [],
          lastLines: new OutputTail(),
          logs: null,
          refollow: null,
          previous: null,
          gone: false,
        };
        this.services.set(service.name, service);
        service.tasks = (await listTasks(this.docker, { service: [service.id] })).map(taskView);
      }
    })().catch((error: unknown) => {
      this.loadedAll = null;
      throw error;
    });
    return this.loadedAll;
  }

  private serviceOf(id: string): Service | null {
    for (const service of this.services.values()) if (service.members.has(id)) return service;
    return null;
  }

  /** Runs the changes of one service one after another. */
  private async queued<T>(name: string, task: () => Promise<T>): Promise<T> {
    const previous = this.queues.get(name) ?? Promise.resolve();
    const next = previous.catch(() => undefined).then(task);
    this.queues.set(name, next);
    try {
      return await next;
    } finally {
      if (this.queues.get(name) === next) this.queues.delete(name);
    }
  }

  private assertOpen(): void {
    if (this.closing !== null) throw new Error('the scheduler is shutting down');
  }

  private event(app: string, message: string): void {
    this.log.write(app, SCHEDULER_LOG_SOURCE, message);
  }
}

/** Types that may serve HTTP and are routed: `web`, and `cmd` (an image's own command) when an app has no web. */
function isRouted(type: string): boolean {
  return type === 'web' || type === 'cmd';
}

/** Replicas for a service's containers: those of the current spec, or as many as the replaced ones whose tasks it took over. */
function replicasOf(members: Map<string, Member>): number {
  const digests = new Map<string, number>();
  for (const member of members.values()) digests.set(member.digest, (digests.get(member.digest) ?? 0) + 1);
  return Math.max(0, ...digests.values());
}

/** What a service's spec on the engine says of it: its labels, its forced updates and its port. */
function specFields(info: ServiceInfo): Pick<Service, 'digest' | 'force' | 'release' | 'members' | 'port'> {
  return {
    digest: info.Spec.Labels[LABELS.spec] ?? '',
    force: info.Spec.TaskTemplate.ForceUpdate ?? 0,
    release: Number(info.Spec.Labels[LABELS.release] ?? 0),
    members: new Map(membersOf(info).map((m) => [m.id, m])),
    port: info.Spec.EndpointSpec?.Ports?.[0]?.TargetPort ?? null,
  };
}

function membersOf(info: ServiceInfo): Member[] {
  const digest = info.Spec.Labels[LABELS.spec] ?? '';
  try {
    const parsed = JSON.parse(info.Spec.Labels[MEMBERS_LABEL] ?? '[]') as unknown;
    if (!Array.isArray(parsed)) return [];
    return parsed
      .filter((entry): entry is [string, number, string] => Array.isArray(entry) && typeof entry[0] === 'string' && typeof entry[1] === 'number')
      .map(([id, num, own]) => ({ id, num, digest: typeof own === 'string' && own !== '' ? own : digest }));
  } catch {
    return [];
  }
}

function taskView(task: TaskInfo): TaskView {
  const published = task.Status.PortStatus?.Ports?.find((p) => p.PublishMode === 'host' && p.PublishedPort)?.PublishedPort ?? null;
  return {
    id: task.ID,
    slot: task.Slot ?? 0,
    node: task.NodeID ?? '',
    state: task.Status.State,
    desired: task.DesiredState,
    created: Date.parse(task.CreatedAt),
    port: published,
    err: task.Status.Err ?? '',
    exitCode: task.Status.ContainerStatus?.ExitCode ?? null,
    spec: task.Spec?.ContainerSpec?.Labels?.[LABELS.spec] ?? '',
    force: task.Spec?.ForceUpdate ?? 0,
  };
}

function stateOf(task: TaskView): ContainerState {
  if (task.state === 'running') return 'up';
  if (TASK_FAILED_STATES.has(task.state)) return 'crashed';
  if (TASK_LIVE_STATES.has(task.state)) return 'created';
  return 'down';
}

/**
 * The command every routed task runs under: its own command in the background; on SIGTERM it
 * waits the drain time (the router drops the task meanwhile), then passes SIGTERM on.
 */
export function drainScript(drainMs: number): string {
  const seconds = Math.max(0, Math.ceil(drainMs / 1000));
  return [
    '"$@" &',
    'child=$!',
    `trap 'sleep ${seconds}; kill -TERM $child 2>/dev/null' TERM`,
    'wait $child; status=$?',
    'while kill -0 $child 2>/dev/null; do wait $child; status=$?; done',
    'exit $status',
  ].join('\n');
}

/**
 * The health check of a web task, run inside its container by the engine: HEALTHCHECK_URL
 * answered with 2xx (wget or curl in the image), else a socket listening on the port (read
 * from /proc, no tool needed but a shell and grep).
 */
export function healthScript(port: number, healthcheck: string | undefined): string {
  const asked = healthcheckPath(healthcheck);
  if (asked !== null) {
    const path = asked.replace(/'/g, '%27');
    const url = `http://127.0.0.1:${port}${path}`;
    return `if command -v wget >/dev/null 2>&1; then wget -q -T 5 -O /dev/null '${url}'; else curl -fsS -m 5 -o /dev/null '${url}'; fi`;
  }
  const hex = port.toString(16).toUpperCase().padStart(4, '0');
  return `grep -qE '^ *[0-9]+: [0-9A-F]+:${hex} [0-9A-F]+:[0-9A-F]+ 0A' /proc/net/tcp /proc/net/tcp6`;
}

/** A line of a service's log with details and timestamps: `<time> <k=v,...> <message>`. */
export function parseServiceLogLine(line: string): { stamp: string; task: string; message: string } {
  const first = line.indexOf(' ');
  if (first < 0 || !/^[0-9]{4}-/.test(line)) return { stamp: '', task: '', message: line };
  const stamp = line.slice(0, first);
  const rest = line.slice(first + 1);
  const second = rest.indexOf(' ');
  const details = second < 0 ? rest : rest.slice(0, second);
  if (!details.includes('com.docker.swarm.')) return { stamp, task: '', message: rest };
  const task = /com\.docker\.swarm\.task\.id=([a-z0-9]+)/.exec(details)?.[1] ?? '';
  return { stamp, task, message: second < 0 ? '' : rest.slice(second + 1) };
}
