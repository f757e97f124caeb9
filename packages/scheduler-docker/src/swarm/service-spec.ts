/*
 * What a Swarm service is made of, from a container spec: its task template, labels, update
 * settings, name and the digest that says whether two specs make the same tasks. Pure: the
 * engine is not asked.
 */
import { createHash } from 'node:crypto';
import { isRoutedType, withProfileScripts, type ContainerSpec, type RunSpec } from '@svc/core';
import { LABELS, containerLimits, digestOf, environmentList, runParts, type ContainerLimits } from '../engine';
import { startTimeoutOf, type EngineScheduling } from '../options';
import { ownerLabels } from '../installation';
import type { ServiceSpec, TaskTemplate } from './api';
import { drainScript, healthScript } from './task-scripts';
import type { SwarmSettings } from './settings';

/** The label of a service that lists the platform's containers it stands for, as JSON `[[id, num, digest], ...]`. */
export const MEMBERS_LABEL = 'svc.members';

/** What the specs are made from: the settings, without the engine client. */
export type SpecSettings = Pick<SwarmSettings, 'drainMs' | 'healthIntervalMs' | 'monitorMs' | 'restartDelayMs' | 'network'> & {
  base: Pick<EngineScheduling, 'instance' | 'user' | 'pidsLimit' | 'readonlyRootfs' | 'defaultMemory' | 'defaultCpu' | 'stopTimeoutMs' | 'startTimeoutMs' | 'logConfig'> & {
    /** The installation's fingerprint, labelled on services (absent: none). */
    installation?: string | null;
  };
};

/** A platform container a service stands for. */
export interface Member {
  id: string;
  num: number;
  /** The spec digest the member was started from (a service of an earlier controller version may list earlier ones). */
  digest: string;
}

/** Engine durations are in nanoseconds. */
export const ms = (value: number): number => Math.round(value * 1e6);

/**
 * Whether the router sends requests to a process type, hence whether its tasks publish a
 * port, are health-checked and drained: the router's rule (`web`, and `cmd`, an image's own
 * command, which serves the app when it has no web), whatever else the type is called.
 */
export function isRouted(type: string): boolean {
  return isRoutedType(type);
}

/**
 * The name of a service of a process type: `<prefix>-<app>-<type>`, and `-<generation>` after
 * it for the second and later services of the type that run side by side (a new release's
 * next to the one it replaces); a digest of them when that is no valid service name.
 */
export function serviceName(prefix: string, app: string, type: string, generation = 1): string {
  const suffix = generation === 1 ? '' : `-${generation}`;
  const plain = `${prefix}-${app}-${type}${suffix}`;
  if (/^[a-zA-Z0-9][a-zA-Z0-9-]{0,62}$/.test(plain)) return plain;
  const key = generation === 1 ? `${app}\n${type}` : `${app}\n${type}\n${generation}`;
  return `${prefix}-${createHash('sha256').update(key).digest('hex').slice(0, 24)}`;
}

/** The first name of the type's services that no service has: the type's own, else the next generation's. */
export function freeServiceName(prefix: string, app: string, type: string, taken: ReadonlySet<string>): string {
  for (let generation = 1; ; generation++) {
    const name = serviceName(prefix, app, type, generation);
    if (!taken.has(name)) return name;
  }
}

/** Everything a service's tasks are made from, but not which containers it stands for. */
export function specDigest(settings: SpecSettings, spec: ContainerSpec, own: number, port: number | null): string {
  const { base } = settings;
  return digestOf([
    own,
    spec.app,
    spec.type,
    spec.release,
    ...runParts(spec),
    port,
    base.user,
    base.pidsLimit,
    base.readonlyRootfs,
    base.defaultMemory,
    base.defaultCpu,
    settings.drainMs,
    base.stopTimeoutMs,
    settings.healthIntervalMs,
    // Only when set: services made before the setting existed keep their digest.
    ...(settings.network === null ? [] : [settings.network]),
  ]);
}

