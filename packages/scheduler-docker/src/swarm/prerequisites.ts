/*
 * What the scheduler needs of the swarm before it runs anything: a manager of an active
 * swarm, an instance no other installation's services hold, and a tasks' network on which
 * tasks cannot reach each other.
 */
import type Docker from 'dockerode';
import { engineReason } from '../engine';
import { foreignInstanceProblem, type Owner } from '../installation';
import { callEngine, type ServiceInfo, type SwarmInfo } from './api';

/** @throws Error saying what is missing: no swarm, or a worker instead of a manager. */
export async function assertSwarmManager(docker: Docker): Promise<void> {
  const info = await callEngine<SwarmInfo>(docker, 'GET', '/info');
  if (info.Swarm?.LocalNodeState !== 'active') {
    throw new Error(`the engine at DOCKER_HOST is not part of a swarm (state: ${info.Swarm?.LocalNodeState ?? 'unknown'}): run docker swarm init, or point DOCKER_HOST at a manager`);
  }
  if (info.Swarm.ControlAvailable !== true) throw new Error('the engine at DOCKER_HOST is a swarm worker: point DOCKER_HOST at a manager of the swarm');
}

/** What a Swarm scheduler's installation must change to get an instance of its own. */
export const SWARM_INSTANCE_FIX = 'DOCKER_INSTANCE and SWARM_SERVICE_PREFIX';

/**
 * Refuses an instance whose services (`list`: the instance's) are another installation's,
 * before the scheduler adopts or removes any; reads nothing when the installation is unknown.
 * @throws InstanceOfAnotherInstallation naming the first such service.
 */
export async function assertServicesOwned(owner: Owner, list: () => Promise<ServiceInfo[]>): Promise<void> {
  if (owner.installation === null) return;
  const services = (await list()).map((info) => ({ kind: 'service', name: info.Spec.Name, labels: info.Spec.Labels }));
  const problem = foreignInstanceProblem(owner, services, 'swarm', SWARM_INSTANCE_FIX);
  if (problem !== null) throw problem;
}

/**
 * The tasks' network must be a swarm-scoped bridge network made from a config-only network
 * with inter-container communication off; without one (null), a warning says that tasks can
 * reach each other.
 * @throws Error saying what is wrong with the network and how to make it.
 */
export async function assertTaskNetwork(docker: Docker, network: string | null, warn: (message: string) => void): Promise<void> {
  if (network === null) {
    warn('SWARM_NETWORK is not set: app tasks use their node\'s default bridge and can reach each other there, not only through the router; see docs/security.md');
    return;
  }
  const fix = 'make it as docs/operations.md says ("Running on a Docker Swarm")';
  let found: { Scope?: string; Driver?: string; ConfigFrom?: { Network?: string } };
  try {
    found = await callEngine(docker, 'GET', `/networks/${encodeURIComponent(network)}`);
  } catch (error) {
    throw new Error(`SWARM_NETWORK: the network ${network} is not on the swarm manager (${engineReason(error)}): ${fix}`);
  }
  if (found.Scope !== 'swarm' || found.Driver !== 'bridge') {
    throw new Error(`SWARM_NETWORK: the network ${network} must be a bridge network of scope swarm, it is a ${found.Driver ?? '?'} network of scope ${found.Scope ?? '?'}: ${fix}`);
  }
  const from = found.ConfigFrom?.Network ?? '';
  if (from === '') throw new Error(`SWARM_NETWORK: the network ${network} is not made from a config-only network (--config-from): ${fix}`);
  // The manager's own config-only network shows the options every node's should have.
  const config = await callEngine<{ Options?: Record<string, string> }>(docker, 'GET', `/networks/${encodeURIComponent(from)}`).catch(() => null);
  if (config !== null && config.Options?.['com.docker.network.bridge.enable_icc'] !== 'false') {
    throw new Error(`SWARM_NETWORK: the config-only network ${from} lets containers reach each other (com.docker.network.bridge.enable_icc is not false): ${fix}`);
  }
}
