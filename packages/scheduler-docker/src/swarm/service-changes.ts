/*
 * The changes of services that starting and stopping containers make: a service made for a
 * release's containers of one process type, more replicas for more containers of the same
 * spec, a forced update for a restart, fewer replicas (or no service) for stopped ones.
 * Which containers are new and when the replaced ones stop is the core's rollout: a new
 * spec never changes a running service, it gets a service of its own, so that stopping the
 * new containers leaves the replaced ones as they were.
 */
import type Docker from 'dockerode';
import type { BatchedLogWriter, ContainerSpec } from '@svc/core';
import { OutputTail, SCHEDULER_LOG_SOURCE } from '@svc/core';
import { acceptsConnections } from '@svc/supervisor-node';
import { engineReason, engineStatus } from '../engine';
import { authFor, type RegistryAuth } from '../registry-login';
import { callEngine, type ServiceInfo, type ServiceSpec, type TaskTemplate } from './api';
import { converge, taskIds, waitForStops, type Convergence } from './convergence';
import { runningTasks, type Service } from './members';
import { followServiceLogs } from './service-logs';
import { freeServiceName, replicasOf, serviceLabels, serviceSpec, type Member } from './service-spec';
import type { SwarmSettings } from './settings';
import { servicesOfType, type Services, type TaskWatch } from './task-watch';

/** A container spec with the task template, digest and routed port it makes. */
export interface PreparedSpec {
  spec: ContainerSpec;
  template: TaskTemplate;
  digest: string;
  port: number | null;
}

export class ServiceChanges {
  private readonly convergence: Convergence;

  constructor(
    private readonly docker: Docker,
    private readonly settings: SwarmSettings,
    private readonly log: BatchedLogWriter,
    private readonly watch: TaskWatch,
    private readonly services: Services,
    /** Container ids started or adopted by this process: starting one again restarts it. */
    private readonly started: Set<string>,
    private readonly closed: () => boolean,
  ) {
    this.convergence = { docker, settings, watch };
  }

  /** The service of one process type that runs containers of a spec, if any. */
  serviceFor(app: string, type: string, digest: string): Service | null {
    return servicesOfType(this.services, app, type).find((s) => s.digest === digest) ?? null;
  }

  /** The service a container is a member of. */
  serviceOf(id: string): Service | null {
    for (const service of this.services.values()) if (service.members.has(id)) return service;
    return null;
  }

  /**
   * Makes the containers (one spec, one process type) members of a service and resolves
   * once every task of it runs (routed ones healthy): a service of their own when none runs
   * their spec, else more replicas; containers it lists already are restarted (started here
   * before) or adopted (listed by an earlier controller process). On failure what this call
   * changed is undone before it throws: a service it made is removed, replicas it added go.
   */
  async place(group: PreparedSpec[], replacing: number): Promise<void> {
    const [first] = group;
    if (first === undefined) return;
    const { app, type, release } = first.spec;
    const label = group.length === 1 ? `${type}.${first.spec.num} (v${release})` : `${type}.${group.map((p) => p.spec.num).join(',')} (v${release})`;
    let service = this.serviceFor(app, type, first.digest);
    // A service an earlier controller process left: its output is followed from now on.
    if (service !== null && service.logs === null) this.follow(service, Math.floor(Date.now() / 1000));
    try {
      if (service === null) {
        service = await this.create(group, replacing);
      } else {
        const fresh = group.filter((p) => !(service as Service).members.has(p.spec.id));
        if (fresh.length > 0) await this.scaleUp(service, fresh);
        else if (group.some((p) => this.started.has(p.spec.id))) await this.restart(service);
        else await this.adopt(service);
      }
    } catch (error) {
      const reason = engineReason(error);
      this.event(app, `${label} did not start: ${reason}`);
      await this.log.flushApp(app);
      throw error instanceof Error ? error : new Error(reason);
    }
    // An id started again with another spec (a known container restarted on a new release)
    // now runs in this service: the service of its earlier spec lets it go.
    for (const { spec } of group) {
      for (const other of servicesOfType(this.services, app, type)) {
        if (other !== service && other.members.has(spec.id)) await this.release(other, spec.id);
      }
    }
    for (const { spec } of group) this.started.add(spec.id);
    this.event(app, `${label} ${group.length === 1 ? 'is' : 'are'} up: ${service.name} runs ${runningTasks(service).length} task(s)`);
    if (service.port !== null) await this.checkReachable(service);
  }

  /** Takes a container out of its service: one replica fewer, the service goes with its last container; resolved once its task stopped. */
  async release(service: Service, id: string): Promise<void> {
    if (!service.members.has(id)) return;
    this.started.delete(id);
    const members = new Map(service.members);
    members.delete(id);
    if (members.size === 0) {
      await this.remove(service);
      return;
    }
    await this.setMembers(service, members);
    await waitForStops(this.convergence, service);
  }

  /** Removes a service; resolved once its tasks stopped (after the drain). */
  async remove(service: Service): Promise<void> {
    await callEngine(this.docker, 'DELETE', `/services/${service.id}`).catch((error: unknown) => {
      if (engineStatus(error) !== 404) throw error;
    });
    this.event(service.app, `removed the service ${service.name}`);
    this.forget(service);
    await waitForStops(this.convergence, service, true);
    await this.log.flushApp(service.app);
  }

