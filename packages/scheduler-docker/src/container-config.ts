import type Docker from 'dockerode';
import type { ContainerSpec } from '@svc/core';
import { LABELS, containerLimits, digestOf, runParts } from './engine';
import type { EngineScheduling } from './options';
import { ownerLabels } from './installation';

/** What of the scheduler's settings a container's configuration depends on. */
export type ContainerSettings = Pick<EngineScheduling, 'instance' | 'user' | 'pidsLimit' | 'readonlyRootfs' | 'defaultMemory' | 'defaultCpu' | 'logConfig'>;

/**
 * The engine's settings of a container on `network`: no capabilities, no new privileges, an
 * init, the pids limit, no engine restarts (the scheduler restarts), the app's memory and cpu
 * or the defaults when it sets none (one-off commands: the defaults).
 * @throws ValidationFailed (from the core) when a memory value is not a size.
 */
export function hostConfigOf(settings: ContainerSettings, network: string, ownMemory: string | null, ownCpu: number | null): Docker.HostConfig {
  const { memoryBytes: bytes, nanoCpus, cpuShares: cpu } = containerLimits(ownMemory, ownCpu, { memory: settings.defaultMemory, cpu: settings.defaultCpu });
  return {
    NetworkMode: network,
    CapDrop: ['ALL'],
    SecurityOpt: ['no-new-privileges'],
    PidsLimit: settings.pidsLimit,
    Init: true,
    RestartPolicy: { Name: 'no' },
    LogConfig: settings.logConfig as Docker.HostConfig['LogConfig'],
    ReadonlyRootfs: settings.readonlyRootfs,
    ...(settings.readonlyRootfs ? { Tmpfs: { '/tmp': 'rw,nosuid,nodev,size=64m' } } : {}),
    ...(bytes === null ? {} : { Memory: bytes, MemorySwap: bytes }),
    ...(nanoCpus === null ? {} : { NanoCpus: nanoCpus }),
    ...(cpu !== null && cpu > 1 ? { CpuShares: Math.round(cpu) } : {}),
  };
}

/** Everything a container is created from, as a digest: only an identical container is adopted. */
export function containerDigest(settings: ContainerSettings, network: string, spec: ContainerSpec): string {
  return digestOf([
    spec.app,
    spec.type,
    spec.num,
    spec.release,
    ...runParts(spec),
    settings.user,
    settings.pidsLimit,
    settings.readonlyRootfs,
    network,
    settings.defaultMemory,
    settings.defaultCpu,
  ]);
}

/** The labels of an app's container: who owns it (its instance, and its installation when known), what it runs, and the digest it was made from. */
export function containerLabels(instance: string, spec: ContainerSpec, digest: string, installation: string | null = null): Record<string, string> {
  return {
    ...ownerLabels({ instance, installation }),
    [LABELS.app]: spec.app,
    [LABELS.type]: spec.type,
    [LABELS.num]: String(spec.num),
    [LABELS.release]: String(spec.release),
    [LABELS.container]: spec.id,
    [LABELS.spec]: digest,
  };
}

/** The engine container's name for a platform container uuid. */
export function containerName(id: string): string {
  return `svc-${id}`;
}

/** The container's address on the network, or null when it has none (it is not, or no longer, attached). */
export function addressOn(info: Pick<Docker.ContainerInspectInfo, 'NetworkSettings'>, network: string): string | null {
  const address = info.NetworkSettings.Networks[network]?.IPAddress;
  return address ? address : null;
}

/** How a container ended, for the app's log: out of memory, the engine's error, or its exit code. */
export function describeExit(info: Pick<Docker.ContainerInspectInfo, 'State'>, memory: string | null): string {
  if (info.State.OOMKilled) return `was killed for exceeding its memory limit of ${memory ?? '?'} (out of memory)`;
  if (info.State.Error) return `failed: ${info.State.Error}`;
  return `exited with code ${info.State.ExitCode}`;
}

/** What adopting a running container needs to know of it, from the engine's list or its inspection. */
export interface RunningContainer {
  engineId: string;
  running: boolean;
  labels: Record<string, string>;
  /** Its address on the platform's network, or null. */
  address: string | null;
  /** The port it exposes (the first), or null when it exposes none. */
  port: number | null;
}

/** A container as its inspection describes it. */
export function runningFromInspection(info: Docker.ContainerInspectInfo, network: string): RunningContainer {
  const exposed = Object.keys(info.Config.ExposedPorts ?? {})[0]?.split('/')[0];
  return { engineId: info.Id, running: info.State.Running, labels: info.Config.Labels ?? {}, address: addressOn(info, network), port: exposed === undefined ? null : Number(exposed) };
}

/**
 * A container as one entry of the engine's list describes it (the list has the same facts as
 * an inspection for this purpose: state, labels, addresses, exposed ports), keyed by its name.
 */
export function runningFromListing(info: Docker.ContainerInfo, network: string): [name: string, container: RunningContainer] {
  const address = info.NetworkSettings?.Networks?.[network]?.IPAddress;
  const exposed = (info.Ports ?? []).find((port) => port.Type === 'tcp')?.PrivatePort;
  return [
    (info.Names[0] ?? '').replace(/^\//, ''),
    { engineId: info.Id, running: info.State === 'running', labels: info.Labels ?? {}, address: address ? address : null, port: exposed === undefined ? null : exposed },
  ];
}
