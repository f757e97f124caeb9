import { execFile } from 'node:child_process';

function iptables(args: string[]): Promise<{ ok: boolean; output: string }> {
  return new Promise((resolve) => {
    execFile('iptables', ['-w', ...args], { timeout: 10_000 }, (error, stdout, stderr) =>
      resolve({ ok: error === null, output: `${stdout}${stderr}`.trim() || (error?.message ?? '') }),
    );
  });
}

/** The name of the chain that guards the host from one bridge (iptables allows 28 characters). */
export function guardChainName(bridge: string): string {
  return `SVC-HOST-${bridge}`.slice(0, 28);
}

/**
 * Drops every packet a container on the bridge sends to this host itself (any of its
 * addresses: the bridge's gateway, the machine's other interfaces), except replies to
 * connections the host opened (the router, readiness checks) and new connections to
 * `allowedPorts` (the router's own ports). Traffic to the internet goes through FORWARD and is
 * not touched. Idempotent: the chain is flushed and filled again, the jump added once.
 * @throws Error with iptables' message when the rules cannot be installed (no privilege, no iptables).
 */
export async function guardHostFromBridge(bridge: string, allowedPorts: number[] = []): Promise<void> {
  if (!/^[a-zA-Z0-9_.-]{1,15}$/.test(bridge)) throw new Error(`unusable bridge name "${bridge}"`);
  const chain = guardChainName(bridge);
  const created = await iptables(['-N', chain]);
  if (!created.ok && !/exists/i.test(created.output)) throw new Error(`iptables -N ${chain}: ${created.output}`);
  const steps: string[][] = [
    ['-F', chain],
    ['-A', chain, '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'ACCEPT'],
    ...[...new Set(allowedPorts)].map((port) => ['-A', chain, '-p', 'tcp', '--dport', String(port), '-j', 'ACCEPT']),
    ['-A', chain, '-j', 'DROP'],
  ];
  for (const step of steps) {
    const result = await iptables(step);
    if (!result.ok) throw new Error(`iptables ${step.join(' ')}: ${result.output}`);
  }
  const jump = ['INPUT', '-i', bridge, '-j', chain];
  if (!(await iptables(['-C', ...jump])).ok) {
    const inserted = await iptables(['-I', ...jump.slice(0, 1), '1', ...jump.slice(1)]);
    if (!inserted.ok) throw new Error(`iptables -I ${jump.join(' ')}: ${inserted.output}`);
  }
}

/** Removes the guard of a bridge (tests, uninstall). Missing rules are fine. */
export async function unguardHostFromBridge(bridge: string): Promise<void> {
  const chain = guardChainName(bridge);
  while ((await iptables(['-D', 'INPUT', '-i', bridge, '-j', chain])).ok) {
    // Every copy of the jump goes.
  }
  await iptables(['-F', chain]);
  await iptables(['-X', chain]);
}