/** The labels of a service: whose it is, its release and spec, and the containers it stands for. */
export function serviceLabels(
  instance: string,
  app: string,
  type: string,
  release: number,
  digest: string,
  members: Map<string, Member>,
  installation: string | null = null,
): Record<string, string> {
  return {
    ...ownerLabels({ instance, installation }),
    [LABELS.app]: app,
    [LABELS.type]: type,
    [LABELS.release]: String(release),
    [LABELS.spec]: digest,
    [MEMBERS_LABEL]: JSON.stringify([...members.values()].map((m) => [m.id, m.num, m.digest === digest ? '' : m.digest])),
  };
}

/** What every task runs under: image, environment, user, labels and the isolation settings. */
export function containerBase(settings: SpecSettings, image: string, env: string[], app: string, type: string, release: number, user: string): TaskTemplate['ContainerSpec'] {
  const { base } = settings;
  return {
    Image: image,
    Env: env,
    User: user,
    Labels: { [LABELS.instance]: base.instance, [LABELS.app]: app, [LABELS.type]: type, [LABELS.release]: String(release) },
    Init: true,
    CapabilityDrop: ['ALL'],
    ReadOnly: base.readonlyRootfs,
    ...(base.readonlyRootfs ? { Mounts: [{ Type: 'tmpfs' as const, Target: '/tmp', TmpfsOptions: { SizeBytes: 64 * 1024 * 1024, Mode: 0o1777 } }] } : {}),
    StopGracePeriod: ms(base.stopTimeoutMs),
  };
}

/** The engine's limits of a task: processes, memory and CPU. */
export function limitsOf(pidsLimit: number, limits: ContainerLimits): TaskTemplate['Resources']['Limits'] {
  return {
    Pids: pidsLimit,
    ...(limits.memoryBytes === null ? {} : { MemoryBytes: limits.memoryBytes }),
    ...(limits.nanoCpus === null ? {} : { NanoCPUs: limits.nanoCpus }),
  };
}

function logDriver(settings: SpecSettings): TaskTemplate['LogDriver'] {
  return { Name: settings.base.logConfig.Type, Options: settings.base.logConfig.Config };
}

function networks(settings: SpecSettings): Pick<TaskTemplate, 'Networks'> {
  return settings.network === null ? {} : { Networks: [{ Target: settings.network }] };
}

/** How a container spec's tasks are made. */
export interface TemplateInput {
  spec: ContainerSpec;
  /** The port the app listens on in its container. */
  own: number;
  /** The port published for the router; null for types that are not routed. */
  port: number | null;
  digest: string;
  /** The image's own command (entrypoint and cmd), run when the spec has no command. */
  imageCommand: string[];
  user: string;
}

/**
 * The task template of a container spec: the command (under the drain wrapper when routed),
 * a health check for every routed type (the router sends it requests only once healthy),
 * limits, restart policy, spread over the nodes.
 */
export function taskTemplate(settings: SpecSettings, input: TemplateInput): TaskTemplate {
  const { spec, own, port, digest } = input;
  const base = containerBase(settings, spec.image, environmentList(spec.env, own), spec.app, spec.type, spec.release, input.user);
  base.Labels[LABELS.spec] = digest;
  const command = spec.command === null ? input.imageCommand : ['/bin/sh', '-c', withProfileScripts(spec.command)];
  const container: TaskTemplate['ContainerSpec'] = { ...base };
  if (port !== null) {
    // Swarm stops a replaced task on its own: it keeps serving while the router drops it.
    container.Command = ['/bin/sh', '-c', drainScript(settings.drainMs), 'svc-drain', ...command];
    container.StopGracePeriod = ms(settings.drainMs + settings.base.stopTimeoutMs);
    container.Healthcheck = {
      Test: ['CMD-SHELL', healthScript(port, spec.env.HEALTHCHECK_URL)],
      Interval: ms(settings.healthIntervalMs),
      Timeout: ms(healthTimeoutMs(settings.healthIntervalMs)),
      Retries: 3,
      StartPeriod: ms(startTimeoutOf(settings.base, spec.env)),
    };
  } else if (spec.command !== null) {
    container.Command = command;
  }
  const limits = containerLimits(spec.memory, spec.cpu, { memory: settings.base.defaultMemory, cpu: settings.base.defaultCpu });
  return {
    ContainerSpec: container,
    Resources: { Limits: limitsOf(settings.base.pidsLimit, limits) },
    RestartPolicy: { Condition: 'any', Delay: ms(settings.restartDelayMs), MaxAttempts: 0 },
    LogDriver: logDriver(settings),
    // A service's tasks spread over the nodes that take tasks; every release has a service
    // of its own, so its tasks spread again whatever node the replaced ones are on.
    Placement: { Preferences: [{ Spread: { SpreadDescriptor: 'node.id' } }] },
    ...networks(settings),
    ForceUpdate: 0,
  };
}

