import type Docker from 'dockerode';
import { LABELS, engineReason, engineStatus, ensureNetwork } from './engine';
import { bridgeOf, removeGuardedNetwork } from './guarded-network';
import { guardHostFromBridge, hostUnguardSteps } from './host-guard';
import { guardRunner } from './iptables-engine';
import { assertInstanceOwned, foreignInstanceProblem, ownerLabels, type Owner } from './installation';
import type { GuardRunnerChoice, IptablesRunner } from './iptables-runner';

/** The stack image's default name, the helper image of the guards unless told otherwise. */
export const DEFAULT_GUARD_IMAGE = 'localhost/svc-stack:latest';

/** How the Docker scheduler's platform network is made and guarded (part of its options). */
export interface PlatformNetworkOptions {
  /** The platform's network every container joins. Default `svc-apps`. */
  network?: string;
  /** The Linux bridge of that network when the scheduler creates it (at most 15 characters). Default `svc-apps0`. */
  bridge?: string;
  /**
   * Drop traffic from the network to this host (iptables INPUT rules, installed at the first
   * start; needs root on the engine's machine, or a helper container: `guards`). Default true.
   */
  guardHost?: boolean;
  /** Host ports containers may still open connections to (the router's, for app-to-app calls). */
  hostPortsAllowed?: number[];
  /** Where the guard's iptables commands run (`DOCKER_GUARDS`): `auto` (default), `local` or `engine`. */
  guards?: GuardRunnerChoice;
  /** The image of the helper container that runs them on the engine: the stack image (`STACK_IMAGE`). Default `localhost/svc-stack:latest`. */
  guardImage?: string;
}

/** The platform network of the Docker scheduler and how it is guarded. */
export interface PlatformNetwork {
  /** Its name (`svc-apps`). */
  network: string;
  /** The Linux bridge it is created with (at most 15 characters). */
  bridge: string;
  /** Whether traffic from it to this host is dropped (iptables INPUT rules). */
  guard: boolean;
  /** Host ports containers may still open connections to. */
  hostPortsAllowed: number[];
  /** Where the guard's iptables commands run. */
  runner: IptablesRunner;
}

/** The options with their defaults. */
export function platformNetworkOf(docker: Docker, options: PlatformNetworkOptions): PlatformNetwork {
  return {
    network: options.network ?? 'svc-apps',
    bridge: options.bridge ?? 'svc-apps0',
    guard: options.guardHost ?? true,
    hostPortsAllowed: options.hostPortsAllowed ?? [],
    runner: guardRunner({ docker, choice: options.guards ?? 'auto', image: options.guardImage ?? DEFAULT_GUARD_IMAGE }),
  };
}

/**
 * Refuses an instance another installation holds (installation.ts), before anything is made;
 * then creates the platform network (no traffic between containers) unless it exists, labelled
 * with its owner, and guards this host from it; warns about what it cannot ensure (a network
 * letting containers reach each other, a guard it could not install or that is off). Only a
 * warning: apps still run (docs/security.md says what is then reachable), unlike builds, which refuse.
 * @throws InstanceOfAnotherInstallation when the instance's containers or the network are
 *   another installation's; Error when the engine refuses to inspect or create the network.
 */
export async function preparePlatformNetwork(docker: Docker, owner: Owner, how: PlatformNetwork, warn: (message: string) => void): Promise<void> {
  await assertInstanceOwned(docker, owner, how.network);
  const network = await ensureNetwork(docker, {
    Name: how.network,
    Driver: 'bridge',
    CheckDuplicate: true,
    Options: { 'com.docker.network.bridge.enable_icc': 'false', 'com.docker.network.bridge.name': how.bridge },
    Labels: ownerLabels(owner),
  });
  // Another installation starting at the same moment may have created it first.
  const taken = foreignInstanceProblem(owner, [{ kind: 'network', name: how.network, labels: network.Labels ?? {} }]);
  if (taken !== null) throw taken;
  const options = network.Options ?? {};
  if (options['com.docker.network.bridge.enable_icc'] !== 'false') {
    warn(`the network ${how.network} lets containers reach each other (com.docker.network.bridge.enable_icc is not false): remove it and let the scheduler create it`);
  }
  const bridge = bridgeOf(network);
  if (!how.guard) {
    warn(`the host guard is off: containers on ${how.network} can reach this host's services bound to all addresses; see docs/security.md`);
    return;
  }
  try {
    await guardHostFromBridge(bridge, how.hostPortsAllowed, how.runner);
  } catch (error) {
    warn(
      `containers on ${how.network} can reach this host's services bound to all addresses through ${bridge}: ` +
        `the iptables guard could not be installed (${engineReason(error)}); see docs/security.md`,
    );
  }
}

/**
 * Removes everything the scheduler made for `instance` on the engine: its containers (apps'
 * and one-off commands'), its platform network, and the network's host guard (the chain and
 * its jump) when the guard is on, also when the network was removed before. Resolves with how many containers went.
 * @throws Error when the engine refuses (another instance's container on the network) or the guard cannot be removed.
 */
export async function removePlatformNetwork(docker: Docker, instance: string, how: PlatformNetwork): Promise<number> {
  const listed = await docker.listContainers({ all: true, filters: { label: [`${LABELS.instance}=${instance}`] } });
  for (const info of listed) {
    await docker
      .getContainer(info.Id)
      .remove({ force: true })
      .catch((error: unknown) => {
        if (engineStatus(error) !== 404) throw error;
      });
  }
  // With the guard off the scheduler installed none: the operator's rules are theirs to remove.
  await removeGuardedNetwork(docker, how.network, how.bridge, (bridge) => (how.guard ? hostUnguardSteps(bridge) : []), how.runner);
  return listed.length;
}
