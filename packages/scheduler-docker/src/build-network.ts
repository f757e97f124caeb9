import { readFile } from 'node:fs/promises';
import type Docker from 'dockerode';
import { buildDestinationMatch, type BuildDestination } from '@svc/core';
import { engineStatus } from './engine';
import { bridgeOf } from './guarded-network';
import { assertBridgeName, hostGuardSteps, hostUnguardSteps } from './host-guard';
import { applySteps, localIptables, type IptablesRunner, type IptablesStep } from './iptables-runner';

/** The network build steps run on, and its Linux bridge. */
export const BUILD_NETWORK = 'svc-build';
export const BUILD_BRIDGE = 'svc-build0';

/**
 * The addresses no build step reaches (IPv4): this host's own and private networks, where
 * the controller's database, other apps' containers and the operator's machines are. The
 * network has no IPv6 (the engine gives it none), so no IPv6 destination is reachable.
 */
export const BLOCKED_RANGES = ['10.0.0.0/8', '172.16.0.0/12', '192.168.0.0/16', '169.254.0.0/16', '100.64.0.0/10', '127.0.0.0/8', '0.0.0.0/8', '224.0.0.0/4', '240.0.0.0/4'];

/** The chain that drops a bridge's forwarded traffic to the blocked ranges (iptables allows 28 characters). */
export function egressChainName(bridge: string): string {
  return `SVC-EGRESS-${bridge}`.slice(0, 28);
}

/**
 * The iptables rules (argument lists of `iptables -A`) of a build bridge's egress chain:
 * replies pass, DNS queries to `resolvers` pass (the engine's embedded resolver sends the
 * containers' queries from their own network namespace, so a private resolver must stay
 * reachable on port 53), the operator's `allowed` destinations pass, then everything to
 * `blocked` (plus `extraBlocked`) is rejected.
 */
