import type Docker from 'dockerode';
import { KeyedQueue, memoryLimitBytes, type BatchedLogWriter, type BuildToRun, type ContainerSpec, type ContainerState, type RunResult, type RunSpec, type Scheduler } from '@svc/core';
import type { Endpoint } from '../docker-scheduler';
import { LABELS } from '../engine';
import { assertRunnable, containerPortFor, imageCommand } from '../images';
import { containerUserFor } from '../container-user';
import { SCHEDULER_LOG_SOURCE } from '@svc/core';
import { callEngine, listTasks, type ServiceInfo } from './api';
import { runJob } from './jobs';
import { memberState, membersOf, pairs, runningTasks, serviceOf, taskView, type Service, type TaskView } from './members';
import { assertServicesOwned, assertSwarmManager, assertTaskNetwork } from './prerequisites';
import { isForeign } from '../installation';
import { ServiceChanges, type PreparedSpec } from './service-changes';
import { isRouted, serviceName, specDigest, taskTemplate } from './service-spec';
import { swarmSettings, type SwarmSchedulerOptions, type SwarmSettings } from './settings';
import { TaskWatch, servicesOfType, type Services } from './task-watch';

/**
 * Runs each process type of an app as Swarm services: a release's containers of one type
 * are the replicas of one service (`<prefix>-<app>-<type>`, the next generation's name while
 * the service it replaces still runs), its tasks spread over the nodes and health-checked
 * when routed, ports published in host mode on dynamic ports, tasks rescheduled by Swarm
 * when a node is drained or lost. The core's rollout decides: the whole-type step
 * (`rollType`) starts a release's containers of a type as a service of their own, next to
 * the replaced ones, which the core stops once it published the release; stopping the new
 * ones instead (a failed change) leaves the replaced ones as they were. The platform's
 * container ids are kept in a label of each service, so a controller restarted later adopts
 * the services as they are.
 */
export class SwarmScheduler implements Scheduler {
  private readonly settings: SwarmSettings;
  private readonly docker: Docker;
  private readonly log: BatchedLogWriter;
  private readonly services: Services = new Map();
  /** Container ids started or adopted by this process: starting one again restarts it. */
  private readonly started = new Set<string>();
  /** The changes of one process type's services, one after another. */
  private readonly queue = new KeyedQueue();
  /** One-off jobs under way. */
  private readonly runs = new Set<string>();
  private readonly watch: TaskWatch;
  private readonly changes: ServiceChanges;
  private loadedAll: Promise<void> | null = null;
  private prepared: Promise<void> | null = null;
  private closing: Promise<void> | null = null;

  constructor(options: SwarmSchedulerOptions) {
    this.settings = swarmSettings(options);
    this.docker = this.settings.base.docker;
    this.log = this.settings.base.log;
    this.watch = new TaskWatch(this.docker, this.settings, this.services);
    this.changes = new ServiceChanges(this.docker, this.settings, this.log, this.watch, this.services, this.started, () => this.closing !== null);
  }

  /**
   * Checks that the engine is a manager of an active swarm, that no service of the instance is
   * another installation's, and the tasks' network, once; called by the first operation, or at
   * start-up before anything is adopted or removed.
   * @throws InstanceOfAnotherInstallation naming such a service; Error saying what is missing
   *   (no swarm, a worker instead of a manager, the network).
   */
  prepare(): Promise<void> {
    this.prepared ??= (async () => {
      await assertSwarmManager(this.docker);
      await assertServicesOwned(this.settings.base, () => this.listOwn());
      await assertTaskNetwork(this.docker, this.settings.network, this.settings.base.warn);
      this.watch.start();
    })().catch((error: unknown) => {
      this.prepared = null;
      throw error;
    });
    return this.prepared;
  }

  /**
   * Makes the container one of a service of its process type and resolves with `up` once
   * that service runs as many tasks as it has containers, routed ones healthy: more replicas
   * of the service that runs its spec, or a service of its own for a new spec (the service
   * of the spec it replaces is not touched). Starting an id this process started already
   * forces a rolling restart of its service; an id a service already lists with the same
   * spec (a restarted controller) is adopted as it runs.
   * @throws ImageNotFound when no registry has the image; Error with the reason when the
   *   tasks do not come up: what this call changed is undone first.
   */
  async start(spec: ContainerSpec): Promise<ContainerState> {
    const states = await this.rollType([spec], []);
    return states.get(spec.id) ?? 'up';
  }

