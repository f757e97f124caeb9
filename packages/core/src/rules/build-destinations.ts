import type { BuildDestination } from '../ports/builds';

const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;

/**
 * The firewall match of a destination build steps may reach: `-d <cidr>`, and
 * `-p tcp --dport <port>` when it names a port (the same for iptables and iptables-restore).
 * @throws Error when the range or the port is unusable: it goes into firewall rules, so
 *   nothing but an IPv4 range and a port number passes.
 */
export function buildDestinationMatch(destination: BuildDestination): string[] {
  const { cidr, port } = destination;
  const [address = '', prefix = '', ...rest] = cidr.split('/');
  if (rest.length > 0 || !IPV4.test(address) || !/^\d{1,2}$/.test(prefix) || Number(prefix) > 32) throw new Error(`unusable build destination range "${cidr}"`);
  if (port !== null && (!Number.isInteger(port) || port < 1 || port > 65535)) throw new Error(`unusable build destination port ${String(port)}`);
  return ['-d', cidr, ...(port === null ? [] : ['-p', 'tcp', '--dport', String(port)])];
}