export function egressRules(bridge: string, resolvers: readonly string[], extraBlocked: readonly string[] = [], allowed: readonly BuildDestination[] = []): string[][] {
  const chain = egressChainName(bridge);
  return [
    [chain, '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'RETURN'],
    ...resolvers.flatMap((resolver) => ['udp', 'tcp'].map((protocol) => [chain, '-d', resolver, '-p', protocol, '--dport', '53', '-j', 'RETURN'])),
    ...allowed.map((destination) => [chain, ...buildDestinationMatch(destination), '-j', 'RETURN']),
    ...[...BLOCKED_RANGES, ...extraBlocked].map((range) => [chain, '-d', range, '-j', 'REJECT']),
  ];
}

/** The IPv4 name servers of a resolv.conf's text. */
export function ipv4Nameservers(text: string): string[] {
  return text
    .split('\n')
    .map((line) => /^\s*nameserver\s+([0-9.]+)\s*$/.exec(line)?.[1])
    .filter((address): address is string => address !== undefined && /^\d{1,3}(\.\d{1,3}){3}$/.test(address) && !address.startsWith('127.'));
}

/**
 * The steps of a bridge's egress guard: the chain made when missing, flushed and filled with
 * {@link egressRules}, and one jump to it inserted first in `DOCKER-USER` (the chain the
 * engine keeps for the operator's rules, before its own), or in `FORWARD` when the engine
 * manages no iptables.
 */
export function egressGuardSteps(bridge: string, resolvers: readonly string[], extraBlocked: readonly string[] = [], allowed: readonly BuildDestination[] = []): IptablesStep[] {
  assertBridgeName(bridge);
  const chain = egressChainName(bridge);
  const jump = ['-i', bridge, '-j', chain];
  const dockerUser = ['-S', 'DOCKER-USER'];
  return [
    { kind: 'must', args: ['-N', chain], unless: [['-S', chain]] },
    { kind: 'must', args: ['-F', chain] },
    ...egressRules(bridge, resolvers, extraBlocked, allowed).map((rule): IptablesStep => ({ kind: 'must', args: ['-A', ...rule] })),
    { kind: 'must', args: ['-I', 'DOCKER-USER', '1', ...jump], when: [dockerUser], unless: [['-C', 'DOCKER-USER', ...jump]] },
    { kind: 'must', args: ['-I', 'FORWARD', '1', ...jump], unless: [dockerUser, ['-C', 'FORWARD', ...jump]] },
  ];
}

/**
 * The steps that remove a bridge's egress guard: every copy of its jump (from `DOCKER-USER`
 * and `FORWARD`), then the chain when it exists; the first step reads FORWARD, so that a
 * runner without the privilege fails instead of finding nothing to remove.
 */
export function egressUnguardSteps(bridge: string): IptablesStep[] {
  assertBridgeName(bridge);
  const chain = egressChainName(bridge);
  const jump = ['-i', bridge, '-j', chain];
  return [
    { kind: 'must', args: ['-S', 'FORWARD'] },
    { kind: 'repeat', args: ['-D', 'DOCKER-USER', ...jump], when: [['-S', 'DOCKER-USER']] },
    { kind: 'repeat', args: ['-D', 'FORWARD', ...jump] },
    { kind: 'must', args: ['-F', chain], when: [['-S', chain]] },
    { kind: 'must', args: ['-X', chain], when: [['-S', chain]] },
  ];
}

/**
 * Installs the egress chain of a bridge and its jump. Idempotent.
 * @throws Error with iptables' message when the rules cannot be installed.
 */
export async function guardEgressOfBridge(bridge: string, resolvers: readonly string[], extraBlocked: readonly string[] = [], runner: IptablesRunner = localIptables): Promise<void> {
  await applySteps(runner, egressGuardSteps(bridge, resolvers, extraBlocked));
}

/**
 * Removes a bridge's egress chain and its jumps (teardown, tests); missing rules are fine.
 * @throws Error with iptables' message when the rules cannot be read or removed.
 */
export async function unguardEgressOfBridge(bridge: string, runner: IptablesRunner = localIptables): Promise<void> {
  await applySteps(runner, egressUnguardSteps(bridge));
}

/** How the build network is made and guarded. */
export interface BuildNetworkOptions {
  /** The network's name (default `svc-build`) and its Linux bridge (default `svc-build0`, at most 15 characters). */
  network: string;
  bridge: string;
  /** Labels the network carries when it is made here. */
  labels: Record<string, string>;
  /** The resolv.conf whose name servers DNS queries may reach (default `/etc/resolv.conf`). */
  resolvConf: string;
  /** More ranges no build step reaches (e.g. the machine's own LAN). */
  extraBlocked: readonly string[];
  /** What build steps may reach besides the internet (`BUILD_NETWORK_ALLOW`), on this host or in a private range; default none. */
  allowed?: readonly BuildDestination[];
  /** Where the guards' iptables commands run. */
  runner: IptablesRunner;
}

/**
 * Makes the build network when it is missing (a bridge with no traffic between its
 * containers and no IPv6) and installs its guards: nothing of this host (INPUT, no port
 * allowed) and no private, loopback, link-local or CGNAT address (forwarded traffic) is
 * reachable from it; the internet is.
 * @throws Error when the network cannot be made or the guards cannot be installed.
 */
export async function prepareBuildNetwork(docker: Docker, options: BuildNetworkOptions): Promise<void> {
  let network: Docker.NetworkInspectInfo | null = null;
  try {
    network = (await docker.getNetwork(options.network).inspect()) as Docker.NetworkInspectInfo;
  } catch (error) {
    if (engineStatus(error) !== 404) throw error;
  }
  if (network === null) {
    try {
      await docker.createNetwork({
        Name: options.network,
        Driver: 'bridge',
        CheckDuplicate: true,
        EnableIPv6: false,
        Options: { 'com.docker.network.bridge.enable_icc': 'false', 'com.docker.network.bridge.name': options.bridge },
        Labels: options.labels,
      });
    } catch (error) {
      // Another controller made it meanwhile.
      if (engineStatus(error) !== 409) throw error;
    }
    network = (await docker.getNetwork(options.network).inspect()) as Docker.NetworkInspectInfo;
  }
  if (network.EnableIPv6) throw new Error(`the build network ${options.network} has IPv6 on: remove it and let the controller make it`);
  if (network.Options?.['com.docker.network.bridge.enable_icc'] !== 'false') {
    throw new Error(`the build network ${options.network} lets containers reach each other (com.docker.network.bridge.enable_icc is not false): remove it and let the controller make it`);
  }
  const resolvers = ipv4Nameservers(await readFile(options.resolvConf, 'utf8').catch(() => ''));
  await applySteps(options.runner, buildGuardSteps(bridgeOf(network), resolvers, options.extraBlocked, options.allowed ?? []));
}

/** Both guards of a build bridge, in one run: nothing of this host, no private destination, but the `allowed` ones. */
export function buildGuardSteps(bridge: string, resolvers: readonly string[], extraBlocked: readonly string[], allowed: readonly BuildDestination[] = []): IptablesStep[] {
  return [...hostGuardSteps(bridge, [], allowed), ...egressGuardSteps(bridge, resolvers, extraBlocked, allowed)];
}

/** The steps that remove both guards of a build bridge. */
export function buildUnguardSteps(bridge: string): IptablesStep[] {
  return [...hostUnguardSteps(bridge), ...egressUnguardSteps(bridge)];
}

/**
 * Removes the guards of a build bridge (teardown, tests); missing rules are fine.
 * @throws Error with iptables' message when the rules cannot be read or removed.
 */
export async function unguardBuildBridge(bridge: string, runner: IptablesRunner = localIptables): Promise<void> {
  await applySteps(runner, buildUnguardSteps(bridge));
}