  /**
   * The whole-type step of the core's rollout: the release's new containers of one process
   * type start together, as one service of their own (or more replicas of the service that
   * runs their spec), spread over the nodes; resolved once every task runs (routed ones
   * healthy). The replaced containers' service is not touched: it keeps serving until the
   * core stops them. On failure the service made for the new containers is removed (replicas
   * added are taken back) before the step rejects, so the replaced ones are as they were;
   * stopping the new ids afterwards (the core's abort) is then a no-op for them, or, after a
   * successful step, removes their service.
   */
  async rollType(specs: ContainerSpec[], replacing: string[]): Promise<Map<string, ContainerState>> {
    this.assertOpen();
    for (const spec of specs) memoryLimitBytes(spec.memory);
    await this.prepare();
    await this.loadAll();
    const prepared: PreparedSpec[] = [];
    for (const spec of specs) prepared.push(await this.prepareSpec(spec));
    // One release's containers of a type share a spec; any that differ get a service of their own.
    const groups = new Map<string, PreparedSpec[]>();
    for (const entry of prepared) {
      const key = `${typeKey(entry.spec.app, entry.spec.type)}\n${entry.digest}`;
      groups.set(key, [...(groups.get(key) ?? []), entry]);
    }
    const states = new Map<string, ContainerState>();
    for (const group of groups.values()) {
      const { app, type } = (group[0] as PreparedSpec).spec;
      await this.queue.run(typeKey(app, type), async () => {
        this.assertOpen();
        await this.changes.place(group, replacing.length);
      });
      for (const { spec } of group) states.set(spec.id, 'up');
    }
    return states;
  }

  /**
   * Before a rollback: a build made for the process scheduler, or an image the manager cannot
   * get (pulled on it now, as a start would), is refused with the reason. The nodes pull the
   * image themselves when their tasks start.
   */
  checkRunnable(build: BuildToRun): Promise<string | null> {
    return this.settings.base.checkRunnable(build);
  }

  /**
   * Takes the container out of its service: one replica fewer, the service goes with its
   * last container; resolved once the task has stopped. Unknown ids are fine.
   */
  async stop(id: string): Promise<void> {
    await this.loadAll().catch(() => undefined);
    const found = this.changes.serviceOf(id);
    if (found === null) return;
    await this.queue.run(typeKey(found.app, found.type), async () => {
      const service = this.changes.serviceOf(id);
      if (service !== null) await this.changes.release(service, id);
    });
  }

  /**
   * Runs a one-off command as a Swarm job (one task, never restarted) of the release's image,
   * isolated like the apps' tasks, and removes it. Output is read from the job's logs and
   * capped; a command still running at its timeout is removed and reported with exit code 124.
   * @throws Error when the task cannot run (image, no node, engine).
   */
  async run(spec: RunSpec): Promise<RunResult> {
    this.assertOpen();
    await this.prepare();
    return runJob(this.settings, spec, this.runs);
  }

  /** The state of each container from its service's tasks (last read); unknown ids are left out. */
  async states(ids: string[]): Promise<Map<string, ContainerState>> {
    const states = new Map<string, ContainerState>();
    const byService = new Map<Service, Map<string, TaskView | null>>();
    for (const id of ids) {
      const service = this.changes.serviceOf(id);
      if (service === null) continue;
      let paired = byService.get(service);
      if (paired === undefined) {
        paired = pairs(service);
        byService.set(service, paired);
      }
      states.set(id, memberState(service, id, paired.get(id) ?? null));
    }
    return states;
  }

  /**
   * Where the running (and, routed, healthy) tasks of one process type of an app listen:
   * their node's address and the port published there. Each carries its task's id
   * (`task:<id>`), not a container's: Swarm, not the stop of a container, decides which task
   * a scale-down stops, so the router follows the tasks (a stopping one is dropped at the next
   * read of the tasks and keeps serving for the drain time).
   */
  endpoints(app: string, type: string): Endpoint[] {
    return this.watch.endpoints(app, type);
  }