/**
 * How long one health check of a routed task may take before it counts as failed: never less
 * than 10 s. A task that stops listening fails its check at once (nothing is waited for),
 * and a HEALTHCHECK_URL request gives up after 5 s; what the timeout catches is an engine slow
 * to run the check on a busy node, and a task Swarm stops as unhealthy still runs as far as
 * the task list says, so the router keeps sending it requests until it is gone.
 */
export function healthTimeoutMs(intervalMs: number): number {
  return Math.max(10_000, intervalMs);
}

/** The whole spec of a process type's service. */
export interface ServiceInput {
  name: string;
  app: string;
  type: string;
  release: number;
  digest: string;
  members: Map<string, Member>;
  template: TaskTemplate;
  port: number | null;
}

/**
 * A process type's service: as many replicas as containers, the port published in host mode
 * (no ingress mesh), and the update settings of a restart (a forced update of the same spec):
 * every task at once, start-first, each new task healthy before its old one stops, and a
 * failed restart rolled back to the tasks as they were.
 */
export function serviceSpec(settings: SpecSettings, input: ServiceInput): ServiceSpec {
  const update = { Parallelism: 0, Delay: 0, Monitor: ms(settings.monitorMs), MaxFailureRatio: 0, Order: 'start-first' as const };
  return {
    Name: input.name,
    Labels: serviceLabels(settings.base.instance, input.app, input.type, input.release, input.digest, input.members, settings.base.installation ?? null),
    TaskTemplate: input.template,
    Mode: { Replicated: { Replicas: replicasOf(input.members) } },
    UpdateConfig: { ...update, FailureAction: 'rollback' },
    RollbackConfig: { ...update, FailureAction: 'pause' },
    EndpointSpec: input.port === null ? { Mode: 'vip', Ports: [] } : { Mode: 'vip', Ports: [{ Protocol: 'tcp', TargetPort: input.port, PublishMode: 'host' }] },
  };
}

/**
 * A one-off command's service: a job of one task, never restarted, of the release's image,
 * isolated like the apps' tasks, with the default limits.
 */
export function jobSpec(settings: SpecSettings, name: string, spec: RunSpec, port: number, user: string): ServiceSpec {
  const limits = containerLimits(null, null, { memory: settings.base.defaultMemory, cpu: settings.base.defaultCpu });
  return {
    Name: name,
    Labels: { ...ownerLabels({ instance: settings.base.instance, installation: settings.base.installation ?? null }), [LABELS.app]: spec.app, [LABELS.type]: 'run', [LABELS.release]: String(spec.release) },
    TaskTemplate: {
      ContainerSpec: {
        ...containerBase(settings, spec.image, environmentList(spec.env, port), spec.app, 'run', spec.release, user),
        Command: ['/bin/sh', '-c', withProfileScripts(spec.command)],
      },
      LogDriver: logDriver(settings),
      Resources: { Limits: limitsOf(settings.base.pidsLimit, limits) },
      RestartPolicy: { Condition: 'none' },
      ...networks(settings),
    },
    Mode: { ReplicatedJob: { MaxConcurrent: 1, TotalCompletions: 1 } },
  };
}

/** Replicas for a service's containers: those of its spec, or as many as the containers of an earlier one it still lists. */
export function replicasOf(members: Map<string, Member>): number {
  const digests = new Map<string, number>();
  for (const member of members.values()) digests.set(member.digest, (digests.get(member.digest) ?? 0) + 1);
  return Math.max(0, ...digests.values());
}
