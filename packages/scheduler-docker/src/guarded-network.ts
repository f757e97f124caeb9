import type Docker from 'dockerode';
import { engineStatus } from './engine';
import { applySteps, type IptablesRunner, type IptablesStep } from './iptables-runner';

/** The Linux bridge of a bridge network: the one it was made with, else the engine's `br-<id>`. */
export function bridgeOf(network: Pick<Docker.NetworkInspectInfo, 'Id' | 'Options'>): string {
  return network.Options?.['com.docker.network.bridge.name'] ?? `br-${network.Id.slice(0, 12)}`;
}

/**
 * Removes a guarded network and then its guards (the steps `unguard` gives for its bridge):
 * the network's own bridge when it exists, else `bridge` (the rules a removed network left).
 * A network still in use is not removed, and its guards stay.
 * @throws Error when the engine refuses to remove the network (containers on it) or the guards cannot be removed.
 */
export async function removeGuardedNetwork(
  docker: Docker,
  name: string,
  bridge: string,
  unguard: (bridge: string) => IptablesStep[],
  runner: IptablesRunner,
): Promise<void> {
  let guarded = bridge;
  try {
    const network = docker.getNetwork(name);
    guarded = bridgeOf((await network.inspect()) as Docker.NetworkInspectInfo);
    await network.remove();
  } catch (error) {
    if (engineStatus(error) !== 404) throw error;
  }
  await applySteps(runner, unguard(guarded));
}