  /** Lets go of a service that no longer exists. */
  forget(service: Service): void {
    service.gone = true;
    service.logs?.abort();
    service.logs = null;
    service.members = new Map();
    if (this.services.get(service.name) === service) this.services.delete(service.name);
    this.watch.noteEndpoints();
  }

  /** Follows the output of every task of the service into the app's log, from `since` (seconds). */
  follow(service: Service, since: number): void {
    followServiceLogs({ docker: this.docker, log: this.log, closed: this.closed }, service, since);
  }

  private async create(group: PreparedSpec[], replacing: number): Promise<Service> {
    const [first] = group as [PreparedSpec];
    const { app, type, release } = first.spec;
    const members = new Map<string, Member>(group.map((p) => [p.spec.id, { id: p.spec.id, num: p.spec.num, digest: first.digest }]));
    const name = freeServiceName(this.settings.prefix, app, type, new Set(this.services.keys()));
    const body = serviceSpec(this.settings, { name, app, type, release, digest: first.digest, members, template: first.template, port: first.port });
    const created = await callEngine<{ ID: string }>(this.docker, 'POST', '/services/create', {}, body, undefined, this.authOf(body));
    const service: Service = {
      name, app, type, id: created.ID, digest: first.digest, force: 0, release, members, port: first.port,
      tasks: [], lastLines: new OutputTail(), logs: null, refollow: null, gone: false,
    };
    this.services.set(name, service);
    this.follow(service, 0);
    const next = replacing > 0 ? `, next to the ${replacing} container(s) they replace` : '';
    this.event(app, `created the service ${name} for ${type} (v${release}): ${members.size} task(s)${next}`);
    try {
      await converge(this.convergence, service, { before: new Set(), update: false, timeoutMs: this.settings.base.startTimeoutMs });
    } catch (error) {
      await this.remove(service);
      throw error;
    }
    return service;
  }

  /** Starting started containers again: every task of the service is replaced (a forced rolling update, start-first). */
  private async restart(service: Service): Promise<void> {
    const info = await this.inspect(service);
    const body: ServiceSpec = { ...info.Spec, TaskTemplate: { ...info.Spec.TaskTemplate, ForceUpdate: (info.Spec.TaskTemplate.ForceUpdate ?? 0) + 1 } };
    this.event(service.app, `restarting ${service.name}: every task is replaced, each new one healthy before an old one stops`);
    const before = await taskIds(this.docker, service);
    await this.update(service, info, body);
    service.force = body.TaskTemplate.ForceUpdate ?? 0;
    await converge(this.convergence, service, { before, update: true, timeoutMs: this.settings.updateTimeoutMs });
  }

  /** Containers a service lists from before this process: waits for its tasks as they are. */
  private async adopt(service: Service): Promise<void> {
    await converge(this.convergence, service, { before: await taskIds(this.docker, service), update: false, timeoutMs: this.settings.base.startTimeoutMs });
  }

  private async scaleUp(service: Service, fresh: PreparedSpec[]): Promise<void> {
    const before = new Map(service.members);
    const members = new Map(service.members);
    for (const { spec } of fresh) members.set(spec.id, { id: spec.id, num: spec.num, digest: service.digest });
    if (replicasOf(members) === replicasOf(service.members)) {
      // Their tasks already run: those of containers of an earlier spec the service still lists.
      await this.setMembers(service, members);
      return;
    }
    const tasks = await taskIds(this.docker, service);
    await this.setMembers(service, members);
    try {
      await converge(this.convergence, service, { before: tasks, update: false, timeoutMs: this.settings.base.startTimeoutMs });
    } catch (error) {
      await this.setMembers(service, before).catch(() => undefined);
      throw error;
    }
  }

  private async setMembers(service: Service, members: Map<string, Member>): Promise<void> {
    const info = await this.inspect(service);
    const body: ServiceSpec = {
      ...info.Spec,
      Labels: serviceLabels(this.settings.base.instance, service.app, service.type, service.release, service.digest, members, this.settings.base.installation),
      Mode: { Replicated: { Replicas: replicasOf(members) } },
    };
    await this.update(service, info, body);
    service.members = members;
  }

  private inspect(service: Service): Promise<ServiceInfo> {
    return callEngine<ServiceInfo>(this.docker, 'GET', `/services/${service.id}`);
  }

  /** The registry login for a service whose image is the platform registry's: Swarm keeps it, and each node pulls with it. */
  authOf(body: ServiceSpec): RegistryAuth | undefined {
    return authFor(this.settings.base.registryLogin, body.TaskTemplate.ContainerSpec.Image);
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

  /** Warns when the controller cannot connect to a running task where the router will send requests. */
  private async checkReachable(service: Service): Promise<void> {
    await this.watch.readNodes(service.tasks.some((t) => !this.watch.knows(t.node)));
    for (const endpoint of this.watch.endpoints(service.app, service.type)) {
      if (await acceptsConnections(endpoint.host, endpoint.port, 2000)) continue;
      const message = `the controller cannot connect to a task of ${service.name} at ${endpoint.host}:${endpoint.port}: set SWARM_NODE_ADDRESSES to addresses of the nodes it can reach`;
      this.event(service.app, message);
      this.settings.base.warn(message);
    }
  }

  event(app: string, message: string): void {
    this.log.write(app, SCHEDULER_LOG_SOURCE, message);
  }
}
