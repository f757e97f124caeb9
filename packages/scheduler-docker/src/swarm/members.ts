/*
 * Which task stands for which platform container, and what the tasks say: the services as
 * the scheduler holds them, their members (read back from the service's labels), their tasks
 * as the engine lists them, the state of each container and the endpoints of the routed
 * tasks. Pure: the engine is not asked.
 */
import type { ContainerState } from '@svc/core';
import { OutputTail } from '@svc/core';
import { LABELS } from '../engine';
import { TASK_FAILED_STATES, TASK_LIVE_STATES, type ServiceInfo, type TaskInfo } from './api';
import { MEMBERS_LABEL, type Member } from './service-spec';

/** A task as the scheduler reads it. */
export interface TaskView {
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

/** A service of one process type of an app, as the scheduler holds it. */
export interface Service {
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
  gone: boolean;
}

/** A node as the router reaches it. */
export interface NodeView {
  address: string | null;
  ready: boolean;
}

/** Where a routed task listens, with its task's id (`task:<id>`). */
export interface TaskEndpoint {
  host: string;
  port: number;
  id: string;
}

/** A service the scheduler learns of (made here, or listed on the engine). */
export function serviceOf(info: ServiceInfo, app: string, type: string): Service {
  return { name: info.Spec.Name, app, type, id: info.ID, ...specFields(info), tasks: [], lastLines: new OutputTail(), logs: null, refollow: null, gone: false };
}

/** What a service's spec on the engine says of it: its labels, its forced updates and its port. */
export function specFields(info: ServiceInfo): Pick<Service, 'digest' | 'force' | 'release' | 'members' | 'port'> {
  return {
    digest: info.Spec.Labels[LABELS.spec] ?? '',
    force: info.Spec.TaskTemplate.ForceUpdate ?? 0,
    release: Number(info.Spec.Labels[LABELS.release] ?? 0),
    members: new Map(membersOf(info).map((m) => [m.id, m])),
    port: info.Spec.EndpointSpec?.Ports?.[0]?.TargetPort ?? null,
  };
}

/** The containers a service's labels list; an unreadable list is none. */
export function membersOf(info: Pick<ServiceInfo, 'Spec'>): Member[] {
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

/** A task as the engine lists it, in the scheduler's terms. */
export function taskView(task: TaskInfo): TaskView {
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

/** A container's state from its task's: running is up (for a routed task, healthy), not yet running created, failed crashed. */
export function stateOf(task: TaskView): ContainerState {
  if (task.state === 'running') return 'up';
  if (TASK_FAILED_STATES.has(task.state)) return 'crashed';
  if (TASK_LIVE_STATES.has(task.state)) return 'created';
  return 'down';
}

/**
 * Each member with the task that stands for it: Swarm does not say which container a task
 * is, so members of the service's spec come first, by number, paired with the tasks Swarm
 * wants running, by slot; a member left without a task has none (yet).
 */
export function pairs(service: Pick<Service, 'members' | 'digest' | 'tasks'>): Map<string, TaskView | null> {
  const members = [...service.members.values()].sort((a, b) => {
    const currentA = a.digest === service.digest ? 0 : 1;
    const currentB = b.digest === service.digest ? 0 : 1;
    return currentA - currentB || a.num - b.num || (a.id < b.id ? -1 : 1);
  });
  const tasks = service.tasks.filter((t) => t.desired === 'running').sort((a, b) => a.slot - b.slot || a.created - b.created);
  return new Map(members.map((member, index) => [member.id, tasks[index] ?? null]));
}

/** The state of a member: its task's, else `created` while it is of the service's spec (its task is coming), else `down`. */
export function memberState(service: Pick<Service, 'members' | 'digest'>, id: string, task: TaskView | null): ContainerState {
  if (task !== null) return stateOf(task);
  return service.members.get(id)?.digest === service.digest ? 'created' : 'down';
}

/**
 * Where the router sends a process type's requests, over the type's services (a release's
 * and, while it replaces it, the one before): the tasks of routed services that Swarm wants
 * running and that run (a routed task runs only once healthy) on a ready node the router can
 * reach; when none does, the tasks Swarm is stopping, which serve for the drain time.
 */
export function endpointsOf(services: ReadonlyArray<Pick<Service, 'port' | 'tasks'>>, nodes: ReadonlyMap<string, NodeView>): TaskEndpoint[] {
  const routable = (task: TaskView): boolean => {
    const node = nodes.get(task.node);
    return task.state === 'running' && task.port !== null && node !== undefined && node.ready && node.address !== null;
  };
  const tasks = services.filter((service) => service.port !== null).flatMap((service) => service.tasks.filter(routable));
  const wanted = tasks.filter((task) => task.desired === 'running');
  return (wanted.length > 0 ? wanted : tasks).map((task) => ({ host: nodes.get(task.node)?.address as string, port: task.port as number, id: `task:${task.id}` }));
}

/** The tasks of a service that Swarm wants running and that run. */
export function runningTasks(service: Pick<Service, 'tasks'>): TaskView[] {
  return service.tasks.filter((t) => t.state === 'running' && t.desired === 'running');
}
