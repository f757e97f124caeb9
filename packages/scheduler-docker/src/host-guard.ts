import { buildDestinationMatch, type BuildDestination } from '@svc/core';
import { applySteps, localIptables, type IptablesRunner, type IptablesStep } from './iptables-runner';

/** The name of the chain that guards the host from one bridge (iptables allows 28 characters). */
export function guardChainName(bridge: string): string {
  return `SVC-HOST-${bridge}`.slice(0, 28);
}

/** @throws Error when `bridge` is not a Linux interface name (it goes into iptables commands). */
export function assertBridgeName(bridge: string): void {
  if (!/^[a-zA-Z0-9_.-]{1,15}$/.test(bridge)) throw new Error(`unusable bridge name "${bridge}"`);
}

/**
 * The steps of a bridge's host guard: the chain made when missing, flushed and filled again
 * (replies, `allowedPorts`, the `allowed` destinations that are this host's, then DROP), and
 * one jump from INPUT for packets arriving on the bridge, inserted first when it is not there yet.
 */
export function hostGuardSteps(bridge: string, allowedPorts: readonly number[] = [], allowed: readonly BuildDestination[] = []): IptablesStep[] {
  assertBridgeName(bridge);
  const chain = guardChainName(bridge);
  const jump = ['-i', bridge, '-j', chain];
  return [
    { kind: 'must', args: ['-N', chain], unless: [['-S', chain]] },
    { kind: 'must', args: ['-F', chain] },
    { kind: 'must', args: ['-A', chain, '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'ACCEPT'] },
    ...[...new Set(allowedPorts)].map((port): IptablesStep => ({ kind: 'must', args: ['-A', chain, '-p', 'tcp', '--dport', String(port), '-j', 'ACCEPT'] })),
    ...allowed.map((destination): IptablesStep => ({ kind: 'must', args: ['-A', chain, ...buildDestinationMatch(destination), '-j', 'ACCEPT'] })),
    { kind: 'must', args: ['-A', chain, '-j', 'DROP'] },
    { kind: 'must', args: ['-I', 'INPUT', '1', ...jump], unless: [['-C', 'INPUT', ...jump]] },
  ];
}

/**
 * The steps that remove a bridge's host guard: every copy of its jump from INPUT, then the
 * chain when it exists. The first step reads INPUT, so that a runner without the privilege
 * fails instead of finding nothing to remove.
 */
export function hostUnguardSteps(bridge: string): IptablesStep[] {
  assertBridgeName(bridge);
  const chain = guardChainName(bridge);
  return [
    { kind: 'must', args: ['-S', 'INPUT'] },
    { kind: 'repeat', args: ['-D', 'INPUT', '-i', bridge, '-j', chain] },
    { kind: 'must', args: ['-F', chain], when: [['-S', chain]] },
    { kind: 'must', args: ['-X', chain], when: [['-S', chain]] },
  ];
}

/**
 * Drops every packet a container on the bridge sends to this host itself (any of its
 * addresses: the bridge's gateway, the machine's other interfaces), except replies to
 * connections the host opened (the router, readiness checks) and new connections to
 * `allowedPorts` (the router's own ports). Traffic to the internet goes through FORWARD and is
 * not touched. Idempotent: the chain is flushed and filled again, the jump added once.
 * @throws Error with iptables' message when the rules cannot be installed (no privilege, no iptables).
 */
export async function guardHostFromBridge(bridge: string, allowedPorts: number[] = [], runner: IptablesRunner = localIptables): Promise<void> {
  await applySteps(runner, hostGuardSteps(bridge, allowedPorts));
}

/**
 * Removes the guard of a bridge (teardown, tests); missing rules are fine.
 * @throws Error with iptables' message when the rules cannot be read or removed.
 */
export async function unguardHostFromBridge(bridge: string, runner: IptablesRunner = localIptables): Promise<void> {
  await applySteps(runner, hostUnguardSteps(bridge));
}
