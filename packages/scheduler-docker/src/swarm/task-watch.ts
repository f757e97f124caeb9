/*
 * Watching the tasks: every service's tasks and the nodes are read now and then (often
 * while a change is under way), for the containers' states and the router's endpoints, and
 * the router is told when the endpoints changed.
 */
import type Docker from 'dockerode';
import { callEngine, listTasks, type NodeInfo } from './api';
import { endpointsOf, taskView, type NodeView, type Service, type TaskEndpoint, type TaskView } from './members';
import type { SwarmSettings } from './settings';

/** How long the nodes read are used before they are read again, ms. */
const NODES_FRESH_MS = 5000;

/** The services the scheduler holds, by name. */
export type Services = Map<string, Service>;

/** The services of one process type of an app (a release's and, while it replaces it, the one before), oldest release first. */
export function servicesOfType(services: Services, app: string, type: string): Service[] {
  return [...services.values()].filter((s) => s.app === app && s.type === type).sort((a, b) => a.release - b.release);
}

export class TaskWatch {
  private nodes = new Map<string, NodeView>();
  private nodesRead = 0;
  private endpointKey = '';
  private busy = 0;
  private timer: NodeJS.Timeout | null = null;
  private polling: Promise<void> | null = null;
  private stopped = false;

  constructor(
    private readonly docker: Docker,
    private readonly settings: Pick<SwarmSettings, 'pollMs' | 'nodeAddresses' | 'endpointsChanged'>,
    private readonly services: Services,
  ) {}

  /** Reads the tasks now and then from now on, until `stop`. */
  start(): void {
    if (this.stopped || this.timer !== null) return;
    this.timer = setTimeout(
      () => {
        this.timer = null;
        this.polling = this.poll()
          .catch(() => undefined)
          .finally(() => {
            this.polling = null;
            this.start();
          });
      },
      this.busy > 0 ? Math.min(200, this.settings.pollMs) : this.settings.pollMs,
    );
    this.timer.unref();
  }

  /** Stops reading, once the read under way (if any) ended. */
  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer !== null) clearTimeout(this.timer);
    this.timer = null;
    await this.polling?.catch(() => undefined);
  }

  /** Runs `work` with the tasks read often (a change is under way). */
  async often<T>(work: () => Promise<T>): Promise<T> {
    this.busy++;
    try {
      return await work();
    } finally {
      this.busy--;
    }
  }

  /** Takes the tasks of one service just read, and tells the router if its endpoints changed. */
  async saw(service: Service, tasks: TaskView[]): Promise<void> {
    if (!service.gone) service.tasks = tasks;
    await this.readNodes(tasks.some((t) => t.node !== '' && !this.nodes.has(t.node))).catch(() => undefined);
    this.noteEndpoints();
  }

  /** Where the routed tasks of a process type listen (see `endpointsOf`). */
  endpoints(app: string, type: string): TaskEndpoint[] {
    const services = [...this.services.values()].filter((s) => s.app === app && s.type === type);
    return endpointsOf(services, this.nodes);
  }

  /** Reads the nodes when they were not read lately, or `force`. */
  async readNodes(force: boolean): Promise<void> {
    if (!force && Date.now() - this.nodesRead < NODES_FRESH_MS) return;
    const nodes = await callEngine<NodeInfo[]>(this.docker, 'GET', '/nodes');
    this.nodesRead = Date.now();
    const before = this.nodes;
    this.nodes = new Map(
      nodes.map((node) => {
        const hostname = node.Description?.Hostname ?? '';
        const own = node.Status?.Addr && node.Status.Addr !== '0.0.0.0' ? node.Status.Addr : (node.ManagerStatus?.Addr?.replace(/:[0-9]+$/, '') ?? null);
        const address = this.settings.nodeAddresses[node.ID] ?? this.settings.nodeAddresses[hostname] ?? own;
        return [node.ID, { address, ready: node.Status?.State === 'ready' }];
      }),
    );
    // A node that is back (or new) gets no log subscription made while it was away: the
    // services' logs are followed again, so its tasks' output reaches the apps' logs.
    const back = before.size > 0 && [...this.nodes].some(([id, node]) => node.ready && before.get(id)?.ready !== true);
    if (back) for (const service of this.services.values()) service.refollow?.();
  }

  /** Whether a node of a task is unknown yet (its address must be read). */
  knows(node: string): boolean {
    return this.nodes.has(node);
  }

  /** Tells the router when the endpoints changed since it was last told. */
  noteEndpoints(): void {
    const parts: string[] = [];
    const types = new Set([...this.services.values()].filter((s) => s.port !== null).map((s) => `${s.app}\n${s.type}`));
    for (const key of [...types].sort()) {
      const [app, type] = key.split('\n') as [string, string];
      parts.push(`${app}/${type}=${this.endpoints(app, type).map((e) => `${e.id}@${e.host}:${e.port}`).join(',')}`);
    }
    const key = parts.join(' ');
    if (key === this.endpointKey) return;
    this.endpointKey = key;
    this.settings.endpointsChanged();
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
}