  /** The node each running task of one process type of an app is on (its id), by service and slot: what the tests check. */
  placement(app: string, type: string): string[] {
    return servicesOfType(this.services, app, type).flatMap((service) => runningTasks(service).sort((a, b) => a.slot - b.slot).map((t) => t.node));
  }

  /** The service of a process type that runs its latest release (`<prefix>-<app>-<type>` when there is none). */
  serviceName(app: string, type: string): string {
    return servicesOfType(this.services, app, type).at(-1)?.name ?? serviceName(this.settings.prefix, app, type);
  }

  /**
   * Removes the services of this controller instance that no container of this process stands
   * for, and takes out of the others the containers nothing restored (call it at start-up
   * after restoring); one-off jobs a stopped controller left go too. Resolves with how many
   * containers it removed.
   */
  async reapOrphans(): Promise<number> {
    await this.prepare();
    let reaped = 0;
    for (const info of await this.listOwn()) {
      const labels = info.Spec.Labels;
      // Another installation's services are never leftovers of this one (prepare refuses such an instance).
      if (isForeign(labels, this.settings.base)) continue;
      if (labels[LABELS.type] === 'run') {
        if (!this.runs.has(info.ID)) await callEngine(this.docker, 'DELETE', `/services/${info.ID}`).catch(() => undefined);
        continue;
      }
      const service = this.services.get(info.Spec.Name);
      const unclaimed = service === undefined ? membersOf(info) : [...service.members.values()].filter((m) => !this.started.has(m.id));
      if (service !== undefined) {
        for (const member of unclaimed) await this.queue.run(typeKey(service.app, service.type), () => this.changes.release(service, member.id));
      }
      if (service === undefined || service.members.size === 0) {
        await callEngine(this.docker, 'DELETE', `/services/${info.ID}`).catch(() => undefined);
        if (service !== undefined) this.changes.forget(service);
      }
      reaped += unclaimed.length;
      const app = labels[LABELS.app];
      if (app && unclaimed.length > 0) this.log.write(app, SCHEDULER_LOG_SOURCE, `removed ${unclaimed.length} task(s) of ${info.Spec.Name}, which the controller no longer records`);
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
      for (const service of this.services.values()) service.logs?.abort();
      await Promise.all([...this.runs].map((id) => callEngine(this.docker, 'DELETE', `/services/${id}`).catch(() => undefined)));
      await this.watch.stop();
      await this.log.flush();
    })();
    return this.closing;
  }

  /** A container spec with what its tasks are made of: the image's port and command, the template and its digest. */
  private async prepareSpec(spec: ContainerSpec): Promise<PreparedSpec> {
    const { base } = this.settings;
    const image = await base.images.inspect(spec.app, spec.image, spec.release);
    assertRunnable(image, spec.image, spec.command, spec.type);
    const own = containerPortFor(spec.env, image);
    const port = isRouted(spec.type) ? own : null;
    const digest = specDigest(this.settings, spec, own, port);
    const template = taskTemplate(this.settings, { spec, own, port, digest, imageCommand: imageCommand(image), user: containerUserFor(base.user, image) });
    return { spec, template, digest, port };
  }

  private listOwn(): Promise<ServiceInfo[]> {
    return callEngine<ServiceInfo[]>(this.docker, 'GET', '/services', { filters: JSON.stringify({ label: [`${LABELS.instance}=${this.settings.base.instance}`] }) });
  }

  /** Learns, once, the services this instance has on the swarm (from an earlier controller process). */
  private loadAll(): Promise<void> {
    this.loadedAll ??= (async () => {
      await this.prepare();
      for (const info of await this.listOwn()) {
        const app = info.Spec.Labels[LABELS.app];
        const type = info.Spec.Labels[LABELS.type];
        if (!app || !type || type === 'run' || this.services.has(info.Spec.Name) || isForeign(info.Spec.Labels, this.settings.base)) continue;
        const service = serviceOf(info, app, type);
        this.services.set(service.name, service);
        service.tasks = (await listTasks(this.docker, { service: [service.id] })).map(taskView);
      }
    })().catch((error: unknown) => {
      this.loadedAll = null;
      throw error;
    });
    return this.loadedAll;
  }

  private assertOpen(): void {
    if (this.closing !== null) throw new Error('the scheduler is shutting down');
  }
}

function typeKey(app: string, type: string): string {
  return `${app}\n${type}`;
}
