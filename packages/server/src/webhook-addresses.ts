import { BlockList, isIP } from 'node:net';

/*
 * Where webhook deliveries may not go unless the operator allows it: this host's own
 * addresses, loopback, private and shared ranges, link-local, and addresses that are not
 * unicast. A receiver is judged by every address its name resolves to, and the delivery
 * connects to an address that was judged (no second lookup an attacker's DNS could change).
 */
const FORBIDDEN_V4: Array<[string, number]> = [
  ['0.0.0.0', 8], ['10.0.0.0', 8], ['100.64.0.0', 10], ['127.0.0.0', 8], ['169.254.0.0', 16], ['172.16.0.0', 12],
  ['192.0.0.0', 24], ['192.168.0.0', 16], ['198.18.0.0', 15], ['224.0.0.0', 4], ['240.0.0.0', 4],
];
const FORBIDDEN_V6: Array<[string, number]> = [
  ['::', 128], ['::1', 128], ['fc00::', 7], ['fe80::', 10], ['ff00::', 8], ['64:ff9b::', 96],
];

const forbidden = new BlockList();
for (const [net, prefix] of FORBIDDEN_V4) forbidden.addSubnet(net, prefix, 'ipv4');
for (const [net, prefix] of FORBIDDEN_V6) forbidden.addSubnet(net, prefix, 'ipv6');

/** An IPv4 address mapped into IPv6 (`::ffff:10.0.0.1`) as the IPv4 address it is. */
function unmapped(address: string): string {
  const match = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  return match ? (match[1] as string) : address;
}

/** Whether deliveries may not reach `address` without the operator's allowing it. */
export function isRestrictedAddress(address: string, ownAddresses: readonly string[]): boolean {
  const ip = unmapped(address);
  const family = isIP(ip);
  if (family === 0) return true;
  if (ownAddresses.some((own) => unmapped(own).toLowerCase() === ip.toLowerCase())) return true;
  return forbidden.check(ip, family === 4 ? 'ipv4' : 'ipv6');
}

/** Whether the allow-list (host names, addresses, CIDR ranges) names the host or the address. */
export function isAllowListed(host: string, address: string, allow: readonly string[]): boolean {
  const ip = unmapped(address);
  const family = isIP(ip);
  const name = host.toLowerCase().replace(/^\[|\]$/g, '');
  for (const entry of allow) {
    if (entry === name || entry === ip.toLowerCase()) return true;
    const [net, prefix] = entry.split('/');
    if (prefix === undefined || family === 0 || isIP(net as string) !== family) continue;
    const list = new BlockList();
    list.addSubnet(net as string, Number(prefix), family === 4 ? 'ipv4' : 'ipv6');
    if (list.check(ip, family === 4 ? 'ipv4' : 'ipv6')) return true;
  }
  return false;
}
