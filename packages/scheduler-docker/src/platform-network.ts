import type Docker from 'dockerode';
import { LABELS, engineReason, ensureNetwork } from './engine';
import { guardHostFromBridge } from './host-guard';

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
}

/**
 * Creates the platform network (no traffic between containers) unless it exists, and guards
 * this host from it; warns about what it cannot ensure (a network letting containers reach
 * each other, a guard it could not install or that is off).
 * @throws Error when the engine refuses to inspect or create the network.
 */
export async function preparePlatformNetwork(docker: Docker, instance: string, how: PlatformNetwork, warn: (message: string) => void): Promise<void> {
  const network = await ensureNetwork(docker, {
    Name: how.network,
    Driver: 'bridge',
    CheckDuplicate: true,
    Options: { 'com.docker.network.bridge.enable_icc': 'false', 'com.docker.network.bridge.name': how.bridge },
    Labels: { [LABELS.instance]: instance },
  });
  const options = network.Options ?? {};
  if (options['com.docker.network.bridge.enable_icc'] !== 'false') {
    warn(`the network ${how.network} lets containers reach each other (com.docker.network.bridge.enable_icc is not false): remove it and let the scheduler create it`);
  }
  const bridge = options['com.docker.network.bridge.name'] ?? `br-${network.Id.slice(0, 12)}`;
  if (!how.guard) {
    warn(`the host guard is off: containers on ${how.network} can reach this host's services bound to all addresses; see docs/security.md`);
    return;
  }
  try {
    await guardHostFromBridge(bridge, how.hostPortsAllowed);
  } catch (error) {
    warn(
      `containers on ${how.network} can reach this host's services bound to all addresses through ${bridge}: ` +
        `the iptables guard could not be installed (${engineReason(error)}); see docs/security.md`,
    );
  }
}
