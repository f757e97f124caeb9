import { isIP } from 'node:net';
import { buildDestinationMatch, type BuildDestination } from '@svc/core';

/**
 * Addresses a build step never reaches, besides every address of this machine: private,
 * shared (CGNAT), link-local, loopback, "this network", benchmarking, IETF, multicast and
 * reserved ranges, where the controller's neighbours (databases, other apps' containers,
 * cloud metadata services) live.
 */
export const BUILD_BLOCKED_IPV4 = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '224.0.0.0/4',
  '240.0.0.0/4',
];

/** The same for IPv6: unspecified, loopback, IPv4-mapped and -translated, discard, unique local, link-local, multicast. */
export const BUILD_BLOCKED_IPV6 = ['::/128', '::1/128', '::ffff:0:0/96', '64:ff9b::/96', '64:ff9b:1::/48', '100::/64', 'fc00::/7', 'fe80::/10', 'ff00::/8'];

/** The name servers of a resolv.conf text, by address family (a scope suffix such as `%eth0` dropped). */
export function resolversOf(resolvConf: string): { ipv4: string[]; ipv6: string[] } {
  const ipv4: string[] = [];
  const ipv6: string[] = [];
  for (const line of resolvConf.split('\n')) {
    const match = /^\s*nameserver\s+(\S+)/.exec(line);
    const address = match?.[1]?.replace(/%.*$/, '');
    if (address === undefined) continue;
    const family = isIP(address);
    if (family === 4 && !ipv4.includes(address)) ipv4.push(address);
    if (family === 6 && !ipv6.includes(address)) ipv6.push(address);
  }
  return { ipv4, ipv6 };
}

/**
 * The rules (iptables arguments, without the tool) of a build chain for one address family:
 * answers to connections others opened pass; DNS (UDP and TCP port 53) to the machine's
 * resolvers passes; the operator's `allowed` destinations (IPv4) are accepted, even on this
 * machine or in a private range; every other address of this machine, on any port, and every
 * blocked range is refused; the rest (the internet) returns to OUTPUT, where the apps' own
 * chain still applies.
 */
export function buildEgressRules(chain: string, family: 4 | 6, resolvers: string[], allowed: readonly BuildDestination[] = []): string[][] {
  const rules: string[][] = [['-A', chain, '-m', 'conntrack', '--ctstate', 'ESTABLISHED,RELATED', '-j', 'RETURN']];
  for (const resolver of resolvers) {
    for (const protocol of ['udp', 'tcp']) rules.push(['-A', chain, '-d', resolver, '-p', protocol, '--dport', '53', '-j', 'RETURN']);
  }
  if (family === 4) {
    for (const destination of allowed) rules.push(['-A', chain, ...buildDestinationMatch(destination), '-j', 'ACCEPT']);
  }
  rules.push(['-A', chain, '-m', 'conntrack', '--ctstate', 'DNAT', '-j', 'REJECT']);
  rules.push(['-A', chain, '-p', 'tcp', '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'REJECT', '--reject-with', 'tcp-reset']);
  rules.push(['-A', chain, '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'REJECT']);
  for (const range of family === 4 ? BUILD_BLOCKED_IPV4 : BUILD_BLOCKED_IPV6) {
    rules.push(['-A', chain, '-d', range, '-p', 'tcp', '-j', 'REJECT', '--reject-with', 'tcp-reset']);
    rules.push(['-A', chain, '-d', range, '-j', 'REJECT']);
  }
  return rules;
}

/** The OUTPUT rule that sends the packets of build steps (a uid of the range with the build group) to the build chain. */
export function buildJump(chain: string, range: { from: number; to: number }, buildGroup: number): string[] {
  return ['OUTPUT', '-m', 'owner', '--uid-owner', `${range.from}-${range.to}`, '--gid-owner', String(buildGroup), '--suppl-groups', '-j', chain];
}
